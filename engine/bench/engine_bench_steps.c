/*
 * engine_bench_steps.c: the engine's steps in the benchmark, each captured once into a CUDA graph,
 * replayed and set against its floors (the ceilings engine_bench.c measures).
 *
 * 1. Steps of the model (LLaDA-8B by default, random bf16 weights): Refresh of 16 x 512 tokens with
 *    logits for every token; Reuse of one 32-token block over 480 cached tokens for 1 and 16
 *    sequences. Each is set against its floor: max(FLOPs / GEMM ceiling, bytes / copy ceiling),
 *    FLOPs counting the linear layers, attention and the LM head, bytes counting weights, K/V read
 *    and the logits; and against the floor at the held GEMM rate (what a step long enough to meet
 *    the power limit can reach). Each step is also timed with plain launches against programmatic
 *    ones, with either attention kernel alone, and with the FFN split, fused and auto (where the
 *    fused kernel runs), each group's variants replayed in turn (eng_graph_replay_kept) so that none
 *    meets a card the others left hotter; and with only its linear layers and LM head (and the final
 *    norm: eng_set_skip_ops), then all but them.
 * 2. The engine's workspace for each step beside the simulator's planned activations (act_cache.h).
 * 3. --only focus: FOCUS's evicting steps beside the whole block, against their goal.
 * 4. With --anchor (or --only anchor): every shape of the PyTorch anchor (eng_anchor.h), each of its
 *    three steps against its floors and beside PyTorch eager's time and peak activations.
 * 5. --only clock: a ladder of steps (or the --step ones) each timed alone from a card left idle
 *    (eng_opts.idle_s) into the warm trace: the clock's fall under the power limit, which tessera
 *    calib clock fits.
 */
#include "engine_bench_internal.h"

#include <math.h>
#include <string.h>

#include "act_cache.h"
#include "cost.h"
#include "eng.h"
#include "kernels.h"

/* FLOPs and minimum bytes of a step of nseq segments (q, kv, logit rows r); gemm_flops and
 * gemm_bytes, those of the linear layers and the LM head alone (their weights read once). */
static void step_floor(const struct model_cfg *m, int nseq, int q, int kv, int r, double *flops,
                       double *bytes, double *gemm_flops, double *gemm_bytes)
{
    double h = m->hidden, qd = (double)m->num_heads * m->head_dim, kvd = (double)m->num_kv_heads * m->head_dim;
    double T = (double)nseq * q, R = (double)nseq * r, L = m->num_layers;
    /* a MoE layer reads the experts its T k copies touch (the expected number of distinct ones) */
    const double E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn, S = m->num_shared_experts * Fe;
    const double touched = E > 0 ? E * (1.0 - pow(1.0 - k / E, T)) : 0;
    double lin_flops = 0, lin_params = 0;
    for (int l = 0; l < m->num_layers; l++) {
        const double attn = h * (qd + 2 * kvd) + qd * h;
        if (model_is_moe_layer(m, l)) {
            lin_flops += 2 * T * (attn + h * E + 3 * h * S) + 2 * T * k * 3 * h * Fe;
            lin_params += attn + h * E + 3 * h * S + touched * 3 * h * Fe;
        } else {
            lin_flops += 2 * T * (attn + 3 * h * m->ffn);
            lin_params += attn + 3 * h * m->ffn;
        }
    }
    *gemm_flops = lin_flops + 2 * R * h * m->vocab;
    *flops = *gemm_flops + 4.0 * qd * nseq * (double)q * (q + kv) * L;
    *gemm_bytes = 2 * (lin_params + h * m->vocab);
    *bytes = 2 * (lin_params + 2 * h * m->vocab) + 2.0 * nseq * (kv + q) * 2 * kvd * L + 2.0 * R * m->vocab;
}

/* Median milliseconds of `reps` graph replays of sd (captured now, so with the engine's settings of
 * the moment); says why on stderr when it fails. */
static int replay_ms(struct eng *e, const struct step_desc *sd, int reps, float *ms)
{
    struct ts_err err;
    if (eng_graph_capture(e, sd, &err) || eng_graph_replay(e, reps, ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* A variant of the step under the engine's settings of the moment, captured into kept graph `slot`
 * (replayed side by side with the others by replay_kept) and, with op_ms, profiled eagerly (per-op
 * times); says why on stderr when it fails. */
static int keep_variant(struct eng *e, const struct step_desc *sd, int slot, double *op_ms)
{
    struct ts_err err;
    float eager_ms;
    if (eng_graph_capture(e, sd, &err) || eng_graph_keep(e, slot, &err) ||
        (op_ms && eng_step_profile(e, sd, op_ms, &eager_ms, &err))) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The medians of the kept variants 0..n-1 replayed in turn (eng_graph_replay_kept). */
static int replay_kept(struct eng *e, int n, int reps, float *ms)
{
    struct ts_err err;
    if (eng_graph_replay_kept(e, n, reps, ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Names the warm-up rounds of the replays that follow in the bench's warm-up trace, if any. */
static void trace_as(struct eng *e, const struct engine_bench_opts *o, const char *step, const char *what)
{
    char label[128];
    snprintf(label, sizeof label, "%s: %s", step, what);
    eng_set_warm_trace(e, o->warm_trace, label);
}

struct step_case {
    const char *name;
    int nseq, q, kv, logits;
    double anchor_ms; /* PyTorch eager on an H200 (shared/anchors), for orientation */
};

static void seg_add(struct step_desc *sd, int req, int q, int kv, int logits)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* Fills the caches of requests first .. first + nseq - 1 with a Refresh of `tokens` each: in one
 * step where they fit in a bench step's rows, else sequence by sequence in chunks (each chunk
 * over the ones before); says why on stderr when it fails. */
static int fill_caches(struct eng *e, struct step_desc *sd, int first, int nseq, int tokens)
{
    struct ts_err err;
    if ((int64_t)nseq * tokens <= ENG_BENCH_MAX_TOKENS) { /* every sequence at once */
        step_desc_clear(sd);
        for (int s = 0; s < nseq; s++)
            seg_add(sd, first + s, tokens, 0, 0);
        if (eng_step(e, sd, NULL, NULL, &err))
            goto fail;
        return 0;
    }
    for (int s = 0; s < nseq; s++)
        for (int done = 0; done < tokens; done += ENG_BENCH_MAX_TOKENS) {
            step_desc_clear(sd);
            seg_add(sd, first + s, TS_MIN(tokens - done, ENG_BENCH_MAX_TOKENS), done, 0);
            if (eng_step(e, sd, NULL, NULL, &err))
                goto fail;
        }
    return 0;
fail:
    fprintf(stderr, "engine_bench: filling the caches: %s\n", err.msg);
    return -1;
}

/* A step measured: the median of its graph replays, its floors (FLOPs over the short-run or the
 * held GEMM rate, or bytes over the copy rate; and its linear layers' alone), its workspace beside
 * the simulator's activation estimate (with the knobs that estimate took) */
struct step_meas {
    float ms;
    double fl_ms, by_ms, floor_ms, held_floor_ms, gemm_floor_ms;
    int64_t ws, sim_act;
    struct og_shape shape; /* the step's activation shape, as the simulator plans it */
};

/* the simulator's planned activations for a shape (its default planner, first-fit) */
static int64_t sim_act_bytes(const struct model_cfg *m, const struct og_shape *shape)
{
    int64_t bytes = -1;
    struct ts_err err;
    if (act_planned_bytes(m, planner_find("first-fit"), shape, &bytes, &err))
        fprintf(stderr, "engine_bench: planning the simulator's activations: %s\n", err.msg);
    return bytes;
}

/* Builds in sd the step of nseq sequences (requests first on) of q tokens over kv cached keys, with
 * logit_rows logits each (their caches filled first), replays it as a graph (its warm-up named
 * `label` on the trace) and sets it against its floors; says why on stderr when it fails. */
static int measure_step(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                        const struct ceilings *cl, struct step_desc *sd, int first, int nseq, int q, int kv,
                        int logit_rows, const char *label, struct step_meas *r)
{
    const struct model_cfg *m = &o->model;
    sd->logit_chunk_rows = eo->logit_chunk_rows; /* the bench's chunks, kept by step_desc_clear */
    if (kv > 0 && fill_caches(e, sd, first, nseq, kv + q))
        return -1;
    step_desc_clear(sd);
    for (int s = 0; s < nseq; s++)
        seg_add(sd, first + s, q, kv, logit_rows);
    trace_as(e, o, label, "step");
    if (replay_ms(e, sd, o->reps, &r->ms))
        return -1;
    double flops, bytes, gemm_flops, gemm_bytes;
    step_floor(m, nseq, q, kv, logit_rows, &flops, &bytes, &gemm_flops, &gemm_bytes);
    r->fl_ms = flops / cl->peak * 1e3;
    r->by_ms = bytes / cl->bw * 1e3;
    r->floor_ms = fmax(r->fl_ms, r->by_ms);
    /* the floor at the rate the GEMM holds under the power limit: what a long step can reach */
    r->held_floor_ms = fmax(flops / cl->held * 1e3, r->by_ms);
    r->gemm_floor_ms = fmax(gemm_flops / cl->peak, gemm_bytes / cl->bw) * 1e3;
    r->shape = (struct og_shape){sd->tot.q_tokens, sd->tot.logit_rows, eo->logit_chunk_rows, 1, 0,
                                 eng_ffn_fuses(e, sd->tot.q_tokens), 1, OG_LAYOUT_ENGINE}; /* (one FFN chunk) */
    r->sim_act = sim_act_bytes(m, &r->shape);
    r->ws = eng_step_workspace_bytes(e, sd);
    return 0;
}

/* The bench's engine (the model, its weights, a workspace for a bench step's rows), said on out;
 * says why on stderr when it cannot be made. */
static int bench_engine(const struct engine_bench_opts *o, struct eng_opts *eo, struct eng **e, FILE *out)
{
    const struct model_cfg *m = &o->model;
    struct ts_err err;
    eng_opts_defaults(eo, &o->choices);
    eo->max_tokens = ENG_BENCH_MAX_TOKENS;
    eo->logit_chunk_rows = o->logit_chunk_rows;
    eo->mem_limit = o->mem_limit;
    eo->weights = o->weights;
    eo->warm_s = o->warm_s;
    eo->idle_s = o->idle_s;
    if (eng_create(m, eo, e, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    struct eng_mem mem;
    eng_mem_info(*e, &mem);
    fprintf(out, "engine: %s on %s; weights %.2f GiB, workspace %.2f GiB, KV pool %.2f GiB (%lld tokens)\n",
            m->name, eng_device_name(*e), mem.weights / TS_GIB, mem.workspace / TS_GIB,
            mem.kv_pool / TS_GIB, (long long)mem.kv_pool_tokens);
    return 0;
}

/* The PyTorch anchor's shapes (eng_anchor.h): each of their three steps replayed as a graph against
 * its floor and its floor at the held GEMM rate, with its attention's share of an eager run, and,
 * where the anchor's output gave them, beside PyTorch eager's time and peak activations; then the
 * speed-up's geometric mean. */
int engine_bench_anchor_grid(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    const struct anchor_run *a = o->anchor;
    struct eng *e = NULL;
    struct eng_opts eo;
    struct step_desc sd;
    step_desc_init(&sd);
    struct ts_err err;
    int rc = -1, next_req = 0, nsp = 0;
    double log_sp = 0, sp_min = INFINITY, sp_max = 0;
    char at_min[64] = "", at_max[64] = "";
    fprintf(out, "\nthe PyTorch anchor's shapes (%s", o->anchor_path ? o->anchor_path : "the script's grid, no times");
    if (a->gemm_tflops > 0 && a->copy_tbps > 0)
        fprintf(out, "; its ceilings: GEMM %.1f TFLOP/s, copy %.2f TB/s", a->gemm_tflops, a->copy_tbps);
    fprintf(out, ")\n");
    if (bench_engine(o, &eo, &e, out))
        goto done;
    fprintf(out, "%-16s %-15s %9s %9s %8s %7s %6s %9s %8s %10s %10s %10s\n", "B x T (masked)", "step", "ms",
            "floor_ms", "x_floor", "x_held", "attn", "torch_ms", "speed-up", "workspace", "sim_est", "torch_act");
    for (int i = 0; i < a->n; i++) {
        const struct anchor_case *c = &a->c[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%d x %d (%d)", c->B, c->T, c->masked);
        for (int st = 0; st < ANCHOR_STEPS; st++) {
            int32_t q, kv, lr;
            anchor_step_shape(c, (enum anchor_step)st, &q, &kv, &lr);
            const char *name = anchor_step_name((enum anchor_step)st);
            if ((int64_t)c->B * q > ENG_BENCH_MAX_TOKENS) {
                fprintf(out, "%-16s %-15s skipped: %d x %d tokens, more than the %d a bench step holds\n", shape,
                        name, c->B, q, ENG_BENCH_MAX_TOKENS);
                continue;
            }
            const int first = next_req;
            next_req += c->B;
            char label[64];
            snprintf(label, sizeof label, "anchor %s, %s", shape, name);
            struct step_meas sm;
            float eager_ms;
            double op_ms[OP_COUNT];
            if (measure_step(e, o, &eo, cl, &sd, first, c->B, q, kv, lr, label, &sm))
                goto done;
            if (eng_step_profile(e, &sd, op_ms, &eager_ms, &err)) {
                fprintf(stderr, "engine_bench: %s\n", err.msg);
                goto done;
            }
            const float ms = sm.ms;
            const double torch_ms = c->ms[st];
            const double torch_act = st < 2 ? c->peak_act_gib[st] : -1;
            char t_ms[16] = "-", sp[16] = "-", t_act[16] = "-";
            if (torch_ms > 0) {
                snprintf(t_ms, sizeof t_ms, "%.3f", torch_ms);
                snprintf(sp, sizeof sp, "%.2f", torch_ms / ms);
                log_sp += log(torch_ms / ms), nsp++;
                if (torch_ms / ms < sp_min)
                    sp_min = torch_ms / ms, snprintf(at_min, sizeof at_min, "%s, %s", shape, name);
                if (torch_ms / ms > sp_max)
                    sp_max = torch_ms / ms, snprintf(at_max, sizeof at_max, "%s, %s", shape, name);
            }
            if (torch_act >= 0)
                snprintf(t_act, sizeof t_act, "%.3fGiB", torch_act);
            fprintf(out, "%-16s %-15s %9.3f %9.3f %8.3f %7.3f %5.1f%% %9s %8s %7.3fGiB %7.3fGiB %10s\n", shape, name,
                    ms, sm.floor_ms, ms / sm.floor_ms, ms / sm.held_floor_ms, 100.0 * op_ms[OP_ATTN] / eager_ms, t_ms,
                    sp, sm.ws / TS_GIB, sm.sim_act / TS_GIB, t_act);
            if (o->json) {
                fprintf(o->json, "{\"anchor_step\":\"%s\",\"B\":%d,\"T\":%d,\"masked\":%d,\"q\":%d,\"kv\":%d,"
                                 "\"logit_rows\":%d,\"ms\":%.4f,\"floor_ms\":%.4f,\"held_floor_ms\":%.4f,"
                                 "\"bound\":\"%s\",\"eager_ms\":%.4f,\"workspace_bytes\":%lld,\"sim_act_bytes\":%lld",
                        name, c->B, c->T, c->masked, q, kv, lr, ms, sm.floor_ms, sm.held_floor_ms,
                        sm.fl_ms >= sm.by_ms ? "compute" : "memory", eager_ms, (long long)sm.ws, (long long)sm.sim_act);
                if (torch_ms > 0)
                    fprintf(o->json, ",\"torch_ms\":%.4f", torch_ms);
                if (torch_act >= 0)
                    fprintf(o->json, ",\"torch_peak_act_gib\":%.4f", torch_act);
                for (int op = 0; op < OP_COUNT; op++)
                    fprintf(o->json, ",\"%s_ms\":%.4f", cost_op_name((enum cost_op)op), op_ms[op]);
                fprintf(o->json, "}\n");
            }
            for (int s = 0; s < c->B; s++)
                eng_release(e, first + s);
        }
    }
    if (nsp > 0)
        fprintf(out, "speed-up over PyTorch eager: geometric mean %.2f x over %d steps, from %.2f x (%s) to "
                     "%.2f x (%s)\n", exp(log_sp / nsp), nsp, sp_min, at_min, sp_max, at_max);
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}

/* A step's variants, side by side, each group's replays interleaved (a variant timed after the
 * others would meet a card they left hotter): programmatic against plain launches, either
 * attention kernel alone, the FFN split, fused and auto where the fused kernel runs; then its
 * linear layers and LM head alone and all but them, each as a graph (how near the GEMMs alone come
 * to the step's floor, under the clock the step runs at). */
struct variants {
    float launch_ms[2], impl_ms[2], ffn_ms[3], smooth_ms[2], lin_ms, rest_ms;
    double impl_op_ms[2][OP_COUNT], ffn_op_ms[3][OP_COUNT], smooth_op_ms[2][OP_COUNT];
    bool fused_runs;
};

static int bench_variants(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                          const struct step_case *c, const struct step_desc *sd, struct variants *v)
{
    struct ts_err err;
    memset(v, 0, sizeof *v);
    int bad = keep_variant(e, sd, 0, NULL);
    k_set_pdl(0);
    bad = bad || keep_variant(e, sd, 1, NULL);
    k_set_pdl(1);
    trace_as(e, o, c->name, "programmatic / plain launches");
    bad = bad || replay_kept(e, 2, o->reps, v->launch_ms);
    for (int impl = 0; impl < 2 && !bad; impl++) {
        eng_set_attention(e, impl);
        bad = keep_variant(e, sd, impl, v->impl_op_ms[impl]);
    }
    eng_set_attention(e, eo->attention);
    trace_as(e, o, c->name, "mma.sync / wgmma attention");
    bad = bad || replay_kept(e, 2, o->reps, v->impl_ms);
    v->fused_runs = eng_ffn_fused_runs(e);
    for (int f = 0; f < 3 && v->fused_runs && !bad; f++) {
        eng_set_ffn(e, f);
        bad = keep_variant(e, sd, f, v->ffn_op_ms[f]);
    }
    eng_set_ffn(e, eo->ffn);
    trace_as(e, o, c->name, "FFN split / fused / auto");
    bad = bad || (v->fused_runs && replay_kept(e, 3, o->reps, v->ffn_ms));
    struct step_desc smooth = *sd; /* the same segments with dInfer's IterSmooth */
    smooth.iter_smooth = true;
    bad = bad || keep_variant(e, sd, 0, v->smooth_op_ms[0]) || keep_variant(e, &smooth, 1, v->smooth_op_ms[1]);
    trace_as(e, o, c->name, "without / with IterSmooth");
    bad = bad || replay_kept(e, 2, o->reps, v->smooth_ms);
    /* one whole step under the default settings first: the ops left out would otherwise leave
     * their outputs as the variants before wrote them under other plans (possibly never written:
     * zeros run GEMMs faster and cooler), and the kept ones read those */
    if (!bad && eng_step(e, sd, NULL, NULL, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        bad = 1;
    }
    if (!bad) {
        const uint32_t lin_ops = eng_linear_ops();
        eng_set_skip_ops(e, ~lin_ops);
        trace_as(e, o, c->name, "linear layers alone");
        bad = replay_ms(e, sd, o->reps, &v->lin_ms);
        eng_set_skip_ops(e, lin_ops);
        trace_as(e, o, c->name, "all but the linear layers");
        bad = bad || replay_ms(e, sd, o->reps, &v->rest_ms);
        eng_set_skip_ops(e, 0);
    }
    return bad ? -1 : 0;
}

/* The variants said on out and o->json, beside the step's floors; the fused FFN's workspace beside
 * the simulator's estimate of it. */
static void report_variants(struct eng *e, const struct engine_bench_opts *o, const struct eng_opts *eo,
                            const struct step_case *c, const struct step_desc *sd, const struct step_meas *sm,
                            const struct variants *v, FILE *out)
{
    const double floor_ms = sm->floor_ms, lin_floor_ms = sm->gemm_floor_ms;
    fprintf(out, "    linear layers + LM head alone (with the final norm) %.3f ms: %.3f x their floor "
                 "(%.3f ms), %.3f x the step's; all but them %.3f ms\n", v->lin_ms, v->lin_ms / lin_floor_ms,
            lin_floor_ms, v->lin_ms / floor_ms, v->rest_ms);
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"gemm_only_ms\":%.4f,\"gemm_floor_ms\":%.4f,"
                         "\"x_floor_gemm_only\":%.4f,\"non_gemm_ms\":%.4f}\n", c->name, v->lin_ms, lin_floor_ms,
                v->lin_ms / floor_ms, v->rest_ms);
    fprintf(out, "    side by side: plain launches %.3f ms (%.3f x floor), programmatic %.3f ms: it saves %.1f%%\n",
            v->launch_ms[1], v->launch_ms[1] / floor_ms, v->launch_ms[0],
            100.0 * (1.0 - v->launch_ms[0] / v->launch_ms[1]));
    fprintf(out, "    side by side: without IterSmooth %.3f ms, with it %.3f ms (+%.1f%%); eager, the LM head %.3f and %.3f "
                 "ms, sampling %.3f and %.3f ms\n", v->smooth_ms[0], v->smooth_ms[1],
            100.0 * (v->smooth_ms[1] / v->smooth_ms[0] - 1.0), v->smooth_op_ms[0][OP_LM_HEAD],
            v->smooth_op_ms[1][OP_LM_HEAD], v->smooth_op_ms[0][OP_SAMPLE], v->smooth_op_ms[1][OP_SAMPLE]);
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"iter_smooth_ms\":%.4f,\"plain_ms\":%.4f,\"lm_head_ms\":[%.4f,%.4f],"
                         "\"sample_ms\":[%.4f,%.4f]}\n", c->name, v->smooth_ms[1], v->smooth_ms[0],
                v->smooth_op_ms[0][OP_LM_HEAD], v->smooth_op_ms[1][OP_LM_HEAD], v->smooth_op_ms[0][OP_SAMPLE],
                v->smooth_op_ms[1][OP_SAMPLE]);
    fprintf(out, "    side by side: mma.sync attention %.3f ms (%.3f x floor), wgmma %.3f ms (%.3f x); eager, "
                 "their attention %.2f and %.2f ms\n", v->impl_ms[0], v->impl_ms[0] / floor_ms, v->impl_ms[1],
            v->impl_ms[1] / floor_ms, v->impl_op_ms[0][OP_ATTN], v->impl_op_ms[1][OP_ATTN]);
    if (v->fused_runs) {
        eng_set_ffn(e, 2);
        const bool auto_fuses = eng_ffn_fuses(e, c->nseq * c->q);
        eng_set_ffn(e, 0); /* both plans' workspace, and the simulator's estimate of the fused one */
        const int64_t ws_split = eng_step_workspace_bytes(e, sd);
        eng_set_ffn(e, 1);
        const int64_t ws_fused = eng_step_workspace_bytes(e, sd);
        eng_set_ffn(e, eo->ffn);
        struct og_shape fused = sm->shape;
        fused.fused_ffn = true;
        fprintf(out, "    side by side: FFN split %.3f ms (%.3f x floor), fused %.3f ms (%.3f x), auto (%s) "
                     "%.3f ms (%.3f x); eager, their gate_up + act %.2f, %.2f and %.2f ms\n", v->ffn_ms[0],
                v->ffn_ms[0] / floor_ms, v->ffn_ms[1], v->ffn_ms[1] / floor_ms, auto_fuses ? "fused" : "split",
                v->ffn_ms[2], v->ffn_ms[2] / floor_ms, v->ffn_op_ms[0][OP_GATE_UP] + v->ffn_op_ms[0][OP_ACT],
                v->ffn_op_ms[1][OP_GATE_UP] + v->ffn_op_ms[1][OP_ACT],
                v->ffn_op_ms[2][OP_GATE_UP] + v->ffn_op_ms[2][OP_ACT]);
        fprintf(out, "    fused FFN workspace %.3f GiB (simulator's estimate %.3f GiB) against %.3f GiB split\n",
                ws_fused / TS_GIB, sim_act_bytes(&o->model, &fused) / TS_GIB,
                ws_split / TS_GIB);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"split_ffn_ms\":%.4f,\"fused_ffn_ms\":%.4f,"
                             "\"auto_ffn_ms\":%.4f}\n", c->name, v->ffn_ms[0], v->ffn_ms[1], v->ffn_ms[2]);
    }
    if (o->json)
        fprintf(o->json, "{\"case\":\"%s\",\"plain_launch_ms\":%.4f,\"programmatic_launch_ms\":%.4f}\n"
                         "{\"case\":\"%s\",\"mma_attention_ms\":%.4f,\"wgmma_attention_ms\":%.4f}\n",
                c->name, v->launch_ms[1], v->launch_ms[0], c->name, v->impl_ms[0], v->impl_ms[1]);
}

/* One eager run of the step with an event after each op, its times said by op. */
static int report_eager(struct eng *e, const struct engine_bench_opts *o, const struct step_case *c,
                        const struct step_desc *sd, FILE *out)
{
    double op_ms[OP_COUNT];
    float eager_ms;
    struct ts_err err;
    if (eng_step_profile(e, sd, op_ms, &eager_ms, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return -1;
    }
    fprintf(out, "    eager %.3f ms by op:", eager_ms);
    for (int op = 0; op < OP_COUNT; op++)
        if (op_ms[op] > 0.0005)
            fprintf(out, " %s %.2f", cost_op_name((enum cost_op)op), op_ms[op]);
    fprintf(out, "\n");
    if (o->json) {
        fprintf(o->json, "{\"case\":\"%s\",\"eager_ms\":%.4f", c->name, eager_ms);
        for (int op = 0; op < OP_COUNT; op++)
            fprintf(o->json, ",\"%s_ms\":%.4f", cost_op_name((enum cost_op)op), op_ms[op]);
        fprintf(o->json, "}\n");
    }
    return 0;
}

/* A --step's name, on the output and the warm trace (tessera calib clock reads it back). */
static void step_label(char *buf, size_t len, const int32_t st[4])
{
    snprintf(buf, len, "step %dx%d over %d cached, %d logits", st[0], st[1], st[2], st[3]);
}

/* The bench's steps (the default four, or the user's --step ones): each against its floors and
 * beside PyTorch's recorded time, then its variants and its ops; then the GEMMs tuned. */
int engine_bench_steps(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const struct step_case default_cases[] = {
        {"refresh 16x512, all logits", 16, 512, 0, 512, 244.376},
        {"refresh 16x512, 256 masked logits", 16, 512, 0, 256, 242.08},
        {"reuse 1 x 32 over 480 cached", 1, 32, 480, 32, 31.067},
        {"reuse 16 x 32 over 480 cached", 16, 32, 480, 32, 33.824},
    };
    struct step_case own[ENG_BENCH_MAX_STEPS]; /* --step: the user's steps, named by their shape */
    char own_names[ENG_BENCH_MAX_STEPS][80];
    for (int k = 0; k < o->nsteps; k++) {
        const int32_t *st = o->steps[k];
        step_label(own_names[k], sizeof own_names[k], st);
        own[k] = (struct step_case){own_names[k], st[0], st[1], st[2], st[3], 0};
    }
    const struct step_case *cases = o->nsteps ? own : default_cases;
    const size_t ncases = o->nsteps ? (size_t)o->nsteps : TS_ARRAY_LEN(default_cases);
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    int rc = -1, next_req = 0;
    if (bench_engine(o, &eo, &e, out))
        goto done;
    if (!o->nsteps)
        fprintf(out, "\n(torch_ms: PyTorch eager from the anchor's recorded H200 run, ../shared/anchors, for "
                     "orientation; make bench-engine ANCHOR=... runs it beside this bench)");
    fprintf(out, "\n%-36s %9s %9s %9s %8s %10s %12s %12s\n", "step", "ms", "floor_ms", "bound",
            "x_floor", "torch_ms", "workspace", "sim_act_est");
    for (size_t i = 0; i < ncases; i++) {
        const struct step_case *c = &cases[i];
        struct step_meas sm;
        struct variants v;
        if (measure_step(e, o, &eo, cl, &sd, next_req, c->nseq, c->q, c->kv, c->logits, c->name, &sm))
            goto done;
        char torch[16] = "-";
        if (c->anchor_ms > 0)
            snprintf(torch, sizeof torch, "%.3f", c->anchor_ms);
        fprintf(out, "%-36s %9.3f %9.3f %9s %8.3f %10s %10.3fGiB %10.3fGiB\n", c->name, sm.ms, sm.floor_ms,
                sm.fl_ms >= sm.by_ms ? "compute" : "memory", sm.ms / sm.floor_ms, torch, sm.ws / TS_GIB,
                sm.sim_act / TS_GIB);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"ms\":%.4f,\"floor_ms\":%.4f,\"compute_floor_ms\":%.4f,"
                             "\"memory_floor_ms\":%.4f,\"x_floor\":%.4f,\"workspace_bytes\":%lld,"
                             "\"sim_act_bytes\":%lld}\n", c->name, sm.ms, sm.floor_ms, sm.fl_ms, sm.by_ms,
                    sm.ms / sm.floor_ms, (long long)sm.ws, (long long)sm.sim_act);
        fprintf(out, "    floor at the held GEMM rate %.3f ms: %.3f x\n", sm.held_floor_ms, sm.ms / sm.held_floor_ms);
        if (o->json)
            fprintf(o->json, "{\"case\":\"%s\",\"held_floor_ms\":%.4f,\"x_held_floor\":%.4f}\n", c->name,
                    sm.held_floor_ms, sm.ms / sm.held_floor_ms);
        if (bench_variants(e, o, &eo, c, &sd, &v))
            goto done;
        report_variants(e, o, &eo, c, &sd, &sm, &v, out);
        if (report_eager(e, o, c, &sd, out))
            goto done;
        for (int s = 0; s < c->nseq; s++)
            eng_release(e, next_req + s);
        next_req += c->nseq;
    }
    fprintf(out, "\ntuned GEMMs of those steps (cuBLASLt, fastest of the heuristic's candidates):\n");
    eng_report_gemms(e, out);
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}

/* FOCUS's eviction at a batch of nseq sequences' blocks of 32 over 480 cached keys (the caches of
 * sequences 0..nseq-1 filled): the whole block through every layer beside evicting steps that keep K
 * of its 32 rows after layers 0 and 1 (the block's rows its candidates, logits for the kept ones),
 * each replayed after its own warm-up. Beyond layer 1 a step takes its time less the full step's two
 * front layers' share (2 / layers of it): the goal is at most K / 32 + 0.15 of the full step's.
 * Block-causal models attend block-causally, as the focus policy runs them. */
static int focus_at(struct eng *e, const struct engine_bench_opts *o, const struct ceilings *cl, int nseq, FILE *out)
{
    enum { B = 32, KV = 480 };
    static const int keep[] = {2, 4, 8, 16, 32};
    const int nv = 1 + (int)TS_ARRAY_LEN(keep);
    const struct model_cfg *m = &o->model;
    struct step_desc sd[1 + TS_ARRAY_LEN(keep)];
    for (int v = 0; v < nv; v++) {
        step_desc_init(&sd[v]);
        sd[v].logit_chunk_rows = o->logit_chunk_rows;
        sd[v].attn_block = m->block_causal ? B : 0;
        sd[v].front_layers = 2;
        sd[v].evict = v > 0;
    }
    float ms[1 + TS_ARRAY_LEN(keep)], last;
    int rc = -1;
    for (int s = 0; s < nseq; s++) {
        seg_add(&sd[0], s, B, KV, B);
        for (int v = 1; v < nv; v++) {
            const struct segment g = {.req_id = s, .phase = PHASE_BLOCK, .q = keep[v - 1], .kv = KV + B - keep[v - 1],
                                      .kv_write = keep[v - 1], .logit_rows = keep[v - 1], .q_front = B,
                                      .kv_front = KV, .kv_write_front = B, .probe = B, .picked = keep[v - 1]};
            step_desc_add(&sd[v], &g);
        }
    }
    /* in turn, the whole block both first and last (kept graphs share one plan's metadata, so steps
     * of different plans cannot be replayed side by side): its time is the mean of the two */
    for (int v = 0; v <= nv; v++) {
        char label[32];
        snprintf(label, sizeof label, "focus %d %d", nseq, v);
        trace_as(e, o, label, "step");
        if (replay_ms(e, &sd[v % nv], o->reps, v < nv ? &ms[v] : &last))
            goto done;
    }
    ms[0] = (ms[0] + last) / 2;
    const double front = ms[0] * 2.0 / m->num_layers, beyond = ms[0] - front;
    fprintf(out, "\nFOCUS's eviction, %d x %d over %d cached keys%s (the full block, then K of its %d kept after "
                 "layer 1;\nfloor: the later layers' and LM head's floor beyond layer 1, as a share of the full "
                 "step's time there):\n%-10s %9s %9s %14s %9s %9s\n", nseq, B, KV,
            m->block_causal ? ", block-causal" : "", B, "kept", "ms", "x_full", "beyond_layer1", "floor", "goal");
    fprintf(out, "%-10s %9.3f %9.3f %14.3f %9s %9s\n", "all 32", ms[0], 1.0, 1.0, "-", "-");
    for (int v = 1; v < nv; v++) {
        const int K = keep[v - 1];
        const double r = (ms[v] - front) / beyond, goal = K / (double)B + 0.15;
        double flops, bytes, gflops, gbytes; /* the same rows through every layer, less the two front ones */
        step_floor(m, nseq, K, KV + B - K, K, &flops, &bytes, &gflops, &gbytes);
        const double later = (m->num_layers - 2.0) / m->num_layers;
        const double floor = fmax(flops * later / cl->peak, bytes * later / cl->bw) * 1e3 / beyond;
        fprintf(out, "%-10d %9.3f %9.3f %14.3f %9.3f %9.3f%s\n", K, ms[v], ms[v] / ms[0], r, floor, goal,
                r <= goal ? "" : floor > goal ? "  (goal below the floor)" : "  (over)");
        if (o->json)
            fprintf(o->json, "{\"case\":\"focus %dx%d over %d, keep %d\",\"ms\":%.4f,\"full_ms\":%.4f,"
                             "\"beyond_layer1\":%.4f,\"floor\":%.4f,\"goal\":%.4f}\n", nseq, B, KV, K, ms[v], ms[0],
                    r, floor, goal);
    }
    rc = 0;
done:
    for (int v = 0; v < nv; v++)
        step_desc_free(&sd[v]);
    return rc;
}

/* FOCUS's eviction (focus_at) at 16 sequences, the Reuse steps' batch elsewhere in the bench, and at
 * 32 and 64, the smallest batches FOCUS's throughput runs (its Fig. 6: 32 to 256) */
int engine_bench_focus(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const int batches[] = {16, 32, 64};
    const int most = batches[TS_ARRAY_LEN(batches) - 1];
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc fill;
    step_desc_init(&fill);
    fill.attn_block = o->model.block_causal ? 32 : 0;
    int rc = -1;
    if (bench_engine(o, &eo, &e, out) || fill_caches(e, &fill, 0, most, 480 + 32))
        goto done;
    for (size_t i = 0; i < TS_ARRAY_LEN(batches); i++)
        if (focus_at(e, o, cl, batches[i], out))
            goto done;
    rc = 0;
done:
    eng_destroy(e);
    step_desc_free(&fill);
    return rc;
}

/* --only clock: each step of the ladder (or the --step ones) alone, its warm-up traced from a cool card:
 * Reuse and Refresh steps from a light load to the heaviest a serving schedule runs. */
int engine_bench_clock(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out)
{
    static const int32_t ladder[][4] = {{1, 32, 480, 32}, {1, 64, 0, 64},   {1, 128, 0, 128},  {1, 256, 0, 256},
                                        {1, 384, 0, 384}, {1, 768, 0, 768}, {8, 32, 480, 32}, {16, 32, 480, 32}};
    const int n = o->nsteps ? o->nsteps : (int)TS_ARRAY_LEN(ladder);
    struct eng_opts eo;
    struct eng *e = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    int rc = -1, next_req = 0;
    if (bench_engine(o, &eo, &e, out))
        goto done;
    fprintf(out, "\nthe clock under the power limit: each step from a card idle for %.1f s, warmed up for %.1f s "
                 "(the warm trace)\n%-36s %9s\n", eo.idle_s, eo.warm_s, "step", "held_ms");
    for (int i = 0; i < n; i++) {
        const int32_t *st = o->nsteps ? o->steps[i] : ladder[i];
        char name[80];
        step_label(name, sizeof name, st);
        struct step_meas sm;
        if (measure_step(e, o, &eo, cl, &sd, next_req, st[0], st[1], st[2], st[3], name, &sm))
            goto done;
        fprintf(out, "%-36s %9.3f\n", name, sm.ms);
        for (int s = 0; s < st[0]; s++)
            eng_release(e, next_req + s);
        next_req += st[0];
    }
    rc = 0;
done:
    step_desc_free(&sd);
    eng_destroy(e);
    return rc;
}
