/*
 * ext_sparsed.c: SparseD's patterns on the engine (eng_sparsed_next, eng_sparsed_pattern; kernels.h
 * k_sparsed_pattern): an extension (eng_ext.h). A building entry's patterns are scored from each
 * layer's queries and keys after its attention; an attending entry's segment attends by its request's
 * pattern (the attention's kb_* arguments, set before each layer's attention). A request holds a slot
 * of the room from the step that first builds its pattern until eng_release.
 */
#define _POSIX_C_SOURCE 200809L
#include "ext_sparsed.h"

#include "eng_ext.h"
#include "gen_ext.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sparsed {
    /* each slot's kept key blocks a layer, head and query block, [layers][requests][H][sp_qb] counts
     * and [...][sp_qb] blocks; the scoring's scratch; each segment's first pattern entry (-1: dense)
     * for the attention, and its pinned twin; the next step's entries; each slot's positions once
     * built (0: none) */
    int32_t *sp_cnt, *sp_base, *h_sp_base;
    int16_t *sp_list;
    float *sp_part;
    int32_t sp_qb, sp_n, sp_sparse, *sp_N;
    struct eng_sparsed_req *sp;
    int32_t *sp_slot;               /* each entry's slot */
    int32_t *slot_of, num_ids;      /* each request id's slot (-1: none), for ids below num_ids */
    int32_t *free_slots, num_free;  /* the slots no request holds */
    bool own;                       /* the entries are the step's own (entries_of_step), made again for
                                     * each step it prepares, not the harness's */
};

extern const struct eng_ext ext_sparsed;

/* The room the engine keeps for SparseD's patterns: its requests and each one's positions. */
static struct eng_ext_room room(const struct eng *e) { return e->o.room[EXT_SPARSED]; }
static int sparsed_build(struct eng *e, const struct sparsed *x, int L, const struct k_attn_args *aa,
                         struct ts_err *err);

/* SparseD's patterns' buffers (eng_opts.room) */
static int64_t sparsed_reserve(const struct eng *e)
{
    if (room(e).positions <= 0)
        return 0;
    const int64_t qb = (room(e).positions + e->o.ext.sparsed_block - 1) / e->o.ext.sparsed_block;
    return (int64_t)e->m.num_layers * room(e).requests * e->m.num_heads * qb * (4 + 2 * qb) +
           k_sparsed_part_bytes(room(e).positions, e->m.num_heads) + (int64_t)e->o.max_tokens * 4;
}

/* SparseD's patterns' buffers (sparsed_reserve), where the engine is made with them. */
static int sparsed_create(struct eng *e, void *st, struct ts_err *err)
{
    struct sparsed *x = st;
    if (room(e).positions <= 0)
        return 0;
    const int64_t R = room(e).requests, H = e->m.num_heads;
    x->sp_qb = (room(e).positions + e->o.ext.sparsed_block - 1) / e->o.ext.sparsed_block;
    const int64_t entries = (int64_t)e->m.num_layers * R * H * x->sp_qb;
    if (eng_dev_alloc((void **)&x->sp_cnt, entries * 4, err) ||
        eng_dev_alloc((void **)&x->sp_list, entries * x->sp_qb * 2, err) ||
        eng_dev_alloc((void **)&x->sp_part, k_sparsed_part_bytes(room(e).positions, (int)H), err) ||
        eng_dev_alloc((void **)&x->sp_base, (int64_t)e->o.max_tokens * 4, err))
        return -1;
    CU(cudaMallocHost((void **)&x->h_sp_base, (size_t)e->o.max_tokens * 4));
    x->sp = xcalloc((size_t)R, sizeof *x->sp);
    x->sp_N = xcalloc((size_t)R, sizeof *x->sp_N);
    x->sp_slot = xcalloc((size_t)R, sizeof *x->sp_slot);
    x->free_slots = xmalloc(sizeof *x->free_slots * (size_t)R);
    for (int32_t i = 0; i < R; i++) /* slot 0 is taken first */
        x->free_slots[x->num_free++] = (int32_t)R - 1 - i;
    return 0;
}

/* Request req's slot, -1 where it holds none. */
static int32_t slot_of(const struct sparsed *x, int32_t req)
{
    return req >= 0 && req < x->num_ids ? x->slot_of[req] : -1;
}

/* Request req's slot, a free one taken where it holds none; -1 where none is free. */
static int32_t take_slot(struct sparsed *x, int32_t req)
{
    if (slot_of(x, req) >= 0 || x->num_free == 0)
        return slot_of(x, req);
    if (req >= x->num_ids) {
        const int32_t ids = TS_MAX(req + 1, 2 * x->num_ids);
        x->slot_of = xrealloc(x->slot_of, sizeof *x->slot_of * (size_t)ids);
        for (int32_t r = x->num_ids; r < ids; r++)
            x->slot_of[r] = -1;
        x->num_ids = ids;
    }
    return x->slot_of[req] = x->free_slots[--x->num_free];
}

/* A request released: its slot free again, its pattern gone. */
static void sparsed_release(struct eng *e, void *st, int32_t req)
{
    struct sparsed *x = st;
    (void)e;
    const int32_t s = slot_of(x, req);
    if (s < 0)
        return;
    x->sp_N[s] = 0;
    x->slot_of[req] = -1;
    x->free_slots[x->num_free++] = s;
}

static int set_entries(struct eng *e, struct sparsed *x, const struct eng_sparsed_req *r, int32_t n,
                       struct ts_err *err);

/* A step whose harness named no entries (eng_sparsed_next): one for each segment with a pattern
 * (attn_keys > 0), a building one where its attention scores more keys than its rows see
 * (segment_builds_pattern), its prompt's length from eng_tokens.prompt. */
static int entries_of_step(struct eng *e, struct sparsed *x, const struct step_desc *sd, struct ts_err *err)
{
    struct eng_sparsed_req *q = xmalloc(sizeof *q * (size_t)TS_MAX(sd->num_segs, 1));
    int32_t n = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        if (g->attn_keys > 0)
            q[n++] = (struct eng_sparsed_req){s, g->req_id, e->tokens.prompt(e->tokens.ctx, g->req_id),
                                              segment_builds_pattern(g)};
    }
    const int rc = n > 0 ? set_entries(e, x, q, n, err) : 0;
    free(q);
    return rc;
}

/* The step's SparseD entries (eng_sparsed_next) against its plan: each names a segment of every
 * position of its request over no cached keys, a sparse one as many positions as its pattern's. */
static int sparsed_check(struct eng *e, void *st, const struct step_desc *sd, bool split, struct ts_err *err)
{
    struct sparsed *x = st;
    (void)split;
    if (x->own) /* (a step refused after they were made, or captured without step_done, leaves them) */
        x->sp_n = 0, x->own = false;
    if (x->sp_n == 0 && e->tokens.prompt) {
        if (entries_of_step(e, x, sd, err))
            return -1;
        x->own = x->sp_n > 0;
    }
    const struct eng_plan *p = &e->plan;
    for (int32_t i = 0; i < x->sp_n; i++) {
        const struct eng_sparsed_req *r = &x->sp[i];
        if (r->seg >= p->S || p->kv_cached[r->seg] != 0 || p->q_len[r->seg] != p->key_len[r->seg] ||
            p->q_len[r->seg] > room(e).positions)
            return ts_fail(err, "SparseD: entry %d names segment %d, which does not run its request's positions "
                                "alone (at most %d)", i, r->seg, room(e).positions);
        if (!r->build && p->q_len[r->seg] != x->sp_N[x->sp_slot[i]])
            return ts_fail(err, "SparseD: entry %d attends by request %d's pattern, built over %d positions, with %d",
                           i, r->req, x->sp_N[x->sp_slot[i]], p->q_len[r->seg]);
    }
    return 0;
}

/* Layer L's SparseD patterns (eng_sparsed_next): the attention's pattern pointers for the layer, or
 * (after its attention) the patterns its building entries build from its queries and keys. */
static void sparsed_layer_args(const struct eng *e, const void *st, int L, struct k_attn_args *aa)
{
    const struct sparsed *x = st;
    if (x->sp_n <= 0)
        return;
    const int64_t layer = (int64_t)L * room(e).requests * e->m.num_heads * x->sp_qb;
    aa->kb_base = x->sp_sparse > 0 ? x->sp_base : NULL;
    aa->kb_cnt = x->sp_cnt + layer, aa->kb_list = x->sp_list + layer * x->sp_qb;
    aa->kb_block = e->o.ext.sparsed_block, aa->kb_qblocks = x->sp_qb, aa->kb_stride = x->sp_qb;
}

static int sparsed_layer(struct eng *e, void *st, int L, const struct k_attn_args *aa, const bf16_t *qkv,
                         const bf16_t *kp, struct ts_err *err)
{
    const struct sparsed *x = st;
    (void)qkv, (void)kp;
    if (x->sp_n <= 0)
        return 0;
    if (eng_runs(e, OP_ATTN) && sparsed_build(e, x, L, aa, err)) /* timed with the attention */
        return -1;
    eng_mark(e, OP_ATTN);
    return 0;
}

static int sparsed_build(struct eng *e, const struct sparsed *x, int L, const struct k_attn_args *aa,
                         struct ts_err *err)
{
    const int b = e->o.ext.sparsed_block, H = e->m.num_heads;
    for (int32_t i = 0; i < x->sp_n; i++) {
        const struct eng_sparsed_req *r = &x->sp[i];
        if (!r->build)
            continue;
        const int N = e->plan.q_len[r->seg], nb = (N + b - 1) / b;
        const int64_t at = ((int64_t)L * room(e).requests + x->sp_slot[i]) * H * x->sp_qb;
        const struct k_sparsed_args a = {
            .at = aa, .seg = r->seg, .N = N, .block = b, .last = TS_MIN((r->prompt + b - 1) / b, nb - 1),
            .qblocks = x->sp_qb, .stride = x->sp_qb, .select = e->o.ext.sparsed_select,
            .scale = 1.0f / sqrtf((float)H), /* SparseD's: its scores divide by sqrt(heads) */
            .part = x->sp_part, .imp = NULL, .cnt = x->sp_cnt + at, .list = x->sp_list + at * x->sp_qb};
        KL(k_sparsed_pattern(&a, e->stream));
    }
    return 0;
}

int eng_sparsed_next(struct eng *e, const struct eng_sparsed_req *r, int32_t n, struct ts_err *err)
{
    struct sparsed *x = eng_ext_state(e, &ext_sparsed);
    x->own = false;
    return set_entries(e, x, r, n, err);
}

static int set_entries(struct eng *e, struct sparsed *x, const struct eng_sparsed_req *r, int32_t n,
                       struct ts_err *err)
{
    if (room(e).positions <= 0)
        return ts_fail(err, "SparseD: the engine keeps no patterns (eng_opts.room)");
    if (n < 0 || n > room(e).requests)
        return ts_fail(err, "SparseD: %d requests in a step (the engine keeps room for %d: a live run --max-batch "
                            "of them, at most 64)", n, room(e).requests);
    for (int32_t s = 0; s < e->o.max_tokens; s++)
        x->h_sp_base[s] = -1;
    int32_t sparse = 0;
    for (int32_t i = 0; i < n; i++) {
        if (r[i].seg < 0 || r[i].seg >= e->o.max_tokens || r[i].req < 0 || r[i].prompt < 0)
            return ts_fail(err, "SparseD: entry %d (segment %d, request %d, prompt %d) out of range", i, r[i].seg,
                           r[i].req, r[i].prompt);
        for (int32_t j = 0; j < i; j++)
            if (r[j].req == r[i].req || r[j].seg == r[i].seg)
                return ts_fail(err, "SparseD: entries %d and %d name the same request or segment", j, i);
        const int32_t slot = r[i].build ? take_slot(x, r[i].req) : slot_of(x, r[i].req);
        if (slot < 0 && r[i].build)
            return ts_fail(err, "SparseD: request %d's pattern: each of the %d slots the engine keeps room for holds "
                                "another request's (a live run keeps --max-batch of them, at most 64)", r[i].req,
                           room(e).requests);
        if (!r[i].build && (slot < 0 || x->sp_N[slot] <= 0))
            return ts_fail(err, "SparseD: entry %d attends by request %d's pattern, which is not built", i, r[i].req);
        if (!r[i].build)
            x->h_sp_base[r[i].seg] = slot * e->m.num_heads * x->sp_qb, sparse++;
        x->sp[i] = r[i];
        x->sp_slot[i] = slot;
    }
    CU(cudaMemcpyAsync(x->sp_base, x->h_sp_base, sizeof(int32_t) * (size_t)e->o.max_tokens, cudaMemcpyHostToDevice,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    x->sp_n = n, x->sp_sparse = sparse;
    return 0;
}

int eng_sparsed_pattern(struct eng *e, int32_t req_id, uint8_t *keep, int32_t *nb, struct ts_err *err)
{
    const struct sparsed *x = eng_ext_state(e, &ext_sparsed);
    const int32_t req = room(e).positions > 0 ? slot_of(x, req_id) : -1; /* (its slot) */
    if (req < 0 || x->sp_N[req] <= 0)
        return -1;
    const int64_t H = e->m.num_heads, Q = x->sp_qb, R = room(e).requests;
    const int32_t n = (x->sp_N[req] + e->o.ext.sparsed_block - 1) / e->o.ext.sparsed_block;
    int32_t *cnt = xmalloc(sizeof *cnt * (size_t)(H * Q));
    int16_t *list = xmalloc(sizeof *list * (size_t)(H * Q * Q));
    int rc = 0;
    for (int L = 0; L < e->m.num_layers && !rc; L++) {
        const int64_t at = ((int64_t)L * R + req) * H * Q;
        if (cudaMemcpy(cnt, x->sp_cnt + at, sizeof *cnt * (size_t)(H * Q), cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(list, x->sp_list + at * Q, sizeof *list * (size_t)(H * Q * Q), cudaMemcpyDeviceToHost) !=
                cudaSuccess) {
            rc = ts_fail(err, "SparseD: reading request %d's pattern: %s", req_id,
                         cudaGetErrorString(cudaGetLastError()));
            break;
        }
        uint8_t *kl = keep + (size_t)L * H * n * n;
        memset(kl, 0, (size_t)(H * n * n));
        for (int64_t h = 0; h < H; h++)
            for (int32_t qb = 0; qb < n; qb++)
                for (int32_t j = 0; j < cnt[h * Q + qb] && j < n; j++)
                    kl[(h * n + qb) * n + list[(h * Q + qb) * Q + j]] = 1;
    }
    free(cnt), free(list);
    *nb = n;
    return rc;
}

static int sparsed_refused(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err)
{
    (void)m;
    const struct eng_ext_params *x = &o->ext;
    if (x->sparsed_block < 64 || x->sparsed_block % 64 || !(x->sparsed_select >= 0 && x->sparsed_select <= 1))
        return ts_fail(err, "SparseD's patterns: a block of %d rows (--sparsed-block: a multiple of 64), a select of "
                            "%g (--sparsed-select: 0 to 1)", o->ext.sparsed_block, o->ext.sparsed_select);
    return 0;
}

static void sparsed_destroy(struct eng *e, void *st)
{
    struct sparsed *x = st;
    (void)e;
    void *dev[] = {x->sp_cnt, x->sp_list, x->sp_part, x->sp_base};
    for (size_t i = 0; i < TS_ARRAY_LEN(dev); i++)
        if (dev[i])
            cudaFree(dev[i]);
    if (x->h_sp_base)
        cudaFreeHost(x->h_sp_base);
    free(x->sp), free(x->sp_N), free(x->sp_slot), free(x->slot_of), free(x->free_slots);
}

/* A segment of a sparse pattern (attn_keys) runs only as an entry names it: the harness's
 * (eng_sparsed_next), or, where it names none, the step's own (entries_of_step, with the prompts'
 * lengths that eng_tokens.prompt gives), in a step whose rows are the same in every layer. */
static int sparsed_refuse_step(const struct eng *e, const void *st, const struct step_desc *sd, bool split,
                               struct ts_err *err)
{
    const struct sparsed *x = st;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        bool named = false;
        for (int32_t i = 0; i < x->sp_n && !x->own && !named; i++)
            named = x->sp[i].seg == s;
        const bool own = (x->sp_n == 0 || x->own) && e->tokens.prompt && !split && room(e).requests > 0;
        if (sd->segs[s].attn_keys > 0 && !named && !own)
            return ts_fail(err, "step refused: request %d's segment has a sparse attention pattern (attn_keys) that "
                                "no SparseD entry names (an engine made without room for SparseD, a step whose rows "
                                "differ by layer, or prompts the engine does not know: eng_tokens.prompt), which the "
                                "engine does not run; price such runs with the cost model", sd->segs[s].req_id);
    }
    return 0;
}

/* the patterns built are the slots' now */
static void sparsed_step_done(struct eng *e, void *st, const struct step_desc *sd)
{
    struct sparsed *x = st;
    (void)sd;
    for (int32_t i = 0; i < x->sp_n; i++)
        if (x->sp[i].build)
            x->sp_N[x->sp_slot[i]] = e->plan.q_len[x->sp[i].seg];
    x->sp_n = 0, x->own = false;
}

static bool sparsed_pending(const void *st) { return ((const struct sparsed *)st)->sp_n > 0; }

/* --- in a generation (gen_ext.h): under a policy that needs it, the patterns counted --------------- */

/* the patterns built, and over their layers, heads and query blocks, pass 1's top blocks and those of
 * them in the prompt */
struct sparsed_gen {
    int64_t built, top, prompt;
};

static bool sparsed_gen_on(const struct gen *g, const struct unmask_rule *u)
{
    (void)u;
    return g->c.policy && eng_ext_named(g->c.policy->engine, eng_ext_decl_get(EXT_SPARSED)->name);
}

/* After the step: each pattern it built read back, pass 1's top blocks counted and those of them in the
 * prompt (the simulator's --sparsed-prompt-share: the share of them there). The step's entries are its
 * own (eng_tokens.prompt: gen_tokens). */
static int sparsed_gen_after(void *st, struct gen_step *s, struct ts_err *err)
{
    struct sparsed_gen *x = st;
    const int32_t b = s->e->o.ext.sparsed_block, layers = s->e->m.num_layers, heads = s->e->m.num_heads;
    for (int32_t i = 0; i < s->sd->num_segs; i++) {
        const struct segment *g = &s->sd->segs[i];
        if (!segment_builds_pattern(g))
            continue;
        const int32_t nb = (g->q + b - 1) / b, last = TS_MIN((s->g->r[g->req_id].P + b - 1) / b, nb - 1);
        const int32_t top = TS_MIN(nb, (int32_t)(nb * s->e->o.ext.sparsed_select) + 1);
        uint8_t *keep = xmalloc((size_t)layers * heads * nb * nb);
        int32_t got = 0;
        if (eng_sparsed_pattern(s->e, g->req_id, keep, &got, err) || got != nb) {
            free(keep);
            return ts_fail(err, "SparseD: request %d's pattern not built", g->req_id);
        }
        for (int64_t row = 0; row < (int64_t)layers * heads * nb; row++) {
            for (int32_t k = 0; k < last; k++)
                x->prompt += keep[row * nb + k];
            x->top += top;
        }
        x->built++;
        free(keep);
    }
    return 0;
}

static void sparsed_gen_report(const void *st, const struct gen *g)
{
    const struct sparsed_gen *x = st;
    (void)g;
    if (x->built > 0)
        printf("  SparseD pattern  %lld built; pass 1 kept %lld of its %lld top blocks in the prompt (a share of %.4f: "
               "sim --sparsed-prompt-share)\n", (long long)x->built, (long long)x->prompt, (long long)x->top,
               x->top ? (double)x->prompt / (double)x->top : 0);
}

static const struct gen_ext sparsed_gen = {
    .on = sparsed_gen_on, .room = gen_ext_every_position, .state_bytes = sizeof(struct sparsed_gen),
    .after = sparsed_gen_after, .report = sparsed_gen_report,
};

const struct eng_ext ext_sparsed = {
    .id = EXT_SPARSED, .state_bytes = sizeof(struct sparsed), .refused = sparsed_refused,
    .reserve = sparsed_reserve, .create = sparsed_create, .destroy = sparsed_destroy,
    .one_gpu = true, .pending = sparsed_pending,
    .refuse_step = sparsed_refuse_step, .prepare = sparsed_check, .before_attention = sparsed_layer_args,
    .after_attention = sparsed_layer, .step_done = sparsed_step_done, .release = sparsed_release,
    .gen = &sparsed_gen,
};
