/*
 * eng_algos.h: the GEMM algorithm cache, a SQLite file that keeps the algorithm the engine chose
 * for each GEMM shape, so that every process (profile, replay, live, bench) runs the same
 * algorithms. Pure host code, tested on the CPU; the algorithm itself is an opaque blob here
 * (cuBLASLt's cublasLtMatmulAlgo_t, which its documentation allows to be stored and restored with
 * the same library version).
 *
 * Rows are keyed by device name, library version, workspace size and shape (M, N, K, C read);
 * rows of other devices, versions or workspaces stay in the file untouched. The first writer of a
 * key wins: processes sharing a cache never change a choice another one made.
 */
#ifndef TESSERA_ENG_ALGOS_H
#define TESSERA_ENG_ALGOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct algo_key {
    int32_t m, n, k, beta1; /* beta1: bit 0 the GEMM adds C, bit 1 its W is [K, N] (eng_gemm.c) */
};

struct algo_entry {
    struct algo_key key;
    unsigned char *blob; /* blob_bytes */
    float ms;            /* the chosen algorithm's tuning time */
    float heuristic_ms;  /* the heuristic's first candidate's */
};

struct algo_cache {
    char *path, *device;
    int64_t lib_version, ws_bytes;
    void *db; /* sqlite3 */
    size_t blob_bytes;
    struct algo_entry *e;
    size_t n, cap;
};

/* Opens (creating if needed) the cache at path and reads the rows of (device, lib_version,
 * ws_bytes). A file that is not a cache, or a row whose blob is not blob_bytes long, is refused
 * naming the file, the row and the field. */
int algo_cache_open(struct algo_cache *c, const char *path, const char *device, int64_t lib_version,
                    int64_t ws_bytes, size_t blob_bytes, struct ts_err *err);
void algo_cache_close(struct algo_cache *c); /* a zeroed or closed cache is fine */
const struct algo_entry *algo_cache_find(const struct algo_cache *c, struct algo_key k);
/* Stores a new choice (kept in memory and written at once); a key already in the file keeps its
 * first value, which is returned in *kept (the caller's choice when it was the first). */
int algo_cache_put(struct algo_cache *c, struct algo_key k, const void *blob, float ms, float heuristic_ms,
                   const struct algo_entry **kept, struct ts_err *err);

#endif
