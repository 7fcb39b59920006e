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
            } else if (a.kind == K_UNMASK_THRESHOLD) {
                take |= conf[i] >= a.tau;
            } else {
                bool best = conf[i] > a.low;
                for (int j = i - 1; best && j >= 0 && masked[j]; j--)
                    best = !(conf[j] > conf[i]);
                for (int j = i + 1; best && j < n && masked[j]; j++)
                    best = !(conf[j] > conf[i]);
                take |= best || conf[i] > a.tau;
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
