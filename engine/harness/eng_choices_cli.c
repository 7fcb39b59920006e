/*
 * eng_choices_cli.c: the engine's choices (eng_choices) as every engine command's options
 * (harness.h): their --help, one given taken into a configuration by its row of tessera sim's table
 * (config.c), and a configuration's choices for the engines it makes (eng_opts_defaults).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "eng.h"
#include "harness.h"

const char eng_choices_usage[] =
"every engine command (and tessera sim --executor gpu) takes the engine's choices:\n"
"--attention mma|wgmma|auto  the attention kernel: auto (the default) runs segments of 96 or more\n"
"       query rows (Refresh, prefill) on the wgmma kernel (Hopper, head dim 128) and shorter ones\n"
"       (Reuse) on the mma.sync kernel, except a single segment of at most 128 rows over 2,048 keys\n"
"       or more (mma.sync, keys split over blocks); bench times every step with each kernel alone too\n"
"--ffn split|fused|auto  the FFN's gate/up GEMM: split (the default; what the shipped calibrations\n"
"       measured) writes the [rows, 2 ffn] product through cuBLASLt and reads it back for SwiGLU;\n"
"       fused computes SwiGLU in the epilogue of the engine's own Hopper GEMM (TMA, wgmma); auto\n"
"       fuses where that measured faster (64-128 rows, and 512 and up on an H200); bench times\n"
"       every step all three ways\n"
"--routing auto|router|balanced  a mixture of experts' experts: balanced (auto's choice on random\n"
"       weights) draws each row's k uniformly by a hash of its row, layer and expert; router (auto's\n"
"       on a checkpoint) takes the router's top k\n"
"--select-at end|layer  where sparse selections run: after the step's last layer (the default) or\n"
"       after each layer's attention\n"
"--kernels device|portable  portable runs the kernels of a GPU before Hopper on any device (no\n"
"       wgmma, TMA, clusters or programmatic launch) [device: the device's own]\n"
"--gemm-algos N  cuBLASLt's candidates a new GEMM shape's tuning times, 1 to 128 [16]\n";

int eng_choice_take(const char *cmd, const char *name, const char *value, struct sim_config *c)
{
    struct ts_err err;
    if (strcmp(name, "gemm-cache") == 0 && !*value) /* (the table's "" is "none": named, a file is wanted) */
        ts_fail(&err, "--gemm-cache: which file?");
    else if (cfg_option_set(cfg_option_find(name), value, c, &err) == 0)
        return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, err.msg);
    return EXIT_USAGE;
}

void eng_choices_of(const struct sim_config *c, struct eng_choices *out)
{
    *out = (struct eng_choices){.attention = c->attention, .ffn = c->ffn, .routing = c->routing,
                                .select_at = c->select_at, .portable = c->kernels == 1, .gemm_algos = c->gemm_algos,
                                .gemm_cache = c->gemm_cache[0] ? c->gemm_cache : NULL};
}
