/* check_clock.c: the card's clock under its power limit (clock.h): the state a step leaves and finds,
 * its parameters' file, the warm-trace reader, and the fit against traces drawn from known
 * parameters. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "test_util.h"

static const struct clock_params P = {.k = 0.15, .tau_s = 0.04, .lo = 0.5, .hi = 0.8, .held_flops = 700e12};

/* flops giving load g for a step priced t_s */
static double at_load(double g, double t_s) { return g * P.held_flops * t_s; }

START_TEST(a_cool_card_runs_a_heavy_step_faster)
{
    struct clock_state st = {0, 0};
    const double t = 0.010, heavy = at_load(0.9, t);
    /* long after the last step: cool, so the step runs at the cool clock for most of its length */
    st.end_ns = 0;
    const double first = clock_step(&P, &st, 10000000000LL, t, heavy);
    ck_assert(first < t && first > t / (1 + P.k) - 1e-12);
    /* repeated back to back it slows to its own steady state, the calibration's price */
    double last = first;
    for (int i = 0; i < 200; i++) {
        const double next = clock_step(&P, &st, st.end_ns, t, heavy);
        ck_assert(next >= last - 1e-12);
        last = next;
    }
    ck_assert(fabs(last / t - 1) < 1e-6);
    /* a second of idle time cools the card again */
    ck_assert(fabs(clock_step(&P, &st, st.end_ns + 1000000000LL, t, heavy) - first) < 1e-9);
}
END_TEST

START_TEST(light_steps_keep_their_price_and_cool_the_card)
{
    struct clock_state st = {0, 0};
    const double light = 0.005;
    /* a load below lo never throttles: its price stands, cool or hot */
    ck_assert(fabs(clock_step(&P, &st, 0, light, at_load(0.2, light)) - light) < 1e-12);
    /* after heavy steps, a light one runs on the held clock: slower than its own price */
    for (int i = 0; i < 100; i++)
        clock_step(&P, &st, st.end_ns, 0.01, at_load(0.95, 0.01));
    const double hot = clock_step(&P, &st, st.end_ns, light, at_load(0.2, light));
    ck_assert(hot > light && hot <= light * (1 + P.k) + 1e-12);
    /* light steps back to back bring the load down: a heavy step after 200 ms of them runs cool */
    for (int i = 0; i < 40; i++)
        clock_step(&P, &st, st.end_ns, light, at_load(0.2, light));
    ck_assert_double_lt(st.x, P.lo);
    ck_assert(clock_step(&P, &st, st.end_ns, 0.01, at_load(0.95, 0.01)) < 0.01 * 0.9);
    /* no flops, no time: untouched */
    ck_assert(clock_step(&P, &st, st.end_ns, 0, 0) == 0);
}
END_TEST

START_TEST(theta_is_a_clamped_ramp)
{
    ck_assert(clock_theta(&P, 0) == 0 && clock_theta(&P, P.lo) == 0);
    ck_assert(fabs(clock_theta(&P, 0.65) - 0.5) < 1e-12);
    ck_assert(clock_theta(&P, P.hi) == 1 && clock_theta(&P, 1) == 1);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(shipped_parameters_and_bad_lines)
{
    struct sim_config c;
    sim_config_defaults(&c);
    struct clock_params p;
    struct ts_err err;
    const char *dir = tmp_dir(0);
    setenv("TESSERA_CALIB_DIR", dir, 1); /* this machine's calibrations: none yet */
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(clock_params_find(c.datadir, i ? "H100" : "h200", &p, &err), 1);
        ck_assert(p.k > 0 && p.k < 0.5 && p.tau_s > 0 && p.lo < p.hi && p.held_flops > 5e14);
        ck_assert_ptr_nonnull(strstr(p.record, "clock-ladder"));
    }
    ck_assert_int_eq(clock_params_find(c.datadir, "l40s", &p, &err), 0); /* not measured */
    char path[300];
    snprintf(path, sizeof path, "%s/clock.csv", dir);
    static const struct {
        const char *line, *want;
    } bad[] = {
        {"h200,0.1,40,0.5,0.8\n", "clock.csv:2: field held_tflops"},
        {"h200,1.5,40,0.5,0.8,680,r\n", "field k"},
        {"h200,0.1,0,0.5,0.8,680,r\n", "field tau_ms"},
        {"h200,0.1,40,0.8,0.5,680,r\n", "fields lo, hi"},
        {"h200,x,40,0.5,0.8,680,r\n", "field k"},
        {"h200,0.1,40,0.5,0.8,-1,r\n", "field held_tflops"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[256];
        snprintf(text, sizeof text, "gpu,k,tau_ms,lo,hi,held_tflops,record\n%s", bad[i].line);
        write_file(path, text);
        ck_assert_int_eq(clock_params_find("/nonexistent", "h200", &p, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[i].want) != NULL, "%s: %s", bad[i].line, err.msg);
    }
    /* this machine's line comes before the shipped one; another card's falls through to it */
    write_file(path, "gpu,k,tau_ms,lo,hi,held_tflops,record\nh200,0.1,40,0.5,0.8,680,r\n");
    ck_assert_int_eq(clock_params_find(c.datadir, "h200", &p, &err), 1);
    ck_assert(fabs(p.held_flops - 680e12) < 1 && fabs(p.tau_s - 0.04) < 1e-12 && strcmp(p.record, "r") == 0);
    ck_assert_int_eq(clock_params_find(c.datadir, "h100", &p, &err), 1);
    ck_assert_ptr_nonnull(strstr(p.record, "clock-ladder"));
    remove(path);
    rmdir(dir);
    unsetenv("TESSERA_CALIB_DIR");
}
END_TEST

/* A trace file of steps drawn from p: each from a cool card, rounds back to back for dur_s, then
 * `timed` replays at the step's own steady state; a variant's trace between them is skipped. */
static void draw_traces(const char *path, const struct clock_params *p, int nsteps, const double *load,
                        const double *held_ms, double dur_s)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("label,phase,round,graph,t_s,ms\n", f);
    for (int s = 0; s < nsteps; s++) {
        struct clock_state st = {0, 0};
        const double flops = load[s] * p->held_flops * held_ms[s] * 1e-3;
        double t = 0;
        for (int r = 0; t < dur_s; r++) {
            const double ms = clock_step(p, &st, st.end_ns, held_ms[s] * 1e-3, flops) * 1e3;
            t += ms * 1e-3;
            fprintf(f, "\"step 1x%d over 0 cached, %d logits: step\",warm,%d,-1,%.6f,%.6f\n", 64 * (s + 1),
                    64 * (s + 1), r, t, ms);
        }
        for (int r = 0; r < 5; r++)
            fprintf(f, "\"step 1x%d over 0 cached, %d logits: step\",timed,%d,0,%.6f,%.6f\n", 64 * (s + 1),
                    64 * (s + 1), r, t + r * 0.01, held_ms[s]);
        fprintf(f, "\"step 1x%d over 0 cached, %d logits: linear layers alone\",warm,0,-1,0.01,1.0\n", 64 * (s + 1),
                64 * (s + 1));
    }
    fclose(f);
}

START_TEST(fit_recovers_the_parameters_of_drawn_traces)
{
    const struct clock_params truth = {.k = 0.16, .tau_s = 0.04, .lo = 0.45, .hi = 0.8, .held_flops = 700e12};
    const double load[] = {0.15, 0.5, 0.62, 0.7, 0.85, 0.9}, held[] = {4.8, 5.2, 6.0, 7.5, 10.0, 19.0};
    const char *path = tmp_file(0, ".csv", "");
    draw_traces(path, &truth, 6, load, held, 0.8);
    struct clock_trace *t;
    size_t n;
    struct ts_err err;
    ck_assert_msg(clock_traces_read(path, &t, &n, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(n, 6);
    for (size_t i = 0; i < n; i++) {
        ck_assert(fabs(t[i].held_ms - held[i]) < 1e-9 && t[i].n > 10);
        t[i].flops = load[i] * truth.held_flops * held[i] * 1e-3;
    }
    struct clock_params p = {.held_flops = truth.held_flops};
    double rms;
    ck_assert_int_eq(clock_fit(t, n, 0.8, &p, &rms, &err), 0);
    ck_assert_msg(rms < 1e-3, "rms %g", rms);
    ck_assert_msg(fabs(p.k - truth.k) < 0.01 && fabs(p.tau_s / truth.tau_s - 1) < 0.1 && fabs(p.lo - truth.lo) < 0.05 &&
                      fabs(p.hi - truth.hi) < 0.05,
                  "k %g tau %g lo %g hi %g", p.k, p.tau_s, p.lo, p.hi);
    clock_traces_free(t, n);
    remove(path);
}
END_TEST

START_TEST(bad_traces_are_refused_by_line_and_field)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"x,y\n", ":1: not a warm trace"},
        {"label,phase,round,graph,t_s,ms\nstep,warm,0,-1,0.1,1\n", ":2: field label"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",hot,0,-1,0.1,1\n", ":2: field phase"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",warm,0,-1,0.1,0\n", ":2: field ms"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",warm,0,-1\n", ":2: field t_s"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",warm,0,-1,0.1,4e888\n", ":2: field ms"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",warm,0,-1,nan,1\n", ":2: field t_s"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 65 logits: step\",warm,0,-1,0.1,1\n", ":2: field label"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",timed,0,0,0.1,1\n", ":2: field phase"},
        {"label,phase,round,graph,t_s,ms\n\"step 1x64 over 0 cached, 64 logits: step\",warm,0,-1,0.1,1\n", "no timed replays"},
        {"label,phase,round,graph,t_s,ms\n\"other\",warm,0,-1,0.1,1\n", "no step's warm trace"},
    };
    const char *path = tmp_file(0, ".csv", "");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(path, bad[i].text);
        struct clock_trace *t;
        size_t n;
        struct ts_err err;
        ck_assert_int_eq(clock_traces_read(path, &t, &n, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[i].want) != NULL, "case %zu: %s", i, err.msg);
    }
    remove(path);
    struct clock_trace *t;
    size_t n;
    struct ts_err err;
    ck_assert_int_eq(clock_traces_read("/nonexistent/trace.csv", &t, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("clock");
    ck_case(s, a_cool_card_runs_a_heavy_step_faster, 120);
    ck_case(s, light_steps_keep_their_price_and_cool_the_card, 120);
    ck_case(s, theta_is_a_clamped_ramp, 120);
    ck_case(s, shipped_parameters_and_bad_lines, 120);
    ck_case(s, fit_recovers_the_parameters_of_drawn_traces, 120);
    ck_case(s, bad_traces_are_refused_by_line_and_field, 120);
    return run_suite("clock", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
