/*
 * ext_smooth.h: dInfer's IterSmooth on the engine, the entry points of its extension (ext_smooth.c,
 * a row of eng_ext.h's table): what its next step does and what it leaves. Its room:
 * eng_opts.room[EXT_SMOOTH].
 */
#ifndef TESSERA_EXT_SMOOTH_H
#define TESSERA_EXT_SMOOTH_H

#include <stdbool.h>
#include <stdint.h>

#include "eng.h"

/* dInfer's IterSmooth. A step with sd->iter_smooth turns each LM-head chunk's logits into
 * probabilities and multiplies them by the embedding matrix (the LM head's GEMM transposed); after
 * eng_smooth_next the next such step keeps logit row r's product as soft-embedding row slot[r] (-1:
 * none; below its room's requests x positions), as the current ones once it returns (a step run again for its
 * GEMMs' warm-up reads the same). A step embeds, at each row that eng_tokens.soft names, the token's
 * embedding plus the weight times that current soft row (plain steps: no per-layer rows, no
 * eviction; one GPU). */
int eng_smooth_next(struct eng *e, const int32_t *slot, int32_t R, struct ts_err *err);
/* IterSmooth's soft rows first .. first + n - 1 (eng_smooth_next), widened, into dst [n, hidden]. */
int eng_soft_rows(struct eng *e, float *dst, int32_t first, int32_t n, struct ts_err *err);

#endif
