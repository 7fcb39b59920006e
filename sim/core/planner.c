/* planner.c: the planner table, and profiled (the caching reservation at a reference step). */
#define _POSIX_C_SOURCE 200809L
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t plan_profiled_reservation(int64_t caching) { return caching + caching / 20; }

static int plan_profiled(const struct opgraph *g, const struct planner_opts *o, struct plan *out,
                         struct ts_err *err)
{
    const struct opgraph *ref = o->profiled_graph ? o->profiled_graph : g;
    struct plan c = {0};
    if (plan_caching(ref, o, &c, err))
        return -1;
    out->arena_bytes = plan_profiled_reservation(c.arena_bytes);
    out->allocated_peak = c.allocated_peak;
    snprintf(out->note, sizeof out->note, "reservation of the profiled step (%s), +5%% guard band",
             o->profiled_graph ? "max_num_batched_tokens" : "this step");
    plan_free(&c);
    if (o->profiled_graph && opgraph_peak(g) > out->arena_bytes)
        return ts_fail(err, "profiled planner: this step needs %.2f GiB of activations, more than the "
                            "%.2f GiB reserved at the profiled step", opgraph_peak(g) / TS_GIB,
                       out->arena_bytes / TS_GIB);
    /* inside the reservation the step's own tensors go where the caching allocator puts them */
    if (plan_caching(g, o, &c, err))
        return -1;
    out->offsets = c.offsets;
    if (c.arena_bytes > out->arena_bytes) {
        out->arena_bytes = c.arena_bytes;
        snprintf(out->note, sizeof out->note, "the step's caching segments (%.2f GiB) outgrow the profiled "
                 "reservation", c.arena_bytes / TS_GIB);
    }
    return 0;
}

static const struct planner_ops planners[] = {
    {"caching", "PyTorch's CUDA caching allocator: 512 B rounding, 2/20 MiB segments, best fit, "
                "splits, nothing returned (reserved vs allocated)", plan_caching},
    {"profiled", "dLLM-Serve: the caching reservation at max_num_batched_tokens with "
                 "max_num_logits, +5%", plan_profiled},
    {"first-fit", "Mosaic: one arena, tensors by first use at the lowest free offset", plan_first_fit},
    {"greedy-size", "TFLite greedy by size: largest first into the best-fitting gap", plan_greedy_size},
    {"ilp", "exact offsets with GLPK (small graphs, time-limited, else the best heuristic)", plan_ilp},
};

const struct planner_ops *planner_get(int i)
{
    return i >= 0 && (size_t)i < TS_ARRAY_LEN(planners) ? &planners[i] : NULL;
}

const struct planner_ops *planner_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(planners); i++)
        if (ts_name_eq(planners[i].name, name))
            return &planners[i];
    return NULL;
}

static const char *planner_name_at(int i) { return planner_get(i) ? planner_get(i)->name : NULL; }

int planner_resolve(const char *name, const struct planner_ops **out, struct ts_err *err)
{
    *out = planner_find(name);
    if (*out)
        return 0;
    char list[128];
    ts_join_names(list, sizeof list, planner_name_at);
    return ts_fail(err, "unknown planner '%s' (known: %s)", name, list);
}

void planner_opts_defaults(struct planner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->ilp_time_limit_s = 10;
    o->ilp_max_tensors = 40;
}

int planner_run(const struct planner_ops *p, const struct opgraph *g, const struct planner_opts *o,
                struct plan *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    double t0 = ts_cpu_s(); /* CPU time: a busy machine's other work does not count */
    int rc = p->plan(g, o, out, err);
    out->plan_us = (ts_cpu_s() - t0) * 1e6;
    out->theoretical = opgraph_peak(g);
    return rc;
}
