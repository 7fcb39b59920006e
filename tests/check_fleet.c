/*
 * check_fleet.c: replicas behind a router (fleet.h). A fleet of one replica is the instance itself,
 * event for event; round robin's split of a trace, each part run as an instance of its own, gives
 * the fleet's latency percentiles exactly (an oracle that sorts every request's latency); the
 * routers place by what they see, stale views included, round robin and the load routers as naive
 * references over closed replicas and ties; admission refuses when every replica is
 * full; energy counts each replica's idle draw to the fleet's end. Disaggregated, each request's
 * steps are the ones it takes co-located (its progress and decode stream move with it), the pools run
 * only their own steps, and a move's time is its bytes over the link, its latency and its wait for a
 * port, by hand. Load control lowers the threshold through an overload and back, each reading's TPF
 * the assumption's by hand, and at its own threshold leaves the fleet as it was. A fleet's run in
 * SQLite holds its summary, a row a replica and its readings, and survives a merge.
 */
#include <gsl/gsl_sort.h>
#include <sqlite3.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "decode.h"
#include "fleet.h"
#include "model.h"
#include "sim_internal.h"
#include "test_util.h"

/* A tessera-format trace of n requests, request i arriving at i * gap_ms with prompt 100 + 37 i % 400
 * and output 64; with parts > 0 only the requests i = part (mod parts)... of them, into slot's file. */
static const char *trace_file(int slot, int n, double gap_ms, int parts, int part)
{
    char *text = xmalloc(64 * (size_t)(n + 1));
    int len = sprintf(text, "arrival_ns,prompt_tokens,output_tokens\n");
    for (int i = 0; i < n; i++)
        if (parts == 0 || i % parts == part)
            len += sprintf(text + len, "%lld,%d,64\n", (long long)(i * gap_ms * 1e6), 100 + 37 * i % 400);
    const char *path = tmp_file(slot, ".csv", text);
    free(text);
    return path;
}

static void config(struct sim_config *c, const char *trace)
{
    test_config(c);
    snprintf(c->trace, sizeof c->trace, "%s", trace);
    c->requests = 0;
    c->rps = 0;
    c->gen_len = 64;
}

/* The summary of configuration c run as one instance, on its own. */
static struct sim_summary instance(const struct sim_config *c)
{
    struct ts_err err;
    struct sim *s = sim_create(c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_int_eq(sim_run(s, &err), 0);
    struct sim_summary a;
    sim_get_summary(s, &a);
    sim_destroy(s);
    return a;
}

static void run_fleet(const struct sim_config *c, int n, const char *router, double stale_s, int64_t admit_max,
                      struct fleet_result *r)
{
    struct sim_config *cfg = xmalloc(sizeof *cfg * (size_t)n);
    for (int i = 0; i < n; i++)
        cfg[i] = *c;
    const struct fleet_opts o = {.router = router_find(router), .staleness_s = stale_s, .admit_max = admit_max};
    ck_assert_ptr_nonnull(o.router);
    struct ts_err err;
    ck_assert_msg(fleet_run(c, cfg, n, &o, r, &err) == 0, "%s", err.msg);
    free(cfg);
}

/* A fleet of one replica runs the instance's run: the same requests, steps, latencies and energy;
 * under the static scheduler too, whose replica sizes its batch by the workload it is fed from. */
START_TEST(one_replica_is_the_instance)
{
    struct sim_config c;
    config(&c, trace_file(0, 150, 90, 0, 0));
    if (_i == 1)
        snprintf(c.scheduler, sizeof c.scheduler, "static");
    const struct sim_summary a = instance(&c);
    struct fleet_result r;
    run_fleet(&c, 1, "round-robin", 0, 0, &r);
    const struct sim_summary *b = &r.fleet;
    ck_assert_int_eq(b->num_finished, a.num_finished);
    ck_assert_int_eq(b->num_steps, a.num_steps);
    ck_assert_int_eq(b->tokens_decoded, a.tokens_decoded);
    ck_assert_int_eq(b->makespan_ns, a.makespan_ns);
    ck_assert_int_eq(b->num_preemptions, a.num_preemptions);
    ck_assert_double_eq_tol(b->lat_mean_s, a.lat_mean_s, 1e-12);
    ck_assert_double_eq(b->lat_p50_s, a.lat_p50_s);
    ck_assert_double_eq(b->lat_p99_s, a.lat_p99_s);
    ck_assert_double_eq_tol(b->lat_std_s, a.lat_std_s, 1e-9);
    ck_assert_double_eq_tol(b->energy_j, a.energy_j, 1e-6 * a.energy_j);
    /* and its rates: a second of the span, a step, a watt */
    const double rates[][2] = {{b->throughput_tok_s, a.throughput_tok_s}, {b->content_tok_s, a.content_tok_s},
                               {b->req_s, a.req_s},                       {b->mean_power_w, a.mean_power_w},
                               {b->mean_q_per_step, a.mean_q_per_step},   {b->mean_segs_per_step, a.mean_segs_per_step}};
    for (size_t k = 0; k < TS_ARRAY_LEN(rates); k++)
        ck_assert_msg(fabs(rates[k][0] - rates[k][1]) <= 1e-6 * rates[k][1], "rate %zu: %.9g, the instance's %.9g", k,
                      rates[k][0], rates[k][1]);
    ck_assert_int_eq(r.replica[0].static_batch, a.static_batch);
    ck_assert_int_eq(r.routed[0], 150);
    fleet_result_free(&r);
}
END_TEST

/* Overload is one rule for a run and a fleet: a fleet of one replica judges a workload as the instance
 * does (the same requests outstanding at a third of the arrivals and at the last, counted by the
 * instance from its own requests and by the fleet from its replicas' loads), overloaded where the
 * arrivals outrun the card (a request every 2 ms) and not where they leave it idle (one every 2 s);
 * a fleet of two judges itself and each replica, the rate offered each replica its routed share. */
START_TEST(overload_judged_as_the_instance)
{
    static const double gaps_ms[] = {2, 2000};
    for (size_t k = 0; k < TS_ARRAY_LEN(gaps_ms); k++) {
        struct sim_config c;
        config(&c, trace_file(0, 90, gaps_ms[k], 0, 0));
        struct ts_err err;
        const struct sim_summary a = instance(&c);
        ck_assert_msg(a.overloaded == (k == 0), "gap %g ms: the instance %s overloaded", gaps_ms[k],
                      a.overloaded ? "is" : "is not");
        struct fleet_result r;
        run_fleet(&c, 1, "round-robin", 0, 0, &r);
        ck_assert_msg(r.fleet.outstanding[0] == a.outstanding[0] && r.fleet.outstanding[1] == a.outstanding[1],
                      "gap %g ms: outstanding %lld, %lld; the instance's %lld, %lld", gaps_ms[k],
                      (long long)r.fleet.outstanding[0], (long long)r.fleet.outstanding[1],
                      (long long)a.outstanding[0], (long long)a.outstanding[1]);
        ck_assert_double_eq_tol(r.fleet.offered_rps, a.offered_rps, 1e-9 * a.offered_rps);
        ck_assert(r.fleet.overloaded == a.overloaded && r.replica[0].overloaded == a.overloaded);
        fleet_result_free(&r);
        if (k == 0) { /* 90 arrivals in 178 ms, none finished by then: 30 and 89 outstanding, by construction, */
            ck_assert(a.outstanding[0] == 30 && a.outstanding[1] == 89); /* the held back among them */
            const struct fleet_opts od = {.router = router_find("round-robin"), .admit_max = 2, .defer = true};
            ck_assert_msg(fleet_run(&c, &c, 1, &od, &r, &err) == 0, "%s", err.msg);
            ck_assert_msg(r.fleet.outstanding[0] == 30 && r.fleet.outstanding[1] == 89 && r.fleet.overloaded,
                          "admission deferring all but 2: outstanding %lld, %lld", (long long)r.fleet.outstanding[0],
                          (long long)r.fleet.outstanding[1]);
            fleet_result_free(&r);
        }
        run_fleet(&c, 2, "round-robin", 0, 0, &r);
        ck_assert_msg(r.fleet.overloaded == (k == 0), "gap %g ms: the fleet of two", gaps_ms[k]);
        for (int i = 0; i < 2; i++) {
            ck_assert_msg(r.replica[i].overloaded == (k == 0), "gap %g ms: replica %d", gaps_ms[k], i);
            ck_assert_double_eq_tol(r.replica[i].offered_rps, (double)r.routed[i] / (89 * gaps_ms[k] * 1e-3),
                                    1e-9 * r.replica[i].offered_rps);
        }
        fleet_result_free(&r);
    }
}
END_TEST

/* Round robin over three replicas: each its third of the trace, and the fleet's percentiles those
 * of every request's latency, sorted (each third run as an instance of its own, its requests kept). */
START_TEST(round_robin_percentiles_exact)
{
    enum { N = 180, K = 3 };
    struct sim_config c;
    config(&c, trace_file(0, N, 40, 0, 0));
    struct fleet_result r;
    run_fleet(&c, K, "round-robin", 0, 0, &r);
    double lat[N];
    int n = 0;
    int64_t tokens = 0;
    for (int k = 0; k < K; k++) {
        ck_assert_int_eq(r.routed[k], N / K);
        struct sim_config p;
        config(&p, trace_file(1 + k, N, 40, K, k));
        struct ts_err err;
        struct sim *s = sim_create(&p, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        sim_keep_requests(s);
        ck_assert_int_eq(sim_run(s, &err), 0);
        for (int64_t i = 0; i < s->num_reqs; i++) {
            const struct request *q = sim_request(s, i);
            ck_assert_int_eq(q->state, REQ_FINISHED);
            lat[n++] = (double)(q->finish_ns - q->arrival_ns) * 1e-9;
            tokens += q->decoded_total;
        }
        struct sim_summary m;
        sim_get_summary(s, &m);
        ck_assert_double_eq(m.lat_p99_s, r.replica[k].lat_p99_s); /* the replica ran its third alone */
        sim_destroy(s);
    }
    ck_assert_int_eq(n, N);
    ck_assert_int_eq(r.fleet.tokens_decoded, tokens);
    gsl_sort(lat, 1, N);
    ck_assert_double_eq_tol(r.fleet.lat_p50_s, gsl_stats_quantile_from_sorted_data(lat, 1, N, 0.50), 1e-9);
    ck_assert_double_eq_tol(r.fleet.lat_p90_s, gsl_stats_quantile_from_sorted_data(lat, 1, N, 0.90), 1e-9);
    ck_assert_double_eq_tol(r.fleet.lat_p99_s, gsl_stats_quantile_from_sorted_data(lat, 1, N, 0.99), 1e-9);
    ck_assert_double_eq_tol(r.fleet.lat_mean_s, gsl_stats_mean(lat, 1, N), 1e-9);
    ck_assert_double_eq_tol(r.fleet.lat_std_s, gsl_stats_sd(lat, 1, N), 1e-6);
    ck_assert_double_eq_tol(r.fleet.lat_span_s, lat[N - 1] - lat[0], 1e-9);
    /* energy: each replica's steps', and its idle draw the rest of the fleet's time (all up throughout) */
    double e = 0;
    const double span = (double)r.fleet.makespan_ns * 1e-9;
    for (int k = 0; k < K; k++) {
        const struct sim_summary *m = &r.replica[k];
        const double own = m->busy_energy_j + m->idle_w * (span - m->busy_s);
        ck_assert_double_eq_tol(m->energy_j, own, 1e-9 * own);
        ck_assert_double_eq_tol(m->energy_per_token_j, own / (double)m->tokens_decoded, 1e-12);
        e += own;
    }
    ck_assert_double_eq_tol(r.fleet.energy_j, e, 1e-9 * e);
    fleet_result_free(&r);
}
END_TEST

/* A mixed fleet under load: least-outstanding sends the fast card more than the slow one and beats
 * round robin's tail; a view that never refreshes leaves the router only what it sent, which is
 * round robin; phase-aware places every request. */
START_TEST(routers_place_by_load)
{
    struct sim_config fast, slow;
    config(&fast, trace_file(0, 240, 25, 0, 0));
    slow = fast;
    snprintf(slow.gpu, sizeof slow.gpu, "l40s");
    const struct sim_config cfg[2] = {fast, slow};
    struct fleet_result rr, lo, stale, ph;
    struct ts_err err;
    struct fleet_opts o = {.router = router_find("round-robin")};
    ck_assert_int_eq(fleet_run(&fast, cfg, 2, &o, &rr, &err), 0);
    o.router = router_find("least-outstanding");
    ck_assert_int_eq(fleet_run(&fast, cfg, 2, &o, &lo, &err), 0);
    o.staleness_s = 1e3;
    ck_assert_int_eq(fleet_run(&fast, cfg, 2, &o, &stale, &err), 0);
    o.router = router_find("phase-aware"), o.staleness_s = 0;
    ck_assert_int_eq(fleet_run(&fast, cfg, 2, &o, &ph, &err), 0);
    ck_assert_int_eq(rr.routed[0], 120);
    ck_assert_int_eq(rr.routed[1], 120);
    ck_assert_msg(lo.routed[0] > lo.routed[1] + 20, "least-outstanding: %lld to the H200, %lld to the L40S",
                  (long long)lo.routed[0], (long long)lo.routed[1]);
    ck_assert_msg(lo.fleet.lat_p99_s < rr.fleet.lat_p99_s, "p99 %.3f against round robin's %.3f", lo.fleet.lat_p99_s,
                  rr.fleet.lat_p99_s);
    ck_assert_int_eq(stale.routed[0], 120);
    ck_assert_int_eq(stale.routed[1], 120);
    ck_assert_int_eq(ph.routed[0] + ph.routed[1], 240);
    ck_assert_int_eq(ph.fleet.num_finished, 240);
    fleet_result_free(&rr), fleet_result_free(&lo), fleet_result_free(&stale), fleet_result_free(&ph);
}
END_TEST

/* The fleet's expected accuracy: each replica's decode profile's published score weighted by the tokens
 * the replica decoded (dInfer's and Fast-dLLM's GSM8K runs with a cache, dInfer Table 1: 80.97 and
 * 79.9), by hand from the replicas' own; a replica whose decoder publishes none leaves the fleet with
 * none, and one on another task too. */
START_TEST(fleet_accuracy_weighted_by_tokens)
{
    struct sim_config a, b;
    config(&a, trace_file(0, 60, 25, 0, 0));
    snprintf(a.decode, sizeof a.decode, "hierarchical:dinfer-moe-cache-gsm8k");
    b = a;
    snprintf(b.decode, sizeof b.decode, "threshold:fastdllm-moe-cache-gsm8k");
    struct sim_config cfg[2] = {a, b};
    struct fleet_result r;
    struct ts_err err;
    const struct fleet_opts o = {.router = router_find("round-robin")};
    ck_assert_msg(fleet_run(&a, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    const struct sim_summary *m0 = &r.replica[0], *m1 = &r.replica[1];
    ck_assert(m0->expected_accuracy == 80.97 && m1->expected_accuracy == 79.9);
    const double want = (80.97 * (double)m0->tokens_decoded + 79.9 * (double)m1->tokens_decoded) /
                        (double)(m0->tokens_decoded + m1->tokens_decoded);
    ck_assert_double_eq_tol(r.fleet.expected_accuracy, want, 1e-9);
    ck_assert_str_eq(r.fleet.accuracy_task, "GSM8K");
    fleet_result_free(&r);
    snprintf(cfg[1].decode, sizeof cfg[1].decode, "fixed:2");
    ck_assert_msg(fleet_run(&a, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.fleet.expected_accuracy < 0 && r.fleet.accuracy_task[0] == '\0');
    fleet_result_free(&r);
    snprintf(cfg[1].decode, sizeof cfg[1].decode, "threshold:fastdllm-moe-cache-mbpp");
    ck_assert_msg(fleet_run(&a, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.fleet.expected_accuracy < 0 && r.fleet.accuracy_task[0] == '\0');
    fleet_result_free(&r);
}
END_TEST

/* Each router's pick from a view, by hand: the load it saw plus what it sent since. */
START_TEST(router_picks_by_the_view)
{
    const struct router_view v[3] = {{.load = {.outstanding = 3, .refreshing = 2, .kv_used = 0.5}, .sent = 0},
                                     {.load = {.outstanding = 0, .refreshing = 0, .kv_used = 0.2}, .sent = 5},
                                     {.load = {.outstanding = 4, .refreshing = 1, .kv_used = 0.9}, .sent = 0}};
    int next = 0;
    ck_assert_int_eq(router_find("least-outstanding")->pick(v, 3, &next, NULL), 0); /* 3 < 5 (0 + 5 sent) < 4 */
    ck_assert_int_eq(next, 1);
    next = 0;
    ck_assert_int_eq(router_find("least-kv")->pick(v, 3, &next, NULL), 1);
    next = 0;
    ck_assert_int_eq(router_find("phase-aware")->pick(v, 3, &next, NULL), 2); /* refreshing 1 + 0 sent */
    next = 2;
    ck_assert_int_eq(router_find("round-robin")->pick(v, 3, &next, NULL), 2);
    ck_assert_int_eq(router_find("round-robin")->pick(v, 3, &next, NULL), 0);
    const struct router_view tie[2] = {{.load = {.outstanding = 1}}, {.load = {.outstanding = 1}}};
    next = 1; /* ties from the cursor on */
    ck_assert_int_eq(router_find("least-outstanding")->pick(tie, 2, &next, NULL), 1);
    ck_assert_int_eq(router_find("least-outstanding")->pick(tie, 2, &next, NULL), 0);
    ck_assert_ptr_null(router_find("nearest"));
    char list[256];
    router_list(list, sizeof list);
    ck_assert_str_eq(list, "round-robin, least-outstanding, least-kv, phase-aware, affinity");
}
END_TEST

/* The first open replica of n at or after `from`, going round (-1: none open). */
static int next_open(const bool *closed, int n, int from)
{
    for (int j = 0; j < n; j++)
        if (!closed[(from + j) % n])
            return (from + j) % n;
    return -1;
}

/* Round robin over every pattern of closed replicas of five: its first pick the first open one from
 * its cursor, each later one the next open one after the last, so that the open replicas take turns. */
START_TEST(round_robin_takes_the_open_in_turn)
{
    const struct router_ops *rr = router_find("round-robin");
    enum { N = 5 };
    for (int mask = 0; mask < (1 << N) - 1; mask++)
        for (int start = 0; start < N; start++) {
            struct router_view v[N] = {{.sent = 0}};
            bool closed[N];
            for (int k = 0; k < N; k++)
                closed[k] = v[k].closed = (mask >> k) & 1;
            int next = start, want = next_open(closed, N, start);
            for (int t = 0; t < 3 * N; t++) {
                const int got = rr->pick(v, N, &next, NULL);
                ck_assert_msg(got == want, "closed %#x from %d, pick %d: %d, wanted %d", mask, start, t, got, want);
                want = next_open(closed, N, got + 1);
            }
        }
}
END_TEST

/* The load routers against a naive argmin over random views (some replicas closed, small counts so
 * that ties are common): the open replica of the least key, compared as a tuple, ties to the first
 * met from the cursor, which then moves past it. least-outstanding: its requests (seen and sent
 * since); least-kv: its pool's share in use, then its requests; phase-aware: its requests about to
 * start a block (the ones sent since among them), then its requests. */
START_TEST(load_routers_pick_the_naive_argmin)
{
    static const char *const names[] = {"least-outstanding", "least-kv", "phase-aware"};
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(g, 37);
    for (int trial = 0; trial < 3000; trial++) {
        const int n = 1 + (int)gsl_rng_uniform_int(g, 6), who = (int)gsl_rng_uniform_int(g, 3);
        struct router_view v[6];
        int open = 0;
        for (int k = 0; k < n; k++) {
            v[k] = (struct router_view){.load = {.outstanding = (int64_t)gsl_rng_uniform_int(g, 4),
                                                 .refreshing = (int64_t)gsl_rng_uniform_int(g, 3),
                                                 .kv_used = 0.25 * (double)gsl_rng_uniform_int(g, 3)},
                                        .sent = (int64_t)gsl_rng_uniform_int(g, 3),
                                        .closed = gsl_rng_uniform(g) < 0.3};
            open += !v[k].closed;
        }
        if (open == 0)
            v[gsl_rng_uniform_int(g, n)].closed = false;
        const int start = (int)gsl_rng_uniform_int(g, n);
        int best = -1;
        double kb[2] = {0, 0};
        for (int j = 0; j < n; j++) {
            const int k = (start + j) % n;
            if (v[k].closed)
                continue;
            const double reqs = (double)(v[k].load.outstanding + v[k].sent),
                         starting = (double)(v[k].load.refreshing + v[k].sent);
            const double key[2] = {who == 0 ? reqs : who == 1 ? v[k].load.kv_used : starting, reqs};
            if (best < 0 || key[0] < kb[0] || (key[0] == kb[0] && key[1] < kb[1]))
                best = k, kb[0] = key[0], kb[1] = key[1];
        }
        int next = start;
        const int got = router_find(names[who])->pick(v, n, &next, NULL);
        ck_assert_msg(got == best, "%s, %d replicas from %d: %d, wanted %d", names[who], n, start, got, best);
        ck_assert_int_eq(next, (best + 1) % n);
    }
    gsl_rng_free(g);
}
END_TEST

/* The affinity router's three cases, by hand: out of balance, the fewest requests; else the most of
 * the prompt's blocks held where more than the threshold of them; else the fewest blocks held. */
START_TEST(affinity_picks_by_hand)
{
    const struct router_ops *aff = router_find("affinity");
    struct router_req q = {.blocks = 10, .threshold = 0.5, .balance_abs = 32, .balance_rel = 1.1};
    struct router_view v[3] = {{.load = {.outstanding = 4}, .match = 6, .held = 90},
                               {.load = {.outstanding = 2}, .match = 3, .held = 20},
                               {.load = {.outstanding = 9}, .match = 0, .held = 50}};
    int next = 0;
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 0); /* 6 of 10 > 0.5: the most held */
    v[0].match = 5, next = 0;
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 1); /* 5 of 10 is not more than half: the least held */
    v[0].match = 6, v[2].load.outstanding = 40, next = 0;
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 1); /* 40 - 2 > 32 and 40 > 1.1 * 2: the fewest requests */
    q.balance_rel = 30, next = 0;                     /* 40 < 30 * 2: in balance again */
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 0);
    q.blocks = 0, next = 0; /* no prompt to weigh (a move between pools): the fewest requests */
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 1);
    /* both balance bounds strict: the most exceeding the fewest by exactly abs, or being exactly rel times
     * it, is in balance, and the prompt's blocks decide */
    q.blocks = 10, q.balance_rel = 1.1, v[2].load.outstanding = 34, next = 0; /* 34 - 2 = 32 */
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 0);
    q.balance_abs = 0, q.balance_rel = 2, v[2].load.outstanding = 4, next = 0; /* 4 = 2 x 2 */
    ck_assert_int_eq(aff->pick(v, 3, &next, &q), 0);
    const struct router_ops *ops;
    struct router_req p;
    struct ts_err err;
    ck_assert_int_eq(fleet_router_parse("affinity:threshold=0.25,rel=2", &ops, &p, &err), 0);
    ck_assert_ptr_eq(ops, aff);
    ck_assert(p.threshold == 0.25 && p.balance_abs == 32 && p.balance_rel == 2);
    ck_assert_int_eq(fleet_router_parse("affinity:threshold=2", &ops, &p, &err), -1);
    ck_assert_int_eq(fleet_router_parse("round-robin:abs=1", &ops, &p, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "takes no parameters"));
    ck_assert_int_eq(fleet_router_parse("nearest", &ops, &p, &err), -1);
}
END_TEST

/* Admission: with every replica holding admit_max requests an arrival is refused by the fleet, and
 * counted among the rejected, the others all finish; deferred instead, every request finishes,
 * later. */
START_TEST(admission_refuses_when_full)
{
    struct sim_config c;
    config(&c, trace_file(0, 200, 5, 0, 0));
    struct fleet_result r;
    run_fleet(&c, 2, "least-outstanding", 0, 4, &r);
    ck_assert(r.refused > 0);
    ck_assert_int_eq(r.fleet.num_requests, 200);
    ck_assert_int_eq(r.fleet.num_rejected, r.refused);
    ck_assert_int_eq(r.fleet.num_finished + r.refused, 200);
    ck_assert_int_eq(r.routed[0] + r.routed[1] + r.refused, 200);
    /* deferred: every request finishes, those held back later, their wait counted from their arrival */
    struct fleet_result d;
    struct sim_config cd[2] = {c, c};
    const struct fleet_opts od = {.router = router_find("least-outstanding"), .admit_max = 4, .defer = true};
    struct ts_err derr;
    ck_assert_msg(fleet_run(&c, cd, 2, &od, &d, &derr) == 0, "%s", derr.msg);
    ck_assert_int_eq(d.refused, 0);
    ck_assert(d.deferred >= r.refused);
    ck_assert_int_eq(d.fleet.num_finished, 200);
    ck_assert_int_eq(d.routed[0] + d.routed[1], 200);
    ck_assert(d.fleet.queue_mean_s > r.fleet.queue_mean_s + 1);
    ck_assert(d.fleet.lat_p99_s > r.fleet.lat_p99_s);
    ck_assert(d.fleet.makespan_ns > r.fleet.makespan_ns); /* the held ones finish after the rest */
    fleet_result_free(&d);
    fleet_result_free(&r);
    struct sim_config bad = c;
    snprintf(bad.gpu, sizeof bad.gpu, "h300");
    const struct sim_config cfg[2] = {c, bad};
    const struct fleet_opts o = {.router = router_find("round-robin")};
    struct ts_err err;
    ck_assert_int_eq(fleet_run(&c, cfg, 2, &o, &r, &err), FLEET_REFUSED); /* bad input: refused before the run */
    ck_assert_msg(strstr(err.msg, "replica 1") && strstr(err.msg, "h300"), "%s", err.msg);
}
END_TEST

/* A fleet with --disagg's spec (its link given) over n replicas of c. */
static int run_disagg(const struct sim_config *c, int n, const char *router, const char *spec, struct fleet_result *r,
                      struct ts_err *err)
{
    struct sim_config *cfg = xmalloc(sizeof *cfg * (size_t)n);
    for (int i = 0; i < n; i++)
        cfg[i] = *c;
    struct fleet_opts o = {.router = router_find(router)};
    int rc = fleet_disagg_parse(spec, &o.disagg, err) || fleet_run(c, cfg, n, &o, r, err) ? -1 : 0;
    free(cfg);
    return rc;
}

/* Disaggregated, every request takes the steps it takes co-located (the same count, rows and decoded
 * tokens: its progress, policy state and decode stream move with it). With `every` (dual cache, two
 * blocks a request) each block's Refresh runs in the Refresh pool and sends the K/V on, each block's
 * end sends the ids back: 2 moves with K/V and 1 without a request, and the Refresh pool's steps are
 * the Refreshes alone. With `first` one move a request. */
START_TEST(disagg_moves_keep_each_request)
{
    enum { N = 150 };
    struct sim_config c;
    config(&c, trace_file(0, N, 60, 0, 0));
    struct fleet_result co, ev, fi;
    run_fleet(&c, 4, "least-outstanding", 0, 0, &co);
    struct ts_err err;
    ck_assert_msg(run_disagg(&c, 4, "least-outstanding", "every,refresh=1,link=host", &ev, &err) == 0, "%s", err.msg);
    ck_assert_msg(run_disagg(&c, 4, "least-outstanding", "first,refresh=2,link=ib-ndr", &fi, &err) == 0, "%s", err.msg);
    const struct fleet_result *d[2] = {&ev, &fi};
    for (int k = 0; k < 2; k++) {
        const struct sim_summary *f = &d[k]->fleet;
        ck_assert_int_eq(f->num_requests, N);
        ck_assert_int_eq(f->num_finished, N);
        ck_assert_int_eq(f->num_preemptions, 0);
        ck_assert_int_eq(f->request_steps, co.fleet.request_steps);
        ck_assert_int_eq(f->rows_processed, co.fleet.rows_processed);
        ck_assert_int_eq(f->step_decoded, co.fleet.step_decoded);
        ck_assert_int_eq(f->tokens_decoded, co.fleet.tokens_decoded);
        ck_assert_int_eq(f->handed_in, d[k]->handoffs);
        ck_assert_int_eq(f->handed_out, d[k]->handoffs);
        int64_t arrivals = 0;
        for (int i = 0; i < 4; i++)
            arrivals += d[k]->routed[i];
        ck_assert_int_eq(arrivals, N);
        for (int i = d[k]->refresh_pool; i < 4; i++) {
            ck_assert_int_eq(d[k]->routed[i], 0); /* arrivals go to the Refresh pool */
            /* (a Reuse replica is offered the requests moved in to it) */
            ck_assert_msg(d[k]->replica[i].handed_in > 0 &&
                              d[k]->replica[i].offered_rps > 0.9 * (double)d[k]->replica[i].handed_in / ((N - 1) * 0.06),
                          "replica %d offered %g req/s for %lld moved in", i, d[k]->replica[i].offered_rps,
                          (long long)d[k]->replica[i].handed_in);
        }
    }
    ck_assert_int_eq(co.fleet.num_preemptions, 0);
    ck_assert_int_eq(ev.refresh_pool, 1);
    ck_assert_int_eq(ev.handoffs_kv, 2 * N);
    ck_assert_int_eq(ev.handoffs, 3 * N);
    ck_assert_int_eq(ev.replica[0].request_steps, 2 * N);
    ck_assert_int_eq(ev.replica[0].num_finished, 0);
    ck_assert_int_eq(fi.refresh_pool, 2);
    ck_assert_int_eq(fi.handoffs, N);
    ck_assert_int_eq(fi.handoffs_kv, N);
    ck_assert_int_eq(fi.replica[0].request_steps + fi.replica[1].request_steps, N);
    ck_assert(ev.fleet.lat_mean_s > co.fleet.lat_mean_s); /* the moves take time */
    fleet_result_free(&co);
    fleet_result_free(&ev);
    fleet_result_free(&fi);
}
END_TEST

/* A live disaggregated fleet's engines, faked: the K/V tokens each request id holds on each replica,
 * those a sender set aside under each ticket, and those a receiver holds under each move's key. A
 * segment that reads more cached keys than its request holds on its replica is counted short: the
 * oracle that every move carried its request's K/V to where its next step reads them. */
#define FAKE_IDS 4096
struct fake_engine {
    int64_t held[FAKE_IDS], aside[FAKE_IDS], keyed[FAKE_IDS];
    int64_t steps, reads, short_reads, holds, adopts;
};

static int fake_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    struct fake_engine *f = ctx;
    for (int32_t k = 0; k < sd->num_segs; k++) {
        const struct segment *g = &sd->segs[k];
        if (g->req_id < 0 || g->req_id >= FAKE_IDS)
            return ts_fail(err, "request %d past the fake's ids", g->req_id);
        f->reads += g->kv > 0;
        f->short_reads += g->kv > f->held[g->req_id];
        f->held[g->req_id] = TS_MAX(f->held[g->req_id], (int64_t)g->kv + g->q);
    }
    f->steps++;
    *seconds = 1e-3 + 1e-6 * (double)sd->tot.rows;
    return 0;
}

static void fake_release(void *ctx, int32_t req_id) { ((struct fake_engine *)ctx)->held[req_id] = 0; }

static int fake_hold(void *ctx, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    struct fake_engine *f = ctx;
    if (ticket < 0 || ticket >= FAKE_IDS || f->aside[ticket] >= 0)
        return ts_fail(err, "ticket %lld reused or out of range", (long long)ticket);
    f->aside[ticket] = f->held[req_id], f->held[req_id] = 0;
    f->holds++;
    return 0;
}

static int fake_move(void *ctx, int from, int64_t ticket, int to, int64_t key, double *seconds, struct ts_err *err)
{
    struct fake_engine *f = ctx;
    if (key < 0 || key >= FAKE_IDS || f[to].keyed[key] >= 0 || f[from].aside[ticket] < 0)
        return ts_fail(err, "move %lld: key in use or nothing set aside", (long long)key);
    f[to].keyed[key] = f[from].aside[ticket], f[from].aside[ticket] = -1;
    *seconds = 0.25;
    return 0;
}

static int fake_adopt(void *ctx, int to, int64_t key, int32_t req_id, struct ts_err *err)
{
    struct fake_engine *f = ctx;
    if (f[to].keyed[key] < 0 || f[to].held[req_id] > 0)
        return ts_fail(err, "adopt %lld: nothing under the key, or request %d holds K/V", (long long)key, req_id);
    f[to].held[req_id] = f[to].keyed[key], f[to].keyed[key] = -1;
    f[to].adopts++;
    return 0;
}

/* Live and disaggregated, each move with K/V is run between the replicas' engines: the sender sets
 * them aside as the request is handed on, the receiver holds the copy under the move's key and gives
 * it to the request's id there once it arrives. No step reads keys its engine does not hold, every
 * request takes the steps it takes co-located, and the copies' measured time, not the link's model,
 * moves the clock. Without the live hooks, or with a policy whose engine keeps more than K/V, the run
 * is refused before any step. */
START_TEST(disagg_live_moves_carry_the_kv)
{
    enum { N = 60, R = 3 };
    struct sim_config c;
    config(&c, trace_file(0, N, 60, 0, 0));
    struct fleet_result co, r;
    run_fleet(&c, R, "least-outstanding", 0, 0, &co);
    struct fake_engine *f = xcalloc(R, sizeof *f);
    struct sim_executor ex[R];
    for (int i = 0; i < R; i++) {
        for (int k = 0; k < FAKE_IDS; k++)
            f[i].aside[k] = f[i].keyed[k] = -1;
        ex[i] = (struct sim_executor){&f[i], fake_step, fake_release, fake_hold};
    }
    struct sim_config cfg[R] = {c, c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding"), .ex = ex, .live_move = fake_move,
                           .live_adopt = fake_adopt, .live_ctx = f};
    struct ts_err err;
    ck_assert_int_eq(fleet_disagg_parse("every,refresh=2,link=host", &o.disagg, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, R, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.fleet.num_finished, N);
    ck_assert_int_eq(r.fleet.request_steps, co.fleet.request_steps);
    ck_assert_int_eq(r.fleet.rows_processed, co.fleet.rows_processed);
    ck_assert_int_eq(r.handoffs_kv, 2 * N);
    ck_assert_int_eq(r.moves_live, r.handoffs_kv);
    int64_t holds = 0, adopts = 0;
    for (int i = 0; i < R; i++) {
        ck_assert_int_eq(f[i].short_reads, 0);
        holds += f[i].holds, adopts += f[i].adopts;
    }
    ck_assert_int_gt(f[2].reads, N); /* the Reuse replica read the K/V it was sent */
    ck_assert_int_eq(holds, r.handoffs_kv);
    ck_assert_int_eq(adopts, r.handoffs_kv);
    ck_assert_double_eq_tol(r.move_live_s, 0.25 * (double)r.moves_live, 1e-9);
    ck_assert(r.move_model_s < r.move_live_s / 100); /* NVLink's model: far below the fake's 0.25 s */
    ck_assert(r.xfer_s >= 0.25 * (double)r.moves_live - 1e-6);
    fleet_result_free(&r);

    const int64_t steps = f[0].steps + f[1].steps + f[2].steps;
    o.live_move = NULL; /* executors that cannot move K/V */
    ck_assert_int_eq(fleet_run(&c, cfg, R, &o, &r, &err), FLEET_REFUSED);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot move K/V"));
    o.live_move = fake_move;
    for (int i = 0; i < R; i++)
        snprintf(cfg[i].policy, sizeof cfg[i].policy, "dllm-cache");
    ck_assert_int_eq(fleet_run(&c, cfg, R, &o, &r, &err), FLEET_REFUSED);
    ck_assert_ptr_nonnull(strstr(err.msg, "policy 'dllm-cache' keeps each token's attention and FFN outputs"));
    for (int i = 0; i < R; i++)
        snprintf(cfg[i].policy, sizeof cfg[i].policy, "sparsed");
    ck_assert_int_eq(fleet_run(&c, cfg, R, &o, &r, &err), FLEET_REFUSED);
    ck_assert_ptr_nonnull(strstr(err.msg, "policy 'sparsed' needs SparseD's patterns"));
    ck_assert_ptr_nonnull(strstr(err.msg, "keeps each request's pattern of kept key blocks"));
    ck_assert_int_eq(f[0].steps + f[1].steps + f[2].steps, steps); /* refused before any step */
    fleet_result_free(&co);
    free(f);
}
END_TEST

/* A trace of n requests all arriving at 0, each of prompt P and output 64. */
static const char *burst_trace(int slot, int n, int P)
{
    char text[4096];
    int len = sprintf(text, "arrival_ns,prompt_tokens,output_tokens\n");
    for (int i = 0; i < n; i++)
        len += sprintf(text + len, "0,%d,64\n", P);
    return tmp_file(slot, ".csv", text);
}

/* One request, its first step in the Refresh pool: its latency is the instance's alone plus one move,
 * P + G tokens of K/V over 1 GB/s and 1 ms. Three alike from three Refresh replicas into one Reuse
 * replica leave together and queue at its port: they wait 0, 1 and 2 moves' bytes. */
START_TEST(disagg_link_prices_each_move)
{
    struct sim_config c;
    config(&c, burst_trace(0, 1, 200));
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_int_eq(sim_run(s, &err), 0);
    struct sim_summary alone;
    sim_get_summary(s, &alone);
    struct model_cfg m;
    ck_assert_int_eq(model_resolve(c.model, &m, &err), 0);
    sim_destroy(s);
    const double move_s = (double)(200 + 64) * (double)model_kv_bytes_per_token(&m) / 1e9; /* its bytes' time */
    struct fleet_result r;
    ck_assert_msg(run_disagg(&c, 2, "round-robin", "first,refresh=1,link=ib-ndr,bw=1,lat=1000", &r, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(r.handoffs, 1);
    ck_assert_double_eq_tol(r.moved_bytes, move_s * 1e9, 0.5);
    ck_assert_double_eq_tol(r.xfer_s, move_s + 1e-3, 2e-9);
    ck_assert_double_eq_tol(r.xfer_wait_s, 0, 1e-12);
    ck_assert_double_eq_tol(r.fleet.lat_mean_s, alone.lat_mean_s + move_s + 1e-3, 4e-9);
    fleet_result_free(&r);

    config(&c, burst_trace(1, 3, 200));
    ck_assert_msg(run_disagg(&c, 4, "round-robin", "first,refresh=3,link=ib-ndr,bw=1,lat=1000", &r, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(r.routed[0], 1);
    ck_assert_int_eq(r.routed[1], 1);
    ck_assert_int_eq(r.routed[2], 1);
    ck_assert_int_eq(r.handoffs, 3);
    ck_assert_double_eq_tol(r.xfer_wait_s, (0 + 1 + 2) * move_s, 6e-9);
    ck_assert_double_eq_tol(r.xfer_s, 3 * (move_s + 1e-3) + 3 * move_s, 12e-9);
    fleet_result_free(&r);
}
END_TEST

/* Moves under tensor parallelism, by hand: a move carries its request's K/V whole, every GPU's share,
 * P + G tokens at the model's K/V bytes a token whatever the TP degree, over as many ports as the
 * smaller side has GPUs: from TP 2 to TP 2 in half one port's time, from TP 2 to TP 1 in the whole.
 * Two requests leaving one Refresh replica together for two Reuse replicas queue at its sending port:
 * the second waits for the first's bytes. */
START_TEST(disagg_moves_under_tensor_parallelism)
{
    struct sim_config c;
    config(&c, burst_trace(0, 1, 200));
    struct ts_err err;
    struct model_cfg m;
    ck_assert_int_eq(model_resolve(c.model, &m, &err), 0);
    const double bytes = (double)(200 + 64) * (double)model_kv_bytes_per_token(&m), move_s = bytes / 1e9;
    struct fleet_opts o = {.router = router_find("round-robin")};
    ck_assert_int_eq(fleet_disagg_parse("first,refresh=1,link=ib-ndr,bw=1,lat=1000", &o.disagg, &err), 0);
    const int reuse_tp[2] = {2, 1};
    struct fleet_result r;
    for (int k = 0; k < 2; k++) {
        struct sim_config cfg[2] = {c, c};
        cfg[0].tp = 2, cfg[1].tp = reuse_tp[k];
        ck_assert_msg(fleet_run(&c, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(r.handoffs_kv, 1);
        ck_assert_double_eq_tol(r.moved_bytes, bytes, 0.5);
        ck_assert_double_eq_tol(r.xfer_s, move_s / reuse_tp[k] + 1e-3, 2e-9);
        fleet_result_free(&r);
    }
    config(&c, burst_trace(1, 2, 200));
    ck_assert_msg(run_disagg(&c, 3, "round-robin", "first,refresh=1,link=ib-ndr,bw=1,lat=1000", &r, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(r.handoffs, 2);
    ck_assert(r.replica[1].handed_in == 1 && r.replica[2].handed_in == 1);
    ck_assert_double_eq_tol(r.xfer_wait_s, move_s, 4e-9);
    ck_assert_double_eq_tol(r.xfer_s, 2 * (move_s + 1e-3) + move_s, 8e-9);
    fleet_result_free(&r);
}
END_TEST

/* Admission at its bound, by hand: one replica, admit_max 2, five requests arriving together. The
 * first finds the replica holding none and the second one (routed a moment before: the router counts
 * what it sent), and both are routed; the third finds two, admit_max exactly, which is full, and is
 * refused, as are the two after it. The fleet's rates are the two served requests': 128 tokens and 2
 * requests over the span, the energy over the span. */
START_TEST(admission_at_its_bound_by_hand)
{
    struct sim_config c;
    config(&c, burst_trace(2, 5, 100));
    struct fleet_result r;
    run_fleet(&c, 1, "least-outstanding", 0, 2, &r);
    ck_assert_int_eq(r.routed[0], 2);
    ck_assert_int_eq(r.refused, 3);
    const struct sim_summary *f = &r.fleet;
    ck_assert(f->num_requests == 5 && f->num_finished == 2 && f->num_rejected == 3);
    const double span = (double)f->makespan_ns * 1e-9;
    ck_assert_double_eq_tol(f->throughput_tok_s * span, 2 * 64, 1e-9);
    ck_assert_double_eq_tol(f->content_tok_s * span, 2 * 64, 1e-9);
    ck_assert_double_eq_tol(f->req_s * span, 2, 1e-12);
    ck_assert_double_eq_tol(f->mean_power_w * span, f->energy_j, 1e-9 * f->energy_j);
    ck_assert_double_eq_tol(f->energy_per_request_j, f->energy_j / 2, 1e-9 * f->energy_j);
    fleet_result_free(&r);
}
END_TEST

/* The replicas up at time t by the autoscaler's kept readings (the last kept at or before t). */
static int up_at(const struct fleet_result *r, double t)
{
    int up = -1;
    for (int64_t k = 0; k < r->nscale && r->scale[k].t_s <= t + 1e-9; k++)
        up = r->scale[k].up;
    return up;
}

/* The autoscaler's bounds, by hand (fleet.h: more than up, fewer than down, at most once a cooldown,
 * a cooldown exactly passed allowing a drain). Two replicas, min 1 and up 4, four long requests at 0:
 * the reading at 0.01 s finds 4 a replica up, not more than 4, and starts none. Two, min 1, up 1.5 and
 * down 1, two long requests at 0: the reading at 0.01 s finds 2 on the one up and starts the other
 * (no delay); the reading at 0.02 s finds 1 a replica, not fewer than 1, and drains none. Three, min 1,
 * up 0.4, down 0.25, a reading a second, no delay and a cooldown of one reading: a long request (T s
 * alone) starts a replica at 1 s (mean 1) and another at 2 s (mean 1/2); at k, the first reading
 * after T, one is drained (mean 0), and at k + 1, a cooldown later, the other, short requests arriving
 * half a second after each reading until then. The one drained first stops at k + 1; the other is
 * still draining when the run ends, idle since before its drain: their times up, start to stop and
 * start to drain, are k - 1 and k, whichever each is. Each replica's energy is its steps' and its idle
 * draw the rest of its time up. */
START_TEST(autoscale_bounds_by_hand)
{
    static const char head[] = "arrival_ns,prompt_tokens,output_tokens\n", slow[] = "0,100,1024\n";
    char text[2048];
    struct ts_err err;
    struct fleet_result r;
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct sim_config c;
    snprintf(text, sizeof text, "%s%s%s%s%s15000000,100,32\n", head, slow, slow, slow, slow);
    config(&c, tmp_file(0, ".csv", text));
    c.gen_len = 0;
    struct sim_config cfg[3] = {c, c, c};
    ck_assert_int_eq(fleet_scale_parse("min=1,up=4,down=0,every=0.01,delay=0", &o.scale, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.nscale >= 1 && fabs(r.scale[0].t_s - 0.01) < 1e-12);
    ck_assert(r.scale[0].outstanding == 4 && r.scale[0].up == 1 && r.scale[0].starting == 0 && r.started == 0);
    fleet_result_free(&r);

    snprintf(text, sizeof text, "%s%s%s25000000,100,32\n", head, slow, slow);
    config(&c, tmp_file(1, ".csv", text));
    c.gen_len = 0;
    cfg[0] = cfg[1] = cfg[2] = c;
    ck_assert_int_eq(fleet_scale_parse("min=1,up=1.5,down=1,every=0.01,delay=0,cooldown=0", &o.scale, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.nscale >= 2 && fabs(r.scale[1].t_s - 0.02) < 1e-12 && r.started == 1);
    ck_assert(r.scale[1].outstanding == 2 && r.scale[1].up == 2 && r.stopped == 0);
    fleet_result_free(&r);

    snprintf(text, sizeof text, "%s%s", head, slow);
    config(&c, tmp_file(2, ".csv", text));
    c.gen_len = 0;
    const struct sim_summary alone = instance(&c);
    const int k = (int)floor((double)alone.makespan_ns * 1e-9) + 1;
    ck_assert_int_ge(k, 4); /* the long request outstanding through the reading at 3 s */
    int len = snprintf(text, sizeof text, "%s%s", head, slow);
    for (int j = 1; j <= k + 1; j++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%lld,100,32\n", (long long)(j * 1000000000LL + 500000000));
    config(&c, tmp_file(3, ".csv", text));
    c.gen_len = 0;
    cfg[0] = cfg[1] = cfg[2] = c;
    ck_assert_int_eq(fleet_scale_parse("min=1,up=0.4,down=0.25,every=1,delay=0,cooldown=1", &o.scale, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 3, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(up_at(&r, 1) == 1 && up_at(&r, 2) == 2 && up_at(&r, k - 1) == 3);
    ck_assert(up_at(&r, k) == 2 && up_at(&r, k + 1) == 1 && r.started == 2 && r.stopped == 2);
    const double end = (double)r.fleet.makespan_ns * 1e-9;
    ck_assert_double_eq_tol(r.active_s[0], end, 1e-9);
    ck_assert_double_eq_tol(fmin(r.active_s[1], r.active_s[2]), k - 1, 1e-9);
    ck_assert_double_eq_tol(fmax(r.active_s[1], r.active_s[2]), k, 1e-9);
    double energy = 0;
    for (int i = 0; i < 3; i++) {
        const struct sim_summary *m = &r.replica[i];
        const double own = m->busy_energy_j + m->idle_w * (r.active_s[i] - m->busy_s);
        ck_assert_double_eq_tol(m->energy_j, own, 1e-9 * own);
        energy += own;
    }
    ck_assert_double_eq_tol(r.fleet.energy_j, energy, 1e-9 * energy);
    fleet_result_free(&r);
}
END_TEST

/* --disagg's settings: a mode, a link from the table, the pools' split; each bad value refused by
 * name, a fleet without a link between its pools among them. */
START_TEST(disagg_spec)
{
    struct fleet_disagg d;
    struct ts_err err;
    ck_assert_int_eq(fleet_disagg_parse("", &d, &err), 0);
    ck_assert_int_eq(d.mode, DISAGG_OFF);
    ck_assert_int_eq(fleet_disagg_parse("every,link=ib-hdr", &d, &err), 0);
    ck_assert_int_eq(d.mode, DISAGG_EVERY);
    ck_assert_int_eq(d.refresh, 0);
    ck_assert_double_eq(d.link.bw, 25e9);
    ck_assert_int_eq(fleet_disagg_parse("first,refresh=3,link=host,lat=5", &d, &err), 0);
    ck_assert_int_eq(d.mode, DISAGG_FIRST);
    ck_assert_int_eq(d.refresh, 3);
    ck_assert_double_eq(d.link.bw, 0);
    ck_assert_double_eq_tol(d.link.lat_s, 5e-6, 1e-18);
    static const char *const bad[][2] = {
        {"every", "need a link"},          {"every,refresh=2", "need a link"},
        {"some,link=host", "first"},       {"every,link=nvlink9", "ib-ndr"},
        {"every,link=host,refresh=0", "refresh=0"}, {"every,link=host,refresh=1.5", "refresh=1.5"},
        {"every,link=host,bw=0", "bw=0"},  {"every,link=host,speed=3", "speed=3"},
        {"every,link=host,lat=-1", "lat=-1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_ne(fleet_disagg_parse(bad[i][0], &d, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
    }
    /* pools that leave one empty, and an autoscaled disaggregated fleet, are refused at the run */
    struct sim_config c;
    config(&c, burst_trace(0, 2, 100));
    struct fleet_result r;
    ck_assert_int_ne(run_disagg(&c, 2, "round-robin", "every,refresh=2,link=host", &r, &err), 0);
    ck_assert_msg(strstr(err.msg, "no Reuse pool"), "%s", err.msg);
    struct sim_config cfg[2] = {c, c};
    struct fleet_opts o = {.router = router_find("round-robin")};
    ck_assert_int_eq(fleet_disagg_parse("every,link=host", &o.disagg, &err), 0);
    ck_assert_int_eq(fleet_scale_parse("min=1", &o.scale, &err), 0);
    ck_assert_int_ne(fleet_run(&c, cfg, 2, &o, &r, &err), 0);
    ck_assert_msg(strstr(err.msg, "--autoscale"), "%s", err.msg);
    /* pools whose requests could not go on across them (another decoder: no decode stream to draw) */
    o.scale.on = false;
    snprintf(cfg[1].decode, sizeof cfg[1].decode, "threshold:2");
    ck_assert_int_eq(fleet_run(&c, cfg, 2, &o, &r, &err), FLEET_REFUSED);
    ck_assert_msg(strstr(err.msg, "replica 1's decode model differs"), "%s", err.msg);
}
END_TEST

/* A trace of three parts: 1 req/s for 300 s, 12 req/s for 300 s, 1 req/s for 600 s, evenly spaced. */
static const char *step_trace(int slot)
{
    char *text = xmalloc(64 * 6000);
    int len = sprintf(text, "arrival_ns,prompt_tokens,output_tokens\n");
    const double rate[3] = {1, 12, 1}, from[3] = {0, 300, 600}, to[3] = {300, 600, 1200};
    for (int p = 0, i = 0; p < 3; p++)
        for (double t = from[p]; t < to[p]; t += 1 / rate[p], i++)
            len += sprintf(text + len, "%lld,%d,200\n", (long long)(t * 1e9), 100 + 37 * i % 500);
    const char *path = tmp_file(slot, ".csv", text);
    free(text);
    return path;
}

/* --load-control's settings: the defaults, and every bad value refused by name. A decoder whose count
 * no threshold sets, or one drawing from a measured distribution, cannot be scaled. */
START_TEST(load_control_spec)
{
    struct fleet_tau t;
    struct ts_err err;
    ck_assert_int_eq(fleet_tau_parse("", &t, &err), 0);
    ck_assert(!t.on);
    ck_assert_int_eq(fleet_tau_parse("lo=0.6,elasticity=2", &t, &err), 0);
    ck_assert(t.on);
    ck_assert_double_eq(t.lo, 0.6);
    ck_assert_double_eq(t.elasticity, 2);
    ck_assert_double_eq(t.tau0, 0.9);
    ck_assert_double_eq(t.step, 0.05);
    static const char *const bad[][2] = {
        {"lo=0.9,tau0=0.9", "lo (0.9) must be below tau0 (0.9)"}, {"up=2,down=2", "down (2) must be below up (2)"},
        {"lo=0", "lo '0' must be a number in 0.01..0.99"}, {"step=0", "step '0'"},
        {"every=0", "every '0'"},                          {"tau=0.5", "'tau=0.5' is not KEY=VALUE of lo, step"},
        {"lo", "'lo' is not KEY=VALUE"},                   {"elasticity=x", "elasticity 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_ne(fleet_tau_parse(bad[i][0], &t, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
    }
    struct decode_model dm;
    ck_assert_int_eq(decode_parse("threshold:2.5", "sim/data", &dm, &err), 0);
    ck_assert_int_eq(decode_scale_extra(&dm, 2.5, 3, &err), 0);
    ck_assert_double_eq(dm.tpf, 1 + 1.5 * 3);
    ck_assert_int_eq(decode_parse("fixed:2", "sim/data", &dm, &err), 0);
    ck_assert_int_ne(decode_scale_extra(&dm, 2, 3, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "fixed count"));
    dm.kind = DECODE_THRESHOLD, dm.ncdf = 4;
    ck_assert_int_ne(decode_scale_extra(&dm, 2, 3, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "measured distribution"));
}
END_TEST

/* Through the load step, load control lowers the threshold a step a reading to its floor and raises it
 * back once the queue drains; each reading's TPF is 1 + (TPF0 - 1) ((1 - tau) / (1 - tau0))^e, its
 * time-weighted mean the readings' by hand; the tail shortens. Where the load never calls for it, the
 * fleet is the fleet without it. */
START_TEST(load_control_follows_the_load)
{
    struct sim_config c;
    config(&c, step_trace(0));
    c.gen_len = 256;
    snprintf(c.gpu, sizeof c.gpu, "l40s");
    snprintf(c.decode, sizeof c.decode, "threshold:2.5");
    struct sim_config cfg[4] = {c, c, c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct ts_err err;
    struct fleet_result plain, lc, idle;
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &plain, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(fleet_tau_parse("lo=0.6,step=0.1,up=8,down=2,every=10,elasticity=1.5", &o.tau, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &lc, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(plain.ntau, 0);
    ck_assert(lc.tau_taken >= 100 && lc.ntau <= lc.tau_taken);
    double lowest = 1, weighted = 0;
    const double end = (double)lc.fleet.makespan_ns * 1e-9;
    for (int64_t k = 0; k < lc.ntau; k++) {
        const struct fleet_tau_point *p = &lc.tau[k];
        const double prev = k > 0 ? lc.tau[k - 1].tau : 0.9;
        ck_assert(p->tau >= 0.6 - 1e-12 && p->tau <= 0.9 + 1e-12);
        ck_assert(fabs(p->tau - prev) <= 0.1 + 1e-12);
        ck_assert_double_eq_tol(p->tpf, 1 + 1.5 * pow((1 - p->tau) / 0.1, 1.5), 1e-9);
        if (p->t_s < 300) /* before the step: the threshold as configured */
            ck_assert_double_eq_tol(p->tau, 0.9, 1e-12);
        lowest = fmin(lowest, p->tau);
        weighted += p->tau * ((k + 1 < lc.ntau ? lc.tau[k + 1].t_s : end) - p->t_s);
    }
    ck_assert_double_eq_tol(lowest, 0.6, 1e-12);
    ck_assert_double_eq_tol(lc.tau[lc.ntau - 1].tau, 0.9, 1e-12); /* back once the queue drained */
    ck_assert_double_eq_tol(lc.tau_mean, weighted / (end - lc.tau[0].t_s), 1e-9);
    ck_assert_int_eq(lc.fleet.num_finished, plain.fleet.num_finished);
    ck_assert(lc.fleet.lat_p99_s < 0.8 * plain.fleet.lat_p99_s);
    ck_assert(lc.fleet.step_decoded == plain.fleet.step_decoded); /* the same tokens, in fewer steps */
    ck_assert(lc.fleet.request_steps < plain.fleet.request_steps);
    /* a bar the load never reaches: the threshold stays, and the fleet is the plain one */
    ck_assert_int_eq(fleet_tau_parse("lo=0.6,up=1000000,down=0", &o.tau, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &idle, &err) == 0, "%s", err.msg);
    ck_assert_double_eq_tol(idle.tau_mean, 0.9, 1e-12);
    ck_assert_double_eq(idle.fleet.lat_p99_s, plain.fleet.lat_p99_s);
    ck_assert_int_eq(idle.fleet.request_steps, plain.fleet.request_steps);
    fleet_result_free(&idle);
    /* a replica whose decoder no threshold sets is refused, named */
    snprintf(cfg[2].decode, sizeof cfg[2].decode, "fixed:1");
    ck_assert_int_ne(fleet_run(&c, cfg, 4, &o, &idle, &err), 0);
    ck_assert_msg(strstr(err.msg, "replica 2") && strstr(err.msg, "fixed count"), "%s", err.msg);
    fleet_result_free(&plain);
    fleet_result_free(&lc);
}
END_TEST

/* Load control along a published sweep (LLaDA2.0-mini's: 70.15 at 2.55 TPF at threshold 0.95, 67.90 at
 * 3.31 at 0.85): each reading's TPF is the straight line between them, by hand; the fleet expects an
 * accuracy between the two, below the plain fleet's 70.15, for a shorter tail. A band that leaves the
 * sweep is refused before the run, naming the replica and the thresholds published. */
START_TEST(load_control_along_a_sweep)
{
    struct sim_config c;
    config(&c, step_trace(0));
    c.gen_len = 256;
    snprintf(c.gpu, sizeof c.gpu, "l40s");
    snprintf(c.model, sizeof c.model, "llada2.0-mini");
    snprintf(c.policy, sizeof c.policy, "block");
    snprintf(c.decode, sizeof c.decode, "threshold:llada2-mini-sweep");
    struct sim_config cfg[4] = {c, c, c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct ts_err err;
    struct fleet_result plain, lc;
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &plain, &err) == 0, "%s", err.msg);
    ck_assert_double_eq_tol(plain.fleet.expected_accuracy, 70.15, 1e-9);
    ck_assert_int_eq(fleet_tau_parse("lo=0.85,tau0=0.95,step=0.05,up=8,down=2,every=10", &o.tau, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &lc, &err) == 0, "%s", err.msg);
    double lowest = 1;
    for (int64_t k = 0; k < lc.ntau; k++) {
        const struct fleet_tau_point *p = &lc.tau[k];
        ck_assert_double_eq_tol(p->tpf, 2.55 + (0.95 - p->tau) / 0.1 * (3.31 - 2.55), 1e-9);
        lowest = fmin(lowest, p->tau);
    }
    ck_assert_double_eq_tol(lowest, 0.85, 1e-12);
    ck_assert_msg(lc.fleet.expected_accuracy > 67.90 && lc.fleet.expected_accuracy < 70.15 - 0.05, "%g",
                  lc.fleet.expected_accuracy);
    ck_assert_str_eq(lc.fleet.accuracy_task, "a subset of LLaDA2.0's");
    ck_assert(lc.fleet.lat_p99_s < plain.fleet.lat_p99_s);
    fleet_result_free(&lc);
    /* without tau0, the decoders' own threshold: the profile's 0.95 */
    ck_assert_int_eq(fleet_tau_parse("lo=0.85,step=0.05,up=8,down=2,every=10", &o.tau, &err), 0);
    ck_assert_msg(fleet_run(&c, cfg, 4, &o, &lc, &err) == 0, "%s", err.msg);
    double highest = 0;
    for (int64_t k = 0; k < lc.ntau; k++)
        highest = fmax(highest, lc.tau[k].tau);
    ck_assert(lc.tau0 == 0.95 && highest == 0.95 && lc.tau_swept);
    fleet_result_free(&lc);
    struct fleet_result bad;
    ck_assert_int_eq(fleet_tau_parse("lo=0.96", &o.tau, &err), 0);
    ck_assert_int_ne(fleet_run(&c, cfg, 4, &o, &bad, &err), 0);
    ck_assert_msg(strstr(err.msg, "lo (0.96) must be below tau0 (0.95)"), "%s", err.msg);
    ck_assert_int_eq(fleet_tau_parse("lo=0.8,tau0=0.95", &o.tau, &err), 0);
    ck_assert_int_ne(fleet_run(&c, cfg, 4, &o, &bad, &err), 0);
    ck_assert_msg(strstr(err.msg, "replica 0") && strstr(err.msg, "0.85 to 0.95"), "%s", err.msg);
    fleet_result_free(&plain);
}
END_TEST

/* Readings kept (n of them, size bytes each, time first, every s apart when taken) show every one of
 * `taken`: times rising, no three in a row equal (same), two that differ one reading apart, and the
 * runs between them covering every reading taken. */
static void check_readings(const void *v, int64_t n, size_t size, int64_t taken, double every,
                           bool (*same)(const void *, const void *))
{
    const char *p = v;
    int64_t covered = n > 0;
    for (int64_t k = 0; k + 1 < n; k++) {
        const double t0 = *(const double *)(p + (size_t)k * size), t1 = *(const double *)(p + (size_t)(k + 1) * size);
        ck_assert(t1 > t0);
        if (!same(p + (size_t)k * size, p + (size_t)(k + 1) * size))
            ck_assert_msg(fabs(t1 - t0 - every) < 1e-6, "a change between readings %.6f and %.6f s", t0, t1);
        else if (k + 2 < n)
            ck_assert(!same(p + (size_t)(k + 1) * size, p + (size_t)(k + 2) * size));
        covered += llround((t1 - t0) / every);
    }
    ck_assert_int_eq(covered, taken);
}

static bool same_scale(const void *a, const void *b)
{
    const struct fleet_scale_point *x = a, *y = b;
    return x->up == y->up && x->starting == y->starting && x->outstanding == y->outstanding;
}

static bool same_tau(const void *a, const void *b)
{
    const struct fleet_tau_point *x = a, *y = b;
    return x->tau == y->tau && x->tpf == y->tpf && x->outstanding == y->outstanding;
}

/* An idle fleet read every 0.01 s for seven hours (eight requests an hour apart, 2.5 million readings of
 * each control loop): the readings kept are bounded by the changes (each request's arrival and finish,
 * the replicas started and drained, the threshold's moves), not by the span over `every`, and still
 * show every reading taken. */
START_TEST(readings_bounded_by_the_changes)
{
    struct sim_config c;
    config(&c, trace_file(0, 8, 3.6e6, 0, 0));
    snprintf(c.decode, sizeof c.decode, "threshold:2.5");
    struct sim_config cfg[2] = {c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct ts_err err;
    ck_assert_int_eq(fleet_scale_parse("min=1,up=0.5,down=0.1,every=0.01,delay=5,cooldown=10", &o.scale, &err), 0);
    ck_assert_int_eq(fleet_tau_parse("lo=0.7,step=0.05,up=0.5,down=0.1,every=0.01", &o.tau, &err), 0);
    struct fleet_result r;
    ck_assert_msg(fleet_run(&c, cfg, 2, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert(r.scale_taken > 2500000 && r.tau_taken > 2500000);
    ck_assert(r.started >= 1 && r.stopped >= 1); /* changes to show */
    const int64_t scale_changes = 2 * 8 + 2 * r.started + r.stopped, tau_moves = 2 * 8 * 5;
    ck_assert_msg(r.nscale <= 2 * (1 + scale_changes), "%lld autoscaler readings kept", (long long)r.nscale);
    ck_assert_msg(r.ntau <= 2 * (1 + 2 * 8 + tau_moves), "%lld load-control readings kept", (long long)r.ntau);
    check_readings(r.scale, r.nscale, sizeof *r.scale, r.scale_taken, 0.01, same_scale);
    check_readings(r.tau, r.ntau, sizeof *r.tau, r.tau_taken, 0.01, same_tau);
    ck_assert_double_eq_tol(r.tau[r.ntau - 1].tau, 0.9, 1e-12); /* back once the last request finished */
    fleet_result_free(&r);
}
END_TEST

/* The first row's first value of `sql` on db. */
static double query_real(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    const double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A fleet's run in SQLite: the fleet's summary as the run's, its row, a row a replica (routed counts
 * summing to the workload, each replica's p99 its own), the autoscaler's readings; two such databases
 * merged keep each fleet's rows under its new run. */
START_TEST(fleet_stored_in_sqlite)
{
    struct sim_config c;
    config(&c, step_trace(0));
    struct sim_config cfg[3] = {c, c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct ts_err err;
    ck_assert_int_eq(fleet_scale_parse("min=1,up=3,down=1,every=20,delay=10", &o.scale, &err), 0);
    struct fleet_result r;
    ck_assert_msg(fleet_run(&c, cfg, 3, &o, &r, &err) == 0, "%s", err.msg);
    const char *a = tmp_path(0, ".db"), *b = tmp_path(1, ".db"), *m = tmp_path(2, ".db");
    for (int k = 0; k < 2; k++) {
        struct db_out *out;
        ck_assert_int_eq(db_out_open(k ? b : a, DB_NEW, &out, &err), 0);
        ck_assert_msg(db_out_commit_fleet(out, &c, cfg, &r, &err) == 0, "%s", err.msg);
        db_out_close(out);
    }
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(a, &db), SQLITE_OK);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM runs"), 1);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT num_finished FROM summary"), r.fleet.num_finished);
    ck_assert_double_eq_tol(query_real(db, "SELECT lat_p99_s FROM summary"), r.fleet.lat_p99_s, 1e-12);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT replicas FROM fleets"), 3);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT started FROM fleets"), r.started);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM fleet_replicas"), 3);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT sum(routed) FROM fleet_replicas"), r.fleet.num_requests);
    ck_assert_double_eq_tol(query_real(db, "SELECT lat_p99_s FROM fleet_replicas WHERE replica = 1"),
                            r.replica[1].lat_p99_s, 1e-12);
    for (int i = 0; i < 3; i++) { /* each replica's time up, apart from its busy time */
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT active_s, busy_s FROM fleet_replicas WHERE replica = %d", i);
        ck_assert_double_eq_tol(query_real(db, sql), r.active_s[i], 1e-9);
    }
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM fleet_readings WHERE control = 'autoscale'"), r.nscale);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM fleet_replicas WHERE json_extract(config_json, '$.gpu') = 'h200'"), 3);
    sqlite3_close(db);
    const char *in[] = {a, b};
    int64_t runs = 0, already = 0;
    ck_assert_msg(db_merge(m, in, 2, &runs, &already, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(runs, 2);
    ck_assert_int_eq(sqlite3_open(m, &db), SQLITE_OK);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM fleet_replicas f JOIN runs USING (run_id)"), 6);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(DISTINCT run_id) FROM fleet_replicas"), 2);
    ck_assert_int_eq((int64_t)query_real(db, "SELECT count(*) FROM fleet_readings JOIN fleets USING (run_id)"), 2 * r.nscale);
    sqlite3_close(db);
    fleet_result_free(&r);
}
END_TEST

/* The autoscaler's settings: defaults, and every bad value refused by name. */
START_TEST(autoscale_spec)
{
    struct fleet_scale fs;
    struct ts_err err;
    ck_assert_int_eq(fleet_scale_parse("", &fs, &err), 0);
    ck_assert(!fs.on);
    ck_assert_int_eq(fleet_scale_parse("min=2,up=6", &fs, &err), 0);
    ck_assert(fs.on && fs.min == 2 && fs.up == 6 && fs.down == 2 && fs.every_s == 10 && fs.delay_s == 60 &&
              fs.cooldown_s == 120);
    static const struct {
        const char *spec, *says;
    } bad[] = {{"min=0", "min '0' must be a number in 1..65536"}, {"min=1.5", "min 1.5 must be a whole number"},
               {"every=0.001", "every '0.001' must be a number in 0.01..1000000"}, {"up=2,down=3", "down (3) must be below up (2)"},
               {"size=3", "'size=3' is not KEY=VALUE"}, {"up", "'up' is not KEY=VALUE"}, {"delay=-1", "delay '-1'"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_int_ne(fleet_scale_parse(bad[i].spec, &fs, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, "--autoscale"), "%s: %s", bad[i].spec, err.msg);
    }
}
END_TEST

/* Autoscaling: an autoscaler that never starts a replica is a fleet of its min; one whose replicas
 * are never ready routes them nothing but pays their idle draw from their start; under a load step
 * it starts replicas and drains them after, never below min, and cuts the idle draw of a fleet all
 * up. */
START_TEST(autoscale_follows_the_load)
{
    struct sim_config c;
    config(&c, step_trace(0));
    c.gen_len = 256;
    struct fleet_result one, lazy, slow, all, auto4;
    struct sim_config cfg[4] = {c, c, c, c};
    struct fleet_opts o = {.router = router_find("least-outstanding")};
    struct ts_err err;
    ck_assert_int_eq(fleet_run(&c, cfg, 1, &o, &one, &err), 0);
    ck_assert_int_eq(fleet_run(&c, cfg, 4, &o, &all, &err), 0);
    ck_assert_int_eq(fleet_scale_parse("min=1,up=1000000", &o.scale, &err), 0);
    ck_assert_int_eq(fleet_run(&c, cfg, 4, &o, &lazy, &err), 0);
    ck_assert_int_eq(lazy.started, 0);
    ck_assert_int_eq(lazy.routed[0], one.routed[0]);
    ck_assert_int_eq(lazy.fleet.makespan_ns, one.fleet.makespan_ns);
    ck_assert_double_eq(lazy.fleet.lat_p99_s, one.fleet.lat_p99_s);
    ck_assert_double_eq_tol(lazy.fleet.energy_j, one.fleet.energy_j, 1e-9 * one.fleet.energy_j);
    ck_assert_int_eq(fleet_scale_parse("min=1,up=4,down=1,delay=100000", &o.scale, &err), 0);
    ck_assert_int_eq(fleet_run(&c, cfg, 4, &o, &slow, &err), 0);
    ck_assert_int_eq(slow.started, 1); /* one starting at a time, never ready */
    ck_assert_int_eq(slow.routed[1] + slow.routed[2] + slow.routed[3], 0);
    ck_assert(slow.active_s[1] > 0 && slow.active_s[2] == 0);
    ck_assert(slow.fleet.energy_j > one.fleet.energy_j + slow.replica[1].idle_w * slow.active_s[1] * 0.99);
    ck_assert_int_eq(fleet_scale_parse("min=1,up=6,down=2,every=10,delay=30,cooldown=60", &o.scale, &err), 0);
    ck_assert_int_eq(fleet_run(&c, cfg, 4, &o, &auto4, &err), 0);
    ck_assert(auto4.started >= 2 && auto4.stopped >= 2);
    int hi = 0;
    for (int64_t k = 0; k < auto4.nscale; k++) {
        ck_assert(auto4.scale[k].up >= 1 && auto4.scale[k].up + auto4.scale[k].starting <= 4);
        hi = TS_MAX(hi, auto4.scale[k].up);
        if (auto4.scale[k].t_s < 300) /* the first part: one replica keeps up */
            ck_assert_int_eq(auto4.scale[k].up + auto4.scale[k].starting, 1);
    }
    ck_assert(hi >= 3);
    ck_assert_int_eq(auto4.scale[auto4.nscale - 1].up, 1); /* back to min by the end */
    ck_assert_int_eq(auto4.fleet.num_finished, all.fleet.num_finished);
    /* the idle draw, mostly: the replicas stopped draw none */
    const double idle_auto = auto4.fleet.energy_j - auto4.fleet.busy_energy_j,
                 idle_all = all.fleet.energy_j - all.fleet.busy_energy_j;
    ck_assert_msg(idle_auto < 0.6 * idle_all, "idle energy %.0f J autoscaled against %.0f J all up", idle_auto, idle_all);
    ck_assert(auto4.fleet.energy_j < all.fleet.energy_j);
    fleet_result_free(&one), fleet_result_free(&lazy), fleet_result_free(&slow), fleet_result_free(&all);
    fleet_result_free(&auto4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fleet");
    ck_loop_case(s, one_replica_is_the_instance, 0, 2, 120);
    ck_case(s, overload_judged_as_the_instance, 120);
    ck_case(s, round_robin_percentiles_exact, 120);
    ck_case(s, routers_place_by_load, 120);
    ck_case(s, fleet_accuracy_weighted_by_tokens, 120);
    ck_case(s, router_picks_by_the_view, 120);
    ck_case(s, round_robin_takes_the_open_in_turn, 120);
    ck_case(s, load_routers_pick_the_naive_argmin, 120);
    ck_case(s, affinity_picks_by_hand, 120);
    ck_case(s, autoscale_spec, 120);
    ck_case(s, autoscale_follows_the_load, 120);
    ck_case(s, admission_refuses_when_full, 120);
    ck_case(s, disagg_moves_keep_each_request, 120);
    ck_case(s, disagg_link_prices_each_move, 120);
    ck_case(s, disagg_moves_under_tensor_parallelism, 120);
    ck_case(s, admission_at_its_bound_by_hand, 120);
    ck_case(s, autoscale_bounds_by_hand, 120);
    ck_case(s, disagg_live_moves_carry_the_kv, 120);
    ck_case(s, disagg_spec, 120);
    ck_case(s, load_control_spec, 120);
    ck_case(s, load_control_follows_the_load, 120);
    ck_case(s, load_control_along_a_sweep, 120);
    ck_case(s, readings_bounded_by_the_changes, 120);
    ck_case(s, fleet_stored_in_sqlite, 120);
    return run_suite("fleet", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
