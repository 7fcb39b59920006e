/* eng_ref.c: the fp32 CPU reference forward. Written for clarity, not speed: tiny models only. */
#include "eng_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RMS_EPS 1e-5f

void ref_rmsnorm(float *out, const float *in, const float *w, int rows, int h, float eps)
{
    for (int t = 0; t < rows; t++) {
        double ss = 0;
        for (int c = 0; c < h; c++)
            ss += (double)in[(size_t)t * h + c] * in[(size_t)t * h + c];
        float inv = (float)(1.0 / sqrt(ss / h + eps));
        for (int c = 0; c < h; c++)
            out[(size_t)t * h + c] = in[(size_t)t * h + c] * inv * w[c];
    }
}

void ref_qkv_rope(float *qkv, const float *bias, const int32_t *pos, int T, int H, int Hkv, int d,
                  float theta)
{
    int width = (H + 2 * Hkv) * d, half = d / 2;
    for (int t = 0; t < T; t++) {
        float *row = qkv + (size_t)t * width;
        if (bias)
            for (int c = 0; c < width; c++)
                row[c] += bias[c];
        for (int head = 0; head < H + Hkv; head++)
            for (int i = 0; i < half; i++) {
                double inv_freq = pow((double)theta, -2.0 * i / d), ang = pos[t] * inv_freq;
                double c = cos(ang), s = sin(ang);
                float x1 = row[head * d + i], x2 = row[head * d + i + half];
                row[head * d + i] = (float)(x1 * c - x2 * s);
                row[head * d + i + half] = (float)(x1 * s + x2 * c);
            }
    }
}

void ref_swiglu(float *out, const float *gu, int rows, int F)
{
    for (int t = 0; t < rows; t++)
        for (int j = 0; j < F; j++) {
            float g = gu[(size_t)t * 2 * F + j], u = gu[(size_t)t * 2 * F + F + j];
            out[(size_t)t * F + j] = g / (1.0f + expf(-g)) * u;
        }
}

void ref_attention(float *out, const float *q, int q_stride, const float *k, const float *v,
                   int q_len, int key_len, int kv_cached, int H, int Hkv, int d, int block_size,
                   float scale)
{
    double *p = xmalloc(sizeof *p * (size_t)(key_len ? key_len : 1));
    for (int i = 0; i < q_len; i++)
        for (int h = 0; h < H; h++) {
            int hk = h / (H / Hkv);
            const float *qi = q + (size_t)i * q_stride + h * d;
            double mx = -DBL_MAX, sum = 0;
            for (int j = 0; j < key_len; j++) {
                bool vis = block_size <= 0 || j < kv_cached || (j - kv_cached) / block_size <= i / block_size;
                if (!vis) {
                    p[j] = -DBL_MAX;
                    continue;
                }
                double s = 0;
                for (int c = 0; c < d; c++)
                    s += (double)qi[c] * k[((size_t)j * Hkv + hk) * d + c];
                p[j] = s * scale;
                if (p[j] > mx)
                    mx = p[j];
            }
            for (int j = 0; j < key_len; j++) {
                p[j] = p[j] == -DBL_MAX ? 0 : exp(p[j] - mx);
                sum += p[j];
            }
            for (int c = 0; c < d; c++) {
                double acc = 0;
                for (int j = 0; j < key_len; j++)
                    acc += p[j] * v[((size_t)j * Hkv + hk) * d + c];
                out[(size_t)i * H * d + h * d + c] = (float)(acc / sum);
            }
        }
    free(p);
}

void ref_argmax_conf(const float *logits, int rows, int V, int32_t *tok, float *maxv, float *conf)
{
    for (int r = 0; r < rows; r++) {
        const float *l = logits + (size_t)r * V;
        int best = 0;
        for (int j = 1; j < V; j++)
            if (l[j] > l[best])
                best = j;
        double sum = 0;
        for (int j = 0; j < V; j++)
            sum += exp((double)l[j] - l[best]);
        tok[r] = best;
        maxv[r] = l[best];
        conf[r] = (float)(1.0 / sum);
    }
}

void ref_linear(float *y, const float *x, const float *W, int rows, int in, int out)
{
    for (int t = 0; t < rows; t++)
        for (int o = 0; o < out; o++) {
            double acc = 0;
            const float *xr = x + (size_t)t * in, *wr = W + (size_t)o * in;
            for (int c = 0; c < in; c++)
                acc += (double)xr[c] * wr[c];
            y[(size_t)t * out + o] = (float)acc;
        }
}

/* --- whole steps ------------------------------------------------------------------------- */

struct ref_cache {
    float *k, *v; /* [layers][cap][Hkv * d] */
    int32_t cap;
};

struct eng_ref {
    struct model_cfg m;
    struct eng_layout lay;
    float *w; /* the weights in fp32, same offsets as the engine's buffer */
    struct ref_cache *reqs;
    int32_t num_reqs;
};

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
        size_t row = (size_t)r->m.num_kv_heads * r->m.head_dim;
        float *k = xcalloc((size_t)r->m.num_layers * keys * row, sizeof *k);
        float *v = xcalloc((size_t)r->m.num_layers * keys * row, sizeof *v);
        for (int L = 0; L < r->m.num_layers && c->cap > 0; L++) {
            memcpy(k + (size_t)L * keys * row, c->k + (size_t)L * c->cap * row, sizeof *k * c->cap * row);
            memcpy(v + (size_t)L * keys * row, c->v + (size_t)L * c->cap * row, sizeof *v * c->cap * row);
        }
        free(c->k);
        free(c->v);
        c->k = k;
        c->v = v;
        c->cap = keys;
    }
    return c;
}

void eng_ref_step(struct eng_ref *r, const struct step_desc *sd, const struct eng_plan *p,
                  int block_size, float *hidden, int32_t *tok, float *maxv, float *conf)
{
    const struct model_cfg *m = &r->m;
    const int T = p->T, h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int F = m->ffn, V = m->vocab, width = (H + 2 * Hkv) * d, kvrow = Hkv * d;
    float *x = xmalloc(sizeof *x * (size_t)T * h), *hn = xmalloc(sizeof *hn * (size_t)T * h);
    float *qkv = xmalloc(sizeof *qkv * (size_t)T * width), *att = xmalloc(sizeof *att * (size_t)T * H * d);
    float *tmp = xmalloc(sizeof *tmp * (size_t)T * TS_MAX(h, 2 * F));
    float *act = xmalloc(sizeof *act * (size_t)T * F);
    const float *emb = eng_ref_weight(r, W_EMB, -1);
    for (int t = 0; t < T; t++)
        memcpy(x + (size_t)t * h, emb + (size_t)p->tok_ids[t] * h, sizeof *x * h);
    for (int s = 0; s < p->S; s++)
        cache_for(r, sd->segs[s].req_id, p->key_len[s]);
    for (int L = 0; L < m->num_layers; L++) {
        ref_rmsnorm(hn, x, eng_ref_weight(r, W_ATTN_NORM, L), T, h, RMS_EPS);
        ref_linear(qkv, hn, eng_ref_weight(r, W_QKV, L), T, h, width);
        ref_qkv_rope(qkv, eng_ref_weight(r, W_QKV_BIAS, L), p->tok_pos, T, H, Hkv, d, (float)m->rope_theta);
        for (int s = 0; s < p->S; s++) {
            struct ref_cache *c = &r->reqs[sd->segs[s].req_id];
            float *kc = c->k + (size_t)L * c->cap * kvrow, *vc = c->v + (size_t)L * c->cap * kvrow;
            for (int i = 0; i < p->q_len[s]; i++) {
                const float *row = qkv + (size_t)(p->q_start[s] + i) * width;
                int key = p->kv_cached[s] + i;
                memcpy(kc + (size_t)key * kvrow, row + H * d, sizeof *kc * kvrow);
                memcpy(vc + (size_t)key * kvrow, row + (H + Hkv) * d, sizeof *vc * kvrow);
            }
            ref_attention(att + (size_t)p->q_start[s] * H * d, qkv + (size_t)p->q_start[s] * width, width,
                          kc, vc, p->q_len[s], p->key_len[s], p->kv_cached[s], H, Hkv, d, block_size,
                          1.0f / sqrtf((float)d));
        }
        ref_linear(tmp, att, eng_ref_weight(r, W_O, L), T, H * d, h);
        for (int64_t i = 0; i < (int64_t)T * h; i++)
            x[i] += tmp[i];
        ref_rmsnorm(hn, x, eng_ref_weight(r, W_FFN_NORM, L), T, h, RMS_EPS);
        ref_linear(tmp, hn, eng_ref_weight(r, W_GU, L), T, h, 2 * F);
        ref_swiglu(act, tmp, T, F);
        ref_linear(tmp, act, eng_ref_weight(r, W_DOWN, L), T, F, h);
        for (int64_t i = 0; i < (int64_t)T * h; i++)
            x[i] += tmp[i];
    }
    const int R = p->R;
    float *hr = xmalloc(sizeof *hr * (size_t)(R ? R : 1) * h), *logits = xmalloc(sizeof *logits * (size_t)V);
    for (int i = 0; i < R; i++)
        memcpy(hr + (size_t)i * h, x + (size_t)p->logit_idx[i] * h, sizeof *hr * h);
    ref_rmsnorm(hr, hr, eng_ref_weight(r, W_FINAL_NORM, -1), R, h, RMS_EPS);
    if (hidden)
        memcpy(hidden, hr, sizeof *hr * (size_t)R * h);
    for (int i = 0; i < R; i++) {
        ref_linear(logits, hr + (size_t)i * h, eng_ref_weight(r, W_LM, -1), 1, h, V);
        ref_argmax_conf(logits, 1, V, tok + i, maxv + i, conf + i);
    }
    free(x);
    free(hn);
    free(qkv);
    free(att);
    free(tmp);
    free(act);
    free(hr);
    free(logits);
}
