/* rounds.c: a runtime priced by its rounds measured whole (rounds.h). */
#include "rounds.h"

#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS_SVD_TOL 1e-10

static const char *const mode_names[ROUND_MODES] = {[ROUND_FDFO] = "fdfo", [ROUND_SYNC] = "sync"};
static const char *const phase_names[ROUNDS_PHASES] = {[ROUNDS_PREFILL] = "prefill", [ROUNDS_DENOISE] = "denoise"};

void rounds_shipped_path(const char *datadir, const char *gpu, const char *model, const char *impl, char *out,
                         size_t len)
{
    snprintf(out, len, "%s/rounds/%s-%s-%s.csv", datadir, gpu, model, impl);
}

struct row {
    int mode, phase;
    long line;
    int32_t n, g;
    double kv, k, fwd_ms, host_ms; /* kv: a request's sequence; k: keys summed, thousands */
};

static const char *const cols[] = {"device", "model", "impl", "mode", "phase", "requests", "graph",
                                   "kv_per_request", "rounds", "forward_ms", "host_ms"};
enum { C_DEVICE, C_MODEL, C_IMPL, C_MODE, C_PHASE, C_REQS, C_GRAPH, C_KV, C_ROUNDS, C_FWD, C_HOST, NCOLS };

static int name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* line's fields, split in place at the commas, into f (at most max); their count. */
static int split_commas(char *line, char **f, int max)
{
    int nf = 0;
    for (char *p = line; nf < max;) {
        f[nf++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    return nf;
}

/* One data line into r. */
static int parse_row(const char *path, long lineno, char *line, const int *idx, const char *gpu, const char *model,
                     const char *impl, struct row *r, struct ts_err *err)
{
    char *f[NCOLS + 8];
    const int nf = split_commas(line, f, NCOLS + 8);
    for (int c = 0; c < NCOLS; c++)
        if (idx[c] >= nf)
            return ts_fail(err, "%s:%ld: %s: missing field", path, lineno, cols[c]);
    const char *want[] = {gpu, model, impl};
    for (int c = C_DEVICE; c <= C_IMPL; c++)
        if (!ts_name_eq(f[idx[c]], want[c]))
            return ts_fail(err, "%s:%ld: %s: '%s', but the run's is '%s'", path, lineno, cols[c], f[idx[c]], want[c]);
    r->mode = name_index(mode_names, ROUND_MODES, f[idx[C_MODE]]);
    if (r->mode < 0)
        return ts_fail(err, "%s:%ld: mode: fdfo or sync ('%s')", path, lineno, f[idx[C_MODE]]);
    r->phase = name_index(phase_names, ROUNDS_PHASES, f[idx[C_PHASE]]);
    if (r->phase < 0)
        return ts_fail(err, "%s:%ld: phase: prefill or denoise ('%s')", path, lineno, f[idx[C_PHASE]]);
    int64_t n, g, rounds;
    double kv;
    if (ts_parse_i64(f[idx[C_REQS]], &n) || n < 1 || n > 1 << 16)
        return ts_fail(err, "%s:%ld: requests: not a count of at least 1 ('%s')", path, lineno, f[idx[C_REQS]]);
    if (ts_parse_i64(f[idx[C_GRAPH]], &g) || g < n || g > 1 << 16)
        return ts_fail(err, "%s:%ld: graph: not a batch of at least the round's %lld requests ('%s')", path, lineno,
                       (long long)n, f[idx[C_GRAPH]]);
    if (ts_parse_double(f[idx[C_KV]], &kv) || !(kv >= 0) || kv > 1 << 24)
        return ts_fail(err, "%s:%ld: kv_per_request: not a count of tokens ('%s')", path, lineno, f[idx[C_KV]]);
    if (ts_parse_i64(f[idx[C_ROUNDS]], &rounds) || rounds < 1)
        return ts_fail(err, "%s:%ld: rounds: not a count of at least 1 ('%s')", path, lineno, f[idx[C_ROUNDS]]);
    if (ts_parse_double(f[idx[C_FWD]], &r->fwd_ms) || !(r->fwd_ms > 0) || r->fwd_ms > 1e5)
        return ts_fail(err, "%s:%ld: forward_ms: not a positive time ('%s')", path, lineno, f[idx[C_FWD]]);
    if (ts_parse_double(f[idx[C_HOST]], &r->host_ms) || !(r->host_ms >= 0) || r->host_ms > 1e5)
        return ts_fail(err, "%s:%ld: host_ms: not a time of at least 0 ('%s')", path, lineno, f[idx[C_HOST]]);
    r->n = (int32_t)n, r->g = (int32_t)g, r->kv = kv, r->k = (double)n * kv / 1e3, r->line = lineno;
    return 0;
}

/* Least squares y ~ X b, X at least as tall as it is wide, by truncated SVD (where the rows do not
 * determine the coefficients, the smallest solution). */
static int lsq(gsl_matrix *X, gsl_vector *y, gsl_vector *b, struct ts_err *err)
{
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(X->size1, X->size2);
    gsl_matrix *cov = gsl_matrix_alloc(X->size2, X->size2);
    double chisq;
    size_t rank;
    const int st = gsl_multifit_linear_tsvd(X, y, ROUNDS_SVD_TOL, b, cov, &chisq, &rank, ws);
    gsl_matrix_free(cov);
    gsl_multifit_linear_free(ws);
    return st ? ts_fail(err, "the rounds' least-squares fit failed (GSL error %d)", st) : 0; /* (X's shape is checked) */
}

static double graph_a(const struct rounds_fit *f, int32_t g, bool extrapolate, bool *ok)
{
    *ok = true;
    if (f->graphs == 1) {
        *ok = g == f->graph[0] || extrapolate;
        return f->a[0];
    }
    int j = 0;
    while (j < f->graphs - 2 && g > f->graph[j + 1])
        j++;
    if (g < f->graph[0] || g > f->graph[f->graphs - 1])
        *ok = extrapolate;
    const double x0 = f->graph[j], x1 = f->graph[j + 1];
    return f->a[j] + (f->a[j + 1] - f->a[j]) * ((double)g - x0) / (x1 - x0);
}

static double fit_forward(const struct rounds_fit *f, int32_t n, int32_t g, double k)
{
    bool ok;
    return graph_a(f, g, true, &ok) + f->c_req * (n - g) + f->c_kv * k;
}

static double fit_host(const struct rounds_fit *f, int32_t n, double k) { return f->h0 + f->h1 * n + f->h2 * k; }

static int fit_one(const char *path, const struct row *rows, int nrows, int mode, int phase, struct rounds_fit *f,
                   struct ts_err *err)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < nrows; i++) {
        if (rows[i].mode != mode || rows[i].phase != phase)
            continue;
        f->rows++;
        f->kv_max = TS_MAX(f->kv_max, rows[i].kv);
        int j = 0;
        while (j < f->graphs && f->graph[j] < rows[i].g)
            j++;
        if (j < f->graphs && f->graph[j] == rows[i].g)
            continue;
        if (f->graphs == ROUNDS_MAX_GRAPHS)
            return ts_fail(err, "%s:%ld: graph: more than %d graph batches in %s %s rounds", path, rows[i].line,
                           ROUNDS_MAX_GRAPHS, mode_names[mode], phase_names[phase]);
        memmove(&f->graph[j + 1], &f->graph[j], sizeof f->graph[0] * (size_t)(f->graphs - j));
        f->graph[j] = rows[i].g;
        f->graphs++;
    }
    if (f->rows == 0)
        return 0;
    const size_t p = (size_t)f->graphs + 2;
    if ((size_t)f->rows < p)
        return ts_fail(err, "%s: %s %s rounds: %d rows for %zu coefficients (one a graph batch, and two more)", path,
                       mode_names[mode], phase_names[phase], f->rows, p);
    gsl_matrix *X = gsl_matrix_calloc((size_t)f->rows, p), *H = gsl_matrix_calloc((size_t)f->rows, 3);
    gsl_vector *y = gsl_vector_alloc((size_t)f->rows), *yh = gsl_vector_alloc((size_t)f->rows);
    gsl_vector *b = gsl_vector_alloc(p), *bh = gsl_vector_alloc(3);
    size_t r = 0;
    for (int i = 0; i < nrows; i++) {
        const struct row *w = &rows[i];
        if (w->mode != mode || w->phase != phase)
            continue;
        int j = 0;
        while (f->graph[j] != w->g)
            j++;
        gsl_matrix_set(X, r, (size_t)j, 1.0);
        gsl_matrix_set(X, r, p - 2, (double)(w->n - w->g));
        gsl_matrix_set(X, r, p - 1, w->k);
        gsl_vector_set(y, r, w->fwd_ms);
        gsl_matrix_set(H, r, 0, 1.0);
        gsl_matrix_set(H, r, 1, (double)w->n);
        gsl_matrix_set(H, r, 2, w->k);
        gsl_vector_set(yh, r, w->host_ms);
        r++;
    }
    const int bad = lsq(X, y, b, err) || lsq(H, yh, bh, err);
    if (!bad) {
        for (int j = 0; j < f->graphs; j++)
            f->a[j] = gsl_vector_get(b, (size_t)j);
        f->c_req = gsl_vector_get(b, p - 2), f->c_kv = gsl_vector_get(b, p - 1);
        f->h0 = gsl_vector_get(bh, 0), f->h1 = gsl_vector_get(bh, 1), f->h2 = gsl_vector_get(bh, 2);
        double ss = 0;
        for (int i = 0; i < nrows; i++) {
            const struct row *w = &rows[i];
            if (w->mode != mode || w->phase != phase)
                continue;
            const double pred = fit_forward(f, w->n, w->g, w->k) + TS_MAX(0.0, fit_host(f, w->n, w->k));
            const double meas = w->fwd_ms + w->host_ms;
            ss += (pred - meas) * (pred - meas) / (meas * meas);
        }
        f->rms_pct = 100 * sqrt(ss / f->rows);
    }
    gsl_matrix_free(X), gsl_matrix_free(H);
    gsl_vector_free(y), gsl_vector_free(yh), gsl_vector_free(b), gsl_vector_free(bh);
    return bad ? -1 : 0;
}

int rounds_parse(const char *path, char *text, const char *gpu, const char *model, const char *impl,
                 struct rounds_profile *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->device, sizeof out->device, "%s", gpu);
    snprintf(out->model, sizeof out->model, "%s", model);
    snprintf(out->impl, sizeof out->impl, "%s", impl);
    int idx[NCOLS];
    struct row *rows = NULL;
    int nrows = 0, cap = 0, rc = -1;
    long lineno = 0;
    char *next;
    for (char *line = text; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        const size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        lineno++;
        if (lineno == 1) {
            char *f[NCOLS + 8];
            const int nf = split_commas(line, f, NCOLS + 8);
            for (int c = 0; c < NCOLS; c++) {
                idx[c] = -1;
                for (int i = 0; i < nf; i++)
                    if (strcmp(f[i], cols[c]) == 0)
                        idx[c] = i;
                if (idx[c] < 0) {
                    ts_fail(err, "%s:1: header: column '%s' missing", path, cols[c]);
                    goto done;
                }
            }
            continue;
        }
        if (!line[0])
            continue;
        if (nrows == cap) {
            cap = cap ? 2 * cap : 64;
            rows = xrealloc(rows, sizeof *rows * (size_t)cap);
        }
        if (parse_row(path, lineno, line, idx, gpu, model, impl, &rows[nrows], err))
            goto done;
        nrows++;
    }
    if (lineno == 0) {
        ts_fail(err, "%s: empty (expected a header: %s,...)", path, cols[0]);
        goto done;
    }
    if (nrows == 0) {
        ts_fail(err, "%s: no rounds measured (a header and no rows)", path);
        goto done;
    }
    for (int m = ROUND_FDFO; m < ROUND_MODES; m++)
        for (int ph = 0; ph < ROUNDS_PHASES; ph++)
            if (fit_one(path, rows, nrows, m, ph, &out->fit[m][ph], err))
                goto done;
    rc = 0;
done:
    free(rows);
    return rc;
}

int rounds_load(const char *path, const char *gpu, const char *model, const char *impl, struct rounds_profile *out,
                struct ts_err *err)
{
    char *text;
    if (ts_read_file(path, &text, NULL, err))
        return -1;
    const int rc = rounds_parse(path, text, gpu, model, impl, out, err);
    free(text);
    return rc;
}

int rounds_price(const struct rounds_profile *p, const struct step_desc *sd, const struct round_step *rs,
                 bool extrapolate, double *forward_s, double *host_s, bool *beyond, struct ts_err *err)
{
    if (rs->mode <= ROUND_NONE || rs->mode >= ROUND_MODES)
        return ts_fail(err, "--impl %s prices its own scheduler's rounds, measured whole (%s): give --scheduler sglang "
                            "(or --system sglang)", p->impl, p->path);
    int32_t n = 0;
    double k = 0;
    bool prefill = false;
    for (int32_t i = 0; i < sd->num_segs; i++) {
        const struct segment *s = &sd->segs[i];
        if (s->padding == PAD_GRAPH)
            continue;
        n++;
        k += (double)s->q + (double)s->kv;
        prefill |= s->phase == PHASE_PREFILL;
    }
    TS_ASSERT(n > 0);
    const int ph = prefill ? ROUNDS_PREFILL : ROUNDS_DENOISE;
    const struct rounds_fit *f = &p->fit[rs->mode][ph];
    if (f->rows == 0)
        return ts_fail(err, "%s: no %s %s rounds measured", p->path, mode_names[rs->mode], phase_names[ph]);
    bool ok, within;
    (void)graph_a(f, sd->num_segs, false, &within);
    (void)graph_a(f, sd->num_segs, extrapolate, &ok);
    if (!ok)
        return ts_fail(err, "%s: a %s round of %d rows lies outside the measured graph batches (%d to %d; "
                            "--extrapolate prices it on the line through the nearest two)",
                       p->path, mode_names[rs->mode], (int)sd->num_segs, (int)f->graph[0],
                       (int)f->graph[f->graphs - 1]);
    if (!extrapolate && k / n > f->kv_max)
        return ts_fail(err, "%s: a %s %s round's requests hold %.0f keys each, beyond the measured %.0f (--extrapolate "
                            "prices them on the fit's lines)", p->path, mode_names[rs->mode], phase_names[ph],
                       k / n, f->kv_max);
    *beyond = !within || k / n > f->kv_max;
    *forward_s = TS_MAX(fit_forward(f, n, sd->num_segs, k / 1e3), 1e-3) / 1e3;
    *host_s = rs->begins ? TS_MAX(0.0, fit_host(f, n, k / 1e3)) / 1e3 : 0;
    return 0;
}
