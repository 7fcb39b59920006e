/*
 * check_engine_tp.c: `check_engine --tp N`, run by every rank of a launch (eng_tp.h); rank 0 reports.
 *
 * check: per model (LLaDA-8B; Dream-7B: GQA and QKV bias; LLaDA2.0-mini: experts, block-causal),
 * the same steps through the tensor-parallel engine and, on rank 0, through a one-GPU engine of the
 * same weights: Refresh with logits for every row, Reuse over the cache it filled, a step mixing a
 * prefill with Reuse, a Refresh that keeps a sparse cache per K/V head (each GPU selecting for its
 * own heads) and Reuse over it; over the first two layers, then over all. Per step, the final
 * normalised rows, the logits' maxima and confidences (normwise relative errors) and the rows
 * whose argmax differs. Random weights give nearly flat logits over a vocabulary of 10^5, whose
 * argmax any change of rounding moves in some rows, and their errors grow with depth; so each is
 * set against the one-GPU engine's own spread under a change of rounding at the same depth (the
 * step with either attention kernel alone): within 2e-2 or twice that spread, and rows whose argmax
 * differs at most twice its share of them (plus three standard deviations of such a count, and
 * one). A wrong share of a weight is off by order 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_engine.h"
#include "eng.h"
#include "eng_tp.h"
#include "eng_weights.h"

#define TP_BOUND 2e-2 /* a whole step's normwise relative error, as the one-GPU checks' steps */
/* The tools' engine (eng_tp_create) of this rank of a launch of `size`, or with size 0 the whole
 * model on GPU 0, said on stderr where it cannot be made. */
static int tp_engine(const struct model_cfg *m, uint64_t seed, int size, int *rank, struct eng **e)
{
    struct ts_err err;
    if (eng_tp_create(m, seed, size, &check_choices, rank, e, &err) == 0)
        return 0;
    fprintf(stderr, "check_engine --tp: %s%s\n", size ? "" : "the one-GPU engine: ", err.msg);
    return -1;
}

struct tp_out { /* one engine's results of a step */
    int R;
    int32_t *tok;
    float *maxv, *conf, *hidden;
};

static int run_step(struct eng *e, const struct step_desc *sd, int h, struct tp_out *o)
{
    struct ts_err err;
    struct eng_out out;
    if (eng_step(e, sd, &out, NULL, &err)) {
        fprintf(stderr, "check_engine --tp: %s\n", err.msg);
        return -1;
    }
    o->R = out.R;
    o->tok = xmalloc(sizeof *o->tok * (size_t)out.R);
    o->maxv = xmalloc(sizeof *o->maxv * (size_t)out.R);
    o->conf = xmalloc(sizeof *o->conf * (size_t)out.R);
    o->hidden = xmalloc(sizeof *o->hidden * (size_t)out.R * (size_t)h);
    memcpy(o->tok, out.tok, sizeof *o->tok * (size_t)out.R);
    memcpy(o->maxv, out.maxv, sizeof *o->maxv * (size_t)out.R);
    memcpy(o->conf, out.conf, sizeof *o->conf * (size_t)out.R);
    if (eng_last_hidden(e, o->hidden, &err)) {
        fprintf(stderr, "check_engine --tp: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void out_free(struct tp_out *o)
{
    free(o->tok), free(o->maxv), free(o->conf), free(o->hidden);
    memset(o, 0, sizeof *o);
}

/* Token v's logit from the normalised row x, the LM head's row v drawn as the engine draws it. */
static double logit_of(const struct eng_layout *l, const struct model_cfg *m, uint64_t seed, const float *x, int v)
{
    int i = 0;
    while (i < l->n && l->t[i].kind != W_LM)
        i++;
    const uint64_t s = eng_tensor_seed(seed, i);
    double sum = 0;
    for (int c = 0; c < m->hidden; c++)
        sum += (double)x[c] * eng_bf2f(eng_f2bf(l->t[i].scale * eng_hash_uniform(s, (uint64_t)v * m->hidden + c)));
    return sum;
}

/* Rows whose argmax differs beyond a near tie: the two tokens' logits, from the one-GPU engine's row,
 * further apart than `tie` of the larger. */
static int not_ties(const struct model_cfg *m, uint64_t seed, const struct tp_out *a, const struct tp_out *b,
                    double tie, int *differ)
{
    struct eng_layout l;
    struct ts_err err;
    if (eng_layout_build(m, &l, &err))
        return a->R;
    int bad = 0;
    *differ = 0;
    for (int r = 0; r < a->R; r++) {
        if (a->tok[r] == b->tok[r])
            continue;
        ++*differ;
        const float *x = b->hidden + (size_t)r * m->hidden;
        const double la = logit_of(&l, m, seed, x, a->tok[r]), lb = logit_of(&l, m, seed, x, b->tok[r]);
        bad += fabs(la - lb) > tie * fmax(fabs(la), fabs(lb));
    }
    eng_layout_free(&l);
    return bad;
}

static void seg(struct step_desc *sd, int req, int q, int kv, int logits)
{
    const struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* The check's steps: i = 0 Refresh 4 x 512 with every logit, 1 Reuse 4 x 32 over 480, 2 a prefill
 * of 700 (64 logits) beside Reuse 4 x 32 over 480; 3 Refresh 4 x 512 whose last 32 rows select 256
 * of the 480 before them per K/V head (dLLM-Serve's head-centric cache, pooled over 3), 4 Reuse 4 x 32
 * over what they kept. */
#define CHECK_STEPS 5
#define CHECK_REQS 24 /* the requests the steps name */
static void check_step(struct step_desc *sd, int i)
{
    step_desc_clear(sd);
    sd->select_heads = i == 3;
    sd->select_kernel = 3;
    if (i == 2)
        seg(sd, 10, 700, 0, 64);
    for (int s = 0; s < 4; s++) {
        const int r = i >= 3 ? 20 + s : s; /* the selecting requests' own */
        if (i == 3) {
            const struct segment g = {.req_id = r, .q = 512, .logit_rows = 32, .keep = 256, .score_rows = 32,
                                      .phase = PHASE_REFRESH};
            step_desc_add(sd, &g);
        } else {
            seg(sd, r, i == 0 ? 512 : 32, i == 0 ? 0 : i == 4 ? 256 : 480, i == 0 ? 512 : 32);
        }
    }
}

/* How far a step's results (a) are from the one-GPU engine's (b): the final rows, the maxima and the
 * confidences (normwise relative), the rows whose argmax differs, and of those the ones beyond a
 * near tie (their two tokens' logits more than `tie` of the larger apart). */
struct tp_diff {
    double hidden, maxv, conf;
    int differ, not_ties;
};

static struct tp_diff diff(const struct model_cfg *m, uint64_t seed, const struct tp_out *a, const struct tp_out *b,
                           double tie)
{
    struct tp_diff d = {check_rel_err(a->hidden, b->hidden, (int64_t)a->R * m->hidden), check_rel_err(a->maxv, b->maxv, a->R),
                        check_rel_err(a->conf, b->conf, a->R), 0, 0};
    d.not_ties = not_ties(m, seed, a, b, tie, &d.differ);
    return d;
}

/* The check's steps in turn through engine e (its attention kernel `attention`), into out[]; then
 * their requests released, so that the next run starts from empty caches. */
static int run_steps(struct eng *e, int attention, const struct model_cfg *m, struct step_desc *sd,
                     struct tp_out *out)
{
    eng_set_attention(e, attention);
    for (int i = 0; i < CHECK_STEPS; i++) {
        check_step(sd, i);
        if (run_step(e, sd, m->hidden, &out[i]))
            return -1;
    }
    for (int r = 0; r < CHECK_REQS; r++)
        eng_release(e, r);
    eng_set_attention(e, 2);
    return 0;
}

/* The steps through the tensor-parallel engine and (rank 0) the one-GPU engine, d[i] how far apart
 * step i's results are, and f[i] the one-GPU engine's own spread under a change of rounding: the
 * steps with either attention kernel alone (mma.sync; wgmma where it runs: Refresh rows, not a Reuse
 * block's 32), each run of the steps from empty caches, so that a step over a cache reads the one
 * its own run filled (and kept). */
static int steps_diffs(struct eng *tp, struct eng *one, const struct model_cfg *m, uint64_t seed,
                       struct step_desc *sd, struct tp_diff *d, struct tp_diff *f, int *rows)
{
    struct tp_out o[4][CHECK_STEPS] = {{{0}}}; /* split; one GPU: its default, mma.sync, wgmma */
    int rc = -1;
    if (run_steps(tp, 2, m, sd, o[0]) ||
        (one && (run_steps(one, 2, m, sd, o[1]) || run_steps(one, 0, m, sd, o[2]) || run_steps(one, 1, m, sd, o[3]))))
        goto done;
    for (int i = 0; one && i < CHECK_STEPS; i++) {
        f[i] = diff(m, seed, &o[2][i], &o[3][i], TP_BOUND);
        d[i] = diff(m, seed, &o[0][i], &o[1][i], TP_BOUND);
        rows[i] = o[0][i].R == o[1][i].R ? o[0][i].R : -1;
    }
    rc = 0;
done:
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < CHECK_STEPS; i++)
            out_free(&o[k][i]);
    return rc;
}

/* One model's steps at depth 2 and at full depth, compared on rank 0: each within TP_BOUND or twice
 * the one-GPU engine's spread at that depth (its largest over the steps), whichever is larger, and
 * its rows whose argmax differs at most twice as many (as a share) as in that spread, with three
 * standard deviations of such a count and one more. */
static int check_model(const char *name, uint64_t seed, int size, int *failed, int *passed, FILE *out)
{
    static const char *const what[CHECK_STEPS] = {"refresh 4 x 512, every logit", "reuse 4 x 32 over 480",
                                                  "prefill 700 beside reuse 4 x 32",
                                                  "refresh 4 x 512 keeping 256 a K/V head",
                                                  "reuse 4 x 32 over those 256"};
    struct model_cfg m;
    struct ts_err err;
    if (model_resolve(name, &m, &err)) {
        fprintf(stderr, "check_engine --tp: %s\n", err.msg);
        return -1;
    }
    struct eng *tp = NULL, *one = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.attn_block = m.block_causal ? 32 : 0;
    sd.logit_chunk_rows = ENG_TP_TOOL_LOGIT_CHUNK;
    int rc = -1;
    int rank;
    if (tp_engine(&m, seed, size, &rank, &tp) || (rank == 0 && tp_engine(&m, seed, 0, &rank, &one)))
        goto done;
    if (one)
        fprintf(out, "%s, tensor parallel over %d GPUs against one GPU (%s):\n", m.name, size,
                eng_device_name(one));
    for (int depth = 2; depth >= 0; depth -= 2) {
        struct tp_diff d[CHECK_STEPS] = {{0}}, f[CHECK_STEPS] = {{0}}, fl = {0};
        int rows[CHECK_STEPS] = {0};
        double share = 0; /* the spread's largest share of rows whose argmax differs */
        eng_set_run_layers(tp, depth);
        if (one)
            eng_set_run_layers(one, depth);
        if (steps_diffs(tp, one, &m, seed, &sd, d, f, rows))
            goto done;
        for (int i = 0; i < CHECK_STEPS; i++) {
            fl.hidden = fmax(fl.hidden, f[i].hidden), fl.maxv = fmax(fl.maxv, f[i].maxv);
            fl.conf = fmax(fl.conf, f[i].conf);
            share = fmax(share, rows[i] > 0 ? (double)f[i].differ / rows[i] : 0);
        }
        if (!one)
            continue;
        const double bh = fmax(TP_BOUND, 2 * fl.hidden), bm = fmax(TP_BOUND, 2 * fl.maxv),
                     bc = fmax(TP_BOUND, 2 * fl.conf);
        fprintf(out, "  %s: one GPU's own spread (mma.sync against wgmma attention): hidden %.2e, max logit %.2e, "
                     "confidence %.2e, argmax differs in %.1f%% of the rows\n", depth ? "2 layers" : "all layers",
                fl.hidden, fl.maxv, fl.conf, 100 * share);
        for (int i = 0; i < CHECK_STEPS; i++) {
            const double expect = 2 * share * rows[i]; /* and three standard deviations of such a count */
            const int most = (int)floor(expect + 3 * sqrt(expect)) + 1;
            const bool ok = rows[i] > 0 && d[i].hidden <= bh && d[i].maxv <= bm && d[i].conf <= bc &&
                            d[i].differ <= most;
            fprintf(out, "    %-32s rows %5d: hidden %.2e (bound %.1e), max logit %.2e (%.1e), confidence %.2e "
                         "(%.1e); argmax differs in %d (at most %d; %d beyond a near tie of 2e-2)  %s\n",
                    what[i], rows[i], d[i].hidden, bh, d[i].maxv, bm, d[i].conf, bc, d[i].differ, most,
                    d[i].not_ties, ok ? "ok" : "FAIL");
            *(ok ? passed : failed) += 1;
        }
    }
    rc = 0;
done:
    eng_destroy(one);
    eng_destroy(tp);
    step_desc_free(&sd);
    return rc;
}

int check_engine_tp_run(int size, uint64_t seed, FILE *out)
{
    static const char *const models[] = {"llada-8b", "dream-7b", "llada2.0-mini"};
    int failed = 0, passed = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(models); i++)
        if (check_model(models[i], seed, size, &failed, &passed, out))
            return 1;
    if (passed + failed > 0) /* rank 0 */
        fprintf(out, "engine check --tp %d: %d passed, %d failed\n", size, passed, failed);
    return failed ? 1 : 0;
}
