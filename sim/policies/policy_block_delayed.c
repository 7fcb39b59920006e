/* policy_block_delayed.c: block diffusion with FOCUS's intra-block delayed cache. As `block`, but a
 * decoded token whose right neighbour is decoded too is stable: the next forward writes its K/V
 * (kv_write) and it then leaves the query set. Decoded positions form a prefix of the block (they
 * cluster at its left frontier), so with c of the block's positions cached a step
 * runs the rest: q = len - c over kv = P + b*Bs + c. A finished block's uncached rest (at least its
 * last token) is committed by the next block's first step: q = rest + Bs, kv_write = rest. */
#include "policy.h"

void policy_delayed_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct delayed_state *st = POLICY_STATE(r, const struct delayed_state);
    const int32_t bl = req_block_len(r, r->cur_block), start = r->P + r->cur_block * r->Bs;
    if (!st->prefilled || r->need_refresh) {
        policy_emit_prefill(r, s);
        return;
    }
    s->phase = PHASE_BLOCK;
    s->q = st->commit_rest + bl - st->cached;
    s->kv = start - st->commit_rest + st->cached;
    s->kv_write = st->commit_rest + st->stable - st->cached;
    s->logit_rows = policy_logit_rows(pc, bl - st->cached, req_masked_in_block(r));
}

void policy_delayed_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc;
    struct delayed_state *st = POLICY_STATE(r, struct delayed_state);
    if (s->phase == PHASE_PREFILL) {
        *st = (struct delayed_state){.prefilled = true};
        return;
    }
    st->cached = st->stable; /* this step wrote the stable ones */
    st->commit_rest = 0;
    if (block_done) { /* r->cur_block already moved on */
        st->commit_rest = req_block_len(r, r->cur_block - 1) - st->cached;
        st->cached = st->stable = 0;
    } else {
        st->stable = r->decoded_in_block > 0 ? r->decoded_in_block - 1 : 0;
    }
}

int64_t policy_delayed_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->cur_block * r->Bs + POLICY_STATE(r, const struct delayed_state)->stable;
}

int64_t policy_delayed_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->last_block * r->Bs + req_block_len(r, r->last_block);
}

const struct policy_ops policy_block_delayed = {
    .name = "block+delayed",
    .caps = POLICY_BLOCK_CAUSAL,
    .help = "block with FOCUS's delayed intra-block cache: a decoded token whose right neighbour is decoded is "
            "written by the next step and then leaves q (q = Bs - cached over the prefix and the cached ones)",
    .emit = policy_delayed_emit,
    .advance = policy_delayed_advance,
    .kv_tokens = policy_delayed_kv,
    .kv_peak_tokens = policy_delayed_kv_peak,
    .peak_q = policy_block_peak_q,
};
