/*
 * opgraph.h: the op graph template ("graph registrar" in Mosaic): one forward pass as the list of
 * its activation tensors, each with its size as a function of the step's shapes and its lifetime
 * (the first and last op that touch it). The same template serves the simulator's planners and the
 * engine's arena.
 *
 * The forward is the engine's: the residual stream x is one buffer updated in place (the O and down
 * projections add into it); per layer: norm -> qkv -> (RoPE in place) -> attention -> o_proj; then
 * norm -> for each FFN chunk: gate_up -> act -> down (or, fused, gate_up writing act -> down); the
 * FFN input stays alive across chunks. The
 * head gathers the logit rows (when not all rows need logits), normalises them in place and runs
 * the LM head chunk by chunk, each chunk's logits (and the implementation's softmax copy) dying
 * after its argmax. MoE layers route k copies of each token to experts of width moe_ffn (+ shared
 * experts) and keep fp32 router logits; a chunk of routed copies is gathered into a buffer that
 * then takes their down projections, until the combine adds them, weighted, into x. Weights and the KV cache are not activations.
 *
 * Mosaic's layout (og_shape.layout OG_LAYOUT_MOSAIC) is the layer as Mosaic's own memory plan lays it
 * out (flashserve/Mosaic vllm/v1/worker/graph_builder.py, its LLaDA, Dream and LLaDA-MoE block graphs,
 * one op a tensor): norm -> q, k and v, three tensors -> attention -> o_proj's output, a tensor of its
 * own; the fused add-norm then writes the normed FFN input and the residual x + o as two new tensors
 * (x dies there); the FFN's chunk buffers (gate, up and their product; an MoE layer's routed gate/up,
 * SwiGLU and down outputs) are one set reused by every chunk, alive across the chunk loop with the
 * FFN's output [T, h]; the residual plus that output is the next layer's x. The head is the engine's.
 */
#ifndef TESSERA_OPGRAPH_H
#define TESSERA_OPGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

enum og_layout { OG_LAYOUT_ENGINE = 0, OG_LAYOUT_MOSAIC, OG_LAYOUT_COUNT };

struct og_shape {
    int64_t T;                  /* packed query tokens */
    int64_t R;                  /* logit rows */
    int32_t logit_chunk_rows;   /* 0 = monolithic */
    int32_t ffn_chunks;         /* >= 1 */
    int32_t softmax_copy_bytes; /* per logit: 0, 4 (fp32 copy) or 8 */
    bool fused_ffn;             /* dense layers' gate/up GEMM writes SwiGLU's output itself (the
                                 * engine's fused FFN): no gate_up tensor, act alive from that GEMM
                                 * to the down projection */
    int32_t tp;                 /* tensor parallelism over tp GPUs (0 or 1: one): a GPU's share of
                                 * the tensors split over heads (qkv, attention), FFN columns
                                 * (gate/up, act; each expert's) and the vocabulary (logits and
                                 * their copy); the residual stream, norms, gathers and the router
                                 * stay whole on each */
    int32_t layout;             /* enum og_layout: the engine's layer (0) or Mosaic's */
};

struct og_tensor {
    int64_t bytes;
    int32_t first, last; /* op indices, inclusive */
    int16_t layer;       /* -1: head or whole-graph */
    uint8_t kind;        /* enum og_kind */
};

enum og_kind { OG_X = 0, OG_NORM, OG_QKV, OG_ATTN, OG_ROUTER, OG_GATE_UP, OG_ACT, OG_GATHER,
               OG_LOGITS, OG_SOFTMAX, OG_O_PROJ, OG_ADD_RESIDUAL, OG_FFN_OUT, OG_KIND_COUNT };

struct opgraph {
    struct og_tensor *t; /* [n], owned */
    int32_t n, num_ops;
    size_t cap;
};

const char *og_kind_name(enum og_kind k);
const char *og_layout_name(enum og_layout l);
/* The layout of that name ("engine" or "mosaic"), or -1. */
int og_layout_find(const char *name);
/* Logit rows of a step of T tokens with mask-only logits for mask_ratio of them (< 0: every row). */
int64_t og_masked_rows(double mask_ratio, int64_t T);
/* Instantiates the template for a model and a step shape (the graph is cleared first). */
void opgraph_build(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s);
/* The same graph with one layer of each run of layers of a kind (a model's dense layers come
 * first, then its MoE ones: the first of each), in the engine's layout only. There the residual stream x is one tensor through every layer and each
 * other tensor of a layer dies inside it, so the tensors alive with any of a layer's tensors are x
 * and that layer's own: a planner that places each tensor by the tensors alive with it (first-fit,
 * greedy-size) places every layer of a kind alike, and plans this graph to the full graph's bytes
 * (its theoretical and part peaks are the full graph's too). */
void opgraph_build_compact(struct opgraph *g, const struct model_cfg *m, const struct og_shape *s);
void opgraph_free(struct opgraph *g);
/* The theoretical peak: the largest sum of live tensor bytes at any op. */
int64_t opgraph_peak(const struct opgraph *g);
/* Live bytes averaged over the ops (peak / average is the peak-to-average ratio). */
double opgraph_average(const struct opgraph *g);
/* The op index where the peak is reached, and the kind of the largest tensor alive there. */
int32_t opgraph_peak_op(const struct opgraph *g, enum og_kind *largest);
/* The peak of each part of the forward as Mosaic's chunk search weighs them (flashserve/Mosaic
 * diffusion_tools/online_searcher.py over graph_builder.py's timeline): at each op, what it writes and
 * what a later op still reads (not what it reads last); an op belongs to the LM head's logits, the
 * FFN (its buffers, output and router) or the fixed rest by what it writes, an op that writes
 * nothing to the part of the op before it. */
void opgraph_part_peaks(const struct opgraph *g, int64_t *fixed, int64_t *ffn, int64_t *logits);

#endif
