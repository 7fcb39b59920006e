/*
 * sim.h: the discrete-event simulator. A run: resolve the configuration (model, GPU, policy,
 * scheduler, decode model, cost model, workload), replay the arrivals, and loop
 *     schedule -> price -> advance
 * until every request is finished or rejected. The handle is opaque; results come out as a plain
 * summary struct and, when asked, as a SQLite database (db.h).
 */
#ifndef TESSERA_SIM_H
#define TESSERA_SIM_H

#include <stdint.h>

#include "config.h"
#include "cost.h"
#include "util.h"

struct sim;

struct sim_summary {
    int64_t num_requests, num_finished, num_rejected, num_preemptions;
    int64_t num_stalls;               /* request-steps a running request sat out (the step's token budget
                                       * left it no room): what the lookahead scheduler avoids */
    int64_t num_steps, request_steps; /* steps; requests' segments summed over steps (not a graph's padding) */
    int64_t drafter_rows, drafter_logit_rows; /* a speculative policy's drafter (policy_ops.drafter_layers):
                                               * the rows its forwards ran and their logit rows, summed */
    uint32_t pricing;                 /* the pricing chain's links (pricing.h) that priced at least one step,
                                       * a bit a link (sim_pricing_text names them) */
    int64_t steps_beyond;             /* steps priced past the calibration's or the rounds' measured range
                                       * (--extrapolate) */
    int64_t tokens_decoded;           /* positions committed (G per request without early stop) */
    int64_t content_tokens;           /* sum of C over finished requests */
    int64_t makespan_ns;              /* last finish (arrivals start at 0) */
    double throughput_tok_s;          /* tokens_decoded / makespan */
    double content_tok_s;
    double req_s;
    double lat_mean_s, lat_p50_s, lat_p90_s, lat_p99_s, lat_std_s, lat_span_s; /* finish - arrival */
    double ttfb_mean_s;               /* first block done - arrival */
    double queue_mean_s;              /* admitted - arrival */
    double mean_q_per_step, mean_segs_per_step;
    int64_t peak_mem_bytes;           /* weights + KV in use + activations, largest over steps */
    int64_t peak_kv_bytes;            /* the KV pool's pages in use, largest over steps */
    int64_t weight_bytes, kv_pool_bytes, act_reserved_bytes, capacity_bytes;
    int32_t static_batch;             /* static scheduler: the batch size used (0 otherwise) */
    int32_t concurrency_cap;          /* the scheduler's cap on requests running at once, as given (its
                                       * cap_param; 0: what memory allows; -1: it has none; a fleet's where
                                       * its replicas agree, else -1) */
    char concurrency_option[32];      /* the option that sets it ("" where none) */
    int64_t rows_processed;           /* the later layers' rows of the decoding steps (not prefill,
                                       * not padding), summed: N_processed of FOCUS's redundancy */
    int64_t missed_decodes;           /* decodable tokens steps left undecoded (focus's eviction) */
    double redundancy;                /* rows_processed / the tokens those steps decoded */
    struct cost_breakdown ops;        /* per-op seconds summed over steps */
    double run_wall_s;                /* host wall time sim_run took (simulator speed) */
    /* live mode (an executor set): steps run on it, their measured time drives the clock */
    int64_t live_steps;
    double live_measured_s, live_model_s; /* summed: measured, and what the cost model predicted */
    double live_abs_rel;                  /* sum over steps of |model - measured| / measured */
    /* and of those, the steps with a host part (offloaded K/V: HERALD's) */
    int64_t live_host_steps;
    double live_host_measured_s, live_host_model_s, live_host_abs_rel;
    double live_t0_unix, live_t1_unix;    /* the wall clock (Unix seconds) when the first step began and the
                                           * last ended: the window a power trace of the card is read over */
    /* the card's clock modelled (--clock): how much it moved the steps' time, summed */
    bool clock_modelled;
    double clock_delta_s;
    /* energy (sim/docs/cost-model.md, "Energy"): the steps' time and energy summed, then the run's with the
     * GPUs' idle draw between steps, its mean power, and a generated token's and a request's share */
    double busy_s, busy_energy_j;
    /* --slo: the requests finished within it, and their share of all requests (NAN without one) */
    int64_t slo_met;
    double slo_attainment;
    double energy_j, mean_power_w, energy_per_token_j, energy_per_request_j;
    double idle_w; /* the instance's GPUs' idle draw, all of them */
    int64_t step_decoded;          /* tokens the decoding steps decoded (redundancy's denominator) */
    int64_t handed_in, handed_out; /* requests a disaggregated fleet moved in and out (sim_handoff) */
    /* --prompt-cache: the prompt tokens of the prefills run with it, those they found cached, and the
     * blocks it evicted */
    int64_t prompt_tokens, prompt_hit_tokens, prompt_evicted;
    /* the accuracy the run's decode profile publishes for its setting (percent) on accuracy_task: what
     * its speed costs, read from the profile's source, not simulated; where load control moved the
     * decoder along the profile's published sweep, the published accuracy at each committed token's
     * threshold, weighted by the tokens; < 0 where no profile gives one (accuracy_task "") or where load
     * control moved a decoder whose profile publishes no sweep (accuracy_task the profile's) */
    double expected_accuracy;
    char accuracy_task[32];
    /* overload (a streamed run of SIM_OVERLOAD_MIN requests or more): the requests outstanding (arrived,
     * not yet gone) when a third of them had arrived and when the last did, the rate they arrive at
     * (requests over the last arrival), and whether the run could not keep up (the outstanding more
     * than doubled, arrivals 10% faster than finishes): its latency percentiles then grow with the
     * number of requests, not with the configuration */
    int64_t outstanding[2];
    double offered_rps;
    bool overloaded;
    /* vLLM's DiffusionGemma sampler (an implementation that runs it, impl_profile.sampler; --tp 1): the
     * canvases of the run's largest step (its requests' segments with logits, --block rows each to
     * vLLM), the most a step holds within vLLM's memory (sim_sampler.c; -1: not judged), and whether
     * the largest step exceeds it, where vLLM runs out of memory */
    int32_t sampler_canvases, sampler_holds;
    bool sampler_oom;
};
#define SIM_OVERLOAD_MIN 30
/* The overload rule, one for a single run, a fleet and each of its replicas: the requests outstanding
 * at a third of the arrivals and at the last (outstanding[0], [1]) grew more than twice, and by more
 * than SIM_OVERLOAD_MIN / 6, and they arrive (offered_rps) more than 10% faster than the run finishes
 * them (served_rps). */
bool sim_overload_rule(const int64_t outstanding[2], double offered_rps, double served_rps);

/* Live execution (`tessera sim --executor gpu`): an executor runs every step for real and returns
 * its time, which replaces the cost model's on the clock (the cost model still prices the step,
 * for comparison). release() frees a request's KV state when the simulator frees its KV pages
 * (finished or preempted). */
struct sim_executor {
    void *ctx;
    int (*step)(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err);
    void (*release)(void *ctx, int32_t req_id);
    /* A disaggregated fleet's live replica: a request handed on with its K/V has them set aside under
     * ticket (sim_handoff.ticket) before they are released, for the fleet to move (fleet.h, live_move).
     * NULL: released with the request. */
    int (*hold)(void *ctx, int32_t req_id, int64_t ticket, struct ts_err *err);
};

/* Builds a simulation from a validated config: loads the model, GPU, trace, etc. Returns NULL and
 * fills err on bad input. */
struct sim *sim_create(const struct sim_config *cfg, struct ts_err *err);
void sim_destroy(struct sim *s); /* NULL is safe */
/* Keeps every request in memory after it is done (a run frees them as they are recorded, so that
 * its memory does not grow with its length): for tests that read the requests after the run.
 * Before sim_run. */
void sim_keep_requests(struct sim *s);
/* Runs to completion. Returns -1 with err when a step cannot be priced (a calibrated cost model
 * asked outside its range); the run is then incomplete and should not be written. A watched run
 * (sim_set_watch) returns SIM_STOPPED where it stopped early. */
#define SIM_STOPPED 1
int sim_run(struct sim *s, struct ts_err *err);
/* A watch on latency bounds (tessera plan's): for each of n bounds, the requests done that missed it
 * (finished later than it, or rejected) are counted (sim_watch_missed). With stop, once more than
 * misses[k] of the run's requests are certain to miss bound_s[k] (those, and the requests outstanding
 * for longer than it already), which no later event can change, the run stops there, unfinished, and
 * sim_run returns SIM_STOPPED. Before sim_run; n at most SIM_WATCH_MAX. */
#define SIM_WATCH_MAX 4
struct sim_watch {
    int n;
    double bound_s[SIM_WATCH_MAX];
    int64_t misses[SIM_WATCH_MAX];
    bool stop;
};
void sim_set_watch(struct sim *s, const struct sim_watch *w);
int64_t sim_watch_missed(const struct sim *s, int k);
/* A stopped run: when it stopped, and the bound (its index in the watch) it was certain to miss. */
void sim_stopped_at(const struct sim *s, double *t_s, int *bound);
void sim_get_summary(const struct sim *s, struct sim_summary *out);
const struct sim_config *sim_config(const struct sim *s);
/* The parts its configuration names (policy, scheduler, their parameters, implementation, cost,
 * planner, decode model), as resolved once when it was made (setup.h). */
struct sim_setup;
const struct sim_setup *sim_setup_of(const struct sim *s);
const struct model_cfg *sim_model(const struct sim *s);
const struct gpu_spec *sim_gpu(const struct sim *s);
/* The prompt blocks its prompt cache may hold at most (--prompt-cache, bounded by its KV pool), or 0. */
int64_t sim_prompt_blocks(const struct sim *s);
/* The run's step knobs (step_desc.h), as every step it emits carries them. */
const struct step_desc *sim_knobs(const struct sim *s);
/* The run's scheduler's parameter `name` as resolved (its option's name, e.g.
 * "max-num-batched-tokens"), or dflt when the scheduler has no such parameter. */
double sim_sched_param(const struct sim *s, const char *name, double dflt);
/* What the run's policy's parameters set in the engine's extensions (policy_ext_params), into *out. */
struct eng_ext_params;
void sim_ext_params(const struct sim *s, struct eng_ext_params *out);
/* Request req_id's prompt tokens (a request arrived and not yet recorded), else -1. */
int32_t sim_request_prompt(const struct sim *s, int32_t req_id);
/* The distinct reasons requests were rejected for, each with its count ("N: reason; ..."), into buf. */
void sim_reject_reasons(const struct sim *s, char *buf, size_t len);
/* Sets the executor before sim_run (NULL: back to the cost model). */
void sim_set_executor(struct sim *s, const struct sim_executor *ex);
/* The pricing chain's links a summary's `pricing` names ("calibrated > clock"), into buf (pricing.h). */
const char *sim_pricing_text(uint32_t priced, char *buf, size_t len);

/* The run's model: --model resolved (model_resolve), its longest sequence --max-pos where given. */
int sim_model_resolve(const struct sim_config *c, struct model_cfg *out, struct ts_err *err);
/* A fleet's replica (fleet.h): an instance whose requests are fed to it one by one instead of
 * streamed from its configuration's workload. Feed each request at or after the instance's clock
 * (sim_advance it to the arrival first); once every request is fed, sim_run finishes the run. The
 * static scheduler sizes each replica's batch by the configuration's whole workload (the fleet's),
 * and forms batches from the requests fed to it. */
struct trace_req;
struct trace;
struct trace_stream;
/* The workload a configuration describes (its trace, or generated requests), as a stream of
 * requests in arrival order; t and length_src hold what the stream reads (trace_free them after). */
int sim_workload_open(const struct sim_config *c, const struct model_cfg *m, struct trace *t, struct trace *length_src,
                      struct trace_stream *st, struct ts_err *err);
struct sim *sim_create_fed(const struct sim_config *cfg, struct ts_err *err);
/* tr fed as the workload's request `index` (its random streams' seed: the same request draws the
 * same wherever it is routed), reaching the instance at at_ns: its arrival, or later where the fleet
 * held it back (its latency still counted from its arrival). */
void sim_feed(struct sim *s, const struct trace_req *tr, int64_t index, int64_t at_ns);
/* Runs a fed instance's events before until_ns; true when it ran any. */
bool sim_advance(struct sim *s, int64_t until_ns);
int64_t sim_now_ns(const struct sim *s);
/* When its next event is due (INT64_MAX: none, or its run failed). */
int64_t sim_next_event_ns(const struct sim *s);
/* What a router sees of an instance: its requests arrived and not done (queued arrivals included),
 * waiting and running, the share of its KV pool in use, and its running requests whose next step
 * starts a block (a Refresh under the caching policies). */
struct sim_load {
    int64_t outstanding, waiting, running, refreshing;
    double kv_used;
};
void sim_load(const struct sim *s, struct sim_load *out);
/* The latency (seconds) of rank q (0..1) of the finished requests of instances s[0..n), exact
 * (their spilled latencies selected together, as the run's own percentiles are); 0 with none. */
int sim_latency_quantile(struct sim *const *s, int n, double q, double *out);

/* Load control (fleet.h) at threshold tau: a decode model whose profile publishes a sweep of
 * thresholds takes its TPF and accuracy there (decode_at_threshold); any other has its tokens a step
 * beyond the first scaled by factor from its configuration's (1: as configured), and its accuracy is
 * no longer known. Its TPF then in *tpf; -1 with err where the decode model has no threshold to lower
 * (decode_scale_extra) or tau lies outside its sweep. */
int sim_scale_decode(struct sim *s, double factor, double tau, double *tpf, struct ts_err *err);
/* The instance's decode model (load control reads its sweep). */
const struct decode_model *sim_decode_model(const struct sim *s);

/* Disaggregation (fleet.h): a replica that hands a request on once a step leaves its next one to
 * another pool. A step that reads the cache (Reuse, a block over the cached prefix) is a Reuse
 * step; the others (Refresh, prefill, a whole forward) rebuild what they need. */
enum sim_hand {
    SIM_HAND_NONE = 0, /* keeps its requests (co-located) */
    SIM_HAND_ALL,      /* hands each on after its step (a Refresh pool that runs first steps only) */
    SIM_HAND_REUSE,    /* hands on a request whose next step is a Reuse step (a Refresh pool) */
    SIM_HAND_REFRESH,  /* hands on one whose next step is not (a Reuse pool that returns Refreshes) */
};
void sim_set_hand(struct sim *s, enum sim_hand h);
/* Whether a request of instance a can continue on b (the same model, block size, policy and its
 * parameters, logit handling and decode model): NULL, or the setting they differ in. */
const char *sim_hand_mismatch(const struct sim *a, const struct sim *b);
/* Whether the instance's run failed (a step it could not price or run: sim_run says why). */
bool sim_failed(const struct sim *s);
/* A request handed on: when it left, the bytes that move with it (its K/V where its next step reads
 * them, else its token ids), the GPUs it leaves from, and the request itself (owned; sim_feed_moved
 * takes it). */
struct request;
struct sim_handoff {
    int64_t left_ns, bytes;
    int32_t gpus;
    bool cache;
    int64_t ticket; /* its K/V's ticket where its executor held them (sim_executor.hold), else -1 */
    struct request *req; /* the request itself, its decode stream with it: the simulator's alone to read;
                          * sim_feed_moved takes it, sim_handoff_drop frees one that goes nowhere */
};
/* The requests handed on since the last call, in the order they left: *out holds them (the instance's
 * array, valid until its next event), their count returned. */
size_t sim_take_handoffs(struct sim *s, struct sim_handoff **out);
/* A handed request fed to s at at_ns (at or after its clock), its progress and caching state as it
 * left; h->req is taken (freed). Returns its id in s. */
int32_t sim_feed_moved(struct sim *s, struct sim_handoff *h, int64_t at_ns);
/* A handed request that will not be fed (a run that failed with it in flight) released; h->req NULL
 * after (h NULL, or one already taken: nothing). */
void sim_handoff_drop(struct sim_handoff *h);
/* Fails the instance's run with err's message (a fleet's move that failed on its behalf): its events
 * stop, and sim_run returns -1 with the message. */
void sim_fail(struct sim *s, const struct ts_err *err);

#endif
