/*
 * attention.cu: varlen attention over packed segments with a paged K/V pool (FlashAttention-2
 * structure on the bf16 tensor cores through mma.sync m16n8k16).
 *
 * A block of 4 warps takes 64 query rows of one segment and one query head; each warp owns 16 rows
 * and keeps its Q fragments, the running row max/sum and the O accumulator in registers. K/V tiles
 * of 64 keys are gathered from the pool's pages into shared memory (rows padded by 8 elements so
 * that the fragment loads are free of bank conflicts), S = Q K^T is computed, masked (key length,
 * block-causal), folded into the online softmax, and P V accumulated. GQA maps query head h to
 * K/V head h / (H / Hkv). Head dims 64 and 128 are instantiated.
 */
#include <float.h>

#include "common.cuh"

#define TM K_ATTN_TILE_M
#define TN 64
#define PAD 8

static __device__ __forceinline__ void mma_bf16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}

template <int D>
static __global__ __launch_bounds__(128) void attention_kernel(const k_attn_args a)
{
    __shared__ __align__(16) bf16_t Ks[TN][D + PAD];
    __shared__ __align__(16) bf16_t Vs[TN][D + PAD];

    const int seg = a.tiles[2 * blockIdx.x], q0 = a.tiles[2 * blockIdx.x + 1];
    const int head = blockIdx.y, hk = head / (a.H / a.Hkv);
    const int qlen = a.q_len[seg], klen = a.key_len[seg], qs = a.q_start[seg];
    const int kvc = a.kv_cached[seg], bs = a.block_size, pt = a.page_tokens;
    const int32_t *pages = a.pages + a.page_off[seg];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8; /* this thread's two query rows */
    const float sl2 = a.scale * 1.4426950408889634f;

    /* Q fragments straight from global memory (rows past the segment read as zero) */
    uint32_t qf[D / 16][4];
    {
        const bf16_t *p0 = a.q + (size_t)(qs + r0) * a.q_stride + head * D;
        const bf16_t *p1 = a.q + (size_t)(qs + r1) * a.q_stride + head * D;
        bool v0 = r0 < qlen, v1 = r1 < qlen;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            int c = kk * 16 + t4 * 2;
            qf[kk][0] = v0 ? *(const uint32_t *)(p0 + c) : 0u;
            qf[kk][1] = v1 ? *(const uint32_t *)(p1 + c) : 0u;
            qf[kk][2] = v0 ? *(const uint32_t *)(p0 + c + 8) : 0u;
            qf[kk][3] = v1 ? *(const uint32_t *)(p1 + c + 8) : 0u;
        }
    }

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    int kend = klen;
    if (bs > 0) {
        int last = min(q0 + TM, qlen) - 1;
        kend = min(klen, kvc + (last / bs + 1) * bs);
    }
    for (int k0 = 0; k0 < kend; k0 += TN) {
        __syncthreads(); /* the previous tile is consumed */
        for (int c = threadIdx.x; c < TN * (D / 8); c += blockDim.x) {
            int row = c / (D / 8), col = (c % (D / 8)) * 8, j = k0 + row;
            if (j < klen) {
                size_t slot = (size_t)pages[j / pt] * pt + j % pt;
                size_t off = (slot * a.Hkv + hk) * D + col;
                cp_async16(&Ks[row][col], a.k_pool + off);
                cp_async16(&Vs[row][col], a.v_pool + off);
            } else {
                *(uint4 *)&Ks[row][col] = make_uint4(0, 0, 0, 0);
                *(uint4 *)&Vs[row][col] = make_uint4(0, 0, 0, 0);
            }
        }
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::);
        __syncthreads();

        float s[TN / 8][4];
#pragma unroll
        for (int n = 0; n < TN / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t b0 = *(const uint32_t *)&Ks[n * 8 + g][kk * 16 + t4 * 2];
                uint32_t b1 = *(const uint32_t *)&Ks[n * 8 + g][kk * 16 + 8 + t4 * 2];
                mma_bf16(s[n], qf[kk], b0, b1);
            }
        }
        /* scale into log2 units and mask */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < TN / 8; n++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int j = k0 + n * 8 + t4 * 2 + (e & 1), i = e < 2 ? r0 : r1;
                bool vis = j < klen && (bs == 0 || j < kvc || (j - kvc) / bs <= i / bs);
                s[n][e] = vis ? s[n][e] * sl2 : -INFINITY;
            }
            mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
            mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        float b0s = n0 == -INFINITY ? 0.f : n0, b1s = n1 == -INFINITY ? 0.f : n1;
        float al0 = exp2f(m0 - b0s), al1 = exp2f(m1 - b1s);
        m0 = n0;
        m1 = n1;
        l0 *= al0;
        l1 *= al1;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[n][0] *= al0;
            o[n][1] *= al0;
            o[n][2] *= al1;
            o[n][3] *= al1;
        }
#pragma unroll
        for (int n = 0; n < TN / 8; n++) {
            s[n][0] = exp2f(s[n][0] - b0s);
            s[n][1] = exp2f(s[n][1] - b0s);
            s[n][2] = exp2f(s[n][2] - b1s);
            s[n][3] = exp2f(s[n][3] - b1s);
            l0 += s[n][0] + s[n][1];
            l1 += s[n][2] + s[n][3];
        }
        /* O += P V: the S accumulators of n-tiles 2kk and 2kk+1 form P's A fragment */
#pragma unroll
        for (int kk = 0; kk < TN / 16; kk++) {
            uint32_t pa[4] = {pack_bf2(s[2 * kk][0], s[2 * kk][1]), pack_bf2(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            const int kr = kk * 16 + t4 * 2;
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                const int col = n * 8 + g;
                uint32_t b0 = (uint32_t)Vs[kr][col] | ((uint32_t)Vs[kr + 1][col] << 16);
                uint32_t b1 = (uint32_t)Vs[kr + 8][col] | ((uint32_t)Vs[kr + 9][col] << 16);
                mma_bf16(o[n], pa, b0, b1);
            }
        }
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
    const int ostride = a.H * D;
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        int c = head * D + n * 8 + t4 * 2;
        if (r0 < qlen)
            *(uint32_t *)(a.o + (size_t)(qs + r0) * ostride + c) = pack_bf2(o[n][0] * i0, o[n][1] * i0);
        if (r1 < qlen)
            *(uint32_t *)(a.o + (size_t)(qs + r1) * ostride + c) = pack_bf2(o[n][2] * i1, o[n][3] * i1);
    }
}

extern "C" int k_attention(const struct k_attn_args *a, k_stream stream)
{
    if (a->num_tiles <= 0)
        return 0;
    if (a->H % a->Hkv || a->page_tokens <= 0)
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)a->num_tiles, (unsigned)a->H);
    if (a->d == 128)
        attention_kernel<128><<<grid, 128, 0, stream>>>(*a);
    else if (a->d == 64)
        attention_kernel<64><<<grid, 128, 0, stream>>>(*a);
    else
        return (int)cudaErrorInvalidValue;
    K_LAUNCH_RETURN();
}
