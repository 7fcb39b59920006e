/* act_cache.c: planned activation peaks cached by shape (act_cache.h); open addressing over the
 * shape's fields, the table doubled at half full. */
#include "act_cache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    struct og_shape shape;
    int64_t bytes;
    bool used;
};

struct act_cache {
    const struct model_cfg *m;
    const struct planner_ops *p;
    struct planner_opts o;
    struct opgraph graph; /* scratch */
    struct entry *slots;
    size_t cap, n;
};

struct act_cache *act_cache_create(const struct model_cfg *m, const struct planner_ops *p,
                                   const struct planner_opts *o)
{
    struct act_cache *c = xcalloc(1, sizeof *c);
    c->m = m;
    c->p = p;
    if (o)
        c->o = *o;
    else
        planner_opts_defaults(&c->o);
    c->cap = 64;
    c->slots = xcalloc(c->cap, sizeof *c->slots);
    return c;
}

void act_cache_destroy(struct act_cache *c)
{
    if (!c)
        return;
    opgraph_free(&c->graph);
    free(c->slots);
    free(c);
}

static bool same_shape(const struct og_shape *a, const struct og_shape *b)
{
    return a->T == b->T && a->R == b->R && a->logit_chunk_rows == b->logit_chunk_rows &&
           a->ffn_chunks == b->ffn_chunks && a->softmax_copy_bytes == b->softmax_copy_bytes &&
           a->fused_ffn == b->fused_ffn && a->tp == b->tp && a->layout == b->layout;
}

static size_t shape_hash(const struct og_shape *s)
{
    uint64_t h = ts_mix64((uint64_t)s->T);
    h = ts_mix64(h ^ (uint64_t)s->R);
    h = ts_mix64(h ^ ((uint64_t)(uint32_t)s->logit_chunk_rows << 32 | (uint32_t)s->ffn_chunks));
    h = ts_mix64(h ^ ((uint64_t)(uint32_t)s->softmax_copy_bytes << 1 | s->fused_ffn));
    h = ts_mix64(h ^ ((uint64_t)(uint32_t)s->tp << 8 | (uint32_t)s->layout));
    return (size_t)h;
}

static struct entry *find(struct entry *slots, size_t cap, const struct og_shape *s)
{
    size_t i = shape_hash(s) & (cap - 1);
    while (slots[i].used && !same_shape(&slots[i].shape, s))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static void grow(struct act_cache *c)
{
    struct entry *old = c->slots;
    size_t old_cap = c->cap;
    c->cap *= 2;
    c->slots = xcalloc(c->cap, sizeof *c->slots);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used)
            *find(c->slots, c->cap, &old[i].shape) = old[i];
    free(old);
}

int act_cache_peak(struct act_cache *c, const struct og_shape *shape, int64_t *bytes, struct ts_err *err)
{
    struct entry *e = find(c->slots, c->cap, shape);
    if (e->used) {
        *bytes = e->bytes;
        return 0;
    }
    opgraph_build(&c->graph, c->m, shape);
    struct plan pl;
    if (planner_run(c->p, &c->graph, &c->o, &pl, err)) {
        plan_free(&pl);
        return -1;
    }
    *bytes = pl.arena_bytes;
    plan_free(&pl);
    if (2 * (c->n + 1) > c->cap) {
        grow(c);
        e = find(c->slots, c->cap, shape);
    }
    *e = (struct entry){*shape, *bytes, true};
    c->n++;
    return 0;
}

int64_t act_cache_planned(const struct act_cache *c) { return (int64_t)c->n; }
