/* calib_price.c: pricing a step with a fitted calibration (calib.h), the `calibrated` cost back end:
 * the attention model, which follows the profiled engine's launch rules; the features of attention,
 * the selection and the feature cache, which the fits read too; the token-driven ops' curves over a
 * step's tokens and chunks; the host's wait; and the report of a fit with its residuals on the
 * profile rows. */
#include "calib_internal.h"

#include <math.h>
#include <string.h>

#include "attn_rules.h"
#include "model.h"

/* How far a step's pricing may reach: past its curves' last points (allow, --extrapolate), and whether
 * it did (the step's breakdown says so: cost_breakdown.beyond). */
struct reach {
    bool allow, beyond;
};

/* f(x): flat below the first point, linear past the last (when allowed, and then said in rx). */
static int curve_eval(const struct curve *c, double x, struct reach *rx, double *y)
{
    if (x <= c->x[0]) {
        *y = c->y[0];
        return 0;
    }
    if (x > c->x[c->n - 1]) {
        if (!rx->allow)
            return -1;
        rx->beyond = true;
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
void calib_attn_features(const struct calib_row *r, int heads, int kv_heads, int sms, int rules, double *f)
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

/* The selection's features, summed over the selecting segments: a constant (its launches a layer),
 * the segments, their candidates and the most candidates one has (each segment's ranking is
 * one block's walk over them, the critical path of a step of few segments). */
void calib_select_features(int64_t segs, int64_t cand, int64_t max_cand, double *f)
{
    f[0] = 1, f[1] = (double)segs, f[2] = (double)cand, f[3] = (double)max_cand;
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
    calib_select_features(sd->tot.sel_segs, sd->tot.sel_cand, sd->tot.sel_max_cand, f);
    for (int j = 0; j < SELECT_FEATURES; j++)
        *ms += c->sel[heads][j] * f[j];
    *ms = fmax(*ms, 0.0);
    return 0;
}

bool calib_prices_selection(const struct calib *c, bool per_head) { return c->has_sel[per_head ? 1 : 0]; }
bool calib_prices_allreduce(const struct calib *c) { return c->tok[OP_ALLREDUCE].n > 0; }

/* The feature cache's features, over a step's dLLM-Cache segments: a constant (a layer's launches),
 * whether any probes (the value check's four launches a layer), the probe rows (their norm, V
 * projection and similarity), the computed rows (their outputs stored and added), the hidden rows
 * (the carried ones' adds, a block each), and the value check's ranking (each probing segment's
 * probe rows squared, in thousands). */
void calib_fc_features(int64_t probe_rows, int64_t computed, int64_t rows, double probe_sq, double *f)
{
    f[0] = 1, f[1] = probe_rows > 0, f[2] = (double)probe_rows, f[3] = (double)computed, f[4] = (double)rows;
    f[5] = probe_sq * 1e-3;
}

bool calib_prices_feature_cache(const struct calib *c) { return c->has_fc; }

/* --- pricing ----------------------------------------------------------------------------- */

/* R rows in chunks of `chunk` (<= 0: one) by the per-chunk curve cv; with `carry` (n > 0) each chunk
 * scaled by carry's time over cv's at its size (taken within carry's sizes, flat outside them) */
static double chunked(const struct curve *cv, const struct curve *carry, int64_t R, int64_t chunk, struct reach *rx)
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
            curve_eval(cv, max_rows, rx, &y);
            total += ratio * y * rows / max_rows;
        } else {
            curve_eval(cv, rows, rx, &y);
            total += ratio * y;
        }
    }
    return total;
}

/* The time (ms) of a token-driven op over a step whose every layer ran T packed tokens; -1 with err
 * beyond the profiled range. */
static int tok_ms(const struct calib *c, enum cost_op op, int64_t T, struct reach *rx, double *ms,
                  struct ts_err *err)
{
    *ms = 0;
    const struct curve *cv = &c->tok[op];
    if (!cv->n || T <= 0)
        return 0;
    if (curve_eval(cv, (double)T, rx, ms))
        return ts_fail(err, "calibrated cost: a step of %lld packed tokens is beyond the profiled range (up to "
                            "%lld) of %s on %s; profile larger steps or allow extrapolation (--extrapolate)",
                       (long long)T, (long long)c->max_T, c->model, c->device);
    return 0;
}

/* tok_ms of a dense FFN op (gate_up, act, down) run in `chunks` pieces, as the engine splits a step's
 * rows (ceil(T / chunks) rows a piece, the last the rest); any other op, or one piece, over T. */
static int ffn_tok_ms(const struct calib *c, enum cost_op op, int64_t T, int32_t chunks, struct reach *rx,
                      double *ms, struct ts_err *err)
{
    if (chunks <= 1 || T <= 1 || (op != OP_GATE_UP && op != OP_ACT && op != OP_DOWN))
        return tok_ms(c, op, T, rx, ms, err);
    const int64_t rows = (T + chunks - 1) / chunks, full = T / rows, rest = T - full * rows;
    double piece, last = 0;
    if (tok_ms(c, op, rows, rx, &piece, err) || tok_ms(c, op, rest, rx, &last, err))
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
                         struct reach *rx, double *ms, struct ts_err *err)
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
        calib_fc_features(t->probe_tokens, t->q_tokens, t->rows, sq, f);
        for (int j = 0; j < FC_FEATURES; j++)
            *ms += c->fc[j] * f[j];
        *ms = fmax(*ms, 0.0);
        return 0;
    }
    double norm = 0, qkv = 0;
    if (tok_ms(c, OP_NORM, t->probe_tokens, rx, &norm, err) ||
        tok_ms(c, OP_QKV, t->probe_tokens, rx, &qkv, err))
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
    struct reach reach = {.allow = extrapolate}, *rx = &reach;
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
            if (ffn_tok_ms(c, op, T, sd->ffn_chunks, rx, &y, err))
                return -1;
            if (nf > 0 && op != OP_EMBED) {
                if (ffn_tok_ms(c, op, t->front.q_tokens, sd->ffn_chunks, rx, &yf, err))
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
        if (cx && cx->impl.key_rope_bytes > 0) { /* a loop's work over every cached key it reads */
            const double keys = (nl - nf) * (double)(t->attn_kv_read - t->q_tokens) +
                                nf * (double)(t->front.attn_kv_read - t->front.q_tokens),
                         rope = bandwidth_ms(cx, keys * model_kv_dim(&cx->model) * cx->impl.key_rope_bytes);
            bd->op_s[OP_ROPE] += rope * 1e-3;
            ms += rope;
        }
        double sel;
        if (select_ms(c, sd, &sel, err))
            return -1;
        bd->op_s[OP_KV_SELECT] = sel * 1e-3;
        ms += sel;
        double fc = 0;
        if (cx && feat_cache_ms(cx, c, sd, nl - nf, rx, &fc, err))
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
    double lm = chunked(&c->lm, carried ? &c->lm_carry : NULL, t->logit_rows, sd->logit_chunk_rows, rx);
    double smp = chunked(&c->sample, carried ? &c->sample_carry : NULL, t->logit_rows, sd->logit_chunk_rows, rx);
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
                              (cx && cx->impl.host_factor > 0 && !c->host_own_loop ? cx->impl.host_factor : 1.0);
    if (cx && cx->op_scale) /* an ablation (--op-scale): before the host, which it scales apart */
        ms += 1e3 * cost_op_scale_ops(cx->op_scale, bd);
    if (c->host_bound) { /* the GPU waits for the host's issue when that takes longer */
        /* a loop over the batch's rows: its kernels at the base loop's host time a kernel (the host
         * line over the kernels of its layers), scaled by an ablation of the host alone */
        const int32_t layer_kernels = cx && cx->impl.reuse_row_kernels > 0 ? impl_layer_kernels(&cx->impl) : 0;
        double row_loop = 0;
        if (layer_kernels > 0) {
            const double base0 = c->host_own_loop && cx->impl.host_factor > 0 ? c->host0 / cx->impl.host_factor : c->host0;
            const double kernel_ms = base0 / (cx->model.num_layers * (double)layer_kernels);
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
    bd->beyond = reach.beyond;
    *seconds = bd->total_s;
    return 0;
}

/* --- report ------------------------------------------------------------------------------ */

/* The least (or with max the largest) of a's times over b's at a's sizes */
static double curve_ratio_min_max(const struct curve *a, const struct curve *b, bool max)
{
    double r = max ? 0 : INFINITY, yb;
    for (int i = 0; i < a->n; i++)
        if (curve_eval(b, a->x[i], &(struct reach){0}, &yb) == 0 && yb > 0)
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
            calib_fc_features((int64_t)r->segs * r->probe, (int64_t)r->segs * r->q, (int64_t)r->segs * r->fc_rows,
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

void calib_host_band(double lo, double hi, char *buf, size_t len)
{
    if (lo > 0 && hi > 0)
        snprintf(buf, len, ", 80%% of them %.2f-%.2fx the line", lo, hi);
    else if (len)
        buf[0] = '\0';
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
         * of the O and down projections' partial sums and the sampler's gather (a profile of the split
         * engine times its own) */
        const double t_ar = 2.0 * c->model.num_layers * allreduce_s(c->ar, 2.0 * sd->tot.q_tokens * c->model.hidden) +
                            cost_tp_sample_gather_s(c, sd);
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
