/* eng_host.c: the host's scoring of offloaded keys (eng_host.h). */
#define _POSIX_C_SOURCE 200809L
#include "eng_host.h"

#include <gsl/gsl_sort_float.h>
#include <pthread.h>
#include <stdlib.h>

#include "eng_weights.h"
#include "util.h"

struct score_part {
    const uint16_t *keys;
    int64_t t0, t1, row, stride;
    const float *query;
    float *scores;
};

static void *score_tokens(void *arg)
{
    const struct score_part *p = arg;
    for (int64_t t = p->t0; t < p->t1; t++) {
        const uint16_t *k = p->keys + t * p->stride;
        float acc[8] = {0};
        int64_t i = 0;
        for (; i + 8 <= p->row; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += eng_bf2f(k[i + j]) * p->query[i + j];
        for (; i < p->row; i++)
            acc[0] += eng_bf2f(k[i]) * p->query[i];
        p->scores[t] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    return NULL;
}

int32_t eng_host_select(const uint16_t *keys, int64_t n, int64_t row, int64_t stride, const float *query, int32_t k,
                        int threads, float *scores, int32_t *top)
{
    TS_ASSERT(n >= 0 && row > 0 && stride >= row && threads >= 1 && threads <= 64 && k >= 0);
    struct score_part part[64];
    pthread_t th[64];
    int started = 0, failed = 0;
    for (int i = 0; i < threads; i++) {
        part[i] = (struct score_part){keys, n * i / threads, n * (i + 1) / threads, row, stride, query, scores};
        if (i > 0 && pthread_create(&th[i], NULL, score_tokens, &part[i]) != 0) {
            failed = 1;
            break;
        }
        started += i > 0;
    }
    if (!failed)
        score_tokens(&part[0]);
    for (int i = 1; i <= started; i++)
        pthread_join(th[i], NULL);
    if (failed)
        return -1;
    /* every token ranked, O(n log n) (the largest-k selection's insertion is O(n k): at a tenth of
     * thousands of tokens, longer than the scoring) */
    const int32_t kept = (int32_t)TS_MIN((int64_t)k, n);
    size_t *idx = xmalloc(sizeof *idx * (size_t)(n ? n : 1));
    gsl_sort_float_index(idx, scores, 1, (size_t)n);
    for (int32_t i = 0; i < kept; i++)
        top[i] = (int32_t)idx[n - 1 - i];
    free(idx);
    return kept;
}
