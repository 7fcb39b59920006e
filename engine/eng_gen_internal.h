/*
 * eng_gen_internal.h: what a generation's core (eng_gen.c) shares with the host halves of the
 * engine's extensions (gen_credit.c, gen_smooth.c, gen_drift.c, gen_rollout.c) and of Prophet.
 */
#ifndef TESSERA_ENG_GEN_INTERNAL_H
#define TESSERA_ENG_GEN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "eng_gen.h"

/* Calls f(ctx, request, logit row, response offset or -1) for each of sd's block logit rows in order
 * (the segments of the step gen_next_step built last, a driven policy's: FOCUS's rows are picked on
 * the GPU). */
void gen_each_block_row(const struct gen *g, const struct step_desc *sd,
                        void (*f)(void *, int32_t, int64_t, int32_t), void *ctx);
/* An option's value of comma-separated numbers, named names[0..most) in order, into v; *n: how many. */
int gen_spec_numbers(const char *opt, const char *spec, const char *form, const char *const *names, size_t most,
                     double *v, size_t *n, struct ts_err *err);

#endif
