/*
 * gen_rollout.c: d2Cache's attention rollout in a generation, its host half (declared in eng_gen.h; the engine's entry
 * points in engine/ext/ext_rollout.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_gen.h"
#include "eng_gen_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gen_rollout_parse(const char *spec, struct gen_rollout *out, struct ts_err *err)
{
    static const char *const names[] = {"P", "K"};
    struct gen_rollout ro = GEN_ROLLOUT_DEFAULTS;
    double v[2] = {ro.p, ro.k};
    size_t n;
    if (gen_spec_numbers("--d2-rollout", spec, "P[,K]", names, 2, v, &n, err))
        return -1;
    if (n < 1 || !(v[0] >= 0 && v[0] <= 1))
        return ts_fail(err, "--d2-rollout '%s': P, the nucleus's share of the other positions' importance, in 0..1",
                       spec);
    if (!(v[1] >= 0 && v[1] <= 1 << 20) || v[1] != floor(v[1]))
        return ts_fail(err, "--d2-rollout '%s': K %g must be a whole number of masked positions", spec, v[1]);
    ro.p = v[0], ro.k = (int32_t)v[1];
    *out = ro;
    return 0;
}

static const float *desc_key; /* (qsort's comparison reads the keys of the indices it orders here) */

/* The larger key first, then the lower index. */
static int by_key_desc(const void *a, const void *b)
{
    const int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    const float x = desc_key[i], y = desc_key[j];
    return x > y ? -1 : x < y ? 1 : (i > j) - (i < j);
}

/* Indices order[0..m) by key, the largest first (ties: the lower index). */
static void sort_desc(int32_t *order, int32_t m, const float *key)
{
    desc_key = key;
    qsort(order, (size_t)m, sizeof *order, by_key_desc);
}

/* The position of row k of r's segment in the step built last, and whether it is decided (the prompt's
 * always). */
static int32_t row_pos(const struct gen_req *r, int32_t k) { return r->nrow ? r->rowpos[k] : k; }
static bool pos_decided(const struct gen_req *r, int32_t pos) { return pos < r->P || r->decided[pos - r->P]; }

int32_t gen_rollout_nucleus(const float *score, const uint8_t *eligible, int32_t n, double p, int32_t *order)
{
    int32_t m = 0;
    double total = 1e-9;
    for (int32_t k = 0; k < n; k++)
        if (eligible[k]) {
            order[m++] = k;
            total += score[k];
        }
    sort_desc(order, m, score);
    int32_t kept = 0;
    for (double cum = 0; kept < m && (cum += score[order[kept]] / total) <= p;)
        kept++;
    return m > 0 ? TS_MAX(kept, 1) : 0;
}

int32_t gen_rollout_reqs(struct gen *g, const struct step_desc *sd, struct eng_rollout_req *out, uint8_t *before,
                         int32_t stride, struct ts_err *err)
{
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *seg = &sd->segs[s];
        const int32_t i = g->seg_req[s];
        const struct gen_req *r = &g->r[i];
        const int32_t N = r->P + g->c.gen_len;
        uint8_t *el = before + (int64_t)s * stride;
        bool whole = seg->q == N && seg->kv == 0 && seg->logit_rows == N && (r->nrow == N || r->nrow == 0);
        for (int32_t k = 0; whole && k < N; k++) {
            const int32_t pos = row_pos(r, k); /* (nrow 0: where the plan puts them) */
            whole = pos >= 0 && pos < N;
            el[k] = whole && pos_decided(r, pos);
        }
        if (!whole)
            return ts_fail(err, "--d2-rollout: request %d's step runs %d rows over %d cached, not each of its %d "
                                "positions (--policy vanilla)", i, seg->q, seg->kv, N);
        out[s] = (struct eng_rollout_req){.seg = s, .N = N};
    }
    return sd->num_segs;
}

void gen_rollout_apply(struct gen *g, const struct step_desc *sd, const struct eng_rollout_req *q, int32_t n,
                       const float *importance, const float *conf, uint8_t *before, int32_t stride, int32_t *order)
{
    int64_t row0 = 0; /* the segment's first logit row: a whole-sequence step's rows each have theirs */
    for (int32_t s = 0; s < n; row0 += sd->segs[q[s].seg].logit_rows, s++) {
        struct gen_req *r = &g->r[g->seg_req[q[s].seg]];
        uint8_t *el = before + (int64_t)s * stride;
        int32_t masked = 0;
        for (int32_t k = 0; k < q[s].N; k++) { /* decoded by this step: not a candidate; still masked: listed */
            const bool now = pos_decided(r, row_pos(r, k));
            el[k] = now && el[k];
            if (!now)
                order[masked++] = k;
        }
        sort_desc(order, masked, conf + row0);
        for (int32_t j = 0; j < masked; j++) /* the k most certain run anyway, the rest are candidates */
            el[order[j]] = j >= g->c.rollout.k;
        int32_t m = 0;
        for (int32_t k = 0; k < q[s].N; k++)
            m += el[k];
        if (m == 0)
            continue;
        const int32_t kept = gen_rollout_nucleus(importance + (int64_t)s * stride, el, q[s].N, g->c.rollout.p, order);
        r->d2_steps++, g->d2_steps++;
        r->d2_nucleus += kept, g->d2_nucleus += kept;
        r->d2_eligible += m, g->d2_eligible += m;
        r->d2_share += (double)kept / m, g->d2_share += (double)kept / m;
    }
}
