/*
 * plan.h: `tessera plan` (sim/docs/plan.md): what a configuration can serve under a service-level
 * objective, and the cheapest configuration that serves a load.
 *
 * An SLO is a list of terms, each a bound a run must keep:
 *   pNN=T        at least NN% of the workload's requests finish within T (a rejected request misses it);
 *   mean=T       the finished requests' mean latency is at most T;
 *   first-block=T (or ttft=T) their mean time to a first decoded block is at most T.
 * A run holds the SLO when it keeps every term and is not overloaded (sim_overload_rule: a queue that
 * grows with the run's length holds any bound only for short enough runs). T is seconds, or ends in
 * ms or s.
 *
 * The capacity of a configuration is the highest offered rate at which it holds the SLO, found by
 * probing (doubling or halving from a start until one rate holds and one above it does not), then
 * bisecting to the tolerance. A single instance's run stops early once it is certain to miss a pNN
 * term (sim_set_watch); its verdict is the one the whole run gives.
 */
#ifndef TESSERA_PLAN_H
#define TESSERA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fleet.h"
#include "sim.h"
#include "util.h"

enum plan_term_kind { TERM_SHARE, TERM_MEAN, TERM_FIRST_BLOCK };
#define PLAN_TERMS 6
struct plan_term {
    int kind;       /* enum plan_term_kind */
    double share;   /* TERM_SHARE: the share of requests that must finish within bound_s */
    double bound_s;
};
struct plan_slo {
    int n;
    struct plan_term t[PLAN_TERMS];
};
/* "p99=5s,mean=2s,...": -1 with err naming the bad term. */
int plan_slo_parse(const char *spec, struct plan_slo *slo, struct ts_err *err);
/* The SLO in words ("99% within 5 s, mean latency at most 2 s"), into buf. */
const char *plan_slo_text(const struct plan_slo *slo, char *buf, size_t len);

/* One run at one rate, judged. */
struct plan_run {
    double rps;                 /* offered */
    bool held;
    bool stopped;               /* stopped early: certain to miss a pNN term */
    bool overloaded;
    int missed;                 /* the first term it missed, -1: none (held, or overloaded only) */
    double value[PLAN_TERMS];   /* each term's figure: the share within its bound, or the mean (s) */
    struct sim_summary m;       /* the run's summary (a stopped run: none, zeros) */
    double stop_s;              /* a stopped run: when */
    int64_t request_steps;      /* the simulator's work (a stopped run's too) */
};
/* The run of c (single instance or --replicas fleet) at c->rps, judged against slo; early: a single
 * instance stops once certain to miss (a fleet runs to its end). -1 with err where it cannot run. */
int plan_judge(const struct sim_config *c, const struct plan_slo *slo, bool early, struct plan_run *out,
               struct ts_err *err);
/* Whether a summary keeps the SLO's mean terms, and the figures of each term (a pNN term's share from
 * missed[k], the requests that missed its bound); the first term missed, or -1. */
int plan_terms(const struct plan_slo *slo, const struct sim_summary *m, const int64_t *missed, double *value);

/* A fleet as a plan runs it: its replicas' configurations and its options (router, autoscaler, ...). */
struct plan_fleet {
    struct sim_config *cfg; /* [n] */
    int n;
    struct fleet_opts o;
};
/* The --replicas fleet of c into f (a fleet file's or an autoscaler's is its command's to make:
 * cli_fleet_build), or -1 with err. plan_fleet_free releases it. */
int plan_fleet_of(const struct sim_config *c, struct plan_fleet *f, struct ts_err *err);
void plan_fleet_free(struct plan_fleet *f);
/* f's replicas' configurations as a judged run takes them (a copy, the caller's to free): a fleet is
 * judged on one percentile term, its bound each replica's slo (its summary then counts the requests
 * within it); NULL with err where the SLO has more than one. */
struct sim_config *plan_fleet_at(const struct plan_fleet *f, const struct plan_slo *slo, struct ts_err *err);
/* plan_terms over a fleet's summary run by plan_fleet_at's replicas (its one pNN term's misses: the
 * requests not within the bound). */
int plan_fleet_terms(const struct plan_slo *slo, const struct sim_summary *m, double *value);
/* Fleet f under the workload of c (its arrivals at c->rps) run to its end and judged against slo, as
 * plan_judge judges a run. */
int plan_judge_fleet(const struct sim_config *c, const struct plan_fleet *f, const struct plan_slo *slo,
                     struct plan_run *out, struct ts_err *err);

/* Whether a rate's replicates (done of them) fail it beyond its SLO's terms: more than tail of them
 * overloaded (the interval's tail, (100 - level) / 200), or any one whose largest step ran vLLM's
 * sampler out of memory (vLLM stops there, whatever the others do). */
bool plan_replicates_fail(int overloaded, int oom, int done, double tail);

/* A judge: whether the configuration holds the SLO at rate rps (ctx its own). */
typedef int (*plan_judge_fn)(void *ctx, double rps, bool *held, struct ts_err *err);
struct plan_search {
    double start_rps;  /* the first rate probed */
    double tolerance;  /* the bisection stops where (failed - held) / held is at most this */
    double min_rps, max_rps; /* the probe goes no lower, no higher */
};
struct plan_capacity {
    double rps;        /* the highest rate that held (0: none did, down to min_rps) */
    double failed_rps; /* the lowest rate above it that did not (0: every rate up to max_rps held) */
    int probes;
};
/* The search (plan.h's head): rates probed through judge. -1 with err where a judge fails. */
int plan_capacity(const struct plan_search *o, plan_judge_fn judge, void *ctx, struct plan_capacity *out,
                  struct ts_err *err);

/* The watch (sim_set_watch) of slo's pNN terms over a workload of n requests: each term's bound and
 * the misses it allows (a share s of n within the bound: n - ceil(s n) may miss it); stop: the run
 * stops once certain to miss one. */
void plan_watch_of(const struct plan_slo *slo, int64_t n, bool stop, struct sim_watch *w);

#endif
