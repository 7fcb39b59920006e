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
/* How a run of c (model, implementation im) takes a runtime's rounds measured whole (rounds.h), decided
 * here alone (the simulator's pricing chain, the interval's sources and the summary read it):
 *   ROUNDS_WHOLE      the card's own rounds price each step whole;
 *   ROUNDS_HOST_ONLY  their host's work between rounds alone, the forwards priced as im's base: rounds
 *                     measured beside another card (--rounds-host), or the card's own under FP8 weights
 *                     (they ran bf16: bf16_only);
 *   ROUNDS_NONE       priced as im's base (no rounds for the card, the model or the parallelism).
 * The profile is DATADIR/rounds/CARD-MODEL-IMPL.csv, measured on one GPU (no tensor or expert
 * parallelism). A --rounds-host whose rounds are not there leaves ROUNDS_NONE with its card set: the
 * simulator refuses it. */
enum rounds_use { ROUNDS_NONE, ROUNDS_WHOLE, ROUNDS_HOST_ONLY };
struct rounds_source {
    enum rounds_use use;
    bool bf16_only;
    const char *card; /* whose rounds (c->gpu or c->rounds_host); NULL: neither asked */
    char path[4096];
};
void sim_rounds_source(const struct sim_config *c, const char *model, const struct impl_profile *im,
                       struct rounds_source *out);

#endif
