/*
 * focus.cu: FOCUS's token eviction on the GPU (kernels.h): each candidate's importance in the front
 * layers, and the rows the later layers keep. Small: a segment's candidates are at most
 * K_FOCUS_MAX_CAND rows, so a block holds one segment's head in shared memory.
 */
#include "common.cuh"

#define IMP_WARPS 8

/* Block (n, hd): evicting segment n's head hd. Each warp takes query rows i in turn: the scores
 * s_j = scale q_i . k_j over the candidates j, max-pooled over j - 1, j, j + 1, softmaxed over j and
 * added to the warp's column sums, which are then summed in warp order (deterministic). Shared
 * memory: the candidates' q and k rows (bf16), a row of scores per warp, the column sums per warp. */
static __global__ void __launch_bounds__(IMP_WARPS * 32) focus_imp_kernel(struct k_focus_args a)
{
    griddep_wait();
    extern __shared__ __align__(16) unsigned char smem[];
    const int n = blockIdx.x, hd = blockIdx.y, d = a.d, m = a.probe[K_FOCUS_FIELDS * n + 1], first = a.probe[K_FOCUS_FIELDS * n];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, mc = a.max_probe;
    bf16_t *qs = (bf16_t *)smem, *ks = qs + (size_t)mc * d;
    float *row = (float *)(ks + (size_t)mc * d), *part = row + IMP_WARPS * mc;
    const int kvh = hd / (a.H / a.Hkv), kvd = a.Hkv * d;
    for (int e = threadIdx.x * 8; e < m * d; e += blockDim.x * 8) { /* d is a multiple of 8 */
        const int i = e / d, c = e % d;
        *(uint4 *)(qs + e) = *(const uint4 *)(a.q + (size_t)(first + i) * a.q_stride + (size_t)hd * d + c);
        *(uint4 *)(ks + e) = *(const uint4 *)(a.k_pool + (size_t)a.front_slot[first + i] * kvd + (size_t)kvh * d + c);
    }
    for (int j = threadIdx.x; j < IMP_WARPS * mc; j += blockDim.x)
        part[j] = 0.f;
    __syncthreads();
    float *r = row + warp * mc, *acc = part + warp * mc;
    for (int i = warp; i < m; i += IMP_WARPS) {
        for (int j = lane; j < m; j += 32) {
            float s = 0.f;
            for (int c = 0; c < d; c += 8) {
                float x[8], y[8];
                unpack8(x, *(const uint4 *)(qs + (size_t)i * d + c));
                unpack8(y, *(const uint4 *)(ks + (size_t)j * d + c));
#pragma unroll
                for (int k = 0; k < 8; k++)
                    s += x[k] * y[k];
            }
            r[j] = s * a.scale;
        }
        __syncwarp();
        float p[K_FOCUS_MAX_CAND / 32], mx = -INFINITY;
#pragma unroll
        for (int t = 0; t < K_FOCUS_MAX_CAND / 32; t++) {
            const int j = lane + 32 * t;
            p[t] = -INFINITY;
            if (j < m) {
                p[t] = r[j];
                if (j > 0)
                    p[t] = fmaxf(p[t], r[j - 1]);
                if (j + 1 < m)
                    p[t] = fmaxf(p[t], r[j + 1]);
                mx = fmaxf(mx, p[t]);
            }
        }
        for (int o = 16; o > 0; o >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.f;
#pragma unroll
        for (int t = 0; t < K_FOCUS_MAX_CAND / 32; t++) {
            p[t] = lane + 32 * t < m ? __expf(p[t] - mx) : 0.f;
            sum += p[t];
        }
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
        for (int t = 0; t < K_FOCUS_MAX_CAND / 32; t++)
            if (lane + 32 * t < m)
                acc[lane + 32 * t] += p[t] / sum;
        __syncwarp();
    }
    __syncthreads();
    int g0 = 0; /* this segment's first candidate among every segment's */
    for (int k = 0; k < n; k++)
        g0 += a.probe[K_FOCUS_FIELDS * k + 1];
    for (int j = threadIdx.x; j < m; j += blockDim.x) {
        float s = 0.f;
        for (int w = 0; w < IMP_WARPS; w++)
            s += part[w * mc + j];
        a.imp[((size_t)a.layer * a.H + hd) * a.probe_rows + g0 + j] = s;
    }
}

/* Block n: evicting segment n's importance deltas (layer 1's sums over the heads minus layer 0's,
 * each in head order; NaN: -inf) and its kept candidates (k_focus_pick in kernels.h): thread j is
 * candidate j. */
static __global__ void __launch_bounds__(K_FOCUS_MAX_CAND) focus_pick_kernel(struct k_focus_args a)
{
    griddep_wait();
    __shared__ float delta[K_FOCUS_MAX_CAND];
    __shared__ int flag[K_FOCUS_MAX_CAND], top_right, u_sh, np_sh;
    const int n = blockIdx.x, j = threadIdx.x;
    const int32_t *f = a.probe + K_FOCUS_FIELDS * n;
    const int first = f[0], m = f[1], K = f[2], comp = f[3], req = f[5], seg = f[6];
    const int pr = a.progress[req];
    int g0 = 0;
    for (int k = 0; k < n; k++)
        g0 += a.probe[K_FOCUS_FIELDS * k + 1];
    if (j == 0)
        top_right = -1, np_sh = 0;
    __syncthreads();
    if (j < m && a.front_pos[first + j] <= pr) /* candidates 0..np-1 processed (their positions ascend) */
        atomicAdd(&np_sh, 1);
    if (j < m) {
        float s = 0.f;
        for (int hd = 0; hd < a.H; hd++)
            s += a.imp[((size_t)a.H + hd) * a.probe_rows + g0 + j] - a.imp[(size_t)hd * a.probe_rows + g0 + j];
        delta[j] = s == s ? s : -INFINITY;
        if (a.delta)
            a.delta[g0 + j] = s;
    }
    __syncthreads();
    const int np = np_sh;
    /* the right-most unprocessed candidate among the K largest deltas (ties: the lower row) */
    if (j < m && j >= np) {
        int rank = 0;
        for (int k = 0; k < m; k++)
            rank += delta[k] > delta[j] || (delta[k] == delta[j] && k < j);
        if (rank < K)
            atomicMax(&top_right, j);
    }
    __syncthreads();
    if (j == 0) { /* the unprocessed ones kept: a prefix of them, up to that one, and K - np at least */
        int u = top_right >= 0 ? min(top_right - np + 1, K) : 0;
        u_sh = max(u, min(K - np, m - np));
    }
    __syncthreads();
    const int u = u_sh;
    if (j < m) {
        int keep = j >= np && j < np + u;
        if (j < np) { /* the K - u largest deltas among the processed ones */
            int rank = 0;
            for (int k = 0; k < np; k++)
                rank += delta[k] > delta[j] || (delta[k] == delta[j] && k < j);
            keep = rank < K - u;
        }
        flag[j] = keep;
    }
    __syncthreads();
    if (j < m && flag[j]) {
        int k = 0;
        for (int t = 0; t < j; t++)
            k += flag[t];
        a.c_row[comp + k] = first + j;
        a.tok_pos[comp + k] = a.front_pos[first + j];
        a.tok_slot[comp + k] = a.front_slot[first + j];
        if (a.trace)
            a.trace[(size_t)n * a.max_probe + k] = j;
    }
    if (j == 0) { /* the later layers see the keys up to the right-most row run through them */
        int right = u > 0 ? np + u - 1 : -1;
        for (int t = 0; t < np; t++)
            right = flag[t] ? max(right, t) : right;
        const int end = right >= 0 ? max(pr, a.front_pos[first + right]) : pr;
        a.key_len[seg] = end + 1;
        a.progress[req] = end;
    }
}

extern "C" int k_focus_importance(const struct k_focus_args *a, k_stream stream)
{
    if (a->num_probe <= 0)
        return 0;
    if (a->d % 8 || a->max_probe <= 0 || a->max_probe > K_FOCUS_MAX_CAND || a->H % a->Hkv || a->layer < 0 ||
        a->layer > 1)
        return (int)cudaErrorInvalidValue;
    const size_t smem = (size_t)a->max_probe * a->d * 4 + (size_t)2 * IMP_WARPS * a->max_probe * 4;
    static size_t opted = 48 << 10; /* dynamic shared memory allowed so far */
    const cudaError_t ce = k_smem_optin(focus_imp_kernel, smem, &opted);
    if (ce != cudaSuccess)
        return (int)ce;
    return (int)k_launch(focus_imp_kernel, dim3((unsigned)a->num_probe, (unsigned)a->H), dim3(IMP_WARPS * 32), smem,
                         stream, *a);
}

extern "C" int k_focus_pick(const struct k_focus_args *a, k_stream stream)
{
    if (a->num_probe <= 0)
        return 0;
    if (a->max_probe <= 0 || a->max_probe > K_FOCUS_MAX_CAND)
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(focus_pick_kernel, dim3((unsigned)a->num_probe), dim3(K_FOCUS_MAX_CAND), 0, stream, *a);
}
