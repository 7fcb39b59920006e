/*
 * gemm_skinny.cu: Y[M, N] (+)= X[M, K] W^T for few rows (M <= 40), where a GEMM is a stream of the
 * weights W [N, K] and cuBLASLt leaves bandwidth unused on small N (Reuse steps of one sequence).
 *
 * mma.sync m16n8k16 with the weights as A (16 output features x 16 k) and the rows of X as B, so
 * each weight element is loaded once, straight into registers with 16-byte loads: the k order
 * inside a 64-k chunk is permuted (thread t of a quad takes physical k 16t .. 16t + 15 and feeds
 * them to the four k16 steps as its logical k 2t, 2t+1, 2t+8, 2t+9), and X's fragments use the
 * same permutation, so the dot products are unchanged. A block of 4 warps covers 64 features and
 * one 512-k slice of K (split-K for enough blocks in flight); each thread requests its whole slice
 * of weights up front, then the block stages X's slice in shared memory. Partial sums go to an fp32 workspace [splits][M][N]; a second kernel adds them
 * up in a fixed order (deterministic), adds beta * Y and writes bf16.
 */
#include "common.cuh"

#define SK_WARPS 4
#define SK_ROWS (16 * SK_WARPS) /* output features per block */
#define SK_KSLICE 512           /* k per block */
#define SK_MAXM 40 /* X's slice stays within 48 KB of static shared memory */
#define SK_XROW (SK_KSLICE + 8) /* padded smem row (bf16) */

template <int MT> /* MT: m-tiles of 8 rows */
static __global__ __launch_bounds__(128) void skinny_kernel(const bf16_t *__restrict__ X, const bf16_t *__restrict__ W,
                                                            float *__restrict__ ws, int M, int N, int K)
{
    __shared__ __align__(16) bf16_t xs[MT * 8 * SK_XROW];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * SK_ROWS + warp * 16, k0 = blockIdx.y * SK_KSLICE;
    const int klen = min(SK_KSLICE, K - k0);
    /* the whole slice of this thread's two weight rows is requested first (32 B per row and 64-k
     * chunk, 512 B in flight per thread), before X is staged: the stream starts at once */
    const bool r0ok = n0 + g < N, r1ok = n0 + g + 8 < N;
    const bf16_t *w0 = W + (size_t)(n0 + g) * K + k0 + 16 * t, *w1 = w0 + (size_t)8 * K;
    uint4 wa[SK_KSLICE / 64][2], wb[SK_KSLICE / 64][2];
#pragma unroll
    for (int c = 0; c < SK_KSLICE / 64; c++) {
        const bool in = c * 64 < klen;
        const uint4 z = make_uint4(0, 0, 0, 0);
        wa[c][0] = in && r0ok ? __ldcs((const uint4 *)(w0 + c * 64)) : z;
        wa[c][1] = in && r0ok ? __ldcs((const uint4 *)(w0 + c * 64 + 8)) : z;
        wb[c][0] = in && r1ok ? __ldcs((const uint4 *)(w1 + c * 64)) : z;
        wb[c][1] = in && r1ok ? __ldcs((const uint4 *)(w1 + c * 64 + 8)) : z;
    }
    /* X's slice into shared memory with asynchronous copies, all in flight at once (rows past M,
     * and k past the slice, are zeros) */
    for (int c = threadIdx.x; c < MT * 8 * (SK_KSLICE / 8); c += blockDim.x) {
        int m = c / (SK_KSLICE / 8), kk = (c % (SK_KSLICE / 8)) * 8;
        bf16_t *dst = xs + m * SK_XROW + kk;
        if (m < M && kk < klen) {
            unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(X + (size_t)m * K + k0 + kk));
        } else {
            *(uint4 *)dst = make_uint4(0, 0, 0, 0);
        }
    }
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    float acc[MT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
        acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
#pragma unroll
    for (int c = 0; c < SK_KSLICE / 64; c++) {
        if (c * 64 >= klen)
            break;
        const uint32_t ra[8] = {wa[c][0].x, wa[c][0].y, wa[c][0].z, wa[c][0].w,
                                wa[c][1].x, wa[c][1].y, wa[c][1].z, wa[c][1].w};
        const uint32_t rb[8] = {wb[c][0].x, wb[c][0].y, wb[c][0].z, wb[c][0].w,
                                wb[c][1].x, wb[c][1].y, wb[c][1].z, wb[c][1].w};
#pragma unroll
        for (int i = 0; i < MT; i++) {
            const bf16_t *xr = xs + (i * 8 + g) * SK_XROW + c * 64 + 16 * t;
            uint4 x0 = *(const uint4 *)xr, x1 = *(const uint4 *)(xr + 8);
            const uint32_t rx[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
            for (int j = 0; j < 4; j++)
                asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                    : "+f"(acc[i][0]), "+f"(acc[i][1]), "+f"(acc[i][2]), "+f"(acc[i][3])
                    : "r"(ra[2 * j]), "r"(rb[2 * j]), "r"(ra[2 * j + 1]), "r"(rb[2 * j + 1]), "r"(rx[2 * j]),
                      "r"(rx[2 * j + 1]));
        }
    }
    /* C fragment: rows (features) g, g + 8; columns (X rows) 2t, 2t + 1 of each m-tile */
    float *out = ws + (size_t)blockIdx.y * M * N;
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int n = n0 + g + (e >= 2 ? 8 : 0), m = i * 8 + 2 * t + (e & 1);
            if (n < N && m < M)
                out[(size_t)m * N + n] = acc[i][e];
        }
}

static __global__ void skinny_reduce_kernel(const float *__restrict__ ws, bf16_t *Y, int M, int N, int splits, float beta)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, total = (size_t)M * N;
    if (i >= total)
        return;
    float s = 0.f;
    for (int z = 0; z < splits; z++)
        s += ws[(size_t)z * total + i];
    if (beta != 0.f)
        s += beta * bf2f(Y[i]);
    Y[i] = f2bf(s);
}

extern "C" size_t k_gemm_skinny_ws_bytes(int M, int N, int K)
{
    return (size_t)((K + SK_KSLICE - 1) / SK_KSLICE) * M * N * sizeof(float);
}

extern "C" int k_gemm_skinny(const bf16_t *X, const bf16_t *W, bf16_t *Y, int M, int N, int K, float beta,
                             void *ws, size_t ws_bytes, k_stream stream)
{
    if (M < 1 || M > SK_MAXM || N < 1 || K < 64 || K % 64 || ws_bytes < k_gemm_skinny_ws_bytes(M, N, K))
        return (int)cudaErrorInvalidValue;
    const int splits = (K + SK_KSLICE - 1) / SK_KSLICE, mt = (M + 7) / 8;
    dim3 grid((unsigned)((N + SK_ROWS - 1) / SK_ROWS), (unsigned)splits);
    float *w = (float *)ws;
    switch (mt) {
    case 1: skinny_kernel<1><<<grid, 128, 0, stream>>>(X, W, w, M, N, K); break;
    case 2: skinny_kernel<2><<<grid, 128, 0, stream>>>(X, W, w, M, N, K); break;
    case 3: skinny_kernel<3><<<grid, 128, 0, stream>>>(X, W, w, M, N, K); break;
    case 4: skinny_kernel<4><<<grid, 128, 0, stream>>>(X, W, w, M, N, K); break;
    default: skinny_kernel<5><<<grid, 128, 0, stream>>>(X, W, w, M, N, K); break;
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return (int)e;
    size_t total = (size_t)M * N;
    skinny_reduce_kernel<<<(unsigned)((total + 255) / 256), 256, 0, stream>>>(w, Y, M, N, splits, beta);
    K_LAUNCH_RETURN();
}
