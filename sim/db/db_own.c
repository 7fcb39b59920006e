/*
 * db_own.c: the one rule for reading a database. A database is a file users pass to each other (a
 * shared sweep, a paper's artefact), so before tessera reads it, it must be tessera's:
 *   - its schema holds exactly the objects tessera's own statements create (db_schema.c, after the
 *     upgrades), each compared by its SQL text, not by its name alone: a table's statement is
 *     "CREATE TABLE name(" and column definitions, each one of tessera's for that table (an upgrade's
 *     added columns and an older database's tables of single steps and segments among them); a view
 *     is the statement tessera makes over the table's own columns; the index is tessera's; SQLite's
 *     own objects are its automatic indexes and its statistics table, of SQLite's text. A generated
 *     column, a CHECK, a default of another's making, a view or index of another expression: refused
 *     by name.
 *   - the values it is read by are bounded by what they describe: every run of steps tiles its run's
 *     steps (0 to the summary's num_steps, in order, none twice), every run of a request's segments
 *     lies within them.
 * Every entry point that opens a run database goes through db_open_run (db check, merge's inputs and
 * OUT, export, show, --append's check, calib eval and the engine's replay).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db_internal.h"
#include "util.h"

int db_declared(sqlite3 **decl, struct ts_err *err)
{
    char *core = db_schema_in("main"), *fleet = db_fleet_schema_in("main"), *engine = db_engine_schema_in("main"),
         *plan = db_plan_schema_in("main");
    const bool ok = sqlite3_open_v2(":memory:", decl, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK &&
                    sqlite3_exec(*decl, core, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(*decl, "main") == 0 &&
                    sqlite3_exec(*decl, fleet, NULL, NULL, NULL) == SQLITE_OK &&
                    sqlite3_exec(*decl, engine, NULL, NULL, NULL) == SQLITE_OK &&
                    sqlite3_exec(*decl, plan, NULL, NULL, NULL) == SQLITE_OK &&
                    sqlite3_exec(*decl, DB_SEGMENT_INDEX, NULL, NULL, NULL) == SQLITE_OK;
    free(core), free(fleet), free(engine), free(plan);
    return ok ? 0 : ts_fail(err, "cannot lay out tessera's schema in memory: %s", sqlite3_errmsg(*decl));
}

/* The SQL text of db's object `name` of type `type` into buf ("" where it has none). */
static void object_sql(sqlite3 *db, const char *type, const char *name, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(db, "SELECT sql FROM main.sqlite_schema WHERE type = ?1 AND name = ?2", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
}

/* The next column definition or table constraint of a table's statement (between its outer
 * parentheses, split at the commas outside any parenthesis): its length from *p, *p moved past it
 * and its ", ". */
static size_t next_piece(const char **p)
{
    const char *s = *p;
    int depth = 0;
    size_t n = 0;
    for (; s[n] && !(depth == 0 && s[n] == ',' && s[n + 1] == ' '); n++)
        depth += s[n] == '(' ? 1 : s[n] == ')' ? -1 : 0;
    *p = s + n + (s[n] ? 2 : 0);
    return n;
}

/* Whether piece (n bytes) is one of the column definitions of the declared table's statement decl. */
static bool in_statement(const char *decl, const char *piece, size_t n)
{
    const char *body = strchr(decl, '(');
    if (!body)
        return false;
    const size_t len = strlen(++body) - 1; /* (up to the closing parenthesis) */
    char copy[4096];
    snprintf(copy, sizeof copy, "%.*s", (int)len, body);
    for (const char *p = copy; *p;) {
        const char *at = p;
        const size_t k = next_piece(&p);
        if (k == n && strncmp(at, piece, n) == 0)
            return true;
    }
    return false;
}

/* Whether piece (n bytes) is a column definition tessera writes into table t: its declared statement's
 * (decl_sql), an upgrade's, or for an older database's table of single steps or segments (base_sql:
 * the runs' table it became) the runs' columns but their first and last step, with a step_id. */
static bool piece_ok(const char *t, const char *decl_sql, const char *base_sql, const char *piece, size_t n)
{
    char one[512];
    snprintf(one, sizeof one, "%.*s", (int)n, piece);
    if (n >= sizeof one - 1 || db_added_piece(t, one))
        return n < sizeof one - 1;
    if (!base_sql)
        return in_statement(decl_sql, piece, n);
    if (strcmp(one, "step_id INTEGER") == 0 || (strcmp(t, "steps") == 0 && strcmp(one, "PRIMARY KEY(run_id, step_id)") == 0))
        return true;
    return strcmp(one, "first_step INTEGER") != 0 && strcmp(one, "last_step INTEGER") != 0 &&
           in_statement(base_sql, piece, n);
}

/* Table t's statement sql holds column definitions of tessera's alone, none twice. */
static int table_ok(sqlite3 *decl, const char *path, const char *t, const char *sql, struct ts_err *err)
{
    char want[64], decl_sql[4096] = "", base_sql[4096] = "";
    snprintf(want, sizeof want, "CREATE TABLE %s(", t);
    const bool legacy = strcmp(t, "steps") == 0 || strcmp(t, "segments") == 0;
    object_sql(decl, "table", legacy ? (t[1] == 't' ? "step_runs" : "segment_runs") : t, legacy ? base_sql : decl_sql,
               sizeof decl_sql);
    const size_t len = strlen(sql), w = strlen(want);
    if (len <= w || strncmp(sql, want, w) != 0 || sql[len - 1] != ')')
        return ts_fail(err, "%s: not a tessera database (table %s is not one tessera makes: %.80s)", path, t, sql);
    char body[8192];
    if (len - w - 1 >= sizeof body)
        return ts_fail(err, "%s: table %s's statement is longer than any tessera makes", path, t);
    snprintf(body, sizeof body, "%.*s", (int)(len - w - 1), sql + w);
    const char *seen[128];
    size_t seen_n[128], k = 0;
    for (const char *p = body; *p;) {
        const char *at = p;
        const size_t n = next_piece(&p);
        bool twice = false;
        for (size_t i = 0; i < k; i++)
            twice |= seen_n[i] == n && strncmp(seen[i], at, n) == 0;
        if (twice || k == TS_ARRAY_LEN(seen) || !piece_ok(t, decl_sql, legacy ? base_sql : NULL, at, n))
            return ts_fail(err, "%s: not a tessera database (table %s has a column definition no tessera database "
                           "has: '%.*s'%s)", path, t, (int)TS_MIN(n, 120), at, twice ? " twice" : "");
        seen[k] = at, seen_n[k++] = n;
    }
    return 0;
}

/* The columns of db's table t from the index-th on, ", "-separated, into buf ("" where none). */
static void columns_from(sqlite3 *db, const char *t, int index, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1, 'main') WHERE cid >= ?2 ORDER BY cid", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, index);
        while (sqlite3_step(st) == SQLITE_ROW && n + 2 < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
}

/* View v (steps or segments) is the statement tessera makes over the file's own runs table. */
static bool view_ok(sqlite3 *db, const char *v, const char *sql)
{
    const bool steps = strcmp(v, "steps") == 0;
    if (!steps && strcmp(v, "segments") != 0)
        return false;
    char cols[2048], want[8192];
    if (steps) {
        columns_from(db, "step_runs", 5, cols, sizeof cols);
    } else {
        char rest[2000];
        columns_from(db, "segment_runs", 4, rest, sizeof rest);
        snprintf(cols, sizeof cols, "req_id%s%s", rest[0] ? ", " : "", rest);
    }
    db_view_sql(steps, "CREATE VIEW ", cols, want, sizeof want);
    return strcmp(sql, want) == 0;
}

/* An object of SQLite's own (a name starting sqlite_): an automatic index of a table tessera declares
 * (no statement), or the statistics table ANALYZE makes, of SQLite's text. */
static bool sqlite_own_ok(sqlite3 *decl, const char *type, const char *name, const char *table, const char *sql)
{
    char dsql[16];
    if (strncmp(name, "sqlite_autoindex_", 17) == 0 && strcmp(type, "index") == 0 && !sql) {
        object_sql(decl, "table", table, dsql, sizeof dsql);
        return dsql[0] || strcmp(table, "steps") == 0;
    }
    return strcmp(name, "sqlite_stat1") == 0 && strcmp(type, "table") == 0 && sql &&
           strcmp(sql, "CREATE TABLE sqlite_stat1(tbl,idx,stat)") == 0;
}

/* Why db's schema could not be read: not a database, a damaged one, or SQLite's reason. -1. */
static int schema_unread(sqlite3 *db, const char *path, struct ts_err *err)
{
    const int code = sqlite3_errcode(db) & 0xff;
    if (code == SQLITE_NOTADB)
        return ts_fail(err, "%s: not an SQLite database", path);
    if (code == SQLITE_CORRUPT)
        return ts_fail(err, "%s: the database is damaged (its schema cannot be read: %s)", path, sqlite3_errmsg(db));
    char why[320];
    return ts_fail(err, "%s: cannot read its schema: %s", path, db_why(db, why, sizeof why));
}

int db_own(sqlite3 *db, const char *path, struct ts_err *err)
{
    sqlite3 *decl = NULL;
    sqlite3_stmt *st = NULL;
    int rc = db_declared(&decl, err);
    if (rc == 0 && sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY rowid", -1,
                                      &st, NULL) != SQLITE_OK) {
        rc = schema_unread(db, path, err);
    }
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0), *name = (const char *)sqlite3_column_text(st, 1),
                   *table = (const char *)sqlite3_column_text(st, 2), *sql = (const char *)sqlite3_column_text(st, 3);
        type = type ? type : "?", name = name ? name : "", table = table ? table : "";
        char dsql[512];
        if (strncmp(name, "sqlite_", 7) == 0) {
            if (!sqlite_own_ok(decl, type, name, table, sql))
                rc = ts_fail(err, "%s: holds %s '%s' under a name of SQLite's own, which SQLite did not make", path,
                             type, name);
        } else if (strcmp(type, "table") == 0) {
            object_sql(decl, "table", name, dsql, sizeof dsql);
            if (!dsql[0] && strcmp(name, "steps") != 0 && strcmp(name, "segments") != 0)
                rc = ts_fail(err, "%s: holds table '%s', which is no part of a tessera database", path, name);
            else
                rc = table_ok(decl, path, name, sql ? sql : "", err);
        } else if (strcmp(type, "view") == 0) {
            if (!sql || !view_ok(db, name, sql))
                rc = ts_fail(err, "%s: holds view '%s', which is not tessera's (a view is tessera's own statement over "
                             "its runs of steps or segments)", path, name);
        } else if (strcmp(type, "index") == 0) {
            object_sql(decl, "index", name, dsql, sizeof dsql);
            if (!dsql[0] || !sql || strcmp(sql, dsql) != 0)
                rc = ts_fail(err, "%s: holds index '%s', which is not tessera's", path, name);
        } else {
            rc = ts_fail(err, "%s: holds %s '%s', which is no part of a tessera database", path, type, name);
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = schema_unread(db, path, err);
    sqlite3_finalize(st);
    sqlite3_close(decl);
    return rc;
}

/* The first row the query finds (run, first, last and the run's steps), said as what is wrong with
 * it; 0 where it finds none. */
static int first_bad(sqlite3 *db, const char *path, const char *what, const char *sql, int64_t run_id,
                     struct ts_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: cannot read its %s: %s", path, what, sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, run_id);
    int rc = 0;
    const int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        const char *steps = (const char *)sqlite3_column_text(st, 3);
        rc = ts_fail(err, "%s: run %lld: a run of %s from step %.24s to %.24s, outside its %.24s steps (the summary's "
                     "num_steps); a database whose rows describe more than its runs did is not read",
                     path, (long long)sqlite3_column_int64(st, 0), what, (const char *)sqlite3_column_text(st, 1),
                     (const char *)sqlite3_column_text(st, 2), steps ? steps : "unknown");
    } else if (step != SQLITE_DONE) {
        rc = (sqlite3_errcode(db) & 0xff) == SQLITE_CORRUPT
                 ? ts_fail(err, "%s: the database is damaged (reading its %s: %s)", path, what, sqlite3_errmsg(db))
                 : ts_fail(err, "%s: cannot read its %s: %s", path, what, sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    return rc;
}

int db_bounded(sqlite3 *db, const char *path, int64_t run_id, struct ts_err *err)
{
    /* every run of steps begins where the one before it ended (the first at step 0), and the last
     * ends at the run's last step */
    static const char steps_sql[] =
        "WITH r AS (SELECT run_id, first_step, last_step, lag(last_step) OVER (PARTITION BY run_id ORDER BY "
        "first_step, last_step) AS prev, lead(first_step) OVER (PARTITION BY run_id ORDER BY first_step, last_step) "
        "AS next FROM main.step_runs WHERE ?1 < 0 OR run_id = ?1) SELECT r.run_id, r.first_step, r.last_step, "
        "s.num_steps FROM r LEFT JOIN main.summary s USING (run_id) WHERE typeof(r.first_step) != 'integer' OR "
        "typeof(r.last_step) != 'integer' OR typeof(s.num_steps) != 'integer' OR r.last_step < r.first_step OR "
        "r.first_step != coalesce(r.prev + 1, 0) OR (r.next IS NULL AND r.last_step != s.num_steps - 1) LIMIT 1";
    static const char segs_sql[] =
        "SELECT g.run_id, g.first_step, g.last_step, s.num_steps FROM main.segment_runs g LEFT JOIN main.summary s "
        "USING (run_id) WHERE (?1 < 0 OR g.run_id = ?1) AND (typeof(g.first_step) != 'integer' OR "
        "typeof(g.last_step) != 'integer' OR typeof(s.num_steps) != 'integer' OR g.first_step < 0 OR "
        "g.last_step < g.first_step OR g.last_step >= s.num_steps OR typeof(g.req_id) != 'integer' OR g.req_id < 0 "
        "OR g.req_id >= s.num_requests) LIMIT 1";
    const bool runs_of_steps = db_has_table(db, "step_runs") || db_has_table(db, "segment_runs");
    if (!db_has_table(db, "summary"))
        return runs_of_steps ? ts_fail(err, "%s: holds runs of steps but no summary to bound them by; not read", path)
                             : 0;
    /* a run's steps are counted in 32 bits by every reader: more is no run tessera made */
    sqlite3_stmt *st = NULL;
    int64_t bad_run = -1;
    if (sqlite3_prepare_v2(db, "SELECT run_id FROM main.summary WHERE (?1 < 0 OR run_id = ?1) AND "
                               "(typeof(num_steps) NOT IN ('integer', 'null') OR num_steps < 0 OR "
                               "num_steps > 2147483647) LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: cannot read its summary: %s", path, sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        bad_run = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (bad_run >= 0)
        return ts_fail(err, "%s: run %lld: its summary's num_steps is no count of steps a run has (0 to 2^31 - 1)",
                       path, (long long)bad_run);
    if (db_has_table(db, "step_runs") && first_bad(db, path, "steps", steps_sql, run_id, err))
        return -1;
    return db_has_table(db, "segment_runs") ? first_bad(db, path, "a request's segments", segs_sql, run_id, err) : 0;
}

int db_open_run(const char *path, sqlite3 **db, struct ts_err *err)
{
    *db = NULL;
    if (access(path, R_OK) != 0)
        return ts_fail(err, "%s: %s", path, strerror(errno));
    char why[320];
    if (db_open_read(path, db) != SQLITE_OK)
        return ts_fail(err, "%s: cannot open it: %s", path, db_why(*db, why, sizeof why));
    sqlite3_busy_timeout(*db, DB_BUSY_MS);
    return db_own(*db, path, err);
}
