/*
 * kv_select.cu: sparse KV selection (Sparse-dLLM, dLLM-Serve's head-centric cache), one layer at a
 * time, right after its attention. Four kernels:
 *   mean_q   per selecting segment, the mean of its scoring rows' query vectors (fp32, per head);
 *   score    per candidate key, per K/V head: the sum over the head's query heads of mean_q . k
 *            (the ranking of a mean); uniform selection sums over every head instead;
 *   select   per segment and kept set (per K/V head, or one): the scores max-pooled over a window,
 *            the keep-th largest found by a radix select over their order-preserving bits (four
 *            8-bit digits), then every key above it and the first equal ones, in key order;
 *   compact  the kept keys' K and V copied into the first keep keys of the request's cache.
 * Every step is deterministic: no atomics on values, ties broken by the lower key index.
 */
#include <float.h>

#include "common.cuh"

#define SEL_FIELDS 6 /* k_select_args.sel: row0, score_rows, cand, keep, src_page_off, dst_page_off */
#define SELECT_THREADS 1024
#define SCORE_THREADS 256 /* a score block: 32 keys, its 8 warps taking the K/V heads in turn */

static __device__ __forceinline__ const int32_t *sel_of(const int32_t *sel, int s) { return sel + SEL_FIELDS * s; }

static __device__ __forceinline__ size_t slot_of(const int32_t *pages, int page_off, int key, int shift)
{
    return (size_t)pages[page_off + (key >> shift)] * (1u << shift) + (key & ((1 << shift) - 1));
}

/* Blocks of MEAN_COLS columns: one thread a column, its rows summed four at a time (independent
 * loads in flight) in a fixed order. */
#define MEAN_COLS 128
static __global__ void mean_q_kernel(const bf16_t *q, int q_stride, const int32_t *sel, float *mq, int qd)
{
    griddep_wait();
    const int32_t *s = sel_of(sel, blockIdx.x);
    const int row0 = s[0], rows = s[1], c = blockIdx.y * MEAN_COLS + threadIdx.x;
    if (c >= qd)
        return;
    const bf16_t *col = q + (size_t)row0 * q_stride + c;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    int r = 0;
    for (; r + 4 <= rows; r += 4)
#pragma unroll
        for (int k = 0; k < 4; k++)
            acc[k] += bf2f(col[(size_t)(r + k) * q_stride]);
    for (; r < rows; r++)
        acc[0] += bf2f(col[(size_t)r * q_stride]);
    mq[(size_t)blockIdx.x * qd + c] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) / (float)rows;
}

/* A block takes 32 candidate keys, one a lane; its warps take the K/V heads in turn (warp w the
 * heads w, w + 8, ...), so that a warp's lanes read one head's mean queries from shared memory at
 * once (a broadcast) while each streams its own key's d values, eight 16-byte loads in flight.
 * Uniform selection sums each key's heads in a fixed order: its warp's heads in turn, then the
 * warps in turn. */
static __global__ void score_kernel(const bf16_t *k_pool, const int32_t *pages, int shift, const int32_t *sel,
                                    const float *mq, float *raw, int max_cand, int H, int Hkv, int d, int per_head)
{
    griddep_wait();
    extern __shared__ float smq[]; /* [H d] mean queries, then [warps][32] per-warp sums */
    const int si = blockIdx.x, qd = H * d, g = H / Hkv, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    float *part = smq + qd;
    const int32_t *s = sel_of(sel, si);
    const int cand = s[2], src_off = s[4], j = blockIdx.y * 32 + lane;
    for (int c = threadIdx.x; c < qd; c += blockDim.x)
        smq[c] = mq[(size_t)si * qd + c];
    __syncthreads();
    float total = 0.f;
    const bf16_t *key = j < cand ? k_pool + slot_of(pages, src_off, j, shift) * (size_t)Hkv * d : NULL;
    for (int kh = warp; kh < Hkv && key; kh += warps) {
        float dot = 0.f;
        for (int e0 = 0; e0 < d; e0 += 64) {
            uint4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++)
                if (e0 + 8 * u < d)
                    v[u] = *(const uint4 *)(key + (size_t)kh * d + e0 + 8 * u);
#pragma unroll
            for (int u = 0; u < 8; u++) {
                if (e0 + 8 * u >= d)
                    break;
                const bf16_t *kv = (const bf16_t *)&v[u];
                for (int qh = kh * g; qh < (kh + 1) * g; qh++) {
                    const float *m = smq + (size_t)qh * d + e0 + 8 * u;
#pragma unroll
                    for (int k = 0; k < 8; k++)
                        dot += m[k] * bf2f(kv[k]);
                }
            }
        }
        if (per_head)
            raw[((size_t)si * Hkv + kh) * max_cand + j] = dot;
        total += dot;
    }
    if (per_head)
        return;
    part[warp * 32 + lane] = total;
    __syncthreads();
    if (warp == 0 && j < cand) {
        float sum = 0.f;
        for (int w = 0; w < warps; w++)
            sum += part[w * 32 + lane];
        raw[(size_t)si * Hkv * max_cand + j] = sum;
    }
}

/* Order-preserving bits of a float: larger floats give larger unsigned integers. */
static __device__ __forceinline__ uint32_t order_bits(float f)
{
    const uint32_t u = __float_as_uint(f);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

static __device__ __forceinline__ uint32_t pooled_bits(const float *r, int j, int n, int half)
{
    float m = -FLT_MAX;
    for (int i = max(0, j - half); i <= min(n - 1, j + half); i++)
        m = fmaxf(m, r[i]);
    return order_bits(m);
}

/* Exclusive block-wide scan of v (SELECT_THREADS threads); *total gets the sum. */
static __device__ __forceinline__ uint32_t block_scan(uint32_t v, uint32_t *warp_sums, uint32_t *total)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    uint32_t x = v;
    for (int off = 1; off < 32; off <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off)
            x += y;
    }
    if (lane == 31)
        warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        uint32_t w = lane < warps ? warp_sums[lane] : 0, t = w;
        for (int off = 1; off < 32; off <<= 1) {
            uint32_t y = __shfl_up_sync(0xffffffffu, t, off);
            if (lane >= off)
                t += y;
        }
        if (lane < warps)
            warp_sums[lane] = t - w; /* exclusive */
        if (lane == 31)
            warp_sums[32] = t;
    }
    __syncthreads();
    const uint32_t out = warp_sums[warp] + x - v;
    *total = warp_sums[32];
    __syncthreads();
    return out;
}

/* Warp 0 finds the bin of hist (256 counts, read from the top) that holds the left-th largest key:
 * each lane sums eight bins, a warp scan finds the lane, and that lane walks its bins, then sets
 * the next digit of *prefix and what is left to take below the bins above. */
static __device__ __forceinline__ void find_bin(const uint32_t *hist, int shift, uint32_t *prefix, uint32_t *left)
{
    const int lane = threadIdx.x & 31;
    uint32_t mine = 0;
    for (int k = 0; k < 8; k++)
        mine += hist[255 - 8 * lane - k];
    uint32_t incl = mine;
    for (int off = 1; off < 32; off <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off)
            incl += y;
    }
    const uint32_t want = *left;
    __syncwarp(); /* every lane has read it before one lane writes it */
    const unsigned ballot = __ballot_sync(0xffffffffu, incl >= want);
    const int first = ballot ? __ffs(ballot) - 1 : 31;
    if (lane == first) {
        uint32_t acc = incl - mine;
        int b = 255 - 8 * lane;
        for (int k = 0; k < 7 && acc + hist[b] < want; k++)
            acc += hist[b--];
        *prefix |= (uint32_t)b << shift;
        *left = want - acc;
    }
}

/* The pooled order bits of candidate j: from the shared copy when the block holds one. */
static __device__ __forceinline__ uint32_t key_at(const uint32_t *cache, const float *r, int j, int n, int half)
{
    return cache ? cache[j] : pooled_bits(r, j, n, half);
}

static __global__ void select_kernel(const int32_t *sel, const float *raw, int32_t *idx, int max_cand, int max_keep,
                                     int Hkv, int kernel, int cached)
{
    griddep_wait();
    extern __shared__ uint32_t cache_mem[]; /* [max_cand] where cached */
    __shared__ uint32_t hist[256], warp_sums[33];
    __shared__ uint32_t s_prefix, s_left;
    const int si = blockIdx.x, set = blockIdx.y;
    const int32_t *s = sel_of(sel, si);
    const int n = s[2], keep = s[3], half = kernel / 2;
    const float *r = raw + ((size_t)si * Hkv + set) * max_cand;
    int32_t *out = idx + ((size_t)si * gridDim.y + set) * max_keep;
    uint32_t *cache = cached ? cache_mem : NULL;
    for (int j = threadIdx.x; cache && j < n; j += blockDim.x)
        cache[j] = pooled_bits(r, j, n, half);
    if (threadIdx.x == 0) {
        s_prefix = 0;
        s_left = (uint32_t)keep;
    }
    uint32_t mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) { /* the keep-th largest, a digit at a time */
        for (int b = threadIdx.x; b < 256; b += blockDim.x)
            hist[b] = 0;
        __syncthreads();
        const uint32_t prefix = s_prefix;
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            const uint32_t u = key_at(cache, r, j, n, half);
            if ((u & mask) == prefix)
                atomicAdd(&hist[(u >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x < 32)
            find_bin(hist, shift, &s_prefix, &s_left);
        mask |= 255u << shift;
        __syncthreads();
    }
    const uint32_t thr = s_prefix, eq_needed = s_left;
    uint32_t gt_base = 0, eq_base = 0;
    for (int j0 = 0; j0 < n; j0 += blockDim.x) { /* kept keys in key order */
        const int j = j0 + threadIdx.x;
        const uint32_t u = j < n ? key_at(cache, r, j, n, half) : 0;
        const uint32_t gt = j < n && u > thr, eq = j < n && u == thr;
        uint32_t total;
        const uint32_t before = block_scan(gt << 16 | eq, warp_sums, &total);
        const uint32_t gt_before = gt_base + (before >> 16), eq_before = eq_base + (before & 0xffffu);
        if (gt || (eq && eq_before < eq_needed))
            out[gt_before + min(eq_before, eq_needed)] = j;
        gt_base += total >> 16;
        eq_base += total & 0xffffu;
    }
}

/* One warp per kept key and K/V head: K and V of the head moved into the cache's first keep keys. */
static __global__ void compact_kernel(bf16_t *k_pool, bf16_t *v_pool, const int32_t *pages, int shift,
                                      const int32_t *sel, const int32_t *idx, int max_keep, int Hkv, int d,
                                      int per_head)
{
    griddep_wait();
    const int si = blockIdx.x, kh = blockIdx.y, lane = threadIdx.x & 31;
    const int32_t *s = sel_of(sel, si);
    const int keep = s[3], src_off = s[4], dst_off = s[5];
    const int32_t *kept = idx + ((size_t)si * (per_head ? Hkv : 1) + (per_head ? kh : 0)) * max_keep;
    const size_t kvrow = (size_t)Hkv * d;
    const int j = blockIdx.z * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (j >= keep)
        return;
    const size_t src = slot_of(pages, src_off, kept[j], shift) * kvrow + (size_t)kh * d;
    const size_t dst = slot_of(pages, dst_off, j, shift) * kvrow + (size_t)kh * d;
    for (int e = lane * 8; e < d; e += 32 * 8) {
        *(uint4 *)(k_pool + dst + e) = *(const uint4 *)(k_pool + src + e);
        *(uint4 *)(v_pool + dst + e) = *(const uint4 *)(v_pool + src + e);
    }
}

/* Whether the ranking keeps its pooled keys in shared memory for max_cand candidates (else it
 * pools them from global memory again on each of its five walks): up to what the device lets one
 * block have, asked once. */
static int select_cache_fits(int max_cand)
{
    static int limit = -1;
    if (limit < 0) {
        int dev = 0, optin = 0;
        limit = 48 * 1024;
        if (cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
            optin > limit + 4096 &&
            cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 4096) ==
                cudaSuccess)
            limit = optin - 4096; /* the static arrays beside it */
        cudaGetLastError();
    }
    return (int64_t)max_cand * 4 <= limit;
}

extern "C" int64_t k_kv_select_ws_bytes(int num_sel, int max_cand, int max_keep, int H, int Hkv, int d, int per_head)
{
    (void)select_cache_fits(0); /* its attribute set here, outside any stream capture */
    const int64_t mq = (int64_t)num_sel * H * d * 4, raw = (int64_t)num_sel * Hkv * max_cand * 4;
    const int64_t idx = (int64_t)num_sel * (per_head ? Hkv : 1) * max_keep * 4;
    return (mq + 255) / 256 * 256 + (raw + 255) / 256 * 256 + idx;
}

extern "C" int k_kv_select(const struct k_select_args *a, k_stream stream)
{
    const int d = a->d;
    if (a->num_sel <= 0)
        return 0;
    if (d % 8 || a->H % a->Hkv || a->kernel < 1 || a->kernel % 2 == 0 || a->max_cand <= 0 ||
        (size_t)(a->H * d + SCORE_THREADS) * sizeof(float) > 48 * 1024)
        return (int)cudaErrorInvalidValue;
    const int64_t need = k_kv_select_ws_bytes(a->num_sel, a->max_cand, a->max_keep, a->H, a->Hkv, d, a->per_head);
    if (!a->ws || need > a->ws_bytes)
        return (int)cudaErrorInvalidValue;
    const int qd = a->H * d;
    char *ws = (char *)a->ws;
    float *mq = (float *)ws;
    float *raw = (float *)(ws + ((int64_t)a->num_sel * qd * 4 + 255) / 256 * 256);
    int32_t *idx = (int32_t *)((char *)raw + ((int64_t)a->num_sel * a->Hkv * a->max_cand * 4 + 255) / 256 * 256);
    const int sets = a->per_head ? a->Hkv : 1;
    cudaError_t rc = k_launch(mean_q_kernel, dim3((unsigned)a->num_sel, (unsigned)((qd + MEAN_COLS - 1) / MEAN_COLS)),
                              dim3(MEAN_COLS), 0, stream, a->q, a->q_stride, a->sel, mq, qd);
    if (rc == cudaSuccess)
        rc = k_launch(score_kernel, dim3((unsigned)a->num_sel, (unsigned)((a->max_cand + 31) / 32)),
                      dim3(SCORE_THREADS), (size_t)(qd + SCORE_THREADS) * sizeof(float), stream,
                      (const bf16_t *)a->k_pool, a->pages, a->page_shift, a->sel, (const float *)mq, raw, a->max_cand,
                      a->H, a->Hkv, d, a->per_head);
    const int cached = select_cache_fits(a->max_cand);
    if (rc == cudaSuccess && a->max_keep > 0)
        rc = k_launch(select_kernel, dim3((unsigned)a->num_sel, (unsigned)sets), dim3(SELECT_THREADS),
                      cached ? (size_t)a->max_cand * 4 : 0, stream, a->sel, (const float *)raw, idx, a->max_cand,
                      a->max_keep, a->Hkv, a->kernel, cached);
    if (rc == cudaSuccess && a->max_keep > 0)
        rc = k_launch(compact_kernel, dim3((unsigned)a->num_sel, (unsigned)a->Hkv, (unsigned)((a->max_keep + 7) / 8)),
                      dim3(256), 0, stream, a->k_pool, a->v_pool, a->pages, a->page_shift, a->sel,
                      (const int32_t *)idx, a->max_keep, a->Hkv, d, a->per_head);
    return (int)(rc == cudaSuccess ? cudaGetLastError() : rc);
}

extern "C" const int32_t *k_kv_select_idx(const struct k_select_args *a)
{
    char *ws = (char *)a->ws;
    char *raw = ws + ((int64_t)a->num_sel * a->H * a->d * 4 + 255) / 256 * 256;
    return (const int32_t *)(raw + ((int64_t)a->num_sel * a->Hkv * a->max_cand * 4 + 255) / 256 * 256);
}
