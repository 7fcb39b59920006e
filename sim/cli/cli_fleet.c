/*
 * cli_fleet.c: `tessera sim --replicas N` and `tessera sim --fleet FILE`: replicas of the run behind
 * one router (sim/fleet/fleet.h). A fleet file holds replica groups, one a line: a count, then tessera sim
 * options over the command line's (the card, the system, the model, the TP degree...), '#' to the
 * end of a line a comment. Each group is parsed and built before the run; a bad one is refused
 * naming the file, the line and the option.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_fleet_live.h"
#include "config.h"
#include "db.h"
#include "decode.h"
#include "fleet.h"
#include "presets.h"
#include "sim.h"

#define FLEET_MAX 65536  /* replicas */
#define GROUP_ARGS 64    /* a group's options' words */

/* The options that describe the fleet itself or its workload, which a replica group may not set. */
static const char *const fleet_opts[] = {"--replicas", "--fleet", "--router", "--router-staleness", "--admit-max",
                                         "--autoscale", "--disagg", "--load-control", "--db", "--executor", "--trace", "--rps", "--requests",
                                         "--arrivals", "--lengths", "--seed", "--slo", "--json", "--json-wall"};

/* A replica's configuration from the fleet's: one instance, its results not stored on its own. */
static void as_replica(struct sim_config *c)
{
    c->replicas = 1;
    c->fleet[0] = '\0';
    c->db[0] = '\0';
    c->no_steps = true;
    c->json = false;
    c->progress = false;
}

/* Whether the group's configuration builds: the card, model, system and policy known, the TP degree
 * dividing the model's heads (sim_create_fed refuses what does not). */
static int group_builds(const struct sim_config *c, const char *where)
{
    struct ts_err err;
    struct sim *s = sim_create_fed(c, &err);
    if (!s) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return -1;
    }
    sim_destroy(s);
    return 0;
}

/* Whether this process may open the files n replicas keep (fleet_room), said on stderr where not. */
static int room(int n, const char *where)
{
    struct ts_err err;
    if (fleet_room(n, &err) == 0)
        return 0;
    fprintf(stderr, "%s: %s\n", where, err.msg);
    return -1;
}

/* Adds count copies of c to the fleet's configurations (*cfg, *n of them), where the fleet stays within
 * FLEET_MAX and the process's open files. */
static int add_group(struct sim_config **cfg, int *n, const struct sim_config *c, long count, const char *where)
{
    if (*n + count > FLEET_MAX) {
        fprintf(stderr, "%s: more than %d replicas in all\n", where, FLEET_MAX);
        return -1;
    }
    if (room(*n + (int)count, where))
        return -1;
    *cfg = xrealloc(*cfg, sizeof **cfg * (size_t)(*n + count));
    for (long i = 0; i < count; i++)
        (*cfg)[(*n)++] = *c;
    return 0;
}

/* One line of the fleet file (its comment cut): a group of replicas, or nothing. */
static int fleet_line(const char *cmd, const char *path, int line, char *text, int argc, char **argv,
                      struct sim_config **cfg, int *n)
{
    char where[CFG_PATH + 64];
    snprintf(where, sizeof where, "%s: %s:%d", cmd, path, line);
    char *words[GROUP_ARGS], *save = NULL;
    int nw = 0;
    for (char *w = strtok_r(text, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        if (nw == GROUP_ARGS) {
            fprintf(stderr, "%s: more than %d words in a replica group\n", where, GROUP_ARGS);
            return -1;
        }
        words[nw++] = w;
    }
    if (nw == 0)
        return 0;
    char *end = NULL;
    const long count = strtol(words[0], &end, 10);
    if (*end || count < 1 || count > FLEET_MAX) {
        fprintf(stderr, "%s: count: '%s' is not a number of replicas in 1..%d (a group is COUNT "
                        "then options)\n", where, words[0], FLEET_MAX);
        return -1;
    }
    /* each option as the parser resolves it, abbreviations too, and those of a run file it names */
    struct ts_err err;
    struct cli_args e;
    words[0] = "tessera";
    if (cli_runfile_expand(nw, words, &e, cli_sim_parse, cli_sim_option, &err)) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return -1;
    }
    const int ng = e.argv ? e.argc : nw;
    char **group = e.argv ? e.argv : words;
    for (int k = 1; k < ng; k++) {
        const char *name = cli_sim_option(group[k]);
        for (size_t j = 0; name && j < TS_ARRAY_LEN(fleet_opts); j++)
            if (strcmp(name, fleet_opts[j] + 2) == 0) {
                const int len = (int)strcspn(group[k], "=");
                const bool whole = len == (int)strlen(fleet_opts[j]);
                fprintf(stderr, "%s: %.*s%s%s%s: the fleet's option (or its workload's), not a replica "
                        "group's%s\n", where, len, group[k], whole ? "" : " (", whole ? "" : fleet_opts[j],
                        whole ? "" : ")", k <= e.owned ? " (its run file's)" : "");
                cli_args_free(&e);
                return -1;
            }
    }
    cli_args_free(&e);
    /* the command line's options, then the group's over them */
    char **args = xmalloc(sizeof *args * (size_t)(argc + nw));
    memcpy(args, argv, sizeof *args * (size_t)argc);
    memcpy(args + argc, words + 1, sizeof *args * (size_t)(nw - 1));
    args[argc + nw - 1] = NULL;
    struct sim_config c;
    const int rc = cli_sim_parse(argc + nw - 1, args, &c);
    free(args);
    if (rc) {
        fprintf(stderr, "%s: the replica group's options (said above)\n", where);
        return -1;
    }
    as_replica(&c);
    return group_builds(&c, where) || add_group(cfg, n, &c, count, where) ? -1 : 0;
}

/* What the lines of a fleet file add to: the command line, and the replicas so far. */
struct fleet_file {
    const char *cmd;
    int argc;
    char **argv;
    struct sim_config **cfg;
    int *n;
};

/* cli_text_lines' function: a line's replica group (fleet_line says what it refuses; err left empty) */
static int group_of_line(void *ctx, const char *path, int line, char *text, struct ts_err *err)
{
    struct fleet_file *ff = ctx;
    if (fleet_line(ff->cmd, path, line, text, ff->argc, ff->argv, ff->cfg, ff->n) == 0)
        return 0;
    err->msg[0] = '\0';
    return -1;
}

/* The fleet file's groups, a line each (cli_text_lines: a byte-order mark skipped and said; a NUL
 * byte, a line too long, or a group refused stops it, naming the line). */
static int read_fleet(const char *cmd, const char *path, int argc, char **argv, struct sim_config **cfg, int *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: --fleet %s: cannot open\n", cmd, path);
        return -1;
    }
    struct fleet_file ff = {cmd, argc, argv, cfg, n};
    struct ts_err err;
    int rc = cli_text_lines(f, path, group_of_line, &ff, &err);
    fclose(f);
    if (rc && err.msg[0])
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
    if (rc == 0 && *n == 0) {
        fprintf(stderr, "%s: %s: no replica group (a line: COUNT then tessera sim options)\n", cmd, path);
        rc = -1;
    }
    return rc;
}

void cli_fleet_describe(const struct sim_config *cfg, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && strcmp(cfg[j].gpu, cfg[i].gpu) == 0 && strcmp(cfg[j].model, cfg[i].model) == 0 &&
               strcmp(cfg[j].system, cfg[i].system) == 0 && strcmp(cfg[j].policy, cfg[i].policy) == 0 &&
               cfg[j].tp == cfg[i].tp)
            j++;
        char tp[24] = "";
        if (cfg[i].tp > 1)
            snprintf(tp, sizeof tp, " x %d", cfg[i].tp);
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%d x %s on %s%s (%s%s)", i ? ", " : "", j - i,
                 cfg[i].model, cfg[i].gpu, tp, cfg[i].system[0] ? "" : "policy ",
                 cfg[i].system[0] ? cfg[i].system : cfg[i].policy);
        i = j;
    }
}

static void print_fleet(const struct sim_config *base, const struct sim_config *cfg, const struct fleet_opts *opts,
                        const struct fleet_result *r, const struct cli_interval *iv)
{
    const struct sim_summary *m = &r->fleet;
    char what[4096];
    cli_fleet_describe(cfg, r->n, what, sizeof what);
    printf("tessera sim: a fleet of %d replicas behind router %s (its view at most %g s stale)\n", r->n, base->router,
           base->router_staleness);
    printf("  replicas      %s\n", what);
    char load[CFG_PATH + 256], known[512], said[512] = "";
    for (int i = 0; i < r->n; i++) { /* each group's system, as its replicas run it */
        if (strcmp(sim_known(&cfg[i], known, sizeof known), said) == 0)
            continue;
        printf("  known         %s%s%s\n", cfg[i].system, cfg[i].system[0] ? ": " : "", known);
        snprintf(said, sizeof said, "%s", known);
    }
    printf("  load          %s\n", cli_load_text(base, m, load, sizeof load));
    char refused[64] = "";
    if (base->admit_max > 0 && base->admit == ADMIT_DEFER)
        snprintf(refused, sizeof refused, " (%lld held back by --admit-max a while)", (long long)r->deferred);
    else if (base->admit_max > 0)
        snprintf(refused, sizeof refused, " (%lld refused by --admit-max)", (long long)r->refused);
    printf("  requests      %lld finished, %lld rejected%s, %lld preemptions (of %lld)\n", (long long)m->num_finished,
           (long long)m->num_rejected, refused, (long long)m->num_preemptions, (long long)m->num_requests);
    const double span = (double)m->makespan_ns * 1e-9;
    printf("  makespan      %.3f s over %lld steps of the replicas\n", span, (long long)m->num_steps);
    cli_print_beyond(m);
    printf("  throughput    %.1f generated tokens/s (%.1f content tokens/s, %.3f req/s)\n", m->throughput_tok_s,
           m->content_tok_s, m->req_s);
    cli_print_latency(m);
    cli_print_overload(m, "fleet");
    cli_print_sampler(m);
    printf("  first block   mean %.3f s after arrival; queueing mean %.3f s\n", m->ttfb_mean_s, m->queue_mean_s);
    printf("  energy        %.0f J: %.3f J a generated token, %.1f J a request; mean %.0f W (idle replicas "
           "included)\n", m->energy_j, m->energy_per_token_j, m->energy_per_request_j, m->mean_power_w);
    if (base->slo > 0)
        printf("  SLO           %.1f%% of requests finished within %.3f s of their arrival (--slo)\n",
               100.0 * m->slo_attainment, base->slo);
    if (m->expected_accuracy >= 0)
        printf("  accuracy      %.2f%% expected on %s: the replicas' decode profiles' published figures%s, weighted by "
               "the tokens each decoded; not simulated\n", m->expected_accuracy, m->accuracy_task,
               r->tau_swept ? " at the thresholds load control set (each profile's published sweep, between its points "
                              "on the line)" : "");
    else if (m->accuracy_task[0])
        printf("  accuracy      not known on %s: load control moved the decoders off their profiles' published "
               "setting, and their profiles publish no sweep of thresholds\n", m->accuracy_task);
    cli_print_prompt_cache(m);
    if (m->live_steps)
        printf("  live (gpu)    %lld steps on %d GPUs measured %.3f s; the %s cost model predicted %.3f s (%+.1f%%), "
               "per-step MAPE %.1f%%\n", (long long)m->live_steps, r->n, m->live_measured_s, cfg[0].cost,
               m->live_model_s, 100.0 * (m->live_model_s - m->live_measured_s) / m->live_measured_s,
               100.0 * m->live_abs_rel / (double)m->live_steps);
    if (r->refresh_pool > 0) {
        const struct fleet_link *l = &opts->disagg.link;
        char bw[48] = "each card's own";
        if (l->bw > 0)
            snprintf(bw, sizeof bw, "%.1f GB/s a GPU", l->bw / 1e9);
        printf("  pools         Refresh: replicas 0-%d, Reuse: %d-%d (--disagg %s); link %s: %s, %.0f us a move\n",
               r->refresh_pool - 1, r->refresh_pool, r->n - 1, opts->disagg.mode == DISAGG_EVERY ? "every" : "first",
               l->name, bw, l->lat_s * 1e6);
        printf("  moves         %lld (%lld with K/V), %.1f GB over the link; %.3f ms a move, %.3f ms of it queued\n",
               (long long)r->handoffs, (long long)r->handoffs_kv,
               r->moved_bytes / 1e9, r->handoffs ? 1e3 * r->xfer_s / (double)r->handoffs : 0,
               r->handoffs ? 1e3 * r->xfer_wait_s / (double)r->handoffs : 0);
        if (r->moves_live > 0)
            printf("  live moves    %lld copies of K/V between the engines measured %.3f ms each; the link's model "
                   "%.3f ms (%+.1f%%)\n", (long long)r->moves_live, 1e3 * r->move_live_s / (double)r->moves_live,
                   1e3 * r->move_model_s / (double)r->moves_live,
                   100.0 * (r->move_model_s - r->move_live_s) / r->move_live_s);
    }
    if (r->ntau > 0) {
        double lo = 1, tpf_lo = 0;
        for (int64_t k = 0; k < r->ntau; k++)
            if (r->tau[k].tau < lo)
                lo = r->tau[k].tau, tpf_lo = r->tau[k].tpf;
        printf("  threshold     %.2f down to %.2f (TPF %.2f there), %.3f mean over time, over %lld readings (--json: "
               "the %lld that show its changes)\n", r->tau0, lo, tpf_lo, r->tau_mean, (long long)r->tau_taken,
               (long long)r->ntau);
    }
    if (r->nscale > 0) {
        int lo = r->n, hi = 0;
        for (int64_t k = 0; k < r->nscale; k++)
            lo = TS_MIN(lo, r->scale[k].up), hi = TS_MAX(hi, r->scale[k].up);
        printf("  autoscaling   %d to %d replicas up (mean %.1f over %lld readings), %d started, %d drained (--json: "
               "the %lld readings that show the changes)\n", lo, hi, r->up_mean, (long long)r->scale_taken, r->started,
               r->stopped, (long long)r->nscale);
    }
    if (iv)
        cli_interval_print(iv, m, stdout);
    if (r->n > 32) {
        printf("  by replica    (%d replicas: --json gives each one's summary)\n", r->n);
        return;
    }
    /* routed: arrivals (a disaggregated fleet's moves are the moves line's); busy: of the replica's time up */
    printf("  by replica    %3s %-10s %-12s %8s %8s %9s %7s %9s\n", "#", "gpu", "system", "routed", "finished",
           "p99 (s)", "busy", "J/token");
    for (int i = 0; i < r->n; i++) {
        const struct sim_summary *s = &r->replica[i];
        printf("                %3d %-10s %-12s %8lld %8lld %9.3f %6.1f%% %9.3f%s%s\n", i, cfg[i].gpu,
               cfg[i].system[0] ? cfg[i].system : cfg[i].policy, (long long)r->routed[i],
               (long long)s->num_finished, s->lat_p99_s, r->active_s[i] > 0 ? 100.0 * s->busy_s / r->active_s[i] : 0,
               s->energy_per_token_j, r->refresh_pool == 0 ? "" : i < r->refresh_pool ? "  Refresh" : "  Reuse",
               s->overloaded ? "  overloaded" : "");
    }
}

static void print_fleet_json(const struct sim_config *base, const struct sim_config *cfg, const struct fleet_result *r,
                             const struct cli_interval *iv)
{
    /* a single run's keys, the fleet's merged summary, with the fleet's own and each replica's beside
     * them: a script written for single runs reads a fleet's */
    json_t *f = cli_summary_json(base, &r->fleet), *o = f, *reps = json_array();
    json_object_set_new(f, "num_replicas", json_integer(r->n));
    json_object_set_new(f, "router", json_string(base->router));
    json_object_set_new(f, "router_staleness_s", json_real(base->router_staleness));
    json_object_set_new(f, "refused", json_integer(r->refused));
    json_object_set_new(f, "deferred", json_integer(r->deferred));
    if (base->autoscale[0])
        json_object_set_new(f, "autoscale", json_string(base->autoscale));
    if (base->load_control[0])
        json_object_set_new(f, "load_control", json_string(base->load_control));
    if (r->refresh_pool > 0) {
        json_object_set_new(f, "disagg", json_string(base->disagg));
        json_object_set_new(f, "refresh_pool", json_integer(r->refresh_pool));
        json_object_set_new(f, "moves", json_integer(r->handoffs));
        json_object_set_new(f, "moves_with_kv", json_integer(r->handoffs_kv));
        json_object_set_new(f, "moved_bytes", json_real(r->moved_bytes));
        json_object_set_new(f, "move_mean_s", json_real(r->handoffs ? r->xfer_s / (double)r->handoffs : 0));
        json_object_set_new(f, "move_wait_mean_s", json_real(r->handoffs ? r->xfer_wait_s / (double)r->handoffs : 0));
        if (r->moves_live > 0) {
            json_object_set_new(f, "moves_live", json_integer(r->moves_live));
            json_object_set_new(f, "move_live_s", json_real(r->move_live_s));
            json_object_set_new(f, "move_model_s", json_real(r->move_model_s));
        }
    }
    for (int i = 0; i < r->n; i++) {
        json_t *s = cli_summary_json(&cfg[i], &r->replica[i]);
        json_object_set_new(s, "routed", json_integer(r->routed[i]));
        if (r->refresh_pool > 0) {
            json_object_set_new(s, "pool", json_string(i < r->refresh_pool ? "refresh" : "reuse"));
            json_object_set_new(s, "moved_in", json_integer(r->replica[i].handed_in));
            json_object_set_new(s, "moved_out", json_integer(r->replica[i].handed_out));
        }
        json_array_append_new(reps, s);
    }
    json_object_set_new(o, "replicas", reps);
    /* the control loops' readings that show their changes (fleet_result), and the count taken */
    if (r->ntau > 0) { /* load control's: [seconds, threshold, mean TPF, outstanding] */
        json_t *th = json_array();
        for (int64_t k = 0; k < r->ntau; k++)
            json_array_append_new(th, json_pack("[f,f,f,I]", r->tau[k].t_s, r->tau[k].tau, r->tau[k].tpf,
                                                (json_int_t)r->tau[k].outstanding));
        json_object_set_new(o, "threshold", th);
        json_object_set_new(f, "threshold_mean", json_real(r->tau_mean));
        json_object_set_new(f, "threshold_readings", json_integer(r->tau_taken));
    }
    if (r->nscale > 0) { /* the autoscaler's: [seconds, up, starting, outstanding] */
        json_t *sc = json_array();
        for (int64_t k = 0; k < r->nscale; k++)
            json_array_append_new(sc, json_pack("[f,i,i,I]", r->scale[k].t_s, r->scale[k].up, r->scale[k].starting,
                                                (json_int_t)r->scale[k].outstanding));
        json_object_set_new(o, "scale", sc);
        json_object_set_new(f, "scale_readings", json_integer(r->scale_taken));
    }
    if (iv)
        cli_interval_json(iv, o);
    cli_print_json(o);
}

/* Whether replicas cfg[1..n) differ from cfg[0] in what a request moved between the pools of a
 * disaggregated fleet needs the same (sim_hand_mismatch), said on stderr: refused before the run. */
static bool pools_mismatch(const char *cmd, const struct sim_config *cfg, int n)
{
    for (int i = 1; i < n; i++) {
        if (memcmp(&cfg[i], &cfg[i - 1], sizeof cfg[i]) == 0)
            continue;
        struct ts_err err;
        struct sim *a = sim_create_fed(&cfg[0], &err), *b = a ? sim_create_fed(&cfg[i], &err) : NULL;
        const char *what = b ? sim_hand_mismatch(a, b) : NULL;
        sim_destroy(a), sim_destroy(b);
        if (what) {
            fprintf(stderr, "%s: --disagg: replica %d's %s differs from replica 0's, so a request moved "
                            "between them could not go on (the pools may differ in card, TP and scheduler)\n", cmd, i, what);
            return true;
        }
    }
    return false;
}

/* A live fleet's engine workers (fleet_live_open), started by fleet_run once its input passes; share:
 * disaggregated, the K/V moved between them. */
struct live_open_ctx {
    const struct sim_config *cfg;
    int n;
    bool share;
    struct sim_executor *ex;
    struct live_worker **workers;
};

static int live_open(void *ctx, struct ts_err *err)
{
    const struct live_open_ctx *c = ctx;
    if (fleet_live_open(c->cfg, c->n, c->share, c->ex, c->workers, err) == 0 &&
        (!c->share || fleet_live_share(*c->workers, c->n, err) == 0))
        return 0;
    ts_fail_prefix(err, "--executor gpu");
    return -1;
}

static int live_move(void *ctx, int from, int64_t ticket, int to, int64_t key, double *seconds, struct ts_err *err)
{
    const struct live_open_ctx *c = ctx;
    return fleet_live_move(*c->workers, from, ticket, to, key, seconds, err);
}

static int live_adopt(void *ctx, int to, int64_t key, int32_t req_id, struct ts_err *err)
{
    const struct live_open_ctx *c = ctx;
    return fleet_live_adopt(*c->workers, to, key, req_id, err);
}

/* A fleet's run done: its interval where asked (--interval), its database (--db) and its summary or
 * --json; 0, or 1 where a part of it failed (said on stderr). */
static int report(const struct sim_config *base, const struct sim_config *cfg, int n, const struct fleet_opts *o,
                  const struct fleet_result *r)
{
    struct ts_err err;
    struct db_out *out = NULL; /* (opened once the run is done: its live workers hold none of it) */
    if (base->db[0] && db_out_open(base->db, (enum db_mode)base->db_mode, &out, &err)) {
        fprintf(stderr, "tessera sim: --db %s\n", err.msg);
        return 1;
    }
    /* --interval: the fleet again over the sources of its replicas' variance, each replica its own machine */
    struct cli_interval iv = {.level = base->interval, .runs = base->interval_runs};
    if (base->interval > 0 && cli_interval_fleet(base, cfg, n, o, &iv, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        db_out_close(out);
        return 1;
    }
    if (out && base->interval > 0)
        cli_interval_to_db(&iv, out);
    int rc = 0;
    if (out && db_out_commit_fleet(out, base, cfg, r, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        rc = 1;
    }
    if (base->json)
        print_fleet_json(base, cfg, r, base->interval > 0 ? &iv : NULL);
    else
        print_fleet(base, cfg, o, r, base->interval > 0 ? &iv : NULL);
    db_out_close(out);
    return rc;
}

int cli_fleet_build(const struct sim_config *base, int argc, char **argv, struct sim_config **out, int *count,
                    struct fleet_opts *out_o, const char *cmd)
{
    if (base->replicas > 1 && base->fleet[0]) {
        fprintf(stderr, "%s: --replicas and --fleet: one or the other (a fleet file's groups give their "
                        "counts)\n", cmd);
        return EXIT_USAGE;
    }
    /* the fleet's own options first: their errors are the fleet's, not a replica group's */
    struct fleet_opts o = {.staleness_s = base->router_staleness,
                           .admit_max = base->admit_max, .defer = base->admit == ADMIT_DEFER,
                           .progress = base->progress};
    struct ts_err err;
    if (fleet_router_parse(base->router, &o.router, &o.affinity, &err) || fleet_scale_parse(base->autoscale, &o.scale, &err) ||
        fleet_disagg_parse(base->disagg, &o.disagg, &err) || fleet_tau_parse(base->load_control, &o.tau, &err)) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return EXIT_USAGE;
    }
    struct sim_config *cfg = NULL;
    int n = 0;
    if (base->fleet[0]) {
        if (read_fleet(cmd, base->fleet, argc, argv, &cfg, &n)) {
            free(cfg);
            return EXIT_USAGE;
        }
    } else {
        struct sim_config c = *base;
        as_replica(&c);
        char where[64];
        snprintf(where, sizeof where, "%s: --replicas %d", cmd, base->replicas);
        if (room(base->replicas, where) || group_builds(&c, where) || add_group(&cfg, &n, &c, base->replicas, where)) {
            free(cfg);
            return EXIT_USAGE;
        }
    }
    if (o.scale.on && o.scale.min > n) {
        fprintf(stderr, "%s: --autoscale: min=%d of %d replicas\n", cmd, o.scale.min, n);
        free(cfg);
        return EXIT_USAGE;
    }
    const int refresh = o.disagg.refresh > 0 ? o.disagg.refresh : n / 2;
    if ((o.disagg.mode != DISAGG_OFF && o.scale.on &&
         ts_fail(&err, "--disagg with --autoscale: a disaggregated fleet's pools are fixed")) ||
        (o.disagg.mode != DISAGG_OFF && (refresh < 1 || refresh >= n) &&
         ts_fail(&err, "--disagg '%s': a Refresh pool of %d of the %d replicas leaves %s (refresh=N, 1 to %d)",
                 base->disagg, refresh, n, refresh < 1 ? "it empty" : "no Reuse pool", n - 1))) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        free(cfg);
        return EXIT_USAGE;
    }
    for (int i = 0; o.tau.on && i < n; i++) { /* load control: a threshold to lower on every replica */
        struct decode_model *dm = xmalloc(sizeof *dm);
        const int bad = decode_parse(cfg[i].decode, cfg[i].datadir, dm, &err) || decode_scale_extra(dm, dm->tpf, 1, &err);
        free(dm);
        if (bad) {
            fprintf(stderr, "%s: --load-control: replica %d: %s\n", cmd, i, err.msg);
            free(cfg);
            return EXIT_USAGE;
        }
    }
    if (o.disagg.mode != DISAGG_OFF && pools_mismatch(cmd, cfg, n)) {
        free(cfg);
        return EXIT_USAGE;
    }
    *out = cfg, *count = n, *out_o = o;
    return 0;
}

int cli_fleet(const struct sim_config *base, int argc, char **argv)
{
    struct sim_config *cfg = NULL;
    int n = 0;
    struct fleet_opts o;
    if (cli_fleet_build(base, argc, argv, &cfg, &n, &o, "tessera sim"))
        return EXIT_USAGE;
    struct ts_err err;
    if (base->db[0] && db_check(base->db, (enum db_mode)base->db_mode, &err)) { /* --db: before any work */
        fprintf(stderr, "tessera sim: --db %s\n", err.msg);
        free(cfg);
        return EXIT_USAGE;
    }
    struct sim_executor *ex = NULL;
    struct live_worker *workers = NULL;
    struct live_open_ctx lc = {cfg, n, o.disagg.mode != DISAGG_OFF, NULL, &workers};
    if (base->executor == EXECUTOR_GPU && base->interval > 0) {
        fprintf(stderr, "tessera sim: --interval draws the sources of a prediction's variance; a live fleet is "
                        "measured, not predicted\n");
        free(cfg);
        return EXIT_USAGE;
    }
    if (base->executor == EXECUTOR_GPU) { /* live: a worker a replica, each on its own GPU, once its input passes */
        o.ex = lc.ex = ex = xcalloc((size_t)n, sizeof *ex);
        o.live_open = live_open, o.live_ctx = &lc;
        o.live_move = live_move, o.live_adopt = live_adopt;
    }
    struct fleet_result r;
    const int failed = fleet_run(base, cfg, n, &o, &r, &err);
    fleet_live_close(workers, n);
    free(ex);
    if (failed) { /* refused before its first arrival (bad input), or failed in the run */
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        free(cfg);
        return failed == FLEET_REFUSED ? EXIT_USAGE : 1;
    }
    const int rc = report(base, cfg, n, &o, &r);
    fleet_result_free(&r);
    free(cfg);
    return rc;
}
