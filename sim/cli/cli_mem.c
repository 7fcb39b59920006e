/*
 * cli_mem.c: `tessera mem plan`, `tessera mem lmax` and `tessera mem sampler`.
 *
 *   plan   one forward's activation plan by a planner: peak (arena or reserved), allocated, the
 *          theoretical peak, inflation over it, peak-to-average ratio, planning time (CPU time); with
 *          a budget, the chunk counts lazy (or brute-force) chunking needs to fit (and the search's
 *          CPU time)
 *   lmax   the longest sequence whose forward fits a GPU next to the model's weights, by bisection:
 *          one vanilla (no cache) FULL step of L tokens with logits for mask_ratio * L rows
 *          (mask-only) or all L rows, planned by the chosen planner, chunked as asked; --live
 *          measures it on the GPU with the engine (engine/eng_lmax.c) beside the prediction
 *   sampler  vLLM's DiffusionGemma sampler at a step of 1 .. --max-num-seqs canvases (sampler_mem.h):
 *          its logits, its tile, its copies, what it can take and whether it runs out of memory
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cost.h"
#include "engine_load.h"
#include "gpu.h"
#include "model.h"
#include "act_cache.h"
#include "sampler_mem.h"

static void mem_usage(FILE *f)
{
    fprintf(f,
"usage: tessera mem plan [--model M] [--tokens T] [--logit-rows R | --mask-ratio X] [--planner P]\n"
"                        [--max-num-logits N] [--ffn-chunks N] [--softmax-copy B] [--budget-gib G]\n"
"                        [--chunking none|lazy|brute] [--search-margin-mib N] [--fused-ffn]\n"
"                        [--act-layout engine|mosaic] [--ilp-tensors N] [--ilp-seconds S] [--json]\n"
"       tessera mem lmax [--model M] [--gpu G | --mem-limit GB] [--planner P] [--mask-ratio X]\n"
"                        [--chunking C] [--search-margin-mib N] [--softmax-copy B] [--reserve-gib G]\n"
"                        [--fused-ffn] [--act-layout engine|mosaic] [--json]\n"
"                        [--live [--layers N] [--seed S]]\n"
"       tessera mem sampler [--model M] [--gpu G | --mem-limit GB] [--canvas N] [--max-num-seqs N]\n"
"                        [--gpu-memory-utilization U] [--max-num-batched-tokens T] [--outside-gib G]\n"
"                        [--weights-gib G] [--copies C] [--code tiled|whole] [--json]\n"
"\n"
"planners: caching (PyTorch's allocator), profiled (dLLM-Serve), first-fit (Mosaic), greedy-size\n"
"(TFLite), ilp (GLPK, small graphs) [first-fit]. Defaults: llada-8b, 4096 tokens, logits for\n"
"every row (--mask-ratio X: mask-only logits for X of the rows), unchunked, no softmax copy\n"
"(--softmax-copy 8: PyTorch's fp32 softmax, its cast and its output; 4: one fp32 copy). lmax:\n"
"h200, a 1 GiB framework reserve, chunking none; --mem-limit GB (10^9 bytes) in place of the\n"
"GPU's memory. plan with --budget-gib G: the chunk counts --chunking finds to fit G, the\n"
"search's time and plans tried. Lazy and brute-force chunking plan within the budget less\n"
"--search-margin-mib N, what Mosaic's chunk search keeps free of its pool [900, and 700 more\n"
"for an MoE model; 0 with --live]. ilp: graphs of up to --ilp-tensors N [40] tensors, each\n"
"solve within --ilp-seconds S [10] (else the best plan found).\n"
"--live (GPU machine): measure L_max with the engine under a hard limit of --mem-limit (or the\n"
"--gpu card's memory): the weights are held, each length's planned activations are mapped in CUDA\n"
"virtual memory, and at L_max the step runs over --layers layers [1] of the model's.\n"
"--fused-ffn: the dense FFNs' gate/up GEMM writes SwiGLU's output itself (the engine's\n"
"--ffn fused), so no [tokens, 2 ffn] gate/up buffer exists (not with --live, whose engine\n"
"plans its FFN split).\n"
"--act-layout: a layer's activations as tessera's engine holds them [engine: q, k and v one tensor,\n"
"o_proj and down adding into x], or as Mosaic's own memory plan lays them out (mosaic:\n"
"flashserve/Mosaic vllm/v1/worker/graph_builder.py: q, k and v apart, o_proj's output and the fused\n"
"add-norm's two outputs new tensors, the FFN's chunk buffers alive across its loop; not with --live).\n"
"sampler: vLLM's DiffusionGemma sampler (vllm/model_executor/models/diffusion_gemma.py) at a step of\n"
"each count of canvases up to --max-num-seqs [8]: the fp32 logits of --canvas [256] rows a canvas, the\n"
"group its request-tiled loop takes (--code tiled, PR #45672 at 00c25c8 [tiled]; whole: every canvas\n"
"at once, as 0.33.0 runs it) from what is free, its --copies [3, measured: record dgemma-sampler-h200]\n"
"fp32 copies of the group's logits, and whether the step runs out of memory: what it can take is the\n"
"profile run's activations (a forward of --max-num-batched-tokens [8192] with a logit row a sequence,\n"
"planned by the caching planner, free in PyTorch's cache at a step) and (1 - U) of the device\n"
"[U 0.9] less --outside-gib [1: CUDA context, workspaces and graphs, an assumption]. Defaults:\n"
"diffusion-gemma, h200; --weights-gib: the model's weights [bf16 or its checkpoint's].\n");
}

struct mem_args {
    const char *model, *gpu, *planner; /* model NULL: the subcommand's default */
    int64_t tokens, logit_rows;
    double mask_ratio, budget_gib, reserve_gib, mem_limit_gb, margin_mib; /* margin_mib < 0: the default */
    int32_t max_num_logits, ffn_chunks, softmax_copy, layers, ilp_tensors;
    double ilp_seconds;
    /* sampler */
    int32_t canvas, max_num_seqs, copies;
    int64_t max_batched;
    double util, outside_gib, weights_gib;
    bool whole;
    enum chunking chunking;
    int32_t layout; /* enum og_layout */
    bool json, live, fused_ffn;
    uint64_t seed;
};

static int parse(int argc, char **argv, struct mem_args *a)
{
    static const struct option o[] = {
        {"model", required_argument, 0, 'm'}, {"gpu", required_argument, 0, 'g'},
        {"planner", required_argument, 0, 'p'}, {"tokens", required_argument, 0, 't'},
        {"logit-rows", required_argument, 0, 'r'}, {"mask-ratio", required_argument, 0, 'x'},
        {"max-num-logits", required_argument, 0, 'l'}, {"ffn-chunks", required_argument, 0, 'f'},
        {"softmax-copy", required_argument, 0, 's'}, {"budget-gib", required_argument, 0, 'b'},
        {"reserve-gib", required_argument, 0, 'R'}, {"chunking", required_argument, 0, 'c'},
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
        {"mem-limit", required_argument, 0, 'M'}, {"live", no_argument, 0, 'L'},
        {"layers", required_argument, 0, 'N'}, {"seed", required_argument, 0, 'S'},
        {"fused-ffn", no_argument, 0, 'F'}, {"ilp-tensors", required_argument, 0, 'I'},
        {"ilp-seconds", required_argument, 0, 'T'}, {"search-margin-mib", required_argument, 0, 'G'},
        {"act-layout", required_argument, 0, 'A'}, {"canvas", required_argument, 0, 'C'},
        {"max-num-seqs", required_argument, 0, 'n'}, {"gpu-memory-utilization", required_argument, 0, 'u'},
        {"max-num-batched-tokens", required_argument, 0, 'B'}, {"outside-gib", required_argument, 0, 'o'},
        {"weights-gib", required_argument, 0, 'W'}, {"copies", required_argument, 0, 'k'},
        {"code", required_argument, 0, 'K'}, {0, 0, 0, 0}};
    *a = (struct mem_args){.gpu = "h200", .planner = "first-fit", .tokens = 4096,
                           .logit_rows = -1, .mask_ratio = -1, .budget_gib = 0, .reserve_gib = 1.0,
                           .margin_mib = -1,
                           .ffn_chunks = 1, .layers = 1, .seed = 1, .canvas = 256, .max_num_seqs = 8,
                           .copies = SAMPLER_COPIES, .max_batched = SAMPLER_BATCHED, .util = SAMPLER_UTIL,
                           .outside_gib = SAMPLER_OUTSIDE_GIB,
                           .weights_gib = -1};
    optind = 1;
    opterr = 0;
    int c, idx = 0;
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        int64_t v;
        int bad = 0;
        const char *want = "";
        if (optarg && optarg[0] == '-' && optarg[1] == '-') { /* a missing value: the next option taken for it */
            fprintf(stderr, "tessera mem: --%s: missing value (the next argument is the option %s)\n", o[idx].name, optarg);
            return -1;
        }
        switch (c) {
        case 'm': a->model = optarg; break;
        case 'g': a->gpu = optarg; break;
        case 'p': a->planner = optarg; break;
        case 't': want = "a whole number of tokens in 1..67108864"; bad = ts_parse_i64(optarg, &a->tokens) || a->tokens < 1 || a->tokens > (1 << 26); break;
        case 'r': want = "a whole number of rows, 0 or more"; bad = ts_parse_i64(optarg, &a->logit_rows) || a->logit_rows < 0; break;
        case 'x': want = "a fraction in 0..1"; bad = ts_parse_double(optarg, &a->mask_ratio) || a->mask_ratio < 0 || a->mask_ratio > 1; break;
        case 'l': want = "a whole number of rows in 0..16777216 (0: monolithic)"; bad = ts_parse_i64(optarg, &v) || v < 0 || v > (1 << 24); a->max_num_logits = (int32_t)v; break;
        case 'f': want = "a whole number in 1..4096"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 4096; a->ffn_chunks = (int32_t)v; break;
        case 's': want = "0, 4 or 8 bytes a logit"; bad = ts_parse_i64(optarg, &v) || (v != 0 && v != 4 && v != 8); a->softmax_copy = (int32_t)v; break;
        case 'b': want = "a positive number of GiB"; bad = ts_parse_double(optarg, &a->budget_gib) || !(a->budget_gib > 0); break;
        case 'G': want = "a number of MiB in 0..1048576"; bad = ts_parse_double(optarg, &a->margin_mib) || !(a->margin_mib >= 0) || a->margin_mib > 1048576; break;
        case 'R': want = "a number of GiB, 0 or more"; bad = ts_parse_double(optarg, &a->reserve_gib) || !(a->reserve_gib >= 0); break;
        case 'c':
            a->chunking = strcmp(optarg, "lazy") == 0 ? CHUNK_LAZY : strcmp(optarg, "brute") == 0 ? CHUNK_BRUTE : CHUNK_NONE;
            want = "none, lazy or brute";
            bad = a->chunking == CHUNK_NONE && strcmp(optarg, "none") != 0;
            break;
        case 'j': a->json = true; break;
        case 'M': want = "a number of GB in (0, 10000]"; bad = ts_parse_double(optarg, &a->mem_limit_gb) || !(a->mem_limit_gb > 0) || a->mem_limit_gb > 1e4; break;
        case 'L': a->live = true; break;
        case 'F': a->fused_ffn = true; break;
        case 'A': want = "engine or mosaic"; a->layout = og_layout_find(optarg); bad = a->layout < 0; break;
        case 'N': want = "a whole number in 1..1024"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 1024; a->layers = (int32_t)v; break;
        case 'S': want = "a whole number, 0 or more"; bad = ts_parse_i64(optarg, &v) || v < 0; a->seed = (uint64_t)v; break;
        case 'I': want = "a whole number of tensors in 1..100000"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 100000; a->ilp_tensors = (int32_t)v; break;
        case 'T': want = "a number of seconds in (0, 3600]"; bad = ts_parse_double(optarg, &a->ilp_seconds) || !(a->ilp_seconds > 0) || a->ilp_seconds > 3600; break;
        case 'C': want = "a whole number of positions in 1..65536"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 65536; a->canvas = (int32_t)v; break;
        case 'n': want = "a whole number of sequences in 1..4096"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 4096; a->max_num_seqs = (int32_t)v; break;
        case 'u': want = "a fraction in (0, 1]"; bad = ts_parse_double(optarg, &a->util) || !(a->util > 0) || a->util > 1; break;
        case 'B': want = "a whole number of tokens in 1..16777216"; bad = ts_parse_i64(optarg, &a->max_batched) || a->max_batched < 1 || a->max_batched > (1 << 24); break;
        case 'o': want = "a number of GiB in 0..1024"; bad = ts_parse_double(optarg, &a->outside_gib) || !(a->outside_gib >= 0) || a->outside_gib > 1024; break;
        case 'W': want = "a number of GiB in 0..100000"; bad = ts_parse_double(optarg, &a->weights_gib) || !(a->weights_gib >= 0) || a->weights_gib > 1e5; break;
        case 'k': want = "a whole number of copies in 1..64"; bad = ts_parse_i64(optarg, &v) || v < 1 || v > 64; a->copies = (int32_t)v; break;
        case 'K': want = "tiled or whole"; a->whole = strcmp(optarg, "whole") == 0; bad = !a->whole && strcmp(optarg, "tiled") != 0; break;
        case 'h': mem_usage(stdout); return 1;
        default: cli_getopt_error("mem", c, argv, o); return -1;
        }
        if (bad) {
            fprintf(stderr, "tessera mem: --%s: '%s' is not %s\n", o[idx].name, optarg, want);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera mem: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* The bytes a chunk search keeps free of its budget: --search-margin-mib, else Mosaic's for m where
 * the step is chunked and simulated (the engine's own search, --live, keeps none) */
static int64_t search_margin(const struct mem_args *a, const struct model_cfg *m)
{
    const bool mosaics = a->chunking != CHUNK_NONE && !a->live;
    return chunk_search_margin(m, a->margin_mib >= 0 || mosaics ? a->margin_mib : 0);
}

static int64_t rows_for(const struct mem_args *a, int64_t T)
{
    return a->logit_rows >= 0 ? TS_MIN(a->logit_rows, T) : og_masked_rows(a->mask_ratio, T);
}

static int cmd_plan(const struct mem_args *a)
{
    struct model_cfg m;
    const struct planner_ops *p;
    struct ts_err err;
    if (model_resolve(a->model ? a->model : MODEL_DEFAULT, &m, &err) || planner_resolve(a->planner, &p, &err)) {
        fprintf(stderr, "tessera mem plan: %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct og_shape s = {a->tokens, rows_for(a, a->tokens), a->max_num_logits, a->ffn_chunks, a->softmax_copy,
                         a->fused_ffn, 1, a->layout};
    struct planner_opts po;
    planner_opts_defaults(&po);
    if (a->ilp_tensors > 0)
        po.ilp_max_tensors = a->ilp_tensors;
    if (a->ilp_seconds > 0)
        po.ilp_time_limit_s = a->ilp_seconds;
    struct opgraph g = {0}, prof = {0};
    if (p == planner_find("profiled")) { /* profiled at the dLLM-Serve defaults on this shape's knobs */
        struct og_shape ps = {16384, 16384, a->max_num_logits ? a->max_num_logits : 2048, 1, a->softmax_copy,
                              a->fused_ffn, 1, a->layout};
        opgraph_build(&prof, &m, &ps);
        po.profiled_graph = &prof;
    }
    int rc = 0;
    struct plan pl = {0};
    struct chunk_result cr = {0};
    double search_us = 0;
    const int64_t margin = search_margin(a, &m);
    if (a->budget_gib > 0) {
        const double t0 = ts_cpu_s(); /* CPU time: a busy machine's other work does not count */
        const int searched = chunk_search(a->chunking, &m, &s, p, &po, (int64_t)(a->budget_gib * TS_GIB) - margin,
                                          &cr, &err);
        search_us = (ts_cpu_s() - t0) * 1e6;
        if (searched) {
            fprintf(stderr, "tessera mem plan: %s\n", err.msg);
            rc = EXIT_USAGE;
            goto done;
        }
        pl = cr.plan;
        cr.plan.offsets = NULL;
        s = cr.choice.shape;
    } else if (opgraph_build(&g, &m, &s), planner_run(p, &g, &po, &pl, &err)) {
        fprintf(stderr, "tessera mem plan: %s\n", err.msg);
        rc = EXIT_USAGE;
        goto done;
    }
    opgraph_build(&g, &m, &s);
    double avg = opgraph_average(&g), theo = (double)opgraph_peak(&g);
    double infl = theo > 0 ? (double)pl.arena_bytes / theo - 1.0 : 0;
    if (a->json) {
        json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:i,s:i,s:I,s:I,s:I,s:f,s:f,s:f,s:i,s:i}", "model", m.name,
                              "planner", p->name, "tokens", (json_int_t)s.T, "logit_rows", (json_int_t)s.R,
                              "logit_chunk_rows", s.logit_chunk_rows, "ffn_chunks", s.ffn_chunks,
                              "peak_bytes", (json_int_t)pl.arena_bytes, "allocated_peak_bytes",
                              (json_int_t)(pl.allocated_peak ? pl.allocated_peak : pl.arena_bytes),
                              "theoretical_bytes", (json_int_t)theo, "inflation", infl, "peak_to_average",
                              avg > 0 ? theo / avg : 0, "plan_us", pl.plan_us, "tensors", g.n, "ops", g.num_ops);
        if (a->budget_gib > 0) {
            json_object_set_new(o, "fits", json_boolean(cr.choice.fits));
            json_object_set_new(o, "search_us", json_real(search_us));
            json_object_set_new(o, "plans_tried", json_integer(cr.choice.plans_tried));
            json_object_set_new(o, "search_margin_bytes", json_integer(margin));
        }
        if (pl.note[0])
            json_object_set_new(o, "note", json_string(pl.note));
        json_object_set_new(o, "fused_ffn", json_boolean(s.fused_ffn));
        json_object_set_new(o, "act_layout", json_string(og_layout_name(s.layout)));
        char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(o);
    } else {
        printf("%s, %lld tokens, %lld logit rows (chunks of %d), %d FFN chunks%s, %s layout: %d tensors over %d ops\n",
               m.name, (long long)s.T, (long long)s.R, s.logit_chunk_rows ? s.logit_chunk_rows : (int)s.R,
               s.ffn_chunks, s.fused_ffn ? " (fused)" : "", og_layout_name(s.layout), g.n, g.num_ops);
        printf("  planner %-12s peak %.3f GiB%s, theoretical %.3f GiB, inflation %+.1f%%\n", p->name,
               pl.arena_bytes / TS_GIB, pl.allocated_peak ? " reserved" : "", theo / TS_GIB, 100 * infl);
        if (pl.allocated_peak)
            printf("  allocated peak %.3f GiB\n", pl.allocated_peak / TS_GIB);
        printf("  peak-to-average %.2f, planning time %.1f us%s%s\n", avg > 0 ? theo / avg : 0, pl.plan_us,
               pl.note[0] ? "; " : "", pl.note);
        if (a->budget_gib > 0)
            printf("  budget %.2f GiB, the search keeping %.0f MiB free: %s after %d plans in %.1f us (%d logit "
                   "chunks, %d FFN chunks)%s%s\n", a->budget_gib, margin / TS_MIB,
                   cr.choice.fits ? "fits" : "does not fit", cr.choice.plans_tried, search_us, cr.choice.logit_chunks, cr.choice.ffn_chunks,
                   cr.choice.fits ? "" : ": ", cr.choice.why);
    }
    if (a->budget_gib > 0 && !cr.choice.fits)
        rc = 1;
done:
    plan_free(&pl);
    opgraph_free(&g);
    opgraph_free(&prof);
    return rc;
}

/* Whether a FULL step of L tokens fits next to the weights; fills the chunk counts used. */
static bool fits(const struct model_cfg *m, const struct mem_args *a, const struct planner_ops *p,
                 int64_t budget, int64_t L, struct chunk_result *cr, struct ts_err *err)
{
    struct og_shape s = {L, rows_for(a, L), 0, 1, a->softmax_copy, a->fused_ffn, 1, a->layout};
    struct planner_opts po;
    planner_opts_defaults(&po);
    po.ilp_max_tensors = 0; /* lmax plans big graphs: the heuristics only */
    plan_free(&cr->plan);
    if (chunk_search(a->chunking, m, &s, p, &po, budget, cr, err))
        return false;
    return cr->choice.fits;
}

struct fits_ctx {
    const struct model_cfg *m;
    const struct mem_args *a;
    const struct planner_ops *p;
    int64_t budget;
    struct chunk_result *cr;
    struct ts_err *err;
};

static int fits_at(void *ctx, int64_t L)
{
    struct fits_ctx *c = ctx;
    return fits(c->m, c->a, c->p, c->budget, L, c->cr, c->err); /* a failed plan counts as not fitting */
}

/* The simulated L_max: the largest length that fits(); cr gets the chunking at L_max. */
static int64_t sim_lmax(const struct model_cfg *m, const struct mem_args *a, const struct planner_ops *p,
                        int64_t budget, struct chunk_result *cr, struct ts_err *err)
{
    struct fits_ctx c = {m, a, p, budget, cr, err};
    int64_t lo = ts_search_largest(fits_at, &c, (1LL << 26) - 1);
    if (lo > 0)
        fits(m, a, p, budget, lo, cr, err); /* the chunking at L_max */
    return lo;
}

static const char *const chunking_names[] = {"none", "lazy", "brute"};

/* --live: the engine measures it (engine/eng_lmax.c). */
static int lmax_live(const struct mem_args *a, const struct model_cfg *m, const struct planner_ops *p,
                     int64_t limit, int64_t simulated)
{
    struct ts_err err;
    engine_lmax_fn fn;
    *(void **)&fn = engine_symbol("eng_lmax_live", &err);
    if (!fn) {
        fprintf(stderr, "tessera mem lmax --live: %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct lmax_live_req q = {m, p->name, a->chunking, a->mask_ratio, a->softmax_copy, limit, a->layers,
                              TS_MAX((int64_t)4096, TS_MIN(2 * simulated + 1024, (int64_t)1 << 24)), a->seed};
    struct lmax_live_result r;
    if (fn(&q, &r, &err)) {
        fprintf(stderr, "tessera mem lmax --live: %s\n", err.msg);
        return 1;
    }
    if (a->json) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:i,s:i,s:i,s:i,s:f,s:s}",
                              "model", m->name, "device", r.device, "planner", p->name, "chunking",
                              chunking_names[a->chunking], "mask_ratio", a->mask_ratio, "mem_limit_bytes",
                              (json_int_t)limit, "lmax_live", (json_int_t)r.lmax, "lmax_simulated",
                              (json_int_t)simulated, "weights_bytes", (json_int_t)r.weights, "fixed_bytes",
                              (json_int_t)r.fixed, "planned_bytes", (json_int_t)r.planned, "theoretical_bytes",
                              (json_int_t)r.theoretical, "mapped_bytes", (json_int_t)r.mapped, "used_bytes",
                              (json_int_t)r.used, "logit_chunks", r.logit_chunks, "ffn_chunks", r.ffn_chunks,
                              "layers_run", r.layers_run, "layers", r.layers_total, "probes", r.probes,
                              "step_ms", r.step_ms, "next_fails", r.why_next);
        char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(o);
        return 0;
    }
    printf("%s on %s, planner %s, chunking %s, logits for %s, hard limit %.2f GB:\n", m->name, r.device,
           p->name, chunking_names[a->chunking], a->mask_ratio >= 0 ? "the masked rows" : "every row", limit / 1e9);
    printf("  L_max = %lld tokens live (simulated with a %.2f GiB reserve: %lld, %+.1f%%), %d probes\n",
           (long long)r.lmax, a->reserve_gib, (long long)simulated,
           simulated > 0 ? 100.0 * ((double)r.lmax / (double)simulated - 1) : 0, r.probes);
    printf("  before activations: %.3f GiB in use (weights %.3f GiB, the rest buffers and the CUDA context)\n",
           r.fixed / TS_GIB, r.weights / TS_GIB);
    printf("  at L_max: plan %.3f GiB (theoretical %.3f GiB), mapped %.3f GiB, in use after the step %.3f GiB "
           "of %.3f GiB\n", r.planned / TS_GIB, r.theoretical / TS_GIB, r.mapped / TS_GIB, r.used / TS_GIB,
           limit / TS_GIB);
    printf("  %d logit chunks, %d FFN chunks; ran %d of %d layers and the LM head in %.1f ms\n", r.logit_chunks,
           r.ffn_chunks, r.layers_run, r.layers_total, r.step_ms);
    printf("  L_max + 1: %s\n", r.why_next);
    return 0;
}

static int cmd_lmax(const struct mem_args *a)
{
    struct model_cfg m;
    const struct planner_ops *p;
    struct ts_err err;
    struct gpu_table *t = gpu_table_create();
    struct gpu_spec gpu;
    int rc = model_resolve(a->model ? a->model : MODEL_DEFAULT, &m, &err) || planner_resolve(a->planner, &p, &err) ||
             gpu_lookup(t, a->gpu, &gpu, &err);
    gpu_table_destroy(t);
    if (rc) {
        fprintf(stderr, "tessera mem lmax: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (p == planner_find("profiled")) {
        fprintf(stderr, "tessera mem lmax: the profiled planner reserves for a fixed step; use caching to "
                        "model dLLM-Serve's allocator\n");
        return EXIT_USAGE;
    }
    if (a->live && a->fused_ffn) {
        fprintf(stderr, "tessera mem lmax --live: the engine plans its FFN split; drop --fused-ffn\n");
        return EXIT_USAGE;
    }
    if (a->live && a->layout != OG_LAYOUT_ENGINE) {
        fprintf(stderr, "tessera mem lmax --live: the engine lays out its own layer; drop --act-layout\n");
        return EXIT_USAGE;
    }
    if (a->live && a->softmax_copy == 8) {
        fprintf(stderr, "tessera mem lmax --live: the engine writes a 4-byte softmax copy (--softmax-copy 4) or none\n");
        return EXIT_USAGE;
    }
    int64_t mem = a->mem_limit_gb > 0 ? (int64_t)(a->mem_limit_gb * 1e9) : gpu.mem_bytes;
    const int64_t margin = search_margin(a, &m);
    int64_t budget = mem - (int64_t)(a->reserve_gib * TS_GIB) - model_weight_bytes(&m) - margin;
    if (budget <= 0) {
        fprintf(stderr, "tessera mem lmax: %s's weights%s do not fit %.2f GB\n", m.name,
                margin ? " and the chunk search's margin" : "", mem / 1e9);
        return EXIT_USAGE;
    }
    struct chunk_result cr = {0};
    int64_t lo = sim_lmax(&m, a, p, budget, &cr, &err);
    plan_free(&cr.plan);
    if (a->live)
        return lmax_live(a, &m, p, mem, lo);
    const char *where = a->mem_limit_gb > 0 ? "a memory limit" : gpu.name;
    char kept[64] = "";
    if (margin)
        snprintf(kept, sizeof kept, ", the chunk search keeping %.0f MiB more free", margin / TS_MIB);
    if (a->json)
        printf("{\"model\":\"%s\",\"gpu\":\"%s\",\"mem_bytes\":%lld,\"planner\":\"%s\",\"chunking\":\"%s\","
               "\"mask_ratio\":%g,\"lmax\":%lld,\"activation_budget_bytes\":%lld,\"logit_chunks\":%d,"
               "\"ffn_chunks\":%d,\"search_margin_bytes\":%lld,\"act_layout\":\"%s\"}\n", m.name, where,
               (long long)mem, p->name, chunking_names[a->chunking], a->mask_ratio, (long long)lo, (long long)budget,
               cr.choice.logit_chunks, cr.choice.ffn_chunks, (long long)margin, og_layout_name(a->layout));
    else
        printf("%s on %s (%.2f GB), planner %s, chunking %s, %s layout, logits for %s: L_max = %lld tokens "
               "(activations may use %.2f GiB%s; at L_max: %d logit chunks, %d FFN chunks)\n", m.name, where,
               mem / 1e9, p->name, chunking_names[a->chunking], og_layout_name(a->layout),
               a->mask_ratio >= 0 ? "the masked rows" : "every row", (long long)lo, budget / TS_GIB, kept,
               cr.choice.logit_chunks, cr.choice.ffn_chunks);
    return 0;
}

/* vLLM's DiffusionGemma sampler at a step of each count of canvases (sampler_mem.h). */
static int cmd_sampler(const struct mem_args *a)
{
    struct model_cfg m;
    struct gpu_spec g = {0};
    struct ts_err err;
    const char *model = a->model ? a->model : "diffusion-gemma";
    struct gpu_table *gt = gpu_table_create();
    const int bad = model_resolve(model, &m, &err) || (a->mem_limit_gb <= 0 && gpu_lookup(gt, a->gpu, &g, &err));
    gpu_table_destroy(gt);
    if (bad) {
        fprintf(stderr, "tessera mem sampler: %s\n", err.msg);
        return EXIT_USAGE;
    }
    const int64_t device = a->mem_limit_gb > 0 ? (int64_t)(a->mem_limit_gb * 1e9) : g.mem_bytes;
    const int64_t weights = a->weights_gib >= 0 ? (int64_t)(a->weights_gib * TS_GIB) : model_weight_bytes(&m);
    struct sampler_setup su;
    if (sampler_setup_make(&m, device, a->util, a->outside_gib, a->max_batched, a->max_num_seqs, a->canvas, a->copies,
                           !a->whole, &su, &err)) {
        fprintf(stderr, "tessera mem sampler: %s\n", err.msg);
        return EXIT_USAGE;
    }
    const int64_t slack = su.slack_bytes;
    const int64_t pool = sampler_kv_pool(&su, weights);
    if (pool <= 0) {
        fprintf(stderr, "tessera mem sampler: --gpu-memory-utilization %g of %.1f GiB holds no KV pool after %.2f GiB "
                        "of weights and %.2f GiB of the profile run's activations (vLLM refuses to start)\n",
                a->util, device / TS_GIB, weights / TS_GIB, slack / TS_GIB);
        return 1;
    }
    const int32_t holds = sampler_mem_max(&su, a->max_num_seqs);
    json_t *rows = a->json ? json_array() : NULL;
    if (!a->json) {
        printf("vLLM's DiffusionGemma sampler (%s) on %s at --gpu-memory-utilization %g: %s, canvas %d, vocabulary %d\n",
               a->whole ? "every canvas at once" : "request-tiled", a->mem_limit_gb > 0 ? "--mem-limit" : g.name,
               a->util, m.name, a->canvas, m.vocab);
        printf("  budget %.1f GiB: weights %.2f, the profile run's activations %.2f (free at a step), KV pool %.1f; "
               "outside it %.2f GiB, %.2f held (--outside-gib)\n", a->util * device / TS_GIB, weights / TS_GIB,
               slack / TS_GIB, pool / TS_GIB, (1 - a->util) * device / TS_GIB, a->outside_gib);
        printf("  %8s %6s %12s %16s %9s %10s %9s\n", "canvases", "group", "fp32 logits", "sampler copies", "peak",
               "available", "headroom");
    }
    for (int32_t n = 1; n <= a->max_num_seqs; n = n < a->max_num_seqs && 2 * n > a->max_num_seqs ? a->max_num_seqs : 2 * n) {
        struct sampler_step st;
        sampler_mem_at(&su, n, &st);
        if (rows)
            json_array_append_new(rows, json_pack("{s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:b}", "canvases", n, "group", st.group,
                                                  "logit_bytes", (json_int_t)st.logit_bytes, "transient_bytes",
                                                  (json_int_t)st.transient_bytes, "need_bytes", (json_int_t)st.need_bytes,
                                                  "free_bytes", (json_int_t)st.free_bytes, "available_bytes",
                                                  (json_int_t)st.avail_bytes, "oom", st.oom));
        else
            printf("  %8d %6d %12.2f %16.2f %9.2f %10.2f %+9.2f%s\n", n, st.group, st.logit_bytes / TS_GIB,
                   st.transient_bytes / TS_GIB, st.need_bytes / TS_GIB, st.avail_bytes / TS_GIB,
                   (st.avail_bytes - st.need_bytes) / TS_GIB, st.oom ? "  out of memory" : "");
        if (n == a->max_num_seqs)
            break;
    }
    if (rows) {
        json_t *o = json_pack("{s:s,s:s,s:f,s:i,s:i,s:I,s:I,s:I,s:I,s:i,s:o}", "model", m.name, "code",
                              a->whole ? "whole" : "tiled", "util", a->util, "canvas", a->canvas, "copies", a->copies,
                              "device_bytes", (json_int_t)device, "weight_bytes", (json_int_t)weights, "slack_bytes",
                              (json_int_t)slack, "kv_pool_bytes", (json_int_t)pool, "holds", holds, "steps", rows);
        char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(o);
    } else {
        printf("  a step holds %d canvas%s without running out of memory: --max-num-seqs %d %s\n", holds,
               holds == 1 ? "" : "es", a->max_num_seqs,
               holds >= a->max_num_seqs ? "fits" : "runs out of memory at its first full batch");
    }
    return 0; /* (the verdict is the answer: printed, and "holds" in the JSON) */
}

int cli_mem(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        mem_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    struct mem_args a;
    int rc = parse(argc - 1, argv + 1, &a);
    if (rc)
        return rc > 0 ? 0 : EXIT_USAGE;
    if (strcmp(argv[1], "plan") == 0)
        return cmd_plan(&a);
    if (strcmp(argv[1], "lmax") == 0)
        return cmd_lmax(&a);
    if (strcmp(argv[1], "sampler") == 0)
        return cmd_sampler(&a);
    fprintf(stderr, "tessera mem: unknown subcommand '%s' (plan, lmax, sampler)\n", argv[1]);
    return EXIT_USAGE;
}
