/*
 * check_eng_host.c: the host's scoring of offloaded keys (HERALD's, eng_host.c; host code, no GPU):
 * the scores and the kept tokens against a naive double-precision ranking, over 1 to 16 threads and
 * rows whose length is not a multiple of the inner loop's width.
 */
#include <math.h>
#include <stdlib.h>

#include "eng_host.h"
#include "eng_weights.h"
#include "test_util.h"

/* Tokens of a key row of `row` values (stride apart), scored in double and ranked by selection. */
static void check_case(int64_t n, int64_t row, int64_t stride, int32_t k, int threads, unsigned seed)
{
    srand(seed);
    uint16_t *keys = xmalloc(sizeof *keys * (size_t)(n * stride));
    float *q = xmalloc(sizeof *q * (size_t)row), *scores = xmalloc(sizeof *scores * (size_t)n);
    double *want = xmalloc(sizeof *want * (size_t)n);
    int32_t *top = xmalloc(sizeof *top * (size_t)(k ? k : 1));
    for (int64_t i = 0; i < n * stride; i++)
        keys[i] = eng_f2bf((float)rand() / (float)RAND_MAX - 0.5f);
    for (int64_t i = 0; i < row; i++)
        q[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (int64_t t = 0; t < n; t++) {
        want[t] = 0;
        for (int64_t i = 0; i < row; i++)
            want[t] += eng_bf2f(keys[t * stride + i]) * q[i];
    }
    const int32_t kept = eng_host_select(keys, n, row, stride, q, k, threads, scores, top);
    ck_assert_int_eq(kept, k < n ? k : (int32_t)n);
    for (int64_t t = 0; t < n; t++)
        ck_assert_msg(fabs(scores[t] - want[t]) <= 1e-4 * (1 + fabs(want[t])), "token %lld: %g against %g",
                      (long long)t, scores[t], want[t]);
    char *in = xcalloc((size_t)n, 1);
    for (int32_t i = 0; i < kept; i++) {
        ck_assert(top[i] >= 0 && top[i] < n && !in[top[i]]);
        in[top[i]] = 1;
        if (i > 0)
            ck_assert(want[top[i - 1]] >= want[top[i]] - 1e-4);
    }
    for (int64_t t = 0; t < n && kept > 0; t++) /* no token left out scores above the last kept */
        if (!in[t])
            ck_assert(want[t] <= want[top[kept - 1]] + 1e-4);
    free(keys), free(q), free(scores), free(want), free(top), free(in);
}

START_TEST(kept_tokens_are_the_highest_scored)
{
    check_case(500, 40, 40, 50, 1, 1);
    check_case(500, 37, 80, 50, 4, 2);  /* the key the first half of a K and V row */
    check_case(1000, 129, 129, 100, 16, 3);
    check_case(7, 16, 16, 20, 16, 4);   /* fewer tokens than threads, and than kept */
    check_case(0, 8, 8, 5, 2, 5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_host");
    ck_case(s, kept_tokens_are_the_highest_scored, 0);
    return run_suite("eng_host", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
