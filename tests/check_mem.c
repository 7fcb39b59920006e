/* check_mem.c: a step's activation memory as the planner lays it out (act_cache.h), the chunk
 * search over it, and the search for the longest length that fits. */
#include <stdlib.h>

#include "act_cache.h"
#include "sampler_mem.h"
#include "test_util.h"

/* first-fit's plan of T tokens with R logit rows */
static int64_t planned(const struct model_cfg *m, struct og_shape s)
{
    int64_t bytes = -1;
    ck_assert_int_eq(act_planned_bytes(m, planner_find("first-fit"), &s, &bytes, NULL), 0);
    return bytes;
}

static struct og_shape mono(int64_t T, int64_t R) { return (struct og_shape){.T = T, .R = R, .ffn_chunks = 1}; }

START_TEST(anchor_monolithic_logits)
{
    /* The PyTorch anchor (shared/anchors) measured 1.992 GiB above the weights for 16 x 512
     * tokens with bf16 logits for every token and no softmax copy: the plan must agree to 3%. */
    const struct model_cfg *m = model_find("llada-8b");
    double gib = planned(m, mono(8192, 8192)) / TS_GIB;
    ck_assert_msg(gib > 1.992 * 0.97 && gib < 1.992 * 1.03, "%.3f GiB", gib);
    /* 1 x 2048 tokens, logits for all: 0.498 GiB measured */
    gib = planned(m, mono(2048, 2048)) / TS_GIB;
    ck_assert_msg(gib > 0.498 * 0.97 && gib < 0.498 * 1.03, "%.3f GiB", gib);
}
END_TEST

START_TEST(chunking_bounds_the_logits)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct og_shape chunked = {.T = 16384, .R = 16384, .logit_chunk_rows = 2048, .ffn_chunks = 1,
                               .softmax_copy_bytes = 4};
    struct og_shape whole = chunked;
    whole.logit_chunk_rows = 0;
    const int64_t a = planned(m, chunked), b = planned(m, whole);
    ck_assert(a < b / 5);
    /* all 16384 rows of logits and their fp32 copy (6 bytes a logit) are in the monolithic plan */
    ck_assert_int_ge(b, 16384LL * m->vocab * 6);
    /* the fp32 copy adds 4 bytes per logit */
    struct og_shape nocopy = mono(4096, 4096), copy = nocopy;
    copy.softmax_copy_bytes = 4;
    ck_assert_int_ge(planned(m, copy) - planned(m, nocopy), 4096LL * m->vocab * 4);
}
END_TEST

START_TEST(monotone_and_ffn_chunks)
{
    const struct model_cfg *m = model_find("llada-8b");
    int64_t prev = 0;
    for (int64_t T = 1; T < 40000; T = T * 3 / 2 + 1) {
        const int64_t v = planned(m, mono(T, 0));
        ck_assert_int_ge(v, prev);
        prev = v;
    }
    ck_assert_int_eq(planned(m, mono(0, 0)), 0);
    struct og_shape f4 = mono(16384, 0);
    f4.ffn_chunks = 4;
    ck_assert(planned(m, f4) < planned(m, mono(16384, 0)));
    /* MoE: the router's fp32 logits and routed copies count */
    const struct model_cfg *moe = model_find("llada2.0-mini");
    ck_assert(planned(moe, mono(4096, 0)) > 4096LL * moe->hidden * 2 * 3);
}
END_TEST

/* The cache plans each shape once and answers as a fresh plan does; a plan is never below the
 * graph's theoretical peak */
START_TEST(the_cache_answers_as_the_planner_does)
{
    const struct model_cfg *m = model_find("dream-7b");
    const char *names[] = {"first-fit", "greedy-size", "caching"};
    for (int k = 0; k < 3; k++) {
        const struct planner_ops *p = planner_find(names[k]);
        struct act_cache *c = act_cache_create(m, p, NULL);
        srand(5);
        for (int i = 0; i < 60; i++) {
            struct og_shape s = {.T = 1 + rand() % 3000, .ffn_chunks = 1 + rand() % 3, .tp = rand() % 2 ? 1 : 2};
            s.R = rand() % (s.T + 1);
            struct act_plan a, again;
            ck_assert_int_eq(act_cache_get(c, &s, &a, NULL), 0);
            ck_assert_int_eq(act_cache_get(c, &s, &again, NULL), 0);
            ck_assert_int_eq(a.bytes, again.bytes);
            ck_assert_int_ge(a.bytes, a.theoretical);
            struct opgraph g = {0};
            opgraph_build(&g, m, &s);
            struct plan pl;
            struct planner_opts po;
            planner_opts_defaults(&po);
            ck_assert_int_eq(planner_run(p, &g, &po, &pl, NULL), 0);
            ck_assert_int_eq(a.bytes, pl.arena_bytes);
            ck_assert_int_eq(a.theoretical, opgraph_peak(&g));
            plan_free(&pl);
            opgraph_free(&g);
        }
        ck_assert_int_le(act_cache_planned(c), 60);
        act_cache_destroy(c);
    }
}
END_TEST

/* A budget of 0 chunks as far as chunking shrinks the step: no further count of either kind lowers
 * the plan below it by much, and it is far below the unchunked plan */
START_TEST(chunking_to_nothing_goes_as_far_as_it_shrinks)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct act_cache *c = act_cache_create(m, planner_find("first-fit"), NULL);
    struct og_shape s = {.T = 8192, .R = 8192, .ffn_chunks = 1, .softmax_copy_bytes = 4};
    struct chunk_choice ch;
    ck_assert_int_eq(act_cache_chunk(CHUNK_LAZY, c, &s, 0, &ch, NULL), 0);
    ck_assert(!ch.fits);
    ck_assert_int_gt(ch.logit_chunks, 1);
    struct act_plan whole;
    ck_assert_int_eq(act_cache_get(c, &s, &whole, NULL), 0);
    ck_assert_int_lt(ch.at.bytes, whole.bytes / 3);
    ck_assert_int_le(ch.at.logits, ch.at.fixed); /* the logits no longer outweigh the fixed part */
    ck_assert_int_le(ch.at.ffn, ch.at.fixed);
    struct og_shape more = ch.shape;
    more.logit_chunk_rows = (int32_t)TS_MAX(1, more.logit_chunk_rows / 2);
    more.ffn_chunks *= 2;
    struct act_plan finer;
    ck_assert_int_eq(act_cache_get(c, &more, &finer, NULL), 0);
    ck_assert_int_ge(finer.bytes, ch.at.fixed);
    /* a budget the unchunked shape meets keeps it as it is */
    ck_assert_int_eq(act_cache_chunk(CHUNK_LAZY, c, &s, whole.bytes, &ch, NULL), 0);
    ck_assert(ch.fits && ch.logit_chunks == 1 && ch.ffn_chunks == 1 && ch.plans_tried == 1);
    act_cache_destroy(c);
}
END_TEST

/* fits up to `bound`; counts the questions and the largest n asked; -1 from `fail_at` on */
struct search_probe {
    int64_t bound, fail_at, asked_max;
    int calls;
};

static int below_bound(void *ctx, int64_t n)
{
    struct search_probe *p = ctx;
    p->calls++;
    p->asked_max = n > p->asked_max ? n : p->asked_max;
    if (p->fail_at > 0 && n >= p->fail_at)
        return -1;
    return n <= p->bound;
}

START_TEST(search_largest_finds_the_boundary)
{
    const int64_t bounds[] = {0, 1, 2, 3, 7, 8, 9, 100, 1000, 4095, 4096};
    const int64_t caps[] = {1, 8, 1000, 5000};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
        for (size_t j = 0; j < sizeof caps / sizeof caps[0]; j++) {
            struct search_probe p = {bounds[i], 0, 0, 0};
            int64_t want = bounds[i] < caps[j] ? bounds[i] : caps[j];
            ck_assert_int_eq(ts_search_largest(below_bound, &p, caps[j]), want);
            ck_assert_int_le(p.asked_max, caps[j]); /* nothing past the cap is asked */
            ck_assert_int_le(p.calls, 2 * 14);      /* doubling then bisection: logarithmic */
        }
    struct search_probe p = {1000, 300, 0, 0}; /* an error stops the search */
    ck_assert_int_eq(ts_search_largest(below_bound, &p, 5000), -1);
}
END_TEST

/* vLLM's DiffusionGemma sampler by hand: a 64 GiB device at utilization 0.75 leaves 16 GiB outside the
 * budget, 15 free beside 1 held, and 2 GiB of the profile run's activations are free in the cache: 17
 * GiB to take. A canvas of 256 rows over 262,144 logits is 0.25 GiB in fp32 (0.375 with its bf16). */
START_TEST(dgemma_sampler_by_hand)
{
    const struct sampler_setup whole = {64 * (int64_t)TS_GIB, 0.75, (int64_t)TS_GIB, 2 * (int64_t)TS_GIB, 256, 262144,
                                        3, false};
    struct sampler_setup tiled = whole;
    tiled.tiled = true;
    struct sampler_step st;
    sampler_mem_at(&whole, 8, &st); /* 2 GiB of logits and 3 copies of them: 8 */
    ck_assert_int_eq(st.group, 8);
    ck_assert_int_eq(st.logit_bytes, 2 * (int64_t)TS_GIB);
    ck_assert_int_eq(st.transient_bytes, 6 * (int64_t)TS_GIB);
    ck_assert_int_eq(st.need_bytes, 8 * (int64_t)TS_GIB);
    ck_assert_int_eq(st.avail_bytes, 17 * (int64_t)TS_GIB);
    ck_assert(!st.oom);
    sampler_mem_at(&whole, 32, &st); /* 8 + 24 > 17 */
    ck_assert_int_eq(st.need_bytes, 32 * (int64_t)TS_GIB);
    ck_assert(st.oom);
    /* tiled: 8 GiB of logits take the 2 cached and 6 of the 15 free, 9 left; half of it over 2.5 GiB a
     * canvas (10 copies) is a group of 1; the softcap's 12 GiB is the peak */
    sampler_mem_at(&tiled, 32, &st);
    ck_assert_int_eq(st.free_bytes, 9 * (int64_t)TS_GIB);
    ck_assert_int_eq(st.group, 1);
    ck_assert_int_eq(st.transient_bytes, 3 * (int64_t)TS_GIB / 4);
    ck_assert_int_eq(st.need_bytes, 12 * (int64_t)TS_GIB);
    ck_assert(!st.oom);
    sampler_mem_at(&tiled, 4, &st); /* 1 GiB of logits fits the cache: 15 free, a group of 3 of the 4 */
    ck_assert_int_eq(st.free_bytes, 15 * (int64_t)TS_GIB);
    ck_assert_int_eq(st.group, 3);
    sampler_mem_at(&tiled, 64, &st); /* 24 GiB at the softcap */
    ck_assert_int_eq(st.need_bytes, 24 * (int64_t)TS_GIB);
    ck_assert(st.oom);
    /* the most: whole, n GiB at n canvases, 17; tiled, the softcap's 0.375 n within 17, 45 */
    ck_assert_int_eq(sampler_mem_max(&whole, 64), 17);
    ck_assert_int_eq(sampler_mem_max(&tiled, 64), 45);
    ck_assert_int_eq(sampler_mem_max(&tiled, 8), 8);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mem");
    ck_case(s, anchor_monolithic_logits, 0);
    ck_case(s, chunking_bounds_the_logits, 0);
    ck_case(s, monotone_and_ffn_chunks, 0);
    ck_case(s, the_cache_answers_as_the_planner_does, 0);
    ck_case(s, chunking_to_nothing_goes_as_far_as_it_shrinks, 0);
    ck_case(s, search_largest_finds_the_boundary, 0);
    ck_case(s, dgemma_sampler_by_hand, 0);
    return run_suite("mem", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
