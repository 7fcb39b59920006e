/* eng_weights.c: weight layout and the bit-exact host twin of the GPU's random initialisation. */
#include "eng_weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[W_KIND_COUNT] = {
    "embedding", "attn_norm", "qkv", "qkv_bias", "o_proj", "ffn_norm", "gate_up", "down",
    "final_norm", "lm_head", "router", "experts_gate_up", "experts_down", "q_norm", "k_norm", "router_bias"};

const char *eng_w_kind_name(enum w_kind k) { return (unsigned)k < W_KIND_COUNT ? kind_names[k] : "?"; }

static void add(struct eng_layout *l, size_t *cap, enum w_kind k, int layer, int64_t rows,
                int64_t cols, float scale, bool ones)
{
    ts_grow((void **)&l->t, cap, (size_t)l->n + 1, sizeof *l->t);
    l->t[l->n++] = (struct eng_tensor){k, layer, rows, cols, l->total, scale, ones};
    l->total += rows * cols;
    l->total = (l->total + 7) / 8 * 8; /* keep every tensor 16-byte aligned */
}

int eng_layout_build(const struct model_cfg *m, struct eng_layout *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (m->hidden % 8 || m->ffn % 8 || (m->head_dim != 64 && m->head_dim != 128) ||
        (m->num_experts > 0 && m->moe_ffn % 64))
        return ts_fail(err, "model %s: the engine needs hidden and FFN widths that are multiples of "
                            "8 (an expert's of 64) and a head dim of 64 or 128", m->name);
    if (m->num_experts > 0 && (m->hidden % 64 || m->num_experts > K_MOE_MAX_EXPERTS || m->experts_top_k > 32))
        return ts_fail(err, "model %s: the engine's experts need a hidden size that is a multiple of 64, at most "
                            "%d experts and a top-k of at most 32", m->name, K_MOE_MAX_EXPERTS);
    size_t cap = 0;
    int64_t h = m->hidden, qkv = (int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    int64_t qd = (int64_t)m->num_heads * m->head_dim;
    /* U(-1,1) has variance 1/3: sqrt(3 / fan_in) keeps unit variance through each projection */
    add(out, &cap, W_EMB, -1, m->vocab, h, 1.0f, false);
    for (int L = 0; L < m->num_layers; L++) {
        add(out, &cap, W_ATTN_NORM, L, h, 1, 0, true);
        add(out, &cap, W_QKV, L, qkv, h, sqrtf(3.0f / (float)h), false);
        if (m->qkv_bias)
            add(out, &cap, W_QKV_BIAS, L, qkv, 1, 0.02f, false);
        if (m->qk_norm) {
            add(out, &cap, W_Q_NORM, L, m->head_dim, 1, 0, true);
            add(out, &cap, W_K_NORM, L, m->head_dim, 1, 0, true);
        }
        add(out, &cap, W_O, L, h, qd, sqrtf(3.0f / (float)qd), false);
        add(out, &cap, W_FFN_NORM, L, h, 1, 0, true);
        if (model_is_moe_layer(m, L)) {
            const int64_t E = m->num_experts, Fe = m->moe_ffn;
            add(out, &cap, W_ROUTER, L, E, h, sqrtf(3.0f / (float)h), false);
            if (m->expert_bias) /* enough to move near ties of the sigmoid scores */
                add(out, &cap, W_ROUTER_BIAS, L, E, 1, 0.05f, false);
            add(out, &cap, W_EXP_GU, L, E * 2 * Fe, h, sqrtf(3.0f / (float)h), false);
            add(out, &cap, W_EXP_DOWN, L, E * h, Fe, sqrtf(3.0f / (float)Fe), false);
        }
        const int64_t W = eng_ffn_width(m, L);
        if (W > 0) {
            add(out, &cap, W_GU, L, 2 * W, h, sqrtf(3.0f / (float)h), false);
            add(out, &cap, W_DOWN, L, h, W, sqrtf(3.0f / (float)W), false);
        }
    }
    add(out, &cap, W_FINAL_NORM, -1, h, 1, 0, true);
    add(out, &cap, W_LM, -1, m->vocab, h, sqrtf(3.0f / (float)h), false);
    return 0;
}

int eng_ffn_width(const struct model_cfg *m, int layer)
{
    return model_is_moe_layer(m, layer) ? m->num_shared_experts * m->moe_ffn : m->ffn;
}

void eng_layout_free(struct eng_layout *l)
{
    if (!l)
        return;
    free(l->t);
    memset(l, 0, sizeof *l);
}

const struct eng_tensor *eng_layout_find(const struct eng_layout *l, enum w_kind k, int layer)
{
    for (int i = 0; i < l->n; i++)
        if (l->t[i].kind == k && l->t[i].layer == layer)
            return &l->t[i];
    return NULL;
}

uint64_t eng_tensor_seed(uint64_t seed, int index) { return ts_mix64(seed * 1000003ULL + (uint64_t)index); }

float eng_hash_uniform(uint64_t seed, uint64_t i)
{
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ULL);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (float)(int32_t)((uint32_t)(x >> 40) - (1u << 23)) * (1.0f / (float)(1u << 23));
}

bf16_t eng_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (bf16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (bf16_t)(u >> 16);
}

void eng_fill_host(const struct eng_layout *l, int i, uint64_t seed, bf16_t *dst)
{
    const struct eng_tensor *t = &l->t[i];
    int64_t n = t->rows * t->cols;
    if (t->ones) {
        for (int64_t j = 0; j < n; j++)
            dst[j] = 0x3f80;
        return;
    }
    uint64_t s = eng_tensor_seed(seed, i);
    for (int64_t j = 0; j < n; j++)
        dst[j] = eng_f2bf(t->scale * eng_hash_uniform(s, (uint64_t)j));
}

int eng_shard_rows(const struct model_cfg *m, const struct eng_tensor *g, int rank, int size, struct eng_shard *out,
                   int64_t *col0)
{
    const int64_t qd = (int64_t)m->num_heads * m->head_dim, kvd = (int64_t)m->num_kv_heads * m->head_dim;
    const int64_t F = g->layer >= 0 ? eng_ffn_width(m, g->layer) : 0, Fe = m->moe_ffn;
    *col0 = 0;
    switch (g->kind) {
    case W_QKV:
    case W_QKV_BIAS: /* the rank's query heads, then its K heads, then its V heads */
        out[0] = (struct eng_shard){rank * qd / size, qd / size};
        out[1] = (struct eng_shard){qd + rank * kvd / size, kvd / size};
        out[2] = (struct eng_shard){qd + kvd + rank * kvd / size, kvd / size};
        return 3;
    case W_GU: /* its gate rows, then its up rows */
        out[0] = (struct eng_shard){rank * F / size, F / size};
        out[1] = (struct eng_shard){F + rank * F / size, F / size};
        return 2;
    case W_EXP_GU: /* the same for every expert in turn */
        for (int e = 0; e < m->num_experts; e++) {
            out[2 * e] = (struct eng_shard){2 * Fe * e + rank * Fe / size, Fe / size};
            out[2 * e + 1] = (struct eng_shard){2 * Fe * e + Fe + rank * Fe / size, Fe / size};
        }
        return 2 * m->num_experts;
    case W_LM: /* its share of the vocabulary */
        out[0] = (struct eng_shard){rank * g->rows / size, g->rows / size};
        return 1;
    case W_O: /* row-parallel: the columns of its heads, or of its FFN share */
        *col0 = rank * qd / size;
        break;
    case W_DOWN:
        *col0 = rank * F / size;
        break;
    case W_EXP_DOWN:
        *col0 = rank * Fe / size;
        break;
    default: /* replicated: the embedding, the norms, the router */
        break;
    }
    out[0] = (struct eng_shard){0, g->rows};
    return 1;
}

/* Whether rank shares of tensor kind k split its columns. */
static bool splits_cols(enum w_kind k) { return k == W_O || k == W_DOWN || k == W_EXP_DOWN; }

int eng_layout_build_tp(const struct model_cfg *m, int rank, int size, struct eng_layout *out, struct ts_err *err)
{
    if (rank < 0 || rank >= size)
        return ts_fail(err, "tensor parallelism: rank %d of %d", rank, size);
    struct model_cfg local;
    if (model_tp_share(m, size, &local, err) || eng_layout_build(&local, out, err)) /* the share's own limits */
        return -1;
    eng_layout_free(out);
    if (eng_layout_build(m, out, err))
        return -1;
    struct eng_shard *sh = xmalloc(sizeof *sh * (size_t)ENG_SHARD_MAX(m));
    out->total = 0;
    for (int i = 0; i < out->n; i++) { /* the model's tensors, each cut to the rank's share */
        struct eng_tensor *t = &out->t[i];
        int64_t col0, rows = 0;
        const int n = eng_shard_rows(m, t, rank, size, sh, &col0);
        for (int k = 0; k < n; k++)
            rows += sh[k].rows;
        t->rows = rows;
        t->cols = splits_cols(t->kind) ? t->cols / size : t->cols;
        t->offset = out->total;
        out->total = (out->total + rows * t->cols + 7) / 8 * 8;
    }
    free(sh);
    return 0;
}

void eng_shard_extract(const struct model_cfg *m, const struct eng_tensor *g, int rank, int size, const bf16_t *src,
                       bf16_t *dst)
{
    struct eng_shard *sh = xmalloc(sizeof *sh * (size_t)ENG_SHARD_MAX(m));
    int64_t col0;
    const int n = eng_shard_rows(m, g, rank, size, sh, &col0);
    const int64_t cols = splits_cols(g->kind) ? g->cols / size : g->cols;
    for (int k = 0; k < n; k++)
        for (int64_t r = 0; r < sh[k].rows; r++, dst += cols)
            memcpy(dst, src + (sh[k].row0 + r) * g->cols + col0, sizeof *dst * (size_t)cols);
    free(sh);
}
