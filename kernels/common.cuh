/* common.cuh: helpers shared by the kernels: error return, bf16 conversions identical to the
 * host's, the counter hash behind random weights. */
#ifndef TESSERA_KERNELS_COMMON_CUH
#define TESSERA_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

#define K_LAUNCH_RETURN() return (int)cudaGetLastError()

static __device__ __forceinline__ float bf2f(bf16_t v) { return __uint_as_float((uint32_t)v << 16); }

/* Round to nearest even, NaN kept quiet: the same rounding as eng_f2bf() on the host. */
static __device__ __forceinline__ bf16_t f2bf(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (bf16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (bf16_t)(u >> 16);
}

static __device__ __forceinline__ uint32_t pack_bf2(float lo, float hi)
{
    return (uint32_t)f2bf(lo) | ((uint32_t)f2bf(hi) << 16);
}

/* SplitMix64 of (seed, index) -> U(-1, 1) with 24 random bits: the host's eng_hash_uniform(). */
static __device__ __forceinline__ float hash_uniform(uint64_t seed, uint64_t i)
{
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (float)(int32_t)((uint32_t)(x >> 40) - (1u << 23)) * (1.0f / (float)(1u << 23));
}

#endif
