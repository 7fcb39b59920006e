/*
 * planner_caching.c: a model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator),
 * driven by the op graph's allocations (at a tensor's first op) and frees (after its last):
 *   - requests are rounded up to 512 B;
 *   - requests <= 1 MiB use the small pool, carved from 2 MiB segments;
 *   - larger ones use the large pool: a new segment is 20 MiB for requests below 10 MiB, otherwise
 *     the request rounded up to 2 MiB;
 *   - a request takes the smallest cached free block of its pool that fits (best fit); a block is
 *     split when the remainder is >= 512 B (small pool) or > 1 MiB (large pool);
 *   - a freed block is merged with free neighbours of its segment and stays cached: segments are
 *     never returned to the device (no empty_cache), so reserved only grows.
 * Reserved = the sum of segments; allocated = the sum of live (rounded) requests. The plan's offsets
 * place each tensor in its segment, the segments laid end to end in order of creation: an arena of
 * the reserved size that the engine maps as one range, so the allocator's fragmentation is real
 * memory on the GPU too.
 */
#include <stdlib.h>
#include <string.h>

#include "planner.h"

#define KB 1024LL
#define MB (1024LL * KB)
#define ROUND 512
#define SMALL_SIZE (1 * MB)
#define SMALL_SEGMENT (2 * MB)
#define LARGE_SEGMENT (20 * MB)
#define MIN_LARGE_ALLOC (10 * MB)
#define ROUND_LARGE (2 * MB)

struct block {
    int64_t offset, size; /* within its segment */
    int32_t segment;
    bool free, small;
};

struct alloc_state {
    struct block *b;
    size_t n, cap;
    int32_t segments;
    int64_t *seg_base; /* [segments]: where each segment starts in the concatenated arena */
    size_t seg_cap;
    int64_t reserved, allocated, allocated_peak;
};

static int32_t new_block(struct alloc_state *st, struct block blk)
{
    ts_grow((void **)&st->b, &st->cap, st->n + 1, sizeof *st->b);
    st->b[st->n] = blk;
    return (int32_t)st->n++;
}

static int64_t round_size(int64_t s) { return s < ROUND ? ROUND : (s + ROUND - 1) / ROUND * ROUND; }

static int32_t alloc_block(struct alloc_state *st, int64_t req)
{
    int64_t size = round_size(req);
    bool small = size <= SMALL_SIZE;
    int32_t best = -1;
    for (size_t i = 0; i < st->n; i++)
        if (st->b[i].free && st->b[i].small == small && st->b[i].size >= size &&
            (best < 0 || st->b[i].size < st->b[best].size))
            best = (int32_t)i;
    if (best < 0) { /* a new segment */
        int64_t seg = small ? SMALL_SEGMENT : size < MIN_LARGE_ALLOC ? LARGE_SEGMENT
                                                                     : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
        ts_grow((void **)&st->seg_base, &st->seg_cap, (size_t)st->segments + 1, sizeof *st->seg_base);
        st->seg_base[st->segments] = st->reserved;
        st->reserved += seg;
        best = new_block(st, (struct block){0, seg, st->segments++, true, small});
    }
    int64_t rest = st->b[best].size - size;
    if (small ? rest >= ROUND : rest > SMALL_SIZE) {
        struct block tail = st->b[best];
        tail.offset += size;
        tail.size = rest;
        tail.free = true;
        new_block(st, tail);
        st->b[best].size = size;
    }
    st->b[best].free = false;
    st->allocated += st->b[best].size;
    st->allocated_peak = TS_MAX(st->allocated_peak, st->allocated);
    return best;
}

static void free_block(struct alloc_state *st, int32_t i)
{
    st->b[i].free = true;
    st->allocated -= st->b[i].size;
    /* merge with free neighbours of the same segment until nothing changes */
    bool merged = true;
    while (merged) {
        merged = false;
        for (size_t j = 0; j < st->n; j++) {
            struct block *a = &st->b[i], *c = &st->b[j];
            if ((int32_t)j == i || !c->free || c->size == 0 || c->segment != a->segment)
                continue;
            if (c->offset + c->size == a->offset) {
                c->size += a->size;
                a->size = 0;
                a->free = false; /* dead slot */
                i = (int32_t)j;
                merged = true;
            } else if (a->offset + a->size == c->offset) {
                a->size += c->size;
                c->size = 0;
                c->free = false;
                merged = true;
            }
        }
    }
}

int plan_caching(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err)
{
    (void)o, (void)err;
    struct alloc_state st = {0};
    int32_t *blk = xmalloc(sizeof *blk * (size_t)(g->n ? g->n : 1));
    out->offsets = xcalloc((size_t)(g->n ? g->n : 1), sizeof *out->offsets);
    for (int32_t op = 0; op < g->num_ops; op++) {
        for (int32_t i = 0; i < g->n; i++) /* outputs are allocated while the inputs live */
            if (g->t[i].first == op) {
                blk[i] = alloc_block(&st, g->t[i].bytes);
                out->offsets[i] = st.seg_base[st.b[blk[i]].segment] + st.b[blk[i]].offset;
            }
        for (int32_t i = 0; i < g->n; i++)
            if (g->t[i].last == op)
                free_block(&st, blk[i]);
    }
    out->arena_bytes = st.reserved;
    out->allocated_peak = st.allocated_peak;
    free(blk);
    free(st.b);
    free(st.seg_base);
    return 0;
}
