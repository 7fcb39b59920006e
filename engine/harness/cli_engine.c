/*
 * cli_engine.c: `tessera engine check | bench` (built where nvcc was found).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eng_bench.h"
#include "eng.h"
#include "eng_check.h"
#include "eng_grid.h"
#include "eng_replay.h"
#include "model.h"

static void engine_usage(FILE *f)
{
    fprintf(f,
"usage: tessera engine check [--seed S]\n"
"       tessera engine replay --db RUN.db [--run ID] [--steps N] [--mem-limit GB] [--weights PATH]\n"
"                             [--gemm-cache FILE] [--ops]\n"
"       tessera engine profile --db PROFILE.db [--model NAME] [--reps N] [--mem-limit GB]\n"
"                              [--gemm-cache FILE] [--warmup N] [--warm-ms MS]\n"
"                              [--grid all|base|long] [--step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG]]\n"
"       tessera engine bench [--model NAME|config.json] [--reps N] [--max-num-logits N]\n"
"                            [--mem-limit GB] [--json FILE] [--only steps|gemm|attention|anchor]\n"
"                            [--weights PATH] [--gemm-cache FILE] [--warm-s S]\n"
"                            [--warm-trace FILE] [--step SEGS,Q,KV,LOGIT_ROWS ...]\n"
"                            [--anchor ANCHOR.jsonl]\n"
"\n"
"check  every kernel and whole steps of tiny models on the GPU against the CPU reference\n"
"       (normwise relative errors against bf16-appropriate bounds); exit 1 on any failure\n"
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
"       warm-up began, ms a replay: the clock settling under the power limit); --step (up to 8\n"
"       times) benches these steps instead of the issue's four: SEGS sequences of Q query\n"
"       tokens (SEGS x Q up to 8192) over KV cached ones (filled by a Refresh first), with\n"
"       LOGIT_ROWS logits each, every measurement as for the four but no PyTorch anchor;\n"
"       --anchor FILE (the output of ../shared/anchors/torch_llada_step.py, best from the same\n"
"       machine and call) then times every shape the anchor ran, B sequences of T tokens: Refresh\n"
"       with logits for all tokens, Refresh with logits for the masked tail, Reuse of one 32-token\n"
"       block over the T - 32 before it; each against its floors, with its attention's share of\n"
"       an eager run, beside PyTorch eager's time (speed-up) and peak activations; --only anchor\n"
"       runs only that (without --anchor: the script's own grid, no PyTorch times)\n"
"--gemm-cache FILE keeps each GEMM shape's chosen cuBLASLt algorithm in FILE (SQLite, created if\n"
"       missing): a shape found there is not timed again, a new choice is added, so every process\n"
"       sharing FILE runs the same algorithms (the same as TESSERA_GEMM_CACHE=FILE, which also\n"
"       reaches `tessera sim --executor gpu` and `tessera mem lmax --live`)\n"
"TESSERA_ATTENTION=mma|wgmma|auto picks the attention kernel of any engine command: auto (the\n"
"       default) runs segments of 96 or more query rows (Refresh, prefill) on the wgmma kernel\n"
"       (Hopper, head dim 128) and shorter ones (Reuse) on the mma.sync kernel, except a single\n"
"       segment of at most 128 rows over 2,048 keys or more (mma.sync, keys split over blocks);\n"
"       bench times every step with each kernel alone as well\n"
"TESSERA_FFN=split|fused|auto picks the FFN's gate/up GEMM: split (the default; what the shipped\n"
"       calibrations measured) writes the [rows, 2 ffn] product through cuBLASLt and reads it back\n"
"       for SwiGLU; fused computes SwiGLU in the epilogue of the engine's own Hopper GEMM (TMA,\n"
"       wgmma) and writes only its [rows, ffn] result; auto fuses where that measured faster (64-128\n"
"       rows, and row counts whose tiles fill the GPU: 512 and up on an H200); bench times every\n"
"       step all three ways\n"
"--weights loads a safetensors checkpoint (a file or a directory of shards, Hugging Face names of\n"
"       the LLaMA/Qwen or LLaDA families) instead of random weights\n"
"replay executes the steps a simulation stored (tessera sim --db, without --no-steps) and\n"
"       writes each measured duration beside the predicted one into engine_steps (a step that\n"
"       meets a GEMM shape new to the process runs once untimed first); --ops also\n"
"       times each op of each step (one more run with an event after every op, scaled to the\n"
"       step's time) into engine_step_ops, which `tessera calib eval` then breaks down by op\n"
"profile times every op of steps over a grid of (sequences, q, cached kv, logits), and uneven\n"
"       Reuse steps (3 or 6 blocks of 32, the last over 2,048 or 4,096 cached keys, the others\n"
"       over 128 to 1,024: the attention's longest block apart from its total work), and, where\n"
"       the model's context reaches that far (SDAR-8B, not LLaDA-8B), Reuse steps over caches of\n"
"       8,192 and 16,384 keys (--grid long: those alone, to add to a profile of the base grid\n"
"       through calib merge; base: the grid without them; all: both [all]), and writes\n"
"       the rows, with GPU name, clocks, driver, CUDA and cuBLAS versions and the version of\n"
"       the engine's attention launch rules (attn_rules), into engine_profile\n"
"       (replacing that model's earlier rows on this GPU); each step runs --warmup [1] times\n"
"       untimed first, then again until its warm-up has taken --warm-ms [0] milliseconds (so\n"
"       that it is timed at the clock its own repetition holds, not the one the heavier steps\n"
"       before it in the sweep left under the power limit); --step profiles that one step\n"
"       instead of the grid (a diagnostic: too few rows for calib import), its last sequence\n"
"       over KV_LONG cached keys instead where given (an uneven step)\n");
}

int cli_engine(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        engine_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    const char *sub = argv[1];
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
                                      {"gemm-cache", required_argument, 0, 'G'},
                                      {"ops", no_argument, 0, 'O'},
                                      {"warmup", required_argument, 0, 'W'},
                                      {"warm-ms", required_argument, 0, 'X'},
                                      {"step", required_argument, 0, 'T'},
                                      {"warm-s", required_argument, 0, 'A'},
                                      {"warm-trace", required_argument, 0, 'B'},
                                      {"anchor", required_argument, 0, 'a'},
                                      {"grid", required_argument, 0, 'g'},
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
    int64_t seed = 1, reps = 20, chunk = 2048, run = 0, steps = 0;
    bool ops = false;
    int64_t warmup = 1;
    double warm_ms = 0, warm_s = ENG_WARM_S;
    const char *warm_trace = NULL;
    int32_t step_list[ENG_BENCH_MAX_STEPS][5]; /* SEGS, Q, KV, LOGIT_ROWS, KV_LONG (profile's; 0: even) */
    int nstep = 0;
    const char *db = NULL, *weights = NULL;
    double mem_gb = 0;
    const char *model = "llada-8b", *json = NULL, *only = NULL, *anchor = NULL;
    int grid = -1; /* profile's --grid; -1: not given (all) */
    optind = 1;
    int c;
    while ((c = getopt_long(argc - 1, argv + 1, "h", o, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 's': bad = ts_parse_i64(optarg, &seed) || seed < 0; break;
        case 'r': bad = ts_parse_i64(optarg, &reps) || reps < 1 || reps > 100000; break;
        case 'c': bad = ts_parse_i64(optarg, &chunk) || chunk < 1 || chunk > 1 << 20; break;
        case 'M': bad = ts_parse_double(optarg, &mem_gb) || mem_gb <= 0; break;
        case 'm': model = optarg; break;
        case 'j': json = optarg; break;
        case 'd': db = optarg; break;
        case 'w': weights = optarg; break;
        case 'O': ops = true; break;
        case 'W': bad = ts_parse_i64(optarg, &warmup) || warmup < 0 || warmup > 1000; break;
        case 'X': bad = ts_parse_double(optarg, &warm_ms) || !(warm_ms >= 0 && warm_ms <= 60000); break;
        case 'A': bad = ts_parse_double(optarg, &warm_s) || !(warm_s >= 0 && warm_s <= 600); break;
        case 'B': warm_trace = optarg; break;
        case 'a': anchor = optarg; break;
        case 'g': bad = (grid = grid_part_parse(optarg)) < 0; break;
        case 'T': {
            int n = 0, m = 0, *st = nstep < ENG_BENCH_MAX_STEPS ? step_list[nstep] : NULL;
            bad = !st || sscanf(optarg, "%d,%d,%d,%d%n", &st[0], &st[1], &st[2], &st[3], &n) != 4;
            if (!bad) {
                st[4] = 0;
                if (optarg[n] == ',' && (sscanf(optarg + n, ",%d%n", &st[4], &m) != 1 || st[4] < 0 || st[0] < 2))
                    bad = 1;
                bad = bad || optarg[n + m] != '\0' || st[0] < 1 || st[1] < 1 || st[2] < 0 || st[3] < 0 ||
                      st[3] > st[1] || (int64_t)st[0] * st[1] > 16384;
            }
            if (bad)
                fprintf(stderr, "tessera engine %s: --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG]: SEGS x Q up to 16384 "
                                "tokens, LOGIT_ROWS from 0 to Q, KV_LONG (2 or more SEGS) a count, at most %d "
                                "steps\n", sub, ENG_BENCH_MAX_STEPS);
            nstep++;
            break;
        }
        case 'G': bad = !*optarg || setenv("TESSERA_GEMM_CACHE", optarg, 1) != 0; break;
        case 'R': bad = ts_parse_i64(optarg, &run) || run < 1; break;
        case 'S': bad = ts_parse_i64(optarg, &steps) || steps < 1; break;
        case 'o':
            only = optarg;
            bad = strcmp(only, "steps") && strcmp(only, "gemm") && strcmp(only, "attention") && strcmp(only, "anchor");
            break;
        case 'h': engine_usage(stdout); return 0;
        default: fprintf(stderr, "tessera engine: see --help\n"); return EXIT_USAGE;
        }
        if (bad) {
            fprintf(stderr, "tessera engine %s: bad value '%s'\n", sub, optarg);
            return EXIT_USAGE;
        }
    }
    if (grid >= 0 && strcmp(sub, "profile") != 0) {
        fprintf(stderr, "tessera engine %s: --grid is profile's\n", sub);
        return EXIT_USAGE;
    }
    if (strcmp(sub, "check") == 0)
        return eng_check_run((uint64_t)seed, stdout);
    if (strcmp(sub, "bench") == 0) {
        struct eng_bench_opts bo = {.reps = (int)reps, .logit_chunk_rows = (int)chunk, .only = only, .weights = weights,
                                    .mem_limit = (int64_t)(mem_gb * 1e9), .warm_s = warm_s, .nsteps = nstep};
        for (int k = 0; k < nstep; k++) {
            if (step_list[k][4] > 0) {
                fprintf(stderr, "tessera engine bench: --step %d,%d,%d,%d,%d: bench's steps are even (KV_LONG is "
                                "profile's)\n", step_list[k][0], step_list[k][1], step_list[k][2], step_list[k][3],
                        step_list[k][4]);
                return EXIT_USAGE;
            }
            if ((int64_t)step_list[k][0] * step_list[k][1] > ENG_BENCH_MAX_TOKENS) {
                fprintf(stderr, "tessera engine bench: --step %d,%d,%d,%d: %d x %d tokens, more than the %d a "
                                "bench step holds\n", step_list[k][0], step_list[k][1], step_list[k][2],
                        step_list[k][3], step_list[k][0], step_list[k][1], ENG_BENCH_MAX_TOKENS);
                return EXIT_USAGE;
            }
            memcpy(bo.steps[k], step_list[k], sizeof bo.steps[k]);
        }
        struct ts_err err;
        if (model_resolve(model, &bo.model, &err)) {
            fprintf(stderr, "tessera engine bench: %s\n", err.msg);
            return EXIT_USAGE;
        }
        /* the anchor's shapes, read (and refused) before any GPU work */
        static struct anchor_run ar;
        if (anchor && only && strcmp(only, "anchor")) {
            fprintf(stderr, "tessera engine bench: --anchor with --only %s: the anchor's shapes run alone (--only "
                            "anchor) or after the whole bench\n", only);
            return EXIT_USAGE;
        }
        if (anchor) {
            if (anchor_load(anchor, &ar, &err)) {
                fprintf(stderr, "tessera engine bench: %s\n", err.msg);
                return EXIT_USAGE;
            }
            bo.anchor = &ar, bo.anchor_path = anchor;
        } else if (only && strcmp(only, "anchor") == 0) {
            anchor_default_grid(&ar);
            bo.anchor = &ar;
        }
        if (json && !(bo.json = fopen(json, "a"))) {
            fprintf(stderr, "tessera engine bench: %s: cannot open\n", json);
            return EXIT_USAGE;
        }
        if (warm_trace && !(bo.warm_trace = fopen(warm_trace, "w"))) {
            fprintf(stderr, "tessera engine bench: %s: cannot open\n", warm_trace);
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
    if (strcmp(sub, "replay") == 0 || strcmp(sub, "profile") == 0) {
        if (!db) {
            fprintf(stderr, "tessera engine %s: which database? (--db FILE)\n", sub);
            return EXIT_USAGE;
        }
        if (sub[1] == 'e')
            return eng_replay_run(db, run, steps, mem_gb, weights, ops, stdout);
        struct model_cfg m;
        struct ts_err err;
        if (model_resolve(model, &m, &err)) {
            fprintf(stderr, "tessera engine profile: %s\n", err.msg);
            return EXIT_USAGE;
        }
        if (nstep > 1 || (nstep == 1 && step_list[0][3] != 0 && step_list[0][3] != step_list[0][1])) {
            fprintf(stderr, "tessera engine profile: --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG]: one step, LOGIT_ROWS "
                            "0 or Q\n");
            return EXIT_USAGE;
        }
        if (nstep == 1 && grid >= 0) {
            fprintf(stderr, "tessera engine profile: --step and --grid: one step, or a grid\n");
            return EXIT_USAGE;
        }
        return eng_profile_run(&m, db, (int)TS_MIN(reps, 5), (int)warmup, warm_ms, nstep ? step_list[0] : NULL,
                               grid < 0 ? GRID_ALL : grid, mem_gb, stdout);
    }
    fprintf(stderr, "tessera engine: unknown subcommand '%s' (check, bench, replay, profile)\n", sub);
    return EXIT_USAGE;
}
