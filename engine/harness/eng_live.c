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

static int live_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    float ms = 0;
    if (eng_step(ctx, sd, NULL, &ms, err))
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static void live_release(void *ctx, int32_t req_id) { eng_release(ctx, req_id); }

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
    struct eng *e;
    if (eng_create(m, &o, &e, err))
        return -1;
    *ex = (struct sim_executor){e, live_step, live_release};
    return 0;
}

void eng_live_close(struct sim_executor *ex)
{
    if (ex && ex->ctx)
        eng_destroy(ex->ctx);
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
