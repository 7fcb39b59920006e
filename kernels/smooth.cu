/*
 * smooth.cu: dInfer's IterSmooth on the GPU (kernels.h). After an LM-head chunk its logit rows
 * become probabilities in place (k_softmax_rows, by the max and confidence k_argmax_conf found), their product with the embedding matrix is a GEMM
 * (the engine's), whose rows are kept per position (k_smooth_scatter); the next step's embedding
 * adds a kept row, weighted, to a masked position's token embedding (k_smooth_add).
 */
#include "common.cuh"

/* One block per row: each logit replaced by exp(l - max) conf, its row's max and confidence
 * (1 / sum exp(l - max)) k_argmax_conf's, 8 values a thread where the row allows 16-byte accesses. */
static __global__ void softmax_rows_kernel(bf16_t *logits, int V, const float *maxv, const float *conf, int row_base)
{
    griddep_wait();
    bf16_t *row = logits + (size_t)blockIdx.x * V;
    const float m = maxv[row_base + blockIdx.x], inv = conf[row_base + blockIdx.x];
    const int vec_end = V % 8 == 0 ? V : 0;
    for (int c = threadIdx.x * 8; c < vec_end; c += blockDim.x * 8) {
        float f[8];
        unpack8(f, *(const uint4 *)(row + c));
#pragma unroll
        for (int k = 0; k < 8; k++)
            f[k] = __expf(f[k] - m) * inv;
        *(uint4 *)(row + c) = pack8(f);
    }
    for (int c = vec_end + threadIdx.x; c < V; c += blockDim.x)
        row[c] = f2bf(__expf(bf2f(row[c]) - m) * inv);
}

extern "C" int k_softmax_rows(bf16_t *logits, int rows, int V, const float *maxv, const float *conf, int row_base,
                              k_stream stream)
{
    if (rows <= 0)
        return 0;
    return (int)k_launch(softmax_rows_kernel, dim3((unsigned)rows), dim3(256), 0, stream, logits, V, maxv, conf,
                         row_base);
}

/* Block i: row i of src to soft's row slot[row_base + i] (-1: none), 8 values a thread. */
static __global__ void smooth_scatter_kernel(const bf16_t *src, int h, const int32_t *slot, int row_base, bf16_t *soft)
{
    griddep_wait();
    const int s = slot[row_base + blockIdx.x];
    if (s < 0)
        return;
    const bf16_t *in = src + (size_t)blockIdx.x * h;
    bf16_t *out = soft + (size_t)s * h;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8)
        *(uint4 *)(out + c) = *(const uint4 *)(in + c);
}

extern "C" int k_smooth_scatter(const bf16_t *src, int rows, int h, const int32_t *slot, int row_base, bf16_t *soft,
                                k_stream stream)
{
    if (rows <= 0)
        return 0;
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(smooth_scatter_kernel, dim3((unsigned)rows), dim3(128), 0, stream, src, h, slot, row_base,
                         soft);
}

/* Block r: x's row r plus w[r] times soft's row slot[r] (slot -1: unchanged), in fp32, rounded once. */
static __global__ void smooth_add_kernel(bf16_t *x, int h, const int32_t *slot, const float *w, const bf16_t *soft)
{
    griddep_wait();
    const int s = slot[blockIdx.x];
    if (s < 0)
        return;
    const float wt = w[blockIdx.x];
    bf16_t *xr = x + (size_t)blockIdx.x * h;
    const bf16_t *sr = soft + (size_t)s * h;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        float a[8], b[8];
        unpack8(a, *(const uint4 *)(xr + c));
        unpack8(b, *(const uint4 *)(sr + c));
#pragma unroll
        for (int k = 0; k < 8; k++)
            a[k] += wt * b[k];
        *(uint4 *)(xr + c) = pack8(a);
    }
}

extern "C" int k_smooth_add(bf16_t *x, int rows, int h, const int32_t *slot, const float *w, const bf16_t *soft,
                            k_stream stream)
{
    if (rows <= 0)
        return 0;
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(smooth_add_kernel, dim3((unsigned)rows), dim3(128), 0, stream, x, h, slot, w, soft);
}
