/*
 * sim_create.c: a simulator made from its configuration (sim.h): the model, card, policy, scheduler,
 * decode model, cost model and its calibration resolved by name, tensor and expert parallelism, the
 * workload's stream opened, the prompt cache and the memory sized; its release and the accessors of
 * what it resolved.
 */
#define _POSIX_C_SOURCE 200809L
#include "sim_internal.h"
#include "pricing.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_model_resolve(const struct sim_config *c, struct model_cfg *out, struct ts_err *err)
{
    if (model_resolve(c->model, out, err))
        return -1;
    if (c->max_pos > 0)
        out->max_pos = c->max_pos;
    if (c->weights == WEIGHTS_FP8)
        out->weight_bytes = 1;
    return 0;
}

/* --- creation ---------------------------------------------------------------------------- */

int sim_workload_open(const struct sim_config *c, const struct model_cfg *m, struct trace *t, struct trace *length_src,
                      struct trace_stream *st, struct ts_err *err)
{
    if (strcmp(c->trace, "synthetic") == 0) { /* generated as they are taken (sim_requests.c) */
        struct arrival_gen ag;
        struct length_gen lg;
        if (arrival_parse(c->arrivals, c->rps > 0 ? c->rps : 1.0, &ag, err))
            return -1;
        if (strncmp(c->lengths, "file:", 5) == 0) {
            if (trace_load(c->lengths + 5, c->skip_bad_rows, length_src, err))
                return -1;
            lg = (struct length_gen){.kind = LENGTH_SAMPLE, .src = length_src};
        } else if (length_parse(c->lengths, &lg, err)) {
            return -1;
        }
        lg.max_output = c->gen_len > 0 ? c->gen_len : 0;
        if (c->gen_len > 0 && m->max_pos > c->gen_len)
            lg.max_prompt = m->max_pos - c->gen_len;
        trace_stream_gen(st, c->requests > 0 ? c->requests : 200, &ag, &lg, c->seed);
        return 0;
    }
    if (trace_load(c->trace, c->skip_bad_rows, t, err))
        return -1;
    if (t->skipped_rows)
        fprintf(stderr, "%s: skipped %lld malformed rows (--skip-bad-rows)\n", c->trace,
                (long long)t->skipped_rows);
    if (t->skipped_bom)
        fprintf(stderr, "%s: note: skipped the UTF-8 byte-order mark it begins with\n", c->trace);
    if (c->requests > 0) /* (more than the file holds: it is played again, trace_stream_repeat) */
        trace_truncate(t, c->requests);
    int rc = 0;
    if (!t->has_times) {
        struct arrival_gen ag;
        rc = arrival_parse(c->arrivals, c->rps > 0 ? c->rps : 1.0, &ag, err) || trace_assign_arrivals(t, &ag, c->seed, err);
    } else if (c->rps > 0) {
        rc = trace_rescale(t, c->rps, err);
    }
    return rc || trace_stream_repeat(st, t, TS_MAX(c->requests, t->n), err) ? -1 : 0;
}

static int build_workload(struct sim *s, struct ts_err *err)
{
    return sim_workload_open(&s->cfg, &s->model, &s->trace, &s->length_src, &s->stream, err);
}

/* --host under the roofline: an eager implementation's launch and host costs were measured with the
 * host its profile names (impl.host_ref); another host scales them by the ratio of the two hosts'
 * per-step issue times. */
static int roofline_host(struct impl_profile *im, const char *name, struct ts_err *err)
{
    if (!im->host_ref[0])
        return ts_fail(err, "--host %s: the %s implementation issues its steps from CUDA graphs: it has no host "
                            "to swap (an eager one has: torch-eager)", name, im->name);
    double scale;
    if (calib_host_scale(name, im, &scale, err))
        return -1;
    im->launch_s *= scale, im->host_step_s *= scale, im->host_seg_s *= scale;
    return 0;
}

/* The calibrated back end: the profile of this GPU, model and implementation, fitted. */
static int load_calibration(struct sim *s, struct ts_err *err)
{
    const struct sim_config *c = &s->cfg;
    char path[CFG_PATH + 256];
    struct model_cfg share; /* --tp N: the calibration is of one GPU's share (NAME-tpN, model_tp_share) */
    if (model_tp_share(&s->model, c->tp, &share, err))
        return -1;
    const char *impl = s->impl.calib_base[0] ? s->impl.calib_base : s->impl.name;
    if (c->calib[0])
        snprintf(path, sizeof path, "%s", c->calib);
    else
        calib_shipped_path(c->datadir, c->calib_from[0] ? c->calib_from : s->gpu.name, share.name, impl, path,
                           sizeof path);
    struct calib_data d;
    if (c->calib_from[0]) { /* measured on another GPU, carried to this one (tessera calib transfer) */
        struct calib_data m;
        if (calib_data_load(path, &m, err))
            return ts_fail_prefix(err, "--calib-from %s", c->calib_from);
        const int bad = calib_data_validate(&m, c->calib_from, err) ||
                        calib_data_transfer(&m, c->calib_from, s->gpu.name, impl, &d, err);
        calib_data_free(&m);
        if (bad)
            return ts_fail_prefix(err, "--calib-from %s", c->calib_from);
    } else if (calib_data_load(path, &d, err)) {
        if (!c->calib[0])
            ts_fail(err, "--cost calibrated: no calibration for %s on %s with the %s implementation "
                         "(looked for %s; tessera list calibrations shows the shipped ones, --calib FILE "
                         "names another, tessera calib transfer estimates one from another GPU's)", share.name, s->gpu.name, s->impl.name, path);
        return -1;
    }
    int rc = -1;
    if (!ts_name_eq(d.model, share.name)) {
        ts_fail(err, "%s: a calibration of model %s, but the run simulates %s%s", path, d.model, share.name,
                c->tp > 1 ? " (one GPU's share of the model: tessera engine profile --model NAME-tpN)" : "");
        goto done;
    }
    if (calib_data_validate_on(&d, s->gpu.name, c->gpu_file[0] ? c->gpu_file : NULL, err)) {
        ts_fail_prefix(err, "%s", path);
        goto done;
    }
    if (calib_fit(&d, &s->calib, err))
        goto done;
    if (c->host[0] && calib_use_host(s->calib, c->host, &s->impl, err))
        goto done;
    s->cctx.calib = s->calib;
    rc = 0;
done:
    calib_data_free(&d);
    return rc;
}

/* A runtime priced by its rounds measured whole (rounds.h): its profile for this GPU and model on one
 * GPU, where one was measured (else s->rounds stays NULL and the steps are priced as its base's). */
static int load_rounds(struct sim *s, struct ts_err *err)
{
    struct rounds_source src;
    sim_rounds_source(&s->cfg, s->model.name, &s->impl, &src);
    if (!src.card)
        return 0;
    const char *path = src.path;
    /* (the card's own rounds price it whole: --rounds-host naming the card itself changes nothing, and a
     * grid over cards may keep it) */
    if (src.card == s->cfg.gpu && s->cfg.rounds_host[0] && !ts_name_eq(s->cfg.rounds_host, src.card))
        return ts_fail(err, "--rounds-host %s: %s's own rounds of %s are measured (%s): they price the run whole",
                       s->cfg.rounds_host, src.card, s->model.name, path);
    if (src.use == ROUNDS_NONE)
        return ts_fail(err, "--rounds-host %s: no rounds of --impl %s measured for %s on %s", src.card, s->impl.name,
                       s->model.name, src.card);
    s->rounds_host_only = src.use == ROUNDS_HOST_ONLY;
    if (strcmp(s->sched->name, "sglang") != 0)
        return ts_fail(err, "--impl %s prices the sglang scheduler's rounds, measured whole (%s): give --scheduler "
                            "sglang (or --system sglang), not %s", s->impl.name, path, s->sched->name);
    if (params_value(s->sched->params, s->sched->num_params, s->setup.params.sched, "cuda-graph", 1) == 0)
        return ts_fail(err, "--impl %s: its rounds were measured as CUDA graphs (%s); --cuda-graph 0 runs them eagerly, "
                            "which was not measured (--impl tessera prices the engine's forwards)", s->impl.name, path);
    if (s->cfg.clock == CLOCK_ON)
        return ts_fail(err, "--clock on: --impl %s's rounds were measured at the card's own clock, which they hold "
                            "(%s)", s->impl.name, path);
    s->rounds = xcalloc(1, sizeof *s->rounds);
    return rounds_load(path, src.card, s->model.name, s->impl.name, s->rounds, err);
}

/* The run's pricing chain (pricing.h) and what its links load: a runtime's rounds, the card's clock. */
static int load_pricing(struct sim *s, struct ts_err *err)
{
    if ((s->impl.rounds || s->cfg.rounds_host[0]) && load_rounds(s, err))
        return -1;
    if (s->cfg.clock != CLOCK_OFF) { /* the card's clock under its power limit (clock.h) */
        const int found =
            s->cost == &cost_calibrated ? clock_params_find(s->cfg.datadir, s->gpu.name, &s->clock, err) : 0;
        if (found < 0)
            return -1;
        if (!found && s->cfg.clock == CLOCK_ON) {
            if (s->cost != &cost_calibrated)
                ts_fail(err, "--clock on: the clock is modelled with the calibrated cost only (--cost calibrated)");
            else
                ts_fail(err, "--clock on: no clock measured for %s (%s/clock.csv and gpu_measured.csv; tessera calib "
                             "clock fits one to an engine_bench --warm-trace)", s->gpu.name, s->cfg.datadir);
            return -1;
        }
        s->sum.clock_modelled = found == 1 && !s->rounds; /* (a runtime's measured rounds hold their clock; with
                                                           * another card's, their host's time is not the card's) */
    }
    pricing_resolve(s);
    s->pricing = &pricing_ops;
    return 0;
}

/* The all-reduce's times over `degree` GPUs of the run's kind (data/allreduce.csv, else the link). */
static int load_allreduce(struct sim *s, int32_t degree, struct ts_err *err)
{
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/allreduce.csv", s->cfg.datadir);
    return allreduce_load(path, s->gpu.name, degree, s->gpu.link_bw, &s->allreduce, err);
}

/* Tensor parallelism over cfg.tp GPUs: the heads split evenly (the engine splits the FFN, the experts
 * and the vocabulary too), the all-reduces priced from the measured table. */
static int resolve_tp(struct sim *s, struct ts_err *err)
{
    const struct sim_config *cfg = &s->cfg;
    if (s->model.num_kv_heads % cfg->tp || s->model.num_heads % cfg->tp || s->model.global_kv_heads % cfg->tp) {
        ts_fail(err, "--tp: %d does not divide %s's %d query and %d K/V heads (%d in its global layers)", cfg->tp,
                s->model.name, s->model.num_heads, s->model.num_kv_heads, s->model.global_kv_heads);
        return -1;
    }
    const struct model_cfg *m = &s->model;
    if (cfg->executor == EXECUTOR_GPU && (m->ffn % cfg->tp || m->moe_ffn % cfg->tp || m->vocab % cfg->tp)) {
        ts_fail(err, "--executor gpu --tp %d: the engine splits %s's FFN width %d, expert width %d and "
                     "vocabulary of %d over the GPUs, which %d does not divide", cfg->tp, m->name, m->ffn,
                m->moe_ffn, m->vocab, cfg->tp);
        return -1;
    }
    return load_allreduce(s, cfg->tp, err);
}

/* Expert parallelism over cfg.ep GPUs: an MoE model's experts split evenly, the all-reduce of each MoE
 * layer's output priced from the measured table. */
static int resolve_ep(struct sim *s, struct ts_err *err)
{
    const struct sim_config *cfg = &s->cfg;
    if (s->model.num_experts == 0)
        return ts_fail(err, "--ep %d: %s has no experts to split (an MoE model: tessera list models)", cfg->ep,
                       s->model.name);
    if (s->model.num_experts % cfg->ep)
        return ts_fail(err, "--ep: %d does not divide %s's %d experts", cfg->ep, s->model.name, s->model.num_experts);
    return load_allreduce(s, cfg->ep, err);
}

/* --prompt-cache: the store, in the KV pool's free pages (prompts_fit). A prompt block's K/V are
 * another request's own only where the prompt attends causally or block-causally in blocks that tile
 * the prompt blocks. A fed instance's workload is its fleet's, which checks it for block ids. */
static int prompts_setup(struct sim *s, bool fed, struct ts_err *err)
{
    const int64_t blocks = s->cfg.prompt_cache / TRACE_HASH_BLOCK;
    if (s->cfg.prompt_cache == 0)
        return 0;
    if (s->sd.attn_block == 0)
        return ts_fail(err, "--prompt-cache: %s under policy %s attends bidirectionally over the prompt, so a "
                            "prompt block's K/V depend on the tokens after it and another request's are not its "
                            "own (a block-causal model, e.g. sdar-8b, under a block policy keeps them exact)",
                       s->model.name, s->pol->name);
    if (TRACE_HASH_BLOCK % s->sd.attn_block)
        return ts_fail(err, "--prompt-cache: attention blocks of %d tokens (--block) do not tile the prompt blocks "
                            "of %d tokens whose ids a trace gives", s->sd.attn_block, TRACE_HASH_BLOCK);
    if (!fed && s->trace.n_hash == 0)
        return ts_fail(err, "--prompt-cache: the workload (%s) gives no prompt block ids (a Mooncake trace's "
                            "hash_ids), so no request could find another's prompt", s->cfg.trace);
    if (s->sched == &sched_static)
        return ts_fail(err, "--prompt-cache with --scheduler static: a static batch pads its prompts to one length, "
                            "whose rows a cached prefix cannot shorten request by request");
    if (s->cfg.lazy_chunking)
        return ts_fail(err, "--prompt-cache with --lazy-chunking: a step's chunks may take any free page, the cache's "
                            "too");
    if (blocks == 0)
        return ts_fail(err, "--prompt-cache %lld: less than one prompt block of %d tokens",
                       (long long)s->cfg.prompt_cache, TRACE_HASH_BLOCK);
    s->prompts = prompt_cache_new(TS_MIN(blocks, s->mem.kv_pages_total / sim_kv_pages(s, TRACE_HASH_BLOCK) + 1));
    return 0;
}

/* What a running request keeps beside its K/V, in pool tokens: credit decoding's matrix ([block, vocab]
 * fp32), an implementation's self-conditioning canvas ([block, hidden or vocab] fp32, on every GPU). */
static int64_t decode_state_tokens(const struct sim *s, const struct sim_config *cfg)
{
    const int64_t credit = s->sd.decode_credit ? s->model.vocab : 0; /* fp32 values a row of the block */
    const int64_t canvas = s->impl.self_cond == SELF_COND_VOCAB    ? s->model.vocab /* (whole on every GPU: vLLM */
                           : s->impl.self_cond == SELF_COND_HIDDEN ? s->model.hidden /* keeps it so) */
                                                                   : 0;
    const int64_t tb = s->mem.kv_token_bytes;
    return ((int64_t)cfg->block * credit * 4 + tb - 1) / tb + ((int64_t)cfg->block * canvas * 4 + tb - 1) / tb;
}

/* Whether policy po shapes its steps itself (its own counts, selections or layers), so no draft blocks
 * ride beside its rows. */
static bool shapes_own_steps(const struct policy_ops *po)
{
    return (po->caps & (POLICY_DECIDES | POLICY_SELECTS)) || po->knobs;
}

/* Whether the run's policy takes its model and decoder: a block model where it needs one, and steps of
 * a block's rows beside Spiffy's draft blocks or WINO's shadow block. */
static int policy_fits(const struct sim *s, const struct sim_config *cfg, struct ts_err *err)
{
    if (s->dm.drafts > 0 && shapes_own_steps(s->pol)) {
        char fit[1024] = ""; /* (the policies that take them, from the table) */
        const struct policy_ops *po;
        for (int i = 0; (po = policy_get(i)) != NULL; i++)
            if (!shapes_own_steps(po))
                snprintf(fit + strlen(fit), sizeof fit - strlen(fit), "%s%s", fit[0] ? ", " : "", po->name);
        return ts_fail(err, "--decode %s: %s blocks ride beside a step's rows, which policy %s shapes "
                            "itself (its own counts, selections or layers); give it one of %s", cfg->decode,
                       s->dm.kind == DECODE_WINO ? "WINO's shadow" : "Spiffy's draft", s->pol->name, fit);
    }
    if ((s->pol->caps & POLICY_OWN_COUNT) && strcmp(cfg->decode, "fixed:1") != 0)
        return ts_fail(err, "--decode %s: policy %s draws its steps' commits itself (tessera list policies: its "
                            "options), so it reads no decode model", cfg->decode, s->pol->name);
    if ((s->pol->caps & POLICY_NEEDS_BLOCK_MODEL) && !s->model.block_causal)
        return ts_fail(err, "policy %s needs a block-causal model (tessera list models: block), and %s attends "
                            "bidirectionally", s->pol->name, s->model.name);
    return 0;
}

/* The ops' scales: --op-scale's ablation, and a replicate's draw of the GPU's and the host's speed
 * (--interval); none where neither is asked. */
static int op_scales(struct sim *s, const struct sim_config *cfg, struct ts_err *err)
{
    if (!cfg->op_scale[0] && !(cfg->speed_gpu > 0) && !(cfg->speed_host > 0))
        return 0;
    if (cost_op_scale_parse(cfg->op_scale, s->op_scale, err))
        return -1;
    for (int op = 0; op < OP_COUNT; op++)
        s->op_scale[op] *= op == OP_HOST ? (cfg->speed_host > 0 ? cfg->speed_host : 1)
                                         : (cfg->speed_gpu > 0 ? cfg->speed_gpu : 1);
    s->cctx.op_scale = s->op_scale;
    return 0;
}


/* What the summary knows before the run: the workload's requests, and the scheduler's cap on requests
 * running at once as given (its cap_param; -1 where it has none). */
static void summary_at_create(struct sim *s)
{
    s->sum.num_requests = s->num_reqs;
    s->sum.concurrency_cap = s->sched->cap_param ? (int32_t)sim_sched_param(s, s->sched->cap_param, 0) : -1;
    snprintf(s->sum.concurrency_option, sizeof s->sum.concurrency_option, "%s%s", s->sched->cap_param ? "--" : "",
             s->sched->cap_param ? s->sched->cap_param : "");
}
/* sim_create, or with fed its requests fed to it (sim_create_fed). */
static struct sim *sim_create_as(const struct sim_config *cfg, bool fed, struct ts_err *err)
{
    struct sim_setup setup; /* the parts, resolved once */
    if (sim_config_validate(cfg, &setup, err))
        return NULL;
    struct sim *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    s->setup = setup;
    s->pol = setup.policy, s->sched = setup.sched;
    s->impl = setup.impl, s->cost = setup.cost, s->planner = setup.planner, s->dm = setup.decode;
    snprintf(s->code_version, sizeof s->code_version, "%s", ts_version());
    step_desc_init(&s->sd);
    evq_init(&s->evq);
    struct gpu_table *gt = gpu_table_create();
    int rc = sim_model_resolve(cfg, &s->model, err);
    if (!rc && cfg->gpu_file[0])
        rc = gpu_load_file(gt, cfg->gpu_file, err);
    if (!rc)
        rc = gpu_lookup(gt, cfg->gpu, &s->gpu, err);
    gpu_table_destroy(gt);
    if (!rc && s->model.weight_bytes == 1 && !(s->gpu.fp8_flops > 0))
        rc = ts_fail(err, "--weights fp8: %s has no FP8 tensor cores (tessera list gpus: fp8_TFLOPS)", s->gpu.name);
    if (rc)
        goto fail;
    if (cfg->host[0] && s->cost != &cost_calibrated && roofline_host(&s->impl, cfg->host, err))
        goto fail;
    if (policy_fits(s, cfg, err))
        goto fail;
    s->act_layout = cfg->act_layout;
    s->dm.eos = (enum decode_eos)cfg->eos;
    s->tpf_base = s->dm.tpf;
    const struct model_cfg act_view = model_act_view(&s->model); /* (interleaved layers: the larger kind's) */
    s->act_plans = act_cache_create(&act_view, s->planner, NULL);
    s->cctx = (struct cost_ctx){s->model, s->gpu, s->impl, NULL, cfg->extrapolate, cfg->tp, &s->allreduce, NULL, cfg->ep};
    if (op_scales(s, cfg, err))
        goto fail;
    if ((cfg->tp > 1 && resolve_tp(s, err)) || (cfg->ep > 1 && resolve_ep(s, err)))
        goto fail;
    if (s->cost == &cost_calibrated && load_calibration(s, err))
        goto fail;
    if (load_pricing(s, err))
        goto fail;
    s->pcfg = (struct policy_cfg){.block_size = cfg->block, .mask_only = cfg->mask_only,
                                  .block_logits = cfg->block_logits,
                                  .early_stop = cfg->early_stop, .early_commit = cfg->early_commit, .dm = &s->dm,
                                  .aligned_blocks = (s->pol->caps & POLICY_ALIGNED_BLOCKS) != 0};
    if (s->pol->caps & POLICY_DECIDES)
        s->pcfg.rng = gsl_rng_alloc(gsl_rng_taus2);
    memcpy(s->pcfg.p, s->setup.params.policy, sizeof s->pcfg.p);
    memcpy(s->sched_p, s->setup.params.sched, sizeof s->sched_p);
    s->sd.logit_chunk_rows = cfg->max_num_logits;
    policy_step_knobs(s->pol, &s->pcfg, &s->model, &s->sd);
    if (s->pol->check_model && s->pol->check_model(&s->pcfg, &s->model, err))
        goto fail;
    if (s->calib && (s->pol->caps & POLICY_SELECTS) && !calib_prices_selection(s->calib, s->sd.select_heads)) {
        ts_fail(err, "--cost calibrated: the calibration of %s on %s has no %s selection (kv_select) measurements "
                     "for policy %s; profile its select grid (tessera engine profile --grid select) and merge it "
                     "in (tessera calib merge), or price with --cost roofline", s->model.name, s->gpu.name,
                s->sd.select_heads ? "per-head" : "uniform", s->pol->name);
        goto fail;
    }
    s->sd.ffn_chunks = cfg->ffn_chunks;
    s->sd.mask_only = cfg->mask_only;

    int64_t reserve = cfg->reserve_gib >= 0 ? (int64_t)(cfg->reserve_gib * TS_GIB) : s->impl.reserve_bytes;
    if (cfg->lazy_chunking) /* the chunk search keeps its margin of the card free as well */
        reserve += chunk_search_margin(&s->model, cfg->search_margin_mib);
    s->mem.capacity = s->gpu.mem_bytes - reserve;
    s->mem.weight_bytes = model_weight_bytes(&s->model) / cfg->tp; /* a GPU's share */
    if (cfg->ep > 1) /* its share of the experts, the rest whole */
        s->mem.weight_bytes -= model_expert_weight_bytes(&s->model) / cfg->ep * (cfg->ep - 1);
    if (s->mem.weight_bytes >= s->mem.capacity) {
        ts_fail(err, "model %s: weights take %.2f GiB, more than the %.2f GiB %s leaves after a "
                     "%.2f GiB reserve", s->model.name, s->mem.weight_bytes / TS_GIB, s->mem.capacity / TS_GIB,
                s->gpu.name, reserve / TS_GIB);
        goto fail;
    }
    s->mem.kv_token_bytes = model_kv_bytes_per_token(&s->model) / cfg->tp; /* its K/V heads' */
    if (s->pol->token_bytes) /* what else the policy caches of each token, a GPU's share */
        s->mem.kv_token_bytes += s->pol->token_bytes(&s->model) / cfg->tp;
    if (s->sd.cache_outputs) /* dLLM-Cache's feature cache: each token's attention and FFN outputs too */
        s->mem.kv_token_bytes += model_feat_bytes_per_token(&s->model);
    s->sd.decode_credit = s->dm.kind == DECODE_CREDIT;
    if (cfg->iter_smooth && s->dm.kind == DECODE_FIXED) {
        ts_fail(err, "--iter-smooth: dInfer's IterSmooth smooths a confidence-threshold decoder's input; "
                     "--decode %s is a fixed count (use threshold, hierarchical or credit)", cfg->decode);
        goto fail;
    }
    s->sd.iter_smooth = cfg->iter_smooth;
    s->decode_state_tokens = decode_state_tokens(s, cfg);
    s->mem.kv_page_tokens = cfg->kv_page;

    /* the static scheduler sizes its batch by the workload's longest request: a replica reads its
     * configuration's workload, which is its fleet's, before it is fed */
    const bool scan = fed && s->sched == &sched_static;
    if ((fed ? (scan && build_workload(s, err)) || sim_requests_open_fed(s, scan, err)
             : build_workload(s, err) || sim_requests_open(s, err)) ||
        s->sched->init(s, err) || prompts_setup(s, fed, err))
        goto fail;
    summary_at_create(s);
    sim_sampler_setup(s);
    return s;
fail:
    sim_destroy(s);
    return NULL;
}

struct sim *sim_create(const struct sim_config *cfg, struct ts_err *err) { return sim_create_as(cfg, false, err); }

struct sim *sim_create_fed(const struct sim_config *cfg, struct ts_err *err)
{
    struct sim_config c = *cfg;
    c.progress = false; /* (the fleet's line instead) */
    return sim_create_as(&c, true, err);
}

void sim_destroy(struct sim *s)
{
    if (!s)
        return;
    sim_requests_free(s); /* (before the scheduler: it forgets the requests left) */
    if (s->sched && s->sched->free)
        s->sched->free(s);
    if (s->pcfg.rng)
        gsl_rng_free(s->pcfg.rng);
    trace_free(&s->trace);
    trace_free(&s->length_src);
    prompt_cache_free(s->prompts);
    for (size_t i = 0; i < s->num_handoffs; i++) { /* (handed on, never taken) */
        if (s->handoffs[i].req->rng)
            gsl_rng_free(s->handoffs[i].req->rng);
        free(s->handoffs[i].req);
    }
    free(s->handoffs);
    free(s->q.waiting.v);
    free(s->q.running);
    step_desc_free(&s->sd);
    step_desc_free(&s->draft_sd);
    evq_free(&s->evq);
    free(s->steps);
    free(s->segs);
    calib_free(s->calib);
    free(s->rounds);
    act_cache_destroy(s->act_plans);
    free(s);
}

const struct model_cfg *sim_model(const struct sim *s) { return &s->model; }
const struct gpu_spec *sim_gpu(const struct sim *s) { return &s->gpu; }
const struct step_desc *sim_knobs(const struct sim *s) { return &s->sd; }

double sim_sched_param(const struct sim *s, const char *name, double dflt)
{
    return params_value(s->sched->params, s->sched->num_params, s->sched_p, name, dflt);
}


void sim_ext_params(const struct sim *s, struct eng_ext_params *out) { policy_ext_params(s->pol, &s->pcfg, out); }

int32_t sim_request_prompt(const struct sim *s, int32_t req_id)
{
    return req_id >= 0 && req_id < s->q.num_arrived && s->q.chunks[req_id / SIM_REQ_CHUNK] ? sim_request(s, req_id)->P : -1;
}

void sim_set_executor(struct sim *s, const struct sim_executor *ex)
{
    if (ex)
        s->ex = *ex;
    else
        memset(&s->ex, 0, sizeof s->ex);
    pricing_resolve(s); /* (live, or back to the cost model) */
}

const struct sim_config *sim_config(const struct sim *s) { return &s->cfg; }
const struct sim_setup *sim_setup_of(const struct sim *s) { return &s->setup; }
