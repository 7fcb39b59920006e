/* cli_plan.h: what tessera plan's two commands share (cli_plan.c, cli_plan_size.c). */
#ifndef TESSERA_CLI_PLAN_H
#define TESSERA_CLI_PLAN_H

#include <stdbool.h>

#include "config.h"
#include "plan.h"

/* The plan's own options (cli_plan.c's table), taken out of argv; rest[0..nrest) the rest, argv[0]
 * first, for tessera sim's parser. */
struct plan_args {
    struct plan_slo slo;
    struct plan_search search;
    int confidence; /* the robust capacity's interval, percent (0: none) */
    bool early;
    double rps;     /* size: the load */
    const char *space, *prices, *out;
    char acc_task[32];
    double acc_min; /* acc_task "": no floor */
    double kwh_price;
    int max_replicas, jobs;
    bool force, slurm;
    int shard, shards; /* --shard K/N: the candidates i with i % N == K - 1 (shards 0: all) */
    char **rest;
    int nrest;
};
/* 0, or -1 said on stderr. size: the options of plan size too. */
int cli_plan_parse(int argc, char **argv, bool size, struct plan_args *a);
void cli_plan_args_free(struct plan_args *a);
/* The options' help lines. */
void cli_plan_options_help(bool size);
/* What a plan does not take (a live run, a database, an interval, a fleet file or autoscaler): -1 with
 * err naming it. */
int cli_plan_refuses(const struct sim_config *c, struct ts_err *err);

/* A configuration's capacity: the point search's probes, and the robust one's. */
struct plan_result {
    struct plan_capacity point, robust;
    struct plan_run *runs; /* [nruns] the point search's probes, in order */
    int nruns, stopped;
    int64_t request_steps;
    double wall_s, robust_wall_s;
    bool robust_done;
    char unbounded[256];   /* the interval's sources never measured for the setup ("": none) */
};
/* fleet: the fleet to search (a fleet file's or an autoscaler's, cli_fleet_build), or NULL: c itself
 * (one instance, or its --replicas fleet). */
int cli_plan_capacity_of(const struct sim_config *c, const struct plan_fleet *fleet, const struct plan_args *a,
                         struct plan_result *out, struct ts_err *err);

/* Where a configuration's interval is judged (the robust capacity): the SLO at the pessimistic end of
 * each term's central `level`% over `runs` replicates (cli_interval.c's sources): the share's low end,
 * the mean's high end; and not more than the interval's tail of the replicates overloaded. unbounded
 * gets the sources never measured for its card ("": none), which leave the robust verdict not bounded. */
int plan_judge_robust(const struct sim_config *c, const struct plan_fleet *fleet, const struct plan_slo *slo, int level,
                      int runs, bool *held, char *unbounded, size_t len, struct ts_err *err);


#endif
