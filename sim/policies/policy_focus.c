/* policy_focus.c: FOCUS's token eviction (sands-lab/FOCUS) on top of the delayed intra-block cache
 * (block+delayed). Layers 0-1 run every active row of the block (the front shape: q_front = the
 * delayed step's q); after layer 1 the step keeps a set S and layers 2 and up run only it:
 *   - the decoded rows waiting for the cache, always;
 *   - among the masked positions: the budget K = min(m, max(1, ceil(alpha max(1, Nbar)))) of them
 *     with the largest importance delta, or every one at least a standard deviation above the mean
 *     where that is more (N_sigma); Nbar is the request's mean decodes per step so far;
 *   - AR context: a masked position whose right neighbour was chosen;
 *   - placeholder integrity: the masked positions left of the right-most one kept that no step of
 *     this block has run through every layer yet.
 * Evicted rows keep the K/V an earlier step left, so the later layers attend to the cached prefix
 * and every position of the block: kv = kv_front + q_front - q.
 * Which positions are decodable is the decode model's count (the block's leftmost masked positions);
 * the importance delta is a noisy signal of it: N(snr, 1) for a decodable
 * position, N(0, 1) for the others (--focus-snr). The step decodes the decodable positions it kept
 * (at least one: threshold decoding commits the most confident kept token) and misses the others;
 * decoded positions are counted from the block's left as in block+delayed. A step's draws are seeded
 * by the request's seed and the step's index, so emitting it again draws the same. */
#include "policy.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ALPHA, SNR };
static const struct param_spec focus_params[] = {
    [ALPHA] = {"focus-alpha", "budget expansion: keep ceil(alpha x the mean decodes per step) masked rows", 1.5, 1, 64},
    [SNR] = {"focus-snr", "how far above the others a decodable position's importance delta lies, in its noise's "
                          "standard deviations",
             3, 0, 100, .lo_open = true},
};

struct focus_state {
    struct delayed_state d; /* first: the delayed cache's own state */
    int32_t progress;       /* the right-most block position some step ran through every layer; -1 */
    int32_t steps, decodes; /* the request's steps after its prefill, and their decodes (Nbar) */
};

/* What one step keeps and decodes. */
struct focus_pick {
    int32_t kept;      /* masked positions in S */
    int32_t rightmost; /* block position of the right-most one kept */
    int32_t decoded, missed;
};

#define FOCUS_STACK 256

/* Draws the step's decodable positions and importance deltas and applies FOCUS's selection. */
static void focus_pick(const struct request *r, const struct policy_cfg *pc, struct focus_pick *out)
{
    const struct focus_state *st = POLICY_STATE(r, const struct focus_state);
    const int32_t d = r->decoded_in_block, m = req_masked_in_block(r);
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64((uint64_t)r->steps + 1)));
    struct request drawn = *r;
    drawn.rng = pc->rng;
    const int32_t nd = decode_tokens(pc->dm, &drawn); /* the leftmost nd masked positions */
    double score_stack[FOCUS_STACK];
    unsigned char base_stack[FOCUS_STACK], keep_stack[FOCUS_STACK];
    double *score = m <= FOCUS_STACK ? score_stack : xmalloc(sizeof *score * (size_t)m);
    unsigned char *base = m <= FOCUS_STACK ? base_stack : xmalloc((size_t)m);
    unsigned char *keep = m <= FOCUS_STACK ? keep_stack : xmalloc((size_t)m);
    double mean = 0, var = 0;
    for (int32_t k = 0; k < m; k++) {
        score[k] = gsl_ran_gaussian(pc->rng, 1.0) + (k < nd ? pc->p[SNR] : 0.0);
        mean += score[k] / m;
    }
    for (int32_t k = 0; k < m; k++)
        var += (score[k] - mean) * (score[k] - mean) / m;
    const double nbar = st->steps > 0 ? (double)st->decodes / st->steps : 1.0;
    const int32_t target = (int32_t)TS_MIN((double)m, fmax(1.0, ceil(fmax(nbar, 1.0) * pc->p[ALPHA])));
    int32_t above = 0;
    for (int32_t k = 0; k < m; k++)
        above += score[k] >= mean + sqrt(var);
    for (int32_t k = 0; k < m; k++) /* N_sigma where it is more, else the top target (ties: the left) */
        base[k] = above >= target ? score[k] >= mean + sqrt(var) : 0;
    for (int32_t n = 0; above < target && n < target; n++) {
        int32_t best = -1;
        for (int32_t k = 0; k < m; k++)
            if (!base[k] && (best < 0 || score[k] > score[best]))
                best = k;
        base[best] = 1;
    }
    memcpy(keep, base, (size_t)m);
    for (int32_t k = 0; k + 1 < m; k++) /* AR context: the left neighbour of a chosen one */
        keep[k] |= base[k + 1];
    int32_t R = -1;
    for (int32_t k = 0; k < m; k++)
        if (keep[k])
            R = k;
    for (int32_t k = 0; k < R; k++) /* placeholder integrity */
        keep[k] |= d + k > st->progress;
    int32_t kept = 0, hits = 0;
    for (int32_t k = 0; k < m; k++) {
        kept += keep[k];
        hits += keep[k] && k < nd;
    }
    *out = (struct focus_pick){.kept = kept, .rightmost = d + R, .decoded = TS_MIN(TS_MAX(hits, 1), m),
                               .missed = nd - hits};
    if (m > FOCUS_STACK) {
        free(score);
        free(base);
        free(keep);
    }
}

static void focus_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    policy_delayed_emit(r, pc, s);
    if (s->phase == PHASE_PREFILL)
        return;
    const struct delayed_state *ds = POLICY_STATE(r, const struct delayed_state);
    struct focus_pick pk;
    focus_pick(r, pc, &pk);
    s->q_front = s->kv_write_front = s->q;
    s->kv_front = s->kv;
    s->q = ds->commit_rest + r->decoded_in_block - ds->cached + pk.kept;
    s->kv = s->kv_front + s->q_front - s->q;
    s->probe = pk.kept > 0 ? req_masked_in_block(r) : 0; /* the candidates: the block's masked rows */
    s->picked = pk.kept;
    s->logit_rows = policy_logit_rows(pc, s->q, pk.kept);
    s->decoded = pk.decoded;
    s->missed = pk.missed;
}

static void focus_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    struct focus_state *st = POLICY_STATE(r, struct focus_state);
    if (s->phase != PHASE_PREFILL && !block_done) {
        /* the step's pick again, from the request as it was: the same draws */
        struct request was = *r;
        was.steps--;
        was.decoded_in_block -= s->decoded;
        was.decoded_total -= s->decoded;
        struct focus_pick pk;
        focus_pick(&was, pc, &pk);
        st->progress = TS_MAX(st->progress, pk.rightmost);
    }
    if (s->phase == PHASE_PREFILL || block_done)
        st->progress = -1;
    if (s->phase != PHASE_PREFILL) {
        st->steps++;
        st->decodes += s->decoded;
    }
    policy_delayed_advance(r, pc, s, block_done);
}

static void focus_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    (void)pc;
    sd->front_layers = 2;
    sd->evict = true;
}

const struct policy_ops policy_focus = {
    .name = "focus",
    .help = "FOCUS: block+delayed, with layers 0-1 over every active row of the block and the later layers over "
            "the rows kept by the importance delta (budget ceil(alpha x mean decodes), N_sigma, AR context, "
            "placeholders)",
    .params = focus_params,
    .num_params = (int)TS_ARRAY_LEN(focus_params),
    .caps = POLICY_DECIDES | POLICY_BLOCK_CAUSAL,
    .emit = focus_emit,
    .advance = focus_advance,
    .kv_tokens = policy_delayed_kv,
    .kv_peak_tokens = policy_delayed_kv_peak,
    .peak_q = policy_block_peak_q,
    .knobs = focus_knobs,
};
