/*
 * cli_interval.c: `tessera sim --interval P`: each summary figure with the range it takes over the
 * named, measured sources of a prediction's variance (sim/data/variance.csv), propagated through the
 * simulation by running it again: each replicate draws the host's speed (an eager runtime's), the
 * card's GPU speed (its clock's state and the calibration's held-out error) and the requests' decode
 * streams (a drawn decoder's), and the interval is the central P% of the replicates' figures. The
 * point figures are the configuration's own run, unchanged.
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
#include "decode.h"
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
    bool own[SRC_COUNT] = {false};
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        if (line[0] == '#' || n == 1 || line[0] == '\n')
            continue;
        char name[32] = "", card[32] = "", record[64] = "";
        double sigma;
        if (sscanf(line, "%31[^,],%31[^,],%lf,%63[^,],", name, card, &sigma, record) != 4 || !(sigma >= 0 && sigma < 1))
            rc = ts_fail(err, "%s:%d: expected source,gpu,sigma,record,what (sigma in [0, 1))", path, n);
        const bool mine = strcmp(card, gpu) == 0;
        for (int k = 0; rc == 0 && k < SRC_COUNT; k++)
            if (strcmp(name, cli_interval_source_name(k)) == 0 && (mine || (!own[k] && strcmp(card, "*") == 0))) {
                iv->sigma[k] = sigma, own[k] = mine;
                snprintf(iv->record[k], sizeof iv->record[k], "%s", record);
            }
    }
    fclose(f);
    for (int k = 0; rc == 0 && k < SRC_COUNT; k++)
        if (!iv->record[k][0])
            rc = ts_fail(err, "%s: no row for source %s", path, cli_interval_source_name(k));
    return rc;
}

const char *cli_interval_source_name(int k)
{
    static const char *const names[SRC_COUNT] = {"host-run", "host-machine", "clock", "calibration"};
    return k >= 0 && k < SRC_COUNT ? names[k] : NULL;
}

int cli_interval_run(const struct sim_config *base, const struct sim_setup *setup, struct cli_interval *iv,
                     struct ts_err *err)
{
    const int runs = iv->runs;
    if (load_sources(base->datadir, base->gpu, iv, err))
        return -1;
    /* which sources a run of this configuration has */
    const bool eager = setup->impl.host_ref[0] != '\0', drawn = decode_needs_rng(&setup->decode);
    const bool calibrated = strcmp(base->cost, "calibrated") == 0;
    iv->used[SRC_HOST_RUN] = eager;
    iv->used[SRC_HOST_MACHINE] = eager && !base->host[0]; /* a host of its own (--host) measured this machine */
    iv->used[SRC_CLOCK] = true;
    iv->used[SRC_CALIBRATION] = calibrated;
    iv->decode = drawn;
    double sh = 0, sg = 0;
    for (int k = 0; k < SRC_COUNT; k++)
        if (iv->used[k])
            *(k <= SRC_HOST_MACHINE ? &sh : &sg) += iv->sigma[k] * iv->sigma[k];
    sh = sqrt(sh), sg = sqrt(sg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(rng, (unsigned long)ts_mix64(base->seed ^ 0x5eedull));
    double *v = xcalloc((size_t)runs * CLI_INTERVAL_FIGURES, sizeof *v);
    int rc = 0, done = 0;
    const double t0 = ts_wall_s();
    for (int i = 0; rc == 0 && i < runs; i++) {
        struct sim_config c = *base;
        const double host = exp(gsl_ran_gaussian(rng, sh)), gpu = exp(gsl_ran_gaussian(rng, sg));
        c.decode_seed = ts_mix64(base->seed + 1 + (uint64_t)i) >> 24 | 1; /* (another stream each) */
        c.progress = false, c.no_steps = true, c.db[0] = '\0';
        c.speed_gpu = gpu, c.speed_host = host;
        struct sim *s = sim_create(&c, err);
        if (!s || sim_run(s, err)) {
            rc = ts_fail_prefix(err, "--interval: replicate %d", i + 1);
            sim_destroy(s);
            break;
        }
        struct sim_summary m;
        sim_get_summary(s, &m);
        sim_destroy(s);
        for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
            v[(size_t)k * runs + i] = figure(&m, k);
        done++;
        if (base->progress)
            fprintf(stderr, "\r--interval: %d of %d replicates (%.0f s, about %.0f s left)   ", done, runs,
                    ts_wall_s() - t0, (ts_wall_s() - t0) * (runs - done) / done);
    }
    if (base->progress)
        fprintf(stderr, "\n");
    const double tail = (1 - iv->level / 100.0) / 2;
    for (int k = 0; rc == 0 && k < CLI_INTERVAL_FIGURES; k++) {
        double *x = v + (size_t)k * runs;
        gsl_sort(x, 1, (size_t)runs);
        iv->lo[k] = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)runs, tail);
        iv->hi[k] = gsl_stats_quantile_from_sorted_data(x, 1, (size_t)runs, 1 - tail);
    }
    free(v);
    gsl_rng_free(rng);
    return rc;
}

/* The sources a run's interval draws, in words, into buf. */
static void sources_text(const struct cli_interval *iv, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < SRC_COUNT; k++)
        if (iv->used[k])
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %.0f%% (%s)", buf[0] ? ", " : "",
                     cli_interval_source_name(k), 100 * iv->sigma[k], iv->record[k]);
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
    if (m->overloaded)
        fprintf(f, "                (overloaded: the latency's interval is the queue's growth, wide as it must be)\n");
}

void cli_interval_json(const struct cli_interval *iv, json_t *o)
{
    json_t *j = json_object(), *src = json_object();
    json_object_set_new(j, "level", json_integer(iv->level));
    json_object_set_new(j, "runs", json_integer(iv->runs));
    for (int k = 0; k < SRC_COUNT; k++)
        if (iv->used[k])
            json_object_set_new(src, cli_interval_source_name(k),
                                json_pack("{s:f,s:s}", "sigma", iv->sigma[k], "record", iv->record[k]));
    if (iv->decode)
        json_object_set_new(src, "decode", json_string("the requests' decode streams redrawn"));
    json_object_set_new(j, "sources", src);
    for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
        json_object_set_new(j, figures[k].key, json_pack("[f,f]", iv->lo[k], iv->hi[k]));
    json_object_set_new(o, "interval", j);
}
