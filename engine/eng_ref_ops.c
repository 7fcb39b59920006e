/*
 * eng_ref_ops.c: the CPU reference's single ops, each the fp32 reference of one kernel: RMSNorm, the
 * QKV bias, norms and rotary embedding, SwiGLU, the linear layers, attention (block-causal or by a
 * block-sparse pattern), SparseD's pattern, argmax and confidence, the sparse selection's ranking and
 * move, dLLM-Cache's value check, FOCUS's importance and picks, and the MoE router. Written for
 * clarity, not speed: tiny models only.
 */
#include "eng_ref.h"
#include "eng_ref_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void ref_qkv_rope(float *qkv, const float *bias, const float *qn, const float *kn, int rot, float eps,
                  const int32_t *pos, int T, int H, int Hkv, int d, float theta)
{
    const int width = (H + 2 * Hkv) * d;
    rot = rot > 0 ? rot : d;
    const int half = rot / 2;
    for (int t = 0; t < T; t++) {
        float *row = qkv + (size_t)t * width;
        if (bias)
            for (int c = 0; c < width; c++)
                row[c] += bias[c];
        for (int head = 0; head < H + Hkv; head++) {
            float *x = row + head * d;
            const float *w = head < H ? qn : kn;
            if (w) {
                double ss = 0;
                for (int i = 0; i < d; i++)
                    ss += (double)x[i] * x[i];
                const double inv = 1.0 / sqrt(ss / d + eps);
                for (int i = 0; i < d; i++)
                    x[i] = (float)(x[i] * inv * w[i]);
            }
            for (int i = 0; i < half; i++) {
                double inv_freq = pow((double)theta, -2.0 * i / rot), ang = pos[t] * inv_freq;
                double c = cos(ang), s = sin(ang);
                float x1 = x[i], x2 = x[i + half];
                x[i] = (float)(x1 * c - x2 * s);
                x[i + half] = (float)(x1 * s + x2 * c);
            }
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

/* ref_attention, each query row of head h seeing only the key blocks its block of `kblock` rows keeps
 * (keep [H][nqb][nkb]) where keep is given */
static void attend(float *out, const float *q, int q_stride, const float *k, const float *v, int q_len, int key_len,
                   int kv_cached, int H, int Hkv, int d, int block_size, float scale, const uint8_t *keep, int kblock)
{
    const int nqb = keep ? (q_len + kblock - 1) / kblock : 0, nkb = keep ? (key_len + kblock - 1) / kblock : 0;
    double *p = xmalloc(sizeof *p * (size_t)(key_len ? key_len : 1));
    for (int i = 0; i < q_len; i++)
        for (int h = 0; h < H; h++) {
            int hk = h / (H / Hkv);
            const float *qi = q + (size_t)i * q_stride + h * d;
            double mx = -DBL_MAX, sum = 0;
            for (int j = 0; j < key_len; j++) {
                bool vis = block_size <= 0 || j < kv_cached || (j - kv_cached) / block_size <= i / block_size;
                if (keep)
                    vis = vis && keep[((size_t)h * nqb + i / kblock) * nkb + j / kblock];
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
                out[(size_t)i * H * d + h * d + c] = sum > 0 ? (float)(acc / sum) : 0.f;
            }
        }
    free(p);
}

void ref_attention(float *out, const float *q, int q_stride, const float *k, const float *v,
                   int q_len, int key_len, int kv_cached, int H, int Hkv, int d, int block_size,
                   float scale)
{
    attend(out, q, q_stride, k, v, q_len, key_len, kv_cached, H, Hkv, d, block_size, scale, NULL, 0);
}

void ref_attention_blocks(float *out, const float *q, int q_stride, const float *k, const float *v, int N, int H,
                          int Hkv, int d, int block, const uint8_t *keep, float scale)
{
    attend(out, q, q_stride, k, v, N, N, 0, H, Hkv, d, 0, scale, keep, block);
}

/* The kept blocks of one pass: the top `top` of imp[from .. n) (ties: the lower block) */
static void keep_top(const double *imp, int from, int n, int top, uint8_t *keep)
{
    for (int b = from; b < n; b++) {
        int rank = 0;
        for (int j = from; j < n; j++)
            rank += imp[j] > imp[b] || (imp[j] == imp[b] && j < b);
        if (rank < top)
            keep[b] = 1;
    }
}

void ref_sparsed_pattern(const float *q, int q_stride, const float *k, int N, int H, int Hkv, int d, int block,
                         int last, double select, float scale, double *imp, uint8_t *keep)
{
    const int nb = (N + block - 1) / block, ng = nb - last;
    double *p1 = xmalloc(sizeof *p1 * (size_t)N), *p2 = xmalloc(sizeof *p2 * (size_t)N);
    for (int h = 0; h < H; h++) {
        const int hk = h / (H / Hkv);
        for (int qb = 0; qb < nb; qb++) {
            double *i1 = imp + ((size_t)h * nb + qb) * nb, *i2 = imp + (((size_t)H + h) * nb + qb) * nb;
            memset(i1, 0, sizeof *i1 * (size_t)nb), memset(i2, 0, sizeof *i2 * (size_t)nb);
            for (int i = qb * block; i < TS_MIN(N, (qb + 1) * block); i++) {
                double mx = -DBL_MAX, mx2 = -DBL_MAX, sum = 0, sum2 = 0;
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int c = 0; c < d; c++)
                        s += (double)q[(size_t)i * q_stride + h * d + c] * k[((size_t)j * Hkv + hk) * d + c];
                    p1[j] = s * scale;
                    mx = fmax(mx, p1[j]);
                    if (j >= last * block)
                        mx2 = fmax(mx2, p1[j]);
                }
                for (int j = 0; j < N; j++) {
                    p2[j] = j >= last * block ? exp(p1[j] - mx2) : 0;
                    p1[j] = exp(p1[j] - mx);
                    sum += p1[j], sum2 += p2[j];
                }
                for (int j = 0; j < N; j++) {
                    i1[j / block] += p1[j] / sum;
                    if (j >= last * block)
                        i2[j / block] += p2[j] / sum2;
                }
            }
            uint8_t *kq = keep + ((size_t)h * nb + qb) * nb;
            memset(kq, 0, (size_t)nb);
            keep_top(i1, 0, nb, TS_MIN(nb, (int)(nb * select) + 1), kq);
            memset(kq + last, 0, (size_t)ng);
            keep_top(i2, last, nb, ng > 0 ? TS_MIN(ng, (int)(ng * select) + 1) : 0, kq);
        }
    }
    free(p1), free(p2);
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

struct scored {
    float v;
    int32_t j;
};

/* Larger score first, then the lower key. */
static int by_score(const void *a, const void *b)
{
    const struct scored *x = a, *y = b;
    return x->v != y->v ? (x->v < y->v ? 1 : -1) : (x->j > y->j) - (x->j < y->j);
}

static int by_key(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void ref_kv_compact(float *k, float *v, const int32_t *idx, int keep, int Hkv, int d, int per_head)
{
    const int kvrow = Hkv * d;
    for (int kh = 0; kh < Hkv; kh++) { /* ascending sources: in place is safe */
        const int32_t *ks = idx + (size_t)(per_head ? kh : 0) * keep;
        for (int j = 0; j < keep; j++) {
            memmove(k + (size_t)j * kvrow + kh * d, k + (size_t)ks[j] * kvrow + kh * d, sizeof *k * d);
            memmove(v + (size_t)j * kvrow + kh * d, v + (size_t)ks[j] * kvrow + kh * d, sizeof *v * d);
        }
    }
}

void ref_kv_rank(const float *q, int q_stride, int score_rows, const float *k, int cand, int keep, int H, int Hkv,
                 int d, int kernel, int per_head, int32_t *idx)
{
    const int g = H / Hkv, sets = per_head ? Hkv : 1, kvrow = Hkv * d;
    float *mq = xcalloc((size_t)H * d, sizeof *mq), *raw = xcalloc((size_t)sets * cand, sizeof *raw);
    struct scored *sc = xmalloc(sizeof *sc * (size_t)(cand ? cand : 1));
    for (int r = 0; r < score_rows; r++)
        for (int c = 0; c < H * d; c++)
            mq[c] += q[(size_t)r * q_stride + c];
    for (int c = 0; c < H * d; c++)
        mq[c] /= (float)score_rows;
    for (int j = 0; j < cand; j++)
        for (int kh = 0; kh < Hkv; kh++) {
            float dot = 0;
            for (int qh = kh * g; qh < (kh + 1) * g; qh++)
                for (int e = 0; e < d; e++)
                    dot += mq[qh * d + e] * k[(size_t)j * kvrow + kh * d + e];
            raw[(size_t)(per_head ? kh : 0) * cand + j] += dot;
        }
    for (int set = 0; set < sets; set++) {
        for (int j = 0; j < cand; j++) {
            float m = -INFINITY;
            for (int i = TS_MAX(0, j - kernel / 2); i <= TS_MIN(cand - 1, j + kernel / 2); i++)
                m = fmaxf(m, raw[(size_t)set * cand + i]);
            sc[j] = (struct scored){m, j};
        }
        qsort(sc, (size_t)cand, sizeof *sc, by_score);
        int32_t *ks = idx + (size_t)set * keep;
        for (int j = 0; j < keep; j++)
            ks[j] = sc[j].j;
        qsort(ks, (size_t)keep, sizeof *ks, by_key);
    }
    free(mq), free(raw), free(sc);
}

void ref_kv_select(const float *q, int q_stride, int score_rows, float *k, float *v, int cand, int keep, int H,
                   int Hkv, int d, int kernel, int per_head, int32_t *idx)
{
    int32_t *kept = xmalloc(sizeof *kept * (size_t)(per_head ? Hkv : 1) * (keep ? keep : 1));
    ref_kv_rank(q, q_stride, score_rows, k, cand, keep, H, Hkv, d, kernel, per_head, kept);
    ref_kv_compact(k, v, kept, keep, Hkv, d, per_head);
    if (idx)
        memcpy(idx, kept, sizeof *idx * (size_t)(per_head ? Hkv : 1) * keep);
    free(kept);
}

void ref_fc_pick(const float *vnew, const float *vold, int rows, int kv_dim, int picked, int32_t *pick)
{
    struct scored *sc = xmalloc(sizeof *sc * (size_t)(rows ? rows : 1));
    for (int i = 0; i < rows; i++) {
        double dot = 0, nn = 0, no = 0;
        for (int c = 0; c < kv_dim; c++) {
            const double a = vnew[(size_t)i * kv_dim + c], b = vold[(size_t)i * kv_dim + c];
            dot += a * b, nn += a * a, no += b * b;
        }
        const double s = dot / fmax(sqrt(nn) * sqrt(no), 1e-8);
        sc[i] = (struct scored){isnan(s) ? INFINITY : -(float)s, i}; /* by_score: the larger first */
    }
    qsort(sc, (size_t)rows, sizeof *sc, by_score);
    for (int k = 0; k < picked; k++)
        pick[k] = sc[k].j;
    qsort(pick, (size_t)picked, sizeof *pick, by_key);
    free(sc);
}

void ref_focus_importance(const float *q, int q_stride, const float *k, int m, int H, int Hkv, int d, float scale,
                          float *imp)
{
    float *s = xmalloc(sizeof *s * (size_t)(m ? m : 1)), *pl = xmalloc(sizeof *pl * (size_t)(m ? m : 1));
    for (int j = 0; j < m; j++)
        imp[j] = 0;
    for (int hd = 0; hd < H; hd++) {
        const int kvh = hd / (H / Hkv);
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < m; j++) {
                double acc = 0;
                for (int c = 0; c < d; c++)
                    acc += (double)q[(size_t)i * q_stride + (size_t)hd * d + c] * k[((size_t)j * Hkv + kvh) * d + c];
                s[j] = (float)acc * scale;
            }
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < m; j++) {
                pl[j] = fmaxf(s[j], fmaxf(j > 0 ? s[j - 1] : -INFINITY, j + 1 < m ? s[j + 1] : -INFINITY));
                mx = fmax(mx, pl[j]);
            }
            for (int j = 0; j < m; j++)
                sum += exp(pl[j] - mx);
            for (int j = 0; j < m; j++)
                imp[j] += (float)(exp(pl[j] - mx) / sum);
        }
    }
    free(s);
    free(pl);
}

void ref_focus_pick(const float *delta, int m, int picked, int processed, int32_t *pick)
{
    struct scored *sc = xmalloc(sizeof *sc * (size_t)(m ? m : 1));
    for (int j = 0; j < m; j++)
        sc[j] = (struct scored){isnan(delta[j]) ? -INFINITY : delta[j], j};
    qsort(sc, (size_t)m, sizeof *sc, by_score);
    int right = -1; /* the right-most unprocessed one of the `picked` largest */
    for (int k = 0; k < picked; k++)
        right = sc[k].j >= processed ? TS_MAX(right, sc[k].j) : right;
    int u = right >= 0 ? TS_MIN(right - processed + 1, picked) : 0;
    u = TS_MAX(u, TS_MIN(picked - processed, m - processed));
    int n = 0;
    for (int k = 0; k < m && n < picked - u; k++) /* the largest among the processed */
        if (sc[k].j < processed)
            pick[n++] = sc[k].j;
    for (int j = processed; j < processed + u; j++)
        pick[n++] = j;
    qsort(pick, (size_t)n, sizeof *pick, by_key);
    free(sc);
}

static const struct k_moe_router softmax_renormalised = {.norm = true};

/* The weights wts [k] of a row's experts ids [k] under router rt: their scores (softmax
 * probabilities over the E logits, or sigmoids), renormalised where rt->norm, times its scale. */
void ref_route_weights(const float *logits, int E, int k, const struct k_moe_router *rt, const int32_t *ids,
                       float *wts)
{
    double mx = -INFINITY, sum = 0, chosen = 0;
    for (int e = 0; e < E && !rt->sigmoid; e++)
        mx = fmax(mx, logits[e]);
    for (int e = 0; e < E && !rt->sigmoid; e++)
        sum += exp(logits[e] - mx);
    for (int j = 0; j < k; j++) {
        wts[j] = (float)(rt->sigmoid ? 1.0 / (1.0 + exp(-(double)logits[ids[j]])) : exp(logits[ids[j]] - mx) / sum);
        chosen += wts[j];
    }
    const double scale = (rt->norm && chosen > 0 ? 1.0 / chosen : 1.0) * (rt->scale > 0 ? rt->scale : 1.0);
    for (int j = 0; j < k; j++)
        wts[j] = (float)(wts[j] * scale);
}

void ref_moe_route(const float *logits, int E, int k, uint32_t balance, const struct k_moe_router *rt,
                   const float *bias, int t, int32_t *ids, float *wts)
{
    if (!rt)
        rt = &softmax_renormalised;
    double *rank = xmalloc(sizeof *rank * (size_t)E); /* what the choice ranks; -inf: out */
    double mx = -INFINITY;
    for (int e = 0; e < E; e++)
        mx = fmax(mx, logits[e]);
    for (int e = 0; e < E; e++) /* the scores (a softmax's unnormalised: the order is the same) */
        rank[e] = balance ? (double)k_moe_priority(balance, (uint32_t)t, (uint32_t)e)
                          : (rt->sigmoid ? 1.0 / (1.0 + exp(-(double)logits[e])) : exp(logits[e] - mx)) +
                                (bias ? bias[e] : 0.0);
    if (!balance && rt->n_group > 1) { /* drop the groups whose two best sum lowest (ties: the higher group) */
        const int G = rt->n_group, gs = E / G;
        double *gsc = xmalloc(sizeof *gsc * (size_t)G);
        for (int g = 0; g < G; g++) {
            double b1 = -INFINITY, b2 = -INFINITY;
            for (int e = g * gs; e < (g + 1) * gs; e++)
                if (rank[e] > b1)
                    b2 = b1, b1 = rank[e];
                else if (rank[e] > b2)
                    b2 = rank[e];
            gsc[g] = b1 + b2;
        }
        for (int j = 0; j < G - rt->topk_group; j++) {
            int worst = -1;
            for (int g = 0; g < G; g++)
                if (gsc[g] != INFINITY && (worst < 0 || gsc[g] <= gsc[worst]))
                    worst = g;
            gsc[worst] = INFINITY;
        }
        for (int e = 0; e < E; e++)
            if (gsc[e / gs] == INFINITY)
                rank[e] = -INFINITY;
        free(gsc);
    }
    for (int j = 0; j < k; j++) { /* the j-th largest: ties to the lower expert */
        int best = 0;
        for (int e = 1; e < E; e++)
            if (rank[e] > rank[best])
                best = e;
        ids[j] = best;
        rank[best] = -INFINITY;
    }
    free(rank);
    ref_route_weights(logits, E, k, rt, ids, wts);
}
