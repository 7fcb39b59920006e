/*
 * cli_plan_out.c: tessera plan size's folder (--out DIR): the plan's key, its database (a candidate a
 * run, written as each is sized, read back when the plan goes on), a Slurm array's shards merged into
 * it, and the ranked plan's files (plan.csv, a run file a candidate, the front's figure).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_plan_size.h"
#include "whole.h"

static const char *const cand_status_names[] = {"sized", "no-rate", "too-many", "unbuilt", "error"};
_Static_assert(sizeof cand_status_names / sizeof *cand_status_names == CAND_ERROR + 1, "a name a status");

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
        plan_label_of(sp, c->index, label, sizeof label);
        for (char *q = label; *q; q++) /* (a label holds words; a comma or quote would split its field) */
            if (*q == ',' || *q == '"')
                *q = ';';
        const char *status = plan_ranked(c) ? "ranked" : c->status == CAND_SIZED ? (c->price > 0 ? "under-floor" : "unpriced")
                             : c->status == CAND_NO_RATE ? "no-rate" : c->status == CAND_TOO_MANY ? "too-many"
                             : c->status == CAND_UNBUILT ? "unbuilt" : "error";
        fprintf(w.f, "%d,%s,%s,%.6g,%.6g,%d,%d,%.6g,%.6g,%.6g,%.6g,%s,%s,%d,runs/candidate-%ld.run\n",
                plan_ranked(c) ? ++rank : 0, label, status, c->usd_h, c->usd_mtok, c->r.replicas, c->r.gpus, c->r.rps_per_replica, c->r.p99_s,
                c->r.mean_s, c->r.accuracy, c->r.accuracy_task, c->r.known, c->front, c->index + 1);
    }
    return ts_whole_close(&w, ferror(w.f) != 0, err);
}

/* Candidate c's configuration as the plan runs it: at its replicas and the load. */
static int cand_config(const struct plan_args *a, const struct space *sp, const struct cand *c, struct sim_config *cfg)
{
    if (plan_config_of(a, sp, c->index, cfg))
        return -1;
    cfg->rps = a->rps;
    cfg->replicas = TS_MAX(c->r.replicas, 1);
    return 0;
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
        if (cand_config(a, sp, &c[i], &cfg))
            return ts_fail(err, "candidate %ld: its options do not parse", c[i].index + 1);
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

/* --- the plan's folder and database -------------------------------------------------------------- */

/* The plan's digest: FNV-1a over what sizes its candidates (tessera's version, the load, the SLO, the
 * search, the replicas' limit, tessera sim's options and the space file's text), as 16 hex digits; the
 * files the options name are read as they are at each run. Its prices, accuracy floor
 * and --jobs rank the candidates or share out the work, and are not in it: changed, a plan goes on. */
void plan_digest(const struct plan_args *a, char *out, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    char text[1024], slo[512];
    snprintf(text, sizeof text, "version=%s rps=%.17g slo=%s tol=%.17g start=%.17g max=%.17g min=%.17g early=%d replicas=%d",
             ts_version(), a->rps, plan_slo_text(&a->slo, slo, sizeof slo), a->search.tolerance, a->search.start_rps,
             a->search.max_rps, a->search.min_rps, a->early, a->max_replicas);
#define MIX(c) (h = (h ^ (unsigned char)(c)) * 1099511628211ULL)
    for (const char *q = text; *q; q++)
        MIX(*q);
    for (int i = 1; i < a->nrest; i++) {
        MIX('\x1f');
        for (const char *q = a->rest[i]; *q; q++)
            MIX(*q);
    }
    MIX('\x1e');
    FILE *f = fopen(a->space, "r");
    for (int ch; f && (ch = getc(f)) != EOF;)
        MIX(ch);
    if (f)
        fclose(f);
#undef MIX
    snprintf(out, len, "%016llx", (unsigned long long)h);
}

static bool dir_empty(const char *dir)
{
    DIR *d = opendir(dir);
    bool empty = true;
    for (struct dirent *de; d && (de = readdir(d));)
        empty = empty && (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
    if (d)
        closedir(d);
    return empty;
}

/* Removes the plan's database and its shards' from dir (a plan started over). */
static void plan_files_remove(const char *dir)
{
    char path[CFG_PATH + 64];
    snprintf(path, sizeof path, "%s/plan.db", dir);
    db_remove(path);
    snprintf(path, sizeof path, "%s/shards", dir);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));) {
        if (strncmp(de->d_name, "shard-", 6) != 0)
            continue;
        char f[CFG_PATH + 384];
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        unlink(f);
    }
    if (d)
        closedir(d);
}

/* --out DIR made ready for the plan `key`: a missing or empty folder gets DIR/plan.key; one whose
 * plan.key names this plan goes on with it (*resume); another plan's, or a folder of other files, only
 * with force, which starts the plan over. 0, or EXIT_USAGE said. */
int plan_out_ready(const char *dir, const char *key, bool force, bool *resume)
{
    *resume = false;
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera plan size: --out %s is not a folder\n", dir);
        return EXIT_USAGE;
    }
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
        fprintf(stderr, "tessera plan size: --out %s: %s\n", dir, strerror(errno));
        return EXIT_USAGE;
    }
    char path[CFG_PATH + 32], held[64] = "";
    snprintf(path, sizeof path, "%s/plan.key", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(held, sizeof held, f))
            held[0] = '\0';
        held[strcspn(held, "\n")] = '\0';
        fclose(f);
    }
    if (held[0] && strcmp(held, key) == 0 && !force) {
        *resume = true;
        return 0;
    }
    if (!dir_empty(dir) && !force) {
        fprintf(stderr, "tessera plan size: --out %s holds %s (--force starts this plan over in it)\n", dir,
                held[0] ? "another plan (its plan.key differs: another load, SLO, search, option or space)"
                        : "files of something else");
        return EXIT_USAGE;
    }
    plan_files_remove(dir);
    struct ts_whole w;
    struct ts_err err;
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, &err) ||
        (fprintf(w.f, "%s\n", key), ts_whole_close(&w, ferror(w.f) != 0, &err))) {
        fprintf(stderr, "tessera plan size: %s\n", err.msg);
        return EXIT_USAGE;
    }
    return 0;
}



int plan_keep_one(void *ctx, const struct cand *c)
{
    struct keeper *k = ctx;
    struct sim_config cfg;
    struct db_plan_row r = c->r;
    snprintf(r.plan, sizeof r.plan, "%s", k->key);
    r.candidate = c->index + 1;
    snprintf(r.status, sizeof r.status, "%s", cand_status_names[c->status]);
    plan_label_of(k->sp, c->index, r.label, sizeof r.label);
    struct db_out *o = NULL;
    const int rc = cand_config(k->a, k->sp, c, &cfg) ? ts_fail(&k->err, "candidate %ld: its options do not parse", c->index + 1)
                   : db_out_open(k->db, DB_APPEND, &o, &k->err) ? -1
                   : db_out_commit_plan(o, &cfg, c->confirmed ? &c->m : NULL, &r, &k->err);
    db_out_close(o);
    if (rc)
        fprintf(stderr, "\ntessera plan size: %s\n", k->err.msg);
    return rc;
}

/* A candidate the database holds, back into cands (by its place in the space). */
struct reader {
    struct cand *c;
    long total, got;
    const char *path;
    struct ts_err *err;
};

static int read_one(void *ctx, const struct db_plan_row *row)
{
    struct reader *rd = ctx;
    if (row->candidate > rd->total)
        return ts_fail(rd->err, "%s: plan_candidates: candidate %lld of a space of %ld", rd->path, (long long)row->candidate,
                       rd->total);
    int status = -1;
    for (size_t i = 0; i < TS_ARRAY_LEN(cand_status_names); i++)
        if (strcmp(row->status, cand_status_names[i]) == 0)
            status = (int)i;
    if (status < 0)
        return ts_fail(rd->err, "%s: plan_candidates: candidate %lld: status '%.40s' is none a plan writes", rd->path,
                       (long long)row->candidate, row->status);
    if (status == CAND_SIZED && !(row->replicas >= 1 && row->gpus >= 1 && isfinite(row->rps_per_replica) &&
                                  row->rps_per_replica > 0 && isfinite(row->p99_s) && isfinite(row->mean_s)))
        return ts_fail(rd->err, "%s: plan_candidates: candidate %lld: a sized candidate without its replicas, GPUs, "
                                "capacity or latencies (replicas %d, gpus %d)", rd->path, (long long)row->candidate,
                       row->replicas, row->gpus);
    struct cand *c = &rd->c[row->candidate - 1];
    if (c->status >= 0) /* (a candidate twice: the first kept) */
        return 0;
    memset(c, 0, sizeof *c);
    c->index = (long)row->candidate - 1, c->status = status, c->r = *row, c->kept = true;
    rd->got++;
    return 0;
}

/* The candidates the database at path holds for plan key, into c (status -1: not held); how many. */
long plan_read_back(const char *path, const char *key, struct cand *c, long total, struct ts_err *err)
{
    if (access(path, F_OK) != 0)
        return 0;
    struct reader rd = {c, total, 0, path, err};
    return db_plan_read(path, key, read_one, &rd, err) ? -1 : rd.got;
}

/* The shards' databases (DIR/shards/shard-*.db, a Slurm array's) merged into DIR/plan.db. */
int plan_merge_shards(const char *dir, struct ts_err *err)
{
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/shards", dir);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    char **in = NULL;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        const size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "shard-", 6) != 0 || len < 4 || strcmp(de->d_name + len - 3, ".db") != 0)
            continue;
        in = xrealloc(in, (size_t)(n + 1) * sizeof *in);
        in[n] = xmalloc(strlen(path) + len + 2);
        sprintf(in[n++], "%s/%s", path, de->d_name);
    }
    closedir(d);
    int64_t runs = 0, already = 0;
    char out[CFG_PATH + 32];
    snprintf(out, sizeof out, "%s/plan.db", dir);
    const int rc = n ? db_merge(out, (const char *const *)in, n, &runs, &already, err) : 0;
    for (int i = 0; i < n; i++)
        free(in[i]);
    free(in);
    return rc;
}

/* --slurm: DIR/plan.sbatch, a job array of `tasks` shards, each this command sizing every tasks-th
 * candidate into DIR/shards/shard-K.db (--shard K/tasks, --jobs 1); the same command run again
 * without --slurm merges them and ranks the plan. */
int plan_write_sbatch(const char *dir, int argc, char **argv, int tasks, struct ts_err *err)
{
    char exe[CFG_PATH], cwd[CFG_PATH], path[CFG_PATH + 32];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || n >= (ssize_t)sizeof exe - 1 || !getcwd(cwd, sizeof cwd))
        return ts_fail(err, "cannot name this program or the working folder: %s", strerror(errno));
    exe[n] = '\0';
    snprintf(path, sizeof path, "%s/plan.sbatch", dir);
    struct ts_whole w;
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
        return -1;
    fprintf(w.f, "#!/usr/bin/env bash\n#SBATCH --job-name=tessera-plan\n#SBATCH --array=1-%d\n", tasks);
    fprintf(w.f, "# task K of %d sizes candidates K, K + %d, K + %d, ... into shards/shard-K.db of the plan's folder;\n"
                 "# afterwards the same tessera plan size command without --slurm merges them and ranks the plan\n",
            tasks, tasks, 2 * tasks);
    fputs("cd ", w.f);
    cli_shell_quote(w.f, cwd);
    fputs(" || exit 1\nexec ", w.f);
    cli_shell_quote(w.f, exe);
    fputs(" plan size", w.f);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--slurm") == 0 || strcmp(argv[i], "--force") == 0)
            continue;
        if (strcmp(argv[i], "--jobs") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--jobs=", 7) == 0)
            continue;
        fputc(' ', w.f);
        cli_shell_quote(w.f, argv[i]);
    }
    fprintf(w.f, " --jobs 1 --shard \"$SLURM_ARRAY_TASK_ID/%d\"\n", tasks);
    return ts_whole_close(&w, ferror(w.f) != 0, err);
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

/* The ranked plan's files: plan.csv, the run files and the figure, and its ranks in plan.db. */
int plan_write_out(const struct plan_args *a, const struct space *sp, struct cand *c, struct cand *const *order,
                     const char *key)
{
    struct ts_err err;
    char db[CFG_PATH + 32];
    snprintf(db, sizeof db, "%s/plan.db", a->out);
    struct db_plan_rank *rk = xcalloc((size_t)sp->total, sizeof *rk);
    for (long i = 0, rank = 0; i < sp->total; i++) {
        const struct cand *x = order[i];
        rk[i] = (struct db_plan_rank){x->index + 1, x->usd_h, x->usd_mtok, plan_ranked(x) ? (int)++rank : 0, x->front};
    }
    const int bad = write_csv(a->out, sp, order, sp->total, &err) || write_runs(a->out, a, sp, c, sp->total, &err) ||
                    db_plan_set_ranks(db, key, rk, sp->total, &err);
    free(rk);
    if (bad) {
        fprintf(stderr, "tessera plan size: --out %s: %s\n", a->out, err.msg);
        return 1;
    }
    const bool drawn = draw(a->out);
    printf("\n  written       %s/plan.db, plan.csv, runs/candidate-N.run (tessera sim --config FILE runs one)%s\n", a->out,
           drawn ? ", pareto.png" : "");
    return 0;
}
