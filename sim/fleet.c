/*
 * fleet.c: replicas behind a router (fleet.h). The workload's arrivals are taken in order; at each,
 * the autoscaler's readings due before it are taken (every replica run up to each), the router's
 * view is refreshed where it is due (every replica run up to the arrival, its load read), the
 * router picks an open replica, which is run up to the arrival and fed the request. Once the
 * workload is spent, every replica runs to its end and the fleet's summary is merged from theirs.
 */
#define _POSIX_C_SOURCE 200809L
#include "fleet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "model.h"
#include "trace.h"

/* --- the routers --------------------------------------------------------------------------- */

static int pick_round_robin(const struct router_view *v, int n, int *next)
{
    int k = *next % n;
    for (int j = 0; j < n && v[k].closed; j++)
        k = (k + 1) % n;
    *next = (k + 1) % n;
    return k;
}

/* The open replica of the least key, ties to the first met from the cursor on (which then moves past
 * it, so that equal replicas take turns). */
static int least(const struct router_view *v, int n, int *next, double (*key)(const struct router_view *))
{
    int best = -1;
    double kb = 0;
    for (int j = 0; j < n; j++) {
        const int k = (*next + j) % n;
        if (v[k].closed)
            continue;
        const double kk = key(&v[k]);
        if (best < 0 || kk < kb)
            best = k, kb = kk;
    }
    TS_ASSERT(best >= 0);
    *next = (best + 1) % n;
    return best;
}

static double outstanding(const struct router_view *v) { return (double)(v->load.outstanding + v->sent); }

/* The share of the KV pool in use, then the outstanding requests. */
static double kv_then_outstanding(const struct router_view *v) { return v->load.kv_used * 1e9 + outstanding(v); }

/* The requests that start a block next (each one routed since will: its first step), then the
 * outstanding ones. */
static double refreshing_then_outstanding(const struct router_view *v)
{
    return (double)(v->load.refreshing + v->sent) * 1e9 + outstanding(v);
}

static int pick_least_outstanding(const struct router_view *v, int n, int *next) { return least(v, n, next, outstanding); }
static int pick_least_kv(const struct router_view *v, int n, int *next) { return least(v, n, next, kv_then_outstanding); }
static int pick_phase_aware(const struct router_view *v, int n, int *next)
{
    return least(v, n, next, refreshing_then_outstanding);
}

static const struct router_ops routers[] = {
    {"round-robin", "each replica in turn", pick_round_robin},
    {"least-outstanding", "the replica holding the fewest requests (arrived, not done)", pick_least_outstanding},
    {"least-kv", "the replica with the smallest share of its KV pool in use, then the fewest requests",
     pick_least_kv},
    {"phase-aware", "the replica with the fewest requests about to start a block (a Refresh, where a new request's "
                    "first step joins them), then the fewest requests: a new Refresh lands among Reuse steps",
     pick_phase_aware},
};

const struct router_ops *router_get(int i) { return i >= 0 && i < (int)TS_ARRAY_LEN(routers) ? &routers[i] : NULL; }

const struct router_ops *router_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(routers); i++)
        if (strcmp(routers[i].name, name) == 0)
            return &routers[i];
    return NULL;
}

void router_list(char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < TS_ARRAY_LEN(routers); i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", routers[i].name);
}

/* --- the run ------------------------------------------------------------------------------- */

/* Every replica run up to t and its load read into the view (again only where it ran events or was
 * fed since: dirty), its sent count cleared. */
static void refresh_view(struct sim **r, int n, int64_t t, struct router_view *v, bool *dirty)
{
    for (int i = 0; i < n; i++) {
        dirty[i] |= sim_advance(r[i], t) || v[i].sent > 0;
        if (dirty[i])
            sim_load(r[i], &v[i].load);
        dirty[i] = false;
        v[i].sent = 0;
    }
}

static bool fleet_full(const struct router_view *v, int n, int64_t admit_max)
{
    for (int i = 0; i < n; i++)
        if (!v[i].closed && v[i].load.outstanding + v[i].sent < admit_max)
            return false;
    return true;
}

/* --- admission ----------------------------------------------------------------------------- */

/* The requests the fleet holds back (deferred admission), oldest first: each its trace row and its
 * place in the workload. */
struct held {
    struct trace_req tr;
    int64_t index;
};
struct hold_queue {
    struct held *v;
    size_t cap, head, n;
};

static void hold(struct hold_queue *q, const struct trace_req *tr, int64_t index)
{
    if (q->n == q->cap) { /* grown, its ring unrolled */
        struct held *v = xmalloc(sizeof *v * (q->cap ? 2 * q->cap : 64));
        for (size_t i = 0; i < q->n; i++)
            v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v, q->head = 0, q->cap = q->cap ? 2 * q->cap : 64;
    }
    q->v[(q->head + q->n++) % q->cap] = (struct held){*tr, index};
}

/* The fleet: its replicas, the router's view and cursor. */
struct fleet_state {
    struct sim **r;
    int n;
    const struct fleet_opts *o;
    struct router_view *v;
    bool *dirty;
    int cursor;
    struct hold_queue q;
};

/* Request tr (the workload's index-th) routed at t_ns, its arrival or its release. */
static void route(struct fleet_state *fl, const struct trace_req *tr, int64_t index, int64_t t_ns,
                  struct fleet_result *out)
{
    const int k = fl->o->router->pick(fl->v, fl->n, &fl->cursor);
    fl->dirty[k] |= sim_advance(fl->r[k], t_ns);
    sim_feed(fl->r[k], tr, index, t_ns);
    fl->v[k].sent++;
    out->routed[k]++;
}

/* The held requests routed, oldest first, while a replica has room (at t_ns). */
static void release(struct fleet_state *fl, int64_t t_ns, struct fleet_result *out)
{
    while (fl->q.n > 0 && !fleet_full(fl->v, fl->n, fl->o->admit_max)) {
        const struct held h = fl->q.v[fl->q.head];
        fl->q.head = (fl->q.head + 1) % fl->q.cap, fl->q.n--;
        route(fl, &h.tr, h.index, t_ns, out);
    }
}

/* After the workload (its last arrival at last_ns): the replicas run event by event, the view
 * refreshed after each, until every held request is routed. */
static void release_rest(struct fleet_state *fl, int64_t last_ns, struct fleet_result *out)
{
    while (fl->q.n > 0) {
        int64_t t = INT64_MAX;
        for (int i = 0; i < fl->n; i++)
            t = TS_MIN(t, sim_next_event_ns(fl->r[i]));
        if (t == INT64_MAX) /* every replica idle: each has room */
            for (int i = 0; i < fl->n; i++)
                t = TS_MIN(t, sim_now_ns(fl->r[i]));
        else
            t++; /* past the next event */
        int64_t now = last_ns;
        for (int i = 0; i < fl->n; i++)
            now = TS_MAX(now, sim_now_ns(fl->r[i]));
        refresh_view(fl->r, fl->n, TS_MAX(t, now), fl->v, fl->dirty);
        release(fl, TS_MAX(t, now), out);
    }
}

/* --- the autoscaler ------------------------------------------------------------------------ */

int fleet_scale_parse(const char *spec, struct fleet_scale *out, struct ts_err *err)
{
    *out = (struct fleet_scale){.min = 1, .up = 8, .down = 2, .every_s = 10, .delay_s = 60, .cooldown_s = 120};
    if (!spec || !*spec)
        return 0;
    out->on = true;
    static const char *const keys[] = {"min", "up", "down", "every", "delay", "cooldown"};
    double *const field[] = {NULL, &out->up, &out->down, &out->every_s, &out->delay_s, &out->cooldown_s};
    char text[CFG_STR];
    snprintf(text, sizeof text, "%s", spec);
    char *save = NULL;
    for (char *kv = strtok_r(text, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        size_t k = 0;
        while (eq && k < TS_ARRAY_LEN(keys) && (strlen(keys[k]) != (size_t)(eq - kv) || strncmp(kv, keys[k], (size_t)(eq - kv))))
            k++;
        if (!eq || k == TS_ARRAY_LEN(keys))
            return ts_fail(err, "--autoscale '%s': '%s' is not KEY=VALUE of min, up, down, every, delay or cooldown",
                           spec, kv);
        double v;
        if (ts_parse_double(eq + 1, &v) || !(v >= 0 && v <= 1e6) || (k == 0 && (v < 1 || v != floor(v))) ||
            (k == 3 && v < 0.01))
            return ts_fail(err, "--autoscale '%s': %s '%s' must be %s", spec, keys[k], eq + 1,
                           k == 0 ? "a whole number of replicas, at least 1" : k == 3 ? "at least 0.01 s"
                                                                             : "a number in 0..1000000");
        if (k == 0)
            out->min = (int)v;
        else
            *field[k] = v;
    }
    if (out->down >= out->up)
        return ts_fail(err, "--autoscale '%s': down (%g) must be below up (%g), or replicas start and stop in turn",
                       spec, out->down, out->up);
    return 0;
}

enum { R_OFF = 0, R_STARTING, R_UP, R_DRAINING };

/* The fleet's state as the autoscaler keeps it. */
struct scaler {
    uint8_t *state;
    double *ready_s, *since_s; /* when a starting replica takes requests; when each was started */
    double *drain_s;           /* when a draining one was told to drain */
    double next_s, last_down_s;
    size_t cap;
};

/* Opens the view to the replicas up (a starting one once ready), closes it to the others. */
static void scaler_doors(const struct scaler *sc, double t_s, int n, struct router_view *v)
{
    for (int i = 0; i < n; i++) {
        if (sc->state[i] == R_STARTING && sc->ready_s[i] <= t_s)
            sc->state[i] = R_UP;
        v[i].closed = sc->state[i] != R_UP;
    }
}

/* The autoscaler's reading at t (every replica run up to it, its load read). */
static void scaler_tick(struct scaler *sc, const struct fleet_scale *fs, struct sim **r, int n, double t_s,
                        int64_t t_ns, struct router_view *v, bool *dirty, struct fleet_result *out)
{
    refresh_view(r, n, t_ns, v, dirty);
    for (int i = 0; i < n; i++)
        if (sc->state[i] == R_DRAINING && v[i].load.outstanding == 0) { /* drained: stopped */
            sc->state[i] = R_OFF;
            out->active_s[i] += t_s - sc->since_s[i];
        }
    scaler_doors(sc, t_s, n, v);
    int up = 0, starting = 0, off = -1, drain = -1;
    int64_t held = 0, all = 0;
    for (int i = 0; i < n; i++) {
        all += v[i].load.outstanding;
        if (sc->state[i] == R_UP) {
            up++, held += v[i].load.outstanding;
            if (drain < 0 || v[i].load.outstanding <= v[drain].load.outstanding)
                drain = i;
        }
        starting += sc->state[i] == R_STARTING;
        if (sc->state[i] == R_OFF && off < 0)
            off = i;
    }
    const double mean = up > 0 ? (double)held / up : 0;
    if (mean > fs->up && off >= 0 && starting == 0) {
        sc->state[off] = R_STARTING, sc->ready_s[off] = t_s + fs->delay_s, sc->since_s[off] = t_s;
        out->started++, starting++;
    } else if (mean < fs->down && up > fs->min && t_s - sc->last_down_s >= fs->cooldown_s) {
        sc->state[drain] = R_DRAINING, sc->last_down_s = sc->drain_s[drain] = t_s;
        v[drain].closed = true;
        out->stopped++, up--;
    }
    ts_grow((void **)&out->scale, &sc->cap, (size_t)out->nscale + 1, sizeof *out->scale);
    out->scale[out->nscale++] = (struct fleet_scale_point){t_s, up, starting, all};
}

/* A replica's energy over its time up (its summary's own counts it from 0 to its last finish): its
 * steps', and its idle draw the rest of that time. */
static void replica_energy(struct sim_summary *m, double active_s)
{
    m->energy_j = m->busy_energy_j + m->idle_w * fmax(0, active_s - m->busy_s);
    m->mean_power_w = active_s > 0 ? m->energy_j / active_s : 0;
    m->energy_per_token_j = m->tokens_decoded > 0 ? m->energy_j / (double)m->tokens_decoded : 0;
    m->energy_per_request_j = m->num_finished > 0 ? m->energy_j / (double)m->num_finished : 0;
}

/* The fleet's summary from the replicas' (their runs done, their energy over their time up). */
static int merge(struct sim **r, const struct fleet_result *out, double slo, struct sim_summary *f)
{
    const int n = out->n;
    double lat_sq = 0, q_steps = 0, redundant = 0;
    for (int i = 0; i < n; i++) {
        const struct sim_summary *m = &out->replica[i];
        f->makespan_ns = TS_MAX(f->makespan_ns, m->makespan_ns);
    }
    const double span = (double)f->makespan_ns * 1e-9;
    for (int i = 0; i < n; i++) {
        const struct sim_summary *m = &out->replica[i];
        const double fin = (double)m->num_finished;
        f->num_requests += m->num_requests, f->num_finished += m->num_finished, f->num_rejected += m->num_rejected;
        f->num_preemptions += m->num_preemptions, f->num_stalls += m->num_stalls;
        f->num_steps += m->num_steps, f->request_steps += m->request_steps;
        f->tokens_decoded += m->tokens_decoded, f->content_tokens += m->content_tokens;
        f->rows_processed += m->rows_processed, f->missed_decodes += m->missed_decodes;
        f->busy_s += m->busy_s, f->busy_energy_j += m->busy_energy_j, f->slo_met += m->slo_met;
        f->lat_mean_s += m->lat_mean_s * fin, f->ttfb_mean_s += m->ttfb_mean_s * fin, f->queue_mean_s += m->queue_mean_s * fin;
        if (m->num_finished > 0) /* E[x^2] of its latencies, from its sample variance */
            lat_sq += fin * (m->lat_std_s * m->lat_std_s * (fin - 1) / fin + m->lat_mean_s * m->lat_mean_s);
        q_steps += m->mean_q_per_step * (double)m->num_steps;
        redundant += m->redundancy * (double)m->tokens_decoded;
        for (int op = 0; op < OP_COUNT; op++)
            f->ops.op_s[op] += m->ops.op_s[op];
        f->ops.total_s += m->ops.total_s;
        f->energy_j += m->energy_j;
        f->idle_w += m->idle_w;
        f->peak_mem_bytes = TS_MAX(f->peak_mem_bytes, m->peak_mem_bytes);
    }
    f->num_requests += out->refused, f->num_rejected += out->refused;
    const double fin = (double)f->num_finished;
    if (f->num_finished > 0) {
        f->lat_mean_s /= fin, f->ttfb_mean_s /= fin, f->queue_mean_s /= fin;
        f->lat_std_s = f->num_finished > 1 ? sqrt(fmax(0, (lat_sq - fin * f->lat_mean_s * f->lat_mean_s) / (fin - 1))) : 0;
        double lo, hi;
        if (sim_latency_quantile(r, n, 0.50, &f->lat_p50_s) || sim_latency_quantile(r, n, 0.90, &f->lat_p90_s) ||
            sim_latency_quantile(r, n, 0.99, &f->lat_p99_s) || sim_latency_quantile(r, n, 0, &lo) ||
            sim_latency_quantile(r, n, 1, &hi))
            return -1;
        f->lat_span_s = hi - lo;
    }
    if (span > 0) {
        f->throughput_tok_s = (double)f->tokens_decoded / span;
        f->content_tok_s = (double)f->content_tokens / span;
        f->req_s = fin / span;
        f->mean_power_w = f->energy_j / span;
    }
    if (f->num_steps > 0) {
        f->mean_q_per_step = q_steps / (double)f->num_steps;
        f->mean_segs_per_step = (double)f->request_steps / (double)f->num_steps;
    }
    f->redundancy = f->tokens_decoded > 0 ? redundant / (double)f->tokens_decoded : 0;
    f->energy_per_token_j = f->tokens_decoded > 0 ? f->energy_j / (double)f->tokens_decoded : 0;
    f->energy_per_request_j = f->num_finished > 0 ? f->energy_j / fin : 0;
    f->slo_attainment = slo > 0 && f->num_requests > 0 ? (double)f->slo_met / (double)f->num_requests : NAN;
    return 0;
}

static void show_progress(int64_t done, int64_t total, int64_t now_ns, bool last)
{
    fprintf(stderr, "\rfleet: %lld of %lld requests routed, simulated %.1f s%s", (long long)done, (long long)total,
            (double)now_ns * 1e-9, last ? "\n" : "");
}

/* Room for n replicas' open files (two spills each, sim_requests.c): the process's limit raised to
 * them where its hard limit allows; -1 with err where it does not. */
static int room_for_files(int n, struct ts_err *err)
{
    struct rlimit rl;
    const rlim_t need = (rlim_t)n * 2 + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        return ts_fail(err, "%d replicas keep %llu files open (two each), more than this process may (ulimit -n: "
                            "%llu at most)", n, (unsigned long long)need, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : ts_fail(err, "cannot raise the open-file limit to %llu for %d "
                                                                 "replicas", (unsigned long long)need, n);
}

int fleet_run(const struct sim_config *workload, const struct sim_config *cfg, int n, const struct fleet_opts *o,
              struct fleet_result *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return ts_fail(err, "a fleet needs at least one replica");
    if (room_for_files(n, err))
        return -1;
    const double t0 = ts_wall_s();
    out->n = n;
    out->replica = xcalloc((size_t)n, sizeof *out->replica);
    out->routed = xcalloc((size_t)n, sizeof *out->routed);
    out->active_s = xcalloc((size_t)n, sizeof *out->active_s);
    const struct fleet_scale *fs = &o->scale;
    struct scaler sc = {.state = xcalloc((size_t)n, 1), .ready_s = xcalloc((size_t)n, sizeof *sc.ready_s),
                        .since_s = xcalloc((size_t)n, sizeof *sc.since_s),
                        .drain_s = xcalloc((size_t)n, sizeof *sc.drain_s), .next_s = fs->every_s,
                        .last_down_s = -INFINITY};
    for (int i = 0; i < n; i++) /* up from the start: all of them, or the autoscaler's min */
        sc.state[i] = !fs->on || i < fs->min ? R_UP : R_OFF;
    struct sim **r = xcalloc((size_t)n, sizeof *r);
    struct router_view *v = xcalloc((size_t)n, sizeof *v);
    bool *dirty = xmalloc(sizeof *dirty * (size_t)n);
    for (int i = 0; i < n; i++)
        dirty[i] = true;
    struct fleet_state fl = {.r = r, .n = n, .o = o, .v = v, .dirty = dirty};
    struct trace t = {0}, lengths = {0};
    struct trace_stream st = {0};
    struct model_cfg m;
    int rc = -1;
    for (int i = 0; i < n; i++)
        if (!(r[i] = sim_create_fed(&cfg[i], err))) {
            ts_fail_prefix(err, "replica %d (--gpu %s --model %s%s%s)", i, cfg[i].gpu, cfg[i].model,
                           cfg[i].system[0] ? " --system " : "", cfg[i].system);
            goto done;
        }
    if (model_resolve(workload->model, &m, err) || sim_workload_open(workload, &m, &t, &lengths, &st, err))
        goto done;
    const int64_t stale_ns = (int64_t)(o->staleness_s * 1e9);
    int64_t next_refresh = INT64_MIN, routed = 0;
    int got;
    struct trace_req tr = {0};
    double shown = ts_wall_s();
    scaler_doors(&sc, 0, n, v);
    while ((got = trace_stream_next(&st, &tr, err)) == 1) {
        const double t_s = (double)tr.arrival_ns * 1e-9;
        for (; fs->on && sc.next_s <= t_s; sc.next_s += fs->every_s)
            scaler_tick(&sc, fs, r, n, sc.next_s, TS_MIN((int64_t)(sc.next_s * 1e9), tr.arrival_ns), v, dirty, out);
        if (stale_ns <= 0 || tr.arrival_ns >= next_refresh) {
            refresh_view(r, n, tr.arrival_ns, v, dirty);
            next_refresh = tr.arrival_ns + stale_ns;
        }
        scaler_doors(&sc, t_s, n, v);
        release(&fl, tr.arrival_ns, out); /* those held back first, in their order */
        if (o->admit_max > 0 && (fl.q.n > 0 || fleet_full(v, n, o->admit_max))) {
            if (o->defer)
                hold(&fl.q, &tr, st.i - 1), out->deferred++;
            else
                out->refused++;
            continue;
        }
        route(&fl, &tr, st.i - 1, tr.arrival_ns, out);
        if (o->progress && ++routed % 1024 == 0 && ts_wall_s() - shown > 0.5) {
            show_progress(routed + out->refused, st.n, tr.arrival_ns, false);
            shown = ts_wall_s();
        }
    }
    if (got < 0)
        goto done;
    release_rest(&fl, tr.arrival_ns, out);
    if (o->progress)
        show_progress(st.n, st.n, tr.arrival_ns, true);
    for (int i = 0; i < n; i++) {
        if (sim_run(r[i], err)) {
            ts_fail_prefix(err, "replica %d", i);
            goto done;
        }
        sim_get_summary(r[i], &out->replica[i]);
    }
    int64_t end_ns = 0;
    for (int i = 0; i < n; i++)
        end_ns = TS_MAX(end_ns, out->replica[i].makespan_ns);
    for (int i = 0; i < n; i++) { /* up to the fleet's last finish, a draining one to its own (or its drain) */
        const double own_s = (double)out->replica[i].makespan_ns * 1e-9;
        if (sc.state[i] != R_OFF)
            out->active_s[i] += fmax(0, (sc.state[i] == R_DRAINING ? fmax(sc.drain_s[i], own_s) : (double)end_ns * 1e-9) -
                                            sc.since_s[i]);
        replica_energy(&out->replica[i], out->active_s[i]);
    }
    if (merge(r, out, cfg[0].slo, &out->fleet)) {
        ts_fail(err, "cannot read the replicas' spilled latencies back");
        goto done;
    }
    rc = 0;
done:
    out->run_wall_s = ts_wall_s() - t0;
    for (int i = 0; i < n; i++)
        sim_destroy(r[i]);
    free(fl.q.v);
    free(r);
    free(v);
    free(dirty);
    free(sc.state), free(sc.ready_s), free(sc.since_s), free(sc.drain_s);
    trace_stream_free(&st);
    trace_free(&t);
    trace_free(&lengths);
    if (rc)
        fleet_result_free(out);
    return rc;
}

void fleet_result_free(struct fleet_result *r)
{
    free(r->replica);
    free(r->routed);
    free(r->active_s);
    free(r->scale);
    memset(r, 0, sizeof *r);
}
