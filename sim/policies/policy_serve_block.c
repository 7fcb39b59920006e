/* policy_serve_block.c: block diffusion as the serving engines run a block-causal model (LLaDA2.0/2.1,
 * SDAR): SGLang's dLLM path (sglang 0.5.23, python/sglang/srt/dllm/ and the scheduler's dLLM branch) and
 * vLLM's dllm-plugin (vllm-project/dllm-plugin: its LLaDA2 model state and sampler). Every denoising
 * forward is one block of Bs rows per request over the request's cached blocks, with logits for all Bs
 * rows:
 *   - the prompt's whole blocks are prefilled a block a forward (--serve-prefill-block 1, SGLang's:
 *     schedule_policy.py caps a request's extend at one block: q = Bs over the blocks before, kv_write
 *     = Bs, every row's logits), or in one forward (0, the dllm-plugin's: q = P - P mod Bs, no logits);
 *     the prompt's last partial block is the first generation block's head;
 *   - each denoising step runs the block over the prefix: q = Bs, kv = the whole blocks before it,
 *     its K/V written into the block's slots (kv_write = Bs);
 *   - a block is done only after the forward that finds it resolved (SGLang's decoders test it before
 *     their step: low_confidence.py; the plugin's sampler runs a K/V refresh forward once a block has
 *     no mask), whose K/V is the block's committed K/V: one forward more a block, committing nothing
 *     (POLICY_CONFIRMS_BLOCK);
 *   - an editing decoder runs --post-edit forwards more between the block's last commit and that one
 *     (SGLang's JointThreshold, python/sglang/srt/dllm/algorithm/joint_threshold.py: with no mask left it
 *     rewrites any token its argmax disagrees with, edit_threshold 0, until a forward writes nothing or
 *     after max_post_edit_steps = 16; JointThresholdInDel, joint_threshold_indel.py, LLaDA2.2: its
 *     DELETE and SPLIT tokens shift the block and reopen masks that its later forwards commit, then a
 *     cleanup forward and one that stores the block's K/V). Each is a block forward committing
 *     nothing; their count is the model's, an assumption (0: LowConfidence).
 * Blocks are the sequence's (POLICY_ALIGNED_BLOCKS): the first generation block holds the prompt's last
 * P mod Bs positions (request.head) and masks the rest, and the last runs all its Bs rows, past the
 * generation's end where G + head is not a multiple of Bs. After a preemption by recompute the prompt
 * and every finished block are prefilled again, a block a forward. */
#include "policy.h"

enum { PREFILL_BLOCK, POST_EDIT };
static const struct param_spec serve_params[] = {
    [PREFILL_BLOCK] = {"serve-prefill-block", "1: the prompt prefilled a block a forward (SGLang's dLLM path); 0: in "
                       "one forward (vLLM's dllm-plugin)", 1, 0, 1, true},
    [POST_EDIT] = {"post-edit", "forwards a block runs after its last mask is committed, before the one that "
                   "confirms it: an editing decoder's token-to-token edits (SGLang's JointThreshold, LLaDA2.1: "
                   "at most 16, max_post_edit_steps) and, with insert and delete (JointThresholdInDel, "
                   "LLaDA2.2), the reopened masks' and the cleanup's; how many depends on the model's edits",
                   0, 0, 64, true},
};

struct serve_state {
    int32_t cached; /* positions whose K/V the cache holds: whole prompt blocks, then finished blocks */
};

/* The positions before block b's rows: the prompt's whole blocks and the b blocks before it. */
static int32_t prefix_of(const struct request *r, int32_t b)
{
    return r->P - r->head + b * r->Bs;
}

static void serve_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct serve_state *st = POLICY_STATE(r, const struct serve_state);
    const int32_t prefix = prefix_of(r, r->cur_block);
    int32_t cached = r->need_refresh ? 0 : st->cached;
    if (cached == 0 && r->prefix_hit > 0) /* whole blocks the prompt cache holds */
        cached = TS_MIN(r->prefix_hit / r->Bs * r->Bs, prefix);
    s->q = r->Bs;
    s->kv = cached;
    s->kv_write = r->Bs;
    s->logit_rows = r->Bs; /* every row's logits (the logits processor's full logits) */
    s->phase = cached < prefix ? PHASE_PREFILL : PHASE_BLOCK;
    if (s->phase == PHASE_PREFILL && pc->p[PREFILL_BLOCK] == 0) { /* the rest of the blocks before at once */
        s->q = s->kv_write = prefix - cached;
        s->logit_rows = 0;
    }
}

static void serve_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc;
    struct serve_state *st = POLICY_STATE(r, struct serve_state);
    if (s->phase == PHASE_PREFILL)
        st->cached = s->kv + s->q;
    else if (block_done) /* (cur_block has moved on) */
        st->cached = prefix_of(r, r->cur_block);
}

static int32_t serve_confirm_steps(const struct policy_cfg *pc) { return 1 + (int32_t)pc->p[POST_EDIT]; }

static int64_t serve_kv(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return (int64_t)prefix_of(r, r->cur_block) + r->Bs;
}

static int64_t serve_kv_peak(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return (int64_t)prefix_of(r, r->last_block) + r->Bs;
}

static int32_t serve_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    /* (in one forward: the prompt and, after a recompute, every finished block) */
    return pc->p[PREFILL_BLOCK] != 0 ? r->Bs : TS_MAX(r->Bs, prefix_of(r, r->last_block));
}

static int32_t serve_peak_logits(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->Bs;
}

const struct policy_ops policy_serve_block = {
    .name = "serve-block",
    .caps = POLICY_BLOCK_CAUSAL | POLICY_NEEDS_BLOCK_MODEL | POLICY_CONFIRMS_BLOCK | POLICY_ALIGNED_BLOCKS,
    .help = "block diffusion as the serving engines run it (SGLang's dLLM path, sglang 0.5.23 "
            "python/sglang/srt/dllm/; vLLM's dllm-plugin): blocks from position 0, the prompt prefilled a block a "
            "forward (or at once), each step the block over the cached blocks with every row's logits, each "
            "block confirmed by one forward more that finds it resolved",
    .params = serve_params,
    .num_params = (int)TS_ARRAY_LEN(serve_params),
    .emit = serve_emit,
    .advance = serve_advance,
    .confirm_steps = serve_confirm_steps,
    .kv_tokens = serve_kv,
    .kv_peak_tokens = serve_kv_peak,
    .peak_q = serve_peak_q,
    .peak_logits = serve_peak_logits,
};
