/*
 * request.h: one request's life in the simulator: its shape (P, G, C), its denoising progress
 * (block, decoded tokens, steps) and its scheduling record. Policies read and advance the progress
 * fields; schedulers own the state and the timestamps.
 */
#ifndef TESSERA_REQUEST_H
#define TESSERA_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "step_desc.h"

/* REQ_MOVED: handed to another replica of a disaggregated fleet (sim.h, sim_handoff) */
enum req_state { REQ_PENDING = 0, REQ_WAITING, REQ_RUNNING, REQ_FINISHED, REQ_REJECTED, REQ_MOVED };

#define REQ_POLICY_STATE 32 /* bytes of per-request policy state (policy.h: POLICY_STATE) */

struct request {
    int32_t id;
    int64_t arrival_ns;
    int32_t P_orig, G_orig; /* the request as it arrived (P and G may be padded by a static batch) */
    int32_t P;          /* prompt tokens */
    int32_t G;          /* generation positions denoised */
    int32_t C;          /* content tokens (<= G); the other positions become EOS */
    int32_t L;          /* P + G */
    int32_t Bs;         /* block size */
    int32_t head;       /* the prompt's positions in the first block: 0 where blocks start at the prompt's end;
                         * P mod Bs where they are the sequence's (POLICY_ALIGNED_BLOCKS: SGLang's) */
    int32_t num_blocks; /* ceil((G + head) / Bs) */
    int32_t last_block; /* the block after which the request is done (early stop moves it) */

    /* denoising progress */
    int32_t cur_block;
    int32_t decoded_in_block;
    int32_t decoded_total;
    int32_t steps_in_block;
    int32_t resolved_in_block; /* forwards that began with the block resolved (POLICY_CONFIRMS_BLOCK) */
    int32_t steps;
    _Alignas(8) unsigned char pstate[REQ_POLICY_STATE]; /* the policy's own state (its struct, opaque
                                                          * to the rest), zeroed at admission */
    bool need_refresh;  /* the cache was dropped (preemption by recompute) */
    bool swapped;       /* its cache sits in host memory (preemption by swap) */
    bool work_done;     /* every block it needs is decoded (a static batch may still hold it) */

    /* scheduling record */
    enum req_state state;
    int64_t admitted_ns;     /* first admission; -1 before */
    int64_t first_block_ns;  /* end of the step that finished block 0; -1 before */
    int64_t finish_ns;       /* -1 before */
    int32_t preemptions;
    int64_t kv_tokens_held;  /* tokens of KV pool the request holds now */
    int64_t swapped_tokens;  /* tokens of its cache in host memory (preemption by swap), 0 else */
    int64_t act_reserved;    /* bytes of activation reserved for it (request scheduler) */
    int64_t act_need;        /* its peak step's activation reservation, once computed (0 before) */
    const char *reject_reason;
    gsl_rng *rng;            /* its own decode stream; NULL for deterministic decode models */
    uint64_t seed;           /* its seed: a policy that draws (focus) seeds its draws for a step from it
                              * and the step's index, so emitting a step twice draws the same */
    void *sched_data;        /* its scheduler's own data (freed by the scheduler's forget), or NULL */
    const int32_t *hash;     /* its prompt's block ids (trace.h), or NULL */
    int32_t n_hash;
    int32_t prefix_hit;      /* prompt tokens its next prefill finds in the prompt cache (--prompt-cache),
                              * set when the prefill is emitted: it reads their K/V instead of computing them */
};

/* The first generation position (0 .. G) of block b, and the generation positions it holds. */
static inline int32_t req_block_start(const struct request *r, int32_t b)
{
    const int32_t start = b * r->Bs - r->head;
    return start > 0 ? start : 0;
}
static inline int32_t req_block_len(const struct request *r, int32_t b)
{
    const int32_t end = (b + 1) * r->Bs - r->head;
    return (end < r->G ? end : r->G) - req_block_start(r, b);
}

/* The end of the response the request decodes to: its last block's end (--early-stop's, where it moved it). */
static inline int32_t req_end(const struct request *r)
{
    return req_block_start(r, r->last_block) + req_block_len(r, r->last_block);
}

/* Masked positions left in the current block. */
static inline int32_t req_masked_in_block(const struct request *r)
{
    return req_block_len(r, r->cur_block) - r->decoded_in_block;
}

/* Content (non-EOS) positions still masked in the current block, assuming content decodes first. */
static inline int32_t req_content_left_in_block(const struct request *r)
{
    int32_t start = req_block_start(r, r->cur_block) + r->decoded_in_block;
    int32_t end = req_block_start(r, r->cur_block) + req_block_len(r, r->cur_block);
    int32_t c_end = r->C < end ? r->C : end;
    return c_end > start ? c_end - start : 0;
}

#endif
