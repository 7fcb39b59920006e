/* policy_linear_spec.c: LinearSpec, the linear self-speculation of Nemotron-Labs-Diffusion (arXiv
 * 2607.05722): one model drafts by diffusion and verifies autoregressively (SGLang's
 * python/sglang/srt/dllm/algorithm/linear_spec.py at 4476e1da; the model's own linear_spec_generate).
 *   - the prompt's forward (PREFILL, q = P, its K/V written) gives the first seed, the argmax of its
 *     last position (one logit row); nothing is committed;
 *   - a round is two forwards of the window, the seed and the Bs - 1 positions after it (fewer at the
 *     response's end), over the committed K/V:
 *       draft   the window bidirectionally (the masks filled by their argmax), its K/V not kept:
 *               q = w, kv = P + committed, kv_write = 0, w logit rows;
 *       verify  the seed and the drafts causally, their K/V written: q = w, kv_write = w, w logit
 *               rows; it accepts the seed and the leading drafts its own next-token predictions
 *               match (c of them), and the K/V of the rest is freed. Its prediction after the last
 *               match is the next round's seed;
 *   - a round commits c + 1 positions; the next window starts right after them (NVIDIA's SGLang fork
 *     frees the rejected K/V and places each round's window after the last committed token).
 * How many drafts match is the model's and the task's: c is drawn from a geometric law (each draft
 * matching with one probability, the run stopping at the first miss) whose mean round commits
 * --lspec-accept (NLD-8B's acceptance on SPEED-Bench at blocks of 32: 5.46 without its LoRA drafter,
 * 6.82 with it, the paper's figures as a third party's notes transcribe them). The draw is seeded by the request and the step, so emitting a step again
 * draws the same. The decode model is not read (a run that names one is refused). The engine runs the verify's rows bidirectionally
 * (the cost model prices them so too): the causal mask would spare a row at most the window's later
 * positions, against the P + committed keys both read. */
#include "policy.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

enum { ACCEPT };
static const struct param_spec lspec_params[] = {
    [ACCEPT] = {"lspec-accept", "mean positions a round (a draft and a verify) commits before the window's cap: the "
                                "seed and the drafts the verify accepts (an assumption: NLD-8B's 5.46 on SPEED-Bench at "
                                "blocks of 32, 6.82 with its LoRA drafter, the paper's as transcribed)", 5.46, 1, 1024,
                false},
};

struct lspec_state {
    bool prefilled; /* the seed is known */
    bool verify;    /* the next step is the round's verify */
};

/* The window: the seed and the positions after it, Bs at most, fewer at the end. */
static int32_t window(const struct request *r) { return TS_MIN(r->Bs, req_end(r) - r->decoded_total); }

/* The positions a verify commits: 1 + c, c geometric with mean accept - 1 (a draft matches with
 * probability 1 - 1 / accept), at most the window. */
static int32_t accepted(const struct request *r, const struct policy_cfg *pc)
{
    TS_ASSERT(pc->rng);
    const double accept = pc->p[ACCEPT];
    if (accept <= 1)
        return 1;
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64(((uint64_t)r->steps << 16) + 0x15c)));
    const unsigned int c = gsl_ran_geometric(pc->rng, 1 / accept) - 1; /* failures before the first miss */
    return (int32_t)TS_MIN((int64_t)c + 1, (int64_t)window(r));
}

static void lspec_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct lspec_state *st = POLICY_STATE(r, const struct lspec_state);
    if (!st->prefilled || r->need_refresh) { /* (after a recompute: the prompt and the committed positions) */
        s->phase = PHASE_PREFILL;
        s->q = r->P + r->decoded_total - r->prefix_hit;
        s->kv = r->prefix_hit;
        s->kv_write = s->q;
        s->logit_rows = 1;
        return;
    }
    const int32_t w = window(r);
    s->phase = PHASE_BLOCK;
    s->q = w;
    s->kv = r->P + r->decoded_total;
    s->kv_write = st->verify ? w : 0;
    s->logit_rows = w;
    s->decoded = st->verify ? accepted(r, pc) : 0;
}

static void lspec_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)block_done;
    (void)pc;
    struct lspec_state *st = POLICY_STATE(r, struct lspec_state);
    if (s->phase == PHASE_PREFILL) {
        st->prefilled = true;
        st->verify = false;
        return;
    }
    st->verify = !st->verify;
    policy_progress_to(r, r->decoded_total + s->decoded);
}

/* The committed K/V and the window's, written by a verify. */
static int64_t lspec_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + (int64_t)r->decoded_total + window(r);
}

static int64_t lspec_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

static int32_t lspec_peak_logits(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->Bs;
}

const struct policy_ops policy_linear_spec = {
    .name = "linear-spec",
    .help = "LinearSpec (arXiv 2607.05722, Nemotron-Labs-Diffusion; sglang 4476e1da dllm/algorithm/linear_spec.py): "
            "self-speculation, one model; PREFILL gives a seed, then each round a bidirectional draft of the seed and "
            "the Bs - 1 positions after it and a causal verify of them over the committed K/V, committing the seed and "
            "the drafts the verify's own predictions match (--lspec-accept a round on average), the next window right "
            "after them",
    .params = lspec_params,
    .num_params = (int)TS_ARRAY_LEN(lspec_params),
    .caps = POLICY_DECIDES | POLICY_PIPELINED | POLICY_OWN_COUNT,
    .emit = lspec_emit,
    .advance = lspec_advance,
    .kv_tokens = lspec_kv,
    .kv_peak_tokens = lspec_kv_peak,
    .peak_q = policy_q_whole,
    .peak_logits = lspec_peak_logits,
};
