/*
 * cli_calib.c: `tessera calib`: its usage, arguments and dispatch, and the subcommands that work on
 * calibrations and profiles as files (cli_calib_eval.c holds eval and price, which price steps).
 *
 *   import   an engine profile (the engine_profile table of a profile database, or its CSV) is
 *            checked against the GPU it claims and written as a calibration CSV
 *   merge    several profiles of one engine (machine instances, times) as one calibration: the
 *            median of each op's times over them
 *   fit/show fits the per-op models of a calibration and prints each with its residuals
 *   transfer carries a calibration to another GPU: each op's roofline part priced there, the rest
 *            kept (an estimate)
 *   host     the host line of a calibration whose host was measured apart from its GPU, as a host
 *            profile
 *   clock    the card's clock under its power limit, fitted to an engine_bench's warm traces
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "cli_calib.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"
#include "step_desc.h"

static void calib_usage(FILE *f)
{
    fprintf(f,
"usage: tessera calib import PROFILE.db|PROFILE.csv --gpu NAME [--gpu-file FILE] --out FILE.csv\n"
"       tessera calib merge PROFILE... [--over PROFILE]... --gpu NAME --out FILE.csv\n"
"       tessera calib fit FILE.csv|--calib FILE.csv --gpu NAME\n"
"       tessera calib show [FILE.csv|--calib FILE.csv] [--gpu NAME] [--model NAME] [--impl NAME] [--from GPU]\n"
"       tessera calib eval --db RUN.db [--calib FILE.csv] [--host HOST] [--extrapolate] [--clock auto|on|off]\n"
"                         [--csv STEPS.csv]\n"
"       tessera calib transfer FILE.csv --from GPU --to GPU --out FILE.csv [--impl NAME]\n"
"       tessera calib host FILE.csv [--out HOST.csv]\n"
"       tessera calib host --probe [--loop SYSTEM [--code DIR]] [--out HOST.csv]\n"
"       tessera calib clock TRACE.csv --gpu NAME [--gpu-file FILE] [--model NAME] [--held-tflops T]\n"
"       tessera calib price --step SEGS,Q,KV,LOGIT_ROWS[,CHUNK[,FFN_CHUNKS]] [--attn-block N] [--iter-smooth] [--gpu --model --impl\n"
"                         --calib]\n"
"                         [--host HOST] [--roofline]\n"
"\n"
"import  checks an engine profile (tessera engine profile) against the GPU it claims (one GPU,\n"
"        one model, every op at 3+ token counts, GEMM times the model can have on that GPU) and\n"
"        writes it as a calibration\n"
"merge   one calibration from several profiles of one engine, GPU and model (databases or CSVs,\n"
"        each checked as import checks it): every op of every profiled step takes the median of\n"
"        its times over them; a step only some profiles hold takes the median of those. A\n"
"        profile's level moves with the machine instance it ran on (about 1-2%% on the H200):\n"
"        the median of three instances' profiles is steadier than any one; --over PROFILE (any\n"
"        number): the steps it holds are taken from the --over profiles alone, the others'\n"
"        measurements of them dropped (a part of the grid profiled again after its kernels\n"
"        changed)\n"
"fit     fits the per-op models (monotone interpolation over tokens, per-chunk LM head, least\n"
"        squares for attention) and prints them with their residuals; show does the same for a\n"
"        shipped calibration [h200 / llada-8b / tessera]; for a GPU without one, the calibration\n"
"        of --from [h200] carried over by roofline ratios, with what that assumes\n"
"eval    prices every step a run replayed on the engine (table engine_steps) with the calibrated\n"
"        and the roofline back ends: per-step MAPE, 90th-percentile error, total-time error;\n"
"        --csv writes every step's shape, its measured and predicted seconds, and each op's\n"
"        measured (where the replay timed ops: engine replay --ops) and calibrated seconds;\n"
"        --clock (as tessera sim's [auto]): the calibrated prices at the card's clock state, the\n"
"        steps run back to back as the replay ran them\n"
"price   one step (SEGS sequences of Q tokens over KV cached keys, LOGIT_ROWS logit rows each,\n"
"        LM head in CHUNK-row chunks [2048], the FFN in FFN_CHUNKS pieces [1]) priced per op by the\n"
"        calibrated and roofline back ends;\n"
"        --iter-smooth: with dInfer's IterSmooth (its GEMM and softmax over the logit rows);\n"
"        --attn-block N: its attention block-causal over blocks of N tokens (a block-causal model\n"
"        under the block policy, as the simulator prices it: step_desc.attn_block) [0: bidirectional];\n"
"        its last line says how the profiled engine launches that attention, by the calibration's\n"
"        launch rules: the segments on each kernel, and the mma.sync launch's query heads a block\n"
"        (GQA packing), key splits and K/V tile size; --roofline prices it by the roofline\n"
"        alone, which needs no calibration (any GPU, model and implementation profile)\n"
"transfer  estimates a calibration for a GPU without measuring on it: each profiled op's roofline\n"
"        time is priced on the other GPU (over the two GPUs' measured ceilings where both were\n"
"        measured: tessera list gpus --measured) and what it took beyond it is kept (an op faster\n"
"        than its roofline scales by the ratio whole); replace it with a measured calibration\n"
"        when you can\n"
"host    the host of a calibration whose host was measured apart from its GPU (eager PyTorch: the\n"
"        harness's host_ms and gpu_ms): a step's issue time as a line in its segments, fitted on the\n"
"        host-bound steps, and the middle 80%% of those steps as multiples of it (how steady the\n"
"        host was); --out writes the line as a host profile. --host HOST (a host profile, or a\n"
"        calibration whose host is taken) on price, eval and tessera sim prices the calibration's\n"
"        GPU work issued by that machine's CPU: a calibration carried to another GPU (transfer)\n"
"        keeps the host it was measured with unless given the other machine's. --probe measures\n"
"        this machine's host in about a minute (python3 with torch and a GPU: PyTorch eager's\n"
"        steps at a few small shapes of LLaDA-8B's layers on random weights) and names its CPU,\n"
"        driver and torch; tessera sim --host HOST.csv then prices the eager loops as run here.\n"
"        --loop SYSTEM (native, fast-dllm, dllm-cache, sparse-dllm) times that system's own loop\n"
"        instead (its public code, checked out in DIR/REPO as experiments/validate/README.md says\n"
"        [baselines]; two requests of 128 prompt tokens and 64 positions, about 30 s): a host profile\n"
"        of its loop, which --host takes with that loop's --impl\n"
"clock   fits the card's clock under its power limit (how much slower a step runs once the card\n"
"        holds its limit, k; the load's time constant, tau; the loads where the clock begins to\n"
"        fall and where it is held, lo and hi) to the warm traces of an engine_bench (--warm-trace\n"
"        FILE --idle-s S, or --only clock: each step from a cool card) of the model [llada-8b],\n"
"        each step's load its FLOPs over the GEMM rate the card holds (--held-tflops, the bench's\n"
"        ceilings line; else the card's in tessera list gpus --measured); prints the fit and its\n"
"        line for clock.csv, which tessera sim --clock reads (this machine's calibrations' folder,\n"
"        then sim/data)\n"
"\n"
"An option another subcommand takes is refused here, not ignored. A calibration records how the\n"
"engine it profiled launches attention (its attn_rules column) and prices attention that way;\n"
"show prints it.\n");
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* A profile as import reads it: a database's engine_profile table or a CSV. */
static int load_profile(const char *path, struct calib_data *d, struct ts_err *err)
{
    return has_suffix(path, ".csv") ? calib_data_load(path, d, err) : calib_data_import_db(path, d, err);
}

/* `calib merge`: files[0..n), the last n_over of them --over profiles. */
static int cmd_merge(const char *const *files, size_t n, size_t n_over, const char *gpu, const char *out)
{
    struct calib_data *in = xcalloc(n, sizeof *in), merged = {0};
    struct ts_err err;
    size_t partial = 0, replaced = 0, loaded = 0;
    int rc = 0;
    for (; loaded < n && !rc; loaded++)
        if (load_profile(files[loaded], &in[loaded], &err)) {
            rc = -1;
        } else if (calib_data_validate(&in[loaded], gpu, &err)) {
            /* validate's message names the profile by model and GPU; say which file */
            char msg[sizeof err.msg];
            snprintf(msg, sizeof msg, "%s", err.msg);
            ts_fail(&err, "%s: %s", files[loaded], msg);
            rc = -1;
        }
    if (!rc)
        rc = calib_data_merge_over(in, files, n, n_over, &merged, &partial, &replaced, &err) ||
                     calib_data_validate(&merged, gpu, &err) || calib_data_write(&merged, out, &err) ? -1 : 0;
    if (rc)
        fprintf(stderr, "tessera calib merge: %s\n", err.msg);
    else if (!n_over)
        printf("%s: %zu rows of %s on %s, each the median of its times in %zu profiles (%zu rows held by "
               "fewer of them: the median of those)\n", out, merged.n, merged.model, merged.device, n, partial);
    else
        printf("%s: %zu rows of %s on %s, each the median of its times in %zu profiles, or in the %zu --over "
               "profiles where they hold its step (%zu rows held by fewer of them: the median of those; %zu "
               "rows of the others replaced)\n", out, merged.n, merged.model, merged.device, n - n_over, n_over,
               partial, replaced);
    for (size_t i = 0; i < loaded; i++)
        calib_data_free(&in[i]);
    free(in);
    calib_data_free(&merged);
    return rc ? EXIT_USAGE : 0;
}

/* d (measured on `from`) checked, carried over to `to` by roofline ratios, and the result checked
 * against `to`: what `calib transfer` writes and `calib show --gpu` shows. */
static int transfer_checked(const struct calib_data *d, const char *from, const char *to, const char *impl,
                            struct calib_data *out, struct ts_err *err)
{
    if (calib_data_validate(d, from, err) || calib_data_transfer(d, from, to, impl, out, err))
        return -1;
    if (calib_data_validate(out, to, err)) {
        calib_data_free(out);
        return -1;
    }
    return 0;
}

/* `calib show --gpu NAME` where no calibration was measured on NAME: the shipped one of `from`
 * carried over by roofline ratios, with what that assumes. */
static int show_transferred(const char *gpu, const char *from, const char *model, const char *impl)
{
    char src[CFG_PATH + 256];
    cli_calib_shipped_path(from, model, impl, src, sizeof src);
    struct ts_err err;
    struct calib_data d, t;
    if (calib_data_load(src, &d, &err)) {
        fprintf(stderr, "tessera calib show: no calibration of %s on %s, and none on %s to transfer (%s)\n",
                model, gpu, from, err.msg);
        return EXIT_USAGE;
    }
    struct calib *c = NULL;
    int rc = transfer_checked(&d, from, gpu, impl, &t, &err) ? -1 : 0;
    if (!rc) {
        rc = calib_fit(&t, &c, &err);
        calib_data_free(&t);
    }
    calib_data_free(&d);
    if (rc) {
        fprintf(stderr, "tessera calib show: %s\n", err.msg);
        calib_free(c);
        return EXIT_USAGE;
    }
    printf("no calibration measured on %s: %s carried over, each op's roofline time priced on it\n"
           "assumes: what each op took beyond its roofline time on %s (launches, waves, synchronisation)\n"
           "takes as long on this GPU, kernel launch and host overheads are the same on both GPUs, and\n"
           "the same kernels run (the %s implementation); the roofline runs on the GPUs' measured\n"
           "ceilings where both were measured (tessera list gpus --measured), else their datasheets'.\n"
           "Checked where both were measured: the H200's LLaDA-8B calibration carried to an H100 is\n"
           "3.2%% off per profiled step against the H100's measured one (median 2.7%%, up to 20%% on a\n"
           "short Reuse step over a long cache; PyTorch eager's 2.5%%; analysis/transfer_check.sh), where a\n"
           "measured calibration is 1-3%% off. Measure with `make calibrate` to replace it.\n",
           gpu, src, from, impl);
    printf("uncertainty band: each op scaled by the two GPUs' peak-FLOP ratio and by their bandwidth\n"
           "ratio instead of its roofline ratio (the roofline may have misjudged which one limited the\n"
           "kernel on %s), the smaller and larger of each op summed; not a measurement on %s:\n", from, gpu);
    static const struct { const char *what; int segs, q, kv, rows; } ref[] = {
        {"Refresh 16 x 512, all logits", 16, 512, 0, 512},
        {"Reuse 16 x 32 over 480", 16, 32, 480, 32},
        {"Reuse 1 x 32 over 480", 1, 32, 480, 32},
    };
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = PROFILE_LOGIT_CHUNK;
    for (size_t i = 0; i < TS_ARRAY_LEN(ref); i++) {
        step_shape_desc(&(struct step_shape){.segs = ref[i].segs, .q = ref[i].q, .kv = ref[i].kv,
                                             .logit_rows = ref[i].rows}, 0, &sd);
        double secs, lo, hi;
        if (calib_transfer_band(c, model, from, gpu, impl, &sd, &secs, &lo, &hi, &err) == 0)
            printf("  %-30s %9.3f ms  [%.3f, %.3f] (%+.0f%% / %+.0f%%)\n", ref[i].what, secs * 1e3, lo * 1e3,
                   hi * 1e3, 100 * (lo / secs - 1), 100 * (hi / secs - 1));
    }
    step_desc_free(&sd);
    calib_show(c, stdout);
    calib_free(c);
    return 0;
}

/* Whether word is one of the space-separated words of list */
static bool in_list(const char *list, const char *word)
{
    const size_t len = strlen(word);
    for (const char *p = list; len && (p = strstr(p, word)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return true;
    return false;
}

/* What `tessera calib SUB` was asked. */
struct calib_args {
    const char *sub, *file, *gpu, *gpu_file, *out, *db, *calib_path, *csv, *from, *to, *step, *attn_block, *model,
        *impl, *host, *clock, *held, *loop, *code;
    bool extrapolate, roofline, iter_smooth, probe;
    const char **files; /* the PROFILE/FILE arguments (merge takes several) */
    int nfiles;
    const char **overs; /* merge's --over profiles */
    int novers;
};

/* calib's options, each a row: its name, the field of calib_args it sets (a value, or with flag true a
 * flag); --over's values are appended to overs (OVER_ROW). */
#define OVER_ROW SIZE_MAX
static const struct calib_opt {
    const char *name;
    size_t off;
    bool flag;
} calib_opts[] = {
#define VALUE(opt, field) {opt, offsetof(struct calib_args, field), false}
#define FLAG(opt, field) {opt, offsetof(struct calib_args, field), true}
    VALUE("--gpu", gpu),   VALUE("--gpu-file", gpu_file), VALUE("--out", out),     VALUE("--db", db),
    VALUE("--calib", calib_path), VALUE("--model", model), VALUE("--impl", impl),  VALUE("--csv", csv),
    VALUE("--from", from), VALUE("--to", to),             VALUE("--step", step),   VALUE("--attn-block", attn_block),
    VALUE("--host", host), VALUE("--clock", clock),       VALUE("--held-tflops", held), {"--over", OVER_ROW, false},
    VALUE("--loop", loop), VALUE("--code", code),
    FLAG("--extrapolate", extrapolate), FLAG("--roofline", roofline), FLAG("--iter-smooth", iter_smooth),
    FLAG("--probe", probe),
#undef VALUE
#undef FLAG
};

/* Parses argv (argv[1] the subcommand) into *a, refusing an option the subcommand does not take
 * rather than ignoring it. Returns 0, 1 for --help (printed), or EXIT_USAGE (said on stderr). */
static int parse_calib_args(int argc, char **argv, struct calib_args *a)
{
    static const struct {
        const char *sub, *opts;
    } takes[] = {{"import", "--gpu --gpu-file --out"},
                 {"merge", "--gpu --out --over"},
                 {"fit", "--gpu --calib"},
                 {"show", "--gpu --model --impl --from --calib"},
                 {"eval", "--db --calib --host --extrapolate --clock --csv"},
                 {"host", "--out --probe --loop --code"},
                 {"transfer", "--from --to --out --impl"},
                 {"clock", "--gpu --gpu-file --model --held-tflops"},
                 {"price", "--step --attn-block --gpu --model --impl --calib --host --extrapolate --roofline --iter-smooth"}};
    const char *sub = a->sub = argv[1], *opts = NULL;
    for (size_t k = 0; k < TS_ARRAY_LEN(takes); k++)
        if (strcmp(sub, takes[k].sub) == 0)
            opts = takes[k].opts;
    if (!opts) {
        fprintf(stderr, "tessera calib: unknown subcommand '%s' (import, merge, fit, show, eval, transfer, price, host, clock)\n", sub);
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const struct calib_opt *row = NULL;
        for (size_t k = 0; k < TS_ARRAY_LEN(calib_opts) && !row; k++)
            row = strcmp(o, calib_opts[k].name) == 0 ? &calib_opts[k] : NULL;
        const char **dst = !row || row->flag       ? NULL
                           : row->off == OVER_ROW ? &a->overs[a->novers]
                                                  : (const char **)(void *)((char *)a + row->off);
        const bool flag = row && row->flag;
        if ((dst || flag) && !in_list(opts, o)) {
            fprintf(stderr, "tessera calib %s: %s does not apply here (%s takes %s)\n", sub, o, sub, opts);
            return EXIT_USAGE;
        }
        if (dst) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tessera calib %s: %s needs a value\n", sub, o);
                return EXIT_USAGE;
            }
            *dst = argv[++i];
            a->novers += dst == &a->overs[a->novers];
        } else if (flag) {
            *(bool *)(void *)((char *)a + row->off) = true;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            calib_usage(stdout);
            return 1;
        } else if (o[0] != '-' && (!a->file || strcmp(sub, "merge") == 0)) {
            a->file = a->file ? a->file : o;
            a->files[a->nfiles++] = o;
        } else if (o[0] == '-' && o[1] == '-') {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "calib %s", sub);
            return cli_unknown_in_list(cmd, o, opts);
        } else {
            fprintf(stderr, "tessera calib %s: unexpected argument '%s'\n", sub, o);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* `calib import PROFILE --gpu G --out FILE`: a profile validated and written as a calibration CSV. */
static int cmd_import(const struct calib_args *a)
{
    if (!a->file || !a->gpu || !a->out) {
        fprintf(stderr, "tessera calib import: needs PROFILE, --gpu NAME and --out FILE\n");
        return EXIT_USAGE;
    }
    struct calib_data d;
    struct ts_err err;
    int rc = load_profile(a->file, &d, &err);
    if (!rc && (rc = calib_data_validate_on(&d, a->gpu, a->gpu_file, &err)))
        ts_fail_prefix(&err, "%s", a->file);
    if (!rc)
        rc = calib_data_write(&d, a->out, &err);
    if (rc)
        fprintf(stderr, "tessera calib import: %s\n", err.msg);
    else
        printf("%s: %zu rows of %s on %s\n", a->out, d.n, d.model, d.device);
    calib_data_free(&d);
    return rc ? EXIT_USAGE : 0;
}

/* The warm rounds a clock fit weighs: the first 0.8 s of each trace, before the power limiter's
 * cycle of about a second (a replay 15-20% slower near 0.9 s on the measured H100 and H200) */
#define CLOCK_FIT_WINDOW_S 0.8

/* `calib clock TRACE --gpu G [--model M]`: the clock model fitted to an engine_bench's warm traces. */
static int cmd_clock(const struct calib_args *a)
{
    if (!a->file || !a->gpu) {
        fprintf(stderr, "tessera calib clock: needs TRACE.csv (engine_bench --warm-trace) and --gpu NAME\n");
        return EXIT_USAGE;
    }
    struct sim_config c;
    sim_config_defaults(&c);
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/gpu_measured.csv", c.datadir);
    struct ts_err err;
    struct cost_ctx ctx = {.tp = 1};
    struct gpu_measured gm = {0};
    struct gpu_table *gt = gpu_table_create();
    int rc = model_resolve(a->model ? a->model : MODEL_DEFAULT, &ctx.model, &err) ||
                     (a->gpu_file && gpu_load_file(gt, a->gpu_file, &err)) || gpu_lookup(gt, a->gpu, &ctx.gpu, &err) ||
                     impl_resolve("tessera", &ctx.impl, &err)
                 ? -1 : 0;
    gpu_table_destroy(gt);
    int found = 1;
    if (!rc && a->held) {
        double t;
        if (ts_parse_double(a->held, &t) || !(t > 0 && t < 1e6))
            rc = ts_fail(&err, "--held-tflops: '%s' is not a GEMM rate in TFLOP/s", a->held);
        gm.gemm_held_flops = t * 1e12;
    } else if (!rc && (found = gpu_measured_find(path, ctx.gpu.name, &gm, &err)) == 0)
        rc = ts_fail(&err, "no measured held GEMM rate for %s in %s (--held-tflops: the rate engine_bench's "
                           "ceilings line gives)", ctx.gpu.name, path);
    struct clock_trace *t = NULL;
    size_t n = 0;
    if (rc || found < 0 || clock_traces_read(a->file, &t, &n, &err)) {
        fprintf(stderr, "tessera calib clock: %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = PROFILE_LOGIT_CHUNK;
    for (size_t i = 0; i < n && !rc; i++) {
        struct cost_breakdown bd;
        double s;
        step_shape_desc(&(struct step_shape){.segs = t[i].segs, .q = t[i].q, .kv = t[i].kv, .logit_rows = t[i].logits}, 0,
                        &sd);
        rc = cost_roofline.step_s(&ctx, &sd, &s, &bd, &err);
        t[i].flops = bd.flops;
    }
    step_desc_free(&sd);
    struct clock_params p = {.held_flops = gm.gemm_held_flops};
    double rms = 0;
    if (rc || clock_fit(t, n, CLOCK_FIT_WINDOW_S, &p, &rms, &err)) {
        fprintf(stderr, "tessera calib clock: %s\n", err.msg);
        clock_traces_free(t, n);
        return EXIT_USAGE;
    }
    printf("%s, %s: %zu steps' warm traces from a cool card, each round within %.1f s of its start fitted\n"
           "k %.3f (a step takes up to %.1f%% longer at the held clock), tau %.1f ms, the clock falls from a load of "
           "%.3f and is held from %.3f\n(the load: FLOPs over the held GEMM rate, %.1f TFLOP/s, and the step's "
           "time); RMS error over the rounds %.2f%%\n\n%-30s %6s %9s %9s %9s %9s\n", ctx.gpu.name, ctx.model.name, n,
           CLOCK_FIT_WINDOW_S, p.k, 100 * p.k, p.tau_s * 1e3, p.lo, p.hi, p.held_flops * 1e-12, 100 * rms, "step",
           "load", "held_ms", "first_ms", "model_ms", "rms");
    for (size_t i = 0; i < n; i++) {
        double *pred = xmalloc(sizeof *pred * (t[i].n ? t[i].n : 1)), sum = 0;
        size_t m = 0;
        clock_predict(&p, &t[i], pred);
        for (; m < t[i].n && t[i].warm_t[m] <= CLOCK_FIT_WINDOW_S; m++)
            sum += (pred[m] / t[i].warm_ms[m] - 1) * (pred[m] / t[i].warm_ms[m] - 1);
        char what[64];
        snprintf(what, sizeof what, "%d x %d over %d, %d logits", t[i].segs, t[i].q, t[i].kv, t[i].logits);
        printf("%-30s %6.3f %9.3f %9.3f %9.3f %8.2f%%\n", what, t[i].flops / (p.held_flops * t[i].held_ms * 1e-3),
               t[i].held_ms, t[i].n ? t[i].warm_ms[0] : 0, t[i].n ? pred[0] : 0, m ? 100 * sqrt(sum / (double)m) : 0);
        free(pred);
    }
    printf("\nclock.csv: %s,%.4f,%.2f,%.4f,%.4f,%.1f,RECORD\n", a->gpu, p.k, p.tau_s * 1e3, p.lo, p.hi,
           p.held_flops * 1e-12);
    clock_traces_free(t, n);
    return 0;
}

/* `calib transfer FILE --from G --to G --out FILE`. */
static int cmd_transfer(const struct calib_args *a)
{
    if (!a->file || !a->from || !a->to || !a->out) {
        fprintf(stderr, "tessera calib transfer: needs FILE, --from GPU, --to GPU and --out FILE\n");
        return EXIT_USAGE;
    }
    struct calib_data d, t;
    struct ts_err err;
    int rc = calib_data_load(a->file, &d, &err);
    if (!rc && !(rc = transfer_checked(&d, a->from, a->to, a->impl, &t, &err))) {
        if (!(rc = calib_data_write(&t, a->out, &err)))
            printf("%s: %zu rows of %s on %s\n", a->out, t.n, t.model, t.device);
        calib_data_free(&t);
    }
    if (rc)
        fprintf(stderr, "tessera calib transfer: %s\n", err.msg);
    calib_data_free(&d);
    return rc ? EXIT_USAGE : 0;
}

/* `calib fit|show [FILE | --calib FILE]`: the calibration (the shipped one of --gpu, --model and
 * --impl by default; show says how one would be transferred where none is shipped) fitted and
 * shown with its residuals. */
static int cmd_show(const struct calib_args *a)
{
    const char *file = a->file, *gpu = a->gpu ? a->gpu : "h200";
    char path[CFG_PATH + 256];
    if (a->calib_path && file) {
        fprintf(stderr, "tessera calib %s: the calibration twice ('%s' and --calib %s)\n", a->sub, file, a->calib_path);
        return EXIT_USAGE;
    }
    if (a->calib_path)
        file = a->calib_path;
    if (file)
        snprintf(path, sizeof path, "%s", file);
    else
        cli_calib_shipped_path(gpu, a->model, a->impl, path, sizeof path);
    if (!file && strcmp(a->sub, "show") == 0 && access(path, R_OK) != 0)
        return show_transferred(gpu, a->from ? a->from : "h200", a->model, a->impl);
    struct calib *c;
    struct ts_err err;
    if (cli_calib_load_fit(path, gpu, &c, &err)) {
        fprintf(stderr, "tessera calib %s: %s\n", a->sub, err.msg);
        return EXIT_USAGE;
    }
    printf("%s\n", path);
    calib_show(c, stdout);
    calib_free(c);
    return 0;
}

/* run argv (python3 first) to its end; 0 where it exited 0 */
static int run_python(char **argv, const char *what)
{
    int status = -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        execvp("python3", argv);
        fprintf(stderr, "%s: cannot run python3: %s\n", what, strerror(errno));
        _exit(127);
    }
    return pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? -1 : 0;
}

/* A probe's script ended (rc 0: it finished): said on stderr; a failed one's scratch files removed. */
static int probe_done(int rc, const char *script, const char *needs, const char *csv, const char *dir, double t0)
{
    if (rc) {
        fprintf(stderr, "tessera calib host --probe: %s did not finish (it needs python3 with %s and a GPU it "
                        "sees; its messages are above)\n", script, needs);
        remove(csv);
        rmdir(dir);
        return -1;
    }
    fprintf(stderr, "tessera calib host --probe: measured in %.0f s\n", ts_wall_s() - t0);
    return 0;
}

/* `calib host --probe`: this machine's host measured by PyTorch eager on its GPU, a profile of a few
 * small shapes (engine/bench/torch_profile.py --host-probe, LLaDA-8B's layers on random weights), into
 * a file in a scratch folder whose host the caller takes. python3 is run by its arguments, no shell. */
static int probe_host(char *csv, size_t len)
{
    char dir[] = "/tmp/tessera-probe-XXXXXX", script[CFG_PATH + 64];
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tessera calib host --probe: cannot make a scratch folder: %s\n", strerror(errno));
        return -1;
    }
    snprintf(csv, len, "%s/probe.csv", dir);
    snprintf(script, sizeof script, "%s/engine/bench/torch_profile.py", TS_SRCDIR);
    fprintf(stderr, "tessera calib host --probe: timing PyTorch eager's steps on this machine's GPU (about a minute)\n");
    char *argv[] = {"python3", script, "--host-probe", "--out", csv, NULL};
    const double t0 = ts_wall_s();
    return probe_done(run_python(argv, "tessera calib host --probe"), script, "torch", csv, dir, t0);
}

/* `calib host --probe --loop SYSTEM [--code DIR]`: SYSTEM's own loop timed on this machine's GPU
 * (experiments/validate/driver.py --host-line: two requests of 128 prompt tokens and 64 positions, the
 * first untimed) into a host profile naming its implementation, in a scratch folder (csv). The
 * checkouts' folders follow experiments/validate/measure.sh. Every path reaches python3 as an argument. */
static int probe_loop(const char *loop, const char *code, char *csv, size_t len)
{
    static const char *const loops[][2] = {
        {"native", "llada"}, {"fast-dllm", "fast-dllm"}, {"dllm-cache", "dllm-cache"}, {"sparse-dllm", "sparse-dllm"}};
    const char *repo = NULL;
    for (size_t i = 0; i < TS_ARRAY_LEN(loops); i++)
        if (strcmp(loops[i][0], loop) == 0)
            repo = loops[i][1];
    if (!repo) {
        fprintf(stderr, "tessera calib host --probe --loop %s: a batch-1 loop tessera models: native, fast-dllm, "
                        "dllm-cache, sparse-dllm\n", loop);
        return -1;
    }
    char dir[] = "/tmp/tessera-probe-XXXXXX", src[CFG_PATH + 16], model[CFG_PATH + 16], script[CFG_PATH + 64],
         trace[64], runs[64];
    snprintf(src, sizeof src, "%s/%s", code, repo);
    snprintf(model, sizeof model, "%s/fast-dllm", code);
    struct stat st;
    if (stat(src, &st) != 0 || !S_ISDIR(st.st_mode) || stat(model, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera calib host --probe --loop %s: needs %s's checkout in %s and Fast-dLLM's (its model "
                        "file) in %s: make them as experiments/validate/README.md says, or name their folder "
                        "with --code DIR\n", loop, loop, src, model);
        return -1;
    }
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tessera calib host --probe: cannot make a scratch folder: %s\n", strerror(errno));
        return -1;
    }
    snprintf(csv, len, "%s/probe.csv", dir);
    snprintf(trace, sizeof trace, "%s/loop.csv", dir);
    snprintf(runs, sizeof runs, "%s/runs", dir);
    snprintf(script, sizeof script, "%s/experiments/validate/driver.py", TS_SRCDIR);
    FILE *f = fopen(trace, "w");
    const bool wrote = f && fputs("arrival_ns,prompt_tokens,output_tokens\n0,128,64\n0,128,64\n", f) >= 0;
    if (!f || fclose(f) != 0 || !wrote) {
        fprintf(stderr, "tessera calib host --probe: cannot write %s\n", trace);
        remove(trace);
        rmdir(dir);
        return -1;
    }
    fprintf(stderr, "tessera calib host --probe: timing %s's own loop on this machine's GPU (about 30 s)\n", loop);
    char *argv[] = {"python3", script, "--system", (char *)loop, "--code", src, "--model-code", model, "--trace",
                    trace, "--warmup", "1", "--out", runs, "--host-line", csv, NULL};
    const double t0 = ts_wall_s();
    const int rc = run_python(argv, "tessera calib host --probe");
    static const char *const made[] = {"loop/requests.csv", "loop/forwards.csv", "loop/meta.json", "loop", ""};
    for (size_t i = 0; i < TS_ARRAY_LEN(made); i++) { /* the driver's files, then its folders */
        char path[sizeof runs + 32];
        snprintf(path, sizeof path, "%s/%s", runs, made[i]);
        remove(path);
    }
    remove(trace);
    return probe_done(rc, script, "torch and transformers", csv, dir, t0);
}

/* `calib host FILE [--out HOST.csv]`: the host of a calibration whose host was measured apart from its
 * GPU (eager PyTorch), as a host profile another calibration can take (--host); with --probe, this
 * machine's. */
static int cmd_host(const struct calib_args *a)
{
    char probed[CFG_PATH + 64] = "";
    if (a->probe && a->file) {
        fprintf(stderr, "tessera calib host: --probe measures this machine; it takes no FILE (%s)\n", a->file);
        return EXIT_USAGE;
    }
    if ((a->loop || a->code) && !a->probe) {
        fprintf(stderr, "tessera calib host: --loop and --code name the loop --probe times (add --probe)\n");
        return EXIT_USAGE;
    }
    if (a->code && !a->loop) {
        fprintf(stderr, "tessera calib host --probe: --code names the checkouts of the loop --loop SYSTEM times\n");
        return EXIT_USAGE;
    }
    if (a->probe) {
        if (a->loop ? probe_loop(a->loop, a->code ? a->code : "baselines", probed, sizeof probed)
                    : probe_host(probed, sizeof probed))
            return EXIT_USAGE;
        struct calib_args b = *a;
        b.file = probed, b.probe = false, b.loop = b.code = NULL;
        const int rc = cmd_host(&b);
        remove(probed);
        probed[strlen(probed) - strlen("/probe.csv")] = '\0';
        rmdir(probed);
        return rc;
    }
    if (!a->file) {
        fprintf(stderr, "tessera calib host: needs a calibration or profile CSV (or a host profile)\n");
        return EXIT_USAGE;
    }
    struct calib_host h;
    struct ts_err err;
    if (calib_host_load(a->file, &h, &err) || (a->out && calib_host_write(&h, a->out, &err))) {
        fprintf(stderr, "tessera calib host: %s\n", err.msg);
        return EXIT_USAGE;
    }
    char band[96];
    calib_host_band(h.lo, h.hi, band, sizeof band);
    printf("host of %s: a step's issue takes %.2f ms + %.3f ms a segment (fitted on %d host-bound steps%s); its "
           "GPU-bound steps add %.2f ms of launch gaps\n", h.device, h.host0_ms, h.seg_ms, h.steps, band, h.eager_gap_ms);
    if (a->out)
        printf("%s: the host profile (--host %s)\n", a->out, a->out);
    return 0;
}

/* `tessera calib`; files (room for 2 argc) collects merge's profiles, from files + argc its --over ones. */
static int calib_main(int argc, char **argv, const char **files)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        calib_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    struct calib_args a = {.model = MODEL_DEFAULT, .impl = "tessera", .files = files, .overs = files + argc};
    int rc = parse_calib_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    const char *sub = a.sub;
    if (strcmp(sub, "eval") == 0) {
        if (!a.db) {
            fprintf(stderr, "tessera calib eval: which run database? (--db RUN.db)\n");
            return EXIT_USAGE;
        }
        int32_t clock = CLOCK_AUTO;
        struct ts_err err;
        if (a.clock && CFG_CHOICE("clock", a.clock, cfg_clock_names, &clock, &err)) {
            fprintf(stderr, "tessera calib eval: %s\n", err.msg);
            return EXIT_USAGE;
        }
        return cli_calib_eval(a.db, a.calib_path, a.host, a.extrapolate, (enum cfg_clock)clock, a.csv);
    }
    if (strcmp(sub, "import") == 0)
        return cmd_import(&a);
    if (strcmp(sub, "merge") == 0) {
        if (a.nfiles + a.novers < 2 || a.nfiles < 1 || !a.gpu || !a.out) {
            fprintf(stderr, "tessera calib merge: needs two or more PROFILEs (--over ones included, one other at "
                            "least), --gpu NAME and --out FILE\n");
            return EXIT_USAGE;
        }
        for (int k = 0; k < a.novers; k++) /* the --over profiles after the others */
            files[a.nfiles + k] = a.overs[k];
        return cmd_merge(files, (size_t)(a.nfiles + a.novers), (size_t)a.novers, a.gpu, a.out);
    }
    if (strcmp(sub, "price") == 0)
        return cli_calib_price(a.gpu ? a.gpu : "h200", a.model, a.impl, a.calib_path, a.host, a.step, a.attn_block,
                               a.extrapolate, a.roofline, a.iter_smooth);
    if (strcmp(sub, "transfer") == 0)
        return cmd_transfer(&a);
    if (strcmp(sub, "host") == 0)
        return cmd_host(&a);
    if (strcmp(sub, "clock") == 0)
        return cmd_clock(&a);
    return cmd_show(&a); /* fit or show: parse_calib_args took no other subcommand */
}

int cli_calib(int argc, char **argv)
{
    const char **files = xmalloc(sizeof *files * 2 * (size_t)TS_MAX(argc, 1)); /* the PROFILEs, then --over's */
    int rc = calib_main(argc, argv, files);
    free(files);
    return rc;
}
