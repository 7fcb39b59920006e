/*
 * cli_common.c: what the subcommands' parsers share: an unknown option answered with the nearest
 * valid one ("did you mean --requests?"), and the rule for a file a command writes (refused where
 * it holds something, unless --force; written whole or not at all).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "params.h"

int cli_unknown_option(const char *cmd, const char *arg, const char *const *names, int n)
{
    char given[128];
    snprintf(given, sizeof given, "%s", arg);
    given[strcspn(given, "=")] = '\0';
    const char *near = param_nearest(given, names, n);
    if (near)
        fprintf(stderr, "tessera %s: unknown option '%s' (did you mean %s?); see --help\n", cmd, given, near);
    else
        fprintf(stderr, "tessera %s: unknown option '%s'; see --help\n", cmd, given);
    return EXIT_USAGE;
}

int cli_unknown_in_list(const char *cmd, const char *arg, const char *list)
{
    char buf[2048], *names[128], *save = NULL;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *w = strtok_r(buf, " ", &save); w && n < 128; w = strtok_r(NULL, " ", &save))
        names[n++] = w;
    return cli_unknown_option(cmd, arg, (const char *const *)names, n);
}

int cli_getopt_error(const char *cmd, int ret, char **argv, const struct option *o)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (ret == ':') {
        fprintf(stderr, "tessera %s: %s needs a value; see --help\n", cmd, arg);
        return EXIT_USAGE;
    }
    if (arg[0] != '-' || arg[1] != '-') { /* a short option: only -h is one */
        fprintf(stderr, "tessera %s: unknown option '-%c'; see --help\n", cmd, optopt ? optopt : '?');
        return EXIT_USAGE;
    }
    char names[256][64];
    const char *ptr[256];
    int n = 0;
    for (; o[n].name && n < 256; n++) {
        snprintf(names[n], sizeof names[n], "--%s", o[n].name);
        ptr[n] = names[n];
    }
    return cli_unknown_option(cmd, arg, ptr, n);
}

bool cli_help_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

int cli_check_out_file(const char *cmd, const char *path, bool force)
{
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera %s: %s is a folder, not a file\n", cmd, path);
        return EXIT_USAGE;
    }
    if (st.st_size > 0 && !force) {
        fprintf(stderr, "tessera %s: %s is not empty (--force writes over it)\n", cmd, path);
        return EXIT_USAGE;
    }
    return 0;
}
