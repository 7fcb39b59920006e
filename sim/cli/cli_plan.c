/*
 * cli_plan.c: `tessera plan capacity`: the highest rate a configuration serves within an SLO (plan.h),
 * point and robust; `tessera plan size` is cli_plan_size.c's. The plan's own options are taken out of
 * argv first; the rest are tessera sim's, parsed by its parser.
 */
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_plan.h"
#include "fleet.h"
#include "plan.h"
#include "presets.h"
#include "setup.h"

/* --- the plan's options ----------------------------------------------------------------------- */

static const struct plan_opt {
    const char *name, *arg, *help;
    bool size_only;
} plan_opts[] = {
    {"--slo", "SPEC", "the objective: pNN=T (NN% of requests within T), mean=T, first-block=T (T: 5s, 500ms)", false},
    {"--tolerance", "F", "the search stops where the lowest rate that failed is within F of the highest that held "
                         "(default 0.02)", false},
    {"--start-rps", "R", "the first rate probed (default 1)", false},
    {"--max-rps", "R", "the highest rate probed (default 10000)", false},
    {"--confidence", "P", "the robust capacity: the SLO at the pessimistic end of each figure's central P% "
                          "interval (default 90; 0: none)", false},
    {"--no-early-stop", NULL, "run every probe to its end (a probe otherwise stops once certain to miss)", false},
    {"--rps", "R", "the load to size for, req/s", true},
    {"--space", "FILE", "the candidates: one option a line, --NAME VALUE..., every combination (exp sweep's grid)", true},
    {"--accuracy", "TASK>=X", "drop candidates whose decoder's published accuracy on TASK is below X (percent)", true},
    {"--prices", "FILE", "GPU-hour prices, gpu,usd_per_hour,date,source (default: sim/data/prices.csv)", true},
    {"--kwh-price", "USD", "energy's price per kWh, added to the GPU-hours' (default 0: a rented GPU-hour "
                           "includes its power)", true},
    {"--max-replicas", "N", "the most replicas a candidate may take (default 64)", true},
    {"--jobs", "N", "candidates sized at once (default: the cores)", true},
    {"--out", "DIR", "write the plan there: plan.db, plan.csv, a run file a candidate, pareto.png; run again, a plan "
                     "goes on with the candidates its plan.db holds", true},
    {"--force", NULL, "start the plan over in a --out folder that holds files (another plan's, or this one's)", true},
    {"--slurm", NULL, "write --out's plan.sbatch, a Slurm job array of --jobs shards (default 32), and stop; "
                      "then the same command without --slurm merges their candidates and ranks them", true},
    {"--shard", "K/N", "size every N-th candidate from the K-th into --out's shards/shard-K.db, and stop "
                       "(what plan.sbatch runs)", true},
};

static const struct plan_opt *plan_opt_find(const char *word, bool size)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(plan_opts); i++) {
        const size_t n = strlen(plan_opts[i].name);
        if ((size || !plan_opts[i].size_only) && strncmp(word, plan_opts[i].name, n) == 0 &&
            (word[n] == '\0' || (word[n] == '=' && plan_opts[i].arg)))
            return &plan_opts[i];
    }
    return NULL;
}

void cli_plan_options_help(bool size)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(plan_opts); i++)
        if (size || !plan_opts[i].size_only) {
            char head[40];
            snprintf(head, sizeof head, "%s%s%s", plan_opts[i].name, plan_opts[i].arg ? " " : "",
                     plan_opts[i].arg ? plan_opts[i].arg : "");
            printf("  %-22s %s\n", head, plan_opts[i].help);
        }
}

static int real_of(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    const double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "tessera plan: %s: '%s' is not a number from %g to %g\n", opt, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_plan_parse(int argc, char **argv, bool size, struct plan_args *a)
{
    memset(a, 0, sizeof *a);
    a->search = (struct plan_search){.start_rps = 1, .tolerance = 0.02, .min_rps = 1e-3, .max_rps = 1e4};
    a->confidence = 90;
    a->early = true;
    a->kwh_price = 0;
    a->max_replicas = 64;
    a->jobs = 0;
    a->rest = xcalloc((size_t)argc + 1, sizeof *a->rest);
    a->rest[a->nrest++] = argv[0];
    bool slo = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) { /* the rest are tessera sim's, whatever their names */
            while (i < argc)
                a->rest[a->nrest++] = argv[i++];
            break;
        }
        const struct plan_opt *o = plan_opt_find(argv[i], size);
        if (!o) {
            a->rest[a->nrest++] = argv[i];
            continue;
        }
        const char *eq = strchr(argv[i], '='), *v = NULL;
        if (o->arg) {
            v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v) {
                fprintf(stderr, "tessera plan: %s needs a value (%s)\n", o->name, o->arg);
                return -1;
            }
        }
        struct ts_err err;
        double x;
        const char *n = o->name;
        if (strcmp(n, "--slo") == 0) {
            if (plan_slo_parse(v, &a->slo, &err)) {
                fprintf(stderr, "tessera plan: %s\n", err.msg);
                return -1;
            }
            slo = true;
        } else if (strcmp(n, "--tolerance") == 0) {
            if (real_of(n, v, 1e-4, 1, &a->search.tolerance))
                return -1;
        } else if (strcmp(n, "--start-rps") == 0) {
            if (real_of(n, v, 1e-3, 1e6, &a->search.start_rps))
                return -1;
        } else if (strcmp(n, "--max-rps") == 0) {
            if (real_of(n, v, 1e-3, 1e6, &a->search.max_rps))
                return -1;
        } else if (strcmp(n, "--confidence") == 0) {
            if (real_of(n, v, 0, 99, &x) || (x != floor(x) && (fprintf(stderr, "tessera plan: --confidence: a whole percent\n"), 1)))
                return -1;
            a->confidence = (int)x;
        } else if (strcmp(n, "--no-early-stop") == 0) {
            a->early = false;
        } else if (strcmp(n, "--rps") == 0) {
            if (real_of(n, v, 1e-3, 1e6, &a->rps))
                return -1;
        } else if (strcmp(n, "--space") == 0) {
            a->space = v;
        } else if (strcmp(n, "--accuracy") == 0) {
            const char *ge = strstr(v, ">=");
            if (!ge || ge == v || (size_t)(ge - v) >= sizeof a->acc_task || real_of("--accuracy", ge + 2, 0, 100, &a->acc_min)) {
                if (!ge || ge == v || (size_t)(ge - v) >= sizeof a->acc_task)
                    fprintf(stderr, "tessera plan: --accuracy: '%s' is not TASK>=PERCENT (gsm8k>=78)\n", v);
                return -1;
            }
            snprintf(a->acc_task, sizeof a->acc_task, "%.*s", (int)(ge - v), v);
        } else if (strcmp(n, "--prices") == 0) {
            a->prices = v;
        } else if (strcmp(n, "--kwh-price") == 0) {
            if (real_of(n, v, 0, 100, &a->kwh_price))
                return -1;
        } else if (strcmp(n, "--max-replicas") == 0) {
            if (real_of(n, v, 1, 4096, &x))
                return -1;
            a->max_replicas = (int)x;
        } else if (strcmp(n, "--jobs") == 0) {
            if (real_of(n, v, 1, 1024, &x))
                return -1;
            a->jobs = (int)x;
        } else if (strcmp(n, "--out") == 0) {
            if (strlen(v) > CFG_PATH - 64) {
                fprintf(stderr, "tessera plan: --out: a folder name longer than %d characters\n", CFG_PATH - 64);
                return -1;
            }
            a->out = v;
        } else if (strcmp(n, "--force") == 0) {
            a->force = true;
        } else if (strcmp(n, "--slurm") == 0) {
            a->slurm = true;
        } else if (strcmp(n, "--shard") == 0) {
            int k = 0, m = 0, used = 0;
            if (sscanf(v, "%d/%d%n", &k, &m, &used) != 2 || v[used] || m < 1 || m > 100000 || k < 1 || k > m) {
                fprintf(stderr, "tessera plan: --shard: '%s' is not K/N with 1 <= K <= N\n", v);
                return -1;
            }
            a->shard = k, a->shards = m;
        }
    }
    a->rest[a->nrest] = NULL;
    if (!slo) {
        fprintf(stderr, "tessera plan: --slo SPEC is required (p99=5s, mean=2s, first-block=1s)\n");
        return -1;
    }
    if (a->search.start_rps > a->search.max_rps) {
        fprintf(stderr, "tessera plan: --start-rps %g is above --max-rps %g\n", a->search.start_rps, a->search.max_rps);
        return -1;
    }
    return 0;
}

void cli_plan_args_free(struct plan_args *a)
{
    free(a->rest);
    a->rest = NULL;
}

/* --- the robust verdict ----------------------------------------------------------------------- */

struct robust {
    const struct plan_slo *slo;
    int64_t n;
    double *value; /* [runs][PLAN_TERMS] */
    int runs, done;
    int overloaded; /* the replicates that were */
    int oom;        /* the replicates whose largest step ran vLLM's sampler out of memory */
};

static void robust_each(void *ctx, struct sim *s, bool ran)
{
    struct robust *r = ctx;
    struct sim_watch w;
    if (!ran) {
        plan_watch_of(r->slo, r->n, false, &w);
        sim_set_watch(s, &w);
        return;
    }
    int64_t missed[SIM_WATCH_MAX] = {0};
    plan_watch_of(r->slo, r->n, false, &w);
    for (int k = 0; k < w.n; k++)
        missed[k] = sim_watch_missed(s, k);
    struct sim_summary m;
    sim_get_summary(s, &m);
    r->overloaded += m.overloaded, r->oom += m.sampler_oom;
    if (r->done < r->runs)
        plan_terms(r->slo, &m, missed, &r->value[(size_t)r->done++ * PLAN_TERMS]);
}

/* a fleet's replicate: its fleet summary's terms (its one pNN term counted by the summary) */
static void robust_each_fleet(void *ctx, const struct sim_summary *m)
{
    struct robust *r = ctx;
    r->overloaded += m->overloaded, r->oom += m->sampler_oom;
    if (r->done < r->runs)
        plan_fleet_terms(r->slo, m, &r->value[(size_t)r->done++ * PLAN_TERMS]);
}

/* Fleet f's replicates under workload c (cli_interval_fleet): each replica its own machine's draws. */
static int robust_fleet(const struct sim_config *c, const struct plan_fleet *f, const struct plan_slo *slo,
                        struct cli_interval *iv, struct ts_err *err)
{
    struct sim_config *cfg = plan_fleet_at(f, slo, err);
    if (!cfg)
        return -1;
    struct fleet_opts o = f->o;
    o.progress = false;
    const int rc = cli_interval_fleet(c, cfg, f->n, &o, iv, err);
    free(cfg);
    return rc;
}

int plan_judge_robust(const struct sim_config *base, const struct plan_fleet *given, const struct plan_slo *slo,
                      int level, int runs, bool *held, char *unbounded, size_t len, struct ts_err *err)
{
    struct sim_config c = *base;
    c.progress = false, c.quiet = true, c.no_steps = true, c.db[0] = '\0';
    unbounded[0] = '\0';
    struct plan_fleet own = {0};
    const struct plan_fleet *fl = given;
    if (!fl && c.replicas > 1) { /* a --replicas fleet of c */
        if (plan_fleet_of(&c, &own, err))
            return -1;
        fl = &own;
    }
    const bool fleet = fl != NULL;
    struct sim_setup setup;
    struct robust r = {.slo = slo, .runs = runs};
    /* the point run first: an overloaded configuration holds nothing, whatever its replicates; its
     * summary holds the workload's requests, stopped or not */
    struct plan_run point;
    if (fleet ? plan_judge_fleet(&c, fl, slo, &point, err)
              : sim_config_validate(&c, &setup, err) || plan_judge(&c, slo, true, &point, err)) {
        plan_fleet_free(&own);
        return -1;
    }
    r.n = point.m.num_requests;
    struct cli_interval iv = {.level = level, .runs = runs, .each = fleet ? NULL : robust_each,
                              .each_fleet = fleet ? robust_each_fleet : NULL, .each_ctx = &r};
    r.value = xcalloc((size_t)runs * PLAN_TERMS, sizeof *r.value);
    if (!point.held) {
        *held = false;
    } else if (fleet ? robust_fleet(&c, fl, slo, &iv, err) : cli_interval_run(&c, &setup, &iv, err)) {
        free(r.value);
        plan_fleet_free(&own);
        return -1;
    } else {
        *held = true;
        double *col = xcalloc((size_t)r.done, sizeof *col);
        const double tail = (100.0 - level) / 200.0; /* the pessimistic end of the central level% */
        for (int k = 0; k < slo->n; k++) {
            for (int i = 0; i < r.done; i++)
                col[i] = r.value[(size_t)i * PLAN_TERMS + k];
            gsl_sort(col, 1, (size_t)r.done);
            const bool share = slo->t[k].kind == TERM_SHARE;
            const double end = gsl_stats_quantile_from_sorted_data(col, 1, (size_t)r.done, share ? tail : 1 - tail);
            if (share ? end < slo->t[k].share : end > slo->t[k].bound_s)
                *held = false;
        }
        free(col);
        if (plan_replicates_fail(r.overloaded, r.oom, r.done, tail))
            *held = false;
        for (int k = 0; k < SRC_COUNT; k++)
            if (iv.used[k] && iv.unmeasured[k])
                snprintf(unbounded + strlen(unbounded), len - strlen(unbounded), "%s%s", unbounded[0] ? ", " : "",
                         cli_interval_source_name(k));
    }
    free(r.value);
    plan_fleet_free(&own);
    return 0;
}

/* --- capacity ------------------------------------------------------------------------------- */

/* The point judge: c at rate r, each probe kept for the report. */
struct probe_log {
    struct sim_config c;
    const struct plan_fleet *fleet; /* NULL: c itself (one instance, or its --replicas fleet) */
    const struct plan_slo *slo;
    bool early, progress;
    struct plan_run *runs;
    int n;
    size_t cap;
    double wall_s;
};

static int point_judge(void *ctx, double rps, bool *held, struct ts_err *err)
{
    struct probe_log *p = ctx;
    p->c.rps = rps;
    struct plan_run r;
    const double t0 = ts_wall_s();
    if (p->fleet ? plan_judge_fleet(&p->c, p->fleet, p->slo, &r, err) : plan_judge(&p->c, p->slo, p->early, &r, err))
        return -1;
    p->wall_s += ts_wall_s() - t0;
    ts_grow((void **)&p->runs, &p->cap, (size_t)p->n + 1, sizeof *p->runs);
    p->runs[p->n++] = r;
    if (p->progress)
        fprintf(stderr, "tessera plan: %g req/s %s\n", rps, r.held ? "held" : r.stopped ? "missed (stopped early)" : "missed");
    *held = r.held;
    return 0;
}

struct robust_ctx {
    const struct sim_config *c;
    const struct plan_fleet *fleet;
    const struct plan_slo *slo;
    int level, runs, probes;
    bool progress;
    char unbounded[256];
};

static int robust_judge(void *ctx, double rps, bool *held, struct ts_err *err)
{
    struct robust_ctx *r = ctx;
    struct sim_config c = *r->c;
    c.rps = rps;
    if (plan_judge_robust(&c, r->fleet, r->slo, r->level, r->runs, held, r->unbounded, sizeof r->unbounded, err))
        return -1;
    r->probes++;
    if (r->progress)
        fprintf(stderr, "tessera plan: robust, %g req/s %s\n", rps, *held ? "held" : "missed");
    return 0;
}

/* Why run r missed, in words, into buf. */
static const char *missed_text(const struct plan_slo *slo, const struct plan_run *r, char *buf, size_t len)
{
    char term[160];
    struct plan_slo one = {.n = 1};
    if (r->missed >= 0)
        one.t[0] = slo->t[r->missed], plan_slo_text(&one, term, sizeof term);
    char rej[64] = "";
    if (r->m.num_rejected > 0)
        snprintf(rej, sizeof rej, " (%lld rejected)", (long long)r->m.num_rejected);
    if (r->stopped)
        snprintf(buf, len, "stopped at %.1f s: certain to miss %s%s", r->stop_s, term, rej);
    else if (r->m.sampler_oom)
        snprintf(buf, len, "vLLM's sampler out of memory (a step of %d canvases; it holds %d)", r->m.sampler_canvases,
                 r->m.sampler_holds);
    else if (r->missed >= 0)
        snprintf(buf, len, "missed %s%s", term, r->overloaded ? "; overloaded" : "");
    else if (r->overloaded)
        snprintf(buf, len, "overloaded (served %.3g of %.3g req/s offered)", r->m.req_s, r->m.offered_rps);
    else
        buf[0] = '\0';
    return buf;
}

int cli_plan_capacity_of(const struct sim_config *c, const struct plan_fleet *fleet, const struct plan_args *a,
                         struct plan_result *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    struct probe_log p = {.c = *c, .fleet = fleet, .slo = &a->slo, .early = a->early,
                          .progress = c->progress && !c->quiet};
    const int rc = plan_capacity(&a->search, point_judge, &p, &out->point, err);
    out->runs = p.runs;
    out->nruns = p.n;
    out->wall_s = p.wall_s;
    for (int i = 0; i < p.n; i++) {
        out->request_steps += p.runs[i].request_steps;
        out->stopped += p.runs[i].stopped;
    }
    if (rc || a->confidence == 0 || out->point.rps == 0)
        return rc;
    /* robust: searched from the point capacity down (an interval's pessimistic end holds no higher) */
    struct robust_ctx r = {.c = c, .fleet = fleet, .slo = &a->slo, .level = a->confidence, .runs = c->interval_runs,
                           .progress = p.progress};
    struct plan_search s = a->search;
    s.start_rps = out->point.rps;
    const double t0 = ts_wall_s();
    if (plan_capacity(&s, robust_judge, &r, &out->robust, err))
        return -1;
    out->robust_wall_s = ts_wall_s() - t0;
    out->robust_done = true;
    snprintf(out->unbounded, sizeof out->unbounded, "%s", r.unbounded);
    return 0;
}

/* What is searched: "llada-8b on h100, system dllm-serve", or a fleet's replicas ("2 x llada-8b on h100
 * (dual)", cli_fleet_describe) behind its router. */
static void searched_text(const struct sim_config *c, const struct plan_fleet *fleet, char *buf, size_t len)
{
    if (fleet) {
        cli_fleet_describe(fleet->cfg, fleet->n, buf, len);
        snprintf(buf + strlen(buf), len - strlen(buf), " behind router %s%s", c->router,
                 c->autoscale[0] ? ", autoscaled" : "");
    } else if (c->replicas > 1) {
        snprintf(buf, len, "%d x %s on %s (%s) behind router %s", c->replicas, c->model, c->gpu,
                 c->system[0] ? c->system : c->policy, c->router);
    } else {
        snprintf(buf, len, "%s on %s%s%s", c->model, c->gpu, c->system[0] ? ", system " : "", c->system);
    }
}

static void print_capacity(const struct sim_config *c, const struct plan_fleet *fleet, const struct plan_args *a,
                           const struct plan_result *r)
{
    char slo[512], known[512], load[CFG_PATH + 256], why[400], what[4 * CFG_PATH];
    const struct plan_run *any = r->nruns ? &r->runs[0] : NULL;
    searched_text(c, fleet, what, sizeof what);
    printf("tessera plan capacity: %s\n", what);
    printf("  known         %s%s\n", sim_known(fleet ? &fleet->cfg[0] : c, known, sizeof known),
           fleet && fleet->n > 1 ? " (its first replica's)" : "");
    struct sim_config at = *c;
    at.rps = r->point.rps > 0 ? r->point.rps : a->search.min_rps;
    if (any)
        printf("  load          %s\n", cli_load_text(&at, &any->m, load, sizeof load));
    printf("  slo           %s, not overloaded\n", plan_slo_text(&a->slo, slo, sizeof slo));
    printf("  probes        rate req/s  verdict  p99 s     mean s    within   note\n");
    for (int i = 0; i < r->nruns; i++) {
        const struct plan_run *u = &r->runs[i];
        double within = NAN;
        for (int k = 0; k < a->slo.n && isnan(within); k++)
            if (a->slo.t[k].kind == TERM_SHARE && !u->stopped)
                within = u->value[k];
        if (u->stopped)
            printf("                %10.4g  missed   -         -         -        %s\n", u->rps,
                   missed_text(&a->slo, u, why, sizeof why));
        else
            printf("                %10.4g  %-7s  %-8.3g  %-8.3g  %-7s  %s\n", u->rps, u->held ? "held" : "missed",
                   u->m.lat_p99_s, u->m.lat_mean_s, isnan(within) ? "-" : (snprintf(load, sizeof load, "%.1f%%", 100 * within), load),
                   missed_text(&a->slo, u, why, sizeof why));
    }
    if (r->point.rps == 0) {
        printf("  capacity      none: the SLO was missed at every rate down to %g req/s\n", a->search.min_rps);
        const struct plan_run *low = &r->runs[r->nruns - 1];
        if (low->m.num_rejected > 0)
            printf("  rejected      %lld of the %lld requests at %g req/s, each a miss at any rate (tessera sim says why "
                   "and what admits them)\n", (long long)low->m.num_rejected, (long long)low->m.num_requests, low->rps);
    }
    else if (r->point.failed_rps == 0)
        printf("  capacity      at least %.4g req/s: held at every rate probed up to it (--max-rps)\n", r->point.rps);
    else
        printf("  capacity      %.4g req/s (held; %.4g did not: within %g%%)\n", r->point.rps, r->point.failed_rps,
               100 * a->search.tolerance);
    if (r->robust_done) {
        if (r->unbounded[0])
            printf("  robust        not bounded: %s never measured for this setup (the interval cannot say "
                   "how far the capacity is off)\n", r->unbounded);
        else if (r->robust.rps == 0)
            printf("  robust        none: at %d%% confidence the SLO is missed at every rate down to %g req/s\n",
                   a->confidence, a->search.min_rps);
        else
            printf("  robust        %.4g req/s at %d%% confidence (every figure of the SLO at its %d%% interval's "
                   "pessimistic end, %d replicates a rate; %.4g did not)\n", r->robust.rps, a->confidence,
                   a->confidence, c->interval_runs, r->robust.failed_rps);
    }
    printf("  searched      %d runs (%d stopped early), %.3g M request-steps in %.2f s (%.3g M/s)%s\n", r->nruns,
           r->stopped, (double)r->request_steps * 1e-6, r->wall_s,
           r->wall_s > 0 ? (double)r->request_steps * 1e-6 / r->wall_s : 0,
           r->robust_done ? (snprintf(load, sizeof load, "; robust: %d probes in %.1f s", r->robust.probes, r->robust_wall_s), load) : "");
}

static void capacity_json(const struct sim_config *c, const struct plan_fleet *fleet, const struct plan_args *a,
                          const struct plan_result *r)
{
    json_t *o = json_object(), *probes = json_array();
    char slo[512], known[512], what[4 * CFG_PATH];
    searched_text(c, fleet, what, sizeof what);
    json_object_set_new(o, "searched", json_string(what));
    const struct sim_config *first = fleet ? &fleet->cfg[0] : c; /* (a fleet file's: its first replica's) */
    json_object_set_new(o, "model", json_string(first->model));
    json_object_set_new(o, "gpu", json_string(first->gpu));
    json_object_set_new(o, "system", json_string(first->system));
    json_object_set_new(o, "replicas", json_integer(fleet ? fleet->n : c->replicas));
    json_object_set_new(o, "known", json_string(sim_known(first, known, sizeof known)));
    json_object_set_new(o, "slo", json_string(plan_slo_text(&a->slo, slo, sizeof slo)));
    json_object_set_new(o, "capacity_rps", json_real(r->point.rps));
    json_object_set_new(o, "failed_rps", json_real(r->point.failed_rps));
    json_object_set_new(o, "tolerance", json_real(a->search.tolerance));
    const bool robust = r->robust_done && !r->unbounded[0];
    json_object_set_new(o, "robust_rps", robust ? json_real(r->robust.rps) : json_null());
    json_object_set_new(o, "robust_failed_rps", robust && r->robust.failed_rps > 0 ? json_real(r->robust.failed_rps)
                                                                                    : json_null());
    json_object_set_new(o, "confidence", json_integer(a->confidence));
    json_object_set_new(o, "unbounded", json_string(r->unbounded));
    for (int i = 0; i < r->nruns; i++) {
        const struct plan_run *u = &r->runs[i];
        json_t *p = json_object();
        json_object_set_new(p, "rps", json_real(u->rps));
        json_object_set_new(p, "held", json_boolean(u->held));
        json_object_set_new(p, "stopped", json_boolean(u->stopped));
        json_object_set_new(p, "overloaded", json_boolean(u->overloaded));
        json_object_set_new(p, "sampler_oom", json_boolean(u->m.sampler_oom));
        json_object_set_new(p, "lat_p99_s", u->stopped ? json_null() : json_real(u->m.lat_p99_s));
        json_array_append_new(probes, p);
    }
    json_object_set_new(o, "probes", probes);
    json_object_set_new(o, "runs", json_integer(r->nruns));
    json_object_set_new(o, "stopped", json_integer(r->stopped));
    json_object_set_new(o, "request_steps", json_integer(r->request_steps));
    cli_print_json(o);
}

static void capacity_usage(void)
{
    printf("usage: tessera plan capacity --slo SPEC [plan options] [tessera sim options]\n"
           "\n"
           "The highest offered rate (req/s) at which the configuration the sim options describe holds\n"
           "the SLO: every term kept, and the run not overloaded. Rates are probed by doubling or\n"
           "halving from --start-rps, then bisected until within --tolerance. A single instance's\n"
           "probe stops once it is certain to miss a pNN term (more of its requests already late,\n"
           "rejected or waiting past the bound than the term allows); the verdict is the whole run's.\n"
           "The robust capacity holds the SLO at the pessimistic end of each figure's --confidence\n"
           "interval (tessera sim --interval's sources, --interval-runs replicates a rate); a source\n"
           "never measured for the setup leaves it not bounded, said.\n"
           "\n"
           "plan options:\n");
    cli_plan_options_help(false);
    printf("\n"
           "Every tessera sim option describes the configuration and its workload (tessera sim --help);\n"
           "its --rps is the search's. --json prints the result as one JSON object.\n"
           "\n"
           "example:\n"
           "  tessera plan capacity --slo p99=30s --gpu h100 --system dllm-serve --requests 300\n"
           "See sim/docs/plan.md.\n");
}

int cli_plan_capacity(int argc, char **argv)
{
    if (cli_help_asked(argc, argv)) {
        capacity_usage();
        return 0;
    }
    struct plan_args a;
    if (cli_plan_parse(argc, argv, false, &a)) {
        cli_plan_args_free(&a);
        return EXIT_USAGE;
    }
    struct sim_config c;
    int rc = cli_sim_parse(a.nrest, a.rest, &c);
    if (rc) {
        cli_plan_args_free(&a);
        return rc > 0 ? 0 : EXIT_USAGE;
    }
    struct ts_err err;
    struct sim_setup setup;
    if ((c.replicas < 2 && !c.fleet[0] && (c.disagg[0] || c.autoscale[0] || c.load_control[0]) &&
         ts_fail(&err, "%s: a fleet's option (--replicas N or --fleet FILE)",
                 c.disagg[0] ? "--disagg" : c.autoscale[0] ? "--autoscale" : "--load-control")) ||
        cli_plan_refuses(&c, &err) || (!c.fleet[0] && sim_config_validate(&c, &setup, &err))) {
        fprintf(stderr, "tessera plan: %s\n", err.msg);
        cli_plan_args_free(&a);
        return EXIT_USAGE;
    }
    /* a fleet file's or an autoscaler's fleet, as tessera sim makes it (a --replicas fleet: plan_judge's) */
    struct plan_fleet fleet = {0};
    const bool made = c.fleet[0] || c.autoscale[0];
    if (made && cli_fleet_build(&c, a.nrest, a.rest, &fleet.cfg, &fleet.n, &fleet.o, "tessera plan")) {
        cli_plan_args_free(&a);
        return EXIT_USAGE;
    }
    struct plan_result r;
    rc = cli_plan_capacity_of(&c, made ? &fleet : NULL, &a, &r, &err);
    if (rc)
        fprintf(stderr, "tessera plan: %s\n", err.msg);
    else if (c.json)
        capacity_json(&c, made ? &fleet : NULL, &a, &r);
    else
        print_capacity(&c, made ? &fleet : NULL, &a, &r);
    free(r.runs);
    plan_fleet_free(&fleet);
    cli_plan_args_free(&a);
    return rc ? EXIT_USAGE : 0;
}

int cli_plan_refuses(const struct sim_config *c, struct ts_err *err)
{
    if (c->executor == EXECUTOR_GPU)
        return ts_fail(err, "--executor gpu: a plan searches with the cost model; run a planned configuration "
                            "live with tessera sim --config FILE --executor gpu");
    if (c->db[0])
        return ts_fail(err, "--db: a plan writes its own (--out DIR)");
    if (c->interval > 0)
        return ts_fail(err, "--interval: a plan's robust capacity is its --confidence");
    return 0;
}
