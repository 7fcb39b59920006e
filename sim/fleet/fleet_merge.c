/* fleet_merge.c: a fleet's summary merged from its replicas' (fleet_merge.h). */
#include "fleet_merge.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void fleet_replica_energy(struct sim_summary *m, double active_s)
{
    m->energy_j = m->busy_energy_j + m->idle_w * fmax(0, active_s - m->busy_s);
    m->mean_power_w = active_s > 0 ? m->energy_j / active_s : 0;
    /* a token of those its steps decoded (a disaggregated replica's requests finish in the other pool) */
    m->energy_per_token_j = m->step_decoded > 0 ? m->energy_j / (double)m->step_decoded : 0;
    m->energy_per_request_j = m->num_finished > 0 ? m->energy_j / (double)m->num_finished : 0;
}

/* The fleet's expected accuracy: its replicas' weighted by the tokens each one's steps decoded, where every
 * replica that decoded any has one on one task. None where one has none; not known (its task kept) where
 * load control moved one off its profile's setting without a published sweep. */
static void merge_accuracy(const struct fleet_result *out, struct sim_summary *f)
{
    double sum = 0;
    int64_t tokens = 0;
    f->expected_accuracy = -1;
    f->accuracy_task[0] = '\0';
    for (int i = 0; i < out->n; i++) {
        const struct sim_summary *m = &out->replica[i];
        if (m->step_decoded == 0)
            continue;
        if (!m->accuracy_task[0] || (tokens > 0 && strcmp(m->accuracy_task, f->accuracy_task) != 0)) {
            f->accuracy_task[0] = '\0';
            return;
        }
        snprintf(f->accuracy_task, sizeof f->accuracy_task, "%s", m->accuracy_task);
        if (m->expected_accuracy < 0)
            return;
        sum += m->expected_accuracy * (double)m->step_decoded, tokens += m->step_decoded;
    }
    if (tokens > 0)
        f->expected_accuracy = sum / (double)tokens;
}

int fleet_merge(struct sim **r, const struct fleet_result *out, double slo, struct sim_summary *f)
{
    const int n = out->n;
    double lat_sq = 0, q_steps = 0;
    for (int i = 0; i < n; i++) {
        const struct sim_summary *m = &out->replica[i];
        f->makespan_ns = TS_MAX(f->makespan_ns, m->makespan_ns);
    }
    const double span = (double)f->makespan_ns * 1e-9;
    f->sampler_holds = -1;
    for (int i = 0; i < n; i++) {
        const struct sim_summary *m = &out->replica[i];
        const double fin = (double)m->num_finished;
        f->num_requests += m->num_requests - m->handed_in; /* (a request moved in came from another) */
        f->num_finished += m->num_finished, f->num_rejected += m->num_rejected;
        f->step_decoded += m->step_decoded, f->handed_in += m->handed_in, f->handed_out += m->handed_out;
        f->prompt_tokens += m->prompt_tokens, f->prompt_hit_tokens += m->prompt_hit_tokens;
        f->prompt_evicted += m->prompt_evicted;
        f->num_preemptions += m->num_preemptions, f->num_stalls += m->num_stalls;
        f->num_steps += m->num_steps, f->request_steps += m->request_steps, f->steps_beyond += m->steps_beyond;
        f->pricing |= m->pricing; /* (what priced any replica's steps) */
        f->drafter_rows += m->drafter_rows, f->drafter_logit_rows += m->drafter_logit_rows;
        if (i == 0) /* (the replicas' concurrency cap where they agree) */
            f->concurrency_cap = m->concurrency_cap, memcpy(f->concurrency_option, m->concurrency_option, sizeof f->concurrency_option);
        else if (m->concurrency_cap != f->concurrency_cap || strcmp(m->concurrency_option, f->concurrency_option) != 0)
            f->concurrency_cap = -1, f->concurrency_option[0] = '\0';
        f->tokens_decoded += m->tokens_decoded, f->content_tokens += m->content_tokens;
        f->rows_processed += m->rows_processed, f->missed_decodes += m->missed_decodes;
        f->busy_s += m->busy_s, f->busy_energy_j += m->busy_energy_j, f->slo_met += m->slo_met;
        f->lat_mean_s += m->lat_mean_s * fin, f->ttfb_mean_s += m->ttfb_mean_s * fin, f->queue_mean_s += m->queue_mean_s * fin;
        if (m->num_finished > 0) /* E[x^2] of its latencies, from its sample variance */
            lat_sq += fin * (m->lat_std_s * m->lat_std_s * (fin - 1) / fin + m->lat_mean_s * m->lat_mean_s);
        q_steps += m->mean_q_per_step * (double)m->num_steps;
        for (int op = 0; op < OP_COUNT; op++)
            f->ops.op_s[op] += m->ops.op_s[op];
        f->ops.total_s += m->ops.total_s;
        f->energy_j += m->energy_j;
        f->live_steps += m->live_steps, f->live_measured_s += m->live_measured_s;
        f->live_model_s += m->live_model_s, f->live_abs_rel += m->live_abs_rel;
        f->live_host_steps += m->live_host_steps, f->live_host_measured_s += m->live_host_measured_s;
        f->live_host_model_s += m->live_host_model_s, f->live_host_abs_rel += m->live_host_abs_rel;
        f->idle_w += m->idle_w;
        f->peak_mem_bytes = TS_MAX(f->peak_mem_bytes, m->peak_mem_bytes);
        f->peak_kv_bytes = TS_MAX(f->peak_kv_bytes, m->peak_kv_bytes);
        /* (the replica with the least room beside its largest step: out of memory where any is) */
        if (m->sampler_holds >= 0 && (f->sampler_holds < 0 || m->sampler_holds - m->sampler_canvases <
                                                                   f->sampler_holds - f->sampler_canvases)) {
            f->sampler_canvases = m->sampler_canvases;
            f->sampler_holds = m->sampler_holds;
            f->sampler_oom = m->sampler_oom;
        }
    }
    f->num_requests += out->refused, f->num_rejected += out->refused;
    const double fin = (double)f->num_finished;
    if (f->num_finished > 0) {
        f->lat_mean_s /= fin, f->ttfb_mean_s /= fin, f->queue_mean_s /= fin;
        f->lat_std_s = f->num_finished > 1 ? sqrt(fmax(0, (lat_sq - fin * f->lat_mean_s * f->lat_mean_s) / (fin - 1))) : 0;
        double lo, hi;
        if (sim_latency_quantile(r, n, 0.50, &f->lat_p50_s) || sim_latency_quantile(r, n, 0.90, &f->lat_p90_s) ||
            sim_latency_quantile(r, n, 0.99, &f->lat_p99_s) || sim_latency_quantile(r, n, 0, &lo) ||
            sim_latency_quantile(r, n, 1, &hi))
            return -1;
        f->lat_span_s = hi - lo;
    }
    if (span > 0) {
        f->throughput_tok_s = (double)f->tokens_decoded / span;
        f->content_tok_s = (double)f->content_tokens / span;
        f->req_s = fin / span;
        f->mean_power_w = f->energy_j / span;
    }
    if (f->num_steps > 0) {
        f->mean_q_per_step = q_steps / (double)f->num_steps;
        f->mean_segs_per_step = (double)f->request_steps / (double)f->num_steps;
    }
    f->redundancy = f->step_decoded > 0 ? (double)f->rows_processed / (double)f->step_decoded : 0;
    f->energy_per_token_j = f->tokens_decoded > 0 ? f->energy_j / (double)f->tokens_decoded : 0;
    f->energy_per_request_j = f->num_finished > 0 ? f->energy_j / fin : 0;
    f->slo_attainment = slo > 0 && f->num_requests > 0 ? (double)f->slo_met / (double)f->num_requests : NAN;
    merge_accuracy(out, f);
    return 0;
}
