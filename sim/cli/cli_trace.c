/*
 * cli_trace.c: `tessera trace info FILE`, `tessera trace gen ...`, `tessera trace fit FILE`.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "trace.h"

static void trace_usage(FILE *f)
{
    fprintf(f,
"usage: tessera trace info FILE [--skip-bad-rows] [--json]\n"
"       tessera trace fit  FILE [--skip-bad-rows]\n"
"       tessera trace gen  [--requests N] [--rps R] [--arrivals poisson|gamma:CV]\n"
"                          [--lengths SPEC] [--rescale FILE] [--seed S] [--out FILE [--force]]\n"
"\n"
"info   counts, duration, rate, inter-arrival CV and length percentiles of a trace file\n"
"       (Azure CSV, BurstGPT CSV, Mooncake JSONL, length-only CSV, tessera CSV)\n"
"fit    a lognormal fit of prompt and output lengths, printed as a --lengths spec, and the\n"
"       file's rate and CV, printed as --rps and --arrivals\n"
"gen    writes a tessera CSV (arrival_ns,prompt_tokens,output_tokens) to --out [stdout]:\n"
"       N requests [1000] at R req/s [1] with poisson or gamma:CV arrivals [poisson] and\n"
"       lengths from SPEC: sharegpt | sharegpt-first | wildchat | math | osc | livebench |\n"
"       burstgpt | fixed:P,O | lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O | file:PATH (rows sampled\n"
"       from a trace) [sharegpt]; --rescale FILE instead rescales a\n"
"       real trace's arrival times to R req/s (and keeps its first N requests if N is given);\n"
"       an --out FILE that holds something is refused unless --force, and FILE is written whole\n"
"       or not at all\n");
}

static int load(const char *path, bool skip_bad, struct trace *t)
{
    struct ts_err err;
    if (trace_load(path, skip_bad, t, &err)) {
        fprintf(stderr, "tessera trace: %s\n", err.msg);
        return -1;
    }
    if (t->skipped_rows)
        fprintf(stderr, "%s: skipped %lld malformed rows\n", path, (long long)t->skipped_rows);
    if (t->skipped_bom)
        fprintf(stderr, "%s: note: skipped the UTF-8 byte-order mark it begins with\n", path);
    return 0;
}

static json_t *dist_json(const struct dist_stats *d)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "mean", d->mean, "p50", d->p50, "p90", d->p90,
                     "p99", d->p99, "min", d->min, "max", d->max);
}

static int cmd_info(const char *path, bool skip_bad, bool as_json)
{
    struct trace t;
    if (load(path, skip_bad, &t))
        return EXIT_USAGE;
    struct trace_stats s;
    trace_stats_compute(&t, &s);
    if (as_json) {
        json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:b}", "file", path, "format",
                              trace_format_name(t.format), "requests", (json_int_t)s.n,
                              "skipped_rows", (json_int_t)t.skipped_rows, "has_times", t.has_times);
        json_object_set_new(o, "duration_s", json_real(s.duration_s));
        json_object_set_new(o, "rate_rps", json_real(s.rate_rps));
        json_object_set_new(o, "interarrival_cv", json_real(s.cv));
        json_object_set_new(o, "prompt", dist_json(&s.prompt));
        json_object_set_new(o, "output", dist_json(&s.output));
        char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", txt);
        free(txt);
        json_decref(o);
    } else {
        printf("%s: %s trace, %lld requests%s\n", path, trace_format_name(t.format), (long long)s.n,
               t.has_times ? "" : " (lengths only, no arrival times)");
        if (t.has_times)
            printf("  arrivals  %.1f s, %.3f req/s, inter-arrival CV %.2f\n", s.duration_s,
                   s.rate_rps, s.cv);
        printf("  %-8s  %10s %8s %8s %8s %8s %8s\n", "tokens", "mean", "p50", "p90", "p99", "min",
               "max");
        const struct dist_stats *d[2] = {&s.prompt, &s.output};
        const char *names[2] = {"prompt", "output"};
        for (int i = 0; i < 2; i++)
            printf("  %-8s  %10.1f %8.0f %8.0f %8.0f %8.0f %8.0f\n", names[i], d[i]->mean,
                   d[i]->p50, d[i]->p90, d[i]->p99, d[i]->min, d[i]->max);
    }
    trace_free(&t);
    return 0;
}

static int cmd_fit(const char *path, bool skip_bad)
{
    struct trace t;
    if (load(path, skip_bad, &t))
        return EXIT_USAGE;
    struct trace_stats s;
    trace_stats_compute(&t, &s);
    printf("--lengths lognormal:%.4f,%.4f,%.4f,%.4f\n", s.mu_p, s.sigma_p, s.mu_o, s.sigma_o);
    if (t.has_times && s.rate_rps > 0)
        printf("--rps %.4f --arrivals gamma:%.3f\n", s.rate_rps, s.cv > 0 ? s.cv : 1.0);
    trace_free(&t);
    return 0;
}

/* `trace gen`: its workload options (--requests, --rps, --arrivals, --lengths, --seed) are rows of
 * tessera sim's table (config.c), parsed and checked by it, their defaults its own; --requests and
 * --rps unset (0) are 1000 requests at 1 req/s here. */
static int cmd_gen(int argc, char **argv)
{
    enum { WORKLOAD = 'w' };
    static const struct option o[] = {
        {"requests", required_argument, 0, WORKLOAD}, {"rps", required_argument, 0, WORKLOAD},
        {"arrivals", required_argument, 0, WORKLOAD}, {"lengths", required_argument, 0, WORKLOAD},
        {"seed", required_argument, 0, WORKLOAD},     {"out", required_argument, 0, 'o'},
        {"rescale", required_argument, 0, 'R'},       {"help", no_argument, 0, 'h'},
        {"force", no_argument, 0, 'f'},               {0, 0, 0, 0}};
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    struct ts_err err;
    const char *out = "-", *rescale = NULL;
    bool force = false;
    optind = 1;
    opterr = 0;
    int c, idx = 0;
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        switch (c) {
        case WORKLOAD:
            if (cfg_option_set(cfg_option_find(o[idx].name), optarg, &cfg, &err)) {
                fprintf(stderr, "tessera trace gen: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'o': out = optarg; break;
        case 'R': rescale = optarg; break;
        case 'f': force = true; break;
        case 'h': trace_usage(stdout); return 0;
        default: return cli_getopt_error("trace gen", c, argv, o);
        }
    }
    const int64_t n = cfg.requests, seed = cfg.seed;
    const double rps = cfg.rps > 0 ? cfg.rps : 1.0;
    const char *arrivals = cfg.arrivals, *lengths = cfg.lengths;
    if (optind < argc) {
        fprintf(stderr, "tessera trace gen: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (cli_check_out_file("trace gen", out, force))
        return EXIT_USAGE;
    struct trace t = {0}, src = {0};
    if (rescale) {
        if (load(rescale, false, &t))
            return EXIT_USAGE;
        if (n > 0)
            trace_truncate(&t, n);
        if (t.has_times) {
            if (trace_rescale(&t, rps, &err))
                goto bad;
        } else {
            struct arrival_gen ag;
            if (arrival_parse(arrivals, rps, &ag, &err) || trace_assign_arrivals(&t, &ag, (uint64_t)seed, &err))
                goto bad;
        }
    } else {
        struct arrival_gen ag;
        struct length_gen lg;
        if (arrival_parse(arrivals, rps, &ag, &err))
            goto bad;
        if (strncmp(lengths, "file:", 5) == 0) {
            if (load(lengths + 5, false, &src))
                return EXIT_USAGE;
            lg = (struct length_gen){.kind = LENGTH_SAMPLE, .src = &src};
        } else if (length_parse(lengths, &lg, &err)) {
            goto bad;
        }
        if (trace_generate(&t, n > 0 ? n : 1000, &ag, &lg, (uint64_t)seed, &err))
            goto bad;
    }
    if (trace_write(&t, out, &err))
        goto bad;
    trace_free(&t);
    trace_free(&src);
    return 0;
bad:
    fprintf(stderr, "tessera trace gen: %s\n", err.msg);
    trace_free(&t);
    trace_free(&src);
    return EXIT_USAGE;
}

int cli_trace(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        trace_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "gen") == 0)
        return cmd_gen(argc - 1, argv + 1);
    if (strcmp(sub, "info") == 0 || strcmp(sub, "fit") == 0) {
        const char *path = NULL;
        bool skip_bad = false, as_json = false;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--skip-bad-rows") == 0)
                skip_bad = true;
            else if (strcmp(argv[i], "--json") == 0)
                as_json = true;
            else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                trace_usage(stdout);
                return 0;
            } else if (!path && argv[i][0] != '-')
                path = argv[i];
            else if (argv[i][0] == '-' && argv[i][1] == '-')
                return cli_unknown_in_list(sub[0] == 'i' ? "trace info" : "trace fit", argv[i],
                                           sub[0] == 'i' ? "--skip-bad-rows --json --help" : "--skip-bad-rows --help");
            else {
                fprintf(stderr, "tessera trace %s: unexpected argument '%s'\n", sub, argv[i]);
                return EXIT_USAGE;
            }
        }
        if (!path) {
            fprintf(stderr, "tessera trace %s: which FILE?\n", sub);
            return EXIT_USAGE;
        }
        return sub[0] == 'i' ? cmd_info(path, skip_bad, as_json) : cmd_fit(path, skip_bad);
    }
    fprintf(stderr, "tessera trace: unknown subcommand '%s' (info, gen, fit)\n", sub);
    return EXIT_USAGE;
}
