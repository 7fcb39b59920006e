/* policy_d2f.c: D2F's pipelined parallel decoding (arXiv 2508.09192, Discrete Diffusion Forcing;
 * zhijie-group/Discrete-Diffusion-Forcing at 771f745, D2F-eval/eval_llada.py _generate_block_single
 * and _update_block_completion_states; the same in eval_dream.py and in zhijie-group/d2f_vllm's
 * engine). Several blocks of the response are in flight at once:
 *   - before each step a new block (all masked) is added once the last block's decoded share reaches
 *     tau_add (--d2f-add; the prompt counts as decoded, so the first block comes at the first step);
 *   - a block is fully activated once its predecessor's decoded share reaches tau_act (--d2f-act;
 *     the first block at once), semi-activated before;
 *   - each step runs the rows of every block not yet cached, attending block-causally (each block
 *     bidirectionally to itself and to the blocks before it), over the cache of the prompt and the
 *     cached blocks: REFRESH at the first step (q = P + the first block, the prompt's K/V written),
 *     then BLOCK q = the uncached blocks' rows, kv = P + the cached blocks;
 *   - a finished block whose blocks before it are all finished is written to the cache by the next
 *     step's forward (kv_write = its rows, the first of q); no forward of its own;
 *   - each block decodes at once: a fully activated block the decode model's count (at least one),
 *     a semi-activated one only its positions above the threshold, none forced: tessera takes the
 *     share --d2f-semi of the decode model's count, stochastically rounded (a named assumption: the
 *     share depends on the model's confidences over a partly masked context).
 * D2F's code bounds the blocks in flight by nothing but the response's length; tessera holds at most
 * --d2f-flight of them (12 at most: the request's policy state). Diffulex's multi_bd (SJTU-DENG-Lab/
 * Diffulex at 184ba97, the engine of the MBD-LMs; its request state machine, thresholds and cache path
 * D2F's strategy's too) bounds them by a buffer of slots, 2 for LLaDA2.0-mini and 4 for SDAR in its
 * paper's runs, and runs the whole buffer every step, an empty slot's rows as padding (--d2f-pad 1:
 * q and the logit rows grow to --d2f-flight blocks; its attention masks them out, which tessera prices
 * as rows of the step, a slight overcount). The first step's prompt rows are
 * priced as blocks of --block (D2F's mask treats the prompt as one block). The counts a step draws are
 * seeded by the request, the step and the block, so emitting a step again draws the same. */
#include "policy.h"

#include <gsl/gsl_rng.h>
#include <math.h>

#define D2F_FLIGHT_MAX 12

enum { ADD, ACT, SEMI, FLIGHT, PAD, STEP_COUNT };
static const struct param_spec d2f_params[] = {
    [ADD] = {"d2f-add", "a block joins once the last block's decoded share reaches this (tau_add)", 0.1, 0, 1},
    [ACT] = {"d2f-act", "a block is fully activated once its predecessor's decoded share reaches this (tau_act)",
             0.95, 0, 1},
    [SEMI] = {"d2f-semi", "a semi-activated block decodes this share of the decode model's count (an assumption: "
                          "only its positions above the threshold, none forced)", 0.5, 0, 1},
    [FLIGHT] = {"d2f-flight", "blocks in flight at most, the finished ones waiting for the cache among them (D2F's "
                              "code sets no bound)", D2F_FLIGHT_MAX, 1, D2F_FLIGHT_MAX, true},
    [PAD] = {"d2f-pad", "1: each step after the first runs --d2f-flight blocks' rows, the slots holding no block "
                        "padding (Diffulex's multi_bd: a buffer of one shape for its CUDA graphs, its empty slots' rows "
                        "masked out of attention but through every GEMM and the LM head); 0: the blocks' rows alone "
                        "(D2F's code)", 0, 0, 1, true},
    [STEP_COUNT] = {"d2f-step-count", "1: the decode model's count is the step's, taken by its blocks in order "
                                      "(the earliest first, each at most its masked positions), as a published "
                                      "tokens-a-forward of multi-block decoding counts it (MBD-LMs'); 0: each "
                                      "block draws its own (D2F's)", 0, 0, 1, true},
};

struct d2f_state {
    uint16_t done[D2F_FLIGHT_MAX]; /* decoded positions of blocks cached .. added - 1 */
    uint16_t full;                 /* bit i: block cached + i is fully activated */
    uint16_t cached;               /* response blocks whose K/V are in the cache */
    uint16_t added;                /* response blocks added */
    bool prompt_cached;
};

static int32_t done_of(const struct request *r, const struct d2f_state *st, int32_t b)
{
    return b < st->cached ? req_block_len(r, b) : b < st->added ? st->done[b - st->cached] : 0;
}

static double share(const struct request *r, const struct d2f_state *st, int32_t b)
{
    return (double)done_of(r, st, b) / req_block_len(r, b);
}

/* The state once the step's updates before its forward are made: a block added, blocks activated. */
static struct d2f_state prepared(const struct request *r, const struct policy_cfg *pc)
{
    struct d2f_state st = *POLICY_STATE(r, const struct d2f_state);
    const double last = st.added == 0 ? 1.0 : share(r, &st, st.added - 1);
    if (st.added <= r->last_block && st.added - st.cached < (int32_t)pc->p[FLIGHT] && last >= pc->p[ADD])
        st.done[st.added++ - st.cached] = 0;
    for (int32_t b = st.cached; b < st.added; b++)
        if (b == 0 || share(r, &st, b - 1) >= pc->p[ACT])
            st.full |= (uint16_t)(1u << (b - st.cached));
    return st;
}

/* Positions of response blocks a .. b - 1. */
static int32_t span(const struct request *r, int32_t a, int32_t b)
{
    int32_t n = 0;
    for (int32_t i = a; i < b; i++)
        n += req_block_len(r, i);
    return n;
}

/* The finished blocks from the first uncached one on, before the first unfinished: the next
 * forward writes their K/V. */
static int32_t to_cache(const struct request *r, const struct d2f_state *st)
{
    int32_t n = 0;
    while (st->cached + n < st->added && done_of(r, st, st->cached + n) == req_block_len(r, st->cached + n))
        n++;
    return n;
}

/* What the step decodes in block b (of the prepared state), drawn from the decode model as if b were
 * the request's block, seeded by the request, the step and the block; fresh: as if none of b were
 * decoded yet (the step's count, --d2f-step-count, not held to b's masked positions). */
static int32_t draw_as(const struct request *r, const struct policy_cfg *pc, const struct d2f_state *st, int32_t b,
                       bool fresh)
{
    const int32_t left = req_block_len(r, b) - done_of(r, st, b);
    if (left == 0)
        return 0;
    TS_ASSERT(pc->rng);
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64(((uint64_t)r->steps << 16) + (uint64_t)b + 1)));
    struct request view = *r;
    view.cur_block = b;
    view.decoded_in_block = fresh ? 0 : done_of(r, st, b);
    view.rng = pc->rng;
    const int32_t k = decode_tokens(pc->dm, &view);
    if (st->full >> (b - st->cached) & 1)
        return k;
    return TS_MIN(left, (int32_t)floor(pc->p[SEMI] * k + gsl_rng_uniform(pc->rng)));
}

static int32_t draw(const struct request *r, const struct policy_cfg *pc, const struct d2f_state *st, int32_t b)
{
    return draw_as(r, pc, st, b, false);
}

/* What the step decodes in each block of the prepared state, into k[b - cached]: each block's own draw,
 * or (--d2f-step-count 1) the count the first block with masks draws as if fully activated, shared by
 * the blocks in order. */
static void draws(const struct request *r, const struct policy_cfg *pc, const struct d2f_state *st, int32_t *k)
{
    if (!pc->p[STEP_COUNT]) {
        for (int32_t b = st->cached; b < st->added; b++)
            k[b - st->cached] = draw(r, pc, st, b);
        return;
    }
    struct d2f_state all = *st;
    all.full = (uint16_t)~0u;
    for (int32_t b = st->cached; b < st->added; b++)
        k[b - st->cached] = 0;
    int32_t b0 = st->cached;
    while (b0 < st->added && done_of(r, st, b0) == req_block_len(r, b0))
        b0++;
    int32_t left = b0 < st->added ? draw_as(r, pc, &all, b0, true) : 0;
    for (int32_t b = b0; b < st->added && left > 0; b++) {
        const int32_t take = TS_MIN(left, req_block_len(r, b) - done_of(r, st, b));
        k[b - st->cached] = take;
        left -= take;
    }
}

static void d2f_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct d2f_state st = prepared(r, pc);
    const bool from0 = !st.prompt_cached || r->need_refresh; /* the prompt (and the cached blocks) run again */
    const int32_t hit = from0 ? r->prefix_hit : 0, first = from0 ? 0 : st.cached;
    const int32_t front = from0 ? r->P - hit : 0; /* prompt rows */
    s->phase = from0 ? PHASE_REFRESH : PHASE_BLOCK;
    s->kv = from0 ? hit : r->P + span(r, 0, st.cached);
    s->q = front + span(r, first, st.added);
    s->kv_write = front + span(r, first, st.cached + to_cache(r, &st));
    int32_t masked = 0, k[D2F_FLIGHT_MAX];
    draws(r, pc, &st, k);
    for (int32_t b = st.cached; b < st.added; b++) {
        masked += req_block_len(r, b) - done_of(r, &st, b);
        s->decoded += k[b - st.cached];
    }
    s->logit_rows = policy_logit_rows(pc, s->q, masked);
    if (pc->p[PAD] && !from0) { /* (the buffer's empty slots: rows of no block, within the sequence) */
        const int32_t pad = (int32_t)TS_MIN((int64_t)pc->p[FLIGHT] * pc->block_size - s->q, (int64_t)r->L - s->kv - s->q);
        if (pad > 0)
            s->q += pad, s->logit_rows += pad;
    }
}

static void d2f_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)s, (void)block_done; /* (the step's split over the blocks is drawn again: the segment holds its sum) */
    struct d2f_state st = prepared(r, pc);
    const int32_t written = to_cache(r, &st); /* before this step's decodes */
    int32_t k[D2F_FLIGHT_MAX];
    draws(r, pc, &st, k);
    for (int32_t b = st.cached; b < st.added; b++)
        st.done[b - st.cached] += (uint16_t)k[b - st.cached];
    st.prompt_cached = true;
    st.cached += (uint16_t)written;
    for (int32_t i = 0; i < D2F_FLIGHT_MAX; i++)
        st.done[i] = i + written < D2F_FLIGHT_MAX ? st.done[i + written] : 0;
    st.full = (uint16_t)(st.full >> written);
    /* the request's block: the first not decoded (one not added yet: none of it) */
    int32_t b = st.cached;
    while (b < st.added && done_of(r, &st, b) == req_block_len(r, b))
        b++;
    r->cur_block = TS_MIN(b, r->last_block);
    r->decoded_in_block = done_of(r, &st, r->cur_block);
    *POLICY_STATE(r, struct d2f_state) = st;
}

/* D2F's mask is block-causal whatever the model (its LoRA trains LLaDA and Dream to it). */
static void d2f_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    sd->attn_block = pc->block_size;
}

/* K/V the next step needs: the prompt, the cached blocks and the finished ones it writes. */
static int64_t d2f_kv(const struct request *r, const struct policy_cfg *pc)
{
    const struct d2f_state st = prepared(r, pc);
    return r->P + span(r, 0, st.cached + to_cache(r, &st));
}

/* Every block but the last (the step that finishes a request writes nothing after it). */
static int64_t d2f_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->P + span(r, 0, r->last_block);
}

const struct policy_ops policy_d2f = {
    .name = "d2f",
    .help = "D2F (arXiv 2508.09192, zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py): pipelined "
            "blocks, a new one joining once the last is tau_add decoded; each step runs every uncached block "
            "block-causally over the prefix cache, each block decoding at once; a finished block's K/V written by "
            "the next step",
    .params = d2f_params,
    .num_params = (int)TS_ARRAY_LEN(d2f_params),
    .caps = POLICY_DECIDES | POLICY_PIPELINED,
    .emit = d2f_emit,
    .advance = d2f_advance,
    .kv_tokens = d2f_kv,
    .kv_peak_tokens = d2f_kv_peak,
    .peak_q = policy_q_whole,
    .knobs = d2f_knobs,
};
