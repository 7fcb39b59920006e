/*
 * params.h: the parameters a registry entry declares (a policy's, today), declared once: the
 * option (--NAME), the key in the stored configuration (NAME with '_' for '-'), the default, the
 * accepted range, whether it counts, and its help. The command line generates its options and
 * --help from the declarations, `tessera list` prints them, validation refuses a value by name,
 * and the entry reads its resolved values in declaration order.
 *
 * Values given by the user travel as text (struct param_values) until the run's entries are known:
 * a value is parsed against the spec of the entry the run chose, and a value no chosen entry
 * declares is refused, naming the entries that do.
 */
#ifndef TESSERA_PARAMS_H
#define TESSERA_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util.h"

struct param_spec {
    const char *name; /* option name without "--", e.g. "refresh-interval" */
    const char *help; /* one line, e.g. "also refresh every K steps inside a block; 0 = at block start only" */
    double def, lo, hi; /* default and accepted range (inclusive, but see lo_open) */
    bool integer;       /* whole numbers only */
    bool lo_open;       /* lo itself is refused: the range is (lo, hi] */
    bool odd;           /* odd whole numbers only (a pooling kernel) */
    const char *const *choices; /* NULL-terminated names: the value is one of them, resolved to its
                                 * index (def the default's index); lo, hi and integer are unused */
};

#define PARAMS_MAX 16   /* parameters one entry may declare, and values one run may give */
#define PARAM_TEXT 40

/* Parameter values as the user gave them, by name (options are applied in order: the last wins). */
struct param_values {
    int n;
    char name[PARAMS_MAX][PARAM_TEXT];
    char text[PARAMS_MAX][PARAM_TEXT];
    bool preset[PARAMS_MAX]; /* set by a --system preset, not by the user: dropped where the run's
                              * policy or scheduler (the user's choice) does not declare it */
};

/* Records name = text. Returns -1 with err when the value or name is too long or too many are given. */
int param_values_set(struct param_values *pv, const char *name, const char *text, struct ts_err *err);
/* The same, as a --system preset's setting (marked preset until the user sets name). */
int param_values_set_preset(struct param_values *pv, const char *name, const char *text, struct ts_err *err);
/* The text given for name, or NULL. */
const char *param_values_get(const struct param_values *pv, const char *name);

/* Parses text as a value of s: the message names the option, the value as written and the range. */
int param_parse(const struct param_spec *s, const char *text, double *out, struct ts_err *err);
/* Resolves specs[0..n) into out[0..n): the given value (parsed, checked) or the default. */
int params_resolve(const struct param_spec *specs, int n, const struct param_values *pv, double *out,
                   struct ts_err *err);
/* The spec named `name` among specs[0..n), or NULL. */
const struct param_spec *params_find(const struct param_spec *specs, int n, const char *name);
/* The value of the parameter named `name` among values resolved by params_resolve over specs[0..n),
 * or dflt where there is none so named. */
double params_value(const struct param_spec *specs, int n, const double *values, const char *name, double dflt);
/* The text a resolved value stands for: its choice name, or the number. */
const char *param_text(const struct param_spec *s, double v, char *buf, size_t len);
/* The stored-configuration key of a spec: its name with '_' for '-'. */
void param_json_key(const struct param_spec *s, char *buf, size_t len);
/* Sets each parameter's resolved value v[i] on the JSON object o under its key. */
struct json_t;
void params_json(struct json_t *o, const struct param_spec *specs, int n, const double *v);
/* Writes one help line a parameter: "  --NAME N   help [default; lo..hi]", `owner` naming its entry. */
void params_help(FILE *f, const struct param_spec *specs, int n, const char *owner);

/* The edit distance (insertions, deletions, substitutions, and two neighbours swapped: --rsp is one
 * edit from --rps) between a and b, their first 64 characters each. */
int param_edit_distance(const char *a, const char *b);
/* Of names[0..n), the one nearest to given by edit distance (the first of equals), or NULL when
 * none is near: more than max(2, a third of given's length) edits away, or all of it. For the
 * command line's "did you mean". */
const char *param_nearest(const char *given, const char *const *names, int n);

#endif
