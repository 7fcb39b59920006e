/*
 * cost_roofline.c: the roofline back end. Each op of the forward costs
 *     gpu = max(FLOPs / (peak * eff), bytes / (bandwidth * mem_eff))
 * and the host issues its kernels at launch_s each; the host runs ahead of the GPU, so an op costs
 * max(gpu, kernels * launch_s): large ops hide their launches, small ones are launch-bound. The
 * step adds host_step_s + host_seg_s per segment.
 *
 * FLOPs and bytes per op, T packed tokens, R logit rows, W K/V tokens written, a = 2 bytes (activations
 * and K/V), w the weights' bytes (the model's weight_bytes: 2, or 1 under --weights fp8, whose GEMMs
 * over weights, W8A8, run at the card's FP8 rate and write bf16):
 *   norm       2 per layer, read + write [T,h], and the final one
 *   (a step whose segments have front shapes prices its first front_layers layers at the front
 *   sums and the others at the later ones; the embedding takes the front rows, the final norm the
 *   later rows and the carried ones)
 *   qkv        2*T*h*(qd+2kvd); weights + in + out
 *   rope       q and k rows, read + write
 *   kv_write   W tokens of K and V, read + write
 *   attention  4*head_dim*heads*sum(q*(q+kv)); Q, O and each segment's K/V read once
 *   kv_select  sparse selection (segments with keep > 0), per layer: the scoring rows' mean query
 *              against each candidate key (2*cand*qd), the fp32 scores written, pooled and read
 *              back per K/V head, and the kept tokens' K and V gathered into the cache
 *   feat_cache dLLM-Cache's feature cache (cache_outputs, probe or carry rows), per layer as the
 *              engine runs it: the computed rows' attention and FFN outputs cached and added (each
 *              half: the output and x read, the cache and x written), the carried rows' x plus
 *              both cached outputs (x, two outputs read, x written); later layers: the probe rows'
 *              norm, V re-projection (weights, rows in, V out) and similarity with the cached V
 *              (new and cached V read, the new one written)
 *   (Elastic-Cache's layer inputs, cache_inputs: each layer's computed rows read and their cache
 *   rows written, feat_cache; a step with narrower front shapes gathers its later rows once)
 *   o_proj     2*T*qd*h
 *   resid      2 per layer, read 2 + write 1 [T,h]
 *   gate_up    2*T*h*2F, down 2*T*F*h, act read [T,2F] write [T,F]; FFN chunks re-read weights;
 *              fused (impl fused_ffn, dense layers): gate_up writes [T,F], no act op (SwiGLU's
 *              element-wise work runs in the GEMM's epilogue, beside its tensor-core work)
 *   MoE        router 2*T*h*E; experts 6*T*k*h*Fe FLOPs, weight bytes of the distinct experts
 *              touched, E*(1-(1-k/E)^T) under balanced routing; shared experts as a dense FFN
 *   lm_head    2*R*h*V; every chunk re-reads the h*V weights
 *   (tensor parallelism over N GPUs: the ops over heads, FFN columns and rows and the vocabulary
 *   run 1/N of their work a GPU; norms, residual adds and the embedding run whole on each; each
 *   layer adds two all-reduces of its T x h bf16 rows, allreduce.c, and the sampler one all-gather of
 *   three fp32 a logit row from each GPU, cost_tp_sample_gather_s; expert parallelism over N: the
 *   experts' FLOPs and bytes 1/N a GPU, everything else whole, one all-reduce of T x h a MoE layer)
 *   sample     max/argmax/confidence over R*V logits, plus the softmax copy if the
 *              implementation makes one; credit decoding adds its fusion, CREDIT_BYTES a logit
 *              (the logits read, an fp32 softmax, the credit matrix decayed, read and scattered
 *              into, the fused logits written and read again by the threshold pass)
 */
#include <math.h>
#include <string.h>

#include "cost.h"

struct pricer {
    const struct cost_ctx *c;
    struct cost_breakdown *bd;
    double total;
    double tp;        /* the tensor-parallel degree: ops split over it run 1/tp of their work a GPU */
    double gemm_rate; /* the tensor cores' rate for a GEMM over the weights: bf16's, or FP8's (w = 1) */
};

/* Adds `count` instances of an op, each with the given FLOPs (at `rate`) and bytes. */
static void add_op_at(struct pricer *p, enum cost_op op, double count, double flops, double bytes, double eff,
                      double rate);

/* Adds `count` instances of an op, each with the given FLOPs and bytes. */
static void add_op(struct pricer *p, enum cost_op op, double count, double flops, double bytes, double eff)
{
    add_op_at(p, op, count, flops, bytes, eff, p->c->gpu.bf16_flops);
}

/* A GEMM over the weights, tensor parallelism splitting it: its FLOPs at the weights' rate. */
static void add_gemm(struct pricer *p, enum cost_op op, double count, double flops, double bytes, double eff)
{
    add_op_at(p, op, count, flops / p->tp, bytes / p->tp, eff, p->gemm_rate);
}

/* The same for an op tensor parallelism splits over the GPUs (heads, FFN columns and rows, the
 * vocabulary): each runs 1/tp of its work. */
static void add_split(struct pricer *p, enum cost_op op, double count, double flops, double bytes, double eff)
{
    add_op(p, op, count, flops / p->tp, bytes / p->tp, eff);
}

static void add_op_at(struct pricer *p, enum cost_op op, double count, double flops, double bytes, double eff,
                      double rate)
{
    if (count <= 0)
        return;
    const struct gpu_spec *g = &p->c->gpu;
    const struct impl_profile *im = &p->c->impl;
    const double tc = flops / (rate * eff), tm = bytes / (g->mem_bw * im->mem_eff);
    double t = count * fmax(fmax(tc, tm), im->kernels[op] * im->launch_s);
    p->total += t;
    if (p->bd) {
        p->bd->op_s[op] += t;
        p->bd->flops += count * flops;
        if (tc >= tm)
            p->bd->compute_s += count * tc;
        else
            p->bd->memory_s += count * tm;
    }
}

/* The ops of `layers` layers of m (the model, or its global or sliding layers' view: model_layer_view)
 * whose shape sums are lt (the front layers' or the later ones'); k_eq_v: their V is their K (no V
 * projection); `later`: the later layers, where selections, probes and carried rows run. */
static void layer_ops(struct pricer *p, const struct model_cfg *m, bool k_eq_v, const struct step_desc *sd,
                      const struct layer_totals *lt, double layers, bool later)
{
    if (layers <= 0 || lt->q_tokens <= 0)
        return;
    const struct cost_ctx *c = p->c;
    const struct impl_profile *im = &c->impl;
    const struct step_totals *t = &sd->tot;
    double a = 2.0, w = m->weight_bytes, h = m->hidden, qd = model_q_dim(m), kvd = model_kv_dim(m),
           proj = k_eq_v ? kvd : 2 * kvd;
    double T = (double)lt->q_tokens, W = (double)lt->kv_write_tokens;
    double share = layers / m->num_layers, moe = model_num_moe_layers(m) * share, dense = layers - moe;
    double chunks = sd->ffn_chunks > 0 ? sd->ffn_chunks : 1;
    double ge = im->gemm_eff;

    add_op(p, OP_NORM, 2 * layers, 5 * T * h, 2 * T * h * a, ge);
    add_gemm(p, OP_QKV, layers, 2 * T * h * (qd + proj), w * h * (qd + proj) + a * (T * h + T * (qd + proj)), ge);
    /* (with a loop's work over every cached key it reads: impl_profile.key_rope_bytes) */
    const double keys = im->key_rope_bytes > 0 ? (double)lt->attn_kv_read - T : 0;
    add_split(p, OP_ROPE, layers, 6 * T * (qd + kvd) + 6 * keys * kvd,
              2 * a * T * (qd + kvd) + im->key_rope_bytes * keys * kvd, ge);
    add_split(p, OP_KV_WRITE, W > 0 ? layers : 0, 0, 2 * a * W * 2 * kvd, ge);
    add_split(p, OP_ATTN, layers, 4.0 * qd * lt->attn_qk_pairs, a * (2 * T * qd + (double)lt->attn_kv_read * 2 * kvd),
           im->attn_eff);
    if (later) {
        const double cand = (double)t->sel_cand, rows = (double)t->sel_rows, hkv = m->num_kv_heads;
        add_split(p, OP_KV_SELECT, t->sel_segs > 0 ? layers : 0, 2 * cand * qd + rows * qd,
               a * (cand * kvd + rows * qd) + 3 * 4 * cand * hkv + 2 * 2 * a * (double)t->sel_keep * kvd, ge);
    }
    if (sd->cache_outputs || (later && ((t->probe_tokens > 0 && !sd->evict) || t->carry_tokens > 0))) {
        /* the computed rows' two outputs cached and added, the other rows' two cached ones added;
         * later layers: the probe's norm, V re-projection and similarity (see the header) */
        const double P = later ? (double)t->probe_tokens : 0, C = fmax((double)t->rows - T, 0);
        const double flops = P * (5 * h + 2 * h * kvd + 3 * kvd) + 2 * T * h + 2 * C * h;
        double bytes = a * (8 * T * h + 4 * C * h);
        if (P > 0)
            bytes += a * (3 * P * h + 4 * P * kvd) + w * h * kvd; /* (the V projection's weights at w) */
        add_split(p, OP_FEAT_CACHE, layers, flops, bytes, ge);
    }
    if (sd->cache_inputs) /* Elastic-Cache's layer inputs: each computed row's x read, its cache row written */
        add_op(p, OP_FEAT_CACHE, layers, 0, 2 * a * T * h, ge);
    add_gemm(p, OP_OPROJ, layers, 2 * T * qd * h, w * qd * h + a * (T * qd + T * h), ge);
    add_op(p, OP_RESID, 2 * layers, T * h, 3 * T * h * a, ge);
    if (p->tp > 1) { /* the O and down projections' partial sums, all-reduced over the GPUs a layer */
        const double t_ar = allreduce_s(c->ar, T * h * a);
        p->total += 2 * layers * t_ar;
        if (p->bd)
            p->bd->op_s[OP_ALLREDUCE] += 2 * layers * t_ar;
    }
    if (dense > 0) {
        double F = m->ffn;
        const double out = im->fused_ffn ? F : 2 * F; /* fused: SwiGLU in the epilogue writes [T, F] */
        add_gemm(p, OP_GATE_UP, dense * chunks, 2 * T / chunks * h * 2 * F, w * 2 * F * h + a * T / chunks * (h + out), ge);
        if (!im->fused_ffn)
            add_split(p, OP_ACT, dense * chunks, 4 * T / chunks * F, a * T / chunks * 3 * F, ge);
        add_gemm(p, OP_DOWN, dense * chunks, 2 * T / chunks * F * h, w * F * h + a * T / chunks * (F + h), ge);
    }
    if (moe > 0) {
        double E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn;
        double touched = E * (1.0 - pow(1.0 - k / E, T));
        add_op(p, OP_ROUTER, moe, 2 * T * h * E, a * (h * E + T * h) + 4 * T * E, ge); /* (kept in bf16) */
        const double ep = c->ep > 1 ? c->ep : 1; /* expert parallelism: a GPU's share of the experts */
        add_gemm(p, OP_EXPERTS, moe, 6 * T * k * h * Fe / ep, (w * touched * 3 * h * Fe + a * T * k * (2 * h + 3 * Fe)) / ep,
                 ge);
        if (m->num_shared_experts > 0) {
            double S = Fe * m->num_shared_experts;
            add_gemm(p, OP_GATE_UP, moe, 2 * T * h * 2 * S, w * 2 * S * h + a * T * (h + 2 * S), ge);
            add_split(p, OP_ACT, moe, 4 * T * S, a * T * 3 * S, ge);
            add_gemm(p, OP_DOWN, moe, 2 * T * S * h, w * S * h + a * T * (S + h), ge);
        }
    }
}

/* The front and later layers' attention sums of a sliding layer of `window`: a row scores the keys
 * within the window on either side of it among its segment's, at most window + min(q, window) (exact
 * for a segment of q <= window rows over a cache of window keys or more, an upper bound else), and
 * reads window + q keys at most. */
static void window_totals(const struct step_desc *sd, int32_t window, struct layer_totals *front,
                          struct layer_totals *later)
{
    front->attn_qk_pairs = later->attn_qk_pairs = 0;
    front->attn_kv_read = later->attn_kv_read = 0;
    for (int32_t i = 0; i < sd->num_segs; i++) {
        const struct segment *g = &sd->segs[i];
        for (int f = 0; f < 2; f++) {
            int32_t q, kv, w;
            segment_layer_shape(g, f, &q, &kv, &w);
            const double reach = (double)window + TS_MIN(q, window), keys = fmin((double)q + kv, reach);
            struct layer_totals *lt = f ? front : later;
            lt->attn_qk_pairs += fmin(f && g->q_front > 0 ? attn_pairs(q, kv, sd->attn_block) : segment_attn_pairs(g, sd->attn_block),
                                      (double)q * keys);
            lt->attn_kv_read += (int64_t)fmin((double)q + kv, (double)window + q);
        }
    }
}

static int roofline_step_s(const struct cost_ctx *c, const struct step_desc *sd, double *seconds,
                           struct cost_breakdown *bd, struct ts_err *err)
{
    (void)err;
    struct cost_breakdown own; /* --op-scale scales the ops it breaks the step into */
    if (!bd && c->op_scale)
        bd = &own;
    if (bd)
        memset(bd, 0, sizeof *bd);
    struct pricer p = {c, bd, 0.0, c->tp > 1 ? c->tp : 1,
                       c->model.weight_bytes == 1 ? c->gpu.fp8_flops : c->gpu.bf16_flops};
    TS_ASSERTF(p.gemm_rate > 0, "%s: no tensor-core rate for weights of %d bytes", c->gpu.name, c->model.weight_bytes);
    TS_ASSERT(p.tp == 1 || c->ar != NULL);
    const struct model_cfg *m = &c->model;
    const struct impl_profile *im = &c->impl;
    const struct step_totals *t = &sd->tot;
    double a = 2.0, h = m->hidden, V = m->vocab;
    double R = (double)t->logit_rows, nf = step_front_layers(sd, m->num_layers);
    const struct layer_totals later = {t->q_tokens, t->kv_write_tokens, t->max_q, t->attn_qk_pairs, t->attn_kv_read};
    double T_in = (double)(nf > 0 ? t->front.q_tokens : t->q_tokens), T_out = (double)(t->q_tokens + t->carry_tokens);

    if (T_in > 0)
        add_op(&p, OP_EMBED, 1, 0, 2 * T_in * h * a, im->gemm_eff);
    if (m->global_every > 0) { /* interleaved: the sliding layers over their window, then the global ones */
        const double g = model_num_global_layers(m), share[2] = {1 - g / m->num_layers, g / m->num_layers};
        for (int global = 0; global < 2; global++) {
            bool keqv;
            const struct model_cfg v = model_layer_view(m, global, &keqv);
            struct layer_totals front = t->front, rest = later;
            if (!global && m->sliding_window > 0)
                window_totals(sd, m->sliding_window, &front, &rest);
            layer_ops(&p, &v, keqv, sd, &front, nf * share[global], false);
            layer_ops(&p, &v, keqv, sd, &rest, (m->num_layers - nf) * share[global], true);
        }
    } else {
        layer_ops(&p, m, false, sd, &t->front, nf, false);
        layer_ops(&p, m, false, sd, &later, m->num_layers - nf, true);
    }
    if (sd->cache_inputs && nf > 0 && nf < m->num_layers) /* the first later layer's rows from the cache */
        add_op(&p, OP_FEAT_CACHE, 1, 0, 2 * a * (double)t->q_tokens * h, im->gemm_eff);
    if (T_out > 0)
        add_op(&p, OP_NORM, 1, 5 * T_out * h, 2 * T_out * h * a, im->gemm_eff); /* the final norm */
    const double t_ep = cost_ep_allreduce_s(c, sd); /* expert parallelism's all-reduces */
    p.total += t_ep;
    if (bd)
        bd->op_s[OP_ALLREDUCE] += t_ep;
    if (R > 0) {
        double nch = (double)step_num_logit_chunks(sd);
        /* IterSmooth: softmax(logits) @ W_e, the LM head's GEMM transposed, once more a chunk; a
         * self-conditioning implementation's soft embeddings the same product (impl_profile.self_cond) */
        const double lm_gemms = sd->iter_smooth || im->self_cond != SELF_COND_NONE ? 2 : 1;
        add_split(&p, OP_LM_HEAD, lm_gemms * nch, 2 * R / nch * h * V, a * (h * V + R / nch * (h + V)), im->gemm_eff);
        /* (the LM head stays bf16 under --weights fp8, as FP8 checkpoints keep it) */
        add_split(&p, OP_SAMPLE, nch, 3 * R / nch * V, R / nch * V * (a + 2.0 * im->softmax_copy_bytes), im->gemm_eff);
        if (sd->decode_credit) /* the credit fusion a logit: fp32 softmax, the matrix decayed and read */
            add_split(&p, OP_SAMPLE, nch, 10 * R / nch * V, R / nch * V * CREDIT_BYTES, im->gemm_eff);
        if (sd->iter_smooth) /* and its softmax over the vocabulary, logits read and probabilities written */
            add_split(&p, OP_SAMPLE, nch, 3 * R / nch * V, R / nch * V * 2 * a, im->gemm_eff);
        if (p.tp > 1) { /* the sampler's gather: three fp32 a row from each GPU */
            const double t_g = cost_tp_sample_gather_s(c, sd);
            p.total += t_g;
            if (bd)
                bd->op_s[OP_ALLREDUCE] += t_g;
        }
    }
    double host = im->host_step_s + im->host_seg_s * (double)t->num_segs +
                  impl_row_loop(im, m->num_layers, t, im->launch_s / (im->host_factor > 0 ? im->host_factor : 1.0));
    if (c->op_scale) {
        p.total += cost_op_scale_ops(c->op_scale, bd);
        host *= c->op_scale[OP_HOST];
    }
    p.total += host;
    if (bd) {
        bd->op_s[OP_HOST] += host;
        bd->total_s = p.total;
    }
    *seconds = p.total;
    return 0;
}

const struct cost_ops cost_roofline = {
    .name = "roofline",
    .help = "per op max(FLOPs / peak, bytes / bandwidth) at the implementation profile's efficiencies, "
            "kernels issued at its launch cost",
    .step_s = roofline_step_s,
};
