/*
 * eng_safetensors.h: loading engine weights from safetensors checkpoints with Hugging Face tensor
 * names (enum st_names: LLaMA/Qwen names for Dream, SDAR and LLaDA-MoE, LLaDA's, LLaDA2.0's). A path
 * is one .safetensors file or a directory of shards. BF16, F16 and F32 tensors are accepted and
 * converted to bf16 (a router's fp32 expert bias too); q/k/v, gate/up and the experts are
 * concatenated into the engine's fused layout.
 *
 * Every problem (truncated file, bad header, missing tensor, wrong shape or dtype, data outside the
 * file) is refused with a message naming the file and the tensor.
 */
#ifndef TESSERA_ENG_SAFETENSORS_H
#define TESSERA_ENG_SAFETENSORS_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_weights.h"
#include "model.h"
#include "util.h"

struct st_file;

int st_open(const char *path, struct st_file **out, struct ts_err *err);
void st_close(struct st_file *f); /* NULL is safe */
/* Parses one safetensors header held in memory (for tests and fuzzing): validates the JSON, the
 * dtypes, shapes and offsets against data_len bytes of data. */
int st_check_header(const char *name, const char *json, size_t len, uint64_t data_len,
                    struct ts_err *err);
/* Fills dst (t->rows * t->cols bf16) with the engine tensor t of model m. */
int st_load_tensor(struct st_file *f, const struct model_cfg *m, const struct eng_tensor *t,
                   bf16_t *dst, struct ts_err *err);
/* The families of tensor names (the reader tells them by their embedding's name):
 *   ST_NAMES_QWEN    model.embed_tokens, model.layers.N.self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm
 *                    (Qwen3, SDAR, LLaDA-MoE), mlp.{gate,up,down}_proj; a MoE layer's mlp.gate (its
 *                    expert_bias), mlp.experts.E.{gate,up,down}_proj and mlp.shared_experts.*; lm_head
 *                    (or the embedding: tied). LLaMA, Dream, SDAR, LLaDA-MoE.
 *   ST_NAMES_LLADA   model.transformer.wte, blocks.N.{q,k,v}_proj, attn_out, ff_proj, up_proj, ff_out,
 *                    attn_norm, ff_norm, ln_f, ff_out (LLaDA's dense models)
 *   ST_NAMES_LLADA2  model.word_embeddings, model.layers.N.attention.query_key_value (q, k and v rows
 *                    in one), attention.dense, attention.{query,key}_layernorm, and the MoE names above
 *                    (LLaDA2.0) */
enum st_names { ST_NAMES_QWEN = 0, ST_NAMES_LLADA, ST_NAMES_LLADA2 };
/* Writes the engine's weights (laid out by eng_layout_build(m)) as a Hugging Face checkpoint with
 * the names of family fam: q/k/v, gate/up and the experts split back into their tensors where the
 * family holds them apart; tied = true leaves the LM head out (it is the embedding). */
int st_export_hf(const char *path, const struct model_cfg *m, const bf16_t *weights, enum st_names fam, bool tied,
                 struct ts_err *err);
/* Writes a safetensors file of bf16 tensors (names[i], shape rows[i] x cols[i], data[i]); cols 0
 * means a vector. For tests and for exporting the engine's random weights. */
int st_write_bf16(const char *path, int n, const char *const *names, const int64_t *rows,
                  const int64_t *cols, const bf16_t *const *data, struct ts_err *err);

#endif
