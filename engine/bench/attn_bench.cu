/*
 * attn_bench.cu: the attention kernel alone on the shapes of engine bench, for tuning it: built with
 * the kernel sources directly, so variants of attention.cu (compile-time switches) can be built
 * side by side and timed alternately in one GPU call.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90a -Isim -Ikernels engine/bench/attn_bench.cu \
 *        kernels/attention.cu kernels/attention_wgmma.cu kernels/elementwise.cu -o attn_bench
 *   ./attn_bench [reps] [nseq:q:kv ...]      (default: 16:512:0 1:2048:0 16:32:480 1:32:480)
 *
 * Prints, per shape, the median over 7 timed batches of `reps` launches (CUDA events, after a
 * warm-up) and the TFLOP/s of 4 d H nseq q (q + kv) FLOPs; LLaDA-8B's heads (32 x 128, MHA), pages
 * of 16 tokens in order, as engine bench's attention table. ATTN_IMPL=0|1|2 picks k_attn_args.impl
 * (0, the mma.sync kernel, by default); ATTN_SINGLE=1 times each launch alone between two events
 * and a synchronisation instead (engine bench's and sdpa_bench.py's method; median of reps).
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "kernels.h"

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static double shape_ms(int nseq, int q, int kv, int reps, int impl, bool single)
{
    const int H = 32, Hkv = 32, d = 128, pt = 16, keys = kv + q, T = nseq * q;
    const int per = (keys + pt - 1) / pt;
    std::vector<int32_t> qs(nseq), ql(nseq), kl(nseq), kc(nseq), po(nseq), pg, tl;
    for (int s = 0; s < nseq; s++) {
        qs[s] = s * q, ql[s] = q, kl[s] = keys, kc[s] = kv, po[s] = s * per;
        for (int i = 0; i < per; i++)
            pg.push_back(s * per + i);
        for (int q0 = 0; q0 < q; q0 += K_ATTN_TILE_M)
            tl.push_back(s), tl.push_back(q0);
    }
    std::vector<int32_t> meta;
    for (auto *v : {&qs, &ql, &kl, &kc, &po, &pg, &tl})
        meta.insert(meta.end(), v->begin(), v->end());
    const size_t slots = (size_t)nseq * per * pt;
    bf16_t *dq, *dk, *dv, *dout;
    int32_t *dm;
    void *ws;
    const int64_t ws_bytes = 64LL << 20;
    CK(cudaMalloc(&dq, 2 * (size_t)T * H * d));
    CK(cudaMalloc(&dout, 2 * (size_t)T * H * d));
    CK(cudaMalloc(&dk, 2 * slots * Hkv * d));
    CK(cudaMalloc(&dv, 2 * slots * Hkv * d));
    CK(cudaMalloc(&dm, 4 * meta.size()));
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMemcpy(dm, meta.data(), 4 * meta.size(), cudaMemcpyHostToDevice));
    CK((cudaError_t)k_fill_random(dq, (int64_t)T * H * d, 1, 1.f, 0));
    CK((cudaError_t)k_fill_random(dk, (int64_t)slots * Hkv * d, 2, 1.f, 0));
    CK((cudaError_t)k_fill_random(dv, (int64_t)slots * Hkv * d, 3, 1.f, 0));
    k_attn_args a = {};
    a.q = dq, a.q_stride = H * d, a.k_pool = dk, a.v_pool = dv, a.o = dout;
    a.q_start = dm, a.q_len = dm + nseq, a.key_len = dm + 2 * nseq, a.kv_cached = dm + 3 * nseq;
    a.page_off = dm + 4 * nseq, a.pages = dm + 5 * nseq, a.tiles = a.pages + pg.size();
    a.num_tiles = (int)tl.size() / 2, a.H = H, a.Hkv = Hkv, a.d = d, a.page_tokens = pt, a.page_shift = 4;
    a.scale = 1.f / sqrtf((float)d), a.ws = ws, a.ws_bytes = ws_bytes, a.T = T, a.max_key_len = keys;
    a.impl = impl;
    a.min_q_len = a.max_q_len = q;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        CK((cudaError_t)k_attention(&a, 0));
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    if (single) { /* engine bench's and sdpa_bench.py's method: each launch alone between events */
        for (int i = 0; i < reps; i++) {
            CK(cudaEventRecord(e0));
            CK((cudaError_t)k_attention(&a, 0));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms);
        }
    } else {
        for (int b = 0; b < 7; b++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < reps; i++)
                CK((cudaError_t)k_attention(&a, 0));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms / reps);
        }
    }
    std::sort(t.begin(), t.end());
    cudaFree(dq), cudaFree(dout), cudaFree(dk), cudaFree(dv), cudaFree(dm), cudaFree(ws);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return t[t.size() / 2];
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    std::vector<const char *> shapes;
    for (int i = 2; i < argc; i++)
        shapes.push_back(argv[i]);
    if (shapes.empty())
        shapes = {"16:512:0", "1:2048:0", "16:32:480", "1:32:480"};
    const char *impl = getenv("ATTN_IMPL");
    for (const char *s : shapes) {
        int nseq, q, kv;
        if (sscanf(s, "%d:%d:%d", &nseq, &q, &kv) != 3 || nseq < 1 || q < 1 || kv < 0) {
            fprintf(stderr, "attn_bench: shape '%s' is not nseq:q:kv\n", s);
            return 2;
        }
        double ms = shape_ms(nseq, q, kv, reps, impl ? atoi(impl) : 0, getenv("ATTN_SINGLE") != NULL);
        double flops = 4.0 * 128 * 32 * (double)nseq * q * (q + kv);
        printf("%-12s %9.4f ms %8.1f TFLOP/s\n", s, ms, flops / (ms * 1e-3) / 1e12);
    }
    return 0;
}
