/* calib_data.c: calibration profiles as data: reading them (CSV, profile databases), writing,
 * merging several machines' profiles, and validating them against the roofline. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "calib.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_rules.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"
#include "sim.h"
#include "whole.h"

void calib_data_free(struct calib_data *d)
{
    if (!d)
        return;
    free(d->rows);
    memset(d, 0, sizeof *d);
}

int calib_user_dir(char *out, size_t len)
{
    const char *dir = getenv("TESSERA_CALIB_DIR"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (dir && *dir)
        snprintf(out, len, "%s", dir);
    else if (xdg && *xdg)
        snprintf(out, len, "%s/tessera/calib", xdg);
    else if (home && *home)
        snprintf(out, len, "%s/.local/share/tessera/calib", home);
    else
        return -1;
    return 0;
}

void calib_shipped_path(const char *datadir, const char *gpu, const char *model, const char *impl, char *out,
                        size_t len)
{
    char user[1024];
    if (calib_user_dir(user, sizeof user) == 0) { /* one calibrated on this machine comes first */
        snprintf(out, len, "%s/%s-%s-%s.csv", user, gpu, model, impl);
        if (access(out, R_OK) == 0)
            return;
    }
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

/* A row's selection fields (NULL: the column is absent, 0): keep a count its segment's candidates
 * (q - PROFILE_SCORE_ROWS) hold, sel_heads 0 or 1. */
static int parse_selection(const char *path, long lineno, const char *keep, const char *heads, struct calib_row *r,
                           struct ts_err *err)
{
    int64_t k = 0, h = 0;
    if (keep && (ts_parse_i64(keep, &k) || k < 0 || (k > 0 && (r->kv != 0 || k > r->q - PROFILE_SCORE_ROWS))))
        return ts_fail(err, "%s:%ld: keep: not a count of the step's candidates, q - %d with kv 0 ('%s')", path,
                       lineno, PROFILE_SCORE_ROWS, keep);
    if (heads && (ts_parse_i64(heads, &h) || h < 0 || h > 1))
        return ts_fail(err, "%s:%ld: sel_heads: not 0 or 1 ('%s')", path, lineno, heads);
    r->keep = (int32_t)k;
    r->sel_heads = (int32_t)h;
    return 0;
}

/* A row's dLLM-Cache fields (NULL: the column is absent, 0): fc_rows the segment's hidden rows, q
 * computed over the kv others, its logits over none or all of them; probe at most fc_rows, and at
 * least the q picked among it. */
static int parse_fc(const char *path, long lineno, const char *rows, const char *probe, struct calib_row *r,
                    struct ts_err *err)
{
    int64_t n = 0, p = 0;
    if (rows && (ts_parse_i64(rows, &n) || n < 0 ||
                 (n > 0 && ((int64_t)r->q + r->kv != n || r->keep || r->kv_long || (r->logit_rows && r->logit_rows != n)))))
        return ts_fail(err, "%s:%ld: fc_rows: not a dLLM-Cache step's rows, q + kv, with logits over none or all of "
                            "them, without selection or uneven caches ('%s')", path, lineno, rows);
    if (probe && (ts_parse_i64(probe, &p) || p < 0 || (p > 0 && (n == 0 || p > n || p < r->q))))
        return ts_fail(err, "%s:%ld: probe: not a count of a dLLM-Cache step's rows its q are picked among ('%s')",
                       path, lineno, probe);
    r->fc_rows = (int32_t)n;
    r->probe = (int32_t)p;
    return 0;
}

/* A mixed step (q_long > 0) has a Reuse block beside its Refresh and no logits (its blocks' LM head
 * is measured by the even steps). */
static int mixed_check(const char *path, long lineno, const struct calib_row *r, struct ts_err *err)
{
    if (r->q_long > 0 && (r->segs < 2 || r->logit_rows))
        return ts_fail(err, "%s:%ld: q_long: a mixed step needs 2 or more segments and no logits (segs %d, "
                            "logit_rows %d)", path, lineno, r->segs, r->logit_rows);
    return 0;
}

int calib_data_parse(const char *path, char *text, struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    static const char *const cols[] = {"device", "model", "segs", "q", "kv", "logit_rows", "op", "ms",
                                       "total_ms", "gpu_ms", "host_ms", "attn_rules", "kv_long", "keep",
                                       "sel_heads", "fc_rows", "probe", "q_long"};
    enum { NCOLS = 18 };
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
        int64_t q_long = 0;
        if (idx[17] >= 0 && (ts_parse_i64(f[idx[17]], &q_long) || q_long < 0 || q_long > 1 << 24)) {
            ts_fail(err, "%s:%ld: q_long: not a count ('%s')", path, lineno, f[idx[17]]);
            goto done;
        }
        r.q_long = (int32_t)q_long;
        if (mixed_check(path, lineno, &r, err))
            goto done;
        if (parse_selection(path, lineno, idx[13] >= 0 ? f[idx[13]] : NULL, idx[14] >= 0 ? f[idx[14]] : NULL, &r,
                            err) ||
            parse_fc(path, lineno, idx[15] >= 0 ? f[idx[15]] : NULL, idx[16] >= 0 ? f[idx[16]] : NULL, &r, err))
            goto done;
        if (r.kv_long > 0 && r.segs < 2) {
            ts_fail(err, "%s:%ld: kv_long: an uneven step needs 2 or more segments (segs %d)", path, lineno,
                    r.segs);
            goto done;
        }
        int64_t rules = 1;
        if (idx[11] >= 0 && (ts_parse_i64(f[idx[11]], &rules) || rules < 1 || rules > ATTN_RULES)) {
            ts_fail(err, "%s:%ld: attn_rules: not a version of the engine's attention launch rules this "
                         "build knows (1..%d): '%s'", path, lineno, ATTN_RULES, f[idx[11]]);
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
    if (db_open_read(path, &db) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open", path);
        goto done;
    }
    /* profiles from before the uneven steps have no kv_long column (every step even), and those
     * from before the rules versions no attn_rules column either (version 1) */
    static const char *const queries[] = {
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, kv_long, keep, sel_heads, "
        "fc_rows, probe, q_long FROM engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, kv_long, keep, sel_heads, "
        "fc_rows, probe, 0 FROM engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, kv_long, keep, sel_heads, 0, 0, "
        "0 FROM engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, kv_long, 0, 0, 0, 0, 0 FROM "
        "engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, attn_rules, 0, 0, 0, 0, 0, 0 FROM "
        "engine_profile",
        "SELECT device, model, segs, q, kv, logit_rows, op, ms, total_ms, 1, 0, 0, 0, 0, 0, 0 FROM engine_profile"};
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
                              .q_long = sqlite3_column_int(st, 15),
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
        if (r.q_long < 0 || mixed_check(path, row, &r, err))
            goto done;
        char keep[24], heads[24];
        snprintf(keep, sizeof keep, "%d", sqlite3_column_int(st, 11));
        snprintf(heads, sizeof heads, "%d", sqlite3_column_int(st, 12));
        char rows[24], probe[24];
        snprintf(rows, sizeof rows, "%d", sqlite3_column_int(st, 13));
        snprintf(probe, sizeof probe, "%d", sqlite3_column_int(st, 14));
        if (parse_selection(path, row, keep, heads, &r, err) || parse_fc(path, row, rows, probe, &r, err))
            goto done;
        const int rules = sqlite3_column_type(st, 9) == SQLITE_NULL ? 1 : sqlite3_column_int(st, 9);
        if (rules < 1 || rules > ATTN_RULES) {
            ts_fail(err, "%s: engine_profile row %ld: attn_rules: %d is not a version of the engine's "
                         "attention launch rules this build knows (1..%d)", path, row, rules, ATTN_RULES);
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

bool calib_data_host_split(const struct calib_data *d)
{
    return d->n > 0 && d->rows[0].gpu_ms > 0;
}

int calib_data_write(const struct calib_data *d, const char *path, struct ts_err *err)
{
    /* (whole or not at all: a calibration already at path stays as it was where this one fails) */
    struct ts_whole w;
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
        return -1;
    FILE *f = w.f;
    const bool split = calib_data_host_split(d);
    bool uneven = false, selects = false, fc = false, mixed = false; /* kv_long, keep, sel_heads, fc_rows,
                                                                    * probe and q_long only where a step
                                                                    * uses them: older files stay as they
                                                                    * were */
    for (size_t i = 0; i < d->n; i++) {
        mixed = mixed || d->rows[i].q_long > 0;
        uneven = uneven || d->rows[i].kv_long > 0 || mixed;
        selects = selects || d->rows[i].keep > 0;
        fc = fc || d->rows[i].fc_rows > 0;
    }
    fprintf(f, "device,model,segs,q,kv,logit_rows,op,ms,total_ms%s,attn_rules%s%s%s%s\n", split ? ",gpu_ms,host_ms" : "",
            uneven || selects || fc ? ",kv_long" : "", selects || fc ? ",keep,sel_heads" : "", fc ? ",fc_rows,probe" : "",
            mixed ? ",q_long" : "");
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        fprintf(f, "\"%s\",%s,%d,%d,%d,%d,%s,%.9g,%.9g", d->device, d->model, r->segs, r->q, r->kv,
                r->logit_rows, cost_op_name(r->op), r->ms, r->total_ms);
        if (split)
            fprintf(f, ",%.9g,%.9g", r->gpu_ms, r->host_ms);
        fprintf(f, ",%d", TS_MAX(1, d->attn_rules));
        if (uneven || selects || fc)
            fprintf(f, ",%d", r->kv_long);
        if (selects || fc)
            fprintf(f, ",%d,%d", r->keep, r->sel_heads);
        if (fc)
            fprintf(f, ",%d,%d", r->fc_rows, r->probe);
        if (mixed)
            fprintf(f, ",%d", r->q_long);
        fputc('\n', f);
    }
    return ts_whole_close(&w, false, err);
}

/* Distinct token counts measured for op (the norm's: rows without logits, whose norm holds the final one). */
static int distinct_tokens(const struct calib_data *d, enum cost_op op)
{
    int64_t seen[64];
    int n = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        if (r->op != op || (r->logit_rows && op == OP_NORM))
            continue;
        int64_t T = step_shape_rows(&r->shape);
        bool dup = false;
        for (int j = 0; j < n; j++)
            dup |= seen[j] == T;
        if (!dup && n < 64)
            seen[n++] = T;
    }
    return n;
}

/* A row's step and op, with its index, for finding the same op of the same step twice. */
struct row_key {
    int32_t k[11];
    size_t i;
};

static struct row_key row_key_of(const struct calib_row *r, size_t i)
{
    return (struct row_key){{r->segs, r->q, r->kv, r->logit_rows, r->kv_long, r->keep, r->sel_heads, r->fc_rows,
                             r->probe, r->q_long, (int32_t)r->op},
                            i};
}

static int cmp_row_key(const void *a, const void *b)
{
    const struct row_key *x = a, *y = b;
    for (int j = 0; j < (int)TS_ARRAY_LEN(x->k); j++)
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

/* Whether a profile is a part to merge into a whole one: it lacks the base grid's one-token steps,
 * which every whole profile has (the select or fc grid alone: no logits, so no LM head; the ladder
 * alone: steps of 96 to 2,048 tokens, its norm rows with logits holding the final norm). */
bool calib_data_is_part(const struct calib_data *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].q == 1 && d->rows[i].keep == 0 && d->rows[i].fc_rows == 0)
            return false;
    return d->n > 0;
}

/* Whether every step of a part has no logits (a select part, or an fc part without the partial
 * updates' logit twins), so no LM head */
static bool part_without_logits(const struct calib_data *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].logit_rows > 0)
            return false;
    return calib_data_is_part(d);
}

/* The ops a profile measured, as a bit mask; kv_select and feat_cache only where its grid had
 * selecting or dLLM-Cache steps, so they tell no implementation apart. */
static unsigned op_mask(const struct calib_data *d)
{
    unsigned m = 0;
    for (size_t i = 0; i < d->n; i++)
        m |= 1u << d->rows[i].op;
    return m & ~(1u << OP_KV_SELECT | 1u << OP_FEAT_CACHE);
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
    const bool sa = calib_data_host_split(a), sb = calib_data_host_split(b);
    if (sa != sb)
        return ts_fail(err, "%s: %s the host/GPU split (gpu_ms, host_ms) and %s %s (different implementations)",
                       bn, sb ? "measures" : "does not measure", an, sa ? "does" : "does not");
    /* a part without logits has no LM head: its ops are a subset of the whole profile's */
    const unsigned lm = part_without_logits(a) || part_without_logits(b) ? 1u << OP_LM_HEAD | 1u << OP_SAMPLE : 0;
    const unsigned ma = op_mask(a) & ~lm, mb = op_mask(b) & ~lm;
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
    size_t replaced;
    return calib_data_merge_over(in, names, n_in, 0, out, partial, &replaced, err);
}

int calib_data_merge_over(const struct calib_data *in, const char *const *names, size_t n_in, size_t n_over,
                          struct calib_data *out, size_t *partial, size_t *replaced, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    *partial = *replaced = 0;
    if (n_in < 2)
        return ts_fail(err, "a merge takes two or more profiles (%zu given)", n_in);
    if (n_over >= n_in)
        return ts_fail(err, "a merge over profiles needs one other profile at least (%zu given, %zu over)", n_in,
                       n_over);
    const size_t n_base = n_in - n_over;
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
    bool over = false; /* whether an --over input holds the step of keys[a] */
    const size_t step_k = sizeof keys[0].k - sizeof keys[0].k[0]; /* the key less its op, the last */
    for (size_t a = 0, b; a < total; a = b) {
        if (a == 0 || memcmp(keys[a].k, keys[a - 1].k, step_k) != 0) { /* a new step */
            over = false;
            for (size_t j = a; j < total && memcmp(keys[j].k, keys[a].k, step_k) == 0 && !over; j++)
                over = input[keys[j].i] >= n_base;
        }
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
        size_t k = 0, first = 0;
        double *ms = v, *tot = v + n_in, *gpu = v + 2 * n_in, *host = v + 3 * n_in;
        for (size_t j = a; j < b; j++) {
            if (over && input[keys[j].i] < n_base) {
                ++*replaced;
                continue;
            }
            const struct calib_row *r = row[keys[j].i];
            if (k == 0)
                first = keys[j].i; /* the smallest index of those taken: sorted by it within a key */
            ms[k] = r->ms, tot[k] = r->total_ms, gpu[k] = r->gpu_ms, host[k] = r->host_ms;
            k++;
        }
        if (k == 0) /* an op the --over profiles lack in a step they hold */
            continue;
        m[nm].first = first;
        m[nm].r = *row[first];
        m[nm].r.ms = median_of(ms, k);
        m[nm].r.total_ms = median_of(tot, k);
        m[nm].r.gpu_ms = median_of(gpu, k);
        m[nm].r.host_ms = median_of(host, k);
        *partial += k < (over ? n_over : n_base);
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
    return calib_data_validate_on(d, gpu_name, NULL, err);
}

/* Whether a profile's device string names the card gpu_name is: a transferred calibration names its
 * target first ("h100 (roofline transfer from ...)"); a measured one, the driver's name of the card
 * ("NVIDIA H200 (sm_90, 132 SMs)"), which is matched against the cards of tessera's table. A device
 * of none of them, or a GPU a --gpu-file describes, is taken at its word: true. */
static bool device_is(const char *device, const char *gpu_name)
{
    const size_t n = strlen(gpu_name);
    if (strncmp(device, gpu_name, n) == 0 && strncmp(device + n, " (roofline transfer", 19) == 0)
        return true;
    if (strstr(device, "(roofline transfer")) { /* another target's */
        const char *sp = strchr(device, ' ');
        return (size_t)(sp - device) == n && strncmp(device, gpu_name, n) == 0;
    }
    /* a card of the table (a --gpu-file's entry, or a device of none, is taken at its word) */
    const char *card = gpu_of_device(device, 0);
    return !card || !gpu_is_builtin(gpu_name) || strncmp(gpu_name, card, strlen(card)) == 0;
}

int calib_data_validate_on(const struct calib_data *d, const char *gpu_name, const char *gpu_file, struct ts_err *err)
{
    if (no_duplicate_rows(d, err))
        return -1;
    /* the named model and GPU must be able to produce these GEMM times */
    struct model_cfg m;
    struct gpu_spec g;
    struct gpu_table *t = gpu_table_create();
    int rc = model_resolve(d->model, &m, err) || (gpu_file && gpu_load_file(t, gpu_file, err)) ||
                     gpu_lookup(t, gpu_name, &g, err)
                 ? -1
                 : 0;
    gpu_table_destroy(t);
    if (rc)
        return -1;
    if (!device_is(d->device, g.name))
        return ts_fail(err, "a calibration measured on %s, used for %s: carry it over first (tessera calib "
                            "transfer FILE --from GPU --to %s --out FILE), or measure one on that GPU (make calibrate)",
                       d->device, g.name, g.name);
    /* the dense layers' FFNs and the MoE layers' shared experts */
    const double width = (double)m.ffn * (m.num_layers - model_num_moe_layers(&m)) +
                         (double)m.moe_ffn * m.num_shared_experts * model_num_moe_layers(&m);
    const enum cost_op needed[] = {OP_NORM, OP_QKV, OP_ROPE, OP_ATTN, OP_OPROJ, OP_GATE_UP, OP_ACT,
                                   OP_DOWN, OP_LM_HEAD, OP_SAMPLE, OP_ROUTER, OP_EXPERTS};
    for (size_t i = 0; i < TS_ARRAY_LEN(needed); i++) {
        bool token_op = needed[i] != OP_LM_HEAD && needed[i] != OP_SAMPLE && needed[i] != OP_ATTN;
        bool ffn = needed[i] == OP_GATE_UP || needed[i] == OP_ACT || needed[i] == OP_DOWN;
        if ((ffn && width == 0) || ((needed[i] == OP_ROUTER || needed[i] == OP_EXPERTS) && m.num_experts == 0))
            continue; /* a model without dense FFNs, or without experts */
        int n = 0;
        for (size_t j = 0; j < d->n; j++)
            n += d->rows[j].op == needed[i];
        if (n == 0 && needed[i] == OP_ACT)
            continue; /* a fused FFN's profile (tessera-fused): SwiGLU runs inside gate_up */
        if (n == 0 && (needed[i] == OP_LM_HEAD || needed[i] == OP_SAMPLE) && part_without_logits(d))
            continue; /* the select grid alone: its steps have no logits */
        if (n == 0)
            return ts_fail(err, "profile of %s on %s: no rows for op %s", d->model, d->device,
                           cost_op_name(needed[i]));
        if (token_op && distinct_tokens(d, needed[i]) < 3)
            return ts_fail(err, "profile of %s on %s: op %s is measured at fewer than 3 token counts",
                           d->model, d->device, cost_op_name(needed[i]));
    }
    for (size_t j = 0; j < d->n; j++) {
        const struct calib_row *r = &d->rows[j];
        if (r->op != OP_GATE_UP || r->logit_rows || r->fc_rows)
            continue; /* (a dLLM-Cache step's rows differ by layer) */
        double T = (double)step_shape_rows(&r->shape);
        double flops = 2.0 * T * m.hidden * 2.0 * width;
        double bytes = 2.0 * 2.0 * width * m.hidden;
        double floor_ms = fmax(flops / g.bf16_flops, bytes / g.mem_bw) * 1e3;
        double ratio = r->ms / floor_ms;
        if (ratio < 0.7 || ratio > 20)
            return ts_fail(err, "profile claims %s on %s, but gate_up at %.0f tokens takes %.3f ms, %.2fx "
                                "the roofline floor of that model on %s: a profile of another model or "
                                "GPU?", d->model, d->device, T, r->ms, ratio, g.name);
    }
    return 0;
}
