/*
 * elementwise.cu: memory-bound kernels: random fill, RMSNorm, embedding and row gathers,
 * QKV bias + RoPE + K/V store, SwiGLU. Rows are processed with 16-byte vectors (8 bf16), so widths
 * must be multiples of 8 (the launchers check).
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"

static int pdl_requested = 1, pdl_device = -1; /* -1: the device not asked yet */

extern "C" void k_set_pdl(int on) { pdl_requested = on != 0; }

static int portable = 0; /* k_set_portable */

extern "C" void k_set_portable(int on) { portable = on != 0; }

extern "C" int k_portable(void) { return portable; }

int k_pdl_allowed(void)
{
    if (k_portable())
        return 0;
    if (pdl_device < 0) {
        int dev = 0, major = 0;
        pdl_device = cudaGetDevice(&dev) == cudaSuccess &&
                     cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                     major >= 9;
    }
    return pdl_requested && pdl_device;
}

static __global__ void fill_random_kernel(bf16_t *dst, int64_t rows, int64_t cols, int64_t src_cols, int64_t first,
                                          uint64_t seed, float scale)
{
    griddep_wait();
    const int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = f2bf_exact(scale * hash_uniform(seed, (uint64_t)(first + i / cols * src_cols + i % cols)));
}

extern "C" int k_fill_random_window(bf16_t *dst, int64_t rows, int64_t cols, int64_t src_cols, int64_t first,
                                    uint64_t seed, float scale, k_stream stream)
{
    const int64_t n = rows * cols;
    if (n <= 0)
        return 0;
    if (cols > src_cols)
        return (int)cudaErrorInvalidValue;
    int64_t blocks = (n + 255) / 256;
    return (int)k_launch(fill_random_kernel, dim3((unsigned)(blocks < 65536 ? blocks : 65536)), dim3(256), 0, stream,
                         dst, rows, cols, src_cols, first, seed, scale);
}

extern "C" int k_fill_random(bf16_t *dst, int64_t n, uint64_t seed, float scale, k_stream stream)
{
    return k_fill_random_window(dst, 1, n, n, 0, seed, scale, stream);
}

static __global__ void fill_bits_kernel(bf16_t *dst, int64_t n, uint16_t bits)
{
    griddep_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = bits;
}

extern "C" int k_has_image(void)
{
    cudaFuncAttributes a;
    const cudaError_t e = cudaFuncGetAttributes(&a, fill_bits_kernel);
    if (e != cudaSuccess)
        (void)cudaGetLastError(); /* the query's error is the answer, not a sticky one */
    return e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ? 0 : 1;
}

extern "C" int k_fill_bits(bf16_t *dst, int64_t n, uint16_t bits, k_stream stream)
{
    if (n <= 0)
        return 0;
    int64_t blocks = (n + 255) / 256;
    return (int)k_launch(fill_bits_kernel, dim3((unsigned)(blocks < 65536 ? blocks : 65536)), dim3(256), 0, stream,
                         dst, n, bits);
}

static __global__ void bf16_to_f32_kernel(float *dst, const bf16_t *src, int64_t n)
{
    griddep_wait();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = bf2f(src[i]);
}

extern "C" int k_bf16_to_f32(float *dst, const bf16_t *src, int64_t n, k_stream stream)
{
    if (n <= 0)
        return 0;
    int64_t blocks = (n + 255) / 256;
    return (int)k_launch(bf16_to_f32_kernel, dim3((unsigned)(blocks < 65536 ? blocks : 65536)), dim3(256), 0, stream,
                         dst, src, n);
}

/* One block per row (of in, or row idx[row] of it); each thread owns 8-element vectors. */
static __global__ void rmsnorm_kernel(bf16_t *out, const bf16_t *in, const bf16_t *w, const int32_t *idx, int h,
                                      float eps)
{
    griddep_wait();
    const bf16_t *x = in + (size_t)(idx ? idx[blockIdx.x] : (int32_t)blockIdx.x) * h;
    bf16_t *y = out + (size_t)blockIdx.x * h;
    float ss = 0.f;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        uint4 v = *(const uint4 *)(x + c);
        const bf16_t *e = (const bf16_t *)&v;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float f = bf2f(e[k]);
            ss += f * f;
        }
    }
    __shared__ float red[32];
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0)
            red[0] = v;
    }
    __syncthreads();
    float inv = rsqrtf(red[0] / (float)h + eps);
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        uint4 v = *(const uint4 *)(x + c), wv = *(const uint4 *)(w + c), r;
        const bf16_t *e = (const bf16_t *)&v, *we = (const bf16_t *)&wv;
        bf16_t *re = (bf16_t *)&r;
#pragma unroll
        for (int k = 0; k < 8; k++)
            re[k] = f2bf(bf2f(e[k]) * inv * bf2f(we[k]));
        *(uint4 *)(y + c) = r;
    }
}

static int threads_for(int h)
{
    int t = h / 8;
    if (t > 512)
        t = 512;
    t = (t + 31) / 32 * 32;
    return t < 32 ? 32 : t;
}

extern "C" int k_rmsnorm(bf16_t *out, const bf16_t *in, const bf16_t *w, int rows, int h, float eps,
                         k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (rows <= 0)
        return 0;
    return k_rmsnorm_rows(out, in, w, NULL, rows, h, eps, stream);
}

extern "C" int k_rmsnorm_rows(bf16_t *out, const bf16_t *in, const bf16_t *w, const int32_t *idx, int rows, int h,
                              float eps, k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (rows <= 0)
        return 0;
    return (int)k_launch(rmsnorm_kernel, dim3(rows), dim3(threads_for(h)), 0, stream, out, in, w, idx, h, eps);
}

static __global__ void gather_kernel(bf16_t *out, const bf16_t *in, const int32_t *idx, int h)
{
    griddep_wait();
    const uint4 *src = (const uint4 *)(in + (size_t)idx[blockIdx.x] * h);
    uint4 *dst = (uint4 *)(out + (size_t)blockIdx.x * h);
    for (int c = threadIdx.x; c < h / 8; c += blockDim.x)
        dst[c] = src[c];
}

extern "C" int k_embed(bf16_t *x, const bf16_t *table, const int32_t *ids, int rows, int h,
                       k_stream stream)
{
    return k_gather_rows(x, table, ids, rows, h, stream);
}

extern "C" int k_gather_rows(bf16_t *out, const bf16_t *in, const int32_t *idx, int rows, int h,
                             k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (rows <= 0)
        return 0;
    return (int)k_launch(gather_kernel, dim3(rows), dim3(threads_for(h)), 0, stream, out, in, idx, h);
}

static __global__ void scatter_kernel(bf16_t *out, const bf16_t *in, const int32_t *idx, int h)
{
    griddep_wait();
    const uint4 *src = (const uint4 *)(in + (size_t)blockIdx.x * h);
    uint4 *dst = (uint4 *)(out + (size_t)idx[blockIdx.x] * h);
    for (int c = threadIdx.x; c < h / 8; c += blockDim.x)
        dst[c] = src[c];
}

extern "C" int k_scatter_rows(bf16_t *out, const bf16_t *in, const int32_t *idx, int rows, int h, k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (rows <= 0)
        return 0;
    return (int)k_launch(scatter_kernel, dim3(rows), dim3(threads_for(h)), 0, stream, out, in, idx, h);
}

/* Block (page j, layer): the page's rows in that layer, 16 bytes a thread at a time, four loads in
 * flight before their stores (a peer's memory is read over the link, where one load at a time leaves
 * it idle). */
static __global__ void copy_pages_kernel(bf16_t *__restrict__ out, int64_t out_slots, const bf16_t *__restrict__ in,
                                         int64_t in_slots, const int32_t *src, const int32_t *dst, int page_tokens,
                                         int row)
{
    griddep_wait();
    const int64_t n = (int64_t)page_tokens * row / 8, layer = blockIdx.y, step = blockDim.x;
    const uint4 *__restrict__ from = (const uint4 *)(in + (layer * in_slots + (int64_t)src[blockIdx.x] * page_tokens) * row);
    uint4 *__restrict__ to = (uint4 *)(out + (layer * out_slots + (int64_t)dst[blockIdx.x] * page_tokens) * row);
    int64_t c = threadIdx.x;
    for (; c + 3 * step < n; c += 4 * step) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            v[k] = from[c + k * step];
#pragma unroll
        for (int k = 0; k < 4; k++)
            to[c + k * step] = v[k];
    }
    for (; c < n; c += step)
        to[c] = from[c];
}

extern "C" int k_copy_pages(bf16_t *out, int64_t out_slots, const bf16_t *in, int64_t in_slots, const int32_t *src,
                            const int32_t *dst, int pages, int layers, int page_tokens, int row, k_stream stream)
{
    if (row % 8 || layers > 65535)
        return (int)cudaErrorInvalidValue;
    if (pages <= 0 || layers <= 0)
        return 0;
    return (int)k_launch(copy_pages_kernel, dim3(pages, layers), dim3(256), 0, stream, out, out_slots, in, in_slots,
                         src, dst, page_tokens, row);
}

/*
 * Block (token, group): the token's cos/sin table (d/2 angles) is computed into shared memory and
 * shared by the rotated heads of the group; threads walk the group's (head, 8 i) pairs of 16-byte
 * vectors (i..i+7 with i+d/2..i+d/2+7) and its share of the V heads, 8 values at a time. K and V
 * go to the token's pool slot; Q stays in place for the attention kernel. Small steps use several
 * groups per token so that enough blocks run.
 */
/* The 8 values of row at col, plus the bias's there (if any) */
static __device__ __forceinline__ void load8_bias(float *x, const bf16_t *row, const bf16_t *bias, int col)
{
    unpack8(x, *(const uint4 *)(row + col));
    if (bias) {
        float b[8];
        unpack8(b, *(const uint4 *)(bias + col));
#pragma unroll
        for (int k = 0; k < 8; k++)
            x[k] += b[k];
    }
}

/* The block's cos/sin table for its token at pos: [half] cos, then [half] sin, of the angles
 * pos theta^(-2i/dims); the block waits for it. */
static __device__ __forceinline__ void rope_table(float *cs, float pos, float log2_theta, int half, int dims)
{
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, c;
        sincosf(pos * exp2f(-log2_theta * (float)(2 * i) / (float)dims), &s, &c);
        cs[i] = c;
        cs[half + i] = s;
    }
    __syncthreads();
}

/* The block's share (of gridDim.y groups) of its token's V, bias added, into its pool slot. */
static __device__ __forceinline__ void store_v(const bf16_t *row, const bf16_t *bias, bf16_t *v_pool, size_t slot_off,
                                               int H, int Hkv, int d)
{
    const int groups = gridDim.y, vecs = Hkv * d / 8, vper = (vecs + groups - 1) / groups;
    const int v_lo = blockIdx.y * vper, v_hi = min(vecs, v_lo + vper);
    for (int e = v_lo + threadIdx.x; e < v_hi; e += blockDim.x) {
        float v[8];
        load8_bias(v, row, bias, (H + Hkv) * d + 8 * e);
        *(uint4 *)(v_pool + slot_off + 8 * e) = pack8(v);
    }
}

static __global__ void qkv_rope_store_kernel(bf16_t *qkv, const bf16_t *bias, const int32_t *tok_pos,
                                             const int32_t *tok_slot, bf16_t *k_pool, bf16_t *v_pool,
                                             int kv_stride, int H, int Hkv, int d, float log2_theta)
{
    griddep_wait();
    extern __shared__ float cs[]; /* [d/2] cos, then [d/2] sin */
    const int t = blockIdx.x, half = d / 2, hv = half / 8, width = (H + 2 * Hkv) * d;
    bf16_t *row = qkv + (size_t)t * width;
    const float pos = (float)tok_pos[t];
    const size_t slot_off = (size_t)tok_slot[t] * kv_stride;
    const int groups = gridDim.y, grp = blockIdx.y;
    const int pairs = (H + Hkv) * hv, per = (pairs + groups - 1) / groups;
    const int pair_lo = grp * per, pair_hi = min(pairs, pair_lo + per);
    rope_table(cs, pos, log2_theta, half, d);
    for (int e = pair_lo + threadIdx.x; e < pair_hi; e += blockDim.x) {
        const int head = e / hv, i = (e % hv) * 8;
        const int c1 = head * d + i, c2 = c1 + half;
        float x1[8], x2[8], y1[8], y2[8];
        load8_bias(x1, row, bias, c1);
        load8_bias(x2, row, bias, c2);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float c = cs[i + k], s = cs[half + i + k];
            y1[k] = x1[k] * c - x2[k] * s;
            y2[k] = x1[k] * s + x2[k] * c;
        }
        bf16_t *dst = head < H ? row + head * d : k_pool + slot_off + (size_t)(head - H) * d;
        *(uint4 *)(dst + i) = pack8(y1);
        *(uint4 *)(dst + i + half) = pack8(y2);
    }
    store_v(row, bias, v_pool, slot_off, H, Hkv, d);
}

/*
 * The general case: per-head QK norms and a partial rotary embedding. As above each thread holds two
 * 16-byte vectors of a head: a rotated pair (i, i + rot/2) for i < rot/2, or two of the dimensions
 * past rot, which pass through; a head's d/16 threads sit on consecutive lanes of one warp, which
 * sum the norm's squares by shuffles. Heads are dealt to the (token, group) blocks whole.
 */
static __global__ void qkv_norm_rope_store_kernel(bf16_t *qkv, const bf16_t *bias, const int32_t *tok_pos,
                                                  const int32_t *tok_slot, bf16_t *k_pool, bf16_t *v_pool,
                                                  int kv_stride, int H, int Hkv, int d, float log2_theta,
                                                  const bf16_t *q_norm, const bf16_t *k_norm, int rot, float eps)
{
    griddep_wait();
    extern __shared__ float cs[]; /* [rot/2] cos, then [rot/2] sin */
    const int t = blockIdx.x, rhalf = rot / 2, per = d / 16, width = (H + 2 * Hkv) * d;
    const int rpairs = rot / 16, pass_half = (d - rot) / 2; /* threads of rotated pairs; half the rest */
    bf16_t *row = qkv + (size_t)t * width;
    const float pos = (float)tok_pos[t];
    const size_t slot_off = (size_t)tok_slot[t] * kv_stride;
    const int groups = gridDim.y, grp = blockIdx.y;
    const int hper = (H + Hkv + groups - 1) / groups, h_lo = grp * hper, h_hi = min(H + Hkv, h_lo + hper);
    rope_table(cs, pos, log2_theta, rhalf, rot);
    for (int base = h_lo * per; base < h_hi * per; base += blockDim.x) { /* every lane of a warp takes part */
        const int e = base + threadIdx.x, head = e / per, j = e % per;
        const bool live = e < h_hi * per, turn = j < rpairs;
        const int i1 = turn ? 8 * j : rot + 8 * (j - rpairs), i2 = i1 + (turn ? rhalf : pass_half);
        float x1[8] = {0, 0, 0, 0, 0, 0, 0, 0}, x2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (live) {
            load8_bias(x1, row, bias, head * d + i1);
            load8_bias(x2, row, bias, head * d + i2);
        }
        const bf16_t *nw = head < H ? q_norm : k_norm;
        if (nw) {
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < 8; k++)
                ss += x1[k] * x1[k] + x2[k] * x2[k];
            for (int o = per / 2; o > 0; o >>= 1) /* over the head's d/16 lanes */
                ss += __shfl_xor_sync(0xffffffffu, ss, o);
            const float inv = rsqrtf(ss / (float)d + eps);
            float w1[8], w2[8];
            if (live) {
                unpack8(w1, *(const uint4 *)(nw + i1));
                unpack8(w2, *(const uint4 *)(nw + i2));
#pragma unroll
                for (int k = 0; k < 8; k++)
                    x1[k] *= inv * w1[k], x2[k] *= inv * w2[k];
            }
        }
        if (!live)
            continue;
        float y1[8], y2[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float c = turn ? cs[i1 + k] : 1.f, s = turn ? cs[rhalf + i1 + k] : 0.f;
            y1[k] = x1[k] * c - x2[k] * s;
            y2[k] = x1[k] * s + x2[k] * c;
        }
        bf16_t *dst = head < H ? row + head * d : k_pool + slot_off + (size_t)(head - H) * d;
        *(uint4 *)(dst + i1) = pack8(y1);
        *(uint4 *)(dst + i2) = pack8(y2);
    }
    store_v(row, bias, v_pool, slot_off, H, Hkv, d);
}

extern "C" int k_qkv_rope_store(bf16_t *qkv, const bf16_t *bias, const int32_t *tok_pos,
                                const int32_t *tok_slot, bf16_t *k_pool, bf16_t *v_pool, int kv_stride,
                                int T, int H, int Hkv, int d, float theta, const struct k_qk_norm *qn,
                                k_stream stream)
{
    if (kv_stride <= 0)
        kv_stride = Hkv * d;
    const int rot = qn && qn->rot > 0 ? qn->rot : d;
    if (d % 16 || kv_stride % 8 || T < 0) /* 16-byte vectors within each half of a head */
        return (int)cudaErrorInvalidValue;
    if (T == 0)
        return 0;
    /* a step of few tokens splits each token's heads into groups so that ~2 blocks per SM run
     * (each group recomputes the cos/sin table: larger steps keep one group) */
    int groups = 1;
    while (groups < 16 && (int64_t)T * groups < 264 && (H + Hkv) / (groups * 2) >= 1)
        groups *= 2;
    if (qn && (qn->q || qn->k || rot != d)) {
        /* a head's threads (d/16 of them) within one warp; the rotated and the passing dimensions in
         * whole pairs of vectors */
        if (d / 16 > 32 || (d / 16) & (d / 16 - 1) || rot % 16 || rot > d || (d - rot) % 16 || !qn->q != !qn->k)
            return (int)cudaErrorInvalidValue;
        return (int)k_launch(qkv_norm_rope_store_kernel, dim3((unsigned)T, (unsigned)groups), dim3(256),
                             rot * sizeof(float), stream, qkv, bias, tok_pos, tok_slot, k_pool, v_pool, kv_stride,
                             H, Hkv, d, log2f(theta), qn->q, qn->k, rot, qn->eps);
    }
    return (int)k_launch(qkv_rope_store_kernel, dim3((unsigned)T, (unsigned)groups), dim3(256), d * sizeof(float),
                         stream, qkv, bias, tok_pos, tok_slot, k_pool, v_pool, kv_stride, H, Hkv, d, log2f(theta));
}

static __global__ void swiglu_kernel(bf16_t *out, const bf16_t *gu, int F)
{
    griddep_wait();
    const bf16_t *g = gu + (size_t)blockIdx.x * 2 * F, *u = g + F;
    bf16_t *o = out + (size_t)blockIdx.x * F;
    for (int c = threadIdx.x * 8; c < F; c += blockDim.x * 8) {
        uint4 gv = *(const uint4 *)(g + c), uv = *(const uint4 *)(u + c), r;
        const bf16_t *ge = (const bf16_t *)&gv, *ue = (const bf16_t *)&uv;
        bf16_t *re = (bf16_t *)&r;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float x = bf2f(ge[k]);
            re[k] = f2bf(x / (1.f + __expf(-x)) * bf2f(ue[k]));
        }
        *(uint4 *)(o + c) = r;
    }
}

extern "C" int k_swiglu(bf16_t *out, const bf16_t *gu, int rows, int F, k_stream stream)
{
    if (F % 8)
        return (int)cudaErrorInvalidValue;
    if (rows <= 0)
        return 0;
    return (int)k_launch(swiglu_kernel, dim3(rows), dim3(threads_for(F)), 0, stream, out, gu, F);
}
