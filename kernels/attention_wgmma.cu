/*
 * attention_wgmma.cu: the attention of attention.cu on Hopper's warpgroup MMA (wgmma, sm_90a) for
 * head dim 128 without key splits: by default the segments of at least ATTN_LONG_Q query rows
 * (k_attn_args.impl = 2), or every segment (impl = 1, --attention wgmma).
 *
 * A work item is 128 query rows of one head: the 64-row tiles q0 and q0 + 64 of the tile list.
 * Blocks are persistent, one an SM, taking items in turn, and warp-specialized as FlashAttention-3
 * is (three warpgroups):
 *
 * - warpgroup 0, the producer, gathers each item's Q (two buffers) and its K/V tiles of 64 keys
 *   (STAGES deep) from the pool's pages by cp.async into shared memory in wgmma's 128-byte swizzle
 *   (a warp's copies cover whole 128-byte lines), each buffer's `full` mbarrier completing when
 *   the copies into it have landed, and waits on a buffer's `empty` barrier before refilling it;
 *   it runs ahead of the consumers across item boundaries;
 * - warpgroups 1 and 2, the consumers, each take 64 of the item's rows: S = Q K^T is one m64n64k16
 *   wgmma per 16 of d (Q and K from shared memory, K-major); the online softmax runs on S in
 *   registers (mma.sync's accumulator layout, so both kernels share attention_frag.cuh); O += P V
 *   is one m64n128k16 wgmma per 16 keys, P from registers, V read transposed (MN-major).
 *   Within a warpgroup, tile t's S and tile t - 1's P V are issued together and tile t's softmax
 *   runs while P V does (O rescaled once P V is done, and only where a row's maximum grew by more
 *   than a factor 2^ATTN_LAZY: the lazy rescale); the two warpgroups drift freely (ordering their
 *   issues in turn by named barriers, FlashAttention-3's ping-pong, measured 0-3% slower).
 *
 * Block-causal launches (k_attn_args.block_size > 0): an item runs to the keys its last row sees,
 * a tile is masked only where it reaches past those its warp's first row sees (attn_row_keys),
 * and the walk turns each head's tiles so that no block takes only the long ones (wg_walk::tile).
 *
 * Built only into the sm_90a image; elsewhere the launcher reports it unavailable and
 * attention.cu's kernel runs.
 */
#include "attention_frag.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_WGMMA 1
#endif

#define WD 128                    /* head dim */
#define WM 128                    /* query rows an item: two consumer warpgroups of 64 */
#ifndef WN
#define WN 64 /* keys a stage (128 builds too: its consumers spill, 1.02-1.10x the time on the H200) */
#endif
#ifndef STAGES
#define STAGES (WN == 64 ? 4 : 2) /* K/V stages */
#endif
#define TILE_BYTES (64 * WD * 2)  /* a 64 x 128 bf16 tile: 16 KiB (a consumer's Q) */
#define Q_BYTES (2 * TILE_BYTES)  /* an item's Q */
#define KV_TILE (WN * WD * 2)     /* a K (or V) tile */
#define KV_BYTES (2 * KV_TILE)    /* a stage's K and V */
#define NBARS (2 * STAGES + 4)    /* full and empty a stage, qfull and qempty a Q buffer */
/* two Q buffers and the K/V stages (from a 1024-byte boundary, the swizzle's period), barriers */
#define SMEM_BYTES (1024 + 2 * Q_BYTES + STAGES * KV_BYTES + 8 * NBARS)
#define THREADS 384
/* registers a thread of the producer and of the consumers (setmaxnreg; 128 P + 256 C <= 64 Ki) */
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 56
#endif
#define CONSUMER_REGS ((65536 - 128 * PRODUCER_REGS) / 256 / 8 * 8)
/* the lazy rescale's threshold (attn_new_max_lazy), log2 units; 0: O scaled on every tile */
#ifndef ATTN_LAZY
#define ATTN_LAZY 8
#endif

#ifdef HAVE_WGMMA
#include "hopper.cuh"
#include "attention_wgmma.inc"

/* the K (or V) pool's address of head's first column for a thread's 16-byte chunk c */
static __device__ __forceinline__ const char *kv_ptr(const k_attn_args &a, const bf16_t *pool, int head, int c)
{
    return (const char *)(pool + (size_t)(head / (a.H / a.Hkv)) * WD + c * 8);
}
#endif

/* A work item: 128 query rows (tile q0 and the next) of segment seg for one head */
struct wg_item {
    int seg, q0, head, qlen, klen, qs, kvc, poff;
};

/* The block's walk over items b, b + gridDim.x, ... of items = ntiles x heads, item w being tile
 * w % ntiles of the list (turned, where block-causal: tile()) for head w / ntiles (blocks running
 * together share a head's K/V in L2):
 * each warpgroup walks it alike. Loads run two items ahead: an item's tile entry two items before
 * it is needed, its segment's fields one item before (a dependent chain otherwise paid at each
 * item's start). ntiles is the list's wgmma tiles (k_attn_args.wg_tiles) or, where the list is not
 * ordered, every tile: items of a tile at an odd multiple of 64 rows or of a segment below wg_min_q
 * rows are then skipped (valid()). */
struct wg_walk {
    const k_attn_args &a;
    int ntiles, items;
    wg_item cur, nxt, nn;

    __device__ void tile(int w, wg_item &it) const
    {
        /* block-causal: head h's tiles turned by h ntiles / H, so that a block, which meets the
         * same place in the list at each of its items when gridDim.x is a multiple of ntiles,
         * takes tiles spread over the segment (a tile's keys grow with its place: 8,192 rows
         * unturned took 2.0 ms, twice the even split's) */
        const int head = w / ntiles, turn = a.block_size > 0 ? head * ntiles / a.H : 0;
        const int ti = (w % ntiles + turn) % ntiles;
        it.seg = a.tiles[2 * ti], it.q0 = a.tiles[2 * ti + 1], it.head = head;
    }
    __device__ void seg(wg_item &it) const
    {
        it.qlen = a.q_len[it.seg], it.klen = a.key_len[it.seg], it.qs = a.q_start[it.seg];
        it.kvc = a.kv_cached[it.seg], it.poff = a.page_off[it.seg];
    }
    __device__ bool valid(const wg_item &it) const { return !(it.q0 & 64) && it.qlen >= a.wg_min_q; }
    /* keys the item's rows may see */
    __device__ int key_end(const wg_item &it) const
    {
        return attn_key_end(it.klen, it.kvc, a.block_size, it.q0 + WM, it.qlen);
    }
    /* The item's K/V tiles of WN keys, tile i at key kof(i): consecutive up to key_end, or the kept
     * blocks' of its pattern (k_attn_args.kb_*: a block of a multiple of 128 rows holds the item's) */
    __device__ int tiles(const wg_item &it, const int16_t *&kbl) const
    {
        const int n = attn_pattern_tiles<WN>(a, it.seg, it.head, it.q0, it.klen, kbl);
        return kbl ? n : (key_end(it) + WN - 1) / WN;
    }
    __device__ int kof(const int16_t *kbl, int i) const { return attn_tile_key<WN>(a, kbl, i); }
    __device__ void start(int w)
    {
        cur = nxt = nn = wg_item{};
        if (w < items) {
            tile(w, cur);
            seg(cur);
        }
        if (w + (int)gridDim.x < items)
            tile(w + gridDim.x, nxt);
    }
    /* at item w's start: the loads for the next two */
    __device__ void ahead(int w)
    {
        if (w + (int)gridDim.x < items)
            seg(nxt);
        if (w + 2 * (int)gridDim.x < items)
            tile(w + 2 * gridDim.x, nn);
    }
    __device__ void next()
    {
        cur = nxt;
        nxt = nn;
    }
};

static __global__ __launch_bounds__(THREADS, 1) void attention_wgmma_kernel(const k_attn_args a, int ntiles, int items)
{
#ifdef HAVE_WGMMA
    extern __shared__ __align__(128) unsigned char sm[];
    const uint32_t base = ((uint32_t)__cvta_generic_to_shared(sm) + 1023) & ~1023u;
    const uint32_t qbuf = base, kvbuf = base + 2 * Q_BYTES, bars = kvbuf + STAGES * KV_BYTES;
    /* barrier addresses: full[s], empty[s], qfull[b], qempty[b] */
    auto full = [&](int s) { return bars + 8 * s; };
    auto empty = [&](int s) { return bars + 8 * (STAGES + s); };
    auto qfull = [&](int b) { return bars + 8 * (2 * STAGES + b); };
    auto qempty = [&](int b) { return bars + 8 * (2 * STAGES + 2 + b); };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full(s), 128); /* every producer thread's copies */
            mbar_init(empty(s), 8);  /* lane 0 of each consumer warp */
        }
        for (int b = 0; b < 2; b++) {
            mbar_init(qfull(b), 128);
            mbar_init(qempty(b), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    griddep_wait();
    /* the warpgroup, read through a shuffle so the compiler knows it uniform across the warp (a role
     * branch on threadIdx alone counts as divergent, and ptxas serializes the wgmma in it: C7520) */
    const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x >> 7, 0), bs = a.block_size;
    wg_walk walk{a, ntiles, items};
    walk.start(blockIdx.x);
    int it = 0, qit = 0; /* K/V tiles and Q buffers used so far */

    if (wg == 0) { /* the producer: 16-byte chunk c of rows row + 16 i of each tile (of Q: each half) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS)); /* its registers to the consumers */
        const int c = threadIdx.x & 7, row = (threadIdx.x >> 3) & 15;
        const int shift = a.page_shift, pmask = (1 << shift) - 1;
        const uint32_t slot_bytes = 2u * (a.kv_stride > 0 ? a.kv_stride : a.Hkv * WD);
        for (int w = blockIdx.x; w < items; w += gridDim.x, walk.next()) {
            walk.ahead(w);
            const wg_item &cur = walk.cur;
            if (!walk.valid(cur))
                continue;
            const int16_t *kbl;
            const int nt = walk.tiles(cur, kbl), klen = cur.klen;
            /* Q: 128 rows, zeros past the segment */
            const int qb = qit & 1;
            mbar_wait(qempty(qb), ((qit >> 1) & 1) ^ 1); /* the first round passes */
            const uint32_t qd = qbuf + qb * Q_BYTES;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int r = row + 16 * i, qr = cur.q0 + r;
                const bf16_t *src = a.q + (size_t)(cur.qs + min(qr, cur.qlen - 1)) * a.q_stride + cur.head * WD + c * 8;
#pragma unroll
                for (int h = 0; h < 2; h++)
                    cp_async16(qd + (r >> 6) * TILE_BYTES + sw_off(r & 63, 8 * h + c), src + 64 * h,
                               qr < cur.qlen ? 16 : 0);
            }
            mbar_arrive_cp_async(qfull(qb));
            qit++;
            /* K/V tiles of 64 keys, zeros past klen */
            const int32_t *pages = a.pages + cur.poff;
            const char *kp = kv_ptr(a, a.k_pool, cur.head, c), *vp = kv_ptr(a, a.v_pool, cur.head, c);
            for (int t = 0; t < nt; t++, it++) {
                const int k0 = walk.kof(kbl, t);
                int pid[WN / 16]; /* issued before the wait, so their latency hides behind it */
#pragma unroll
                for (int i = 0; i < WN / 16; i++)
                    pid[i] = __ldg(pages + (min(k0 + row + 16 * i, klen - 1) >> shift));
                const int s = it % STAGES;
                mbar_wait(empty(s), ((it / STAGES) & 1) ^ 1);
                const uint32_t ks = kvbuf + s * KV_BYTES, vs = ks + KV_TILE;
#pragma unroll
                for (int i = 0; i < WN / 16; i++) {
                    const int r = row + 16 * i, j = k0 + r, n = j < klen ? 16 : 0;
                    const uint32_t slot = ((uint32_t)pid[i] << shift) | (min(j, klen - 1) & pmask);
                    const uint64_t off = (uint64_t)slot * slot_bytes;
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        cp_async16(ks + sw_off<WN>(r, 8 * h + c), kp + off + 128 * h, n);
                        cp_async16(vs + sw_off<WN>(r, 8 * h + c), vp + off + 128 * h, n);
                    }
                }
                mbar_arrive_cp_async(full(s));
            }
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory"); /* no copy outlives its thread */
        return;
    }

    /* the consumers: warpgroup cw takes rows q0 + 64 cw.. of each item; past the segment it
     * computes on zero queries (a branch around the wgmma would make the compiler serialize them)
     * and stores nothing */
    const int cw = wg - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const float sl2 = a.scale * 1.4426950408889634f;
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
    for (int w = blockIdx.x; w < items; w += gridDim.x, walk.next()) {
        walk.ahead(w);
        const wg_item &cur = walk.cur;
        if (!walk.valid(cur))
            continue;
        const int16_t *kbl;
        const int nt = walk.tiles(cur, kbl), klen = cur.klen, kvc = cur.kvc;
        const int r0 = cur.q0 + cw * 64 + warp * 16 + g, r1 = r0 + 8;
        const int kfull = attn_row_keys(klen, kvc, bs, cur.q0 + cw * 64 + warp * 16); /* every row of the warp sees */
        const int qb = qit & 1;
        const uint32_t qa = qbuf + qb * Q_BYTES + cw * TILE_BYTES;
        mbar_wait(qfull(qb), (qit >> 1) & 1);
        fence_async_shared();
        qit++;
        if (nt <= 0) { /* no key (a pattern keeping no block; else not met: a segment's keys include its queries) */
            if (lane == 0)
                mbar_arrive(qempty(qb));
            float z[WD / 8][4] = {};
            attn_store<WD>(z, a, cur.qs, cur.head, r0, r1, cur.qlen, t4, 0.f, 0.f);
            continue;
        }

        float o[WD / 8][4];
#pragma unroll
        for (int n = 0; n < WD / 8; n++)
            o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
        uint32_t pa[WN / 16][4]; /* P of the previous tile, A of its P V */
        float sc[WN / 8][4];
        uint32_t vprev;
        int sprev;
        /* S = Q K^T of the tile in stage s: 8 steps of 16 over d (32 bytes into the half's rows, the
         * second half of Q 8 KiB on, of K WN x 128 bytes) */
        auto issue_s = [&](int s) {
            const uint32_t ks = kvbuf + s * KV_BYTES;
            const uint64_t qd0 = desc_k128(qa), kd0 = desc_k128(ks);
#pragma unroll
            for (int kk = 0; kk < WD / 16; kk++) {
                const uint64_t qd = desc_at(qd0, (kk >> 2) * 8192 + (kk & 3) * 32);
                const uint64_t kd = desc_at(kd0, (kk >> 2) * KV_TILE / 2 + (kk & 3) * 32);
                if (WN == 64)
                    wgmma_ss_n64(&sc[0][0], qd, kd, kk > 0);
                else
                    wgmma_ss_n128(&sc[0][0], qd, kd, kk > 0);
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        };
        /* O += P V of the previous tile: a step per 16 keys, V read transposed (MN-major): LBO the
         * next 64 of d, SBO 1024 (the next 8 keys) */
        auto issue_pv = [&]() {
            const uint64_t vd0 = wg_desc(vprev, KV_TILE / 2, 1024);
#pragma unroll
            for (int kk = 0; kk < WN / 16; kk++)
                wgmma_rs_n128_tb(&o[0][0], pa[kk], desc_at(vd0, kk * 2048), 1);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        };
        /* the online softmax of the tile at k0 (mask only where needed; the scale into log2 units
         * folded into the row max and the exponent): sc becomes P, the row sums l follow, and al the
         * factors O is to be scaled by */
        auto softmax = [&](int k0, float &al0, float &al1) {
            if (k0 + WN > kfull) /* past the keys a row of the warp sees: the warp branches together */
                attn_mask<WN / 8, false>(sc, k0, t4, r0, r1, klen, kvc, bs, sl2);
            float mx0, mx1, b0, b1;
            attn_row_max<WN / 8>(sc, mx0, mx1);
            if (ATTN_LAZY > 0)
                attn_new_max_lazy(m0, m1, mx0 * sl2, mx1 * sl2, l0, l1, b0, b1, al0, al1, (float)ATTN_LAZY);
            else
                attn_new_max_l(m0, m1, mx0 * sl2, mx1 * sl2, l0, l1, b0, b1, al0, al1);
            attn_exp<WN / 8>(sc, sl2, b0, b1, l0, l1);
        };
        auto to_pa = [&]() {
#pragma unroll
            for (int n = 0; n < WN / 8; n++) {
                pa[n / 2][(n & 1) * 2] = pack_bf2(sc[n][0], sc[n][1]);
                pa[n / 2][(n & 1) * 2 + 1] = pack_bf2(sc[n][2], sc[n][3]);
            }
        };
        float al0, al1;
        /* the first tile: S alone */
        {
            const int s = it % STAGES;
            mbar_wait(full(s), (it / STAGES) & 1);
            fence_async_shared();
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            issue_s(s);
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (nt <= 1 && lane == 0) /* the item's last S: Q's buffer is free */
                mbar_arrive(qempty(qb));
            softmax(walk.kof(kbl, 0), al0, al1);
            to_pa();
            vprev = kvbuf + s * KV_BYTES + KV_TILE;
            sprev = s;
            it++;
        }
        /* then tile t's S and tile t - 1's P V in flight together; t's softmax while P V runs */
        for (int t = 1; t < nt; t++, it++) {
            const int s = it % STAGES, k0 = walk.kof(kbl, t);
            mbar_wait(full(s), (it / STAGES) & 1);
            fence_async_shared();
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            issue_s(s);
            issue_pv();
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (t + 1 >= nt && lane == 0)
                mbar_arrive(qempty(qb));
            softmax(k0, al0, al1);
            /* the previous tile's P V done: its stage is free, and O takes this tile's scale */
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (lane == 0)
                mbar_arrive(empty(sprev));
            if (ATTN_LAZY == 0 || __any_sync(0xffffffffu, al0 != 1.f || al1 != 1.f))
                attn_scale_o<WD>(o, al0, al1);
            to_pa();
            vprev = kvbuf + s * KV_BYTES + KV_TILE;
            sprev = s;
        }
        /* the last tile's P V */
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        issue_pv();
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (lane == 0)
            mbar_arrive(empty(sprev));
        attn_store<WD>(o, a, cur.qs, cur.head, r0, r1, cur.qlen, t4, attn_row_sum(l0), attn_row_sum(l1));
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
    if (k_portable())
        return have = 0;
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
    return (int)k_launch(attention_wgmma_kernel, dim3((unsigned)blocks), dim3(THREADS), (size_t)SMEM_BYTES,
                         (cudaStream_t)stream, *a, ntiles, (int)items);
}
