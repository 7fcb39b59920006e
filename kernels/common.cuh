/* common.cuh: helpers shared by the kernels: error return, bf16 conversions identical to the
 * host's, the counter hash behind random weights. */
#ifndef TESSERA_KERNELS_COMMON_CUH
#define TESSERA_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

/* The current device's SM count (asked once; 1 where it cannot be asked) */
static inline int k_num_sms(void)
{
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
            sms = 1;
    }
    return sms;
}

/*
 * Programmatic dependent launch (compute capability 9.0 and later; plain launches before). Every
 * kernel here starts with griddep_wait(), which waits until the kernels before it in the stream
 * have completed and their writes are visible, and is launched through k_launch(), which lets it
 * be scheduled while the previous kernel drains (k_set_pdl(0): plain launches). A kernel therefore
 * sees exactly what it would after an ordinary launch; only the launch latency is hidden.
 */
static __device__ __forceinline__ void griddep_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* 16 bytes from global to shared memory (sm_80 and later); bytes = 0 fills zeros and reads nothing */
static __device__ __forceinline__ void cp_async16(uint32_t smem, const void *gmem, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(bytes));
}

/* Threads of a block that walks a row of h bf16 values 8 at a time: a warp multiple, at most 256. */
static inline int k_row_threads(int h) { return h / 8 > 256 ? 256 : (h / 8 + 31) / 32 * 32; }

/* Lets kernel f take `bytes` of dynamic shared memory where that is above what *opted (the caller's
 * static, from 48 KiB) already allows; *opted then holds it. */
template <typename F> static inline cudaError_t k_smem_optin(F f, size_t bytes, size_t *opted)
{
    if (bytes <= *opted)
        return cudaSuccess;
    const cudaError_t ce = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (ce == cudaSuccess)
        *opted = bytes;
    return ce;
}

/* PDL is requested (k_set_pdl) and the device is Hopper or later (elementwise.cu): older GPUs get
 * plain launches. */
int k_pdl_allowed(void);

/* A launch configuration with programmatic dependent launch where allowed and, for cluster > 0,
 * clusters of that many blocks along x (at holds the attributes the configuration points at). */
static inline cudaLaunchConfig_t k_launch_config(cudaLaunchAttribute (&at)[2], dim3 grid, dim3 block, size_t smem,
                                                 cudaStream_t st, unsigned cluster)
{
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = k_pdl_allowed();
    at[1].id = cudaLaunchAttributeClusterDimension;
    at[1].val.clusterDim.x = cluster;
    at[1].val.clusterDim.y = at[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = cluster > 0 ? 2 : 1;
    return cfg;
}

template <typename... P, typename... A>
static inline cudaError_t k_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                   A... args)
{
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = k_launch_config(at, grid, block, smem, st, 0);
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

static __device__ __forceinline__ float bf2f(bf16_t v) { return __uint_as_float((uint32_t)v << 16); }

/* Round to nearest even, NaN kept quiet: bit-identical to eng_f2bf() on the host (random weights
 * must match the CPU reference exactly). Elsewhere f2bf() uses the hardware conversion. */
static __device__ __forceinline__ bf16_t f2bf_exact(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (bf16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (bf16_t)(u >> 16);
}

/* Round to nearest even in one cvt instruction (same result as f2bf_exact for finite values). */
static __device__ __forceinline__ bf16_t f2bf(float f)
{
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *(bf16_t *)&b;
}

static __device__ __forceinline__ uint32_t pack_bf2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x = lo in the low half */
    return *(uint32_t *)&v;
}

/* The 8 bf16 values of a 16-byte vector as floats, and 8 floats rounded into one. */
static __device__ __forceinline__ void unpack8(float *f, uint4 v)
{
    const bf16_t *e = (const bf16_t *)&v;
#pragma unroll
    for (int k = 0; k < 8; k++)
        f[k] = bf2f(e[k]);
}

static __device__ __forceinline__ uint4 pack8(const float *f)
{
    return make_uint4(pack_bf2(f[0], f[1]), pack_bf2(f[2], f[3]), pack_bf2(f[4], f[5]), pack_bf2(f[6], f[7]));
}

/* 2^x with the special-function unit (inputs here are <= 0 or -inf). */
static __device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
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
