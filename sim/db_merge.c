/* db_merge.c: merging the runs of several databases into one (tessera db merge). */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "db_internal.h"
#include "util.h"

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
static int merge_one(sqlite3 *db, const char *path, int64_t *runs, int64_t *already, struct ts_err *err)
{
    sqlite3_stmt *tabs = NULL, *rs = NULL;
    int rc = -1;
    /* the input's runs, each with whether main holds it already (a run's identity: its created time,
     * code version, seed and configuration) */
    if (sqlite3_prepare_v2(db, "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' ORDER BY name", -1,
                           &tabs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT s.run_id, EXISTS (SELECT 1 FROM main.runs m WHERE m.created IS s.created AND "
                           "m.code_version IS s.code_version AND m.seed IS s.seed AND m.config_json IS s.config_json) "
                           "FROM src.runs s ORDER BY s.run_id", -1, &rs, NULL) != SQLITE_OK) {
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
        if (sqlite3_column_int(rs, 1)) {
            (*already)++;
            continue;
        }
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


int db_merge(const char *out, const char *const *in, int n, int64_t *runs, int64_t *already, struct ts_err *err)
{
    *runs = *already = 0;
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
    if (db_create_whole(out, err))
        return -1;
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
        /* both at the current schema: an older input is upgraded in place, as appending to it would */
        char *src_schema = db_schema_in("src"), *main_schema = db_schema_in("main");
        ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(db, main_schema, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(db, "main") == 0 &&
             sqlite3_exec(db, src_schema, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(db, "src") == 0;
        free(src_schema), free(main_schema);
        if (!ok)
            ts_fail(err, "%s: %s", out, sqlite3_errmsg(db));
        ok = ok && merge_one(db, in[i], &got, already, err) == 0;
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
    if (rc == 0)
        db_leave_rollback(out);
    return rc;
}
