/*
 * eng_ext.c: the extension table and its dispatch (eng_ext.h). Adding an extension: its file
 * ext_NAME.c defining `const struct eng_ext ext_NAME` (its entry points declared in ext_NAME.h), its
 * declaration and id in sim/core/eng_ext_decl.c and .h, and one line below. The order of the rows is
 * the order of their hooks: IterSmooth keeps the plain rows' max and confidence before credit
 * decoding fuses its rows into them.
 */
#include "eng_ext.h"

#include <stdlib.h>

#include "eng_ext_decl.h"
#include "gen_ext.h"

extern const struct eng_ext ext_sparsed, ext_drift, ext_rollout, ext_smooth, ext_credit;

const struct eng_ext *const eng_exts[] = {
    &ext_sparsed, /* SparseD's patterns of kept key blocks, built, then attended by */
    &ext_drift,   /* Elastic-Cache's drift test, measured */
    &ext_rollout, /* d2Cache's attention rollout, measured */
    &ext_smooth,  /* dInfer's IterSmooth: soft embeddings of the masked rows */
    &ext_credit,  /* dInfer's credit decoding: logits fused with each row's credits */
};
const int eng_num_exts = (int)TS_ARRAY_LEN(eng_exts);
_Static_assert(TS_ARRAY_LEN(eng_exts) <= ENG_EXT_MAX, "the table outgrows struct eng's ext[]");

/* Extension x's declaration. */
static const struct eng_ext_decl *decl(const struct eng_ext *x)
{
    const struct eng_ext_decl *d = eng_ext_decl_get((int)x->id);
    TS_ASSERTF(d && x->id < EXT_ENGINE_IDS, "the engine's extension %d has no declaration (sim/core/eng_ext_decl.c)",
               (int)x->id);
    return d;
}

int eng_exts_refused(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++) {
        const struct eng_ext *x = eng_exts[i];
        const struct eng_ext_room r = o->room[x->id];
        if (r.requests < 0 || r.positions < 0 || (r.requests > 0) != (r.positions > 0))
            return ts_fail(err, "engine: the extension %s (%s): room for %d requests of %d positions (both 0, or both "
                                "positive)", decl(x)->name, decl(x)->what, r.requests, r.positions);
        if (r.requests == 0)
            continue;
        if (x->one_gpu && (o->tp_size > 1 || o->stateless))
            return ts_fail(err, "engine: the extension %s (%s) runs on one GPU, over the KV pool", decl(x)->name,
                           decl(x)->what);
        if (x->refused && x->refused(m, o, err))
            return -1;
    }
    return 0;
}

int64_t eng_exts_reserve(const struct eng *e)
{
    int64_t bytes = 0;
    for (int i = 0; i < eng_num_exts; i++)
        bytes += eng_exts[i]->reserve ? eng_exts[i]->reserve(e) : 0;
    return bytes;
}

int eng_exts_create(struct eng *e, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++) {
        (void)decl(eng_exts[i]); /* (every row declared) */
        e->ext_row[i] = eng_exts[i];
        e->ext[i] = xcalloc(1, eng_exts[i]->state_bytes ? eng_exts[i]->state_bytes : 1);
        if (eng_exts[i]->create && eng_exts[i]->create(e, e->ext[i], err))
            return -1;
    }
    return 0;
}

void eng_exts_destroy(struct eng *e)
{
    for (int i = 0; i < eng_num_exts; i++) {
        if (e->ext[i] && eng_exts[i]->destroy)
            eng_exts[i]->destroy(e, e->ext[i]);
        free(e->ext[i]);
        e->ext[i] = NULL;
    }
}

int eng_exts_refuse_step(const struct eng *e, const struct step_desc *sd, bool split, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++) {
        const struct eng_ext *x = eng_exts[i];
        if (split && x->pending && x->pending(e->ext[i]))
            return ts_fail(err, "step refused: the extension %s (%s) runs in steps whose rows are the same in every "
                                "layer (no feature cache, front shapes or eviction)", decl(x)->name, decl(x)->what);
        if (x->refuse_step && x->refuse_step(e, e->ext[i], sd, split, err))
            return -1;
    }
    return 0;
}

int eng_exts_prepare(struct eng *e, const struct step_desc *sd, bool split, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->prepare && eng_exts[i]->prepare(e, e->ext[i], sd, split, err))
            return -1;
    return 0;
}

int eng_exts_after_embed(struct eng *e, bf16_t *x, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->after_embed && eng_exts[i]->after_embed(e, e->ext[i], x, err))
            return -1;
    return 0;
}

void eng_exts_before_attention(const struct eng *e, int L, struct k_attn_args *aa)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->before_attention)
            eng_exts[i]->before_attention(e, e->ext[i], L, aa);
}

int eng_exts_after_attention(struct eng *e, int L, const struct k_attn_args *aa, const bf16_t *qkv, const bf16_t *kp,
                             struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->after_attention && eng_exts[i]->after_attention(e, e->ext[i], L, aa, qkv, kp, err))
            return -1;
    return 0;
}

int eng_exts_after_layers(struct eng *e, int layers, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->after_layers && eng_exts[i]->after_layers(e, e->ext[i], layers, err))
            return -1;
    return 0;
}

int eng_exts_head_sampled(struct eng *e, const struct eng_chunk *c, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->head_sampled && eng_exts[i]->head_sampled(e, e->ext[i], c, err))
            return -1;
    return 0;
}

int eng_exts_head_chunk(struct eng *e, const struct eng_chunk *c, struct ts_err *err)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->head_chunk && eng_exts[i]->head_chunk(e, e->ext[i], c, err))
            return -1;
    return 0;
}

void eng_exts_step_done(struct eng *e, const struct step_desc *sd)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->step_done)
            eng_exts[i]->step_done(e, e->ext[i], sd);
}

void eng_exts_release(struct eng *e, int32_t req_id)
{
    for (int i = 0; i < eng_num_exts; i++)
        if (eng_exts[i]->release)
            eng_exts[i]->release(e, e->ext[i], req_id);
}

const struct gen_ext *eng_ext_gen(int i, enum eng_ext_id *id)
{
    for (int r = 0; r < eng_num_exts; r++)
        if (eng_exts[r]->gen && i-- == 0) {
            *id = eng_exts[r]->id;
            return eng_exts[r]->gen;
        }
    return NULL;
}

struct eng_ext_room gen_ext_every_position(const struct gen *g)
{
    return (struct eng_ext_room){g->c.requests, gen_longest(g)};
}
