/*
 * eng_ref.h: the CPU reference: a plain-C fp32 forward of a step for tiny configurations, the
 * oracle for every kernel and for whole engine steps. It uses the engine's weights (bf16 values
 * widened to fp32), the engine's plan conventions (key indices, positions, logit rows) and keeps
 * each request's K/V in fp32 by key index.
 */
#ifndef TESSERA_ENG_REF_H
#define TESSERA_ENG_REF_H

#include <stdint.h>

#include "eng_plan.h"
#include "eng_weights.h"
#include "model.h"
#include "step_desc.h"

/* --- single ops (each the reference of one kernel) ---------------------------------------- */

void ref_rmsnorm(float *out, const float *in, const float *w, int rows, int h, float eps);
/* qkv [T, (H + 2 Hkv) d] in place: bias, rotate-half RoPE at pos[t] on q and k. */
void ref_qkv_rope(float *qkv, const float *bias, const int32_t *pos, int T, int H, int Hkv, int d,
                  float theta);
void ref_swiglu(float *out, const float *gu, int rows, int F);
/* One segment: q [q_len rows of stride q_stride, head h at h*d], keys/values [key_len, Hkv*d];
 * out [q_len, H*d]. Query i sits at key position kv_cached + i; block_size > 0: block-causal. */
void ref_attention(float *out, const float *q, int q_stride, const float *k, const float *v,
                   int q_len, int key_len, int kv_cached, int H, int Hkv, int d, int block_size,
                   float scale);
void ref_argmax_conf(const float *logits, int rows, int V, int32_t *tok, float *maxv, float *conf);
/* y[rows, out] = x[rows, in] W^T for W [out, in]. */
void ref_linear(float *y, const float *x, const float *W, int rows, int in, int out);

/* --- whole steps -------------------------------------------------------------------------- */

struct eng_ref;

/* weights: the engine's bf16 buffer laid out by eng_layout_build(m); NULL = random from seed. */
int eng_ref_create(const struct model_cfg *m, const bf16_t *weights, uint64_t seed,
                   struct eng_ref **out, struct ts_err *err);
void eng_ref_destroy(struct eng_ref *r);
/* Runs the step planned in p (token ids, positions, logit rows). Outputs per logit row: the final
 * normalised hidden [R, h] (may be NULL), argmax, max logit and confidence. */
void eng_ref_step(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p,
                  int block_size, float *hidden, int32_t *tok, float *maxv, float *conf);
void eng_ref_release(struct eng_ref *r, int32_t req_id);
const float *eng_ref_weight(const struct eng_ref *r, enum w_kind k, int layer);

#endif
