/*
 * unmask.cu: a diffusion step's unmasking decision on the GPU (engine/eng_unmask.h has the rules
 * and their host reference, unmask_block). One thread block per block of rows: its confidences and
 * masks in shared memory, each thread deciding its rows by their rank among the masked ones (and,
 * for hierarchical decoding, their run of masked rows), so nothing but the commits leaves the GPU.
 */
#include <math.h>

#include "common.cuh"

/* Row i ranks above row j: more confident, or as confident and lower (NaN below every number). */
static __device__ __forceinline__ bool unmask_above(const float *conf, int i, int j)
{
    const float a = isnan(conf[i]) ? -INFINITY : conf[i], b = isnan(conf[j]) ? -INFINITY : conf[j];
    return a > b || (a == b && i < j);
}

static __global__ void unmask_kernel(k_unmask_args a)
{
    griddep_wait();
    __shared__ float conf[K_UNMASK_MAX_ROWS];
    __shared__ unsigned char masked[K_UNMASK_MAX_ROWS];
    __shared__ int count;
    const int first = a.groups[2 * blockIdx.x], n = a.groups[2 * blockIdx.x + 1];
    const float tau = a.group_tau ? a.group_tau[blockIdx.x] : a.tau;
    if (threadIdx.x == 0)
        count = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        conf[i] = a.conf[first + i];
        masked[i] = a.masked[first + i] != 0;
    }
    __syncthreads();
    int mine = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        bool take = false;
        if (masked[i]) {
            int rank = 0;
            for (int j = 0; j < n; j++)
                rank += j != i && masked[j] && unmask_above(conf, j, i);
            take = rank == 0;
            if (a.kind == K_UNMASK_TOPK) {
                take = rank < a.k;
            } else if (a.kind == K_UNMASK_THRESHOLD || a.kind == K_UNMASK_CREDIT) { /* credit: fused rows */
                take |= conf[i] >= tau;
            } else {
                bool best = conf[i] > a.low;
                for (int j = i - 1; best && j >= 0 && masked[j]; j--)
                    best = !(conf[j] > conf[i]);
                for (int j = i + 1; best && j < n && masked[j]; j++)
                    best = !(conf[j] > conf[i]);
                take |= best || conf[i] > tau;
            }
        }
        a.commit[first + i] = take ? a.tok[first + i] : -1;
        mine += take;
    }
    if (mine)
        atomicAdd(&count, mine);
    __syncthreads();
    if (threadIdx.x == 0)
        a.count[blockIdx.x] = count;
}

extern "C" int k_unmask(const k_unmask_args *a, k_stream stream)
{
    if (a->num_groups <= 0)
        return 0;
    return (int)k_launch(unmask_kernel, dim3((unsigned)a->num_groups), dim3(256), 0, stream, *a);
}

/* One thread a logit row: its credits (at most K_CREDIT_MAX) updated, then the fused row's argmax,
 * max and confidence from the plain row's and the credited tokens' logits. */
static __global__ void credit_fuse_kernel(k_credit_args a)
{
    griddep_wait();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.rows)
        return;
    const int row = a.row_base + i, s = a.state[row];
    if (s < 0)
        return;
    const int fl = a.flags[row];
    int n = fl & K_CREDIT_CLEAR ? 0 : a.in_n[s];
    int32_t tk[K_CREDIT_MAX];
    float val[K_CREDIT_MAX];
    for (int j = 0; j < n; j++) {
        tk[j] = a.in_tok[(size_t)s * K_CREDIT_MAX + j];
        val[j] = a.in_val[(size_t)s * K_CREDIT_MAX + j] * (fl & K_CREDIT_DECAY ? a.beta : 1.f);
    }
    const int32_t top = a.tok[row];
    const float m0 = a.maxv[row], c0 = a.conf[row];
    if (fl & K_CREDIT_MASKED) {
        int j = 0;
        while (j < n && tk[j] != top)
            j++;
        if (j == n && n == K_CREDIT_MAX) {
            j = 0;
            for (int k = 1; k < n; k++)
                if (val[k] < val[j])
                    j = k;
            val[j] = 0.f;
        } else if (j == n) {
            val[n++] = 0.f;
        }
        tk[j] = top;
        val[j] += powf(c0, a.gamma);
    }
    const bf16_t *lrow = a.logits + (size_t)i * a.V;
    float m = m0;
    int32_t arg = top;
    for (int j = 0; j < n; j++) {
        const float f = bf2f(lrow[tk[j]]) + a.alpha * log1pf(val[j]);
        if (f > m || (f == m && tk[j] < arg))
            m = f, arg = tk[j];
    }
    double sum = (double)(1.0f / c0) * exp((double)m0 - m);
    for (int j = 0; j < n; j++) {
        const double l = bf2f(lrow[tk[j]]);
        sum += exp(l + a.alpha * log1p((double)val[j]) - m) - exp(l - m);
    }
    for (int j = 0; j < n; j++) {
        a.out_tok[(size_t)s * K_CREDIT_MAX + j] = tk[j];
        a.out_val[(size_t)s * K_CREDIT_MAX + j] = val[j];
    }
    a.out_n[s] = n;
    a.tok[row] = arg;
    a.maxv[row] = m;
    a.conf[row] = (float)(1.0 / sum);
}

extern "C" int k_credit_fuse(const k_credit_args *a, k_stream stream)
{
    if (a->rows <= 0)
        return 0;
    return (int)k_launch(credit_fuse_kernel, dim3((unsigned)((a->rows + 127) / 128)), dim3(128), 0, stream, *a);
}
