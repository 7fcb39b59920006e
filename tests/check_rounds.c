/* check_rounds.c: a runtime priced by its rounds measured whole (sim/cost/rounds.h): the fit recovers
 * the coefficients of rows made from them, a step is priced by the formula worked out here, bad files
 * are refused naming file, line and field, and the shipped SGLang profile fits its own rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rounds.h"
#include "test_util.h"

/* the coefficients the synthetic profile's rows are made from (fdfo denoise) */
static const int32_t G[] = {1, 2, 4, 8};
static const double A[] = {4.0, 5.5, 7.0, 10.0}, C_REQ = 0.4, C_KV = 0.02, H0 = 1.2, H1 = 0.15, H2 = 0.5;

static double fwd_of(int32_t n, int32_t g, double kv_per_req)
{
    int j = 0;
    while (G[j] != g)
        j++;
    return A[j] + C_REQ * (n - g) + C_KV * n * kv_per_req / 1e3;
}

static double host_of(int32_t n, double kv_per_req) { return H0 + H1 * n + H2 * n * kv_per_req / 1e3; }

static const char *HEADER = "device,model,impl,mode,phase,requests,graph,kv_per_request,rounds,forward_ms,host_ms\n";

/* rows for every (n, g) of SGLang's padding up to 8 at three lengths, exact */
static char *synthetic(void)
{
    static const int32_t ns[] = {1, 2, 3, 4, 5, 6, 8}, gs[] = {1, 2, 4, 4, 8, 8, 8};
    static const double kvs[] = {100, 700, 2000};
    size_t cap = 1 << 14, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len, "%s", HEADER);
    for (size_t i = 0; i < TS_ARRAY_LEN(ns); i++)
        for (size_t k = 0; k < TS_ARRAY_LEN(kvs); k++)
            len += (size_t)snprintf(t + len, cap - len, "h200,llada2.0-mini,sglang,fdfo,denoise,%d,%d,%.0f,10,%.9f,%.9f\n",
                                    ns[i], gs[i], kvs[k], fwd_of(ns[i], gs[i], kvs[k]), host_of(ns[i], kvs[k]));
    return t;
}

static void load(const char *text, struct rounds_profile *p)
{
    char *copy = xstrdup(text);
    struct ts_err err = {0};
    ck_assert_msg(rounds_parse("p.csv", copy, "h200", "llada2.0-mini", "sglang", p, &err) == 0, "%s", err.msg);
    free(copy);
}

static struct round_step rs; /* (what step() says of its round) */

/* a step of n requests' rows (each q rows over kv cached keys) and pad graph-padding rows */
static void step(struct step_desc *sd, int n, int q, int kv, int pad, int phase, int mode, bool host)
{
    step_desc_clear(sd);
    test_step_repeat(sd, &(struct segment){.q = q, .kv = kv, .logit_rows = q, .phase = phase}, n);
    if (pad)
        test_step_repeat(sd, &(struct segment){.q = q, .logit_rows = q, .phase = PHASE_BLOCK, .padding = PAD_GRAPH},
                         pad);
    rs = (struct round_step){(int8_t)mode, host};
}

START_TEST(fit_recovers_the_coefficients)
{
    char *t = synthetic();
    struct rounds_profile p;
    load(t, &p);
    free(t);
    const struct rounds_fit *f = &p.fit[ROUND_FDFO][ROUNDS_DENOISE];
    ck_assert_int_eq(f->rows, 21);
    ck_assert_int_eq(f->graphs, 4);
    for (int j = 0; j < 4; j++) {
        ck_assert_int_eq(f->graph[j], G[j]);
        ck_assert_double_eq_tol(f->a[j], A[j], 1e-6);
    }
    ck_assert_double_eq_tol(f->c_req, C_REQ, 1e-6);
    ck_assert_double_eq_tol(f->c_kv, C_KV, 1e-6);
    ck_assert_double_eq_tol(f->h0, H0, 1e-6);
    ck_assert_double_eq_tol(f->h1, H1, 1e-6);
    ck_assert_double_eq_tol(f->h2, H2, 1e-6);
    ck_assert(f->rms_pct < 1e-6);
    ck_assert_int_eq(p.fit[ROUND_SYNC][ROUNDS_DENOISE].rows, 0);
    ck_assert_int_eq(p.fit[ROUND_FDFO][ROUNDS_PREFILL].rows, 0);
}
END_TEST

START_TEST(a_step_is_priced_by_the_formula)
{
    char *t = synthetic();
    struct rounds_profile p;
    load(t, &p);
    free(t);
    struct step_desc sd;
    step_desc_init(&sd);
    double fwd, host;
    bool beyond;
    /* five requests of 32 rows over 300 cached keys as the graph of 8: keys read 5 (300 + 32) */
    step(&sd, 5, 32, 300, 3, PHASE_BLOCK, ROUND_FDFO, true);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, NULL), 0);
    const double k = 5 * 332 / 1e3;
    ck_assert(!beyond); /* (within the measured graphs and keys) */
    ck_assert_double_eq_tol(fwd * 1e3, A[3] + C_REQ * (5 - 8) + C_KV * k, 1e-6);
    ck_assert_double_eq_tol(host * 1e3, H0 + H1 * 5 + H2 * k, 1e-6);
    /* the same round's later forward (no host work), and six unpadded rows: a(6) halfway from a(4) to a(8) */
    step(&sd, 5, 32, 300, 3, PHASE_BLOCK, ROUND_FDFO, false);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, NULL), 0);
    ck_assert_double_eq(host, 0);
    step(&sd, 6, 32, 0, 0, PHASE_BLOCK, ROUND_FDFO, false);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, NULL), 0);
    ck_assert_double_eq_tol(fwd * 1e3, (A[2] + A[3]) / 2 + C_KV * 6 * 32 / 1e3, 1e-6);
    /* a round of 12 lies beyond the measured graphs: refused, or on the line through 4 and 8 */
    struct ts_err err = {0};
    step(&sd, 12, 32, 0, 0, PHASE_BLOCK, ROUND_FDFO, false);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the measured graph batches (1 to 8"));
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, true, &fwd, &host, &beyond, NULL), 0);
    ck_assert_double_eq_tol(fwd * 1e3, A[3] + (A[3] - A[2]) + C_KV * 12 * 32 / 1e3, 1e-6);
    ck_assert(beyond);
    /* requests longer than the measured 2,000 keys: refused, or on the fit's line */
    step(&sd, 2, 32, 2500, 0, PHASE_BLOCK, ROUND_FDFO, true);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "hold 2532 keys each, beyond the measured 2000"));
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, true, &fwd, &host, &beyond, NULL), 0);
    ck_assert_double_eq_tol(host * 1e3, H0 + H1 * 2 + H2 * 2 * 2532 / 1e3, 1e-6);
    ck_assert(beyond);
    step(&sd, 2, 32, 1900, 0, PHASE_BLOCK, ROUND_FDFO, true); /* (1,932 keys: within) */
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, true, &fwd, &host, &beyond, NULL), 0);
    ck_assert(!beyond);
    /* a phase or mode it did not measure, and another scheduler's step, are refused */
    step(&sd, 2, 32, 0, 0, PHASE_PREFILL, ROUND_FDFO, true);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no fdfo prefill rounds measured"));
    step(&sd, 2, 32, 0, 0, PHASE_BLOCK, ROUND_SYNC, true);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no sync denoise rounds measured"));
    step(&sd, 2, 32, 0, 0, PHASE_BLOCK, ROUND_NONE, true);
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "give --scheduler sglang"));
    step_desc_free(&sd);
}
END_TEST

START_TEST(bad_files_are_refused_by_line_and_field)
{
    static const struct {
        const char *row, *want;
    } cases[] = {
        {"h100,llada2.0-mini,sglang,fdfo,denoise,1,1,0,1,4,1\n", "p.csv:2: device: 'h100', but the run's is 'h200'"},
        {"h200,llada-8b,sglang,fdfo,denoise,1,1,0,1,4,1\n", "p.csv:2: model:"},
        {"h200,llada2.0-mini,sglang,eager,denoise,1,1,0,1,4,1\n", "p.csv:2: mode: fdfo or sync"},
        {"h200,llada2.0-mini,sglang,fdfo,decode,1,1,0,1,4,1\n", "p.csv:2: phase: prefill or denoise"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,4,2,0,1,4,1\n", "p.csv:2: graph: not a batch of at least"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,1,-5,1,4,1\n", "p.csv:2: kv_per_request:"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,1,0,1,0,1\n", "p.csv:2: forward_ms: not a positive time"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,1,0,1,4,nan\n", "p.csv:2: host_ms:"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,1\n", "p.csv:2: kv_per_request: missing field"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,1,0,1,inf,1\n", "p.csv:2: forward_ms: not a positive time"},
        {"h200,llada2.0-mini,sglang,fdfo,denoise,1,,0,1,4,1\n", "p.csv:2: graph: not a batch"},
        {"", "p.csv: no rounds measured"},
        /* a graph batch and two more coefficients want three rows at least */
        {"h200,llada2.0-mini,sglang,sync,prefill,1,1,0,1,4,1\nh200,llada2.0-mini,sglang,sync,prefill,1,1,500,1,4,1\n",
         "p.csv: sync prefill rounds: 2 rows for 3 coefficients"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", HEADER, cases[i].row);
        struct rounds_profile p;
        struct ts_err err = {0};
        ck_assert_int_eq(rounds_parse("p.csv", text, "h200", "llada2.0-mini", "sglang", &p, &err), -1);
        ck_assert_msg(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
    }
    /* more graph batches than a fit holds: refused at the row that brings one too many */
    size_t cap = 1 << 16, len = 0;
    char *many = xmalloc(cap);
    len += (size_t)snprintf(many, cap, "%s", HEADER);
    for (int g = 1; g <= ROUNDS_MAX_GRAPHS + 1; g++)
        len += (size_t)snprintf(many + len, cap - len, "h200,llada2.0-mini,sglang,fdfo,denoise,%d,%d,0,1,4,1\n", g, g);
    struct rounds_profile mp;
    struct ts_err merr = {0};
    ck_assert_int_eq(rounds_parse("p.csv", many, "h200", "llada2.0-mini", "sglang", &mp, &merr), -1);
    free(many);
    ck_assert_msg(strstr(merr.msg, "p.csv:66: graph: more than 64 graph batches in fdfo denoise rounds"), "%s", merr.msg);
    char text[] = "device,model,impl,mode,requests\nh200\n";
    struct rounds_profile p;
    struct ts_err err = {0};
    ck_assert_int_eq(rounds_parse("p.csv", text, "h200", "llada2.0-mini", "sglang", &p, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "p.csv:1: header: column 'phase' missing"));
}
END_TEST

START_TEST(the_shipped_profile_fits_its_rows)
{
    char path[256];
    rounds_shipped_path("sim/data", "h200", "llada2.0-mini", "sglang", path, sizeof path);
    struct rounds_profile p;
    struct ts_err err = {0};
    ck_assert_msg(rounds_load(path, "h200", "llada2.0-mini", "sglang", &p, &err) == 0, "%s", err.msg);
    for (int m = ROUND_FDFO; m < ROUND_MODES; m++)
        for (int ph = 0; ph < ROUNDS_PHASES; ph++) {
            const struct rounds_fit *f = &p.fit[m][ph];
            ck_assert_int_gt(f->rows, 20);
            ck_assert_msg(f->rms_pct < 15, "mode %d phase %d: the fit's residual %.1f%%", m, ph, f->rms_pct);
            ck_assert_int_eq(f->graph[0], 1);
            ck_assert_int_ge(f->graph[f->graphs - 1], 24);
            for (int j = 1; j < f->graphs; j++) /* a larger graph's forward takes longer */
                ck_assert_msg(f->a[j] > f->a[j - 1], "mode %d phase %d: a(%d) %.2f <= a(%d) %.2f", m, ph,
                              f->graph[j], f->a[j], f->graph[j - 1], f->a[j - 1]);
        }
    /* SGLang's measured first-done-first-out round of one request: a forward of 4.4-4.9 ms (sglang-h200) */
    struct step_desc sd;
    step_desc_init(&sd);
    step(&sd, 1, 32, 256, 0, PHASE_BLOCK, ROUND_FDFO, true);
    double fwd, host;
    bool beyond;
    ck_assert_int_eq(rounds_price(&p, &sd, &rs, false, &fwd, &host, &beyond, NULL), 0);
    ck_assert_msg(fwd > 4.2e-3 && fwd < 5.0e-3 && host > 1e-3 && host < 2.5e-3, "%g %g", fwd, host);
    step_desc_free(&sd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rounds");
    ck_case(s, fit_recovers_the_coefficients, 0);
    ck_case(s, a_step_is_priced_by_the_formula, 0);
    ck_case(s, bad_files_are_refused_by_line_and_field, 0);
    ck_case(s, the_shipped_profile_fits_its_rows, 0);
    return run_suite("rounds", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
