/*
 * cost.h: the cost model, cost_step(step_desc) -> seconds with a per-op breakdown.
 * One interface, several back ends (struct cost_ops) in one table (cost.c): `roofline`
 * (cost_roofline.c) and `calibrated` (calib_price.c). An implementation profile says how an implementation runs
 * the forward on the GPU: kernels per op, the cost of issuing one, per-step host overhead and the
 * fraction of peak its kernels reach. The room sim/cost/ holds them with the calibration (calib.h:
 * its data, fit and transfer), the card's clock (clock.h) and the all-reduce's table.
 */
#ifndef TESSERA_COST_H
#define TESSERA_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "cost_op.h"
#include "gpu.h"
#include "model.h"
#include "sampler_mem.h"
#include "step_desc.h"
#include "util.h"

struct impl_profile {
    char name[32];
    double launch_s;        /* issuing one kernel (host side; overlaps GPU work) */
    double host_step_s;     /* per-step host overhead (scheduling, input preparation) */
    double host_seg_s;      /* per-segment host overhead */
    double gemm_eff;        /* fraction of peak FLOP/s the GEMMs reach */
    double attn_eff;        /* fraction of peak FLOP/s attention reaches */
    double mem_eff;         /* fraction of peak bandwidth memory-bound kernels reach */
    int32_t kernels[OP_COUNT]; /* kernels per op instance (per layer for layer ops, per chunk for
                                  the LM head and sampling) */
    int32_t softmax_copy_bytes; /* bytes per logit of the softmax copy it makes (0: none) */
    int64_t reserve_bytes;  /* device memory the implementation keeps for itself (context, workspaces) */
    bool fused_ffn;         /* dense FFNs: the gate/up GEMM computes SwiGLU in its epilogue (the
                             * engine's --ffn fused): no act op, no [T, 2F] gate/up output */
    char calib_base[32];    /* a profile derived from another whose calibration it prices with
                             * (that one's name; "" for its own) */
    char host_ref[256];     /* an eager implementation: the host profile (sim/data/hosts) its launch
                             * and host costs were measured with, which --host scales them from;
                             * "" for one issuing CUDA graphs */
    bool host_line_own;     /* its calibration's host line is its own runtime's, measured on host_ref
                             * (not the eager harness's, which host profiles hold): --host scales that
                             * line by the two hosts' ratio instead of replacing it */
    int32_t calib_extra_bytes; /* bytes a logit it writes and reads beyond its base's sampling
                                * (negative: fewer) */
    double host_factor;     /* a derived profile's host issue time over its base's (0: 1), which
                             * scales the calibration's host line */
    bool select_batched;    /* its KV selection is one batched top-k a layer: the calibration's term for
                             * a selection loop over the sequences (dLLM-Serve's) is not charged */
    int32_t reuse_row_kernels; /* kernels a layer its loop issues for each REUSE segment of a step
                                * beyond the first (a Python loop over the batch's rows), each at its
                                * base's host time a kernel */
    int32_t self_cond;      /* a self-conditioning buffer a running request keeps across its steps (vLLM's
                             * DiffusionGemma): SELF_COND_HIDDEN, a canvas (--block) of fp32 soft
                             * embeddings; SELF_COND_VOCAB, a canvas of fp32 probabilities; 0: none */
    int32_t key_rope_bytes; /* bytes a cached key's element moves each layer a forward, GPU work that grows with
                             * the cached length: a loop whose model code rotates every key it reads again (its
                             * RoPE in fp32 over the whole cache), and concatenates the cache to its rows' K/V,
                             * beyond the rows' own RoPE; 0: none */
    bool rounds;            /* a serving runtime priced by its scheduler's rounds measured whole (rounds.h:
                             * DATADIR/rounds/GPU-MODEL-NAME.csv); where the run's GPU and model have none,
                             * priced as its base */
    int32_t sampler;        /* vLLM's DiffusionGemma sampler (enum sampler_code, sampler_mem.h): a run checks
                             * its largest step against vLLM's memory (sim_sampler); tiled, a request holds
                             * its fp32 logits (SAMPLER_FP32_BYTES a logit) and the copies take a group of
                             * canvases at a time from what is free, so only the logits are reserved, while
                             * softmax_copy_bytes still prices the bytes every copy moves */
};
enum { SELF_COND_NONE = 0, SELF_COND_HIDDEN, SELF_COND_VOCAB };

/* The kernels a layer of a dense model issues under im (its two norms, projections, RoPE, attention,
 * two residual adds and FFN: torch-eager's 55). */
int32_t impl_layer_kernels(const struct impl_profile *im);
/* The host time of im's per-row loop in a step of t's segments, in the unit of host_kernel (its
 * base's host time a kernel): reuse_row_kernels a layer for each REUSE segment beyond the first. */
double impl_row_loop(const struct impl_profile *im, int32_t layers, const struct step_totals *t,
                       double host_kernel);

/* Finds a built-in implementation profile ("torch-eager", "tessera", "tessera-fused"). */
int impl_resolve(const char *name, struct impl_profile *out, struct ts_err *err);
void impl_list(char *buf, size_t len);

/* Bytes a logit moves in credit decoding's fusion (cost_roofline.c). */
#define CREDIT_BYTES 30.0

struct cost_breakdown {
    double op_s[OP_COUNT];
    double total_s;
    double flops; /* the roofline's: the FLOPs of the step's ops (a GPU's share under --tp) */
    double compute_s, memory_s; /* the roofline's: its ops' busy time where compute bounds them, and
                                 * where memory does (their launch floors left out) */
    bool beyond; /* a calibration's or a runtime's rounds priced the step past their measured range
                  * (--extrapolate: the line through their last points) */
};

struct calib;

/* A tensor-parallel all-reduce's time by its bytes (allreduce.c): measured points of one GPU kind
 * and TP degree (log bytes, log seconds), or none (the link's bandwidth). */
#define ALLREDUCE_POINTS 64
#define ALLREDUCE_LATENCY_S 20e-6
struct allreduce_model {
    int32_t tp;
    int n;
    double x[ALLREDUCE_POINTS], y[ALLREDUCE_POINTS];
    double link_bw;
};
/* The measurements of `gpu` at degree tp in the CSV at path (gpu,tp,bytes,us; a missing file is
 * none); -1 with err naming file, line and field on a malformed one. */
int allreduce_load(const char *path, const char *gpu, int32_t tp, double link_bw, struct allreduce_model *out,
                   struct ts_err *err);
double allreduce_s(const struct allreduce_model *m, double bytes);

struct cost_ctx {
    struct model_cfg model;
    struct gpu_spec gpu;
    struct impl_profile impl;
    const struct calib *calib; /* the calibrated back end's fit (calib.h); NULL for roofline */
    bool extrapolate;          /* calibrated: price steps beyond the profiled range */
    int32_t tp;                /* tensor-parallel degree (0 or 1: one GPU); roofline only */
    const struct allreduce_model *ar; /* with tp or ep > 1: the all-reduce's times */
    const double *op_scale;    /* an ablation: each op's time that many times over ([OP_COUNT];
                                * cost_op_scale_parse); NULL: as priced */
    int32_t ep;                /* expert-parallel degree (0 or 1: none): the experts' work split over ep
                                * GPUs, the MoE layers' outputs all-reduced (ar at degree ep) */
};

/* Expert parallelism's share of a step (both back ends): its experts' work is 1/ep of one GPU's, and
 * each MoE layer all-reduces its T x h bf16 output over the ep GPUs, T the rows the layer runs (a
 * step's front layers their front rows); the seconds those all-reduces take (0 without expert
 * parallelism). */
double cost_ep_allreduce_s(const struct cost_ctx *c, const struct step_desc *sd);
/* Tensor parallelism's sampler gather (both back ends): each GPU's max, log-sum-exp and argmax over its
 * share of the vocabulary, three fp32 a logit row, all-gathered over the tp GPUs, as tessera's engine,
 * SGLang's dLLM path (python/sglang/srt/dllm/tp_local_vocab_state.py at 9ecbceb) and vLLM's gather them
 * in place of the rows' full logits; an all-gather of B bytes moves what an all-reduce of B/2 does.
 * Seconds; 0 on one GPU. */
double cost_tp_sample_gather_s(const struct cost_ctx *c, const struct step_desc *sd);

/* The host's part of a step (both back ends; the simulator adds it to the GPU's time): the K/V its
 * segments bring from host memory (host_kv) over the host link, each GPU its share over its own link
 * (sd->host_link_mbs, or the card's host_bw), after the host scored host_scan keys, each a K's bytes
 * (all K/V heads) read at sd->host_scan_mbs. Seconds; 0 for a step without either. */
double cost_host_s(const struct cost_ctx *c, const struct step_desc *sd);
/* A step's time with its host part: the longer of the two where they overlap (sd->host_overlap),
 * else their sum. */
double cost_with_host(const struct step_desc *sd, double gpu_s, double host_s);

/* Host links a policy's offloaded K/V may cross (HERALD's): a name, the bandwidth one way in
 * bytes/s (0: the card's host_bw) and its source. */
struct host_link {
    const char *name;
    double bw;
    const char *source;
};
const struct host_link *host_link_get(int i); /* NULL past the table's end */

struct cost_ops {
    const char *name;
    const char *help;
    /* Prices one step into *seconds; fills *bd when not NULL. Pure function of (ctx, step).
     * Returns -1 with err when the step cannot be priced (outside a calibration's range). */
    int (*step_s)(const struct cost_ctx *ctx, const struct step_desc *sd, double *seconds,
                  struct cost_breakdown *bd, struct ts_err *err);
};

/* The back end named `name` (case-insensitive), from the table in cost.c; an unknown name is refused
 * with the known ones listed. */
int cost_resolve(const char *name, const struct cost_ops **out, struct ts_err *err);
/* The i-th back end of the table, NULL past its end (for listing). */
const struct cost_ops *cost_backend(int i);

/* An ablation of the cost model: "OP=F[,OP=F...]" (ops by cost_op_name, each once, F in (0, 100])
 * into scale[OP_COUNT] (1 for every op it does not name; "" names none). A step's time then counts
 * each named op F times over (tessera sim --op-scale). Refuses, naming the part, a malformed spec. */
int cost_op_scale_parse(const char *spec, double scale[OP_COUNT], struct ts_err *err);
/* Scales bd's ops but the host's by scale[] (cost_op_scale_parse); returns the seconds that adds (a
 * back end's own step time then grows by it before its host is added, which scale[OP_HOST] scales). */
double cost_op_scale_ops(const double scale[OP_COUNT], struct cost_breakdown *bd);

extern const struct cost_ops cost_roofline;
extern const struct cost_ops cost_calibrated;

#endif
