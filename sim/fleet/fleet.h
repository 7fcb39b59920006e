/*
 * fleet.h: a fleet of serving instances (replicas) behind one router (the room sim/fleet/). Each replica is a simulator
 * instance of its own configuration (card, model, system, TP degree: fleets may mix them) whose
 * requests are fed to it (sim_create_fed); the router takes the workload's arrivals in order and
 * places each on a replica by its policy, from what it sees of the replicas' load.
 *
 * What the router sees: each replica's load (sim_load) as it was at the last refresh of its view,
 * every `staleness` seconds of simulated time (0: at every arrival), plus the requests it has sent
 * each replica since (a router knows what it routed). Admission control: with admit_max > 0 a
 * request that finds every replica holding admit_max outstanding requests or more (as the router
 * sees them) is refused by the fleet, or with defer held back, in arrival order, and routed once a
 * replica has room (at a refresh of the view), its latency counted from its arrival.
 *
 * The autoscaler (fleet_scale), where on, starts with `min` replicas up and the rest stopped. Every
 * `every` seconds it reads the replicas' load: where the requests outstanding on the replicas up
 * average more than `up`, it starts a stopped one (none starting yet), which takes requests `delay`
 * seconds later; where they average fewer than `down`, at most once a `cooldown`, it drains the up
 * replica holding the fewest (it takes no more and stops once it holds none). A replica draws its
 * idle power from its start to its stop, nothing while stopped.
 *
 * Refresh/Reuse disaggregation (fleet_disagg): the first `refresh` replicas form the Refresh pool,
 * the rest the Reuse pool. Arrivals go to the Refresh pool. With mode `first` a request's first step
 * runs there and the rest of its life in the Reuse pool (prefill/decode disaggregation's dLLM form);
 * with `every`, each step that rebuilds the cache (Refresh, prefill) runs in the Refresh pool and each
 * step that reads it (Reuse) in the Reuse pool, the request moving at every change. A move carries
 * the request's K/V where its next step reads them, else its token ids, over the link: each GPU
 * sends and receives over a port of its own at the link's bandwidth, one transfer at a time (a
 * transfer waits for its sender's and its receiver's port), and takes the link's latency on top.
 * The router picks the receiving replica of the other pool as it picks for an arrival. Replicas
 * then run in one order of time: every event of the fleet, and every transfer's arrival, in turn.
 *
 * Load control (fleet_tau, DiLaServe's lever): every `every` seconds while requests arrive, where the
 * requests outstanding average more than `up` a replica open, the fleet lowers its decode threshold
 * by `step` (to `lo` at most); where they average fewer than `down`, it raises it by `step` (to
 * `tau0`, the decode model's own). A threshold tau sets every replica's tokens a step beyond the first
 * to those of its decode model times ((1 - tau) / (1 - tau0))^elasticity: the share of masked tokens
 * confident enough to commit grows with the share a lower threshold lets through. The elasticity is
 * an assumption (no profile holds TPF against the threshold), swept in `tessera exp run fleet`.
 *
 * Prompt affinity (router `affinity`, SGLang's cache-aware router): the fleet keeps, for each replica,
 * a picture of its prompt cache (prompt_cache.h): the whole prompt blocks of the requests routed to
 * it, as many blocks as its cache may grow to (its --prompt-cache, bounded by its KV pool), least
 * recently routed evicted first. SGLang's router
 * keeps such a tree of the prompts it routed, not the workers' own caches, and so may believe a block
 * cached that the replica evicted. Where the replicas' outstanding requests are out of balance (the
 * most exceeds the fewest by more than `abs` and by more than `rel` times), the request goes to the
 * replica holding the fewest; else to the replica whose picture holds most of its leading blocks, where
 * that is more than `threshold` of them; else to the replica whose picture holds the fewest blocks.
 * Every replica needs a prompt cache, and the workload prompt block ids (a Mooncake trace).
 *
 * Adding a router: its pick and one `const struct router_ops` row of fleet_spec.c's table: its name, help and pick.
 * Adding a link: one row of fleet_spec.c's link table: its name, bandwidth, latency and source.
 */
#ifndef TESSERA_FLEET_H
#define TESSERA_FLEET_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "sim.h"
#include "util.h"

/* A replica's load as the router sees it. */
struct router_view {
    struct sim_load load; /* at the view's last refresh */
    int64_t sent;         /* requests routed to it since */
    bool closed;          /* it takes no requests (stopped, starting or draining) */
    /* an affinity router's picture of its prompt cache: the routed request's leading whole prompt
     * blocks it holds, and the blocks it holds in all */
    int32_t match;
    int64_t held;
};

/* The request being routed as a router that weighs prompts sees it: its whole prompt blocks (0: none
 * known, or a move between pools), and the affinity router's parameters. */
struct router_req {
    int32_t blocks;
    double threshold, balance_abs, balance_rel;
};

struct router_ops {
    const char *name;
    const char *help;
    /* The replica (0..n, an open one: one is) for request q; *next is the router's own cursor (round
     * robin's next replica, and where ties start from). */
    int (*pick)(const struct router_view *v, int n, int *next, const struct router_req *q);
    bool affinity; /* it reads the views' match and held (the fleet keeps its picture of each cache) */
};

/* --router's value: NAME, or for affinity NAME:KEY=VALUE,... of threshold (the share of a request's
 * prompt blocks a replica must hold to win it), abs and rel (the balance test), the ones left out at
 * SGLang's router's defaults (0.5, 32, 1.1). *q gets the parameters (its blocks 0). */
int fleet_router_parse(const char *spec, const struct router_ops **ops, struct router_req *q, struct ts_err *err);
const struct router_ops *router_find(const char *name);
const struct router_ops *router_get(int i); /* the i-th of the table, NULL past its end */
void router_list(char *buf, size_t len);

struct fleet_scale {
    bool on;
    int min;                 /* replicas up at the start, and at least */
    double up, down;         /* the outstanding requests a replica up averages to start one, to drain one */
    double every_s, delay_s, cooldown_s;
};
/* --autoscale's value: "" (off), or KEY=VALUE,... of min, up, down, every (at least 0.01 s), delay,
 * cooldown (the ones left out at 1, 8, 2, 10 s, 60 s, 120 s). */
int fleet_scale_parse(const char *spec, struct fleet_scale *out, struct ts_err *err);

/* The autoscaler at one of its readings: replicas up, starting, and the requests outstanding on all. */
struct fleet_scale_point {
    double t_s;
    int up, starting;
    int64_t outstanding;
};

/* A link between the pools: bytes/s a GPU one way (0: each card's own link to its peers, NVLink or
 * PCIe: the GPU table's link_bw), and the latency of one transfer. */
struct fleet_link {
    const char *name;
    double bw, lat_s;
    const char *source;
};
const struct fleet_link *fleet_link_get(int i); /* the i-th of the table, NULL past its end */

struct fleet_tau {
    bool on;
    bool tau0_given;       /* tau0 set by the spec; else the decode models' own (their profile's tau, or 0.9) */
    double tau0, lo, step; /* the decode model's threshold, the lowest allowed, the change a reading */
    double up, down;       /* the outstanding requests a replica open averages to lower it, to raise it */
    double every_s, elasticity;
};
/* --load-control's value: "" (off), or KEY=VALUE,... of lo, step, up, down, every (seconds, at least
 * 0.01), tau0, elasticity (the ones left out at 0.7, 0.05, 8, 2, 10 s, the decode models' own, 1: the
 * threshold their profiles were measured at where all say the same, else 0.9; lo below it is checked
 * once it is known, at the fleet's start). */
int fleet_tau_parse(const char *spec, struct fleet_tau *out, struct ts_err *err);
/* The threshold at one of load control's readings: its value, the replicas' mean TPF then, and the
 * requests outstanding on them. */
struct fleet_tau_point {
    double t_s, tau, tpf;
    int64_t outstanding;
};

enum fleet_disagg_mode { DISAGG_OFF = 0, DISAGG_FIRST, DISAGG_EVERY };
struct fleet_disagg {
    int mode;              /* enum fleet_disagg_mode */
    int refresh;           /* the Refresh pool's replicas, the fleet's first (0: half of them) */
    struct fleet_link link; /* its bw and lat_s as the spec sets them */
};
/* --disagg's value: "" (off), or first|every then ,KEY=VALUE of refresh (replicas), link (a name of
 * the table: required), bw (GB/s a GPU, over the link's) and lat (microseconds, over the link's). */
int fleet_disagg_parse(const char *spec, struct fleet_disagg *out, struct ts_err *err);

struct fleet_opts {
    const struct router_ops *router;
    struct router_req affinity; /* the affinity router's parameters (fleet_router_parse) */
    struct fleet_scale scale;
    double staleness_s; /* the view's refresh interval (0: every arrival) */
    int64_t admit_max;  /* > 0: refuse (or defer) a request every replica holds this many for */
    bool defer;         /* hold such requests back instead of refusing them */
    struct fleet_disagg disagg;
    struct fleet_tau tau;
    const struct sim_executor *ex; /* [n]: live, replica i's steps run by ex[i] (NULL: the cost model) */
    /* live: called once the run's input has passed its checks, before its first arrival, to start what
     * runs ex's steps and fill ex (the engine workers); nonzero refuses the run with err */
    int (*live_open)(void *ctx, struct ts_err *err);
    void *live_ctx;
    /* live and disaggregated: each move that carries K/V run between the engines, its measured time in
     * place of the link's model. live_move copies the K/V replica `from`'s executor set aside under
     * `ticket` (sim_executor.hold) to replica `to`, held there under `key` (the move's own, unique
     * among those in flight) and freed at the sender, the copy's time in *seconds; live_adopt gives
     * them to request req_id there once it arrives. Nonzero fails the run with err. */
    int (*live_move)(void *ctx, int from, int64_t ticket, int to, int64_t key, double *seconds, struct ts_err *err);
    int (*live_adopt)(void *ctx, int to, int64_t key, int32_t req_id, struct ts_err *err);
    bool progress;      /* a progress line on stderr */
};

/* The fleet's results: its summary over every replica's requests, and each replica's own. */
struct fleet_result {
    int n;
    struct sim_summary fleet;       /* merged: counts and tokens summed, latencies over all finished
                                     * requests (percentiles exact), energy the replicas'; run_wall_s
                                     * the host's wall time of the whole fleet_run */
    struct sim_summary *replica;    /* [n], each one's energy over its time up (its steps', and its idle
                                     * draw the rest of that time) */
    int64_t *routed;                /* [n] requests routed to each */
    int64_t refused;                /* requests the fleet's admission refused */
    int64_t deferred;               /* and those it held back a while */
    double *active_s;               /* [n] each replica's time up (started to stopped) */
    /* The control loops' readings, in time, kept where they show a change: of a run of equal
     * readings (all but their time) its first and its last, so that their count is bounded by the
     * changes (arrivals, finishes, replicas started and stopped, thresholds moved), not by the run's
     * span over `every`, and a plot through them, by steps or by lines, draws every reading taken. */
    struct fleet_scale_point *scale; /* the autoscaler's */
    int64_t nscale, scale_taken;     /* kept, and taken */
    double up_mean;                  /* replicas up, averaged over the readings taken */
    int started, stopped;            /* replicas the autoscaler started, and drained */
    struct fleet_tau_point *tau;     /* load control's */
    int64_t ntau, tau_taken;         /* kept, and taken */
    double tau_mean;                /* the threshold over the readings' span, weighted by time */
    double tau0;                    /* the threshold load control began at and returns to */
    bool tau_swept;                 /* the replicas' decoders move along their profiles' published sweeps */
    int refresh_pool;               /* disaggregated: the Refresh pool's replicas (0: co-located) */
    int64_t handoffs, handoffs_kv;  /* requests moved between the pools, and those that took their K/V */
    double moved_bytes;             /* over the link */
    double xfer_s, xfer_wait_s;     /* the moves' time, left to arrived, summed; the part spent waiting for a port */
    int64_t moves_live;             /* live: the moves run between the engines (those with K/V) */
    double move_live_s, move_model_s; /* and their copies' measured time, summed, against the link's model */
};

/* The files a replica keeps open (sim_requests.c: its finished requests' two spills), and those the
 * process keeps besides. */
#define FLEET_FILES_PER_REPLICA 2
#define FLEET_FILES_BESIDE 64
/* Whether this process may open the files n replicas keep: 0 (its soft limit raised to them where its
 * hard limit allows), or -1 with err naming the count, the files and `ulimit -n`. fleet_run checks it
 * first; a command line checks it before any work. */
int fleet_room(int n, struct ts_err *err);

/* Runs the workload of `workload` (its trace or generator options) through replicas with configs
 * cfg[0..n) behind the router. Returns FLEET_REFUSED with err where the run is refused before its
 * first arrival (bad input: more replicas than the process may open files for (fleet_room); a
 * replica that cannot be built, naming it; a workload that cannot be read; prompt caches the
 * workload cannot feed), -1 with err where it fails later (a step that
 * cannot be priced). */
#define FLEET_REFUSED 2
int fleet_run(const struct sim_config *workload, const struct sim_config *cfg, int n, const struct fleet_opts *o,
              struct fleet_result *out, struct ts_err *err);
void fleet_result_free(struct fleet_result *r);

#endif
