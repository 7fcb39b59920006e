/*
 * setup.h: the parts a configuration names, resolved once from it: its policy, scheduler and their
 * parameters, its implementation profile, cost model, activation planner and decode model. A
 * simulator is made from one (sim_create keeps it: sim_setup_of); replay, calib eval and the stored
 * configuration resolve theirs with the same function, so a name is looked up in one place.
 */
#ifndef TESSERA_SETUP_H
#define TESSERA_SETUP_H

#include "cost.h"
#include "decode.h"
#include "parts.h"
#include "planner.h"

struct sim_config;
struct sim_setup {
    const struct policy_ops *policy;
    const struct sched_ops *sched;
    struct run_params params;
    struct impl_profile impl; /* as named (--host's measured costs are the simulator's to add) */
    const struct cost_ops *cost;
    const struct planner_ops *planner;
    struct decode_model decode; /* as parsed (the run's EOS rule is the simulator's to set) */
};

/* c's setup into *out: 0, or -1 with err naming the part that does not resolve (an unknown policy,
 * scheduler, implementation, cost model or planner, with the known ones; a parameter neither the
 * policy nor the scheduler declares; a decode model that does not parse). */
int sim_setup_resolve(const struct sim_config *c, struct sim_setup *out, struct ts_err *err);
/* Where implementation im is priced by its rounds (rounds.h): the profile measured for gpu and model
 * on one GPU (no tensor or expert parallelism), DATADIR/rounds/GPU-MODEL-IMPL.csv, into out; 1 when
 * there is one, 0 when the run is priced as im's base. */
int sim_rounds_path(const struct sim_config *c, const char *gpu, const char *model, const struct impl_profile *im,
                    char *out, size_t len);

#endif
