/* policy_sparse.c: sparse KV caches, Sparse-dLLM (one kept set shared by every head) and dLLM-Serve
 * (one per K/V head). As `dual`, but the cache of a block is built after a delay and keeps only a
 * ratio of the tokens. In each block (and after the cache was dropped) the first d steps run the
 * whole sequence without a cache (FULL: q = L). The next one runs it again and selects (REFRESH
 * with keep): the block's rows score every other token by attention (mean query of the block
 * against each key, max-pooled over a window of k positions), and each layer keeps the
 * keep = floor(r (L - block)) best. The steps after it run the block over the kept tokens (REUSE:
 * q = block, kv = keep). The KV pool holds keep tokens per request. */
#include "policy.h"

#include <math.h>

enum { RATIO, KERNEL, DELAY, SELECT };
static const char *const select_names[] = {"uniform", "head", NULL};
static const struct param_spec sparse_params[] = {
    [RATIO] = {"sparse-ratio", "share r of the cached tokens kept after each selection", 0.5, 0, 1, .lo_open = true},
    [KERNEL] = {"sparse-kernel", "max-pool window of the selection scores (odd)", 3, 1, 255, .odd = true},
    [DELAY] = {"sparse-delay", "steps of each block run uncached before the selecting one", 1, 0, 1e6, true},
    [SELECT] = {"sparse-select", "uniform: one kept set for all heads (Sparse-dLLM); head: one per K/V head "
                                 "(dLLM-Serve)", 0, .choices = select_names},
};

struct sparse_state {
    int32_t steps;       /* steps since the block started or the cache was dropped */
    int32_t full_in_row; /* FULL steps in a row just before */
};

/* The tokens a selection keeps for r's current block. */
static int32_t sparse_keep(const struct request *r, const struct policy_cfg *pc, int32_t block)
{
    return (int32_t)floor(pc->p[RATIO] * (double)(r->L - req_block_len(r, block)));
}

static void sparse_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const int32_t n = r->need_refresh ? 0 : POLICY_STATE(r, const struct sparse_state)->steps;
    const int32_t delay = (int32_t)pc->p[DELAY], bl = req_block_len(r, r->cur_block);
    if (n <= delay) {
        policy_emit_refresh(r, pc, s);
        if (n < delay) {
            s->phase = PHASE_FULL;
            s->kv_write = 0;
        } else {
            s->keep = sparse_keep(r, pc, r->cur_block);
            s->kv_write = s->keep;
            s->score_rows = s->keep > 0 ? bl : 0;
        }
        return;
    }
    s->phase = PHASE_REUSE;
    s->q = bl;
    s->kv = sparse_keep(r, pc, r->cur_block);
    s->kv_write = 0;
    s->logit_rows = policy_logit_rows(pc, s->q, req_masked_in_block(r));
}

static void sparse_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                           bool block_done)
{
    struct sparse_state *st = POLICY_STATE(r, struct sparse_state);
    if (block_done) {
        *st = (struct sparse_state){0};
    } else if (s->phase == PHASE_FULL) { /* counts from the last drop, where a dropped cache restarted it */
        st->steps = ++st->full_in_row;
    } else {
        st->steps = s->phase == PHASE_REFRESH ? (int32_t)pc->p[DELAY] + 1 : st->steps + 1;
        st->full_in_row = 0;
    }
}

static int64_t sparse_kv(const struct request *r, const struct policy_cfg *pc)
{
    return sparse_keep(r, pc, r->cur_block);
}

/* The most it keeps: over the blocks left, the shortest (the last) leaves the most candidates. */
static int64_t sparse_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    return sparse_keep(r, pc, r->last_block);
}

static void sparse_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    sd->select_heads = pc->p[SELECT] == 1;
    sd->select_kernel = (int32_t)pc->p[KERNEL];
}

const struct policy_ops policy_sparse = {
    .name = "sparse",
    .help = "sparse KV cache: per block, --sparse-delay FULL steps, one REFRESH that keeps r of the tokens "
            "(chosen by the block's attention), then REUSE (q = Bs over r (L - Bs) kept)",
    .params = sparse_params,
    .num_params = (int)TS_ARRAY_LEN(sparse_params),
    .caps = POLICY_SELECTS,
    .emit = sparse_emit,
    .advance = sparse_advance,
    .kv_tokens = sparse_kv,
    .kv_peak_tokens = sparse_kv_peak,
    .peak_q = policy_q_whole,
    .knobs = sparse_knobs,
};
