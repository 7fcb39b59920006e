/*
 * ext_sparsed.h: SparseD's patterns on the engine, the entry points of its extension
 * (ext_sparsed.c, a row of eng_ext.h's table): what its next step does and what it leaves. Its
 * room: eng_opts.room[EXT_SPARSED].
 */
#ifndef TESSERA_EXT_SPARSED_H
#define TESSERA_EXT_SPARSED_H

#include <stdbool.h>
#include <stdint.h>

#include "eng.h"

/* SparseD's patterns (kernels.h k_sparsed_pattern). Each entry names a segment of the next step
 * that runs every position of its request (N rows over no cached keys; N <= its room's positions),
 * the request's id and its prompt's length (pass 2 scores the key blocks from min(ceil(prompt /
 * block), the last) on). build: the step's attention is dense and each layer builds the request's
 * pattern from its own queries and keys, in a slot of the room it holds from then until eng_release
 * (at most the room's requests hold one at once); else the segment attends by the request's pattern,
 * built over as many positions. A step run again for its GEMMs' warm-up does the same. A step the
 * harness names no entries for takes one for each segment with a pattern (attn_keys > 0; building
 * where segment_builds_pattern), its prompt from eng_tokens.prompt: a harness that sets that need
 * not call eng_sparsed_next. eng_sparsed_pattern: request req's kept blocks, [layers][H][nb][nb] 0 or
 * 1 into keep (nb = ceil(N / block), into *nb), -1 where none is built. */
struct eng_sparsed_req {
    int32_t seg, req, prompt;
    bool build;
};
int eng_sparsed_next(struct eng *e, const struct eng_sparsed_req *r, int32_t n, struct ts_err *err);
int eng_sparsed_pattern(struct eng *e, int32_t req, uint8_t *keep, int32_t *nb, struct ts_err *err);

#endif
