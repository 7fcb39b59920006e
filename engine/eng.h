/*
 * eng.h: the CUDA engine. It executes step descriptions (step_desc.h) at full model size: packed
 * GEMMs through cuBLASLt (tuned per shape), the varlen paged attention kernel, chunked LM head with fused
 * argmax/confidence. Device memory is sized explicitly at creation: weights, the activation
 * budget (for max_tokens packed rows and one logits chunk), cuBLAS workspace and the KV pool,
 * which takes what --mem-limit leaves. A step that does not fit is refused before any launch.
 *
 * Activations: each step's buffers are placed by a planner (planner.h) over the op-graph template
 * (eng_act.h) inside one range of CUDA virtual memory (eng_arena.h), of which only the planned
 * peak is backed by physical memory.
 *
 * The handle is opaque; every CUDA and cuBLAS call is checked and reported through ts_err.
 */
#ifndef TESSERA_ENG_H
#define TESSERA_ENG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "eng_plan.h"
#include "eng_unmask.h"
#include "eng_choices.h"
#include "eng_ext_decl.h"
#include "model.h"
#include "step_desc.h"
#include "util.h"

struct eng_opts {
    int64_t mem_limit;     /* bytes the engine may use in all; 0 = the device's free memory */
    /* The activation workspace is sized for the largest step: max_tokens packed query tokens, LM-head
     * chunks of logit_chunk_rows rows, its FFN in ffn_chunks chunks. Each step then runs as its own
     * step_desc says (its logit_chunk_rows, ffn_chunks and attn_block); one whose plan outgrows
     * the workspace is refused. */
    int32_t max_tokens;       /* packed query tokens per step */
    int32_t logit_chunk_rows; /* rows of the largest LM-head chunk */
    int32_t ffn_chunks;       /* the fewest FFN token chunks */
    int32_t page_tokens;      /* KV page size */
    int64_t kv_tokens;     /* KV pool size in tokens; 0 = everything mem_limit leaves */
    uint64_t seed;         /* random weights and token ids */
    const char *weights;   /* safetensors file, or NULL for random weights */
    const char *planner;   /* activation planner (planner.h); NULL = first-fit */
    int32_t softmax_copy;  /* 0, or 4: also write each logit chunk's fp32 copy, as PyTorch does */
    bool stateless;        /* no KV pool: K/V are read in place from the step's qkv rows, so only
                            * steps without a cache run (vanilla; memory probes) */
    bool hard_limit;       /* make mem_limit real: the rest of the device is held by a ballast */
    int32_t run_layers;    /* layers executed (0 = all); the plan and the weights stay the model's */
    bool no_tune;          /* never time GEMM algorithms (they need scratch memory outside the plan) */
    const char *gemm_cache; /* GEMM algorithm cache file (eng_algos.h), or NULL (eng_choices) */
    int32_t gemm_algos;    /* cuBLASLt's candidates a new GEMM shape's tuning times, 1 to 128; 0: 16
                            * (eng_choices) */
    bool portable;         /* the kernels of a GPU before Hopper, whatever the device (k_portable:
                            * the kernels' setting is the process's, so engines alive together
                            * must agree on it; eng_choices) */
    int32_t attention;     /* k_attn_args.impl: 0 the mma.sync attention kernel, 1 the wgmma kernel
                            * where it runs, 2 (the default) each segment on the one its query length
                            * calls for (k_attn_args.impl); --attention mma, wgmma or auto
                            * (eng_choices) */
    int32_t ffn;           /* the FFN's gate/up GEMM and SwiGLU: 0 (the default) split, a cuBLASLt
                            * GEMM writing [rows, 2F] and k_swiglu reading it back; 1 fused,
                            * k_gemm_swiglu (SwiGLU in the GEMM's epilogue) where it runs (an
                            * sm_90a image, hidden a multiple of 64, ffn of 128), split elsewhere;
                            * 2 auto, fused where it runs and k_gemm_swiglu_auto says it pays for
                            * a full FFN chunk's rows (every chunk of the step then fuses, its plan
                            * without the gate|up buffer: og_shape.fused_ffn). The profile times a
                            * fused FFN as its gate_up op. --ffn split, fused or auto */
    int32_t routing;       /* a mixture of experts' choice of experts: 0 auto (the default), balanced
                            * on random weights and the router's on a checkpoint; 1 the router's
                            * top k; 2 balanced: each row's k experts drawn uniformly by a hash of
                            * its row and layer (k_moe_route), the work a load-balanced router
                            * gives, whatever the weights. --routing auto, router or
                            * balanced */
    int32_t select_at;     /* where a step's sparse selections run: 0 (the default) after its last
                            * layer, from each layer's mean queries kept after its attention; 1 after
                            * each layer's attention (for comparison). --select-at end or layer */
    bool trace_selection;  /* keep every layer's kept keys of a step's sparse selections, for
                            * eng_selection, and its picked rows, for eng_picks (checks: the
                            * reference then keeps and picks the same) */
    struct eng_ext_room room[EXT_ENGINE_IDS]; /* the room each extension keeps (eng_ext_decl.h; its
                            * entry points in engine/ext/ext_NAME.h): requests x positions, 0 requests
                            * (the default) off */
    struct eng_ext_params ext; /* what the policy's parameters set in them (its ext_params: SparseD's
                            * block and select) */
    bool top2_gap;         /* each logit row's gap between its two largest logits too (eng_out.gap:
                            * Prophet's early-commit test); one GPU */
    bool feature_cache;    /* the pool also holds each token's attention and FFN outputs per layer
                            * (dLLM-Cache: steps with cache_outputs, front shapes, probes or carried
                            * rows run only then; a pool token takes 2 hidden rows more a layer) */
    bool input_cache;      /* the pool also holds each token's input to every layer (Elastic-Cache:
                            * steps with cache_inputs run only then; a pool token takes a hidden row
                            * more a layer) */
    /* Tensor parallelism (eng_tp.h): this engine is rank tp_rank of tp_size (1: the whole model on
     * one GPU), on GPU tp_rank, in the communicator of NCCL's unique id tp_id (ENG_TP_ID_BYTES). It
     * holds its shares of the weights (eng_weights.h) and of the KV pool (its K/V heads), and
     * all-reduces the row-parallel outputs (o_proj, the FFN or the experts' down) over the ranks; the
     * LM head's vocabulary shares are merged into one argmax and confidence per row. Every rank
     * runs the same steps; a sparse selection per K/V head selects each rank's heads on their own;
     * steps with one kept set for all heads, a feature cache or eviction are refused. */
    int32_t tp_size, tp_rank;
    const unsigned char *tp_id;
    double warm_s;         /* graph replays (eng_graph_replay*) warm up for at least this long before
                            * any is timed, so that a step is timed at the clock its own repetition
                            * holds under the power limit (default ENG_WARM_S) */
    double idle_s;         /* > 0: the GPU is left idle this long before each warm-up begins, so that
                            * its trace starts from a cool card (the clock's rise under the power
                            * limit: tessera calib clock) */
};

#define ENG_WARM_S 2.0
/* graph replays are timed for at least this long, and at least the rounds asked for */
#define ENG_TIMED_S 1.0

/* The defaults, with the choices of a command line (eng_choices.h) where c is not NULL (else auto
 * attention, a split FFN, auto routing, selections at the end, the device's kernels, 16 GEMM
 * candidates, no GEMM cache). */
void eng_opts_defaults(struct eng_opts *o, const struct eng_choices *c);

struct eng_mem {
    int64_t weights, workspace, blas_workspace, kv_pool, total; /* workspace: activation budget */
    int64_t kv_pool_tokens;
    int64_t arena_mapped;   /* activation memory mapped now (the largest plan so far) */
    int64_t ballast;        /* hard_limit: device memory held back */
};

/* The activation plan of the last step. */
struct eng_act_info {
    const char *planner;
    int64_t planned;     /* the plan's arena (its peak; caching: reserved segments) */
    int64_t theoretical; /* the op graph's theoretical peak */
    int64_t mapped;      /* physical memory mapped in the arena */
    int32_t logit_rows, ffn_chunks, layers_run, tensors;
};

struct eng_out {
    int32_t R;      /* logit rows */
    int32_t *tok;   /* [R] argmax (host memory owned by the engine, valid until the next step) */
    float *maxv;    /* [R] */
    float *conf;    /* [R] */
    float *gap;     /* [R] the two largest logits' gap (eng_opts.top2_gap), else NULL */
};

struct eng;

int eng_create(const struct model_cfg *m, const struct eng_opts *o, struct eng **out,
               struct ts_err *err);
void eng_destroy(struct eng *e); /* NULL is safe */
void eng_mem_info(const struct eng *e, struct eng_mem *out);
const char *eng_device_name(const struct eng *e);

/* Executes one step as sd says and waits for it: its segments, and its knobs (the LM head in chunks of
 * sd->logit_chunk_rows rows, 0: one chunk of every logit row; the FFN in sd->ffn_chunks token chunks;
 * block-causal attention over blocks of sd->attn_block tokens where > 0; logits only for each
 * segment's logit_rows rows, which under mask_only count the masked rows alone). *ms (if not NULL)
 * gets its GPU time from CUDA events. A step whose activations outgrow the workspace, or beyond
 * max_tokens, is refused before any launch. */
int eng_step(struct eng *e, const struct step_desc *sd, struct eng_out *out, float *ms,
             struct ts_err *err);
/* Frees a finished request's KV pages and what the extensions keep for it. (A step's selecting
 * requests keep the pages of their kept keys alone once eng_step returns.) */
void eng_release(struct eng *e, int32_t req_id);
/* The KV pool's free pages now. */
int32_t eng_pool_free_pages(const struct eng *e);

/* A request's K/V moved between engines (a disaggregated fleet's move, sim/fleet/fleet.c). The sender sets
 * its pages aside under a ticket (eng_hold; eng_held gives their ids); the receiver copies them from
 * the sender's pool into free pages of its own under a ticket of its own (eng_pull, the time in *ms),
 * then gives those to the request's id there (eng_adopt), and the sender frees its own (eng_drop).
 * The pool is the K and V pools alone: a move carries no feature or input cache. A pool in another
 * process is reached through its handle (eng_pool_export there, eng_pool_import here): CUDA IPC, the
 * copy then a read of the peer GPU's memory over the link between them. */
struct eng_pool {
    void *k, *v;   /* device memory, [layers][slots][kv_row] each */
    int64_t slots; /* pages times page_tokens */
    int32_t page_tokens, layers, kv_row;
};
#define ENG_POOL_HANDLE 64 /* CUDA_IPC_HANDLE_SIZE */
struct eng_pool_handle {
    unsigned char k[ENG_POOL_HANDLE], v[ENG_POOL_HANDLE];
    int64_t slots;
    int32_t page_tokens, layers, kv_row;
};
void eng_pool_of(const struct eng *e, struct eng_pool *out);
int eng_pool_export(const struct eng *e, struct eng_pool_handle *out, struct ts_err *err);
int eng_pool_import(const struct eng_pool_handle *h, struct eng_pool *out, struct ts_err *err);
void eng_pool_close(struct eng_pool *p); /* an imported pool */
int eng_hold(struct eng *e, int32_t req_id, int64_t ticket, struct ts_err *err);
/* The pages set aside under ticket (held by eng_hold or pulled by eng_pull): -1 where none are. */
int eng_held(const struct eng *e, int64_t ticket, const int32_t **pages, int32_t *n);
int eng_pull(struct eng *e, const struct eng_pool *src, const int32_t *pages, int32_t n, int64_t ticket, float *ms,
             struct ts_err *err);
int eng_adopt(struct eng *e, int64_t ticket, int32_t req_id, struct ts_err *err);
void eng_drop(struct eng *e, int64_t ticket);

/* What the engine knows of the requests. The steps that follow embed t's tokens where it has them (a
 * request's real tokens, the mask token at its undecided positions; t->id NULL: none) instead of the
 * hash of eng_opts.seed, and run a segment's query rows at t's q_pos where it gives one
 * (eng_plan_set_ids); the extensions read the prompts' lengths it gives. NULL: the hash everywhere,
 * no lengths. */
void eng_set_tokens(struct eng *e, const struct eng_tokens *t);
/* The unmasking decision of the last step on the GPU (k_unmask; eng_unmask.h has the rules): n
 * blocks of its logit rows, block g rows groups[2g] .. groups[2g] + groups[2g + 1] - 1, and each
 * logit row's masked flag (nonzero: still masked), by u (tau, NULL: u's threshold in every block;
 * else block g's tau[g]). commit[row] gets the token the rule commits at that row, or -1; count[g] (NULL: not wanted) how many block g commits; *ms (NULL: not wanted)
 * the kernel's GPU time. */
int eng_unmask(struct eng *e, const struct unmask_rule *u, const int32_t *groups, int32_t n, const int32_t *masked,
               const float *tau, int32_t *commit, int32_t *count, float *ms, struct ts_err *err);
/* Captures one step into a CUDA graph (executing it once); eng_graph_replay() then reruns the
 * identical step at least n times and for at least ENG_TIMED_S and gives the median milliseconds
 * per step, after warm-up replays for at least eng_opts.warm_s (the step is timed at the clock its
 * own repetition holds under a power limit). */
int eng_graph_capture(struct eng *e, const struct step_desc *sd, struct ts_err *err);
int eng_graph_replay(struct eng *e, int n, float *median_ms, struct ts_err *err);
/* Variants of a step replayed side by side: eng_graph_keep() moves the graph just captured into slot
 * (< ENG_KEPT_GRAPHS; a graph already there is dropped); eng_graph_replay_kept() replays slots
 * 0..n-1 in turn for at least `rounds` rounds and ENG_TIMED_S (each round starting one graph
 * later, after warm-up rounds for at least eng_opts.warm_s) and gives each slot's median
 * milliseconds, so that no variant is timed on a card the others have left hotter or cooler. Kept
 * graphs reuse the activation arena's mapping, which only grows while they live
 * (eng_release_activations drops every graph with it). */
#define ENG_KEPT_GRAPHS 8
int eng_graph_keep(struct eng *e, int slot, struct ts_err *err);
int eng_graph_replay_kept(struct eng *e, int n, int rounds, float *median_ms, struct ts_err *err);

/* The rows the last step's value checks picked (eng_opts.trace_selection and feature_cache):
 * [layers][probing segments][max_probe] int32, each segment's picked rows as indices into its probe
 * rows, ascending, into dst (room for n); *max_probe gets the row length. */
int eng_picks(struct eng *e, int32_t *dst, int64_t n, int *max_probe, struct ts_err *err);
/* Every MoE layer's expert choices of the last step (eng_opts.trace_selection, a mixture of experts):
 * layer L's row t's j-th choice at dst[L * stride + t k + j] (room for n); *stride gets the layer's
 * stride. Dense layers' entries are unset. */
int eng_routes(struct eng *e, int32_t *dst, int64_t n, int64_t *stride, struct ts_err *err);
/* Copies the final normalised hidden rows of the last step ([R, hidden] as fp32) to dst. */
int eng_last_hidden(struct eng *e, float *dst, struct ts_err *err);
/* The kept keys of the last step's sparse selections (eng_opts.trace_selection on):
 * [layers][selecting segments][sets][max_keep] int32 into dst (room for n), sets = the K/V heads
 * for per-head selection, else 1; *max_keep gets the row length. */
int eng_selection(struct eng *e, int32_t *dst, int64_t n, int *max_keep, struct ts_err *err);
/* Per-op GPU time of one eager step, measured with an event between consecutive ops; op_ms is
 * indexed by enum cost_op (cost.h), the categories the cost model prices. */
int eng_step_profile(struct eng *e, const struct step_desc *sd, double *op_ms, float *total_ms,
                     struct ts_err *err);
/* Prints the GEMM shapes tuned so far with their times (eng_gemm.c). */
void eng_report_gemms(const struct eng *e, FILE *out);
/* Fills the next step's activations with NaN once they are mapped (checks that every output is
 * written). */
int eng_poison_workspace(struct eng *e, struct ts_err *err);
/* Planned activation bytes of a step of sd's shapes (to set beside the simulator's estimate). */
int64_t eng_step_workspace_bytes(struct eng *e, const struct step_desc *sd);
void eng_act_info(const struct eng *e, struct eng_act_info *out);
/* Leaves the ops in `ops` (bits 1 << enum cost_op) out of the steps that follow, for timing what
 * remains (engine_bench: the linear layers alone, or all but them); their outputs are then stale,
 * so the steps' results mean nothing. The final norm (and gather) before the LM head runs whenever
 * the LM head does: it keeps what repeated replays feed back through the reused buffers bounded.
 * 0 (the default) runs every op. */
void eng_set_skip_ops(struct eng *e, uint32_t ops);
/* Writes one CSV line per warm-up round and per timed replay of the graph replays that follow to
 * f (NULL: none): label, warm or timed, round, graph (-1 for a warm-up round: its time over its
 * graphs), seconds since the warm-up began, milliseconds a replay; for watching the clock settle
 * under the power limit. */
void eng_set_warm_trace(struct eng *e, FILE *f, const char *label);
/* The ops that launch GEMMs: the linear layers and the LM head (engine_bench's "alone"). */
uint32_t eng_linear_ops(void);
/* The layers the steps that follow execute (eng_opts.run_layers; 0: all). */
void eng_set_run_layers(struct eng *e, int32_t layers);
/* The attention kernel of the steps that follow (eng_opts.attention). */
void eng_set_attention(struct eng *e, int32_t impl);
/* The FFN of the steps that follow (eng_opts.ffn). */
void eng_set_ffn(struct eng *e, int32_t impl);
/* Whether the engine's experts are chosen by balanced routing (eng_opts.routing resolved). */
bool eng_routes_balanced(const struct eng *e);
/* Whether the fused FFN kernel runs on this device for this model. */
bool eng_ffn_fused_runs(const struct eng *e);
/* Whether an FFN chunk of `rows` rows runs fused under the current eng_opts.ffn. */
bool eng_ffn_fuses(const struct eng *e, int rows);
/* Plans sd's activations and maps them, without running: 0 when they fit, 1 when the device is
 * out of memory (err says how much was asked), -1 on another error. */
int eng_prepare_step(struct eng *e, const struct step_desc *sd, struct ts_err *err);
/* Unmaps the whole activation arena (memory probes start each size from nothing). */
int eng_release_activations(struct eng *e, struct ts_err *err);
/* Tensor parallelism: the microseconds of one all-reduce of n bf16 values over the ranks as a step
 * queues them: reps calls back to back between two events, the median of five such runs per call. */
int eng_allreduce_us(struct eng *e, int64_t n, int reps, double *us, struct ts_err *err);
/* Device memory this process uses now: total - free - ballast (cudaMemGetInfo). */
int eng_device_used(const struct eng *e, int64_t *bytes, struct ts_err *err);

#endif
