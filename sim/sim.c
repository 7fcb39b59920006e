/*
 * sim.c: the simulator's main line.
 *
 *   sim_create   resolve names, open the workload's stream of requests, size memory (scheduler init)
 *   sim_run      pop events in (time, type, seq) order; an arrival takes the next request from
 *                the stream and joins the waiting queue (or is rejected with a reason); when the
 *                GPU is idle: schedule -> price -> push the step's completion; at completion:
 *                advance every request of the step (a finished one is recorded and let go)
 *   summary      throughput from the run's totals; the requests' statistics: sim_requests.c
 *
 * Simulated time is integer nanoseconds. Log lines on stderr start with the simulated time.
 */
#define _POSIX_C_SOURCE 200809L
#include "sim_internal.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define MAX_LOGGED_REJECTIONS 5

/* --- the waiting deque ------------------------------------------------------------------- */

static void deque_grow(struct id_deque *d)
{
    if (d->n < d->cap)
        return;
    size_t cap = d->cap ? d->cap * 2 : 64;
    int32_t *v = xmalloc(cap * sizeof *v);
    for (size_t i = 0; i < d->n; i++)
        v[i] = d->v[(d->head + i) % d->cap];
    free(d->v);
    d->v = v;
    d->cap = cap;
    d->head = 0;
}

void deque_push_back(struct id_deque *d, int32_t id)
{
    deque_grow(d);
    d->v[(d->head + d->n++) % d->cap] = id;
}

void deque_push_front(struct id_deque *d, int32_t id)
{
    deque_grow(d);
    d->head = (d->head + d->cap - 1) % d->cap;
    d->v[d->head] = id;
    d->n++;
}

int32_t deque_front(const struct id_deque *d)
{
    TS_ASSERT(d->n > 0);
    return d->v[d->head];
}

int32_t deque_pop_front(struct id_deque *d)
{
    int32_t id = deque_front(d);
    d->head = (d->head + 1) % d->cap;
    d->n--;
    return id;
}

/* --- memory ------------------------------------------------------------------------------ */

int64_t sim_kv_pages(const struct sim *s, int64_t tokens)
{
    return (tokens + s->kv_page_tokens - 1) / s->kv_page_tokens;
}

void sim_peak_shape(const struct sim *s, const struct request *r, int32_t *q, int32_t *logit_rows)
{
    *q = s->pol->peak_q(r, &s->pcfg);
    *logit_rows = policy_peak_logit_rows(s->pol, r, &s->pcfg, *q);
    if (s->dm.kind == DECODE_SPIFFY) {
        const int32_t drafts = s->dm.drafts * s->pcfg.block_size;
        *q += drafts;
        *logit_rows += drafts;
    }
}

int64_t sim_kv_need(const struct sim *s, const struct request *r, bool peak)
{
    const int64_t cached = peak ? s->pol->kv_peak_tokens(r, &s->pcfg) : s->pol->kv_tokens(r, &s->pcfg);
    return model_kv_tokens_held(&s->model, cached) + s->decode_state_tokens; /* (a sliding window's: fewer) */
}

/* The prompt cache within the memory no request holds (the pool's free pages, less the activations
 * reserved where a scheduler reserves them from the pool): its least recently used blocks evicted until
 * it fits, so that a request's reservation takes its pages back from it. */
static void prompts_fit(struct sim *s)
{
    if (!s->prompts)
        return;
    const int64_t page = s->kv_page_tokens * s->kv_token_bytes;
    const int64_t left = s->capacity - s->weight_bytes - s->act_reserved - s->kv_pages_used * page;
    prompt_cache_trim(s->prompts, TS_MIN(s->cfg.prompt_cache / TRACE_HASH_BLOCK,
                                         TS_MAX(left, 0) / page / sim_kv_pages(s, TRACE_HASH_BLOCK)));
}

bool sim_kv_reserve(struct sim *s, struct request *r, int64_t tokens)
{
    int64_t have = sim_kv_pages(s, r->kv_tokens_held), need = sim_kv_pages(s, tokens);
    if (need <= have) {
        if (tokens > r->kv_tokens_held)
            r->kv_tokens_held = tokens;
        return true;
    }
    if (s->kv_pages_used + (need - have) > s->kv_pages_total)
        return false;
    s->kv_pages_used += need - have;
    r->kv_tokens_held = tokens;
    prompts_fit(s);
    return true;
}

void sim_kv_release(struct sim *s, struct request *r)
{
    s->kv_pages_used -= sim_kv_pages(s, r->kv_tokens_held);
    TS_ASSERT(s->kv_pages_used >= 0);
    r->kv_tokens_held = 0;
    if (s->ex.release)
        s->ex.release(s->ex.ctx, r->id);
}

/* A step's activation shape under this run's implementation and layout. */
static struct og_shape act_shape(const struct sim *s, int64_t T, int64_t R, int32_t logit_chunk_rows,
                                 int32_t ffn_chunks)
{
    return (struct og_shape){T, R, logit_chunk_rows, ffn_chunks, s->impl.softmax_copy_bytes, s->impl.fused_ffn,
                             s->cfg.tp, s->act_layout};
}

/* the planner's chunk search on a shape (the cache's planner refuses nothing the run validated) */
static void chunk_shape(struct sim *s, const struct og_shape *shape, int64_t budget, struct chunk_choice *out)
{
    struct ts_err err;
    TS_ASSERTF(act_cache_chunk(CHUNK_LAZY, s->act_plans, shape, budget, out, &err) == 0, "planner %s: %s",
               s->planner->name, err.msg);
}

int64_t sim_act_peak(struct sim *s, int64_t q_tokens, int64_t logit_rows)
{
    const struct og_shape shape = act_shape(s, q_tokens, logit_rows, s->cfg.max_num_logits, s->cfg.ffn_chunks);
    if (s->cfg.lazy_chunking) { /* what the step needs chunked as far as chunking shrinks it */
        struct chunk_choice ch;
        chunk_shape(s, &shape, 0, &ch);
        return ch.at.bytes;
    }
    int64_t bytes;
    struct ts_err err;
    TS_ASSERTF(act_cache_peak(s->act_plans, &shape, &bytes, &err) == 0, "planner %s: %s", s->planner->name,
               err.msg);
    return bytes;
}

/* --- running set ------------------------------------------------------------------------- */

static void log_at(const struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_at(const struct sim *s, const char *fmt, ...)
{
    if (s->cfg.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%12.6f s] ", (double)s->now_ns * 1e-9);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The prompt tokens r's prefill finds cached: its leading whole blocks held, all but its last token
 * at most (the prefill computes one row at least, as vLLM recomputes a fully cached prompt's last). */
static int32_t prompt_hit(const struct sim *s, const struct request *r)
{
    const int32_t whole = trace_whole_blocks(r->n_hash, r->P);
    const int64_t hit = (int64_t)prompt_cache_match(s->prompts, r->hash, whole) * TRACE_HASH_BLOCK;
    return (int32_t)TS_MAX(TS_MIN(hit, r->P - 1), 0);
}

void sim_admit(struct sim *s, struct request *r)
{
    TS_ASSERT(r->state == REQ_WAITING);
    if (r->admitted_ns < 0)
        r->admitted_ns = s->now_ns;
    if (r->swapped) { /* its cache comes back as it left, whatever the scheduler reserved for it now */
        s->step_extra_ns += llround((double)(r->swapped_tokens * s->kv_token_bytes) / s->gpu.host_bw * 1e9);
        r->swapped = false;
        r->swapped_tokens = 0;
    }
    r->state = REQ_RUNNING;
    ts_grow((void **)&s->running, &s->cap_running, s->num_running + 1, sizeof *s->running);
    s->running[s->num_running++] = r->id;
}

void sim_remove_running(struct sim *s, int32_t id)
{
    for (size_t i = 0; i < s->num_running; i++)
        if (s->running[i] == id) {
            memmove(&s->running[i], &s->running[i + 1], (s->num_running - i - 1) * sizeof *s->running);
            s->num_running--;
            return;
        }
    TS_ASSERTF(0, "request %d is not running", id);
}

void sim_preempt(struct sim *s, struct request *r)
{
    TS_ASSERT(r->state == REQ_RUNNING);
    sim_remove_running(s, r->id);
    int64_t tokens = r->kv_tokens_held;
    sim_kv_release(s, r);
    if (s->cfg.preempt == PREEMPT_SWAP && tokens > 0) {
        s->step_extra_ns += llround((double)(tokens * s->kv_token_bytes) / s->gpu.host_bw * 1e9);
        r->swapped = true;
        r->swapped_tokens = tokens;
    } else {
        r->need_refresh = true;
    }
    r->state = REQ_WAITING;
    r->preemptions++;
    s->sum.num_preemptions++;
    deque_push_front(&s->waiting, r->id);
}

void sim_finish(struct sim *s, struct request *r)
{
    TS_ASSERT(r->state == REQ_RUNNING && r->work_done);
    sim_remove_running(s, r->id);
    sim_kv_release(s, r);
    r->state = REQ_FINISHED;
    r->finish_ns = s->now_ns;
    s->num_done++;
    sim_record(s, r);
}

void sim_emit(struct sim *s, struct request *r, struct segment *seg)
{
    memset(seg, 0, sizeof *seg);
    if (s->prompts && (r->steps == 0 || r->need_refresh)) { /* a prefill: the cache as it is now */
        prompts_fit(s);
        r->prefix_hit = prompt_hit(s, r);
    }
    s->pol->emit(r, &s->pcfg, seg);
    seg->req_id = r->id;
    if (s->dm.kind == DECODE_SPIFFY && seg->phase != PHASE_PREFILL) /* its draft blocks beside the rows */
        decode_spiffy_shape(&s->dm, s->pcfg.block_size, s->sd.attn_block, seg);
}

void sim_add_segment(struct sim *s, const struct segment *shape)
{
    struct segment seg = *shape;
    if (seg.padding)
        seg.decoded = seg.missed = 0;
    else if (seg.phase != PHASE_PREFILL && !(s->pol->caps & POLICY_DECIDES))
        seg.decoded = decode_tokens(&s->dm, sim_req(s, seg.req_id));
    step_desc_add(&s->sd, &seg);
}

int sim_model_resolve(const struct sim_config *c, struct model_cfg *out, struct ts_err *err)
{
    if (model_resolve(c->model, out, err))
        return -1;
    if (c->max_pos > 0)
        out->max_pos = c->max_pos;
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
    s->prompts = prompt_cache_new(TS_MIN(blocks, s->kv_pages_total / sim_kv_pages(s, TRACE_HASH_BLOCK) + 1));
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
    const int64_t tb = s->kv_token_bytes;
    return ((int64_t)cfg->block * credit * 4 + tb - 1) / tb + ((int64_t)cfg->block * canvas * 4 + tb - 1) / tb;
}

/* Whether the run's policy takes its model and decoder: a block model where it needs one, and steps of
 * a block's rows beside Spiffy's draft blocks. */
static int policy_fits(const struct sim *s, const struct sim_config *cfg, struct ts_err *err)
{
    if (s->dm.kind == DECODE_SPIFFY && ((s->pol->caps & (POLICY_DECIDES | POLICY_SELECTS)) || s->pol->knobs))
        return ts_fail(err, "--decode %s: Spiffy's draft blocks ride beside a step's rows, which policy %s shapes "
                            "itself (its own counts, selections or layers); give it vanilla, prefix, dual, block, "
                            "block+delayed, vicinity, dpad, d2cache, dkv-cache or sparsed", cfg->decode, s->pol->name);
    if ((s->pol->caps & POLICY_NEEDS_BLOCK_MODEL) && !s->model.block_causal)
        return ts_fail(err, "policy %s needs a block-causal model (tessera list models: block), and %s attends "
                            "bidirectionally", s->pol->name, s->model.name);
    return 0;
}

/* sim_create, or with fed its requests fed to it (sim_create_fed). */
static struct sim *sim_create_as(const struct sim_config *cfg, bool fed, struct ts_err *err)
{
    if (sim_config_validate(cfg, err))
        return NULL;
    struct sim *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
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
    if (rc || impl_resolve(cfg->impl, &s->impl, err) || cost_resolve(cfg->cost, &s->cost, err) ||
        policy_resolve(cfg->policy, &s->pol, err) || sched_resolve(cfg->scheduler, &s->sched, err) ||
        planner_resolve(cfg->planner, &s->planner, err) ||
        decode_parse(cfg->decode, cfg->datadir, &s->dm, err))
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
    if (cfg->op_scale[0]) { /* an ablation of the cost model (--op-scale) */
        if (cost_op_scale_parse(cfg->op_scale, s->op_scale, err))
            goto fail;
        s->cctx.op_scale = s->op_scale;
    }
    if ((cfg->tp > 1 && resolve_tp(s, err)) || (cfg->ep > 1 && resolve_ep(s, err)))
        goto fail;
    if (s->cost == &cost_calibrated && load_calibration(s, err))
        goto fail;
    if (cfg->clock != CLOCK_OFF) { /* the card's clock under its power limit (clock.h) */
        const int found = s->cost == &cost_calibrated ? clock_params_find(cfg->datadir, s->gpu.name, &s->clock, err) : 0;
        if (found < 0)
            goto fail;
        if (!found && cfg->clock == CLOCK_ON) {
            if (s->cost != &cost_calibrated)
                ts_fail(err, "--clock on: the clock is modelled with the calibrated cost only (--cost calibrated)");
            else
                ts_fail(err, "--clock on: no clock measured for %s (%s/clock.csv and gpu_measured.csv; tessera calib "
                             "clock fits one to an engine_bench --warm-trace)", s->gpu.name, cfg->datadir);
            goto fail;
        }
        s->sum.clock_modelled = found == 1;
    }
    s->pcfg = (struct policy_cfg){.block_size = cfg->block, .mask_only = cfg->mask_only,
                                  .block_logits = cfg->block_logits,
                                  .early_stop = cfg->early_stop, .early_commit = cfg->early_commit, .dm = &s->dm};
    if (s->pol->caps & POLICY_DECIDES)
        s->pcfg.rng = gsl_rng_alloc(gsl_rng_taus2);
    struct run_params rp;
    if (parts_resolve(s->pol, s->sched, &cfg->params, &rp, err))
        goto fail;
    memcpy(s->pcfg.p, rp.policy, sizeof s->pcfg.p);
    memcpy(s->sched_p, rp.sched, sizeof s->sched_p);
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
    s->capacity = s->gpu.mem_bytes - reserve;
    s->weight_bytes = model_weight_bytes(&s->model) / cfg->tp; /* a GPU's share */
    if (cfg->ep > 1) /* its share of the experts, the rest whole */
        s->weight_bytes -= model_expert_weight_bytes(&s->model) / cfg->ep * (cfg->ep - 1);
    if (s->weight_bytes >= s->capacity) {
        ts_fail(err, "model %s: weights take %.2f GiB, more than the %.2f GiB %s leaves after a "
                     "%.2f GiB reserve", s->model.name, s->weight_bytes / TS_GIB, s->capacity / TS_GIB,
                s->gpu.name, reserve / TS_GIB);
        goto fail;
    }
    s->kv_token_bytes = model_kv_bytes_per_token(&s->model) / cfg->tp; /* its K/V heads' */
    if (s->pol->token_bytes) /* what else the policy caches of each token, a GPU's share */
        s->kv_token_bytes += s->pol->token_bytes(&s->model) / cfg->tp;
    if (s->sd.cache_outputs) /* dLLM-Cache's feature cache: each token's attention and FFN outputs too */
        s->kv_token_bytes += model_feat_bytes_per_token(&s->model);
    s->sd.decode_credit = s->dm.kind == DECODE_CREDIT;
    if (cfg->iter_smooth && s->dm.kind == DECODE_FIXED) {
        ts_fail(err, "--iter-smooth: dInfer's IterSmooth smooths a confidence-threshold decoder's input; "
                     "--decode %s is a fixed count (use threshold, hierarchical or credit)", cfg->decode);
        goto fail;
    }
    s->sd.iter_smooth = cfg->iter_smooth;
    s->decode_state_tokens = decode_state_tokens(s, cfg);
    s->kv_page_tokens = cfg->kv_page;

    if (fed && s->sched == &sched_static) {
        ts_fail(err, "scheduler static sizes its batch by the whole workload, which a fleet's replica does not see");
        goto fail;
    }
    if ((fed ? sim_requests_open_fed(s, err) : build_workload(s, err) || sim_requests_open(s, err)) ||
        s->sched->init(s, err) || prompts_setup(s, fed, err))
        goto fail;
    s->sum.num_requests = s->num_reqs;
    return s;
fail:
    sim_destroy(s);
    return NULL;
}

struct sim *sim_create(const struct sim_config *cfg, struct ts_err *err) { return sim_create_as(cfg, false, err); }

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
    free(s->waiting.v);
    free(s->running);
    step_desc_free(&s->sd);
    evq_free(&s->evq);
    free(s->steps);
    free(s->segs);
    calib_free(s->calib);
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


double sim_policy_param(const struct sim *s, const char *policy, const char *name, double dflt)
{
    return strcmp(s->pol->name, policy) == 0 ? params_value(s->pol->params, s->pol->num_params, s->pcfg.p, name, dflt)
                                             : dflt;
}

int32_t sim_request_prompt(const struct sim *s, int32_t req_id)
{
    return req_id >= 0 && req_id < s->num_arrived && s->chunks[req_id / SIM_REQ_CHUNK] ? sim_req(s, req_id)->P : -1;
}

void sim_set_executor(struct sim *s, const struct sim_executor *ex)
{
    if (ex)
        s->ex = *ex;
    else
        memset(&s->ex, 0, sizeof s->ex);
}

const struct sim_config *sim_config(const struct sim *s) { return &s->cfg; }

/* --- the main loop ----------------------------------------------------------------------- */

static void on_arrival(struct sim *s, struct request *r)
{
    sim_requests_pull(s); /* the next request's arrival */
    const char *why = s->sched->reject(s, r);
    if (why) {
        r->state = REQ_REJECTED;
        r->reject_reason = why;
        s->sum.num_rejected++;
        s->num_done++;
        if (s->sum.num_rejected <= MAX_LOGGED_REJECTIONS)
            log_at(s, "request %d (P=%d, G=%d) rejected: %s%s", r->id, r->P, r->G, why,
                   s->sum.num_rejected == MAX_LOGGED_REJECTIONS ? " (further rejections counted, "
                                                                  "not logged)" : "");
        sim_record(s, r); /* (r is gone after) */
        return;
    }
    r->state = REQ_WAITING;
    deque_push_back(&s->waiting, r->id);
}

static void record_step(struct sim *s, int64_t dur_ns, int64_t act, int64_t kv_bytes)
{
    if (s->cfg.no_steps)
        return;
    ts_grow((void **)&s->steps, &s->cap_steps, s->num_steps + 1, sizeof *s->steps);
    struct step_rec *rec = &s->steps[s->num_steps++];
    *rec = (struct step_rec){s->now_ns, dur_ns, s->sd.tot, act, kv_bytes, {0}, (int64_t)s->num_segs};
    step_knobs_get(&s->sd, rec->knobs);
    ts_grow((void **)&s->segs, &s->cap_segs, s->num_segs + (size_t)s->sd.num_segs, sizeof *s->segs);
    memcpy(&s->segs[s->num_segs], s->sd.segs, (size_t)s->sd.num_segs * sizeof *s->segs);
    s->num_segs += (size_t)s->sd.num_segs;
    if (s->flush_steps && s->num_steps >= SIM_STEP_BATCH && s->flush_steps(s->flush_ctx, s, &s->run_err))
        s->failed = true;
}

/* Mosaic's lazy chunking for one step: the chunk search's counts for its activations to fit the
 * memory left. The attention block cannot be chunked; reservations (sim_act_peak) already count on
 * at least that much. */
static void lazy_chunk(struct sim *s, int64_t budget)
{
    struct step_desc *sd = &s->sd;
    const struct og_shape shape = act_shape(s, sd->tot.rows, sd->tot.logit_rows, sd->logit_chunk_rows,
                                            sd->ffn_chunks);
    struct chunk_choice ch;
    chunk_shape(s, &shape, budget, &ch); /* (when nothing fits, the memory check below reports it) */
    if (sd->tot.logit_rows > 0) /* (the search keeps the step's own chunk rows where it left their count) */
        sd->logit_chunk_rows = ch.shape.logit_chunk_rows;
    sd->ffn_chunks = ch.shape.ffn_chunks;
}

/* A step's energy on the run's GPUs: each draws its idle power and, on top, its dynamic power (TDP
 * less idle) in the share its work sets: all of it while compute bounds the work, GPU_MEM_POWER_SHARE
 * of it while memory does, weighed by the roofline's time of each; for the step's whole time
 * (sim/docs/cost-model.md, "Energy"). */
static double step_joules(const struct sim *s, const struct cost_breakdown *rb, double secs)
{
    const double work = rb->compute_s + rb->memory_s;
    const double share = work > 0 ? (rb->compute_s + GPU_MEM_POWER_SHARE * rb->memory_s) / work : 0;
    return sim_gpus(s) * secs * (s->gpu.idle_w + (s->gpu.tdp_w - s->gpu.idle_w) * share);
}

static void start_step(struct sim *s)
{
    step_desc_clear(&s->sd);
    s->sd.logit_chunk_rows = s->cfg.max_num_logits;
    s->sd.ffn_chunks = s->cfg.ffn_chunks;
    s->step_extra_ns = 0;
    s->sched->build(s);
    if (s->sd.num_segs == 0) {
        TS_ASSERTF(s->num_running == 0 && s->step_extra_ns == 0,
                   "scheduler %s built an empty step with %zu requests running", s->sched->name,
                   s->num_running);
        return;
    }
    if (s->cfg.lazy_chunking) {
        int64_t left = s->capacity - s->weight_bytes - s->kv_pages_used * s->kv_page_tokens * s->kv_token_bytes;
        lazy_chunk(s, s->act_reserved > 0 && s->sched->budgeted ? TS_MIN(left, s->act_reserved) : left);
    }
    struct cost_breakdown bd;
    double secs;
    if (s->cost->step_s(&s->cctx, &s->sd, &secs, &bd, &s->run_err)) {
        s->failed = true;
        return;
    }
    for (int i = 0; i < OP_COUNT; i++)
        s->sum.ops.op_s[i] += bd.op_s[i];
    s->sum.ops.total_s += bd.total_s;
    struct cost_breakdown rb = bd; /* the step's work by the roofline: the clock's load, the energy's busy time */
    double rs;
    if (s->cost != &cost_roofline && cost_roofline.step_s(&s->cctx, &s->sd, &rs, &rb, &s->run_err)) {
        s->failed = true;
        return;
    }
    if (s->sum.clock_modelled) { /* at the card's clock state (live: the prediction the measured time is set
                                  * against) */
        const double t = clock_step(&s->clock, &s->clock_st, s->now_ns, secs, rb.flops);
        s->sum.clock_delta_s += t - secs;
        secs = t;
    }
    const double host = cost_host_s(&s->cctx, &s->sd); /* offloaded K/V: the host's part (HERALD's; live, the
                                                        * executor runs and times it with the step) */
    if (host > 0)
        secs = cost_with_host(&s->sd, secs, host);
    if (s->ex.step) {
        double measured;
        if (s->sum.live_steps == 0)
            s->sum.live_t0_unix = ts_unix_s();
        if (s->ex.step(s->ex.ctx, &s->sd, &measured, &s->run_err) ||
            (!(measured > 0) && ts_fail(&s->run_err, "the executor measured %g s for step %lld", measured,
                                        (long long)s->sum.num_steps))) {
            s->failed = true;
            return;
        }
        s->sum.live_steps++;
        s->sum.live_t1_unix = ts_unix_s();
        s->sum.live_measured_s += measured;
        s->sum.live_model_s += secs;
        s->sum.live_abs_rel += fabs(secs - measured) / measured;
        if (host > 0) {
            s->sum.live_host_steps++;
            s->sum.live_host_measured_s += measured, s->sum.live_host_model_s += secs;
            s->sum.live_host_abs_rel += fabs(secs - measured) / measured;
        }
        secs = measured;
    }
    s->sum.busy_s += secs;
    s->sum.busy_energy_j += step_joules(s, &rb, secs);
    int64_t dur = llround(secs * 1e9) + s->step_extra_ns;
    if (dur < 1)
        dur = 1;
    const struct og_shape shape = act_shape(s, s->sd.tot.rows, s->sd.tot.logit_rows, s->sd.logit_chunk_rows,
                                            s->sd.ffn_chunks);
    int64_t act;
    if (act_cache_peak(s->act_plans, &shape, &act, &s->run_err)) {
        s->failed = true;
        return;
    }
    int64_t kv_bytes = s->kv_pages_used * s->kv_page_tokens * s->kv_token_bytes;
    int64_t in_use = s->weight_bytes + kv_bytes + act;
    TS_ASSERTF(in_use <= s->capacity, "step at %lld ns uses %lld bytes, capacity %lld (scheduler %s)",
               (long long)s->now_ns, (long long)in_use, (long long)s->capacity, s->sched->name);
    if (in_use > s->sum.peak_mem_bytes)
        s->sum.peak_mem_bytes = in_use;
    s->sum.peak_kv_bytes = TS_MAX(s->sum.peak_kv_bytes, kv_bytes);
    record_step(s, dur, act, kv_bytes);
    TS_ASSERT(s->num_running >= (size_t)s->sd.num_segs); /* a segment a running request */
    s->sum.num_stalls += (int64_t)s->num_running - s->sd.num_segs;
    s->sum.num_steps++;
    s->sum.request_steps += s->sd.num_segs;
    s->sum.mean_q_per_step += (double)s->sd.tot.q_tokens;
    s->busy = true;
    evq_push(&s->evq, s->now_ns + dur, EV_STEP_DONE, 0);
}

/* Whether a step reads the request's cache (a Reuse step: disaggregation's Reuse pool runs them). */
static bool reads_cache(enum seg_phase p) { return p == PHASE_REUSE || p == PHASE_BLOCK; }

/* Whether r's next step reads its cache (its shape emitted to see: emitting is pure, a drawing policy
 * draws the same again). */
static bool next_reads_cache(struct sim *s, struct request *r)
{
    struct segment next;
    sim_emit(s, r, &next);
    return reads_cache(next.phase);
}

static void on_step_done(struct sim *s)
{
    s->busy = false;
    for (int32_t i = 0; i < s->sd.num_segs; i++) {
        const struct segment *seg = &s->sd.segs[i];
        if (seg->padding)
            continue;
        if (seg->phase != PHASE_PREFILL) {
            s->sum.rows_processed += seg->q;
            s->sum.missed_decodes += seg->missed;
        }
        struct request *r = sim_req(s, seg->req_id);
        const int32_t before = r->decoded_total; /* (an early commit decodes past the segment's count) */
        TS_ASSERT(r->state == REQ_RUNNING && !r->work_done);
        if (seg->phase == PHASE_PREFILL && s->prompts) { /* its prompt's whole blocks kept for later ones */
            s->sum.prompt_tokens += r->P;
            s->sum.prompt_hit_tokens += r->prefix_hit;
            prompt_cache_put(s->prompts, r->hash, trace_whole_blocks(r->n_hash, r->P));
            prompts_fit(s);
            r->prefix_hit = 0;
        }
        bool finished = policy_advance(s->pol, r, &s->pcfg, seg);
        s->sum.step_decoded += r->decoded_total - before;
        if (r->first_block_ns < 0 && (r->cur_block > 0 || finished))
            r->first_block_ns = s->now_ns;
        if (finished) {
            r->work_done = true;
            if (!s->sched->finish_with_batch)
                sim_finish(s, r);
        } else if (s->hand != SIM_HAND_NONE) { /* handed on by this replica's rule */
            const bool cache = next_reads_cache(s, r);
            if (s->hand == SIM_HAND_ALL || cache == (s->hand == SIM_HAND_REUSE))
                sim_hand_on(s, r, cache);
        }
    }
    if (s->sched->after_step)
        s->sched->after_step(s);
}

static void show_progress(struct sim *s, bool last)
{
    double now = ts_wall_s();
    if (!last && now < s->progress_next_s)
        return;
    s->progress_next_s = now + 0.25;
    fprintf(stderr, "\r[%10.3f s] %lld/%lld requests done, %zu running, %zu waiting%s",
            (double)s->now_ns * 1e-9, (long long)s->num_done, (long long)s->num_reqs,
            s->num_running, s->waiting.n, last ? "\n" : "");
}

/* Runs the events before until_ns (INT64_MAX: all), each instant's together, a step started after
 * them where the GPU is idle. */
static void run_events(struct sim *s, int64_t until_ns)
{
    struct event e;
    while (!s->failed && !evq_empty(&s->evq) && evq_peek_time(&s->evq) < until_ns && evq_pop(&s->evq, &e)) {
        TS_ASSERT(e.time_ns >= s->now_ns);
        s->now_ns = e.time_ns;
        for (;;) {
            if (e.type == EV_ARRIVAL)
                on_arrival(s, sim_req(s, e.arg));
            else
                on_step_done(s);
            if (evq_empty(&s->evq) || evq_peek_time(&s->evq) != s->now_ns)
                break;
            evq_pop(&s->evq, &e);
        }
        if (!s->busy)
            start_step(s);
        if (s->cfg.progress)
            show_progress(s, false);
    }
}

struct sim *sim_create_fed(const struct sim_config *cfg, struct ts_err *err)
{
    struct sim_config c = *cfg;
    c.progress = false; /* (the fleet's line instead) */
    return sim_create_as(&c, true, err);
}

bool sim_advance(struct sim *s, int64_t until_ns)
{
    TS_ASSERT(s->fed);
    if (evq_empty(&s->evq) || evq_peek_time(&s->evq) >= until_ns)
        return false;
    s->sum.run_wall_s -= ts_wall_s();
    run_events(s, until_ns);
    s->sum.run_wall_s += ts_wall_s();
    return true;
}

int64_t sim_next_event_ns(const struct sim *s)
{
    return evq_empty(&s->evq) || s->failed ? INT64_MAX : evq_peek_time(&s->evq);
}

void sim_load(const struct sim *s, struct sim_load *out)
{
    *out = (struct sim_load){.outstanding = s->num_arrived - s->num_done, .waiting = (int64_t)s->waiting.n,
                             .running = (int64_t)s->num_running,
                             .kv_used = s->kv_pages_total > 0 ? (double)s->kv_pages_used / (double)s->kv_pages_total : 0};
    for (size_t i = 0; i < s->num_running; i++)
        out->refreshing += sim_req(s, s->running[i])->steps_in_block == 0;
}

int64_t sim_now_ns(const struct sim *s) { return s->now_ns; }

int sim_scale_decode(struct sim *s, double factor, double *tpf, struct ts_err *err)
{
    if (decode_scale_extra(&s->dm, s->tpf_base, factor, err))
        return -1;
    *tpf = s->dm.tpf;
    return 0;
}

const char *sim_hand_mismatch(const struct sim *a, const struct sim *b)
{
    const struct policy_cfg *p = &a->pcfg, *q = &b->pcfg;
    if (strcmp(a->model.name, b->model.name) != 0)
        return "model";
    if (a->pol != b->pol || memcmp(p->p, q->p, sizeof p->p) != 0)
        return "policy (or its parameters)";
    if (p->block_size != q->block_size || a->cfg.gen_len != b->cfg.gen_len || a->cfg.max_new_tokens != b->cfg.max_new_tokens ||
        a->cfg.clip_prompt != b->cfg.clip_prompt)
        return "block size or generation length";
    if (p->mask_only != q->mask_only || p->block_logits != q->block_logits || p->early_stop != q->early_stop ||
        p->early_commit != q->early_commit)
        return "logit handling, early stop or early commit";
    if (strcmp(a->dm.spec, b->dm.spec) != 0 || a->dm.eos != b->dm.eos)
        return "decode model";
    return NULL;
}

bool sim_failed(const struct sim *s) { return s->failed; }

void sim_fail(struct sim *s, const struct ts_err *err)
{
    if (!s->failed)
        s->run_err = *err;
    s->failed = true;
}
int64_t sim_prompt_blocks(const struct sim *s) { return s->prompts ? prompt_cache_cap(s->prompts) : 0; }

void sim_set_hand(struct sim *s, enum sim_hand h)
{
    TS_ASSERT(s->fed);
    s->hand = h;
}

void sim_hand_on(struct sim *s, struct request *r, bool cache)
{
    TS_ASSERT(r->state == REQ_RUNNING && !r->work_done);
    sim_remove_running(s, r->id);
    const int64_t tokens = r->kv_tokens_held;
    int64_t ticket = -1;
    if (cache && s->ex.hold) { /* live: its K/V set aside for the move before they are released */
        ticket = s->sum.handed_out;
        if (s->ex.hold(s->ex.ctx, r->id, ticket, &s->run_err))
            s->failed = true;
    }
    sim_kv_release(s, r);
    if (s->sched->forget)
        s->sched->forget(s, r);
    struct request *moved = xmalloc(sizeof *moved);
    *moved = *r; /* (its decode stream goes with it) */
    r->rng = NULL;
    r->state = REQ_MOVED;
    ts_grow((void **)&s->handoffs, &s->cap_handoffs, s->num_handoffs + 1, sizeof *s->handoffs);
    s->handoffs[s->num_handoffs++] = (struct sim_handoff){
        .left_ns = s->now_ns, .gpus = sim_gpus(s), .cache = cache, .ticket = ticket, .req = moved,
        /* the K/V it holds, every GPU's share; else its token ids (int32) */
        .bytes = cache ? tokens * s->kv_token_bytes * sim_gpus(s) : (int64_t)r->L * 4};
    s->sum.handed_out++;
    s->num_done++;
    sim_let_go(s, r);
}

size_t sim_take_handoffs(struct sim *s, struct sim_handoff **out)
{
    *out = s->handoffs;
    const size_t n = s->num_handoffs;
    s->num_handoffs = 0;
    return n;
}

int sim_run(struct sim *s, struct ts_err *err)
{
    double t0 = ts_wall_s();
    run_events(s, INT64_MAX);
    if (s->cfg.progress)
        show_progress(s, true);
    if (!s->failed)
        sim_requests_summary(s);
    s->sum.run_wall_s += ts_wall_s() - t0;
    if (s->failed) {
        if (err)
            *err = s->run_err;
        return -1;
    }
    TS_ASSERTF(s->num_done == s->num_reqs, "%lld of %lld requests done when events ran out "
               "(%zu waiting, %zu running)", (long long)s->num_done, (long long)s->num_reqs,
               s->waiting.n, s->num_running);
    return 0;
}

/* --- summary ----------------------------------------------------------------------------- */

void sim_get_summary(const struct sim *s, struct sim_summary *out)
{
    *out = s->sum; /* the requests' statistics as sim_requests_summary left them at the run's end */
    out->capacity_bytes = s->capacity;
    out->weight_bytes = s->weight_bytes;
    out->kv_pool_bytes = s->kv_pool_bytes;
    out->act_reserved_bytes = s->act_reserved;
    out->prompt_evicted = s->prompts ? prompt_cache_evicted(s->prompts) : 0;
    out->redundancy = s->sum.step_decoded > 0 ? (double)s->sum.rows_processed / (double)s->sum.step_decoded : 0;
    double span = (double)out->makespan_ns * 1e-9;
    /* the steps' energy, and the GPUs' idle draw between them */
    out->idle_w = sim_gpus(s) * s->gpu.idle_w;
    out->energy_j = s->sum.busy_energy_j + out->idle_w * fmax(0, span - s->sum.busy_s);
    out->mean_power_w = span > 0 ? out->energy_j / span : 0;
    out->energy_per_token_j = out->tokens_decoded > 0 ? out->energy_j / (double)out->tokens_decoded : 0;
    out->energy_per_request_j = out->num_finished > 0 ? out->energy_j / (double)out->num_finished : 0;
    out->slo_attainment = s->cfg.slo > 0 && out->num_requests > 0 ? (double)out->slo_met / (double)out->num_requests
                                                                  : NAN;
    if (span > 0) {
        out->throughput_tok_s = (double)out->tokens_decoded / span;
        out->content_tok_s = (double)out->content_tokens / span;
        out->req_s = (double)out->num_finished / span;
    }
    if (out->num_steps > 0) {
        out->mean_q_per_step = s->sum.mean_q_per_step / (double)out->num_steps;
        out->mean_segs_per_step = (double)out->request_steps / (double)out->num_steps;
    }
}
