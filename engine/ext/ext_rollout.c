/*
 * ext_rollout.c: d2Cache's attention rollout, measured on the engine (eng_rollout_next,
 * eng_rollout_out; kernels.h k_rollout_layer): an extension (eng_ext.h) run after each layer's
 * attention and after the last layer.
 */
#define _POSIX_C_SOURCE 200809L
#include "ext_rollout.h"

#include "eng_ext.h"
#include "gen_ext.h"

#include <math.h>
#include <stdlib.h>

struct rollout { /* each entry's mix a layer, its importance and the products' scratch; the next step's entries */
    float *ro_mix, *ro_imp, *ro_tmp;
    struct eng_rollout_req *ro;
    int32_t ro_n;
    bool ro_pending;
};

extern const struct eng_ext ext_rollout;

/* The room the engine keeps for d2Cache's rollout: its requests and each one's positions. */
static struct eng_ext_room room(const struct eng *e) { return e->o.room[EXT_ROLLOUT]; }

/* d2Cache's attention rollout's buffers (eng_opts.room): each request's mix a layer, its
 * importance and scratch. */
static int64_t rollout_reserve(const struct eng *e)
{
    const int64_t N = room(e).positions;
    return N > 0 ? (int64_t)room(e).requests * ((int64_t)e->m.num_layers * N * N + 2 * N) * 4 : 0;
}

/* d2Cache's attention rollout's buffers (rollout_reserve), where the engine is made with them. */
static int rollout_create(struct eng *e, void *st, struct ts_err *err)
{
    struct rollout *x = st;
    if (room(e).positions <= 0)
        return 0;
    const int64_t R = room(e).requests, N = room(e).positions;
    if (eng_dev_alloc((void **)&x->ro_mix, R * e->m.num_layers * N * N * 4, err) ||
        eng_dev_alloc((void **)&x->ro_imp, R * N * 4, err) || eng_dev_alloc((void **)&x->ro_tmp, R * N * 4, err))
        return -1;
    x->ro = xcalloc((size_t)R, sizeof *x->ro);
    return 0;
}

/* d2Cache's attention rollout in layer L of a step (eng_rollout_next), after its attention: each entry's
 * mix (k_rollout_layer); after the last layer (importance) each entry's rollout's column sums. */
static struct k_rollout_args rollout_args(const struct eng *e, const struct rollout *x, int32_t i, int L, int layers,
                                          const bf16_t *qkv,
                                          const bf16_t *kp)
{
    const struct model_cfg *m = &e->m;
    const int64_t N = room(e).positions;
    return (struct k_rollout_args){
        .q = qkv, .k_pool = kp, .slot = e->dm.tok_slot, .mix = x->ro_mix + (int64_t)i * m->num_layers * N * N,
        .importance = x->ro_imp + i * N, .scratch = x->ro_tmp + i * N, .row0 = e->plan.q_start[x->ro[i].seg],
        .N = x->ro[i].N, .q_stride = (m->num_heads + 2 * m->num_kv_heads) * m->head_dim,
        .k_stride = m->num_kv_heads * m->head_dim, .H = m->num_heads, .Hkv = m->num_kv_heads, .d = m->head_dim,
        .layer = L, .layers = layers, .scale = 1.0f / sqrtf((float)m->head_dim)};
}

static int rollout_layer(struct eng *e, void *st, int L, const struct k_attn_args *aa, const bf16_t *qkv,
                         const bf16_t *kp, struct ts_err *err)
{
    struct rollout *x = st;
    (void)aa;
    if (!x->ro_pending)
        return 0;
    for (int32_t i = 0; i < x->ro_n; i++) {
        const struct eng_rollout_req *r = &x->ro[i];
        if (eng_ext_seg_alone(e, "d2Cache's attention rollout", i, r->seg, r->N, err))
            return -1;
        const struct k_rollout_args a = rollout_args(e, x, i, L, e->m.num_layers, qkv, kp);
        KL(k_rollout_layer(&a, e->stream));
    }
    return 0;
}

static int rollout_importance(struct eng *e, void *st, int layers, struct ts_err *err)
{
    struct rollout *x = st;
    if (!x->ro_pending)
        return 0;
    for (int32_t i = 0; i < x->ro_n; i++) {
        const struct k_rollout_args a = rollout_args(e, x, i, layers - 1, layers, NULL, NULL);
        KL(k_rollout_importance(&a, e->stream));
    }
    return 0;
}

int eng_rollout_next(struct eng *e, const struct eng_rollout_req *r, int32_t n, struct ts_err *err)
{
    struct rollout *x = eng_ext_state(e, &ext_rollout);
    if (room(e).positions <= 0)
        return ts_fail(err, "d2Cache's attention rollout: the engine keeps no buffers for it "
                            "(eng_opts.room)");
    if (n < 0 || n > room(e).requests)
        return ts_fail(err, "d2Cache's attention rollout: %d requests (at most %d)", n, room(e).requests);
    for (int32_t i = 0; i < n; i++) {
        if (r[i].seg < 0 || r[i].N < 1 || r[i].N > room(e).positions)
            return ts_fail(err, "d2Cache's attention rollout: entry %d (segment %d, %d positions) out of range (at "
                                "most %d positions)", i, r[i].seg, r[i].N, room(e).positions);
        x->ro[i] = r[i];
    }
    x->ro_n = n;
    x->ro_pending = n > 0;
    return 0;
}

int eng_rollout_out(struct eng *e, float *importance, struct ts_err *err)
{
    const struct rollout *x = eng_ext_state(e, &ext_rollout);
    CU(cudaMemcpy(importance, x->ro_imp, sizeof(float) * (size_t)x->ro_n * (size_t)room(e).positions,
                  cudaMemcpyDeviceToHost));
    return 0;
}

static int rollout_refused(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err)
{
    (void)m;
    if (o->room[EXT_ROLLOUT].positions > K_ROLLOUT_MAX_N)
        return ts_fail(err, "engine: d2Cache's attention rollout over %d positions a request (at most %d)",
                       o->room[EXT_ROLLOUT].positions, K_ROLLOUT_MAX_N);
    return 0;
}

static void rollout_destroy(struct eng *e, void *st)
{
    struct rollout *x = st;
    (void)e;
    void *dev[] = {x->ro_mix, x->ro_imp, x->ro_tmp};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    free(x->ro);
}

static void rollout_step_done(struct eng *e, void *st, const struct step_desc *sd)
{
    (void)e, (void)sd;
    ((struct rollout *)st)->ro_pending = false;
}

static bool rollout_pending(const void *st) { return ((const struct rollout *)st)->ro_pending; }

/* --- in a generation (gen_ext.h): the rollout measured on each step, d2Cache's rule applied to it -- */

struct rollout_gen {
    struct eng_rollout_req *q; /* each request's entry (gen_rollout_reqs) */
    float *imp;                /* its rows' importance and eligibility, a stride apart */
    uint8_t *elig;
    int32_t *order, n, stride; /* the nucleus's scratch */
};

static bool rollout_gen_on(const struct gen *g, const struct unmask_rule *u)
{
    (void)u;
    return g->c.rollout.on;
}

static void rollout_gen_start(void *st, const struct gen *g)
{
    struct rollout_gen *x = st;
    const size_t n = (size_t)g->c.requests;
    x->stride = gen_longest(g);
    x->q = xmalloc(sizeof *x->q * n);
    x->imp = xmalloc(sizeof *x->imp * n * (size_t)x->stride);
    x->elig = xmalloc(n * (size_t)x->stride);
    x->order = xmalloc(sizeof *x->order * (size_t)x->stride);
}

static void rollout_gen_stop(void *st)
{
    struct rollout_gen *x = st;
    free(x->q), free(x->imp), free(x->elig), free(x->order);
}

static int rollout_gen_before(void *st, struct gen_step *s, struct ts_err *err)
{
    struct rollout_gen *x = st;
    return (x->n = gen_rollout_reqs(s->g, s->sd, x->q, x->elig, x->stride, err)) < 0 ||
                   eng_rollout_next(s->e, x->q, x->n, err)
               ? -1
               : 0;
}

static int rollout_gen_after(void *st, struct gen_step *s, struct ts_err *err)
{
    return eng_rollout_out(s->e, ((struct rollout_gen *)st)->imp, err);
}

/* (after the commits: what the next step of d2Cache's would run) */
static void rollout_gen_applied(void *st, const struct gen_step *s)
{
    struct rollout_gen *x = st;
    gen_rollout_apply(s->g, s->sd, x->q, x->n, x->imp, s->out->conf, x->elig, x->stride, x->order);
}

static void rollout_gen_report(const void *st, const struct gen *g)
{
    (void)st;
    printf("  d2 rollout       a nucleus of %.4f of the other positions a step (mean over %lld measured steps; "
           "%.1f of %.1f on average; p %g, k %d)\n", g->d2_steps ? g->d2_share / (double)g->d2_steps : 0,
           (long long)g->d2_steps, g->d2_steps ? (double)g->d2_nucleus / (double)g->d2_steps : 0,
           g->d2_steps ? (double)g->d2_eligible / (double)g->d2_steps : 0, g->c.rollout.p, g->c.rollout.k);
}

static void rollout_gen_outcome(const struct gen *g, int32_t i, FILE *f)
{
    const struct gen_req *r = &g->r[i];
    fprintf(f, "\"d2_steps\": %d, \"d2_nucleus\": %lld, \"d2_eligible\": %lld, \"d2_share\": %.6f, ", r->d2_steps,
            (long long)r->d2_nucleus, (long long)r->d2_eligible, r->d2_steps ? r->d2_share / r->d2_steps : 0.0);
}

static const struct gen_ext rollout_gen = {
    .on = rollout_gen_on, .room = gen_ext_every_position, .state_bytes = sizeof(struct rollout_gen),
    .start = rollout_gen_start, .stop = rollout_gen_stop, .before = rollout_gen_before, .after = rollout_gen_after,
    .applied = rollout_gen_applied, .report = rollout_gen_report, .outcome = rollout_gen_outcome,
};

const struct eng_ext ext_rollout = {
    .id = EXT_ROLLOUT, .state_bytes = sizeof(struct rollout), .refused = rollout_refused,
    .reserve = rollout_reserve, .create = rollout_create, .destroy = rollout_destroy,
    .one_gpu = true, .pending = rollout_pending, .after_attention = rollout_layer,
    .after_layers = rollout_importance, .step_done = rollout_step_done, .gen = &rollout_gen,
};
