/*
 * parts.h: the registries whose entries declare parameters (params.h), taken together: policies
 * and schedulers. A run's chosen policy and scheduler get their parameters resolved from the values
 * the user gave (by name), and a value that neither declares is refused, naming the entries that
 * do. The command line's options, --help, `tessera list` and the stored configuration walk the
 * same entries (parts_get).
 */
#ifndef TESSERA_PARTS_H
#define TESSERA_PARTS_H

#include "params.h"
#include "policy.h"
#include "sched.h"

/* An entry that declares parameters. */
struct part {
    const char *kind; /* "policy" or "scheduler" */
    const char *name;
    const struct param_spec *params;
    int num_params;
};

/* The i-th entry over every policy and then every scheduler; 0 past the end. */
int parts_get(int i, struct part *out);

/* The parameters of a run's chosen policy and scheduler, resolved in declaration order. */
struct run_params {
    double policy[PARAMS_MAX];
    double sched[PARAMS_MAX];
};
int parts_resolve(const struct policy_ops *po, const struct sched_ops *so, const struct param_values *given,
                  struct run_params *out, struct ts_err *err);

#endif
