/*
 * gemm_wgmma.cu: the FFN's gate/up GEMM with SwiGLU in its epilogue, on Hopper's warpgroup MMA
 * (wgmma) fed by the Tensor Memory Accelerator (TMA), sm_90a:
 *
 *     act[M, F] = silu(X W_gate^T) * (X W_up^T)    X [M, K], W = [W_gate; W_up] [2F, K] (HF layout)
 *
 * The unfused path writes the GEMM's [M, 2F] output and reads it back in k_swiglu; here each tile's
 * 128 gate columns and the 128 up columns they pair with are computed together, so only act is
 * written. A tile is 128 rows x 128 output columns: a stage holds X's 128 x 64 slice and W's gate
 * rows n0..n0+127 stacked on its up rows F+n0.., 256 rows, both K-major in the 128-byte swizzle the
 * TMA writes and wgmma reads. Warp specialization: warpgroup 0 gives up its registers and one thread
 * of it issues the TMA loads, STAGES deep, each stage's `full` barrier counting its bytes; the two
 * consumer warpgroups (64 rows each, m64n256k16, 128 fp32 accumulators a thread) release a stage
 * through its `empty` barrier once the wgmma after it is issued and the one reading it is done.
 * Blocks are persistent, one an SM, walking tiles in groups of GROUP_M row tiles (the X rows and W
 * columns the SMs share at a time stay in L2); the producer runs ahead into the next tile while the
 * consumers store this one.
 *
 * A single row tile of fewer than 128 rows loads only its rows (its box rounded up to 8 rows; the
 * stage's other A rows keep what they held, read only by output rows that are not stored), and a
 * consumer warpgroup with none of them passes the stages on without multiplying.
 *
 * Numerics follow the unfused path: the gate and up values are rounded to bf16 (the GEMM's output
 * type) before silu(g) * u is evaluated in fp32 and rounded, only with an approximate division
 * (outputs identical to the split path's at LLaDA-8B's shapes in engine/bench/gemm_bench.cu).
 */
#include <cuda.h> /* CUtensorMap and its encoder's signature (found through the runtime) */

#include "common.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_SM90A 1
#endif

#define GM K_FFN_TILE_M              /* rows a tile: two consumer warpgroups of 64 */
#define GF K_FFN_TILE_F              /* output columns a tile (128 gate + 128 up columns of W) */
#define GK 64                        /* K a stage: 128 bytes of bf16, one swizzle row */
#define STAGES 4
#define A_TILE (GM * GK * 2)         /* 16 KiB */
#define B_HALF (GF * GK * 2)         /* 16 KiB: a stage's gate (or up) rows */
#define STAGE_BYTES (A_TILE + 2 * B_HALF)
#define GEMM_SMEM (1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8)
#define GROUP_M 16                   /* row tiles walked together (8 and 32: no better) */
#define THREADS 384

#ifdef HAVE_SM90A
#include "hopper.cuh"
#include "gemm_wgmma.inc"

static __device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

/* arrives on the barrier at local address bar in block `rank` of the cluster (CTA-scope release,
 * as CUTLASS's: what it orders, the wgmma reads of the stage, are complete; a cluster-scope one
 * stalled the consumers on a memory barrier for 42% of their cycles) */
static __device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile("{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [r];\n}\n" ::"r"(bar),
                 "r"(rank)
                 : "memory");
}

static __device__ __forceinline__ void cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* the box of map at (c0 along K, c1 along rows) into shared memory at dst, counted on bar */
static __device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* the same box into dst of every block of the cluster in mask, counted on each one's bar */
static __device__ __forceinline__ void tma_load_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar,
                                                   uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}

/* Unit t's row unit m and column tile n: g row units at a time, rows fastest */
static __device__ __forceinline__ void tile_at(int t, int mt, int nt, int g, int &m, int &n)
{
    const int group = t / (g * nt), first = group * g, size = min(mt - first, g);
    const int r = t - group * g * nt;
    m = first + r % size;
    n = r / size;
}

static __device__ __forceinline__ float bf16_round(float x) { return bf2f(f2bf(x)); }

/* One stage's loads by this block alone: X rows [arow, arow + box) and W rows [brow0, brow0 + 128)
 * and [brow1, brow1 + 128), stacked, over K slice k; bytes: the three boxes' (X's box 128 rows, or
 * fewer for a single small row tile) */
static __device__ __forceinline__ void load_stage(uint32_t a, uint32_t bar, const CUtensorMap *tx,
                                                  const CUtensorMap *tw, int k, int arow, int brow0, int brow1,
                                                  uint32_t bytes)
{
    mbar_expect_tx(bar, bytes);
    tma_load(a, tx, k * GK, arow, bar);
    tma_load(a + A_TILE, tw, k * GK, brow0, bar);
    tma_load(a + A_TILE + B_HALF, tw, k * GK, brow1, bar);
}

/* A consumer warpgroup's wgmmas over the next kn stages of the ring (it: the ring's running count):
 * d = its 64 rows (cw) of the stages' products, summed. A stage is released (to the producers of
 * all CL blocks of the cluster, each of which loads into it) once the wgmma after it is issued
 * and its own is done. */
template <int CL>
static __device__ __forceinline__ void mma_stages(float (&d)[128], uint32_t base, uint32_t full, uint32_t empty,
                                                  int cw, int lane, int kn, int &it, bool idle)
{
    auto release = [&](uint32_t bar) {
        if (CL == 1)
            mbar_arrive(bar);
        else
            for (int r = 0; r < CL; r++)
                mbar_arrive_cluster(bar, (uint32_t)r);
    };
    if (idle) { /* rows past the matrix: each stage only waited for and given back, in step */
        for (int k = 0; k < kn; k++, it++) {
            const int s = it % STAGES;
            mbar_wait(full + 8 * s, (it / STAGES) & 1);
            if (lane == 0)
                release(empty + 8 * s);
        }
        return;
    }
    for (int k = 0; k < kn; k++, it++) {
        const int s = it % STAGES;
        mbar_wait(full + 8 * s, (it / STAGES) & 1);
        const uint32_t a = base + s * STAGE_BYTES + cw * (64 * 128), b = base + s * STAGE_BYTES + A_TILE;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < GK / 16; kk++)
            wgmma_ss_n256(d, desc_k128(a + 32 * kk), desc_k128(b + 32 * kk), k > 0 || kk > 0);
        asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        /* the previous stage's wgmma is done: its buffers go back to the producers */
        if (k > 0 && lane == 0)
            release(empty + 8 * ((it - 1) % STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (lane == 0)
        release(empty + 8 * ((it - 1) % STAGES));
}
#endif

/* CL: the blocks of a cluster, row tiles sharing W's stages (TMA multicast) */
template <int CL>
static __global__ void __launch_bounds__(THREADS, 1)
    gemm_swiglu_kernel(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw, bf16_t *out,
                       int M, int F, int K, int a_rows, int skip_idle)
{
#ifdef HAVE_SM90A
    extern __shared__ __align__(1024) unsigned char sm[];
    const uint32_t base = ((uint32_t)__cvta_generic_to_shared(sm) + 1023) & ~1023u;
    const uint32_t full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    /* a cluster of CL blocks takes CL consecutive row tiles of one column tile: its row-tile
     * groups are the units walked (tile_at), each block loading its own X rows and 1 / CL of W's
     * stage into every block of the cluster */
    uint32_t rank = 0;
    if (CL > 1)
        asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    const int cid = blockIdx.x / CL, ncl = gridDim.x / CL;
    const int mt = (M + GM * CL - 1) / (GM * CL), nt = F / GF, tiles = mt * nt, kt = K / GK;
    const int wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8 * CL); /* each consumer warp's lane 0, in every block */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (CL > 1)
        cluster_sync(); /* the barriers of every block are set before any load lands in them */
    else
        __syncthreads();
    griddep_wait();
    if (wg == 0) { /* the producer */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = cid; t < tiles; t += ncl) {
                int m, n;
                tile_at(t, mt, nt, GROUP_M / CL, m, n);
                for (int k = 0; k < kt; k++, it++) {
                    const int s = it % STAGES;
                    mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1); /* the first round passes */
                    const uint32_t a = base + s * STAGE_BYTES, bar = full + 8 * s;
                    if (CL == 1) {
                        load_stage(a, bar, &tx, &tw, k, m * GM, n * GF, F + n * GF,
                                   (uint32_t)(a_rows * GK * 2 + 2 * B_HALF));
                    } else { /* block r loads W's rows [256 r / CL, 256 (r + 1) / CL) of the stage */
                        constexpr int rows = 2 * GF / CL;
                        const int r0 = (int)rank * rows, w0 = r0 < GF ? n * GF + r0 : F + n * GF + r0 - GF;
                        mbar_expect_tx(bar, STAGE_BYTES);
                        tma_load(a, &tx, k * GK, (m * CL + (int)rank) * GM, bar);
                        tma_load_mc(a + A_TILE + r0 * 128, &tw, k * GK, w0, bar, (uint16_t)((1u << CL) - 1));
                    }
                }
            }
        }
    } else { /* the consumers */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
        float d[128];
        int it = 0;
        for (int t = cid; t < tiles; t += ncl) {
            int m, n;
            tile_at(t, mt, nt, GROUP_M / CL, m, n);
            m = m * CL + (int)rank;
            const bool idle = skip_idle && m * GM + cw * 64 >= M; /* none of its 64 rows in the matrix */
            mma_stages<CL>(d, base, full, empty, cw, lane, kt, it, idle);
            if (idle)
                continue;
            /* d[4j..4j+3]: rows r, r, r + 8, r + 8 of columns 8j + 2 (lane % 4) + {0, 1}; gate j < 16, up j + 16 */
            const int r = m * GM + cw * 64 + warp * 16 + (lane >> 2);
            bf16_t *o = out + (size_t)n * GF + 2 * (lane & 3);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                if (r + 8 * h >= M)
                    continue;
                bf16_t *orow = o + (size_t)(r + 8 * h) * F;
#pragma unroll
                for (int j = 0; j < 16; j++) {
                    const float g0 = bf16_round(d[4 * j + 2 * h]), g1 = bf16_round(d[4 * j + 2 * h + 1]);
                    const float u0 = bf16_round(d[64 + 4 * j + 2 * h]), u1 = bf16_round(d[64 + 4 * j + 2 * h + 1]);
                    /* the approximate division: IEEE division here made the kernel 3-6% slower */
                    *(uint32_t *)(orow + 8 * j) =
                        pack_bf2(__fdividef(g0, 1.f + __expf(-g0)) * u0, __fdividef(g1, 1.f + __expf(-g1)) * u1);
                }
            }
        }
    }
    if (CL > 1)
        cluster_sync(); /* no block leaves while another may still load into it or arrive on it */
#endif
}

#ifdef HAVE_SM90A
/* The dispatch's tile ti within the chunk [p0, p1): its expert and the sorted positions [r0, r1) it
 * holds there; false where it holds none. */
static __device__ __forceinline__ bool moe_tile_rows(const struct k_moe_gemm_args &a, int ti, int &e, int &r0, int &r1)
{
    e = a.tiles[2 * ti];
    const int s = a.tiles[2 * ti + 1];
    r0 = max(s, a.p0);
    r1 = min(min(s + GM, a.offsets[e + 1]), a.p1);
    return r0 < r1;
}
#endif

/* The mixture of experts' grouped GEMM on wgmma (k_moe_gemm over the dispatch's 128-row tiles):
 * Y[p - p0] = X[p - p0] W_e^T. A unit is one tile's rows, two consumer warpgroups of 64, by 256
 * output columns n: a stage holds X's 128 rows of the tile (from its first position in the chunk)
 * and expert e's W rows e N + 256 n .. + 255 (two boxes of 128), K-major in the 128-byte swizzle,
 * loaded by the producer as in gemm_swiglu_kernel. A warpgroup whose 64 rows hold no copy waits on
 * each stage and releases it without multiplying (a Reuse step's experts hold a few copies each,
 * so its tiles are mostly the first warpgroup's); rows past the tile's copies are computed from
 * other experts' rows or zeros and not stored. Persistent blocks, one an SM, walk the units tile
 * by tile, a tile's column units together (its X rows read from L2 after the first). */
static __global__ void __launch_bounds__(THREADS, 1)
    moe_wgmma_kernel(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
                     struct k_moe_gemm_args a)
{
#ifdef HAVE_SM90A
    extern __shared__ __align__(1024) unsigned char sm[];
    const uint32_t base = ((uint32_t)__cvta_generic_to_shared(sm) + 1023) & ~1023u;
    const uint32_t full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    const int nt = a.N / (2 * GF), kt = a.K / GK, wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, 8); /* each consumer warp's lane 0 */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    griddep_wait();
    const int units = *a.ntiles * nt;
    if (wg == 0) { /* the producer */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < units; t += gridDim.x) {
                int e, r0, r1;
                if (!moe_tile_rows(a, t / nt, e, r0, r1))
                    continue;
                const int w0 = e * a.N + (t % nt) * 2 * GF;
                for (int k = 0; k < kt; k++, it++) {
                    const int s = it % STAGES;
                    mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1); /* the first round passes */
                    load_stage(base + s * STAGE_BYTES, full + 8 * s, &tx, &tw, k, r0 - a.p0, w0, w0 + GF, STAGE_BYTES);
                }
            }
        }
    } else { /* the consumers */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
        float d[128];
        int it = 0;
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int e, r0, r1;
            if (!moe_tile_rows(a, t / nt, e, r0, r1))
                continue;
            const bool idle = r0 + cw * 64 >= r1; /* no copy in this warpgroup's rows: the stages passed on */
            mma_stages<1>(d, base, full, empty, cw, lane, kt, it, idle);
            if (idle)
                continue;
            /* d[4j..4j+3]: rows r, r, r + 8, r + 8 of columns 8j + 2 (lane % 4) + {0, 1} of the unit's 256 */
            const int r = r0 + cw * 64 + warp * 16 + (lane >> 2);
            bf16_t *o = a.Y + (size_t)(t % nt) * 2 * GF + 2 * (lane & 3);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                if (r + 8 * h >= r1)
                    continue;
                bf16_t *orow = o + (size_t)(r + 8 * h - a.p0) * a.N;
#pragma unroll
                for (int j = 0; j < 32; j++)
                    *(uint32_t *)(orow + 8 * j) = pack_bf2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        }
    }
#endif
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The driver's tensor-map encoder, found through the runtime (no link against libcuda); NULL where
 * the driver lacks it. */
static encode_tiled_fn encoder(void)
{
    static encode_tiled_fn fn = NULL;
    static int asked = 0;
    if (!asked) {
        asked = 1;
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (encode_tiled_fn)p;
        cudaGetLastError();
    }
    return fn;
}

/* A TMA map of a row-major bf16 [rows, cols] matrix in boxes of box_rows x GK, 128-byte swizzle;
 * rows past the end read as zeros. */
static int tensor_map(CUtensorMap *map, const bf16_t *p, int64_t rows, int64_t cols, int box_rows)
{
    const cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {GK, (cuuint32_t)box_rows}, es[2] = {1, 1};
    return encoder()(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dim, stride, box, es,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
               ? 0
               : -1;
}

static int max_clusters[3]; /* [CL]: clusters of CL blocks that fit on the GPU at once */

extern "C" int k_gemm_wgmma_ready(k_stream stream)
{
    static int ready = -1;
    if (ready >= 0)
        return ready;
    if (!k_attention_wgmma_ready(stream)) /* the sm_90a image (asked outside a capture) */
        return 0;
    /* the persistent grid is as many clusters as fit at once: GPCs of an odd number of free SMs
     * leave one out, and a cluster past those would run as a second wave */
    auto setup = [&](auto kernel, int cl) {
        cudaLaunchAttribute at[2];
        const cudaLaunchConfig_t cfg = k_launch_config(at, dim3((unsigned)(k_num_sms() / cl * cl)), dim3(THREADS),
                                                       GEMM_SMEM, (cudaStream_t)stream, (unsigned)cl);
        return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, GEMM_SMEM) == cudaSuccess &&
               cudaOccupancyMaxActiveClusters(&max_clusters[cl], kernel, &cfg) == cudaSuccess &&
               max_clusters[cl] > 0;
    };
    ready = encoder() != NULL && setup(gemm_swiglu_kernel<1>, 1) && setup(gemm_swiglu_kernel<2>, 2) &&
            cudaFuncSetAttribute(moe_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, GEMM_SMEM) ==
                cudaSuccess;
    cudaGetLastError();
    return ready;
}

extern "C" int k_gemm_swiglu_blocks(int rows)
{
    const int cl = k_gemm_swiglu_cluster(rows);
    return max_clusters[cl] * cl;
}

extern "C" int k_gemm_swiglu_auto(int rows, int F)
{
    return k_gemm_swiglu_auto_v(rows, F, max_clusters);
}

extern "C" int k_gemm_swiglu(bf16_t *out, const bf16_t *x, const bf16_t *w, int rows, int K, int F, k_stream stream)
{
    return k_gemm_swiglu_v(out, x, w, rows, K, F, K_FFN_FIT_BOX | K_FFN_SKIP_IDLE, stream);
}

extern "C" int k_gemm_swiglu_v(bf16_t *out, const bf16_t *x, const bf16_t *w, int rows, int K, int F, int opts,
                               k_stream stream)
{
    if (rows < 0 || !k_gemm_swiglu_fits(K, F) || ((uintptr_t)x | (uintptr_t)w | (uintptr_t)out) % 16)
        return (int)cudaErrorInvalidValue;
    if (rows == 0)
        return 0;
    if (!k_gemm_wgmma_ready(stream))
        return (int)cudaErrorNotSupported;
    /* one row tile: X's box holds its rows (rounded up to a swizzle atom of 8) rather than 128 of
     * them, the rest of the stage's A rows left as they were (an output row reads only its own) */
    const int cl = k_gemm_swiglu_cluster(rows);
    const int a_rows = (opts & K_FFN_FIT_BOX) && rows < GM ? (rows + 7) / 8 * 8 : GM;
    CUtensorMap tx, tw;
    if (tensor_map(&tx, x, rows, K, a_rows) || tensor_map(&tw, w, 2 * (int64_t)F, K, GF))
        return (int)cudaErrorInvalidValue;
    /* persistent clusters, as many as fit at once or as there are units of work */
    const int64_t units = k_gemm_swiglu_units(rows, F, cl);
    cudaLaunchAttribute at[2];
    const unsigned clusters = (unsigned)(units < max_clusters[cl] ? units : max_clusters[cl]);
    const cudaLaunchConfig_t cfg =
        k_launch_config(at, dim3(clusters * (unsigned)cl), dim3(THREADS), GEMM_SMEM, (cudaStream_t)stream, (unsigned)cl);
    const int skip = (opts & K_FFN_SKIP_IDLE) != 0;
    return (int)(cl == 1 ? cudaLaunchKernelEx(&cfg, gemm_swiglu_kernel<1>, tx, tw, out, rows, F, K, a_rows, skip)
                         : cudaLaunchKernelEx(&cfg, gemm_swiglu_kernel<2>, tx, tw, out, rows, F, K, GM, skip));
}

extern "C" int k_moe_gemm_wgmma(const struct k_moe_gemm_args *a, k_stream stream)
{
    if (a->p1 <= a->p0 || a->max_tiles <= 0)
        return 0;
    if (!k_moe_wgmma_fits(a->N, a->K) || a->tile != K_MOE_TILE_WGMMA || a->E <= 0 ||
        ((uintptr_t)a->X | (uintptr_t)a->W | (uintptr_t)a->Y) % 16)
        return (int)cudaErrorInvalidValue;
    if (!k_gemm_wgmma_ready(stream))
        return (int)cudaErrorNotSupported;
    CUtensorMap tx, tw;
    if (tensor_map(&tx, a->X, a->p1 - a->p0, a->K, GM) || tensor_map(&tw, a->W, (int64_t)a->E * a->N, a->K, GF))
        return (int)cudaErrorInvalidValue;
    const int64_t units = (int64_t)a->max_tiles * (a->N / (2 * GF)), sms = k_num_sms();
    return (int)k_launch(moe_wgmma_kernel, dim3((unsigned)(units < sms ? units : sms)), dim3(THREADS), GEMM_SMEM,
                         (cudaStream_t)stream, tx, tw, *a);
}
