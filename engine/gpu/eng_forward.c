/*
 * eng_forward.c: the forward of a step (eng_internal.h): GEMMs, the layers of each kind of step (rows the
 * same in every layer, layered, evicting, widening), the FFN and the experts, the sparse selection; the
 * extensions' hooks called at their points (eng_ext.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_ext.h"
#include "eng_tp.h"

bool eng_routes_balanced(const struct eng *e) { return e->o.routing == 2 || (e->o.routing == 0 && !e->o.weights); }

bool eng_ffn_fused_runs(const struct eng *e) { return e->fused_ffn_runs; }

bool eng_ffn_fuses(const struct eng *e, int rows)
{
    return e->fused_ffn_runs && (e->o.ffn == 1 || (e->o.ffn == 2 && k_gemm_swiglu_auto(rows, e->m.ffn)));
}

/* The kept keys of one layer's selections: [num_sel][sets][max_keep] int32. */
int64_t eng_selection_ints(const struct eng *e)
{
    const struct eng_plan *p = &e->plan;
    return (int64_t)p->num_sel * (e->select_heads ? e->m.num_kv_heads : 1) * p->max_keep;
}

/* The step's selections over `layers` layers from layer L's pool (kp, vp) on: the plan's segments,
 * the attention's scratch (free again after a layer's attention). */
static struct k_select_args select_args(const struct eng *e, const bf16_t *qkv, bf16_t *kp, bf16_t *vp, int layers)
{
    const struct eng_plan *p = &e->plan;
    const struct model_cfg *m = &e->m;
    return (struct k_select_args){
        .q = qkv, .q_stride = (m->num_heads + 2 * m->num_kv_heads) * m->head_dim, .k_pool = kp, .v_pool = vp,
        .pages = e->dm.pages, .sel = e->dm.sel, .page_shift = __builtin_ctz((unsigned)e->o.page_tokens),
        .num_sel = p->num_sel, .max_cand = p->max_cand, .max_keep = p->max_keep, .H = m->num_heads,
        .Hkv = m->num_kv_heads, .d = m->head_dim, .kernel = e->select_kernel, .per_head = e->select_heads,
        .ws = e->attn_ws, .ws_bytes = ATTN_WORKSPACE, .layers = layers, .layer_stride = e->slots * m->num_kv_heads * m->head_dim};
}

/* Layers L.. L + layers - 1's kept keys copied to the trace where eng_opts.trace_selection keeps one. */
static int trace_selection(struct eng *e, const struct k_select_args *sa, int L, int layers, struct ts_err *err)
{
    if (!e->sel_trace)
        return 0;
    const int64_t n = eng_selection_ints(e);
    CU(cudaMemcpyAsync(e->sel_trace + n * L, k_kv_select_idx(sa), sizeof(int32_t) * (size_t)(n * layers),
                       cudaMemcpyDeviceToDevice, e->stream));
    return 0;
}

/* Layer L's part of the step's sparse selections, after its attention: the whole selection, or
 * where it runs after the last layer (sel_defer) the mean queries it will score with. */
static int select_layer(struct eng *e, int L, bf16_t *qkv, bf16_t *kp, bf16_t *vp, struct ts_err *err)
{
    const struct k_select_args sa = select_args(e, qkv, kp, vp, 1);
    if (e->sel_defer) {
        KL(k_kv_select_means(&sa, e->sel_means + (size_t)L * e->plan.num_sel * e->m.num_heads * e->m.head_dim,
                             e->stream));
        return 0;
    }
    KL(k_kv_select(&sa, e->stream));
    return trace_selection(e, &sa, L, 1, err);
}

/* Whether the step selects after its last layer: a selection's dependent round trips then run
 * once a step rather than once a layer. Each layer's means must fit sel_means, and not where
 * eng_opts.select_at asks for the selection after each layer's attention. */
static bool select_at_end(const struct eng *e, int layers)
{
    const struct eng_plan *p = &e->plan;
    return e->o.select_at == 0 && e->sel_means && p->num_sel > 0 &&
           (int64_t)layers * p->num_sel * e->m.num_heads * e->m.head_dim * 4 <= SELECTION_MEANS;
}

/* The step's selections in `layers` layers from their means (select_layer), as many layers a launch
 * as the attention's scratch holds the scores of. */
static int select_deferred(struct eng *e, int layers, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int Hkv = e->m.num_kv_heads, qd = e->m.num_heads * e->m.head_dim;
    int group = layers;
    while (group > 1 && k_kv_select_ws_bytes(p->num_sel * group, p->max_cand, p->max_keep, Hkv) > ATTN_WORKSPACE)
        group--;
    const int64_t stride = e->slots * Hkv * e->m.head_dim;
    for (int L = 0; L < layers; L += group) {
        struct k_select_args sa = select_args(e, NULL, e->k_pool + L * stride, e->v_pool + L * stride,
                                              TS_MIN(group, layers - L));
        sa.means = e->sel_means + (size_t)L * p->num_sel * qd;
        KL(k_kv_select(&sa, e->stream));
        if (trace_selection(e, &sa, L, sa.layers, err))
            return -1;
    }
    return 0;
}

/* Tensor parallelism: the row-parallel partial sums in x's T rows summed over the ranks, in place
 * (rank 0's hold the residual: resid_beta). */
static int allreduce_rows(struct eng *e, bf16_t *x, int T, struct ts_err *err)
{
    if (!e->tp)
        return 0;
    if (eng_runs(e, OP_ALLREDUCE) && eng_tp_allreduce(e->tp, x, (int64_t)T * e->m.hidden, e->stream, err))
        return -1;
    eng_mark(e, OP_ALLREDUCE);
    return 0;
}

/* The beta of a GEMM that adds a row-parallel output to the residual: 1, but 0 on a tensor-parallel
 * rank other than 0, whose partial sum the all-reduce adds to rank 0's residual. */
static float resid_beta(const struct eng *e) { return e->o.tp_rank == 0 ? 1.f : 0.f; }

/* Layer L's FFN over T normalised rows hn2, chunk by chunk, into x (beta 1: added, 0: written). */
static int ffn(struct eng *e, int L, bf16_t *x, const bf16_t *hn2, int T, float beta, struct ts_err *err)
{
    const struct eng_act *a = &e->act;
    const int Tc = a->ffn_rows, h = e->m.hidden, F = eng_ffn_width(&e->m, L);
    const bool fused = a->shape.fused_ffn && !model_is_moe_layer(&e->m, L); /* (shared experts: split) */
    cudaStream_t st = e->stream;
    for (int c = 0, c0 = 0; c0 < T; c++, c0 += Tc) {
        int rows = TS_MIN(Tc, T - c0);
        bf16_t *act = (bf16_t *)eng_arena_at(&e->arena, a->act[L * a->ffn_chunks + c]);
        if (fused) { /* as planned: no gate|up buffer */
            if (eng_runs(e, OP_GATE_UP))
                KL(k_gemm_swiglu(act, hn2 + (size_t)c0 * h, eng_w(e, W_GU, L), rows, h, F, st));
            eng_mark(e, OP_GATE_UP);
        } else {
            bf16_t *gu = (bf16_t *)eng_arena_at(&e->arena, a->gu[L * a->ffn_chunks + c]);
            if (eng_runs(e, OP_GATE_UP) && eng_run_gemm(e, eng_w(e, W_GU, L), hn2 + (size_t)c0 * h, gu, rows, h, 2 * F, 0.f, err))
                return -1;
            eng_mark(e, OP_GATE_UP);
            if (eng_runs(e, OP_ACT))
                KL(k_swiglu(act, gu, rows, F, st));
            eng_mark(e, OP_ACT);
        }
        if (eng_runs(e, OP_DOWN) && eng_run_gemm(e, eng_w(e, W_DOWN, L), act, x + (size_t)c0 * h, rows, F, h, beta, err))
            return -1;
        eng_mark(e, OP_DOWN);
    }
    return 0;
}

/* Layer L's mixture of experts over T normalised rows hn2, added into x: the router GEMM, each
 * row's k experts and the copies in expert order (router); per chunk of copies, their rows gathered,
 * the experts' gate|up, SwiGLU and down, and their weighted sum into each token (experts; the last
 * chunk adds it to x); then the shared experts as a dense FFN. */
static int moe_ffn(struct eng *e, int L, bf16_t *x, const bf16_t *hn2, int T, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_act *a = &e->act;
    const int h = m->hidden, E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn, n = T * k;
    const int tile = e->moe_wgmma ? K_MOE_TILE_WGMMA : k_moe_tile(n, E);
    cudaStream_t st = e->stream;
    bf16_t *logits = (bf16_t *)eng_arena_at(&e->arena, a->router[L]);
    if (eng_runs(e, OP_ROUTER)) {
        if (eng_run_gemm(e, eng_w(e, W_ROUTER, L), hn2, logits, T, h, E, 0.f, err))
            return -1;
        const struct k_moe_router rt = eng_moe_router(m, eng_w(e, W_ROUTER_BIAS, L));
        KL(k_moe_route(logits, T, E, k, k_moe_balance(eng_routes_balanced(e), L), &rt, e->moe_ids, e->moe_wts, st));
        if (e->moe_trace)
            CU(cudaMemcpyAsync(e->moe_trace + (size_t)L * e->o.max_tokens * k, e->moe_ids, sizeof(int32_t) * (size_t)n,
                               cudaMemcpyDeviceToDevice, st));
        const struct k_moe_dispatch_args da = {e->moe_ids, e->moe_counts, e->moe_offsets, e->moe_tok, e->moe_pos,
                                               e->moe_tiles, e->moe_ntiles, T, k, E, tile};
        KL(k_moe_dispatch(&da, st));
    }
    eng_mark(e, OP_ROUTER);
    /* the grouped GEMMs' grid: the tiles this step's copies can take, not the workspace's most (a
     * block past the tile count still launches, waits for its predecessor and exits) */
    const int grid_tiles = TS_MIN(e->moe_max_tiles, k_moe_tiles_bound(n, E, tile));
    if (eng_runs(e, OP_EXPERTS))
        for (int c = 0; c < a->moe_chunks; c++) {
            const int i = L * a->moe_chunks + c, p0 = c * a->moe_rows, p1 = TS_MIN(n, p0 + a->moe_rows);
            bf16_t *g = (bf16_t *)eng_arena_at(&e->arena, a->mgather[i]);
            bf16_t *gu = (bf16_t *)eng_arena_at(&e->arena, a->mgu[i]);
            bf16_t *act = (bf16_t *)eng_arena_at(&e->arena, a->mact[i]);
            KL(k_gather_rows(g, hn2, e->moe_tok + p0, p1 - p0, h, st));
            struct k_moe_gemm_args ga = {g, eng_w(e, W_EXP_GU, L), gu, e->moe_offsets, e->moe_tiles, e->moe_ntiles,
                                         p0, p1, 2 * Fe, h, grid_tiles, tile, E};
            KL(k_moe_gemm(&ga, st));
            KL(k_swiglu(act, gu, p1 - p0, Fe, st));
            ga = (struct k_moe_gemm_args){act, eng_w(e, W_EXP_DOWN, L), g, e->moe_offsets, e->moe_tiles, e->moe_ntiles,
                                          p0, p1, h, Fe, grid_tiles, tile, E};
            KL(k_moe_gemm(&ga, st));
            const struct k_moe_combine_args ca = {g, e->moe_pos, e->moe_wts, e->moe_acc, x, T, k, h, p0, p1,
                                                  c == 0, c == a->moe_chunks - 1, resid_beta(e) == 0.f};
            KL(k_moe_combine(&ca, st));
        }
    eng_mark(e, OP_EXPERTS);
    return m->num_shared_experts > 0 ? ffn(e, L, x, hn2, T, 1.f, err) : 0;
}

/* The attention's arguments for plan p (its arrays on the device in dm); q, o and the pools are the
 * layer's. */
static struct k_attn_args attn_args(const struct eng *e, const struct eng_plan *p, const struct dev_meta *dm)
{
    const struct model_cfg *m = &e->m;
    const int H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim, width = (H + 2 * Hkv) * d;
    const bool stateless = e->o.stateless;
    const int page_tokens = stateless ? 1 : e->o.page_tokens;
    return (struct k_attn_args){
        .q_stride = width, .q_start = dm->q_start, .q_len = dm->q_len, .key_len = dm->key_len,
        .kv_cached = dm->kv_cached, .page_off = dm->page_off, .pages = dm->pages, .tiles = dm->tiles,
        .num_tiles = p->num_tiles, .H = H, .Hkv = Hkv, .d = d, .page_tokens = page_tokens,
        .page_shift = __builtin_ctz((unsigned)page_tokens), .kv_stride = stateless ? width : 0,
        .block_size = e->attn_block, .scale = 1.0f / sqrtf((float)d), .ws = e->attn_ws,
        .ws_bytes = ATTN_WORKSPACE, .T = p->T, .max_key_len = p->max_key_len, .impl = e->o.attention,
        .min_q_len = p->min_q, .max_q_len = p->max_q, .long_tiles = p->long_tiles, .long_rows = p->long_rows,
        .wg_tiles = p->wg_tiles};
}

/* Layer L's QKV bias, RoPE and K/V store for the T rows of qkv (at tok_pos, into the pool slots
 * tok_slot of kp and vp), then the attention of aa's plan over the pool from qkv into att. */
static int rope_attend(struct eng *e, int L, struct k_attn_args *aa, bf16_t *qkv, bf16_t *att, bf16_t *kp,
                       bf16_t *vp, const int32_t *tok_pos, const int32_t *tok_slot, int T, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct k_qk_norm qn = {eng_w(e, W_Q_NORM, L), eng_w(e, W_K_NORM, L), model_rotary_dim(m), model_rms_eps(m)};
    if (eng_runs(e, OP_ROPE))
        KL(k_qkv_rope_store(qkv, eng_w(e, W_QKV_BIAS, L), tok_pos, tok_slot, kp, vp, aa->kv_stride, T, m->num_heads,
                            m->num_kv_heads, m->head_dim, (float)m->rope_theta, &qn, e->stream));
    eng_mark(e, OP_ROPE);
    aa->q = qkv;
    aa->o = att;
    aa->k_pool = kp;
    aa->v_pool = vp;
    if (eng_runs(e, OP_ATTN))
        KL(k_attention(aa, e->stream));
    eng_mark(e, OP_ATTN);
    return 0;
}

#define BUF(off) ((bf16_t *)eng_arena_at(&e->arena, (off)))

/* Layer L's value check (a layered step's later layers with probing segments): the probe rows'
 * new V, and the rows each segment updates picked by it into the plan's computed rows. */
static int pick_rows(struct eng *e, int L, bf16_t *x, bf16_t *vp, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const int h = m->hidden, qd = m->num_heads * m->head_dim, kvd = m->num_kv_heads * m->head_dim;
    if (eng_runs(e, OP_FEAT_CACHE)) {
        KL(k_rmsnorm_rows(e->fc_hp, x, eng_w(e, W_ATTN_NORM, L), e->dm.probe_idx, p->probe_rows, h, model_rms_eps(m),
                          e->stream));
        if (eng_run_gemm(e, eng_w(e, W_QKV, L) + (size_t)(qd + kvd) * h, e->fc_hp, e->fc_vnew, p->probe_rows, h, kvd, 0.f, err))
            return -1;
        const bf16_t *bias = eng_w(e, W_QKV_BIAS, L);
        const struct k_fc_pick_args pa = {
            .vnew = e->fc_vnew, .v_bias = bias ? bias + qd + kvd : NULL, .v_pool = vp, .sim = e->fc_sim,
            .x_slot = e->dm.x_slot, .probe = e->dm.probe, .probe_idx = e->dm.probe_idx, .c_row = e->dm.c_row,
            .tok_pos = e->dm.tok_pos, .tok_slot = e->dm.tok_slot, .x_comp = e->dm.x_comp,
            .trace = e->pick_trace ? e->pick_trace + (size_t)L * p->num_probe * p->max_probe : NULL,
            .num_probe = p->num_probe, .probe_rows = p->probe_rows, .max_probe = p->max_probe, .kv_dim = kvd};
        KL(k_fc_pick(&pa, e->stream));
    }
    eng_mark(e, OP_FEAT_CACHE);
    return 0;
}

/* Layer L of a layered step (eng_plan.h) over its hidden rows x: lp (arrays in dm) is the plan of
 * the layer's kind, front or later. Its computed rows run as forward()'s rows do, gathered from x
 * by the normalisations; each half's outputs go to the feature cache and into x; at the end every
 * other row adds its two cached ones (nothing reads a carried row within the layer). */
static int layered_layer(struct eng *e, int L, const struct eng_plan *lp, const struct dev_meta *dm, bf16_t *x,
                         struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_act *a = &e->act;
    const int T = lp->T, X = e->plan.X, h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int width = (H + 2 * Hkv) * d, qd = H * d, kvd = Hkv * d;
    const int64_t layer_slots = e->slots * kvd;
    cudaStream_t st = e->stream;
    bf16_t *hn = BUF(a->norm1[L]), *qkv = BUF(a->qkv[L]), *att = BUF(a->att[L]), *hn2 = BUF(a->norm2[L]);
    bf16_t *kp = e->k_pool + L * layer_slots, *vp = e->v_pool + L * layer_slots;
    bf16_t *fa = e->f_pool + (size_t)(2 * L) * e->slots * h, *ff = fa + (size_t)e->slots * h;
    if (lp == &e->plan && e->plan.num_probe > 0 && pick_rows(e, L, x, vp, err))
        return -1;
    if (T > 0) {
        if (eng_runs(e, OP_NORM))
            KL(k_rmsnorm_rows(hn, x, eng_w(e, W_ATTN_NORM, L), dm->c_row, T, h, model_rms_eps(&e->m), st));
        eng_mark(e, OP_NORM);
        if (eng_runs(e, OP_QKV) && eng_run_gemm(e, eng_w(e, W_QKV, L), hn, qkv, T, h, width, 0.f, err))
            return -1;
        eng_mark(e, OP_QKV);
        struct k_attn_args aa = attn_args(e, lp, dm);
        if (rope_attend(e, L, &aa, qkv, att, kp, vp, dm->tok_pos, dm->tok_slot, T, err))
            return -1;
        if (eng_runs(e, OP_OPROJ) && eng_run_gemm(e, eng_w(e, W_O, L), att, e->fc_out, T, qd, h, 0.f, err))
            return -1;
        eng_mark(e, OP_OPROJ);
    }
    if (eng_runs(e, OP_FEAT_CACHE))
        KL(k_fc_store(x, e->fc_out, dm->c_row, e->dm.x_slot, fa, T, h, st));
    eng_mark(e, OP_FEAT_CACHE);
    if (T > 0) {
        if (eng_runs(e, OP_NORM))
            KL(k_rmsnorm_rows(hn2, x, eng_w(e, W_FFN_NORM, L), dm->c_row, T, h, model_rms_eps(&e->m), st));
        eng_mark(e, OP_NORM);
        if (ffn(e, L, e->fc_out, hn2, T, 0.f, err))
            return -1;
    }
    if (eng_runs(e, OP_FEAT_CACHE)) { /* its FFN outputs; then the carried rows add both their cached ones */
        KL(k_fc_store(x, e->fc_out, dm->c_row, e->dm.x_slot, ff, T, h, st));
        KL(k_fc_carry(x, dm->x_comp, e->dm.x_slot, fa, ff, X, h, st));
    }
    eng_mark(e, OP_FEAT_CACHE);
    return 0;
}

/* Layer L over T packed rows x of the plan whose attention is aa (its arrays in dm): its selections
 * where the step's plan selects; importance: an evicting step's front layer 0 or 1, which also
 * scores its candidates (k_focus_importance, timed with the attention). */
static int dense_layer(struct eng *e, int L, struct k_attn_args *aa, const struct dev_meta *dm, int T, bf16_t *x,
                       bool importance, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int h = m->hidden, H = m->num_heads, Hkv = m->num_kv_heads, d = m->head_dim;
    const int width = (H + 2 * Hkv) * d, qd = H * d;
    const int64_t layer_slots = e->slots * Hkv * d;
    const bool stateless = e->o.stateless;
    cudaStream_t st = e->stream;
    bf16_t *hn = BUF(a->norm1[L]), *qkv = BUF(a->qkv[L]), *att = BUF(a->att[L]), *hn2 = BUF(a->norm2[L]);
    /* the pool's layer, or (stateless) the K/V columns of the qkv rows themselves */
    bf16_t *kp = stateless ? qkv + qd : e->k_pool + L * layer_slots;
    bf16_t *vp = stateless ? qkv + qd + Hkv * d : e->v_pool + L * layer_slots;
    if (e->i_pool && eng_runs(e, OP_FEAT_CACHE)) /* the rows' inputs, kept by KV slot (the input cache) */
        KL(k_scatter_rows(e->i_pool + (size_t)L * e->slots * h, x, dm->tok_slot, T, h, st));
    if (e->i_pool)
        eng_mark(e, OP_FEAT_CACHE);
    if (eng_runs(e, OP_NORM))
        KL(k_rmsnorm(hn, x, eng_w(e, W_ATTN_NORM, L), T, h, model_rms_eps(&e->m), st));
    eng_mark(e, OP_NORM);
    if (eng_runs(e, OP_QKV) && eng_run_gemm(e, eng_w(e, W_QKV, L), hn, qkv, T, h, width, 0.f, err))
        return -1;
    eng_mark(e, OP_QKV);
    const bool plain = dm == &e->dm; /* (the extensions run in the plan's layers, not a front's) */
    if (plain)
        eng_exts_before_attention(e, L, aa);
    if (rope_attend(e, L, aa, qkv, att, kp, vp, dm->tok_pos, dm->tok_slot, T, err))
        return -1;
    if (plain && eng_exts_after_attention(e, L, aa, qkv, kp, err))
        return -1;
    if (importance) {
        if (eng_runs(e, OP_ATTN)) {
            const struct k_focus_args fa = {
                .q = qkv, .k_pool = kp, .front_slot = dm->tok_slot, .front_pos = dm->tok_pos, .probe = e->dm.probe,
                .imp = e->focus_imp,
                .q_stride = width, .num_probe = p->num_probe, .probe_rows = p->probe_rows, .max_probe = p->max_probe,
                .H = H, .Hkv = Hkv, .d = d, .layer = L, .scale = 1.0f / sqrtf((float)d)};
            KL(k_focus_importance(&fa, st));
        }
        eng_mark(e, OP_ATTN);
    }
    if (p->num_sel > 0 && dm == &e->dm) { /* marked only where it runs: a step without selections has none */
        if (eng_runs(e, OP_KV_SELECT) && select_layer(e, L, qkv, kp, vp, err))
            return -1;
        eng_mark(e, OP_KV_SELECT);
    }
    if (eng_runs(e, OP_OPROJ) && eng_run_gemm(e, eng_w(e, W_O, L), att, x, T, qd, h, resid_beta(e), err))
        return -1;
    eng_mark(e, OP_OPROJ);
    if (allreduce_rows(e, x, T, err))
        return -1;
    if (eng_runs(e, OP_NORM))
        KL(k_rmsnorm(hn2, x, eng_w(e, W_FFN_NORM, L), T, h, model_rms_eps(&e->m), st));
    eng_mark(e, OP_NORM);
    if (model_is_moe_layer(m, L) ? moe_ffn(e, L, x, hn2, T, err) : ffn(e, L, x, hn2, T, resid_beta(e), err))
        return -1;
    return allreduce_rows(e, x, T, err);
}

/* A two-plan step's front (an evicting or widening step): its front rows embedded, then layers 0 to
 * nf - 1 over them (importance: layers 0 and 1 score an evicting step's candidates). */
static int run_front(struct eng *e, int nf, bf16_t *x, bool importance, struct ts_err *err)
{
    const struct eng_plan *fp = e->plan.front;
    if (eng_runs(e, OP_EMBED))
        KL(k_embed(x, eng_w(e, W_EMB, -1), e->dm_front.tok_ids, fp->T, e->m.hidden, e->stream));
    eng_mark(e, OP_EMBED);
    struct k_attn_args af = attn_args(e, fp, &e->dm_front);
    for (int L = 0; L < nf; L++)
        if (dense_layer(e, L, &af, &e->dm_front, fp->T, x, importance && L < 2, err))
            return -1;
    return 0;
}

/* An evicting step (eng_plan.h): the front layers over every front row (layers 0 and 1 scoring the
 * candidates), the kept rows chosen and moved to x's first rows, the later layers over them. The
 * move goes through the last front layer's norm1 buffer, which is dead by then and never overlaps x
 * (both live at that layer's norm). Eviction's kernels are timed with the attention. */
static int forward_evicting(struct eng *e, int layers, bf16_t *x, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const int h = m->hidden, nf = TS_MIN(e->front_layers, layers);
    cudaStream_t st = e->stream;
    if (run_front(e, nf, x, p->num_probe > 0, err))
        return -1;
    if (eng_runs(e, OP_ATTN)) {
        if (p->num_probe > 0 && nf >= 2) {
            const struct k_focus_args fa = {
                .front_slot = e->dm_front.tok_slot, .front_pos = e->dm_front.tok_pos, .probe = e->dm.probe,
                .imp = e->focus_imp, .c_row = e->dm.c_row,
                .tok_pos = e->dm.tok_pos, .tok_slot = e->dm.tok_slot, .key_len = e->dm.key_len,
                .progress = e->focus_prog, .trace = e->pick_trace, .num_probe = p->num_probe,
                .probe_rows = p->probe_rows, .max_probe = p->max_probe, .H = m->num_heads, .Hkv = m->num_kv_heads,
                .d = m->head_dim};
            KL(k_focus_pick(&fa, st));
        }
        bf16_t *tmp = (bf16_t *)eng_arena_at(&e->arena, e->act.norm1[nf - 1]);
        KL(k_gather_rows(tmp, x, e->dm.c_row, p->T, h, st));
        CU(cudaMemcpyAsync(x, tmp, sizeof *x * (size_t)p->T * h, cudaMemcpyDeviceToDevice, st));
    }
    eng_mark(e, OP_ATTN);
    struct k_attn_args aa = attn_args(e, p, &e->dm);
    for (int L = nf; L < layers; L++)
        if (dense_layer(e, L, &aa, &e->dm, p->T, x, false, err))
            return -1;
    return 0;
}

/* A widening step (eng_plan.h): the front layers over the front rows, their inputs to the first
 * later layer kept, every later row's input taken from the input cache, the later layers over them.
 * The input cache's moves are timed as the feature cache. */
static int forward_widening(struct eng *e, int layers, bf16_t *x, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan, *fp = p->front;
    const int h = e->m.hidden, nf = TS_MIN(e->front_layers, layers);
    cudaStream_t st = e->stream;
    if (run_front(e, nf, x, false, err))
        return -1;
    if (eng_runs(e, OP_FEAT_CACHE)) {
        bf16_t *in = e->i_pool + (size_t)nf * e->slots * h;
        KL(k_scatter_rows(in, x, e->dm_front.tok_slot, fp->T, h, st));
        KL(k_gather_rows(x, in, e->dm.tok_slot, p->T, h, st));
    }
    eng_mark(e, OP_FEAT_CACHE);
    struct k_attn_args aa = attn_args(e, p, &e->dm);
    for (int L = nf; L < layers; L++)
        if (dense_layer(e, L, &aa, &e->dm, p->T, x, false, err))
            return -1;
    return 0;
}

int eng_forward(struct eng *e, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int T = p->T, h = m->hidden;
    const int layers = e->o.run_layers > 0 ? TS_MIN(e->o.run_layers, a->layers) : a->layers;
    cudaStream_t st = e->stream;
    bf16_t *x = BUF(a->x);
    e->sel_defer = false;
    if (p->evict) {
        if (forward_evicting(e, layers, x, err))
            return -1;
    } else if (p->widen) {
        if (forward_widening(e, layers, x, err))
            return -1;
    } else if (p->X > 0) { /* a layered step: its hidden rows, each layer computing some of them */
        if (eng_runs(e, OP_EMBED))
            KL(k_embed(x, eng_w(e, W_EMB, -1), e->dm.x_ids, p->X, h, st));
        eng_mark(e, OP_EMBED);
        const int nf = p->front ? TS_MIN(e->front_layers, layers) : 0;
        for (int L = 0; L < layers; L++)
            if (layered_layer(e, L, L < nf ? p->front : p, L < nf ? &e->dm_front : &e->dm, x, err))
                return -1;
    } else if (T > 0) {
        if (eng_runs(e, OP_EMBED))
            KL(k_embed(x, eng_w(e, W_EMB, -1), e->dm.tok_ids, T, h, st));
        if (eng_exts_after_embed(e, x, err))
            return -1;
        eng_mark(e, OP_EMBED);
        struct k_attn_args aa = attn_args(e, p, &e->dm);
        e->sel_defer = select_at_end(e, layers);
        for (int L = 0; L < layers; L++)
            if (dense_layer(e, L, &aa, &e->dm, T, x, false, err))
                return -1;
        if (eng_exts_after_layers(e, layers, err))
            return -1;
        if (e->sel_defer) {
            if (eng_runs(e, OP_KV_SELECT) && select_deferred(e, layers, err))
                return -1;
            eng_mark(e, OP_KV_SELECT);
        }
    }
    if (p->R > 0 && eng_lm_head(e, x, err))
        return -1;
#undef BUF
    return 0;
}
