/* config.c: every `tessera sim` option in one table, and the defaults, validation, JSON and JSON
 * read-back that come from it (config.h). */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "decode.h"
#include "eng_choices.h"
#include "opgraph.h"
#include "setup.h"
#include "planner.h"
#include "fleet.h"
#include "presets.h"
#include "db.h"
#include "sim.h"

#ifndef TS_DATADIR
#define TS_DATADIR "sim/data"
#endif

const char *const cfg_executor_names[2] = {"model", "gpu"};
const char *const cfg_clock_names[3] = {"auto", "on", "off"};
const char *const cfg_weights_names[2] = {"bf16", "fp8"};
const char *const cfg_preempt_names[2] = {"recompute", "swap"};
const char *const cfg_admit_names[2] = {"refuse", "defer"};

int cfg_choice(const char *opt, const char *name, const char *const *names, int n, int32_t *out, struct ts_err *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                 names[i]);
    return ts_fail(err, "--%s: '%s' is not %s", opt, name, list);
}

/* the names of the tables --help lists */
static const char *system_name(int i) { return i < preset_count() ? preset_get(i)->name : NULL; }
static const char *cost_name(int i) { return cost_backend(i) ? cost_backend(i)->name : NULL; }
static const char *policy_name(int i) { return policy_get(i) ? policy_get(i)->name : NULL; }
static const char *sched_name(int i) { return sched_get(i) ? sched_get(i)->name : NULL; }
static const char *planner_name(int i) { return planner_get(i) ? planner_get(i)->name : NULL; }
static const char *router_name(int i) { return router_get(i) ? router_get(i)->name : NULL; }

#define FIELD(f) .field = #f, .offset = offsetof(struct sim_config, f), .size = sizeof(((struct sim_config *)0)->f)
#define CHOICES(names) .choices = names, .num_choices = (int)TS_ARRAY_LEN(names)
#define TEXT CFG_TEXT, .stored = true
#define INT CFG_INT, .stored = true
#define INT64 CFG_INT64, .stored = true
#define REAL CFG_REAL, .stored = true
#define FLAG CFG_FLAG, .stored = true
#define CHOICE CFG_CHOICE, .stored = true

static const char *const eos_names[] = {[EOS_AUTO] = "auto", [EOS_BULK] = "bulk", [EOS_SCHEDULED] = "scheduled"};
static const char *const layout_names[] = {[OG_LAYOUT_ENGINE] = "engine", [OG_LAYOUT_MOSAIC] = "mosaic"};

static const char SYS[] = "system and model", ENG[] = "the engine, with --executor gpu", DEN[] = "denoising",
                  MEM[] = "scheduling and memory", WORK[] = "workload", FLEET[] = "a fleet of replicas",
                  OUT[] = "output";

const struct cfg_option cfg_options[] = {
    /* system and model */
    {"system", TEXT, FIELD(system), .def = "", .arg = "NAME", .group = SYS, .names = system_name,
     .help = "a paper's system, applied before the other options (tessera list systems):"},
    {"model", TEXT, FIELD(model), .def = MODEL_DEFAULT, .arg = "NAME|config.json", .group = SYS,
     .help = "built-in model (tessera list models) or a Hugging Face config.json"},
    {"max-pos", INT, FIELD(max_pos), .def = "0", .lo = 0, .hi = 1 << 28, .unit = "positions", .arg = "N", .group = SYS,
     .shown = "the model's", .help = "the longest sequence the model runs (RoPE: past its config's)"},
    {"gpu", TEXT, FIELD(gpu), .def = "h200", .arg = "NAME", .group = SYS,
     .help = "rtx3090 rtx4090 l40s a100-40gb a100-80gb h100 h800 h200 b200 (tessera list gpus)"},
    {"weights", CHOICE, FIELD(weights), CHOICES(cfg_weights_names), .def = "bf16", .group = SYS,
     .help = "bf16, or fp8: weights of a byte and their GEMMs at the card's FP8 rate (W8A8; --cost roofline)"},
    {"gpu-file", TEXT, FIELD(gpu_file), .def = "", .arg = "FILE", .group = SYS, .shown = "none",
     .help = "JSON adding or overriding GPUs: {\"NAME\": {\"mem_gib\":.., ..}}"},
    {"impl", TEXT, FIELD(impl), .def = "tessera", .arg = "NAME", .group = SYS,
     .help = "implementation profile (tessera list impls)"},
    {"cost", TEXT, FIELD(cost), .def = "roofline", .arg = "NAME", .group = SYS, .names = cost_name,
     .shown = "roofline; a --system's: calibrated where a calibration is shipped or carried",
     .help = "the cost model:"},
    {"calib", TEXT, FIELD(calib), .def = "", .arg = "FILE", .group = SYS, .shown = "sim/data/calib/GPU-MODEL-IMPL.csv",
     .help = "calibrated: the profile to fit"},
    {"calib-from", TEXT, FIELD(calib_from), .def = "", .arg = "GPU", .group = SYS, .shown = "--gpu's own",
     .help = "calibrated: GPU's calibration carried to --gpu (calib transfer)"},
    {"host", TEXT, FIELD(host), .def = "", .arg = "NAME|FILE", .group = SYS, .shown = "the calibration's own",
     .help = "the host issuing an eager engine's steps (list hosts)"},
    {"rounds-host", TEXT, FIELD(rounds_host), .def = "", .arg = "GPU", .group = SYS, .shown = "none",
     .help = "a runtime priced by its rounds (--impl sglang) on a card with none: the host's work between rounds "
             "as measured beside GPU (an assumption: the hosts alike), the forwards priced as the engine runs them; "
             "on a card with rounds of its own, only that card (which changes nothing)"},
    {"extrapolate", FLAG, FIELD(extrapolate), .def = "0", .group = SYS,
     .help = "calibrated: price steps beyond the profiled range"},
    {"clock", CHOICE, FIELD(clock), CHOICES(cfg_clock_names), .def = "auto", .group = SYS,
     .help = "the card's clock under its power limit; auto: where a fit exists"},
    {"op-scale", TEXT, FIELD(op_scale), .def = "", .arg = "OP=F[,OP=F]", .group = SYS, .shown = "none",
     .help = "an ablation: each named op priced F times over, F in (0, 100]"},
    {"tp", INT, FIELD(tp), .def = "1", .lo = 1, .hi = 8, .unit = "GPUs", .arg = "N", .group = SYS,
     .help = "tensor parallelism over N GPUs of the kind"},
    {"ep", INT, FIELD(ep), .def = "1", .lo = 1, .hi = 8, .unit = "GPUs", .arg = "N", .group = SYS,
     .help = "expert parallelism: the experts over N GPUs, the rest of a step on each, an all-reduce a layer"},
    {"executor", CHOICE, FIELD(executor), CHOICES(cfg_executor_names), .def = "model", .group = SYS,
     .help = "model: the cost model's times; gpu: the CUDA engine runs each step, its time drives the clock"},
    {"live-mem-gib", REAL, FIELD(live_mem_gib), .def = "0", .lo = 0, .hi = 1e5, .unit = "GiB (0 = all that is free)",
     .arg = "X", .group = SYS, .shown = "0 = all that is free", .help = "gpu: device memory the engine may use"},
    {"datadir", CFG_TEXT, FIELD(datadir), .def = TS_DATADIR, .arg = "DIR", .group = SYS,
     .shown = "$TESSERA_DATA, else sim/data", .help = "decode profiles, calibrations and clock fits"},
    /* the engine, with --executor gpu (tessera engine --help says what each does) */
    {"attention", CHOICE, FIELD(attention), CHOICES(eng_attention_names), .def = "auto",
     .group = ENG, .help = "the attention kernel"},
    {"ffn", CHOICE, FIELD(ffn), CHOICES(eng_ffn_names), .def = "split", .group = ENG,
     .help = "the FFN's gate/up GEMM (--impl tessera-fused: fused)"},
    {"routing", CHOICE, FIELD(routing), CHOICES(eng_routing_names), .def = "auto", .group = ENG,
     .help = "a mixture of experts' experts"},
    {"select-at", CHOICE, FIELD(select_at), CHOICES(eng_select_names), .def = "end", .group = ENG,
     .help = "where sparse selections run"},
    {"kernels", CHOICE, FIELD(kernels), CHOICES(eng_kernels_names), .def = "device", .group = ENG,
     .help = "portable: the kernels of a GPU before Hopper, whatever the device"},
    {"gemm-algos", INT, FIELD(gemm_algos), .def = "16", .lo = 1, .hi = 128, .unit = "candidates", .arg = "N",
     .group = ENG, .help = "cuBLASLt's candidates a new GEMM shape's tuning times"},
    {"gemm-cache", CFG_TEXT, FIELD(gemm_cache), .def = "", .arg = "FILE", .group = ENG, .shown = "none",
     .help = "the GEMM algorithms chosen, kept and shared (SQLite)"},
    /* denoising */
    {"policy", TEXT, FIELD(policy), .def = "dual", .arg = "NAME", .group = DEN, .names = policy_name,
     .help = "the denoising policy (tessera list policies):"},
    {"decode", TEXT, FIELD(decode), .def = "fixed:1", .arg = "SPEC", .group = DEN,
     .help = "tokens a step commits (tessera list decode): fixed:K | threshold:TPF | threshold:tau=TAU | "
             "threshold:PROFILE | hierarchical:PROFILE|TPF | credit:TPF"},
    {"gen-len", INT, FIELD(gen_len), .def = "256", .lo = 0, .hi = 1 << 28,
     .unit = "positions (0: the trace's output lengths)", .arg = "G", .group = DEN,
     .shown = "256; a --trace file's",
     .help = "positions a request denoises; 0 = its trace output length rounded up to blocks"},
    {"max-new-tokens", INT, FIELD(max_new_tokens), .def = "0", .lo = 0, .hi = 1 << 28,
     .unit = "positions (0: no cap)", .arg = "N", .group = DEN, .shown = "0 = no cap",
     .help = "with the trace's output lengths, at most N positions a request"},
    {"block", INT, FIELD(block), .def = "32", .lo = 1, .hi = 65536, .unit = "tokens", .arg = "BS", .group = DEN,
     .help = "block size", .was = "block_size"},
    {"early-stop", FLAG, FIELD(early_stop), .def = "0", .group = DEN,
     .help = "finish once the content and one EOS block are decoded"},
    {"early-commit", REAL, FIELD(early_commit), .def = "0", .lo = 0, .hi = 1, .unit = "of the positions", .arg = "F",
     .group = DEN, .shown = "off", .help = "Prophet: the rest commit once F of a request's positions are decoded"},
    {"eos", CHOICE, FIELD(eos), CHOICES(eos_names), .def = "auto", .arg = "MODE", .group = DEN,
     .help = "when a block's EOS positions commit"},
    {"iter-smooth", FLAG, FIELD(iter_smooth), .def = "0", .group = DEN,
     .help = "dInfer's IterSmooth (with threshold, hierarchical or credit decoding)"},
    {"mask-only", FLAG, FIELD(mask_only), .def = "0", .group = DEN, .help = "logits only for masked rows (Mosaic)"},
    {"block-logits", FLAG, FIELD(block_logits), .def = "0", .group = DEN,
     .help = "the current block's rows' logits alone, full-sequence steps too (dLLM-Serve)"},
    /* scheduling and memory */
    {"scheduler", TEXT, FIELD(scheduler), .def = "phase", .arg = "NAME", .group = MEM, .names = sched_name,
     .help = "the scheduler (tessera list schedulers):"},
    {"max-num-logits", INT, FIELD(max_num_logits), .def = "2048", .lo = 0, .hi = 1 << 24,
     .unit = "rows (0 = monolithic)", .arg = "N", .group = MEM,
     .help = "logit rows per LM-head chunk; 0 = monolithic"},
    {"ffn-chunks", INT, FIELD(ffn_chunks), .def = "1", .lo = 1, .hi = 4096, .unit = "chunks", .arg = "N",
     .group = MEM, .help = "FFN token chunks"},
    {"lazy-chunking", FLAG, FIELD(lazy_chunking), .def = "0", .group = MEM,
     .help = "Mosaic: per step, raise the logit or FFN chunks until the step fits"},
    {"search-margin-mib", REAL, FIELD(search_margin_mib), .def = "-1", .lo = 0, .hi = 1048576, .unit = "MiB",
     .arg = "N", .group = MEM, .shown = "Mosaic's", .help = "with --lazy-chunking, what the chunk search keeps free"},
    {"act-layout", CHOICE, FIELD(act_layout), CHOICES(layout_names), .def = "engine", .arg = "NAME", .group = MEM,
     .shown = "engine; the mosaic preset: mosaic", .help = "a layer's activations"},
    {"kv-page", INT, FIELD(kv_page), .def = "16", .lo = 1, .hi = 65536, .unit = "tokens", .arg = "N", .group = MEM,
     .help = "KV pool page size in tokens", .was = "kv_page_tokens"},
    {"prompt-cache", INT64, FIELD(prompt_cache), .def = "0", .lo = 0, .hi = 1e12, .unit = "tokens", .arg = "N",
     .group = MEM, .shown = "none", .help = "tokens of prompt (hash_ids) kept for later requests in free KV pages"},
    {"reserve-gib", REAL, FIELD(reserve_gib), .def = "-1", .lo = 0, .hi = 1e5, .unit = "GiB", .arg = "X",
     .group = MEM, .shown = "the implementation profile's", .help = "framework reserve"},
    {"preempt", CHOICE, FIELD(preempt), CHOICES(cfg_preempt_names), .def = "recompute", .group = MEM,
     .help = "what a request evicted for memory does: recompute its cache, or swap it to the host"},
    {"planner", TEXT, FIELD(planner), .def = "first-fit", .arg = "NAME", .group = MEM, .names = planner_name,
     .help = "activation memory:"},
    /* workload */
    {"trace", TEXT, FIELD(trace), .def = "synthetic", .arg = "FILE|synthetic", .group = WORK,
     .help = "Azure/BurstGPT/length CSV, Mooncake JSONL, tessera CSV (its output lengths the requests')"},
    {"requests", INT64, FIELD(requests), .def = "0", .lo = 1, .hi = INT32_MAX, .unit = "requests", .arg = "N",
     .group = WORK, .shown = "200 synthetic; all of a file", .help = "synthetic count, or a file's first N (played again end to end past its last)"},
    {"rps", REAL, FIELD(rps), .def = "0", .lo = 0, .hi = 1e9,
     .unit = "requests a second (0: 1 a second for a synthetic workload, a file's own times)", .arg = "R", .group = WORK,
     .shown = "0: 1 synthetic; a file's own times",
     .help = "synthetic rate, or a file's rescaled to R (a file of lengths alone: --arrivals at R)"},
    {"arrivals", TEXT, FIELD(arrivals), .def = "poisson", .arg = "SPEC", .group = WORK, .help = "poisson | gamma:CV"},
    {"lengths", TEXT, FIELD(lengths), .def = "sharegpt", .arg = "SPEC", .group = WORK,
     .help = "sharegpt | sharegpt-first | wildchat | math | osc | livebench | burstgpt | fixed:P,O | "
             "lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O | file:PATH (traces/README.md)"},
    {"seed", INT64, FIELD(seed), .def = "1", .lo = 0, .hi = 1099511627776.0, .unit = "", .arg = "S", .group = WORK,
     .help = "run seed: arrivals, lengths and every request's decode stream"},
    {"decode-seed", INT64, FIELD(decode_seed), .def = "0", .lo = 0, .hi = 1099511627776.0, .unit = "", .arg = "S",
     .group = WORK, .shown = "--seed's", .help = "the requests' decode streams alone (the workload kept)"},
    {"slo", REAL, FIELD(slo), .def = "0", .lo = 0, .hi = 1e9, .unit = "seconds", .arg = "S", .group = WORK,
     .shown = "none", .help = "the summary's share of requests finished within S of their arrival"},
    {"skip-bad-rows", FLAG, FIELD(skip_bad_rows), .def = "0", .group = WORK,
     .help = "skip and count malformed trace rows instead of stopping"},
    {"clip-prompt", FLAG, FIELD(clip_prompt), .def = "0", .group = WORK,
     .help = "truncate prompts so that P + G fits the model (else they are rejected)"},
    /* output: not stored with the run */
    /* a fleet */
    {"replicas", INT, FIELD(replicas), .def = "1", .lo = 1, .hi = 65536, .unit = "instances", .arg = "N",
     .group = FLEET, .help = "copies of this instance behind one router"},
    {"fleet", TEXT, FIELD(fleet), .def = "", .arg = "FILE", .group = FLEET, .shown = "none",
     .help = "replica groups, one a line: a count, then sim options (a mixed fleet)"},
    {"router", TEXT, FIELD(router), .def = "least-outstanding", .arg = "NAME", .group = FLEET, .names = router_name,
     .help = "where each arrival goes:"},
    {"router-staleness", REAL, FIELD(router_staleness), .def = "0", .lo = 0, .hi = 3600, .unit = "seconds",
     .arg = "S", .group = FLEET, .help = "the router sees the replicas' load as of S ago at most (0: now)"},
    {"autoscale", TEXT, FIELD(autoscale), .def = "", .arg = "SPEC", .group = FLEET, .shown = "off",
     .help = "start and stop replicas: min=N,up=Q,down=Q,every=S,delay=S,cooldown=S"},
    {"disagg", TEXT, FIELD(disagg), .def = "", .arg = "SPEC", .group = FLEET, .shown = "off",
     .help = "Refresh/Reuse pools: first|every,refresh=N,link=NAME,bw=GB/s,lat=us"},
    {"load-control", TEXT, FIELD(load_control), .def = "", .arg = "SPEC", .group = FLEET, .shown = "off",
     .help = "lower the decode threshold under load: lo=TAU,step=D,up=Q,down=Q,..."},
    {"admit-max", INT64, FIELD(admit_max), .def = "0", .lo = 0, .hi = 1e9, .unit = "requests", .arg = "N",
     .group = FLEET, .help = "when every replica holds N requests, --admit an arrival (0: never)"},
    {"admit", CHOICE, FIELD(admit), CHOICES(cfg_admit_names), .def = "refuse", .group = FLEET,
     .help = "refuse it, or hold it back until a replica has room"},
    {"db", CFG_TEXT, FIELD(db), .def = "", .arg = "FILE", .group = OUT, .shown = "none",
     .help = "runs, requests, steps, segments and summary to SQLite in one transaction; a database holding runs "
             "is refused unless --append or --replace (status 2; 1 where another writer added one meanwhile)"},
    {"append", CFG_SET, FIELD(db_mode), .value = DB_APPEND, .def = "0", .group = OUT,
     .help = "add this run beside the database's runs, or replace them (--append checks a database of up to "
             "16 MiB for damage first: tessera db check)"},
    {"replace", CFG_SET, FIELD(db_mode), .value = DB_REPLACE, .def = "0", .group = OUT}, /* (with --append) */
    {"no-steps", CFG_FLAG, FIELD(no_steps), .def = "0", .group = OUT,
     .help = "leave out per-step and per-segment rows (large sweeps)"},
    {"json", CFG_FLAG, FIELD(json), .def = "0", .group = OUT,
     .help = "print the summary as one JSON object, the same bytes for one seed"},
    {"json-wall", CFG_FLAG, FIELD(json_wall), .def = "0", .group = OUT,
     .help = "with --json, add run_wall_s: the wall time the run took (no two alike)"},
    {"interval", CFG_INT, FIELD(interval), .def = "0", .lo = 0, .hi = 99, .unit = "percent", .arg = "P", .group = OUT,
     .shown = "none", .help = "each figure's P% interval over sim/data/variance.csv's sources"},
    {"interval-runs", CFG_INT, FIELD(interval_runs), .def = "40", .lo = 5, .hi = 10000, .unit = "runs", .arg = "K",
     .group = OUT, .help = "its replicates, each drawing them anew"},
    {"quiet", CFG_FLAG, FIELD(quiet), .def = "0", .group = OUT, .help = "no log lines on stderr"},
    {"progress", CFG_SET, FIELD(progress), .value = 1, .def = "0", .group = OUT,
     .shown = "on when stderr is a terminal", .help = "progress line on stderr"},
    {"no-progress", CFG_SET, FIELD(progress), .value = 0, .def = "0", .group = OUT}, /* (with --progress) */
};
const int cfg_num_options = (int)TS_ARRAY_LEN(cfg_options);

#undef FIELD
#undef CHOICES
#undef TEXT
#undef INT
#undef INT64
#undef REAL
#undef FLAG
#undef CHOICE

const struct cfg_option *cfg_option_find(const char *name)
{
    for (int i = 0; i < cfg_num_options; i++)
        if (strcmp(cfg_options[i].name, name) == 0)
            return &cfg_options[i];
    return NULL;
}

static void *field_of(const struct cfg_option *o, struct sim_config *c) { return (char *)c + o->offset; }
static const void *cfield_of(const struct cfg_option *o, const struct sim_config *c)
{
    return (const char *)c + o->offset;
}

/* a number's value as a double (for the range) */
static double number_of(const struct cfg_option *o, const struct sim_config *c)
{
    const void *f = cfield_of(o, c);
    switch (o->kind) {
    case CFG_INT: return *(const int32_t *)f;
    case CFG_INT64: return (double)*(const int64_t *)f;
    case CFG_REAL: return *(const double *)f;
    default: return 0;
    }
}

/* whether a number is its option's: in range, or the default (which may mean "unset") */
static bool in_range(const struct cfg_option *o, double v, double def)
{
    return (v >= o->lo && v <= o->hi) || v == def;
}

static int range_error(const struct cfg_option *o, const char *value, struct ts_err *err)
{
    const bool whole = o->kind != CFG_REAL;
    return ts_fail(err, "--%s: '%s' is not a %s in %.15g..%.15g%s%s", o->name, value, whole ? "whole number" : "number",
                   o->lo, o->hi, o->unit && o->unit[0] ? " " : "", o->unit ? o->unit : "");
}

/* Sets the field from text; a number outside the range is taken where it is the default
 * (lenient: the defaults and a stored configuration, whose "unset" may lie outside it). */
static int set_value(const struct cfg_option *o, const char *text, struct sim_config *c, bool lenient,
                     struct ts_err *err)
{
    void *f = field_of(o, c);
    double def = NAN;
    if (lenient && (o->kind == CFG_INT || o->kind == CFG_INT64 || o->kind == CFG_REAL))
        ts_parse_double(o->def, &def);
    switch (o->kind) {
    case CFG_TEXT:
        if (strlen(text) >= o->size)
            return ts_fail(err, "--%s: value too long (%zu bytes at most)", o->name, o->size - 1);
        memcpy(f, text, strlen(text) + 1);
        return 0;
    case CFG_CHOICE: return cfg_choice(o->name, text, o->choices, o->num_choices, f, err);
    case CFG_FLAG: *(bool *)f = text ? strcmp(text, "0") != 0 : true; return 0;
    case CFG_SET: /* (the command line's alone: neither the defaults nor a stored configuration set one) */
        TS_ASSERT(!text && (o->size == sizeof(int32_t) || o->size == sizeof(bool)));
        if (o->size == sizeof(bool))
            *(bool *)f = o->value;
        else
            *(int32_t *)f = o->value;
        return 0;
    case CFG_INT:
    case CFG_INT64: {
        int64_t v;
        if (ts_parse_i64(text, &v) || !in_range(o, (double)v, def))
            return range_error(o, text, err);
        if (o->kind == CFG_INT)
            *(int32_t *)f = (int32_t)v;
        else
            memcpy(f, &v, sizeof v); /* (int64_t or uint64_t) */
        return 0;
    }
    case CFG_REAL: {
        double v;
        if (ts_parse_double(text, &v) || !in_range(o, v, def))
            return range_error(o, text, err);
        *(double *)f = v;
        return 0;
    }
    }
    return ts_fail(err, "--%s: an option of no known kind", o->name);
}

int cfg_option_set(const struct cfg_option *o, const char *text, struct sim_config *c, struct ts_err *err)
{
    return set_value(o, text, c, false, err);
}

const char *cfg_option_text(const struct cfg_option *o, const struct sim_config *c, char *buf, size_t len)
{
    const void *f = cfield_of(o, c);
    switch (o->kind) {
    case CFG_TEXT: snprintf(buf, len, "%s", (const char *)f); break;
    case CFG_CHOICE: snprintf(buf, len, "%s", o->choices[*(const int32_t *)f]); break;
    case CFG_FLAG: snprintf(buf, len, "%d", *(const bool *)f); break;
    case CFG_SET: snprintf(buf, len, "%d", o->size == sizeof(bool) ? *(const bool *)f : *(const int32_t *)f); break;
    case CFG_INT: snprintf(buf, len, "%d", *(const int32_t *)f); break;
    case CFG_INT64: snprintf(buf, len, "%lld", (long long)*(const int64_t *)f); break;
    case CFG_REAL: snprintf(buf, len, "%.17g", *(const double *)f); break;
    }
    return buf;
}

void sim_config_defaults(struct sim_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        if (o->kind == CFG_SET)
            continue; /* (a field options set takes its default from its own row, or stays 0) */
        TS_ASSERTF(set_value(o, o->def, c, true, NULL) == 0, "--%s: its default '%s' does not parse", o->name, o->def);
    }
    const char *env = getenv("TESSERA_DATA");
    if (env && *env)
        snprintf(c->datadir, sizeof c->datadir, "%s", env);
}

int sim_config_validate(const struct sim_config *c, struct sim_setup *setup, struct ts_err *err)
{
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        double def;
        if (o->kind == CFG_CHOICE) {
            const int32_t v = *(const int32_t *)cfield_of(o, c);
            TS_ASSERTF(v >= 0 && v < o->num_choices, "--%s: choice %d of %d", o->name, v, o->num_choices);
        } else if (o->kind == CFG_INT || o->kind == CFG_INT64 || o->kind == CFG_REAL) {
            ts_parse_double(o->def, &def);
            char text[64];
            if (!in_range(o, number_of(o, c), def))
                return range_error(o, cfg_option_text(o, c, text, sizeof text), err);
        }
    }
    double scale[OP_COUNT];
    if (cost_op_scale_parse(c->op_scale, scale, err))
        return -1;
    struct fleet_scale autoscale;
    struct fleet_disagg disagg;
    struct fleet_tau tau;
    if (fleet_scale_parse(c->autoscale, &autoscale, err) || fleet_disagg_parse(c->disagg, &disagg, err) ||
        fleet_tau_parse(c->load_control, &tau, err))
        return -1;
    const struct router_ops *router;
    struct router_req affinity;
    if (fleet_router_parse(c->router, &router, &affinity, err))
        return -1;
    if (c->ep > 1 && c->tp > 1)
        return ts_fail(err, "--ep %d with --tp %d: expert parallelism is modelled with the rest of the step "
                            "replicated on every GPU, not beside tensor parallelism", c->ep, c->tp);
    if (c->early_commit > 0 && strcmp(c->policy, "ar") == 0)
        return ts_fail(err, "--early-commit: Prophet's early commit fills a diffusion model's masked positions; policy "
                            "ar decodes one token a step");
    if (c->prompt_cache > 0 && c->executor == EXECUTOR_GPU)
        return ts_fail(err, "--prompt-cache: the engine keeps no K/V across requests (--executor model)");
    if (c->ep > 1 && c->executor == EXECUTOR_GPU)
        return ts_fail(err, "--ep %d: the engine runs no expert parallelism (--executor model)", c->ep);
    if (c->calib_from[0] && (c->calib[0] || strcmp(c->cost, "calibrated") != 0))
        return ts_fail(err, "--calib-from %s: a calibrated cost (--cost calibrated) carried from another GPU; "
                            "--calib names a calibration of its own", c->calib_from);
    if (c->max_new_tokens > 0 && c->gen_len > 0)
        return ts_fail(err, "--max-new-tokens caps the trace's output lengths: give it with --gen-len 0 "
                            "(--gen-len %d sets every request's)", c->gen_len);
    if (c->max_new_tokens > 0 && c->max_new_tokens < c->block)
        return ts_fail(err, "--max-new-tokens: %d is less than one block (--block %d)", c->max_new_tokens,
                       c->block);
    struct sim_setup own, *su = setup ? setup : &own;
    if (sim_setup_resolve(c, su, err))
        return -1;
    if (c->weights == WEIGHTS_FP8 && (strcmp(c->cost, "roofline") != 0 || c->executor == EXECUTOR_GPU))
        return ts_fail(err, "--weights fp8: the engine and its calibrations run bf16 weights; FP8 is priced by the "
                            "roofline alone (--cost roofline, --executor model)");
    if (c->executor == EXECUTOR_GPU && su->impl.rounds)
        return ts_fail(err, "--impl %s: the engine runs tessera's forwards, not %s's rounds; a live run is priced as "
                            "the engine runs (--impl tessera)", su->impl.name, su->impl.name);
    return 0;
}

/* the JSON key of an option: its name with '_' for '-' */
static void json_key(const struct cfg_option *o, char *key, size_t len)
{
    snprintf(key, len, "%s", o->name);
    for (char *p = key; *p; p++)
        if (*p == '-')
            *p = '_';
}

char *sim_config_to_json(const struct sim_config *c, const struct sim_setup *setup)
{
    json_t *o = json_object();
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *op = &cfg_options[i];
        if (!op->stored)
            continue;
        const void *f = cfield_of(op, c);
        char key[64];
        json_key(op, key, sizeof key);
        json_t *v = NULL;
        switch (op->kind) {
        case CFG_TEXT: v = json_string(f); break;
        case CFG_CHOICE: v = json_string(op->choices[*(const int32_t *)f]); break;
        case CFG_FLAG: v = json_boolean(*(const bool *)f); break;
        case CFG_INT: v = json_integer(*(const int32_t *)f); break;
        case CFG_INT64: v = json_integer((json_int_t) * (const int64_t *)f); break;
        case CFG_REAL: v = json_real(*(const double *)f); break;
        case CFG_SET: TS_ASSERT(!"a stored option that sets a value"); break;
        }
        json_object_set_new(o, key, v);
    }
    struct sim_setup own;
    if (!setup && sim_setup_resolve(c, &own, NULL) == 0)
        setup = &own;
    if (setup) { /* the parts' parameters, resolved */
        params_json(o, setup->policy->params, setup->policy->num_params, setup->params.policy);
        params_json(o, setup->sched->params, setup->sched->num_params, setup->params.sched);
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    TS_ASSERT(s != NULL);
    return s;
}

/* a stored value as the option's text: a string, a number, or a boolean as 0/1 */
static int json_text(const char *key, const json_t *v, char *buf, size_t len, struct ts_err *err)
{
    if (json_is_string(v))
        snprintf(buf, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, len, "%d", json_is_true(v));
    else
        return ts_fail(err, "config_json: %s: a value of no known type", key);
    return 0;
}

/* the parameters of a part as stored (params_json), into given */
static int params_from_json(const json_t *o, const struct param_spec *specs, int n, struct param_values *given,
                            struct ts_err *err)
{
    for (int i = 0; i < n; i++) {
        char key[PARAM_TEXT], text[PARAM_TEXT];
        param_json_key(&specs[i], key, sizeof key);
        const json_t *v = json_object_get(o, key);
        if (!v || param_values_get(given, specs[i].name))
            continue; /* (a parameter two parts share is read once) */
        if (json_text(key, v, text, sizeof text, err) || param_values_set(given, specs[i].name, text, err))
            return -1;
    }
    return 0;
}

int sim_config_from_json(const json_t *o, struct sim_config *c, struct ts_err *err)
{
    sim_config_defaults(c);
    if (!json_is_object(o))
        return ts_fail(err, "config_json: not a JSON object");
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *op = &cfg_options[i];
        char key[64], text[CFG_PATH];
        json_key(op, key, sizeof key);
        const json_t *v = json_object_get(o, key);
        if (!v && op->was)
            v = json_object_get(o, op->was);
        if (!op->stored || !v)
            continue;
        if (json_text(key, v, text, sizeof text, err))
            return -1;
        if (op->kind == CFG_INT || op->kind == CFG_INT64) { /* (a whole number stored as a real) */
            double x;
            if (ts_parse_double(text, &x) == 0 && x == floor(x) && fabs(x) < 9e15)
                snprintf(text, sizeof text, "%lld", (long long)x);
        }
        struct ts_err why;
        if (set_value(op, text, c, true, &why))
            return ts_fail(err, "config_json: %s", why.msg);
    }
    const struct policy_ops *po = policy_find(c->policy);
    const struct sched_ops *so = sched_find(c->scheduler);
    if ((po && params_from_json(o, po->params, po->num_params, &c->params, err)) ||
        (so && params_from_json(o, so->params, so->num_params, &c->params, err)))
        return -1;
    return 0;
}

void sim_config_knobs(const struct sim_config *c, const struct sim_setup *setup, const struct model_cfg *m,
                      struct step_desc *sd)
{
    struct policy_cfg pc = {.block_size = c->block};
    memcpy(pc.p, setup->params.policy, sizeof pc.p);
    policy_step_knobs(setup->policy, &pc, m, sd);
    sd->logit_chunk_rows = c->max_num_logits;
}
