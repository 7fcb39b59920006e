/*
 * eng_create.c: the engine's options, its sizing (weights, workspace, the KV pool), weights, creation and
 * release (eng_internal.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_ext.h"
#include "eng_safetensors.h"
#include "eng_tp.h"

#ifndef TS_CUDA_ARCHS /* the compute capabilities the build compiled for (the Makefile's CUDA_CCS) */
#define TS_CUDA_ARCHS "(unknown)"
#endif

/* Engines alive in the process, and the kernels' setting they share (eng_opts.portable) */
static int engines_alive;
static bool engines_portable;

void eng_opts_defaults(struct eng_opts *o, const struct eng_choices *c)
{
    memset(o, 0, sizeof *o);
    o->max_tokens = 16384;
    o->logit_chunk_rows = 2048;
    o->page_tokens = 16;
    o->ffn_chunks = 1;
    o->seed = 1;
    o->tp_size = 1;
    o->planner = "first-fit";
    o->warm_s = ENG_WARM_S;
    o->attention = 2; /* auto */
    if (c) {
        o->attention = c->attention;
        o->ffn = c->ffn;
        o->routing = c->routing;
        o->select_at = c->select_at;
        o->portable = c->portable;
        o->gemm_algos = c->gemm_algos;
        o->gemm_cache = c->gemm_cache;
    }
}

const char *eng_device_name(const struct eng *e) { return e->device; }
void eng_mem_info(const struct eng *e, struct eng_mem *out) { *out = e->mem; }

/* Activation bytes for T rows, R logit rows with no buffer reused: every planner's plan of a
 * smaller step fits in it, bar the caching allocator's segment rounding. */
static int64_t workspace_bytes(const struct model_cfg *m, const struct eng_opts *o, int64_t T, int64_t R)
{
    int64_t h = m->hidden, width = (int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    int64_t qd = (int64_t)m->num_heads * m->head_dim, F = m->ffn;
    int64_t Tc = (T + o->ffn_chunks - 1) / o->ffn_chunks, Rc = TS_MIN(R, (int64_t)o->logit_chunk_rows);
    return 2 * (T * h * 2 + T * width + T * qd + Tc * 3 * F + R * h + Rc * m->vocab * (2 + o->softmax_copy) / 2);
}

void eng_act_info(const struct eng *e, struct eng_act_info *out)
{
    *out = (struct eng_act_info){e->planner->name, e->act.plan.arena_bytes, e->act.plan.theoretical,
                                 (int64_t)e->arena.mapped, e->act.logit_rows, e->act.ffn_chunks,
                                 e->o.run_layers > 0 ? TS_MIN(e->o.run_layers, e->act.layers) : e->act.layers,
                                 e->act.g.n};
}

void eng_set_skip_ops(struct eng *e, uint32_t ops) { e->skip_ops = ops; }

void eng_set_warm_trace(struct eng *e, FILE *f, const char *label)
{
    e->warm_trace = f;
    snprintf(e->warm_label, sizeof e->warm_label, "%s", label ? label : "");
}

uint32_t eng_linear_ops(void)
{
    return 1u << OP_QKV | 1u << OP_OPROJ | 1u << OP_GATE_UP | 1u << OP_DOWN | 1u << OP_LM_HEAD;
}

void eng_set_run_layers(struct eng *e, int32_t layers) { e->o.run_layers = TS_MAX(0, layers); }
void eng_set_attention(struct eng *e, int32_t impl) { e->o.attention = impl >= 0 && impl <= 2 ? impl : 2; }
void eng_set_ffn(struct eng *e, int32_t impl) { e->o.ffn = impl >= 0 && impl <= 2 ? impl : 0; }

/* Plans the activations of a step of shape s (kept when the shape repeats). */
int eng_plan_activations(struct eng *e, const struct og_shape *s, struct ts_err *err)
{
    if (eng_act_same(&e->act, s))
        return 0;
    return eng_act_plan(&e->act, &e->m, s, e->planner, &e->po, err);
}

/* Destroys the captured graph and every kept one (the first error is returned, all are dropped). */
cudaError_t eng_drop_graphs(struct eng *e)
{
    cudaError_t ce = cudaSuccess, c2;
    if (e->have_graph && (c2 = cudaGraphExecDestroy(e->graph)) != cudaSuccess)
        ce = c2;
    e->have_graph = false;
    for (int i = 0; i < ENG_KEPT_GRAPHS; i++) {
        if (e->kept[i] && (c2 = cudaGraphExecDestroy(e->kept[i])) != cudaSuccess && ce == cudaSuccess)
            ce = c2;
        e->kept[i] = NULL;
    }
    return ce;
}

int eng_release_activations(struct eng *e, struct ts_err *err)
{
    CU(eng_drop_graphs(e)); /* graphs hold addresses in the arena: they go with its mapping */
    if (eng_arena_trim(&e->arena, 0, err))
        return -1;
    e->mem.arena_mapped = 0;
    return 0;
}

int eng_device_used(const struct eng *e, int64_t *bytes, struct ts_err *err)
{
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo(&free_b, &total_b));
    *bytes = (int64_t)(total_b - free_b) - e->mem.ballast;
    return 0;
}

/* Random weights: each tensor's share (the whole tensor on one GPU), row range by row range, as
 * k_fill_random fills the model's tensor (eng_weights.h). */
static int init_weights(struct eng *e, struct ts_err *err)
{
    struct eng_shard *sh = xmalloc(sizeof *sh * (size_t)ENG_SHARD_MAX(&e->gm));
    int rc = 0;
    for (int i = 0; i < e->lay.n && !rc; i++) {
        const struct eng_tensor *t = &e->lay.t[i], *g = &e->glay.t[i];
        bf16_t *dst = e->w + t->offset;
        int64_t col0;
        const int n = t->ones ? 0 : eng_shard_rows(&e->gm, g, e->o.tp_rank, e->o.tp_size, sh, &col0);
        if (t->ones)
            rc = k_fill_bits(dst, t->rows * t->cols, 0x3f80, e->stream);
        for (int k = 0; k < n && !rc; k++) {
            rc = k_fill_random_window(dst, sh[k].rows, t->cols, g->cols, sh[k].row0 * g->cols + col0,
                                      eng_tensor_seed(e->o.seed, i), g->scale, e->stream);
            dst += sh[k].rows * t->cols;
        }
    }
    free(sh);
    if (rc)
        return ts_fail(err, "engine: initialising the weights failed: %s", cudaGetErrorString((cudaError_t)rc));
    CU(cudaStreamSynchronize(e->stream));
    return 0;
}

/* A checkpoint: tensor by tensor through a host staging buffer (and its share cut there) */
static int load_weights(struct eng *e, struct ts_err *err)
{
    struct st_file *f;
    if (st_open(e->o.weights, &f, err))
        return -1;
    int64_t biggest = 0;
    for (int i = 0; i < e->glay.n; i++)
        biggest = TS_MAX(biggest, e->glay.t[i].rows * e->glay.t[i].cols);
    bf16_t *stage = xmalloc(sizeof *stage * (size_t)biggest);
    bf16_t *share = e->o.tp_size > 1 ? xmalloc(sizeof *share * (size_t)biggest) : stage;
    int rc = 0;
    for (int i = 0; i < e->lay.n && !rc; i++) {
        const struct eng_tensor *t = &e->lay.t[i], *g = &e->glay.t[i];
        rc = st_load_tensor(f, &e->gm, g, stage, err);
        if (!rc && share != stage)
            eng_shard_extract(&e->gm, g, e->o.tp_rank, e->o.tp_size, stage, share);
        if (!rc && cudaMemcpy(e->w + t->offset, share, sizeof *share * (size_t)(t->rows * t->cols),
                              cudaMemcpyHostToDevice) != cudaSuccess)
            rc = ts_fail(err, "%s: copying %s to the device failed", e->o.weights, eng_w_kind_name(t->kind));
    }
    if (share != stage)
        free(share);
    free(stage);
    st_close(f);
    return rc;
}

/* Makes a hard memory limit real: what the process holds now counts, and the rest of the device
 * beyond the budget is held by a ballast allocation. */
static int hold_ballast(struct eng *e, int64_t budget, size_t free_b, size_t total_b, struct ts_err *err)
{
    int64_t used = (int64_t)(total_b - free_b), ballast = (int64_t)free_b - (budget - used);
    if (e->o.mem_limit <= 0 || ballast < 0)
        return ts_fail(err, "engine: a hard memory limit needs --mem-limit above the %.2f GiB in use", used / TS_GIB);
    for (int i = 0; i < 64 && ballast > 0 && cudaMalloc(&e->ballast, (size_t)ballast) != cudaSuccess; i++) {
        cudaGetLastError();
        ballast -= 2LL << 20; /* the driver could not place all of it: hold a little less */
    }
    if (!e->ballast && ballast > 0)
        return ts_fail(err, "engine: cannot allocate the %.2f GiB ballast of the hard limit", ballast / TS_GIB);
    e->mem.ballast = ballast;
    return 0;
}

/* The KV pool: what the budget leaves after the weights, the workspace and the reserve (or
 * eng_opts.kv_tokens), in whole pages; and the step metadata's capacity, which its pages bound. */
static int size_kv_pool(struct eng *e, int64_t budget, struct ts_err *err)
{
    const struct eng_opts *o = &e->o;
    const int64_t T = o->max_tokens, kvrow = (int64_t)e->m.num_kv_heads * e->m.head_dim;
    const int64_t token_bytes = (int64_t)e->m.num_layers * 2 * (kvrow + (o->feature_cache ? e->m.hidden : 0)) * 2 +
                                (o->input_cache ? (int64_t)e->m.num_layers * e->m.hidden * 2 : 0);
    const int64_t left = budget - RESERVE_MARGIN - (e->tp ? TP_MARGIN : 0) - e->mem.weights - e->mem.workspace -
                         e->mem.blas_workspace - eng_exts_reserve(e);
    int64_t pool_tokens = o->kv_tokens > 0 ? o->kv_tokens : (left > 0 ? left / token_bytes : 0);
    if (e->tp) { /* every rank the same pool: the smallest (free memory differs between GPUs) */
        double v = (double)pool_tokens;
        if (eng_tp_agree(e->tp, &v, ENG_TP_MIN, e->stream, err))
            return -1;
        pool_tokens = (int64_t)v;
    }
    pool_tokens = o->stateless ? 0 : pool_tokens / o->page_tokens * o->page_tokens;
    if (!o->stateless && (pool_tokens < o->page_tokens || pool_tokens * token_bytes > left))
        return ts_fail(err, "engine: %s needs %.2f GiB of weights + %.2f GiB of workspace (%d tokens) + "
                            "%.2f GiB reserved, leaving no room for a KV pool within %.2f GiB",
                       e->m.name, e->mem.weights / TS_GIB, e->mem.workspace / TS_GIB, o->max_tokens,
                       (RESERVE_MARGIN + e->mem.blas_workspace) / TS_GIB, budget / TS_GIB);
    e->slots = pool_tokens;
    e->mem.kv_pool_tokens = pool_tokens;
    e->mem.kv_pool = pool_tokens * token_bytes;
    e->mem.total = e->mem.weights + e->mem.workspace + e->mem.blas_workspace + e->mem.kv_pool;
    /* a stateless step's pages are one token each: T page references */
    e->max_page_refs = (int32_t)TS_MIN((int64_t)INT32_MAX / 2, pool_tokens / o->page_tokens + T + T);
    e->meta_cap = 3 * T + 11 * (int64_t)e->max_segs + e->max_page_refs + 2LL * e->max_tiles + T;
    /* the front layers' plan (and its token ids), c_row, the hidden rows' arrays and the probes */
    e->meta_cap = 2 * e->meta_cap + 9 * T + (10LL + ENG_EVICT_FIELDS) * e->max_segs;
    e->meta_cap += 4 * 32; /* each part rounded up to 16 bytes */
    return 0;
}

/* A MoE model's routing scratch (struct eng) as parts of one buffer: its bytes; with base, the parts'
 * pointers set there. */
static int64_t moe_scratch(struct eng *e, char *base)
{
    const int64_t T = e->o.max_tokens, n = T * e->m.experts_top_k, E = e->m.num_experts;
    e->moe_max_tiles = (int32_t)((n + K_MOE_TILE_MIN - 1) / K_MOE_TILE_MIN + E);
    const struct {
        void **p;
        int64_t bytes;
    } parts[] = {{(void **)&e->moe_ids, 4 * n},           {(void **)&e->moe_wts, 4 * n},
                 {(void **)&e->moe_tok, 4 * n},           {(void **)&e->moe_pos, 4 * n},
                 {(void **)&e->moe_counts, 4 * E},        {(void **)&e->moe_offsets, 4 * (E + 1)},
                 {(void **)&e->moe_tiles, 8LL * e->moe_max_tiles}, {(void **)&e->moe_ntiles, 4},
                 {(void **)&e->moe_acc, 4 * T * e->m.hidden}};
    int64_t off = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(parts); i++) {
        if (base)
            *parts[i].p = base + off;
        off += (parts[i].bytes + 255) / 256 * 256;
    }
    return off;
}

static int alloc_moe(struct eng *e, struct ts_err *err)
{
    if (eng_dev_alloc(&e->moe_buf, moe_scratch(e, NULL), err))
        return -1;
    moe_scratch(e, e->moe_buf);
    return e->o.trace_selection &&
           eng_dev_alloc((void **)&e->moe_trace,
                         (int64_t)e->m.num_layers * e->o.max_tokens * e->m.experts_top_k * 4, err);
}

/* The device buffers (weights, workspaces, the KV pool poisoned so that a read of an unwritten key
 * shows, step metadata and outputs) and their pinned host twins. */
static int alloc_buffers(struct eng *e, struct ts_err *err)
{
    const int64_t T = e->o.max_tokens, h = e->m.hidden, kvd = (int64_t)e->m.num_kv_heads * e->m.head_dim;
    const bool pooled = !e->o.stateless, fc = pooled && e->o.feature_cache, ic = pooled && e->o.input_cache;
    const int64_t kv_bytes = e->slots * e->m.num_layers * kvd * 2;
    const int64_t f_bytes = fc ? e->slots * e->m.num_layers * 2 * h * 2 : 0;
    const int64_t i_bytes = ic ? e->slots * e->m.num_layers * h * 2 : 0;
    if (eng_dev_alloc((void **)&e->w, e->mem.weights, err) || eng_dev_alloc(&e->blas_ws, BLAS_WORKSPACE, err) ||
        eng_dev_alloc(&e->attn_ws, ATTN_WORKSPACE, err) ||
        (pooled &&
         (eng_dev_alloc((void **)&e->k_pool, kv_bytes, err) || eng_dev_alloc((void **)&e->v_pool, kv_bytes, err))) ||
        (fc && (eng_dev_alloc((void **)&e->f_pool, f_bytes, err) || eng_dev_alloc((void **)&e->fc_out, T * h * 2, err) ||
                eng_dev_alloc((void **)&e->fc_hp, T * h * 2, err) ||
                eng_dev_alloc((void **)&e->fc_vnew, T * kvd * 2, err) ||
                eng_dev_alloc((void **)&e->fc_sim, T * 4, err))) ||
        (ic && eng_dev_alloc((void **)&e->i_pool, i_bytes, err)) ||
        (pooled && e->o.trace_selection && eng_dev_alloc((void **)&e->pick_trace, PICK_TRACE, err)) ||
        (pooled && eng_dev_alloc((void **)&e->sel_means, SELECTION_MEANS, err)) ||
        (e->m.num_experts > 0 && alloc_moe(e, err)) ||
        (pooled && (eng_dev_alloc((void **)&e->focus_imp, 2 * e->m.num_heads * T * 4, err) ||
                    eng_dev_alloc((void **)&e->focus_prog, EVICT_REQS * 4, err))) ||
        eng_dev_alloc((void **)&e->d_meta_buf, e->meta_cap * 4, err) || eng_dev_alloc((void **)&e->d_tok, T * 4, err) ||
        eng_dev_alloc((void **)&e->d_max, T * 4, err) || eng_dev_alloc((void **)&e->d_conf, T * 4, err) ||
        (e->o.top2_gap && eng_dev_alloc((void **)&e->d_gap, T * 4, err)) ||
        eng_dev_alloc((void **)&e->d_um, 6 * T * 4, err) ||
        (e->o.trace_selection && eng_dev_alloc((void **)&e->sel_trace, SELECTION_TRACE, err)) ||
        (e->tp && eng_dev_alloc((void **)&e->tp_gather, 12LL * (e->o.tp_size + 1) * T, err)) ||
        eng_exts_create(e, err))
        return -1;
    if (cudaMallocHost((void **)&e->h_meta_buf, (size_t)e->meta_cap * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_tok, (size_t)T * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_max, (size_t)T * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_conf, (size_t)T * 4) != cudaSuccess ||
        (e->o.top2_gap && cudaMallocHost((void **)&e->h_gap, (size_t)T * 4) != cudaSuccess) ||
        cudaMallocHost((void **)&e->h_um, (size_t)T * 24) != cudaSuccess)
        return ts_fail(err, "engine: cannot allocate pinned host buffers");
    if (pooled && (k_fill_bits(e->k_pool, kv_bytes / 2, 0x7fc0, e->stream) ||
                   k_fill_bits(e->v_pool, kv_bytes / 2, 0x7fc0, e->stream) ||
                   (fc && k_fill_bits(e->f_pool, f_bytes / 2, 0x7fc0, e->stream)) ||
                   (ic && k_fill_bits(e->i_pool, i_bytes / 2, 0x7fc0, e->stream))))
        return ts_fail(err, "engine: poisoning the KV pool failed");
    if (pooled && cudaMemsetAsync(e->focus_prog, 0xff, EVICT_REQS * 4, e->stream) != cudaSuccess)
        return ts_fail(err, "engine: clearing the eviction progress failed");
    return 0;
}

/* The model this GPU runs and its weights' layout: the whole model, or (tensor parallelism) the
 * rank's share, on GPU tp_rank, with the ranks' communicator. */
static int setup_shares(struct eng *e, struct ts_err *err)
{
    const int size = e->o.tp_size, rank = e->o.tp_rank;
    if (size < 1 || size > ENG_TP_MAX || rank < 0 || rank >= size || (size > 1 && !e->o.tp_id))
        return ts_fail(err, "engine: tensor-parallel rank %d of %d (at most %d ranks, each named by the "
                            "launcher)", rank, size, ENG_TP_MAX);
    if (model_tp_share(&e->gm, size, &e->m, err) || eng_layout_build_tp(&e->gm, rank, size, &e->lay, err) ||
        eng_layout_build(&e->gm, &e->glay, err))
        return -1;
    int dev_count = 0;
    if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0)
        return ts_fail(err, "engine: no CUDA device found");
    if (dev_count < size)
        return ts_fail(err, "engine: tensor parallelism over %d GPUs, but only %d %s visible", size, dev_count,
                       dev_count == 1 ? "is" : "are");
    if (cudaSetDevice(rank) != cudaSuccess)
        return ts_fail(err, "engine: cannot use GPU %d", rank);
    return size > 1 ? eng_tp_init(rank, size, e->o.tp_id, &e->tp, err) : 0;
}

/* Whether the options are ones an engine of model m can be made with: 0, or the message. */
static int opts_refused(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err)
{
    if (o->max_tokens < 1 || o->logit_chunk_rows < 1 || o->page_tokens < 1 || o->ffn_chunks < 1)
        return ts_fail(err, "engine: max_tokens, logit_chunk_rows, page_tokens and ffn_chunks must be >= 1");
    if (o->page_tokens & (o->page_tokens - 1))
        return ts_fail(err, "engine: page_tokens %d is not a power of two", o->page_tokens);
    if (o->softmax_copy != 0 && o->softmax_copy != 4)
        return ts_fail(err, "engine: softmax_copy is 0 or 4 bytes per logit");
    if (!(o->warm_s >= 0 && o->warm_s <= 600))
        return ts_fail(err, "engine: warm_s %g outside 0..600 seconds", o->warm_s);
    if (!(o->idle_s >= 0 && o->idle_s <= 600))
        return ts_fail(err, "engine: idle_s %g outside 0..600 seconds", o->idle_s);
    if (model_engine_lacks(m))
        return ts_fail(err, "engine: model %s has %s, which the engine does not run", m->name, model_engine_lacks(m));
    if (o->top2_gap && o->tp_size > 1)
        return ts_fail(err, "engine: the top-2 gap (Prophet's) is measured on one GPU: its vocabulary shares are "
                            "not merged");
    return eng_exts_refused(m, o, err);
}

int eng_create(const struct model_cfg *m, const struct eng_opts *o, struct eng **out,
               struct ts_err *err)
{
    *out = NULL;
    if (opts_refused(m, o, err))
        return -1;
    if (engines_alive > 0 && o->portable != engines_portable)
        return ts_fail(err, "engine: --kernels %s, while an engine alive in this process runs the %s kernels (the "
                            "kernels' setting is the process's)",
                       o->portable ? "portable" : "device", engines_portable ? "portable" : "device's");
    const struct planner_ops *planner;
    if (planner_resolve(o->planner ? o->planner : "first-fit", &planner, err))
        return -1;
    struct eng *e = xcalloc(1, sizeof *e);
    e->gm = *m;
    e->o = *o;
    e->planner = planner;
    engines_alive++;
    engines_portable = o->portable;
    k_set_portable(o->portable);
    planner_opts_defaults(&e->po);
    e->po.ilp_time_limit_s = 2; /* a step waits for it: the ILP falls back quickly */
    int rc = -1;
    if (setup_shares(e, err))
        goto fail;
    m = &e->m; /* from here on, this GPU's share of the model */
    {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, o->tp_rank) != cudaSuccess) {
            ts_fail(err, "engine: cudaGetDeviceProperties failed");
            goto fail;
        }
        snprintf(e->device, sizeof e->device, "%.200s (sm_%d%d, %d SMs)", prop.name, prop.major,
                 prop.minor, prop.multiProcessorCount);
        if (!k_has_image()) {
            ts_fail(err, "engine: this build has no code for the %s (compute capability %d.%d): it was compiled for "
                         "compute capabilities %s; rebuild with make CUDA_ARCH=sm_%d%d, or CUDA_ARCH=all (sm_80, "
                         "sm_86, sm_89 and sm_90)",
                    prop.name, prop.major, prop.minor, TS_CUDA_ARCHS, prop.major, prop.minor);
            goto fail;
        }
    }
    if (cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&e->ev0) != cudaSuccess || cudaEventCreate(&e->ev1) != cudaSuccess) {
        ts_fail(err, "engine: cannot create a stream or events");
        goto fail;
    }
    const int64_t T = o->max_tokens;
    e->mem.weights = e->lay.total * 2;
    e->mem.blas_workspace = BLAS_WORKSPACE + ATTN_WORKSPACE + (o->stateless ? 0 : SELECTION_MEANS);
    e->max_segs = (int32_t)T;
    e->max_tiles = (int32_t)(T / 64 + T);
    {   /* the activation budget: the larger of the plan of the largest step and no reuse at all */
        struct og_shape big = {T, T, o->logit_chunk_rows, o->ffn_chunks, o->softmax_copy, false, 1,
                               OG_LAYOUT_ENGINE}; /* (fused: less) */
        if (planner == planner_find("profiled")) {
            opgraph_build(&e->prof_graph, m, &big);
            e->po.profiled_graph = &e->prof_graph;
        }
        if (!o->stateless && eng_plan_activations(e, &big, err))
            goto fail;
        e->mem.workspace = o->stateless ? 0 : TS_MAX(workspace_bytes(m, o, T, T), e->act.plan.arena_bytes);
        if (o->feature_cache && !o->stateless) /* a layered step's scratch (fc_out, fc_hp, fc_vnew) */
            e->mem.workspace += T * ((2LL * m->hidden + (int64_t)m->num_kv_heads * m->head_dim) * 2 + 4);
        if (!o->stateless) /* an evicting step's importance and progress */
            e->mem.workspace += 8LL * m->num_heads * T + 4LL * EVICT_REQS;
        if (o->tp_size > 1) /* the ranks' LM-head results */
            e->mem.workspace += 12LL * (o->tp_size + 1) * T;
        if (m->num_experts > 0) /* the routing scratch */
            e->mem.workspace += moe_scratch(e, NULL);
    }
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        ts_fail(err, "engine: cudaMemGetInfo failed");
        goto fail;
    }
    int64_t budget = o->mem_limit > 0 ? o->mem_limit : (int64_t)free_b;
    if (budget > (int64_t)free_b) {
        ts_fail(err, "engine: --mem-limit %.2f GiB exceeds the %.2f GiB free on %s",
                budget / TS_GIB, free_b / TS_GIB, e->device);
        goto fail;
    }
    if (o->hard_limit && hold_ballast(e, budget, free_b, total_b, err))
        goto fail;
    if (eng_arena_init(&e->arena, o->tp_rank, total_b, err))
        goto fail;
    if (size_kv_pool(e, budget, err) || alloc_buffers(e, err))
        goto fail;
    if (e->o.weights ? load_weights(e, err) : init_weights(e, err))
        goto fail;
    if (eng_gemm_create(&e->gemm, e->blas_ws, BLAS_WORKSPACE, o->gemm_algos, err) ||
        (o->gemm_cache && o->tp_rank == 0 && eng_gemm_use_cache(e->gemm, o->gemm_cache, e->device, err)))
        goto fail;
    e->tuning = !o->no_tune;
    e->fused_ffn_runs = k_gemm_swiglu_fits(m->hidden, m->ffn) && k_gemm_wgmma_ready(e->stream);
    e->moe_wgmma = e->m.num_experts > 0 && k_moe_wgmma_fits(2 * e->m.moe_ffn, e->m.hidden) &&
                   k_moe_wgmma_fits(e->m.hidden, e->m.moe_ffn) && k_gemm_wgmma_ready(e->stream);
    eng_kv_init(&e->kv, o->page_tokens, (int32_t)(e->mem.kv_pool_tokens / o->page_tokens));
    eng_plan_init(&e->plan);
    *out = e;
    return 0;
fail:
    eng_destroy(e);
    return rc;
}

/* An engine of the tools (check_engine's and engine_bench's --tp), as eng_tp.h says. */
int eng_tp_create(const struct model_cfg *m, uint64_t seed, int size, const struct eng_choices *choices, int *rank,
                  struct eng **e, struct ts_err *err)
{
    struct eng_opts o;
    eng_opts_defaults(&o, choices);
    o.max_tokens = ENG_TP_TOOL_TOKENS;
    o.kv_tokens = ENG_TP_TOOL_KV_TOKENS;
    o.seed = seed;
    *e = NULL;
    *rank = 0;
    if (size > 0) {
        if (eng_tp_place(&o, err))
            return -1;
        if (o.tp_size != size)
            return ts_fail(err, "--tp %d inside a launch of %d ranks", size, o.tp_size);
        *rank = o.tp_rank;
    }
    return eng_create(m, &o, e, err);
}

void eng_destroy(struct eng *e)
{
    if (!e)
        return;
    engines_alive--;
    eng_drop_graphs(e);
    for (int i = 0; i < MAX_PROF_EVENTS && e->prof_ev[i]; i++)
        cudaEventDestroy(e->prof_ev[i]);
    eng_exts_destroy(e);
    void *dev[] = {e->w,      e->blas_ws,      e->attn_ws, e->k_pool,  e->v_pool, e->d_meta_buf, e->d_tok,
                   e->d_max,  e->d_conf,       e->d_gap, e->tune_scratch, e->ballast, e->sel_trace, e->f_pool,
                   e->i_pool, e->fc_out,
                   e->fc_hp,  e->fc_vnew,      e->pick_trace, e->fc_sim, e->focus_imp, e->focus_prog,
                   e->moe_buf, e->moe_trace, e->tp_gather, e->d_um, e->sel_means, e->d_move};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    void *host[] = {e->h_meta_buf, e->h_tok, e->h_max, e->h_conf, e->h_gap, e->h_um};
    for (size_t i = 0; i < TS_ARRAY_LEN(host); i++)
        if (host[i])
            cudaFreeHost(host[i]);
    eng_gemm_destroy(e->gemm);
    if (e->ev0)
        cudaEventDestroy(e->ev0);
    if (e->ev1)
        cudaEventDestroy(e->ev1);
    if (e->stream)
        cudaStreamDestroy(e->stream);
    eng_arena_destroy(&e->arena);
    eng_act_free(&e->act);
    opgraph_free(&e->prof_graph);
    eng_kv_free(&e->kv);
    eng_plan_free(&e->plan);
    eng_layout_free(&e->lay);
    eng_layout_free(&e->glay);
    eng_tp_destroy(e->tp);
    free(e);
}
