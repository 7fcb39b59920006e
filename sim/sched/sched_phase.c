/*
 * sched_phase.c: dLLM-Serve's phase-multiplexed greedy FCFS scheduler (dLLM-Serve section 4.4).
 *
 * Memory: the activation budget is reserved once, as the peak of a forward of
 * max_num_batched_tokens query tokens with its logits decomposed into max_num_logits rows (or
 * monolithic when that is 0); the rest of the device after weights is the paged KV pool. With
 * gpu-memory-utilization U (dLLM-Serve's rule: engine/model_runner.py allocate_kv_cache, after
 * warmup_model_diffusion) the pool is U of the device less what the process holds (the framework
 * reserve and the weights) and the peak of its warm-up, one forward of
 * min(max_num_batched_tokens / max positions, 512) whole sequences of max positions with the logits
 * of their last 128 rows (none when that count is 0); the activations get what is left.
 * Each step:
 *   1. running requests, in admission order, contribute their current phase's q (Refresh: L,
 *      Reuse: Bs) while the step's query tokens stay within max_num_batched_tokens; one that does
 *      not fit waits for a later step. A request whose cache must grow and cannot preempts the
 *      most recently admitted requests (recompute by default, or swap).
 *   2. unless a running request had to wait, queued requests are admitted in FCFS order (starting
 *      in Refresh) while the budget and the KV pool allow; the first that does not fit stops
 *      admission, so no request overtakes an earlier one.
 * Invariant: the step's query tokens never exceed max_num_batched_tokens.
 */
#include <stdio.h>

#include "sched.h"
#include "sched_view.h"
#include "sim.h"

enum { MAX_TOKENS, GPU_UTIL }; /* lookahead's parameters begin with the same two */
static const struct param_spec phase_params[] = {
    [MAX_TOKENS] = {"max-num-batched-tokens", "query tokens per step; 0 = 4000 on <= 32 GiB GPUs, else 16384, "
                    "as dLLM-Serve configures them", 0, 0, 1 << 20, true},
    [GPU_UTIL] = SCHED_GPU_UTIL_PARAM,
};

enum { WARMUP_MAX_SEQS = 512, WARMUP_GEN = 128 }; /* dLLM-Serve's max_num_seqs, SamplingParams.gen_length */

int sched_phase_init(struct sim *s, struct ts_err *err)
{
    double *p = sim_sched_p(s);
    struct sim_mem *m = sim_mem(s);
    const struct gpu_spec *g = sim_gpu(s);
    const char *name = sim_sched(s)->name;
    const int32_t max_pos = sim_model(s)->max_pos;
    if (p[MAX_TOKENS] == 0) /* dLLM-Serve's Table 3 settings */
        p[MAX_TOKENS] = g->mem_bytes <= 32 * (int64_t)TS_GIB ? 4000 : 16384;
    int64_t cap = (int64_t)p[MAX_TOKENS];
    const double util = p[GPU_UTIL];
    const int64_t reserve = g->mem_bytes - m->capacity; /* the framework's */
    if (util > 0) {
        const int64_t warm = TS_MIN(cap / max_pos, WARMUP_MAX_SEQS);
        const int64_t peak = warm > 0 ? sim_act_peak(s, warm * max_pos, warm * WARMUP_GEN) : 0;
        m->kv_pool_bytes = (int64_t)(util * (double)g->mem_bytes) - reserve - m->weight_bytes - peak;
        m->act_reserved = m->capacity - m->weight_bytes - m->kv_pool_bytes;
        const int64_t need = sim_act_peak(s, cap, cap);
        if (m->kv_pool_bytes <= 0)
            return ts_fail(err, "%s scheduler: gpu-memory-utilization %g of %s leaves no KV pool after %.2f GiB "
                                "of weights, %.2f GiB of framework reserve and a warm-up peak of %.2f GiB",
                           name, util, g->name, m->weight_bytes / TS_GIB, reserve / TS_GIB, peak / TS_GIB);
        if (m->act_reserved < need)
            return ts_fail(err, "%s scheduler: gpu-memory-utilization %g leaves %.2f GiB for activations on %s, "
                                "where a step of max_num_batched_tokens=%lld plans %.2f GiB; lower "
                                "--max-num-batched-tokens or --gpu-memory-utilization",
                           name, util, m->act_reserved / TS_GIB, g->name, (long long)cap, need / TS_GIB);
    } else {
        m->act_reserved = sim_act_peak(s, cap, cap);
        m->kv_pool_bytes = m->capacity - m->weight_bytes - m->act_reserved;
    }
    if (m->kv_pool_bytes <= 0)
        return ts_fail(err, "%s scheduler: the activation budget for max_num_batched_tokens=%lld "
                            "(%.2f GiB) leaves no KV pool on %s after %.2f GiB of weights; lower "
                            "--max-num-batched-tokens or set --max-num-logits",
                       name, (long long)cap, m->act_reserved / TS_GIB, g->name, m->weight_bytes / TS_GIB);
    m->kv_pages_total = m->kv_pool_bytes / (m->kv_page_tokens * m->kv_token_bytes);
    return 0;
}

const char *sched_phase_reject(struct sim *s, const struct request *r)
{
    if (r->L > sim_model(s)->max_pos)
        return sim_positions_refused(s, r);
    int32_t q, logits;
    sim_peak_shape(s, r, &q, &logits);
    if (q > sim_sched_p(s)[MAX_TOKENS])
        return "its largest step needs more query tokens than max_num_batched_tokens";
    if (sim_kv_pages(s, sim_kv_need(s, r, true)) > sim_mem(s)->kv_pages_total)
        return "its KV cache is larger than the whole KV pool";
    return NULL;
}

/* Reserves r's KV for its next step, preempting the latest-admitted requests after it in the
 * running order if needed. Returns false if r itself had to be preempted. */
static bool reserve_or_preempt(struct sim *s, struct request *r, int64_t tokens)
{
    while (!sim_kv_reserve(s, r, tokens)) {
        struct request *victim = sim_request(s, sim_running(s, sim_num_running(s) - 1));
        sim_preempt(s, victim);
        if (victim == r)
            return false;
    }
    return true;
}

bool sched_phase_run(struct sim *s, int64_t *budget)
{
    bool someone_waits = false;
    struct segment seg;
    for (size_t i = 0; i < sim_num_running(s); i++) {
        struct request *r = sim_request(s, sim_running(s, i));
        sim_emit(s, r, &seg);
        if (segment_rows(&seg) > *budget) {
            someone_waits = true;
            continue;
        }
        if (!reserve_or_preempt(s, r, sim_kv_need(s, r, false))) {
            someone_waits = true;
            break; /* r was the last running request */
        }
        sim_add_segment(s, &seg);
        *budget -= segment_rows(&seg);
    }
    return someone_waits;
}

static void phase_build(struct sim *s)
{
    int64_t budget = (int64_t)sim_sched_p(s)[MAX_TOKENS];
    struct segment seg;
    const bool someone_waits = sched_phase_run(s, &budget);
    while (!someone_waits && sim_waiting(s)->n > 0) {
        struct request *r = sim_request(s, deque_front(sim_waiting(s)));
        sim_emit(s, r, &seg);
        if (segment_rows(&seg) > budget || !sim_kv_reserve(s, r, sim_kv_need(s, r, false)))
            break;
        deque_pop_front(sim_waiting(s));
        sim_admit(s, r);
        sim_add_segment(s, &seg);
        budget -= segment_rows(&seg);
    }
    TS_ASSERT(sim_step(s)->tot.rows <= sim_sched_p(s)[MAX_TOKENS]);
}

const struct sched_ops sched_phase = {
    .name = "phase",
    .help = "dLLM-Serve phase-multiplexed greedy FCFS: query tokens per step <= "
            "max_num_batched_tokens; admission whenever budget and KV pool allow",
    .params = phase_params,
    .num_params = (int)TS_ARRAY_LEN(phase_params),
    .budgeted = true,
    .init = sched_phase_init,
    .reject = sched_phase_reject,
    .build = phase_build,
};
