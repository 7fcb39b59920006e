/*
 * eng_replay.c: replaying a simulation's steps on the engine, and sweeping op shapes into a
 * profile database. Both write SQLite in one transaction (ROLLBACK on any failure).
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_replay.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "eng.h"
#include "eng_grid.h"
#include "harness.h"
#include "kernels.h"
#include "policy.h"
#include "sim.h"
#include "step_desc.h"

static int db_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s\n", msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* The step's ops timed with an event after each, scaled to sum to its measured time (ms), into
 * engine_step_ops. */
static int record_ops(struct eng *e, const struct step_desc *sd, float ms, sqlite3_stmt *ins, int64_t run_id,
                      int64_t step, struct ts_err *err)
{
    double op_ms[OP_COUNT], sum = 0;
    float total;
    if (eng_step_profile(e, sd, op_ms, &total, err))
        return -1;
    for (int op = 0; op < OP_COUNT; op++)
        sum += op_ms[op];
    for (int op = 0; op < OP_COUNT && sum > 0; op++) {
        if (op_ms[op] <= 0)
            continue;
        sqlite3_bind_int64(ins, 1, run_id);
        sqlite3_bind_int64(ins, 2, step);
        sqlite3_bind_text(ins, 3, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
        sqlite3_bind_double(ins, 4, op_ms[op] * ms / sum);
        if (sqlite3_step(ins) != SQLITE_DONE)
            return ts_fail(err, "engine_step_ops: cannot write");
        sqlite3_reset(ins);
    }
    return 0;
}

int eng_replay_run(const char *path, int64_t run_id, int64_t max_steps, double mem_limit_gb,
                   const char *weights, bool ops, FILE *out)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL, *ins = NULL, *ins_ops = NULL;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t *last_step = NULL;
    int rc = 1;
    struct ts_err err;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        fprintf(stderr, "tessera engine replay: %s: cannot open the database\n", path);
        goto done;
    }
    /* the run and its configuration */
    if (sqlite3_prepare_v2(db, run_id > 0 ? "SELECT run_id, config_json FROM runs WHERE run_id = ?"
                                          : "SELECT run_id, config_json FROM runs ORDER BY run_id DESC LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK) {
        fprintf(stderr, "tessera engine replay: %s: not a tessera database (%s)\n", path, sqlite3_errmsg(db));
        goto done;
    }
    if (run_id > 0)
        sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) != SQLITE_ROW) {
        fprintf(stderr, "tessera engine replay: %s: no run %lld\n", path, (long long)run_id);
        goto done;
    }
    run_id = sqlite3_column_int64(q, 0);
    json_error_t jerr;
    json_t *cfg = json_loads((const char *)sqlite3_column_text(q, 1), 0, &jerr);
    sqlite3_finalize(q);
    q = NULL;
    if (!cfg) {
        fprintf(stderr, "tessera engine replay: run %lld: unreadable config_json\n", (long long)run_id);
        goto done;
    }
    struct model_cfg m;
    const char *model = json_string_value(json_object_get(cfg, "model"));
    const char *policy = json_string_value(json_object_get(cfg, "policy"));
    int block = (int)json_integer_value(json_object_get(cfg, "block_size"));
    int chunk = (int)json_integer_value(json_object_get(cfg, "max_num_logits"));
    int ffn_chunks = (int)json_integer_value(json_object_get(cfg, "ffn_chunks"));
    struct eng_opts o;
    eng_opts_defaults(&o);
    eng_opts_follow_impl(&o, json_string_value(json_object_get(cfg, "impl"))); /* (before cfg goes) */
    if (!model || model_resolve(model, &m, &err)) {
        fprintf(stderr, "tessera engine replay: run %lld: %s\n", (long long)run_id, model ? err.msg : "no model");
        json_decref(cfg);
        goto done;
    }
    const int32_t attn_block = policy_attn_block(policy, &m, block);
    json_decref(cfg);
    /* sizes: the largest step, and the last step of each request */
    int64_t num_steps = 0, max_q = 0, max_r = 0, max_req = -1, min_ffn = 0, max_chunk = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*), max(q_tokens), max(logit_rows), min(ffn_chunks), "
                               "max(logit_chunk_rows) FROM steps WHERE run_id = ?",
                           -1, &q, NULL) != SQLITE_OK)
        goto sqlfail;
    sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        num_steps = sqlite3_column_int64(q, 0);
        max_q = sqlite3_column_int64(q, 1);
        max_r = sqlite3_column_int64(q, 2);
        min_ffn = sqlite3_column_int64(q, 3);
        max_chunk = sqlite3_column_int64(q, 4);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (num_steps == 0) {
        fprintf(stderr, "tessera engine replay: run %lld has no steps (was it run with --no-steps?)\n",
                (long long)run_id);
        goto done;
    }
    if (max_steps > 0 && max_steps < num_steps)
        num_steps = max_steps;
    if (sqlite3_prepare_v2(db, "SELECT req_id, max(step_id) FROM segments WHERE run_id = ? GROUP BY req_id",
                           -1, &q, NULL) != SQLITE_OK)
        goto sqlfail;
    sqlite3_bind_int64(q, 1, run_id);
    size_t cap = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(q, 0);
        if (r > max_req) {
            ts_grow((void **)&last_step, &cap, (size_t)r + 1, sizeof *last_step);
            for (int64_t i = max_req + 1; i <= r; i++)
                last_step[i] = -1;
            max_req = r;
        }
        last_step[r] = (int32_t)sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    q = NULL;

    /* the workspace for the largest step as its recorded knobs run it: each step is replayed with
     * its own (steps.logit_chunk_rows and ffn_chunks: lazy chunking sets them step by step; 0 rows
     * is one chunk of all), the run's where a database lacks them */
    o.max_tokens = (int32_t)TS_MAX(max_q, 64);
    chunk = max_chunk > 0 ? (int)max_chunk : chunk;
    o.logit_chunk_rows = chunk > 0 ? chunk : (int32_t)TS_MAX(max_r, 1);
    o.ffn_chunks = min_ffn > 0 ? (int32_t)min_ffn : ffn_chunks > 0 ? ffn_chunks : 1;
    sd.attn_block = attn_block;
    o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    o.weights = weights;
    if (eng_create(&m, &o, &e, &err)) {
        fprintf(stderr, "tessera engine replay: %s\n", err.msg);
        goto done;
    }
    fprintf(out, "replaying %lld steps of run %lld (%s) on %s\n", (long long)num_steps, (long long)run_id,
            m.name, eng_device_name(e));
    if (db_exec(db, "BEGIN IMMEDIATE") ||
        db_exec(db, "CREATE TABLE IF NOT EXISTS engine_steps(run_id INTEGER, step_id INTEGER, predicted_ns "
                    "INTEGER, measured_ns INTEGER, device TEXT, PRIMARY KEY(run_id, step_id))"))
        goto done;
    if (ops && (db_exec(db, "CREATE TABLE IF NOT EXISTS engine_step_ops(run_id INTEGER, step_id INTEGER, op TEXT, "
                            "ms REAL, PRIMARY KEY(run_id, step_id, op))") ||
                sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO engine_step_ops VALUES(?,?,?,?)", -1, &ins_ops,
                                   NULL) != SQLITE_OK))
        goto sqlfail_rollback;
    if (sqlite3_prepare_v2(db, "SELECT step_id, duration_ns, logit_chunk_rows, ffn_chunks FROM steps WHERE run_id = ? "
                               "ORDER BY step_id", -1, &q, NULL) != SQLITE_OK)
        goto sqlfail_rollback;
    sqlite3_stmt *segq;
    if (db_segments_prepare(db, &segq) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO engine_steps VALUES(?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK)
        goto sqlfail_rollback;
    sqlite3_bind_int64(q, 1, run_id);
    double sum_abs_rel = 0, sum_pred = 0, sum_meas = 0;
    int64_t n = 0;
    const bool progress = isatty(STDERR_FILENO);
    while (n < num_steps && sqlite3_step(q) == SQLITE_ROW) {
        if (progress && n % 50 == 0)
            fprintf(stderr, "\rreplay: step %lld of %lld", (long long)n, (long long)num_steps);
        int64_t step = sqlite3_column_int64(q, 0), pred = sqlite3_column_int64(q, 1);
        sd.logit_chunk_rows = sqlite3_column_type(q, 2) == SQLITE_NULL ? chunk : sqlite3_column_int(q, 2);
        sd.ffn_chunks = sqlite3_column_type(q, 3) == SQLITE_NULL ? o.ffn_chunks : sqlite3_column_int(q, 3);
        if (db_read_step(segq, run_id, step, &sd) != SQLITE_OK) {
            sqlite3_finalize(segq);
            goto sqlfail_rollback;
        }
        float ms = 0;
        if (eng_step(e, &sd, NULL, &ms, &err)) {
            fprintf(stderr, "tessera engine replay: step %lld: %s\n", (long long)step, err.msg);
            sqlite3_finalize(segq);
            goto rollback;
        }
        if (ops && record_ops(e, &sd, ms, ins_ops, run_id, step, &err)) {
            fprintf(stderr, "tessera engine replay: step %lld: %s\n", (long long)step, err.msg);
            sqlite3_finalize(segq);
            goto rollback;
        }
        for (int32_t i = 0; i < sd.num_segs; i++) {
            int32_t r = sd.segs[i].req_id;
            if (r <= max_req && last_step[r] == step)
                eng_release(e, r);
        }
        int64_t meas = llround(ms * 1e6);
        sqlite3_bind_int64(ins, 1, run_id);
        sqlite3_bind_int64(ins, 2, step);
        sqlite3_bind_int64(ins, 3, pred);
        sqlite3_bind_int64(ins, 4, meas);
        sqlite3_bind_text(ins, 5, eng_device_name(e), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            sqlite3_finalize(segq);
            goto sqlfail_rollback;
        }
        sqlite3_reset(ins);
        if (n > 0) { /* the first step carries GEMM tuning */
            sum_abs_rel += fabs((double)pred - meas) / (double)meas;
            sum_pred += (double)pred;
            sum_meas += (double)meas;
        }
        n++;
    }
    sqlite3_finalize(segq);
    if (progress)
        fprintf(stderr, "\r%*s\r", 40, "");
    if (db_exec(db, "COMMIT"))
        goto done;
    if (n > 1)
        fprintf(out, "%lld steps: measured %.3f s, predicted %.3f s (%+.1f%%); per-step MAPE %.1f%% "
                     "(first step left out: it tunes the GEMMs); rows in engine_steps\n",
                (long long)n, sum_meas * 1e-9, sum_pred * 1e-9, 100.0 * (sum_pred - sum_meas) / sum_meas,
                100.0 * sum_abs_rel / (double)(n - 1));
    rc = 0;
    goto done;
sqlfail_rollback:
    fprintf(stderr, "tessera engine replay: %s: %s\n", path, sqlite3_errmsg(db));
rollback:
    db_exec(db, "ROLLBACK");
    goto done;
sqlfail:
    fprintf(stderr, "tessera engine replay: %s: %s\n", path, sqlite3_errmsg(db));
done:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    sqlite3_finalize(ins_ops);
    sqlite3_close(db);
    eng_destroy(e);
    step_desc_free(&sd);
    free(last_step);
    return rc;
}

/* --- profile ----------------------------------------------------------------------------- */

int eng_profile_run(const struct model_cfg *m, const char *path, int reps, int warmup, double warm_ms,
                    const int32_t *only_step, int grid_part, double mem_limit_gb, FILE *out)
{
    struct prof_step *grid = NULL;
    size_t n_grid = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    struct ts_err err;
    int rc = 1;
    if (!only_step) { /* a grid without a step for this model (only the long part can be: the
                         * model's context is too short) is refused before any GPU work */
        grid = profile_grid(m, (enum grid_part)grid_part, -1, &n_grid, NULL);
        free(grid);
        grid = NULL;
        if (n_grid == 0) {
            fprintf(stderr, "tessera engine profile: the long grid holds no step for %s (context %d)\n", m->name,
                    m->max_pos);
            return 1;
        }
    }
    struct eng_opts o;
    eng_opts_defaults(&o);
    o.max_tokens = 16384;
    o.logit_chunk_rows = 2048;
    sd.logit_chunk_rows = o.logit_chunk_rows; /* the chunk the calibration's LM-head rows assume */
    o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    if (eng_create(m, &o, &e, &err)) {
        fprintf(stderr, "tessera engine profile: %s\n", err.msg);
        goto done;
    }
    int drv = 0, rt = 0, sm_clock = 0, mem_clock = 0, dev = 0, cublas_ver = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sm_clock, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, dev);
    cublasHandle_t h;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
        cublasGetVersion(h, &cublas_ver);
        cublasDestroy(h);
    }
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fprintf(stderr, "tessera engine profile: %s: cannot open\n", path);
        goto done;
    }
    if (db_exec(db, "BEGIN IMMEDIATE") ||
        db_exec(db, "CREATE TABLE IF NOT EXISTS engine_profile(device TEXT, sm_clock_khz INTEGER, "
                    "mem_clock_khz INTEGER, driver INTEGER, cuda_runtime INTEGER, cublas INTEGER, model TEXT, "
                    "segs INTEGER, q INTEGER, kv INTEGER, logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL, "
                    "attn_rules INTEGER, kv_long INTEGER)"))
        goto done;
    /* a table from before the attention launch rules were versioned gains the column (its rows
     * read as version 1, which they were measured under), and one from before the uneven steps
     * kv_long (its rows read as even steps, which they were) */
    static const char *const added[][2] = {
        {"SELECT attn_rules FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN attn_rules INTEGER"},
        {"SELECT kv_long FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN kv_long INTEGER"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(added); i++) {
        if (sqlite3_prepare_v2(db, added[i][0], -1, &ins, NULL) != SQLITE_OK && db_exec(db, added[i][1]))
            goto done;
        sqlite3_finalize(ins);
        ins = NULL;
    }
    /* a profile replaces the same model's earlier rows on this device (two in one file would be
     * read as every op measured twice) */
    if (sqlite3_prepare_v2(db, "DELETE FROM engine_profile WHERE model = ? AND device = ?", -1, &ins, NULL) != SQLITE_OK)
        goto dbfail;
    sqlite3_bind_text(ins, 1, m->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, eng_device_name(e), -1, SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE)
        goto dbfail;
    if (sqlite3_changes(db) > 0)
        fprintf(out, "engine profile: replacing %d earlier rows of %s on %s in %s\n", sqlite3_changes(db), m->name,
                eng_device_name(e), path);
    sqlite3_finalize(ins);
    ins = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO engine_profile(device, sm_clock_khz, mem_clock_khz, driver, "
                               "cuda_runtime, cublas, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, "
                               "kv_long) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK)
        goto dbfail;
    int64_t rows = 0, req = 0;
    if (only_step) {
        grid = xmalloc(sizeof *grid);
        grid[0] = (struct prof_step){only_step[0], only_step[1], only_step[2], only_step[3] > 0, only_step[4]};
        n_grid = 1;
    } else {
        struct eng_mem mem;
        eng_mem_info(e, &mem);
        int skipped = 0;
        grid = profile_grid(m, (enum grid_part)grid_part, mem.kv_pool_tokens, &n_grid, &skipped);
        if (skipped > 0)
            fprintf(out, "engine profile: %d long-cache steps left out: their caches exceed the KV pool's %lld "
                         "tokens\n", skipped, (long long)mem.kv_pool_tokens);
        if (n_grid == 0) {
            fprintf(stderr, "tessera engine profile: no step of the grid fits the KV pool's %lld tokens\n",
                    (long long)mem.kv_pool_tokens);
            goto rollback;
        }
    }
    for (size_t gi = 0; gi < n_grid; gi++) {
        const struct prof_step *p = &grid[gi];
        const int segs = p->segs, q = p->q, kv = p->kv, with_logits = p->logits;
        /* fill each sequence's cache with a step of its own, then time the step (every step
         * right after its fill, as the shipped calibrations were profiled) */
        for (int s = 0; s < segs; s++) {
            if (prof_kv(p, s) == 0)
                continue;
            step_desc_clear(&sd);
            struct segment g = {.req_id = (int32_t)(req + s), .q = prof_kv(p, s), .phase = PHASE_REFRESH};
            step_desc_add(&sd, &g);
            if (eng_step(e, &sd, NULL, NULL, &err))
                goto engfail;
        }
        step_desc_clear(&sd);
        for (int s = 0; s < segs; s++) {
            struct segment g = {.req_id = (int32_t)(req + s), .q = q, .kv = prof_kv(p, s),
                                .logit_rows = with_logits ? q : 0, .phase = PHASE_REUSE};
            step_desc_add(&sd, &g);
        }
        double acc[OP_COUNT] = {0}, op_ms[OP_COUNT];
        float total = 0, t;
        for (int w = 0; w < warmup; w++) /* warm-up (and GEMM tuning) */
            if (eng_step(e, &sd, NULL, NULL, &err))
                goto engfail;
        for (double warmed = 0; warmed < warm_ms;) { /* the step's own steady clock */
            if (eng_step(e, &sd, NULL, &t, &err))
                goto engfail;
            warmed += t > 0 ? t : 1;
        }
        for (int r = 0; r < reps; r++) {
            if (eng_step_profile(e, &sd, op_ms, &t, &err))
                goto engfail;
            for (int op = 0; op < OP_COUNT; op++)
                acc[op] += op_ms[op] / reps;
        }
        /* the step's own time without the per-op events (the calibration scales the ops
         * to it: an event after every op costs time a real step does not spend) */
        for (int r = 0; r < reps; r++) {
            if (eng_step(e, &sd, NULL, &t, &err))
                goto engfail;
            total += t / (float)reps;
        }
        for (int op = 0; op < OP_COUNT; op++) {
            if (acc[op] <= 0)
                continue;
            int k = 1;
            sqlite3_bind_text(ins, k++, eng_device_name(e), -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(ins, k++, sm_clock);
            sqlite3_bind_int(ins, k++, mem_clock);
            sqlite3_bind_int(ins, k++, drv);
            sqlite3_bind_int(ins, k++, rt);
            sqlite3_bind_int(ins, k++, cublas_ver);
            sqlite3_bind_text(ins, k++, m->name, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(ins, k++, segs);
            sqlite3_bind_int(ins, k++, q);
            sqlite3_bind_int(ins, k++, kv);
            sqlite3_bind_int(ins, k++, with_logits ? q : 0);
            sqlite3_bind_text(ins, k++, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
            sqlite3_bind_double(ins, k++, acc[op]);
            sqlite3_bind_double(ins, k++, total);
            sqlite3_bind_int(ins, k++, ATTN_RULES);
            sqlite3_bind_int(ins, k++, p->kv_long);
            if (sqlite3_step(ins) != SQLITE_DONE)
                goto rollback;
            sqlite3_reset(ins);
            rows++;
        }
        if (p->kv_long > 0)
            fprintf(out, "  %2d x q %5d over %5d cached, the last over %d%s: %9.3f ms\n", segs, q, kv, p->kv_long,
                    with_logits ? ", logits" : "", total);
        else
            fprintf(out, "  %2d x q %5d over %5d cached%s: %9.3f ms\n", segs, q, kv,
                    with_logits ? ", logits" : "        ", total);
        for (int s = 0; s < segs; s++)
            eng_release(e, (int32_t)(req + s));
        req += segs;
    }
    if (db_exec(db, "COMMIT"))
        goto done;
    fprintf(out, "engine profile: %lld rows in %s (table engine_profile)\n", (long long)rows, path);
    rc = 0;
    goto done;
engfail:
    fprintf(stderr, "tessera engine profile: %s\n", err.msg);
    goto rollback;
dbfail:
    fprintf(stderr, "tessera engine profile: %s: %s\n", path, sqlite3_errmsg(db));
rollback:
    db_exec(db, "ROLLBACK");
done:
    free(grid);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}
