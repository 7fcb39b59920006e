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
#include "cli_plan.h"
#include "gpu.h"
#include "model.h"
#include "plan.h"
#include "presets.h"
#include "setup.h"
#include "whole.h"

#define SPACE_LINES 16
#define SPACE_VALUES 64
#define SPACE_MAX 10000 /* candidates */

/* --- the space -------------------------------------------------------------------------------- */

struct space {
    int n;                                  /* lines */
    char name[SPACE_LINES][64];             /* --NAME */
    char *value[SPACE_LINES][SPACE_VALUES];
    int count[SPACE_LINES];
    long total;                             /* candidates */
};

/* The options a space may not vary: the plan's own, or what it sets itself. */
static const char *const space_refused[] = {"--replicas", "--rps", "--db", "--append", "--replace", "--executor",
                                            "--interval", "--interval-runs", "--config", "--fleet", "--autoscale",
                                            "--json", "--json-wall", "--quiet", "--progress", "--slo"};

static int space_line(void *ctx, const char *path, int line, char *text, struct ts_err *err)
{
    struct space *sp = ctx;
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    if (!tok)
        return 0;
    if (strncmp(tok, "--", 2) != 0 || !tok[2])
        return ts_fail(err, "%s:%d: '%s' is not an option (a line is --NAME VALUE...)", path, line, tok);
    const char *opt = cli_sim_option(tok);
    if (!opt)
        return ts_fail(err, "%s:%d: %s: not an option of tessera sim (or an abbreviation of several)", path, line, tok);
    for (size_t i = 0; i < TS_ARRAY_LEN(space_refused); i++)
        if (strcmp(opt, space_refused[i] + 2) == 0)
            return ts_fail(err, "%s:%d: --%s: a plan sets it itself or takes it on its command line, not from the space",
                           path, line, opt);
    for (int i = 0; i < sp->n; i++)
        if (strcmp(sp->name[i] + 2, opt) == 0)
            return ts_fail(err, "%s:%d: --%s: a second line for it", path, line, opt);
    if (sp->n == SPACE_LINES)
        return ts_fail(err, "%s:%d: more than %d lines", path, line, SPACE_LINES);
    const int k = sp->n;
    snprintf(sp->name[k], sizeof sp->name[k], "--%s", opt);
    for (tok = strtok_r(NULL, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (sp->count[k] == SPACE_VALUES)
            return ts_fail(err, "%s:%d: --%s: more than %d values", path, line, opt, SPACE_VALUES);
        sp->value[k][sp->count[k]++] = xstrdup(tok);
    }
    if (sp->count[k] == 0)
        return ts_fail(err, "%s:%d: --%s: no value", path, line, opt);
    sp->n++;
    sp->total *= sp->count[k];
    if (sp->total > SPACE_MAX)
        return ts_fail(err, "%s:%d: more than %d candidates", path, line, SPACE_MAX);
    return 0;
}

static void space_free(struct space *sp)
{
    for (int i = 0; i < sp->n; i++)
        for (int j = 0; j < sp->count[i]; j++)
            free(sp->value[i][j]);
}

/* Candidate i's value index on line k (the last line varying fastest, as exp sweep's). */
static int value_at(const struct space *sp, long i, int k)
{
    long stride = 1;
    for (int j = sp->n - 1; j > k; j--)
        stride *= sp->count[j];
    return (int)(i / stride % sp->count[k]);
}

/* Candidate i's label ("gpu=h100 threshold=0.9") into buf. */
static const char *label_of(const struct space *sp, long i, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < sp->n; k++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s=%s", k ? " " : "", sp->name[k] + 2,
                 sp->value[k][value_at(sp, i, k)]);
    return buf;
}

/* Candidate i's configuration: the command line's sim options, then its values. 0, or the parser's
 * nonzero (said on stderr by it). */
static int config_of(const struct plan_args *a, const struct space *sp, long i, struct sim_config *c)
{
    char **argv = xcalloc((size_t)a->nrest + 2 * (size_t)sp->n + 1, sizeof *argv);
    int n = 0;
    for (int j = 0; j < a->nrest; j++)
        argv[n++] = a->rest[j];
    for (int k = 0; k < sp->n; k++) {
        argv[n++] = (char *)sp->name[k];
        argv[n++] = sp->value[k][value_at(sp, i, k)];
    }
    const int rc = cli_sim_parse(n, argv, c);
    free(argv);
    return rc;
}

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

enum cand_status { CAND_SIZED, CAND_NO_RATE, CAND_TOO_MANY, CAND_UNBUILT, CAND_ERROR };
struct cand {
    long index;
    int status;
    char why[640];
    double cap_rps, cap_failed;   /* one replica's */
    int replicas, gpus, probes;
    double p99_s, mean_s, within; /* at the load, the fleet confirmed */
    double content_tok_s, mean_power_w;
    double accuracy;              /* < 0: none published */
    char acc_task[32], known[16], gpu[CFG_STR];
    int64_t request_steps;
    double wall_s;
    /* the parent's: */
    double price, usd_h, usd_mtok;
    bool floor_ok, front;
};

static void size_one(const struct plan_args *a, const struct space *sp, long i, struct cand *out)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    out->accuracy = -1;
    struct sim_config c;
    struct ts_err err;
    const double t0 = ts_wall_s();
    if (config_of(a, sp, i, &c)) {
        out->status = CAND_ERROR;
        snprintf(out->why, sizeof out->why, "its options do not parse");
        return;
    }
    c.progress = false, c.quiet = true;
    snprintf(out->gpu, sizeof out->gpu, "%s", c.gpu);
    char known[512];
    sim_known(&c, known, sizeof known);
    snprintf(out->known, sizeof out->known, "%.*s", (int)strcspn(known, ": "), known);
    out->gpus = TS_MAX(c.tp, 1) * TS_MAX(c.ep, 1);
    struct sim *s = sim_create(&c, &err); /* (a card the model does not fit, a pricing it lacks: said, not sized) */
    if (!s) {
        out->status = CAND_UNBUILT;
        snprintf(out->why, sizeof out->why, "%s", err.msg);
        return;
    }
    sim_destroy(s);
    struct plan_args one = *a;
    one.confidence = 0;
    struct sim_config rep = c;
    rep.replicas = 1;
    struct plan_result r;
    if (cli_plan_capacity_of(&rep, &one, &r, &err)) {
        out->status = CAND_ERROR;
        snprintf(out->why, sizeof out->why, "%s", err.msg);
        free(r.runs);
        return;
    }
    out->cap_rps = r.point.rps, out->cap_failed = r.point.failed_rps, out->probes = r.nruns;
    out->request_steps = r.request_steps;
    free(r.runs);
    if (out->cap_rps == 0) {
        out->status = CAND_NO_RATE;
        snprintf(out->why, sizeof out->why, "holds the SLO at no rate down to %g req/s", a->search.min_rps);
        return;
    }
    /* the fewest replicas the capacity says carry the load, then confirmed by a run of the fleet */
    int n = (int)ceil(a->rps / out->cap_rps - 1e-9);
    n = TS_MAX(n, 1);
    struct plan_run run;
    for (;; n++) {
        if (n > a->max_replicas) {
            out->status = CAND_TOO_MANY;
            snprintf(out->why, sizeof out->why, "needs more than %d replicas (one carries %.3g req/s)", a->max_replicas,
                     out->cap_rps);
            return;
        }
        struct sim_config f = c;
        f.replicas = n, f.rps = a->rps;
        if (plan_judge(&f, &a->slo, true, &run, &err)) {
            out->status = CAND_ERROR;
            snprintf(out->why, sizeof out->why, "%d replicas at %g req/s: %s", n, a->rps, err.msg);
            return;
        }
        out->probes++;
        out->request_steps += run.request_steps;
        if (run.held)
            break;
    }
    out->replicas = n;
    out->gpus *= n;
    out->p99_s = run.m.lat_p99_s, out->mean_s = run.m.lat_mean_s;
    out->within = NAN;
    for (int k = 0; k < a->slo.n && isnan(out->within); k++)
        if (a->slo.t[k].kind == TERM_SHARE)
            out->within = run.value[k];
    out->content_tok_s = run.m.content_tok_s, out->mean_power_w = run.m.mean_power_w;
    out->accuracy = run.m.expected_accuracy;
    snprintf(out->acc_task, sizeof out->acc_task, "%s", run.m.accuracy_task);
    out->wall_s = ts_wall_s() - t0;
}

/* Sizes candidates [0, total) in `jobs` processes, each writing its candidates' records to a pipe; the
 * parent collects them into out (by index) with a line of progress. -1 where a worker dies. */
static int size_all(const struct plan_args *a, const struct space *sp, int jobs, bool progress, struct cand *out)
{
    const long total = sp->total;
    jobs = (int)TS_MIN((long)jobs, total);
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
            for (long i = w; i < total; i += jobs) {
                struct cand c;
                size_one(a, sp, i, &c);
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
            TS_ASSERT(buf[w].index >= 0 && buf[w].index < total);
            out[buf[w].index] = buf[w];
            got++;
            if (progress) {
                const double took = ts_wall_s() - t0;
                fprintf(stderr, "\rtessera plan: %ld/%ld candidates sized, %.0f s%s", got, total, took,
                        got < total ? (took > 2 ? ", about " : "") : "\n");
                if (got < total && took > 2)
                    fprintf(stderr, "%.0f s left   ", took * (double)(total - got) / (double)got);
            }
        }
    }
    for (int w = 0; w < jobs; w++) {
        int st;
        waitpid(pid[w], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = -1;
    }
    if (got != total)
        rc = -1;
    free(pf), free(have), free(buf), free(fd), free(pid);
    return rc;
}

/* --- the ranking ------------------------------------------------------------------------------ */

static bool ranked(const struct cand *c) { return c->status == CAND_SIZED && c->price > 0 && c->floor_ok; }

static int by_cost(const void *x, const void *y)
{
    const struct cand *a = *(const struct cand *const *)x, *b = *(const struct cand *const *)y;
    if (ranked(a) != ranked(b))
        return ranked(a) ? -1 : 1;
    if (a->usd_h != b->usd_h)
        return a->usd_h < b->usd_h ? -1 : 1;
    if (a->p99_s != b->p99_s)
        return a->p99_s < b->p99_s ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Whether a is at least as good as b in cost, p99 at the load and accuracy, and better in one. */
static bool dominates(const struct cand *a, const struct cand *b)
{
    return a->usd_h <= b->usd_h && a->p99_s <= b->p99_s && a->accuracy >= b->accuracy &&
           (a->usd_h < b->usd_h || a->p99_s < b->p99_s || a->accuracy > b->accuracy);
}

static void price_all(const struct plan_args *a, const struct prices *pr, struct cand *c, long n)
{
    for (long i = 0; i < n; i++) {
        struct cand *x = &c[i];
        x->price = price_of(pr, x->gpu);
        x->floor_ok = !a->acc_task[0] ||
                      (ts_name_eq(x->acc_task, a->acc_task) && x->accuracy >= 0 && x->accuracy >= a->acc_min);
        if (x->status != CAND_SIZED)
            continue;
        x->usd_h = x->gpus * x->price + x->mean_power_w * 1e-3 * a->kwh_price;
        x->usd_mtok = x->content_tok_s > 0 ? x->usd_h / (x->content_tok_s * 3600 * 1e-6) : NAN;
    }
    for (long i = 0; i < n; i++) {
        c[i].front = ranked(&c[i]);
        for (long j = 0; j < n && c[i].front; j++)
            c[i].front = !(j != i && ranked(&c[j]) && dominates(&c[j], &c[i]));
    }
}

static void print_plan(const struct plan_args *a, const struct space *sp, const struct prices *pr,
                       struct cand *const *order, long n, double wall_s, int jobs)
{
    char slo[512], label[1024];
    int64_t steps = 0;
    for (long i = 0; i < n; i++)
        steps += order[i]->request_steps;
    printf("tessera plan size: %g req/s within %s, not overloaded%s%s%s\n", a->rps,
           plan_slo_text(&a->slo, slo, sizeof slo), a->acc_task[0] ? ", accuracy on " : "",
           a->acc_task[0] ? a->acc_task : "", a->acc_task[0] ? (snprintf(label, sizeof label, " at least %g%%", a->acc_min), label) : "");
    printf("  space         %s: %ld candidates, sized in %.1f s by %d jobs (%.3g M simulated request-steps, %.3g M/s)\n",
           a->space, n, wall_s, jobs, (double)steps * 1e-6, wall_s > 0 ? (double)steps * 1e-6 / wall_s : 0);
    printf("  prices        %s (GPU-hours)%s\n", pr->path,
           a->kwh_price > 0 ? (snprintf(label, sizeof label, ", energy at %g USD/kWh", a->kwh_price), label) : ", energy not priced");
    printf("\n  rank  $/hour  $/M tok  replicas  gpus  req/s a replica  p99 at load  accuracy  known      candidate\n");
    int rank = 0;
    char tasks[512] = "";
    for (long i = 0; i < n; i++) {
        const struct cand *c = order[i];
        if (!ranked(c))
            continue;
        char acc[48] = "-";
        if (c->accuracy >= 0)
            snprintf(acc, sizeof acc, "%.1f%%", c->accuracy);
        if (c->accuracy >= 0 && !strstr(tasks, c->acc_task) && strlen(tasks) + strlen(c->acc_task) + 4 < sizeof tasks)
            snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s", tasks[0] ? "; " : "", c->acc_task);
        printf("  %4d%s %7.2f  %7.3f  %8d  %4d  %15.3g  %9.2f s  %8s  %-9s  %s\n", ++rank, c->front ? "*" : " ",
               c->usd_h, c->usd_mtok, c->replicas, c->gpus, c->cap_rps, c->p99_s, acc, c->known,
               label_of(sp, c->index, label, sizeof label));
    }
    if (rank == 0)
        printf("  (none: no candidate serves the load within the SLO%s)\n", a->acc_task[0] ? " at the accuracy floor" : "");
    else
        printf("  (* on the front: no other candidate is as cheap, as fast at the load and as accurate, and better in one;\n"
               "   accuracy: the decoder's published score on %s, not simulated)\n", tasks[0] ? tasks : "(none published)");
    bool head = false;
    for (long i = 0; i < n; i++) {
        const struct cand *c = order[i];
        if (ranked(c))
            continue;
        if (!head)
            printf("\n  not ranked\n");
        head = true;
        char why[CFG_PATH + 1024];
        if (c->status != CAND_SIZED)
            snprintf(why, sizeof why, "%s", c->why);
        else if (c->price <= 0)
            snprintf(why, sizeof why, "%d replicas serve it, but %s has no price in %s", c->replicas, c->gpu, pr->path);
        else if (c->accuracy < 0 || !ts_name_eq(c->acc_task, a->acc_task))
            snprintf(why, sizeof why, "its decoder publishes no accuracy on %s", a->acc_task);
        else
            snprintf(why, sizeof why, "accuracy %.1f%% on %s, under the floor", c->accuracy, c->acc_task);
        printf("    %s: %s\n", label_of(sp, c->index, label, sizeof label), why);
    }
}

/* --- outputs ---------------------------------------------------------------------------------- */

static int write_csv(const char *dir, const struct space *sp, struct cand *const *order, long n, struct ts_err *err)
{
    char path[CFG_PATH + 32], label[1024];
    snprintf(path, sizeof path, "%s/plan.csv", dir);
    struct ts_whole w;
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
        return -1;
    fprintf(w.f, "rank,candidate,status,usd_per_hour,usd_per_mtok,replicas,gpus,rps_per_replica,p99_s,mean_s,"
                 "accuracy,accuracy_task,known,front,run_file\n");
    int rank = 0;
    for (long i = 0; i < n; i++) {
        const struct cand *c = order[i];
        label_of(sp, c->index, label, sizeof label);
        for (char *q = label; *q; q++) /* (a label holds words; a comma or quote would split its field) */
            if (*q == ',' || *q == '"')
                *q = ';';
        const char *status = ranked(c) ? "ranked" : c->status == CAND_SIZED ? (c->price > 0 ? "under-floor" : "unpriced")
                             : c->status == CAND_NO_RATE ? "no-rate" : c->status == CAND_TOO_MANY ? "too-many"
                             : c->status == CAND_UNBUILT ? "unbuilt" : "error";
        fprintf(w.f, "%d,%s,%s,%.6g,%.6g,%d,%d,%.6g,%.6g,%.6g,%.6g,%s,%s,%d,runs/candidate-%ld.run\n",
                ranked(c) ? ++rank : 0, label, status, c->usd_h, c->usd_mtok, c->replicas, c->gpus, c->cap_rps, c->p99_s,
                c->mean_s, c->accuracy, c->acc_task, c->known, c->front, c->index + 1);
    }
    return ts_whole_close(&w, ferror(w.f) != 0, err);
}

static int write_runs(const char *dir, const struct plan_args *a, const struct space *sp, const struct cand *c, long n,
                      struct ts_err *err)
{
    char path[CFG_PATH + 64];
    snprintf(path, sizeof path, "%s/runs", dir);
    if (mkdir(path, 0777) && errno != EEXIST)
        return ts_fail(err, "%s: %s", path, strerror(errno));
    for (long i = 0; i < n; i++) {
        struct sim_config cfg;
        if (config_of(a, sp, c[i].index, &cfg))
            return ts_fail(err, "candidate %ld: its options do not parse", c[i].index + 1);
        cfg.rps = a->rps;
        cfg.replicas = TS_MAX(c[i].replicas, 1);
        snprintf(path, sizeof path, "%s/runs/candidate-%ld.run", dir, c[i].index + 1);
        struct ts_whole w;
        if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
            return -1;
        const int bad = cli_runfile_write(&cfg, w.f, err);
        if (ts_whole_close(&w, bad != 0, err) || bad)
            return -1;
    }
    return 0;
}

/* --out DIR: missing or an empty folder, unless force; 0, or EXIT_USAGE said. */
static int out_dir_ok(const char *dir, bool force)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera plan size: --out %s is not a folder\n", dir);
        return EXIT_USAGE;
    }
    DIR *d = opendir(dir);
    bool empty = true;
    for (struct dirent *de; d && (de = readdir(d));)
        empty = empty && (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
    if (d)
        closedir(d);
    if (!empty && !force) {
        fprintf(stderr, "tessera plan size: --out %s is not empty (--force writes over it)\n", dir);
        return EXIT_USAGE;
    }
    return 0;
}

/* analysis/plan-plot.sh DIR: the front's figure (said where it cannot be drawn). */
static bool draw(const char *dir)
{
    const char *script = TS_SRCDIR "/analysis/plan-plot.sh";
    fflush(NULL);
    const pid_t p = fork();
    if (p == 0) {
        execlp("bash", "bash", script, dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (p > 0)
        waitpid(p, &st, 0);
    if (p >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return true;
    fprintf(stderr, "tessera plan size: no figure drawn (%s failed)\n", script);
    return false;
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
    char prices_path[CFG_PATH + 64];
    snprintf(prices_path, sizeof prices_path, "%s", a.prices ? a.prices : TS_SRCDIR "/sim/data/prices.csv");
    if (a.rps <= 0 || !a.space) {
        fprintf(stderr, "tessera plan size: %s is required\n", a.rps <= 0 ? "--rps R (the load)" : "--space FILE");
        goto done;
    }
    if (a.out && out_dir_ok(a.out, a.force)) /* (before any work) */
        goto done;
    FILE *f = fopen(a.space, "r");
    if (!f) {
        fprintf(stderr, "tessera plan size: --space %s: %s\n", a.space, strerror(errno));
        goto done;
    }
    const int bad = cli_text_lines(f, a.space, space_line, &sp, &err);
    fclose(f);
    if (bad || prices_read(prices_path, &pr, &err)) {
        fprintf(stderr, "tessera plan size: %s\n", err.msg);
        goto done;
    }
    /* every candidate checked before any is sized: a bad value stops the plan, naming it */
    char label[1024];
    for (long i = 0; i < sp.total; i++) {
        struct sim_config cfg;
        struct sim_setup setup;
        if (config_of(&a, &sp, i, &cfg)) {
            fprintf(stderr, "tessera plan size: candidate %ld (%s) does not parse\n", i + 1, label_of(&sp, i, label, sizeof label));
            goto done;
        }
        if (cli_plan_refuses(&cfg, &err) || sim_config_validate(&cfg, &setup, &err) || names_resolve(&cfg, &err)) {
            fprintf(stderr, "tessera plan size: candidate %ld (%s): %s\n", i + 1, label_of(&sp, i, label, sizeof label),
                    err.msg);
            goto done;
        }
    }
    struct sim_config base;
    if (config_of(&a, &sp, 0, &base))
        goto done;
    const int jobs = a.jobs > 0 ? a.jobs : (int)TS_MAX(sysconf(_SC_NPROCESSORS_ONLN), 1);
    c = xcalloc((size_t)sp.total, sizeof *c);
    const double t0 = ts_wall_s();
    if (size_all(&a, &sp, jobs, base.progress, c)) {
        fprintf(stderr, "tessera plan size: a worker died before sizing its candidates\n");
        rc = 1;
        goto done;
    }
    const double wall = ts_wall_s() - t0;
    price_all(&a, &pr, c, sp.total);
    order = xcalloc((size_t)sp.total, sizeof *order);
    for (long i = 0; i < sp.total; i++)
        order[i] = &c[i];
    qsort(order, (size_t)sp.total, sizeof *order, by_cost);
    print_plan(&a, &sp, &pr, order, sp.total, wall, (int)TS_MIN((long)jobs, sp.total));
    /* the cheapest, robust: the replicas its capacity at the interval's pessimistic end needs */
    if (a.confidence > 0 && ranked(order[0])) {
        struct sim_config best;
        config_of(&a, &sp, order[0]->index, &best);
        best.replicas = 1, best.progress = false;
        struct plan_result r;
        struct plan_args b = a;
        b.search.start_rps = order[0]->cap_rps;
        if (cli_plan_capacity_of(&best, &b, &r, &err)) {
            fprintf(stderr, "tessera plan size: the cheapest's robust capacity: %s\n", err.msg);
        } else if (r.unbounded[0]) {
            printf("\n  robust        the cheapest: not bounded (%s never measured for its setup)\n", r.unbounded);
        } else if (r.robust.rps > 0) {
            printf("\n  robust        the cheapest at %d%% confidence: %.3g req/s a replica, so %d replicas by capacity "
                   "(%d by the point)\n", a.confidence, r.robust.rps, (int)ceil(a.rps / r.robust.rps - 1e-9),
                   (int)ceil(a.rps / order[0]->cap_rps - 1e-9));
        } else {
            printf("\n  robust        the cheapest at %d%% confidence: holds the SLO at no rate\n", a.confidence);
        }
        free(r.runs);
    }
    rc = 0;
    if (a.out) {
        if ((mkdir(a.out, 0777) && errno != EEXIST && ts_fail(&err, "%s", strerror(errno))) ||
            write_csv(a.out, &sp, order, sp.total, &err) || write_runs(a.out, &a, &sp, c, sp.total, &err)) {
            fprintf(stderr, "tessera plan size: --out %s: %s\n", a.out, err.msg);
            rc = 1;
        } else {
            const bool drawn = draw(a.out);
            printf("\n  written       %s/plan.csv, %s/runs/candidate-N.run (tessera sim --config FILE runs one)%s%s%s\n",
                   a.out, a.out, drawn ? ", " : "", drawn ? a.out : "", drawn ? "/pareto.png" : "");
        }
    }
done:
    free(order);
    free(c);
    space_free(&sp);
    cli_plan_args_free(&a);
    return rc;
}
