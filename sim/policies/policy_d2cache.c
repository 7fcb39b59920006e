/* policy_d2cache.c: d2Cache's per-step selection of the rows whose K/V are updated (arXiv 2509.23094;
 * Kamichanw/d2Cache at 72feb60, src/cache/d2cache.py). The first forward runs the whole sequence and
 * caches every position's K/V (FULL q = L, kv_write = L). Each later step runs only the rows chosen
 * after the step before, at every layer, over the cached K/V of all the others (q rows, kv = L - q,
 * kv_write = q):
 *   - the k masked positions of the highest certainty-weighted confidence (--d2-k, its current_k 32),
 *     or all that are left;
 *   - the positions the step before decoded (their K/V now of the decoded token);
 *   - the nucleus of the attention rollout: the fewest of the other positions holding a tenth of its
 *     importance, at least one. How many depends on the attention, an assumption in two parts:
 *     --d2-rollout positions at least, and --d2-rollout-share of the other positions (where the
 *     importance is even, the nucleus holds about rollout_p of them: its code on random weights keeps
 *     0.085-0.091, records/d2cache-own-code-h100; a trained model's concentrated attention, fewer).
 * Only the chosen masked positions produce logits and can be decoded. There is no refresh: after a
 * recompute the next forward runs the whole sequence again. The rollout itself (the attention
 * weights, averaged over heads, and a T x T product a layer, each step) is not priced. */
#include "policy.h"

enum { K, ROLLOUT, SHARE };
static const struct param_spec d2_params[] = {
    [K] = {"d2-k", "masked positions chosen a step, by certainty-weighted confidence (current_k)", 32, 1, 1 << 20, true},
    [ROLLOUT] = {"d2-rollout", "positions the attention rollout's nucleus adds a step (its code takes one at least; "
                               "how many is an assumption)", 1, 1, 1 << 20, true},
    [SHARE] = {"d2-rollout-share", "share of the other positions the rollout's nucleus adds a step, where more than "
                                   "--d2-rollout (an assumption: about rollout_p 0.1 where attention is even; tessera "
                                   "engine generate --d2-rollout measures it)",
               0, 0, 1},
};

static void d2_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const int32_t masked = TS_MIN((int32_t)pc->p[K], r->G - r->decoded_total);
    const int32_t last = POLICY_STATE(r, const struct chosen_state)->last_decoded;
    const int32_t others = (int32_t)(pc->p[SHARE] * (double)(r->L - masked - last));
    policy_emit_chosen(r, pc, masked + last + TS_MAX((int32_t)pc->p[ROLLOUT], others), masked, s);
}

static void d2_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    policy_chosen_advance(r, s);
}

const struct policy_ops policy_d2cache = {
    .name = "d2cache",
    .help = "d2Cache (arXiv 2509.23094, Kamichanw/d2Cache src/cache/d2cache.py): a FULL first forward, then "
            "each step only the k most certain masked positions, the ones the step before decoded and the "
            "attention rollout's nucleus, over every other position's cached K/V",
    .params = d2_params,
    .num_params = (int)TS_ARRAY_LEN(d2_params),
    .caps = POLICY_SCATTERED,
    .emit = d2_emit,
    .advance = d2_advance,
    .kv_tokens = policy_kv_whole,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
};
