/* cli_exp.c: `tessera exp list | run NAME OUT | sweep GRID OUT`: the experiment definitions of
 * experiments/, and sweeps of independent runs (experiments/lib/sweep.sh). */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef TS_SRCDIR
#define TS_SRCDIR "."
#endif

int cli_exp(int argc, char **argv)
{
    const char *dir = getenv("TESSERA_EXPERIMENTS") ? getenv("TESSERA_EXPERIMENTS") : TS_SRCDIR "/experiments";
    if (argc >= 2 && strcmp(argv[1], "list") == 0) {
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "tessera exp: %s: no experiments folder\n", dir);
            return EXIT_USAGE;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t n = strlen(de->d_name);
            if (n > 3 && strcmp(de->d_name + n - 3, ".sh") == 0)
                printf("%.*s\n", (int)(n - 3), de->d_name);
        }
        closedir(d);
        return 0;
    }
    const bool run = argc >= 4 && strcmp(argv[1], "run") == 0, sweep = argc >= 4 && strcmp(argv[1], "sweep") == 0;
    if (run || sweep) {
        char script[4096], self[4096];
        if (sweep)
            snprintf(script, sizeof script, "%s/lib/sweep.sh", dir);
        else
            snprintf(script, sizeof script, "%s/%s.sh", dir, argv[2]);
        if (access(script, R_OK) != 0 || (run && strchr(argv[2], '/'))) {
            if (run)
                fprintf(stderr, "tessera exp: no experiment '%s' (tessera exp list)\n", argv[2]);
            else
                fprintf(stderr, "tessera exp sweep: %s: not found (TESSERA_EXPERIMENTS names the folder)\n", script);
            return EXIT_USAGE;
        }
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = '\0';
            setenv("TESSERA", self, 1);
        }
        char **args = calloc((size_t)argc + 2, sizeof *args);
        args[0] = "bash";
        args[1] = script;
        for (int i = sweep ? 2 : 3; i < argc; i++) /* sweep: GRID OUT and its options; run: ARGS */
            args[i - (sweep ? 0 : 1)] = argv[i];
        execvp("bash", args);
        perror("tessera exp: bash");
        free(args);
        return 1;
    }
    fprintf(stderr, "usage: tessera exp list | tessera exp run NAME OUT [ARGS]\n"
                    "       tessera exp sweep GRID OUT [--jobs N] [--slurm]   (a grid of tessera sim runs; its\n"
                    "       format and what it writes: experiments/lib/sweep.sh)\n");
    return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE;
}
