/*
 * engine_bench.c: the engine's benchmark (build/engine_bench; make bench-engine).
 *
 * 1. Ceilings, measured: an 8192^3 bf16 GEMM through cuBLAS (TFLOP/s) and a 2 GiB device copy
 *    (bytes read + written per second), medians over repetitions after warm-up; the floors use
 *    these. The same GEMM is also held back to back for 2 s and its rate printed beside: a
 *    power-limited card (the H200 at 700 W) runs long steps at a lower clock.
 * 2. Steps of the model (LLaDA-8B by default, random bf16 weights), each captured once into a CUDA
 *    graph and replayed: Refresh of 16 x 512 tokens with logits for every token; Reuse of one
 *    32-token block over 480 cached tokens for 1 and 16 sequences. Each is set against its floor:
 *    max(FLOPs / GEMM ceiling, bytes / copy ceiling), FLOPs counting the linear layers, attention
 *    and the LM head, bytes counting weights, K/V read and the logits; and against the floor at
 *    the held GEMM rate (what a step long enough to meet the power limit can reach). Each step is
 *    also timed with plain launches against programmatic ones, with either attention kernel alone,
 *    and with the FFN split, fused and auto (where the fused kernel runs), each group's variants
 *    replayed in turn (eng_graph_replay_kept) so that none meets a card the others left hotter; and
 *    with only its linear layers and LM head (and the final norm: eng_set_skip_ops), then all but
 *    them.
 * 3. The attention kernel alone on the same shapes and the anchor's long ones, in TFLOP/s.
 * 4. The engine's workspace for each step beside the simulator's planned activations (act_cache.h).
 * 5. With --anchor (or --only anchor): every shape of the PyTorch anchor (eng_anchor.h), each of its
 *    three steps against its floors and beside PyTorch eager's time and peak activations.
 * 6. --only clock: the ceilings, then a ladder of steps (or the --step ones) each timed alone from a
 *    card left idle (eng_opts.idle_s) into the warm trace: the clock's fall under the power limit,
 *    which tessera calib clock fits.
 * 7. --only host: the host link and the host's memory, as offloaded K/V use them (the policy herald):
 *    pinned copies each way and a pageable one, and the host's read rate over N threads.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eng.h"
#include "eng_host.h"
#include "kernels.h"
#include "cost.h"
#include "act_cache.h"

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

/* FLOPs and minimum bytes of a step of nseq segments (q, kv, logit rows r); gemm_flops and
 * gemm_bytes, those of the linear layers and the LM head alone (their weights read once). */
static void step_floor(const struct model_cfg *m, int nseq, int q, int kv, int r, double *flops,
                       double *bytes, double *gemm_flops, double *gemm_bytes)
{
    double h = m->hidden, qd = (double)m->num_heads * m->head_dim, kvd = (double)m->num_kv_heads * m->head_dim;
    double T = (double)nseq * q, R = (double)nseq * r, L = m->num_layers;
    /* a MoE layer reads the experts its T k copies touch (the expected number of distinct ones) */
    const double E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn, S = m->num_shared_experts * Fe;
    const double touched = E > 0 ? E * (1.0 - pow(1.0 - k / E, T)) : 0;
    double lin_flops = 0, lin_params = 0;
    for (int l = 0; l < m->num_layers; l++) {
        const double attn = h * (qd + 2 * kvd) + qd * h;
        if (model_is_moe_layer(m, l)) {
            lin_flops += 2 * T * (attn + h * E + 3 * h * S) + 2 * T * k * 3 * h * Fe;
            lin_params += attn + h * E + 3 * h * S + touched * 3 * h * Fe;
        } else {
            lin_flops += 2 * T * (attn + 3 * h * m->ffn);
            lin_params += attn + 3 * h * m->ffn;
        }
    }
    *gemm_flops = lin_flops + 2 * R * h * m->vocab;
    *flops = *gemm_flops + 4.0 * qd * nseq * (double)q * (q + kv) * L;
    *gemm_bytes = 2 * (lin_params + h * m->vocab);
    *bytes = 2 * (lin_params + 2 * h * m->vocab) + 2.0 * nseq * (kv + q) * 2 * kvd * L + 2.0 * R * m->vocab;
}

/* Median milliseconds of `reps` graph replays of sd (captured now, so with the engine's settings of
 * the moment); says why on stderr when it fails. */
static int replay_ms(struct eng *e, const struct step_desc *sd, int reps, float *ms)
{
    struct ts_err err;
    if (eng_graph_capture(e, sd, &err) || eng_graph_replay(e, reps, ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* A variant of the step under the engine's settings of the moment, captured into kept graph `slot`
 * (replayed side by side with the others by replay_kept) and, with op_ms, profiled eagerly (per-op
 * times); says why on stderr when it fails. */
static int keep_variant(struct eng *e, const struct step_desc *sd, int slot, double *op_ms)
{
    struct ts_err err;
    float eager_ms;
    if (eng_graph_capture(e, sd, &err) || eng_graph_keep(e, slot, &err) ||
        (op_ms && eng_step_profile(e, sd, op_ms, &eager_ms, &err))) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The medians of the kept variants 0..n-1 replayed in turn (eng_graph_replay_kept). */
static int replay_kept(struct eng *e, int n, int reps, float *ms)
{
    struct ts_err err;
    if (eng_graph_replay_kept(e, n, reps, ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Names the warm-up rounds of the replays that follow in the bench's warm-up trace, if any. */
static void trace_as(struct eng *e, const struct engine_bench_opts *o, const char *step, const char *what)
{
    char label[128];
    snprintf(label, sizeof label, "%s: %s", step, what);
    eng_set_warm_trace(e, o->warm_trace, label);
}

struct step_case {
    const char *name;
    int nseq, q, kv, logits;
    double anchor_ms; /* PyTorch eager on an H200 (shared/anchors), for orientation */
};

static void seg_add(struct step_desc *sd, int req, int q, int kv, int logits)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* Fills the caches of requests first .. first + nseq - 1 with a Refresh of `tokens` each: in one
 * step where they fit in a bench step's rows, else sequence by sequence in chunks (each chunk
 * over the ones before); says why on stderr when it fails. */
static int fill_caches(struct eng *e, struct step_desc *sd, int first, int nseq, int tokens)
{
    struct ts_err err;
    if ((int64_t)nseq * tokens <= ENG_BENCH_MAX_TOKENS) { /* every sequence at once */
        step_desc_clear(sd);
        for (int s = 0; s < nseq; s++)
            seg_add(sd, first + s, tokens, 0, 0);
        if (eng_step(e, sd, NULL, NULL, &err))
            goto fail;
        return 0;
    }
    for (int s = 0; s < nseq; s++)
        for (int done = 0; done < tokens; done += ENG_BENCH_MAX_TOKENS) {
            step_desc_clear(sd);
            seg_add(sd, first + s, TS_MIN(tokens - done, ENG_BENCH_MAX_TOKENS), done, 0);
            if (eng_step(e, sd, NULL, NULL, &err))
                goto fail;
        }
    return 0;
fail:
    fprintf(stderr, "engine_bench: filling the caches: %s\n", err.msg);
    return -1;
}

/* The ceilings the floors use: the short-run and the held GEMM rates (FLOP/s), the copy rate (B/s) */
struct ceilings {
    double peak, held, bw;
};

/* A step measured: the median of its graph replays, its floors (FLOPs over the short-run or the
 * held GEMM rate, or bytes over the copy rate; and its linear layers' alone), its workspace beside
 * the simulator's activation estimate (with the knobs that estimate took) */
struct step_meas {
    float ms;
    double fl_ms, by_ms, floor_ms, held_floor_ms, gemm_floor_ms;
    int64_t ws, sim_act;
    struct og_shape shape; /* the step's activation shape, as the simulator plans it */
};

/* the simulator's planned activations for a shape (its default planner, first-fit) */
static int64_t sim_act_bytes(const struct model_cfg *m, const struct og_shape *shape)
{
    int64_t bytes = -1;
    struct ts_err err;
    if (act_planned_bytes(m, planner_find("first-fit"), shape, &bytes, &err))
        fprintf(stderr, "engine_bench: planning the simulator's activations: %s\n", err.msg);
    return bytes;
}

/* Builds in sd the step of nseq sequences (requests first on) of q tokens over kv cached keys, with
 * logit_rows logits each (their caches filled first), replays it as a graph (its warm-up named
 * `label` on the trace) and sets it against its floors; says why on stderr when it fails. */
static int measure_step(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                        const struct ceilings *cl, struct step_desc *sd, int first, int nseq, int q, int kv,
                        int logit_rows, const char *label, struct step_meas *r)
{
    const struct model_cfg *m = &o->model;
    sd->logit_chunk_rows = eo->logit_chunk_rows; /* the bench's chunks, kept by step_desc_clear */
    if (kv > 0 && fill_caches(e, sd, first, nseq, kv + q))
        return -1;
    step_desc_clear(sd);
    for (int s = 0; s < nseq; s++)
        seg_add(sd, first + s, q, kv, logit_rows);
    trace_as(e, o, label, "step");
    if (replay_ms(e, sd, o->reps, &r->ms))
        return -1;
    double flops, bytes, gemm_flops, gemm_bytes;
    step_floor(m, nseq, q, kv, logit_rows, &flops, &bytes, &gemm_flops, &gemm_bytes);
    r->fl_ms = flops / cl->peak * 1e3;
    r->by_ms = bytes / cl->bw * 1e3;
    r->floor_ms = fmax(r->fl_ms, r->by_ms);
    /* the floor at the rate the GEMM holds under the power limit: what a long step can reach */
    r->held_floor_ms = fmax(flops / cl->held * 1e3, r->by_ms);
    r->gemm_floor_ms = fmax(gemm_flops / cl->peak, gemm_bytes / cl->bw) * 1e3;
    r->shape = (struct og_shape){sd->tot.q_tokens, sd->tot.logit_rows, eo->logit_chunk_rows, 1, 0,
                                 eng_ffn_fuses(e, sd->tot.q_tokens), 1, OG_LAYOUT_ENGINE}; /* (one FFN chunk) */
    r->sim_act = sim_act_bytes(m, &r->shape);
    r->ws = eng_step_workspace_bytes(e, sd);
    return 0;
}

/* The bench's engine (the model, its weights, a workspace for a bench step's rows), said on out;
 * says why on stderr when it cannot be made. */
static int bench_engine(const struct engine_bench_opts *o, struct eng_opts *eo, struct eng **e, FILE *out)
{
    const struct model_cfg *m = &o->model;
    struct ts_err err;
    eng_opts_defaults(eo);
    eo->max_tokens = ENG_BENCH_MAX_TOKENS;
    eo->logit_chunk_rows = o->logit_chunk_rows;
    eo->mem_limit = o->mem_limit;
    eo->weights = o->weights;
    eo->warm_s = o->warm_s;
    eo->idle_s = o->idle_s;
    if (eng_create(m, eo, e, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    struct eng_mem mem;
    eng_mem_info(*e, &mem);
    fprintf(out, "engine: %s on %s; weights %.2f GiB, workspace %.2f GiB, KV pool %.2f GiB (%lld tokens)\n",
            m->name, eng_device_name(*e), mem.weights / TS_GIB, mem.workspace / TS_GIB,
            mem.kv_pool / TS_GIB, (long long)mem.kv_pool_tokens);
    return 0;
}

/* The PyTorch anchor's shapes (eng_anchor.h): each of their three steps replayed as a graph against
 * its floor and its floor at the held GEMM rate, with its attention's share of an eager run, and,
 * where the anchor's output gave them, beside PyTorch eager's time and peak activations; then the
 * speed-up's geometric mean. */
static int anchor_grid(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    const struct anchor_run *a = o->anchor;
    struct eng *e = NULL;
    struct eng_opts eo;
    struct step_desc sd;
    step_desc_init(&sd);
    struct ts_err err;
    int rc = -1, next_req = 0, nsp = 0;
    double log_sp = 0, sp_min = INFINITY, sp_max = 0;
    char at_min[64] = "", at_max[64] = "";
    fprintf(out, "\nthe PyTorch anchor's shapes (%s", o->anchor_path ? o->anchor_path : "the script's grid, no times");
    if (a->gemm_tflops > 0 && a->copy_tbps > 0)
        fprintf(out, "; its ceilings: GEMM %.1f TFLOP/s, copy %.2f TB/s", a->gemm_tflops, a->copy_tbps);
    fprintf(out, ")\n");
    if (bench_engine(o, &eo, &e, out))
        goto done;
    fprintf(out, "%-16s %-15s %9s %9s %8s %7s %6s %9s %8s %10s %10s %10s\n", "B x T (masked)", "step", "ms",
            "floor_ms", "x_floor", "x_held", "attn", "torch_ms", "speed-up", "workspace", "sim_est", "torch_act");
    for (int i = 0; i < a->n; i++) {
        const struct anchor_case *c = &a->c[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%d x %d (%d)", c->B, c->T, c->masked);
        for (int st = 0; st < ANCHOR_STEPS; st++) {
            int32_t q, kv, lr;
            anchor_step_shape(c, (enum anchor_step)st, &q, &kv, &lr);
            const char *name = anchor_step_name((enum anchor_step)st);
            if ((int64_t)c->B * q > ENG_BENCH_MAX_TOKENS) {
                fprintf(out, "%-16s %-15s skipped: %d x %d tokens, more than the %d a bench step holds\n", shape,
                        name, c->B, q, ENG_BENCH_MAX_TOKENS);
                continue;
            }
            const int first = next_req;
            next_req += c->B;
            char label[64];
            snprintf(label, sizeof label, "anchor %s, %s", shape, name);
            struct step_meas sm;
            float eager_ms;
            double op_ms[OP_COUNT];
            if (measure_step(e, o, &eo, cl, &sd, first, c->B, q, kv, lr, label, &sm))
                goto done;
            if (eng_step_profile(e, &sd, op_ms, &eager_ms, &err)) {
                fprintf(stderr, "engine_bench: %s\n", err.msg);
                goto done;
            }
            const float ms = sm.ms;
            const double torch_ms = c->ms[st];
            const double torch_act = st < 2 ? c->peak_act_gib[st] : -1;
            char t_ms[16] = "-", sp[16] = "-", t_act[16] = "-";
            if (torch_ms > 0) {
                snprintf(t_ms, sizeof t_ms, "%.3f", torch_ms);
                snprintf(sp, sizeof sp, "%.2f", torch_ms / ms);
                log_sp += log(torch_ms / ms), nsp++;
                if (torch_ms / ms < sp_min)
                    sp_min = torch_ms / ms, snprintf(at_min, sizeof at_min, "%s, %s", shape, name);
                if (torch_ms / ms > sp_max)
                    sp_max = torch_ms / ms, snprintf(at_max, sizeof at_max, "%s, %s", shape, name);
            }
            if (torch_act >= 0)
                snprintf(t_act, sizeof t_act, "%.3fGiB", torch_act);
            fprintf(out, "%-16s %-15s %9.3f %9.3f %8.3f %7.3f %5.1f%% %9s %8s %7.3fGiB %7.3fGiB %10s\n", shape, name,
                    ms, sm.floor_ms, ms / sm.floor_ms, ms / sm.held_floor_ms, 100.0 * op_ms[OP_ATTN] / eager_ms, t_ms,
                    sp, sm.ws / TS_GIB, sm.sim_act / TS_GIB, t_act);
            if (o->json) {
                fprintf(o->json, "{\"anchor_step\":\"%s\",\"B\":%d,\"T\":%d,\"masked\":%d,\"q\":%d,\"kv\":%d,"
                                 "\"logit_rows\":%d,\"ms\":%.4f,\"floor_ms\":%.4f,\"held_floor_ms\":%.4f,"
                                 "\"bound\":\"%s\",\"eager_ms\":%.4f,\"workspace_bytes\":%lld,\"sim_act_bytes\":%lld",
                        name, c->B, c->T, c->masked, q, kv, lr, ms, sm.floor_ms, sm.held_floor_ms,
                        sm.fl_ms >= sm.by_ms ? "compute" : "memory", eager_ms, (long long)sm.ws, (long long)sm.sim_act);
                if (torch_ms > 0)
                    fprintf(o->json, ",\"torch_ms\":%.4f", torch_ms);
                if (torch_act >= 0)
                    fprintf(o->json, ",\"torch_peak_act_gib\":%.4f", torch_act);
                for (int op = 0; op < OP_COUNT; op++)
                    fprintf(o->json, ",\"%s_ms\":%.4f", cost_op_name((enum cost_op)op), op_ms[op]);
                fprintf(o->json, "}\n");
            }
            for (int s = 0; s < c->B; s++)
                eng_release(e, first + s);
        }
    }
    if (nsp > 0)
        fprintf(out, "speed-up over PyTorch eager: geometric mean %.2f x over %d steps, from %.2f x (%s) to "
                     "%.2f x (%s)\n", exp(log_sp / nsp), nsp, sp_min, at_min, sp_max, at_max);
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
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

/* A step's variants, side by side, each group's replays interleaved (a variant timed after the
 * others would meet a card they left hotter): programmatic against plain launches, either
 * attention kernel alone, the FFN split, fused and auto where the fused kernel runs; then its
 * linear layers and LM head alone and all but them, each as a graph (how near the GEMMs alone come
 * to the step's floor, under the clock the step runs at). */
struct variants {
    float launch_ms[2], impl_ms[2], ffn_ms[3], smooth_ms[2], lin_ms, rest_ms;
    double impl_op_ms[2][OP_COUNT], ffn_op_ms[3][OP_COUNT], smooth_op_ms[2][OP_COUNT];
    bool fused_runs;
};

static int bench_variants(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                          const struct step_case *c, const struct step_desc *sd, struct variants *v)
{
    struct ts_err err;
    memset(v, 0, sizeof *v);
    int bad = keep_variant(e, sd, 0, NULL);
    k_set_pdl(0);
    bad = bad || keep_variant(e, sd, 1, NULL);
    k_set_pdl(1);
    trace_as(e, o, c->name, "programmatic / plain launches");
    bad = bad || replay_kept(e, 2, o->reps, v->launch_ms);
    for (int impl = 0; impl < 2 && !bad; impl++) {
        eng_set_attention(e, impl);
        bad = keep_variant(e, sd, impl, v->impl_op_ms[impl]);
    }
    eng_set_attention(e, eo->attention);
    trace_as(e, o, c->name, "mma.sync / wgmma attention");
    bad = bad || replay_kept(e, 2, o->reps, v->impl_ms);
    v->fused_runs = eng_ffn_fused_runs(e);
    for (int f = 0; f < 3 && v->fused_runs && !bad; f++) {
        eng_set_ffn(e, f);
        bad = keep_variant(e, sd, f, v->ffn_op_ms[f]);
    }
    eng_set_ffn(e, eo->ffn);
    trace_as(e, o, c->name, "FFN split / fused / auto");
    bad = bad || (v->fused_runs && replay_kept(e, 3, o->reps, v->ffn_ms));
    struct step_desc smooth = *sd; /* the same segments with dInfer's IterSmooth */
    smooth.iter_smooth = true;
    bad = bad || keep_variant(e, sd, 0, v->smooth_op_ms[0]) || keep_variant(e, &smooth, 1, v->smooth_op_ms[1]);
    trace_as(e, o, c->name, "without / with IterSmooth");
    bad = bad || replay_kept(e, 2, o->reps, v->smooth_ms);
    /* one whole step under the default settings first: the ops left out would otherwise leave
     * their outputs as the variants before wrote them under other plans (possibly never written:
     * zeros run GEMMs faster and cooler), and the kept ones read those */
    if (!bad && eng_step(e, sd, NULL, NULL, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        bad = 1;
    }
    if (!bad) {
        const uint32_t lin_ops = eng_linear_ops();
        eng_set_skip_ops(e, ~lin_ops);
        trace_as(e, o, c->name, "linear layers alone");
        bad = replay_ms(e, sd, o->reps, &v->lin_ms);
        eng_set_skip_ops(e, lin_ops);
        trace_as(e, o, c->name, "all but the linear layers");
        bad = bad || replay_ms(e, sd, o->reps, &v->rest_ms);
        eng_set_skip_ops(e, 0);
    }
    return bad ? -1 : 0;
}

/* The variants said on out and o->json, beside the step's floors; the fused FFN's workspace beside
 * the simulator's estimate of it. */
static void report_variants(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                            const struct step_case *c, const struct step_desc *sd, const struct step_meas *sm,
                            const struct variants *v, FILE *out)
{
    const double floor_ms = sm->floor_ms, lin_floor_ms = sm->gemm_floor_ms;
    fprintf(out, "    linear layers + LM head alone (with the final norm) %.3f ms: %.3f x their floor "
                 "(%.3f ms), %.3f x the step's; all but them %.3f ms\n", v->lin_ms, v->lin_ms / lin_floor_ms,
            lin_floor_ms, v->lin_ms / floor_ms, v->rest_ms);
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"gemm_only_ms\":%.4f,\"gemm_floor_ms\":%.4f,"
                         "\"x_floor_gemm_only\":%.4f,\"non_gemm_ms\":%.4f}\n", c->name, v->lin_ms, lin_floor_ms,
                v->lin_ms / floor_ms, v->rest_ms);
    fprintf(out, "    side by side: plain launches %.3f ms (%.3f x floor), programmatic %.3f ms: it saves %.1f%%\n",
            v->launch_ms[1], v->launch_ms[1] / floor_ms, v->launch_ms[0],
            100.0 * (1.0 - v->launch_ms[0] / v->launch_ms[1]));
    fprintf(out, "    side by side: without IterSmooth %.3f ms, with it %.3f ms (+%.1f%%); eager, the LM head %.3f and %.3f "
                 "ms, sampling %.3f and %.3f ms\n", v->smooth_ms[0], v->smooth_ms[1],
            100.0 * (v->smooth_ms[1] / v->smooth_ms[0] - 1.0), v->smooth_op_ms[0][OP_LM_HEAD],
            v->smooth_op_ms[1][OP_LM_HEAD], v->smooth_op_ms[0][OP_SAMPLE], v->smooth_op_ms[1][OP_SAMPLE]);
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"iter_smooth_ms\":%.4f,\"plain_ms\":%.4f,\"lm_head_ms\":[%.4f,%.4f],"
                         "\"sample_ms\":[%.4f,%.4f]}\n", c->name, v->smooth_ms[1], v->smooth_ms[0],
                v->smooth_op_ms[0][OP_LM_HEAD], v->smooth_op_ms[1][OP_LM_HEAD], v->smooth_op_ms[0][OP_SAMPLE],
                v->smooth_op_ms[1][OP_SAMPLE]);
    fprintf(out, "    side by side: mma.sync attention %.3f ms (%.3f x floor), wgmma %.3f ms (%.3f x); eager, "
                 "their attention %.2f and %.2f ms\n", v->impl_ms[0], v->impl_ms[0] / floor_ms, v->impl_ms[1],
            v->impl_ms[1] / floor_ms, v->impl_op_ms[0][OP_ATTN], v->impl_op_ms[1][OP_ATTN]);
    if (v->fused_runs) {
        eng_set_ffn(e, 2);
        const bool auto_fuses = eng_ffn_fuses(e, c->nseq * c->q);
        eng_set_ffn(e, 0); /* both plans' workspace, and the simulator's estimate of the fused one */
        const int64_t ws_split = eng_step_workspace_bytes(e, sd);
        eng_set_ffn(e, 1);
        const int64_t ws_fused = eng_step_workspace_bytes(e, sd);
        eng_set_ffn(e, eo->ffn);
        struct og_shape fused = sm->shape;
        fused.fused_ffn = true;
        fprintf(out, "    side by side: FFN split %.3f ms (%.3f x floor), fused %.3f ms (%.3f x), auto (%s) "
                     "%.3f ms (%.3f x); eager, their gate_up + act %.2f, %.2f and %.2f ms\n", v->ffn_ms[0],
                v->ffn_ms[0] / floor_ms, v->ffn_ms[1], v->ffn_ms[1] / floor_ms, auto_fuses ? "fused" : "split",
                v->ffn_ms[2], v->ffn_ms[2] / floor_ms, v->ffn_op_ms[0][OP_GATE_UP] + v->ffn_op_ms[0][OP_ACT],
                v->ffn_op_ms[1][OP_GATE_UP] + v->ffn_op_ms[1][OP_ACT],
                v->ffn_op_ms[2][OP_GATE_UP] + v->ffn_op_ms[2][OP_ACT]);
        fprintf(out, "    fused FFN workspace %.3f GiB (simulator's estimate %.3f GiB) against %.3f GiB split\n",
                ws_fused / TS_GIB, sim_act_bytes(&o->model, &fused) / TS_GIB,
                ws_split / TS_GIB);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"split_ffn_ms\":%.4f,\"fused_ffn_ms\":%.4f,"
                             "\"auto_ffn_ms\":%.4f}\n", c->name, v->ffn_ms[0], v->ffn_ms[1], v->ffn_ms[2]);
    }
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"plain_launch_ms\":%.4f,\"programmatic_launch_ms\":%.4f}\n"
                         "{\"case\":\"%s\",\"mma_attention_ms\":%.4f,\"wgmma_attention_ms\":%.4f}\n",
                c->name, v->launch_ms[1], v->launch_ms[0], c->name, v->impl_ms[0], v->impl_ms[1]);
}

/* One eager run of the step with an event after each op, its times said by op. */
static int report_eager(struct eng *e, const struct engine_bench_opts *o, const struct step_case *c,
                        const struct step_desc *sd, FILE *out)
{
    double op_ms[OP_COUNT];
    float eager_ms;
    struct ts_err err;
    if (eng_step_profile(e, sd, op_ms, &eager_ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    fprintf(out, "    eager %.3f ms by op:", eager_ms);
    for (int op = 0; op < OP_COUNT; op++)
        if (op_ms[op] > 0.0005)
            fprintf(out, " %s %.2f", cost_op_name((enum cost_op)op), op_ms[op]);
    fprintf(out, "\n");
    if (o->json) {
        fprintf(o->json, "{\"case\":\"%s\",\"eager_ms\":%.4f", c->name, eager_ms);
        for (int op = 0; op < OP_COUNT; op++)
            fprintf(o->json, ",\"%s_ms\":%.4f", cost_op_name((enum cost_op)op), op_ms[op]);
        fprintf(o->json, "}\n");
    }
    return 0;
}

/* The bench's steps (the default four, or the user's --step ones): each against its floors and
 * beside PyTorch's recorded time, then its variants and its ops; then the GEMMs tuned. */
/* A --step's name, on the output and the warm trace (tessera calib clock reads it back). */
static void step_label(char *buf, size_t len, const int32_t st[4])
{
    snprintf(buf, len, "step %dx%d over %d cached, %d logits", st[0], st[1], st[2], st[3]);
}

static int bench_steps(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const struct step_case default_cases[] = {
        {"refresh 16x512, all logits", 16, 512, 0, 512, 244.376},
        {"refresh 16x512, 256 masked logits", 16, 512, 0, 256, 242.08},
        {"reuse 1 x 32 over 480 cached", 1, 32, 480, 32, 31.067},
        {"reuse 16 x 32 over 480 cached", 16, 32, 480, 32, 33.824},
    };
    struct step_case own[ENG_BENCH_MAX_STEPS]; /* --step: the user's steps, named by their shape */
    char own_names[ENG_BENCH_MAX_STEPS][80];
    for (int k = 0; k < o->nsteps; k++) {
        const int32_t *st = o->steps[k];
        step_label(own_names[k], sizeof own_names[k], st);
        own[k] = (struct step_case){own_names[k], st[0], st[1], st[2], st[3], 0};
    }
    const struct step_case *cases = o->nsteps ? own : default_cases;
    const size_t ncases = o->nsteps ? (size_t)o->nsteps : TS_ARRAY_LEN(default_cases);
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    int rc = -1, next_req = 0;
    if (bench_engine(o, &eo, &e, out))
        goto done;
    if (!o->nsteps)
        fprintf(out, "\n(torch_ms: PyTorch eager from the anchor's recorded H200 run, ../shared/anchors, for "
                     "orientation; make bench-engine ANCHOR=... runs it beside this bench)");
    fprintf(out, "\n%-36s %9s %9s %9s %8s %10s %12s %12s\n", "step", "ms", "floor_ms", "bound",
            "x_floor", "torch_ms", "workspace", "sim_act_est");
    for (size_t i = 0; i < ncases; i++) {
        const struct step_case *c = &cases[i];
        struct step_meas sm;
        struct variants v;
        if (measure_step(e, o, &eo, cl, &sd, next_req, c->nseq, c->q, c->kv, c->logits, c->name, &sm))
            goto done;
        char torch[16] = "-";
        if (c->anchor_ms > 0)
            snprintf(torch, sizeof torch, "%.3f", c->anchor_ms);
        fprintf(out, "%-36s %9.3f %9.3f %9s %8.3f %10s %10.3fGiB %10.3fGiB\n", c->name, sm.ms, sm.floor_ms,
                sm.fl_ms >= sm.by_ms ? "compute" : "memory", sm.ms / sm.floor_ms, torch, sm.ws / TS_GIB,
                sm.sim_act / TS_GIB);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"ms\":%.4f,\"floor_ms\":%.4f,\"compute_floor_ms\":%.4f,"
                             "\"memory_floor_ms\":%.4f,\"x_floor\":%.4f,\"workspace_bytes\":%lld,"
                             "\"sim_act_bytes\":%lld}\n", c->name, sm.ms, sm.floor_ms, sm.fl_ms, sm.by_ms,
                    sm.ms / sm.floor_ms, (long long)sm.ws, (long long)sm.sim_act);
        fprintf(out, "    floor at the held GEMM rate %.3f ms: %.3f x\n", sm.held_floor_ms, sm.ms / sm.held_floor_ms);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"held_floor_ms\":%.4f,\"x_held_floor\":%.4f}\n", c->name,
                    sm.held_floor_ms, sm.ms / sm.held_floor_ms);
        if (bench_variants(e, o, &eo, c, &sd, &v))
            goto done;
        report_variants(e, o, &eo, c, &sd, &sm, &v, out);
        if (report_eager(e, o, c, &sd, out))
            goto done;
        for (int s = 0; s < c->nseq; s++)
            eng_release(e, next_req + s);
        next_req += c->nseq;
    }
    fprintf(out, "\ntuned GEMMs of those steps (cuBLASLt, fastest of the heuristic's candidates):\n");
    eng_report_gemms(e, out);
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}

/* FOCUS's eviction at a batch of nseq sequences' blocks of 32 over 480 cached keys (the caches of
 * sequences 0..nseq-1 filled): the whole block through every layer beside evicting steps that keep K
 * of its 32 rows after layers 0 and 1 (the block's rows its candidates, logits for the kept ones),
 * each replayed after its own warm-up. Beyond layer 1 a step takes its time less the full step's two
 * front layers' share (2 / layers of it): the goal is at most K / 32 + 0.15 of the full step's.
 * Block-causal models attend block-causally, as the focus policy runs them. */
static int focus_at(struct eng *e, const struct engine_bench_opts *o, const struct ceilings *cl, int nseq, FILE *out)
{
    enum { B = 32, KV = 480 };
    static const int keep[] = {2, 4, 8, 16, 32};
    const int nv = 1 + (int)TS_ARRAY_LEN(keep);
    const struct model_cfg *m = &o->model;
    struct step_desc sd[1 + TS_ARRAY_LEN(keep)];
    for (int v = 0; v < nv; v++) {
        step_desc_init(&sd[v]);
        sd[v].logit_chunk_rows = o->logit_chunk_rows;
        sd[v].attn_block = m->block_causal ? B : 0;
        sd[v].front_layers = 2;
        sd[v].evict = v > 0;
    }
    float ms[1 + TS_ARRAY_LEN(keep)], last;
    int rc = -1;
    for (int s = 0; s < nseq; s++) {
        seg_add(&sd[0], s, B, KV, B);
        for (int v = 1; v < nv; v++) {
            const struct segment g = {.req_id = s, .phase = PHASE_BLOCK, .q = keep[v - 1], .kv = KV + B - keep[v - 1],
                                      .kv_write = keep[v - 1], .logit_rows = keep[v - 1], .q_front = B,
                                      .kv_front = KV, .kv_write_front = B, .probe = B, .picked = keep[v - 1]};
            step_desc_add(&sd[v], &g);
        }
    }
    /* in turn, the whole block both first and last (kept graphs share one plan's metadata, so steps
     * of different plans cannot be replayed side by side): its time is the mean of the two */
    for (int v = 0; v <= nv; v++) {
        char label[32];
        snprintf(label, sizeof label, "focus %d %d", nseq, v);
        trace_as(e, o, label, "step");
        if (replay_ms(e, &sd[v % nv], o->reps, v < nv ? &ms[v] : &last))
            goto done;
    }
    ms[0] = (ms[0] + last) / 2;
    const double front = ms[0] * 2.0 / m->num_layers, beyond = ms[0] - front;
    fprintf(out, "\nFOCUS's eviction, %d x %d over %d cached keys%s (the full block, then K of its %d kept after "
                 "layer 1;\nfloor: the later layers' and LM head's floor beyond layer 1, as a share of the full "
                 "step's time there):\n%-10s %9s %9s %14s %9s %9s\n", nseq, B, KV,
            m->block_causal ? ", block-causal" : "", B, "kept", "ms", "x_full", "beyond_layer1", "floor", "goal");
    fprintf(out, "%-10s %9.3f %9.3f %14.3f %9s %9s\n", "all 32", ms[0], 1.0, 1.0, "-", "-");
    for (int v = 1; v < nv; v++) {
        const int K = keep[v - 1];
        const double r = (ms[v] - front) / beyond, goal = K / (double)B + 0.15;
        double flops, bytes, gflops, gbytes; /* the same rows through every layer, less the two front ones */
        step_floor(m, nseq, K, KV + B - K, K, &flops, &bytes, &gflops, &gbytes);
        const double later = (m->num_layers - 2.0) / m->num_layers;
        const double floor = fmax(flops * later / cl->peak, bytes * later / cl->bw) * 1e3 / beyond;
        fprintf(out, "%-10d %9.3f %9.3f %14.3f %9.3f %9.3f%s\n", K, ms[v], ms[v] / ms[0], r, floor, goal,
                r <= goal ? "" : floor > goal ? "  (goal below the floor)" : "  (over)");
        if (o->json)
            fprintf(o->json, "{\"case\":\"focus %dx%d over %d, keep %d\",\"ms\":%.4f,\"full_ms\":%.4f,"
                             "\"beyond_layer1\":%.4f,\"floor\":%.4f,\"goal\":%.4f}\n", nseq, B, KV, K, ms[v], ms[0],
                    r, floor, goal);
    }
    rc = 0;
done:
    for (int v = 0; v < nv; v++)
        step_desc_free(&sd[v]);
    return rc;
}

/* FOCUS's eviction (focus_at) at 16 sequences, the Reuse steps' batch elsewhere in the bench, and at
 * 32 and 64, the smallest batches FOCUS's throughput runs (its Fig. 6: 32 to 256) */
static int bench_focus(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const int batches[] = {16, 32, 64};
    const int most = batches[TS_ARRAY_LEN(batches) - 1];
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc fill;
    step_desc_init(&fill);
    fill.attn_block = o->model.block_causal ? 32 : 0;
    int rc = -1;
    if (bench_engine(o, &eo, &e, out) || fill_caches(e, &fill, 0, most, 480 + 32))
        goto done;
    for (size_t i = 0; i < TS_ARRAY_LEN(batches); i++)
        if (focus_at(e, o, cl, batches[i], out))
            goto done;
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&fill);
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

/* --only clock: each step of the ladder (or the --step ones) alone, its warm-up traced from a cool card:
 * Reuse and Refresh steps from a light load to the heaviest a serving schedule runs. */
static int bench_clock(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const int32_t ladder[][4] = {{1, 32, 480, 32}, {1, 64, 0, 64},   {1, 128, 0, 128},  {1, 256, 0, 256},
                                        {1, 384, 0, 384}, {1, 768, 0, 768}, {8, 32, 480, 32}, {16, 32, 480, 32}};
    const int n = o->nsteps ? o->nsteps : (int)TS_ARRAY_LEN(ladder);
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    int rc = -1, next_req = 0;
    if (bench_engine(o, &eo, &e, out))
        goto done;
    fprintf(out, "\nthe clock under the power limit: each step from a card idle for %.1f s, warmed up for %.1f s "
                 "(the warm trace)\n%-36s %9s\n", eo.idle_s, eo.warm_s, "step", "held_ms");
    for (int i = 0; i < n; i++) {
        const int32_t *st = o->nsteps ? o->steps[i] : ladder[i];
        char name[80];
        step_label(name, sizeof name, st);
        struct step_meas sm;
        if (measure_step(e, o, &eo, cl, &sd, next_req, st[0], st[1], st[2], st[3], name, &sm))
            goto done;
        fprintf(out, "%-36s %9.3f\n", name, sm.ms);
        for (int s = 0; s < st[0]; s++)
            eng_release(e, next_req + s);
        next_req += st[0];
    }
    rc = 0;
done:
    step_desc_free(&sd);
    eng_destroy(e);
    return rc;
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
        return bench_clock(o, &cl, out) ? 1 : 0;
    if ((all || strcmp(o->only, "steps") == 0) && bench_steps(o, &cl, out))
        return 1;
    if (all || strcmp(o->only, "gemm") == 0)
        gemm_table(&o->model, o->reps, cl.peak, cl.bw, out, o->json);
    if (all || strcmp(o->only, "attention") == 0)
        bench_attention(o, out);
    if ((all || strcmp(o->only, "focus") == 0) && bench_focus(o, &cl, out))
        return 1;
    if (o->anchor && anchor_grid(o, &cl, out))
        return 1;
    return 0;
}
