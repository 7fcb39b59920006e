/*
 * model.h: model shapes. A model is the handful of numbers from its Hugging Face config.json that
 * decide FLOPs, bytes and memory: layers, hidden size, heads, KV heads, head dim, FFN width,
 * experts, vocabulary, maximum positions. Built-in models carry the values of their published
 * config.json files; model_load_hf() reads any other config.json.
 */
#ifndef TESSERA_MODEL_H
#define TESSERA_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* The model a command runs where none is named (tessera sim --model's default, and the others'). */
#define MODEL_DEFAULT "llada-8b"

struct model_cfg {
    char name[64];
    int num_layers;
    int hidden;         /* d_model */
    int num_heads;      /* query heads */
    int num_kv_heads;   /* K/V heads (GQA when < num_heads) */
    int head_dim;
    int ffn;            /* dense FFN width (intermediate_size); 0 when every layer is MoE */
    int vocab;
    int max_pos;        /* longest sequence (max_position_embeddings) */
    double rope_theta;
    double rms_eps;     /* the RMSNorms' epsilon (rms_norm_eps); 0 = 1e-5 */
    bool qkv_bias;
    bool qk_norm;       /* RMSNorm of each query and key head over head_dim before the rotary embedding
                         * (Qwen3/SDAR q_norm, k_norm; LLaDA-MoE's qk_layernorm; LLaDA2.0's use_qk_norm) */
    int rotary_dim;     /* the leading dimensions of a head the rotary embedding turns (rotate-half
                         * within them; the rest pass through): head_dim, or partial_rotary_factor's
                         * share (LLaDA2.0: 64 of 128); 0 = head_dim */
    bool block_causal;  /* trained for block diffusion (SDAR, LLaDA2.0) */
    /* MoE; num_experts == 0 means dense */
    int num_experts;
    int experts_top_k;
    int moe_ffn;             /* width of one expert */
    int num_shared_experts;  /* always-on experts of width moe_ffn */
    int first_dense_layers;  /* leading layers that stay dense (first_k_dense_replace) */
    /* The router (Hugging Face's gate). softmax (LLaDA-MoE): each row's softmax over the experts,
     * the k most probable, renormalised where norm_topk. sigmoid (LLaDA2.0's score_function): each
     * expert's sigmoid score; with expert_bias the per-expert bias (gate.expert_bias) is added to the
     * scores for choosing alone; with n_group > 1 the experts form n_group groups, each scored by its
     * two best, and only the topk_group best groups' experts are chosen from; the k chosen weigh
     * their unbiased scores, renormalised where norm_topk, times routed_scale. */
    bool router_sigmoid;
    bool expert_bias;
    bool norm_topk;          /* norm_topk_prob */
    int n_group, topk_group; /* 0: one group */
    double routed_scale;     /* routed_scaling_factor; 0 = 1 */
    /* Interleaved attention (Gemma 4): every global_every-th layer (the last of each run of that many)
     * is global, attending to every key with its own K/V shape; the others are sliding, as the fields
     * above say, each row attending to the keys within sliding_window positions of it (vLLM keeps that
     * many of a request's latest tokens' K/V for them). 0: every layer alike, no window. */
    int global_every;
    int sliding_window;
    int global_kv_heads, global_head_dim; /* a global layer's K/V heads and head dim (num_heads queries) */
    bool global_k_eq_v;      /* a global layer's V is its K: no V projection (both still cached) */
    bool tied_lm_head;       /* the LM head is the embedding, stored once */
    int weight_bytes;        /* bytes per parameter: 2 for bf16 */
    int kv_bytes;            /* bytes per cached K or V element: 2 for bf16 */
};

/* Finds a built-in model by name (case-insensitive). Returns NULL if unknown. */
const struct model_cfg *model_find(const char *name);
/* Writes the comma-separated list of built-in names into buf. */
void model_list(char *buf, size_t len);
/* The share of the model one of `size` tensor-parallel GPUs runs: query and K/V heads, FFN and expert
 * widths and the vocabulary (its LM head's) divided by size, named NAME-tpSIZE (size 1: the model);
 * refuses a size that does not divide them. */
int model_tp_share(const struct model_cfg *m, int size, struct model_cfg *share, struct ts_err *err);
/* Resolves NAME, NAME-tpN (a built-in model's share, model_tp_share) or a path to config.json into
 * *out. */
int model_resolve(const char *name_or_path, struct model_cfg *out, struct ts_err *err);
/* Loads a Hugging Face config.json (LLaDA, Dream/Qwen2, SDAR/Qwen3, LLaDA-MoE, LLaDA2 keys). */
int model_load_hf(const char *path, struct model_cfg *out, struct ts_err *err);
/* Parses config.json text; `path` is used only in messages. */
int model_parse_hf(const char *path, const char *text, size_t len, struct model_cfg *out,
                   struct ts_err *err);
int model_validate(const struct model_cfg *m, struct ts_err *err);

int model_num_builtin(void);
const struct model_cfg *model_builtin(int i);

bool model_is_moe_layer(const struct model_cfg *m, int layer);
int model_num_moe_layers(const struct model_cfg *m);
int64_t model_params(const struct model_cfg *m);
/* The bytes of the routed experts' weights (expert parallelism splits them over its GPUs). */
int64_t model_expert_weight_bytes(const struct model_cfg *m);
int64_t model_active_params(const struct model_cfg *m);
/* The weights' bytes: every parameter at weight_bytes, the embedding, the LM head and the MoE router at
 * 2 where weight_bytes is less (FP8 checkpoints keep them in bf16). */
int64_t model_weight_bytes(const struct model_cfg *m);
/* K+V bytes one token occupies across all layers. */
int64_t model_kv_bytes_per_token(const struct model_cfg *m);
/* The K/V a request holds with `tokens` tokens cached, in tokens of model_kv_bytes_per_token (rounded
 * up): all of them, or with a sliding window every global layer's of all and every sliding layer's of
 * the window's latest. */
int64_t model_kv_tokens_held(const struct model_cfg *m, int64_t tokens);
/* What the CUDA engine lacks to run m, or NULL: it runs one attention shape a model (no interleaved
 * sliding and global layers). */
const char *model_engine_lacks(const struct model_cfg *m);
/* The shape a layer's activations are planned with: the model, or with interleaved layers the larger of
 * their two kinds' (the global layers' head dim, the widest K/V of the two, in heads of that dim). */
struct model_cfg model_act_view(const struct model_cfg *m);
/* Global layers (global_every: one in that many; 0 without interleaving). */
int model_num_global_layers(const struct model_cfg *m);
/* The model as its global (global true) or sliding layers see it: the same but for num_kv_heads and
 * head_dim, a global layer's (global_kv_heads, global_head_dim), and k_eq_v, whether V is K. */
struct model_cfg model_layer_view(const struct model_cfg *m, bool global, bool *k_eq_v);
/* Bytes a feature cache (dLLM-Cache) adds per token: its attention and FFN outputs at every layer. */
int64_t model_feat_bytes_per_token(const struct model_cfg *m);
int model_q_dim(const struct model_cfg *m);  /* num_heads * head_dim */
int model_rotary_dim(const struct model_cfg *m); /* rotary_dim, head_dim where 0 */
float model_rms_eps(const struct model_cfg *m);  /* rms_eps, 1e-5 where 0 */
int model_kv_dim(const struct model_cfg *m); /* num_kv_heads * head_dim */

#endif
