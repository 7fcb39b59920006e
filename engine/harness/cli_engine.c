/*
 * cli_engine.c: `tessera engine check | bench` (built where nvcc was found).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "eng_bench.h"
#include "eng.h"
#include "eng_check.h"
#include "eng_grid.h"
#include "eng_replay.h"
#include "eng_tp.h"
#include "eng_tp_run.h"
#include "harness.h"
#include "model.h"

/* The engine usage's paragraph on `engine profile`, its grid and its options. */
static void profile_usage(FILE *f)
{
    fprintf(f,
"profile times every op of steps over a grid of (sequences, q, cached kv, logits), and uneven\n"
"       Reuse steps (3 or 6 blocks of 32, the last over 2,048 or 4,096 cached keys, the others\n"
"       over 128 to 1,024: the attention's longest block apart from its total work), and, where\n"
"       the model's context reaches that far (SDAR-8B, not LLaDA-8B), Reuse steps over caches of\n"
"       8,192 and 16,384 keys, and Refresh steps that select a sparse cache (1 to 16 sequences of\n"
"       256 to 4,096 tokens keeping half of the rows before their last 32, one kept set for all\n"
"       heads or one per K/V head: the calibration's kv_select), and dLLM-Cache's steps over its\n"
"       feature cache (1 to 16 sequences of a 128- or 512-token prompt and a 64- to 1,024-token\n"
"       response: partial updates picked by the value check, response and whole refreshes; the\n"
"       calibration's feat_cache), and Reuse steps of every count of 32-token blocks from 3 to\n"
"       15 the base grid lacks (the GEMMs' steps where their rows spill into one more tile), and\n"
"       Reuse steps of 24 to 64 sequences of 8 or 32 rows over 128 to 1,024 cached keys (the\n"
"       attention's cost in the count of sequences past the base grid's 16)\n"
"       (--grid long, select, fc, ladder or batch: those alone, to add to a profile of the base grid\n"
"       through calib merge; base: the grid without them; all: every part [all]; --max-rows N:\n"
"       of those, the steps of at most N rows, the part a change to small steps' kernels touches,\n"
"       to replace through calib merge --over), and writes\n"
"       the rows, with GPU name, clocks, driver, CUDA and cuBLAS versions and the version of\n"
"       the engine's attention launch rules (attn_rules), into engine_profile\n"
"       (replacing that model's earlier rows on this GPU); each step runs --warmup [1] times\n"
"       untimed first, then again until its warm-up has taken --warm-ms [0] milliseconds (so\n"
"       that it is timed at the clock its own repetition holds, not the one the heavier steps\n"
"       before it in the sweep left under the power limit); --step (up to %d times) profiles\n"
"       those steps instead of the grid, each step's last sequence over KV_LONG cached keys\n"
"       instead where given (an uneven step): shapes of one's own, to merge into a calibration\n"
"       through calib merge (one step alone has too few rows for calib import)\n", ENG_PROFILE_MAX_STEPS);
}

const char eng_choices_usage[] =
"every engine command (and tessera sim --executor gpu) takes the engine's choices:\n"
"--attention mma|wgmma|auto  the attention kernel: auto (the default) runs segments of 96 or more\n"
"       query rows (Refresh, prefill) on the wgmma kernel (Hopper, head dim 128) and shorter ones\n"
"       (Reuse) on the mma.sync kernel, except a single segment of at most 128 rows over 2,048 keys\n"
"       or more (mma.sync, keys split over blocks); bench times every step with each kernel alone too\n"
"--ffn split|fused|auto  the FFN's gate/up GEMM: split (the default; what the shipped calibrations\n"
"       measured) writes the [rows, 2 ffn] product through cuBLASLt and reads it back for SwiGLU;\n"
"       fused computes SwiGLU in the epilogue of the engine's own Hopper GEMM (TMA, wgmma); auto\n"
"       fuses where that measured faster (64-128 rows, and 512 and up on an H200); bench times\n"
"       every step all three ways\n"
"--routing auto|router|balanced  a mixture of experts' experts: balanced (auto's choice on random\n"
"       weights) draws each row's k uniformly by a hash of its row, layer and expert; router (auto's\n"
"       on a checkpoint) takes the router's top k\n"
"--select-at end|layer  where sparse selections run: after the step's last layer (the default) or\n"
"       after each layer's attention\n"
"--kernels device|portable  portable runs the kernels of a GPU before Hopper on any device (no\n"
"       wgmma, TMA, clusters or programmatic launch) [device: the device's own]\n"
"--gemm-algos N  cuBLASLt's candidates a new GEMM shape's tuning times, 1 to 128 [16]\n";

int eng_choice_take(const char *cmd, const char *name, const char *value, struct sim_config *c)
{
    struct ts_err err;
    if (strcmp(name, "gemm-cache") == 0 && !*value) /* (the table's "" is "none": named, a file is wanted) */
        ts_fail(&err, "--gemm-cache: which file?");
    else if (cfg_option_set(cfg_option_find(name), value, c, &err) == 0)
        return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, err.msg);
    return EXIT_USAGE;
}

static void engine_usage(FILE *f)
{
    fprintf(f,
"usage: tessera engine check [--seed S] [--only kernels|steps|steps:K/N|select|fc|focus|moe|generate]\n"
"       tessera engine generate [--model NAME|config.json] [--weights PATH] [--decoder SPEC] ...\n"
"                               (tessera engine generate --help)\n"
"       tessera engine check --tp N [--seed S]\n"
"       tessera engine bench --tp N [--model NAME|config.json] [--reps N] [--json FILE]\n"
"                                   [--step SEGS,Q,KV,LOGIT_ROWS ...]\n"
"       tessera engine replay --tp N --db RUN.db [replay's options]\n"
"       tessera engine profile --tp N --db PROFILE.db [profile's options]\n"
"       tessera engine replay --db RUN.db [--run ID] [--steps N] [--mem-limit GB] [--weights PATH]\n"
"                             [--gemm-cache FILE] [--ops]\n"
"       tessera engine profile --db PROFILE.db [--model NAME] [--reps N] [--mem-limit GB]\n"
"                              [--gemm-cache FILE] [--warmup N] [--warm-ms MS]\n"
"                              [--grid all|base|long|select|fc|ladder|batch] [--max-rows N]\n"
"                              [--step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG] ...]\n"
"       tessera engine bench [--model NAME|config.json] [--reps N] [--max-num-logits N]\n"
"                            [--mem-limit GB] [--json FILE] [--only steps|gemm|attention|focus|anchor|clock]\n"
"                            [--weights PATH] [--gemm-cache FILE] [--warm-s S]\n"
"                            [--warm-trace FILE] [--idle-s S] [--step SEGS,Q,KV,LOGIT_ROWS ...]\n"
"                            [--anchor ANCHOR.jsonl]\n"
"\n"
"check  every kernel and whole steps of tiny models on the GPU against the CPU reference\n"
"       (normwise relative errors against bf16-appropriate bounds); exit 1 on any failure;\n"
"       --only kernels or --only steps runs one half (the sanitizers run them apart), --only\n"
"       steps:K/N the K-th of N parts of the steps half (its groups of checks dealt in turn); --only\n"
"       select the sparse selection's checks alone (kernels and whole steps), --only fc the\n"
"       feature cache's (dLLM-Cache), --only focus the token eviction's (FOCUS), --only moe the\n"
"       mixture of experts' (routing, dispatch, grouped expert GEMMs, whole steps of tiny MoE models),\n"
"       --only generate the unmasking kernel's and whole generations' (real token ids fed back)\n"
"generate  a diffusion generation with real token ids, its unmasking decided on the GPU: tokens per\n"
"       forward, redundancy and time of a decoder (threshold, hierarchical, topk); see its --help\n"
"bench  measures the GEMM and copy ceilings (and the GEMM's rate held for 2 s, as the power\n"
"       limit allows in long steps), then times Refresh and Reuse steps of the model\n"
"       [llada-8b, random weights] from CUDA graphs (median of N [20] replays and at least 1 s\n"
"       of them, after --warm-s [2] seconds of the step's own repetition) against their\n"
"       floors; each step also with only its linear layers and LM head (and the final norm,\n"
"       which keeps their replays' inputs bounded), and with all but them, and its variants\n"
"       (programmatic or plain launches, either attention kernel, the FFN split/fused/auto)\n"
"       replayed side by side; then the attention kernel alone, and the step workspace beside\n"
"       the simulator's activation estimate; --json appends one JSON object per result to FILE\n"
"       (analysis/bench-plot.sh draws it); --warm-trace FILE writes every replay's time,\n"
"       warm-up rounds included, as CSV (label, warm|timed, round, graph, seconds since the\n"
"       warm-up began, ms a replay: the clock settling under the power limit); --idle-s S idles\n"
"       the GPU S s before each warm-up, so that each trace starts cool (tessera calib clock fits\n"
"       the clock to it); --only clock: eight Refresh and Reuse steps (or the --step ones) alone,\n"
"       idle 3 s unless --idle-s says, traced into the --warm-trace FILE it needs; --step (up to 8\n"
"       times) benches these instead of the default four (Refresh 16 x 512, all or 256 logits;\n"
"       Reuse 1 and 16 x 32 over 480): SEGS sequences of Q query tokens (SEGS x Q up to 8192) over\n"
"       KV cached ones (a Refresh fills them), LOGIT_ROWS logits each, as the four but no anchor;\n"
"       --anchor FILE (the output of ../shared/anchors/torch_llada_step.py, best from the same\n"
"       machine and call) then times every shape the anchor ran, B sequences of T tokens: Refresh\n"
"       with logits for all tokens, Refresh with logits for the masked tail, Reuse of one 32-token\n"
"       block over the T - 32 before it; each against its floors, with its attention's share of\n"
"       an eager run, beside PyTorch eager's time (speed-up) and peak activations; --only anchor\n"
"       runs only that (without --anchor: the script's own grid, no PyTorch times); --only\n"
"       focus times FOCUS's eviction alone: 16, 32 and 64 blocks of 32 over 480 cached keys, whole\n"
"       beside steps keeping 2 to 32 rows after layer 1, each after its own warm-up, each beyond\n"
"       layer 1 against K / 32 + 0.15 of the whole block's (also run by a bench without --only)\n"
"--tp N (2 to 8) runs the command as N processes, one per GPU (GPUs 0 to N - 1), over NCCL; rank 0\n"
"       reports, and a rank that fails stops the others. check: LLaDA-8B, Dream-7B and LLaDA2.0-mini\n"
"       split over the N GPUs (heads, FFN, experts' widths and the LM head's vocabulary; an\n"
"       all-reduce after o_proj and after the FFN) against one GPU on the same weights, step by\n"
"       step: the final rows, the logits' maxima and confidences within 2e-2, and the same argmax\n"
"       but for near ties; bench: each step (Refresh 16 x 512 and Reuse 16 x 32 over 480, or\n"
"       --step's) replayed split and on one GPU, their ratio, and the all-reduce alone at the\n"
"       step's size with NCCL's bus bandwidth; replay: the run's steps on the N GPUs, rank 0\n"
"       writing engine_steps (beside `tessera sim --tp N`'s predictions); profile: the grid on the N\n"
"       GPUs, rank 0 writing its rows under the share's name (NAME-tpN, their all-reduces among the\n"
"       ops): a calibration of the split engine itself for `tessera sim --tp N --cost calibrated`\n"
"--gemm-cache FILE keeps each GEMM shape's chosen cuBLASLt algorithm in FILE (SQLite, created if\n"
"       missing): a shape found there is not timed again, a new choice is added, so every process\n"
"       sharing FILE runs the same algorithms (tessera sim --executor gpu's --gemm-cache too)\n"
"%s"
"--weights loads a safetensors checkpoint (a file or a directory of shards, Hugging Face names of\n"
"       the LLaMA/Qwen or LLaDA families) instead of random weights\n"
"replay executes the steps a simulation stored (tessera sim --db, without --no-steps) and\n"
"       writes each measured duration beside the predicted one into engine_steps (a step that\n"
"       meets a GEMM shape new to the process runs once untimed first); --ops also\n"
"       times each op of each step (one more run with an event after every op, scaled to the\n"
"       step's time) into engine_step_ops, which `tessera calib eval` then breaks down by op\n",
            eng_choices_usage);
    profile_usage(f);
}

_Static_assert(ENG_PROFILE_MAX_STEPS >= ENG_BENCH_MAX_STEPS, "engine_args.step_list holds every command's --step");

/* What `tessera engine SUB` was asked, its options parsed and range-checked. */
struct engine_args {
    const char *sub;
    int64_t seed, reps, chunk, run, steps, warmup, tp;
    long part, parts; /* check's --only steps:K/N (parts 0: all) */
    bool ops;
    double warm_ms, warm_s, idle_s, mem_gb;
    const char *warm_trace, *db, *weights, *model, *json, *only, *anchor;
    int32_t step_list[ENG_PROFILE_MAX_STEPS][5]; /* SEGS, Q, KV, LOGIT_ROWS, KV_LONG (profile's; 0: even) */
    int nstep;
    int grid; /* profile's --grid; -1: not given (all) */
    int64_t max_rows; /* profile's --max-rows; 0: not given */
    struct sim_config choices; /* the engine's choices as options set them (eng_choice_take) */
};

/* The --step options `engine SUB` takes at most. */
static int max_steps(const char *sub)
{
    return strcmp(sub, "profile") == 0 ? ENG_PROFILE_MAX_STEPS : ENG_BENCH_MAX_STEPS;
}

/* --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG] into st: -1 (said on stderr) when malformed or out of range
 * (st NULL: one more than SUB takes). */
static int parse_step(const char *sub, const char *text, int32_t *st)
{
    int n = 0, m = 0;
    bool bad = !st || sscanf(text, "%d,%d,%d,%d%n", &st[0], &st[1], &st[2], &st[3], &n) != 4;
    if (!bad) {
        st[4] = 0;
        if (text[n] == ',' && (sscanf(text + n, ",%d%n", &st[4], &m) != 1 || st[4] < 0 || st[0] < 2))
            bad = true;
        bad = bad || text[n + m] != '\0' || st[0] < 1 || st[1] < 1 || st[2] < 0 || st[3] < 0 || st[3] > st[1] ||
              (int64_t)st[0] * st[1] > 16384;
    }
    if (bad)
        fprintf(stderr, "tessera engine %s: --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG]: SEGS x Q up to 16384 "
                        "tokens, LOGIT_ROWS from 0 to Q, KV_LONG (2 or more SEGS) a count, at most %d steps\n",
                sub, max_steps(sub));
    return bad ? -1 : 0;
}

/* Parses argv (argv[0] the subcommand) into *a. Returns 0, 1 for --help (printed), or EXIT_USAGE
 * (said on stderr: the option and the value as written). */
static int parse_engine_args(int argc, char **argv, struct engine_args *a)
{
    static const struct option o[] = {{"seed", required_argument, 0, 's'},
                                      {"model", required_argument, 0, 'm'},
                                      {"reps", required_argument, 0, 'r'},
                                      {"max-num-logits", required_argument, 0, 'c'},
                                      {"mem-limit", required_argument, 0, 'M'},
                                      {"json", required_argument, 0, 'j'},
                                      {"only", required_argument, 0, 'o'},
                                      {"db", required_argument, 0, 'd'},
                                      {"run", required_argument, 0, 'R'},
                                      {"steps", required_argument, 0, 'S'},
                                      {"weights", required_argument, 0, 'w'},
                                      {"ops", no_argument, 0, 'O'},
                                      {"warmup", required_argument, 0, 'W'},
                                      {"warm-ms", required_argument, 0, 'X'},
                                      {"step", required_argument, 0, 'T'},
                                      {"warm-s", required_argument, 0, 'A'},
                                      {"warm-trace", required_argument, 0, 'B'},
                                      {"idle-s", required_argument, 0, 'I'},
                                      {"anchor", required_argument, 0, 'a'},
                                      {"grid", required_argument, 0, 'g'},
                                      {"max-rows", required_argument, 0, 'x'},
                                      {"tp", required_argument, 0, 'P'},
                                      ENG_CHOICE_OPTS,
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
    *a = (struct engine_args){.sub = argv[0], .seed = 1, .reps = 20, .chunk = 2048, .warmup = 1, .tp = 1,
                              .warm_s = ENG_WARM_S, .idle_s = -1, .model = "llada-8b", .grid = -1};
    sim_config_defaults(&a->choices);
    optind = 1;
    int c, idx = 0;
    opterr = 0; /* an unknown option is answered with the nearest (cli_getopt_error) */
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        bool bad = false;
        switch (c) {
        case 's': bad = ts_parse_i64(optarg, &a->seed) || a->seed < 0; break;
        case 'r': bad = ts_parse_i64(optarg, &a->reps) || a->reps < 1 || a->reps > 100000; break;
        case 'c': bad = ts_parse_i64(optarg, &a->chunk) || a->chunk < 1 || a->chunk > 1 << 20; break;
        case 'M': bad = ts_parse_double(optarg, &a->mem_gb) || a->mem_gb <= 0; break;
        case 'm': a->model = optarg; break;
        case 'j': a->json = optarg; break;
        case 'd': a->db = optarg; break;
        case 'w': a->weights = optarg; break;
        case 'O': a->ops = true; break;
        case 'W': bad = ts_parse_i64(optarg, &a->warmup) || a->warmup < 0 || a->warmup > 1000; break;
        case 'X': bad = ts_parse_double(optarg, &a->warm_ms) || !(a->warm_ms >= 0 && a->warm_ms <= 60000); break;
        case 'A': bad = ts_parse_double(optarg, &a->warm_s) || !(a->warm_s >= 0 && a->warm_s <= 600); break;
        case 'B': a->warm_trace = optarg; break;
        case 'I': bad = ts_parse_double(optarg, &a->idle_s) || !(a->idle_s >= 0 && a->idle_s <= 600); break;
        case 'a': a->anchor = optarg; break;
        case 'g': bad = (a->grid = grid_part_parse(optarg)) < 0; break;
        case 'x': bad = ts_parse_i64(optarg, &a->max_rows) || a->max_rows < 1 || a->max_rows > 16384; break;
        case 'P': bad = ts_parse_i64(optarg, &a->tp) || a->tp < 1 || a->tp > ENG_TP_MAX; break;
        case 'T':
            if (parse_step(a->sub, optarg, a->nstep < max_steps(a->sub) ? a->step_list[a->nstep] : NULL))
                return EXIT_USAGE;
            a->nstep++;
            break;
        case 'R': bad = ts_parse_i64(optarg, &a->run) || a->run < 1; break;
        case 'S': bad = ts_parse_i64(optarg, &a->steps) || a->steps < 1; break;
        case 'o':
            a->only = optarg;
            if (strcmp(a->sub, "check") == 0 && strncmp(optarg, "steps:", 6) == 0) { /* steps:K/N */
                char *end = NULL;
                a->part = strtol(optarg + 6, &end, 10);
                a->parts = *end == '/' ? strtol(end + 1, &end, 10) : 0;
                bad = *end || a->parts < 1 || a->parts > 64 || a->part < 1 || a->part > a->parts;
                a->only = "steps";
                break;
            }
            bad = strcmp(a->sub, "check") == 0 ? strcmp(optarg, "kernels") && strcmp(optarg, "steps") &&
                                                     strcmp(optarg, "select") && strcmp(optarg, "fc") &&
                                                     strcmp(optarg, "focus") && strcmp(optarg, "moe") &&
                                                     strcmp(optarg, "generate")
                                               : strcmp(optarg, "steps") && strcmp(optarg, "gemm") &&
                                                     strcmp(optarg, "attention") && strcmp(optarg, "anchor") &&
                                                     strcmp(optarg, "focus") && strcmp(optarg, "clock");
            break;
        case 'h': engine_usage(stdout); return 1;
        case ENG_CHOICE_OPT:
            if (eng_choice_take("engine", o[idx].name, optarg, &a->choices))
                return EXIT_USAGE;
            break;
        default: return cli_getopt_error("engine", c, argv, o);
        }
        if (bad) {
            fprintf(stderr, "tessera engine %s: --%s: bad value '%s' (see --help)\n", a->sub, o[idx].name, optarg);
            return EXIT_USAGE;
        }
    }
    if ((a->grid >= 0 || a->max_rows > 0) && strcmp(a->sub, "profile") != 0) {
        fprintf(stderr, "tessera engine %s: --%s is profile's\n", a->sub, a->grid >= 0 ? "grid" : "max-rows");
        return EXIT_USAGE;
    }
    return 0;
}

/* `engine bench`: its steps, anchor and output files checked before any GPU work. */
static int run_bench(const struct engine_args *a)
{
    struct eng_bench_opts bo = {.reps = (int)a->reps, .logit_chunk_rows = (int)a->chunk, .only = a->only,
                                .weights = a->weights, .mem_limit = (int64_t)(a->mem_gb * 1e9), .warm_s = a->warm_s,
                                .idle_s = a->idle_s >= 0 ? a->idle_s : a->only && strcmp(a->only, "clock") == 0 ? 3 : 0,
                                .nsteps = a->nstep};
    for (int k = 0; k < a->nstep; k++) {
        const int32_t *st = a->step_list[k];
        if (st[4] > 0) {
            fprintf(stderr, "tessera engine bench: --step %d,%d,%d,%d,%d: bench's steps are even (KV_LONG is "
                            "profile's)\n", st[0], st[1], st[2], st[3], st[4]);
            return EXIT_USAGE;
        }
        if ((int64_t)st[0] * st[1] > ENG_BENCH_MAX_TOKENS) {
            fprintf(stderr, "tessera engine bench: --step %d,%d,%d,%d: %d x %d tokens, more than the %d a "
                            "bench step holds\n", st[0], st[1], st[2], st[3], st[0], st[1], ENG_BENCH_MAX_TOKENS);
            return EXIT_USAGE;
        }
        memcpy(bo.steps[k], st, sizeof bo.steps[k]);
    }
    struct ts_err err;
    if (model_resolve(a->model, &bo.model, &err)) {
        fprintf(stderr, "tessera engine bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (a->only && strcmp(a->only, "clock") == 0 && !a->warm_trace) {
        fprintf(stderr, "tessera engine bench --only clock: its measurement is the warm trace: --warm-trace FILE\n");
        return EXIT_USAGE;
    }
    /* the anchor's shapes, read (and refused) before any GPU work */
    static struct anchor_run ar;
    if (a->anchor && a->only && strcmp(a->only, "anchor")) {
        fprintf(stderr, "tessera engine bench: --anchor with --only %s: the anchor's shapes run alone (--only "
                        "anchor) or after the whole bench\n", a->only);
        return EXIT_USAGE;
    }
    if (a->anchor) {
        if (anchor_load(a->anchor, &ar, &err)) {
            fprintf(stderr, "tessera engine bench: %s\n", err.msg);
            return EXIT_USAGE;
        }
        bo.anchor = &ar, bo.anchor_path = a->anchor;
    } else if (a->only && strcmp(a->only, "anchor") == 0) {
        anchor_default_grid(&ar);
        bo.anchor = &ar;
    }
    if (a->json && !(bo.json = fopen(a->json, "a"))) {
        fprintf(stderr, "tessera engine bench: %s: cannot open\n", a->json);
        return EXIT_USAGE;
    }
    if (a->warm_trace && !(bo.warm_trace = fopen(a->warm_trace, "w"))) {
        fprintf(stderr, "tessera engine bench: %s: cannot open\n", a->warm_trace);
        if (bo.json)
            fclose(bo.json);
        return EXIT_USAGE;
    }
    if (bo.warm_trace)
        fputs("label,phase,round,graph,t_s,ms\n", bo.warm_trace);
    int rc = eng_bench_run(&bo, stdout);
    if (bo.json)
        fclose(bo.json);
    if (bo.warm_trace)
        fclose(bo.warm_trace);
    return rc;
}

/* `engine profile`: the steps given (--step, LOGIT_ROWS 0 or Q) or the grid (--grid), not both. */
static int run_profile(const struct engine_args *a)
{
    struct model_cfg m;
    struct ts_err err;
    if (model_resolve(a->model, &m, &err)) {
        fprintf(stderr, "tessera engine profile: %s\n", err.msg);
        return EXIT_USAGE;
    }
    for (int k = 0; k < a->nstep; k++) {
        const int32_t *st = a->step_list[k];
        if (st[3] != 0 && st[3] != st[1]) {
            fprintf(stderr, "tessera engine profile: --step %d,%d,%d,%d: LOGIT_ROWS 0 or Q (a profile step's "
                            "logits are none or every row's)\n", st[0], st[1], st[2], st[3]);
            return EXIT_USAGE;
        }
    }
    if (a->nstep > 0 && (a->grid >= 0 || a->max_rows > 0)) {
        fprintf(stderr, "tessera engine profile: --step and --%s: the steps given, or a grid\n",
                a->grid >= 0 ? "grid" : "max-rows");
        return EXIT_USAGE;
    }
    return eng_profile_run(&m, a->db, (int)TS_MIN(a->reps, 5), (int)a->warmup, a->warm_ms,
                           (const int32_t(*)[5])a->step_list, a->nstep, a->grid < 0 ? GRID_ALL : a->grid,
                           a->max_rows, a->mem_gb, stdout);
}

/* `engine check --tp N` and `engine bench --tp N`: outside a launch, the launch of N ranks running
 * this command (argv: "engine" and its arguments); inside, the rank's part. */
static int run_tp(const struct engine_args *a, int argc, char **argv)
{
    const bool bench = strcmp(a->sub, "bench") == 0, replay = strcmp(a->sub, "replay") == 0,
               profile = strcmp(a->sub, "profile") == 0;
    if (!bench && !replay && !profile && strcmp(a->sub, "check") != 0) {
        fprintf(stderr, "tessera engine %s: --tp is check's, bench's, replay's and profile's (and tessera sim "
                        "--executor gpu's)\n", a->sub);
        return EXIT_USAGE;
    }
    if ((replay || profile) && !a->db) {
        fprintf(stderr, "tessera engine %s: which database? (--db FILE)\n", a->sub);
        return EXIT_USAGE;
    }
    if (a->only || a->anchor || a->warm_trace || a->idle_s > 0 || (a->weights && !replay) || (!bench && !profile && a->nstep)) {
        fprintf(stderr, "tessera engine %s --tp: --only, --anchor, --weights, --warm-trace, --idle-s%s run on one GPU\n",
                a->sub, bench ? "" : " and --step");
        return EXIT_USAGE;
    }
    struct eng_tp_bench_opts bo = {.size = (int)a->tp, .reps = (int)a->reps, .nsteps = a->nstep};
    struct ts_err err;
    if (bench && model_resolve(a->model, &bo.model, &err)) {
        fprintf(stderr, "tessera engine bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    for (int k = 0; k < a->nstep; k++) {
        if (a->step_list[k][4] > 0 || (int64_t)a->step_list[k][0] * a->step_list[k][1] > ENG_BENCH_MAX_TOKENS) {
            fprintf(stderr, "tessera engine bench --tp: --step: even steps of up to %d tokens\n", ENG_BENCH_MAX_TOKENS);
            return EXIT_USAGE;
        }
        memcpy(bo.steps[k], a->step_list[k], sizeof bo.steps[k]);
    }
    int rank, size;
    unsigned char id[ENG_TP_ID_BYTES];
    if (eng_tp_env(&rank, &size, id, &err)) {
        fprintf(stderr, "tessera engine: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (size == 1) /* the launcher: this very command, once per GPU */
        return eng_tp_launch((int)a->tp, argc, argv);
    if (replay)
        return eng_replay_run(a->db, a->run, a->steps, a->mem_gb, a->weights, a->ops, stdout);
    if (profile)
        return run_profile(a);
    if (!bench) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        return eng_tp_check_run((int)a->tp, (uint64_t)a->seed, stdout);
    }
    if (a->json && rank == 0 && !(bo.json = fopen(a->json, "a"))) {
        fprintf(stderr, "tessera engine bench: %s: cannot open\n", a->json);
        return EXIT_USAGE;
    }
    int rc = eng_tp_bench_run(&bo, stdout);
    if (bo.json)
        fclose(bo.json);
    return rc;
}

int cli_engine(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        engine_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "generate") == 0)
        return eng_generate_main(argc - 1, argv + 1);
    struct engine_args a;
    int rc = parse_engine_args(argc - 1, argv + 1, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct eng_choices ch;
    eng_choices_of(&a.choices, &ch);
    eng_set_choices(&ch);
    if (a.tp > 1)
        return run_tp(&a, argc, argv);
    if (strcmp(a.sub, "check") == 0) {
        /* a line a check, kept whole when a sanitizer's time limit kills the run */
        setvbuf(stdout, NULL, _IOLBF, 0);
        return eng_check_run((uint64_t)a.seed, a.only, (int)a.part, (int)a.parts, stdout);
    }
    if (strcmp(a.sub, "bench") == 0)
        return run_bench(&a);
    if (strcmp(a.sub, "replay") == 0 || strcmp(a.sub, "profile") == 0) {
        if (!a.db) {
            fprintf(stderr, "tessera engine %s: which database? (--db FILE)\n", a.sub);
            return EXIT_USAGE;
        }
        return a.sub[1] == 'e' ? eng_replay_run(a.db, a.run, a.steps, a.mem_gb, a.weights, a.ops, stdout)
                               : run_profile(&a);
    }
    fprintf(stderr, "tessera engine: unknown subcommand '%s' (check, bench, replay, profile, generate)\n", a.sub);
    return EXIT_USAGE;
}
