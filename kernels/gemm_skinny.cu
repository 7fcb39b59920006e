/*
 * gemm_skinny.cu: Y[M, N] (+)= X[M, K] W^T for at most 32 token rows, where a GEMM is a stream of
 * the weights: each block owns 32 rows of W over the whole K (no split-K, so no second pass and a
 * deterministic sum), and keeps STAGES tiles of 32 x 128 weights (and the matching 32 x 128 of X,
 * rows past M zero-filled) in flight through cp.async. The four warps split each tile's 128 k four
 * ways and compute the 32 x 32 output with mma.sync m16n8k16 (W as A, X as B, fp32 accumulators);
 * their partial sums are added through shared memory and written with the residual (beta = 1) as
 * 16-byte rows.
 *
 * cuBLASLt's kernels for these shapes stream the weights at 1.8-3.3 TB/s on an H200 (4.3 TB/s
 * copy): a step of 32 tokens is bound by reading 16 GB of weights, so this kernel is a candidate
 * the GEMM tuner times beside cuBLASLt's (eng_gemm.c).
 */
#include "common.cuh"

#define BN 32          /* weight rows (outputs) per block */
#define BM 32          /* token rows */
#define BK 128         /* k per stage */
#define ROW (BK + 8)   /* padded smem row (elements): ldmatrix without bank conflicts */
#define THREADS 128

static __device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* bytes (a multiple of 16) from global to shared memory by the copy engine, completing on bar */
static __device__ __forceinline__ void bulk_copy(void *smem, const void *gmem, unsigned bytes, unsigned bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(smem)),
                 "l"(gmem), "r"(bytes), "r"(bar)
                 : "memory");
}

static __device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity)
{
    asm volatile("{\n.reg .pred p;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n"
                 "@!p bra wait_%=;\n}\n" ::"r"(bar), "r"(parity)
                 : "memory");
}

static __device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

static __device__ __forceinline__ void mma_bf16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int STAGES> struct skinny_smem {
    static constexpr int TILE = BN * ROW;               /* elements of one W (or X) tile */
    static constexpr int BYTES = STAGES * 2 * TILE * 2; /* bf16 */
};

template <int STAGES>
static __global__ __launch_bounds__(THREADS) void skinny_kernel(const bf16_t *__restrict__ W,
                                                                const bf16_t *__restrict__ X, bf16_t *Y,
                                                                int M, int N, int K, int beta1)
{
    extern __shared__ __align__(16) bf16_t sm[];
    constexpr int TILE = skinny_smem<STAGES>::TILE;
    const int n0 = blockIdx.x * BN, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ktiles = K / BK;
    const bf16_t *Wb = W + (size_t)n0 * K;

    /* stage fills complete on one mbarrier each: 32 rows of W and M rows of X, one bulk copy per
     * row (rows of X past M stay zero, written once here) */
    __shared__ __align__(8) uint64_t full[STAGES];
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++)
            asm volatile("mbarrier.init.shared.b64 [%0], 1;\n" ::"r"(smem_u32(&full[s])));
    }
    for (int i = tid; i < STAGES * (BM - min(M, BM)) * (ROW / 8); i += THREADS) {
        int per = (BM - M) * (ROW / 8), st = i / per, r = M + (i % per) / (ROW / 8), col = (i % (ROW / 8)) * 8;
        *(uint4 *)(sm + st * 2 * TILE + TILE + r * ROW + col) = make_uint4(0, 0, 0, 0);
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const unsigned row_bytes = BK * 2, stage_bytes = (unsigned)(BN + M) * row_bytes;
    auto load = [&](int stage, int kt) { /* by warp 0 */
        bf16_t *Ws = sm + stage * 2 * TILE, *Xs = Ws + TILE;
        const int k0 = kt * BK;
        const unsigned bar = smem_u32(&full[stage]);
        if (lane == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(bar), "r"(stage_bytes) : "memory");
        __syncwarp();
        bulk_copy(Ws + lane * ROW, Wb + (size_t)lane * K + k0, row_bytes, bar);
        if (lane < M)
            bulk_copy(Xs + lane * ROW, X + (size_t)lane * K + k0, row_bytes, bar);
    };
    if (warp == 0)
        for (int s = 0; s < STAGES - 1 && s < ktiles; s++)
            load(s, s);
    float acc[2][4][4]; /* [16 outputs][8 tokens][fragment] */
#pragma unroll
    for (int t = 0; t < 2; t++)
#pragma unroll
        for (int m = 0; m < 4; m++)
            acc[t][m][0] = acc[t][m][1] = acc[t][m][2] = acc[t][m][3] = 0.f;

    for (int kt = 0; kt < ktiles; kt++) {
        __syncthreads(); /* everyone is done with the stage read at kt - 1: refill it */
        if (warp == 0 && kt + STAGES - 1 < ktiles)
            load((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        wait_parity(smem_u32(&full[kt % STAGES]), (kt / STAGES) & 1);
        const bf16_t *Ws = sm + (kt % STAGES) * 2 * TILE, *Xs = Ws + TILE;
        const int kw = warp * (BK / 4); /* this warp's 32 k of the tile */
        uint32_t b[4][4];               /* per 8 tokens: k16 steps 0 and 1 */
#pragma unroll
        for (int m = 0; m < 4; m++)
            ldsm_x4(b[m], Xs + (m * 8 + (lane & 7)) * ROW + kw + (lane >> 3) * 8);
#pragma unroll
        for (int ks = 0; ks < 2; ks++)
#pragma unroll
            for (int t = 0; t < 2; t++) {
                uint32_t a[4];
                ldsm_x4(a, Ws + (t * 16 + (lane & 15)) * ROW + kw + ks * 16 + (lane >> 4) * 8);
#pragma unroll
                for (int m = 0; m < 4; m++)
                    mma_bf16(acc[t][m], a, b[m][2 * ks], b[m][2 * ks + 1]);
            }
    }
    __syncthreads();

    /* the four warps' partial sums: red[warp][token][output] */
    float *red = (float *)sm;
    constexpr int RS = BN + 1;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int t = 0; t < 2; t++)
#pragma unroll
        for (int m = 0; m < 4; m++) {
            float *r = red + (size_t)warp * BM * RS;
            int n = t * 16 + g, tok = m * 8 + 2 * t4;
            r[tok * RS + n] = acc[t][m][0];
            r[(tok + 1) * RS + n] = acc[t][m][1];
            r[tok * RS + n + 8] = acc[t][m][2];
            r[(tok + 1) * RS + n + 8] = acc[t][m][3];
        }
    __syncthreads();
    const int tok = tid >> 2, c0 = (tid & 3) * 8; /* 8 outputs of one token row per thread */
    if (tok >= M)
        return;
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
        v[j] = red[tok * RS + c0 + j] + red[(BM + tok) * RS + c0 + j] + red[(2 * BM + tok) * RS + c0 + j] +
               red[(3 * BM + tok) * RS + c0 + j];
    uint4 *dst = (uint4 *)(Y + (size_t)tok * N + n0 + c0);
    if (beta1) {
        uint4 y = *dst;
        const bf16_t *yb = (const bf16_t *)&y;
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] += bf2f(yb[j]);
    }
    uint4 o;
    o.x = pack_bf2(v[0], v[1]);
    o.y = pack_bf2(v[2], v[3]);
    o.z = pack_bf2(v[4], v[5]);
    o.w = pack_bf2(v[6], v[7]);
    *dst = o;
}

template <int STAGES>
static int launch(const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N, int K, int beta1, cudaStream_t st)
{
    static bool configured = false;
    const int bytes = skinny_smem<STAGES>::BYTES;
    if (!configured) {
        cudaError_t e = cudaFuncSetAttribute(skinny_kernel<STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e != cudaSuccess)
            return (int)e;
        configured = true;
    }
    skinny_kernel<STAGES><<<N / BN, THREADS, bytes, st>>>(W, X, Y, M, N, K, beta1);
    K_LAUNCH_RETURN();
}

extern "C" int k_gemm_skinny_fits(int M, int N, int K)
{
    return M >= 1 && M <= BM && N > 0 && N % BN == 0 && K > 0 && K % BK == 0;
}

extern "C" int k_gemm_skinny(const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N, int K, int beta1,
                             int stages, k_stream stream)
{
    if (!k_gemm_skinny_fits(M, N, K) || ((uintptr_t)W | (uintptr_t)X | (uintptr_t)Y) % 16)
        return (int)cudaErrorInvalidValue;
    if (stages == 4)
        return launch<4>(W, X, Y, M, N, K, beta1, stream);
    if (stages == 8)
        return launch<8>(W, X, Y, M, N, K, beta1, stream);
    return (int)cudaErrorInvalidValue;
}
