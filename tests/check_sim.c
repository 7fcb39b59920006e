/*
 * check_sim.c: whole runs. Golden scenarios with fixed seeds pin exact results; the same seed gives
 * the same run bit for bit; a request's decode stream does not depend on the batch it runs in;
 * the SQLite output holds what the summary says; presets and overrides resolve; what a router reads
 * of a replica matches its running requests.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "golden.h"
#include "presets.h"
#include "sim_internal.h"
#include "test_util.h"

static struct sim *run(struct sim_config *c)
{
    struct ts_err err;
    struct sim *s = sim_create(c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    sim_keep_requests(s);
    ck_assert_int_eq(sim_run(s, NULL), 0);
    return s;
}

/* Overload: the requests outstanding when a third had arrived and at the last arrival, counted again
 * from every request's arrival and finish (an independent count), grow more than twice over where the
 * arrivals outrun the card (8 req/s on LLaDA-8B's dual cache) and do not at half a request a second. */
START_TEST(overload_said_where_outstanding_grows)
{
    const double rates[] = {8, 0.5};
    for (int k = 0; k < 2; k++) {
        struct sim_config c;
        test_config(&c);
        c.requests = 90;
        c.rps = rates[k];
        c.gen_len = 128;
        struct sim *s = run(&c);
        struct sim_summary m;
        sim_get_summary(s, &m);
        const int64_t n = m.num_requests, at[2] = {sim_request(s, n / 3)->arrival_ns, sim_request(s, n - 1)->arrival_ns};
        int64_t out[2] = {0, 0};
        for (int64_t i = 0; i < n; i++) {
            const struct request *r = sim_request(s, i);
            const int64_t gone = r->state == REQ_FINISHED ? r->finish_ns : r->arrival_ns;
            for (int j = 0; j < 2; j++)
                out[j] += r->arrival_ns <= at[j] && gone >= at[j] && i != (j ? n - 1 : n / 3);
        }
        ck_assert_int_eq(m.outstanding[0], out[0]);
        ck_assert_int_eq(m.outstanding[1], out[1]);
        ck_assert_msg(m.overloaded == (k == 0), "at %g req/s: outstanding %lld then %lld, overloaded %d", rates[k],
                      (long long)out[0], (long long)out[1], m.overloaded);
        ck_assert(fabs(m.offered_rps - (double)(n - 1) / (at[1] * 1e-9)) < 1e-9 * m.offered_rps);
        sim_destroy(s);
    }
}
END_TEST

/* Load control along a published sweep (LLaDA2.0-mini: 70.15 at threshold 0.95, 67.90 at 0.85): a run
 * that decodes at 0.95 until its last arrival and at 0.85 after it expects the accuracy of each token's
 * threshold, weighted by the tokens committed at each (counted here from the requests' own progress at
 * the switch); at 0.85 its decoder's TPF is the published 3.31. */
START_TEST(expected_accuracy_along_a_sweep)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.model, sizeof c.model, "llada2.0-mini");
    snprintf(c.policy, sizeof c.policy, "block");
    snprintf(c.decode, sizeof c.decode, "threshold:llada2-mini-sweep");
    c.gen_len = 128, c.block = 32;
    struct ts_err err;
    struct sim *s = sim_create_fed(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    sim_keep_requests(s);
    double tpf;
    ck_assert_msg(sim_scale_decode(s, 1, 0.95, &tpf, &err) == 0, "%s", err.msg);
    ck_assert(tpf == 2.55);
    for (int i = 0; i < 8; i++) {
        const struct trace_req tr = {.arrival_ns = i * 50000000LL, .prompt = 200, .output = 128};
        sim_advance(s, tr.arrival_ns);
        sim_feed(s, &tr, i, tr.arrival_ns);
    }
    int64_t before = 0; /* the tokens committed by the switch */
    for (int64_t i = 0; i < 8; i++)
        before += sim_request(s, i)->decoded_total;
    ck_assert(before > 0);
    ck_assert_msg(sim_scale_decode(s, 0, 0.85, &tpf, &err) == 0, "%s", err.msg);
    ck_assert(fabs(tpf - 3.31) < 1e-12);
    ck_assert_int_eq(sim_run(s, NULL), 0);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 8);
    int64_t all = 0;
    for (int64_t i = 0; i < 8; i++)
        all += sim_request(s, i)->decoded_total;
    ck_assert(all > before);
    const double want = (70.15 * (double)before + 67.90 * (double)(all - before)) / (double)all;
    ck_assert_msg(fabs(m.expected_accuracy - want) < 1e-9, "%.6f against %.6f", m.expected_accuracy, want);
    ck_assert_str_eq(m.accuracy_task, "a subset of LLaDA2.0's");
    ck_assert_int_ne(sim_scale_decode(s, 0, 0.7, &tpf, &err), 0); /* below the sweep */
    sim_destroy(s);
}
END_TEST

/* A run's expected accuracy is its decode profile's published score on its task (dInfer's GSM8K run with
 * a cache, Table 1: 80.97); none where the decoder reads no profile; and not known, the task kept,
 * once load control moved the decoder off the profile's setting (a factor of 1 leaves it). */
START_TEST(expected_accuracy_from_the_profile)
{
    struct sim_config c;
    test_config(&c);
    c.requests = 10;
    snprintf(c.decode, sizeof c.decode, "hierarchical:dinfer-moe-cache-gsm8k");
    struct sim *s = run(&c);
    struct sim_summary m;
    double tpf;
    struct ts_err err;
    sim_get_summary(s, &m);
    ck_assert(m.expected_accuracy == 80.97 && strcmp(m.accuracy_task, "GSM8K") == 0);
    const char *path = tmp_path(3, ".db"); /* the run's summary row holds them */
    ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
    sqlite3 *db;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT expected_accuracy, accuracy_task FROM summary", -1, &st, NULL), 0);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert(sqlite3_column_double(st, 0) == 80.97 && strcmp((const char *)sqlite3_column_text(st, 1), "GSM8K") == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ck_assert_int_eq(sim_scale_decode(s, 1.0, 0.9, &tpf, &err), 0);
    sim_get_summary(s, &m);
    ck_assert(m.expected_accuracy == 80.97);
    ck_assert_int_eq(sim_scale_decode(s, 0.5, 0.8, &tpf, &err), 0);
    ck_assert(tpf < 3.42);
    sim_get_summary(s, &m);
    ck_assert(m.expected_accuracy < 0 && strcmp(m.accuracy_task, "GSM8K") == 0);
    sim_destroy(s);
    snprintf(c.decode, sizeof c.decode, "fixed:2");
    s = run(&c);
    sim_get_summary(s, &m);
    ck_assert(m.expected_accuracy < 0 && m.accuracy_task[0] == '\0');
    sim_destroy(s);
}
END_TEST

/* Golden: the default scenario (`tessera sim` with no options). If a deliberate model change moves
 * these numbers, update them in the same commit and say why. */
START_TEST(golden_default_scenario)
{
    struct sim_config c;
    test_config(&c);
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_requests, 200);
    ck_assert_int_eq(m.num_finished, 200);
    ck_assert_int_eq(m.num_rejected, 0);
    ck_assert_int_eq(m.tokens_decoded, 200 * 256);
    ck_assert_int_eq(m.num_steps, GOLDEN_DEFAULT_STEPS);
    ck_assert_int_eq(m.makespan_ns, GOLDEN_DEFAULT_MAKESPAN_NS);
    ck_assert_int_eq(m.content_tokens, GOLDEN_DEFAULT_CONTENT);
    sim_destroy(s);
}
END_TEST

START_TEST(golden_fast_dllm_on_4090)
{
    struct sim_config c;
    test_config(&c);
    struct ts_err err;
    ck_assert_int_eq(preset_apply("fast-dllm", &c, &err), 0);
    ck_assert_int_eq(param_values_set(&c.params, "max-batch", "0", &err), 0); /* as large as fit */
    snprintf(c.gpu, sizeof c.gpu, "rtx4090");
    snprintf(c.lengths, sizeof c.lengths, "lognormal:5.5,0.5,5.0,0.5");
    c.requests = 64;
    c.rps = 4;
    c.seed = 42;
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.static_batch, GOLDEN_FAST_BATCH);
    ck_assert_int_eq(m.num_steps, GOLDEN_FAST_STEPS);
    ck_assert_int_eq(m.makespan_ns, GOLDEN_FAST_MAKESPAN_NS);
    sim_destroy(s);
}
END_TEST

static void summary_of(struct sim_config *c, struct sim_summary *m)
{
    struct sim *s = run(c);
    sim_get_summary(s, m);
    sim_destroy(s);
}

START_TEST(golden_lookahead_on_4090)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.scheduler, sizeof c.scheduler, "lookahead");
    snprintf(c.gpu, sizeof c.gpu, "rtx4090");
    snprintf(c.decode, sizeof c.decode, "threshold:llada-gsm8k");
    c.requests = 200;
    c.rps = 4;
    c.seed = 7;
    struct sim_summary m;
    summary_of(&c, &m);
    ck_assert_int_eq(m.num_steps, GOLDEN_LOOKAHEAD_STEPS);
    ck_assert_int_eq(m.makespan_ns, GOLDEN_LOOKAHEAD_MAKESPAN_NS);
    ck_assert_int_eq(m.num_stalls, GOLDEN_LOOKAHEAD_STALLS);
}
END_TEST

/* Live mode's hook: a fake executor that takes twice the cost model's time for every step and
 * counts releases. The clock follows the executor; every request's KV state is released. */
struct fake_exec {
    struct cost_ctx cctx;
    int64_t steps, releases;
    int32_t released[64];
    int64_t host_steps;
};

static int fake_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    struct fake_exec *f = ctx;
    if (cost_roofline.step_s(&f->cctx, sd, seconds, NULL, err))
        return -1;
    *seconds *= 2;
    f->steps++;
    return 0;
}

static void fake_release(void *ctx, int32_t req_id)
{
    struct fake_exec *f = ctx;
    f->releases++;
    if (req_id >= 0 && req_id < 64)
        f->released[req_id]++;
}

START_TEST(executor_drives_the_clock)
{
    struct sim_config c;
    test_config(&c);
    c.requests = 40;
    c.rps = 2;
    struct sim_summary base, live;
    summary_of(&c, &base);
    ck_assert_int_eq(base.live_steps, 0);
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    sim_keep_requests(s);
    struct fake_exec f = {.cctx = s->cctx};
    struct sim_executor ex = {&f, fake_step, fake_release, NULL};
    sim_set_executor(s, &ex);
    ck_assert_int_eq(sim_run(s, NULL), 0);
    sim_get_summary(s, &live);
    ck_assert_int_eq(live.live_steps, live.num_steps);
    ck_assert_int_eq(f.steps, live.num_steps);
    /* the model's predictions are half the "measured" times, step by step */
    ck_assert(fabs(live.live_model_s * 2 - live.live_measured_s) < 1e-9 * live.live_measured_s);
    ck_assert(fabs(live.live_abs_rel / (double)live.live_steps - 0.5) < 1e-12);
    /* slower steps: a longer run and longer latencies than the same workload priced by the model */
    ck_assert_int_eq(live.num_finished, 40);
    ck_assert_int_gt(live.makespan_ns, base.makespan_ns);
    ck_assert(live.lat_p50_s > base.lat_p50_s);
    /* every request released at least once (at its finish; preemptions release too) */
    for (int i = 0; i < 40; i++)
        ck_assert_int_ge(f.released[i], 1);
    ck_assert_int_ge(f.releases, 40);
    sim_destroy(s);
}
END_TEST

static int fixed_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    (void)err;
    struct fake_exec *f = ctx;
    f->steps++;
    f->host_steps += sd->tot.host_scan_tokens > 0;
    *seconds = 1e-3;
    return 0;
}

/* Live, a step over K/V offloaded to host memory (HERALD's) is timed whole by its executor, host part
 * and all: the clock moves by the measured time alone, and the model's prediction it is set against
 * holds the host part (here before the step, which the model adds to the step's GPU time). */
START_TEST(executor_times_the_host_part)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.model, sizeof c.model, "sdar-8b");
    snprintf(c.policy, sizeof c.policy, "herald");
    struct ts_err err;
    ck_assert_int_eq(param_values_set(&c.params, "herald-overlap", "0", &err), 0);
    ck_assert_int_eq(param_values_set(&c.params, "herald-scan-gbs", "1", &err), 0); /* a slow host: its part long */
    c.requests = 6;
    c.rps = 1;
    struct sim_summary live;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    struct fake_exec f = {.cctx = s->cctx};
    struct sim_executor ex = {&f, fixed_step, fake_release, NULL};
    sim_set_executor(s, &ex);
    ck_assert_int_eq(sim_run(s, NULL), 0);
    sim_get_summary(s, &live);
    ck_assert_int_gt(f.host_steps, 0);
    ck_assert_int_eq(live.live_steps, f.steps);
    ck_assert_double_eq_tol(live.busy_s, 1e-3 * (double)f.steps, 1e-9);
    ck_assert_double_eq_tol(live.live_measured_s, live.busy_s, 1e-9);
    /* the model's steps (each scan of thousands of keys at 1 GB/s: milliseconds) far above the fake's */
    ck_assert(live.live_model_s > 2 * live.live_measured_s);
    ck_assert_int_eq(live.live_host_steps, f.host_steps); /* (each host step scores: herald's first of a block) */
    ck_assert_double_eq_tol(live.live_host_measured_s, 1e-3 * (double)f.host_steps, 1e-9);
    ck_assert(live.live_host_model_s > 0 && live.live_host_model_s < live.live_model_s);
    sim_destroy(s);
}
END_TEST

START_TEST(same_seed_same_results)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.decode, sizeof c.decode, "threshold:llada-math");
    snprintf(c.arrivals, sizeof c.arrivals, "gamma:2.5");
    c.requests = 150;
    c.rps = 3;
    struct sim_summary a, b;
    summary_of(&c, &a);
    summary_of(&c, &b);
    a.run_wall_s = b.run_wall_s = 0; /* host time, not a simulation result */
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
    c.seed = 2;
    summary_of(&c, &b);
    ck_assert_int_ne(a.makespan_ns, b.makespan_ns);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The f-quantile of sorted v[0..n): linear between the ranks either side of (n - 1) f. */
static double naive_quantile(const double *v, int64_t n, double f)
{
    const double at = (double)(n - 1) * f;
    const int64_t i = (int64_t)at;
    return i + 1 < n ? v[i] + (at - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* The summary's latency statistics are what the requests' own times give, recomputed naively here
 * (sample standard deviation, quantiles by rank, span as max - min, first block and queueing as
 * their own means) on a load that queues. */
START_TEST(summary_statistics_from_the_requests)
{
    struct sim_config c;
    test_config(&c);
    c.requests = 300;
    c.rps = 20;
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    double *lat = malloc(sizeof *lat * (size_t)s->num_reqs), sum = 0, ttfb = 0, queue = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < s->num_reqs; i++) {
        const struct request *r = sim_request(s, i);
        if (r->state != REQ_FINISHED)
            continue;
        lat[n] = (double)(r->finish_ns - r->arrival_ns) * 1e-9;
        sum += lat[n++];
        ttfb += (double)(r->first_block_ns - r->arrival_ns) * 1e-9;
        queue += (double)(r->admitted_ns - r->arrival_ns) * 1e-9;
    }
    ck_assert_int_eq(n, m.num_finished);
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    const double mean = sum / (double)n;
    double ss = 0;
    for (int64_t i = 0; i < n; i++)
        ss += (lat[i] - mean) * (lat[i] - mean);
    const double want[] = {mean, sqrt(ss / (double)(n - 1)), naive_quantile(lat, n, 0.5), naive_quantile(lat, n, 0.9),
                           naive_quantile(lat, n, 0.99), lat[n - 1] - lat[0], ttfb / (double)n, queue / (double)n};
    const double got[] = {m.lat_mean_s, m.lat_std_s, m.lat_p50_s, m.lat_p90_s, m.lat_p99_s, m.lat_span_s, m.ttfb_mean_s,
                          m.queue_mean_s};
    for (size_t k = 0; k < TS_ARRAY_LEN(want); k++)
        ck_assert_msg(fabs(got[k] - want[k]) <= 1e-9 * fmax(1.0, fabs(want[k])), "statistic %zu: %.9g, want %.9g", k,
                      got[k], want[k]);
    ck_assert_msg(queue > 0 && ttfb > queue, "the load does not queue (queue %g, first block %g)", queue, ttfb);
    free(lat);
    sim_destroy(s);
}
END_TEST

/* The summary's rates are what the requests' own rows give, recomputed here over a run that rejects
 * some of its requests (prompts past the model's positions) and whose outputs end off the blocks:
 * tokens and content (each request's C, its output within its G) over the span (its last finish),
 * finished requests over the span, energy over the span and over the finished requests, SLO
 * attainment over every request, query tokens and segments a step over the recorded steps. Its
 * database row then holds the summary column by column, each against these or the summary's own. */
START_TEST(summary_rates_and_columns_from_the_requests)
{
    enum { N = 60 };
    char *text = xmalloc(64 * (N + 1));
    int len = sprintf(text, "arrival_ns,prompt_tokens,output_tokens\n");
    for (int i = 0; i < N; i++) /* every tenth prompt past the 4,096 positions */
        len += sprintf(text + len, "%lld,%d,%d\n", (long long)i * 20000000, i % 10 == 9 ? 5000 : 100 + 37 * i % 400,
                       20 + 13 * i % 90);
    struct sim_config c;
    test_config(&c);
    snprintf(c.trace, sizeof c.trace, "%s", tmp_file(5, ".csv", text));
    free(text);
    c.requests = 0, c.rps = 0, c.gen_len = 0, c.slo = 1.0;
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    int64_t fin = 0, rej = 0, tokens = 0, content = 0, met = 0, last = 0, q = 0;
    for (int64_t i = 0; i < s->num_reqs; i++) {
        const struct request *r = sim_request(s, i);
        if (r->state == REQ_REJECTED) {
            rej++;
            continue;
        }
        fin++, tokens += r->decoded_total, content += r->C, last = TS_MAX(last, r->finish_ns);
        met += r->finish_ns - r->arrival_ns <= 1000000000;
    }
    for (size_t k = 0; k < s->num_steps; k++)
        q += s->steps[k].tot.q_tokens;
    ck_assert(rej == N / 10 && fin == N - rej && content < tokens && met > 0 && met < fin);
    const double span = (double)last * 1e-9, steps = (double)s->num_steps;
    const double want[] = {(double)tokens / span,   (double)content / span,   (double)fin / span,
                           m.energy_j / span,        m.energy_j / (double)fin, (double)met / N,
                           (double)q / steps,        (double)s->num_segs / steps};
    const double got[] = {m.throughput_tok_s, m.content_tok_s,   m.req_s,           m.mean_power_w,
                          m.energy_per_request_j, m.slo_attainment, m.mean_q_per_step, m.mean_segs_per_step};
    for (size_t k = 0; k < TS_ARRAY_LEN(want); k++)
        ck_assert_msg(fabs(got[k] - want[k]) <= 1e-12 * fabs(want[k]), "rate %zu: %.12g, want %.12g", k, got[k],
                      want[k]);
    /* overload, counted again from the requests: those arrived before a third of the way and before the
     * last arrival, less those gone by then (finished, or rejected on arrival), and the rule on them */
    int64_t outstanding[2] = {0, 0};
    const int64_t marks[2] = {N / 3, N - 1};
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < marks[k]; i++) {
            const struct request *r = sim_request(s, i);
            outstanding[k] += r->state != REQ_REJECTED && r->finish_ns >= sim_request(s, marks[k])->arrival_ns;
        }
    ck_assert_msg(outstanding[0] == m.outstanding[0] && outstanding[1] == m.outstanding[1],
                  "outstanding %lld, %lld; counted %lld, %lld", (long long)m.outstanding[0],
                  (long long)m.outstanding[1], (long long)outstanding[0], (long long)outstanding[1]);
    const double over = outstanding[1] > 2 * outstanding[0] + 5 && (N - 1) / ((N - 1) * 0.02) > 1.1 * want[2];
    const char *path = tmp_path(6, ".db");
    struct ts_err err;
    ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
    const struct {
        const char *col;
        double want;
    } cols[] = {
        {"run_id", 1},
        {"num_requests", N},
        {"num_finished", (double)fin},
        {"num_rejected", (double)rej},
        {"num_preemptions", (double)m.num_preemptions},
        {"num_steps", steps},
        {"request_steps", (double)s->num_segs},
        {"tokens_decoded", (double)tokens},
        {"content_tokens", (double)content},
        {"makespan_s", span},
        {"throughput_tok_s", want[0]},
        {"content_tok_s", want[1]},
        {"req_s", want[2]},
        {"lat_mean_s", m.lat_mean_s},
        {"lat_p50_s", m.lat_p50_s},
        {"lat_p90_s", m.lat_p90_s},
        {"lat_p99_s", m.lat_p99_s},
        {"lat_std_s", m.lat_std_s},
        {"lat_span_s", m.lat_span_s},
        {"ttfb_mean_s", m.ttfb_mean_s},
        {"queue_mean_s", m.queue_mean_s},
        {"mean_q_per_step", want[6]},
        {"mean_segs_per_step", want[7]},
        {"peak_mem_bytes", (double)m.peak_mem_bytes},
        {"weight_bytes", (double)s->mem.weight_bytes},
        {"kv_pool_bytes", (double)s->mem.kv_pool_bytes},
        {"act_reserved_bytes", (double)s->mem.act_reserved},
        {"capacity_bytes", (double)s->mem.capacity},
        {"static_batch", (double)m.static_batch},
        {"rows_processed", (double)m.rows_processed},
        {"missed_decodes", (double)m.missed_decodes},
        {"redundancy", m.redundancy},
        {"num_stalls", (double)m.num_stalls},
        {"energy_j", m.energy_j},
        {"mean_power_w", want[3]},
        {"slo_attainment", want[5]},
        {"expected_accuracy", 0}, /* (NULL: the decoder reads no profile; below) */
        {"accuracy_task", 0},
        {"interval_json", 0}, /* (NULL: no --interval) */
        {"known", 0}, /* (text: below) */
        {"offered_rps", (N - 1) / ((N - 1) * 0.02)},
        {"overloaded", over},
        {"pricing", 0}, /* (text: below) */
        {"sampler_canvases", 0}, {"sampler_holds", 0}, {"sampler_oom", 0}, /* (NULL: no vLLM sampler) */
    };
    /* (the columns written side by side hold values apart) */
    ck_assert(m.rows_processed != m.missed_decodes && m.ttfb_mean_s != m.queue_mean_s && m.lat_p90_s != m.lat_p99_s &&
              s->mem.kv_pool_bytes != s->mem.act_reserved && m.energy_j != m.busy_energy_j);
    sqlite3 *db;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT * FROM summary", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_count(st), (int)TS_ARRAY_LEN(cols)); /* every column checked */
    for (int k = 0; k < sqlite3_column_count(st); k++) {
        size_t j = 0;
        while (j < TS_ARRAY_LEN(cols) && strcmp(cols[j].col, sqlite3_column_name(st, k)) != 0)
            j++;
        ck_assert_msg(j < TS_ARRAY_LEN(cols), "column %s", sqlite3_column_name(st, k));
        const double v = sqlite3_column_double(st, k);
        ck_assert_msg(fabs(v - cols[j].want) <= 1e-12 * fabs(cols[j].want), "%s: %.15g, want %.15g", cols[j].col, v,
                      cols[j].want);
    }
    char known[512];
    for (int k = 0; k < sqlite3_column_count(st); k++)
        if (strcmp(sqlite3_column_name(st, k), "known") == 0)
            ck_assert_str_eq((const char *)sqlite3_column_text(st, k), sim_known(&c, known, sizeof known));
        else if (strcmp(sqlite3_column_name(st, k), "pricing") == 0) /* (the roofline's alone: no clock, no rounds) */
            ck_assert_str_eq((const char *)sqlite3_column_text(st, k), "roofline");
    for (int k = 0; k < sqlite3_column_count(st); k++) /* (not known here: NULL, not 0) */
        if (strstr("expected_accuracy accuracy_task interval_json sampler_canvases sampler_holds sampler_oom",
                   sqlite3_column_name(st, k)))
            ck_assert_int_eq(sqlite3_column_type(st, k), SQLITE_NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
    sim_destroy(s);
}
END_TEST

/* Under a threshold decode model, each request draws from its own stream: the steps a request
 * takes are the same whichever scheduler batches it with whichever others. */
START_TEST(decode_streams_independent_of_batching)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.decode, sizeof c.decode, "threshold:llada-humaneval");
    snprintf(c.gpu, sizeof c.gpu, "l40s");
    snprintf(c.lengths, sizeof c.lengths, "lognormal:5.5,0.5,5.0,0.5");
    c.requests = 80;
    c.rps = 5;
    c.max_num_logits = 0;
    snprintf(c.scheduler, sizeof c.scheduler, "phase");
    struct sim *a = run(&c);
    snprintf(c.scheduler, sizeof c.scheduler, "request");
    struct sim *b = run(&c);
    c.rps = 0.5;
    struct sim *d = run(&c);
    for (int64_t i = 0; i < a->num_reqs; i++) {
        ck_assert_int_eq(sim_request(a, i)->steps, sim_request(b, i)->steps);
        ck_assert_int_eq(sim_request(a, i)->steps, sim_request(d, i)->steps);
    }
    sim_destroy(a);
    sim_destroy(b);
    sim_destroy(d);
}
END_TEST

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A run frees its requests as they are recorded (chunks of SIM_REQ_CHUNK): over several chunks, with
 * rejections, under each scheduler with per-request state (request's reservations, lookahead's
 * projections), it gives the summary and database rows of the same run that kept every request,
 * frees every chunk, and its exact latency percentiles (a radix select over the spilled latencies)
 * are the kept requests' naive ones */
START_TEST(requests_freed_as_recorded)
{
    static const char *const scheds[] = {"phase", "request", "lookahead", "static"};
    for (size_t k = 0; k < TS_ARRAY_LEN(scheds); k++) {
        struct sim_config c;
        test_config(&c);
        snprintf(c.scheduler, sizeof c.scheduler, "%s", scheds[k]);
        snprintf(c.lengths, sizeof c.lengths, "lognormal:5.0,1.6,3.5,0.5"); /* a long tail over the positions */
        c.requests = 2 * SIM_REQ_CHUNK + 300;
        c.rps = 40;
        c.gen_len = 0; /* the lengths' own, P unclipped: the longest are rejected */
        struct ts_err err;
        struct sim *kept = run(&c), *freed = sim_create(&c, &err);
        ck_assert_msg(freed != NULL, "%s", err.msg);
        ck_assert_int_eq(sim_run(freed, NULL), 0);
        for (int64_t i = 0; i < freed->num_chunks; i++)
            ck_assert_msg(freed->q.chunks[i] == NULL, "%s: chunk %lld left", scheds[k], (long long)i);
        struct sim_summary a, b;
        sim_get_summary(kept, &a);
        sim_get_summary(freed, &b);
        a.run_wall_s = b.run_wall_s = 0;
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s: the summaries differ", scheds[k]);
        ck_assert_msg(a.num_rejected > 0 && a.num_finished > SIM_REQ_CHUNK, "%s: %lld rejected, %lld finished",
                      scheds[k], (long long)a.num_rejected, (long long)a.num_finished);
        double *lat = malloc(sizeof *lat * (size_t)kept->num_reqs);
        int64_t n = 0;
        for (int64_t i = 0; i < kept->num_reqs; i++)
            if (sim_request(kept, i)->state == REQ_FINISHED)
                lat[n++] = (double)(sim_request(kept, i)->finish_ns - sim_request(kept, i)->arrival_ns) * 1e-9;
        qsort(lat, (size_t)n, sizeof *lat, cmp_double);
        const double fs[] = {0.5, 0.9, 0.99}, got[] = {b.lat_p50_s, b.lat_p90_s, b.lat_p99_s};
        for (int q = 0; q < 3; q++)
            ck_assert_msg(fabs(got[q] - naive_quantile(lat, n, fs[q])) <= 1e-12 * got[q], "%s: p%g %.17g, naively %.17g", scheds[k],
                          100 * fs[q], got[q], naive_quantile(lat, n, fs[q]));
        ck_assert(b.lat_span_s == lat[n - 1] - lat[0]);
        free(lat);
        /* the requests' rows in the database, kept or spilled */
        const char *pa = tmp_path(0, ".db"), *pb = tmp_path(1, ".db");
        unlink(pa), unlink(pb);
        ck_assert_msg(sim_write_db(kept, pa, DB_NEW, &err) == 0, "%s", err.msg);
        ck_assert_msg(sim_write_db(freed, pb, DB_NEW, &err) == 0, "%s", err.msg);
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(pa, &db), SQLITE_OK);
        sqlite3_set_authorizer(db, NULL, NULL); /* (the test's own ATTACH, which the process's guard refuses) */
        char sql[512];
        snprintf(sql, sizeof sql, "ATTACH '%s' AS b", pb);
        ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        ck_assert_int_eq(query_int(db, "SELECT count(*) FROM requests"), c.requests);
        ck_assert_int_eq(query_int(db, "SELECT count(*) FROM (SELECT * FROM requests EXCEPT SELECT * FROM b.requests)"), 0);
        ck_assert_int_eq(query_int(db, "SELECT count(*) FROM (SELECT * FROM b.requests EXCEPT SELECT * FROM requests)"), 0);
        /* a request's runs of segments are maximal: none is followed by one of its shape in the next step */
        ck_assert_int_eq(query_int(db, "SELECT count(*) FROM b.segment_runs x JOIN b.segment_runs y ON y.req_id = x.req_id "
                                       "AND y.first_step = x.last_step + 1 AND y.phase = x.phase AND y.q = x.q AND y.kv = x.kv "
                                       "AND y.kv_write = x.kv_write AND y.logit_rows = x.logit_rows AND y.decoded = x.decoded "
                                       "AND y.padding = x.padding AND y.keep = x.keep AND y.score_rows = x.score_rows "
                                       "AND y.q_front = x.q_front AND y.kv_front = x.kv_front "
                                       "AND y.kv_write_front = x.kv_write_front AND y.probe = x.probe AND y.carry = x.carry "
                                       "AND y.picked = x.picked"), 0);
        /* and each row is its request as the kept run holds it */
        sqlite3_stmt *st;
        ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT req_id, arrival_ns, ifnull(admitted_ns, -1), ifnull(first_block_ns, -1), "
                                                "ifnull(finish_ns, -1), P, G, C, steps, preemptions, state, "
                                                "ifnull(reject_reason, '') FROM b.requests", -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const struct request *r = sim_request(kept, sqlite3_column_int64(st, 0));
            const int64_t want[] = {r->id, r->arrival_ns, r->admitted_ns, r->first_block_ns, r->finish_ns, r->P_orig,
                                    r->G_orig, r->C, r->steps, r->preemptions};
            for (int j = 0; j < 10; j++)
                ck_assert_msg(sqlite3_column_int64(st, j) == want[j], "%s: request %d, column %d", scheds[k], r->id, j);
            ck_assert_str_eq((const char *)sqlite3_column_text(st, 10), r->state == REQ_FINISHED ? "finished" : "rejected");
            ck_assert_str_eq((const char *)sqlite3_column_text(st, 11), r->reject_reason ? r->reject_reason : "");
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        unlink(pa), unlink(pb);
        sim_destroy(kept);
        sim_destroy(freed);
    }
}
END_TEST

/* Every step is recorded with all of its knobs (step_knobs): read back from the database, a step's
 * segments and knobs priced again give the time the run gave it, step by step, as a replay runs it.
 * Across these runs every knob is away from its default in some step. */
START_TEST(recorded_steps_replay_as_run)
{
    static const struct {
        const char *system, *model, *policy, *decode, *param, *value;
        bool iter_smooth, mask_only, lazy;
        int32_t chunk, ffn;
    } runs[] = {
        {"focus", "sdar-8b", NULL, "credit:2.5", NULL, NULL, true, false, false, 16, 2}, /* block-causal, evicting */
        {NULL, NULL, "sparse", NULL, "sparse-select", "head", false, true, true, 0, 1},   /* chunks set a step */
        {"dllm-cache", NULL, NULL, NULL, NULL, NULL, false, false, false, 0, 1},          /* the feature cache */
        {NULL, NULL, "sparsed", NULL, NULL, NULL, false, false, false, 0, 1},             /* keys a row (attn_keys) */
        {NULL, "sdar-8b", "herald", NULL, "herald-link", "c2c", false, false, false, 0, 1}, /* the host's part */
        {NULL, "sdar-8b", "block", "spiffy:3", NULL, NULL, false, false, false, 0, 1},        /* draft blocks */
        {"elastic-cache", NULL, NULL, NULL, NULL, NULL, false, false, false, 0, 1},       /* the layer inputs */
    };
    int64_t def[STEP_KNOBS], off_default[STEP_KNOBS] = {0};
    struct step_desc d;
    step_desc_init(&d);
    step_knobs_get(&d, def);
    for (size_t k = 0; k < TS_ARRAY_LEN(runs); k++) {
        struct sim_config c;
        struct ts_err err;
        test_config(&c);
        if (runs[k].system)
            ck_assert_msg(preset_apply(runs[k].system, &c, &err) == 0, "%s", err.msg);
        if (runs[k].model)
            snprintf(c.model, sizeof c.model, "%s", runs[k].model);
        if (runs[k].policy)
            snprintf(c.policy, sizeof c.policy, "%s", runs[k].policy);
        if (runs[k].decode)
            snprintf(c.decode, sizeof c.decode, "%s", runs[k].decode);
        if (runs[k].param)
            ck_assert_msg(param_values_set(&c.params, runs[k].param, runs[k].value, &err) == 0, "%s", err.msg);
        c.iter_smooth = runs[k].iter_smooth, c.mask_only = runs[k].mask_only, c.lazy_chunking = runs[k].lazy;
        c.max_num_logits = runs[k].chunk, c.ffn_chunks = runs[k].ffn;
        snprintf(c.cost, sizeof c.cost, "roofline");
        c.requests = 8;
        c.rps = 4;
        c.gen_len = 64;
        struct sim *s = run(&c);
        const char *path = tmp_path(0, ".db");
        unlink(path);
        ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
        sqlite3 *db;
        sqlite3_stmt *kq, *sq;
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        ck_assert_int_eq(db_steps_prepare(db, &kq), SQLITE_OK);
        ck_assert_int_eq(db_segments_prepare(db, &sq), SQLITE_OK);
        sqlite3_bind_int64(kq, 1, 1);
        struct step_desc sd;
        step_desc_init(&sd);
        size_t i = 0;
        for (; sqlite3_step(kq) == SQLITE_ROW; i++) {
            const int64_t step = sqlite3_column_int64(kq, 0), dur = sqlite3_column_int64(kq, 1);
            ck_assert(i < s->num_steps && step == (int64_t)i);
            ck_assert_msg(db_step_knobs(kq, &sd), "run %zu, step %lld: a knob not recorded", k, (long long)step);
            int64_t v[STEP_KNOBS];
            step_knobs_get(&sd, v);
            for (int j = 0; j < STEP_KNOBS; j++) {
                ck_assert_msg(v[j] == s->steps[i].knobs[j], "run %zu, step %lld: %s %lld, the run's %lld", k,
                              (long long)step, step_knobs[j].name, (long long)v[j], (long long)s->steps[i].knobs[j]);
                off_default[j] += v[j] != def[j];
            }
            ck_assert_msg(db_read_step(sq, 1, step, &sd, &err) == 0, "%s", err.msg);
            double t;
            ck_assert_msg(s->cost->step_s(&s->cctx, &sd, &t, NULL, &err) == 0, "%s", err.msg);
            t = cost_with_host(&sd, t, cost_host_s(&s->cctx, &sd));
            ck_assert_msg(TS_MAX(llround(t * 1e9), 1) == dur, "run %zu, step %lld: %lld ns again, %lld ns in the run", k,
                          (long long)step, (long long)llround(t * 1e9), (long long)dur);
        }
        ck_assert_int_eq(i, s->num_steps);
        step_desc_free(&sd);
        sqlite3_finalize(kq);
        sqlite3_finalize(sq);
        sqlite3_close(db);
        unlink(path);
        sim_destroy(s);
    }
    for (int j = 0; j < STEP_KNOBS; j++)
        ck_assert_msg(off_default[j] > 0, "knob %s never away from its default", step_knobs[j].name);
    step_desc_free(&d);
}
END_TEST

/* Whether sql runs on db (prepared and stepped to its end). */
static bool runs_sql(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK; }

/* Every connection of a guarded process refuses what reaches outside the database or runs code a
 * file carries: ATTACH, FTS3's tokenizer pointer, extensions, new triggers, writes to the schema; a
 * trigger a file holds does not fire. (Each by hand: the statements SQLite runs without the guard.) */
START_TEST(guarded_connections_run_no_code_from_files)
{
    const char *path = tmp_path(0, ".db");
    unlink(path);
    sqlite3 *db = NULL;
    /* a file made unguarded, with a trigger that logs every run */
    sqlite3_reset_auto_extension();
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert(runs_sql(db, "CREATE TABLE runs(x); CREATE TABLE log(y); CREATE TRIGGER t AFTER INSERT ON runs BEGIN "
                           "INSERT INTO log VALUES(new.x); END; INSERT INTO runs VALUES(1)"));
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM log"), 1);
    ck_assert(runs_sql(db, "ATTACH ':memory:' AS m; DETACH m"));
    sqlite3_close(db);
    ck_assert_int_eq(db_guard_process(), 0);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert(runs_sql(db, "INSERT INTO runs VALUES(2)"));
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM log"), 1); /* the file's trigger did not fire */
    ck_assert(!runs_sql(db, "ATTACH ':memory:' AS m"));
    ck_assert(!runs_sql(db, "SELECT fts3_tokenizer('simple')"));
    ck_assert(!runs_sql(db, "SELECT load_extension('/nonexistent/x')"));
    ck_assert(!runs_sql(db, "CREATE TRIGGER u AFTER INSERT ON runs BEGIN SELECT 1; END"));
    ck_assert(!runs_sql(db, "CREATE TEMP TRIGGER u AFTER INSERT ON runs BEGIN SELECT 1; END"));
    runs_sql(db, "PRAGMA writable_schema = ON");
    ck_assert(!runs_sql(db, "UPDATE sqlite_master SET sql = 'CREATE TABLE runs(z)' WHERE name = 'runs'"));
    ck_assert(runs_sql(db, "SELECT count(*) FROM runs")); /* (ordinary work goes on) */
    sqlite3_close(db);
}
END_TEST

/* The rows of `table` in the database at path (a connection of its own). */
static int64_t rows_in(const char *path, const char *table)
{
    sqlite3 *db = NULL;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    const int64_t n = query_int(db, sql);
    sqlite3_close(db);
    return n;
}

/* db merge: two runs' databases merged hold every row of both (counted table by table, each input
 * read on its own), merged again add nothing and count both as held; an input holding a table or a
 * column no tessera database has is refused by name and leaves no OUT; a database is not merged
 * into itself. */
START_TEST(merge_copies_tessera_tables_alone)
{
    struct sim_config c;
    test_config(&c);
    c.requests = 12;
    c.rps = 4;
    const char *in[2] = {tmp_path(0, ".db"), tmp_path(1, ".db")}, *out = tmp_path(2, ".db"), *bad = tmp_path(3, ".db");
    struct ts_err err;
    for (int i = 0; i < 2; i++) {
        unlink(in[i]);
        c.seed = 5 + (uint64_t)i;
        struct sim *s = run(&c);
        ck_assert_msg(sim_write_db(s, in[i], DB_NEW, &err) == 0, "%s", err.msg);
        sim_destroy(s);
    }
    unlink(out);
    int64_t runs = -1, held = -1;
    ck_assert_msg(db_merge(out, in, 2, &runs, &held, &err) == 0, "%s", err.msg);
    ck_assert(runs == 2 && held == 0);
    static const char *const tables[] = {"runs", "requests", "step_runs", "segment_runs", "summary", "op_breakdown"};
    for (int again = 0; again < 2; again++) {
        for (size_t t = 0; t < TS_ARRAY_LEN(tables); t++)
            ck_assert_msg(rows_in(out, tables[t]) == rows_in(in[0], tables[t]) + rows_in(in[1], tables[t]), "%s",
                          tables[t]);
        if (!again) {
            ck_assert_msg(db_merge(out, in, 2, &runs, &held, &err) == 0, "%s", err.msg);
            ck_assert(runs == 0 && held == 2);
        }
    }
    static const char *const crafted[][2] = {{"CREATE TABLE evil(a TEXT, run_id INTEGER)", "holds table 'evil'"},
                                             {"ALTER TABLE summary ADD COLUMN extra TEXT", "'extra TEXT'"},
                                             {"CREATE VIEW v AS SELECT 1", "holds view 'v'"}};
    const char *newout = tmp_path(4, ".db");
    for (size_t k = 0; k < TS_ARRAY_LEN(crafted); k++) {
        sqlite3 *db = NULL;
        unlink(bad), unlink(newout);
        struct sim *s = run(&c);
        ck_assert_msg(sim_write_db(s, bad, DB_NEW, &err) == 0, "%s", err.msg);
        sim_destroy(s);
        ck_assert_int_eq(sqlite3_open(bad, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db, crafted[k][0], NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        const char *one[1] = {bad};
        ck_assert_int_ne(db_merge(newout, one, 1, &runs, &held, &err), 0);
        ck_assert_msg(strstr(err.msg, crafted[k][1]) != NULL, "got '%s'", err.msg);
        ck_assert(access(newout, F_OK) != 0);
    }
    const char *self[1] = {out};
    ck_assert_int_ne(db_merge(out, self, 1, &runs, &held, &err), 0);
    ck_assert_msg(strstr(err.msg, "is OUT itself") != NULL, "got '%s'", err.msg);
}
END_TEST

/* Every preset says how its system is known: validated (naming a record that exists, with its
 * error), measured or modelled; a preset's schedule on another runtime is modelled, as is tessera's own
 * policy under the roofline, and tessera's engine under its calibration is measured. */
START_TEST(every_preset_says_how_it_is_known)
{
    for (int i = 0; i < preset_count(); i++) {
        const char *name = preset_get(i)->name, *k = preset_known(name);
        ck_assert_msg(k != NULL, "preset %s says nothing of how it is known", name);
        const bool validated = strncmp(k, "validated: records/", 19) == 0;
        ck_assert_msg(validated || strncmp(k, "measured: ", 10) == 0 || strncmp(k, "modelled: ", 10) == 0, "%s: '%s'",
                      name, k);
        ck_assert_msg(validated == (preset_known_gpu(name) != NULL), "%s: a validation names its card", name);
        if (validated) { /* its record is there */
            char rec[256];
            snprintf(rec, sizeof rec, "%s/experiments/records/%.*s/README.md", TS_SRCDIR, (int)strcspn(k + 19, " ,"),
                     k + 19);
            ck_assert_msg(access(rec, R_OK) == 0, "%s: no %s", name, rec);
        }
    }
    ck_assert_ptr_null(preset_known("no-such-preset"));
    struct sim_config c;
    char buf[512];
    test_config(&c);
    ck_assert(strncmp(sim_known(&c, buf, sizeof buf), "modelled: ", 10) == 0);
    snprintf(c.cost, sizeof c.cost, "calibrated");
    ck_assert(strncmp(sim_known(&c, buf, sizeof buf), "measured: ", 10) == 0);
    struct ts_err err;
    ck_assert_int_eq(preset_apply("sglang", &c, &err), 0);
    ck_assert_str_eq(sim_known(&c, buf, sizeof buf), preset_known("sglang"));
    ck_assert_str_eq(preset_known_gpu("sglang"), "h200");
    snprintf(c.gpu, sizeof c.gpu, "l40s"); /* (validated on another card: never ran on this one) */
    ck_assert_msg(strncmp(sim_known(&c, buf, sizeof buf), "modelled: sglang on l40s, where it never ran", 44) == 0,
                  "%s", buf);
    snprintf(c.gpu, sizeof c.gpu, "h200");
    snprintf(c.impl, sizeof c.impl, "tessera");
    ck_assert_msg(strncmp(sim_known(&c, buf, sizeof buf), "modelled: sglang's schedule on runtime tessera", 46) == 0,
                  "%s", buf);
}
END_TEST

/* The overload rule at its edges, by hand: the outstanding more than twice and by more than 5 (25 of
 * 10 is not, 26 is; growth short of double is not), arrivals more than 10% faster than finishes. */
START_TEST(overload_rule_at_its_edges)
{
    static const struct {
        int64_t out[2];
        double offered, served;
        bool want;
    } cases[] = {{{10, 26}, 2, 1, true},  {{10, 25}, 2, 1, false}, {{10, 15}, 2, 1, false},
                 {{0, 6}, 2, 1, true},    {{0, 5}, 2, 1, false},   {{10, 26}, 1.1, 1, false},
                 {{10, 26}, 1.11, 1, true}, {{40, 70}, 5, 1, false}};
    for (size_t k = 0; k < TS_ARRAY_LEN(cases); k++)
        ck_assert_msg(sim_overload_rule(cases[k].out, cases[k].offered, cases[k].served) == cases[k].want,
                      "case %zu: %lld then %lld, %g offered against %g served", k, (long long)cases[k].out[0],
                      (long long)cases[k].out[1], cases[k].offered, cases[k].served);
}
END_TEST

/* The database's overload columns: NULL for a run of too few arrivals to judge (fewer than
 * SIM_OVERLOAD_MIN), the run's verdict and rate for one judged: 90 arrivals 2 ms apart overload an H200
 * (none can finish within their 178 ms), 90 arrivals 2 s apart do not. */
START_TEST(database_stores_the_overload_verdict)
{
    static const struct {
        int n;
        double gap_ms;
        const char *want;
    } runs[] = {{5, 2, "NULL NULL"}, {90, 2, "1 500.0"}, {90, 2000, "0 0.5"}};
    for (size_t k = 0; k < TS_ARRAY_LEN(runs); k++) {
        char *text = xmalloc(64 * (size_t)(runs[k].n + 1));
        int len = sprintf(text, "arrival_ns,prompt_tokens,output_tokens\n");
        for (int i = 0; i < runs[k].n; i++)
            len += sprintf(text + len, "%lld,%d,64\n", (long long)(i * runs[k].gap_ms * 1e6), 100 + 37 * i % 400);
        struct sim_config c;
        test_config(&c);
        snprintf(c.trace, sizeof c.trace, "%s", tmp_file(5, ".csv", text));
        free(text);
        c.requests = 0, c.rps = 0, c.gen_len = 64;
        struct sim *s = run(&c);
        const char *path = tmp_path(6, ".db");
        unlink(path);
        struct ts_err err;
        ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
        sim_destroy(s);
        sqlite3 *db;
        sqlite3_stmt *st;
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT coalesce(overloaded, 'NULL') || ' ' || coalesce(round(offered_rps, "
                                                "1), 'NULL') FROM summary", -1, &st, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        ck_assert_msg(strcmp((const char *)sqlite3_column_text(st, 0), runs[k].want) == 0, "run %zu: '%s', want '%s'", k,
                      (const char *)sqlite3_column_text(st, 0), runs[k].want);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
}
END_TEST

START_TEST(database_matches_summary)
{
    struct sim_config c;
    test_config(&c);
    c.requests = 40;
    c.rps = 2;
    struct sim *s = run(&c);
    const char *path = tmp_path(0, ".db");
    struct ts_err err;
    ck_assert_msg(db_check(path, DB_NEW, &err) == 0, "%s", err.msg);
    ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
    /* a database that holds a run is refused unless the run is to be appended */
    ck_assert_int_ne(db_check(path, DB_NEW, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "holds 1 runs already; --append"));
    ck_assert_msg(db_check(path, DB_APPEND, &err) == 0, "%s", err.msg);
    ck_assert_msg(sim_write_db(s, path, DB_APPEND, &err) == 0, "%s", err.msg); /* appends run 2 */
    struct sim_summary m;
    sim_get_summary(s, &m);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM runs"), 2);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM requests WHERE run_id = 1"), 40);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM steps WHERE run_id = 2"), m.num_steps);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM segments WHERE run_id = 1"), m.request_steps);
    ck_assert_int_eq(query_int(db, "SELECT sum(decoded) FROM segments WHERE run_id = 1"), m.tokens_decoded);
    ck_assert_int_eq(query_int(db, "SELECT max(finish_ns) FROM requests WHERE run_id = 1"), m.makespan_ns);
    ck_assert_int_eq(query_int(db, "SELECT sum(q_tokens) FROM steps WHERE run_id = 1"),
                     query_int(db, "SELECT sum(q) FROM segments WHERE run_id = 1"));
    ck_assert_int_eq(query_int(db, "SELECT num_finished FROM summary WHERE run_id = 2"), 40);
    ck_assert_int_eq(query_int(db, "SELECT seed FROM runs WHERE run_id = 1"), 1);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM op_breakdown WHERE run_id = 1"), OP_COUNT);
    ck_assert_int_eq(query_int(db, "SELECT json_extract(config_json, '$.block') FROM runs"), 32);
    /* the latency percentiles against their definition, from the requests' rows: sorted latencies,
     * the value at (n - 1) f, interpolated linearly */
    sqlite3_stmt *lq;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (finish_ns - arrival_ns) * 1e-9 FROM requests WHERE run_id = 1 "
                                            "AND state = 'finished' ORDER BY 1", -1, &lq, NULL), SQLITE_OK);
    double lat[64];
    int nl = 0;
    while (sqlite3_step(lq) == SQLITE_ROW && nl < 64)
        lat[nl++] = sqlite3_column_double(lq, 0);
    sqlite3_finalize(lq);
    ck_assert_int_eq(nl, 40);
    const double fs[3] = {0.50, 0.90, 0.99}, got[3] = {m.lat_p50_s, m.lat_p90_s, m.lat_p99_s};
    for (int k = 0; k < 3; k++) {
        const double pos = fs[k] * (nl - 1);
        const int lo = (int)pos;
        const double want = lo + 1 < nl ? lat[lo] + (pos - lo) * (lat[lo + 1] - lat[lo]) : lat[lo];
        ck_assert_msg(fabs(got[k] - want) <= 1e-9 * want, "p%.0f: %.12g, by definition %.12g", 100 * fs[k], got[k], want);
    }
    sqlite3_close(db);
    unlink(path);
    /* --no-steps leaves the step tables empty */
    s->cfg.no_steps = true;
    ck_assert_int_eq(sim_write_db(s, path, DB_NEW, &err), 0);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM steps"), 0);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM summary"), 1);
    sqlite3_close(db);
    /* --replace: the database holds this run alone */
    ck_assert_int_eq(sim_write_db(s, path, DB_APPEND, &err), 0);
    ck_assert_int_eq(sim_write_db(s, path, DB_REPLACE, &err), 0);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM runs"), 1);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM summary"), 1);
    ck_assert_int_eq(query_int(db, "SELECT count(*) FROM requests"), 40);
    sqlite3_close(db);
    unlink(path);
    /* checked before the work, naming the file: a missing folder, a folder, not SQLite, not tessera's */
    ck_assert_int_ne(db_check("/nonexistent-dir/run.db", DB_NEW, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-dir/run.db: no such folder"));
    ck_assert_int_ne(sim_write_db(s, "/nonexistent-dir/run.db", DB_NEW, &err), 0);
    ck_assert_int_ne(access("/nonexistent-dir/run.db", F_OK), 0);
    ck_assert_int_ne(db_check("/tmp", DB_NEW, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "/tmp: a folder"));
    const char *junk = tmp_file(1, ".db", "this is not sqlite, but a line of text long enough to be read as a header\n");
    ck_assert_int_ne(db_check(junk, DB_APPEND, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "not an SQLite database"));
    ck_assert_int_ne(sim_write_db(s, junk, DB_APPEND, &err), 0);
    const char *other = tmp_path(2, ".db");
    ck_assert_int_eq(sqlite3_open(other, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE runs(x INTEGER)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_ne(db_check(other, DB_APPEND, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a tessera database (table runs"));
    unlink(other);
    sim_destroy(s);
}
END_TEST

static int cmp_req(const void *a, const void *b)
{
    const struct segment *x = a, *y = b;
    return (x->req_id > y->req_id) - (x->req_id < y->req_id);
}

/* The index in s->segs of request r's segment in step i, or -1. */
static int64_t seg_of(const struct sim *s, size_t i, int32_t r)
{
    const size_t end = i + 1 < s->num_steps ? (size_t)s->steps[i + 1].first_seg : s->num_segs;
    for (size_t j = (size_t)s->steps[i].first_seg; j < end; j++)
        if (s->segs[j].req_id == r)
            return (int64_t)j;
    return -1;
}

/* Takes up to n segments out of the recorded steps, each one of a request whose segments before
 * and after it have its shape (what a request waiting out a step leaves: the same shape resumed). */
static int drop_middles(struct sim *s, int n)
{
    int dropped = 0;
    for (size_t i = 1; i + 1 < s->num_steps && dropped < n; i += 7) {
        const int64_t j = s->steps[i].first_seg;
        if (j >= (int64_t)s->num_segs || (i + 1 < s->num_steps && s->steps[i + 1].first_seg == j))
            continue;
        const struct segment g = s->segs[j];
        const int64_t a = seg_of(s, i - 1, g.req_id), b = seg_of(s, i + 1, g.req_id);
        if (a < 0 || b < 0 || s->segs[a].q != g.q || s->segs[b].q != g.q || s->segs[a].kv != g.kv ||
            s->segs[b].kv != g.kv || s->segs[a].decoded != g.decoded || s->segs[b].decoded != g.decoded ||
            s->segs[a].phase != g.phase || s->segs[b].phase != g.phase)
            continue;
        memmove(&s->segs[j], &s->segs[j + 1], (s->num_segs - (size_t)j - 1) * sizeof *s->segs);
        s->num_segs--;
        s->steps[i].tot.num_segs--;
        for (size_t k = i + 1; k < s->num_steps; k++)
            s->steps[k].first_seg--;
        dropped++;
    }
    return dropped;
}

/* The steps and segments views give back, row for row, the steps and segments the run recorded,
 * though they are stored as runs: in a run with idle gaps between steps alike (few arrivals, no
 * cache) and in one whose requests wait out steps and resume with the shape they had (planted in
 * the records: no built-in scheduler makes one wait so). */
START_TEST(views_expand_the_runs)
{
    for (int load = 0; load < 2; load++) {
        struct sim_config c;
        test_config(&c);
        c.requests = 60;
        c.rps = load ? 6 : 0.2;
        snprintf(c.lengths, sizeof c.lengths, "fixed:100,64");
        c.gen_len = 64;
        if (!load) /* every step alike (FULL over the same length), idle between requests */
            snprintf(c.policy, sizeof c.policy, "vanilla");
        struct sim *s = run(&c);
        if (load)
            ck_assert_int_ge(drop_middles(s, 20), 10);
        const char *path = tmp_path(0, ".db");
        struct ts_err err;
        unlink(path);
        ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        const int64_t nruns = query_int(db, "SELECT count(*) FROM segment_runs"),
                      nrows = query_int(db, "SELECT count(*) FROM segments");
        ck_assert_msg(nruns * (load ? 1 : 10) < nrows, "load %d: %lld segment runs for %lld rows", load,
                      (long long)nruns, (long long)nrows);
        sqlite3_stmt *st, *sg;
        ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT step_id, start_ns, duration_ns, num_segs, q_tokens, decoded FROM "
                                                "steps ORDER BY step_id", -1, &st, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT step_id, req_id, q, kv, kv_write, logit_rows, decoded FROM "
                                                "segments ORDER BY step_id, req_id", -1, &sg, NULL), SQLITE_OK);
        size_t i = 0, gaps = 0, waits = 0;
        int64_t seen[64];
        for (int r = 0; r < 64; r++)
            seen[r] = -1;
        for (; sqlite3_step(st) == SQLITE_ROW; i++) {
            ck_assert_uint_lt(i, s->num_steps);
            const struct step_rec *p = &s->steps[i];
            ck_assert_int_eq(sqlite3_column_int64(st, 0), (int64_t)i);
            ck_assert_int_eq(sqlite3_column_int64(st, 1), p->start_ns);
            ck_assert_int_eq(sqlite3_column_int64(st, 2), p->duration_ns);
            ck_assert_int_eq(sqlite3_column_int64(st, 3), p->tot.num_segs);
            ck_assert_int_eq(sqlite3_column_int64(st, 4), p->tot.q_tokens);
            ck_assert_int_eq(sqlite3_column_int64(st, 5), p->tot.decoded);
            gaps += i > 0 && p->start_ns > s->steps[i - 1].start_ns + s->steps[i - 1].duration_ns;
            const size_t end = i + 1 < s->num_steps ? (size_t)s->steps[i + 1].first_seg : s->num_segs;
            struct segment segs[256];
            const size_t n = end - (size_t)p->first_seg;
            ck_assert_uint_le(n, 256);
            memcpy(segs, &s->segs[p->first_seg], n * sizeof *segs);
            qsort(segs, n, sizeof *segs, cmp_req);
            for (size_t j = 0; j < n; j++) {
                ck_assert(segs[j].req_id < 64);
                waits += seen[segs[j].req_id] >= 0 && seen[segs[j].req_id] < (int64_t)i - 1;
                seen[segs[j].req_id] = (int64_t)i;
                ck_assert_int_eq(sqlite3_step(sg), SQLITE_ROW);
                const int64_t got[] = {sqlite3_column_int64(sg, 0), sqlite3_column_int64(sg, 1), sqlite3_column_int64(sg, 2),
                                       sqlite3_column_int64(sg, 3), sqlite3_column_int64(sg, 4), sqlite3_column_int64(sg, 5),
                                       sqlite3_column_int64(sg, 6)};
                const int64_t want[] = {(int64_t)i, segs[j].req_id, segs[j].q, segs[j].kv, segs[j].kv_write,
                                        segs[j].logit_rows, segs[j].decoded};
                for (int k = 0; k < 7; k++)
                    ck_assert_msg(got[k] == want[k], "step %zu, segment %zu, column %d: %lld, recorded %lld", i, j, k,
                                  (long long)got[k], (long long)want[k]);
            }
        }
        ck_assert_int_eq(sqlite3_step(sg), SQLITE_DONE);
        ck_assert_uint_eq(i, s->num_steps);
        if (load)
            ck_assert_msg(waits >= 10, "%zu steps waited out", waits);
        else
            ck_assert_msg(gaps > 10, "%zu idle gaps", gaps);
        sqlite3_finalize(st);
        sqlite3_finalize(sg);
        sqlite3_close(db);
        unlink(path);
        sim_destroy(s);
    }
}
END_TEST

/* Credit decoding's matrix ([block, vocab] fp32) is a running request's, beside its K/V: each
 * reservation holds it, so a static batch (the most that fit) is smaller than with threshold
 * decoding at the same TPF; and its steps pay the fusion. */
START_TEST(credit_decoding_holds_its_matrix)
{
    struct sim_summary m[2];
    for (int credit = 0; credit < 2; credit++) {
        struct sim_config c;
        test_config(&c);
        snprintf(c.model, sizeof c.model, "llada-moe-7b");
        snprintf(c.gpu, sizeof c.gpu, "rtx4090");
        snprintf(c.decode, sizeof c.decode, credit ? "credit:3" : "threshold:3");
        snprintf(c.scheduler, sizeof c.scheduler, "static"); /* its batch: the most that fit */
        c.requests = 60;
        c.rps = 50;
        snprintf(c.lengths, sizeof c.lengths, "fixed:300,128");
        c.gen_len = 128;
        struct sim *s = run(&c);
        const int64_t want = credit ? (32LL * s->model.vocab * 4 + s->mem.kv_token_bytes - 1) / s->mem.kv_token_bytes : 0;
        ck_assert_int_eq(s->decode_state_tokens, want);
        ck_assert_int_eq(sim_kv_need(s, sim_request(s, 0), true), s->pol->kv_peak_tokens(sim_request(s, 0), &s->pcfg) + want);
        ck_assert(s->sd.decode_credit == (credit == 1));
        sim_get_summary(s, &m[credit]);
        ck_assert_int_eq(m[credit].num_finished, 60);
        sim_destroy(s);
    }
    ck_assert_msg(m[1].static_batch < m[0].static_batch, "static batches of %d and %d", m[1].static_batch,
                  m[0].static_batch);
    ck_assert(m[1].ops.op_s[OP_SAMPLE] > 2 * m[0].ops.op_s[OP_SAMPLE]);
}
END_TEST

START_TEST(bad_inputs_fail_cleanly)
{
    struct sim_config c;
    struct ts_err err;
    test_config(&c);
    snprintf(c.model, sizeof c.model, "llama-70b");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "llada-8b"));
    test_config(&c);
    snprintf(c.scheduler, sizeof c.scheduler, "fifo");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "static, request, phase"));
    test_config(&c);
    snprintf(c.trace, sizeof c.trace, "%s",
             tmp_file(0, ".csv", "num_prefill_tokens,num_decode_tokens\n10,10\n-1,5\n"));
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, ":3: num_prefill_tokens: negative length"));
    c.skip_bad_rows = true;
    struct sim *s = sim_create(&c, &err);
    ck_assert_ptr_nonnull(s);
    sim_keep_requests(s);
    ck_assert_int_eq(s->num_reqs, 1);
    sim_destroy(s);
    /* weights that do not fit */
    test_config(&c);
    snprintf(c.gpu_file, sizeof c.gpu_file, "%s",
             tmp_file(1, ".json", "{\"tiny\": {\"mem_gib\": 8, \"bf16_tflops\": 50, \"mem_bw_gbs\": 300}}"));
    snprintf(c.gpu, sizeof c.gpu, "tiny");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "weights"));
    /* Elastic-Cache's refresh keeping every layer of the model, where it refreshes */
    for (int depth = 31; depth <= 32; depth++) {
        test_config(&c);
        snprintf(c.policy, sizeof c.policy, "elastic");
        char v[16];
        snprintf(v, sizeof v, "%d", depth);
        ck_assert(param_values_set(&c.params, "ec-depth", v, &err) == 0);
        ck_assert(param_values_set(&c.params, "ec-refresh-every", "4", &err) == 0);
        s = sim_create(&c, &err);
        ck_assert_msg((s == NULL) == (depth == 32), "depth %d", depth);
        ck_assert(s || strstr(err.msg, "--ec-depth 32") != NULL);
        sim_destroy(s);
    }
    sim_destroy(NULL);
}
END_TEST

START_TEST(trace_files_drive_the_run)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.trace, sizeof c.trace, "%s",
             tmp_file(0, ".jsonl", "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 20}\n"
                                   "{\"timestamp\": 1000, \"input_length\": 300, \"output_length\": 600}\n"));
    c.gen_len = 0; /* G from the trace, rounded up to blocks */
    struct sim *s = run(&c);
    ck_assert_int_eq(sim_request(s, 0)->G, 32);
    ck_assert_int_eq(sim_request(s, 0)->C, 20);
    ck_assert_int_eq(sim_request(s, 1)->G, 608);
    ck_assert_int_eq(sim_request(s, 1)->arrival_ns, 1000000000);
    sim_destroy(s);
    c.rps = 4; /* rescaled: 2 requests 0.25 s apart */
    s = run(&c);
    ck_assert_int_eq(sim_request(s, 1)->arrival_ns, 250000000);
    sim_destroy(s);
    /* --max-new-tokens 70 in whole blocks of 32: at most 64, the short request's 32 as it was */
    c.max_new_tokens = 70;
    s = run(&c);
    ck_assert_int_eq(sim_request(s, 0)->G, 32);
    ck_assert_int_eq(sim_request(s, 1)->G, 64);
    sim_destroy(s);
}
END_TEST

/* What a request decodes under --early-stop and --early-commit, by hand. Blocks of 32 of G = 256:
 * with --early-stop a request of C content tokens decodes the blocks up to the one holding position
 * C (its first EOS) and no more: C = 40 two blocks, 100 four, 300 (C = 256) all eight: 448 in all.
 * --early-commit 0.5 under vanilla and fixed:1: the 32nd step brings 32 of 64 positions and commits
 * the other 32, so the request takes 32 steps and still decodes 64. */
START_TEST(early_stop_and_early_commit_through_the_run)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.trace, sizeof c.trace, "%s",
             tmp_file(0, ".csv", "arrival_ns,prompt_tokens,output_tokens\n0,100,40\n1000,100,100\n2000,100,300\n"));
    c.requests = 0, c.rps = 0, c.gen_len = 256, c.block = 32, c.early_stop = true;
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 3);
    ck_assert_int_eq(m.tokens_decoded, 64 + 128 + 256);
    ck_assert_int_eq(m.content_tokens, 40 + 100 + 256);
    sim_destroy(s);
    test_config(&c);
    snprintf(c.policy, sizeof c.policy, "vanilla");
    snprintf(c.decode, sizeof c.decode, "fixed:1");
    c.requests = 1, c.gen_len = 64, c.block = 32;
    for (int commit = 0; commit < 2; commit++) {
        c.early_commit = commit ? 0.5 : 0;
        s = run(&c);
        ck_assert_int_eq(sim_request(s, 0)->steps, commit ? 32 : 64);
        ck_assert_int_eq(sim_request(s, 0)->decoded_total, 64);
        sim_destroy(s);
    }
}
END_TEST

/* What a router reads of a replica (sim_load), against the replica's requests after each of its
 * events: the running requests whose next step starts a block, counted as those whose next step under
 * the dual cache is a Refresh (its policy's own emit), and the share of the KV pool in use, as the
 * pages the running requests hold over the pool's. */
START_TEST(load_reads_the_running_requests)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.policy, sizeof c.policy, "dual");
    c.gen_len = 64, c.block = 32;
    struct ts_err err;
    struct sim *s = sim_create_fed(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    for (int i = 0; i < 8; i++) {
        const struct trace_req tr = {.arrival_ns = i * 20000000LL, .prompt = 100 + 40 * i, .output = 64};
        sim_advance(s, tr.arrival_ns);
        sim_feed(s, &tr, i, tr.arrival_ns);
    }
    int64_t seen = 0, starting = 0;
    for (int64_t t; (t = sim_next_event_ns(s)) != INT64_MAX;) {
        sim_advance(s, t + 1);
        struct sim_load ld;
        sim_load(s, &ld);
        int64_t refresh = 0, pages = 0;
        for (size_t i = 0; i < s->q.num_running; i++) {
            const struct request *r = sim_request(s, s->q.running[i]);
            struct segment g = {0};
            s->pol->emit(r, &s->pcfg, &g);
            refresh += g.phase == PHASE_REFRESH;
            pages += sim_kv_pages(s, r->kv_tokens_held);
        }
        ck_assert_int_eq(ld.refreshing, refresh);
        ck_assert(ld.kv_used >= 0 && ld.kv_used <= 1);
        ck_assert_double_eq_tol(ld.kv_used, (double)pages / (double)s->mem.kv_pages_total, 1e-12);
        seen += (int64_t)s->q.num_running, starting += refresh;
    }
    ck_assert(starting > 0 && starting < seen); /* (some running requests mid-block) */
    ck_assert_int_eq(sim_run(s, &err), 0);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 8);
    ck_assert_int_eq(m.num_preemptions, 0);
    sim_destroy(s);
}
END_TEST

/* The static scheduler sizes its batch for the workload's longest request that fits the model: one
 * of exactly --max-pos positions counts (positions 0 .. max_pos - 1), so a workload whose longest
 * takes all 512 gets a batch no larger than one whose longest takes 480. */
START_TEST(static_batch_sized_for_the_longest_that_fits)
{
    int32_t batch[2];
    for (int k = 0; k < 2; k++) {
        struct sim_config c;
        test_config(&c);
        snprintf(c.scheduler, sizeof c.scheduler, "static");
        char text[128];
        snprintf(text, sizeof text, "arrival_ns,prompt_tokens,output_tokens\n0,%d,64\n1000,36,64\n", 448 - 32 * k);
        snprintf(c.trace, sizeof c.trace, "%s", tmp_file(k, ".csv", text));
        c.requests = 0, c.rps = 0, c.gen_len = 64, c.block = 32, c.max_pos = 512;
        struct ts_err err;
        struct sim *s = sim_create(&c, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        batch[k] = s->sum.static_batch;
        sim_destroy(s);
    }
    ck_assert_msg(batch[0] >= 1 && batch[0] <= batch[1], "L 512: %d, L 480: %d", batch[0], batch[1]);
}
END_TEST

START_TEST(presets_and_hf_models)
{
    struct sim_config c;
    test_config(&c);
    struct ts_err err;
    ck_assert_int_eq(preset_apply("lmdeploy", &c, &err), 0);
    ck_assert_str_eq(c.policy, "block");
    ck_assert_str_eq(c.scheduler, "request");
    ck_assert_int_eq(preset_apply("dllm-serve", &c, &err), 0);
    ck_assert_str_eq(c.scheduler, "phase");
    ck_assert_int_eq(c.max_num_logits, 2048);
    ck_assert_str_eq(c.policy, "sparse"); /* its head-centric sparse cache */
    ck_assert_str_eq(param_values_get(&c.params, "sparse-select"), "head");
    test_config(&c);
    ck_assert_int_eq(preset_apply("sparse-dllm", &c, &err), 0);
    ck_assert_str_eq(c.policy, "sparse");
    ck_assert_str_eq(c.scheduler, "static");
    ck_assert_str_eq(param_values_get(&c.params, "sparse-select"), "uniform");
    test_config(&c); /* the own-code checks' systems, their decisions as their loops took them */
    ck_assert_int_eq(preset_apply("elastic-cache", &c, &err), 0);
    ck_assert(strcmp(c.policy, "elastic") == 0 && strcmp(c.impl, "torch-elastic") == 0);
    ck_assert_str_eq(param_values_get(&c.params, "ec-refresh-share"), "0.6325");
    test_config(&c);
    ck_assert_int_eq(preset_apply("d2cache", &c, &err), 0);
    ck_assert(strcmp(c.policy, "d2cache") == 0 && strcmp(c.impl, "torch-d2cache") == 0);
    ck_assert_str_eq(param_values_get(&c.params, "d2-rollout-share"), "0.0876");
    ck_assert_int_eq(preset_apply("vllm", &c, &err), 0); /* an AR model's steps */
    ck_assert_str_eq(c.policy, "ar");
    ck_assert_int_eq(preset_apply("sglang-sync", &c, &err), 0); /* SGLang's dLLM path, sync */
    ck_assert(strcmp(c.scheduler, "sglang") == 0 && strcmp(c.model, "llada2.0-mini") == 0 && c.block == 32);
    ck_assert_str_eq(param_values_get(&c.params, "fdfo"), "0");
    ck_assert_int_ne(preset_apply("trtllm", &c, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "fast-dllm"));
    /* a model from a config.json */
    test_config(&c);
    snprintf(c.model, sizeof c.model, "%s",
             tmp_file(0, ".json", "{\"model_type\":\"qwen2\",\"hidden_size\":1024,\"num_hidden_layers\":8,"
                                  "\"num_attention_heads\":16,\"num_key_value_heads\":2,"
                                  "\"intermediate_size\":4096,\"vocab_size\":32000,"
                                  "\"max_position_embeddings\":8192}"));
    c.requests = 20;
    struct sim *s = run(&c);
    ck_assert_int_eq(s->model.num_layers, 8);
    ck_assert(s->model.qkv_bias);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 20);
    sim_destroy(s);
}
END_TEST

/* Mosaic's lazy chunking keeps its chunk search's margin of the card free (900 MiB; 1,600 for an MoE
 * model), on top of the framework reserve; --search-margin-mib sets it, and a preset without lazy
 * chunking keeps none */
START_TEST(lazy_chunking_keeps_the_search_margin)
{
    const struct {
        const char *preset, *model;
        double margin_mib;
        int64_t kept;
    } cases[] = {{"mosaic", "dream-7b", -1, 900LL << 20}, {"mosaic", "llada-moe-7b", -1, 1600LL << 20},
                 {"mosaic", "dream-7b", 0, 0}, {"mosaic", "dream-7b", 2048, 2048LL << 20},
                 {"mosaic-torch", "dream-7b", -1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct sim_config c;
        struct ts_err err;
        test_config(&c);
        ck_assert_int_eq(preset_apply(cases[i].preset, &c, &err), 0);
        snprintf(c.model, sizeof c.model, "%s", cases[i].model);
        snprintf(c.gpu, sizeof c.gpu, "rtx3090");
        c.search_margin_mib = cases[i].margin_mib;
        c.requests = 2;
        struct sim *s = sim_create(&c, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        sim_keep_requests(s);
        ck_assert_int_eq(s->mem.capacity, (24LL << 30) - (1LL << 30) - cases[i].kept);
        sim_destroy(s);
    }
}
END_TEST

/* The mosaic preset holds each layer's activations as Mosaic's own plan lays them out, in its
 * reservations and its memory check: for Dream-7B (narrow K and V) its attention block holds more a
 * token than the engine's layer, its unchunked FFN less (x dies at the fused add-norm); every step's
 * recorded activations are the planner's plan of the step as it ran (its chunking); a layout of
 * another name is refused, naming the option */
START_TEST(the_mosaic_preset_holds_mosaics_layer)
{
    struct sim_config c;
    struct ts_err err;
    int64_t peak[2], reserved[2];
    for (int mosaic = 0; mosaic < 2; mosaic++) {
        test_config(&c);
        ck_assert_int_eq(preset_apply("mosaic", &c, &err), 0);
        ck_assert_int_eq(c.act_layout, OG_LAYOUT_MOSAIC);
        if (!mosaic)
            c.act_layout = OG_LAYOUT_ENGINE;
        snprintf(c.model, sizeof c.model, "dream-7b");
        snprintf(c.gpu, sizeof c.gpu, "rtx3090");
        snprintf(c.lengths, sizeof c.lengths, "fixed:30000,32"); /* long enough for a layer to outweigh the logits */
        c.gen_len = 32, c.block = 32, c.requests = 2;
        struct sim *s = sim_create(&c, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        sim_keep_requests(s);
        ck_assert_int_eq(s->act_layout, mosaic ? OG_LAYOUT_MOSAIC : OG_LAYOUT_ENGINE);
        reserved[mosaic] = sim_act_peak(s, 20000, 0);
        ck_assert_int_eq(sim_run(s, &err), 0);
        peak[mosaic] = 0;
        for (size_t i = 0; i < s->num_steps; i++) {
            const struct step_rec *r = &s->steps[i];
            struct step_desc sd = {0};
            step_knobs_set(&sd, r->knobs);
            const struct og_shape shape = {r->tot.rows, r->tot.logit_rows, sd.logit_chunk_rows, sd.ffn_chunks,
                                           s->impl.softmax_copy_bytes, s->impl.fused_ffn, 1, s->act_layout};
            int64_t want;
            ck_assert_int_eq(act_planned_bytes(&s->model, s->planner, &shape, &want, NULL), 0);
            ck_assert_int_eq(r->act_peak_bytes, want);
            peak[mosaic] = TS_MAX(peak[mosaic], r->act_peak_bytes);
        }
        ck_assert_int_gt(s->num_steps, 0);
        sim_destroy(s);
    }
    /* 20,000 tokens with the FFN chunked as far as it shrinks the step: 4 rows of the hidden size a
     * token in Mosaic's layout, x + q + k + v + attention in the engine's */
    const struct model_cfg *m = model_find("dream-7b");
    ck_assert_int_eq(reserved[1], 20000LL * 2 * 4 * m->hidden);
    ck_assert_int_eq(reserved[0], 20000LL * 2 * (3 * m->hidden + 2 * model_kv_dim(m)));
    /* at the peak step (both requests' 30,032 tokens) Mosaic's layout holds less */
    ck_assert_int_lt(peak[1], peak[0]);
    test_config(&c);
    ck_assert_int_ne(cfg_option_set(cfg_option_find("act-layout"), "vllm", &c, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--act-layout"));
}
END_TEST

/* Energy: every GPU draws its idle power over the whole run, and a step its share of the dynamic
 * power on top. Two cards that differ in idle draw alone (TDP and idle both 100 W more) give the same
 * timeline and energies 100 W x the makespan x the GPUs apart; the energy lies between the idle and
 * the TDP draw over the makespan, and the summary's per-token and mean-power figures follow from it. */
START_TEST(energy_is_idle_over_the_run_and_the_steps_share_on_top)
{
    const char *path = tmp_path(0, ".json");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"cool\": {\"mem_gib\": 80, \"bf16_tflops\": 989.4, \"mem_bw_gbs\": 3350, \"tdp_w\": 300, \"idle_w\": 100},"
          " \"warm\": {\"mem_gib\": 80, \"bf16_tflops\": 989.4, \"mem_bw_gbs\": 3350, \"tdp_w\": 400, \"idle_w\": 200}}",
          f);
    fclose(f);
    for (int tp = 1; tp <= 2; tp++) {
        struct sim_summary m[2];
        for (int k = 0; k < 2; k++) {
            struct sim_config c;
            struct ts_err err;
            test_config(&c);
            snprintf(c.gpu_file, sizeof c.gpu_file, "%s", path);
            snprintf(c.gpu, sizeof c.gpu, "%s", k ? "warm" : "cool");
            c.requests = 12, c.rps = 0.2, c.tp = tp; /* (a light load: the card idles between requests) */
            struct sim *s = sim_create(&c, &err);
            ck_assert_msg(s != NULL, "%s", err.msg);
            ck_assert_int_eq(sim_run(s, &err), 0);
            sim_get_summary(s, &m[k]);
            sim_destroy(s);
        }
        const double span = (double)m[0].makespan_ns * 1e-9;
        ck_assert_int_eq(m[0].makespan_ns, m[1].makespan_ns);
        ck_assert_double_eq_tol(m[1].energy_j - m[0].energy_j, 100.0 * span * tp, 1e-6 * m[1].energy_j);
        ck_assert(m[0].energy_j > 100.0 * span * tp && m[0].energy_j < 300.0 * span * tp);
        ck_assert(m[0].busy_s > 0 && m[0].busy_s < 0.9 * span);
        ck_assert_double_eq_tol(m[0].mean_power_w, m[0].energy_j / span, 1e-9 * m[0].mean_power_w);
        ck_assert_double_eq_tol(m[0].energy_per_token_j, m[0].energy_j / (double)m[0].tokens_decoded, 1e-12);
    }
    /* a card whose idle draw is not below its TDP is refused, naming the file and the card */
    f = fopen(path, "w");
    fputs("{\"odd\": {\"mem_gib\": 80, \"bf16_tflops\": 989.4, \"mem_bw_gbs\": 3350, \"tdp_w\": 100, \"idle_w\": 100}}", f);
    fclose(f);
    struct sim_config c;
    struct ts_err err;
    test_config(&c);
    snprintf(c.gpu_file, sizeof c.gpu_file, "%s", path);
    snprintf(c.gpu, sizeof c.gpu, "odd");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "odd") && strstr(err.msg, "idle_w"), "%s", err.msg);
}
END_TEST

/* --slo: the share of all requests (rejected ones missing it) that finished within S of their
 * arrival, against each kept request's own latency; none without --slo */
START_TEST(slo_attainment_counts_the_requests_within_it)
{
    struct sim_config c;
    struct ts_err err;
    test_config(&c);
    c.requests = 40, c.rps = 2, c.slo = 5;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    sim_keep_requests(s);
    ck_assert_int_eq(sim_run(s, &err), 0);
    struct sim_summary m;
    sim_get_summary(s, &m);
    int64_t within = 0;
    for (int32_t i = 0; i < (int32_t)m.num_requests; i++) {
        const struct request *r = sim_request(s, i);
        within += r->state == REQ_FINISHED && r->finish_ns - r->arrival_ns <= 5000000000LL;
    }
    ck_assert(within > 0 && within < m.num_requests); /* (the load leaves some late) */
    ck_assert_double_eq_tol(m.slo_attainment, (double)within / (double)m.num_requests, 1e-12);
    sim_destroy(s);
    c.slo = 0;
    s = sim_create(&c, &err);
    ck_assert_int_eq(sim_run(s, &err), 0);
    sim_get_summary(s, &m);
    ck_assert(isnan(m.slo_attainment));
    sim_destroy(s);
}
END_TEST

/* A policy that caches more of each token than its K and V (Elastic-Cache: its query and layer input a
 * layer) has a pool of larger tokens: per GPU, under TP too. */
START_TEST(policy_token_bytes_size_the_pool)
{
    int64_t bytes[3];
    for (int k = 0; k < 3; k++) {
        struct sim_config c;
        test_config(&c);
        snprintf(c.policy, sizeof c.policy, "%s", k == 0 ? "dual" : "elastic");
        c.tp = k == 2 ? 2 : 1;
        struct ts_err err;
        struct sim *s = sim_create(&c, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        bytes[k] = s->mem.kv_token_bytes;
        sim_destroy(s);
    }
    const int64_t feat = model_feat_bytes_per_token(model_find("llada-8b"));
    ck_assert_int_eq(bytes[1], bytes[0] + feat);
    ck_assert_int_eq(bytes[2], (bytes[0] + feat) / 2);
}
END_TEST

/* A request's admission reserves its largest step's activations with the logits its steps have at most
 * (policy_ops.peak_logits): DiffusionGemma's 12,000-token prompt runs without logits, its canvas's 256
 * rows with them, so on an H100 it is admitted; with the prompt's rows all taken as logit rows of a
 * 262,144-token vocabulary it could not be (27 GiB of them at 11,152). Its sliding layers hold the
 * window's K/V, its global ones every token's. */
START_TEST(admission_reserves_the_logits_a_step_has)
{
    struct sim_config c;
    test_config(&c);
    struct ts_err err;
    ck_assert_msg(preset_apply("diffusion-gemma", &c, &err) == 0, "%s", err.msg);
    snprintf(c.gpu, sizeof c.gpu, "h100");
    snprintf(c.lengths, sizeof c.lengths, "fixed:12000,256");
    c.requests = 2;
    struct sim *s = run(&c);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 2);
    const struct request *r = sim_request(s, 0);
    ck_assert_int_eq(sim_kv_need(s, r, true) - s->decode_state_tokens,
                     model_kv_tokens_held(&s->model, 12000));
    ck_assert_int_lt(model_kv_tokens_held(&s->model, 12000), 12000 / 5);
    sim_destroy(s);
    /* Spiffy's draft blocks are reserved beside the largest step: block's fused commit (2 x 32 rows, logits
     * taken for all) and 3 blocks of 32 */
    test_config(&c);
    snprintf(c.model, sizeof c.model, "sdar-8b");
    snprintf(c.policy, sizeof c.policy, "block");
    snprintf(c.decode, sizeof c.decode, "spiffy:3");
    snprintf(c.lengths, sizeof c.lengths, "fixed:20,64");
    c.requests = 1;
    c.gen_len = 64;
    s = run(&c);
    int32_t q, logits;
    sim_peak_shape(s, sim_request(s, 0), &q, &logits);
    ck_assert_int_eq(q, 64 + 96);
    ck_assert_int_eq(logits, 64 + 96);
    sim_destroy(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    ck_case(s, golden_default_scenario, 120);
    ck_case(s, overload_said_where_outstanding_grows, 120);
    ck_case(s, requests_freed_as_recorded, 120);
    ck_case(s, recorded_steps_replay_as_run, 120);
    ck_case(s, golden_fast_dllm_on_4090, 120);
    ck_case(s, golden_lookahead_on_4090, 120);
    ck_case(s, executor_drives_the_clock, 120);
    ck_case(s, executor_times_the_host_part, 120);
    ck_case(s, same_seed_same_results, 120);
    ck_case(s, summary_statistics_from_the_requests, 120);
    ck_case(s, summary_rates_and_columns_from_the_requests, 120);
    ck_case(s, expected_accuracy_from_the_profile, 120);
    ck_case(s, expected_accuracy_along_a_sweep, 120);
    ck_case(s, decode_streams_independent_of_batching, 120);
    ck_case(s, database_matches_summary, 120);
    ck_case(s, database_stores_the_overload_verdict, 120);
    ck_case(s, overload_rule_at_its_edges, 120);
    ck_case(s, every_preset_says_how_it_is_known, 120);
    ck_case(s, guarded_connections_run_no_code_from_files, 120);
    ck_case(s, merge_copies_tessera_tables_alone, 120);
    ck_case(s, views_expand_the_runs, 120);
    ck_case(s, credit_decoding_holds_its_matrix, 120);
    ck_case(s, bad_inputs_fail_cleanly, 120);
    ck_case(s, trace_files_drive_the_run, 120);
    ck_case(s, presets_and_hf_models, 120);
    ck_case(s, lazy_chunking_keeps_the_search_margin, 120);
    ck_case(s, the_mosaic_preset_holds_mosaics_layer, 120);
    ck_case(s, energy_is_idle_over_the_run_and_the_steps_share_on_top, 120);
    ck_case(s, slo_attainment_counts_the_requests_within_it, 120);
    ck_case(s, policy_token_bytes_size_the_pool, 120);
    ck_case(s, admission_reserves_the_logits_a_step_has, 120);
    ck_case(s, early_stop_and_early_commit_through_the_run, 120);
    ck_case(s, load_reads_the_running_requests, 120);
    ck_case(s, static_batch_sized_for_the_longest_that_fits, 120);
    return run_suite("sim", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
