/*
 * cli_calib_eval.c: `tessera calib eval | price`, the subcommands that price steps with a calibration
 * (cli_calib.c holds the others and the dispatcher), and how a calibration is found and fitted.
 *
 *   eval     for a run replayed on the engine (tessera engine replay), prices every replayed step
 *            with the calibrated and the roofline back ends and compares with the measured times
 *   price    one step priced per op by both back ends
 */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "calib.h"
#include "cli.h"
#include "cli_calib.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"
#include "setup.h"
#include "sim.h"
#include "step_desc.h"
#include "whole.h"

int cli_calib_load_fit(const char *path, const char *gpu, struct calib **out, struct ts_err *err)
{
    struct calib_data d;
    if (calib_data_load(path, &d, err))
        return -1;
    int rc = calib_data_validate(&d, gpu, err) || calib_fit(&d, out, err) ? -1 : 0;
    calib_data_free(&d);
    return rc;
}

/* The shipped calibration of gpu, model and impl under the default data directory. */
void cli_calib_shipped_path(const char *gpu, const char *model, const char *impl, char *path, size_t len)
{
    struct sim_config dc;
    sim_config_defaults(&dc);
    calib_shipped_path(dc.datadir, gpu, model, impl, path, len);
}

/* The calibration for ctx's GPU, model and implementation: calib_path, or the shipped one; its
 * path is left in path. */
/* The calibration of ctx's GPU, model and implementation (calib_path, else the shipped one: a derived
 * implementation's base's), fitted,
 * its host swapped for the host profile host_path where one is given (--host; calib_use_host). */
static int load_for(const struct cost_ctx *ctx, const char *calib_path, const char *host_path, char *path,
                    size_t len, struct calib **out, struct ts_err *err)
{
    if (calib_path)
        snprintf(path, len, "%s", calib_path);
    else
        cli_calib_shipped_path(ctx->gpu.name, ctx->model.name,
                               ctx->impl.calib_base[0] ? ctx->impl.calib_base : ctx->impl.name, path, len);
    if (cli_calib_load_fit(path, ctx->gpu.name, out, err))
        return -1;
    if (host_path && calib_use_host(*out, host_path, &ctx->impl, err)) {
        calib_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* --- eval -------------------------------------------------------------------------------- */

struct eval_acc {
    double *rel; /* per-step relative errors */
    size_t n, cap;
    double pred, meas;
};

static void report_acc(const char *name, struct eval_acc *a)
{
    if (a->n == 0)
        return;
    double *abs_rel = xmalloc(sizeof *abs_rel * a->n);
    for (size_t i = 0; i < a->n; i++)
        abs_rel[i] = fabs(a->rel[i]);
    gsl_sort(abs_rel, 1, a->n);
    printf("  %-11s per-step MAPE %6.1f%%   p90 |error| %6.1f%%   total time %+6.1f%%\n", name,
           100 * gsl_stats_mean(abs_rel, 1, a->n), 100 * gsl_stats_quantile_from_sorted_data(abs_rel, 1, a->n, 0.9),
           100 * (a->pred - a->meas) / a->meas);
    free(abs_rel);
}

/* Per op, over the replayed steps whose ops were timed (engine replay --ops). */
struct op_acc {
    double meas, pred[2]; /* seconds in all: measured, calibrated, roofline */
    double abs_rel;       /* sum of |calibrated - measured| / measured over the steps that ran it */
    int64_t n;
};

/* Reads the measured op times of one step into meas_s (zeros where none); false if it has none. */
static bool step_ops(sqlite3_stmt *oq, int64_t run, int64_t step, double *meas_s)
{
    bool any = false;
    for (int i = 0; i < OP_COUNT; i++)
        meas_s[i] = 0;
    sqlite3_reset(oq);
    sqlite3_bind_int64(oq, 1, run);
    sqlite3_bind_int64(oq, 2, step);
    while (sqlite3_step(oq) == SQLITE_ROW) {
        enum cost_op op;
        if (cost_op_parse((const char *)sqlite3_column_text(oq, 0), &op) == 0) {
            meas_s[op] += sqlite3_column_double(oq, 1) * 1e-3;
            any = true;
        }
    }
    return any;
}

static void report_ops(const struct op_acc *a, int64_t steps)
{
    double total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        total += a[i].meas;
    if (steps == 0 || total <= 0)
        return;
    printf("  per op over %lld steps with op times (engine replay --ops; each op's event time scaled to its "
           "step's):\n", (long long)steps);
    printf("    %-10s %11s %7s %12s %10s %12s\n", "op", "measured s", "share", "calibrated", "op MAPE", "roofline");
    for (int i = 0; i < OP_COUNT; i++) {
        if (a[i].meas <= 0)
            continue;
        printf("    %-10s %11.4f %6.1f%% %+11.1f%% %9.1f%% %+11.1f%%\n", cost_op_name((enum cost_op)i), a[i].meas,
               100 * a[i].meas / total, 100 * (a[i].pred[0] - a[i].meas) / a[i].meas,
               a[i].n ? 100 * a[i].abs_rel / (double)a[i].n : 0.0, 100 * (a[i].pred[1] - a[i].meas) / a[i].meas);
    }
}

/* Prices a replayed step (measured meas seconds; its ops' measured seconds meas_op, or NULL) with
 * the calibrated and the roofline back ends (preds[0], preds[1]) into their accumulators, and with
 * meas_op each op's predictions and errors into ops. */
/* The replay's card (calib eval --clock): its clock's parameters and state, NULL where not modelled. */
struct eval_clock {
    const struct clock_params *p;
    struct clock_state st;
};

/* calib eval --clock: the replay's card's clock where it is modelled (auto, on), or not (off; auto
 * for a card without a measured clock); says why on stderr when on cannot be. */
static int eval_clock_init(enum cfg_clock clock, const char *gpu, struct clock_params *cp, struct eval_clock *clk)
{
    if (clock == CLOCK_OFF)
        return 0;
    struct sim_config sc;
    sim_config_defaults(&sc);
    struct ts_err err;
    const int found = clock_params_find(sc.datadir, gpu, cp, &err);
    if (found < 0 || (found == 0 && clock == CLOCK_ON)) {
        fprintf(stderr, "tessera calib eval: --clock %s: %s\n", cfg_clock_names[clock],
                found < 0 ? err.msg : "no clock measured for the run's GPU (sim/data/clock.csv)");
        return -1;
    }
    clk->p = found ? cp : NULL;
    return 0;
}

static int eval_step(const struct cost_ctx *ctx, const struct step_desc *sd, double meas, const double *meas_op,
                     struct eval_acc acc[2], struct op_acc *ops, double preds[2], double cal_op[OP_COUNT],
                     struct eval_clock *clk, struct ts_err *err)
{
    const struct cost_ops *be[2] = {&cost_calibrated, &cost_roofline};
    struct cost_breakdown bds[2];
    for (int b = 0; b < 2; b++)
        if (be[b]->step_s(ctx, sd, &preds[b], &bds[b], err))
            return -1;
    if (clk->p) /* the calibrated price at the card's state: the replay ran its steps back to back */
        preds[0] = clock_step(clk->p, &clk->st, clk->st.end_ns, preds[0], bds[1].flops);
    for (int b = 0; b < 2; b++) {
        const double pred = preds[b];
        const struct cost_breakdown bd = bds[b];
        ts_grow((void **)&acc[b].rel, &acc[b].cap, acc[b].n + 1, sizeof *acc[b].rel);
        acc[b].rel[acc[b].n++] = (pred - meas) / meas;
        acc[b].pred += pred;
        acc[b].meas += meas;
        if (b == 0)
            memcpy(cal_op, bd.op_s, sizeof bd.op_s);
        for (int i = 0; meas_op && i < OP_COUNT; i++) {
            ops[i].pred[b] += bd.op_s[i];
            if (b == 0 && meas_op[i] > 0) {
                ops[i].meas += meas_op[i];
                ops[i].abs_rel += fabs(bd.op_s[i] - meas_op[i]) / meas_op[i];
                ops[i].n++;
            }
        }
    }
    return 0;
}

/* One step of calib eval --csv: its shape, its measured and predicted seconds, and each op's
 * measured (empty where the replay did not time ops) and calibrated seconds. */
static void write_csv_step(FILE *cf, int64_t step, const struct step_desc *sd, double meas, const double preds[2],
                           const double *meas_op, const double *cal_op)
{
    int32_t max_kv = 0;
    for (int i = 0; i < sd->num_segs; i++)
        max_kv = TS_MAX(max_kv, sd->segs[i].kv);
    fprintf(cf, "%lld,%d,%lld,%lld,%lld,%d,%.9f,%.9f,%.9f", (long long)step, sd->num_segs,
            (long long)sd->tot.q_tokens, (long long)sd->tot.kv_tokens, (long long)sd->tot.logit_rows, max_kv, meas,
            preds[0], preds[1]);
    for (int i = 0; i < OP_COUNT; i++) {
        if (meas_op)
            fprintf(cf, ",%.9f", meas_op[i]);
        else
            fputc(',', cf);
        fprintf(cf, ",%.9f", cal_op[i]);
    }
    fputc('\n', cf);
}

/* The knobs of a run recorded before its steps carried them, from its configuration; a run with expert
 * parallelism refused (the engine replays none). */
static int derived_knobs(const struct sim_config *c, const struct sim_setup *setup, const struct model_cfg *m,
                         int64_t v[STEP_KNOBS], struct ts_err *err)
{
    struct step_desc sd;
    step_desc_init(&sd);
    if (c->ep > 1) /* (the engine runs no expert parallelism) */
        return ts_fail(err, "a run with --ep %d: the engine replays no expert-parallel steps", c->ep);
    sim_config_knobs(c, setup, m, &sd);
    step_knobs_get(&sd, v);
    return 0;
}

/* The recorded steps (db_steps_prepare), read alongside the replayed ones: on a row, at the end. */
struct knob_cursor {
    sqlite3_stmt *q;
    bool row, done;
};

/* sd's knobs for step `step`: as the run recorded them, where it did, else derived's */
static void recorded_knobs(struct knob_cursor *kc, int64_t step, const int64_t derived[STEP_KNOBS], struct step_desc *sd)
{
    for (;;) {
        if (!kc->row && !kc->done)
            kc->done = !(kc->row = sqlite3_step(kc->q) == SQLITE_ROW);
        if (!kc->row || sqlite3_column_int64(kc->q, 0) >= step)
            break;
        kc->row = false;
    }
    step_knobs_set(sd, derived);
    if (kc->row && sqlite3_column_int64(kc->q, 0) == step)
        db_step_knobs(kc->q, sd);
}

/* The run database at dbpath opened by the one rule for reading one (db_open_run, db_bounded), and its
 * latest replayed run's id and configuration the current row of *q; -1, said on stderr, where it has none. */
static int open_replayed(const char *dbpath, sqlite3 **db, sqlite3_stmt **q)
{
    struct ts_err err;
    if (db_open_run(dbpath, db, &err) || db_bounded(*db, dbpath, -1, &err)) {
        fprintf(stderr, "tessera calib eval: %s\n", err.msg);
        return -1;
    }
    if (sqlite3_prepare_v2(*db, "SELECT e.run_id, r.config_json FROM engine_steps e JOIN runs r USING (run_id) "
                                "ORDER BY e.run_id DESC LIMIT 1", -1, q, NULL) != SQLITE_OK ||
        sqlite3_step(*q) != SQLITE_ROW) {
        fprintf(stderr, "tessera calib eval: %s: no replayed run (run tessera engine replay first)\n", dbpath);
        return -1;
    }
    return 0;
}

int cli_calib_eval(const char *dbpath, const char *calib_path, const char *host_path, bool extrapolate,
                   enum cfg_clock clock, const char *csv)
{
    FILE *cf = NULL;
    struct ts_whole w = {.slot = -1}; /* (--csv: made whole or not at all) */
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL, *sq = NULL, *oq = NULL, *kq = NULL;
    struct calib *cal = NULL;
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    struct eval_acc acc[2] = {{0}, {0}};
    struct op_acc ops[OP_COUNT] = {{0}};
    int64_t op_steps = 0;
    int rc = EXIT_USAGE;
    if (open_replayed(dbpath, &db, &q))
        goto done;
    int64_t run = sqlite3_column_int64(q, 0);
    json_error_t jerr;
    json_t *cfg = json_loads((const char *)sqlite3_column_text(q, 1), 0, &jerr);
    sqlite3_finalize(q);
    q = NULL;
    struct cost_ctx ctx = {0};
    struct gpu_table *gt = gpu_table_create();
    struct sim_config run_cfg;
    struct sim_setup setup;
    int bad = sim_config_from_json(cfg, &run_cfg, &err) || sim_setup_resolve(&run_cfg, &setup, &err) ||
              sim_model_resolve(&run_cfg, &ctx.model, &err) || gpu_lookup(gt, run_cfg.gpu, &ctx.gpu, &err);
    gpu_table_destroy(gt);
    int64_t derived[STEP_KNOBS];
    if (!bad) {
        ctx.impl = setup.impl;
        bad = derived_knobs(&run_cfg, &setup, &ctx.model, derived, &err);
    }
    char path[CFG_PATH + 256];
    if (!bad)
        bad = load_for(&ctx, calib_path, host_path, path, sizeof path, &cal, &err);
    json_decref(cfg);
    if (bad) {
        fprintf(stderr, "tessera calib eval: run %lld: %s\n", (long long)run, cfg ? err.msg : "unreadable config");
        goto done;
    }
    ctx.calib = cal;
    ctx.extrapolate = extrapolate;
    struct clock_params cp;
    struct eval_clock clk = {0};
    if (eval_clock_init(clock, ctx.gpu.name, &cp, &clk))
        goto done;
    if (sqlite3_prepare_v2(db, "SELECT step_id, measured_ns, predicted_ns FROM engine_steps WHERE run_id = ? "
                               "ORDER BY step_id", -1, &q, NULL) != SQLITE_OK ||
        db_segments_prepare(db, &sq) != SQLITE_OK || db_steps_prepare(db, &kq) != SQLITE_OK) {
        fprintf(stderr, "tessera calib eval: %s: %s\n", dbpath, sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(kq, 1, run);
    struct knob_cursor kc = {kq, false, false};
    /* per-op measurements, where the replay took them */
    if (sqlite3_prepare_v2(db, "SELECT op, ms FROM engine_step_ops WHERE run_id = ? AND step_id = ?", -1, &oq,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(oq);
        oq = NULL;
    }
    if (csv && ts_whole_open(&w, csv, TS_WHOLE_REPLACE, dbpath, &err)) {
        fprintf(stderr, "tessera calib eval: %s\n", err.msg);
        goto done;
    }
    cf = csv ? w.f : NULL;
    if (cf) { /* each op's measured and calibrated seconds beside the step's, where the replay timed ops */
        fprintf(cf, "step_id,segments,q_tokens,kv_tokens,logit_rows,max_kv,measured_s,calibrated_s,roofline_s");
        for (int i = 0; i < OP_COUNT; i++)
            fprintf(cf, ",%s_measured_s,%s_calibrated_s", cost_op_name((enum cost_op)i), cost_op_name((enum cost_op)i));
        fputc('\n', cf);
    }
    int64_t steps = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t step = sqlite3_column_int64(q, 0);
        double meas = (double)sqlite3_column_int64(q, 1) * 1e-9;
        recorded_knobs(&kc, step, derived, &sd);
        if (db_read_step(sq, run, step, &sd, &err)) {
            fprintf(stderr, "tessera calib eval: %s: %s\n", dbpath, err.msg);
            goto done;
        }
        if (steps++ == 0 || meas <= 0)
            continue; /* the replay's first step tunes the GEMMs */
        double meas_op[OP_COUNT], preds[2], cal_op[OP_COUNT];
        const bool have_ops = oq && step_ops(oq, run, step, meas_op);
        op_steps += have_ops;
        if (eval_step(&ctx, &sd, meas, have_ops ? meas_op : NULL, acc, ops, preds, cal_op, &clk, &err)) {
            fprintf(stderr, "tessera calib eval: step %lld: %s\n", (long long)step, err.msg);
            goto done;
        }
        if (cf)
            write_csv_step(cf, step, &sd, meas, preds, have_ops ? meas_op : NULL, cal_op);
    }
    printf("run %lld of %s: %lld replayed steps (%s, %s), measured %.3f s in all%s\n", (long long)run, dbpath,
           (long long)steps, ctx.model.name, ctx.gpu.name, acc[0].meas,
           clk.p ? "; calibrated: at the card's clock state (--clock)" : "");
    report_acc("calibrated", &acc[0]);
    report_acc("roofline", &acc[1]);
    report_ops(ops, op_steps);
    rc = 0;
done:
    if (cf && ts_whole_close(&w, rc != 0, &err) && rc == 0)
        rc = (fprintf(stderr, "tessera calib eval: %s\n", err.msg), 1);
    sqlite3_finalize(q);
    sqlite3_finalize(sq);
    sqlite3_finalize(kq);
    sqlite3_finalize(oq);
    sqlite3_close(db);
    calib_free(cal);
    step_desc_free(&sd);
    free(acc[0].rel);
    free(acc[1].rel);
    return rc;
}

/* --- price ------------------------------------------------------------------------------- */

/* How the profiled engine launches a step's attention, by the calibration's launch rules: the
 * segments on each kernel, and the mma.sync launch's query heads a block, key splits and tiles. */
static void print_launch(const struct calib *cal, const struct step_desc *sd)
{
    struct calib_attn_launch l;
    calib_attn_launch(cal, sd, &l);
    printf("%-10s attention as the profiled engine launches it (launch rules %d):", "launch", l.rules);
    if (l.wgmma_segs > 0)
        printf(" %d segment%s on the wgmma kernel%s", l.wgmma_segs, l.wgmma_segs > 1 ? "s" : "",
               l.mma_segs > 0 ? "," : "");
    if (l.mma_segs > 0)
        printf(" %d segment%s on the mma.sync kernel, %d query head%s a block, %d key split%s, %d-key K/V tiles",
               l.mma_segs, l.mma_segs > 1 ? "s" : "", l.heads_a_block, l.heads_a_block > 1 ? "s" : "",
               l.splits, l.splits > 1 ? "s" : "", l.tile_keys);
    printf("\n");
}

/* The comma-separated whole numbers of spec into v[0..max), each 0 to INT32_MAX: their count, or -1
 * for anything else (an empty field, trailing text, more than max). */
static int parse_counts(const char *spec, int32_t *v, int max)
{
    char buf[128];
    if (!spec || snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return -1;
    int n = 0;
    for (char *field = buf, *comma; field; field = comma ? comma + 1 : NULL) {
        comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        int64_t x;
        if (n == max || ts_parse_i64(field, &x) || x < 0 || x > INT32_MAX)
            return -1;
        v[n++] = (int32_t)x;
    }
    return n;
}

/* `calib price`: one step (segs sequences of q tokens over kv cached keys, logit rows each) priced
 * by the calibrated and the roofline back ends, per op. */
int cli_calib_price(const char *gpu, const char *model, const char *impl, const char *calib_path,
                    const char *host_path, const char *spec, const char *attn_block, bool extrapolate,
                    bool roofline_only, bool iter_smooth)
{
    int32_t st[6] = {1, 0, 0, 0, 2048, 1}; /* segs, q, kv, rows, chunk, ffn */
    int64_t block = 0;
    if (attn_block && (ts_parse_i64(attn_block, &block) || block < 0 || block > (1 << 20))) {
        fprintf(stderr, "tessera calib price: --attn-block '%s': a block size in tokens, 0 (bidirectional) to %d\n",
                attn_block, 1 << 20);
        return EXIT_USAGE;
    }
    const int fields = parse_counts(spec, st, 6);
    const int32_t segs = st[0], q = st[1], kv = st[2], rows = st[3], chunk = st[4], ffn = st[5];
    if (fields < 4 || segs < 1 || q < 1 || rows > q || ffn < 1 || ffn > 64) {
        fprintf(stderr, "tessera calib price: --step SEGS,Q,KV,LOGIT_ROWS[,CHUNK[,FFN_CHUNKS]] (Q >= 1, LOGIT_ROWS "
                        "<= Q, FFN_CHUNKS 1 to 64)\n");
        return EXIT_USAGE;
    }
    struct ts_err err;
    struct cost_ctx ctx = {0};
    struct gpu_table *gt = gpu_table_create();
    int bad = model_resolve(model, &ctx.model, &err) || gpu_lookup(gt, gpu, &ctx.gpu, &err) ||
              impl_resolve(impl, &ctx.impl, &err);
    gpu_table_destroy(gt);
    struct calib *cal = NULL;
    char path[CFG_PATH + 256];
    if (!bad && !roofline_only)
        bad = load_for(&ctx, calib_path, host_path, path, sizeof path, &cal, &err);
    if (bad) {
        fprintf(stderr, "tessera calib price: %s\n", err.msg);
        return EXIT_USAGE;
    }
    ctx.calib = cal;
    ctx.extrapolate = extrapolate;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = chunk;
    sd.attn_block = (int32_t)block;
    step_shape_desc(&(struct step_shape){.segs = segs, .q = q, .kv = kv, .logit_rows = rows}, 0, &sd);
    sd.ffn_chunks = ffn; /* lazy chunking's FFN chunks: the step's rows in that many pieces */
    sd.iter_smooth = iter_smooth;
    struct cost_breakdown a = {0}, b;
    double ca = 0, rb;
    int rc = 0;
    if ((!roofline_only && cost_calibrated.step_s(&ctx, &sd, &ca, &a, &err)) ||
        cost_roofline.step_s(&ctx, &sd, &rb, &b, &err)) {
        fprintf(stderr, "tessera calib price: %s\n", err.msg);
        rc = EXIT_USAGE;
    } else {
        printf("%s on %s (%s): %d x q %d over %d cached, %d logit rows each (chunks of %d)", ctx.model.name,
               ctx.gpu.name, ctx.impl.name, segs, q, kv, rows, chunk);
        if (block > 0)
            printf(", attention block-causal over blocks of %lld", (long long)block);
        printf("%s%s\n", iter_smooth ? ", IterSmooth" : "", roofline_only ? ", roofline" : "");
        if (!roofline_only)
            printf("%-10s %12s %12s\n", "op", "calibrated", "roofline");
        for (int op = 0; op <= OP_COUNT; op++) { /* every op priced, then the step (op == OP_COUNT) */
            const bool step = op == OP_COUNT;
            if (!step && a.op_s[op] <= 0 && b.op_s[op] <= 0)
                continue;
            printf("%-10s", step ? "step" : cost_op_name((enum cost_op)op));
            if (!roofline_only)
                printf(" %9.3f ms", (step ? ca : a.op_s[op]) * 1e3);
            printf(" %9.3f ms\n", (step ? rb : b.op_s[op]) * 1e3);
        }
        if (!roofline_only)
            print_launch(cal, &sd);
    }
    step_desc_free(&sd);
    calib_free(cal);
    return rc;
}
