/* policy_elastic.c: Elastic-Cache (arXiv 2510.14973; its LLaDA code, llada/generate.py
 * generate_with_elastic_cache and model/modeling_llada.py). The first forward runs the whole sequence
 * and caches each layer's queries, keys, values and inputs. Each later step runs only Q rows at every
 * layer, over the cached K/V of all the others (q = Q, kv = L - Q, kv_write = Q): the tracked tokens
 * (the most-attended decoded one a layer: --ec-track, the distinct ones), the positions the step before
 * decoded, and a window of the first masked positions left (--ec-window, its GSM8K setting 16); its LM
 * head runs on the Q rows. When the drift of the tracked tokens' attention passes its bound at some
 * layer, the step refreshes: the layers up to it run the Q rows as above (the front shape), and every
 * later layer runs all L rows from the cached inputs, rewriting their K/V (q = L, kv_write = L), the LM
 * head on all L. When the drift test fires and at which layer depend on the attention: tessera refreshes
 * every --ec-refresh-every steps (0: never), or a share --ec-refresh-share of the cached steps spread
 * evenly (step k refreshes where floor(k s) passes a whole number), with the first --ec-depth layers
 * kept, all assumptions (its code on random weights: 63% of the steps, from layer 4 (the median),
 * records/elastic-own-code-h100). The
 * cache holds each token's query and input a layer beside its K/V. The drift test's own attention
 * weights (eager attention) are not priced. */
#include "policy.h"

#include <math.h>

enum { WINDOW, TRACK, EVERY, SHARE, DEPTH };
static const struct param_spec ec_params[] = {
    [WINDOW] = {"ec-window", "masked positions a step runs, the first ones left (window_length)", 16, 1, 1 << 20, true},
    [TRACK] = {"ec-track", "distinct tracked tokens a step runs (the most-attended one a layer: an assumption)", 1, 0,
               1 << 20, true},
    [EVERY] = {"ec-refresh-every", "steps between refreshes, when the drift test fires (0: never; an assumption)", 0, 0,
               1e6, true},
    [SHARE] = {"ec-refresh-share", "share of the cached steps that refresh, spread evenly (0: by --ec-refresh-every "
                                   "alone; an assumption: tessera engine generate --elastic-drift measures it)",
               0, 0, 1},
    [DEPTH] = {"ec-depth", "layers a refresh keeps on the Q rows before it recomputes every row (an assumption)", 16, 0,
               4096, true},
};

struct ec_state {
    struct chosen_state c;  /* first: the chosen rows' own state */
    int32_t since_refresh;  /* steps since the first forward or the last refresh */
    int32_t since_full;     /* steps since the first forward */
};

/* Whether the k-th step after the first forward refreshes, by --ec-refresh-every or --ec-refresh-share. */
static bool ec_refreshes(const struct ec_state *st, const struct policy_cfg *pc)
{
    const double every = pc->p[EVERY], share = pc->p[SHARE];
    const int32_t k = st->since_full;
    return (every > 0 && st->since_refresh >= every) || floor(k * share) > floor((k - 1) * share);
}

static void ec_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const struct ec_state *st = POLICY_STATE(r, const struct ec_state);
    const int32_t window = TS_MIN((int32_t)pc->p[WINDOW], r->G - r->decoded_total);
    if (policy_emit_chosen(r, pc, (int32_t)pc->p[TRACK] + st->c.last_decoded + window, window, s) ||
        !ec_refreshes(st, pc))
        return;
    /* a refresh: the chosen rows through the kept layers, then every row */
    s->phase = PHASE_REFRESH;
    s->q_front = s->kv_write_front = s->q;
    s->kv_front = s->kv;
    s->q = s->kv_write = r->L;
    s->kv = 0;
    s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
}

static void ec_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done)
{
    (void)pc, (void)block_done;
    struct ec_state *st = POLICY_STATE(r, struct ec_state);
    const bool fresh = s->phase != PHASE_REUSE; /* a first forward or a refresh */
    st->since_refresh = fresh ? 1 : st->since_refresh + 1;
    st->since_full = s->phase == PHASE_FULL ? 1 : st->since_full + 1;
    policy_chosen_advance(r, s);
}

static void ec_knobs(const struct policy_cfg *pc, struct step_desc *sd)
{
    sd->front_layers = (int32_t)pc->p[DEPTH];
    sd->cache_inputs = true;
}

/* A refresh recomputes some layer: --ec-depth below the model's layers where the policy refreshes. */
static int ec_check_model(const struct policy_cfg *pc, const struct model_cfg *m, struct ts_err *err)
{
    if ((pc->p[EVERY] > 0 || pc->p[SHARE] > 0) && pc->p[DEPTH] >= m->num_layers)
        return ts_fail(err, "--ec-depth %g: a refresh keeps its first %g layers on the chosen rows, but %s has %d "
                            "layers, which leaves none to recompute (at most %d)", pc->p[DEPTH], pc->p[DEPTH], m->name,
                       m->num_layers, m->num_layers - 1);
    return 0;
}

/* Each token's query and layer input a layer, beside its K/V. */
static int64_t ec_token_bytes(const struct model_cfg *m) { return model_feat_bytes_per_token(m); }

const struct policy_ops policy_elastic = {
    .name = "elastic",
    .help = "Elastic-Cache (arXiv 2510.14973, llada/generate.py generate_with_elastic_cache): a FULL first forward, "
            "then each step the tracked tokens, the ones just decoded and a window of masked ones over every other "
            "position's cache; a refresh (every --ec-refresh-every steps, or a share of them: an assumption) "
            "recomputes every row past its first --ec-depth layers",
    .params = ec_params,
    .num_params = (int)TS_ARRAY_LEN(ec_params),
    .caps = POLICY_SCATTERED,
    .emit = ec_emit,
    .advance = ec_advance,
    .kv_tokens = policy_kv_whole,
    .kv_peak_tokens = policy_kv_whole,
    .peak_q = policy_q_whole,
    .knobs = ec_knobs,
    .check_model = ec_check_model,
    .token_bytes = ec_token_bytes,
};
