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
    return 0;
}

const char *param_values_get(const struct param_values *pv, const char *name)
{
    for (int i = 0; i < pv->n; i++)
        if (strcmp(pv->name[i], name) == 0)
            return pv->text[i];
    return NULL;
}

int param_parse(const struct param_spec *s, const char *text, double *out, struct ts_err *err)
{
    double v;
    bool ok = ts_parse_double(text, &v) == 0 && isfinite(v) && (!s->integer || v == floor(v)) && v >= s->lo &&
              v <= s->hi;
    if (!ok)
        return ts_fail(err, "--%s: '%s' is not %s in %.10g..%.10g", s->name, text, s->integer ? "a whole number" : "a number",
                       s->lo, s->hi);
    *out = v;
    return 0;
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
        char opt[64];
        snprintf(opt, sizeof opt, "--%s %s", specs[i].name, specs[i].integer ? "N" : "X");
        fprintf(f, "  %-24s %s: %s [%.10g; %.10g..%.10g]\n", opt, owner, specs[i].help, specs[i].def, specs[i].lo, specs[i].hi);
    }
}

void params_json(struct json_t *o, const struct param_spec *specs, int n, const double *v)
{
    for (int i = 0; i < n; i++) {
        char key[PARAM_TEXT];
        param_json_key(&specs[i], key, sizeof key);
        json_object_set_new(o, key, specs[i].integer ? json_integer((json_int_t)v[i]) : json_real(v[i]));
    }
}
