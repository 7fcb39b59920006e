/*
 * eng_ref.c: the CPU reference of whole steps (struct eng_ref): each request's K/V, attention and FFN
 * outputs and layer inputs kept in fp32 by key, and a step run through every layer as the engine's plan
 * has it: plain, layered (the feature cache and its value checks), evicting (FOCUS) or widening, with
 * its selections, MoE layers and block-sparse patterns; and the engine's own choices forced on it
 * (kept keys, picked rows, experts), tallied where its own differ. Its single ops are eng_ref_ops.c's.
 * Written for clarity, not speed: tiny models only.
 */
#include "eng_ref.h"
#include "eng_ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ref_cache {
    float *k, *v;   /* [layers][cap][Hkv * d] */
    float *fa, *ff; /* [layers][cap][h]: each key's attention and FFN outputs (layered steps) */
    float *xi;      /* [layers][cap][h]: each key's input to the layer, as a step last computed it */
    int32_t cap;
    int32_t done;   /* keys 0..done-1 were run through every layer (an evicting step's progress + 1) */
};

#define REF_MAX_BLOCKS 8

struct eng_ref {
    struct model_cfg m;
    struct eng_layout lay;
    float *w; /* the weights in fp32, same offsets as the engine's buffer */
    struct ref_cache *reqs;
    int32_t num_reqs;
    const int32_t *forced; /* the next step's kept keys (eng_ref_force_selection), or NULL */
    int forced_keep;
    int64_t rank_missing, rank_kept; /* the forced keys its own ranking would not keep, of all kept */
    const int32_t *forced_pick; /* the next step's picked rows (eng_ref_force_picks), or NULL */
    int forced_max_probe;
    int64_t pick_missing, pick_all; /* the forced picks its own value check would not pick, of all */
    const int32_t *forced_route; /* the next step's experts (eng_ref_force_routes), or NULL */
    const float *embed_add;      /* the next step's additions to its embeddings (eng_ref_add_embed), or NULL */
    int64_t route_stride, route_differ, route_all;
    bool balanced_routes; /* eng_ref_balance_routes */
    struct ref_blocks {   /* the next step's block-sparse patterns (eng_ref_force_blocks) */
        int32_t req, block;
        const uint8_t *keep;
    } blocks[REF_MAX_BLOCKS];
    int num_blocks;
};

/* Layer L's bias, QK norms and rotary embedding over the T rows of qkv at positions pos. */
static void layer_qkv_rope(const struct eng_ref *r, int L, float *qkv, const int32_t *pos, int T)
{
    const struct model_cfg *m = &r->m;
    ref_qkv_rope(qkv, eng_ref_weight(r, W_QKV_BIAS, L), eng_ref_weight(r, W_Q_NORM, L), eng_ref_weight(r, W_K_NORM, L),
                 model_rotary_dim(m), model_rms_eps(m), pos, T, m->num_heads, m->num_kv_heads, m->head_dim,
                 (float)m->rope_theta);
}

const float *eng_ref_weight(const struct eng_ref *r, enum w_kind k, int layer)
{
    const struct eng_tensor *t = eng_layout_find(&r->lay, k, layer);
    return t ? r->w + t->offset : NULL;
}

int eng_ref_create(const struct model_cfg *m, const bf16_t *weights, uint64_t seed,
                   struct eng_ref **out, struct ts_err *err)
{
    struct eng_ref *r = xcalloc(1, sizeof *r);
    r->m = *m;
    if (eng_layout_build(m, &r->lay, err)) {
        free(r);
        return -1;
    }
    r->w = xcalloc((size_t)r->lay.total, sizeof *r->w);
    bf16_t *tmp = NULL;
    if (!weights) {
        tmp = xmalloc(sizeof *tmp * (size_t)r->lay.total);
        for (int i = 0; i < r->lay.n; i++)
            eng_fill_host(&r->lay, i, seed, tmp + r->lay.t[i].offset);
        weights = tmp;
    }
    for (int i = 0; i < r->lay.n; i++) {
        const struct eng_tensor *t = &r->lay.t[i];
        for (int64_t j = 0; j < t->rows * t->cols; j++)
            r->w[t->offset + j] = eng_bf2f(weights[t->offset + j]);
    }
    free(tmp);
    *out = r;
    return 0;
}

void eng_ref_release(struct eng_ref *r, int32_t req_id)
{
    if (req_id < 0 || req_id >= r->num_reqs)
        return;
    free(r->reqs[req_id].k);
    free(r->reqs[req_id].v);
    free(r->reqs[req_id].fa);
    free(r->reqs[req_id].ff);
    free(r->reqs[req_id].xi);
    memset(&r->reqs[req_id], 0, sizeof r->reqs[req_id]);
}

void eng_ref_destroy(struct eng_ref *r)
{
    if (!r)
        return;
    for (int32_t i = 0; i < r->num_reqs; i++)
        eng_ref_release(r, i);
    free(r->reqs);
    free(r->w);
    eng_layout_free(&r->lay);
    free(r);
}

static struct ref_cache *cache_for(struct eng_ref *r, int32_t id, int32_t keys)
{
    if (id >= r->num_reqs) {
        int32_t n = TS_MAX(id + 1, 2 * r->num_reqs);
        r->reqs = xrealloc(r->reqs, sizeof *r->reqs * (size_t)n);
        memset(r->reqs + r->num_reqs, 0, sizeof *r->reqs * (size_t)(n - r->num_reqs));
        r->num_reqs = n;
    }
    struct ref_cache *c = &r->reqs[id];
    if (keys > c->cap) {
        const size_t row = (size_t)r->m.num_kv_heads * r->m.head_dim, h = (size_t)r->m.hidden;
        float **const arr[] = {&c->k, &c->v, &c->fa, &c->ff, &c->xi};
        const size_t width[] = {row, row, h, h, h};
        for (size_t a = 0; a < TS_ARRAY_LEN(arr); a++) {
            float *n = xcalloc((size_t)r->m.num_layers * keys * width[a], sizeof *n);
            for (int L = 0; L < r->m.num_layers && c->cap > 0; L++)
                memcpy(n + (size_t)L * keys * width[a], *arr[a] + (size_t)L * c->cap * width[a],
                       sizeof *n * c->cap * width[a]);
            free(*arr[a]);
            *arr[a] = n;
        }
        c->cap = keys;
    }
    return c;
}

void eng_ref_force_selection(struct eng_ref *r, const int32_t *idx, int max_keep)
{
    r->forced = idx;
    r->forced_keep = max_keep;
}

/* Segment s's selection in layer L, the n-th selecting segment of the step (its own ranking, or the
 * kept keys eng_ref_force_selection gave). */
static void ref_select(struct eng_ref *r, const struct step_desc *sd, const float *q, int q_stride, int s, int n,
                       int L, float *kc, float *vc, int num_sel)
{
    const struct model_cfg *m = &r->m;
    const struct segment *g = &sd->segs[s];
    const int cand = g->q - g->score_rows, sets = sd->select_heads ? m->num_kv_heads : 1;
    if (!r->forced) {
        ref_kv_select(q, q_stride, g->score_rows, kc, vc, cand, g->keep, m->num_heads, m->num_kv_heads,
                      m->head_dim, sd->select_kernel, sd->select_heads, NULL);
        return;
    }
    int32_t *idx = xmalloc(sizeof *idx * (size_t)sets * g->keep), *own = xmalloc(sizeof *own * (size_t)sets * g->keep);
    ref_kv_rank(q, q_stride, g->score_rows, kc, cand, g->keep, m->num_heads, m->num_kv_heads, m->head_dim,
                sd->select_kernel, sd->select_heads, own);
    for (int set = 0; set < sets; set++) {
        int32_t *f = idx + (size_t)set * g->keep;
        const int32_t *o = own + (size_t)set * g->keep;
        memcpy(f, r->forced + (((size_t)L * num_sel + n) * sets + set) * r->forced_keep, sizeof *idx * (size_t)g->keep);
        for (int j = 0, i = 0; j < g->keep; j++) { /* both ascending */
            while (i < g->keep && o[i] < f[j])
                i++;
            r->rank_missing += i == g->keep || o[i] != f[j];
        }
        r->rank_kept += g->keep;
    }
    ref_kv_compact(kc, vc, idx, g->keep, m->num_kv_heads, m->head_dim, sd->select_heads);
    free(idx), free(own);
}

void eng_ref_force_picks(struct eng_ref *r, const int32_t *idx, int max_probe)
{
    r->forced_pick = idx;
    r->forced_max_probe = max_probe;
}

/* A tally's share *part / *all (0 of nothing), both counts then cleared for the next steps. */
static double take_share(int64_t *part, int64_t *all)
{
    const double f = *all ? (double)*part / (double)*all : 0;
    *part = *all = 0;
    return f;
}

double eng_ref_pick_disagreement(struct eng_ref *r) { return take_share(&r->pick_missing, &r->pick_all); }

int64_t eng_ref_pick_missing(struct eng_ref *r, int64_t *all)
{
    const int64_t missing = r->pick_missing;
    *all = r->pick_all;
    r->pick_missing = r->pick_all = 0;
    return missing;
}

double eng_ref_ranking_disagreement(struct eng_ref *r) { return take_share(&r->rank_missing, &r->rank_kept); }

/* The forced picks use[n] its own own[n] would not have made (both ascending), counted. */
static void tally_forced_picks(struct eng_ref *r, const int32_t *own, const int32_t *use, int n)
{
    for (int j = 0, k = 0; j < n; j++) {
        while (k < n && own[k] < use[j])
            k++;
        r->pick_missing += k == n || own[k] != use[j];
    }
    r->pick_all += n;
}

/* The n-th probing segment's value check in layer L (f: its eng_plan.probe entry): the probe rows'
 * new V (their normalised rows projected, plus the bias) compared with the cached V, the picked rows
 * (its own, or those eng_ref_force_picks gave) made the computed rows crow/cpos from f[3] on, and
 * every probe row's new V cached. */
static void ref_pick(struct eng_ref *r, int L, int n, int num_probe, const int32_t *f, const float *x, float *vc,
                     int32_t *crow, int32_t *cpos)
{
    const struct model_cfg *m = &r->m;
    const int h = m->hidden, qd = m->num_heads * m->head_dim, kvd = m->num_kv_heads * m->head_dim;
    const int x_first = f[0], rows = f[1], picked = f[2], comp = f[3], pos0 = f[4];
    float *hp = xmalloc(sizeof *hp * (size_t)rows * h), *vn = xmalloc(sizeof *vn * (size_t)rows * kvd);
    int32_t *own = xmalloc(sizeof *own * (size_t)picked), *use = own;
    ref_rmsnorm(hp, x + (size_t)x_first * h, eng_ref_weight(r, W_ATTN_NORM, L), rows, h, model_rms_eps(&r->m));
    ref_linear(vn, hp, eng_ref_weight(r, W_QKV, L) + (size_t)(qd + kvd) * h, rows, h, kvd);
    const float *bias = eng_ref_weight(r, W_QKV_BIAS, L);
    for (int i = 0; i < rows && bias; i++)
        for (int c = 0; c < kvd; c++)
            vn[(size_t)i * kvd + c] += bias[qd + kvd + c];
    ref_fc_pick(vn, vc + (size_t)pos0 * kvd, rows, kvd, picked, own);
    if (r->forced_pick) {
        use = (int32_t *)r->forced_pick + ((size_t)L * num_probe + n) * r->forced_max_probe;
        tally_forced_picks(r, own, use, picked);
    }
    for (int k = 0; k < picked; k++) {
        crow[comp + k] = x_first + use[k];
        cpos[comp + k] = pos0 + use[k];
    }
    memcpy(vc + (size_t)pos0 * kvd, vn, sizeof *vn * (size_t)rows * kvd);
    free(hp), free(vn), free(own);
}

/* One half of a layer's residual over the hidden rows: a computed row's output (out[j], j =
 * xcomp[row]) is cached at its key and added, every other row adds the one cached there. cache(s, i):
 * segment s's key i of this layer's half. */
static void ref_fc_residual(struct eng_ref *r, const struct step_desc *sd, int L, bool ffn, float *x,
                            const float *out, const int32_t *xcomp)
{
    const int h = r->m.hidden;
    for (int s = 0, x0 = 0; s < sd->num_segs; s++) {
        struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
        float *cache = (ffn ? c->ff : c->fa) + (size_t)L * c->cap * h;
        const int rows = segment_rows(&sd->segs[s]);
        for (int i = 0; i < rows; i++) {
            float *xr = x + (size_t)(x0 + i) * h, *cr = cache + (size_t)i * h;
            const int j = xcomp[x0 + i];
            if (j >= 0)
                memcpy(cr, out + (size_t)j * h, sizeof *cr * h);
            for (int k = 0; k < h; k++)
                xr[k] += cr[k];
        }
        x0 += rows;
    }
}

/* A layered step (eng_plan.h): every segment's hidden rows, each layer computing those of its plan
 * (the front layers' or the later ones', with the picked rows of the value checks). */
static void ref_step_layered(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p, int block_size,
                             float *x)
{
    const struct model_cfg *m = &r->m;
    const int X = p->X, h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim, F = m->ffn;
    const int width = (H + 2 * Hkv) * d, kvrow = Hkv * d;
    const size_t Tmax = (size_t)TS_MAX(1, TS_MAX(p->T, p->front ? p->front->T : 0)); /* the most rows a layer computes */
    const int nf = p->front ? step_front_layers(sd, m->num_layers) : 0;
    float *hn = xmalloc(sizeof *hn * Tmax * h), *qkv = xmalloc(sizeof *qkv * Tmax * width);
    float *att = xmalloc(sizeof *att * Tmax * H * d), *out = xmalloc(sizeof *out * Tmax * h);
    float *gu = xmalloc(sizeof *gu * Tmax * 2 * F), *act = xmalloc(sizeof *act * Tmax * F);
    int32_t *crow = xmalloc(sizeof *crow * Tmax), *cpos = xmalloc(sizeof *cpos * Tmax);
    int32_t *xcomp = xmalloc(sizeof *xcomp * (size_t)X);
    for (int s = 0; s < sd->num_segs; s++)
        cache_for(r, sd->segs[s].req_id, segment_rows(&sd->segs[s]));
    for (int L = 0; L < m->num_layers; L++) {
        const struct eng_plan *lp = L < nf ? p->front : p;
        const int T = lp->T;
        memcpy(crow, lp->c_row, sizeof *crow * (size_t)T);
        memcpy(cpos, lp->tok_pos, sizeof *cpos * (size_t)T);
        if (lp == p)
            for (int s = 0, n = 0; s < sd->num_segs; s++) {
                if (sd->segs[s].probe == 0)
                    continue;
                struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
                ref_pick(r, L, n, p->num_probe, p->probe + 5 * n, x, c->v + (size_t)L * c->cap * kvrow, crow, cpos);
                n++;
            }
        for (int i = 0; i < X; i++)
            xcomp[i] = -1;
        for (int j = 0; j < T; j++) {
            xcomp[crow[j]] = j;
            ref_rmsnorm(hn + (size_t)j * h, x + (size_t)crow[j] * h, eng_ref_weight(r, W_ATTN_NORM, L), 1, h,
                        model_rms_eps(&r->m));
        }
        ref_linear(qkv, hn, eng_ref_weight(r, W_QKV, L), T, h, width);
        layer_qkv_rope(r, L, qkv, cpos, T);
        for (int s = 0; s < lp->S; s++) {
            struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
            float *kc = c->k + (size_t)L * c->cap * kvrow, *vc = c->v + (size_t)L * c->cap * kvrow;
            for (int i = 0; i < lp->q_len[s]; i++) { /* a computed row's key is its position */
                const int j = lp->q_start[s] + i;
                memcpy(kc + (size_t)cpos[j] * kvrow, qkv + (size_t)j * width + H * d, sizeof *kc * kvrow);
                memcpy(vc + (size_t)cpos[j] * kvrow, qkv + (size_t)j * width + (H + Hkv) * d, sizeof *vc * kvrow);
            }
            ref_attention(att + (size_t)lp->q_start[s] * H * d, qkv + (size_t)lp->q_start[s] * width, width, kc, vc,
                          lp->q_len[s], lp->key_len[s], lp->kv_cached[s], H, Hkv, d, block_size, 1.0f / sqrtf((float)d));
        }
        ref_linear(out, att, eng_ref_weight(r, W_O, L), T, H * d, h);
        ref_fc_residual(r, sd, L, false, x, out, xcomp);
        for (int j = 0; j < T; j++)
            ref_rmsnorm(hn + (size_t)j * h, x + (size_t)crow[j] * h, eng_ref_weight(r, W_FFN_NORM, L), 1, h,
                        model_rms_eps(&r->m));
        ref_linear(gu, hn, eng_ref_weight(r, W_GU, L), T, h, 2 * F);
        ref_swiglu(act, gu, T, F);
        ref_linear(out, act, eng_ref_weight(r, W_DOWN, L), T, F, h);
        ref_fc_residual(r, sd, L, true, x, out, xcomp);
    }
    free(hn), free(qkv), free(att), free(out), free(gu), free(act), free(crow), free(cpos), free(xcomp);
}

/* Scratch of a plain layer over at most T rows. */
struct ref_bufs {
    float *hn, *qkv, *att, *tmp, *act;
};

static void bufs_init(struct ref_bufs *b, const struct model_cfg *m, int T)
{
    const size_t t = (size_t)(T ? T : 1), width = (size_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    const size_t F = (size_t)TS_MAX(TS_MAX(m->ffn, m->num_shared_experts * m->moe_ffn), 1); /* the widest dense FFN */
    b->hn = xmalloc(sizeof *b->hn * t * m->hidden);
    b->qkv = xmalloc(sizeof *b->qkv * t * width);
    b->att = xmalloc(sizeof *b->att * t * m->num_heads * m->head_dim);
    b->tmp = xmalloc(sizeof *b->tmp * t * TS_MAX((size_t)m->hidden, 2 * F));
    b->act = xmalloc(sizeof *b->act * t * F);
}

static void bufs_free(struct ref_bufs *b)
{
    free(b->hn), free(b->qkv), free(b->att), free(b->tmp), free(b->act);
}

void eng_ref_add_embed(struct eng_ref *r, const float *add) { r->embed_add = add; }

void eng_ref_force_routes(struct eng_ref *r, const int32_t *ids, int64_t stride)
{
    r->forced_route = ids;
    r->route_stride = stride;
}

void eng_ref_balance_routes(struct eng_ref *r, bool on) { r->balanced_routes = on; }

void eng_ref_force_blocks(struct eng_ref *r, int32_t req_id, const uint8_t *keep, int block)
{
    if (r->num_blocks < REF_MAX_BLOCKS)
        r->blocks[r->num_blocks++] = (struct ref_blocks){req_id, block, keep};
}

double eng_ref_route_disagreement(struct eng_ref *r) { return take_share(&r->route_differ, &r->route_all); }

/* Layer L's mixture of experts over T normalised rows hn into out [T, h]: each row's router logits
 * (rounded to bf16, as the engine's router GEMM writes them), its k experts' FFNs weighted, plus the
 * shared experts' FFN. */
static void ref_moe(struct eng_ref *r, int L, const float *hn, int T, float *out)
{
    const struct model_cfg *m = &r->m;
    const int h = m->hidden, E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn;
    const int S = m->num_shared_experts * Fe, W = TS_MAX(Fe, S);
    float *logits = xmalloc(sizeof *logits * (size_t)E), *wts = xmalloc(sizeof *wts * (size_t)k);
    float *gu = xmalloc(sizeof *gu * 2 * (size_t)W), *act = xmalloc(sizeof *act * (size_t)W);
    float *y = xmalloc(sizeof *y * (size_t)h);
    int32_t *ids = xmalloc(sizeof *ids * (size_t)k);
    const struct k_moe_router rt = eng_moe_router(m, NULL);
    const float *bias = eng_ref_weight(r, W_ROUTER_BIAS, L);
    for (int t = 0; t < T; t++) {
        const float *row = hn + (size_t)t * h;
        float *o = out + (size_t)t * h;
        ref_linear(logits, row, eng_ref_weight(r, W_ROUTER, L), 1, h, E);
        for (int e = 0; e < E; e++)
            logits[e] = eng_bf2f(eng_f2bf(logits[e]));
        ref_moe_route(logits, E, k, k_moe_balance(r->balanced_routes, L), &rt, bias, t, ids, wts);
        if (r->forced_route) { /* the engine's experts, weighted by this row's own probabilities */
            const int32_t *f = r->forced_route + (size_t)L * r->route_stride + (size_t)t * k;
            bool same = true;
            for (int j = 0; j < k; j++) {
                bool found = false;
                for (int i = 0; i < k; i++)
                    found |= ids[i] == f[j];
                same &= found;
            }
            r->route_differ += !same;
            r->route_all++;
            for (int j = 0; j < k; j++)
                ids[j] = f[j] >= 0 && f[j] < E ? f[j] : ids[j];
            ref_route_weights(logits, E, k, &rt, ids, wts);
        }
        memset(o, 0, sizeof *o * (size_t)h);
        for (int j = 0; j < k; j++) {
            ref_linear(gu, row, eng_ref_weight(r, W_EXP_GU, L) + (size_t)ids[j] * 2 * Fe * h, 1, h, 2 * Fe);
            ref_swiglu(act, gu, 1, Fe);
            ref_linear(y, act, eng_ref_weight(r, W_EXP_DOWN, L) + (size_t)ids[j] * h * Fe, 1, Fe, h);
            for (int c = 0; c < h; c++)
                o[c] += wts[j] * y[c];
        }
        if (S > 0) {
            ref_linear(gu, row, eng_ref_weight(r, W_GU, L), 1, h, 2 * S);
            ref_swiglu(act, gu, 1, S);
            ref_linear(y, act, eng_ref_weight(r, W_DOWN, L), 1, S, h);
            for (int c = 0; c < h; c++)
                o[c] += y[c];
        }
    }
    free(logits), free(wts), free(gu), free(act), free(y), free(ids);
}

/* Plan p's rows x kept as their keys' inputs to layer L (the input cache), row i at key pos[i]. */
static void keep_inputs(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p, const int32_t *pos,
                        int L, const float *x)
{
    const size_t h = (size_t)r->m.hidden;
    for (int s = 0; s < p->S; s++) {
        struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
        for (int i = p->q_start[s]; i < p->q_start[s] + p->q_len[s]; i++)
            memcpy(c->xi + ((size_t)L * c->cap + pos[i]) * h, x + (size_t)i * h, sizeof *x * h);
    }
}

/* Layer L of plan p over its T rows x: each row's K/V stored at its position pos[] (its key; the
 * plan's tok_pos, or an evicting step's kept rows), each segment's attention over key_len[s] keys,
 * its selection where it selects; the qkv rows are left in b->qkv. */
static void ref_plain_layer(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p, const int32_t *pos,
                            const int32_t *key_len, int L, int block_size, float *x, struct ref_bufs *b)
{
    const struct model_cfg *m = &r->m;
    const int T = p->T, h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int F = eng_ffn_width(m, L), width = (H + 2 * Hkv) * d, kvrow = Hkv * d;
    int nsel = 0;
    keep_inputs(r, sd, p, pos, L, x);
    ref_rmsnorm(b->hn, x, eng_ref_weight(r, W_ATTN_NORM, L), T, h, model_rms_eps(&r->m));
    ref_linear(b->qkv, b->hn, eng_ref_weight(r, W_QKV, L), T, h, width);
    layer_qkv_rope(r, L, b->qkv, pos, T);
    for (int s = 0; s < p->S; s++) {
        struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
        float *kc = c->k + (size_t)L * c->cap * kvrow, *vc = c->v + (size_t)L * c->cap * kvrow;
        for (int i = 0; i < p->q_len[s]; i++) {
            const float *row = b->qkv + (size_t)(p->q_start[s] + i) * width;
            const int key = pos[p->q_start[s] + i];
            memcpy(kc + (size_t)key * kvrow, row + H * d, sizeof *kc * kvrow);
            memcpy(vc + (size_t)key * kvrow, row + (H + Hkv) * d, sizeof *vc * kvrow);
        }
        const struct ref_blocks *fb = NULL;
        for (int i = 0; i < r->num_blocks; i++)
            if (r->blocks[i].req == sd->segs[s].req_id)
                fb = &r->blocks[i];
        if (fb) { /* its every position by the pattern */
            const int nb = (p->q_len[s] + fb->block - 1) / fb->block;
            ref_attention_blocks(b->att + (size_t)p->q_start[s] * H * d, b->qkv + (size_t)p->q_start[s] * width, width,
                                 kc, vc, p->q_len[s], H, Hkv, d, fb->block, fb->keep + (size_t)L * H * nb * nb,
                                 1.0f / sqrtf((float)d));
        } else {
            ref_attention(b->att + (size_t)p->q_start[s] * H * d, b->qkv + (size_t)p->q_start[s] * width, width, kc,
                          vc, p->q_len[s], key_len[s], p->kv_cached[s], H, Hkv, d, block_size, 1.0f / sqrtf((float)d));
        }
        const struct segment *g = &sd->segs[s];
        if (g->keep > 0)
            ref_select(r, sd, b->qkv + (size_t)(p->q_start[s] + g->q - g->score_rows) * width, width, s, nsel++, L, kc,
                       vc, (int)sd->tot.sel_segs);
    }
    ref_linear(b->tmp, b->att, eng_ref_weight(r, W_O, L), T, H * d, h);
    for (int64_t i = 0; i < (int64_t)T * h; i++)
        x[i] += b->tmp[i];
    ref_rmsnorm(b->hn, x, eng_ref_weight(r, W_FFN_NORM, L), T, h, model_rms_eps(&r->m));
    if (model_is_moe_layer(m, L)) {
        ref_moe(r, L, b->hn, T, b->tmp);
    } else {
        ref_linear(b->tmp, b->hn, eng_ref_weight(r, W_GU, L), T, h, 2 * F);
        ref_swiglu(b->act, b->tmp, T, F);
        ref_linear(b->tmp, b->act, eng_ref_weight(r, W_DOWN, L), T, F, h);
    }
    for (int64_t i = 0; i < (int64_t)T * h; i++)
        x[i] += b->tmp[i];
}

/* An evicting step (eng_plan.h) over x [front rows, h]: the front layers, each evicting segment's
 * importance in layers 0 and 1, its picks (its own, or those eng_ref_force_picks gave) after the
 * front layers, the kept rows moved to x's first T rows and the later layers over them. */
static void ref_step_evicting(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p, int block_size,
                              float *x)
{
    const struct model_cfg *m = &r->m;
    const struct eng_plan *fp = p->front;
    const int h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim, kvrow = Hkv * d;
    const int width = (H + 2 * Hkv) * d, nf = TS_MIN(sd->front_layers, m->num_layers);
    struct ref_bufs b;
    bufs_init(&b, m, fp->T);
    float *imp = xmalloc(sizeof *imp * (size_t)(2 * p->probe_rows + 1)), *delta = xmalloc(sizeof *delta * (size_t)(p->max_probe + 1));
    int32_t *crow = xmalloc(sizeof *crow * (size_t)(p->T + 1)), *cpos = xmalloc(sizeof *cpos * (size_t)(p->T + 1));
    int32_t *own = xmalloc(sizeof *own * (size_t)(p->max_probe + 1)), *klen = xmalloc(sizeof *klen * (size_t)(p->S + 1));
    float *ck = xmalloc(sizeof *ck * (size_t)(p->max_probe + 1) * kvrow); /* a segment's candidates' keys */
    memcpy(klen, p->key_len, sizeof *klen * (size_t)p->S);
    memcpy(crow, p->c_row, sizeof *crow * (size_t)p->T);
    memcpy(cpos, p->tok_pos, sizeof *cpos * (size_t)p->T);
    for (int s = 0; s < fp->S; s++)
        cache_for(r, sd->segs[s].req_id, fp->key_len[s]);
    for (int L = 0; L < nf; L++) {
        ref_plain_layer(r, sd, fp, fp->tok_pos, fp->key_len, L, block_size, x, &b);
        for (int n = 0, g0 = 0; L < 2 && n < p->num_probe; g0 += p->probe[ENG_EVICT_FIELDS * n + 1], n++) {
            const int32_t *f = p->probe + ENG_EVICT_FIELDS * n;
            struct ref_cache *c = &r->reqs[f[5]];
            for (int j = 0; j < f[1]; j++) /* the candidates' keys, where their rows sit */
                memcpy(ck + (size_t)j * kvrow, c->k + ((size_t)L * c->cap + fp->tok_pos[f[0] + j]) * kvrow,
                       sizeof *ck * kvrow);
            ref_focus_importance(b.qkv + (size_t)f[0] * width, width, ck, f[1], H, Hkv, d, 1.0f / sqrtf((float)d),
                                 imp + (size_t)L * p->probe_rows + g0);
        }
    }
    for (int n = 0, g0 = 0; n < p->num_probe; g0 += p->probe[ENG_EVICT_FIELDS * n + 1], n++) {
        const int32_t *f = p->probe + ENG_EVICT_FIELDS * n, *use = own;
        struct ref_cache *c = &r->reqs[f[5]];
        int np = 0; /* candidates run through every layer before (their positions ascend) */
        while (np < f[1] && fp->tok_pos[f[0] + np] < c->done)
            np++;
        for (int j = 0; j < f[1]; j++)
            delta[j] = imp[p->probe_rows + g0 + j] - imp[g0 + j];
        ref_focus_pick(delta, f[1], f[2], np, own);
        if (r->forced_pick) {
            use = r->forced_pick + (size_t)n * r->forced_max_probe;
            bool valid = r->forced_max_probe >= f[2];
            for (int k = 0; k < f[2] && valid; k++) /* (malformed: its own, all counted as missing) */
                valid = use[k] >= 0 && use[k] < f[1] && (k == 0 || use[k] > use[k - 1]);
            if (!valid) {
                use = own;
                r->pick_missing += f[2];
            }
            tally_forced_picks(r, own, use, f[2]);
        }
        for (int k = 0; k < f[2]; k++) {
            crow[f[3] + k] = f[0] + use[k];
            cpos[f[3] + k] = fp->tok_pos[f[0] + use[k]];
        }
        /* the later layers' keys: up to the right-most row processed before or kept now */
        c->done = TS_MAX(c->done, fp->tok_pos[f[0] + use[f[2] - 1]] + 1);
        klen[f[6]] = c->done;
    }
    for (int j = 0; j < p->T; j++) /* ascending sources: the move never overwrites a row still to come */
        memmove(x + (size_t)j * h, x + (size_t)crow[j] * h, sizeof *x * h);
    for (int L = nf; L < m->num_layers; L++)
        ref_plain_layer(r, sd, p, cpos, klen, L, block_size, x, &b);
    bufs_free(&b);
    free(imp), free(delta), free(crow), free(cpos), free(own), free(klen), free(ck);
}

/* A widening step (eng_plan.h) over x [front rows, h]: the front layers, then every later row's
 * input to the first later layer from the input cache (the front rows' kept there just before), the
 * later layers over them. x must hold the later rows. */
static void ref_step_widening(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p, int block_size,
                              float *x)
{
    const struct model_cfg *m = &r->m;
    const struct eng_plan *fp = p->front;
    const int h = m->hidden, nf = TS_MIN(sd->front_layers, m->num_layers);
    struct ref_bufs b;
    bufs_init(&b, m, TS_MAX(fp->T, p->T));
    for (int s = 0; s < p->S; s++)
        cache_for(r, sd->segs[s].req_id, TS_MAX(fp->key_len[s], p->key_len[s]));
    for (int L = 0; L < nf; L++)
        ref_plain_layer(r, sd, fp, fp->tok_pos, fp->key_len, L, block_size, x, &b);
    keep_inputs(r, sd, fp, fp->tok_pos, nf, x); /* the front rows' inputs to layer nf, then every later row's */
    for (int s = 0; s < p->S; s++) {
        const struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
        for (int i = 0; i < p->q_len[s]; i++)
            memcpy(x + (size_t)(p->q_start[s] + i) * h, c->xi + ((size_t)nf * c->cap + p->tok_pos[p->q_start[s] + i]) * h,
                   sizeof *x * h);
    }
    for (int L = nf; L < m->num_layers; L++)
        ref_plain_layer(r, sd, p, p->tok_pos, p->key_len, L, block_size, x, &b);
    bufs_free(&b);
}

void eng_ref_step(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p,
                  int block_size, float *hidden, int32_t *tok, float *maxv, float *conf)
{
    const struct model_cfg *m = &r->m;
    const int h = m->hidden, V = m->vocab;
    const struct eng_plan *in = p->evict || p->widen ? p->front : p; /* the plan whose rows are embedded */
    const int X = p->X > 0 ? p->X : in->T;
    float *x = xmalloc(sizeof *x * (size_t)TS_MAX(TS_MAX(X, p->T), 1) * h);
    const float *emb = eng_ref_weight(r, W_EMB, -1);
    for (int t = 0; t < X; t++)
        memcpy(x + (size_t)t * h, emb + (size_t)(p->X > 0 ? p->x_ids : in->tok_ids)[t] * h, sizeof *x * h);
    for (int64_t i = 0; r->embed_add && i < (int64_t)X * h; i++)
        x[i] += r->embed_add[i];
    if (p->X > 0) {
        ref_step_layered(r, sd, p, block_size, x);
    } else if (p->evict) {
        ref_step_evicting(r, sd, p, block_size, x);
    } else if (p->widen) {
        ref_step_widening(r, sd, p, block_size, x);
    } else {
        struct ref_bufs b;
        bufs_init(&b, m, p->T);
        for (int s = 0; s < p->S; s++)
            cache_for(r, sd->segs[s].req_id, p->key_len[s]);
        for (int L = 0; L < m->num_layers; L++)
            ref_plain_layer(r, sd, p, p->tok_pos, p->key_len, L, block_size, x, &b);
        bufs_free(&b);
    }
    const int R = p->R;
    float *hr = xmalloc(sizeof *hr * (size_t)(R ? R : 1) * h), *logits = xmalloc(sizeof *logits * (size_t)V);
    for (int i = 0; i < R; i++)
        memcpy(hr + (size_t)i * h, x + (size_t)p->logit_idx[i] * h, sizeof *hr * h);
    ref_rmsnorm(hr, hr, eng_ref_weight(r, W_FINAL_NORM, -1), R, h, model_rms_eps(&r->m));
    if (hidden)
        memcpy(hidden, hr, sizeof *hr * (size_t)R * h);
    for (int i = 0; i < R; i++) {
        ref_linear(logits, hr + (size_t)i * h, eng_ref_weight(r, W_LM, -1), 1, h, V);
        ref_argmax_conf(logits, 1, V, tok + i, maxv + i, conf + i);
    }
    free(x);
    free(hr);
    free(logits);
    r->forced = NULL;
    r->forced_pick = NULL;
    r->forced_route = NULL;
    r->embed_add = NULL;
    r->num_blocks = 0;
}
