/*
 * eng_grid.h: the steps `tessera engine profile` times, from which `tessera calib import` fits a
 * calibration.
 *
 * The base grid is the one every shipped calibration was profiled over: token counts from 1 to
 * 16,384, caches up to 4,096 keys, a few and many sequences, and uneven Reuse steps. The long part
 * adds Reuse steps over caches of 8,192 and 16,384 keys, for models whose context reaches that far
 * (SDAR-8B's 32,768; not LLaDA-8B's 4,096): without them the attention model extrapolates there.
 * The select part has Refresh steps that select a sparse cache (keep half of each segment's
 * candidates, one kept set for all heads and one per K/V head), for the calibration's kv_select.
 * The fc part has dLLM-Cache's steps over its feature cache (partial updates picked by the value
 * check, response refreshes over the cached prompt, whole refreshes), for its feat_cache.
 * The ladder part has Reuse steps of every count of 32-token blocks from 3 to 15 that the base
 * grid lacks, so that the GEMMs' curves hold each step up where their rows spill into one more
 * tile; calibrations profiled before it take it through calib merge.
 * The batch part has Reuse steps of 24 to 64 sequences (the base grid's have at most 16), whose
 * attention a calibration without them extrapolates in the count of sequences; calibrations profiled
 * before it take it through calib merge.
 */
#ifndef TESSERA_ENG_GRID_H
#define TESSERA_ENG_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* One profiled step: segs sequences of q tokens over kv cached keys (the last over kv_long instead,
 * where kv_long > 0: an uneven step; or q_long rows over kv_long, where q_long > 0), with logits for every query token or none; keep > 0: each
 * sequence's last PROFILE_SCORE_ROWS rows select keep of its others (per K/V head with sel_heads);
 * fc_rows > 0: a dLLM-Cache step (fc_step) of sequences of fc_rows hidden rows, q of them computed
 * over the kv = fc_rows - q others (carried) and, with probe > 0, picked among its last probe rows;
 * its logits, where it has them, over all fc_rows. */
struct prof_step {
    int segs, q, kv, logits, kv_long, keep, sel_heads, fc_rows, probe;
    int q_long; /* > 0: a mixed step, its last sequence q_long rows over kv_long cached keys */
};

enum grid_part { GRID_ALL, GRID_BASE, GRID_LONG, GRID_SELECT, GRID_FC, GRID_LADDER, GRID_BATCH };

/* "all", "base", "long", "select", "fc", "ladder" or "batch"; -1 for anything else */
int grid_part_parse(const char *name);

struct step_desc;
/* A dLLM-Cache profile step p (fc_rows > 0) over requests req.. as a step description (its knobs
 * set: the feature cache, one front layer running every row where not every row is computed). */
void fc_step(const struct prof_step *p, int64_t req, struct step_desc *sd);

/* The cached keys of sequence s of a profiled step */
int prof_kv(const struct prof_step *p, int s);
/* The rows of sequence s of a profiled step */
int prof_q(const struct prof_step *p, int s);
/* The logit rows a sequence of a profiled step takes: with logits, every query row, or a dLLM-Cache
 * step's every row (carried ones too); 0 without */
int prof_logit_rows(const struct prof_step *p);

/* The grid's steps (*n of them; the caller frees the array; NULL when there are none). The long
 * part holds only steps whose sequences fit the model's context (q + kv <= max_pos) and whose
 * caches fit kv_pool_tokens (< 0: no bound); *skipped (may be NULL) counts the long steps left out
 * for the pool. */
struct prof_step *profile_grid(const struct model_cfg *m, enum grid_part part, int64_t kv_pool_tokens,
                               size_t *n, int *skipped);
/* The rows of a profiled step: its sequences' query rows summed */
int64_t prof_rows(const struct prof_step *p);
/* Keeps, in their order, the first n steps of g that have at most max_rows rows (the part of a grid
 * a change to small steps' kernels touches); returns how many. */
size_t profile_grid_rows_at_most(struct prof_step *g, size_t n, int64_t max_rows);

#endif
