/*
 * harness.h: what the engine's harness files share (the `tessera engine` subcommands and the live
 * adapter, which tie the engine to the simulator's configuration; the engine proper knows nothing
 * of the simulator above sim/core).
 */
#ifndef TESSERA_HARNESS_H
#define TESSERA_HARNESS_H

#include "eng.h"

/* The engine as the simulator's implementation profile impl_name runs it: one with a fused FFN
 * (tessera-fused) sets ffn to 1; any other name, or none, leaves o as it is. */
void eng_opts_follow_impl(struct eng_opts *o, const char *impl_name);

/* The engine's choices (eng_choices) as every engine command's options: their getopt entries (values
 * ENG_CHOICE_OPT and on), their --help lines, and an option of theirs taken into ch: 0, or -1 said on
 * stderr naming the command, the option and its choices or range. */
#define ENG_CHOICE_OPT 1000
#define ENG_CHOICE_OPTS \
    {"attention", required_argument, 0, ENG_CHOICE_OPT}, {"ffn", required_argument, 0, ENG_CHOICE_OPT + 1}, \
        {"routing", required_argument, 0, ENG_CHOICE_OPT + 2}, {"select-at", required_argument, 0, ENG_CHOICE_OPT + 3}, \
        {"kernels", required_argument, 0, ENG_CHOICE_OPT + 4}, {"gemm-algos", required_argument, 0, ENG_CHOICE_OPT + 5}, \
        {"gemm-cache", required_argument, 0, ENG_CHOICE_OPT + 6}
#define ENG_CHOICE_COUNT 7
extern const char eng_choices_usage[];
int eng_choice_take(const char *cmd, int opt, const char *value, struct eng_choices *ch);

/* `tessera engine generate ARGS` (eng_generate.c): argv[0] is "generate". */
int eng_generate_main(int argc, char **argv);

#endif
