/*
 * config.h: the resolved configuration of one simulation run. Plain data with _defaults() and
 * _validate(); the whole struct is echoed as JSON and stored with every result (runs.config_json).
 */
#ifndef TESSERA_CONFIG_H
#define TESSERA_CONFIG_H

#include <stdbool.h>
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
extern const char *const cfg_executor_names[2], *const cfg_clock_names[3], *const cfg_preempt_names[2];
/* Sets *out to the index of `name` among names[0..n) (the value of option --opt); -1 with err
 * "--opt: 'name' is not A, B or C" where it is none of them. */
int cfg_choice(const char *opt, const char *name, const char *const *names, int n, int32_t *out, struct ts_err *err);
#define CFG_CHOICE(opt, name, names, out, err) cfg_choice(opt, name, names, (int)TS_ARRAY_LEN(names), out, err)

struct sim_config {
    char system[CFG_STR];      /* preset applied before explicit options ("" = none) */
    char model[CFG_PATH];      /* built-in name or path to config.json */
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
    char datadir[CFG_PATH];    /* where decode_profiles.json lives */

    /* workload */
    char trace[CFG_PATH];      /* file, or "synthetic" */
    char arrivals[CFG_STR];    /* poisson | gamma:CV (synthetic, and files without times) */
    char lengths[CFG_PATH];    /* synthetic lengths: sharegpt | fixed:P,O | lognormal:... | file:PATH */
    double rps;                /* target rate; 0 = keep a file's own timing */
    int64_t requests;          /* synthetic count, or the first N of a file (0 = all) */
    uint64_t seed;
    bool skip_bad_rows;
    bool clip_prompt;          /* truncate prompts so that P + G fits the model */

    /* dLLM generation */
    int32_t gen_len;           /* G for every request; 0 = the trace's output length rounded up to blocks */
    int32_t max_new_tokens;    /* gen_len 0: G at most this, in whole blocks (0 = no cap) */
    int32_t block_size;        /* Bs */
    bool early_stop;
    char eos[CFG_STR];         /* when EOS positions commit: auto | bulk | scheduled (enum decode_eos) */
    bool iter_smooth; /* dInfer's IterSmooth (step_desc.iter_smooth) */
    bool mask_only;
    bool block_logits; /* logits only for the current block's rows (dLLM-Serve's log_optimize_level 2) */
    struct param_values params; /* the policy's and the scheduler's own parameters as given, by
                                 * name (params.h, parts.h) */

    /* execution and memory */
    int32_t logit_chunk_rows;  /* logit rows per LM-head chunk; 0 = monolithic (--max-num-logits) */
    int32_t ffn_chunks;
    int32_t kv_page_tokens;
    double reserve_gib;        /* framework reserve; < 0 = the implementation profile's */
    double search_margin_mib;  /* with lazy_chunking, memory the chunk search keeps free; < 0 = Mosaic's
                                * (chunk_search_margin) */
    int32_t preempt;           /* enum cfg_preempt: recompute | swap */
    char planner[CFG_STR];     /* activation reservations: first-fit | greedy-size | ilp | caching | profiled */
    bool lazy_chunking;        /* Mosaic: per step, chunk logits/FFN until the step fits the memory left */
    char act_layout[CFG_STR];  /* a layer's activations (opgraph.h): engine | mosaic */

    /* output */
    char db[CFG_PATH];         /* "" = no database */
    int db_mode;               /* enum db_mode (sim.h): what db does with the runs it holds */
    bool json;
    bool no_steps;
    bool quiet;
    bool progress;             /* progress line on stderr (default: when stderr is a terminal) */
};

void sim_config_defaults(struct sim_config *c);
int sim_config_validate(const struct sim_config *c, struct ts_err *err);
/* Returns a newly allocated JSON text of the configuration; caller frees. */
char *sim_config_to_json(const struct sim_config *c);

#endif
