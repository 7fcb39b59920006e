/* engine_bench.h: the engine's benchmark (build/engine_bench): measured ceilings, the GEMMs and
 * attention alone, the peer and host links (engine_bench.c); dLLM steps timed against their floors
 * (engine_bench_steps.c); the split engine beside one GPU (engine_bench_tp.c). */
#ifndef TESSERA_ENGINE_BENCH_H
#define TESSERA_ENGINE_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "eng_anchor.h"
#include "eng_choices.h"
#include "model.h"

#define ENG_BENCH_MAX_STEPS 8     /* --step at most this often */
#define ENG_BENCH_MAX_TOKENS 8192 /* query tokens of a bench step (its workspace's rows) */

struct engine_bench_opts {
    struct model_cfg model;
    int reps;             /* timed repetitions per case (median reported) */
    int logit_chunk_rows;
    int64_t mem_limit;    /* bytes, 0 = free memory */
    FILE *json;           /* one JSON object per line, or NULL */
    const char *only;     /* "steps", "gemm", "attention", "focus" or "anchor"; NULL = all but "anchor" */
    const char *weights;  /* safetensors file or directory; NULL = random weights */
    double warm_s;        /* graph replays' warm-up, seconds (eng_opts.warm_s) */
    FILE *warm_trace;     /* each warm-up round's time, CSV (eng_set_warm_trace), or NULL */
    double idle_s;        /* the GPU idle this long before each warm-up (eng_opts.idle_s) */
    int nsteps;           /* > 0: these steps (SEGS, Q, KV, LOGIT_ROWS) instead of the default four */
    int32_t steps[ENG_BENCH_MAX_STEPS][4];
    const struct anchor_run *anchor; /* the PyTorch anchor's shapes (and times, where read from its
                                      * output): each step timed beside it; NULL = not run */
    const char *anchor_path;         /* where it was read, or NULL (the script's default grid) */
    struct eng_choices choices;      /* the command line's engine choices (eng_opts_defaults) */
};

int engine_bench_run(const struct engine_bench_opts *o, FILE *out);

struct engine_bench_tp_opts {
    struct model_cfg model;
    int size, reps;
    FILE *json;  /* one JSON object per step (rank 0), or NULL */
    int nsteps;  /* > 0: these steps (SEGS, Q, KV, LOGIT_ROWS) instead of Refresh 16 x 512 and Reuse 16 x 32 */
    int32_t steps[ENG_BENCH_MAX_STEPS][4];
    struct eng_choices choices; /* the command line's engine choices */
};
/* Steps replayed tensor-parallel (this process one of o->size ranks) and on one GPU, with the
 * all-reduce alone at their sizes. */
int engine_bench_tp_run(const struct engine_bench_tp_opts *o, FILE *out);

#endif
