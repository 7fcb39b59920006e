/*
 * check_prompt_cache.c: prompt blocks kept across requests (prompt_cache.h, --prompt-cache) and the
 * affinity router that routes by them. The LRU set against a naive one that stamps every use; a run's
 * prefills against an oracle that finds each request's longest prompt prefix among the requests before
 * it (the arrivals far enough apart that each is done before the next); the cache giving its pages back
 * to the requests' reservations; the affinity router keeping each conversation on one replica, its hits
 * and its split by hand against round robin's; and the refusals.
 */
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "prompt_cache.h"
#include "sim_internal.h"
#include "test_util.h"

/* --- the set against a naive LRU ------------------------------------------------------------ */

struct naive {
    int32_t id[64];
    int64_t used[64];
    int n, cap;
    int64_t tick, evicted;
};

static int naive_find(const struct naive *z, int32_t id)
{
    for (int k = 0; k < z->n; k++)
        if (z->id[k] == id)
            return k;
    return -1;
}

static void naive_put(struct naive *z, const int32_t *id, int n)
{
    for (int k = n - 1; k >= 0; k--) {
        int at = naive_find(z, id[k]);
        if (at < 0) {
            if (z->n == z->cap) { /* the least recently stamped goes */
                int old = 0;
                for (int j = 1; j < z->n; j++)
                    old = z->used[j] < z->used[old] ? j : old;
                z->id[old] = z->id[--z->n], z->used[old] = z->used[z->n];
                z->evicted++;
            }
            at = z->n++;
            z->id[at] = id[k];
        }
        z->used[at] = ++z->tick;
    }
}

START_TEST(lru_matches_a_naive_one)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    for (int trial = 0; trial < 20; trial++) {
        gsl_rng_set(g, (unsigned long)trial + 1);
        const int cap = 1 + (int)gsl_rng_uniform_int(g, 12);
        struct prompt_cache *c = prompt_cache_new(cap);
        struct naive z = {.cap = cap};
        for (int op = 0; op < 400; op++) {
            int32_t id[6];
            const int n = 1 + (int)gsl_rng_uniform_int(g, 6);
            for (int k = 0; k < n; k++) /* ids clash in the table (40 of them), and chains share their first */
                id[k] = k == 0 ? (int32_t)gsl_rng_uniform_int(g, 3) : (int32_t)gsl_rng_uniform_int(g, 40) * 7919;
            int want = 0;
            while (want < n && naive_find(&z, id[want]) >= 0)
                want++;
            ck_assert_int_eq(prompt_cache_match(c, id, n), want);
            if (gsl_rng_uniform(g) < 0.6)
                prompt_cache_put(c, id, n), naive_put(&z, id, n);
            if (gsl_rng_uniform(g) < 0.05) { /* trimmed: the least recently used go first */
                const int keep = (int)gsl_rng_uniform_int(g, (unsigned long)cap + 1);
                prompt_cache_trim(c, keep);
                while (z.n > keep) {
                    int old = 0;
                    for (int j = 1; j < z.n; j++)
                        old = z.used[j] < z.used[old] ? j : old;
                    z.id[old] = z.id[--z.n], z.used[old] = z.used[z.n];
                    z.evicted++;
                }
            }
            ck_assert_int_eq(prompt_cache_size(c), z.n);
            ck_assert_int_eq(prompt_cache_evicted(c), z.evicted);
        }
        prompt_cache_free(c);
    }
    gsl_rng_free(g);
    /* a prompt's first block is its most recently used: its suffix goes first */
    struct prompt_cache *c = prompt_cache_new(3);
    prompt_cache_put(c, (const int32_t[]){1, 2, 3}, 3);
    prompt_cache_put(c, (const int32_t[]){1, 9}, 2);
    ck_assert_int_eq(prompt_cache_match(c, (const int32_t[]){1, 2, 3}, 3), 2);
    ck_assert_int_eq(prompt_cache_match(c, (const int32_t[]){1, 9}, 2), 2);
    prompt_cache_free(c);
}
END_TEST

/* --- a run's prefills ----------------------------------------------------------------------- */

enum { BLK = TRACE_HASH_BLOCK };

/* Conversations: request i of n is turn i / sessions of session i % sessions (or with `pairs`, turns
 * come two at a time: A A B B A A ...), its prompt the turn before's and one block more: turn t holds
 * t + 2 whole blocks and a partial one (its own id); arrivals gap_s apart. The last two requests (with
 * `same`) are one prompt of exactly 3 whole blocks, twice. */
static const char *sessions_trace(int slot, int n, int sessions, bool pairs, bool same, double gap_s)
{
    char *text = xmalloc(256 * (size_t)(n + 2) + 64 * (size_t)n * (size_t)n);
    size_t len = 0;
    for (int i = 0; i < n + (same ? 2 : 0); i++) {
        const int sess = pairs ? (i / 2) % sessions : i % sessions, turn = pairs ? i / (2 * sessions) * 2 + i % 2
                                                                                : i / sessions;
        const bool dup = i >= n;
        const int whole = dup ? 3 : turn + 2, P = whole * BLK + (dup ? 0 : 100);
        len += (size_t)sprintf(text + len, "{\"timestamp\": %.0f, \"input_length\": %d, \"output_length\": 32, "
                                           "\"hash_ids\": [", i * gap_s * 1e3, P);
        for (int k = 0; k < whole; k++)
            len += (size_t)sprintf(text + len, "%s%d", k ? ", " : "", dup ? 9000 + k : sess * 1000 + k);
        len += dup ? (size_t)sprintf(text + len, "]}\n") : (size_t)sprintf(text + len, ", %d]}\n", 5000 + i);
    }
    const char *path = tmp_file(slot, ".jsonl", text);
    free(text);
    return path;
}

static void block_config(struct sim_config *c, const char *trace, int64_t prompt_cache)
{
    test_config(c);
    snprintf(c->trace, sizeof c->trace, "%s", trace);
    snprintf(c->model, sizeof c->model, "sdar-8b");
    snprintf(c->policy, sizeof c->policy, "block");
    c->requests = 0, c->rps = 0, c->gen_len = 32, c->block = 32;
    c->prompt_cache = prompt_cache;
}

/* The oracle: the whole blocks request i shares at its start with any request before it. */
static int64_t oracle_hit(const struct trace *t, int64_t i)
{
    const int32_t whole_i = TS_MIN(t->reqs[i].n_hash, t->reqs[i].prompt / BLK);
    int32_t best = 0;
    for (int64_t j = 0; j < i; j++) {
        const int32_t whole_j = TS_MIN(t->reqs[j].n_hash, t->reqs[j].prompt / BLK);
        int32_t k = 0;
        while (k < whole_i && k < whole_j && t->reqs[i].hash[k] == t->reqs[j].hash[k])
            k++;
        best = TS_MAX(best, k);
    }
    return TS_MIN((int64_t)best * BLK, t->reqs[i].prompt - 1);
}

START_TEST(prefills_read_the_cached_prompt)
{
    struct sim_config c;
    block_config(&c, sessions_trace(0, 12, 3, false, true, 100), 1 << 20);
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_int_eq(sim_run(s, &err), 0);
    int64_t want = 0, prompts = 0, seen = 0;
    for (size_t j = 0; j < s->num_segs; j++) {
        const struct segment *g = &s->segs[j];
        if (g->phase != PHASE_PREFILL)
            continue;
        const int64_t hit = oracle_hit(&s->trace, g->req_id);
        const int32_t P = s->trace.reqs[g->req_id].prompt;
        ck_assert_msg(g->kv == hit && g->q == P - hit && g->kv_write == g->q, "request %d: q %d kv %d, want %lld "
                      "over %lld", g->req_id, g->q, g->kv, (long long)(P - hit), (long long)hit);
        want += hit, prompts += P, seen++;
    }
    ck_assert_int_eq(seen, 14);
    ck_assert_int_eq(s->sum.prompt_hit_tokens, want);
    ck_assert_int_eq(s->sum.prompt_tokens, prompts);
    ck_assert_int_eq(oracle_hit(&s->trace, 13), 3 * BLK - 1); /* a prompt all cached: its last token computed */
    ck_assert_int_gt(want, 20 * BLK);
    sim_destroy(s);
}
END_TEST

/* The cache lives in the pool's free pages: a reservation takes its pages back, least recent first. */
START_TEST(cache_gives_pages_to_requests)
{
    struct sim_config c;
    block_config(&c, sessions_trace(0, 4, 1, false, false, 100), 1 << 30);
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    int32_t ids[100];
    for (int k = 0; k < 100; k++)
        ids[k] = 7000 + k;
    prompt_cache_put(s->prompts, ids, 100);
    ck_assert_int_eq(prompt_cache_size(s->prompts), 100);
    const int64_t ppb = sim_kv_pages(s, BLK);
    struct request r = {0};
    ck_assert(sim_kv_reserve(s, &r, (s->mem.kv_pages_total - 10 * ppb) * s->mem.kv_page_tokens));
    ck_assert_int_eq(prompt_cache_size(s->prompts), 10);
    ck_assert_int_eq(prompt_cache_match(s->prompts, ids, 100), 10); /* the prompt's first blocks stay */
    /* activations reserved (from the pool, as the request scheduler reserves them) take room too: 4
     * blocks' worth, then a page more of K/V, leave 5 */
    s->mem.act_reserved += 4 * ppb * s->mem.kv_page_tokens * s->mem.kv_token_bytes;
    struct request r2 = {0};
    ck_assert(sim_kv_reserve(s, &r2, 1));
    ck_assert_int_eq(prompt_cache_size(s->prompts), 5);
    s->mem.kv_pages_used -= sim_kv_pages(s, r2.kv_tokens_held);
    s->mem.kv_pages_used -= sim_kv_pages(s, r.kv_tokens_held);
    sim_destroy(s);
}
END_TEST

START_TEST(refusals_name_the_reason)
{
    struct sim_config c;
    struct ts_err err;
    const char *conv = sessions_trace(0, 4, 1, false, false, 100);
    block_config(&c, conv, 1 << 20);
    snprintf(c.model, sizeof c.model, "llada-8b"); /* bidirectional over the prompt */
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "attends bidirectionally") != NULL, "%s", err.msg);
    block_config(&c, conv, 1 << 20);
    c.block = 48;
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "do not tile") != NULL, "%s", err.msg);
    block_config(&c, conv, 100);
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "less than one prompt block") != NULL, "%s", err.msg);
    block_config(&c, conv, 1 << 20);
    snprintf(c.scheduler, sizeof c.scheduler, "static");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "--scheduler static") != NULL, "%s", err.msg);
    block_config(&c, conv, 1 << 20);
    c.lazy_chunking = true;
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "--lazy-chunking") != NULL, "%s", err.msg);
    block_config(&c, tmp_file(1, ".csv", "arrival_ns,prompt_tokens,output_tokens\n0,600,32\n"), 1 << 20);
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_msg(strstr(err.msg, "gives no prompt block ids") != NULL, "%s", err.msg);
}
END_TEST

/* --- the affinity router -------------------------------------------------------------------- */

static void run_pair(const char *trace, const char *router, int64_t cache0, struct fleet_result *r, int expect)
{
    struct sim_config cfg[2];
    block_config(&cfg[0], trace, 1 << 20);
    cfg[1] = cfg[0];
    cfg[0].prompt_cache = cache0;
    struct fleet_opts o = {0};
    struct ts_err err;
    ck_assert_int_eq(fleet_router_parse(router, &o.router, &o.affinity, &err), 0);
    const int rc = fleet_run(&cfg[0], cfg, 2, &o, r, &err);
    ck_assert_msg(rc == expect, "%s", err.msg);
    if (rc)
        ck_assert_msg(strstr(err.msg, "replica 0 keeps no prompt cache") != NULL, "%s", err.msg);
}

/* Two conversations, their turns two at a time (A A B B A A B B), on two replicas. Round robin splits
 * each conversation across both: hits of 2 and 3 blocks on the third and fourth turns, 10 blocks. The
 * affinity router keeps each on one replica (B goes to the replica holding less): every turn after the
 * first finds its whole last turn, 2 + 3 + 4 blocks a conversation, 18. */
START_TEST(affinity_keeps_a_conversation_together)
{
    const char *trace = sessions_trace(0, 8, 2, true, false, 100);
    struct fleet_result rr, aff;
    run_pair(trace, "round-robin", 1 << 20, &rr, 0);
    run_pair(trace, "affinity", 1 << 20, &aff, 0);
    ck_assert_int_eq(rr.fleet.prompt_hit_tokens, 10 * BLK);
    ck_assert_int_eq(aff.fleet.prompt_hit_tokens, 18 * BLK);
    ck_assert(aff.routed[0] == 4 && aff.routed[1] == 4);
    ck_assert_int_eq(aff.replica[0].prompt_hit_tokens, 9 * BLK);
    ck_assert_msg(aff.fleet.lat_mean_s < rr.fleet.lat_mean_s, "mean latency: affinity %g s, round robin %g s",
                  aff.fleet.lat_mean_s, rr.fleet.lat_mean_s);
    fleet_result_free(&rr), fleet_result_free(&aff);
    struct fleet_result bad;
    run_pair(trace, "affinity", 0, &bad, FLEET_REFUSED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prompt_cache");
    ck_case(s, lru_matches_a_naive_one, 60);
    ck_case(s, prefills_read_the_cached_prompt, 60);
    ck_case(s, cache_gives_pages_to_requests, 60);
    ck_case(s, refusals_name_the_reason, 60);
    ck_case(s, affinity_keeps_a_conversation_together, 60);
    return run_suite("prompt_cache", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
