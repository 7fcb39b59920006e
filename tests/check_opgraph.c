/* check_opgraph.c: the op graph template: lifetimes, and its theoretical peak against an
 * independent oracle over random shapes: the peak of each layout in closed form, derived by hand
 * from the op sequence (below). */
#include <stdlib.h>

#include "opgraph.h"
#include "planner.h"
#include "test_util.h"

/*
 * The oracle.
 * Per layer (T packed tokens, bf16 activations, a = 2 bytes):
 *   attention block: x [T,h] is alive throughout; norm [T,h] -> qkv [T,qd+2kvd] -> attn [T,qd]
 *                    -> o [T,h]; the peak is the largest of {x+norm+qkv, x+qkv+attn, x+attn+o}
 *   FFN block (c chunks of T/c tokens, the norm output alive across chunks):
 *                    {x+norm+gu, x+norm+gu+act, x+norm+act+down} with gu [T/c,2F], act [T/c,F],
 *                    (fused, SwiGLU in the gate/up GEMM's epilogue: x+norm+act, act alive from
 *                    that GEMM through down, which adds into x),
 *                    down [T/c,h]; an MoE layer routes k copies of each token to width-Fe experts
 *                    (plus shared experts), holds fp32 router logits [T,E] and the combined
 *                    output [T,h]
 *   LM head:         norm [T,h] + gathered rows [R,h] (when R < T) + one chunk of logits [Rc,V] in bf16 plus the
 *                    softmax copy [Rc,V] of the baseline, if any
 * Attention scores are never materialised (flash-style kernels, also PyTorch's SDPA).
 *
 * Mosaic's layout (act_knobs.layout, opgraph.h) holds q, k and v apart and writes o_proj's output
 * and the fused add-norm's two outputs as tensors of their own:
 *   attention block: {x+norm+q+k+v, x+q+k+v+attn, x+o+norm2+residual}
 *   FFN block:       chunked, one set of chunk buffers alive across the loop with the FFN's output:
 *                    norm2+residual+out+3 [T/c,F] (MoE: router logits, then the routed gate/up
 *                    [T/c*k,2Fe], SwiGLU [T/c*k,Fe] and down [T/c*k,h], and the shared experts'
 *                    three [T/c,S]); unchunked, each buffer dies at its reader:
 *                    {norm2+residual+gate+up, residual+gate+up+act, 3 [T,h]} (MoE: {norm2+residual+
 *                    router+gate_up, residual+gate_up+act, residual+act+down, residual+down+out})
 */
struct act_knobs {
    int32_t logit_chunk_rows, ffn_chunks, softmax_copy_bytes;
    bool fused_ffn;
    int32_t layout;
};
struct act_parts {
    int64_t attention, ffn, head;
};
static void mem_act_parts(const struct model_cfg *m, int64_t T, int64_t R, const struct act_knobs *k,
                          struct act_parts *out);

static int64_t max3(int64_t a, int64_t b, int64_t c) { return TS_MAX(a, TS_MAX(b, c)); }

static int64_t ffn_peak(int64_t T, int64_t h, int64_t width, int64_t chunks, bool fused)
{
    int64_t a = 2, Tc = (T + chunks - 1) / chunks;
    int64_t x = T * h * a, norm = T * h * a;
    int64_t gu = Tc * 2 * width * a, act = Tc * width * a, down = Tc * h * a;
    if (fused)
        return x + norm + act;
    return max3(x + norm + gu, x + norm + gu + act, x + norm + act + down);
}

static int64_t mem_logits_bytes(const struct model_cfg *m, int64_t logit_rows, const struct act_knobs *k)
{
    int64_t rows = logit_rows;
    if (k->logit_chunk_rows > 0 && rows > k->logit_chunk_rows)
        rows = k->logit_chunk_rows;
    return rows * (int64_t)m->vocab * (2 + k->softmax_copy_bytes);
}

static int64_t mem_act_peak(const struct model_cfg *m, int64_t T, int64_t R, const struct act_knobs *k)
{
    struct act_parts p;
    mem_act_parts(m, T, R, k, &p);
    return TS_MAX(p.attention, TS_MAX(p.ffn, p.head));
}

/* the attention and FFN blocks' peaks in Mosaic's layout */
static void mosaic_parts(const struct model_cfg *m, int64_t T, int64_t chunks, struct act_parts *out)
{
    const int64_t a = 2, X = T * m->hidden * a, Q = T * model_q_dim(m) * a, K = T * model_kv_dim(m) * a;
    const int64_t Tc = (T + chunks - 1) / chunks;
    out->attention = max3(2 * X + Q + 2 * K, X + 2 * Q + 2 * K, 4 * X);
    int64_t peak = 0;
    if (m->num_layers - model_num_moe_layers(m) > 0) {
        const int64_t G = Tc * m->ffn * a;
        peak = chunks > 1 ? 3 * X + 3 * G : max3(2 * X + 2 * G, X + 3 * G, 3 * X);
    }
    if (model_num_moe_layers(m) > 0) {
        const int64_t rows = Tc * m->experts_top_k, Fe = m->moe_ffn, router = T * m->num_experts * 4;
        const int64_t gu = rows * 2 * Fe * a, act = rows * Fe * a, down = rows * m->hidden * a;
        const int64_t shared = 3 * Tc * Fe * m->num_shared_experts * a;
        int64_t moe = 2 * X + router + gu;
        if (chunks > 1 || shared > 0)
            moe = TS_MAX(moe, 3 * X + gu + act + down + shared);
        else
            moe = TS_MAX(moe, TS_MAX(max3(X + gu + act, X + act + down, 2 * X + down), 3 * X));
        peak = TS_MAX(peak, moe);
    }
    out->ffn = peak;
}

static void mem_act_parts(const struct model_cfg *m, int64_t T, int64_t R, const struct act_knobs *k,
                   struct act_parts *out)
{
    *out = (struct act_parts){0, 0, 0};
    if (T <= 0)
        return;
    int64_t gathered = R < T ? R * m->hidden * 2 : 0; /* rows gathered when not every row needs logits */
    out->head = R > 0 ? T * m->hidden * 2 + gathered + mem_logits_bytes(m, R, k) : 0;
    if (k->layout == OG_LAYOUT_MOSAIC) {
        mosaic_parts(m, T, k->ffn_chunks > 0 ? k->ffn_chunks : 1, out);
        return;
    }
    int64_t a = 2, h = m->hidden, qd = model_q_dim(m), kvd = model_kv_dim(m);
    int64_t chunks = k->ffn_chunks > 0 ? k->ffn_chunks : 1;
    int64_t x = T * h * a, norm = T * h * a;
    int64_t qkv = T * (qd + 2 * kvd) * a, attn = T * qd * a, o = T * h * a;
    out->attention = max3(x + norm + qkv, x + qkv + attn, x + attn + o);
    int64_t peak = 0;
    if (m->num_layers - model_num_moe_layers(m) > 0)
        peak = TS_MAX(peak, ffn_peak(T, h, m->ffn, chunks, k->fused_ffn));
    if (model_num_moe_layers(m) > 0) {
        /* routed: k gathered copies of each token, chunked like the dense FFN */
        int64_t Tk = (T * m->experts_top_k + chunks - 1) / chunks, Fe = m->moe_ffn;
        int64_t gin = Tk * h * a, gu = Tk * 2 * Fe * a, act = Tk * Fe * a, res = Tk * h * a;
        int64_t routed = max3(gin + gu, gin + gu + act, act + res);
        int64_t Tc = (T + chunks - 1) / chunks, S = Fe * (int64_t)m->num_shared_experts;
        int64_t shared = S ? max3(Tc * 2 * S * a, Tc * 3 * S * a, Tc * (S + h) * a) : 0;
        int64_t router = T * m->num_experts * 4, combined = T * h * a;
        peak = TS_MAX(peak, x + norm + router + combined + TS_MAX(routed, shared));
    }
    out->ffn = peak;
}

START_TEST(peak_equals_closed_form)
{
    const char *models[] = {"llada-8b", "dream-7b", "sdar-8b"};
    srand(11);
    struct opgraph g = {0};
    for (int k = 0; k < 300; k++) {
        const struct model_cfg *m = model_find(models[k % 3]);
        struct og_shape s = {.T = 1 + rand() % 20000, .ffn_chunks = 1 + rand() % 8,
                             .softmax_copy_bytes = (rand() % 3) * 4};
        s.R = rand() % 2 ? s.T : rand() % (s.T + 1);
        s.logit_chunk_rows = rand() % 2 ? 0 : 1 + rand() % 4096;
        s.fused_ffn = rand() % 2;
        opgraph_build(&g, m, &s);
        struct act_knobs kn = {s.logit_chunk_rows, s.ffn_chunks, s.softmax_copy_bytes, s.fused_ffn, OG_LAYOUT_ENGINE};
        ck_assert_msg(opgraph_peak(&g) == mem_act_peak(m, s.T, s.R, &kn),
                      "%s T=%lld R=%lld chunk=%d ffn=%d%s copy=%d: graph %lld, closed form %lld", m->name,
                      (long long)s.T, (long long)s.R, s.logit_chunk_rows, s.ffn_chunks, s.fused_ffn ? " fused" : "",
                      s.softmax_copy_bytes, (long long)opgraph_peak(&g), (long long)mem_act_peak(m, s.T, s.R, &kn));
        for (int32_t i = 0; i < g.n; i++)
            ck_assert(g.t[i].first >= 0 && g.t[i].first <= g.t[i].last && g.t[i].last < g.num_ops && g.t[i].bytes > 0);
    }
    opgraph_free(&g);
}
END_TEST

/* Mosaic's layout: its theoretical peak against the oracle's closed form for it, dense and MoE (with
 * and without shared experts), chunked and not */
START_TEST(mosaic_peak_equals_closed_form)
{
    const char *models[] = {"llada-8b", "dream-7b", "llada-moe-7b", "llada2.0-mini"};
    srand(12);
    struct opgraph g = {0};
    for (int k = 0; k < 400; k++) {
        const struct model_cfg *m = model_find(models[k % 4]);
        struct og_shape s = {.T = 1 + rand() % 20000, .ffn_chunks = rand() % 2 ? 1 : 1 + rand() % 16,
                             .softmax_copy_bytes = (rand() % 3) * 4, .layout = OG_LAYOUT_MOSAIC};
        s.R = rand() % 2 ? s.T : rand() % (s.T + 1);
        s.logit_chunk_rows = rand() % 2 ? 0 : 1 + rand() % 4096;
        opgraph_build(&g, m, &s);
        struct act_knobs kn = {s.logit_chunk_rows, s.ffn_chunks, s.softmax_copy_bytes, false, OG_LAYOUT_MOSAIC};
        ck_assert_msg(opgraph_peak(&g) == mem_act_peak(m, s.T, s.R, &kn),
                      "%s T=%lld R=%lld chunk=%d ffn=%d copy=%d: graph %lld, closed form %lld", m->name,
                      (long long)s.T, (long long)s.R, s.logit_chunk_rows, s.ffn_chunks, s.softmax_copy_bytes,
                      (long long)opgraph_peak(&g), (long long)mem_act_peak(m, s.T, s.R, &kn));
        for (int32_t i = 0; i < g.n; i++)
            ck_assert(g.t[i].first >= 0 && g.t[i].first <= g.t[i].last && g.t[i].last < g.num_ops && g.t[i].bytes > 0);
    }
    opgraph_free(&g);
}
END_TEST

/* First-fit over Mosaic's layout sizes the arena Mosaic's own planner does: the reference numbers are
 * its first-fit (flashserve/Mosaic vllm/v1/worker/graph_builder.py, MemoryAnalyzer's reuse plan) run
 * on its LLaDA, Dream and LLaDA-MoE block graphs of 10,000 tokens with 64 logit rows, unchunked and
 * in 2, 5 and 64 FFN chunks: 40, 28 and 20 KiB a token once chunked finely, more where a chunk's
 * buffers leave gaps the FFN's output cannot use */
START_TEST(mosaic_layout_packs_as_mosaics_planner)
{
    const struct {
        const char *model;
        int32_t chunks;
        int64_t arena;
    } cases[] = {{"llada-8b", 1, 819200000},     {"llada-8b", 2, 696320000},     {"llada-8b", 5, 458752000},
                 {"llada-8b", 64, 409600000},    {"dream-7b", 1, 1423360000},    {"dream-7b", 2, 855040000},
                 {"dream-7b", 5, 514048000},     {"dream-7b", 64, 286720000},    {"llada-moe-7b", 1, 655360000},
                 {"llada-moe-7b", 2, 573440000}, {"llada-moe-7b", 5, 294912000}, {"llada-moe-7b", 64, 204800000}};
    struct opgraph g = {0};
    struct planner_opts po;
    planner_opts_defaults(&po);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct og_shape s = {.T = 10000, .R = 64, .ffn_chunks = cases[i].chunks, .layout = OG_LAYOUT_MOSAIC};
        opgraph_build(&g, model_find(cases[i].model), &s);
        struct plan pl;
        ck_assert_int_eq(plan_first_fit(&g, &po, &pl, NULL), 0);
        ck_assert_msg(pl.arena_bytes == cases[i].arena, "%s in %d chunks: %lld, Mosaic's planner %lld", cases[i].model,
                      cases[i].chunks, (long long)pl.arena_bytes, (long long)cases[i].arena);
        ck_assert_int_eq(plan_find_overlap(&g, &pl), -1);
        plan_free(&pl);
    }
    /* the engine's layer holds less where K and V are narrow (Dream-7B: 23 KiB a token, not 28) */
    struct og_shape s = {.T = 10000, .R = 64, .ffn_chunks = 64};
    opgraph_build(&g, model_find("dream-7b"), &s);
    ck_assert_int_lt(opgraph_peak(&g), 286720000);
    opgraph_free(&g);
}
END_TEST

/* Mosaic's chunk search weighs each part of the step by what each op writes and what later ops
 * still read: for LLaDA-8B in Mosaic's layout, the fixed part peaks at 4 rows of the hidden size (x,
 * o_proj's output and the fused add-norm's two), the FFN in 5 chunks at 3 and its three chunk
 * buffers, and the logits at x, the gathered rows and a chunk of logits */
START_TEST(part_peaks_as_mosaics_search_weighs_them)
{
    const struct model_cfg *m = model_find("llada-8b");
    const int64_t T = 10000, row = T * 4096 * 2, F = 2000LL * m->ffn * 2;
    struct opgraph g = {0};
    struct og_shape s = {.T = T, .R = 64, .ffn_chunks = 5, .layout = OG_LAYOUT_MOSAIC};
    opgraph_build(&g, m, &s);
    int64_t fixed, ffn, logits;
    opgraph_part_peaks(&g, &fixed, &ffn, &logits);
    ck_assert_int_eq(fixed, 4 * row);
    ck_assert_int_eq(ffn, 3 * row + 3 * F);
    ck_assert_int_eq(logits, row + 64LL * 4096 * 2 + 64LL * m->vocab * 2);
    opgraph_free(&g);
}
END_TEST

START_TEST(chunking_lowers_the_peak_where_it_is)
{
    const struct model_cfg *m = model_find("llada-8b");
    struct opgraph g = {0};
    struct og_shape s = {.T = 16384, .R = 16384, .ffn_chunks = 1, .softmax_copy_bytes = 4};
    opgraph_build(&g, m, &s);
    enum og_kind k;
    opgraph_peak_op(&g, &k);
    ck_assert(k == OG_SOFTMAX || k == OG_LOGITS); /* monolithic logits (and their fp32 copy) dominate */
    int64_t mono = opgraph_peak(&g);
    s.logit_chunk_rows = 1024;
    opgraph_build(&g, m, &s);
    opgraph_peak_op(&g, &k);
    ck_assert(opgraph_peak(&g) < mono / 4);
    ck_assert_int_eq(k, OG_GATE_UP); /* now the FFN is the peak */
    int64_t before = opgraph_peak(&g);
    s.ffn_chunks = 8;
    opgraph_build(&g, m, &s);
    ck_assert(opgraph_peak(&g) < before);
    ck_assert(opgraph_average(&g) > 0 && opgraph_average(&g) <= opgraph_peak(&g));
    opgraph_free(&g);
    opgraph_free(NULL);
}
END_TEST

/* Tensor parallelism: a GPU holds 1/tp of the tensors split over heads, FFN columns (each expert's
 * too) and the vocabulary, and the residual stream, norms, gathers and router logits whole. */
START_TEST(tensor_parallel_shares)
{
    const char *models[] = {"llada-8b", "llada-moe-7b"};
    for (int k = 0; k < 2; k++) {
        const struct model_cfg *m = model_find(models[k]);
        struct og_shape s = {.T = 1000, .R = 300, .logit_chunk_rows = 128, .ffn_chunks = 2, .softmax_copy_bytes = 4};
        struct opgraph one = {0}, two = {0};
        opgraph_build(&one, m, &s);
        s.tp = 2;
        opgraph_build(&two, m, &s);
        ck_assert_int_eq(one.n, two.n);
        ck_assert_int_eq(one.num_ops, two.num_ops);
        for (int32_t i = 0; i < one.n; i++) {
            const enum og_kind kind = (enum og_kind)one.t[i].kind;
            const bool split = kind == OG_QKV || kind == OG_ATTN || kind == OG_GATE_UP || kind == OG_ACT ||
                               kind == OG_LOGITS || kind == OG_SOFTMAX;
            ck_assert_msg(two.t[i].bytes == (split ? one.t[i].bytes / 2 : one.t[i].bytes), "%s tensor %d (%s): %lld of %lld",
                          m->name, i, og_kind_name(kind), (long long)two.t[i].bytes, (long long)one.t[i].bytes);
            ck_assert(two.t[i].first == one.t[i].first && two.t[i].last == one.t[i].last);
        }
        ck_assert(opgraph_peak(&two) < opgraph_peak(&one));
        opgraph_free(&one);
        opgraph_free(&two);
    }
}
END_TEST

START_TEST(fused_ffn_has_no_gate_up)
{
    /* LLaDA-8B, T = 8192 in one FFN chunk, no logits: split, the FFN peaks at x + norm + gate|up +
     * act; fused, at x + norm + act, act living from the gate/up op to down */
    const struct model_cfg *m = model_find("llada-8b");
    struct opgraph g = {0};
    struct og_shape s = {.T = 8192, .ffn_chunks = 1};
    const int64_t row = 8192LL * 2;
    opgraph_build(&g, m, &s);
    ck_assert_int_eq(opgraph_peak(&g), row * (2 * 4096 + 3 * m->ffn));
    const int32_t split_n = g.n;
    s.fused_ffn = true;
    opgraph_build(&g, m, &s);
    ck_assert_int_eq(opgraph_peak(&g), row * (2 * 4096 + m->ffn)); /* x + norm + act */
    ck_assert_int_eq(g.n, split_n - m->num_layers);
    for (int32_t i = 0; i < g.n; i++) {
        ck_assert_int_ne(g.t[i].kind, OG_GATE_UP);
        if (g.t[i].kind == OG_ACT)
            ck_assert_int_eq(g.t[i].last - g.t[i].first, 2);
    }
    /* an MoE model's routed experts stay split */
    const struct model_cfg *moe = model_find("llada-moe-7b");
    opgraph_build(&g, moe, &s);
    int gate_up = 0;
    for (int32_t i = 0; i < g.n; i++)
        gate_up += g.t[i].kind == OG_GATE_UP;
    ck_assert_int_gt(gate_up, 0);
    opgraph_free(&g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("opgraph");
    ck_case(s, peak_equals_closed_form, 60);
    ck_case(s, mosaic_peak_equals_closed_form, 60);
    ck_case(s, mosaic_layout_packs_as_mosaics_planner, 60);
    ck_case(s, part_peaks_as_mosaics_search_weighs_them, 60);
    ck_case(s, chunking_lowers_the_peak_where_it_is, 60);
    ck_case(s, fused_ffn_has_no_gate_up, 60);
    ck_case(s, tensor_parallel_shares, 60);
    return run_suite("opgraph", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
