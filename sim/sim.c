/*
 * sim.c: the simulator's main line.
 *
 *   sim_create   (sim_create.c) resolve names, open the workload's stream of requests, size memory
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

/* --- what a scheduler reads and keeps ------------------------------------------------------- */

struct sim_mem *sim_mem(struct sim *s) { return &s->mem; }

double *sim_sched_p(struct sim *s) { return s->sched_p; }
void **sim_sched_state(struct sim *s) { return &s->sched_state; }
const struct sched_ops *sim_sched(const struct sim *s) { return s->sched; }
const struct policy_ops *sim_policy(const struct sim *s) { return s->pol; }
const struct policy_cfg *sim_policy_cfg(const struct sim *s) { return &s->pcfg; }

void sim_workload_max(const struct sim *s, int32_t *L, int32_t *G)
{
    *L = s->wl_L_max;
    *G = s->wl_G_max;
}

const struct step_desc *sim_step(const struct sim *s) { return &s->sd; }
int sim_gpus(const struct sim *s) { return TS_MAX(s->cfg.tp, s->cfg.ep); }
void sim_set_static_batch(struct sim *s, int32_t batch) { s->sum.static_batch = batch; }
void sim_set_round(struct sim *s, const struct round_step *round) { s->round = *round; }

/* --- memory ------------------------------------------------------------------------------ */

int64_t sim_kv_pages(const struct sim *s, int64_t tokens)
{
    return (tokens + s->mem.kv_page_tokens - 1) / s->mem.kv_page_tokens;
}

const char *sim_positions_refused(const struct sim *s, const struct request *r)
{
    return r->G > s->model.max_pos ? "G alone exceeds the model's maximum positions"
                                   : "P + G exceeds the model's maximum positions";
}

void sim_peak_shape(const struct sim *s, const struct request *r, int32_t *q, int32_t *logit_rows)
{
    *q = s->pol->peak_q(r, &s->pcfg);
    *logit_rows = policy_peak_logit_rows(s->pol, r, &s->pcfg, *q);
    if (s->dm.drafts > 0) { /* Spiffy's draft blocks, WINO's shadow block */
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
    const int64_t page = s->mem.kv_page_tokens * s->mem.kv_token_bytes;
    const int64_t left = s->mem.capacity - s->mem.weight_bytes - s->mem.act_reserved - s->mem.kv_pages_used * page;
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
    if (s->mem.kv_pages_used + (need - have) > s->mem.kv_pages_total)
        return false;
    s->mem.kv_pages_used += need - have;
    r->kv_tokens_held = tokens;
    prompts_fit(s);
    return true;
}

void sim_kv_release(struct sim *s, struct request *r)
{
    s->mem.kv_pages_used -= sim_kv_pages(s, r->kv_tokens_held);
    TS_ASSERT(s->mem.kv_pages_used >= 0);
    r->kv_tokens_held = 0;
    if (s->ex.release)
        s->ex.release(s->ex.ctx, r->id);
}

/* A step's activation shape under this run's implementation and layout. */
static struct og_shape act_shape(const struct sim *s, int64_t T, int64_t R, int32_t logit_chunk_rows,
                                 int32_t ffn_chunks)
{
    /* (vLLM's tiled sampler holds the fp32 logits; its copies take a group's room from what is free) */
    const int32_t copy = s->impl.sampler == SAMPLER_TILED ? SAMPLER_FP32_BYTES : s->impl.softmax_copy_bytes;
    return (struct og_shape){T, R, logit_chunk_rows, ffn_chunks, copy, s->impl.fused_ffn, s->cfg.tp, s->act_layout};
}

/* The requests' segments of a step that take logits (a captured graph's padding is none). */
static int32_t logit_segments(const struct step_desc *sd)
{
    int32_t n = 0;
    for (int32_t i = 0; i < sd->num_segs; i++)
        n += sd->segs[i].logit_rows > 0 && !sd->segs[i].padding;
    return n;
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
        s->step_extra_ns += llround((double)(r->swapped_tokens * s->mem.kv_token_bytes) / s->gpu.host_bw * 1e9);
        r->swapped = false;
        r->swapped_tokens = 0;
    }
    r->state = REQ_RUNNING;
    ts_grow((void **)&s->q.running, &s->q.cap_running, s->q.num_running + 1, sizeof *s->q.running);
    s->q.running[s->q.num_running++] = r->id;
}

void sim_remove_running(struct sim *s, int32_t id)
{
    for (size_t i = 0; i < s->q.num_running; i++)
        if (s->q.running[i] == id) {
            memmove(&s->q.running[i], &s->q.running[i + 1], (s->q.num_running - i - 1) * sizeof *s->q.running);
            s->q.num_running--;
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
        s->step_extra_ns += llround((double)(tokens * s->mem.kv_token_bytes) / s->gpu.host_bw * 1e9);
        r->swapped = true;
        r->swapped_tokens = tokens;
    } else {
        r->need_refresh = true;
    }
    r->state = REQ_WAITING;
    r->preemptions++;
    s->sum.num_preemptions++;
    deque_push_front(&s->q.waiting, r->id);
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
    if (s->dm.drafts > 0 && seg->phase != PHASE_PREFILL) /* draft or shadow blocks beside the rows */
        decode_spiffy_shape(&s->dm, s->pcfg.block_size, s->sd.attn_block, seg);
}

void sim_add_segment(struct sim *s, const struct segment *shape)
{
    struct segment seg = *shape;
    if (seg.padding)
        seg.decoded = seg.missed = 0;
    else if (seg.phase != PHASE_PREFILL && !(s->pol->caps & POLICY_DECIDES) &&
             req_masked_in_block(sim_request(s, seg.req_id)) > 0) /* (a block's confirming step commits nothing) */
        seg.decoded = decode_tokens(&s->dm, sim_request(s, seg.req_id));
    step_desc_add(&s->sd, &seg);
}

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
    deque_push_back(&s->q.waiting, r->id);
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

static void start_step(struct sim *s)
{
    step_desc_clear(&s->sd);
    s->sd.logit_chunk_rows = s->cfg.max_num_logits;
    s->sd.ffn_chunks = s->cfg.ffn_chunks;
    s->round = (struct round_step){0};
    s->step_extra_ns = 0;
    s->sched->build(s);
    if (s->sd.num_segs == 0) {
        TS_ASSERTF(s->q.num_running == 0 && s->step_extra_ns == 0,
                   "scheduler %s built an empty step with %zu requests running", s->sched->name,
                   s->q.num_running);
        return;
    }
    if (s->cfg.lazy_chunking) {
        int64_t left = s->mem.capacity - s->mem.weight_bytes - s->mem.kv_pages_used * s->mem.kv_page_tokens * s->mem.kv_token_bytes;
        lazy_chunk(s, s->mem.act_reserved > 0 && s->sched->budgeted ? TS_MIN(left, s->mem.act_reserved) : left);
    }
    struct step_price p;
    if (s->pricing->step(s, &p)) {
        s->failed = true;
        return;
    }
    for (int i = 0; i < OP_COUNT; i++)
        s->sum.ops.op_s[i] += p.bd.op_s[i];
    s->sum.ops.total_s += p.bd.total_s;
    s->sum.steps_beyond += p.bd.beyond;
    s->sum.busy_s += p.secs;
    s->sum.busy_energy_j += s->pricing->joules(s, &p);
    int64_t dur = llround(p.secs * 1e9) + s->step_extra_ns;
    if (dur < 1)
        dur = 1;
    const struct og_shape shape = act_shape(s, s->sd.tot.rows, s->sd.tot.logit_rows, s->sd.logit_chunk_rows,
                                            s->sd.ffn_chunks);
    int64_t act;
    if (act_cache_peak(s->act_plans, &shape, &act, &s->run_err)) {
        s->failed = true;
        return;
    }
    int64_t kv_bytes = s->mem.kv_pages_used * s->mem.kv_page_tokens * s->mem.kv_token_bytes;
    int64_t in_use = s->mem.weight_bytes + kv_bytes + act;
    TS_ASSERTF(in_use <= s->mem.capacity, "step at %lld ns uses %lld bytes, capacity %lld (scheduler %s)",
               (long long)s->now_ns, (long long)in_use, (long long)s->mem.capacity, s->sched->name);
    if (in_use > s->sum.peak_mem_bytes)
        s->sum.peak_mem_bytes = in_use;
    s->sum.peak_kv_bytes = TS_MAX(s->sum.peak_kv_bytes, kv_bytes);
    if (s->impl.sampler != SAMPLER_NONE) /* the canvases it samples: the requests' segments with logits */
        s->peak_canvases = TS_MAX(s->peak_canvases, logit_segments(&s->sd));
    record_step(s, dur, act, kv_bytes);
    /* (a captured graph's padding rows are no request's) */
    const int32_t rows_of_requests = s->sd.num_segs - (int32_t)s->sd.tot.graph_rows;
    TS_ASSERT(s->q.num_running >= (size_t)rows_of_requests); /* a segment a running request */
    s->sum.num_stalls += (int64_t)s->q.num_running - rows_of_requests;
    s->sum.num_steps++;
    s->sum.request_steps += rows_of_requests;
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

/* Whether r's next step is a prefill too (one in chunks) */
static bool next_prefills(struct sim *s, struct request *r)
{
    struct segment next = {0};
    s->pol->emit(r, &s->pcfg, &next);
    return next.phase == PHASE_PREFILL;
}

/* Whether seg is a pass over r's prompt (a prefill that begins inside it), not a prefill of what r
 * generated (a context pass: fdllm-v2 --v2-context-pass 1) */
static bool prompt_pass(const struct segment *seg, const struct request *r)
{
    return seg->phase == PHASE_PREFILL && seg->kv < r->P;
}

static void on_step_done(struct sim *s)
{
    s->busy = false;
    for (int32_t i = 0; i < s->sd.num_segs; i++) {
        const struct segment *seg = &s->sd.segs[i];
        if (seg->padding)
            continue;
        struct request *r = sim_request(s, seg->req_id);
        const bool prompt = prompt_pass(seg, r);
        if (!prompt) {
            s->sum.rows_processed += seg->q;
            s->sum.missed_decodes += seg->missed;
        }
        const int32_t before = r->decoded_total; /* (an early commit decodes past the segment's count) */
        TS_ASSERT(r->state == REQ_RUNNING && !r->work_done);
        bool finished = policy_advance(s->pol, r, &s->pcfg, seg);
        if (prompt && s->prompts && (finished || !next_prefills(s, r))) {
            /* its prompt's whole blocks kept for later ones (a prefill in chunks: after its last) */
            s->sum.prompt_tokens += r->P;
            s->sum.prompt_hit_tokens += r->prefix_hit;
            prompt_cache_put(s->prompts, r->hash, trace_whole_blocks(r->n_hash, r->P));
            prompts_fit(s);
            r->prefix_hit = 0;
        }
        s->sum.step_decoded += r->decoded_total - before;
        s->acc_sum += (r->decoded_total - before) * s->dm.accuracy;
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
    if (s->progress_t0 == 0)
        s->progress_t0 = now;
    if (!last && now < s->progress_next_s)
        return;
    s->progress_next_s = now + 0.25;
    /* the wall time left, at the pace of the requests done so far (a fed instance's total is not known) */
    char eta[48] = "";
    const double took = now - s->progress_t0;
    if (!last && s->num_done > 0 && s->num_reqs > s->num_done && took > 2)
        snprintf(eta, sizeof eta, ", about %.0f s left", took * (double)(s->num_reqs - s->num_done) / (double)s->num_done);
    fprintf(stderr, "\r[%10.3f s] %lld/%lld requests done, %zu running, %zu waiting%s   %s",
            (double)s->now_ns * 1e-9, (long long)s->num_done, (long long)s->num_reqs,
            s->q.num_running, s->q.waiting.n, eta, last ? "\n" : "");
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
                on_arrival(s, sim_request(s, e.arg));
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
        if (sim_watch_stops(s))
            break;
    }
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
    *out = (struct sim_load){.outstanding = s->q.num_arrived - s->num_done, .waiting = (int64_t)s->q.waiting.n,
                             .running = (int64_t)s->q.num_running,
                             .kv_used = s->mem.kv_pages_total > 0 ? (double)s->mem.kv_pages_used / (double)s->mem.kv_pages_total : 0};
    for (size_t i = 0; i < s->q.num_running; i++)
        out->refreshing += sim_request(s, s->q.running[i])->steps_in_block == 0;
}

int64_t sim_now_ns(const struct sim *s) { return s->now_ns; }

const struct decode_model *sim_decode_model(const struct sim *s) { return &s->dm; }

int sim_scale_decode(struct sim *s, double factor, double tau, double *tpf, struct ts_err *err)
{
    if (s->dm.sweep.n > 0 ? decode_at_threshold(&s->dm, tau, err) : decode_scale_extra(&s->dm, s->tpf_base, factor, err))
        return -1;
    *tpf = s->dm.tpf;
    s->decode_moved |= s->dm.tpf != s->tpf_base;
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
        .bytes = cache ? tokens * s->mem.kv_token_bytes * sim_gpus(s) : (int64_t)r->L * 4};
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
    if (s->stopped && !s->failed) {
        s->sum.run_wall_s += ts_wall_s() - t0;
        return SIM_STOPPED;
    }
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
               s->q.waiting.n, s->q.num_running);
    return 0;
}

/* --- summary ----------------------------------------------------------------------------- */

void sim_get_summary(const struct sim *s, struct sim_summary *out)
{
    *out = s->sum; /* the requests' statistics as sim_requests_summary left them at the run's end */
    out->capacity_bytes = s->mem.capacity;
    out->weight_bytes = s->mem.weight_bytes;
    out->kv_pool_bytes = s->mem.kv_pool_bytes;
    out->act_reserved_bytes = s->mem.act_reserved;
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
    /* moved along a published sweep: the accuracy at the threshold each token was committed at, weighted
     * by the tokens; moved without one: not known */
    out->expected_accuracy = !s->decode_moved ? s->dm.accuracy
                             : s->dm.sweep.n > 0 && s->sum.step_decoded > 0 ? s->acc_sum / (double)s->sum.step_decoded
                                                                           : -1;
    snprintf(out->accuracy_task, sizeof out->accuracy_task, "%s", s->dm.accuracy >= 0 ? s->dm.task : "");
    if (span > 0) {
        out->throughput_tok_s = (double)out->tokens_decoded / span;
        out->content_tok_s = (double)out->content_tokens / span;
        out->req_s = (double)out->num_finished / span;
    }
    if (out->num_steps > 0) {
        out->mean_q_per_step = s->sum.mean_q_per_step / (double)out->num_steps;
        out->mean_segs_per_step = (double)out->request_steps / (double)out->num_steps;
    }
    sim_sampler_judge(s, out);
}
