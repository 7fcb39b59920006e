// gemm_power.cu: the GEMM experiments behind engine/BENCHMARKS.md's fifth-session sections, on the
// LLaDA-8B linear shapes, random bf16 data (never zeros), L2 flushed by a read kernel:
//   (no argument) the 8 cuBLASLt heuristic candidates of each M = 8,192 shape (and the 8192^3
//                 ceiling) timed alone after 300 ms idle, then held back to back after 200 ms of the
//                 same, to see the 700 W power limit; then every configuration of every algorithm
//                 id cuBLASLt lists at M = 512 (tiles x stages x clusters x split-K);
//   tiles         every tile and cluster shape of the heuristic's own candidates at M = 512 (and
//                 the M = 8,192 gate_up).
// Build and run on the GPU machine (it is not part of the build):
//   nvcc -O2 -arch=sm_90 -o gemm_power engine/bench/gemm_power.cu -lcublasLt && ./gemm_power [tiles]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include <ctime>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#define CK(x) do { auto e_ = (x); if ((int)e_) { printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)e_); exit(1);} } while (0)
static cublasLtHandle_t lt; static void *ws; static size_t wsb = 32 << 20; static float *flush; static size_t fn = 50 << 20;
static cudaStream_t st; static cudaEvent_t e0, e1; static float *sink;
__global__ void fill(__nv_bfloat16 *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull); x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; x = (x ^ (x >> 27)) * 0x94d049bb133111ebull; x ^= x >> 31;
    p[i] = __float2bfloat16(((int)(x >> 40) - (1 << 23)) * (1.0f / (1 << 23)));
  }
}
__global__ void rd(const float4 *p, size_t n, float *out) {
  float s = 0; for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) { float4 v = p[i]; s += v.x + v.y + v.z + v.w; }
  if (s == 12345.f) *out = s;
}
struct Sh { int M, N, K; float beta; const char *name; };
struct G { cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t a, b, c; };
static __nv_bfloat16 *W, *X, *Y;
static G desc(const Sh &s) {
  G g; cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CK(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, s.K, s.N, s.K));
  CK(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, s.K, s.M, s.K));
  CK(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, s.N, s.M, s.N));
  return g;
}
static cublasStatus_t mm(const G &g, const cublasLtMatmulAlgo_t *al, float beta) {
  float alpha = 1;
  return cublasLtMatmul(lt, g.op, &alpha, W, g.a, X, g.b, &beta, Y, g.c, Y, g.c, al, ws, wsb, st);
}
static float cold(const G &g, const cublasLtMatmulAlgo_t *al, float beta) {
  float t[7];
  if (mm(g, al, beta)) { cudaGetLastError(); return -1; }
  for (int r = 0; r < 7; r++) {
    rd<<<1024, 256, 0, st>>>((const float4 *)flush, fn / 4, sink);
    cudaEventRecord(e0, st); mm(g, al, beta); cudaEventRecord(e1, st);
    if (cudaEventSynchronize(e1)) { cudaGetLastError(); return -1; }
    cudaEventElapsedTime(&t[r], e0, e1);
  }
  std::sort(t, t + 7); return t[3];
}
/* back-to-back for warm_ms, then n runs timed together: per-run ms */
static float sustained(const G &g, const cublasLtMatmulAlgo_t *al, float beta, float one_ms, float warm_ms) {
  if (mm(g, al, beta)) { cudaGetLastError(); return -1; }
  int w = (int)(warm_ms / one_ms) + 1, n = (int)(60 / one_ms) + 5;
  for (int i = 0; i < w; i++) mm(g, al, beta);
  cudaEventRecord(e0, st);
  for (int i = 0; i < n; i++) mm(g, al, beta);
  cudaEventRecord(e1, st);
  float t; CK(cudaEventSynchronize(e1)); cudaEventElapsedTime(&t, e0, e1); return t / n;
}
static void idle(int ms) { CK(cudaDeviceSynchronize()); struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, NULL); }
int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  CK(cublasLtCreate(&lt)); CK(cudaMalloc(&ws, wsb)); CK(cudaMalloc(&flush, fn * 4)); CK(cudaMalloc(&sink, 4)); CK(cudaStreamCreate(&st));
  CK(cudaMemset(flush, 0, fn * 4));
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  size_t wn = 24576L * 12288, xn = 8192L * 24576, yn = 8192L * 24576;
  CK(cudaMalloc(&W, wn * 2)); CK(cudaMalloc(&X, xn * 2)); CK(cudaMalloc(&Y, yn * 2));
  fill<<<4096, 256>>>(W, wn, 1); fill<<<4096, 256>>>(X, xn, 2); fill<<<4096, 256>>>(Y, yn, 3);
  CK(cudaDeviceSynchronize());
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  if (argc > 1 && !strcmp(argv[1], "tiles")) {
    Sh sm[] = {{512, 12288, 4096, 0, "qkv"}, {512, 4096, 4096, 1, "o_proj"}, {512, 24576, 4096, 0, "gate_up"}, {512, 4096, 12288, 1, "down"},
               {8192, 24576, 4096, 0, "gate_up"}};
    for (auto &s : sm) {
      G g = desc(s);
      cublasLtMatmulHeuristicResult_t res[8]; int n = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.a, g.b, g.c, g.c, pref, 8, res, &n));
      double fl = 2.0 * s.M * s.N * s.K;
      float best8 = 1e9; for (int i = 0; i < n; i++) { float t = cold(g, &res[i].algo, s.beta); if (t > 0) best8 = std::min(best8, t); }
      std::vector<std::pair<float, std::string>> all; int tried = 0;
      for (int i = 0; i < n; i++) {
        size_t w = 0; static uint32_t tiles[4096]; size_t tb = 0;
        memset(tiles, 0, sizeof tiles);
        cublasLtMatmulAlgoCapGetAttribute(&res[i].algo, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &tb);
        int nt = (int)(tb / 4); if (nt > 4096) nt = 0;
        if (nt && cublasLtMatmulAlgoCapGetAttribute(&res[i].algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, 4 * nt, &w)) nt = 0;
        uint16_t cls[] = {0, 1, 2, 3, 4, 5, 6, 8, 10, 13};
        uint32_t t0 = 0; cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &t0, 4, &w);
        uint16_t c0 = 0; cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c0, 2, &w);
        printf("  %s cand %d: tile %u cluster %u, %d tile ids\n", s.name, i, t0, (unsigned)c0, nt);
        for (int ti = 0; ti < nt; ti++) for (uint16_t cl : cls) {
          cublasLtMatmulAlgo_t al = res[i].algo;
          cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_TILE_ID, &tiles[ti], 4);
          cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, 2);
          cublasLtMatmulHeuristicResult_t chk;
          if (cublasLtMatmulAlgoCheck(lt, g.op, g.a, g.b, g.c, g.c, &al, &chk) || chk.workspaceSize > wsb) continue;
          if (++tried > 1500) break;
          float t2 = cold(g, &al, s.beta);
          char d[160]; snprintf(d, sizeof d, "cand %d tile %u cluster %u", i, tiles[ti], (unsigned)cl);
          if (t2 > 0) all.push_back({t2, d});
        }
      }
      std::sort(all.begin(), all.end());
      printf("tiles %-8s M %d N %5d K %5d: %d configurations; best of heuristic 8: %.2f us (%.0f TF/s)\n", s.name, s.M, s.N, s.K, tried, best8 * 1e3, fl / best8 / 1e9);
      for (size_t i = 0; i < all.size() && i < 6; i++) printf("   %.2f us (%.0f TF/s) %s\n", all[i].first * 1e3, fl / all[i].first / 1e9, all[i].second.c_str());
    }
    return 0;
  }
  /* (b) sustained */
  Sh big[] = {{8192, 8192, 8192, 0, "ceiling"}, {8192, 12288, 4096, 0, "qkv"}, {8192, 4096, 4096, 1, "o_proj"},
              {8192, 24576, 4096, 0, "gate_up"}, {8192, 4096, 12288, 1, "down"}};
  for (auto &s : big) {
    G g = desc(s);
    cublasLtMatmulHeuristicResult_t res[8]; int n = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.a, g.b, g.c, g.c, pref, 8, res, &n));
    double fl = 2.0 * s.M * s.N * s.K;
    for (int i = 0; i < n; i++) {
      idle(300);
      float c = cold(g, &res[i].algo, s.beta);
      float su = sustained(g, &res[i].algo, s.beta, c, 200);
      size_t w; uint32_t tile = 0; cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
      uint32_t stg = 0; cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stg, sizeof stg, &w);
      uint16_t cl = 0; cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof cl, &w);
      printf("sustained %-8s M %d N %5d K %5d cand %d tile %2u stages %2u cluster %u: cold %8.1f us (%4.0f TF/s)  sustained %8.1f us (%4.0f TF/s)\n",
             s.name, s.M, s.N, s.K, i, tile, stg, (unsigned)cl, c * 1e3, fl / c / 1e9, su * 1e3, fl / su / 1e9);
    }
  }
  /* (a) exhaustive at M = 512 */
  Sh small[] = {{512, 12288, 4096, 0, "qkv"}, {512, 4096, 4096, 1, "o_proj"}, {512, 24576, 4096, 0, "gate_up"}, {512, 4096, 12288, 1, "down"}};
  int ids[100], nid = 0;
  CK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, 100, ids, &nid));
  for (auto &s : small) {
    G g = desc(s);
    cublasLtMatmulHeuristicResult_t res[8]; int n = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.a, g.b, g.c, g.c, pref, 8, res, &n));
    float best8 = 1e9; for (int i = 0; i < n; i++) { float t = cold(g, &res[i].algo, s.beta); if (t > 0) best8 = std::min(best8, t); }
    std::vector<std::pair<float, std::string>> all;
    int tried = 0;
    for (int q = 0; q < nid; q++) {
      cublasLtMatmulAlgo_t base;
      if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, ids[q], &base)) continue;
      size_t w; uint32_t tiles[128]; size_t tb = 0;
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &tb);
      int nt = (int)(tb / 4); if (nt > 128) nt = 0; if (nt == 0) { tiles[0] = 0; nt = 1; } else cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, 4 * nt, &w);
      uint32_t stages[64]; size_t sb = 0;
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_STAGES_IDS, NULL, 0, &sb);
      int ns = (int)(sb / 4); if (ns > 64) ns = 0; if (ns == 0) { stages[0] = 0; ns = 1; } else cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_STAGES_IDS, stages, 4 * ns, &w);
      uint16_t clusters[] = {0, 2, 3, 5};
      int sksup = 0; cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &sksup, sizeof sksup, &w);
      for (int ti = 0; ti < nt; ti++) for (int si = 0; si < ns; si++) for (int ci = 0; ci < 4; ci++)
      for (uint32_t sk : {1u, 2u, 3u}) {
        if (sk > 1 && !sksup) continue;
        cublasLtMatmulAlgo_t al = base;
        cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_TILE_ID, &tiles[ti], 4);
        cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages[si], 4);
        cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &clusters[ci], 2);
        cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, 4);
        uint32_t red = sk > 1 ? 1u : 0u;
        cublasLtMatmulAlgoConfigSetAttribute(&al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, 4);
        cublasLtMatmulHeuristicResult_t chk;
        if (cublasLtMatmulAlgoCheck(lt, g.op, g.a, g.b, g.c, g.c, &al, &chk) || chk.workspaceSize > wsb) continue;
        if (++tried > 2500) break;
        float t2 = cold(g, &al, s.beta);
        char d[160]; snprintf(d, sizeof d, "id %d tile %u stages %u cluster %u splitk %u", ids[q], tiles[ti], stages[si], (unsigned)clusters[ci], sk);
        if (t2 > 0) all.push_back({t2, d});
      }
    }
    std::sort(all.begin(), all.end());
    double fl = 2.0 * s.M * s.N * s.K;
    printf("exhaustive %-8s M %d N %5d K %5d: %d configurations; best of heuristic 8: %.2f us (%.0f TF/s)\n", s.name, s.M, s.N, s.K, tried, best8 * 1e3, fl / best8 / 1e9);
    for (size_t i = 0; i < all.size() && i < 5; i++) printf("   %.2f us (%.0f TF/s) %s\n", all[i].first * 1e3, fl / all[i].first / 1e9, all[i].second.c_str());
  }
  return 0;
}
