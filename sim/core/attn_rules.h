/*
 * attn_rules.h: the attention launch rules. How the engine's attention kernels split a step's
 * varlen segments into launches: which segments take the wgmma kernel (Hopper) and which the
 * mma.sync kernel, how query tiles are listed, how many query heads a block packs (GQA) and how
 * many ways the keys are split. The engine launches by these rules (kernels/attention.cu) and the
 * calibrated cost model prices attention by them (sim/cost/calib_price.c), so both read this one header.
 *
 * Pure C, no CUDA: every function is a static inline of plain integers, callable from C11 host
 * code and from the kernels' host-side launchers alike. The constants were fitted to sweeps of
 * forced key splits and head packs on an H200 (tests/check_attn_rules.c pins each rule's
 * crossovers).
 *
 * Versions: a profile records the rules it was measured under (engine_profile.attn_rules), and a
 * calibration prices attention the way that engine launched it, so a calibration stays valid when
 * the rules change.
 *   1  key splits ceil(2 SMs / blocks)
 *   2  floor(2 SMs / blocks): the ceiling's one split too many ran 1-8 short Reuse segments
 *      1.1-1.8x slower
 *   3  the count of least modelled time (attn_split_cost): the floor left Reuse steps of 5-7
 *      segments over thousands of keys on one split, 1.1-1.4x slower than 3-4
 *   4  GQA head packing (attn_head_pack_v, attn_split_rule_pv); launches that pack no heads split
 *      as in 3
 */
#ifndef TESSERA_ATTN_RULES_H
#define TESSERA_ATTN_RULES_H

#include <stdint.h>

#define ATTN_RULES 4        /* the version this build launches by */
#define ATTN_TILE_M 64      /* query rows of a tile of the mma.sync kernel */
#define ATTN_LONG_Q 96      /* segments of at least this many rows take the wgmma kernel */
#define ATTN_MAX_SPLITS 16  /* the most ways keys are split */

/* The query tiles (segment, first row) of nseg segments of q_len rows as the attention kernels
 * want them listed, into tiles (2 * sum ceil(q_len / ATTN_TILE_M) values): the segments of at
 * least ATTN_LONG_Q rows first, their tiles at multiples of 128 rows (the wgmma kernel's blocks)
 * before their others, then the other segments' tiles, each group in segment order. Returns the
 * count; *long_tiles, *long_rows and *wg_tiles are k_attn_args' fields of the same names
 * (kernels/kernels.h). */
static inline int attn_tiles(int nseg, const int32_t *q_len, int32_t *tiles, int *long_tiles, int *long_rows,
                             int *wg_tiles)
{
    int n = 0;
    *long_tiles = *long_rows = *wg_tiles = 0;
    for (int pass = 0; pass < 3; pass++) { /* long at multiples of 128, long others, short */
        for (int s = 0; s < nseg; s++) {
            const int q = q_len[s];
            if ((q >= ATTN_LONG_Q) != (pass < 2))
                continue;
            if (pass == 0)
                *long_rows += q;
            for (int q0 = pass == 1 ? ATTN_TILE_M : 0; q0 < q; q0 += pass == 2 ? ATTN_TILE_M : 2 * ATTN_TILE_M) {
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

/* Whether the mma.sync kernel takes 32-key K/V tiles, four blocks an SM: its rows fill query tiles
 * to at most 32 rows on average and its keys are not split. */
static inline int attn_short_kv_tiles(int splits, int64_t rows, int64_t num_tiles)
{
    return splits == 1 && rows <= 32 * num_tiles;
}

/* Rules 3: the key splits s (1 up to `most`) of least modelled time for a launch of `blocks`
 * blocks (query tiles x heads) over `rows` query rows in num_tiles tiles, `keys` keys at most, on
 * `sms` SMs: waves x keys a block (the longest block's keys, as the kernel splits them, in 64-key
 * tiles, or 32 with attn_short_kv_tiles' four blocks an SM), plus 9/16 of a key for each block
 * launched and `combine` keys for the combine where keys are split. The two constants are a
 * non-negative least-squares fit of sweeps of forced counts (68 shapes of 1-16 segments of 8-128
 * rows over 480-12,000 keys): geometric mean 1.011-1.018 of the best forced count's time, against
 * 1.031-1.032 for rules 2. Ties take the fewer splits. */
#define ATTN_SPLIT_BLOCK_16THS 9   /* keys a launched block costs, in 16ths */
#define ATTN_SPLIT_COMBINE_KEYS 96 /* keys the combine of split keys costs (unpacked launches) */
static inline int attn_split_cost(int64_t blocks, int64_t rows, int num_tiles, int sms, int64_t keys, int64_t most,
                                  int64_t combine)
{
    int best = 1;
    int64_t best_cost = -1;
    for (int s = 1; s <= most; s++) {
        const int short_kv = attn_short_kv_tiles(s, rows, num_tiles);
        const int64_t slots = (short_kv ? 4 : 2) * (int64_t)sms, tile = short_kv ? 32 : 64;
        const int64_t waves = (blocks * s + slots - 1) / slots;
        int64_t per = ((keys + s - 1) / s + tile - 1) / tile * tile;
        if (per > keys)
            per = keys;
        const int64_t cost = 16 * waves * per + ATTN_SPLIT_BLOCK_16THS * blocks * s + (s > 1 ? 16 * combine : 0);
        if (best_cost < 0 || cost < best_cost)
            best_cost = cost, best = s;
    }
    return best;
}

/* The key splits of the mma.sync kernel running alone over num_tiles query tiles (rows query rows)
 * of `heads` heads, max_key_len keys at most, on a GPU of `sms` SMs, by rules version `rules`: 1-2,
 * about two blocks an SM (at most that many from version 2 on); 3 and 4, attn_split_cost's, its
 * combine costing `combine` keys; at most one a 64-key tile and ATTN_MAX_SPLITS. The kernel's
 * k_attention_splits adds its workspace's limit. */
static inline int attn_split_rule_c(int rules, int num_tiles, int64_t rows, int heads, int sms, int max_key_len,
                                    int64_t combine)
{
    if (num_tiles <= 0 || heads <= 0 || sms <= 0)
        return 1;
    int64_t blocks = (int64_t)num_tiles * heads, slots = 2 * (int64_t)sms;
    int64_t useful = ((int64_t)max_key_len + 63) / 64;
    int64_t most = useful < ATTN_MAX_SPLITS ? useful : ATTN_MAX_SPLITS;
    if (rules >= 3)
        return most < 1 ? 1 : attn_split_cost(blocks, rows, num_tiles, sms, max_key_len, most, combine);
    int64_t want = rules >= 2 ? slots / blocks : (slots + blocks - 1) / blocks;
    int64_t splits = want < most ? want : most;
    return splits < 1 ? 1 : (int)splits;
}

/* attn_split_rule_c with the combine's constant ATTN_SPLIT_COMBINE_KEYS: a launch that packs no
 * heads (heads packed by rules 4: attn_split_rule_pv) */
static inline int attn_split_rule_v(int rules, int num_tiles, int64_t rows, int heads, int sms, int max_key_len)
{
    return attn_split_rule_c(rules, num_tiles, rows, heads, sms, max_key_len, ATTN_SPLIT_COMBINE_KEYS);
}

/* Whether a block of the mma.sync kernel can take P query heads together (P = 1, 2 or 4): P divides
 * the query heads a K/V head serves, and every segment fits in 64 / P rows (max_q_len, the longest,
 * known: > 0), so that each segment is one query tile of 64 / P rows a head. */
static inline int attn_pack_fits(int P, int H, int Hkv, int max_q_len)
{
    if (P == 1)
        return 1;
    return (P == 2 || P == 4) && Hkv > 0 && H % Hkv == 0 && (H / Hkv) % P == 0 && max_q_len > 0 &&
           max_q_len <= ATTN_TILE_M / P;
}

/* The fewest keys (the longest segment's) for which rules 4 packs heads: below them a launch is a
 * few microseconds of latency, which P times the rows a block only lengthens (1-8 segments over 128
 * keys ran 1.05-1.14x the unpacked launch's time on the H200). */
#define ATTN_PACK_MIN_KEYS 256

/* The query heads a block of the mma.sync kernel takes together by rules version `rules` (GQA
 * packing, from version 4): 4 where they fit (segments of at most 16 rows, a K/V head's group a
 * multiple of 4), else 2 (at most 32 rows), else 1, and 1 where the longest segment has fewer than
 * ATTN_PACK_MIN_KEYS keys or before version 4. Each K/V tile a block loads then serves P heads,
 * and the Reuse tile of 32 rows, which left two of the four warps idle or splitting keys, gives
 * every warp rows. */
static inline int attn_head_pack_v(int rules, int H, int Hkv, int max_q_len, int max_key_len)
{
    if (rules < 4 || max_key_len < ATTN_PACK_MIN_KEYS)
        return 1;
    if (attn_pack_fits(4, H, Hkv, max_q_len))
        return 4;
    return attn_pack_fits(2, H, Hkv, max_q_len) ? 2 : 1;
}

/* The key splits of a launch of P packed heads (rules 4; P = 1: attn_split_rule_v's) over
 * num_tiles tiles of T query rows in all, H query heads: attn_split_cost over its tiles x H / P
 * blocks of P times the rows, its combine costing 96 + T H / 16 keys (it merges every row and
 * head: where a rows x heads-proportional term leaves 6-8 segments of 32 rows over 480-1,024 keys
 * unsplit, they ran 0.76-0.79x the time of the constant's split, while 1-4 segments and those over
 * 4,000 keys still split). */
static inline int attn_split_rule_pv(int rules, int P, int num_tiles, int64_t T, int H, int sms, int max_key_len)
{
    if (P <= 1 || rules < 4)
        return attn_split_rule_v(rules, num_tiles, T, H, sms, max_key_len);
    return attn_split_rule_c(rules, num_tiles, T * P, H / P, sms, max_key_len, ATTN_SPLIT_COMBINE_KEYS + T * H / 16);
}

/* The key splits by this build's rules (the engine's launches) of P packed heads */
static inline int attn_split_rule(int P, int num_tiles, int64_t rows, int heads, int sms, int max_key_len)
{
    return attn_split_rule_pv(ATTN_RULES, P, num_tiles, rows, heads, sms, max_key_len);
}

/* Whether auto runs a step's long segments on the mma.sync kernel (with the rest, keys split by
 * attn_split_rule) instead of the wgmma kernel, which never splits keys: where they are a single
 * segment of at most 128 rows (long_tiles 1 or 2 of 64 rows; 0 is not known) over 2,048 keys or
 * more (the step's longest), its blocks, one a head, filling at most a quarter of the SMs. One
 * 128-row segment of 32 heads ran 1.13-1.41x slower on the wgmma kernel over 2,048 to 8,192 keys;
 * two such segments, or one of 256 rows, 0.6-0.9x. */
static inline int attn_long_on_mma(int long_tiles, int heads, int sms, int max_key_len)
{
    return long_tiles > 0 && long_tiles <= 2 && 4 * heads <= sms && max_key_len >= 2048;
}

#endif
