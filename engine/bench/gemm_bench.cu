/*
 * gemm_bench.cu: the fused FFN kernel (k_gemm_swiglu, kernels/gemm_wgmma.cu: the gate/up GEMM with
 * SwiGLU in its epilogue) beside the split path (cuBLAS's GEMM into [M, 2F], then k_swiglu) on the
 * same data, alternating in one process. Prints, per row count M: both medians (CUDA events, after
 * warm-up), the fused kernel's TFLOP/s, and the largest difference of the outputs relative to the
 * largest output (the fused output is poisoned first, so an unwritten element shows); then the
 * fused kernel's small-row forms (k_gemm_swiglu_v) each alone: without either (all 128 rows of a
 * tile loaded and multiplied), with X's box fitted to the rows only, with idle warpgroups skipped
 * only.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90a -Isim -Ikernels engine/bench/gemm_bench.cu kernels/elementwise.cu \
 *        kernels/attention.cu kernels/attention_wgmma.cu kernels/gemm_wgmma.cu -lcublas -o gemm_bench
 *   ./gemm_bench [K F M...]        (default: LLaDA-8B's 4096 12288, M = 32 512 2048 8192)
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_check.h"
#include "kernels.h"
#define CB(x)                                                                                                \
    do {                                                                                                     \
        cublasStatus_t s_ = (x);                                                                             \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_);               \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int main(int argc, char **argv)
{
    const int K = argc > 2 ? atoi(argv[1]) : 4096, F = argc > 2 ? atoi(argv[2]) : 12288;
    std::vector<int> Ms;
    for (int i = 3; i < argc; i++)
        Ms.push_back(atoi(argv[i]));
    if (Ms.empty())
        Ms = {32, 512, 2048, 8192};
    if (!k_gemm_swiglu_fits(K, F) || *std::min_element(Ms.begin(), Ms.end()) <= 0) {
        fprintf(stderr, "gemm_bench: K %d F %d: the fused kernel needs K %% 64 == 0, F %% 128 == 0, rows > 0\n", K, F);
        return 2;
    }
    const int Mmax = *std::max_element(Ms.begin(), Ms.end());
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (!k_gemm_wgmma_ready((k_stream)st)) {
        fprintf(stderr, "gemm_bench: the fused kernel does not run here (no sm_90a image or TMA encoder)\n");
        return 1;
    }
    printf("fused kernel: %d blocks a launch at most (%d for one row tile)\n", k_gemm_swiglu_blocks(Mmax),
           k_gemm_swiglu_blocks(1));
    bf16_t *x, *w, *gu, *ref, *out;
    CK(cudaMalloc(&x, (size_t)Mmax * K * 2));
    CK(cudaMalloc(&w, (size_t)2 * F * K * 2));
    CK(cudaMalloc(&gu, (size_t)Mmax * 2 * F * 2));
    CK(cudaMalloc(&ref, (size_t)Mmax * F * 2));
    CK(cudaMalloc(&out, (size_t)Mmax * F * 2));
    CK(k_fill_random(x, (int64_t)Mmax * K, 1, 1.0f, (k_stream)st));
    CK(k_fill_random(w, (int64_t)2 * F * K, 2, 1.0f / sqrtf((float)K), (k_stream)st));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, st));
    const float one = 1.f, zero = 0.f;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%-7s %-6s %-6s %12s %12s %8s %10s %12s %10s %10s %10s\n", "M", "K", "F", "unfused_ms", "fused_ms",
           "ratio", "TFLOP/s", "max_rel_diff", "plain_ms", "fitbox_ms", "skip_ms");
    for (int M : Ms) {
        auto unfused = [&]() {
            CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * F, M, K, &one, w, CUDA_R_16BF, K, x, CUDA_R_16BF, K, &zero,
                            gu, CUDA_R_16BF, 2 * F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            CK(k_swiglu(ref, gu, M, F, (k_stream)st));
        };
        /* 0: split; 1: k_gemm_swiglu; 2-4: its forms without either, box only, skip only */
        const int opts[5] = {-1, K_FFN_FIT_BOX | K_FFN_SKIP_IDLE, 0, K_FFN_FIT_BOX, K_FFN_SKIP_IDLE};
        auto run = [&](int v) {
            if (v == 0)
                unfused();
            else
                CK(k_gemm_swiglu_v(out, x, w, M, K, F, opts[v], (k_stream)st));
        };
        double diff = 0;
        unfused();
        for (int v = 1; v < 5; v++) {
            CK(cudaMemsetAsync(out, 0xff, (size_t)M * F * 2, st)); /* poisoned: every element must be written */
            run(v);
            CK(cudaStreamSynchronize(st));
            diff = std::max(diff, max_rel_diff(ref, out, (size_t)M * F));
        }
        std::vector<float> t[5];
        for (int r = 0; r < 25; r++) {
            for (int v = 0; v < 5; v++) {
                CK(cudaEventRecord(e0, st));
                run(v);
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (r >= 5)
                    t[v].push_back(ms);
            }
        }
        const double mu = median(t[0]), mf = median(t[1]);
        printf("%-7d %-6d %-6d %12.4f %12.4f %8.3f %10.1f %12.2e %10.4f %10.4f %10.4f\n", M, K, F, mu, mf, mf / mu,
               4.0 * M * F * (double)K / (mf * 1e9), diff, median(t[2]), median(t[3]), median(t[4]));
        fflush(stdout);
    }
    return 0;
}
