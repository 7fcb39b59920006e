/*
 * cli_runfile.c: a run file, `tessera sim --config FILE`: tessera sim's options, one a line, as the
 * option table names them ("rps 2", "--policy dual", "early-stop"), the rest of a line its value
 * (a path may hold spaces), '#' beginning a comment. The file's options come first and the command
 * line's over them. `tessera db show DB RUN` writes a stored run's configuration as such a file, so
 * that any stored run runs again as it ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "cli.h"
#include "config.h"
#include "presets.h"
#include "sim.h"

enum { RUNFILE_ARGS = 512 };

/* What the lines of a run file add to: its options so far (each allocated), and the parser each line
 * is checked by. */
struct runfile {
    char **args;
    int n;
    cli_parse_fn parse;
    cli_resolve_fn resolve;
};

/* cli_text_lines' function: a line's option, its name (with "--" in front) and its value, or none for
 * a flag, checked alone by the parser (which says what is wrong). */
static int option_of_line(void *ctx, const char *path, int line, char *text, struct ts_err *err)
{
    struct runfile *rf = ctx;
    text += strspn(text, " \t\r");
    size_t end = strlen(text);
    while (end > 0 && strchr(" \t\r", text[end - 1]))
        text[--end] = '\0';
    if (!text[0])
        return 0;
    const size_t name_len = strcspn(text, " \t=");
    char *value = text[name_len] ? text + name_len + 1 : NULL;
    text[name_len] = '\0';
    if (value)
        value += strspn(value, " \t");
    const char *name = strncmp(text, "--", 2) == 0 ? text + 2 : text;
    if (strcmp(name, "config") == 0)
        return ts_fail(err, "%s:%d: config: a run file names no other run file", path, line);
    /* (a run file is handed around: where a run writes is the command line's alone) */
    static const char *const writes[] = {"db", "append", "replace", "gemm-cache"};
    char as_option[96];
    snprintf(as_option, sizeof as_option, "--%s", name);
    const char *full = rf->resolve(as_option); /* (the option the parser takes it for, abbreviated too) */
    for (size_t i = 0; i < TS_ARRAY_LEN(writes); i++)
        if (strcmp(full ? full : name, writes[i]) == 0)
            return ts_fail(err, "%s:%d: %s: a run file names no output; give --%s on the command line", path, line,
                           name, writes[i]);
    if (rf->n + 2 > RUNFILE_ARGS)
        return ts_fail(err, "%s:%d: more than %d options", path, line, RUNFILE_ARGS / 2);
    const int before = rf->n;
    const size_t len = strlen(name) + 3;
    rf->args[rf->n] = xmalloc(len);
    snprintf(rf->args[rf->n++], len, "--%s", name);
    if (value && value[0])
        rf->args[rf->n++] = xstrdup(value);
    char *one[4] = {"tessera", rf->args[before], rf->n - before > 1 ? rf->args[before + 1] : NULL, NULL};
    struct sim_config scratch;
    if (rf->parse(rf->n - before + 1, one, &scratch) != 0)
        return ts_fail(err, "%s:%d: the option of this line (said above)", path, line);
    return 0;
}

/* The options of run file path into rf (cli_text_lines: a byte-order mark skipped and said; a NUL
 * byte, a line too long or a bad option refused by its line). */
static int read_runfile(const char *path, struct runfile *rf, struct ts_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ts_fail(err, "--config %s: cannot open it", path);
    const int rc = cli_text_lines(f, path, option_of_line, rf, err);
    fclose(f);
    return rc;
}

int cli_runfile_expand(int argc, char **argv, struct cli_args *out, cli_parse_fn parse, cli_resolve_fn resolve,
                       struct ts_err *err)
{
    *out = (struct cli_args){0};
    int at = -1;
    const char *path = NULL;
    for (int i = 1; i < argc && at < 0; i++)
        if (strcmp(argv[i], "--config") == 0 || strncmp(argv[i], "--config=", 9) == 0) {
            at = i;
            path = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[i + 1] : NULL;
        }
    if (at < 0)
        return 0;
    if (!path || !path[0])
        return ts_fail(err, "--config needs a run file");
    for (int i = at + 1; i < argc; i++)
        if (strcmp(argv[i], "--config") == 0 || strncmp(argv[i], "--config=", 9) == 0)
            return ts_fail(err, "--config given twice (one run file a run)");
    struct runfile rf = {xcalloc(RUNFILE_ARGS, sizeof *rf.args), 0, parse, resolve};
    const int rc = read_runfile(path, &rf, err);
    /* argv[0], the file's options, then the command line's but --config FILE */
    char **list = xcalloc((size_t)(argc + rf.n + 1), sizeof *list);
    int k = 0;
    list[k++] = argv[0];
    for (int i = 0; i < rf.n; i++)
        list[k++] = rf.args[i];
    const int skip = argv[at][8] == '=' ? 1 : 2;
    for (int i = 1; i < argc; i++)
        if (i < at || i >= at + skip)
            list[k++] = argv[i];
    free(rf.args);
    *out = (struct cli_args){k, list, rf.n};
    if (rc)
        cli_args_free(out);
    return rc;
}

void cli_args_free(struct cli_args *a)
{
    for (int i = 1; a->argv && i < 1 + a->owned; i++)
        free(a->argv[i]);
    free(a->argv);
    *a = (struct cli_args){0};
}

/* A number's text as the shortest that reads back to the same double (0.8, not 0.80000000000000004);
 * other text as it is. */
static const char *shortest(const char *text, char *buf, size_t len)
{
    double x, back;
    if (ts_parse_double(text, &x) != 0)
        return text;
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (ts_parse_double(buf, &back) == 0 && back == x)
            return buf;
    }
    return text;
}

/* One line "NAME VALUE" (or "NAME" for a flag: value NULL), its value checked first. */
static int put_line(FILE *f, const char *name, const char *value, struct ts_err *err)
{
    if (value && ts_has_control(value))
        return ts_fail(err, "%s: its value holds a control character, which a run file cannot hold", name);
    fprintf(f, value ? "%s %s\n" : "%s\n", name, value);
    return 0;
}

int cli_runfile_write(const struct sim_config *c, FILE *f, struct ts_err *err)
{
    struct sim_config base; /* what the file's lines are said over: the defaults, the preset applied */
    sim_config_defaults(&base);
    struct ts_err perr;
    if (c->system[0] && preset_apply(c->system, &base, &perr) == 0 && put_line(f, "system", c->system, err))
        return -1;
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        char have[CFG_PATH], was[CFG_PATH];
        if (!o->stored || !o->help || strcmp(o->name, "system") == 0)
            continue;
        cfg_option_text(o, c, have, sizeof have);
        if (strcmp(have, cfg_option_text(o, &base, was, sizeof was)) == 0)
            continue;
        char num[64];
        /* (a flag no option unsets: only ever set over the preset) */
        if (put_line(f, o->name, o->kind == CFG_FLAG ? NULL : o->kind == CFG_REAL ? shortest(have, num, sizeof num) : have,
                     err))
            return -1;
    }
    for (int i = 0; i < c->params.n; i++) {
        const char *preset = param_values_get(&base.params, c->params.name[i]);
        char num[64];
        if ((!preset || strcmp(preset, c->params.text[i]) != 0) &&
            (ts_has_control(c->params.name[i]) ? ts_fail(err, "a parameter's name holds a control character, which a run "
                                                           "file cannot hold")
                                            : put_line(f, c->params.name[i], shortest(c->params.text[i], num, sizeof num), err)))
            return -1;
    }
    return 0;
}
