/*
 * check_eng_grid.c: the steps `tessera engine profile` times (engine/eng_grid.c): the base grid as
 * every shipped calibration was profiled over it, the long-cache part bounded by the model's context
 * and the KV pool, and the part names.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_op.h"
#include "eng_grid.h"
#include "step_desc.h"
#include "model.h"
#include "test_util.h"

/* sums over a grid, to compare it with the one the shipped calibrations were profiled over */
struct sums {
    size_t n;
    long tokens, kv, uneven;
};

static struct sums sum_grid(const struct step_shape *g, size_t n)
{
    struct sums s = {n, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        s.tokens += (long)g[i].segs * g[i].q;
        s.kv += g[i].kv;
        s.uneven += g[i].kv_long > 0;
    }
    return s;
}

START_TEST(base_grid_is_the_shipped_one)
{
    /* the grid the shipped H200 calibrations were profiled over:
     * 202 steps, 377,878 query tokens and 239,808 cached keys summed over them, 12 uneven */
    const struct model_cfg *models[] = {model_find("llada-8b"), model_find("sdar-8b")};
    for (size_t k = 0; k < 2; k++) {
        size_t n = 0;
        struct step_shape *g = profile_grid(models[k], GRID_BASE, -1, &n, NULL);
        struct sums s = sum_grid(g, n);
        ck_assert_uint_eq(s.n, 202);
        ck_assert_int_eq(s.tokens, 377878);
        ck_assert_int_eq(s.kv, 239808);
        ck_assert_int_eq(s.uneven, 12);
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_le((long)g[i].segs * g[i].q, 16384); /* one step of the engine's tokens */
            ck_assert_int_le(g[i].kv, 4096);
            ck_assert_int_le(g[i].kv_long, 4096);
        }
        free(g);
    }
}
END_TEST

START_TEST(long_part_follows_the_context)
{
    size_t n = 0;
    int skipped = -1;
    /* LLaDA-8B's context is 4,096 tokens: no long step, so all is the base grid, the ladder, the
     * batch, select and fc parts */
    struct step_shape *g = profile_grid(model_find("llada-8b"), GRID_LONG, -1, &n, &skipped);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(skipped, 0);
    free(g);
    g = profile_grid(model_find("llada-8b"), GRID_ALL, -1, &n, NULL);
    ck_assert_uint_eq(n, 202 + 42 + 32 + 26 + 64);
    free(g);
    /* SDAR-8B's 32,768: 9 even and 4 uneven steps over each of 8,192 and 16,384 keys */
    const struct model_cfg *sdar = model_find("sdar-8b");
    g = profile_grid(sdar, GRID_LONG, -1, &n, &skipped);
    ck_assert_uint_eq(n, 26);
    ck_assert_int_eq(skipped, 0);
    int over[2] = {0, 0}, uneven = 0;
    for (size_t i = 0; i < n; i++) {
        int longest = g[i].kv_long > 0 ? g[i].kv_long : g[i].kv;
        ck_assert(longest == 8192 || longest == 16384);
        over[longest == 16384]++;
        ck_assert_int_le(g[i].q + longest, sdar->max_pos);
        ck_assert(g[i].q == 8 || g[i].q == 32 || g[i].q == 128);
        /* Reuse blocks with their logits, single sequences without (as in the base grid) */
        ck_assert_int_eq(g[i].logit_rows, g[i].segs > 1 ? g[i].q : 0); /* every row's */
        if (g[i].kv_long > 0) {
            uneven++;
            ck_assert_int_eq(g[i].q, 32);
            ck_assert(g[i].segs == 3 || g[i].segs == 6);
            ck_assert_int_lt(g[i].kv, g[i].kv_long);
            ck_assert_int_eq(step_shape_kv(&g[i], g[i].segs - 1), g[i].kv_long);
            ck_assert_int_eq(step_shape_kv(&g[i], 0), g[i].kv);
        }
    }
    ck_assert_int_eq(over[0], 13);
    ck_assert_int_eq(over[1], 13);
    ck_assert_int_eq(uneven, 8);
    free(g);
    g = profile_grid(sdar, GRID_ALL, -1, &n, NULL);
    ck_assert_uint_eq(n, 202 + 42 + 32 + 26 + 26 + 64);
    free(g);
    /* a context of 16,384 keeps only the 8,192-key caches */
    struct model_cfg short_ctx = *sdar;
    short_ctx.max_pos = 16384;
    g = profile_grid(&short_ctx, GRID_LONG, -1, &n, NULL);
    ck_assert_uint_eq(n, 13);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(g[i].kv_long > 0 ? g[i].kv_long : g[i].kv, 8192);
    free(g);
}
END_TEST

/* Selecting Refresh steps: 13 shapes of up to 16,384 tokens for each kind of kept set, keeping half
 * of the rows before each segment's 32 scoring rows; none past the model's context. */
START_TEST(select_part)
{
    size_t n = 0;
    struct step_shape *g = profile_grid(model_find("llada-8b"), GRID_SELECT, -1, &n, NULL);
    ck_assert_uint_eq(n, 26);
    int heads = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_le((long)g[i].segs * g[i].q, 16384);
        ck_assert_int_eq(g[i].kv, 0);
        ck_assert_int_eq(g[i].keep, (g[i].q - PROFILE_SCORE_ROWS) / 2);
        heads += g[i].sel_heads;
    }
    ck_assert_int_eq(heads, 13);
    free(g);
    struct model_cfg short_ctx = *model_find("llada-8b");
    short_ctx.max_pos = 1024;
    g = profile_grid(&short_ctx, GRID_SELECT, -1, &n, NULL);
    ck_assert_uint_eq(n, 18);
    free(g);
    ck_assert_int_eq(grid_part_parse("select"), GRID_SELECT);
}
END_TEST

/* dLLM-Cache's steps: 16 shapes of prompt and response (up to 16,384 rows, the model's context),
 * each a partial update of a quarter of the response (twice: without logits and with them over every
 * row), a response refresh, and a partial update of half (short prompt) or a whole refresh (long
 * prompt); as steps, the shapes the policy emits. */
START_TEST(fc_part)
{
    size_t n = 0;
    struct step_shape *g = profile_grid(model_find("llada-8b"), GRID_FC, -1, &n, NULL);
    ck_assert_uint_eq(n, 64);
    int partial = 0, response = 0, whole = 0, with_logits = 0;
    struct step_desc sd;
    step_desc_init(&sd);
    for (size_t i = 0; i < n; i++) {
        const struct step_shape *p = &g[i];
        ck_assert_int_le((long)p->segs * p->fc_rows, 16384);
        ck_assert_int_eq(p->q + p->kv, p->fc_rows);
        ck_assert(p->keep == 0 && p->kv_long == 0);
        ck_assert(p->logit_rows == 0 || (p->probe > 0 && p->q == p->probe / 4)); /* the quarter's twin */
        with_logits += p->logit_rows > 0;
        partial += p->probe > 0, response += p->probe == 0 && p->q < p->fc_rows, whole += p->q == p->fc_rows;
        ck_assert(p->probe == 0 || (p->q == p->probe / 4 || p->q == p->probe / 2));
        step_shape_desc(p, (int32_t)10, &sd);
        ck_assert_int_eq(sd.num_segs, p->segs);
        ck_assert(sd.cache_outputs && sd.front_layers == 1);
        ck_assert_int_eq(sd.tot.rows, (int64_t)p->segs * p->fc_rows);
        ck_assert_int_eq(sd.tot.q_tokens, (int64_t)p->segs * p->q);
        ck_assert_int_eq(sd.tot.probe_tokens, (int64_t)p->segs * p->probe);
        ck_assert_int_eq(sd.tot.logit_rows, p->logit_rows ? (int64_t)p->segs * p->fc_rows : 0);
        ck_assert_int_eq(p->logit_rows, p->logit_rows ? p->fc_rows : 0);
        ck_assert_int_eq(sd.segs[0].req_id, 10);
        ck_assert(segment_check(&sd.segs[0]) == NULL);
    }
    ck_assert_int_eq(partial, 40);
    ck_assert_int_eq(with_logits, 16);
    ck_assert_int_eq(response, 16);
    ck_assert_int_eq(whole, 8);
    step_desc_free(&sd);
    free(g);
    struct model_cfg short_ctx = *model_find("llada-8b");
    short_ctx.max_pos = 600; /* the 512-token prompt with a 64-token response only, and 128 + 256 */
    g = profile_grid(&short_ctx, GRID_FC, -1, &n, NULL);
    ck_assert_uint_eq(n, 3 * 3 * 4);
    free(g);
    ck_assert_int_eq(grid_part_parse("fc"), GRID_FC);
}
END_TEST

START_TEST(long_steps_fit_the_pool)
{
    const struct model_cfg *sdar = model_find("sdar-8b");
    size_t n = 0, all = 0;
    int skipped = 0;
    struct step_shape *g = profile_grid(sdar, GRID_LONG, -1, &all, NULL);
    free(g);
    /* a pool of 100,000 tokens holds 4 x 16,384 but not 16 x 8,192 or 16 x 16,384 */
    g = profile_grid(sdar, GRID_LONG, 100000, &n, &skipped);
    ck_assert_int_eq(skipped, 6);
    ck_assert_uint_eq(n + (size_t)skipped, all);
    for (size_t i = 0; i < n; i++) {
        long need = 0;
        for (int s = 0; s < g[i].segs; s++)
            need += step_shape_kv(&g[i], s) + g[i].q;
        ck_assert_int_le(need, 100000);
        ck_assert_int_lt(g[i].segs, 16);
    }
    free(g);
    /* the base grid is never cut: the profile's engine holds it */
    g = profile_grid(sdar, GRID_ALL, 100000, &n, &skipped);
    ck_assert_uint_eq(n, 202 + 42 + 32 + 26 + 64 + all - 6);
    free(g);
}
END_TEST

/* The ladder: every count of 32-token blocks from 3 to 15 the base grid lacks, so that with it every
 * count from 1 to 16 is profiled, each with its logits over 480 cached keys; and single sequences of
 * every multiple of 64 rows from 576 to 2,048 but 1,024 and 2,048, which the base grid's 16 x 64 and
 * 16 x 128 hold; and 9 mixed steps, a Refresh without a cache beside blocks of 32 */
START_TEST(ladder_fills_the_block_counts)
{
    size_t n = 0, nb = 0;
    struct step_shape *g = profile_grid(model_find("llada-8b"), GRID_LADDER, -1, &n, NULL);
    struct step_shape *b = profile_grid(model_find("llada-8b"), GRID_BASE, -1, &nb, NULL);
    ck_assert_uint_eq(n, 42);
    bool base[17] = {false}, seen[17] = {false}, rows[33] = {false};
    for (size_t i = 0; i < nb; i++) {
        if (b[i].q == 32 && b[i].kv_long == 0 && b[i].segs <= 16)
            base[b[i].segs] = seen[b[i].segs] = true;
        if (b[i].segs * b[i].q % 64 == 0 && b[i].segs * b[i].q <= 2048)
            rows[b[i].segs * b[i].q / 64] = true;
    }
    int mixed = 0;
    for (size_t i = 0; i < n; i++) {
        if (g[i].q_long > 0) { /* a Refresh without a cache beside blocks of 32 over 480 keys */
            ck_assert(g[i].segs >= 2 && g[i].q == 32 && g[i].kv == 480 && g[i].kv_long == 0 && !g[i].logit_rows);
            ck_assert_int_eq(step_shape_q(&g[i], g[i].segs - 1), g[i].q_long);
            ck_assert_int_eq(step_shape_kv(&g[i], g[i].segs - 1), 0);
            ck_assert_int_eq(step_shape_kv(&g[i], 0), 480);
            mixed++;
            continue;
        }
        if (g[i].segs == 1) {
            ck_assert(g[i].q % 64 == 0 && g[i].q > 512 && g[i].q <= 2048 && g[i].kv == 0 && !g[i].logit_rows);
            ck_assert_msg(!rows[g[i].q / 64], "the ladder repeats the base grid's %d rows", g[i].q);
            rows[g[i].q / 64] = true;
            continue;
        }
        ck_assert(g[i].q == 32 && g[i].kv == 480 && g[i].logit_rows == g[i].q && g[i].kv_long == 0);
        ck_assert_msg(!base[g[i].segs], "the ladder repeats the base grid's %d blocks", g[i].segs);
        seen[g[i].segs] = true;
    }
    for (int s = 1; s <= 16; s++)
        ck_assert_msg(seen[s], "%d blocks of 32 tokens: not profiled", s);
    for (int k = 9; k <= 32; k++)
        ck_assert_msg(rows[k], "%d rows: not profiled", 64 * k);
    ck_assert_int_eq(mixed, 9);
    free(g), free(b);
}
END_TEST

/* --max-rows: the steps of at most N rows, in the grid's order, none left out (a mixed step counts
 * its long sequence's rows) */
START_TEST(small_steps_of_a_grid)
{
    size_t n = 0;
    struct step_shape *g = profile_grid(model_find("sdar-8b"), GRID_ALL, -1, &n, NULL);
    struct step_shape *copy = xmalloc(n * sizeof *copy);
    memcpy(copy, g, n * sizeof *copy);
    const int64_t limits[] = {1, 32, 64, 512, 16384};
    for (size_t l = 0; l < TS_ARRAY_LEN(limits); l++) {
        memcpy(g, copy, n * sizeof *g);
        const size_t kept = profile_grid_rows_at_most(g, n, limits[l]);
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t rows = 0;
            for (int s = 0; s < copy[i].segs; s++)
                rows += s == copy[i].segs - 1 && copy[i].q_long > 0 ? copy[i].q_long : copy[i].q;
            ck_assert_int_eq(step_shape_rows(&copy[i]), rows);
            if (rows > limits[l])
                continue;
            ck_assert_uint_lt(j, kept);
            ck_assert_mem_eq(&g[j], &copy[i], sizeof *g);
            j++;
        }
        ck_assert_uint_eq(j, kept);
        if (limits[l] == 16384)
            ck_assert_uint_eq(kept, n);
    }
    memcpy(g, copy, n * sizeof *g);
    ck_assert_uint_gt(profile_grid_rows_at_most(g, n, 64), 20); /* the small steps: many shapes */
    free(g), free(copy);
}
END_TEST

/* The batch part: Reuse blocks of 8 or 32 rows over 128, 480 or 1,024 cached keys with their logits,
 * and over 480 without, for 24 to 64 sequences, counts the base grid (at most 16 sequences) lacks */
START_TEST(batch_part_has_more_sequences)
{
    size_t n = 0, nb = 0;
    struct step_shape *g = profile_grid(model_find("sdar-8b"), GRID_BATCH, -1, &n, NULL);
    struct step_shape *b = profile_grid(model_find("sdar-8b"), GRID_BASE, -1, &nb, NULL);
    ck_assert_uint_eq(n, 32);
    int segs_seen[65] = {0}, without = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert(g[i].segs == 24 || g[i].segs == 32 || g[i].segs == 48 || g[i].segs == 64);
        ck_assert(g[i].q == 8 || g[i].q == 32);
        ck_assert(g[i].kv == 128 || g[i].kv == 480 || g[i].kv == 1024);
        ck_assert(g[i].kv_long == 0 && g[i].q_long == 0 && g[i].keep == 0 && g[i].fc_rows == 0);
        if (!g[i].logit_rows) { /* the token ops at 8 token counts without the final norm's rows */
            ck_assert_int_eq(g[i].kv, 480);
            without++;
        }
        segs_seen[g[i].segs]++;
        for (size_t j = 0; j < i; j++) /* each shape once */
            ck_assert(g[j].segs != g[i].segs || g[j].q != g[i].q || g[j].kv != g[i].kv || g[j].logit_rows != g[i].logit_rows);
    }
    ck_assert_int_eq(without, 8);
    ck_assert(segs_seen[24] == 8 && segs_seen[32] == 8 && segs_seen[48] == 8 && segs_seen[64] == 8);
    for (size_t i = 0; i < nb; i++)
        ck_assert_int_le(b[i].segs, 16);
    free(g), free(b);
}
END_TEST

START_TEST(part_names)
{
    ck_assert_int_eq(grid_part_parse("all"), GRID_ALL);
    ck_assert_int_eq(grid_part_parse("base"), GRID_BASE);
    ck_assert_int_eq(grid_part_parse("long"), GRID_LONG);
    ck_assert_int_eq(grid_part_parse("ladder"), GRID_LADDER);
    ck_assert_int_eq(grid_part_parse("batch"), GRID_BATCH);
    ck_assert_int_eq(grid_part_parse("Long"), -1);
    ck_assert_int_eq(grid_part_parse(""), -1);
    ck_assert_int_eq(grid_part_parse(NULL), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_grid");
    ck_case(s, base_grid_is_the_shipped_one, 0);
    ck_case(s, long_part_follows_the_context, 0);
    ck_case(s, select_part, 0);
    ck_case(s, fc_part, 0);
    ck_case(s, long_steps_fit_the_pool, 0);
    ck_case(s, ladder_fills_the_block_counts, 0);
    ck_case(s, small_steps_of_a_grid, 0);
    ck_case(s, batch_part_has_more_sequences, 0);
    ck_case(s, part_names, 0);
    return run_suite("eng_grid", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
