/*
 * sampler_mem.h: the memory vLLM's DiffusionGemma sampler takes at a step, and whether the step runs
 * out of it (vllm/model_executor/models/diffusion_gemma.py; tessera mem sampler).
 *
 * A step of n decoding canvases of CL positions has R = n CL logit rows over the vocabulary V. The
 * LM head writes them in bf16 and the softcap copies them to fp32 (2 + 4 bytes a logit, the bf16
 * dropped once the copy is made); the sampler's compiled step then allocates `copies` fp32 tensors
 * of its group's logits beyond them (3, measured: the record dgemma-sampler-h200). Before PR #45672
 * (as released in 0.33.0) the group is every canvas; after it (the request-tiled loop, 00c25c8) the
 * step runs in groups of g = max(1, min(n, floor(0.5 free / (CL V 4 10)))), free being what the
 * device reports free (mem_get_info) once the fp32 logits are held.
 *
 * What the sampler can take: vLLM's budget (--gpu-memory-utilization U of the device) holds the
 * weights, the activations of its profile run (a forward of max-num-batched-tokens with one logit
 * row a sequence: the sampler is not run there, its dummy batch drafting nothing) and the KV pool,
 * which takes the rest. At a step the profile run's activation blocks are free in PyTorch's cache
 * (slack), and outside the budget (1 - U) of the device less what neither holds (outside: the CUDA
 * context, cuBLAS's workspaces, the CUDA graphs' pool) is free on the device. The step runs out of
 * memory where its peak (the bf16 and fp32 logits at the softcap, or the fp32 logits and the
 * sampler's copies) exceeds the two.
 */
#ifndef TESSERA_SAMPLER_MEM_H
#define TESSERA_SAMPLER_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define SAMPLER_COPIES 3          /* fp32 copies of its group's logits the compiled step allocates */
#define SAMPLER_TILE_SHARE 0.5    /* vLLM's budget of what is free for a tile */
#define SAMPLER_TILE_COPIES 10    /* the fp32 copies vLLM assumes when it sizes a tile */
#define SAMPLER_FP32_BYTES 4      /* the softcapped fp32 logits, every canvas row's, tiled or not */
/* vLLM's defaults and tessera's assumptions where a run does not say: --gpu-memory-utilization, its
 * --max-num-batched-tokens (the profile run's forward), and what is held outside the budget (the CUDA
 * context, cuBLAS's workspaces, the CUDA graphs' pool: an assumption, swept in sim/docs/memory.md) */
#define SAMPLER_UTIL 0.9
#define SAMPLER_BATCHED 8192
#define SAMPLER_OUTSIDE_GIB 1.0
/* vLLM's server defaults where the run sets no cap (EngineArgs.get_batch_defaults): a card of 70 GiB or
 * more, not an A100, 1,024 sequences and 8,192 batched tokens; any other, 256 and 2,048. */
void sampler_vllm_defaults(int64_t device_bytes, const char *gpu_name, int32_t *max_num_seqs, int64_t *batched);

/* Which sampler an implementation runs: none of vLLM's, its whole one (0.33.0: every canvas at once),
 * or the request-tiled one (PR #45672). */
enum sampler_code { SAMPLER_NONE = 0, SAMPLER_WHOLE, SAMPLER_TILED };

struct sampler_setup {
    int64_t device_bytes;  /* the device's memory */
    double util;           /* --gpu-memory-utilization */
    int64_t outside_bytes; /* held outside vLLM's budget: context, workspaces, CUDA graphs */
    int64_t slack_bytes;   /* the profile run's activations, free in PyTorch's cache at a step */
    int32_t canvas;        /* CL */
    int64_t vocab;         /* V */
    int32_t copies;        /* SAMPLER_COPIES unless swept */
    bool tiled;            /* PR #45672's request-tiled loop */
};

struct sampler_step {
    int32_t canvases, group;
    int64_t logit_bytes;     /* the fp32 logits, 4 R V */
    int64_t transient_bytes; /* the sampler's copies of its group's logits */
    int64_t need_bytes;      /* the step's peak beyond what the budget keeps for other use */
    int64_t free_bytes;      /* what the device reports free when the sampler sizes its tile */
    int64_t avail_bytes;     /* slack and what is free outside the budget */
    bool oom;
};

struct model_cfg;
/* The setup of model m on a device of device_bytes at utilization util, outside_gib held outside the
 * budget, a profile run of max_batched tokens with max_num_seqs logit rows (its activations as
 * PyTorch's caching allocator holds them: the slack), canvases of canvas rows, copies, tiled or whole.
 * -1 with err where the profile run cannot be planned. */
int sampler_setup_make(const struct model_cfg *m, int64_t device_bytes, double util, double outside_gib,
                       int64_t max_batched, int32_t max_num_seqs, int32_t canvas, int32_t copies, bool tiled,
                       struct sampler_setup *out, struct ts_err *err);
/* The sampler's memory at a step of n canvases under setup su into *out. */
void sampler_mem_at(const struct sampler_setup *su, int32_t n, struct sampler_step *out);
/* vLLM's KV pool under setup su with weight_bytes of weights (what its budget holds after them and the
 * profile run's activations): where it is not positive, vLLM refuses to start. */
int64_t sampler_kv_pool(const struct sampler_setup *su, int64_t weight_bytes);
/* The most canvases a step holds without running out of memory, up to max (0: not one). */
int32_t sampler_mem_max(const struct sampler_setup *su, int32_t max);

#endif
