/* check_eng_plan.c: the engine's KV page table and step planning (host code, no GPU). */
#include <stdlib.h>
#include <string.h>

#include "eng_plan.h"
#include "kernels.h"
#include "test_util.h"

static void seg(struct step_desc *sd, int req, int q, int kv, int logits)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

START_TEST(pages_reserve_release)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 10);
    struct ts_err err;
    ck_assert_int_eq(eng_kv_reserve(&kv, 3, 33, &err), 0); /* 3 pages */
    ck_assert_int_eq(kv.num_free, 7);
    ck_assert_int_eq(eng_kv_reserve(&kv, 3, 40, &err), 0); /* still 3 */
    ck_assert_int_eq(kv.num_free, 7);
    ck_assert_int_eq(eng_kv_reserve(&kv, 0, 16 * 7, &err), 0);
    ck_assert_int_eq(kv.num_free, 0);
    ck_assert_int_ne(eng_kv_reserve(&kv, 1, 1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "KV pool exhausted"));
    /* slots of different requests never collide */
    char used[160] = {0};
    for (int k = 0; k < 48; k++) {
        int s = eng_kv_slot(&kv, 3, k);
        ck_assert(s >= 0 && s < 160 && !used[s]);
        used[s] = 1;
    }
    for (int k = 0; k < 112; k++) {
        int s = eng_kv_slot(&kv, 0, k);
        ck_assert(!used[s]);
        used[s] = 1;
    }
    eng_kv_truncate(&kv, 3, 17); /* 2 pages hold 17 keys: the third goes back */
    ck_assert_int_eq(kv.num_free, 1);
    ck_assert_int_eq(kv.reqs[3].num_pages, 2);
    eng_kv_truncate(&kv, 3, 40); /* more than it holds: nothing changes */
    ck_assert_int_eq(kv.reqs[3].num_pages, 2);
    eng_kv_truncate(&kv, 77, 0); /* unknown: no-op */
    eng_kv_release(&kv, 3);
    ck_assert_int_eq(kv.num_free, 3);
    eng_kv_release(&kv, 99); /* unknown: no-op */
    eng_kv_free(&kv);
    eng_kv_free(NULL);
}
END_TEST

/* Every page exactly once among the free ones, the requests' and those set aside (an independent
 * count of where each page is). */
static void each_page_once(const struct eng_kv *kv)
{
    int32_t *seen = xcalloc((size_t)kv->num_pages, sizeof *seen);
    for (int32_t i = 0; i < kv->num_free; i++)
        seen[kv->free_pages[i]]++;
    for (int32_t r = 0; r < kv->num_reqs; r++)
        for (int32_t i = 0; i < kv->reqs[r].num_pages; i++)
            seen[kv->reqs[r].pages[i]]++;
    for (int32_t h = 0; h < kv->num_held; h++)
        for (int32_t i = 0; i < kv->held[h].r.num_pages; i++)
            seen[kv->held[h].r.pages[i]]++;
    for (int32_t p = 0; p < kv->num_pages; p++)
        ck_assert_int_eq(seen[p], 1);
    free(seen);
}

/* A move between two engines' page tables: the sender sets a request's pages aside under a ticket
 * (the request then holds none, and its id may be used again), the receiver takes as many under a
 * key and gives them to the request's id there; the sender then drops its set. Tickets in use,
 * unknown keys, a request that already holds pages and a short pool are refused, changing nothing. */
START_TEST(pages_moved_between_engines)
{
    struct eng_kv a, b;
    eng_kv_init(&a, 16, 10);
    eng_kv_init(&b, 16, 6);
    struct ts_err err;
    ck_assert_int_eq(eng_kv_reserve(&a, 4, 40, &err), 0); /* 3 pages */
    const int32_t slot0 = eng_kv_slot(&a, 4, 0);
    ck_assert_int_eq(eng_kv_hold(&a, 4, 17, &err), 0);
    ck_assert_int_eq(a.reqs[4].num_pages, 0);
    ck_assert_int_eq(a.num_free, 7);
    const struct eng_kv_req *set = eng_kv_held(&a, 17);
    ck_assert_ptr_nonnull(set);
    ck_assert_int_eq(set->num_pages, 3);
    ck_assert_int_eq(set->pages[0] * 16, slot0);
    ck_assert_ptr_null(eng_kv_held(&a, 18));
    ck_assert_int_ne(eng_kv_hold(&a, 5, 17, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "in use"));
    ck_assert_int_eq(eng_kv_reserve(&a, 4, 16, &err), 0); /* the id again: pages of its own */
    ck_assert_int_eq(a.num_free, 6);
    each_page_once(&a);

    ck_assert_int_ne(eng_kv_take(&b, 2, 7, &err), 0); /* 6 pages, 7 wanted */
    ck_assert_ptr_nonnull(strstr(err.msg, "7 pages of 16 tokens wanted, 6 of 6 are free"));
    ck_assert_int_eq(b.num_free, 6);
    ck_assert_int_eq(eng_kv_take(&b, 2, set->num_pages, &err), 0);
    ck_assert_int_ne(eng_kv_take(&b, 2, 1, &err), 0);
    ck_assert_int_eq(b.num_free, 3);
    each_page_once(&b);
    ck_assert_int_eq(eng_kv_reserve(&b, 9, 1, &err), 0);
    ck_assert_int_ne(eng_kv_adopt(&b, 2, 9, &err), 0); /* request 9 holds a page */
    ck_assert_ptr_nonnull(strstr(err.msg, "already holds 1 pages"));
    ck_assert_int_ne(eng_kv_adopt(&b, 3, 0, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "no pages are set aside"));
    ck_assert_int_eq(eng_kv_adopt(&b, 2, 0, &err), 0);
    ck_assert_ptr_null(eng_kv_held(&b, 2));
    ck_assert_int_eq(b.reqs[0].num_pages, 3);
    ck_assert_int_eq(eng_kv_reserve(&b, 0, 48, &err), 0); /* its 48 keys fit the adopted pages */
    ck_assert_int_eq(b.num_free, 2);
    char used[96] = {0};
    for (int k = 0; k < 48; k++) {
        const int32_t s = eng_kv_slot(&b, 0, k);
        ck_assert(s >= 0 && s < 96 && !used[s]);
        used[s] = 1;
    }
    each_page_once(&b);

    eng_kv_drop(&a, 17);
    eng_kv_drop(&a, 17); /* unknown now: nothing */
    ck_assert_int_eq(a.num_free, 9);
    each_page_once(&a);
    ck_assert_int_eq(eng_kv_take(&a, 5, 2, &err), 0); /* one left aside at the end: freed with the table */
    eng_kv_free(&a);
    eng_kv_free(&b);
}
END_TEST

START_TEST(plan_arrays)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 100);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    seg(&sd, 5, 130, 0, 130); /* a Refresh: 3 tiles */
    seg(&sd, 2, 32, 480, 32); /* a Reuse over 480 cached keys */
    seg(&sd, 9, 40, 0, 0);    /* a prefill: no logits */
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_int_eq(p.T, 202);
    ck_assert_int_eq(p.S, 3);
    ck_assert_int_eq(p.R, 162);
    ck_assert_int_eq(p.q_start[1], 130);
    ck_assert_int_eq(p.key_len[1], 512);
    ck_assert_int_eq(p.kv_cached[1], 480);
    ck_assert_int_eq(p.num_tiles, 3 + 1 + 1);
    /* the attention's split by segment length sees the shortest and the longest segment */
    ck_assert_int_eq(p.min_q, 32);
    ck_assert_int_eq(p.max_q, 130);
    /* positions continue the cache; slots match the page table */
    for (int i = 0; i < 32; i++) {
        ck_assert_int_eq(p.tok_pos[130 + i], 480 + i);
        ck_assert_int_eq(p.tok_slot[130 + i], eng_kv_slot(&kv, 2, 480 + i));
    }
    for (int t = 0; t < p.T; t++)
        ck_assert(p.tok_ids[t] >= 0 && p.tok_ids[t] < 1000);
    /* logits: the last rows of each segment */
    ck_assert_int_eq(p.logit_idx[0], 0);
    ck_assert_int_eq(p.logit_idx[129], 129);
    ck_assert_int_eq(p.logit_idx[130], 130);
    ck_assert_int_eq(p.logit_idx[161], 161);
    /* every query row is in exactly one tile */
    int covered[202] = {0};
    for (int t = 0; t < p.num_tiles; t++) {
        int s = p.tiles[2 * t], q0 = p.tiles[2 * t + 1];
        for (int i = q0; i < q0 + ATTN_TILE_M && i < p.q_len[s]; i++)
            covered[p.q_start[s] + i]++;
    }
    for (int t = 0; t < 202; t++)
        ck_assert_int_eq(covered[t], 1);
    /* page lists: a segment's key j lives in pages[page_off + j / 16] */
    for (int j = 0; j < 512; j += 37)
        ck_assert_int_eq(p.pages[p.page_off[1] + j / 16] * 16 + j % 16, eng_kv_slot(&kv, 2, j));
    /* same request, same position: same token id in a later step */
    int32_t id = p.tok_ids[130];
    step_desc_clear(&sd);
    seg(&sd, 2, 32, 480, 0);
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_int_eq(p.tok_ids[0], id);
    ck_assert_int_eq(p.min_q, 32);
    ck_assert_int_eq(p.max_q, 32);
    ck_assert_int_eq(p.long_tiles, 0);
    /* the tiles of segments of at least ATTN_LONG_Q rows come first, those at multiples of 128
     * rows (the wgmma kernel's blocks) before the others, each group in segment order */
    step_desc_clear(&sd);
    seg(&sd, 11, 20, 0, 0);
    seg(&sd, 12, 200, 0, 0);
    seg(&sd, 13, ATTN_LONG_Q, 0, 0);
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    const int want[][2] = {{1, 0}, {1, 128}, {2, 0}, {1, 64}, {1, 192}, {2, 64}, {0, 0}};
    ck_assert_int_eq(p.num_tiles, 7);
    for (int t = 0; t < 7; t++) {
        ck_assert_int_eq(p.tiles[2 * t], want[t][0]);
        ck_assert_int_eq(p.tiles[2 * t + 1], want[t][1]);
    }
    ck_assert_int_eq(p.long_tiles, 6);
    ck_assert_int_eq(p.wg_tiles, 3);
    ck_assert_int_eq(p.long_rows, 200 + ATTN_LONG_Q);
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}
END_TEST

/* The fused FFN's auto rule (kernels.h) on an H200's grid (132 blocks, or 66 clusters of two),
 * against where fusing measured faster: LLaDA-8B's 96 column tiles fused up to 128 rows and from
 * 512 on, split at 192-384; Dream-7B's 148 (two rounds for one row tile) split up to 512 rows,
 * fused from 1,024. */
START_TEST(fused_ffn_auto_rule)
{
    const int h200[3] = {0, 132, 66}, none[3] = {0, 0, 0};
    const int llada_rows[] = {1, 32, 63, 64, 128, 129, 192, 256, 384, 512, 2048, 8192};
    const int llada_fused[] = {1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    for (size_t i = 0; i < sizeof llada_rows / sizeof *llada_rows; i++)
        ck_assert_msg(k_gemm_swiglu_auto_v(llada_rows[i], 12288, h200) == llada_fused[i], "llada %d rows", llada_rows[i]);
    const int dream_rows[] = {32, 64, 128, 256, 512, 1024, 2048, 8192};
    const int dream_fused[] = {0, 0, 0, 0, 0, 1, 1, 1};
    for (size_t i = 0; i < sizeof dream_rows / sizeof *dream_rows; i++)
        ck_assert_msg(k_gemm_swiglu_auto_v(dream_rows[i], 18944, h200) == dream_fused[i], "dream %d rows", dream_rows[i]);
    ck_assert_int_eq(k_gemm_swiglu_units(512, 18944, k_gemm_swiglu_cluster(512)), 2 * 148);
    ck_assert_int_eq(k_gemm_swiglu_cluster(384), 1); /* three row tiles: no partner for the third */
    ck_assert_int_eq(k_gemm_swiglu_auto_v(128, 12288, none), 0);  /* no wgmma GEMM on this GPU */
    ck_assert_int_eq(k_gemm_swiglu_auto_v(128, 12200, h200), 0);  /* F not a multiple of 128 */
    ck_assert_int_eq(k_gemm_swiglu_auto_v(0, 12288, h200), 0);
}
END_TEST

START_TEST(refused_step_changes_nothing)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 4);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    seg(&sd, 0, 32, 0, 0);
    seg(&sd, 1, 64, 0, 0); /* 2 + 4 pages > 4 */
    struct ts_err err;
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "step refused"));
    ck_assert_int_eq(kv.num_free, 4);
    /* a sparse attention pattern over cached keys, which the engine does not run; over a whole
     * sequence without a cache (SparseD's), planned as its dense rows (the engine attends by the
     * pattern eng_sparsed_next names) */
    step_desc_clear(&sd);
    const struct segment sparse = {.req_id = 2, .q = 8, .kv = 8, .logit_rows = 8, .attn_keys = 4,
                                   .phase = PHASE_REUSE};
    step_desc_add(&sd, &sparse);
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "sparse attention pattern"));
    ck_assert_int_eq(kv.num_free, 4);
    step_desc_clear(&sd);
    const struct segment whole = {.req_id = 2, .q = 8, .kv_write = 8, .logit_rows = 8, .attn_keys = 4,
                                  .phase = PHASE_FULL};
    step_desc_add(&sd, &whole);
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
    ck_assert_int_eq(p.q_len[0], 8);
    ck_assert_int_eq(p.key_len[0], 8);
    eng_kv_release(&kv, 2);
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}
END_TEST

START_TEST(stateless_plan)
{
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    seg(&sd, 4, 70, 0, 35);
    seg(&sd, 8, 21, 0, 21);
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, NULL, &sd, 500, 3, &err), 0);
    ck_assert_int_eq(p.T, 91);
    ck_assert_int_eq(p.num_page_refs, 91);
    for (int t = 0; t < p.T; t++)
        ck_assert_int_eq(p.tok_slot[t], t); /* K/V stay in the step's own rows */
    /* key j of a segment is its own row q_start + j (pages of one token) */
    for (int s = 0; s < p.S; s++)
        for (int j = 0; j < p.key_len[s]; j++)
            ck_assert_int_eq(p.pages[p.page_off[s] + j], p.q_start[s] + j);
    ck_assert_int_eq(p.tok_pos[70], 0);
    /* a segment reading a cache cannot run without a pool */
    seg(&sd, 9, 8, 40, 8);
    ck_assert_int_ne(eng_plan_build(&p, NULL, &sd, 500, 3, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "stateless"));
    step_desc_free(&sd);
    eng_plan_free(&p);
}
END_TEST

/* A selecting segment writes its tokens past the pages its kept tokens take, and describes the copy. */
START_TEST(selection_plan)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    seg(&sd, 0, 32, 0, 32);
    struct segment g = {.req_id = 1, .q = 200, .kv_write = 50, .logit_rows = 10, .phase = PHASE_REFRESH,
                        .keep = 50, .score_rows = 32};
    step_desc_add(&sd, &g);
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
    ck_assert_int_eq(p.num_sel, 1);
    ck_assert_int_eq(p.max_cand, 168);
    ck_assert_int_eq(p.max_keep, 50);
    const int32_t *f = p.sel;
    ck_assert_int_eq(f[0], 32 + 168); /* the scoring rows: the segment's last 32 */
    ck_assert_int_eq(f[1], 32);
    ck_assert_int_eq(f[2], 168);
    ck_assert_int_eq(f[3], 50);
    ck_assert_int_eq(f[4], p.page_off[1]);
    /* keys from 64 (4 pages for 50 kept): 13 pages of candidates, then the 4 kept pages */
    ck_assert_int_eq(kv.reqs[1].num_pages, 4 + 13);
    for (int k = 0; k < 13; k++)
        ck_assert_int_eq(p.pages[f[4] + k], kv.reqs[1].pages[4 + k]);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(p.pages[f[5] + k], kv.reqs[1].pages[k]);
    ck_assert_int_eq(p.tok_slot[32], eng_kv_slot(&kv, 1, 64));
    ck_assert_int_eq(p.tok_pos[32], 0);
    ck_assert_int_eq(p.key_len[1], 200);
    /* the REUSE after it reads the 50 kept keys from the first pages */
    step_desc_clear(&sd);
    seg(&sd, 1, 32, 50, 32);
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
    ck_assert_int_eq(p.num_sel, 0);
    ck_assert_int_eq(p.pages[p.page_off[0]], kv.reqs[1].pages[0]);
    ck_assert_int_eq(p.tok_slot[0], eng_kv_slot(&kv, 1, 50));
    /* no selection without a pool */
    step_desc_clear(&sd);
    step_desc_add(&sd, &g);
    ck_assert_int_ne(eng_plan_build(&p, NULL, &sd, 100, 1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "selects"));
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}
END_TEST

/* A layered step (dLLM-Cache): every segment's hidden rows at positions and keys 0..rows-1, the
 * later layers computing each segment's last q rows or, probing, its first q - picked rows and the
 * picked placeholders; the front layers' plan computing every row; the probes described. */
START_TEST(layered_plan)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 1;
    sd.cache_outputs = true;
    /* request 3: P = 50, G = 40, the prompt and 8 response rows; request 1: the response (30) over
     * its cached prompt (40) */
    const struct segment a = {.req_id = 3, .q = 58, .kv = 32, .kv_write = 58, .logit_rows = 40, .phase = PHASE_REUSE,
                              .q_front = 90, .kv_write_front = 90, .probe = 40, .carry = 32, .picked = 8};
    const struct segment b = {.req_id = 1, .q = 30, .kv = 40, .kv_write = 30, .logit_rows = 70, .phase = PHASE_REFRESH,
                              .q_front = 70, .kv_write_front = 70, .carry = 40};
    step_desc_add(&sd, &a);
    step_desc_add(&sd, &b);
    ck_assert(eng_plan_layered(&sd));
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_int_eq(p.X, 160);
    ck_assert_int_eq(p.T, 88);
    ck_assert_int_eq(p.R, 110);
    ck_assert_int_eq(kv.reqs[3].num_pages, 6); /* 90 keys */
    for (int i = 0; i < 50; i++) { /* the prompt rows: always computed */
        ck_assert_int_eq(p.c_row[i], i);
        ck_assert_int_eq(p.tok_pos[i], i);
        ck_assert_int_eq(p.x_comp[i], i);
    }
    for (int k = 0; k < 8; k++) /* the picked placeholders: the last 8 rows */
        ck_assert_int_eq(p.c_row[50 + k], 82 + k);
    for (int i = 0; i < 30; i++) { /* request 1's response rows: its last 30 */
        ck_assert_int_eq(p.c_row[58 + i], 90 + 40 + i);
        ck_assert_int_eq(p.tok_pos[58 + i], 40 + i);
        ck_assert_int_eq(p.tok_slot[58 + i], eng_kv_slot(&kv, 1, 40 + i));
        ck_assert_int_eq(p.x_comp[130 + i], 58 + i);
    }
    for (int i = 0; i < 40; i++) /* its prompt rides on cached outputs */
        ck_assert_int_eq(p.x_comp[90 + i], -1);
    ck_assert_int_eq(p.key_len[0], 90);
    ck_assert_int_eq(p.key_len[1], 70);
    ck_assert_int_eq(p.num_probe, 1);
    ck_assert_int_eq(p.probe_rows, 40);
    const int32_t want[5] = {50, 40, 8, 50, 50};
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(p.probe[k], want[k]);
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(p.probe_idx[i], 50 + i);
    for (int x = 0; x < 160; x++) { /* hidden rows: ids and slots by position */
        const int req = x < 90 ? 3 : 1, pos = x < 90 ? x : x - 90;
        ck_assert_int_eq(p.x_slot[x], eng_kv_slot(&kv, req, pos));
    }
    ck_assert_int_eq(p.logit_idx[0], 50); /* request 3's last 40 rows, then request 1's 70 */
    ck_assert_int_eq(p.logit_idx[40], 90);
    ck_assert_int_eq(p.logit_idx[109], 159);
    /* the front layers: every row, in order */
    ck_assert_ptr_nonnull(p.front);
    ck_assert_int_eq(p.front->T, 160);
    for (int x = 0; x < 160; x++) {
        ck_assert_int_eq(p.front->c_row[x], x);
        ck_assert_int_eq(p.front->x_comp[x], x);
        ck_assert_int_eq(p.front->tok_slot[x], p.x_slot[x]);
    }
    /* the ids of a hidden row are those a plain step gives the same position */
    struct eng_plan plain;
    eng_plan_init(&plain);
    struct step_desc whole;
    step_desc_init(&whole);
    seg(&whole, 3, 90, 0, 0);
    ck_assert_int_eq(eng_plan_build(&plain, &kv, &whole, 1000, 7, &err), 0);
    for (int i = 0; i < 90; i++)
        ck_assert_int_eq(plain.tok_ids[i], p.x_ids[i]);
    ck_assert_ptr_null(plain.front);
    ck_assert_int_eq(plain.X, 0);
    /* what the engine does not run: cached keys other than a segment's own rows */
    step_desc_clear(&sd);
    const struct segment c = {.req_id = 4, .q = 8, .kv = 100, .logit_rows = 8, .phase = PHASE_REUSE, .q_front = 40,
                              .kv_write_front = 40};
    step_desc_add(&sd, &c);
    const int free_before = kv.num_free;
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "kv + q"));
    ck_assert_int_eq(kv.num_free, free_before);
    step_desc_free(&sd);
    step_desc_free(&whole);
    eng_plan_free(&p);
    eng_plan_free(&plain);
    eng_kv_free(&kv);
}
END_TEST

/* An evicting step (FOCUS): the front plan runs each segment's front rows after its cached prefix,
 * the later plan the rows before the candidates and the picked placeholders (the last candidates),
 * each continuing the front row at its key; a segment without a front shape runs its rows in both;
 * the candidates described; the shapes the engine does not run refused with nothing reserved. */
START_TEST(evicting_plan)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 2;
    sd.evict = true;
    /* request 2: a block of 32 over 100 cached keys, 3 decoded rows waiting for the cache and 29
     * masked candidates of which 5 are kept; request 5: a prefill of 20 rows */
    const struct segment a = {.req_id = 2, .q = 8, .kv = 124, .kv_write = 8, .logit_rows = 8, .phase = PHASE_BLOCK,
                              .q_front = 32, .kv_front = 100, .kv_write_front = 32, .probe = 29, .picked = 5};
    const struct segment b = {.req_id = 5, .q = 20, .kv = 0, .kv_write = 20, .phase = PHASE_PREFILL};
    step_desc_add(&sd, &a);
    step_desc_add(&sd, &b);
    ck_assert(eng_plan_evicting(&sd) && !eng_plan_layered(&sd));
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert(p.evict);
    ck_assert_int_eq(p.X, 0);
    ck_assert_int_eq(kv.reqs[2].num_pages, 9); /* 132 keys */
    const struct eng_plan *fp = p.front;
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fp->T, 52);
    ck_assert_int_eq(p.T, 28);
    for (int i = 0; i < 32; i++) {
        ck_assert_int_eq(fp->tok_pos[i], 100 + i);
        ck_assert_int_eq(fp->tok_slot[i], eng_kv_slot(&kv, 2, 100 + i));
    }
    ck_assert_int_eq(fp->key_len[0], 132);
    ck_assert_int_eq(fp->kv_cached[0], 100);
    for (int i = 0; i < 3; i++) { /* the decoded rows waiting for the cache */
        ck_assert_int_eq(p.tok_pos[i], 100 + i);
        ck_assert_int_eq(p.c_row[i], i);
    }
    for (int k = 0; k < 5; k++) { /* the picked placeholders: the last 5 candidates */
        ck_assert_int_eq(p.tok_pos[3 + k], 127 + k);
        ck_assert_int_eq(p.tok_slot[3 + k], eng_kv_slot(&kv, 2, 127 + k));
        ck_assert_int_eq(p.c_row[3 + k], 27 + k);
    }
    ck_assert_int_eq(p.key_len[0], 132);
    ck_assert_int_eq(p.kv_cached[0], 124);
    for (int i = 0; i < 20; i++) { /* the prefill: the same rows before and after */
        ck_assert_int_eq(p.c_row[8 + i], 32 + i);
        ck_assert_int_eq(p.tok_pos[8 + i], i);
        ck_assert_int_eq(fp->tok_pos[32 + i], i);
    }
    ck_assert_int_eq(p.R, 8);
    for (int r = 0; r < 8; r++)
        ck_assert_int_eq(p.logit_idx[r], r);
    ck_assert_int_eq(p.num_probe, 1);
    ck_assert_int_eq(p.probe_rows, 29);
    ck_assert_int_eq(p.max_probe, 29);
    const int32_t want[ENG_EVICT_FIELDS] = {3, 29, 5, 3, 103, 2, 0};
    for (int k = 0; k < ENG_EVICT_FIELDS; k++)
        ck_assert_int_eq(p.probe[k], want[k]);
    /* the same step without eviction is a plain one again */
    sd.evict = false;
    step_desc_clear(&sd);
    seg(&sd, 2, 4, 132, 0);
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert(!p.evict && p.front == NULL);
    /* refused: later rows that are not the rows before the candidates and the picked ones, one
     * front layer, eviction beside a feature cache */
    sd.evict = true;
    const int free_before = kv.num_free;
    struct segment c = a;
    c.req_id = 9;
    c.probe = 28;
    step_desc_clear(&sd);
    step_desc_add(&sd, &c);
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "q_front - probe"));
    sd.front_layers = 1;
    step_desc_clear(&sd);
    step_desc_add(&sd, &a);
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "layers 0 and 1"));
    sd.front_layers = 2;
    sd.cache_outputs = true;
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "feature cache"));
    ck_assert_int_eq(kv.num_free, free_before);
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}
END_TEST

/* Placed rows for widening_plan: request 3's front rows at 10, 12, 14, 16; request 4's at 30, 31. */
static int32_t widen_pos(void *ctx, int32_t req, int32_t row)
{
    (void)ctx;
    return req == 3 ? 10 + 2 * row : req == 4 ? 30 + row : -1;
}

static int32_t no_id(void *ctx, int32_t req, int32_t pos)
{
    (void)ctx, (void)req, (void)pos;
    return -1;
}

START_TEST(widening_plan)
{
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 3;
    sd.cache_inputs = true;
    /* request 3 refreshes: 4 rows over 36 cached keys through the front layers, then all 40; request
     * 4 runs 2 rows over 38 cached keys through every layer */
    const struct segment a = {.req_id = 3, .q = 40, .kv_write = 40, .logit_rows = 40, .phase = PHASE_REFRESH,
                              .q_front = 4, .kv_front = 36, .kv_write_front = 4};
    const struct segment b = {.req_id = 4, .q = 2, .kv = 38, .kv_write = 2, .logit_rows = 2, .phase = PHASE_REUSE};
    step_desc_add(&sd, &a);
    step_desc_add(&sd, &b);
    ck_assert(eng_plan_widening(&sd) && !eng_plan_layered(&sd) && !eng_plan_evicting(&sd));
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert(p.widen && !p.evict && p.X == 0);
    const struct eng_plan *fp = p.front;
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fp->T, 6);
    ck_assert_int_eq(p.T, 42);
    ck_assert_int_eq(kv.reqs[3].num_pages, 3); /* 40 keys */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(fp->tok_pos[i], 36 + i);
        ck_assert_int_eq(fp->tok_slot[i], eng_kv_slot(&kv, 3, 36 + i));
    }
    ck_assert_int_eq(fp->key_len[0], 40);
    ck_assert_int_eq(fp->kv_cached[0], 36);
    for (int i = 0; i < 40; i++) { /* every key of the widening request */
        ck_assert_int_eq(p.tok_pos[i], i);
        ck_assert_int_eq(p.tok_slot[i], eng_kv_slot(&kv, 3, i));
    }
    ck_assert_int_eq(p.key_len[0], 40);
    ck_assert_int_eq(p.kv_cached[0], 0);
    for (int i = 0; i < 2; i++) /* the other: the same rows before and after */
        ck_assert_int_eq(p.tok_slot[40 + i], fp->tok_slot[4 + i]);
    ck_assert_int_eq(p.R, 42);
    for (int r = 0; r < 42; r++)
        ck_assert_int_eq(p.logit_idx[r], r);
    /* rows placed by a generation: the front rows where it puts them, the widening request's later
     * rows still every key, the other's later rows where its front rows sit */
    const struct eng_tokens t = {.id = no_id, .pos = widen_pos};
    ck_assert_msg(eng_plan_set_ids(&p, &kv, &sd, &t, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(fp->tok_pos[i], 10 + 2 * i);
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(p.tok_pos[i], i);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(p.tok_pos[40 + i], 30 + i);
        ck_assert_int_eq(p.tok_slot[40 + i], eng_kv_slot(&kv, 4, 30 + i));
    }
    /* without the input cache the same step is a layered one */
    sd.cache_inputs = false;
    ck_assert(!eng_plan_widening(&sd) && eng_plan_layered(&sd));
    sd.cache_inputs = true;
    /* refused: later layers over cached keys, and cached inputs beside a feature cache */
    const int free_before = kv.num_free;
    struct segment c = a;
    c.req_id = 9, c.kv = 4, c.q = c.logit_rows = 36;
    step_desc_clear(&sd);
    step_desc_add(&sd, &c);
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "every row"));
    c.q = 40; /* every front key, and 4 cached keys more */
    step_desc_clear(&sd);
    step_desc_add(&sd, &c);
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "every row"));
    step_desc_clear(&sd);
    step_desc_add(&sd, &a);
    sd.cache_outputs = true;
    ck_assert_int_ne(eng_plan_build(&p, &kv, &sd, 1000, 7, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "feature cache"));
    ck_assert_int_eq(kv.num_free, free_before);
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_plan");
    ck_case(s, pages_reserve_release, 0);
    ck_case(s, pages_moved_between_engines, 0);
    ck_case(s, plan_arrays, 0);
    ck_case(s, fused_ffn_auto_rule, 0);
    ck_case(s, refused_step_changes_nothing, 0);
    ck_case(s, stateless_plan, 0);
    ck_case(s, selection_plan, 0);
    ck_case(s, layered_plan, 0);
    ck_case(s, evicting_plan, 0);
    ck_case(s, widening_plan, 0);
    return run_suite("eng_plan", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
