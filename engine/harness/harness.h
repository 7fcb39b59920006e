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

/* `tessera engine generate ARGS` (eng_generate.c): argv[0] is "generate". */
int eng_generate_main(int argc, char **argv);

#endif
