/* sched_view.c: the simulator as a scheduler sees it (sched_view.h): the waiting deque, and what a
 * scheduler reads and keeps of struct sim. */
#include "sim_internal.h"

#include <stdlib.h>

/* --- the waiting deque ------------------------------------------------------------------- */

static void deque_grow(struct id_deque *d)
{
    if (d->n < d->cap)
        return;
    size_t cap = d->cap ? d->cap * 2 : 64;
    int32_t *v = xmalloc(cap * sizeof *v);
    for (size_t i = 0; i < d->n; i++)
        v[i] = d->v[(d->head + i) % d->cap];
    free(d->v);
    d->v = v;
    d->cap = cap;
    d->head = 0;
}

void deque_push_back(struct id_deque *d, int32_t id)
{
    deque_grow(d);
    d->v[(d->head + d->n++) % d->cap] = id;
}

void deque_push_front(struct id_deque *d, int32_t id)
{
    deque_grow(d);
    d->head = (d->head + d->cap - 1) % d->cap;
    d->v[d->head] = id;
    d->n++;
}

int32_t deque_front(const struct id_deque *d)
{
    TS_ASSERT(d->n > 0);
    return d->v[d->head];
}

int32_t deque_pop_front(struct id_deque *d)
{
    int32_t id = deque_front(d);
    d->head = (d->head + 1) % d->cap;
    d->n--;
    return id;
}

/* --- what a scheduler reads and keeps ------------------------------------------------------- */

struct sim_mem *sim_mem(struct sim *s) { return &s->mem; }

double *sim_sched_p(struct sim *s) { return s->sched_p; }
void **sim_sched_state(struct sim *s) { return &s->sched_state; }
const struct sched_ops *sim_sched(const struct sim *s) { return s->sched; }
const struct policy_ops *sim_policy(const struct sim *s) { return s->pol; }
const struct policy_cfg *sim_policy_cfg(const struct sim *s) { return &s->pcfg; }

void sim_workload_max(const struct sim *s, int32_t *L, int32_t *G)
{
    *L = s->wl_L_max;
    *G = s->wl_G_max;
}

const struct step_desc *sim_step(const struct sim *s) { return &s->sd; }
void sim_set_static_batch(struct sim *s, int32_t batch) { s->sum.static_batch = batch; }
void sim_set_round(struct sim *s, struct round_step round) { s->round = round; }
