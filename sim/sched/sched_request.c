/*
 * sched_request.c: continuous batching at request granularity (LMDeploy-style, and the "request
 * level" baseline of dLLM-Serve). A request is admitted, in FCFS order, only if the memory left
 * after weights holds its peak KV cache and the activation of its peak (Refresh) step, both
 * reserved for its whole life; every running request takes part in every step. With --max-batch
 * the running set is also capped in count.
 * Invariant: KV in use + the step's activation <= capacity - weights, with no preemption ever.
 */
#include "sched.h"
#include "sched_view.h"
#include "sim.h"

enum { REQUEST_MAX_BATCH };
static const struct param_spec request_params[] = {
    [REQUEST_MAX_BATCH] = {"max-batch", "cap on requests running at once; 0 = what memory allows", 0, 0, 1 << 20, true},
};

/* The activation of r's peak step, planned once per request. */
static int64_t req_act(struct sim *s, struct request *r)
{
    if (r->act_need == 0) {
        int32_t q, logits;
        sim_peak_shape(s, r, &q, &logits);
        r->act_need = TS_MAX(sim_act_peak(s, q, logits), 1);
    }
    return r->act_need;
}

static int request_init(struct sim *s, struct ts_err *err)
{
    struct sim_mem *m = sim_mem(s);
    (void)err;
    m->kv_pool_bytes = m->capacity - m->weight_bytes; /* shared with per-request activations */
    m->kv_pages_total = m->kv_pool_bytes / (m->kv_page_tokens * m->kv_token_bytes);
    m->act_reserved = 0;
    return 0;
}

static int64_t reservation(struct sim *s, struct request *r)
{
    struct sim_mem *m = sim_mem(s);
    return sim_kv_pages(s, sim_kv_need(s, r, true)) * m->kv_page_tokens *
               m->kv_token_bytes + req_act(s, r);
}

static const char *request_reject(struct sim *s, const struct request *r)
{
    if (r->L > sim_model(s)->max_pos)
        return sim_positions_refused(s, r);
    if (reservation(s, sim_request(s, r->id)) > sim_mem(s)->kv_pool_bytes)
        return "its peak KV cache plus its Refresh activation exceed the memory left after weights";
    return NULL;
}

static void request_build(struct sim *s)
{
    struct sim_mem *m = sim_mem(s);
    const double max_batch = sim_sched_p(s)[REQUEST_MAX_BATCH];
    while (sim_waiting(s)->n > 0 && (max_batch == 0 || (double)sim_num_running(s) < max_batch)) {
        struct request *r = sim_request(s, deque_front(sim_waiting(s)));
        int64_t act = req_act(s, r);
        int64_t kv_free = (m->kv_pages_total - m->kv_pages_used) * m->kv_page_tokens * m->kv_token_bytes;
        int64_t kv_need = sim_kv_pages(s, sim_kv_need(s, r, true)) * m->kv_page_tokens *
                          m->kv_token_bytes;
        if (kv_need + act > kv_free - m->act_reserved)
            break;
        TS_ASSERT(sim_kv_reserve(s, r, sim_kv_need(s, r, true)));
        r->act_reserved = act;
        m->act_reserved += act;
        deque_pop_front(sim_waiting(s));
        sim_admit(s, r);
    }
    struct segment seg;
    for (size_t i = 0; i < sim_num_running(s); i++) {
        sim_emit(s, sim_request(s, sim_running(s, i)), &seg);
        sim_add_segment(s, &seg);
    }
}

/* r is done (finished, rejected or left at the end): its activation reservation given back, in the
 * step it finished in */
static void request_forget(struct sim *s, struct request *r)
{
    struct sim_mem *m = sim_mem(s);
    m->act_reserved -= r->act_reserved;
    r->act_reserved = 0;
    TS_ASSERT(m->act_reserved >= 0);
}

const struct sched_ops sched_request = {
    .name = "request",
    .cap_param = "max-batch",
    .help = "continuous batching at request granularity: admission reserves the request's peak "
            "KV and Refresh activation for its whole life",
    .params = request_params,
    .num_params = (int)TS_ARRAY_LEN(request_params),
    .init = request_init,
    .reject = request_reject,
    .build = request_build,
    .forget = request_forget,
};
