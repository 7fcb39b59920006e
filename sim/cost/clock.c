/* clock.c: the GPU's clock under its power limit (clock.h): the state a simulated card carries from
 * step to step, its parameters per GPU, and their fit to warm traces. */
#define _POSIX_C_SOURCE 200809L
#include "clock.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"

/* clock.csv: gpu,k,tau_ms,lo,hi,held_tflops,record */
static int clock_csv_find(const char *path, const char *gpu, struct clock_params *out, struct ts_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int rc = 0;
    for (int lineno = 1; rc == 0 && fgets(line, sizeof line, f); lineno++) {
        if (lineno == 1)
            continue; /* the header */
        char name[64];
        double k, tau_ms, lo, hi, held;
        const int got = sscanf(line, "%63[^,],%lf,%lf,%lf,%lf,%lf,%255[^\r\n]", name, &k, &tau_ms, &lo, &hi, &held,
                               out->record);
        static const char *const field[] = {"gpu", "k", "tau_ms", "lo", "hi", "held_tflops", "record"};
        if (got != 7)
            rc = ts_fail(err, "%s:%d: field %s: not gpu,k,tau_ms,lo,hi,held_tflops,record", path, lineno,
                         field[got < 0 ? 0 : got]);
        else if (!(k >= 0 && k < 1))
            rc = ts_fail(err, "%s:%d: field k: %g is not in [0, 1)", path, lineno, k);
        else if (!(tau_ms > 0 && tau_ms <= 60000))
            rc = ts_fail(err, "%s:%d: field tau_ms: %g is not in (0, 60000]", path, lineno, tau_ms);
        else if (!(lo >= 0 && hi > lo && hi <= 1))
            rc = ts_fail(err, "%s:%d: fields lo, hi: %g, %g are not 0 <= lo < hi <= 1", path, lineno, lo, hi);
        else if (!(held > 0 && held < 1e6))
            rc = ts_fail(err, "%s:%d: field held_tflops: %g is not a GEMM rate in TFLOP/s", path, lineno, held);
        else if (ts_name_eq(name, gpu)) {
            out->k = k, out->tau_s = tau_ms * 1e-3, out->lo = lo, out->hi = hi, out->held_flops = held * 1e12;
            rc = 1;
        }
    }
    fclose(f);
    return rc;
}

int clock_params_find(const char *datadir, const char *gpu, struct clock_params *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    char dir[1024], path[4096];
    if (calib_user_dir(dir, sizeof dir) == 0) { /* one fitted on this machine (make calibrate) comes first */
        snprintf(path, sizeof path, "%s/clock.csv", dir);
        const int rc = clock_csv_find(path, gpu, out, err);
        if (rc != 0)
            return rc;
    }
    snprintf(path, sizeof path, "%s/clock.csv", datadir);
    return clock_csv_find(path, gpu, out, err);
}

double clock_theta(const struct clock_params *p, double x)
{
    return fmin(1.0, fmax(0.0, (x - p->lo) / (p->hi - p->lo)));
}

double clock_step(const struct clock_params *p, struct clock_state *st, int64_t now_ns, double t_s, double flops)
{
    if (!(t_s > 0))
        return t_s;
    const double idle = now_ns > st->end_ns ? (double)(now_ns - st->end_ns) * 1e-9 : 0;
    const double x0 = st->x * exp(-idle / p->tau_s);
    const double g = fmin(1.0, fmax(0.0, flops / (p->held_flops * t_s)));
    /* the load over the step, as it relaxes from x0 toward g */
    const double xbar = g + (x0 - g) * p->tau_s / t_s * -expm1(-t_s / p->tau_s);
    const double t = t_s * (1 + p->k * clock_theta(p, xbar)) / (1 + p->k * clock_theta(p, g));
    st->x = g + (x0 - g) * exp(-t / p->tau_s);
    st->end_ns = now_ns + llround(t * 1e9);
    return t;
}

void clock_predict(const struct clock_params *p, const struct clock_trace *t, double *pred)
{
    struct clock_state st = {0, 0};
    for (size_t i = 0; i < t->n; i++)
        pred[i] = clock_step(p, &st, st.end_ns, t->held_ms * 1e-3, t->flops) * 1e3;
}

/* --- the traces ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void push(double **v, size_t n, size_t *cap, double x)
{
    if (n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = xrealloc(*v, sizeof **v * *cap);
    }
    (*v)[n] = x;
}

/* The trace being read: its warm rounds, and its timed replays until their median is taken. */
struct reading {
    struct clock_trace *t;
    double *timed;
    size_t ntimed, cap_timed, cap_ms, cap_t;
};

static void finish(struct reading *r)
{
    if (!r->t)
        return;
    if (r->ntimed) {
        qsort(r->timed, r->ntimed, sizeof *r->timed, cmp_double);
        r->t->held_ms = r->ntimed % 2 ? r->timed[r->ntimed / 2]
                                      : (r->timed[r->ntimed / 2 - 1] + r->timed[r->ntimed / 2]) / 2;
    }
    r->t = NULL;
    r->ntimed = 0;
}

/* The traces of an open warm-trace file f, named path in messages (clock_traces_read). */
static int traces_from(FILE *f, const char *path, struct clock_trace **out, size_t *n, struct ts_err *err)
{
    *out = NULL, *n = 0;
    struct clock_trace *v = NULL;
    size_t cap = 0;
    struct reading r = {0};
    char line[1024];
    int rc = 0;
    for (int lineno = 1; rc == 0 && fgets(line, sizeof line, f); lineno++) {
        if (lineno == 1) {
            if (strncmp(line, "label,phase,round,graph,t_s,ms", 30) != 0)
                rc = ts_fail(err, "%s:1: not a warm trace (its header is not label,phase,round,graph,t_s,ms)", path);
            continue;
        }
        const char *end = line[0] == '"' ? strchr(line + 1, '"') : NULL;
        char label[512], phase[16] = "";
        int round = 0, graph = 0;
        double t_s = NAN, ms = NAN; /* refused unless read */
        if (!end || end[1] != ',') {
            rc = ts_fail(err, "%s:%d: field label: not a quoted label", path, lineno);
            break;
        }
        snprintf(label, sizeof label, "%.*s", (int)(end - line - 1), line + 1);
        const int got = sscanf(end + 2, "%15[^,],%d,%d,%lf,%lf", phase, &round, &graph, &t_s, &ms);
        static const char *const field[] = {"phase", "round", "graph", "t_s", "ms"};
        const bool t_ok = t_s >= 0 && isfinite(t_s), ms_ok = ms > 0 && isfinite(ms);
        if (got != 5 || (strcmp(phase, "warm") != 0 && strcmp(phase, "timed") != 0) || round < 0 || !t_ok || !ms_ok) {
            rc = ts_fail(err, "%s:%d: field %s: not warm|timed,ROUND,GRAPH,T_S,MS with MS > 0", path, lineno,
                         got == 5 ? (round < 0 ? "round" : !t_ok ? "t_s" : !ms_ok ? "ms" : "phase")
                                  : field[got < 0 ? 0 : got]);
            break;
        }
        int segs, q, kv, logits, used = 0;
        if (sscanf(label, "step %dx%d over %d cached, %d logits: step%n", &segs, &q, &kv, &logits, &used) != 4 ||
            label[used] != '\0') {
            finish(&r); /* another kind of trace (a variant's): not fitted */
            continue;
        }
        if (segs < 1 || q < 1 || kv < 0 || logits < 0 || logits > q) {
            rc = ts_fail(err, "%s:%d: field label: step %dx%d over %d with %d logits is not a step", path, lineno,
                         segs, q, kv, logits);
            break;
        }
        if (strcmp(phase, "warm") == 0 && (round == 0 || !r.t)) { /* a new trace */
            finish(&r);
            if (*n == cap) {
                cap = cap ? 2 * cap : 8;
                v = xrealloc(v, sizeof *v * cap);
            }
            r.t = &v[(*n)++];
            *r.t = (struct clock_trace){.segs = segs, .q = q, .kv = kv, .logits = logits};
            r.cap_ms = r.cap_t = 0;
        }
        if (!r.t || r.t->segs != segs || r.t->q != q || r.t->kv != kv || r.t->logits != logits) {
            rc = ts_fail(err, "%s:%d: field phase: timed replays of a step whose warm-up is not before them", path,
                         lineno);
            break;
        }
        if (strcmp(phase, "warm") == 0) {
            push(&r.t->warm_ms, r.t->n, &r.cap_ms, ms);
            push(&r.t->warm_t, r.t->n, &r.cap_t, t_s);
            r.t->n++;
        } else {
            push(&r.timed, r.ntimed++, &r.cap_timed, ms);
        }
    }
    finish(&r);
    free(r.timed);
    for (size_t i = 0; rc == 0 && i < *n; i++)
        if (!(v[i].held_ms > 0))
            rc = ts_fail(err, "%s: step %dx%d over %d has warm-up rounds but no timed replays", path, v[i].segs,
                         v[i].q, v[i].kv);
    if (rc == 0 && *n == 0)
        rc = ts_fail(err, "%s: no step's warm trace (labels \"step NxQ over KV cached, L logits: step\")", path);
    if (rc) {
        clock_traces_free(v, *n);
        *n = 0;
        return -1;
    }
    *out = v;
    return 0;
}

int clock_traces_read(const char *path, struct clock_trace **out, size_t *n, struct ts_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        *out = NULL, *n = 0;
        return ts_fail(err, "%s: cannot open", path);
    }
    const int rc = traces_from(f, path, out, n, err);
    fclose(f);
    return rc;
}

int clock_traces_parse(const char *name, const char *text, size_t len, struct clock_trace **out, size_t *n,
                       struct ts_err *err)
{
    *out = NULL, *n = 0;
    if (len == 0)
        return ts_fail(err, "%s: empty: not a warm trace", name);
    FILE *f = fmemopen((void *)text, len, "r");
    if (!f)
        return ts_fail(err, "%s: cannot read", name);
    const int rc = traces_from(f, name, out, n, err);
    fclose(f);
    return rc;
}

void clock_traces_free(struct clock_trace *t, size_t n)
{
    for (size_t i = 0; i < n && t; i++)
        free(t[i].warm_ms), free(t[i].warm_t);
    free(t);
}

/* --- the fit --------------------------------------------------------------------------------- */

struct fit_data {
    const struct clock_trace *t;
    size_t n;
    double window_s, held_flops;
    double *pred;
};

/* Mean squared relative error of the warm rounds within the window. */
static double loss(const struct fit_data *d, const struct clock_params *p)
{
    double sum = 0;
    size_t m = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct clock_trace *t = &d->t[i];
        clock_predict(p, t, d->pred);
        for (size_t j = 0; j < t->n && t->warm_t[j] <= d->window_s; j++, m++)
            sum += (d->pred[j] / t->warm_ms[j] - 1) * (d->pred[j] / t->warm_ms[j] - 1);
    }
    return m ? sum / (double)m : 0;
}

/* The simplex's coordinates: k, ln tau, lo, hi; outside 0 <= k < 1, lo >= 0, hi > lo + 0.01, hi <= 1
 * the loss is that of the nearest admissible point plus a penalty. */
static double simplex_loss(const gsl_vector *v, void *arg)
{
    const struct fit_data *d = arg;
    double k = gsl_vector_get(v, 0), lt = gsl_vector_get(v, 1), lo = gsl_vector_get(v, 2), hi = gsl_vector_get(v, 3);
    double pen = 0;
    if (k < 0)
        pen += k * k, k = 0;
    if (k > 0.9)
        pen += (k - 0.9) * (k - 0.9), k = 0.9;
    if (lo < 0)
        pen += lo * lo, lo = 0;
    if (hi > 1)
        pen += (hi - 1) * (hi - 1), hi = 1;
    if (hi < lo + 0.01)
        pen += (lo + 0.01 - hi) * (lo + 0.01 - hi), hi = lo + 0.01;
    lt = fmin(fmax(lt, log(1e-3)), log(60.0));
    const struct clock_params p = {.k = k, .tau_s = exp(lt), .lo = lo, .hi = hi, .held_flops = d->held_flops};
    return loss(d, &p) + pen;
}

int clock_fit(const struct clock_trace *t, size_t n, double window_s, struct clock_params *p, double *rms,
              struct ts_err *err)
{
    if (!(p->held_flops > 0))
        return ts_fail(err, "clock fit: the card's held GEMM rate is not known");
    size_t most = 1;
    for (size_t i = 0; i < n; i++)
        most = t[i].n > most ? t[i].n : most;
    struct fit_data d = {t, n, window_s, p->held_flops, xmalloc(sizeof(double) * most)};
    /* the grid: k by 0.01, tau from 5 to 320 ms by factors of sqrt 2, lo and hi by 0.05 */
    struct clock_params best = *p, q = *p;
    double best_loss = INFINITY;
    for (int ik = 0; ik <= 30; ik++)
        for (int it = 0; it <= 12; it++)
            for (int il = 0; il < 20; il++)
                for (int ih = il + 1; ih <= 20; ih++) {
                    q.k = 0.01 * ik, q.tau_s = 5e-3 * pow(2, it / 2.0), q.lo = 0.05 * il, q.hi = 0.05 * ih;
                    const double l = loss(&d, &q);
                    if (l < best_loss)
                        best_loss = l, best = q;
                }
    /* refined by the simplex from the grid's best */
    gsl_multimin_function fn = {.n = 4, .f = simplex_loss, .params = &d};
    gsl_vector *x = gsl_vector_alloc(4), *step = gsl_vector_alloc(4);
    gsl_vector_set(x, 0, best.k), gsl_vector_set(x, 1, log(best.tau_s));
    gsl_vector_set(x, 2, best.lo), gsl_vector_set(x, 3, best.hi);
    gsl_vector_set(step, 0, 0.01), gsl_vector_set(step, 1, 0.2), gsl_vector_set(step, 2, 0.03);
    gsl_vector_set(step, 3, 0.03);
    gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, 4);
    gsl_multimin_fminimizer_set(m, &fn, x, step);
    for (int iter = 0; iter < 2000; iter++) {
        if (gsl_multimin_fminimizer_iterate(m) ||
            gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), 1e-6) == GSL_SUCCESS)
            break;
    }
    if (m->fval < best_loss) {
        const gsl_vector *v = m->x;
        q = best;
        q.k = fmin(fmax(gsl_vector_get(v, 0), 0), 0.9);
        q.tau_s = exp(fmin(fmax(gsl_vector_get(v, 1), log(1e-3)), log(60.0)));
        q.lo = fmax(gsl_vector_get(v, 2), 0);
        q.hi = fmin(fmax(gsl_vector_get(v, 3), q.lo + 0.01), 1);
        const double l = loss(&d, &q);
        if (l < best_loss)
            best_loss = l, best = q;
    }
    gsl_multimin_fminimizer_free(m);
    gsl_vector_free(x), gsl_vector_free(step);
    free(d.pred);
    *p = best;
    *rms = sqrt(best_loss);
    return 0;
}
