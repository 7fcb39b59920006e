/* policy_dllm_cache.c: dLLM-Cache's adaptive feature cache (maomaocun/dLLM-cache, as dLLM-Serve ran it).
 * The cache holds, per layer, every token's K, V and its attention and FFN outputs. A request's
 * forwards count from 0: every Kp-th refreshes the prompt and every Kr-th the response.
 *   both (and after the cache was dropped)  REFRESH: the whole sequence, q = L, every output written
 *   response only  REFRESH: the G response rows over the cached prompt (q = G, kv = P); the prompt
 *                  rows ride on their cached outputs (carry = P)
 *   prompt only    REUSE: the prompt rows and u updated response rows (q = P + u) over the other
 *                  responses' cached K/V (kv = G - u)
 *   neither        REUSE: u updated response rows over everything else cached (q = u, kv = L - u)
 * In the two REUSE shapes every later layer first projects V again for all G response rows and
 * updates the u = max(1, floor(rho G)) whose V moved most (cosine similarity with the cached V):
 * probe = G, picked = u; the rows not computed there ride on their cached outputs (carry). Layer 0 always runs
 * the whole sequence (the reference code refreshes it at every step): the front shape q = L,
 * kv = 0, all of it written. Logits are taken over every row, as the Hugging Face forward does
 * (the masked ones with mask-only logits). */
#include "policy.h"

#include <math.h>

enum { PROMPT_INTERVAL, RESPONSE_INTERVAL, UPDATE_RATIO };
static const struct param_spec dllm_cache_params[] = {
    [PROMPT_INTERVAL] = {"prompt-interval", "refresh the prompt's cache every Kp forwards", 100, 1, 1e6, true},
    [RESPONSE_INTERVAL] = {"response-interval", "refresh the response's cache every Kr forwards", 7, 1, 1e6, true},
    [UPDATE_RATIO] = {"update-ratio", "share rho of the response rows updated between refreshes, chosen by the "
                                      "value-similarity check", 0.25, 0, 1, .lo_open = true},
};

struct dllm_cache_state {
    int32_t n; /* forwards since the last whole refresh (that one counted) */
};

/* The response rows a partial update recomputes. */
static int32_t dllm_cache_updated(const struct request *r, const struct policy_cfg *pc)
{
    int32_t u = (int32_t)floor(pc->p[UPDATE_RATIO] * (double)r->G);
    return u > 1 ? u : 1;
}

static void dllm_cache_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const int32_t n = r->need_refresh ? 0 : POLICY_STATE(r, const struct dllm_cache_state)->n;
    const bool prompt = n % (int32_t)pc->p[PROMPT_INTERVAL] == 0, response = n % (int32_t)pc->p[RESPONSE_INTERVAL] == 0;
    policy_emit_refresh(r, pc, s);
    if (prompt && response)
        return;
    const int32_t u = dllm_cache_updated(r, pc);
    s->q_front = s->kv_write_front = r->L; /* layer 0: the whole sequence */
    s->kv_front = 0;
    if (response) {
        s->q = r->G;
        s->carry = r->P;
    } else {
        s->phase = PHASE_REUSE;
        s->q = (prompt ? r->P : 0) + u;
        s->carry = r->L - s->q;
        s->probe = r->G;
        s->picked = u;
    }
    s->kv = r->L - s->q;
    s->kv_write = s->q;
}

static void dllm_cache_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                               bool block_done)
{
    (void)pc, (void)block_done;
    struct dllm_cache_state *st = POLICY_STATE(r, struct dllm_cache_state);
    st->n = s->q == r->L && s->q_front == 0 ? 1 : st->n + 1;
}

static void dllm_cache_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    (void)pc;
    sd->front_layers = 1;
    sd->cache_outputs = true;
}

const struct policy_ops policy_dllm_cache = {
    .name = "dllm-cache",
    .help = "dLLM-Cache: K, V, attention and FFN outputs cached per token; prompt refreshed every Kp forwards, "
            "response every Kr, between them rho of the response rows updated (chosen by their values' "
            "similarity) and the rest reused; layer 0 runs everything",
    .params = dllm_cache_params,
    .num_params = (int)TS_ARRAY_LEN(dllm_cache_params),
    .emit = dllm_cache_emit,
    .advance = dllm_cache_advance,
    .kv_tokens = policy_kv_whole,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
    .knobs = dllm_cache_knobs,
};
