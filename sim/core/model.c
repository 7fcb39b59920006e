/*
 * model.c: the built-in model table and the Hugging Face config.json loader.
 *
 * Values are those of the published config.json of each checkpoint:
 *   llada-8b        GSAI-ML/LLaDA-8B-Instruct        (d_model, n_layers, n_heads, mlp_hidden_size, ...)
 *   dream-7b        Dream-org/Dream-v0-Instruct-7B   (Qwen2.5-7B shapes, QKV bias)
 *   sdar-8b         JetLM/SDAR-8B-Chat               (Qwen3-8B shapes, per-head QK norms, block diffusion)
 *   llada-moe-7b    inclusionAI/LLaDA-MoE-7B-A1B-Instruct (64 experts, top-8 of a softmax renormalised,
 *                   every layer MoE, per-head QK norms)
 *   llada2.0-mini   inclusionAI/LLaDA2.0-mini        (256 experts, top-8, 1 shared, layer 0 dense; per-head
 *                   QK norms, rotary over 64 of each head's 128 dimensions; sigmoid scores with an expert
 *                   bias, 8 groups of which the best 4 are chosen from, weights renormalised times 2.5)
 *   llada2.0-flash  inclusionAI/LLaDA2.0-flash (100B, 6.1B active; dFactory's vendored config at c29d72c,
 *                   configs/model_configs/llada2_flash: LLaDA2.0-mini's design at 32 layers of 4096, 32
 *                   heads, experts of 1,024, a dense first layer of 9,216, 16,384 positions; LLaDA2.1-flash
 *                   has its shapes)
 *   qwen2.5-3b      Qwen/Qwen2.5-3B-Instruct         (an autoregressive model: dInfer's vLLM baseline;
 *                   causal, which is block-causal at any block; its tied LM head counted apart)
 *   fast-dllm-v2-7b Efficient-Large-Model/Fast_dLLM_v2_7B (Qwen2.5-7B-Instruct shapes, QKV bias, trained
 *                   block-causal in blocks of 32: bd_size)
 *   diffusion-gemma google/diffusiongemma-26B-A4B-it (Gemma 4 26B-A4B: five sliding layers of 8 K/V heads of
 *                   256 and a window of 1,024, then a global layer of 2 K/V heads of 512 whose V is its
 *                   K, five times; 16 query heads; every layer a dense MLP of 2,112 (as 3 shared experts
 *                   of 704: the same weights and FLOPs) beside 128 experts of 704, top 8; per-head QK
 *                   norms; the LM head tied to the 262,144-token embedding. Its prompt runs causally
 *                   once, then a canvas of 256 positions, bidirectional over the prompt's K/V, each
 *                   step, committed by a causal pass of its own: block-causal at 256. The values are
 *                   those vLLM's model file and the checkpoint's tests name; the rotary base is not used
 *                   in pricing)
 */
#include "model.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct model_cfg builtin_models[] = {
    {.name = "llada-8b", .num_layers = 32, .hidden = 4096, .num_heads = 32, .num_kv_heads = 32,
     .head_dim = 128, .ffn = 12288, .vocab = 126464, .max_pos = 4096, .rope_theta = 500000.0,
     .weight_bytes = 2, .kv_bytes = 2},
    {.name = "dream-7b", .num_layers = 28, .hidden = 3584, .num_heads = 28, .num_kv_heads = 4,
     .head_dim = 128, .ffn = 18944, .vocab = 152064, .max_pos = 131072, .rope_theta = 1000000.0,
     .qkv_bias = true, .weight_bytes = 2, .kv_bytes = 2},
    {.name = "sdar-8b", .num_layers = 36, .hidden = 4096, .num_heads = 32, .num_kv_heads = 8,
     .head_dim = 128, .ffn = 12288, .vocab = 151936, .max_pos = 32768, .rope_theta = 1000000.0,
     .qk_norm = true, .block_causal = true, .weight_bytes = 2, .kv_bytes = 2},
    {.name = "llada-moe-7b", .num_layers = 16, .hidden = 2048, .num_heads = 16, .num_kv_heads = 16,
     .head_dim = 128, .ffn = 0, .vocab = 157184, .max_pos = 8192, .rope_theta = 50000.0,
     .qk_norm = true, .num_experts = 64, .experts_top_k = 8, .moe_ffn = 1024, .norm_topk = true,
     .weight_bytes = 2, .kv_bytes = 2},
    {.name = "llada2.0-mini", .num_layers = 20, .hidden = 2048, .num_heads = 16, .num_kv_heads = 4,
     .head_dim = 128, .ffn = 5120, .vocab = 157184, .max_pos = 32768, .rope_theta = 600000.0,
     .qk_norm = true, .rotary_dim = 64, .block_causal = true, .num_experts = 256, .experts_top_k = 8,
     .moe_ffn = 512, .num_shared_experts = 1, .first_dense_layers = 1, .router_sigmoid = true,
     .expert_bias = true, .norm_topk = true, .n_group = 8, .topk_group = 4, .routed_scale = 2.5,
     .weight_bytes = 2, .kv_bytes = 2},
    {.name = "llada2.0-flash", .num_layers = 32, .hidden = 4096, .num_heads = 32, .num_kv_heads = 4,
     .head_dim = 128, .ffn = 9216, .vocab = 157184, .max_pos = 16384, .rope_theta = 600000.0,
     .qk_norm = true, .rotary_dim = 64, .block_causal = true, .num_experts = 256, .experts_top_k = 8,
     .moe_ffn = 1024, .num_shared_experts = 1, .first_dense_layers = 1, .router_sigmoid = true,
     .expert_bias = true, .norm_topk = true, .n_group = 8, .topk_group = 4, .routed_scale = 2.5,
     .weight_bytes = 2, .kv_bytes = 2},
    {.name = "qwen2.5-3b", .num_layers = 36, .hidden = 2048, .num_heads = 16, .num_kv_heads = 2,
     .head_dim = 128, .ffn = 11008, .vocab = 151936, .max_pos = 32768, .rope_theta = 1000000.0,
     .qkv_bias = true, .block_causal = true, .weight_bytes = 2, .kv_bytes = 2},
    {.name = "fast-dllm-v2-7b", .num_layers = 28, .hidden = 3584, .num_heads = 28, .num_kv_heads = 4,
     .head_dim = 128, .ffn = 18944, .vocab = 152064, .max_pos = 32768, .rope_theta = 1000000.0,
     .qkv_bias = true, .block_causal = true, .weight_bytes = 2, .kv_bytes = 2},
    {.name = "diffusion-gemma", .num_layers = 30, .hidden = 2816, .num_heads = 16, .num_kv_heads = 8,
     .head_dim = 256, .ffn = 0, .vocab = 262144, .max_pos = 262144, .rope_theta = 10000.0, .qk_norm = true,
     .block_causal = true, .num_experts = 128, .experts_top_k = 8, .moe_ffn = 704, .num_shared_experts = 3,
     .global_every = 6, .sliding_window = 1024, .global_kv_heads = 2, .global_head_dim = 512,
     .global_k_eq_v = true, .tied_lm_head = true, .weight_bytes = 2, .kv_bytes = 2},
};

int model_num_builtin(void) { return (int)TS_ARRAY_LEN(builtin_models); }

const struct model_cfg *model_builtin(int i)
{
    TS_ASSERT(i >= 0 && i < model_num_builtin());
    return &builtin_models[i];
}

const struct model_cfg *model_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(builtin_models); i++)
        if (ts_name_eq(builtin_models[i].name, name))
            return &builtin_models[i];
    return NULL;
}

static const char *model_name_at(int i)
{
    return i < model_num_builtin() ? builtin_models[i].name : NULL;
}

void model_list(char *buf, size_t len) { ts_join_names(buf, len, model_name_at); }

int model_validate(const struct model_cfg *m, struct ts_err *err)
{
    if (m->num_layers <= 0 || m->hidden <= 0 || m->num_heads <= 0 || m->num_kv_heads <= 0 ||
        m->head_dim <= 0 || m->vocab <= 0 || m->max_pos <= 0)
        return ts_fail(err, "model %s: layers, hidden, heads, kv heads, head dim, vocab and "
                            "max positions must all be positive", m->name);
    /* bounds far above any real model, so that derived sizes cannot overflow */
    const struct {
        const char *field;
        int64_t v, most;
    } dims[] = {{"num_layers", m->num_layers, 4096},      {"hidden", m->hidden, 1 << 20},
                {"num_heads", m->num_heads, 16384},       {"num_kv_heads", m->num_kv_heads, 16384},
                {"head_dim", m->head_dim, 16384},         {"ffn", m->ffn, 1 << 22},
                {"vocab", m->vocab, 1 << 24},             {"max_pos", m->max_pos, 1 << 28},
                {"num_experts", m->num_experts, 65536},   {"moe_ffn", m->moe_ffn, 1 << 22},
                {"num_shared_experts", m->num_shared_experts, 1024},
                {"num_heads x head_dim", (int64_t)m->num_heads * m->head_dim, 1 << 22},
                {"num_kv_heads x head_dim", (int64_t)m->num_kv_heads * m->head_dim, 1 << 22}};
    for (size_t i = 0; i < TS_ARRAY_LEN(dims); i++)
        if (dims[i].v > dims[i].most)
            return ts_fail(err, "model %s: %s %lld is implausibly large (at most %lld)", m->name, dims[i].field,
                           (long long)dims[i].v, (long long)dims[i].most);
    if (m->num_heads % m->num_kv_heads)
        return ts_fail(err, "model %s: num_heads %d is not a multiple of num_kv_heads %d", m->name,
                       m->num_heads, m->num_kv_heads);
    if (m->num_experts < 0)
        return ts_fail(err, "model %s: num_experts %d is negative", m->name, m->num_experts);
    if (m->num_experts > 0 && (m->experts_top_k <= 0 || m->experts_top_k > m->num_experts))
        return ts_fail(err, "model %s: experts_top_k (num_experts_per_tok) %d is not in 1..%d, its num_experts",
                       m->name, m->experts_top_k, m->num_experts);
    if (m->num_experts > 0 && m->moe_ffn <= 0)
        return ts_fail(err, "model %s: moe_ffn (moe_intermediate_size) must be positive with %d experts", m->name,
                       m->num_experts);
    if (m->num_experts == 0 && (m->num_shared_experts > 0 || m->experts_top_k > 0))
        return ts_fail(err, "model %s: %s %d without routed experts (num_experts 0)", m->name,
                       m->num_shared_experts > 0 ? "num_shared_experts (n_shared_experts)" : "experts_top_k (num_experts_per_tok)",
                       m->num_shared_experts > 0 ? m->num_shared_experts : m->experts_top_k);
    if (m->rotary_dim < 0 || m->rotary_dim > m->head_dim || m->rotary_dim % 2)
        return ts_fail(err, "model %s: rotary_dim (head_dim x partial_rotary_factor) %d is not an even number in "
                            "0..%d, its head_dim", m->name, m->rotary_dim, m->head_dim);
    if (m->num_experts > 0 && m->n_group > 1 &&
        (m->num_experts % m->n_group || m->topk_group < 1 || m->topk_group > m->n_group ||
         (int64_t)m->topk_group * (m->num_experts / m->n_group) < m->experts_top_k))
        return ts_fail(err, "model %s: n_group %d and topk_group %d do not fit %d experts with a top-%d (n_group "
                            "must divide num_experts, topk_group be in 1..n_group, and the chosen groups hold at "
                            "least num_experts_per_tok experts)", m->name, m->n_group, m->topk_group,
                       m->num_experts, m->experts_top_k);
    if (m->n_group < 0 || m->topk_group < 0 || !(m->routed_scale >= 0 && m->routed_scale <= 1e3))
        return ts_fail(err, "model %s: n_group %d, topk_group %d or routed_scaling_factor %g out of range", m->name,
                       m->n_group, m->topk_group, m->routed_scale);
    if (m->first_dense_layers < 0 || m->first_dense_layers > m->num_layers)
        return ts_fail(err, "model %s: first_dense_layers out of range", m->name);
    if (m->num_experts == 0 && m->ffn <= 0)
        return ts_fail(err, "model %s: a dense model needs ffn (intermediate_size) > 0", m->name);
    if (m->num_experts > 0 && m->first_dense_layers > 0 && m->ffn <= 0)
        return ts_fail(err, "model %s: dense leading layers need ffn (intermediate_size) > 0",
                       m->name);
    if (m->weight_bytes <= 0 || m->kv_bytes <= 0)
        return ts_fail(err, "model %s: weight_bytes and kv_bytes must be positive", m->name);
    if (m->global_every < 0 || m->global_every > m->num_layers || m->sliding_window < 0 ||
        m->sliding_window > m->max_pos)
        return ts_fail(err, "model %s: global_every %d (0..%d, its layers) or sliding_window %d (0..%d, its positions) "
                            "out of range", m->name, m->global_every, m->num_layers, m->sliding_window, m->max_pos);
    if (m->sliding_window > 0 && m->global_every == 0)
        return ts_fail(err, "model %s: a sliding window (%d) without global layers (global_every): every layer would "
                            "see the window alone", m->name, m->sliding_window);
    if (m->global_every > 0 &&
        (m->global_kv_heads <= 0 || m->global_head_dim <= 0 || m->global_kv_heads > 16384 ||
         m->global_head_dim > 16384 || m->num_heads % m->global_kv_heads))
        return ts_fail(err, "model %s: its global layers need global_kv_heads dividing num_heads %d and a positive "
                            "global_head_dim (got %d and %d)", m->name, m->num_heads, m->global_kv_heads,
                       m->global_head_dim);
    return 0;
}

/* --- Hugging Face config.json ------------------------------------------------------------- */

/* Reads the first present key of `keys` as a non-negative integer. Returns 1 if found, 0 if
 * absent, -1 on a bad value (message in err). */
static int json_get_int(const char *path, json_t *root, const char *const *keys, int *out,
                        struct ts_err *err)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(root, *keys);
        if (!v || json_is_null(v))
            continue;
        double d;
        if (json_is_integer(v))
            d = (double)json_integer_value(v);
        else if (json_is_real(v))
            d = json_real_value(v);
        else
            return ts_fail(err, "%s: %s: not a number", path, *keys);
        if (!(d >= 0 && d <= 1e9) || d != (double)(int)d) {
            char text[64];
            snprintf(text, sizeof text, "%.17g", d);
            return ts_fail(err, "%s: %s: %s is not a whole number in 0..1000000000", path, *keys, text);
        }
        *out = (int)d;
        return 1;
    }
    return 0;
}

static int json_get_bool(json_t *root, const char *const *keys, bool *out)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(root, *keys);
        if (v && json_is_boolean(v)) {
            *out = json_is_true(v);
            return 1;
        }
    }
    return 0;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

static int need_int(const char *path, json_t *root, const char *const *keys, int *out,
                    struct ts_err *err)
{
    int r = json_get_int(path, root, keys, out, err);
    if (r < 0)
        return -1;
    if (r == 0) {
        char names[160] = "";
        for (const char *const *k = keys; *k; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k == keys ? "" : " or ", *k);
        return ts_fail(err, "%s: %s: missing (a required model field)", path, names);
    }
    return 0;
}

/* Reads `key`, where present, as a number in (lo, hi] into *out: 1 if found, 0 if absent, -1 on a
 * bad value (message in err). */
static int json_get_real(const char *path, json_t *root, const char *key, double lo, double hi, double *out,
                         struct ts_err *err)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) > lo && json_number_value(v) <= hi))
        return ts_fail(err, "%s: %s: must be a number in (%g, %g]", path, key, lo, hi);
    *out = json_number_value(v);
    return 1;
}

/* The attention's per-head QK norms and partial rotary embedding and the router's keys (model.h)
 * into *m, whose head_dim is known. */
static int parse_attn_router(const char *path, json_t *root, struct model_cfg *m, struct ts_err *err)
{
    json_t *mt = json_object_get(root, "model_type");
    /* per-head QK norms: Qwen3 (SDAR) always has them; LLaDA-MoE and LLaDA2.0 say so */
    json_get_bool(root, KEYS("use_qk_norm", "qk_layernorm", "qk_norm"), &m->qk_norm);
    if (json_is_string(mt) && (strncmp(json_string_value(mt), "qwen3", 5) == 0 ||
                               strstr(json_string_value(mt), "sdar")))
        m->qk_norm = true;
    double f;
    int r = json_get_real(path, root, "partial_rotary_factor", 0, 1, &f, err);
    if (r < 0 || (r == 0 && json_get_int(path, root, KEYS("rotary_dim"), &m->rotary_dim, err) < 0))
        return -1;
    if (r > 0)
        m->rotary_dim = (int)lround(f * m->head_dim);
    if (m->rotary_dim == m->head_dim)
        m->rotary_dim = 0;
    /* the router: softmax top-k (renormalised where norm_topk_prob), or LLaDA2.0's sigmoid scores */
    json_get_bool(root, KEYS("norm_topk_prob"), &m->norm_topk);
    json_t *sf = json_object_get(root, "score_function");
    if (sf && !json_is_null(sf)) {
        if (!json_is_string(sf) || (strcmp(json_string_value(sf), "sigmoid") != 0 &&
                                    strcmp(json_string_value(sf), "softmax") != 0))
            return ts_fail(err, "%s: score_function: must be \"softmax\" or \"sigmoid\"", path);
        m->router_sigmoid = strcmp(json_string_value(sf), "sigmoid") == 0;
    }
    json_get_bool(root, KEYS("moe_router_enable_expert_bias"), &m->expert_bias);
    if (json_get_int(path, root, KEYS("n_group"), &m->n_group, err) < 0 ||
        json_get_int(path, root, KEYS("topk_group"), &m->topk_group, err) < 0 ||
        json_get_real(path, root, "routed_scaling_factor", 0, 1000, &m->routed_scale, err) < 0 ||
        json_get_real(path, root, "rms_norm_eps", 0, 1, &m->rms_eps, err) < 0)
        return -1;
    return 0;
}

int model_parse_hf(const char *path, const char *text, size_t len, struct model_cfg *out,
                   struct ts_err *err)
{
    if (ts_json_text(path, text, len, err))
        return -1;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return ts_fail(err, "%s:%d: %s", path, jerr.line, jerr.text);
    int rc = -1;
    struct model_cfg m;
    memset(&m, 0, sizeof m);
    m.weight_bytes = m.kv_bytes = 2;
    m.rope_theta = 10000.0;
    if (!json_is_object(root)) {
        ts_fail(err, "%s: top level is not a JSON object", path);
        goto done;
    }
    const char *base = strrchr(path, '/');
    snprintf(m.name, sizeof m.name, "%s", base ? base + 1 : path);
    json_t *mt = json_object_get(root, "model_type");
    if (json_is_string(mt))
        snprintf(m.name, sizeof m.name, "%s(%s)", json_string_value(mt), base ? base + 1 : path);

    if (need_int(path, root, KEYS("num_hidden_layers", "n_layers"), &m.num_layers, err) ||
        need_int(path, root, KEYS("hidden_size", "d_model"), &m.hidden, err) ||
        need_int(path, root, KEYS("num_attention_heads", "n_heads"), &m.num_heads, err) ||
        need_int(path, root, KEYS("vocab_size", "embedding_size"), &m.vocab, err))
        goto done;
    int r;
    if ((r = json_get_int(path, root, KEYS("num_key_value_heads", "n_kv_heads"), &m.num_kv_heads,
                          err)) < 0)
        goto done;
    if (r == 0 || m.num_kv_heads == 0)
        m.num_kv_heads = m.num_heads;
    if ((r = json_get_int(path, root, KEYS("head_dim"), &m.head_dim, err)) < 0)
        goto done;
    if (r == 0 && m.num_heads > 0) {
        if (m.hidden % m.num_heads) {
            ts_fail(err, "%s: hidden size %d is not a multiple of the %d attention heads (and no head_dim is given)",
                    path, m.hidden, m.num_heads);
            goto done;
        }
        m.head_dim = m.hidden / m.num_heads;
    }
    if (json_get_int(path, root, KEYS("intermediate_size", "mlp_hidden_size"), &m.ffn, err) < 0 ||
        json_get_int(path, root, KEYS("max_position_embeddings", "max_sequence_length"), &m.max_pos,
                     err) < 0 ||
        json_get_int(path, root, KEYS("num_experts", "moe_num_experts", "n_routed_experts"),
                     &m.num_experts, err) < 0 ||
        json_get_int(path, root, KEYS("num_experts_per_tok", "moe_top_k"), &m.experts_top_k, err) <
            0 ||
        json_get_int(path, root, KEYS("moe_intermediate_size", "expert_intermediate_size"),
                     &m.moe_ffn, err) < 0 ||
        json_get_int(path, root, KEYS("num_shared_experts", "n_shared_experts"),
                     &m.num_shared_experts, err) < 0 ||
        json_get_int(path, root, KEYS("first_k_dense_replace"), &m.first_dense_layers, err) < 0)
        goto done;
    if (m.max_pos == 0)
        m.max_pos = 4096;
    json_t *theta = json_object_get(root, "rope_theta");
    if (json_is_number(theta))
        m.rope_theta = json_number_value(theta);
    json_get_bool(root, KEYS("attention_bias", "use_qkv_bias", "include_qkv_bias", "include_bias"),
                  &m.qkv_bias);
    /* Qwen2-family configs (Dream) carry QKV bias without saying so. */
    if (json_is_string(mt) && (strcmp(json_string_value(mt), "qwen2") == 0 ||
                               strcmp(json_string_value(mt), "Dream") == 0))
        m.qkv_bias = true;
    if (json_is_string(mt) && (strstr(json_string_value(mt), "sdar") ||
                               strstr(json_string_value(mt), "llada2")))
        m.block_causal = true;
    if (m.num_experts > 0 && m.moe_ffn == 0)
        m.moe_ffn = m.ffn;
    if (parse_attn_router(path, root, &m, err))
        goto done;
    if (model_validate(&m, err))
        goto done;
    *out = m;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int model_load_hf(const char *path, struct model_cfg *out, struct ts_err *err)
{
    char *text;
    size_t len;
    if (ts_read_file(path, &text, &len, err))
        return -1;
    int rc = model_parse_hf(path, text, len, out, err);
    free(text);
    return rc;
}

int model_tp_share(const struct model_cfg *m, int size, struct model_cfg *share, struct ts_err *err)
{
    *share = *m;
    if (size < 1)
        return ts_fail(err, "tensor parallelism: %d ranks", size);
    const struct {
        const char *what;
        int n;
    } split[] = {{"query heads", m->num_heads}, {"K/V heads", m->num_kv_heads}, {"FFN width", m->ffn},
                 {"expert width", m->moe_ffn},  {"vocabulary", m->vocab}, {"global layers' K/V heads", m->global_kv_heads}};
    for (size_t i = 0; i < TS_ARRAY_LEN(split); i++)
        if (split[i].n % size)
            return ts_fail(err, "--tp %d does not divide %s's %d %s", size, m->name, split[i].n, split[i].what);
    share->num_heads /= size;
    share->num_kv_heads /= size;
    share->global_kv_heads /= size;
    share->ffn /= size;
    share->moe_ffn /= size;
    share->vocab /= size;
    if (size > 1)
        snprintf(share->name, sizeof share->name, "%.50s-tp%d", m->name, size);
    return 0;
}

int model_resolve(const char *name_or_path, struct model_cfg *out, struct ts_err *err)
{
    const struct model_cfg *m = model_find(name_or_path);
    if (m) {
        *out = *m;
        return 0;
    }
    const char *tp = strstr(name_or_path, "-tp");
    if (tp && tp[3] >= '2' && tp[3] <= '8' && tp[4] == '\0') { /* a built-in model's share: NAME-tpN */
        char base[64];
        snprintf(base, sizeof base, "%.*s", (int)(tp - name_or_path), name_or_path);
        if ((m = model_find(base)))
            return model_tp_share(m, tp[3] - '0', out, err);
    }
    if (strchr(name_or_path, '/') || strstr(name_or_path, ".json"))
        return model_load_hf(name_or_path, out, err);
    char list[512];
    model_list(list, sizeof list);
    return ts_fail(err, "unknown model '%s' (built in: %s; or give a path to config.json)",
                   name_or_path, list);
}

/* --- derived sizes ---------------------------------------------------------------------- */

int model_q_dim(const struct model_cfg *m) { return m->num_heads * m->head_dim; }
int model_kv_dim(const struct model_cfg *m) { return m->num_kv_heads * m->head_dim; }
int model_rotary_dim(const struct model_cfg *m) { return m->rotary_dim > 0 ? m->rotary_dim : m->head_dim; }
float model_rms_eps(const struct model_cfg *m) { return m->rms_eps > 0 ? (float)m->rms_eps : 1e-5f; }

bool model_is_moe_layer(const struct model_cfg *m, int layer)
{
    return m->num_experts > 0 && layer >= m->first_dense_layers;
}

int model_num_moe_layers(const struct model_cfg *m)
{
    return m->num_experts > 0 ? m->num_layers - m->first_dense_layers : 0;
}

const char *model_engine_lacks(const struct model_cfg *m)
{
    return m->global_every > 0 || m->sliding_window > 0 ? "interleaved sliding-window and global attention layers"
                                                         : NULL;
}

struct model_cfg model_act_view(const struct model_cfg *m)
{
    struct model_cfg v = *m;
    if (m->global_every > 0) {
        const struct model_cfg g = model_layer_view(m, true, NULL);
        v.head_dim = TS_MAX(m->head_dim, g.head_dim);
        v.num_kv_heads = (TS_MAX(model_kv_dim(m), model_kv_dim(&g)) + v.head_dim - 1) / v.head_dim;
    }
    return v;
}

int model_num_global_layers(const struct model_cfg *m)
{
    return m->global_every > 0 ? m->num_layers / m->global_every : 0;
}

struct model_cfg model_layer_view(const struct model_cfg *m, bool global, bool *k_eq_v)
{
    struct model_cfg v = *m;
    if (global && m->global_every > 0) {
        v.num_kv_heads = m->global_kv_heads;
        v.head_dim = m->global_head_dim;
    }
    if (k_eq_v)
        *k_eq_v = global && m->global_every > 0 && m->global_k_eq_v;
    return v;
}

/* A layer's attention weights as v's (one of model_layer_view's) layers have them. */
static int64_t view_attn_params(const struct model_cfg *v, bool k_eq_v)
{
    const int64_t h = v->hidden, qd = model_q_dim(v), kvd = model_kv_dim(v), kv = (k_eq_v ? 1 : 2) * kvd;
    int64_t p = h * (qd + kv) + qd * h;
    if (v->qkv_bias)
        p += qd + kv;
    if (v->qk_norm)
        p += 2 * v->head_dim; /* the per-head QK norms' weights, shared by the heads */
    return p + 2 * h; /* two RMSNorm weights */
}

/* The attention weights of all the layers. */
static int64_t attn_params(const struct model_cfg *m)
{
    const int g = model_num_global_layers(m);
    bool keqv;
    const struct model_cfg global = model_layer_view(m, true, &keqv);
    return (int64_t)(m->num_layers - g) * view_attn_params(m, false) + (int64_t)g * view_attn_params(&global, keqv);
}

static int64_t ffn_params(int64_t hidden, int64_t width) { return 3 * hidden * width; }

int64_t model_params(const struct model_cfg *m)
{
    int64_t h = m->hidden, p = (m->tied_lm_head ? 1 : 2) * (int64_t)m->vocab * h + h; /* embedding, LM head, final norm */
    int moe = model_num_moe_layers(m), dense = m->num_layers - moe;
    p += attn_params(m);
    p += (int64_t)dense * ffn_params(h, m->ffn);
    p += (int64_t)moe * ((int64_t)(m->num_experts + m->num_shared_experts) *
                             ffn_params(h, m->moe_ffn) + h * m->num_experts + (m->expert_bias ? m->num_experts : 0));
    return p;
}

int64_t model_active_params(const struct model_cfg *m)
{
    int64_t h = m->hidden, p = (m->tied_lm_head ? 1 : 2) * (int64_t)m->vocab * h + h;
    int moe = model_num_moe_layers(m), dense = m->num_layers - moe;
    p += attn_params(m);
    p += (int64_t)dense * ffn_params(h, m->ffn);
    p += (int64_t)moe * ((int64_t)(m->experts_top_k + m->num_shared_experts) *
                             ffn_params(h, m->moe_ffn) + h * m->num_experts + (m->expert_bias ? m->num_experts : 0));
    return p;
}

int64_t model_weight_bytes(const struct model_cfg *m)
{
    /* weights of fewer than 2 bytes (FP8) keep the embedding, the LM head and the MoE router in bf16, as FP8
     * checkpoints do */
    const int64_t kept = (m->tied_lm_head ? 1 : 2) * (int64_t)m->vocab * m->hidden +
                         (int64_t)model_num_moe_layers(m) * m->hidden * m->num_experts;
    return model_params(m) * m->weight_bytes + (m->weight_bytes < 2 ? kept * (2 - m->weight_bytes) : 0);
}

int64_t model_expert_weight_bytes(const struct model_cfg *m)
{
    return (int64_t)model_num_moe_layers(m) * m->num_experts * ffn_params(m->hidden, m->moe_ffn) * m->weight_bytes;
}

/* K+V bytes a token takes in the global layers and in the others (all of them without interleaving). */
static void kv_bytes_split(const struct model_cfg *m, int64_t *global, int64_t *local)
{
    const int g = model_num_global_layers(m);
    const struct model_cfg v = model_layer_view(m, true, NULL);
    *global = 2LL * g * model_kv_dim(&v) * m->kv_bytes;
    *local = 2LL * (m->num_layers - g) * model_kv_dim(m) * m->kv_bytes;
}

int64_t model_kv_bytes_per_token(const struct model_cfg *m)
{
    int64_t g, l;
    kv_bytes_split(m, &g, &l);
    return g + l;
}

int64_t model_kv_tokens_held(const struct model_cfg *m, int64_t tokens)
{
    if (m->sliding_window <= 0 || tokens <= m->sliding_window)
        return tokens;
    int64_t g, l;
    kv_bytes_split(m, &g, &l);
    return (g * tokens + l * m->sliding_window + g + l - 1) / (g + l);
}

int64_t model_feat_bytes_per_token(const struct model_cfg *m)
{
    return 2LL * m->num_layers * m->hidden * m->kv_bytes;
}
