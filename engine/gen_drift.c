/*
 * gen_drift.c: Elastic-Cache's drift test in a generation, its host half (declared in eng_gen.h; the engine's entry
 * points in engine/ext/ext_drift.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_gen.h"
#include "eng_gen_internal.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gen_elastic_parse(const char *spec, struct gen_elastic *out, struct ts_err *err)
{
    static const char *const names[] = {"GAMMA", "WINDOW"};
    struct gen_elastic ec = GEN_ELASTIC_DEFAULTS;
    double v[2] = {ec.gamma, ec.window};
    size_t n;
    if (gen_spec_numbers("--elastic-drift", spec, "GAMMA[,WINDOW]", names, 2, v, &n, err))
        return -1;
    if (n < 1)
        return ts_fail(err, "--elastic-drift '': the drift bound GAMMA, optionally the window (GAMMA[,WINDOW])");
    if (!(v[0] >= 0 && v[0] <= 1))
        return ts_fail(err, "--elastic-drift '%s': GAMMA %g must be a cosine similarity in 0..1", spec, v[0]);
    if (!(v[1] >= 1 && v[1] <= GEN_ELASTIC_MAX_WINDOW) || v[1] != floor(v[1]))
        return ts_fail(err, "--elastic-drift '%s': WINDOW %g must be a whole number of positions in 1..%d", spec, v[1],
                       GEN_ELASTIC_MAX_WINDOW);
    ec.gamma = v[0], ec.window = (int32_t)v[1];
    *out = ec;
    return 0;
}

int32_t gen_elastic_reqs(struct gen *g, const struct step_desc *sd, struct eng_drift_req *out, int32_t *sel,
                         int32_t *rowmap, uint8_t *eligible, struct ts_err *err)
{
    const int32_t G = g->c.gen_len, W = g->c.elastic.window;
    int64_t at = 0; /* rowmap's and eligible's offset: each entry's N after the one before */
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *seg = &sd->segs[s];
        const int32_t i = g->seg_req[s];
        struct gen_req *r = &g->r[i];
        const int32_t N = r->P + G;
        int32_t *map = rowmap + at, placed = 0;
        for (int32_t p = 0; p < N; p++)
            map[p] = -1;
        for (int32_t k = 0; seg->q == N && seg->kv == 0 && k < r->nrow; k++)
            if (r->rowpos[k] >= 0 && r->rowpos[k] < N && map[r->rowpos[k]] < 0)
                map[r->rowpos[k]] = k, placed++;
        if (placed != N)
            return ts_fail(err, "--elastic-drift: request %d's step runs %d rows over %d cached, not each of its %d "
                                "positions (--policy vanilla)", i, seg->q, seg->kv, N);
        int32_t *mine = sel + (int64_t)s * K_DRIFT_MAX_ROWS, nwin = 0;
        for (int32_t o = 0; o < G && nwin < W; o++)
            if (!r->decided[o])
                mine[nwin++] = r->P + o;
        const int32_t ntrack = r->ec_measured ? TS_MIN(r->ec_ntrack, K_DRIFT_MAX_ROWS - nwin) : 0;
        memcpy(mine + nwin, r->ec_track, sizeof *mine * (size_t)ntrack);
        uint8_t *el = eligible + 2 * at, *qu = el + N; /* eligible: decided; queried: the rows Elastic's step runs */
        memset(el, 1, (size_t)r->P);
        memset(qu, !r->ec_measured, (size_t)N);
        for (int32_t o = 0; o < G; o++) {
            el[r->P + o] = r->decided[o];
            qu[r->P + o] |= r->decided[o] && !r->ec_seen[o]; /* decoded by the step before */
            r->ec_seen[o] = r->decided[o];
        }
        for (int32_t k = 0; k < nwin + ntrack; k++)
            qu[mine[k]] = 1;
        out[s] = (struct eng_drift_req){.seg = s, .req = i, .N = N, .nwin = nwin, .ntrack = ntrack, .sel = mine,
                                        .rowmap = map, .eligible = el, .queried = qu,
                                        .gamma = (float)g->c.elastic.gamma};
        at += N;
    }
    return sd->num_segs;
}

void gen_elastic_apply(struct gen *g, const struct eng_drift_req *q, int32_t n, const int32_t *track,
                       const float *sim)
{
    const int32_t layers = g->c.elastic.layers;
    for (int32_t i = 0; i < n; i++) {
        struct gen_req *r = &g->r[q[i].req];
        const int32_t *t = track + (int64_t)i * layers;
        const float *sm = sim + (int64_t)i * layers;
        if (q[i].ntrack > 0) {
            r->ec_tested++, g->ec_tested++, g->ec_tracked += q[i].ntrack, r->ec_tracked += q[i].ntrack;
            int32_t l = 0;
            while (l < layers && !(sm[l] < g->c.elastic.gamma)) /* (NaN: no test) */
                l++;
            if (l + 1 < layers)
                r->ec_refreshes++, g->ec_refreshes++, g->ec_from[l + 1]++;
        }
        r->ec_ntrack = 0; /* the distinct positions the layers track, in layer order */
        for (int32_t l = 0; l < layers; l++) {
            bool seen = t[l] < 0;
            for (int32_t k = 0; k < r->ec_ntrack && !seen; k++)
                seen = r->ec_track[k] == t[l];
            if (!seen)
                r->ec_track[r->ec_ntrack++] = t[l];
        }
        r->ec_measured = true;
    }
}
