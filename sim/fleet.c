/*
 * fleet.c: replicas behind a router (fleet.h). The workload's arrivals are taken in order; at each,
 * the router's view is refreshed where it is due (every replica run up to the arrival, its load
 * read), the router picks a replica, which is run up to the arrival and fed the request. Once the
 * workload is spent, every replica runs to its end and the fleet's summary is merged from theirs.
 */
#include "fleet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trace.h"

/* --- the routers --------------------------------------------------------------------------- */

static int pick_round_robin(const struct router_view *v, int n, int *next)
{
    (void)v;
    const int k = *next % n;
    *next = (k + 1) % n;
    return k;
}

/* The replica of the least key, ties to the first met from the cursor on (which then moves past it,
 * so that equal replicas take turns). */
static int least(const struct router_view *v, int n, int *next, double (*key)(const struct router_view *))
{
    int best = *next % n;
    for (int j = 1; j < n; j++) {
        const int k = (*next + j) % n;
        if (key(&v[k]) < key(&v[best]))
            best = k;
    }
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

/* Every replica run up to t and its load read into the view, its sent count cleared. */
static void refresh_view(struct sim **r, int n, int64_t t, struct router_view *v)
{
    for (int i = 0; i < n; i++) {
        sim_advance(r[i], t);
        sim_load(r[i], &v[i].load);
        v[i].sent = 0;
    }
}

static bool fleet_full(const struct router_view *v, int n, int64_t admit_max)
{
    for (int i = 0; i < n; i++)
        if (v[i].load.outstanding + v[i].sent < admit_max)
            return false;
    return true;
}

/* The fleet's summary from the replicas' (their runs done). */
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
        /* its energy, and its idle draw on to the fleet's last finish */
        f->energy_j += m->energy_j + m->idle_w * fmax(0, span - (double)m->makespan_ns * 1e-9);
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

int fleet_run(const struct sim_config *workload, const struct sim_config *cfg, int n, const struct fleet_opts *o,
              struct fleet_result *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return ts_fail(err, "a fleet needs at least one replica");
    const double t0 = ts_wall_s();
    out->n = n;
    out->replica = xcalloc((size_t)n, sizeof *out->replica);
    out->routed = xcalloc((size_t)n, sizeof *out->routed);
    struct sim **r = xcalloc((size_t)n, sizeof *r);
    struct router_view *v = xcalloc((size_t)n, sizeof *v);
    struct trace t = {0}, lengths = {0};
    struct trace_stream st = {0};
    struct model_cfg m;
    int rc = -1;
    for (int i = 0; i < n; i++)
        if (!(r[i] = sim_create_fed(&cfg[i], err))) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            ts_fail(err, "replica %d (--gpu %s --model %s%s%s): %s", i, cfg[i].gpu, cfg[i].model,
                    cfg[i].system[0] ? " --system " : "", cfg[i].system, msg);
            goto done;
        }
    if (model_resolve(workload->model, &m, err) || sim_workload_open(workload, &m, &t, &lengths, &st, err))
        goto done;
    const int64_t stale_ns = (int64_t)(o->staleness_s * 1e9);
    int64_t next_refresh = INT64_MIN, routed = 0;
    int cursor = 0, got;
    struct trace_req tr = {0};
    double shown = ts_wall_s();
    while ((got = trace_stream_next(&st, &tr, err)) == 1) {
        if (stale_ns <= 0 || tr.arrival_ns >= next_refresh) {
            refresh_view(r, n, tr.arrival_ns, v);
            next_refresh = tr.arrival_ns + stale_ns;
        }
        if (o->admit_max > 0 && fleet_full(v, n, o->admit_max)) {
            out->refused++;
            continue;
        }
        const int k = o->router->pick(v, n, &cursor);
        sim_advance(r[k], tr.arrival_ns);
        sim_feed(r[k], &tr);
        v[k].sent++;
        out->routed[k]++;
        if (o->progress && ++routed % 1024 == 0 && ts_wall_s() - shown > 0.5) {
            show_progress(routed + out->refused, st.n, tr.arrival_ns, false);
            shown = ts_wall_s();
        }
    }
    if (got < 0)
        goto done;
    if (o->progress)
        show_progress(st.n, st.n, tr.arrival_ns, true);
    for (int i = 0; i < n; i++) {
        if (sim_run(r[i], err)) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            ts_fail(err, "replica %d: %s", i, msg);
            goto done;
        }
        sim_get_summary(r[i], &out->replica[i]);
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
    free(r);
    free(v);
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
    memset(r, 0, sizeof *r);
}
