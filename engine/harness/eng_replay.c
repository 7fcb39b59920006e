/*
 * eng_replay.c: `tessera engine replay`: a simulation's recorded steps executed on the engine, step
 * by step, each measured beside its prediction, in one transaction (ROLLBACK on any failure). The
 * replay reader (the run, its configuration and its steps read back from the database) sits here,
 * with the command line, so the engine proper knows nothing of the simulator's database.
 */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "eng_replay.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "eng.h"
#include "eng_ext_decl.h"
#include "eng_tp.h"
#include "harness.h"
#include "policy.h"
#include "setup.h"
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
    for (int op = 0; op < OP_COUNT && sum > 0 && ins; op++) { /* (no ins: a tensor-parallel rank but 0) */
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

/* The run to replay, as its database recorded it: its model and the engine options its
 * configuration and its largest step call for, and each request's last step (its KV is released
 * after it). */
struct replay {
    sqlite3 *db;
    const char *path;
    const struct eng_choices *choices; /* the command line's engine choices */
    int64_t run_id, num_steps, max_req;
    int32_t *last_step; /* [max_req + 1]: each request's last step; -1: none */
    struct model_cfg m;
    struct eng_opts o;
    bool writer;        /* the process that writes engine_steps: rank 0 of a tensor-parallel replay */
    int logit_chunk_rows; /* LM-head chunk rows for steps whose row lacks their own (older databases) */
    struct step_desc knobs; /* its configuration's step knobs (sim_config_knobs); no segments */
};

/* The run (run_id 0: the latest) and what its configuration says: the model, the implementation's
 * FFN, the block-causal attention of its policy, its LM-head and FFN chunks. */
static int replay_read_run(struct replay *rp, int64_t run_id, int *ffn_chunks, struct ts_err *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(rp->db, run_id > 0 ? "SELECT run_id, config_json FROM runs WHERE run_id = ?"
                                              : "SELECT run_id, config_json FROM runs ORDER BY run_id DESC LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: not a tessera database (%s)", rp->path, sqlite3_errmsg(rp->db));
    if (run_id > 0)
        sqlite3_bind_int64(q, 1, run_id);
    if (sqlite3_step(q) != SQLITE_ROW) {
        sqlite3_finalize(q);
        return ts_fail(err, "%s: no run %lld", rp->path, (long long)run_id);
    }
    rp->run_id = sqlite3_column_int64(q, 0);
    json_error_t jerr;
    json_t *cfg = json_loads((const char *)sqlite3_column_text(q, 1), 0, &jerr);
    sqlite3_finalize(q);
    if (!cfg)
        return ts_fail(err, "run %lld: unreadable config_json", (long long)rp->run_id);
    struct sim_config c;
    struct sim_setup setup;
    int rc = 0;
    if (sim_config_from_json(cfg, &c, err) || sim_setup_resolve(&c, &setup, err) ||
        model_resolve(c.model, &rp->m, err))
        rc = ts_fail_prefix(err, "run %lld", (long long)rp->run_id);
    if (rc == 0) {
        eng_opts_defaults(&rp->o, rp->choices);
        eng_opts_follow_impl(&rp->o, &setup.impl);
        step_desc_init(&rp->knobs);
        const struct policy_ops *po = setup.policy;
        char why[512];
        if (eng_ext_refused(po->engine, ENG_EXT_REPLAY, why, sizeof why))
            rc = ts_fail(err, "run %lld: policy %s needs %s", (long long)rp->run_id, po->name, why);
        else if (model_engine_lacks(&rp->m))
            rc = ts_fail(err, "run %lld: model %s has %s, which the engine does not run", (long long)rp->run_id,
                         rp->m.name, model_engine_lacks(&rp->m));
        else if (c.ep > 1)
            rc = ts_fail(err, "run %lld: simulated with --ep %d, expert parallelism, which the engine does not run",
                         (long long)rp->run_id, c.ep);
        else
            sim_config_knobs(&c, &setup, &rp->m, &rp->knobs);
        rp->o.feature_cache = rp->knobs.cache_outputs;
        rp->o.input_cache = rp->knobs.cache_inputs;
        rp->logit_chunk_rows = c.max_num_logits;
        *ffn_chunks = c.ffn_chunks;
    }
    json_decref(cfg);
    return rc;
}

/* The steps to replay (at most max_steps; 0: all), each request's last one, and the workspace for
 * the largest step as its recorded knobs run it: each step is replayed with its own
 * (steps.logit_chunk_rows and ffn_chunks: lazy chunking sets them step by step; 0 rows is one chunk
 * of all), the run's where a database lacks them. */
static int replay_read_sizes(struct replay *rp, int64_t max_steps, int ffn_chunks, struct ts_err *err)
{
    sqlite3_stmt *q = NULL;
    int64_t max_q = 0, max_r = 0, min_ffn = 0, max_chunk = 0;
    if (sqlite3_prepare_v2(rp->db, "SELECT count(*), max(q_tokens), max(logit_rows), min(ffn_chunks), "
                                   "max(logit_chunk_rows) FROM steps WHERE run_id = ?", -1, &q, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: %s", rp->path, sqlite3_errmsg(rp->db));
    sqlite3_bind_int64(q, 1, rp->run_id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        rp->num_steps = sqlite3_column_int64(q, 0);
        max_q = sqlite3_column_int64(q, 1);
        max_r = sqlite3_column_int64(q, 2);
        min_ffn = sqlite3_column_int64(q, 3);
        max_chunk = sqlite3_column_int64(q, 4);
    }
    sqlite3_finalize(q);
    if (rp->num_steps == 0)
        return ts_fail(err, "run %lld has no steps (was it run with --no-steps?)", (long long)rp->run_id);
    if (max_steps > 0 && max_steps < rp->num_steps)
        rp->num_steps = max_steps;
    if (sqlite3_prepare_v2(rp->db, "SELECT req_id, max(step_id) FROM segments WHERE run_id = ? GROUP BY req_id",
                           -1, &q, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: %s", rp->path, sqlite3_errmsg(rp->db));
    sqlite3_bind_int64(q, 1, rp->run_id);
    size_t cap = 0;
    rp->max_req = -1;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(q, 0);
        if (r < 0 || r > INT32_MAX) {
            sqlite3_finalize(q);
            return ts_fail(err, "%s: run %lld: request %lld: not a request's id", rp->path, (long long)rp->run_id,
                           (long long)r);
        }
        if (r > rp->max_req) {
            ts_grow((void **)&rp->last_step, &cap, (size_t)r + 1, sizeof *rp->last_step);
            for (int64_t i = rp->max_req + 1; i <= r; i++)
                rp->last_step[i] = -1;
            rp->max_req = r;
        }
        rp->last_step[r] = (int32_t)sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (rp->knobs.cache_outputs || rp->knobs.evict) { /* a layered or evicting step holds every row */
        if (sqlite3_prepare_v2(rp->db, "SELECT max(r) FROM (SELECT sum(max(q_front, q + carry)) AS r FROM segments "
                                       "WHERE run_id = ? GROUP BY step_id)", -1, &q, NULL) != SQLITE_OK)
            return ts_fail(err, "%s: %s", rp->path, sqlite3_errmsg(rp->db));
        sqlite3_bind_int64(q, 1, rp->run_id);
        if (sqlite3_step(q) == SQLITE_ROW)
            max_q = TS_MAX(max_q, sqlite3_column_int64(q, 0));
        sqlite3_finalize(q);
    }
    rp->o.max_tokens = (int32_t)TS_MAX(max_q, 64);
    rp->logit_chunk_rows = max_chunk > 0 ? (int)max_chunk : rp->logit_chunk_rows;
    rp->o.logit_chunk_rows = rp->logit_chunk_rows > 0 ? rp->logit_chunk_rows : (int32_t)TS_MAX(max_r, 1);
    rp->o.ffn_chunks = min_ffn > 0 ? (int32_t)min_ffn : ffn_chunks > 0 ? ffn_chunks : 1;
    return 0;
}

/* Predicted beside measured, summed over the replayed steps but the first (it tunes the GEMMs). */
struct replay_err {
    double sum_abs_rel, sum_pred, sum_meas;
    int64_t n;
};

/* Replays the steps in order inside the open transaction: each step's segments and knobs read back,
 * executed, timed (and its ops with ops), stored in engine_steps, its finished requests released. */
static int replay_steps(struct replay *rp, struct eng *e, bool ops, struct replay_err *re, struct ts_err *err)
{
    sqlite3_stmt *q = NULL, *segq = NULL, *ins = NULL, *ins_ops = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    /* the knobs of a run recorded before its steps carried them: from its configuration, its chunks
     * the replay's own */
    struct step_desc derived = rp->knobs;
    derived.logit_chunk_rows = rp->logit_chunk_rows;
    derived.ffn_chunks = rp->o.ffn_chunks;
    int64_t legacy[STEP_KNOBS];
    step_knobs_get(&derived, legacy);
    int rc = -1;
    if ((ops && rp->writer &&
         (db_exec(rp->db, "CREATE TABLE IF NOT EXISTS engine_step_ops(run_id INTEGER, step_id INTEGER, "
                          "op TEXT, ms REAL, PRIMARY KEY(run_id, step_id, op))") ||
          sqlite3_prepare_v2(rp->db, "INSERT OR REPLACE INTO engine_step_ops VALUES(?,?,?,?)", -1, &ins_ops,
                             NULL) != SQLITE_OK)) ||
        db_steps_prepare(rp->db, &q) != SQLITE_OK ||
        db_segments_prepare(rp->db, &segq) != SQLITE_OK ||
        (rp->writer &&
         sqlite3_prepare_v2(rp->db, "INSERT OR REPLACE INTO engine_steps VALUES(?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK)) {
        ts_fail(err, "%s: %s", rp->path, sqlite3_errmsg(rp->db));
        goto done;
    }
    sqlite3_bind_int64(q, 1, rp->run_id);
    const bool progress = rp->writer && isatty(STDERR_FILENO);
    while (re->n < rp->num_steps && sqlite3_step(q) == SQLITE_ROW) {
        if (progress && re->n % 50 == 0)
            fprintf(stderr, "\rreplay: step %lld of %lld", (long long)re->n, (long long)rp->num_steps);
        int64_t step = sqlite3_column_int64(q, 0), pred = sqlite3_column_int64(q, 1);
        step_knobs_set(&sd, legacy);
        db_step_knobs(q, &sd); /* the step's knobs as the run recorded them */
        if (db_read_step(segq, rp->run_id, step, &sd, err)) {
            ts_fail_prefix(err, "%s", rp->path);
            goto done;
        }
        float ms = 0;
        if (eng_step(e, &sd, NULL, &ms, err) || (ops && record_ops(e, &sd, ms, ins_ops, rp->run_id, step, err))) {
            ts_fail_prefix(err, "step %lld", (long long)step);
            goto done;
        }
        for (int32_t i = 0; i < sd.num_segs; i++) {
            int32_t r = sd.segs[i].req_id;
            if (r >= 0 && r <= rp->max_req && rp->last_step[r] == step)
                eng_release(e, r);
        }
        int64_t meas = llround(ms * 1e6);
        if (ins) {
            sqlite3_bind_int64(ins, 1, rp->run_id);
            sqlite3_bind_int64(ins, 2, step);
            sqlite3_bind_int64(ins, 3, pred);
            sqlite3_bind_int64(ins, 4, meas);
            sqlite3_bind_text(ins, 5, eng_device_name(e), -1, SQLITE_TRANSIENT);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                ts_fail(err, "%s: %s", rp->path, sqlite3_errmsg(rp->db));
                goto done;
            }
            sqlite3_reset(ins);
        }
        if (re->n > 0) { /* the first step carries GEMM tuning */
            re->sum_abs_rel += fabs((double)pred - meas) / (double)meas;
            re->sum_pred += (double)pred;
            re->sum_meas += (double)meas;
        }
        re->n++;
    }
    if (progress)
        fprintf(stderr, "\r%*s\r", 40, "");
    rc = 0;
done:
    sqlite3_finalize(q);
    sqlite3_finalize(segq);
    sqlite3_finalize(ins);
    sqlite3_finalize(ins_ops);
    step_desc_free(&sd);
    return rc;
}

int eng_replay_run(const char *path, int64_t run_id, int64_t max_steps, double mem_limit_gb,
                   const char *weights, bool ops, const struct eng_choices *choices, FILE *out)
{
    struct replay rp = {.path = path, .choices = choices};
    struct replay_err re = {0};
    struct eng *e = NULL;
    struct ts_err err;
    int ffn_chunks = 0, rc = 1;
    struct eng_opts place = {0}; /* a tensor-parallel rank's place (engine replay --tp) */
    if (eng_tp_place(&place, &err)) {
        fprintf(stderr, "tessera engine replay: %s\n", err.msg);
        return 1;
    }
    rp.writer = place.tp_rank == 0;
    if ((rp.writer ? sqlite3_open_v2(path, &rp.db, SQLITE_OPEN_READWRITE, NULL) : db_open_read(path, &rp.db)) != SQLITE_OK) {
        fprintf(stderr, "tessera engine replay: %s: cannot open the database\n", path);
        goto done;
    }
    /* (the one rule for reading a database: its objects tessera's, the run's steps bounded by it) */
    if (db_own(rp.db, path, &err) || db_bounded(rp.db, path, -1, &err)) /* (its views expand every run) */
        goto fail;
    if (replay_read_run(&rp, run_id, &ffn_chunks, &err) || replay_read_sizes(&rp, max_steps, ffn_chunks, &err))
        goto fail;
    rp.o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    rp.o.weights = weights;
    rp.o.tp_rank = place.tp_rank, rp.o.tp_size = place.tp_size, rp.o.tp_id = place.tp_id;
    if (eng_create(&rp.m, &rp.o, &e, &err))
        goto fail;
    fprintf(out, "replaying %lld steps of run %lld (%s) on %s%s\n", (long long)rp.num_steps, (long long)rp.run_id,
            rp.m.name, eng_device_name(e), rp.o.tp_size > 1 ? " and the next GPUs, tensor parallel" : "");
    if (rp.writer && (db_exec(rp.db, "BEGIN IMMEDIATE") ||
                      db_exec(rp.db, "CREATE TABLE IF NOT EXISTS engine_steps(run_id INTEGER, step_id INTEGER, "
                                     "predicted_ns INTEGER, measured_ns INTEGER, device TEXT, PRIMARY KEY(run_id, "
                                     "step_id))")))
        goto done;
    if (replay_steps(&rp, e, ops, &re, &err)) {
        if (rp.writer)
            db_exec(rp.db, "ROLLBACK");
        goto fail;
    }
    if (rp.writer && db_exec(rp.db, "COMMIT"))
        goto done;
    if (re.n > 1)
        fprintf(out, "%lld steps: measured %.3f s, predicted %.3f s (%+.1f%%); per-step MAPE %.1f%% "
                     "(first step left out: it tunes the GEMMs); rows in engine_steps\n",
                (long long)re.n, re.sum_meas * 1e-9, re.sum_pred * 1e-9,
                100.0 * (re.sum_pred - re.sum_meas) / re.sum_meas, 100.0 * re.sum_abs_rel / (double)(re.n - 1));
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "tessera engine replay: %s\n", err.msg);
done:
    sqlite3_close(rp.db);
    eng_destroy(e);
    free(rp.last_step);
    return rc;
}
