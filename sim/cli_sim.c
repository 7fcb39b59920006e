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

#include "calib.h"
#include "cli.h"
#include "cost.h"
#include "model.h"
#include "engine_load.h"
#include "decode.h"
#include "parts.h"
#include "planner.h"
#include "presets.h"
#include "sim.h"

enum {
    O_SYSTEM = 256, O_MODEL, O_GPU, O_GPU_FILE, O_POLICY, O_SCHED, O_DECODE, O_COST, O_IMPL,
    O_TRACE, O_ARRIVALS, O_LENGTHS, O_RPS, O_REQUESTS, O_SEED, O_SKIP_BAD, O_CLIP, O_GEN_LEN, O_MAX_NEW,
    O_BLOCK, O_TP, O_EP, O_EARLY, O_EOS, O_ITER_SMOOTH, O_MASK_ONLY, O_BLOCK_LOGITS, O_MNL, O_FFN_CHUNKS, O_KV_PAGE,
    O_RESERVE, O_MARGIN, O_PREEMPT, O_DB, O_APPEND, O_REPLACE, O_JSON, O_NO_STEPS, O_QUIET, O_PROGRESS,
    O_NO_PROGRESS, O_HELP,
    O_DATADIR, O_CALIB, O_CALIB_FROM, O_HOST, O_EXTRAPOLATE, O_CLOCK, O_OP_SCALE, O_PLANNER, O_LAZY, O_LAYOUT, O_EXECUTOR, O_LIVE_MEM,
    O_PARAM /* a policy's or scheduler's parameter (build_opts), found by its option's name */
};

static const struct option opts[] = {
    {"system", required_argument, 0, O_SYSTEM},
    {"model", required_argument, 0, O_MODEL},
    {"gpu", required_argument, 0, O_GPU},
    {"gpu-file", required_argument, 0, O_GPU_FILE},
    {"policy", required_argument, 0, O_POLICY},
    {"scheduler", required_argument, 0, O_SCHED},
    {"decode", required_argument, 0, O_DECODE},
    {"cost", required_argument, 0, O_COST},
    {"impl", required_argument, 0, O_IMPL},
    {"trace", required_argument, 0, O_TRACE},
    {"arrivals", required_argument, 0, O_ARRIVALS},
    {"lengths", required_argument, 0, O_LENGTHS},
    {"rps", required_argument, 0, O_RPS},
    {"requests", required_argument, 0, O_REQUESTS},
    {"seed", required_argument, 0, O_SEED},
    {"skip-bad-rows", no_argument, 0, O_SKIP_BAD},
    {"clip-prompt", no_argument, 0, O_CLIP},
    {"gen-len", required_argument, 0, O_GEN_LEN},
    {"max-new-tokens", required_argument, 0, O_MAX_NEW},
    {"block", required_argument, 0, O_BLOCK},
    {"tp", required_argument, 0, O_TP},
    {"ep", required_argument, 0, O_EP},
    {"early-stop", no_argument, 0, O_EARLY},
    {"eos", required_argument, 0, O_EOS},
    {"iter-smooth", no_argument, 0, O_ITER_SMOOTH},
    {"mask-only", no_argument, 0, O_MASK_ONLY},
    {"block-logits", no_argument, 0, O_BLOCK_LOGITS},
    {"max-num-logits", required_argument, 0, O_MNL},
    {"ffn-chunks", required_argument, 0, O_FFN_CHUNKS},
    {"kv-page", required_argument, 0, O_KV_PAGE},
    {"reserve-gib", required_argument, 0, O_RESERVE},
    {"search-margin-mib", required_argument, 0, O_MARGIN},
    {"preempt", required_argument, 0, O_PREEMPT},
    {"db", required_argument, 0, O_DB},
    {"json", no_argument, 0, O_JSON},
    {"no-steps", no_argument, 0, O_NO_STEPS},
    {"append", no_argument, 0, O_APPEND},
    {"replace", no_argument, 0, O_REPLACE},
    {"quiet", no_argument, 0, O_QUIET},
    {"progress", no_argument, 0, O_PROGRESS},
    {"no-progress", no_argument, 0, O_NO_PROGRESS},
    {"datadir", required_argument, 0, O_DATADIR},
    {"calib", required_argument, 0, O_CALIB},
    {"calib-from", required_argument, 0, O_CALIB_FROM},
    {"host", required_argument, 0, O_HOST},
    {"extrapolate", no_argument, 0, O_EXTRAPOLATE},
    {"clock", required_argument, 0, O_CLOCK},
    {"op-scale", required_argument, 0, O_OP_SCALE},
    {"executor", required_argument, 0, O_EXECUTOR},
    {"live-mem-gib", required_argument, 0, O_LIVE_MEM},
    {"planner", required_argument, 0, O_PLANNER},
    {"lazy-chunking", no_argument, 0, O_LAZY},
    {"act-layout", required_argument, 0, O_LAYOUT},
    {"help", no_argument, 0, O_HELP},
};

/* The options of the policies' and schedulers' parameters, each name once (parts.h), after the
 * fixed ones. */
struct opt_table {
    struct option o[TS_ARRAY_LEN(opts) + 64 + 1];
    int n;
};

static void build_opts(struct opt_table *t)
{
    memcpy(t->o, opts, sizeof opts);
    t->n = (int)TS_ARRAY_LEN(opts);
    struct part p;
    for (int i = 0; parts_get(i, &p); i++)
        for (int k = 0; k < p.num_params; k++) {
            const char *name = p.params[k].name;
            bool have = false;
            for (int j = 0; j < t->n && !have; j++)
                have = strcmp(t->o[j].name, name) == 0;
            TS_ASSERT(have || t->n < (int)TS_ARRAY_LEN(t->o) - 1);
            if (!have)
                t->o[t->n++] = (struct option){name, required_argument, 0, O_PARAM};
        }
    t->o[t->n] = (struct option){0, 0, 0, 0};
}

/* Joins the names of a table's entries (get(i) until NULL) with spaces. */
#define JOIN_NAMES(buf, get) \
    do { \
        (buf)[0] = '\0'; \
        for (int i_ = 0; get(i_); i_++) \
            snprintf((buf) + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i_ ? " " : "", get(i_)->name); \
    } while (0)

/* sim_usage's workload and output options, and what the summary's words mean. */
static void sim_usage_workload(FILE *f)
{
    fprintf(f,
"\n"
"workload:\n"
"  --trace FILE|synthetic   Azure/BurstGPT/length CSV, Mooncake JSONL, tessera CSV [synthetic]; a\n"
"                           file's output lengths are the requests' unless --gen-len is given\n"
"  --requests N             synthetic count [200], or the first N requests of a file\n"
"  --rps R                  synthetic rate [1]; rescales a file with times to R; gives a\n"
"                           length-only file Poisson/Gamma arrivals at R\n"
"  --arrivals SPEC          poisson | gamma:CV [poisson]\n"
"  --lengths SPEC           sharegpt | sharegpt-first | wildchat | math | osc | livebench | burstgpt |\n"
"                           fixed:P,O | lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O | file:PATH [sharegpt]\n"
"                           (traces/README.md says where each comes from)\n"
"  --seed S                 run seed: arrivals, lengths and every request's decode stream [1]\n"
"  --skip-bad-rows          skip and count malformed trace rows instead of stopping\n"
"  --clip-prompt            truncate prompts so that P + G fits the model (else they are rejected)\n"
"\n"
"output:\n"
"  --db FILE                runs, requests, steps, segments and summary to SQLite in one transaction;\n"
"                           a database holding runs is refused unless --append or --replace (before\n"
"                           the run, status 2; or at its end, status 1, where another writer gave it\n"
"                           a run meanwhile: of writers starting together without --append, one lands)\n"
"  --append, --replace      add this run beside the database's runs, or replace them (--append checks\n"
"                           a database of up to 128 MiB for damage first: tessera db check)\n"
"  --no-steps               leave out per-step and per-segment rows (large sweeps)\n"
"  --json                   print the summary as one JSON object\n"
"  --quiet                  no log lines on stderr\n"
"  --progress, --no-progress   progress line on stderr [on when stderr is a terminal]\n"
"\n"
"summary: finished, requests that completed; rejected, refused on arrival as they can never run\n"
"  (each reason is printed with the option that admits them); preemptions, running requests evicted\n"
"  for memory and later resumed (--preempt); stalls, request-steps a running request sat out because\n"
"  the step's token budget was spent; makespan, first arrival to last finish; generated tokens, the\n"
"  positions denoised (G a request), content tokens the trace's output within them; latency, arrival\n"
"  to finish; first block, arrival to the first block decoded; queueing, arrival to admission; cost,\n"
"  the cost model that priced the steps.\n"
"Bad input (malformed trace row, unknown name) exits with status 2, a message naming file,\n"
"line and field, and no database file. With --db, status 0 means the run is in the database:\n"
"SIGINT or SIGTERM before its commit rolls it back (status 130 or 143), after it exits 0.\n");
}

/* The policies' and schedulers' parameters, each option once: the entries declaring it, with
 * their defaults, and the first one's help. */
static void params_usage(FILE *f)
{
    struct part p, q;
    for (int i = 0; parts_get(i, &p); i++)
        for (int k = 0; k < p.num_params; k++) {
            const struct param_spec *s = &p.params[k];
            bool before = false;
            for (int j = 0; j < i && !before && parts_get(j, &q); j++)
                before = params_find(q.params, q.num_params, s->name) != NULL;
            if (before)
                continue;
            char opt[64], owners[256] = "", def[32];
            snprintf(opt, sizeof opt, "--%s %s", s->name, s->choices ? "NAME" : s->integer || s->odd ? "N" : "X");
            for (int j = i; parts_get(j, &q); j++) {
                const struct param_spec *o = params_find(q.params, q.num_params, s->name);
                if (o)
                    snprintf(owners + strlen(owners), sizeof owners - strlen(owners), "%s%s [%s]",
                             owners[0] ? ", " : "", q.name, param_text(o, o->def, def, sizeof def));
            }
            fprintf(f, "  %-24s %s: %s\n", opt, owners, s->help);
        }
}

static void sim_usage(FILE *f)
{
    fprintf(f,
"usage: tessera sim [options]\n"
"\n"
"Replays a request trace through a dLLM denoising policy, a scheduler and a cost model, and\n"
"prints a summary. Every option has a default: `tessera sim` alone simulates 200 requests with\n"
"ShareGPT-shaped lengths arriving at 1 req/s on LLaDA-8B / H200 (dual cache, phase scheduler).\n"
"\n"
"system and model:\n");
    char names[512] = "", costs[128];
    JOIN_NAMES(costs, cost_backend);
    for (int i = 0; i < preset_count(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " " : "", preset_get(i)->name);
    fprintf(f, "  --system NAME            a paper's system, applied before the other options, with the cost\n"
               "                           model its experiments use (tessera list systems): %s\n", names);
    fprintf(f,
"  --model NAME|config.json built-in model (tessera list models) or a Hugging Face config.json [llada-8b]\n"
"  --gpu NAME               rtx3090 rtx4090 l40s a100-40gb a100-80gb h100 h200 [h200]\n"
"  --gpu-file FILE          JSON overriding or adding GPUs: {\"NAME\": {\"mem_gib\":.., \"bf16_tflops\":..,\n"
"                           \"mem_bw_gbs\":.., \"host_bw_gbs\":..}}\n"
"  --impl NAME              implementation profile (tessera list impls) [tessera]\n"
"  --cost NAME              %s [roofline; a --system's: calibrated where a calibration of its\n"
"                           model and implementation is shipped for the GPU or can be carried to it]\n"
"  --calib FILE             calibrated: the profile to fit [sim/data/calib/GPU-MODEL-IMPL.csv]\n"
"  --calib-from GPU         calibrated: the shipped calibration measured on GPU, carried to --gpu\n"
"                           (as tessera calib transfer does)\n"
"  --host NAME|FILE         the host that issues an eager implementation's steps (tessera list hosts)\n"
"  --extrapolate            calibrated: price steps beyond the profiled range\n"
"  --clock auto|on|off      the card's clock under its power limit as a state (tessera calib clock);\n"
"                           auto: where the cost is calibrated and the GPU's clock was fitted [auto]\n"
"  --op-scale OP=F[,OP=F]   an ablation: each named op priced F times over, F in (0, 100] [none]\n"
"  --tp N                   tensor parallelism over N GPUs of the kind [1]\n"
"  --ep N                   expert parallelism: an MoE model's experts split over N GPUs, the rest of\n"
"                           each step replicated on every one, an all-reduce a MoE layer [1]\n"
"  --executor NAME          model: steps take the cost model's time; gpu: the CUDA engine runs every\n"
"                           step and its measured time drives the clock [model]\n"
"  --live-mem-gib X         gpu: device memory the engine may use [0 = all that is free]\n"
"\n", costs);
    struct sim_config d;
    sim_config_defaults(&d);
    JOIN_NAMES(names, policy_get);
    fprintf(f, "denoising:\n  --policy NAME            %s [%s]\n", names, d.policy);
    fprintf(f,
"  --decode SPEC            tokens a step commits: fixed:K | threshold:TPF | threshold:tau=TAU (the\n"
"                           papers' confidence threshold, by its measured TPF) | threshold:PROFILE |\n"
"                           hierarchical:PROFILE|TPF | credit:TPF (tessera list decode) [%s]\n"
"  --gen-len G              positions denoised per request; 0 = the trace's output length rounded up\n"
"                           to whole blocks [256; a --trace file's output lengths]\n"
"  --max-new-tokens N       with the trace's output lengths, at most N positions a request [0 = no cap]\n"
"  --block BS               block size [32]\n"
"  --early-stop             finish once the content and one EOS block are decoded\n"
"  --eos MODE               when a block's EOS positions commit: auto | bulk | scheduled [auto]\n"
"  --iter-smooth            dInfer's IterSmooth (with threshold, hierarchical or credit decoding)\n"
"  --mask-only              logits only for masked rows (Mosaic)\n"
"  --block-logits           logits only for the current block's rows, in full-sequence steps too (dLLM-Serve)\n"
"\n"
"policy and scheduler parameters (tessera list policies, tessera list schedulers):\n", d.decode);
    params_usage(f);
    JOIN_NAMES(names, sched_get);
    fprintf(f, "\nscheduling and memory:\n  --scheduler NAME         %s [%s]\n", names, d.scheduler);
    JOIN_NAMES(names, planner_get);
    fprintf(f,
"  --max-num-logits N       logit rows per LM-head chunk; 0 = monolithic [2048]\n"
"  --ffn-chunks N           FFN token chunks [1]\n"
"  --lazy-chunking          Mosaic: per step, raise the logit or FFN chunks until the step fits\n"
"  --search-margin-mib N    with --lazy-chunking, what the chunk search keeps free [Mosaic's]\n"
"  --act-layout NAME        a layer's activations: engine | mosaic [engine; the mosaic preset: mosaic]\n"
"  --kv-page N              KV pool page size in tokens [16]\n"
"  --reserve-gib X          framework reserve [the implementation profile's]\n"
"  --preempt MODE           recompute | swap [recompute]\n"
"  --planner NAME           activation reservations: %s [%s]\n", names, d.planner);
    sim_usage_workload(f);
}

static int num_i32(const char *opt, const char *v, int32_t *out)
{
    int64_t x;
    if (ts_parse_i64(v, &x) || x < INT32_MIN || x > INT32_MAX) {
        fprintf(stderr, "tessera sim: --%s: '%s' is not an integer\n", opt, v);
        return -1;
    }
    *out = (int32_t)x;
    return 0;
}

static int copy_str(char *dst, size_t n, const char *opt, const char *v)
{
    if (strlen(v) >= n) {
        fprintf(stderr, "tessera sim: --%s: value too long\n", opt);
        return -1;
    }
    snprintf(dst, n, "%s", v);
    return 0;
}

#define STR(field) copy_str(c->field, sizeof c->field, name, optarg)

/* an option that takes one of names */
static int choice(const char *opt, const char *v, const char *const *names, size_t n, int32_t *out)
{
    struct ts_err err;
    if (cfg_choice(opt, v, names, (int)n, out, &err) == 0)
        return 0;
    fprintf(stderr, "tessera sim: %s\n", err.msg);
    return -1;
}

static int apply_opt(int o, const char *name, struct sim_config *c)
{
    int64_t i64;
    switch (o) {
    case O_SYSTEM: return 0; /* applied in the first pass */
    case O_MODEL: return STR(model);
    case O_GPU: return STR(gpu);
    case O_GPU_FILE: return STR(gpu_file);
    case O_POLICY: return STR(policy);
    case O_SCHED: return STR(scheduler);
    case O_DECODE: return STR(decode);
    case O_COST: return STR(cost);
    case O_IMPL: return STR(impl);
    case O_TRACE: return STR(trace);
    case O_ARRIVALS: return STR(arrivals);
    case O_LENGTHS: return STR(lengths);
    case O_PREEMPT: return choice(name, optarg, cfg_preempt_names, TS_ARRAY_LEN(cfg_preempt_names), &c->preempt);
    case O_PLANNER: return STR(planner);
    case O_LAZY: c->lazy_chunking = true; return 0;
    case O_LAYOUT: return STR(act_layout);
    case O_DB: return STR(db);
    case O_DATADIR: return STR(datadir);
    case O_CALIB: return STR(calib);
    case O_CALIB_FROM: return STR(calib_from);
    case O_HOST: return STR(host);
    case O_EXTRAPOLATE: c->extrapolate = true; return 0;
    case O_CLOCK: return choice(name, optarg, cfg_clock_names, TS_ARRAY_LEN(cfg_clock_names), &c->clock);
    case O_OP_SCALE: return STR(op_scale);
    case O_EXECUTOR: return choice(name, optarg, cfg_executor_names, TS_ARRAY_LEN(cfg_executor_names), &c->executor);
    case O_LIVE_MEM:
        if (ts_parse_double(optarg, &c->live_mem_gib) || c->live_mem_gib < 0) {
            fprintf(stderr, "tessera sim: --live-mem-gib: '%s' is not a number >= 0\n", optarg);
            return -1;
        }
        return 0;
    case O_RPS:
        if (ts_parse_double(optarg, &c->rps) || c->rps <= 0) {
            fprintf(stderr, "tessera sim: --rps: '%s' is not a positive number\n", optarg);
            return -1;
        }
        return 0;
    case O_RESERVE:
        if (ts_parse_double(optarg, &c->reserve_gib) || c->reserve_gib < 0) {
            fprintf(stderr, "tessera sim: --reserve-gib: '%s' is not a number >= 0\n", optarg);
            return -1;
        }
        return 0;
    case O_MARGIN:
        if (ts_parse_double(optarg, &c->search_margin_mib) || !(c->search_margin_mib >= 0)) {
            fprintf(stderr, "tessera sim: --search-margin-mib: '%s' is not a number >= 0\n", optarg);
            return -1;
        }
        return 0;
    case O_REQUESTS:
    case O_SEED:
        {
            const int64_t most = o == O_REQUESTS ? INT32_MAX : (int64_t)1 << 40; /* requests: their ids */
            if (ts_parse_i64(optarg, &i64) || i64 < (o == O_REQUESTS) || i64 > most) {
                fprintf(stderr, "tessera sim: --%s: '%s' is not a whole number in %d..%lld\n", name, optarg,
                        o == O_REQUESTS, (long long)most);
                return -1;
            }
        }
        if (o == O_REQUESTS)
            c->requests = i64;
        else
            c->seed = (uint64_t)i64;
        return 0;
    case O_GEN_LEN: return num_i32(name, optarg, &c->gen_len);
    case O_MAX_NEW: return num_i32(name, optarg, &c->max_new_tokens);
    case O_BLOCK: return num_i32(name, optarg, &c->block_size);
    case O_TP: return num_i32(name, optarg, &c->tp);
    case O_EP: return num_i32(name, optarg, &c->ep);
    case O_PARAM: {
        struct ts_err err;
        if (param_values_set(&c->params, name, optarg, &err) == 0)
            return 0;
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        return -1;
    }
    case O_MNL: return num_i32(name, optarg, &c->logit_chunk_rows);
    case O_FFN_CHUNKS: return num_i32(name, optarg, &c->ffn_chunks);
    case O_KV_PAGE: return num_i32(name, optarg, &c->kv_page_tokens);
    case O_SKIP_BAD: c->skip_bad_rows = true; return 0;
    case O_CLIP: c->clip_prompt = true; return 0;
    case O_EARLY: c->early_stop = true; return 0;
    case O_EOS: return STR(eos);
    case O_ITER_SMOOTH: c->iter_smooth = true; return 0;
    case O_MASK_ONLY: c->mask_only = true; return 0;
    case O_BLOCK_LOGITS: c->block_logits = true; return 0;
    case O_JSON: c->json = true; return 0;
    case O_NO_STEPS: c->no_steps = true; return 0;
    case O_APPEND:
    case O_REPLACE:
        if (c->db_mode && c->db_mode != (o == O_APPEND ? DB_APPEND : DB_REPLACE)) {
            fprintf(stderr, "tessera sim: --append and --replace: one or the other\n");
            return -1;
        }
        c->db_mode = o == O_APPEND ? DB_APPEND : DB_REPLACE;
        return 0;
    case O_QUIET: c->quiet = true; return 0;
    case O_PROGRESS: c->progress = true; return 0;
    case O_NO_PROGRESS: c->progress = false; return 0;
    }
    return -1;
}

/* Whether argv gives the option --name. */
static bool given(int argc, char **argv, const char *name)
{
    const size_t n = strlen(name);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 &&
            (argv[i][2 + n] == '\0' || argv[i][2 + n] == '='))
            return true;
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

/* Parses argv into *c. Returns 0, 1 for --help (already printed) or -1 on a usage error. */
static int parse_args(int argc, char **argv, struct sim_config *c)
{
    sim_config_defaults(c);
    c->progress = isatty(STDERR_FILENO);
    for (int i = 1; i < argc; i++) { /* first pass: the preset */
        const char *v = NULL;
        if (strcmp(argv[i], "--system") == 0 && i + 1 < argc)
            v = argv[i + 1];
        else if (strncmp(argv[i], "--system=", 9) == 0)
            v = argv[i] + 9;
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
    struct opt_table t;
    build_opts(&t);
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
        if (apply_opt(o, t.o[idx].name, c))
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "tessera sim: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (!given(argc, argv, "gen-len") && strcmp(c->trace, "synthetic") != 0)
        c->gen_len = 0; /* a trace file's output lengths are the requests' unless --gen-len says */
    if (c->system[0] && !given(argc, argv, "cost") && !given(argc, argv, "calib") && !given(argc, argv, "calib-from"))
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

static void print_summary(const struct sim_config *c, const struct sim_summary *m)
{
    const struct policy_ops *po = policy_find(c->policy);
    const bool show_redundancy = po && po->decides; /* the policy decides what its steps decode (focus) */
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
    if (m->static_batch)
        printf("  static batch  %d requests\n", m->static_batch);
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

static void print_json(const struct sim_config *c, const struct sim_summary *m)
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
    json_object_set_new(o, "kv_pool_bytes", json_integer(m->kv_pool_bytes));
    json_object_set_new(o, "act_reserved_bytes", json_integer(m->act_reserved_bytes));
    json_object_set_new(o, "weight_bytes", json_integer(m->weight_bytes));
    json_object_set_new(o, "static_batch", json_integer(m->static_batch));
    json_object_set_new(o, "rows_processed", json_integer(m->rows_processed));
    json_object_set_new(o, "missed_decodes", json_integer(m->missed_decodes));
    json_object_set_new(o, "redundancy", json_real(m->redundancy));
    json_object_set_new(o, "run_wall_s", json_real(m->run_wall_s));
    if (m->clock_modelled && !m->live_steps)
        json_object_set_new(o, "clock_delta_s", json_real(m->clock_delta_s));
    if (m->live_steps) {
        json_object_set_new(o, "live_steps", json_integer(m->live_steps));
        json_object_set_new(o, "live_measured_s", json_real(m->live_measured_s));
        json_object_set_new(o, "live_model_s", json_real(m->live_model_s));
    }
    json_t *ops = json_object();
    for (int i = 0; i < OP_COUNT; i++)
        json_object_set_new(ops, cost_op_name((enum cost_op)i), json_real(m->ops.op_s[i]));
    json_object_set_new(o, "op_seconds", ops);
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
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc > 0 ? 0 : EXIT_USAGE;
    struct ts_err err;
    const struct policy_ops *po = policy_find(c.policy);
    if (c.executor == EXECUTOR_GPU && po && po->engine_lacks) {
        fprintf(stderr, "tessera sim: --executor gpu: policy %s needs %s, which the CUDA engine does not run; "
                        "price it with the cost model (--executor model)\n", po->name, po->engine_lacks);
        return EXIT_USAGE;
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
        print_json(sim_config(s), &m);
    } else {
        print_summary(sim_config(s), &m);
        if (m.num_rejected)
            reject_lines(s, "  rejected      ", stdout);
    }
    sim_destroy(s);
    db_out_close(out);
    return rc;
}
