/*
 * policy_drive.c: a policy of the table driven request by request (policy_drive.h), its rows
 * placed at positions: a PREFILL's from 0, a FULL or REFRESH step's over the whole sequence, a
 * BLOCK step's the q positions that end with the current block, a REUSE step's a window of q
 * consecutive positions holding the block (from the policy's reuse_from, else from the block's
 * first position). Within a segment the positions outside the block come first, in order, then the
 * block's, so that the block's rows are the last of its logit rows.
 */
#include "policy_drive.h"

#include <stdlib.h>
#include <string.h>

#include "policy.h"

struct drive {
    const struct policy_ops *po;
    struct policy_cfg pc;
    struct request *r;
    int32_t n;
};

const char *policy_drive_lacks(const struct policy_ops *po)
{
    if (po->caps & POLICY_DECIDES)
        return "it decides what a step decodes itself";
    if (po->caps & POLICY_SELECTS)
        return "it selects a sparse cache";
    if (po->knobs)
        return "its steps need knobs of their own (front layers, probes)";
    if (po->advance == policy_delayed_advance)
        return "it counts the block's cached positions, assuming where the decoded ones lie";
    if (po->caps & POLICY_SCATTERED)
        return "its rows are positions chosen across the sequence, not a window to place";
    if (po->caps & POLICY_CONFIRMS_BLOCK)
        return "a block of it ends with a step that commits nothing, which the engine's unmasking does not take";
    return NULL;
}

/* The first of the positions segment s of r covers (consecutive, s->q of them). */
static int32_t first_row(const struct drive *d, const struct request *r, const struct segment *s)
{
    const int32_t start = r->P + r->cur_block * r->Bs, end = start + req_block_len(r, r->cur_block);
    switch (s->phase) {
    case PHASE_PREFILL:
    case PHASE_FULL:
    case PHASE_REFRESH: return 0;
    case PHASE_BLOCK: return end - s->q;
    default: return d->po->reuse_from ? d->po->reuse_from(r, &d->pc) : start;
    }
}

static void drive_emit(void *ctx, int32_t req, struct segment *s, int32_t *pos)
{
    const struct drive *d = ctx;
    const struct request *r = &d->r[req];
    const int32_t id = s->req_id;
    *s = (struct segment){.req_id = id};
    d->po->emit(r, &d->pc, s);
    const int32_t start = r->P + r->cur_block * r->Bs, end = start + req_block_len(r, r->cur_block);
    const int32_t lo = first_row(d, r, s), hi = lo + s->q;
    TS_ASSERT(lo >= 0 && hi <= r->L && hi <= s->kv + s->q);
    const bool holds_block = lo <= start && hi >= end && s->logit_rows >= end - start;
    TS_ASSERT(s->logit_rows == 0 || holds_block);
    int32_t k = 0;
    for (int32_t p = lo; p < hi; p++)
        if (!holds_block || p < start || p >= end)
            pos[k++] = p;
    for (int32_t p = start; holds_block && p < end; p++)
        pos[k++] = p;
}

static bool drive_advance(void *ctx, int32_t req, const struct segment *s)
{
    const struct drive *d = ctx;
    return policy_advance(d->po, &d->r[req], &d->pc, s);
}

int policy_drive_init(struct policy_drive *out, const char *name, const struct param_values *given, int32_t n,
                      const int32_t *prompt_len, int32_t gen_len, int32_t block, bool block_logits, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    const struct policy_ops *po;
    if (policy_resolve(name, &po, err))
        return -1;
    const char *why = policy_drive_lacks(po);
    if (why)
        return ts_fail(err, "policy %s runs in the simulator only: %s", po->name, why);
    struct drive *d = xcalloc(1, sizeof *d);
    d->po = po;
    d->pc = (struct policy_cfg){.block_size = block, .block_logits = block_logits};
    for (int i = 0; given && i < given->n; i++)
        if (!params_find(po->params, po->num_params, given->name[i])) {
            free(d);
            return ts_fail(err, "policy %s has no parameter --%s", po->name, given->name[i]);
        }
    if (params_resolve(po->params, po->num_params, given, d->pc.p, err)) {
        free(d);
        return -1;
    }
    d->n = n;
    d->r = xcalloc((size_t)n, sizeof *d->r);
    for (int32_t i = 0; i < n; i++) {
        struct request *r = &d->r[i];
        *r = (struct request){.id = i, .P = prompt_len[i], .G = gen_len, .C = gen_len};
        r->P_orig = r->P, r->G_orig = r->G;
        policy_req_init(r, &d->pc);
    }
    *out = (struct policy_drive){.name = po->name, .whole = !(po->caps & POLICY_BLOCK_CAUSAL),
                                 .every_position = (po->caps & POLICY_EVERY_POSITION) && !block_logits,
                                 .engine = po->engine, .ctx = d, .emit = drive_emit, .advance = drive_advance};
    policy_ext_params(po, &d->pc, &out->ext);
    return 0;
}

void policy_drive_free(struct policy_drive *pd)
{
    struct drive *d = pd->ctx;
    if (d)
        free(d->r);
    free(d);
    memset(pd, 0, sizeof *pd);
}
