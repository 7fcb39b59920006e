/*
 * engine_bench.c: the engine's benchmark (build/engine_bench; make bench-engine): what the card, its
 * peer and the host can do, and the run that calls every part (engine_bench_run); the engine's steps
 * against the floors these ceilings give are engine_bench_steps.c's.
 *
 * 1. Ceilings, measured: an 8192^3 bf16 GEMM through cuBLAS (TFLOP/s) and a 2 GiB device copy
 *    (bytes read + written per second), medians over repetitions after warm-up; the floors use
 *    these. The same GEMM is also held back to back for 2 s and its rate printed beside: a
 *    power-limited card (the H200 at 700 W) runs long steps at a lower clock.
 * 2. The model's linear layers through cuBLAS at a few token counts (TFLOP/s, weight GB/s), and the
 *    attention kernel alone on the steps' shapes and the anchor's long ones, in TFLOP/s.
 * 3. --only peer: copies from GPU 0 to GPU 1, the link a disaggregated fleet's moves take.
 * 4. --only host: the host link and the host's memory, as offloaded K/V use them (the policy herald):
 *    pinned copies each way and a pageable one, and the host's read rate over N threads.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine_bench_internal.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eng_host.h"
#include "kernels.h"

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define CKB(call)                                                                                  \
    do {                                                                                           \
        int e_ = (int)(call);                                                                      \
        if (e_) {                                                                                  \
            fprintf(stderr, "engine_bench: %s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, e_); \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* Median milliseconds of `reps` runs of fn(ctx) timed with events, after 3 warm-ups. */
static float time_ms(void (*fn)(void *), void *ctx, int reps)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 3; i++)
        fn(ctx);
    float *t = xmalloc(sizeof *t * (size_t)reps);
    for (int i = 0; i < reps; i++) {
        cudaEventRecord(a, 0);
        fn(ctx);
        cudaEventRecord(b, 0);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&t[i], a, b);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_f);
    float med = t[reps / 2];
    free(t);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return med;
}

/* Milliseconds per run of fn(ctx) run back to back: warm_ms of runs first (one run took about
 * one_ms), so that the power limit sets the clock as in a long step, then `reps` timed together. */
static float sustained_ms(void (*fn)(void *), void *ctx, float one_ms, float warm_ms, int reps)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < (int)(warm_ms / one_ms); i++)
        fn(ctx);
    float ms = 0;
    cudaEventRecord(a, 0);
    for (int i = 0; i < reps; i++)
        fn(ctx);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / (float)reps;
}

/* one linear layer as the engine runs it: Y[M, n] = X[M, k] W^T */
struct lin_ctx {
    cublasHandle_t h;
    void *w, *x, *y;
    int M, n, k;
};

static void run_lin(void *p)
{
    struct lin_ctx *c = p;
    const float one = 1, zero = 0;
    cublasGemmEx(c->h, CUBLAS_OP_T, CUBLAS_OP_N, c->n, c->M, c->k, &one, c->w, CUDA_R_16BF, c->k, c->x,
                 CUDA_R_16BF, c->k, &zero, c->y, CUDA_R_16BF, c->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/* one copy: on the device, or between the host and the device */
struct copy_ctx {
    void *src, *dst;
    size_t bytes;
    enum cudaMemcpyKind kind;
};

static void run_copy(void *p)
{
    struct copy_ctx *c = p;
    cudaMemcpyAsync(c->dst, c->src, c->bytes, c->kind, 0);
}

/* one peer copy, GPU `from` to GPU `to` */
struct peer_ctx {
    void *dst, *src;
    int to, from;
    size_t bytes;
};

static void run_peer(void *p)
{
    struct peer_ctx *c = p;
    cudaMemcpyPeerAsync(c->dst, c->to, c->src, c->from, c->bytes, 0);
}

struct attn_ctx {
    struct k_attn_args a;
    bool wgmma; /* the wgmma kernel alone */
};

static int attn_once(struct attn_ctx *c) { return c->wgmma ? k_attention_wgmma(&c->a, 0) : k_attention(&c->a, 0); }

static void run_attn(void *p) { attn_once(p); }

/* The attention kernel alone: nseq segments of q queries over kv cached keys, all heads. */
static double attention_tflops(const struct model_cfg *m, int nseq, int q, int kv, bool wgmma, int reps,
                               float *ms_out)
{
    const int H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim, pt = 16, keys = kv + q;
    const int T = nseq * q, pages_per = (keys + pt - 1) / pt, slots = nseq * pages_per * pt;
    int32_t *meta = xcalloc((size_t)(5 * nseq + nseq * pages_per + 2 * (nseq * ((q + 63) / 64))), 4);
    int32_t *qs = meta, *ql = qs + nseq, *kl = ql + nseq, *kc = kl + nseq, *po = kc + nseq;
    int32_t *pg = po + nseq, *tl = pg + nseq * pages_per;
    for (int s = 0; s < nseq; s++) {
        qs[s] = s * q, ql[s] = q, kl[s] = keys, kc[s] = kv, po[s] = s * pages_per;
        for (int i = 0; i < pages_per; i++)
            pg[s * pages_per + i] = s * pages_per + i;
    }
    int long_tiles, long_rows, wg_tiles;
    const int nt = attn_tiles(nseq, ql, tl, &long_tiles, &long_rows, &wg_tiles);
    size_t meta_bytes = 4 * (size_t)(5 * nseq + nseq * pages_per + 2 * nt);
    bf16_t *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL;
    int32_t *dmeta = NULL;
    void *ws = NULL;
    double tflops = 0;
    const int64_t ws_bytes = 64LL << 20;
    CKB(cudaMalloc(&ws, (size_t)ws_bytes));
    CKB(cudaMalloc((void **)&dq, 2 * (size_t)T * H * d));
    CKB(cudaMalloc((void **)&dout, 2 * (size_t)T * H * d));
    CKB(cudaMalloc((void **)&dk, 2 * (size_t)slots * Hkv * d));
    CKB(cudaMalloc((void **)&dv, 2 * (size_t)slots * Hkv * d));
    CKB(cudaMalloc((void **)&dmeta, meta_bytes));
    CKB(cudaMemcpy(dmeta, meta, meta_bytes, cudaMemcpyHostToDevice));
    CKB(k_fill_random(dq, (int64_t)T * H * d, 1, 1.f, 0));
    CKB(k_fill_random(dk, (int64_t)slots * Hkv * d, 2, 1.f, 0));
    CKB(k_fill_random(dv, (int64_t)slots * Hkv * d, 3, 1.f, 0));
    int32_t *base = dmeta;
    struct attn_ctx ctx = {{.q = dq, .q_stride = H * d, .k_pool = dk, .v_pool = dv, .o = dout,
                            .q_start = base, .q_len = base + nseq, .key_len = base + 2 * nseq,
                            .kv_cached = base + 3 * nseq, .page_off = base + 4 * nseq,
                            .pages = base + 5 * nseq, .tiles = base + 5 * nseq + nseq * pages_per,
                            .num_tiles = nt, .H = H, .Hkv = Hkv, .d = d, .page_tokens = pt, .page_shift = 4,
                            .block_size = 0, .scale = 1.0f / sqrtf((float)d), .ws = ws,
                            .ws_bytes = ws_bytes, .T = T, .max_key_len = keys, .min_q_len = q,
                            .max_q_len = q, .long_tiles = long_tiles, .long_rows = long_rows,
                            .wg_tiles = wg_tiles}, wgmma};
    if ((wgmma && k_attention_splits(&ctx.a) > 1) || attn_once(&ctx) != 0) { /* not this kernel's shape */
        cudaGetLastError();
        tflops = -1;
        goto done;
    }
    float ms = time_ms(run_attn, &ctx, reps);
    CKB(cudaGetLastError());
    double flops = 4.0 * d * H * (double)nseq * q * keys;
    tflops = flops / (ms * 1e-3) / 1e12;
    *ms_out = ms;
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dmeta), cudaFree(ws);
    free(meta);
    return tflops;
}

/* The model's linear layers through cuBLAS at a few token counts: TFLOP/s and weight GB/s, to see
 * which GEMMs keep a step from its floor. */
static void gemm_table(const struct model_cfg *m, int reps, double peak, double bw, FILE *out, FILE *json)
{
    const int64_t h = m->hidden, qkv = (int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    const int64_t qd = (int64_t)m->num_heads * m->head_dim, F = m->ffn;
    const struct { const char *name; int64_t n, k; } shapes[] = {
        {"qkv", qkv, h}, {"o_proj", h, qd}, {"gate_up", 2 * F, h}, {"down", h, F}, {"lm_head", m->vocab, h}};
    const int tokens[] = {32, 512, 2048, 8192};
    struct lin_ctx g = {0};
    int64_t maxw = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(shapes); i++)
        maxw = TS_MAX(maxw, shapes[i].n * shapes[i].k);
    fprintf(out, "\n%-10s %7s %10s %10s %10s %8s\n", "gemm", "tokens", "ms", "TFLOP/s", "weight GB/s", "x_floor");
    if (cublasCreate(&g.h) != CUBLAS_STATUS_SUCCESS || cudaMalloc(&g.w, 2 * (size_t)maxw) != cudaSuccess ||
        cudaMalloc(&g.x, 2 * 8192 * (size_t)h * 4) != cudaSuccess ||
        cudaMalloc(&g.y, 2 * 8192 * (size_t)m->vocab / 4) != cudaSuccess) {
        fprintf(stderr, "engine_bench: GEMM table setup failed\n");
        goto done;
    }
    k_fill_random(g.w, maxw, 5, 0.02f, 0);
    k_fill_random(g.x, 8192 * h * 4, 6, 1.f, 0);
    for (size_t i = 0; i < TS_ARRAY_LEN(shapes); i++)
        for (size_t j = 0; j < TS_ARRAY_LEN(tokens); j++) {
            int M = tokens[j];
            if (shapes[i].n == m->vocab && M > 2048)
                continue; /* the LM head runs in chunks */
            struct lin_ctx lc = {g.h, g.w, g.x, g.y, M, (int)shapes[i].n, (int)shapes[i].k};
            float ms = time_ms(run_lin, &lc, reps);
            double fl = 2.0 * M * shapes[i].n * shapes[i].k, by = 2.0 * shapes[i].n * shapes[i].k;
            double floor_ms = fmax(fl / peak, (by + 2.0 * M * (shapes[i].n + shapes[i].k)) / bw) * 1e3;
            fprintf(out, "%-10s %7d %10.4f %10.1f %10.0f %8.2f\n", shapes[i].name, M, ms,
                    fl / (ms * 1e-3) / 1e12, by / (ms * 1e-3) / 1e9, ms / floor_ms);
            if (json)
                fprintf(json, "{\"gemm\":\"%s\",\"tokens\":%d,\"ms\":%.5f,\"tflops\":%.2f,\"x_floor\":%.3f}\n",
                        shapes[i].name, M, ms, fl / (ms * 1e-3) / 1e12, ms / floor_ms);
        }
done:
    if (g.h)
        cublasDestroy(g.h);
    cudaFree(g.w), cudaFree(g.x), cudaFree(g.y);
}

/* The two ceilings the floors divide by, measured here: an 8192^3 bf16 GEMM (short-run, and held
 * back to back for 2 s under the power limit) and a 2 GiB device copy; said on out and o->json. */
static int bench_ceilings(const struct engine_bench_opts *o, struct ceilings *cl, FILE *out)
{
    int rc = -1;
    struct lin_ctx g = {.M = 8192, .n = 8192, .k = 8192};
    struct copy_ctx cp = {.bytes = 2ULL << 30, .kind = cudaMemcpyDeviceToDevice};
    const size_t gb = 2 * (size_t)g.n * g.n;
    CKB(cublasCreate(&g.h));
    CKB(cudaMalloc(&g.w, gb));
    CKB(cudaMalloc(&g.x, gb));
    CKB(cudaMalloc(&g.y, gb));
    CKB(k_fill_random(g.w, (int64_t)g.n * g.n, 11, 1.f, 0));
    CKB(k_fill_random(g.x, (int64_t)g.n * g.n, 12, 1.f, 0));
    const float gemm_ms = time_ms(run_lin, &g, o->reps);
    const float held_ms = sustained_ms(run_lin, &g, gemm_ms, 2000.f, 100);
    CKB(cudaGetLastError());
    CKB(cudaMalloc(&cp.src, cp.bytes));
    CKB(cudaMalloc(&cp.dst, cp.bytes));
    CKB(cudaMemset(cp.src, 1, cp.bytes));
    const float copy_ms = time_ms(run_copy, &cp, o->reps);
    const double flop = 2.0 * g.n * (double)g.n * g.n;
    *cl = (struct ceilings){flop / (gemm_ms * 1e-3), flop / (held_ms * 1e-3), 2.0 * cp.bytes / (copy_ms * 1e-3)};
    fprintf(out, "ceilings: bf16 GEMM 8192^3 %.1f TFLOP/s, device copy %.2f TB/s (read + write)\n",
            cl->peak / 1e12, cl->bw / 1e12);
    fprintf(out, "          the same GEMM held back to back for 2 s: %.1f TFLOP/s (%.2f x; the power limit "
                 "lowers the clock in long steps; floors use the first)\n", cl->held / 1e12, cl->peak / cl->held);
    if (o->json)
        fprintf(o->json, "{\"ceiling\":true,\"gemm_tflops\":%.2f,\"gemm_sustained_tflops\":%.2f,\"copy_tbps\":%.3f}\n",
                cl->peak / 1e12, cl->held / 1e12, cl->bw / 1e12);
    rc = 0;
done:
    if (g.h)
        cublasDestroy(g.h);
    cudaFree(g.w), cudaFree(g.x), cudaFree(g.y), cudaFree(cp.src), cudaFree(cp.dst);
    return rc;
}

/* The attention kernels alone on the anchor's shapes and Reuse shapes, their TFLOP/s. */
static void bench_attention(const struct engine_bench_opts *o, FILE *out)
{
    static const int shapes[][3] = {{16, 512, 0}, {1, 2048, 0}, {4, 2048, 0}, {1, 8192, 0}, {16, 32, 480},
                                    {1, 32, 480}, {1, 32, 8160}};
    fprintf(out, "\n%-36s %9s %11s %15s\n", "attention kernel", "mma ms", "mma TFLOP/s", "wgmma TFLOP/s");
    for (size_t i = 0; i < TS_ARRAY_LEN(shapes); i++) {
        float ms = 0, ms2 = 0;
        double tf = attention_tflops(&o->model, shapes[i][0], shapes[i][1], shapes[i][2], false, o->reps, &ms);
        double tf2 = attention_tflops(&o->model, shapes[i][0], shapes[i][1], shapes[i][2], true, o->reps, &ms2);
        char name[64], wg[32] = "-";
        snprintf(name, sizeof name, "%d seq x q %d over %d cached", shapes[i][0], shapes[i][1], shapes[i][2]);
        if (tf2 > 0)
            snprintf(wg, sizeof wg, "%.1f", tf2);
        fprintf(out, "%-36s %9.4f %11.1f %15s\n", name, ms, tf, wg);
        if (o->json)
            fprintf(o->json, "{\"attention\":\"%s\",\"ms\":%.5f,\"tflops\":%.2f,\"wgmma_tflops\":%.2f}\n", name,
                    ms, tf, tf2);
    }
}

/* The link between GPUs 0 and 1 of the host, as a disaggregated fleet's moves take it (sim/fleet/fleet.c's
 * host link): copies of 4 KiB to 1 GiB from GPU 0 to GPU 1 with peer access where the pair has it,
 * timed on GPU 0's stream (the median of reps, after warm-up): the bandwidth, and the small copies'
 * time, the latency a move pays. */
static int bench_peer(const struct engine_bench_opts *o, FILE *out)
{
    int n = 0, can = 0, rc = -1;
    void *src = NULL, *dst = NULL;
    const size_t most = (size_t)1 << 30;
    CKB(cudaGetDeviceCount(&n));
    if (n < 2) {
        fprintf(stderr, "engine_bench --only peer: %d GPU here: the link is between two\n", n);
        return -1;
    }
    CKB(cudaDeviceCanAccessPeer(&can, 0, 1));
    CKB(cudaSetDevice(1));
    CKB(cudaMalloc(&dst, most));
    CKB(cudaSetDevice(0));
    CKB(cudaMalloc(&src, most));
    if (can)
        CKB(cudaDeviceEnablePeerAccess(1, 0));
    fprintf(out, "\npeer copies, GPU 0 to GPU 1 (%s), median of %d:\n%12s %10s %9s\n",
            can ? "peer access" : "no peer access: staged through the host", o->reps, "bytes", "ms", "GB/s");
    for (size_t bytes = 4096; bytes <= most; bytes *= 4) {
        struct peer_ctx c = {dst, src, 1, 0, bytes};
        const float ms = time_ms(run_peer, &c, o->reps);
        CKB(cudaGetLastError());
        fprintf(out, "%12zu %10.4f %9.1f\n", bytes, ms, (double)bytes / ((double)ms * 1e6));
        if (o->json)
            fprintf(o->json, "{\"peer\":true,\"bytes\":%zu,\"ms\":%.5f,\"gbps\":%.2f}\n", bytes, ms,
                    (double)bytes / ((double)ms * 1e6));
    }
    rc = 0;
done:
    cudaSetDevice(1);
    cudaFree(dst);
    cudaSetDevice(0);
    cudaFree(src);
    return rc;
}

/* One thread's share of a host read: the sum of its 8-byte words (kept, so that the reads stay). */
struct host_read_ctx {
    const uint64_t *v;
    size_t n;
    uint64_t sum;
};

static void *host_read(void *p)
{
    struct host_read_ctx *c = p;
    uint64_t a = 0, b = 0, x = 0, y = 0;
    size_t i = 0;
    for (; i + 4 <= c->n; i += 4)
        a += c->v[i], b += c->v[i + 1], x += c->v[i + 2], y += c->v[i + 3];
    for (; i < c->n; i++)
        a += c->v[i];
    c->sum = a + b + x + y;
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The host's read rate over `threads` threads of `bytes` of buf: the best of `reps` reads, GB/s. */
static double host_read_gbs(const uint64_t *buf, size_t bytes, int threads, int reps)
{
    pthread_t th[64];
    struct host_read_ctx c[64];
    const size_t words = bytes / 8, share = words / (size_t)threads;
    double best = 0;
    uint64_t keep = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        for (int i = 0; i < threads; i++) {
            c[i] = (struct host_read_ctx){buf + (size_t)i * share, share, 0};
            if (pthread_create(&th[i], NULL, host_read, &c[i]))
                return 0;
        }
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            keep += c[i].sum;
        }
        best = fmax(best, (double)(share * (size_t)threads * 8) / (now_s() - t0) / 1e9);
    }
    return keep == 1 ? best * (1 + 1e-12) : best; /* (the sums used) */
}

/* A kept token's K and V gathered from host memory: the GPU reads them (k_gather_rows over mapped
 * memory), or each crosses by a copy of its own (the copy engines). */
struct gather_ctx {
    bf16_t *dst;
    const bf16_t *src;
    const int32_t *d_idx, *idx;
    int rows, row;
    bool copies;
};

static void run_gather(void *p)
{
    const struct gather_ctx *g = p;
    if (!g->copies) {
        k_gather_rows(g->dst, g->src, g->d_idx, g->rows, g->row, 0);
        return;
    }
    for (int i = 0; i < g->rows; i++)
        cudaMemcpyAsync(g->dst + (size_t)i * g->row, g->src + (size_t)g->idx[i] * g->row, sizeof *g->dst * (size_t)g->row,
                        cudaMemcpyHostToDevice, 0);
}

/* HERALD's host part as a live run does it (engine/harness/eng_live.c) on SDAR-8B's K/V rows, in
 * `bytes` of pinned host memory: scoring every token's keys over ENG_HOST_THREADS threads
 * (eng_host_select, the best of 3: its rate over the keys' bytes) against the plain read rate, then
 * the top tenth's K and V gathered to the GPU both ways (the median of reps). */
static int bench_herald(const struct engine_bench_opts *o, void *pin, void *dev, size_t bytes, FILE *out)
{
    const struct model_cfg *m = model_find("sdar-8b");
    const int row = (int)(model_kv_bytes_per_token(m) / 2);
    const int64_t n = (int64_t)(bytes / (sizeof(bf16_t) * (size_t)row));
    const int32_t k = (int32_t)(n / 10);
    float *q = xmalloc(sizeof *q * (size_t)row), *scores = xmalloc(sizeof *scores * (size_t)n);
    int32_t *top = xmalloc(sizeof *top * (size_t)k), *d_idx = NULL;
    int rc = -1;
    for (int i = 0; i < row; i++)
        q[i] = (float)(i % 7) - 3.0f;
    for (size_t i = 0; i < bytes / sizeof(bf16_t); i++) /* keys of varied scores: the ranking's real work */
        ((bf16_t *)pin)[i] = (bf16_t)(0x3c00 + (i * 2654435761u >> 20) % 256);
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
        const double t0 = ts_wall_s();
        if (eng_host_select(pin, n, row / 2, row, q, k, ENG_HOST_THREADS, scores, top) != k) {
            fprintf(stderr, "engine_bench --only host: the host's scoring failed\n");
            goto done;
        }
        best = fmin(best, ts_wall_s() - t0);
    }
    const double key_bytes = (double)n * row; /* half of each row, in bytes: row / 2 values of 2 */
    fprintf(out, "HERALD's host part, SDAR-8B (%d K/V values a token), %lld tokens:\n", row, (long long)n);
    fprintf(out, "  scoring their keys over %d threads: %.2f ms, %.1f GB/s of keys\n", ENG_HOST_THREADS, best * 1e3,
            key_bytes / best / 1e9);
    CKB(cudaMalloc((void **)&d_idx, sizeof *d_idx * (size_t)k));
    CKB(cudaMemcpy(d_idx, top, sizeof *top * (size_t)k, cudaMemcpyHostToDevice));
    const double kept_bytes = (double)k * row * sizeof(bf16_t);
    for (int copies = 0; copies < 2; copies++) {
        struct gather_ctx g = {dev, pin, d_idx, top, k, row, copies};
        const float ms = time_ms(run_gather, &g, o->reps);
        CKB(cudaGetLastError());
        fprintf(out, "  the top %d tokens' K and V to the GPU, %s: %.3f ms, %.1f GB/s\n", k,
                copies ? "a copy each" : "read by the GPU (k_gather_rows)", ms, kept_bytes / (ms * 1e6));
        if (o->json)
            fprintf(o->json, "{\"host\":\"herald\",\"tokens\":%lld,\"score_gbps\":%.2f,\"kept\":%d,\"%s_gbps\":%.2f}\n",
                    (long long)n, key_bytes / best / 1e9, k, copies ? "copies" : "gather", kept_bytes / (ms * 1e6));
    }
    rc = 0;
done:
    cudaFree(d_idx);
    free(q), free(scores), free(top);
    return rc;
}

/* The host link and the host's memory as offloaded K/V use them (sim/policies/policy_herald.c, the host-link
 * table in sim/cost/cost.c): pinned copies of 4 KiB to 1 GiB host to device and back, timed with events
 * (the median of reps after warm-up); 1 GiB from pageable memory; and the host's read rate over 1,
 * 2, 4 .. the host's cores threads, reading 2 GiB (the best of 3): what scoring offloaded keys on the
 * host reads at; then HERALD's host part as a live run does it (bench_herald). */
static int bench_host(const struct engine_bench_opts *o, FILE *out)
{
    int rc = -1;
    void *dev = NULL, *pin = NULL;
    uint64_t *page = NULL;
    const size_t most = (size_t)1 << 30, scan = (size_t)2 << 30;
    CKB(cudaMalloc(&dev, most));
    CKB(cudaMallocHost(&pin, most));
    page = malloc(scan);
    if (!page) {
        fprintf(stderr, "engine_bench --only host: cannot allocate %zu bytes of host memory\n", scan);
        goto done;
    }
    memset(page, 1, scan);
    memset(pin, 1, most);
    fprintf(out, "\nhost link, pinned host memory, median of %d:\n%12s %10s %9s %10s %9s\n", o->reps, "bytes",
            "h2d ms", "GB/s", "d2h ms", "GB/s");
    for (size_t bytes = 4096; bytes <= most; bytes *= 4) {
        struct copy_ctx up = {.src = pin, .dst = dev, .bytes = bytes, .kind = cudaMemcpyHostToDevice},
                        down = {.src = dev, .dst = pin, .bytes = bytes, .kind = cudaMemcpyDeviceToHost};
        const float h2d = time_ms(run_copy, &up, o->reps), d2h = time_ms(run_copy, &down, o->reps);
        CKB(cudaGetLastError());
        fprintf(out, "%12zu %10.4f %9.1f %10.4f %9.1f\n", bytes, h2d, (double)bytes / (h2d * 1e6), d2h,
                (double)bytes / (d2h * 1e6));
        if (o->json)
            fprintf(o->json, "{\"host\":\"pinned\",\"bytes\":%zu,\"h2d_ms\":%.5f,\"h2d_gbps\":%.2f,\"d2h_ms\":%.5f,"
                             "\"d2h_gbps\":%.2f}\n", bytes, h2d, (double)bytes / (h2d * 1e6), d2h,
                    (double)bytes / (d2h * 1e6));
    }
    struct copy_ctx pg = {.src = page, .dst = dev, .bytes = most, .kind = cudaMemcpyHostToDevice};
    const float pms = time_ms(run_copy, &pg, o->reps);
    CKB(cudaGetLastError());
    fprintf(out, "pageable host memory, %zu bytes host to device: %.4f ms, %.1f GB/s\n", most, pms,
            (double)most / (pms * 1e6));
    if (o->json)
        fprintf(o->json, "{\"host\":\"pageable\",\"bytes\":%zu,\"h2d_ms\":%.5f,\"h2d_gbps\":%.2f}\n", most, pms,
                (double)most / (pms * 1e6));
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(out, "host memory read, %zu bytes, best of 3:\n%8s %9s\n", scan, "threads", "GB/s");
    for (int t = 1; t <= 64 && t <= (cores > 0 ? cores : 1); t *= 2) {
        const double gbs = host_read_gbs(page, scan, t, 3);
        fprintf(out, "%8d %9.1f\n", t, gbs);
        if (o->json)
            fprintf(o->json, "{\"host\":\"read\",\"threads\":%d,\"bytes\":%zu,\"gbps\":%.2f}\n", t, scan, gbs);
    }
    if (bench_herald(o, pin, dev, most, out))
        goto done;
    rc = 0;
done:
    free(page);
    cudaFreeHost(pin);
    cudaFree(dev);
    return rc;
}

int engine_bench_run(const struct engine_bench_opts *o, FILE *out)
{
    const bool all = !o->only;
    if (o->only && strcmp(o->only, "peer") == 0)
        return bench_peer(o, out) ? 1 : 0;
    if (o->only && strcmp(o->only, "host") == 0)
        return bench_host(o, out) ? 1 : 0;
    struct ceilings cl;
    if (bench_ceilings(o, &cl, out))
        return 1;
    if (o->only && strcmp(o->only, "clock") == 0)
        return engine_bench_clock(o, &cl, out) ? 1 : 0;
    if ((all || strcmp(o->only, "steps") == 0) && engine_bench_steps(o, &cl, out))
        return 1;
    if (all || strcmp(o->only, "gemm") == 0)
        gemm_table(&o->model, o->reps, cl.peak, cl.bw, out, o->json);
    if (all || strcmp(o->only, "attention") == 0)
        bench_attention(o, out);
    if ((all || strcmp(o->only, "focus") == 0) && engine_bench_focus(o, &cl, out))
        return 1;
    if (o->anchor && engine_bench_anchor_grid(o, &cl, out))
        return 1;
    return 0;
}
