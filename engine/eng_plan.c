/* eng_plan.c: the KV page table and step planning. */
#include "eng_plan.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"

_Static_assert(ENG_EVICT_FIELDS == K_FOCUS_FIELDS, "an evicting segment's fields are k_focus_args.probe's");

void eng_kv_init(struct eng_kv *kv, int32_t page_tokens, int32_t num_pages)
{
    memset(kv, 0, sizeof *kv);
    TS_ASSERT(page_tokens > 0 && num_pages >= 0);
    kv->page_tokens = page_tokens;
    kv->num_pages = num_pages;
    kv->free_pages = xmalloc(sizeof *kv->free_pages * (size_t)(num_pages ? num_pages : 1));
    for (int32_t i = 0; i < num_pages; i++) /* lowest page id on top */
        kv->free_pages[i] = num_pages - 1 - i;
    kv->num_free = num_pages;
}

void eng_kv_free(struct eng_kv *kv)
{
    if (!kv)
        return;
    for (int32_t i = 0; i < kv->num_reqs; i++)
        free(kv->reqs[i].pages);
    free(kv->reqs);
    for (int32_t i = 0; i < kv->num_held; i++)
        free(kv->held[i].r.pages);
    free(kv->held);
    free(kv->free_pages);
    memset(kv, 0, sizeof *kv);
}

static struct eng_kv_req *req_of(struct eng_kv *kv, int32_t id)
{
    TS_ASSERT(id >= 0);
    if (id >= kv->num_reqs) {
        int32_t n = TS_MAX(id + 1, kv->num_reqs * 2);
        kv->reqs = xrealloc(kv->reqs, sizeof *kv->reqs * (size_t)n);
        memset(kv->reqs + kv->num_reqs, 0, sizeof *kv->reqs * (size_t)(n - kv->num_reqs));
        kv->num_reqs = n;
    }
    return &kv->reqs[id];
}

/* n free pages added to r's (room for them there) */
static void take_free(struct eng_kv *kv, struct eng_kv_req *r, int32_t n)
{
    while (n-- > 0)
        r->pages[r->num_pages++] = kv->free_pages[--kv->num_free];
}

/* r's pages past its first `keep` back to the free ones */
static void give_back(struct eng_kv *kv, struct eng_kv_req *r, int32_t keep)
{
    while (r->num_pages > keep)
        kv->free_pages[kv->num_free++] = r->pages[--r->num_pages];
}

int eng_kv_reserve(struct eng_kv *kv, int32_t req_id, int32_t tokens, struct ts_err *err)
{
    struct eng_kv_req *r = req_of(kv, req_id);
    int32_t need = (tokens + kv->page_tokens - 1) / kv->page_tokens - r->num_pages;
    if (need <= 0)
        return 0;
    if (need > kv->num_free)
        return ts_fail(err, "KV pool exhausted: request %d needs %d more pages of %d tokens, %d of %d "
                            "are free", req_id, need, kv->page_tokens, kv->num_free, kv->num_pages);
    if (r->num_pages + need > r->cap) {
        r->cap = TS_MAX(r->num_pages + need, r->cap * 2);
        r->pages = xrealloc(r->pages, sizeof *r->pages * (size_t)r->cap);
    }
    take_free(kv, r, need);
    return 0;
}

void eng_kv_release(struct eng_kv *kv, int32_t req_id)
{
    if (req_id < 0 || req_id >= kv->num_reqs)
        return;
    give_back(kv, &kv->reqs[req_id], 0);
}

void eng_kv_truncate(struct eng_kv *kv, int32_t req_id, int32_t tokens)
{
    if (req_id < 0 || req_id >= kv->num_reqs || tokens < 0)
        return;
    give_back(kv, &kv->reqs[req_id], (tokens + kv->page_tokens - 1) / kv->page_tokens);
}

/* --- moves between engines --------------------------------------------------------------- */

static int32_t held_index(const struct eng_kv *kv, int64_t ticket)
{
    for (int32_t i = 0; i < kv->num_held; i++)
        if (kv->held[i].ticket == ticket)
            return i;
    return -1;
}

const struct eng_kv_req *eng_kv_held(const struct eng_kv *kv, int64_t ticket)
{
    const int32_t i = held_index(kv, ticket);
    return i < 0 ? NULL : &kv->held[i].r;
}

/* A new set under ticket holding r's pages (r then none). */
static void set_aside(struct eng_kv *kv, int64_t ticket, struct eng_kv_req *r)
{
    if (kv->num_held == kv->cap_held) {
        kv->cap_held = kv->cap_held ? 2 * kv->cap_held : 8;
        kv->held = xrealloc(kv->held, sizeof *kv->held * (size_t)kv->cap_held);
    }
    kv->held[kv->num_held++] = (struct eng_kv_held){ticket, *r};
    *r = (struct eng_kv_req){0};
}

int eng_kv_hold(struct eng_kv *kv, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    if (held_index(kv, ticket) >= 0)
        return ts_fail(err, "K/V move %lld: its ticket is in use", (long long)ticket);
    set_aside(kv, ticket, req_of(kv, req_id));
    return 0;
}

int eng_kv_take(struct eng_kv *kv, int64_t ticket, int32_t pages, struct ts_err *err)
{
    if (held_index(kv, ticket) >= 0)
        return ts_fail(err, "K/V move %lld: its ticket is in use", (long long)ticket);
    if (pages < 0 || pages > kv->num_free)
        return ts_fail(err, "K/V move %lld: %d pages of %d tokens wanted, %d of %d are free", (long long)ticket,
                       pages, kv->page_tokens, kv->num_free, kv->num_pages);
    struct eng_kv_req r = {.pages = xmalloc(sizeof *r.pages * (size_t)(pages ? pages : 1)), .cap = pages};
    take_free(kv, &r, pages);
    set_aside(kv, ticket, &r);
    return 0;
}

int eng_kv_adopt(struct eng_kv *kv, int64_t ticket, int32_t req_id, struct ts_err *err)
{
    const int32_t i = held_index(kv, ticket);
    if (i < 0)
        return ts_fail(err, "K/V move %lld: no pages are set aside under it", (long long)ticket);
    struct eng_kv_req *r = req_of(kv, req_id);
    if (r->num_pages > 0)
        return ts_fail(err, "K/V move %lld: request %d already holds %d pages", (long long)ticket, req_id,
                       r->num_pages);
    free(r->pages);
    *r = kv->held[i].r;
    kv->held[i] = kv->held[--kv->num_held];
    return 0;
}

void eng_kv_drop(struct eng_kv *kv, int64_t ticket)
{
    const int32_t i = held_index(kv, ticket);
    if (i < 0)
        return;
    struct eng_kv_req *r = &kv->held[i].r;
    give_back(kv, r, 0);
    free(r->pages);
    kv->held[i] = kv->held[--kv->num_held];
}

int32_t eng_kv_slot(const struct eng_kv *kv, int32_t req_id, int32_t key)
{
    TS_ASSERT(req_id >= 0 && req_id < kv->num_reqs);
    const struct eng_kv_req *r = &kv->reqs[req_id];
    TS_ASSERT(key >= 0 && key / kv->page_tokens < r->num_pages);
    return r->pages[key / kv->page_tokens] * kv->page_tokens + key % kv->page_tokens;
}

void eng_plan_init(struct eng_plan *p) { memset(p, 0, sizeof *p); }

void eng_plan_free(struct eng_plan *p)
{
    if (!p)
        return;
    free(p->tok_pos);
    free(p->tok_slot);
    free(p->tok_ids);
    free(p->q_start);
    free(p->q_len);
    free(p->key_len);
    free(p->kv_cached);
    free(p->page_off);
    free(p->pages);
    free(p->tiles);
    free(p->logit_idx);
    free(p->sel);
    free(p->x_ids);
    free(p->x_slot);
    free(p->x_comp);
    free(p->c_row);
    free(p->probe);
    free(p->probe_idx);
    if (p->front) {
        eng_plan_free(p->front);
        free(p->front);
    }
    memset(p, 0, sizeof *p);
}

/* The key index of a segment's first key: past the pages its selected tokens will take. */
static int32_t key_base(const struct segment *g, int32_t page_tokens)
{
    return (g->keep + page_tokens - 1) / page_tokens * page_tokens;
}

/* Appends the selection of segment g (plan index s, its candidates' pages at p->page_off[s]) and
 * the page list its kept tokens go to; returns the page references then used. */
static int32_t add_selection(struct eng_plan *p, const struct eng_kv *kv, const struct segment *g, int32_t s,
                             int32_t nref)
{
    const int32_t cand = g->q - g->score_rows, npages = (g->keep + kv->page_tokens - 1) / kv->page_tokens;
    ts_grow((void **)&p->sel, &p->cap_sel, (size_t)(6 * (p->num_sel + 1)), sizeof(int32_t));
    ts_grow((void **)&p->pages, &p->cap_pages, (size_t)(nref + npages), sizeof(int32_t));
    memcpy(p->pages + nref, kv->reqs[g->req_id].pages, sizeof *p->pages * (size_t)npages);
    int32_t *f = p->sel + 6 * p->num_sel++;
    f[0] = p->q_start[s] + cand;
    f[1] = g->score_rows;
    f[2] = cand;
    f[3] = g->keep;
    f[4] = p->page_off[s];
    f[5] = nref;
    p->max_cand = TS_MAX(p->max_cand, cand);
    p->max_keep = TS_MAX(p->max_keep, g->keep);
    return nref + npages;
}

bool eng_plan_evicting(const struct step_desc *sd)
{
    return sd->evict && sd->tot.split_segs > 0 && !sd->cache_outputs && sd->tot.carry_tokens == 0;
}

bool eng_plan_widening(const struct step_desc *sd)
{
    return sd->cache_inputs && sd->tot.split_segs > 0 && sd->front_layers > 0 && !sd->evict && !sd->cache_outputs &&
           sd->tot.carry_tokens == 0 && sd->tot.probe_tokens == 0;
}

bool eng_plan_layered(const struct step_desc *sd)
{
    return !eng_plan_evicting(sd) && !eng_plan_widening(sd) &&
           (sd->cache_outputs || sd->tot.split_segs > 0 || sd->tot.probe_tokens > 0 || sd->tot.carry_tokens > 0);
}

/* What the engine cannot run of segment g of an evicting step, or NULL. */
static const char *evicting_refusal(const struct segment *g, int32_t front_layers)
{
    if (g->keep > 0)
        return "a sparse selection beside eviction";
    if (g->q_front == 0)
        return g->probe > 0 ? "candidates without a front shape" : NULL;
    if (front_layers < 2)
        return "eviction after fewer than 2 front layers (the importance delta needs layers 0 and 1)";
    if ((int64_t)g->kv + g->q != (int64_t)g->kv_front + g->q_front)
        return "later layers whose keys are not the front layers' (kv + q differs from kv_front + q_front)";
    if ((int64_t)g->q - g->picked != (int64_t)g->q_front - g->probe)
        return "later rows other than the rows before its candidates and the picked ones (q - picked differs "
               "from q_front - probe)";
    if (g->probe > K_FOCUS_MAX_CAND)
        return "more candidates than the importance kernel holds (K_FOCUS_MAX_CAND)";
    return NULL;
}

/* What the engine cannot run of segment g of a widening step, or NULL. */
static const char *widening_refusal(const struct segment *g)
{
    if (g->keep > 0)
        return "a sparse selection beside a widening step";
    if (g->q_front == 0)
        return NULL;
    if (g->kv > 0 || (int64_t)g->kv_front + g->q_front != g->q)
        return "later layers that do not run every row (kv > 0, or q differs from kv_front + q_front)";
    return NULL;
}

/* What the engine cannot run of segment g of a layered step, or NULL. */
static const char *layered_refusal(const struct segment *g)
{
    const int64_t rows = segment_rows(g);
    if (g->keep > 0)
        return "a sparse selection beside per-layer shapes";
    if ((int64_t)g->kv + g->q != rows)
        return "cached keys other than its own rows (kv + q differs from its rows)";
    if (g->q_front > 0 && (int64_t)g->kv_front + g->q_front != rows)
        return "a front shape whose keys are not its own rows (kv_front + q_front differs from its rows)";
    return NULL;
}

/* The refusals of a step the engine does not run; 0 when it runs (the pool's room aside). */
static int plan_refusal(const struct step_desc *sd, const struct eng_kv *kv, struct ts_err *err)
{
    const bool layered = eng_plan_layered(sd), evicting = eng_plan_evicting(sd), widening = eng_plan_widening(sd);
    if (sd->evict && (sd->cache_outputs || sd->tot.carry_tokens > 0))
        return ts_fail(err, "step refused: eviction beside a feature cache or carried rows, which the engine does "
                            "not run; price such runs with the cost model");
    if (sd->cache_inputs && (sd->evict || sd->cache_outputs || sd->tot.carry_tokens > 0 || sd->tot.probe_tokens > 0))
        return ts_fail(err, "step refused: cached layer inputs beside eviction, a feature cache, carried or probe "
                            "rows, which the engine does not run; price such runs with the cost model");
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        const char *why = g->attn_keys > 0 && (g->kv > 0 || g->phase != PHASE_FULL || layered || evicting || widening)
                              ? "a sparse attention pattern (attn_keys) over cached keys"
                          : g->host_kv > 0 || g->host_scan > 0 ? "K/V offloaded to host memory (host_kv, host_scan)"
                          : widening         ? widening_refusal(g)
                          : layered          ? layered_refusal(g)
                          : evicting         ? evicting_refusal(g, sd->front_layers)
                                             : NULL;
        if (why)
            return ts_fail(err, "step refused: request %d's segment has %s, which the engine does not run; price "
                                "such runs with the cost model", g->req_id, why);
        if (!kv && (g->kv > 0 || g->keep > 0 || layered || evicting || widening))
            return ts_fail(err, "step refused: request %d %s, but the engine is stateless (no KV pool)", g->req_id,
                           g->kv > 0 ? "reads cached tokens" : g->keep > 0 ? "selects tokens to keep"
                                                                           : "has per-layer shapes");
    }
    return 0;
}

/* The token id at a request's position: a hash, so that a replay is deterministic. */
static int32_t token_id(uint64_t seed, int32_t req, int32_t pos, int32_t vocab)
{
    uint64_t h = ts_mix64(seed ^ ts_mix64(((uint64_t)(uint32_t)req << 32) | (uint32_t)pos));
    return (int32_t)(h % (uint64_t)vocab);
}

/* Fills p's per-token and per-segment arrays for the rows each segment computes: a plain step's q
 * rows, a layered step's at its front layers (front) or later ones (x0[s]: segment s's first
 * hidden row; layered only), or an evicting step's (front, or later: evicting). The pool holds each
 * segment's keys already. */
static void fill_rows(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd, int32_t vocab, uint64_t seed,
                      const int32_t *x0, bool front, bool evicting)
{
    const int32_t S = sd->num_segs, page_tokens = kv ? kv->page_tokens : 1;
    int64_t T = 0;
    for (int32_t s = 0; s < S; s++) {
        int32_t q, kvn, w;
        segment_layer_shape(&sd->segs[s], front, &q, &kvn, &w);
        T += q;
    }
    void **const per_token[] = {(void **)&p->tok_pos, (void **)&p->tok_slot, (void **)&p->tok_ids, (void **)&p->c_row};
    void **const per_seg[] = {(void **)&p->q_start, (void **)&p->q_len, (void **)&p->key_len,
                              (void **)&p->kv_cached, (void **)&p->page_off};
    ts_grow_group(per_token, 4, &p->cap_T, (size_t)T, sizeof(int32_t));
    ts_grow_group(per_seg, 5, &p->cap_S, (size_t)S, sizeof(int32_t));
    int32_t row = 0, nref = 0, max_keys = 0, min_q = INT32_MAX, max_q = 0;
    p->num_sel = p->max_cand = p->max_keep = 0;
    for (int32_t s = 0; s < S; s++) {
        const struct segment *g = &sd->segs[s];
        int32_t q, kvn, w;
        segment_layer_shape(g, front, &q, &kvn, &w);
        const int32_t keys = kvn + q, base = kv ? key_base(g, kv->page_tokens) : 0;
        /* a probing segment's later layers: its first q - picked rows (from key off on), then the
         * picked ones (their placeholders the last picked rows) */
        const int32_t fixed = (x0 || evicting) && !front && g->probe > 0 ? q - g->picked : 0;
        const int32_t off = evicting ? g->kv_front : 0;
        max_keys = TS_MAX(max_keys, keys);
        min_q = TS_MIN(min_q, q);
        max_q = TS_MAX(max_q, q);
        p->q_start[s] = row;
        p->q_len[s] = q;
        p->key_len[s] = keys;
        p->kv_cached[s] = kvn;
        p->page_off[s] = nref;
        int32_t npages = (keys + page_tokens - 1) / page_tokens;
        ts_grow((void **)&p->pages, &p->cap_pages, (size_t)(nref + npages), sizeof(int32_t));
        if (kv)
            memcpy(p->pages + nref, kv->reqs[g->req_id].pages + base / kv->page_tokens,
                   sizeof *p->pages * (size_t)npages);
        else /* one-token pages over the step's own rows */
            for (int32_t k = 0; k < npages; k++)
                p->pages[nref + k] = row + k;
        nref += npages;
        if (g->keep > 0)
            nref = add_selection(p, kv, g, s, nref);
        for (int32_t i = 0; i < q; i++) {
            const int32_t pos = i < fixed ? off + i : kvn + i;
            p->tok_pos[row + i] = pos;
            p->tok_slot[row + i] = kv ? eng_kv_slot(kv, g->req_id, base + pos) : row + i;
            p->tok_ids[row + i] = token_id(seed, g->req_id, pos, vocab);
            if (x0) {
                p->c_row[row + i] = x0[s] + pos;
                p->x_comp[x0[s] + pos] = row + i;
            }
        }
        row += q;
    }
    p->T = (int32_t)T;
    p->S = S;
    p->num_page_refs = nref;
    p->max_key_len = max_keys;
    p->min_q = S > 0 ? min_q : 0;
    p->max_q = max_q;
}

static void set_row_ids(struct eng_plan *p, const struct step_desc *sd, const struct eng_tokens *t)
{
    for (int32_t s = 0; s < p->S; s++)
        for (int32_t i = 0, r = p->q_start[s]; i < p->q_len[s]; i++, r++) {
            const int32_t id = t->id(t->ctx, sd->segs[s].req_id, p->tok_pos[r]);
            if (id >= 0)
                p->tok_ids[r] = id;
        }
}

/* Whether t places segment s's rows validly: every position within its keys, the candidates of an
 * evicting segment ascending. */
static const char *placed_refusal(const struct eng_plan *rows, const struct segment *g, int32_t s,
                                  const struct eng_tokens *t)
{
    const int32_t keys = rows->kv_cached[s] + rows->q_len[s], first_cand = g->probe > 0 ? rows->q_len[s] - g->probe : -1;
    for (int32_t i = 0, last = -1; i < rows->q_len[s]; i++) {
        const int32_t at = t->pos(t->ctx, g->req_id, i);
        if (at < 0)
            continue;
        if (at >= keys)
            return "a row placed past its keys";
        if (first_cand >= 0 && i >= first_cand && at <= last)
            return "candidates that do not ascend";
        last = i >= first_cand ? at : last;
    }
    return NULL;
}

int eng_plan_set_ids(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd, const struct eng_tokens *t,
                     struct ts_err *err)
{
    struct eng_plan *rows = p->front ? p->front : p; /* the rows t places: an evicting step's front ones */
    for (int32_t s = 0; t->pos && s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        const char *why = t->pos(t->ctx, g->req_id, 0) < 0 ? NULL
                          : p->X > 0 || p->num_sel > 0 || !kv ? "rows placed in a step that selects or has per-layer rows"
                                                              : placed_refusal(rows, g, s, t);
        if (why)
            return ts_fail(err, "step refused: request %d's segment has %s", g->req_id, why);
    }
    for (int32_t s = 0; t->pos && s < sd->num_segs; s++) {
        const int32_t req = sd->segs[s].req_id;
        for (int32_t i = 0, r = rows->q_start[s]; i < rows->q_len[s]; i++, r++) {
            const int32_t at = t->pos(t->ctx, req, i);
            if (at >= 0) {
                rows->tok_pos[r] = at;
                rows->tok_slot[r] = eng_kv_slot(kv, req, at);
            }
        }
    }
    if (t->pos && p->evict) /* the later rows where the front rows they continue sit */
        for (int32_t j = 0; j < p->T; j++) {
            p->tok_pos[j] = rows->tok_pos[p->c_row[j]];
            p->tok_slot[j] = rows->tok_slot[p->c_row[j]];
        }
    for (int32_t s = 0; t->pos && p->widen && s < sd->num_segs; s++) /* a segment that does not widen: */
        if (sd->segs[s].q_front == 0) /* its later rows are its front ones */
            for (int32_t i = 0; i < p->q_len[s]; i++) {
                p->tok_pos[p->q_start[s] + i] = rows->tok_pos[rows->q_start[s] + i];
                p->tok_slot[p->q_start[s] + i] = rows->tok_slot[rows->q_start[s] + i];
            }
    set_row_ids(p, sd, t);
    if (p->front)
        set_row_ids(p->front, sd, t);
    for (int32_t s = 0, x = 0; p->X > 0 && s < sd->num_segs; x += segment_rows(&sd->segs[s++]))
        for (int32_t i = 0; i < segment_rows(&sd->segs[s]); i++) { /* a hidden row's position is its row */
            const int32_t id = t->id(t->ctx, sd->segs[s].req_id, i);
            if (id >= 0)
                p->x_ids[x + i] = id;
        }
    return 0;
}

/* The query tiles in the order the attention kernels want (attn_tiles). */
static void fill_tiles(struct eng_plan *p)
{
    int32_t ntiles = 0;
    for (int32_t s = 0; s < p->S; s++)
        ntiles += (p->q_len[s] + ATTN_TILE_M - 1) / ATTN_TILE_M;
    ts_grow((void **)&p->tiles, &p->cap_tiles, (size_t)(2 * ntiles), sizeof(int32_t));
    p->num_tiles = attn_tiles(p->S, p->q_len, p->tiles, &p->long_tiles, &p->long_rows, &p->wg_tiles);
}

/* Each segment's logit rows: its last logit_rows rows of plan p (a plain step's, or the later layers'). */
static void fill_logits(struct eng_plan *p, const struct step_desc *sd)
{
    for (int32_t s = 0, r = 0; s < sd->num_segs; s++)
        for (int32_t i = sd->segs[s].q - sd->segs[s].logit_rows; i < sd->segs[s].q; i++)
            p->logit_idx[r++] = p->q_start[s] + i;
}

/* A layered step's hidden rows: ids, slots, x_comp (every row -1 before fill_rows marks the computed
 * ones), the probes and the logit rows (each segment's last logit_rows hidden rows). */
static void fill_hidden(struct eng_plan *p, struct eng_plan *fp, struct eng_kv *kv, const struct step_desc *sd,
                        int32_t vocab, uint64_t seed, int32_t *x0)
{
    const int32_t X = (int32_t)sd->tot.rows;
    void **const per_row[] = {(void **)&p->x_ids, (void **)&p->x_slot, (void **)&p->x_comp};
    ts_grow_group(per_row, 3, &p->cap_X, (size_t)X, sizeof(int32_t));
    if (fp)
        ts_grow((void **)&fp->x_comp, &fp->cap_X, (size_t)X, sizeof(int32_t));
    int32_t np = 0, nprobe = 0, r = 0;
    p->max_probe = 0;
    for (int32_t s = 0, x = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        const int32_t rows = segment_rows(g);
        x0[s] = x;
        for (int32_t i = 0; i < rows; i++) {
            p->x_ids[x + i] = token_id(seed, g->req_id, i, vocab);
            p->x_slot[x + i] = eng_kv_slot(kv, g->req_id, i);
        }
        for (int32_t i = rows - g->logit_rows; i < rows; i++)
            p->logit_idx[r++] = x + i;
        if (g->probe > 0) {
            ts_grow((void **)&p->probe, &p->cap_probe, (size_t)(5 * (np + 1)), sizeof(int32_t));
            ts_grow((void **)&p->probe_idx, &p->cap_probe_idx, (size_t)(nprobe + g->probe), sizeof(int32_t));
            int32_t *f = p->probe + 5 * np++;
            f[0] = x + rows - g->probe;
            f[1] = g->probe;
            f[2] = g->picked;
            f[3] = -1; /* fill_rows' computed rows come later */
            f[4] = rows - g->probe;
            for (int32_t i = 0; i < g->probe; i++)
                p->probe_idx[nprobe + i] = f[0] + i;
            nprobe += g->probe;
            p->max_probe = TS_MAX(p->max_probe, g->probe);
        }
        x += rows;
    }
    for (int32_t i = 0; i < X; i++)
        p->x_comp[i] = -1;
    if (fp)
        for (int32_t i = 0; i < X; i++)
            fp->x_comp[i] = -1;
    p->X = X;
    p->num_probe = np;
    p->probe_rows = nprobe;
}

/* An evicting step's two plans (eng_plan.h): the front rows, then the later rows, each the front row
 * it continues (c_row), and each evicting segment's candidates (probe). */
static void plan_evicting(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd, int32_t vocab,
                          uint64_t seed)
{
    if (!p->front) {
        p->front = xmalloc(sizeof *p->front);
        eng_plan_init(p->front);
    }
    struct eng_plan *fp = p->front;
    fill_rows(fp, kv, sd, vocab, seed, NULL, true, true);
    fill_tiles(fp);
    fp->R = 0;
    fill_rows(p, kv, sd, vocab, seed, NULL, false, true);
    fill_tiles(p);
    int32_t np = 0, cand = 0;
    fill_logits(p, sd);
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        for (int32_t i = 0; i < g->q; i++) { /* the front row at the same key */
            const int32_t j = p->q_start[s] + i;
            p->c_row[j] = fp->q_start[s] + p->tok_pos[j] - fp->kv_cached[s];
        }
        if (g->probe == 0)
            continue;
        ts_grow((void **)&p->probe, &p->cap_probe, (size_t)(ENG_EVICT_FIELDS * (np + 1)), sizeof(int32_t));
        int32_t *f = p->probe + ENG_EVICT_FIELDS * np++;
        f[0] = fp->q_start[s] + g->q_front - g->probe;
        f[1] = g->probe;
        f[2] = g->picked;
        f[3] = p->q_start[s] + g->q - g->picked;
        f[4] = g->kv_front + g->q_front - g->probe;
        f[5] = g->req_id;
        f[6] = s;
        cand += g->probe;
        p->max_probe = TS_MAX(p->max_probe, g->probe);
    }
    p->num_probe = np;
    p->probe_rows = cand;
    p->evict = true;
}

/* A widening step's two plans (eng_plan.h): the front rows, then the later ones, each segment's
 * logit rows its last later rows. */
static void plan_widening(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd, int32_t vocab,
                          uint64_t seed)
{
    if (!p->front) {
        p->front = xmalloc(sizeof *p->front);
        eng_plan_init(p->front);
    }
    fill_rows(p->front, kv, sd, vocab, seed, NULL, true, false);
    fill_tiles(p->front);
    p->front->R = 0;
    fill_rows(p, kv, sd, vocab, seed, NULL, false, false);
    fill_tiles(p);
    fill_logits(p, sd);
    p->widen = true;
}

int eng_plan_build(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd,
                   int32_t vocab, uint64_t seed, struct ts_err *err)
{
    const int32_t S = sd->num_segs;
    const bool layered = eng_plan_layered(sd);
    if (plan_refusal(sd, kv, err))
        return -1;
    /* check the pool first, so that a refused step changes nothing */
    int64_t need_pages = 0;
    for (int32_t s = 0; s < S && kv; s++) {
        const struct segment *g = &sd->segs[s];
        int32_t have = g->req_id < kv->num_reqs ? kv->reqs[g->req_id].num_pages : 0;
        int32_t keys = layered ? segment_rows(g) : key_base(g, kv->page_tokens) + g->kv + g->q;
        int32_t want = (keys + kv->page_tokens - 1) / kv->page_tokens;
        for (int32_t t = 0; t < s; t++) /* a request twice in one step is a scheduler bug */
            TS_ASSERTF(sd->segs[t].req_id != g->req_id, "request %d twice in a step", g->req_id);
        need_pages += TS_MAX(want - have, 0);
    }
    if (kv && need_pages > kv->num_free)
        return ts_fail(err, "step refused: its segments need %lld more KV pages, %d of %d are free",
                       (long long)need_pages, kv->num_free, kv->num_pages);
    for (int32_t s = 0; s < S && kv; s++) {
        const struct segment *g = &sd->segs[s];
        const int32_t keys = layered ? segment_rows(g) : key_base(g, kv->page_tokens) + g->kv + g->q;
        TS_ASSERT(eng_kv_reserve(kv, g->req_id, keys, NULL) == 0);
    }
    const int64_t R = sd->tot.logit_rows;
    ts_grow((void **)&p->logit_idx, &p->cap_R, (size_t)R, sizeof(int32_t));
    p->R = (int32_t)R;
    p->X = p->num_probe = p->probe_rows = p->max_probe = 0;
    p->evict = p->widen = false;
    if (eng_plan_evicting(sd)) {
        plan_evicting(p, kv, sd, vocab, seed);
        return 0;
    }
    if (eng_plan_widening(sd)) {
        plan_widening(p, kv, sd, vocab, seed);
        return 0;
    }
    if (!layered) {
        fill_rows(p, kv, sd, vocab, seed, NULL, false, false);
        fill_logits(p, sd);
        fill_tiles(p);
        if (p->front) {
            eng_plan_free(p->front);
            free(p->front);
            p->front = NULL;
        }
        return 0;
    }
    const bool front = sd->tot.split_segs > 0 && sd->front_layers > 0;
    if (front && !p->front) {
        p->front = xmalloc(sizeof *p->front);
        eng_plan_init(p->front);
    }
    struct eng_plan *fp = front ? p->front : NULL;
    int32_t *x0 = xmalloc(sizeof *x0 * (size_t)(S ? S : 1));
    fill_hidden(p, fp, kv, sd, vocab, seed, x0);
    fill_rows(p, kv, sd, vocab, seed, x0, false, false);
    fill_tiles(p);
    for (int32_t s = 0, n = 0; s < S; s++) /* the picked rows follow each probing segment's fixed ones */
        if (sd->segs[s].probe > 0) {
            p->probe[5 * n + 3] = p->q_start[s] + sd->segs[s].q - sd->segs[s].picked;
            n++;
        }
    if (fp) {
        fill_rows(fp, kv, sd, vocab, seed, x0, true, false);
        fill_tiles(fp);
        fp->R = 0;
    } else if (p->front) {
        eng_plan_free(p->front);
        free(p->front);
        p->front = NULL;
    }
    free(x0);
    return 0;
}

