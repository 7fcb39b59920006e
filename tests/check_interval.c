/*
 * check_interval.c: --interval's arithmetic (sim/cli/cli_interval.c) against an independent computation.
 * Each replicate's figures and drawn speeds are read as it runs (cli_interval.each): the bounds are the
 * replicates' own central P% (their order statistics interpolated by hand, here), a 50% interval lies
 * inside the 90% one of the same seed, and the sources combine as set by hand: the host's speed is drawn with
 * the root of the sum of the squares of the host sources' spreads (an eager runtime's, run to run and
 * machine to machine), the GPU's with the card's clock and the calibration's (and on tessera's own
 * engine, its speed under load), each group on its own speed, a source never measured for the card
 * drawn by neither.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_plan.h"
#include "config.h"
#include "setup.h"
#include "sim.h"
#include "test_util.h"

#define RUNS 200

struct seen {
    int n;
    double fig[CLI_INTERVAL_FIGURES][RUNS];
    double log_host[RUNS], log_gpu[RUNS];
};

static void each(void *ctx, struct sim *s, bool ran)
{
    struct seen *v = ctx;
    if (!ran)
        return;
    ck_assert_int_lt(v->n, RUNS);
    const struct sim_config *c = sim_config(s);
    struct sim_summary m;
    sim_get_summary(s, &m);
    const double f[CLI_INTERVAL_FIGURES] = {m.throughput_tok_s, m.lat_mean_s, m.lat_p50_s, m.lat_p90_s, m.lat_p99_s,
                                            m.energy_j};
    for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
        v->fig[k][v->n] = f[k];
    v->log_host[v->n] = log(c->speed_host), v->log_gpu[v->n] = log(c->speed_gpu);
    v->n++;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-quantile of x[0..n) by hand: sorted, at rank p (n - 1), between its neighbours on the line. */
static double quantile(const double *x, int n, double p)
{
    double *s = malloc(sizeof *s * (size_t)n);
    memcpy(s, x, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, by_value);
    const double r = p * (n - 1);
    const int i = (int)floor(r);
    const double q = i + 1 < n ? s[i] + (r - i) * (s[i + 1] - s[i]) : s[i];
    free(s);
    return q;
}

static double sd(const double *x, int n)
{
    double m = 0, v = 0;
    for (int i = 0; i < n; i++)
        m += x[i] / n;
    for (int i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m) / (n - 1);
    return sqrt(v);
}

/* Fast-dLLM's PyTorch loop on an RTX 4090 (an eager runtime: both host sources; the H200's calibration
 * carried, whose transfer to the RTX 4090 was never measured), ten short requests, as tessera sim's
 * parser sets it up. */
static void config(struct sim_config *c, struct sim_setup *setup)
{
    char *argv[] = {"sim", "--system", "fast-dllm", "--gpu", "rtx4090", "--lengths", "fixed:200,64", "--gen-len", "64",
                    "--requests", "10", "--rps", "2", "--quiet", "--no-progress", NULL};
    ck_assert_int_eq(cli_sim_parse((int)(sizeof argv / sizeof *argv) - 1, argv, c), 0);
    c->no_steps = true;
    struct ts_err err;
    ck_assert_msg(sim_config_validate(c, setup, &err) == 0, "%s", err.msg);
}

static void run(struct sim_config *c, const struct sim_setup *setup, int level, struct cli_interval *iv,
                struct seen *v)
{
    memset(iv, 0, sizeof *iv);
    v->n = 0;
    iv->level = level, iv->runs = RUNS, iv->each = each, iv->each_ctx = v;
    struct ts_err err;
    ck_assert_msg(cli_interval_run(c, setup, iv, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(v->n, RUNS);
}

START_TEST(bounds_are_the_replicates_central_share)
{
    struct sim_config c;
    struct sim_setup setup;
    config(&c, &setup);
    static struct seen v;
    struct cli_interval iv[2];
    static const int levels[] = {90, 50};
    for (int l = 0; l < 2; l++) {
        run(&c, &setup, levels[l], &iv[l], &v);
        const double tail = (100 - levels[l]) / 200.0;
        for (int k = 0; k < CLI_INTERVAL_FIGURES; k++) {
            const double lo = quantile(v.fig[k], RUNS, tail), hi = quantile(v.fig[k], RUNS, 1 - tail);
            ck_assert_msg(fabs(iv[l].lo[k] - lo) <= 1e-9 * fabs(lo) && fabs(iv[l].hi[k] - hi) <= 1e-9 * fabs(hi),
                          "level %d figure %d: [%.9g, %.9g], the replicates' own [%.9g, %.9g]", levels[l], k,
                          iv[l].lo[k], iv[l].hi[k], lo, hi);
            ck_assert(lo < hi); /* (the draws spread every figure) */
        }
    }
    /* one seed, one set of replicates: the 50% interval inside the 90% */
    for (int k = 0; k < CLI_INTERVAL_FIGURES; k++)
        ck_assert_msg(iv[0].lo[k] < iv[1].lo[k] && iv[1].hi[k] < iv[0].hi[k], "figure %d: 50%% [%g, %g] not inside "
                      "90%% [%g, %g]", k, iv[1].lo[k], iv[1].hi[k], iv[0].lo[k], iv[0].hi[k]);
}
END_TEST

START_TEST(sources_combine_by_group)
{
    struct sim_config c;
    struct sim_setup setup;
    config(&c, &setup);
    static struct seen v;
    struct cli_interval iv;
    run(&c, &setup, 90, &iv, &v);
    /* which sources this setup draws, by hand: an eager loop's host run to run and machine to machine;
     * the card's clock and the calibration; the transfer to an RTX 4090 named, never measured */
    static const bool drawn[SRC_COUNT] = {[SRC_HOST_RUN] = true, [SRC_HOST_MACHINE] = true, [SRC_CLOCK] = true,
                                          [SRC_CALIBRATION] = true};
    for (int k = 0; k < SRC_COUNT; k++)
        ck_assert_msg(iv.drawn[k] == drawn[k], "source %s drawn %d", cli_interval_source_name(k), iv.drawn[k]);
    ck_assert(iv.used[SRC_TRANSFER] && iv.unmeasured[SRC_TRANSFER]);
    const double host = hypot(iv.sigma[SRC_HOST_RUN], iv.sigma[SRC_HOST_MACHINE]),
                 gpu = hypot(iv.sigma[SRC_CLOCK], iv.sigma[SRC_CALIBRATION]);
    ck_assert(host > 0.1 && gpu > 0.005 && host > 5 * gpu); /* (the two groups far apart: a source misfiled shows) */
    const double sh = sd(v.log_host, RUNS), sg = sd(v.log_gpu, RUNS);
    /* 200 draws: a spread's estimate within 15% (its own error about 5%) */
    ck_assert_msg(fabs(sh / host - 1) < 0.15, "host speed's spread %.4f, its sources' %.4f", sh, host);
    ck_assert_msg(fabs(sg / gpu - 1) < 0.15, "GPU speed's spread %.4f, its sources' %.4f", sg, gpu);
}
END_TEST

START_TEST(engine_draws_its_load_on_the_gpu)
{
    /* tessera's own engine priced by its H200 calibration: no host source; the clock, the calibration and
     * the engine under load against its calibration all on the GPU's speed */
    struct sim_config c;
    struct sim_setup setup;
    char *argv[] = {"sim", "--gpu", "h200", "--cost", "calibrated", "--lengths", "fixed:200,64", "--gen-len", "64",
                    "--requests", "10", "--rps", "2", "--quiet", "--no-progress", NULL};
    ck_assert_int_eq(cli_sim_parse((int)(sizeof argv / sizeof *argv) - 1, argv, &c), 0);
    c.no_steps = true;
    struct ts_err err;
    ck_assert_msg(sim_config_validate(&c, &setup, &err) == 0, "%s", err.msg);
    static struct seen v;
    struct cli_interval iv;
    run(&c, &setup, 90, &iv, &v);
    static const bool drawn[SRC_COUNT] = {[SRC_CLOCK] = true, [SRC_CALIBRATION] = true, [SRC_LIVE_LOAD] = true};
    for (int k = 0; k < SRC_COUNT; k++)
        ck_assert_msg(iv.drawn[k] == drawn[k], "source %s drawn %d", cli_interval_source_name(k), iv.drawn[k]);
    const double gpu = sqrt(iv.sigma[SRC_CLOCK] * iv.sigma[SRC_CLOCK] + iv.sigma[SRC_CALIBRATION] * iv.sigma[SRC_CALIBRATION] +
                            iv.sigma[SRC_LIVE_LOAD] * iv.sigma[SRC_LIVE_LOAD]);
    ck_assert_msg(fabs(sd(v.log_gpu, RUNS) / gpu - 1) < 0.15, "GPU speed's spread %.4f, its sources' %.4f",
                  sd(v.log_gpu, RUNS), gpu);
    ck_assert_double_eq_tol(sd(v.log_host, RUNS), 0, 1e-12); /* (no host source: every replicate's host at 1) */
}
END_TEST

START_TEST(robust_capacity_at_the_pessimistic_end)
{
    /* a plan's robust capacity judges each rate at its interval's pessimistic end: where the interval
     * is wide (the roofline's own error on an H100), below the point capacity, never above it; a bound
     * well under the queue's turn (the share within it decides, not the overload rule) */
    char *argv[] = {"plan", "--slo", "p90=0.8s", "--tolerance", "0.02", "--gpu", "h100", "--lengths", "fixed:200,64",
                    "--gen-len", "64", "--requests", "60", "--interval-runs", "20", "--quiet", "--no-progress", NULL};
    struct plan_args a;
    ck_assert_int_eq(cli_plan_parse((int)(sizeof argv / sizeof *argv) - 1, argv, false, &a), 0);
    struct sim_config c;
    ck_assert_int_eq(cli_sim_parse(a.nrest, a.rest, &c), 0);
    struct ts_err err;
    struct sim_setup setup;
    ck_assert_msg(sim_config_validate(&c, &setup, &err) == 0, "%s", err.msg);
    struct plan_result r;
    ck_assert_msg(cli_plan_capacity_of(&c, NULL, &a, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.robust_done && !r.unbounded[0]);
    ck_assert_msg(r.point.rps > 0 && r.robust.rps > 0 && r.robust.rps < r.point.rps, "robust %g req/s, point %g",
                  r.robust.rps, r.point.rps);
    free(r.runs);
    cli_plan_args_free(&a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("interval");
    ck_case(s, bounds_are_the_replicates_central_share, 120);
    ck_case(s, sources_combine_by_group, 120);
    ck_case(s, engine_draws_its_load_on_the_gpu, 120);
    ck_case(s, robust_capacity_at_the_pessimistic_end, 120);
    return run_suite("interval", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
