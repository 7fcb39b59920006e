/* check_model.c: the built-in model table and the Hugging Face config.json loader. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

START_TEST(builtin_llada)
{
    const struct model_cfg *m = model_find("LLaDA-8B");
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->num_layers, 32);
    ck_assert_int_eq(m->hidden, 4096);
    ck_assert_int_eq(m->vocab, 126464);
    /* 8.0 B parameters: 2 x 126464 x 4096 embeddings + 32 x (4 x 4096^2 + 3 x 4096 x 12288) */
    int64_t expect = 2LL * 126464 * 4096 + 4096 +
                     32LL * (4LL * 4096 * 4096 + 2 * 4096 + 3LL * 4096 * 12288);
    ck_assert_int_eq(model_params(m), expect);
    ck_assert_int_eq(model_kv_bytes_per_token(m), 2LL * 32 * 32 * 128 * 2); /* 512 KiB */
    ck_assert_int_eq(model_params(m), model_active_params(m));
    /* its weights: 2 bytes a parameter; FP8, a byte but the embedding and LM head's two (tied or not) */
    ck_assert_int_eq(model_weight_bytes(m), 2 * expect);
    struct model_cfg f = *m;
    f.weight_bytes = 1;
    ck_assert_int_eq(model_weight_bytes(&f), expect + 2LL * 126464 * 4096);
    f.tied_lm_head = true;
    ck_assert_int_eq(model_weight_bytes(&f), model_params(&f) + 126464LL * 4096);
    /* a MoE model's router too: LLaDA2.0-mini's 19 MoE layers of 2,048 x 256 */
    struct model_cfg mo = *model_find("llada2.0-mini");
    const int64_t bf16 = model_weight_bytes(&mo);
    mo.weight_bytes = 1;
    ck_assert_int_eq(model_weight_bytes(&mo), bf16 / 2 + 2LL * 157184 * 2048 + 19LL * 2048 * 256);
}
END_TEST

START_TEST(builtin_moe_and_gqa)
{
    const struct model_cfg *mini = model_find("llada2.0-mini");
    ck_assert_ptr_nonnull(mini);
    ck_assert_int_eq(model_num_moe_layers(mini), 19);
    ck_assert(!model_is_moe_layer(mini, 0) && model_is_moe_layer(mini, 1));
    /* 16 B total, about 1.4 B active */
    ck_assert(model_params(mini) > 15e9 && model_params(mini) < 17.5e9);
    ck_assert(model_active_params(mini) > 1.2e9 && model_active_params(mini) < 1.8e9);
    /* LLaDA2.0-flash: 100 B total, 6.1 B active (its model card), 31 MoE layers after a dense one */
    const struct model_cfg *flash = model_find("llada2.0-flash");
    ck_assert_ptr_nonnull(flash);
    ck_assert_int_eq(model_num_moe_layers(flash), 31);
    ck_assert(model_params(flash) > 98e9 && model_params(flash) < 106e9);
    ck_assert(model_active_params(flash) > 5.6e9 && model_active_params(flash) < 6.6e9);
    const struct model_cfg *dream = model_find("dream-7b");
    ck_assert(dream->qkv_bias);
    ck_assert_int_eq(model_kv_dim(dream), 4 * 128);
    ck_assert(model_params(dream) > 7.0e9 && model_params(dream) < 8.0e9);
    const struct model_cfg *moe = model_find("llada-moe-7b");
    ck_assert(model_params(moe) > 6.5e9 && model_params(moe) < 7.8e9);
    ck_assert(model_active_params(moe) > 1.0e9 && model_active_params(moe) < 1.8e9);
    for (int i = 0; i < model_num_builtin(); i++)
        ck_assert_int_eq(model_validate(model_builtin(i), NULL), 0);
}
END_TEST

/* K and V per token, written out from each published config.json: 2 x layers x K/V heads x head
 * dim x 2 bytes (the K/V heads, not the query heads, for the GQA models) */
START_TEST(kv_bytes_per_token_of_each_model)
{
    static const struct {
        const char *name;
        int64_t bytes;
    } want[] = {{"llada-8b", 2 * 32 * 32 * 128 * 2}, {"dream-7b", 2 * 28 * 4 * 128 * 2}, {"sdar-8b", 2 * 36 * 8 * 128 * 2},
                {"llada-moe-7b", 2 * 16 * 16 * 128 * 2}, {"llada2.0-mini", 2 * 20 * 4 * 128 * 2},
                {"llada2.0-flash", 2 * 32 * 4 * 128 * 2}};
    for (size_t i = 0; i < TS_ARRAY_LEN(want); i++)
        ck_assert_msg(model_kv_bytes_per_token(model_find(want[i].name)) == want[i].bytes, "%s", want[i].name);
}
END_TEST

/* DiffusionGemma 26B-A4B written out from its config: 25 sliding layers (16 query heads and 8 K/V heads
 * of 256) and 5 global ones (16 query heads and 2 K/V heads of 512, no V projection), every layer
 * 128 experts of 704 and a dense MLP of 2,112, a tied 262,144 x 2,816 embedding; K/V a token:
 * 25 x 2 x 8 x 256 x 2 + 5 x 2 x 2 x 512 x 2 bytes (K still stored beside V in the global layers) */
START_TEST(diffusion_gemma_shape)
{
    const struct model_cfg *m = model_find("diffusion-gemma");
    ck_assert_ptr_nonnull(m);
    const int64_t h = 2816, norms = 2 * h + 2 * 256, gnorms = 2 * h + 2 * 512;
    const int64_t sliding = h * (4096 + 2 * 2048) + 4096 * h + norms, global = h * (8192 + 1024) + 8192 * h + gnorms;
    const int64_t mlp = 3 * h * 2112, experts = 128 * 3 * h * 704, router = h * 128;
    ck_assert_int_eq(model_params(m), 262144LL * h + h + 25 * sliding + 5 * global + 30 * (mlp + experts + router));
    ck_assert_int_eq(model_active_params(m),
                     262144LL * h + h + 25 * sliding + 5 * global + 30 * (mlp + 8 * 3 * h * 704 + router));
    ck_assert(model_params(m) > 25.0e9 && model_params(m) < 25.5e9 && model_active_params(m) < 4.0e9);
    ck_assert_int_eq(model_kv_bytes_per_token(m), 25 * 2 * 8 * 256 * 2 + 5 * 2 * 2 * 512 * 2);
    ck_assert_int_eq(model_num_global_layers(m), 5);
    /* the window: a request of up to 1,024 tokens holds all; past it the sliding layers hold 1,024 */
    ck_assert_int_eq(model_kv_tokens_held(m, 1000), 1000);
    const int64_t g = 5 * 2 * 2 * 512 * 2, l = 25 * 2 * 8 * 256 * 2;
    ck_assert_int_eq(model_kv_tokens_held(m, 10000), (g * 10000 + l * 1024 + g + l - 1) / (g + l));
    ck_assert_int_eq(model_kv_tokens_held(model_find("llada-8b"), 10000), 10000);
    bool keqv;
    const struct model_cfg v = model_layer_view(m, true, &keqv);
    ck_assert(keqv && v.num_kv_heads == 2 && v.head_dim == 512 && v.num_heads == 16);
    const struct model_cfg w = model_layer_view(m, false, &keqv);
    ck_assert(!keqv && w.num_kv_heads == 8 && w.head_dim == 256);
    ck_assert_ptr_nonnull(model_engine_lacks(m));
    ck_assert_ptr_null(model_engine_lacks(model_find("sdar-8b")));
    /* tensor parallelism splits the global layers' heads too: 2 ways, not 4 */
    struct model_cfg share;
    ck_assert_int_eq(model_tp_share(m, 2, &share, NULL), 0);
    ck_assert_int_eq(share.global_kv_heads, 1);
    struct ts_err err;
    ck_assert_int_ne(model_tp_share(m, 4, &share, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "global layers' K/V heads"));
    /* a global layer's K/V heads must divide the query heads */
    struct model_cfg bad = *m;
    bad.global_kv_heads = 3;
    ck_assert_int_ne(model_validate(&bad, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "global_kv_heads"));
}
END_TEST

START_TEST(unknown_model_lists_builtins)
{
    struct model_cfg m;
    struct ts_err err;
    ck_assert_int_ne(model_resolve("gpt-9", &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "gpt-9"));
    ck_assert_ptr_nonnull(strstr(err.msg, "llada-8b"));
    ck_assert_ptr_nonnull(strstr(err.msg, "sdar-8b"));
}
END_TEST

START_TEST(hf_llada_keys)
{
    const char *p = tmp_file(0, ".json",
        "{\"model_type\":\"llada\",\"d_model\":4096,\"n_heads\":32,\"n_kv_heads\":32,"
        "\"n_layers\":32,\"mlp_hidden_size\":12288,\"vocab_size\":126464,"
        "\"max_sequence_length\":4096,\"rope_theta\":500000.0,\"include_bias\":false}");
    struct model_cfg m;
    struct ts_err err;
    ck_assert_msg(model_resolve(p, &m, &err) == 0, "%s", err.msg);
    const struct model_cfg *b = model_find("llada-8b");
    ck_assert_int_eq(model_params(&m), model_params(b));
    ck_assert_int_eq(m.head_dim, 128);
    ck_assert(m.rope_theta == 500000.0);
}
END_TEST

START_TEST(hf_qwen3_moe_keys)
{
    const char *p = tmp_file(0, ".json",
        "{\"model_type\":\"llada2_moe\",\"hidden_size\":2048,\"num_attention_heads\":16,"
        "\"num_key_value_heads\":4,\"head_dim\":128,\"num_hidden_layers\":20,"
        "\"intermediate_size\":5120,\"moe_intermediate_size\":512,\"num_experts\":256,"
        "\"num_experts_per_tok\":8,\"num_shared_experts\":1,\"first_k_dense_replace\":1,"
        "\"vocab_size\":157184,\"max_position_embeddings\":32768,\"rope_theta\":600000,"
        "\"use_qk_norm\":true,\"partial_rotary_factor\":0.5,\"score_function\":\"sigmoid\",\"n_group\":8,"
        "\"topk_group\":4,\"routed_scaling_factor\":2.5,\"moe_router_enable_expert_bias\":true,"
        "\"norm_topk_prob\":true,\"rms_norm_eps\":1e-06}");
    struct model_cfg m;
    struct ts_err err;
    ck_assert_msg(model_load_hf(p, &m, &err) == 0, "%s", err.msg);
    const struct model_cfg *b = model_find("llada2.0-mini");
    ck_assert_int_eq(model_params(&m), model_params(b));
    ck_assert(m.block_causal);
    /* the attention's and the router's fields, as the built-in model has them */
    ck_assert(m.qk_norm && m.rotary_dim == 64 && model_rotary_dim(&m) == 64);
    ck_assert(m.router_sigmoid && m.expert_bias && m.norm_topk && m.n_group == 8 && m.topk_group == 4);
    ck_assert(m.routed_scale == 2.5);
    ck_assert(m.rms_eps == 1e-6 && model_rms_eps(&m) == 1e-6f && model_rms_eps(b) == 1e-5f);
    ck_assert(b->qk_norm == m.qk_norm && b->rotary_dim == m.rotary_dim && b->router_sigmoid == m.router_sigmoid &&
              b->expert_bias == m.expert_bias && b->norm_topk == m.norm_topk && b->n_group == m.n_group &&
              b->topk_group == m.topk_group && b->routed_scale == m.routed_scale);
    /* Qwen3 (SDAR) has per-head QK norms without saying so; a whole rotary is no partial one */
    p = tmp_file(0, ".json", "{\"model_type\":\"qwen3\",\"hidden_size\":4096,\"num_attention_heads\":32,"
                             "\"num_key_value_heads\":8,\"head_dim\":128,\"num_hidden_layers\":36,"
                             "\"intermediate_size\":12288,\"vocab_size\":151936,\"partial_rotary_factor\":1.0}");
    ck_assert_msg(model_load_hf(p, &m, &err) == 0, "%s", err.msg);
    ck_assert(m.qk_norm && m.rotary_dim == 0 && model_rotary_dim(&m) == 128 && !m.router_sigmoid);
    ck_assert_int_eq(model_params(&m), model_params(model_find("sdar-8b")));
}
END_TEST

START_TEST(hf_errors_name_file_and_field)
{
    struct model_cfg m;
    struct ts_err err;
    const char *p = tmp_file(0, ".json", "{\"hidden_size\":2048,\"num_attention_heads\":16,"
                                         "\"vocab_size\":1000}");
    ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, p));
    ck_assert_ptr_nonnull(strstr(err.msg, "num_hidden_layers or n_layers: missing"));

    /* a hidden size the heads do not divide, with no head_dim to say otherwise */
    p = tmp_file(0, ".json", "{\"d_model\":4097,\"n_heads\":32,\"n_layers\":2,\"vocab_size\":10,\"mlp_hidden_size\":8}");
    ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "hidden size 4097 is not a multiple of the 32 attention heads"));

    p = tmp_file(0, ".json", "{\"hidden_size\":\"big\",\"num_hidden_layers\":2}");
    ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "hidden_size: not a number"));

    p = tmp_file(0, ".json", "{\"hidden_size\": 64,\n \"num_hidden_layers\": 2,,}");
    ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, ":2:")); /* the JSON error line */

    p = tmp_file(0, ".json", "{\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":6,"
                             "\"num_key_value_heads\":4,\"vocab_size\":10,\"intermediate_size\":8}");
    ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple"));

    ck_assert_int_ne(model_load_hf("/nonexistent/config.json", &m, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));

    /* a mixture of experts whose experts, top-k or shared experts do not agree: each named with its
     * value and the Hugging Face key (an expert's width left out is intermediate_size, as Mixtral's) */
    static const char *const moe[][2] = {
        {"\"num_experts\":64,\"num_experts_per_tok\":80,\"moe_intermediate_size\":512",
         "experts_top_k (num_experts_per_tok) 80 is not in 1..64"},
        {"\"num_shared_experts\":2", "num_shared_experts (n_shared_experts) 2 without routed experts"},
        {"\"num_experts_per_tok\":4", "experts_top_k (num_experts_per_tok) 4 without routed experts"},
        {"\"num_experts\":64,\"num_experts_per_tok\":8,\"moe_intermediate_size\":512,\"n_group\":5,\"topk_group\":2",
         "n_group 5 and topk_group 2 do not fit 64 experts with a top-8"},
        {"\"num_experts\":64,\"num_experts_per_tok\":8,\"moe_intermediate_size\":512,\"n_group\":8,\"topk_group\":9",
         "n_group 8 and topk_group 9 do not fit"},
        {"\"num_experts\":64,\"num_experts_per_tok\":8,\"moe_intermediate_size\":512,\"n_group\":16,\"topk_group\":1",
         "n_group 16 and topk_group 1 do not fit 64 experts with a top-8"},
        {"\"score_function\":\"relu\"", "score_function: must be \"softmax\" or \"sigmoid\""},
        {"\"routed_scaling_factor\":-1", "routed_scaling_factor: must be a number in (0, 1000]"},
        {"\"partial_rotary_factor\":1.5", "partial_rotary_factor: must be a number in (0, 1]"},
        {"\"rms_norm_eps\":0", "rms_norm_eps: must be a number in (0, 1]"},
        {"\"partial_rotary_factor\":\"half\"", "partial_rotary_factor: must be a number in (0, 1]"},
        {"\"rotary_dim\":300", "rotary_dim (head_dim x partial_rotary_factor) 300 is not an even number in 0..64"}};
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"hidden_size\":256,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":10,"
                 "\"intermediate_size\":512,%s}",
                 moe[i][0]);
        p = tmp_file(0, ".json", json);
        ck_assert_int_ne(model_load_hf(p, &m, &err), 0);
        ck_assert_msg(strstr(err.msg, moe[i][1]) != NULL, "case %zu: %s", i, err.msg);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    ck_case(s, builtin_llada, 0);
    ck_case(s, builtin_moe_and_gqa, 0);
    ck_case(s, unknown_model_lists_builtins, 0);
    ck_case(s, kv_bytes_per_token_of_each_model, 0);
    ck_case(s, diffusion_gemma_shape, 0);
    ck_case(s, hf_llada_keys, 0);
    ck_case(s, hf_qwen3_moe_keys, 0);
    ck_case(s, hf_errors_name_file_and_field, 0);
    return run_suite("model", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
