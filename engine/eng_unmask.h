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
 *   credit:TAU     threshold decoding over logits fused with each position's credit (dInfer's
 *                  CreditThresholdParallelDecoder): every step of a block decays a position's
 *                  credits by BETA [0.8] (from its second step on) and, while the position is
 *                  masked, adds its top-1 probability to the power GAMMA [0.2] to the credit of
 *                  its top-1 token; the step then decides over logits + ALPHA [0.7] log(1 + credit)
 *                  (credit_fuse: the argmax and confidence of those, in the LM head)
 *
 * "Most confident" breaks ties by the lower row; a NaN confidence ranks below every number. A block
 * with a masked row commits at least one, so every block ends.
 */
#ifndef TESSERA_ENG_UNMASK_H
#define TESSERA_ENG_UNMASK_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum unmask_kind { UNMASK_TOPK = 0, UNMASK_THRESHOLD, UNMASK_HIERARCHICAL, UNMASK_CREDIT, UNMASK_KINDS };

struct unmask_rule {
    int32_t kind; /* enum unmask_kind */
    int32_t k;    /* topk */
    float tau;    /* threshold, hierarchical */
    float low;    /* hierarchical: a run's best row commits only above it */
    float alpha, beta, gamma; /* credit: the fusion's weight, the decay, the boost's power */
};

/* The most rows one block may have (k_unmask keeps a block's rows in shared memory). */
#define UNMASK_MAX_ROWS 1024

/* Parses "topk:K", "threshold:TAU", "hierarchical:TAU[,LOW]" or "credit:TAU" (K 1..UNMASK_MAX_ROWS;
 * TAU and LOW in [0, 1]); the message names the spec and the accepted range. */
int unmask_parse(const char *spec, struct unmask_rule *out, struct ts_err *err);
/* The rule as unmask_parse reads it back. */
void unmask_format(const struct unmask_rule *u, char *buf, size_t n);
/* The decoder's name (topk, threshold, hierarchical, credit). */
const char *unmask_name(int32_t kind);
/* One block of n rows (n <= UNMASK_MAX_ROWS): pick[i] = 1 where the step commits row i (a masked
 * one), else 0; returns how many it commits. */
int32_t unmask_block(const struct unmask_rule *u, const float *conf, const uint8_t *masked, int32_t n,
                     uint8_t *pick);

/* --- credit decoding's fusion ---------------------------------------------------------------- */

/* A position's credits: at most CREDIT_MAX tokens (a step adds one, to a masked position); past
 * that the smallest goes (after 32 decays by 0.8 a credit moves its logit by under 6e-4). */
#define CREDIT_MAX 32
struct credit_row {
    int32_t n;
    int32_t tok[CREDIT_MAX];
    float val[CREDIT_MAX];
};

/* A logit row's part in a step's fusion (k_credit_fuse's flags). */
enum {
    CREDIT_MASKED = 1, /* the position is masked: its top-1 adds to its credit */
    CREDIT_DECAY = 2,  /* not the block's first step: the credits decay first */
    CREDIT_CLEAR = 4,  /* the block's first step: the row starts without credits */
};

/* One logit row's step (k_credit_fuse's reference): its logits [V] and their plain argmax tok, max
 * logit maxv and confidence conf (the top-1 probability) update the credits in st by flags, then
 * tok, maxv and conf become those of the fused logits (l + alpha log(1 + credit)). */
void credit_fuse(const struct unmask_rule *u, struct credit_row *st, uint32_t flags, const float *logits, int V,
                 int32_t *tok, float *maxv, float *conf);

#endif
