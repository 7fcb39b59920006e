/* cli_db.c: `tessera db merge OUT IN...`, a sweep's databases made one; `tessera db check FILE...`,
 * SQLite's integrity check of each; `tessera db export DB TABLE`, a table as CSV or JSON; `tessera db
 * show DB RUN`, a stored run's configuration as a run file. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
               "       tessera db export DB TABLE [--csv | --json] [--run ID] [--out FILE [--force]] [--max-rows N]\n"
               "       tessera db show DB RUN [--config]\n"
               "\n"
               "Copies every run of the databases IN into OUT (created if it does not exist), each under a new\n"
               "run_id, with its requests, steps, segments, summary, op breakdown, fleet tables and engine\n"
               "replays' tables. Each IN is checked before anything is written, and each lands in one\n"
               "transaction: all of its runs or none; a new OUT is made whole or not at all. A run OUT holds\n"
               "already (the same created time, code version, seed and configuration) is left out, so a\n"
               "merge run again after an interruption adds only what is missing.\n"
               "\n"
               "A database is data, never code. Every command here reads one only when it is tessera's: each\n"
               "table, view and index its schema holds is one tessera makes, compared by its SQL text (a\n"
               "generated column, a CHECK, a view or index of another expression: refused by name, status 2),\n"
               "and each run's runs of steps and segments lie within its steps. The inputs are opened\n"
               "read-only and read column by column of tessera's own tables; an IN that is OUT itself is\n"
               "refused.\n"
               "\n"
               "check holds each FILE to that rule and runs SQLite's integrity check over it, reading all of\n"
               "it, and says ok or what is wrong: status 0 when every one passes, 1 when one is damaged, 2\n"
               "when one is not a tessera run database.\n"
               "(sim --append and db merge run it themselves before writing, on databases up to %lld MiB.)\n"
               "\n"
               "export writes one table of a run database (sim --db) for tools that read CSV or JSON: CSV by\n"
               "default (a header, then a line a row), or with --json an array of objects, one a line; every\n"
               "run, or with --run ID that run's rows; to stdout, or with --out FILE into FILE, whole or not at\n"
               "all (a FILE that holds something is replaced only with --force, the database itself never).\n"
               "The rows are counted first: more than --max-rows N (default %lld) are refused, more than\n"
               "%lld said on stderr. The database is read-only and nothing it holds runs as SQL. Its tables:\n",
               (long long)(DB_CHECK_MAX_BYTES >> 20), DB_EXPORT_MAX_ROWS, DB_EXPORT_MANY_ROWS);
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
    char *text_out = NULL;
    size_t text_len = 0;
    FILE *mem = NULL;
    if (db_open_run(argv[2], &db, &err)) {
        fprintf(stderr, "tessera db show: %s\n", err.msg);
        goto done;
    }
    if (sqlite3_prepare_v2(db, "SELECT config_json, created, code_version FROM main.runs WHERE run_id = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        fprintf(stderr, "tessera db show: %s: %s\n", argv[2], sqlite3_errmsg(db));
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
    /* the file made in memory and written once whole: a value it cannot hold writes nothing */
    char created[128], version[128], where[512];
    /* (stored text shown in a comment line: NULL as "unknown", a control character escaped) */
    const char *made = (const char *)sqlite3_column_text(st, 1), *by = (const char *)sqlite3_column_text(st, 2);
    ts_escape_controls(argv[2], where, sizeof where);
    ts_escape_controls(made ? made : "unknown", created, sizeof created);
    ts_escape_controls(by ? by : "unknown", version, sizeof version);
    if (!(mem = open_memstream(&text_out, &text_len))) {
        fprintf(stderr, "tessera db show: out of memory\n");
        goto done;
    }
    fprintf(mem, "# run %lld of %s (created %s by tessera %s): tessera sim --config FILE runs it again\n",
            (long long)run, where, created, version);
    if (cli_runfile_write(&c, mem, &err)) {
        fprintf(stderr, "tessera db show: %s: run %lld: %s\n", argv[2], (long long)run, err.msg);
        goto done;
    }
    fclose(mem), mem = NULL;
    fwrite(text_out, 1, text_len, stdout);
    rc = 0;
done:
    if (mem)
        fclose(mem);
    free(text_out);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* db export DB TABLE [--csv | --json] [--run ID] [--out FILE [--force]] [--max-rows N] */
static int db_export_cmd(int argc, char **argv)
{
    struct db_export_opts o = {.run_id = -1, .max_rows = DB_EXPORT_MAX_ROWS};
    for (int i = 4; i < argc; i++) {
        const bool more = i + 1 < argc;
        if (strcmp(argv[i], "--csv") == 0 || strcmp(argv[i], "--json") == 0) {
            o.json = argv[i][2] == 'j';
        } else if (strcmp(argv[i], "--force") == 0) {
            o.force = true;
        } else if ((strcmp(argv[i], "--run") == 0 || strcmp(argv[i], "--max-rows") == 0) && more) {
            const bool run = argv[i][2] == 'r';
            int64_t *v = run ? &o.run_id : &o.max_rows;
            if (ts_parse_i64(argv[i + 1], v) || *v < (run ? 1 : 0)) {
                fprintf(stderr, "tessera db export: %s: '%s' is not %s\n", argv[i], argv[i + 1],
                        run ? "a run id (a whole number from 1)" : "a count of rows (a whole number from 0)");
                return EXIT_USAGE;
            }
            i++;
        } else if (strcmp(argv[i], "--out") == 0 && more) {
            o.out = argv[++i];
        } else if (strcmp(argv[i], "--run") == 0 || strcmp(argv[i], "--out") == 0 || strcmp(argv[i], "--max-rows") == 0) {
            fprintf(stderr, "tessera db export: %s needs a value\n", argv[i]);
            return EXIT_USAGE;
        } else {
            return cli_unknown_in_list("db export", argv[i], "--csv --json --run --out --force --max-rows --help");
        }
    }
    struct ts_err err;
    if (db_export(argv[2], argv[3], &o, &err)) {
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
        if (!rc)
            rc = db_open_run(files[i], &db, &err);
        if (!rc)
            rc = db_integrity(db, files[i], &err);
        if (!rc)
            rc = db_bounded(db, files[i], -1, &err);
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

/* A command given too few arguments: what it lacks, then the usage. */
static int db_lacks(const char *what)
{
    fprintf(stderr, "tessera db: %s\n\n", what);
    db_usage(stderr);
    return EXIT_USAGE;
}

int cli_db(int argc, char **argv)
{
    if (cli_help_asked(argc, argv)) {
        db_usage(stdout);
        return 0;
    }
    if (argc < 2)
        return db_lacks("a command is needed: merge, check, export or show");
    const char *cmd = argv[1];
    if (strcmp(cmd, "show") == 0)
        return argc < 4 ? db_lacks("show needs a database and a run: db show DB RUN") : db_show(argc, argv);
    if (strcmp(cmd, "export") == 0)
        return argc < 4 ? db_lacks("export needs a database and a table: db export DB TABLE") : db_export_cmd(argc, argv);
    const bool check = strcmp(cmd, "check") == 0;
    if (!check && strcmp(cmd, "merge") != 0) {
        fprintf(stderr, "tessera db: no command '%s' (merge, check, export, show)\n", cmd);
        return EXIT_USAGE;
    }
    if (check && argc < 3)
        return db_lacks("check needs a database: db check FILE...");
    if (!check && argc < 4)
        return db_lacks(argc < 3 ? "merge needs OUT and at least one input: db merge OUT IN..."
                                 : "merge needs at least one input after OUT: db merge OUT IN...");
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
