/*
 * sched_view.h: the simulator as a scheduler sees it (sim/sched/). A scheduler owns the memory book
 * (struct sim_mem: it sizes the KV pool and the activation reservation at init and keeps the
 * reservation as it admits) and the waiting queue's order; it reads the running set and the requests
 * (struct sim_queues, struct sim's first member, through the inline accessors its steps' loops call),
 * its resolved parameters, the policy and the workload's longest request (the model, the card and the
 * configuration through sim.h's accessors), and it builds a step with the services below. The rest of struct sim (the clock, the events, the pricing
 * chain, the records) is the event loop's: a scheduler neither reads nor writes it, and includes this
 * header, not sim_internal.h (tests/check_layers.sh).
 */
#ifndef TESSERA_SCHED_VIEW_H
#define TESSERA_SCHED_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "request.h"
#include "step_desc.h"
#include "util.h"

struct sim;
struct sched_ops;
struct round_step;

/* The device's memory as the scheduler books it (bytes; pages of kv_page_tokens tokens). */
struct sim_mem {
    int64_t capacity;     /* device memory minus the framework reserve */
    int64_t weight_bytes;
    int64_t act_reserved; /* fixed activation reservation (phase), or the sum of per-request ones */
    int64_t kv_pool_bytes;
    int64_t kv_token_bytes;
    int64_t kv_page_tokens, kv_pages_total, kv_pages_used;
};

/* A FIFO of request ids that also allows pushing at the front (preempted requests go first). */
struct id_deque {
    int32_t *v;
    size_t cap, head, n;
};
void deque_push_back(struct id_deque *d, int32_t id);
void deque_push_front(struct id_deque *d, int32_t id);
int32_t deque_front(const struct id_deque *d);
int32_t deque_pop_front(struct id_deque *d);

/* --- what a scheduler reads and keeps ------------------------------------------------------- */

/* The requests as a scheduler walks them, every step: struct sim's first member, kept by the event
 * loop (the accessors below, inline for the steps' loops). */
#define SIM_REQ_CHUNK 4096
struct sim_queues {
    struct id_deque waiting;  /* waiting to be admitted, in the order they will be */
    int32_t *running;         /* the running set: request ids in admission order */
    size_t num_running, cap_running;
    struct request **chunks;  /* the requests arrived and not yet freed, by id, SIM_REQ_CHUNK a chunk */
    int64_t num_arrived;
};
static inline const struct sim_queues *sim_queues(const struct sim *s)
{
    return (const struct sim_queues *)(const void *)s;
}
static inline struct id_deque *sim_waiting(struct sim *s) { return &((struct sim_queues *)(void *)s)->waiting; }
static inline size_t sim_num_running(const struct sim *s) { return sim_queues(s)->num_running; }
/* The running set's i-th request's id, in admission order. */
static inline int32_t sim_running(const struct sim *s, size_t i)
{
    TS_ASSERT(i < sim_queues(s)->num_running);
    return sim_queues(s)->running[i];
}
/* Request id, which has arrived and not been freed with its chunk. */
static inline struct request *sim_request(const struct sim *s, int64_t id)
{
    const struct sim_queues *q = sim_queues(s);
    TS_ASSERTF(id >= 0 && id < q->num_arrived && q->chunks[id / SIM_REQ_CHUNK],
               "request %lld: not arrived or already recorded and freed", (long long)id);
    return &q->chunks[id / SIM_REQ_CHUNK][id % SIM_REQ_CHUNK];
}

struct sim_mem *sim_mem(struct sim *s);
/* Its parameters, resolved in its table's order (a default it resolves itself set at init), and its
 * own state (NULL until it sets it). */
double *sim_sched_p(struct sim *s);
void **sim_sched_state(struct sim *s);
const struct sched_ops *sim_sched(const struct sim *s);
const struct policy_ops *sim_policy(const struct sim *s);
const struct policy_cfg *sim_policy_cfg(const struct sim *s);
/* The workload's longest request among those within the model's positions: its L and G. */
void sim_workload_max(const struct sim *s, int32_t *L, int32_t *G);
/* The step being built. */
const struct step_desc *sim_step(const struct sim *s);
/* The static scheduler's batch size, for the summary. */
void sim_set_static_batch(struct sim *s, int32_t batch);
/* The GPUs one step runs on: --tp's or --ep's degree. */
int sim_gpus(const struct sim *s);
/* A runtime priced by its rounds: the round the step being built runs in (rounds.h). */
void sim_set_round(struct sim *s, const struct round_step *round);

/* --- services ------------------------------------------------------------------------------- */

/* KV pool: grows r's allocation to hold `tokens`; false when the pool lacks pages. */
bool sim_kv_reserve(struct sim *s, struct request *r, int64_t tokens);
void sim_kv_release(struct sim *s, struct request *r);
int64_t sim_kv_pages(const struct sim *s, int64_t tokens);
/* Why request r, longer than the model's positions (r->L > max_pos), is refused: its generation alone
 * too long (no clipping of its prompt admits it) or prompt and generation together. */
const char *sim_positions_refused(const struct sim *s, const struct request *r);
/* r's largest step as admission reserves it: its policy's peak rows and the logit rows its steps have at
 * most (policy_peak_logit_rows), Spiffy's draft blocks beside them where the decoder is Spiffy. */
void sim_peak_shape(const struct sim *s, const struct request *r, int32_t *q, int32_t *logit_rows);
/* The KV pool tokens request r needs now (peak: the most it ever does): its policy's, and what its
 * decode model keeps beside them (credit decoding's matrix), in tokens of the pool. */
int64_t sim_kv_need(const struct sim *s, const struct request *r, bool peak);

/* Moves a waiting request into the running set (records its first admission). */
void sim_admit(struct sim *s, struct request *r);
/* Preempts a running request: frees its KV (recompute) or swaps it out, and puts it at the front
 * of the waiting queue. */
void sim_preempt(struct sim *s, struct request *r);
/* Emits r's next segment (shape + tokens it decodes) and appends it to the step. */
void sim_emit(struct sim *s, struct request *r, struct segment *seg);
void sim_add_segment(struct sim *s, const struct segment *seg);
/* Activation memory to reserve for a forward of q tokens and its logit rows: the run's planner's
 * plan of that forward's op graph (its arena; the caching allocator's reserved bytes for caching,
 * those +5% for profiled), planned once per shape (act_cache.h). */
int64_t sim_act_peak(struct sim *s, int64_t q_tokens, int64_t logit_rows);
/* Marks a request finished now (the static scheduler finishes a batch at once) and records it. */
void sim_finish(struct sim *s, struct request *r);

#endif
