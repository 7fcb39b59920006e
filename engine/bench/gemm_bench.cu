/*
 * gemm_bench.cu: the engine's own Hopper GEMMs (kernels/gemm_wgmma.cu) beside cuBLAS on the same
 * data, alternating in one process:
 *   swiglu  k_gemm_swiglu (gate/up GEMM + SwiGLU) against cuBLAS's GEMM into [M, 2F] + k_swiglu;
 *   resid   k_gemm_resid (y += x W^T, the K split over a cluster) against cuBLAS with beta = 1.
 * Prints, per row count M: both medians (CUDA events, after warm-up), the own kernel's TFLOP/s,
 * and the largest difference of the outputs relative to the largest output.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90a -Isim -Ikernels engine/bench/gemm_bench.cu kernels/elementwise.cu \
 *        kernels/attention.cu kernels/attention_wgmma.cu kernels/gemm_wgmma.cu -lcublas -o gemm_bench
 *   ./gemm_bench [swiglu|resid] [K N M...]   (default: swiglu, LLaDA-8B's 4096 12288, M = 32 512 2048
 *                                             8192; N is F for swiglu, the output width for resid)
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels.h"

#define CK(x)                                                                                                \
    do {                                                                                                     \
        cudaError_t e_ = (cudaError_t)(x);                                                                   \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));              \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)
#define CB(x)                                                                                                \
    do {                                                                                                     \
        cublasStatus_t s_ = (x);                                                                             \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_);               \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

static float bf(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/* largest |a - b| over the largest |a| (infinite on a NaN) */
static double max_rel_diff(const bf16_t *da, const bf16_t *db, size_t n)
{
    std::vector<uint16_t> a(n), b(n);
    CK(cudaMemcpy(a.data(), da, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), db, n * 2, cudaMemcpyDeviceToHost));
    double mx = 0, md = 0;
    for (size_t i = 0; i < n; i++) {
        mx = std::max(mx, (double)fabsf(bf(a[i])));
        double dd = fabs((double)bf(a[i]) - bf(b[i]));
        md = std::max(md, std::isnan(dd) ? INFINITY : dd);
    }
    return md / mx;
}

int main(int argc, char **argv)
{
    int arg = 1;
    const bool resid = argc > 1 && strcmp(argv[1], "resid") == 0;
    if (argc > 1 && (resid || strcmp(argv[1], "swiglu") == 0))
        arg++;
    int K = argc > arg + 1 ? atoi(argv[arg]) : 4096, N = argc > arg + 1 ? atoi(argv[arg + 1]) : resid ? 4096 : 12288;
    std::vector<int> Ms;
    for (int i = arg + 2; i < argc; i++)
        Ms.push_back(atoi(argv[i]));
    if (Ms.empty())
        Ms = {32, 512, 2048, 8192};
    if (resid ? !k_gemm_resid_fits(K, N) : !k_gemm_swiglu_fits(K, N)) {
        fprintf(stderr, "gemm_bench: K %d N %d do not fit the %s kernel (kernels.h)\n", K, N, resid ? "resid" : "swiglu");
        return 2;
    }
    const int Mmax = *std::max_element(Ms.begin(), Ms.end());
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    if (!k_gemm_wgmma_ready((k_stream)st)) {
        fprintf(stderr, "gemm_bench: the own GEMMs do not run here (no sm_90a image or TMA encoder)\n");
        return 1;
    }
    printf("%s kernel: %s\n", resid ? "resid" : "swiglu",
           resid ? "y += x W^T, tiles 128 x 256, K split over a cluster of two; against cuBLAS, beta = 1"
                 : "act = SwiGLU(x W^T); against cuBLAS into [M, 2F] + k_swiglu");
    /* w: [N, K] (resid) or [2F, K] (swiglu); out/ref: [M, N]; gu: cuBLAS's [M, 2F]; y0: the
     * residual both resid runs start from */
    const int wrows = resid ? N : 2 * N;
    bf16_t *x, *w, *gu = NULL, *ref, *out, *y0 = NULL;
    CK(cudaMalloc(&x, (size_t)Mmax * K * 2));
    CK(cudaMalloc(&w, (size_t)wrows * K * 2));
    CK(cudaMalloc(&ref, (size_t)Mmax * N * 2));
    CK(cudaMalloc(&out, (size_t)Mmax * N * 2));
    if (resid)
        CK(cudaMalloc(&y0, (size_t)Mmax * N * 2));
    else
        CK(cudaMalloc(&gu, (size_t)Mmax * 2 * N * 2));
    CK(k_fill_random(x, (int64_t)Mmax * K, 1, 1.0f, (k_stream)st));
    CK(k_fill_random(w, (int64_t)wrows * K, 2, 1.0f / sqrtf((float)K), (k_stream)st));
    if (resid)
        CK(k_fill_random(y0, (int64_t)Mmax * N, 3, 1.0f, (k_stream)st));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, st));
    const float one = 1.f, zero = 0.f;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%-7s %-6s %-6s %12s %12s %8s %10s %12s\n", "M", "K", "N", "cublas_ms", "own_ms", "ratio", "TFLOP/s",
           "max_rel_diff");
    for (int M : Ms) {
        const size_t ny = (size_t)M * N;
        auto theirs = [&]() {
            if (resid) {
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, CUDA_R_16BF, K, x, CUDA_R_16BF, K, &one,
                                ref, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            } else {
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * N, M, K, &one, w, CUDA_R_16BF, K, x, CUDA_R_16BF, K,
                                &zero, gu, CUDA_R_16BF, 2 * N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                CK(k_swiglu(ref, gu, M, N, (k_stream)st));
            }
        };
        auto ours = [&]() {
            CK(resid ? k_gemm_resid(out, x, w, M, K, N, (k_stream)st) : k_gemm_swiglu(out, x, w, M, K, N, (k_stream)st));
        };
        /* correctness: the same residual (resid), or a poisoned output that must be overwritten */
        if (resid) {
            CK(cudaMemcpyAsync(ref, y0, ny * 2, cudaMemcpyDeviceToDevice, st));
            CK(cudaMemcpyAsync(out, y0, ny * 2, cudaMemcpyDeviceToDevice, st));
        } else {
            CK(cudaMemsetAsync(out, 0xff, ny * 2, st));
        }
        theirs();
        ours();
        CK(cudaStreamSynchronize(st));
        const double diff = max_rel_diff(ref, out, ny);
        /* timing (resid keeps adding into its outputs: the values do not matter there) */
        std::vector<float> tu, tf;
        for (int r = 0; r < 25; r++) {
            for (int which = 0; which < 2; which++) {
                CK(cudaEventRecord(e0, st));
                which ? ours() : theirs();
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (r >= 5)
                    (which ? tf : tu).push_back(ms);
            }
        }
        const double mu = median(tu), mf = median(tf), flops = 2.0 * M * (double)wrows * K;
        printf("%-7d %-6d %-6d %12.4f %12.4f %8.3f %10.1f %12.2e\n", M, K, N, mu, mf, mf / mu, flops / (mf * 1e9),
               diff);
        fflush(stdout);
    }
    return 0;
}
