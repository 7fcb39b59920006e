/*
 * eng_safetensors.h: loading engine weights from safetensors checkpoints with Hugging Face tensor
 * names: LLaMA/Qwen names (model.layers.N.self_attn.q_proj.weight, ..., Dream and SDAR) and LLaDA
 * names (model.transformer.blocks.N.q_proj.weight, ff_proj, up_proj, ff_out, ...). A path is one
 * .safetensors file or a directory of shards. BF16, F16 and F32 tensors are accepted and converted
 * to bf16; q/k/v and gate/up are concatenated into the engine's fused layout.
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
/* Writes the engine's weights (laid out by eng_layout_build(m)) as a Hugging Face checkpoint: q/k/v
 * and gate/up split back into their HF tensors, with LLaDA names (llada = true) or LLaMA/Qwen names;
 * tied = true leaves the LM head out (it is the embedding). */
int st_export_hf(const char *path, const struct model_cfg *m, const bf16_t *weights, bool llada, bool tied,
                 struct ts_err *err);
/* Writes a safetensors file of bf16 tensors (names[i], shape rows[i] x cols[i], data[i]); cols 0
 * means a vector. For tests and for exporting the engine's random weights. */
int st_write_bf16(const char *path, int n, const char *const *names, const int64_t *rows,
                  const int64_t *cols, const bf16_t *const *data, struct ts_err *err);

#endif
