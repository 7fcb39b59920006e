/*
 * kernels.h: the CUDA kernels of the engine behind plain C launchers (no CUDA syntax here, so C11
 * host code includes it). Each launcher enqueues its kernel(s) on `stream` and returns the
 * cudaError_t of the launch (cudaGetLastError() right after it) as an int: 0 is success.
 *
 * Conventions: activations are bf16 row-major [tokens, width]; bf16 values travel as uint16_t.
 * The KV pool holds, per layer, K and V as [slots, kv_heads, head_dim] bf16, a slot being
 * page * page_tokens + offset. Every kernel has a CPU reference in engine/eng_ref_ops.c.
 */
#ifndef TESSERA_KERNELS_H
#define TESSERA_KERNELS_H

#include <stdint.h>

#include "attn_rules.h" /* the attention launch rules (sim/core), shared with the cost model */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *k_stream;
typedef uint16_t bf16_t;

/* Whether the kernels run as on a GPU before Hopper (the engine's --kernels portable): no wgmma, TMA
 * or cluster kernels and no programmatic dependent launch, whatever the device; so that a Hopper
 * card tests the path an RTX 4090, L40S or A100 takes. Set before the first kernel runs. */
int k_portable(void);
void k_set_portable(int on);
/* 0 when this build holds no code the current device can run (neither its SASS nor PTX it can JIT). */
int k_has_image(void);

/* Launches with programmatic dependent launch (on, the default, on compute capability 9.0 and
 * later) or plainly (off); either way a kernel starts its work only after the previous one in the
 * stream has completed (common.cuh). */
void k_set_pdl(int on);

/* Fills n bf16 values with scale * U(-1, 1) from a counter hash of (seed, index): bit-identical to
 * the host's eng_fill_random(). */
int k_fill_random(bf16_t *dst, int64_t n, uint64_t seed, float scale, k_stream stream);
/* A window of the same values: dst's rows x cols are a tensor's elements first + r src_cols + c (a
 * tensor-parallel share cut from the tensor k_fill_random would fill). */
int k_fill_random_window(bf16_t *dst, int64_t rows, int64_t cols, int64_t src_cols, int64_t first, uint64_t seed,
                         float scale, k_stream stream);
/* Fills n bf16 values with a constant bit pattern (poisoning, ones). */
int k_fill_bits(bf16_t *dst, int64_t n, uint16_t bits, k_stream stream);
/* dst[i] = (float)src[i]: the fp32 copy of the logits PyTorch's softmax makes (memory planners). */
int k_bf16_to_f32(float *dst, const bf16_t *src, int64_t n, k_stream stream);

/* out[t] = in[t] * rsqrt(mean(in[t]^2) + eps) * w, rows of width h. */
int k_rmsnorm(bf16_t *out, const bf16_t *in, const bf16_t *w, int rows, int h, float eps,
              k_stream stream);

/* The same over gathered rows: out[t] = rmsnorm(in[idx[t]]) (idx NULL: in[t]). */
int k_rmsnorm_rows(bf16_t *out, const bf16_t *in, const bf16_t *w, const int32_t *idx, int rows, int h, float eps,
                   k_stream stream);

/* Embedding gather: x[t] = table[ids[t]]. */
int k_embed(bf16_t *x, const bf16_t *table, const int32_t *ids, int rows, int h, k_stream stream);

/* Row gather: out[i] = in[idx[i]]. */
int k_gather_rows(bf16_t *out, const bf16_t *in, const int32_t *idx, int rows, int h,
                  k_stream stream);
/* Row scatter: out[idx[i]] = in[i] (the indices distinct). */
int k_scatter_rows(bf16_t *out, const bf16_t *in, const int32_t *idx, int rows, int h, k_stream stream);
/* Page copy between two pools laid out [layers][slots][row] (a page: page_tokens slots): page src[j] of
 * in to page dst[j] of out, in every layer, for j < pages. in may be another GPU's memory (a peer's,
 * read over the link). row a multiple of 8. */
int k_copy_pages(bf16_t *out, int64_t out_slots, const bf16_t *in, int64_t in_slots, const int32_t *src,
                 const int32_t *dst, int pages, int layers, int page_tokens, int row, k_stream stream);

/*
 * QKV post-processing for T packed tokens of qkv [T, (H + 2*Hkv) * d] (d a multiple of 16): adds
 * the bias (if not NULL), applies rotary embeddings (rotate-half, theta) at tok_pos[t] to q in
 * place and to k, and stores k and v into the pool slot tok_slot[t] of this layer (k_pool/v_pool
 * point at the layer's [slots, Hkv, d] arrays; kv_stride elements from slot to slot, 0 = Hkv * d). With
 * k_pool = qkv + H d, v_pool = qkv + (H + Hkv) d, kv_stride = (H + 2 Hkv) d and tok_slot[t] = t
 * the K/V stay in place in the qkv rows (the stateless engine, no KV pool).
 */
/* Per-head QK norms and a partial rotary embedding for k_qkv_rope_store (NULL: neither): q and k
 * (both or neither) the norms' weights [d], each query and key head RMS-normalised (eps) and scaled
 * by them after the bias and before the rotation; rot (0: d) the leading dimensions of a head the
 * rotation turns (rotate-half within them, at theta^(-2i/rot); the rest pass through; a multiple of
 * 16, d/16 a power of two up to 32). */
struct k_qk_norm {
    const bf16_t *q, *k;
    int rot;
    float eps;
};
int k_qkv_rope_store(bf16_t *qkv, const bf16_t *bias, const int32_t *tok_pos,
                     const int32_t *tok_slot, bf16_t *k_pool, bf16_t *v_pool, int kv_stride, int T,
                     int H, int Hkv, int d, float theta, const struct k_qk_norm *qn, k_stream stream);

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
/* The same with its small-row forms chosen (k_gemm_swiglu: both): K_FFN_FIT_BOX loads only the
 * rows of a single row tile rather than its 128, K_FFN_SKIP_IDLE leaves out the MMAs of a consumer
 * warpgroup whose 64 rows are all past the matrix (engine/bench/gemm_bench.cu times each). */
#define K_FFN_FIT_BOX 1
#define K_FFN_SKIP_IDLE 2
int k_gemm_swiglu_v(bf16_t *out, const bf16_t *x, const bf16_t *w, int rows, int K, int F, int opts,
                    k_stream stream);
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
 * 2,048 rows, within 1.5% at 8,192 (H200). */
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
 * one row tile whose column tiles take one round of the grid (reading W dominates, and every block
 * streams its share once), or more row tiles that fill the grid's rounds to 90% or more. Measured
 * on the H200, fused over split: LLaDA-8B (4096 x 12288, 96 column tiles) 0.91-0.98x from 64 to 128
 * rows and from 512 on, a whole Reuse step of one or two blocks of 32 0.97-0.98x, 1.15-1.40x at
 * 192-384 rows (two or three rounds, the last a third to half full); Dream-7B (3584 x 18944: 148
 * column tiles, two rounds on 132 SMs, the second 16 blocks) 1.24-1.39x up to 256 rows. */
static inline int k_gemm_swiglu_auto_v(int rows, int F, const int clusters[3])
{
    if (rows <= 0 || F <= 0 || F % K_FFN_TILE_F)
        return 0;
    const int cl = k_gemm_swiglu_cluster(rows);
    if (clusters[cl] <= 0)
        return 0;
    const int64_t units = k_gemm_swiglu_units(rows, F, cl);
    if (rows <= K_FFN_TILE_M)
        return units <= clusters[cl];
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
                      * the wgmma kernel runs, it takes the segments of at least ATTN_LONG_Q query
                      * rows (Refresh, prefill) and the mma.sync kernel the others (Reuse), each
                      * launch skipping the other's segments, except that one such segment of at
                      * most 128 rows over many keys goes to the mma.sync kernel with the rest
                      * (attn_long_on_mma, which needs long_tiles) */
    int min_q_len, max_q_len; /* the shortest and the longest segment's q_len (0, 0: not known, so
                               * impl 2 launches both kernels) */
    int long_tiles, long_rows; /* long_tiles > 0: the tile list holds the tiles of the segments of
                      * at least ATTN_LONG_Q rows first, long_tiles of them over long_rows query
                      * rows, and the other segments' after them (attn_tiles lists them so,
                      * and eng_plan with it). Under auto each kernel then runs over its own part of
                      * the list, the mma.sync kernel choosing its K/V tile size by its own rows. 0:
                      * not known, each kernel walks every tile */
    int wg_tiles;    /* > 0 (with long_tiles): the first wg_tiles tiles of the list are the long
                      * segments' tiles at multiples of 128 rows, the wgmma kernel's blocks
                      * (attn_tiles lists them so); its persistent blocks then walk only
                      * those. 0: not known, they walk every tile and skip the others */
    int wg_min_q;    /* internal (k_attention sets it; callers leave 0): > 0, the wgmma kernel takes
                      * the segments of at least wg_min_q rows and the mma.sync kernel the others */
    int splits;      /* > 0: the mma.sync launch's key splits where it may split (ws given, alone),
                      * instead of attn_split_rule's, up to its 64-key tiles, ATTN_MAX_SPLITS
                      * and the scratch (for measuring the rule: attn_bench's ATTN_SPLITS); 0: the
                      * rule's (the engine) */
    int head_pack;   /* > 0: the query heads of one K/V head a block of the mma.sync kernel takes
                      * together (1, 2 or 4; where attn_pack_fits allows, else 1), instead of
                      * attn_head_pack_v's (0, the engine; attn_bench's ATTN_PACK) */
    /* A block-sparse pattern (SparseD's; NULL kb_base: none). Segment s with kb_base[s] >= 0
     * attends by it: the query rows of block qb (kb_block rows, a multiple of 64) of head h see
     * the keys of the kb_cnt[e] key blocks (kb_block keys each) listed ascending at
     * kb_list[e * kb_stride ...], e = kb_base[s] + h * kb_qblocks + qb; such a segment reads no
     * cached keys and is not block-causal. With a pattern the mma.sync kernel takes one query head a
     * block, and the wgmma kernel runs only where kb_block is a multiple of 128 (its items of 128
     * rows then lie in one block). */
    const int32_t *kb_base, *kb_cnt;
    const int16_t *kb_list;
    int kb_block, kb_qblocks, kb_stride;
};
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
 * (k_attn_args.head_pack where it fits, else attn_head_pack_v's; 1 beside the wgmma kernel). */
int k_attention_head_pack(const struct k_attn_args *a);

/*
 * Sparse KV selection of one layer (kv_select.cu), after its attention: for each selecting segment
 * sel[6 s ..] = {row0, score_rows, cand, keep, src_page_off, dst_page_off}, the mean query of packed
 * rows [row0, row0 + score_rows) of q scores the segment's candidate keys 0..cand-1 (key j at
 * pages[src_page_off + j / page_tokens] of this layer's pool), the scores are max-pooled over
 * `kernel` keys, and the keep best (per K/V head with per_head, else summed over heads: one set for
 * all) are copied, in key order, to keys 0..keep-1 of the page list at dst_page_off, which must not
 * overlap the candidates' pages. ws holds ws_bytes of scratch (k_kv_select_ws_bytes); afterwards
 * k_kv_select_idx gives the kept key indices, [num_sel][sets][max_keep], sets = per_head ? Hkv : 1.
 * Several layers at once (layers > 1, after the last of them): layer l's pool at k_pool, v_pool +
 * l layer_stride elements, its segments' mean queries at means + l num_sel H d (k_kv_select_means,
 * taken after its attention; q is not read), the same selections in each, the kept keys then
 * [layers][num_sel][sets][max_keep] and the scratch k_kv_select_ws_bytes(layers num_sel, ...).
 */
struct k_select_args {
    const bf16_t *q;
    int q_stride;
    bf16_t *k_pool, *v_pool;
    const int32_t *pages, *sel;
    int page_shift, num_sel, max_cand, max_keep;
    int H, Hkv, d, kernel, per_head;
    void *ws;
    int64_t ws_bytes;
    int layers;           /* 0 or 1: one layer, its means taken from q */
    int64_t layer_stride; /* elements between two layers' pools */
    const float *means;   /* [layers][num_sel][H d] fp32 (layers > 1) */
};
int64_t k_kv_select_ws_bytes(int num_sel, int max_cand, int max_keep, int Hkv);
int k_kv_select(const struct k_select_args *a, k_stream stream);
const int32_t *k_kv_select_idx(const struct k_select_args *a);
/* One layer's selecting segments' mean queries (q's scoring rows over each head group), as
 * k_kv_select takes them itself: out [num_sel][H d] fp32. */
int k_kv_select_means(const struct k_select_args *a, float *out, k_stream stream);

/*
 * dLLM-Cache's feature cache (feat_cache.cu). The cache holds, per layer and pool slot, a token's
 * attention output and FFN output, [slots, h] bf16 each. A layered step (eng_plan.h) keeps X hidden
 * rows x; a layer computes some of them (computed row j is hidden row c_row[j]; x_comp the reverse,
 * -1 for a row that rides on its cached outputs).
 *
 * k_fc_pick: each probing segment's value check, per layer, before its QKV. vnew [probe rows,
 * kv_dim] is the V projection (no bias) of the normalised probe rows, in probe_idx order (hidden
 * rows). Each row's cosine similarity with the V its slot holds (NaN there: -inf) goes to sim
 * [probe rows] fp32 scratch and its new V (plus the bias's V part, if any) to its slot; then, per
 * segment, the `picked` least similar (ties: the lower row) become its computed rows from its
 * comp-th on, in row order: their c_row, tok_pos (the first probe row's position + i), tok_slot
 * and x_comp are written, x_comp of the others -1. probe: [num_probe][5] (first hidden row, probe
 * rows, picked, comp, first position); trace (NULL: none) gets each segment's picked rows
 * (indices into its probe rows) at trace[n * max_probe]. Needs max_probe <= K_FC_MAX_PROBE.
 */
#define K_FC_MAX_PROBE 16384
struct k_fc_pick_args {
    const bf16_t *vnew;
    const bf16_t *v_bias;   /* the V part of the QKV bias, or NULL */
    bf16_t *v_pool;         /* the layer's [slots, kv_dim] */
    float *sim;             /* [probe_rows] scratch */
    const int32_t *x_slot, *probe, *probe_idx;
    int32_t *c_row, *tok_pos, *tok_slot, *x_comp, *trace;
    int num_probe, probe_rows, max_probe, kv_dim;
};
int k_fc_pick(const struct k_fc_pick_args *a, k_stream stream);
/* One half of a layer's outputs for its T computed rows: out[j] goes to cache[x_slot[c_row[j]]]
 * and is added to x[c_row[j]]. */
int k_fc_store(bf16_t *x, const bf16_t *out, const int32_t *c_row, const int32_t *x_slot, bf16_t *cache, int T,
               int h, k_stream stream);
/* The rows a layer carried (x_comp[r] < 0 of X hidden rows): x[r] += fa[s] + ff[s], s = x_slot[r],
 * their cached attention and FFN outputs. */
int k_fc_carry(bf16_t *x, const int32_t *x_comp, const int32_t *x_slot, const bf16_t *fa, const bf16_t *ff, int X,
               int h, k_stream stream);

/*
 * FOCUS's token eviction (focus.cu; step_desc.evict). An evicting step runs its front layers over
 * every front row; each evicting segment n is probe[K_FOCUS_FIELDS n ..]: the first candidate's
 * front row, its m <= K_FOCUS_MAX_CAND candidates, K picked, comp (the later row of the first picked
 * one), the first candidate's position pos0, the request, the segment's index in the later plan.
 *
 * k_focus_importance, in front layer `layer` (0 or 1) after its RoPE: for each segment and head hd,
 * the candidates' scores s_ij = scale q_i . k_j (q: the post-RoPE rows of qkv, stride q_stride; k:
 * the pool's K of their slots front_slot[row], the head's K/V head), max-pooled over j - 1, j, j + 1
 * among the candidates, softmaxed over j and summed over i: imp[layer][hd][g] (fp32, [2][H]
 * [probe_rows], g the candidate's index among every segment's, in segment order).
 *
 * k_focus_pick, after the front layers: each candidate's importance delta, the sum over the heads
 * of imp[1] minus that of imp[0] (NaN: -inf), into delta [probe_rows] when not NULL. The request's
 * progress[req] is the right-most position an earlier step ran through every layer (-1: none):
 * candidates up to it are processed, the others not (a segment's candidates ascend in position:
 * front_pos of their rows, which a generation scatters among the block's decided positions; pos0
 * where they follow each other). K are kept, with FOCUS's placeholder integrity
 * (no unprocessed candidate is left out left of one kept): of the K largest deltas (ties: the lower
 * row), the right-most unprocessed one fixes a prefix of u unprocessed candidates kept (at most K;
 * at least K less the processed ones), and the K - u largest deltas among the processed are kept.
 * They become the later rows comp.. in row order: c_row (their front row), tok_pos (front_pos) and
 * tok_slot (front_slot of their row) are written; key_len[seg] becomes the keys up to the right-most
 * processed or kept position, and progress[req] that position. trace (NULL: none) gets each
 * segment's kept candidates at trace[n * max_probe]. Both need max_probe <= K_FOCUS_MAX_CAND, d a
 * multiple of 8 and H a multiple of Hkv.
 */
#define K_FOCUS_MAX_CAND 128
#define K_FOCUS_FIELDS 7
struct k_focus_args {
    const bf16_t *q;          /* the front layer's qkv rows */
    const bf16_t *k_pool;     /* the layer's [slots, Hkv d] */
    const int32_t *front_slot, *front_pos, *probe; /* the front rows' slots and positions */
    float *imp, *delta;
    int32_t *c_row, *tok_pos, *tok_slot, *key_len, *progress, *trace;
    int q_stride, num_probe, probe_rows, max_probe, H, Hkv, d, layer;
    float scale;
};
/*
 * Mixture of experts (moe.cu). A MoE layer's T normalised rows go, each as k copies, to k of E
 * experts; copy i = t k + j is token t's j-th choice.
 * k_moe_route: from the router's logits [T, E] (bf16), each row's scores (fp32): its softmax over
 * the experts, or (rt->sigmoid) each expert's sigmoid; its k largest (ties: the lower expert),
 * ranked on the scores plus rt->bias (bf16 [E], if not NULL) and, with rt->n_group > 1, only among
 * the experts of the rt->topk_group groups (E / n_group experts each, in order) whose two best
 * ranked scores sum highest (ties: the lower group); their scores (without the bias) renormalised to
 * sum 1 where rt->norm, times rt->scale (0: 1): ids [T k], wts [T k]. With balance (not 0) the k
 * experts are instead those of the k largest priorities k_moe_priority(balance, t, e) (ties: the
 * lower expert), weighed the same way: every row picks k experts uniformly at random, independently
 * of the others, as a router
 * trained to balance its experts' load spreads a step's tokens (random weights route the masked
 * tokens of a block, alike but for their position, to the same few experts, and route more widely
 * as a context makes their rows differ: work a step's shape does not fix).
 * k_moe_dispatch: the copies in expert order (within an expert, in the order atomics give; no
 * output depends on it): counts [E] (scratch), offsets
 * [E + 1] (expert e's sorted positions offsets[e]..offsets[e + 1] - 1), tok [T k] (the token of each
 * sorted position), pos [T k] (each copy's sorted position), and the tile list: tiles [2 max_tiles]
 * (expert, first sorted position) of `tile` rows each within an expert (32, 64 or
 * K_MOE_TILE_WGMMA), *ntiles of them; max_tiles = ceil(T k / K_MOE_TILE_MIN) + E bounds them.
 * k_moe_tile gives the tile a step takes on fragments: 32 rows up to 32 copies an expert on
 * average (fewer padded rows, a deeper pipeline for the weights streamed once), else 64 (each
 * expert's weights read by fewer tiles).
 * k_moe_gemm: Y[p - p0] = X[p - p0] W_e^T for the sorted positions p in [p0, p1) (one chunk of them),
 * e the expert p belongs to: X [p1 - p0, K], W [E][N, K] (expert e's at e N K), Y [p1 - p0, N]; N
 * and K multiples of 64. Over a tile list of K_MOE_TILE_WGMMA rows it runs on Hopper's wgmma fed
 * by the TMA (gemm_wgmma.cu: N a multiple of 256, K of 64, k_moe_wgmma_fits; 16-byte aligned
 * pointers; cudaErrorNotSupported where k_gemm_wgmma_ready is not), else on bf16 fragments.
 * k_moe_combine: each token's copies within [p0, p1) weighted and summed, in slot order, into its
 * fp32 running sum acc [T, h] (first: from 0) or, for the last chunk, added to x [T, h].
 * Needs E <= K_MOE_MAX_EXPERTS and k <= 32.
 */
#define K_MOE_MAX_EXPERTS 1024
#define K_MOE_MAX_GROUPS 64
#define K_MOE_TILE_MIN 32
#define K_MOE_TILE_WGMMA 128 /* the wgmma grouped GEMM's tiles: two warpgroups of 64 rows */
static inline int k_moe_wgmma_fits(int N, int K) { return N > 0 && N % 256 == 0 && K > 0 && K % 64 == 0; }
/* How a router turns its logits into experts and weights (k_moe_route; model.h's router fields). */
struct k_moe_router {
    bool sigmoid, norm;
    const bf16_t *bias;
    int n_group, topk_group;
    float scale;
};
struct k_moe_dispatch_args {
    const int32_t *ids;
    int32_t *counts, *offsets, *tok, *pos, *tiles, *ntiles;
    int T, k, E, tile;
};
struct k_moe_gemm_args {
    const bf16_t *X, *W;
    bf16_t *Y;
    const int32_t *offsets, *tiles, *ntiles;
    int p0, p1, N, K, max_tiles, tile; /* tile: the dispatch's */
    int E;                              /* W's experts */
};
struct k_moe_combine_args {
    const bf16_t *Y;
    const int32_t *pos;
    const float *wts;
    float *acc;
    bf16_t *x;
    int T, k, h, p0, p1;
    bool first, last;
    bool replace; /* the last chunk writes x (a tensor-parallel rank's partial sum) instead of adding */
};
int k_moe_route(const bf16_t *logits, int T, int E, int k, uint32_t balance, const struct k_moe_router *rt,
                int32_t *ids, float *wts, k_stream stream);
/* k_moe_route's balance for layer `layer`'s rows: 0 (the router's choice) unless balanced, else a salt
 * of its own for each layer (the engine's and the CPU reference's alike). */
static inline uint32_t k_moe_balance(int balanced, int layer) { return balanced ? (uint32_t)layer + 1 : 0; }
/* Balanced routing's priority of expert e (< 1024) for row t (< 2^30) under salt balance: 24 bits of a
 * counter hash, the same on the host (the CPU reference) and the device. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline uint32_t k_moe_priority(uint32_t balance, uint32_t t, uint32_t e)
{
    uint64_t x = ((uint64_t)balance << 40) ^ ((uint64_t)t << 10) ^ e;
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (uint32_t)(x >> 40);
}
int k_moe_dispatch(const struct k_moe_dispatch_args *a, k_stream stream);
int k_moe_tile(int copies, int experts);
/* The most tiles of `tile` rows `copies` copies over `experts` experts take (each expert holding
 * copies takes fewer than its copies / tile + 1): a step's grouped GEMM grid. */
static inline int k_moe_tiles_bound(int copies, int experts, int tile)
{
    return (copies + tile - 1) / tile + (experts < copies ? experts : copies);
}
int k_moe_gemm(const struct k_moe_gemm_args *a, k_stream stream);
int k_moe_gemm_wgmma(const struct k_moe_gemm_args *a, k_stream stream);
int k_moe_combine(const struct k_moe_combine_args *a, k_stream stream);

/*
 * Elastic-Cache's drift test (drift.cu; arXiv 2510.14973, yxu-dev/Elastic-Cache modeling_llada.py's
 * attention) measured in one layer of a step that runs all N positions of a request as its rows
 * row0 .. row0 + N - 1 (position p at row row0 + rowmap[p]; engine generate --policy vanilla
 * --elastic-drift):
 *   - the window rows' (sel[0 .. nwin)) attention over the N keys, summed over rows and heads: its
 *     largest eligible key (a decided position; ties: the lower), the token this layer tracks next,
 *     into *out_track (-1: none eligible);
 *   - the tracked tokens' (sel[nwin .. nwin + ntrack)) attention rows this step and from Elastic-Cache's
 *     cache (prev_*_read: the queries and keys by position as its schedule last computed them), their
 *     cosine similarity over the heads of each key, averaged over tokens and keys, into *out_sim (NaN
 *     where ntrack = 0). This step's rows attend to fresh keys where Elastic-Cache computes the row
 *     (queried: the window, the tracked and the positions just decoded; every position in a layer
 *     after the first whose test fired, sims[0 .. layer) < gamma), to the cache's elsewhere;
 *   - the cache after the layer into prev_*_write (double-buffered: a step run again reads the same):
 *     this step's queries and keys where it computes the row, the cache's before elsewhere. probs is
 *     scratch of [nwin + 2 ntrack][H][N] floats.
 */
#define K_DRIFT_MAX_ROWS 96
#define K_DRIFT_MAX_D 512
struct k_drift_args {
    const bf16_t *q;         /* the layer's qkv rows, q_stride apart (queries after RoPE) */
    const bf16_t *k_pool;    /* the layer's keys: row r's at k_pool + slot[r] * k_stride */
    const int32_t *slot;     /* the step's rows' pool slots */
    const int32_t *rowmap;   /* [N] each position's row after row0 */
    const bf16_t *prev_q_read, *prev_k_read; /* [N][H d], [N][Hkv d] */
    bf16_t *prev_q_write, *prev_k_write;
    const int32_t *sel;      /* [nwin + ntrack] positions */
    const uint8_t *eligible; /* [N] */
    const uint8_t *queried;  /* [N] */
    const float *sims;       /* [layer]: the earlier layers' out_sim of this step */
    float *probs;
    int32_t *out_track;
    float *out_sim;
    int row0, N, nwin, ntrack, q_stride, k_stride, H, Hkv, d, layer;
    float scale, gamma;
};
int k_drift(const struct k_drift_args *a, k_stream stream);

/* d2Cache's attention rollout (arXiv 2509.23094; Kamichanw/d2Cache src/cache/d2cache.py at 72feb60,
 * accumulate_attn_rollout), measured over a step whose rows row0 .. row0 + N - 1 are every position
 * of a request (engine generate --d2-rollout). k_rollout_layer: layer `layer`'s mix, (A + I) / 2 with
 * A the attention of the N rows over their N keys averaged over the heads (d2Cache's A + I with its
 * rows normalised: A's sum to 1), into mix + layer N N (row-major: [query row][key row]).
 * k_rollout_importance, after `layers` layers: the rollout M_{layers-1} ... M_0's column sums (each
 * key row's importance) into importance [N], scratch [N] between the products. */
#define K_ROLLOUT_MAX_N 4096
struct k_rollout_args {
    const bf16_t *q;       /* the layer's qkv rows, q_stride apart (queries after RoPE) */
    const bf16_t *k_pool;  /* the layer's keys: row r's at k_pool + slot[r] * k_stride */
    const int32_t *slot;   /* the step's rows' pool slots */
    float *mix;            /* [layers][N][N] */
    float *importance, *scratch; /* [N] each */
    int row0, N, q_stride, k_stride, H, Hkv, d, layer, layers;
    float scale;
};
int k_rollout_layer(const struct k_rollout_args *a, k_stream stream);
int k_rollout_importance(const struct k_rollout_args *a, k_stream stream);

/* SparseD's pattern (arXiv 2509.24014; INV-WZQ/SparseD at 52155b4, models/LLaDA/modeling_llada.py
 * LLaDABlock.attention, SparseD_utils.py create_attention_block_mask), built in one layer of a step
 * whose segment `seg` of the attention arguments `at` runs every position of its request over no
 * cached keys (its N = q_len = key_len rows and keys, after RoPE; N given here too). For each head
 * and query block of `block` rows (a multiple of 64), pass 1 scores the block's rows against all N keys, softmax(scale q.k)
 * (SparseD's scale is 1 / sqrt(heads)), and sums each key block's probabilities over its rows
 * (SparseD's block mean times block^2: the same ranking); pass 2 does the same over the keys from
 * block `last` on alone. The block keeps pass 1's top min(n, int(n select) + 1) of its n key blocks
 * less those from `last` on, and pass 2's top min(n_g, int(n_g select) + 1) of the n_g from `last`
 * (ties: the lower block): their count into cnt[h * qblocks + qb] and their blocks, ascending, into
 * list[(h * qblocks + qb) * stride ...] (k_attn_args.kb_* read them). part [2][H][ceil(N/64)]^2
 * floats is scratch; imp (NULL: not wanted) gets each pass's sums, [2][H][qblocks][stride]. */
struct k_sparsed_args {
    const struct k_attn_args *at;
    int seg, N, block, last, qblocks, stride;
    double select;
    float scale;
    float *part, *imp;
    int32_t *cnt;
    int16_t *list;
};
int k_sparsed_pattern(const struct k_sparsed_args *a, k_stream stream);
/* The scratch k_sparsed_pattern needs for N positions and H heads, in bytes. */
int64_t k_sparsed_part_bytes(int N, int H);

int k_focus_importance(const struct k_focus_args *a, k_stream stream);
int k_focus_pick(const struct k_focus_args *a, k_stream stream);

/* Per row of logits [rows, V]: the argmax, its value and its softmax probability (confidence),
 * and where out_gap is not NULL the gap between its two largest logits (0 where the largest is there
 * twice: Prophet's top-2 gap), written at out_*[row_base + row]. */
int k_argmax_conf(const bf16_t *logits, int rows, int V, int32_t *out_tok, float *out_max,
                  float *out_conf, float *out_gap, int row_base, k_stream stream);
/* Tensor parallelism: the ranks' k_argmax_conf results over their vocabulary shares of `share`
 * tokens, gathered as [ranks][3][R] floats (argmax bits, max, confidence), merged into the whole
 * vocabulary's argmax, max and confidence (the lowest index among equal maxima, as k_argmax_conf). */
int k_tp_argmax_merge(const float *gathered, int ranks, int R, int share, int32_t *out_tok, float *out_max,
                      float *out_conf, k_stream stream);

/* A step's unmasking (engine/eng_unmask.h; unmask_block is the reference): over num_groups blocks of
 * logit rows, group g its rows groups[2g] .. groups[2g] + groups[2g + 1] - 1 (at most
 * K_UNMASK_MAX_ROWS), with each row's argmax tok, confidence conf and masked flag (nonzero: the
 * position is still masked): commit[row] = tok[row] where the rule commits the row, else -1, and
 * count[g] the rows group g commits. group_tau (NULL: tau everywhere) gives each group its own
 * threshold (IterSmooth's decaying one). */
#define K_UNMASK_MAX_ROWS 1024
enum { K_UNMASK_TOPK = 0, K_UNMASK_THRESHOLD, K_UNMASK_HIERARCHICAL, K_UNMASK_CREDIT /* threshold's rule */ };
typedef struct {
    const int32_t *groups, *tok, *masked;
    const float *conf;
    int32_t *commit, *count;
    int num_groups;
    int kind, k;   /* enum above; topk's k */
    float tau, low; /* threshold and hierarchical's thresholds */
    const float *group_tau;
} k_unmask_args;
int k_unmask(const k_unmask_args *a, k_stream stream);
/* Credit decoding's fusion (engine/eng_unmask.h; credit_fuse is the reference) over one LM-head chunk
 * of `rows` logit rows from row_base: each row with a credit row (state[row] >= 0) updates that
 * row's credits from in_* into out_* by flags[row] (K_CREDIT_MASKED, _DECAY, _CLEAR) and its plain
 * argmax and confidence, then turns tok, maxv and conf into the fused logits' (l + alpha log(1 +
 * credit)). Credit row s holds n[s] tokens and credits at [s * K_CREDIT_MAX]. */
#define K_CREDIT_MAX 32
enum { K_CREDIT_MASKED = 1, K_CREDIT_DECAY = 2, K_CREDIT_CLEAR = 4 };
typedef struct {
    const bf16_t *logits;
    int rows, V, row_base;
    int32_t *tok;
    float *maxv, *conf;
    const int32_t *state, *flags;
    const int32_t *in_tok, *in_n;
    const float *in_val;
    int32_t *out_tok, *out_n;
    float *out_val;
    float alpha, beta, gamma;
} k_credit_args;
int k_credit_fuse(const k_credit_args *a, k_stream stream);

/* dInfer's IterSmooth (engine/eng.h, eng_smooth_next). k_softmax_rows: each of `rows` logit rows
 * [V] replaced by its softmax, exp(l - maxv[row_base + i]) conf[row_base + i] (k_argmax_conf's max and
 * confidence of the row; bf16 out). k_smooth_scatter: src's rows [rows, h]
 * to soft's rows slot[row_base + i] (-1: not kept). k_smooth_add: x's row r [h] plus w[r] times
 * soft's row slot[r] (-1: unchanged). h a multiple of 8. */
int k_softmax_rows(bf16_t *logits, int rows, int V, const float *maxv, const float *conf, int row_base,
                   k_stream stream);
int k_smooth_scatter(const bf16_t *src, int rows, int h, const int32_t *slot, int row_base, bf16_t *soft,
                     k_stream stream);
int k_smooth_add(bf16_t *x, int rows, int h, const int32_t *slot, const float *w, const bf16_t *soft,
                 k_stream stream);

#ifdef __cplusplus
}
#endif
#endif
