/* cli_list.c: `tessera list WHAT`: the built-in tables, so users need not read the source. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "decode.h"
#include "fleet.h"
#include "gpu.h"
#include "model.h"
#include "planner.h"
#include "policy.h"
#include "presets.h"
#include "sched.h"

/* A model's attention beyond its shapes (QKV bias, per-head QK norms, a partial rotary embedding,
 * block-causal training) and, for a mixture of experts, its router, as short tags ("-": none). */
static void model_tags(const struct model_cfg *m, char *attn, size_t an, char *router, size_t rn)
{
    snprintf(attn, an, "%s%s%s", m->qkv_bias ? "bias," : "", m->qk_norm ? "qk-norm," : "",
             m->block_causal ? "block," : "");
    if (m->rotary_dim > 0)
        snprintf(attn + strlen(attn), an - strlen(attn), "rope%d,", m->rotary_dim);
    if (m->global_every > 0)
        snprintf(attn + strlen(attn), an - strlen(attn), "win%d,1/%d:%dx%d%s,", m->sliding_window, m->global_every,
                 m->global_kv_heads, m->global_head_dim, m->global_k_eq_v ? ",k=v" : "");
    if (m->tied_lm_head)
        snprintf(attn + strlen(attn), an - strlen(attn), "tied,");
    if (attn[0])
        attn[strlen(attn) - 1] = '\0';
    else
        snprintf(attn, an, "-");
    snprintf(router, rn, "-");
    if (!m->num_experts)
        return;
    snprintf(router, rn, "%s%s%s", m->router_sigmoid ? "sigmoid" : "softmax", m->expert_bias ? "+bias" : "",
             m->norm_topk ? ",norm" : "");
    if (m->n_group > 1)
        snprintf(router + strlen(router), rn - strlen(router), ",%d/%dg", m->topk_group, m->n_group);
    if (m->routed_scale > 0 && m->routed_scale != 1)
        snprintf(router + strlen(router), rn - strlen(router), ",x%g", m->routed_scale);
}

static void list_models(void)
{
    printf("%-15s %6s %6s %5s %5s %5s %6s %7s %8s %12s %8s %7s  %-25s %s\n", "model", "layers", "hidden",
           "heads", "kv", "hdim", "ffn", "vocab", "max_pos", "experts", "params", "KV/tok", "attention", "router");
    for (int i = 0; i < model_num_builtin(); i++) {
        const struct model_cfg *m = model_builtin(i);
        char ex[48] = "-", attn[64], router[64];
        if (m->num_experts)
            snprintf(ex, sizeof ex, "%d/%dx%d+%d", m->experts_top_k, m->num_experts, m->moe_ffn,
                     m->num_shared_experts);
        model_tags(m, attn, sizeof attn, router, sizeof router);
        printf("%-15s %6d %6d %5d %5d %5d %6d %7d %8d %12s %7.2fB %5.0fKiB  %-25s %s\n", m->name, m->num_layers,
               m->hidden, m->num_heads, m->num_kv_heads, m->head_dim, m->ffn, m->vocab, m->max_pos,
               ex, model_params(m) / 1e9, model_kv_bytes_per_token(m) / 1024.0, attn, router);
    }
    printf("experts: K/ExW+S (K of E experts a token, each W wide, beside S shared experts); attention: bias\n"
           "  (QKV bias), qk-norm (per-head QK norms), block (trained block-causal), ropeN (the rotary embedding\n"
           "  over a head's first N dimensions), winW,1/N:KxD (a window of W keys a row, every Nth layer global\n"
           "  with K K/V heads of D, k=v: its V is its K), tied (the LM head is the embedding); router: softmax\n"
           "  or sigmoid scores (+bias: an expert bias chooses), norm (the chosen renormalised), K/Gg (the best\n"
           "  K of G groups), xS (scaled)\n");
}

/* The cards whose clock under the power limit was fitted (sim --clock; this machine's clock.csv,
 * then DATADIR's). Returns true on a malformed line (said on stderr). */
static bool list_clocks(const struct gpu_table *t, const char *datadir)
{
    printf("\nthe clock under the power limit (tessera sim --clock; tessera calib clock fits it):\n"
           "%-10s %7s %8s %6s %6s %11s  %s\n", "gpu", "k", "tau_ms", "lo", "hi", "held_TFLOPS", "record");
    for (int i = 0; i < gpu_table_count(t); i++) {
        const struct gpu_spec *g = gpu_table_get(t, i);
        struct clock_params p;
        struct ts_err err;
        const int found = clock_params_find(datadir, g->name, &p, &err);
        if (found < 0) {
            fprintf(stderr, "tessera list: %s\n", err.msg);
            return true;
        }
        if (found)
            printf("%-10s %7.3f %8.1f %6.3f %6.3f %11.1f  %s\n", g->name, p.k, p.tau_s * 1e3, p.lo, p.hi,
                   p.held_flops * 1e-12, p.record);
    }
    return false;
}

/* measured: the ceilings measured on the cards beside the datasheet's, and their clocks. */
static int list_gpus(bool measured)
{
    struct gpu_table *t = gpu_table_create();
    struct sim_config c;
    sim_config_defaults(&c);
    bool bad = false;
    if (measured)
        printf("%-10s %12s %13s %11s %10s %13s  %s\n", "gpu", "bf16_TFLOPS", "measured_GEMM", "held_2s", "mem_GB/s",
               "copy_GB/s(r+w)", "record");
    else
        printf("%-10s %9s %12s %10s %10s %7s %7s %11s\n", "gpu", "mem_GiB", "bf16_TFLOPS", "mem_GB/s", "host_GB/s",
               "tdp_W", "idle_W", "fp8_TFLOPS");
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/gpu_measured.csv", c.datadir);
    for (int i = 0; i < gpu_table_count(t) && !bad; i++) {
        const struct gpu_spec *g = gpu_table_get(t, i);
        struct gpu_measured gm;
        struct ts_err err;
        const int found = measured ? gpu_measured_find(path, g->name, &gm, &err) : 0;
        if (found < 0) {
            fprintf(stderr, "tessera list: %s\n", err.msg);
            bad = true;
        } else if (!measured)
            printf("%-10s %9.1f %12.1f %10.0f %10.0f %7.0f %7.0f %11.1f\n", g->name, g->mem_bytes / TS_GIB,
                   g->bf16_flops / 1e12, g->mem_bw / 1e9, g->host_bw / 1e9, g->tdp_w, g->idle_w, g->fp8_flops / 1e12);
        else if (found)
            printf("%-10s %12.1f %13.1f %11.1f %10.0f %14.0f  %s\n", g->name, g->bf16_flops / 1e12, gm.gemm_flops / 1e12,
                   gm.gemm_held_flops / 1e12, g->mem_bw / 1e9, gm.copy_bw / 1e9, gm.record);
        else
            printf("%-10s %12.1f %13s %11s %10.0f %14s\n", g->name, g->bf16_flops / 1e12, "-", "-", g->mem_bw / 1e9, "-");
    }
    if (measured && !bad)
        bad = list_clocks(t, c.datadir);
    gpu_table_destroy(t);
    return bad ? EXIT_USAGE : 0;
}

static void list_decode(void)
{
    struct sim_config c;
    sim_config_defaults(&c);
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/decode_profiles.json", c.datadir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    for (int i = 0; decode_get(i); i++)
        printf("%-34s %s\n", decode_get(i)->spec, decode_get(i)->help);
    printf("%-34s %s\n", "--early-commit F", "with any decoder, Prophet's early commit (arXiv 2508.19982, pixeli99/Prophet "
           "generate_earlyexit.py): once F of a request's positions are decoded, the step commits the rest (F: "
           "when its top-2 gap test fires, an assumption; tessera engine generate --prophet measures it)");
    printf("profiles (DECODER:NAME):\n");
    if (!root) {
        fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (key[0] == '_' || !json_is_object(v))
            continue;
        json_t *src = json_object_get(v, "source"), *dec = json_object_get(v, "decoder");
        json_t *acc = json_object_get(v, "accuracy"), *task = json_object_get(v, "task");
        char spec[96], score[64] = "";
        snprintf(spec, sizeof spec, "%s:%s", json_is_string(dec) ? json_string_value(dec) : "threshold", key);
        if (json_is_number(acc) && json_is_string(task)) /* (what its speed costs, published with it) */
            snprintf(score, sizeof score, ", %.2f%% on %s", json_number_value(acc), json_string_value(task));
        printf("%-38s TPF %.2f%s%s  %s\n", spec, json_number_value(json_object_get(v, "tpf")),
               json_object_get(v, "steps") ? " (measured distribution)" : "", score,
               json_is_string(src) ? json_string_value(src) : "");
    }
    json_decref(root);
}

/* text after lead, wrapped at 100 columns, each further line indented as far as the lead */
static void print_wrapped(const char *lead, const char *text)
{
    const int indent = (int)strlen(lead), width = 100;
    printf("%s", lead);
    int col = indent;
    for (const char *p = text; *p;) {
        const char *sp = strchr(p, ' ');
        const int len = sp ? (int)(sp - p) : (int)strlen(p);
        if (col > indent && col + 1 + len > width) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            putchar(' ');
            col++;
        }
        printf("%.*s", len, p);
        col += len;
        p += len;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

/* The calibrations in dir (a folder that does not exist is named only where `always`). */
static void list_csv(const char *dir, const char *what, bool always)
{
    struct dirent **names;
    const int n = calib_csv_files(dir, &names); /* sorted; < 0: no such folder */
    if (n < 0 && !always)
        return;
    printf("calibrations in %s, %s (GPU-MODEL-IMPL.csv, used by --cost calibrated):\n", dir, what);
    for (int i = 0; i < n; i++) {
        printf("  %s\n", names[i]->d_name);
        free(names[i]);
    }
    free(names);
}

/* The shipped host profiles (DATADIR/hosts/NAME.csv), each with its line. */
static void list_hosts(void)
{
    char dir[CFG_PATH + 16];
    calib_hosts_dir(dir, sizeof dir);
    struct dirent **names;
    const int n = calib_csv_files(dir, &names);
    printf("host profiles in %s (--host NAME with --cost calibrated; tessera calib host makes one):\n", dir);
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]->d_name) - 4), names[i]->d_name);
        struct calib_host h;
        struct ts_err err;
        if (calib_host_load(name, &h, &err) == 0)
            printf("  %-12s %.2f ms a step + %.3f ms a segment, measured on %s\n", name, h.host0_ms, h.seg_ms, h.device);
        else
            printf("  %-12s unreadable: %s\n", name, err.msg);
        free(names[i]);
    }
    free(names);
}

static void list_usage(FILE *f)
{
    fprintf(f, "usage: tessera list models | gpus [--measured] | policies | schedulers | planners | costs |\n"
               "                    systems | impls | decode | calibrations | hosts | routers | links\n"
               "       tessera list gpus --device NAME [MEMORY_MIB]\n"
               "       tessera list systems [NAME | all | known | table]\n"
               "\n"
               "Prints one of the built-in tables: the models, the GPUs (--measured: the ceilings measured\n"
               "on cards beside the datasheet's), the policies and schedulers with their parameters, the\n"
               "activation planners, the cost models, the --system presets, the implementation profiles,\n"
               "the decode models, the calibrations, the host profiles, a fleet's routers and the links\n"
               "between disaggregated pools. gpus --device prints the entry a card is by the name its\n"
               "driver gives it (nvidia-smi's) and its memory, status 1 for none. systems prints a line a\n"
               "preset; systems NAME one in full (its options, how it is known, note and sources), systems\n"
               "all every one; systems table the options each stands for and what it is, systems known how\n"
               "each is known (validated, measured or modelled, with the evidence), each as a Markdown table\n"
               "(sim/docs/presets.md holds both).\n");
}

/* A link's bandwidth in GB/s, or the card's where it takes the card's (0). */
static const char *link_bw(double bw, char *buf, size_t n)
{
    if (bw > 0)
        snprintf(buf, n, "%.1f", bw / 1e9);
    else
        snprintf(buf, n, "the card's");
    return buf;
}

/* The links between GPUs (a fleet's --disagg) and between a GPU and its host (offloaded K/V). */
static void list_links(void)
{
    printf("%-9s %12s %9s  %s\n", "link", "GB/s a GPU", "latency", "source (the latency: an assumption, lat=)");
    for (int i = 0; fleet_link_get(i); i++) {
        const struct fleet_link *l = fleet_link_get(i);
        char bw[16];
        printf("%-9s %12s %6.0f us  %s\n", l->name, link_bw(l->bw, bw, sizeof bw), l->lat_s * 1e6, l->source);
    }
    printf("\nhost links (a GPU and its host's memory: offloaded K/V, --herald-link)\n%-9s %12s  %s\n", "link",
           "GB/s a GPU", "source");
    for (int i = 0; host_link_get(i); i++) {
        const struct host_link *l = host_link_get(i);
        char bw[16];
        printf("%-9s %12s  %s\n", l->name, link_bw(l->bw, bw, sizeof bw), l->source);
    }
}

/* A preset in full: its help, its options, its cost model, its note and its sources. */
/* The options preset p stands for, into buf. */
static const char *preset_options(const struct preset *p, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "--policy %s --scheduler %s --decode %s --impl %s --max-num-logits %d --planner %s",
                                p->policy, p->scheduler, p->decode, p->impl, p->max_num_logits, p->planner);
    for (size_t k = 0; k < TS_ARRAY_LEN(p->params) && p->params[k].name && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, " --%s %s", p->params[k].name, p->params[k].value);
    if (p->model && n < len)
        n += (size_t)snprintf(buf + n, len - n, " --model %s", p->model);
    if (p->block && n < len)
        n += (size_t)snprintf(buf + n, len - n, " --block %d", p->block);
    if (p->ep && n < len)
        n += (size_t)snprintf(buf + n, len - n, " --ep %d", p->ep);
    if (n < len)
        snprintf(buf + n, len - n, "%s%s%s --act-layout %s", p->mask_only ? " --mask-only" : "",
                 p->block_logits ? " --block-logits" : "", p->lazy_chunking ? " --lazy-chunking" : "", p->act_layout);
    return buf;
}

static void list_system(const struct preset *p)
{
    char opts[1024];
    printf("%-11s %s\n            = %s\n", p->name, p->help, preset_options(p, opts, sizeof opts));
    printf("            cost: %s\n", strcmp(p->cost, "calibrated") == 0
                                         ? "calibrated where its model and implementation have a calibration "
                                           "for the GPU or one carried to it (else roofline)"
                                         : "roofline");
    print_wrapped("            known: ", preset_known(p->name));
    if (p->note)
        printf("            note: %s\n", p->note);
    print_wrapped("            from: ", p->sources);
}

/* list systems: a line a preset (its runtime, cost model, policy and scheduler, and what it is, cut
 * at its first clause); list systems NAME: that one in full (all: every one). */
static int list_systems(const char *name)
{
    if (name && (strcmp(name, "known") == 0 || strcmp(name, "table") == 0)) { /* (sim/docs/presets.md's tables) */
        const bool known = name[0] == 'k';
        printf(known ? "| preset | how its system is known |\n|---|---|\n" : "| preset | = | what it is |\n|---|---|---|\n");
        for (int i = 0; i < preset_count(); i++) {
            const struct preset *p = preset_get(i);
            char opts[1024];
            if (known)
                printf("| `%s` | %s |\n", p->name, preset_known(p->name));
            else
                printf("| `%s` | `%s` | %s%s%s |\n", p->name, preset_options(p, opts, sizeof opts), p->help,
                       p->note ? ". " : "", p->note ? p->note : "");
        }
        return 0;
    }
    if (name && strcmp(name, "all") != 0) {
        for (int i = 0; i < preset_count(); i++)
            if (strcmp(preset_get(i)->name, name) == 0) {
                list_system(preset_get(i));
                return 0;
            }
        const char *names[64];
        int n = 0;
        for (int i = 0; i < preset_count() && n < 64; i++)
            names[n++] = preset_get(i)->name;
        const char *near = param_nearest(name, names, n);
        fprintf(stderr, "tessera list systems: no system '%s'%s%s%s (tessera list systems names them)\n", name,
                near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
        return EXIT_USAGE;
    }
    enum { WHAT = 54 }; /* the characters of its help shown, cut at a word */
    if (!name)
        printf("%-17s %-17s %-10s %-11s %-9s %-9s %s\n", "system", "runtime", "cost", "policy", "scheduler", "known",
               "what it is");
    for (int i = 0; i < preset_count(); i++) {
        const struct preset *p = preset_get(i);
        if (name) {
            list_system(p);
            continue;
        }
        int cut = (int)strlen(p->help);
        if (cut > WHAT)
            for (cut = WHAT; cut > 0 && p->help[cut] != ' '; cut--)
                ;
        const char *k = preset_known(p->name);
        printf("%-17s %-17s %-10s %-11s %-9s %-9.*s %.*s%s\n", p->name, p->impl, p->cost, p->policy, p->scheduler,
               (int)strcspn(k, ":"), k, cut, p->help, p->help[cut] ? " ..." : "");
    }
    if (!name)
        printf("(runtime and cost: the implementation profile and cost model it runs with; known: validated against\n"
               " its system running, measured from its code, or modelled from its code alone; tessera list systems\n"
               " NAME: one in full, its options, how it is known, note and sources; all: every one; known: how\n"
               " each is known, as a table)\n");
    return 0;
}

int cli_list(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    char buf[512];
    if (cli_help_asked(argc, argv)) {
        list_usage(stdout);
        return 0;
    }
    if (strcmp(what, "models") == 0)
        list_models();
    else if (strcmp(what, "gpus") == 0) {
        if (argc > 3 && strcmp(argv[2], "--device") == 0) { /* the entry a card is, by its driver's name */
            int64_t mib = 0;
            if (argc > 5 || (argc == 5 && ts_parse_i64(argv[4], &mib))) {
                fprintf(stderr, "tessera list gpus --device NAME [MEMORY_MIB]: '%s' is not a whole number of MiB\n",
                        argc > 4 ? argv[4] : "");
                return EXIT_USAGE;
            }
            const char *card = gpu_of_device(argv[3], mib);
            if (card)
                printf("%s\n", card);
            return card ? 0 : 1;
        }
        const bool measured = argc > 2 && strcmp(argv[2], "--measured") == 0;
        if (argc > 2 + measured) {
            return cli_unknown_in_list("list gpus", argv[2 + measured], "--measured --device");
        }
        return list_gpus(measured);
    }
    else if (strcmp(what, "policies") == 0) {
        int w = 0;
        for (int i = 0; policy_get(i); i++)
            w = TS_MAX(w, (int)strlen(policy_get(i)->name));
        for (int i = 0; policy_get(i); i++) {
            const struct policy_ops *p = policy_get(i);
            printf("%-*s %s\n", w, p->name, p->help);
            if (p->caps & POLICY_EVERY_POSITION) /* what engine generate's measurements of every position read */
                printf("%-*s every position: each step runs every position, with its logits\n", w, "");
            if (p->engine)
                printf("%-*s engine extensions: %s\n", w, "", p->engine);
            params_help(stdout, p->params, p->num_params, p->name);
        }
    } else if (strcmp(what, "planners") == 0) {
        for (int i = 0; planner_get(i); i++)
            printf("%-12s %s\n", planner_get(i)->name, planner_get(i)->help);
    } else if (strcmp(what, "costs") == 0) {
        for (int i = 0; cost_backend(i); i++)
            printf("%-11s %s\n", cost_backend(i)->name, cost_backend(i)->help);
    } else if (strcmp(what, "schedulers") == 0) {
        for (int i = 0; sched_get(i); i++) {
            const struct sched_ops *s = sched_get(i);
            printf("%-10s %s\n", s->name, s->help);
            params_help(stdout, s->params, s->num_params, s->name);
        }
    } else if (strcmp(what, "systems") == 0) {
        return list_systems(argc > 2 ? argv[2] : NULL);
    } else if (strcmp(what, "calibrations") == 0) {
        struct sim_config c;
        sim_config_defaults(&c);
        char dir[CFG_PATH + 16], user[1024];
        if (calib_user_dir(user, sizeof user) == 0)
            list_csv(user, "made on this machine (make calibrate; found first)", false);
        snprintf(dir, sizeof dir, "%s/calib", c.datadir);
        list_csv(dir, "shipped", true);
    } else if (strcmp(what, "hosts") == 0) {
        list_hosts();
    } else if (strcmp(what, "impls") == 0) {
        impl_list(buf, sizeof buf);
        printf("%s\n", buf);
    } else if (strcmp(what, "decode") == 0) {
        list_decode();
    } else if (strcmp(what, "routers") == 0) {
        for (int i = 0; router_get(i); i++)
            printf("%-18s %s\n", router_get(i)->name, router_get(i)->help);
    } else if (strcmp(what, "links") == 0) {
        list_links();
    } else {
        static const char *const tables[] = {"models", "gpus", "policies", "schedulers", "planners", "costs",
                                             "systems", "impls", "decode", "calibrations", "hosts", "routers", "links"};
        const char *near = what[0] ? param_nearest(what, tables, (int)TS_ARRAY_LEN(tables)) : NULL;
        if (what[0])
            fprintf(stderr, "tessera list: no table '%s'%s%s%s\n", what, near ? " (did you mean " : "",
                    near ? near : "", near ? "?)" : "");
        list_usage(stderr);
        return EXIT_USAGE;
    }
    return 0;
}
