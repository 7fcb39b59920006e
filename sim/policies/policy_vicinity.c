/* policy_vicinity.c: dInfer's vicinity cache refresh. As `dual`, a REFRESH at block start (and
 * every refresh-interval steps inside a block, and after the cache was dropped) runs the whole
 * sequence and writes all its K/V: q = L, kv_write = L. Every other step runs a window: the current
 * block and up to w tokens on each side of it, clipped to the sequence, over the rest of the cache;
 * the window's K/V replace the cached ones (kv_write = q), so the cache next to the block never
 * goes stale: q = min(L, end + w) - max(0, start - w), kv = L - q. */
#include "policy.h"

enum { VICINITY, REFRESH_INTERVAL };
static const struct param_spec vicinity_params[] = {
    [VICINITY] = {"vicinity", "tokens recomputed on each side of the block in every step between refreshes",
                  16, 0, 65536, true},
    [REFRESH_INTERVAL] = {"refresh-interval", "also refresh every K steps inside a block (K >= 1)", 32, 1, 1e6,
                          true},
};

/* The window's first and one-past-last positions (the prompt is positions 0..P). */
static void vicinity_window(const struct request *r, const struct policy_cfg *pc, int32_t *lo, int32_t *hi)
{
    const int32_t w = (int32_t)pc->p[VICINITY];
    const int32_t start = r->P + r->cur_block * r->Bs, end = start + req_block_len(r, r->cur_block);
    *lo = start - w > 0 ? start - w : 0;
    *hi = end + w < r->L ? end + w : r->L;
}

static void vicinity_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    bool refresh = r->steps_in_block == 0 || r->need_refresh ||
                   POLICY_STATE(r, const struct refresh_state)->since_refresh >= pc->p[REFRESH_INTERVAL];
    if (refresh) {
        policy_emit_refresh(r, pc, s);
    } else {
        int32_t lo, hi;
        vicinity_window(r, pc, &lo, &hi);
        s->phase = PHASE_REUSE;
        s->q = hi - lo;
        s->kv = r->L - s->q;
        s->kv_write = s->q;
        /* the window's masked rows: the block's (those after it are not decoded yet either, but
         * only the block's logits are read) */
        s->logit_rows = pc->block_logits ? policy_logit_rows_seq(pc, r, s->q)
                                         : policy_logit_rows(pc, s->q, req_masked_in_block(r));
    }
}

static int32_t vicinity_from(const struct request *r, const struct policy_cfg *pc)
{
    int32_t lo, hi;
    vicinity_window(r, pc, &lo, &hi);
    return lo;
}

const struct policy_ops policy_vicinity = {
    .name = "vicinity",
    .help = "dInfer's vicinity refresh: as dual, but between refreshes each step recomputes the block and "
            "--vicinity W tokens on each side (q = Bs + 2W, their K/V rewritten)",
    .params = vicinity_params,
    .num_params = (int)TS_ARRAY_LEN(vicinity_params),
    .emit = vicinity_emit,
    .advance = policy_refresh_advance,
    .kv_tokens = policy_kv_whole,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
    .reuse_from = vicinity_from,
};
