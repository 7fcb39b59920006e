/*
 * cli_interval.c: `tessera sim --interval P`: each summary figure with the range it takes over the
 * named, measured sources of a prediction's variance (sim/data/variance.csv), propagated through the
 * simulation by running it again: each replicate draws the host's speed (an eager runtime's), the
 * card's GPU speed (its clock's state, and the calibration's held-out error or the roofline's error
 * where no calibration prices it, and a carried calibration's error) and the requests' decode streams
 * (a drawn decoder's), and the interval is the central P% of the replicates' figures. A source never
 * measured for the run's card is named ("not bounded"), not drawn. The
 * point figures are the configuration's own run, unchanged. A fleet's replicate draws each replica's
 * as its own machine's, by that replica's card and runtime.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "db.h"
#include "decode.h"
#include "fleet.h"
#include "setup.h"
#include "sim.h"

/* The figures an interval is given for: their --json keys and where the summary keeps them. */
static const struct {
    const char *key;
    size_t off;
} figures[CLI_INTERVAL_FIGURES] = {
    {"throughput_tok_s", offsetof(struct sim_summary, throughput_tok_s)},
    {"lat_mean_s", offsetof(struct sim_summary, lat_mean_s)},
    {"lat_p50_s", offsetof(struct sim_summary, lat_p50_s)},
    {"lat_p90_s", offsetof(struct sim_summary, lat_p90_s)},
    {"lat_p99_s", offsetof(struct sim_summary, lat_p99_s)},
    {"energy_j", offsetof(struct sim_summary, energy_j)},
};

static double figure(const struct sim_summary *m, int k) { return *(const double *)((const char *)m + figures[k].off); }

/* The variance table (DATADIR/variance.csv): source,gpu,sigma,record,what, a card's row over "*"'s,
 * '#' comments. */
static int load_sources(const char *datadir, const char *gpu, struct cli_interval *iv, struct ts_err *err)
{
    char path[CFG_PATH + 32], line[1024];
    snprintf(path, sizeof path, "%s/variance.csv", datadir);
    FILE *f = fopen(path, "r");
    if (!f)
        return ts_fail(err, "--interval: %s: cannot open it", path);
    int n = 0, rc = 0;
    bool own[SRC_COUNT] = {false}, per_card[SRC_COUNT] = {false};
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        if (line[0] == '#' || n == 1 || line[0] == '\n')
            continue;
        char name[32] = "", card[32] = "", sig[32] = "", record[64] = "";
        double sigma = 0;
        /* (sigma '-' and no record: never measured for that card) */
        const int got = sscanf(line, "%31[^,],%31[^,],%31[^,],%63[^,],", name, card, sig, record);
        const bool none = got >= 3 && strcmp(sig, "-") == 0;
        if (!none && (got != 4 || ts_parse_double(sig, &sigma) || !(sigma >= 0 && sigma < 1)))
            rc = ts_fail(err, "%s:%d: expected source,gpu,sigma,record,what (sigma in [0, 1), or - where never "
                         "measured)", path, n);
        const bool mine = strcmp(card, gpu) == 0;
        for (int k = 0; rc == 0 && k < SRC_COUNT; k++) {
            if (strcmp(name, cli_interval_source_name(k)) != 0)
                continue;
            per_card[k] |= strcmp(card, "*") != 0;
            if (mine || (!own[k] && strcmp(card, "*") == 0)) {
                iv->sigma[k] = sigma, own[k] = mine, iv->unmeasured[k] = none;
                snprintf(iv->record[k], sizeof iv->record[k], "%s", none ? "-" : record);
            }
        }
    }
    fclose(f);
    /* (a source measured card by card, none of them this one: carried from another's) */
    for (int k = 0; k < SRC_COUNT; k++)
        iv->carried[k] = per_card[k] && !own[k] && !iv->unmeasured[k];
    for (int k = 0; rc == 0 && k < SRC_COUNT; k++)
        if (!iv->record[k][0])
            rc = ts_fail(err, "%s: no row for source %s", path, cli_interval_source_name(k));
    return rc;
}

const char *cli_interval_source_name(int k)
{
    static const char *const names[SRC_COUNT] = {"host-run", "host-machine", "clock", "calibration", "runtime-run",
                                                 "runtime-machine", "roofline", "transfer", "live-load"};
    return k >= 0 && k < SRC_COUNT ? names[k] : NULL;
}

/* Which sources a run of configuration c (with its setup) has, into iv->used and iv->decode, and the
 * spread of its host's speed (sh) and of its GPU's (sg): the root of the sum of their sources' squares. */
static int run_sources(const struct sim_config *c, const struct sim_setup *setup, struct cli_interval *iv,
                       double *sh, double *sg, struct ts_err *err)
{
    if (load_sources(c->datadir, c->gpu, iv, err))
        return -1;
    const bool eager = setup->impl.host_ref[0] != '\0';
    iv->used[SRC_HOST_RUN] = eager;
    iv->used[SRC_HOST_MACHINE] = eager && !c->host[0]; /* a host of its own (--host) measured this machine */
    /* a runtime priced by its own rounds measured whole (rounds.h): their spread from run to run and from
     * machine to machine, in place of the card's clock and the calibration, which they hold */
    struct model_cfg m;
    struct ts_err unused;
    struct rounds_source src = {0};
    if (sim_model_resolve(c, &m, &unused) == 0)
        sim_rounds_source(c, m.name, &setup->impl, &src);
    const bool rounds = src.use == ROUNDS_WHOLE; /* (priced whole by them) */
    const bool calibrated = strcmp(c->cost, "calibrated") == 0;
    iv->used[SRC_CLOCK] = !rounds;
    iv->used[SRC_CALIBRATION] = !rounds && calibrated;
    iv->used[SRC_RUNTIME_RUN] = iv->used[SRC_RUNTIME_MACHINE] = rounds;
    /* the roofline's own error where it prices the run; a calibration carried from another card's */
    iv->used[SRC_ROOFLINE] = !rounds && !calibrated;
    iv->used[SRC_TRANSFER] = !rounds && calibrated && !c->calib[0] && c->calib_from[0];
    /* tessera's own engine (no eager loop's host, no runtime's rounds) priced by its calibration: its
     * steps served back to back under load against the calibration's, profiled one at a time */
    iv->used[SRC_LIVE_LOAD] = !rounds && calibrated && !eager;
    iv->decode = decode_needs_rng(&setup->decode);
    double h = 0, g = 0;
    for (int k = 0; k < SRC_COUNT; k++) {
        iv->drawn[k] = iv->used[k] && !iv->unmeasured[k];
        if (iv->drawn[k])
            *(k <= SRC_HOST_MACHINE ? &h : &g) += iv->sigma[k] * iv->sigma[k];
    }
    *sh = sqrt(h), *sg = sqrt(g);
    return 0;
}

/* The central level% of each figure's replicates (v: runs a figure), into iv->lo and iv->hi. */
static void set_bounds(struct cli_interval *iv, double *v, int runs)
{
    const double tail = (1 - iv->level / 100.0) / 2;
    for (int k = 0; k < CLI_INTERVAL_FIGURES; k++) {
        double *x = v + (size_t)k * runs;
        gsl_sort(x, 1, (size_t)runs);
        iv->lo[k] = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)runs, tail);
        iv->hi[k] = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)runs, 1 - tail);
    }
}

static void say_progress(bool on, int done, int runs, double t0)
{
    if (on)
        fprintf(stderr, "\r--interval: %d of %d replicates (%.0f s, about %.0f s left)   ", done, runs,
                ts_wall_s() - t0, (ts_wall_s() - t0) * (runs - done) / done);
}

int cli_interval_run(const struct sim_config *base, const struct sim_setup *setup, struct cli_interval *iv,
                     struct ts_err *err)
{
    const int runs = iv->runs;
    double sh, sg;
    if (run_sources(base, setup, iv, &sh, &sg, err))
        return -1;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(rng, (unsigned long)ts_mix64(base->seed ^ 0x5eedull));
    double *v = xcalloc((size_t)runs * CLI_INTERVAL_FIGURES, sizeof *v);
    int rc = 0;
    const double t0 = ts_wall_s();
    for (int i = 0; rc == 0 && i < runs; i++) {
        struct sim_config c = *base;
        const double host = exp(gsl_ran_gaussian(rng, sh)), gpu = exp(gsl_ran_gaussian(rng, sg));
        c.decode_seed = ts_mix64(base->seed + 1 + (uint64_t)i) >> 24 | 1; /* (another stream each) */
        c.progress = false, c.no_steps = true, c.db[0] = '\0';
        c.quiet = true; /* (the run's own log said what its replicates would repeat) */
        c.speed_gpu = gpu, c.speed_host = host;
        struct sim *s = sim_create(&c, err);
        if (s && iv->each)
            iv->each(iv->each_ctx, s, false);
        if (!s || sim_run(s, err)) {
            rc = ts_fail_prefix(err, "--interval: replicate %d", i + 1);
            sim_destroy(s);
            break;
        }
        struct sim_summary m;
        sim_get_summary(s, &m);
        if (iv->each)
            iv->each(iv->each_ctx, s, true);
        sim_destroy(s);
        for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
            v[(size_t)k * runs + i] = figure(&m, k);
        say_progress(base->progress, i + 1, runs, t0);
    }
    if (base->progress)
        fprintf(stderr, "\n");
    if (rc == 0)
        set_bounds(iv, v, runs);
    free(v);
    gsl_rng_free(rng);
    return rc;
}

int cli_interval_fleet(const struct sim_config *workload, const struct sim_config *cfg, int n,
                       const struct fleet_opts *o, struct cli_interval *iv, struct ts_err *err)
{
    const int runs = iv->runs;
    double *sh = xcalloc((size_t)n, sizeof *sh), *sg = xcalloc((size_t)n, sizeof *sg);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) { /* each replica's sources, by its card and runtime */
        struct sim_setup setup;
        struct cli_interval own = {.level = iv->level, .runs = runs};
        rc = sim_config_validate(&cfg[i], &setup, err) || run_sources(&cfg[i], &setup, &own, &sh[i], &sg[i], err);
        for (int k = 0; rc == 0 && k < SRC_COUNT; k++) {
            iv->used[k] |= own.used[k];
            iv->unmeasured[k] |= own.used[k] && own.unmeasured[k]; /* (one replica's never measured: said) */
            if (own.drawn[k] && !iv->drawn[k]) { /* (the first replica that draws it names its spread) */
                iv->drawn[k] = true, iv->sigma[k] = own.sigma[k], iv->carried[k] = own.carried[k];
                snprintf(iv->record[k], sizeof iv->record[k], "%s", own.record[k]);
            }
        }
        iv->decode = iv->decode || own.decode;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(rng, (unsigned long)ts_mix64(workload->seed ^ 0xf1ee75eedull));
    double *v = xcalloc((size_t)runs * CLI_INTERVAL_FIGURES, sizeof *v);
    struct sim_config *c = xmalloc(sizeof *c * (size_t)n), w = *workload;
    struct fleet_opts quiet = *o;
    quiet.progress = false, w.progress = false, w.db[0] = '\0';
    const double t0 = ts_wall_s();
    for (int r = 0; rc == 0 && r < runs; r++) {
        for (int i = 0; i < n; i++) { /* each replica its own machine: its own draws */
            c[i] = cfg[i];
            c[i].speed_host = exp(gsl_ran_gaussian(rng, sh[i])), c[i].speed_gpu = exp(gsl_ran_gaussian(rng, sg[i]));
            c[i].decode_seed = ts_mix64(workload->seed + 1 + (uint64_t)r * (uint64_t)n + (uint64_t)i) >> 24 | 1;
            c[i].progress = false, c[i].no_steps = true, c[i].db[0] = '\0', c[i].quiet = true;
        }
        struct fleet_result res;
        if (fleet_run(&w, c, n, &quiet, &res, err)) {
            rc = ts_fail_prefix(err, "--interval: replicate %d", r + 1);
            break;
        }
        for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
            v[(size_t)k * runs + r] = figure(&res.fleet, k);
        if (iv->each_fleet)
            iv->each_fleet(iv->each_ctx, &res.fleet);
        fleet_result_free(&res);
        say_progress(workload->progress, r + 1, runs, t0);
    }
    if (workload->progress)
        fprintf(stderr, "\n");
    if (rc == 0)
        set_bounds(iv, v, runs);
    free(c);
    free(v);
    free(sh);
    free(sg);
    gsl_rng_free(rng);
    return rc ? -1 : 0;
}

/* The sources a run's interval draws, in words, into buf. */
static void sources_text(const struct cli_interval *iv, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < SRC_COUNT; k++)
        if (iv->drawn[k])
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %.1f%% (%s%s)", buf[0] ? ", " : "",
                     cli_interval_source_name(k), 100 * iv->sigma[k], iv->record[k],
                     iv->carried[k] ? ", measured on another card" : "");
    if (iv->decode)
        snprintf(buf + strlen(buf), len - strlen(buf), "%sthe decoder's draws", buf[0] ? ", " : "");
}

void cli_interval_print(const struct cli_interval *iv, const struct sim_summary *m, FILE *f)
{
    char src[1024];
    sources_text(iv, src, sizeof src);
    fprintf(f, "  interval      %d%% over %d replicates drawing %s:\n", iv->level, iv->runs, src);
    fprintf(f, "                throughput %.1f-%.1f tok/s; latency (s) mean %.3f-%.3f  p50 %.3f-%.3f  p90 "
               "%.3f-%.3f  p99 %.3f-%.3f; energy %.0f-%.0f J\n", iv->lo[0], iv->hi[0], iv->lo[1], iv->hi[1],
            iv->lo[2], iv->hi[2], iv->lo[3], iv->hi[3], iv->lo[4], iv->hi[4], iv->lo[5], iv->hi[5]);
    for (int k = 0; k < SRC_COUNT; k++)
        if (iv->used[k] && iv->unmeasured[k])
            fprintf(f, "                not bounded: %s, never measured for this card (%s); the interval leaves it out "
                    "and is narrower than this setup's error\n", cli_interval_source_name(k),
                    k == SRC_TRANSFER ? "a calibration carried from another card: tessera calib show --gpu GPU prints "
                                        "the band a step of it may be off by"
                                      : "sim/data/variance.csv");
    if (m->overloaded)
        fprintf(f, "                (overloaded: the latency's interval is the queue's growth, wide as it must be)\n");
}

void cli_interval_to_db(const struct cli_interval *iv, struct db_out *out)
{
    json_t *o = json_object();
    cli_interval_json(iv, o);
    char *text = json_dumps(json_object_get(o, "interval"), JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    db_out_set_interval(out, text);
    free(text);
    json_decref(o);
}

void cli_interval_json(const struct cli_interval *iv, json_t *o)
{
    json_t *j = json_object(), *src = json_object();
    json_object_set_new(j, "level", json_integer(iv->level));
    json_object_set_new(j, "runs", json_integer(iv->runs));
    json_t *unbounded = json_array();
    for (int k = 0; k < SRC_COUNT; k++) {
        if (iv->used[k] && iv->unmeasured[k]) /* (never measured for the card: named, not drawn) */
            json_array_append_new(unbounded, json_string(cli_interval_source_name(k)));
        if (iv->drawn[k])
            json_object_set_new(src, cli_interval_source_name(k),
                                json_pack("{s:f,s:s,s:b}", "sigma", iv->sigma[k], "record", iv->record[k], "carried",
                                          iv->carried[k]));
    }
    json_object_set_new(j, "unbounded", unbounded);
    if (iv->decode)
        json_object_set_new(src, "decode", json_string("the requests' decode streams redrawn"));
    json_object_set_new(j, "sources", src);
    for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
        json_object_set_new(j, figures[k].key, json_pack("[f,f]", iv->lo[k], iv->hi[k]));
    json_object_set_new(o, "interval", j);
}
