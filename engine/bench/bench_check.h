/* bench_check.h: the kernel benches' check of a CUDA call or a kernel launcher's status (an int
 * holding a cudaError_t, kernels.h): on failure the bench stops, naming file, line and call; and
 * their comparison of two bf16 outputs on the device (max_rel_diff). */
#ifndef TESSERA_BENCH_CHECK_H
#define TESSERA_BENCH_CHECK_H

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels.h"

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (cudaError_t)(x);                                                             \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static inline float bf(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* largest |a - b| over the largest |a| of n bf16 values on the device (infinite on a NaN) */
static inline double max_rel_diff(const bf16_t *da, const bf16_t *db, size_t n)
{
    std::vector<uint16_t> a(n), b(n);
    CK(cudaMemcpy(a.data(), da, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), db, n * 2, cudaMemcpyDeviceToHost));
    double mx = 0, md = 0;
    for (size_t i = 0; i < n; i++) {
        mx = std::max(mx, (double)fabsf(bf(a[i])));
        double dd = fabs((double)bf(a[i]) - bf(b[i]));
        md = std::max(md, std::isnan(dd) ? INFINITY : dd);
    }
    return md / mx;
}

#endif
