/* step_desc.c: building and summing step descriptions. */
#include "step_desc.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const phase_names[PHASE_COUNT] = {"FULL", "REFRESH", "REUSE", "PREFILL", "BLOCK"};

const char *seg_phase_name(enum seg_phase p)
{
    return (unsigned)p < PHASE_COUNT ? phase_names[p] : "?";
}

enum seg_phase seg_phase_from_name(const char *name)
{
    for (int p = 0; name && p < PHASE_COUNT; p++)
        if (strcmp(phase_names[p], name) == 0)
            return (enum seg_phase)p;
    return PHASE_REUSE;
}

#define KNOB(f) {#f, offsetof(struct step_desc, f), _Generic(((struct step_desc *)0)->f, bool: true, int32_t: false)}
const struct step_knob step_knobs[STEP_KNOBS] = {
    KNOB(logit_chunk_rows), KNOB(ffn_chunks),  KNOB(mask_only),     KNOB(attn_block),
    KNOB(select_heads),     KNOB(select_kernel), KNOB(front_layers), KNOB(decode_credit),
    KNOB(iter_smooth),      KNOB(evict),       KNOB(cache_outputs), KNOB(host_link_mbs),
    KNOB(host_scan_mbs),    KNOB(host_overlap), KNOB(cache_inputs),
};

void step_knobs_get(const struct step_desc *sd, int64_t v[STEP_KNOBS])
{
    for (int i = 0; i < STEP_KNOBS; i++) {
        const char *at = (const char *)sd + step_knobs[i].offset;
        v[i] = step_knobs[i].is_bool ? *(const bool *)at : *(const int32_t *)at;
    }
}

void step_knobs_set(struct step_desc *sd, const int64_t v[STEP_KNOBS])
{
    for (int i = 0; i < STEP_KNOBS; i++) {
        char *at = (char *)sd + step_knobs[i].offset;
        if (step_knobs[i].is_bool)
            *(bool *)at = v[i] != 0;
        else
            *(int32_t *)at = (int32_t)v[i];
    }
}

void step_desc_init(struct step_desc *sd)
{
    memset(sd, 0, sizeof *sd);
    sd->ffn_chunks = 1;
    sd->select_kernel = 1;
}

void step_desc_free(struct step_desc *sd)
{
    if (!sd)
        return;
    free(sd->segs);
    sd->segs = NULL;
    sd->num_segs = sd->cap_segs = 0;
}

void step_desc_clear(struct step_desc *sd)
{
    sd->num_segs = 0;
    memset(&sd->tot, 0, sizeof sd->tot);
}

int64_t attn_row_keys(int64_t q, int64_t kv, int32_t bs, int64_t row)
{
    return bs > 0 ? kv + TS_MIN(q, (row / bs + 1) * bs) : q + kv;
}

double attn_pairs(int64_t q, int64_t kv, int32_t bs)
{
    if (bs <= 0)
        return (double)q * (double)(q + kv);
    /* nb whole blocks, block b's bs rows seeing (b + 1) bs of the rows; the rest seeing all q */
    const double nb = (double)(q / bs), rest = (double)(q % bs);
    return (double)q * (double)kv + (double)bs * bs * nb * (nb + 1) / 2 + rest * (double)q;
}

double segment_attn_pairs(const struct segment *s, int32_t bs)
{
    return s->attn_keys > 0 ? (double)s->q * s->attn_keys : attn_pairs(s->q, s->kv, bs);
}

static void totals_add(struct step_totals *t, const struct segment *s, int32_t attn_block)
{
    t->num_segs++;
    t->graph_rows += s->padding == PAD_GRAPH;
    t->q_tokens += s->q;
    t->kv_tokens += s->kv;
    t->kv_write_tokens += s->kv_write;
    t->logit_rows += s->logit_rows;
    t->decoded += s->decoded;
    if (s->q > t->max_q)
        t->max_q = s->q;
    const double pairs = segment_attn_pairs(s, attn_block);
    t->attn_qk_pairs += pairs;
    t->attn_kv_read += (int64_t)s->q + s->kv;
    t->by_phase[s->phase]++;
    int32_t fq, fkv, fw;
    segment_layer_shape(s, true, &fq, &fkv, &fw);
    t->front.q_tokens += fq;
    t->front.kv_write_tokens += fw;
    t->front.max_q = TS_MAX(t->front.max_q, (int64_t)fq);
    t->front.attn_qk_pairs += s->q_front > 0 ? attn_pairs(fq, fkv, attn_block) : pairs; /* (as q unless split) */
    t->front.attn_kv_read += (int64_t)fq + fkv;
    t->split_segs += s->q_front > 0;
    t->probe_tokens += s->probe;
    t->carry_tokens += s->carry;
    t->rows += segment_rows(s);
    t->host_kv_tokens += s->host_kv;
    t->host_scan_tokens += s->host_scan;
    if (s->keep > 0) {
        t->sel_segs++;
        t->sel_cand += s->q - s->score_rows;
        t->sel_keep += s->keep;
        t->sel_rows += s->score_rows;
        t->sel_max_cand = TS_MAX(t->sel_max_cand, (int64_t)s->q - s->score_rows);
        t->sel_max_keep = TS_MAX(t->sel_max_keep, (int64_t)s->keep);
    }
}

const char *segment_check(const struct segment *g)
{
    /* the common segment, none of the rarer fields set: its counts, its logit rows and its phase */
    if ((g->keep | g->q_front | g->kv_front | g->kv_write_front | g->probe | g->picked | g->carry | g->attn_keys |
         g->host_kv) == 0 && (g->q | g->kv | g->kv_write | g->decoded | g->score_rows | g->host_scan) >= 0 &&
        g->logit_rows >= 0 && g->logit_rows <= g->q && g->phase < PHASE_COUNT)
        return NULL;
    /* (one test: an OR of the counts is negative where any is) */
    if ((g->q | g->kv | g->kv_write | g->decoded | g->keep | g->score_rows | g->q_front | g->kv_front |
         g->kv_write_front | g->probe | g->carry | g->picked | g->attn_keys | g->host_kv | g->host_scan) < 0)
        return "a negative count (q, kv, kv_write, decoded, keep, score_rows, q_front, kv_front, "
               "kv_write_front, probe, carry, picked, attn_keys, host_kv or host_scan)";
    if (g->host_kv > g->kv)
        return "host_kv beyond kv";
    if (g->attn_keys > 2 * ((int64_t)g->q + g->kv))
        return "attn_keys beyond twice q + kv";
    if (g->attn_keys > 0 && (g->q_front > 0 || g->keep > 0))
        return "attn_keys with a front shape or a selection";
    if (g->logit_rows < 0 || (int64_t)g->logit_rows > (int64_t)g->q + g->carry)
        return "logit_rows outside 0..q + carry";
    if (g->q_front == 0 && (g->kv_front != 0 || g->kv_write_front != 0))
        return "kv_front or kv_write_front without q_front";
    if (g->kv_write_front > (int64_t)g->q_front)
        return "kv_write_front beyond q_front";
    if (g->probe > TS_MAX((int64_t)g->q + g->carry, (int64_t)g->q_front))
        return "probe beyond q + carry and q_front";
    if (g->probe > 0 && (g->picked < 1 || g->picked > g->q || g->picked > g->probe))
        return "picked outside 1..min(q, probe) with probe > 0";
    if (g->probe == 0 && g->picked != 0)
        return "picked without probe";
    if (g->probe > 0 && (int64_t)g->q - g->picked > (int64_t)segment_rows(g) - g->probe)
        return "more always-computed rows (q - picked) than rows outside the probe";
    if (g->keep > 0 && (g->q_front > 0 || g->probe > 0 || g->carry > 0))
        return "keep > 0 with a front shape, probe or carry";
    if (g->phase >= PHASE_COUNT)
        return "an unknown phase";
    if (g->keep > 0 && (g->kv != 0 || g->score_rows <= 0 || g->keep > g->q - g->score_rows))
        return "keep > 0 with kv != 0, or without score_rows, or beyond q - score_rows";
    return NULL;
}

void step_desc_add(struct step_desc *sd, const struct segment *seg)
{
    const char *bad = segment_check(seg);
    TS_ASSERTF(!bad, "segment of request %d: %s", seg->req_id, bad ? bad : "");
    if (sd->num_segs == sd->cap_segs) {
        size_t cap = (size_t)sd->cap_segs;
        ts_grow((void **)&sd->segs, &cap, (size_t)sd->num_segs + 1, sizeof *sd->segs);
        sd->cap_segs = (int32_t)cap;
    }
    sd->segs[sd->num_segs++] = *seg;
    totals_add(&sd->tot, seg, sd->attn_block);
}

void step_desc_add_fc(struct step_desc *sd, int32_t req, int32_t q, int32_t rows, int32_t probe, int32_t logit_rows)
{
    struct segment g = {.req_id = req, .q = q, .kv = rows - q, .kv_write = q, .carry = rows - q, .probe = probe,
                        .picked = probe > 0 ? q : 0, .logit_rows = logit_rows,
                        .phase = (uint8_t)(probe > 0 ? PHASE_REUSE : PHASE_REFRESH)};
    if (q < rows)
        g.q_front = g.kv_write_front = rows;
    step_desc_add(sd, &g);
}

void step_totals_compute(const struct step_desc *sd, struct step_totals *out)
{
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < sd->num_segs; i++)
        totals_add(out, &sd->segs[i], sd->attn_block);
}

int64_t step_num_logit_chunks(const struct step_desc *sd)
{
    int64_t r = sd->tot.logit_rows;
    if (r == 0)
        return 0;
    if (sd->logit_chunk_rows <= 0)
        return 1;
    return (r + sd->logit_chunk_rows - 1) / sd->logit_chunk_rows;
}

int32_t step_front_layers(const struct step_desc *sd, int32_t num_layers)
{
    return sd->tot.split_segs > 0 ? TS_MIN(sd->front_layers, num_layers) : 0;
}

int32_t step_shape_q(const struct step_shape *p, int32_t s)
{
    return p->q_long > 0 && s == p->segs - 1 ? p->q_long : p->q;
}

int32_t step_shape_kv(const struct step_shape *p, int32_t s)
{
    return (p->kv_long > 0 || p->q_long > 0) && s == p->segs - 1 ? p->kv_long : p->kv;
}

int64_t step_shape_rows(const struct step_shape *p)
{
    return (int64_t)p->segs * p->q + (p->q_long > 0 ? p->q_long - p->q : 0);
}

void step_shape_desc(const struct step_shape *p, int32_t first, struct step_desc *sd)
{
    step_desc_clear(sd);
    sd->front_layers = p->fc_rows > 0;
    sd->cache_outputs = p->fc_rows > 0;
    for (int32_t i = 0; i < p->segs && p->fc_rows > 0; i++)
        step_desc_add_fc(sd, first + i, p->q, p->fc_rows, p->probe, p->logit_rows);
    for (int32_t i = 0; i < p->segs && p->fc_rows == 0; i++) {
        const int32_t kv = step_shape_kv(p, i);
        struct segment seg = {.req_id = first + i, .q = step_shape_q(p, i), .kv = kv, .logit_rows = p->logit_rows,
                              .phase = kv > 0 ? PHASE_REUSE : PHASE_FULL};
        step_desc_add(sd, &seg);
    }
}
