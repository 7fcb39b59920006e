/* cli_db.c: `tessera db merge OUT IN...`: a sweep's databases made one. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sim.h"

static void db_usage(FILE *f)
{
    fprintf(f, "usage: tessera db merge OUT IN...\n"
               "\n"
               "Copies every run of the databases IN into OUT (created if it does not exist), each under a new\n"
               "run_id, with its requests, steps, segments, summary, op breakdown and any other table keyed\n"
               "by run_id (engine replays). Each IN is checked before anything is written, and each lands\n"
               "in one transaction: all of its runs or none. A run OUT holds already (the same created time,\n"
               "code version, seed and configuration) is left out, so a merge run again after an interruption\n"
               "adds only what is missing.\n");
}

int cli_db(int argc, char **argv)
{
    if (cli_help_asked(argc, argv)) {
        db_usage(stdout);
        return 0;
    }
    if (argc < 4 || strcmp(argv[1], "merge") != 0) {
        db_usage(stderr);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_unknown_in_list("db merge", argv[i], "--help");
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
