/*
 * db_check.c: the checks a database passes before a run is written into it (sim --db, --append,
 * --replace; db merge's OUT): the path takes a file, an existing file is a tessera database by the one
 * rule for reading one (db_own.c) that this process can write, holding no runs unless the mode says
 * what to do with them, and sound where it is appended to.
 */
#define _GNU_SOURCE /* lstat, O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "config.h"
#include "db_internal.h"

/* The tables a tessera database has, each with a column that only it has. */
static const char *const tables[][2] = {{"runs", "config_json"}, {"requests", "reject_reason"}, {"steps", "ffn_chunks"},
                                       {"segments", "padding"}, {"summary", "act_reserved_bytes"},
                                       {"op_breakdown", "seconds"}};

/* Whether folder dir takes path, a new file, tried without naming one: an unnamed file made and dropped
 * (O_TMPFILE). Where its file system has none, a kernel's own (/proc, /sys), which holds no database,
 * is refused by its type; any other is taken on its permissions. */
static int folder_takes_files(const char *path, const char *dir, struct ts_err *err)
{
    const int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    const int why = errno;
    struct statfs fs;
    if (why != EOPNOTSUPP && why != EISDIR && why != EINVAL)
        return ts_fail(err, "%s: cannot create a file in '%s': %s", path, dir, strerror(why));
    if (statfs(dir, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
        return ts_fail(err, "%s: '%s' is the kernel's %s file system, which holds no database", path, dir,
                       fs.f_type == PROC_SUPER_MAGIC ? "proc" : "sysfs");
    return 0;
}

int db_check(const char *path, enum db_mode mode, struct ts_err *err)
{
    if (db_guard_process())
        return ts_fail(err, "%s: cannot set SQLite's guards", path);
    struct stat sb;
    if (stat(path, &sb) != 0) { /* a new database: its folder must take it */
        const int why = errno;
        char dir[CFG_PATH + 8];
        ts_folder_of(path, dir, sizeof dir);
        if (why != ENOENT)
            return ts_fail(err, "%s: %s", path, strerror(why));
        if (lstat(path, &sb) == 0) /* a link to nothing: SQLite would not follow it to make the file */
            return ts_fail(err, "%s: a symbolic link to a file that does not exist", path);
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return ts_fail(err, "%s: no such folder '%s'", path, dir);
        if (access(dir, W_OK | X_OK) != 0)
            return ts_fail(err, "%s: cannot create a file in '%s': %s", path, dir, strerror(errno));
        return folder_takes_files(path, dir, err);
    }
    if (S_ISDIR(sb.st_mode))
        return ts_fail(err, "%s: a folder, not a database file", path);
    if (!S_ISREG(sb.st_mode))
        return ts_fail(err, "%s: not a regular file (a device, pipe or socket), so no database", path);
    if (access(path, W_OK) != 0) /* a read-only file system or file: said before the run, not after */
        return ts_fail(err, "%s: cannot write it: %s", path, strerror(errno));
    char folder[CFG_PATH + 8];
    ts_folder_of(path, folder, sizeof folder);
    /* (a write keeps its journal beside the database: a folder that takes no file fails it after the run) */
    if (access(folder, W_OK | X_OK) != 0)
        return ts_fail(err, "%s: cannot write its journal beside it in '%s': %s", path, folder, strerror(errno));
    sqlite3 *db = NULL;
    int rc = -1;
    int64_t runs = 0;
    char why[320];
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open it for writing: %s", path, db_why(db, why, sizeof why));
        goto done;
    }
    sqlite3_busy_timeout(db, DB_BUSY_MS);
    /* (a schema another writer is making meanwhile is waited out, as db_prepare_waiting does) */
    int own = db_own(db, path, err);
    for (int waited = 0; own && db_transient(db) && waited <= DB_BUSY_MS; waited += 10) {
        sqlite3_sleep(10);
        own = db_own(db, path, err);
    }
    if (own)
        goto done;
    for (size_t i = 0; i < TS_ARRAY_LEN(tables); i++) {
        char sql[128];
        sqlite3_stmt *st = NULL;
        /* compiled, not run: a table or column missing fails here, and no row is read (the steps and
         * segments views expand every stored run); the runs table alone is counted */
        if (i == 0)
            snprintf(sql, sizeof sql, "SELECT count(*), count(%s) FROM %s", tables[i][1], tables[i][0]);
        else
            snprintf(sql, sizeof sql, "SELECT %s FROM %s LIMIT 0", tables[i][1], tables[i][0]);
        int prc = db_prepare_waiting(db, sql, &st);
        if (prc == SQLITE_NOTADB || prc == SQLITE_CORRUPT) {
            ts_fail(err, "%s: not an SQLite database", path);
            sqlite3_finalize(st);
            goto done;
        }
        if (prc != SQLITE_OK && prc != SQLITE_ERROR) { /* the environment's refusal, not the schema's */
            ts_fail(err, "%s: cannot read it: %s", path, db_why(db, why, sizeof why));
            sqlite3_finalize(st);
            goto done;
        }
        if (prc != SQLITE_OK) {
            /* an empty file or an empty database becomes a tessera one; a database of other tables does not */
            char missing[256];
            snprintf(missing, sizeof missing, "%s", sqlite3_errmsg(db));
            sqlite3_stmt *any = NULL;
            bool empty = db_prepare_waiting(db, "SELECT count(*) FROM sqlite_master", &any) == SQLITE_OK &&
                         sqlite3_step(any) == SQLITE_ROW && sqlite3_column_int64(any, 0) == 0;
            sqlite3_finalize(any);
            if (!empty) {
                ts_fail(err, "%s: not a tessera database (table %s: %s)", path, tables[i][0], missing);
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
    if (mode == DB_APPEND && runs > 0 && sb.st_size <= DB_CHECK_MAX_BYTES && db_integrity(db, path, err)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        ts_fail(err, "%s; a damaged database is neither appended to nor merged", msg);
        goto done;
    }
    rc = 0;
done:
    sqlite3_close(db);
    return rc;
}

