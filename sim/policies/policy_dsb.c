/* policy_dsb.c: DSB, the dynamic sliding block (arXiv 2602.05992; lizhuo008/DSB at cd74f63,
 * llada/generate.py). The block is a window that slides to the response's first masked position s
 * every step: its end e = min(P + B + committed, s + B) (--dsb-mode greedy: B masked positions plus
 * those committed inside it; const: [s, s + B)), and only the window's positions commit. tessera's
 * positions commit left to right, so the two modes give one window: the next B masked positions,
 * fewer at the response's end. Unlike a fixed block, the window never shrinks as its positions
 * commit, so a step always has up to B candidates.
 *   - without its cache (--dsb-cache 0): every step a full forward (FULL, q = L);
 *   - with its cache (DSB Cache, 1): a full forward that rewrites every K/V (REFRESH, q = L, kv_write =
 *     L) begins a cycle, and a cycle ends once B positions are committed in it (its `blk_acc`); the
 *     other steps run the window and the pw positions before it (pw = min(max(the last step's slide,
 *     --dsb-prev), s): its `cur_idx` and `prefix_window_length`, 24), REUSE q = pw + the window over the
 *     rest of the cache (kv = L - q: attention over every cached key), their K/V written in place
 *     (kv_write = q).
 * Each step draws its commits from the decode model as if the window were the request's block: its
 * masked positions are the window's. The counts are seeded by the request and the step, so emitting a
 * step again draws the same. */
#include "policy.h"

#include <gsl/gsl_rng.h>

enum { CACHE, PREV };
static const struct param_spec dsb_params[] = {
    [CACHE] = {"dsb-cache", "1: DSB Cache (a full forward each B commits, the window and the positions before it "
                            "over the cache between); 0: a full forward every step", 1, 0, 1, true},
    [PREV] = {"dsb-prev", "positions before the window a cached step runs at least (prefix_window_length)", 24, 0,
              4096, true},
};

struct dsb_state {
    int32_t cycle;  /* positions committed since the last full forward */
    int32_t slide;  /* positions the last step committed: how far the window slid */
};

/* The window's masked positions: the next B, fewer at the end. */
static int32_t window(const struct request *r) { return TS_MIN(r->Bs, req_end(r) - r->decoded_total); }

static bool full_step(const struct request *r, const struct policy_cfg *pc)
{
    const struct dsb_state *st = POLICY_STATE(r, const struct dsb_state);
    return pc->p[CACHE] == 0 || r->steps == 0 || r->need_refresh || st->cycle >= r->Bs; /* (the first builds it) */
}

/* What the step commits: the decode model's count over the window, as if the window were the block. */
static int32_t draw(const struct request *r, const struct policy_cfg *pc)
{
    const int32_t w = window(r);
    TS_ASSERT(pc->rng && w > 0 && w <= req_block_len(r, r->cur_block));
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64(((uint64_t)r->steps << 16) + 0xd5b)));
    struct request view = *r;
    view.decoded_in_block = req_block_len(r, r->cur_block) - w;
    view.rng = pc->rng;
    return TS_MIN(decode_tokens(pc->dm, &view), w);
}

static void dsb_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct dsb_state *st = POLICY_STATE(r, const struct dsb_state);
    const int32_t w = window(r);
    if (full_step(r, pc)) {
        s->phase = pc->p[CACHE] == 0 ? PHASE_FULL : PHASE_REFRESH;
        s->q = r->L;
        s->kv = 0;
        s->kv_write = pc->p[CACHE] == 0 ? 0 : r->L;
    } else {
        const int32_t first = r->P + r->decoded_total; /* s, the window's first position */
        const int32_t prev = TS_MIN(TS_MAX(st->slide, (int32_t)pc->p[PREV]), first);
        s->phase = PHASE_REUSE;
        s->q = prev + w;
        s->kv = r->L - s->q;
        s->kv_write = s->q;
    }
    s->logit_rows = policy_logit_rows(pc, s->q, w);
    s->decoded = draw(r, pc);
}

static void dsb_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)block_done;
    struct dsb_state *st = POLICY_STATE(r, struct dsb_state);
    (void)pc;
    if (s->phase != PHASE_REUSE)
        st->cycle = 0;
    st->cycle += s->decoded;
    st->slide = s->decoded;
    policy_progress_to(r, r->decoded_total + s->decoded);
}

/* DSB Cache holds every position's K/V; without it, none. */
static int64_t dsb_kv(const struct request *r, const struct policy_cfg *pc)
{
    return pc->p[CACHE] == 0 ? 0 : r->L;
}

static int32_t dsb_peak_logits(const struct request *r, const struct policy_cfg *pc)
{
    return policy_logit_rows(pc, r->L, r->Bs);
}

const struct policy_ops policy_dsb = {
    .name = "dsb",
    .help = "DSB (arXiv 2602.05992, lizhuo008/DSB llada/generate.py): a window of the next B masked positions "
            "sliding to the first mask every step; with its cache, a full forward each B commits and the window "
            "and the positions before it over the cache between",
    .params = dsb_params,
    .num_params = (int)TS_ARRAY_LEN(dsb_params),
    .caps = POLICY_DECIDES | POLICY_PIPELINED,
    .emit = dsb_emit,
    .advance = dsb_advance,
    .kv_tokens = dsb_kv,
    .kv_peak_tokens = dsb_kv,
    .peak_q = policy_q_whole,
    .peak_logits = dsb_peak_logits,
};
