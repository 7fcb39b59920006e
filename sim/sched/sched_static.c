/*
 * sched_static.c: request-level static batching, as the Fast-dLLM, dLLM-Cache and Sparse-dLLM
 * baselines serve: a batch is formed from the queue (FCFS) and runs to completion before the next
 * one starts; its requests are returned together when the batch ends.
 *
 * Batch size: the largest B for which weights + B x (peak KV of the longest request of the
 * workload) + the activation of a forward over B padded sequences with monolithic logits fit the
 * device ("preliminary profiling" in dLLM-Serve section 6.1), capped by --max-batch.
 * Padding: every request of a batch runs with the batch's longest prompt and generation length.
 * Lockstep: a batch moves through blocks together; a request that finished its block (or all its
 * work) early runs padding rows of the batch's shape, committing nothing, until the others catch up.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched.h"
#include "sched_view.h"
#include "sim.h"

enum { STATIC_MAX_BATCH };
static const struct param_spec static_params[] = {
    [STATIC_MAX_BATCH] = {"max-batch", "cap on requests per batch; 0 = the largest that fits", 0, 0, 1 << 20, true},
};

struct static_state {
    int32_t batch_size; /* B from profiling */
    int32_t *batch;     /* ids of the current batch */
    int32_t n;
};

static int64_t padded_need(struct sim *s, int64_t B, int32_t L_pad, int32_t G_pad)
{
    struct sim_mem *m = sim_mem(s);
    struct request probe = {.P = L_pad - G_pad, .G = G_pad, .C = G_pad};
    policy_req_init(&probe, sim_policy_cfg(s));
    int64_t kv = sim_kv_pages(s, sim_kv_need(s, &probe, true)) * m->kv_page_tokens *
                 m->kv_token_bytes;
    int32_t q, logits;
    sim_peak_shape(s, &probe, &q, &logits);
    return B * kv + sim_act_peak(s, B * (int64_t)q, B * (int64_t)logits);
}

static int static_init(struct sim *s, struct ts_err *err)
{
    struct sim_mem *m = sim_mem(s);
    struct static_state *st = xcalloc(1, sizeof *st);
    *sim_sched_state(s) = st;
    m->kv_pool_bytes = m->capacity - m->weight_bytes;
    m->kv_pages_total = m->kv_pool_bytes / (m->kv_page_tokens * m->kv_token_bytes);
    int32_t L_max, G_max; /* the workload's longest that fits the model */
    sim_workload_max(s, &L_max, &G_max);
    int64_t B = 0;
    if (L_max > 0) { /* largest B that fits, by doubling then bisection */
        int64_t lo = 0, hi = 1;
        while (hi <= (1 << 20) && padded_need(s, hi, L_max, G_max) <= m->kv_pool_bytes) {
            lo = hi;
            hi *= 2;
        }
        while (hi - lo > 1) {
            int64_t mid = (lo + hi) / 2;
            if (padded_need(s, mid, L_max, G_max) <= m->kv_pool_bytes)
                lo = mid;
            else
                hi = mid;
        }
        B = lo;
    }
    if (sim_sched_p(s)[STATIC_MAX_BATCH] > 0 && sim_sched_p(s)[STATIC_MAX_BATCH] < B)
        B = (int64_t)sim_sched_p(s)[STATIC_MAX_BATCH];
    if (B == 0 && L_max > 0)
        fprintf(stderr, "static scheduler: not even one request of the longest shape (L = %d) fits; "
                        "batches fall back to size 1 for the requests that fit alone\n", L_max);
    st->batch_size = (int32_t)TS_MAX(B, 1);
    st->batch = xcalloc((size_t)st->batch_size, sizeof *st->batch);
    sim_set_static_batch(s, st->batch_size);
    (void)err;
    return 0;
}

static const char *static_reject(struct sim *s, const struct request *r)
{
    if (r->L > sim_model(s)->max_pos)
        return sim_positions_refused(s, r);
    if (padded_need(s, 1, r->L, r->G) > sim_mem(s)->kv_pool_bytes)
        return "alone it needs more KV and activation memory than the device has after weights";
    return NULL;
}

static void form_batch(struct sim *s, struct static_state *st)
{
    int32_t P_pad = 0, G_pad = 0;
    st->n = 0;
    while (sim_waiting(s)->n > 0 && st->n < st->batch_size) {
        struct request *r = sim_request(s, deque_front(sim_waiting(s)));
        int32_t P = TS_MAX(P_pad, r->P), G = TS_MAX(G_pad, r->G);
        /* a batch smaller than B may still hold longer rows than profiled: check it fits */
        if (st->n > 0 && padded_need(s, st->n + 1, P + G, G) > sim_mem(s)->kv_pool_bytes)
            break;
        P_pad = P;
        G_pad = G;
        st->batch[st->n++] = deque_pop_front(sim_waiting(s));
    }
    for (int32_t i = 0; i < st->n; i++) {
        struct request *r = sim_request(s, st->batch[i]);
        r->P = P_pad;
        r->G = G_pad;
        policy_req_init(r, sim_policy_cfg(s));
        TS_ASSERT(sim_kv_reserve(s, r, sim_kv_need(s, r, true)));
        sim_admit(s, r);
    }
}

static void static_build(struct sim *s)
{
    struct static_state *st = *sim_sched_state(s);
    if (st->n == 0)
        form_batch(s, st);
    if (st->n == 0)
        return;
    int32_t batch_block = INT_MAX;
    for (int32_t i = 0; i < st->n; i++) {
        const struct request *r = sim_request(s, st->batch[i]);
        if (!r->work_done && r->cur_block < batch_block)
            batch_block = r->cur_block;
    }
    struct segment seg, tmpl = {0};
    bool have_tmpl = false;
    for (int32_t i = 0; i < st->n; i++) {
        struct request *r = sim_request(s, st->batch[i]);
        if (r->work_done || r->cur_block != batch_block)
            continue;
        sim_emit(s, r, &seg);
        sim_add_segment(s, &seg);
        if (!have_tmpl) {
            tmpl = seg;
            have_tmpl = true;
        }
    }
    TS_ASSERT(have_tmpl);
    for (int32_t i = 0; i < st->n; i++) {
        struct request *r = sim_request(s, st->batch[i]);
        if (!(r->work_done || r->cur_block != batch_block))
            continue;
        seg = tmpl;
        seg.req_id = r->id;
        seg.padding = PAD_REQUEST;
        seg.decoded = 0;
        sim_add_segment(s, &seg);
    }
}

static void static_after_step(struct sim *s)
{
    struct static_state *st = *sim_sched_state(s);
    for (int32_t i = 0; i < st->n; i++)
        if (!sim_request(s, st->batch[i])->work_done)
            return;
    for (int32_t i = 0; i < st->n; i++)
        sim_finish(s, sim_request(s, st->batch[i]));
    st->n = 0;
}

static void static_free(struct sim *s)
{
    struct static_state *st = *sim_sched_state(s);
    if (st)
        free(st->batch);
    free(st);
    *sim_sched_state(s) = NULL;
}

const struct sched_ops sched_static = {
    .name = "static",
    .cap_param = "max-batch",
    .help = "static batches run to completion (Fast-dLLM, dLLM-Cache, Sparse-dLLM baselines); "
            "batch size from the memory model, sequences padded to the longest",
    .params = static_params,
    .num_params = (int)TS_ARRAY_LEN(static_params),
    .finish_with_batch = true,
    .init = static_init,
    .reject = static_reject,
    .build = static_build,
    .after_step = static_after_step,
    .free = static_free,
};
