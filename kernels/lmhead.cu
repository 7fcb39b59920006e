/*
 * lmhead.cu: the fused reduction after each LM-head chunk. One block per logits row: a single
 * pass keeps, per thread, the running max, its index and the running sum of exp(l - max) (online
 * softmax), and the runner-up value, then a block reduction gives argmax, max, confidence =
 * 1 / sum exp(l - max) and, where asked, the gap between the two largest logits (Prophet's test).
 */
#include <float.h>

#include "common.cuh"

struct amx {
    float m, s;
    int i;
    float m2; /* the second largest logit (equal to m where the largest is there twice) */
};

static __device__ __forceinline__ amx amx_merge(amx a, amx b)
{
    if (b.m > a.m || (b.m == a.m && b.i < a.i && b.m != -FLT_MAX)) {
        amx t = a;
        a = b;
        b = t;
    }
    /* a has the larger max */
    if (b.s > 0.f)
        a.s += b.s * __expf(b.m - a.m);
    a.m2 = fmaxf(a.m2, fmaxf(b.m, b.m2));
    return a;
}

/* x into a thread's running (max, its index, sum, runner-up) at index c */
static __device__ __forceinline__ void amx_add(amx &acc, float x, int c)
{
    if (x > acc.m) {
        acc.s = acc.s * __expf(acc.m - x) + 1.f;
        acc.m2 = acc.m;
        acc.m = x;
        acc.i = c;
    } else {
        acc.s += __expf(x - acc.m);
        acc.m2 = fmaxf(acc.m2, x);
    }
}

static __device__ __forceinline__ amx amx_shfl(const amx &a, int o)
{
    return amx{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o),
               __shfl_xor_sync(0xffffffffu, a.i, o), __shfl_xor_sync(0xffffffffu, a.m2, o)};
}

static __global__ void argmax_conf_kernel(const bf16_t *logits, int V, int32_t *out_tok,
                                          float *out_max, float *out_conf, float *out_gap, int row_base)
{
    griddep_wait();
    const bf16_t *row = logits + (size_t)blockIdx.x * V;
    amx acc = {-FLT_MAX, 0.f, 0x7fffffff, -FLT_MAX};
    /* 16-byte loads need 16-byte aligned rows: V a multiple of 8 */
    int vec_end = V % 8 == 0 ? V : 0;
    for (int c = threadIdx.x * 8; c < vec_end; c += blockDim.x * 8) {
        uint4 v = *(const uint4 *)(row + c);
        const bf16_t *e = (const bf16_t *)&v;
#pragma unroll
        for (int k = 0; k < 8; k++)
            amx_add(acc, bf2f(e[k]), c + k);
    }
    for (int c = vec_end + threadIdx.x; c < V; c += blockDim.x)
        amx_add(acc, bf2f(row[c]), c);
    for (int o = 16; o > 0; o >>= 1)
        acc = amx_merge(acc, amx_shfl(acc, o));
    __shared__ amx red[32];
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        amx v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : amx{-FLT_MAX, 0.f, 0x7fffffff, -FLT_MAX};
        for (int o = 16; o > 0; o >>= 1)
            v = amx_merge(v, amx_shfl(v, o));
        if (threadIdx.x == 0) {
            out_tok[row_base + blockIdx.x] = v.i;
            out_max[row_base + blockIdx.x] = v.m;
            out_conf[row_base + blockIdx.x] = v.s > 0.f ? 1.f / v.s : 0.f;
            if (out_gap)
                out_gap[row_base + blockIdx.x] = v.m - v.m2;
        }
    }
}

extern "C" int k_argmax_conf(const bf16_t *logits, int rows, int V, int32_t *out_tok, float *out_max,
                             float *out_conf, float *out_gap, int row_base, k_stream stream)
{
    if (rows <= 0)
        return 0;
    return (int)k_launch(argmax_conf_kernel, dim3(rows), dim3(512), 0, stream, logits, V, out_tok, out_max, out_conf,
                         out_gap, row_base);
}

/* Tensor parallelism: each rank's argmax, max and confidence over its share of the vocabulary,
 * gathered as [ranks][3][R] (the argmax's bits, the max, the confidence), merged as the block
 * reduction merges threads: rank r's sum of exp(l - max) is 1 / its confidence, its indices start
 * at r * share. */
static __global__ void tp_argmax_merge_kernel(const float *gathered, int ranks, int R, int share, int32_t *out_tok,
                                              float *out_max, float *out_conf)
{
    griddep_wait();
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= R)
        return;
    amx v = {-FLT_MAX, 0.f, 0x7fffffff, -FLT_MAX};
    for (int r = 0; r < ranks; r++) {
        const float *g = gathered + (size_t)r * 3 * R;
        const float c = g[2 * R + row];
        amx b = {g[R + row], c > 0.f ? 1.f / c : 0.f, __float_as_int(g[row]) + r * share, -FLT_MAX};
        v = amx_merge(v, b);
    }
    out_tok[row] = v.i;
    out_max[row] = v.m;
    out_conf[row] = v.s > 0.f ? 1.f / v.s : 0.f;
}

extern "C" int k_tp_argmax_merge(const float *gathered, int ranks, int R, int share, int32_t *out_tok, float *out_max,
                                 float *out_conf, k_stream stream)
{
    if (R <= 0)
        return 0;
    return (int)k_launch(tp_argmax_merge_kernel, dim3((unsigned)((R + 127) / 128)), dim3(128), 0, stream, gathered,
                         ranks, R, share, out_tok, out_max, out_conf);
}
