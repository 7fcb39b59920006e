/* policy_dflash.c: DFlash (arXiv 2602.06036, z-lab/dflash): speculative decoding of an autoregressive
 * target with a small block-diffusion drafter, as SGLang (--speculative-algorithm DFLASH) and vLLM
 * (method dflash) serve it: every scheduler iteration a request drafts a block and the target
 * verifies it.
 *   - the prompt's forward (PREFILL, q = P, its K/V written, one logit row) gives the first token;
 *   - then each step is one speculation cycle of two forwards:
 *       draft   the drafter (--dflash-layers layers of the target's shape, sharing its embedding and LM
 *               head) runs the block, the last committed token and --dflash-block - 1 masks, in one
 *               denoising pass over the context the target's hidden states give it: the simulator
 *               prices it beside the target's forward (sim_price_drafter), its logits the masks';
 *       verify  the target runs the block causally over its committed K/V, writing the block's K/V:
 *               q = kv_write = B, B logit rows (the segment this policy emits). It accepts the drafts
 *               its own greedy predictions match, up to the first miss, and adds its own next token:
 *               1 + c positions are committed, and the rejected drafts' K/V are freed.
 * How many drafts match is the drafter's, the target's and the task's: each draft matches with one
 * probability, the run stopping at the first miss, and that probability is the one for which a cycle
 * commits --dflash-accept positions on average under the block's cap (tau, the acceptance length
 * z-lab/dflash at 44947fb publishes per task and target, measured so: its benchmark.py counts the
 * accepted drafts and the target's token). The draw is seeded by the request and the step. The decode
 * model is not read (a run naming one other than fixed:1 is refused). Greedy verification makes the
 * output the target's own, so the run's accuracy is the target's. */
#include "policy.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

enum { BLOCK, LAYERS, ACCEPT };
static const struct param_spec dflash_params[] = {
    [BLOCK] = {"dflash-block", "the block a cycle drafts and verifies: the last committed token and B - 1 masks "
                               "(DFlash's published drafters: 16)", 16, 2, 256, true},
    [LAYERS] = {"dflash-layers", "the drafter's layers, each of the target's shape; it shares the target's embedding "
                                 "and LM head (an assumption where the drafter's own config is not read)", 5, 1, 256, true},
    [ACCEPT] = {"dflash-accept", "tau: the mean positions a cycle commits, the drafts accepted and the target's own "
                                 "token, the block's cap included (the acceptance length DFlash publishes: Qwen3-8B at "
                                 "temperature 0, 6.55 on GSM8K, 7.87 MATH-500, 6.55 HumanEval, 4.25 MT-Bench, 3.16 "
                                 "Alpaca)", 6.55, 1, 256, false},
};

struct dflash_state {
    bool prefilled;
};

/* The block: B positions, fewer at the response's end. */
static int32_t block_of(const struct request *r, const struct policy_cfg *pc)
{
    return (int32_t)TS_MIN((int64_t)pc->p[BLOCK], (int64_t)(req_end(r) - r->decoded_total));
}

/* The probability p that a draft matches, each independently until the first miss, for which a cycle
 * commits tau on average under the block's cap B: a cycle commits min(K, B), K geometric (K - 1 matches
 * before the first miss), whose mean is sum over j < B of p^j = (1 - p^B) / (1 - p); it grows with p, so
 * bisection finds it. tau >= B: every draft matches. */
static double match_probability(double tau, int32_t b)
{
    if (tau >= b)
        return 1;
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; i++) {
        const double p = 0.5 * (lo + hi);
        if ((1 - pow(p, b)) / (1 - p) < tau)
            lo = p;
        else
            hi = p;
    }
    return 0.5 * (lo + hi);
}

/* The positions a verify commits: the target's own token and the drafts matched before the first miss,
 * at most the block (fewer at the response's end): a mean of --dflash-accept a cycle (tau, as the
 * DFlash paper measures it, the cap included). */
static int32_t committed(const struct request *r, const struct policy_cfg *pc)
{
    TS_ASSERT(pc->rng);
    const double p = match_probability(pc->p[ACCEPT], (int32_t)pc->p[BLOCK]);
    if (p <= 0)
        return 1;
    if (p >= 1)
        return block_of(r, pc);
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64(((uint64_t)r->steps << 16) + 0xdf1a)));
    const unsigned int k = gsl_ran_geometric(pc->rng, 1 - p); /* the target's token and the matches before it */
    return (int32_t)TS_MIN((int64_t)k, (int64_t)block_of(r, pc));
}

static void dflash_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    if (!POLICY_STATE(r, const struct dflash_state)->prefilled || r->need_refresh) {
        s->phase = PHASE_PREFILL;
        s->q = s->kv_write = r->P + r->decoded_total - r->prefix_hit;
        s->kv = r->prefix_hit;
        s->logit_rows = 1;
        return;
    }
    const int32_t b = block_of(r, pc);
    s->phase = PHASE_BLOCK;
    s->q = s->kv_write = s->logit_rows = b;
    s->kv = r->P + r->decoded_total;
    s->decoded = committed(r, pc);
}

static void dflash_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    if (s->phase == PHASE_PREFILL) {
        POLICY_STATE(r, struct dflash_state)->prefilled = true;
        return;
    }
    policy_progress_to(r, r->decoded_total + s->decoded);
}

/* The committed K/V and the block's, written by a verify. */
static int64_t dflash_kv(const struct request *r, const struct policy_cfg *pc)
{
    return r->P + (int64_t)r->decoded_total + block_of(r, pc);
}

static int32_t dflash_peak_logits(const struct request *r, const struct policy_cfg *pc)
{
    (void)r;
    return (int32_t)pc->p[BLOCK];
}

static int32_t dflash_drafter_layers(const struct policy_cfg *pc) { return (int32_t)pc->p[LAYERS]; }

const struct policy_ops policy_dflash = {
    .name = "dflash",
    .help = "DFlash (arXiv 2602.06036, z-lab/dflash): speculative decoding of an autoregressive target with a "
            "block-diffusion drafter; PREFILL once, then each step a cycle: the drafter (--dflash-layers of the "
            "target's layers) drafts a block of --dflash-block in one pass, the target verifies it (q = B over its "
            "cache) and commits the matching drafts and its own token (--dflash-accept a cycle on average)",
    .params = dflash_params,
    .num_params = (int)TS_ARRAY_LEN(dflash_params),
    .caps = POLICY_DECIDES | POLICY_PIPELINED | POLICY_OWN_COUNT | POLICY_BLOCK_CAUSAL,
    .emit = dflash_emit,
    .advance = dflash_advance,
    .kv_tokens = dflash_kv,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole, /* (a prefill after recompute covers every generated token too) */
    .peak_logits = dflash_peak_logits,
    .drafter_layers = dflash_drafter_layers,
};
