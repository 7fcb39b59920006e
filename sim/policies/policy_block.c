/* policy_block.c: block diffusion with an exact prefix cache (SDAR, LLaDA2.0, Fast-dLLM v2,
 * LMDeploy). PREFILL once: q = P, kv_write = P, nothing decoded. Each step of block b runs the
 * block over the cached prefix: q = Bs, kv = P + b*Bs. The finished block's K/V is written by a
 * commit forward fused into the next block's first step: q = 2*Bs, kv = P + (b-1)*Bs,
 * kv_write = Bs. After a preemption by recompute the prefill covers the prompt and every finished
 * block. */
#include "policy.h"

struct block_state {
    bool prefilled;
    bool commit_pending; /* a finished block waits for its commit */
};

static void block_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    int32_t bl = req_block_len(r, r->cur_block);
    int32_t cached = r->P + r->cur_block * r->Bs;
    const struct block_state *st = POLICY_STATE(r, const struct block_state);
    if (!st->prefilled || r->need_refresh) {
        policy_emit_prefill(r, s);
        return;
    }
    s->phase = PHASE_BLOCK;
    if (st->commit_pending) { /* fused commit of block b-1 */
        s->q = r->Bs + bl;
        s->kv = cached - r->Bs;
        s->kv_write = r->Bs;
    } else {
        s->q = bl;
        s->kv = cached;
        s->kv_write = 0;
    }
    s->logit_rows = policy_logit_rows(pc, bl, req_masked_in_block(r));
}

static void block_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                          bool block_done)
{
    (void)pc;
    struct block_state *st = POLICY_STATE(r, struct block_state);
    if (s->phase == PHASE_PREFILL) {
        st->prefilled = true;
        st->commit_pending = false;
        return;
    }
    st->commit_pending = block_done;
}

static int64_t block_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->cur_block * r->Bs;
}

static int64_t block_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->last_block * r->Bs;
}

const struct policy_ops policy_block = {
    .name = "block",
    .caps = POLICY_BLOCK_CAUSAL,
    .help = "block diffusion: PREFILL once, then q = Bs per step over the cached prefix, the "
            "finished block committed in the next block's first step (q = 2*Bs)",
    .emit = block_emit,
    .advance = block_advance,
    .kv_tokens = block_kv,
    .kv_peak_tokens = block_kv_peak,
    .peak_q = policy_block_peak_q,
};
