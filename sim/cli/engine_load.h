/*
 * engine_load.h: the CUDA engine is a shared library loaded on demand; engine_symbol() loads it
 * (once) from beside the executable and returns one of its entry points, or NULL with err (no
 * CUDA in this build, library missing).
 */
#ifndef TESSERA_ENGINE_LOAD_H
#define TESSERA_ENGINE_LOAD_H

#include <stdint.h>

#include "util.h"

void *engine_symbol(const char *name, struct ts_err *err);

/* Entry points (engine/cli_engine.c, engine/eng_live.c). */
typedef int (*engine_cli_fn)(int argc, char **argv);
struct sim;
struct sim_executor;
/* Opens the engine for live execution of simulation s (its model and knobs) and fills ex. */
typedef int (*engine_live_open_fn)(const struct sim *s, double mem_limit_gb, struct sim_executor *ex,
                                   struct ts_err *err);
typedef void (*engine_live_close_fn)(struct sim_executor *ex);
int eng_live_open(const struct sim *s, double mem_limit_gb, struct sim_executor *ex, struct ts_err *err);
void eng_live_close(struct sim_executor *ex);

/* A disaggregated live fleet's moves between its workers' engines (engine/eng_live.c), each on the
 * ctx of the executor eng_live_open filled. share writes the engine's K/V pool's handle
 * (ENGINE_POOL_HANDLE_BYTES) for another process to open; peer opens replica index's from its handle;
 * pages gives the page ids set aside under ticket (sim_executor.hold; -1: none); pull copies replica
 * from's pages into pages of this engine held under key (*seconds: the copy's time); adopt gives
 * those to request req_id; drop frees the pages set aside under ticket. */
#define ENGINE_POOL_HANDLE_BYTES 160
struct engine_moves {
    int (*share)(void *ctx, void *handle, struct ts_err *err);
    int (*peer)(void *ctx, int index, const void *handle, struct ts_err *err);
    int (*pages)(void *ctx, int64_t ticket, const int32_t **pages, int32_t *n);
    int (*pull)(void *ctx, int from, const int32_t *pages, int32_t n, int64_t key, double *seconds, struct ts_err *err);
    int (*adopt)(void *ctx, int64_t key, int32_t req_id, struct ts_err *err);
    void (*drop)(void *ctx, int64_t ticket);
};
typedef const struct engine_moves *(*engine_moves_fn)(void);
const struct engine_moves *eng_live_moves(void);

/* `tessera mem lmax --live` (engine/eng_lmax.c): L_max measured on the GPU. */
struct model_cfg;
struct lmax_live_req {
    const struct model_cfg *m;
    const char *planner;
    int chunking;          /* enum chunking (planner.h) */
    double mask_ratio;     /* < 0: logits for every row */
    int32_t softmax_copy;  /* 0 or 4 */
    int64_t mem_limit;     /* bytes: the whole process's device memory, made real by a ballast */
    int32_t layers;        /* layers executed at L_max (the weights and the plan stay the model's) */
    int64_t max_tokens;    /* the search's upper bound */
    uint64_t seed;
};
struct lmax_live_result {
    int64_t lmax;            /* the longest step whose planned activations could be mapped */
    int64_t planned, mapped; /* at L_max: the plan's arena and the physical memory mapped */
    int64_t theoretical;     /* at L_max: the op graph's theoretical peak */
    int64_t used;            /* at L_max, after the step: the process's device memory */
    int64_t fixed;           /* before any activation: weights, buffers, CUDA context */
    int64_t weights;
    int32_t logit_chunks, ffn_chunks, layers_run, layers_total, probes;
    double step_ms;          /* the step at L_max over layers_run layers (CUDA events) */
    char device[128], why_next[512]; /* why L_max + 1 failed */
};
typedef int (*engine_lmax_fn)(const struct lmax_live_req *q, struct lmax_live_result *r, struct ts_err *err);
int eng_lmax_live(const struct lmax_live_req *q, struct lmax_live_result *r, struct ts_err *err);

#endif
