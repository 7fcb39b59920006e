/*
 * cli_common.c: what the subcommands' parsers share: an unknown option answered with the nearest
 * valid one ("did you mean --requests?"), the rule for a file a command writes (refused where
 * it holds something, unless --force; written whole or not at all), and the lines of a file of
 * options (a fleet file, a run file).
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

/* The next line of f into buf (room for len bytes, its newline left out, NUL bytes kept): its length,
 * or -1 at the file's end; a line longer than len - 1 bytes is read no further, *more set. */
static long next_line(FILE *f, char *buf, size_t len, bool *more)
{
    size_t n = 0;
    int ch = EOF;
    *more = false;
    while (!*more && (ch = getc(f)) != EOF && ch != '\n') {
        if (n + 1 < len)
            buf[n++] = (char)ch;
        else
            *more = true;
    }
    buf[n] = '\0';
    return ch == EOF && n == 0 ? -1 : (long)n;
}

int cli_text_lines(FILE *f, const char *path, cli_line_fn fn, void *ctx, struct ts_err *err)
{
    char buf[CLI_LINE_MAX + 1];
    int line = 0, rc = 0;
    long len;
    bool more;
    while (rc == 0 && (len = next_line(f, buf, sizeof buf, &more)) >= 0) {
        char *text = buf;
        const char *nul = memchr(buf, '\0', (size_t)len);
        line++;
        if (more)
            return ts_fail(err, "%s:%d: a line longer than %d characters", path, line, CLI_LINE_MAX);
        if (nul)
            return ts_fail(err, "%s:%d: a NUL byte at column %ld: not a text file", path, line, (long)(nul - buf) + 1);
        if (line == 1 && len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
            fprintf(stderr, "%s: note: skipped the UTF-8 byte-order mark it begins with\n", path);
            text += 3;
        }
        char *hash = strchr(text, '#');
        if (hash)
            *hash = '\0';
        rc = fn(ctx, path, line, text, err);
    }
    if (rc == 0 && ferror(f))
        rc = ts_fail(err, "%s: read error after line %d", path, line);
    return rc;
}

void cli_shell_quote(FILE *to, const char *word)
{
    fputc('\'', to);
    for (; *word; word++)
        if (*word == '\'')
            fputs("'\\''", to);
        else
            fputc(*word, to);
    fputc('\'', to);
}
