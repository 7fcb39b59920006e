/* eng_plan.c: the KV page table and step planning. */
#include "eng_plan.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"

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
    while (need-- > 0)
        r->pages[r->num_pages++] = kv->free_pages[--kv->num_free];
    return 0;
}

void eng_kv_release(struct eng_kv *kv, int32_t req_id)
{
    if (req_id < 0 || req_id >= kv->num_reqs)
        return;
    struct eng_kv_req *r = &kv->reqs[req_id];
    while (r->num_pages > 0)
        kv->free_pages[kv->num_free++] = r->pages[--r->num_pages];
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

int eng_plan_build(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd,
                   int32_t vocab, uint64_t seed, struct ts_err *err)
{
    const int32_t S = sd->num_segs;
    int64_t T = sd->tot.q_tokens, R = sd->tot.logit_rows;
    const int32_t page_tokens = kv ? kv->page_tokens : 1;
    /* what the engine does not run yet: per-layer shapes and a feature cache (dLLM-Cache, FOCUS) */
    if (sd->cache_outputs)
        return ts_fail(err, "step refused: the engine keeps no feature cache (dLLM-Cache's attention and FFN "
                            "outputs); price such runs with the cost model");
    for (int32_t s = 0; s < S; s++)
        if (sd->segs[s].q_front > 0 || sd->segs[s].probe > 0 || sd->segs[s].carry > 0)
            return ts_fail(err, "step refused: request %d's segment has %s, which the engine does not run; price "
                                "such runs with the cost model", sd->segs[s].req_id,
                           sd->segs[s].q_front > 0 ? "a front shape (q_front)" : "probe or carried rows");
    /* check the pool first, so that a refused step changes nothing */
    int64_t need_pages = 0;
    for (int32_t s = 0; s < S && !kv; s++)
        if (sd->segs[s].kv > 0 || sd->segs[s].keep > 0)
            return ts_fail(err, "step refused: request %d %s, but the engine is stateless (no KV pool)",
                           sd->segs[s].req_id, sd->segs[s].kv > 0 ? "reads cached tokens" : "selects tokens to keep");
    for (int32_t s = 0; s < S && kv; s++) {
        const struct segment *g = &sd->segs[s];
        int32_t have = g->req_id < kv->num_reqs ? kv->reqs[g->req_id].num_pages : 0;
        int32_t want = (key_base(g, kv->page_tokens) + g->kv + g->q + kv->page_tokens - 1) / kv->page_tokens;
        for (int32_t t = 0; t < s; t++) /* a request twice in one step is a scheduler bug */
            TS_ASSERTF(sd->segs[t].req_id != g->req_id, "request %d twice in a step", g->req_id);
        need_pages += TS_MAX(want - have, 0);
    }
    if (kv && need_pages > kv->num_free)
        return ts_fail(err, "step refused: its segments need %lld more KV pages, %d of %d are free",
                       (long long)need_pages, kv->num_free, kv->num_pages);
    void **const per_token[] = {(void **)&p->tok_pos, (void **)&p->tok_slot, (void **)&p->tok_ids};
    void **const per_seg[] = {(void **)&p->q_start, (void **)&p->q_len, (void **)&p->key_len,
                              (void **)&p->kv_cached, (void **)&p->page_off};
    ts_grow_group(per_token, 3, &p->cap_T, (size_t)T, sizeof(int32_t));
    ts_grow_group(per_seg, 5, &p->cap_S, (size_t)S, sizeof(int32_t));
    ts_grow((void **)&p->logit_idx, &p->cap_R, (size_t)R, sizeof(int32_t));

    int32_t row = 0, nref = 0, ntiles = 0, r = 0, max_keys = 0, min_q = INT32_MAX, max_q = 0;
    p->num_sel = p->max_cand = p->max_keep = 0;
    for (int32_t s = 0; s < S; s++) {
        const struct segment *g = &sd->segs[s];
        int32_t keys = g->kv + g->q, base = kv ? key_base(g, kv->page_tokens) : 0;
        max_keys = TS_MAX(max_keys, keys);
        min_q = TS_MIN(min_q, g->q);
        max_q = TS_MAX(max_q, g->q);
        TS_ASSERT(!kv || eng_kv_reserve(kv, g->req_id, base + keys, NULL) == 0);
        p->q_start[s] = row;
        p->q_len[s] = g->q;
        p->key_len[s] = keys;
        p->kv_cached[s] = g->kv;
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
        for (int32_t i = 0; i < g->q; i++) {
            int32_t pos = g->kv + i;
            p->tok_pos[row + i] = pos;
            p->tok_slot[row + i] = kv ? eng_kv_slot(kv, g->req_id, base + pos) : row + i;
            uint64_t h = ts_mix64(seed ^ ts_mix64(((uint64_t)(uint32_t)g->req_id << 32) | (uint32_t)pos));
            p->tok_ids[row + i] = (int32_t)(h % (uint64_t)vocab);
        }
        for (int32_t i = g->q - g->logit_rows; i < g->q; i++)
            p->logit_idx[r++] = row + i;
        row += g->q;
    }
    /* the query tiles in the order the attention kernels want (attn_tiles) */
    for (int32_t s = 0; s < S; s++)
        ntiles += (sd->segs[s].q + ATTN_TILE_M - 1) / ATTN_TILE_M;
    ts_grow((void **)&p->tiles, &p->cap_tiles, (size_t)(2 * ntiles), sizeof(int32_t));
    int long_tiles = 0, long_rows = 0, wg_tiles = 0;
    ntiles = attn_tiles(S, p->q_len, p->tiles, &long_tiles, &long_rows, &wg_tiles);
    p->T = (int32_t)T;
    p->S = S;
    p->R = (int32_t)R;
    p->num_tiles = ntiles;
    p->num_page_refs = nref;
    p->max_key_len = max_keys;
    p->min_q = S > 0 ? min_q : 0;
    p->max_q = max_q;
    p->long_tiles = long_tiles;
    p->long_rows = long_rows;
    p->wg_tiles = wg_tiles;
    return 0;
}
