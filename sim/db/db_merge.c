/*
 * db_merge.c: merging the runs of several databases into one (tessera db merge). Databases are
 * files users pass to each other, so a merge copies data and never code:
 *   - an input or an existing OUT is a tessera database by the one rule for reading one (db_own.c:
 *     every object its schema holds is tessera's, compared by its SQL text; an input's rows bounded
 *     by its runs), or it is refused by name before anything is written;
 *   - the inputs are opened read-only, and read by statements of tessera's own text, each naming
 *     the columns of its declared table; every value goes into OUT through a bound parameter;
 *   - every connection is guarded (db_guard.c: defensive, schema untrusted, no triggers, ATTACH or
 *     functions that reach outside the database).
 * An older input (one db_upgrade knows) is read as it is: a column added since reads as the value
 * the upgrade gives it, and a table of single steps or segments becomes runs of one step.
 */
#define _GNU_SOURCE /* O_TMPFILE, through db_unnamed_beside */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "db_internal.h"
#include "util.h"

/* an input run's id, and the id it takes in OUT (0: OUT holds it already) */
struct run_map {
    int64_t old, id;
};

/* What a merge knows: the declared schema (in memory), each input's runs as they map into OUT. */
struct merge {
    sqlite3 *decl;
    sqlite3 *out;
    const char *out_path;
    struct run_map *map;
    size_t n_map;
    int64_t runs, already;
    int64_t held_upto; /* the last run of OUT's that temp.held holds */
    struct ts_err *err;
};

/* An input opened read-only, its file and objects checked: a regular file, not OUT itself, sound
 * (SQLite's integrity check, up to DB_CHECK_MAX_BYTES), of tessera's objects alone and its rows
 * bounded by its runs (db_own.c). */
static int open_input(struct merge *m, const char *path, const struct stat *out_sb, sqlite3 **db)
{
    struct stat sb;
    *db = NULL;
    if (stat(path, &sb) != 0)
        return ts_fail(m->err, "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return ts_fail(m->err, "%s: not a regular file, so no database", path);
    if (out_sb && sb.st_dev == out_sb->st_dev && sb.st_ino == out_sb->st_ino)
        return ts_fail(m->err, "%s: is OUT itself (%s); a database is not merged into itself", path, m->out_path);
    char why[320];
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return ts_fail(m->err, "%s: cannot open it: %s", path, db_why(*db, why, sizeof why));
    sqlite3_busy_timeout(*db, DB_BUSY_MS);
    if (db_own(*db, path, m->err))
        return -1;
    if (sb.st_size <= DB_CHECK_MAX_BYTES && db_integrity(*db, path, m->err)) {
        char msg[sizeof m->err->msg];
        snprintf(msg, sizeof msg, "%s", m->err->msg);
        return ts_fail(m->err, "%s; a damaged database is not merged", msg);
    }
    return db_bounded(*db, path, -1, m->err);
}

/* The input's runs mapped into OUT: each new one inserted into OUT's runs (its id OUT's next), each
 * OUT holds already (the same created time, code version, seed and configuration) mapped to 0. */
static int map_runs(struct merge *m, sqlite3 *in, const char *path)
{
    sqlite3_stmt *sel = NULL, *held = NULL, *ins = NULL, *note = NULL;
    int rc = -1;
    m->n_map = 0;
    if (db_has_column(in, "main", "runs", "run_id") != 1) { /* an empty database: no runs */
        rc = 0;
        goto done;
    }
    if (sqlite3_prepare_v2(in, "SELECT run_id, created, code_version, seed, config_json FROM runs ORDER BY run_id",
                           -1, &sel, NULL) != SQLITE_OK) {
        ts_fail(m->err, "%s: runs: %s", path, sqlite3_errmsg(in));
        goto done;
    }
    if (sqlite3_prepare_v2(m->out, "SELECT EXISTS (SELECT 1 FROM temp.held WHERE created IS ?1 AND code_version IS ?2 "
                                   "AND seed IS ?3 AND config_json IS ?4)", -1, &held, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->out, "INSERT INTO main.runs(created, code_version, seed, config_json) VALUES(?1, ?2, ?3, ?4);",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->out, "INSERT INTO temp.held VALUES(?1, ?2, ?3, ?4)", -1, &note, NULL) != SQLITE_OK) {
        ts_fail(m->err, "%s: %s", m->out_path, sqlite3_errmsg(m->out));
        goto done;
    }
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        for (int k = 1; k <= 4; k++) {
            sqlite3_bind_value(held, k, sqlite3_column_value(sel, k));
            sqlite3_bind_value(ins, k, sqlite3_column_value(sel, k));
            sqlite3_bind_value(note, k, sqlite3_column_value(sel, k));
        }
        const bool have = sqlite3_step(held) == SQLITE_ROW && sqlite3_column_int(held, 0);
        sqlite3_reset(held);
        int64_t id = 0;
        if (have) {
            m->already++;
        } else {
            /* (the run's id read before it is noted: the note's insert is the connection's last) */
            const bool put = sqlite3_step(ins) == SQLITE_DONE;
            id = sqlite3_last_insert_rowid(m->out);
            if (!put || sqlite3_step(note) != SQLITE_DONE) {
                ts_fail(m->err, "%s: run %lld: %s", m->out_path, (long long)sqlite3_column_int64(sel, 0),
                        sqlite3_errmsg(m->out));
                goto done;
            }
            sqlite3_reset(ins), sqlite3_reset(note);
        }
        ts_grow((void **)&m->map, &cap, m->n_map + 1, sizeof *m->map);
        m->map[m->n_map++] = (struct run_map){sqlite3_column_int64(sel, 0), id};
    }
    if (step != SQLITE_DONE) {
        ts_fail(m->err, "%s: runs: %s", path, sqlite3_errmsg(in));
        goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(sel), sqlite3_finalize(held), sqlite3_finalize(ins), sqlite3_finalize(note);
    return rc;
}

static int by_old(const void *a, const void *b)
{
    const int64_t x = ((const struct run_map *)a)->old, y = ((const struct run_map *)b)->old;
    return (x > y) - (x < y);
}

/* SQL text of tessera's own (names from the declared schema, quoted): appends ", \"name\"" or the fill. */
static void put(char **buf, size_t *cap, size_t *n, const char *pre, const char *s, bool quote)
{
    const size_t need = *n + strlen(pre) + 2 * strlen(s) + 3;
    ts_grow((void **)buf, cap, need + 1, 1);
    *n += (size_t)sprintf(*buf + *n, "%s%s", pre, quote ? "\"" : "");
    for (; *s; s++) {
        (*buf)[(*n)++] = *s;
        if (*s == '"' && quote)
            (*buf)[(*n)++] = '"';
    }
    *n += (size_t)sprintf(*buf + *n, "%s", quote ? "\"" : "");
}

/* The rows of the input's table `src` copied into OUT's declared table `dst` (src is dst, or an older
 * database's table of single steps or segments for the runs of them), each under its run's new id:
 * the input read by a SELECT of dst's declared columns (a column the input lacks read as the value
 * the upgrade gives it; one no version added refuses the input), OUT written by bound values. */
static int copy_table(struct merge *m, sqlite3 *in, const char *path, const char *src, const char *dst)
{
    char *sel_sql = NULL, *ins_sql = NULL;
    size_t sel_cap = 0, ins_cap = 0, sn = 0, in_n = 0;
    sqlite3_stmt *cols = NULL, *sel = NULL, *ins = NULL;
    int rc = -1, ncol = 0;
    const bool runs_of_one = strcmp(src, dst) != 0;
    put(&sel_sql, &sel_cap, &sn, "SELECT ", "run_id", true);
    put(&ins_sql, &ins_cap, &in_n, "INSERT INTO ", dst, true);
    put(&ins_sql, &ins_cap, &in_n, "(", "run_id", true);
    if (sqlite3_prepare_v2(m->decl, "SELECT name FROM pragma_table_info(?1) WHERE name != 'run_id' ORDER BY cid", -1,
                           &cols, NULL) != SQLITE_OK)
        goto sql_fail;
    sqlite3_bind_text(cols, 1, dst, -1, SQLITE_STATIC);
    while (sqlite3_step(cols) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(cols, 0);
        const bool step_of_run = runs_of_one && (strcmp(c, "first_step") == 0 || strcmp(c, "last_step") == 0);
        const char *from = step_of_run ? "step_id" : c;
        const int have = db_has_column(in, "main", src, from);
        const char *fill = db_column_fill(src, from);
        if (have < 0)
            goto sql_fail;
        if (!have && !fill) {
            ts_fail(m->err, "%s: table %s lacks column %s, which every tessera database has", path, src, from);
            goto done;
        }
        put(&sel_sql, &sel_cap, &sn, ", ", have ? from : fill, have);
        put(&ins_sql, &ins_cap, &in_n, ", ", c, true);
        ncol++;
    }
    put(&sel_sql, &sel_cap, &sn, " FROM ", src, true);
    put(&ins_sql, &ins_cap, &in_n, ") VALUES(?", "", false);
    for (int k = 0; k < ncol; k++)
        put(&ins_sql, &ins_cap, &in_n, ", ?", "", false);
    put(&ins_sql, &ins_cap, &in_n, ")", "", false);
    if (sqlite3_prepare_v2(in, sel_sql, -1, &sel, NULL) != SQLITE_OK) {
        ts_fail(m->err, "%s: table %s: %s", path, src, sqlite3_errmsg(in));
        goto done;
    }
    if (sqlite3_prepare_v2(m->out, ins_sql, -1, &ins, NULL) != SQLITE_OK)
        goto sql_fail;
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        const struct run_map key = {sqlite3_column_int64(sel, 0), 0};
        const struct run_map *r = bsearch(&key, m->map, m->n_map, sizeof *m->map, by_old);
        if (!r || r->id == 0) /* a row of no run, or of a run OUT holds already */
            continue;
        sqlite3_bind_int64(ins, 1, r->id);
        for (int k = 1; k <= ncol; k++)
            sqlite3_bind_value(ins, k + 1, sqlite3_column_value(sel, k));
        if (sqlite3_step(ins) != SQLITE_DONE) {
            ts_fail(m->err, "%s: run %lld, table %s: %s", path, (long long)key.old, dst, sqlite3_errmsg(m->out));
            goto done;
        }
        sqlite3_reset(ins);
    }
    if (step != SQLITE_DONE) {
        ts_fail(m->err, "%s: table %s: %s", path, src, sqlite3_errmsg(in));
        goto done;
    }
    rc = 0;
    goto done;
sql_fail:
    ts_fail(m->err, "%s: %s", m->out_path, sqlite3_errmsg(m->out));
done:
    sqlite3_finalize(cols), sqlite3_finalize(sel), sqlite3_finalize(ins);
    free(sel_sql), free(ins_sql);
    return rc;
}

/* The declared table t made in OUT, by the declared schema's own statement for it. */
static int make_table(struct merge *m, const char *t)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(m->decl, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW &&
            sqlite3_exec(m->out, (const char *)sqlite3_column_text(st, 0), NULL, NULL, NULL) == SQLITE_OK)
            rc = 0;
    }
    sqlite3_finalize(st);
    return rc ? ts_fail(m->err, "%s: table %s: %s", m->out_path, t, sqlite3_errmsg(m->out)) : 0;
}

/* Every table of the input keyed by run_id copied into OUT, OUT given the fleet's or an engine
 * replay's tables where the input has them and it lacks them. */
static int copy_tables(struct merge *m, sqlite3 *in, const char *path)
{
    static const char *const legacy[][2] = {{"steps", "step_runs"}, {"segments", "segment_runs"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(legacy); i++) /* an older database's single steps and segments */
        if (db_has_table(in, legacy[i][0]) && copy_table(m, in, path, legacy[i][0], legacy[i][1]))
            return -1;
    sqlite3_stmt *tabs = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(m->decl, "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND m.name != 'runs' AND "
                           "EXISTS (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'run_id') ORDER BY m.name",
                           -1, &tabs, NULL) != SQLITE_OK)
        return ts_fail(m->err, "the declared schema: %s", sqlite3_errmsg(m->decl));
    while (rc == 0 && sqlite3_step(tabs) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(tabs, 0);
        if (!db_has_table(in, t))
            continue;
        if (!db_has_table(m->out, t)) /* (the fleet's or an engine replay's: OUT gets each it lacks) */
            rc = make_table(m, t);
        rc = rc ? rc : copy_table(m, in, path, t, t);
    }
    sqlite3_finalize(tabs);
    return rc;
}

/* One input merged in OUT's transaction: its runs, then every table of its rows. */
static int merge_one(struct merge *m, sqlite3 *in, const char *path)
{
    m->n_map = 0;
    if (map_runs(m, in, path))
        return -1;
    qsort(m->map, m->n_map, sizeof *m->map, by_old);
    for (size_t i = 0; i < m->n_map; i++)
        m->runs += m->map[i].id != 0;
    return copy_tables(m, in, path);
}

/* OUT's connection: a new OUT in an unnamed file of its folder (fd >= 0, linked by the caller once the
 * merge is whole), else the file at path, guarded and checked to hold tessera's objects alone. */
static int open_out(struct merge *m, int fd)
{
    char name[64], why[320];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    if (sqlite3_open_v2(fd >= 0 ? name : m->out_path, &m->out, SQLITE_OPEN_READWRITE | (fd >= 0 ? 0 : SQLITE_OPEN_CREATE),
                        fd >= 0 ? "tessera-fd" : NULL) != SQLITE_OK)
        return ts_fail(m->err, "%s: cannot open database: %s", m->out_path, db_why(m->out, why, sizeof why));
    sqlite3_busy_timeout(m->out, DB_BUSY_MS);
    if (fd >= 0) /* (a file of tessera's own making that no one else sees: no journal) */
        return db_guard_trust(m->out, true) || sqlite3_exec(m->out, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF",
                                                            NULL, NULL, NULL) != SQLITE_OK
                   ? ts_fail(m->err, "%s: %s", m->out_path, sqlite3_errmsg(m->out))
                   : 0;
    if (db_own(m->out, m->out_path, m->err))
        return -1;
    return sqlite3_exec(m->out, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : ts_fail(m->err, "%s: %s", m->out_path, sqlite3_errmsg(m->out));
}

/* The runs OUT holds that temp.held lacks (those written since it was last brought up to date, by
 * this merge or another writer), added to it under the transaction's lock: 0 or -1. */
static int held_since(struct merge *m)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(m->out, "INSERT INTO temp.held SELECT created, code_version, seed, config_json FROM "
                                   "main.runs WHERE run_id > ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, m->held_upto);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_prepare_v2(m->out, "SELECT coalesce(max(run_id), 0) FROM main.runs", -1, &st, NULL) == SQLITE_OK) {
        rc = sqlite3_step(st) == SQLITE_ROW ? (m->held_upto = sqlite3_column_int64(st, 0), 0) : -1;
        sqlite3_finalize(st);
    }
    return rc;
}

/* Every input merged into OUT's open connection, one transaction an input. */
static int merge_all(struct merge *m, sqlite3 *const *in, const char *const *paths, int n)
{
    char *sch = db_schema_in("main");
    for (int i = 0; i < n; i++) {
        const int64_t runs0 = m->runs, already0 = m->already;
        /* (the runs OUT holds, for the question whether it holds an input's: indexed, in the connection's
         * own temporary schema, which its file never sees) */
        bool ok = sqlite3_exec(m->out, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
                  sqlite3_exec(m->out, sch, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(m->out, "main") == 0 &&
                  (i > 0 || sqlite3_exec(m->out, "CREATE TEMP TABLE held(created, code_version, seed, config_json); "
                                                 "CREATE INDEX temp.held_key ON held(created, code_version, seed)",
                                                 NULL, NULL, NULL) == SQLITE_OK) &&
                  held_since(m) == 0;
        if (!ok)
            ts_fail(m->err, "%s: %s", m->out_path, sqlite3_errmsg(m->out));
        ok = ok && merge_one(m, in[i], paths[i]) == 0;
        if (ok && sqlite3_exec(m->out, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(m->err, "%s: commit: %s", m->out_path, sqlite3_errmsg(m->out));
            ok = false;
        }
        if (!ok) {
            sqlite3_exec(m->out, "ROLLBACK", NULL, NULL, NULL);
            m->runs = runs0, m->already = already0;
            if (i > 0)
                ts_fail_prefix(m->err, "%d of %d databases merged, %lld runs; then", i, n, (long long)m->runs);
            free(sch);
            return -1;
        }
    }
    free(sch);
    return 0;
}

/* A database file and the logs SQLite keeps beside it removed. */
void db_remove(const char *path)
{
    static const char *const logs[] = {"", "-wal", "-shm", "-journal"};
    char name[CFG_PATH + 16];
    for (size_t i = 0; i < TS_ARRAY_LEN(logs); i++) {
        snprintf(name, sizeof name, "%s%s", path, logs[i]);
        unlink(name);
    }
}

int db_merge(const char *out, const char *const *in, int n, int64_t *runs, int64_t *already, struct ts_err *err)
{
    *runs = *already = 0;
    if (db_guard_process() || db_fd_vfs())
        return ts_fail(err, "%s: cannot set up SQLite", out);
    struct merge m = {.out_path = out, .err = err};
    sqlite3 **src = xcalloc((size_t)TS_MAX(n, 1), sizeof *src);
    struct stat out_sb;
    const bool out_exists = stat(out, &out_sb) == 0;
    int rc = -1, fd = -1;
    if (db_declared(&m.decl, err) || db_check(out, DB_APPEND, err))
        goto done;
    for (int i = 0; i < n; i++) /* every input checked before anything is written */
        if (open_input(&m, in[i], out_exists ? &out_sb : NULL, &src[i]))
            goto done;
    /* a new OUT is made whole or not at all: written in an unnamed file, linked once complete */
    fd = out_exists ? -1 : db_unnamed_beside(out);
    if (fd >= 0 && db_lay_out(fd, out, false, err))
        goto done;
    const bool made_here = !out_exists && fd < 0;
    rc = open_out(&m, fd) || merge_all(&m, src, in, n) ? -1 : 0;
    sqlite3_close(m.out), m.out = NULL;
    if (rc == 0 && fd >= 0) {
        const int linked = db_link_whole(fd, out, err);
        if (linked > 0)
            ts_fail(err, "%s: made by another process while this merge ran, or no /proc to link it by; merge "
                    "again into it", out);
        rc = linked ? -1 : 0;
    }
    if (rc && made_here) /* (where no unnamed file could be made: the new OUT is removed, with its logs) */
        db_remove(out);
    else if (fd < 0)
        db_leave_rollback(out);
    if (rc == 0)
        *runs = m.runs, *already = m.already;
done:
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < n; i++)
        sqlite3_close(src[i]);
    free(src);
    sqlite3_close(m.decl);
    free(m.map);
    return rc;
}
