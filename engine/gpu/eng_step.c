/*
 * eng_step.c: a step on the engine: its shape planned, its refusals, its plan uploaded, eng_step and the
 * per-op profile; the traces a step leaves (eng_internal.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_ext.h"
#include "eng_tp.h"

/* The step's op-graph shape, by its own knobs; its FFN is fused (every chunk) where eng_opts.ffn
 * fuses a full chunk. */
static struct og_shape step_shape(const struct eng *e, const struct step_desc *sd)
{
    const int64_t T = eng_plan_layered(sd) || eng_plan_evicting(sd) ? sd->tot.rows : sd->tot.q_tokens;
    const int64_t chunks = TS_MAX(1, sd->ffn_chunks);
    return (struct og_shape){T, sd->tot.logit_rows, sd->logit_chunk_rows, (int32_t)chunks, e->o.softmax_copy,
                             .fused_ffn = T > 0 && eng_ffn_fuses(e, (int)((T + chunks - 1) / chunks))};
}

int64_t eng_step_workspace_bytes(struct eng *e, const struct step_desc *sd)
{
    struct og_shape s = step_shape(e, sd);
    return eng_plan_activations(e, &s, NULL) ? -1 : e->act.plan.arena_bytes;
}

struct meta_part {
    const int32_t *src;
    int64_t n;
    int32_t **dst;
};

/* Packs parts into the pinned buffer from *off on, carving the device pointers in the same order. */
static void pack_parts(struct eng *e, const struct meta_part *parts, size_t n, int64_t *off)
{
    for (size_t i = 0; i < n; i++) {
        TS_ASSERT(*off + parts[i].n <= e->meta_cap);
        if (parts[i].n)
            memcpy(e->h_meta_buf + *off, parts[i].src, sizeof(int32_t) * (size_t)parts[i].n);
        *parts[i].dst = e->d_meta_buf + *off;
        *off += (parts[i].n + 3) / 4 * 4; /* 16-byte aligned parts */
    }
}

/* A plan's per-token and attention arrays into dm. */
static void pack_rows(struct eng *e, const struct eng_plan *p, struct dev_meta *dm, int64_t *off)
{
    const int64_t X = e->plan.X;
    const struct meta_part parts[] = {
        {p->tok_pos, p->T, &dm->tok_pos},     {p->tok_slot, p->T, &dm->tok_slot},
        {p->q_start, p->S, &dm->q_start},     {p->q_len, p->S, &dm->q_len},
        {p->key_len, p->S, &dm->key_len},     {p->kv_cached, p->S, &dm->kv_cached},
        {p->page_off, p->S, &dm->page_off},   {p->pages, p->num_page_refs, &dm->pages},
        {p->tiles, 2LL * p->num_tiles, &dm->tiles}, {p->c_row, X || p->evict ? p->T : 0, &dm->c_row},
        {p->x_comp, X, &dm->x_comp},
    };
    pack_parts(e, parts, TS_ARRAY_LEN(parts), off);
}

/* Packs the plan (and a layered step's front layers' plan and hidden rows) into the pinned buffer and
 * copies it to the device. */
static int upload_plan(struct eng *e, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int64_t rows = TS_MAX(TS_MAX((int64_t)p->T, (int64_t)p->X), p->front ? (int64_t)p->front->T : 0);
    if (rows > e->o.max_tokens)
        return ts_fail(err, "step refused: %lld rows exceed the workspace (%d tokens; raise --max-tokens)",
                       (long long)rows, e->o.max_tokens);
    if (p->S > e->max_segs || p->num_tiles > e->max_tiles || p->num_page_refs > e->max_page_refs ||
        (p->front && (p->front->num_tiles > e->max_tiles || p->front->num_page_refs > e->max_page_refs)))
        return ts_fail(err, "step refused: %d segments / %d tiles / %d page references exceed the "
                            "engine's metadata buffers", p->S, p->num_tiles, p->num_page_refs);
    int64_t off = 0;
    pack_rows(e, p, &e->dm, &off);
    const struct meta_part parts[] = {
        {p->tok_ids, p->T, &e->dm.tok_ids},   {p->logit_idx, p->R, &e->dm.logit_idx},
        {p->sel, 6LL * p->num_sel, &e->dm.sel}, {p->x_ids, p->X, &e->dm.x_ids},
        {p->x_slot, p->X, &e->dm.x_slot},
        {p->probe, (p->evict ? ENG_EVICT_FIELDS : 5LL) * p->num_probe, &e->dm.probe},
        {p->probe_idx, p->evict ? 0 : p->probe_rows, &e->dm.probe_idx}, /* (an evicting step has none) */
    };
    pack_parts(e, parts, TS_ARRAY_LEN(parts), &off);
    if (p->front)
        pack_rows(e, p->front, &e->dm_front, &off);
    if (p->evict || p->widen) { /* an evicting or widening step embeds its front rows */
        const struct meta_part ids = {p->front->tok_ids, p->front->T, &e->dm_front.tok_ids};
        pack_parts(e, &ids, 1, &off);
    }
    CU(cudaMemcpyAsync(e->d_meta_buf, e->h_meta_buf, sizeof(int32_t) * (size_t)off,
                       cudaMemcpyHostToDevice, e->stream));
    return 0;
}

/* Whether the step's sparse selections fit the scratch they share with attention. */
static int select_fits(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    const int32_t max_cand = (int32_t)sd->tot.sel_max_cand, max_keep = (int32_t)sd->tot.sel_max_keep;
    const int n = (int)sd->tot.sel_segs;
    const int64_t need = k_kv_select_ws_bytes(n, max_cand, max_keep, e->m.num_kv_heads);
    if (e->o.trace_selection && (int64_t)e->m.num_layers * n * (sd->select_heads ? e->m.num_kv_heads : 1) *
                                        max_keep * 4 > SELECTION_TRACE)
        return ts_fail(err, "step refused: its selections' trace exceeds the %d MiB kept for it",
                       SELECTION_TRACE >> 20);
    if (n > 0 && need > ATTN_WORKSPACE)
        return ts_fail(err, "step refused: its selections (%d segments, up to %d candidates) need %.1f MiB of "
                            "scratch, more than the %lld MiB the engine holds", n, max_cand, need / 1048576.0,
                       ATTN_WORKSPACE >> 20);
    return 0;
}

/* Whether a layered step's probes fit the value check (and its trace, where one is kept). */
static int fc_probes_refused(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    int64_t n = 0, most = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        n += sd->segs[s].probe > 0;
        most = TS_MAX(most, (int64_t)sd->segs[s].probe);
    }
    if (most > K_FC_MAX_PROBE)
        return ts_fail(err, "step refused: a segment probes %lld rows, more than the value check's %d",
                       (long long)most, K_FC_MAX_PROBE);
    if (e->pick_trace && (int64_t)e->m.num_layers * n * most * 4 > PICK_TRACE)
        return ts_fail(err, "step refused: its picked rows' trace exceeds the %d MiB kept for it", PICK_TRACE >> 20);
    return 0;
}

/* Whether an evicting step names requests beyond the progress kept on the GPU, or outgrows the trace
 * (a stateless engine's refusal is the plan's). */
static int evict_refused(const struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    int64_t n = 0, most = 0;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        const struct segment *g = &sd->segs[s];
        if (g->probe > 0 && g->req_id >= EVICT_REQS)
            return ts_fail(err, "step refused: request %d evicts, beyond the %d requests whose progress the engine "
                                "keeps", g->req_id, EVICT_REQS);
        n += g->probe > 0;
        most = TS_MAX(most, (int64_t)g->probe);
    }
    if (e->pick_trace && n * most * 4 > PICK_TRACE)
        return ts_fail(err, "step refused: its kept rows' trace exceeds the %d MiB kept for it", PICK_TRACE >> 20);
    return 0;
}

/* Plans and maps the step's activations, then (run = true) reserves its KV pages and uploads its
 * arrays; nothing changes when the step is refused. 1: out of device memory. */
int eng_prepare(struct eng *e, const struct step_desc *sd, bool run, struct ts_err *err)
{
    if (sd->logit_chunk_rows < 0 || sd->ffn_chunks < 0 || sd->attn_block < 0)
        return ts_fail(err, "step refused: knobs logit_chunk_rows %d, ffn_chunks %d, attn_block %d (none may be "
                            "negative)", sd->logit_chunk_rows, sd->ffn_chunks, sd->attn_block);
    if (sd->tot.sel_segs > 0 && (sd->select_kernel < 1 || sd->select_kernel % 2 == 0))
        return ts_fail(err, "step refused: select_kernel %d (the selection's pooling window must be odd)",
                       sd->select_kernel);
    const bool layered = eng_plan_layered(sd), evicting = eng_plan_evicting(sd), widening = eng_plan_widening(sd);
    const bool split = layered || evicting || widening;
    if (sd->tot.q_tokens > e->o.max_tokens || (split && sd->tot.rows > e->o.max_tokens))
        return ts_fail(err, "step refused: %lld packed tokens exceed the workspace (%d tokens; raise "
                            "--max-tokens)", (long long)TS_MAX(sd->tot.q_tokens, split ? sd->tot.rows : 0),
                       e->o.max_tokens);
    if (e->tp && (split || (sd->tot.sel_segs > 0 && !sd->select_heads)))
        return ts_fail(err, "step refused: tensor parallelism runs steps whose rows are the same in every layer, "
                            "and sparse selections of one kept set per K/V head, each GPU's own (no feature cache, "
                            "front shapes, eviction or one kept set for all heads)");
    if (evicting && evict_refused(e, sd, err))
        return -1;
    if (eng_exts_refuse_step(e, sd, split, err))
        return -1;
    if (layered && e->m.num_experts > 0)
        return ts_fail(err, "step refused: its rows differ by layer (a feature cache, front shapes, probes or "
                            "carried rows), which the engine does not run on a mixture of experts");
    if (layered && (e->o.stateless || !e->o.feature_cache))
        return ts_fail(err, "step refused: its rows differ by layer (a feature cache, front shapes, probes or "
                            "carried rows), which an engine made without a feature cache does not run");
    if (layered && fc_probes_refused(e, sd, err))
        return -1;
    if (sd->cache_inputs && (e->o.stateless || !e->o.input_cache))
        return ts_fail(err, "step refused: it keeps each row's layer inputs (cache_inputs), which an engine made "
                            "without an input cache does not run");
    if (widening && step_front_layers(sd, e->m.num_layers) >= e->m.num_layers)
        return ts_fail(err, "step refused: its front shapes run all %d layers, leaving none to widen",
                       e->m.num_layers);
    struct og_shape s = step_shape(e, sd);
    if (eng_plan_activations(e, &s, err))
        return -1;
    int64_t need = e->act.plan.arena_bytes;
    if (!e->o.stateless && need > e->mem.workspace)
        return ts_fail(err, "step refused: its activations, planned by %s, need %.3f GiB, more than the "
                            "%.3f GiB reserved for them", e->planner->name, need / TS_GIB, e->mem.workspace / TS_GIB);
    int rc = eng_arena_map(&e->arena, (size_t)need, err);
    e->mem.arena_mapped = (int64_t)e->arena.mapped;
    if (rc)
        return rc;
    if (!run)
        return 0;
    if (select_fits(e, sd, err))
        return -1;
    if (eng_plan_build(&e->plan, e->o.stateless ? NULL : &e->kv, sd, e->gm.vocab, e->o.seed, err))
        return -1;
    if (e->tokens.id && eng_plan_set_ids(&e->plan, e->o.stateless ? NULL : &e->kv, sd, &e->tokens, err))
        return -1;
    if (eng_exts_prepare(e, sd, split, err) || upload_plan(e, err))
        return -1;
    e->attn_block = sd->attn_block;
    e->front_layers = step_front_layers(sd, e->m.num_layers);
    e->select_heads = sd->select_heads;
    e->select_kernel = sd->select_kernel;
    if (e->poison_next) {
        e->poison_next = false;
        KL(k_fill_bits(eng_arena_at(&e->arena, 0), (int64_t)e->arena.mapped / 2, 0x7fc0, e->stream));
        CU(cudaMemsetAsync(e->d_tok, 0xff, sizeof(int32_t) * (size_t)e->o.max_tokens, e->stream));
        CU(cudaMemsetAsync(e->d_conf, 0xff, sizeof(float) * (size_t)e->o.max_tokens, e->stream));
    }
    return 0;
}

int eng_prepare_step(struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    return eng_prepare(e, sd, false, err);
}

int eng_step(struct eng *e, const struct step_desc *sd, struct eng_out *out, float *ms,
             struct ts_err *err)
{
    if (eng_prepare(e, sd, true, err))
        return -1;
    /* A step that met GEMM shapes new to this process (timed their candidates, or took them from
     * the cache and launched their kernels for the first time) is not a clean timing: it runs once
     * more to warm up, then once more timed (a step is idempotent: it rewrites the same K/V at the
     * same slots). */
    int shapes = eng_gemm_shape_count(e->gemm);
    CU(cudaEventRecord(e->ev0, e->stream));
    if (eng_forward(e, err))
        return -1;
    CU(cudaEventRecord(e->ev1, e->stream));
    if (ms && eng_gemm_shape_count(e->gemm) != shapes) {
        if (eng_forward(e, err))
            return -1;
        CU(cudaEventRecord(e->ev0, e->stream));
        if (eng_forward(e, err))
            return -1;
        CU(cudaEventRecord(e->ev1, e->stream));
    }
    if (eng_fetch_outputs(e, out, err) || eng_drop_tune_scratch(e, err))
        return -1;
    CU(cudaGetLastError());
    if (ms) {
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
        double v = *ms; /* tensor parallelism: the step took as long as its slowest rank */
        if (e->tp && eng_tp_agree(e->tp, &v, ENG_TP_LARGEST, e->stream, err))
            return -1;
        *ms = (float)v;
    }
    eng_exts_step_done(e, sd);
    /* a selecting request keeps the pages of its kept keys alone: its candidates' go back to the pool
     * (a graph of the step keeps them: its replays write there) */
    for (int32_t s = 0; s < sd->num_segs && !e->o.stateless; s++)
        if (sd->segs[s].keep > 0)
            eng_kv_truncate(&e->kv, sd->segs[s].req_id, sd->segs[s].keep);
    return 0;
}

void eng_set_tokens(struct eng *e, const struct eng_tokens *t)
{
    e->tokens = t ? *t : (struct eng_tokens){0};
}

int eng_step_profile(struct eng *e, const struct step_desc *sd, double *op_ms, float *total_ms,
                     struct ts_err *err)
{
    for (int i = 0; i < OP_COUNT; i++)
        op_ms[i] = 0;
    if (eng_prepare(e, sd, true, err))
        return -1;
    if (!e->prof_ev[0])
        for (int i = 0; i < MAX_PROF_EVENTS; i++)
            CU(cudaEventCreate(&e->prof_ev[i]));
    e->profiling = true;
    e->prof_n = 0;
    CU(cudaEventRecord(e->ev0, e->stream));
    int rc = eng_forward(e, err);
    e->profiling = false;
    if (rc)
        return -1;
    CU(cudaEventRecord(e->ev1, e->stream));
    if (eng_fetch_outputs(e, NULL, err) || eng_drop_tune_scratch(e, err))
        return -1;
    CU(cudaEventElapsedTime(total_ms, e->ev0, e->ev1));
    cudaEvent_t prev = e->ev0;
    for (int i = 0; i < e->prof_n; i++) {
        float ms;
        CU(cudaEventElapsedTime(&ms, prev, e->prof_ev[i]));
        op_ms[e->prof_op[i]] += ms;
        prev = e->prof_ev[i];
    }
    return 0;
}

void eng_report_gemms(const struct eng *e, FILE *out) { eng_gemm_report(e->gemm, out); }

int eng_poison_workspace(struct eng *e, struct ts_err *err)
{
    (void)err;
    e->poison_next = true;
    return 0;
}

int eng_picks(struct eng *e, int32_t *dst, int64_t n, int *max_probe, struct ts_err *err)
{
    const struct eng_plan *p = &e->plan;
    const int64_t need = (int64_t)(p->evict ? 1 : e->m.num_layers) * p->num_probe * p->max_probe;
    if (!e->pick_trace)
        return ts_fail(err, "engine: no picked rows kept (eng_opts.trace_selection)");
    if (need > n)
        return ts_fail(err, "engine: %lld picked-row entries do not fit the %lld given", (long long)need, (long long)n);
    *max_probe = p->max_probe;
    if (need)
        CU(cudaMemcpy(dst, e->pick_trace, sizeof(int32_t) * (size_t)need, cudaMemcpyDeviceToHost));
    return 0;
}

int eng_routes(struct eng *e, int32_t *dst, int64_t n, int64_t *stride, struct ts_err *err)
{
    const int64_t per = (int64_t)e->o.max_tokens * e->m.experts_top_k, need = per * e->m.num_layers;
    if (!e->moe_trace)
        return ts_fail(err, "engine: no routing kept (a mixture of experts and eng_opts.trace_selection)");
    if (need > n)
        return ts_fail(err, "engine: %lld routing entries do not fit the %lld given", (long long)need, (long long)n);
    *stride = per;
    CU(cudaMemcpy(dst, e->moe_trace, sizeof(int32_t) * (size_t)need, cudaMemcpyDeviceToHost));
    return 0;
}

int eng_selection(struct eng *e, int32_t *dst, int64_t n, int *max_keep, struct ts_err *err)
{
    const int layers = e->o.run_layers > 0 ? TS_MIN(e->o.run_layers, e->m.num_layers) : e->m.num_layers;
    const int64_t per = eng_selection_ints(e);
    if (!e->sel_trace)
        return ts_fail(err, "engine: selections are kept only with eng_opts.trace_selection");
    if (per * layers > n)
        return ts_fail(err, "engine: the selections need %lld values, room for %lld", (long long)(per * layers),
                       (long long)n);
    if (per > 0)
        CU(cudaMemcpy(dst, e->sel_trace, sizeof *dst * (size_t)(per * layers), cudaMemcpyDeviceToHost));
    *max_keep = e->plan.max_keep;
    return 0;
}
