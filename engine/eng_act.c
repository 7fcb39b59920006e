/* eng_act.c: reading the engine's buffer offsets out of a planned op graph. */
#include "eng_act.h"

#include <stdlib.h>
#include <string.h>

/* The shape as planned: at least one FFN chunk, logit chunks of at most R rows (0: one chunk). */
static struct og_shape normalized(const struct og_shape *s)
{
    struct og_shape n = *s;
    n.ffn_chunks = TS_MAX(1, n.ffn_chunks);
    if (n.R > 0 && (n.logit_chunk_rows <= 0 || n.logit_chunk_rows > n.R))
        n.logit_chunk_rows = (int32_t)n.R;
    return n;
}

bool eng_act_same(const struct eng_act *a, const struct og_shape *s)
{
    struct og_shape n = normalized(s);
    const struct og_shape *h = &a->shape; /* field by field: the struct has padding */
    return a->plan.offsets && h->T == n.T && h->R == n.R && h->logit_chunk_rows == n.logit_chunk_rows &&
           h->ffn_chunks == n.ffn_chunks && h->softmax_copy_bytes == n.softmax_copy_bytes &&
           h->fused_ffn == n.fused_ffn;
}

/* The next tensor of the graph, which must be of kind k (the template's order is the forward's). */
static int64_t take(const struct eng_act *a, int32_t *cursor, enum og_kind k)
{
    TS_ASSERTF(*cursor < a->g.n && a->g.t[*cursor].kind == k, "op graph out of step with the engine at "
               "tensor %d (want %s)", *cursor, og_kind_name(k));
    return a->plan.offsets[(*cursor)++];
}

int eng_act_plan(struct eng_act *a, const struct model_cfg *m, const struct og_shape *s,
                 const struct planner_ops *p, const struct planner_opts *po, struct ts_err *err)
{
    plan_free(&a->plan);
    struct og_shape shape = normalized(s);
    a->shape = shape;
    opgraph_build(&a->g, m, &shape);
    for (int32_t i = 0; i < a->g.n; i++)
        a->g.t[i].bytes = (a->g.t[i].bytes + ENG_ACT_ALIGN - 1) / ENG_ACT_ALIGN * ENG_ACT_ALIGN;
    if (planner_run(p, &a->g, po, &a->plan, err))
        return -1;
    if (!a->plan.offsets) {
        plan_free(&a->plan);
        return ts_fail(err, "engine: planner %s gives no offsets", p->name);
    }
    const int64_t T = shape.T, R = shape.R;
    a->layers = T > 0 ? m->num_layers : 0;
    a->ffn_rows = (int32_t)((T + shape.ffn_chunks - 1) / shape.ffn_chunks);
    a->ffn_chunks = a->ffn_rows > 0 ? (int32_t)((T + a->ffn_rows - 1) / a->ffn_rows) : 0;
    a->logit_rows = R > 0 ? shape.logit_chunk_rows : 0;
    a->logit_chunks = R > 0 ? (int32_t)((R + a->logit_rows - 1) / a->logit_rows) : 0;
    a->head_gathered = R > 0 && R < T;
    void **const per_layer[] = {(void **)&a->norm1, (void **)&a->qkv, (void **)&a->att, (void **)&a->norm2};
    void **const per_ffn[] = {(void **)&a->gu, (void **)&a->act};
    void **const per_logit[] = {(void **)&a->logits, (void **)&a->softmax};
    ts_grow_group(per_layer, 4, &a->cap_layers, (size_t)a->layers + 1, sizeof(int64_t));
    ts_grow_group(per_ffn, 2, &a->cap_ffn, (size_t)a->layers * (size_t)a->ffn_chunks + 1, sizeof(int64_t));
    ts_grow_group(per_logit, 2, &a->cap_logits, (size_t)a->logit_chunks + 1, sizeof(int64_t));
    const int64_t routed = T * m->experts_top_k; /* a MoE layer's copies, chunked as opgraph.c does */
    a->moe_rows = m->num_experts > 0 ? (int32_t)((routed + shape.ffn_chunks - 1) / shape.ffn_chunks) : 0;
    a->moe_chunks = a->moe_rows > 0 ? (int32_t)((routed + a->moe_rows - 1) / a->moe_rows) : 0;
    void **const per_moe[] = {(void **)&a->mgather, (void **)&a->mgu, (void **)&a->mact};
    ts_grow_group(per_moe, 3, &a->cap_moe, (size_t)a->layers * (size_t)a->moe_chunks + 1, sizeof(int64_t));
    ts_grow((void **)&a->router, &a->cap_layers_router, (size_t)a->layers + 1, sizeof(int64_t));
    int32_t cur = 0;
    a->x = T > 0 ? take(a, &cur, OG_X) : 0;
    for (int L = 0; L < a->layers; L++) {
        a->norm1[L] = take(a, &cur, OG_NORM);
        a->qkv[L] = take(a, &cur, OG_QKV);
        a->att[L] = take(a, &cur, OG_ATTN);
        a->norm2[L] = take(a, &cur, OG_NORM);
        const bool moe = model_is_moe_layer(m, L);
        a->router[L] = moe ? take(a, &cur, OG_ROUTER) : -1;
        for (int c = 0; c < a->moe_chunks && moe; c++) {
            const int i = L * a->moe_chunks + c;
            a->mgather[i] = take(a, &cur, OG_GATHER);
            a->mgu[i] = take(a, &cur, OG_GATE_UP);
            a->mact[i] = take(a, &cur, OG_ACT);
        }
        for (int c = 0; c < a->ffn_chunks && (!moe || m->num_shared_experts > 0); c++) {
            a->gu[L * a->ffn_chunks + c] = shape.fused_ffn && !moe ? -1 : take(a, &cur, OG_GATE_UP);
            a->act[L * a->ffn_chunks + c] = take(a, &cur, OG_ACT);
        }
    }
    a->head = a->head_gathered ? take(a, &cur, OG_GATHER) : a->x;
    for (int c = 0; c < a->logit_chunks; c++) {
        a->logits[c] = take(a, &cur, OG_LOGITS);
        a->softmax[c] = shape.softmax_copy_bytes > 0 ? take(a, &cur, OG_SOFTMAX) : -1;
    }
    TS_ASSERTF(cur == a->g.n, "op graph has %d tensors, the engine used %d", a->g.n, cur);
    return 0;
}

void eng_act_free(struct eng_act *a)
{
    if (!a)
        return;
    opgraph_free(&a->g);
    plan_free(&a->plan);
    void *v[] = {a->norm1, a->qkv, a->att, a->norm2, a->gu, a->act, a->logits, a->softmax, a->router, a->mgather,
                 a->mgu, a->mact};
    for (size_t i = 0; i < TS_ARRAY_LEN(v); i++)
        free(v[i]);
    memset(a, 0, sizeof *a);
}
