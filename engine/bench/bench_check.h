/* bench_check.h: the kernel benches' check of a CUDA call or a kernel launcher's status (an int
 * holding a cudaError_t, kernels.h): on failure the bench stops, naming file, line and call. */
#ifndef TESSERA_BENCH_CHECK_H
#define TESSERA_BENCH_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (cudaError_t)(x);                                                             \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

#endif
