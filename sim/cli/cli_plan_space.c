/*
 * cli_plan_space.c: tessera plan size's space (a grid file, exp sweep's syntax: one option of tessera sim
 * a line, every combination a candidate) and a candidate's label and configuration.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_plan_size.h"

/* --- the space -------------------------------------------------------------------------------- */

/* The options a space may not vary: the plan's own, or what it sets itself. */
static const char *const space_refused[] = {"--replicas", "--rps", "--db", "--append", "--replace", "--executor",
                                            "--interval", "--interval-runs", "--config", "--fleet", "--autoscale",
                                            "--json", "--json-wall", "--quiet", "--progress", "--slo"};

int plan_space_line(void *ctx, const char *path, int line, char *text, struct ts_err *err)
{
    struct space *sp = ctx;
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    if (!tok)
        return 0;
    if (strncmp(tok, "--", 2) != 0 || !tok[2])
        return ts_fail(err, "%s:%d: '%s' is not an option (a line is --NAME VALUE...)", path, line, tok);
    const char *opt = cli_sim_option(tok);
    if (!opt)
        return ts_fail(err, "%s:%d: %s: not an option of tessera sim (or an abbreviation of several)", path, line, tok);
    for (size_t i = 0; i < TS_ARRAY_LEN(space_refused); i++)
        if (strcmp(opt, space_refused[i] + 2) == 0)
            return ts_fail(err, "%s:%d: --%s: a plan sets it itself or takes it on its command line, not from the space",
                           path, line, opt);
    for (int i = 0; i < sp->n; i++)
        if (strcmp(sp->name[i] + 2, opt) == 0)
            return ts_fail(err, "%s:%d: --%s: a second line for it", path, line, opt);
    if (sp->n == SPACE_LINES)
        return ts_fail(err, "%s:%d: more than %d lines", path, line, SPACE_LINES);
    const int k = sp->n;
    snprintf(sp->name[k], sizeof sp->name[k], "--%s", opt);
    for (tok = strtok_r(NULL, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (sp->count[k] == SPACE_VALUES)
            return ts_fail(err, "%s:%d: --%s: more than %d values", path, line, opt, SPACE_VALUES);
        sp->value[k][sp->count[k]++] = xstrdup(tok);
    }
    if (sp->count[k] == 0)
        return ts_fail(err, "%s:%d: --%s: no value", path, line, opt);
    sp->n++;
    sp->total *= sp->count[k];
    if (sp->total > SPACE_MAX)
        return ts_fail(err, "%s:%d: more than %d candidates", path, line, SPACE_MAX);
    return 0;
}

void plan_space_free(struct space *sp)
{
    for (int i = 0; i < sp->n; i++)
        for (int j = 0; j < sp->count[i]; j++)
            free(sp->value[i][j]);
}

/* Candidate i's value index on line k (the last line varying fastest, as exp sweep's). */
static int value_at(const struct space *sp, long i, int k)
{
    long stride = 1;
    for (int j = sp->n - 1; j > k; j--)
        stride *= sp->count[j];
    return (int)(i / stride % sp->count[k]);
}

/* Candidate i's label ("gpu=h100 threshold=0.9") into buf. */
const char *plan_label_of(const struct space *sp, long i, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < sp->n; k++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s=%s", k ? " " : "", sp->name[k] + 2,
                 sp->value[k][value_at(sp, i, k)]);
    return buf;
}

/* Candidate i's configuration: the command line's sim options, then its values. 0, or the parser's
 * nonzero (said on stderr by it). */
int plan_config_of(const struct plan_args *a, const struct space *sp, long i, struct sim_config *c)
{
    char **argv = xcalloc((size_t)a->nrest + 2 * (size_t)sp->n + 1, sizeof *argv);
    int n = 0;
    for (int j = 0; j < a->nrest; j++)
        argv[n++] = a->rest[j];
    for (int k = 0; k < sp->n; k++) {
        argv[n++] = (char *)sp->name[k];
        argv[n++] = sp->value[k][value_at(sp, i, k)];
    }
    const int rc = cli_sim_parse(n, argv, c);
    free(argv);
    return rc;
}

bool plan_ranked(const struct cand *c) { return c->status == CAND_SIZED && c->price > 0 && c->floor_ok; }
