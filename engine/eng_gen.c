/* eng_gen.c: a generation's host side (eng_gen.h). */
#define _POSIX_C_SOURCE 200809L
#include "eng_gen.h"
#include "eng_gen_internal.h"
#include "kernels.h"
#include "whole.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- prompts ------------------------------------------------------------------------------ */

void gen_prompts_free(struct gen_prompts *p)
{
    for (int32_t i = 0; p->ids && i < p->n; i++)
        free(p->ids[i]);
    free(p->ids);
    free(p->len);
    memset(p, 0, sizeof *p);
}

/* One line's array of ids into p (a new prompt). */
static int prompt_line(const char *path, int64_t line, const char *text, int32_t vocab, struct gen_prompts *p,
                       struct ts_err *err)
{
    json_error_t jerr;
    json_t *a = json_loads(text, JSON_DECODE_ANY, &jerr);
    int rc = -1;
    if (!a) {
        ts_fail(err, "%s:%lld: %s", path, (long long)line, jerr.text);
        goto done;
    }
    const size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n == 0 || n > (1u << 24)) {
        ts_fail(err, "%s:%lld: a prompt is a non-empty JSON array of token ids", path, (long long)line);
        goto done;
    }
    int32_t *ids = xmalloc(sizeof *ids * n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= vocab) {
            ts_fail(err, "%s:%lld: token %zu must be an integer id in 0..%d (the model's vocabulary)", path,
                    (long long)line, i, vocab - 1);
            free(ids);
            goto done;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    p->ids = xrealloc(p->ids, sizeof *p->ids * (size_t)(p->n + 1));
    p->len = xrealloc(p->len, sizeof *p->len * (size_t)(p->n + 1));
    p->ids[p->n] = ids;
    p->len[p->n++] = (int32_t)n;
    rc = 0;
done:
    json_decref(a);
    return rc;
}

int gen_prompts_parse(const char *path, const char *text, size_t len, int32_t vocab, int32_t max,
                      struct gen_prompts *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    int64_t no = 0;
    int rc = 0;
    char *line = NULL;
    size_t cap = 0;
    for (size_t at = 0; rc == 0 && at < len && (max <= 0 || out->n < max);) {
        const char *nl = memchr(text + at, '\n', len - at);
        const size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        no++;
        if (n + 1 > cap)
            line = xrealloc(line, cap = n + 1);
        memcpy(line, text + at, n);
        line[n] = '\0';
        at += n + 1;
        if (strlen(line) != n) /* a NUL inside the line */
            rc = ts_fail(err, "%s:%lld: a NUL byte inside the line", path, (long long)no);
        else if (strspn(line, " \t\r") != n)
            rc = prompt_line(path, no, line, vocab, out, err);
    }
    free(line);
    if (rc == 0 && out->n == 0)
        rc = ts_fail(err, "%s: no prompts (a JSON array of token ids a line)", path);
    if (rc)
        gen_prompts_free(out);
    return rc;
}

int gen_prompts_load(const char *path, int32_t vocab, int32_t max, struct gen_prompts *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    char *text = NULL;
    if (ts_read_file(path, &text, &len, err))
        return -1;
    const int rc = gen_prompts_parse(path, text, len, vocab, max, out, err);
    free(text);
    return rc;
}

/* --- the requests ------------------------------------------------------------------------- */

int gen_init(struct gen *g, const struct gen_cfg *c, const struct gen_prompts *prompts, struct ts_err *err)
{
    memset(g, 0, sizeof *g);
    if (c->block < 1 || c->block > UNMASK_MAX_ROWS)
        return ts_fail(err, "--block %d: must be in 1..%d", c->block, UNMASK_MAX_ROWS);
    if (c->gen_len < c->block || c->gen_len % c->block)
        return ts_fail(err, "--gen-len %d: must be a positive multiple of --block %d", c->gen_len, c->block);
    if (!c->policy == !c->focus)
        return ts_fail(err, "a generation runs one caching policy: a driven one (policy_drive.h) or FOCUS");
    const bool whole = gen_whole(c);
    if (whole && c->attn_block > 0)
        return ts_fail(err, "policy %s runs whole-sequence steps beside cached positions, which block-causal attention "
                            "does not allow: use the block policy", c->policy->name);
    if (c->focus && (c->block > GEN_FOCUS_MAX_BLOCK || !(c->focus_alpha >= 1)))
        return ts_fail(err, "FOCUS evicts over the prefix cache, from blocks of at most %d positions (the importance "
                            "kernel's candidates), with a budget expansion of at least 1", GEN_FOCUS_MAX_BLOCK);
    const struct gen_smooth *sm = &c->smooth;
    if (sm->on && c->focus)
        return ts_fail(err, "IterSmooth runs over a driven policy, not FOCUS (FOCUS picks its logit rows on the GPU, after "
                            "a step's soft rows must be named)");
    if (sm->on && !(sm->cont >= 0 && sm->init >= 0 && sm->growth >= 0 && sm->decay >= 0 && sm->cont <= 1e3))
        return ts_fail(err, "--iter-smooth %g,%g,%g,%g: the weights (cont, init, growth) and the threshold decay "
                            "must be numbers of at least 0", sm->cont, sm->init, sm->growth, sm->decay);
    const struct gen_prophet *pr = &c->prophet;
    if (pr->on && !gen_every_position(c))
        return ts_fail(err, "--prophet reads every position's logits each step, as Prophet's own loop does: a policy "
                            "whose steps run every position (tessera list policies: 'every position'), without "
                            "--block-logits");
    if (pr->on && (pr->answer < 0 || pr->answer >= c->gen_len || pr->len < 1))
        return ts_fail(err, "--prophet %d: the answer's offset lies outside the response's %d positions", pr->answer,
                       c->gen_len);
    const struct gen_elastic *ec = &c->elastic;
    if (ec->on && !gen_every_position(c))
        return ts_fail(err, "--elastic-drift reads every position's attention each step: a policy whose steps run every "
                            "position (tessera list policies: 'every position'), without --block-logits");
    if (ec->on && (ec->layers < 1 || ec->window < 1 || ec->window > GEN_ELASTIC_MAX_WINDOW ||
                   !(ec->gamma >= 0 && ec->gamma <= 1)))
        return ts_fail(err, "--elastic-drift: a bound of %g over %d window positions and %d layers (a bound in 0..1, "
                            "1 to %d positions)", ec->gamma, ec->window, ec->layers, GEN_ELASTIC_MAX_WINDOW);
    const struct gen_rollout *ro = &c->rollout;
    if (ro->on && !gen_every_position(c))
        return ts_fail(err, "--d2-rollout reads every position's attention each step: a policy whose steps run every "
                            "position (tessera list policies: 'every position'), without --block-logits");
    if (ro->on && !(ro->p >= 0 && ro->p <= 1))
        return ts_fail(err, "--d2-rollout %g: the nucleus's share must be in 0..1", ro->p);
    if (c->mask_id < 0 || c->mask_id >= c->vocab)
        return ts_fail(err, "--mask-id %d: must be a token of the model's vocabulary (0..%d)", c->mask_id, c->vocab - 1);
    const int32_t n = prompts ? TS_MIN(prompts->n, c->requests > 0 ? c->requests : prompts->n) : c->requests;
    if (n < 1 || (!prompts && c->prompt_len < 1))
        return ts_fail(err, "a generation needs at least one request and a prompt of at least one token");
    g->c = *c;
    g->c.requests = n;
    g->r = xcalloc((size_t)n, sizeof *g->r);
    g->seg_req = xcalloc((size_t)n, sizeof *g->seg_req);
    g->per_step = xcalloc((size_t)c->block + 1, sizeof *g->per_step);
    g->ec_from = ec->on ? xcalloc((size_t)ec->layers, sizeof *g->ec_from) : NULL;
    for (int32_t i = 0; i < n; i++) {
        struct gen_req *r = &g->r[i];
        r->P = prompts ? prompts->len[i] : c->prompt_len;
        if (2 * c->block > c->max_tokens || r->P > c->max_tokens || (whole && r->P + c->gen_len > c->max_tokens)) {
            const int32_t P = r->P, want = whole ? P + c->gen_len : TS_MAX(P, 2 * c->block);
            gen_free(g);
            return ts_fail(err, "request %d: its prompt of %d tokens and blocks of %d need steps of %d rows, more than "
                                "the engine's %d", i, P, c->block, want, c->max_tokens);
        }
        if (c->max_pos > 0 && (int64_t)r->P + c->gen_len > c->max_pos) {
            const int32_t P = r->P;
            gen_free(g);
            return ts_fail(err, "request %d: its prompt of %d tokens and %d to generate exceed the model's context of "
                                "%d", i, P, c->gen_len, c->max_pos);
        }
        r->ids = xmalloc(sizeof *r->ids * (size_t)(r->P + c->gen_len));
        r->decided = xcalloc((size_t)c->gen_len, 1);
        r->soft_w = xcalloc((size_t)c->gen_len, sizeof *r->soft_w);
        r->cached = xcalloc((size_t)c->gen_len, 1);
        r->rowpos = xmalloc(sizeof *r->rowpos * (size_t)(r->P + c->gen_len));
        r->cand = xmalloc(sizeof *r->cand * (size_t)c->block);
        r->rest = xmalloc(sizeof *r->rest * (size_t)c->block);
        r->ec_track = ec->on ? xmalloc(sizeof *r->ec_track * (size_t)ec->layers) : NULL;
        r->ec_seen = ec->on ? xcalloc((size_t)c->gen_len, 1) : NULL;
        for (int32_t p = 0; p < r->P; p++)
            r->ids[p] = prompts ? prompts->ids[i][p]
                                : (int32_t)(ts_mix64(c->seed ^ ts_mix64(((uint64_t)i << 32) | (uint32_t)p)) %
                                            (uint64_t)c->vocab);
        for (int32_t p = 0; p < c->gen_len; p++)
            r->ids[r->P + p] = c->mask_id;
    }
    return 0;
}

void gen_free(struct gen *g)
{
    for (int32_t i = 0; g->r && i < g->c.requests; i++) {
        free(g->r[i].ids);
        free(g->r[i].decided);
        free(g->r[i].soft_w);
        free(g->r[i].cached);
        free(g->r[i].rowpos);
        free(g->r[i].cand);
        free(g->r[i].rest);
        free(g->r[i].ec_track);
        free(g->r[i].ec_seen);
    }
    free(g->r);
    free(g->seg_req);
    free(g->per_step);
    free(g->ec_from);
    memset(g, 0, sizeof *g);
}

bool gen_whole(const struct gen_cfg *c) { return c->policy && c->policy->whole; }
bool gen_every_position(const struct gen_cfg *c) { return !c->focus && c->policy && c->policy->every_position; }

int32_t gen_token(void *ctx, int32_t req, int32_t pos)
{
    const struct gen *g = ctx;
    if (req < 0 || req >= g->c.requests || pos < 0 || pos >= g->r[req].P + g->c.gen_len)
        return -1;
    return g->r[req].ids[pos];
}

static int32_t gen_row_pos(void *ctx, int32_t req, int32_t row)
{
    const struct gen *g = ctx;
    if (req < 0 || req >= g->c.requests || row < 0 || row >= g->r[req].nrow)
        return -1;
    return g->r[req].rowpos[row];
}

/* IterSmooth: the soft row a masked response position adds (request x response position), its weight. */
static int32_t gen_soft(void *ctx, int32_t req, int32_t pos, float *w)
{
    const struct gen *g = ctx;
    *w = 0;
    if (req < 0 || req >= g->c.requests)
        return -1;
    const struct gen_req *r = &g->r[req];
    const int32_t o = pos - r->P;
    if (o < 0 || o >= g->c.gen_len || r->decided[o] || r->soft_w[o] <= 0)
        return -1;
    *w = r->soft_w[o];
    return req * g->c.gen_len + o;
}

static int32_t gen_prompt(void *ctx, int32_t req)
{
    const struct gen *g = ctx;
    return req >= 0 && req < g->c.requests ? g->r[req].P : -1;
}

struct eng_tokens gen_tokens(struct gen *g)
{
    return (struct eng_tokens){.id = gen_token, .pos = gen_row_pos, .soft = g->c.smooth.on ? gen_soft : NULL,
                               .prompt = gen_prompt, .ctx = g};
}

int32_t gen_longest(const struct gen *g)
{
    int32_t most = 0;
    for (int32_t i = 0; i < g->c.requests; i++)
        most = TS_MAX(most, g->r[i].P + g->c.gen_len);
    return most;
}

int64_t gen_rows_most(const struct gen *g)
{
    int64_t most = 0;
    for (int32_t i = 0; i < g->c.requests; i++)
        most += g->r[i].P + g->c.gen_len;
    return most;
}

/* FOCUS's block step for r into s: its decided positions not yet cached, then its masked ones (the
 * candidates), each at its position; K of the candidates kept after layer 1. */
static void focus_segment(const struct gen *g, struct gen_req *r, struct segment *s)
{
    const int32_t B = g->c.block, off = r->block * B, end = r->P + off + B;
    r->nfixed = r->ncand = r->nrow = 0;
    for (int32_t k = 0; k < B; k++)
        if (r->decided[off + k] && !r->cached[off + k])
            r->rowpos[r->nrow++] = r->P + off + k, r->nfixed++;
    for (int32_t k = 0; k < B; k++)
        if (!r->decided[off + k])
            r->rowpos[r->nrow++] = r->P + off + k, r->cand[r->ncand++] = k;
    const double nbar = r->steps > 0 ? (double)r->decoded / r->steps : 1.0;
    r->picked = (int32_t)TS_MIN((double)r->ncand, fmax(1.0, ceil(g->c.focus_alpha * fmax(nbar, 1.0))));
    const int32_t q_front = r->nrow, q = r->nfixed + r->picked;
    *s = (struct segment){.req_id = s->req_id, .phase = PHASE_BLOCK, .q_front = q_front, .kv_front = end - q_front,
                          .kv_write_front = q_front, .q = q, .kv = end - q, .kv_write = q, .probe = r->ncand,
                          .picked = r->picked, .logit_rows = r->picked};
}

/* FOCUS: the finished block's uncached rest, at its positions, over the keys up to its end. */
static void rest_segment(const struct gen *g, struct gen_req *r, struct segment *s)
{
    const int32_t end = r->P + r->block * g->c.block;
    for (int32_t i = 0; i < r->nrest; i++)
        r->rowpos[i] = r->P + r->rest[i];
    r->nrow = r->nrest;
    *s = (struct segment){.req_id = s->req_id, .phase = PHASE_BLOCK, .q = r->nrest, .kv = end - r->nrest,
                          .kv_write = r->nrest};
}

/* Request r's next segment into s (its rows' positions into r->rowpos) and what it is (GEN_SEG_*):
 * the driven policy's, or FOCUS's prefill, finished block's rest or block step. */
static uint8_t next_segment(const struct gen *g, int32_t i, struct gen_req *r, struct segment *s)
{
    if (g->c.policy) {
        g->c.policy->emit(g->c.policy->ctx, i, s, r->rowpos);
        r->nrow = s->q;
        return s->logit_rows > 0 ? GEN_SEG_BLOCK : GEN_SEG_PREFILL;
    }
    if (!r->prefilled) {
        s->phase = PHASE_PREFILL;
        s->q = s->kv_write = r->P;
        return GEN_SEG_PREFILL;
    }
    if (r->nrest > 0) { /* the finished block's rest first */
        rest_segment(g, r, s);
        return GEN_SEG_REST;
    }
    focus_segment(g, r, s);
    return GEN_SEG_BLOCK;
}

/* Logit row k of r's segment s (its rows placed in r->rowpos, a driven policy's): the response
 * offset it holds (-1: a prompt position). */
static int32_t logit_offset(const struct gen_req *r, const struct segment *s, int32_t k)
{
    return r->rowpos[s->q - s->logit_rows + k] - r->P;
}

bool gen_next_step(struct gen *g, struct step_desc *sd, int32_t *groups, int32_t *ngroups, int32_t *masked)
{
    const int32_t B = g->c.block;
    step_desc_clear(sd);
    sd->attn_block = g->c.attn_block;
    sd->logit_chunk_rows = g->c.logit_chunk_rows;
    sd->ffn_chunks = 1;
    const bool focus = g->c.focus;
    sd->evict = focus; /* FOCUS: layers 0-1 run a block step's front rows */
    sd->front_layers = focus ? 2 : 0;
    sd->iter_smooth = g->c.smooth.on;
    int64_t rows = 0, logits = 0;
    *ngroups = 0;
    for (int32_t i = 0; i < g->c.requests; i++) {
        struct gen_req *r = &g->r[i];
        if (r->done)
            continue;
        struct segment s = {.req_id = i};
        r->nrow = 0;
        const uint8_t what = next_segment(g, i, r, &s);
        if (rows > 0 && rows + segment_rows(&s) > g->c.max_tokens) { /* waits for room */
            r->nrow = 0;
            r->last = GEN_SEG_NONE;
            continue;
        }
        r->last = what;
        if (what == GEN_SEG_BLOCK) {
            /* the block: the segment's last B logit rows (FOCUS: the K kept, masked all) */
            const int32_t n = focus ? s.logit_rows : B;
            groups[2 * *ngroups] = (int32_t)(logits + s.logit_rows - n);
            groups[2 * *ngroups + 1] = n;
            const int32_t off = r->block * B;
            for (int32_t k = 0; k < s.logit_rows; k++) {
                const int32_t o = focus ? off : logit_offset(r, &s, k);
                masked[logits + k] = focus || (o >= off && o < off + B && !r->decided[o]);
            }
            ++*ngroups;
            logits += s.logit_rows;
        }
        rows += segment_rows(&s);
        g->seg_req[sd->num_segs] = i;
        step_desc_add(sd, &s);
    }
    return sd->num_segs > 0;
}

/* FOCUS's delayed cache after a block step: a position the step ran as decided (a fixed row) whose
 * right neighbour was decided before the step too is final now. */
static void focus_cache(const struct gen *g, struct gen_req *r)
{
    const int32_t B = g->c.block, off = r->block * B;
    for (int32_t k = 0; k + 1 < B; k++)
        if (r->decided[off + k] && !r->cached[off + k] && r->decided[off + k + 1])
            r->cached[off + k] = 1;
}

/* The block offset logit row k (at step row `row`) of request i's segment commits at, or -1 with
 * err: FOCUS's kept candidate there (cand, which every logit row must hold), or a driven policy's
 * row's position, which must lie in the current block. */
static int32_t commit_at(const struct gen *g, int32_t i, const struct segment *seg, int32_t k, int64_t row,
                         const int32_t *cand, struct ts_err *err)
{
    const struct gen_req *r = &g->r[i];
    if (g->c.focus) {
        if (!cand || cand[row] < 0 || cand[row] >= r->ncand)
            return ts_fail(err, "request %d: logit row %lld holds no candidate of its %d", i, (long long)row, r->ncand);
        return r->cand[cand[row]];
    }
    const int32_t at = logit_offset(r, seg, k) - r->block * g->c.block;
    if (at < 0 || at >= g->c.block)
        return ts_fail(err, "request %d: a commit at logit row %lld, outside its block", i, (long long)row);
    return at;
}

/* Request i's block step: the commits over its logit rows from *row, then its block done or not,
 * and the driven policy told. */
static int apply_block(struct gen *g, int32_t i, const struct segment *seg, const int32_t *commit, const int32_t *cand,
                       int64_t *row, struct ts_err *err)
{
    struct gen_req *r = &g->r[i];
    const int32_t B = g->c.block, off = r->block * B;
    const bool focus = g->c.focus;
    if (focus)
        focus_cache(g, r);
    int32_t n = 0, left = 0;
    for (int32_t k = 0; k < seg->logit_rows; k++, ++*row) {
        const int32_t at = focus || commit[*row] >= 0 ? commit_at(g, i, seg, k, *row, cand, err) : 0;
        if (at < 0)
            return -1;
        if (commit[*row] < 0)
            continue;
        uint8_t *d = &r->decided[off + at];
        if (*d)
            return ts_fail(err, "request %d: position %d committed twice", i, r->P + off + at);
        if (commit[*row] >= g->c.vocab)
            return ts_fail(err, "request %d: token %d committed, beyond the vocabulary", i, commit[*row]);
        *d = 1;
        r->ids[r->P + off + at] = commit[*row];
        n++;
    }
    for (int32_t k = 0; k < B; k++)
        left += !r->decided[off + k];
    r->steps++;
    r->block_steps = left == 0 ? 0 : r->block_steps + 1;
    r->decoded += n;
    g->block_segs++;
    g->decoded += n;
    g->block_rows += seg->q;
    g->front_rows += seg->q_front;
    g->per_step[n]++;
    if (left == 0 && focus) /* its uncached rest is written by a step of its own */
        for (int32_t k = 0; k < B; k++)
            if (!r->cached[off + k])
                r->rest[r->nrest++] = off + k;
    if (left == 0 && ++r->block * B == g->c.gen_len) {
        r->done = true;
        r->nrest = 0;
    }
    if (focus)
        return 0;
    struct segment ran = *seg;
    ran.decoded = n;
    if (g->c.policy->advance(g->c.policy->ctx, i, &ran) != r->done)
        return ts_fail(err, "request %d: policy %s %s after block %d of %d", i, g->c.policy->name,
                       r->done ? "goes on" : "finishes", r->block, g->c.gen_len / B);
    return 0;
}

int gen_apply(struct gen *g, const struct step_desc *sd, const int32_t *commit, const int32_t *cand,
              struct ts_err *err)
{
    int64_t row = 0;
    g->steps++;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const int32_t i = g->seg_req[s];
        struct gen_req *r = &g->r[i];
        if (r->done)
            return ts_fail(err, "request %d: a step after its last block", i);
        if (r->last == GEN_SEG_PREFILL) {
            r->prefilled = true;
            if (g->c.policy && g->c.policy->advance(g->c.policy->ctx, i, &sd->segs[s]))
                return ts_fail(err, "request %d: policy %s finishes it before a block step", i, g->c.policy->name);
        } else if (r->last == GEN_SEG_REST) {
            for (int32_t k = 0; k < r->nrest; k++)
                r->cached[r->rest[k]] = 1;
            r->nrest = 0;
        } else if (apply_block(g, i, &sd->segs[s], commit, cand, &row, err)) {
            return -1;
        }
    }
    return 0;
}

void gen_focus_cands(const struct step_desc *sd, const int32_t *picks, int max_probe, int32_t *cand)
{
    int64_t row = 0;
    for (int32_t s = 0, n = 0; s < sd->num_segs; s++) {
        const struct segment *seg = &sd->segs[s];
        for (int32_t k = 0; k < seg->logit_rows; k++, row++)
            cand[row] = seg->probe > 0 ? picks[(size_t)n * (size_t)max_probe + (size_t)k] : -1;
        n += seg->probe > 0;
    }
}

/* --- what the extensions' host halves share (eng_gen_internal.h) --------------------------- */

/* Calls f(ctx, request, logit row, response offset or -1) for each of sd's block logit rows in order
 * (the segments of the step gen_next_step built last, a driven policy's: FOCUS's rows are picked on
 * the GPU). */
void gen_each_block_row(const struct gen *g, const struct step_desc *sd,
                        void (*f)(void *, int32_t, int64_t, int32_t), void *ctx)
{
    TS_ASSERT(g->c.policy);
    int64_t row = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const int32_t i = g->seg_req[s];
        const struct gen_req *r = &g->r[i];
        if (r->last != GEN_SEG_BLOCK)
            continue;
        for (int32_t k = 0; k < sd->segs[s].logit_rows; k++, row++) {
            const int32_t o = logit_offset(r, &sd->segs[s], k);
            f(ctx, i, row, o >= 0 ? o : -1);
        }
    }
}

/* An option's value of comma-separated numbers, named names[0..most) in order, into v; *n: how many. */
int gen_spec_numbers(const char *opt, const char *spec, const char *form, const char *const *names, size_t most,
                     double *v, size_t *n, struct ts_err *err)
{
    const char *at = spec ? spec : "";
    for (*n = 0; *at; ++*n) {
        if (*n == most)
            return ts_fail(err, "%s '%s': at most %zu numbers (%s)", opt, spec, most, form);
        const char *comma = strchr(at, ',');
        const size_t len = comma ? (size_t)(comma - at) : strlen(at);
        char text[64];
        if (len == 0 || len >= sizeof text)
            return ts_fail(err, "%s '%s': %s must be a number (%s)", opt, spec, names[*n], form);
        memcpy(text, at, len);
        text[len] = '\0';
        if (ts_parse_double(text, &v[*n]))
            return ts_fail(err, "%s '%s': %s '%s' is not a number", opt, spec, names[*n], text);
        at += len + (comma != NULL);
        if (comma && !*at)
            return ts_fail(err, "%s '%s': nothing after the last comma", opt, spec);
    }
    return 0;
}

/* --- Prophet's early commit ---------------------------------------------------------------- */

int gen_prophet_parse(const char *spec, struct gen_prophet *out, struct ts_err *err)
{
    static const char *const names[] = {"OFFSET", "EARLY", "MID", "LATE"};
    struct gen_prophet p = GEN_PROPHET_DEFAULTS;
    double v[4] = {-1, p.early, p.mid, p.late};
    size_t n;
    if (gen_spec_numbers("--prophet", spec, "OFFSET[,EARLY,MID,LATE]", names, 4, v, &n, err))
        return -1;
    if (n != 1 && n != 4)
        return ts_fail(err, "--prophet '%s': the answer's offset alone, or with the three thresholds "
                            "(OFFSET[,EARLY,MID,LATE])", spec ? spec : "");
    if (!(v[0] >= 0 && v[0] <= 1 << 24) || v[0] != floor(v[0]))
        return ts_fail(err, "--prophet '%s': OFFSET %g must be a response offset (a whole number, 0 or more)", spec, v[0]);
    for (size_t k = 1; k < 4; k++)
        if (!(v[k] >= 0 && v[k] <= 1e6))
            return ts_fail(err, "--prophet '%s': %s %g must be a logit gap of 0 or more", spec, names[k], v[k]);
    p.answer = (int32_t)v[0], p.early = v[1], p.mid = v[2], p.late = v[3];
    *out = p;
    return 0;
}

int gen_prophet_apply(struct gen *g, const struct step_desc *sd, const int32_t *tok, const float *gap,
                      struct ts_err *err)
{
    const struct gen_prophet *p = &g->c.prophet;
    const int32_t G = g->c.gen_len, first = p->answer, last = TS_MIN(p->answer + p->len, G); /* (gen_init: first < G) */
    int64_t row = 0;
    int finished = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *seg = &sd->segs[s];
        const int32_t i = g->seg_req[s];
        struct gen_req *r = &g->r[i];
        if (r->last != GEN_SEG_BLOCK)
            continue;
        const int64_t base = row;
        row += seg->logit_rows;
        if (r->done)
            continue;
        double sum = 0;
        int32_t n = 0, masked = 0;
        for (int32_t k = 0; k < seg->logit_rows; k++) {
            const int32_t o = logit_offset(r, seg, k);
            if (o >= first && o < last)
                sum += gap[base + k], n++;
            masked += o >= 0 && !r->decided[o];
        }
        if (n != last - first || masked != G - r->decoded)
            return ts_fail(err, "--prophet: request %d's step has logits for %d of its %d answer positions and %d of "
                                "its %d masked ones: Prophet reads every position's (--policy vanilla)",
                           i, n, last - first, masked, G - r->decoded);
        const double share = (double)r->decoded / G, mean = sum / n;
        if (mean < (share < 0.33 ? p->early : share < 0.67 ? p->mid : p->late))
            continue;
        for (int32_t k = 0; k < seg->logit_rows; k++) {
            const int32_t o = logit_offset(r, seg, k);
            if (o < 0 || r->decided[o])
                continue;
            if (tok[base + k] < 0 || tok[base + k] >= g->c.vocab)
                return ts_fail(err, "request %d: token %d committed, beyond the vocabulary", i, tok[base + k]);
            r->decided[o] = 1;
            r->ids[r->P + o] = tok[base + k];
        }
        g->prophet_exits++;
        g->prophet_share += share;
        r->exit_steps = r->steps;
        g->prophet_filled += G - r->decoded;
        r->decoded = G;
        r->done = true;
        finished++;
    }
    return finished;
}

double gen_tpf(const struct gen *g) { return g->block_segs > 0 ? (double)g->decoded / (double)g->block_segs : 0; }

/* --- decode profiles ---------------------------------------------------------------------- */

int gen_profile_write(const char *path, const char *name, const struct gen *g, const char *decoder, const char *source,
                      struct ts_err *err)
{
    if (g->block_segs == 0)
        return ts_fail(err, "%s: no block step ran: no profile to write", path);
    json_t *root = NULL;
    if (access(path, F_OK) == 0) {
        json_error_t jerr;
        root = json_load_file(path, 0, &jerr);
        if (!root)
            return ts_fail(err, "%s:%d: %s", path, jerr.line, jerr.text);
        if (!json_is_object(root)) {
            json_decref(root);
            return ts_fail(err, "%s: not a JSON object of decode profiles", path);
        }
    } else {
        root = json_object();
    }
    json_t *steps = json_array();
    int32_t last = g->c.block;
    while (last > 1 && g->per_step[last] == 0)
        last--;
    for (int32_t k = 1; k <= last; k++)
        json_array_append_new(steps, json_integer(g->per_step[k]));
    json_object_set_new(root, name, json_pack("{s:f, s:s, s:s, s:o}", "tpf", gen_tpf(g), "decoder", decoder, "source",
                                              source, "steps", steps));
    struct ts_whole w; /* (whole or not at all: the profiles already in it stay where this write fails) */
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err)) {
        json_decref(root);
        return -1;
    }
    const bool bad = json_dumpf(root, w.f, JSON_INDENT(2) | JSON_SORT_KEYS) != 0;
    json_decref(root);
    return ts_whole_close(&w, bad, err) || bad ? (bad ? ts_fail(err, "%s: cannot write the profile", path) : -1) : 0;
}
