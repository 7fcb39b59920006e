/*
 * eng_live.c: live mode, the engine in place of the cost model (`tessera sim --executor gpu`).
 * The simulator builds each step as usual; the engine executes it on the GPU and its measured time
 * (CUDA events) advances the simulated clock, so one schedule runs live, its latencies measured.
 * Requests' KV pages are freed when the simulator frees them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_load.h"
#include "cost.h"
#include "eng.h"
#include "eng_tp.h"
#include "harness.h"
#include "sim.h"

/* A live engine and, in a disaggregated fleet, the other replicas' K/V pools it has opened. */
struct live {
    struct eng *e;
    struct eng_pool *peers; /* [num_peers], by replica; k NULL where not opened */
    int num_peers;
};

static int live_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    const struct live *l = ctx;
    float ms = 0;
    if (eng_step(l->e, sd, NULL, &ms, err))
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static void live_release(void *ctx, int32_t req_id) { eng_release(((struct live *)ctx)->e, req_id); }

static int live_hold(void *ctx, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    return eng_hold(((struct live *)ctx)->e, req_id, ticket, err);
}

/* --- a disaggregated fleet's moves (engine_load.h, engine_moves) ---------------------------- */

_Static_assert(sizeof(struct eng_pool_handle) <= ENGINE_POOL_HANDLE_BYTES, "a pool's handle fits the fleet's message");

static int share(void *ctx, void *handle, struct ts_err *err)
{
    memset(handle, 0, ENGINE_POOL_HANDLE_BYTES);
    return eng_pool_export(((struct live *)ctx)->e, handle, err);
}

static int open_peer(void *ctx, int index, const void *handle, struct ts_err *err)
{
    struct live *l = ctx;
    if (index < 0 || index >= 65536)
        return ts_fail(err, "replica %d: out of range", index);
    if (index >= l->num_peers) {
        l->peers = xrealloc(l->peers, sizeof *l->peers * (size_t)(index + 1));
        memset(l->peers + l->num_peers, 0, sizeof *l->peers * (size_t)(index + 1 - l->num_peers));
        l->num_peers = index + 1;
    }
    struct eng_pool_handle h;
    memcpy(&h, handle, sizeof h);
    if (eng_pool_import(&h, &l->peers[index], err))
        return ts_fail_prefix(err, "replica %d's K/V pool", index);
    return 0;
}

static int held_pages(void *ctx, int64_t ticket, const int32_t **pages, int32_t *n)
{
    return eng_held(((struct live *)ctx)->e, ticket, pages, n);
}

static int pull(void *ctx, int from, const int32_t *pages, int32_t n, int64_t key, double *seconds, struct ts_err *err)
{
    struct live *l = ctx;
    if (from < 0 || from >= l->num_peers || !l->peers[from].k)
        return ts_fail(err, "replica %d's K/V pool is not open here", from);
    float ms = 0;
    if (eng_pull(l->e, &l->peers[from], pages, n, key, &ms, err))
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static int adopt(void *ctx, int64_t key, int32_t req_id, struct ts_err *err)
{
    return eng_adopt(((struct live *)ctx)->e, key, req_id, err);
}

static void drop(void *ctx, int64_t ticket) { eng_drop(((struct live *)ctx)->e, ticket); }

static const struct engine_moves moves = {share, open_peer, held_pages, pull, adopt, drop};

const struct engine_moves *eng_live_moves(void) { return &moves; }

/* The engine sized for the simulation's steps (its token cap, its LM-head chunk, its FFN chunks: each
 * step then runs by its own step_desc, lazy chunking's counts and block-causal attention included),
 * the FFN fused under an implementation profile with a fused FFN, and its activations laid out by
 * the simulation's planner. */
int eng_live_open(const struct sim *s, double mem_limit_gb, struct sim_executor *ex, struct ts_err *err)
{
    const struct sim_config *c = sim_config(s);
    const struct model_cfg *m = sim_model(s);
    eng_choices_use(c); /* the run's engine options (stored with it) */
    struct eng_opts o;
    eng_opts_defaults(&o);
    const double cap = sim_sched_param(s, "max-num-batched-tokens", 0); /* the phase scheduler's step cap */
    o.max_tokens = cap > 0 ? (int32_t)cap : 16384;
    o.logit_chunk_rows = c->max_num_logits > 0 ? c->max_num_logits : o.max_tokens;
    o.ffn_chunks = c->ffn_chunks > 0 ? c->ffn_chunks : 1;
    o.page_tokens = c->kv_page;
    o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    o.planner = c->planner;
    eng_opts_follow_impl(&o, c->impl); /* --impl tessera-fused: the FFN fused, as simulated */
    if (eng_tp_place(&o, err)) /* --tp: this rank's place in the launch (eng_tp.h) */
        return -1;
    if (o.tp_size != c->tp)
        return ts_fail(err, "--tp %d, but this process is rank %d of %d (launched by --tp)", c->tp, o.tp_rank,
                       o.tp_size);
    o.feature_cache = sim_knobs(s)->cache_outputs; /* dLLM-Cache's pool: outputs beside K and V */
    o.input_cache = sim_knobs(s)->cache_inputs;    /* Elastic-Cache's: each layer's inputs beside them */
    struct live *l = xcalloc(1, sizeof *l);
    if (eng_create(m, &o, &l->e, err)) {
        free(l);
        return -1;
    }
    *ex = (struct sim_executor){l, live_step, live_release, live_hold};
    return 0;
}

void eng_live_close(struct sim_executor *ex)
{
    struct live *l = ex ? ex->ctx : NULL;
    if (l) {
        for (int i = 0; i < l->num_peers; i++)
            eng_pool_close(&l->peers[i]);
        free(l->peers);
        eng_destroy(l->e);
        free(l);
    }
    if (ex)
        memset(ex, 0, sizeof *ex);
}

void eng_opts_follow_impl(struct eng_opts *o, const char *impl_name)
{
    struct impl_profile ip;
    if (impl_name && impl_resolve(impl_name, &ip, NULL) == 0 && ip.fused_ffn)
        o->ffn = 1;
}

void eng_choices_use(const struct sim_config *c)
{
    const struct eng_choices ch = {.attention = c->attention, .ffn = c->ffn, .routing = c->routing,
                                   .select_at = c->select_at, .portable = c->kernels == 1, .gemm_algos = c->gemm_algos,
                                   .gemm_cache = c->gemm_cache[0] ? c->gemm_cache : NULL};
    eng_set_choices(&ch);
}
