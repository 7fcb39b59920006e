/*
 * ext_smooth.c: dInfer's IterSmooth on the engine (eng_smooth_next, eng_soft_rows): an extension
 * (eng_ext.h). A step with sd->iter_smooth turns each LM-head chunk's logits into probabilities and
 * multiplies them by the embedding matrix, keeping the products eng_smooth_next names as soft rows; the
 * next step that embeds a position adds its soft row (eng_tokens.soft).
 */
#define _POSIX_C_SOURCE 200809L
#include "ext_smooth.h"

#include "eng_ext.h"
#include "gen_ext.h"

#include <stdlib.h>
#include <string.h>

#define SMOOTH_SUB 256 /* IterSmooth's GEMM rows at a time (the products' buffer) */

struct smooth {
    /* the soft rows [soft_rows(e), h], current (sm_cur: the embedding reads them) and the next step's (its
     * logit rows write them; a step run again for its GEMMs' warm-up reads the same), a sub-chunk's
     * products [SMOOTH_SUB, h], and the step's maps ([3 max_tokens]: logit rows' soft rows, embedded
     * rows' soft rows and weights; pinned twin h_sm) */
    bf16_t *sm_soft[2], *sm_tmp;
    int sm_cur;
    int32_t *sm_map, *h_sm;
    float *sm_stats;   /* the plain rows' max and confidence [2 max_tokens], kept before credit's fusion */
    bool sm_step;      /* the step being run has iter_smooth */
    bool sm_pending;   /* eng_smooth_next named the next step's logit rows' soft rows */
    int32_t sm_R;      /* how many */
    int32_t sm_in;     /* the step's embedded rows that add a soft row (0: none) */
};

extern const struct eng_ext ext_smooth;

/* The soft rows the engine keeps: its room's requests x response positions. */
static int32_t soft_rows(const struct eng *e)
{
    return e->o.room[EXT_SMOOTH].requests * e->o.room[EXT_SMOOTH].positions;
}

static int64_t smooth_reserve(const struct eng *e)
{
    return (2LL * soft_rows(e) + SMOOTH_SUB) * e->m.hidden * 2;
}

/* Every engine runs a step with iter_smooth (keeping none of its products without soft rows). */
static int smooth_create(struct eng *e, void *st, struct ts_err *err)
{
    struct smooth *x = st;
    const int64_t T = e->o.max_tokens, h = e->m.hidden;
    if (eng_dev_alloc((void **)&x->sm_tmp, SMOOTH_SUB * h * 2, err) ||
        eng_dev_alloc((void **)&x->sm_map, 3 * T * 4, err) || eng_dev_alloc((void **)&x->sm_stats, 2 * T * 4, err) ||
        (soft_rows(e) > 0 && (eng_dev_alloc((void **)&x->sm_soft[0], (int64_t)soft_rows(e) * h * 2, err) ||
                                  eng_dev_alloc((void **)&x->sm_soft[1], (int64_t)soft_rows(e) * h * 2, err))))
        return -1;
    CU(cudaMallocHost((void **)&x->h_sm, (size_t)T * 12));
    return 0;
}

static void smooth_destroy(struct eng *e, void *st)
{
    struct smooth *x = st;
    (void)e;
    void *dev[] = {x->sm_soft[0], x->sm_soft[1], x->sm_tmp, x->sm_map, x->sm_stats};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    if (x->h_sm)
        cudaFreeHost(x->h_sm);
}

static int smooth_refuse_step(const struct eng *e, const void *st, const struct step_desc *sd, bool split,
                              struct ts_err *err)
{
    (void)st;
    if (sd->iter_smooth && (e->tp || split))
        return ts_fail(err, "step refused: IterSmooth runs on one GPU, in steps whose rows are the same in every "
                            "layer (no feature cache, front shapes or eviction)");
    return 0;
}

/* IterSmooth's part of a step: whether it runs (sd->iter_smooth); the soft rows its logit rows keep
 * (eng_smooth_next's) checked against it; the soft rows and weights its embedded rows add
 * (eng_tokens.soft), uploaded (sm_in: how many rows, 0 where none adds one). */
static int smooth_prepare(struct eng *e, void *st, const struct step_desc *sd, bool split, struct ts_err *err)
{
    struct smooth *x = st;
    const struct eng_plan *p = &e->plan;
    const int32_t T = e->o.max_tokens;
    x->sm_step = sd->iter_smooth;
    x->sm_in = 0;
    if (x->sm_pending && (!sd->iter_smooth || p->R != x->sm_R))
        return ts_fail(err, "step refused: IterSmooth's soft rows cover %d logit rows, the step has %d%s", x->sm_R,
                       p->R, sd->iter_smooth ? "" : " and no iter_smooth");
    if (!e->tokens.soft || soft_rows(e) < 1)
        return 0;
    if (split)
        return ts_fail(err, "step refused: IterSmooth's soft embeddings in a step whose rows differ by layer");
    int32_t *slot = x->h_sm + T, any = 0;
    float *w = (float *)(x->h_sm + 2 * T);
    for (int32_t s = 0; s < p->S; s++)
        for (int32_t i = 0, r = p->q_start[s]; i < p->q_len[s]; i++, r++) {
            slot[r] = e->tokens.soft(e->tokens.ctx, sd->segs[s].req_id, p->tok_pos[r], &w[r]);
            if (slot[r] >= soft_rows(e) || slot[r] < -1)
                return ts_fail(err, "step refused: request %d's position %d adds soft row %d (the engine keeps %d)",
                               sd->segs[s].req_id, p->tok_pos[r], slot[r], soft_rows(e));
            any |= slot[r] >= 0;
        }
    if (!any)
        return 0;
    CU(cudaMemcpyAsync(x->sm_map + T, slot, sizeof(int32_t) * (size_t)p->T, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(x->sm_map + 2 * T, w, sizeof(float) * (size_t)p->T, cudaMemcpyHostToDevice, e->stream));
    CU(cudaStreamSynchronize(e->stream)); /* h_sm is eng_smooth_next's staging too */
    x->sm_in = p->T;
    return 0;
}

/* A masked position's soft row added to its embedding (timed with the embedding). */
static int smooth_embed(struct eng *e, void *st, bf16_t *xrows, struct ts_err *err)
{
    struct smooth *x = st;
    const int64_t T = e->o.max_tokens;
    if (x->sm_in > 0 && eng_runs(e, OP_EMBED))
        KL(k_smooth_add(xrows, x->sm_in, e->m.hidden, x->sm_map + T, (const float *)(x->sm_map + 2 * T),
                        x->sm_soft[x->sm_cur], e->stream));
    return 0;
}

/* The chunk's plain max and confidence, kept before an extension after this one (credit decoding)
 * fuses its rows into them. */
static int smooth_keep_stats(struct eng *e, void *st, const struct eng_chunk *c, struct ts_err *err)
{
    struct smooth *x = st;
    const int T = e->o.max_tokens;
    if (!x->sm_step || !eng_runs(e, OP_SAMPLE))
        return 0;
    CU(cudaMemcpyAsync(x->sm_stats + c->c0, c->maxv + c->c0, sizeof(float) * (size_t)c->rows,
                       cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaMemcpyAsync(x->sm_stats + T + c->c0, c->conf + c->c0, sizeof(float) * (size_t)c->rows,
                       cudaMemcpyDeviceToDevice, e->stream));
    return 0;
}

/* IterSmooth over one LM-head chunk: the logits turned into probabilities in place (by the plain
 * rows' max and confidence), multiplied by the embedding matrix SMOOTH_SUB rows at a time, each
 * product kept at its logit row's soft row (eng_smooth_next; none kept without it). */
static int smooth_chunk(struct eng *e, void *st, const struct eng_chunk *c, struct ts_err *err)
{
    struct smooth *x = st;
    const int V = e->m.vocab, h = e->m.hidden, T = e->o.max_tokens;
    if (!x->sm_step)
        return 0;
    if (eng_runs(e, OP_SAMPLE))
        KL(k_softmax_rows(c->logits, c->rows, V, x->sm_stats, x->sm_stats + T, c->c0, e->stream));
    eng_mark(e, OP_SAMPLE);
    for (int s0 = 0; s0 < c->rows; s0 += SMOOTH_SUB) {
        const int sub = TS_MIN(SMOOTH_SUB, c->rows - s0);
        if (eng_runs(e, OP_LM_HEAD) &&
            eng_run_gemm_kn(e, eng_w(e, W_EMB, -1), c->logits + (size_t)s0 * V, x->sm_tmp, sub, V, h, err))
            return -1;
        if (x->sm_pending && eng_runs(e, OP_LM_HEAD))
            KL(k_smooth_scatter(x->sm_tmp, sub, h, x->sm_map, c->c0 + s0, x->sm_soft[x->sm_cur ^ 1], e->stream));
        eng_mark(e, OP_LM_HEAD);
    }
    return 0;
}

/* the soft rows the step left are the current ones */
static void smooth_step_done(struct eng *e, void *st, const struct step_desc *sd)
{
    struct smooth *x = st;
    (void)e, (void)sd;
    if (x->sm_pending) {
        x->sm_cur ^= 1;
        x->sm_pending = false;
    }
}

int eng_smooth_next(struct eng *e, const int32_t *slot, int32_t R, struct ts_err *err)
{
    struct smooth *x = eng_ext_state(e, &ext_smooth);
    if (eng_ext_rows_check(e, "IterSmooth", "soft", soft_rows(e), R, err))
        return -1;
    for (int32_t r = 0; r < R; r++)
        if (slot[r] >= soft_rows(e) || slot[r] < -1)
            return ts_fail(err, "IterSmooth: logit row %d's soft row %d out of range (%d rows)", r, slot[r],
                           soft_rows(e));
    memcpy(x->h_sm, slot, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(x->sm_map, x->h_sm, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    /* the rows the step does not write (positions it leaves alone) carry over as they are */
    CU(cudaMemcpyAsync(x->sm_soft[x->sm_cur ^ 1], x->sm_soft[x->sm_cur],
                       sizeof(bf16_t) * (size_t)soft_rows(e) * (size_t)e->m.hidden, cudaMemcpyDeviceToDevice,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    x->sm_pending = true;
    x->sm_R = R;
    return 0;
}

int eng_soft_rows(struct eng *e, float *dst, int32_t first, int32_t n, struct ts_err *err)
{
    const struct smooth *x = eng_ext_state(e, &ext_smooth);
    if (first < 0 || n < 0 || (int64_t)first + n > soft_rows(e))
        return ts_fail(err, "engine: soft rows %d..%d: the engine keeps %d", first, first + n - 1, soft_rows(e));
    return eng_read_widened(x->sm_soft[x->sm_cur] + (size_t)first * e->m.hidden, (int64_t)n * e->m.hidden, dst,
                            "soft", err);
}

/* --- in a generation (gen_ext.h): each step's soft rows and decaying thresholds, the weights kept -- */

struct smooth_gen {
    int32_t *slot; /* each logit row's soft row (gen_smooth_rows) */
    float *taus;   /* each unmask group's threshold (gen_smooth_taus) */
};

static bool smooth_gen_on(const struct gen *g, const struct unmask_rule *u)
{
    (void)u;
    return g->c.smooth.on;
}

/* a soft row a response position (gen_soft_rows) */
static struct eng_ext_room smooth_gen_room(const struct gen *g)
{
    return (struct eng_ext_room){g->c.requests, g->c.gen_len};
}

static void smooth_gen_start(void *st, const struct gen *g)
{
    struct smooth_gen *x = st;
    x->slot = xmalloc(sizeof *x->slot * (size_t)gen_rows_most(g));
    x->taus = xmalloc(sizeof *x->taus * (size_t)g->c.requests);
}

static void smooth_gen_stop(void *st)
{
    struct smooth_gen *x = st;
    free(x->slot), free(x->taus);
}

static int smooth_gen_before(void *st, struct gen_step *s, struct ts_err *err)
{
    struct smooth_gen *x = st;
    gen_smooth_rows(s->g, s->sd, x->slot);
    gen_smooth_taus(s->g, s->sd, s->u->tau, x->taus);
    s->taus = x->taus;
    return eng_smooth_next(s->e, x->slot, (int32_t)s->sd->tot.logit_rows, err);
}

static void smooth_gen_committed(void *st, const struct gen_step *s)
{
    (void)st;
    gen_smooth_keep(s->g, s->sd, s->commit);
}

static const struct gen_ext smooth_gen = {
    .on = smooth_gen_on, .room = smooth_gen_room, .state_bytes = sizeof(struct smooth_gen),
    .start = smooth_gen_start, .stop = smooth_gen_stop, .before = smooth_gen_before,
    .committed = smooth_gen_committed,
};

const struct eng_ext ext_smooth = {
    .id = EXT_SMOOTH, .state_bytes = sizeof(struct smooth), .reserve = smooth_reserve, .create = smooth_create,
    .destroy = smooth_destroy, .refuse_step = smooth_refuse_step, .prepare = smooth_prepare,
    .after_embed = smooth_embed, .head_sampled = smooth_keep_stats, .head_chunk = smooth_chunk,
    .step_done = smooth_step_done, .gen = &smooth_gen,
};
