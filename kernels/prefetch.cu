/*
 * prefetch.cu: pulls a weight matrix (or the first part of each of its rows) into L2 while the
 * main stream runs ops that leave DRAM idle (norms, RoPE, attention of a small step), so that the
 * GEMM reading the matrix next finds part of it in L2.
 *
 * Hopper issues one bulk prefetch (cp.async.bulk.prefetch.L2, no completion to wait for) per span;
 * older GPUs fall back to one prefetch.global.L2 per 128-byte line. Nothing is written: the
 * results of a step do not depend on whether or how much was prefetched.
 */
#include "common.cuh"

#define LINE 128

static __global__ void l2_prefetch_kernel(const char *base, int64_t spans, int64_t span_bytes,
                                          int64_t stride)
{
    const int64_t n = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < spans; i += n) {
        const char *p = base + i * stride;
#if __CUDA_ARCH__ >= 900
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"((unsigned)span_bytes)
                     : "memory");
#else
        for (int64_t b = 0; b < span_bytes; b += LINE)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p + b));
#endif
    }
}

extern "C" int k_l2_prefetch(const void *base, int64_t spans, int64_t span_bytes, int64_t stride,
                             k_stream stream)
{
    if (spans <= 0 || span_bytes <= 0)
        return 0;
    if (span_bytes % 16 || stride % 16 || (uintptr_t)base % 16 || span_bytes > (1LL << 30))
        return (int)cudaErrorInvalidValue;
    /* one span per thread over many multiprocessors: a multiprocessor issues bulk copies one after
     * another, so a few of them cannot keep DRAM busy */
    int64_t blocks = (spans + 31) / 32;
    l2_prefetch_kernel<<<(unsigned)(blocks < 264 ? blocks : 264), 32, 0, stream>>>((const char *)base, spans,
                                                                                  span_bytes, stride);
    K_LAUNCH_RETURN();
}
