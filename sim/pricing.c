/* pricing.c: a step priced through the run's chain of pricers (pricing.h). */
#include "pricing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "rounds.h"

/* --- back end: the roofline or the calibration --------------------------------------------------- */

static int price_backend(struct sim *s, struct step_price *p)
{
    if (s->cost->step_s(&s->cctx, &s->sd, &p->secs, &p->bd, &s->run_err))
        return -1;
    p->work = p->bd; /* the step's work by the roofline: its own breakdown where it is the back end */
    double rs;
    if (s->cost != &cost_roofline && cost_roofline.step_s(&s->cctx, &s->sd, &rs, &p->work, &s->run_err))
        return -1;
    return 1;
}

/* --- rounds: a runtime priced by its rounds measured whole (rounds.h) ------------------------------ */

/* The step's time is its round's forward and, where it begins a round, the host's work; the back end's
 * ops keep their shares of the forward. */
static int price_rounds(struct sim *s, struct step_price *p)
{
    struct cost_breakdown *bd = &p->bd;
    double fwd, host;
    bool beyond;
    if (rounds_price(s->rounds, &s->sd, &s->round, s->cfg.extrapolate, &fwd, &host, &beyond, &s->run_err))
        return -1;
    /* past the rounds' measured range, or (their host alone) the forwards past the calibration's */
    bd->beyond = beyond || (s->rounds_host_only && bd->beyond);
    const double *scale = s->cctx.op_scale; /* an ablation's or an interval's replicate's factors, which the
                                             * back end applied to its ops: applied to the round alike */
    double ops = 0, raw = 0;
    for (int i = 0; i < OP_COUNT; i++)
        if (i != OP_HOST)
            ops += bd->op_s[i], raw += scale ? bd->op_s[i] / scale[i] : bd->op_s[i];
    fwd = s->rounds_host_only ? ops : fwd * (raw > 0 ? ops / raw : 1); /* (another card's rounds: their host alone) */
    /* the host's share by the host's factor and by the runtime's own draw (an interval's replicate: the
     * runtime's spread was measured on the rounds whole) */
    host *= (scale ? scale[OP_HOST] : 1) * (s->cfg.speed_gpu > 0 && !s->rounds_host_only ? s->cfg.speed_gpu : 1);
    for (int i = 0; i < OP_COUNT; i++)
        bd->op_s[i] = i == OP_HOST ? host : ops > 0 ? bd->op_s[i] * fwd / ops : 0;
    bd->total_s = p->secs = fwd + host;
    p->host_idles = true; /* (the GPU idles through the host's work between rounds) */
    return 1;
}

/* --- drafter: a speculative policy's drafter (policy_ops.drafter_layers) -------------------------- */

/* The ops of a forward's layers (the drafter runs its own number of them); the rest are once a forward. */
static bool per_layer_op(int op) { return op != OP_EMBED && op != OP_LM_HEAD && op != OP_SAMPLE; }

/* Before the target verifies a request's block (a BLOCK segment), the drafter runs it, its q rows over
 * the request's context (kv) in one pass, the masks' q - 1 logit rows through the shared LM head.
 * Priced by the run's back end as the model's forward of those shapes, the per-layer ops (and the
 * host's issue of them) scaled from the model's layers to the drafter's, the tensor-parallel
 * sampler's gather once a forward; added to the step's seconds and ops, and its roofline work to the
 * step's (the clock's load, the energy's mix). */
static int price_drafter(struct sim *s, struct step_price *p)
{
    struct step_desc *d = &s->draft_sd; /* (zeroed with the simulator, its storage grown as it goes) */
    step_desc_clear(d);
    d->attn_block = s->sd.attn_block;
    d->ffn_chunks = s->sd.ffn_chunks, d->logit_chunk_rows = s->sd.logit_chunk_rows;
    for (int32_t i = 0; i < s->sd.num_segs; i++) {
        const struct segment *g = &s->sd.segs[i];
        if (g->phase != PHASE_BLOCK || g->padding)
            continue;
        step_desc_add(d, &(struct segment){.req_id = g->req_id, .phase = PHASE_BLOCK, .q = g->q, .kv = g->kv,
                                           .logit_rows = g->q - 1});
    }
    if (d->num_segs == 0)
        return 0;
    struct cost_breakdown db, rb;
    double ds, rs;
    if (s->cost->step_s(&s->cctx, d, &ds, &db, &s->run_err))
        return -1;
    if (s->cost == &cost_roofline) /* (its breakdown is the roofline's already) */
        rb = db;
    else if (cost_roofline.step_s(&s->cctx, d, &rs, &rb, &s->run_err))
        return -1;
    s->sum.drafter_rows += d->tot.q_tokens, s->sum.drafter_logit_rows += d->tot.logit_rows;
    const double share = (double)s->pol->drafter_layers(&s->pcfg) / s->model.num_layers;
    const double gather = cost_tp_sample_gather_s(&s->cctx, d); /* (once a forward, within OP_ALLREDUCE) */
    double added = 0;
    for (int i = 0; i < OP_COUNT; i++) {
        const double once = i == OP_ALLREDUCE ? TS_MIN(gather, db.op_s[i]) : 0;
        const double t = per_layer_op(i) ? (db.op_s[i] - once) * share + once : db.op_s[i];
        p->bd.op_s[i] += t;
        added += t;
    }
    p->bd.total_s += added;
    p->bd.beyond = p->bd.beyond || db.beyond;
    p->secs += added;
    p->work.flops += share * rb.flops, p->work.compute_s += share * rb.compute_s;
    p->work.memory_s += share * rb.memory_s;
    return 1;
}

/* --- clock, host, live ------------------------------------------------------------------------------ */

/* At the card's clock state (live: the prediction the measured time is set against). */
static int price_clock(struct sim *s, struct step_price *p)
{
    const double t = clock_step(&s->clock, &s->clock_st, s->now_ns, p->secs, p->work.flops);
    s->sum.clock_delta_s += t - p->secs;
    p->secs = t;
    return 1;
}

/* Offloaded K/V: the host's part (HERALD's; live, the executor runs and times it with the step). */
static int price_host(struct sim *s, struct step_price *p)
{
    p->host_s = cost_host_s(&s->cctx, &s->sd);
    if (!(p->host_s > 0))
        return 0;
    p->secs = cost_with_host(&s->sd, p->secs, p->host_s);
    return 1;
}

/* The executor runs the step; its measured time replaces the price, which the summary sets against it. */
static int price_live(struct sim *s, struct step_price *p)
{
    double measured;
    if (s->sum.live_steps == 0)
        s->sum.live_t0_unix = ts_unix_s();
    if (s->ex.step(s->ex.ctx, &s->sd, &measured, &s->run_err) ||
        (!(measured > 0) && ts_fail(&s->run_err, "the executor measured %g s for step %lld", measured,
                                    (long long)s->sum.num_steps)))
        return -1;
    const double secs = p->secs;
    s->sum.live_steps++;
    s->sum.live_t1_unix = ts_unix_s();
    s->sum.live_measured_s += measured;
    s->sum.live_model_s += secs;
    s->sum.live_abs_rel += fabs(secs - measured) / measured;
    if (p->host_s > 0) {
        s->sum.live_host_steps++;
        s->sum.live_host_measured_s += measured, s->sum.live_host_model_s += secs;
        s->sum.live_host_abs_rel += fabs(secs - measured) / measured;
    }
    p->secs = measured;
    p->host_idles = false; /* (measured: the card's draw over the step as priced by its work) */
    return 1;
}

/* --- the chain ------------------------------------------------------------------------------------ */

enum { LINK_ROOFLINE, LINK_CALIBRATED, LINK_ROUNDS, LINK_DRAFTER, LINK_CLOCK, LINK_HOST, LINK_LIVE, LINK_COUNT };

/* A link: prices the step s->sd into *p; 1 where it changed the price, 0 where it left this step
 * alone, -1 with s->run_err where the step cannot be priced. */
struct pricer {
    const char *name;
    int (*price)(struct sim *s, struct step_price *p);
};

static const struct pricer links[LINK_COUNT] = {
    [LINK_ROOFLINE] = {"roofline", price_backend}, [LINK_CALIBRATED] = {"calibrated", price_backend},
    [LINK_ROUNDS] = {"rounds", price_rounds},       [LINK_DRAFTER] = {"drafter", price_drafter},
    [LINK_CLOCK] = {"clock", price_clock},          [LINK_HOST] = {"host", price_host},
    [LINK_LIVE] = {"live", price_live},
};
_Static_assert(LINK_COUNT <= PRICERS_MAX, "a chain holds every link");

void pricing_resolve(struct sim *s)
{
    const bool take[LINK_COUNT] = {
        [LINK_ROOFLINE] = s->cost == &cost_roofline,
        [LINK_CALIBRATED] = s->cost == &cost_calibrated,
        [LINK_ROUNDS] = s->rounds != NULL,
        [LINK_DRAFTER] = s->pol->drafter_layers != NULL,
        [LINK_CLOCK] = s->sum.clock_modelled,
        [LINK_HOST] = true, /* (it prices the steps that offload K/V, and leaves the others) */
        [LINK_LIVE] = s->ex.step != NULL,
    };
    TS_ASSERTF(take[LINK_ROOFLINE] || take[LINK_CALIBRATED], "cost back end %s has no pricer", s->cost->name);
    s->num_pricers = 0;
    for (int k = 0; k < LINK_COUNT; k++)
        if (take[k])
            s->pricer_link[s->num_pricers++] = k;
}

static int pricing_step(struct sim *s, struct step_price *p)
{
    *p = (struct step_price){0};
    for (int i = 0; i < s->num_pricers; i++) {
        const int k = s->pricer_link[i], r = links[k].price(s, p);
        if (r < 0)
            return -1;
        if (r > 0)
            s->sum.pricing |= 1u << k;
    }
    return 0;
}

/* A step's energy on the run's GPUs: each draws its idle power and, on top, its dynamic power (TDP
 * less idle) in the share its work sets: all of it while compute bounds the work, GPU_MEM_POWER_SHARE
 * of it while memory does, weighed by the roofline's time of each; for the step's whole time
 * (sim/docs/cost-model.md, "Energy"). */
static double step_joules(const struct sim *s, const struct cost_breakdown *rb, double secs)
{
    const double work = rb->compute_s + rb->memory_s;
    const double share = work > 0 ? (rb->compute_s + GPU_MEM_POWER_SHARE * rb->memory_s) / work : 0;
    return sim_gpus(s) * secs * (s->gpu.idle_w + (s->gpu.tdp_w - s->gpu.idle_w) * share);
}

static double pricing_joules(const struct sim *s, const struct step_price *p)
{
    if (!p->host_idles)
        return step_joules(s, &p->work, p->secs);
    const double idle = TS_MIN(p->bd.op_s[OP_HOST], p->secs); /* (at the cards' idle draw) */
    return step_joules(s, &p->work, p->secs - idle) + sim_gpus(s) * idle * s->gpu.idle_w;
}

const struct sim_pricing pricing_ops = {pricing_step, pricing_joules};

const char *sim_pricing_text(uint32_t priced, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < LINK_COUNT; k++)
        if (priced & (1u << k) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " > " : "", links[k].name);
    return buf;
}
