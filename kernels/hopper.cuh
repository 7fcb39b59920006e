/*
 * hopper.cuh: the sm_90a building blocks the wgmma kernels share (attention_wgmma.cu,
 * gemm_wgmma.cu): shared-memory descriptors in wgmma's 128-byte swizzle, mbarriers and cp.async.
 * Included only where __CUDA_ARCH_FEAT_SM90_ALL is defined.
 */
#ifndef TESSERA_KERNELS_HOPPER_CUH
#define TESSERA_KERNELS_HOPPER_CUH

#include <stdint.h>

#include "common.cuh"

/* wgmma shared-memory descriptor, 128-byte swizzle: start, leading and stride byte offsets */
static __device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 62);
}

/* the descriptor of a K-major operand in the 128-byte swizzle: LBO unused, SBO 1024 bytes (the
 * next 8 rows) */
static __device__ __forceinline__ uint64_t desc_k128(uint32_t saddr) { return wg_desc(saddr, 16, 1024); }

/* the descriptor d moved `bytes` (a multiple of 16) on in shared memory: one add to its 14-bit
 * start field, which cannot carry out (shared memory ends below 256 KiB), instead of a descriptor
 * built anew */
static __device__ __forceinline__ uint64_t desc_at(uint64_t d, uint32_t bytes) { return d + (bytes >> 4); }

/* Byte offset of 16-byte chunk cc (8 bf16 columns) of row r in a tile of ROWS rows of 128 bf16
 * columns in the 128-byte swizzle: the halves of the columns ROWS x 128 bytes apart, each ROWS rows of
 * 128 bytes (8-row atoms of 1 KiB), chunk c of row r stored at c ^ (r % 8). */
template <int ROWS = 64>
static __device__ __forceinline__ uint32_t sw_off(int r, int cc)
{
    return (cc >> 3) * (ROWS * 128) + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
}

static __device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

static __device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* an arrival on bar once this thread's cp.async copies issued so far have landed (counted among
 * the barrier's expected arrivals) */
static __device__ __forceinline__ void mbar_arrive_cp_async(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

/* until the phase of parity `parity` of the barrier has completed */
static __device__ __forceinline__ void mbar_wait(uint32_t bar, int parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* shared memory written through the generic proxy (st.shared, cp.async) made visible to the
 * async proxy's reads (wgmma) */
static __device__ __forceinline__ void fence_async_shared(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

#endif
