/* parts.c: the parameters of policies and schedulers, together (parts.h). */
#include "parts.h"

#include <stdio.h>
#include <string.h>


int parts_get(int i, struct part *out)
{
    const struct policy_ops *po = policy_get(i);
    if (po) {
        *out = (struct part){"policy", po->name, po->params, po->num_params};
        return 1;
    }
    int num_policies = 0;
    while (policy_get(num_policies))
        num_policies++;
    const struct sched_ops *so = i >= num_policies ? sched_get(i - num_policies) : NULL;
    if (!so)
        return 0;
    *out = (struct part){"scheduler", so->name, so->params, so->num_params};
    return 1;
}

int parts_resolve(const struct policy_ops *po, const struct sched_ops *so, const struct param_values *given,
                  struct run_params *out, struct ts_err *err)
{
    for (int i = 0; given && i < given->n; i++) {
        const char *name = given->name[i];
        if (params_find(po->params, po->num_params, name) || params_find(so->params, so->num_params, name) ||
            given->preset[i]) /* a preset's setting for a part the user replaced */
            continue;
        char owners[256] = "";
        struct part p;
        for (int k = 0; parts_get(k, &p); k++)
            if (params_find(p.params, p.num_params, name))
                snprintf(owners + strlen(owners), sizeof owners - strlen(owners), "%s%s %s", owners[0] ? ", " : "",
                         p.kind, p.name);
        return ts_fail(err, "--%s: not a parameter of policy %s or scheduler %s (%s%s)", name, po->name, so->name,
                       owners[0] ? "it is one of: " : "no policy or scheduler has it", owners);
    }
    return params_resolve(po->params, po->num_params, given, out->policy, err) ||
                   params_resolve(so->params, so->num_params, given, out->sched, err)
               ? -1
               : 0;
}
