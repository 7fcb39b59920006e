/*
 * config.h: the resolved configuration of one simulation run, and every `tessera sim` option
 * declared once (config.c's table): its name, type, default, range or choices, help and the field
 * it sets. The command line, --help, the defaults, validation, the stored JSON (runs.config_json)
 * and its read-back all come from that table; an option's JSON key is its name with '_' for '-',
 * and its field carries the same name (but options that set one mode or switch between them,
 * --append and --replace, --progress and --no-progress).
 */
#ifndef TESSERA_CONFIG_H
#define TESSERA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "util.h"

#define CFG_STR 256
#define CFG_PATH 1024

/* The options that take one of a few names: their values, and the names in that order (config.c),
 * which the command line parses and the stored JSON holds. */
enum cfg_executor { EXECUTOR_MODEL = 0, EXECUTOR_GPU };
enum cfg_clock { CLOCK_AUTO = 0, CLOCK_ON, CLOCK_OFF };
enum cfg_preempt { PREEMPT_RECOMPUTE = 0, PREEMPT_SWAP };
enum cfg_admit { ADMIT_REFUSE = 0, ADMIT_DEFER };
enum cfg_weights { WEIGHTS_BF16 = 0, WEIGHTS_FP8 };
extern const char *const cfg_executor_names[2], *const cfg_clock_names[3], *const cfg_preempt_names[2],
    *const cfg_admit_names[2], *const cfg_weights_names[2];
/* Sets *out to the index of `name` among names[0..n) (the value of option --opt); -1 with err
 * "--opt: 'name' is not A, B or C" where it is none of them. */
int cfg_choice(const char *opt, const char *name, const char *const *names, int n, int32_t *out, struct ts_err *err);
#define CFG_CHOICE(opt, name, names, out, err) cfg_choice(opt, name, names, (int)TS_ARRAY_LEN(names), out, err)

struct sim_config {
    char system[CFG_STR];      /* preset applied before explicit options ("" = none) */
    char model[CFG_PATH];      /* built-in name or path to config.json */
    int32_t max_pos;           /* > 0: the longest sequence the model runs, in place of its config's */
    int32_t weights;           /* enum cfg_weights: bf16 (the model's), or fp8 (W8A8 GEMMs) */
    char gpu[CFG_STR];
    char gpu_file[CFG_PATH];   /* JSON overriding/adding GPUs ("" = none) */
    char policy[CFG_STR];
    char scheduler[CFG_STR];
    char decode[CFG_STR];
    char cost[CFG_STR];        /* cost model back end */
    char impl[CFG_STR];        /* implementation profile */
    char calib[CFG_PATH];      /* calibrated: profile CSV ("" = datadir/calib/GPU-MODEL-IMPL.csv) */
    char calib_from[CFG_STR];  /* calibrated: the shipped calibration of this GPU carried to gpu
                                * (calib_data_transfer); "" = gpu's own */
    char host[CFG_PATH];       /* calibrated: a host profile replacing the calibration's ("" = its own) */
    char rounds_host[CFG_STR]; /* a card whose measured rounds give the host's work where --gpu has none ("" = none) */
    bool extrapolate;          /* calibrated: price steps beyond the profiled range */
    int32_t clock;             /* enum cfg_clock: the card's clock under its power limit (clock.h): auto
                                * (modelled where the cost is calibrated and the GPU's clock was
                                * measured), on, off */
    char op_scale[CFG_STR];    /* an ablation: OP=F,... each op's time F times over ("" = as priced) */
    int32_t tp;                /* tensor-parallel degree: GPUs one step runs on (1: one) */
    int32_t ep;                /* expert-parallel degree: an MoE model's experts split over ep GPUs, each
                                * running the rest of the step whole (1: none) */
    int32_t executor;          /* enum cfg_executor: model (the cost model's times) | gpu (live: the
                                * engine runs each step) */
    double live_mem_gib;       /* gpu: device memory the engine may use; 0 = all that is free */
    int32_t attention, ffn, routing, select_at, kernels; /* gpu: the engine's choices (eng_choices.h) */
    int32_t gemm_algos;        /* gpu: cuBLASLt candidates a new GEMM shape's tuning times */
    char gemm_cache[CFG_PATH]; /* gpu: the GEMM algorithm cache file ("" = none) */
    char datadir[CFG_PATH];    /* where decode_profiles.json lives */

    /* workload */
    char trace[CFG_PATH];      /* file, or "synthetic" */
    char arrivals[CFG_STR];    /* poisson | gamma:CV (synthetic, and files without times) */
    char lengths[CFG_PATH];    /* synthetic lengths: sharegpt | fixed:P,O | lognormal:... | file:PATH */
    double rps;                /* target rate; 0 = keep a file's own timing */
    int64_t requests;          /* synthetic count, or the first N of a file (0 = all) */
    uint64_t seed;
    uint64_t decode_seed;      /* the requests' decode streams' seed (0: seed's): drawn decodes varied, the
                                * workload kept (--interval's replicates) */
    bool skip_bad_rows;
    bool clip_prompt;          /* truncate prompts so that P + G fits the model */
    double slo;                /* a request's latency objective, seconds (0: none): the summary's attainment */

    /* a fleet (fleet.h): replicas of this instance, or the groups of a fleet file, behind a router */
    int32_t replicas;          /* copies of this instance (1: no fleet) */
    char fleet[CFG_PATH];      /* replica groups, one a line ("" = none) */
    char router[CFG_STR];      /* the router's policy (fleet.c's table) */
    double router_staleness;   /* seconds between refreshes of the router's view (0: every arrival) */
    int64_t admit_max;         /* refuse an arrival every replica holds this many requests for (0: never) */
    int32_t admit;             /* enum cfg_admit: what admit_max does with such an arrival */
    char autoscale[CFG_STR];   /* the autoscaler's settings (fleet_autoscale_parse; "" = off) */
    char disagg[CFG_STR];      /* Refresh/Reuse disaggregation (fleet_disagg_parse; "" = co-located) */
    char load_control[CFG_STR]; /* the decode threshold lowered under load (fleet_tau_parse; "" = off) */

    /* dLLM generation */
    int32_t gen_len;           /* G for every request; 0 = the trace's output length rounded up to blocks */
    int32_t max_new_tokens;    /* gen_len 0: G at most this, in whole blocks (0 = no cap) */
    int32_t block;             /* block size, Bs */
    bool early_stop;
    double early_commit;       /* Prophet: the share of a request's positions decoded after which the rest commit (0: off) */
    int32_t eos;               /* enum decode_eos: when EOS positions commit: auto | bulk | scheduled */
    bool iter_smooth; /* dInfer's IterSmooth (step_desc.iter_smooth) */
    bool mask_only;
    bool block_logits; /* logits only for the current block's rows (dLLM-Serve's log_optimize_level 2) */
    struct param_values params; /* the policy's and the scheduler's own parameters as given, by
                                 * name (params.h, parts.h) */

    /* execution and memory */
    int32_t max_num_logits;    /* logit rows per LM-head chunk; 0 = monolithic */
    int32_t ffn_chunks;
    int32_t kv_page;           /* KV pool page, tokens */
    int64_t prompt_cache;      /* tokens of the KV pool kept for prompt blocks across requests (0: none) */
    double reserve_gib;        /* framework reserve; < 0 = the implementation profile's */
    double search_margin_mib;  /* with lazy_chunking, memory the chunk search keeps free; < 0 = Mosaic's
                                * (chunk_search_margin) */
    int32_t preempt;           /* enum cfg_preempt: recompute | swap */
    char planner[CFG_STR];     /* activation reservations: first-fit | greedy-size | ilp | caching | profiled */
    bool lazy_chunking;        /* Mosaic: per step, chunk logits/FFN until the step fits the memory left */
    int32_t act_layout;        /* enum og_layout: a layer's activations (opgraph.h): engine | mosaic */

    /* output */
    char db[CFG_PATH];         /* "" = no database */
    int db_mode;               /* enum db_mode (db.h): what db does with the runs it holds */
    bool json;
    bool json_wall;            /* --json adds run_wall_s, the host's wall time (which no two runs share) */
    bool no_steps;
    bool quiet;
    bool progress;             /* progress line on stderr (default: when stderr is a terminal) */
    int32_t interval;          /* --interval P: each figure's P% interval (0: none; cli_interval.c) */
    int32_t interval_runs;     /* its replicates */
    /* a replicate of --interval's (no option sets them, none is stored): every GPU op's time and the
     * host's times these factors, over --op-scale's (0: 1) */
    double speed_gpu, speed_host;
};

/* --- the options ------------------------------------------------------------------------- */

enum cfg_kind {
    CFG_TEXT,   /* a string field of `size` bytes */
    CFG_INT,    /* int32_t */
    CFG_INT64,  /* int64_t or uint64_t */
    CFG_REAL,   /* double */
    CFG_FLAG,   /* bool, set by the option */
    CFG_CHOICE, /* int32_t, the index of one of `choices` */
    CFG_SET     /* int32_t or bool: the option sets it to `value` (options setting one field share it) */
};

struct cfg_option {
    const char *name;    /* --name; the JSON key and the field are the name with '_' for '-' */
    enum cfg_kind kind;
    size_t offset, size; /* the field of struct sim_config */
    const char *def;     /* the default as the option takes it ("" for an empty string) */
    double lo, hi;       /* a number's range; its default may lie outside it, meaning "unset" */
    const char *const *choices; /* CFG_CHOICE: the names, num_choices of them */
    int num_choices;
    int value;           /* CFG_SET */
    const char *arg;     /* the value's placeholder in --help (N, X, NAME, FILE, SPEC) */
    const char *group;   /* the --help section it is listed in */
    const char *field;   /* the field's name (the table's FIELD() gives it): the name with '_' for '-' */
    const char *unit;    /* a number's unit, as errors name its range */
    const char *help;    /* what it does (--help wraps it); NULL: listed with the option before it,
                          * which sets the same field (--append, --replace) */
    const char *shown;   /* --help's default where the value alone does not say it (NULL: def) */
    const char *(*names)(int i); /* names --help lists after the help (a table's; NULL at the end) */
    const char *was;     /* the key older databases stored it under, read back too (NULL: none) */
    bool stored;         /* stored with the run (options of output and place are not) */
};

extern const struct cfg_option cfg_options[];
extern const int cfg_num_options;
const struct cfg_option *cfg_option_find(const char *name);
/* Sets the option's field from text (the command line's value; NULL for a flag or a set), checked
 * against its type and range (a default outside the range, which means "unset", is not taken
 * from the command line); -1 with err naming the option where it is not. */
int cfg_option_set(const struct cfg_option *o, const char *text, struct sim_config *c, struct ts_err *err);
/* The field's value as text (a name for a choice), into buf. */
const char *cfg_option_text(const struct cfg_option *o, const struct sim_config *c, char *buf, size_t len);

void sim_config_defaults(struct sim_config *c);
/* Every option's field in its range or choices, then the rules between options, then the parts it
 * names resolved (setup.h), into *setup where setup is not NULL. */
struct sim_setup;
int sim_config_validate(const struct sim_config *c, struct sim_setup *setup, struct ts_err *err);
/* Returns a newly allocated JSON text of the stored options and the parameters of setup, c's parts
 * as resolved (NULL: resolved here; a configuration that does not resolve stores none); caller frees. */
char *sim_config_to_json(const struct sim_config *c, const struct sim_setup *setup);
/* The configuration a run stored (config_json): the defaults, then every stored option and the
 * policy's and scheduler's parameters the JSON holds; -1 with err where a value is of the wrong
 * type or out of range, naming its key. */
struct json_t;
int sim_config_from_json(const struct json_t *o, struct sim_config *c, struct ts_err *err);
/* The step knobs a configuration gives its steps that older databases did not record with each
 * step: its policy's (policy_step_knobs, with setup's parameters: c's, resolved) and its LM-head
 * chunk rows. */
struct model_cfg;
struct step_desc;
void sim_config_knobs(const struct sim_config *c, const struct sim_setup *setup, const struct model_cfg *m,
                      struct step_desc *sd);

#endif
