/*
 * attention_frag.cuh: the pieces the mma.sync (attention.cu) and the wgmma (attention_wgmma.cu)
 * attention kernels share. Both hold S and O in mma.sync's m16n8 accumulator layout: a thread owns
 * rows r0 = its warp's first row + lane / 4 and r1 = r0 + 8, and in each 8-column tile n the
 * columns 8 n + 2 (lane % 4) and + 1 (elements 0, 1 in row r0; 2, 3 in row r1).
 */
#ifndef TESSERA_KERNELS_ATTENTION_FRAG_CUH
#define TESSERA_KERNELS_ATTENTION_FRAG_CUH

#include "common.cuh"

/* The launchers' check of a k_attn_args: whole query-head groups per K/V head, pages a power of
 * two tokens. */
static inline bool attn_args_valid(const k_attn_args *a)
{
    return a->H % a->Hkv == 0 && a->page_tokens > 0 && (1 << a->page_shift) == a->page_tokens;
}

/* The keys row r of a segment may see: its klen, or (block-causal, bs > 0) those up to the end of
 * the row's block: key j is visible iff j < min(klen, kvc + (r / bs + 1) bs), the cached prefix
 * and the blocks up to the row's own. */
static __device__ __forceinline__ int attn_row_keys(int klen, int kvc, int bs, int r)
{
    return bs > 0 ? min(klen, kvc + (r / bs + 1) * bs) : klen;
}

/* The keys query rows up to q_end (exclusive) of a segment of qlen rows may see: the last row's. */
static __device__ __forceinline__ int attn_key_end(int klen, int kvc, int bs, int q_end, int qlen)
{
    return attn_row_keys(klen, kvc, bs, min(q_end, qlen) - 1);
}

/* A segment's block-sparse pattern (k_attn_args.kb_*) for the query rows from q0 of head `head`: its
 * kept blocks' list into kbl and the number of TN-key tiles they hold (the last kept block may be the
 * partial last one: its tiles up to klen); -1, kbl NULL, where the segment has no pattern. */
template <int TN>
static __device__ __forceinline__ int attn_pattern_tiles(const k_attn_args &a, int seg, int head, int q0, int klen,
                                                         const int16_t *&kbl)
{
    kbl = nullptr;
    if (!a.kb_base || a.kb_base[seg] < 0)
        return -1;
    const int e = a.kb_base[seg] + head * a.kb_qblocks + q0 / a.kb_block, cnt = a.kb_cnt[e], tpb = a.kb_block / TN;
    kbl = a.kb_list + (size_t)e * a.kb_stride;
    return cnt > 0 ? (cnt - 1) * tpb + min(tpb, (klen - kbl[cnt - 1] * a.kb_block + TN - 1) / TN) : 0;
}

/* The first key of tile i of TN keys: the pattern's (kbl: attn_pattern_tiles), else consecutive. */
template <int TN>
static __device__ __forceinline__ int attn_tile_key(const k_attn_args &a, const int16_t *kbl, int i)
{
    if (!kbl)
        return i * TN;
    const int tpb = a.kb_block / TN;
    return kbl[i / tpb] * a.kb_block + (i % tpb) * TN;
}

/* Masks an S tile of NT 8-key columns from key k0 on: keys past those rows r0 and r1 see
 * (attn_row_keys: past klen, or block-causal in a later block) become -inf; SCALE also scales the
 * visible ones by sl2 (the log2 units of the softmax). Each row's limit is found once a tile, so
 * that no key costs a division; the kernels call it only for tiles that reach past the keys every
 * row of the warp sees. */
template <int NT, bool SCALE>
static __device__ __forceinline__ void attn_mask(float (&s)[NT][4], int k0, int t4, int r0, int r1, int klen, int kvc,
                                                 int bs, float sl2)
{
    const int lim0 = attn_row_keys(klen, kvc, bs, r0), lim1 = attn_row_keys(klen, kvc, bs, r1);
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int j = k0 + n * 8 + t4 * 2 + (e & 1);
            bool vis = j < (e < 2 ? lim0 : lim1);
            s[n][e] = vis ? (SCALE ? s[n][e] * sl2 : s[n][e]) : -INFINITY;
        }
}

/* The maximum of rows r0 and r1 over an S tile, across the four threads that share each row. */
template <int NT>
static __device__ __forceinline__ void attn_row_max(const float (&s)[NT][4], float &mx0, float &mx1)
{
    mx0 = -INFINITY;
    mx1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < NT; n++) {
        mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

/* A row's sum across the four threads that share it. */
static __device__ __forceinline__ float attn_row_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/* O rows r0 and r1 scaled by al0 and al1 */
template <int D>
static __device__ __forceinline__ void attn_scale_o(float (&o)[D / 8][4], float al0, float al1)
{
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        o[n][0] *= al0;
        o[n][1] *= al0;
        o[n][2] *= al1;
        o[n][3] *= al1;
    }
}

/* The online softmax's step to a tile's row maxima mx0, mx1 (log2 units): the running maxima m
 * grow to them, the sums l are corrected by al = 2^(old - new), and b0, b1 are the maxima to
 * subtract in the tile's exponents (0 for a row that has seen no key yet). O is to be scaled by al
 * as well (attn_scale_o; attn_new_max does both). */
static __device__ __forceinline__ void attn_new_max_l(float &m0, float &m1, float mx0, float mx1, float &l0, float &l1,
                                                      float &b0, float &b1, float &al0, float &al1)
{
    float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    b0 = n0 == -INFINITY ? 0.f : n0;
    b1 = n1 == -INFINITY ? 0.f : n1;
    al0 = fast_exp2(m0 - b0);
    al1 = fast_exp2(m1 - b1);
    m0 = n0;
    m1 = n1;
    l0 *= al0;
    l1 *= al1;
}

/* attn_new_max_l, but a row's running maximum is raised only where the tile's exceeds it by more
 * than `lazy` (log2 units; the first tile's always sets it): P = 2^(s - m) then stays below
 * 2^lazy, and the result is the same once divided by l, while al stays 1 and O need not be
 * scaled on most tiles (FlashAttention-4's lazy rescaling) */
static __device__ __forceinline__ void attn_new_max_lazy(float &m0, float &m1, float mx0, float mx1, float &l0,
                                                         float &l1, float &b0, float &b1, float &al0, float &al1,
                                                         float lazy)
{
    const float n0 = mx0 > m0 + lazy ? mx0 : m0, n1 = mx1 > m1 + lazy ? mx1 : m1;
    b0 = n0 == -INFINITY ? 0.f : n0;
    b1 = n1 == -INFINITY ? 0.f : n1;
    al0 = n0 == m0 ? 1.f : fast_exp2(m0 - b0);
    al1 = n1 == m1 ? 1.f : fast_exp2(m1 - b1);
    m0 = n0;
    m1 = n1;
    l0 *= al0;
    l1 *= al1;
}

/* attn_new_max_l with O's rows corrected at once */
template <int D>
static __device__ __forceinline__ void attn_new_max(float &m0, float &m1, float mx0, float mx1, float &l0, float &l1,
                                                    float (&o)[D / 8][4], float &b0, float &b1)
{
    float al0, al1;
    attn_new_max_l(m0, m1, mx0, mx1, l0, l1, b0, b1, al0, al1);
    attn_scale_o<D>(o, al0, al1);
}

/* An S tile of NT 8-key columns into P = 2^(s sl2 - b) (b0, b1: the rows' maxima in log2 units,
 * attn_new_max), its row sums added to l0 and l1 */
template <int NT>
static __device__ __forceinline__ void attn_exp(float (&s)[NT][4], float sl2, float b0, float b1, float &l0, float &l1)
{
#pragma unroll
    for (int n = 0; n < NT; n++) {
        s[n][0] = fast_exp2(fmaf(s[n][0], sl2, -b0));
        s[n][1] = fast_exp2(fmaf(s[n][1], sl2, -b0));
        s[n][2] = fast_exp2(fmaf(s[n][2], sl2, -b1));
        s[n][3] = fast_exp2(fmaf(s[n][3], sl2, -b1));
        l0 += s[n][0] + s[n][1];
        l1 += s[n][2] + s[n][3];
    }
}

/* Merges another softmax state over other keys of the same rows into this one (maxima in log2
 * units, sums already reduced across the row's threads): its O values are ox[32 i], in this
 * thread's fragment order. */
template <int D>
static __device__ __forceinline__ void attn_merge(float &m0, float &m1, float &l0, float &l1, float (&o)[D / 8][4],
                                                  float om0, float om1, float ol0, float ol1, const float *ox)
{
    float n0 = fmaxf(m0, om0), n1 = fmaxf(m1, om1);
    float b0 = n0 == -INFINITY ? 0.f : n0, b1 = n1 == -INFINITY ? 0.f : n1;
    float a0 = fast_exp2(m0 - b0), a1 = fast_exp2(m1 - b1), c0 = fast_exp2(om0 - b0), c1 = fast_exp2(om1 - b1);
    m0 = n0;
    m1 = n1;
    l0 = l0 * a0 + ol0 * c0;
    l1 = l1 * a1 + ol1 * c1;
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        o[n][0] = o[n][0] * a0 + ox[(n * 4 + 0) * 32] * c0;
        o[n][1] = o[n][1] * a0 + ox[(n * 4 + 1) * 32] * c0;
        o[n][2] = o[n][2] * a1 + ox[(n * 4 + 2) * 32] * c1;
        o[n][3] = o[n][3] * a1 + ox[(n * 4 + 3) * 32] * c1;
    }
}

/* O rows r0 and r1 divided by their sums l0 and l1 (0 for a row that saw no key), stored as bf16
 * into the head's columns of a.o; rows past the segment are not stored. */
template <int D>
static __device__ __forceinline__ void attn_store(const float (&o)[D / 8][4], const k_attn_args &a, int qs, int head,
                                                  int r0, int r1, int qlen, int t4, float l0, float l1)
{
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

#endif
