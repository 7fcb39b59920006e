/* cli_db.c: `tessera db merge OUT IN...`, a sweep's databases made one, and `tessera db check FILE...`,
 * SQLite's integrity check of each. */
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
               "(sim --append and db merge run it themselves before writing, on databases up to %lld MiB.)\n",
               (long long)(DB_CHECK_MAX_BYTES >> 20));
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
