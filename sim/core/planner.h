/*
 * planner.h: activation-memory planners over an op graph. A planner turns the
 * graph's tensors (sizes, lifetimes) into memory: offsets in one arena (first-fit, greedy-size,
 * ilp), or the reserved segments of an allocator (caching), or a fixed budget (profiled).
 *
 *   first-fit    Mosaic: tensors in order of first use (larger first on ties), each at the lowest
 *                offset free over its whole lifetime
 *   greedy-size  TFLite's greedy by size: largest first, each into the smallest gap that fits
 *   ilp          exact offsets minimising the arena with GLPK (binary order variables for every pair
 *                of tensors alive together); time-limited, for small graphs; falls back to the best
 *                heuristic and says so
 *   caching      a model of PyTorch's CUDA caching allocator: 512 B rounding, a small pool (<= 1 MiB)
 *                carved from 2 MiB segments, large requests from 20 MiB segments below 10 MiB and
 *                otherwise rounded to 2 MiB, best fit, blocks split when the rest is >= 512 B (small)
 *                or > 1 MiB (large), neighbours merged on free, nothing returned to the device:
 *                reports reserved beside allocated
 *   profiled     dLLM-Serve: the caching allocator's reservation at the profiled step
 *                (max_num_batched_tokens with max_num_logits) plus a 5% guard band, whatever the step
 *
 * Adding a planner: a function of this signature and one line in the table of planner.c.
 */
#ifndef TESSERA_PLANNER_H
#define TESSERA_PLANNER_H

#include <stdbool.h>
#include <stdint.h>

#include "opgraph.h"
#include "util.h"

struct plan {
    int64_t *offsets;       /* [n] arena offsets (caching: segments laid end to end); owned */
    int64_t arena_bytes;    /* arena size, or reserved bytes (caching/profiled) */
    int64_t allocated_peak; /* caching: the largest allocated sum (rounded sizes) */
    int64_t theoretical;    /* the graph's theoretical peak */
    double plan_us;         /* planning time (the thread's CPU time) */
    bool optimal;           /* ilp: proved optimal */
    char note[160];
};

struct planner_opts {
    double ilp_time_limit_s;    /* default 10 */
    int ilp_max_tensors;        /* larger graphs fall back to the heuristics; default 40 */
    const struct opgraph *profiled_graph; /* profiled: the graph of the profiled step */
};

struct planner_ops {
    const char *name;
    const char *help;
    int (*plan)(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err);
};

const struct planner_ops *planner_find(const char *name);
const struct planner_ops *planner_get(int i);
int planner_resolve(const char *name, const struct planner_ops **out, struct ts_err *err);
void planner_opts_defaults(struct planner_opts *o);
/* Runs a planner, timing it and filling the theoretical peak. */
int planner_run(const struct planner_ops *p, const struct opgraph *g, const struct planner_opts *o,
                struct plan *out, struct ts_err *err);
void plan_free(struct plan *p);
/* Checks that no two tensors alive at the same op overlap in an offset plan (the invariant every
 * arena planner keeps); returns the index of an offending tensor or -1. */
int plan_find_overlap(const struct opgraph *g, const struct plan *p);

/* the arena planners, for the ILP's fallback and the tests */
int plan_first_fit(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err);
int plan_greedy_size(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err);
int plan_ilp(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err);
int plan_caching(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err);
/* What the profiled planner reserves for a caching allocator that reserved `caching` bytes at the
 * profiled step: 5% more (dLLM-Serve's guard band). */
int64_t plan_profiled_reservation(int64_t caching);

#endif
