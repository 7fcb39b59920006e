/*
 * check_eng_anchor.c: reading the PyTorch anchor's output (engine/eng_anchor.c): the recorded H200
 * run's lines, the script's default grid, the steps each shape stands for, and every refusal named
 * by file, line and field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_anchor.h"
#include "test_util.h"

/* two shapes of the anchor's recorded H200 run (../shared/anchors), a progress line, its ceilings */
static const char *const RUN =
    "{\"B\": 1, \"T\": 512, \"masked\": 256, \"refresh_all_logits_ms\": 29.708, \"refresh_masked_logits_ms\": "
    "26.537, \"reuse_block32_ms\": 31.067, \"peak_act_all_GiB\": 0.156, \"peak_act_masked_GiB\": 0.113}\n"
    "warming up\n"
    "\n"
    "{\"B\": 1, \"T\": 8192, \"masked\": 4096, \"refresh_all_logits_ms\": 307.947, \"refresh_masked_logits_ms\": "
    "302.68, \"reuse_block32_ms\": 32.608}\r\n"
    "{\"gemm_8192_bf16_tflops\": 768.6}\n"
    "{\"copy_TBps\": 4.24}";

START_TEST(reads_the_recorded_run)
{
    struct anchor_run r;
    struct ts_err err;
    ck_assert_msg(anchor_parse("a.jsonl", RUN, strlen(RUN), &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.n, 2);
    ck_assert_int_eq(r.c[0].B, 1);
    ck_assert_int_eq(r.c[0].T, 512);
    ck_assert_int_eq(r.c[0].masked, 256);
    ck_assert_int_eq(r.c[0].line, 1);
    ck_assert_double_eq_tol(r.c[0].ms[ANCHOR_REFRESH_ALL], 29.708, 1e-9);
    ck_assert_double_eq_tol(r.c[0].ms[ANCHOR_REFRESH_MASKED], 26.537, 1e-9);
    ck_assert_double_eq_tol(r.c[0].ms[ANCHOR_REUSE], 31.067, 1e-9);
    ck_assert_double_eq_tol(r.c[0].peak_act_gib[0], 0.156, 1e-9);
    ck_assert_double_eq_tol(r.c[0].peak_act_gib[1], 0.113, 1e-9);
    ck_assert_int_eq(r.c[1].line, 4); /* the progress line and the blank one are counted */
    ck_assert_int_eq(r.c[1].T, 8192);
    ck_assert_double_eq_tol(r.c[1].ms[ANCHOR_REUSE], 32.608, 1e-9);
    ck_assert_double_eq(r.c[1].peak_act_gib[0], -1); /* optional, absent */
    ck_assert_double_eq_tol(r.gemm_tflops, 768.6, 1e-9);
    ck_assert_double_eq_tol(r.copy_tbps, 4.24, 1e-9);
    /* the shared file itself, where it is beside the checkout */
    const char *shared = TS_SRCDIR "/../shared/anchors/torch_llada_step.h200.jsonl";
    FILE *f = fopen(shared, "r");
    if (f) {
        fclose(f);
        ck_assert_msg(anchor_load(shared, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(r.n, 7);
        ck_assert_int_eq(r.c[4].B, 16);
        ck_assert_double_eq_tol(r.c[4].ms[ANCHOR_REFRESH_ALL], 244.376, 1e-9);
    }
}
END_TEST

START_TEST(default_grid_and_step_shapes)
{
    struct anchor_run r;
    anchor_default_grid(&r);
    ck_assert_int_eq(r.n, 7);
    ck_assert_int_eq(r.c[6].B, 1);
    ck_assert_int_eq(r.c[6].T, 8192);
    ck_assert_int_eq(r.c[6].masked, 4096);
    for (int i = 0; i < r.n; i++) {
        ck_assert_double_eq(r.c[i].ms[ANCHOR_REFRESH_ALL], 0);
        ck_assert_int_le(r.c[i].B * r.c[i].T, 8192); /* every one fits a bench step */
    }
    int32_t q, kv, lr;
    anchor_step_shape(&r.c[1], ANCHOR_REFRESH_ALL, &q, &kv, &lr); /* 1 x 2048, 1024 masked */
    ck_assert(q == 2048 && kv == 0 && lr == 2048);
    anchor_step_shape(&r.c[1], ANCHOR_REFRESH_MASKED, &q, &kv, &lr);
    ck_assert(q == 2048 && kv == 0 && lr == 1024);
    anchor_step_shape(&r.c[1], ANCHOR_REUSE, &q, &kv, &lr);
    ck_assert(q == 32 && kv == 2016 && lr == 32);
    ck_assert_str_eq(anchor_step_name(ANCHOR_REUSE), "reuse");
    ck_assert_str_eq(anchor_step_field(ANCHOR_REFRESH_MASKED), "refresh_masked_logits_ms");
}
END_TEST

/* text must be refused with a message holding want */
static void refused(const char *text, const char *want)
{
    struct anchor_run r;
    struct ts_err err;
    ck_assert_msg(anchor_parse("bad.jsonl", text, strlen(text), &r, &err) != 0, "accepted: %s", text);
    ck_assert_msg(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
}

#define SHAPE(B, T, M) "{\"B\": " #B ", \"T\": " #T ", \"masked\": " #M ", \"refresh_all_logits_ms\": 2, " \
                       "\"refresh_masked_logits_ms\": 1.5, \"reuse_block32_ms\": 1}\n"

START_TEST(refusals_name_line_and_field)
{
    refused(SHAPE(1, 512, 256) "{\"B\": 2, \"T\": 512,", "bad.jsonl:2: json:");
    refused(SHAPE(1, 512, 256) "{\"copy_TBps\": 4} {\"copy_TBps\": 4}\n", "bad.jsonl:2: json:");
    refused("\n{\"B\": 1, \"T\": 512, \"refresh_all_logits_ms\": 2}", "bad.jsonl:2: masked: missing field");
    refused("{\"B\": 1.5, \"T\": 512, \"masked\": 1}", "bad.jsonl:1: B: 1.5 is not a whole number");
    refused("{\"B\": \"one\", \"T\": 512, \"masked\": 1}", "bad.jsonl:1: B: not a number");
    refused("{\"B\": 0, \"T\": 512, \"masked\": 1}", "bad.jsonl:1: B: 0 is outside");
    refused(SHAPE(1, 32, 16), "bad.jsonl:1: T: 32 tokens leave nothing cached");
    refused(SHAPE(1, 512, 513), "bad.jsonl:1: masked: 513 of 512 tokens");
    refused("{\"B\": 1, \"T\": 512, \"masked\": 256, \"refresh_all_logits_ms\": 2, \"refresh_masked_logits_ms\": "
            "-1, \"reuse_block32_ms\": 1}", "bad.jsonl:1: refresh_masked_logits_ms: -1 is outside");
    refused("{\"B\": 1, \"T\": 512, \"masked\": 256, \"refresh_all_logits_ms\": 2, \"refresh_masked_logits_ms\": "
            "1, \"reuse_block32_ms\": 1, \"peak_act_all_GiB\": \"x\"}", "bad.jsonl:1: peak_act_all_GiB: not a number");
    refused(SHAPE(1, 512, 256) SHAPE(4, 512, 256) SHAPE(1, 512, 256), "bad.jsonl:3: B: the shape B=1 T=512 "
            "masked=256 again (line 1)");
    refused(SHAPE(1, 512, 256) "{\"speed\": 3}", "bad.jsonl:2: B: an object that is neither a shape");
    refused(SHAPE(1, 512, 256) "{\"gemm_8192_bf16_tflops\": 0}", "bad.jsonl:2: gemm_8192_bf16_tflops:");
    refused("{\"B\": 1, \"B\": 2}", "bad.jsonl:1: json: duplicate object key");
    refused("{\"copy_TBps\": 4.2}\nprogress\n", "bad.jsonl: no shapes");
    refused("", "bad.jsonl: no shapes");
    /* more shapes than a run holds */
    char *many = xcalloc(ANCHOR_MAX_CASES + 1, 160);
    for (int i = 0; i <= ANCHOR_MAX_CASES; i++)
        sprintf(many + strlen(many), "{\"B\": %d, \"T\": 512, \"masked\": 256, \"refresh_all_logits_ms\": 2, "
                "\"refresh_masked_logits_ms\": 1, \"reuse_block32_ms\": 1}\n", i + 1);
    refused(many, "bad.jsonl:33: B: more than 32 shapes");
    free(many);
    struct anchor_run r;
    struct ts_err err;
    ck_assert_int_ne(anchor_load("/nonexistent/anchor.jsonl", &r, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/anchor.jsonl"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_anchor");
    ck_case(s, reads_the_recorded_run, 0);
    ck_case(s, default_grid_and_step_shapes, 0);
    ck_case(s, refusals_name_line_and_field, 0);
    return run_suite("eng_anchor", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
