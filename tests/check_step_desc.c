/* check_step_desc.c: the step description and its running totals. */
#include <stdlib.h>
#include <string.h>

#include "step_desc.h"
#include "test_util.h"

START_TEST(totals_match_recomputation)
{
    struct step_desc sd;
    step_desc_init(&sd);
    srand(7);
    for (int i = 0; i < 1000; i++) {
        struct segment s = {.req_id = i, .q = 1 + rand() % 600, .kv = rand() % 3000,
                            .kv_write = rand() % 100, .decoded = rand() % 4,
                            .phase = (uint8_t)(rand() % PHASE_COUNT)};
        s.logit_rows = rand() % (s.q + 1);
        step_desc_add(&sd, &s);
    }
    struct step_totals t;
    step_totals_compute(&sd, &t);
    ck_assert_int_eq(t.num_segs, 1000);
    ck_assert_int_eq(t.q_tokens, sd.tot.q_tokens);
    ck_assert_int_eq(t.kv_tokens, sd.tot.kv_tokens);
    ck_assert_int_eq(t.logit_rows, sd.tot.logit_rows);
    ck_assert_int_eq(t.max_q, sd.tot.max_q);
    ck_assert_int_eq(t.attn_kv_read, sd.tot.attn_kv_read);
    ck_assert(t.attn_qk_pairs == sd.tot.attn_qk_pairs);
    int64_t by = 0;
    for (int p = 0; p < PHASE_COUNT; p++)
        by += t.by_phase[p];
    ck_assert_int_eq(by, 1000);
    step_desc_clear(&sd);
    ck_assert_int_eq(sd.num_segs, 0);
    ck_assert_int_eq(sd.tot.q_tokens, 0);
    step_desc_free(&sd);
    step_desc_free(NULL);
}
END_TEST

/* The selection's totals: sums over the selecting segments, and their largest candidate and kept counts. */
START_TEST(selection_totals)
{
    struct step_desc sd;
    step_desc_init(&sd);
    const struct segment segs[] = {
        {.req_id = 0, .q = 300, .kv_write = 100, .phase = PHASE_REFRESH, .keep = 100, .score_rows = 32},
        {.req_id = 1, .q = 32, .kv = 100, .phase = PHASE_REUSE},
        {.req_id = 2, .q = 700, .kv_write = 50, .phase = PHASE_REFRESH, .keep = 50, .score_rows = 20},
    };
    for (size_t i = 0; i < 3; i++)
        step_desc_add(&sd, &segs[i]);
    ck_assert_int_eq(sd.tot.sel_segs, 2);
    ck_assert_int_eq(sd.tot.sel_cand, 268 + 680);
    ck_assert_int_eq(sd.tot.sel_keep, 150);
    ck_assert_int_eq(sd.tot.sel_rows, 52);
    ck_assert_int_eq(sd.tot.sel_max_cand, 680);
    ck_assert_int_eq(sd.tot.sel_max_keep, 100);
    struct step_totals t;
    step_totals_compute(&sd, &t);
    ck_assert_int_eq(t.sel_max_cand, 680);
    ck_assert_int_eq(t.sel_max_keep, 100);
    ck_assert_int_eq(t.sel_cand, sd.tot.sel_cand);
    step_desc_free(&sd);
}
END_TEST

/* Front shapes, probes and carried rows: the front layers' sums take q_front where a segment has
 * one and q elsewhere; rows are the hidden states held at once. */
START_TEST(front_totals)
{
    struct step_desc sd;
    step_desc_init(&sd);
    const struct segment segs[] = {
        {.req_id = 0, .q = 16, .kv = 148, .kv_write = 16, .logit_rows = 164, .phase = PHASE_REUSE, .q_front = 164,
         .kv_write_front = 164, .probe = 64, .carry = 148, .picked = 16},
        {.req_id = 1, .q = 32, .kv = 100, .logit_rows = 32, .phase = PHASE_REUSE},
    };
    for (size_t i = 0; i < 2; i++)
        step_desc_add(&sd, &segs[i]);
    ck_assert_int_eq(sd.tot.q_tokens, 48);
    ck_assert_int_eq(sd.tot.front.q_tokens, 196);
    ck_assert_int_eq(sd.tot.front.kv_write_tokens, 164);
    ck_assert_int_eq(sd.tot.front.max_q, 164);
    ck_assert(sd.tot.front.attn_qk_pairs == 164.0 * 164 + 32.0 * 132);
    ck_assert_int_eq(sd.tot.front.attn_kv_read, 164 + 132);
    ck_assert(sd.tot.attn_qk_pairs == 16.0 * 164 + 32.0 * 132);
    ck_assert_int_eq(sd.tot.split_segs, 1);
    ck_assert_int_eq(sd.tot.probe_tokens, 64);
    ck_assert_int_eq(sd.tot.carry_tokens, 148);
    ck_assert_int_eq(sd.tot.rows, 164 + 32);
    ck_assert_int_eq(step_front_layers(&sd, 32), 0); /* no front layers set */
    sd.front_layers = 2;
    ck_assert_int_eq(step_front_layers(&sd, 32), 2);
    ck_assert_int_eq(step_front_layers(&sd, 1), 1);
    struct step_totals t;
    step_totals_compute(&sd, &t);
    ck_assert(memcmp(&t.front, &sd.tot.front, sizeof t.front) == 0);
    ck_assert_int_eq(t.rows, sd.tot.rows);
    step_desc_clear(&sd);
    step_desc_add(&sd, &segs[1]);
    ck_assert_int_eq(step_front_layers(&sd, 32), 0); /* no segment with a front shape */
    ck_assert_int_eq(sd.tot.front.q_tokens, sd.tot.q_tokens);
    step_desc_free(&sd);
}
END_TEST

/* segment_check names what is wrong with each malformed segment. */
START_TEST(malformed_segments_named)
{
    const struct {
        struct segment s;
        const char *says;
    } bad[] = {
        {{.q = 4, .logit_rows = 5}, "logit_rows"},
        {{.q = 4, .carry = 2, .logit_rows = 7}, "logit_rows"},
        {{.q = 4, .kv_front = 3}, "without q_front"},
        {{.q = 4, .q_front = 8, .kv_write_front = 9}, "kv_write_front beyond"},
        {{.q = 4, .carry = 2, .probe = 7}, "probe beyond"},
        {{.q = 40, .keep = 4, .score_rows = 8, .carry = 1}, "keep > 0 with"},
        {{.q = 4, .probe = -1}, "negative"},
        {{.q = 4, .carry = 6, .probe = 10}, "picked outside"},
        {{.q = 4, .carry = 6, .probe = 3, .picked = 4}, "picked outside"},
        {{.q = 4, .picked = 1}, "picked without probe"},
        {{.q = 4, .carry = 6, .probe = 8, .picked = 1}, "always-computed"},
        {{.q = 4, .kv = 4, .attn_keys = 17}, "attn_keys beyond"},
        {{.q = 4, .kv = 4, .host_kv = 5}, "host_kv beyond kv"},
        {{.q = 4, .kv = 4, .host_scan = -1}, "a negative count"},
        {{.q = 4, .attn_keys = -1}, "negative"},
        {{.q = 4, .q_front = 8, .attn_keys = 2}, "attn_keys with"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = segment_check(&bad[i].s);
        ck_assert_msg(why && strstr(why, bad[i].says), "case %zu: %s", i, why ? why : "accepted");
    }
    const struct segment ok = {.q = 4, .carry = 6, .logit_rows = 10, .probe = 10, .q_front = 10, .kv_write_front = 10,
                               .picked = 4};
    ck_assert(segment_check(&ok) == NULL);
    const struct segment fixed = {.q = 4, .carry = 6, .probe = 8, .picked = 2}; /* 2 of the 2 rows outside */
    ck_assert(segment_check(&fixed) == NULL);
}
END_TEST

START_TEST(attention_pairs_of_one_segment)
{
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment s = {.q = 32, .kv = 480, .logit_rows = 32, .phase = PHASE_REUSE};
    step_desc_add(&sd, &s);
    ck_assert(sd.tot.attn_qk_pairs == 32.0 * 512.0);
    ck_assert_int_eq(sd.tot.attn_kv_read, 512);
    /* a sparse pattern: each row scores attn_keys keys, under block-causal attention too; the K/V
     * read stay the segment's */
    sd.attn_block = 8;
    struct segment sparse = {.req_id = 1, .q = 400, .logit_rows = 400, .attn_keys = 128, .phase = PHASE_FULL};
    step_desc_add(&sd, &sparse);
    ck_assert(sd.tot.attn_qk_pairs == 32.0 * 512.0 + 400.0 * 128);
    ck_assert_int_eq(sd.tot.attn_kv_read, 912);
    ck_assert(segment_attn_pairs(&sparse, 8) == 400.0 * 128);
    ck_assert(segment_attn_pairs(&s, 8) == attn_pairs(32, 480, 8));
    step_desc_free(&sd);
}
END_TEST

/* Block-causal attention (attn_block): row i of a segment sees its cached keys and its rows up to
 * the end of i's block; the pairs and row keys against a count key by key. */
START_TEST(block_causal_pairs)
{
    const int bss[] = {1, 4, 32, 100};
    for (size_t b = 0; b < sizeof bss / sizeof *bss; b++)
        for (int q = 1; q <= 300; q += 7)
            for (int kv = 0; kv <= 64; kv += 32) {
                const int bs = bss[b];
                double pairs = 0;
                for (int i = 0; i < q; i++) {
                    int keys = 0;
                    for (int j = 0; j < kv + q; j++)
                        keys += j < kv || (j - kv) / bs <= i / bs;
                    ck_assert_int_eq(attn_row_keys(q, kv, bs, i), keys);
                    pairs += keys;
                }
                ck_assert_msg(attn_pairs(q, kv, bs) == pairs, "q %d kv %d bs %d: %g, want %g", q, kv, bs,
                              attn_pairs(q, kv, bs), pairs);
                ck_assert(attn_pairs(q, kv, 0) == (double)q * (q + kv));
                ck_assert_int_eq(attn_row_keys(q, kv, 0, q - 1), q + kv);
            }
    /* a block of at most bs rows sees all of itself: the same pairs as bidirectional */
    ck_assert(attn_pairs(32, 480, 32) == 32.0 * 512);
    ck_assert(attn_pairs(20, 480, 32) == 20.0 * 500);
    /* a long prefill: about half the pairs */
    ck_assert(attn_pairs(8192, 0, 32) == 32.0 * 32 * 256 * 257 / 2);
    /* the step's totals follow the knob, which clear keeps */
    struct step_desc sd;
    step_desc_init(&sd);
    sd.attn_block = 32;
    struct segment p = {.q = 100, .kv = 0, .kv_write = 100, .phase = PHASE_PREFILL};
    struct segment r = {.req_id = 1, .q = 32, .kv = 64, .logit_rows = 32, .phase = PHASE_BLOCK};
    step_desc_add(&sd, &p);
    step_desc_add(&sd, &r);
    ck_assert(sd.tot.attn_qk_pairs == attn_pairs(100, 0, 32) + 32.0 * 96);
    struct step_totals t;
    step_totals_compute(&sd, &t);
    ck_assert(t.attn_qk_pairs == sd.tot.attn_qk_pairs);
    step_desc_clear(&sd);
    ck_assert_int_eq(sd.attn_block, 32);
    step_desc_free(&sd);
}
END_TEST

START_TEST(logit_chunks)
{
    struct step_desc sd;
    step_desc_init(&sd);
    ck_assert_int_eq(step_num_logit_chunks(&sd), 0);
    struct segment s = {.q = 5000, .logit_rows = 4097, .phase = PHASE_FULL};
    step_desc_add(&sd, &s);
    ck_assert_int_eq(step_num_logit_chunks(&sd), 1); /* monolithic */
    sd.logit_chunk_rows = 2048;
    ck_assert_int_eq(step_num_logit_chunks(&sd), 3);
    sd.logit_chunk_rows = 4097;
    ck_assert_int_eq(step_num_logit_chunks(&sd), 1);
    step_desc_free(&sd);
}
END_TEST

START_TEST(phase_names)
{
    ck_assert_str_eq(seg_phase_name(PHASE_REFRESH), "REFRESH");
    ck_assert_str_eq(seg_phase_name(PHASE_BLOCK), "BLOCK");
    ck_assert_str_eq(seg_phase_name((enum seg_phase)99), "?");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("step_desc");
    ck_case(s, totals_match_recomputation, 0);
    ck_case(s, selection_totals, 0);
    ck_case(s, front_totals, 0);
    ck_case(s, malformed_segments_named, 0);
    ck_case(s, block_causal_pairs, 0);
    ck_case(s, attention_pairs_of_one_segment, 0);
    ck_case(s, logit_chunks, 0);
    ck_case(s, phase_names, 0);
    return run_suite("step_desc", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
