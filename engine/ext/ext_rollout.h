/*
 * ext_rollout.h: d2Cache's attention rollout on the engine, the entry points of its extension
 * (ext_rollout.c, a row of eng_ext.h's table): what its next step does and what it leaves. Its
 * room: eng_opts.room[EXT_ROLLOUT].
 */
#ifndef TESSERA_EXT_ROLLOUT_H
#define TESSERA_EXT_ROLLOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "eng.h"

/* d2Cache's attention rollout (kernels.h k_rollout_layer), measured over every layer of the next step:
 * each of the n entries (n <= its room's requests) names a segment of the step that runs N rows
 * (N <= its positions) over no cached keys, every position of its request. eng_rollout_out after
 * the step: entry i's importance of its segment's row k, importance[i * positions + k]. */
struct eng_rollout_req {
    int32_t seg, N;
};
int eng_rollout_next(struct eng *e, const struct eng_rollout_req *r, int32_t n, struct ts_err *err);
int eng_rollout_out(struct eng *e, float *importance, struct ts_err *err);

#endif
