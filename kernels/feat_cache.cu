/*
 * feat_cache.cu: dLLM-Cache's feature cache on the GPU (kernels.h): the value check that picks the
 * rows a layer updates, the computed rows' outputs stored and added, and the carried rows' adds of
 * their cached outputs. All memory-bound: 16-byte vectors (8 bf16), widths multiples of 8.
 */
#include "common.cuh"

#define SIM_WARPS 8        /* probe rows a block of the similarity kernel */
#define SELECT_THREADS 1024

/* A warp a probe row: the cosine similarity between its new V (plus bias, rounded as the pool holds
 * it) and the V its slot holds, then the new V stored there (the warp read the old one first). */
static __global__ void __launch_bounds__(SIM_WARPS * 32) fc_sim_kernel(struct k_fc_pick_args a)
{
    griddep_wait();
    const int lane = threadIdx.x & 31, g = blockIdx.x * SIM_WARPS + (threadIdx.x >> 5), kvd = a.kv_dim;
    if (g >= a.probe_rows)
        return;
    const bf16_t *vn = a.vnew + (size_t)g * kvd;
    bf16_t *vo = a.v_pool + (size_t)a.x_slot[a.probe_idx[g]] * kvd;
    float dot = 0.f, nn = 0.f, no = 0.f;
    for (int c = lane * 8; c < kvd; c += 256) {
        float x[8], y[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        unpack8(x, *(const uint4 *)(vn + c));
        unpack8(y, *(const uint4 *)(vo + c));
        if (a.v_bias)
            unpack8(b, *(const uint4 *)(a.v_bias + c));
#pragma unroll
        for (int k = 0; k < 8; k++) {
            x[k] = bf2f(f2bf(x[k] + b[k]));
            dot += x[k] * y[k];
            nn += x[k] * x[k];
            no += y[k] * y[k];
        }
        *(uint4 *)(vo + c) = pack8(x); /* what was compared; this lane read the old values */
    }
    for (int o = 16; o > 0; o >>= 1) {
        dot += __shfl_xor_sync(0xffffffffu, dot, o);
        nn += __shfl_xor_sync(0xffffffffu, nn, o);
        no += __shfl_xor_sync(0xffffffffu, no, o);
    }
    if (lane == 0) {
        const float s = dot / fmaxf(sqrtf(nn) * sqrtf(no), 1e-8f);
        a.sim[g] = s == s ? s : -INFINITY; /* a V never written (NaN): changed the most */
    }
}

/* Block n: probing segment n's picked rows from its similarities (shared memory: them, then the
 * pick flags). */
static __global__ void __launch_bounds__(SELECT_THREADS) fc_select_kernel(struct k_fc_pick_args a)
{
    griddep_wait();
    extern __shared__ float sim[];
    int32_t *flag = (int32_t *)(sim + a.max_probe);
    const int n = blockIdx.x;
    const int32_t *f = a.probe + 5 * n;
    const int x_first = f[0], rows = f[1], picked = f[2], comp = f[3], pos0 = f[4];
    int g0 = 0; /* this segment's first probe row: the probe rows before it */
    for (int k = 0; k < n; k++)
        g0 += a.probe[5 * k + 1];
    for (int i = threadIdx.x; i < rows; i += blockDim.x)
        sim[i] = a.sim[g0 + i];
    __syncthreads();
    /* the `picked` least similar rows (ties: the lower row) */
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
    /* the picked rows, in row order, become the computed rows comp.. */
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
}

extern "C" int k_fc_pick(const struct k_fc_pick_args *a, k_stream stream)
{
    if (a->num_probe <= 0)
        return 0;
    if (a->kv_dim % 8 || a->max_probe > K_FC_MAX_PROBE || a->max_probe <= 0)
        return (int)cudaErrorInvalidValue;
    const size_t smem = (size_t)a->max_probe * 8;
    static size_t opted = 48 << 10; /* dynamic shared memory allowed so far */
    cudaError_t ce = k_smem_optin(fc_select_kernel, smem, &opted);
    if (ce != cudaSuccess)
        return (int)ce;
    ce = k_launch(fc_sim_kernel, dim3((unsigned)((a->probe_rows + SIM_WARPS - 1) / SIM_WARPS)),
                              dim3(SIM_WARPS * 32), 0, stream, *a);
    if (ce != cudaSuccess)
        return (int)ce;
    return (int)k_launch(fc_select_kernel, dim3(a->num_probe), dim3(SELECT_THREADS), smem, stream, *a);
}

static __global__ void fc_store_kernel(bf16_t *x, const bf16_t *out, const int32_t *c_row, const int32_t *x_slot,
                                       bf16_t *cache, int h)
{
    griddep_wait();
    const int j = blockIdx.x, r = c_row[j];
    bf16_t *xr = x + (size_t)r * h, *cr = cache + (size_t)x_slot[r] * h;
    const bf16_t *o = out + (size_t)j * h;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        const uint4 v = *(const uint4 *)(o + c);
        *(uint4 *)(cr + c) = v;
        float xv[8], vv[8];
        unpack8(xv, *(const uint4 *)(xr + c));
        unpack8(vv, v);
#pragma unroll
        for (int k = 0; k < 8; k++)
            xv[k] += vv[k];
        *(uint4 *)(xr + c) = pack8(xv);
    }
}

extern "C" int k_fc_store(bf16_t *x, const bf16_t *out, const int32_t *c_row, const int32_t *x_slot, bf16_t *cache,
                          int T, int h, k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (T <= 0)
        return 0;
    return (int)k_launch(fc_store_kernel, dim3(T), dim3(k_row_threads(h)), 0, stream, x, out, c_row, x_slot, cache, h);
}

static __global__ void fc_carry_kernel(bf16_t *x, const int32_t *x_comp, const int32_t *x_slot, const bf16_t *fa,
                                       const bf16_t *ff, int h)
{
    griddep_wait();
    const int r = blockIdx.x;
    if (x_comp[r] >= 0)
        return;
    const size_t s = (size_t)x_slot[r] * h;
    bf16_t *xr = x + (size_t)r * h;
    for (int c = threadIdx.x * 8; c < h; c += blockDim.x * 8) {
        float xv[8], av[8], fv[8];
        unpack8(xv, *(const uint4 *)(xr + c));
        unpack8(av, *(const uint4 *)(fa + s + c));
        unpack8(fv, *(const uint4 *)(ff + s + c));
#pragma unroll
        for (int k = 0; k < 8; k++)
            xv[k] += av[k] + fv[k];
        *(uint4 *)(xr + c) = pack8(xv);
    }
}

extern "C" int k_fc_carry(bf16_t *x, const int32_t *x_comp, const int32_t *x_slot, const bf16_t *fa, const bf16_t *ff,
                          int X, int h, k_stream stream)
{
    if (h % 8)
        return (int)cudaErrorInvalidValue;
    if (X <= 0)
        return 0;
    return (int)k_launch(fc_carry_kernel, dim3(X), dim3(k_row_threads(h)), 0, stream, x, x_comp, x_slot, fa, ff, h);
}
