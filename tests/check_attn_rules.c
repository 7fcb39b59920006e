/*
 * check_attn_rules.c: the attention launch rules (sim/core/attn_rules.h) the engine launches by and
 * the calibrated cost model prices by: the tile list's order, the key split of each rules version
 * worked by hand and against the best forced counts the H200 sweeps measured, GQA head packing.
 */
#include <stdlib.h>

#include "attn_rules.h"
#include "test_util.h"

/* The tile list: long segments' tiles at multiples of 128 rows, then their others,
 * then the short segments', each group in segment order. */
START_TEST(attention_tile_order)
{
    const int32_t q[4] = {130, 32, 96, 70};
    int32_t tiles[2 * 16];
    int long_tiles, long_rows, wg_tiles;
    int n = attn_tiles(4, q, tiles, &long_tiles, &long_rows, &wg_tiles);
    const int32_t want[][2] = {{0, 0}, {0, 128}, {2, 0}, {0, 64}, {2, 64}, {1, 0}, {3, 0}, {3, 64}};
    ck_assert_int_eq(n, 8);
    for (int t = 0; t < n; t++) {
        ck_assert_int_eq(tiles[2 * t], want[t][0]);
        ck_assert_int_eq(tiles[2 * t + 1], want[t][1]);
    }
    ck_assert_int_eq(wg_tiles, 3);
    ck_assert_int_eq(long_tiles, 5);
    ck_assert_int_eq(long_rows, 130 + 96);
    ck_assert_int_eq(attn_tiles(0, q, tiles, &long_tiles, &long_rows, &wg_tiles), 0);
    ck_assert_int_eq(long_tiles + long_rows + wg_tiles, 0);
}
END_TEST

/* The key split, worked by hand: versions 1-2 about two blocks an SM
 * (1 rounds up, 2 down); version 3 the least modelled time (attn_split_cost), checked on
 * shapes whose best forced count the H200 sweeps measured; all at
 * most one a 64-key tile and at most 16. Segments of 32 rows (rows 32 a tile) unless said. */
START_TEST(attention_split_rule)
{
    for (int v = 1; v <= 4; v++) {
        ck_assert_int_eq(attn_split_rule_v(v, 16, 512, 32, 132, 512), 1); /* 512 blocks fill the GPU */
        ck_assert_int_eq(attn_split_rule_v(v, 1, 32, 1, 132, 100000), 16); /* capped */
        ck_assert_int_eq(attn_split_rule_v(v, 1, 32, 32, 132, 40), 1);      /* one tile of keys */
        ck_assert_int_eq(attn_split_rule_v(v, 0, 0, 32, 132, 512), 1);
        ck_assert_int_eq(attn_split_rule_v(v, 9, 288, 32, 132, 4096), 1); /* 288 blocks, few keys each */
    }
    for (int v = 1; v <= 2; v++)
        ck_assert_int_eq(attn_split_rule_v(v, 1, 32, 32, 132, 512), 8); /* 32 blocks want 9 or 8; 8 key tiles */
    for (int v = 2; v <= 4; v++)
        ck_assert_int_eq(attn_split_rule_v(v, 1, 32, 32, 132, 8032), 8); /* 1 x 32 over 8,000: best 8 */
    ck_assert_int_eq(attn_split_rule_v(1, 1, 32, 32, 132, 1532), 9); /* 32 blocks: ceil(264 / 32) */
    ck_assert_int_eq(attn_split_rule_v(2, 1, 32, 32, 132, 1532), 8); /* floor(264 / 32) */
    ck_assert_int_eq(attn_split_rule_v(1, 2, 64, 32, 132, 4096), 5); /* 64 blocks: ceil(4.1) */
    ck_assert_int_eq(attn_split_rule_v(2, 2, 64, 32, 132, 4096), 4);
    ck_assert_int_eq(attn_split_rule_v(1, 5, 160, 32, 132, 4096), 2); /* 160 blocks: two waves */
    ck_assert_int_eq(attn_split_rule_v(2, 5, 160, 32, 132, 4096), 1); /* one wave */
    ck_assert_int_eq(attn_split_rule_v(0, 1, 32, 32, 132, 1532), 9);  /* 0: unversioned, the first */
    /* version 3 against the sweeps' best forced counts: 5 x 32 over 6,000 and 4,000 cached (best 3;
     * version 2 took 1, 1.32x and 1.26x), 1 x 32 over 480 (best 4; 8, 1.10x), 6 x 32 over 3,000
     * (best 4), 8 x 32 over 600 (best 1: 256 blocks, short K/V tiles), 2 x 64 over 1,000 (best 4) */
    ck_assert_int_eq(attn_split_rule_v(3, 5, 160, 32, 132, 6032), 3);
    ck_assert_int_eq(attn_split_rule_v(3, 5, 160, 32, 132, 4032), 3);
    ck_assert_int_eq(attn_split_rule_v(3, 1, 32, 32, 132, 512), 4);
    ck_assert_int_eq(attn_split_rule_v(3, 6, 192, 32, 132, 3032), 4);
    ck_assert_int_eq(attn_split_rule_v(3, 8, 256, 32, 132, 632), 1);
    ck_assert_int_eq(attn_split_rule_v(3, 2, 128, 32, 132, 1064), 4);
    /* the engine launches by this build's version */
    ck_assert_int_eq(attn_split_rule(1, 2, 64, 32, 132, 4096),
                     attn_split_rule_v(ATTN_RULES, 2, 64, 32, 132, 4096));
    ck_assert_int_eq(attn_split_rule(2, 8, 256, 32, 132, 512),
                     attn_split_rule_pv(ATTN_RULES, 2, 8, 256, 32, 132, 512));
    ck_assert_int_eq(ATTN_RULES, 4);
    /* version 4 splits an unpacked launch (P = 1) as version 3 */
    ck_assert_int_eq(attn_split_rule_pv(4, 1, 6, 192, 32, 132, 3032), 4);
    ck_assert_int_eq(attn_split_rule_pv(3, 2, 6, 192, 32, 132, 3032), 4);
    /* one long segment of at most 128 rows (two tiles) over 2,048 keys or more, 32 heads on 132
     * SMs, goes to the mma.sync kernel; not with more tiles, fewer keys, more heads or unknown */
    ck_assert(attn_long_on_mma(2, 32, 132, 2048));
    ck_assert(!attn_long_on_mma(2, 32, 132, 2047));
    ck_assert(!attn_long_on_mma(3, 32, 132, 4096));
    ck_assert(!attn_long_on_mma(2, 34, 132, 4096));
    ck_assert(!attn_long_on_mma(0, 32, 132, 4096));
}
END_TEST

/* GQA head packing (rules 4), worked by hand for 32 query heads over 8 K/V heads (SDAR-8B) on 132
 * SMs: four heads a block for segments of at most 16 rows, two for at most 32, none for longer
 * ones, with fewer than 256 keys, unknown lengths, groups P does not divide, MHA or an earlier
 * version; and the packed launch's key splits, its combine costing 96 + T H / 16 keys. */
START_TEST(attention_head_packing)
{
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 32, 512), 2);
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 16, 512), 4);
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 1, 256), 4);
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 33, 512), 1);
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 32, 255), 1);
    ck_assert_int_eq(attn_head_pack_v(4, 32, 8, 0, 512), 1);
    ck_assert_int_eq(attn_head_pack_v(3, 32, 8, 32, 512), 1);
    ck_assert_int_eq(attn_head_pack_v(4, 28, 4, 16, 512), 1); /* Dream-7B: 7 heads a K/V head */
    ck_assert_int_eq(attn_head_pack_v(4, 12, 2, 16, 512), 2); /* 6 a K/V head: 2 divides, 4 not */
    ck_assert_int_eq(attn_head_pack_v(4, 32, 32, 16, 512), 1); /* MHA */
    ck_assert(attn_pack_fits(1, 32, 32, 0));
    ck_assert(!attn_pack_fits(3, 32, 8, 16));
    ck_assert(!attn_pack_fits(2, 32, 0, 16));
    /* 8 x 32 over 480 cached, packed: 128 blocks; one split costs 16 x 512 + 9 x 128 = 9,344
     * sixteenths, two 16 x 256 + 9 x 256 + 16 x (96 + 256 x 32 / 16) = 16,128: unsplit */
    ck_assert_int_eq(attn_split_rule_pv(4, 2, 8, 256, 32, 132, 512), 1);
    /* over 4,064 cached: one split 16 x 4,096 + 1,152 = 66,688; two 16 x 2,048 + 2,304 + 9,728 =
     * 44,800; three (2 waves of 1,408 keys) 58,240; four (2 waves of 1,024) 47,104 */
    ck_assert_int_eq(attn_split_rule_pv(4, 2, 8, 256, 32, 132, 4096), 2);
    /* 1 x 32 over 1,500 cached, packed: 16 blocks, the combine 160 keys; 12 splits of 128 keys
     * (192 blocks, one wave) cost 2,048 + 1,728 + 2,560 = 6,336, eight of 192 keys 6,784 */
    ck_assert_int_eq(attn_split_rule_pv(4, 2, 1, 32, 32, 132, 1532), 12);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_rules");
    ck_case(s, attention_tile_order, 0);
    ck_case(s, attention_split_rule, 0);
    ck_case(s, attention_head_packing, 0);
    return run_suite("attn_rules", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
