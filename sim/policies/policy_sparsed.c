/* policy_sparsed.c: SparseD's head-specific sparse attention (arXiv 2509.24014; INV-WZQ/SparseD at
 * 52155b4, models/LLaDA/SparseD_utils.py create_attention_block_mask and modeling_llada.py
 * LLaDABlock.attention; the same in models/Dream). No cache: every step runs the whole sequence,
 * FULL q = L, its attention
 *   - dense in the early steps: SparseD's int(skip T) + 1 first steps of T (--sparsed-skip [0.2]);
 *     tessera counts them in decoded positions, the step that starts with int(skip G) + 1 of the G
 *     decoded building the pattern (the same steps where a step decodes one position, T = G);
 *   - at that step the pattern is built, once for the whole generation: for each query block of b
 *     rows (--sparsed-block [128]) and each head, the scores against every key (pass 1) and against
 *     the response's keys again (pass 2), pooled into b x b tiles; pass 1 keeps the top
 *     int(n sel) + 1 of the n key blocks (--sparsed-select [0.3]) and clears the response's columns,
 *     pass 2 keeps the top int(n_g sel) + 1 of the n_g response blocks. The scores are priced as query-
 *     key pairs at half a pair's cost (QK^T without the values): attn_keys = L + (L + L_g) / 2 a row;
 *   - sparse after it: each query block attends to its kept key blocks alone (FlexAttention with a
 *     block mask): attn_keys = min(L, (n_p + n_g') b) a row, n_p the prompt blocks pass 1 keeps and
 *     n_g' = int(n_g sel) + 1.
 * How many of pass 1's top blocks lie in the prompt depends on the attention: --sparsed-prompt-share
 * [1] of them, rounded (1, the most, is an upper bound on the keys). FlexAttention computes a 128 x
 * 128 tile where any of its blocks is kept: with --sparsed-block below 128, tessera prices the kept
 * blocks alone. The engine runs the steps live (k_sparsed_pattern builds the pattern, the attention
 * kernel attends by it: engine/README.md), in blocks of a multiple of 64. */
#include "policy.h"

#include <math.h>

enum { SKIP, SELECT, BLOCK, PROMPT_SHARE };
static const struct param_spec sparsed_params[] = {
    [SKIP] = {"sparsed-skip", "share of the steps with dense attention before the pattern is built (skip)", 0.2, 0, 1},
    [SELECT] = {"sparsed-select", "share of the key blocks each query block keeps (select)", 0.3, 0, 1},
    [BLOCK] = {"sparsed-block", "the pattern's block of query rows and keys (block_size)", 128, 1, 1 << 16, true},
    [PROMPT_SHARE] = {"sparsed-prompt-share", "share of pass 1's top blocks in the prompt (an assumption; 1 bounds the "
                                              "keys)", 1, 0, 1},
};

struct sparsed_state {
    bool built; /* the pattern is built: the later steps are sparse */
};

/* The step that starts with this many positions decoded builds the pattern. */
static int32_t pattern_at(const struct request *r, const struct policy_cfg *pc)
{
    return (int32_t)(pc->p[SKIP] * r->G) + 1;
}

static bool builds_now(const struct request *r, const struct policy_cfg *pc)
{
    return !POLICY_STATE(r, const struct sparsed_state)->built && r->decoded_total >= pattern_at(r, pc);
}

/* The pattern's blocks: n over the sequence, the first of the response's (last: the first whose rows
 * start past the prompt, or the last block), n_g from it. */
static void blocks_of(const struct request *r, const struct policy_cfg *pc, int32_t *n, int32_t *last, int32_t *n_g)
{
    const int32_t b = (int32_t)pc->p[BLOCK];
    *n = (r->L + b - 1) / b;
    *last = TS_MIN((r->P + b - 1) / b, *n - 1);
    *n_g = *n - *last;
}

/* The keys a row of a sparse step attends to. */
static int32_t sparse_keys(const struct request *r, const struct policy_cfg *pc)
{
    int32_t n, last, n_g;
    blocks_of(r, pc, &n, &last, &n_g);
    const int32_t top = (int32_t)(n * pc->p[SELECT]) + 1;
    const int32_t kept_p = TS_MIN(last, (int32_t)lround(pc->p[PROMPT_SHARE] * top));
    const int32_t kept_g = TS_MIN(n_g, (int32_t)(n_g * pc->p[SELECT]) + 1);
    return (int32_t)TS_MIN((int64_t)r->L, (int64_t)(kept_p + kept_g) * (int32_t)pc->p[BLOCK]);
}

static void sparsed_ext_params(const struct policy_cfg *pc, struct eng_ext_params *out)
{
    out->sparsed_block = (int32_t)pc->p[BLOCK];
    out->sparsed_select = pc->p[SELECT];
}

static void sparsed_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    s->phase = PHASE_FULL;
    s->q = r->L;
    s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
    if (builds_now(r, pc)) { /* dense, and the pattern's scores: pass 1 over all keys, pass 2 over the response's */
        int32_t n, last, n_g;
        blocks_of(r, pc, &n, &last, &n_g);
        const int32_t resp = r->L - TS_MIN(r->L, last * (int32_t)pc->p[BLOCK]);
        s->attn_keys = r->L + (r->L + resp) / 2;
    } else if (POLICY_STATE(r, const struct sparsed_state)->built) {
        s->attn_keys = sparse_keys(r, pc);
    }
}

static void sparsed_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    if (segment_builds_pattern(s)) /* the step that built the pattern */
        POLICY_STATE(r, struct sparsed_state)->built = true;
}

const struct policy_ops policy_sparsed = {
    .name = "sparsed",
    .help = "SparseD (arXiv 2509.24014, INV-WZQ/SparseD models/LLaDA/SparseD_utils.py): no cache; dense attention "
            "in the first skip share of the steps, then a pattern of key blocks a query block and head built once "
            "and kept, each row attending to its kept blocks alone",
    .params = sparsed_params,
    .num_params = (int)TS_ARRAY_LEN(sparsed_params),
    .emit = sparsed_emit,
    .advance = sparsed_advance,
    .engine = "sparsed",
    .ext_params = sparsed_ext_params,
    .kv_tokens = policy_kv_none,
    .kv_peak_tokens = policy_kv_none,
    .peak_q = policy_q_whole,
};
