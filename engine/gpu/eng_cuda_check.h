/*
 * eng_cuda_check.h: the engine's checked-call macros. In a function returning int with a
 * `struct ts_err *err` in scope, a failing CUDA runtime call (CU), kernel launcher (KL) or cuBLAS /
 * cuBLASLt call (CB) returns -1 with a message naming the call, the file and the line.
 */
#ifndef TESSERA_ENG_CUDA_CHECK_H
#define TESSERA_ENG_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "util.h"

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return ts_fail(err, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)
#define KL(call)                                                                                   \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != 0)                                                                               \
            return ts_fail(err, "%s:%d: kernel %s: %s", __FILE__, __LINE__, #call,                 \
                           cudaGetErrorString((cudaError_t)e_));                                   \
    } while (0)
#define CB(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return ts_fail(err, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cublasGetStatusString(s_)); \
    } while (0)

#endif
