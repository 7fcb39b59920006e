/*
 * eng_weights.h: the weight layout of a dLLM (LLaDA, Dream, SDAR families; LLaDA-MoE, LLaDA2.0) in one bf16
 * buffer, and the counter-hash initialisation shared bit for bit by the GPU (k_fill_random) and
 * the host (eng_fill_host), so the CPU reference runs on exactly the engine's weights.
 *
 * Per layer: attn_norm [h], qkv [(H + 2 Hkv) d, h] (q rows, then k, then v), qkv_bias
 * [(H + 2 Hkv) d] when the model has one, q_norm [d] and k_norm [d] when it has per-head QK norms
 * (model.h's qk_norm), o [h, H d], ffn_norm [h], gate|up [2F, h] (gate rows
 * first), down [h, F]. Then final_norm [h] and the LM head [V, h]; the embedding [V, h] comes first.
 * A mixture-of-experts layer (model_is_moe_layer) has, after ffn_norm, the router [E, h] (and its
 * expert bias [E] where the model has one, bf16 here though checkpoints hold it in fp32), every
 * expert's gate|up [E * 2 F', h] (expert e's 2 F' rows at e * 2 F', gate rows first) and down
 * [E * h, F'] (expert e's h rows at e * h), F' = moe_ffn; its shared experts, if any, are gate|up
 * and down of one FFN of width S F' (the S experts' rows side by side: the same sum).
 * Linear weights are [out, in] row-major, as in Hugging Face checkpoints.
 */
#ifndef TESSERA_ENG_WEIGHTS_H
#define TESSERA_ENG_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "model.h"
#include "util.h"

enum w_kind { W_EMB = 0, W_ATTN_NORM, W_QKV, W_QKV_BIAS, W_O, W_FFN_NORM, W_GU, W_DOWN,
              W_FINAL_NORM, W_LM, W_ROUTER, W_EXP_GU, W_EXP_DOWN, W_Q_NORM, W_K_NORM, W_ROUTER_BIAS,
              W_KIND_COUNT };

struct eng_tensor {
    enum w_kind kind;
    int layer;           /* -1 for the embedding, final norm and LM head */
    int64_t rows, cols;  /* cols = 1 for vectors */
    int64_t offset;      /* elements from the start of the weight buffer */
    float scale;         /* random init: scale * U(-1, 1) */
    bool ones;           /* norm weights start at 1 */
};

struct eng_layout {
    struct eng_tensor *t; /* [n], owned */
    int n;
    int64_t total;        /* elements */
};

const char *eng_w_kind_name(enum w_kind k);
/* Builds the layout. */
int eng_layout_build(const struct model_cfg *m, struct eng_layout *out, struct ts_err *err);
void eng_layout_free(struct eng_layout *l);
const struct eng_tensor *eng_layout_find(const struct eng_layout *l, enum w_kind k, int layer);
/* The FFN width of layer L's gate|up and down (W_GU, W_DOWN): the dense FFN's, a MoE layer's shared
 * experts' together (0: none). */
int eng_ffn_width(const struct model_cfg *m, int layer);

/* Tensor parallelism over `size` ranks (eng_opts.tp_size). Rank r holds a share of each tensor:
 * column-parallel ones (qkv and its bias: its query heads, then its K heads, then its V heads;
 * gate|up: its gate rows, then its up rows, for every expert in turn) and the LM head (its share
 * of the vocabulary) keep some rows; row-parallel ones (o, down, the experts' down) keep the columns
 * of its heads or FFN share; the embedding, the norms and the router are whole. A share is then
 * the tensor of a model with heads, K/V heads, FFN and expert widths and vocabulary divided by
 * size (model_tp_share, model.h), but the embedding's V rows. Tensor i of the model is tensor i of the share,
 * its initialisation scale the model's, so every rank's shares are cut from the very weights one
 * GPU runs. */
struct eng_shard {
    int64_t row0, rows; /* the model's rows [row0, row0 + rows) */
};
#define ENG_SHARD_MAX(m) (2 * (m)->num_experts + 3) /* row ranges of one tensor's share, at most */
/* Rank `rank`'s share of the model's tensor g: its row ranges in the order the share stacks them
 * (into out, room for ENG_SHARD_MAX) and its first column (*col0; it has g's columns / size where
 * the tensor is row-parallel, else all); returns the number of ranges. */
int eng_shard_rows(const struct model_cfg *m, const struct eng_tensor *g, int rank, int size, struct eng_shard *out,
                   int64_t *col0);
/* The layout of rank `rank`'s shares (size 1: the model's own layout). */
int eng_layout_build_tp(const struct model_cfg *m, int rank, int size, struct eng_layout *out, struct ts_err *err);
/* Copies rank `rank`'s share of tensor g out of the whole tensor src into dst (host memory). */
void eng_shard_extract(const struct model_cfg *m, const struct eng_tensor *g, int rank, int size, const bf16_t *src,
                       bf16_t *dst);

/* The router of model m for k_moe_route, its expert bias the device's `bias` (or NULL). */
static inline struct k_moe_router eng_moe_router(const struct model_cfg *m, const bf16_t *bias)
{
    return (struct k_moe_router){.sigmoid = m->router_sigmoid, .norm = m->norm_topk, .bias = bias,
                                 .n_group = m->n_group, .topk_group = m->topk_group,
                                 .scale = (float)m->routed_scale};
}

uint64_t eng_tensor_seed(uint64_t seed, int index);
float eng_hash_uniform(uint64_t seed, uint64_t i);
/* A bf16's value (inline: the host's scoring of offloaded keys converts every key it reads). */
static inline float eng_bf2f(bf16_t v)
{
    const uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
bf16_t eng_f2bf(float f); /* rounded to nearest even */
/* Host twin of the GPU initialisation of tensor index `i` of the layout. */
void eng_fill_host(const struct eng_layout *l, int i, uint64_t seed, bf16_t *dst);

#endif
