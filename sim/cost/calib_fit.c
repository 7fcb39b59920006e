/* calib_fit.c: fitting a calibration to its profile (curves for the token-driven ops, a least-squares
 * attention model that follows the engine's launch rules, the host line of eager frameworks),
 * pricing steps with it (the `calibrated` cost back end) and reporting the fit. */
#define _POSIX_C_SOURCE 200809L
#include "calib.h"

#include <dirent.h>
#include <errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_interp.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rules.h"
#include "config.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"

/* The attention model's features (attn_add, attn_finish, attn_wave_finish) */
enum {
    AF_LONG_PAIRS,      /* the wgmma kernel's segments' query-key pairs */
    AF_TILE_KEYS,       /* every segment's 64-row query tiles' keys, over the heads a block packs */
    AF_LONG_ROWS,       /* the wgmma kernel's segments' rows */
    AF_SEGS,            /* segments */
    AF_MAX_KEYS,        /* the longest segment's keys */
    AF_CONST,           /* 1 */
    AF_KV,              /* cached keys */
    AF_LONG_TILE_KEYS,  /* the wgmma kernel's 128-row tiles' keys */
    AF_WAVE_KEYS,       /* the mma.sync launch's waves of blocks over their keys */
    ATTN_FEATURES
};
#define SELECT_FEATURES 4
#define FC_FEATURES 6

static const enum cost_op token_ops[] = {OP_EMBED, OP_NORM, OP_QKV, OP_ROPE, OP_OPROJ,
                                         OP_GATE_UP, OP_ACT, OP_DOWN, OP_ROUTER, OP_EXPERTS, OP_ALLREDUCE};

/* Whether two profile rows belong to the same profiled step. */
static bool same_step(const struct calib_row *a, const struct calib_row *b)
{
    return a->segs == b->segs && a->q == b->q && a->kv == b->kv && a->logit_rows == b->logit_rows &&
           a->kv_long == b->kv_long && a->keep == b->keep && a->sel_heads == b->sel_heads && a->fc_rows == b->fc_rows &&
           a->probe == b->probe && a->q_long == b->q_long;
}

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
    struct curve lm_carry, sample_carry; /* the same after layers that computed few of the rows (a
                                          * dLLM-Cache step's logits over its carried rows too); n = 0:
                                          * the profile has no such step */
    double beta[ATTN_FEATURES]; /* attention least squares */
    double sel[2][SELECT_FEATURES]; /* the selection's least squares, [sel_heads] */
    bool has_sel[2];                /* fitted (the profile had selecting steps of that kind) */
    double fc[FC_FEATURES];         /* the feature cache's least squares */
    bool has_fc;                    /* fitted (the profile had dLLM-Cache steps) */
    int heads, kv_heads, sms;   /* the model's query and K/V heads, the GPU's SMs (attn_finish) */
    int attn_rules;             /* the profiled engine's attention launch rules (calib_data's) */
    bool host_bound;            /* priced as max(host, GPU) */
    double host0, host_seg;     /* host issue time (ms) = host0 + host_seg * segments */
    double host_sel;            /* ms a selecting segment adds to a step beyond max(host, GPU): an eager
                                 * selection's loop over the sequences, which waits for the GPU in every
                                 * layer (a mask's nonzero), so its issue stalls the GPU rather than
                                 * overlapping it */
    int host_sel_steps;         /* the selecting profile steps host_sel is the median over (0: none) */
    double eager_gap;           /* ms an eager GPU-bound step adds to its graph-replayed GPU time */
    int host_steps;             /* host-bound profile steps the line was fitted on */
    double host_lo, host_hi;    /* their issue times over the line, 10th and 90th percentiles (0: none) */
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
 * per layer costs time even for a single query); the rows
 * and query-key pairs of the segments of at least ATTN_LONG_Q rows alone, which the engine runs
 * on its wgmma kernel on Hopper (128-row blocks), with their 128-row tiles' keys. The mma.sync
 * kernel computes every row of its 64-row tiles, whatever the segment fills of them (four query
 * heads a tile of segments of at most 16 rows), so its work is its tiles' keys, not its rows or
 * pairs: on SDAR-8B's H200 profile and batch steps, each launch of 250,000 block-keys or more took
 * 5.7-8 ns a block-key from 2 to 64 rows a segment and 16 to 256 segments, and pricing its pairs
 * too left FOCUS's later layers (many sequences of a few kept rows) 13-20% short on the recorded
 * replays (records/batch-mixed-h200: 1-5% without). Last, the mma.sync kernel's launch as
 * kernels/attention.cu makes it:
 * its waves of blocks (two an SM, four with the 32-key K/V tiles of short query tiles) over the
 * keys its blocks cover (attn_wave_finish), its key split following attn_split_rule_v (by the rules
 * version the profiled engine launched with) when it runs alone (all segments run on it where
 * attn_long_on_mma says so). On recorded replays the last term took attention-heavy workloads from
 * 4.9-5.9% to 3.2-3.5% per step; on steps of 64 to 256 sequences of mixed lengths it keeps them
 * within 3.5% in total (records/batch-mixed-h100).
 */
struct attn_acc {
    double f[ATTN_FEATURES];
    double max_q;                                /* the longest segment's rows */
    double short_rows, short_tiles, short_max_k; /* the mma.sync kernel's segments */
    double long_rows, long_tiles;                /* the wgmma kernel's */
    int short_segs, long_segs;                   /* segments on each kernel */
    bool any_long;
    int pack, splits, tile_keys; /* the mma.sync launch (attn_finish; 0 without one) */
    double wave_blocks;          /* the mma.sync launch's blocks a wave (attn_finish) */
    double tile_block_keys;      /* the keys a block covers, summed over its 64-row query tiles (attn_wave_add) */
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
 * pairs and the tiles' keys the kernels skip are not counted), or each row over `keys` keys where
 * keys > 0 (a sparse pattern: segment.attn_keys) */
static void attn_add(struct attn_acc *a, int64_t q, int64_t kv, int32_t bs, int32_t keys)
{
    double *f = a->f, k = keys > 0 ? (double)keys : (double)(q + kv);
    f[AF_TILE_KEYS] += keys > 0 ? ceil((double)q / 64) * k : tile_keys(q, kv, bs, 64);
    f[AF_SEGS] += 1;
    f[AF_MAX_KEYS] = fmax(f[AF_MAX_KEYS], k);
    f[AF_CONST] = 1;
    f[AF_KV] += (double)kv;
    a->max_q = fmax(a->max_q, (double)q);
    if (q >= ATTN_LONG_Q) { /* the engine's wgmma kernel on Hopper: 128-row blocks */
        f[AF_LONG_PAIRS] += keys > 0 ? (double)q * k : attn_pairs(q, kv, bs);
        f[AF_LONG_TILE_KEYS] += keys > 0 ? ceil((double)q / 128) * k : tile_keys(q, kv, bs, 128);
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
    if (a->any_long && attn_long_on_mma((int)fmin(a->long_tiles, 1e9), heads, sms, (int)a->f[AF_MAX_KEYS])) {
        /* one short long segment over many keys: the engine runs every segment on the mma.sync
         * kernel (attn_long_on_mma) */
        a->f[AF_LONG_PAIRS] = a->f[AF_LONG_TILE_KEYS] = 0;
        a->short_rows += a->long_rows;
        a->short_tiles += a->long_tiles;
        a->short_max_k = a->f[AF_MAX_KEYS];
        a->short_segs += a->long_segs;
        a->long_segs = 0;
        a->any_long = false;
    }
    a->f[AF_LONG_ROWS] = a->any_long ? a->long_rows : 0;
    if (a->short_tiles <= 0)
        return;
    /* GQA packing (rules 4, only where every segment is short): a block takes P query heads of
     * one K/V head, so each K/V tile is read once for P heads and there are H / P blocks a tile of
     * P times the rows */
    const int P = attn_head_pack_v(rules, heads, kv_heads, (int)fmin(a->max_q, 1e9), (int)a->f[AF_MAX_KEYS]);
    a->f[AF_TILE_KEYS] /= P;
    /* the engine lists the long segments' tiles first, so the mma.sync kernel runs over the
     * short tiles alone (k_attn_args.long_tiles), its K/V tile size the one it would take alone;
     * beside the wgmma kernel it never splits keys (k_attention_splits), bounded by the step's
     * longest segment */
    int alone = attn_split_rule_pv(rules, P, (int)a->short_tiles, (int64_t)a->short_rows, heads, sms,
                                          (int)a->f[AF_MAX_KEYS]);
    int splits = a->any_long ? 1 : alone;
    bool short_kv_tiles = attn_short_kv_tiles(alone, (int64_t)a->short_rows * P, (int64_t)a->short_tiles);
    a->wave_blocks = (short_kv_tiles ? 4.0 : 2.0) * sms;
    a->pack = P, a->splits = splits, a->tile_keys = short_kv_tiles ? 32 : 64;
}

/* The keys one block of the mma.sync launch covers in a segment of k keys: its share of the
 * split, in whole K/V tiles of 64 */
static double block_keys(double k, int splits)
{
    return fmin(ceil(ceil(k / splits) / 64.0) * 64.0, k);
}

/* A segment again, once attn_finish has fixed the launch: the keys its tiles' blocks cover, where
 * the mma.sync kernel runs it */
static void attn_wave_add(struct attn_acc *a, int64_t q, int64_t kv, int32_t keys)
{
    if (a->short_tiles <= 0 || (a->any_long && q >= ATTN_LONG_Q))
        return;
    a->tile_block_keys += ceil((double)q / 64.0) * block_keys(keys > 0 ? (double)keys : (double)(q + kv), a->splits);
}

/* The mma.sync launch's time in keys (AF_WAVE_KEYS): the hardware hands its blocks to the SMs as
 * slots free up, so every wave but the last takes the blocks' mean keys and the last ends with
 * the longest block (equal segments: whole waves of one block's keys). Charging every wave the
 * longest block's keys prices steps of many sequences of mixed lengths 1.3 to 3.5 times what the
 * engine takes (records/batch-mixed-h100). */
static void attn_wave_finish(struct attn_acc *a, int heads)
{
    if (a->short_tiles <= 0)
        return;
    const double per_tile = (double)(heads / a->pack) * a->splits, blocks = a->short_tiles * per_tile;
    const double mean = a->tile_block_keys / a->short_tiles;
    a->f[AF_WAVE_KEYS] = (ceil(blocks / a->wave_blocks) - 1) * mean + block_keys(a->short_max_k, a->splits);
}

/* The attention features and launch of a step's front layers' shapes or its later ones', as the
 * calibration's model and rules read them */
static void attn_layers(const struct calib *c, const struct step_desc *sd, bool front, struct attn_acc *acc)
{
    memset(acc, 0, sizeof *acc);
    for (int32_t i = 0; i < sd->num_segs; i++) {
        int32_t q, kv, w;
        segment_layer_shape(&sd->segs[i], front, &q, &kv, &w);
        attn_add(acc, q, kv, sd->attn_block, sd->segs[i].attn_keys);
    }
    attn_finish(acc, c->heads, c->kv_heads, c->sms, c->attn_rules);
    for (int32_t i = 0; i < sd->num_segs; i++) {
        int32_t q, kv, w;
        segment_layer_shape(&sd->segs[i], front, &q, &kv, &w);
        attn_wave_add(acc, q, kv, sd->segs[i].attn_keys);
    }
    attn_wave_finish(acc, c->heads);
}

static void attn_step(const struct calib *c, const struct step_desc *sd, struct attn_acc *acc)
{
    attn_layers(c, sd, false, acc);
}

/* The attention model's time (ms, every layer) at a step's front or later shapes. */
static double attn_ms(const struct calib *c, const struct step_desc *sd, bool front)
{
    struct attn_acc acc;
    attn_layers(c, sd, front, &acc);
    double ms = 0;
    for (int j = 0; j < ATTN_FEATURES; j++)
        ms += c->beta[j] * acc.f[j];
    return fmax(ms, 0.0);
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
        attn_add(&a, step_shape_q(&r->shape, s), step_shape_kv(&r->shape, s), 0, 0); /* profiles run bidirectional */
    attn_finish(&a, heads, kv_heads, sms, rules);
    for (int s = 0; s < r->segs; s++)
        attn_wave_add(&a, step_shape_q(&r->shape, s), step_shape_kv(&r->shape, s), 0);
    attn_wave_finish(&a, heads);
    memcpy(f, a.f, sizeof a.f);
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
    attn_features(r, c->heads, c->kv_heads, c->sms, c->attn_rules, f);
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

/* The selection's features, summed over the selecting segments: a constant (its launches a layer),
 * the segments, their candidates and the most candidates one has (each segment's ranking is
 * one block's walk over them, the critical path of a step of few segments). */
static void select_features(int64_t segs, int64_t cand, int64_t max_cand, double *f)
{
    f[0] = 1, f[1] = (double)segs, f[2] = (double)cand, f[3] = (double)max_cand;
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
    select_features(r->segs, r->segs * cand, cand, f);
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

/* The selection's time of a step (ms; 0 when none of its segments selects). */
static int select_ms(const struct calib *c, const struct step_desc *sd, double *ms, struct ts_err *err)
{
    *ms = 0;
    if (sd->tot.sel_segs == 0)
        return 0;
    const int heads = sd->select_heads;
    if (!c->has_sel[heads])
        return ts_fail(err, "calibrated cost: the calibration of %s on %s has no %s selection (kv_select) "
                            "measurements; profile its select grid (tessera engine profile --grid select) and "
                            "merge it in, or price with --cost roofline", c->model, c->device,
                       heads ? "per-head" : "uniform");
    double f[SELECT_FEATURES];
    select_features(sd->tot.sel_segs, sd->tot.sel_cand, sd->tot.sel_max_cand, f);
    for (int j = 0; j < SELECT_FEATURES; j++)
        *ms += c->sel[heads][j] * f[j];
    *ms = fmax(*ms, 0.0);
    return 0;
}

bool calib_prices_selection(const struct calib *c, bool per_head) { return c->has_sel[per_head ? 1 : 0]; }
bool calib_prices_allreduce(const struct calib *c) { return c->tok[OP_ALLREDUCE].n > 0; }

bool calib_measures_host(const struct calib *c) { return c->host_bound; }

int calib_host_of(const struct calib *c, struct calib_host *h, struct ts_err *err)
{
    if (!c->host_bound)
        return ts_fail(err, "the calibration of %s on %s measured no host apart from its GPU (an engine "
                            "issuing CUDA graphs): it has no host to take or replace", c->model, c->device);
    *h = (struct calib_host){c->host0, c->host_seg, c->eager_gap, c->host_steps, "", "", c->host_lo, c->host_hi};
    snprintf(h->device, sizeof h->device, "%s", c->device);
    return 0;
}

int calib_set_host(struct calib *c, const struct calib_host *h, struct ts_err *err)
{
    struct calib_host own;
    if (calib_host_of(c, &own, err))
        return -1;
    /* (the launch gaps of GPU-bound steps are in the fitted op curves: they stay the profiled machine's;
     * a selecting segment's loop is issued by the other host as its steps are, scaled as they scale) */
    if (own.host0_ms > 0)
        c->host_sel *= h->host0_ms / own.host0_ms;
    c->host0 = h->host0_ms, c->host_seg = h->seg_ms, c->host_steps = h->steps;
    c->host_lo = h->lo, c->host_hi = h->hi;
    return 0;
}

int calib_scale_host(struct calib *c, double scale, struct ts_err *err)
{
    struct calib_host own;
    if (calib_host_of(c, &own, err))
        return -1;
    c->host0 *= scale, c->host_seg *= scale, c->host_sel *= scale;
    return 0;
}
/* The refusal of --host NAME: the error prefixed by the option, and by NAME where the message does not
 * name it already (a file's own error names its path). */
static int host_fail(struct ts_err *err, const char *name)
{
    return strstr(err->msg, name) ? ts_fail_prefix(err, "--host") : ts_fail_prefix(err, "--host %s", name);
}


int calib_host_scale(const char *name, const struct impl_profile *im, double *scale, struct ts_err *err)
{
    struct calib_host ref, h;
    if (calib_host_load(im->host_ref, &ref, err) || calib_host_load(name, &h, err))
        return host_fail(err, name);
    if (!(ref.host0_ms > 0))
        return ts_fail(err, "--host %s: the host profile %s, which %s's costs were measured with, takes no "
                            "time a step", name, im->host_ref, im->name);
    *scale = h.host0_ms / ref.host0_ms;
    return 0;
}

/* scandir's filter: the files named *.csv */
static int is_csv(const struct dirent *e)
{
    const size_t n = strlen(e->d_name);
    return n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0;
}

int calib_csv_files(const char *dir, struct dirent ***names)
{
    *names = NULL;
    return scandir(dir, names, is_csv, alphasort);
}

void calib_hosts_dir(char *dir, size_t len)
{
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    snprintf(dir, len, "%s/hosts", cfg.datadir);
}

/* The shipped host profile (DATADIR/hosts) measured on the machine that measured a calibration of
 * device `device` (a transferred one's, "GPU (roofline transfer from DEVICE)", its origin's), into
 * *ref: false where none was (an unreadable file there is passed over). */
static bool machine_host(const char *device, struct calib_host *ref)
{
    static const char from[] = " (roofline transfer from ";
    const char *o = strstr(device, from);
    char origin[sizeof ref->device];
    if (o)
        snprintf(origin, sizeof origin, "%.*s", (int)strlen(o + sizeof from - 1) - 1, o + sizeof from - 1);
    else
        snprintf(origin, sizeof origin, "%s", device);
    char dir[CFG_PATH + 16];
    calib_hosts_dir(dir, sizeof dir);
    struct dirent **names;
    const int n = calib_csv_files(dir, &names);
    bool found = false;
    for (int i = 0; i < n; i++) {
        char path[sizeof dir + 256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        struct calib_host h;
        struct ts_err err;
        if (!found && calib_host_load(path, &h, &err) == 0 && strcmp(h.device, origin) == 0) {
            *ref = h;
            found = true;
        }
        free(names[i]);
    }
    free(names);
    return found;
}

int calib_use_host(struct calib *c, const char *name, const struct impl_profile *im, struct ts_err *err)
{
    struct calib_host h, ref;
    if (calib_host_load(name, &h, err))
        return host_fail(err, name);
    if (h.impl[0]) { /* measured on an implementation's own loop: that implementation's line */
        if (strcmp(h.impl, im->name) != 0)
            return ts_fail(err, "--host %s: measured on %s's own loop, not --impl %s's", name, h.impl, im->name);
        return calib_set_host(c, &h, err) ? host_fail(err, name) : 0;
    }
    if (im->host_line_own) {
        double scale;
        if (calib_host_scale(name, im, &scale, err))
            return -1;
        return calib_scale_host(c, scale, err) ? host_fail(err, name) : 0;
    }
    if (machine_host(c->device, &ref) && ref.host0_ms > 0) {
        /* c's line scaled whole by the two machines' per-step issue times, measured on the same layer
         * (a per-segment term is fitted from few segment counts and may be 0 on either machine) */
        return calib_scale_host(c, h.host0_ms / ref.host0_ms, err) ? host_fail(err, name) : 0;
    }
    return calib_set_host(c, &h, err) ? host_fail(err, name) : 0;
}

#define HOST_HEADER "host0_ms,seg_ms,eager_gap_ms,steps,device"
#define HOST_IMPL_HEADER "host0_ms,seg_ms,eager_gap_ms,steps,impl,device"

/* text begins with the header line hdr */
static bool header_is(const char *text, const char *hdr)
{
    const size_t hl = strlen(hdr);
    return strncmp(text, hdr, hl) == 0 && (text[hl] == '\n' || text[hl] == '\r');
}

int calib_host_parse(const char *path, const char *text, struct calib_host *h, struct ts_err *err)
{
    const bool with_impl = header_is(text, HOST_IMPL_HEADER);
    if (!with_impl && !header_is(text, HOST_HEADER))
        return 1;
    const char *line = strchr(text, '\n');
    int used = 0;
    bool ok = line && sscanf(line + 1, "%lf,%lf,%lf,%d,%n", &h->host0_ms, &h->seg_ms, &h->eager_gap_ms, &h->steps,
                             &used) == 4 && used > 0 && h->host0_ms >= 0 && h->host0_ms < 1e5 && h->seg_ms >= 0 &&
              h->seg_ms < 1e5 && h->eager_gap_ms >= 0 && h->eager_gap_ms < 1e5 && h->steps >= 0;
    line = ok ? line + 1 + used : line;
    h->impl[0] = '\0';
    if (ok && with_impl) {
        const size_t n = strcspn(line, ",\r\n");
        ok = n > 0 && n < sizeof h->impl && line[n] == ',';
        if (ok) {
            snprintf(h->impl, sizeof h->impl, "%.*s", (int)n, line);
            line += n + 1;
        }
    }
    if (!ok)
        return ts_fail(err, "%s:2: expected %s (times >= 0 ms)", path, with_impl ? HOST_IMPL_HEADER : HOST_HEADER);
    snprintf(h->device, sizeof h->device, "%.*s", (int)strcspn(line, "\r\n"), line);
    h->lo = h->hi = 0; /* a host file keeps the line, not how far its steps lay from it */
    return 0;
}

int calib_host_load(const char *name, struct calib_host *h, struct ts_err *err)
{
    /* a bare name: a shipped host profile, DATADIR/hosts/NAME.csv */
    char path[CFG_PATH + 64];
    if (!strchr(name, '/') && !strstr(name, ".csv")) {
        char dir[CFG_PATH + 16];
        calib_hosts_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    } else {
        snprintf(path, sizeof path, "%s", name);
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return ts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char text[1024];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    const int rc = calib_host_parse(path, text, h, err);
    if (rc <= 0)
        return rc;
    /* not a host file: a calibration or profile CSV, whose host is taken */
    struct calib_data d;
    struct calib *c = NULL;
    int bad = calib_data_load(path, &d, err);
    if (!bad) {
        bad = calib_fit(&d, &c, err) || calib_host_of(c, h, err) ? -1 : 0;
        calib_free(c);
        calib_data_free(&d);
    }
    return bad && !strstr(err->msg, path) ? ts_fail_prefix(err, "%s", path) : bad ? -1 : 0;
}

int calib_host_write(const struct calib_host *h, const char *path, struct ts_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ts_fail(err, "%s: cannot write: %s", path, strerror(errno));
    if (h->impl[0])
        fprintf(f, HOST_IMPL_HEADER "\n%.6g,%.6g,%.6g,%d,%s,%s\n", h->host0_ms, h->seg_ms, h->eager_gap_ms, h->steps,
                h->impl, h->device);
    else
        fprintf(f, HOST_HEADER "\n%.6g,%.6g,%.6g,%d,%s\n", h->host0_ms, h->seg_ms, h->eager_gap_ms, h->steps, h->device);
    if (fclose(f) != 0)
        return ts_fail(err, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

void calib_host_band(double lo, double hi, char *buf, size_t len)
{
    if (lo > 0 && hi > 0)
        snprintf(buf, len, ", 80%% of them %.2f-%.2fx the line", lo, hi);
    else if (len)
        buf[0] = '\0';
}

/* The feature cache's features, over a step's dLLM-Cache segments: a constant (a layer's launches),
 * whether any probes (the value check's four launches a layer), the probe rows (their norm, V
 * projection and similarity), the computed rows (their outputs stored and added), the hidden rows
 * (the carried ones' adds, a block each), and the value check's ranking (each probing segment's
 * probe rows squared, in thousands). */
static void fc_features(int64_t probe_rows, int64_t computed, int64_t rows, double probe_sq, double *f)
{
    f[0] = 1, f[1] = probe_rows > 0, f[2] = (double)probe_rows, f[3] = (double)computed, f[4] = (double)rows;
    f[5] = probe_sq * 1e-3;
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
    fc_features((int64_t)r->segs * r->probe, (int64_t)r->segs * r->q, (int64_t)r->segs * r->fc_rows,
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

bool calib_prices_feature_cache(const struct calib *c) { return c->has_fc; }

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

const char *calib_device(const struct calib *c) { return c->device; }
const char *calib_model(const struct calib *c) { return c->model; }
int64_t calib_max_tokens(const struct calib *c) { return c->max_T; }

/* --- pricing ----------------------------------------------------------------------------- */

/* R rows in chunks of `chunk` (<= 0: one) by the per-chunk curve cv; with `carry` (n > 0) each chunk
 * scaled by carry's time over cv's at its size (taken within carry's sizes, flat outside them) */
static double chunked(const struct curve *cv, const struct curve *carry, int64_t R, int64_t chunk, bool extrapolate)
{
    if (R <= 0)
        return 0;
    if (chunk <= 0)
        chunk = R;
    double max_rows = cv->x[cv->n - 1], total = 0, y;
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
        double rows = (double)TS_MIN(chunk, R - r0), ratio = 1, yc, yb;
        if (carry && carry->n > 0) {
            const double at = fmin(fmax(rows, carry->x[0]), carry->x[carry->n - 1]);
            curve_eval(carry, at, false, &yc);
            curve_eval(cv, fmin(at, max_rows), false, &yb);
            ratio = yb > 0 ? yc / yb : 1;
        }
        if (rows > max_rows) { /* as several chunks of the largest profiled size */
            curve_eval(cv, max_rows, extrapolate, &y);
            total += ratio * y * rows / max_rows;
        } else {
            curve_eval(cv, rows, extrapolate, &y);
            total += ratio * y;
        }
    }
    return total;
}

/* The time (ms) of a token-driven op over a step whose every layer ran T packed tokens; -1 with err
 * beyond the profiled range. */
static int tok_ms(const struct calib *c, enum cost_op op, int64_t T, bool extrapolate, double *ms,
                  struct ts_err *err)
{
    *ms = 0;
    const struct curve *cv = &c->tok[op];
    if (!cv->n || T <= 0)
        return 0;
    if (curve_eval(cv, (double)T, extrapolate, ms))
        return ts_fail(err, "calibrated cost: a step of %lld packed tokens is beyond the profiled range (up to "
                            "%lld) of %s on %s; profile larger steps or allow extrapolation (--extrapolate)",
                       (long long)T, (long long)c->max_T, c->model, c->device);
    return 0;
}

/* tok_ms of a dense FFN op (gate_up, act, down) run in `chunks` pieces, as the engine splits a step's
 * rows (ceil(T / chunks) rows a piece, the last the rest); any other op, or one piece, over T. */
static int ffn_tok_ms(const struct calib *c, enum cost_op op, int64_t T, int32_t chunks, bool extrapolate,
                      double *ms, struct ts_err *err)
{
    if (chunks <= 1 || T <= 1 || (op != OP_GATE_UP && op != OP_ACT && op != OP_DOWN))
        return tok_ms(c, op, T, extrapolate, ms, err);
    const int64_t rows = (T + chunks - 1) / chunks, full = T / rows, rest = T - full * rows;
    double piece, last = 0;
    if (tok_ms(c, op, rows, extrapolate, &piece, err) || tok_ms(c, op, rest, extrapolate, &last, err))
        return -1;
    *ms = (double)full * piece + last;
    return 0;
}

/* Moving `bytes` at the cost context's memory bandwidth (ms): the work the engine does not run, priced
 * beside the calibrated curves. */
static double bandwidth_ms(const struct cost_ctx *cx, double bytes)
{
    return bytes / (cx->gpu.mem_bw * cx->impl.mem_eff) * 1e3;
}

/* dLLM-Cache's feature cache (ms) over `later` of num_layers layers: the fit to the profile's
 * dLLM-Cache steps (fit_fc) where it has them, else composed from the calibrated curves of the ops
 * it consists of: the probe rows' norm (a layer's share of the norm curve) and V
 * re-projection (the V columns' share of the qkv curve at the probe rows), the rest at the memory
 * bandwidth of the cost context: each layer's computed rows' two outputs cached and added (output
 * and x read, cache and x written, each half), the other rows' x plus both cached outputs (three
 * read, one written), and the probes' similarity (new and cached V read, the new one written). */
static int feat_cache_ms(const struct cost_ctx *cx, const struct calib *c, const struct step_desc *sd, double later,
                         bool extrapolate, double *ms, struct ts_err *err)
{
    *ms = 0;
    const struct step_totals *t = &sd->tot;
    const struct model_cfg *m = &cx->model;
    const double nl = m->num_layers, h = m->hidden, kvd = model_kv_dim(m), qd = model_q_dim(m), a = 2;
    if (!sd->cache_outputs && (t->probe_tokens == 0 || sd->evict) && t->carry_tokens == 0)
        return 0; /* (an evicting step's candidates are ranked within its front layers' attention) */
    if (c->has_fc) { /* measured: the profile's dLLM-Cache steps' fit */
        double sq = 0, f[FC_FEATURES];
        for (int32_t s = 0; s < sd->num_segs; s++)
            sq += (double)sd->segs[s].probe * sd->segs[s].probe;
        fc_features(t->probe_tokens, t->q_tokens, t->rows, sq, f);
        for (int j = 0; j < FC_FEATURES; j++)
            *ms += c->fc[j] * f[j];
        *ms = fmax(*ms, 0.0);
        return 0;
    }
    double norm = 0, qkv = 0;
    if (tok_ms(c, OP_NORM, t->probe_tokens, extrapolate, &norm, err) ||
        tok_ms(c, OP_QKV, t->probe_tokens, extrapolate, &qkv, err))
        return -1;
    const double P = (double)t->probe_tokens, X = (double)t->rows, T = (double)t->q_tokens;
    const double Tf = (double)t->front.q_tokens, front = nl - later;
    double bytes = later * a * (8 * T * h + 4 * fmax(X - T, 0) * h) + front * a * (8 * Tf * h + 4 * fmax(X - Tf, 0) * h);
    if (P > 0)
        bytes += later * a * 4 * P * kvd;
    *ms = later / nl * (norm / (2 * nl + 1) * nl + qkv * kvd / (qd + 2 * kvd)) + bandwidth_ms(cx, bytes);
    return 0;
}

/* Elastic-Cache's layer inputs (ms, cache_inputs): each layer's computed rows read and their cache
 * rows written, and where the front shapes are narrower the first later layer's rows gathered once,
 * at the memory bandwidth of the cost context. */
static double input_cache_ms(const struct cost_ctx *cx, const struct step_desc *sd)
{
    const struct model_cfg *m = &cx->model;
    const struct step_totals *t = &sd->tot;
    const double nl = m->num_layers, nf = step_front_layers(sd, m->num_layers), h = m->hidden, a = 2;
    double rows = nf * (double)t->front.q_tokens + (nl - nf) * (double)t->q_tokens;
    if (nf > 0 && nf < nl)
        rows += (double)t->q_tokens;
    return bandwidth_ms(cx, 2 * a * rows * h);
}

int calib_step_s(const struct calib *c, const struct step_desc *sd, bool extrapolate, double *seconds,
                 struct cost_breakdown *bd, struct ts_err *err)
{
    return calib_step_ctx_s(NULL, c, sd, extrapolate, seconds, bd, err);
}

int calib_step_ctx_s(const struct cost_ctx *cx, const struct calib *c, const struct step_desc *sd, bool extrapolate,
                     double *seconds, struct cost_breakdown *bd, struct ts_err *err)
{
    struct cost_breakdown local;
    if (!bd)
        bd = &local;
    memset(bd, 0, sizeof *bd);
    const struct step_totals *t = &sd->tot;
    /* a step whose segments have front shapes: its first nf of nl layers at the front sums, the
     * others at the later ones, each a share of the curves' whole-forward times */
    const double nl = cx ? cx->model.num_layers : 0;
    const double nf = cx ? step_front_layers(sd, cx->model.num_layers) : 0, later_share = nf > 0 ? (nl - nf) / nl : 1;
    if ((t->split_segs > 0 || t->probe_tokens > 0 || t->carry_tokens > 0 || sd->cache_outputs) && !cx)
        return ts_fail(err, "calibrated cost: a step with front shapes, probes or a feature cache needs the model");
    double ms = 0;
    if (t->q_tokens > 0) {
        for (size_t k = 0; k < TS_ARRAY_LEN(token_ops); k++) {
            const enum cost_op op = token_ops[k];
            double y, yf = 0;
            const int64_t T = op == OP_EMBED && nf > 0 ? t->front.q_tokens : t->q_tokens;
            if (ffn_tok_ms(c, op, T, sd->ffn_chunks, extrapolate, &y, err))
                return -1;
            if (nf > 0 && op != OP_EMBED) {
                if (ffn_tok_ms(c, op, t->front.q_tokens, sd->ffn_chunks, extrapolate, &yf, err))
                    return -1;
                y = y * later_share + yf * (1 - later_share);
            }
            if (op == OP_EXPERTS && cx && cx->ep > 1) /* expert parallelism: a GPU's share of the experts */
                y /= cx->ep;
            bd->op_s[op] = y * 1e-3;
            ms += y;
        }
        double attn = attn_ms(c, sd, false) * later_share;
        if (nf > 0)
            attn += attn_ms(c, sd, true) * (1 - later_share);
        bd->op_s[OP_ATTN] = attn * 1e-3;
        ms += attn;
        double sel;
        if (select_ms(c, sd, &sel, err))
            return -1;
        bd->op_s[OP_KV_SELECT] = sel * 1e-3;
        ms += sel;
        double fc = 0;
        if (cx && feat_cache_ms(cx, c, sd, nl - nf, extrapolate, &fc, err))
            return -1;
        if (cx && sd->cache_inputs) /* Elastic-Cache's layer inputs, at the memory bandwidth */
            fc += input_cache_ms(cx, sd);
        bd->op_s[OP_FEAT_CACHE] = fc * 1e-3;
        ms += fc;
        if (cx && cx->ep > 1) { /* its MoE layers' outputs all-reduced, GPU work the host runs ahead of */
            const double ar = 1e3 * cost_ep_allreduce_s(cx, sd);
            bd->op_s[OP_ALLREDUCE] += ar * 1e-3;
            ms += ar;
        }
    }
    /* logits of rows the later layers did not compute (carried): the LM head after light layers */
    const bool carried = t->logit_rows > t->q_tokens;
    double lm = chunked(&c->lm, carried ? &c->lm_carry : NULL, t->logit_rows, sd->logit_chunk_rows, extrapolate);
    double smp = chunked(&c->sample, carried ? &c->sample_carry : NULL, t->logit_rows, sd->logit_chunk_rows, extrapolate);
    if (sd->iter_smooth) { /* the profile grid runs no IterSmooth: its GEMM and softmax as the LM head's twins */
        lm *= 2;
        smp *= 2;
    }
    if (cx && cx->impl.calib_extra_bytes != 0) /* a derived profile's sampling beyond (or short of) its base's */
        smp = fmax(smp + bandwidth_ms(cx, (double)t->logit_rows * cx->model.vocab * 2.0 * cx->impl.calib_extra_bytes),
                   0.0);
    if (sd->decode_credit) { /* the engine runs no credit fusion: its bytes at the context's bandwidth */
        if (!cx)
            return ts_fail(err, "calibrated cost: credit decoding needs the model");
        smp += bandwidth_ms(cx, (double)t->logit_rows * cx->model.vocab * CREDIT_BYTES);
    }
    bd->op_s[OP_LM_HEAD] = lm * 1e-3;
    bd->op_s[OP_SAMPLE] = smp * 1e-3;
    ms += lm + smp;
    const double host_scale = (cx && cx->op_scale ? cx->op_scale[OP_HOST] : 1.0) *
                              (cx && cx->impl.host_factor > 0 ? cx->impl.host_factor : 1.0);
    if (cx && cx->op_scale) /* an ablation (--op-scale): before the host, which it scales apart */
        ms += 1e3 * cost_op_scale_ops(cx->op_scale, bd);
    if (c->host_bound) { /* the GPU waits for the host's issue when that takes longer */
        /* a loop over the batch's rows: its kernels at the base loop's host time a kernel (the host
         * line over the kernels of its layers), scaled by an ablation of the host alone */
        const int32_t layer_kernels = cx && cx->impl.reuse_row_kernels > 0 ? impl_layer_kernels(&cx->impl) : 0;
        double row_loop = 0;
        if (layer_kernels > 0) {
            const double kernel_ms = c->host0 / (cx->model.num_layers * (double)layer_kernels);
            row_loop = (cx->op_scale ? cx->op_scale[OP_HOST] : 1.0) *
                       impl_row_loop(&cx->impl, cx->model.num_layers, t, kernel_ms);
        }
        const double host = host_scale * (c->host0 + c->host_seg * sd->num_segs) + row_loop,
                     sel = cx && cx->impl.select_batched ? 0.0 : host_scale * c->host_sel * (double)t->sel_segs;
        if (host > ms || sel > 0) {
            bd->op_s[OP_HOST] = (fmax(host - ms, 0.0) + sel) * 1e-3;
            ms = fmax(host, ms) + sel;
        }
    }
    bd->total_s = ms * 1e-3;
    *seconds = bd->total_s;
    return 0;
}

/* --- report ------------------------------------------------------------------------------ */

/* The least (or with max the largest) of a's times over b's at a's sizes */
static double curve_ratio_min_max(const struct curve *a, const struct curve *b, bool max)
{
    double r = max ? 0 : INFINITY, yb;
    for (int i = 0; i < a->n; i++)
        if (curve_eval(b, a->x[i], false, &yb) == 0 && yb > 0)
            r = max ? fmax(r, a->y[i] / yb) : fmin(r, a->y[i] / yb);
    return r;
}

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
            sd.logit_chunk_rows = PROFILE_LOGIT_CHUNK;
            step_shape_desc(&r->shape, 0, &sd);
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
    if (c->lm_carry.n > 0) /* priced as a ratio to the first curve at each chunk's size */
        fprintf(out, "lm_head and sample over carried rows (dLLM-Cache's logits): %.3f..%.3f of the curves above over "
                     "%d chunk sizes (%.0f..%.0f)\n",
                curve_ratio_min_max(&c->lm_carry, &c->lm, false), curve_ratio_min_max(&c->lm_carry, &c->lm, true),
                c->lm_carry.n, c->lm_carry.x[0], c->lm_carry.x[c->lm_carry.n - 1]);
    static const char *const term[ATTN_FEATURES] = {
        [AF_LONG_PAIRS] = " sum_long q(q+kv)", [AF_TILE_KEYS] = " sum ceil(q/64)(q+kv)", [AF_LONG_ROWS] = " sum_long q",
        [AF_SEGS] = " segs", [AF_MAX_KEYS] = " max(q+kv)", [AF_CONST] = "", [AF_KV] = " sum kv",
        [AF_LONG_TILE_KEYS] = " sum_long ceil(q/128)(q+kv)", [AF_WAVE_KEYS] = " mma_waves*keys_a_block"};
    fprintf(out, "attention (ms) =");
    for (int i = 0; i < ATTN_FEATURES; i++)
        fprintf(out, "%s%.4g%s", i == 0 ? " " : c->beta[i] < 0 ? " - " : " + ", i == 0 ? c->beta[i] : fabs(c->beta[i]),
                term[i]);
    fprintf(out, "\n");
    if (c->has_fc) { /* the feature cache's fit, with its residuals over the profile's dLLM-Cache steps */
        static const char *const fterm[FC_FEATURES] = {"", " probing", " probe rows", " computed rows", " rows",
                                                       " sum probe^2/1000"};
        double ss = 0, mx = 0;
        int n = 0;
        for (size_t i = 0; d && i < d->n; i++) {
            const struct calib_row *r = &d->rows[i];
            if (r->op != OP_FEAT_CACHE || r->fc_rows == 0 || r->ms <= 0)
                continue;
            double f[FC_FEATURES], y = 0;
            fc_features((int64_t)r->segs * r->probe, (int64_t)r->segs * r->q, (int64_t)r->segs * r->fc_rows,
                        (double)r->segs * r->probe * r->probe, f);
            for (int j = 0; j < FC_FEATURES; j++)
                y += c->fc[j] * f[j];
            const double rel = (fmax(y, 0.0) - r->ms) / r->ms;
            ss += rel * rel, mx = fmax(mx, fabs(rel)), n++;
        }
        fprintf(out, "feat_cache (ms) =");
        for (int i = 0; i < FC_FEATURES; i++)
            fprintf(out, "%s%.4g%s", i == 0 ? " " : c->fc[i] < 0 ? " - " : " + ", i == 0 ? c->fc[i] : fabs(c->fc[i]),
                    fterm[i]);
        fprintf(out, " (%d dLLM-Cache steps: rms rel res %.2f%%, max %.2f%%)\n", n, n ? 100 * sqrt(ss / n) : 0.0,
                100 * mx);
    }
    if (c->host_bound) {
        char band[96] = "";
        calib_host_band(c->host_lo, c->host_hi, band, sizeof band);
        fprintf(out, "host: a step takes max(host, GPU); host issue (ms) = %.4g + %.4g segs (fitted on %d "
                     "host-bound steps%s); eager GPU-bound steps add %.3g ms of launch gaps\n",
                c->host0, c->host_seg, c->host_steps, band, c->eager_gap);
    }
    if (c->host_bound && c->host_sel_steps > 0)
        fprintf(out, "host: a selecting step's loop over its sequences, which waits for the GPU a layer, adds %.4g ms "
                     "a selecting segment (the median over %d selecting steps)\n", c->host_sel, c->host_sel_steps);
}

/* The calibrated cost back end: a step priced by the context's calibration. */
static int calibrated_step_s(const struct cost_ctx *c, const struct step_desc *sd, double *seconds,
                             struct cost_breakdown *bd, struct ts_err *err)
{
    TS_ASSERT(c->calib != NULL);
    if (calib_step_ctx_s(c, c->calib, sd, c->extrapolate, seconds, bd, err))
        return -1;
    if (c->tp > 1 && sd->tot.q_tokens > 0 && !calib_prices_allreduce(c->calib)) {
        /* a calibration of one GPU's share profiled alone (NAME-tpN on one GPU): plus the all-reduces
         * of the O and down projections' partial sums (a profile of the split engine times its own) */
        const double t_ar = 2.0 * c->model.num_layers * allreduce_s(c->ar, 2.0 * sd->tot.q_tokens * c->model.hidden);
        *seconds += t_ar;
        if (bd)
            bd->op_s[OP_ALLREDUCE] += t_ar;
    }
    return 0;
}

const struct cost_ops cost_calibrated = {
    .name = "calibrated",
    .help = "per-op curves and an attention model fitted to the engine's measured profile of this GPU, "
            "model and implementation (tessera list calibrations)",
    .step_s = calibrated_step_s,
};
