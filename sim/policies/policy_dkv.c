/* policy_dkv.c: dKV-Cache's delayed K/V cache, its Decode variant (arXiv 2505.15781; horseee/dKV-Cache at
 * 49a76fc, generation_utils/llada_dkv_cache_decode.py generate and models/modeling_llada_dkv_cache_decode.py):
 * a position's K/V are cached one step after it is decoded, once its token is its input, and read from
 * the step after that. The cache starts empty at every block. With L = P + G, in a block's step i:
 *   - i = 0: a FULL forward of the whole sequence, nothing cached: q = L;
 *   - i = 1: the same, caching every decoded position (the prompt, the blocks before, the block's
 *     decoded ones): REFRESH q = L, kv_write = P + the decoded;
 *   - i >= 2, a multiple of --dkv-refresh R [8, its Table 1's for LLaDA]: the same again;
 *   - the other steps: the masked positions (the whole response's, later blocks' too) and the ones the
 *     step before decoded, over the cache of the rest: REUSE q = masked + n_{i-1}, kv = L - q, their
 *     n_{i-1} written (the others' K/V read as cached; every key attends as in a FULL step).
 * Its decode rule is unchanged (the decode model's count, in the current block); logits are the query
 * rows'. */
#include "policy.h"

enum { REFRESH };
static const struct param_spec dkv_params[] = {
    [REFRESH] = {"dkv-refresh", "a block's steps between full forwards that rewrite the cache (cache_reloading_step)",
                 8, 1, 1000000, true},
};

struct dkv_state {
    int32_t last_decoded; /* what the step before decoded: its rows are written by this one */
};

static void dkv_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const int32_t i = r->steps_in_block, R = (int32_t)pc->p[REFRESH];
    if (i < 2 || i % R == 0 || r->need_refresh) { /* the whole sequence; from step 1 on, its decoded cached */
        s->phase = i == 0 && !r->need_refresh ? PHASE_FULL : PHASE_REFRESH;
        s->q = r->L;
        s->kv_write = s->phase == PHASE_FULL ? 0 : r->P + r->decoded_total;
        s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
        return;
    }
    const int32_t masked = r->G - r->decoded_total, last = POLICY_STATE(r, const struct dkv_state)->last_decoded;
    s->phase = PHASE_REUSE;
    s->q = masked + last;
    s->kv = r->L - s->q;
    s->kv_write = last;
    s->logit_rows = policy_logit_rows(pc, s->q, masked);
}

static void dkv_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    POLICY_STATE(r, struct dkv_state)->last_decoded = s->decoded;
}

/* The cache holds the prompt and the decoded positions (the step's decoded written by the next). */
static int64_t dkv_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + r->decoded_total;
}

const struct policy_ops policy_dkv = {
    .name = "dkv-cache",
    .help = "dKV-Cache-Decode (arXiv 2505.15781, horseee/dKV-Cache generation_utils/llada_dkv_cache_decode.py): a "
            "decoded position's K/V cached the step after it is decoded; each block's first two steps and every "
            "--dkv-refresh-th run the whole sequence, the others the masked positions and the ones just decoded",
    .params = dkv_params,
    .num_params = (int)TS_ARRAY_LEN(dkv_params),
    .caps = POLICY_SCATTERED,
    .emit = dkv_emit,
    .advance = dkv_advance,
    .kv_tokens = dkv_kv,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
};
