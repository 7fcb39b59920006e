/* act_cache.c: planned activation memory cached by shape (act_cache.h); open addressing over the
 * shape's fields, the table doubled at half full; the chunk searches over it. */
#include "act_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A slot: the shape packed into two words, and the bytes alone; the peaks, asked for by chunk
 * searches only, sit apart. */
struct entry {
    uint64_t key[2];
    int64_t bytes;
    int32_t detail; /* index in act_cache.details, or -1 */
    int32_t used;
};

struct act_cache {
    struct model_cfg m; /* (a copy: a caller may plan with a view it builds) */
    const struct planner_ops *p;
    struct planner_opts o;
    struct opgraph graph; /* scratch */
    struct entry *slots;
    size_t cap, n;
    struct act_plan *details;
    size_t num_details, cap_details;
    struct entry scratch; /* a shape that does not pack */
    int32_t scratch_detail; /* its details' slot, or -1 */
};

struct act_cache *act_cache_create(const struct model_cfg *m, const struct planner_ops *p,
                                   const struct planner_opts *o)
{
    struct act_cache *c = xcalloc(1, sizeof *c);
    c->m = *m;
    c->p = p;
    if (o)
        c->o = *o;
    else
        planner_opts_defaults(&c->o);
    c->cap = 64;
    c->slots = xcalloc(c->cap, sizeof *c->slots);
    c->scratch_detail = -1;
    return c;
}

void act_cache_destroy(struct act_cache *c)
{
    if (!c)
        return;
    opgraph_free(&c->graph);
    free(c->slots);
    free(c->details);
    free(c);
}

/* Packs a shape into a key; false where a field is beyond the packing (such a shape is planned
 * each time it is asked for). */
static bool pack(const struct og_shape *s, uint64_t key[2])
{
    if (s->T < 0 || s->T > UINT32_MAX || s->R < 0 || s->R > UINT32_MAX || s->logit_chunk_rows < 0 ||
        s->ffn_chunks < 0 || s->ffn_chunks > UINT16_MAX || s->softmax_copy_bytes < 0 || s->softmax_copy_bytes > 255 ||
        s->tp < 0 || s->tp > 63 || s->layout < 0 || s->layout > 1)
        return false;
    key[0] = (uint64_t)s->T << 32 | (uint64_t)s->R;
    key[1] = (uint64_t)(uint32_t)s->logit_chunk_rows | (uint64_t)s->ffn_chunks << 32 |
             (uint64_t)s->softmax_copy_bytes << 48 | (uint64_t)s->fused_ffn << 56 | (uint64_t)s->tp << 57 |
             (uint64_t)s->layout << 63;
    return true;
}

static struct entry *find(struct entry *slots, size_t cap, const uint64_t key[2])
{
    size_t i = (size_t)ts_mix64(key[0] ^ ts_mix64(key[1])) & (cap - 1);
    while (slots[i].used && (slots[i].key[0] != key[0] || slots[i].key[1] != key[1]))
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
            *find(c->slots, c->cap, old[i].key) = old[i];
    free(old);
}

/* builds the shape's graph into c->graph: one layer of each kind where the planner places every
 * layer alike (opgraph_build_compact) */
static void build_graph(struct act_cache *c, const struct og_shape *shape)
{
    const bool alike = c->p->plan == plan_first_fit || c->p->plan == plan_greedy_size;
    if (alike && shape->layout == OG_LAYOUT_ENGINE)
        opgraph_build_compact(&c->graph, &c->m, shape);
    else
        opgraph_build(&c->graph, &c->m, shape);
}

/* the graph's peaks and the largest tensor at its peak */
static void detail(struct act_cache *c, struct act_plan *a)
{
    enum og_kind largest;
    a->theoretical = opgraph_peak(&c->graph);
    opgraph_peak_op(&c->graph, &largest);
    a->largest = (uint8_t)largest;
    opgraph_part_peaks(&c->graph, &a->fixed, &a->ffn, &a->logits);
}

/* The entry of a shape, planned the first time it is asked for (and detailed when asked so); a
 * shape that does not pack is planned into the scratch entry. */
static int lookup(struct act_cache *c, const struct og_shape *shape, bool detailed, struct entry **out,
                  struct ts_err *err)
{
    uint64_t key[2] = {0, 0};
    const bool packs = pack(shape, key);
    struct entry *e = packs ? find(c->slots, c->cap, key) : &c->scratch;
    if (packs && e->used && (e->detail >= 0 || !detailed)) {
        *out = e;
        return 0;
    }
    build_graph(c, shape);
    if (!e->used || !packs) {
        struct plan pl = {0};
        if (c->p->plan(&c->graph, &c->o, &pl, err)) {
            plan_free(&pl);
            return -1;
        }
        if (packs && 2 * (c->n + 1) > c->cap) {
            grow(c);
            e = find(c->slots, c->cap, key);
        }
        *e = (struct entry){{key[0], key[1]}, pl.arena_bytes, -1, packs};
        c->n += packs;
        plan_free(&pl);
    }
    if (detailed) { /* (a shape that does not pack keeps its details in the last slot, reused) */
        if (packs || c->scratch_detail < 0) {
            ts_grow((void **)&c->details, &c->cap_details, c->num_details + 1, sizeof *c->details);
            e->detail = (int32_t)c->num_details++;
            if (!packs)
                c->scratch_detail = e->detail;
        } else {
            e->detail = c->scratch_detail;
        }
        struct act_plan *a = &c->details[e->detail];
        *a = (struct act_plan){.bytes = e->bytes};
        detail(c, a);
    }
    *out = e;
    return 0;
}

int act_cache_get(struct act_cache *c, const struct og_shape *shape, struct act_plan *out, struct ts_err *err)
{
    struct entry *e;
    if (shape->T <= 0) {
        *out = (struct act_plan){0};
        return 0;
    }
    if (lookup(c, shape, true, &e, err))
        return -1;
    *out = c->details[e->detail];
    return 0;
}

int act_cache_peak(struct act_cache *c, const struct og_shape *shape, int64_t *bytes, struct ts_err *err)
{
    struct entry *e;
    if (shape->T <= 0) {
        *bytes = 0;
        return 0;
    }
    if (lookup(c, shape, false, &e, err))
        return -1;
    *bytes = e->bytes;
    return 0;
}

int64_t act_cache_planned(const struct act_cache *c) { return (int64_t)c->n; }

int act_planned_bytes(const struct model_cfg *m, const struct planner_ops *p, const struct og_shape *shape,
                      int64_t *bytes, struct ts_err *err)
{
    struct act_cache *c = act_cache_create(m, p, NULL);
    const int rc = act_cache_peak(c, shape, bytes, err);
    act_cache_destroy(c);
    return rc;
}

/* --- chunking -------------------------------------------------------------------------------- */

int64_t chunk_search_margin(const struct model_cfg *m, double mib)
{
    if (mib < 0)
        mib = 900 + (m->num_experts > 0 ? 700 : 0);
    return (int64_t)(mib * TS_MIB);
}

/* the logit chunks a shape's own chunk rows make (1: monolithic) */
static int32_t logit_chunks_of(const struct og_shape *s)
{
    return s->logit_chunk_rows > 0 && s->R > 0 ? (int32_t)((s->R + s->logit_chunk_rows - 1) / s->logit_chunk_rows) : 1;
}

/* the shape with lc logit chunks (its own chunk rows where that is its count) and fc FFN chunks,
 * and its plan */
static int weigh(struct act_cache *c, const struct og_shape *base, int32_t lc, int32_t fc, struct chunk_choice *at,
                 struct ts_err *err)
{
    at->shape = *base;
    at->shape.ffn_chunks = fc;
    if (lc != logit_chunks_of(base))
        at->shape.logit_chunk_rows = base->R > 0 ? (int32_t)((base->R + lc - 1) / lc) : 0;
    at->logit_chunks = lc, at->ffn_chunks = fc;
    at->plans_tried++;
    return act_cache_get(c, &at->shape, &at->at, err);
}

static int chunk_brute(struct act_cache *c, const struct og_shape *shape, int64_t budget, int32_t max_lc,
                       int32_t max_fc, struct chunk_choice *out, struct ts_err *err)
{
    struct chunk_choice t = {0};
    int32_t best_sum = INT32_MAX;
    /* counts 1 to 8, then doubling, and the most (a ladder step past it lands on it) */
    for (int32_t l = 1; l <= max_lc; l = l < 8 ? l + 1 : l == max_lc ? l + 1 : TS_MIN(2 * l, max_lc))
        for (int32_t f = 1; f <= max_fc; f = f < 8 ? f + 1 : f == max_fc ? f + 1 : TS_MIN(2 * f, max_fc)) {
            if (l + f >= best_sum)
                continue;
            if (weigh(c, shape, l, f, &t, err))
                return -1;
            if (t.at.bytes <= budget) {
                *out = t;
                out->fits = true;
                best_sum = l + f;
            }
        }
    out->plans_tried = t.plans_tried;
    if (!out->fits) {
        if (weigh(c, shape, max_lc, max_fc, out, err)) /* the most chunked, to show */
            return -1;
        out->plans_tried = t.plans_tried;
        snprintf(out->why, sizeof out->why, "no chunking up to %d logit and %d FFN chunks fits %.2f GiB", max_lc,
                 max_fc, budget / TS_GIB);
    }
    return 0;
}

int act_cache_chunk(enum chunking how, struct act_cache *c, const struct og_shape *shape, int64_t budget,
                    struct chunk_choice *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    const int32_t max_lc = (int32_t)TS_MAX(1, TS_MIN(shape->R, 4096)), max_fc = (int32_t)TS_MAX(1, TS_MIN(shape->T, 256));
    if (how == CHUNK_BRUTE)
        return chunk_brute(c, shape, budget, max_lc, max_fc, out, err);
    int32_t lc = logit_chunks_of(shape);
    int32_t fc = shape->ffn_chunks > 0 ? shape->ffn_chunks : 1;
    for (;;) {
        if (weigh(c, shape, lc, fc, out, err))
            return -1;
        if (out->at.bytes <= budget) {
            out->fits = true;
            return 0;
        }
        /* the bottleneck as Mosaic's search finds it: the largest of the logits', the FFN's and the
         * fixed part's peaks, chunked while it is above the fixed part and chunking can still shrink it */
        const struct act_plan *a = &out->at;
        const bool logits = a->logits >= a->ffn && a->logits > a->fixed, ffn = !logits && a->ffn > a->fixed;
        if (how == CHUNK_NONE || (logits && lc >= max_lc) || (ffn && fc >= max_fc) || (!logits && !ffn)) {
            snprintf(out->why, sizeof out->why, "%.2f GiB planned against %.2f GiB: at the peak the largest "
                     "tensor is %s%s", a->bytes / TS_GIB, budget / TS_GIB, og_kind_name((enum og_kind)a->largest),
                     how == CHUNK_NONE ? " (chunking off)" : " (which chunking cannot shrink further)");
            return 0;
        }
        if (logits)
            lc++;
        else
            fc++;
    }
}

int chunk_search(enum chunking how, const struct model_cfg *m, const struct og_shape *shape,
                 const struct planner_ops *p, const struct planner_opts *o, int64_t budget,
                 struct chunk_result *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    struct act_cache *c = act_cache_create(m, p, o);
    int rc = act_cache_chunk(how, c, shape, budget, &out->choice, err);
    if (rc == 0 && out->choice.shape.T > 0) { /* the full graph, for its offsets */
        opgraph_build(&c->graph, m, &out->choice.shape);
        rc = planner_run(p, &c->graph, &c->o, &out->plan, err);
    }
    act_cache_destroy(c);
    return rc;
}
