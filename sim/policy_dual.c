/* policy_dual.c: Fast-dLLM dual cache, dLLM-Serve's Refresh/Reuse. A REFRESH at block start (and
 * every refresh_interval steps inside a block when set) runs the whole sequence and writes all its
 * K/V: q = L, kv_write = L. A REUSE step runs only the current block over the rest of the cache:
 * q = Bs, kv = L - Bs. pstate[0] counts steps since the last refresh. */
#include "policy.h"

static void dual_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    bool refresh = r->steps_in_block == 0 || r->need_refresh ||
                   (pc->refresh_interval > 0 && r->pstate[0] >= pc->refresh_interval);
    if (refresh) {
        s->phase = PHASE_REFRESH;
        s->q = r->L;
        s->kv = 0;
        s->kv_write = r->L;
        s->logit_rows = policy_logit_rows(pc, s->q, r->G - r->decoded_total);
    } else {
        int32_t bl = req_block_len(r, r->cur_block);
        s->phase = PHASE_REUSE;
        s->q = bl;
        s->kv = r->L - bl;
        s->kv_write = 0;
        s->logit_rows = policy_logit_rows(pc, s->q, req_masked_in_block(r));
    }
}

static void dual_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                         bool block_done)
{
    (void)pc, (void)block_done;
    r->pstate[0] = s->phase == PHASE_REFRESH ? 1 : r->pstate[0] + 1;
}

static int64_t dual_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

static int32_t dual_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

const struct policy_ops policy_dual = {
    .name = "dual",
    .help = "dual cache: REFRESH (q = L) at block start, REUSE (q = Bs over L - Bs cached) after",
    .emit = dual_emit,
    .advance = dual_advance,
    .kv_tokens = dual_kv,
    .kv_peak_tokens = dual_kv,
    .peak_q = dual_peak_q,
};
