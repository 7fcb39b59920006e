/*
 * ext_credit.c: dInfer's credit decoding on the engine (eng_credit_next; eng_unmask.h, kernels.h
 * k_credit_fuse): an extension (eng_ext.h). The LM head fuses each logit row with its credit row, so the
 * step's argmax and confidence (eng_out, eng_unmask) are the fused logits'.
 */
#define _POSIX_C_SOURCE 200809L
#include "ext_credit.h"

#include "eng_ext.h"
#include "gen_ext.h"

#include <stdlib.h>
#include <string.h>

_Static_assert((int)K_CREDIT_MAX == (int)CREDIT_MAX && (int)K_CREDIT_MASKED == (int)CREDIT_MASKED &&
                   (int)K_CREDIT_DECAY == (int)CREDIT_DECAY && (int)K_CREDIT_CLEAR == (int)CREDIT_CLEAR,
               "kernels.h's credit rows are eng_unmask.h's");

struct credit {
    /* the credit rows, current (cr_cur) and the next step's, and the next step's logit rows' credit rows
     * and flags ([2 max_tokens], staged in e->h_um) */
    int32_t *cr_tok[2], *cr_n[2], *cr_map;
    float *cr_val[2];
    int cr_cur;
    bool cr_pending;
    int32_t cr_R;
    float cr_alpha, cr_beta, cr_gamma;
};

extern const struct eng_ext ext_credit;

/* The credit rows the engine keeps: its room's requests x block positions. */
static int32_t credit_rows(const struct eng *e)
{
    return e->o.room[EXT_CREDIT].requests * e->o.room[EXT_CREDIT].positions;
}

/* Credit decoding's rows, twice (current and next), empty; the next step's row map. */
static int credit_create(struct eng *e, void *st, struct ts_err *err)
{
    struct credit *x = st;
    const int64_t S = credit_rows(e);
    if (S <= 0)
        return 0;
    for (int b = 0; b < 2; b++) {
        if (eng_dev_alloc((void **)&x->cr_tok[b], S * K_CREDIT_MAX * 4, err) ||
            eng_dev_alloc((void **)&x->cr_val[b], S * K_CREDIT_MAX * 4, err) ||
            eng_dev_alloc((void **)&x->cr_n[b], S * 4, err))
            return -1;
        CU(cudaMemsetAsync(x->cr_n[b], 0, (size_t)S * 4, e->stream));
    }
    return eng_dev_alloc((void **)&x->cr_map, 2LL * e->o.max_tokens * 4, err);
}

static void credit_destroy(struct eng *e, void *st)
{
    struct credit *x = st;
    (void)e;
    void *dev[] = {x->cr_tok[0], x->cr_tok[1], x->cr_n[0], x->cr_n[1], x->cr_val[0], x->cr_val[1], x->cr_map};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
}

static int credit_prepare(struct eng *e, void *st, const struct step_desc *sd, bool split, struct ts_err *err)
{
    const struct credit *x = st;
    (void)sd, (void)split;
    if (x->cr_pending && e->plan.R != x->cr_R)
        return ts_fail(err, "step refused: its credit rows cover %d logit rows, the step has %d", x->cr_R, e->plan.R);
    return 0;
}

/* The chunk's rows fused with their credits: its argmax, max and confidence become the fused rows'. */
static int credit_fuse_rows(struct eng *e, void *st, const struct eng_chunk *c, struct ts_err *err)
{
    const struct credit *x = st;
    if (!x->cr_pending || !eng_runs(e, OP_SAMPLE))
        return 0;
    const int now = x->cr_cur, next = now ^ 1, T = e->o.max_tokens;
    const k_credit_args ca = {c->logits, c->rows, e->m.vocab, c->c0, c->tok, c->maxv, c->conf, x->cr_map,
                              x->cr_map + T, x->cr_tok[now], x->cr_n[now], x->cr_val[now], x->cr_tok[next],
                              x->cr_n[next], x->cr_val[next], x->cr_alpha, x->cr_beta, x->cr_gamma};
    KL(k_credit_fuse(&ca, e->stream));
    return 0;
}

/* the credits the step left are the current ones */
static void credit_step_done(struct eng *e, void *st, const struct step_desc *sd)
{
    struct credit *x = st;
    (void)e, (void)sd;
    if (x->cr_pending) {
        x->cr_cur ^= 1;
        x->cr_pending = false;
    }
}

int eng_credit_next(struct eng *e, const struct unmask_rule *u, const int32_t *state, const int32_t *flags, int32_t R,
                    struct ts_err *err)
{
    struct credit *x = eng_ext_state(e, &ext_credit);
    const int32_t T = e->o.max_tokens;
    if (eng_ext_rows_check(e, "credit decoding", "credit", credit_rows(e), R, err))
        return -1;
    for (int32_t r = 0; r < R; r++)
        if (state[r] >= credit_rows(e) || state[r] < -1 || flags[r] & ~7)
            return ts_fail(err, "credit decoding: logit row %d's credit row %d or flags %d out of range (%d rows)", r,
                           state[r], flags[r], credit_rows(e));
    memcpy(e->h_um, state, sizeof(int32_t) * (size_t)R);
    memcpy(e->h_um + T, flags, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(x->cr_map, e->h_um, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(x->cr_map + T, e->h_um + T, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice, e->stream));
    /* the rows the step leaves alone (a request that waits) carry over as they are */
    const int now = x->cr_cur, next = now ^ 1;
    const size_t S = (size_t)credit_rows(e);
    CU(cudaMemcpyAsync(x->cr_tok[next], x->cr_tok[now], S * K_CREDIT_MAX * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaMemcpyAsync(x->cr_val[next], x->cr_val[now], S * K_CREDIT_MAX * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaMemcpyAsync(x->cr_n[next], x->cr_n[now], S * 4, cudaMemcpyDeviceToDevice, e->stream));
    CU(cudaStreamSynchronize(e->stream)); /* h_um is eng_unmask's staging too */
    x->cr_pending = true;
    x->cr_R = R;
    x->cr_alpha = u->alpha, x->cr_beta = u->beta, x->cr_gamma = u->gamma;
    return 0;
}

/* --- in a generation (gen_ext.h): each step's rows named with their positions' credits ----------- */

struct credit_gen {
    int32_t *state, *flags; /* each logit row's credit row and flags (gen_credit_rows) */
};

static bool credit_gen_on(const struct gen *g, const struct unmask_rule *u)
{
    (void)g;
    return u->kind == UNMASK_CREDIT;
}

/* a block of credit rows a request */
static struct eng_ext_room credit_gen_room(const struct gen *g)
{
    return (struct eng_ext_room){g->c.requests, g->c.block};
}

static void credit_gen_start(void *st, const struct gen *g)
{
    struct credit_gen *x = st;
    x->state = xmalloc(sizeof *x->state * (size_t)gen_rows_most(g));
    x->flags = xmalloc(sizeof *x->flags * (size_t)gen_rows_most(g));
}

static void credit_gen_stop(void *st)
{
    struct credit_gen *x = st;
    free(x->state), free(x->flags);
}

static int credit_gen_before(void *st, struct gen_step *s, struct ts_err *err)
{
    struct credit_gen *x = st;
    gen_credit_rows(s->g, s->sd, x->state, x->flags);
    return eng_credit_next(s->e, s->u, x->state, x->flags, (int32_t)s->sd->tot.logit_rows, err);
}

static const struct gen_ext credit_gen = {
    .on = credit_gen_on, .room = credit_gen_room, .state_bytes = sizeof(struct credit_gen),
    .start = credit_gen_start, .stop = credit_gen_stop, .before = credit_gen_before,
};

const struct eng_ext ext_credit = {
    .id = EXT_CREDIT, .state_bytes = sizeof(struct credit), .create = credit_create, .destroy = credit_destroy,
    .prepare = credit_prepare, .head_sampled = credit_fuse_rows, .step_done = credit_step_done, .gen = &credit_gen,
};
