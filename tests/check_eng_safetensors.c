#define _DEFAULT_SOURCE
/*
 * check_eng_safetensors.c: loading weights from safetensors files the test writes itself, with
 * Hugging Face names (LLaMA/Qwen and LLaDA families, tied and untied LM heads, F32 tensors), and
 * refusing corrupt or mismatched files with the tensor named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eng_ref.h"
#include "eng_safetensors.h"
#include "test_util.h"

static const struct model_cfg TINY = {.name = "tiny", .num_layers = 2, .hidden = 64, .num_heads = 2,
                                      .num_kv_heads = 1, .head_dim = 64, .ffn = 96, .vocab = 50,
                                      .max_pos = 4096, .rope_theta = 10000.0, .qkv_bias = true,
                                      .weight_bytes = 2, .kv_bytes = 2};

/* LLaDA2.0's layers in small: per-head QK norms, a dense first layer, 8 experts with an expert bias and
 * a shared one. */
static const struct model_cfg TINY_MOE = {.name = "tiny-moe", .num_layers = 2, .hidden = 64, .num_heads = 2,
                                          .num_kv_heads = 1, .head_dim = 64, .ffn = 96, .vocab = 50,
                                          .max_pos = 4096, .rope_theta = 10000.0, .qk_norm = true,
                                          .num_experts = 8, .experts_top_k = 2, .moe_ffn = 64,
                                          .num_shared_experts = 1, .first_dense_layers = 1, .expert_bias = true,
                                          .router_sigmoid = true, .weight_bytes = 2, .kv_bytes = 2};

/* Model m's weights written as an HF checkpoint with names fam: the engine's random weights (seed 3),
 * or (distinct) every element its own value, so that no two tensors (norms included) can be taken
 * for each other. Returns them (caller frees). */
static bf16_t *write_model(const char *path, const struct model_cfg *m, enum st_names fam, bool tied, bool distinct)
{
    struct eng_layout l;
    ck_assert_int_eq(eng_layout_build(m, &l, NULL), 0);
    bf16_t *w = xcalloc((size_t)l.total, 2);
    for (int i = 0; i < l.n; i++)
        eng_fill_host(&l, i, 3, w + l.t[i].offset);
    for (int64_t i = 0; distinct && i < l.total; i++)
        w[i] = eng_f2bf((float)(i % 4093) / 4093.0f + (float)(i / 4093));
    struct ts_err err;
    ck_assert_msg(st_export_hf(path, m, w, fam, tied, &err) == 0, "%s", err.msg);
    eng_layout_free(&l);
    return w;
}

static bf16_t *write_ckpt(const char *path, bool llada, bool tied)
{
    return write_model(path, &TINY, llada ? ST_NAMES_LLADA : ST_NAMES_QWEN, tied, false);
}

/* Loads every engine tensor of model m from path into a fresh buffer; returns 0 or -1 with err. */
static int load_model(const char *path, const struct model_cfg *m, bf16_t **out, struct ts_err *err)
{
    struct eng_layout l;
    eng_layout_build(m, &l, NULL);
    bf16_t *w = xcalloc((size_t)l.total, 2);
    struct st_file *f;
    int rc = st_open(path, &f, err);
    for (int i = 0; i < l.n && !rc; i++)
        rc = st_load_tensor(f, m, &l.t[i], w + l.t[i].offset, err);
    st_close(f);
    eng_layout_free(&l);
    *out = w;
    return rc;
}

static int load_all(const char *path, bf16_t **out, struct ts_err *err) { return load_model(path, &TINY, out, err); }

START_TEST(roundtrip_both_families)
{
    for (int llada = 0; llada < 2; llada++) {
        const char *p = tmp_path(0, ".safetensors");
        bf16_t *w = write_ckpt(p, llada, false), *got;
        struct ts_err err;
        ck_assert_msg(load_all(p, &got, &err) == 0, "%s", err.msg);
        struct eng_layout l;
        eng_layout_build(&TINY, &l, NULL);
        ck_assert_int_eq(memcmp(w, got, 2 * (size_t)l.total), 0);
        /* the reference built from the file equals the one built from the seed */
        struct eng_ref *a, *b;
        ck_assert_int_eq(eng_ref_create(&TINY, got, 0, &a, &err), 0);
        ck_assert_int_eq(eng_ref_create(&TINY, NULL, 3, &b, &err), 0);
        ck_assert(memcmp(eng_ref_weight(a, W_LM, -1), eng_ref_weight(b, W_LM, -1), 4 * 50 * 64) == 0);
        eng_ref_destroy(a);
        eng_ref_destroy(b);
        eng_layout_free(&l);
        free(w), free(got);
        unlink(p);
    }
}
END_TEST

/* A mixture of experts with QK norms, an expert bias and a shared expert, under the Qwen names
 * (LLaDA-MoE's) and LLaDA2.0's: every element back in its place; the names are the checkpoints'. */
START_TEST(moe_roundtrip_both_families)
{
    static const struct {
        enum st_names fam;
        const char *names[4];
    } cases[] = {
        {ST_NAMES_QWEN, {"model.layers.0.self_attn.q_norm.weight", "model.layers.1.mlp.experts.7.down_proj.weight",
                         "model.layers.1.mlp.gate.expert_bias", "model.layers.1.mlp.shared_experts.up_proj.weight"}},
        {ST_NAMES_LLADA2, {"model.layers.1.attention.query_key_value.weight",
                           "model.layers.0.attention.key_layernorm.weight", "model.word_embeddings.weight",
                           "model.layers.1.mlp.experts.0.gate_proj.weight"}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = tmp_path(0, ".safetensors");
        bf16_t *w = write_model(p, &TINY_MOE, cases[k].fam, false, true), *got;
        struct ts_err err;
        ck_assert_msg(load_model(p, &TINY_MOE, &got, &err) == 0, "%s", err.msg);
        struct eng_layout l;
        eng_layout_build(&TINY_MOE, &l, NULL);
        ck_assert_int_eq(memcmp(w, got, 2 * (size_t)l.total), 0);
        char *text;
        size_t len;
        ck_assert_int_eq(ts_read_file(p, &text, &len, &err), 0);
        for (int i = 0; i < 4; i++) {
            char quoted[200];
            snprintf(quoted, sizeof quoted, "\"%s\"", cases[k].names[i]);
            ck_assert_msg(strstr(text + 8, quoted), "%s lacks %s", p, cases[k].names[i]); /* the header */
        }
        free(text);
        eng_layout_free(&l);
        free(w), free(got);
        unlink(p);
    }
    /* LLaDA's own names have none for experts */
    struct ts_err err;
    struct eng_layout l;
    eng_layout_build(&TINY_MOE, &l, NULL);
    bf16_t *w = xcalloc((size_t)l.total, 2);
    ck_assert_int_ne(st_export_hf(tmp_path(0, ".safetensors"), &TINY_MOE, w, ST_NAMES_LLADA, false, &err), 0);
    ck_assert_msg(strstr(err.msg, "the LLaDA names have no tensor for tiny-moe's q_norm"), "%s", err.msg);
    free(w);
    eng_layout_free(&l);
}
END_TEST

START_TEST(tied_lm_head_uses_embedding)
{
    const char *p = tmp_path(0, ".safetensors");
    bf16_t *w = write_ckpt(p, false, true), *got;
    struct ts_err err;
    ck_assert_msg(load_all(p, &got, &err) == 0, "%s", err.msg);
    struct eng_layout l;
    eng_layout_build(&TINY, &l, NULL);
    ck_assert_int_eq(memcmp(got + eng_layout_find(&l, W_LM, -1)->offset,
                            w + eng_layout_find(&l, W_EMB, -1)->offset, 2 * 50 * 64), 0);
    eng_layout_free(&l);
    free(w), free(got);
    unlink(p);
}
END_TEST

START_TEST(sharded_directory)
{
    /* two shards in one directory: the loader searches both */
    char dir[256];
    snprintf(dir, sizeof dir, "%s.d", tmp_path(1, ""));
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(b, sizeof b, "%s/model-00002-of-00002.safetensors", dir);
    bf16_t *w = write_ckpt(a, false, true); /* tied: no lm_head in shard 1 */
    struct eng_layout l;
    eng_layout_build(&TINY, &l, NULL);
    const char *name = "lm_head.weight";
    int64_t r = 50, c = 64;
    const bf16_t *d = w + eng_layout_find(&l, W_LM, -1)->offset;
    ck_assert_int_eq(st_write_bf16(b, 1, &name, &r, &c, &d, NULL), 0);
    bf16_t *got;
    struct ts_err err;
    ck_assert_msg(load_all(dir, &got, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(memcmp(w, got, 2 * (size_t)l.total), 0);
    eng_layout_free(&l);
    free(w), free(got);
    unlink(a), unlink(b), rmdir(dir);
}
END_TEST

START_TEST(bad_files_name_the_tensor)
{
    const char *p = tmp_path(0, ".safetensors");
    /* a checkpoint holding the embedding only */
    struct ts_err err;
    bf16_t emb[50 * 64] = {0}, *got;
    const char *only = "model.embed_tokens.weight";
    int64_t er = 50, ec = 64;
    const bf16_t *ed = emb;
    ck_assert_int_eq(st_write_bf16(p, 1, &only, &er, &ec, &ed, NULL), 0);
    ck_assert_int_ne(load_all(p, &got, &err), 0);
    ck_assert_msg(strstr(err.msg, "tensor 'model.layers.0.input_layernorm.weight' is missing"), "%s", err.msg);
    free(got);
    /* a tensor of the wrong shape */
    const char *name = "model.embed_tokens.weight";
    int64_t r = 50, c = 32;
    bf16_t buf[50 * 32] = {0};
    const bf16_t *d = buf;
    ck_assert_int_eq(st_write_bf16(p, 1, &name, &r, &c, &d, NULL), 0);
    ck_assert_int_ne(load_all(p, &got, &err), 0);
    ck_assert_msg(strstr(err.msg, "'model.embed_tokens.weight': shape [50, 32] but the model needs [50, 64]"),
                  "%s", err.msg);
    free(got);
    /* truncated: the data section ends early */
    FILE *f = fopen(p, "r+b");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    ck_assert_int_eq(truncate(p, len - 100), 0);
    ck_assert_int_ne(load_all(p, &got, &err), 0);
    ck_assert_msg(strstr(err.msg, "outside the file"), "%s", err.msg);
    free(got);
    /* not a safetensors file at all */
    const char *junk = tmp_file(1, ".safetensors", "hello");
    ck_assert_int_ne(load_all(junk, &got, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a safetensors file"));
    free(got);
    junk = tmp_file(1, ".safetensors", "\x10\0\0\0\0\0\0\0{\"a\": nonsense}");
    ck_assert_int_ne(load_all(junk, &got, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "header"));
    free(got);
    ck_assert_int_ne(load_all("/nonexistent/model.safetensors", &got, &err), 0);
    free(got);
    unlink(p);
}
END_TEST

START_TEST(header_checks)
{
    struct ts_err err;
    const char *ok = "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]},"
                     " \"__metadata__\": {\"format\": \"pt\"}}";
    ck_assert_int_eq(st_check_header("x", ok, strlen(ok), 24, &err), 0);
    ck_assert_int_ne(st_check_header("x", ok, strlen(ok), 20, &err), 0);
    const char *bad_size = "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}}";
    ck_assert_int_ne(st_check_header("x", bad_size, strlen(bad_size), 24, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "'w'"));
    const char *neg = "{\"w\": {\"dtype\": \"BF16\", \"shape\": [-2], \"data_offsets\": [0, 4]}}";
    ck_assert_int_ne(st_check_header("x", neg, strlen(neg), 24, &err), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_safetensors");
    ck_case(s, roundtrip_both_families, 0);
    ck_case(s, moe_roundtrip_both_families, 0);
    ck_case(s, tied_lm_head_uses_embedding, 0);
    ck_case(s, sharded_directory, 0);
    ck_case(s, bad_files_name_the_tensor, 0);
    ck_case(s, header_checks, 0);
    return run_suite("eng_safetensors", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
