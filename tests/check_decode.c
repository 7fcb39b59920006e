/* check_decode.c: decode model parsing, the threshold model's mean, and per-request streams. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "policy.h"
#include "test_util.h"

static struct sim_config C;

START_TEST(parse_specs)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_int_eq(decode_parse("fixed:4", C.datadir, &dm, &err), 0);
    ck_assert_int_eq(dm.kind, DECODE_FIXED);
    ck_assert_int_eq(dm.k, 4);
    ck_assert_msg(decode_parse("threshold:llada-gsm8k", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(fabs(dm.tpf - 2.77) < 1e-12);
    ck_assert_int_eq(decode_parse("threshold:3.5", C.datadir, &dm, &err), 0);
    ck_assert(dm.tpf == 3.5);
    const char *p = tmp_file(0, ".json", "{\"mine\": {\"tpf\": 6.25}}");
    char spec[512];
    snprintf(spec, sizeof spec, "threshold:%s:mine", p);
    ck_assert_msg(decode_parse(spec, C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.tpf == 6.25);
}
END_TEST

START_TEST(parse_errors)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_int_ne(decode_parse("fixed:0", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("fixed", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("greedy:1", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("threshold:0.5", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("threshold:no-such", C.datadir, &dm, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "llada-gsm8k")); /* lists the profiles */
}
END_TEST

/* A profile's published accuracy and the task it scores come with the model, read from the file as
 * written (dInfer's Table 1 for its GSM8K run); a profile without them, and a decoder that reads no
 * profile, carry none; either one without the other, a score past 100 or a long task are refused by
 * file and profile. */
START_TEST(profile_accuracy)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_msg(decode_parse("hierarchical:dinfer-moe-cache-gsm8k", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(fabs(dm.accuracy - 80.97) < 1e-12 && fabs(dm.tpf - 3.42) < 1e-12);
    ck_assert_str_eq(dm.task, "GSM8K");
    ck_assert_int_eq(decode_parse("threshold:llada-gsm8k", C.datadir, &dm, &err), 0);
    ck_assert(dm.accuracy < 0 && dm.task[0] == '\0');
    ck_assert_int_eq(decode_parse("fixed:2", C.datadir, &dm, &err), 0);
    ck_assert(dm.accuracy < 0 && dm.task[0] == '\0');
    const char *p = tmp_file(0, ".json", "{\"a\": {\"tpf\": 3, \"accuracy\": 61.5, \"task\": \"MBPP\"},"
                                          " \"b\": {\"tpf\": 3, \"accuracy\": 61.5},"
                                          " \"c\": {\"tpf\": 3, \"task\": \"MBPP\"},"
                                          " \"d\": {\"tpf\": 3, \"accuracy\": 101, \"task\": \"MBPP\"},"
                                          " \"e\": {\"tpf\": 3, \"accuracy\": \"high\", \"task\": \"MBPP\"},"
                                          " \"f\": {\"tpf\": 3, \"accuracy\": 50, \"task\": \"a task whose name runs "
                                          "past thirty-one characters\"}}");
    char spec[512];
    snprintf(spec, sizeof spec, "threshold:%s:a", p);
    ck_assert_msg(decode_parse(spec, C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.accuracy == 61.5 && strcmp(dm.task, "MBPP") == 0);
    for (const char *bad = "bcdef"; *bad; bad++) {
        snprintf(spec, sizeof spec, "threshold:%s:%c", p, *bad);
        ck_assert_int_ne(decode_parse(spec, C.datadir, &dm, &err), 0);
        char want[8];
        snprintf(want, sizeof want, ": %c:", *bad);
        ck_assert_msg(strstr(err.msg, p) && strstr(err.msg, want) && strstr(err.msg, "go together"), "%s", err.msg);
    }
}
END_TEST

/* A published sweep: LLaDA2.0's report prints 70.15 at 2.55 TPF at threshold 0.95 and 67.90 at 3.31 at
 * 0.85. Between them the model moves along the straight line (at 0.90: 69.025 at 2.93, by hand); at
 * either end it is the printed point; outside it, and on a profile without a sweep, it is refused. A
 * sweep without the profile's own point, with a threshold twice, of one point, or whose point at the
 * profile's threshold is not the profile's, is refused by file and profile. */
START_TEST(profile_sweep)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_msg(decode_parse("threshold:llada2-mini-sweep", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.sweep.n == 2 && dm.tau == 0.95 && dm.tpf == 2.55 && dm.accuracy == 70.15);
    ck_assert_msg(decode_at_threshold(&dm, 0.90, &err) == 0, "%s", err.msg);
    ck_assert_msg(fabs(dm.tpf - 2.93) < 1e-9 && fabs(dm.accuracy - 69.025) < 1e-9, "%g %g", dm.tpf, dm.accuracy);
    ck_assert_int_eq(decode_at_threshold(&dm, 0.85, &err), 0);
    ck_assert(fabs(dm.tpf - 3.31) < 1e-12 && fabs(dm.accuracy - 67.90) < 1e-12);
    ck_assert_int_eq(decode_at_threshold(&dm, 0.95, &err), 0);
    ck_assert(fabs(dm.tpf - 2.55) < 1e-12 && fabs(dm.accuracy - 70.15) < 1e-12);
    ck_assert_int_ne(decode_at_threshold(&dm, 0.8, &err), 0);
    ck_assert_msg(strstr(err.msg, "0.85 to 0.95"), "%s", err.msg);
    ck_assert_int_ne(decode_at_threshold(&dm, 0.96, &err), 0);
    ck_assert_int_eq(decode_parse("threshold:llada-gsm8k", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_at_threshold(&dm, 0.9, &err), 0);
    /* three points, given out of order: the middle segment's line */
    const char *p = tmp_file(0, ".json",
        "{\"a\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6, "
        "\"accuracy\": 60}, {\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}, {\"tau\": 0.7, \"tpf\": 3, \"accuracy\": 76}]},"
        " \"b\": {\"tpf\": 2, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6, \"accuracy\": 60},"
        " {\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}]},"
        " \"c\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6, "
        "\"accuracy\": 60}, {\"tau\": 0.5, \"tpf\": 5, \"accuracy\": 61}, {\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}]},"
        " \"d\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.9, \"tpf\": 2, "
        "\"accuracy\": 80}]},"
        " \"e\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6, "
        "\"accuracy\": 60}, {\"tau\": 0.9, \"tpf\": 2.5, \"accuracy\": 80}]},"
        " \"f\": {\"tpf\": 2, \"tau\": 0.8, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6, "
        "\"accuracy\": 60}, {\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}]},"
        " \"g\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"sweep\": [{\"tau\": 0.5, \"tpf\": 6}, "
        "{\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}]},"
        " \"h\": {\"tpf\": 2, \"tau\": 0.9, \"accuracy\": 80, \"task\": \"T\", \"steps\": [0, 1], \"sweep\": [{\"tau\": 0.5, "
        "\"tpf\": 6, \"accuracy\": 60}, {\"tau\": 0.9, \"tpf\": 2, \"accuracy\": 80}]}}");
    char spec[512];
    snprintf(spec, sizeof spec, "threshold:%s:a", p);
    ck_assert_msg(decode_parse(spec, C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.sweep.n == 3 && dm.sweep.tau[0] == 0.9 && dm.sweep.tau[1] == 0.7 && dm.sweep.tau[2] == 0.5);
    ck_assert_int_eq(decode_at_threshold(&dm, 0.6, &err), 0);
    ck_assert(fabs(dm.tpf - 4.5) < 1e-12 && fabs(dm.accuracy - 68) < 1e-12);
    ck_assert_int_eq(decode_at_threshold(&dm, 0.8, &err), 0);
    ck_assert(fabs(dm.tpf - 2.5) < 1e-12 && fabs(dm.accuracy - 78) < 1e-12);
    const char *why[] = {"own tau", "given twice", "2 to", "not the profile's own", "no point at", "sweep[0]",
                         "measured distribution"};
    for (int k = 0; k < 7; k++) {
        snprintf(spec, sizeof spec, "threshold:%s:%c", p, 'b' + k);
        ck_assert_int_ne(decode_parse(spec, C.datadir, &dm, &err), 0);
        char want[16];
        snprintf(want, sizeof want, "%c.sweep", 'b' + k);
        ck_assert_msg(strstr(err.msg, p) && strstr(err.msg, want) && strstr(err.msg, why[k]), "%c: %s", 'b' + k, err.msg);
    }
}
END_TEST

/* threshold:tau=TAU: the profile measured at the papers' confidence threshold (its "tau"), the
 * first such or the one named; a threshold no profile was measured at is refused naming those. */
START_TEST(parse_tau)
{
    test_config(&C);
    struct decode_model dm, by_name;
    struct ts_err err;
    ck_assert_msg(decode_parse("threshold:tau=0.9", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(decode_parse("threshold:llada-gsm8k", C.datadir, &by_name, &err), 0);
    ck_assert(dm.tpf == by_name.tpf);
    ck_assert_msg(decode_parse("threshold:tau=0.9,llada-math", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(fabs(dm.tpf - 1.97) < 1e-12);
    ck_assert_int_ne(decode_parse("threshold:tau=0.7", C.datadir, &dm, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "llada-gsm8k at 0.9"));
    ck_assert_int_ne(decode_parse("threshold:tau=0.9,sdar-low", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("threshold:tau=1.5", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("threshold:tau=x", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("threshold:0.9", C.datadir, &dm, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "threshold:tau=TAU"));
    const char *p = tmp_file(0, ".json", "{\"mine\": {\"tpf\": 3, \"tau\": 2}}");
    char spec[512];
    snprintf(spec, sizeof spec, "threshold:%s:mine", p);
    ck_assert_int_ne(decode_parse(spec, C.datadir, &dm, &err), 0); /* a tau outside (0, 1] */
    ck_assert_ptr_nonnull(strstr(err.msg, "mine.tau"));
}
END_TEST

/* dInfer's decoders: hierarchical at its Table 1 profiles, credit at a TPF given; a profile is its
 * decoder's alone, and a profile of your own file says which decoder measured it. */
START_TEST(dinfer_decoders)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_msg(decode_parse("hierarchical:dinfer-moe-cache-gsm8k", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(dm.kind, DECODE_HIERARCHICAL);
    ck_assert(fabs(dm.tpf - 3.42) < 1e-12);
    ck_assert_msg(decode_parse("hierarchical:dinfer-moe-nocache-humaneval", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(fabs(dm.tpf - 6.17) < 1e-12);
    ck_assert_msg(decode_parse("threshold:fastdllm-moe-cache-gsm8k", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(fabs(dm.tpf - 2.09) < 1e-12);
    ck_assert_int_eq(decode_parse("credit:3.25", C.datadir, &dm, &err), 0);
    ck_assert_int_eq(dm.kind, DECODE_CREDIT);
    ck_assert(dm.tpf == 3.25);
    /* another decoder's profile is refused, naming the one it belongs to */
    ck_assert_int_ne(decode_parse("threshold:dinfer-moe-cache-gsm8k", C.datadir, &dm, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "TPF of hierarchical decoding, not of threshold (hierarchical:dinfer-moe-cache-gsm8k)"));
    ck_assert_int_ne(decode_parse("hierarchical:llada-gsm8k", C.datadir, &dm, &err), 0);
    ck_assert_int_ne(decode_parse("credit:dinfer-moe-cache-gsm8k", C.datadir, &dm, &err), 0);
    const char *p = tmp_file(0, ".json", "{\"mine\": {\"tpf\": 5, \"decoder\": \"credit\"}, \"bad\": {\"tpf\": 5, "
                                        "\"decoder\": 3}}");
    char spec[512];
    snprintf(spec, sizeof spec, "credit:%s:mine", p);
    ck_assert_msg(decode_parse(spec, C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.tpf == 5);
    snprintf(spec, sizeof spec, "threshold:%s:mine", p);
    ck_assert_int_ne(decode_parse(spec, C.datadir, &dm, &err), 0);
    snprintf(spec, sizeof spec, "credit:%s:bad", p);
    ck_assert_int_ne(decode_parse(spec, C.datadir, &dm, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.decoder: must be a decoder's name"));
}
END_TEST

/* Spiffy: its spec (TPF and the draft blocks D [3]), and its forward's shape: D blocks of rows more,
 * their logits too, every row scoring the real rows' keys (a sparse pattern's where the step has one). */
START_TEST(spiffy_spec_and_shape)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_msg(decode_parse("spiffy:2.9", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.kind == DECODE_SPIFFY && dm.tpf == 2.9 && dm.drafts == 3);
    ck_assert_msg(decode_parse("spiffy:5,8", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.tpf == 5 && dm.drafts == 8);
    const char *bad[] = {"spiffy:0.5", "spiffy:x", "spiffy:3,0", "spiffy:3,65", "spiffy:3,2.5", "spiffy:3,"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_msg(decode_parse(bad[i], C.datadir, &dm, &err) != 0, "%s accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(err.msg, bad[i]));
    }
    ck_assert_int_eq(decode_parse("spiffy:5,8", C.datadir, &dm, &err), 0);
    struct segment s = {.q = 32, .kv = 480, .logit_rows = 32, .phase = PHASE_BLOCK};
    decode_spiffy_shape(&dm, 32, 0, &s);
    ck_assert(s.q == 32 + 8 * 32 && s.logit_rows == 32 + 8 * 32 && s.attn_keys == 512 && s.kv == 480);
    ck_assert_ptr_null(segment_check(&s));
    struct segment sparse = {.q = 400, .kv = 0, .logit_rows = 400, .attn_keys = 128, .phase = PHASE_FULL};
    decode_spiffy_shape(&dm, 32, 0, &sparse);
    ck_assert(sparse.attn_keys == 128 && sparse.q == 400 + 256);
    /* block-causal at 32: 64 rows over 100 cached keys score 100 + 32 and 100 + 64, 148 on average */
    struct segment bc = {.q = 64, .kv = 100, .logit_rows = 64, .phase = PHASE_FULL};
    decode_spiffy_shape(&dm, 32, 32, &bc);
    ck_assert_int_eq(bc.attn_keys, 148);
}
END_TEST

/* WINO: a number or one of its own profiles (its Table 1's step reduction and score), one shadow block
 * beside a step's rows; another decoder's profile refused, and its profiles refused to the others. */
START_TEST(wino_spec_and_profiles)
{
    test_config(&C);
    struct decode_model dm;
    struct ts_err err;
    ck_assert_msg(decode_parse("wino:wino-llada-gsm8k", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.kind == DECODE_WINO && dm.tpf == 6.10 && dm.drafts == 1);
    ck_assert(dm.accuracy == 75.82 && strcmp(dm.task, "GSM8K") == 0);
    ck_assert_msg(decode_parse("wino:2.5", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.tpf == 2.5 && dm.drafts == 1 && dm.accuracy < 0);
    const char *bad[] = {"wino:llada-gsm8k", "threshold:wino-llada-gsm8k", "wino:0.5", "wino:"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++)
        ck_assert_msg(decode_parse(bad[i], C.datadir, &dm, &err) != 0, "%s accepted", bad[i]);
    ck_assert_msg(decode_parse("threshold:d3llm-llada-gsm8k-cot", C.datadir, &dm, &err) == 0, "%s", err.msg);
    ck_assert(dm.tpf == 9.11 && dm.drafts == 0 && dm.accuracy == 73.09);
}
END_TEST

START_TEST(threshold_mean_and_bounds)
{
    struct decode_model dm = {.kind = DECODE_THRESHOLD, .tpf = 2.77};
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = 10;
    r.G = 1 << 20; /* one huge block: no clipping by the masked count */
    r.C = r.G;
    struct policy_cfg pc = {.block_size = 1 << 20};
    policy_req_init(&r, &pc);
    r.rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r.rng, 42);
    double sum = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) {
        int32_t k = decode_tokens(&dm, &r);
        ck_assert_int_ge(k, 1);
        sum += k;
    }
    ck_assert_msg(fabs(sum / n - 2.77) < 0.02, "mean %.4f", sum / n);
    /* at most the masked positions of the block */
    r.G = 64;
    r.C = 64;
    pc.block_size = 32;
    policy_req_init(&r, &pc);
    r.decoded_in_block = 30;
    for (int i = 0; i < 1000; i++)
        ck_assert_int_le(decode_tokens(&dm, &r), 2);
    gsl_rng_free(r.rng);
}
END_TEST

/* The projection's count (decode_tokens_mean): fixed:k's k; a drawn model's TPF on average over
 * consecutive steps, each at least 1; the block's clamp, and the bulk EOS commit, as decode_tokens. */
START_TEST(mean_for_projections)
{
    struct decode_model dm = {.kind = DECODE_THRESHOLD, .tpf = 2.77};
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = 10;
    r.G = r.C = 1 << 20;
    struct policy_cfg pc = {.block_size = 1 << 20};
    policy_req_init(&r, &pc);
    double carry = 0, sum = 0;
    for (int i = 0; i < 1000; i++) {
        const int32_t k = decode_tokens_mean(&dm, &r, &carry);
        ck_assert_int_ge(k, 2);
        ck_assert_int_le(k, 3);
        sum += k;
    }
    ck_assert_double_eq_tol(sum / 1000, 2.77, 1e-3);
    struct decode_model fixed = {.kind = DECODE_FIXED, .k = 4};
    ck_assert_int_eq(decode_tokens_mean(&fixed, &r, &carry), 4);
    r.G = r.C = 64;
    pc.block_size = 32;
    policy_req_init(&r, &pc);
    r.decoded_in_block = 30;
    ck_assert_int_eq(decode_tokens_mean(&fixed, &r, &carry), 2); /* the block's clamp */
    r.C = 40;                                                      /* block 0 all content: 2 left */
    r.cur_block = 1, r.decoded_in_block = 8;                       /* block 1: its content is in */
    ck_assert_int_eq(decode_tokens_mean(&dm, &r, &carry), 24);     /* bulk: the rest at once */
    ck_assert_int_eq(decode_tokens_mean(&fixed, &r, &carry), 4);   /* fixed keeps its schedule */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("decode");
    ck_case(s, parse_specs, 0);
    ck_case(s, parse_errors, 0);
    ck_case(s, parse_tau, 0);
    ck_case(s, dinfer_decoders, 0);
    ck_case(s, spiffy_spec_and_shape, 0);
    ck_case(s, wino_spec_and_profiles, 0);
    ck_case(s, threshold_mean_and_bounds, 0);
    ck_case(s, mean_for_projections, 0);
    ck_case(s, profile_accuracy, 0);
    ck_case(s, profile_sweep, 0);
    return run_suite("decode", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
