/*
 * db.c: the SQLite output of a run (SPEC section 10).
 *
 *   runs          run_id, created, code_version, seed, config_json
 *   requests      per request: arrival, admitted, first block done, finish (ns), P, G, C, steps,
 *                 preemptions, state, reject_reason
 *   steps         per step: start, duration, segments, q/kv/kv_write/logit tokens, decoded,
 *                 Refresh/Reuse/... counts, activation peak, KV in use   (skipped by --no-steps)
 *   segments      per step and request: phase, q, kv, kv_write, logit_rows, decoded, padding
 *                 (what `tessera engine replay` executes; skipped by --no-steps)
 *   summary       one row per run: throughput, latency statistics, counts, memory
 *   op_breakdown  per-op seconds summed over the run
 *
 * Everything is written in one transaction. A new database is built in PATH.tmp-PID and renamed
 * over PATH at commit; into an existing database the run is appended (ROLLBACK on failure), so a
 * failure never leaves a partial run behind.
 */
#define _POSIX_C_SOURCE 200809L
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim_internal.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY, created TEXT, code_version TEXT,"
    " seed INTEGER, config_json TEXT);"
    "CREATE TABLE IF NOT EXISTS requests(run_id INTEGER, req_id INTEGER, arrival_ns INTEGER,"
    " admitted_ns INTEGER, first_block_ns INTEGER, finish_ns INTEGER, P INTEGER, G INTEGER,"
    " C INTEGER, steps INTEGER, preemptions INTEGER, state TEXT, reject_reason TEXT,"
    " PRIMARY KEY(run_id, req_id));"
    "CREATE TABLE IF NOT EXISTS steps(run_id INTEGER, step_id INTEGER, start_ns INTEGER,"
    " duration_ns INTEGER, num_segs INTEGER, q_tokens INTEGER, kv_tokens INTEGER,"
    " kv_write_tokens INTEGER, logit_rows INTEGER, decoded INTEGER, num_full INTEGER,"
    " num_refresh INTEGER, num_reuse INTEGER, num_prefill INTEGER, num_block INTEGER,"
    " act_peak_bytes INTEGER, kv_in_use_bytes INTEGER, logit_chunk_rows INTEGER, ffn_chunks INTEGER,"
    " PRIMARY KEY(run_id, step_id));"
    "CREATE TABLE IF NOT EXISTS segments(run_id INTEGER, step_id INTEGER, req_id INTEGER,"
    " phase TEXT, q INTEGER, kv INTEGER, kv_write INTEGER, logit_rows INTEGER, decoded INTEGER,"
    " padding INTEGER);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER PRIMARY KEY, num_requests INTEGER,"
    " num_finished INTEGER, num_rejected INTEGER, num_preemptions INTEGER, num_steps INTEGER,"
    " request_steps INTEGER, tokens_decoded INTEGER, content_tokens INTEGER, makespan_s REAL,"
    " throughput_tok_s REAL, content_tok_s REAL, req_s REAL, lat_mean_s REAL, lat_p50_s REAL,"
    " lat_p90_s REAL, lat_p99_s REAL, lat_std_s REAL, lat_span_s REAL, ttfb_mean_s REAL,"
    " queue_mean_s REAL, mean_q_per_step REAL, mean_segs_per_step REAL, peak_mem_bytes INTEGER,"
    " weight_bytes INTEGER, kv_pool_bytes INTEGER, act_reserved_bytes INTEGER,"
    " capacity_bytes INTEGER, static_batch INTEGER);"
    "CREATE TABLE IF NOT EXISTS op_breakdown(run_id INTEGER, op TEXT, seconds REAL,"
    " PRIMARY KEY(run_id, op));";

static const char *const state_names[] = {"pending", "waiting", "running", "finished", "rejected"};

struct writer {
    sqlite3 *db;
    struct ts_err *err;
    const char *path;
};

static int db_fail(struct writer *w, const char *what)
{
    return ts_fail(w->err, "%s: %s: %s", w->path, what, sqlite3_errmsg(w->db));
}

static int prepare(struct writer *w, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(w->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_fail(w, "prepare");
    return 0;
}

static int step_done(struct writer *w, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        return db_fail(w, "insert");
    sqlite3_reset(st);
    return 0;
}

static int write_requests(struct writer *w, const struct sim *s, int64_t run_id)
{
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    int rc = 0;
    for (int64_t i = 0; i < s->num_reqs && !rc; i++) {
        const struct request *r = &s->reqs[i];
        int k = 1;
        sqlite3_bind_int64(st, k++, run_id);
        sqlite3_bind_int64(st, k++, r->id);
        sqlite3_bind_int64(st, k++, r->arrival_ns);
        int64_t t[3] = {r->admitted_ns, r->first_block_ns, r->finish_ns};
        for (int j = 0; j < 3; j++) {
            if (t[j] >= 0)
                sqlite3_bind_int64(st, k++, t[j]);
            else
                sqlite3_bind_null(st, k++);
        }
        sqlite3_bind_int(st, k++, r->P_orig);
        sqlite3_bind_int(st, k++, r->G_orig);
        sqlite3_bind_int(st, k++, r->C);
        sqlite3_bind_int(st, k++, r->steps);
        sqlite3_bind_int(st, k++, r->preemptions);
        sqlite3_bind_text(st, k++, state_names[r->state], -1, SQLITE_STATIC);
        if (r->reject_reason)
            sqlite3_bind_text(st, k++, r->reject_reason, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, k++);
        rc = step_done(w, st);
    }
    sqlite3_finalize(st);
    return rc;
}

static int write_steps(struct writer *w, const struct sim *s, int64_t run_id)
{
    sqlite3_stmt *st, *sg;
    if (prepare(w, "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    if (prepare(w, "INSERT INTO segments VALUES(?,?,?,?,?,?,?,?,?,?)", &sg)) {
        sqlite3_finalize(st);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < s->num_steps && !rc; i++) {
        const struct step_rec *p = &s->steps[i];
        int64_t v[] = {run_id, (int64_t)i, p->start_ns, p->duration_ns, p->tot.num_segs,
                       p->tot.q_tokens, p->tot.kv_tokens, p->tot.kv_write_tokens, p->tot.logit_rows,
                       p->tot.decoded, p->tot.by_phase[PHASE_FULL], p->tot.by_phase[PHASE_REFRESH],
                       p->tot.by_phase[PHASE_REUSE], p->tot.by_phase[PHASE_PREFILL],
                       p->tot.by_phase[PHASE_BLOCK], p->act_peak_bytes, p->kv_in_use_bytes,
                       p->logit_chunk_rows, p->ffn_chunks};
        for (int k = 0; k < (int)TS_ARRAY_LEN(v); k++)
            sqlite3_bind_int64(st, k + 1, v[k]);
        rc = step_done(w, st);
        size_t end = i + 1 < s->num_steps ? (size_t)s->steps[i + 1].first_seg : s->num_segs;
        for (size_t j = (size_t)p->first_seg; j < end && !rc; j++) {
            const struct segment *g = &s->segs[j];
            sqlite3_bind_int64(sg, 1, run_id);
            sqlite3_bind_int64(sg, 2, (int64_t)i);
            sqlite3_bind_int(sg, 3, g->req_id);
            sqlite3_bind_text(sg, 4, seg_phase_name(g->phase), -1, SQLITE_STATIC);
            sqlite3_bind_int(sg, 5, g->q);
            sqlite3_bind_int(sg, 6, g->kv);
            sqlite3_bind_int(sg, 7, g->kv_write);
            sqlite3_bind_int(sg, 8, g->logit_rows);
            sqlite3_bind_int(sg, 9, g->decoded);
            sqlite3_bind_int(sg, 10, g->padding);
            rc = step_done(w, sg);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(sg);
    return rc;
}

static int write_summary(struct writer *w, const struct sim *s, int64_t run_id)
{
    struct sim_summary m;
    sim_get_summary(s, &m);
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO summary VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                &st))
        return -1;
    int k = 1;
    int64_t ints1[] = {run_id, m.num_requests, m.num_finished, m.num_rejected, m.num_preemptions,
                       m.num_steps, m.request_steps, m.tokens_decoded, m.content_tokens};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints1); i++)
        sqlite3_bind_int64(st, k++, ints1[i]);
    double reals[] = {(double)m.makespan_ns * 1e-9, m.throughput_tok_s, m.content_tok_s, m.req_s,
                      m.lat_mean_s, m.lat_p50_s, m.lat_p90_s, m.lat_p99_s, m.lat_std_s, m.lat_span_s,
                      m.ttfb_mean_s, m.queue_mean_s, m.mean_q_per_step, m.mean_segs_per_step};
    for (size_t i = 0; i < TS_ARRAY_LEN(reals); i++)
        sqlite3_bind_double(st, k++, reals[i]);
    int64_t ints2[] = {m.peak_mem_bytes, m.weight_bytes, m.kv_pool_bytes, m.act_reserved_bytes,
                       m.capacity_bytes, m.static_batch};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints2); i++)
        sqlite3_bind_int64(st, k++, ints2[i]);
    int rc = step_done(w, st);
    sqlite3_finalize(st);
    if (rc || prepare(w, "INSERT INTO op_breakdown VALUES(?,?,?)", &st))
        return -1;
    for (int op = 0; op < OP_COUNT && !rc; op++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, m.ops.op_s[op]);
        rc = step_done(w, st);
    }
    sqlite3_finalize(st);
    return rc;
}

static int write_all(struct writer *w, const struct sim *s)
{
    if (sqlite3_exec(w->db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF;", NULL, NULL,
                     NULL) != SQLITE_OK ||
        sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "begin");
    if (sqlite3_exec(w->db, schema, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "schema (is it a tessera database?)");
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO runs(created, code_version, seed, config_json) VALUES(?,?,?,?)", &st))
        return -1;
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *cfg = sim_config_to_json(&s->cfg);
    sqlite3_bind_text(st, 1, created, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, s->code_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (int64_t)s->cfg.seed);
    sqlite3_bind_text(st, 4, cfg, -1, SQLITE_TRANSIENT);
    int rc = step_done(w, st);
    sqlite3_finalize(st);
    free(cfg);
    if (rc)
        return -1;
    int64_t run_id = sqlite3_last_insert_rowid(w->db);
    if (write_requests(w, s, run_id) || (!s->cfg.no_steps && write_steps(w, s, run_id)) ||
        write_summary(w, s, run_id))
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "commit");
    return 0;
}

int db_segments_prepare(sqlite3 *db, sqlite3_stmt **out)
{
    return sqlite3_prepare_v2(db, "SELECT req_id, phase, q, kv, kv_write, logit_rows, decoded, padding "
                                  "FROM segments WHERE run_id = ? AND step_id = ? ORDER BY rowid", -1, out, NULL);
}

int db_read_step(sqlite3_stmt *st, int64_t run_id, int64_t step_id, struct step_desc *sd)
{
    step_desc_clear(sd);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct segment g = {.req_id = sqlite3_column_int(st, 0),
                            .phase = (uint8_t)seg_phase_from_name((const char *)sqlite3_column_text(st, 1)),
                            .q = sqlite3_column_int(st, 2), .kv = sqlite3_column_int(st, 3),
                            .kv_write = sqlite3_column_int(st, 4), .logit_rows = sqlite3_column_int(st, 5),
                            .decoded = sqlite3_column_int(st, 6), .padding = (uint8_t)sqlite3_column_int(st, 7)};
        step_desc_add(sd, &g);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rc;
}

int sim_write_db(const struct sim *s, const char *path, struct ts_err *err)
{
    struct stat sb;
    bool exists = stat(path, &sb) == 0;
    char tmp[CFG_PATH + 32];
    const char *target = path;
    if (!exists) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
        target = tmp;
    }
    struct writer w = {NULL, err, path};
    if (sqlite3_open(target, &w.db) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open database: %s", path, w.db ? sqlite3_errmsg(w.db) : "?");
        sqlite3_close(w.db);
        if (!exists)
            unlink(tmp);
        return -1;
    }
    int rc = write_all(&w, s);
    if (rc)
        sqlite3_exec(w.db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(w.db);
    if (!exists) {
        if (!rc && rename(tmp, path) != 0)
            rc = ts_fail(err, "%s: cannot rename the finished database into place", path);
        if (rc)
            unlink(tmp);
    }
    return rc;
}
