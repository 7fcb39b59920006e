/*
 * ext_drift.h: Elastic-Cache's drift test on the engine, the entry points of its extension
 * (ext_drift.c, a row of eng_ext.h's table): what its next step does and what it leaves. Its room:
 * eng_opts.room[EXT_DRIFT].
 */
#ifndef TESSERA_EXT_DRIFT_H
#define TESSERA_EXT_DRIFT_H

#include <stdbool.h>
#include <stdint.h>

#include "eng.h"

/* Elastic-Cache's drift test (kernels.h k_drift), measured in every layer of the next step: each
 * entry names a segment of the step that runs all N positions of request req (<
 * its room's requests; N <= its positions), position p at the segment's row rowmap[p], nwin
 * window positions then ntrack tracked ones (sel), which positions may be tracked (eligible [N])
 * and which rows Elastic-Cache's step computes (queried [N]: all at a request's first), with gamma
 * its drift bound. The engine keeps each request's queries and keys as Elastic-Cache's cache would
 * hold them (a step run again for its GEMMs' warm-up reads the same). eng_drift_out after the step:
 * entry i's tracked token and similarity at layer L, track[i * layers + L] and sim[...] (NaN
 * without tracked tokens). */
struct eng_drift_req {
    int32_t seg, req, N, nwin, ntrack;
    const int32_t *sel, *rowmap;
    const uint8_t *eligible, *queried;
    float gamma;
};
int eng_drift_next(struct eng *e, const struct eng_drift_req *r, int32_t n, struct ts_err *err);
int eng_drift_out(struct eng *e, int32_t *track, float *sim, struct ts_err *err);

#endif
