/*
 * prompt_cache.c: an LRU set of int32 ids: a doubly linked list of slots in use order over an
 * open-addressing table (linear probing, deletion by backward shift, no tombstones) at most half full.
 */
#include "prompt_cache.h"

#include "util.h"

#include <stdlib.h>

#define NIL (-1)

struct slot {
    int32_t id;
    int32_t prev, next; /* toward the most and the least recently used */
};

struct prompt_cache {
    int64_t cap, n, evicted;
    struct slot *slot;   /* [cap] */
    int32_t head, tail;  /* most and least recently used */
    int32_t free_top;    /* unused slots, chained through next */
    int32_t *table;      /* [mask + 1]: a slot, or NIL */
    uint64_t mask;
};

static uint64_t home(const struct prompt_cache *c, int32_t id) { return ts_mix64((uint64_t)(uint32_t)id) & c->mask; }

struct prompt_cache *prompt_cache_new(int64_t cap)
{
    TS_ASSERT(cap > 0 && cap < INT32_MAX / 2);
    struct prompt_cache *c = xcalloc(1, sizeof *c);
    c->cap = cap;
    c->slot = xmalloc(sizeof *c->slot * (size_t)cap);
    for (int64_t k = 0; k < cap; k++)
        c->slot[k].next = k + 1 < cap ? (int32_t)(k + 1) : NIL;
    c->free_top = 0;
    c->head = c->tail = NIL;
    uint64_t size = 2;
    while (size < 2 * (uint64_t)cap)
        size <<= 1;
    c->mask = size - 1;
    c->table = xmalloc(sizeof *c->table * size);
    for (uint64_t k = 0; k < size; k++)
        c->table[k] = NIL;
    return c;
}

void prompt_cache_free(struct prompt_cache *c)
{
    if (!c)
        return;
    free(c->slot);
    free(c->table);
    free(c);
}

/* The table position holding id, or the empty one where it would go. */
static uint64_t find(const struct prompt_cache *c, int32_t id)
{
    uint64_t k = home(c, id);
    while (c->table[k] != NIL && c->slot[c->table[k]].id != id)
        k = (k + 1) & c->mask;
    return k;
}

static void unlink_slot(struct prompt_cache *c, int32_t s)
{
    struct slot *e = &c->slot[s];
    if (e->prev != NIL)
        c->slot[e->prev].next = e->next;
    else
        c->head = e->next;
    if (e->next != NIL)
        c->slot[e->next].prev = e->prev;
    else
        c->tail = e->prev;
}

static void push_front(struct prompt_cache *c, int32_t s)
{
    c->slot[s].prev = NIL;
    c->slot[s].next = c->head;
    if (c->head != NIL)
        c->slot[c->head].prev = s;
    c->head = s;
    if (c->tail == NIL)
        c->tail = s;
}

/* Removes table position k, shifting back the entries of its probe run that may move. */
static void table_delete(struct prompt_cache *c, uint64_t k)
{
    uint64_t j = k;
    for (;;) {
        j = (j + 1) & c->mask;
        if (c->table[j] == NIL)
            break;
        const uint64_t h = home(c, c->slot[c->table[j]].id);
        /* the entry at j stays where its home lies cyclically in (k, j] */
        if ((k < j) ? (k < h && h <= j) : (k < h || h <= j))
            continue;
        c->table[k] = c->table[j];
        k = j;
    }
    c->table[k] = NIL;
}

static void evict_lru(struct prompt_cache *c)
{
    const int32_t s = c->tail;
    unlink_slot(c, s);
    table_delete(c, find(c, c->slot[s].id));
    c->slot[s].next = c->free_top;
    c->free_top = s;
    c->n--;
    c->evicted++;
}

int32_t prompt_cache_match(const struct prompt_cache *c, const int32_t *id, int32_t n)
{
    int32_t k = 0;
    while (k < n && c->table[find(c, id[k])] != NIL)
        k++;
    return k;
}

void prompt_cache_put(struct prompt_cache *c, const int32_t *id, int32_t n)
{
    for (int32_t k = n - 1; k >= 0; k--) {
        uint64_t at = find(c, id[k]);
        if (c->table[at] != NIL) { /* held: now the most recently used */
            unlink_slot(c, c->table[at]);
            push_front(c, c->table[at]);
            continue;
        }
        if (c->n == c->cap) {
            evict_lru(c);
            at = find(c, id[k]); /* (the deletion may have moved the run) */
        }
        const int32_t s = c->free_top;
        c->free_top = c->slot[s].next;
        c->slot[s].id = id[k];
        c->table[at] = s;
        push_front(c, s);
        c->n++;
    }
}

void prompt_cache_trim(struct prompt_cache *c, int64_t keep)
{
    while (c->n > TS_MAX(keep, 0))
        evict_lru(c);
}

int64_t prompt_cache_size(const struct prompt_cache *c) { return c->n; }
int64_t prompt_cache_cap(const struct prompt_cache *c) { return c->cap; }
int64_t prompt_cache_evicted(const struct prompt_cache *c) { return c->evicted; }
