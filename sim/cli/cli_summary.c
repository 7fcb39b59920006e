/*
 * cli_summary.c: a run's summary as tessera sim prints it (cli.h): the text, the JSON object --json prints, the
 * rejected requests' reasons
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "calib.h"
#include "cli.h"
#include "cost.h"
#include "model.h"
#include "engine_load.h"
#include "decode.h"
#include "eng_ext_decl.h"
#include "setup.h"
#include "planner.h"
#include "presets.h"
#include "sim.h"

/* What admits the requests rejected for a reason (sim_reject_reasons' text), or "". */
static const char *reject_hint(const char *why)
{
    static const struct {
        const char *reason, *hint;
    } hints[] = {
        {"G alone exceeds", "a smaller --gen-len admits them, or with a trace's own output lengths (--gen-len 0) "
                            "--max-new-tokens N capping them; no clipping of their prompts does"},
        {"maximum positions", "--clip-prompt admits them (their prompts truncated to fit), as do a smaller --gen-len "
                              "and --max-new-tokens N (a trace's output lengths capped)"},
        {"max_num_batched_tokens", "a larger --max-num-batched-tokens admits them"},
        {"KV pool", "a GPU with more memory (--gpu), --tp N or a smaller --gen-len admits them"},
        {"memory", "a GPU with more memory (--gpu), --tp N or a smaller --gen-len admits them"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(hints); i++)
        if (strstr(why, hints[i].reason))
            return hints[i].hint;
    return "";
}

/* The reasons the run's requests were rejected, each with how many and what admits them. */
void cli_reject_lines(const struct sim *s, const char *indent, FILE *to)
{
    char why[1024], *save = NULL;
    sim_reject_reasons(s, why, sizeof why);
    for (char *r = strtok_r(why, ";", &save); r; r = strtok_r(NULL, ";", &save)) {
        r += strspn(r, " ");
        const char *hint = reject_hint(r);
        fprintf(to, "%s%s%s%s\n", indent, r, hint[0] ? ": " : "", hint);
    }
}

void cli_print_beyond(const struct sim_summary *m)
{
    if (m->steps_beyond > 0)
        printf("  beyond        %lld of the %lld steps priced past the measured range, on the line through its last "
               "points (--extrapolate): their times are the least sure\n", (long long)m->steps_beyond,
               (long long)m->num_steps);
}

void cli_print_prompt_cache(const struct sim_summary *m)
{
    if (m->prompt_tokens > 0)
        printf("  prompt cache  %.1f%% of the prefilled prompts' tokens found cached (%lld of %lld), %lld blocks "
               "evicted\n", 100.0 * (double)m->prompt_hit_tokens / (double)m->prompt_tokens,
               (long long)m->prompt_hit_tokens, (long long)m->prompt_tokens, (long long)m->prompt_evicted);
}

const char *cli_load_text(const struct sim_config *c, const struct sim_summary *m, char *buf, size_t len)
{
    char gen[48] = "";
    if (c->gen_len > 0)
        snprintf(gen, sizeof gen, ", --gen-len %d", c->gen_len);
    if (strcmp(c->trace, "synthetic") == 0)
        snprintf(buf, len, "%lld requests at %g req/s (%s arrivals), lengths %s%s", (long long)m->num_requests,
                 c->rps > 0 ? c->rps : 1.0, c->arrivals, c->lengths, gen);
    else if (c->rps > 0)
        snprintf(buf, len, "%lld requests of %s, its arrivals rescaled to %g req/s%s", (long long)m->num_requests,
                 c->trace, c->rps, gen);
    else
        snprintf(buf, len, "%lld requests of %s at its own times%s", (long long)m->num_requests, c->trace, gen);
    return buf;
}

void cli_print_summary(const struct sim_config *c, const struct sim_setup *setup, const struct sim_summary *m)
{
    const bool show_redundancy = setup->policy->caps & POLICY_DECIDES; /* the policy decides what its steps decode (focus) */
    char tp[32] = "";
    if (c->tp > 1)
        snprintf(tp, sizeof tp, " x %d (tensor parallel)", c->tp);
    else if (c->ep > 1)
        snprintf(tp, sizeof tp, " x %d (expert parallel)", c->ep);
    /* the runtime (implementation profile) and the cost model first: two runs compare like for like
     * only where both agree */
    printf("tessera sim: %s on %s%s, runtime %s, cost %s, policy %s, scheduler %s, decode %s%s%s\n", c->model,
           c->gpu, tp, c->impl, c->cost, c->policy, c->scheduler,
           setup->policy->caps & POLICY_OWN_COUNT ? "the policy's own" : c->decode, c->system[0] ? ", system " : "",
           c->system);
    char cost[CFG_PATH + 1024], load[CFG_PATH + 256], known[512];
    printf("  known         %s\n", sim_known(c, known, sizeof known));
    printf("  load          %s\n", cli_load_text(c, m, load, sizeof load));
    printf("  cost          %s\n", cli_cost_text(c, cost, sizeof cost));
    char priced[128];
    printf("  priced by     %s\n", sim_pricing_text(m->pricing, priced, sizeof priced));
    cli_print_beyond(m);
    printf("  requests      %lld finished, %lld rejected, %lld preemptions, %lld stalls (of %lld)\n",
           (long long)m->num_finished, (long long)m->num_rejected, (long long)m->num_preemptions,
           (long long)m->num_stalls,
           (long long)m->num_requests);
    printf("  makespan      %.3f s over %lld steps (%.1f requests and %.0f query tokens per step)\n",
           (double)m->makespan_ns * 1e-9, (long long)m->num_steps, m->mean_segs_per_step,
           m->mean_q_per_step);
    printf("  throughput    %.1f generated tokens/s (%.1f content tokens/s, %.3f req/s)\n",
           m->throughput_tok_s, m->content_tok_s, m->req_s);
    cli_print_latency(m);
    cli_print_overload(m, "configuration");
    cli_print_sampler(m);
    printf("  first block   mean %.3f s after arrival; queueing mean %.3f s\n", m->ttfb_mean_s,
           m->queue_mean_s);
    printf("  memory (GiB)  capacity %.2f = weights %.2f + KV pool %.2f (+ activations); "
           "peak in use %.2f\n", m->capacity_bytes / TS_GIB, m->weight_bytes / TS_GIB,
           m->kv_pool_bytes / TS_GIB, m->peak_mem_bytes / TS_GIB);
    printf("  energy        %.0f J: %.3f J a generated token, %.1f J a request; mean %.0f W\n", m->energy_j,
           m->energy_per_token_j, m->energy_per_request_j, m->mean_power_w);
    if (c->slo > 0)
        printf("  SLO           %.1f%% of requests finished within %.3f s of their arrival (--slo)\n",
               100.0 * m->slo_attainment, c->slo);
    if (m->expected_accuracy >= 0)
        printf("  accuracy      %.2f%% expected on %s: the decode profile's published figure at its setting (decode "
               "%s; tessera list decode), not simulated\n", m->expected_accuracy, m->accuracy_task, c->decode);
    if (m->static_batch)
        printf("  static batch  %d requests\n", m->static_batch);
    cli_print_prompt_cache(m);
    if (show_redundancy)
        printf("  redundancy    %.2f rows a decoded token in the later layers (%lld rows), %lld decodable "
               "tokens evicted\n", m->redundancy, (long long)m->rows_processed, (long long)m->missed_decodes);
    if (c->op_scale[0])
        printf("  op scale      %s (--op-scale: an ablation, not the calibrated cost)\n", c->op_scale);
    if (m->clock_modelled && !m->live_steps && m->ops.total_s > 0)
        printf("  clock         the card's state under its power limit moved the steps' time by %+.2f%% "
               "(%+.3f s; --clock)\n", 100.0 * m->clock_delta_s / m->ops.total_s, m->clock_delta_s);
    if (m->live_steps)
        printf("  live (gpu)    %lld steps measured %.3f s; the %s cost model predicted %.3f s (%+.1f%%), "
               "per-step MAPE %.1f%%\n", (long long)m->live_steps, m->live_measured_s, c->cost,
               m->live_model_s, 100.0 * (m->live_model_s - m->live_measured_s) / m->live_measured_s,
               100.0 * m->live_abs_rel / (double)m->live_steps);
    if (m->live_host_steps)
        printf("                of them %lld with a host part measured %.3f s, predicted %.3f s (%+.1f%%), per-step "
               "MAPE %.1f%%\n", (long long)m->live_host_steps, m->live_host_measured_s, m->live_host_model_s,
               100.0 * (m->live_host_model_s - m->live_host_measured_s) / m->live_host_measured_s,
               100.0 * m->live_host_abs_rel / (double)m->live_host_steps);
    /* the six ops that took the most time */
    int order[OP_COUNT];
    for (int i = 0; i < OP_COUNT; i++)
        order[i] = i;
    for (int i = 1; i < OP_COUNT; i++)
        for (int j = i; j > 0 && m->ops.op_s[order[j]] > m->ops.op_s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    double tot = m->ops.total_s > 0 ? m->ops.total_s : 1;
    printf("  time by op   ");
    for (int i = 0; i < 6 && m->ops.op_s[order[i]] > 0; i++)
        printf("%s %s %.1f%%", i ? "," : "", cost_op_name((enum cost_op)order[i]),
               100.0 * m->ops.op_s[order[i]] / tot);
    printf("\n");
}

void cli_print_latency(const struct sim_summary *m)
{
    char of[48] = "";
    if (m->num_rejected > 0) /* (the rejected never finish: the figures are the finished requests') */
        snprintf(of, sizeof of, " of the %lld finished:", (long long)m->num_finished);
    printf("  latency (s)  %s mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  std %.3f  max-min %.3f\n", of, m->lat_mean_s,
           m->lat_p50_s, m->lat_p90_s, m->lat_p99_s, m->lat_std_s, m->lat_span_s);
}

void cli_print_overload(const struct sim_summary *m, const char *what)
{
    if (m->overloaded)
        printf("  overloaded    requests arrive at %.3f req/s, faster than this %s finishes them (%.3f a "
               "second): %lld were outstanding at the last arrival against %lld a third of the way in, so the "
               "latency percentiles grow with --requests (a lower --rps, or more capacity)\n", m->offered_rps, what,
               m->req_s, (long long)m->outstanding[1], (long long)m->outstanding[0]);
}

void cli_print_sampler(const struct sim_summary *m)
{
    if (m->sampler_holds < 0)
        return;
    printf("  vLLM sampler  its largest step's %d canvas%s %s: a step holds %d within vLLM's memory (its KV pool "
           "sized without the sampler, at --gpu-memory-utilization %g with %g GiB outside the budget: tessera mem "
           "sampler)\n", m->sampler_canvases, m->sampler_canvases == 1 ? "" : "es",
           m->sampler_oom ? "run vLLM out of memory" : "fit", m->sampler_holds, SAMPLER_UTIL, SAMPLER_OUTSIDE_GIB);
}

json_t *cli_summary_json(const struct sim_config *c, const struct sim_summary *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "system", json_string(c->system));
    json_object_set_new(o, "model", json_string(c->model));
    json_object_set_new(o, "gpu", json_string(c->gpu));
    json_object_set_new(o, "policy", json_string(c->policy));
    json_object_set_new(o, "scheduler", json_string(c->scheduler));
    json_object_set_new(o, "impl", json_string(c->impl)); /* the runtime, beside the cost model */
    char cost[CFG_PATH + 1024];
    json_object_set_new(o, "cost", json_string(cli_cost_text(c, cost, sizeof cost)));
    char priced[128];
    json_object_set_new(o, "pricing", json_string(sim_pricing_text(m->pricing, priced, sizeof priced)));
    char known[512];
    sim_known(c, known, sizeof known);
    json_object_set_new(o, "known", json_string(known));
    json_object_set_new(o, "known_as", json_stringn(known, strcspn(known, ":")));
    json_object_set_new(o, "overloaded", json_boolean(m->overloaded));
    if (m->sampler_holds >= 0) {
        json_object_set_new(o, "sampler_canvases", json_integer(m->sampler_canvases));
        json_object_set_new(o, "sampler_holds", json_integer(m->sampler_holds));
        json_object_set_new(o, "sampler_oom", json_boolean(m->sampler_oom));
    }
    if (m->offered_rps > 0) {
        json_object_set_new(o, "offered_rps", json_real(m->offered_rps));
        json_object_set_new(o, "outstanding_third", json_integer(m->outstanding[0]));
        json_object_set_new(o, "outstanding_last", json_integer(m->outstanding[1]));
    }
    json_object_set_new(o, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(o, "num_requests", json_integer(m->num_requests));
    json_object_set_new(o, "num_finished", json_integer(m->num_finished));
    json_object_set_new(o, "num_rejected", json_integer(m->num_rejected));
    json_object_set_new(o, "num_preemptions", json_integer(m->num_preemptions));
    json_object_set_new(o, "num_stalls", json_integer(m->num_stalls));
    json_object_set_new(o, "num_steps", json_integer(m->num_steps));
    json_object_set_new(o, "request_steps", json_integer(m->request_steps));
    json_object_set_new(o, "steps_beyond", json_integer(m->steps_beyond));
    if (m->drafter_rows > 0) { /* (a speculative policy's drafter) */
        json_object_set_new(o, "drafter_rows", json_integer(m->drafter_rows));
        json_object_set_new(o, "drafter_logit_rows", json_integer(m->drafter_logit_rows));
    }
    json_object_set_new(o, "concurrency_cap", json_integer(m->concurrency_cap));
    json_object_set_new(o, "concurrency_option", json_string(m->concurrency_option));
    json_object_set_new(o, "tokens_decoded", json_integer(m->tokens_decoded));
    json_object_set_new(o, "content_tokens", json_integer(m->content_tokens));
    json_object_set_new(o, "makespan_ns", json_integer(m->makespan_ns));
    json_object_set_new(o, "throughput_tok_s", json_real(m->throughput_tok_s));
    json_object_set_new(o, "content_tok_s", json_real(m->content_tok_s));
    json_object_set_new(o, "req_s", json_real(m->req_s));
    json_object_set_new(o, "lat_mean_s", json_real(m->lat_mean_s));
    json_object_set_new(o, "lat_p50_s", json_real(m->lat_p50_s));
    json_object_set_new(o, "lat_p90_s", json_real(m->lat_p90_s));
    json_object_set_new(o, "lat_p99_s", json_real(m->lat_p99_s));
    json_object_set_new(o, "lat_std_s", json_real(m->lat_std_s));
    json_object_set_new(o, "lat_span_s", json_real(m->lat_span_s));
    json_object_set_new(o, "ttfb_mean_s", json_real(m->ttfb_mean_s));
    json_object_set_new(o, "queue_mean_s", json_real(m->queue_mean_s));
    json_object_set_new(o, "peak_mem_bytes", json_integer(m->peak_mem_bytes));
    json_object_set_new(o, "peak_kv_bytes", json_integer(m->peak_kv_bytes));
    json_object_set_new(o, "kv_pool_bytes", json_integer(m->kv_pool_bytes));
    json_object_set_new(o, "act_reserved_bytes", json_integer(m->act_reserved_bytes));
    json_object_set_new(o, "weight_bytes", json_integer(m->weight_bytes));
    json_object_set_new(o, "static_batch", json_integer(m->static_batch));
    json_object_set_new(o, "rows_processed", json_integer(m->rows_processed));
    json_object_set_new(o, "missed_decodes", json_integer(m->missed_decodes));
    json_object_set_new(o, "redundancy", json_real(m->redundancy));
    json_object_set_new(o, "energy_j", json_real(m->energy_j));
    json_object_set_new(o, "energy_per_token_j", json_real(m->energy_per_token_j));
    json_object_set_new(o, "energy_per_request_j", json_real(m->energy_per_request_j));
    json_object_set_new(o, "mean_power_w", json_real(m->mean_power_w));
    if (c->slo > 0)
        json_object_set_new(o, "slo_attainment", json_real(m->slo_attainment));
    json_object_set_new(o, "expected_accuracy", m->expected_accuracy >= 0 ? json_real(m->expected_accuracy) : json_null());
    json_object_set_new(o, "accuracy_task", m->accuracy_task[0] ? json_string(m->accuracy_task) : json_null());
    if (m->prompt_tokens > 0) {
        json_object_set_new(o, "prompt_tokens", json_integer(m->prompt_tokens));
        json_object_set_new(o, "prompt_hit_tokens", json_integer(m->prompt_hit_tokens));
        json_object_set_new(o, "prompt_evicted_blocks", json_integer(m->prompt_evicted));
    }
    json_object_set_new(o, "busy_s", json_real(m->busy_s));
    json_object_set_new(o, "busy_energy_j", json_real(m->busy_energy_j));
    if (c->json_wall)
        json_object_set_new(o, "run_wall_s", json_real(m->run_wall_s));
    if (m->clock_modelled && !m->live_steps)
        json_object_set_new(o, "clock_delta_s", json_real(m->clock_delta_s));
    if (m->live_steps) {
        json_object_set_new(o, "live_steps", json_integer(m->live_steps));
        json_object_set_new(o, "live_measured_s", json_real(m->live_measured_s));
        json_object_set_new(o, "live_model_s", json_real(m->live_model_s));
        json_object_set_new(o, "live_step_mape", json_real(m->live_abs_rel / (double)m->live_steps));
        json_object_set_new(o, "live_t0_unix", json_real(m->live_t0_unix));
        json_object_set_new(o, "live_t1_unix", json_real(m->live_t1_unix));
        if (m->live_host_steps) {
            json_object_set_new(o, "live_host_steps", json_integer(m->live_host_steps));
            json_object_set_new(o, "live_host_measured_s", json_real(m->live_host_measured_s));
            json_object_set_new(o, "live_host_model_s", json_real(m->live_host_model_s));
            json_object_set_new(o, "live_host_step_mape", json_real(m->live_host_abs_rel / (double)m->live_host_steps));
        }
    }
    json_t *ops = json_object();
    for (int i = 0; i < OP_COUNT; i++)
        json_object_set_new(ops, cost_op_name((enum cost_op)i), json_real(m->ops.op_s[i]));
    json_object_set_new(o, "op_seconds", ops);
    return o;
}

void cli_print_json(json_t *o)
{
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    printf("%s\n", txt);
    free(txt);
    json_decref(o);
}

/* --executor gpu --tp N: outside a launch, the launch of N ranks running this command (the engine's
 * eng_tp_launch: one process per GPU); inside one, a rank other than 0 writes no database and shows
 * no progress (rank 0 reports). -1: go on in this process. */
