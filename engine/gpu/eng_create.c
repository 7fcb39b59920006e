/*
 * eng_cuda.c: the engine on the device: memory sizing, weights, the forward of one step and CUDA
 * graph capture.
 *
 * Forward of a step (T packed tokens, R logit rows), per layer:
 *   hn = rmsnorm(x); qkv = hn Wqkv^T; bias + RoPE on q,k, k and v stored into the pool;
 *   att = attention(q, pool); x += att Wo^T (cuBLASLt with beta = 1: the residual add is the GEMM's);
 *   hn = rmsnorm(x); per FFN chunk of rows: gu = hn Wgu^T; a = silu(g) u; x += a Wdown^T
 * then hr = rmsnorm(x[logit rows]) and, per chunk of logit_chunk rows, logits = hr Wlm^T followed by
 * the fused argmax/max/confidence kernel, so at most one chunk of logits exists.
 *
 * Every activation buffer is placed by the planner's plan of the step's op graph (eng_act.h) in
 * the arena (eng_arena.h); a step of a new shape is planned (and the arena grown) before its first
 * launch.
 */
#define _POSIX_C_SOURCE 200809L
#include "eng.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_op.h"
#include "eng_act.h"
#include "eng_arena.h"
#include "eng_cuda_check.h"
#include "eng_gemm.h"
#include "eng_plan.h"
#include "eng_safetensors.h"
#include "eng_tp.h"
#include "eng_weights.h"
#include "kernels.h"

#ifndef TS_CUDA_ARCHS /* the compute capabilities the build compiled for (the Makefile's CUDA_CCS) */
#define TS_CUDA_ARCHS "(unknown)"
#endif
#define BLAS_WORKSPACE (64LL << 20)
#define ATTN_WORKSPACE (64LL << 20) /* split-KV partial results; the sparse selection's scratch */
#define SELECTION_TRACE (16 << 20)  /* eng_opts.trace_selection's copy of every layer's kept keys */
#define SELECTION_MEANS (16 << 20)  /* every layer's selecting segments' mean queries, for selecting
                                     * after the last layer (select_deferred) */
#define PICK_TRACE (16 << 20)       /* and of every layer's picked rows (feature cache), or of an
                                     * evicting step's kept candidates */
#define EVICT_REQS (1 << 20)        /* requests an evicting step may name (their progress on the GPU) */
#define RESERVE_MARGIN (256LL << 20) /* context, cuBLAS handles, allocator slack */
#define TP_MARGIN (512LL << 20)      /* and NCCL's allocations after the pool is sized (graph capture) */
#define SMOOTH_SUB 256               /* IterSmooth's GEMM rows at a time (the products' buffer) */

#define MAX_PROF_EVENTS 1024

_Static_assert((int)K_CREDIT_MAX == (int)CREDIT_MAX && (int)K_CREDIT_MASKED == (int)CREDIT_MASKED &&
                   (int)K_CREDIT_DECAY == (int)CREDIT_DECAY && (int)K_CREDIT_CLEAR == (int)CREDIT_CLEAR,
               "kernels.h's credit rows are eng_unmask.h's");
_Static_assert((int)K_UNMASK_TOPK == (int)UNMASK_TOPK && (int)K_UNMASK_THRESHOLD == (int)UNMASK_THRESHOLD &&
                   (int)K_UNMASK_HIERARCHICAL == (int)UNMASK_HIERARCHICAL &&
                   (int)K_UNMASK_CREDIT == (int)UNMASK_CREDIT && K_UNMASK_MAX_ROWS == UNMASK_MAX_ROWS,
               "kernels.h's unmasking rules are eng_unmask.h's");

struct dev_meta { /* device copies of the plan's arrays, carved from one buffer */
    int32_t *tok_pos, *tok_slot, *tok_ids, *q_start, *q_len, *key_len, *kv_cached, *page_off;
    int32_t *pages, *tiles, *logit_idx, *sel;
    int32_t *c_row, *x_comp, *x_ids, *x_slot, *probe, *probe_idx; /* a layered step's (eng_plan.h) */
};

struct eng {
    struct model_cfg m;        /* the model this GPU runs: a tensor-parallel rank's share of gm */
    struct model_cfg gm;       /* the whole model */
    struct eng_opts o;
    struct eng_layout lay;     /* m's weights: the shares of glay's (eng_layout_build_tp) */
    struct eng_layout glay;
    struct eng_tp *tp;         /* tensor parallelism's communicator (eng_opts.tp_size > 1), or NULL */
    float *tp_gather;          /* and the LM-head results: its own [3][R], then every rank's */
    struct eng_mem mem;
    char device[256];
    cudaStream_t stream;
    struct eng_gemm *gemm;
    bool tuning; /* GEMM autotuning allowed (off during graph capture) */
    bool fused_ffn_runs; /* k_gemm_swiglu runs on this device for this model (probed at creation) */
    int32_t attn_block;  /* the prepared step's block-causal attention (step_desc.attn_block) */
    int32_t front_layers; /* and the layers that run its front shapes (step_front_layers) */
    bool select_heads;   /* and its sparse selection's knobs (step_desc.select_heads, select_kernel) */
    int32_t select_kernel;
    int32_t *sel_trace;  /* every layer's kept keys of the last step (eng_opts.trace_selection) */
    float *sel_means;    /* [layers][num_sel][H d]: each layer's mean queries, where the step's
                          * selections run after its last layer (sel_defer) */
    bool sel_defer;
    int32_t *pick_trace; /* and its picked rows (feature cache) */
    cudaEvent_t ev0, ev1;
    void *blas_ws, *attn_ws;
    bf16_t *w;                 /* weights */
    bf16_t *k_pool, *v_pool;   /* [layers][slots][Hkv][d] */
    bf16_t *f_pool;            /* eng_opts.feature_cache: [layers][attention, FFN][slots][h] */
    bf16_t *i_pool;            /* eng_opts.input_cache: [layers][slots][h], each token's input to a layer */
    bf16_t *fc_out, *fc_hp, *fc_vnew; /* a layered step's scratch: a half-layer's outputs [T, h], the
                                       * normalised probe rows [T, h] and their new V [T, kv_dim] */
    float *fc_sim;                    /* and the probe rows' similarities [T] */
    float *focus_imp;                 /* an evicting step's importance, [2][H][T] (k_focus_args.imp) */
    int32_t *focus_prog;              /* and each request's progress [EVICT_REQS] (-1: none) */
    int32_t *d_move;                  /* a move's source and destination pages (eng_pull) */
    int32_t cap_move;
    /* a MoE model's routing (kernels.h, k_moe_*), carved from moe_buf (moe_scratch): each copy's
     * expert and weight, the dispatch's arrays, and each token's running sum of its weighted copies
     * [T, h] fp32 */
    void *moe_buf;
    int32_t *moe_ids, *moe_counts, *moe_offsets, *moe_tok, *moe_pos, *moe_tiles, *moe_ntiles;
    float *moe_wts, *moe_acc;
    int32_t moe_max_tiles;
    bool moe_wgmma; /* the experts' GEMMs on wgmma: Hopper's kernels run, m's widths fit */
    int32_t *moe_trace; /* every MoE layer's choices of the last step, [layers][max_tokens k]
                         * (eng_opts.trace_selection) */
    int64_t slots;
    /* activations: the step's plan, placed in the arena */
    const struct planner_ops *planner;
    struct planner_opts po;
    struct opgraph prof_graph; /* the profiled planner's reference step */
    struct eng_act act;
    struct eng_arena arena;
    bf16_t *hr_last;           /* the last step's normalised logit rows (in the arena) */
    bool poison_next;
    void *ballast;
    void *tune_scratch;        /* GEMM tuning outputs, held only while a step tunes */
    size_t tune_scratch_bytes;
    int32_t *d_meta_buf, *h_meta_buf; /* device / pinned host */
    int64_t meta_cap;          /* int32 elements */
    struct dev_meta dm, dm_front; /* the plan's; its front layers' (layered steps) */
    int32_t *d_tok;
    float *d_max, *d_conf, *d_gap; /* (d_gap: with top2_gap) */
    int32_t *h_tok;
    float *h_max, *h_conf, *h_gap;
    int32_t *d_um, *h_um;      /* eng_unmask's groups, masks, commits, counts and taus [6 max_tokens] */
    /* credit decoding (eng_credit_next): the credit rows, current (cr_cur) and the next step's, and
     * the next step's logit rows' credit rows and flags ([2 max_tokens], pinned twin in h_um) */
    int32_t *cr_tok[2], *cr_n[2], *cr_map;
    float *cr_val[2];
    int cr_cur;
    bool cr_pending;
    int32_t cr_R;
    float cr_alpha, cr_beta, cr_gamma;
    /* IterSmooth (eng_smooth_next): the soft rows [smooth_rows, h], current (sm_cur: the embedding
     * reads them) and the next step's (its logit rows write them; a step run again for its GEMMs'
     * warm-up reads the same), a sub-chunk's products [SMOOTH_SUB, h], and the step's maps
     * ([3 max_tokens]: logit rows' soft rows, embedded rows' soft rows and weights; pinned twin h_sm) */
    bf16_t *sm_soft[2], *sm_tmp;
    int sm_cur;
    int32_t *sm_map, *h_sm;
    float *sm_stats;   /* the plain rows' max and confidence [2 max_tokens], kept from credit's fusion */
    bool sm_step;      /* the step being run has iter_smooth */
    bool sm_pending;   /* eng_smooth_next named the next step's logit rows' soft rows */
    int32_t sm_R;      /* how many */
    int32_t sm_in;     /* the step's embedded rows that add a soft row (0: none) */
    /* Elastic-Cache's drift test (eng_drift_next): each request's queries and keys by position, in
     * every layer, as its cache held them before the step (drift_cur) and after it; the next step's
     * entries, their sel, rowmap, eligible and queried (drift_sel: K_DRIFT_MAX_ROWS a request; the
     * others drift_positions a request); scratch; each entry's tracked token and similarity a layer */
    bf16_t *drift_q[2], *drift_k[2];
    int drift_cur;
    bool drift_pending;
    struct eng_drift_req *drift;
    int32_t drift_n, *drift_sel, *drift_rowmap, *d_drift_track;
    uint8_t *drift_elig, *drift_query;
    float *drift_probs, *d_drift_sim;
    /* d2Cache's attention rollout (eng_rollout_next): each entry's mix a layer, its importance and the
     * products' scratch; the next step's entries */
    float *ro_mix, *ro_imp, *ro_tmp;
    struct eng_rollout_req *ro;
    int32_t ro_n;
    bool ro_pending;
    /* SparseD's patterns (eng_sparsed_next): each slot's kept key blocks a layer, head and query
     * block, [layers][requests][H][sp_qb] counts and [...][sp_qb] blocks; the scoring's scratch; each
     * segment's first pattern entry (-1: dense) for the attention, and its pinned twin; the next
     * step's entries; each slot's positions once built (0: none) */
    int32_t *sp_cnt, *sp_base, *h_sp_base;
    int16_t *sp_list;
    float *sp_part;
    int32_t sp_qb, sp_n, sp_sparse, *sp_N;
    struct eng_sparsed_req *sp;
    struct eng_tokens tokens;  /* eng_set_tokens (tokens.id NULL: none) */
    int32_t max_segs, max_tiles, max_page_refs;
    struct eng_kv kv;
    struct eng_plan plan;
    int32_t last_R;
    cudaGraphExec_t graph;
    bool have_graph;
    cudaGraphExec_t kept[ENG_KEPT_GRAPHS]; /* eng_graph_keep: variants replayed side by side */
    /* per-op profiling: an event after each op, tagged with its cost-model op */
    bool profiling;
    cudaEvent_t prof_ev[MAX_PROF_EVENTS];
    int prof_op[MAX_PROF_EVENTS];
    int prof_n;
    uint32_t skip_ops;         /* ops left out of the steps (eng_set_skip_ops: timing only) */
    FILE *warm_trace;          /* eng_set_warm_trace */
    char warm_label[128];
};

/* Whether the steps launch op's kernels (eng_set_skip_ops). */
static bool runs(const struct eng *e, enum cost_op op) { return !(e->skip_ops >> op & 1u); }

/* Marks the end of an op in a profiled run (no-op otherwise). */
static void mark(struct eng *e, enum cost_op op)
{
    if (!e->profiling || e->prof_n >= MAX_PROF_EVENTS)
        return;
    cudaEventRecord(e->prof_ev[e->prof_n], e->stream);
    e->prof_op[e->prof_n++] = op;
}

/* the process's choices (eng_set_choices), which every eng_opts starts from */
static struct eng_choices choices = {.attention = 2};

void eng_set_choices(const struct eng_choices *c)
{
    choices = *c;
    k_set_portable(c->portable);
    eng_gemm_set_algos(c->gemm_algos);
}

void eng_opts_defaults(struct eng_opts *o)
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
    o->sparsed_block = 128;
    o->sparsed_select = 0.3;
    o->attention = choices.attention;
    o->ffn = choices.ffn;
    o->routing = choices.routing;
    o->select_at = choices.select_at;
    o->gemm_cache = choices.gemm_cache;
}

const char *eng_device_name(const struct eng *e) { return e->device; }
void eng_mem_info(const struct eng *e, struct eng_mem *out) { *out = e->mem; }

static const bf16_t *W(const struct eng *e, enum w_kind k, int layer)
{
    const struct eng_tensor *t = eng_layout_find(&e->lay, k, layer);
    return t ? e->w + t->offset : NULL;
}

/* Activation bytes for T rows, R logit rows with no buffer reused: every planner's plan of a
 * smaller step fits in it, bar the caching allocator's segment rounding. */
static int64_t workspace_bytes(const struct model_cfg *m, const struct eng_opts *o, int64_t T, int64_t R)
{
    int64_t h = m->hidden, width = (int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    int64_t qd = (int64_t)m->num_heads * m->head_dim, F = m->ffn;
    int64_t Tc = (T + o->ffn_chunks - 1) / o->ffn_chunks, Rc = TS_MIN(R, (int64_t)o->logit_chunk_rows);
    return 2 * (T * h * 2 + T * width + T * qd + Tc * 3 * F + R * h + Rc * m->vocab * (2 + o->softmax_copy) / 2);
}

/* The step's op-graph shape, by its own knobs; its FFN is fused (every chunk) where eng_opts.ffn
 * fuses a full chunk. */
static struct og_shape step_shape(const struct eng *e, const struct step_desc *sd)
{
    const int64_t T = eng_plan_layered(sd) || eng_plan_evicting(sd) ? sd->tot.rows : sd->tot.q_tokens;
    const int64_t chunks = TS_MAX(1, sd->ffn_chunks);
    return (struct og_shape){T, sd->tot.logit_rows, sd->logit_chunk_rows, (int32_t)chunks, e->o.softmax_copy,
                             .fused_ffn = T > 0 && eng_ffn_fuses(e, (int)((T + chunks - 1) / chunks))};
}

/* Plans the activations of a step of shape s (kept when the shape repeats). */
static int plan_activations(struct eng *e, const struct og_shape *s, struct ts_err *err)
{
    if (eng_act_same(&e->act, s))
        return 0;
    return eng_act_plan(&e->act, &e->m, s, e->planner, &e->po, err);
}

int64_t eng_step_workspace_bytes(struct eng *e, const struct step_desc *sd)
{
    struct og_shape s = step_shape(e, sd);
    return plan_activations(e, &s, NULL) ? -1 : e->act.plan.arena_bytes;
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




bool eng_routes_balanced(const struct eng *e) { return e->o.routing == 2 || (e->o.routing == 0 && !e->o.weights); }

bool eng_ffn_fused_runs(const struct eng *e) { return e->fused_ffn_runs; }

bool eng_ffn_fuses(const struct eng *e, int rows)
{
    return e->fused_ffn_runs && (e->o.ffn == 1 || (e->o.ffn == 2 && k_gemm_swiglu_auto(rows, e->m.ffn)));
}

/* Destroys the captured graph and every kept one (the first error is returned, all are dropped). */
static cudaError_t drop_graphs(struct eng *e)
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
    CU(drop_graphs(e)); /* graphs hold addresses in the arena: they go with its mapping */
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

static int alloc(void **p, int64_t bytes, struct ts_err *err)
{
    CU(cudaMalloc(p, (size_t)(bytes > 0 ? bytes : 16)));
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

/* Elastic-Cache's drift test's buffers (eng_opts.drift_positions): two steps' queries and keys of
 * every request and layer, its scratch and its entries' positions. */
static int64_t drift_q_elems(const struct eng *e)
{
    return (int64_t)e->m.num_layers * e->o.drift_requests * e->o.drift_positions * e->m.num_heads * e->m.head_dim;
}

static int64_t drift_k_elems(const struct eng *e)
{
    return (int64_t)e->m.num_layers * e->o.drift_requests * e->o.drift_positions * e->m.num_kv_heads * e->m.head_dim;
}

static int64_t drift_probs_bytes(const struct eng *e)
{
    return (int64_t)2 * K_DRIFT_MAX_ROWS * e->m.num_heads * e->o.drift_positions * 4;
}

/* d2Cache's attention rollout's buffers (eng_opts.rollout_positions): each request's mix a layer, its
 * importance and scratch. */
static int64_t rollout_bytes(const struct eng *e)
{
    const int64_t N = e->o.rollout_positions;
    return N > 0 ? (int64_t)e->o.rollout_requests * ((int64_t)e->m.num_layers * N * N + 2 * N) * 4 : 0;
}

/* SparseD's patterns' buffers (eng_opts.sparsed_positions) */
static int64_t sparsed_bytes(const struct eng *e)
{
    if (e->o.sparsed_positions <= 0)
        return 0;
    const int64_t qb = (e->o.sparsed_positions + e->o.sparsed_block - 1) / e->o.sparsed_block;
    return (int64_t)e->m.num_layers * e->o.sparsed_requests * e->m.num_heads * qb * (4 + 2 * qb) +
           k_sparsed_part_bytes(e->o.sparsed_positions, e->m.num_heads) + (int64_t)e->o.max_tokens * 4;
}

static int64_t drift_bytes(const struct eng *e)
{
    if (e->o.drift_positions <= 0)
        return 0;
    return 2 * 2 * (drift_q_elems(e) + drift_k_elems(e)) + drift_probs_bytes(e) +
           (int64_t)e->o.drift_requests * (K_DRIFT_MAX_ROWS * 4 + 6LL * e->o.drift_positions) +
           (int64_t)e->o.drift_requests * e->m.num_layers * 8;
}

/* The KV pool: what the budget leaves after the weights, the workspace and the reserve (or
 * eng_opts.kv_tokens), in whole pages; and the step metadata's capacity, which its pages bound. */
static int size_kv_pool(struct eng *e, int64_t budget, struct ts_err *err)
{
    const struct eng_opts *o = &e->o;
    const int64_t T = o->max_tokens, kvrow = (int64_t)e->m.num_kv_heads * e->m.head_dim;
    const int64_t token_bytes = (int64_t)e->m.num_layers * 2 * (kvrow + (o->feature_cache ? e->m.hidden : 0)) * 2 +
                                (o->input_cache ? (int64_t)e->m.num_layers * e->m.hidden * 2 : 0);
    const int64_t smooth = (2LL * o->smooth_rows + SMOOTH_SUB) * e->m.hidden * 2; /* IterSmooth's rows */
    const int64_t left = budget - RESERVE_MARGIN - (e->tp ? TP_MARGIN : 0) - e->mem.weights - e->mem.workspace -
                         e->mem.blas_workspace - smooth - drift_bytes(e) - rollout_bytes(e) - sparsed_bytes(e);
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
    if (alloc(&e->moe_buf, moe_scratch(e, NULL), err))
        return -1;
    moe_scratch(e, e->moe_buf);
    return e->o.trace_selection &&
           alloc((void **)&e->moe_trace, (int64_t)e->m.num_layers * e->o.max_tokens * e->m.experts_top_k * 4, err);
}

/* The device buffers (weights, workspaces, the KV pool poisoned so that a read of an unwritten key
 * shows, step metadata and outputs) and their pinned host twins. */
static int alloc_credit(struct eng *e, struct ts_err *err);
static int alloc_drift(struct eng *e, struct ts_err *err);
static int alloc_rollout(struct eng *e, struct ts_err *err);
static int alloc_sparsed(struct eng *e, struct ts_err *err);
static int alloc_buffers(struct eng *e, struct ts_err *err)
{
    const int64_t T = e->o.max_tokens, h = e->m.hidden, kvd = (int64_t)e->m.num_kv_heads * e->m.head_dim;
    const bool pooled = !e->o.stateless, fc = pooled && e->o.feature_cache, ic = pooled && e->o.input_cache;
    const int64_t kv_bytes = e->slots * e->m.num_layers * kvd * 2, f_bytes = fc ? e->slots * e->m.num_layers * 2 * h * 2 : 0;
    const int64_t i_bytes = ic ? e->slots * e->m.num_layers * h * 2 : 0;
    if (alloc((void **)&e->w, e->mem.weights, err) || alloc(&e->blas_ws, BLAS_WORKSPACE, err) ||
        alloc(&e->attn_ws, ATTN_WORKSPACE, err) ||
        (pooled && (alloc((void **)&e->k_pool, kv_bytes, err) || alloc((void **)&e->v_pool, kv_bytes, err))) ||
        (fc && (alloc((void **)&e->f_pool, f_bytes, err) || alloc((void **)&e->fc_out, T * h * 2, err) ||
                alloc((void **)&e->fc_hp, T * h * 2, err) || alloc((void **)&e->fc_vnew, T * kvd * 2, err) ||
                alloc((void **)&e->fc_sim, T * 4, err))) ||
        (ic && alloc((void **)&e->i_pool, i_bytes, err)) ||
        (pooled && e->o.trace_selection && alloc((void **)&e->pick_trace, PICK_TRACE, err)) ||
        (pooled && alloc((void **)&e->sel_means, SELECTION_MEANS, err)) ||
        (e->m.num_experts > 0 && alloc_moe(e, err)) ||
        (pooled && (alloc((void **)&e->focus_imp, 2 * e->m.num_heads * T * 4, err) ||
                    alloc((void **)&e->focus_prog, EVICT_REQS * 4, err))) ||
        alloc((void **)&e->d_meta_buf, e->meta_cap * 4, err) || alloc((void **)&e->d_tok, T * 4, err) ||
        alloc((void **)&e->d_max, T * 4, err) || alloc((void **)&e->d_conf, T * 4, err) ||
        (e->o.top2_gap && alloc((void **)&e->d_gap, T * 4, err)) ||
        alloc((void **)&e->d_um, 6 * T * 4, err) || (e->o.credit_rows > 0 && alloc_credit(e, err)) ||
        alloc((void **)&e->sm_tmp, SMOOTH_SUB * h * 2, err) || alloc((void **)&e->sm_map, 3 * T * 4, err) ||
        alloc((void **)&e->sm_stats, 2 * T * 4, err) ||
        (e->o.smooth_rows > 0 && (alloc((void **)&e->sm_soft[0], (int64_t)e->o.smooth_rows * h * 2, err) ||
                                  alloc((void **)&e->sm_soft[1], (int64_t)e->o.smooth_rows * h * 2, err))) ||
        (e->o.trace_selection && alloc((void **)&e->sel_trace, SELECTION_TRACE, err)) ||
        (e->tp && alloc((void **)&e->tp_gather, 12LL * (e->o.tp_size + 1) * T, err)) ||
        (e->o.drift_positions > 0 && alloc_drift(e, err)) || (e->o.rollout_positions > 0 && alloc_rollout(e, err)) ||
        (e->o.sparsed_positions > 0 && alloc_sparsed(e, err)))
        return -1;
    if (cudaMallocHost((void **)&e->h_meta_buf, (size_t)e->meta_cap * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_tok, (size_t)T * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_max, (size_t)T * 4) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_conf, (size_t)T * 4) != cudaSuccess ||
        (e->o.top2_gap && cudaMallocHost((void **)&e->h_gap, (size_t)T * 4) != cudaSuccess) ||
        cudaMallocHost((void **)&e->h_um, (size_t)T * 24) != cudaSuccess ||
        cudaMallocHost((void **)&e->h_sm, (size_t)T * 12) != cudaSuccess)
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

/* SparseD's patterns' buffers (sparsed_bytes). */
static int alloc_sparsed(struct eng *e, struct ts_err *err)
{
    const int64_t R = e->o.sparsed_requests, H = e->m.num_heads;
    e->sp_qb = (e->o.sparsed_positions + e->o.sparsed_block - 1) / e->o.sparsed_block;
    const int64_t entries = (int64_t)e->m.num_layers * R * H * e->sp_qb;
    if (alloc((void **)&e->sp_cnt, entries * 4, err) || alloc((void **)&e->sp_list, entries * e->sp_qb * 2, err) ||
        alloc((void **)&e->sp_part, k_sparsed_part_bytes(e->o.sparsed_positions, (int)H), err) ||
        alloc((void **)&e->sp_base, (int64_t)e->o.max_tokens * 4, err))
        return -1;
    CU(cudaMallocHost((void **)&e->h_sp_base, (size_t)e->o.max_tokens * 4));
    e->sp = xcalloc((size_t)R, sizeof *e->sp);
    e->sp_N = xcalloc((size_t)R, sizeof *e->sp_N);
    return 0;
}

/* d2Cache's attention rollout's buffers (rollout_bytes). */
static int alloc_rollout(struct eng *e, struct ts_err *err)
{
    const int64_t R = e->o.rollout_requests, N = e->o.rollout_positions;
    if (alloc((void **)&e->ro_mix, R * e->m.num_layers * N * N * 4, err) ||
        alloc((void **)&e->ro_imp, R * N * 4, err) || alloc((void **)&e->ro_tmp, R * N * 4, err))
        return -1;
    e->ro = xcalloc((size_t)R, sizeof *e->ro);
    return 0;
}

/* Elastic-Cache's drift test's buffers (drift_bytes). */
static int alloc_drift(struct eng *e, struct ts_err *err)
{
    const int64_t R = e->o.drift_requests, layers = e->m.num_layers;
    for (int b = 0; b < 2; b++)
        if (alloc((void **)&e->drift_q[b], 2 * drift_q_elems(e), err) ||
            alloc((void **)&e->drift_k[b], 2 * drift_k_elems(e), err))
            return -1;
    if (alloc((void **)&e->drift_probs, drift_probs_bytes(e), err) ||
        alloc((void **)&e->drift_sel, R * K_DRIFT_MAX_ROWS * 4, err) ||
        alloc((void **)&e->drift_elig, R * e->o.drift_positions, err) ||
        alloc((void **)&e->drift_query, R * e->o.drift_positions, err) ||
        alloc((void **)&e->drift_rowmap, R * e->o.drift_positions * 4, err) ||
        alloc((void **)&e->d_drift_track, R * layers * 4, err) || alloc((void **)&e->d_drift_sim, R * layers * 4, err))
        return -1;
    e->drift = xcalloc((size_t)R, sizeof *e->drift);
    return 0;
}

/* Credit decoding's rows, twice (current and next), empty; the next step's row map. */
static int alloc_credit(struct eng *e, struct ts_err *err)
{
    const int64_t S = e->o.credit_rows;
    for (int b = 0; b < 2; b++) {
        if (alloc((void **)&e->cr_tok[b], S * K_CREDIT_MAX * 4, err) ||
            alloc((void **)&e->cr_val[b], S * K_CREDIT_MAX * 4, err) || alloc((void **)&e->cr_n[b], S * 4, err))
            return -1;
        CU(cudaMemsetAsync(e->cr_n[b], 0, (size_t)S * 4, e->stream));
    }
    return alloc((void **)&e->cr_map, 2LL * e->o.max_tokens * 4, err);
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
    if (o->drift_positions < 0 || o->drift_requests < 0 || (o->drift_positions > 0 && o->drift_requests < 1))
        return ts_fail(err, "engine: drift_positions %d, drift_requests %d (both 0, or both positive)",
                       o->drift_positions, o->drift_requests);
    if (o->drift_positions > 0 && (o->tp_size > 1 || o->stateless))
        return ts_fail(err, "engine: Elastic-Cache's drift test runs on one GPU, over the KV pool");
    if (o->rollout_positions < 0 || o->rollout_positions > K_ROLLOUT_MAX_N || o->rollout_requests < 0 ||
        (o->rollout_positions > 0 && o->rollout_requests < 1))
        return ts_fail(err, "engine: rollout_positions %d (at most %d), rollout_requests %d (both 0, or both "
                            "positive)", o->rollout_positions, K_ROLLOUT_MAX_N, o->rollout_requests);
    if (o->rollout_positions > 0 && (o->tp_size > 1 || o->stateless))
        return ts_fail(err, "engine: d2Cache's attention rollout runs on one GPU, over the KV pool");
    if (o->sparsed_positions < 0 || o->sparsed_requests < 0 ||
        (o->sparsed_positions > 0 && (o->sparsed_requests < 1 || o->sparsed_block < 64 || o->sparsed_block % 64 ||
                                      !(o->sparsed_select >= 0 && o->sparsed_select <= 1))))
        return ts_fail(err, "engine: sparsed_positions %d, sparsed_requests %d (both 0, or both positive), "
                            "sparsed_block %d (a multiple of 64), sparsed_select %g (0 to 1)", o->sparsed_positions,
                       o->sparsed_requests, o->sparsed_block, o->sparsed_select);
    if (o->sparsed_positions > 0 && (o->tp_size > 1 || o->stateless))
        return ts_fail(err, "engine: SparseD's patterns run on one GPU, over the KV pool");
    return 0;
}

int eng_create(const struct model_cfg *m, const struct eng_opts *o, struct eng **out,
               struct ts_err *err)
{
    *out = NULL;
    if (opts_refused(m, o, err))
        return -1;
    const struct planner_ops *planner;
    if (planner_resolve(o->planner ? o->planner : "first-fit", &planner, err))
        return -1;
    struct eng *e = xcalloc(1, sizeof *e);
    e->gm = *m;
    e->o = *o;
    e->planner = planner;
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
        if (!o->stateless && plan_activations(e, &big, err))
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
    if (eng_gemm_create(&e->gemm, e->blas_ws, BLAS_WORKSPACE, err) ||
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

void eng_destroy(struct eng *e)
{
    if (!e)
        return;
    drop_graphs(e);
    for (int i = 0; i < MAX_PROF_EVENTS && e->prof_ev[i]; i++)
        cudaEventDestroy(e->prof_ev[i]);
    void *dev[] = {e->w,      e->blas_ws,      e->attn_ws, e->k_pool,  e->v_pool, e->d_meta_buf, e->d_tok,
                   e->d_max,  e->d_conf,       e->d_gap, e->tune_scratch, e->ballast, e->sel_trace, e->f_pool,
                   e->i_pool, e->fc_out,
                   e->fc_hp,  e->fc_vnew,      e->pick_trace, e->fc_sim, e->focus_imp, e->focus_prog,
                   e->moe_buf, e->moe_trace, e->tp_gather, e->d_um, e->cr_tok[0], e->cr_tok[1], e->cr_n[0],
                   e->cr_n[1], e->cr_val[0], e->cr_val[1], e->cr_map, e->sm_soft[0], e->sm_soft[1], e->sm_tmp,
                   e->sm_map, e->sm_stats, e->sel_means, e->drift_q[0], e->drift_q[1], e->drift_k[0],
                   e->drift_k[1], e->drift_probs, e->drift_sel, e->drift_rowmap, e->drift_elig, e->drift_query,
                   e->d_drift_track, e->d_drift_sim, e->ro_mix, e->ro_imp, e->ro_tmp, e->d_move, e->sp_cnt,
                   e->sp_list, e->sp_part, e->sp_base};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    void *host[] = {e->h_meta_buf, e->h_tok, e->h_max, e->h_conf, e->h_gap, e->h_um, e->h_sm, e->h_sp_base};
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
    free(e->drift);
    free(e->ro);
    free(e->sp), free(e->sp_N);
    eng_layout_free(&e->lay);
    eng_layout_free(&e->glay);
    eng_tp_destroy(e->tp);
    free(e);
}

/* --- one step ---------------------------------------------------------------------------- */

/* Y[rows, out] (+)= X[rows, in] W^T, W [out, in] row-major, through cuBLASLt (eng_gemm.c). A shape
 * tuned for the first time gets a scratch output outside the plan, freed when the step ends. */
/* The tuning scratch a GEMM of rows x out outputs needs, held while tuning. */
static int tune_scratch_for(struct eng *e, int rows, int in, int out, float beta, bool kn, struct ts_err *err)
{
    size_t need = 2 * (size_t)rows * (size_t)out;
    if (e->tuning && need > e->tune_scratch_bytes && !eng_gemm_is_tuned(e->gemm, rows, out, in, beta, kn)) {
        CU(cudaStreamSynchronize(e->stream));
        if (e->tune_scratch)
            CU(cudaFree(e->tune_scratch));
        e->tune_scratch = NULL;
        e->tune_scratch_bytes = 0;
        if (cudaMalloc(&e->tune_scratch, need) == cudaSuccess)
            e->tune_scratch_bytes = need;
        else /* no room: the heuristic's first algorithm */
            cudaGetLastError();
    }
    return 0;
}

static int gemm(struct eng *e, const bf16_t *Wt, const bf16_t *X, bf16_t *Y, int rows, int in,
                int out, float beta, struct ts_err *err)
{
    if (tune_scratch_for(e, rows, in, out, beta, false, err))
        return -1;
    return eng_gemm_run(e->gemm, Wt, X, Y, rows, out, in, beta, e->stream, e->tuning, e->tune_scratch,
                        e->tune_scratch_bytes, err);
}

/* Y [rows, out] = X [rows, in] W for W [in, out] (the embedding matrix). */
static int gemm_kn(struct eng *e, const bf16_t *W, const bf16_t *X, bf16_t *Y, int rows, int in, int out,
                   struct ts_err *err)
{
    if (tune_scratch_for(e, rows, in, out, 0.f, true, err))
        return -1;
    return eng_gemm_run_kn(e->gemm, W, X, Y, rows, out, in, e->stream, e->tuning, e->tune_scratch,
                           e->tune_scratch_bytes, err);
}

static int drop_tune_scratch(struct eng *e, struct ts_err *err)
{
    if (e->tune_scratch) {
        CU(cudaStreamSynchronize(e->stream));
        CU(cudaFree(e->tune_scratch));
    }
    e->tune_scratch = NULL;
    e->tune_scratch_bytes = 0;
    return 0;
}

struct meta_part {
    const int32_t *src;
    int64_t n;
    int32_t **dst;
};

/* Packs parts into the pinned buffer from *off on, carving the device pointers in the same order. */
static void pack_parts(struct eng *e, const struct meta_part *parts, size_t n, int64_t *off)
{
    for (size_t i = 0; i < n; i++) {
        TS_ASSERT(*off + parts[i].n <= e->meta_cap);
        if (parts[i].n)
            memcpy(e->h_meta_buf + *off, parts[i].src, sizeof(int32_t) * (size_t)parts[i].n);
        *parts[i].dst = e->d_meta_buf + *off;
        *off += (parts[i].n + 3) / 4 * 4; /* 16-byte aligned parts */
    }
}

/* A plan's per-token and attention arrays into dm. */
static void pack_rows(struct eng *e, const struct eng_plan *p, struct dev_meta *dm, int64_t *off)
{
    const int64_t X = e->plan.X;
    const struct meta_part parts[] = {
        {p->tok_pos, p->T, &dm->tok_pos},     {p->tok_slot, p->T, &dm->tok_slot},
        {p->q_start, p->S, &dm->q_start},     {p->q_len, p->S, &dm->q_len},
        {p->key_len, p->S, &dm->key_len},     {p->kv_cached, p->S, &dm->kv_cached},
        {p->page_off, p->S, &dm->page_off},   {p->pages, p->num_page_refs, &dm->pages},
        {p->tiles, 2LL * p->num_tiles, &dm->tiles}, {p->c_row, X || p->evict ? p->T : 0, &dm->c_row},
        {p->x_comp, X, &dm->x_comp},
    };
    pack_parts(e, parts, TS_ARRAY_LEN(parts), off);
}

/* Packs the plan (and a layered step's front layers' plan and hidden rows) into the pinned buffer and
 * copies it to the device. */
static int upload_plan(struct eng *e, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int64_t rows = TS_MAX(TS_MAX((int64_t)p->T, (int64_t)p->X), p->front ? (int64_t)p->front->T : 0);
    if (rows > e->o.max_tokens)
        return ts_fail(err, "step refused: %lld rows exceed the workspace (%d tokens; raise --max-tokens)",
                       (long long)rows, e->o.max_tokens);
    if (p->S > e->max_segs || p->num_tiles > e->max_tiles || p->num_page_refs > e->max_page_refs ||
        (p->front && (p->front->num_tiles > e->max_tiles || p->front->num_page_refs > e->max_page_refs)))
        return ts_fail(err, "step refused: %d segments / %d tiles / %d page references exceed the "
                            "engine's metadata buffers", p->S, p->num_tiles, p->num_page_refs);
    int64_t off = 0;
    pack_rows(e, p, &e->dm, &off);
    const struct meta_part parts[] = {
        {p->tok_ids, p->T, &e->dm.tok_ids},   {p->logit_idx, p->R, &e->dm.logit_idx},
        {p->sel, 6LL * p->num_sel, &e->dm.sel}, {p->x_ids, p->X, &e->dm.x_ids},
        {p->x_slot, p->X, &e->dm.x_slot},
        {p->probe, (p->evict ? ENG_EVICT_FIELDS : 5LL) * p->num_probe, &e->dm.probe},
        {p->probe_idx, p->evict ? 0 : p->probe_rows, &e->dm.probe_idx}, /* (an evicting step has none) */
    };
    pack_parts(e, parts, TS_ARRAY_LEN(parts), &off);
    if (p->front)
        pack_rows(e, p->front, &e->dm_front, &off);
    if (p->evict || p->widen) { /* an evicting or widening step embeds its front rows */
        const struct meta_part ids = {p->front->tok_ids, p->front->T, &e->dm_front.tok_ids};
        pack_parts(e, &ids, 1, &off);
    }
    CU(cudaMemcpyAsync(e->d_meta_buf, e->h_meta_buf, sizeof(int32_t) * (size_t)off,
                       cudaMemcpyHostToDevice, e->stream));
    return 0;
}

/* The kept keys of one layer's selections: [num_sel][sets][max_keep] int32. */
static int64_t selection_ints(const struct eng *e)
{
    const struct eng_plan *p = &e->plan;
    return (int64_t)p->num_sel * (e->select_heads ? e->m.num_kv_heads : 1) * p->max_keep;
}

/* The step's selections over `layers` layers from layer L's pool (kp, vp) on: the plan's segments,
 * the attention's scratch (free again after a layer's attention). */
static struct k_select_args select_args(const struct eng *e, const bf16_t *qkv, bf16_t *kp, bf16_t *vp, int layers)
{
    const struct eng_plan *p = &e->plan;
    const struct model_cfg *m = &e->m;
    return (struct k_select_args){
        .q = qkv, .q_stride = (m->num_heads + 2 * m->num_kv_heads) * m->head_dim, .k_pool = kp, .v_pool = vp,
        .pages = e->dm.pages, .sel = e->dm.sel, .page_shift = __builtin_ctz((unsigned)e->o.page_tokens),
        .num_sel = p->num_sel, .max_cand = p->max_cand, .max_keep = p->max_keep, .H = m->num_heads,
        .Hkv = m->num_kv_heads, .d = m->head_dim, .kernel = e->select_kernel, .per_head = e->select_heads,
        .ws = e->attn_ws, .ws_bytes = ATTN_WORKSPACE, .layers = layers, .layer_stride = e->slots * m->num_kv_heads * m->head_dim};
}

/* Layers L.. L + layers - 1's kept keys copied to the trace where eng_opts.trace_selection keeps one. */
static int trace_selection(struct eng *e, const struct k_select_args *sa, int L, int layers, struct ts_err *err)
{
    if (!e->sel_trace)
        return 0;
    const int64_t n = selection_ints(e);
    CU(cudaMemcpyAsync(e->sel_trace + n * L, k_kv_select_idx(sa), sizeof(int32_t) * (size_t)(n * layers),
                       cudaMemcpyDeviceToDevice, e->stream));
    return 0;
}

/* Layer L's part of the step's sparse selections, after its attention: the whole selection, or
 * where it runs after the last layer (sel_defer) the mean queries it will score with. */
static int select_layer(struct eng *e, int L, bf16_t *qkv, bf16_t *kp, bf16_t *vp, struct ts_err *err)
{
    const struct k_select_args sa = select_args(e, qkv, kp, vp, 1);
    if (e->sel_defer) {
        KL(k_kv_select_means(&sa, e->sel_means + (size_t)L * e->plan.num_sel * e->m.num_heads * e->m.head_dim,
                             e->stream));
        return 0;
    }
    KL(k_kv_select(&sa, e->stream));
    return trace_selection(e, &sa, L, 1, err);
}

/* Whether the step selects after its last layer: a selection's dependent round trips then run
 * once a step rather than once a layer. Each layer's means must fit sel_means, and not where
 * eng_opts.select_at asks for the selection after each layer's attention. */
static bool select_at_end(const struct eng *e, int layers)
{
    const struct eng_plan *p = &e->plan;
    return e->o.select_at == 0 && e->sel_means && p->num_sel > 0 &&
           (int64_t)layers * p->num_sel * e->m.num_heads * e->m.head_dim * 4 <= SELECTION_MEANS;
}

/* The step's selections in `layers` layers from their means (select_layer), as many layers a launch
 * as the attention's scratch holds the scores of. */
static int select_deferred(struct eng *e, int layers, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int Hkv = e->m.num_kv_heads, qd = e->m.num_heads * e->m.head_dim;
    int group = layers;
    while (group > 1 && k_kv_select_ws_bytes(p->num_sel * group, p->max_cand, p->max_keep, Hkv) > ATTN_WORKSPACE)
        group--;
    const int64_t stride = e->slots * Hkv * e->m.head_dim;
    for (int L = 0; L < layers; L += group) {
        struct k_select_args sa = select_args(e, NULL, e->k_pool + L * stride, e->v_pool + L * stride,
                                              TS_MIN(group, layers - L));
        sa.means = e->sel_means + (size_t)L * p->num_sel * qd;
        KL(k_kv_select(&sa, e->stream));
        if (trace_selection(e, &sa, L, sa.layers, err))
            return -1;
    }
    return 0;
}

/* Tensor parallelism: the row-parallel partial sums in x's T rows summed over the ranks, in place
 * (rank 0's hold the residual: resid_beta). */
static int allreduce_rows(struct eng *e, bf16_t *x, int T, struct ts_err *err)
{
    if (!e->tp)
        return 0;
    if (runs(e, OP_ALLREDUCE) && eng_tp_allreduce(e->tp, x, (int64_t)T * e->m.hidden, e->stream, err))
        return -1;
    mark(e, OP_ALLREDUCE);
    return 0;
}

/* The beta of a GEMM that adds a row-parallel output to the residual: 1, but 0 on a tensor-parallel
 * rank other than 0, whose partial sum the all-reduce adds to rank 0's residual. */
static float resid_beta(const struct eng *e) { return e->o.tp_rank == 0 ? 1.f : 0.f; }

/* Layer L's FFN over T normalised rows hn2, chunk by chunk, into x (beta 1: added, 0: written). */
static int ffn(struct eng *e, int L, bf16_t *x, const bf16_t *hn2, int T, float beta, struct ts_err *err)
{
    const struct eng_act *a = &e->act;
    const int Tc = a->ffn_rows, h = e->m.hidden, F = eng_ffn_width(&e->m, L);
    const bool fused = a->shape.fused_ffn && !model_is_moe_layer(&e->m, L); /* (shared experts: split) */
    cudaStream_t st = e->stream;
    for (int c = 0, c0 = 0; c0 < T; c++, c0 += Tc) {
        int rows = TS_MIN(Tc, T - c0);
        bf16_t *act = (bf16_t *)eng_arena_at(&e->arena, a->act[L * a->ffn_chunks + c]);
        if (fused) { /* as planned: no gate|up buffer */
            if (runs(e, OP_GATE_UP))
                KL(k_gemm_swiglu(act, hn2 + (size_t)c0 * h, W(e, W_GU, L), rows, h, F, st));
            mark(e, OP_GATE_UP);
        } else {
            bf16_t *gu = (bf16_t *)eng_arena_at(&e->arena, a->gu[L * a->ffn_chunks + c]);
            if (runs(e, OP_GATE_UP) && gemm(e, W(e, W_GU, L), hn2 + (size_t)c0 * h, gu, rows, h, 2 * F, 0.f, err))
                return -1;
            mark(e, OP_GATE_UP);
            if (runs(e, OP_ACT))
                KL(k_swiglu(act, gu, rows, F, st));
            mark(e, OP_ACT);
        }
        if (runs(e, OP_DOWN) && gemm(e, W(e, W_DOWN, L), act, x + (size_t)c0 * h, rows, F, h, beta, err))
            return -1;
        mark(e, OP_DOWN);
    }
    return 0;
}

/* Layer L's mixture of experts over T normalised rows hn2, added into x: the router GEMM, each
 * row's k experts and the copies in expert order (router); per chunk of copies, their rows gathered,
 * the experts' gate|up, SwiGLU and down, and their weighted sum into each token (experts; the last
 * chunk adds it to x); then the shared experts as a dense FFN. */
static int moe_ffn(struct eng *e, int L, bf16_t *x, const bf16_t *hn2, int T, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_act *a = &e->act;
    const int h = m->hidden, E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn, n = T * k;
    const int tile = e->moe_wgmma ? K_MOE_TILE_WGMMA : k_moe_tile(n, E);
    cudaStream_t st = e->stream;
    bf16_t *logits = (bf16_t *)eng_arena_at(&e->arena, a->router[L]);
    if (runs(e, OP_ROUTER)) {
        if (gemm(e, W(e, W_ROUTER, L), hn2, logits, T, h, E, 0.f, err))
            return -1;
        const struct k_moe_router rt = eng_moe_router(m, W(e, W_ROUTER_BIAS, L));
        KL(k_moe_route(logits, T, E, k, k_moe_balance(eng_routes_balanced(e), L), &rt, e->moe_ids, e->moe_wts, st));
        if (e->moe_trace)
            CU(cudaMemcpyAsync(e->moe_trace + (size_t)L * e->o.max_tokens * k, e->moe_ids, sizeof(int32_t) * (size_t)n,
                               cudaMemcpyDeviceToDevice, st));
        const struct k_moe_dispatch_args da = {e->moe_ids, e->moe_counts, e->moe_offsets, e->moe_tok, e->moe_pos,
                                               e->moe_tiles, e->moe_ntiles, T, k, E, tile};
        KL(k_moe_dispatch(&da, st));
    }
    mark(e, OP_ROUTER);
    /* the grouped GEMMs' grid: the tiles this step's copies can take, not the workspace's most (a
     * block past the tile count still launches, waits for its predecessor and exits) */
    const int grid_tiles = TS_MIN(e->moe_max_tiles, k_moe_tiles_bound(n, E, tile));
    if (runs(e, OP_EXPERTS))
        for (int c = 0; c < a->moe_chunks; c++) {
            const int i = L * a->moe_chunks + c, p0 = c * a->moe_rows, p1 = TS_MIN(n, p0 + a->moe_rows);
            bf16_t *g = (bf16_t *)eng_arena_at(&e->arena, a->mgather[i]);
            bf16_t *gu = (bf16_t *)eng_arena_at(&e->arena, a->mgu[i]);
            bf16_t *act = (bf16_t *)eng_arena_at(&e->arena, a->mact[i]);
            KL(k_gather_rows(g, hn2, e->moe_tok + p0, p1 - p0, h, st));
            struct k_moe_gemm_args ga = {g, W(e, W_EXP_GU, L), gu, e->moe_offsets, e->moe_tiles, e->moe_ntiles,
                                         p0, p1, 2 * Fe, h, grid_tiles, tile, E};
            KL(k_moe_gemm(&ga, st));
            KL(k_swiglu(act, gu, p1 - p0, Fe, st));
            ga = (struct k_moe_gemm_args){act, W(e, W_EXP_DOWN, L), g, e->moe_offsets, e->moe_tiles, e->moe_ntiles,
                                          p0, p1, h, Fe, grid_tiles, tile, E};
            KL(k_moe_gemm(&ga, st));
            const struct k_moe_combine_args ca = {g, e->moe_pos, e->moe_wts, e->moe_acc, x, T, k, h, p0, p1,
                                                  c == 0, c == a->moe_chunks - 1, resid_beta(e) == 0.f};
            KL(k_moe_combine(&ca, st));
        }
    mark(e, OP_EXPERTS);
    return m->num_shared_experts > 0 ? ffn(e, L, x, hn2, T, 1.f, err) : 0;
}

/* The attention's arguments for plan p (its arrays on the device in dm); q, o and the pools are the
 * layer's. */
static struct k_attn_args attn_args(const struct eng *e, const struct eng_plan *p, const struct dev_meta *dm)
{
    const struct model_cfg *m = &e->m;
    const int H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim, width = (H + 2 * Hkv) * d;
    const bool stateless = e->o.stateless;
    const int page_tokens = stateless ? 1 : e->o.page_tokens;
    return (struct k_attn_args){
        .q_stride = width, .q_start = dm->q_start, .q_len = dm->q_len, .key_len = dm->key_len,
        .kv_cached = dm->kv_cached, .page_off = dm->page_off, .pages = dm->pages, .tiles = dm->tiles,
        .num_tiles = p->num_tiles, .H = H, .Hkv = Hkv, .d = d, .page_tokens = page_tokens,
        .page_shift = __builtin_ctz((unsigned)page_tokens), .kv_stride = stateless ? width : 0,
        .block_size = e->attn_block, .scale = 1.0f / sqrtf((float)d), .ws = e->attn_ws,
        .ws_bytes = ATTN_WORKSPACE, .T = p->T, .max_key_len = p->max_key_len, .impl = e->o.attention,
        .min_q_len = p->min_q, .max_q_len = p->max_q, .long_tiles = p->long_tiles, .long_rows = p->long_rows,
        .wg_tiles = p->wg_tiles};
}

/* Layer L's QKV bias, RoPE and K/V store for the T rows of qkv (at tok_pos, into the pool slots
 * tok_slot of kp and vp), then the attention of aa's plan over the pool from qkv into att. */
static int rope_attend(struct eng *e, int L, struct k_attn_args *aa, bf16_t *qkv, bf16_t *att, bf16_t *kp,
                       bf16_t *vp, const int32_t *tok_pos, const int32_t *tok_slot, int T, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct k_qk_norm qn = {W(e, W_Q_NORM, L), W(e, W_K_NORM, L), model_rotary_dim(m), model_rms_eps(m)};
    if (runs(e, OP_ROPE))
        KL(k_qkv_rope_store(qkv, W(e, W_QKV_BIAS, L), tok_pos, tok_slot, kp, vp, aa->kv_stride, T, m->num_heads,
                            m->num_kv_heads, m->head_dim, (float)m->rope_theta, &qn, e->stream));
    mark(e, OP_ROPE);
    aa->q = qkv;
    aa->o = att;
    aa->k_pool = kp;
    aa->v_pool = vp;
    if (runs(e, OP_ATTN))
        KL(k_attention(aa, e->stream));
    mark(e, OP_ATTN);
    return 0;
}

#define BUF(off) ((bf16_t *)eng_arena_at(&e->arena, (off)))

/* Layer L's value check (a layered step's later layers with probing segments): the probe rows'
 * new V, and the rows each segment updates picked by it into the plan's computed rows. */
static int pick_rows(struct eng *e, int L, bf16_t *x, bf16_t *vp, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const int h = m->hidden, qd = m->num_heads * m->head_dim, kvd = m->num_kv_heads * m->head_dim;
    if (runs(e, OP_FEAT_CACHE)) {
        KL(k_rmsnorm_rows(e->fc_hp, x, W(e, W_ATTN_NORM, L), e->dm.probe_idx, p->probe_rows, h, model_rms_eps(m),
                          e->stream));
        if (gemm(e, W(e, W_QKV, L) + (size_t)(qd + kvd) * h, e->fc_hp, e->fc_vnew, p->probe_rows, h, kvd, 0.f, err))
            return -1;
        const bf16_t *bias = W(e, W_QKV_BIAS, L);
        const struct k_fc_pick_args pa = {
            .vnew = e->fc_vnew, .v_bias = bias ? bias + qd + kvd : NULL, .v_pool = vp, .sim = e->fc_sim,
            .x_slot = e->dm.x_slot, .probe = e->dm.probe, .probe_idx = e->dm.probe_idx, .c_row = e->dm.c_row,
            .tok_pos = e->dm.tok_pos, .tok_slot = e->dm.tok_slot, .x_comp = e->dm.x_comp,
            .trace = e->pick_trace ? e->pick_trace + (size_t)L * p->num_probe * p->max_probe : NULL,
            .num_probe = p->num_probe, .probe_rows = p->probe_rows, .max_probe = p->max_probe, .kv_dim = kvd};
        KL(k_fc_pick(&pa, e->stream));
    }
    mark(e, OP_FEAT_CACHE);
    return 0;
}

/* Layer L of a layered step (eng_plan.h) over its hidden rows x: lp (arrays in dm) is the plan of
 * the layer's kind, front or later. Its computed rows run as forward()'s rows do, gathered from x
 * by the normalisations; each half's outputs go to the feature cache and into x; at the end every
 * other row adds its two cached ones (nothing reads a carried row within the layer). */
static int layered_layer(struct eng *e, int L, const struct eng_plan *lp, const struct dev_meta *dm, bf16_t *x,
                         struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_act *a = &e->act;
    const int T = lp->T, X = e->plan.X, h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int width = (H + 2 * Hkv) * d, qd = H * d, kvd = Hkv * d;
    const int64_t layer_slots = e->slots * kvd;
    cudaStream_t st = e->stream;
    bf16_t *hn = BUF(a->norm1[L]), *qkv = BUF(a->qkv[L]), *att = BUF(a->att[L]), *hn2 = BUF(a->norm2[L]);
    bf16_t *kp = e->k_pool + L * layer_slots, *vp = e->v_pool + L * layer_slots;
    bf16_t *fa = e->f_pool + (size_t)(2 * L) * e->slots * h, *ff = fa + (size_t)e->slots * h;
    if (lp == &e->plan && e->plan.num_probe > 0 && pick_rows(e, L, x, vp, err))
        return -1;
    if (T > 0) {
        if (runs(e, OP_NORM))
            KL(k_rmsnorm_rows(hn, x, W(e, W_ATTN_NORM, L), dm->c_row, T, h, model_rms_eps(&e->m), st));
        mark(e, OP_NORM);
        if (runs(e, OP_QKV) && gemm(e, W(e, W_QKV, L), hn, qkv, T, h, width, 0.f, err))
            return -1;
        mark(e, OP_QKV);
        struct k_attn_args aa = attn_args(e, lp, dm);
        if (rope_attend(e, L, &aa, qkv, att, kp, vp, dm->tok_pos, dm->tok_slot, T, err))
            return -1;
        if (runs(e, OP_OPROJ) && gemm(e, W(e, W_O, L), att, e->fc_out, T, qd, h, 0.f, err))
            return -1;
        mark(e, OP_OPROJ);
    }
    if (runs(e, OP_FEAT_CACHE))
        KL(k_fc_store(x, e->fc_out, dm->c_row, e->dm.x_slot, fa, T, h, st));
    mark(e, OP_FEAT_CACHE);
    if (T > 0) {
        if (runs(e, OP_NORM))
            KL(k_rmsnorm_rows(hn2, x, W(e, W_FFN_NORM, L), dm->c_row, T, h, model_rms_eps(&e->m), st));
        mark(e, OP_NORM);
        if (ffn(e, L, e->fc_out, hn2, T, 0.f, err))
            return -1;
    }
    if (runs(e, OP_FEAT_CACHE)) { /* its FFN outputs; then the carried rows add both their cached ones */
        KL(k_fc_store(x, e->fc_out, dm->c_row, e->dm.x_slot, ff, T, h, st));
        KL(k_fc_carry(x, dm->x_comp, e->dm.x_slot, fa, ff, X, h, st));
    }
    mark(e, OP_FEAT_CACHE);
    return 0;
}

/* d2Cache's attention rollout in layer L of a step (eng_rollout_next), after its attention: each entry's
 * mix (k_rollout_layer); after the last layer (importance) each entry's rollout's column sums. */
static struct k_rollout_args rollout_args(const struct eng *e, int32_t i, int L, int layers, const bf16_t *qkv,
                                          const bf16_t *kp)
{
    const struct model_cfg *m = &e->m;
    const int64_t N = e->o.rollout_positions;
    return (struct k_rollout_args){
        .q = qkv, .k_pool = kp, .slot = e->dm.tok_slot, .mix = e->ro_mix + (int64_t)i * m->num_layers * N * N,
        .importance = e->ro_imp + i * N, .scratch = e->ro_tmp + i * N, .row0 = e->plan.q_start[e->ro[i].seg],
        .N = e->ro[i].N, .q_stride = (m->num_heads + 2 * m->num_kv_heads) * m->head_dim,
        .k_stride = m->num_kv_heads * m->head_dim, .H = m->num_heads, .Hkv = m->num_kv_heads, .d = m->head_dim,
        .layer = L, .layers = layers, .scale = 1.0f / sqrtf((float)m->head_dim)};
}

static int rollout_layer(struct eng *e, int L, const bf16_t *qkv, const bf16_t *kp, struct ts_err *err)
{
    for (int32_t i = 0; i < e->ro_n; i++) {
        const struct eng_rollout_req *r = &e->ro[i];
        if (r->seg >= e->plan.S || e->plan.q_len[r->seg] != r->N || e->plan.kv_cached[r->seg] != 0)
            return ts_fail(err, "d2Cache's attention rollout: entry %d names segment %d, which does not run its "
                                "request's %d positions alone", i, r->seg, r->N);
        const struct k_rollout_args a = rollout_args(e, i, L, e->m.num_layers, qkv, kp);
        KL(k_rollout_layer(&a, e->stream));
    }
    return 0;
}

static int rollout_importance(struct eng *e, int layers, struct ts_err *err)
{
    for (int32_t i = 0; i < e->ro_n; i++) {
        const struct k_rollout_args a = rollout_args(e, i, layers - 1, layers, NULL, NULL);
        KL(k_rollout_importance(&a, e->stream));
    }
    return 0;
}

/* Elastic-Cache's drift test in layer L of a step (eng_drift_next), after its attention: each entry's
 * tracked token and similarity at this layer, and its queries and keys kept for the next step. */
static int drift_layer(struct eng *e, int L, const bf16_t *qkv, const bf16_t *kp, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const int H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int64_t Np = e->o.drift_positions, qd = (int64_t)H * d, kvd = (int64_t)Hkv * d;
    for (int32_t i = 0; i < e->drift_n; i++) {
        const struct eng_drift_req *r = &e->drift[i];
        if (r->seg >= e->plan.S || e->plan.q_len[r->seg] != r->N || e->plan.kv_cached[r->seg] != 0)
            return ts_fail(err, "Elastic-Cache's drift test: entry %d names segment %d, which does not run its "
                                "request's %d positions alone", i, r->seg, r->N);
        const int64_t at = ((int64_t)L * e->o.drift_requests + r->req) * Np; /* the request's first position */
        const struct k_drift_args a = {
            .q = qkv, .k_pool = kp, .slot = e->dm.tok_slot, .prev_q_read = e->drift_q[e->drift_cur] + at * qd,
            .prev_k_read = e->drift_k[e->drift_cur] + at * kvd,
            .prev_q_write = e->drift_q[e->drift_cur ^ 1] + at * qd,
            .prev_k_write = e->drift_k[e->drift_cur ^ 1] + at * kvd,
            .sel = e->drift_sel + (int64_t)i * K_DRIFT_MAX_ROWS,
            .rowmap = e->drift_rowmap + (int64_t)i * Np, .eligible = e->drift_elig + (int64_t)i * Np,
            .queried = e->drift_query + (int64_t)i * Np, .sims = e->d_drift_sim + (int64_t)i * m->num_layers,
            .layer = L, .gamma = r->gamma, .probs = e->drift_probs,
            .out_track = e->d_drift_track + (int64_t)i * m->num_layers + L,
            .out_sim = e->d_drift_sim + (int64_t)i * m->num_layers + L, .row0 = e->plan.q_start[r->seg], .N = r->N,
            .nwin = r->nwin, .ntrack = r->ntrack, .q_stride = (H + 2 * Hkv) * d, .k_stride = (int)kvd, .H = H,
            .Hkv = Hkv, .d = d, .scale = 1.0f / sqrtf((float)d)};
        KL(k_drift(&a, e->stream));
    }
    return 0;
}

/* The step's SparseD entries (eng_sparsed_next) against its plan: each names a segment of every
 * position of its request over no cached keys, a sparse one as many positions as its pattern's. */
static int sparsed_check(const struct eng *e, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    for (int32_t i = 0; i < e->sp_n; i++) {
        const struct eng_sparsed_req *r = &e->sp[i];
        if (r->seg >= p->S || p->kv_cached[r->seg] != 0 || p->q_len[r->seg] != p->key_len[r->seg] ||
            p->q_len[r->seg] > e->o.sparsed_positions)
            return ts_fail(err, "SparseD: entry %d names segment %d, which does not run its request's positions "
                                "alone (at most %d)", i, r->seg, e->o.sparsed_positions);
        if (!r->build && p->q_len[r->seg] != e->sp_N[r->req])
            return ts_fail(err, "SparseD: entry %d attends by slot %d's pattern, built over %d positions, with %d",
                           i, r->req, e->sp_N[r->req], p->q_len[r->seg]);
    }
    return 0;
}

/* Layer L's SparseD patterns (eng_sparsed_next): the attention's pattern pointers for the layer, or
 * (after its attention) the patterns its building entries build from its queries and keys. */
static void sparsed_layer_args(const struct eng *e, int L, struct k_attn_args *aa)
{
    const int64_t layer = (int64_t)L * e->o.sparsed_requests * e->m.num_heads * e->sp_qb;
    aa->kb_base = e->sp_sparse > 0 ? e->sp_base : NULL;
    aa->kb_cnt = e->sp_cnt + layer, aa->kb_list = e->sp_list + layer * e->sp_qb;
    aa->kb_block = e->o.sparsed_block, aa->kb_qblocks = e->sp_qb, aa->kb_stride = e->sp_qb;
}

static int sparsed_build(struct eng *e, int L, const struct k_attn_args *aa, struct ts_err *err)
{
    const int b = e->o.sparsed_block, H = e->m.num_heads;
    for (int32_t i = 0; i < e->sp_n; i++) {
        const struct eng_sparsed_req *r = &e->sp[i];
        if (!r->build)
            continue;
        const int N = e->plan.q_len[r->seg], nb = (N + b - 1) / b;
        const int64_t at = ((int64_t)L * e->o.sparsed_requests + r->req) * H * e->sp_qb;
        const struct k_sparsed_args a = {
            .at = aa, .seg = r->seg, .N = N, .block = b, .last = TS_MIN((r->prompt + b - 1) / b, nb - 1),
            .qblocks = e->sp_qb, .stride = e->sp_qb, .select = e->o.sparsed_select,
            .scale = 1.0f / sqrtf((float)H), /* SparseD's: its scores divide by sqrt(heads) */
            .part = e->sp_part, .imp = NULL, .cnt = e->sp_cnt + at, .list = e->sp_list + at * e->sp_qb};
        KL(k_sparsed_pattern(&a, e->stream));
    }
    return 0;
}

/* Layer L over T packed rows x of the plan whose attention is aa (its arrays in dm): its selections
 * where the step's plan selects; importance: an evicting step's front layer 0 or 1, which also
 * scores its candidates (k_focus_importance, timed with the attention). */
static int dense_layer(struct eng *e, int L, struct k_attn_args *aa, const struct dev_meta *dm, int T, bf16_t *x,
                       bool importance, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int width = (H + 2 * Hkv) * d, qd = H * d;
    const int64_t layer_slots = e->slots * Hkv * d;
    const bool stateless = e->o.stateless;
    cudaStream_t st = e->stream;
    bf16_t *hn = BUF(a->norm1[L]), *qkv = BUF(a->qkv[L]), *att = BUF(a->att[L]), *hn2 = BUF(a->norm2[L]);
    /* the pool's layer, or (stateless) the K/V columns of the qkv rows themselves */
    bf16_t *kp = stateless ? qkv + qd : e->k_pool + L * layer_slots;
    bf16_t *vp = stateless ? qkv + qd + Hkv * d : e->v_pool + L * layer_slots;
    if (e->i_pool && runs(e, OP_FEAT_CACHE)) /* the rows' inputs, kept by KV slot (the input cache) */
        KL(k_scatter_rows(e->i_pool + (size_t)L * e->slots * h, x, dm->tok_slot, T, h, st));
    if (e->i_pool)
        mark(e, OP_FEAT_CACHE);
    if (runs(e, OP_NORM))
        KL(k_rmsnorm(hn, x, W(e, W_ATTN_NORM, L), T, h, model_rms_eps(&e->m), st));
    mark(e, OP_NORM);
    if (runs(e, OP_QKV) && gemm(e, W(e, W_QKV, L), hn, qkv, T, h, width, 0.f, err))
        return -1;
    mark(e, OP_QKV);
    const bool sparsed = e->sp_n > 0 && dm == &e->dm;
    if (sparsed)
        sparsed_layer_args(e, L, aa);
    if (rope_attend(e, L, aa, qkv, att, kp, vp, dm->tok_pos, dm->tok_slot, T, err))
        return -1;
    if (sparsed) { /* the patterns built here are timed with the attention */
        if (runs(e, OP_ATTN) && sparsed_build(e, L, aa, err))
            return -1;
        mark(e, OP_ATTN);
    }
    if (e->drift_pending && dm == &e->dm && drift_layer(e, L, qkv, kp, err))
        return -1;
    if (e->ro_pending && dm == &e->dm && rollout_layer(e, L, qkv, kp, err))
        return -1;
    if (importance) {
        if (runs(e, OP_ATTN)) {
            const struct k_focus_args fa = {
                .q = qkv, .k_pool = kp, .front_slot = dm->tok_slot, .front_pos = dm->tok_pos, .probe = e->dm.probe,
                .imp = e->focus_imp,
                .q_stride = width, .num_probe = p->num_probe, .probe_rows = p->probe_rows, .max_probe = p->max_probe,
                .H = H, .Hkv = Hkv, .d = d, .layer = L, .scale = 1.0f / sqrtf((float)d)};
            KL(k_focus_importance(&fa, st));
        }
        mark(e, OP_ATTN);
    }
    if (p->num_sel > 0 && dm == &e->dm) { /* marked only where it runs: a step without selections has none */
        if (runs(e, OP_KV_SELECT) && select_layer(e, L, qkv, kp, vp, err))
            return -1;
        mark(e, OP_KV_SELECT);
    }
    if (runs(e, OP_OPROJ) && gemm(e, W(e, W_O, L), att, x, T, qd, h, resid_beta(e), err))
        return -1;
    mark(e, OP_OPROJ);
    if (allreduce_rows(e, x, T, err))
        return -1;
    if (runs(e, OP_NORM))
        KL(k_rmsnorm(hn2, x, W(e, W_FFN_NORM, L), T, h, model_rms_eps(&e->m), st));
    mark(e, OP_NORM);
    if (model_is_moe_layer(m, L) ? moe_ffn(e, L, x, hn2, T, err) : ffn(e, L, x, hn2, T, resid_beta(e), err))
        return -1;
    return allreduce_rows(e, x, T, err);
}

/* A two-plan step's front (an evicting or widening step): its front rows embedded, then layers 0 to
 * nf - 1 over them (importance: layers 0 and 1 score an evicting step's candidates). */
static int run_front(struct eng *e, int nf, bf16_t *x, bool importance, struct ts_err *err)
{
    const struct eng_plan *fp = e->plan.front;
    if (runs(e, OP_EMBED))
        KL(k_embed(x, W(e, W_EMB, -1), e->dm_front.tok_ids, fp->T, e->m.hidden, e->stream));
    mark(e, OP_EMBED);
    struct k_attn_args af = attn_args(e, fp, &e->dm_front);
    for (int L = 0; L < nf; L++)
        if (dense_layer(e, L, &af, &e->dm_front, fp->T, x, importance && L < 2, err))
            return -1;
    return 0;
}

/* An evicting step (eng_plan.h): the front layers over every front row (layers 0 and 1 scoring the
 * candidates), the kept rows chosen and moved to x's first rows, the later layers over them. The
 * move goes through the last front layer's norm1 buffer, which is dead by then and never overlaps x
 * (both live at that layer's norm). Eviction's kernels are timed with the attention. */
static int forward_evicting(struct eng *e, int layers, bf16_t *x, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const int h = m->hidden, nf = TS_MIN(e->front_layers, layers);
    cudaStream_t st = e->stream;
    if (run_front(e, nf, x, p->num_probe > 0, err))
        return -1;
    if (runs(e, OP_ATTN)) {
        if (p->num_probe > 0 && nf >= 2) {
            const struct k_focus_args fa = {
                .front_slot = e->dm_front.tok_slot, .front_pos = e->dm_front.tok_pos, .probe = e->dm.probe,
                .imp = e->focus_imp, .c_row = e->dm.c_row,
                .tok_pos = e->dm.tok_pos, .tok_slot = e->dm.tok_slot, .key_len = e->dm.key_len,
                .progress = e->focus_prog, .trace = e->pick_trace, .num_probe = p->num_probe,
                .probe_rows = p->probe_rows, .max_probe = p->max_probe, .H = m->num_heads, .Hkv = m->num_kv_heads,
                .d = m->head_dim};
            KL(k_focus_pick(&fa, st));
        }
        bf16_t *tmp = (bf16_t *)eng_arena_at(&e->arena, e->act.norm1[nf - 1]);
        KL(k_gather_rows(tmp, x, e->dm.c_row, p->T, h, st));
        CU(cudaMemcpyAsync(x, tmp, sizeof *x * (size_t)p->T * h, cudaMemcpyDeviceToDevice, st));
    }
    mark(e, OP_ATTN);
    struct k_attn_args aa = attn_args(e, p, &e->dm);
    for (int L = nf; L < layers; L++)
        if (dense_layer(e, L, &aa, &e->dm, p->T, x, false, err))
            return -1;
    return 0;
}

/* A widening step (eng_plan.h): the front layers over the front rows, their inputs to the first
 * later layer kept, every later row's input taken from the input cache, the later layers over them.
 * The input cache's moves are timed as the feature cache. */
static int forward_widening(struct eng *e, int layers, bf16_t *x, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan, *fp = p->front;
    const int h = e->m.hidden, nf = TS_MIN(e->front_layers, layers);
    cudaStream_t st = e->stream;
    if (run_front(e, nf, x, false, err))
        return -1;
    if (runs(e, OP_FEAT_CACHE)) {
        bf16_t *in = e->i_pool + (size_t)nf * e->slots * h;
        KL(k_scatter_rows(in, x, e->dm_front.tok_slot, fp->T, h, st));
        KL(k_gather_rows(x, in, e->dm.tok_slot, p->T, h, st));
    }
    mark(e, OP_FEAT_CACHE);
    struct k_attn_args aa = attn_args(e, p, &e->dm);
    for (int L = nf; L < layers; L++)
        if (dense_layer(e, L, &aa, &e->dm, p->T, x, false, err))
            return -1;
    return 0;
}

/* IterSmooth over one LM-head chunk of `rows` logit rows from row c0: the logits turned into
 * probabilities in place (by the plain rows' max and confidence: d_max and d_conf, or under credit
 * decoding their copies from before its fusion), multiplied by the embedding matrix SMOOTH_SUB rows
 * at a time, each product kept at its logit row's soft row (eng_smooth_next; none kept without it). */
static int smooth_chunk(struct eng *e, bf16_t *logits, int rows, int c0, struct ts_err *err)
{
    const int V = e->m.vocab, h = e->m.hidden, T = e->o.max_tokens;
    const float *maxv = e->cr_pending ? e->sm_stats : e->d_max, *conf = e->cr_pending ? e->sm_stats + T : e->d_conf;
    if (runs(e, OP_SAMPLE))
        KL(k_softmax_rows(logits, rows, V, maxv, conf, c0, e->stream));
    mark(e, OP_SAMPLE);
    for (int s0 = 0; s0 < rows; s0 += SMOOTH_SUB) {
        const int sub = TS_MIN(SMOOTH_SUB, rows - s0);
        if (runs(e, OP_LM_HEAD) && gemm_kn(e, W(e, W_EMB, -1), logits + (size_t)s0 * V, e->sm_tmp, sub, V, h, err))
            return -1;
        if (e->sm_pending && runs(e, OP_LM_HEAD))
            KL(k_smooth_scatter(e->sm_tmp, sub, h, e->sm_map, c0 + s0, e->sm_soft[e->sm_cur ^ 1], e->stream));
        mark(e, OP_LM_HEAD);
    }
    return 0;
}

/* The LM head over the logit rows of x: gathered (fewer than the tokens) or in place, normalised, then
 * chunk by chunk the logits and their argmax, max and confidence (d_tok, d_max, d_conf); a
 * tensor-parallel rank's over its vocabulary share, gathered from every rank and merged. */
static int lm_head(struct eng *e, bf16_t *x, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int h = m->hidden;
    cudaStream_t st = e->stream;
    /* a tensor-parallel rank's own results go to the first part of tp_gather, [3][R] */
    float *mine = e->tp ? e->tp_gather : NULL, *all = e->tp ? e->tp_gather + 3 * p->R : NULL;
    int32_t *tok = e->tp ? (int32_t *)mine : e->d_tok;
    float *maxv = e->tp ? mine + p->R : e->d_max, *conf = e->tp ? mine + 2 * p->R : e->d_conf;
    /* fewer logit rows than tokens: gathered into their own buffer; else x, in place */
    bf16_t *hr = (bf16_t *)eng_arena_at(&e->arena, a->head);
    /* the final norm runs whenever the LM head does, even with the norms left out: the head's
     * logits land where the layers' inputs were planned, so with x unnormalised (in place when
     * not gathered) each replay of the linear layers alone would feed a larger x to the next
     * until they ran on inf and NaN, which draw less power and run faster */
    const bool final_norm = runs(e, OP_NORM) || runs(e, OP_LM_HEAD);
    if (a->head_gathered && final_norm)
        KL(k_gather_rows(hr, x, e->dm.logit_idx, p->R, h, st));
    if (final_norm)
        KL(k_rmsnorm(hr, a->head_gathered ? hr : x, W(e, W_FINAL_NORM, -1), p->R, h, model_rms_eps(&e->m), st));
    mark(e, OP_NORM);
    e->hr_last = hr;
    for (int c = 0, c0 = 0; c0 < p->R; c++, c0 += a->logit_rows) {
        int rows = TS_MIN(a->logit_rows, p->R - c0);
        bf16_t *logits = (bf16_t *)eng_arena_at(&e->arena, a->logits[c]);
        if (runs(e, OP_LM_HEAD) &&
            gemm(e, W(e, W_LM, -1), hr + (size_t)c0 * h, logits, rows, h, m->vocab, 0.f, err))
            return -1;
        mark(e, OP_LM_HEAD);
        /* PyTorch's fp32 copy of the logits, held as long as it does */
        if (a->softmax[c] >= 0 && runs(e, OP_SAMPLE))
            KL(k_bf16_to_f32((float *)eng_arena_at(&e->arena, a->softmax[c]), logits,
                             (int64_t)rows * m->vocab, st));
        if (runs(e, OP_SAMPLE))
            KL(k_argmax_conf(logits, rows, m->vocab, tok, maxv, conf, e->d_gap, c0, st));
        if (e->cr_pending && runs(e, OP_SAMPLE)) { /* credit decoding: the fused rows' instead */
            const int now = e->cr_cur, next = now ^ 1, T = e->o.max_tokens;
            if (e->sm_step) { /* IterSmooth's softmax is the plain rows' */
                CU(cudaMemcpyAsync(e->sm_stats + c0, maxv + c0, sizeof(float) * (size_t)rows, cudaMemcpyDeviceToDevice,
                                   st));
                CU(cudaMemcpyAsync(e->sm_stats + T + c0, conf + c0, sizeof(float) * (size_t)rows,
                                   cudaMemcpyDeviceToDevice, st));
            }
            const k_credit_args ca = {logits, rows, m->vocab, c0, tok, maxv, conf, e->cr_map, e->cr_map + T,
                                      e->cr_tok[now], e->cr_n[now], e->cr_val[now], e->cr_tok[next], e->cr_n[next],
                                      e->cr_val[next], e->cr_alpha, e->cr_beta, e->cr_gamma};
            KL(k_credit_fuse(&ca, st));
        }
        mark(e, OP_SAMPLE);
        if (e->sm_step && smooth_chunk(e, logits, rows, c0, err))
            return -1;
    }
    if (!e->tp || !runs(e, OP_SAMPLE))
        return 0;
    if (eng_tp_allgather(e->tp, mine, all, 3LL * p->R, st, err))
        return -1;
    mark(e, OP_ALLREDUCE);
    KL(k_tp_argmax_merge(all, e->o.tp_size, p->R, m->vocab, e->d_tok, e->d_max, e->d_conf, st));
    mark(e, OP_SAMPLE);
    return 0;
}

static int forward(struct eng *e, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int T = p->T, h = m->hidden;
    const int layers = e->o.run_layers > 0 ? TS_MIN(e->o.run_layers, a->layers) : a->layers;
    cudaStream_t st = e->stream;
    bf16_t *x = BUF(a->x);
    e->sel_defer = false;
    if (p->evict) {
        if (forward_evicting(e, layers, x, err))
            return -1;
    } else if (p->widen) {
        if (forward_widening(e, layers, x, err))
            return -1;
    } else if (p->X > 0) { /* a layered step: its hidden rows, each layer computing some of them */
        if (runs(e, OP_EMBED))
            KL(k_embed(x, W(e, W_EMB, -1), e->dm.x_ids, p->X, h, st));
        mark(e, OP_EMBED);
        const int nf = p->front ? TS_MIN(e->front_layers, layers) : 0;
        for (int L = 0; L < layers; L++)
            if (layered_layer(e, L, L < nf ? p->front : p, L < nf ? &e->dm_front : &e->dm, x, err))
                return -1;
    } else if (T > 0) {
        if (runs(e, OP_EMBED))
            KL(k_embed(x, W(e, W_EMB, -1), e->dm.tok_ids, T, h, st));
        if (e->sm_in > 0 && runs(e, OP_EMBED)) /* IterSmooth: a masked position's soft row added */
            KL(k_smooth_add(x, e->sm_in, h, e->sm_map + e->o.max_tokens, (const float *)(e->sm_map + 2 * e->o.max_tokens),
                            e->sm_soft[e->sm_cur], st));
        mark(e, OP_EMBED);
        struct k_attn_args aa = attn_args(e, p, &e->dm);
        if (e->sp_n > 0 && sparsed_check(e, err))
            return -1;
        e->sel_defer = select_at_end(e, layers);
        for (int L = 0; L < layers; L++)
            if (dense_layer(e, L, &aa, &e->dm, T, x, false, err))
                return -1;
        if (e->ro_pending && rollout_importance(e, layers, err))
            return -1;
        if (e->sel_defer) {
            if (runs(e, OP_KV_SELECT) && select_deferred(e, layers, err))
                return -1;
            mark(e, OP_KV_SELECT);
        }
    }
    if (p->R > 0 && lm_head(e, x, err))
        return -1;
#undef BUF
    return 0;
}

static int fetch_outputs(struct eng *e, struct eng_out *out, struct ts_err *err)
{
    int R = e->plan.R;
    e->last_R = R;
    if (R > 0) {
        CU(cudaMemcpyAsync(e->h_tok, e->d_tok, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        CU(cudaMemcpyAsync(e->h_max, e->d_max, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        CU(cudaMemcpyAsync(e->h_conf, e->d_conf, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        if (e->d_gap)
            CU(cudaMemcpyAsync(e->h_gap, e->d_gap, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
    }
    CU(cudaStreamSynchronize(e->stream));
    if (out)
        *out = (struct eng_out){R, e->h_tok, e->h_max, e->h_conf, e->h_gap};
    return 0;
}

/* Whether the step's sparse selections fit the scratch they share with attention. */
static int select_fits(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    const int32_t max_cand = (int32_t)sd->tot.sel_max_cand, max_keep = (int32_t)sd->tot.sel_max_keep;
    const int n = (int)sd->tot.sel_segs;
    const int64_t need = k_kv_select_ws_bytes(n, max_cand, max_keep, e->m.num_kv_heads);
    if (e->o.trace_selection && (int64_t)e->m.num_layers * n * (sd->select_heads ? e->m.num_kv_heads : 1) *
                                        max_keep * 4 > SELECTION_TRACE)
        return ts_fail(err, "step refused: its selections' trace exceeds the %d MiB kept for it",
                       SELECTION_TRACE >> 20);
    if (n > 0 && need > ATTN_WORKSPACE)
        return ts_fail(err, "step refused: its selections (%d segments, up to %d candidates) need %.1f MiB of "
                            "scratch, more than the %lld MiB the engine holds", n, max_cand, need / 1048576.0,
                       ATTN_WORKSPACE >> 20);
    return 0;
}

/* Whether a layered step's probes fit the value check (and its trace, where one is kept). */
static int fc_probes_refused(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    int64_t n = 0, most = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        n += sd->segs[s].probe > 0;
        most = TS_MAX(most, (int64_t)sd->segs[s].probe);
    }
    if (most > K_FC_MAX_PROBE)
        return ts_fail(err, "step refused: a segment probes %lld rows, more than the value check's %d",
                       (long long)most, K_FC_MAX_PROBE);
    if (e->pick_trace && (int64_t)e->m.num_layers * n * most * 4 > PICK_TRACE)
        return ts_fail(err, "step refused: its picked rows' trace exceeds the %d MiB kept for it", PICK_TRACE >> 20);
    return 0;
}

/* Whether an evicting step names requests beyond the progress kept on the GPU, or outgrows the trace
 * (a stateless engine's refusal is the plan's). */
static int evict_refused(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    int64_t n = 0, most = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        if (g->probe > 0 && g->req_id >= EVICT_REQS)
            return ts_fail(err, "step refused: request %d evicts, beyond the %d requests whose progress the engine "
                                "keeps", g->req_id, EVICT_REQS);
        n += g->probe > 0;
        most = TS_MAX(most, (int64_t)g->probe);
    }
    if (e->pick_trace && n * most * 4 > PICK_TRACE)
        return ts_fail(err, "step refused: its kept rows' trace exceeds the %d MiB kept for it", PICK_TRACE >> 20);
    return 0;
}

/* IterSmooth's part of a step: whether it runs (sd->iter_smooth); the soft rows its logit rows keep
 * (eng_smooth_next's) checked against it; the soft rows and weights its embedded rows add
 * (eng_tokens.soft), uploaded (sm_in: how many rows, 0 where none adds one). */
static int smooth_prepare(struct eng *e, const struct step_desc *sd, bool split, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int32_t T = e->o.max_tokens;
    e->sm_step = sd->iter_smooth;
    e->sm_in = 0;
    if (e->sm_pending && (!sd->iter_smooth || p->R != e->sm_R))
        return ts_fail(err, "step refused: IterSmooth's soft rows cover %d logit rows, the step has %d%s", e->sm_R,
                       p->R, sd->iter_smooth ? "" : " and no iter_smooth");
    if (!e->tokens.soft || e->o.smooth_rows < 1)
        return 0;
    if (split)
        return ts_fail(err, "step refused: IterSmooth's soft embeddings in a step whose rows differ by layer");
    int32_t *slot = e->h_sm + T, any = 0;
    float *w = (float *)(e->h_sm + 2 * T);
    for (int32_t s = 0; s < p->S; s++)
        for (int32_t i = 0, r = p->q_start[s]; i < p->q_len[s]; i++, r++) {
            slot[r] = e->tokens.soft(e->tokens.ctx, sd->segs[s].req_id, p->tok_pos[r], &w[r]);
            if (slot[r] >= e->o.smooth_rows || slot[r] < -1)
                return ts_fail(err, "step refused: request %d's position %d adds soft row %d (the engine keeps %d)",
                               sd->segs[s].req_id, p->tok_pos[r], slot[r], e->o.smooth_rows);
            any |= slot[r] >= 0;
        }
    if (!any)
        return 0;
    CU(cudaMemcpyAsync(e->sm_map + T, slot, sizeof(int32_t) * (size_t)p->T, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(e->sm_map + 2 * T, w, sizeof(float) * (size_t)p->T, cudaMemcpyHostToDevice, e->stream));
    CU(cudaStreamSynchronize(e->stream)); /* h_sm is eng_smooth_next's staging too */
    e->sm_in = p->T;
    return 0;
}

/* Plans and maps the step's activations, then (run = true) reserves its KV pages and uploads its
 * arrays; nothing changes when the step is refused. 1: out of device memory. */
static int prepare(struct eng *e, const struct step_desc *sd, bool run, struct ts_err *err)
{
    if (sd->logit_chunk_rows < 0 || sd->ffn_chunks < 0 || sd->attn_block < 0)
        return ts_fail(err, "step refused: knobs logit_chunk_rows %d, ffn_chunks %d, attn_block %d (none may be "
                            "negative)", sd->logit_chunk_rows, sd->ffn_chunks, sd->attn_block);
    if (sd->tot.sel_segs > 0 && (sd->select_kernel < 1 || sd->select_kernel % 2 == 0))
        return ts_fail(err, "step refused: select_kernel %d (the selection's pooling window must be odd)",
                       sd->select_kernel);
    const bool layered = eng_plan_layered(sd), evicting = eng_plan_evicting(sd), widening = eng_plan_widening(sd);
    const bool split = layered || evicting || widening;
    if (sd->tot.q_tokens > e->o.max_tokens || (split && sd->tot.rows > e->o.max_tokens))
        return ts_fail(err, "step refused: %lld packed tokens exceed the workspace (%d tokens; raise "
                            "--max-tokens)", (long long)TS_MAX(sd->tot.q_tokens, split ? sd->tot.rows : 0),
                       e->o.max_tokens);
    if (e->tp && (split || (sd->tot.sel_segs > 0 && !sd->select_heads)))
        return ts_fail(err, "step refused: tensor parallelism runs steps whose rows are the same in every layer, "
                            "and sparse selections of one kept set per K/V head, each GPU's own (no feature cache, "
                            "front shapes, eviction or one kept set for all heads)");
    if (evicting && evict_refused(e, sd, err))
        return -1;
    if (sd->iter_smooth && (e->tp || split))
        return ts_fail(err, "step refused: IterSmooth runs on one GPU, in steps whose rows are the same in every "
                            "layer (no feature cache, front shapes or eviction)");
    if (e->drift_pending && split)
        return ts_fail(err, "step refused: Elastic-Cache's drift test runs in steps whose rows are the same in every "
                            "layer (no feature cache, front shapes or eviction)");
    if (e->ro_pending && split)
        return ts_fail(err, "step refused: d2Cache's attention rollout runs in steps whose rows are the same in every "
                            "layer (no feature cache, front shapes or eviction)");
    if (e->sp_n > 0 && split)
        return ts_fail(err, "step refused: SparseD's patterns run in steps whose rows are the same in every layer "
                            "(no feature cache, front shapes or eviction)");
    for (int32_t s = 0; s < sd->num_segs; s++) { /* a sparse pattern (attn_keys) runs as SparseD's entries say */
        bool named = false;
        for (int32_t i = 0; i < e->sp_n && !named; i++)
            named = e->sp[i].seg == s;
        if (sd->segs[s].attn_keys > 0 && !named)
            return ts_fail(err, "step refused: request %d's segment has a sparse attention pattern (attn_keys) that "
                                "no SparseD entry names (eng_sparsed_next), which the engine does not run; price "
                                "such runs with the cost model", sd->segs[s].req_id);
    }
    if (layered && e->m.num_experts > 0)
        return ts_fail(err, "step refused: its rows differ by layer (a feature cache, front shapes, probes or "
                            "carried rows), which the engine does not run on a mixture of experts");
    if (layered && (e->o.stateless || !e->o.feature_cache))
        return ts_fail(err, "step refused: its rows differ by layer (a feature cache, front shapes, probes or "
                            "carried rows), which an engine made without a feature cache does not run");
    if (layered && fc_probes_refused(e, sd, err))
        return -1;
    if (sd->cache_inputs && (e->o.stateless || !e->o.input_cache))
        return ts_fail(err, "step refused: it keeps each row's layer inputs (cache_inputs), which an engine made "
                            "without an input cache does not run");
    if (widening && step_front_layers(sd, e->m.num_layers) >= e->m.num_layers)
        return ts_fail(err, "step refused: its front shapes run all %d layers, leaving none to widen",
                       e->m.num_layers);
    struct og_shape s = step_shape(e, sd);
    if (plan_activations(e, &s, err))
        return -1;
    int64_t need = e->act.plan.arena_bytes;
    if (!e->o.stateless && need > e->mem.workspace)
        return ts_fail(err, "step refused: its activations, planned by %s, need %.3f GiB, more than the "
                            "%.3f GiB reserved for them", e->planner->name, need / TS_GIB, e->mem.workspace / TS_GIB);
    int rc = eng_arena_map(&e->arena, (size_t)need, err);
    e->mem.arena_mapped = (int64_t)e->arena.mapped;
    if (rc)
        return rc;
    if (!run)
        return 0;
    if (select_fits(e, sd, err))
        return -1;
    if (eng_plan_build(&e->plan, e->o.stateless ? NULL : &e->kv, sd, e->gm.vocab, e->o.seed, err))
        return -1;
    if (e->tokens.id && eng_plan_set_ids(&e->plan, e->o.stateless ? NULL : &e->kv, sd, &e->tokens, err))
        return -1;
    if (e->cr_pending && e->plan.R != e->cr_R)
        return ts_fail(err, "step refused: its credit rows cover %d logit rows, the step has %d", e->cr_R, e->plan.R);
    if (smooth_prepare(e, sd, split, err) || upload_plan(e, err))
        return -1;
    e->attn_block = sd->attn_block;
    e->front_layers = step_front_layers(sd, e->m.num_layers);
    e->select_heads = sd->select_heads;
    e->select_kernel = sd->select_kernel;
    if (e->poison_next) {
        e->poison_next = false;
        KL(k_fill_bits(eng_arena_at(&e->arena, 0), (int64_t)e->arena.mapped / 2, 0x7fc0, e->stream));
        CU(cudaMemsetAsync(e->d_tok, 0xff, sizeof(int32_t) * (size_t)e->o.max_tokens, e->stream));
        CU(cudaMemsetAsync(e->d_conf, 0xff, sizeof(float) * (size_t)e->o.max_tokens, e->stream));
    }
    return 0;
}

int eng_prepare_step(struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    return prepare(e, sd, false, err);
}

int eng_step(struct eng *e, const struct step_desc *sd, struct eng_out *out, float *ms,
             struct ts_err *err)
{
    if (prepare(e, sd, true, err))
        return -1;
    /* A step that met GEMM shapes new to this process (timed their candidates, or took them from
     * the cache and launched their kernels for the first time) is not a clean timing: it runs once
     * more to warm up, then once more timed (a step is idempotent: it rewrites the same K/V at the
     * same slots). */
    int shapes = eng_gemm_shape_count(e->gemm);
    CU(cudaEventRecord(e->ev0, e->stream));
    if (forward(e, err))
        return -1;
    CU(cudaEventRecord(e->ev1, e->stream));
    if (ms && eng_gemm_shape_count(e->gemm) != shapes) {
        if (forward(e, err))
            return -1;
        CU(cudaEventRecord(e->ev0, e->stream));
        if (forward(e, err))
            return -1;
        CU(cudaEventRecord(e->ev1, e->stream));
    }
    if (fetch_outputs(e, out, err) || drop_tune_scratch(e, err))
        return -1;
    CU(cudaGetLastError());
    if (ms) {
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
        double v = *ms; /* tensor parallelism: the step took as long as its slowest rank */
        if (e->tp && eng_tp_agree(e->tp, &v, ENG_TP_LARGEST, e->stream, err))
            return -1;
        *ms = (float)v;
    }
    if (e->cr_pending) { /* the credits the step left are the current ones */
        e->cr_cur ^= 1;
        e->cr_pending = false;
    }
    if (e->sm_pending) { /* the soft rows the step left are the current ones */
        e->sm_cur ^= 1;
        e->sm_pending = false;
    }
    if (e->drift_pending) { /* the queries and keys the step kept are the step before's now */
        e->drift_cur ^= 1;
        e->drift_pending = false;
    }
    e->ro_pending = false;
    for (int32_t i = 0; i < e->sp_n; i++) /* the patterns built are the slots' now */
        if (e->sp[i].build)
            e->sp_N[e->sp[i].req] = e->plan.q_len[e->sp[i].seg];
    e->sp_n = 0;
    /* a selecting request keeps the pages of its kept keys alone: its candidates' go back to the pool
     * (a graph of the step keeps them: its replays write there) */
    for (int32_t s = 0; s < sd->num_segs && !e->o.stateless; s++)
        if (sd->segs[s].keep > 0)
            eng_kv_truncate(&e->kv, sd->segs[s].req_id, sd->segs[s].keep);
    return 0;
}

void eng_set_tokens(struct eng *e, const struct eng_tokens *t)
{
    e->tokens = t ? *t : (struct eng_tokens){0};
}

/* What eng_credit_next and eng_smooth_next check first (what: the feature's name): the engine keeps
 * `have` rows of its `kind`, sized by eng_opts.`opt`, on one GPU, and the next step has R logit rows,
 * at most max_tokens. */
static int next_rows_check(const struct eng *e, const char *what, const char *kind, const char *opt, int32_t have,
                           int32_t R, struct ts_err *err)
{
    if (have < 1 || e->tp)
        return ts_fail(err, "%s: the engine was made without %s rows (eng_opts.%s)%s", what, kind, opt,
                       e->tp ? " or is split over GPUs" : "");
    if (R < 0 || R > e->o.max_tokens)
        return ts_fail(err, "%s: %d logit rows (at most %d)", what, R, e->o.max_tokens);
    return 0;
}

int eng_credit_next(struct eng *e, const struct unmask_rule *u, const int32_t *state, const int32_t *flags, int32_t R,
                    struct ts_err *err)
{
    const int32_t T = e->o.max_tokens;
    if (next_rows_check(e, "credit decoding", "credit", "credit_rows", e->o.credit_rows, R, err))
        return -1;
    for (int32_t r = 0; r < R; r++)
        if (state[r] >= e->o.credit_rows || state[r] < -1 || flags[r] & ~7)
            return ts_fail(err, "credit decoding: logit row %d's credit row %d or flags %d out of range (%d rows)", r,
                           state[r], flags[r], e->o.credit_rows);
    memcpy(e->h_um, state, sizeof(int32_t) * (size_t)R);
    memcpy(e->h_um + T, flags, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(e->cr_map, e->h_um, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(e->cr_map + T, e->h_um + T, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    /* the rows the step leaves alone (a request that waits) carry over as they are */
    const int now = e->cr_cur, next = now ^ 1;
    const size_t S = (size_t)e->o.credit_rows;
    CU(cudaMemcpyAsync(e->cr_tok[next], e->cr_tok[now], S * K_CREDIT_MAX * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaMemcpyAsync(e->cr_val[next], e->cr_val[now], S * K_CREDIT_MAX * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaMemcpyAsync(e->cr_n[next], e->cr_n[now], S * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaStreamSynchronize(e->stream)); /* h_um is eng_unmask's staging too */
    e->cr_pending = true;
    e->cr_R = R;
    e->cr_alpha = u->alpha, e->cr_beta = u->beta, e->cr_gamma = u->gamma;
    return 0;
}

int eng_smooth_next(struct eng *e, const int32_t *slot, int32_t R, struct ts_err *err)
{
    if (next_rows_check(e, "IterSmooth", "soft", "smooth_rows", e->o.smooth_rows, R, err))
        return -1;
    for (int32_t r = 0; r < R; r++)
        if (slot[r] >= e->o.smooth_rows || slot[r] < -1)
            return ts_fail(err, "IterSmooth: logit row %d's soft row %d out of range (%d rows)", r, slot[r],
                           e->o.smooth_rows);
    memcpy(e->h_sm, slot, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(e->sm_map, e->h_sm, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    /* the rows the step does not write (positions it leaves alone) carry over as they are */
    CU(cudaMemcpyAsync(e->sm_soft[e->sm_cur ^ 1], e->sm_soft[e->sm_cur],
                       sizeof(bf16_t) * (size_t)e->o.smooth_rows * (size_t)e->m.hidden, cudaMemcpyDeviceToDevice,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    e->sm_pending = true;
    e->sm_R = R;
    return 0;
}

int eng_drift_next(struct eng *e, const struct eng_drift_req *r, int32_t n, struct ts_err *err)
{
    if (e->o.drift_positions <= 0)
        return ts_fail(err, "Elastic-Cache's drift test: the engine keeps no queries and keys for it "
                            "(eng_opts.drift_positions)");
    if (n < 0 || n > e->o.drift_requests)
        return ts_fail(err, "Elastic-Cache's drift test: %d requests (at most %d)", n, e->o.drift_requests);
    for (int32_t i = 0; i < n; i++) {
        const struct eng_drift_req *q = &r[i];
        if (q->req < 0 || q->req >= e->o.drift_requests || q->N < 1 || q->N > e->o.drift_positions || q->nwin < 0 ||
            q->ntrack < 0 || q->nwin + q->ntrack > K_DRIFT_MAX_ROWS || q->seg < 0)
            return ts_fail(err, "Elastic-Cache's drift test: entry %d (request %d, %d positions, %d window and %d "
                                "tracked rows) out of range", i, q->req, q->N, q->nwin, q->ntrack);
        for (int32_t k = 0; k < q->nwin + q->ntrack; k++)
            if (q->sel[k] < 0 || q->sel[k] >= q->N)
                return ts_fail(err, "Elastic-Cache's drift test: entry %d's row %d at position %d (of %d)", i, k,
                               q->sel[k], q->N);
        for (int32_t p = 0; p < q->N; p++)
            if (q->rowmap[p] < 0 || q->rowmap[p] >= q->N)
                return ts_fail(err, "Elastic-Cache's drift test: entry %d's position %d at row %d (of %d)", i, p,
                               q->rowmap[p], q->N);
        CU(cudaMemcpyAsync(e->drift_sel + (int64_t)i * K_DRIFT_MAX_ROWS, q->sel,
                           sizeof(int32_t) * (size_t)(q->nwin + q->ntrack), cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(e->drift_elig + (int64_t)i * e->o.drift_positions, q->eligible, (size_t)q->N,
                           cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(e->drift_rowmap + (int64_t)i * e->o.drift_positions, q->rowmap,
                           sizeof(int32_t) * (size_t)q->N, cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(e->drift_query + (int64_t)i * e->o.drift_positions, q->queried, (size_t)q->N,
                           cudaMemcpyHostToDevice, e->stream));
        e->drift[i] = *q;
        e->drift[i].sel = e->drift[i].rowmap = NULL, e->drift[i].eligible = e->drift[i].queried = NULL;
    }
    CU(cudaStreamSynchronize(e->stream));
    e->drift_n = n;
    e->drift_pending = n > 0;
    return 0;
}

int eng_drift_out(struct eng *e, int32_t *track, float *sim, struct ts_err *err)
{
    const size_t n = (size_t)e->drift_n * (size_t)e->m.num_layers;
    CU(cudaMemcpy(track, e->d_drift_track, n * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(sim, e->d_drift_sim, n * 4, cudaMemcpyDeviceToHost));
    return 0;
}

int eng_sparsed_next(struct eng *e, const struct eng_sparsed_req *r, int32_t n, struct ts_err *err)
{
    if (e->o.sparsed_positions <= 0)
        return ts_fail(err, "SparseD: the engine keeps no patterns (eng_opts.sparsed_positions)");
    if (n < 0 || n > e->o.sparsed_requests)
        return ts_fail(err, "SparseD: %d requests (at most %d)", n, e->o.sparsed_requests);
    for (int32_t s = 0; s < e->o.max_tokens; s++)
        e->h_sp_base[s] = -1;
    int32_t sparse = 0;
    for (int32_t i = 0; i < n; i++) {
        if (r[i].seg < 0 || r[i].seg >= e->o.max_tokens || r[i].req < 0 || r[i].req >= e->o.sparsed_requests ||
            r[i].prompt < 0)
            return ts_fail(err, "SparseD: entry %d (segment %d, slot %d, prompt %d) out of range (%d slots)", i,
                           r[i].seg, r[i].req, r[i].prompt, e->o.sparsed_requests);
        if (!r[i].build && e->sp_N[r[i].req] <= 0)
            return ts_fail(err, "SparseD: entry %d attends by slot %d's pattern, which is not built", i, r[i].req);
        for (int32_t j = 0; j < i; j++)
            if (r[j].req == r[i].req || r[j].seg == r[i].seg)
                return ts_fail(err, "SparseD: entries %d and %d name the same slot or segment", j, i);
        if (!r[i].build)
            e->h_sp_base[r[i].seg] = r[i].req * e->m.num_heads * e->sp_qb, sparse++;
        e->sp[i] = r[i];
    }
    CU(cudaMemcpyAsync(e->sp_base, e->h_sp_base, sizeof(int32_t) * (size_t)e->o.max_tokens, cudaMemcpyHostToDevice,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    e->sp_n = n, e->sp_sparse = sparse;
    return 0;
}

int eng_sparsed_pattern(struct eng *e, int32_t req, uint8_t *keep, int32_t *nb, struct ts_err *err)
{
    if (e->o.sparsed_positions <= 0 || req < 0 || req >= e->o.sparsed_requests || e->sp_N[req] <= 0)
        return -1;
    const int64_t H = e->m.num_heads, Q = e->sp_qb, R = e->o.sparsed_requests;
    const int32_t n = (e->sp_N[req] + e->o.sparsed_block - 1) / e->o.sparsed_block;
    int32_t *cnt = xmalloc(sizeof *cnt * (size_t)(H * Q));
    int16_t *list = xmalloc(sizeof *list * (size_t)(H * Q * Q));
    int rc = 0;
    for (int L = 0; L < e->m.num_layers && !rc; L++) {
        const int64_t at = ((int64_t)L * R + req) * H * Q;
        if (cudaMemcpy(cnt, e->sp_cnt + at, sizeof *cnt * (size_t)(H * Q), cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(list, e->sp_list + at * Q, sizeof *list * (size_t)(H * Q * Q), cudaMemcpyDeviceToHost) !=
                cudaSuccess) {
            rc = ts_fail(err, "SparseD: reading slot %d's pattern: %s", req, cudaGetErrorString(cudaGetLastError()));
            break;
        }
        uint8_t *kl = keep + (size_t)L * H * n * n;
        memset(kl, 0, (size_t)(H * n * n));
        for (int64_t h = 0; h < H; h++)
            for (int32_t qb = 0; qb < n; qb++)
                for (int32_t j = 0; j < cnt[h * Q + qb] && j < n; j++)
                    kl[(h * n + qb) * n + list[(h * Q + qb) * Q + j]] = 1;
    }
    free(cnt), free(list);
    *nb = n;
    return rc;
}

int eng_rollout_next(struct eng *e, const struct eng_rollout_req *r, int32_t n, struct ts_err *err)
{
    if (e->o.rollout_positions <= 0)
        return ts_fail(err, "d2Cache's attention rollout: the engine keeps no buffers for it (eng_opts.rollout_positions)");
    if (n < 0 || n > e->o.rollout_requests)
        return ts_fail(err, "d2Cache's attention rollout: %d requests (at most %d)", n, e->o.rollout_requests);
    for (int32_t i = 0; i < n; i++) {
        if (r[i].seg < 0 || r[i].N < 1 || r[i].N > e->o.rollout_positions)
            return ts_fail(err, "d2Cache's attention rollout: entry %d (segment %d, %d positions) out of range (at "
                                "most %d positions)", i, r[i].seg, r[i].N, e->o.rollout_positions);
        e->ro[i] = r[i];
    }
    e->ro_n = n;
    e->ro_pending = n > 0;
    return 0;
}

int eng_rollout_out(struct eng *e, float *importance, struct ts_err *err)
{
    CU(cudaMemcpy(importance, e->ro_imp, sizeof(float) * (size_t)e->ro_n * (size_t)e->o.rollout_positions,
                  cudaMemcpyDeviceToHost));
    return 0;
}

int eng_unmask(struct eng *e, const struct unmask_rule *u, const int32_t *groups, int32_t n, const int32_t *masked,
               const float *tau, int32_t *commit, int32_t *count, float *ms, struct ts_err *err)
{
    const int32_t R = e->last_R, T = e->o.max_tokens;
    if (n < 0 || n > T)
        return ts_fail(err, "unmask: %d blocks (at most %d)", n, T);
    for (int32_t g = 0; g < n; g++)
        if (groups[2 * g] < 0 || groups[2 * g + 1] < 1 || groups[2 * g + 1] > UNMASK_MAX_ROWS ||
            groups[2 * g] + groups[2 * g + 1] > R)
            return ts_fail(err, "unmask: block %d's rows %d..%d are not 1 to %d of the last step's %d logit rows", g,
                           groups[2 * g], groups[2 * g] + groups[2 * g + 1] - 1, UNMASK_MAX_ROWS, R);
    if (u->kind < 0 || u->kind >= UNMASK_KINDS)
        return ts_fail(err, "unmask: no rule %d", u->kind);
    memcpy(e->h_um, groups, sizeof(int32_t) * 2 * (size_t)n);
    memcpy(e->h_um + 2 * T, masked, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(e->d_um, e->h_um, sizeof(int32_t) * 2 * (size_t)n, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(e->d_um + 2 * T, e->h_um + 2 * T, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice,
                       e->stream));
    CU(cudaMemsetAsync(e->d_um + 3 * T, 0xff, sizeof(int32_t) * (size_t)R, e->stream)); /* rows of no block: -1 */
    if (tau) {
        memcpy(e->h_um + 5 * T, tau, sizeof(float) * (size_t)n);
        CU(cudaMemcpyAsync(e->d_um + 5 * T, e->h_um + 5 * T, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice,
                           e->stream));
    }
    const k_unmask_args a = {.groups = e->d_um, .tok = e->d_tok, .masked = e->d_um + 2 * T, .conf = e->d_conf,
                             .commit = e->d_um + 3 * T, .count = e->d_um + 4 * T, .num_groups = n,
                             .kind = u->kind, .k = u->k, .tau = u->tau, .low = u->low,
                             .group_tau = tau ? (const float *)(e->d_um + 5 * T) : NULL};
    CU(cudaEventRecord(e->ev0, e->stream));
    KL(k_unmask(&a, e->stream));
    CU(cudaEventRecord(e->ev1, e->stream));
    CU(cudaMemcpyAsync(e->h_um + 3 * T, e->d_um + 3 * T, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost,
                       e->stream));
    CU(cudaMemcpyAsync(e->h_um + 4 * T, e->d_um + 4 * T, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    memcpy(commit, e->h_um + 3 * T, sizeof(int32_t) * (size_t)R);
    if (count)
        memcpy(count, e->h_um + 4 * T, sizeof(int32_t) * (size_t)n);
    if (ms)
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
    return 0;
}

int32_t eng_pool_free_pages(const struct eng *e) { return e->kv.num_free; }

void eng_release(struct eng *e, int32_t req_id)
{
    eng_kv_release(&e->kv, req_id);
    if (e->focus_prog && req_id >= 0 && req_id < EVICT_REQS) /* a request id used again starts afresh */
        cudaMemsetAsync(e->focus_prog + req_id, 0xff, sizeof(int32_t), e->stream);
}

/* --- moves between engines (a disaggregated fleet's) --------------------------------------- */

void eng_pool_of(const struct eng *e, struct eng_pool *out)
{
    *out = (struct eng_pool){.k = e->k_pool, .v = e->v_pool, .slots = e->slots, .page_tokens = e->kv.page_tokens,
                             .layers = e->m.num_layers, .kv_row = e->m.num_kv_heads * e->m.head_dim};
}

_Static_assert(sizeof(cudaIpcMemHandle_t) == ENG_POOL_HANDLE, "a pool's handle is CUDA's IPC handle");

int eng_pool_export(const struct eng *e, struct eng_pool_handle *out, struct ts_err *err)
{
    struct eng_pool p;
    eng_pool_of(e, &p);
    if (!p.k)
        return ts_fail(err, "a stateless engine has no K/V pool to share");
    cudaIpcMemHandle_t k, v;
    CU(cudaIpcGetMemHandle(&k, p.k));
    CU(cudaIpcGetMemHandle(&v, p.v));
    *out = (struct eng_pool_handle){.slots = p.slots, .page_tokens = p.page_tokens, .layers = p.layers,
                                    .kv_row = p.kv_row};
    memcpy(out->k, &k, sizeof k);
    memcpy(out->v, &v, sizeof v);
    return 0;
}

int eng_pool_import(const struct eng_pool_handle *h, struct eng_pool *out, struct ts_err *err)
{
    *out = (struct eng_pool){.slots = h->slots, .page_tokens = h->page_tokens, .layers = h->layers,
                             .kv_row = h->kv_row};
    cudaIpcMemHandle_t k, v;
    memcpy(&k, h->k, sizeof k);
    memcpy(&v, h->v, sizeof v);
    CU(cudaIpcOpenMemHandle(&out->k, k, cudaIpcMemLazyEnablePeerAccess));
    const cudaError_t rc = cudaIpcOpenMemHandle(&out->v, v, cudaIpcMemLazyEnablePeerAccess);
    if (rc != cudaSuccess) {
        cudaIpcCloseMemHandle(out->k);
        out->k = NULL;
        return ts_fail(err, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(rc));
    }
    return 0;
}

void eng_pool_close(struct eng_pool *p)
{
    if (p->k)
        cudaIpcCloseMemHandle(p->k);
    if (p->v)
        cudaIpcCloseMemHandle(p->v);
    p->k = p->v = NULL;
}

int eng_hold(struct eng *e, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    return eng_kv_hold(&e->kv, req_id, ticket, err);
}

int eng_held(const struct eng *e, int64_t ticket, const int32_t **pages, int32_t *n)
{
    const struct eng_kv_req *r = eng_kv_held(&e->kv, ticket);
    if (!r)
        return -1;
    *pages = r->pages, *n = r->num_pages;
    return 0;
}

int eng_pull(struct eng *e, const struct eng_pool *src, const int32_t *pages, int32_t n, int64_t ticket, float *ms,
             struct ts_err *err)
{
    struct eng_pool dst;
    eng_pool_of(e, &dst);
    if (src->page_tokens != dst.page_tokens || src->layers != dst.layers || src->kv_row != dst.kv_row)
        return ts_fail(err, "K/V move %lld: the sender's pool (%d layers of %d values a token, pages of %d) is not "
                            "this engine's (%d, %d, %d)", (long long)ticket, src->layers, src->kv_row,
                       src->page_tokens, dst.layers, dst.kv_row, dst.page_tokens);
    if (eng_kv_take(&e->kv, ticket, n, err))
        return -1;
    if (2 * n > e->cap_move) {
        if (e->d_move)
            CU(cudaFree(e->d_move));
        e->d_move = NULL;
        e->cap_move = 0;
        CU(cudaMalloc((void **)&e->d_move, sizeof(int32_t) * (size_t)(2 * n)));
        e->cap_move = 2 * n;
    }
    int32_t *h = xmalloc(sizeof *h * (size_t)(2 * (n ? n : 1)));
    memcpy(h, pages, sizeof *h * (size_t)n);
    memcpy(h + n, eng_kv_held(&e->kv, ticket)->pages, sizeof *h * (size_t)n);
    CU(cudaEventRecord(e->ev0, e->stream));
    const cudaError_t up = cudaMemcpyAsync(e->d_move, h, sizeof *h * (size_t)(2 * n), cudaMemcpyHostToDevice, e->stream);
    CU(cudaStreamSynchronize(e->stream)); /* (h is the host's own memory) */
    free(h);
    CU(up);
    KL(k_copy_pages(dst.k, dst.slots, src->k, src->slots, e->d_move, e->d_move + n, n, dst.layers, dst.page_tokens,
                    dst.kv_row, e->stream));
    KL(k_copy_pages(dst.v, dst.slots, src->v, src->slots, e->d_move, e->d_move + n, n, dst.layers, dst.page_tokens,
                    dst.kv_row, e->stream));
    CU(cudaEventRecord(e->ev1, e->stream));
    CU(cudaEventSynchronize(e->ev1));
    if (ms)
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
    return 0;
}

int eng_adopt(struct eng *e, int64_t ticket, int32_t req_id, struct ts_err *err)
{
    if (eng_kv_adopt(&e->kv, ticket, req_id, err))
        return -1;
    if (e->focus_prog && req_id < EVICT_REQS) /* (a request id used again starts afresh) */
        CU(cudaMemsetAsync(e->focus_prog + req_id, 0xff, sizeof(int32_t), e->stream));
    return 0;
}

void eng_drop(struct eng *e, int64_t ticket) { eng_kv_drop(&e->kv, ticket); }

int eng_step_profile(struct eng *e, const struct step_desc *sd, double *op_ms, float *total_ms,
                     struct ts_err *err)
{
    for (int i = 0; i < OP_COUNT; i++)
        op_ms[i] = 0;
    if (prepare(e, sd, true, err))
        return -1;
    if (!e->prof_ev[0])
        for (int i = 0; i < MAX_PROF_EVENTS; i++)
            CU(cudaEventCreate(&e->prof_ev[i]));
    e->profiling = true;
    e->prof_n = 0;
    CU(cudaEventRecord(e->ev0, e->stream));
    int rc = forward(e, err);
    e->profiling = false;
    if (rc)
        return -1;
    CU(cudaEventRecord(e->ev1, e->stream));
    if (fetch_outputs(e, NULL, err) || drop_tune_scratch(e, err))
        return -1;
    CU(cudaEventElapsedTime(total_ms, e->ev0, e->ev1));
    cudaEvent_t prev = e->ev0;
    for (int i = 0; i < e->prof_n; i++) {
        float ms;
        CU(cudaEventElapsedTime(&ms, prev, e->prof_ev[i]));
        op_ms[e->prof_op[i]] += ms;
        prev = e->prof_ev[i];
    }
    return 0;
}

int eng_graph_capture(struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    if (e->have_graph) {
        CU(cudaGraphExecDestroy(e->graph));
        e->have_graph = false;
    }
    if (prepare(e, sd, true, err))
        return -1;
    /* one eager run first: GEMM shapes get tuned outside the capture */
    if (forward(e, err) || drop_tune_scratch(e, err))
        return -1;
    CU(cudaStreamSynchronize(e->stream));
    cudaGraph_t g;
    e->tuning = false;
    CU(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
    int rc = forward(e, err);
    cudaError_t ce = cudaStreamEndCapture(e->stream, &g);
    e->tuning = true;
    if (rc)
        return -1;
    if (ce != cudaSuccess)
        return ts_fail(err, "engine: graph capture failed: %s", cudaGetErrorString(ce));
    ce = cudaGraphInstantiate(&e->graph, g, 0);
    cudaGraphDestroy(g);
    if (ce != cudaSuccess)
        return ts_fail(err, "engine: graph instantiation failed: %s", cudaGetErrorString(ce));
    e->have_graph = true;
    CU(cudaGraphLaunch(e->graph, e->stream));
    return fetch_outputs(e, NULL, err);
}

/* Whether the replays go on: tensor-parallel ranks do as rank 0 says, so that each replays its
 * graphs (and their collectives) as often as the others. */
static int go_on(struct eng *e, bool *more, struct ts_err *err)
{
    double v = *more;
    if (e->tp && eng_tp_agree(e->tp, &v, ENG_TP_RANK0, e->stream, err))
        return -1;
    *more = v != 0;
    return 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Replays of graphs[0..n-1] in turn before any is timed: at least three rounds, and rounds until
 * eng_opts.warm_s have passed, so that a step is timed at the clock its own repetition holds under
 * the power limit rather than the one the work before it left (a 14 ms step after a lighter one ran
 * 3% faster than among its own kind; after a Refresh, Reuse 16 x 32 swung by up to 25% once a
 * second for the next 3 s); each round timed into the warm-up trace where one is set */
static int warm_up(struct eng *e, const cudaGraphExec_t *graphs, int n, double t0, struct ts_err *err)
{
    if (e->o.idle_s > 0) { /* a cool card to start from (eng_opts.idle_s) */
        CU(cudaStreamSynchronize(e->stream));
        ts_sleep_s(e->o.idle_s);
        t0 = ts_wall_s();
    }
    for (int r = 0;; r++) {
        bool more = r < 3 || ts_wall_s() - t0 < e->o.warm_s;
        if (go_on(e, &more, err))
            return -1;
        if (!more)
            break;
        if (e->warm_trace)
            CU(cudaEventRecord(e->ev0, e->stream));
        for (int g = 0; g < n; g++)
            CU(cudaGraphLaunch(graphs[g], e->stream));
        if (e->warm_trace)
            CU(cudaEventRecord(e->ev1, e->stream));
        CU(cudaStreamSynchronize(e->stream));
        if (e->warm_trace) {
            float ms;
            CU(cudaEventElapsedTime(&ms, e->ev0, e->ev1));
            fprintf(e->warm_trace, "\"%s\",warm,%d,-1,%.4f,%.4f\n", e->warm_label, r, ts_wall_s() - t0, ms / n);
        }
    }
    return 0;
}

/* Warms graphs[0..n-1] up (warm_up), then replays them in turn for at least `rounds` rounds and at
 * least ENG_TIMED_S, round r starting at graph r mod n so that no graph always follows the same
 * one, each replay timed with events; median_ms[g] is graph g's median. The second's worth keeps a
 * short step's median off the power limiter's cycle: after a Refresh it slowed Reuse 16 x 32 by up
 * to 25% for a quarter of a second, once a second, and 20 replays (0.3 s) could fall on it. */
static int time_graphs(struct eng *e, const cudaGraphExec_t *graphs, int n, int rounds, float *median_ms,
                       struct ts_err *err)
{
    if (rounds < 1)
        return ts_fail(err, "engine: %d rounds of graph replays", rounds);
    const double t0 = ts_wall_s();
    if (warm_up(e, graphs, n, t0, err))
        return -1;
    size_t cap = (size_t)n * (size_t)rounds;
    float *t = xmalloc(sizeof *t * cap);
    cudaError_t ce = cudaSuccess;
    const double t1 = ts_wall_s();
    int r = 0; /* rounds timed */
    for (; ce == cudaSuccess; r++) {
        bool more = r < rounds || ts_wall_s() - t1 < ENG_TIMED_S;
        if (go_on(e, &more, err)) {
            free(t);
            return -1;
        }
        if (!more)
            break;
        ts_grow((void **)&t, &cap, (size_t)n * (size_t)(r + 1), sizeof *t);
        for (int i = 0; i < n && ce == cudaSuccess; i++) {
            const int g = (r + i) % n;
            float *slot = &t[(size_t)r * n + g];
            ce = cudaEventRecord(e->ev0, e->stream);
            if (ce == cudaSuccess)
                ce = cudaGraphLaunch(graphs[g], e->stream);
            if (ce == cudaSuccess)
                ce = cudaEventRecord(e->ev1, e->stream);
            if (ce == cudaSuccess)
                ce = cudaEventSynchronize(e->ev1);
            if (ce == cudaSuccess)
                ce = cudaEventElapsedTime(slot, e->ev0, e->ev1);
            if (ce == cudaSuccess && e->warm_trace)
                fprintf(e->warm_trace, "\"%s\",timed,%d,%d,%.4f,%.4f\n", e->warm_label, r, g, ts_wall_s() - t0, *slot);
        }
    }
    if (ce == cudaSuccess)
        ce = cudaGetLastError();
    if (ce != cudaSuccess) {
        free(t);
        return ts_fail(err, "engine: timing graph replays failed: %s", cudaGetErrorString(ce));
    }
    /* graph g's times, gathered from the rounds */
    float *tr = xmalloc(sizeof *tr * (size_t)r);
    for (int g = 0; g < n; g++) {
        for (int k = 0; k < r; k++)
            tr[k] = t[(size_t)k * n + g];
        qsort(tr, (size_t)r, sizeof *tr, cmp_float);
        median_ms[g] = tr[r / 2];
    }
    free(tr);
    free(t);
    return 0;
}

int eng_graph_replay(struct eng *e, int n, float *median_ms, struct ts_err *err)
{
    if (!e->have_graph)
        return ts_fail(err, "engine: no captured graph to replay");
    return time_graphs(e, &e->graph, 1, n, median_ms, err);
}

int eng_graph_keep(struct eng *e, int slot, struct ts_err *err)
{
    if (slot < 0 || slot >= ENG_KEPT_GRAPHS)
        return ts_fail(err, "engine: graph slot %d outside 0..%d", slot, ENG_KEPT_GRAPHS - 1);
    if (!e->have_graph)
        return ts_fail(err, "engine: no captured graph to keep");
    if (e->kept[slot])
        CU(cudaGraphExecDestroy(e->kept[slot]));
    e->kept[slot] = e->graph;
    e->have_graph = false;
    return 0;
}

int eng_graph_replay_kept(struct eng *e, int n, int rounds, float *median_ms, struct ts_err *err)
{
    if (n < 1 || n > ENG_KEPT_GRAPHS)
        return ts_fail(err, "engine: %d kept graphs", n);
    for (int g = 0; g < n; g++)
        if (!e->kept[g])
            return ts_fail(err, "engine: no graph kept in slot %d", g);
    return time_graphs(e, e->kept, n, rounds, median_ms, err);
}

void eng_report_gemms(const struct eng *e, FILE *out) { eng_gemm_report(e->gemm, out); }

int eng_poison_workspace(struct eng *e, struct ts_err *err)
{
    (void)err;
    e->poison_next = true;
    return 0;
}

int eng_picks(struct eng *e, int32_t *dst, int64_t n, int *max_probe, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int64_t need = (int64_t)(p->evict ? 1 : e->m.num_layers) * p->num_probe * p->max_probe;
    if (!e->pick_trace)
        return ts_fail(err, "engine: no picked rows kept (eng_opts.trace_selection)");
    if (need > n)
        return ts_fail(err, "engine: %lld picked-row entries do not fit the %lld given", (long long)need, (long long)n);
    *max_probe = p->max_probe;
    if (need)
        CU(cudaMemcpy(dst, e->pick_trace, sizeof(int32_t) * (size_t)need, cudaMemcpyDeviceToHost));
    return 0;
}

int eng_routes(struct eng *e, int32_t *dst, int64_t n, int64_t *stride, struct ts_err *err)
{
    const int64_t per = (int64_t)e->o.max_tokens * e->m.experts_top_k, need = per * e->m.num_layers;
    if (!e->moe_trace)
        return ts_fail(err, "engine: no routing kept (a mixture of experts and eng_opts.trace_selection)");
    if (need > n)
        return ts_fail(err, "engine: %lld routing entries do not fit the %lld given", (long long)need, (long long)n);
    *stride = per;
    CU(cudaMemcpy(dst, e->moe_trace, sizeof(int32_t) * (size_t)need, cudaMemcpyDeviceToHost));
    return 0;
}

int eng_selection(struct eng *e, int32_t *dst, int64_t n, int *max_keep, struct ts_err *err)
{
    const int layers = e->o.run_layers > 0 ? TS_MIN(e->o.run_layers, e->m.num_layers) : e->m.num_layers;
    const int64_t per = selection_ints(e);
    if (!e->sel_trace)
        return ts_fail(err, "engine: selections are kept only with eng_opts.trace_selection");
    if (per * layers > n)
        return ts_fail(err, "engine: the selections need %lld values, room for %lld", (long long)(per * layers),
                       (long long)n);
    if (per > 0)
        CU(cudaMemcpy(dst, e->sel_trace, sizeof *dst * (size_t)(per * layers), cudaMemcpyDeviceToHost));
    *max_keep = e->plan.max_keep;
    return 0;
}

/* n bf16 values of device memory src, widened into dst (what: the rows' name for an error). */
static int read_widened(const bf16_t *src, int64_t n, float *dst, const char *what, struct ts_err *err)
{
    bf16_t *tmp = xmalloc(sizeof *tmp * (size_t)(n ? n : 1));
    const cudaError_t ce = n ? cudaMemcpy(tmp, src, sizeof *tmp * (size_t)n, cudaMemcpyDeviceToHost) : cudaSuccess;
    for (int64_t i = 0; ce == cudaSuccess && i < n; i++)
        dst[i] = eng_bf2f(tmp[i]);
    free(tmp);
    return ce == cudaSuccess ? 0 : ts_fail(err, "engine: reading the %s rows back failed: %s", what, cudaGetErrorString(ce));
}

int eng_last_hidden(struct eng *e, float *dst, struct ts_err *err)
{
    return read_widened(e->hr_last, (int64_t)e->last_R * e->m.hidden, dst, "hidden", err);
}

int eng_soft_rows(struct eng *e, float *dst, int32_t first, int32_t n, struct ts_err *err)
{
    if (first < 0 || n < 0 || (int64_t)first + n > e->o.smooth_rows)
        return ts_fail(err, "engine: soft rows %d..%d: the engine keeps %d", first, first + n - 1, e->o.smooth_rows);
    return read_widened(e->sm_soft[e->sm_cur] + (size_t)first * e->m.hidden, (int64_t)n * e->m.hidden, dst, "soft",
                        err);
}

int eng_allreduce_us(struct eng *e, int64_t n, int reps, double *us, struct ts_err *err)
{
    enum { TRIALS = 5 };
    if (!e->tp || n < 1 || reps < 1)
        return ts_fail(err, "engine: an all-reduce needs tensor parallelism, values and repetitions");
    bf16_t *buf;
    CU(cudaMalloc((void **)&buf, 2 * (size_t)n));
    float t[TRIALS];
    int rc = 0;
    cudaError_t ce = cudaMemsetAsync(buf, 0, 2 * (size_t)n, e->stream);
    for (int i = 0; i < 3 && ce == cudaSuccess && !rc; i++) /* warm-up */
        rc = eng_tp_allreduce(e->tp, buf, n, e->stream, err);
    for (int k = 0; k < TRIALS && ce == cudaSuccess && !rc; k++) { /* reps calls back to back, as a step queues them */
        ce = cudaEventRecord(e->ev0, e->stream);
        for (int i = 0; i < reps && ce == cudaSuccess && !rc; i++)
            rc = eng_tp_allreduce(e->tp, buf, n, e->stream, err);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventRecord(e->ev1, e->stream);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventSynchronize(e->ev1);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventElapsedTime(&t[k], e->ev0, e->ev1);
    }
    cudaFree(buf);
    if (ce != cudaSuccess)
        rc = ts_fail(err, "engine: timing an all-reduce failed: %s", cudaGetErrorString(ce));
    if (!rc) {
        qsort(t, TRIALS, sizeof *t, cmp_float);
        *us = 1e3 * t[TRIALS / 2] / reps;
    }
    return rc ? -1 : 0;
}
