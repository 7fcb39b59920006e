/*
 * gen_credit.c: dInfer's credit decoding in a generation, its host half (declared in eng_gen.h; the engine's entry
 * points in engine/ext/ext_credit.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_gen.h"
#include "eng_gen_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rows_ctx {
    const struct gen *g;
    int32_t *out, *flags;  /* each row's credit row and flags */
};

/* A position's credits live while its block runs: request i's credit rows i B .. i B + B - 1. */
static void row_credit(void *ctx, int32_t i, int64_t row, int32_t o)
{
    const struct rows_ctx *c = ctx;
    const struct gen_req *r = &c->g->r[i];
    const int32_t B = c->g->c.block, k = o - r->block * B;
    const bool in_block = o >= 0 && k >= 0 && k < B;
    c->out[row] = in_block ? i * B + k : -1;
    c->flags[row] = !in_block ? 0 : (r->decided[o] ? 0 : CREDIT_MASKED) |
                                    (r->block_steps > 0 ? CREDIT_DECAY : CREDIT_CLEAR);
}

void gen_credit_rows(const struct gen *g, const struct step_desc *sd, int32_t *state, int32_t *flags)
{
    struct rows_ctx c = {.g = g, .out = state, .flags = flags};
    gen_each_block_row(g, sd, row_credit, &c);
}
