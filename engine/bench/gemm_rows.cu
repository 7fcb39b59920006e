/*
 * gemm_rows.cu: cuBLASLt on LLaDA-8B's linear layers at the row counts of Reuse steps (32 to 512 rows:
 * 1 to 16 blocks of 32), to see how far the GEMMs alone sit from their floors where a step is
 * neither clearly weight-read- nor compute-bound. Random bf16 data; each GEMM timed alone after an
 * L2 flush (as in a step, whose weights stream from memory), median of 9. Per shape and row count:
 * the heuristic's first candidate, the best of its top 16 (what eng_gemm.c tunes over), of its top
 * 64, and of split-K variants of the top 16 (every split 2-8 and reduction scheme cuBLASLt
 * accepts), against the floor max(weight bytes / copy bandwidth, FLOPs / GEMM peak); then a whole
 * step's GEMMs (32 layers and the LM head) summed.
 *
 *   make bench-gemm-rows [GEMM_PEAK=TFLOP/s] [GEMM_BW=TB/s]   (engine bench's ceilings; defaults 775, 4.23)
 *   ./gemm_rows PEAK_TFLOPS BW_TBPS [ROWS...]
 *
 * Single launches carry a few microseconds each that a step's graph (programmatic launches) hides,
 * and run at the clock a short burst gets: engine bench's "linear layers alone" is the in-step
 * figure.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <vector>
#include "bench_check.h" /* CK: a CUDA call or kernel launcher checked */
/* a cuBLASLt call checked */
#define CKL(x) do { cublasStatus_t e_ = (x); if (e_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cublasGetStatusString(e_)); exit(1); } } while (0)
static cublasLtHandle_t lt; static void *ws; static size_t wsb = 64 << 20; static void *flush; static size_t fb = 200 << 20;
static cudaStream_t st; static cudaEvent_t e0, e1;
static float timeit(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                    const cublasLtMatmulAlgo_t *al, void *W, void *X, void *Y, float beta) {
  float alpha = 1; float t[9];
  if (cublasLtMatmul(lt, op, &alpha, W, a, X, b, &beta, Y, c, Y, c, al, ws, wsb, st)) { cudaGetLastError(); return -1; }
  for (int r = 0; r < 9; r++)  /* any failure: the candidate is skipped (-1) */
    if (cudaMemsetAsync(flush, r, fb, st) || cudaEventRecord(e0, st) ||
        cublasLtMatmul(lt, op, &alpha, W, a, X, b, &beta, Y, c, Y, c, al, ws, wsb, st) || cudaEventRecord(e1, st) ||
        cudaEventSynchronize(e1) || cudaEventElapsedTime(&t[r], e0, e1)) { cudaGetLastError(); return -1; }
  std::sort(t, t + 9); return t[4];
}
int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  double peak = argc > 1 ? atof(argv[1]) * 1e12 : 775e12, bw = argc > 2 ? atof(argv[2]) * 1e12 : 4.23e12;
  if (!(peak > 0 && bw > 0)) { fprintf(stderr, "usage: gemm_rows PEAK_TFLOPS BW_TBPS [ROWS...]\n"); return 2; }
  CKL(cublasLtCreate(&lt)); CK(cudaMalloc(&ws, wsb)); CK(cudaMalloc(&flush, fb)); CK(cudaStreamCreate(&st));
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  bf16_t *W, *X, *Y; size_t wn = 126464L * 4096, xn = 512L * 12288, yn = 512L * 126464;
  CK(cudaMalloc(&W, wn * 2)); CK(cudaMalloc(&X, xn * 2)); CK(cudaMalloc(&Y, yn * 2));
  CK(k_fill_random(W, (int64_t)wn, 1, 0.02f, 0)); CK(k_fill_random(X, (int64_t)xn, 2, 1.f, 0));
  CK(k_fill_random(Y, (int64_t)yn, 3, 1.f, 0)); CK(cudaDeviceSynchronize());
  struct Sh { const char *name; int N, K; float beta; } shapes[] = {
    {"qkv", 12288, 4096, 0}, {"o_proj", 4096, 4096, 1}, {"gate_up", 24576, 4096, 0}, {"down", 4096, 12288, 1}, {"lm_head", 126464, 4096, 0}};
  std::vector<int> Ms = {32, 64, 128, 192, 256, 320, 384, 448, 512};
  if (argc > 3) {
    Ms.clear();
    for (int i = 3; i < argc; i++) {
      int M = atoi(argv[i]);
      if (M < 1 || M > 512) { fprintf(stderr, "gemm_rows: rows '%s': 1 to 512\n", argv[i]); return 2; }
      Ms.push_back(M);
    }
  }
  printf("%-8s %4s %10s %10s %10s %10s %10s %7s %7s  %s\n", "gemm", "M", "floor_us", "first_us", "best16_us", "best64_us", "bestx_us", "x16", "xbest", "best config");
  for (int M : Ms) {
    double sum_floor = 0, sum16 = 0, sumx = 0;
    for (auto &s : shapes) {
      cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t a, b, c;
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      CKL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
      CKL(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, s.K, s.N, s.K));
      CKL(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, s.K, M, s.K));
      CKL(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, s.N, M, s.N));
      cublasLtMatmulPreference_t pref; CKL(cublasLtMatmulPreferenceCreate(&pref));
      CKL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
      cublasLtMatmulHeuristicResult_t res[64]; int n = 0;
      CKL(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 64, res, &n));
      float first = -1, best16 = 1e9, best64 = 1e9, bestx = 1e9; char bestdesc[200] = "";
      for (int i = 0; i < n; i++) {
        float t = timeit(op, a, b, c, &res[i].algo, W, X, Y, s.beta);
        if (t < 0) continue;
        if (i == 0) first = t;
        if (i < 16) best16 = std::min(best16, t);
        best64 = std::min(best64, t);
        uint32_t sk0 = 0; size_t w; int algoid = 0, tile = 0; /* for the description only */
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk0, sizeof sk0, &w);
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_ID, &algoid, sizeof algoid, &w);
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
        int sksup = 0; cublasLtMatmulAlgoCapGetAttribute(&res[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &sksup, sizeof sksup, &w);
        uint32_t redmask = 0; cublasLtMatmulAlgoCapGetAttribute(&res[i].algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &redmask, sizeof redmask, &w);
        if (t < bestx) { bestx = t; snprintf(bestdesc, sizeof bestdesc, "heur#%d id %d tile %d splitk %u", i, algoid, tile, sk0); }
        if (!sksup || i >= 16) continue;
        for (uint32_t sk : {2u, 3u, 4u, 6u, 8u}) {
          for (uint32_t red : {1u, 2u, 4u}) {
            if (!(redmask & red)) continue;
            cublasLtMatmulAlgo_t al = res[i].algo;
            cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk);
            cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red);
            cublasLtMatmulHeuristicResult_t chk;
            if (cublasLtMatmulAlgoCheck(lt, op, a, b, c, c, &al, &chk) || chk.workspaceSize > wsb) continue;
            float t2 = timeit(op, a, b, c, &al, W, X, Y, s.beta);
            if (t2 > 0 && t2 < bestx) { bestx = t2; snprintf(bestdesc, sizeof bestdesc, "heur#%d id %d tile %d splitk %u red %u", i, algoid, tile, sk, red); }
          }
        }
      }
      double fl = std::max(2.0 * s.N * s.K / bw, 2.0 * M * (double)s.N * s.K / peak) * 1e6;
      printf("%-8s %4d %10.2f %10.2f %10.2f %10.2f %10.2f %7.3f %7.3f  %s (%d candidates)\n", s.name, M, fl, first * 1e3, best16 * 1e3,
             best64 * 1e3, bestx * 1e3, best16 * 1e3 / fl, bestx * 1e3 / fl, bestdesc, n);
      if (s.N != 126464) { sum_floor += 32 * fl; sum16 += 32 * best16 * 1e3; sumx += 32 * bestx * 1e3; }
      else { sum_floor += fl; sum16 += best16 * 1e3; sumx += bestx * 1e3; }
      CKL(cublasLtMatmulPreferenceDestroy(pref)); CKL(cublasLtMatmulDescDestroy(op));
      CKL(cublasLtMatrixLayoutDestroy(a)); CKL(cublasLtMatrixLayoutDestroy(b)); CKL(cublasLtMatrixLayoutDestroy(c));
    }
    printf("== M %d: a step's GEMMs (32 layers + LM head): floor %.3f ms, engine's choice %.3f ms (%.3f x), best found %.3f ms (%.3f x)\n",
           M, sum_floor / 1e3, sum16 / 1e3, sum16 / sum_floor, sumx / 1e3, sumx / sum_floor);
  }
  return 0;
}
