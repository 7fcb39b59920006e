/* planner.c: the planner table, the arena heuristics (first-fit, greedy-size), profiled, the overlap
 * check. */
#define _POSIX_C_SOURCE 200809L
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool alive_together(const struct og_tensor *a, const struct og_tensor *b)
{
    return a->first <= b->last && b->first <= a->last;
}

struct span {
    int64_t lo, hi;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The offset for a tensor of `size` bytes among the n spans of the placed tensors alive with it:
 * the lowest that fits (best = false) or the smallest gap that fits (best = true). Sorts buf. */
static int64_t place(struct span *buf, int n, int64_t size, bool best)
{
    qsort(buf, (size_t)n, sizeof *buf, cmp_span);
    int64_t cursor = 0, best_off = -1, best_gap = INT64_MAX;
    for (int k = 0; k < n; k++) {
        if (buf[k].lo > cursor) {
            int64_t gap = buf[k].lo - cursor;
            if (gap >= size) {
                if (!best)
                    return cursor;
                if (gap < best_gap) {
                    best_gap = gap;
                    best_off = cursor;
                }
            }
        }
        cursor = TS_MAX(cursor, buf[k].hi);
    }
    return best_off >= 0 ? best_off : cursor;
}

/* Sort keys carry what the comparators need (qsort has no context argument). */
struct order_key {
    int32_t first, idx;
    int64_t bytes;
};

static int cmp_by_first(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;
    if (x->first != y->first)
        return (x->first > y->first) - (x->first < y->first);
    if (x->bytes != y->bytes)
        return (x->bytes < y->bytes) - (x->bytes > y->bytes);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_by_size(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;
    if (x->bytes != y->bytes)
        return (x->bytes < y->bytes) - (x->bytes > y->bytes);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int arena_plan(const struct opgraph *g, bool by_size, struct plan *out)
{
    const size_t cap = (size_t)(g->n ? g->n : 1);
    int (*cmp)(const void *, const void *) = by_size ? cmp_by_size : cmp_by_first;
    /* (one block for the order, the placed list and the spans) */
    struct order_key *order = xmalloc(cap * (sizeof *order + sizeof(int32_t) + sizeof(struct span)));
    struct span *buf = (struct span *)(order + cap);
    int32_t *placed = (int32_t *)(buf + cap);
    bool sorted = true;
    for (int32_t i = 0; i < g->n; i++) {
        order[i] = (struct order_key){g->t[i].first, i, g->t[i].bytes};
        sorted = sorted && (i == 0 || cmp(&order[i - 1], &order[i]) < 0);
    }
    if (!sorted) /* (a graph is mostly built in order of first use) */
        qsort(order, (size_t)g->n, sizeof *order, cmp);
    out->offsets = xcalloc(cap, sizeof *out->offsets);
    /* the placed tensors a new one may overlap: in order of first use, those whose life reaches its
     * first op (each began no later than it), so the list stays as short as the graph is wide;
     * by size, every placed tensor, filtered by lifetime */
    int32_t num_placed = 0;
    int64_t arena = 0;
    for (int32_t k = 0; k < g->n; k++) {
        int32_t i = order[k].idx, n = 0, kept = 0;
        for (int32_t a = 0; a < num_placed; a++) {
            const int32_t j = placed[a];
            if (!alive_together(&g->t[i], &g->t[j])) {
                if (by_size || g->t[j].last >= g->t[i].first)
                    placed[kept++] = j; /* by first use, a tensor that ended before i is done with */
                continue;
            }
            placed[kept++] = j;
            buf[n++] = (struct span){out->offsets[j], out->offsets[j] + g->t[j].bytes};
        }
        num_placed = kept;
        out->offsets[i] = place(buf, n, g->t[i].bytes, by_size);
        placed[num_placed++] = i;
        arena = TS_MAX(arena, out->offsets[i] + g->t[i].bytes);
    }
    out->arena_bytes = arena;
    free(order);
    return 0;
}

int plan_first_fit(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err)
{
    (void)o, (void)err;
    return arena_plan(g, false, out);
}

int plan_greedy_size(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err)
{
    (void)o, (void)err;
    return arena_plan(g, true, out);
}

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

void plan_free(struct plan *p)
{
    if (!p)
        return;
    free(p->offsets);
    p->offsets = NULL;
}

int plan_find_overlap(const struct opgraph *g, const struct plan *p)
{
    if (!p->offsets)
        return -1;
    for (int32_t i = 0; i < g->n; i++) {
        if (p->offsets[i] < 0 || p->offsets[i] + g->t[i].bytes > p->arena_bytes)
            return i;
        for (int32_t j = i + 1; j < g->n; j++)
            if (alive_together(&g->t[i], &g->t[j]) && p->offsets[i] < p->offsets[j] + g->t[j].bytes &&
                p->offsets[j] < p->offsets[i] + g->t[i].bytes)
                return i;
    }
    return -1;
}
