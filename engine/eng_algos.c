/* eng_algos.c: the GEMM algorithm cache (SQLite). */
#define _POSIX_C_SOURCE 200809L
#include "eng_algos.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA                                                                                              \
    "CREATE TABLE IF NOT EXISTS gemm_algos(device TEXT NOT NULL, lib_version INTEGER NOT NULL, "          \
    "ws_bytes INTEGER NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, "            \
    "beta1 INTEGER NOT NULL, algo BLOB NOT NULL, ms REAL, heuristic_ms REAL, "                            \
    "PRIMARY KEY(device, lib_version, ws_bytes, m, n, k, beta1))"
#define WHERE_KEY " WHERE device = ?1 AND lib_version = ?2 AND ws_bytes = ?3"

static int db_fail(struct algo_cache *c, struct ts_err *err, const char *what)
{
    return ts_fail(err, "%s: GEMM algorithm cache: %s (%s)", c->path, what,
                   c->db ? sqlite3_errmsg(c->db) : "cannot open");
}

/* Binds ?1-?3 (device, library version, workspace) and, with k, ?4-?7 (the shape). */
static void bind_key(struct algo_cache *c, sqlite3_stmt *s, const struct algo_key *k)
{
    sqlite3_bind_text(s, 1, c->device, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->lib_version);
    sqlite3_bind_int64(s, 3, c->ws_bytes);
    if (k) {
        sqlite3_bind_int(s, 4, k->m);
        sqlite3_bind_int(s, 5, k->n);
        sqlite3_bind_int(s, 6, k->k);
        sqlite3_bind_int(s, 7, k->beta1);
    }
}

/* Adds one row read from the file (s: m, n, k, beta1, algo, ms, heuristic_ms) to memory. */
static int add_row(struct algo_cache *c, sqlite3_stmt *s, int64_t rowid, struct ts_err *err)
{
    struct algo_key k = {sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int(s, 2),
                         sqlite3_column_int(s, 3)};
    if (k.m < 1 || k.n < 1 || k.k < 1 || k.beta1 < 0 || k.beta1 > 3)
        return ts_fail(err, "%s: gemm_algos row %lld: m, n, k: %d x %d x %d (flags %d) is not a GEMM shape",
                       c->path, (long long)rowid, k.m, k.n, k.k, k.beta1);
    int bytes = sqlite3_column_bytes(s, 4);
    if (sqlite3_column_type(s, 4) != SQLITE_BLOB || bytes != (int)c->blob_bytes)
        return ts_fail(err, "%s: gemm_algos row %lld: algo: %d bytes, expected a %zu-byte blob", c->path,
                       (long long)rowid, bytes, c->blob_bytes);
    ts_grow((void **)&c->e, &c->cap, c->n + 1, sizeof *c->e);
    struct algo_entry *e = &c->e[c->n++];
    e->key = k;
    e->blob = xmalloc(c->blob_bytes);
    memcpy(e->blob, sqlite3_column_blob(s, 4), c->blob_bytes);
    e->ms = (float)sqlite3_column_double(s, 5);
    e->heuristic_ms = (float)sqlite3_column_double(s, 6);
    return 0;
}

int algo_cache_open(struct algo_cache *c, const char *path, const char *device, int64_t lib_version,
                    int64_t ws_bytes, size_t blob_bytes, struct ts_err *err)
{
    memset(c, 0, sizeof *c);
    c->path = xstrdup(path);
    c->device = xstrdup(device);
    c->lib_version = lib_version;
    c->ws_bytes = ws_bytes;
    c->blob_bytes = blob_bytes;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        int rc = db_fail(c, err, "cannot open");
        algo_cache_close(c);
        return rc;
    }
    c->db = db;
    sqlite3_busy_timeout(db, 30000); /* processes sharing a cache wait for each other's writes */
    sqlite3_stmt *s = NULL;
    int rc = 0;
    if (sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(c, err, "not a cache file");
    else if (sqlite3_prepare_v2(db, "SELECT m, n, k, beta1, algo, ms, heuristic_ms, rowid FROM gemm_algos" WHERE_KEY,
                                -1, &s, NULL) != SQLITE_OK)
        rc = db_fail(c, err, "no gemm_algos table of the expected columns");
    else {
        bind_key(c, s, NULL);
        int st;
        while (!rc && (st = sqlite3_step(s)) == SQLITE_ROW)
            rc = add_row(c, s, sqlite3_column_int64(s, 7), err);
        if (!rc && st != SQLITE_DONE)
            rc = db_fail(c, err, "unreadable");
    }
    sqlite3_finalize(s);
    if (rc)
        algo_cache_close(c);
    return rc;
}

void algo_cache_close(struct algo_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->e[i].blob);
    free(c->e);
    free(c->path);
    free(c->device);
    sqlite3_close(c->db);
    memset(c, 0, sizeof *c);
}

const struct algo_entry *algo_cache_find(const struct algo_cache *c, struct algo_key k)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].key.m == k.m && c->e[i].key.n == k.n && c->e[i].key.k == k.k && c->e[i].key.beta1 == k.beta1)
            return &c->e[i];
    return NULL;
}

int algo_cache_put(struct algo_cache *c, struct algo_key k, const void *blob, float ms, float heuristic_ms,
                   const struct algo_entry **kept, struct ts_err *err)
{
    *kept = algo_cache_find(c, k);
    if (*kept)
        return 0;
    sqlite3_stmt *ins = NULL, *sel = NULL;
    int rc = 0;
    /* INSERT OR IGNORE, then read the key back: a row another process wrote first is the one kept */
    if (sqlite3_prepare_v2(c->db,
                           "INSERT OR IGNORE INTO gemm_algos VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", -1,
                           &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db,
                           "SELECT m, n, k, beta1, algo, ms, heuristic_ms, rowid FROM gemm_algos" WHERE_KEY
                           " AND m = ?4 AND n = ?5 AND k = ?6 AND beta1 = ?7",
                           -1, &sel, NULL) != SQLITE_OK) {
        rc = db_fail(c, err, "cannot prepare a write");
        goto done;
    }
    bind_key(c, ins, &k);
    sqlite3_bind_blob(ins, 8, blob, (int)c->blob_bytes, SQLITE_STATIC);
    sqlite3_bind_double(ins, 9, ms);
    sqlite3_bind_double(ins, 10, heuristic_ms);
    if (sqlite3_step(ins) != SQLITE_DONE) {
        rc = db_fail(c, err, "cannot write");
        goto done;
    }
    bind_key(c, sel, &k);
    if (sqlite3_step(sel) != SQLITE_ROW) {
        rc = db_fail(c, err, "a row just written cannot be read back");
        goto done;
    }
    rc = add_row(c, sel, sqlite3_column_int64(sel, 7), err);
    if (!rc)
        *kept = &c->e[c->n - 1];
done:
    sqlite3_finalize(ins);
    sqlite3_finalize(sel);
    return rc;
}
