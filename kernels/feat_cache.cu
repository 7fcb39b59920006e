/*
 * feat_cache.cu: dLLM-Cache's feature cache on the GPU (kernels.h): the value check that picks the
 * rows a layer updates, and the residual adds that carry the other rows on their cached outputs.
 */
#include "common.cuh"

#define PICK_THREADS 1024

static __device__ __forceinline__ void unpack8f(float *f, uint4 v)
{
    const bf16_t *e = (const bf16_t *)&v;
#pragma unroll
    for (int k = 0; k < 8; k++)
        f[k] = bf2f(e[k]);
}

/* Block n: probing segment n. Shared memory: its rows' similarities, then their pick flags. */
static __global__ void __launch_bounds__(PICK_THREADS) fc_pick_kernel(struct k_fc_pick_args a)
{
    griddep_wait();
    extern __shared__ float sim[];
    int32_t *flag = (int32_t *)(sim + a.max_probe);
    const int n = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int32_t *f = a.probe + 5 * n;
    const int x_first = f[0], rows = f[1], picked = f[2], comp = f[3], pos0 = f[4], kvd = a.kv_dim;
    int64_t vrow0 = 0; /* this segment's first row of vnew: the probe rows before it */
    for (int k = 0; k < n; k++)
        vrow0 += a.probe[5 * k + 1];
    /* 1: each row's cosine similarity between its new V (plus bias) and the one its slot holds */
    for (int i = warp; i < rows; i += warps) {
        const bf16_t *vn = a.vnew + (vrow0 + i) * kvd, *vo = a.v_pool + (size_t)a.x_slot[x_first + i] * kvd;
        float dot = 0.f, nn = 0.f, no = 0.f;
        for (int c = lane * 8; c < kvd; c += 256) {
            float x[8], y[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            unpack8f(x, *(const uint4 *)(vn + c));
            unpack8f(y, *(const uint4 *)(vo + c));
            if (a.v_bias)
                unpack8f(b, *(const uint4 *)(a.v_bias + c));
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const float v = bf2f(f2bf(x[k] + b[k])); /* the V the pool will hold */
                dot += v * y[k];
                nn += v * v;
                no += y[k] * y[k];
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            dot += __shfl_xor_sync(0xffffffffu, dot, o);
            nn += __shfl_xor_sync(0xffffffffu, nn, o);
            no += __shfl_xor_sync(0xffffffffu, no, o);
        }
        if (lane == 0) {
            const float s = dot / fmaxf(sqrtf(nn) * sqrtf(no), 1e-8f);
            sim[i] = s == s ? s : -INFINITY; /* a V never written (NaN): changed the most */
        }
    }
    __syncthreads();
    /* 2: the `picked` least similar rows (ties: the lower row) */
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        const float s = sim[i];
        int rank = 0;
        for (int j = 0; j < rows; j++) {
            const float t = sim[j];
            rank += t < s || (t == s && j < i);
        }
        flag[i] = rank < picked;
    }
    __syncthreads();
    /* 3: the picked rows, in row order, become the computed rows comp.. */
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        const int x = x_first + i;
        if (!flag[i]) {
            a.x_comp[x] = -1;
            continue;
        }
        int k = 0;
        for (int j = 0; j < i; j++)
            k += flag[j];
        a.c_row[comp + k] = x;
        a.tok_pos[comp + k] = pos0 + i;
        a.tok_slot[comp + k] = a.x_slot[x];
        a.x_comp[x] = comp + k;
        if (a.trace)
            a.trace[(size_t)n * a.max_probe + k] = i;
    }
    /* 4: every probe row's new V into its slot (phase 1 read the old ones) */
    const int vecs = kvd / 8;
    for (int e = threadIdx.x; e < rows * vecs; e += blockDim.x) {
        const int i = e / vecs, c = (e % vecs) * 8;
        float x[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        unpack8f(x, *(const uint4 *)(a.vnew + (vrow0 + i) * kvd + c));
        if (a.v_bias)
            unpack8f(b, *(const uint4 *)(a.v_bias + c));
        *(uint4 *)(a.v_pool + (size_t)a.x_slot[x_first + i] * kvd + c) =
            make_uint4(pack_bf2(x[0] + b[0], x[1] + b[1]), pack_bf2(x[2] + b[2], x[3] + b[3]),
                       pack_bf2(x[4] + b[4], x[5] + b[5]), pack_bf2(x[6] + b[6], x[7] + b[7]));
    }
}

extern "C" int k_fc_pick(const struct k_fc_pick_args *a, k_stream stream)
{
    if (a->num_probe <= 0)
        return 0;
    if (a->kv_dim % 8 || a->max_probe > K_FC_MAX_PROBE || a->max_probe <= 0)
        return (int)cudaErrorInvalidValue;
    const size_t smem = (size_t)a->max_probe * 8;
    static size_t opted = 48 << 10; /* dynamic shared memory allowed so far */
    if (smem > opted) {
        cudaError_t ce = cudaFuncSetAttribute(fc_pick_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (ce != cudaSuccess)
            return (int)ce;
        opted = smem;
    }
    return (int)k_launch(fc_pick_kernel, dim3(a->num_probe), dim3(PICK_THREADS), smem, stream, *a);
}

static __global__ void fc_residual_kernel(bf16_t *x, const bf16_t *out, const int32_t *x_comp, const int32_t *x_slot,
                                          bf16_t *cache, int h)
{
    griddep_wait();
    const int r = blockIdx.x, j = x_comp[r];
    bf16_t *xr = x + (size_t)r * h, *cr = cache + (size_t)x_slot[r] * h;
    const bf16_t *src = j >= 0 ? out + (size_t)j * h : cr;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        const uint4 v = *(const uint4 *)(src + c);
        if (j >= 0)
            *(uint4 *)(cr + c) = v;
        float xv[8], vv[8];
        unpack8f(xv, *(const uint4 *)(xr + c));
        unpack8f(vv, v);
        *(uint4 *)(xr + c) = make_uint4(pack_bf2(xv[0] + vv[0], xv[1] + vv[1]), pack_bf2(xv[2] + vv[2], xv[3] + vv[3]),
                                        pack_bf2(xv[4] + vv[4], xv[5] + vv[5]), pack_bf2(xv[6] + vv[6], xv[7] + vv[7]));
    }
}

extern "C" int k_fc_residual(bf16_t *x, const bf16_t *out, const int32_t *x_comp, const int32_t *x_slot, bf16_t *cache,
                             int X, int h, k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (X <= 0)
        return 0;
    int t = h / 8 > 256 ? 256 : (h / 8 + 31) / 32 * 32;
    return (int)k_launch(fc_residual_kernel, dim3(X), dim3(t), 0, stream, x, out, x_comp, x_slot, cache, h);
}
