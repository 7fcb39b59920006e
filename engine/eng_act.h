/*
 * eng_act.h: the engine's activations laid out by a planner. The engine
 * instantiates the simulator's op-graph template (sim/opgraph.h) for a step's shapes, runs a planner
 * over it and reads back, for every buffer its forward touches, the offset the plan gave it inside
 * one arena. Pure host code, tested on the CPU; engine/gpu/eng_step.c maps the arena in CUDA virtual memory.
 *
 * Buffers by op-graph tensor (dense models):
 *   x                  the residual stream, alive for the whole step
 *   norm1[L]           rmsnorm(x), read by the QKV GEMM
 *   qkv[L]             q, k, v rows; RoPE in place; read by attention (and, in the stateless
 *                      engine, the K/V attention reads)
 *   att[L]             attention output, read by the O projection (which adds into x)
 *   norm2[L]           rmsnorm(x), the FFN input, alive across the FFN chunks
 *   gu[L][c], act[L][c] per FFN chunk: gate|up rows (-1 where the shape's FFN is fused) and the
 *   SwiGLU output (down adds into x)
 *   head               the logit rows' hidden states: gathered when fewer rows than tokens need
 *                      logits, else x itself (normalised in place)
 *   logits[c], softmax[c] per logit chunk (softmax: the fp32 copy PyTorch makes; -1 when none)
 *   router[L], mgather/mgu/mact[L][c] a MoE layer's (opgraph.h); its shared experts use gu and act
 * Sizes are rounded up to 256 bytes so that every buffer is aligned for vector loads and cuBLASLt.
 */
#ifndef TESSERA_ENG_ACT_H
#define TESSERA_ENG_ACT_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "opgraph.h"
#include "planner.h"
#include "util.h"

#define ENG_ACT_ALIGN 256

struct eng_act {
    struct og_shape shape;
    struct opgraph g;
    struct plan plan;
    int32_t layers;
    int32_t ffn_rows, ffn_chunks;     /* rows per FFN chunk, and chunks */
    int32_t logit_rows, logit_chunks; /* rows per logit chunk, and chunks */
    bool head_gathered;
    int64_t x, head;                  /* offsets in the arena */
    int64_t *norm1, *qkv, *att, *norm2; /* [layers] */
    int64_t *gu, *act;                /* [layers * ffn_chunks] */
    int64_t *logits, *softmax;        /* [logit_chunks] */
    /* MoE layers: the router's logits [layers] (-1 in a dense layer), and per chunk of routed copies
     * [layers * moe_chunks] the gathered rows (then their down outputs), gate|up and SwiGLU's
     * output; the shared experts take gu and act as a dense FFN would */
    int32_t moe_rows, moe_chunks;     /* routed copies per chunk, and chunks */
    int64_t *router, *mgather, *mgu, *mact;
    size_t cap_layers, cap_ffn, cap_logits, cap_moe, cap_layers_router;
};

/* Plans the activations of a step of shape s (s->logit_chunk_rows 0 = one chunk) with planner p.
 * The previous layout in a is replaced; on failure a holds no plan. */
int eng_act_plan(struct eng_act *a, const struct model_cfg *m, const struct og_shape *s,
                 const struct planner_ops *p, const struct planner_opts *po, struct ts_err *err);
/* Whether a holds the plan of exactly this shape (a step of the same shape reuses it). */
bool eng_act_same(const struct eng_act *a, const struct og_shape *s);
void eng_act_free(struct eng_act *a);

#endif
