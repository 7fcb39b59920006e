/* policy_dpad.c: DPad's suffix dropout (arXiv 2508.14148; Crys-Chen/DPad at 461b36e,
 * llada/generate_dropout.py and sampler.py). Before each block b a window of the masked suffix is
 * kept and the rest dropped from every forward of the block: suffix position d (0 at the block's end)
 * is kept with probability min(1, scale * phi(d * k / (W - 1))) for d < W (phi the standard normal
 * density), none past the suffix's own G - (b+1)*Bs positions. tessera keeps the expected count,
 * n_b, rounded (DPad draws each block's set at random; a block's steps share it). On top, DPad runs
 * Fast-dLLM's caches (--dpad-cache):
 *   none    every step runs prompt, finished blocks, the block and the kept suffix:
 *           FULL q = P + (b+1)*Bs + n_b (its published results);
 *   prefix  the block's first step runs them all and caches the prefix (kv_write = P + b*Bs), the
 *           others run the block and the kept suffix over it: q = Bs + n_b, kv = P + b*Bs
 *           (its long-sequence script);
 *   dual    the first step caches them all (kv_write = q), the others run the block over the rest:
 *           q = Bs, kv = P + b*Bs + n_b. */
#include "policy.h"

#include <gsl/gsl_randist.h>
#include <math.h>

enum { WINDOW, SIGMAS, SCALE, CACHE };
enum { DPAD_NONE, DPAD_PREFIX, DPAD_DUAL };
static const char *const cache_names[] = {"none", "prefix", "dual", NULL};
static const struct param_spec dpad_params[] = {
    [WINDOW] = {"dpad-window", "suffix positions past the block that may be kept (W)", 256, 2, 1 << 20, true},
    [SIGMAS] = {"dpad-sigmas", "standard deviations the window spans (k)", 4, 0, 64, .lo_open = true},
    [SCALE] = {"dpad-scale", "the keep probability's scale (sc: a position d past the block is kept with "
                             "min(1, sc phi(d k / (W - 1))))", 2, 0, 1e3, .lo_open = true},
    [CACHE] = {"dpad-cache", "Fast-dLLM's cache beneath it: none, prefix or dual", 0, .choices = cache_names},
};

struct dpad_state {
    int32_t for_block; /* the block (+1) kept_n is for; 0: none yet */
    int32_t kept_n;
};

/* The expected suffix tokens kept for block b of r, rounded. */
static int32_t dpad_kept(const struct request *r, const struct policy_cfg *pc, int32_t b)
{
    const int32_t W = (int32_t)pc->p[WINDOW], left = r->G - (b + 1) * r->Bs;
    const int32_t m = TS_MIN(W, TS_MAX(left, 0));
    double n = 0;
    for (int32_t d = 0; d < m; d++) {
        const double x = (double)d * pc->p[SIGMAS] / (W - 1);
        n += fmin(1.0, pc->p[SCALE] * gsl_ran_ugaussian_pdf(x));
    }
    return (int32_t)lround(n);
}

static int32_t kept_now(const struct request *r, const struct policy_cfg *pc)
{
    const struct dpad_state *st = POLICY_STATE(r, const struct dpad_state);
    return st->for_block == r->cur_block + 1 ? st->kept_n : dpad_kept(r, pc, r->cur_block);
}

/* The masked positions among a forward's rows: the block's left and the kept suffix (all masked). */
static int32_t dpad_logits(const struct request *r, const struct policy_cfg *pc, int32_t q, int32_t kept)
{
    if (pc->block_logits)
        return policy_logit_rows(pc, req_block_len(r, r->cur_block), req_masked_in_block(r));
    return policy_logit_rows(pc, q, req_masked_in_block(r) + kept);
}

static void dpad_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const int32_t n = kept_now(r, pc), bl = req_block_len(r, r->cur_block);
    const int32_t pre = r->P + r->cur_block * r->Bs, all = pre + bl + n, cache = (int32_t)pc->p[CACHE];
    const bool first = r->steps_in_block == 0 || r->need_refresh;
    if (cache == DPAD_NONE || first) {
        s->phase = cache == DPAD_NONE ? PHASE_FULL : PHASE_REFRESH;
        s->q = all;
        s->kv_write = cache == DPAD_NONE ? 0 : cache == DPAD_PREFIX ? pre : all;
    } else {
        s->phase = PHASE_REUSE;
        s->q = cache == DPAD_PREFIX ? bl + n : bl;
        s->kv = all - s->q;
    }
    s->logit_rows = dpad_logits(r, pc, s->q, n);
}

static void dpad_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)s, (void)block_done;
    struct dpad_state *st = POLICY_STATE(r, struct dpad_state);
    if (st->for_block != r->cur_block + 1)
        *st = (struct dpad_state){.for_block = r->cur_block + 1, .kept_n = dpad_kept(r, pc, r->cur_block)};
}

static int64_t dpad_kv(const struct request *r, const struct policy_cfg *pc)
{
    switch ((int)pc->p[CACHE]) {
    case DPAD_PREFIX: return r->P + (int64_t)r->cur_block * r->Bs;
    case DPAD_DUAL: return r->P + (int64_t)r->cur_block * r->Bs + req_block_len(r, r->cur_block) + kept_now(r, pc);
    default: return 0;
    }
}

/* The longest forward of r's life, the whole of a block's first step's rows: P + (b+1)*Bs + n_b at
 * its largest over the blocks. */
static int32_t dpad_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    int32_t peak = 0;
    for (int32_t b = 0; b <= r->last_block; b++)
        peak = TS_MAX(peak, r->P + b * r->Bs + req_block_len(r, b) + dpad_kept(r, pc, b));
    return peak;
}

static int64_t dpad_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    switch ((int)pc->p[CACHE]) {
    case DPAD_PREFIX: return r->P + (int64_t)r->last_block * r->Bs;
    case DPAD_DUAL: return dpad_peak_q(r, pc);
    default: return 0;
    }
}

const struct policy_ops policy_dpad = {
    .name = "dpad",
    .help = "DPad (arXiv 2508.14148, Crys-Chen/DPad llada/generate_dropout.py): each block's forwards keep the "
            "prompt, the finished blocks, the block and n_b of the W masked suffix positions past it (kept with "
            "a distance-decaying probability), the rest dropped; over no cache, Fast-dLLM's prefix or dual cache",
    .params = dpad_params,
    .num_params = (int)TS_ARRAY_LEN(dpad_params),
    .emit = dpad_emit,
    .advance = dpad_advance,
    .kv_tokens = dpad_kv,
    .kv_peak_tokens = dpad_kv_peak,
    .peak_q = dpad_peak_q,
};
