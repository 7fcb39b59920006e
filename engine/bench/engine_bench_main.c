/*
 * engine_bench_main.c: the engine's benchmark as a program (build/engine_bench, linked against the
 * engine library; make bench-engine, engine/calibrate.sh): its options, checked before any GPU work,
 * and --tp's launch.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "eng.h"
#include "kernels.h"
#include "eng_tp.h"
#include "engine_bench.h"
#include "harness.h"
#include "model.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: engine_bench [--model NAME|config.json] [--reps N] [--max-num-logits N] [--mem-limit GB]\n"
"                    [--json FILE] [--only steps|gemm|attention|focus|anchor|clock|peer|host]\n"
"                    [--weights PATH] [--warm-s S] [--warm-trace FILE] [--idle-s S]\n"
"                    [--step SEGS,Q,KV,LOGIT_ROWS ...] [--anchor ANCHOR.jsonl] [engine choices]\n"
"       engine_bench --tp N [--model NAME|config.json] [--reps N] [--json FILE]\n"
"                    [--step SEGS,Q,KV,LOGIT_ROWS ...] [engine choices]\n"
"\n"
"Measures the GEMM and copy ceilings (and the GEMM's rate held for 2 s, as the power limit allows\n"
"in long steps), then times Refresh and Reuse steps of the model [llada-8b, random weights] from\n"
"CUDA graphs (median of N [20] replays and at least 1 s of them, after --warm-s [2] seconds of the\n"
"step's own repetition) against their floors; each step also with only its linear layers and LM\n"
"head (and the final norm, which keeps their replays' inputs bounded), and with all but them, and\n"
"its variants (programmatic or plain launches, either attention kernel, the FFN split/fused/auto)\n"
"replayed side by side; then the attention kernel alone, and the step workspace beside the\n"
"simulator's activation estimate.\n"
"--json appends one JSON object per result to FILE (analysis/bench-plot.sh draws it)\n"
"--warm-trace FILE writes every replay's time, warm-up rounds included, as CSV (label, warm|timed,\n"
"       round, graph, seconds since the warm-up began, ms a replay: the clock settling under the\n"
"       power limit)\n"
"--idle-s S idles the GPU S s before each warm-up, so that each trace starts cool (tessera calib\n"
"       clock fits the clock to it)\n"
"--only clock: eight Refresh and Reuse steps (or the --step ones) alone, idle 3 s unless --idle-s\n"
"       says, traced into the --warm-trace FILE it needs; --only gemm: the ceilings and the model's\n"
"       GEMMs at several row counts; --only steps, --only attention: the steps, the kernel alone\n"
"--step (up to 8 times) benches these instead of the default four (Refresh 16 x 512, all or 256\n"
"       logits; Reuse 1 and 16 x 32 over 480): SEGS sequences of Q query tokens (SEGS x Q up to\n"
"       8192) over KV cached ones (a Refresh fills them), LOGIT_ROWS logits each\n"
"--anchor FILE (the output of ../shared/anchors/torch_llada_step.py, best from the same machine\n"
"       and call) then times every shape the anchor ran, B sequences of T tokens: Refresh with\n"
"       logits for all tokens, Refresh with logits for the masked tail, Reuse of one 32-token block\n"
"       over the T - 32 before it; each against its floors, with its attention's share of an eager\n"
"       run, beside PyTorch eager's time (speed-up) and peak activations; --only anchor runs only\n"
"       that (without --anchor: the script's own grid, no PyTorch times)\n"
"--only peer: the link between GPUs 0 and 1 (a disaggregated fleet's host link, sim/fleet/fleet.c): copies\n"
"       of 4 KiB to 1 GiB from GPU 0 to GPU 1, timed on the sender: GB/s, and the small ones' time\n"
"--only host: the host link (pinned copies of 4 KiB to 1 GiB each way, a pageable one) and the\n"
"       host's memory read over 1, 2, 4 .. its cores threads: offloaded K/V's (the policy herald);\n"
"       then HERALD's host part as a live run does it on SDAR-8B's K/V: scoring every token's keys\n"
"       over 16 threads (the rate to give --herald-scan-gbs) and the top tenth's K and V gathered\n"
"       to the GPU, read from mapped memory and by a copy a token\n"
"--only focus times FOCUS's eviction alone: 16, 32 and 64 blocks of 32 over 480 cached keys, whole\n"
"       beside steps keeping 2 to 32 rows after layer 1, each after its own warm-up, each beyond\n"
"       layer 1 against K / 32 + 0.15 of the whole block's (also run without --only)\n"
"--weights loads a safetensors checkpoint (a file or a directory of shards) instead of random weights\n"
"--tp N (2 to 8) runs as N processes, one per GPU, over NCCL (rank 0 reports): each step (Refresh\n"
"       16 x 512 and Reuse 16 x 32 over 480, or --step's) replayed split and on one GPU, their\n"
"       ratio, and the all-reduce alone at the step's size with NCCL's bus bandwidth\n"
"%s",
            eng_choices_usage);
}

/* What was asked, its options parsed and range-checked. */
struct bench_args {
    int64_t reps, chunk, tp;
    double warm_s, idle_s, mem_gb;
    const char *warm_trace, *weights, *model, *json, *only, *anchor;
    int32_t steps[ENG_BENCH_MAX_STEPS][5];
    int nsteps;
    struct sim_config choices; /* the engine's choices as options set them (eng_choice_take) */
};

/* Returns 0, 1 for --help (printed), or EXIT_USAGE (said on stderr). */
static int parse_args(int argc, char **argv, struct bench_args *a)
{
    static const struct option o[] = {{"model", required_argument, 0, 'm'},
                                      {"reps", required_argument, 0, 'r'},
                                      {"max-num-logits", required_argument, 0, 'c'},
                                      {"mem-limit", required_argument, 0, 'M'},
                                      {"json", required_argument, 0, 'j'},
                                      {"only", required_argument, 0, 'o'},
                                      {"weights", required_argument, 0, 'w'},
                                      {"step", required_argument, 0, 'T'},
                                      {"warm-s", required_argument, 0, 'A'},
                                      {"warm-trace", required_argument, 0, 'B'},
                                      {"idle-s", required_argument, 0, 'I'},
                                      {"anchor", required_argument, 0, 'a'},
                                      {"tp", required_argument, 0, 'P'},
                                      ENG_CHOICE_OPTS,
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
    *a = (struct bench_args){.reps = 20, .chunk = 2048, .tp = 1, .warm_s = ENG_WARM_S, .idle_s = -1,
                             .model = MODEL_DEFAULT};
    sim_config_defaults(&a->choices);
    int c, idx = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        bool bad = false;
        switch (c) {
        case 'r': bad = ts_parse_i64(optarg, &a->reps) || a->reps < 1 || a->reps > 100000; break;
        case 'c': bad = ts_parse_i64(optarg, &a->chunk) || a->chunk < 1 || a->chunk > 1 << 20; break;
        case 'M': bad = ts_parse_double(optarg, &a->mem_gb) || a->mem_gb <= 0; break;
        case 'm': a->model = optarg; break;
        case 'j': a->json = optarg; break;
        case 'w': a->weights = optarg; break;
        case 'A': bad = ts_parse_double(optarg, &a->warm_s) || !(a->warm_s >= 0 && a->warm_s <= 600); break;
        case 'B': a->warm_trace = optarg; break;
        case 'I': bad = ts_parse_double(optarg, &a->idle_s) || !(a->idle_s >= 0 && a->idle_s <= 600); break;
        case 'a': a->anchor = optarg; break;
        case 'P': bad = ts_parse_i64(optarg, &a->tp) || a->tp < 1 || a->tp > ENG_TP_MAX; break;
        case 'T':
            if (eng_parse_step("engine_bench", ENG_BENCH_MAX_STEPS, optarg,
                               a->nsteps < ENG_BENCH_MAX_STEPS ? a->steps[a->nsteps] : NULL))
                return EXIT_USAGE;
            a->nsteps++;
            break;
        case 'o':
            a->only = optarg;
            bad = strcmp(optarg, "steps") && strcmp(optarg, "gemm") && strcmp(optarg, "attention") &&
                  strcmp(optarg, "anchor") && strcmp(optarg, "focus") && strcmp(optarg, "clock") &&
                  strcmp(optarg, "peer") && strcmp(optarg, "host");
            break;
        case 'h': usage(stdout); return 1;
        case ENG_CHOICE_OPT:
            if (eng_choice_take("engine_bench", o[idx].name, optarg, &a->choices))
                return EXIT_USAGE;
            break;
        default: return cli_getopt_error("engine_bench", c, argv, o);
        }
        if (bad) {
            fprintf(stderr, "engine_bench: --%s: bad value '%s' (see --help)\n", o[idx].name, optarg);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "engine_bench: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    for (int k = 0; k < a->nsteps; k++) {
        const int32_t *st = a->steps[k];
        if (st[4] > 0) {
            fprintf(stderr, "engine_bench: --step %d,%d,%d,%d,%d: the bench's steps are even (KV_LONG is "
                            "tessera engine profile's)\n", st[0], st[1], st[2], st[3], st[4]);
            return EXIT_USAGE;
        }
        if ((int64_t)st[0] * st[1] > ENG_BENCH_MAX_TOKENS) {
            fprintf(stderr, "engine_bench: --step %d,%d,%d,%d: %d x %d tokens, more than the %d a bench step "
                            "holds\n", st[0], st[1], st[2], st[3], st[0], st[1], ENG_BENCH_MAX_TOKENS);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* One GPU: the steps, anchor and output files checked before any GPU work. */
static int run_bench(const struct bench_args *a)
{
    struct engine_bench_opts bo = {.reps = (int)a->reps, .logit_chunk_rows = (int)a->chunk, .only = a->only,
                                   .weights = a->weights, .mem_limit = (int64_t)(a->mem_gb * 1e9),
                                   .warm_s = a->warm_s,
                                   .idle_s = a->idle_s >= 0 ? a->idle_s : a->only && strcmp(a->only, "clock") == 0 ? 3 : 0,
                                   .nsteps = a->nsteps};
    eng_choices_of(&a->choices, &bo.choices);
    for (int k = 0; k < a->nsteps; k++)
        memcpy(bo.steps[k], a->steps[k], sizeof bo.steps[k]);
    struct ts_err err;
    if (model_resolve(a->model, &bo.model, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (a->only && strcmp(a->only, "clock") == 0 && !a->warm_trace) {
        fprintf(stderr, "engine_bench --only clock: its measurement is the warm trace: --warm-trace FILE\n");
        return EXIT_USAGE;
    }
    static struct anchor_run ar;
    if (a->anchor && a->only && strcmp(a->only, "anchor")) {
        fprintf(stderr, "engine_bench: --anchor with --only %s: the anchor's shapes run alone (--only anchor) "
                        "or after the whole bench\n", a->only);
        return EXIT_USAGE;
    }
    if (a->anchor) {
        if (anchor_load(a->anchor, &ar, &err)) {
            fprintf(stderr, "engine_bench: %s\n", err.msg);
            return EXIT_USAGE;
        }
        bo.anchor = &ar, bo.anchor_path = a->anchor;
    } else if (a->only && strcmp(a->only, "anchor") == 0) {
        anchor_default_grid(&ar);
        bo.anchor = &ar;
    }
    if (a->json && !(bo.json = fopen(a->json, "a"))) {
        fprintf(stderr, "engine_bench: %s: cannot open\n", a->json);
        return EXIT_USAGE;
    }
    if (a->warm_trace && !(bo.warm_trace = fopen(a->warm_trace, "w"))) {
        fprintf(stderr, "engine_bench: %s: cannot open\n", a->warm_trace);
        if (bo.json)
            fclose(bo.json);
        return EXIT_USAGE;
    }
    if (bo.warm_trace)
        fputs("label,phase,round,graph,t_s,ms\n", bo.warm_trace);
    int rc = engine_bench_run(&bo, stdout);
    if (bo.json)
        fclose(bo.json);
    if (bo.warm_trace)
        fclose(bo.warm_trace);
    return rc;
}

/* --tp N: outside a launch, the launch of N ranks running this program; inside, the rank's part. */
static int run_tp(const struct bench_args *a, int argc, char **argv)
{
    if (a->only || a->anchor || a->warm_trace || a->idle_s > 0 || a->weights) {
        fprintf(stderr, "engine_bench --tp: --only, --anchor, --weights, --warm-trace and --idle-s run on one GPU\n");
        return EXIT_USAGE;
    }
    struct engine_bench_tp_opts bo = {.size = (int)a->tp, .reps = (int)a->reps, .nsteps = a->nsteps};
    eng_choices_of(&a->choices, &bo.choices);
    struct ts_err err;
    if (model_resolve(a->model, &bo.model, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    for (int k = 0; k < a->nsteps; k++)
        memcpy(bo.steps[k], a->steps[k], sizeof bo.steps[k]);
    int rank;
    const int in = eng_tp_in_launch("engine_bench", &rank);
    if (in < 0)
        return EXIT_USAGE;
    if (!in) /* the launcher: this program again, once per GPU */
        return eng_tp_launch((int)a->tp, argc - 1, argv + 1);
    if (a->json && rank == 0 && !(bo.json = fopen(a->json, "a"))) {
        fprintf(stderr, "engine_bench: %s: cannot open\n", a->json);
        return EXIT_USAGE;
    }
    int rc = engine_bench_tp_run(&bo, stdout);
    if (bo.json)
        fclose(bo.json);
    return rc;
}

int main(int argc, char **argv)
{
    struct bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    k_set_portable(a.choices.kernels == 1); /* the kernels timed alone run as the bench's engines do */
    return a.tp > 1 ? run_tp(&a, argc, argv) : run_bench(&a);
}
