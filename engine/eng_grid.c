/* eng_grid.c: the steps `tessera engine profile` times (eng_grid.h). */
#include "eng_grid.h"

#include <stdlib.h>
#include <string.h>

#include "cost_op.h"
#include "step_desc.h"
#include "util.h"

int grid_part_parse(const char *name)
{
    static const char *const names[] = {[GRID_ALL] = "all",       [GRID_BASE] = "base", [GRID_LONG] = "long",
                                        [GRID_SELECT] = "select", [GRID_FC] = "fc",     [GRID_LADDER] = "ladder",
                                        [GRID_BATCH] = "batch"};
    for (size_t i = 0; name && i < TS_ARRAY_LEN(names); i++)
        if (strcmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}




size_t profile_grid_rows_at_most(struct step_shape *g, size_t n, int64_t max_rows)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (step_shape_rows(&g[i]) <= max_rows)
            g[kept++] = g[i];
    return kept;
}


/* Adds a step; the grid writes logit_rows 1 for a step with logits, which are every row's (a
 * dLLM-Cache step's every hidden row). */
static void add(struct step_shape **g, size_t *cap, size_t *n, struct step_shape s)
{
    if (s.logit_rows)
        s.logit_rows = s.fc_rows > 0 ? s.fc_rows : s.q;
    ts_grow((void **)g, cap, *n + 1, sizeof **g);
    (*g)[(*n)++] = s;
}

static void base_grid(struct step_shape **g, size_t *cap, size_t *n)
{
    static const int q_grid[] = {1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    static const int kv_grid[] = {0, 128, 480, 1024, 2048, 4096};
    /* many short sequences, a few (Reuse blocks of 8, 32 or 128 tokens only: the split-KV regime of
     * the attention kernel changes with the count), and one: the per-sequence cost */
    static const int seg_grid[] = {16, 8, 4, 2, 1};
    for (size_t qi = 0; qi < TS_ARRAY_LEN(q_grid); qi++)
        for (size_t ki = 0; ki < TS_ARRAY_LEN(kv_grid); ki++)
            for (size_t si = 0; si < TS_ARRAY_LEN(seg_grid); si++)
                for (int with_logits = 0; with_logits < 2; with_logits++) {
                    int q = q_grid[qi], kv = kv_grid[ki];
                    if (kv > 0 && q > 512)
                        continue; /* long Refresh steps have no cache */
                    if (seg_grid[si] == 1 && (q > 512 || with_logits))
                        continue; /* single sequences: short steps, without logits, are enough */
                    if (seg_grid[si] > 1 && seg_grid[si] < 16 && (!with_logits || (q != 8 && q != 32 && q != 128)))
                        continue; /* a few sequences: Reuse-sized blocks with their logits */
                    add(g, cap, n, (struct step_shape){TS_MIN(seg_grid[si], 16384 / q), q, kv, with_logits, 0, 0, 0, 0, 0, 0});
                }
    /* uneven Reuse steps: blocks of 32 over short caches beside one over a long cache, the
     * attention's critical path (the longest segment's blocks) apart from its total work, which
     * move together in the even steps (a serving workload's Reuse steps are rarely even) */
    static const int uneven_segs[] = {3, 6}, short_kv[] = {128, 480, 1024}, long_kv[] = {2048, 4096};
    for (size_t si = 0; si < TS_ARRAY_LEN(uneven_segs); si++)
        for (size_t ki = 0; ki < TS_ARRAY_LEN(short_kv); ki++)
            for (size_t li = 0; li < TS_ARRAY_LEN(long_kv); li++)
                add(g, cap, n, (struct step_shape){uneven_segs[si], 32, short_kv[ki], 1, long_kv[li], 0, 0, 0, 0, 0});
}

/* Reuse steps of every count of 32-token blocks from 3 to 15 that the base grid lacks (96 to 480
 * tokens a step, each block over 480 cached keys, with its logits): a GEMM's time steps up where its
 * rows spill into one more tile (on an H100 the fused gate/up GEMM takes 2.6 ms over 32 layers at
 * 128 rows and 3.6 ms at 192), which interpolating between the base grid's 128 and 256 rows misses,
 * and a serving workload's block steps take every count. */
static void ladder_grid(struct step_shape **g, size_t *cap, size_t *n)
{
    for (int segs = 3; segs < 16; segs++)
        if (segs != 4 && segs != 8)
            add(g, cap, n, (struct step_shape){segs, 32, 480, 1, 0, 0, 0, 0, 0, 0});
    /* and one sequence of every multiple of 64 rows from 576 to 2,048 the base grid lacks, without a
     * cache or logits: the rows a Refresh beside Reuse blocks packs */
    for (int q = 576; q <= 2048; q += 64)
        if (q != 1024 && q != 2048)
            add(g, cap, n, (struct step_shape){1, q, 0, 0, 0, 0, 0, 0, 0, 0});
    /* mixed steps: a Refresh of 256, 512 or 1,024 rows (no cache) beside 1, 3 or 7 blocks of 32 over
     * 480 cached keys, without logits: continuous batching's steps, whose attention runs the long
     * sequence and the blocks on different kernels (on an H100 the even steps' fit put them 20-30%
     * short of a replay) */
    static const int refresh_q[] = {256, 512, 1024}, blocks[] = {1, 3, 7};
    for (size_t i = 0; i < TS_ARRAY_LEN(refresh_q); i++)
        for (size_t j = 0; j < TS_ARRAY_LEN(blocks); j++)
            add(g, cap, n, (struct step_shape){blocks[j] + 1, 32, 480, 0, 0, 0, 0, 0, 0, .q_long = refresh_q[i]});
}

/* Reuse steps of more sequences than the base grid's 16: 24, 32, 48 and 64 blocks of 8 or 32 rows
 * over 128, 480 or 1,024 cached keys with their logits, and over 480 without (so that the part,
 * profiled alone, measures every token op at 3 token counts or more and merges into a calibration).
 * A continuous batch runs that many, and FOCUS's evicting steps carry a few kept rows of each;
 * without them the attention model extrapolates in the count of sequences (on an H100, SDAR-8B's
 * attention over 24 and 32 sequences of 8 to 32 rows came out 8-13% short). */
static void batch_grid(struct step_shape **g, size_t *cap, size_t *n)
{
    static const int seg_grid[] = {24, 32, 48, 64}, q_grid[] = {8, 32}, kv_grid[] = {128, 480, 1024};
    for (size_t si = 0; si < TS_ARRAY_LEN(seg_grid); si++)
        for (size_t qi = 0; qi < TS_ARRAY_LEN(q_grid); qi++) {
            for (size_t ki = 0; ki < TS_ARRAY_LEN(kv_grid); ki++)
                add(g, cap, n, (struct step_shape){seg_grid[si], q_grid[qi], kv_grid[ki], 1, 0, 0, 0, 0, 0, 0});
            add(g, cap, n, (struct step_shape){seg_grid[si], q_grid[qi], 480, 0, 0, 0, 0, 0, 0, 0});
        }
}

/* The keys a step's caches and blocks hold in the pool, with a page's rounding a sequence */
static int64_t pool_tokens(const struct step_shape *p)
{
    int64_t t = 0;
    for (int s = 0; s < p->segs; s++)
        t += step_shape_kv(p, s) + step_shape_q(p, s) + 64;
    return t;
}

/* Adds long step p where its longest sequence fits the model's context and its caches the pool
 * (pool < 0: no bound); counts it in *skipped where only the pool is short. */
static void add_long(const struct model_cfg *m, int64_t pool, struct step_shape p, struct step_shape **g,
                     size_t *cap, size_t *n, int *skipped)
{
    if (p.q + step_shape_kv(&p, p.segs - 1) > m->max_pos) /* the last sequence's cache is the longest */
        return;
    if (pool >= 0 && pool_tokens(&p) > pool)
        ++*skipped;
    else
        add(g, cap, n, p);
}

/* Reuse blocks over caches of 8,192 and 16,384 keys: many sequences and a few with their logits,
 * one without (as the base grid has them), and uneven steps with one long cache beside short ones */
static void long_grid(const struct model_cfg *m, int64_t pool, struct step_shape **g, size_t *cap, size_t *n,
                      int *skipped)
{
    static const int kv_grid[] = {8192, 16384}, q_grid[] = {8, 32, 128}, seg_grid[] = {16, 4, 1};
    static const int uneven_segs[] = {3, 6}, short_kv[] = {480, 2048};
    for (size_t ki = 0; ki < TS_ARRAY_LEN(kv_grid); ki++) {
        for (size_t si = 0; si < TS_ARRAY_LEN(seg_grid); si++)
            for (size_t qi = 0; qi < TS_ARRAY_LEN(q_grid); qi++)
                add_long(m, pool, (struct step_shape){seg_grid[si], q_grid[qi], kv_grid[ki], seg_grid[si] > 1, 0, 0, 0, 0, 0, 0}, g,
                         cap, n, skipped);
        for (size_t si = 0; si < TS_ARRAY_LEN(uneven_segs); si++)
            for (size_t ki2 = 0; ki2 < TS_ARRAY_LEN(short_kv); ki2++)
                add_long(m, pool, (struct step_shape){uneven_segs[si], 32, short_kv[ki2], 1, kv_grid[ki], 0, 0, 0, 0, 0}, g, cap, n,
                         skipped);
    }
}

/* Selecting Refresh steps: 1, 4 and 16 sequences of 256 to 4,096 tokens (up to 16,384 in all and
 * the model's context), without logits (the base grid measures the LM head), keeping half of each
 * one's candidates, for either kind of kept set. */
static void select_grid(const struct model_cfg *m, struct step_shape **g, size_t *cap, size_t *n)
{
    static const int q_grid[] = {256, 512, 1024, 2048, 4096}, seg_grid[] = {1, 4, 16};
    for (int heads = 0; heads < 2; heads++)
        for (size_t qi = 0; qi < TS_ARRAY_LEN(q_grid); qi++)
            for (size_t si = 0; si < TS_ARRAY_LEN(seg_grid); si++) {
                const int q = q_grid[qi], segs = seg_grid[si];
                if ((int64_t)q * segs > 16384 || q > m->max_pos)
                    continue;
                add(g, cap, n, (struct step_shape){segs, q, 0, 0, 0, (q - PROFILE_SCORE_ROWS) / 2, heads, 0, 0, 0});
            }
}

/* dLLM-Cache's steps: 1, 4 and 16 sequences of a prompt of 128 or 512 tokens and a response of 64,
 * 256 or 1,024 (up to 16,384 rows in all and the model's context), without logits: a partial
 * update of a quarter of the response (and of half, beside the short prompt), the response
 * refreshed over the cached prompt, and (beside the long prompt) the whole sequence refreshed; and
 * the quarter's update again with logits over every row, as dLLM-Cache's steps take them: an LM head
 * after layers that computed few rows runs at another clock than after a step that computed them all
 * (the calibration's LM head over carried rows). */
static void fc_grid(const struct model_cfg *m, struct step_shape **g, size_t *cap, size_t *n)
{
    static const int seg_grid[] = {1, 4, 16}, resp_grid[] = {64, 256, 1024}, prompt_grid[] = {128, 512};
    for (size_t si = 0; si < TS_ARRAY_LEN(seg_grid); si++)
        for (size_t gi = 0; gi < TS_ARRAY_LEN(resp_grid); gi++)
            for (size_t pi = 0; pi < TS_ARRAY_LEN(prompt_grid); pi++) {
                const int segs = seg_grid[si], G = resp_grid[gi], P = prompt_grid[pi], rows = P + G;
                if ((int64_t)segs * rows > 16384 || rows > m->max_pos)
                    continue;
                add(g, cap, n, (struct step_shape){segs, G / 4, rows - G / 4, .fc_rows = rows, .probe = G});
                add(g, cap, n, (struct step_shape){segs, G / 4, rows - G / 4, .logit_rows = 1, .fc_rows = rows, .probe = G});
                add(g, cap, n, (struct step_shape){segs, G, P, .fc_rows = rows});
                if (P == prompt_grid[0])
                    add(g, cap, n, (struct step_shape){segs, G / 2, rows - G / 2, .fc_rows = rows, .probe = G});
                else
                    add(g, cap, n, (struct step_shape){segs, rows, 0, .fc_rows = rows});
            }
}


struct step_shape *profile_grid(const struct model_cfg *m, enum grid_part part, int64_t kv_pool_tokens,
                               size_t *n, int *skipped)
{
    struct step_shape *g = NULL;
    size_t cap = 0;
    int skip = 0;
    *n = 0;
    if (part == GRID_ALL || part == GRID_BASE)
        base_grid(&g, &cap, n);
    if (part == GRID_ALL || part == GRID_LADDER)
        ladder_grid(&g, &cap, n);
    if (part == GRID_ALL || part == GRID_BATCH)
        batch_grid(&g, &cap, n);
    if (part == GRID_ALL || part == GRID_LONG)
        long_grid(m, kv_pool_tokens, &g, &cap, n, &skip);
    if (part == GRID_ALL || part == GRID_SELECT)
        select_grid(m, &g, &cap, n);
    if ((part == GRID_ALL && m->num_experts == 0) || part == GRID_FC) /* (no feature cache on a MoE model) */
        fc_grid(m, &g, &cap, n);
    if (skipped)
        *skipped = skip;
    return g;
}
