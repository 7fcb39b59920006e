/*
 * cli_sim.c: `tessera sim`. Options are parsed twice: the first pass finds --system so that the
 * preset is applied first and every explicit option overrides it.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "calib.h"
#include "cli.h"
#include "cost.h"
#include "model.h"
#include "engine_load.h"
#include "decode.h"
#include "eng_ext_decl.h"
#include "parts.h"
#include "planner.h"
#include "presets.h"
#include "sim.h"

enum { O_HELP = 1024, O_PARAM /* a policy's or scheduler's parameter, found by its option's name */ };

/* The getopt table: every option of config.c's table (its index + 256), then the policies' and
 * schedulers' parameters, each name once (parts.h), and --help. */
struct opt_table {
    struct option o[256];
    int n;
};

static void build_opts(struct opt_table *t)
{
    t->n = 0;
    for (int i = 0; i < cfg_num_options; i++) {
        const enum cfg_kind k = cfg_options[i].kind;
        const int has = k == CFG_FLAG || k == CFG_SET ? no_argument : required_argument;
        t->o[t->n++] = (struct option){cfg_options[i].name, has, 0, 256 + i};
    }
    struct part p;
    for (int i = 0; parts_get(i, &p); i++)
        for (int k = 0; k < p.num_params; k++) {
            const char *name = p.params[k].name;
            bool have = false;
            for (int j = 0; j < t->n && !have; j++)
                have = strcmp(t->o[j].name, name) == 0;
            TS_ASSERT(have || t->n < (int)TS_ARRAY_LEN(t->o) - 2);
            if (!have)
                t->o[t->n++] = (struct option){name, required_argument, 0, O_PARAM};
        }
    t->o[t->n++] = (struct option){"help", no_argument, 0, O_HELP};
    t->o[t->n] = (struct option){0, 0, 0, 0};
}

/* The option of table t that argument `word` gives (cli_sim_option), as getopt_long resolves it: an
 * exact name, else the first option it abbreviates, unless another it abbreviates sets something
 * else (has_arg, flag, val: the parameters share theirs), which makes it ambiguous. */
static const char *resolve(const struct opt_table *t, const char *word)
{
    if (strncmp(word, "--", 2) != 0 || word[2] == '\0' || word[2] == '=')
        return NULL;
    const char *name = word + 2;
    const size_t len = strcspn(name, "=");
    const struct option *found = NULL;
    bool ambiguous = false;
    for (int i = 0; i < t->n; i++) {
        const struct option *o = &t->o[i];
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return o->name;
        if (!found)
            found = o;
        else if (found->has_arg != o->has_arg || found->flag != o->flag || found->val != o->val)
            ambiguous = true;
    }
    return found && !ambiguous ? found->name : NULL;
}

const char *cli_sim_option(const char *word)
{
    struct opt_table t;
    build_opts(&t);
    return resolve(&t, word);
}

/* Prints `lhs` in a 24-column margin and `text` wrapped to 104 columns beside it. */
static void print_wrapped(FILE *f, const char *lhs, const char *text)
{
    enum { MARGIN = 27, WIDTH = 104 };
    int col = MARGIN;
    if (strlen(lhs) > MARGIN - 3)
        fprintf(f, "  %s\n%*s", lhs, MARGIN, "");
    else
        fprintf(f, "  %-24s ", lhs);
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        const int len = (int)strcspn(p, " ");
        if (len == 0)
            break;
        if (col > MARGIN && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", MARGIN, "");
            col = MARGIN;
        }
        col += fprintf(f, "%s%.*s", col > MARGIN ? " " : "", len, p);
        p += len;
    }
    fputc('\n', f);
}

/* One option's --help line(s): --name ARG (and the option listed with it), its help, the names of
 * its table, its default. */
static void option_usage(FILE *f, const struct cfg_option *o, const struct sim_config *d,
                         const struct cfg_option *with)
{
    char lhs[96], text[2048], def[CFG_PATH];
    if (with) {
        snprintf(lhs, sizeof lhs, "--%s, --%s", o->name, with->name);
    } else if (o->kind == CFG_CHOICE && !o->arg) {
        snprintf(lhs, sizeof lhs, "--%s ", o->name);
        for (int i = 0; i < o->num_choices; i++)
            snprintf(lhs + strlen(lhs), sizeof lhs - strlen(lhs), "%s%s", i ? "|" : "", o->choices[i]);
    } else {
        snprintf(lhs, sizeof lhs, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    }
    snprintf(text, sizeof text, "%s", o->help);
    for (int i = 0; o->kind == CFG_CHOICE && o->arg && i < o->num_choices; i++) /* (its choices after its help) */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? "|" : ": ", o->choices[i]);
    for (int i = 0; o->names && o->names(i); i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), " %s", o->names(i));
    const bool flag = o->kind == CFG_FLAG || o->kind == CFG_SET;
    const char *shown = o->shown ? o->shown : flag ? "" : cfg_option_text(o, d, def, sizeof def);
    if (shown[0])
        snprintf(text + strlen(text), sizeof text - strlen(text), " [%s]", shown);
    print_wrapped(f, lhs, text);
}

/* The parameters, a line an entry that has any: its name, then each --NAME with its argument and
 * default, kept whole when the line wraps (`tessera list policies` and `list schedulers` give their
 * help). */
static void params_usage(FILE *f)
{
    enum { MARGIN = 27, WIDTH = 104 };
    struct part p;
    for (int i = 0; parts_get(i, &p); i++) {
        if (p.num_params == 0)
            continue;
        char lhs[64], def[32];
        snprintf(lhs, sizeof lhs, "%s (%s)", p.name, p.kind);
        fprintf(f, "  %-24s", lhs);
        int col = MARGIN - 1;
        for (int k = 0; k < p.num_params; k++) {
            const struct param_spec *s = &p.params[k];
            char item[128];
            const int len = snprintf(item, sizeof item, "--%s %s [%s]", s->name,
                                     s->choices ? "NAME" : s->integer || s->odd ? "N" : "X",
                                     param_text(s, s->def, def, sizeof def));
            if (k > 0 && col + 1 + len > WIDTH)
                col = fprintf(f, "\n%*s", MARGIN - 1, "") - 1;
            col += fprintf(f, " %s", item);
        }
        fputc('\n', f);
    }
}

static void sim_usage(FILE *f)
{
    fprintf(f,
"usage: tessera sim [options]\n"
"\n"
"Replays a request trace through a dLLM denoising policy, a scheduler and a cost model, and\n"
"prints a summary. Every option has a default: `tessera sim` alone simulates 200 requests with\n"
"ShareGPT-shaped lengths arriving at 1 req/s on LLaDA-8B / H200 (dual cache, phase scheduler).\n");
    struct sim_config d;
    sim_config_defaults(&d);
    const char *group = NULL;
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        if (group != o->group) {
            if (group && strcmp(group, "denoising") == 0) {
                fprintf(f, "\npolicy and scheduler parameters (each one's help: tessera list policies, list schedulers):\n");
                params_usage(f);
            }
            fprintf(f, "\n%s:\n", o->group);
            group = o->group;
        }
        if (o->help)
            option_usage(f, o, &d, i + 1 < cfg_num_options && !cfg_options[i + 1].help ? &cfg_options[i + 1] : NULL);
    }
    fprintf(f,
"\n"
"summary: finished, completed; rejected, refused on arrival; preemptions, evicted for memory;\n"
"  stalls, request-steps sat out for the token budget; makespan, first arrival to last finish;\n"
"  latency, arrival to finish; first block, to its first; queueing, to admission; cost, the pricing.\n"
"Bad input exits with status 2, a message naming file, line and field, and no database file.\n"
"With --db, status 0 means the run is in the database: "
"SIGINT or SIGTERM before its commit rolls it\n"
"back (status 130 or 143), after it exits 0.\n");
}

/* Applies one option of the table (the second pass: --system was applied by the first). Two
 * options that set a mode to different values (--append and --replace) are refused together; of
 * two that set a switch (--progress, --no-progress) the last wins. */
static int apply_opt(const struct cfg_option *o, const char *value, struct sim_config *c, const struct cfg_option **set_by)
{
    if (strcmp(o->name, "system") == 0)
        return 0;
    if (o->kind == CFG_SET && o->size != sizeof(bool)) {
        for (int i = 0; i < cfg_num_options; i++) {
            const struct cfg_option *p = set_by[i];
            if (p && p != o && p->offset == o->offset && p->value != o->value) {
                fprintf(stderr, "tessera sim: --%s and --%s: one or the other\n", p->name, o->name);
                return -1;
            }
        }
        set_by[o - cfg_options] = o;
    }
    struct ts_err err;
    if (cfg_option_set(o, value, c, &err) == 0)
        return 0;
    fprintf(stderr, "tessera sim: %s\n", err.msg);
    return -1;
}

/* Whether argv gives the option --name (of table t), in full or abbreviated. */
static bool given(const struct opt_table *t, int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *o = resolve(t, argv[i]);
        if (o && strcmp(o, name) == 0)
            return true;
    }
    return false;
}

/* The path of the shipped calibration of c's model and implementation measured on gpu ("" where
 * the model or implementation is unknown). */
static void shipped_calib(const struct sim_config *c, const char *gpu, char *path, size_t len)
{
    struct model_cfg m;
    struct impl_profile im;
    struct ts_err err;
    path[0] = '\0';
    if (model_resolve(c->model, &m, &err) == 0 && impl_resolve(c->impl, &im, &err) == 0)
        calib_shipped_path(c->datadir, gpu, m.name, im.calib_base[0] ? im.calib_base : im.name, path, len);
}

/* --system without --cost: the cost model its paper experiments price it with (presets.h): the
 * calibration of its model and implementation shipped for the GPU, else one shipped for a GPU of
 * PRESET_CALIB_FROM carried over, else the roofline. */
static void system_cost(struct sim_config *c)
{
    const struct preset *p = preset_find(c->system);
    if (!p || strcmp(p->cost, "calibrated") != 0 || c->tp > 1)
        return;
    static const char *const from[] = PRESET_CALIB_FROM;
    char path[CFG_PATH + 256];
    for (int i = -1; i < (int)TS_ARRAY_LEN(from); i++) {
        shipped_calib(c, i < 0 ? c->gpu : from[i], path, sizeof path);
        if (path[0] && access(path, R_OK) == 0) {
            snprintf(c->cost, sizeof c->cost, "calibrated");
            snprintf(c->calib_from, sizeof c->calib_from, "%s", i < 0 || ts_name_eq(from[i], c->gpu) ? "" : from[i]);
            c->extrapolate = true; /* as the experiments price it: steps beyond the profile too */
            return;
        }
    }
}

int cli_sim_parse(int argc, char **argv, struct sim_config *c)
{
    sim_config_defaults(c);
    c->progress = isatty(STDERR_FILENO);
    struct opt_table t;
    build_opts(&t);
    for (int i = 1; i < argc; i++) { /* first pass: the preset (--system, or what abbreviates it) */
        const char *o = resolve(&t, argv[i]), *eq = strchr(argv[i], '=');
        const char *v = !o || strcmp(o, "system") != 0 ? NULL : eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        if (v) {
            struct ts_err err;
            if (preset_apply(v, c, &err)) {
                fprintf(stderr, "tessera sim: %s\n", err.msg);
                return -1;
            }
        }
    }
    optind = 1;
    opterr = 0;
    int o, idx;
    const struct cfg_option *set_by[256] = {0};
    while ((o = getopt_long(argc, argv, ":h", t.o, &idx)) != -1) {
        if (o == O_HELP || o == 'h') {
            sim_usage(stdout);
            return 1;
        }
        if (o == '?' || o == ':') {
            cli_getopt_error("sim", o, argv, t.o);
            return -1;
        }
        if (optarg && optarg[0] == '-' && optarg[1] == '-') { /* a missing value: the next option taken for it */
            fprintf(stderr, "tessera sim: --%s: missing value (the next argument is the option %s)\n", t.o[idx].name,
                    optarg);
            return -1;
        }
        if (o == O_PARAM) {
            struct ts_err err;
            if (param_values_set(&c->params, t.o[idx].name, optarg, &err)) {
                fprintf(stderr, "tessera sim: %s\n", err.msg);
                return -1;
            }
        } else if (apply_opt(&cfg_options[o - 256], optarg, c, set_by)) {
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera sim: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (!given(&t, argc, argv, "gen-len") && strcmp(c->trace, "synthetic") != 0)
        c->gen_len = 0; /* a trace file's output lengths are the requests' unless --gen-len says */
    if (c->system[0] && !given(&t, argc, argv, "cost") && !given(&t, argc, argv, "calib") &&
        !given(&t, argc, argv, "calib-from"))
        system_cost(c);
    return 0;
}

/* What admits the requests rejected for a reason (sim_reject_reasons' text), or "". */
static const char *reject_hint(const char *why)
{
    static const struct {
        const char *reason, *hint;
    } hints[] = {
        {"maximum positions", "--clip-prompt admits them (their prompts truncated to fit), as does a smaller --gen-len"},
        {"max_num_batched_tokens", "a larger --max-num-batched-tokens admits them"},
        {"KV pool", "a GPU with more memory (--gpu), --tp N or a smaller --gen-len admits them"},
        {"memory", "a GPU with more memory (--gpu), --tp N or a smaller --gen-len admits them"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(hints); i++)
        if (strstr(why, hints[i].reason))
            return hints[i].hint;
    return "";
}

/* The reasons the run's requests were rejected, each with how many and what admits them. */
static void reject_lines(const struct sim *s, const char *indent, FILE *to)
{
    char why[1024], *save = NULL;
    sim_reject_reasons(s, why, sizeof why);
    for (char *r = strtok_r(why, ";", &save); r; r = strtok_r(NULL, ";", &save)) {
        r += strspn(r, " ");
        const char *hint = reject_hint(r);
        fprintf(to, "%s%s%s%s\n", indent, r, hint[0] ? ": " : "", hint);
    }
}

/* The cost model that priced the run, as the summary names it: "roofline (tessera profile)", or
 * "calibrated, FILE[ carried to GPU][ (extrapolated)]". */
static const char *cost_text(const struct sim_config *c, char *buf, size_t len)
{
    char path[CFG_PATH + 256];
    if (strcmp(c->cost, "calibrated") != 0) {
        snprintf(buf, len, "%s (%s profile)", c->cost, c->impl);
    } else if (c->calib[0]) {
        snprintf(buf, len, "calibrated, %s%s", c->calib, c->extrapolate ? " (extrapolated)" : "");
    } else {
        shipped_calib(c, c->calib_from[0] ? c->calib_from : c->gpu, path, sizeof path);
        const char *shown = strstr(path, "/sim/data/") ? strstr(path, "/sim/data/") + 1 : path;
        snprintf(buf, len, "calibrated, %s%s%s%s", shown, c->calib_from[0] ? " carried to " : "",
                 c->calib_from[0] ? c->gpu : "", c->extrapolate ? " (extrapolated)" : "");
    }
    return buf;
}

void cli_print_prompt_cache(const struct sim_summary *m)
{
    if (m->prompt_tokens > 0)
        printf("  prompt cache  %.1f%% of the prefilled prompts' tokens found cached (%lld of %lld), %lld blocks "
               "evicted\n", 100.0 * (double)m->prompt_hit_tokens / (double)m->prompt_tokens,
               (long long)m->prompt_hit_tokens, (long long)m->prompt_tokens, (long long)m->prompt_evicted);
}

static void print_summary(const struct sim_config *c, const struct sim_summary *m)
{
    const struct policy_ops *po = policy_find(c->policy);
    const bool show_redundancy = po && (po->caps & POLICY_DECIDES); /* the policy decides what its steps decode (focus) */
    char tp[32] = "";
    if (c->tp > 1)
        snprintf(tp, sizeof tp, " x %d (tensor parallel)", c->tp);
    else if (c->ep > 1)
        snprintf(tp, sizeof tp, " x %d (expert parallel)", c->ep);
    printf("tessera sim: %s on %s%s, policy %s, scheduler %s, decode %s, impl %s%s%s\n", c->model,
           c->gpu, tp, c->policy, c->scheduler, c->decode, c->impl, c->system[0] ? ", system " : "",
           c->system);
    char cost[CFG_PATH + 1024];
    printf("  cost          %s\n", cost_text(c, cost, sizeof cost));
    printf("  requests      %lld finished, %lld rejected, %lld preemptions, %lld stalls (of %lld)\n",
           (long long)m->num_finished, (long long)m->num_rejected, (long long)m->num_preemptions,
           (long long)m->num_stalls,
           (long long)m->num_requests);
    printf("  makespan      %.3f s over %lld steps (%.1f requests and %.0f query tokens per step)\n",
           (double)m->makespan_ns * 1e-9, (long long)m->num_steps, m->mean_segs_per_step,
           m->mean_q_per_step);
    printf("  throughput    %.1f generated tokens/s (%.1f content tokens/s, %.3f req/s)\n",
           m->throughput_tok_s, m->content_tok_s, m->req_s);
    printf("  latency (s)   mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  std %.3f  max-min %.3f\n",
           m->lat_mean_s, m->lat_p50_s, m->lat_p90_s, m->lat_p99_s, m->lat_std_s, m->lat_span_s);
    printf("  first block   mean %.3f s after arrival; queueing mean %.3f s\n", m->ttfb_mean_s,
           m->queue_mean_s);
    printf("  memory (GiB)  capacity %.2f = weights %.2f + KV pool %.2f (+ activations); "
           "peak in use %.2f\n", m->capacity_bytes / TS_GIB, m->weight_bytes / TS_GIB,
           m->kv_pool_bytes / TS_GIB, m->peak_mem_bytes / TS_GIB);
    printf("  energy        %.0f J: %.3f J a generated token, %.1f J a request; mean %.0f W\n", m->energy_j,
           m->energy_per_token_j, m->energy_per_request_j, m->mean_power_w);
    if (c->slo > 0)
        printf("  SLO           %.1f%% of requests finished within %.3f s of their arrival (--slo)\n",
               100.0 * m->slo_attainment, c->slo);
    if (m->static_batch)
        printf("  static batch  %d requests\n", m->static_batch);
    cli_print_prompt_cache(m);
    if (show_redundancy)
        printf("  redundancy    %.2f rows a decoded token in the later layers (%lld rows), %lld decodable "
               "tokens evicted\n", m->redundancy, (long long)m->rows_processed, (long long)m->missed_decodes);
    if (c->op_scale[0])
        printf("  op scale      %s (--op-scale: an ablation, not the calibrated cost)\n", c->op_scale);
    if (m->clock_modelled && !m->live_steps && m->ops.total_s > 0)
        printf("  clock         the card's state under its power limit moved the steps' time by %+.2f%% "
               "(%+.3f s; --clock)\n", 100.0 * m->clock_delta_s / m->ops.total_s, m->clock_delta_s);
    if (m->live_steps)
        printf("  live (gpu)    %lld steps measured %.3f s; the %s cost model predicted %.3f s (%+.1f%%), "
               "per-step MAPE %.1f%%\n", (long long)m->live_steps, m->live_measured_s, c->cost,
               m->live_model_s, 100.0 * (m->live_model_s - m->live_measured_s) / m->live_measured_s,
               100.0 * m->live_abs_rel / (double)m->live_steps);
    if (m->live_host_steps)
        printf("                of them %lld with a host part measured %.3f s, predicted %.3f s (%+.1f%%), per-step "
               "MAPE %.1f%%\n", (long long)m->live_host_steps, m->live_host_measured_s, m->live_host_model_s,
               100.0 * (m->live_host_model_s - m->live_host_measured_s) / m->live_host_measured_s,
               100.0 * m->live_host_abs_rel / (double)m->live_host_steps);
    /* the six ops that took the most time */
    int order[OP_COUNT];
    for (int i = 0; i < OP_COUNT; i++)
        order[i] = i;
    for (int i = 1; i < OP_COUNT; i++)
        for (int j = i; j > 0 && m->ops.op_s[order[j]] > m->ops.op_s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    double tot = m->ops.total_s > 0 ? m->ops.total_s : 1;
    printf("  time by op   ");
    for (int i = 0; i < 6 && m->ops.op_s[order[i]] > 0; i++)
        printf("%s %s %.1f%%", i ? "," : "", cost_op_name((enum cost_op)order[i]),
               100.0 * m->ops.op_s[order[i]] / tot);
    printf("\n");
}

json_t *cli_summary_json(const struct sim_config *c, const struct sim_summary *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "system", json_string(c->system));
    json_object_set_new(o, "model", json_string(c->model));
    json_object_set_new(o, "gpu", json_string(c->gpu));
    json_object_set_new(o, "policy", json_string(c->policy));
    json_object_set_new(o, "scheduler", json_string(c->scheduler));
    char cost[CFG_PATH + 1024];
    json_object_set_new(o, "cost", json_string(cost_text(c, cost, sizeof cost)));
    json_object_set_new(o, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(o, "num_requests", json_integer(m->num_requests));
    json_object_set_new(o, "num_finished", json_integer(m->num_finished));
    json_object_set_new(o, "num_rejected", json_integer(m->num_rejected));
    json_object_set_new(o, "num_preemptions", json_integer(m->num_preemptions));
    json_object_set_new(o, "num_stalls", json_integer(m->num_stalls));
    json_object_set_new(o, "num_steps", json_integer(m->num_steps));
    json_object_set_new(o, "request_steps", json_integer(m->request_steps));
    json_object_set_new(o, "tokens_decoded", json_integer(m->tokens_decoded));
    json_object_set_new(o, "content_tokens", json_integer(m->content_tokens));
    json_object_set_new(o, "makespan_ns", json_integer(m->makespan_ns));
    json_object_set_new(o, "throughput_tok_s", json_real(m->throughput_tok_s));
    json_object_set_new(o, "content_tok_s", json_real(m->content_tok_s));
    json_object_set_new(o, "req_s", json_real(m->req_s));
    json_object_set_new(o, "lat_mean_s", json_real(m->lat_mean_s));
    json_object_set_new(o, "lat_p50_s", json_real(m->lat_p50_s));
    json_object_set_new(o, "lat_p90_s", json_real(m->lat_p90_s));
    json_object_set_new(o, "lat_p99_s", json_real(m->lat_p99_s));
    json_object_set_new(o, "lat_std_s", json_real(m->lat_std_s));
    json_object_set_new(o, "lat_span_s", json_real(m->lat_span_s));
    json_object_set_new(o, "ttfb_mean_s", json_real(m->ttfb_mean_s));
    json_object_set_new(o, "queue_mean_s", json_real(m->queue_mean_s));
    json_object_set_new(o, "peak_mem_bytes", json_integer(m->peak_mem_bytes));
    json_object_set_new(o, "peak_kv_bytes", json_integer(m->peak_kv_bytes));
    json_object_set_new(o, "kv_pool_bytes", json_integer(m->kv_pool_bytes));
    json_object_set_new(o, "act_reserved_bytes", json_integer(m->act_reserved_bytes));
    json_object_set_new(o, "weight_bytes", json_integer(m->weight_bytes));
    json_object_set_new(o, "static_batch", json_integer(m->static_batch));
    json_object_set_new(o, "rows_processed", json_integer(m->rows_processed));
    json_object_set_new(o, "missed_decodes", json_integer(m->missed_decodes));
    json_object_set_new(o, "redundancy", json_real(m->redundancy));
    json_object_set_new(o, "energy_j", json_real(m->energy_j));
    json_object_set_new(o, "energy_per_token_j", json_real(m->energy_per_token_j));
    json_object_set_new(o, "energy_per_request_j", json_real(m->energy_per_request_j));
    json_object_set_new(o, "mean_power_w", json_real(m->mean_power_w));
    if (c->slo > 0)
        json_object_set_new(o, "slo_attainment", json_real(m->slo_attainment));
    if (m->prompt_tokens > 0) {
        json_object_set_new(o, "prompt_tokens", json_integer(m->prompt_tokens));
        json_object_set_new(o, "prompt_hit_tokens", json_integer(m->prompt_hit_tokens));
        json_object_set_new(o, "prompt_evicted_blocks", json_integer(m->prompt_evicted));
    }
    json_object_set_new(o, "busy_s", json_real(m->busy_s));
    json_object_set_new(o, "busy_energy_j", json_real(m->busy_energy_j));
    if (c->json_wall)
        json_object_set_new(o, "run_wall_s", json_real(m->run_wall_s));
    if (m->clock_modelled && !m->live_steps)
        json_object_set_new(o, "clock_delta_s", json_real(m->clock_delta_s));
    if (m->live_steps) {
        json_object_set_new(o, "live_steps", json_integer(m->live_steps));
        json_object_set_new(o, "live_measured_s", json_real(m->live_measured_s));
        json_object_set_new(o, "live_model_s", json_real(m->live_model_s));
        json_object_set_new(o, "live_step_mape", json_real(m->live_abs_rel / (double)m->live_steps));
        json_object_set_new(o, "live_t0_unix", json_real(m->live_t0_unix));
        json_object_set_new(o, "live_t1_unix", json_real(m->live_t1_unix));
        if (m->live_host_steps) {
            json_object_set_new(o, "live_host_steps", json_integer(m->live_host_steps));
            json_object_set_new(o, "live_host_measured_s", json_real(m->live_host_measured_s));
            json_object_set_new(o, "live_host_model_s", json_real(m->live_host_model_s));
            json_object_set_new(o, "live_host_step_mape", json_real(m->live_host_abs_rel / (double)m->live_host_steps));
        }
    }
    json_t *ops = json_object();
    for (int i = 0; i < OP_COUNT; i++)
        json_object_set_new(ops, cost_op_name((enum cost_op)i), json_real(m->ops.op_s[i]));
    json_object_set_new(o, "op_seconds", ops);
    return o;
}

void cli_print_json(json_t *o)
{
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    printf("%s\n", txt);
    free(txt);
    json_decref(o);
}

/* --executor gpu --tp N: outside a launch, the launch of N ranks running this command (the engine's
 * eng_tp_launch: one process per GPU); inside one, a rank other than 0 writes no database and shows
 * no progress (rank 0 reports). -1: go on in this process. */
static int live_tp(struct sim_config *c, int argc, char **argv)
{
    const char *rank = getenv("TESSERA_TP_RANK");
    if (getenv("TESSERA_TP_SIZE")) {
        if (!rank || strcmp(rank, "0") != 0) {
            c->db[0] = '\0';
            c->db_mode = 0;
            c->progress = false;
            c->quiet = true;
        }
        return -1;
    }
    struct ts_err err;
    struct sim *s = sim_create(c, &err); /* refused at start, with the reason, before any GPU work */
    if (!s) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        return EXIT_USAGE;
    }
    sim_destroy(s);
    int (*launch)(int, int, char **);
    *(void **)&launch = engine_symbol("eng_tp_launch", &err);
    if (!launch) {
        fprintf(stderr, "tessera sim: --executor gpu --tp %d: %s\n", c->tp, err.msg);
        return EXIT_USAGE;
    }
    return launch(c->tp, argc, argv);
}

int cli_sim(int argc, char **argv)
{
    struct sim_config c;
    int rc = cli_sim_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? 0 : EXIT_USAGE;
    if (c.replicas > 1 || c.fleet[0])
        return cli_fleet(&c, argc, argv);
    if (c.disagg[0] || c.autoscale[0] || c.load_control[0]) {
        fprintf(stderr, "tessera sim: %s: a fleet's option (--replicas N or --fleet FILE)\n",
                c.disagg[0] ? "--disagg" : c.autoscale[0] ? "--autoscale" : "--load-control");
        return EXIT_USAGE;
    }
    struct ts_err err;
    const struct policy_ops *po = policy_find(c.policy);
    char needs[512];
    if (c.executor == EXECUTOR_GPU && po && eng_ext_refused(po->engine, ENG_EXT_LIVE, needs, sizeof needs)) {
        fprintf(stderr, "tessera sim: --executor gpu: policy %s needs %s; price it with the cost model (--executor "
                        "model)\n", po->name, needs);
        return EXIT_USAGE;
    }
    if (c.executor == EXECUTOR_GPU) {
        struct model_cfg m;
        const char *lacks = model_resolve(c.model, &m, &err) == 0 ? model_engine_lacks(&m) : NULL;
        if (lacks) {
            fprintf(stderr, "tessera sim: --executor gpu: model %s has %s, which the CUDA engine does not run; "
                            "price it with the cost model (--executor model)\n", m.name, lacks);
            return EXIT_USAGE;
        }
        if (strncmp(c.decode, "spiffy:", 7) == 0) {
            fprintf(stderr, "tessera sim: --executor gpu: --decode %s verifies draft blocks under a mask of their own "
                            "(each replacing its block), which the CUDA engine does not run; price it with the cost "
                            "model (--executor model)\n", c.decode);
            return EXIT_USAGE;
        }
    }
    if (c.executor == EXECUTOR_GPU && c.tp > 1 && (rc = live_tp(&c, argc, argv)) >= 0)
        return rc;
    if (c.db_mode && !c.db[0]) {
        fprintf(stderr, "tessera sim: --append and --replace say what --db does with the runs it holds; no --db given\n");
        return EXIT_USAGE;
    }
    if (!c.db[0]) /* no database: no step rows to keep (they would only grow in memory) */
        c.no_steps = true;
    struct db_out *out = NULL;
    if (c.db[0] && (db_check(c.db, (enum db_mode)c.db_mode, &err) || /* before any work */
                    db_out_open(c.db, (enum db_mode)c.db_mode, &out, &err))) {
        fprintf(stderr, "tessera sim: --db %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct sim *s = sim_create(&c, &err);
    if (!s) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        db_out_close(out);
        return EXIT_USAGE;
    }
    if (out)
        sim_stream_steps(s, out); /* step rows leave memory as the run makes them */
    const struct preset *p = c.system[0] ? preset_find(c.system) : NULL;
    if (p && p->note && !c.quiet)
        fprintf(stderr, "tessera sim: note: --system %s: %s\n", p->name, p->note);
    struct sim_executor ex = {0};
    engine_live_close_fn live_close = NULL;
    if (c.executor == EXECUTOR_GPU) {
        engine_live_open_fn live_open;
        *(void **)&live_open = engine_symbol("eng_live_open", &err);
        if (live_open)
            *(void **)&live_close = engine_symbol("eng_live_close", &err);
        if (!live_open || !live_close || live_open(s, c.live_mem_gib, &ex, &err)) {
            fprintf(stderr, "tessera sim: --executor gpu: %s\n", err.msg);
            sim_destroy(s);
        db_out_close(out);
            return EXIT_USAGE;
        }
        sim_set_executor(s, &ex);
    }
    int run_rc = sim_run(s, &err);
    if (live_close)
        live_close(&ex);
    if (run_rc) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        sim_destroy(s);
        db_out_close(out);
        return EXIT_USAGE;
    }
    struct sim_summary m;
    sim_get_summary(s, &m);
    if (m.num_requests > 0 && m.num_rejected == m.num_requests) { /* nothing ran: no run to keep */
        char why[1024];
        sim_reject_reasons(s, why, sizeof why);
        fprintf(stderr, "tessera sim: every one of the %lld requests was rejected (%s)\n", (long long)m.num_requests, why);
        reject_lines(s, "  ", stderr);
        sim_destroy(s);
        db_out_close(out);
        return EXIT_USAGE;
    }
    rc = 0;
    if (out && db_out_commit(out, s, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        rc = 1;
    }
    if (c.json) {
        cli_print_json(cli_summary_json(sim_config(s), &m));
    } else {
        print_summary(sim_config(s), &m);
        if (m.num_rejected)
            reject_lines(s, "  rejected      ", stdout);
    }
    sim_destroy(s);
    db_out_close(out);
    return rc;
}
