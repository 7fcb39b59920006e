/*
 * eng_ext.h: the engine's extensions (the room engine/ext/): a mechanism that adds work of its own to
 * a step, beside the forward every policy's steps run. One file an extension (ext_NAME.c: its state,
 * its hooks and its entry points, declared in ext_NAME.h) and one row of the table (eng_ext.c); the forward
 * (engine/gpu/) calls each row's hooks at fixed points, in the table's order, and names no mechanism.
 *
 * The points, in the order of a step:
 *   refused       at eng_create, the extension on: the options it takes, checked (0, or the message),
 *                 after the table has checked its room (both 0, or both positive) and one_gpu's demand;
 *   reserve       at eng_create: device bytes it holds, taken from the KV pool's budget;
 *   create        at eng_create: its state (state_bytes, zeroed) and buffers; destroy frees them;
 *   refuse_step   before a step is planned: pending's demand, then 0 or why the step cannot run
 *                 (nothing has changed yet);
 *   prepare       once the step's plan is built: its per-step inputs checked and uploaded;
 *   after_embed   after the embedding of a step whose rows are the same in every layer;
 *   before_attention / after_attention: in each layer over the step's own plan (the attention's
 *                 arguments, the layer's qkv rows and its K pool): every layer of a step whose rows
 *                 are the same in every layer, the later layers of an evicting or widening step (an
 *                 extension that needs the former refuses the latter by `pending`);
 *   after_layers  after the last layer;
 *   head_sampled  per LM-head chunk, after the argmax and confidence (timed as the sampling);
 *   head_chunk    then, after every extension's head_sampled;
 *   step_done     after the step ran (eng_step): its results become the next step's inputs;
 *   release       a request released (eng_release): what the extension keeps for it, dropped.
 * Every hook may be NULL. An extension's entry points (eng_drift_next, ...) set what its next step
 * does; without them its hooks do nothing, but where a step's own knobs ask for its work
 * (step_desc.iter_smooth: IterSmooth's products, kept or not) or the extension names its own entries
 * from the step (SparseD's, with the prompts' lengths eng_tokens gives).
 */
#ifndef TESSERA_ENG_EXT_H
#define TESSERA_ENG_EXT_H

#include "eng_internal.h"

struct gen_ext;

/* One LM-head chunk: its logits [rows, vocab] and its rows' argmax, max and confidence from row c0. */
struct eng_chunk {
    bf16_t *logits;
    int rows, c0;
    int32_t *tok;
    float *maxv, *conf;
};

struct eng_ext {
    enum eng_ext_id id; /* its declaration (sim/core/eng_ext_decl.h: its name, what it does) and its room,
                         * eng_opts.room[id]: on where that names requests */
    size_t state_bytes; /* its state, zeroed at creation (e->ext[i]) */
    /* What it asks of the engine and its steps, checked by the table for it: with one_gpu, an engine
     * made with it on runs on one GPU over the KV pool (no tensor parallelism, not stateless); with
     * pending, a step it has work in (its entry points set) has the same rows in every layer (no
     * feature cache, front shapes or eviction). */
    bool one_gpu;
    bool (*pending)(const void *st);
    int (*refused)(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err);
    int64_t (*reserve)(const struct eng *e);
    int (*create)(struct eng *e, void *st, struct ts_err *err);
    void (*destroy)(struct eng *e, void *st);
    int (*refuse_step)(const struct eng *e, const void *st, const struct step_desc *sd, bool split,
                       struct ts_err *err);
    int (*prepare)(struct eng *e, void *st, const struct step_desc *sd, bool split, struct ts_err *err);
    int (*after_embed)(struct eng *e, void *st, bf16_t *x, struct ts_err *err);
    void (*before_attention)(const struct eng *e, const void *st, int L, struct k_attn_args *aa);
    int (*after_attention)(struct eng *e, void *st, int L, const struct k_attn_args *aa, const bf16_t *qkv,
                           const bf16_t *kp, struct ts_err *err);
    int (*after_layers)(struct eng *e, void *st, int layers, struct ts_err *err);
    int (*head_sampled)(struct eng *e, void *st, const struct eng_chunk *c, struct ts_err *err);
    int (*head_chunk)(struct eng *e, void *st, const struct eng_chunk *c, struct ts_err *err);
    void (*step_done)(struct eng *e, void *st, const struct step_desc *sd);
    void (*release)(struct eng *e, void *st, int32_t req_id);
    const struct gen_ext *gen; /* its hooks in `tessera engine generate` (gen_ext.h); NULL: none */
};

/* The table (eng_ext.c), eng_num_exts rows. */
extern const struct eng_ext *const eng_exts[];
extern const int eng_num_exts;

/* Extension x's state in e (its row's, by the rows e was made with). */
static inline void *eng_ext_state(const struct eng *e, const struct eng_ext *x)
{
    for (int i = 0; i < ENG_EXT_MAX; i++)
        if (e->ext_row[i] == x)
            return e->ext[i];
    TS_ASSERT(!"an extension outside the table");
    return NULL;
}

/* The hooks of every row at one point, in order: the first failure is returned. */
int eng_exts_refused(const struct model_cfg *m, const struct eng_opts *o, struct ts_err *err);
int64_t eng_exts_reserve(const struct eng *e);
int eng_exts_create(struct eng *e, struct ts_err *err);
void eng_exts_destroy(struct eng *e);
int eng_exts_refuse_step(const struct eng *e, const struct step_desc *sd, bool split, struct ts_err *err);
int eng_exts_prepare(struct eng *e, const struct step_desc *sd, bool split, struct ts_err *err);
int eng_exts_after_embed(struct eng *e, bf16_t *x, struct ts_err *err);
void eng_exts_before_attention(const struct eng *e, int L, struct k_attn_args *aa);
int eng_exts_after_attention(struct eng *e, int L, const struct k_attn_args *aa, const bf16_t *qkv, const bf16_t *kp,
                             struct ts_err *err);
int eng_exts_after_layers(struct eng *e, int layers, struct ts_err *err);
int eng_exts_head_sampled(struct eng *e, const struct eng_chunk *c, struct ts_err *err);
int eng_exts_head_chunk(struct eng *e, const struct eng_chunk *c, struct ts_err *err);
void eng_exts_step_done(struct eng *e, const struct step_desc *sd);
void eng_exts_release(struct eng *e, int32_t req_id);

#endif
