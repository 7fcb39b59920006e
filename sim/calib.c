/* calib.c: loading, validating and fitting the engine's per-op profile; pricing steps with it. */
#define _POSIX_C_SOURCE 200809L
#include "calib.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_interp.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "gpu.h"
#include "kernels.h"
#include "model.h"

#define PROFILE_CHUNK_DEFAULT 2048 /* the LM-head chunk `tessera engine profile` runs with */
#define ATTN_FEATURES 10

static const enum cost_op token_ops[] = {OP_EMBED, OP_NORM, OP_QKV, OP_ROPE, OP_OPROJ,
                                         OP_GATE_UP, OP_ACT, OP_DOWN};

void calib_data_free(struct calib_data *d)
{
    if (!d)
        return;
    free(d->rows);
    memset(d, 0, sizeof *d);
}

void calib_shipped_path(const char *datadir, const char *gpu, const char *model, const char *impl, char *out,
                        size_t len)
{
    snprintf(out, len, "%s/calib/%s-%s-%s.csv", datadir, gpu, model, impl);
}

static void push(struct calib_data *d, const struct calib_row *r)
{
    ts_grow((void **)&d->rows, &d->cap, d->n + 1, sizeof *d->rows);
    d->rows[d->n++] = *r;
}

/* Sets device, model and attention launch rules from a row, refusing a second one. */
static int same_source(struct calib_data *d, const char *path, long line, const char *dev,
                       const char *model, int rules, struct ts_err *err)
{
    if (!d->device[0]) {
        snprintf(d->device, sizeof d->device, "%s", dev);
        snprintf(d->model, sizeof d->model, "%s", model);
        d->attn_rules = rules;
        return 0;
    }
    if (d->attn_rules != rules)
        return ts_fail(err, "%s:%ld: attn_rules: %d after %d (one calibration holds one engine's "
                            "profile)", path, line, rules, d->attn_rules);
    if (strcmp(d->device, dev) != 0)
        return ts_fail(err, "%s:%ld: device: '%s' after '%s' (one calibration holds one GPU)", path,
                       line, dev, d->device);
    if (strcmp(d->model, model) != 0)
        return ts_fail(err, "%s:%ld: model: '%s' after '%s' (one calibration holds one model)", path,
                       line, model, d->model);
    return 0;
}

/* Splits a CSV line with double-quoted fields (which may hold commas). */
static int split_quoted(char *s, char **f, int max)
{
    int n = 0;
    while (n < max) {
        if (*s == '"') {
            f[n++] = ++s;
            while (*s && *s != '"')
                s++;
            if (*s)
                *s++ = '\0';
            if (*s == ',')
                s++;
            else if (!*s)
                return n;
        } else {
            f[n++] = s;
            char *c = strchr(s, ',');
            if (!c)
                return n;
            *c = '\0';
            s = c + 1;
        }
    }
    return n;
}

int calib_data_load(const char *path, struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    char *text;
    if (ts_read_file(path, &text, NULL, err))
        return -1;
    int rc = calib_data_parse(path, text, out, err);
    free(text);
    return rc;
}

int calib_data_parse(const char *path, char *text, struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    static const char *const cols[] = {"device", "model", "segs", "q", "kv", "logit_rows", "op", "ms",
                                       "total_ms", "gpu_ms", "host_ms", "attn_rules", "kv_long"};
    enum { NCOLS = 13 };
    int idx[NCOLS];
    char *line = text, *next;
    long lineno = 0;
    int rc = -1;
    for (; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        lineno++;
        char *f[32];
        int nf = split_quoted(line, f, 32);
        if (lineno == 1) {
            for (int c = 0; c < NCOLS; c++) {
                idx[c] = -1;
                for (int i = 0; i < nf; i++)
                    if (strcmp(f[i], cols[c]) == 0)
                        idx[c] = i;
                if (idx[c] < 0 && c < 9) {
                    ts_fail(err, "%s:1: header: column '%s' missing", path, cols[c]);
                    goto done;
                }
            }
            if ((idx[9] < 0) != (idx[10] < 0)) { /* the host/GPU split comes as a pair */
                ts_fail(err, "%s:1: header: column '%s' missing", path, cols[idx[9] < 0 ? 9 : 10]);
                goto done;
            }
            continue;
        }
        if (nf == 1 && !f[0][0])
            continue;
        struct calib_row r = {0};
        int64_t v[4];
        for (int c = 0; c < NCOLS; c++)
            if (idx[c] >= nf) {
                ts_fail(err, "%s:%ld: %s: missing field", path, lineno, cols[c]);
                goto done;
            }
        for (int c = 0; c < 4; c++)
            if (ts_parse_i64(f[idx[2 + c]], &v[c]) || v[c] < 0 || v[c] > 1 << 24) {
                ts_fail(err, "%s:%ld: %s: not a count ('%s')", path, lineno, cols[2 + c], f[idx[2 + c]]);
                goto done;
            }
        r.segs = (int32_t)v[0], r.q = (int32_t)v[1], r.kv = (int32_t)v[2], r.logit_rows = (int32_t)v[3];
        if (cost_op_parse(f[idx[6]], &r.op)) {
            ts_fail(err, "%s:%ld: op: unknown op '%s'", path, lineno, f[idx[6]]);
            goto done;
        }
        if (ts_parse_double(f[idx[7]], &r.ms) || r.ms < 0 || ts_parse_double(f[idx[8]], &r.total_ms) ||
            r.total_ms < 0) {
            ts_fail(err, "%s:%ld: ms: not a non-negative time", path, lineno);
            goto done;
        }
        for (int c = 9; c < 11 && idx[9] >= 0; c++) {
            double *t = c == 9 ? &r.gpu_ms : &r.host_ms;
            if (ts_parse_double(f[idx[c]], t) || *t <= 0) {
                ts_fail(err, "%s:%ld: %s: not a positive time ('%s')", path, lineno, cols[c], f[idx[c]]);
                goto done;
            }
        }
        if (r.segs < 1 || r.q < 1) {
            ts_fail(err, "%s:%ld: segs: a profiled step needs segments of at least one token", path, lineno);
            goto done;
        }
        int64_t kv_long = 0;
        if (idx[12] >= 0 && (ts_parse_i64(f[idx[12]], &kv_long) || kv_long < 0 || kv_long > 1 << 24)) {
            ts_fail(err, "%s:%ld: kv_long: not a count ('%s')", path, lineno, f[idx[12]]);
            goto done;
        }
        r.kv_long = (int32_t)kv_long;
        if (r.kv_long > 0 && r.segs < 2) {
            ts_fail(err, "%s:%ld: kv_long: an uneven step needs 2 or more segments (segs %d)", path, lineno,
                    r.segs);
            goto done;
        }
        int64_t rules = 1;
        if (idx[11] >= 0 && (ts_parse_i64(f[idx[11]], &rules) || rules < 1 || rules > K_ATTN_RULES)) {
            ts_fail(err, "%s:%ld: attn_rules: not a version of the engine's attention launch rules this "
                         "build knows (1..%d): '%s'", path, lineno, K_ATTN_RULES, f[idx[11]]);
            goto done;
        }
        if (same_source(out, path, lineno, f[idx[0]], f[idx[1]], (int)rules, err))
            goto done;
        push(out, &r);
    }
    rc = out->n ? 0 : ts_fail(err, "%s: no profile rows", path);
done:
    if (rc)
        calib_data_free(out);
    return rc;
}

int calib_data_import_db(const char *path, struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open", path);
        goto done;
    }
    /* profiles from before the uneven steps have no kv_long column (every step even), and those
     * from before the rules versions no attn_rules column either (version 1) */
    static const char *const queries[] = {
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, kv_long FROM engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, 0 FROM engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, 1, 0 FROM engine_profile"};
    size_t qi = 0;
    while (qi < TS_ARRAY_LEN(queries) && sqlite3_prepare_v2(db, queries[qi], -1, &st, NULL) != SQLITE_OK)
        qi++;
    if (qi == TS_ARRAY_LEN(queries)) {
        ts_fail(err, "%s: no engine_profile table (write one with tessera engine profile)", path);
        goto done;
    }
    long row = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        row++;
        struct calib_row r = {.segs = sqlite3_column_int(st, 2), .q = sqlite3_column_int(st, 3),
                              .kv = sqlite3_column_int(st, 4), .logit_rows = sqlite3_column_int(st, 5),
                              .kv_long = sqlite3_column_int(st, 10), /* NULL reads 0: an even step */
                              .ms = sqlite3_column_double(st, 7), .total_ms = sqlite3_column_double(st, 8)};
        const char *dev = (const char *)sqlite3_column_text(st, 0), *model = (const char *)sqlite3_column_text(st, 1);
        const char *op = (const char *)sqlite3_column_text(st, 6);
        if (!dev || !model || !op || cost_op_parse(op, &r.op) || r.segs < 1 || r.q < 1 || r.ms < 0) {
            ts_fail(err, "%s: engine_profile row %ld: incomplete or unknown op", path, row);
            goto done;
        }
        if (r.kv_long < 0 || (r.kv_long > 0 && r.segs < 2)) {
            ts_fail(err, "%s: engine_profile row %ld: kv_long: %d (an uneven step needs 2 or more segments "
                         "and a count)", path, row, r.kv_long);
            goto done;
        }
        const int rules = sqlite3_column_type(st, 9) == SQLITE_NULL ? 1 : sqlite3_column_int(st, 9);
        if (rules < 1 || rules > K_ATTN_RULES) {
            ts_fail(err, "%s: engine_profile row %ld: attn_rules: %d is not a version of the engine's "
                         "attention launch rules this build knows (1..%d)", path, row, rules, K_ATTN_RULES);
            goto done;
        }
        if (same_source(out, path, row, dev, model, rules, err))
            goto done;
        push(out, &r);
    }
    rc = out->n ? 0 : ts_fail(err, "%s: engine_profile is empty", path);
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc)
        calib_data_free(out);
    return rc;
}

/* Whether a profile measured the host/GPU split (gpu_ms, host_ms): all rows or none (the parser's rule). */
static bool host_split(const struct calib_data *d)
{
    return d->n > 0 && d->rows[0].gpu_ms > 0;
}

int calib_data_write(const struct calib_data *d, const char *path, struct ts_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ts_fail(err, "%s: cannot create", path);
    const bool split = host_split(d);
    bool uneven = false; /* the kv_long column only where a step is uneven: older files stay as they were */
    for (size_t i = 0; i < d->n; i++)
        uneven = uneven || d->rows[i].kv_long > 0;
    fprintf(f, "device,model,segs,q,kv,logit_rows,op,ms,total_ms%s,attn_rules%s\n", split ? ",gpu_ms,host_ms" : "",
            uneven ? ",kv_long" : "");
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        fprintf(f, "\"%s\",%s,%d,%d,%d,%d,%s,%.9g,%.9g", d->device, d->model, r->segs, r->q, r->kv,
                r->logit_rows, cost_op_name(r->op), r->ms, r->total_ms);
        if (split)
            fprintf(f, ",%.9g,%.9g", r->gpu_ms, r->host_ms);
        fprintf(f, ",%d", TS_MAX(1, d->attn_rules));
        if (uneven)
            fprintf(f, ",%d", r->kv_long);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return ts_fail(err, "%s: write error", path);
    return 0;
}

/* Distinct token counts measured for op (rows without logits). */
static int distinct_tokens(const struct calib_data *d, enum cost_op op)
{
    int64_t seen[64];
    int n = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        if (r->op != op || r->logit_rows)
            continue;
        int64_t T = (int64_t)r->segs * r->q;
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup |= seen[j] == T;
        if (!dup && n < 64)
            seen[n++] = T;
    }
    return n;
}

/* Whether two profile rows belong to the same profiled step. */
static bool same_step(const struct calib_row *a, const struct calib_row *b)
{
    return a->segs == b->segs && a->q == b->q && a->kv == b->kv && a->logit_rows == b->logit_rows &&
           a->kv_long == b->kv_long;
}

/* A row's step and op, with its index, for finding the same op of the same step twice. */
struct row_key {
    int32_t k[6];
    size_t i;
};

static struct row_key row_key_of(const struct calib_row *r, size_t i)
{
    return (struct row_key){{r->segs, r->q, r->kv, r->logit_rows, r->kv_long, (int32_t)r->op}, i};
}

static int cmp_row_key(const void *a, const void *b)
{
    const struct row_key *x = a, *y = b;
    for (int j = 0; j < 6; j++)
        if (x->k[j] != y->k[j])
            return (x->k[j] > y->k[j]) - (x->k[j] < y->k[j]);
    return (x->i > y->i) - (x->i < y->i);
}

/* An op measured twice in one step: two profiles in one file, which would double every step's sum. */
static int no_duplicate_rows(const struct calib_data *d, struct ts_err *err)
{
    struct row_key *keys = xmalloc(sizeof *keys * (d->n ? d->n : 1));
    for (size_t i = 0; i < d->n; i++)
        keys[i] = row_key_of(&d->rows[i], i);
    qsort(keys, d->n, sizeof *keys, cmp_row_key);
    int rc = 0;
    for (size_t i = 1; i < d->n && !rc; i++) {
        if (memcmp(keys[i - 1].k, keys[i].k, sizeof keys[i].k) != 0)
            continue;
        const struct calib_row *a = &d->rows[keys[i - 1].i];
        rc = ts_fail(err, "profile of %s on %s: data rows %zu and %zu both measure op %s of the step "
                          "(segs %d, q %d, kv %d, logit_rows %d, kv_long %d): two profiles in one file? "
                          "(profile into a fresh database)",
                     d->model, d->device, keys[i - 1].i + 1, keys[i].i + 1, cost_op_name(a->op), a->segs, a->q,
                     a->kv, a->logit_rows, a->kv_long);
    }
    free(keys);
    return rc;
}

/* The ops a profile measured, as a bit mask. */
static unsigned op_mask(const struct calib_data *d)
{
    unsigned m = 0;
    for (size_t i = 0; i < d->n; i++)
        m |= 1u << d->rows[i].op;
    return m;
}

static double median_of(double *v, size_t n)
{
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Whether two profiles come from one engine on one GPU for one model; fails naming the first
 * difference. */
static int same_engine(const struct calib_data *a, const char *an, const struct calib_data *b, const char *bn,
                       struct ts_err *err)
{
    if (strcmp(a->device, b->device) != 0)
        return ts_fail(err, "%s: device '%s', but %s's is '%s' (a merge takes profiles of one GPU)", bn, b->device,
                       an, a->device);
    if (strcmp(a->model, b->model) != 0)
        return ts_fail(err, "%s: model '%s', but %s's is '%s' (a merge takes profiles of one model)", bn, b->model,
                       an, a->model);
    if (TS_MAX(1, a->attn_rules) != TS_MAX(1, b->attn_rules))
        return ts_fail(err, "%s: profiled under attention launch rules %d, %s under %d (different engines)", bn,
                       TS_MAX(1, b->attn_rules), an, TS_MAX(1, a->attn_rules));
    if (host_split(a) != host_split(b))
        return ts_fail(err, "%s: %s the host/GPU split (gpu_ms, host_ms) and %s %s (different implementations)",
                       bn, host_split(b) ? "measures" : "does not measure", an, host_split(a) ? "does" : "does not");
    const unsigned ma = op_mask(a), mb = op_mask(b);
    for (int op = 0; op < OP_COUNT; op++)
        if (((ma ^ mb) >> op) & 1u)
            return ts_fail(err, "%s: %s op %s and %s %s (profiles of different implementations?)", bn,
                           (mb >> op) & 1u ? "measures" : "has no", cost_op_name((enum cost_op)op), an,
                           (ma >> op) & 1u ? "does" : "does not");
    return 0;
}

/* A merged row and where it first appeared (its input's index among all inputs' rows). */
struct merged_row {
    size_t first;
    struct calib_row r;
};

static int cmp_merged(const void *a, const void *b)
{
    const struct merged_row *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

int calib_data_merge(const struct calib_data *in, const char *const *names, size_t n_in, struct calib_data *out,
                     size_t *partial, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    *partial = 0;
    if (n_in < 2)
        return ts_fail(err, "a merge takes two or more profiles (%zu given)", n_in);
    size_t total = 0;
    for (size_t f = 0; f < n_in; f++) {
        if (f > 0 && same_engine(&in[0], names[0], &in[f], names[f], err))
            return -1;
        total += in[f].n;
    }
    /* every input's rows in one list, in input order; sorted by step and op, then by that order */
    struct row_key *keys = xmalloc(sizeof *keys * (total ? total : 1));
    const struct calib_row **row = xmalloc(sizeof *row * (total ? total : 1));
    size_t *input = xmalloc(sizeof *input * (total ? total : 1));
    for (size_t f = 0, g = 0; f < n_in; f++)
        for (size_t i = 0; i < in[f].n; i++, g++) {
            row[g] = &in[f].rows[i];
            keys[g] = row_key_of(row[g], g);
            input[g] = f;
        }
    qsort(keys, total, sizeof *keys, cmp_row_key);
    struct merged_row *m = xmalloc(sizeof *m * (total ? total : 1));
    double *v = xmalloc(sizeof *v * 4 * n_in);
    size_t nm = 0;
    int rc = 0;
    for (size_t a = 0, b; a < total; a = b) {
        for (b = a + 1; b < total && memcmp(keys[a].k, keys[b].k, sizeof keys[a].k) == 0; b++)
            if (input[keys[b].i] == input[keys[b - 1].i]) {
                const struct calib_row *r = row[keys[b].i];
                rc = ts_fail(err, "%s: op %s of the step (segs %d, q %d, kv %d, logit_rows %d, kv_long %d) "
                                  "measured twice (two profiles in one file?)", names[input[keys[b].i]],
                             cost_op_name(r->op), r->segs, r->q, r->kv, r->logit_rows, r->kv_long);
                break;
            }
        if (rc)
            break;
        const size_t k = b - a;
        double *ms = v, *tot = v + n_in, *gpu = v + 2 * n_in, *host = v + 3 * n_in;
        for (size_t j = 0; j < k; j++) {
            const struct calib_row *r = row[keys[a + j].i];
            ms[j] = r->ms, tot[j] = r->total_ms, gpu[j] = r->gpu_ms, host[j] = r->host_ms;
        }
        m[nm].first = keys[a].i; /* the smallest index of the group: sorted by it within a key */
        m[nm].r = *row[keys[a].i];
        m[nm].r.ms = median_of(ms, k);
        m[nm].r.total_ms = median_of(tot, k);
        m[nm].r.gpu_ms = median_of(gpu, k);
        m[nm].r.host_ms = median_of(host, k);
        *partial += k < n_in;
        nm++;
    }
    if (!rc) {
        qsort(m, nm, sizeof *m, cmp_merged);
        snprintf(out->device, sizeof out->device, "%s", in[0].device);
        snprintf(out->model, sizeof out->model, "%s", in[0].model);
        out->attn_rules = in[0].attn_rules;
        for (size_t i = 0; i < nm; i++)
            push(out, &m[i].r);
    }
    free(keys);
    free(row);
    free(input);
    free(m);
    free(v);
    return rc;
}

int calib_data_validate(const struct calib_data *d, const char *gpu_name, struct ts_err *err)
{
    if (no_duplicate_rows(d, err))
        return -1;
    const enum cost_op needed[] = {OP_NORM, OP_QKV, OP_ROPE, OP_ATTN, OP_OPROJ, OP_GATE_UP, OP_ACT,
                                   OP_DOWN, OP_LM_HEAD, OP_SAMPLE};
    for (size_t i = 0; i < TS_ARRAY_LEN(needed); i++) {
        bool token_op = needed[i] != OP_LM_HEAD && needed[i] != OP_SAMPLE && needed[i] != OP_ATTN;
        int n = 0;
        for (size_t j = 0; j < d->n; j++)
            n += d->rows[j].op == needed[i];
        if (n == 0 && needed[i] == OP_ACT)
            continue; /* a fused FFN's profile (tessera-fused): SwiGLU runs inside gate_up */
        if (n == 0)
            return ts_fail(err, "profile of %s on %s: no rows for op %s", d->model, d->device,
                           cost_op_name(needed[i]));
        if (token_op && distinct_tokens(d, needed[i]) < 3)
            return ts_fail(err, "profile of %s on %s: op %s is measured at fewer than 3 token counts",
                           d->model, d->device, cost_op_name(needed[i]));
    }
    /* the named model and GPU must be able to produce these GEMM times */
    struct model_cfg m;
    struct gpu_spec g;
    struct gpu_table *t = gpu_table_create();
    int rc = model_resolve(d->model, &m, err) || gpu_lookup(t, gpu_name, &g, err) ? -1 : 0;
    gpu_table_destroy(t);
    if (rc)
        return -1;
    for (size_t j = 0; j < d->n; j++) {
        const struct calib_row *r = &d->rows[j];
        if (r->op != OP_GATE_UP || r->logit_rows)
            continue;
        double T = (double)r->segs * r->q;
        double flops = 2.0 * T * m.hidden * 2.0 * m.ffn * (m.num_layers - model_num_moe_layers(&m));
        double bytes = 2.0 * 2.0 * m.ffn * m.hidden * (m.num_layers - model_num_moe_layers(&m));
        double floor_ms = fmax(flops / g.bf16_flops, bytes / g.mem_bw) * 1e3;
        double ratio = r->ms / floor_ms;
        if (ratio < 0.7 || ratio > 20)
            return ts_fail(err, "profile claims %s on %s, but gate_up at %.0f tokens takes %.3f ms, %.2fx "
                                "the roofline floor of that model on %s: a profile of another model or "
                                "GPU?", d->model, d->device, T, r->ms, ratio, g.name);
    }
    return 0;
}

/* The cached keys of segment i of a profiled step (the last over kv_long where it is uneven) */
static int32_t row_kv(const struct calib_row *r, int32_t i)
{
    return r->kv_long > 0 && i == r->segs - 1 ? r->kv_long : r->kv;
}

void calib_row_step(const struct calib_row *r, struct step_desc *sd)
{
    step_desc_clear(sd);
    for (int32_t i = 0; i < r->segs; i++) {
        const int32_t kv = row_kv(r, i);
        struct segment seg = {.req_id = i, .q = r->q, .kv = kv, .logit_rows = r->logit_rows,
                              .phase = kv > 0 ? PHASE_REUSE : PHASE_FULL};
        step_desc_add(sd, &seg);
    }
}

/* Roofline contexts of one model and implementation on two GPUs. */
static int two_gpus(const char *model, const char *from, const char *to, const char *impl,
                    struct cost_ctx *src, struct cost_ctx *dst, struct ts_err *err)
{
    memset(src, 0, sizeof *src);
    memset(dst, 0, sizeof *dst);
    struct gpu_table *t = gpu_table_create();
    int rc = model_resolve(model, &src->model, err) || gpu_lookup(t, from, &src->gpu, err) ||
                     gpu_lookup(t, to, &dst->gpu, err) || impl_resolve(impl, &src->impl, err)
                 ? -1 : 0;
    gpu_table_destroy(t);
    dst->model = src->model;
    dst->impl = src->impl;
    return rc;
}

/* A step priced by the roofline on both GPUs; ratio(op) is how much slower the op is on the
 * second (the step's ratio for an op the roofline does not price). */
struct roofline_pair {
    struct cost_breakdown a, b;
    double sa, sb;
};

static int roofline_both(const struct cost_ctx *src, const struct cost_ctx *dst, const struct step_desc *sd,
                         struct roofline_pair *p, struct ts_err *err)
{
    return cost_roofline.step_s(src, sd, &p->sa, &p->a, err) || cost_roofline.step_s(dst, sd, &p->sb, &p->b, err)
               ? -1 : 0;
}

static double roofline_ratio(const struct roofline_pair *p, int op)
{
    return p->a.op_s[op] > 0 && p->b.op_s[op] > 0 ? p->b.op_s[op] / p->a.op_s[op] : p->sb / p->sa;
}

int calib_data_transfer(const struct calib_data *in, const char *from, const char *to, const char *impl,
                        struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    struct cost_ctx src, dst;
    if (two_gpus(in->model, from, to, impl, &src, &dst, err))
        return -1;
    *out = *in;
    snprintf(out->device, sizeof out->device, "%.24s (roofline transfer from %.70s)", dst.gpu.name, in->device);
    out->rows = xmalloc(sizeof *in->rows * (in->n ? in->n : 1));
    out->cap = in->n;
    struct step_desc sd;
    step_desc_init(&sd);
    for (size_t i = 0; i < in->n; i++) {
        const struct calib_row *r = &in->rows[i];
        sd.logit_chunk_rows = (int32_t)TS_MAX(1, (int64_t)r->segs * r->logit_rows);
        calib_row_step(r, &sd);
        struct roofline_pair rp;
        if (roofline_both(&src, &dst, &sd, &rp, err)) {
            step_desc_free(&sd);
            calib_data_free(out);
            return -1;
        }
        double total_ratio = rp.sb / rp.sa, op_ratio = roofline_ratio(&rp, r->op);
        out->rows[i] = *r;
        out->rows[i].ms = r->ms * op_ratio;
        out->rows[i].total_ms = r->total_ms * total_ratio;
        out->rows[i].gpu_ms = r->gpu_ms * total_ratio; /* the host's issue time stays: same CPU */
    }
    step_desc_free(&sd);
    return 0;
}

int calib_transfer_band(const struct calib *c, const char *model, const char *from, const char *to,
                        const char *impl, const struct step_desc *sd, double *mid_s, double *lo_s,
                        double *hi_s, struct ts_err *err)
{
    struct cost_ctx src, dst;
    if (two_gpus(model, from, to, impl, &src, &dst, err))
        return -1;
    struct cost_breakdown bd;
    struct roofline_pair rp;
    if (calib_step_s(c, sd, true, mid_s, &bd, err) || roofline_both(&src, &dst, sd, &rp, err))
        return -1;
    const double rc_ = src.gpu.bf16_flops / dst.gpu.bf16_flops, rm = src.gpu.mem_bw / dst.gpu.mem_bw;
    double gpu = 0, lo = 0, hi = 0;
    for (int o = 0; o < OP_COUNT; o++) {
        double v = bd.op_s[o];
        if (v <= 0 || o == OP_HOST)
            continue;
        double r = roofline_ratio(&rp, o), base = v / r;
        gpu += v;
        lo += base * fmin(r, fmin(rc_, rm));
        hi += base * fmax(r, fmax(rc_, rm));
    }
    /* a host-bound step (calib_step_s's max(host, GPU)) keeps its host time: the same host */
    double host = bd.op_s[OP_HOST] > 0 ? gpu + bd.op_s[OP_HOST] : 0;
    *lo_s = fmax(host, lo);
    *hi_s = fmax(host, hi);
    return 0;
}

/* --- fitting ----------------------------------------------------------------------------- */

struct curve {
    double *x, *y;
    int n;
    gsl_interp *interp;
    gsl_interp_accel *acc;
};

struct calib {
    char device[128], model[64];
    struct curve tok[OP_COUNT]; /* token-driven ops */
    struct curve lm, sample;    /* per chunk of rows */
    double beta[ATTN_FEATURES]; /* attention least squares */
    int heads, kv_heads, sms;   /* the model's query and K/V heads, the GPU's SMs (attn_finish) */
    int attn_rules;             /* the profiled engine's attention launch rules (calib_data's) */
    bool host_bound;            /* priced as max(host, GPU) */
    double host0, host_seg;     /* host issue time (ms) = host0 + host_seg * segments */
    double eager_gap;           /* ms an eager GPU-bound step adds to its graph-replayed GPU time */
    int host_steps;             /* host-bound profile steps the line was fitted on */
    int64_t max_T;
    const struct calib_data *data; /* for residuals in calib_show (not owned; may be NULL later) */
    struct calib_data own;
};

static void curve_free(struct curve *c)
{
    if (c->interp)
        gsl_interp_free(c->interp);
    if (c->acc)
        gsl_interp_accel_free(c->acc);
    free(c->x);
    free(c->y);
    memset(c, 0, sizeof *c);
}

void calib_free(struct calib *c)
{
    if (!c)
        return;
    for (int i = 0; i < OP_COUNT; i++)
        curve_free(&c->tok[i]);
    curve_free(&c->lm);
    curve_free(&c->sample);
    calib_data_free(&c->own);
    free(c);
}

/* Averages y over equal x and builds a monotone interpolant (linear for two points). */
static int curve_build(struct curve *c, const double *x, const double *y, int n, const char *what,
                       struct ts_err *err)
{
    double *xs = xmalloc(sizeof *xs * (size_t)(n ? n : 1)), *ys = xmalloc(sizeof *ys * (size_t)(n ? n : 1));
    int *cnt = xcalloc((size_t)(n ? n : 1), sizeof *cnt), m = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < m && xs[j] != x[i])
            j++;
        if (j == m) {
            xs[m] = x[i];
            ys[m] = 0;
            m++;
        }
        ys[j] += y[i];
        cnt[j]++;
    }
    for (int j = 0; j < m; j++)
        ys[j] /= cnt[j];
    for (int i = 1; i < m; i++) /* sort by x */
        for (int j = i; j > 0 && xs[j] < xs[j - 1]; j--) {
            double t = xs[j]; xs[j] = xs[j - 1]; xs[j - 1] = t;
            t = ys[j]; ys[j] = ys[j - 1]; ys[j - 1] = t;
        }
    free(cnt);
    if (m < 2) {
        free(xs), free(ys);
        return ts_fail(err, "calibration: %s needs measurements at 2 or more sizes", what);
    }
    c->x = xs, c->y = ys, c->n = m;
    c->interp = gsl_interp_alloc(m >= 3 ? gsl_interp_steffen : gsl_interp_linear, (size_t)m);
    c->acc = gsl_interp_accel_alloc();
    if (gsl_interp_init(c->interp, xs, ys, (size_t)m) != 0)
        return ts_fail(err, "calibration: %s: interpolation setup failed", what);
    return 0;
}

/* f(x): flat below the first point, linear past the last (when allowed). */
static int curve_eval(const struct curve *c, double x, bool extrapolate, double *y)
{
    if (x <= c->x[0]) {
        *y = c->y[0];
        return 0;
    }
    if (x > c->x[c->n - 1]) {
        if (!extrapolate)
            return -1;
        double slope = (c->y[c->n - 1] - c->y[c->n - 2]) / (c->x[c->n - 1] - c->x[c->n - 2]);
        *y = c->y[c->n - 1] + slope * (x - c->x[c->n - 1]);
        return 0;
    }
    *y = gsl_interp_eval(c->interp, c->x, c->y, x, c->acc);
    return 0;
}

/*
 * Attention features of a step: work terms summed over segments, the longest segment's keys (the
 * critical path when a step has too few 64-row tiles to fill the GPU) and a constant (one launch
 * per layer costs time even for a single query; measured on the second session's H200 profile:
 * 35% rms residual with the four sums alone, 14.5% with the maximum and the constant); the work
 * again over the segments of at least K_ATTN_LONG_Q rows, which the engine runs on its wgmma kernel
 * on Hopper (128-row blocks); and the mma.sync kernel's launch as kernels/attention.cu makes it:
 * its waves of blocks (two an SM, four with the 32-key K/V tiles of short query tiles) times the
 * keys a block covers, its key split following k_attention_split_rule_v (by the rules version the
 * profiled engine launched with) when it runs alone (all segments run on it where
 * k_attention_long_on_mma says so). On the sixth session's recorded replays the last term took
 * attention-heavy workloads from 4.9-5.9% to 3.2-3.5% per step and left the fidelity matrix as it
 * was (README.md).
 */
struct attn_acc {
    double f[ATTN_FEATURES];
    double max_q;                                /* the longest segment's rows */
    double short_rows, short_tiles, short_max_k; /* the mma.sync kernel's segments */
    double long_rows, long_tiles;                /* the wgmma kernel's */
    int short_segs, long_segs;                   /* segments on each kernel */
    bool any_long;
    int pack, splits, tile_keys; /* the mma.sync launch (attn_finish; 0 without one) */
};

/* The keys the query tiles of `rows` rows of a segment cover, summed: each tile runs to the keys
 * its last row sees (attn_row_keys); q + kv each without block-causal attention (bs = 0). */
static double tile_keys(int64_t q, int64_t kv, int32_t bs, int rows)
{
    if (bs <= 0)
        return ceil((double)q / rows) * (double)(q + kv);
    double sum = 0;
    for (int64_t r0 = 0; r0 < q; r0 += rows)
        sum += (double)attn_row_keys(q, kv, bs, TS_MIN(q, r0 + rows) - 1);
    return sum;
}

/* A segment of q rows over kv cached keys, block-causal over blocks of bs tokens where bs > 0 (the
 * pairs and the tiles' keys the kernels skip are not counted) */
static void attn_add(struct attn_acc *a, int64_t q, int64_t kv, int32_t bs)
{
    double *f = a->f, k = (double)(q + kv), pairs = attn_pairs(q, kv, bs);
    f[0] += pairs;
    f[1] += tile_keys(q, kv, bs, 64);
    f[2] += (double)q;
    f[3] += 1;
    f[4] = fmax(f[4], k);
    f[5] = 1;
    f[6] += (double)kv;
    a->max_q = fmax(a->max_q, (double)q);
    if (q >= K_ATTN_LONG_Q) { /* the engine's wgmma kernel on Hopper: 128-row blocks */
        f[7] += pairs;
        f[8] += tile_keys(q, kv, bs, 128);
        a->long_rows += (double)q;
        a->long_tiles += ceil((double)q / 64.0);
        a->long_segs++;
        a->any_long = true;
    } else {
        a->short_segs++;
        a->short_rows += (double)q;
        a->short_tiles += ceil((double)q / 64.0);
        a->short_max_k = fmax(a->short_max_k, k);
    }
}

static void attn_finish(struct attn_acc *a, int heads, int kv_heads, int sms, int rules)
{
    if (a->any_long && k_attention_long_on_mma((int)fmin(a->long_tiles, 1e9), heads, sms, (int)a->f[4])) {
        /* one short long segment over many keys: the engine runs every segment on the mma.sync
         * kernel (k_attention_long_on_mma) */
        a->f[7] = a->f[8] = 0;
        a->short_rows += a->long_rows;
        a->short_tiles += a->long_tiles;
        a->short_max_k = a->f[4];
        a->short_segs += a->long_segs;
        a->long_segs = 0;
        a->any_long = false;
    }
    if (a->short_tiles <= 0)
        return;
    /* GQA packing (rules 4, only where every segment is short): a block takes P query heads of
     * one K/V head, so each K/V tile is read once for P heads and there are H / P blocks a tile of
     * P times the rows */
    const int P = k_attention_head_pack_v(rules, heads, kv_heads, (int)fmin(a->max_q, 1e9), (int)a->f[4]);
    a->f[1] /= P;
    /* the engine lists the long segments' tiles first, so the mma.sync kernel runs over the
     * short tiles alone (k_attn_args.long_tiles), its K/V tile size the one it would take alone;
     * beside the wgmma kernel it never splits keys (k_attention_splits), bounded by the step's
     * longest segment */
    int alone = k_attention_split_rule_pv(rules, P, (int)a->short_tiles, (int64_t)a->short_rows, heads, sms,
                                          (int)a->f[4]);
    int splits = a->any_long ? 1 : alone;
    bool short_kv_tiles = k_attention_short_kv_tiles(alone, (int64_t)a->short_rows * P, (int64_t)a->short_tiles);
    double keys = fmin(ceil(ceil(a->short_max_k / splits) / 64.0) * 64.0, a->short_max_k);
    a->f[9] = ceil(a->short_tiles * (heads / P) * splits / ((short_kv_tiles ? 4.0 : 2.0) * sms)) * keys;
    a->pack = P, a->splits = splits, a->tile_keys = short_kv_tiles ? 32 : 64;
}

/* The attention features and launch of a step, as the calibration's model and rules read them */
static void attn_step(const struct calib *c, const struct step_desc *sd, struct attn_acc *acc)
{
    memset(acc, 0, sizeof *acc);
    for (int32_t i = 0; i < sd->num_segs; i++)
        attn_add(acc, sd->segs[i].q, sd->segs[i].kv, sd->attn_block);
    attn_finish(acc, c->heads, c->kv_heads, c->sms, c->attn_rules);
}

void calib_attn_launch(const struct calib *c, const struct step_desc *sd, struct calib_attn_launch *out)
{
    struct attn_acc acc;
    attn_step(c, sd, &acc);
    *out = (struct calib_attn_launch){.rules = c->attn_rules, .wgmma_segs = acc.long_segs,
                                      .mma_segs = acc.short_segs, .heads_a_block = acc.pack,
                                      .splits = acc.splits, .tile_keys = acc.tile_keys};
}

/* The features of a profiled step: segs segments of q rows over kv cached keys, the last over
 * kv_long instead where it is uneven. */
static void attn_features(const struct calib_row *r, int heads, int kv_heads, int sms, int rules, double *f)
{
    struct attn_acc a;
    memset(&a, 0, sizeof a);
    for (int s = 0; s < r->segs; s++)
        attn_add(&a, r->q, row_kv(r, s), 0); /* profiles run bidirectional */
    attn_finish(&a, heads, kv_heads, sms, rules);
    memcpy(f, a.f, sizeof a.f);
}

/* The SM count in an engine's device name ("NVIDIA H200 (sm_90, 132 SMs)"); 132, the H200's,
 * where it names none. */
static int device_sms(const char *device)
{
    const char *p = strstr(device, " SMs");
    if (!p)
        return 132;
    while (p > device && p[-1] >= '0' && p[-1] <= '9')
        p--;
    long n = strtol(p, NULL, 10); /* saturates on a long run of digits */
    return n > 0 && n < 100000 ? (int)n : 132;
}

/* The sum of the op times of the profiled step row r belongs to. */
static double step_ops_ms(const struct calib_data *d, const struct calib_row *r)
{
    double sum = 0;
    for (size_t j = 0; j < d->n; j++) {
        const struct calib_row *s = &d->rows[j];
        if (same_step(s, r))
            sum += s->ms;
    }
    return sum;
}

/* Per-op times come from event-instrumented runs, which add a little to each op;
 * total_ms is the same step timed without the events.  Scale every op of a step so the ops sum to
 * the un-instrumented total, down or up: a total above the sum is, on large steps, run-to-run noise
 * (a constant taken from it would land on every small step) and, on small ones, launch gaps that
 * belong to that shape. gap >= 0: a host/GPU split profile: scale to the GPU time an eager step
 * sees, gpu_ms + gap. */
static void scale_to_totals(const struct calib_data *in, double gap, struct calib_data *out)
{
    for (size_t i = 0; i < in->n; i++) {
        const struct calib_row *r = &in->rows[i];
        double target = gap >= 0 ? r->gpu_ms + gap : r->total_ms;
        if (target <= 0)
            continue;
        double sum = step_ops_ms(in, r);
        if (sum > 0)
            out->rows[i].ms = r->ms * (target / sum);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One row per profiled step (its first), for step-level fits. */
static size_t distinct_steps(const struct calib_data *d, const struct calib_row **out)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        size_t j = 0;
        while (j < n && !same_step(out[j], r))
            j++;
        if (j == n)
            out[n++] = r;
    }
    return n;
}

/* The host side of a split profile: the launch gap of GPU-bound eager steps (median of total - gpu)
 * and the host's issue time as a line in the segment count over the host-bound steps (whose
 * issue time is not stretched by a full launch queue waiting on the GPU). */
static void fit_host(const struct calib_data *d, struct calib *c)
{
    const struct calib_row **steps = xmalloc(sizeof *steps * (d->n ? d->n : 1));
    size_t n = distinct_steps(d, steps);
    double *gaps = xmalloc(sizeof *gaps * (n ? n : 1)), *x = xmalloc(sizeof *x * (n ? n : 1));
    double *y = xmalloc(sizeof *y * (n ? n : 1));
    size_t ng = 0, nh = 0;
    for (size_t i = 0; i < n; i++)
        if (steps[i]->gpu_ms >= steps[i]->host_ms)
            gaps[ng++] = fmax(0.0, steps[i]->total_ms - steps[i]->gpu_ms);
    qsort(gaps, ng, sizeof *gaps, cmp_double);
    c->eager_gap = ng ? gaps[ng / 2] : 0;
    for (size_t i = 0; i < n; i++)
        if (steps[i]->host_ms > steps[i]->gpu_ms + c->eager_gap) {
            x[nh] = steps[i]->segs;
            y[nh++] = steps[i]->host_ms;
        }
    if (nh == 0) { /* never host-bound: every issue time is a bound from below */
        for (size_t i = 0; i < n; i++)
            y[nh++] = steps[i]->host_ms;
        qsort(y, nh, sizeof *y, cmp_double);
        c->host0 = nh ? y[0] : 0, c->host_seg = 0;
    } else {
        double c0 = 0, c1 = 0, cov00, cov01, cov11, ss;
        bool spread = false;
        for (size_t i = 1; i < nh; i++)
            spread |= x[i] != x[0];
        if (spread && gsl_fit_linear(x, 1, y, 1, nh, &c0, &c1, &cov00, &cov01, &cov11, &ss) == 0 && c1 >= 0) {
            c->host0 = c0, c->host_seg = c1;
        } else { /* one segment count, or a falling line: the median, flat */
            qsort(y, nh, sizeof *y, cmp_double);
            c->host0 = y[nh / 2], c->host_seg = 0;
        }
    }
    c->host_steps = (int)nh;
    c->host_bound = true;
    free(steps), free(gaps), free(x), free(y);
}

int calib_fit(const struct calib_data *in, struct calib **out, struct ts_err *err)
{
    struct calib_data scaled = *in;
    scaled.rows = xmalloc(sizeof *in->rows * (in->n ? in->n : 1));
    memcpy(scaled.rows, in->rows, sizeof *in->rows * in->n);
    scaled.cap = in->n;
    struct calib *c = xcalloc(1, sizeof *c);
    bool split = in->n > 0;
    for (size_t i = 0; i < in->n; i++)
        split &= in->rows[i].gpu_ms > 0 && in->rows[i].host_ms > 0;
    if (split)
        fit_host(in, c);
    scale_to_totals(in, split ? c->eager_gap : -1, &scaled);
    const struct calib_data *d = &scaled;
    _Static_assert(sizeof c->device == sizeof d->device && sizeof c->model == sizeof d->model,
                   "calib and calib_data name fields differ");
    memcpy(c->device, d->device, sizeof c->device);
    memcpy(c->model, d->model, sizeof c->model);
    struct model_cfg mc;
    const bool known = model_resolve(c->model, &mc, NULL) == 0;
    c->heads = known ? mc.num_heads : 32;
    c->kv_heads = known ? mc.num_kv_heads : c->heads;
    c->sms = device_sms(c->device);
    c->attn_rules = TS_MAX(1, d->attn_rules);
    c->own.rows = xmalloc(sizeof *d->rows * (d->n ? d->n : 1));
    memcpy(c->own.rows, d->rows, sizeof *d->rows * d->n);
    c->own.n = c->own.cap = d->n;
    memcpy(c->own.device, d->device, sizeof c->own.device);
    memcpy(c->own.model, d->model, sizeof c->own.model);
    double *x = xmalloc(sizeof *x * (d->n ? d->n : 1)), *y = xmalloc(sizeof *y * (d->n ? d->n : 1));
    int rc = -1;
    for (size_t k = 0; k < TS_ARRAY_LEN(token_ops); k++) {
        enum cost_op op = token_ops[k];
        int n = 0;
        for (size_t i = 0; i < d->n; i++)
            if (d->rows[i].op == op && d->rows[i].logit_rows == 0) {
                x[n] = (double)d->rows[i].segs * d->rows[i].q;
                y[n++] = d->rows[i].ms;
                c->max_T = TS_MAX(c->max_T, (int64_t)x[n - 1]);
            }
        if (n == 0)
            continue; /* an op this implementation does not run */
        if (curve_build(&c->tok[op], x, y, n, cost_op_name(op), err))
            goto done;
    }
    /* LM head and sampling: per-chunk points */
    for (int which = 0; which < 2; which++) {
        enum cost_op op = which ? OP_SAMPLE : OP_LM_HEAD;
        int n = 0;
        for (size_t i = 0; i < d->n; i++) {
            const struct calib_row *r = &d->rows[i];
            if (r->op != op || r->logit_rows == 0)
                continue;
            int64_t R = (int64_t)r->segs * r->logit_rows, chunks = (R + PROFILE_CHUNK_DEFAULT - 1) / PROFILE_CHUNK_DEFAULT;
            if (R > PROFILE_CHUNK_DEFAULT && R % PROFILE_CHUNK_DEFAULT)
                continue; /* a ragged last chunk: not a clean per-chunk point */
            x[n] = (double)(chunks > 1 ? PROFILE_CHUNK_DEFAULT : R);
            y[n++] = r->ms / (double)chunks;
        }
        if (curve_build(which ? &c->sample : &c->lm, x, y, n, cost_op_name(op), err))
            goto done;
    }
    /* attention: weighted least squares (weights 1/y^2: relative errors) */
    {
        size_t n = 0;
        for (size_t i = 0; i < d->n; i++)
            n += d->rows[i].op == OP_ATTN;
        if (n < ATTN_FEATURES + 1) {
            ts_fail(err, "calibration: attention needs at least %d measured shapes", ATTN_FEATURES + 1);
            goto done;
        }
        gsl_matrix *X = gsl_matrix_alloc(n, ATTN_FEATURES), *cov = gsl_matrix_alloc(ATTN_FEATURES, ATTN_FEATURES);
        gsl_vector *Y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *b = gsl_vector_alloc(ATTN_FEATURES);
        size_t k = 0;
        for (size_t i = 0; i < d->n; i++) {
            const struct calib_row *r = &d->rows[i];
            if (r->op != OP_ATTN)
                continue;
            double f[ATTN_FEATURES];
            attn_features(r, c->heads, c->kv_heads, c->sms, c->attn_rules, f);
            for (int j = 0; j < ATTN_FEATURES; j++)
                gsl_matrix_set(X, k, (size_t)j, f[j]);
            gsl_vector_set(Y, k, r->ms);
            gsl_vector_set(w, k, 1.0 / fmax(r->ms * r->ms, 1e-12));
            k++;
        }
        double chisq;
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, ATTN_FEATURES);
        int st = gsl_multifit_wlinear(X, w, Y, b, cov, &chisq, ws);
        for (int j = 0; j < ATTN_FEATURES; j++)
            c->beta[j] = gsl_vector_get(b, (size_t)j);
        gsl_multifit_linear_free(ws);
        gsl_matrix_free(X), gsl_matrix_free(cov), gsl_vector_free(Y), gsl_vector_free(w), gsl_vector_free(b);
        if (st) {
            ts_fail(err, "calibration: the attention fit failed");
            goto done;
        }
    }
    c->data = &c->own;
    *out = c;
    rc = 0;
done:
    free(x);
    free(y);
    free(scaled.rows);
    if (rc)
        calib_free(c);
    return rc;
}

const char *calib_device(const struct calib *c) { return c->device; }
const char *calib_model(const struct calib *c) { return c->model; }
int64_t calib_max_tokens(const struct calib *c) { return c->max_T; }

/* --- pricing ----------------------------------------------------------------------------- */

static double chunked(const struct curve *cv, int64_t R, int64_t chunk, bool extrapolate)
{
    if (R <= 0)
        return 0;
    if (chunk <= 0)
        chunk = R;
    double max_rows = cv->x[cv->n - 1], total = 0, y;
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
        double rows = (double)TS_MIN(chunk, R - r0);
        if (rows > max_rows) { /* as several chunks of the largest profiled size */
            curve_eval(cv, max_rows, extrapolate, &y);
            total += y * rows / max_rows;
        } else {
            curve_eval(cv, rows, extrapolate, &y);
            total += y;
        }
    }
    return total;
}

int calib_step_s(const struct calib *c, const struct step_desc *sd, bool extrapolate, double *seconds,
                 struct cost_breakdown *bd, struct ts_err *err)
{
    struct cost_breakdown local;
    if (!bd)
        bd = &local;
    memset(bd, 0, sizeof *bd);
    const struct step_totals *t = &sd->tot;
    double ms = 0;
    if (t->q_tokens > 0) {
        for (size_t k = 0; k < TS_ARRAY_LEN(token_ops); k++) {
            const struct curve *cv = &c->tok[token_ops[k]];
            if (!cv->n)
                continue;
            double y;
            if (curve_eval(cv, (double)t->q_tokens, extrapolate, &y))
                return ts_fail(err, "calibrated cost: a step of %lld packed tokens is beyond the profiled "
                                    "range (up to %lld) of %s on %s; profile larger steps or allow "
                                    "extrapolation (--extrapolate)", (long long)t->q_tokens,
                               (long long)c->max_T, c->model, c->device);
            bd->op_s[token_ops[k]] = y * 1e-3;
            ms += y;
        }
        double attn = 0;
        struct attn_acc acc;
        attn_step(c, sd, &acc);
        for (int j = 0; j < ATTN_FEATURES; j++)
            attn += c->beta[j] * acc.f[j];
        attn = fmax(attn, 0.0);
        bd->op_s[OP_ATTN] = attn * 1e-3;
        ms += attn;
    }
    double lm = chunked(&c->lm, t->logit_rows, sd->logit_chunk_rows, extrapolate);
    double smp = chunked(&c->sample, t->logit_rows, sd->logit_chunk_rows, extrapolate);
    bd->op_s[OP_LM_HEAD] = lm * 1e-3;
    bd->op_s[OP_SAMPLE] = smp * 1e-3;
    ms += lm + smp;
    if (c->host_bound) { /* the GPU waits for the host's issue when that takes longer */
        double host = c->host0 + c->host_seg * sd->num_segs;
        if (host > ms) {
            bd->op_s[OP_HOST] = (host - ms) * 1e-3;
            ms = host;
        }
    }
    bd->total_s = ms * 1e-3;
    *seconds = bd->total_s;
    return 0;
}

/* --- report ------------------------------------------------------------------------------ */

void calib_show(const struct calib *c, FILE *out)
{
    const struct calib_data *d = c->data;
    size_t uneven = 0; /* attention rows of uneven steps: one a step */
    for (size_t i = 0; d && i < d->n; i++)
        uneven += d->rows[i].kv_long > 0 && d->rows[i].op == OP_ATTN;
    fprintf(out, "calibration of %s on %s: %zu profile rows, steps up to %lld packed tokens, attention "
                 "launch rules %d", c->model, c->device, d ? d->n : 0, (long long)c->max_T, c->attn_rules);
    if (uneven)
        fprintf(out, ", %zu uneven steps", uneven);
    fputc('\n', out);
    fprintf(out, "%-10s %-40s %12s %12s\n", "op", "model", "rms rel res", "max rel res");
    for (int op = 0; op < OP_COUNT; op++) {
        const struct curve *cv = op == OP_LM_HEAD ? &c->lm : op == OP_SAMPLE ? &c->sample : &c->tok[op];
        char model[64];
        if (op == OP_ATTN)
            snprintf(model, sizeof model, "least squares, %d features", ATTN_FEATURES);
        else if (cv->n)
            snprintf(model, sizeof model, "monotone over %d %s (%.0f..%.0f)", cv->n,
                     op == OP_LM_HEAD || op == OP_SAMPLE ? "chunk sizes" : "token counts", cv->x[0],
                     cv->x[cv->n - 1]);
        else
            continue;
        double ss = 0, mx = 0;
        int n = 0;
        for (size_t i = 0; d && i < d->n; i++) {
            const struct calib_row *r = &d->rows[i];
            if ((int)r->op != op || r->ms <= 0)
                continue;
            struct step_desc sd;
            step_desc_init(&sd);
            sd.logit_chunk_rows = PROFILE_CHUNK_DEFAULT;
            calib_row_step(r, &sd);
            double secs;
            struct cost_breakdown bd;
            if (calib_step_s(c, &sd, true, &secs, &bd, NULL) == 0 &&
                (op != OP_NORM || r->logit_rows == 0)) { /* the final norm is folded into norm rows */
                double rel = (bd.op_s[op] * 1e3 - r->ms) / r->ms;
                ss += rel * rel;
                mx = fmax(mx, fabs(rel));
                n++;
            }
            step_desc_free(&sd);
        }
        fprintf(out, "%-10s %-40s %11.2f%% %11.2f%%\n", cost_op_name((enum cost_op)op), model,
                n ? 100 * sqrt(ss / n) : 0.0, 100 * mx);
    }
    static const char *const term[ATTN_FEATURES] = {" sum q(q+kv)", " sum ceil(q/64)(q+kv)", " sum q", " segs",
                                                    " max(q+kv)", "", " sum kv", " sum_long q(q+kv)",
                                                    " sum_long ceil(q/128)(q+kv)", " mma_waves*keys_a_block"};
    fprintf(out, "attention (ms) =");
    for (int i = 0; i < ATTN_FEATURES; i++)
        fprintf(out, "%s%.4g%s", i == 0 ? " " : c->beta[i] < 0 ? " - " : " + ", i == 0 ? c->beta[i] : fabs(c->beta[i]),
                term[i]);
    fprintf(out, "\n");
    if (c->host_bound)
        fprintf(out, "host: a step takes max(host, GPU); host issue (ms) = %.4g + %.4g segs (fitted on %d "
                     "host-bound steps); eager GPU-bound steps add %.3g ms of launch gaps\n",
                c->host0, c->host_seg, c->host_steps, c->eager_gap);
}
