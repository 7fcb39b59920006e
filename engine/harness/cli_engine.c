/*
 * cli_engine.c: `tessera engine replay | profile | generate` (built where nvcc was found). The
 * engine's GPU test suite and its benchmark are programs of their own: tests/gpu/check_engine_main.c
 * and engine/bench/engine_bench_main.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "eng.h"
#include "eng_grid.h"
#include "eng_replay.h"
#include "eng_tp.h"
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

static void engine_usage(FILE *f)
{
    fprintf(f,
"usage: tessera engine generate [--model NAME|config.json] [--weights PATH] [--decoder SPEC] ...\n"
"                               (tessera engine generate --help)\n"
"       tessera engine replay --tp N --db RUN.db [replay's options]\n"
"       tessera engine profile --tp N --db PROFILE.db [profile's options]\n"
"       tessera engine replay --db RUN.db [--run ID] [--steps N] [--mem-limit GB] [--weights PATH]\n"
"                             [--gemm-cache FILE] [--ops]\n"
"       tessera engine profile --db PROFILE.db [--model NAME] [--reps N] [--mem-limit GB]\n"
"                              [--gemm-cache FILE] [--warmup N] [--warm-ms MS]\n"
"                              [--grid all|base|long|select|fc|ladder|batch] [--max-rows N]\n"
"                              [--step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG] ...]\n"
"\n"
"generate  a diffusion generation with real token ids, its unmasking decided on the GPU: tokens per\n"
"       forward, redundancy and time of a decoder (threshold, hierarchical, topk); see its --help\n"
"--tp N (2 to 8) runs the command as N processes, one per GPU (GPUs 0 to N - 1), over NCCL; rank 0\n"
"       reports, and a rank that fails stops the others. replay: the run's steps on the N GPUs, rank 0\n"
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
"       step's time) into engine_step_ops, which `tessera calib eval` then breaks down by op\n"
"The engine's GPU test suite and its benchmark are programs of their own: build/tests/gpu/check_engine\n"
"(make check-gpu) and build/engine_bench (make bench-engine); each takes --help.\n",
            eng_choices_usage);
    profile_usage(f);
}

/* What `tessera engine SUB` was asked, its options parsed and range-checked. */
struct engine_args {
    const char *sub;
    int64_t reps, run, steps, warmup, tp;
    bool ops;
    double warm_ms, mem_gb;
    const char *db, *weights, *model;
    int32_t step_list[ENG_PROFILE_MAX_STEPS][5]; /* SEGS, Q, KV, LOGIT_ROWS, KV_LONG (profile's; 0: even) */
    int nstep;
    int grid; /* profile's --grid; -1: not given (all) */
    int64_t max_rows; /* profile's --max-rows; 0: not given */
    struct sim_config choices; /* the engine's choices as options set them (eng_choice_take) */
    struct eng_choices engine_choices; /* the same for the engine (eng_choices_of) */
};

int eng_parse_step(const char *cmd, int max, const char *text, int32_t *st)
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
        fprintf(stderr, "%s: --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG]: SEGS x Q up to 16384 tokens, LOGIT_ROWS from 0 "
                        "to Q, KV_LONG (2 or more SEGS) a count, at most %d steps\n", cmd, max);
    return bad ? -1 : 0;
}

/* Parses argv (argv[0] the subcommand) into *a. Returns 0, 1 for --help (printed), or EXIT_USAGE
 * (said on stderr: the option and the value as written). */
static int parse_engine_args(int argc, char **argv, struct engine_args *a)
{
    static const struct option o[] = {{"model", required_argument, 0, 'm'},
                                      {"reps", required_argument, 0, 'r'},
                                      {"mem-limit", required_argument, 0, 'M'},
                                      {"db", required_argument, 0, 'd'},
                                      {"run", required_argument, 0, 'R'},
                                      {"steps", required_argument, 0, 'S'},
                                      {"weights", required_argument, 0, 'w'},
                                      {"ops", no_argument, 0, 'O'},
                                      {"warmup", required_argument, 0, 'W'},
                                      {"warm-ms", required_argument, 0, 'X'},
                                      {"step", required_argument, 0, 'T'},
                                      {"grid", required_argument, 0, 'g'},
                                      {"max-rows", required_argument, 0, 'x'},
                                      {"tp", required_argument, 0, 'P'},
                                      ENG_CHOICE_OPTS,
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
    *a = (struct engine_args){.sub = argv[0], .reps = 20, .warmup = 1, .tp = 1, .model = MODEL_DEFAULT, .grid = -1};
    sim_config_defaults(&a->choices);
    optind = 1;
    int c, idx = 0;
    opterr = 0; /* an unknown option is answered with the nearest (cli_getopt_error) */
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        bool bad = false;
        switch (c) {
        case 'r': bad = ts_parse_i64(optarg, &a->reps) || a->reps < 1 || a->reps > 100000; break;
        case 'M': bad = ts_parse_double(optarg, &a->mem_gb) || a->mem_gb <= 0; break;
        case 'm': a->model = optarg; break;
        case 'd': a->db = optarg; break;
        case 'w': a->weights = optarg; break;
        case 'O': a->ops = true; break;
        case 'W': bad = ts_parse_i64(optarg, &a->warmup) || a->warmup < 0 || a->warmup > 1000; break;
        case 'X': bad = ts_parse_double(optarg, &a->warm_ms) || !(a->warm_ms >= 0 && a->warm_ms <= 60000); break;
        case 'g': bad = (a->grid = grid_part_parse(optarg)) < 0; break;
        case 'x': bad = ts_parse_i64(optarg, &a->max_rows) || a->max_rows < 1 || a->max_rows > 16384; break;
        case 'P': bad = ts_parse_i64(optarg, &a->tp) || a->tp < 1 || a->tp > ENG_TP_MAX; break;
        case 'T':
            if (eng_parse_step("tessera engine profile", ENG_PROFILE_MAX_STEPS, optarg,
                               a->nstep < ENG_PROFILE_MAX_STEPS ? a->step_list[a->nstep] : NULL))
                return EXIT_USAGE;
            a->nstep++;
            break;
        case 'R': bad = ts_parse_i64(optarg, &a->run) || a->run < 1; break;
        case 'S': bad = ts_parse_i64(optarg, &a->steps) || a->steps < 1; break;
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
    if ((a->grid >= 0 || a->max_rows > 0 || a->nstep > 0) && strcmp(a->sub, "profile") != 0) {
        fprintf(stderr, "tessera engine %s: --%s is profile's\n", a->sub,
                a->grid >= 0 ? "grid" : a->max_rows > 0 ? "max-rows" : "step");
        return EXIT_USAGE;
    }
    return 0;
}

/* `engine replay` */
static int run_replay(const struct engine_args *a)
{
    return eng_replay_run(a->db, a->run, a->steps, a->mem_gb, a->weights, a->ops, &a->engine_choices, stdout);
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
                           a->max_rows, a->mem_gb, &a->engine_choices, stdout);
}

/* `engine replay --tp N` and `engine profile --tp N`: outside a launch, the launch of N ranks running
 * this command (argv: "engine" and its arguments); inside, the rank's part. */
static int run_tp(const struct engine_args *a, int argc, char **argv)
{
    if (a->weights && strcmp(a->sub, "replay") != 0) {
        fprintf(stderr, "tessera engine %s --tp: --weights runs on one GPU\n", a->sub);
        return EXIT_USAGE;
    }
    int rank;
    const int in = eng_tp_in_launch("tessera engine", &rank);
    if (in < 0)
        return EXIT_USAGE;
    if (!in) /* the launcher: this very command, once per GPU */
        return eng_tp_launch((int)a->tp, argc, argv);
    return strcmp(a->sub, "replay") == 0 ? run_replay(a) : run_profile(a);
}

int cli_engine(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        engine_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "generate") == 0)
        return eng_generate_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "replay") != 0 && strcmp(argv[1], "profile") != 0) {
        fprintf(stderr, "tessera engine: unknown subcommand '%s' (replay, profile, generate; the GPU test suite and "
                        "the benchmark are build/tests/gpu/check_engine and build/engine_bench)\n", argv[1]);
        return EXIT_USAGE;
    }
    struct engine_args a;
    int rc = parse_engine_args(argc - 1, argv + 1, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    eng_choices_of(&a.choices, &a.engine_choices);
    if (!a.db) {
        fprintf(stderr, "tessera engine %s: which database? (--db FILE)\n", a.sub);
        return EXIT_USAGE;
    }
    if (a.tp > 1)
        return run_tp(&a, argc, argv);
    return strcmp(a.sub, "replay") == 0 ? run_replay(&a) : run_profile(&a);
}
