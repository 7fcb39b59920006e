/*
 * eng_lmax.c: `tessera mem lmax --live`, the longest context that fits, measured on the GPU.
 *
 * The engine holds the full model's weights and its fixed buffers under a hard memory limit (the
 * rest of the device is held by a ballast, so the limit is the driver's, not tessera's
 * bookkeeping), stateless (a vanilla step keeps no KV cache: K/V are read in place from the qkv
 * rows). For a length L, one no-cache step of L tokens with logits for mask_ratio * L rows (or all)
 * is planned by the chosen planner, chunked as asked with the device's free memory as the budget,
 * and its arena mapped in CUDA virtual memory: L fits when the mapping succeeds. The search doubles
 * L and then bisects; at L_max the step runs over the first `layers` layers (activations are reused
 * from layer to layer, so the plan's peak is the same as for all of them) and the process's device
 * memory is measured beside the plan.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "eng.h"
#include "engine_load.h"
#include "act_cache.h"
#include "step_desc.h"

struct probe_ctx {
    struct eng *e;
    const struct lmax_live_req *q;
    const struct planner_ops *p;
    struct planner_opts po;
    struct step_desc sd;
    int32_t logit_chunks, ffn_chunks;
    int probes;
    struct ts_err why; /* why the last length that did not fit failed; or the error of a probe */
};

/* 1: L fits (its activations are mapped on return), 0: it does not (why in err), -1: error. */
static int probe(struct probe_ctx *c, int64_t L, struct ts_err *err)
{
    c->probes++;
    if (eng_release_activations(c->e, err))
        return -1;
    int64_t used;
    if (eng_device_used(c->e, &used, err))
        return -1;
    int64_t budget = c->q->mem_limit - used;
    int64_t R = og_masked_rows(c->q->mask_ratio, L);
    struct og_shape s = {L, R, 0, 1, c->q->softmax_copy, false, 1, OG_LAYOUT_ENGINE}; /* (a fused FFN plans smaller) */
    struct chunk_result cr;
    if (chunk_search((enum chunking)c->q->chunking, c->q->m, &s, c->p, &c->po, budget, &cr, err))
        return -1;
    plan_free(&cr.plan);
    c->logit_chunks = cr.choice.logit_chunks;
    c->ffn_chunks = cr.choice.ffn_chunks;
    step_desc_clear(&c->sd);
    c->sd.logit_chunk_rows = R > 0 ? (int32_t)((R + cr.choice.logit_chunks - 1) / cr.choice.logit_chunks) : 1;
    c->sd.ffn_chunks = cr.choice.ffn_chunks;
    struct segment g = {.req_id = 0, .q = (int32_t)L, .kv = 0, .logit_rows = (int32_t)R, .phase = PHASE_REFRESH};
    step_desc_add(&c->sd, &g);
    /* the mapping decides, whatever the planner predicted */
    int rc = eng_prepare_step(c->e, &c->sd, err);
    return rc < 0 ? -1 : rc == 0;
}

/* probe() for ts_search_largest: a length that does not fit leaves its reason in c->why. */
static int probe_fits(void *ctx, int64_t L)
{
    struct probe_ctx *c = ctx;
    struct ts_err w;
    int f = probe(c, L, &w);
    if (f <= 0)
        c->why = w;
    return f;
}

int eng_lmax_live(const struct lmax_live_req *q, struct lmax_live_result *r, struct ts_err *err)
{
    memset(r, 0, sizeof *r);
    struct probe_ctx c = {.q = q};
    if (planner_resolve(q->planner, &c.p, err))
        return -1;
    if (c.p == planner_find("profiled"))
        return ts_fail(err, "the profiled planner reserves for a fixed step; use caching to model "
                            "dLLM-Serve's allocator");
    planner_opts_defaults(&c.po);
    c.po.ilp_max_tensors = 0; /* big graphs: the heuristics only */
    struct eng_opts o;
    eng_opts_defaults(&o, NULL); /* (tessera mem takes no engine choices) */
    o.mem_limit = q->mem_limit;
    o.hard_limit = true;
    o.stateless = true;
    o.no_tune = true;
    o.planner = c.p->name;
    o.softmax_copy = q->softmax_copy;
    o.run_layers = q->layers;
    o.max_tokens = (int32_t)TS_MIN(q->max_tokens, (int64_t)INT32_MAX / 16);
    o.kv_tokens = 0;
    o.seed = q->seed;
    if (eng_create(q->m, &o, &c.e, err))
        return -1;
    snprintf(r->device, sizeof r->device, "%s", eng_device_name(c.e));
    step_desc_init(&c.sd);
    int rc = -1;
    struct eng_mem mem;
    eng_mem_info(c.e, &mem);
    r->weights = mem.weights;
    if (eng_device_used(c.e, &r->fixed, err))
        goto done;
    /* lengths up to max_tokens; if all of them fit, that is why the next is not known to fit */
    snprintf(c.why.msg, sizeof c.why.msg, "the search stops at %d tokens (--max-tokens)", o.max_tokens);
    int64_t lo = ts_search_largest(probe_fits, &c, o.max_tokens);
    if (lo < 0) {
        *err = c.why;
        goto done;
    }
    snprintf(r->why_next, sizeof r->why_next, "%s", c.why.msg);
    r->lmax = lo;
    r->probes = c.probes;
    if (lo > 0) {
        struct ts_err w;
        if (probe(&c, lo, &w) != 1) {
            ts_fail(err, "L_max %lld no longer maps on the second try: %s", (long long)lo, w.msg);
            goto done;
        }
        float ms = 0;
        if (eng_step(c.e, &c.sd, NULL, &ms, err) || eng_device_used(c.e, &r->used, err))
            goto done;
        struct eng_act_info ai;
        eng_act_info(c.e, &ai);
        r->planned = ai.planned;
        r->theoretical = ai.theoretical;
        r->mapped = ai.mapped;
        r->layers_run = ai.layers_run;
        r->step_ms = ms;
        r->logit_chunks = c.logit_chunks;
        r->ffn_chunks = c.ffn_chunks;
    }
    r->layers_total = q->m->num_layers;
    rc = 0;
done:
    step_desc_free(&c.sd);
    eng_destroy(c.e);
    return rc;
}
