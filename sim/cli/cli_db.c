/* cli_db.c: `tessera db merge OUT IN...`, a sweep's databases made one; `tessera db check FILE...`,
 * SQLite's integrity check of each; `tessera db export DB TABLE`, a table as CSV or JSON; `tessera db
 * show DB RUN`, a stored run's configuration as a run file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "config.h"
#include "db.h"
#include "cli.h"
#include "sim.h"

static void db_usage(FILE *f)
{
    fprintf(f, "usage: tessera db merge OUT IN...\n"
               "       tessera db check FILE...\n"
               "       tessera db export DB TABLE [--csv | --json] [--run ID] [--out FILE]\n"
               "       tessera db show DB RUN [--config]\n"
               "\n"
               "Copies every run of the databases IN into OUT (created if it does not exist), each under a new\n"
               "run_id, with its requests, steps, segments, summary, op breakdown, fleet tables and engine\n"
               "replays' tables. Each IN is checked before anything is written, and each lands in one\n"
               "transaction: all of its runs or none; a new OUT is made whole or not at all. A run OUT holds\n"
               "already (the same created time, code version, seed and configuration) is left out, so a\n"
               "merge run again after an interruption adds only what is missing.\n"
               "\n"
               "A database is data, never code: the inputs are opened read-only and read column by column\n"
               "of tessera's own tables; an IN or OUT that holds any other table, column, view, index or\n"
               "trigger is refused by name (status 2), as is an IN that is OUT itself.\n"
               "\n"
               "check runs SQLite's integrity check over each FILE, reading all of it, and says ok or what is\n"
               "damaged: status 0 when every one passes, 1 when one is damaged, 2 when one is not a database.\n"
               "(sim --append and db merge run it themselves before writing, on databases up to %lld MiB.)\n"
               "\n"
               "export writes one table of a run database (sim --db) for tools that read CSV or JSON: CSV by\n"
               "default (a header, then a line a row), or with --json an array of objects, one a line; every\n"
               "run, or with --run ID that run's rows; to stdout, or with --out FILE into FILE, whole or not at\n"
               "all. The database is read-only and nothing it holds runs as SQL. Its tables:\n",
               (long long)(DB_CHECK_MAX_BYTES >> 20));
    const char *help;
    for (int i = 0; db_export_table(i, &help); i++)
        fprintf(f, "  %-9s %s\n", db_export_table(i, NULL), help);
    fprintf(f, "\n"
               "show writes run RUN's configuration as a run file (--config, the default): its preset, then\n"
               "each option and parameter it ran with that differs from it, a line each; tessera sim --config\n"
               "FILE runs it again as it ran.\n");
}

/* db show DB RUN [--config]: the run's stored configuration as a run file */
static int db_show(int argc, char **argv)
{
    int64_t run;
    if (ts_parse_i64(argv[3], &run) || run < 1) {
        fprintf(stderr, "tessera db show: RUN: '%s' is not a run id (a whole number from 1)\n", argv[3]);
        return EXIT_USAGE;
    }
    for (int i = 4; i < argc; i++)
        if (strcmp(argv[i], "--config") != 0)
            return cli_unknown_in_list("db show", argv[i], "--config --help");
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = EXIT_USAGE;
    struct ts_err err;
    if (access(argv[2], R_OK) != 0) {
        fprintf(stderr, "tessera db show: %s: %s\n", argv[2], strerror(errno));
        return EXIT_USAGE;
    }
    if (sqlite3_open_v2(argv[2], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT config_json, created, code_version FROM main.runs WHERE run_id = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        fprintf(stderr, "tessera db show: %s: %s\n", argv[2], db ? sqlite3_errmsg(db) : "out of memory");
        goto done;
    }
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) != SQLITE_ROW) {
        fprintf(stderr, "tessera db show: %s: no run %lld\n", argv[2], (long long)run);
        goto done;
    }
    const char *text = (const char *)sqlite3_column_text(st, 0);
    json_error_t jerr;
    json_t *o = text ? json_loads(text, 0, &jerr) : NULL;
    struct sim_config c;
    if (!o || sim_config_from_json(o, &c, &err)) {
        fprintf(stderr, "tessera db show: %s: run %lld: %s\n", argv[2], (long long)run,
                o ? err.msg : "its config_json is not JSON");
        json_decref(o);
        goto done;
    }
    json_decref(o);
    printf("# run %lld of %s (created %s by tessera %s): tessera sim --config FILE runs it again\n", (long long)run,
           argv[2], (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2));
    cli_runfile_write(&c, stdout);
    rc = 0;
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* db export DB TABLE [--csv | --json] [--run ID] [--out FILE] */
static int db_export_cmd(int argc, char **argv)
{
    bool json = false;
    int64_t run = -1;
    const char *out = NULL;
    for (int i = 4; i < argc; i++) {
        const bool more = i + 1 < argc;
        if (strcmp(argv[i], "--csv") == 0 || strcmp(argv[i], "--json") == 0) {
            json = argv[i][2] == 'j';
        } else if (strcmp(argv[i], "--run") == 0 && more) {
            if (ts_parse_i64(argv[++i], &run) || run < 1) {
                fprintf(stderr, "tessera db export: --run: '%s' is not a run id (a whole number from 1)\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--out") == 0 && more) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--run") == 0 || strcmp(argv[i], "--out") == 0) {
            fprintf(stderr, "tessera db export: %s needs a value\n", argv[i]);
            return EXIT_USAGE;
        } else {
            return cli_unknown_in_list("db export", argv[i], "--csv --json --run --out --help");
        }
    }
    struct ts_err err;
    if (db_export(argv[2], argv[3], json, run, out, &err)) {
        fprintf(stderr, "tessera db export: %s\n", err.msg);
        return EXIT_USAGE;
    }
    return 0;
}

/* db check FILE...: each database read through by SQLite's integrity check */
static int db_check_files(int n, char **files)
{
    int status = 0;
    for (int i = 0; i < n; i++) {
        struct ts_err err;
        sqlite3 *db = NULL;
        /* (read where it cannot be written: db_open_read opens such a file read-only) */
        struct stat sb;
        int rc = stat(files[i], &sb) != 0 || access(files[i], R_OK) != 0 ? ts_fail(&err, "%s: %s", files[i], strerror(errno))
                 : !S_ISREG(sb.st_mode) ? ts_fail(&err, "%s: not a regular file (a device, pipe or socket), so no database", files[i])
                                        : 0;
        if (!rc && db_open_read(files[i], &db) != SQLITE_OK)
            rc = ts_fail(&err, "%s: cannot open it: %s", files[i], db ? sqlite3_errmsg(db) : "out of memory");
        if (!rc)
            rc = db_integrity(db, files[i], &err);
        if (!rc)
            printf("%s: ok\n", files[i]);
        else {
            fprintf(stderr, "tessera db check: %s\n", err.msg);
            status = strstr(err.msg, "is damaged") ? TS_MAX(status, 1) : EXIT_USAGE;
        }
        sqlite3_close(db);
    }
    return status;
}

int cli_db(int argc, char **argv)
{
    if (cli_help_asked(argc, argv)) {
        db_usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "show") == 0) {
        if (argc < 4) {
            db_usage(stderr);
            return EXIT_USAGE;
        }
        return db_show(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "export") == 0) {
        if (argc < 4) {
            db_usage(stderr);
            return EXIT_USAGE;
        }
        return db_export_cmd(argc, argv);
    }
    const bool check = argc >= 3 && strcmp(argv[1], "check") == 0;
    if (!check && (argc < 4 || strcmp(argv[1], "merge") != 0)) {
        db_usage(stderr);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_unknown_in_list(check ? "db check" : "db merge", argv[i], "--help");
    if (check)
        return db_check_files(argc - 2, argv + 2);
    int64_t runs = 0, already = 0;
    struct ts_err err;
    if (db_merge(argv[2], (const char *const *)argv + 3, argc - 3, &runs, &already, &err)) {
        fprintf(stderr, "tessera db merge: %s\n", err.msg);
        return EXIT_USAGE;
    }
    printf("%s: %lld runs merged from %d databases", argv[2], (long long)runs, argc - 3);
    if (already)
        printf(" (%lld it held already left out)", (long long)already);
    printf("\n");
    return 0;
}
