/* cli_db.c: `tessera db merge OUT IN...`, a sweep's databases made one; `tessera db check FILE...`,
 * SQLite's integrity check of each; `tessera db export DB TABLE`, a table as CSV or JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "cli.h"
#include "sim.h"

static void db_usage(FILE *f)
{
    fprintf(f, "usage: tessera db merge OUT IN...\n"
               "       tessera db check FILE...\n"
               "       tessera db export DB TABLE [--csv | --json] [--run ID] [--out FILE]\n"
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
