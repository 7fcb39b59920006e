/*
 * sim_requests.c: the requests' life outside the schedulers. They come from the workload's stream one
 * at a time, each when the one before it arrives, and live in chunks of SIM_REQ_CHUNK by id. When one
 * is done (finished or rejected) it is recorded: folded into the run's statistics, its latency and its
 * database row spilled to unnamed temporary files, and its chunk freed once every request of the chunk
 * is recorded. A run of any length so holds the requests it has in flight, not the ones it has served.
 *
 * The latency percentiles are exact: the spilled latencies (integer nanoseconds) are selected by
 * rank, 16 bits at a time from the top (a radix select over the file, 65,536 counters), and
 * interpolated between neighbouring ranks as gsl_stats_quantile_from_sorted_data does.
 */
#define _POSIX_C_SOURCE 200809L
#include "sim_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- a request's shape from its trace row ------------------------------------------------ */

/* The request's P, G and C as the run gives them (--gen-len, --max-new-tokens, --clip-prompt). */
static void req_shape(const struct sim *s, const struct trace_req *tr, int32_t *P, int32_t *G, int32_t *C)
{
    const struct sim_config *c = &s->cfg;
    int32_t g = c->gen_len;
    if (g == 0) { /* the trace's own output length, rounded up to whole blocks, at most
                   * --max-new-tokens rounded down to whole blocks */
        g = (TS_MAX(tr->output, 1) + c->block - 1) / c->block * c->block;
        if (c->max_new_tokens > 0)
            g = TS_MIN(g, c->max_new_tokens / c->block * c->block);
    }
    *P = tr->prompt;
    if (c->clip_prompt && *P + g > s->model.max_pos)
        *P = TS_MAX(s->model.max_pos - g, 0);
    *G = g;
    *C = TS_MIN(tr->output, g);
}

/* Request id of the run, the workload's request `index` (its seeds': a fleet's replica numbers its
 * requests as they come, the workload by its own order). */
static void req_init(struct sim *s, struct request *r, int64_t id, int64_t index, const struct trace_req *tr)
{
    const struct sim_config *c = &s->cfg;
    memset(r, 0, sizeof *r);
    r->id = (int32_t)id;
    r->arrival_ns = tr->arrival_ns;
    req_shape(s, tr, &r->P, &r->G, &r->C);
    r->P_orig = r->P;
    r->G_orig = r->G;
    r->hash = tr->hash;
    r->n_hash = tr->n_hash;
    r->admitted_ns = r->first_block_ns = r->finish_ns = -1;
    policy_req_init(r, &s->pcfg);
    r->seed = ts_mix64(c->seed ^ ts_mix64((uint64_t)index + 1) ^ 0x9e3779b97f4a7c15ull);
    if (decode_needs_rng(&s->dm)) {
        r->rng = gsl_rng_alloc(gsl_rng_taus2);
        const uint64_t seed = c->decode_seed ? c->decode_seed : c->seed;
        gsl_rng_set(r->rng, (unsigned long)ts_mix64(seed ^ ts_mix64((uint64_t)index + 1)));
    }
}

/* --- the stream ---------------------------------------------------------------------------- */

/* The record spills and statistics, opened for a run. */
static int open_records(struct sim *s, struct ts_err *err)
{
    s->lat_spill = tmpfile();
    s->req_spill = tmpfile();
    if (!s->lat_spill || !s->req_spill)
        return ts_fail(err, "cannot make the temporary files finished requests spill into: %s", strerror(errno));
    s->lat_min_ns = INT64_MAX;
    s->lat_st = gsl_rstat_alloc(), s->ttfb_st = gsl_rstat_alloc(), s->queue_st = gsl_rstat_alloc();
    return 0;
}

/* A first pass over a second copy of the stream: its count into *n, and the longest request within
 * the model's positions (the static scheduler sizes its batch for it). An arrival the clock cannot
 * hold is refused now rather than mid-run. */
static int workload_scan(struct sim *s, int64_t *n, struct ts_err *err)
{
    struct trace_stream pre = s->stream;
    if (!pre.t) /* a generated stream: its own random streams, from the same seeds */
        trace_stream_gen(&pre, s->stream.n, &s->stream.ag, &s->stream.lg, s->cfg.seed);
    struct trace_req tr;
    int rc;
    *n = 0;
    while ((rc = trace_stream_next(&pre, &tr, err)) == 1) {
        int32_t P, G, C;
        req_shape(s, &tr, &P, &G, &C);
        if (P + G <= s->model.max_pos)
            s->wl_L_max = TS_MAX(s->wl_L_max, P + G), s->wl_G_max = TS_MAX(s->wl_G_max, G);
        (*n)++;
    }
    if (!pre.t)
        trace_stream_free(&pre);
    return rc < 0 ? -1 : 0;
}

int sim_requests_open(struct sim *s, struct ts_err *err)
{
    int64_t n;
    if (workload_scan(s, &n, err))
        return -1;
    if (n > INT32_MAX) /* (a request's id is an int32) */
        return ts_fail(err, "%lld requests: more than the %d a run can hold (--requests)", (long long)n, INT32_MAX);
    s->num_reqs = n;
    s->num_chunks = (n + SIM_REQ_CHUNK - 1) / SIM_REQ_CHUNK;
    s->q.chunks = xcalloc((size_t)TS_MAX(s->num_chunks, 1), sizeof *s->q.chunks);
    s->chunk_left = xcalloc((size_t)TS_MAX(s->num_chunks, 1), sizeof *s->chunk_left);
    for (int64_t k = 0; k < s->num_chunks; k++)
        s->chunk_left[k] = (int32_t)TS_MIN(SIM_REQ_CHUNK, n - k * SIM_REQ_CHUNK);
    if (open_records(s, err))
        return -1;
    s->at_arrival_ns[0] = s->at_arrival_ns[1] = -1;
    sim_requests_pull(s);
    return 0;
}

int sim_requests_open_fed(struct sim *s, bool scan, struct ts_err *err)
{
    s->fed = true;
    int64_t n;
    if (scan) { /* the configuration's workload, the one its fleet feeds from: its longest request */
        if (workload_scan(s, &n, err))
            return -1;
    } else {
        s->wl_L_max = s->model.max_pos, s->wl_G_max = s->model.max_pos;
    }
    return open_records(s, err);
}

/* A fed instance's next request slot (its id: num_arrived, then counted), in a new chunk where
 * the last is full. */
static struct request *fed_slot(struct sim *s)
{
    const int64_t id = s->q.num_arrived++, k = id / SIM_REQ_CHUNK;
    TS_ASSERTF(id < INT32_MAX, "more than %d requests fed to one replica", INT32_MAX);
    if (k >= s->num_chunks) { /* a new chunk: SIM_REQ_CHUNK requests until the feed ends */
        void **const both[] = {(void **)&s->q.chunks, (void **)&s->chunk_left};
        ts_grow_group(both, 2, &s->cap_chunks, (size_t)k + 1, sizeof *s->q.chunks); /* (the larger element) */
        s->q.chunks[k] = xmalloc(sizeof *s->q.chunks[k] * SIM_REQ_CHUNK);
        s->chunk_left[k] = SIM_REQ_CHUNK;
        s->num_chunks = k + 1;
    }
    s->num_reqs = s->q.num_arrived;
    s->sum.num_requests = s->num_reqs;
    return &s->q.chunks[k][id % SIM_REQ_CHUNK];
}

void sim_feed(struct sim *s, const struct trace_req *tr, int64_t index, int64_t at_ns)
{
    TS_ASSERT(s->fed && at_ns >= s->now_ns && at_ns >= tr->arrival_ns);
    struct request *r = fed_slot(s);
    req_init(s, r, s->q.num_arrived - 1, index, tr);
    evq_push(&s->evq, at_ns, EV_ARRIVAL, r->id);
}

int32_t sim_feed_moved(struct sim *s, struct sim_handoff *h, int64_t at_ns)
{
    TS_ASSERT(s->fed && at_ns >= s->now_ns && h->req);
    struct request *r = fed_slot(s);
    *r = *h->req; /* its shape, progress, policy state, record and decode stream as it left */
    free(h->req);
    h->req = NULL;
    r->id = (int32_t)(s->q.num_arrived - 1);
    r->state = REQ_PENDING;
    r->kv_tokens_held = r->act_reserved = r->act_need = 0; /* (this replica's scheduler sizes them) */
    r->sched_data = NULL;
    s->sum.handed_in++;
    evq_push(&s->evq, at_ns, EV_ARRIVAL, r->id);
    return r->id;
}

void sim_handoff_drop(struct sim_handoff *h)
{
    if (!h || !h->req)
        return;
    if (h->req->rng)
        gsl_rng_free(h->req->rng);
    free(h->req);
    h->req = NULL;
}

void sim_requests_pull(struct sim *s)
{
    if (s->fed)
        return;
    struct trace_req tr;
    struct ts_err err;
    const int rc = trace_stream_next(&s->stream, &tr, &err);
    TS_ASSERTF(rc >= 0, "the workload's stream failed where its first pass did not: %s", err.msg);
    if (rc == 0)
        return;
    const int64_t id = s->q.num_arrived++, k = id / SIM_REQ_CHUNK;
    TS_ASSERT(k < s->num_chunks);
    if (!s->q.chunks[k])
        s->q.chunks[k] = xmalloc(sizeof *s->q.chunks[k] * (size_t)s->chunk_left[k]);
    req_init(s, &s->q.chunks[k][id % SIM_REQ_CHUNK], id, id, &tr);
    evq_push(&s->evq, tr.arrival_ns, EV_ARRIVAL, (int32_t)id);
    if (id == s->num_reqs / 3) /* the arrivals the outstanding requests are counted at (sim_record) */
        s->at_arrival_ns[0] = tr.arrival_ns;
    if (id == s->num_reqs - 1)
        s->at_arrival_ns[1] = tr.arrival_ns;
}

/* --- recording ------------------------------------------------------------------------------ */

/* The index of a reject reason in the run's table (added where new; the reasons are the schedulers'
 * literals, a handful a run). */
static int reason_index(struct sim *s, const char *why)
{
    for (int i = 0; i < s->num_reasons; i++)
        if (strcmp(s->reasons[i], why) == 0)
            return i;
    TS_ASSERTF(s->num_reasons < SIM_MAX_REASONS, "more than %d distinct reject reasons", SIM_MAX_REASONS);
    s->reasons[s->num_reasons] = why;
    return s->num_reasons++;
}

static void spill_failed(struct sim *s)
{
    if (!s->failed)
        ts_fail(&s->run_err, "cannot spill the finished requests to a temporary file: %s", strerror(errno));
    s->failed = true;
}

void sim_record(struct sim *s, struct request *r)
{
    TS_ASSERT(r->state == REQ_FINISHED || r->state == REQ_REJECTED);
    int reason = -1;
    /* gone before a third of the requests had arrived, and before the last did (where not yet pulled,
     * they had not) */
    const int64_t gone_ns = r->state == REQ_FINISHED ? r->finish_ns : r->arrival_ns;
    for (int k = 0; k < 2; k++)
        s->gone_before[k] += s->at_arrival_ns[k] < 0 || gone_ns < s->at_arrival_ns[k];
    for (int k = 0; k < s->watch.n; k++) /* a rejected request misses every bound */
        s->watch_missed[k] += r->state == REQ_REJECTED || (double)(r->finish_ns - r->arrival_ns) > s->watch.bound_s[k] * 1e9;
    if (r->state == REQ_REJECTED) {
        reason = reason_index(s, r->reject_reason);
        s->reason_n[reason]++;
    } else {
        const int64_t ns = r->finish_ns - r->arrival_ns;
        gsl_rstat_add((double)ns * 1e-9, s->lat_st);
        gsl_rstat_add((double)(r->first_block_ns - r->arrival_ns) * 1e-9, s->ttfb_st);
        gsl_rstat_add((double)(r->admitted_ns - r->arrival_ns) * 1e-9, s->queue_st);
        s->lat_min_ns = TS_MIN(s->lat_min_ns, ns);
        s->lat_max_ns = TS_MAX(s->lat_max_ns, ns);
        s->sum.slo_met += s->cfg.slo > 0 && (double)ns <= s->cfg.slo * 1e9;
        s->sum.tokens_decoded += r->decoded_total;
        s->sum.content_tokens += r->C;
        s->sum.makespan_ns = TS_MAX(s->sum.makespan_ns, r->finish_ns);
        if (fwrite(&ns, sizeof ns, 1, s->lat_spill) != 1)
            spill_failed(s);
    }
    const int64_t row[SIM_REQ_ROW] = {r->id,     r->arrival_ns, r->admitted_ns, r->first_block_ns, r->finish_ns,
                                      r->P_orig, r->G_orig,     r->C,           r->steps,          r->preemptions,
                                      r->state,  reason};
    if (ts_spill_write(s->req_spill, row, SIM_REQ_ROW))
        spill_failed(s);
    if (s->sched->forget)
        s->sched->forget(s, r);
    sim_let_go(s, r);
}

void sim_let_go(struct sim *s, struct request *r)
{
    const int64_t k = r->id / SIM_REQ_CHUNK;
    if (--s->chunk_left[k] > 0 || s->keep_requests)
        return;
    for (int32_t i = 0; i < TS_MIN(SIM_REQ_CHUNK, s->num_reqs - k * SIM_REQ_CHUNK); i++)
        if (s->q.chunks[k][i].rng)
            gsl_rng_free(s->q.chunks[k][i].rng);
    free(s->q.chunks[k]);
    s->q.chunks[k] = NULL;
}

void sim_keep_requests(struct sim *s) { s->keep_requests = true; }

void sim_set_watch(struct sim *s, const struct sim_watch *w)
{
    TS_ASSERT(w->n >= 0 && w->n <= SIM_WATCH_MAX);
    s->watch = *w;
}

/* The outstanding requests (waiting or running) that arrived before cut_ns, counted up to `enough`. */
static int64_t outstanding_before(const struct sim *s, int64_t cut_ns, int64_t enough)
{
    int64_t n = 0;
    for (size_t i = 0; i < s->q.waiting.n && n < enough; i++)
        n += sim_request(s, s->q.waiting.v[(s->q.waiting.head + i) % s->q.waiting.cap])->arrival_ns < cut_ns;
    for (size_t i = 0; i < s->q.num_running && n < enough; i++)
        n += sim_request(s, s->q.running[i])->arrival_ns < cut_ns;
    return n;
}

bool sim_watch_stops(struct sim *s)
{
    if (!s->watch.stop || ++s->watch_groups % 64 != 0) /* (a look every 64 instants: it scans the queue) */
        return false;
    for (int k = 0; k < s->watch.n; k++) {
        const int64_t room = s->watch.misses[k] - s->watch_missed[k]; /* misses still allowed */
        const int64_t cut_ns = s->now_ns - (int64_t)(s->watch.bound_s[k] * 1e9);
        if (room < 0 || outstanding_before(s, cut_ns, TS_MIN(room, INT64_MAX - 1) + 1) > room) {
            s->stopped_by = k;
            return s->stopped = true;
        }
    }
    return false;
}

int64_t sim_watch_missed(const struct sim *s, int k)
{
    TS_ASSERT(k >= 0 && k < s->watch.n);
    return s->watch_missed[k];
}

void sim_stopped_at(const struct sim *s, double *t_s, int *bound)
{
    *t_s = (double)s->now_ns * 1e-9;
    *bound = s->stopped_by;
}

void sim_reject_reasons(const struct sim *s, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < s->num_reasons; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld: %s", i ? "; " : "", (long long)s->reason_n[i],
                 s->reasons[i]);
}

/* --- the statistics ------------------------------------------------------------------------- */

/* The spilled latency of rank `rank` (0-based, ascending) of the n in files f[0..nf): a radix select,
 * 16 bits a pass from the highest 16-bit digit any latency has (max_ns's); -1 on a read error. */
static int lat_at_rank(FILE *const *f, int nf, int64_t n, int64_t rank, int64_t max_ns, int64_t *out)
{
    enum { BITS = 16, BUCKETS = 1 << BITS };
    int64_t *count = xmalloc(sizeof *count * BUCKETS);
    int shift = 0;
    while (shift + BITS < 63 && (max_ns >> (shift + BITS)) > 0)
        shift += BITS;
    uint64_t prefix = 0; /* the answer's bits above shift: those of the digits chosen so far */
    int rc = 0;
    for (;;) {
        memset(count, 0, sizeof *count * BUCKETS);
        int64_t v[512], seen = 0;
        bool bad = false;
        for (int k = 0; k < nf; k++) {
            rewind(f[k]);
            size_t got;
            while ((got = fread(v, sizeof v[0], TS_ARRAY_LEN(v), f[k])) > 0) {
                for (size_t i = 0; i < got; i++)
                    if (shift + BITS >= 64 || ((uint64_t)v[i] >> (shift + BITS)) == prefix)
                        count[((uint64_t)v[i] >> shift) & (BUCKETS - 1)]++;
                seen += (int64_t)got;
            }
            bad = bad || ferror(f[k]);
        }
        if (bad || seen != n) {
            rc = -1;
            break;
        }
        int64_t b = 0;
        while (b < BUCKETS - 1 && rank >= count[b])
            rank -= count[b++];
        prefix = (prefix << BITS) | (uint64_t)b;
        if (shift == 0)
            break;
        shift -= BITS;
    }
    free(count);
    *out = (int64_t)prefix;
    return rc;
}

/* The latency quantile f of the n spilled in files[0..nf) (their largest max_ns), as
 * gsl_stats_quantile_from_sorted_data gives it from the sorted latencies in seconds. */
static int lat_quantile_of(FILE *const *files, int nf, int64_t n, int64_t max_ns, double f, double *out)
{
    const double index = f * (double)(n - 1);
    const int64_t lhs = (int64_t)index;
    const double delta = index - (double)lhs;
    int64_t a, b = 0;
    if (lat_at_rank(files, nf, n, lhs, max_ns, &a) ||
        (lhs < n - 1 && delta != 0 && lat_at_rank(files, nf, n, lhs + 1, max_ns, &b)))
        return -1;
    const double x = (double)a * 1e-9;
    *out = lhs < n - 1 && delta != 0 ? (1 - delta) * x + delta * ((double)b * 1e-9) : x;
    return 0;
}

static int lat_quantile(const struct sim *s, double f, double *out)
{
    return lat_quantile_of(&s->lat_spill, 1, (int64_t)gsl_rstat_n(s->lat_st), s->lat_max_ns, f, out);
}

int sim_latency_quantile(struct sim *const *s, int n, double q, double *out)
{
    FILE **files = xmalloc(sizeof *files * (size_t)TS_MAX(n, 1));
    int64_t count = 0, max_ns = 0;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        files[i] = s[i]->lat_spill;
        count += (int64_t)gsl_rstat_n(s[i]->lat_st);
        max_ns = TS_MAX(max_ns, s[i]->lat_max_ns);
        rc = rc || fflush(files[i]);
    }
    *out = 0;
    if (!rc && count > 0)
        rc = lat_quantile_of(files, n, count, max_ns, q, out);
    free(files);
    return rc ? -1 : 0;
}

void sim_requests_summary(struct sim *s)
{
    struct sim_summary *m = &s->sum;
    m->num_finished = (int64_t)gsl_rstat_n(s->lat_st);
    if (m->num_finished == 0)
        return;
    m->lat_mean_s = gsl_rstat_mean(s->lat_st);
    m->lat_std_s = m->num_finished > 1 ? gsl_rstat_sd(s->lat_st) : 0;
    m->lat_span_s = (double)s->lat_max_ns * 1e-9 - (double)s->lat_min_ns * 1e-9;
    m->ttfb_mean_s = gsl_rstat_mean(s->ttfb_st);
    m->queue_mean_s = gsl_rstat_mean(s->queue_st);
    if (fflush(s->lat_spill) || lat_quantile(s, 0.50, &m->lat_p50_s) || lat_quantile(s, 0.90, &m->lat_p90_s) ||
        lat_quantile(s, 0.99, &m->lat_p99_s))
        spill_failed(s);
    /* overload (sim_overload_rule): the requests outstanding at a third of the arrivals and at the last */
    const int64_t n = s->num_reqs;
    if (!s->fed && n >= SIM_OVERLOAD_MIN && s->at_arrival_ns[1] > 0) {
        m->outstanding[0] = n / 3 - s->gone_before[0];
        m->outstanding[1] = n - 1 - s->gone_before[1];
        m->offered_rps = (double)(n - 1) / ((double)s->at_arrival_ns[1] * 1e-9);
        m->overloaded = sim_overload_rule(m->outstanding, m->offered_rps,
                                          (double)m->num_finished / ((double)m->makespan_ns * 1e-9));
    }
}

bool sim_overload_rule(const int64_t outstanding[2], double offered_rps, double served_rps)
{
    return outstanding[1] > 2 * outstanding[0] + SIM_OVERLOAD_MIN / 6 && offered_rps > 1.1 * served_rps;
}

void sim_requests_free(struct sim *s)
{
    for (int64_t k = 0; k < s->num_chunks; k++) {
        if (!s->q.chunks[k])
            continue;
        const int64_t arrived = TS_MIN(SIM_REQ_CHUNK, s->q.num_arrived - k * SIM_REQ_CHUNK);
        for (int64_t i = 0; i < arrived; i++) {
            struct request *r = &s->q.chunks[k][i];
            if (r->state != REQ_FINISHED && r->state != REQ_REJECTED && r->state != REQ_MOVED && s->sched &&
                s->sched->forget)
                s->sched->forget(s, r);
            if (r->rng)
                gsl_rng_free(r->rng);
        }
        free(s->q.chunks[k]);
    }
    free(s->q.chunks);
    free(s->chunk_left);
    if (s->lat_spill)
        fclose(s->lat_spill);
    gsl_rstat_workspace *st[] = {s->lat_st, s->ttfb_st, s->queue_st};
    for (size_t i = 0; i < TS_ARRAY_LEN(st); i++)
        if (st[i])
            gsl_rstat_free(st[i]);
    if (s->req_spill)
        fclose(s->req_spill);
    trace_stream_free(&s->stream);
}

/* --- the records, as the writer reads them (sim_record.h) ---------------------------------- */

void sim_steps_recorded(const struct sim *s, struct sim_steps *out)
{
    *out = (struct sim_steps){s->steps, s->num_steps, s->segs, s->num_segs, s->steps_flushed};
}

void sim_steps_drop(struct sim *s)
{
    s->steps_flushed += (int64_t)s->num_steps;
    s->num_steps = s->num_segs = 0;
}

void sim_set_step_sink(struct sim *s, sim_step_sink sink, void *ctx)
{
    s->flush_steps = sink;
    s->flush_ctx = ctx;
}

bool sim_steps_stream_to(const struct sim *s, const void *ctx) { return s->flush_steps && s->flush_ctx == ctx; }

FILE *sim_request_rows(const struct sim *s, int64_t *n)
{
    *n = s->num_done;
    return fflush(s->req_spill) || fseeko(s->req_spill, 0, SEEK_SET) ? NULL : s->req_spill;
}

const char *sim_reject_reason(const struct sim *s, int64_t i)
{
    return i >= 0 && i < s->num_reasons ? s->reasons[i] : NULL;
}

const char *sim_code_version(const struct sim *s) { return s->code_version; }
