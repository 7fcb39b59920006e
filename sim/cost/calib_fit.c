/* calib_fit.c: fitting a calibration to its profile (calib.h): the token-driven ops' curves, least
 * squares for the attention model, the selection and the feature cache (over the features
 * calib_price.c defines), and the host line of eager frameworks; its release and what it names. */
#include "calib_internal.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Whether two profile rows belong to the same profiled step. */
static bool same_step(const struct calib_row *a, const struct calib_row *b)
{
    return a->segs == b->segs && a->q == b->q && a->kv == b->kv && a->logit_rows == b->logit_rows &&
           a->kv_long == b->kv_long && a->keep == b->keep && a->sel_heads == b->sel_heads && a->fc_rows == b->fc_rows &&
           a->probe == b->probe && a->q_long == b->q_long;
}

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
    curve_free(&c->lm_carry);
    curve_free(&c->sample_carry);
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

/* The attention fit's rows: every profile step's attention but a dLLM-Cache step's (its attention
 * differs by layer). */
static bool attn_row(const struct calib_row *r, const struct calib *c, int kind)
{
    (void)c, (void)kind;
    return r->op == OP_ATTN && r->fc_rows == 0;
}

static void attn_row_features(const struct calib_row *r, const struct calib *c, double *f)
{
    calib_attn_features(r, c->heads, c->kv_heads, c->sms, c->attn_rules, f);
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

double calib_step_ops_ms(const struct calib_data *d, const struct calib_row *r)
{
    double sum = 0;
    for (size_t j = 0; j < d->n; j++) {
        const struct calib_row *s = &d->rows[j];
        if (same_step(s, r))
            sum += s->ms;
    }
    return sum;
}

/* An engine's per-op times come from event-instrumented runs, which add a little to each op;
 * total_ms is the same step timed without the events.  Scale every op of a step so the ops sum to
 * the un-instrumented total, down or up: a total above the sum is, on large steps, run-to-run noise
 * (a constant taken from it would land on every small step) and, on small ones, launch gaps that
 * belong to that shape. gap >= 0: a host/GPU split profile (eager PyTorch, each op timed from a CUDA
 * graph of its own, summing to about the step's GPU time): scale to the GPU time an eager step
 * sees, gpu_ms + gap. */
static void scale_to_totals(const struct calib_data *in, double gap, struct calib_data *out)
{
    for (size_t i = 0; i < in->n; i++) {
        const struct calib_row *r = &in->rows[i];
        double target = gap >= 0 ? r->gpu_ms + gap : r->total_ms;
        if (target <= 0)
            continue;
        double sum = calib_step_ops_ms(in, r);
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
    size_t ng = 0, nh = 0, ns = 0;
    { /* the selecting steps after the others: their loop's host time is a term of its own (below) */
        const struct calib_row **sel = xmalloc(sizeof *sel * (n ? n : 1));
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (steps[i]->keep > 0)
                sel[ns++] = steps[i];
            else
                steps[k++] = steps[i];
        memcpy(steps + k, sel, sizeof *sel * ns);
        free(sel);
        n = k;
    }
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
        /* how far the steps lie from the line: a host's issue rate varies from step to step and
         * drifts between states for minutes at a time, which no line follows */
        for (size_t i = 0; i < nh; i++)
            y[i] /= fmax(c->host0 + c->host_seg * x[i], 1e-9);
        gsl_sort(y, 1, nh);
        c->host_lo = gsl_stats_quantile_from_sorted_data(y, 1, nh, 0.1);
        c->host_hi = gsl_stats_quantile_from_sorted_data(y, 1, nh, 0.9);
    }
    c->host_steps = (int)nh;
    c->host_bound = true;
    /* what a selecting step takes beyond max(host, GPU) of the same step without the loop, a selecting
     * segment (the loop runs a segment at a time): the median over the profile's selecting steps */
    for (size_t i = 0; i < ns; i++) {
        const struct calib_row *r = steps[n + i];
        const double base = fmax(c->host0 + c->host_seg * r->segs, r->gpu_ms + c->eager_gap);
        y[i] = fmax(0.0, r->total_ms - base) / r->segs;
    }
    qsort(y, ns, sizeof *y, cmp_double);
    c->host_sel = ns ? y[ns / 2] : 0;
    c->host_sel_steps = (int)ns;
    free(steps), free(gaps), free(x), free(y);
}

/* Which rows a least-squares fit takes and its features (a row's p features into f). */
struct row_fit {
    bool (*take)(const struct calib_row *r, const struct calib *c, int kind);
    void (*features)(const struct calib_row *r, const struct calib *c, double *f);
    int p, kind;
};

/* The rows of d that the fit takes. */
static size_t fit_count(const struct calib_data *d, const struct calib *c, const struct row_fit *rf)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += rf->take(&d->rows[i], c, rf->kind);
    return n;
}

/* Weighted least squares (weights 1/y^2: relative errors) of the taken rows' times on their
 * features, the coefficients into beta[rf->p]; -1 when GSL's fit fails. Directions of the features
 * whose singular values fall below FIT_SVD_TOL of the largest are left out (truncated SVD): a
 * profile whose wgmma segments are all multiples of 128 rows holds their pairs at exactly 128 times
 * their 128-row tiles' keys, and a fit that keeps that direction by rounding alone prices any other
 * length with coefficients of 1e7 and more. */
#define FIT_SVD_TOL 1e-10
static int fit_rows(const struct calib_data *d, const struct calib *c, const struct row_fit *rf, double *beta)
{
    const size_t n = fit_count(d, c, rf), p = (size_t)rf->p;
    gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *Y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *b = gsl_vector_alloc(p);
    double *f = xmalloc(sizeof *f * p);
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct calib_row *r = &d->rows[i];
        if (!rf->take(r, c, rf->kind))
            continue;
        rf->features(r, c, f);
        for (size_t j = 0; j < p; j++)
            gsl_matrix_set(X, k, j, f[j]);
        gsl_vector_set(Y, k, r->ms);
        gsl_vector_set(w, k++, 1.0 / fmax(r->ms * r->ms, 1e-12));
    }
    double chisq;
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, p);
    size_t rank;
    const int st = gsl_multifit_wlinear_tsvd(X, w, Y, FIT_SVD_TOL, b, cov, &chisq, &rank, ws);
    for (size_t j = 0; j < p; j++)
        beta[j] = gsl_vector_get(b, j);
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(X), gsl_matrix_free(cov), gsl_vector_free(Y), gsl_vector_free(w), gsl_vector_free(b);
    free(f);
    return st ? -1 : 0;
}

/* The selection's time (kv_select) per kind of kept set, by least squares over the selecting
 * profile steps (weights 1/y^2: relative errors); a kind the profile has no steps of is not fitted
 * (pricing such a step then fails, naming it). */
static bool select_row(const struct calib_row *r, const struct calib *c, int heads)
{
    (void)c;
    return r->op == OP_KV_SELECT && r->keep > 0 && r->sel_heads == heads;
}

static void select_row_features(const struct calib_row *r, const struct calib *c, double *f)
{
    (void)c;
    const int64_t cand = r->q - PROFILE_SCORE_ROWS;
    calib_select_features(r->segs, r->segs * cand, cand, f);
}

static int fit_select(const struct calib_data *d, struct calib *c, struct ts_err *err)
{
    for (int heads = 0; heads < 2; heads++) {
        const struct row_fit rf = {select_row, select_row_features, SELECT_FEATURES, heads};
        const size_t n = fit_count(d, c, &rf);
        if (n == 0)
            continue;
        if (n < SELECT_FEATURES + 2)
            return ts_fail(err, "calibration: kv_select (%s) needs at least %d measured shapes, the profile has %zu",
                           heads ? "per head" : "uniform", SELECT_FEATURES + 2, n);
        if (fit_rows(d, c, &rf, c->sel[heads]))
            return ts_fail(err, "calibration: the kv_select fit failed");
        c->has_sel[heads] = true;
    }
    return 0;
}

/* The feature cache's time (feat_cache), by least squares over the profile's dLLM-Cache steps
 * (weights 1/y^2: relative errors); a profile without them is not fitted (the time is then
 * composed from the curves: feat_cache_ms). */
static bool fc_row(const struct calib_row *r, const struct calib *c, int kind)
{
    (void)c, (void)kind;
    return r->op == OP_FEAT_CACHE && r->fc_rows > 0;
}

static void fc_row_features(const struct calib_row *r, const struct calib *c, double *f)
{
    (void)c;
    calib_fc_features((int64_t)r->segs * r->probe, (int64_t)r->segs * r->q, (int64_t)r->segs * r->fc_rows,
                (double)r->segs * r->probe * r->probe, f);
}

static int fit_fc(const struct calib_data *d, struct calib *c, struct ts_err *err)
{
    const struct row_fit rf = {fc_row, fc_row_features, FC_FEATURES, 0};
    const size_t n = fit_count(d, c, &rf);
    if (n == 0)
        return 0;
    if (n < FC_FEATURES + 2)
        return ts_fail(err, "calibration: feat_cache needs at least %d measured dLLM-Cache shapes, the profile has %zu",
                       FC_FEATURES + 2, n);
    if (fit_rows(d, c, &rf, c->fc))
        return ts_fail(err, "calibration: the feat_cache fit failed");
    c->has_fc = true;
    return 0;
}

int calib_fit(const struct calib_data *in, struct calib **out, struct ts_err *err)
{
    if (calib_data_is_part(in))
        return ts_fail(err, "a part of a profile (engine profile --grid ladder, select or fc alone) is not a "
                            "calibration: merge it into a whole profile (tessera calib merge WHOLE PART ...)");
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
    /* the token ops' curves over every step's packed tokens, with logits or without (an op's time does
     * not depend on them: the ladder's blocks of 32 give the GEMMs' steps between the base grid's
     * counts), but the norm's: with logits its rows hold the final norm too */
    for (size_t k = 0; k < TS_ARRAY_LEN(token_ops); k++) {
        enum cost_op op = token_ops[k];
        int n = 0;
        for (size_t i = 0; i < d->n; i++)
            if (d->rows[i].op == op && (d->rows[i].logit_rows == 0 || op != OP_NORM) && d->rows[i].fc_rows == 0) {
                x[n] = (double)step_shape_rows(&d->rows[i].shape);
                y[n++] = d->rows[i].ms;
                c->max_T = TS_MAX(c->max_T, (int64_t)x[n - 1]);
            }
        if (n == 0)
            continue; /* an op this implementation does not run */
        if (curve_build(&c->tok[op], x, y, n, cost_op_name(op), err))
            goto done;
    }
    /* LM head and sampling: per-chunk points, of the steps that computed every row they take logits of
     * and, apart (where the profile has them), of dLLM-Cache's steps that take them over carried rows
     * too: after layers that computed few rows the card's clock is not the one a compute-bound step
     * holds under its power limit, and its LM head runs faster */
    for (int which = 0; which < 4; which++) {
        const enum cost_op op = which % 2 ? OP_SAMPLE : OP_LM_HEAD;
        const bool carry = which >= 2;
        int n = 0;
        for (size_t i = 0; i < d->n; i++) {
            const struct calib_row *r = &d->rows[i];
            if (r->op != op || r->logit_rows == 0 || (r->fc_rows > 0) != carry)
                continue;
            int64_t R = (int64_t)r->segs * r->logit_rows, chunks = (R + PROFILE_LOGIT_CHUNK - 1) / PROFILE_LOGIT_CHUNK;
            if (R > PROFILE_LOGIT_CHUNK && R % PROFILE_LOGIT_CHUNK)
                continue; /* a ragged last chunk: not a clean per-chunk point */
            x[n] = (double)(chunks > 1 ? PROFILE_LOGIT_CHUNK : R);
            y[n++] = r->ms / (double)chunks;
        }
        if (carry && n == 0)
            continue; /* priced by the first curves */
        struct curve *cv = carry ? (which % 2 ? &c->sample_carry : &c->lm_carry) : which % 2 ? &c->sample : &c->lm;
        if (curve_build(cv, x, y, n, cost_op_name(op), err))
            goto done;
    }
    /* attention: weighted least squares (weights 1/y^2: relative errors) */
    {
        const struct row_fit rf = {attn_row, attn_row_features, ATTN_FEATURES, 0};
        if (fit_count(d, c, &rf) < ATTN_FEATURES + 1) {
            ts_fail(err, "calibration: attention needs at least %d measured shapes", ATTN_FEATURES + 1);
            goto done;
        }
        if (fit_rows(d, c, &rf, c->beta)) {
            ts_fail(err, "calibration: the attention fit failed");
            goto done;
        }
    }
    if (fit_select(d, c, err) || fit_fc(d, c, err))
        goto done;
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

