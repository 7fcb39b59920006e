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

/* The rounds profile measured for gpu and model on one GPU into out: 1 when there is one. */
static int rounds_path(const struct sim_config *c, const char *gpu, const char *model, const struct impl_profile *im,
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

void sim_rounds_source(const struct sim_config *c, const char *model, const struct impl_profile *im,
                       struct rounds_source *out)
{
    *out = (struct rounds_source){ROUNDS_NONE, false, NULL, ""};
    if (rounds_path(c, c->gpu, model, im, out->path, sizeof out->path)) {
        out->card = c->gpu;
        out->bf16_only = c->weights == WEIGHTS_FP8;
        out->use = out->bf16_only ? ROUNDS_HOST_ONLY : ROUNDS_WHOLE;
    } else if (c->rounds_host[0]) {
        out->card = c->rounds_host;
        if (rounds_path(c, c->rounds_host, model, im, out->path, sizeof out->path))
            out->use = ROUNDS_HOST_ONLY;
    }
}
