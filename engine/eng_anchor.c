/*
 * eng_anchor.c: reading the PyTorch anchor's output (eng_anchor.h).
 */
#include "eng_anchor.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const STEP_NAME[ANCHOR_STEPS] = {"refresh all", "refresh masked", "reuse"};
static const char *const STEP_FIELD[ANCHOR_STEPS] = {"refresh_all_logits_ms", "refresh_masked_logits_ms",
                                                     "reuse_block32_ms"};
static const char *const PEAK_FIELD[2] = {"peak_act_all_GiB", "peak_act_masked_GiB"};

const char *anchor_step_name(enum anchor_step s) { return STEP_NAME[s]; }
const char *anchor_step_field(enum anchor_step s) { return STEP_FIELD[s]; }

void anchor_default_grid(struct anchor_run *r)
{
    /* torch_llada_step.py's (B, T, masked) */
    static const int32_t grid[][3] = {{1, 512, 256},  {1, 2048, 1024}, {4, 512, 256},  {8, 512, 256},
                                      {16, 512, 256}, {4, 2048, 1024}, {1, 8192, 4096}};
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < TS_ARRAY_LEN(grid); i++) {
        struct anchor_case *c = &r->c[r->n++];
        c->B = grid[i][0], c->T = grid[i][1], c->masked = grid[i][2];
        c->peak_act_gib[0] = c->peak_act_gib[1] = -1;
    }
}

void anchor_step_shape(const struct anchor_case *c, enum anchor_step s, int32_t *q, int32_t *kv,
                       int32_t *logit_rows)
{
    *q = s == ANCHOR_REUSE ? ANCHOR_REUSE_BLOCK : c->T;
    *kv = s == ANCHOR_REUSE ? c->T - ANCHOR_REUSE_BLOCK : 0;
    *logit_rows = s == ANCHOR_REFRESH_MASKED ? c->masked : *q;
}

/* A number field of a line's object: present (or, with optional, absent: *out untouched),
 * finite and within [lo, hi]. */
static int num_field(const char *path, int64_t line, json_t *o, const char *key, double lo, double hi,
                     int optional, double *out, struct ts_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return optional ? 0 : ts_fail(err, "%s:%lld: %s: missing field", path, (long long)line, key);
    if (!json_is_number(v))
        return ts_fail(err, "%s:%lld: %s: not a number", path, (long long)line, key);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi)
        return ts_fail(err, "%s:%lld: %s: %g is outside [%g, %g]", path, (long long)line, key, d, lo, hi);
    *out = d;
    return 0;
}

static int int_field(const char *path, int64_t line, json_t *o, const char *key, double lo, double hi,
                     int32_t *out, struct ts_err *err)
{
    double d;
    if (num_field(path, line, o, key, lo, hi, 0, &d, err))
        return -1;
    if (d != floor(d))
        return ts_fail(err, "%s:%lld: %s: %g is not a whole number", path, (long long)line, key, d);
    *out = (int32_t)d;
    return 0;
}

static int parse_case(const char *path, int64_t line, json_t *o, struct anchor_run *r, struct ts_err *err)
{
    if (r->n == ANCHOR_MAX_CASES)
        return ts_fail(err, "%s:%lld: B: more than %d shapes", path, (long long)line, ANCHOR_MAX_CASES);
    struct anchor_case c = {.line = line, .peak_act_gib = {-1, -1}};
    if (int_field(path, line, o, "B", 1, 4096, &c.B, err) || int_field(path, line, o, "T", 1, 1 << 20, &c.T, err) ||
        int_field(path, line, o, "masked", 1, 1 << 20, &c.masked, err))
        return -1;
    if (c.T <= ANCHOR_REUSE_BLOCK)
        return ts_fail(err, "%s:%lld: T: %d tokens leave nothing cached before the %d-token Reuse block", path,
                       (long long)line, c.T, ANCHOR_REUSE_BLOCK);
    if (c.masked > c.T)
        return ts_fail(err, "%s:%lld: masked: %d of %d tokens", path, (long long)line, c.masked, c.T);
    for (int s = 0; s < ANCHOR_STEPS; s++)
        if (num_field(path, line, o, STEP_FIELD[s], 1e-6, 1e7, 0, &c.ms[s], err))
            return -1;
    for (int k = 0; k < 2; k++)
        if (num_field(path, line, o, PEAK_FIELD[k], 0, 1e6, 1, &c.peak_act_gib[k], err))
            return -1;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].B == c.B && r->c[i].T == c.T && r->c[i].masked == c.masked)
            return ts_fail(err, "%s:%lld: B: the shape B=%d T=%d masked=%d again (line %lld)", path,
                           (long long)line, c.B, c.T, c.masked, (long long)r->c[i].line);
    r->c[r->n++] = c;
    return 0;
}

static int parse_line(const char *path, int64_t line, const char *s, size_t len, struct anchor_run *r,
                      struct ts_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return ts_fail(err, "%s:%lld: json: %s", path, (long long)line, jerr.text);
    int rc = -1; /* the line starts with '{': o is an object */
    if (json_object_get(o, "B"))
        rc = parse_case(path, line, o, r, err);
    else if (json_object_get(o, "gemm_8192_bf16_tflops"))
        rc = num_field(path, line, o, "gemm_8192_bf16_tflops", 1e-3, 1e6, 0, &r->gemm_tflops, err);
    else if (json_object_get(o, "copy_TBps"))
        rc = num_field(path, line, o, "copy_TBps", 1e-3, 1e4, 0, &r->copy_tbps, err);
    else
        ts_fail(err, "%s:%lld: B: an object that is neither a shape (B, T, masked) nor a ceiling "
                     "(gemm_8192_bf16_tflops, copy_TBps)", path, (long long)line);
    json_decref(o);
    return rc;
}

int anchor_parse(const char *path, const char *buf, size_t len, struct anchor_run *r, struct ts_err *err)
{
    memset(r, 0, sizeof *r);
    const char *p = buf, *end = buf + len;
    for (int64_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *s = p;
        p = nl ? nl + 1 : end;
        while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        if (s == e || *s != '{')
            continue; /* blank, or a progress line */
        if (parse_line(path, line, s, (size_t)(e - s), r, err))
            return -1;
    }
    if (r->n == 0)
        return ts_fail(err, "%s: no shapes (lines with B, T and masked): is it torch_llada_step.py's output?", path);
    return 0;
}

int anchor_load(const char *path, struct anchor_run *r, struct ts_err *err)
{
    char *buf;
    size_t len;
    if (ts_read_file(path, &buf, &len, err))
        return -1;
    int rc = anchor_parse(path, buf, len, r, err);
    free(buf);
    return rc;
}
