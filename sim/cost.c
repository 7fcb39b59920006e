/* cost.c: the table of cost back ends (cost.h); a new back end is one file and one line here. */
#include "cost.h"

#include <stddef.h>

static const struct cost_ops *const backends[] = {&cost_roofline, &cost_calibrated};

const struct cost_ops *cost_backend(int i) { return i >= 0 && (size_t)i < TS_ARRAY_LEN(backends) ? backends[i] : NULL; }

static const char *backend_name(int i)
{
    const struct cost_ops *b = cost_backend(i);
    return b ? b->name : NULL;
}

int cost_resolve(const char *name, const struct cost_ops **out, struct ts_err *err)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(backends); i++)
        if (ts_name_eq(name, backends[i]->name)) {
            *out = backends[i];
            return 0;
        }
    char known[128];
    ts_join_names(known, sizeof known, backend_name);
    return ts_fail(err, "unknown cost model '%s' (known: %s)", name, known);
}
