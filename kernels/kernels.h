/*
 * kernels.h: the CUDA kernels of the engine behind plain C launchers (no CUDA syntax here, so C11
 * host code includes it). Each launcher enqueues its kernel(s) on `stream` and returns the
 * cudaError_t of the launch (cudaGetLastError() right after it) as an int: 0 is success.
 *
 * Conventions: activations are bf16 row-major [tokens, width]; bf16 values travel as uint16_t.
 * The KV pool holds, per layer, K and V as [slots, kv_heads, head_dim] bf16, a slot being
 * page * page_tokens + offset. Every kernel has a CPU reference in engine/eng_ref.c.
 */
#ifndef TESSERA_KERNELS_H
#define TESSERA_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *k_stream;
typedef uint16_t bf16_t;

/* Launches with programmatic dependent launch (on, the default, on compute capability 9.0 and
 * later) or plainly (off); either way a kernel starts its work only after the previous one in the
 * stream has completed (common.cuh). */
void k_set_pdl(int on);

/* Fills n bf16 values with scale * U(-1, 1) from a counter hash of (seed, index): bit-identical to
 * the host's eng_fill_random(). */
int k_fill_random(bf16_t *dst, int64_t n, uint64_t seed, float scale, k_stream stream);
/* Fills n bf16 values with a constant bit pattern (poisoning, ones). */
int k_fill_bits(bf16_t *dst, int64_t n, uint16_t bits, k_stream stream);
/* dst[i] = (float)src[i]: the fp32 copy of the logits PyTorch's softmax makes (memory planners). */
int k_bf16_to_f32(float *dst, const bf16_t *src, int64_t n, k_stream stream);

/* out[t] = in[t] * rsqrt(mean(in[t]^2) + eps) * w, rows of width h. */
int k_rmsnorm(bf16_t *out, const bf16_t *in, const bf16_t *w, int rows, int h, float eps,
              k_stream stream);

/* Embedding gather: x[t] = table[ids[t]]. */
int k_embed(bf16_t *x, const bf16_t *table, const int32_t *ids, int rows, int h, k_stream stream);

/* Row gather: out[i] = in[idx[i]]. */
int k_gather_rows(bf16_t *out, const bf16_t *in, const int32_t *idx, int rows, int h,
                  k_stream stream);

/*
 * QKV post-processing for T packed tokens of qkv [T, (H + 2*Hkv) * d] (d a multiple of 16): adds
 * the bias (if not NULL), applies rotary embeddings (rotate-half, theta) at tok_pos[t] to q in
 * place and to k, and stores k and v into the pool slot tok_slot[t] of this layer (k_pool/v_pool
 * point at the layer's [slots, Hkv, d] arrays; kv_stride elements from slot to slot, 0 = Hkv * d). With
 * k_pool = qkv + H d, v_pool = qkv + (H + Hkv) d, kv_stride = (H + 2 Hkv) d and tok_slot[t] = t
 * the K/V stay in place in the qkv rows (the stateless engine, no KV pool).
 */
int k_qkv_rope_store(bf16_t *qkv, const bf16_t *bias, const int32_t *tok_pos,
                     const int32_t *tok_slot, bf16_t *k_pool, bf16_t *v_pool, int kv_stride, int T,
                     int H, int Hkv, int d, float theta, k_stream stream);

/* out[t, j] = silu(gu[t, j]) * gu[t, F + j] for a fused gate|up input of width 2F. */
int k_swiglu(bf16_t *out, const bf16_t *gu, int rows, int F, k_stream stream);

/* The gate/up GEMM with k_swiglu in its epilogue (gemm_wgmma.cu, Hopper): out[t, j] =
 * silu(g) * u of g = (x w[j]^T), u = (x w[F + j]^T), each rounded to bf16 as the unfused path's
 * GEMM output is, for x [rows, K] and w [2F, K] (the gate rows, then the up rows); the [rows, 2F]
 * product is never written. Needs K a multiple of 64, F of 128 (k_gemm_swiglu_fits) and 16-byte
 * aligned pointers; cudaErrorNotSupported where the sm_90a image or the driver's TMA encoder is
 * missing (k_gemm_wgmma_ready, asked outside a stream capture first). */
static inline int k_gemm_swiglu_fits(int K, int F) { return K > 0 && K % 64 == 0 && F > 0 && F % 128 == 0; }
int k_gemm_swiglu(bf16_t *out, const bf16_t *x, const bf16_t *w, int rows, int K, int F, k_stream stream);
/* Whether the engine's own wgmma GEMMs run on this device (probed once, outside a stream capture). */
int k_gemm_wgmma_ready(k_stream stream);
/* The most blocks its persistent grid has for `rows` rows (0 before k_gemm_wgmma_ready). */
int k_gemm_swiglu_blocks(int rows);
/* Whether fusing pays for `rows` rows of an FFN of width F on this GPU (0 before
 * k_gemm_wgmma_ready): k_gemm_swiglu_auto_v with the clusters that fit on it. */
int k_gemm_swiglu_auto(int rows, int F);

#define K_FFN_TILE_M 128 /* rows of a fused gate/up tile: two consumer warpgroups of 64 */
#define K_FFN_TILE_F 128 /* output columns of a tile (128 gate + 128 up columns of W) */

/* The fused gate/up GEMM's clusters: two blocks where its row tiles pair up (an odd count would
 * leave a partner idle in every column), else one: 1-2% faster than single blocks at 512 and
 * 2,048 rows, within 1.5% at 8,192 (engine/BENCHMARKS.md). */
static inline int k_gemm_swiglu_cluster(int rows)
{
    const int mt = (rows + K_FFN_TILE_M - 1) / K_FFN_TILE_M;
    return mt >= 2 && mt % 2 == 0 ? 2 : 1;
}

/* Its units of work for `rows` rows of an FFN of width F: a cluster's cl row tiles of one column
 * tile. */
static inline int64_t k_gemm_swiglu_units(int rows, int F, int cl)
{
    return (int64_t)((rows + K_FFN_TILE_M * cl - 1) / (K_FFN_TILE_M * cl)) * (F / K_FFN_TILE_F);
}

/* Whether fusing pays, for a persistent grid of clusters[cl] clusters of cl blocks (cl = 1, 2):
 * one row tile of at least 64 rows whose column tiles take one round of the grid (reading W
 * dominates, and every block streams its share once), or more row tiles that fill the grid's
 * rounds to 90% or more. Measured on the H200, fused over split: LLaDA-8B (4096 x 12288, 96 column
 * tiles) 0.91-0.98x from 64 to 128 rows and from 512 on, 1.04-1.17x below 64 rows, 1.15-1.40x at
 * 192-384 rows (two or three rounds, the last a third to half full); Dream-7B (3584 x 18944: 148
 * column tiles, two rounds on 132 SMs, the second 16 blocks) 1.24-1.39x up to 256 rows
 * (engine/BENCHMARKS.md, eighth and eighteenth sessions). */
static inline int k_gemm_swiglu_auto_v(int rows, int F, const int clusters[3])
{
    if (rows <= 0 || F <= 0 || F % K_FFN_TILE_F)
        return 0;
    const int cl = k_gemm_swiglu_cluster(rows);
    if (clusters[cl] <= 0)
        return 0;
    const int64_t units = k_gemm_swiglu_units(rows, F, cl);
    if (rows <= K_FFN_TILE_M)
        return rows >= 64 && units <= clusters[cl];
    const int64_t tiles = k_gemm_swiglu_units(rows, F, 1);
    const int64_t rounds = (units + clusters[cl] - 1) / clusters[cl];
    return tiles * 10 >= rounds * clusters[cl] * cl * 9;
}

/*
 * Varlen attention over packed segments. Segment s has q_len[s] query rows starting at packed
 * row q_start[s] of q (rows of stride q_stride elements, heads of d contiguous), and attends to
 * key_len[s] keys: its page list pages[page_off[s] ...] maps key j to slot
 * pages[j / page_tokens] * page_tokens + j % page_tokens (page_tokens a power of two). Query i of the segment sits at key
 * position kv_cached[s] + i. block_size > 0 makes it block-causal: key j is visible to query i iff
 * j < kv_cached[s] or (j - kv_cached[s]) / block_size <= i / block_size. Output o [T, H * d].
 * tiles: num_tiles pairs (segment, first query row) of 64-row query tiles.
 */
struct k_attn_args {
    const bf16_t *q;
    int q_stride;
    const bf16_t *k_pool, *v_pool;
    bf16_t *o;
    const int32_t *q_start, *q_len, *key_len, *kv_cached, *page_off, *pages;
    const int32_t *tiles; /* [num_tiles][2] */
    int num_tiles;
    int H, Hkv, d, page_tokens, block_size;
    int page_shift;  /* log2(page_tokens): pages are a power of two tokens */
    int kv_stride;   /* elements from one slot's K (V) to the next; 0 = Hkv * d (the pool). The
                      * stateless engine reads K/V in place from the qkv rows: (H + 2 Hkv) d */
    float scale;
    /* split-KV: with few query tiles the keys are split over several blocks whose partial results
     * (fp32) are combined by a second kernel. ws/ws_bytes is scratch for them (NULL: no split);
     * max_key_len bounds the useful number of splits. */
    void *ws;
    int64_t ws_bytes;
    int T;           /* packed query rows (for the combine) */
    int max_key_len;
    int impl;        /* 0: the mma.sync kernel; 1: the wgmma kernel where it runs (an sm_90a image,
                      * head dim 128, no key split), the mma.sync kernel elsewhere; 2 (auto): where
                      * the wgmma kernel runs, it takes the segments of at least K_ATTN_LONG_Q query
                      * rows (Refresh, prefill) and the mma.sync kernel the others (Reuse), each
                      * launch skipping the other's segments, except that one such segment of at
                      * most 128 rows over many keys goes to the mma.sync kernel with the rest
                      * (k_attention_long_on_mma, which needs long_tiles) */
    int min_q_len, max_q_len; /* the shortest and the longest segment's q_len (0, 0: not known, so
                               * impl 2 launches both kernels) */
    int long_tiles, long_rows; /* long_tiles > 0: the tile list holds the tiles of the segments of
                      * at least K_ATTN_LONG_Q rows first, long_tiles of them over long_rows query
                      * rows, and the other segments' after them (k_attention_tiles lists them so,
                      * and eng_plan with it). Under auto each kernel then runs over its own part of
                      * the list, the mma.sync kernel choosing its K/V tile size by its own rows. 0:
                      * not known, each kernel walks every tile */
    int wg_tiles;    /* > 0 (with long_tiles): the first wg_tiles tiles of the list are the long
                      * segments' tiles at multiples of 128 rows, the wgmma kernel's blocks
                      * (k_attention_tiles lists them so); its persistent blocks then walk only
                      * those. 0: not known, they walk every tile and skip the others */
    int wg_min_q;    /* internal (k_attention sets it; callers leave 0): > 0, the wgmma kernel takes
                      * the segments of at least wg_min_q rows and the mma.sync kernel the others */
    int splits;      /* > 0: the mma.sync launch's key splits where it may split (ws given, alone),
                      * instead of k_attention_split_rule's, up to its 64-key tiles, K_ATTN_MAX_SPLITS
                      * and the scratch (for measuring the rule: attn_bench's ATTN_SPLITS); 0: the
                      * rule's (the engine) */
    int head_pack;   /* > 0: the query heads of one K/V head a block of the mma.sync kernel takes
                      * together (1, 2 or 4; where k_attention_pack_fits allows, else 1), instead of
                      * k_attention_head_pack_v's (0, the engine; attn_bench's ATTN_PACK) */
};
#define K_ATTN_TILE_M 64
#define K_ATTN_LONG_Q 96
/* The query tiles (segment, first row) of nseg segments of q_len rows as the attention kernels
 * want them listed, into tiles (2 * sum ceil(q_len / K_ATTN_TILE_M) values): the segments of at
 * least K_ATTN_LONG_Q rows first, their tiles at multiples of 128 rows (the wgmma kernel's blocks)
 * before their others, then the other segments' tiles, each group in segment order. Returns the
 * count; *long_tiles, *long_rows and *wg_tiles are k_attn_args' fields of the same names. */
static inline int k_attention_tiles(int nseg, const int32_t *q_len, int32_t *tiles, int *long_tiles, int *long_rows,
                                    int *wg_tiles)
{
    int n = 0;
    *long_tiles = *long_rows = *wg_tiles = 0;
    for (int pass = 0; pass < 3; pass++) { /* long at multiples of 128, long others, short */
        for (int s = 0; s < nseg; s++) {
            const int q = q_len[s];
            if ((q >= K_ATTN_LONG_Q) != (pass < 2))
                continue;
            if (pass == 0)
                *long_rows += q;
            for (int q0 = pass == 1 ? K_ATTN_TILE_M : 0; q0 < q; q0 += pass == 2 ? K_ATTN_TILE_M : 2 * K_ATTN_TILE_M) {
                tiles[2 * n] = s;
                tiles[2 * n + 1] = q0;
                n++;
            }
        }
        if (pass == 0)
            *wg_tiles = n;
        if (pass == 1)
            *long_tiles = n;
    }
    return n;
}
#define K_ATTN_MAX_SPLITS 16
/* Whether the mma.sync kernel takes 32-key K/V tiles, four blocks an SM: its rows fill query tiles
 * to at most 32 rows on average and its keys are not split (k_attention_tile_keys; the
 * calibration's attention model prices the launch with the same rule). */
static inline int k_attention_short_kv_tiles(int splits, int64_t rows, int64_t num_tiles)
{
    return splits == 1 && rows <= 32 * num_tiles;
}
/* The version of the engine's attention launch rules (k_attention_split_rule_v). A profile records
 * the version it was measured under (engine_profile.attn_rules), and a calibration fitted from it
 * prices attention the way that engine launched it (sim/calib.c), so a calibration and the fidelity
 * records made with it stay valid when the rules change. 1: key splits ceil(2 SMs / blocks), the
 * profiles before the eleventh session (2026-11-21; those name no version); 2: floor(2 SMs /
 * blocks), from the tenth and eleventh sessions' sweeps (engine/BENCHMARKS.md): the ceiling's one
 * split too many ran the attention of 1-8 short Reuse segments 1.1-1.8x slower; 3: the count of
 * least modelled time (k_attention_split_cost), from the thirteenth session: the floor left
 * Reuse steps of 5-7 segments over thousands of keys on one split, 1.1-1.4x slower than 3-4; 4:
 * GQA head packing (k_attention_head_pack_v, k_attention_split_rule_pv), from the seventeenth
 * session (2026-11-22); launches that do not pack split as in 3. */
#define K_ATTN_RULES 4
/* Rules 3: the key splits s (1 up to `most`) of least modelled time for a launch of `blocks`
 * blocks (query tiles x heads) over `rows` query rows in num_tiles tiles, `keys` keys at most, on
 * `sms` SMs: waves x keys a block (the longest block's keys, as the kernel splits them, in 64-key
 * tiles, or 32 with k_attention_short_kv_tiles' four blocks an SM), plus 9/16 of a key for each
 * block launched and `combine` (96, K_ATTN_SPLIT_COMBINE_KEYS, but in packed launches) for the
 * combine where keys are split. The two constants are a non-negative least-squares fit of the
 * tenth and eleventh sessions' sweeps of forced counts (68 shapes of 1-16 segments of 8-128 rows
 * over 480-12,000 keys, engine/results/attn-splits*; analysis/attn_split_fit.py refits them and
 * sets each rule against the best count): geometric mean 1.011 of the best forced count's time in
 * the tenth's shapes and 1.018 in the eleventh's (the floor of rules 2: 1.032 and 1.031). Ties
 * take the fewer splits. */
#define K_ATTN_SPLIT_BLOCK_16THS 9   /* keys a launched block costs, in 16ths */
#define K_ATTN_SPLIT_COMBINE_KEYS 96 /* keys the combine of split keys costs */
static inline int k_attention_split_cost(int64_t blocks, int64_t rows, int num_tiles, int sms, int64_t keys,
                                         int64_t most, int64_t combine)
{
    int best = 1;
    int64_t best_cost = -1;
    for (int s = 1; s <= most; s++) {
        const int short_kv = k_attention_short_kv_tiles(s, rows, num_tiles);
        const int64_t slots = (short_kv ? 4 : 2) * (int64_t)sms, tile = short_kv ? 32 : 64;
        const int64_t waves = (blocks * s + slots - 1) / slots;
        int64_t per = ((keys + s - 1) / s + tile - 1) / tile * tile;
        if (per > keys)
            per = keys;
        const int64_t cost = 16 * waves * per + K_ATTN_SPLIT_BLOCK_16THS * blocks * s + (s > 1 ? 16 * combine : 0);
        if (best_cost < 0 || cost < best_cost)
            best_cost = cost, best = s;
    }
    return best;
}
/* The key splits of the mma.sync kernel running alone over num_tiles query tiles (rows query rows)
 * of `heads` heads, max_key_len keys at most, on a GPU of `sms` SMs, by rules version `rules`: 1-2,
 * about two blocks an SM (at most that many from version 2 on); 3 and 4, k_attention_split_cost's,
 * its combine costing `combine` keys; at most one a 64-key tile and K_ATTN_MAX_SPLITS.
 * k_attention_splits adds the workspace's limit. */
static inline int k_attention_split_rule_c(int rules, int num_tiles, int64_t rows, int heads, int sms,
                                           int max_key_len, int64_t combine)
{
    if (num_tiles <= 0 || heads <= 0 || sms <= 0)
        return 1;
    int64_t blocks = (int64_t)num_tiles * heads, slots = 2 * (int64_t)sms;
    int64_t useful = ((int64_t)max_key_len + 63) / 64;
    int64_t most = useful < K_ATTN_MAX_SPLITS ? useful : K_ATTN_MAX_SPLITS;
    if (rules >= 3)
        return most < 1 ? 1 : k_attention_split_cost(blocks, rows, num_tiles, sms, max_key_len, most, combine);
    int64_t want = rules >= 2 ? slots / blocks : (slots + blocks - 1) / blocks;
    int64_t splits = want < most ? want : most;
    return splits < 1 ? 1 : (int)splits;
}
/* k_attention_split_rule_c with the combine's constant K_ATTN_SPLIT_COMBINE_KEYS: a launch that
 * packs no heads (heads packed by rules 4: k_attention_split_rule_pv) */
static inline int k_attention_split_rule_v(int rules, int num_tiles, int64_t rows, int heads, int sms,
                                           int max_key_len)
{
    return k_attention_split_rule_c(rules, num_tiles, rows, heads, sms, max_key_len, K_ATTN_SPLIT_COMBINE_KEYS);
}
/* Whether a block of the mma.sync kernel can take P query heads together (P = 1, 2 or 4): P divides
 * the query heads a K/V head serves, and every segment fits in 64 / P rows (max_q_len, the longest,
 * known: > 0), so that each segment is one query tile of 64 / P rows a head. */
static inline int k_attention_pack_fits(int P, int H, int Hkv, int max_q_len)
{
    if (P == 1)
        return 1;
    return (P == 2 || P == 4) && Hkv > 0 && H % Hkv == 0 && (H / Hkv) % P == 0 && max_q_len > 0 &&
           max_q_len <= K_ATTN_TILE_M / P;
}
/* The fewest keys (the longest segment's) for which rules 4 packs heads: below them a launch is a
 * few microseconds of latency, which P times the rows a block only lengthens (1-8 segments over 128
 * keys ran 1.05-1.14x the unpacked launch's time on the H200, engine/BENCHMARKS.md) */
#define K_ATTN_PACK_MIN_KEYS 256
/* The query heads a block of the mma.sync kernel takes together by rules version `rules` (GQA
 * packing, from version 4): 4 where they fit (segments of at most 16 rows, a K/V head's group a
 * multiple of 4), else 2 (at most 32 rows), else 1, and 1 where the longest segment has fewer than
 * K_ATTN_PACK_MIN_KEYS keys or before version 4. Each K/V tile a block loads then serves P heads,
 * and the Reuse tile of 32 rows, which left two of the four warps idle or splitting keys, gives
 * every warp rows. */
static inline int k_attention_head_pack_v(int rules, int H, int Hkv, int max_q_len, int max_key_len)
{
    if (rules < 4 || max_key_len < K_ATTN_PACK_MIN_KEYS)
        return 1;
    if (k_attention_pack_fits(4, H, Hkv, max_q_len))
        return 4;
    return k_attention_pack_fits(2, H, Hkv, max_q_len) ? 2 : 1;
}
/* The key splits of a launch of P packed heads (rules 4; P = 1: k_attention_split_rule_v's) over
 * num_tiles tiles of T query rows in all, H query heads: k_attention_split_cost over its tiles x
 * H / P blocks of P times the rows, its combine costing 96 + T H / 16 keys (it merges every row
 * and head: where a rows x heads-proportional term leaves 6-8 segments of 32 rows over 480-1,024
 * keys unsplit, they ran 0.76-0.79x the time of the constant's split, while 1-4 segments and those
 * over 4,000 keys still split; engine/BENCHMARKS.md). */
static inline int k_attention_split_rule_pv(int rules, int P, int num_tiles, int64_t T, int H, int sms,
                                            int max_key_len)
{
    if (P <= 1 || rules < 4)
        return k_attention_split_rule_v(rules, num_tiles, T, H, sms, max_key_len);
    return k_attention_split_rule_c(rules, num_tiles, T * P, H / P, sms, max_key_len,
                                    K_ATTN_SPLIT_COMBINE_KEYS + T * H / 16);
}
/* The key splits by this build's rules (the engine's launches) of P packed heads */
static inline int k_attention_split_rule(int P, int num_tiles, int64_t rows, int heads, int sms, int max_key_len)
{
    return k_attention_split_rule_pv(K_ATTN_RULES, P, num_tiles, rows, heads, sms, max_key_len);
}
/* Whether auto runs a step's long segments on the mma.sync kernel (with the rest, keys split by
 * k_attention_split_rule) instead of the wgmma kernel, which never splits keys: where they are a
 * single segment of at most 128 rows (long_tiles 1 or 2 of 64 rows; 0 is not known) over 2,048
 * keys or more (the step's longest), its blocks, one a head, filling at most a quarter of the
 * SMs. One 128-row segment of 32 heads ran 1.13-1.41x slower on the wgmma kernel over 2,048 to
 * 8,192 keys, even over 1,024; two such segments, or one of 256 rows, 0.6-0.9x
 * (engine/BENCHMARKS.md). The calibration's attention model (sim/calib.c) follows the same rule. */
static inline int k_attention_long_on_mma(int long_tiles, int heads, int sms, int max_key_len)
{
    return long_tiles > 0 && long_tiles <= 2 && 4 * heads <= sms && max_key_len >= 2048;
}
int k_attention(const struct k_attn_args *a, k_stream stream);
/* The wgmma kernel alone: cudaErrorNotSupported where it cannot run (no sm_90a image for this
 * device, head dim other than 128; the key split of a is ignored: it never splits). */
int k_attention_wgmma(const struct k_attn_args *a, k_stream stream);
/* Whether the wgmma kernel runs on this device (probed once, outside a stream capture). */
int k_attention_wgmma_ready(k_stream stream);
/* The number of key splits k_attention's mma.sync launch will use for these arguments (1 = none;
 * always beside the wgmma kernel). */
int k_attention_splits(const struct k_attn_args *a);
/* The keys a K/V tile of k_attention's mma.sync kernel holds for these arguments: 32 where the
 * query tiles hold at most 32 rows on average and the keys are not split (Reuse steps), else 64. */
int k_attention_tile_keys(const struct k_attn_args *a);
/* The query heads each block of k_attention's mma.sync launch takes together for these arguments
 * (k_attn_args.head_pack where it fits, else k_attention_head_pack_v's; 1 beside the wgmma kernel). */
int k_attention_head_pack(const struct k_attn_args *a);

/* Per row of logits [rows, V]: the argmax, its value and its softmax probability (confidence),
 * written at out_*[row_base + row]. */
int k_argmax_conf(const bf16_t *logits, int rows, int V, int32_t *out_tok, float *out_max,
                  float *out_conf, int row_base, k_stream stream);

#ifdef __cplusplus
}
#endif
#endif
