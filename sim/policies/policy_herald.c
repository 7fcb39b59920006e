/* policy_herald.c: HERALD's host-offloaded K/V for block diffusion models (arXiv 2606.21633, Kwon et al.,
 * "HERALD: High-Throughput Block Diffusion LLM Serving via CPU-GPU Cooperative KV Cache Retrieval").
 * Its abstract is all that is public: a block model's K/V live in host memory; once a block, the top-k
 * entries for it are chosen (their selection reused by every denoising step of the block) and only
 * those cross the host link to the GPU; the selection is scored with one query for the block (its
 * cost cut by the block size) and overlapped with denoising. What the abstract leaves open is an
 * assumption here, each a parameter:
 *   - the budget: a block's selection brings --herald-budget [0.1] of the host's tokens (the
 *     abstract's near-lossless 5-10%), ceil(budget H), H the tokens offloaded;
 *   - the scoring: on the host (the CPU), reading each offloaded token's K (all K/V heads, every
 *     layer) from host memory at --herald-scan-gbs [83: what 16 threads read on the host of an
 *     H100 machine, engine_bench --only host, record host-link-h100];
 *   - the overlap: --herald-overlap 1 runs the block's scoring and fetch under its first step, layer
 *     by layer, the step taking the longer of the two; 0 runs them before it;
 *   - the local window: the last finished block's K/V, written by the fused commit, stay on the GPU
 *     beside the selection (and go to the host too, for the later blocks' selections);
 *   - the link: --herald-link [card] names a row of the host-link table (cost.h host_link).
 * The steps are the block policy's: PREFILL once (its K/V written out to the host as they are made:
 * the link's other direction, not priced), then q = Bs over the selection (and the window), the
 * finished block's commit fused into the next block's first step (q = 2 Bs). The GPU holds only the
 * selection and the window, so a long context takes a fraction of the KV pool. */
#include "policy.h"

#include <math.h>

#include "cost.h"

enum { BUDGET, SCAN, OVERLAP, LINK };
static const char *const link_names[] = {"card", "pcie4", "pcie5", "c2c", NULL};
static const struct param_spec herald_params[] = {
    [BUDGET] = {"herald-budget", "share of the host's tokens a block's selection brings to the GPU (an assumption: "
                                 "the abstract's 5-10%)", 0.1, 0, 1, .lo_open = true},
    [SCAN] = {"herald-scan-gbs", "GB/s at which the host reads the keys it scores (an H100 machine's 16 cores "
                                 "read 83: record host-link-h100)", 83, 0.001, 10000},
    [OVERLAP] = {"herald-overlap", "1: a block's scoring and fetch run under its first step, layer by layer; 0: "
                                   "before it", 1, 0, 1, true},
    [LINK] = {"herald-link", "the host link its K/V cross (card: the GPU table's; pcie4, pcie5, c2c)", 0,
              .choices = link_names},
};

struct herald_state {
    bool prefilled;
    bool commit_pending; /* a finished block waits for its commit */
    bool window;         /* the last finished block's K/V are on the GPU */
    bool need_select;    /* the current block has no selection yet */
};

/* Tokens the selection brings from the host's h. */
static int32_t selected(const struct policy_cfg *pc, int64_t h)
{
    return (int32_t)TS_MIN(h, (int64_t)ceil(pc->p[BUDGET] * (double)h));
}

/* The tokens on the host when the current block selects, and whether the window is on the GPU. */
static int64_t host_tokens(const struct request *r, bool window)
{
    return r->P + (int64_t)r->cur_block * r->Bs - (window ? r->Bs : 0);
}

static void herald_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct herald_state *st = POLICY_STATE(r, const struct herald_state);
    if (!st->prefilled || r->need_refresh) {
        policy_emit_prefill(r, s);
        return;
    }
    const bool window = st->commit_pending || st->window;
    const int64_t h = host_tokens(r, window);
    const int32_t bl = req_block_len(r, r->cur_block), k = selected(pc, h);
    s->phase = PHASE_BLOCK;
    s->q = bl;
    s->kv = k;
    if (st->commit_pending) { /* the finished block's rows once more, their K/V written: the window */
        s->q += r->Bs;
        s->kv_write = r->Bs;
    } else if (window) {
        s->kv += r->Bs;
    }
    if (st->need_select) {
        s->host_kv = k;
        s->host_scan = (int32_t)h;
    }
    s->logit_rows = policy_logit_rows(pc, bl, req_masked_in_block(r));
}

static void herald_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc;
    struct herald_state *st = POLICY_STATE(r, struct herald_state);
    if (s->phase == PHASE_PREFILL) {
        *st = (struct herald_state){.prefilled = true, .need_select = true};
        return;
    }
    st->window |= st->commit_pending;
    st->commit_pending = block_done;
    st->need_select = block_done;
}

static int64_t herald_kv(const struct request *r, const struct policy_cfg *pc)
{
    const struct herald_state *st = POLICY_STATE(r, const struct herald_state);
    if (!st->prefilled || r->need_refresh) /* the prefill's K/V go to the host: the first selection's room */
        return selected(pc, r->P + (int64_t)r->cur_block * r->Bs);
    const bool window = st->commit_pending || st->window;
    return selected(pc, host_tokens(r, window)) + (window ? r->Bs : 0);
}

static int64_t herald_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    const int64_t all = r->P + (int64_t)r->last_block * r->Bs;
    return r->last_block == 0 ? selected(pc, all) : TS_MAX(selected(pc, all), selected(pc, all - r->Bs) + r->Bs);
}

static void herald_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    const struct host_link *link = host_link_get((int)pc->p[LINK]);
    sd->host_link_mbs = (int32_t)lround(link->bw / 1e6);
    sd->host_scan_mbs = (int32_t)lround(pc->p[SCAN] * 1e3);
    sd->host_overlap = pc->p[OVERLAP] != 0;
}

const struct policy_ops policy_herald = {
    .name = "herald",
    .help = "HERALD (arXiv 2606.21633, its abstract): a block model's K/V offloaded to host memory; once a block "
            "the host scores the offloaded keys and the top --herald-budget of them cross the host link, the "
            "block's steps (the block policy's) attending to them and the last finished block alone",
    .params = herald_params,
    .num_params = TS_ARRAY_LEN(herald_params),
    .engine = "host",
    .caps = POLICY_BLOCK_CAUSAL | POLICY_NEEDS_BLOCK_MODEL,
    .emit = herald_emit,
    .advance = herald_advance,
    .kv_tokens = herald_kv,
    .kv_peak_tokens = herald_kv_peak,
    .peak_q = policy_block_peak_q,
    .knobs = herald_knobs,
};
