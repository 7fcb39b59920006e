/*
 * ext_credit.h: dInfer's credit decoding on the engine, the entry points of its extension
 * (ext_credit.c, a row of eng_ext.h's table): what its next step does and what it leaves. Its room:
 * eng_opts.room[EXT_CREDIT].
 */
#ifndef TESSERA_EXT_CREDIT_H
#define TESSERA_EXT_CREDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "eng.h"

/* Credit decoding (its room: requests x block positions; eng_unmask.h): the next eng_step fuses its R logit rows
 * with their credits in the LM head (k_credit_fuse), row r with credit row state[r] (-1: none) under
 * flags[r] (CREDIT_MASKED, _DECAY, _CLEAR), by u's alpha, beta and gamma, so that its argmax and
 * confidence (eng_out, eng_unmask) are the fused logits'. The credits that step leaves (those of
 * rows it does not name as they were) become the current ones once it returns (a step run again
 * for its GEMMs' warm-up reads the same ones). */
int eng_credit_next(struct eng *e, const struct unmask_rule *u, const int32_t *state, const int32_t *flags, int32_t R,
                    struct ts_err *err);

#endif
