/* policy_dual.c: Fast-dLLM dual cache, dLLM-Serve's Refresh/Reuse. A REFRESH at block start (and
 * every refresh_interval steps inside a block when set) runs the whole sequence and writes all its
 * K/V: q = L, kv_write = L. A REUSE step runs only the current block over the rest of the cache:
 * q = Bs, kv = L - Bs. */
#include "policy.h"

enum { REFRESH_INTERVAL };
static const struct param_spec dual_params[] = {
    [REFRESH_INTERVAL] = {"refresh-interval", "also refresh every K steps inside a block; 0 = at block start only",
                          0, 0, 1e6, true},
};

static void dual_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const double every = pc->p[REFRESH_INTERVAL];
    bool refresh = r->steps_in_block == 0 || r->need_refresh ||
                   (every > 0 && POLICY_STATE(r, const struct refresh_state)->since_refresh >= every);
    if (refresh) {
        policy_emit_refresh(r, pc, s);
    } else {
        int32_t bl = req_block_len(r, r->cur_block);
        s->phase = PHASE_REUSE;
        s->q = bl;
        s->kv = r->L - bl;
        s->kv_write = 0;
        s->logit_rows = policy_logit_rows(pc, s->q, req_masked_in_block(r));
    }
}

const struct policy_ops policy_dual = {
    .name = "dual",
    .help = "dual cache: REFRESH (q = L) at block start, REUSE (q = Bs over L - Bs cached) after",
    .params = dual_params,
    .num_params = (int)TS_ARRAY_LEN(dual_params),
    .emit = dual_emit,
    .advance = policy_refresh_advance,
    .kv_tokens = policy_kv_whole,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
};
