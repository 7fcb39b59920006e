/*
 * gen_smooth.c: dInfer's IterSmooth in a generation, its host half (declared in eng_gen.h; the engine's entry
 * points in engine/ext/ext_smooth.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_gen.h"
#include "eng_gen_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rows_ctx {
    const struct gen *g;
    int32_t *out;          /* each row's soft row */
    const int32_t *commit; /* the step's commits */
};

double gen_smooth_weight(const struct gen_smooth *s, int32_t n) { return fmin(s->init + s->growth * n, s->cont); }

float gen_smooth_tau(const struct gen_smooth *s, int32_t n, float tau) { return fmaxf((float)(1.0 - s->decay * n), tau); }


int gen_smooth_parse(const char *spec, struct gen_smooth *out, struct ts_err *err)
{
    static const char *const names[] = {"CONT", "INIT", "GROWTH", "DECAY"};
    struct gen_smooth s = GEN_SMOOTH_DEFAULTS;
    double v[4] = {s.cont, s.init, s.growth, s.decay};
    size_t n;
    if (gen_spec_numbers("--iter-smooth", spec, "CONT[,INIT[,GROWTH[,DECAY]]]", names, 4, v, &n, err))
        return -1;
    for (size_t k = 0; k < n; k++)
        if (!(v[k] >= 0 && v[k] <= 1e3))
            return ts_fail(err, "--iter-smooth '%s': %s %g must be a number in 0..1000", spec, names[k], v[k]);
    s.cont = v[0], s.init = v[1], s.growth = v[2], s.decay = v[3];
    *out = s;
    return 0;
}

int32_t gen_soft_rows(const struct gen *g) { return g->c.smooth.on ? g->c.requests * g->c.gen_len : 0; }

static void row_slot(void *ctx, int32_t i, int64_t row, int32_t o)
{
    const struct rows_ctx *c = ctx;
    c->out[row] = o < 0 ? -1 : i * c->g->c.gen_len + o;
}

void gen_smooth_rows(const struct gen *g, const struct step_desc *sd, int32_t *slot)
{
    struct rows_ctx c = {.g = g, .out = slot};
    gen_each_block_row(g, sd, row_slot, &c);
}

void gen_smooth_taus(const struct gen *g, const struct step_desc *sd, float tau, float *taus)
{
    int32_t n = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct gen_req *r = &g->r[g->seg_req[s]];
        if (r->last == GEN_SEG_BLOCK)
            taus[n++] = gen_smooth_tau(&g->c.smooth, r->steps, tau);
    }
}

static void row_keep(void *ctx, int32_t i, int64_t row, int32_t o)
{
    const struct rows_ctx *c = ctx;
    struct gen_req *r = &c->g->r[i];
    if (o >= 0)
        r->soft_w[o] = r->decided[o] || c->commit[row] >= 0 ? 0.0f
                                                           : (float)gen_smooth_weight(&c->g->c.smooth, r->steps);
}

void gen_smooth_keep(struct gen *g, const struct step_desc *sd, const int32_t *commit)
{
    struct rows_ctx c = {.g = g, .commit = commit};
    gen_each_block_row(g, sd, row_keep, &c);
}
