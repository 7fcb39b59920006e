/* check_opgraph.c: the op graph template: lifetimes, and its theoretical peak against the
 * simulator's closed-form activation estimate (mem.c) over random shapes. */
#include <stdlib.h>

#include "mem.h"
#include "opgraph.h"
#include "test_util.h"

START_TEST(peak_equals_closed_form)
{
    const char *models[] = {"llada-8b", "dream-7b", "sdar-8b"};
    srand(11);
    struct opgraph g = {0};
    for (int k = 0; k < 300; k++) {
        const struct model_cfg *m = model_find(models[k % 3]);
        struct og_shape s = {.T = 1 + rand() % 20000, .ffn_chunks = 1 + rand() % 8,
                             .softmax_copy_bytes = (rand() % 3) * 4};
        s.R = rand() % 2 ? s.T : rand() % (s.T + 1);
        s.logit_chunk_rows = rand() % 2 ? 0 : 1 + rand() % 4096;
        s.fused_ffn = rand() % 2;
        opgraph_build(&g, m, &s);
        struct act_knobs kn = {s.logit_chunk_rows, s.ffn_chunks, s.softmax_copy_bytes, s.fused_ffn};
        ck_assert_msg(opgraph_peak(&g) == mem_act_peak(m, s.T, s.R, &kn),
                      "%s T=%lld R=%lld chunk=%d ffn=%d%s copy=%d: graph %lld, closed form %lld", m->name,
                      (long long)s.T, (long long)s.R, s.logit_chunk_rows, s.ffn_chunks, s.fused_ffn ? " fused" : "",
                      s.softmax_copy_bytes, (long long)opgraph_peak(&g), (long long)mem_act_peak(m, s.T, s.R, &kn));
        for (int32_t i = 0; i < g.n; i++)
            ck_assert(g.t[i].first >= 0 && g.t[i].first <= g.t[i].last && g.t[i].last < g.num_ops && g.t[i].bytes > 0);
    }
    opgraph_free(&g);
}
END_TEST

START_TEST(chunking_lowers_the_peak_where_it_is)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct opgraph g = {0};
    struct og_shape s = {.T = 16384, .R = 16384, .ffn_chunks = 1, .softmax_copy_bytes = 4};
    opgraph_build(&g, m, &s);
    enum og_kind k;
    opgraph_peak_op(&g, &k);
    ck_assert(k == OG_SOFTMAX || k == OG_LOGITS); /* monolithic logits (and their fp32 copy) dominate */
    int64_t mono = opgraph_peak(&g);
    s.logit_chunk_rows = 1024;
    opgraph_build(&g, m, &s);
    opgraph_peak_op(&g, &k);
    ck_assert(opgraph_peak(&g) < mono / 4);
    ck_assert_int_eq(k, OG_GATE_UP); /* now the FFN is the peak */
    int64_t before = opgraph_peak(&g);
    s.ffn_chunks = 8;
    opgraph_build(&g, m, &s);
    ck_assert(opgraph_peak(&g) < before);
    ck_assert(opgraph_average(&g) > 0 && opgraph_average(&g) <= opgraph_peak(&g));
    opgraph_free(&g);
    opgraph_free(NULL);
}
END_TEST

/* Tensor parallelism: a GPU holds 1/tp of the tensors split over heads, FFN columns (each expert's
 * too) and the vocabulary, and the residual stream, norms, gathers and router logits whole. */
START_TEST(tensor_parallel_shares)
{
    const char *models[] = {"llada-8b", "llada-moe-7b"};
    for (int k = 0; k < 2; k++) {
        const struct model_cfg *m = model_find(models[k]);
        struct og_shape s = {.T = 1000, .R = 300, .logit_chunk_rows = 128, .ffn_chunks = 2, .softmax_copy_bytes = 4};
        struct opgraph one = {0}, two = {0};
        opgraph_build(&one, m, &s);
        s.tp = 2;
        opgraph_build(&two, m, &s);
        ck_assert_int_eq(one.n, two.n);
        ck_assert_int_eq(one.num_ops, two.num_ops);
        for (int32_t i = 0; i < one.n; i++) {
            const enum og_kind kind = (enum og_kind)one.t[i].kind;
            const bool split = kind == OG_QKV || kind == OG_ATTN || kind == OG_GATE_UP || kind == OG_ACT ||
                               kind == OG_LOGITS || kind == OG_SOFTMAX;
            ck_assert_msg(two.t[i].bytes == (split ? one.t[i].bytes / 2 : one.t[i].bytes), "%s tensor %d (%s): %lld of %lld",
                          m->name, i, og_kind_name(kind), (long long)two.t[i].bytes, (long long)one.t[i].bytes);
            ck_assert(two.t[i].first == one.t[i].first && two.t[i].last == one.t[i].last);
        }
        ck_assert(opgraph_peak(&two) < opgraph_peak(&one));
        opgraph_free(&one);
        opgraph_free(&two);
    }
}
END_TEST

START_TEST(fused_ffn_has_no_gate_up)
{
    /* LLaDA-8B, T = 8192 in one FFN chunk, no logits: split, the FFN peaks at x + norm + gate|up +
     * act; fused, at x + norm + act, act living from the gate/up op to down */
    const struct model_cfg *m = model_find("llada-8b");
    struct opgraph g = {0};
    struct og_shape s = {.T = 8192, .ffn_chunks = 1};
    const int64_t row = 8192LL * 2;
    opgraph_build(&g, m, &s);
    ck_assert_int_eq(opgraph_peak(&g), row * (2 * 4096 + 3 * m->ffn));
    const int32_t split_n = g.n;
    s.fused_ffn = true;
    opgraph_build(&g, m, &s);
    ck_assert_int_eq(opgraph_peak(&g), row * (2 * 4096 + m->ffn)); /* x + norm + act */
    ck_assert_int_eq(g.n, split_n - m->num_layers);
    for (int32_t i = 0; i < g.n; i++) {
        ck_assert_int_ne(g.t[i].kind, OG_GATE_UP);
        if (g.t[i].kind == OG_ACT)
            ck_assert_int_eq(g.t[i].last - g.t[i].first, 2);
    }
    /* an MoE model's routed experts stay split */
    const struct model_cfg *moe = model_find("llada-moe-7b");
    opgraph_build(&g, moe, &s);
    int gate_up = 0;
    for (int32_t i = 0; i < g.n; i++)
        gate_up += g.t[i].kind == OG_GATE_UP;
    ck_assert_int_gt(gate_up, 0);
    opgraph_free(&g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("opgraph");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, peak_equals_closed_form);
    tcase_add_test(tc, chunking_lowers_the_peak_where_it_is);
    tcase_add_test(tc, fused_ffn_has_no_gate_up);
    tcase_add_test(tc, tensor_parallel_shares);
    suite_add_tcase(s, tc);
    return run_suite("opgraph", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
