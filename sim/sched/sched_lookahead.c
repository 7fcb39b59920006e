/*
 * sched_lookahead.c: the phase scheduler with admission by projection (beyond the
 * papers: dLLM-Serve section 7 names it as future work).
 *
 * Memory and the running set's step are the phase scheduler's (the activation budget of
 * max_num_batched_tokens query tokens, the rest the KV pool, or with gpu-memory-utilization the pool
 * dLLM-Serve's rule sizes; each running request adds its segment while the step's tokens hold it). Admission differs: a queued request is admitted, in
 * FCFS order, only if the projected steps of the running set and its own never exceed the token
 * cap nor the KV pool in any step to come. A request's projection is its policy stepped forward
 * on a copy of it, each step committing the decode model's tokens (fixed:k's k, or the mean TPF:
 * decode_tokens_mean), until it finishes: its rows and the KV pages it holds, step by step. Its
 * Refresh steps are where they will fall, so an admission never lines a Refresh up against
 * another that the cap cannot hold beside it.
 * Under a deterministic decode model (fixed:k) the projections are exact: no admitted request
 * ever waits for the token budget or is preempted (num_stalls and num_preemptions stay 0). Under
 * a drawn one a request's blocks end earlier or later than projected; a running request whose
 * state leaves its projection is projected again from where it is, and one that does not fit a
 * step waits for the next, as under phase, counted as a stall.
 * Invariant: the step's query tokens never exceed max_num_batched_tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "sched.h"
#include "sched_view.h"
#include "sim.h"

enum { MAX_TOKENS, GPU_UTIL }; /* the phase scheduler's parameters, in their places (sched_phase_init reads them) */
static const struct param_spec lookahead_params[] = {
    [MAX_TOKENS] = {"max-num-batched-tokens", "query tokens per step, never exceeded by the projected steps "
                    "of the running set; 0 = 4000 on <= 32 GiB GPUs, else 16384", 0, 0, 1 << 20, true},
    [GPU_UTIL] = SCHED_GPU_UTIL_PARAM,
};

/* One request's projected steps from its step `from` (r->steps then) to its last. */
struct proj {
    int32_t from, n;
    size_t cap;
    int32_t *rows;    /* the step's query rows */
    int64_t *pages;   /* the KV pages it holds in the step */
    int32_t *decoded; /* its decoded_total after the step: where the projection is checked */
};

struct la_state {
    int64_t *rows, *pages;      /* the running set's projected rows and pages, step by step from now */
    size_t cap;
};

static struct la_state *state(struct sim *s) { return *sim_sched_state(s); }

static int lookahead_init(struct sim *s, struct ts_err *err)
{
    if (sched_phase_init(s, err))
        return -1;
    *sim_sched_state(s) = xcalloc(1, sizeof(struct la_state));
    return 0;
}

static void lookahead_free(struct sim *s)
{
    struct la_state *st = state(s);
    if (!st)
        return;
    free(st->rows), free(st->pages), free(st);
    *sim_sched_state(s) = NULL;
}

/* r's projection (r->sched_data), made empty where r has none yet */
static struct proj *proj_of(struct request *r)
{
    if (!r->sched_data)
        r->sched_data = xcalloc(1, sizeof(struct proj));
    return r->sched_data;
}

/* r is done: its projection freed */
static void lookahead_forget(struct sim *s, struct request *r)
{
    (void)s;
    struct proj *p = r->sched_data;
    if (p)
        free(p->rows), free(p->pages), free(p->decoded), free(p);
    r->sched_data = NULL;
}

/* r's steps from where it is to its last, into its projection: its policy stepped on a copy of it,
 * each step committing the decode model's mean. */
static void project(struct sim *s, const struct request *r, struct proj *p)
{
    struct request c = *r;
    struct segment seg;
    double carry = 0;
    int64_t held = sim_kv_pages(s, r->kv_tokens_held);
    p->from = r->steps, p->n = 0;
    for (bool finished = false; !finished;) {
        TS_ASSERTF(p->n <= 4 * (int64_t)r->G + 64, "lookahead: request %d's projection does not finish", r->id);
        if ((size_t)p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 64;
            p->rows = xrealloc(p->rows, p->cap * sizeof *p->rows);
            p->pages = xrealloc(p->pages, p->cap * sizeof *p->pages);
            p->decoded = xrealloc(p->decoded, p->cap * sizeof *p->decoded);
        }
        memset(&seg, 0, sizeof seg);
        sim_policy(s)->emit(&c, sim_policy_cfg(s), &seg);
        if (seg.phase != PHASE_PREFILL && !(sim_policy(s)->caps & POLICY_DECIDES) && req_masked_in_block(&c) > 0)
            seg.decoded = decode_tokens_mean(sim_decode_model(s), &c, &carry);
        held = TS_MAX(held, sim_kv_pages(s, sim_kv_need(s, &c, false))); /* a request's pages only grow */
        p->rows[p->n] = (int32_t)segment_rows(&seg);
        p->pages[p->n] = held;
        finished = policy_advance(sim_policy(s), &c, sim_policy_cfg(s), &seg);
        p->decoded[p->n++] = c.decoded_total;
    }
}

/* r's projection, projected again where r has left it (its blocks ended earlier or later than
 * projected, or it was preempted); k: the index of r's next step in it. */
static const struct proj *projection(struct sim *s, struct request *r, int32_t *k)
{
    struct proj *p = proj_of(r);
    *k = r->steps - p->from;
    if (p->n == 0 || *k < 0 || *k >= p->n || (*k > 0 && p->decoded[*k - 1] != r->decoded_total) || r->need_refresh) {
        project(s, r, p);
        *k = 0;
    }
    return p;
}

/* The running set's projection, steps [from, to) made room for and zeroed. */
static void load_extend(struct la_state *st, size_t from, size_t to)
{
    if (to > st->cap) {
        st->cap = TS_MAX(to, 2 * st->cap);
        st->rows = xrealloc(st->rows, st->cap * sizeof *st->rows);
        st->pages = xrealloc(st->pages, st->cap * sizeof *st->pages);
    }
    if (to > from) {
        memset(st->rows + from, 0, (to - from) * sizeof *st->rows);
        memset(st->pages + from, 0, (to - from) * sizeof *st->pages);
    }
}

/* Adds p's steps from its k-th on to the running set's projection (horizon: its steps so far). */
static void load_add(struct la_state *st, size_t *horizon, const struct proj *p, int32_t k)
{
    const size_t n = (size_t)(p->n - k);
    if (n > *horizon) {
        load_extend(st, *horizon, n);
        *horizon = n;
    }
    for (size_t t = 0; t < n; t++)
        st->rows[t] += p->rows[k + t], st->pages[t] += p->pages[k + t];
}

static void lookahead_build(struct sim *s)
{
    const int64_t cap = (int64_t)sim_sched_p(s)[MAX_TOKENS];
    int64_t budget = cap;
    if (sched_phase_run(s, &budget) || sim_waiting(s)->n == 0)
        return;
    /* the running set's steps from this one on (step 0: the segments just added) */
    struct la_state *st = state(s);
    size_t horizon = 0;
    for (size_t i = 0; i < sim_num_running(s); i++) {
        int32_t k;
        const struct proj *p = projection(s, sim_request(s, sim_running(s, i)), &k);
        load_add(st, &horizon, p, k);
    }
    struct segment seg;
    while (sim_waiting(s)->n > 0) {
        struct request *r = sim_request(s, deque_front(sim_waiting(s)));
        struct proj *p = proj_of(r);
        project(s, r, p);
        bool fits = true;
        for (int32_t t = 0; t < p->n && fits; t++) {
            const bool in = (size_t)t < horizon;
            fits = (in ? st->rows[t] : 0) + p->rows[t] <= cap &&
                   (in ? st->pages[t] : 0) + p->pages[t] <= sim_mem(s)->kv_pages_total;
        }
        sim_emit(s, r, &seg);
        if (!fits || segment_rows(&seg) > budget || !sim_kv_reserve(s, r, sim_kv_need(s, r, false)))
            break; /* FCFS: no later request overtakes it */
        deque_pop_front(sim_waiting(s));
        sim_admit(s, r);
        sim_add_segment(s, &seg);
        budget -= segment_rows(&seg);
        load_add(st, &horizon, p, 0);
    }
    TS_ASSERT(sim_step(s)->tot.rows <= cap);
}

const struct sched_ops sched_lookahead = {
    .name = "lookahead",
    .help = "phase with admission by projection: a queued request is admitted only if the projected steps of "
            "the running set and its own never exceed max_num_batched_tokens nor the KV pool, so no Refresh "
            "collision later delays or preempts an admitted request",
    .params = lookahead_params,
    .num_params = (int)TS_ARRAY_LEN(lookahead_params),
    .budgeted = true,
    .init = lookahead_init,
    .reject = sched_phase_reject,
    .build = lookahead_build,
    .free = lookahead_free,
    .forget = lookahead_forget,
};
