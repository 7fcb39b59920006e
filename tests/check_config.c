/* check_config.c: the option table (config.h): one name for each option end to end, its defaults
 * valid, its ranges and choices enforced, and a stored configuration read back as it was. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "decode.h"
#include "gpu.h"
#include "model.h"
#include "opgraph.h"
#include "setup.h"
#include "test_util.h"

/* an option's name with '_' for '-' */
static void underscored(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s", name);
    for (char *p = out; *p; p++)
        if (*p == '-')
            *p = '_';
}

START_TEST(one_name_end_to_end)
{
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        char want[64];
        underscored(o->name, want, sizeof want);
        if (o->kind != CFG_SET) /* (options that set one field share it: --append and --replace) */
            ck_assert_msg(strcmp(o->field, want) == 0, "--%s sets the field %s", o->name, o->field);
        ck_assert_msg(o->group && (o->help ? o->help[0] != '\0' : i > 0 && cfg_options[i - 1].offset == o->offset),
                      "--%s has no help (nor an option before it setting its field) or no section", o->name);
        ck_assert_ptr_eq(cfg_option_find(o->name), o);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(cfg_options[j].name, o->name);
        ck_assert(!o->stored || o->kind != CFG_SET);
    }
    ck_assert_ptr_null(cfg_option_find("block-size"));
}
END_TEST

START_TEST(defaults_are_valid_and_ranges_enforced)
{
    struct sim_config c;
    struct ts_err err;
    sim_config_defaults(&c);
    ck_assert_int_eq(sim_config_validate(&c, NULL, &err), 0);
    ck_assert_int_eq(c.block, 32);
    ck_assert_int_eq(c.max_num_logits, 2048);
    ck_assert_int_eq(c.act_layout, OG_LAYOUT_ENGINE);
    ck_assert_int_eq(c.eos, EOS_AUTO);
    const struct {
        const char *opt, *value, *says;
    } bad[] = {{"block", "0", "1..65536 tokens"},        {"tp", "9", "1..8 GPUs"},
               {"rps", "abc", "--rps"},                 {"max-num-logits", "-1", "0..16777216"},
               {"act-layout", "vllm", "engine or mosaic"}, {"eos", "late", "auto, bulk or scheduled"},
               {"requests", "2147483648", "--requests"}, {"seed", "-3", "--seed"},
               {"reserve-gib", "-2", "0..100000 GiB"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        sim_config_defaults(&c);
        ck_assert_int_ne(cfg_option_set(cfg_option_find(bad[i].opt), bad[i].value, &c, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, bad[i].opt), "--%s %s: %s", bad[i].opt,
                      bad[i].value, err.msg);
    }
    /* a default outside the range means "unset": valid as the default, not given on the command line;
     * a field set past the range in code is refused */
    sim_config_defaults(&c);
    ck_assert(c.reserve_gib < 0 && c.requests == 0);
    ck_assert_int_ne(cfg_option_set(cfg_option_find("reserve-gib"), "-1", &c, &err), 0);
    ck_assert_int_ne(cfg_option_set(cfg_option_find("requests"), "0", &c, &err), 0);
    c.ffn_chunks = 0;
    ck_assert_int_ne(sim_config_validate(&c, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--ffn-chunks"));
}
END_TEST

/* Random values for every stored option, written and read back field for field; an older key and
 * a real-valued whole number are read too */
START_TEST(stored_configuration_read_back)
{
    srand(3);
    for (int k = 0; k < 50; k++) {
        struct sim_config c, back;
        struct ts_err err;
        sim_config_defaults(&c);
        for (int i = 0; i < cfg_num_options; i++) {
            const struct cfg_option *o = &cfg_options[i];
            char text[64];
            if (!o->stored || rand() % 2)
                continue;
            switch (o->kind) {
            case CFG_TEXT: snprintf(text, sizeof text, "v%d", rand() % 1000); break;
            case CFG_CHOICE: snprintf(text, sizeof text, "%s", o->choices[rand() % o->num_choices]); break;
            case CFG_FLAG: snprintf(text, sizeof text, "%d", rand() % 2); break;
            case CFG_INT:
            case CFG_INT64: snprintf(text, sizeof text, "%lld", (long long)(o->lo + rand() % 7)); break;
            case CFG_REAL: snprintf(text, sizeof text, "%.17g", o->lo + (o->hi - o->lo) * (rand() / (double)RAND_MAX)); break;
            case CFG_SET: continue;
            }
            ck_assert_msg(cfg_option_set(o, text, &c, &err) == 0, "--%s %s: %s", o->name, text, err.msg);
        }
        snprintf(c.policy, sizeof c.policy, "dual"); /* (the parts' names must resolve for their parameters) */
        snprintf(c.scheduler, sizeof c.scheduler, "phase");
        char *json = sim_config_to_json(&c, NULL);
        json_error_t jerr;
        json_t *o = json_loads(json, 0, &jerr);
        ck_assert_int_eq(sim_config_from_json(o, &back, &err), 0);
        for (int i = 0; i < cfg_num_options; i++) {
            const struct cfg_option *op = &cfg_options[i];
            char a[CFG_PATH], b[CFG_PATH];
            if (op->stored)
                ck_assert_msg(strcmp(cfg_option_text(op, &c, a, sizeof a), cfg_option_text(op, &back, b, sizeof b)) == 0,
                              "--%s: %s written, %s read", op->name, a, b);
        }
        json_decref(o);
        free(json);
    }
    struct sim_config c;
    struct ts_err err;
    json_error_t jerr;
    json_t *old = json_loads("{\"block_size\": 64, \"kv_page_tokens\": 32, \"tp\": 2.0, \"policy\": \"dual\", "
                             "\"scheduler\": \"phase\", \"refresh_interval\": 4}", 0, &jerr);
    ck_assert_int_eq(sim_config_from_json(old, &c, &err), 0);
    ck_assert_int_eq(c.block, 64);
    ck_assert_int_eq(c.kv_page, 32);
    ck_assert_int_eq(c.tp, 2);
    ck_assert_str_eq(param_values_get(&c.params, "refresh-interval"), "4");
    json_decref(old);
    json_t *wrong = json_loads("{\"block\": 0}", 0, &jerr);
    ck_assert_int_ne(sim_config_from_json(wrong, &c, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--block"));
    json_decref(wrong);
}
END_TEST

/* The JSON files a run reads (a Hugging Face config.json, --gpu-file, the decode profiles): one that
 * begins with a UTF-8 byte-order mark, or holds a NUL byte, is refused naming the file and the line
 * (and the NUL's column); the same text without them parses. */
START_TEST(json_files_refuse_bom_and_nul)
{
    static const char model[] = "{\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_hidden_layers\": 2,\n"
                                "\"vocab_size\": 100, \"intermediate_size\": 128, \"max_position_embeddings\": 512}";
    static const char gpu[] = "{\"x\": {\"mem_gib\": 80,\n \"bf16_tflops\": 900, \"mem_bw_gbs\": 3000}}";
    static const char prof[] = "{\"p\": {\"tpf\": 2,\n \"source\": \"test\"}}";
    const char *const texts[] = {model, gpu, prof};
    struct ts_err err;
    struct model_cfg m;
    struct gpu_table *t = gpu_table_create();
    struct decode_profile dp;
    for (int k = 0; k < 3; k++) {
        const size_t len = strlen(texts[k]);
        char *bom = xmalloc(len + 4), *nul = xstrdup(texts[k]);
        memcpy(bom, "\xef\xbb\xbf", 3), memcpy(bom + 3, texts[k], len + 1);
        char *at = strchr(nul, '\n') + 3; /* line 2, column 3 */
        *at = '\0';
        for (int v = 0; v < 3; v++) {
            const char *text = v == 0 ? texts[k] : v == 1 ? bom : nul;
            const size_t n = v == 1 ? len + 3 : len;
            const int rc = k == 0   ? model_parse_hf("c.json", text, n, &m, &err)
                           : k == 1 ? gpu_parse(t, "c.json", text, n, &err)
                                    : decode_profile_parse("c.json", text, n, "p", NULL, &dp, &err);
            if (v == 0)
                ck_assert_msg(rc == 0, "%d: %s", k, err.msg);
            else
                ck_assert_msg(rc != 0 && strstr(err.msg, v == 1 ? "c.json:1: begins with a UTF-8 byte-order mark"
                                                                : "c.json:2: a NUL byte at column 3"),
                              "%d, %s: %s", k, v == 1 ? "BOM" : "NUL", rc ? err.msg : "parsed");
        }
        free(bom), free(nul);
    }
    gpu_table_destroy(t);
}
END_TEST

/* A configuration's parts resolved once, each as named, and a part that does not resolve refused by its
 * name; what a policy's parameters set in the engine (SparseD's block and select) read typed from the
 * resolved parameters, the given value and the declared default, and nothing for a policy that sets none */
START_TEST(setup_resolved_once)
{
    struct sim_config c;
    struct sim_setup su;
    struct ts_err err;
    sim_config_defaults(&c);
    snprintf(c.decode, sizeof c.decode, "fixed:3");
    ck_assert_int_eq(sim_setup_resolve(&c, &su, &err), 0);
    ck_assert_str_eq(su.policy->name, c.policy);
    ck_assert_str_eq(su.sched->name, c.scheduler);
    ck_assert_str_eq(su.impl.name, c.impl);
    ck_assert_str_eq(su.cost->name, c.cost);
    ck_assert_str_eq(su.planner->name, c.planner);
    ck_assert(su.decode.kind == DECODE_FIXED && su.decode.k == 3);
    const struct {
        size_t offset, len;
        const char *value;
    } bad[] = {{offsetof(struct sim_config, policy), sizeof c.policy, "no-policy"},
               {offsetof(struct sim_config, scheduler), sizeof c.scheduler, "no-sched"},
               {offsetof(struct sim_config, impl), sizeof c.impl, "no-impl"},
               {offsetof(struct sim_config, cost), sizeof c.cost, "no-cost"},
               {offsetof(struct sim_config, planner), sizeof c.planner, "no-planner"},
               {offsetof(struct sim_config, decode), sizeof c.decode, "no-decode:1"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        sim_config_defaults(&c);
        snprintf((char *)&c + bad[i].offset, bad[i].len, "%s", bad[i].value);
        ck_assert_int_ne(sim_setup_resolve(&c, &su, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].value), "%s: %s", bad[i].value, err.msg);
        ck_assert_int_ne(sim_config_validate(&c, &su, &err), 0);
    }
    struct eng_ext_params ext;
    struct policy_cfg pc = {.block_size = 32};
    sim_config_defaults(&c);
    snprintf(c.policy, sizeof c.policy, "sparsed");
    ck_assert_int_eq(param_values_set(&c.params, "sparsed-block", "256", &err), 0);
    ck_assert_int_eq(sim_setup_resolve(&c, &su, &err), 0);
    memcpy(pc.p, su.params.policy, sizeof pc.p);
    policy_ext_params(su.policy, &pc, &ext);
    ck_assert_int_eq(ext.sparsed_block, 256);
    ck_assert_double_eq_tol(ext.sparsed_select, 0.3, 1e-12);
    sim_config_defaults(&c);
    ck_assert_int_eq(sim_setup_resolve(&c, &su, &err), 0);
    memcpy(pc.p, su.params.policy, sizeof pc.p);
    policy_ext_params(su.policy, &pc, &ext);
    ck_assert(ext.sparsed_block == 0 && ext.sparsed_select == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    ck_case(s, one_name_end_to_end, 0);
    ck_case(s, defaults_are_valid_and_ranges_enforced, 0);
    ck_case(s, stored_configuration_read_back, 0);
    ck_case(s, json_files_refuse_bom_and_nul, 0);
    ck_case(s, setup_resolved_once, 0);
    return run_suite("config", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
