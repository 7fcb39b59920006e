/* policy_ar.c: autoregressive decoding, as an AR model runs on vLLM (dInfer's baseline, Qwen2.5-3B
 * on vLLM, its Table 1). PREFILL once: q = P, kv_write = P. Then a step a token: the token generated
 * last runs over every cached one and writes its K/V (q = 1, kv = P + t, kv_write = 1), and its one
 * logit row gives the next token: each step commits exactly one, whatever the decode model (an AR
 * model decodes no tokens in parallel). After a preemption by recompute the prefill covers the
 * prompt and the tokens generated. A prompt found in the prompt cache is read, not computed. */
#include "policy.h"

struct ar_state {
    bool prefilled;
};

static void ar_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    (void)pc;
    if (!POLICY_STATE(r, const struct ar_state)->prefilled || r->need_refresh) {
        s->phase = PHASE_PREFILL;
        s->q = s->kv_write = r->P + r->decoded_total - r->prefix_hit;
        s->kv = r->prefix_hit;
        return;
    }
    s->phase = PHASE_BLOCK;
    s->q = s->kv_write = s->logit_rows = s->decoded = 1;
    s->kv = r->P + r->decoded_total;
}

static void ar_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    if (s->phase == PHASE_PREFILL)
        POLICY_STATE(r, struct ar_state)->prefilled = true;
}

static int64_t ar_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->decoded_total + (POLICY_STATE(r, const struct ar_state)->prefilled && !r->need_refresh);
}

static int64_t ar_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

static int32_t ar_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L; /* a prefill after recompute covers every generated token too */
}

const struct policy_ops policy_ar = {
    .name = "ar",
    .caps = POLICY_DECIDES | POLICY_BLOCK_CAUSAL, /* a causal model's prefill: block-causal over --block, causal at 1 */
    .help = "autoregressive decoding (vLLM's AR baseline): PREFILL once, then q = 1 a step over the "
            "cache, one token committed a step",
    .emit = ar_emit,
    .advance = ar_advance,
    .kv_tokens = ar_kv,
    .kv_peak_tokens = ar_kv_peak,
    .peak_q = ar_peak_q,
};
