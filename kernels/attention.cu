/*
 * attention.cu: varlen attention over packed segments with a paged K/V pool (FlashAttention-2
 * structure on the bf16 tensor cores through mma.sync m16n8k16).
 *
 * A block of 4 warps takes 64 query rows of one segment and one query head; each warp owns 16 rows
 * and keeps the running row max/sum and the O accumulator in registers, its Q fragments coming
 * from the block's query tile in shared memory. K/V tiles are gathered from the pool's pages into
 * shared memory with cp.async, two stages deep so that the next tile loads while this one is
 * computed, with one barrier a tile (rows padded by 8 elements: the ldmatrix fragment loads are
 * free of bank conflicts; V is read transposed by ldmatrix.trans). Thread t copies 16 bytes of a
 * fixed column in each of a few rows, the page ids of the next tile's rows read into registers a
 * tile ahead, so that no copy waits on the page table. S = Q K^T is masked (key length,
 * block-causal), folded into the online softmax (base 2, the scale folded into the exponent), and
 * P V accumulated. A tile of at most 32 rows (Reuse steps) without key split gives each warp pair
 * half of every K/V tile's keys instead, and merges the two softmax states at the end
 * (attention_tile).
 *
 * K/V tiles hold 64 keys (2 blocks an SM); launches of short query tiles without key split hold
 * 32 (128 registers a thread, 4 blocks an SM), where more warps hide more latency.
 *
 * Split-KV: when the query tiles times heads cannot fill the GPU (Reuse steps of few sequences),
 * the key range is split over gridDim.z blocks writing unnormalised partial O, max and sum in fp32;
 * combine_kernel merges them. GQA maps query head h to K/V head h / (H / Hkv). Where every segment
 * is short and a K/V head serves several query heads (GQA Reuse steps), a block takes P = 2 or 4
 * of them together (attn_head_pack_v): its 64 query rows are P heads' 64 / P rows, so each
 * K/V tile is read once for P heads and every warp has rows.
 */
#include <float.h>

#include "attention_frag.cuh"

#define TM ATTN_TILE_M
#define PAD 8
/* keys a K/V tile: 64, or 32 in launches of short query tiles (attention_kernel) */
#define TN_LONG 64
#define TN_SHORT 32

static __device__ __forceinline__ void mma_bf16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

static __device__ __forceinline__ void ldsm_x4_trans(uint32_t *r, const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* K/V stages (three measured within 1% of two on 16 x 512, 3% slower on 16 x 32 over 480) */
#define NSTAGE 2

/* Shared memory of a block whose K/V tiles hold TN keys: the K/V stages, then the query tile */
template <int D, int TN> struct smem_layout {
    static constexpr int ROW = D + PAD;                    /* elements per padded row */
    static constexpr int TILE = TN * ROW;                  /* elements per K or V tile */
    static constexpr int Q = NSTAGE * 2 * TILE * 2;        /* stages x (K, V) x bf16 */
    static constexpr int BYTES = Q + TM * ROW * 2;
};

/* Every target's opt-in shared memory a block holds the largest layout (head dim 128, 64-key
 * tiles): 99 KiB on sm_86 and sm_89, the least of them (163 KiB on sm_80, 227 KiB on sm_90). */
static_assert(smem_layout<128, 64>::BYTES <= 99 * 1024, "the attention tile exceeds sm_86/sm_89 shared memory");

/* The thread's rows of a K/V tile: thread t copies columns 8 (t % (D / 8)) .. + 7 of rows
 * t / (D / 8) + i RPP of each tile. */
template <int D, int TN> struct kv_rows {
    static constexpr int RPP = 128 / (D / 8); /* rows a pass of the block */
    static constexpr int N = TN / RPP;        /* rows a thread */
};

/* The page ids of this thread's rows of the tile at key k0 (the last key's page past klen). */
template <int D, int TN>
static __device__ __forceinline__ void tile_pages(int (&pid)[kv_rows<D, TN>::N], const int32_t *pages, int shift, int k0,
                                                  int klen)
{
    const int r = threadIdx.x / (D / 8);
#pragma unroll
    for (int i = 0; i < kv_rows<D, TN>::N; i++)
        pid[i] = __ldg(pages + (min(k0 + r + i * kv_rows<D, TN>::RPP, klen - 1) >> shift));
}

/* Gathers keys [k0, k0 + TN) of the segment into one stage, K at shared byte address ks and V at
 * vs, each already offset by this thread's 8 columns (zeros past klen; k0 < klen); pid holds the
 * page ids of the thread's rows (tile_pages); kp and vp point at the thread's columns of the head
 * in slot 0, slot_bytes from slot to slot. */
template <int D, int TN>
static __device__ __forceinline__ void load_tile(uint32_t ks, uint32_t vs, const char *kp, const char *vp,
                                                 uint32_t slot_bytes, const int (&pid)[kv_rows<D, TN>::N], int shift,
                                                 int k0, int klen)
{
    constexpr int ROW = smem_layout<D, TN>::ROW;
    const int r = threadIdx.x / (D / 8);
#pragma unroll
    for (int i = 0; i < kv_rows<D, TN>::N; i++) {
        const int row = r + i * kv_rows<D, TN>::RPP, j = k0 + row, n = j < klen ? 16 : 0;
        const uint32_t slot = ((uint32_t)pid[i] << shift) | (min(j, klen - 1) & ((1 << shift) - 1));
        const uint64_t off = (uint64_t)slot * slot_bytes;
        cp_async16(ks + row * ROW * 2, kp + off, n);
        cp_async16(vs + row * ROW * 2, vp + off, n);
    }
}

/* S = Q K^T of a warp's 16 query rows (rows qrow .. of the query tile Qs) over NT 8-key columns of
 * the K tile Ks from key kc (tiles of TN keys), in mma.sync's accumulator layout */
template <int D, int TN, int NT>
static __device__ __forceinline__ void qk_tile(float (&s)[NT][4], const bf16_t *Qs, int qrow, const bf16_t *Ks, int kc,
                                               int lane)
{
    constexpr int ROW = smem_layout<D, TN>::ROW;
#pragma unroll
    for (int n = 0; n < NT; n++)
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2) {
        uint32_t qf[2][4]; /* Q's fragments of columns 16 kk .. + 31, from shared memory */
        ldsm_x4(qf[0], Qs + (qrow + (lane & 15)) * ROW + kk * 16 + (lane >> 4) * 8);
        ldsm_x4(qf[1], Qs + (qrow + (lane & 15)) * ROW + kk * 16 + 16 + (lane >> 4) * 8);
#pragma unroll
        for (int n = 0; n < NT; n++) {
            uint32_t b[4];
            ldsm_x4(b, Ks + (kc + n * 8 + (lane & 7)) * ROW + kk * 16 + (lane >> 3) * 8);
            mma_bf16(s[n], qf[0], b[0], b[1]);
            mma_bf16(s[n], qf[1], b[2], b[3]);
        }
    }
}

/*
 * One block's work. KS key groups: with KS = 1 warp w owns rows 16 w .. 16 w + 15 of the tile and
 * every key of each K/V tile; with KS = 2 (a tile of at most 32 rows, as in Reuse steps, where half
 * of the warps would otherwise idle) warp w owns rows 16 (w % 2) .. and keys 32 (w / 2) .. + 31 of
 * each K/V tile, and the two key groups' softmax states are merged through shared memory at the end.
 * With KS = 1 the block may take P = 2^lp packed heads (k_attn_args.head_pack, a runtime value: the
 * same code runs P = 1, 2 and 4): its query heads are P blockIdx.y .. + P - 1, one K/V head's, and
 * the tile's rows 64 / P rows of each (the segment's q0 ..); warp w owns rows 16 (w % (4 / P)) .. of
 * head P blockIdx.y + w / (4 / P).
 */
template <int D, int TN, int KS>
static __device__ __forceinline__ void attention_tile(const k_attn_args &a, bf16_t *smem, int seg, int q0, int qlen)
{
    constexpr int ROW = smem_layout<D, TN>::ROW, TILE = smem_layout<D, TN>::TILE;
    constexpr int NT = TN / 8 / KS; /* 8-key columns of S per warp and K/V tile */
    const int lp = KS == 1 ? (a.head_pack >= 4 ? 2 : a.head_pack == 2 ? 1 : 0) : 0; /* log2 P */
    const int TMH = TM >> lp;       /* query rows of each head in the tile */
    const uint32_t smem_u32 = (uint32_t)__cvta_generic_to_shared(smem);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int hp = warp >> (2 - lp); /* the warp's head in the block's pack (0 with KS = 2) */
    const int head = (blockIdx.y << lp) + hp, hk = (blockIdx.y << lp) / (a.H / a.Hkv);
    const int klen = a.key_len[seg], qs = a.q_start[seg];
    const int kvc = a.kv_cached[seg], bs = a.block_size;
    /* row group, key group */
    const int rw = KS == 2 ? warp % 2 : warp & ((4 >> lp) - 1), kh = KS == 2 ? warp / 2 : 0;
    const int kc = kh * NT * 8;                           /* the key group's first column of a tile */
    const int qrow = hp * TMH + rw * 16;                  /* the warp's first row in the query tile */
    const int r0 = q0 + rw * 16 + g, r1 = r0 + 8;         /* this thread's two query rows */
    const int kfull = attn_row_keys(klen, kvc, bs, q0 + rw * 16); /* keys every row of the warp sees */
    const float sl2 = a.scale * 1.4426950408889634f;

    /* the K/V tiles this block covers: its split of the tiles any row of the tile may see, tile i
     * at key kof(i): consecutive, or a pattern's kept blocks' (k_attn_args.kb_base) */
    const int splits = gridDim.z;
    const int16_t *kbl;
    int ntile = attn_pattern_tiles<TN>(a, seg, head, q0, klen, kbl), per;
    if (kbl) {
        per = (ntile + splits - 1) / splits;
    } else {
        const int kend = attn_key_end(klen, kvc, bs, q0 + TMH, qlen);
        ntile = (kend + TN - 1) / TN;
        per = ((kend + splits - 1) / splits + TN - 1) / TN;
    }
    const int ibeg = blockIdx.z * per, iend = min(ntile, ibeg + per);
    auto kof = [&](int i) { return attn_tile_key<TN>(a, kbl, i); };

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    /* a warp whose 16 rows all lie past the segment only helps load tiles */
    const bool active = q0 + rw * 16 < qlen;
    const int32_t *pages = a.pages + a.page_off[seg];
    /* this thread's columns of the head in slot 0, and of each stage */
    const int col = (threadIdx.x % (D / 8)) * 8;
    const uint32_t slot_bytes = 2u * (a.kv_stride > 0 ? a.kv_stride : a.Hkv * D);
    const char *kp = (const char *)(a.k_pool + (size_t)hk * D + col);
    const char *vp = (const char *)(a.v_pool + (size_t)hk * D + col);
    /* the page ids of the next tile to issue, read one tile ahead: no tile's loads wait on the
     * page table (with the one-barrier loop, 1 x 2,048 keys at 249 TFLOP/s against 178 for a copy
     * of the table in shared memory and per-chunk address arithmetic) */
    int pid[kv_rows<D, TN>::N];
    auto issue = [&](int st, int i) {
        const uint32_t ks = smem_u32 + col * 2 + st * 4 * TILE;
        load_tile<D, TN>(ks, ks + 2 * TILE, kp, vp, slot_bytes, pid, a.page_shift, kof(i), klen);
        if (i + 1 < iend)
            tile_pages<D, TN>(pid, pages, a.page_shift, kof(i + 1), klen);
    };
    /* the query tile into shared memory with the first K/V tile (rows past the segment zero): row
     * i holds row q0 + i % TMH of head P blockIdx.y + i / TMH */
    const bf16_t *Qs = smem + smem_layout<D, TN>::Q / 2;
    {
        const int r = threadIdx.x / (D / 8);
        const bf16_t *qg = a.q + (size_t)(qs + q0) * a.q_stride + (blockIdx.y << lp) * D + col;
#pragma unroll
        for (int i = 0; i < TM / kv_rows<D, TN>::RPP; i++) {
            const int row = r + i * kv_rows<D, TN>::RPP, sr = row & (TMH - 1), ok = q0 + sr < qlen;
            cp_async16(smem_u32 + smem_layout<D, TN>::Q + (row * ROW + col) * 2,
                       qg + (ok ? (size_t)sr * a.q_stride + (row >> (6 - lp)) * D : 0), ok ? 16 : 0);
        }
    }
    /* NSTAGE - 1 tiles in flight ahead of the one computed, one commit group a tile (empty past
     * the end): waiting for all but the last NSTAGE - 2 groups means this tile has landed. One
     * barrier a tile: past it, the tile is visible to all and the stage computed before it is
     * free, so the tile NSTAGE - 1 ahead is issued into it. */
    if (ibeg < iend)
        tile_pages<D, TN>(pid, pages, a.page_shift, kof(ibeg), klen);
#pragma unroll
    for (int p = 0; p < NSTAGE - 1; p++) {
        if (ibeg + p < iend)
            issue(p, ibeg + p);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    int stage = 0;
    for (int i = ibeg; i < iend; i++) {
        const int k0 = kof(i);
        bf16_t *Ks = smem + stage * 2 * TILE, *Vs = Ks + TILE;
        asm volatile("cp.async.wait_group %0;\n" ::"n"(NSTAGE - 2));
        __syncthreads();
        if (i + NSTAGE - 1 < iend)
            issue((stage + NSTAGE - 1) % NSTAGE, i + NSTAGE - 1);
        asm volatile("cp.async.commit_group;\n" ::);
        stage = stage + 1 == NSTAGE ? 0 : stage + 1;
        if (!active)
            continue;

        float s[NT][4];
        qk_tile<D, TN, NT>(s, Qs, qrow, Ks, kc, lane);
        /* mask only tiles that reach past the keys the warp's rows see (past klen, or into a
         * later block: a branch the warp takes together); the scale into log2 units is folded into
         * the exponents */
        if (k0 + TN > kfull)
            attn_mask<NT, false>(s, k0 + kc, t4, r0, r1, klen, kvc, bs, sl2);
        float mx0, mx1;
        attn_row_max<NT>(s, mx0, mx1);
        float b0s, b1s;
        attn_new_max<D>(m0, m1, mx0 * sl2, mx1 * sl2, l0, l1, o, b0s, b1s);
        attn_exp<NT>(s, sl2, b0s, b1s, l0, l1);
        /* O += P V: the S accumulators of n-tiles 2kk and 2kk+1 form P's A fragment */
#pragma unroll
        for (int kk = 0; kk < NT / 2; kk++) {
            uint32_t pa[4] = {pack_bf2(s[2 * kk][0], s[2 * kk][1]), pack_bf2(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            const int mat = lane >> 3;
            const bf16_t *vrow = Vs + (kc + kk * 16 + (mat & 1) * 8 + (lane & 7)) * ROW + (mat >> 1) * 8;
#pragma unroll
            for (int n2 = 0; n2 < D / 16; n2++) {
                uint32_t b[4];
                ldsm_x4_trans(b, vrow + n2 * 16);
                mma_bf16(o[2 * n2], pa, b[0], b[1]);
                mma_bf16(o[2 * n2 + 1], pa, b[2], b[3]);
            }
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    l0 = attn_row_sum(l0);
    l1 = attn_row_sum(l1);
    if (KS == 2) {
        /* key group 1 hands its (max, sum, O) to the warp of group 0 with the same rows, through
         * the K/V stages (free now), laid out [row group][value][lane]: no bank conflicts */
        constexpr int NV = D / 2 + 4;
        float *x = (float *)smem + rw * NV * 32 + lane;
        __syncthreads();
        if (kh == 1) {
            x[0] = m0, x[32] = m1, x[64] = l0, x[96] = l1;
#pragma unroll
            for (int n = 0; n < D / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    x[(4 + n * 4 + e) * 32] = o[n][e];
        }
        __syncthreads();
        if (kh == 1)
            return;
        attn_merge<D>(m0, m1, l0, l1, o, x[0], x[32], x[64], x[96], x + 4 * 32);
    }
    if (splits == 1) {
        attn_store<D>(o, a, qs, head, r0, r1, qlen, t4, l0, l1);
        return;
    }
    /* partial results: O [split][T][H][D], then (max, sum) [split][T][H] */
    float *po = (float *)a.ws, *pml = po + (size_t)splits * a.T * a.H * D;
    const size_t z = blockIdx.z;
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        int c = n * 8 + t4 * 2;
        if (r0 < qlen)
            *(float2 *)(po + ((z * a.T + qs + r0) * a.H + head) * D + c) = make_float2(o[n][0], o[n][1]);
        if (r1 < qlen)
            *(float2 *)(po + ((z * a.T + qs + r1) * a.H + head) * D + c) = make_float2(o[n][2], o[n][3]);
    }
    if (t4 == 0) {
        if (r0 < qlen)
            *(float2 *)(pml + 2 * ((z * a.T + qs + r0) * a.H + head)) = make_float2(m0, l0);
        if (r1 < qlen)
            *(float2 *)(pml + 2 * ((z * a.T + qs + r1) * a.H + head)) = make_float2(m1, l1);
    }
}

/* MINB blocks an SM: 2 for tiles of 64 keys (registers and shared memory allow no more), 4 for
 * tiles of 32 (128 registers a thread, 52 KiB of shared memory a block for head dim 128) */
template <int D, int TN, int MINB>
static __global__ __launch_bounds__(128, MINB) void attention_kernel(const k_attn_args a)
{
    extern __shared__ __align__(16) bf16_t smem[];
    griddep_wait();
    /* a tile of at most 32 rows splits each K/V tile's keys between two warp pairs, unless the
     * keys are split over blocks already (few segments: Reuse 1 x 32 over 480 cached ran 4%
     * slower with the pairs, each block there holding one K/V tile) */
    const int seg = a.tiles[2 * blockIdx.x], q0 = a.tiles[2 * blockIdx.x + 1], qlen = a.q_len[seg];
    if (a.wg_min_q > 0 && qlen >= a.wg_min_q) /* the wgmma kernel's segment */
        return;
    /* packed heads (head_pack > 1, the launcher's resolved count) take the KS = 1 path */
    if (a.head_pack <= 1 && qlen - q0 <= TM / 2 && gridDim.z == 1)
        attention_tile<D, TN, 2>(a, smem, seg, q0, qlen);
    else
        attention_tile<D, TN, 1>(a, smem, seg, q0, qlen);
}

/* One block per (row, head), D threads: merges the splits' partial softmax results. */
template <int D>
static __global__ void combine_kernel(const k_attn_args a, int splits)
{
    griddep_wait();
    const int t = blockIdx.x, head = blockIdx.y, c = threadIdx.x;
    const float *po = (const float *)a.ws, *pml = po + (size_t)splits * a.T * a.H * D;
    float M = -INFINITY;
    for (int z = 0; z < splits; z++)
        M = fmaxf(M, pml[2 * (((size_t)z * a.T + t) * a.H + head)]);
    float Ms = M == -INFINITY ? 0.f : M, L = 0.f, acc = 0.f;
    for (int z = 0; z < splits; z++) {
        size_t i = ((size_t)z * a.T + t) * a.H + head;
        float w = exp2f(pml[2 * i] - Ms);
        L += pml[2 * i + 1] * w;
        acc += po[i * D + c] * w;
    }
    a.o[(size_t)t * a.H * D + head * D + c] = f2bf(L > 0.f ? acc / L : 0.f);
}

/* The mma.sync kernel's arguments under auto for a step mixing both lengths: its own (short)
 * tiles and rows where the list is ordered (long_tiles), which choose its K/V tile size; else
 * every tile, each block of a long segment exiting at once. Either way no key split: its combine
 * would overwrite the wgmma kernel's rows (split by the short tiles alone and merged by tiles, a
 * Refresh beside 3 to 8 Reuse blocks ran up to 1.3x slower on the H200). */
static k_attn_args short_args(const k_attn_args *a)
{
    k_attn_args b = *a;
    b.wg_min_q = ATTN_LONG_Q;
    if (a->long_tiles > 0 && a->long_tiles < a->num_tiles) {
        b.tiles = a->tiles + 2 * (size_t)a->long_tiles;
        b.num_tiles = a->num_tiles - a->long_tiles;
        b.T = a->T - a->long_rows;
    }
    return b;
}

/* The wgmma kernel's arguments: its own tiles where the list is ordered, else every tile, each
 * block of a short segment exiting at once (mixed: whether short segments are present). */
static k_attn_args long_args(const k_attn_args *a, bool mixed)
{
    k_attn_args b = *a;
    b.wg_min_q = mixed ? ATTN_LONG_Q : 0;
    if (mixed && a->long_tiles > 0 && a->long_tiles < a->num_tiles)
        b.num_tiles = a->long_tiles;
    return b;
}

/* How auto runs a's segments: 0, all on the mma.sync kernel; 1, all on the wgmma kernel; 2, the
 * segments of at least ATTN_LONG_Q rows on the wgmma kernel and the others on the mma.sync
 * kernel (where the lengths are not known, both walk every tile) */
static int auto_mode(const k_attn_args *a)
{
    const bool known = a->max_q_len > 0;
    const bool any_long = !known || a->max_q_len >= ATTN_LONG_Q, any_short = !known || a->min_q_len < ATTN_LONG_Q;
    if (!any_long || attn_long_on_mma(a->long_tiles, a->H, k_num_sms(), a->max_key_len))
        return 0;
    return any_short ? 2 : 1;
}

static bool auto_mixed(const k_attn_args *a)
{
    return a->d == 128 && a->impl == 2 && auto_mode(a) == 2 && k_attention_wgmma_ready(NULL);
}

/* The query heads each block of an mma.sync launch over a's tiles takes together: the caller's
 * count where it fits the launch, else the rules' */
static int launch_pack(const k_attn_args *a)
{
    if (a->head_pack > 0)
        return attn_pack_fits(a->head_pack, a->H, a->Hkv, a->max_q_len) ? a->head_pack : 1;
    return attn_head_pack_v(ATTN_RULES, a->H, a->Hkv, a->max_q_len, a->max_key_len);
}

/* An mma.sync launch over a's tiles, resolved once: the query heads a block takes together, the
 * key splits and the keys a K/V tile holds */
struct mma_launch {
    int P, splits, tile_keys;
};

static mma_launch launch_plan(const k_attn_args *a)
{
    mma_launch l;
    l.P = launch_pack(a);
    /* the launch rules' count (attn_split_rule, over P packed heads' blocks), or the
     * caller's (k_attn_args.splits); none beside the wgmma kernel */
    l.splits = 1;
    if (a->ws && a->num_tiles > 0 && a->wg_min_q <= 0) {
        l.splits = a->splits > 0 ? min(min(a->splits, ATTN_MAX_SPLITS), max(1, (a->max_key_len + 63) / 64))
                                 : attn_split_rule(l.P, a->num_tiles, a->T, a->H, k_num_sms(), a->max_key_len);
        while (l.splits > 1 && (int64_t)l.splits * a->T * a->H * (a->d + 2) * 4 > a->ws_bytes)
            l.splits--;
    }
    /* Beside the wgmma kernel the keys are not split, but the tile size is the one the launch
     * would take alone: with few blocks an SM 32-key tiles lose (1 x 512 beside 4 x 16 over 3,000
     * cached: 0.108 against 0.094 ms) */
    const int alone = a->wg_min_q > 0 ? attn_split_rule(1, a->num_tiles, a->T, a->H, k_num_sms(), a->max_key_len)
                                      : l.splits;
    l.tile_keys = attn_short_kv_tiles(alone, (int64_t)a->T * l.P, a->num_tiles) ? TN_SHORT : TN_LONG;
    return l;
}

/* The arguments k_attention's mma.sync launch gets */
static k_attn_args mma_args(const k_attn_args *a)
{
    return auto_mixed(a) ? short_args(a) : *a;
}

extern "C" int k_attention_splits(const struct k_attn_args *a)
{
    const k_attn_args b = mma_args(a);
    return launch_plan(&b).splits;
}

/* Query tiles of at most 32 rows on average without key split (Reuse steps of many sequences)
 * run with K/V tiles of 32 keys, 4 blocks an SM: 16 x 32 over 480 cached at 104 TFLOP/s against
 * 95; longer tiles and split keys lose with them (1 x 2,048: 223 against 245). */
extern "C" int k_attention_tile_keys(const struct k_attn_args *a)
{
    const k_attn_args b = mma_args(a);
    return launch_plan(&b).tile_keys;
}

extern "C" int k_attention_head_pack(const struct k_attn_args *a)
{
    const k_attn_args b = mma_args(a);
    return launch_pack(&b);
}

template <int D, int TN, int MINB> static cudaError_t launch_tiles(const struct k_attn_args *a, int splits, int P,
                                                                     cudaStream_t stream)
{
    static bool configured = false;
    const int bytes = smem_layout<D, TN>::BYTES;
    if (!configured) {
        cudaError_t e = cudaFuncSetAttribute(attention_kernel<D, TN, MINB>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(attention_kernel<D, TN, MINB>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared);
        if (e != cudaSuccess)
            return e;
        configured = true;
    }
    k_attn_args b = *a;
    b.head_pack = P; /* resolved: the kernel reads it */
    dim3 grid((unsigned)a->num_tiles, (unsigned)(a->H / P), (unsigned)splits);
    return k_launch(attention_kernel<D, TN, MINB>, grid, dim3(128), (size_t)bytes, stream, b);
}

template <int D> static int launch(const struct k_attn_args *a, cudaStream_t stream)
{
    const mma_launch l = launch_plan(a);
    cudaError_t e = l.tile_keys == TN_SHORT ? launch_tiles<D, TN_SHORT, 4>(a, l.splits, l.P, stream)
                                            : launch_tiles<D, TN_LONG, 2>(a, l.splits, l.P, stream);
    if (e == cudaSuccess && l.splits > 1)
        e = k_launch(combine_kernel<D>, dim3((unsigned)a->T, (unsigned)a->H), dim3(D), 0, stream, *a, l.splits);
    return (int)e;
}

extern "C" int k_attention(const struct k_attn_args *a0, k_stream stream)
{
    if (a0->num_tiles <= 0)
        return 0;
    if (!attn_args_valid(a0))
        return (int)cudaErrorInvalidValue;
    if (a0->impl < 0 || a0->impl > 2)
        return (int)cudaErrorInvalidValue;
    /* a block-sparse pattern: one query head a block of the mma.sync kernel; the wgmma kernel's items of
     * 128 rows take it where its blocks are a multiple of 128 rows, else the mma.sync kernel runs all */
    k_attn_args pat;
    const k_attn_args *a = a0;
    if (a0->kb_base) {
        if (a0->kb_block <= 0 || a0->kb_block % 64 || a0->kb_qblocks <= 0 || a0->kb_stride <= 0)
            return (int)cudaErrorInvalidValue;
        pat = *a0;
        pat.head_pack = 1;
        if (pat.kb_block % 128)
            pat.impl = 0;
        a = &pat;
    }
    if (a->d == 128 && a->impl == 1 && k_attention_splits(a) == 1) {
        int rc = k_attention_wgmma(a, stream);
        if (rc != (int)cudaErrorNotSupported)
            return rc;
    }
    /* auto: the wgmma kernel reads each K/V tile once for 128 query rows: on long segments it runs
     * 1.3-1.5 x the mma.sync kernel, on 32-row ones less than half as fast (H200) */
    const int mode = a->d == 128 && a->impl == 2 ? auto_mode(a) : 0;
    if (mode > 0) {
        const struct k_attn_args w = long_args(a, mode == 2);
        int rc = k_attention_wgmma(&w, stream);
        if (rc != (int)cudaErrorNotSupported) {
            if (rc || mode == 1)
                return rc;
            const struct k_attn_args b = short_args(a);
            return launch<128>(&b, stream);
        }
    }
    if (a->d == 128)
        return launch<128>(a, stream);
    if (a->d == 64)
        return launch<64>(a, stream);
    return (int)cudaErrorInvalidValue;
}

/* --- SparseD's pattern (k_sparsed_pattern) ---------------------------------------------------- */

/* The scalars of a pattern's scoring launch. */
struct sparsed_launch {
    int seg, nt, kgt; /* the segment, its 64-key tiles, the first of them pass 2 scores */
    float sl2;        /* the scale in log2 units */
    float *part;      /* [2][H][nt][nt] */
};

/* The scoring block's shared memory: two stages of K tiles, the query tile, then each warp's sum of
 * each K tile of both passes ([2][4][nt] floats) */
template <int D> struct sparsed_smem {
    static constexpr int ROW = D + PAD, TILE = TN_LONG * ROW, Q = 2 * TILE, SUMS = (Q + TM * ROW) * 2;
    static int bytes(int nt) { return SUMS + 2 * 4 * nt * (int)sizeof(float); }
};

/* Block (query tile qt, head h): its 64 rows' softmax over the segment's keys in two sweeps over the
 * K tiles (two stages deep, as attention_tile's): the first finds each row's maximum and sum over
 * every key (pass 1) and over the keys from tile kgt on (pass 2), the second sums each K tile's
 * probabilities over the block's rows, of both passes, into part[pass][h][qt][tile]. Rows past the
 * segment add nothing. */
template <int D>
static __global__ __launch_bounds__(128) void sparsed_scores_kernel(const k_attn_args a, const sparsed_launch p)
{
    extern __shared__ __align__(16) bf16_t smem[];
    griddep_wait();
    constexpr int TN = TN_LONG, ROW = sparsed_smem<D>::ROW, TILE = sparsed_smem<D>::TILE, NT = TN / 8;
    float *sums = (float *)((char *)smem + sparsed_smem<D>::SUMS); /* [pass][warp][tile] */
    const uint32_t smem_u32 = (uint32_t)__cvta_generic_to_shared(smem);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int seg = p.seg, qt = blockIdx.x, head = blockIdx.y, hk = head / (a.H / a.Hkv);
    const int N = a.key_len[seg], qlen = a.q_len[seg], qs = a.q_start[seg], q0 = qt * TM;
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    const int32_t *pages = a.pages + a.page_off[seg];
    const int col = (threadIdx.x % (D / 8)) * 8;
    const uint32_t slot_bytes = 2u * (a.kv_stride > 0 ? a.kv_stride : a.Hkv * D);
    const char *kp = (const char *)(a.k_pool + (size_t)hk * D + col);
    const bf16_t *Qs = smem + sparsed_smem<D>::Q;
    {
        const int r = threadIdx.x / (D / 8);
        const bf16_t *qg = a.q + (size_t)(qs + q0) * a.q_stride + head * D + col;
#pragma unroll
        for (int i = 0; i < TM / kv_rows<D, TN>::RPP; i++) {
            const int row = r + i * kv_rows<D, TN>::RPP, ok = q0 + row < qlen;
            cp_async16(smem_u32 + (sparsed_smem<D>::Q + row * ROW + col) * 2, qg + (ok ? (size_t)row * a.q_stride : 0),
                       ok ? 16 : 0);
        }
    }
    int pid[kv_rows<D, TN>::N];
    /* K of tile i into stage st */
    auto issue = [&](int st, int i) {
        const int r = threadIdx.x / (D / 8);
        const uint32_t ks = smem_u32 + col * 2 + st * 2 * TILE;
        tile_pages<D, TN>(pid, pages, a.page_shift, i * TN, N);
#pragma unroll
        for (int k = 0; k < kv_rows<D, TN>::N; k++) {
            const int row = r + k * kv_rows<D, TN>::RPP, j = i * TN + row;
            const uint32_t slot = ((uint32_t)pid[k] << a.page_shift) | (min(j, N - 1) & ((1 << a.page_shift) - 1));
            cp_async16(ks + row * ROW * 2, kp + (uint64_t)slot * slot_bytes, j < N ? 16 : 0);
        }
    };
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f; /* pass 1: maxima (log2 units), sums */
    float n0 = -INFINITY, n1 = -INFINITY, g0 = 0.f, g1 = 0.f; /* pass 2 */
    float il0 = 0.f, il1 = 0.f, ig0 = 0.f, ig1 = 0.f;         /* the sums' inverses (0: a row past the segment) */
    const size_t out1 = ((size_t)head * p.nt + qt) * p.nt, out2 = out1 + (size_t)a.H * p.nt * p.nt;
    for (int sweep = 0; sweep < 2; sweep++) {
        __syncthreads(); /* no warp still reads the stage the sweep's first tile goes into */
        issue(0, 0);
        asm volatile("cp.async.commit_group;\n" ::);
        for (int i = 0; i < p.nt; i++) {
            const int k0 = i * TN;
            const bf16_t *Ks = smem + (i & 1) * TILE;
            asm volatile("cp.async.wait_group 0;\n" ::);
            __syncthreads();
            if (i + 1 < p.nt)
                issue((i + 1) & 1, i + 1);
            asm volatile("cp.async.commit_group;\n" ::);
            float s[NT][4];
            qk_tile<D, TN, NT>(s, Qs, warp * 16, Ks, 0, lane);
            if (k0 + TN > N)
                attn_mask<NT, false>(s, k0, t4, r0, r1, N, 0, 0, 0.f);
            const bool two = i >= p.kgt;
            if (sweep == 0) { /* the online maxima and sums */
                float mx0, mx1, b0, b1, c0 = 0.f, c1 = 0.f, al0, al1;
                attn_row_max<NT>(s, mx0, mx1);
                mx0 *= p.sl2, mx1 *= p.sl2;
                attn_new_max_l(m0, m1, mx0, mx1, l0, l1, b0, b1, al0, al1);
                if (two)
                    attn_new_max_l(n0, n1, mx0, mx1, g0, g1, c0, c1, al0, al1);
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float x = s[n][e] * p.sl2;
                        (e < 2 ? l0 : l1) += fast_exp2(x - (e < 2 ? b0 : b1));
                        if (two)
                            (e < 2 ? g0 : g1) += fast_exp2(x - (e < 2 ? c0 : c1));
                    }
                continue;
            }
            float v = 0.f, w = 0.f; /* the tile's probabilities over this thread's rows and keys */
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float x = s[n][e] * p.sl2;
                    v += fast_exp2(x - (e < 2 ? m0 : m1)) * (e < 2 ? il0 : il1);
                    if (two)
                        w += fast_exp2(x - (e < 2 ? n0 : n1)) * (e < 2 ? ig0 : ig1);
                }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                v += __shfl_xor_sync(0xffffffffu, v, o);
                w += __shfl_xor_sync(0xffffffffu, w, o);
            }
            if (lane == 0)
                sums[warp * p.nt + i] = v, sums[(4 + warp) * p.nt + i] = w;
        }
        if (sweep == 1) { /* the warps' sums of each tile, added */
            __syncthreads();
            for (int i = threadIdx.x; i < p.nt; i += blockDim.x) {
                const float *t = sums + i;
                p.part[out1 + i] = (t[0] + t[p.nt]) + (t[2 * p.nt] + t[3 * p.nt]);
                if (i >= p.kgt)
                    p.part[out2 + i] = (t[4 * p.nt] + t[5 * p.nt]) + (t[6 * p.nt] + t[7 * p.nt]);
            }
        }
        if (sweep == 0) {
            l0 = attn_row_sum(l0), l1 = attn_row_sum(l1), g0 = attn_row_sum(g0), g1 = attn_row_sum(g1);
            il0 = r0 < qlen && l0 > 0.f ? 1.f / l0 : 0.f, il1 = r1 < qlen && l1 > 0.f ? 1.f / l1 : 0.f;
            ig0 = r0 < qlen && g0 > 0.f ? 1.f / g0 : 0.f, ig1 = r1 < qlen && g1 > 0.f ? 1.f / g1 : 0.f;
        }
    }
}

/* Block (query block qb, head h): the key blocks' sums of both passes from the tiles' (part), each
 * pass's kept blocks ranked (ties: the lower block), and the kept ones listed ascending. */
static __global__ void sparsed_select_kernel(const k_sparsed_args p, int N, int H, int nt)
{
    extern __shared__ float imp[]; /* [2][nkb], then a kept flag a block */
    griddep_wait();
    const int qb = blockIdx.x, h = blockIdx.y, tpb = p.block / TN_LONG;
    const int nkb = (N + p.block - 1) / p.block, last = p.last;
    float *i1 = imp, *i2 = imp + nkb;
    unsigned char *keep = (unsigned char *)(imp + 2 * nkb);
    const int qa = qb * tpb, qz = min(nt, qa + tpb);
    const float *p1 = p.part + (size_t)h * nt * nt, *p2 = p1 + (size_t)H * nt * nt;
    for (int kb = threadIdx.x; kb < nkb; kb += blockDim.x) {
        const int ka = kb * tpb, kz = min(nt, ka + tpb);
        float a1 = 0.f, a2 = 0.f;
        for (int q = qa; q < qz; q++)
            for (int k = ka; k < kz; k++) {
                a1 += p1[(size_t)q * nt + k];
                if (kb >= last)
                    a2 += p2[(size_t)q * nt + k];
            }
        i1[kb] = a1, i2[kb] = a2;
    }
    __syncthreads();
    const int ng = nkb - last;
    const int top1 = min(nkb, (int)(nkb * p.select) + 1), top2 = ng > 0 ? min(ng, (int)(ng * p.select) + 1) : 0;
    for (int kb = threadIdx.x; kb < nkb; kb += blockDim.x) {
        int rank1 = 0, rank2 = 0;
        for (int j = 0; j < nkb; j++) {
            rank1 += i1[j] > i1[kb] || (i1[j] == i1[kb] && j < kb);
            if (kb >= last && j >= last)
                rank2 += i2[j] > i2[kb] || (i2[j] == i2[kb] && j < kb);
        }
        keep[kb] = (kb < last && rank1 < top1) || (kb >= last && rank2 < top2);
    }
    __syncthreads();
    const size_t e = (size_t)h * p.qblocks + qb;
    if (p.imp)
        for (int kb = threadIdx.x; kb < p.stride; kb += blockDim.x) {
            p.imp[e * p.stride + kb] = kb < nkb ? i1[kb] : 0.f;
            p.imp[((size_t)H * p.qblocks + e) * p.stride + kb] = kb < nkb ? i2[kb] : 0.f;
        }
    if (threadIdx.x == 0) {
        int c = 0;
        for (int kb = 0; kb < nkb; kb++)
            if (keep[kb])
                p.list[e * p.stride + c++] = (int16_t)kb;
        p.cnt[e] = c;
    }
}

extern "C" int64_t k_sparsed_part_bytes(int N, int H)
{
    const int64_t nt = (N + TN_LONG - 1) / TN_LONG;
    return 2 * (int64_t)H * nt * nt * (int64_t)sizeof(float);
}

template <int D> static cudaError_t sparsed_scores(const k_attn_args &a, const sparsed_launch &l, cudaStream_t st)
{
    static int configured = 0; /* the largest shared memory set so far */
    const int bytes = sparsed_smem<D>::bytes(l.nt);
    if (bytes > configured) {
        const cudaError_t e = cudaFuncSetAttribute(sparsed_scores_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   bytes);
        if (e != cudaSuccess)
            return e;
        configured = bytes;
    }
    return k_launch(sparsed_scores_kernel<D>, dim3((unsigned)l.nt, (unsigned)a.H), dim3(128), (size_t)bytes, st, a, l);
}

extern "C" int k_sparsed_pattern(const struct k_sparsed_args *p, k_stream stream)
{
    if (p->N <= 0)
        return 0;
    const k_attn_args &a = *p->at;
    const int nkb = (p->N + p->block - 1) / max(p->block, 1), nt = (p->N + TN_LONG - 1) / TN_LONG;
    if (!attn_args_valid(&a) || (a.d != 128 && a.d != 64) || p->block <= 0 || p->block % TN_LONG || p->last < 0 ||
        p->last >= nkb || p->qblocks < nkb || p->stride < nkb || !(p->select >= 0 && p->select <= 1))
        return (int)cudaErrorInvalidValue;
    const sparsed_launch l = {p->seg, nt, p->last * (p->block / TN_LONG), p->scale * 1.4426950408889634f, p->part};
    cudaError_t e = a.d == 128 ? sparsed_scores<128>(a, l, stream) : sparsed_scores<64>(a, l, stream);
    if (e == cudaSuccess)
        e = k_launch(sparsed_select_kernel, dim3((unsigned)nkb, (unsigned)a.H), dim3(128),
                     (size_t)nkb * (2 * sizeof(float) + 1), stream, *p, p->N, a.H, nt);
    return (int)e;
}
