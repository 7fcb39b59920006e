/*
 * sched.h: schedulers, the room sim/sched/: this table and a file a scheduler. A scheduler sees the
 * simulator through sched_view.h (the memory book it keeps, the waiting queue, the running set, the
 * memory manager's sim_kv_* and the activation planner's sim_act_peak) and sim.h's accessors (the
 * model, the card, the configuration), never struct sim, and owns three decisions:
 *   init     size its memory budgets (activation reservation, KV pool) before the run
 *   reject   say why an arriving request can never run (NULL if it can)
 *   build    pack the next step: admit, preempt, choose segments (the step may stay empty)
 *   done     react to requests that finished in the step just applied (optional)
 * Every scheduler keeps its invariants in every step (checked by sim.c and by the tests): the
 * memory in use never exceeds the capacity and every admitted request finishes.
 *
 * Adding a scheduler: one new file sched_NAME.c with a `const struct sched_ops` (its parameters
 * declared once as param_specs, read resolved as sim_sched_p(s)[i]; its state behind sim_sched_state(s)),
 * one line in the table of sched.c.
 */
#ifndef TESSERA_SCHED_H
#define TESSERA_SCHED_H

#include <stdbool.h>

#include "params.h"
#include "util.h"

struct sim;
struct request;

struct sched_ops {
    const char *name;
    const char *help;
    const struct param_spec *params; /* its parameters (NULL when none); resolved in sim_sched_p(s) */
    int num_params;
    bool finish_with_batch; /* requests finish together when the scheduler says (static) */
    bool budgeted; /* one activation budget reserved for every step (act_reserved: phase, lookahead) */
    const char *cap_param; /* its parameter capping the requests it runs at once (0: what memory allows);
                            * NULL: it has none (a token budget, or memory, caps its steps) */
    int (*init)(struct sim *s, struct ts_err *err);
    const char *(*reject)(struct sim *s, const struct request *r);
    void (*build)(struct sim *s);
    void (*after_step)(struct sim *s);
    void (*free)(struct sim *s);
    void (*forget)(struct sim *s, struct request *r); /* r is done: its own data freed (NULL: none) */
};

const struct sched_ops *sched_find(const char *name);
/* The i-th scheduler of the table, NULL past the end. */
const struct sched_ops *sched_get(int i);
void sched_list(char *buf, size_t len);
int sched_resolve(const char *name, const struct sched_ops **out, struct ts_err *err);

/* The phase scheduler's pieces the lookahead scheduler shares (sched_phase.c; its first parameter
 * is the token cap, sim_sched_p(s)[0], its second the KV pool's rule, sim_sched_p(s)[1], declared by
 * SCHED_GPU_UTIL_PARAM): the memory budgets under the cap, the rejections, and the
 * running set's step: each running request in admission order adds its segment while *budget (the
 * step's query tokens left) holds it, its KV reserved, preempting the latest admitted where the
 * pool is short; true when one had to wait or was preempted. */
#define SCHED_GPU_UTIL_PARAM                                                                                     \
    {"gpu-memory-utilization", "the KV pool as dLLM-Serve sizes it: this share of the device less the weights, the " \
     "framework reserve and its warm-up's peak; 0 = the device less those and a max_num_batched_tokens step's "       \
     "planned peak", 0, 0, 1, false}
int sched_phase_init(struct sim *s, struct ts_err *err);
const char *sched_phase_reject(struct sim *s, const struct request *r);
bool sched_phase_run(struct sim *s, int64_t *budget);

extern const struct sched_ops sched_static;
extern const struct sched_ops sched_request;
extern const struct sched_ops sched_phase;
extern const struct sched_ops sched_lookahead;
extern const struct sched_ops sched_sglang;
/* SGLang's decode CUDA graphs (sched_sglang.c): the largest it captures on a card of mem_bytes under
 * tensor parallelism tp (its --cuda-graph-max-bs default), and the batch a round of n requests runs as
 * when it captures up to max_bs (the smaller of that and --max-running-requests): the smallest captured
 * size of at least n, or n where none holds it. */
int32_t sglang_graph_max_bs(int64_t mem_bytes, int32_t tp);
int32_t sglang_graph_batch(int32_t n, int32_t max_bs);

#endif
