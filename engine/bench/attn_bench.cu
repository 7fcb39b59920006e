/*
 * attn_bench.cu: the attention kernel alone on the shapes of engine bench, for tuning it: built with
 * the kernel sources directly, so variants of attention.cu (compile-time switches) can be built
 * side by side and timed alternately in one GPU call.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90a -Isim -Ikernels engine/bench/attn_bench.cu \
 *        kernels/attention.cu kernels/attention_wgmma.cu kernels/elementwise.cu -o attn_bench
 *   ./attn_bench [reps] [nseq:q:kv[+nseq:q:kv...] ...]  (default: 16:512:0 1:2048:0 16:32:480 1:32:480)
 *
 * Prints, per shape, the median over 7 timed batches of `reps` launches (CUDA events, after a
 * warm-up) and the TFLOP/s of 4 d H nseq q (q + kv) FLOPs; LLaDA-8B's heads (32 x 128, MHA), pages
 * of 16 tokens in order, as engine bench's attention table. ATTN_IMPL=0|1|2 picks k_attn_args.impl
 * (0, the mma.sync kernel, by default); ATTN_SINGLE=1 times each launch alone between two events
 * and a synchronisation instead (engine bench's and sdpa_bench.py's method; median of reps). A
 * shape joined by '+' mixes groups in one step (1:512:0+15:32:480: a Refresh beside 15 Reuse
 * blocks); its tiles are listed as eng_plan lists them (k_attention_tiles) and k_attn_args'
 * long_tiles and wg_tiles given, unless ATTN_UNORDERED=1 (each kernel then walks every tile).
 * ATTN_SPLITS=N forces N key splits on the mma.sync launch (k_attn_args.splits) instead of
 * k_attention_split_rule's, for measuring the rule. ATTN_CHECK=1 also compares each shape's output
 * with the mma.sync kernel's (impl 0, heads not packed) on the same inputs and prints the largest difference
 * relative to the largest output (a variant's quick check; engine check is the real one).
 * ATTN_BS=N makes the attention block-causal over blocks of N tokens (the block policy's, k_attn_args
 * block_size; TFLOP/s still counts every query-key pair). ATTN_HKV=N gives the model N K/V heads
 * (GQA; 32 by default, as many as the query heads; SDAR-8B has 8), ATTN_PACK=P makes a block of the mma.sync kernel take
 * P query heads together where that fits (k_attn_args.head_pack; 1: none; by default the rule's).
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "bench_check.h"
#include "kernels.h"

struct group {
    int nseq, q, kv;
};

/* Segments of the groups in order, their tiles listed as eng_plan lists them (k_attention_tiles;
 * k_attn_args' long_tiles and wg_tiles given unless ATTN_UNORDERED is set) */
static double shape_ms(const std::vector<group> &gs, int reps, int impl, bool single)
{
    const int H = 32, Hkv = getenv("ATTN_HKV") ? atoi(getenv("ATTN_HKV")) : 32, d = 128, pt = 16;
    std::vector<int32_t> qs, ql, kl, kc, po, pg, tl;
    int T = 0, npages = 0, max_keys = 0, min_q = 1 << 30, max_q = 0, long_tiles = 0, long_rows = 0;
    for (const group &g : gs)
        for (int s = 0; s < g.nseq; s++) {
            const int keys = g.kv + g.q, per = (keys + pt - 1) / pt;
            qs.push_back(T), ql.push_back(g.q), kl.push_back(keys), kc.push_back(g.kv), po.push_back(npages);
            for (int i = 0; i < per; i++)
                pg.push_back(npages + i);
            npages += per, T += g.q;
            max_keys = std::max(max_keys, keys), min_q = std::min(min_q, g.q), max_q = std::max(max_q, g.q);
        }
    int ntl = 0, wg_tiles = 0;
    for (int32_t q : ql)
        ntl += (q + K_ATTN_TILE_M - 1) / K_ATTN_TILE_M;
    tl.resize(2 * (size_t)ntl);
    k_attention_tiles((int)ql.size(), ql.data(), tl.data(), &long_tiles, &long_rows, &wg_tiles);
    const int nseq = (int)ql.size();
    std::vector<int32_t> meta;
    for (auto *v : {&qs, &ql, &kl, &kc, &po, &pg, &tl})
        meta.insert(meta.end(), v->begin(), v->end());
    const size_t slots = (size_t)npages * pt;
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
    a.scale = 1.f / sqrtf((float)d), a.ws = ws, a.ws_bytes = ws_bytes, a.T = T, a.max_key_len = max_keys;
    a.impl = impl;
    if (getenv("ATTN_SPLITS")) /* the mma.sync launch's key splits, instead of the rule's */
        a.splits = atoi(getenv("ATTN_SPLITS"));
    if (getenv("ATTN_BS")) /* block-causal, blocks of ATTN_BS tokens (the block policy's attention) */
        a.block_size = atoi(getenv("ATTN_BS"));
#if K_ATTN_RULES >= 4 /* (a build against kernels from before the packing has no head_pack) */
    if (getenv("ATTN_PACK")) /* the query heads a block takes together, instead of the rule's */
        a.head_pack = atoi(getenv("ATTN_PACK"));
#endif
    a.min_q_len = min_q, a.max_q_len = max_q;
    if (!getenv("ATTN_UNORDERED"))
        a.long_tiles = long_tiles, a.long_rows = long_rows, a.wg_tiles = wg_tiles;
    if (getenv("ATTN_CHECK")) { /* against the mma.sync kernel */
        bf16_t *ref;
        CK(cudaMalloc(&ref, 2 * (size_t)T * H * d));
        k_attn_args r = a;
        r.impl = 0, r.o = ref;
#if K_ATTN_RULES >= 4
        r.head_pack = 1;
#endif
        CK(cudaMemset(dout, 0xff, 2 * (size_t)T * H * d)); /* NaN: rows left unwritten show */
        CK((cudaError_t)k_attention(&r, 0));
        CK((cudaError_t)k_attention(&a, 0));
        CK(cudaDeviceSynchronize());
        printf("  check: largest difference from the mma.sync kernel %.3g of the largest output\n",
               max_rel_diff(ref, dout, (size_t)T * H * d));
        cudaFree(ref);
    }
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
        std::vector<group> gs;
        double flops = 0;
        for (const char *p = s; *p;) {
            group g;
            int used = 0;
            if (sscanf(p, "%d:%d:%d%n", &g.nseq, &g.q, &g.kv, &used) != 3 || g.nseq < 1 || g.q < 1 || g.kv < 0 ||
                (p[used] && p[used] != '+')) {
                fprintf(stderr, "attn_bench: shape '%s' is not nseq:q:kv[+nseq:q:kv...]\n", s);
                return 2;
            }
            gs.push_back(g);
            flops += 4.0 * 128 * 32 * (double)g.nseq * g.q * (g.q + g.kv);
            p += used + (p[used] == '+');
        }
        double ms = shape_ms(gs, reps, impl ? atoi(impl) : 0, getenv("ATTN_SINGLE") != NULL);
        printf("%-24s %9.4f ms %8.1f TFLOP/s\n", s, ms, flops / (ms * 1e-3) / 1e12);
    }
    return 0;
}
