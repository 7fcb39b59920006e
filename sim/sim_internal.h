/*
 * sim_internal.h: the simulator's state. Only the event loop's files (sim.c, sim_create.c,
 * sim_requests.c, sim_sampler.c), the pricing chain (pricing.c) and the tests include it
 * (check_layers); a scheduler sees the simulator through sched_view.h, and the database writer reads a
 * run through sim_record.h.
 */
#ifndef TESSERA_SIM_INTERNAL_H
#define TESSERA_SIM_INTERNAL_H

#include <gsl/gsl_rstat.h>
#include <stdio.h>

#include "act_cache.h"
#include "calib.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "decode.h"
#include "event.h"
#include "gpu.h"
#include "setup.h"
#include "planner.h"
#include "model.h"
#include "policy.h"
#include "prompt_cache.h"
#include "request.h"
#include "rounds.h"
#include "sched.h"
#include "sched_view.h"
#include "sim.h"
#include "step_desc.h"
#include "sim_record.h"
#include "trace.h"

/* A step's price as it goes down the chain. */
struct step_price {
    double secs;                /* the step's seconds so far */
    struct cost_breakdown bd;   /* by op: the back end's, the rounds' and the drafter's (the summary's
                                 * shares); the clock, the host and live change secs alone */
    struct cost_breakdown work; /* the roofline's work (flops, compute_s, memory_s): the clock's load and
                                 * the energy's mix */
    bool host_idles;            /* the GPU idles through bd's OP_HOST seconds (a runtime's host work
                                 * between rounds, where the step was priced, not measured) */
    double host_s;              /* the host's part over offloaded K/V, as priced (0: none) */
};

#define PRICERS_MAX 8


/* How the event loop prices a step (pricing.h: the chain's links; set at create, as the scheduler is):
 * the step s->sd down the chain into *p (0, or -1 with s->run_err), and its energy on the run's GPUs. */
struct sim;
struct sim_pricing {
    int (*step)(struct sim *s, struct step_price *p);
    double (*joules)(const struct sim *s, const struct step_price *p);
};

/* A run's distinct reject reasons, at most (a request's row: sim_record.h). */
#define SIM_MAX_REASONS 16

struct sim {
    struct sim_queues q; /* first: a scheduler reads it through sched_view.h's inline accessors */
    struct sim_config cfg;
    struct model_cfg model;
    struct gpu_spec gpu;
    struct impl_profile impl;
    const struct cost_ops *cost;
    struct cost_ctx cctx;
    double op_scale[OP_COUNT]; /* --op-scale (cctx.op_scale where given) */
    struct calib *calib;  /* owned; the calibrated back end's fit */
    bool rounds_host_only;         /* rounds measured beside another card (--rounds-host): their host work alone */
    struct rounds_profile *rounds; /* owned; an implementation priced by its rounds (rounds.h), where the GPU
                                    * and model have them (NULL: priced as its base) */
    const struct planner_ops *planner; /* activation reservations (planner.h) */
    struct act_cache *act_plans;       /* the planner's plans by shape (owned) */
    struct ts_err run_err;
    bool failed;
    struct sim_executor ex; /* live mode when ex.step is set */
    struct sim_setup setup;          /* the parts cfg names, resolved once (sim_setup_resolve) */
    const struct policy_ops *pol;    /* (setup.policy) */
    struct policy_cfg pcfg;
    int64_t decode_state_tokens; /* pool tokens a running request's decode state takes (credit's matrix) */
    struct allreduce_model allreduce; /* --tp > 1: the all-reduce's times */
    struct clock_params clock;        /* --clock: the card's clock under its power limit */
    struct clock_state clock_st;
    struct decode_model dm;
    bool decode_moved;  /* load control set the decoder off its profile's setting (sim_scale_decode) */
    double acc_sum;     /* the tokens committed, each weighted by the decoder's accuracy then (dm.accuracy) */
    double tpf_base; /* dm's TPF as configured (sim_scale_decode scales from it) */
    const struct sched_ops *sched;
    void *sched_state;
    double sched_p[PARAMS_MAX]; /* the scheduler's parameters, resolved (sched_ops.params) */
    char code_version[64];

    /* the requests (sim_requests.c): from the workload's stream, each when the one before it
     * arrives, in chunks of SIM_REQ_CHUNK by id (sim_request), a chunk freed once all of its requests
     * are recorded (sim_record) unless keep_requests (for tests that read them after the run) */
    struct trace trace;          /* a trace file's requests, streamed in order (generated ones are not held) */
    struct trace length_src;     /* --lengths file:PATH: the rows generated lengths are drawn from */
    struct trace_stream stream;
    int64_t num_reqs;            /* the workload's requests */
    /* q.num_arrived: those taken from the stream so far (ids 0 .. num_arrived - 1); q.chunks:
     * [ceil(num_reqs / SIM_REQ_CHUNK)], NULL before and after */
    int32_t *chunk_left;         /* each chunk's requests not yet recorded */
    int64_t num_chunks;
    size_t cap_chunks;           /* (a fed instance's, whose chunks grow) */
    bool keep_requests;
    bool fed;                    /* its requests are fed to it (sim_feed: a fleet's replica), not streamed */
    int32_t wl_L_max, wl_G_max;  /* the longest request's L and G among those within the model's positions */
    /* the recorded requests: finished ones' latencies (int64 ns) and every one's database row
     * (ts_spill_write's records, SIM_REQ_ROW values) in unnamed temporary files, their statistics */
    FILE *lat_spill, *req_spill;
    int64_t lat_min_ns, lat_max_ns;
    gsl_rstat_workspace *lat_st, *ttfb_st, *queue_st; /* running statistics (s) of the finished */
    /* the arrival of the request a third of the way through the workload, and of its last (-1 until
     * pulled), and the requests gone (finished or rejected) before each: the requests outstanding then */
    int64_t at_arrival_ns[2], gone_before[2];
    const char *reasons[SIM_MAX_REASONS]; /* the reject reasons met, each once, and how often */
    int64_t reason_n[SIM_MAX_REASONS];
    int num_reasons;
    /* an early stop (sim_set_watch): its bounds, the requests done that missed each, whether it stopped */
    struct sim_watch watch;
    int64_t watch_missed[SIM_WATCH_MAX], watch_groups;
    bool stopped;
    int stopped_by;

    /* disaggregation (sim_set_hand): the handing rule, and the requests handed on since
     * sim_take_handoffs last took them */
    enum sim_hand hand;
    struct sim_handoff *handoffs;
    size_t num_handoffs, cap_handoffs;

    struct sim_mem mem;   /* memory: the scheduler's book (sched_view.h) */
    int32_t act_layout;   /* enum og_layout (cfg.act_layout) */
    struct prompt_cache *prompts; /* --prompt-cache: prompt blocks kept across requests, or NULL */

    /* the step being built / executed */
    struct step_desc sd;
    int32_t peak_canvases;     /* vLLM's sampler: the most segments with logits a step has had (sim_sampler_judge) */
    int32_t sampler_holds;     /* the canvases a step holds within vLLM's memory (sim_sampler_setup); -1: not judged */
    struct step_desc draft_sd; /* a speculative policy's drafter forward of the step (price_drafter) */
    int64_t now_ns;
    int64_t step_extra_ns; /* swap traffic charged to the current step */
    bool busy;
    struct event_queue evq;

    /* records */
    /* where step rows stream during the run, every SIM_STEP_BATCH steps (sim_set_step_sink sets it):
     * the rows recorded since the last call (steps[0..num_steps), segs) handed over and dropped; -1
     * with err where they cannot be taken. NULL: kept in memory. */
    sim_step_sink flush_steps;
    void *flush_ctx;
    int64_t steps_flushed;   /* step rows handed to out before steps[0] */
    struct step_rec *steps;
    size_t num_steps, cap_steps;
    struct segment *segs;
    size_t num_segs, cap_segs;
    struct sim_summary sum;
    int64_t num_done; /* finished + rejected */
    double progress_next_s, progress_t0; /* the progress line: its next update, and its first (wall s) */
    /* the pricing chain (pricing_resolve): its links' rows in pricing.c, and what the step is of its
     * round, as a scheduler of rounds says (rounds.h) */
    const struct sim_pricing *pricing;
    int pricer_link[PRICERS_MAX];
    int num_pricers;
    struct round_step round;
};

/* --- the event loop's own services (a scheduler's: sched_view.h) ------------------------- */

_Static_assert(offsetof(struct sim, q) == 0, "sched_view.h reads struct sim_queues at the start of struct sim");
/* Step rows stream to the output every SIM_STEP_BATCH steps, so a run's memory stays bounded. */
#define SIM_STEP_BATCH 4096

/* sim_requests.c: the workload's stream opened (a first pass counts it, finds its longest request
 * and refuses an arrival past the clock) and its first request taken; the next request taken from
 * the stream and its arrival pushed; a finished or rejected request recorded (its statistics, its
 * spilled row and latency, its scheduler's data forgotten, its chunk freed once all of its are); the
 * latency statistics into s->sum at the run's end; everything freed. */
int sim_requests_open(struct sim *s, struct ts_err *err);
/* A fed instance's (sim_create_fed): no stream; the chunks grow as requests are fed. With scan, the
 * workload's stream, opened, is read once for its longest request (the static scheduler's sizing). */
int sim_requests_open_fed(struct sim *s, bool scan, struct ts_err *err);
void sim_requests_pull(struct sim *s);
void sim_record(struct sim *s, struct request *r);
/* Hands running request r on (sim_set_hand): its K/V freed, itself copied out to s->handoffs; cache:
 * its next step reads its cache, which then moves with it (else its token ids do). */
void sim_hand_on(struct sim *s, struct request *r, bool cache);
/* r, done here (recorded or handed on, its scheduler's data forgotten by the caller), let go: its
 * chunk freed once every request of it is. */
void sim_let_go(struct sim *s, struct request *r);
void sim_requests_summary(struct sim *s);
void sim_requests_free(struct sim *s);
void sim_remove_running(struct sim *s, int32_t id);
/* Whether a watched run (sim_set_watch) is now certain to miss one of its bounds: it is then stopped. */
bool sim_watch_stops(struct sim *s);
/* What a step of vLLM's DiffusionGemma sampler holds within vLLM's memory, once at create (the
 * scheduler's cap known), and the run's largest step held against it into out's sampler_* (sim_sampler.c). */
void sim_sampler_setup(struct sim *s);
void sim_sampler_judge(const struct sim *s, struct sim_summary *out);

#endif
