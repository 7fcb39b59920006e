/*
 * plan.c: tessera plan's SLO, its verdict on one run, and the capacity search (plan.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "plan.h"

/* --- the SLO -------------------------------------------------------------------------------- */

/* "5", "5s", "500ms" as seconds, > 0 and finite; -1 where not. */
static int seconds_of(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v)
        return -1;
    if (strcmp(end, "ms") == 0)
        x *= 1e-3;
    else if (strcmp(end, "s") != 0 && *end)
        return -1;
    if (!(x > 0) || !isfinite(x) || x > 1e7)
        return -1;
    *out = x;
    return 0;
}

int plan_slo_parse(const char *spec, struct plan_slo *slo, struct ts_err *err)
{
    memset(slo, 0, sizeof *slo);
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return ts_fail(err, "--slo: longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", spec);
    int share_terms = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return ts_fail(err, "--slo: '%s' is not KEY=SECONDS (p99=5s, mean=2s, first-block=1s)", tok);
        *eq = '\0';
        if (slo->n == PLAN_TERMS)
            return ts_fail(err, "--slo: more than %d terms", PLAN_TERMS);
        struct plan_term t = {0};
        if (seconds_of(eq + 1, &t.bound_s))
            return ts_fail(err, "--slo: %s: '%s' is not a time (seconds, or 500ms, 5s)", tok, eq + 1);
        if (tok[0] == 'p' && tok[1]) {
            char *end;
            const double q = strtod(tok + 1, &end);
            if (*end || !(q > 0 && q < 100))
                return ts_fail(err, "--slo: '%s' is not a percentile (p50, p90, p99, p99.9)", tok);
            t.kind = TERM_SHARE, t.share = q / 100;
            if (++share_terms > SIM_WATCH_MAX)
                return ts_fail(err, "--slo: more than %d percentile terms", SIM_WATCH_MAX);
        } else if (strcmp(tok, "mean") == 0) {
            t.kind = TERM_MEAN;
        } else if (strcmp(tok, "first-block") == 0 || strcmp(tok, "ttft") == 0) {
            t.kind = TERM_FIRST_BLOCK;
        } else {
            return ts_fail(err, "--slo: unknown term '%s' (pNN, mean, first-block or ttft)", tok);
        }
        slo->t[slo->n++] = t;
    }
    if (slo->n == 0)
        return ts_fail(err, "--slo: no term (p99=5s, mean=2s, first-block=1s)");
    return 0;
}

const char *plan_slo_text(const struct plan_slo *slo, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < slo->n; k++) {
        const struct plan_term *t = &slo->t[k];
        const size_t at = strlen(buf);
        if (t->kind == TERM_SHARE)
            snprintf(buf + at, len - at, "%s%g%% of requests within %g s", k ? ", " : "", 100 * t->share, t->bound_s);
        else
            snprintf(buf + at, len - at, "%s%s at most %g s", k ? ", " : "",
                     t->kind == TERM_MEAN ? "mean latency" : "mean time to first block", t->bound_s);
    }
    return buf;
}

/* --- one run's verdict ------------------------------------------------------------------------ */

int plan_terms(const struct plan_slo *slo, const struct sim_summary *m, const int64_t *missed, double *value)
{
    int first = -1, share = 0;
    for (int k = 0; k < slo->n; k++) {
        const struct plan_term *t = &slo->t[k];
        bool kept;
        if (t->kind == TERM_SHARE) {
            value[k] = m->num_requests > 0 ? 1 - (double)missed[share++] / (double)m->num_requests : 0;
            kept = value[k] >= t->share;
        } else {
            value[k] = t->kind == TERM_MEAN ? m->lat_mean_s : m->ttfb_mean_s;
            kept = m->num_finished > 0 && value[k] <= t->bound_s;
        }
        if (!kept && first < 0)
            first = k;
    }
    return first;
}

/* The watch of slo's pNN terms over a workload of n requests: each term's bound and the misses it
 * allows (a share s of n within the bound: n - ceil(s n) may miss it). */
void plan_watch_of(const struct plan_slo *slo, int64_t n, bool stop, struct sim_watch *w)
{
    memset(w, 0, sizeof *w);
    w->stop = stop;
    for (int k = 0; k < slo->n; k++)
        if (slo->t[k].kind == TERM_SHARE) {
            w->bound_s[w->n] = slo->t[k].bound_s;
            w->misses[w->n++] = n - (int64_t)ceil(slo->t[k].share * (double)n - 1e-9);
        }
}

int plan_fleet_of(const struct sim_config *c, struct plan_fleet *f, struct ts_err *err)
{
    memset(f, 0, sizeof *f);
    f->o = (struct fleet_opts){.staleness_s = c->router_staleness, .admit_max = c->admit_max,
                               .defer = c->admit == ADMIT_DEFER};
    if (c->fleet[0] || c->autoscale[0])
        return ts_fail(err, "%s: a fleet of --replicas N is made here; a fleet file's or an autoscaler's by its "
                            "command (cli_fleet_build)", c->fleet[0] ? "--fleet" : "--autoscale");
    if (fleet_router_parse(c->router, &f->o.router, &f->o.affinity, err) ||
        fleet_disagg_parse(c->disagg, &f->o.disagg, err) || fleet_tau_parse(c->load_control, &f->o.tau, err))
        return -1;
    if (f->o.disagg.mode != DISAGG_OFF) {
        const int refresh = f->o.disagg.refresh > 0 ? f->o.disagg.refresh : c->replicas / 2;
        if (refresh < 1 || refresh >= c->replicas)
            return ts_fail(err, "--disagg '%s': a Refresh pool of %d of the %d replicas", c->disagg, refresh,
                           c->replicas);
    }
    f->n = c->replicas;
    f->cfg = xmalloc(sizeof *f->cfg * (size_t)f->n);
    for (int i = 0; i < f->n; i++) {
        f->cfg[i] = *c;
        f->cfg[i].replicas = 1, f->cfg[i].db[0] = '\0', f->cfg[i].no_steps = true, f->cfg[i].json = false;
        f->cfg[i].progress = false;
    }
    return 0;
}

void plan_fleet_free(struct plan_fleet *f)
{
    free(f->cfg);
    f->cfg = NULL, f->n = 0;
}

struct sim_config *plan_fleet_at(const struct plan_fleet *f, const struct plan_slo *slo, struct ts_err *err)
{
    double bound = 0;
    int shares = 0;
    for (int k = 0; k < slo->n; k++)
        if (slo->t[k].kind == TERM_SHARE) {
            if (++shares > 1) {
                ts_fail(err, "--slo: a fleet is judged on one percentile term (its --slo count); this SLO has more");
                return NULL;
            }
            bound = slo->t[k].bound_s;
        }
    struct sim_config *cfg = xmalloc(sizeof *cfg * (size_t)f->n);
    for (int i = 0; i < f->n; i++) {
        cfg[i] = f->cfg[i];
        cfg[i].slo = bound; /* (each replica's summary counts the requests within it) */
        cfg[i].quiet = true, cfg[i].progress = false, cfg[i].no_steps = true, cfg[i].db[0] = '\0';
    }
    return cfg;
}

int plan_fleet_terms(const struct plan_slo *slo, const struct sim_summary *m, double *value)
{
    int64_t missed[SIM_WATCH_MAX] = {m->num_requests - m->slo_met};
    return plan_terms(slo, m, missed, value);
}

/* A run's verdict from its terms: it holds every term, is not overloaded, and its largest step ran no
 * vLLM sampler out of memory. */
static void verdict(struct plan_run *r)
{
    r->overloaded = r->m.overloaded;
    r->held = r->missed < 0 && !r->overloaded && !r->m.sampler_oom;
}

int plan_judge_fleet(const struct sim_config *workload, const struct plan_fleet *f, const struct plan_slo *slo,
                     struct plan_run *out, struct ts_err *err)
{
    struct sim_config w = *workload;
    w.progress = false, w.quiet = true, w.no_steps = true, w.db[0] = '\0', w.json = false;
    memset(out, 0, sizeof *out);
    out->rps = w.rps;
    struct sim_config *cfg = plan_fleet_at(f, slo, err);
    if (!cfg)
        return -1;
    struct fleet_opts o = f->o;
    o.progress = false;
    struct fleet_result r;
    const int rc = fleet_run(&w, cfg, f->n, &o, &r, err);
    free(cfg);
    if (rc)
        return -1;
    out->m = r.fleet;
    fleet_result_free(&r);
    out->request_steps = out->m.request_steps;
    out->missed = plan_fleet_terms(slo, &out->m, out->value);
    verdict(out);
    return 0;
}

bool plan_replicates_fail(int overloaded, int oom, int done, double tail)
{
    return overloaded > tail * done || oom > 0;
}

int plan_judge(const struct sim_config *base, const struct plan_slo *slo, bool early, struct plan_run *out,
               struct ts_err *err)
{
    struct sim_config c = *base;
    c.progress = false, c.quiet = true, c.no_steps = true, c.db[0] = '\0', c.json = false;
    memset(out, 0, sizeof *out);
    out->rps = c.rps;
    out->missed = -1;
    int64_t missed[SIM_WATCH_MAX] = {0};
    if (c.replicas > 1) {
        struct plan_fleet f;
        if (plan_fleet_of(&c, &f, err))
            return -1;
        const int rc = plan_judge_fleet(&c, &f, slo, out, err);
        plan_fleet_free(&f);
        return rc;
    } else {
        struct sim *s = sim_create(&c, err);
        if (!s)
            return -1;
        sim_get_summary(s, &out->m);
        const int64_t n = out->m.num_requests;
        struct sim_watch w;
        plan_watch_of(slo, n, early, &w);
        sim_set_watch(s, &w);
        const int rc = sim_run(s, err);
        sim_get_summary(s, &out->m);
        out->request_steps = out->m.request_steps;
        for (int k = 0; k < w.n; k++)
            missed[k] = sim_watch_missed(s, k);
        if (rc == SIM_STOPPED) {
            int bound;
            sim_stopped_at(s, &out->stop_s, &bound);
            for (int k = 0, j = 0; k < slo->n; k++) /* the term whose bound it was certain to miss */
                if (slo->t[k].kind == TERM_SHARE && j++ == bound)
                    out->missed = k;
            sim_destroy(s);
            const struct sim_summary at = out->m; /* (the rejected and the largest step so far) */
            memset(&out->m, 0, sizeof out->m);
            out->m.num_requests = n, out->m.num_rejected = at.num_rejected;
            out->m.sampler_canvases = at.sampler_canvases, out->m.sampler_holds = at.sampler_holds;
            out->m.sampler_oom = at.sampler_oom;
            out->stopped = true;
            return 0;
        }
        sim_destroy(s);
        if (rc)
            return -1;
    }
    out->missed = plan_terms(slo, &out->m, missed, out->value);
    verdict(out);
    return 0;
}

/* --- the capacity search ---------------------------------------------------------------------- */

/* Rate r judged: the highest that held or the lowest that missed moved to it. */
static int probe(plan_judge_fn judge, void *ctx, double r, double *held, double *failed, bool *ok,
                 struct plan_capacity *out, struct ts_err *err)
{
    if (judge(ctx, r, ok, err))
        return -1;
    out->probes++;
    *(*ok ? held : failed) = r;
    return 0;
}

int plan_capacity(const struct plan_search *o, plan_judge_fn judge, void *ctx, struct plan_capacity *out,
                  struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    double held = 0, failed = 0, r = TS_MAX(TS_MIN(o->start_rps, o->max_rps), o->min_rps);
    bool ok;
    /* probing: doubling while rates hold, halving while they do not, until one of each */
    for (;;) {
        if (probe(judge, ctx, r, &held, &failed, &ok, out, err))
            return -1;
        if ((held > 0 && failed > 0) || (ok && r >= o->max_rps) || (!ok && r <= o->min_rps))
            break; /* (a bracket; or every rate up to the most held, or none down to the least) */
        r = ok ? TS_MIN(2 * r, o->max_rps) : TS_MAX(r / 2, o->min_rps);
    }
    /* bisection: (held, failed) narrowed until within the tolerance */
    while (held > 0 && failed > 0 && (failed - held) > o->tolerance * held)
        if (probe(judge, ctx, 0.5 * (held + failed), &held, &failed, &ok, out, err))
            return -1;
    out->rps = held;
    out->failed_rps = failed;
    return 0;
}
