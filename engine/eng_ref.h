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
/* qkv [T, (H + 2 Hkv) d] in place: bias; each q and k head RMS-normalised (eps) and scaled by qn
 * and kn [d] where they are not NULL (per-head QK norms); rotate-half RoPE at pos[t] on q and k
 * over their first rot dimensions (0: all d; the rest pass through). */
void ref_qkv_rope(float *qkv, const float *bias, const float *qn, const float *kn, int rot, float eps,
                  const int32_t *pos, int T, int H, int Hkv, int d, float theta);
void ref_swiglu(float *out, const float *gu, int rows, int F);
/* One segment: q [q_len rows of stride q_stride, head h at h*d], keys/values [key_len, Hkv*d];
 * out [q_len, H*d]. Query i sits at key position kv_cached + i; block_size > 0: block-causal. */
void ref_attention(float *out, const float *q, int q_stride, const float *k, const float *v,
                   int q_len, int key_len, int kv_cached, int H, int Hkv, int d, int block_size,
                   float scale);
/* ref_attention over no cached keys (N rows and keys), by a block-sparse pattern (k_attn_args.kb_*):
 * the rows of query block qb (of `block` rows) in head h see the key blocks keep[(h * nb + qb) * nb
 * + kb] names (nb = ceil(N / block)); a row that sees none gets zeros. */
void ref_attention_blocks(float *out, const float *q, int q_stride, const float *k, const float *v, int N, int H,
                          int Hkv, int d, int block, const uint8_t *keep, float scale);
/* SparseD's pattern (k_sparsed_pattern's reference) over N rows q (stride q_stride) and keys k [N,
 * Hkv * d]: each pass's sums of each head's query block's probabilities over each key block into imp
 * [2][H][nb][nb] (nb = ceil(N / block)), and the kept blocks, 0 or 1, into keep [H][nb][nb]. */
void ref_sparsed_pattern(const float *q, int q_stride, const float *k, int N, int H, int Hkv, int d, int block,
                         int last, double select, float scale, double *imp, uint8_t *keep);
/* Sparse selection over one segment's keys k, v [>= cand, Hkv*d] (k_kv_select's reference): the
 * mean of score_rows query rows q (stride q_stride) scores keys 0..cand-1 (summed over each K/V
 * head's query heads; over every head unless per_head), max-pooled over `kernel` keys; the keep best
 * of each set (ties: the lower key) are moved, in key order, to keys 0..keep-1 of k and v. idx
 * (NULL: not wanted) gets the kept keys, [sets][keep], sets = per_head ? Hkv : 1. */
void ref_kv_select(const float *q, int q_stride, int score_rows, float *k, float *v, int cand, int keep, int H,
                   int Hkv, int d, int kernel, int per_head, int32_t *idx);
/* The ranking alone: ref_kv_select's kept keys into idx, k left as it is. */
void ref_kv_rank(const float *q, int q_stride, int score_rows, const float *k, int cand, int keep, int H, int Hkv,
                 int d, int kernel, int per_head, int32_t *idx);
/* The move alone: kept keys idx [sets][keep] (ascending in each set) to keys 0..keep-1. */
void ref_kv_compact(float *k, float *v, const int32_t *idx, int keep, int Hkv, int d, int per_head);
/* dLLM-Cache's value check (k_fc_pick's reference): of rows new V rows vnew and cached ones vold
 * [rows, kv_dim], the `picked` least cosine-similar (NaN first, ties: the lower row) into pick,
 * ascending. */
void ref_fc_pick(const float *vnew, const float *vold, int rows, int kv_dim, int picked, int32_t *pick);
/* FOCUS's importance of m candidates (k_focus_importance's reference, summed over the heads): q [m
 * rows of stride q_stride, head hd at hd*d], their keys k [m, Hkv*d]; per head, each query's scores
 * scale q.k over the candidates, max-pooled over j - 1, j, j + 1, softmaxed; imp[j] gets the sums
 * over the queries and heads. */
void ref_focus_importance(const float *q, int q_stride, const float *k, int m, int H, int Hkv, int d, float scale,
                          float *imp);
/* The `picked` of m candidates an evicting step keeps (k_focus_pick's reference), the first
 * `processed` of them run through every layer before: by importance delta (NaN last, ties: the
 * lower one), with no unprocessed candidate left out left of one kept; into pick, ascending. */
void ref_focus_pick(const float *delta, int m, int picked, int processed, int32_t *pick);
void ref_argmax_conf(const float *logits, int rows, int V, int32_t *tok, float *maxv, float *conf);
/* Row t's routing (k_moe_route's reference) by router rt (NULL: a softmax renormalised), its expert
 * bias the host's `bias` [E] (rt->bias is a device pointer; NULL: none): the scores (softmax or
 * sigmoid of the E logits), the k largest of the scores plus the bias among the best topk_group
 * groups (ties: the lower expert, the lower group), or with balance the k of the largest priorities
 * k_moe_priority(balance, t, e), into ids in order, and their scores, renormalised where rt->norm,
 * times rt->scale, into wts. */
void ref_moe_route(const float *logits, int E, int k, uint32_t balance, const struct k_moe_router *rt,
                   const float *bias, int t, int32_t *ids, float *wts);
/* y[rows, out] = x[rows, in] W^T for W [out, in]. */
void ref_linear(float *y, const float *x, const float *W, int rows, int in, int out);

/* --- whole steps -------------------------------------------------------------------------- */

struct eng_ref;

/* weights: the engine's bf16 buffer laid out by eng_layout_build(m); NULL = random from seed. */
int eng_ref_create(const struct model_cfg *m, const bf16_t *weights, uint64_t seed,
                   struct eng_ref **out, struct ts_err *err);
void eng_ref_destroy(struct eng_ref *r);
/* Runs the step planned in p (token ids, positions, logit rows; a layered step's hidden rows, its
 * feature cache and value checks, an evicting step's importance and picks, as the engine's,
 * eng_plan.h). Outputs per logit row: the final
 * normalised hidden [R, h] (may be NULL), argmax, max logit and confidence. */
void eng_ref_step(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p,
                  int block_size, float *hidden, int32_t *tok, float *maxv, float *conf);
void eng_ref_release(struct eng_ref *r, int32_t req_id);
/* The next eng_ref_step keeps these keys instead of ranking its own: idx [layers][selecting
 * segments, in step order][sets][max_keep], as eng_selection gives the engine's (the caller keeps
 * it until that step returns). */
void eng_ref_force_selection(struct eng_ref *r, const int32_t *idx, int max_keep);
/* The next eng_ref_step picks these rows in its value checks instead of its own: idx [layers][probing
 * segments][max_probe] (an evicting step: [evicting segments][max_probe]), as eng_picks gives the
 * engine's (kept by the caller until that step returns). */
void eng_ref_force_picks(struct eng_ref *r, const int32_t *idx, int max_probe);
/* The next eng_ref_step adds add [its embedded rows, hidden] to their token embeddings (IterSmooth's
 * soft rows, weighted; kept by the caller until that step returns). */
void eng_ref_add_embed(struct eng_ref *r, const float *add);
/* The next eng_ref_step routes its MoE layers' rows to these experts instead of its own choice (the
 * weights its own probabilities renormalised over them): ids [layers][stride], as eng_routes gives. */
void eng_ref_force_routes(struct eng_ref *r, const int32_t *ids, int64_t stride);
/* The next eng_ref_step attends request req_id's segment (every position of it over no cached keys)
 * by a block-sparse pattern: keep [layers][H][nb][nb] as eng_sparsed_pattern gives the engine's, in
 * blocks of `block` (kept by the caller until that step returns; at most 8 requests a step). */
void eng_ref_force_blocks(struct eng_ref *r, int32_t req_id, const uint8_t *keep, int block);
/* Whether its MoE layers route balanced (eng_opts.routing; each layer salted by k_moe_balance, as
 * the engine's). */
void eng_ref_balance_routes(struct eng_ref *r, bool on);
/* Of the rows routed since the last call, the share whose forced experts differ from its own choice. */
double eng_ref_route_disagreement(struct eng_ref *r);
/* Of the rows forced on it since the last call, the share its own value check would not have picked. */
double eng_ref_pick_disagreement(struct eng_ref *r);
/* The same tally as counts: of the *all rows forced on it since the last call, those its own value
 * check would not have picked (returned); both cleared. */
int64_t eng_ref_pick_missing(struct eng_ref *r, int64_t *all);
/* Of the keys forced on it since the last call, the share its own ranking would not have kept. */
double eng_ref_ranking_disagreement(struct eng_ref *r);
const float *eng_ref_weight(const struct eng_ref *r, enum w_kind k, int layer);

#endif
