/*
 * event.h: the deterministic event core. Events carry an integer nanosecond timestamp and are
 * ordered by (time, type, sequence number): at one time arrivals come before the steps that end,
 * and the sequence number, the order of insertion, orders the rest, so ties never depend on heap
 * layout or on when an event was pushed, and a run is reproducible bit for bit.
 */
#ifndef TESSERA_EVENT_H
#define TESSERA_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum event_type { EV_ARRIVAL = 0, EV_STEP_DONE };

struct event {
    int64_t time_ns;
    uint64_t seq;
    int32_t type; /* enum event_type */
    int32_t arg;  /* request id for arrivals */
};

struct event_queue {
    struct event *heap; /* binary min-heap, owned */
    size_t n, cap;
    uint64_t next_seq;
};

void evq_init(struct event_queue *q);
void evq_free(struct event_queue *q); /* safe on a zeroed struct */
void evq_push(struct event_queue *q, int64_t time_ns, int32_t type, int32_t arg);
/* Removes the earliest event into *out; returns false when empty. */
bool evq_pop(struct event_queue *q, struct event *out);
/* Time of the earliest event; the queue must not be empty. */
int64_t evq_peek_time(const struct event_queue *q);
static inline bool evq_empty(const struct event_queue *q) { return q->n == 0; }

#endif
