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

/* The line of experiments/papers.tsv naming `name` (its fields cut at tabs into f[3]), or false. */
static bool paper_entry(const char *dir, const char *name, char *line, size_t len, char *f[3])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/papers.tsv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    bool found = false;
    while (!found && fgets(line, (int)len, fp)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        f[0] = line;
        f[1] = strchr(line, '\t');
        f[2] = f[1] ? strchr(f[1] + 1, '\t') : NULL;
        if (!f[1] || !f[2])
            continue;
        *f[1]++ = '\0';
        *f[2]++ = '\0';
        found = name == NULL || strcmp(f[0], name) == 0;
    }
    fclose(fp);
    return found;
}

/* What a script of experiments/ does: its header's first line, after "experiments/NAME.sh: ". */
static void script_about(const char *dir, const char *file, char *buf, size_t len)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    buf[0] = '\0';
    FILE *fp = fopen(path, "r");
    for (int i = 0; fp && i < 2 && fgets(line, sizeof line, fp); i++) {
        const char *colon = strstr(line, ".sh: ");
        if (i == 1 && colon) {
            snprintf(buf, len, "%s", colon + 5);
            buf[strcspn(buf, "\n")] = '\0';
        }
    }
    if (fp)
        fclose(fp);
}

/* Prints the experiments: the scripts of experiments/ but the papers' (what each does), then the
 * papers' evaluations (experiments/papers.tsv), each built or waiting on what it needs. */
static int exp_list(const char *dir, FILE *to)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tessera exp: %s: no experiments folder\n", dir);
        return EXIT_USAGE;
    }
    struct dirent *de;
    char line[1024], *f[3], about[512];
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 3 || strcmp(de->d_name + n - 3, ".sh") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), de->d_name);
        if (paper_entry(dir, name, line, sizeof line, f))
            continue;
        script_about(dir, de->d_name, about, sizeof about);
        fprintf(to, "%-18s %s\n", name, about);
    }
    closedir(d);
    char path[4096];
    snprintf(path, sizeof path, "%s/papers.tsv", dir);
    FILE *fp = fopen(path, "r");
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *what = strchr(line, '\t'), *wait = what ? strchr(what + 1, '\t') : NULL;
        if (!wait)
            continue;
        *what++ = '\0';
        *wait++ = '\0';
        fprintf(to, "%-18s %s%s%s%s\n", line, what, *wait ? " (waiting on: " : "", wait, *wait ? ")" : "");
    }
    if (fp)
        fclose(fp);
    return 0;
}

int cli_exp(int argc, char **argv)
{
    const char *dir = getenv("TESSERA_EXPERIMENTS") ? getenv("TESSERA_EXPERIMENTS") : TS_SRCDIR "/experiments";
    if (argc >= 2 && strcmp(argv[1], "list") == 0)
        return exp_list(dir, stdout);
    const bool run = argc >= 4 && strcmp(argv[1], "run") == 0, sweep = argc >= 4 && strcmp(argv[1], "sweep") == 0;
    if (run || sweep) {
        char script[4096], self[4096];
        if (sweep)
            snprintf(script, sizeof script, "%s/lib/sweep.sh", dir);
        else
            snprintf(script, sizeof script, "%s/%s.sh", dir, argv[2]);
        char line[1024], *f[3];
        if (run && !strchr(argv[2], '/') && access(script, R_OK) != 0 && paper_entry(dir, argv[2], line, sizeof line, f)) {
            fprintf(stderr, "tessera exp: %s (%s) waits on %s; nothing was run\n", f[0], f[1], f[2]);
            return EXIT_USAGE;
        }
        if (access(script, R_OK) != 0 || (run && strchr(argv[2], '/'))) {
            if (run) {
                fprintf(stderr, "tessera exp: no experiment '%s'; the experiments:\n", argv[2]);
                exp_list(dir, stderr);
            } else {
                fprintf(stderr, "tessera exp sweep: %s: not found (TESSERA_EXPERIMENTS names the folder)\n", script);
            }
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
