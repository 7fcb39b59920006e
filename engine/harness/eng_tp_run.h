/* eng_tp_run.h: `tessera engine check --tp N` and `tessera engine bench --tp N` (eng_tp_run.c), run
 * by every rank of a launch. */
#ifndef TESSERA_ENG_TP_RUN_H
#define TESSERA_ENG_TP_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "eng_bench.h"
#include "model.h"

/* The tensor-parallel engine against one GPU on the same weights; 0 when every step agrees. */
int eng_tp_check_run(int size, uint64_t seed, FILE *out);

struct eng_tp_bench_opts {
    struct model_cfg model;
    int size, reps;
    FILE *json;  /* one JSON object per step (rank 0), or NULL */
    int nsteps;  /* > 0: these steps (SEGS, Q, KV, LOGIT_ROWS) instead of Refresh 16 x 512 and Reuse 16 x 32 */
    int32_t steps[ENG_BENCH_MAX_STEPS][4];
};
/* Steps replayed tensor-parallel and on one GPU, with the all-reduce alone at their sizes. */
int eng_tp_bench_run(const struct eng_tp_bench_opts *o, FILE *out);

#endif
