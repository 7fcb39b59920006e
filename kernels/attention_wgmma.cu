/*
 * attention_wgmma.cu: the attention of attention.cu on Hopper's warpgroup MMA (wgmma, sm_90a) for
 * head dim 128 without key splits: by default the segments of at least K_ATTN_LONG_Q query rows
 * (k_attn_args.impl = 2), or every segment (impl = 1, TESSERA_ATTENTION=wgmma).
 *
 * A work item is 128 query rows of one head: the 64-row tiles q0 and q0 + 64 of the tile list, two
 * warpgroups (8 warps), so each K/V tile in shared memory serves both. Blocks are persistent, one an
 * SM, each taking items in turn and fetching the next one's metadata, first K/V tile and Q while
 * finishing the current one (attention_wgmma_kernel). Q fragments are loaded into registers once; K/V tiles of
 * 64 keys are gathered from the pool's pages by cp.async, two stages deep with one barrier a tile,
 * in wgmma's 128-byte swizzle (a warp's copies cover whole 128-byte lines: half the L2 requests of
 * the unswizzled core-matrix layout, where a warp copied 64 bytes of each of 8 rows: 16 x 512 at
 * 267 TFLOP/s against 191); the page ids of the next tile are staged in shared memory a tile ahead.
 * S = Q K^T is one m64n64k16 wgmma per 16 of d (Q from registers, K K-major in shared memory); the
 * online softmax runs on S in registers (the accumulator fragment is mma.sync's, so both kernels
 * share attention_frag.cuh); O += P V is one m64n128k16 wgmma per 16 keys with P from registers and
 * V read transposed (MN-major). Built only into the sm_90a image; elsewhere the launcher reports it
 * unavailable and attention.cu's kernel runs.
 */
#include "attention_frag.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_WGMMA 1
#endif

#define WD 128                    /* head dim */
#define WM 128                    /* query rows a block: two warpgroups of 64 */
#define WN 64                     /* keys a stage */
#define TILE_BYTES (64 * WD * 2)  /* a 64 x 128 bf16 tile: 16 KiB */
/* K and V of two stages (from a 1024-byte boundary, the swizzle's period), two tiles' page ids */
#define SMEM_BYTES (1024 + 4 * TILE_BYTES + 2 * 4 * WN)

#ifdef HAVE_WGMMA
/* Byte offset of 16-byte chunk cc (8 columns) of row r in a 64 x 128 tile in wgmma's 128-byte
 * swizzle: the halves of d 8 KiB apart, each 64 rows of 128 bytes (8-row atoms of 1 KiB), chunk
 * c of row r stored at c ^ (r % 8). */
static __device__ __forceinline__ uint32_t sw_off(int r, int cc)
{
    return (cc >> 3) * 8192 + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
}

/* 16 bytes from global to shared memory; bytes = 0 fills zeros and reads nothing */
static __device__ __forceinline__ void cp_async16(uint32_t s, const void *gmem, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

/* wgmma shared-memory descriptor, 128-byte swizzle: start, leading and stride byte offsets */
static __device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 62);
}

#include "attention_wgmma.inc"

/* A thread's share of a K/V tile: 16-byte chunk t % 8 of both halves of d in rows t / 8 + 32 i. A
 * warp copies 4 rows' 128-byte halves a copy (4 whole L2 lines), each 8 threads one row's: free of
 * bank conflicts in the swizzle. */
#define KV_ROWS 2
static __device__ __forceinline__ int kv_row0(void) { return threadIdx.x >> 3; }

/* The page ids of this thread's rows of the tile at key k0 (the last key's page past klen). */
static __device__ __forceinline__ void kv_pages(int (&pid)[KV_ROWS], const int32_t *pages, int shift, int k0, int klen)
{
#pragma unroll
    for (int i = 0; i < KV_ROWS; i++)
        pid[i] = __ldg(pages + (min(k0 + kv_row0() + 32 * i, klen - 1) >> shift));
}

/* The page ids of the tile at key k0 (its pages from k0 >> shift on, up to klen) into shared memory
 * at ids by cp.async: staged a tile ahead, they are read from there when the tile is loaded (page
 * ids read into registers instead would be waited for by the next wgmma fence). */
static __device__ __forceinline__ void stage_pages(uint32_t ids, const int32_t *pages, int shift, int k0, int klen)
{
    const int first = k0 >> shift, n = ((min(k0 + WN, klen) - 1) >> shift) - first + 1;
    if ((int)threadIdx.x < n)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(ids + 4 * threadIdx.x),
                     "l"(pages + first + threadIdx.x));
}

/* This thread's rows' page ids of the tile at k0 from its staged ids */
static __device__ __forceinline__ void staged_pages(int (&pid)[KV_ROWS], uint32_t ids, int shift, int k0, int klen)
{
#pragma unroll
    for (int i = 0; i < KV_ROWS; i++) {
        const int j = min(k0 + kv_row0() + 32 * i, klen - 1);
        asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(pid[i]) : "r"(ids + 4 * ((j >> shift) - (k0 >> shift))));
    }
}

/* keys [k0, k0 + WN) of the segment into K and V tiles (zeros past key_len; k0 < klen): kp and vp
 * point at the thread's chunk of the head's first half of d in slot 0, slot_bytes from slot to
 * slot; pid holds the page ids of its rows (kv_pages) */
static __device__ __forceinline__ void load_kv(uint32_t ks, uint32_t vs, const char *kp, const char *vp,
                                               uint32_t slot_bytes, const int (&pid)[KV_ROWS], int shift, int k0,
                                               int klen)
{
    const int c = threadIdx.x & 7;
#pragma unroll
    for (int i = 0; i < KV_ROWS; i++) {
        const int row = kv_row0() + 32 * i, j = k0 + row, n = j < klen ? 16 : 0;
        const uint32_t slot = ((uint32_t)pid[i] << shift) | (min(j, klen - 1) & ((1 << shift) - 1));
        const uint64_t off = (uint64_t)slot * slot_bytes;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            cp_async16(ks + sw_off(row, 8 * h + c), kp + off + 128 * h, n);
            cp_async16(vs + sw_off(row, 8 * h + c), vp + off + 128 * h, n);
        }
    }
}
#endif

/* A work item: 128 query rows (tile q0 and the next) of segment seg for one head */
struct wg_item {
    int seg, q0, head, qlen, klen, qs, kvc, poff;
};

/* Persistent blocks: block b takes items b, b + gridDim.x, ... of items = ntiles x heads, item w
 * being tile w % ntiles of the list for head w / ntiles (blocks running together share a head's K/V
 * in L2). While it computes an item it fetches the next one's tile, segment and page ids, and
 * during the item's last K/V tile it issues the next item's first K/V tile and, once the last
 * S is done, its Q: a block's start (a chain of dependent loads, Q's loads, the first K/V tile)
 * overlaps the previous item's end instead of stalling every block (Nsight Compute put 28% of the
 * one-block-an-item kernel's stalls there, engine/BENCHMARKS.md). ntiles is the list's wgmma
 * tiles (k_attn_args.wg_tiles) or, where the list is not ordered, every tile: items of a tile at an
 * odd multiple of 64 rows or of a segment below wg_min_q rows are then skipped. */
static __global__ __launch_bounds__(256, 1) void attention_wgmma_kernel(const k_attn_args a, int ntiles, int items)
{
#ifdef HAVE_WGMMA
    extern __shared__ __align__(128) unsigned char sm[];
    griddep_wait();
    const uint32_t base = ((uint32_t)__cvta_generic_to_shared(sm) + 1023) & ~1023u;
    /* the page ids of the tile loaded into stage s are staged at ids + 4 WN s */
    const uint32_t ids = base + 4 * TILE_BYTES;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int c = threadIdx.x & 7, bs = a.block_size;
    const uint32_t slot_bytes = 2u * (a.kv_stride > 0 ? a.kv_stride : a.Hkv * WD);
    const float sl2 = a.scale * 1.4426950408889634f;
    auto fetch_tile = [&](int w, wg_item &it) {
        const int ti = w % ntiles;
        it.seg = a.tiles[2 * ti], it.q0 = a.tiles[2 * ti + 1], it.head = w / ntiles;
    };
    auto fetch_seg = [&](wg_item &it) {
        it.qlen = a.q_len[it.seg], it.klen = a.key_len[it.seg], it.qs = a.q_start[it.seg];
        it.kvc = a.kv_cached[it.seg], it.poff = a.page_off[it.seg];
    };
    auto valid = [&](const wg_item &it) { return !(it.q0 & 64) && it.qlen >= a.wg_min_q; };
    /* this thread's chunk of the head's first half of d in slot 0 of the K and V pools */
    auto kv_ptr = [&](const bf16_t *pool, int head) {
        return (const char *)(pool + (size_t)(head / (a.H / a.Hkv)) * WD + c * 8);
    };
    wg_item cur, nxt;
    bool have = false;  /* cur's fields are fetched */
    bool ready = false; /* cur's Q is in qf and its first K/V tile in flight (into stage) */
    int stage = 0;
    int pid[KV_ROWS], npid[KV_ROWS];
    uint32_t qf[WD / 16][4]; /* mma.sync's A fragments are also wgmma's A from registers */
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
        if (!have) {
            fetch_tile(w, cur);
            fetch_seg(cur);
        }
        have = false;
        if (!valid(cur)) /* only where the list is not ordered */
            continue;
        const int32_t *pages = a.pages + cur.poff;
        const int klen = cur.klen, kvc = cur.kvc, qlen = cur.qlen;
        /* warps 4-7 are the second warpgroup's; past the segment it computes on zero queries (a
         * branch around the wgmma would make the compiler serialize them) and stores nothing */
        const int r0 = cur.q0 + warp * 16 + g, r1 = r0 + 8;
        const int kend = attn_key_end(klen, kvc, bs, cur.q0 + WM, qlen);
        const char *kp = kv_ptr(a.k_pool, cur.head), *vp = kv_ptr(a.v_pool, cur.head);
        if (!ready) {
            attn_load_q<WD>(qf, a, cur.qs, cur.head, r0, r1, qlen, t4);
            if (kend > 0) {
                kv_pages(pid, pages, a.page_shift, 0, klen);
                load_kv(base + 2 * stage * TILE_BYTES, base + (2 * stage + 1) * TILE_BYTES, kp, vp, slot_bytes, pid,
                        a.page_shift, 0, klen);
                if (WN < kend)
                    stage_pages(ids + 4 * WN * (stage ^ 1), pages, a.page_shift, WN, klen);
            }
            asm volatile("cp.async.commit_group;\n" ::);
        }
        ready = false;
        const bool more = w + gridDim.x < items;
        if (more)
            fetch_tile(w + gridDim.x, nxt);

        float o[WD / 8][4];
#pragma unroll
        for (int n = 0; n < WD / 8; n++)
            o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
        for (int k0 = 0; k0 < kend; k0 += WN) {
            const uint32_t ks = base + 2 * stage * TILE_BYTES, vs = ks + TILE_BYTES;
            const bool last = k0 + WN >= kend;
            if (more && k0 == 0)
                fetch_seg(nxt);
            if (more && (k0 == WN || (last && k0 == 0))) /* the next item's first page ids */
                kv_pages(npid, a.pages + nxt.poff, a.page_shift, 0, nxt.klen);
            asm volatile("cp.async.wait_group 0;\n" ::);
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* cp.async writes, wgmma reads */
            __syncthreads();
            /* past the barrier the tile is visible to all and the other stage is free */
            const uint32_t kn = base + 2 * (stage ^ 1) * TILE_BYTES;
            if (!last) {
                staged_pages(pid, ids + 4 * WN * (stage ^ 1), a.page_shift, k0 + WN, klen);
                load_kv(kn, kn + TILE_BYTES, kp, vp, slot_bytes, pid, a.page_shift, k0 + WN, klen);
                if (k0 + 2 * WN < kend)
                    stage_pages(ids + 4 * WN * stage, pages, a.page_shift, k0 + 2 * WN, klen);
            } else if (more && valid(nxt)) { /* the next item's first tile */
                const int nkend = attn_key_end(nxt.klen, nxt.kvc, bs, nxt.q0 + WM, nxt.qlen);
                load_kv(kn, kn + TILE_BYTES, kv_ptr(a.k_pool, nxt.head), kv_ptr(a.v_pool, nxt.head), slot_bytes,
                        npid, a.page_shift, 0, nxt.klen);
                if (WN < nkend)
                    stage_pages(ids + 4 * WN * stage, a.pages + nxt.poff, a.page_shift, WN, nxt.klen);
                ready = true;
            }
            asm volatile("cp.async.commit_group;\n" ::);

            /* S = Q K^T: 8 steps of 16 over d (32 bytes into the half's rows, the second half 8 KiB on);
             * K K-major: SBO 1024 (next 8 keys), LBO unused */
            float s[WN / 8][4];
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < WD / 16; kk++)
                wgmma_rs_n64(&s[0][0], qf[kk], wg_desc(ks + (kk >> 2) * 8192 + (kk & 3) * 32, 16, 1024), kk > 0);
            asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (last && ready) { /* the last S is done with Q: the next item's Q */
                const int nr0 = nxt.q0 + warp * 16 + g;
                attn_load_q<WD>(qf, a, nxt.qs, nxt.head, nr0, nr0 + 8, nxt.qlen, t4);
            }

            /* mask only; the scale into log2 units is folded into the row max and the exponent */
            if (!(k0 + WN <= klen && (bs == 0 || k0 + WN <= kvc)))
                attn_mask<WN / 8, false>(s, k0, t4, r0, r1, klen, kvc, bs, sl2);
            float mx0, mx1;
            attn_row_max<WN / 8>(s, mx0, mx1);
            float b0s, b1s;
            attn_new_max<WD>(m0, m1, mx0 * sl2, mx1 * sl2, l0, l1, o, b0s, b1s);
            uint32_t pa[WN / 16][4];
#pragma unroll
            for (int n = 0; n < WN / 8; n++) {
                float p0 = fast_exp2(fmaf(s[n][0], sl2, -b0s)), p1 = fast_exp2(fmaf(s[n][1], sl2, -b0s));
                float p2 = fast_exp2(fmaf(s[n][2], sl2, -b1s)), p3 = fast_exp2(fmaf(s[n][3], sl2, -b1s));
                l0 += p0 + p1;
                l1 += p2 + p3;
                pa[n / 2][(n & 1) * 2] = pack_bf2(p0, p1);
                pa[n / 2][(n & 1) * 2 + 1] = pack_bf2(p2, p3);
            }
            /* O += P V: 4 steps of 16 keys; V read transposed (MN-major): LBO 8192 (the next 64 of d),
             * SBO 1024 (the next 8 keys) */
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < WN / 16; kk++)
                wgmma_rs_n128_tb(&o[0][0], pa[kk], wg_desc(vs + kk * 2048, 8192, 1024), 1);
            asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            stage ^= 1;
        }
        attn_store<WD>(o, a, cur.qs, cur.head, r0, r1, qlen, t4, attn_row_sum(l0), attn_row_sum(l1));
        if (more) {
            if (kend <= 0) /* (no key: the loop did not fetch it) */
                fetch_seg(nxt);
            cur = nxt;
            have = true;
        }
    }
#endif
}

static __global__ void probe_kernel(int *out)
{
#ifdef HAVE_WGMMA
    *out = 1;
#else
    *out = 0;
#endif
}

/* Whether the image loaded for this device carries the wgmma kernel (asked once, outside capture). */
static int available(cudaStream_t stream)
{
    static int have = -1;
    if (have >= 0)
        return have;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone)
        return 0; /* not now: the plain kernel runs */
    int *d = NULL, h = 0;
    if (cudaMalloc(&d, sizeof(int)) == cudaSuccess) {
        probe_kernel<<<1, 1>>>(d);
        if (cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
            h = 0;
        cudaFree(d);
    }
    cudaGetLastError();
    have = h;
    if (have && cudaFuncSetAttribute(attention_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     SMEM_BYTES) != cudaSuccess) {
        cudaGetLastError();
        have = 0;
    }
    return have;
}

extern "C" int k_attention_wgmma_ready(k_stream stream) { return available((cudaStream_t)stream); }

extern "C" int k_attention_wgmma(const struct k_attn_args *a, k_stream stream)
{
    if (a->num_tiles <= 0)
        return 0;
    if (!attn_args_valid(a))
        return (int)cudaErrorInvalidValue;
    if (a->d != WD || !available((cudaStream_t)stream))
        return (int)cudaErrorNotSupported;
    /* the list's wgmma tiles alone where it is ordered and this launch takes only long segments */
    const bool ordered = a->wg_tiles > 0 && (a->wg_min_q > 0 || a->long_tiles == a->num_tiles);
    const int ntiles = ordered ? a->wg_tiles : a->num_tiles;
    const int64_t items = (int64_t)ntiles * a->H;
    const int sms = k_num_sms();
    /* one block an SM, the items spread evenly: ceil(items / sms) each */
    const int64_t per = (items + sms - 1) / sms, blocks = (items + per - 1) / per;
    return (int)k_launch(attention_wgmma_kernel, dim3((unsigned)blocks), dim3(256), (size_t)SMEM_BYTES,
                         (cudaStream_t)stream, *a, ntiles, (int)items);
}
