/*
 * kv_select.cu: sparse KV selection (Sparse-dLLM, dLLM-Serve's head-centric cache), one layer at a
 * time, right after its attention. Two kernels:
 *   score    per selecting segment, K/V head and candidate key: the mean of the segment's scoring
 *            rows' query vectors (fp32) over the head's query heads, dotted with the key (the
 *            ranking of a mean);
 *   select   per segment and K/V head: the scores of its kept set (the head's, or for one set for
 *            all heads their sum over the heads) max-pooled over a window, the keep-th largest
 *            found by a radix select over their order-preserving bits (four 8-bit digits), then
 *            every key above it and the first equal ones, in key order; then the head's K and V of
 *            the kept keys copied into the first keep keys of the request's cache. One set for all
 *            heads is ranked by each head's block alike (the same sums, the same result), so that
 *            no kernel waits for another to hand it the kept keys; the first head's block writes
 *            them out.
 * Both take a step's layers at once where they are given several (k_select_args.layers): the
 * candidates of each layer's pool, each layer's mean queries taken after its attention by
 * means_kernel, the same arithmetic as the score kernel's own. A short sequence's selection, a
 * chain of a few dependent memory round trips, then runs once a step rather than once a layer.
 * At a few hundred candidates, as in a short sequence's Refresh, each kernel is a round or two of
 * memory latency: a warp's loads are issued together and coalesced (its lanes take consecutive
 * 16-byte pieces of the key rows), and a head's keys are spread over several blocks. Every step is
 * deterministic: no atomics on values, ties broken by the lower key index.
 */
#include <float.h>

#include "common.cuh"

#define SEL_FIELDS 6 /* k_select_args.sel: row0, score_rows, cand, keep, src_page_off, dst_page_off */
#define SELECT_THREADS 1024 /* at most: a select block as wide as its candidates, from 256 up */

static __device__ __forceinline__ const int32_t *sel_of(const int32_t *sel, int s) { return sel + SEL_FIELDS * s; }

static __device__ __forceinline__ size_t slot_of(const int32_t *pages, int page_off, int key, int shift)
{
    return (size_t)pages[page_off + (key >> shift)] * (1u << shift) + (key & ((1 << shift) - 1));
}

#define SCORE_THREADS 256
#define SCORE_KEYS 64
#define SCORE_ITEMS (SCORE_KEYS / (SCORE_THREADS / 32) * 16 / 32) /* pieces a lane loads at once, d <= 128 */

/* A lane's pieces t0 + lane, t0 + 32 + lane, ... of its warp's keys j0.. (piece t: key j0 + t / per,
 * values (t % per) * 8.. of head kh), those past the items or the candidates left alone. */
static __device__ __forceinline__ void score_pieces(uint4 (&v)[SCORE_ITEMS], const bf16_t *k_pool, const int32_t *pages,
                                                    int src_off, int shift, size_t kvrow, int kh, int d, int per,
                                                    int items, int cand, int j0, int t0, int lane)
{
#pragma unroll
    for (int u = 0; u < SCORE_ITEMS; u++) {
        const int t = t0 + u * 32 + lane, j = j0 + t / per;
        if (t < items && j < cand)
            v[u] = *(const uint4 *)(k_pool + slot_of(pages, src_off, j, shift) * kvrow + (size_t)kh * d + (t % per) * 8);
    }
}

/* The means are taken a slice of MEAN_SLICE columns at a time (the whole group where it is
 * narrower): SCORE_THREADS / MEAN_SLICE groups of rows, each summing rows sixteen at a time
 * (independent loads in flight), the groups' sums added in a fixed order. A slice's means are the
 * same whichever block takes it: score_kernel walks its head group's slices, means_kernel deals
 * them over blocks. */
#define MEAN_SLICE 128

/* Columns s0.. of the slice of head group kh's cols query columns: their mean over rows row0..
 * row0 + rows - 1 of q, into mq[s0..] (SCORE_THREADS threads; grp_sums: SCORE_THREADS floats of
 * scratch beside mq). */
static __device__ __forceinline__ void mean_slice(const bf16_t *q, int q_stride, int row0, int rows, int kh, int cols,
                                                  int s0, float *mq, float *grp_sums)
{
    const int sw = cols < MEAN_SLICE ? cols : MEAN_SLICE, groups = SCORE_THREADS / sw;
    const int grp = threadIdx.x / sw, c = s0 + threadIdx.x - grp * sw;
    if (grp < groups && c < cols) {
        const bf16_t *col = q + (size_t)row0 * q_stride + (size_t)kh * cols + c;
        float acc[16];
#pragma unroll
        for (int k = 0; k < 16; k++)
            acc[k] = 0.f;
        int r = grp;
        for (; r + 15 * groups < rows; r += 16 * groups)
#pragma unroll
            for (int k = 0; k < 16; k++)
                acc[k] += bf2f(col[(size_t)(r + k * groups) * q_stride]);
        for (; r < rows; r += groups)
            acc[0] += bf2f(col[(size_t)r * q_stride]);
#pragma unroll
        for (int k = 0; k < 8; k++) /* a fixed tree */
            acc[k] += acc[k + 8];
#pragma unroll
        for (int k = 0; k < 4; k++)
            acc[k] += acc[k + 4];
        grp_sums[(size_t)grp * sw + c - s0] = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < sw && s0 + i < cols; i += SCORE_THREADS) {
        float sum = 0.f;
        for (int k = 0; k < groups; k++)
            sum += grp_sums[(size_t)k * sw + i];
        mq[s0 + i] = sum / (float)rows;
    }
    __syncthreads();
}

/* Every slice of head group kh's mean query, one after the other, into mq[0..cols). */
static __device__ __forceinline__ void mean_query(const bf16_t *q, int q_stride, int row0, int rows, int kh, int cols,
                                                  float *mq, float *grp_sums)
{
    for (int s0 = 0; s0 < cols; s0 += MEAN_SLICE)
        mean_slice(q, q_stride, row0, rows, kh, cols, s0, mq, grp_sums);
}

/* Block (sg, kh, z), sg = layer l's segment si (l num_sel + si), scores head kh of the segment's
 * candidates in layer l's pool (layer_stride elements a layer) in chunks of SCORE_KEYS keys (the
 * chunks z, z + gridDim.z, ...). Its mean query of the head's query heads is means' row sg where
 * they were taken before, else its own (mean_query; one layer: one head's rows are a few KiB, so
 * that no launch before it has to hand the means over); its warps' first key pieces are loaded
 * before, their latency spent with the means'. Then each warp takes SCORE_KEYS / warps
 * keys, its lanes the 16-byte pieces of their head rows in turn (a piece's partial dot over the
 * head's query heads), issued together; the pieces' partials are summed key by key in piece order.
 * The same means and the same sums whatever the grid: the scores are deterministic. */
static __global__ void __launch_bounds__(SCORE_THREADS)
    score_kernel(const bf16_t *q, int q_stride, const float *means, const bf16_t *k_pool, int64_t layer_stride,
                 const int32_t *pages, int shift, const int32_t *sel, int num_sel, float *raw, int max_cand, int H,
                 int Hkv, int d)
{
    griddep_wait();
    extern __shared__ float smem[]; /* [g d] mean queries, then [warps][pad(keys a warp x d / 8)] partials */
    const int sg = blockIdx.x, si = sg % num_sel, kh = blockIdx.y, g = H / Hkv, cols = g * d, lane = threadIdx.x & 31;
    k_pool += (size_t)(sg / num_sel) * layer_stride; /* the segment's layer */
    const int warp = threadIdx.x >> 5, warps = SCORE_THREADS / 32, kw = SCORE_KEYS / warps, per = d / 8;
    const int items = kw * per; /* a warp's (key, piece) pairs */
    float *mq = smem, *part = smem + cols + (size_t)warp * (items + items / 32 + 1);
    const int32_t *s = sel_of(sel, si);
    const int row0 = s[0], rows = s[1], cand = s[2], src_off = s[4];
    const size_t kvrow = (size_t)Hkv * d;
    int j0 = blockIdx.z * SCORE_KEYS + warp * kw;
    uint4 v[SCORE_ITEMS];
    score_pieces(v, k_pool, pages, src_off, shift, kvrow, kh, d, per, items, cand, j0, 0, lane); /* in flight
                                                                                                 * over the means */
    if (means) { /* taken after the layer's attention (means_kernel) */
        for (int c = threadIdx.x; c < cols; c += SCORE_THREADS)
            mq[c] = means[(size_t)blockIdx.x * H * d + (size_t)kh * cols + c];
        __syncthreads();
    } else {
        mean_query(q, q_stride, row0, rows, kh, cols, mq, smem + cols);
    }
    for (bool first = true; j0 < cand; j0 += gridDim.z * SCORE_KEYS, first = false) {
        for (int t0 = 0; t0 < items; t0 += 32 * SCORE_ITEMS) {
            if (!first || t0 > 0)
                score_pieces(v, k_pool, pages, src_off, shift, kvrow, kh, d, per, items, cand, j0, t0, lane);
#pragma unroll
            for (int u = 0; u < SCORE_ITEMS; u++) {
                const int t = t0 + u * 32 + lane, j = j0 + t / per, e = (t % per) * 8;
                if (t >= items)
                    break;
                const bf16_t *kv = (const bf16_t *)&v[u];
                float dot = 0.f;
                for (int qh = 0; qh < g && j < cand; qh++) {
                    const float *m = mq + (size_t)qh * d + e;
#pragma unroll
                    for (int k = 0; k < 8; k++)
                        dot += m[k] * bf2f(kv[k]);
                }
                part[t + t / 32] = dot;
            }
        }
        __syncwarp();
        if (lane < kw && j0 + lane < cand) {
            float dot = 0.f;
            for (int i = lane * per; i < (lane + 1) * per; i++)
                dot += part[i + i / 32];
            raw[((size_t)sg * Hkv + kh) * max_cand + j0 + lane] = dot;
        }
        __syncwarp();
    }
}

/* Order-preserving bits of a float: larger floats give larger unsigned integers. */
static __device__ __forceinline__ uint32_t order_bits(float f)
{
    const uint32_t u = __float_as_uint(f);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

/* Candidate j's score in set `set` of a segment's per-head scores r ([Hkv][max_cand]): its head's,
 * or (set < 0) the sum over the heads, in head order. */
static __device__ __forceinline__ float score_of(const float *r, int j, int set, int Hkv, int max_cand)
{
    if (set >= 0)
        return r[(size_t)set * max_cand + j];
    float sum = 0.f;
    for (int h0 = 0; h0 < Hkv; h0 += 16) { /* sixteen loads in flight, added in head order */
        float x[16];
#pragma unroll
        for (int k = 0; k < 16; k++)
            x[k] = h0 + k < Hkv ? r[(size_t)(h0 + k) * max_cand + j] : 0.f;
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (h0 + k < Hkv)
                sum += x[k];
    }
    return sum;
}

/* The order bits of candidate j's score max-pooled over the window j - half .. j + half (within
 * the n candidates), its scores those of set `set` of r as score_of reads them (a block's scores in
 * shared memory are one set: set 0, Hkv 1). */
static __device__ __forceinline__ uint32_t pooled_bits(const float *r, int j, int n, int half, int set, int Hkv,
                                                       int max_cand)
{
    float m = -FLT_MAX;
    for (int i = max(0, j - half); i <= min(n - 1, j + half); i++)
        m = fmaxf(m, score_of(r, i, set, Hkv, max_cand));
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
static __device__ __forceinline__ uint32_t key_at(const uint32_t *cache, const float *r, int j, int n, int half,
                                                  int set, int Hkv, int max_cand)
{
    return cache ? cache[j] : pooled_bits(r, j, n, half, set, Hkv, max_cand);
}

/* Segment si's kept keys: per K/V head, [num_sel][Hkv][max_keep]; one set for all heads,
 * [num_sel][max_keep] (written by the first head's blocks). */
static __device__ __forceinline__ int32_t *kept_of(int32_t *idx, int si, int kh, int Hkv, int max_keep, int per_head)
{
    return idx + (per_head ? (size_t)si * Hkv + kh : (size_t)si) * max_keep;
}

/* Block (sg, kh), sg = layer l's segment si as in score_kernel: the segment's kept keys of its set
 * (head kh's, or the one for all heads) in layer l; where it
 * copies (at most SELECT_COPY_KEEP kept keys), then head kh's K and V of them moved into the cache's
 * first keep keys: the kept keys' pool slots noted in shared memory, then every thread copying
 * 16-byte pieces of the kept rows, four in flight. A block that does not copy leaves that to
 * compact_kernel (one set for all heads is then ranked once, by a block kh = 0). */
#define SELECT_COPY_KEEP 512
static __global__ void __launch_bounds__(SELECT_THREADS)
    select_kernel(const int32_t *sel, int num_sel, const float *raw, int32_t *idx, bf16_t *k_pool, bf16_t *v_pool,
                  int64_t layer_stride, const int32_t *pages, int shift, int max_cand, int max_keep, int Hkv, int d,
                  int kernel, int cached, int per_head, int copy)
{
    griddep_wait();
    extern __shared__ uint32_t cache_mem[]; /* [max_cand] pooled bits, [max_cand] scores, where cached */
    __shared__ uint32_t hist[256], warp_sums[33];
    __shared__ uint32_t s_prefix, s_left;
    __shared__ int32_t src_slot[SELECT_COPY_KEEP], dst_slot[SELECT_COPY_KEEP];
    const int sg = blockIdx.x, kh = blockIdx.y, set = per_head ? kh : -1;
    const int32_t *s = sel_of(sel, sg % num_sel);
    const int n = s[2], keep = s[3], half = kernel / 2;
    k_pool += (size_t)(sg / num_sel) * layer_stride;
    v_pool += (size_t)(sg / num_sel) * layer_stride;
    const float *r = raw + (size_t)sg * Hkv * max_cand;
    int32_t *out = per_head || kh == 0 ? kept_of(idx, sg, kh, Hkv, max_keep, per_head) : NULL;
    uint32_t *cache = cached ? cache_mem : NULL;
    if (cache) {
        float *sc = (float *)(cache_mem + max_cand);
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            sc[j] = score_of(r, j, set, Hkv, max_cand);
        __syncthreads();
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            cache[j] = pooled_bits(sc, j, n, half, 0, 1, 0);
    }
    if (threadIdx.x == 0) {
        s_prefix = 0;
        s_left = (uint32_t)keep;
    }
    uint32_t mask = 0;
    for (int shift8 = 24; shift8 >= 0; shift8 -= 8) { /* the keep-th largest, a digit at a time */
        for (int b = threadIdx.x; b < 256; b += blockDim.x)
            hist[b] = 0;
        __syncthreads();
        const uint32_t prefix = s_prefix;
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            const uint32_t u = key_at(cache, r, j, n, half, set, Hkv, max_cand);
            if ((u & mask) == prefix)
                atomicAdd(&hist[(u >> shift8) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x < 32)
            find_bin(hist, shift8, &s_prefix, &s_left);
        mask |= 255u << shift8;
        __syncthreads();
    }
    const uint32_t thr = s_prefix, eq_needed = s_left;
    uint32_t gt_base = 0, eq_base = 0;
    for (int j0 = 0; j0 < n; j0 += blockDim.x) { /* kept keys in key order */
        const int j = j0 + threadIdx.x;
        const uint32_t u = j < n ? key_at(cache, r, j, n, half, set, Hkv, max_cand) : 0;
        const uint32_t gt = j < n && u > thr, eq = j < n && u == thr;
        uint32_t total;
        const uint32_t before = block_scan(gt << 16 | eq, warp_sums, &total);
        const uint32_t gt_before = gt_base + (before >> 16), eq_before = eq_base + (before & 0xffffu);
        if (gt || (eq && eq_before < eq_needed)) {
            const int at = gt_before + min(eq_before, eq_needed);
            if (out)
                out[at] = j;
            if (copy) {
                src_slot[at] = (int32_t)slot_of(pages, s[4], j, shift);
                dst_slot[at] = (int32_t)slot_of(pages, s[5], at, shift);
            }
        }
        gt_base += total >> 16;
        eq_base += total & 0xffffu;
    }
    if (!copy)
        return;
    __syncthreads(); /* the kept keys' slots noted */
    const int pieces = d / 8, all = keep * pieces;
    const size_t kvrow = (size_t)Hkv * d;
    for (int t0 = threadIdx.x; t0 < all; t0 += 4 * blockDim.x) {
        uint4 kv[4], vv[4];
        size_t dst[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int t = t0 + u * blockDim.x;
            if (t >= all)
                break;
            const int j = t / pieces, e = (t - j * pieces) * 8;
            const size_t src = (size_t)src_slot[j] * kvrow + (size_t)kh * d + e;
            dst[u] = (size_t)dst_slot[j] * kvrow + (size_t)kh * d + e;
            kv[u] = *(const uint4 *)(k_pool + src);
            vv[u] = *(const uint4 *)(v_pool + src);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            if (t0 + u * blockDim.x >= all)
                break;
            *(uint4 *)(k_pool + dst[u]) = kv[u];
            *(uint4 *)(v_pool + dst[u]) = vv[u];
        }
    }
}

/* More kept keys than a select block copies: one warp per kept key and K/V head moves K and V of the
 * head into the cache's first keep keys (block (sg, kh, z) as in select_kernel). */
static __global__ void compact_kernel(bf16_t *k_pool, bf16_t *v_pool, int64_t layer_stride, const int32_t *pages,
                                      int shift, const int32_t *sel, int num_sel, const int32_t *idx, int max_keep,
                                      int Hkv, int d, int per_head)
{
    griddep_wait();
    const int sg = blockIdx.x, kh = blockIdx.y, lane = threadIdx.x & 31;
    const int32_t *s = sel_of(sel, sg % num_sel);
    const int keep = s[3], src_off = s[4], dst_off = s[5];
    k_pool += (size_t)(sg / num_sel) * layer_stride;
    v_pool += (size_t)(sg / num_sel) * layer_stride;
    const int32_t *kept = kept_of((int32_t *)idx, sg, kh, Hkv, max_keep, per_head);
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
        cudaFuncAttributes fa;
        if (cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
            cudaFuncGetAttributes(&fa, select_kernel) == cudaSuccess && optin - (int)fa.sharedSizeBytes > limit &&
            cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 optin - (int)fa.sharedSizeBytes) == cudaSuccess)
            limit = optin - (int)fa.sharedSizeBytes; /* beside its static arrays */
        cudaGetLastError();
    }
    return (int64_t)max_cand * 8 <= limit;
}

/* The selection's scratch: the per-head scores [num_sel][Hkv][max_cand] fp32 (these bytes, rounded
 * to 256), then the kept keys (kept_of). */
static int64_t raw_bytes(int num_sel, int Hkv, int max_cand)
{
    return ((int64_t)num_sel * Hkv * max_cand * 4 + 255) / 256 * 256;
}

extern "C" int64_t k_kv_select_ws_bytes(int num_sel, int max_cand, int max_keep, int Hkv)
{
    (void)select_cache_fits(0); /* its attribute set here, outside any stream capture */
    return raw_bytes(num_sel, Hkv, max_cand) + (int64_t)num_sel * Hkv * max_keep * 4;
}

/* A select block's threads for n candidates: one a candidate, from 512 up to SELECT_THREADS (a
 * copying block's kept rows in one round of its loads). */
static int select_threads(int n)
{
    int t = 512;
    while (t < n && t < SELECT_THREADS)
        t *= 2;
    return t;
}

/* score_kernel's shared memory: the head group's mean queries, then each warp's partials (padded) */
static size_t score_smem(int g, int d)
{
    const int items = SCORE_KEYS / (SCORE_THREADS / 32) * (d / 8), parts = (SCORE_THREADS / 32) * (items + items / 32 + 1);
    return (size_t)(g * d + (parts > SCORE_THREADS ? parts : SCORE_THREADS)) * sizeof(float); /* (or the row groups' sums) */
}

#define SCORE_Z 8 /* at most: blocks a head's candidates are dealt over */

/* The layers a call selects in (k_select_args.layers: 0 is one) */
static int sel_layers(const struct k_select_args *a) { return a->layers > 1 ? a->layers : 1; }

extern "C" int k_kv_select(const struct k_select_args *a, k_stream stream)
{
    const int d = a->d, L = sel_layers(a), n = a->num_sel * L;
    if (a->num_sel <= 0)
        return 0;
    if (d % 8 || a->H % a->Hkv || a->kernel < 1 || a->kernel % 2 == 0 || a->max_cand <= 0 ||
        score_smem(a->H / a->Hkv, d) > 48 * 1024 || (L > 1 && !a->means))
        return (int)cudaErrorInvalidValue;
    const int64_t need = k_kv_select_ws_bytes(n, a->max_cand, a->max_keep, a->Hkv);
    if (!a->ws || need > a->ws_bytes)
        return (int)cudaErrorInvalidValue;
    float *raw = (float *)a->ws;
    int32_t *idx = (int32_t *)k_kv_select_idx(a);
    const int chunks = (a->max_cand + SCORE_KEYS - 1) / SCORE_KEYS;
    cudaError_t rc = k_launch(score_kernel, dim3((unsigned)n, (unsigned)a->Hkv, (unsigned)(chunks < SCORE_Z ? chunks : SCORE_Z)),
                              dim3(SCORE_THREADS), score_smem(a->H / a->Hkv, d), stream, a->q, a->q_stride, a->means,
                              (const bf16_t *)a->k_pool, a->layer_stride, a->pages, a->page_shift, a->sel, a->num_sel,
                              raw, a->max_cand, a->H, a->Hkv, d);
    const int cached = select_cache_fits(a->max_cand), copy = a->max_keep <= SELECT_COPY_KEEP;
    if (rc == cudaSuccess && a->max_keep > 0)
        rc = k_launch(select_kernel, dim3((unsigned)n, (unsigned)(copy || a->per_head ? a->Hkv : 1)),
                      dim3(select_threads(a->max_cand)), cached ? (size_t)a->max_cand * 8 : 0, stream, a->sel,
                      a->num_sel, (const float *)raw, idx, a->k_pool, a->v_pool, a->layer_stride, a->pages,
                      a->page_shift, a->max_cand, a->max_keep, a->Hkv, d, a->kernel, cached, a->per_head, copy);
    if (rc == cudaSuccess && a->max_keep > 0 && !copy)
        rc = k_launch(compact_kernel, dim3((unsigned)n, (unsigned)a->Hkv, (unsigned)((a->max_keep + 7) / 8)),
                      dim3(256), 0, stream, a->k_pool, a->v_pool, a->layer_stride, a->pages, a->page_shift, a->sel,
                      a->num_sel, (const int32_t *)idx, a->max_keep, a->Hkv, d, a->per_head);
    return (int)(rc == cudaSuccess ? cudaGetLastError() : rc);
}

extern "C" const int32_t *k_kv_select_idx(const struct k_select_args *a)
{
    return (const int32_t *)((char *)a->ws + raw_bytes(a->num_sel * sel_layers(a), a->Hkv, a->max_cand));
}

/* Block (si, kh, z): slice z of segment si's mean query of head group kh (mean_slice, as
 * score_kernel takes it), written to its row of out ([num_sel][H d] fp32). */
static __global__ void __launch_bounds__(SCORE_THREADS)
    means_kernel(const bf16_t *q, int q_stride, const int32_t *sel, float *out, int H, int Hkv, int d)
{
    griddep_wait();
    extern __shared__ float smem[]; /* [g d] the means, then the row groups' sums */
    const int si = blockIdx.x, kh = blockIdx.y, cols = H / Hkv * d, s0 = blockIdx.z * MEAN_SLICE;
    const int32_t *s = sel_of(sel, si);
    mean_slice(q, q_stride, s[0], s[1], kh, cols, s0, smem, smem + cols);
    for (int c = s0 + threadIdx.x; c < cols && c < s0 + MEAN_SLICE; c += SCORE_THREADS)
        out[(size_t)si * H * d + (size_t)kh * cols + c] = smem[c];
}

extern "C" int k_kv_select_means(const struct k_select_args *a, float *out, k_stream stream)
{
    if (a->num_sel <= 0)
        return 0;
    if (a->d % 8 || a->H % a->Hkv || score_smem(a->H / a->Hkv, a->d) > 48 * 1024)
        return (int)cudaErrorInvalidValue;
    const int cols = a->H / a->Hkv * a->d;
    return (int)k_launch(means_kernel, dim3((unsigned)a->num_sel, (unsigned)a->Hkv, (unsigned)((cols + MEAN_SLICE - 1) / MEAN_SLICE)), dim3(SCORE_THREADS),
                         score_smem(a->H / a->Hkv, a->d), stream, a->q, a->q_stride, a->sel, out, a->H, a->Hkv,
                         a->d);
}
