/* params.c: declared parameters (params.h). */
#include "params.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int param_values_set(struct param_values *pv, const char *name, const char *text, struct ts_err *err)
{
    if (strlen(name) >= PARAM_TEXT || strlen(text) >= PARAM_TEXT)
        return ts_fail(err, "--%s: '%s' is too long", name, text);
    int i = 0;
    while (i < pv->n && strcmp(pv->name[i], name) != 0)
        i++;
    if (i == PARAMS_MAX)
        return ts_fail(err, "--%s: more than %d parameters given", name, PARAMS_MAX);
    if (i == pv->n)
        pv->n++;
    snprintf(pv->name[i], PARAM_TEXT, "%s", name);
    snprintf(pv->text[i], PARAM_TEXT, "%s", text);
    pv->preset[i] = false;
    return 0;
}

int param_values_set_preset(struct param_values *pv, const char *name, const char *text, struct ts_err *err)
{
    if (param_values_set(pv, name, text, err))
        return -1;
    for (int i = 0; i < pv->n; i++)
        if (strcmp(pv->name[i], name) == 0)
            pv->preset[i] = true;
    return 0;
}

const char *param_values_get(const struct param_values *pv, const char *name)
{
    for (int i = 0; i < pv->n; i++)
        if (strcmp(pv->name[i], name) == 0)
            return pv->text[i];
    return NULL;
}

/* The range as written in messages and help: "0..1", "(0..1]" or "uniform|head". */
static void param_range(const struct param_spec *s, char *buf, size_t len)
{
    if (s->choices) {
        size_t at = 0;
        buf[0] = 0;
        for (int i = 0; s->choices[i] && at < len; i++)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "|" : "", s->choices[i]);
    } else if (s->lo_open) {
        snprintf(buf, len, "(%.10g..%.10g]", s->lo, s->hi);
    } else {
        snprintf(buf, len, "%.10g..%.10g", s->lo, s->hi);
    }
}

int param_parse(const struct param_spec *s, const char *text, double *out, struct ts_err *err)
{
    char range[128];
    param_range(s, range, sizeof range);
    if (s->choices) {
        for (int i = 0; s->choices[i]; i++)
            if (strcmp(s->choices[i], text) == 0) {
                *out = i;
                return 0;
            }
        return ts_fail(err, "--%s: '%s' is not one of %s", s->name, text, range);
    }
    double v;
    bool whole = s->integer || s->odd;
    bool ok = ts_parse_double(text, &v) == 0 && isfinite(v) && (!whole || v == floor(v)) &&
              (s->lo_open ? v > s->lo : v >= s->lo) && v <= s->hi && (!s->odd || fmod(v, 2) != 0);
    if (!ok)
        return ts_fail(err, "--%s: '%s' is not %s in %s", s->name, text,
                       s->odd ? "an odd whole number" : whole ? "a whole number" : "a number", range);
    *out = v;
    return 0;
}

const char *param_text(const struct param_spec *s, double v, char *buf, size_t len)
{
    if (s->choices)
        return s->choices[(int)v];
    snprintf(buf, len, "%.10g", v);
    return buf;
}

int params_resolve(const struct param_spec *specs, int n, const struct param_values *pv, double *out,
                   struct ts_err *err)
{
    TS_ASSERT(n <= PARAMS_MAX);
    for (int i = 0; i < n; i++) {
        const char *text = pv ? param_values_get(pv, specs[i].name) : NULL;
        out[i] = specs[i].def;
        if (text && param_parse(&specs[i], text, &out[i], err))
            return -1;
    }
    return 0;
}

const struct param_spec *params_find(const struct param_spec *specs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i].name, name) == 0)
            return &specs[i];
    return NULL;
}

double params_value(const struct param_spec *specs, int n, const double *values, const char *name, double dflt)
{
    const struct param_spec *p = params_find(specs, n, name);
    return p ? values[p - specs] : dflt;
}

void param_json_key(const struct param_spec *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s->name);
    for (char *p = buf; *p; p++)
        if (*p == '-')
            *p = '_';
}

void params_help(FILE *f, const struct param_spec *specs, int n, const char *owner)
{
    for (int i = 0; i < n; i++) {
        const struct param_spec *s = &specs[i];
        char opt[64], range[128], def[32];
        snprintf(opt, sizeof opt, "--%s %s", s->name, s->choices ? "NAME" : s->integer || s->odd ? "N" : "X");
        param_range(s, range, sizeof range);
        fprintf(f, "  %-24s %s: %s [%s; %s]\n", opt, owner, s->help, param_text(s, s->def, def, sizeof def), range);
    }
}

void params_json(struct json_t *o, const struct param_spec *specs, int n, const double *v)
{
    for (int i = 0; i < n; i++) {
        char key[PARAM_TEXT];
        param_json_key(&specs[i], key, sizeof key);
        const struct param_spec *s = &specs[i];
        json_object_set_new(o, key, s->choices ? json_string(s->choices[(int)v[i]])
                                    : s->integer || s->odd ? json_integer((json_int_t)v[i]) : json_real(v[i]));
    }
}

int param_edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 64 };
    const int na = (int)TS_MIN(strlen(a), (size_t)MAXLEN), nb = (int)TS_MIN(strlen(b), (size_t)MAXLEN);
    int d[MAXLEN + 1][MAXLEN + 1]; /* d[i][j]: a's first i characters to b's first j */
    for (int i = 0; i <= na; i++)
        d[i][0] = i;
    for (int j = 0; j <= nb; j++)
        d[0][j] = j;
    for (int i = 1; i <= na; i++)
        for (int j = 1; j <= nb; j++) {
            d[i][j] = TS_MIN(TS_MIN(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + (a[i - 1] != b[j - 1]));
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) /* two letters swapped: one edit */
                d[i][j] = TS_MIN(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[na][nb];
}

const char *param_nearest(const char *given, const char *const *names, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < n; i++) {
        const int d = param_edit_distance(given, names[i]);
        if (d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    const int len = (int)strlen(given);
    return best && best_d <= TS_MAX(2, len / 3) && best_d < len ? best : NULL;
}
