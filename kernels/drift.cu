/*
 * drift.cu: decision rules that read a step's attention, measured over a step that runs every position
 * of a request: Elastic-Cache's drift test (kernels.h, k_drift; engine generate --elastic-drift) and
 * d2Cache's attention rollout (k_rollout_layer, k_rollout_importance; --d2-rollout). Measurements, not
 * fast paths: a block a row (and a head) walks all N keys.
 */
#include "common.cuh"

#define DRIFT_THREADS 256

static __device__ float block_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        s += red[w];
    return s;
}

static __device__ float block_max(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = -INFINITY;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        s = fmaxf(s, red[w]);
    return s;
}

/* One query's softmax over N keys into p[0..N) (unnormalised: p[j] = exp(score - max)), the query in
 * qs [d], key j at key(j), scores times scale; returns their sum. The block's threads, j by j. */
template <typename KeyOf>
static __device__ float softmax_keys(float *p, const float *qs, int N, int d, float scale, float *red, KeyOf key)
{
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        const bf16_t *k = key(j);
        float dot = 0.f;
        for (int c = 0; c < d; c++)
            dot += qs[c] * bf2f(k[c]);
        p[j] = dot * scale;
        mx = fmaxf(mx, p[j]);
    }
    mx = block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x)
        sum += (p[j] = __expf(p[j] - mx));
    return block_sum(sum, red);
}

/* Whether an earlier layer's test of this step fired: its later layers then compute every row. */
static __device__ bool drift_fired(const struct k_drift_args &a)
{
    for (int l = 0; l < a.layer; l++)
        if (a.sims[l] < a.gamma)
            return true;
    return false;
}

/* Block (s, h): selected row s's softmax over the N keys in head h, into probs[s][h][0..N). Rows
 * 0 .. nwin + ntrack - 1 are this step's (the window's, then the tracked tokens'): their query from
 * the qkv rows, each key from the pool where Elastic-Cache computes its row (queried, or a layer past
 * the refresh), else the cache's (prev_k_read). Rows nwin + ntrack .. are the tracked tokens' of the
 * cache: query and keys from prev_*. */
static __global__ void __launch_bounds__(DRIFT_THREADS) drift_probs_kernel(struct k_drift_args a)
{
    griddep_wait();
    __shared__ float qs[K_DRIFT_MAX_D], red[DRIFT_THREADS / 32];
    const int s = blockIdx.x, h = blockIdx.y, d = a.d, kvh = h / (a.H / a.Hkv), N = a.N;
    const int cur = a.nwin + a.ntrack, pos = a.sel[s < cur ? s : s - a.ntrack];
    const bool now = s < cur;
    const bf16_t *q = now ? a.q + (size_t)(a.row0 + a.rowmap[pos]) * a.q_stride + (size_t)h * d
                          : a.prev_q_read + ((size_t)pos * a.H + h) * d;
    for (int c = threadIdx.x; c < d; c += blockDim.x)
        qs[c] = bf2f(q[c]);
    const bool fired = drift_fired(a);
    __syncthreads();
    float *p = a.probs + ((size_t)s * a.H + h) * N;
    const float sum = softmax_keys(p, qs, N, d, a.scale, red, [&](int j) {
        return now && (fired || a.queried[j])
                   ? a.k_pool + (size_t)a.slot[a.row0 + a.rowmap[j]] * a.k_stride + (size_t)kvh * d
                   : a.prev_k_read + ((size_t)j * a.Hkv + kvh) * d;
    });
    for (int j = threadIdx.x; j < N; j += blockDim.x)
        p[j] /= sum;
}

/* Whether key j of score v beats key bj of score bv (-1: none yet): the larger score, the lower position
 * among equals. */
static __device__ bool better(float v, int j, float bv, int bj)
{
    return j >= 0 && (bj < 0 || v > bv || (v == bv && j < bj));
}

/* One block: the window rows' attention summed over rows and heads, its largest eligible key (ties:
 * the lower position) into out_track; the tracked tokens' cosine similarity over the heads, this
 * step's against the cache's, averaged over tokens and keys, into out_sim (NaN: none). */
static __global__ void __launch_bounds__(1024) drift_reduce_kernel(struct k_drift_args a)
{
    griddep_wait();
    __shared__ float red[32], bv[32];
    __shared__ int bj[32];
    const int N = a.N, H = a.H, cur = a.nwin + a.ntrack;
    float best = -1.f, sim = 0.f;
    int bestj = -1;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        if (a.eligible[j]) {
            float sc = 0.f;
            for (int w = 0; w < a.nwin; w++)
                for (int h = 0; h < H; h++)
                    sc += a.probs[((size_t)w * H + h) * N + j];
            if (sc > best)
                best = sc, bestj = j;
        }
        for (int t = 0; t < a.ntrack; t++) {
            float dot = 0.f, na = 0.f, nb = 0.f;
            for (int h = 0; h < H; h++) {
                const float x = a.probs[((size_t)(a.nwin + t) * H + h) * N + j];
                const float y = a.probs[((size_t)(cur + t) * H + h) * N + j];
                dot += x * y, na += x * x, nb += y * y;
            }
            sim += dot / fmaxf(sqrtf(na) * sqrtf(nb), 1e-8f);
        }
    }
    sim = block_sum(sim, red);
    for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, best, o);
        const int j = __shfl_xor_sync(0xffffffffu, bestj, o);
        if (better(v, j, best, bestj))
            best = v, bestj = j;
    }
    if ((threadIdx.x & 31) == 0)
        bv[threadIdx.x >> 5] = best, bj[threadIdx.x >> 5] = bestj;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++)
            if (better(bv[w], bj[w], best, bestj))
                best = bv[w], bestj = bj[w];
        *a.out_track = bestj;
        *a.out_sim = a.ntrack > 0 ? sim / ((float)a.ntrack * (float)N) : __int_as_float(0x7fc00000);
    }
}

/* The cache after this layer, by position, into prev_*_write: this step's queries and keys where
 * Elastic-Cache computes the position's row, the cache's before elsewhere. */
static __global__ void drift_keep_kernel(struct k_drift_args a)
{
    griddep_wait();
    const int j = blockIdx.x, qd = a.H * a.d, kvd = a.Hkv * a.d;
    const int row = a.row0 + a.rowmap[j];
    const bool fresh = a.queried[j] || drift_fired(a);
    const bf16_t *q = fresh ? a.q + (size_t)row * a.q_stride : a.prev_q_read + (size_t)j * qd;
    const bf16_t *k = fresh ? a.k_pool + (size_t)a.slot[row] * a.k_stride : a.prev_k_read + (size_t)j * kvd;
    for (int c = threadIdx.x; c < qd; c += blockDim.x)
        a.prev_q_write[(size_t)j * qd + c] = q[c];
    for (int c = threadIdx.x; c < kvd; c += blockDim.x)
        a.prev_k_write[(size_t)j * kvd + c] = k[c];
}

extern "C" int k_drift(const struct k_drift_args *a, k_stream stream)
{
    if (a->N <= 0)
        return 0;
    if (a->d > K_DRIFT_MAX_D || a->H % a->Hkv || a->nwin < 0 || a->ntrack < 0 ||
        a->nwin + a->ntrack > K_DRIFT_MAX_ROWS)
        return (int)cudaErrorInvalidValue;
    const int rows = a->nwin + 2 * a->ntrack;
    cudaError_t ce = cudaSuccess;
    if (rows > 0)
        ce = k_launch(drift_probs_kernel, dim3((unsigned)rows, (unsigned)a->H), dim3(DRIFT_THREADS), 0, stream, *a);
    if (ce == cudaSuccess)
        ce = k_launch(drift_reduce_kernel, dim3(1), dim3(1024), 0, stream, *a);
    if (ce == cudaSuccess)
        ce = k_launch(drift_keep_kernel, dim3((unsigned)a->N), dim3(DRIFT_THREADS), 0, stream, *a);
    return (int)ce;
}

/* Block i: query row i's softmax over the N keys in each head, averaged over the heads, then mixed
 * with the identity: mix[layer][i][j] = (A[i][j] + (i == j)) / 2. */
static __global__ void __launch_bounds__(DRIFT_THREADS) rollout_mix_kernel(struct k_rollout_args a)
{
    griddep_wait();
    extern __shared__ float p[]; /* [N] */
    __shared__ float qs[K_DRIFT_MAX_D], red[DRIFT_THREADS / 32];
    const int i = blockIdx.x, N = a.N, d = a.d, group = a.H / a.Hkv;
    float *row = a.mix + ((size_t)a.layer * N + i) * N;
    for (int h = 0; h < a.H; h++) {
        const bf16_t *q = a.q + (size_t)(a.row0 + i) * a.q_stride + (size_t)h * d;
        __syncthreads(); /* (the head before is done with qs) */
        for (int c = threadIdx.x; c < d; c += blockDim.x)
            qs[c] = bf2f(q[c]);
        __syncthreads();
        const float sum = softmax_keys(p, qs, N, d, a.scale, red, [&](int j) {
            return a.k_pool + (size_t)a.slot[a.row0 + j] * a.k_stride + (size_t)(h / group) * d;
        });
        const float w = 1.f / (sum * (float)a.H);
        for (int j = threadIdx.x; j < N; j += blockDim.x)
            row[j] = (h ? row[j] : 0.f) + p[j] * w;
    }
    for (int j = threadIdx.x; j < N; j += blockDim.x)
        row[j] = 0.5f * (row[j] + (j == i ? 1.f : 0.f));
}

/* out[j] = sum over i of v[i] M[i][j] (v NULL: ones), a thread a column. */
static __global__ void rollout_chain_kernel(const float *M, const float *v, float *out, int N)
{
    griddep_wait();
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N)
        return;
    float s = 0.f;
    for (int i = 0; i < N; i++)
        s += (v ? v[i] : 1.f) * M[(size_t)i * N + j];
    out[j] = s;
}

extern "C" int k_rollout_layer(const struct k_rollout_args *a, k_stream stream)
{
    if (a->N <= 0)
        return 0;
    if (a->N > K_ROLLOUT_MAX_N || a->d > K_DRIFT_MAX_D || a->H % a->Hkv || a->layer < 0 || a->layer >= a->layers)
        return (int)cudaErrorInvalidValue;
    return (int)k_launch(rollout_mix_kernel, dim3((unsigned)a->N), dim3(DRIFT_THREADS), (size_t)a->N * sizeof(float),
                         stream, *a);
}

/* 1^T M_{layers-1} ... M_0, from the last layer's mix to the first, the last product into importance. */
extern "C" int k_rollout_importance(const struct k_rollout_args *a, k_stream stream)
{
    if (a->N <= 0)
        return 0;
    if (a->N > K_ROLLOUT_MAX_N || a->layers < 1)
        return (int)cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)((a->N + 255) / 256);
    const float *v = NULL;
    for (int l = a->layers - 1; l >= 0; l--) {
        float *out = l % 2 == 0 ? a->importance : a->scratch; /* (l = 0, the last, into importance) */
        const cudaError_t ce = k_launch(rollout_chain_kernel, dim3(blocks), dim3(256), 0, stream,
                                        (const float *)(a->mix + (size_t)l * a->N * a->N), v, out, a->N);
        if (ce != cudaSuccess)
            return (int)ce;
        v = out;
    }
    return 0;
}
