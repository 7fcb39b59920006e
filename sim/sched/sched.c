/* sched.c: the scheduler table. */
#include "sched.h"

#include <stdio.h>

static const struct sched_ops *const scheds[] = {&sched_static, &sched_request, &sched_phase, &sched_lookahead, &sched_sglang};

const struct sched_ops *sched_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(scheds); i++)
        if (ts_name_eq(scheds[i]->name, name))
            return scheds[i];
    return NULL;
}

const struct sched_ops *sched_get(int i)
{
    return i >= 0 && (size_t)i < TS_ARRAY_LEN(scheds) ? scheds[i] : NULL;
}

static const char *sched_name_at(int i) { return sched_get(i) ? sched_get(i)->name : NULL; }

void sched_list(char *buf, size_t len) { ts_join_names(buf, len, sched_name_at); }

int sched_resolve(const char *name, const struct sched_ops **out, struct ts_err *err)
{
    *out = sched_find(name);
    if (*out)
        return 0;
    char list[256];
    sched_list(list, sizeof list);
    return ts_fail(err, "unknown scheduler '%s' (known: %s)", name, list);
}
