/*
 * cli_plan_size.c: `tessera plan size`: for a load (--rps R) and an SLO, each candidate of a space (a
 * grid file, exp sweep's syntax) sized: its capacity on one replica (plan.h), the fewest replicas that
 * capacity says carry R, confirmed by a run of that fleet at R (routing is not linear: one more
 * replica at a time until one holds), priced per hour (GPU-hours at the price table's rate, energy at
 * --kwh-price) and per million generated tokens, and dropped under the quality floor (--accuracy:
 * the decoder's published accuracy). Candidates are sized --jobs at a time, each in a process of its
 * own; the result does not depend on --jobs.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "cli.h"
#include "cli_plan_size.h"
#include "gpu.h"
#include "model.h"
#include "plan.h"
#include "presets.h"
#include "setup.h"
#include "whole.h"

/* --- prices ----------------------------------------------------------------------------------- */

#define PRICES_MAX 64
struct prices {
    int n;
    char gpu[PRICES_MAX][32], date[PRICES_MAX][16];
    double usd_h[PRICES_MAX];
    char path[CFG_PATH + 64];
};

static int price_line(void *ctx, const char *path, int line, char *text, struct ts_err *err)
{
    struct prices *p = ctx;
    if (!text[strspn(text, " \t")] || strncmp(text, "gpu,", 4) == 0)
        return 0;
    char *f[4] = {0}, *save = NULL;
    int nf = 0;
    for (char *t = strtok_r(text, ",", &save); t && nf < 4; t = strtok_r(NULL, ",", &save))
        f[nf++] = t;
    if (nf < 4)
        return ts_fail(err, "%s:%d: %d fields where a row holds gpu,usd_per_hour,date,source", path, line, nf);
    char *end;
    const double usd = strtod(f[1], &end);
    if (end == f[1] || *end || !(usd > 0 && usd < 1e4))
        return ts_fail(err, "%s:%d: usd_per_hour: '%s' is not a price above 0", path, line, f[1]);
    if (strlen(f[0]) >= sizeof p->gpu[0] || strlen(f[2]) >= sizeof p->date[0])
        return ts_fail(err, "%s:%d: gpu or date: too long", path, line);
    if (p->n == PRICES_MAX)
        return ts_fail(err, "%s:%d: more than %d rows", path, line, PRICES_MAX);
    for (int i = 0; i < p->n; i++)
        if (ts_name_eq(p->gpu[i], f[0]))
            return ts_fail(err, "%s:%d: gpu: '%s' a second time", path, line, f[0]);
    snprintf(p->gpu[p->n], sizeof p->gpu[0], "%s", f[0]);
    snprintf(p->date[p->n], sizeof p->date[0], "%s", f[2]);
    p->usd_h[p->n++] = usd;
    return 0;
}

static int prices_read(const char *path, struct prices *p, struct ts_err *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return ts_fail(err, "--prices %s: %s", path, strerror(errno));
    const int rc = cli_text_lines(f, path, price_line, p, err);
    fclose(f);
    return rc;
}

static double price_of(const struct prices *p, const char *gpu)
{
    for (int i = 0; i < p->n; i++)
        if (ts_name_eq(p->gpu[i], gpu))
            return p->usd_h[i];
    return 0;
}

/* Whether c's model and card are known (a typo stops the plan; a model that does not fit its card is
 * the candidate's own verdict). */
static int names_resolve(const struct sim_config *c, struct ts_err *err)
{
    struct model_cfg m;
    struct gpu_spec g;
    struct gpu_table *gt = gpu_table_create();
    const int rc = sim_model_resolve(c, &m, err) || (c->gpu_file[0] && gpu_load_file(gt, c->gpu_file, err)) ||
                   gpu_lookup(gt, c->gpu, &g, err);
    gpu_table_destroy(gt);
    return rc ? -1 : 0;
}

/* --- a candidate sized ------------------------------------------------------------------------ */


static void size_one(const struct plan_args *a, const struct space *sp, long i, struct cand *out)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    out->r.accuracy = -1;
    struct sim_config c;
    struct ts_err err;
    const double t0 = ts_wall_s();
    if (plan_config_of(a, sp, i, &c)) {
        out->status = CAND_ERROR;
        snprintf(out->r.why, sizeof out->r.why, "its options do not parse");
        return;
    }
    c.progress = false, c.quiet = true;
    snprintf(out->r.gpu, sizeof out->r.gpu, "%s", c.gpu);
    char known[512];
    sim_known(&c, known, sizeof known);
    snprintf(out->r.known, sizeof out->r.known, "%.*s", (int)strcspn(known, ": "), known);
    out->r.gpus = TS_MAX(c.tp, 1) * TS_MAX(c.ep, 1);
    struct sim *s = sim_create(&c, &err); /* (a card the model does not fit, a pricing it lacks: said, not sized) */
    if (!s) {
        out->status = CAND_UNBUILT;
        snprintf(out->r.why, sizeof out->r.why, "%s", err.msg);
        return;
    }
    sim_destroy(s);
    struct plan_args one = *a;
    one.confidence = 0;
    struct sim_config rep = c;
    rep.replicas = 1;
    struct plan_result r;
    if (cli_plan_capacity_of(&rep, NULL, &one, &r, &err)) {
        out->status = CAND_ERROR;
        snprintf(out->r.why, sizeof out->r.why, "%s", err.msg);
        free(r.runs);
        return;
    }
    out->r.rps_per_replica = r.point.rps, out->r.rps_failed = r.point.failed_rps, out->r.probes = r.nruns;
    out->r.request_steps = r.request_steps;
    free(r.runs);
    if (out->r.rps_per_replica == 0) {
        out->status = CAND_NO_RATE;
        snprintf(out->r.why, sizeof out->r.why, "holds the SLO at no rate down to %g req/s", a->search.min_rps);
        return;
    }
    /* the fewest replicas the capacity says carry the load, then confirmed by a run of the fleet */
    int n = (int)ceil(a->rps / out->r.rps_per_replica - 1e-9);
    n = TS_MAX(n, 1);
    struct plan_run run;
    for (;; n++) {
        if (n > a->max_replicas) {
            out->status = CAND_TOO_MANY;
            snprintf(out->r.why, sizeof out->r.why, "needs more than %d replicas (one carries %.3g req/s)", a->max_replicas,
                     out->r.rps_per_replica);
            return;
        }
        struct sim_config f = c;
        f.replicas = n, f.rps = a->rps;
        if (plan_judge(&f, &a->slo, true, &run, &err)) {
            out->status = CAND_ERROR;
            snprintf(out->r.why, sizeof out->r.why, "%d replicas at %g req/s: %s", n, a->rps, err.msg);
            return;
        }
        out->r.probes++;
        out->r.request_steps += run.request_steps;
        if (run.held)
            break;
    }
    out->r.replicas = n;
    out->r.gpus *= n;
    out->m = run.m, out->confirmed = true;
    out->r.p99_s = run.m.lat_p99_s, out->r.mean_s = run.m.lat_mean_s;
    out->r.within = NAN;
    for (int k = 0; k < a->slo.n && isnan(out->r.within); k++)
        if (a->slo.t[k].kind == TERM_SHARE)
            out->r.within = run.value[k];
    out->r.content_tok_s = run.m.content_tok_s, out->r.mean_power_w = run.m.mean_power_w;
    out->r.accuracy = run.m.expected_accuracy;
    snprintf(out->r.accuracy_task, sizeof out->r.accuracy_task, "%s", run.m.accuracy_task);
    out->r.wall_s = ts_wall_s() - t0;
}

/* Sizes the candidates todo[0..n) in `jobs` processes, each writing its candidates' records to a pipe;
 * the parent collects them into out (by index), hands each to keep (the plan's database) and says its
 * progress. -1 where a worker dies or keep fails. */
static int size_all(const struct plan_args *a, const struct space *sp, const long *todo, long n, int jobs,
                    bool progress, struct cand *out, int (*keep)(void *ctx, const struct cand *c), void *ctx)
{
    jobs = (int)TS_MIN((long)jobs, n);
    if (n == 0)
        return 0;
    int *fd = xcalloc((size_t)jobs, sizeof *fd);
    pid_t *pid = xcalloc((size_t)jobs, sizeof *pid);
    fflush(NULL);
    for (int w = 0; w < jobs; w++) {
        int p[2];
        if (pipe(p)) {
            perror("tessera plan: pipe");
            exit(1);
        }
        pid[w] = fork();
        if (pid[w] < 0) {
            perror("tessera plan: fork");
            exit(1);
        }
        if (pid[w] == 0) {
            close(p[0]);
            for (int v = 0; v < w; v++)
                close(fd[v]);
            for (long i = w; i < n; i += jobs) {
                struct cand c;
                size_one(a, sp, todo[i], &c);
                if (write(p[1], &c, sizeof c) != (ssize_t)sizeof c)
                    _exit(1);
            }
            _exit(0);
        }
        close(p[1]);
        fd[w] = p[0];
    }
    long got = 0;
    int open = jobs, rc = 0;
    const double t0 = ts_wall_s();
    struct pollfd *pf = xcalloc((size_t)jobs, sizeof *pf);
    size_t *have = xcalloc((size_t)jobs, sizeof *have);
    struct cand *buf = xcalloc((size_t)jobs, sizeof *buf);
    while (open > 0) {
        for (int w = 0; w < jobs; w++)
            pf[w] = (struct pollfd){.fd = fd[w], .events = POLLIN};
        if (poll(pf, (nfds_t)jobs, -1) < 0 && errno != EINTR)
            break;
        for (int w = 0; w < jobs; w++) {
            if (fd[w] < 0 || !(pf[w].revents & (POLLIN | POLLHUP)))
                continue;
            const ssize_t k = read(fd[w], (char *)&buf[w] + have[w], sizeof buf[w] - have[w]);
            if (k <= 0) {
                close(fd[w]);
                fd[w] = -1;
                pf[w].fd = -1;
                open--;
                continue;
            }
            have[w] += (size_t)k;
            if (have[w] < sizeof buf[w])
                continue;
            have[w] = 0;
            TS_ASSERT(buf[w].index >= 0 && buf[w].index < sp->total);
            out[buf[w].index] = buf[w];
            if (keep && keep(ctx, &buf[w]))
                rc = -1;
            got++;
            if (progress) {
                const double took = ts_wall_s() - t0;
                fprintf(stderr, "\rtessera plan: %ld/%ld candidates sized, %.0f s%s", got, n, took,
                        got < n ? (took > 2 ? ", about " : "") : "\n");
                if (got < n && took > 2)
                    fprintf(stderr, "%.0f s left   ", took * (double)(n - got) / (double)got);
            }
        }
    }
    for (int w = 0; w < jobs; w++) {
        int st;
        waitpid(pid[w], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = -1;
    }
    if (got != n)
        rc = -1;
    free(pf), free(have), free(buf), free(fd), free(pid);
    return rc;
}

/* --- the ranking ------------------------------------------------------------------------------ */


static int by_cost(const void *x, const void *y)
{
    const struct cand *a = *(const struct cand *const *)x, *b = *(const struct cand *const *)y;
    if (plan_ranked(a) != plan_ranked(b))
        return plan_ranked(a) ? -1 : 1;
    if (a->usd_h != b->usd_h)
        return a->usd_h < b->usd_h ? -1 : 1;
    if (a->r.p99_s != b->r.p99_s)
        return a->r.p99_s < b->r.p99_s ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Whether a is at least as good as b in cost, p99 at the load and accuracy, and better in one. */
static bool dominates(const struct cand *a, const struct cand *b)
{
    return a->usd_h <= b->usd_h && a->r.p99_s <= b->r.p99_s && a->r.accuracy >= b->r.accuracy &&
           (a->usd_h < b->usd_h || a->r.p99_s < b->r.p99_s || a->r.accuracy > b->r.accuracy);
}

static void price_all(const struct plan_args *a, const struct prices *pr, struct cand *c, long n)
{
    for (long i = 0; i < n; i++) {
        struct cand *x = &c[i];
        x->price = price_of(pr, x->r.gpu);
        x->floor_ok = !a->acc_task[0] ||
                      (ts_name_eq(x->r.accuracy_task, a->acc_task) && x->r.accuracy >= 0 && x->r.accuracy >= a->acc_min);
        if (x->status != CAND_SIZED)
            continue;
        x->usd_h = x->r.gpus * x->price + x->r.mean_power_w * 1e-3 * a->kwh_price;
        x->usd_mtok = x->r.content_tok_s > 0 ? x->usd_h / (x->r.content_tok_s * 3600 * 1e-6) : NAN;
    }
    for (long i = 0; i < n; i++) {
        c[i].front = plan_ranked(&c[i]);
        for (long j = 0; j < n && c[i].front; j++)
            c[i].front = !(j != i && plan_ranked(&c[j]) && dominates(&c[j], &c[i]));
    }
}

static void print_plan(const struct plan_args *a, const struct space *sp, const struct prices *pr,
                       struct cand *const *order, long n, double wall_s, int jobs, long held)
{
    char slo[512], label[1024];
    int64_t steps = 0;
    for (long i = 0; i < n; i++)
        steps += order[i]->kept ? 0 : order[i]->r.request_steps;
    printf("tessera plan size: %g req/s within %s, not overloaded%s%s%s\n", a->rps,
           plan_slo_text(&a->slo, slo, sizeof slo), a->acc_task[0] ? ", accuracy on " : "",
           a->acc_task[0] ? a->acc_task : "", a->acc_task[0] ? (snprintf(label, sizeof label, " at least %g%%", a->acc_min), label) : "");
    printf("  space         %s: %ld candidates, %ld sized in %.1f s by %d jobs (%.3g M simulated request-steps, %.3g M/s)",
           a->space, n, n - held, wall_s, jobs, (double)steps * 1e-6, wall_s > 0 ? (double)steps * 1e-6 / wall_s : 0);
    if (held > 0)
        printf(", %ld kept from %s/plan.db", held, a->out);
    printf("\n");
    printf("  prices        %s (GPU-hours)%s\n", pr->path,
           a->kwh_price > 0 ? (snprintf(label, sizeof label, ", energy at %g USD/kWh", a->kwh_price), label) : ", energy not priced");
    printf("\n  rank  $/hour  $/M tok  replicas  gpus  req/s a replica  p99 at load  accuracy  known      candidate\n");
    int rank = 0;
    char tasks[512] = "";
    for (long i = 0; i < n; i++) {
        const struct cand *c = order[i];
        if (!plan_ranked(c))
            continue;
        char acc[48] = "-";
        if (c->r.accuracy >= 0)
            snprintf(acc, sizeof acc, "%.1f%%", c->r.accuracy);
        if (c->r.accuracy >= 0 && !strstr(tasks, c->r.accuracy_task) && strlen(tasks) + strlen(c->r.accuracy_task) + 4 < sizeof tasks)
            snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s", tasks[0] ? "; " : "", c->r.accuracy_task);
        printf("  %4d%s %7.2f  %7.3f  %8d  %4d  %15.3g  %9.2f s  %8s  %-9s  %s\n", ++rank, c->front ? "*" : " ",
               c->usd_h, c->usd_mtok, c->r.replicas, c->r.gpus, c->r.rps_per_replica, c->r.p99_s, acc, c->r.known,
               plan_label_of(sp, c->index, label, sizeof label));
    }
    if (rank == 0)
        printf("  (none: no candidate serves the load within the SLO%s)\n", a->acc_task[0] ? " at the accuracy floor" : "");
    else
        printf("  (* on the front: no other candidate is as cheap, as fast at the load and as accurate, and better in one;\n"
               "   accuracy: the decoder's published score on %s, not simulated)\n", tasks[0] ? tasks : "(none published)");
    bool head = false;
    for (long i = 0; i < n; i++) {
        const struct cand *c = order[i];
        if (plan_ranked(c))
            continue;
        if (!head)
            printf("\n  not ranked\n");
        head = true;
        char why[CFG_PATH + 1024];
        if (c->status != CAND_SIZED)
            snprintf(why, sizeof why, "%s", c->r.why);
        else if (c->price <= 0)
            snprintf(why, sizeof why, "%d replicas serve it, but %s has no price in %s", c->r.replicas, c->r.gpu, pr->path);
        else if (c->r.accuracy < 0 || !ts_name_eq(c->r.accuracy_task, a->acc_task))
            snprintf(why, sizeof why, "its decoder publishes no accuracy on %s", a->acc_task);
        else
            snprintf(why, sizeof why, "accuracy %.1f%% on %s, under the floor", c->r.accuracy, c->r.accuracy_task);
        printf("    %s: %s\n", plan_label_of(sp, c->index, label, sizeof label), why);
    }
}

static void size_usage(void)
{
    printf("usage: tessera plan size --rps R --slo SPEC --space FILE [plan options] [tessera sim options]\n"
           "\n"
           "The candidates of the space, each sized for the load: its capacity on one replica\n"
           "(tessera plan capacity's search), the fewest replicas that capacity says carry R req/s,\n"
           "confirmed by a run of that fleet at R (one more replica until one holds the SLO), priced per\n"
           "hour (its GPUs at --prices' rate, and energy at --kwh-price) and per million generated\n"
           "tokens. Ranked by cost per hour; with --accuracy, candidates whose decoder publishes less\n"
           "(or nothing) on the task are set apart. The cheapest is then given its robust replicas\n"
           "(--confidence). Candidates are sized --jobs at a time; the plan does not depend on --jobs.\n"
           "\n"
           "The space: one option of tessera sim a line, --NAME VALUE..., its candidates every\n"
           "combination (tessera exp sweep's grid): cards, systems, decoders and thresholds, block\n"
           "sizes, concurrency caps, --tp, --disagg splits, routers. --replicas and --rps are the plan's.\n"
           "\n"
           "plan options:\n");
    cli_plan_options_help(true);
    printf("\n"
           "Every other option is tessera sim's and holds for every candidate (the workload among them).\n"
           "\n"
           "example:\n"
           "  tessera plan size --rps 4 --slo p95=20s --space experiments/plan-space.txt --system sglang \\\n"
           "      --rounds-host h200 --requests 400\n"
           "See sim/docs/plan.md.\n");
}

/* The cheapest, robust: the replicas its capacity at the interval's pessimistic end needs. */
static void print_robust(const struct plan_args *a, const struct space *sp, const struct cand *best)
{
    struct sim_config cfg;
    struct ts_err err;
    if (plan_config_of(a, sp, best->index, &cfg))
        return;
    cfg.replicas = 1, cfg.progress = false;
    struct plan_result r;
    struct plan_args b = *a;
    b.search.start_rps = best->r.rps_per_replica;
    if (cli_plan_capacity_of(&cfg, NULL, &b, &r, &err))
        fprintf(stderr, "tessera plan size: the cheapest's robust capacity: %s\n", err.msg);
    else if (r.unbounded[0])
        printf("\n  robust        the cheapest: not bounded (%s never measured for its setup)\n", r.unbounded);
    else if (r.robust.rps > 0)
        printf("\n  robust        the cheapest at %d%% confidence: %.3g req/s a replica, so %d replicas by capacity "
               "(%d by the point)\n", a->confidence, r.robust.rps, (int)ceil(a->rps / r.robust.rps - 1e-9),
               (int)ceil(a->rps / best->r.rps_per_replica - 1e-9));
    else
        printf("\n  robust        the cheapest at %d%% confidence: holds the SLO at no rate\n", a->confidence);
    free(r.runs);
}

/* Every candidate checked before any is sized: a bad value stops the plan, naming it. 0, or EXIT_USAGE said. */
static int space_check(const struct plan_args *a, const struct space *sp)
{
    char label[1024];
    struct ts_err err;
    for (long i = 0; i < sp->total; i++) {
        struct sim_config cfg;
        struct sim_setup setup;
        if (plan_config_of(a, sp, i, &cfg)) {
            fprintf(stderr, "tessera plan size: candidate %ld (%s) does not parse\n", i + 1, plan_label_of(sp, i, label, sizeof label));
            return EXIT_USAGE;
        }
        const bool made = cfg.fleet[0] || cfg.autoscale[0]; /* (a fleet file's or an autoscaler's) */
        if ((made && ts_fail(&err, "%s: a plan sizes a fleet of --replicas N, fixed (tessera plan capacity searches "
                                   "a fleet file's or an autoscaler's)", cfg.fleet[0] ? "--fleet" : "--autoscale")) ||
            cli_plan_refuses(&cfg, &err) || sim_config_validate(&cfg, &setup, &err) || names_resolve(&cfg, &err)) {
            fprintf(stderr, "tessera plan size: candidate %ld (%s): %s\n", i + 1, plan_label_of(sp, i, label, sizeof label), err.msg);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The database the candidates go into, its path into db: a shard's own (DIR/shards/shard-K.db), or
 * the plan's (DIR/plan.db), with the shards' merged in. 0, or -1 said. */
static int plan_db_ready(const struct plan_args *a, char *db, size_t len)
{
    struct ts_err err;
    if (a->shards) {
        snprintf(db, len, "%s/shards", a->out);
        if (mkdir(db, 0777) && errno != EEXIST) {
            fprintf(stderr, "tessera plan size: %s: %s\n", db, strerror(errno));
            return -1;
        }
        snprintf(db, len, "%s/shards/shard-%d.db", a->out, a->shard);
        return 0;
    }
    snprintf(db, len, "%s/plan.db", a->out);
    if (plan_merge_shards(a->out, &err)) {
        fprintf(stderr, "tessera plan size: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int cli_plan_size(int argc, char **argv)
{
    if (cli_help_asked(argc, argv)) {
        size_usage();
        return 0;
    }
    struct plan_args a;
    if (cli_plan_parse(argc, argv, true, &a)) {
        cli_plan_args_free(&a);
        return EXIT_USAGE;
    }
    struct ts_err err;
    int rc = EXIT_USAGE;
    struct space sp = {.total = 1};
    struct prices pr;
    struct cand *c = NULL, **order = NULL;
    long *todo = NULL;
    char prices_path[CFG_PATH + 64], key[24], db[CFG_PATH + 64];
    snprintf(prices_path, sizeof prices_path, "%s", a.prices ? a.prices : TS_SRCDIR "/sim/data/prices.csv");
    if (a.rps <= 0 || !a.space) {
        fprintf(stderr, "tessera plan size: %s is required\n", a.rps <= 0 ? "--rps R (the load)" : "--space FILE");
        goto done;
    }
    if ((a.slurm || a.shards) && !a.out) {
        fprintf(stderr, "tessera plan size: %s needs --out DIR (where the shards meet)\n", a.slurm ? "--slurm" : "--shard");
        goto done;
    }
    if (a.slurm && a.shards) {
        fprintf(stderr, "tessera plan size: --slurm writes the shards' script; --shard is what it runs\n");
        goto done;
    }
    FILE *f = fopen(a.space, "r");
    if (!f) {
        fprintf(stderr, "tessera plan size: --space %s: %s\n", a.space, strerror(errno));
        goto done;
    }
    const int bad = cli_text_lines(f, a.space, plan_space_line, &sp, &err);
    fclose(f);
    if (bad || prices_read(prices_path, &pr, &err)) {
        fprintf(stderr, "tessera plan size: %s\n", err.msg);
        goto done;
    }
    if (space_check(&a, &sp))
        goto done;
    plan_digest(&a, key, sizeof key);
    bool resume = false;
    if (a.out && plan_out_ready(a.out, key, a.force && !a.shards, &resume))
        goto done;
    if (a.slurm) {
        const int tasks = (int)TS_MIN((long)(a.jobs > 0 ? a.jobs : 32), sp.total);
        if (plan_write_sbatch(a.out, argc, argv, tasks, &err)) {
            fprintf(stderr, "tessera plan size: --out %s: %s\n", a.out, err.msg);
            rc = 1;
            goto done;
        }
        printf("tessera plan size: %ld candidates in %d shards: sbatch %s/plan.sbatch; then this command again without "
               "--slurm merges and ranks them\n", sp.total, tasks, a.out);
        rc = 0;
        goto done;
    }
    if (a.out && plan_db_ready(&a, db, sizeof db)) {
        rc = 1;
        goto done;
    }
    c = xcalloc((size_t)sp.total, sizeof *c);
    for (long i = 0; i < sp.total; i++)
        c[i].status = -1;
    const long held = a.out ? plan_read_back(db, key, c, sp.total, &err) : 0;
    if (held < 0) { /* (a database not tessera's, or rows no plan writes: bad input) */
        fprintf(stderr, "tessera plan size: %s\n", err.msg);
        rc = EXIT_USAGE;
        goto done;
    }
    todo = xcalloc((size_t)sp.total, sizeof *todo);
    long n = 0;
    for (long i = 0; i < sp.total; i++)
        if (c[i].status < 0 && (!a.shards || i % a.shards == a.shard - 1))
            todo[n++] = i;
    struct sim_config base;
    if (plan_config_of(&a, &sp, 0, &base))
        goto done;
    if (held > 0 && base.progress)
        fprintf(stderr, "tessera plan: %ld candidates sized before, kept (%s)\n", held, db);
    const int jobs = a.jobs > 0 ? a.jobs : (int)TS_MAX(sysconf(_SC_NPROCESSORS_ONLN), 1);
    struct keeper keep = {.a = &a, .sp = &sp, .db = db, .key = key};
    const double t0 = ts_wall_s();
    if (size_all(&a, &sp, todo, n, jobs, base.progress, c, a.out ? plan_keep_one : NULL, &keep)) {
        fprintf(stderr, "tessera plan size: a worker died, or a candidate could not be kept, before all were sized%s\n",
                a.out ? " (run the command again: the plan goes on)" : "");
        rc = 1;
        goto done;
    }
    const double wall = ts_wall_s() - t0;
    if (a.shards) {
        printf("tessera plan size: shard %d/%d: %ld candidates sized in %.1f s, %ld before, into %s\n", a.shard, a.shards,
               n, wall, held, db);
        rc = 0;
        goto done;
    }
    price_all(&a, &pr, c, sp.total);
    order = xcalloc((size_t)sp.total, sizeof *order);
    for (long i = 0; i < sp.total; i++)
        order[i] = &c[i];
    qsort(order, (size_t)sp.total, sizeof *order, by_cost);
    print_plan(&a, &sp, &pr, order, sp.total, wall, (int)TS_MIN((long)jobs, TS_MAX(n, 1)), held);
    if (a.confidence > 0 && plan_ranked(order[0]))
        print_robust(&a, &sp, order[0]);
    rc = a.out ? plan_write_out(&a, &sp, c, order, key) : 0;
done:
    free(todo);
    free(order);
    free(c);
    plan_space_free(&sp);
    cli_plan_args_free(&a);
    return rc;
}
