/*
 * eng_internal.h: the engine on the device, inside (the room engine/gpu/). struct eng and what its
 * files share; nothing outside engine/gpu/ and engine/ext/ includes it.
 *
 * The room, a file a job:
 *   eng_create.c   options, sizing (weights, workspace, the KV pool), weights, creation and release;
 *   eng_step.c     a step's preparation (refusals, its plan uploaded), eng_step, the per-op profile;
 *   eng_forward.c  the forward: GEMMs, the layers of each step kind, the FFN and experts, the selection;
 *   eng_head.c     the LM head, the step's outputs and the unmasking decision on the GPU;
 *   eng_graph.c    CUDA graphs: capture, warm-up and timed replays;
 *   eng_moves.c    the KV pool shared with and pulled from another engine (a disaggregated fleet);
 *   eng_arena.c, eng_gemm.c, eng_tp.c: the activation arena, cuBLASLt's GEMMs, tensor parallelism.
 * A mechanism that needs hooks of its own in the step (SparseD's patterns, Elastic-Cache's drift test,
 * d2Cache's rollout, credit decoding, IterSmooth) is an extension, a file of engine/ext/ and a row of
 * its table (eng_ext.h); the forward calls the table at its hooks and never names a mechanism.
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
#ifndef TESSERA_ENG_INTERNAL_H
#define TESSERA_ENG_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "cost_op.h"
#include "eng.h"
#include "eng_act.h"
#include "eng_arena.h"
#include "eng_cuda_check.h"
#include "eng_gemm.h"
#include "eng_plan.h"
#include "eng_weights.h"
#include "kernels.h"

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
#define MAX_PROF_EVENTS 1024
#define ENG_EXT_MAX 16               /* rows of the extension table (eng_ext.h) at most */

struct eng_ext;

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
    int32_t *d_um, *h_um;      /* eng_unmask's groups, masks, commits, counts and taus [6 max_tokens]
                                * (h_um: pinned, an extension's staging too between steps) */
    void *ext[ENG_EXT_MAX];    /* each extension's state, and its row of the table (eng_ext.h) */
    const struct eng_ext *ext_row[ENG_EXT_MAX];
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
static inline bool eng_runs(const struct eng *e, enum cost_op op) { return !(e->skip_ops >> op & 1u); }

/* Marks the end of an op in a profiled run (no-op otherwise). */
static inline void eng_mark(struct eng *e, enum cost_op op)
{
    if (!e->profiling || e->prof_n >= MAX_PROF_EVENTS)
        return;
    cudaEventRecord(e->prof_ev[e->prof_n], e->stream);
    e->prof_op[e->prof_n++] = op;
}

/* Weight tensor k of layer `layer` (-1: a whole-model tensor), or NULL where the model has none. */
static inline const bf16_t *eng_w(const struct eng *e, enum w_kind k, int layer)
{
    const struct eng_tensor *t = eng_layout_find(&e->lay, k, layer);
    return t ? e->w + t->offset : NULL;
}

/* eng_dev.c, what the room's files and the extensions share: bytes of device memory at *p (at least
 * 16); and what an extension whose next step keeps logit rows checks first (what: its name): the
 * engine keeps `have` rows of its `kind` (its eng_opts.room), on one GPU, and the next step has
 * R logit rows, at most max_tokens. */
int eng_dev_alloc(void **p, int64_t bytes, struct ts_err *err);
int eng_ext_rows_check(const struct eng *e, const char *what, const char *kind, int32_t have, int32_t R,
                       struct ts_err *err);
/* What an extension that measures a request's whole sequence checks of an entry (what: its name): its
 * segment seg of the step's plan runs the request's N positions alone, over no cached keys. */
int eng_ext_seg_alone(const struct eng *e, const char *what, int32_t entry, int32_t seg, int32_t N,
                      struct ts_err *err);

/* eng_dev.c: Y[rows, out] (+)= X[rows, in] W^T, W [out, in] row-major, through cuBLASLt
 * (eng_gemm.c); a shape tuned for the first time gets a scratch output outside the plan, freed when
 * the step ends (eng_drop_tune_scratch). eng_run_gemm_kn: Y [rows, out] = X [rows, in] W for W [in,
 * out] (the embedding matrix). */
int eng_run_gemm(struct eng *e, const bf16_t *Wt, const bf16_t *X, bf16_t *Y, int rows, int in, int out, float beta,
                 struct ts_err *err);
int eng_run_gemm_kn(struct eng *e, const bf16_t *W, const bf16_t *X, bf16_t *Y, int rows, int in, int out,
                    struct ts_err *err);
int eng_drop_tune_scratch(struct eng *e, struct ts_err *err);
/* eng_forward.c: the prepared step's forward, its LM head included (eng_head.c's eng_lm_head). */
int eng_forward(struct eng *e, struct ts_err *err);
/* The kept keys of one layer's selections: [num_sel][sets][max_keep] int32. */
int64_t eng_selection_ints(const struct eng *e);

/* eng_head.c: the LM head over the logit rows of x; the step's outputs copied to the host (out: NULL
 * where not wanted). */
int eng_lm_head(struct eng *e, bf16_t *x, struct ts_err *err);
int eng_fetch_outputs(struct eng *e, struct eng_out *out, struct ts_err *err);
/* eng_dev.c: n bf16 values of device memory src, widened into dst (what: the rows' name for an error). */
int eng_read_widened(const bf16_t *src, int64_t n, float *dst, const char *what, struct ts_err *err);

/* eng_step.c: plans and maps the step's activations, then (run = true) reserves its KV pages and
 * uploads its arrays; nothing changes when the step is refused. 1: out of device memory. */
int eng_prepare(struct eng *e, const struct step_desc *sd, bool run, struct ts_err *err);

/* eng_create.c: the activations of a step of shape s planned (kept when the shape repeats); the
 * captured graph and every kept one destroyed (the first error is returned, all are dropped). */
int eng_plan_activations(struct eng *e, const struct og_shape *s, struct ts_err *err);
cudaError_t eng_drop_graphs(struct eng *e);
/* eng_dev.c: qsort's order of floats */
int eng_cmp_float(const void *a, const void *b);

#endif
