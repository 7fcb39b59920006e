/* opgraph.c: instantiating the forward's tensor template and measuring its live bytes. */
#include "opgraph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const kind_names[OG_KIND_COUNT] = {
    "residual", "norm", "qkv", "attention", "router", "gate_up", "act", "gathered", "logits", "softmax",
    "o_proj", "add_residual", "ffn_out"};
static const char *const layout_names[OG_LAYOUT_COUNT] = {"engine", "mosaic"};

const char *og_kind_name(enum og_kind k) { return (unsigned)k < OG_KIND_COUNT ? kind_names[k] : "?"; }
const char *og_layout_name(enum og_layout l) { return (unsigned)l < OG_LAYOUT_COUNT ? layout_names[l] : "?"; }

int og_layout_find(const char *name)
{
    for (int i = 0; i < OG_LAYOUT_COUNT; i++)
        if (ts_name_eq(layout_names[i], name))
            return i;
    return -1;
}

int64_t og_masked_rows(double mask_ratio, int64_t T)
{
    return mask_ratio >= 0 ? (int64_t)ceil(mask_ratio * (double)T) : T;
}

static int32_t add(struct opgraph *g, enum og_kind k, int layer, int64_t bytes, int32_t first, int32_t last)
{
    if (bytes <= 0)
        return -1;
    ts_grow((void **)&g->t, &g->cap, (size_t)g->n + 1, sizeof *g->t);
    g->t[g->n] = (struct og_tensor){bytes, first, last, (int16_t)layer, (uint8_t)k};
    return g->n++;
}

/* a GPU's share of a split width (its heads, FFN columns or vocabulary rows) */
#define SHARE(w) (((int64_t)(w) + tp - 1) / tp)

/* One layer as Mosaic's plan lays it out (opgraph.h), from op on; *x is the layer's input and
 * becomes its output, the next layer's x. Returns the op after the layer. */
static int32_t mosaic_layer(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s, int L,
                            int32_t op, int32_t *x)
{
    const int64_t a = 2, T = s->T, h = m->hidden, tp = s->tp > 1 ? s->tp : 1;
    const int64_t qd = SHARE((int64_t)m->num_heads * m->head_dim), kvd = SHARE((int64_t)m->num_kv_heads * m->head_dim);
    const int64_t chunks = s->ffn_chunks > 0 ? s->ffn_chunks : 1, Tc = (T + chunks - 1) / chunks;
    add(g, OG_NORM, L, T * h * a, op, op + 3);          /* x_normed, read by the q, k and v projections */
    add(g, OG_QKV, L, T * qd * a, op + 1, op + 4);      /* q, k and v (RoPE in place), read by attention */
    add(g, OG_QKV, L, T * kvd * a, op + 2, op + 4);
    add(g, OG_QKV, L, T * kvd * a, op + 3, op + 4);
    add(g, OG_ATTN, L, T * qd * a, op + 4, op + 5);     /* attention, read by o_proj */
    add(g, OG_O_PROJ, L, T * h * a, op + 5, op + 7);    /* read by both outputs of the fused add-norm */
    int32_t xn2 = add(g, OG_NORM, L, T * h * a, op + 6, op + 6);       /* the FFN's input */
    int32_t res = add(g, OG_ADD_RESIDUAL, L, T * h * a, op + 7, op + 7); /* x + o */
    g->t[*x].last = op + 7;
    op += 8;
    const bool moe = model_is_moe_layer(m, L);
    if (moe) { /* fp32 router logits, whose top-k the routed GEMMs read */
        add(g, OG_ROUTER, L, T * m->num_experts * 4, op, op + 1);
        op++;
    }
    const int64_t S = moe ? SHARE((int64_t)m->moe_ffn * m->num_shared_experts) : 0;
    /* chunked (or with shared experts, which Mosaic's graphs do not have): one set of buffers reused
     * by every chunk, alive until the loop's barrier; unchunked: each dies at its reader */
    const bool loop = chunks > 1 || S > 0;
    int32_t buf[6], nb = 0, first = op;
    if (moe) {
        const int64_t rows = Tc * m->experts_top_k, Fe = SHARE(m->moe_ffn);
        buf[nb++] = add(g, OG_GATE_UP, L, rows * 2 * Fe * a, op, op + 1); /* routed gate/up */
        buf[nb++] = add(g, OG_ACT, L, rows * Fe * a, op + 1, op + 2);     /* SwiGLU */
        buf[nb++] = add(g, OG_GATHER, L, rows * h * a, op + 2, op + 3);   /* down, read by the combine */
        op += 3;
        for (int i = 0; S > 0 && i < 3; i++) /* the shared experts' gate, up and product */
            buf[nb++] = add(g, i < 2 ? OG_GATE_UP : OG_ACT, L, Tc * S * a, op + i, op + i);
        op += S > 0 ? 3 : 0;
        g->t[xn2].last = loop ? op + 2 : first;
    } else {
        const int64_t F = SHARE(m->ffn);
        buf[nb++] = add(g, OG_GATE_UP, L, Tc * F * a, op, op + 2);     /* gate, read with up */
        buf[nb++] = add(g, OG_GATE_UP, L, Tc * F * a, op + 1, op + 2); /* up */
        buf[nb++] = add(g, OG_ACT, L, Tc * F * a, op + 2, op + 3);     /* their product, read by down */
        op += 3;
        g->t[xn2].last = loop ? op + 2 : first + 1;
    }
    add(g, OG_FFN_OUT, L, T * h * a, op, loop ? op + 3 : op + 1); /* the down projection's (the combine's) output */
    if (loop) {
        for (int i = 0; i < nb; i++) /* the chunk loop's barrier, then the FFN input's */
            if (buf[i] >= 0)
                g->t[buf[i]].last = op + 1;
        op += 2;
    }
    op++;
    g->t[res].last = op;
    *x = add(g, OG_X, -1, T * h * a, op, op); /* residual + FFN output, the next layer's x */
    return op + 1;
}

static void build(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s, bool compact)
{
    g->n = 0;
    const int64_t a = 2, T = s->T, R = s->R, h = m->hidden, tp = s->tp > 1 ? s->tp : 1;
    const int64_t qkv = SHARE((int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim);
    const int64_t qd = SHARE((int64_t)m->num_heads * m->head_dim), vocab = SHARE(m->vocab);
    const int64_t chunks = s->ffn_chunks > 0 ? s->ffn_chunks : 1;
    int32_t op = 0;
    int32_t x = add(g, OG_X, -1, T * h * a, 0, 0); /* its end is set last */
    for (int L = 0; L < m->num_layers && T > 0; L++) {
        if (compact && L > 0 && model_is_moe_layer(m, L) == model_is_moe_layer(m, L - 1))
            continue; /* a layer of a kind already built */
        if (s->layout == OG_LAYOUT_MOSAIC) {
            op = mosaic_layer(g, m, s, L, op, &x);
            continue;
        }
        add(g, OG_NORM, L, T * h * a, op, op + 1);                 /* norm, read by qkv */
        add(g, OG_QKV, L, T * qkv * a, op + 1, op + 3);            /* qkv, rope (in place), attention */
        add(g, OG_ATTN, L, T * qd * a, op + 3, op + 4);            /* attention, read by o_proj */
        op += 5;                                                   /* ... o_proj adds into x */
        bool moe = model_is_moe_layer(m, L);
        int64_t width = SHARE(moe ? (int64_t)m->moe_ffn : m->ffn), rows = T;
        int32_t norm2 = add(g, OG_NORM, L, T * h * a, op, op);     /* FFN input, alive across chunks */
        op++;
        if (moe) {
            add(g, OG_ROUTER, L, T * m->num_experts * 4, op, op);   /* fp32 router logits, top-k */
            op++;
            rows = T * m->experts_top_k;                             /* routed copies */
        }
        int64_t per = (rows + chunks - 1) / chunks;
        for (int64_t c = 0; c < rows; c += per) {
            int64_t r = TS_MIN(per, rows - c);
            if (moe) /* the gathered routed inputs, then the down projection's outputs, which the
                      * combine weights into x */
                add(g, OG_GATHER, L, r * h * a, op, op + 2);
            if (s->fused_ffn && !moe) { /* act written by the gate/up GEMM itself */
                add(g, OG_ACT, L, r * width * a, op, op + 2);
            } else {
                add(g, OG_GATE_UP, L, r * 2 * width * a, op, op + 1);
                add(g, OG_ACT, L, r * width * a, op + 1, op + 2);
            }
            op += 3;                                                 /* down adds into x */
        }
        if (moe && m->num_shared_experts > 0) {
            int64_t S = SHARE((int64_t)m->moe_ffn * m->num_shared_experts), pt = (T + chunks - 1) / chunks;
            for (int64_t c = 0; c < T; c += pt) {
                int64_t r = TS_MIN(pt, T - c);
                add(g, OG_GATE_UP, L, r * 2 * S * a, op, op + 1);
                add(g, OG_ACT, L, r * S * a, op + 1, op + 2);
                op += 3;
            }
        }
        g->t[norm2].last = op - 1;
    }
    if (R > 0) {
        int32_t gathered = R < T ? add(g, OG_GATHER, -1, R * h * a, op, op) : -1;
        op++; /* gather + final norm in place */
        int64_t rc = s->logit_chunk_rows > 0 ? TS_MIN((int64_t)s->logit_chunk_rows, R) : R;
        for (int64_t c = 0; c < R; c += rc) {
            int64_t r = TS_MIN(rc, R - c);
            add(g, OG_LOGITS, -1, r * vocab * a, op, op + 1 + (s->softmax_copy_bytes > 0));
            if (s->softmax_copy_bytes > 0)
                add(g, OG_SOFTMAX, -1, r * vocab * s->softmax_copy_bytes, op + 1, op + 2);
            op += 2 + (s->softmax_copy_bytes > 0);
        }
        if (gathered >= 0)
            g->t[gathered].last = op - 1;
    }
    g->num_ops = op > 0 ? op : 1;
    if (x >= 0)
        g->t[x].last = g->num_ops - 1;
}

#undef SHARE

void opgraph_build(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s) { build(g, m, s, false); }

void opgraph_build_compact(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s)
{
    TS_ASSERT(s->layout == OG_LAYOUT_ENGINE);
    build(g, m, s, true);
}

enum part { PART_FIXED, PART_FFN, PART_LOGITS };

static enum part part_of(const struct og_tensor *t)
{
    switch ((enum og_kind)t->kind) {
    case OG_LOGITS:
    case OG_SOFTMAX: return PART_LOGITS;
    case OG_ROUTER:
    case OG_GATE_UP:
    case OG_ACT:
    case OG_FFN_OUT: return PART_FFN;
    case OG_GATHER: return t->layer >= 0 ? PART_FFN : PART_FIXED;
    default: return PART_FIXED;
    }
}

void opgraph_part_peaks(const struct opgraph *g, int64_t *fixed, int64_t *ffn, int64_t *logits)
{
    int64_t *d = xcalloc((size_t)g->num_ops + 1, sizeof *d);
    signed char *part = xcalloc((size_t)g->num_ops, 1);
    memset(part, -1, (size_t)g->num_ops);
    for (int32_t i = 0; i < g->n; i++) {
        const struct og_tensor *t = &g->t[i];
        d[t->first] += t->bytes; /* from its writer to the op before its last reader */
        d[TS_MAX(t->first + 1, t->last)] -= t->bytes;
        part[t->first] = (signed char)TS_MAX(part[t->first], (signed char)part_of(t));
    }
    int64_t peak[3] = {0, 0, 0}, live = 0;
    for (int32_t k = 0; k < g->num_ops; k++) {
        live += d[k];
        if (part[k] < 0)
            part[k] = k > 0 ? part[k - 1] : PART_FIXED;
        peak[part[k]] = TS_MAX(peak[part[k]], live);
    }
    free(d);
    free(part);
    *fixed = peak[PART_FIXED], *ffn = peak[PART_FFN], *logits = peak[PART_LOGITS];
}

void opgraph_free(struct opgraph *g)
{
    if (!g)
        return;
    free(g->t);
    memset(g, 0, sizeof *g);
}

/* live bytes per op through a difference array */
static int64_t *live_bytes(const struct opgraph *g)
{
    int64_t *d = xcalloc((size_t)g->num_ops + 1, sizeof *d);
    for (int32_t i = 0; i < g->n; i++) {
        d[g->t[i].first] += g->t[i].bytes;
        d[g->t[i].last + 1] -= g->t[i].bytes;
    }
    for (int32_t k = 1; k <= g->num_ops; k++)
        d[k] += d[k - 1];
    return d;
}

int64_t opgraph_peak(const struct opgraph *g)
{
    int64_t *d = live_bytes(g), peak = 0;
    for (int32_t k = 0; k < g->num_ops; k++)
        peak = TS_MAX(peak, d[k]);
    free(d);
    return peak;
}

double opgraph_average(const struct opgraph *g)
{
    int64_t *d = live_bytes(g);
    double sum = 0;
    for (int32_t k = 0; k < g->num_ops; k++)
        sum += (double)d[k];
    free(d);
    return sum / g->num_ops;
}

int32_t opgraph_peak_op(const struct opgraph *g, enum og_kind *largest)
{
    int64_t *d = live_bytes(g), peak = -1;
    int32_t at = 0;
    for (int32_t k = 0; k < g->num_ops; k++)
        if (d[k] > peak) {
            peak = d[k];
            at = k;
        }
    free(d);
    if (largest) {
        int64_t best = -1;
        *largest = OG_X;
        for (int32_t i = 0; i < g->n; i++)
            if (g->t[i].first <= at && at <= g->t[i].last && g->t[i].bytes > best && g->t[i].kind != OG_X) {
                best = g->t[i].bytes;
                *largest = (enum og_kind)g->t[i].kind;
            }
    }
    return at;
}

