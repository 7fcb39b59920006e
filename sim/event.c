/* event.c: a binary min-heap over (time_ns, type, seq). */
#include "event.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static bool before(const struct event *a, const struct event *b)
{
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns;
    return a->type != b->type ? a->type < b->type : a->seq < b->seq;
}

void evq_init(struct event_queue *q) { memset(q, 0, sizeof *q); }

void evq_free(struct event_queue *q)
{
    if (!q)
        return;
    free(q->heap);
    memset(q, 0, sizeof *q);
}

void evq_push(struct event_queue *q, int64_t time_ns, int32_t type, int32_t arg)
{
    TS_ASSERT(time_ns >= 0);
    ts_grow((void **)&q->heap, &q->cap, q->n + 1, sizeof *q->heap);
    struct event e = {time_ns, q->next_seq++, type, arg};
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&e, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
}

bool evq_pop(struct event_queue *q, struct event *out)
{
    if (q->n == 0)
        return false;
    *out = q->heap[0];
    struct event last = q->heap[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!before(&q->heap[c], &last))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (q->n > 0)
        q->heap[i] = last;
    return true;
}

int64_t evq_peek_time(const struct event_queue *q)
{
    TS_ASSERT(q->n > 0);
    return q->heap[0].time_ns;
}
