/*
 * mem.h: memory accounting (SPEC section 6, first part; the activation planners, planner.h, refine it).
 *
 * GPU memory = weights + KV pool + activation workspace + framework reserve. The activation peak of
 * a step is estimated from the shapes of its op sequence: for every op, the tensors alive while it
 * runs (the residual stream, its inputs and outputs, inputs of chunked loops kept across chunks),
 * and the largest such sum over the forward. Logits are monolithic (rows x V in bf16, plus the
 * baseline's softmax copy) or decomposed into chunks of max_num_logits rows, of which only one
 * exists at a time.
 */
#ifndef TESSERA_MEM_H
#define TESSERA_MEM_H

#include <stdint.h>

#include "model.h"
#include "step_desc.h"

struct act_knobs {
    int32_t logit_chunk_rows; /* 0 = monolithic */
    int32_t ffn_chunks;       /* >= 1 */
    int32_t softmax_copy_bytes; /* bytes per logit of the baseline's softmax copy: 0, 4 (fp32), 8 */
    bool fused_ffn;           /* dense FFNs fused (og_shape.fused_ffn): no gate/up output */
    int32_t layout;           /* enum og_layout: the engine's layer or Mosaic's (opgraph.h) */
};

/* Activation peak in bytes of a forward over q_tokens packed tokens with logit_rows logit rows. */
int64_t mem_act_peak(const struct model_cfg *m, int64_t q_tokens, int64_t logit_rows,
                     const struct act_knobs *k);
/* The same for a packed step (its knobs and totals), with the implementation's softmax copy and
 * FFN (fused: act_knobs.fused_ffn), in a layout (act_knobs.layout). */
int64_t mem_act_peak_step(const struct model_cfg *m, const struct step_desc *sd,
                          int32_t softmax_copy_bytes, bool fused_ffn, int32_t layout);
/* The peak of each phase of the forward: attention block, FFN block (chunked), LM head. */
struct act_parts {
    int64_t attention, ffn, head;
};
void mem_act_parts(const struct model_cfg *m, int64_t q_tokens, int64_t logit_rows,
                   const struct act_knobs *k, struct act_parts *out);
/* Bytes of the largest logits buffer alive (one chunk, or all rows when monolithic). */
int64_t mem_logits_bytes(const struct model_cfg *m, int64_t logit_rows, const struct act_knobs *k);

#endif
