/*
 * check_eng_act.c: the engine's activation layout (host code, no GPU). The forward's reads and
 * writes are replayed, in the engine's order, on a shadow of the arena that records which buffer
 * last wrote each 256-byte block: every read must find its own buffer's data still there, for every
 * planner over random shapes. This is the property the GPU check confirms bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_act.h"
#include "test_util.h"

static const struct model_cfg TINY = {.name = "tiny", .num_layers = 3, .hidden = 64, .num_heads = 4,
                                      .num_kv_heads = 2, .head_dim = 64, .ffn = 160, .vocab = 97,
                                      .max_pos = 1 << 20, .rope_theta = 10000.0, .weight_bytes = 2,
                                      .kv_bytes = 2};

struct shadow {
    int32_t *owner; /* per 256-byte block */
    int64_t blocks;
    int32_t next_id;
    const char *where;
};

static int32_t wr(struct shadow *s, int64_t off, int64_t bytes)
{
    int32_t id = ++s->next_id;
    ck_assert_msg(off >= 0 && off % ENG_ACT_ALIGN == 0, "%s: misaligned offset %lld", s->where, (long long)off);
    int64_t end = (off + bytes + ENG_ACT_ALIGN - 1) / ENG_ACT_ALIGN;
    ck_assert_msg(end <= s->blocks, "%s: a buffer ends past the arena", s->where);
    for (int64_t b = off / ENG_ACT_ALIGN; b < end; b++) /* (no assertion per block: Check's are slow) */
        s->owner[b] = id;
    return id;
}

static void rd(const struct shadow *s, int64_t off, int64_t bytes, int32_t id, const char *what)
{
    int64_t b = off / ENG_ACT_ALIGN, end = (off + bytes + ENG_ACT_ALIGN - 1) / ENG_ACT_ALIGN;
    while (b < end && s->owner[b] == id)
        b++;
    ck_assert_msg(b == end, "%s: %s was overwritten before it was read", s->where, what);
}

/* The engine's forward (engine/gpu/eng_forward.c) as reads and writes: each op writes its output first, then
 * reads its inputs, since a kernel's inputs and outputs live at the same time. */
static void replay(const struct eng_act *a, const struct model_cfg *m, struct shadow *s)
{
    const int64_t T = a->shape.T, R = a->shape.R, h = m->hidden, F = m->ffn, V = m->vocab;
    const int64_t width = (int64_t)(m->num_heads + 2 * m->num_kv_heads) * m->head_dim;
    const int64_t qd = (int64_t)m->num_heads * m->head_dim, xb = T * h * 2;
    int32_t x = T > 0 ? wr(s, a->x, xb) : 0;
    for (int L = 0; L < a->layers; L++) {
        int32_t n1 = wr(s, a->norm1[L], xb);
        rd(s, a->x, xb, x, "x (norm)");
        int32_t q = wr(s, a->qkv[L], T * width * 2);
        rd(s, a->norm1[L], xb, n1, "norm1");
        int32_t at = wr(s, a->att[L], T * qd * 2);
        rd(s, a->qkv[L], T * width * 2, q, "qkv (attention)");
        rd(s, a->att[L], T * qd * 2, at, "attention output");
        rd(s, a->x, xb, x, "x (o_proj)");
        x = wr(s, a->x, xb);
        int32_t n2 = wr(s, a->norm2[L], xb);
        rd(s, a->x, xb, x, "x (norm)");
        for (int c = 0; c < a->ffn_chunks; c++) {
            int64_t rows = TS_MIN((int64_t)a->ffn_rows, T - (int64_t)c * a->ffn_rows);
            int64_t gu = a->gu[L * a->ffn_chunks + c], act = a->act[L * a->ffn_chunks + c];
            int32_t ac;
            if (a->shape.fused_ffn) { /* one kernel: norm2 in, act out */
                ck_assert_int_eq(gu, -1);
                ac = wr(s, act, rows * F * 2);
                rd(s, a->norm2[L], xb, n2, "norm2 (FFN input)");
            } else {
                int32_t g = wr(s, gu, rows * 2 * F * 2);
                rd(s, a->norm2[L], xb, n2, "norm2 (FFN input)");
                ac = wr(s, act, rows * F * 2);
                rd(s, gu, rows * 2 * F * 2, g, "gate_up");
            }
            rd(s, act, rows * F * 2, ac, "act");
            rd(s, a->x, xb, x, "x (down)");
            x = wr(s, a->x, xb);
        }
    }
    if (R == 0)
        return;
    int32_t head = x;
    if (a->head_gathered) {
        head = wr(s, a->head, R * h * 2);
        rd(s, a->x, xb, x, "x (gather)");
    }
    for (int c = 0; c < a->logit_chunks; c++) {
        int64_t rows = TS_MIN((int64_t)a->logit_rows, R - (int64_t)c * a->logit_rows);
        int32_t lg = wr(s, a->logits[c], rows * V * 2);
        rd(s, a->head, R * h * 2, head, "head rows");
        if (a->softmax[c] >= 0) {
            int32_t sm = wr(s, a->softmax[c], rows * V * a->shape.softmax_copy_bytes);
            rd(s, a->logits[c], rows * V * 2, lg, "logits (softmax copy)");
            rd(s, a->softmax[c], rows * V * a->shape.softmax_copy_bytes, sm, "softmax");
        }
        rd(s, a->logits[c], rows * V * 2, lg, "logits (argmax)");
    }
}

START_TEST(layout_survives_the_forward)
{
    srand(21);
    const char *planners[] = {"first-fit", "greedy-size", "caching", "profiled"};
    struct planner_opts po;
    planner_opts_defaults(&po);
    struct eng_act a = {0};
    char where[160];
    for (int k = 0; k < 160; k++) {
        struct og_shape sh = {.T = 1 + rand() % 3000, .ffn_chunks = 1 + rand() % 5,
                              .softmax_copy_bytes = rand() % 3 ? 0 : 4};
        sh.R = rand() % 2 ? sh.T : rand() % (sh.T + 1);
        sh.logit_chunk_rows = rand() % 2 ? 0 : 1 + rand() % 700;
        sh.fused_ffn = rand() % 2;
        const char *name = planners[k % 4];
        struct ts_err err;
        ck_assert_int_eq(eng_act_plan(&a, &TINY, &sh, planner_find(name), &po, &err), 0);
        ck_assert(eng_act_same(&a, &a.shape));
        ck_assert_int_eq(a.layers, TINY.num_layers);
        ck_assert_int_eq(a.ffn_chunks * a.ffn_rows >= sh.T, 1);
        ck_assert_int_lt(plan_find_overlap(&a.g, &a.plan), 0);
        ck_assert(a.plan.arena_bytes >= opgraph_peak(&a.g));
        snprintf(where, sizeof where, "%s T=%lld R=%lld chunk=%d ffn=%d%s copy=%d", name, (long long)sh.T,
                 (long long)sh.R, sh.logit_chunk_rows, sh.ffn_chunks, sh.fused_ffn ? " fused" : "",
                 sh.softmax_copy_bytes);
        struct shadow s = {.blocks = (a.plan.arena_bytes + ENG_ACT_ALIGN - 1) / ENG_ACT_ALIGN, .where = where};
        s.owner = calloc((size_t)s.blocks + 1, sizeof *s.owner);
        replay(&a, &TINY, &s);
        free(s.owner);
    }
    eng_act_free(&a);
    eng_act_free(NULL);
}
END_TEST

START_TEST(layout_of_a_full_model)
{
    /* LLaDA-8B, a Refresh of 16 x 512 tokens with every row's logits in 2048-row chunks: first-fit
     * needs the theoretical peak; the caching allocator's segments need more */
    const struct model_cfg *m = model_find("llada-8b");
    struct og_shape sh = {.T = 8192, .R = 8192, .logit_chunk_rows = 2048, .ffn_chunks = 1};
    struct planner_opts po;
    planner_opts_defaults(&po);
    struct eng_act ff = {0}, ca = {0};
    ck_assert_int_eq(eng_act_plan(&ff, m, &sh, planner_find("first-fit"), &po, NULL), 0);
    ck_assert_int_eq(eng_act_plan(&ca, m, &sh, planner_find("caching"), &po, NULL), 0);
    ck_assert_int_eq(ff.plan.arena_bytes, opgraph_peak(&ff.g));
    ck_assert_int_ge(ca.plan.arena_bytes, ff.plan.arena_bytes);
    ck_assert_int_eq(ff.logit_chunks, 4);
    ck_assert(!ff.head_gathered && ff.head == ff.x);
    struct og_shape other = sh;
    other.logit_chunk_rows = 100000; /* one chunk of R rows, not four of 2048 */
    ck_assert(!eng_act_same(&ff, &other));
    other = sh;
    other.T = 8191;
    ck_assert(!eng_act_same(&ff, &other));
    other = sh;
    other.fused_ffn = true;
    ck_assert(!eng_act_same(&ff, &other));
    /* fused, the FFN's 402 MB gate|up buffer goes: the peak moves to the LM head (x and a 2048-row
     * chunk of logits) */
    struct eng_act fu = {0};
    ck_assert_int_eq(eng_act_plan(&fu, m, &other, planner_find("first-fit"), &po, NULL), 0);
    ck_assert_int_eq(fu.gu[0], -1);
    ck_assert_int_eq(fu.plan.arena_bytes, 8192LL * 4096 * 2 + 2048LL * m->vocab * 2);
    ck_assert_int_lt(fu.plan.arena_bytes, ff.plan.arena_bytes);
    eng_act_free(&fu);
    /* a shape that normalises to the planned one is the same plan */
    struct og_shape one = {.T = 512, .R = 512}, same = {.T = 512, .R = 512, .logit_chunk_rows = 4096, .ffn_chunks = 1};
    ck_assert_int_eq(eng_act_plan(&ff, m, &one, planner_find("first-fit"), &po, NULL), 0);
    ck_assert(eng_act_same(&ff, &same));
    /* a mixture of experts (a dense first layer, a shared expert): the router's logits, each chunk
     * of routed copies' buffers, the shared expert's as a dense FFN's; none overlaps another that
     * lives beside it (the gathered rows take the down outputs, so live through the chunk) */
    const struct model_cfg *moe = model_find("llada2.0-mini");
    struct og_shape ms = {.T = 512, .R = 64, .ffn_chunks = 2};
    ck_assert_int_eq(eng_act_plan(&ff, moe, &ms, planner_find("first-fit"), &po, NULL), 0);
    ck_assert_int_eq(ff.router[0], -1);
    ck_assert_int_ge(ff.router[1], 0);
    ck_assert_int_eq(ff.moe_rows, 512 * 8 / 2);
    ck_assert_int_eq(ff.moe_chunks, 2);
    for (int L = 1; L < moe->num_layers; L++)
        for (int c = 0; c < 2; c++) {
            const int i = L * 2 + c;
            const int64_t g = ff.mgather[i], gsz = (int64_t)ff.moe_rows * moe->hidden * 2;
            const int64_t u = ff.mgu[i], usz = (int64_t)ff.moe_rows * 2 * moe->moe_ffn * 2;
            const int64_t a = ff.mact[i], asz = (int64_t)ff.moe_rows * moe->moe_ffn * 2;
            ck_assert(g + gsz <= u || u + usz <= g);
            ck_assert(g + gsz <= a || a + asz <= g);
            ck_assert(ff.gu[L * ff.ffn_chunks + c] >= 0 && ff.act[L * ff.ffn_chunks + c] >= 0);
        }
    eng_act_free(&ff);
    eng_act_free(&ca);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_act");
    ck_case(s, layout_survives_the_forward, 60);
    ck_case(s, layout_of_a_full_model, 60);
    return run_suite("eng_act", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
