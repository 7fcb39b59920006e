/*
 * eng_profile.c: `tessera engine profile`: sweeps step shapes of a model over the engine, timing
 * each op of each step (an event after every op) and the whole step without the events, into the
 * table engine_profile of a database, in one transaction (ROLLBACK on any failure). The calibrated
 * cost model is fitted from these rows (sim/cost/calib_fit.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rules.h"
#include "cost_op.h"
#include "eng.h"
#include "eng_grid.h"
#include "eng_replay.h"
#include "eng_tp.h"
#include "step_desc.h"

/* What a profile row says of the machine beside its times. */
struct machine {
    const char *device;
    int sm_clock, mem_clock, driver, runtime, cublas;
};

static void machine_read(const struct eng *e, struct machine *mc)
{
    int dev = 0;
    *mc = (struct machine){.device = eng_device_name(e)};
    cudaDriverGetVersion(&mc->driver);
    cudaRuntimeGetVersion(&mc->runtime);
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&mc->sm_clock, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mc->mem_clock, cudaDevAttrMemoryClockRate, dev);
    cublasHandle_t h;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
        cublasGetVersion(h, &mc->cublas);
        cublasDestroy(h);
    }
}

static int exec_sql(sqlite3 *db, const char *sql, struct ts_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    ts_fail(err, "sqlite: %s", msg ? msg : "?");
    sqlite3_free(msg);
    return -1;
}

/* Begins the transaction on db: the table (an older one gains the columns added since: its rows
 * read as launch rules 1 and even steps, which they were measured under), this model's earlier rows
 * on this device dropped (two in one file would read as every op measured twice), and the insert
 * prepared into *ins. */
static int profile_begin(sqlite3 *db, const char *path, const char *model, const char *device, sqlite3_stmt **ins,
                         FILE *out, struct ts_err *err)
{
    static const char *const added[][2] = {
        {"SELECT attn_rules FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN attn_rules INTEGER"},
        {"SELECT kv_long FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN kv_long INTEGER"},
        {"SELECT keep FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN keep INTEGER"},
        {"SELECT sel_heads FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN sel_heads INTEGER"},
        {"SELECT fc_rows FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN fc_rows INTEGER"},
        {"SELECT probe FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN probe INTEGER"},
        {"SELECT q_long FROM engine_profile", "ALTER TABLE engine_profile ADD COLUMN q_long INTEGER"}};
    if (exec_sql(db, "BEGIN IMMEDIATE", err) ||
        exec_sql(db, "CREATE TABLE IF NOT EXISTS engine_profile(device TEXT, sm_clock_khz INTEGER, "
                     "mem_clock_khz INTEGER, driver INTEGER, cuda_runtime INTEGER, cublas INTEGER, model TEXT, "
                     "segs INTEGER, q INTEGER, kv INTEGER, logit_rows INTEGER, op TEXT, ms REAL, total_ms REAL, "
                     "attn_rules INTEGER, kv_long INTEGER, keep INTEGER, sel_heads INTEGER, fc_rows INTEGER, probe INTEGER, "
                     "q_long INTEGER)",
                 err))
        return -1;
    for (size_t i = 0; i < TS_ARRAY_LEN(added); i++) {
        sqlite3_stmt *probe = NULL;
        const int missing = sqlite3_prepare_v2(db, added[i][0], -1, &probe, NULL) != SQLITE_OK;
        sqlite3_finalize(probe);
        if (missing && exec_sql(db, added[i][1], err))
            return -1;
    }
    sqlite3_stmt *del = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM engine_profile WHERE model = ? AND device = ?", -1, &del, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
    sqlite3_bind_text(del, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_text(del, 2, device, -1, SQLITE_STATIC);
    const int done = sqlite3_step(del) == SQLITE_DONE;
    sqlite3_finalize(del);
    if (!done)
        return ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
    if (sqlite3_changes(db) > 0)
        fprintf(out, "engine profile: replacing %d earlier rows of %s on %s in %s\n", sqlite3_changes(db), model,
                device, path);
    if (sqlite3_prepare_v2(db, "INSERT INTO engine_profile(device, sm_clock_khz, mem_clock_khz, driver, "
                               "cuda_runtime, cublas, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, "
                               "kv_long, keep, sel_heads, fc_rows, probe, q_long) "
                               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, ins,
                           NULL) != SQLITE_OK)
        return ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
    return 0;
}

/* The steps to profile: those asked for (n_steps > 0), or the grid's part (its long-cache steps that
 * exceed the KV pool left out, said on out). NULL with err when none is left. */
static struct step_shape *profile_steps(const struct model_cfg *m, struct eng *e, const int32_t (*steps)[5],
                                       int n_steps, int grid_part, int64_t max_rows, size_t *n, FILE *out,
                                       struct ts_err *err)
{
    if (n_steps > 0) {
        struct step_shape *grid = xmalloc(sizeof *grid * (size_t)n_steps);
        for (int k = 0; k < n_steps; k++) {
            const int32_t *st = steps[k];
            grid[k] = (struct step_shape){st[0], st[1], st[2], st[3] > 0 ? st[1] : 0, st[4], 0, 0, 0, 0, 0}; /* (logits: every row's) */
        }
        *n = (size_t)n_steps;
        return grid;
    }
    struct eng_mem mem;
    eng_mem_info(e, &mem);
    int skipped = 0;
    struct step_shape *grid = profile_grid(m, (enum grid_part)grid_part, mem.kv_pool_tokens, n, &skipped);
    if (skipped > 0)
        fprintf(out, "engine profile: %d long-cache steps left out: their caches exceed the KV pool's %lld "
                     "tokens\n", skipped, (long long)mem.kv_pool_tokens);
    if (max_rows > 0 && *n > 0) {
        const size_t all = *n;
        *n = profile_grid_rows_at_most(grid, all, max_rows);
        fprintf(out, "engine profile: %zu of the grid's %zu steps have at most %lld rows\n", *n, all,
                (long long)max_rows);
    }
    if (*n == 0) {
        free(grid);
        ts_fail(err, "no step of the grid fits the KV pool's %lld tokens", (long long)mem.kv_pool_tokens);
        return NULL;
    }
    return grid;
}

/* Times profile step p over requests req.. : each sequence's cache filled by a step of its own, the
 * step run `warmup` times and then until its runs have taken warm_ms (the card settles at the clock
 * the step's own repetition holds), its ops timed `reps` times (mean into op_ms) and the whole step
 * `reps` times without the per-op events (mean into *total_ms: an event after every op costs time a
 * real step does not spend, and the calibration scales the ops to this). */
static int profile_time(struct eng *e, struct step_desc *sd, const struct step_shape *p, int64_t req, int reps,
                        int warmup, double warm_ms, double *op_ms, float *total_ms, struct ts_err *err)
{
    if (p->fc_rows > 0) { /* a dLLM-Cache step: its sequences' K/V and outputs by a whole refresh */
        const struct step_shape whole = {p->segs, p->fc_rows, 0, .fc_rows = p->fc_rows};
        step_shape_desc(&whole, (int32_t)req, sd);
        if (eng_step(e, sd, NULL, NULL, err))
            return -1;
    }
    for (int s = 0; s < p->segs && p->fc_rows == 0; s++) {
        if (step_shape_kv(p, s) == 0)
            continue;
        step_desc_clear(sd);
        struct segment g = {.req_id = (int32_t)(req + s), .q = step_shape_kv(p, s), .phase = PHASE_REFRESH};
        step_desc_add(sd, &g);
        if (eng_step(e, sd, NULL, NULL, err))
            return -1;
    }
    step_desc_clear(sd);
    if (p->fc_rows > 0)
        step_shape_desc(p, (int32_t)req, sd);
    for (int s = 0; s < p->segs && p->fc_rows == 0; s++) {
        struct segment g = {.req_id = (int32_t)(req + s), .q = step_shape_q(p, s), .kv = step_shape_kv(p, s),
                            .logit_rows = p->logit_rows, .phase = p->keep ? PHASE_REFRESH : PHASE_REUSE,
                            .kv_write = p->keep, .keep = p->keep, .score_rows = p->keep ? PROFILE_SCORE_ROWS : 0};
        step_desc_add(sd, &g);
    }
    sd->select_heads = p->sel_heads;
    sd->select_kernel = 3; /* Sparse-dLLM's window: the ranking's time hardly depends on it */
    if (p->fc_rows == 0) { /* the knobs of the dLLM-Cache steps before it cleared */
        sd->front_layers = 0;
        sd->cache_outputs = false;
    }
    float t;
    double one[OP_COUNT];
    for (int w = 0; w < warmup; w++) /* warm-up (and GEMM tuning) */
        if (eng_step(e, sd, NULL, NULL, err))
            return -1;
    for (double warmed = 0; warmed < warm_ms; warmed += t > 0 ? t : 1)
        if (eng_step(e, sd, NULL, &t, err))
            return -1;
    memset(op_ms, 0, sizeof(double) * OP_COUNT);
    for (int r = 0; r < reps; r++) {
        if (eng_step_profile(e, sd, one, &t, err))
            return -1;
        for (int op = 0; op < OP_COUNT; op++)
            op_ms[op] += one[op] / reps;
    }
    *total_ms = 0;
    for (int r = 0; r < reps; r++) {
        if (eng_step(e, sd, NULL, &t, err))
            return -1;
        *total_ms += t / (float)reps;
    }
    return 0;
}

/* One row per op that ran in step p; adds them to *rows. */
static int profile_store(sqlite3_stmt *ins, const struct machine *mc, const char *model, const struct step_shape *p,
                         const double *op_ms, float total_ms, int64_t *rows)
{
    for (int op = 0; op < OP_COUNT; op++) {
        if (op_ms[op] <= 0)
            continue;
        int k = 1;
        sqlite3_bind_text(ins, k++, mc->device, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins, k++, mc->sm_clock);
        sqlite3_bind_int(ins, k++, mc->mem_clock);
        sqlite3_bind_int(ins, k++, mc->driver);
        sqlite3_bind_int(ins, k++, mc->runtime);
        sqlite3_bind_int(ins, k++, mc->cublas);
        sqlite3_bind_text(ins, k++, model, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins, k++, p->segs);
        sqlite3_bind_int(ins, k++, p->q);
        sqlite3_bind_int(ins, k++, p->kv);
        sqlite3_bind_int(ins, k++, p->logit_rows);
        sqlite3_bind_text(ins, k++, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
        sqlite3_bind_double(ins, k++, op_ms[op]);
        sqlite3_bind_double(ins, k++, total_ms);
        sqlite3_bind_int(ins, k++, ATTN_RULES);
        sqlite3_bind_int(ins, k++, p->kv_long);
        sqlite3_bind_int(ins, k++, p->keep);
        sqlite3_bind_int(ins, k++, p->sel_heads);
        sqlite3_bind_int(ins, k++, p->fc_rows);
        sqlite3_bind_int(ins, k++, p->probe);
        sqlite3_bind_int(ins, k++, p->q_long);
        if (sqlite3_step(ins) != SQLITE_DONE)
            return -1;
        sqlite3_reset(ins);
        (*rows)++;
    }
    return 0;
}

int eng_profile_run(const struct model_cfg *m, const char *path, int reps, int warmup, double warm_ms,
                    const int32_t (*steps)[5], int n_steps, int grid_part, int64_t max_rows,
                    double mem_limit_gb, const struct eng_choices *choices, FILE *out)
{
    if (n_steps <= 0) { /* a grid without a step for this model (only the long part can be: the
                       * model's context is too short; or none is small enough) is refused before
                       * any GPU work */
        size_t n = 0;
        struct step_shape *g = profile_grid(m, (enum grid_part)grid_part, -1, &n, NULL);
        const size_t all = n;
        if (max_rows > 0)
            n = profile_grid_rows_at_most(g, n, max_rows);
        free(g);
        if (all == 0) {
            fprintf(stderr, "tessera engine profile: the long grid holds no step for %s (context %d)\n", m->name,
                    m->max_pos);
            return 1;
        }
        if (n == 0) {
            fprintf(stderr, "tessera engine profile: no step of the grid has at most %lld rows\n",
                    (long long)max_rows);
            return 1;
        }
    }
    struct step_shape *grid = NULL;
    size_t n_grid = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = PROFILE_LOGIT_CHUNK;
    struct ts_err err;
    struct machine mc;
    struct eng_opts o;
    eng_opts_defaults(&o, choices);
    o.max_tokens = 16384;
    o.logit_chunk_rows = PROFILE_LOGIT_CHUNK;
    o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    int rc = 1;
    /* tensor parallelism (engine profile --tp N): every rank runs the steps, rank 0 writes their rows,
     * under the name of the share a GPU runs (NAME-tpN), its all-reduces among its ops */
    struct model_cfg share;
    if (eng_tp_place(&o, &err) || model_tp_share(m, o.tp_size, &share, &err))
        goto fail;
    const bool writer = o.tp_rank == 0;
    if (eng_create(m, &o, &e, &err))
        goto fail;
    machine_read(e, &mc);
    if (writer && sqlite3_open(path, &db) != SQLITE_OK) {
        ts_fail(&err, "%s: cannot open", path);
        goto fail;
    }
    if (writer && profile_begin(db, path, share.name, mc.device, &ins, out, &err))
        goto rollback;
    if (!(grid = profile_steps(m, e, steps, n_steps, grid_part, max_rows, &n_grid, out, &err)))
        goto rollback;
    int64_t rows = 0, req = 0;
    for (size_t gi = 0; gi < n_grid; gi++) {
        const struct step_shape *p = &grid[gi];
        double op_ms[OP_COUNT];
        float total = 0;
        if (p->fc_rows > 0 && !o.feature_cache) { /* the grid's dLLM-Cache steps (last): an engine whose
                                                   * pool holds the feature cache */
            eng_destroy(e);
            e = NULL;
            o.feature_cache = true;
            if (eng_create(m, &o, &e, &err))
                goto rollback;
            machine_read(e, &mc); /* its device name lives in the engine */
        }
        if (profile_time(e, &sd, p, req, reps, warmup, warm_ms, op_ms, &total, &err))
            goto rollback;
        if (writer && profile_store(ins, &mc, share.name, p, op_ms, total, &rows)) {
            ts_fail(&err, "%s: %s", path, sqlite3_errmsg(db));
            goto rollback;
        }
        if (p->fc_rows > 0)
            fprintf(out, "  %2d x %5d rows, %5d computed%s%s: %9.3f ms\n", p->segs, p->fc_rows, p->q,
                    p->probe ? " (picked)" : p->q < p->fc_rows ? " (the response)" : "",
                    p->logit_rows ? ", logits over every row" : "", total);
        else if (p->keep > 0)
            fprintf(out, "  %2d x q %5d keeping %5d, %s: %9.3f ms\n", p->segs, p->q, p->keep,
                    p->sel_heads ? "a set per K/V head" : "one set for all heads", total);
        else if (p->q_long > 0)
            fprintf(out, "  %2d x q %5d over %5d cached beside one of %d over %d%s: %9.3f ms\n", p->segs - 1, p->q,
                    p->kv, p->q_long, p->kv_long, p->logit_rows ? ", logits" : "", total);
        else if (p->kv_long > 0)
            fprintf(out, "  %2d x q %5d over %5d cached, the last over %d%s: %9.3f ms\n", p->segs, p->q, p->kv,
                    p->kv_long, p->logit_rows ? ", logits" : "", total);
        else
            fprintf(out, "  %2d x q %5d over %5d cached%s: %9.3f ms\n", p->segs, p->q, p->kv,
                    p->logit_rows ? ", logits" : "        ", total);
        for (int s = 0; s < p->segs; s++)
            eng_release(e, (int32_t)(req + s));
        req += p->segs;
    }
    sqlite3_finalize(ins);
    ins = NULL;
    if (writer && exec_sql(db, "COMMIT", &err))
        goto fail;
    fprintf(out, "engine profile: %lld rows in %s (table engine_profile)\n", (long long)rows, path);
    rc = 0;
    goto done;
rollback:
    sqlite3_finalize(ins);
    ins = NULL;
    if (db)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
fail:
    fprintf(stderr, "tessera engine profile: %s\n", err.msg);
done:
    free(grid);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}
