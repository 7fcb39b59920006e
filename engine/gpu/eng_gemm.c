/* eng_gemm.c: cuBLASLt GEMMs with per-shape algorithm selection by timing. */
#define _POSIX_C_SOURCE 200809L
#include "eng_gemm.h"

#include "eng_algos.h"
#include "eng_cuda_check.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALGOS 128 /* the most candidates --gemm-algos may ask for */
#define DEF_ALGOS 16
#define TUNE_REPS 5
/* A later candidate must beat the best so far by this fraction: candidates within the timing noise
 * keep the heuristic's order, so the choice does not flip from one process to the next. */
#define TUNE_MARGIN 0.01f

/* A shape's flags (its key's beta field: a cache written before the second kind reads the same) */
enum { GEMM_BETA1 = 1, GEMM_KN = 2 /* W [K, N] (eng_gemm_run_kn) */ };

static int shape_flags(float beta, bool kn) { return (beta != 0.0f ? GEMM_BETA1 : 0) | (kn ? GEMM_KN : 0); }

struct shape {
    int M, N, K, beta1; /* beta1: GEMM_* flags */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    bool tuned;  /* timed here, or taken from the cache */
    bool cached; /* taken from the cache */
    float best_ms, first_ms;
};

struct eng_gemm {
    cublasLtHandle_t lt;
    void *ws;
    size_t ws_bytes;
    struct shape *shapes;
    size_t n, cap;
    cudaEvent_t e0, e1;
    struct algo_cache cache;
    bool have_cache;
    int algos; /* cuBLASLt's candidates a new shape's tuning times */
};

int eng_gemm_create(struct eng_gemm **out, void *workspace, size_t ws_bytes, int algos, struct ts_err *err)
{
    struct eng_gemm *g = xcalloc(1, sizeof *g);
    g->algos = algos >= 1 && algos <= MAX_ALGOS ? algos : DEF_ALGOS;
    g->ws = workspace;
    g->ws_bytes = ws_bytes;
    if (cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS || cudaEventCreate(&g->e0) != cudaSuccess ||
        cudaEventCreate(&g->e1) != cudaSuccess) {
        eng_gemm_destroy(g);
        return ts_fail(err, "engine: cuBLASLt or event creation failed");
    }
    *out = g;
    return 0;
}

void eng_gemm_destroy(struct eng_gemm *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++) {
        cublasLtMatmulDescDestroy(g->shapes[i].op);
        cublasLtMatrixLayoutDestroy(g->shapes[i].a);
        cublasLtMatrixLayoutDestroy(g->shapes[i].b);
        cublasLtMatrixLayoutDestroy(g->shapes[i].c);
    }
    free(g->shapes);
    algo_cache_close(&g->cache);
    if (g->lt)
        cublasLtDestroy(g->lt);
    if (g->e0)
        cudaEventDestroy(g->e0);
    if (g->e1)
        cudaEventDestroy(g->e1);
    free(g);
}

/* Column-major view: D[N, M] = op(A) B with A = W viewed [K, N] and transposed (GEMM_KN: W viewed
 * [N, K], as it is), B = X viewed [K, M]. */
static int describe(struct eng_gemm *g, struct shape *s, struct ts_err *err)
{
    (void)g;
    const bool kn = s->beta1 & GEMM_KN;
    cublasOperation_t ta = kn ? CUBLAS_OP_N : CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescCreate(&s->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (kn)
        CB(cublasLtMatrixLayoutCreate(&s->a, CUDA_R_16BF, (uint64_t)s->N, (uint64_t)s->K, s->N));
    else
        CB(cublasLtMatrixLayoutCreate(&s->a, CUDA_R_16BF, (uint64_t)s->K, (uint64_t)s->N, s->K));
    CB(cublasLtMatrixLayoutCreate(&s->b, CUDA_R_16BF, (uint64_t)s->K, (uint64_t)s->M, s->K));
    CB(cublasLtMatrixLayoutCreate(&s->c, CUDA_R_16BF, (uint64_t)s->N, (uint64_t)s->M, s->N));
    return 0;
}

static int candidates(struct eng_gemm *g, struct shape *s, cublasLtMatmulHeuristicResult_t *res,
                      int *n, struct ts_err *err)
{
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g->ws_bytes, sizeof g->ws_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(g->lt, s->op, s->a, s->b, s->c, s->c, pref, g->algos, res, n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || *n == 0)
        return ts_fail(err, "engine: no cuBLASLt algorithm for a %d x %d x %d GEMM (%s)", s->M, s->N,
                       s->K, cublasGetStatusString(st));
    return 0;
}

static cublasStatus_t matmul(struct eng_gemm *g, struct shape *s, const cublasLtMatmulAlgo_t *algo,
                             const void *W, const void *X, void *Y, float beta, cudaStream_t st)
{
    const float alpha = 1.0f;
    return cublasLtMatmul(g->lt, s->op, &alpha, W, s->a, X, s->b, &beta, Y, s->c, Y, s->c, algo, g->ws,
                          g->ws_bytes, st);
}

/* Milliseconds per run of algo, each of TUNE_REPS runs timed alone after the L2 cache was
 * overwritten (flush), as in a step where the weights stream from memory: back-to-back runs would
 * find a small GEMM's weights in L2 and favour the wrong algorithm. Negative: the algorithm fails. */
static float time_algo(struct eng_gemm *g, struct shape *s, const cublasLtMatmulAlgo_t *algo, const void *W,
                       const void *X, void *Y, float beta, cudaStream_t st, void *flush, size_t flush_bytes)
{
    if (matmul(g, s, algo, W, X, Y, beta, st) != CUBLAS_STATUS_SUCCESS) {
        cudaGetLastError();
        return -1;
    }
    float total = 0;
    for (int r = 0; r < TUNE_REPS; r++) {
        float ms = 0;
        if (flush)
            cudaMemsetAsync(flush, r, flush_bytes, st);
        cudaEventRecord(g->e0, st);
        matmul(g, s, algo, W, X, Y, beta, st);
        cudaEventRecord(g->e1, st);
        if (cudaEventSynchronize(g->e1) != cudaSuccess || cudaEventElapsedTime(&ms, g->e0, g->e1) != cudaSuccess) {
            cudaGetLastError();
            return -1;
        }
        total += ms;
    }
    return total / TUNE_REPS;
}

/* Takes a cached choice for s if cuBLASLt accepts it for s's shape; false if it does not. */
static bool from_cache(struct eng_gemm *g, struct shape *s, const struct algo_entry *c)
{
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulHeuristicResult_t check;
    memcpy(&algo, c->blob, sizeof algo);
    if (cublasLtMatmulAlgoCheck(g->lt, s->op, s->a, s->b, s->c, s->c, &algo, &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > g->ws_bytes) {
        fprintf(stderr, "tessera engine: %s: the cached algorithm of the %d x %d x %d GEMM is not valid here; "
                        "timing the candidates again\n", g->cache.path, s->M, s->N, s->K);
        return false;
    }
    s->algo = algo;
    s->tuned = true;
    s->cached = true;
    s->best_ms = c->ms;
    s->first_ms = c->heuristic_ms;
    return true;
}

static int tune(struct eng_gemm *g, struct shape *s, const void *W, const void *X, void *scratch,
                cudaStream_t st, struct ts_err *err)
{
    cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
    int n = 0;
    if (candidates(g, s, res, &n, err))
        return -1;
    s->algo = res[0].algo;
    s->best_ms = s->first_ms = -1;
    float beta = s->beta1 & GEMM_BETA1 ? 1.0f : 0.0f;
    /* an L2 flush buffer, held while tuning (twice the L2: every line is evicted) */
    int dev = 0, l2 = 0;
    void *flush = NULL;
    size_t flush_bytes = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess &&
        l2 > 0 && cudaMalloc(&flush, 2 * (size_t)l2) == cudaSuccess)
        flush_bytes = 2 * (size_t)l2;
    else
        cudaGetLastError(); /* no room: time warm */
    for (int i = 0; i < n; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        float ms = time_algo(g, s, &res[i].algo, W, X, scratch, beta, st, flush, flush_bytes);
        if (ms < 0)
            continue; /* a candidate that fails is skipped */
        if (i == 0)
            s->first_ms = ms;
        if (s->best_ms < 0 || ms < s->best_ms * (1 - TUNE_MARGIN)) {
            s->best_ms = ms;
            s->algo = res[i].algo;
        }
    }
    if (flush) {
        cudaStreamSynchronize(st);
        cudaFree(flush);
    }
    s->tuned = true;
    if (g->have_cache) {
        struct algo_key key = {s->M, s->N, s->K, s->beta1};
        const struct algo_entry *kept;
        if (algo_cache_put(&g->cache, key, &s->algo, s->best_ms, s->first_ms, &kept, err))
            return -1;
        if (memcmp(kept->blob, &s->algo, sizeof s->algo) != 0 && from_cache(g, s, kept))
            s->cached = true; /* another process chose first: its choice holds */
    }
    return 0;
}

static int run(struct eng_gemm *g, bool kn, const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N, int K,
               float beta, k_stream stream, bool may_tune, void *scratch, size_t scratch_bytes, struct ts_err *err)
{
    const int beta1 = shape_flags(beta, kn);
    struct shape *s = NULL;
    for (size_t i = 0; i < g->n; i++)
        if (g->shapes[i].M == M && g->shapes[i].N == N && g->shapes[i].K == K && g->shapes[i].beta1 == beta1)
            s = &g->shapes[i];
    if (!s) {
        ts_grow((void **)&g->shapes, &g->cap, g->n + 1, sizeof *g->shapes);
        s = &g->shapes[g->n++];
        memset(s, 0, sizeof *s);
        s->M = M, s->N = N, s->K = K, s->beta1 = beta1;
        if (describe(g, s, err))
            return -1;
        cublasLtMatmulHeuristicResult_t res[1];
        int n = 0;
        cublasLtMatmulPreference_t pref;
        CB(cublasLtMatmulPreferenceCreate(&pref));
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &g->ws_bytes, sizeof g->ws_bytes);
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g->lt, s->op, s->a, s->b, s->c, s->c, pref, 1, res, &n);
        cublasLtMatmulPreferenceDestroy(pref);
        if (st != CUBLAS_STATUS_SUCCESS || n == 0)
            return ts_fail(err, "engine: no cuBLASLt algorithm for a %d x %d x %d GEMM", M, N, K);
        s->algo = res[0].algo;
        const struct algo_entry *c = g->have_cache ? algo_cache_find(&g->cache, (struct algo_key){M, N, K, beta1}) : NULL;
        if (c)
            from_cache(g, s, c);
    }
    if (!s->tuned && may_tune && scratch && scratch_bytes >= 2 * (size_t)M * N && (void *)Y != scratch)
        if (tune(g, s, W, X, scratch, (cudaStream_t)stream, err))
            return -1;
    CB(matmul(g, s, &s->algo, W, X, Y, beta, (cudaStream_t)stream));
    return 0;
}

int eng_gemm_run(struct eng_gemm *g, const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N,
                 int K, float beta, k_stream stream, bool may_tune, void *scratch,
                 size_t scratch_bytes, struct ts_err *err)
{
    return run(g, false, W, X, Y, M, N, K, beta, stream, may_tune, scratch, scratch_bytes, err);
}

int eng_gemm_run_kn(struct eng_gemm *g, const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N, int K,
                    k_stream stream, bool may_tune, void *scratch, size_t scratch_bytes, struct ts_err *err)
{
    return run(g, true, W, X, Y, M, N, K, 0.0f, stream, may_tune, scratch, scratch_bytes, err);
}

bool eng_gemm_is_tuned(const struct eng_gemm *g, int M, int N, int K, float beta, bool kn)
{
    const int flags = shape_flags(beta, kn);
    for (size_t i = 0; i < g->n; i++)
        if (g->shapes[i].M == M && g->shapes[i].N == N && g->shapes[i].K == K && g->shapes[i].beta1 == flags)
            return g->shapes[i].tuned;
    return g->have_cache && algo_cache_find(&g->cache, (struct algo_key){M, N, K, flags});
}

int eng_gemm_shape_count(const struct eng_gemm *g) { return (int)g->n; }

int eng_gemm_use_cache(struct eng_gemm *g, const char *path, const char *device, struct ts_err *err)
{
    TS_ASSERTF(!g->have_cache && g->n == 0, "the GEMM algorithm cache is chosen before the first GEMM");
    if (algo_cache_open(&g->cache, path, device, (int64_t)cublasLtGetVersion(), (int64_t)g->ws_bytes,
                        sizeof(cublasLtMatmulAlgo_t), err))
        return -1;
    g->have_cache = true;
    return 0;
}

void eng_gemm_report(const struct eng_gemm *g, FILE *out)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct shape *s = &g->shapes[i];
        if (s->tuned && s->best_ms > 0)
            fprintf(out, "  gemm %5d x %6d x %5d%s%s: %.4f ms (heuristic's first: %.4f ms)%s\n", s->M, s->N,
                    s->K, s->beta1 & GEMM_BETA1 ? " +C" : "", s->beta1 & GEMM_KN ? " (W as [K, N])" : "",
                    s->best_ms, s->first_ms, s->cached ? " [cached]" : "");
    }
}
