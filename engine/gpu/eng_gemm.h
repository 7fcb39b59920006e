/*
 * eng_gemm.h: the engine's GEMMs, Y[M, N] (+)= X[M, K] W^T for bf16 row-major X, Y and HF-layout
 * W [N, K], through cuBLASLt. The first time a shape is run with tuning allowed, every algorithm
 * cuBLASLt's heuristic proposes (up to 16) is timed on a scratch output with a cold L2 (the
 * weights stream from memory, as in a step) and the fastest kept;
 * during CUDA graph capture tuning is off and a shape not tuned yet takes the heuristic's first.
 * With an algorithm cache (eng_algos.h) a shape's choice comes from the cache when it is there,
 * and a new choice is written to it, so processes sharing the cache run the same algorithms.
 */
#ifndef TESSERA_ENG_GEMM_H
#define TESSERA_ENG_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "kernels.h"
#include "util.h"

struct eng_gemm;

/* A GEMM runner over workspace; a new shape's tuning times `algos` of cuBLASLt's candidates, 1 to 128
 * (else the default, 16). */
int eng_gemm_create(struct eng_gemm **out, void *workspace, size_t ws_bytes, int algos, struct ts_err *err);
void eng_gemm_destroy(struct eng_gemm *g);
/* scratch (scratch_bytes) receives the candidates' outputs while tuning; NULL disables tuning. */
int eng_gemm_run(struct eng_gemm *g, const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N,
                 int K, float beta, k_stream stream, bool may_tune, void *scratch,
                 size_t scratch_bytes, struct ts_err *err);
/* Y[M, N] = X[M, K] W for W [K, N] row-major (an embedding matrix: the LM head's GEMM transposed). */
int eng_gemm_run_kn(struct eng_gemm *g, const bf16_t *W, const bf16_t *X, bf16_t *Y, int M, int N, int K,
                    k_stream stream, bool may_tune, void *scratch, size_t scratch_bytes, struct ts_err *err);
/* Whether a shape (kn: eng_gemm_run_kn's) has its algorithm (tuned, or from the cache). */
bool eng_gemm_is_tuned(const struct eng_gemm *g, int M, int N, int K, float beta, bool kn);
/* Reads and extends the algorithm cache at path for this device (before the first GEMM). */
int eng_gemm_use_cache(struct eng_gemm *g, const char *path, const char *device, struct ts_err *err);
/* How many shapes this process has met so far (a step that met a new one is not a clean timing). */
int eng_gemm_shape_count(const struct eng_gemm *g);
/* Shapes tuned so far and the speed-up of the chosen algorithm over the heuristic's first. */
void eng_gemm_report(const struct eng_gemm *g, FILE *out);

#endif
