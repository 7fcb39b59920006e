/*
 * check_engine_main.c: the engine's GPU test suite as a program (build/tests/gpu/check_engine, linked
 * against the engine library; `make check-gpu` runs it): its options, and --tp's launch.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_engine.h"
#include "cli.h"
#include "config.h"
#include "eng.h"
#include "kernels.h"
#include "eng_tp.h"
#include "harness.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: check_engine [--seed S] [--only kernels|steps|steps:K/N|select|fc|focus|elastic|moe|generate|moves|\n"
"                     sparsed]\n"
"                    [engine choices]\n"
"       check_engine --tp N [--seed S] [engine choices]\n"
"\n"
"Every kernel and whole steps of tiny models on the GPU against the CPU reference (normwise\n"
"relative errors against bf16-appropriate bounds); exit 1 on any failure. --only kernels or\n"
"--only steps runs one half (the sanitizers run them apart), --only steps:K/N the K-th of N parts\n"
"of the steps half (its groups of checks dealt in turn); --only select the sparse selection's\n"
"checks alone (kernels and whole steps), --only fc the feature cache's (dLLM-Cache), --only focus\n"
"the token eviction's (FOCUS), --only elastic the input cache's (Elastic-Cache's steps), --only\n"
"moe the mixture of experts' (routing, dispatch, grouped expert GEMMs, whole steps of tiny MoE\n"
"models), --only generate the unmasking kernel's and whole generations' (real token ids fed\n"
"back), --only moves a request's K/V moved between two engines (a disaggregated fleet's move),\n"
"--only sparsed SparseD's patterns and the attention by them (kernels, whole steps, a generation).\n"
"--tp N (2 to 8) runs as N processes, one per GPU (GPUs 0 to N - 1), over NCCL; rank 0 reports,\n"
"       and a rank that fails stops the others: LLaDA-8B, Dream-7B and LLaDA2.0-mini split over\n"
"       the N GPUs (heads, FFN, experts' widths and the LM head's vocabulary; an all-reduce after\n"
"       o_proj and after the FFN) against one GPU on the same weights, step by step: the final\n"
"       rows, the logits' maxima and confidences within 2e-2, and the same argmax but for near ties\n"
"%s",
            eng_choices_usage);
}

struct eng_choices check_choices = {.attention = 2};

int main(int argc, char **argv)
{
    static const struct option o[] = {{"seed", required_argument, 0, 's'}, {"only", required_argument, 0, 'o'},
                                      {"tp", required_argument, 0, 'P'},   ENG_CHOICE_OPTS,
                                      {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    int64_t seed = 1, tp = 1;
    long part = 0, parts = 0;
    const char *only = NULL;
    struct sim_config choices;
    sim_config_defaults(&choices);
    int c, idx = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        bool bad = false;
        switch (c) {
        case 's': bad = ts_parse_i64(optarg, &seed) || seed < 0; break;
        case 'P': bad = ts_parse_i64(optarg, &tp) || tp < 1 || tp > ENG_TP_MAX; break;
        case 'o':
            only = optarg;
            if (strncmp(optarg, "steps:", 6) == 0) { /* steps:K/N */
                char *end = NULL;
                part = strtol(optarg + 6, &end, 10);
                parts = *end == '/' ? strtol(end + 1, &end, 10) : 0;
                bad = *end || parts < 1 || parts > 64 || part < 1 || part > parts;
                only = "steps";
                break;
            }
            bad = strcmp(optarg, "kernels") && strcmp(optarg, "steps") && strcmp(optarg, "select") &&
                  strcmp(optarg, "fc") && strcmp(optarg, "focus") && strcmp(optarg, "elastic") && strcmp(optarg, "moe") &&
                  strcmp(optarg, "generate") && strcmp(optarg, "moves") && strcmp(optarg, "sparsed");
            break;
        case 'h': usage(stdout); return 0;
        case ENG_CHOICE_OPT:
            if (eng_choice_take("check_engine", o[idx].name, optarg, &choices))
                return EXIT_USAGE;
            break;
        default: return cli_getopt_error("check_engine", c, argv, o);
        }
        if (bad) {
            fprintf(stderr, "check_engine: --%s: bad value '%s' (see --help)\n", o[idx].name, optarg);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "check_engine: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    eng_choices_of(&choices, &check_choices);
    k_set_portable(check_choices.portable); /* the kernels' own checks run as the suite's engines do */
    setvbuf(stdout, NULL, _IOLBF, 0); /* a line a check, kept whole when a sanitizer's time limit kills the run */
    if (tp == 1)
        return check_engine_run((uint64_t)seed, only, (int)part, (int)parts, stdout);
    if (only) {
        fprintf(stderr, "check_engine --tp: --only runs on one GPU\n");
        return EXIT_USAGE;
    }
    int rank;
    const int in = eng_tp_in_launch("check_engine", &rank);
    if (in < 0)
        return EXIT_USAGE;
    return in ? check_engine_tp_run((int)tp, (uint64_t)seed, stdout)
              : eng_tp_launch((int)tp, argc - 1, argv + 1); /* the launcher: this program once per GPU */
}
