/* setup.c: a configuration's parts, resolved once (setup.h). */
#include "setup.h"

#include <ctype.h>
#include <unistd.h>

#include "config.h"
#include "rounds.h"

int sim_setup_resolve(const struct sim_config *c, struct sim_setup *out, struct ts_err *err)
{
    *out = (struct sim_setup){0};
    if (policy_resolve(c->policy, &out->policy, err) || sched_resolve(c->scheduler, &out->sched, err) ||
        parts_resolve(out->policy, out->sched, &c->params, &out->params, err))
        return -1;
    return impl_resolve(c->impl, &out->impl, err) || cost_resolve(c->cost, &out->cost, err) ||
                   planner_resolve(c->planner, &out->planner, err) ||
                   decode_parse(c->decode, c->datadir, &out->decode, err)
               ? -1
               : 0;
}

int sim_rounds_path(const struct sim_config *c, const char *gpu, const char *model, const struct impl_profile *im,
                    char *out, size_t len)
{
    if (!im->rounds || c->tp > 1 || c->ep > 1)
        return 0;
    char card[64]; /* (the card's table name: --gpu is taken in any case) */
    size_t i = 0;
    for (; gpu[i] && i + 1 < sizeof card; i++)
        card[i] = (char)tolower((unsigned char)gpu[i]);
    card[i] = '\0';
    rounds_shipped_path(c->datadir, card, model, im->name, out, len);
    return access(out, R_OK) == 0;
}
