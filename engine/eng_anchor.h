/*
 * eng_anchor.h: the PyTorch anchor's output, read so that the engine can time the same steps.
 *
 * The anchor (../shared/anchors/torch_llada_step.py) prints one JSON object a line: one per shape
 * (B sequences of T tokens, `masked` of them needing logits) with its three step times, then its
 * ceilings. `engine_bench --anchor FILE` reads that output, runs the engine on every shape
 * (Refresh with logits for all tokens, Refresh with logits for the masked tail, and Reuse of one
 * 32-token block over the T - 32 tokens before it) and sets each step beside the anchor's time.
 * Without a file, the anchor script's own grid is used (anchor_default_grid), with no times.
 */
#ifndef TESSERA_ENG_ANCHOR_H
#define TESSERA_ENG_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define ANCHOR_MAX_CASES 32
#define ANCHOR_REUSE_BLOCK 32 /* the anchor's Reuse block, in tokens */

enum anchor_step { ANCHOR_REFRESH_ALL, ANCHOR_REFRESH_MASKED, ANCHOR_REUSE, ANCHOR_STEPS };

struct anchor_case {
    int32_t B, T, masked;
    double ms[ANCHOR_STEPS];       /* the anchor's time of each step; 0 where not given */
    double peak_act_gib[2];        /* its peak activations (Refresh all, masked); -1 where not given */
    int64_t line;                  /* where the case was read (0: the default grid) */
};

struct anchor_run {
    int n;
    struct anchor_case c[ANCHOR_MAX_CASES];
    double gemm_tflops, copy_tbps; /* the anchor's measured ceilings; 0 where absent */
};

/* The anchor script's own grid of shapes, without times. */
void anchor_default_grid(struct anchor_run *r);

/* Parses the anchor's output held in buf (len bytes; `path` names it in messages). Lines that do
 * not start with '{' are skipped (progress lines); an object is a shape (B, T, masked and the three
 * *_ms times) or a ceiling (gemm_8192_bf16_tflops, copy_TBps). Every problem is refused as
 * "PATH:LINE: FIELD: problem": bad JSON, a missing or implausible field, a shape given twice, one
 * with a Reuse block longer than the sequence or more masked tokens than tokens, more than
 * ANCHOR_MAX_CASES shapes, no shape at all. */
int anchor_parse(const char *path, const char *buf, size_t len, struct anchor_run *r, struct ts_err *err);
int anchor_load(const char *path, struct anchor_run *r, struct ts_err *err);

/* The step's name ("refresh all", "refresh masked", "reuse") and its field in the anchor's output. */
const char *anchor_step_name(enum anchor_step s);
const char *anchor_step_field(enum anchor_step s);

/* The engine's step for a case: segments of q query tokens over kv cached ones, logit_rows each. */
void anchor_step_shape(const struct anchor_case *c, enum anchor_step s, int32_t *q, int32_t *kv,
                       int32_t *logit_rows);

#endif
