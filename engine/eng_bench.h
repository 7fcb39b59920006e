/* eng_bench.h: `tessera engine bench`: measured ceilings, then dLLM steps and attention timed
 * against their floors. */
#ifndef TESSERA_ENG_BENCH_H
#define TESSERA_ENG_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

struct eng_bench_opts {
    struct model_cfg model;
    int reps;             /* timed repetitions per case (median reported) */
    int logit_chunk;
    int64_t mem_limit;    /* bytes, 0 = free memory */
    FILE *json;           /* one JSON object per line, or NULL */
    const char *only;     /* "steps", "gemm" or "attention"; NULL = all */
    const char *weights;  /* safetensors file or directory; NULL = random weights */
    double warm_s;        /* graph replays' warm-up, seconds (eng_opts.warm_s) */
    FILE *warm_trace;     /* each warm-up round's time, CSV (eng_set_warm_trace), or NULL */
};

int eng_bench_run(const struct eng_bench_opts *o, FILE *out);

#endif
