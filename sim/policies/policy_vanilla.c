/* policy_vanilla.c: no cache (LLaDA, Mosaic). Every step runs the whole sequence:
 * FULL q = L, kv = 0; logit rows = L, or the masked positions left with mask-only logits (the
 * block's rows with block logits). */
#include "policy.h"

static void vanilla_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    s->phase = PHASE_FULL;
    s->q = r->L;
    s->kv = 0;
    s->kv_write = 0;
    s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
}

static void vanilla_advance(struct request *r, const struct policy_cfg *pc,
                            const struct segment *s, bool block_done)
{
    (void)r, (void)pc, (void)s, (void)block_done;
}

const struct policy_ops policy_vanilla = {
    .name = "vanilla",
    .help = "no cache: every step is a FULL forward over L = P + G tokens",
    .caps = POLICY_EVERY_POSITION,
    .emit = vanilla_emit,
    .advance = vanilla_advance,
    .kv_tokens = policy_kv_none,
    .kv_peak_tokens = policy_kv_none,
    .peak_q = policy_q_whole,
};
