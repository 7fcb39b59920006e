/*
 * moe.cu: a mixture-of-experts layer's routing, dispatch, grouped expert GEMMs and combine
 * (kernels.h). The outputs are deterministic: a copy's place within its expert follows atomics,
 * but each row's product is its own and each token sums its copies in slot order.
 */
#include <mma.h>

#include "common.cuh"

#define ROUTE_THREADS 128
#define GEMM_BN 64
#define GEMM_BK 64
#define GEMM_LD (GEMM_BK + 8) /* padded rows of the staged tiles (a multiple of 8 bf16) */

/* Block t: token t's scores (a softmax over its router logits, or their sigmoids), its k largest
 * by the scores plus the expert bias among the best groups' experts (ties: the lower expert), or
 * with balance the k of the largest priorities, and their scores weighed as rt says (k_moe_route).
 * Shared memory: the scores, what the choice ranks, the groups' scores, a reduction's scratch. */
static __global__ void __launch_bounds__(ROUTE_THREADS) moe_route_kernel(const bf16_t *logits, int E, int k,
                                                                       uint32_t balance, struct k_moe_router rt,
                                                                       int32_t *ids, float *wts)
{
    griddep_wait();
    __shared__ float p[K_MOE_MAX_EXPERTS], pri[K_MOE_MAX_EXPERTS];
    __shared__ float rv[ROUTE_THREADS / 32];
    __shared__ int ri[ROUTE_THREADS / 32];
    __shared__ float chosen[32];
    __shared__ float gscore[K_MOE_MAX_GROUPS];
    const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float sum = 1.f; /* the softmax's sum (the sigmoid's scores stand alone) */
    if (rt.sigmoid) {
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            p[e] = 1.f / (1.f + expf(-bf2f(logits[(size_t)t * E + e])));
    } else {
        float mx = -INFINITY;
        for (int e = threadIdx.x; e < E; e += blockDim.x) {
            p[e] = bf2f(logits[(size_t)t * E + e]);
            mx = fmaxf(mx, p[e]);
        }
        for (int o = 16; o > 0; o >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if (lane == 0)
            rv[warp] = mx;
        __syncthreads();
        mx = rv[0];
        for (int w = 1; w < ROUTE_THREADS / 32; w++)
            mx = fmaxf(mx, rv[w]);
        __syncthreads();
        sum = 0.f;
        for (int e = threadIdx.x; e < E; e += blockDim.x) {
            p[e] = expf(p[e] - mx);
            sum += p[e];
        }
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0)
            rv[warp] = sum;
        __syncthreads();
        sum = 0.f;
        for (int w = 0; w < ROUTE_THREADS / 32; w++)
            sum += rv[w];
    }
    /* what the choice ranks: balanced priorities, or the scores (plus the expert bias), limited to the
     * best groups' experts */
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        pri[e] = balance ? (float)k_moe_priority(balance, (uint32_t)t, (uint32_t)e) /* 24 bits: exact */
                         : p[e] + (rt.bias ? bf2f(rt.bias[e]) : 0.f);
    __syncthreads();
    if (!balance && rt.n_group > 1) {
        const int gs = E / rt.n_group;
        for (int g = threadIdx.x; g < rt.n_group; g += blockDim.x) { /* a group's two best */
            float b1 = -INFINITY, b2 = -INFINITY;
            for (int e = g * gs; e < (g + 1) * gs; e++) {
                const float v = pri[e];
                if (v > b1) {
                    b2 = b1;
                    b1 = v;
                } else if (v > b2) {
                    b2 = v;
                }
            }
            gscore[g] = b1 + b2;
        }
        __syncthreads();
        if (threadIdx.x == 0) /* the topk_group best groups (ties: the lower) kept, the others' experts out */
            for (int j = 0; j < rt.n_group - rt.topk_group; j++) {
                int worst = -1;
                for (int g = 0; g < rt.n_group; g++)
                    if (gscore[g] != INFINITY && (worst < 0 || gscore[g] <= gscore[worst]))
                        worst = g;
                gscore[worst] = INFINITY;
            }
        __syncthreads();
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            if (gscore[e / gs] == INFINITY)
                pri[e] = -INFINITY;
        __syncthreads();
    }
    for (int j = 0; j < k; j++) { /* the largest left (ties: the lower expert), then taken out */
        float bv = -INFINITY;
        int bi = E;
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            if (pri[e] > bv || (pri[e] == bv && e < bi)) {
                bv = pri[e];
                bi = e;
            }
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > bv || (ov == bv && oi < bi)) {
                bv = ov;
                bi = oi;
            }
        }
        if (lane == 0) {
            rv[warp] = bv;
            ri[warp] = bi;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < ROUTE_THREADS / 32; w++)
                if (rv[w] > rv[0] || (rv[w] == rv[0] && ri[w] < ri[0])) {
                    rv[0] = rv[w];
                    ri[0] = ri[w];
                }
            const int c = ri[0] < E ? ri[0] : 0; /* none left: only a config the model check refuses */
            ids[(size_t)t * k + j] = c;
            chosen[j] = p[c] / sum;
            pri[c] = -INFINITY;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int j = 0; j < k; j++)
            s += chosen[j];
        const float norm = rt.norm && s > 0.f ? 1.f / s : 1.f, scale = rt.scale > 0.f ? rt.scale : 1.f;
        for (int j = 0; j < k; j++)
            wts[(size_t)t * k + j] = chosen[j] * norm * scale;
    }
}

/* Thread i: copy i counted to its expert (counts cleared before). */
static __global__ void moe_count_kernel(const int32_t *ids, int n, int32_t *counts)
{
    griddep_wait();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&counts[ids[i]], 1);
}

/* One block: the experts' offsets in expert order (counts read into shared memory, summed by one
 * thread), the fill counters cleared, and the tile list. */
static __global__ void moe_scan_kernel(int32_t *counts, int E, int tile, int32_t *offsets, int32_t *tiles,
                                       int32_t *ntiles)
{
    griddep_wait();
    __shared__ int32_t cnt[K_MOE_MAX_EXPERTS], off[K_MOE_MAX_EXPERTS + 1], first[K_MOE_MAX_EXPERTS];
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        cnt[e] = counts[e];
    __syncthreads();
    if (threadIdx.x == 0) {
        int o = 0, n = 0;
        for (int e = 0; e < E; e++) {
            off[e] = o;
            first[e] = n; /* the expert's first tile */
            o += cnt[e];
            n += (cnt[e] + tile - 1) / tile;
        }
        off[E] = o;
        *ntiles = n;
    }
    __syncthreads();
    for (int e = threadIdx.x; e <= E; e += blockDim.x)
        offsets[e] = off[e];
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        counts[e] = 0; /* the place kernel's fill counters */
        for (int s = 0, t = first[e]; s < cnt[e]; s += tile, t++) {
            tiles[2 * t] = e;
            tiles[2 * t + 1] = off[e] + s;
        }
    }
}

/* Thread i: copy i given the next place of its expert. Which copy of an expert takes which place
 * follows the atomics' order; no output depends on it (each row's product is its own, and each
 * token sums its copies in slot order). */
static __global__ void moe_place_kernel(const int32_t *ids, int n, int k, const int32_t *offsets, int32_t *fill,
                                        int32_t *tok, int32_t *pos)
{
    griddep_wait();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int e = ids[i], p = offsets[e] + atomicAdd(&fill[e], 1);
    tok[p] = i / k;
    pos[i] = p;
}

/* Block (column tile, tile): Y = X W_e^T over the tile's rows of sorted positions within [p0, p1).
 * GEMM_BM rows (the tile list's) in four warps of GEMM_BM / 2 x 32 outputs, bf16 tensor-core
 * fragments, fp32 accumulation; the X and W tiles of the next GEMM_STAGES - 1 K steps load
 * (cp.async) while one multiplies. The outputs are staged through the same shared memory. */
template <int GEMM_BM, int GEMM_STAGES>
static __global__ void __launch_bounds__(128) moe_gemm_kernel(struct k_moe_gemm_args a)
{
    static_assert(GEMM_BM * (GEMM_BN + 4) * 4 <= GEMM_STAGES * (GEMM_BM + GEMM_BN) * GEMM_LD * 2,
                  "the outputs fit the stages");
    using namespace nvcuda;
    constexpr int FM = GEMM_BM / 2 / 16; /* a warp's row fragments */
    griddep_wait();
    __shared__ __align__(128) unsigned char smem[GEMM_STAGES * (GEMM_BM + GEMM_BN) * GEMM_LD * 2];
    bf16_t *As = (bf16_t *)smem, *Bs = As + GEMM_STAGES * GEMM_BM * GEMM_LD; /* [stage][rows][GEMM_LD] */
    float *Cs = (float *)smem;                                                /* [BM][BN + 4], after the loop */
    const int ti = blockIdx.y;
    if (ti >= *a.ntiles)
        return;
    const int e = a.tiles[2 * ti], s = a.tiles[2 * ti + 1];
    const int r0 = max(s, a.p0), r1 = min(min(s + GEMM_BM, a.offsets[e + 1]), a.p1);
    if (r0 >= r1)
        return;
    const int col0 = blockIdx.x * GEMM_BN, K = a.K, N = a.N, warp = threadIdx.x >> 5;
    const int wr = warp >> 1, wc = warp & 1, nk = K / GEMM_BK;
    const bf16_t *W = a.W + ((size_t)e * N + col0) * K;
    auto load = [&](int stage, int k0) {
        for (int v = threadIdx.x; v < (GEMM_BM + GEMM_BN) * GEMM_BK / 8; v += blockDim.x) { /* 16-byte pieces */
            const int row = v / (GEMM_BK / 8), c = (v % (GEMM_BK / 8)) * 8;
            if (row < GEMM_BM) {
                const int r = r0 + row;
                const bool in = r < r1;
                cp_async16((uint32_t)__cvta_generic_to_shared(As + (stage * GEMM_BM + row) * GEMM_LD + c),
                           a.X + (size_t)((in ? r : r0) - a.p0) * K + k0 + c, in ? 16 : 0);
            } else {
                const int n = row - GEMM_BM;
                cp_async16((uint32_t)__cvta_generic_to_shared(Bs + (stage * GEMM_BN + n) * GEMM_LD + c),
                           W + (size_t)n * K + k0 + c, 16);
            }
        }
    };
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][2];
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.f);
    for (int st = 0; st < GEMM_STAGES - 1; st++) { /* the first stages in flight (a group each) */
        if (st < nk)
            load(st, st * GEMM_BK);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(GEMM_STAGES - 2));
        __syncthreads(); /* stage kt landed for every thread; stage kt - 1 is no longer read */
        const int nxt = kt + GEMM_STAGES - 1;
        if (nxt < nk)
            load(nxt % GEMM_STAGES, nxt * GEMM_BK);
        asm volatile("cp.async.commit_group;\n" ::);
        const __nv_bfloat16 *at = (const __nv_bfloat16 *)As + (kt % GEMM_STAGES) * GEMM_BM * GEMM_LD;
        const __nv_bfloat16 *bt = (const __nv_bfloat16 *)Bs + (kt % GEMM_STAGES) * GEMM_BN * GEMM_LD;
#pragma unroll
        for (int kk = 0; kk < GEMM_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
            for (int i = 0; i < FM; i++)
                wmma::load_matrix_sync(fa[i], at + (wr * (GEMM_BM / 2) + i * 16) * GEMM_LD + kk, GEMM_LD);
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(fb[j], bt + (wc * 32 + j * 16) * GEMM_LD + kk, GEMM_LD);
            for (int i = 0; i < FM; i++)
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads(); /* every stage read: the outputs may take its memory */
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(Cs + (wr * (GEMM_BM / 2) + i * 16) * (GEMM_BN + 4) + wc * 32 + j * 16, acc[i][j],
                                    GEMM_BN + 4, wmma::mem_row_major);
    __syncthreads();
    for (int v = threadIdx.x; v < GEMM_BM * GEMM_BN / 8; v += blockDim.x) {
        const int row = v / (GEMM_BN / 8), c = (v % (GEMM_BN / 8)) * 8, r = r0 + row;
        if (r < r1) {
            float f[8];
            for (int q = 0; q < 8; q++)
                f[q] = Cs[row * (GEMM_BN + 4) + c + q];
            *(uint4 *)(a.Y + (size_t)(r - a.p0) * N + col0 + c) = pack8(f);
        }
    }
}

/* Block t: token t's copies within [p0, p1), weighted, added to its running sum (fp32 acc), which
 * the last chunk adds to x instead. */
static __global__ void moe_combine_kernel(struct k_moe_combine_args a)
{
    griddep_wait();
    const int t = blockIdx.x, h = a.h;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (!a.first)
            for (int q = 0; q < 8; q++)
                v[q] = a.acc[(size_t)t * h + c + q];
        for (int j = 0; j < a.k; j++) {
            const int i = t * a.k + j, p = a.pos[i];
            if (p < a.p0 || p >= a.p1)
                continue;
            float y[8];
            unpack8(y, *(const uint4 *)(a.Y + (size_t)(p - a.p0) * h + c));
            const float w = a.wts[i];
            for (int q = 0; q < 8; q++)
                v[q] += w * y[q];
        }
        if (a.last) {
            float x[8];
            unpack8(x, *(const uint4 *)(a.x + (size_t)t * h + c));
            for (int q = 0; q < 8; q++)
                x[q] = a.replace ? v[q] : x[q] + v[q];
            *(uint4 *)(a.x + (size_t)t * h + c) = pack8(x);
        } else {
            for (int q = 0; q < 8; q++)
                a.acc[(size_t)t * h + c + q] = v[q];
        }
    }
}

extern "C" int k_moe_route(const bf16_t *logits, int T, int E, int k, uint32_t balance, const struct k_moe_router *rt,
                           int32_t *ids, float *wts, k_stream stream)
{
    if (T <= 0)
        return 0;
    if (E <= 0 || E > K_MOE_MAX_EXPERTS || k <= 0 || k > 32 || k > E ||
        (rt->n_group > 1 && (rt->n_group > K_MOE_MAX_GROUPS || E % rt->n_group || rt->topk_group < 1 ||
                             rt->topk_group > rt->n_group || rt->topk_group * (E / rt->n_group) < k)))
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(moe_route_kernel, dim3((unsigned)T), dim3(ROUTE_THREADS), 0, stream, logits, E, k, balance,
                         *rt, ids, wts);
}

extern "C" int k_moe_dispatch(const struct k_moe_dispatch_args *a, k_stream stream)
{
    const int n = a->T * a->k;
    if (n <= 0)
        return 0;
    if (a->E <= 0 || a->E > K_MOE_MAX_EXPERTS || (a->tile != 32 && a->tile != 64 && a->tile != K_MOE_TILE_WGMMA))
        return (int)cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)((n + 255) / 256);
    cudaError_t ce = cudaMemsetAsync(a->counts, 0, sizeof(int32_t) * (size_t)a->E, stream);
    if (ce == cudaSuccess)
        ce = k_launch(moe_count_kernel, dim3(blocks), dim3(256), 0, stream, (const int32_t *)a->ids, n, a->counts);
    if (ce == cudaSuccess)
        ce = k_launch(moe_scan_kernel, dim3(1), dim3(256), 0, stream, a->counts, a->E, a->tile, a->offsets, a->tiles,
                      a->ntiles);
    if (ce == cudaSuccess)
        ce = k_launch(moe_place_kernel, dim3(blocks), dim3(256), 0, stream, a->ids, n, a->k,
                      (const int32_t *)a->offsets, a->counts, a->tok, a->pos);
    return (int)ce;
}

extern "C" int k_moe_gemm(const struct k_moe_gemm_args *a, k_stream stream)
{
    if (a->p1 <= a->p0 || a->max_tiles <= 0)
        return 0;
    if (a->tile == K_MOE_TILE_WGMMA)
        return k_moe_gemm_wgmma(a, stream);
    if (a->N % GEMM_BN || a->K % GEMM_BK || (a->tile != 32 && a->tile != 64))
        return (int)cudaErrorInvalidValue;
    const dim3 grid((unsigned)(a->N / GEMM_BN), (unsigned)a->max_tiles);
    /* 32 rows three stages deep, or 64 two deep: each within the 48 KiB of static shared memory */
    return (int)(a->tile == 32 ? k_launch(moe_gemm_kernel<32, 3>, grid, dim3(128), 0, stream, *a)
                               : k_launch(moe_gemm_kernel<64, 2>, grid, dim3(128), 0, stream, *a));
}

extern "C" int k_moe_tile(int copies, int experts)
{
    return copies <= 32 * experts ? 32 : 64;
}

extern "C" int k_moe_combine(const struct k_moe_combine_args *a, k_stream stream)
{
    if (a->T <= 0)
        return 0;
    if (a->h % 8)
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(moe_combine_kernel, dim3((unsigned)a->T), dim3(k_row_threads(a->h)), 0, stream, *a);
}
