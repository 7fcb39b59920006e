/*
 * eng_unmask.h: which masked positions of a block a diffusion step commits, from each row's argmax
 * and confidence (its softmax probability). The rules are the decoders of the seeds' generate loops,
 * applied to one block's rows at a time; the engine runs them on the GPU (k_unmask, eng_unmask),
 * and this host code is their reference.
 *
 *   topk:K         the K most confident masked rows (LLaDA's low-confidence remasking with K tokens
 *                  a step: its reference generate loop, Fast-dLLM without a threshold)
 *   threshold:TAU  every masked row whose confidence is at least TAU, and the most confident one
 *                  whatever its confidence (Fast-dLLM's threshold decoding, dInfer's
 *                  ThresholdParallelDecoder)
 *   hierarchical:TAU[,LOW]
 *                  in each run of consecutive masked rows its most confident row(s) where above LOW
 *                  [0.4], every masked row above TAU, and the block's most confident one (dInfer's
 *                  HierarchyDecoder, python/dinfer/decoding/parallel_strategy.py)
 *
 * "Most confident" breaks ties by the lower row; a NaN confidence ranks below every number. A block
 * with a masked row commits at least one, so every block ends.
 */
#ifndef TESSERA_ENG_UNMASK_H
#define TESSERA_ENG_UNMASK_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum unmask_kind { UNMASK_TOPK = 0, UNMASK_THRESHOLD, UNMASK_HIERARCHICAL, UNMASK_KINDS };

struct unmask_rule {
    int32_t kind; /* enum unmask_kind */
    int32_t k;    /* topk */
    float tau;    /* threshold, hierarchical */
    float low;    /* hierarchical: a run's best row commits only above it */
};

/* The most rows one block may have (k_unmask keeps a block's rows in shared memory). */
#define UNMASK_MAX_ROWS 1024

/* Parses "topk:K", "threshold:TAU" or "hierarchical:TAU[,LOW]" (K 1..UNMASK_MAX_ROWS; TAU and LOW in
 * [0, 1]); the message names the spec and the accepted range. */
int unmask_parse(const char *spec, struct unmask_rule *out, struct ts_err *err);
/* The rule as unmask_parse reads it back. */
void unmask_format(const struct unmask_rule *u, char *buf, size_t n);
/* The decoder's name (topk, threshold, hierarchical). */
const char *unmask_name(int32_t kind);
/* One block of n rows (n <= UNMASK_MAX_ROWS): pick[i] = 1 where the step commits row i (a masked
 * one), else 0; returns how many it commits. */
int32_t unmask_block(const struct unmask_rule *u, const float *conf, const uint8_t *masked, int32_t n,
                     uint8_t *pick);

#endif
