/* check_mem.c: the activation peak model, and the search for the longest length that fits. */
#include <stdlib.h>

#include "mem.h"
#include "test_util.h"

static const struct act_knobs MONO = {.ffn_chunks = 1};

START_TEST(anchor_monolithic_logits)
{
    /* The PyTorch anchor (shared/anchors) measured 1.992 GiB above the weights for 16 x 512
     * tokens with bf16 logits for every token and no softmax copy: the model must agree to 3%. */
    const struct model_cfg *m = model_find("llada-8b");
    double gib = mem_act_peak(m, 8192, 8192, &MONO) / TS_GIB;
    ck_assert_msg(gib > 1.992 * 0.97 && gib < 1.992 * 1.03, "%.3f GiB", gib);
    /* 1 x 2048 tokens, logits for all: 0.498 GiB measured */
    gib = mem_act_peak(m, 2048, 2048, &MONO) / TS_GIB;
    ck_assert_msg(gib > 0.498 * 0.97 && gib < 0.498 * 1.03, "%.3f GiB", gib);
}
END_TEST

START_TEST(chunking_bounds_the_logits)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct act_knobs chunked = {.logit_chunk_rows = 2048, .ffn_chunks = 1, .softmax_copy_bytes = 4};
    struct act_knobs mono = {.ffn_chunks = 1, .softmax_copy_bytes = 4};
    ck_assert_int_eq(mem_logits_bytes(m, 100000, &chunked), 2048LL * m->vocab * 6);
    ck_assert_int_eq(mem_logits_bytes(m, 1000, &chunked), 1000LL * m->vocab * 6);
    ck_assert_int_eq(mem_logits_bytes(m, 100000, &mono), 100000LL * m->vocab * 6);
    int64_t a = mem_act_peak(m, 16384, 16384, &chunked), b = mem_act_peak(m, 16384, 16384, &mono);
    ck_assert(a < b / 5);
    /* the fp32 copy adds 4 bytes per logit */
    struct act_knobs nocopy = {.ffn_chunks = 1};
    ck_assert(mem_act_peak(m, 4096, 4096, &mono) > mem_act_peak(m, 4096, 4096, &nocopy));
}
END_TEST

START_TEST(monotone_and_ffn_chunks)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct act_knobs k = {.logit_chunk_rows = 2048, .ffn_chunks = 1};
    int64_t prev = 0;
    for (int64_t T = 1; T < 40000; T = T * 3 / 2 + 1) {
        int64_t v = mem_act_peak(m, T, 0, &k);
        ck_assert_int_ge(v, prev);
        prev = v;
    }
    ck_assert_int_eq(mem_act_peak(m, 0, 0, &k), 0);
    struct act_knobs f4 = {.logit_chunk_rows = 2048, .ffn_chunks = 4};
    ck_assert(mem_act_peak(m, 16384, 0, &f4) < mem_act_peak(m, 16384, 0, &k));
    /* MoE: the router's fp32 logits and routed copies count */
    const struct model_cfg *moe = model_find("llada2.0-mini");
    ck_assert(mem_act_peak(moe, 4096, 0, &k) > 4096LL * moe->hidden * 2 * 3);
}
END_TEST

START_TEST(step_uses_its_knobs)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment s = {.q = 4096, .logit_rows = 4096, .phase = PHASE_FULL};
    step_desc_add(&sd, &s);
    int64_t mono = mem_act_peak_step(m, &sd, 4, false, 0);
    sd.logit_chunk_rows = 512;
    int64_t chunked = mem_act_peak_step(m, &sd, 4, false, 0);
    ck_assert(chunked < mono);
    step_desc_free(&sd);
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

int main(void)
{
    Suite *s = suite_create("mem");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, anchor_monolithic_logits);
    tcase_add_test(tc, chunking_bounds_the_logits);
    tcase_add_test(tc, monotone_and_ffn_chunks);
    tcase_add_test(tc, step_uses_its_knobs);
    tcase_add_test(tc, search_largest_finds_the_boundary);
    suite_add_tcase(s, tc);
    return run_suite("mem", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
