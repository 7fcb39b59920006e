/*
 * db_plan.c: a plan's candidates read back from its database (tessera plan size goes on with a plan
 * from the candidates it holds) and the plan's ranking written into it.
 *
 * The database is data: it is opened by the one rule for reading one (db_own.c), read by a fixed
 * statement with the plan's digest bound, and a text too long for its field is refused, not cut.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "db_internal.h"
#include "util.h"

static const char *const plan_cols =
    "candidate, label, status, why, rps_per_replica, rps_failed, replicas, gpus, probes, request_steps, p99_s, mean_s, "
    "within, content_tok_s, mean_power_w, accuracy, accuracy_task, known, gpu, wall_s";

/* Column k's text into buf of len: -1 where it does not fit (or is not text where it must be). */
static int text_col(sqlite3_stmt *st, int k, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, k);
    const int n = sqlite3_column_bytes(st, k);
    if (!t || (size_t)n >= len || memchr(t, '\0', (size_t)n))
        return t || sqlite3_column_type(st, k) != SQLITE_NULL ? -1 : (buf[0] = '\0', 0);
    memcpy(buf, t, (size_t)n);
    buf[n] = '\0';
    return 0;
}

static double real_col(sqlite3_stmt *st, int k, double none)
{
    return sqlite3_column_type(st, k) == SQLITE_NULL ? none : sqlite3_column_double(st, k);
}

/* An int column within [lo, hi] into *out; -1 where it is not. */
static int int_col(sqlite3_stmt *st, int k, int64_t lo, int64_t hi, int64_t *out)
{
    if (sqlite3_column_type(st, k) != SQLITE_INTEGER)
        return -1;
    *out = sqlite3_column_int64(st, k);
    return *out < lo || *out > hi ? -1 : 0;
}

int db_plan_read(const char *path, const char *plan, int (*each)(void *ctx, const struct db_plan_row *row), void *ctx,
                 struct ts_err *err)
{
    sqlite3 *db;
    if (db_open_run(path, &db, err)) {
        sqlite3_close(db);
        return -1;
    }
    int rc = 0;
    if (!db_has_table(db, "plan_candidates")) {
        sqlite3_close(db);
        return 0;
    }
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM main.plan_candidates WHERE plan = ?1 ORDER BY candidate", plan_cols);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    int64_t row_no = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        row_no++;
        struct db_plan_row r = {0};
        snprintf(r.plan, sizeof r.plan, "%s", plan);
        int64_t v[4];
        const char *bad = NULL;
        if (int_col(st, 0, 1, INT64_MAX, &r.candidate))
            bad = "candidate";
        else if (text_col(st, 1, r.label, sizeof r.label))
            bad = "label";
        else if (text_col(st, 2, r.status, sizeof r.status))
            bad = "status";
        else if (text_col(st, 3, r.why, sizeof r.why))
            bad = "why";
        else if (int_col(st, 6, 0, 1 << 20, &v[0]) || int_col(st, 7, 0, 1 << 24, &v[1]) ||
                 int_col(st, 8, 0, 1 << 24, &v[2]) || int_col(st, 9, 0, INT64_MAX, &v[3]))
            bad = "replicas, gpus, probes or request_steps";
        else if (text_col(st, 16, r.accuracy_task, sizeof r.accuracy_task) || text_col(st, 17, r.known, sizeof r.known) ||
                 text_col(st, 18, r.gpu, sizeof r.gpu))
            bad = "accuracy_task, known or gpu";
        if (bad) {
            rc = ts_fail(err, "%s: plan_candidates, row %lld of plan %s: field %s is not what a plan writes", path,
                         (long long)row_no, plan, bad);
            break;
        }
        r.replicas = (int)v[0], r.gpus = (int)v[1], r.probes = (int)v[2], r.request_steps = v[3];
        r.rps_per_replica = real_col(st, 4, 0), r.rps_failed = real_col(st, 5, 0);
        r.p99_s = real_col(st, 10, NAN), r.mean_s = real_col(st, 11, NAN), r.within = real_col(st, 12, NAN);
        r.content_tok_s = real_col(st, 13, 0), r.mean_power_w = real_col(st, 14, 0);
        r.accuracy = real_col(st, 15, -1), r.wall_s = real_col(st, 19, 0);
        rc = each(ctx, &r) ? -1 : 0;
    }
    if (rc == 0 && sqlite3_errcode(db) != SQLITE_OK && sqlite3_errcode(db) != SQLITE_DONE &&
        sqlite3_errcode(db) != SQLITE_ROW)
        rc = ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

int db_plan_set_ranks(const char *path, const char *plan, const struct db_plan_rank *r, int64_t n, struct ts_err *err)
{
    sqlite3 *db;
    if (db_open_run(path, &db, err)) {
        sqlite3_close(db);
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(db, "UPDATE main.plan_candidates SET usd_per_hour = ?1, usd_per_mtok = ?2, "
                                            "rank = ?3, front = ?4 WHERE plan = ?5 AND candidate = ?6",
                                        -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : -1;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (r[i].rank > 0 && isfinite(r[i].usd_per_hour))
            sqlite3_bind_double(st, 1, r[i].usd_per_hour);
        else
            sqlite3_bind_null(st, 1);
        if (r[i].rank > 0 && isfinite(r[i].usd_per_mtok))
            sqlite3_bind_double(st, 2, r[i].usd_per_mtok);
        else
            sqlite3_bind_null(st, 2);
        sqlite3_bind_int(st, 3, r[i].rank);
        sqlite3_bind_int(st, 4, r[i].front);
        sqlite3_bind_text(st, 5, plan, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, r[i].candidate);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = -1;
    char why[320];
    if (rc)
        ts_fail(err, "%s: the plan's ranks: %s", path, db_why(db, why, sizeof why));
    if (rc)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}
