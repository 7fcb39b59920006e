/*
 * db_guard.c: what an SQLite connection of tessera's may do. A database is a file users pass to each
 * other, so nothing it holds may run as code: every connection the process opens (db_guard_process
 * registers the guard as SQLite's automatic extension, so the engine's and the calibration's
 * connections have it too) is set
 *   - defensive (SQLITE_DBCONFIG_DEFENSIVE: no writable schema, no writes to shadow tables or pages),
 *   - with the schema untrusted (a view or index of a file calls no function with side effects),
 *   - with triggers, extensions and FTS3's two-argument tokenizer function off,
 * and an authorizer refuses ATTACH (but the one db_attach makes for tessera's own statement) and the
 * functions that reach outside the database (fts3_tokenizer, load_extension, readfile, writefile,
 * edit). A refused statement fails to prepare, with SQLite's "not authorized".
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "db_internal.h"

static const char *const outside_functions[] = {"fts3_tokenizer", "load_extension", "readfile", "writefile", "edit"};

/* SQLite's authorizer; allow is non-NULL while db_attach prepares its own ATTACH (whose file, a bound
 * parameter, the authorizer is not told) */
static int authorize(void *allow, int action, const char *a1, const char *a2, const char *a3, const char *a4)
{
    (void)a1, (void)a3, (void)a4;
    switch (action) {
    case SQLITE_ATTACH:
        return allow ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_FUNCTION:
        for (size_t i = 0; i < sizeof outside_functions / sizeof *outside_functions; i++)
            if (a2 && sqlite3_stricmp(a2, outside_functions[i]) == 0)
                return SQLITE_DENY;
        return SQLITE_OK;
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_VTABLE:
        return SQLITE_DENY;
    default:
        return SQLITE_OK;
    }
}

int db_guard(sqlite3 *db)
{
    int rc = 0, got = 0;
    static const int off[] = {SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_TRIGGER,
                              SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++)
        rc |= sqlite3_db_config(db, off[i], 0, &got) != SQLITE_OK || got != 0;
    rc |= db_guard_trust(db, false);
    rc |= sqlite3_set_authorizer(db, authorize, NULL) != SQLITE_OK;
    return rc ? -1 : 0;
}

int db_guard_trust(sqlite3 *db, bool own_file)
{
    int got = -1;
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, own_file ? 0 : 1, &got) == SQLITE_OK &&
                   got == (own_file ? 0 : 1)
               ? 0
               : -1;
}

/* SQLite's automatic extension: the guard on a connection as it opens (a connection that cannot be
 * guarded does not open) */
static int guard_entry(sqlite3 *db, char **msg, const struct sqlite3_api_routines *api)
{
    (void)api;
    if (db_guard(db) == 0)
        return SQLITE_OK;
    *msg = sqlite3_mprintf("cannot set SQLite's guards on the connection");
    return SQLITE_ERROR;
}

int db_guard_process(void)
{
    /* (registering the same entry again does nothing) */
    return sqlite3_auto_extension((void (*)(void))guard_entry) == SQLITE_OK ? 0 : -1;
}

int db_attach(sqlite3 *db, const char *path, const char *name)
{
    char sql[64];
    snprintf(sql, sizeof sql, "ATTACH ?1 AS %s", name);
    sqlite3_stmt *st = NULL;
    static char allow;
    sqlite3_set_authorizer(db, authorize, &allow);
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    }
    sqlite3_finalize(st);
    /* (after the step: a new authorizer expires the statements prepared under the old one) */
    sqlite3_set_authorizer(db, authorize, NULL);
    return rc;
}
