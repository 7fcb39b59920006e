/* policy_prefix.c: Fast-dLLM prefix cache. The first step of block b is a full forward that
 * writes the K/V of the prefix (prompt + finished blocks): q = L, kv_write = P + b*Bs. The other
 * steps of the block run the suffix over the cached prefix: q = L - (P + b*Bs), kv = P + b*Bs. */
#include "policy.h"

static int32_t prefix_len(const struct request *r) { return r->P + r->cur_block * r->Bs; }

static void prefix_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    int32_t pre = prefix_len(r);
    if (r->steps_in_block == 0 || r->need_refresh) {
        s->phase = PHASE_REFRESH;
        s->q = r->L;
        s->kv = 0;
        s->kv_write = pre;
    } else {
        s->phase = PHASE_REUSE;
        s->q = r->L - pre;
        s->kv = pre;
        s->kv_write = 0;
    }
    s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
}

static void prefix_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                           bool block_done)
{
    (void)r, (void)pc, (void)s, (void)block_done;
}

static int64_t prefix_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return prefix_len(r);
}

static int64_t prefix_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->last_block * r->Bs;
}

const struct policy_ops policy_prefix = {
    .name = "prefix",
    .help = "Fast-dLLM prefix cache: refresh at block start, then the suffix over the cached prefix",
    .emit = prefix_emit,
    .advance = prefix_advance,
    .kv_tokens = prefix_kv,
    .kv_peak_tokens = prefix_kv_peak,
    .peak_q = policy_q_whole,
};
