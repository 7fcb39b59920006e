/* check_event.c: the event queue orders by (time, type, insertion sequence). */
#include <stdlib.h>

#include "event.h"
#include "test_util.h"

/* at one time arrivals come first, then insertion order */
START_TEST(ties_break_by_type_then_insertion)
{
    struct event_queue q;
    evq_init(&q);
    evq_push(&q, 10, EV_ARRIVAL, 1);
    evq_push(&q, 5, EV_ARRIVAL, 2);
    evq_push(&q, 10, EV_STEP_DONE, 3);
    evq_push(&q, 10, EV_ARRIVAL, 4);
    int expect[] = {2, 1, 4, 3};
    struct event e;
    for (int i = 0; i < 4; i++) {
        ck_assert(evq_pop(&q, &e));
        ck_assert_int_eq(e.arg, expect[i]);
    }
    ck_assert(!evq_pop(&q, &e));
    evq_free(&q);
    evq_free(NULL);
}
END_TEST

START_TEST(random_against_sorted_reference)
{
    struct event_queue q;
    evq_init(&q);
    srand(3);
    int n = 20000;
    int64_t last_t = -1;
    uint64_t last_seq = 0;
    int popped = 0;
    for (int i = 0; i < n; i++) {
        evq_push(&q, rand() % 1000 + (last_t > 0 ? last_t : 0), EV_ARRIVAL, i);
        if (rand() % 3 == 0) {
            struct event e;
            ck_assert(evq_pop(&q, &e));
            ck_assert(e.time_ns > last_t || (e.time_ns == last_t && e.seq > last_seq));
            last_t = e.time_ns;
            last_seq = e.seq;
            popped++;
        }
    }
    struct event e;
    while (evq_pop(&q, &e)) {
        ck_assert(e.time_ns > last_t || (e.time_ns == last_t && e.seq > last_seq));
        last_t = e.time_ns;
        last_seq = e.seq;
        popped++;
    }
    ck_assert_int_eq(popped, n);
    evq_free(&q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("event");
    ck_case(s, ties_break_by_type_then_insertion, 0);
    ck_case(s, random_against_sorted_reference, 0);
    return run_suite("event", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
