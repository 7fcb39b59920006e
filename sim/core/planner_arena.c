/* planner_arena.c: the arena heuristics (first-fit, greedy-size), a plan's release and the overlap
 * check (planner.h). */
#define _POSIX_C_SOURCE 200809L
#include "planner.h"

#include <stdlib.h>

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
