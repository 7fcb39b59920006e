/*
 * cli_calib.c: `tessera calib import | fit | show | eval | transfer | price`.
 *
 *   import   an engine profile (the engine_profile table of a profile database, or its CSV) is
 *            checked against the GPU it claims and written as a calibration CSV
 *   merge    several profiles of one engine (machine instances, times) as one calibration: the
 *            median of each op's times over them
 *   fit/show fits the per-op models of a calibration and prints each with its residuals
 *   price    one step priced per op by both back ends
 *   transfer carries a calibration to another GPU: each op's roofline part priced there, the rest
 *            kept (an estimate)
 *   eval     for a run replayed on the engine (tessera engine replay), prices every replayed step
 *            with the calibrated and the roofline back ends and compares with the measured times
 */
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "calib.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"
#include "policy.h"
#include "sim.h"
#include "step_desc.h"

static void calib_usage(FILE *f)
{
    fprintf(f,
"usage: tessera calib import PROFILE.db|PROFILE.csv --gpu NAME [--gpu-file FILE] --out FILE.csv\n"
"       tessera calib merge PROFILE... [--over PROFILE]... --gpu NAME --out FILE.csv\n"
"       tessera calib fit FILE.csv|--calib FILE.csv --gpu NAME\n"
"       tessera calib show [FILE.csv|--calib FILE.csv] [--gpu NAME] [--model NAME] [--impl NAME] [--from GPU]\n"
"       tessera calib eval --db RUN.db [--calib FILE.csv] [--host HOST] [--extrapolate] [--clock auto|on|off]\n"
"                         [--csv STEPS.csv]\n"
"       tessera calib transfer FILE.csv --from GPU --to GPU --out FILE.csv [--impl NAME]\n"
"       tessera calib host FILE.csv [--out HOST.csv]\n"
"       tessera calib clock TRACE.csv --gpu NAME [--gpu-file FILE] [--model NAME] [--held-tflops T]\n"
"       tessera calib price --step SEGS,Q,KV,LOGIT_ROWS[,CHUNK[,FFN_CHUNKS]] [--attn-block N] [--iter-smooth] [--gpu --model --impl\n"
"                         --calib]\n"
"                         [--host HOST] [--roofline]\n"
"\n"
"import  checks an engine profile (tessera engine profile) against the GPU it claims (one GPU,\n"
"        one model, every op at 3+ token counts, GEMM times the model can have on that GPU) and\n"
"        writes it as a calibration\n"
"merge   one calibration from several profiles of one engine, GPU and model (databases or CSVs,\n"
"        each checked as import checks it): every op of every profiled step takes the median of\n"
"        its times over them; a step only some profiles hold takes the median of those. A\n"
"        profile's level moves with the machine instance it ran on (about 1-2%% on the H200):\n"
"        the median of three instances' profiles is steadier than any one; --over PROFILE (any\n"
"        number): the steps it holds are taken from the --over profiles alone, the others'\n"
"        measurements of them dropped (a part of the grid profiled again after its kernels\n"
"        changed)\n"
"fit     fits the per-op models (monotone interpolation over tokens, per-chunk LM head, least\n"
"        squares for attention) and prints them with their residuals; show does the same for a\n"
"        shipped calibration [h200 / llada-8b / tessera]; for a GPU without one, the calibration\n"
"        of --from [h200] carried over by roofline ratios, with what that assumes\n"
"eval    prices every step a run replayed on the engine (table engine_steps) with the calibrated\n"
"        and the roofline back ends: per-step MAPE, 90th-percentile error, total-time error;\n"
"        --csv writes every step's shape, its measured and predicted seconds, and each op's\n"
"        measured (where the replay timed ops: engine replay --ops) and calibrated seconds;\n"
"        --clock (as tessera sim's [auto]): the calibrated prices at the card's clock state, the\n"
"        steps run back to back as the replay ran them\n"
"price   one step (SEGS sequences of Q tokens over KV cached keys, LOGIT_ROWS logit rows each,\n"
"        LM head in CHUNK-row chunks [2048], the FFN in FFN_CHUNKS pieces [1]) priced per op by the\n"
"        calibrated and roofline back ends;\n"
"        --iter-smooth: with dInfer's IterSmooth (its GEMM and softmax over the logit rows);\n"
"        --attn-block N: its attention block-causal over blocks of N tokens (a block-causal model\n"
"        under the block policy, as the simulator prices it: step_desc.attn_block) [0: bidirectional];\n"
"        its last line says how the profiled engine launches that attention, by the calibration's\n"
"        launch rules: the segments on each kernel, and the mma.sync launch's query heads a block\n"
"        (GQA packing), key splits and K/V tile size; --roofline prices it by the roofline\n"
"        alone, which needs no calibration (any GPU, model and implementation profile)\n"
"transfer  estimates a calibration for a GPU without measuring on it: each profiled op's roofline\n"
"        time is priced on the other GPU (over the two GPUs' measured ceilings where both were\n"
"        measured: tessera list gpus --measured) and what it took beyond it is kept (an op faster\n"
"        than its roofline scales by the ratio whole); replace it with a measured calibration\n"
"        when you can\n"
"host    the host of a calibration whose host was measured apart from its GPU (eager PyTorch: the\n"
"        harness's host_ms and gpu_ms): a step's issue time as a line in its segments, fitted on the\n"
"        host-bound steps, and the middle 80%% of those steps as multiples of it (how steady the\n"
"        host was); --out writes the line as a host profile. --host HOST (a host profile, or a\n"
"        calibration whose host is taken) on price, eval and tessera sim prices the calibration's\n"
"        GPU work issued by that machine's CPU: a calibration carried to another GPU (transfer)\n"
"        keeps the host it was measured with unless given the other machine's\n"
"clock   fits the card's clock under its power limit (how much slower a step runs once the card\n"
"        holds its limit, k; the load's time constant, tau; the loads where the clock begins to\n"
"        fall and where it is held, lo and hi) to the warm traces of an engine_bench (--warm-trace\n"
"        FILE --idle-s S, or --only clock: each step from a cool card) of the model [llada-8b],\n"
"        each step's load its FLOPs over the GEMM rate the card holds (--held-tflops, the bench's\n"
"        ceilings line; else the card's in tessera list gpus --measured); prints the fit and its\n"
"        line for clock.csv, which tessera sim --clock reads (this machine's calibrations' folder,\n"
"        then sim/data)\n"
"\n"
"An option another subcommand takes is refused here, not ignored. A calibration records how the\n"
"engine it profiled launches attention (its attn_rules column) and prices attention that way;\n"
"show prints it.\n");
}

static int load_fit(const char *path, const char *gpu, struct calib **out, struct ts_err *err)
{
    struct calib_data d;
    if (calib_data_load(path, &d, err))
        return -1;
    int rc = calib_data_validate(&d, gpu, err) || calib_fit(&d, out, err) ? -1 : 0;
    calib_data_free(&d);
    return rc;
}

/* The shipped calibration of gpu, model and impl under the default data directory. */
static void shipped_path(const char *gpu, const char *model, const char *impl, char *path, size_t len)
{
    struct sim_config dc;
    sim_config_defaults(&dc);
    calib_shipped_path(dc.datadir, gpu, model, impl, path, len);
}

/* The calibration for ctx's GPU, model and implementation: calib_path, or the shipped one; its
 * path is left in path. */
/* The calibration of ctx's GPU, model and implementation (calib_path, else the shipped one), fitted,
 * its host swapped for the host profile host_path where one is given (--host; calib_use_host). */
static int load_for(const struct cost_ctx *ctx, const char *calib_path, const char *host_path, char *path,
                    size_t len, struct calib **out, struct ts_err *err)
{
    if (calib_path)
        snprintf(path, len, "%s", calib_path);
    else
        shipped_path(ctx->gpu.name, ctx->model.name, ctx->impl.name, path, len);
    if (load_fit(path, ctx->gpu.name, out, err))
        return -1;
    if (host_path && calib_use_host(*out, host_path, &ctx->impl, err)) {
        calib_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
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
static int derived_knobs(const struct sim_config *c, const struct model_cfg *m, int64_t v[STEP_KNOBS],
                         struct ts_err *err)
{
    struct step_desc sd;
    step_desc_init(&sd);
    if (c->ep > 1) /* (the engine runs no expert parallelism) */
        return ts_fail(err, "a run with --ep %d: the engine replays no expert-parallel steps", c->ep);
    if (sim_config_knobs(c, m, &sd, err))
        return -1;
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

static int cmd_eval(const char *dbpath, const char *calib_path, const char *host_path, bool extrapolate,
                    enum cfg_clock clock, const char *csv)
{
    FILE *cf = NULL;
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
    if (db_open_read(dbpath, &db) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT e.run_id, r.config_json FROM engine_steps e JOIN runs r USING (run_id) "
                               "ORDER BY e.run_id DESC LIMIT 1", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        fprintf(stderr, "tessera calib eval: %s: no replayed run (run tessera engine replay first)\n", dbpath);
        goto done;
    }
    int64_t run = sqlite3_column_int64(q, 0);
    json_error_t jerr;
    json_t *cfg = json_loads((const char *)sqlite3_column_text(q, 1), 0, &jerr);
    sqlite3_finalize(q);
    q = NULL;
    struct cost_ctx ctx = {0};
    struct gpu_table *gt = gpu_table_create();
    struct sim_config run_cfg;
    int bad = sim_config_from_json(cfg, &run_cfg, &err) || sim_model_resolve(&run_cfg, &ctx.model, &err) ||
              gpu_lookup(gt, run_cfg.gpu, &ctx.gpu, &err) || impl_resolve(run_cfg.impl, &ctx.impl, &err);
    gpu_table_destroy(gt);
    int64_t derived[STEP_KNOBS];
    if (!bad)
        bad = derived_knobs(&run_cfg, &ctx.model, derived, &err);
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
    if (csv && !(cf = fopen(csv, "w"))) {
        fprintf(stderr, "tessera calib eval: %s: cannot create\n", csv);
        goto done;
    }
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
    if (cf)
        fclose(cf);
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
static int cmd_price(const char *gpu, const char *model, const char *impl, const char *calib_path,
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

/* A profile as import reads it: a database's engine_profile table or a CSV. */
static int load_profile(const char *path, struct calib_data *d, struct ts_err *err)
{
    return has_suffix(path, ".csv") ? calib_data_load(path, d, err) : calib_data_import_db(path, d, err);
}

/* `calib merge`: files[0..n), the last n_over of them --over profiles. */
static int cmd_merge(const char *const *files, size_t n, size_t n_over, const char *gpu, const char *out)
{
    struct calib_data *in = xcalloc(n, sizeof *in), merged = {0};
    struct ts_err err;
    size_t partial = 0, replaced = 0, loaded = 0;
    int rc = 0;
    for (; loaded < n && !rc; loaded++)
        if (load_profile(files[loaded], &in[loaded], &err)) {
            rc = -1;
        } else if (calib_data_validate(&in[loaded], gpu, &err)) {
            /* validate's message names the profile by model and GPU; say which file */
            char msg[sizeof err.msg];
            snprintf(msg, sizeof msg, "%s", err.msg);
            ts_fail(&err, "%s: %s", files[loaded], msg);
            rc = -1;
        }
    if (!rc)
        rc = calib_data_merge_over(in, files, n, n_over, &merged, &partial, &replaced, &err) ||
                     calib_data_validate(&merged, gpu, &err) || calib_data_write(&merged, out, &err) ? -1 : 0;
    if (rc)
        fprintf(stderr, "tessera calib merge: %s\n", err.msg);
    else if (!n_over)
        printf("%s: %zu rows of %s on %s, each the median of its times in %zu profiles (%zu rows held by "
               "fewer of them: the median of those)\n", out, merged.n, merged.model, merged.device, n, partial);
    else
        printf("%s: %zu rows of %s on %s, each the median of its times in %zu profiles, or in the %zu --over "
               "profiles where they hold its step (%zu rows held by fewer of them: the median of those; %zu "
               "rows of the others replaced)\n", out, merged.n, merged.model, merged.device, n - n_over, n_over,
               partial, replaced);
    for (size_t i = 0; i < loaded; i++)
        calib_data_free(&in[i]);
    free(in);
    calib_data_free(&merged);
    return rc ? EXIT_USAGE : 0;
}

/* d (measured on `from`) checked, carried over to `to` by roofline ratios, and the result checked
 * against `to`: what `calib transfer` writes and `calib show --gpu` shows. */
static int transfer_checked(const struct calib_data *d, const char *from, const char *to, const char *impl,
                            struct calib_data *out, struct ts_err *err)
{
    if (calib_data_validate(d, from, err) || calib_data_transfer(d, from, to, impl, out, err))
        return -1;
    if (calib_data_validate(out, to, err)) {
        calib_data_free(out);
        return -1;
    }
    return 0;
}

/* `calib show --gpu NAME` where no calibration was measured on NAME: the shipped one of `from`
 * carried over by roofline ratios, with what that assumes. */
static int show_transferred(const char *gpu, const char *from, const char *model, const char *impl)
{
    char src[CFG_PATH + 256];
    shipped_path(from, model, impl, src, sizeof src);
    struct ts_err err;
    struct calib_data d, t;
    if (calib_data_load(src, &d, &err)) {
        fprintf(stderr, "tessera calib show: no calibration of %s on %s, and none on %s to transfer (%s)\n",
                model, gpu, from, err.msg);
        return EXIT_USAGE;
    }
    struct calib *c = NULL;
    int rc = transfer_checked(&d, from, gpu, impl, &t, &err) ? -1 : 0;
    if (!rc) {
        rc = calib_fit(&t, &c, &err);
        calib_data_free(&t);
    }
    calib_data_free(&d);
    if (rc) {
        fprintf(stderr, "tessera calib show: %s\n", err.msg);
        calib_free(c);
        return EXIT_USAGE;
    }
    printf("no calibration measured on %s: %s carried over, each op's roofline time priced on it\n"
           "assumes: what each op took beyond its roofline time on %s (launches, waves, synchronisation)\n"
           "takes as long on this GPU, kernel launch and host overheads are the same on both GPUs, and\n"
           "the same kernels run (the %s implementation); the roofline runs on the GPUs' measured\n"
           "ceilings where both were measured (tessera list gpus --measured), else their datasheets'.\n"
           "Checked where both were measured: the H200's LLaDA-8B calibration carried to an H100 is\n"
           "3.2%% off per profiled step against the H100's measured one (median 2.7%%, up to 20%% on a\n"
           "short Reuse step over a long cache; PyTorch eager's 2.5%%; analysis/transfer_check.sh), where a\n"
           "measured calibration is 1-3%% off. Measure with `make calibrate` to replace it.\n",
           gpu, src, from, impl);
    printf("uncertainty band: each op scaled by the two GPUs' peak-FLOP ratio and by their bandwidth\n"
           "ratio instead of its roofline ratio (the roofline may have misjudged which one limited the\n"
           "kernel on %s), the smaller and larger of each op summed; not a measurement on %s:\n", from, gpu);
    static const struct { const char *what; int segs, q, kv, rows; } ref[] = {
        {"Refresh 16 x 512, all logits", 16, 512, 0, 512},
        {"Reuse 16 x 32 over 480", 16, 32, 480, 32},
        {"Reuse 1 x 32 over 480", 1, 32, 480, 32},
    };
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 2048;
    for (size_t i = 0; i < TS_ARRAY_LEN(ref); i++) {
        step_shape_desc(&(struct step_shape){.segs = ref[i].segs, .q = ref[i].q, .kv = ref[i].kv,
                                             .logit_rows = ref[i].rows}, 0, &sd);
        double secs, lo, hi;
        if (calib_transfer_band(c, model, from, gpu, impl, &sd, &secs, &lo, &hi, &err) == 0)
            printf("  %-30s %9.3f ms  [%.3f, %.3f] (%+.0f%% / %+.0f%%)\n", ref[i].what, secs * 1e3, lo * 1e3,
                   hi * 1e3, 100 * (lo / secs - 1), 100 * (hi / secs - 1));
    }
    step_desc_free(&sd);
    calib_show(c, stdout);
    calib_free(c);
    return 0;
}

/* Whether word is one of the space-separated words of list */
static bool in_list(const char *list, const char *word)
{
    const size_t len = strlen(word);
    for (const char *p = list; len && (p = strstr(p, word)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return true;
    return false;
}

/* What `tessera calib SUB` was asked. */
struct calib_args {
    const char *sub, *file, *gpu, *gpu_file, *out, *db, *calib_path, *csv, *from, *to, *step, *attn_block, *model,
        *impl, *host, *clock, *held;
    bool extrapolate, roofline, iter_smooth;
    const char **files; /* the PROFILE/FILE arguments (merge takes several) */
    int nfiles;
    const char **overs; /* merge's --over profiles */
    int novers;
};

/* Parses argv (argv[1] the subcommand) into *a, refusing an option the subcommand does not take
 * rather than ignoring it. Returns 0, 1 for --help (printed), or EXIT_USAGE (said on stderr). */
static int parse_calib_args(int argc, char **argv, struct calib_args *a)
{
    static const struct {
        const char *sub, *opts;
    } takes[] = {{"import", "--gpu --gpu-file --out"},
                 {"merge", "--gpu --out --over"},
                 {"fit", "--gpu --calib"},
                 {"show", "--gpu --model --impl --from --calib"},
                 {"eval", "--db --calib --host --extrapolate --clock --csv"},
                 {"host", "--out"},
                 {"transfer", "--from --to --out --impl"},
                 {"clock", "--gpu --gpu-file --model --held-tflops"},
                 {"price", "--step --attn-block --gpu --model --impl --calib --host --extrapolate --roofline --iter-smooth"}};
    const char *sub = a->sub = argv[1], *opts = NULL;
    for (size_t k = 0; k < TS_ARRAY_LEN(takes); k++)
        if (strcmp(sub, takes[k].sub) == 0)
            opts = takes[k].opts;
    if (!opts) {
        fprintf(stderr, "tessera calib: unknown subcommand '%s' (import, merge, fit, show, eval, transfer, price, host, clock)\n", sub);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char **dst = strcmp(o, "--gpu") == 0 ? &a->gpu : strcmp(o, "--out") == 0 ? &a->out
                         : strcmp(o, "--db") == 0 ? &a->db : strcmp(o, "--calib") == 0 ? &a->calib_path
                         : strcmp(o, "--model") == 0 ? &a->model : strcmp(o, "--impl") == 0 ? &a->impl
                         : strcmp(o, "--csv") == 0 ? &a->csv : strcmp(o, "--from") == 0 ? &a->from
                         : strcmp(o, "--to") == 0 ? &a->to : strcmp(o, "--step") == 0 ? &a->step
                         : strcmp(o, "--attn-block") == 0 ? &a->attn_block : strcmp(o, "--host") == 0 ? &a->host
                         : strcmp(o, "--gpu-file") == 0 ? &a->gpu_file : strcmp(o, "--clock") == 0 ? &a->clock
                         : strcmp(o, "--held-tflops") == 0 ? &a->held
                         : strcmp(o, "--over") == 0 ? &a->overs[a->novers] : NULL;
        const bool flag = strcmp(o, "--extrapolate") == 0 || strcmp(o, "--roofline") == 0 ||
                          strcmp(o, "--iter-smooth") == 0;
        if ((dst || flag) && !in_list(opts, o)) {
            fprintf(stderr, "tessera calib %s: %s does not apply here (%s takes %s)\n", sub, o, sub, opts);
            return EXIT_USAGE;
        }
        if (dst) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tessera calib %s: %s needs a value\n", sub, o);
                return EXIT_USAGE;
            }
            *dst = argv[++i];
            a->novers += dst == &a->overs[a->novers];
        } else if (flag) {
            *(strcmp(o, "--roofline") == 0 ? &a->roofline : strcmp(o, "--iter-smooth") == 0 ? &a->iter_smooth
                                                                                        : &a->extrapolate) = true;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            calib_usage(stdout);
            return 1;
        } else if (o[0] != '-' && (!a->file || strcmp(sub, "merge") == 0)) {
            a->file = a->file ? a->file : o;
            a->files[a->nfiles++] = o;
        } else if (o[0] == '-' && o[1] == '-') {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "calib %s", sub);
            return cli_unknown_in_list(cmd, o, opts);
        } else {
            fprintf(stderr, "tessera calib %s: unexpected argument '%s'\n", sub, o);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* `calib import PROFILE --gpu G --out FILE`: a profile validated and written as a calibration CSV. */
static int cmd_import(const struct calib_args *a)
{
    if (!a->file || !a->gpu || !a->out) {
        fprintf(stderr, "tessera calib import: needs PROFILE, --gpu NAME and --out FILE\n");
        return EXIT_USAGE;
    }
    struct calib_data d;
    struct ts_err err;
    int rc = load_profile(a->file, &d, &err);
    if (!rc && (rc = calib_data_validate_on(&d, a->gpu, a->gpu_file, &err)))
        ts_fail_prefix(&err, "%s", a->file);
    if (!rc)
        rc = calib_data_write(&d, a->out, &err);
    if (rc)
        fprintf(stderr, "tessera calib import: %s\n", err.msg);
    else
        printf("%s: %zu rows of %s on %s\n", a->out, d.n, d.model, d.device);
    calib_data_free(&d);
    return rc ? EXIT_USAGE : 0;
}

/* The warm rounds a clock fit weighs: the first 0.8 s of each trace, before the power limiter's
 * cycle of about a second (a replay 15-20% slower near 0.9 s on the lent H100 and H200) */
#define CLOCK_FIT_WINDOW_S 0.8

/* `calib clock TRACE --gpu G [--model M]`: the clock model fitted to an engine_bench's warm traces. */
static int cmd_clock(const struct calib_args *a)
{
    if (!a->file || !a->gpu) {
        fprintf(stderr, "tessera calib clock: needs TRACE.csv (engine_bench --warm-trace) and --gpu NAME\n");
        return EXIT_USAGE;
    }
    struct sim_config c;
    sim_config_defaults(&c);
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/gpu_measured.csv", c.datadir);
    struct ts_err err;
    struct cost_ctx ctx = {.tp = 1};
    struct gpu_measured gm = {0};
    struct gpu_table *gt = gpu_table_create();
    int rc = model_resolve(a->model ? a->model : "llada-8b", &ctx.model, &err) ||
                     (a->gpu_file && gpu_load_file(gt, a->gpu_file, &err)) || gpu_lookup(gt, a->gpu, &ctx.gpu, &err) ||
                     impl_resolve("tessera", &ctx.impl, &err)
                 ? -1 : 0;
    gpu_table_destroy(gt);
    int found = 1;
    if (!rc && a->held) {
        double t;
        if (ts_parse_double(a->held, &t) || !(t > 0 && t < 1e6))
            rc = ts_fail(&err, "--held-tflops: '%s' is not a GEMM rate in TFLOP/s", a->held);
        gm.gemm_held_flops = t * 1e12;
    } else if (!rc && (found = gpu_measured_find(path, ctx.gpu.name, &gm, &err)) == 0)
        rc = ts_fail(&err, "no measured held GEMM rate for %s in %s (--held-tflops: the rate engine_bench's "
                           "ceilings line gives)", ctx.gpu.name, path);
    struct clock_trace *t = NULL;
    size_t n = 0;
    if (rc || found < 0 || clock_traces_read(a->file, &t, &n, &err)) {
        fprintf(stderr, "tessera calib clock: %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 2048;
    for (size_t i = 0; i < n && !rc; i++) {
        struct cost_breakdown bd;
        double s;
        step_shape_desc(&(struct step_shape){.segs = t[i].segs, .q = t[i].q, .kv = t[i].kv, .logit_rows = t[i].logits}, 0,
                        &sd);
        rc = cost_roofline.step_s(&ctx, &sd, &s, &bd, &err);
        t[i].flops = bd.flops;
    }
    step_desc_free(&sd);
    struct clock_params p = {.held_flops = gm.gemm_held_flops};
    double rms = 0;
    if (rc || clock_fit(t, n, CLOCK_FIT_WINDOW_S, &p, &rms, &err)) {
        fprintf(stderr, "tessera calib clock: %s\n", err.msg);
        clock_traces_free(t, n);
        return EXIT_USAGE;
    }
    printf("%s, %s: %zu steps' warm traces from a cool card, each round within %.1f s of its start fitted\n"
           "k %.3f (a step takes up to %.1f%% longer at the held clock), tau %.1f ms, the clock falls from a load of "
           "%.3f and is held from %.3f\n(the load: FLOPs over the held GEMM rate, %.1f TFLOP/s, and the step's "
           "time); RMS error over the rounds %.2f%%\n\n%-30s %6s %9s %9s %9s %9s\n", ctx.gpu.name, ctx.model.name, n,
           CLOCK_FIT_WINDOW_S, p.k, 100 * p.k, p.tau_s * 1e3, p.lo, p.hi, p.held_flops * 1e-12, 100 * rms, "step",
           "load", "held_ms", "first_ms", "model_ms", "rms");
    for (size_t i = 0; i < n; i++) {
        double *pred = xmalloc(sizeof *pred * (t[i].n ? t[i].n : 1)), sum = 0;
        size_t m = 0;
        clock_predict(&p, &t[i], pred);
        for (; m < t[i].n && t[i].warm_t[m] <= CLOCK_FIT_WINDOW_S; m++)
            sum += (pred[m] / t[i].warm_ms[m] - 1) * (pred[m] / t[i].warm_ms[m] - 1);
        char what[64];
        snprintf(what, sizeof what, "%d x %d over %d, %d logits", t[i].segs, t[i].q, t[i].kv, t[i].logits);
        printf("%-30s %6.3f %9.3f %9.3f %9.3f %8.2f%%\n", what, t[i].flops / (p.held_flops * t[i].held_ms * 1e-3),
               t[i].held_ms, t[i].n ? t[i].warm_ms[0] : 0, t[i].n ? pred[0] : 0, m ? 100 * sqrt(sum / (double)m) : 0);
        free(pred);
    }
    printf("\nclock.csv: %s,%.4f,%.2f,%.4f,%.4f,%.1f,RECORD\n", a->gpu, p.k, p.tau_s * 1e3, p.lo, p.hi,
           p.held_flops * 1e-12);
    clock_traces_free(t, n);
    return 0;
}

/* `calib transfer FILE --from G --to G --out FILE`. */
static int cmd_transfer(const struct calib_args *a)
{
    if (!a->file || !a->from || !a->to || !a->out) {
        fprintf(stderr, "tessera calib transfer: needs FILE, --from GPU, --to GPU and --out FILE\n");
        return EXIT_USAGE;
    }
    struct calib_data d, t;
    struct ts_err err;
    int rc = calib_data_load(a->file, &d, &err);
    if (!rc && !(rc = transfer_checked(&d, a->from, a->to, a->impl, &t, &err))) {
        if (!(rc = calib_data_write(&t, a->out, &err)))
            printf("%s: %zu rows of %s on %s\n", a->out, t.n, t.model, t.device);
        calib_data_free(&t);
    }
    if (rc)
        fprintf(stderr, "tessera calib transfer: %s\n", err.msg);
    calib_data_free(&d);
    return rc ? EXIT_USAGE : 0;
}

/* `calib fit|show [FILE | --calib FILE]`: the calibration (the shipped one of --gpu, --model and
 * --impl by default; show says how one would be transferred where none is shipped) fitted and
 * shown with its residuals. */
static int cmd_show(const struct calib_args *a)
{
    const char *file = a->file, *gpu = a->gpu ? a->gpu : "h200";
    char path[CFG_PATH + 256];
    if (a->calib_path && file) {
        fprintf(stderr, "tessera calib %s: the calibration twice ('%s' and --calib %s)\n", a->sub, file, a->calib_path);
        return EXIT_USAGE;
    }
    if (a->calib_path)
        file = a->calib_path;
    if (file)
        snprintf(path, sizeof path, "%s", file);
    else
        shipped_path(gpu, a->model, a->impl, path, sizeof path);
    if (!file && strcmp(a->sub, "show") == 0 && access(path, R_OK) != 0)
        return show_transferred(gpu, a->from ? a->from : "h200", a->model, a->impl);
    struct calib *c;
    struct ts_err err;
    if (load_fit(path, gpu, &c, &err)) {
        fprintf(stderr, "tessera calib %s: %s\n", a->sub, err.msg);
        return EXIT_USAGE;
    }
    printf("%s\n", path);
    calib_show(c, stdout);
    calib_free(c);
    return 0;
}

/* `calib host FILE [--out HOST.csv]`: the host of a calibration whose host was measured apart from its
 * GPU (eager PyTorch), as a host profile another calibration can take (--host). */
static int cmd_host(const struct calib_args *a)
{
    if (!a->file) {
        fprintf(stderr, "tessera calib host: needs a calibration or profile CSV (or a host profile)\n");
        return EXIT_USAGE;
    }
    struct calib_host h;
    struct ts_err err;
    if (calib_host_load(a->file, &h, &err) || (a->out && calib_host_write(&h, a->out, &err))) {
        fprintf(stderr, "tessera calib host: %s\n", err.msg);
        return EXIT_USAGE;
    }
    char band[96];
    calib_host_band(h.lo, h.hi, band, sizeof band);
    printf("host of %s: a step's issue takes %.2f ms + %.3f ms a segment (fitted on %d host-bound steps%s); its "
           "GPU-bound steps add %.2f ms of launch gaps\n", h.device, h.host0_ms, h.seg_ms, h.steps, band, h.eager_gap_ms);
    if (a->out)
        printf("%s: the host profile (--host %s)\n", a->out, a->out);
    return 0;
}

/* `tessera calib`; files (room for 2 argc) collects merge's profiles, from files + argc its --over ones. */
static int calib_main(int argc, char **argv, const char **files)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        calib_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    struct calib_args a = {.model = "llada-8b", .impl = "tessera", .files = files, .overs = files + argc};
    int rc = parse_calib_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const char *sub = a.sub;
    if (strcmp(sub, "eval") == 0) {
        if (!a.db) {
            fprintf(stderr, "tessera calib eval: which run database? (--db RUN.db)\n");
            return EXIT_USAGE;
        }
        int32_t clock = CLOCK_AUTO;
        struct ts_err err;
        if (a.clock && CFG_CHOICE("clock", a.clock, cfg_clock_names, &clock, &err)) {
            fprintf(stderr, "tessera calib eval: %s\n", err.msg);
            return EXIT_USAGE;
        }
        return cmd_eval(a.db, a.calib_path, a.host, a.extrapolate, (enum cfg_clock)clock, a.csv);
    }
    if (strcmp(sub, "import") == 0)
        return cmd_import(&a);
    if (strcmp(sub, "merge") == 0) {
        if (a.nfiles + a.novers < 2 || a.nfiles < 1 || !a.gpu || !a.out) {
            fprintf(stderr, "tessera calib merge: needs two or more PROFILEs (--over ones included, one other at "
                            "least), --gpu NAME and --out FILE\n");
            return EXIT_USAGE;
        }
        for (int k = 0; k < a.novers; k++) /* the --over profiles after the others */
            files[a.nfiles + k] = a.overs[k];
        return cmd_merge(files, (size_t)(a.nfiles + a.novers), (size_t)a.novers, a.gpu, a.out);
    }
    if (strcmp(sub, "price") == 0)
        return cmd_price(a.gpu ? a.gpu : "h200", a.model, a.impl, a.calib_path, a.host, a.step, a.attn_block,
                         a.extrapolate, a.roofline, a.iter_smooth);
    if (strcmp(sub, "transfer") == 0)
        return cmd_transfer(&a);
    if (strcmp(sub, "host") == 0)
        return cmd_host(&a);
    if (strcmp(sub, "clock") == 0)
        return cmd_clock(&a);
    return cmd_show(&a); /* fit or show: parse_calib_args took no other subcommand */
}

int cli_calib(int argc, char **argv)
{
    const char **files = xmalloc(sizeof *files * 2 * (size_t)TS_MAX(argc, 1)); /* the PROFILEs, then --over's */
    int rc = calib_main(argc, argv, files);
    free(files);
    return rc;
}
