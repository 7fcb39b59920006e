/*
 * db.c: the SQLite output of a run (SPEC section 10).
 *
 *   runs          run_id, created, code_version, seed, config_json
 *   requests      per request: arrival, admitted, first block done, finish (ns), P, G, C, steps,
 *                 preemptions, state, reject_reason
 *   steps         per step: start, duration, segments, q/kv/kv_write/logit tokens, decoded,
 *                 Refresh/Reuse/... counts, activation peak, KV in use   (skipped by --no-steps)
 *   segments      per step and request: phase, q, kv, kv_write, logit_rows, decoded, padding,
 *                 keep, score_rows, q_front, kv_front, kv_write_front, probe, carry
 *                 (what `tessera engine replay` executes; skipped by --no-steps)
 *   summary       one row per run: throughput, latency statistics, counts, memory
 *   op_breakdown  per-op seconds summed over the run
 *
 * A run is written in one transaction straight into the database, in WAL mode, waiting for other
 * writers (SQLite's busy handling): any number of processes may write into one database at once,
 * each run under its own run_id. A failure, SIGINT or SIGTERM rolls the transaction back; a process
 * killed outright leaves a transaction SQLite rolls back the next time the file is opened. Either
 * way no partial run is ever visible, and no file but the database (and, while it is open, SQLite's
 * own -wal and -shm) is made.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
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
    " padding INTEGER, keep INTEGER, score_rows INTEGER, q_front INTEGER, kv_front INTEGER,"
    " kv_write_front INTEGER, probe INTEGER, carry INTEGER);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER PRIMARY KEY, num_requests INTEGER,"
    " num_finished INTEGER, num_rejected INTEGER, num_preemptions INTEGER, num_steps INTEGER,"
    " request_steps INTEGER, tokens_decoded INTEGER, content_tokens INTEGER, makespan_s REAL,"
    " throughput_tok_s REAL, content_tok_s REAL, req_s REAL, lat_mean_s REAL, lat_p50_s REAL,"
    " lat_p90_s REAL, lat_p99_s REAL, lat_std_s REAL, lat_span_s REAL, ttfb_mean_s REAL,"
    " queue_mean_s REAL, mean_q_per_step REAL, mean_segs_per_step REAL, peak_mem_bytes INTEGER,"
    " weight_bytes INTEGER, kv_pool_bytes INTEGER, act_reserved_bytes INTEGER,"
    " capacity_bytes INTEGER, static_batch INTEGER, rows_processed INTEGER, missed_decodes INTEGER,"
    " redundancy REAL);"
    "CREATE TABLE IF NOT EXISTS op_breakdown(run_id INTEGER, op TEXT, seconds REAL,"
    " PRIMARY KEY(run_id, op));";

/* Columns later versions added to a table: a database written before them gets them (their rows
 * read as 0) before a run is added to it. */
static const char *const added_columns[][2] = {{"segments", "keep"},    {"segments", "score_rows"},
                                                {"segments", "q_front"}, {"segments", "kv_front"},
                                                {"segments", "kv_write_front"}, {"segments", "probe"},
                                                {"segments", "carry"},   {"summary", "rows_processed"},
                                                {"summary", "missed_decodes"}, {"summary", "redundancy"}};

/* Adds the added columns the database `name` (main, out) lacks. */
static int db_upgrade(sqlite3 *db, const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        char sql[256];
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s', '%s') WHERE name = '%s'",
                 added_columns[i][0], name, added_columns[i][1]);
        int have = -1;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            have = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (have < 0)
            return -1;
        snprintf(sql, sizeof sql, "ALTER TABLE %s.%s ADD COLUMN %s INTEGER NOT NULL DEFAULT 0", name,
                 added_columns[i][0], added_columns[i][1]);
        if (!have && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    return 0;
}

/* The schema with every table in the attached database `name`. Caller frees. */
static char *schema_in(const char *name)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS ";
    char *out = xmalloc(strlen(schema) + 64 * (strlen(name) + 1) + 1), *o = out;
    for (const char *p = schema; *p;) {
        if (strncmp(p, create, sizeof create - 1) == 0) {
            o += sprintf(o, "%s%s.", create, name);
            p += sizeof create - 1;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

static const char *const state_names[] = {"pending", "waiting", "running", "finished", "rejected"};

struct writer {
    sqlite3 *db;
    struct ts_err *err;
    const char *path;
    enum db_mode mode;
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
    if (prepare(w, "INSERT INTO out.requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
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

/* The step rows recorded since the last flush into the scratch database's steps and segments (run_id
 * 0 there: the run's own is given when they are copied out), step ids counted over the run. */
static int write_steps(struct writer *w, const struct sim *s)
{
    sqlite3_stmt *st, *sg;
    if (prepare(w, "INSERT INTO main.steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    if (prepare(w, "INSERT INTO main.segments VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &sg)) {
        sqlite3_finalize(st);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < s->num_steps && !rc; i++) {
        const struct step_rec *p = &s->steps[i];
        const int64_t step_id = s->steps_flushed + (int64_t)i;
        int64_t v[] = {0, step_id, p->start_ns, p->duration_ns, p->tot.num_segs,
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
            sqlite3_bind_int64(sg, 1, 0);
            sqlite3_bind_int64(sg, 2, step_id);
            sqlite3_bind_int(sg, 3, g->req_id);
            sqlite3_bind_text(sg, 4, seg_phase_name(g->phase), -1, SQLITE_STATIC);
            sqlite3_bind_int(sg, 5, g->q);
            sqlite3_bind_int(sg, 6, g->kv);
            sqlite3_bind_int(sg, 7, g->kv_write);
            sqlite3_bind_int(sg, 8, g->logit_rows);
            sqlite3_bind_int(sg, 9, g->decoded);
            sqlite3_bind_int(sg, 10, g->padding);
            sqlite3_bind_int(sg, 11, g->keep);
            sqlite3_bind_int(sg, 12, g->score_rows);
            sqlite3_bind_int(sg, 13, g->q_front);
            sqlite3_bind_int(sg, 14, g->kv_front);
            sqlite3_bind_int(sg, 15, g->kv_write_front);
            sqlite3_bind_int(sg, 16, g->probe);
            sqlite3_bind_int(sg, 17, g->carry);
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
    if (prepare(w, "INSERT INTO out.summary VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                       m.capacity_bytes, m.static_batch, m.rows_processed, m.missed_decodes};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints2); i++)
        sqlite3_bind_int64(st, k++, ints2[i]);
    sqlite3_bind_double(st, k++, m.redundancy);
    int rc = step_done(w, st);
    sqlite3_finalize(st);
    if (rc || prepare(w, "INSERT INTO out.op_breakdown VALUES(?,?,?)", &st))
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

/* The run's transaction on `out`: its schema first in a transaction of its own, then WAL mode, then
 * the run (so that a new database's header records WAL mode before the run's transaction starts,
 * and a process killed inside it leaves a write-ahead log SQLite recovers and removes on the next
 * open, rather than one a database that never recorded the mode would ignore and leave behind). */
static int write_run(struct writer *w, const struct sim *s)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "begin");
    char *sch = schema_in("out");
    const int ok = sqlite3_exec(w->db, sch, NULL, NULL, NULL) == SQLITE_OK;
    free(sch);
    if (!ok || db_upgrade(w->db, "out"))
        return db_fail(w, "schema (is it a tessera database?)");
    if (sqlite3_exec(w->db, "COMMIT; PRAGMA out.journal_mode=WAL; PRAGMA out.synchronous=NORMAL; BEGIN IMMEDIATE",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "begin");
    if (w->mode == DB_REPLACE &&
        sqlite3_exec(w->db, "DELETE FROM out.runs; DELETE FROM out.requests; DELETE FROM out.steps; "
                            "DELETE FROM out.segments; DELETE FROM out.summary; DELETE FROM out.op_breakdown;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "replacing the runs");
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO out.runs(created, code_version, seed, config_json) VALUES(?,?,?,?)", &st))
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
    const int64_t run_id = sqlite3_last_insert_rowid(w->db);
    char copy[768];
    snprintf(copy, sizeof copy,
             "INSERT INTO out.steps SELECT %lld, step_id, start_ns, duration_ns, num_segs, q_tokens, kv_tokens, "
             "kv_write_tokens, logit_rows, decoded, num_full, num_refresh, num_reuse, num_prefill, num_block, "
             "act_peak_bytes, kv_in_use_bytes, logit_chunk_rows, ffn_chunks FROM main.steps ORDER BY step_id; "
             "INSERT INTO out.segments SELECT %lld, step_id, req_id, phase, q, kv, kv_write, logit_rows, decoded, "
             "padding, keep, score_rows, q_front, kv_front, kv_write_front, probe, carry FROM main.segments "
             "ORDER BY rowid;",
             (long long)run_id, (long long)run_id);
    if (write_requests(w, s, run_id))
        return -1;
    if (sqlite3_exec(w->db, copy, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "copying the step rows");
    if (write_summary(w, s, run_id))
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "commit");
    return 0;
}

int db_segments_prepare(sqlite3 *db, sqlite3_stmt **out)
{
    /* a database from before a column was added reads it as 0 */
    char sql[512];
    int n = snprintf(sql, sizeof sql, "SELECT req_id, phase, q, kv, kv_write, logit_rows, decoded, padding");
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        if (strcmp(added_columns[i][0], "segments") != 0)
            continue;
        char q[160];
        sqlite3_stmt *st = NULL;
        snprintf(q, sizeof q, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'", added_columns[i][0],
                 added_columns[i][1]);
        int have = 0;
        if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            have = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        n += snprintf(sql + n, sizeof sql - (size_t)n, ", %s", have ? added_columns[i][1] : "0");
    }
    snprintf(sql + n, sizeof sql - (size_t)n, " FROM segments WHERE run_id = ? AND step_id = ? ORDER BY rowid");
    return sqlite3_prepare_v2(db, sql, -1, out, NULL);
}

int db_read_step(sqlite3_stmt *st, int64_t run_id, int64_t step_id, struct step_desc *sd, struct ts_err *err)
{
    step_desc_clear(sd);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step_id);
    int rc;
    const char *bad = NULL;
    struct segment g;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        g = (struct segment){.req_id = sqlite3_column_int(st, 0),
                             .phase = (uint8_t)seg_phase_from_name((const char *)sqlite3_column_text(st, 1)),
                             .q = sqlite3_column_int(st, 2), .kv = sqlite3_column_int(st, 3),
                             .kv_write = sqlite3_column_int(st, 4), .logit_rows = sqlite3_column_int(st, 5),
                             .decoded = sqlite3_column_int(st, 6), .padding = (uint8_t)sqlite3_column_int(st, 7),
                             .keep = sqlite3_column_int(st, 8), .score_rows = sqlite3_column_int(st, 9),
                             .q_front = sqlite3_column_int(st, 10), .kv_front = sqlite3_column_int(st, 11),
                             .kv_write_front = sqlite3_column_int(st, 12), .probe = sqlite3_column_int(st, 13),
                             .carry = sqlite3_column_int(st, 14)};
        if ((bad = segment_check(&g)) != NULL)
            break;
        step_desc_add(sd, &g);
    }
    const char *msg = sqlite3_errmsg(sqlite3_db_handle(st));
    sqlite3_reset(st);
    if (bad)
        return ts_fail(err, "run %lld, step %lld: segment of request %d has %s", (long long)run_id,
                       (long long)step_id, g.req_id, bad);
    return rc == SQLITE_DONE ? 0 : ts_fail(err, "run %lld, step %lld: %s", (long long)run_id, (long long)step_id, msg);
}

/* The tables a tessera database has, each with a column that only it has. */
static const char *const tables[][2] = {{"runs", "config_json"}, {"requests", "reject_reason"}, {"steps", "ffn_chunks"},
                                       {"segments", "padding"}, {"summary", "act_reserved_bytes"},
                                       {"op_breakdown", "seconds"}};

int db_check(const char *path, enum db_mode mode, struct ts_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) { /* a new database: its folder must take it */
        const int why = errno;
        char dir[CFG_PATH + 8];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        if (why != ENOENT)
            return ts_fail(err, "%s: %s", path, strerror(why));
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return ts_fail(err, "%s: no such folder '%s'", path, dir);
        if (access(dir, W_OK | X_OK) != 0)
            return ts_fail(err, "%s: cannot create a file in '%s': %s", path, dir, strerror(errno));
        return 0;
    }
    if (S_ISDIR(sb.st_mode))
        return ts_fail(err, "%s: a folder, not a database file", path);
    sqlite3 *db = NULL;
    int rc = -1;
    int64_t runs = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open it for writing: %s", path, db ? sqlite3_errmsg(db) : "?");
        goto done;
    }
    sqlite3_busy_timeout(db, DB_BUSY_MS);
    for (size_t i = 0; i < TS_ARRAY_LEN(tables); i++) {
        char sql[128];
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql, "SELECT count(*), count(%s) FROM %s", tables[i][1], tables[i][0]);
        int prc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (prc == SQLITE_NOTADB || prc == SQLITE_CORRUPT) {
            ts_fail(err, "%s: not an SQLite database", path);
            sqlite3_finalize(st);
            goto done;
        }
        if (prc != SQLITE_OK) {
            /* an empty file or an empty database becomes a tessera one; a database of other tables does not */
            sqlite3_stmt *any = NULL;
            bool empty = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &any, NULL) == SQLITE_OK &&
                         sqlite3_step(any) == SQLITE_ROW && sqlite3_column_int64(any, 0) == 0;
            sqlite3_finalize(any);
            if (!empty) {
                ts_fail(err, "%s: not a tessera database (table %s: %s)", path, tables[i][0], sqlite3_errmsg(db));
                goto done;
            }
            rc = 0;
            goto done;
        }
        if (sqlite3_step(st) == SQLITE_ROW && i == 0)
            runs = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (runs > 0 && mode == DB_NEW) {
        ts_fail(err, "%s: holds %lld runs already; --append adds this one beside them, --replace replaces them",
                path, (long long)runs);
        goto done;
    }
    rc = 0;
done:
    sqlite3_close(db);
    return rc;
}

/* SIGINT and SIGTERM while a run is written: the transaction is interrupted and rolled back, the
 * database closed, and then the signal is taken as it would have been. */
static sqlite3 *volatile writing;
static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    caught = sig;
    if (writing)
        sqlite3_interrupt(writing);
}

struct db_out {
    sqlite3 *db; /* a private temporary database (the step rows), the output attached as `out` at commit */
    struct writer w;
    char path[CFG_PATH];
};

int db_out_open(const char *path, enum db_mode mode, struct db_out **out, struct ts_err *err)
{
    struct db_out *o = xcalloc(1, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    /* "": a temporary database of this connection's own, its file removed as soon as it is made */
    /* no journal and no syncs for it (it is thrown away whole on any failure), and no mutexes on
     * the connection (one thread uses it) */
    if (sqlite3_open_v2("", &o->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(o->db, "PRAGMA main.journal_mode=OFF; PRAGMA main.synchronous=OFF", NULL, NULL,
                     NULL) != SQLITE_OK ||
        sqlite3_exec(o->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot make the run's scratch database: %s", path, o->db ? sqlite3_errmsg(o->db) : "?");
        db_out_close(o);
        return -1;
    }
    sqlite3_busy_timeout(o->db, DB_BUSY_MS);
    o->w = (struct writer){o->db, err, o->path, mode};
    *out = o;
    return 0;
}

/* The step rows in memory into the scratch database; with drop (a streaming run) they are then
 * dropped from memory, else kept (the run stays whole in memory for whoever reads it after). */
static int scratch_steps(struct db_out *o, struct sim *s, bool drop, struct ts_err *err)
{
    o->w.err = err;
    if (sqlite3_exec(o->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(&o->w, "scratch");
    if (write_steps(&o->w, s)) {
        sqlite3_exec(o->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (sqlite3_exec(o->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(&o->w, "scratch");
    if (drop) {
        s->steps_flushed += (int64_t)s->num_steps;
        s->num_steps = s->num_segs = 0;
    }
    return 0;
}

int db_out_flush(struct db_out *o, struct sim *s, struct ts_err *err) { return scratch_steps(o, s, true, err); }

int db_out_commit(struct db_out *o, struct sim *s, struct ts_err *err)
{
    if (!s->cfg.no_steps && scratch_steps(o, s, s->out == o, err)) /* the steps still in memory */
        return -1;
    o->w.err = err;
    sqlite3_stmt *at = NULL;
    bool ok = sqlite3_prepare_v2(o->db, "ATTACH ? AS out", -1, &at, NULL) == SQLITE_OK;
    sqlite3_bind_text(at, 1, o->path, -1, SQLITE_STATIC);
    ok = ok && sqlite3_step(at) == SQLITE_DONE;
    sqlite3_finalize(at);
    if (!ok)
        return ts_fail(err, "%s: cannot open database: %s", o->path, sqlite3_errmsg(o->db));
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    caught = 0;
    writing = o->db;
    sigaction(SIGINT, NULL, &old_int); /* a signal the process ignores stays ignored */
    sigaction(SIGTERM, NULL, &old_term);
    if (old_int.sa_handler != SIG_IGN)
        sigaction(SIGINT, &sa, NULL);
    if (old_term.sa_handler != SIG_IGN)
        sigaction(SIGTERM, &sa, NULL);
    int rc = write_run(&o->w, s);
    if (rc)
        sqlite3_exec(o->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(o->db, "DETACH out", NULL, NULL, NULL);
    writing = NULL;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (caught) { /* nothing of the run was kept: close, then take the signal as it would have been */
        sqlite3_close(o->db);
        o->db = NULL;
        raise(caught);
    }
    return rc;
}

void db_out_close(struct db_out *o)
{
    if (!o)
        return;
    sqlite3_close(o->db);
    free(o);
}

int sim_write_db(struct sim *s, const char *path, enum db_mode mode, struct ts_err *err)
{
    struct db_out *o;
    if (db_out_open(path, mode, &o, err))
        return -1;
    int rc = db_out_commit(o, s, err);
    db_out_close(o);
    return rc;
}

/* The columns of table `t` of schema `schema` but run_id, comma-separated into buf; 0 if it has
 * no run_id column (nothing to merge) or no such table. */
static int columns_but_run_id(sqlite3 *db, const char *schema_name, const char *t, char *buf, size_t len)
{
    char sql[192];
    snprintf(sql, sizeof sql, "PRAGMA %s.table_info(\"%s\")", schema_name, t);
    sqlite3_stmt *st = NULL;
    int has_run = 0;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 1);
        if (strcmp(c, "run_id") == 0)
            has_run = 1;
        else
            snprintf(buf + strlen(buf), len - strlen(buf), "%s\"%s\"", buf[0] ? ", " : "", c);
    }
    sqlite3_finalize(st);
    return has_run;
}

/* Copies every run of the attached database `src` into main, each under a new run_id, and every
 * table of src with a run_id column along with it (a table main lacks is created as src has it). */
static int merge_one(sqlite3 *db, const char *path, int64_t *runs, struct ts_err *err)
{
    sqlite3_stmt *tabs = NULL, *rs = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' ORDER BY name", -1,
                           &tabs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT run_id FROM src.runs ORDER BY run_id", -1, &rs, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
        goto done;
    }
    while (sqlite3_step(tabs) == SQLITE_ROW) { /* tables main lacks (engine_steps, engine_profile, ...) */
        const char *name = (const char *)sqlite3_column_text(tabs, 0), *sql = (const char *)sqlite3_column_text(tabs, 1);
        char probe[160];
        snprintf(probe, sizeof probe, "SELECT 1 FROM main.\"%s\" LIMIT 0", name);
        sqlite3_stmt *p = NULL;
        const bool have = sqlite3_prepare_v2(db, probe, -1, &p, NULL) == SQLITE_OK;
        sqlite3_finalize(p);
        if (!have && sql && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: table %s: %s", path, name, sqlite3_errmsg(db));
            goto done;
        }
    }
    while (sqlite3_step(rs) == SQLITE_ROW) {
        const int64_t old = sqlite3_column_int64(rs, 0);
        char cols[1024], sql[2600];
        sqlite3_reset(tabs);
        /* the run first: its new run_id is the one every other table's rows take */
        columns_but_run_id(db, "src", "runs", cols, sizeof cols);
        snprintf(sql, sizeof sql, "INSERT INTO main.runs(%s) SELECT %s FROM src.runs WHERE run_id = %lld", cols, cols,
                 (long long)old);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: run %lld: %s", path, (long long)old, sqlite3_errmsg(db));
            goto done;
        }
        const int64_t id = sqlite3_last_insert_rowid(db);
        while (sqlite3_step(tabs) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(tabs, 0);
            if (strcmp(name, "runs") == 0 || !columns_but_run_id(db, "src", name, cols, sizeof cols))
                continue;
            snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\"(run_id, %s) SELECT %lld, %s FROM src.\"%s\" WHERE run_id = %lld",
                     name, cols, (long long)id, cols, name, (long long)old);
            if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                ts_fail(err, "%s: run %lld, table %s: %s", path, (long long)old, name, sqlite3_errmsg(db));
                goto done;
            }
        }
        (*runs)++;
    }
    rc = 0;
done:
    sqlite3_finalize(tabs);
    sqlite3_finalize(rs);
    return rc;
}

int db_merge(const char *out, const char *const *in, int n, int64_t *runs, struct ts_err *err)
{
    *runs = 0;
    if (db_check(out, DB_APPEND, err))
        return -1;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (stat(in[i], &sb) != 0)
            return ts_fail(err, "%s: %s", in[i], strerror(errno));
        if (db_check(in[i], DB_APPEND, err))
            return -1;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open database: %s", out, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, DB_BUSY_MS);
    int rc = -1;
    if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: %s", out, sqlite3_errmsg(db));
        goto done;
    }
    for (int i = 0; i < n; i++) { /* one transaction an input (SQLite attaches outside them) */
        sqlite3_stmt *at = NULL;
        bool ok = sqlite3_prepare_v2(db, "ATTACH ? AS src", -1, &at, NULL) == SQLITE_OK;
        sqlite3_bind_text(at, 1, in[i], -1, SQLITE_STATIC);
        ok = ok && sqlite3_step(at) == SQLITE_DONE;
        sqlite3_finalize(at);
        if (!ok) {
            ts_fail(err, "%s: cannot attach: %s", in[i], sqlite3_errmsg(db));
            goto done;
        }
        int64_t got = 0;
        ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(db, "main") == 0;
        if (!ok)
            ts_fail(err, "%s: %s", out, sqlite3_errmsg(db));
        ok = ok && merge_one(db, in[i], &got, err) == 0;
        if (ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: commit: %s", out, sqlite3_errmsg(db));
            ok = false;
        }
        if (!ok)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_exec(db, "DETACH src", NULL, NULL, NULL);
        if (!ok) {
            if (i > 0)
                ts_fail_prefix(err, "%d of %d databases merged, %lld runs; then", i, n, (long long)*runs);
            goto done;
        }
        *runs += got;
    }
    rc = 0;
done:
    sqlite3_close(db);
    return rc;
}
