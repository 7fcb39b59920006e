/*
 * harness.h: what the engine's harness files share (the `tessera engine` subcommands and the live
 * adapter, which tie the engine to the simulator's configuration; the engine proper knows nothing
 * of the simulator above sim/core).
 */
#ifndef TESSERA_HARNESS_H
#define TESSERA_HARNESS_H

#include "eng.h"

/* The engine as the simulator's implementation profile impl runs it: one with a fused FFN
 * (tessera-fused) sets ffn to 1; any other leaves o as it is. */
struct impl_profile;
void eng_opts_follow_impl(struct eng_opts *o, const struct impl_profile *impl);

/* The engine's choices (eng_choices) as every engine command's options: their getopt entries (all
 * of value ENG_CHOICE_OPT), their --help lines, and one given (its option's name and value) set in
 * c, the engine fields of a sim_config, by that option's row of tessera sim's table (config.c): 0, or
 * EXIT_USAGE said on stderr naming the command, the option and its choices or range. */
struct sim_config;
#define ENG_CHOICE_OPT 1000
#define ENG_CHOICE_OPTS \
    {"attention", required_argument, 0, ENG_CHOICE_OPT}, {"ffn", required_argument, 0, ENG_CHOICE_OPT}, \
        {"routing", required_argument, 0, ENG_CHOICE_OPT}, {"select-at", required_argument, 0, ENG_CHOICE_OPT}, \
        {"kernels", required_argument, 0, ENG_CHOICE_OPT}, {"gemm-algos", required_argument, 0, ENG_CHOICE_OPT}, \
        {"gemm-cache", required_argument, 0, ENG_CHOICE_OPT}
extern const char eng_choices_usage[];
int eng_choice_take(const char *cmd, const char *name, const char *value, struct sim_config *c);
/* The engine's choices a configuration holds, into *out (its gemm_cache is pointed to, not copied),
 * for eng_opts_defaults. */
void eng_choices_of(const struct sim_config *c, struct eng_choices *out);

/* --step SEGS,Q,KV,LOGIT_ROWS[,KV_LONG] (text) into st[5] (KV_LONG 0 when not given): -1, said on
 * stderr naming cmd, when malformed or out of range, or st NULL (one step more than the max a
 * command takes). */
int eng_parse_step(const char *cmd, int max, const char *text, int32_t *st);

/* `tessera engine generate ARGS` (eng_generate.c): argv[0] is "generate". */
int eng_generate_main(int argc, char **argv);

#endif
