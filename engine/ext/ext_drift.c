/*
 * ext_drift.c: Elastic-Cache's drift test, measured on the engine (eng_drift_next, eng_drift_out;
 * kernels.h k_drift): an extension (eng_ext.h) run after each layer's attention.
 */
#define _POSIX_C_SOURCE 200809L
#include "ext_drift.h"

#include "eng_ext.h"
#include "gen_ext.h"

#include <math.h>
#include <stdlib.h>

struct drift {
    /* each request's queries and keys by position, in every layer, as its cache held them before the
     * step (drift_cur) and after it; the next step's entries, their sel, rowmap, eligible and queried
     * (drift_sel: K_DRIFT_MAX_ROWS a request; the others its room's positions a request); scratch; each
     * entry's tracked token and similarity a layer */
    bf16_t *drift_q[2], *drift_k[2];
    int drift_cur;
    bool drift_pending;
    struct eng_drift_req *drift;
    int32_t drift_n, *drift_sel, *drift_rowmap, *d_drift_track;
    uint8_t *drift_elig, *drift_query;
    float *drift_probs, *d_drift_sim;
};

extern const struct eng_ext ext_drift;

/* The room the engine keeps for Elastic-Cache's drift test: its requests and each one's positions. */
static struct eng_ext_room room(const struct eng *e) { return e->o.room[EXT_DRIFT]; }

/* Elastic-Cache's drift test's buffers (eng_opts.room): two steps' queries and keys of
 * every request and layer, its scratch and its entries' positions. */
static int64_t drift_q_elems(const struct eng *e)
{
    return (int64_t)e->m.num_layers * room(e).requests * room(e).positions * e->m.num_heads * e->m.head_dim;
}

static int64_t drift_k_elems(const struct eng *e)
{
    return (int64_t)e->m.num_layers * room(e).requests * room(e).positions * e->m.num_kv_heads * e->m.head_dim;
}

static int64_t drift_probs_bytes(const struct eng *e)
{
    return (int64_t)2 * K_DRIFT_MAX_ROWS * e->m.num_heads * room(e).positions * 4;
}

static int64_t drift_reserve(const struct eng *e)
{
    if (room(e).positions <= 0)
        return 0;
    return 2 * 2 * (drift_q_elems(e) + drift_k_elems(e)) + drift_probs_bytes(e) +
           (int64_t)room(e).requests * (K_DRIFT_MAX_ROWS * 4 + 6LL * room(e).positions) +
           (int64_t)room(e).requests * e->m.num_layers * 8;
}

/* Elastic-Cache's drift test's buffers (drift_reserve), where the engine is made with them. */
static int drift_create(struct eng *e, void *st, struct ts_err *err)
{
    struct drift *x = st;
    if (room(e).positions <= 0)
        return 0;
    const int64_t R = room(e).requests, layers = e->m.num_layers;
    for (int b = 0; b < 2; b++)
        if (eng_dev_alloc((void **)&x->drift_q[b], 2 * drift_q_elems(e), err) ||
            eng_dev_alloc((void **)&x->drift_k[b], 2 * drift_k_elems(e), err))
            return -1;
    if (eng_dev_alloc((void **)&x->drift_probs, drift_probs_bytes(e), err) ||
        eng_dev_alloc((void **)&x->drift_sel, R * K_DRIFT_MAX_ROWS * 4, err) ||
        eng_dev_alloc((void **)&x->drift_elig, R * room(e).positions, err) ||
        eng_dev_alloc((void **)&x->drift_query, R * room(e).positions, err) ||
        eng_dev_alloc((void **)&x->drift_rowmap, R * room(e).positions * 4, err) ||
        eng_dev_alloc((void **)&x->d_drift_track, R * layers * 4, err) ||
        eng_dev_alloc((void **)&x->d_drift_sim, R * layers * 4, err))
        return -1;
    x->drift = xcalloc((size_t)R, sizeof *x->drift);
    return 0;
}

/* Elastic-Cache's drift test in layer L of a step (eng_drift_next), after its attention: each entry's
 * tracked token and similarity at this layer, and its queries and keys kept for the next step. */
static int drift_layer(struct eng *e, void *st, int L, const struct k_attn_args *aa, const bf16_t *qkv,
                       const bf16_t *kp, struct ts_err *err)
{
    struct drift *x = st;
    (void)aa;
    if (!x->drift_pending)
        return 0;
    const struct model_cfg *m = &e->m;
    const int H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int64_t Np = room(e).positions, qd = (int64_t)H * d, kvd = (int64_t)Hkv * d;
    for (int32_t i = 0; i < x->drift_n; i++) {
        const struct eng_drift_req *r = &x->drift[i];
        if (eng_ext_seg_alone(e, "Elastic-Cache's drift test", i, r->seg, r->N, err))
            return -1;
        const int64_t at = ((int64_t)L * room(e).requests + r->req) * Np; /* the request's first position */
        const struct k_drift_args a = {
            .q = qkv, .k_pool = kp, .slot = e->dm.tok_slot, .prev_q_read = x->drift_q[x->drift_cur] + at * qd,
            .prev_k_read = x->drift_k[x->drift_cur] + at * kvd,
            .prev_q_write = x->drift_q[x->drift_cur ^ 1] + at * qd,
            .prev_k_write = x->drift_k[x->drift_cur ^ 1] + at * kvd,
            .sel = x->drift_sel + (int64_t)i * K_DRIFT_MAX_ROWS,
            .rowmap = x->drift_rowmap + (int64_t)i * Np, .eligible = x->drift_elig + (int64_t)i * Np,
            .queried = x->drift_query + (int64_t)i * Np, .sims = x->d_drift_sim + (int64_t)i * m->num_layers,
            .layer = L, .gamma = r->gamma, .probs = x->drift_probs,
            .out_track = x->d_drift_track + (int64_t)i * m->num_layers + L,
            .out_sim = x->d_drift_sim + (int64_t)i * m->num_layers + L, .row0 = e->plan.q_start[r->seg], .N = r->N,
            .nwin = r->nwin, .ntrack = r->ntrack, .q_stride = (H + 2 * Hkv) * d, .k_stride = (int)kvd, .H = H,
            .Hkv = Hkv, .d = d, .scale = 1.0f / sqrtf((float)d)};
        KL(k_drift(&a, e->stream));
    }
    return 0;
}

int eng_drift_next(struct eng *e, const struct eng_drift_req *r, int32_t n, struct ts_err *err)
{
    struct drift *x = eng_ext_state(e, &ext_drift);
    if (room(e).positions <= 0)
        return ts_fail(err, "Elastic-Cache's drift test: the engine keeps no queries and keys for it "
                            "(eng_opts.room)");
    if (n < 0 || n > room(e).requests)
        return ts_fail(err, "Elastic-Cache's drift test: %d requests (at most %d)", n, room(e).requests);
    for (int32_t i = 0; i < n; i++) {
        const struct eng_drift_req *q = &r[i];
        if (q->req < 0 || q->req >= room(e).requests || q->N < 1 || q->N > room(e).positions || q->nwin < 0 ||
            q->ntrack < 0 || q->nwin + q->ntrack > K_DRIFT_MAX_ROWS || q->seg < 0)
            return ts_fail(err, "Elastic-Cache's drift test: entry %d (request %d, %d positions, %d window and %d "
                                "tracked rows) out of range", i, q->req, q->N, q->nwin, q->ntrack);
        for (int32_t k = 0; k < q->nwin + q->ntrack; k++)
            if (q->sel[k] < 0 || q->sel[k] >= q->N)
                return ts_fail(err, "Elastic-Cache's drift test: entry %d's row %d at position %d (of %d)", i, k,
                               q->sel[k], q->N);
        for (int32_t p = 0; p < q->N; p++)
            if (q->rowmap[p] < 0 || q->rowmap[p] >= q->N)
                return ts_fail(err, "Elastic-Cache's drift test: entry %d's position %d at row %d (of %d)", i, p,
                               q->rowmap[p], q->N);
        CU(cudaMemcpyAsync(x->drift_sel + (int64_t)i * K_DRIFT_MAX_ROWS, q->sel,
                           sizeof(int32_t) * (size_t)(q->nwin + q->ntrack), cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(x->drift_elig + (int64_t)i * room(e).positions, q->eligible, (size_t)q->N,
                           cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(x->drift_rowmap + (int64_t)i * room(e).positions, q->rowmap,
                           sizeof(int32_t) * (size_t)q->N, cudaMemcpyHostToDevice, e->stream));
        CU(cudaMemcpyAsync(x->drift_query + (int64_t)i * room(e).positions, q->queried, (size_t)q->N,
                           cudaMemcpyHostToDevice, e->stream));
        x->drift[i] = *q;
        x->drift[i].sel = x->drift[i].rowmap = NULL, x->drift[i].eligible = x->drift[i].queried = NULL;
    }
    CU(cudaStreamSynchronize(e->stream));
    x->drift_n = n;
    x->drift_pending = n > 0;
    return 0;
}

int eng_drift_out(struct eng *e, int32_t *track, float *sim, struct ts_err *err)
{
    const struct drift *x = eng_ext_state(e, &ext_drift);
    const size_t n = (size_t)x->drift_n * (size_t)e->m.num_layers;
    CU(cudaMemcpy(track, x->d_drift_track, n * 4, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(sim, x->d_drift_sim, n * 4, cudaMemcpyDeviceToHost));
    return 0;
}

static void drift_destroy(struct eng *e, void *st)
{
    struct drift *x = st;
    (void)e;
    void *dev[] = {x->drift_q[0], x->drift_q[1], x->drift_k[0], x->drift_k[1], x->drift_probs, x->drift_sel,
                   x->drift_rowmap, x->drift_elig, x->drift_query, x->d_drift_track, x->d_drift_sim};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    free(x->drift);
}

/* the queries and keys the step kept are the step before's now */
static void drift_step_done(struct eng *e, void *st, const struct step_desc *sd)
{
    struct drift *x = st;
    (void)e, (void)sd;
    if (x->drift_pending) {
        x->drift_cur ^= 1;
        x->drift_pending = false;
    }
}

static bool drift_pending(const void *st) { return ((const struct drift *)st)->drift_pending; }

/* --- in a generation (gen_ext.h): the test measured on each step, its counts reported ------------ */

struct drift_gen {
    struct eng_drift_req *q; /* each request's entry (gen_elastic_reqs) and its buffers */
    int32_t *sel, *rowmap, n;
    uint8_t *elig;
    int32_t *track; /* each entry's answers a layer (eng_drift_out) */
    float *sim;
};

static bool drift_gen_on(const struct gen *g, const struct unmask_rule *u)
{
    (void)u;
    return g->c.elastic.on;
}

static void drift_gen_start(void *st, const struct gen *g)
{
    struct drift_gen *x = st;
    const size_t n = (size_t)g->c.requests, most = (size_t)gen_rows_most(g), layers = (size_t)g->c.elastic.layers;
    x->q = xmalloc(sizeof *x->q * n);
    x->sel = xmalloc(sizeof *x->sel * n * K_DRIFT_MAX_ROWS);
    x->elig = xmalloc(2 * most);
    x->rowmap = xmalloc(sizeof *x->rowmap * most);
    x->track = xmalloc(sizeof *x->track * n * layers);
    x->sim = xmalloc(sizeof *x->sim * n * layers);
}

static void drift_gen_stop(void *st)
{
    struct drift_gen *x = st;
    free(x->q), free(x->sel), free(x->elig), free(x->rowmap), free(x->track), free(x->sim);
}

static int drift_gen_before(void *st, struct gen_step *s, struct ts_err *err)
{
    struct drift_gen *x = st;
    return (x->n = gen_elastic_reqs(s->g, s->sd, x->q, x->sel, x->rowmap, x->elig, err)) < 0 ||
                   eng_drift_next(s->e, x->q, x->n, err)
               ? -1
               : 0;
}

static int drift_gen_after(void *st, struct gen_step *s, struct ts_err *err)
{
    struct drift_gen *x = st;
    if (eng_drift_out(s->e, x->track, x->sim, err))
        return -1;
    gen_elastic_apply(s->g, x->q, x->n, x->track, x->sim);
    return 0;
}

/* The share of tested steps that would refresh, the layers they would start at (median and quartiles)
 * and the tokens tracked a step. */
static void drift_gen_report(const void *st, const struct gen *g)
{
    (void)st;
    const int32_t layers = g->c.elastic.layers;
    int32_t q[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        int64_t seen = 0;
        const double want = g->ec_refreshes * 0.25 * (k + 1);
        for (q[k] = 0; q[k] < layers && (double)(seen += g->ec_from[q[k]]) < want; q[k]++)
            ;
    }
    printf("  Elastic drift    %lld of %lld tested steps would refresh (%.4f; bound %g, window %d), from layer %d "
           "(median; quartiles %d, %d), %.1f tracked tokens a step\n", (long long)g->ec_refreshes,
           (long long)g->ec_tested, g->ec_tested ? (double)g->ec_refreshes / (double)g->ec_tested : 0,
           g->c.elastic.gamma, g->c.elastic.window, q[1], q[0], q[2],
           g->ec_tested ? (double)g->ec_tracked / (double)g->ec_tested : 0);
}

static void drift_gen_outcome(const struct gen *g, int32_t i, FILE *f)
{
    const struct gen_req *r = &g->r[i];
    fprintf(f, "\"elastic_tested\": %d, \"elastic_refreshes\": %d, \"elastic_tracked\": %lld, ", r->ec_tested,
            r->ec_refreshes, (long long)r->ec_tracked);
}

static const struct gen_ext drift_gen = {
    .on = drift_gen_on, .room = gen_ext_every_position, .state_bytes = sizeof(struct drift_gen),
    .start = drift_gen_start, .stop = drift_gen_stop, .before = drift_gen_before, .after = drift_gen_after,
    .report = drift_gen_report, .outcome = drift_gen_outcome,
};

const struct eng_ext ext_drift = {
    .id = EXT_DRIFT, .state_bytes = sizeof(struct drift), .reserve = drift_reserve, .create = drift_create,
    .destroy = drift_destroy, .one_gpu = true, .pending = drift_pending,
    .after_attention = drift_layer, .step_done = drift_step_done, .gen = &drift_gen,
};
