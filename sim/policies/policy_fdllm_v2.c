/* policy_fdllm_v2.c: Fast-dLLM v2's hierarchical cache (arXiv 2509.26328; NVlabs/Fast-dLLM v2/ at
 * af42f51, generation_functions.py batch_sample, and the model's remote code). A block of m
 * sub-blocks (--block positions each: m x Bs, 4 of 8 in its evaluation) is decoded one sub-block at
 * a time over a block-level prefix cache of the prompt and the finished blocks, C = P + o*m*Bs for
 * block o. With Lo the block's length:
 *   - PREFILL once: q = P (block-causal, as the model was trained), its LM head over every row (the
 *     model's forward keeps every row's logits; --v2-prefill-logits 0: none, DiffusionGemma's encoder
 *     pass);
 *   - each decoding step: the whole block's rows over the cache, nothing written: q = Lo, kv = C
 *     (LM head over every row); the decode model commits its count among the current sub-block's
 *     masked positions only (the sub-block is the decode model's block);
 *   - once a block is decoded, a forward of its rows writes its K/V to the cache and its last logit
 *     gives the next block's first token: q = Lo, kv = C, kv_write = Lo, one token decoded
 *     (--v2-commit-decodes 0: none, as DiffusionGemma's commit pass of its canvas, the --system
 *     diffusion-gemma, drops its sampler's outputs; --v2-context-pass 1: a context pass of the block's rows,
 *     a prefill with no logits that decodes nothing, as SGLang's Gemma4Renoise re-encodes a finished
 *     canvas by an EXTEND forward of its own, --system sglang-dgemma);
 *   - with --v2-dual 1 (use_block_cache, the sub-block DualCache): a sub-block's first step (and a
 *     block's first after its commit) runs the whole block and keeps its K/V aside (kv_write = Lo),
 *     and its later steps run the sub-block's rows alone over the cache and the block's kept K/V,
 *     rewriting their own: q = len, kv = C + Lo - len, kv_write = len. A sub-block after the block's
 *     first starts with its first position masked, which only the block's whole rows predict: its
 *     steps run the whole block until that position is decoded, --v2-full-steps of them (an
 *     assumption; its loop on random weights: 4.25, records/fdllm-v2-own-code-h100).
 * Attention is block-causal at the block (m x Bs), not the sub-block. tessera places blocks after the
 * prompt, where Fast-dLLM v2 places them at multiples of m x Bs from position 0 (the prompt's last
 * P mod (m Bs) tokens riding in the first block's rows and its prefill the rest); where P is a multiple
 * of m Bs the two coincide but for one step: Fast-dLLM v2's prefill decodes the first position and a
 * last commit forward after the last block decodes one past the G asked for, where tessera's first
 * block runs one step more and no commit follows the last (as many forwards, of the same rows). The
 * policy draws its steps' counts itself (the commit's is one), seeded by the request and the step. */
#include "policy.h"

#include <math.h>

enum { SUBS, DUAL, COMMIT, FULL, PLOGITS, CONTEXT };
static const struct param_spec v2_params[] = {
    [SUBS] = {"v2-sub-blocks", "sub-blocks of --block positions a block (m: the block's rows run each step, its "
                               "sub-blocks decode in turn)", 4, 1, 1024, true},
    [DUAL] = {"v2-dual", "1: the sub-block DualCache (a sub-block's later steps run its rows alone)", 0, 0, 1, true},
    [COMMIT] = {"v2-commit-decodes", "positions of the next block a commit forward decodes (1: Fast-dLLM v2's, from "
                                     "the block's last row; 0: DiffusionGemma's commit pass, its sampler's outputs "
                                     "dropped)", 1, 0, 1, true},
    [FULL] = {"v2-full-steps", "--v2-dual 1: the steps a sub-block after a block's first runs over the whole block, "
                               "until its first position is decoded (a mean, spread over the sub-blocks; which "
                               "step decodes it depends on the model: an assumption)", 1, 1, 1024},
    [PLOGITS] = {"v2-prefill-logits", "1: the prefill's LM head over every row (Fast-dLLM v2's model keeps every row's "
                                      "logits); 0: none (DiffusionGemma's encoder pass)", 1, 0, 1, true},
    [CONTEXT] = {"v2-context-pass", "1: a finished block's K/V written by a context pass, a prefill of its rows with "
                                    "no logits (SGLang's DiffusionGemma: an EXTEND forward of its own, which its "
                                    "scheduler runs as a prefill; it decodes nothing, whatever --v2-commit-decodes); 0: "
                                    "by a commit forward of the block's rows with their logits", 0, 0, 1, true},
};

struct v2_state {
    bool prefilled;
    bool commit_pending; /* a finished block waits for its commit forward */
    bool block_kept;     /* --v2-dual: this block's K/V are kept aside (a step ran its rows since its start) */
};

/* The block of sub-block r->cur_block: its first position (from P), its length, the cache before it. */
static void v2_block(const struct request *r, const struct policy_cfg *pc, int32_t *start, int32_t *len, int32_t *cache)
{
    const int32_t w = (int32_t)pc->p[SUBS] * r->Bs;
    *start = r->cur_block / (int32_t)pc->p[SUBS] * w;
    *len = TS_MIN(w, r->G - *start);
    *cache = r->P + *start;
}

/* The step's count from the decode model, drawn from the request's seed and its step index (emitting
 * the step again draws the same). */
static int32_t v2_draw(const struct request *r, const struct policy_cfg *pc)
{
    if (!pc->rng)
        return decode_tokens(pc->dm, r);
    gsl_rng_set(pc->rng, (unsigned long)ts_mix64(r->seed ^ ts_mix64((uint64_t)r->steps + 1)));
    struct request drawn = *r;
    drawn.rng = pc->rng;
    return decode_tokens(pc->dm, &drawn);
}

/* The steps sub-block r->cur_block runs over its whole block (--v2-dual): one where it is its block's first
 * (its first position was decoded by the commit before it), else --v2-full-steps spread evenly over the
 * request's later sub-blocks (the j-th runs floor((j + 1) F) - floor(j F), at least one). */
static int32_t v2_full_steps(const struct request *r, const struct policy_cfg *pc)
{
    const int32_t m = (int32_t)pc->p[SUBS], k = r->cur_block % m, j = r->cur_block / m * (m - 1) + k - 1;
    if (k == 0)
        return 1;
    const double F = pc->p[FULL];
    return TS_MAX(1, (int32_t)(floor((j + 1) * F) - floor(j * F)));
}

static void v2_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct v2_state *st = POLICY_STATE(r, const struct v2_state);
    int32_t start, len, cache;
    v2_block(r, pc, &start, &len, &cache);
    if (!st->prefilled || r->need_refresh) { /* the prompt, and after a recompute the finished blocks */
        s->phase = PHASE_PREFILL;
        s->q = cache - r->prefix_hit;
        s->kv = r->prefix_hit;
        s->kv_write = s->q;
        s->logit_rows = pc->p[PLOGITS] == 0 ? 0 : pc->mask_only ? 1 : s->q; /* (logits_to_keep 0: every row) */
        return;
    }
    const int32_t sub = req_block_len(r, r->cur_block);
    if (st->commit_pending) { /* the block before: its K/V written, the next token from its last row */
        const int32_t w = (int32_t)pc->p[SUBS] * r->Bs;
        s->phase = pc->p[CONTEXT] ? PHASE_PREFILL : PHASE_BLOCK;
        s->q = s->kv_write = w;
        s->kv = cache - w;
        s->logit_rows = pc->p[CONTEXT] ? 0 : pc->mask_only ? 1 : w;
        s->decoded = pc->p[CONTEXT] ? 0 : TS_MIN((int32_t)pc->p[COMMIT], req_masked_in_block(r));
        return;
    }
    if (st->block_kept && r->steps_in_block >= v2_full_steps(r, pc)) { /* the sub-block over the block's K/V */
        s->phase = PHASE_REUSE;
        s->q = s->kv_write = sub;
        s->kv = cache + len - sub;
        s->logit_rows = policy_logit_rows(pc, sub, req_masked_in_block(r));
    } else {
        const int32_t done = (r->cur_block * r->Bs - start) + r->decoded_in_block; /* decoded in the block */
        s->phase = PHASE_BLOCK;
        s->q = len;
        s->kv = cache;
        s->kv_write = pc->p[DUAL] > 0 ? len : 0;
        s->logit_rows = policy_logit_rows(pc, len, len - done);
    }
    s->decoded = v2_draw(r, pc);
}

static void v2_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    struct v2_state *st = POLICY_STATE(r, struct v2_state);
    if (s->phase == PHASE_PREFILL) {
        *st = (struct v2_state){.prefilled = true};
        return;
    }
    /* the commit leaves the new block's K/V to its first step; a step of the block's rows keeps them */
    st->block_kept = !st->commit_pending && pc->p[DUAL] > 0 && (st->block_kept || s->phase == PHASE_BLOCK);
    st->commit_pending = block_done && r->cur_block % (int32_t)pc->p[SUBS] == 0; /* (cur_block moved on) */
}

static int64_t v2_kv(const struct request *r, const struct policy_cfg *pc)
{
    int32_t start, len, cache;
    v2_block(r, pc, &start, &len, &cache);
    return cache + (pc->p[DUAL] > 0 ? len : 0);
}

static int64_t v2_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    struct request last = *r;
    last.cur_block = r->last_block;
    return v2_kv(&last, pc);
}

static int32_t v2_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    int32_t start, len, cache;
    struct request last = *r;
    last.cur_block = r->last_block;
    v2_block(&last, pc, &start, &len, &cache);
    return TS_MAX(cache, (int32_t)pc->p[SUBS] * r->Bs); /* a prefill after recompute, or a block's rows */
}

/* Its logits: a block's rows, or the prefill's (every row but where only the masked ones are taken). */
static int32_t v2_peak_logits(const struct request *r, const struct policy_cfg *pc)
{
    return TS_MAX((int32_t)pc->p[SUBS] * r->Bs, pc->p[PLOGITS] == 0 || pc->mask_only ? 1 : v2_peak_q(r, pc));
}

/* A block-causal model attends block-causally at the block, not the sub-block. */
static void v2_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    if (sd->attn_block > 0)
        sd->attn_block = (int32_t)pc->p[SUBS] * pc->block_size;
}

static int32_t v2_context_pass_rows(const struct policy_cfg *pc)
{
    return pc->p[CONTEXT] != 0 ? (int32_t)pc->p[SUBS] * pc->block_size : 0;
}

const struct policy_ops policy_fdllm_v2 = {
    .name = "fdllm-v2",
    .help = "Fast-dLLM v2 (arXiv 2509.26328, NVlabs/Fast-dLLM v2/generation_functions.py): PREFILL once; "
            "each step the block's rows (m sub-blocks of --block) over the prefix cache, the current "
            "sub-block decoding; a finished block's K/V written by a forward of its own; --v2-dual 1: "
            "the sub-block DualCache",
    .params = v2_params,
    .num_params = (int)TS_ARRAY_LEN(v2_params),
    .caps = POLICY_DECIDES | POLICY_BLOCK_CAUSAL,
    .emit = v2_emit,
    .advance = v2_advance,
    .kv_tokens = v2_kv,
    .kv_peak_tokens = v2_kv_peak,
    .peak_q = v2_peak_q,
    .peak_logits = v2_peak_logits,
    .knobs = v2_knobs,
    .context_pass_rows = v2_context_pass_rows,
};
