/* check_gpu.c: the GPU table and its override file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "test_util.h"

START_TEST(builtins)
{
    struct gpu_table *t = gpu_table_create();
    struct gpu_spec g;
    const char *names[] = {"rtx3090", "RTX4090", "l40s", "a100-40gb", "a100-80gb", "h100", "H200", "b200"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        ck_assert_msg(gpu_lookup(t, names[i], &g, NULL) == 0, "%s", names[i]);
    gpu_lookup(t, "h200", &g, NULL);
    ck_assert(g.mem_bytes > 140LL << 30 && g.mem_bw == 4.8e12);
    gpu_lookup(t, "rtx4090", &g, NULL);
    ck_assert(g.mem_bytes < 24LL << 30 && g.bf16_flops > 150e12);
    /* FP8 tensor cores: twice the bf16 rate on Ada, Hopper and Blackwell; none on Ampere */
    const char *fp8[] = {"rtx4090", "l40s", "h100", "h800", "h200", "b200"};
    for (size_t i = 0; i < TS_ARRAY_LEN(fp8); i++) {
        gpu_lookup(t, fp8[i], &g, NULL);
        ck_assert_msg(fabs(g.fp8_flops / g.bf16_flops - 2) < 0.03, "%s: fp8 %g bf16 %g", fp8[i], g.fp8_flops, g.bf16_flops);
    }
    for (const char *const *n = (const char *const[]){"rtx3090", "a100-40gb", "a100-80gb", NULL}; *n; n++) {
        gpu_lookup(t, *n, &g, NULL);
        ck_assert_msg(g.fp8_flops == 0, "%s", *n);
    }
    struct ts_err err;
    ck_assert_int_ne(gpu_lookup(t, "tpu", &g, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "l40s"));
    gpu_table_destroy(t);
    gpu_table_destroy(NULL);
}
END_TEST

/* the driver's names of the cards map to the table's entries (an A100 by its memory), and every
 * entry named is one of the table; other cards to none */
START_TEST(driver_names)
{
    static const struct {
        const char *driver;
        int64_t mib;
        const char *want;
    } cases[] = {{"NVIDIA H100 80GB HBM3", 81559, "h100"},    {"NVIDIA H200", 143771, "h200"},
                 {"NVIDIA H800 (sm_90, 132 SMs)", 0, "h800"}, {"NVIDIA L40S", 46068, "l40s"},
                 {"NVIDIA GeForce RTX 4090", 24564, "rtx4090"}, {"NVIDIA GeForce RTX 3090", 0, "rtx3090"},
                 {"NVIDIA A100-SXM4-80GB", 0, "a100-80gb"},    {"NVIDIA A100-PCIE-40GB", 81920, "a100-40gb"},
                 {"NVIDIA A100-SXM4", 81920, "a100-80gb"},     {"NVIDIA A100-PCIE", 40536, "a100-40gb"},
                 {"NVIDIA A100", 0, "a100"},                   {"Tesla T4", 15360, NULL},
                 {"NVIDIA B200", 183359, "b200"},              {"NVIDIA GB200", 189471, NULL}};
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        const char *got = gpu_of_device(cases[i].driver, cases[i].mib);
        ck_assert_msg(cases[i].want ? got && strcmp(got, cases[i].want) == 0 : got == NULL, "%s: %s", cases[i].driver,
                      got ? got : "none");
        ck_assert(!got || gpu_is_builtin(got) || strcmp(got, "a100") == 0);
    }
    ck_assert(!gpu_is_builtin("a100") && !gpu_is_builtin("tiny"));
}
END_TEST

START_TEST(override_and_add)
{
    struct gpu_table *t = gpu_table_create();
    const char *p = tmp_file(0, ".json", "{\"h200\": {\"bf16_tflops\": 768.6, \"mem_bw_gbs\": 4240},"
                                         " \"mi300x\": {\"mem_gib\": 192, \"bf16_tflops\": 1307,"
                                         " \"mem_bw_gbs\": 5300, \"fp8_tflops\": 2615}}");
    struct ts_err err;
    ck_assert_msg(gpu_load_file(t, p, &err) == 0, "%s", err.msg);
    struct gpu_spec g;
    ck_assert_int_eq(gpu_lookup(t, "h200", &g, NULL), 0);
    ck_assert(g.bf16_flops == 768.6e12 && g.mem_bw == 4240e9);
    ck_assert(g.mem_bytes > 140LL << 30); /* untouched field kept */
    ck_assert_int_eq(gpu_lookup(t, "mi300x", &g, NULL), 0);
    ck_assert_int_eq(g.mem_bytes, 192LL << 30);
    ck_assert(g.fp8_flops == 2615e12);
    ck_assert_int_eq(gpu_table_count(t), 10); /* the 9 built in and mi300x */
    gpu_table_destroy(t);
}
END_TEST

START_TEST(bad_files)
{
    struct gpu_table *t = gpu_table_create();
    struct ts_err err;
    const char *p = tmp_file(0, ".json", "{\"h200\": {\"mem_bw_gbs\": -1}}");
    ck_assert_int_ne(gpu_load_file(t, p, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "h200.mem_bw_gbs"));
    p = tmp_file(0, ".json", "{\"newgpu\": {\"mem_gib\": 10}}");
    ck_assert_int_ne(gpu_load_file(t, p, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "newgpu"));
    p = tmp_file(0, ".json", "[1,2]");
    ck_assert_int_ne(gpu_load_file(t, p, &err), 0);
    /* a misspelt key is refused rather than leaving the stock figure in place */
    p = tmp_file(0, ".json", "{\"h200\": {\"bf16_flops\": 700}}");
    ck_assert_int_ne(gpu_load_file(t, p, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "h200.bf16_flops: unknown key"));
    gpu_table_destroy(t);
}
END_TEST

/* the measured ceilings' CSV: the card's line found, a malformed or non-finite figure refused with
 * file and line */
START_TEST(measured_file)
{
    struct gpu_measured m;
    struct ts_err err;
    const char *p = tmp_file(0, ".csv", "gpu,gemm_tflops,gemm_held_tflops,copy_tbs,record\n"
                                        "h100,782,716,3.0,ladder\nh200,781,677,4.2,ladder\n");
    ck_assert_int_eq(gpu_measured_find(p, "h200", &m, &err), 1);
    ck_assert(m.gemm_flops == 781e12 && m.gemm_held_flops == 677e12 && m.copy_bw == 4.2e12);
    ck_assert_str_eq(m.record, "ladder");
    ck_assert_int_eq(gpu_measured_find(p, "a100", &m, &err), 0);
    static const char *const bad[] = {"h200,inf,677,4.2,r", "h200,781,nan,4.2,r", "h200,781,677,0,r", "h200,781,677"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        char text[160];
        snprintf(text, sizeof text, "gpu,gemm_tflops,gemm_held_tflops,copy_tbs,record\n%s\n", bad[i]);
        p = tmp_file(1, ".csv", text);
        ck_assert_int_eq(gpu_measured_find(p, "h200", &m, &err), -1);
        ck_assert_msg(strstr(err.msg, ".csv:2: not gpu,gemm_tflops") != NULL, "%s: %s", bad[i], err.msg);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu");
    ck_case(s, builtins, 0);
    ck_case(s, driver_names, 0);
    ck_case(s, override_and_add, 0);
    ck_case(s, bad_files, 0);
    ck_case(s, measured_file, 0);
    return run_suite("gpu", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
