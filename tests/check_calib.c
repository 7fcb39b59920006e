/*
 * check_calib.c: fitting the cost model from a per-op profile. Synthetic profiles with planted
 * coefficients are recovered exactly; interpolation stays between the measured points, is flat below
 * the smallest and refuses (or, when asked, extrapolates) beyond the largest; bad profiles are
 * refused naming what is wrong; profiles merge row by row to their medians; the shipped H200
 * calibration loads and prices a simulation.
 */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "calib.h"
#include "attn_rules.h"
#include "sim_internal.h"
#include "test_util.h"

/* planted per-op laws (ms) */
static double tok_ms(enum cost_op op, double T) { return 0.01 * (op + 1) + 1e-4 * (op + 1) * T; }
static double lm_ms(double rows) { return 0.25 + 3e-4 * rows; }
static bool on_mma(int segs, int q, int kv);
/* (the pairs and rows terms are the wgmma kernel's segments' alone: the mma.sync kernel's work is
 * its tiles' keys) */
static double attn_ms(double segs, double q, double kv)
{
    const double wgmma = on_mma((int)segs, (int)q, (int)kv) ? 0 : 2e-7 * segs * q * (q + kv) + 1e-4 * segs * q;
    return wgmma + 3e-5 * segs * ceil(q / 64) * (q + kv) + 0.02 * segs + 4e-5 * (q + kv) + 0.3;
}

static void add(struct calib_data *d, int segs, int q, int kv, int R, enum cost_op op, double ms)
{
    ts_grow((void **)&d->rows, &d->cap, d->n + 1, sizeof *d->rows);
    d->rows[d->n++] = (struct calib_row){.segs = segs, .q = q, .kv = kv, .logit_rows = R, .op = op, .ms = ms};
}

/* A synthetic profile of llada-8b shapes on an H200, following the planted laws exactly. */
/* TESSERA_DATA pointed at a test's own folder, and put back as it was (set or not) */
struct data_env {
    bool had;
    char saved[512];
};
static void data_env_set(struct data_env *e, const char *dir)
{
    const char *old = getenv("TESSERA_DATA");
    e->had = old != NULL;
    snprintf(e->saved, sizeof e->saved, "%s", old ? old : "");
    setenv("TESSERA_DATA", dir, 1);
}
static void data_env_restore(const struct data_env *e)
{
    if (e->had)
        setenv("TESSERA_DATA", e->saved, 1);
    else
        unsetenv("TESSERA_DATA");
}

static void planted(struct calib_data *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->device, sizeof d->device, "NVIDIA H200");
    snprintf(d->model, sizeof d->model, "llada-8b");
    /* (200 rows: a wgmma segment whose pairs are not 128 times its 128-row tiles' keys) */
    const int qs[] = {1, 8, 32, 128, 200, 512}, kvs[] = {0, 480, 2048};
    const enum cost_op tok[] = {OP_EMBED, OP_NORM, OP_QKV, OP_ROPE, OP_OPROJ, OP_GATE_UP, OP_ACT, OP_DOWN};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++)
            for (int segs = 1; segs <= 16; segs *= 16) {
                int q = qs[a], kv = kvs[b];
                double T = (double)segs * q;
                for (size_t k = 0; k < sizeof tok / sizeof *tok; k++) {
                    /* gate_up must look like llada-8b on an H200 to pass validation */
                    double ms = tok[k] == OP_GATE_UP ? 1.5 + 7e-3 * T : tok_ms(tok[k], T);
                    add(d, segs, q, kv, 0, tok[k], ms);
                }
                add(d, segs, q, kv, 0, OP_ATTN, attn_ms(segs, q, kv));
                add(d, segs, q, kv, q, OP_LM_HEAD, lm_ms(T));
                add(d, segs, q, kv, q, OP_SAMPLE, lm_ms(T) / 10);
            }
    for (size_t i = 0; i < d->n; i++)
        d->rows[i].total_ms = 0;
}

START_TEST(planted_coefficients_recovered)
{
    struct calib_data d;
    planted(&d);
    struct ts_err err;
    ck_assert_msg(calib_data_validate(&d, "h200", &err) == 0, "%s", err.msg);
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    /* a step of mixed segments: every op recovered, attention by its planted least squares */
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 100;
    struct segment a = {.req_id = 0, .q = 300, .kv = 700, .logit_rows = 150, .phase = PHASE_REFRESH};
    struct segment b = {.req_id = 1, .q = 32, .kv = 1500, .logit_rows = 32, .phase = PHASE_REUSE};
    step_desc_add(&sd, &a);
    step_desc_add(&sd, &b);
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    /* two segments: sums add, the longest keys (1532) and the constant count once */
    double attn = attn_ms(1, 300, 700) + attn_ms(1, 32, 1500) - 4e-5 * 1000 - 0.3;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-9 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    /* linear laws are interpolated exactly by a monotone spline through their points */
    ck_assert(fabs(bd.op_s[OP_QKV] * 1e3 - tok_ms(OP_QKV, 332)) < 1e-9);
    ck_assert(fabs(bd.op_s[OP_ACT] * 1e3 - tok_ms(OP_ACT, 332)) < 1e-9);
    /* 182 logit rows in chunks of 100: f(100) + f(82) */
    ck_assert(fabs(bd.op_s[OP_LM_HEAD] * 1e3 - (lm_ms(100) + lm_ms(82))) < 1e-9);
    double sum = 0;
    for (int op = 0; op < OP_COUNT; op++)
        sum += bd.op_s[op];
    ck_assert(fabs(sum - secs) < 1e-12);
    /* below the smallest profiled step: the smallest time; beyond the largest: refused... */
    step_desc_clear(&sd);
    struct segment big = {.q = 9000, .logit_rows = 0, .phase = PHASE_FULL};
    step_desc_add(&sd, &big);
    ck_assert_int_ne(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "beyond the profiled range"));
    /* ...unless extrapolation is asked for (linear, here exact) */
    ck_assert_int_eq(calib_step_s(c, &sd, true, &secs, &bd, &err), 0);
    ck_assert(fabs(bd.op_s[OP_QKV] * 1e3 - tok_ms(OP_QKV, 9000)) < 1e-6);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* Past the profiled range, by hand: a token op extrapolates along the line through its two largest
 * profiled sizes (QKV planted here on a curve bending upward, 0.03 + 3e-4 T + 1e-8 T^2 ms, its largest
 * sizes 3,200 and 8,192 tokens); logit rows past the largest profiled chunk are priced as that many
 * chunks of it, f(2048) R / 2048 (the profile's logits run in chunks of PROFILE_LOGIT_CHUNK = 2,048
 * rows: its point at 2,048 rows is the mean of its step of 2,048 logit rows and a chunk of its step of
 * 8,192, a quarter of that step's time). */
static double bent_ms(double T) { return 0.03 + 3e-4 * T + 1e-8 * T * T; }

START_TEST(beyond_the_profile_by_hand)
{
    struct calib_data d;
    planted(&d);
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].op == OP_QKV)
            d.rows[i].ms = bent_ms((double)d.rows[i].segs * d.rows[i].q);
    struct ts_err err;
    ck_assert_msg(calib_data_validate(&d, "h200", &err) == 0, "%s", err.msg);
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 0; /* the logits in one chunk */
    step_desc_add(&sd, &(struct segment){.q = 10000, .logit_rows = 10000, .phase = PHASE_FULL});
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, true, &secs, &bd, &err), 0);
    const double qkv = bent_ms(8192) + (bent_ms(8192) - bent_ms(3200)) / (8192 - 3200) * (10000 - 8192);
    ck_assert_msg(fabs(bd.op_s[OP_QKV] * 1e3 - qkv) < 1e-9 * qkv, "QKV %.9g ms, by hand %.9g", bd.op_s[OP_QKV] * 1e3,
                  qkv);
    const double lm = (lm_ms(2048) + lm_ms(8192) / 4) / 2 * 10000 / 2048;
    ck_assert_msg(fabs(bd.op_s[OP_LM_HEAD] * 1e3 - lm) < 1e-9 * lm, "LM head %.9g ms, by hand %.9g",
                  bd.op_s[OP_LM_HEAD] * 1e3, lm);
    ck_assert(bd.beyond); /* (past the profile: said) */
    /* at the largest profiled size exactly, and a row short of it: within the profile, not said */
    for (int32_t q = 8191; q <= 8192; q++) {
        step_desc_clear(&sd);
        step_desc_add(&sd, &(struct segment){.q = q, .logit_rows = 0, .phase = PHASE_FULL});
        ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
        ck_assert_msg(!bd.beyond, "%d tokens, the profile's largest step %s, said beyond it", q, q == 8192 ? "exactly" : "less one");
        ck_assert_int_eq(calib_step_s(c, &sd, true, &secs, &bd, &err), 0);
        ck_assert(!bd.beyond);
    }
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* Block-causal attention (step_desc.attn_block): a prefill is priced by the pairs and the tiles'
 * keys the kernels run, not the bidirectional ones; a block of at most attn_block rows over its
 * cache is priced as the bidirectional Reuse it equals. */
START_TEST(block_causal_attention_priced_by_its_pairs)
{
    struct calib_data d;
    planted(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 100;
    sd.attn_block = 32;
    struct segment p = {.req_id = 0, .q = 512, .kv = 0, .kv_write = 512, .phase = PHASE_PREFILL};
    step_desc_add(&sd, &p);
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    /* 64-row tile t runs to key 64 (t + 1): 64 x 36 keys over the 8 tiles, against 8 x 512 */
    double attn = 2e-7 * attn_pairs(512, 0, 32) + 3e-5 * 64 * 36 + 1e-4 * 512 + 0.02 + 4e-5 * 512 + 0.3;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    ck_assert(bd.op_s[OP_ATTN] * 1e3 < attn_ms(1, 512, 0) - 0.07); /* the bidirectional prefill */
    step_desc_clear(&sd);
    struct segment b = {.req_id = 1, .q = 32, .kv = 480, .logit_rows = 32, .phase = PHASE_BLOCK};
    step_desc_add(&sd, &b);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    attn = attn_ms(1, 32, 480);
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    /* a sparse pattern (attn_keys): each of the 512 rows over its 128 keys, as a segment of rows over
     * 128 keys prices them: the law's pairs, tiles' keys and longest keys at 128 */
    step_desc_clear(&sd);
    sd.attn_block = 0;
    struct segment sp = {.req_id = 2, .q = 512, .logit_rows = 512, .attn_keys = 128, .phase = PHASE_FULL};
    step_desc_add(&sd, &sp);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    attn = (on_mma(1, 512, 128 - 512) ? 0 : 2e-7 * 512 * 128 + 1e-4 * 512) + 3e-5 * 8 * 128 + 0.02 + 4e-5 * 128 + 0.3;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    ck_assert(bd.op_s[OP_ATTN] * 1e3 < attn_ms(1, 512, 0));
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

START_TEST(monotone_between_points)
{
    struct calib_data d;
    planted(&d);
    /* make qkv a curve that bends: the interpolant must stay monotone between the points */
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].op == OP_QKV) {
            double T = (double)d.rows[i].segs * d.rows[i].q;
            d.rows[i].ms = T < 100 ? 1.0 : 1.0 + sqrt(T - 100);
        }
    struct calib *c;
    ck_assert_int_eq(calib_fit(&d, &c, NULL), 0);
    double prev = 0;
    for (int T = 1; T <= 8192; T += 7) {
        struct step_desc sd;
        step_desc_init(&sd);
        struct segment s = {.q = T, .phase = PHASE_FULL};
        step_desc_add(&sd, &s);
        double secs;
        struct cost_breakdown bd;
        ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, NULL), 0);
        ck_assert(bd.op_s[OP_QKV] >= prev - 1e-15);
        prev = bd.op_s[OP_QKV];
        step_desc_free(&sd);
    }
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* A step run in FFN chunks (--ffn-chunks, Mosaic's lazy chunking) prices its dense FFN ops piece by
 * piece, as the engine runs them: ceil(T / chunks) rows a piece, the last the rest; the other ops over
 * the whole step. The planted laws are affine, so each piece pays the intercept again. */
START_TEST(ffn_chunks_priced_piece_by_piece)
{
    struct calib_data d;
    planted(&d);
    struct calib *c;
    ck_assert_int_eq(calib_fit(&d, &c, NULL), 0);
    const double gu = 1.5, gu_slope = 7e-3;
    const int chunks[] = {1, 4, 3};
    const double gate_up[] = {gu + gu_slope * 512, 4 * (gu + gu_slope * 128),
                              2 * (gu + gu_slope * 171) + gu + gu_slope * 170};
    const double act[] = {tok_ms(OP_ACT, 512), 4 * tok_ms(OP_ACT, 128), 2 * tok_ms(OP_ACT, 171) + tok_ms(OP_ACT, 170)};
    for (int i = 0; i < 3; i++) {
        struct step_desc sd;
        step_desc_init(&sd);
        struct segment s = {.q = 512, .phase = PHASE_FULL};
        step_desc_add(&sd, &s);
        sd.ffn_chunks = chunks[i];
        double secs;
        struct cost_breakdown bd;
        ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, NULL), 0);
        ck_assert_double_eq_tol(bd.op_s[OP_GATE_UP] * 1e3, gate_up[i], 1e-9);
        ck_assert_double_eq_tol(bd.op_s[OP_ACT] * 1e3, act[i], 1e-9);
        ck_assert_double_eq_tol(bd.op_s[OP_QKV] * 1e3, tok_ms(OP_QKV, 512), 1e-9);
        step_desc_free(&sd);
    }
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

START_TEST(ops_scaled_to_uninstrumented_totals)
{
    /* per-op times carry the event overhead; total_ms is the step without it: every op of a step
     * is scaled by total/sum, so a step of the profile is priced at its un-instrumented time */
    struct calib_data d;
    planted(&d);
    struct calib *plain;
    ck_assert_int_eq(calib_fit(&d, &plain, NULL), 0);
    for (size_t i = 0; i < d.n; i++) {
        double sum = 0;
        for (size_t j = 0; j < d.n; j++)
            if (d.rows[j].segs == d.rows[i].segs && d.rows[j].q == d.rows[i].q && d.rows[j].kv == d.rows[i].kv &&
                d.rows[j].logit_rows == d.rows[i].logit_rows)
                sum += d.rows[j].ms;
        d.rows[i].total_ms = 0.8 * sum;
    }
    struct calib *scaled;
    ck_assert_int_eq(calib_fit(&d, &scaled, NULL), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment s = {.q = 128, .kv = 480, .logit_rows = 64, .phase = PHASE_REUSE};
    step_desc_add(&sd, &s);
    double a, b;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(plain, &sd, false, &a, &bd, NULL), 0);
    ck_assert_int_eq(calib_step_s(scaled, &sd, false, &b, &bd, NULL), 0);
    ck_assert_msg(fabs(b - 0.8 * a) < 1e-9 * a, "%g vs 0.8 * %g", b, a);
    calib_free(scaled);
    /* a total above the ops' sum scales them up the same way */
    for (size_t i = 0; i < d.n; i++)
        d.rows[i].total_ms *= 1.25 / 0.8;
    ck_assert_int_eq(calib_fit(&d, &scaled, NULL), 0);
    ck_assert_int_eq(calib_step_s(scaled, &sd, false, &b, &bd, NULL), 0);
    ck_assert_msg(fabs(b - 1.25 * a) < 1e-9 * a, "%.12g vs 1.25 * %.12g", b, a);
    step_desc_free(&sd);
    calib_free(scaled);
    calib_free(plain);
    calib_data_free(&d);
}
END_TEST

/* Transfer to another GPU: to the same GPU nothing changes; to an L40S a large compute-bound GEMM
 * slows by the ratio of peak FLOP/s, and the result passes the L40S's own plausibility check. */
START_TEST(transfer_scales_by_roofline_ratios)
{
    struct calib_data d, same, l40s;
    planted(&d);
    for (size_t i = 0; i < d.n; i++) /* each step timed whole: its ops' sum */
        d.rows[i].total_ms = calib_step_ops_ms(&d, &d.rows[i]);
    struct ts_err err;
    ck_assert_msg(calib_data_transfer(&d, "h200", "h200", "tessera", &same, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(same.n, d.n);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(fabs(same.rows[i].ms - d.rows[i].ms) <= 1e-12 * d.rows[i].ms);
    ck_assert_int_eq(calib_data_transfer(&d, "h200", "l40s", "tessera", &l40s, &err), 0);
    struct gpu_table *t = gpu_table_create();
    struct gpu_spec a, b;
    ck_assert_int_eq(gpu_lookup(t, "h200", &a, NULL), 0);
    ck_assert_int_eq(gpu_lookup(t, "l40s", &b, NULL), 0);
    gpu_table_destroy(t);
    int checked = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].op == OP_GATE_UP && d.rows[i].segs * d.rows[i].q >= 8192) {
            double r = l40s.rows[i].ms / d.rows[i].ms, want = a.bf16_flops / b.bf16_flops;
            ck_assert_msg(fabs(r / want - 1) < 0.02, "gate_up ratio %g, peak ratio %g", r, want);
            checked++;
        }
    ck_assert_int_gt(checked, 0);
    /* each step's total scales as its ops' sum does, not by the step's roofline ratio */
    for (size_t i = 0; i < d.n; i++) {
        const double was = calib_step_ops_ms(&d, &d.rows[i]), now = calib_step_ops_ms(&l40s, &l40s.rows[i]);
        ck_assert_msg(fabs(l40s.rows[i].total_ms - d.rows[i].total_ms * now / was) <= 1e-9 * l40s.rows[i].total_ms,
                      "row %zu", i);
    }
    ck_assert_ptr_nonnull(strstr(l40s.device, "roofline transfer"));
    ck_assert_msg(calib_data_validate(&l40s, "l40s", &err) == 0, "%s", err.msg);
    /* the band: none from a GPU to itself; around the price for another GPU, its ends the price
     * with every op scaled by the other resource's ratio */
    struct calib *cs, *cl;
    ck_assert_int_eq(calib_fit(&same, &cs, &err), 0);
    ck_assert_int_eq(calib_fit(&l40s, &cl, &err), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 512;
    step_shape_desc(&(struct step_shape){.segs = 16, .q = 512, .kv = 0, .logit_rows = 512}, 0, &sd);
    double mid, lo, hi;
    ck_assert_int_eq(calib_transfer_band(cs, "llada-8b", "h200", "h200", "tessera", &sd, &mid, &lo, &hi, &err), 0);
    ck_assert(fabs(lo - mid) < 1e-9 * mid && fabs(hi - mid) < 1e-9 * mid);
    ck_assert_int_eq(calib_transfer_band(cl, "llada-8b", "h200", "l40s", "tessera", &sd, &mid, &lo, &hi, &err), 0);
    double rc = a.bf16_flops / b.bf16_flops, rm = a.mem_bw / b.mem_bw;
    ck_assert_msg(lo < mid && mid <= hi * (1 + 1e-9) && lo >= mid * fmin(rc, rm) / fmax(rc, rm) * (1 - 1e-9),
                  "band [%g, %g] around %g", lo, hi, mid);
    /* a compute-bound Refresh on the L40S (less bandwidth per FLOP than the H200) can only get
     * slower if its kernels were memory-limited: the high end is well above the price */
    ck_assert(hi > 1.2 * mid);
    step_desc_free(&sd);
    calib_free(cs);
    calib_free(cl);
    calib_data_free(&same);
    ck_assert_int_ne(calib_data_transfer(&d, "h200", "no-such-gpu", "tessera", &same, &err), 0);
    /* between two GPUs whose ceilings were measured (DATADIR/gpu_measured.csv) a large GEMM scales
     * by the GEMM rates they reach, not by the rates they hold under their power limits nor by their
     * datasheet peaks (equal for the H200 and the H100): planted ceilings that tell the three apart */
    const char *data = tmp_dir(0);
    char path[300];
    snprintf(path, sizeof path, "%s/gpu_measured.csv", data);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("gpu,gemm_tflops,gemm_held_tflops,copy_tbs,record\nh100,900,500,3.0,planted\nh200,600,700,4.2,planted\n", f);
    fclose(f);
    struct data_env env;
    data_env_set(&env, data);
    struct calib_data h100;
    ck_assert_msg(calib_data_transfer(&d, "h200", "h100", "tessera", &h100, &err) == 0, "%s", err.msg);
    data_env_restore(&env);
    unlink(path);
    rmdir(data);
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].op == OP_GATE_UP && d.rows[i].segs * d.rows[i].q >= 8192) {
            const double r = h100.rows[i].ms / d.rows[i].ms, want = 600.0 / 900.0;
            ck_assert_msg(fabs(r / want - 1) < 0.02, "gate_up ratio %g, the reached rates' %g", r, want);
        }
    calib_data_free(&h100);
    calib_data_free(&l40s);
    calib_data_free(&d);
}
END_TEST

/* The profile without op's rows */
static void drop_op(struct calib_data *d, enum cost_op op)
{
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].op != op)
            d->rows[k++] = d->rows[i];
    d->n = k;
}

START_TEST(bad_profiles_are_refused)
{
    struct calib_data d;
    struct ts_err err;
    planted(&d);
    /* claims llada-8b on an H200, but its GEMMs are 100x faster than the roofline allows */
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].op == OP_GATE_UP)
            d.rows[i].ms /= 100;
    ck_assert_int_ne(calib_data_validate(&d, "h200", &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "another model or GPU"));
    calib_data_free(&d);
    /* an op missing */
    planted(&d);
    drop_op(&d, OP_DOWN);
    ck_assert_int_ne(calib_data_validate(&d, "h200", &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "no rows for op down"));
    calib_data_free(&d);
    /* act missing altogether is a fused FFN's profile (tessera-fused): accepted, priced without it */
    planted(&d);
    drop_op(&d, OP_ACT);
    ck_assert_msg(calib_data_validate(&d, "h200", &err) == 0, "%s", err.msg);
    struct calib *fused = NULL;
    ck_assert_msg(calib_fit(&d, &fused, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment seg = {.req_id = 0, .q = 512, .phase = PHASE_REFRESH};
    step_desc_add(&sd, &seg);
    struct cost_breakdown bd;
    double t;
    ck_assert_msg(calib_step_s(fused, &sd, true, &t, &bd, &err) == 0, "%s", err.msg);
    ck_assert(t > 0 && bd.op_s[OP_ACT] == 0 && bd.op_s[OP_GATE_UP] > 0);
    step_desc_free(&sd);
    calib_free(fused);
    calib_data_free(&d);
    /* two profiles in one file: every op of a step measured twice (the step sums would double) */
    planted(&d);
    size_t n0 = d.n;
    ts_grow((void **)&d.rows, &d.cap, 2 * n0, sizeof *d.rows);
    memcpy(d.rows + n0, d.rows, n0 * sizeof *d.rows);
    d.n = 2 * n0;
    ck_assert_int_ne(calib_data_validate(&d, "h200", &err), 0);
    ck_assert_msg(strstr(err.msg, "two profiles in one file?"), "%s", err.msg);
    char want[64];
    snprintf(want, sizeof want, "data rows 1 and %zu both measure op", n0 + 1);
    ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
    calib_data_free(&d);
    /* CSV errors name file, line and field */
    const char *p = tmp_file(0, ".csv", "device,model,segs,q,kv,logit_rows,op,ms,total_ms\n"
                                        "\"GPU, one\",llada-8b,16,32,0,0,qkv,0.5,1\n"
                                        "\"GPU, one\",llada-8b,16,x,0,0,qkv,0.5,1\n");
    ck_assert_int_ne(calib_data_load(p, &d, &err), 0);
    ck_assert_msg(strstr(err.msg, ":3: q: not a count ('x')"), "%s", err.msg);
    p = tmp_file(0, ".csv", "device,model,segs,q,kv,logit_rows,op,ms,total_ms\n"
                            "A,llada-8b,16,32,0,0,qkv,0.5,1\nB,llada-8b,16,32,0,0,qkv,0.5,1\n");
    ck_assert_int_ne(calib_data_load(p, &d, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "one calibration holds one GPU"));
    p = tmp_file(0, ".csv", "device,model,segs,q,kv,logit_rows,op,ms,total_ms\nA,llada-8b,16,32,0,0,fft,0.5,1\n");
    ck_assert_int_ne(calib_data_load(p, &d, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown op 'fft'"));
    p = tmp_file(0, ".csv", "device,segs\n");
    ck_assert_int_ne(calib_data_load(p, &d, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "column 'model' missing"));
}
END_TEST

/* Writes d as a calibration CSV at path and loads it back into e, both succeeding. */
static void write_and_load(const struct calib_data *d, const char *path, struct calib_data *e)
{
    struct ts_err err;
    ck_assert_int_eq(calib_data_write(d, path, NULL), 0);
    ck_assert_msg(calib_data_load(path, e, &err) == 0, "%s", err.msg);
}

START_TEST(roundtrip_csv)
{
    struct calib_data d, e;
    planted(&d);
    const char *p = tmp_path(0, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.n, d.n);
    ck_assert_str_eq(e.device, d.device);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(e.rows[i].op == d.rows[i].op && fabs(e.rows[i].ms - d.rows[i].ms) <= 1e-8 * d.rows[i].ms);
    calib_data_free(&d);
    calib_data_free(&e);
}
END_TEST

/* A planted selection law: kv_select = 0.05 + 0.01 segs + 2e-5 candidates + 1e-5 max candidates
 * (uniform), twice that per head. */
static double select_ms_law(int heads, int segs, int q)
{
    const double cand = q - PROFILE_SCORE_ROWS;
    return (heads ? 2.0 : 1.0) * (0.05 + 0.01 * segs + 2e-5 * segs * cand + 1e-5 * cand);
}

static void planted_select(struct calib_data *d, bool per_head_too)
{
    const int qs[] = {256, 1024, 4096}, segss[] = {1, 4, 16};
    for (int heads = 0; heads <= (int)per_head_too; heads++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                if (qs[a] * segss[b] > 16384)
                    continue;
                add(d, segss[b], qs[a], 0, 0, OP_KV_SELECT, select_ms_law(heads, segss[b], qs[a]));
                d->rows[d->n - 1].keep = (qs[a] - PROFILE_SCORE_ROWS) / 2;
                d->rows[d->n - 1].sel_heads = heads;
            }
}

/* The selection's law recovered from selecting profile steps, for the kind profiled; a kind the
 * profile lacks is refused by name; the keep and sel_heads columns survive a CSV round trip. */
START_TEST(selection_priced_from_its_steps)
{
    struct calib_data d, e;
    planted(&d);
    planted_select(&d, false);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    ck_assert(calib_prices_selection(c, false) && !calib_prices_selection(c, true));
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment a = {.req_id = 0, .q = 700, .kv_write = 300, .phase = PHASE_REFRESH, .keep = 300, .score_rows = 32};
    struct segment b = {.req_id = 1, .q = 300, .kv_write = 100, .phase = PHASE_REFRESH, .keep = 100, .score_rows = 32};
    step_desc_add(&sd, &a);
    step_desc_add(&sd, &b);
    double secs, want = 0.05 + 0.01 * 2 + 2e-5 * (668 + 268) + 1e-5 * 668;
    struct cost_breakdown bd;
    ck_assert_msg(calib_step_s(c, &sd, false, &secs, &bd, &err) == 0, "%s", err.msg);
    ck_assert_msg(fabs(bd.op_s[OP_KV_SELECT] * 1e3 - want) < 1e-6 * want, "%g vs %g", bd.op_s[OP_KV_SELECT] * 1e3, want);
    sd.select_heads = true;
    ck_assert_int_ne(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "per-head selection"));
    calib_free(c);
    /* a step without selection pays none */
    step_desc_clear(&sd);
    sd.select_heads = false;
    struct segment r = {.req_id = 0, .q = 32, .kv = 500, .phase = PHASE_REUSE};
    step_desc_add(&sd, &r);
    calib_data_free(&d);
    planted(&d);
    planted_select(&d, true);
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    ck_assert(calib_prices_selection(c, false) && calib_prices_selection(c, true));
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert(bd.op_s[OP_KV_SELECT] == 0);
    calib_free(c);
    const char *p = tmp_path(0, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.n, d.n);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(e.rows[i].keep == d.rows[i].keep && e.rows[i].sel_heads == d.rows[i].sel_heads);
    step_desc_free(&sd);
    calib_data_free(&d);
    calib_data_free(&e);
}
END_TEST

/* A planted feature-cache law over dLLM-Cache profile steps (engine profile's fc grid):
 * feat_cache = 0.3 + 0.7 probing + 1.4e-3 probe rows + 3e-4 computed rows + 2e-4 rows
 * + 8e-4 (sum probe^2) / 1000; the fc steps' other ops kept out of their curves. */
static double fc_law(int segs, int q, int rows, int probe)
{
    return 0.3 + 0.7 * (probe > 0) + 1.4e-3 * segs * probe + 3e-4 * segs * q + 2e-4 * segs * rows +
           8e-4 * segs * (double)probe * probe / 1000;
}

static void add_fc(struct calib_data *d, int segs, int q, int rows, int probe, enum cost_op op, double ms)
{
    add(d, segs, q, rows - q, 0, op, ms);
    d->rows[d->n - 1].fc_rows = rows;
    d->rows[d->n - 1].probe = probe;
}

static void planted_fc(struct calib_data *d)
{
    const int segss[] = {1, 4, 16}, Gs[] = {64, 256, 1024}, Ps[] = {128, 512};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) {
                const int segs = segss[a], G = Gs[b], rows = Ps[c] + G;
                if (segs * rows > 16384)
                    continue;
                const int shapes[3][2] = {{G / 4, G}, {G, 0}, {c ? rows : G / 2, c ? 0 : G}};
                for (int k = 0; k < 3; k++) {
                    const int q = shapes[k][0], probe = shapes[k][1];
                    add_fc(d, segs, q, rows, probe, OP_FEAT_CACHE, fc_law(segs, q, rows, probe));
                    add_fc(d, segs, q, rows, probe, OP_QKV, 1000.0); /* never a point of the qkv curve */
                }
            }
}

/* The feature cache's law recovered from the fc steps and priced on a step of mixed dLLM-Cache
 * segments (a partial update, a response refresh, a whole refresh); without such steps it is
 * composed; the columns survive a CSV round trip and an fc part merges with a whole profile; a row
 * whose rows are not q + kv, or whose probe is below q, is refused by name. */
START_TEST(feature_cache_priced_from_its_steps)
{
    struct calib_data d, e, part;
    planted(&d);
    struct ts_err err;
    struct calib *plain, *c;
    ck_assert_msg(calib_fit(&d, &plain, &err) == 0, "%s", err.msg);
    ck_assert(!calib_prices_feature_cache(plain));
    planted_fc(&d);
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    ck_assert(calib_prices_feature_cache(c));
    struct cost_ctx cx = {.model = *model_find("llada-8b")};
    struct gpu_table *t = gpu_table_create();
    ck_assert_int_eq(gpu_lookup(t, "h200", &cx.gpu, NULL), 0);
    gpu_table_destroy(t);
    ck_assert_int_eq(impl_resolve("tessera", &cx.impl, NULL), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 1;
    sd.cache_outputs = true;
    step_desc_add_fc(&sd, 0, 50, 556, 256, 0);
    step_desc_add_fc(&sd, 1, 256, 556, 0, 0);
    step_desc_add_fc(&sd, 2, 300, 300, 0, 0);
    const double want = 0.3 + 0.7 + 1.4e-3 * 256 + 3e-4 * (50 + 256 + 300) + 2e-4 * (556 + 556 + 300) +
                        8e-4 * 256.0 * 256 / 1000;
    struct cost_breakdown bd, bp;
    double secs;
    ck_assert_msg(calib_step_ctx_s(&cx, c, &sd, false, &secs, &bd, &err) == 0, "%s", err.msg);
    ck_assert_msg(fabs(bd.op_s[OP_FEAT_CACHE] * 1e3 - want) < 1e-6 * want, "%g vs %g", bd.op_s[OP_FEAT_CACHE] * 1e3,
                  want);
    ck_assert_msg(calib_step_ctx_s(&cx, plain, &sd, false, &secs, &bp, &err) == 0, "%s", err.msg);
    ck_assert(bp.op_s[OP_FEAT_CACHE] > 0 && bp.op_s[OP_FEAT_CACHE] != bd.op_s[OP_FEAT_CACHE]); /* composed */
    ck_assert(bp.op_s[OP_QKV] == bd.op_s[OP_QKV]); /* the fc steps' qkv rows are no curve points */
    const char *p = tmp_path(0, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.n, d.n);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(e.rows[i].fc_rows == d.rows[i].fc_rows && e.rows[i].probe == d.rows[i].probe);
    calib_data_free(&e);
    /* an fc part (engine profile --grid fc) merges with the whole profile */
    memset(&part, 0, sizeof part);
    snprintf(part.device, sizeof part.device, "NVIDIA H200");
    snprintf(part.model, sizeof part.model, "llada-8b");
    planted_fc(&part);
    for (size_t i = 0; i < part.n; i++) { /* the part's other ops, as a profile measures them */
        const struct calib_row r = part.rows[i];
        if (r.op != OP_QKV)
            continue;
        const enum cost_op ops[] = {OP_EMBED, OP_NORM, OP_ROPE, OP_ATTN, OP_OPROJ, OP_GATE_UP, OP_ACT, OP_DOWN};
        for (size_t k = 0; k < TS_ARRAY_LEN(ops); k++)
            add_fc(&part, r.segs, r.q, r.fc_rows, r.probe, ops[k], 1.0);
    }
    struct calib_data whole;
    planted(&whole);
    const struct calib_data in[2] = {whole, part};
    const char *names[2] = {"whole.csv", "fc.csv"};
    size_t partial = 0;
    ck_assert_msg(calib_data_merge(in, names, 2, &e, &partial, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(e.n, whole.n + part.n);
    calib_data_free(&e);
    calib_data_free(&whole);
    calib_data_free(&part);
    /* refusals */
    static const struct {
        const char *row, *says;
    } bad[] = {{"\"NVIDIA H200\",llada-8b,1,64,400,0,feat_cache,1,1,1,0,0,0,500,256", "fc_rows"},
               {"\"NVIDIA H200\",llada-8b,1,64,492,0,feat_cache,1,1,1,0,0,0,556,32", "probe"},
               {"\"NVIDIA H200\",llada-8b,1,64,492,0,feat_cache,1,1,1,0,0,0,0,256", "probe"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        char text[512];
        snprintf(text, sizeof text, "device,model,segs,q,kv,logit_rows,op,ms,total_ms,attn_rules,kv_long,keep,"
                                    "sel_heads,fc_rows,probe\n%s\n", bad[i].row);
        ck_assert_int_ne(calib_data_parse("fc.csv", text, &e, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, "fc.csv:2"), "%s", err.msg);
    }
    step_desc_free(&sd);
    calib_free(plain);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* The LM head and sampling of a step taking logits over rows its later layers did not compute (a
 * dLLM-Cache step's carried rows): priced by the plain curves while the profile has no such step;
 * with the fc grid's steps with logits over every row, at those steps' share of the plain curves
 * (planted 0.85 and 0.9, within their sizes and flat below them); steps without carried logits
 * are priced as before. An fc row's logits over some but not all of its rows are refused. */
START_TEST(lm_head_over_carried_rows)
{
    struct calib_data d;
    planted(&d);
    planted_fc(&d);
    struct ts_err err;
    struct calib *plain, *c;
    ck_assert_msg(calib_fit(&d, &plain, &err) == 0, "%s", err.msg);
    struct cost_ctx cx = {.model = *model_find("llada-8b")};
    struct gpu_table *t = gpu_table_create();
    ck_assert_int_eq(gpu_lookup(t, "h200", &cx.gpu, NULL), 0);
    gpu_table_destroy(t);
    ck_assert_int_eq(impl_resolve("tessera", &cx.impl, NULL), 0);
    struct step_desc sd, whole;
    step_desc_init(&sd);
    step_desc_init(&whole);
    struct cost_breakdown bd, bw;
    double secs;
    /* the plain curves' LM head and sampling at R rows: a step computing every row it takes logits of */
    double lm_at[2][3];
    const int Rs[3] = {100, 576, 1536};
    for (int i = 0; i < 3; i++) {
        step_desc_clear(&whole);
        struct segment g = {.req_id = 0, .q = Rs[i], .logit_rows = Rs[i], .phase = PHASE_FULL};
        step_desc_add(&whole, &g);
        ck_assert_msg(calib_step_ctx_s(&cx, plain, &whole, true, &secs, &bw, &err) == 0, "%s", err.msg);
        lm_at[0][i] = bw.op_s[OP_LM_HEAD] * 1e3, lm_at[1][i] = bw.op_s[OP_SAMPLE] * 1e3;
    }
    /* the fc steps' partial updates with logits over every row, one chunk each (R <= 2048) */
    const int n0 = (int)d.n;
    for (int i = 0; i < n0; i++) {
        const struct calib_row r = d.rows[i];
        if (r.op != OP_FEAT_CACHE || r.probe == 0 || r.q != r.probe / 4 || r.segs * r.fc_rows > 2048)
            continue;
        const int R = r.segs * r.fc_rows;
        step_desc_clear(&whole);
        struct segment g = {.req_id = 0, .q = R, .logit_rows = R, .phase = PHASE_FULL};
        step_desc_add(&whole, &g);
        ck_assert_msg(calib_step_ctx_s(&cx, plain, &whole, true, &secs, &bw, &err) == 0, "%s", err.msg);
        for (int k = 0; k < 2; k++) {
            add(&d, r.segs, r.q, r.kv, r.fc_rows, k ? OP_SAMPLE : OP_LM_HEAD,
                (k ? 0.9 * bw.op_s[OP_SAMPLE] : 0.85 * bw.op_s[OP_LM_HEAD]) * 1e3);
            d.rows[d.n - 1].fc_rows = r.fc_rows, d.rows[d.n - 1].probe = r.probe;
        }
    }
    ck_assert_int_gt((int)d.n, n0 + 4);
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 3; i++) {
        const int rows = Rs[i], q = rows / 8;
        step_desc_clear(&sd);
        sd.front_layers = 1;
        sd.cache_outputs = true;
        step_desc_add_fc(&sd, 0, q, rows, rows / 2, rows); /* logits over every row, q of them computed */
        ck_assert_msg(calib_step_ctx_s(&cx, plain, &sd, true, &secs, &bd, &err) == 0, "%s", err.msg);
        ck_assert_msg(fabs(bd.op_s[OP_LM_HEAD] * 1e3 - lm_at[0][i]) < 1e-9, "%g vs %g", bd.op_s[OP_LM_HEAD] * 1e3,
                      lm_at[0][i]);
        ck_assert_msg(calib_step_ctx_s(&cx, c, &sd, true, &secs, &bd, &err) == 0, "%s", err.msg);
        if (i < 2) { /* 576 is a point of the carried curve, 100 lies below its first (192): exact */
            ck_assert_msg(fabs(bd.op_s[OP_LM_HEAD] * 1e3 / lm_at[0][i] - 0.85) < 1e-9, "%g",
                          bd.op_s[OP_LM_HEAD] * 1e3 / lm_at[0][i]);
            ck_assert_msg(fabs(bd.op_s[OP_SAMPLE] * 1e3 / lm_at[1][i] - 0.9) < 1e-9, "%g",
                          bd.op_s[OP_SAMPLE] * 1e3 / lm_at[1][i]);
        } else /* between its points: near the planted share */
            ck_assert(fabs(bd.op_s[OP_LM_HEAD] * 1e3 / lm_at[0][i] - 0.85) < 0.02);
        step_desc_clear(&whole);
        struct segment g = {.req_id = 0, .q = rows, .logit_rows = rows, .phase = PHASE_FULL};
        step_desc_add(&whole, &g);
        ck_assert_msg(calib_step_ctx_s(&cx, c, &whole, true, &secs, &bw, &err) == 0, "%s", err.msg);
        ck_assert(fabs(bw.op_s[OP_LM_HEAD] * 1e3 - lm_at[0][i]) < 1e-9); /* no carried rows: as before */
    }
    struct calib_data e;
    char text[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,attn_rules,kv_long,keep,sel_heads,fc_rows,"
                  "probe\n\"NVIDIA H200\",llada-8b,1,64,492,64,lm_head,1,1,1,0,0,0,556,256\n";
    ck_assert_int_ne(calib_data_parse("fc.csv", text, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "fc_rows") && strstr(err.msg, "fc.csv:2"), "%s", err.msg);
    step_desc_free(&sd);
    step_desc_free(&whole);
    calib_free(plain);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* A planted host/GPU split: host issue = 40 + 0.5 segs ms; GPU-bound eager steps take their GPU
 * time + 1 ms. */
static double planted_host(int segs) { return 40.0 + 0.5 * segs; }

static void planted_split(struct calib_data *d)
{
    planted(d);
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        double S = 0;
        for (size_t j = 0; j < d->n; j++)
            if (d->rows[j].segs == r->segs && d->rows[j].q == r->q && d->rows[j].kv == r->kv &&
                d->rows[j].logit_rows == r->logit_rows)
                S += d->rows[j].ms;
        double host = planted_host(r->segs);
        bool host_bound = S + 1 < host;
        d->rows[i].gpu_ms = S;
        d->rows[i].host_ms = host_bound ? host : fmin(host, S);
        d->rows[i].total_ms = fmax(host, S + 1);
    }
}

/* --op-scale on the calibrated back end: the named ops scaled before the host's wait is taken, so a
 * host-bound step stays at the host's time while its GPU work grows under it, a GPU-bound one grows
 * by what the ops add, and the host's own scale scales the wait. */
START_TEST(op_scale_applies_before_the_host)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    double scale[OP_COUNT];
    ck_assert_msg(cost_op_scale_parse("attention=2", scale, &err) == 0, "%s", err.msg);
    struct cost_ctx plain = {0}, scaled = {0};
    scaled.op_scale = scale;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 2048;
    test_step_repeat(&sd, &(struct segment){.q = 8, .kv = 480, .logit_rows = 8, .phase = PHASE_REUSE}, 6);
    double s0, s1;
    struct cost_breakdown b0, b1;
    ck_assert_int_eq(calib_step_ctx_s(&plain, c, &sd, false, &s0, &b0, &err), 0);
    ck_assert_int_eq(calib_step_ctx_s(&scaled, c, &sd, false, &s1, &b1, &err), 0);
    ck_assert(b0.op_s[OP_HOST] > b0.op_s[OP_ATTN]); /* host-bound with room for the attention again */
    ck_assert_msg(fabs(s1 - s0) < 1e-12 && fabs(b1.op_s[OP_ATTN] - 2 * b0.op_s[OP_ATTN]) < 1e-12 &&
                      fabs(b1.op_s[OP_HOST] - (b0.op_s[OP_HOST] - b0.op_s[OP_ATTN])) < 1e-12,
                  "host-bound: %g -> %g s", s0, s1);
    ck_assert_msg(cost_op_scale_parse("host=1.5", scale, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_ctx_s(&scaled, c, &sd, false, &s1, &b1, &err), 0);
    ck_assert_msg(fabs(s1 * 1e3 - 1.5 * planted_host(6)) < 1e-6, "host x 1.5: %g ms", s1 * 1e3);
    /* GPU-bound: the step grows by the attention once more */
    step_desc_clear(&sd);
    test_step_repeat(&sd, &(struct segment){.q = 512, .kv = 2048, .phase = PHASE_REFRESH}, 16);
    ck_assert_msg(cost_op_scale_parse("attention=2", scale, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_ctx_s(&plain, c, &sd, false, &s0, &b0, &err), 0);
    ck_assert_int_eq(calib_step_ctx_s(&scaled, c, &sd, false, &s1, &b1, &err), 0);
    ck_assert(b0.op_s[OP_HOST] == 0 && b0.op_s[OP_ATTN] > 0);
    ck_assert_msg(fabs(s1 - s0 - b0.op_s[OP_ATTN]) < 1e-9 * s0, "GPU-bound: %g -> %g s", s0, s1);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

START_TEST(host_bound_steps_take_the_host_time)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 2048;
    double secs;
    struct cost_breakdown bd;
    /* small steps wait for the host: exactly the planted line, whatever their GPU work */
    for (int segs = 1; segs <= 16; segs += 5) {
        step_desc_clear(&sd);
        test_step_repeat(&sd, &(struct segment){.q = 8, .kv = 480, .logit_rows = 8, .phase = PHASE_REUSE}, segs);
        ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
        ck_assert_msg(fabs(secs * 1e3 - planted_host(segs)) < 1e-6, "%d segs: %g ms", segs, secs * 1e3);
        double gpu = secs - bd.op_s[OP_HOST];
        ck_assert(bd.op_s[OP_HOST] > 0 && gpu > 0 && gpu * 1e3 < planted_host(segs));
    }
    /* a large profiled step is GPU-bound: its GPU time plus the 1 ms launch gap, no host part */
    step_desc_clear(&sd);
    struct segment big = {.req_id = 0, .q = 512, .kv = 2048, .logit_rows = 0, .phase = PHASE_REFRESH};
    for (int k = 0; k < 16; k++) {
        big.req_id = k;
        step_desc_add(&sd, &big);
    }
    double S = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].segs == 16 && d.rows[i].q == 512 && d.rows[i].kv == 2048 && d.rows[i].logit_rows == 0)
            S = d.rows[i].gpu_ms;
    ck_assert(S > planted_host(16));
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert_msg(bd.op_s[OP_HOST] == 0 && fabs(secs * 1e3 - (S + 1)) < 0.02 * S, "%g ms vs %g", secs * 1e3, S + 1);
    /* the split survives a CSV round trip; half of it is refused */
    const char *p = tmp_path(1, ".csv");
    struct calib_data e;
    write_and_load(&d, p, &e);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(fabs(e.rows[i].gpu_ms - d.rows[i].gpu_ms) <= 1e-8 * d.rows[i].gpu_ms &&
                  fabs(e.rows[i].host_ms - d.rows[i].host_ms) <= 1e-8 * d.rows[i].host_ms);
    calib_data_free(&e);
    char half[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,gpu_ms\n"
                  "\"NVIDIA H200\",llada-8b,1,8,0,0,qkv,1.0,2.0,1.5\n";
    ck_assert_int_ne(calib_data_parse("half.csv", half, &e, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "half.csv:1: header: column 'host_ms' missing"));
    char zero[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,gpu_ms,host_ms\n"
                  "\"NVIDIA H200\",llada-8b,1,8,0,0,qkv,1.0,2.0,1.5,0\n";
    ck_assert_int_ne(calib_data_parse("zero.csv", zero, &e, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "zero.csv:2: host_ms"));
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* dLLM-Cache's loop over a batch's rows under the calibration, by hand (the planted host line, 40 ms
 * and 0.5 ms a segment): a host-bound REUSE step of B segments takes its loop's line, 1.854 times the
 * planted one, and 7 kernels a layer for each row beyond the first at the line's time a kernel (40 ms
 * over LLaDA-8B's 32 layers of torch-eager's 55 kernels): (B - 1) 7 x 40 / 55 ms more; a REFRESH step
 * loops over no rows. --op-scale host=2 scales the host's issue, the loop's kernels with it: twice the
 * whole. */
START_TEST(row_loop_under_the_calibration)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct cost_ctx cx = {.model = *model_find("llada-8b")};
    struct gpu_table *t = gpu_table_create();
    ck_assert_int_eq(gpu_lookup(t, "h200", &cx.gpu, NULL), 0);
    gpu_table_destroy(t);
    ck_assert_int_eq(impl_resolve("torch-dllm-cache", &cx.impl, &err), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    double host2[OP_COUNT];
    ck_assert_msg(cost_op_scale_parse("host=2", host2, &err) == 0, "%s", err.msg);
    for (int scaled = 0; scaled < 2; scaled++) {
        cx.op_scale = scaled ? host2 : NULL;
        for (int B = 1; B <= 16; B *= 4)
            for (int refresh = 0; refresh < 2; refresh++) {
                step_desc_clear(&sd);
                test_step_repeat(&sd, &(struct segment){.q = 8, .kv = refresh ? 0 : 480,
                                                        .phase = refresh ? PHASE_REFRESH : PHASE_REUSE}, B);
                double secs;
                struct cost_breakdown bd;
                ck_assert_int_eq(calib_step_ctx_s(&cx, c, &sd, false, &secs, &bd, &err), 0);
                const double loop = refresh ? 0 : (B - 1) * 7 * 40.0 / 55,
                             want = (scaled ? 2 : 1) * (1.854 * planted_host(B) + loop);
                ck_assert_msg(bd.op_s[OP_HOST] > 0 && fabs(secs * 1e3 - want) < 1e-9 * want,
                              "B %d%s%s: %.9g ms, by hand %.9g", B, refresh ? " (refresh)" : "",
                              scaled ? " (host x 2)" : "", secs * 1e3, want);
            }
    }
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* Under the calibration, a loop that rotates every cached key again (torch-fast-dllm: 52 bytes a K
 * element) pays those bytes at the card's bandwidth on RoPE's op, over the calibrated curve its base
 * prices the rows' with: against torch-llada (the same base, no such work) the difference is, by hand,
 * 32 layers x the step's cached keys x 4,096 x 52 / (bandwidth x mem_eff), and none over no cache. */
START_TEST(cached_keys_under_the_calibration)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct cost_ctx fast = {.model = *model_find("llada-8b")}, plain;
    struct gpu_table *t = gpu_table_create();
    ck_assert_int_eq(gpu_lookup(t, "h200", &fast.gpu, NULL), 0);
    gpu_table_destroy(t);
    plain = fast;
    ck_assert_int_eq(impl_resolve("torch-fast-dllm", &fast.impl, &err), 0);
    ck_assert_int_eq(impl_resolve("torch-llada", &plain.impl, &err), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    for (int B = 1; B <= 16; B *= 4)
        for (int kv = 0; kv <= 2016; kv += 672) {
            step_desc_clear(&sd);
            test_step_repeat(&sd, &(struct segment){.q = 32, .kv = kv, .logit_rows = 32,
                                                    .phase = kv ? PHASE_REUSE : PHASE_REFRESH}, B);
            double secs;
            struct cost_breakdown bf, bp;
            ck_assert_int_eq(calib_step_ctx_s(&fast, c, &sd, false, &secs, &bf, &err), 0);
            ck_assert_int_eq(calib_step_ctx_s(&plain, c, &sd, false, &secs, &bp, &err), 0);
            const double want = 32.0 * B * kv * 4096 * 52 / (fast.gpu.mem_bw * fast.impl.mem_eff);
            ck_assert_msg(fabs(bf.op_s[OP_ROPE] - bp.op_s[OP_ROPE] - want) < 1e-12 + 1e-9 * want,
                          "B %d over %d keys: %.9g s more, by hand %.9g", B, kv, bf.op_s[OP_ROPE] - bp.op_s[OP_ROPE], want);
        }
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* An eager selection's loop over its sequences (a planted 7 ms a selecting segment beyond the step's
 * max(host, GPU)): fitted as a host term of its own, added to a selecting step's price, and kept by a
 * transfer to another GPU, which also keeps the launch gap of GPU-bound steps. */
static double select_host_ms(const struct calib *c, int segs, struct ts_err *err)
{
    struct step_desc sd;
    step_desc_init(&sd);
    const struct segment g = {.q = 300, .kv_write = 100, .phase = PHASE_REFRESH, .keep = 100, .score_rows = 32};
    test_step_repeat(&sd, &g, segs);
    double secs, gpu = 0;
    struct cost_breakdown bd;
    ck_assert_msg(calib_step_s(c, &sd, false, &secs, &bd, err) == 0, "%s", err->msg);
    for (int op = 0; op < OP_COUNT; op++)
        gpu += op == OP_HOST ? 0 : bd.op_s[op] * 1e3;
    step_desc_free(&sd);
    ck_assert(fabs(bd.op_s[OP_HOST] * 1e3 + gpu - secs * 1e3) < 1e-9);
    return secs * 1e3 - fmax(planted_host(segs), gpu); /* what the selection's loop added */
}

START_TEST(selection_loop_is_a_host_term)
{
    struct calib_data d, t;
    planted_split(&d);
    const size_t base = d.n;
    planted_select(&d, false);
    for (size_t i = base; i < d.n; i++) {
        struct calib_row *r = &d.rows[i];
        r->gpu_ms = r->ms;
        r->host_ms = planted_host(r->segs);
        r->total_ms = fmax(r->host_ms, r->gpu_ms + 1) + 7.0 * r->segs;
    }
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct calib_host h;
    ck_assert_int_eq(calib_host_of(c, &h, &err), 0);
    ck_assert(fabs(h.host0_ms - planted_host(0)) < 1e-9 && fabs(h.seg_ms - 0.5) < 1e-9 && fabs(h.eager_gap_ms - 1) < 1e-9);
    for (int segs = 1; segs <= 4; segs++)
        ck_assert_msg(fabs(select_host_ms(c, segs, &err) - 7.0 * segs) < 1e-6, "%d segs", segs);
    /* another host issues the loop as it issues the steps: scaled as its step time is */
    const struct calib_host slow = {.host0_ms = 2 * h.host0_ms, .seg_ms = h.seg_ms, .eager_gap_ms = h.eager_gap_ms,
                                    .steps = h.steps, .device = "another"};
    ck_assert_int_eq(calib_set_host(c, &slow, &err), 0);
    ck_assert(fabs(select_host_ms(c, 1, &err) + planted_host(1) - fmax(2 * h.host0_ms + h.seg_ms, planted_host(1)) -
                   14.0) < 1e-6);
    calib_free(c);
    /* carried to an H100: the GPU's times scale, the host's and the selection loop's stay */
    ck_assert_msg(calib_data_transfer(&d, "h200", "h100", "torch-eager", &t, &err) == 0, "%s", err.msg);
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].keep > 0)
            ck_assert(fabs((t.rows[i].total_ms - t.rows[i].gpu_ms) - (d.rows[i].total_ms - d.rows[i].gpu_ms)) < 1e-9);
        else if (d.rows[i].host_ms < d.rows[i].gpu_ms) /* GPU-bound: the 1 ms launch gap stays */
            ck_assert(fabs(t.rows[i].total_ms - fmax(t.rows[i].gpu_ms, d.rows[i].host_ms) - 1) < 1e-9);
    ck_assert_msg(calib_fit(&t, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_host_of(c, &h, &err), 0);
    ck_assert_msg(fabs(h.eager_gap_ms - 1) < 1e-9, "gap %g", h.eager_gap_ms);
    ck_assert_msg(fabs(select_host_ms(c, 1, &err) - 7.0) < 0.5, "%g", select_host_ms(c, 1, &err));
    calib_free(c);
    calib_data_free(&t);
    calib_data_free(&d);
}
END_TEST

/* A split profile carried to a slower card: each step's GPU time scales as the sum of its ops does
 * (an op's time above its roofline stays, so a step of small kernels moves far less than the step's
 * roofline), not by the step's roofline ratio; the host's issue stays. */
START_TEST(split_transfer_scales_gpu_time_by_its_ops)
{
    struct calib_data d, t;
    planted_split(&d);
    struct ts_err err;
    ck_assert_msg(calib_data_transfer(&d, "h200", "rtx4090", "torch-eager", &t, &err) == 0, "%s", err.msg);
    bool below_roofline_ratio = false;
    for (size_t i = 0; i < d.n; i++) {
        const double was = calib_step_ops_ms(&d, &d.rows[i]), now = calib_step_ops_ms(&t, &t.rows[i]);
        ck_assert_msg(fabs(t.rows[i].gpu_ms - d.rows[i].gpu_ms * now / was) < 1e-9 * now, "row %zu", i);
        ck_assert(t.rows[i].host_ms == d.rows[i].host_ms);
        ck_assert(t.rows[i].total_ms >= fmax(t.rows[i].gpu_ms, t.rows[i].host_ms) - 1e-9);
        below_roofline_ratio |= now / was < 0.8 * (4.8 / 1.008); /* the cards' bandwidth ratio */
    }
    ck_assert(below_roofline_ratio);
    calib_data_free(&t);
    calib_data_free(&d);
}
END_TEST

static double mma_waves_keys(int rules, int kv_heads, int segs, int q, int kv, int *P);

/* A planted attention law of a GQA model under rules 4 (its K/V tile reads divided by the heads a
 * block packs, its launch term over the packed blocks) is recovered, and prices a Reuse block over
 * 1,500 cached keys as worked by hand: two heads a block, 12 splits of 128 keys in one wave. */
START_TEST(attention_packed_law_recovered)
{
    struct calib_data d;
    planted(&d);
    snprintf(d.model, sizeof d.model, "sdar-8b");
    d.attn_rules = 4;
    for (size_t i = 0; i < d.n; i++) {
        struct calib_row *r = &d.rows[i];
        if (r->op != OP_ATTN || !on_mma(r->segs, r->q, r->kv))
            continue;
        int P;
        const double wk = mma_waves_keys(4, 8, r->segs, r->q, r->kv, &P);
        r->ms -= 3e-5 * r->segs * ceil(r->q / 64.0) * (r->q + r->kv) * (1 - 1.0 / P);
        r->ms += 5e-4 * wk;
    }
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment b = {.req_id = 1, .q = 32, .kv = 1500, .logit_rows = 32, .phase = PHASE_REUSE};
    step_desc_add(&sd, &b);
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    const double attn = 3e-5 * 1532 / 2 + 0.02 + 4e-5 * 1532 + 0.3 + 5e-4 * 128;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    /* and says so (calib price's last line) */
    struct calib_attn_launch l;
    calib_attn_launch(c, &sd, &l);
    ck_assert_int_eq(l.rules, 4);
    ck_assert_int_eq(l.mma_segs, 1);
    ck_assert_int_eq(l.wgmma_segs, 0);
    ck_assert_int_eq(l.heads_a_block, 2);
    ck_assert_int_eq(l.splits, 12);
    ck_assert_int_eq(l.tile_keys, 64);
    /* beside a 512-row Refresh (the wgmma kernel's) one head a block, keys not split */
    struct segment r = {.req_id = 2, .q = 512, .kv = 0, .logit_rows = 512, .phase = PHASE_REFRESH};
    step_desc_add(&sd, &r);
    calib_attn_launch(c, &sd, &l);
    ck_assert_int_eq(l.wgmma_segs, 1);
    ck_assert_int_eq(l.mma_segs, 1);
    ck_assert_int_eq(l.heads_a_block, 1);
    ck_assert_int_eq(l.splits, 1);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* The attention model's launch term (sim/cost/calib_price.c) for segs segments of q rows over kv keys that
 * the engine runs on its mma.sync kernel (q < ATTN_LONG_Q, or one short long segment over many
 * keys: attn_long_on_mma), 32 query heads over kv_heads K/V heads (llada-8b's 32, sdar-8b's
 * 8) on 132 SMs, by launch rules `rules`: the mma.sync kernel's waves times the keys a block
 * covers, its blocks taking *P heads each (GQA packing, rules 4; 1 before). */
static bool on_mma(int segs, int q, int kv)
{
    return q < ATTN_LONG_Q || attn_long_on_mma(segs * ((q + 63) / 64), 32, 132, q + kv);
}

static double mma_waves_keys(int rules, int kv_heads, int segs, int q, int kv, int *P)
{
    const int tiles = segs * ((q + 63) / 64), keys = q + kv;
    *P = attn_head_pack_v(rules, 32, kv_heads, q, keys);
    const int splits = attn_split_rule_pv(rules, *P, tiles, (int64_t)segs * q, 32, 132, keys);
    const double per_sm = attn_short_kv_tiles(splits, (int64_t)segs * q * *P, tiles) ? 4 : 2;
    const double block_keys = fmin(ceil(ceil((double)keys / splits) / 64.0) * 64.0, keys);
    return ceil(tiles * (32.0 / *P) * splits / (per_sm * 132)) * block_keys;
}

/* The planted profile of launch rules `rules` with the launch term added to its attention (0.5 us
 * a key of mma_waves_keys), fitted */
static struct calib *planted_launch_fit(int rules, struct calib_data *d)
{
    planted(d);
    d->attn_rules = rules;
    for (size_t i = 0; i < d->n; i++) {
        struct calib_row *r = &d->rows[i];
        if (r->op == OP_ATTN && on_mma(r->segs, r->q, r->kv))
            r->ms += 5e-4 * mma_waves_keys(rules, 32, r->segs, r->q, r->kv, &(int){0});
    }
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(d, &c, &err) == 0, "%s", err.msg);
    return c;
}

/* A planted attention law with the launch term is recovered, and a Reuse step priced with it,
 * under each version of the launch rules (the profile's: calib_data.attn_rules). */
START_TEST(attention_launch_term_recovered)
{
    const int rules = _i + 1;
    struct calib_data d;
    struct calib *c = planted_launch_fit(rules, &d);
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 100;
    /* one Reuse block over 1,500 cached keys: version 1 takes 9 splits of 192 keys, 288 blocks in
     * 2 waves; versions 2 and 3 8 splits of 192 keys, 256 blocks in one wave */
    struct segment b = {.req_id = 1, .q = 32, .kv = 1500, .logit_rows = 32, .phase = PHASE_REUSE};
    step_desc_add(&sd, &b);
    const double waves_keys = rules == 1 ? 2 * 192 : 192;
    ck_assert(fabs(mma_waves_keys(rules, 32, 1, 32, 1500, &(int){0}) - waves_keys) < 1e-9);
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    double attn = attn_ms(1, 32, 1500) + 5e-4 * waves_keys;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    /* beside a Refresh of 512 rows (the wgmma kernel's) the block's keys are not split: the
     * mma.sync kernel runs over its one tile alone, 32 blocks in one wave over all 1,532 keys */
    struct segment r = {.req_id = 2, .q = 512, .kv = 0, .logit_rows = 512, .phase = PHASE_REFRESH};
    step_desc_add(&sd, &r);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    attn = attn_ms(1, 32, 1500) + attn_ms(1, 512, 0) - 0.3 - 4e-5 * 512 + 5e-4 * 1532;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* Many segments of mixed lengths (a serving batch): the launch term is whole waves of the blocks'
 * mean keys, the last ending with the longest block, not the longest block's keys every wave. 264
 * Reuse blocks of 32 rows under rules 1, half over 100 cached keys and half over 3,000: one head a
 * block, the keys not split, 264 x 32 blocks at four an SM (32-key K/V tiles) on 132 SMs, 16
 * waves; 132 and 3,032 keys a block, so 15 waves of their mean 1,582 and a last of 3,032 (26,762
 * keys, where 16 waves of 3,032 would be 48,512). */
START_TEST(attention_launch_term_over_mixed_lengths)
{
    struct calib_data d;
    struct calib *c = planted_launch_fit(1, &d);
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 100;
    for (int i = 0; i < 264; i++) {
        struct segment b = {.req_id = i + 1, .q = 32, .kv = i % 2 ? 3000 : 100, .logit_rows = 32, .phase = PHASE_REUSE};
        step_desc_add(&sd, &b);
    }
    ck_assert_int_eq(attn_split_rule_pv(1, 1, 264, 264 * 32, 32, 132, 3032), 1);
    ck_assert(attn_short_kv_tiles(1, 264 * 32, 264));
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, true, &secs, &bd, &err), 0);
    const double law = attn_ms(132, 32, 100) + attn_ms(132, 32, 3000) - 4e-5 * 132 - 0.3;
    const double attn = law + 5e-4 * (15 * (132 + 3032) / 2.0 + 3032);
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - attn) < 1e-6 * attn, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, attn);
    /* all 264 over 3,000 keys: 16 whole waves of 3,032 */
    step_desc_free(&sd);
    step_desc_init(&sd);
    sd.logit_chunk_rows = 100;
    const struct segment b = {.req_id = 1, .q = 32, .kv = 3000, .logit_rows = 32, .phase = PHASE_REUSE};
    test_step_repeat(&sd, &b, 264);
    ck_assert_int_eq(calib_step_s(c, &sd, true, &secs, &bd, &err), 0);
    const double even = attn_ms(264, 32, 3000) + 5e-4 * 16 * 3032;
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - even) < 1e-6 * even, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, even);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

/* The launch rules version travels with the profile: a CSV round trip keeps it, a file without
 * the column is version 1, a profile database without the column too; a version this build does
 * not know, or two in one profile, is refused naming file, line and field. */
START_TEST(attention_rules_travel_with_the_profile)
{
    struct calib_data d, e;
    struct ts_err err;
    planted(&d);
    d.attn_rules = 2;
    const char *p = tmp_path(0, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.attn_rules, 2);
    calib_data_free(&e);
    char old[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms\nA,llada-8b,16,32,0,0,qkv,0.5,1\n";
    ck_assert_msg(calib_data_parse("old.csv", old, &e, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(e.attn_rules, 1);
    calib_data_free(&e);
    char future[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,attn_rules\nA,llada-8b,16,32,0,0,qkv,0.5,1,5\n";
    ck_assert_int_ne(calib_data_parse("future.csv", future, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "future.csv:2: attn_rules: not a version") && strstr(err.msg, "(1..4): '5'"), "%s",
                  err.msg);
    char mixed[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,attn_rules\n"
                   "A,llada-8b,16,32,0,0,qkv,0.5,1,1\nA,llada-8b,16,32,0,0,norm,0.5,1,2\n";
    ck_assert_int_ne(calib_data_parse("mixed.csv", mixed, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "mixed.csv:3: attn_rules: 2 after 1"), "%s", err.msg);
    calib_data_free(&d);

    /* profile databases: the engine's table with and without the column */
    for (int with = 0; with < 2; with++) {
        const char *db_path = tmp_path(1 + with, ".db");
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
        char sql[512];
        snprintf(sql, sizeof sql,
                 "CREATE TABLE engine_profile(device TEXT, model TEXT, segs INTEGER, q INTEGER, kv INTEGER, "
                 "logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL%s);"
                 "INSERT INTO engine_profile VALUES('A', 'llada-8b', 16, 32, 0, 0, 'qkv', 0.5, 1%s);",
                 with ? ", attn_rules INTEGER" : "", with ? ", 2" : "");
        ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        ck_assert_msg(calib_data_import_db(db_path, &e, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(e.attn_rules, with ? 2 : 1);
        calib_data_free(&e);
        if (with) {
            ck_assert_int_eq(sqlite3_exec(db, "UPDATE engine_profile SET attn_rules = 9", NULL, NULL, NULL), SQLITE_OK);
            ck_assert_int_ne(calib_data_import_db(db_path, &e, &err), 0);
            ck_assert_msg(strstr(err.msg, "row 1: attn_rules: 9 is not a version"), "%s", err.msg);
        }
        sqlite3_close(db);
        unlink(db_path);
    }
}
END_TEST

/* The planted attention law of an uneven step: segs - 1 segments of q rows over kv cached keys and
 * one over kv_long, by the terms attn_ms sums (each segment's own, the longest keys and the
 * constant once). */
static double attn_ms_uneven(int segs, double q, double kv, double kv_long)
{
    return attn_ms(segs - 1, q, kv) + attn_ms(1, q, kv_long) - 4e-5 * (q + kv) - 0.3;
}

/* Uneven steps (engine profile's kv_long): their last segment runs over kv_long (step_shape_desc), the
 * attention fit takes their features segment by segment (a planted law over even and uneven rows is
 * recovered exactly, and prices an uneven step it was not given), they are other steps than the
 * even ones of the same segs, q and kv, and kv_long travels through the CSV and the profile
 * database; bad values are refused naming file, line (row) and field. */
START_TEST(uneven_steps)
{
    struct calib_data d, e;
    struct ts_err err;
    planted(&d);
    const int kvs[] = {128, 480}, longs[] = {2048, 4096};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int segs = 3; segs <= 6; segs += 3) {
                add(&d, segs, 32, kvs[a], 32, OP_ATTN, attn_ms_uneven(segs, 32, kvs[a], longs[b]));
                d.rows[d.n - 1].kv_long = longs[b];
            }
    /* the same segs, q and kv as an even row: another step, not an op measured twice */
    add(&d, 3, 32, 128, 32, OP_ATTN, attn_ms(3, 32, 128));
    ck_assert_msg(calib_data_validate(&d, "h200", &err) == 0, "%s", err.msg);

    struct step_desc sd;
    step_desc_init(&sd);
    step_shape_desc(&d.rows[d.n - 2].shape, 0, &sd); /* 6 x 32 over 480, the last over 4096 */
    ck_assert_int_eq(sd.num_segs, 6);
    ck_assert(sd.segs[0].kv == 480 && sd.segs[4].kv == 480 && sd.segs[5].kv == 4096);

    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    step_desc_clear(&sd);
    sd.logit_chunk_rows = 100;
    for (int i = 0; i < 5; i++) {
        struct segment g = {.req_id = i, .q = 32, .kv = i < 4 ? 1000 : 3000, .logit_rows = 32, .phase = PHASE_REUSE};
        step_desc_add(&sd, &g);
    }
    double secs, want = attn_ms_uneven(5, 32, 1000, 3000);
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert_msg(fabs(bd.op_s[OP_ATTN] * 1e3 - want) < 1e-9 * want, "%g vs %g", bd.op_s[OP_ATTN] * 1e3, want);
    /* calib show counts them */
    const char *shown = tmp_path(2, ".txt");
    FILE *f = fopen(shown, "w");
    ck_assert_ptr_nonnull(f);
    calib_show(c, f);
    fclose(f);
    char *text;
    ck_assert_int_eq(ts_read_file(shown, &text, NULL, &err), 0);
    ck_assert_msg(strstr(text, "attention launch rules 1, 8 uneven steps\n"), "%s", text);
    free(text);
    calib_free(c);
    step_desc_free(&sd);

    /* the CSV: kv_long written where a step is uneven, read back */
    const char *p = tmp_path(0, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.n, d.n);
    for (size_t i = 0; i < d.n; i++)
        ck_assert_int_eq(e.rows[i].kv_long, d.rows[i].kv_long);
    calib_data_free(&e);
    calib_data_free(&d);
    planted(&d); /* no uneven step: no column, as before the uneven steps */
    ck_assert_int_eq(calib_data_write(&d, p, NULL), 0);
    ck_assert_int_eq(ts_read_file(p, &text, NULL, &err), 0);
    ck_assert_ptr_null(strstr(text, "kv_long"));
    free(text);
    calib_data_free(&d);
    char neg[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,kv_long\nA,llada-8b,3,32,128,32,attention,0.5,1,-5\n";
    ck_assert_int_ne(calib_data_parse("neg.csv", neg, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "neg.csv:2: kv_long: not a count ('-5')"), "%s", err.msg);
    char one[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,kv_long\nA,llada-8b,1,32,128,32,attention,0.5,1,2048\n";
    ck_assert_int_ne(calib_data_parse("one.csv", one, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "one.csv:2: kv_long: an uneven step needs 2 or more segments (segs 1)"), "%s",
                  err.msg);

    /* the profile database: the column read, NULL an even step, a bad value named by row */
    const char *db_path = tmp_path(1, ".db");
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "CREATE TABLE engine_profile(device TEXT, model TEXT, segs INTEGER, q INTEGER, "
                                  "kv INTEGER, logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL, attn_rules "
                                  "INTEGER, kv_long INTEGER);"
                                  "INSERT INTO engine_profile VALUES('A', 'llada-8b', 3, 32, 128, 32, 'attention', "
                                  "0.5, 1, 3, 2048);"
                                  "INSERT INTO engine_profile VALUES('A', 'llada-8b', 3, 32, 128, 32, 'attention', "
                                  "0.4, 1, 3, NULL);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_msg(calib_data_import_db(db_path, &e, &err) == 0, "%s", err.msg);
    ck_assert(e.n == 2 && e.rows[0].kv_long == 2048 && e.rows[1].kv_long == 0);
    calib_data_free(&e);
    ck_assert_int_eq(sqlite3_exec(db, "UPDATE engine_profile SET segs = 1 WHERE kv_long = 2048", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_ne(calib_data_import_db(db_path, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "engine_profile row 1: kv_long: 2048"), "%s", err.msg);
    sqlite3_close(db);
    unlink(db_path);
}
END_TEST

/* Mixed steps (engine profile's ladder, q_long): their last segment runs q_long rows over kv_long
 * keys (step_shape_desc), their packed tokens count it, a profile with them validates; q_long travels
 * through the CSV and the profile database; a mixed step of one segment or with logits is refused by
 * file, line and field. */
START_TEST(mixed_steps)
{
    struct calib_data d, e;
    struct ts_err err;
    planted(&d);
    const int longs[] = {256, 1024}, blocks[] = {1, 3, 7};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            add(&d, blocks[b] + 1, 32, 480, 0, OP_ATTN, attn_ms(blocks[b], 32, 480) + attn_ms(1, longs[a], 0));
            d.rows[d.n - 1].q_long = longs[a];
        }
    ck_assert_msg(calib_data_validate(&d, "h200", &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    step_shape_desc(&d.rows[d.n - 1].shape, 0, &sd); /* 7 x 32 over 480 beside 1,024 over none */
    ck_assert_int_eq(sd.num_segs, 8);
    ck_assert(sd.segs[0].q == 32 && sd.segs[0].kv == 480 && sd.segs[7].q == 1024 && sd.segs[7].kv == 0);
    ck_assert_int_eq(step_shape_rows(&d.rows[d.n - 1].shape), 7 * 32 + 1024);

    /* the CSV: q_long written where a step is mixed, read back; the DB column too */
    const char *p = tmp_path(3, ".csv");
    write_and_load(&d, p, &e);
    ck_assert_int_eq(e.n, d.n);
    for (size_t i = 0; i < d.n; i++)
        ck_assert(e.rows[i].q_long == d.rows[i].q_long && e.rows[i].kv_long == d.rows[i].kv_long);
    calib_data_free(&e);
    char one[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,q_long\nA,llada-8b,1,32,480,0,attention,0.5,1,256\n";
    ck_assert_int_ne(calib_data_parse("one.csv", one, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "one.csv:2: q_long: a mixed step needs 2 or more segments and no logits"), "%s",
                  err.msg);
    char lg[] = "device,model,segs,q,kv,logit_rows,op,ms,total_ms,q_long\nA,llada-8b,4,32,480,32,attention,0.5,1,256\n";
    ck_assert_int_ne(calib_data_parse("lg.csv", lg, &e, &err), 0);
    ck_assert_msg(strstr(err.msg, "lg.csv:2: q_long: a mixed step needs"), "%s", err.msg);
    const char *db_path = tmp_path(4, ".db");
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "CREATE TABLE engine_profile(device TEXT, model TEXT, segs INTEGER, q INTEGER, "
                                  "kv INTEGER, logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL, attn_rules "
                                  "INTEGER, kv_long INTEGER, keep INTEGER, sel_heads INTEGER, fc_rows INTEGER, "
                                  "probe INTEGER, q_long INTEGER);"
                                  "INSERT INTO engine_profile VALUES('A', 'llada-8b', 4, 32, 480, 0, 'attention', "
                                  "0.5, 1, 4, 0, 0, 0, 0, 0, 512);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_msg(calib_data_import_db(db_path, &e, &err) == 0, "%s", err.msg);
    ck_assert(e.n == 1 && e.rows[0].q_long == 512 && step_shape_rows(&e.rows[0].shape) == 3 * 32 + 512);
    calib_data_free(&e);
    sqlite3_close(db);
    unlink(db_path);
    calib_data_free(&d);
    step_desc_free(&sd);
}
END_TEST

/* The token curves take the steps with logits as well (the blocks of 32 a Reuse step runs, the
 * ladder's), but the norm's, whose rows with logits hold the final norm too. */
START_TEST(token_curves_take_the_steps_with_logits)
{
    struct calib_data d;
    struct ts_err err;
    planted(&d);
    /* 2 x 128 rows with their logits, a count no step without logits has: its qkv 3x the law */
    add(&d, 2, 128, 480, 128, OP_QKV, 3 * tok_ms(OP_QKV, 256));
    add(&d, 2, 128, 480, 128, OP_NORM, 3 * tok_ms(OP_NORM, 256));
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct step_desc sd;
    step_desc_init(&sd);
    struct segment g = {.req_id = 0, .q = 256, .kv = 0, .phase = PHASE_FULL};
    step_desc_add(&sd, &g);
    double secs;
    struct cost_breakdown bd;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, &bd, &err), 0);
    ck_assert_msg(fabs(bd.op_s[OP_QKV] * 1e3 - 3 * tok_ms(OP_QKV, 256)) < 1e-9, "qkv %g", bd.op_s[OP_QKV] * 1e3);
    ck_assert_msg(fabs(bd.op_s[OP_NORM] * 1e3 - tok_ms(OP_NORM, 256)) < 1e-6, "norm %g", bd.op_s[OP_NORM] * 1e3);
    calib_free(c);
    step_desc_free(&sd);
    calib_data_free(&d);
}
END_TEST

/* A part of a profile (here the planted grid without its one-token steps, as the ladder, select or fc
 * grid alone) is not a calibration: the fit refuses it, saying to merge it. */
START_TEST(a_part_is_not_a_calibration)
{
    struct calib_data d;
    struct ts_err err;
    planted(&d);
    size_t k = 0;
    for (size_t i = 0; i < d.n; i++)
        if (d.rows[i].q != 1)
            d.rows[k++] = d.rows[i];
    d.n = k;
    struct calib *c = NULL;
    ck_assert_int_ne(calib_fit(&d, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "is not a calibration: merge it into a whole profile"), "%s", err.msg);
    calib_data_free(&d);
}
END_TEST

/* Profile `d` with every time scaled by `k` (another machine instance's level). */
static void scaled(const struct calib_data *d, double k, struct calib_data *out)
{
    *out = *d;
    out->rows = xmalloc(sizeof *d->rows * d->n);
    out->cap = d->n;
    for (size_t i = 0; i < d->n; i++) {
        out->rows[i] = d->rows[i];
        out->rows[i].ms *= k;
        out->rows[i].total_ms = (1 + i) * k;
    }
}

START_TEST(merge_takes_row_medians)
{
    struct calib_data base, in[3], m;
    struct ts_err err;
    size_t partial;
    planted(&base);
    scaled(&base, 1.00, &in[0]);
    scaled(&base, 1.03, &in[1]);
    scaled(&base, 0.98, &in[2]);
    /* one row off in one profile alone (a noisy measurement): the median does not follow it */
    in[2].rows[5].ms *= 10;
    /* an uneven step in the last two profiles only (an older profile grid lacks it) */
    for (int f = 1; f < 3; f++) {
        add(&in[f], 3, 32, 128, 32, OP_ATTN, f == 1 ? 1.0 : 2.0);
        in[f].rows[in[f].n - 1].kv_long = 2048;
        in[f].rows[in[f].n - 1].total_ms = 4.0 * f;
    }
    /* rows in another order in the second: matched by step and op, not by position */
    struct calib_row t = in[1].rows[0];
    in[1].rows[0] = in[1].rows[1];
    in[1].rows[1] = t;
    const char *names[] = {"a.csv", "b.csv", "c.csv"};
    ck_assert_msg(calib_data_merge(in, names, 3, &m, &partial, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.n, base.n + 1);
    ck_assert_int_eq(partial, 1);
    ck_assert_str_eq(m.model, "llada-8b");
    for (size_t i = 0; i < base.n; i++) { /* the first profile's order; each row its median: scale 1.00 */
        ck_assert(m.rows[i].op == base.rows[i].op && m.rows[i].q == base.rows[i].q &&
                  m.rows[i].segs == base.rows[i].segs && m.rows[i].kv == base.rows[i].kv);
        const double want = base.rows[i].ms * (i == 5 ? 1.03 : 1.00); /* row 5: 1.00, 1.03 and 9.8 */
        ck_assert_msg(fabs(m.rows[i].ms - want) <= 1e-12 * want, "row %zu: %g vs %g", i, m.rows[i].ms, want);
        ck_assert_double_eq(m.rows[i].total_ms, (double)(1 + i));
    }
    /* the uneven step: the median of two, last, its kv_long kept */
    const struct calib_row *u = &m.rows[m.n - 1];
    ck_assert(u->kv_long == 2048 && u->segs == 3 && fabs(u->ms - 1.5) < 1e-12 && fabs(u->total_ms - 6.0) < 1e-12);
    ck_assert_msg(calib_data_validate(&m, "h200", &err) == 0, "%s", err.msg);
    /* identical profiles merge to themselves */
    calib_data_free(&m);
    struct calib_data same[2] = {in[0], in[0]};
    ck_assert_int_eq(calib_data_merge(same, names, 2, &m, &partial, &err), 0);
    ck_assert(m.n == in[0].n && partial == 0);
    for (size_t i = 0; i < m.n; i++)
        ck_assert(m.rows[i].ms == in[0].rows[i].ms && m.rows[i].total_ms == in[0].rows[i].total_ms);
    calib_data_free(&m);

    /* refused, naming the file: one profile; another model, GPU, rules or op set; an op twice */
    ck_assert_int_ne(calib_data_merge(in, names, 1, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "two or more profiles (1 given)"), "%s", err.msg);
    snprintf(in[1].model, sizeof in[1].model, "sdar-8b");
    ck_assert_int_ne(calib_data_merge(in, names, 3, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "b.csv: model 'sdar-8b', but a.csv's is 'llada-8b'"), "%s", err.msg);
    snprintf(in[1].model, sizeof in[1].model, "llada-8b");
    snprintf(in[2].device, sizeof in[2].device, "NVIDIA A100");
    ck_assert_int_ne(calib_data_merge(in, names, 3, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "c.csv: device 'NVIDIA A100'"), "%s", err.msg);
    snprintf(in[2].device, sizeof in[2].device, "%s", in[0].device);
    in[2].attn_rules = 3;
    ck_assert_int_ne(calib_data_merge(in, names, 3, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "c.csv: profiled under attention launch rules 3, a.csv under 1"), "%s", err.msg);
    in[2].attn_rules = 0;
    size_t kept = in[2].n; /* a fused FFN's profile: no act rows */
    for (size_t i = 0, j = 0; i < kept; i++)
        if (in[2].rows[i].op != OP_ACT)
            in[2].rows[j++] = in[2].rows[i];
        else
            in[2].n--;
    ck_assert_int_ne(calib_data_merge(in, names, 3, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "c.csv: has no op act and a.csv does"), "%s", err.msg);
    in[1].rows[2] = in[1].rows[3];
    ck_assert_int_ne(calib_data_merge(in, names, 2, &m, &partial, &err), 0);
    ck_assert_msg(strstr(err.msg, "b.csv: op ") && strstr(err.msg, "measured twice"), "%s", err.msg);
    for (int f = 0; f < 3; f++)
        calib_data_free(&in[f]);
    calib_data_free(&base);
}
END_TEST

/* Whether rows a and b belong to one profiled step. */
static bool one_step(const struct calib_row *a, const struct calib_row *b)
{
    return a->segs == b->segs && a->q == b->q && a->kv == b->kv && a->logit_rows == b->logit_rows &&
           a->kv_long == b->kv_long && a->keep == b->keep && a->sel_heads == b->sel_heads;
}

START_TEST(merge_over_replaces_steps)
{
    struct calib_data base, in[5], m;
    struct ts_err err;
    size_t partial, replaced;
    planted(&base);
    scaled(&base, 1.00, &in[0]);
    scaled(&base, 1.04, &in[1]);
    /* three profiles over them, each of one step's rows without logits alone (2.0, 2.2 and 5.0 times
     * their times: a part of the grid, as a select part is), the last two also of a step the others
     * lack, one op of which only the last measured */
    const double k[] = {2.0, 2.2, 5.0};
    size_t step_rows = 0, ref = 0;
    while (base.rows[ref].q != 32 || base.rows[ref].logit_rows != 0)
        ref++;
    for (int f = 0; f < 3; f++) {
        struct calib_data *o = &in[2 + f];
        scaled(&base, k[f], o);
        o->n = 0;
        for (size_t i = 0; i < base.n; i++)
            if (one_step(&base.rows[i], &base.rows[ref]))
                o->rows[o->n++] = (struct calib_row){.segs = base.rows[i].segs, .q = base.rows[i].q,
                                                     .kv = base.rows[i].kv, .logit_rows = base.rows[i].logit_rows,
                                                     .op = base.rows[i].op, .ms = base.rows[i].ms * k[f],
                                                     .total_ms = 7.0 * k[f]};
        step_rows = o->n;
        if (f > 0) {
            add(o, 4, 256, 0, 0, OP_KV_SELECT, f);
            o->rows[o->n - 1].keep = 112;
        }
        if (f == 2) {
            add(o, 4, 256, 0, 0, OP_ATTN, 3.0);
            o->rows[o->n - 1].keep = 112;
        }
    }
    const char *names[] = {"a.csv", "b.csv", "o1.csv", "o2.csv", "o3.csv"};
    ck_assert_msg(calib_data_merge_over(in, names, 5, 3, &m, &partial, &replaced, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.n, base.n + 2);
    ck_assert_int_eq(replaced, 2 * step_rows); /* the step's rows of both others */
    ck_assert_int_eq(partial, 2);               /* the new step's rows: two and one of the three */
    size_t seen = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct calib_row *r = &m.rows[i];
        if (r->keep) { /* the new step: the median over the --over profiles that hold the row */
            ck_assert_double_eq_tol(r->ms, r->op == OP_KV_SELECT ? 1.5 : 3.0, 1e-12);
            continue;
        }
        size_t j = 0;
        while (j < base.n && !(one_step(&base.rows[j], r) && base.rows[j].op == r->op))
            j++;
        ck_assert(j < base.n);
        if (one_step(r, &base.rows[ref])) { /* from the --over profiles alone: the median, 2.2 */
            ck_assert_double_eq_tol(r->ms, 2.2 * base.rows[j].ms, 1e-12 * r->ms);
            ck_assert_double_eq_tol(r->total_ms, 7.0 * 2.2, 1e-12);
            seen++;
        } else { /* the others' median, as a merge without them */
            ck_assert_double_eq_tol(r->ms, 1.02 * base.rows[j].ms, 1e-12 * r->ms);
        }
    }
    ck_assert_int_eq(seen, step_rows);
    calib_data_free(&m);
    /* without --over profiles it is the plain merge */
    struct calib_data plain;
    ck_assert_int_eq(calib_data_merge_over(in, names, 2, 0, &m, &partial, &replaced, &err), 0);
    ck_assert_int_eq(calib_data_merge(in, names, 2, &plain, &partial, &err), 0);
    ck_assert(m.n == plain.n && replaced == 0);
    for (size_t i = 0; i < m.n; i++)
        ck_assert(m.rows[i].ms == plain.rows[i].ms && m.rows[i].op == plain.rows[i].op);
    calib_data_free(&m);
    calib_data_free(&plain);
    /* refused: only --over profiles */
    ck_assert_int_ne(calib_data_merge_over(in + 2, names + 2, 3, 3, &m, &partial, &replaced, &err), 0);
    ck_assert_msg(strstr(err.msg, "one other profile at least"), "%s", err.msg);
    for (int f = 0; f < 5; f++)
        calib_data_free(&in[f]);
    calib_data_free(&base);
}
END_TEST

/* A calibration's host, apart from its GPU: taken as the planted line, written and read back as a host
 * profile, and swapped for another, which prices the host-bound steps by the new line and leaves the
 * GPU-bound ones alone; a calibration without a host measured apart has none to take or replace. */
/* --host on a calibration measured on the machine a shipped host profile was (its device, or a
 * transfer's origin): the calibration's own line scaled term by term by the two host profiles' (each
 * one model's line, another model issuing another count of kernels), not replaced by the profile's. */
START_TEST(a_host_profile_of_the_machine_scales_the_line)
{
    const char *data = tmp_dir(0);
    char hosts[300], ref[320];
    snprintf(hosts, sizeof hosts, "%s/hosts", data);
    ck_assert_int_eq(mkdir(hosts, 0700), 0);
    snprintf(ref, sizeof ref, "%s/ref.csv", hosts);
    FILE *f = fopen(ref, "w");
    ck_assert_ptr_nonnull(f);
    fputs("host0_ms,seg_ms,eager_gap_ms,steps,device\n20,0.25,2,40,NVIDIA H200\n", f);
    fclose(f);
    const char *other = tmp_file(7, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,device\n30,1,2,40,other\n");
    struct data_env env;
    data_env_set(&env, data);
    /* the planted host, 40 ms a step + 0.5 a segment, measured on "NVIDIA H200" (scaled whole by the
     * two machines' per-step issue times, 30 / 20: 60 + 0.75), carried to an H800 (the same), and on
     * a machine no host profile names (replaced: 30 + 1) */
    const char *devices[] = {"NVIDIA H200", "h800 (roofline transfer from NVIDIA H200)", "NVIDIA H100"};
    const double want[] = {60 + 0.75, 60 + 0.75, 30 + 1};
    struct impl_profile eager = {.name = "eager"};
    for (int i = 0; i < 3; i++) {
        struct calib_data d;
        planted_split(&d);
        snprintf(d.device, sizeof d.device, "%s", devices[i]);
        struct ts_err err;
        struct calib *c;
        ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
        ck_assert_msg(calib_use_host(c, other, &eager, &err) == 0, "%s", err.msg);
        struct step_desc sd;
        step_desc_init(&sd);
        struct segment g = {.req_id = 0, .q = 8, .kv = 480, .logit_rows = 8, .phase = PHASE_REUSE};
        step_desc_add(&sd, &g);
        double secs;
        ck_assert_int_eq(calib_step_s(c, &sd, false, &secs, NULL, &err), 0);
        ck_assert_msg(fabs(secs * 1e3 - want[i]) < 1e-6, "%s: %g ms", devices[i], secs * 1e3);
        step_desc_free(&sd);
        calib_free(c);
        calib_data_free(&d);
    }
    data_env_restore(&env);
    unlink(ref);
    rmdir(hosts);
    rmdir(data);
}
END_TEST

/* How far a profile's host-bound steps lie from the fitted line: on the line, a band of 1-1x; a host
 * in two states 1.5x apart (every other step slowed, as an H100 machine's host drifts for minutes at
 * a time), a band whose ends stand about 1.5x apart around the line; a host file keeps only the line. */
START_TEST(the_host_line_reports_how_far_its_steps_lie)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct calib_host h;
    ck_assert_int_eq(calib_host_of(c, &h, &err), 0);
    ck_assert_msg(fabs(h.lo - 1) < 1e-9 && fabs(h.hi - 1) < 1e-9, "on the line: %g-%g", h.lo, h.hi);
    char band[96];
    calib_host_band(h.lo, h.hi, band, sizeof band);
    ck_assert_str_eq(band, ", 80% of them 1.00-1.00x the line");
    calib_free(c);
    /* every other distinct step's host time 1.5x (the same step's rows alike), in the order the
     * steps first appear */
    int *slow = calloc(d.n, sizeof *slow);
    ck_assert_ptr_nonnull(slow);
    for (size_t i = 0, k = 0; i < d.n; i++) {
        size_t j = 0;
        while (j < i && !(d.rows[j].segs == d.rows[i].segs && d.rows[j].q == d.rows[i].q &&
                          d.rows[j].kv == d.rows[i].kv && d.rows[j].logit_rows == d.rows[i].logit_rows))
            j++;
        slow[i] = j < i ? slow[j] : (int)(k++ % 2);
    }
    for (size_t i = 0; i < d.n; i++)
        if (slow[i] && d.rows[i].host_ms > d.rows[i].gpu_ms) {
            d.rows[i].host_ms *= 1.5;
            d.rows[i].total_ms = fmax(d.rows[i].host_ms, d.rows[i].gpu_ms + 1);
        }
    free(slow);
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_host_of(c, &h, &err), 0);
    ck_assert_msg(h.lo < 0.9 && h.hi > 1.1 && fabs(h.hi / h.lo - 1.5) < 0.1, "two states: %g-%g", h.lo, h.hi);
    /* written as a host file and read back: the line, no band */
    const char *p = tmp_path(2, ".csv");
    struct calib_host back;
    ck_assert_int_eq(calib_host_write(&h, p, &err), 0);
    ck_assert_msg(calib_host_load(p, &back, &err) == 0, "%s", err.msg);
    ck_assert(back.lo == 0 && back.hi == 0);
    calib_host_band(back.lo, back.hi, band, sizeof band);
    ck_assert_str_eq(band, "");
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

START_TEST(a_host_profile_swaps_the_host_line)
{
    struct calib_data d;
    planted_split(&d);
    struct ts_err err;
    struct calib *c;
    ck_assert_msg(calib_fit(&d, &c, &err) == 0, "%s", err.msg);
    struct calib_host h, back;
    ck_assert_int_eq(calib_host_of(c, &h, &err), 0);
    ck_assert(fabs(h.host0_ms - planted_host(0)) < 1e-9 && fabs(h.seg_ms - 0.5) < 1e-9 && h.steps > 0);
    ck_assert_str_eq(h.device, "NVIDIA H200");
    const char *p = tmp_path(2, ".csv");
    ck_assert_int_eq(calib_host_write(&h, p, &err), 0);
    ck_assert_msg(calib_host_load(p, &back, &err) == 0, "%s", err.msg);
    ck_assert(fabs(back.host0_ms - h.host0_ms) < 1e-4 && fabs(back.seg_ms - h.seg_ms) < 1e-6 &&
              back.steps == h.steps && strcmp(back.device, h.device) == 0);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 2048;
    struct segment big = {.req_id = 0, .q = 512, .kv = 2048, .logit_rows = 0, .phase = PHASE_REFRESH};
    for (int k = 0; k < 16; k++, big.req_id++)
        step_desc_add(&sd, &big);
    double gpu_bound, small, after;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &gpu_bound, NULL, &err), 0);
    const struct calib_host slow = {.host0_ms = 2 * h.host0_ms, .seg_ms = 3 * h.seg_ms, .eager_gap_ms = h.eager_gap_ms,
                                    .steps = h.steps, .device = "another"};
    ck_assert_int_eq(calib_set_host(c, &slow, &err), 0);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &after, NULL, &err), 0);
    ck_assert(after == gpu_bound);
    step_desc_clear(&sd);
    struct segment g = {.req_id = 0, .q = 8, .kv = 480, .logit_rows = 8, .phase = PHASE_REUSE};
    step_desc_add(&sd, &g);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &small, NULL, &err), 0);
    ck_assert_msg(fabs(small * 1e3 - (2 * planted_host(0) + 3 * 0.5)) < 1e-6, "%g ms", small * 1e3);
    /* a runtime's own host line (torch-dllm-serve's) scales by the two hosts' ratio, not replaced:
     * a host taking twice the reference's 15 ms a step doubles it */
    const char *fast = tmp_file(4, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,device\n15,0.1,2,40,ref\n");
    const char *twice = tmp_file(5, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,device\n30,9,2,40,other\n");
    struct impl_profile own = {.name = "own", .host_line_own = true}, eager = {.name = "eager"};
    snprintf(own.host_ref, sizeof own.host_ref, "%s", fast);
    ck_assert_msg(calib_use_host(c, twice, &own, &err) == 0, "%s", err.msg);
    double scaled;
    ck_assert_int_eq(calib_step_s(c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert_msg(fabs(scaled * 1e3 - 2 * (2 * planted_host(0) + 3 * 0.5)) < 1e-6, "%g ms", scaled * 1e3);
    ck_assert_int_eq(calib_scale_host(c, 0.5, &err), 0);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert(fabs(scaled - small) < 1e-12);
    /* without a reference the host profile's line replaces it */
    ck_assert_msg(calib_use_host(c, twice, &eager, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert_msg(fabs(scaled * 1e3 - (30 + 9)) < 1e-6, "%g ms", scaled * 1e3);
    /* a host profile measured on an implementation's own loop replaces that implementation's line,
     * its own line or not, keeps its implementation when written back, and is refused for another */
    const char *loop = tmp_file(7, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n"
                                           "40,7,0,12,own,NVIDIA H100 (its loop, batched)\n");
    ck_assert_msg(calib_host_load(loop, &back, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(back.impl, "own");
    ck_assert_str_eq(back.device, "NVIDIA H100 (its loop, batched)");
    ck_assert_msg(calib_use_host(c, loop, &own, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_s(c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert_msg(fabs(scaled * 1e3 - (40 + 7)) < 1e-6, "%g ms", scaled * 1e3);
    ck_assert_int_ne(calib_use_host(c, loop, &eager, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "measured on own's own loop, not --impl eager's"));
    /* a derived loop (torch-fast-dllm: 1.398 times the harness's issue) priced with the harness's line
     * takes its multiple of it; with a line measured on its own loop, that line alone (the multiple is
     * in it). Oracle: the host-bound step's time against the two lines by hand. */
    struct cost_ctx cx = {.model = *model_find("llada-8b")};
    struct gpu_table *gt = gpu_table_create();
    ck_assert_int_eq(gpu_lookup(gt, "h200", &cx.gpu, NULL), 0);
    gpu_table_destroy(gt);
    ck_assert_int_eq(impl_resolve("torch-fast-dllm", &cx.impl, NULL), 0);
    ck_assert(cx.impl.host_factor > 1.3);
    ck_assert_msg(calib_use_host(c, twice, &cx.impl, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_ctx_s(&cx, c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert_msg(fabs(scaled * 1e3 - cx.impl.host_factor * (30 + 9)) < 1e-6, "%g ms", scaled * 1e3);
    const char *fast_loop = tmp_file(2, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n"
                                                "50,0,0,64,torch-fast-dllm,NVIDIA H200 (fast-dllm's own loop)\n");
    ck_assert_msg(calib_use_host(c, fast_loop, &cx.impl, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(calib_step_ctx_s(&cx, c, &sd, false, &scaled, NULL, &err), 0);
    ck_assert_msg(fabs(scaled * 1e3 - 50) < 1e-6, "%g ms", scaled * 1e3);
    const char *again = tmp_path(0, ".csv");
    struct calib_host reread;
    ck_assert_int_eq(calib_host_write(&back, again, &err), 0);
    ck_assert_msg(calib_host_load(again, &reread, &err) == 0, "%s", err.msg);
    ck_assert(strcmp(reread.impl, "own") == 0 && strcmp(reread.device, back.device) == 0 && reread.seg_ms == 7);
    loop = tmp_file(1, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,impl,device\n40,7,0,12,,X\n");
    ck_assert_int_ne(calib_host_load(loop, &back, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, ".csv:2: expected host0_ms,seg_ms,eager_gap_ms,steps,impl,device"));
    snprintf(own.host_ref, sizeof own.host_ref, "%s", tmp_path(6, ".csv"));
    ck_assert_int_ne(calib_use_host(c, twice, &own, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--host"));
    /* a bad host file names its line; an engine's calibration has no host */
    p = tmp_file(3, ".csv", "host0_ms,seg_ms,eager_gap_ms,steps,device\n12,-1,2,40,X\n");
    ck_assert_int_ne(calib_host_load(p, &back, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, ".csv:2: expected host0_ms,seg_ms,eager_gap_ms,steps,device"));
    struct calib_data e;
    struct calib *engine;
    planted(&e);
    ck_assert_int_eq(calib_fit(&e, &engine, &err), 0);
    ck_assert_int_ne(calib_host_of(engine, &back, &err), 0);
    ck_assert_int_ne(calib_set_host(engine, &slow, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "measured no host apart from its GPU"));
    ck_assert_int_ne(calib_scale_host(engine, 2, &err), 0);
    calib_free(engine);
    calib_data_free(&e);
    step_desc_free(&sd);
    calib_free(c);
    calib_data_free(&d);
}
END_TEST

START_TEST(shipped_calibration_prices_a_run)
{
    struct sim_config c;
    test_config(&c);
    snprintf(c.cost, sizeof c.cost, "calibrated");
    c.requests = 30;
    c.rps = 2;
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_int_eq(sim_run(s, &err), 0);
    struct sim_summary m;
    sim_get_summary(s, &m);
    ck_assert_int_eq(m.num_finished, 30);
    ck_assert(m.ops.op_s[OP_GATE_UP] > 0 && m.ops.op_s[OP_ATTN] > 0);
    sim_destroy(s);
    /* a calibration of another model, or none for this GPU, is refused */
    snprintf(c.model, sizeof c.model, "qwen2.5-3b");
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "no calibration"));
    test_config(&c);
    snprintf(c.cost, sizeof c.cost, "calibrated");
    snprintf(c.model, sizeof c.model, "dream-7b");
    snprintf(c.calib, sizeof c.calib, "%.900s/calib/h200-llada-8b-tessera.csv", c.datadir);
    ck_assert_ptr_null(sim_create(&c, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "a calibration of model llada-8b"));
    /* steps beyond the profiled range stop the run unless extrapolation is on */
    test_config(&c);
    snprintf(c.cost, sizeof c.cost, "calibrated");
    snprintf(c.lengths, sizeof c.lengths, "fixed:3000,256");
    test_param(&c, "max-num-batched-tokens", 30000);
    c.rps = 50;
    c.requests = 40;
    s = sim_create(&c, &err);
    ck_assert(s != NULL);
    ck_assert_int_ne(sim_run(s, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "beyond the profiled range"));
    sim_destroy(s);
    c.extrapolate = true;
    s = sim_create(&c, &err);
    ck_assert_int_eq(sim_run(s, &err), 0);
    sim_destroy(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calib");
    ck_case(s, planted_coefficients_recovered, 60);
    ck_case(s, beyond_the_profile_by_hand, 60);
    ck_case(s, block_causal_attention_priced_by_its_pairs, 60);
    ck_case(s, monotone_between_points, 60);
    ck_case(s, ffn_chunks_priced_piece_by_piece, 60);
    ck_case(s, ops_scaled_to_uninstrumented_totals, 60);
    ck_case(s, transfer_scales_by_roofline_ratios, 60);
    ck_case(s, split_transfer_scales_gpu_time_by_its_ops, 60);
    ck_case(s, bad_profiles_are_refused, 60);
    ck_case(s, roundtrip_csv, 60);
    ck_case(s, selection_priced_from_its_steps, 60);
    ck_case(s, selection_loop_is_a_host_term, 60);
    ck_case(s, host_bound_steps_take_the_host_time, 60);
    ck_case(s, row_loop_under_the_calibration, 60);
    ck_case(s, cached_keys_under_the_calibration, 60);
    ck_case(s, op_scale_applies_before_the_host, 60);
    ck_case(s, the_host_line_reports_how_far_its_steps_lie, 60);
    ck_case(s, a_host_profile_swaps_the_host_line, 60);
    ck_case(s, a_host_profile_of_the_machine_scales_the_line, 60);
    ck_case(s, shipped_calibration_prices_a_run, 60);
    ck_case(s, attention_launch_term_over_mixed_lengths, 60);
    ck_loop_case(s, attention_launch_term_recovered, 0, 4, 60);
    ck_case(s, attention_packed_law_recovered, 60);
    ck_case(s, attention_rules_travel_with_the_profile, 60);
    ck_case(s, uneven_steps, 60);
    ck_case(s, mixed_steps, 60);
    ck_case(s, token_curves_take_the_steps_with_logits, 60);
    ck_case(s, a_part_is_not_a_calibration, 60);
    ck_case(s, merge_takes_row_medians, 60);
    ck_case(s, merge_over_replaces_steps, 60);
    ck_case(s, feature_cache_priced_from_its_steps, 60);
    ck_case(s, lm_head_over_carried_rows, 60);
    return run_suite("calib", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
