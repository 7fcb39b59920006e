/*
 * check_plan.c: tessera plan's parts (plan.h). The SLO's grammar, good and bad. The capacity search on
 * a monotone toy whose capacity is known (a judge that holds up to C): it finds C within its
 * tolerance, and says so at either end of its range. On the simulator, a single card serving one
 * request at a time at saturation, whose capacity under a loose latency bound is the overload rule's
 * in closed form (offered = 1.1 x served, both measured); the found capacity holds and 1.1 times it does
 * not. The watch's miss counts against the summary's own --slo count (two paths); an early stop
 * changes no verdict, and a stopped run does miss when run to its end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "presets.h"
#include "setup.h"
#include "sim.h"
#include "test_util.h"

START_TEST(slo_grammar)
{
    struct plan_slo slo;
    struct ts_err err;
    ck_assert_int_eq(plan_slo_parse("p99=5s,mean=2,first-block=500ms", &slo, &err), 0);
    ck_assert_int_eq(slo.n, 3);
    ck_assert_int_eq(slo.t[0].kind, TERM_SHARE);
    ck_assert_double_eq_tol(slo.t[0].share, 0.99, 1e-12);
    ck_assert_double_eq_tol(slo.t[0].bound_s, 5, 1e-12);
    ck_assert_int_eq(slo.t[1].kind, TERM_MEAN);
    ck_assert_double_eq_tol(slo.t[1].bound_s, 2, 1e-12);
    ck_assert_int_eq(slo.t[2].kind, TERM_FIRST_BLOCK);
    ck_assert_double_eq_tol(slo.t[2].bound_s, 0.5, 1e-12);
    ck_assert_int_eq(plan_slo_parse("p99.9=1s,ttft=0.2s", &slo, &err), 0);
    ck_assert_double_eq_tol(slo.t[0].share, 0.999, 1e-12);
    ck_assert_int_eq(slo.t[1].kind, TERM_FIRST_BLOCK);
    static const char *const bad[] = {"", "p99", "p99=", "p99=0", "p99=-1s", "p99=5x", "p0=1s", "p100=1s",
                                      "pq=1s", "median=1s", "p99=inf", "p99=nan",
                                      "p50=1,p60=1,p70=1,p80=1,p90=1", "p99=1,mean=1,mean=1,mean=1,mean=1,mean=1,mean=1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(plan_slo_parse(bad[i], &slo, &err) == -1, "'%s' was taken", bad[i]);
    /* as many percentile terms as the watch holds, and a mean and a first block beside them */
    ck_assert_int_eq(plan_slo_parse("p50=1,p60=1,p70=1,p80=1,mean=1,ttft=1", &slo, &err), 0);
    ck_assert_int_eq(slo.n, 6);
}
END_TEST

START_TEST(misses_a_share_allows_by_hand)
{
    /* n - ceil(share n) of n requests may miss a pNN term's bound: 99% of 150 is 148.5, so 149 must be
     * within and 1 may miss; 90% of 25 is 22.5: 2; 50% of 3 is 1.5: 1; 90% of 200 is 180: 20 */
    static const struct {
        const char *slo;
        int64_t n, misses;
    } by_hand[] = {{"p99=1s", 150, 1}, {"p90=1s", 25, 2}, {"p50=1s", 3, 1}, {"p90=1s", 200, 20}, {"p99.9=1s", 1000, 1}};
    for (size_t i = 0; i < sizeof by_hand / sizeof *by_hand; i++) {
        struct plan_slo slo;
        struct ts_err err;
        ck_assert_int_eq(plan_slo_parse(by_hand[i].slo, &slo, &err), 0);
        struct sim_watch w;
        plan_watch_of(&slo, by_hand[i].n, true, &w);
        ck_assert_int_eq(w.n, 1);
        ck_assert_msg(w.misses[0] == by_hand[i].misses, "%s of %lld: %lld may miss, by hand %lld", by_hand[i].slo,
                      (long long)by_hand[i].n, (long long)w.misses[0], (long long)by_hand[i].misses);
    }
}
END_TEST

/* --- the search on a toy whose capacity is known ------------------------------------------------- */

struct toy {
    double cap;
    int calls;
};

static int toy_judge(void *ctx, double rps, bool *held, struct ts_err *err)
{
    (void)err;
    struct toy *t = ctx;
    t->calls++;
    *held = rps <= t->cap;
    return 0;
}

START_TEST(search_finds_a_known_capacity)
{
    static const double caps[] = {0.0123, 0.5, 1, 3.7, 64.2, 777};
    static const double tols[] = {0.02, 0.001, 0.1};
    for (size_t i = 0; i < sizeof caps / sizeof *caps; i++)
        for (size_t j = 0; j < sizeof tols / sizeof *tols; j++) {
            struct toy t = {caps[i], 0};
            struct plan_search o = {.start_rps = 1, .tolerance = tols[j], .min_rps = 1e-3, .max_rps = 1e4};
            struct plan_capacity c;
            struct ts_err err;
            ck_assert_int_eq(plan_capacity(&o, toy_judge, &t, &c, &err), 0);
            ck_assert_msg(c.rps <= caps[i] && c.failed_rps > caps[i], "C %g: held %g, failed %g", caps[i], c.rps,
                          c.failed_rps);
            ck_assert_msg(c.failed_rps - c.rps <= tols[j] * c.rps, "C %g tol %g: held %g, failed %g", caps[i], tols[j],
                          c.rps, c.failed_rps);
            ck_assert_int_eq(c.probes, t.calls);
            /* doubling or halving to the bracket, then bisection: logarithmic, not linear, in the range */
            ck_assert_int_le(c.probes, 16 + (int)ceil(log2(1 / tols[j])) + 2);
        }
    /* the stop, over capacities spread across the range: the rate that missed within the tolerance of the
     * one that held, relative to it (plan.h), however the last halving falls */
    for (int i = 0; i < 400; i++) {
        struct toy t = {0.013 * pow(1.021, i), 0};
        struct plan_search o = {.start_rps = 1, .tolerance = 0.1, .min_rps = 1e-3, .max_rps = 1e4};
        struct plan_capacity c;
        struct ts_err err;
        ck_assert_int_eq(plan_capacity(&o, toy_judge, &t, &c, &err), 0);
        ck_assert_msg(c.rps <= t.cap && c.failed_rps > t.cap && c.failed_rps - c.rps <= 0.1 * c.rps,
                      "C %g: held %g, failed %g", t.cap, c.rps, c.failed_rps);
    }
    /* a capacity beyond the range: every rate up to the most held; below it: none */
    struct toy hi = {1e9, 0}, lo = {1e-9, 0};
    struct plan_search o = {.start_rps = 1, .tolerance = 0.02, .min_rps = 0.01, .max_rps = 100};
    struct plan_capacity c;
    struct ts_err err;
    ck_assert_int_eq(plan_capacity(&o, toy_judge, &hi, &c, &err), 0);
    ck_assert_double_eq(c.rps, 100);
    ck_assert_double_eq(c.failed_rps, 0);
    ck_assert_int_eq(plan_capacity(&o, toy_judge, &lo, &c, &err), 0);
    ck_assert_double_eq(c.rps, 0);
    ck_assert_double_eq(c.failed_rps, 0.01);
}
END_TEST

/* --- on the simulator -------------------------------------------------------------------------- */

/* SGLang's preset on an H200 (one request at a time), fixed lengths and a fixed decoder: every request
 * takes the same service; near-regular arrivals (gamma, CV 0.05). */
static void one_at_a_time(struct sim_config *c, int64_t requests)
{
    test_config(c);
    struct ts_err err;
    ck_assert_msg(preset_apply("sglang", c, &err) == 0, "%s", err.msg);
    snprintf(c->gpu, sizeof c->gpu, "h200");
    snprintf(c->lengths, sizeof c->lengths, "fixed:128,64");
    snprintf(c->decode, sizeof c->decode, "fixed:2");
    snprintf(c->arrivals, sizeof c->arrivals, "gamma:0.05");
    c->gen_len = 64;
    c->requests = requests;
    struct sim_setup setup;
    ck_assert_msg(sim_config_validate(c, &setup, &err) == 0, "%s", err.msg);
}

/* The ShareGPT-length workload on dLLM-Serve's preset on an H100: batches, and a queue that grows. */
static void batching(struct sim_config *c, int64_t requests)
{
    test_config(c);
    struct ts_err err;
    ck_assert_msg(preset_apply("dllm-serve", c, &err) == 0, "%s", err.msg);
    snprintf(c->gpu, sizeof c->gpu, "h100");
    snprintf(c->cost, sizeof c->cost, "calibrated"); /* (as tessera sim resolves the preset's on an H100) */
    c->extrapolate = true;
    c->requests = requests;
    struct sim_setup setup;
    ck_assert_msg(sim_config_validate(c, &setup, &err) == 0, "%s", err.msg);
}

static struct plan_run judge_at(const struct sim_config *base, const struct plan_slo *slo, double rps, bool early)
{
    struct sim_config c = *base;
    c.rps = rps;
    struct plan_run r;
    struct ts_err err;
    ck_assert_msg(plan_judge(&c, slo, early, &r, &err) == 0, "%s", err.msg);
    return r;
}

struct real {
    struct sim_config c;
    const struct plan_slo *slo;
};

static int real_judge(void *ctx, double rps, bool *held, struct ts_err *err)
{
    (void)err;
    struct real *r = ctx;
    *held = judge_at(&r->c, r->slo, rps, true).held;
    return 0;
}

START_TEST(saturated_server_capacity_in_closed_form)
{
    /* a bound no request comes near: the overload rule alone decides, and a single server saturates
     * at its served rate S; overloaded where the offered rate passes 1.1 S. Offered is r times the
     * seed's arrivals' own ratio k (their times scale with 1/r), so the capacity is 1.1 S / k. */
    struct sim_config c;
    one_at_a_time(&c, 300);
    struct plan_slo slo;
    struct ts_err err;
    ck_assert_int_eq(plan_slo_parse("p99=100000s", &slo, &err), 0);
    const struct plan_run sat = judge_at(&c, &slo, 100, false);
    ck_assert(sat.overloaded && !sat.held);
    const struct plan_run low = judge_at(&c, &slo, 1, false);
    ck_assert(low.held);
    const double served = sat.m.req_s, k = low.m.offered_rps / 1.0, expect = 1.1 * served / k;
    struct real ctx = {c, &slo};
    struct plan_search o = {.start_rps = 1, .tolerance = 0.004, .min_rps = 1e-3, .max_rps = 1e4};
    struct plan_capacity cap;
    ck_assert_int_eq(plan_capacity(&o, real_judge, &ctx, &cap, &err), 0);
    ck_assert_msg(cap.rps <= expect * 1.002 && cap.failed_rps >= expect * 0.998,
                  "closed form %g (served %g, k %g): held %g, failed %g", expect, served, k, cap.rps, cap.failed_rps);
}
END_TEST

START_TEST(found_capacity_holds_and_more_does_not)
{
    struct sim_config cs[2];
    one_at_a_time(&cs[0], 200);
    batching(&cs[1], 200);
    static const char *const slos[] = {"p90=2s", "p99=40s,mean=25s"};
    for (int i = 0; i < 2; i++) {
        struct plan_slo slo;
        struct ts_err err;
        ck_assert_int_eq(plan_slo_parse(slos[i], &slo, &err), 0);
        struct real ctx = {cs[i], &slo};
        struct plan_search o = {.start_rps = 1, .tolerance = 0.02, .min_rps = 1e-3, .max_rps = 1e4};
        struct plan_capacity cap;
        ck_assert_int_eq(plan_capacity(&o, real_judge, &ctx, &cap, &err), 0);
        ck_assert_msg(cap.rps > 0 && cap.failed_rps > 0, "%s: held %g, failed %g", slos[i], cap.rps, cap.failed_rps);
        ck_assert(judge_at(&cs[i], &slo, cap.rps, false).held);
        ck_assert_msg(!judge_at(&cs[i], &slo, 1.1 * cap.rps, false).held, "%s: %g held, and 1.1 times it", slos[i], cap.rps);
    }
}
END_TEST

START_TEST(watch_counts_as_the_summary_does)
{
    /* a workload some of whose requests the model cannot hold (ShareGPT's longest prompts past
     * LLaDA2.0-mini's positions): each rejected one a miss, as the summary's --slo share counts it */
    {
        struct sim_config c;
        test_config(&c);
        struct ts_err err;
        ck_assert_msg(preset_apply("sglang", &c, &err) == 0, "%s", err.msg);
        snprintf(c.gpu, sizeof c.gpu, "h200");
        c.requests = 300, c.rps = 0.5, c.slo = 30;
        snprintf(c.cost, sizeof c.cost, "calibrated"); /* (as tessera sim resolves the preset on its card) */
        c.extrapolate = true;
        struct sim_setup setup;
        ck_assert_msg(sim_config_validate(&c, &setup, &err) == 0, "%s", err.msg);
        struct plan_slo slo = {.n = 1, .t = {{.kind = TERM_SHARE, .share = 0.5, .bound_s = 30}}};
        struct plan_run r;
        ck_assert_msg(plan_judge(&c, &slo, false, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_gt(r.m.num_rejected, 0);
        ck_assert_double_eq_tol(r.value[0], (double)r.m.slo_met / (double)r.m.num_requests, 1e-12);
        ck_assert(r.value[0] <= 1 - (double)r.m.num_rejected / (double)r.m.num_requests);
    }
    /* the watch's misses of a bound (plan_judge's shares) against the summary's --slo count of the
     * requests within it: two paths, one number */
    struct sim_config c;
    batching(&c, 200);
    static const double bounds[] = {5, 20, 40};
    for (int rate = 0; rate < 3; rate++)
        for (int b = 0; b < 3; b++) {
            c.rps = 0.1 * (rate + 1);
            c.slo = bounds[b];
            struct plan_slo slo = {.n = 1, .t = {{.kind = TERM_SHARE, .share = 0.5, .bound_s = bounds[b]}}};
            struct plan_run r;
            struct ts_err err;
            ck_assert_int_eq(plan_judge(&c, &slo, false, &r, &err), 0);
            ck_assert_int_gt(r.m.num_requests, 0);
            ck_assert_double_eq_tol(r.value[0], (double)r.m.slo_met / (double)r.m.num_requests, 1e-12);
        }
}
END_TEST

/* c run to its end with a watch of bound_s allowing `misses` (stop): its status, and the misses. */
static int watched(const struct sim_config *c, double bound_s, int64_t misses, bool stop, int64_t *missed)
{
    struct ts_err err;
    struct sim *s = sim_create(c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    struct sim_watch w = {.n = 1, .bound_s = {bound_s}, .misses = {misses}, .stop = stop};
    sim_set_watch(s, &w);
    const int rc = sim_run(s, &err);
    *missed = sim_watch_missed(s, 0);

    sim_destroy(s);
    return rc;
}

START_TEST(watch_stops_only_when_certain)
{
    /* a run whose whole count of misses is M: allowed M it runs to its end (at every look before, the
     * misses certain were at most M); allowed fewer it stops, or ends having missed more */
    struct sim_config cs[2];
    batching(&cs[0], 300);
    one_at_a_time(&cs[1], 300);
    static const double rates[] = {0.2, 0.25, 4.2, 4.4};
    static const double bounds[] = {25, 30, 4, 8};
    int stops = 0;
    for (int i = 0; i < 4; i++) {
        struct sim_config c = cs[i / 2];
        c.rps = rates[i];
        int64_t m, again;
        ck_assert_int_eq(watched(&c, bounds[i], INT64_MAX, false, &m), 0);
        ck_assert_msg(m > 0, "rate %g, bound %g: no miss", rates[i], bounds[i]);
        ck_assert_msg(watched(&c, bounds[i], m, true, &again) == 0 && again == m, "rate %g: allowed its %lld misses, "
                      "it stopped", rates[i], (long long)m);
        for (int64_t fewer = m - 1; fewer >= 0 && fewer >= m - 3; fewer--) {
            const int rc = watched(&c, bounds[i], fewer, true, &again);
            ck_assert(rc == SIM_STOPPED || (rc == 0 && again == m));
            stops += rc == SIM_STOPPED;
        }
    }
    ck_assert_int_gt(stops, 0);
}
END_TEST

START_TEST(early_stop_changes_no_verdict)
{
    struct sim_config cs[2];
    batching(&cs[0], 300);
    one_at_a_time(&cs[1], 300);
    static const char *const slos[] = {"p99=30s", "p95=1s,p50=0.5s"};
    static const double rates[] = {0.05, 0.15, 0.21, 0.25, 0.5, 1, 2, 3, 4, 4.5, 8};
    int stopped = 0;
    for (int i = 0; i < 2; i++) {
        struct plan_slo slo;
        struct ts_err err;
        ck_assert_int_eq(plan_slo_parse(slos[i], &slo, &err), 0);
        for (size_t j = 0; j < sizeof rates / sizeof *rates; j++) {
            const struct plan_run e = judge_at(&cs[i], &slo, rates[j], true), f = judge_at(&cs[i], &slo, rates[j], false);
            ck_assert_msg(e.held == f.held, "%s at %g: early %d, whole %d", slos[i], rates[j], e.held, f.held);
            if (e.stopped) { /* certain to miss its term: the whole run does */
                stopped++;
                ck_assert_int_ge(e.missed, 0);
                ck_assert_msg(f.value[e.missed] < slo.t[e.missed].share, "%s at %g: stopped, yet the run kept term %d",
                              slos[i], rates[j], e.missed);
                ck_assert_int_le(e.request_steps, f.request_steps);
            }
        }
    }
    ck_assert_int_gt(stopped, 3); /* (the early stop was tried, not only the whole runs) */
}
END_TEST

START_TEST(terms_of_a_summary)
{
    struct plan_slo slo;
    struct ts_err err;
    ck_assert_int_eq(plan_slo_parse("p90=1s,mean=2s,first-block=0.5s", &slo, &err), 0);
    struct sim_summary m = {.num_requests = 100, .num_finished = 98, .lat_mean_s = 1.9, .ttfb_mean_s = 0.5};
    int64_t missed[SIM_WATCH_MAX] = {10};
    double v[PLAN_TERMS];
    ck_assert_int_eq(plan_terms(&slo, &m, missed, v), -1); /* 90 of 100 within: kept at its edge */
    ck_assert_double_eq_tol(v[0], 0.9, 1e-12);
    missed[0] = 11;
    ck_assert_int_eq(plan_terms(&slo, &m, missed, v), 0);
    missed[0] = 0;
    m.lat_mean_s = 2.01;
    ck_assert_int_eq(plan_terms(&slo, &m, missed, v), 1);
    m.lat_mean_s = 1, m.ttfb_mean_s = 0.51;
    ck_assert_int_eq(plan_terms(&slo, &m, missed, v), 2);
    m.num_finished = 0, m.ttfb_mean_s = 0; /* nothing finished: no mean is kept */
    ck_assert_int_eq(plan_terms(&slo, &m, missed, v), 1);
}
END_TEST

/* a rate's replicates: overloaded ones fail it past the interval's tail (5% of 40 at 90%), one whose
 * step ran vLLM's sampler out of memory fails it alone */
START_TEST(replicates_fail_by_hand)
{
    const double tail = (100.0 - 90) / 200;
    ck_assert(!plan_replicates_fail(0, 0, 40, tail));
    ck_assert(!plan_replicates_fail(2, 0, 40, tail)); /* 2 of 40: at the tail, kept */
    ck_assert(plan_replicates_fail(3, 0, 40, tail));
    ck_assert(plan_replicates_fail(0, 1, 40, tail));
    ck_assert(plan_replicates_fail(0, 1, 1, 0.5));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan");
    ck_case(s, slo_grammar, 120);
    ck_case(s, misses_a_share_allows_by_hand, 120);
    ck_case(s, search_finds_a_known_capacity, 120);
    ck_case(s, terms_of_a_summary, 120);
    ck_case(s, replicates_fail_by_hand, 120);
    ck_case(s, saturated_server_capacity_in_closed_form, 120);
    ck_case(s, found_capacity_holds_and_more_does_not, 120);
    ck_case(s, watch_counts_as_the_summary_does, 120);
    ck_case(s, early_stop_changes_no_verdict, 120);
    ck_case(s, watch_stops_only_when_certain, 120);
    return run_suite("plan", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
