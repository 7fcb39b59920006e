/*
 * cost_roofline.c: the roofline back end. Each op of the forward costs
 *     gpu = max(FLOPs / (peak * eff), bytes / (bandwidth * mem_eff))
 * and the host issues its kernels at launch_s each; the host runs ahead of the GPU, so an op costs
 * max(gpu, kernels * launch_s): large ops hide their launches, small ones are launch-bound. The
 * step adds host_step_s + host_seg_s per segment.
 *
 * FLOPs and bytes per op, T packed tokens, R logit rows, W K/V tokens written, a = 2 bytes:
 *   norm       2 per layer, read + write [T,h]
 *   qkv        2*T*h*(qd+2kvd); weights + in + out
 *   rope       q and k rows, read + write
 *   kv_write   W tokens of K and V, read + write
 *   attention  4*head_dim*heads*sum(q*(q+kv)); Q, O and each segment's K/V read once
 *   kv_select  sparse selection (segments with keep > 0), per layer: the scoring rows' mean query
 *              against each candidate key (2*cand*qd), the fp32 scores written, pooled and read
 *              back per K/V head, and the kept tokens' K and V gathered into the cache
 *   o_proj     2*T*qd*h
 *   resid      2 per layer, read 2 + write 1 [T,h]
 *   gate_up    2*T*h*2F, down 2*T*F*h, act read [T,2F] write [T,F]; FFN chunks re-read weights;
 *              fused (impl fused_ffn, dense layers): gate_up writes [T,F], no act op (SwiGLU's
 *              element-wise work runs in the GEMM's epilogue, beside its tensor-core work)
 *   MoE        router 2*T*h*E; experts 6*T*k*h*Fe FLOPs, weight bytes of the distinct experts
 *              touched, E*(1-(1-k/E)^T) under balanced routing; shared experts as a dense FFN
 *   lm_head    2*R*h*V; every chunk re-reads the h*V weights
 *   sample     max/argmax/confidence over R*V logits, plus the softmax copy if the
 *              implementation makes one
 */
#include <math.h>
#include <string.h>

#include "cost.h"

struct pricer {
    const struct cost_ctx *c;
    struct cost_breakdown *bd;
    double total;
};

/* Adds `count` instances of an op, each with the given FLOPs and bytes. */
static void add_op(struct pricer *p, enum cost_op op, double count, double flops, double bytes,
                   double eff)
{
    if (count <= 0)
        return;
    const struct gpu_spec *g = &p->c->gpu;
    const struct impl_profile *im = &p->c->impl;
    double gpu = fmax(flops / (g->bf16_flops * eff), bytes / (g->mem_bw * im->mem_eff));
    double t = count * fmax(gpu, im->kernels[op] * im->launch_s);
    p->total += t;
    if (p->bd)
        p->bd->op_s[op] += t;
}

static int roofline_step_s(const struct cost_ctx *c, const struct step_desc *sd, double *seconds,
                           struct cost_breakdown *bd, struct ts_err *err)
{
    (void)err;
    if (bd)
        memset(bd, 0, sizeof *bd);
    struct pricer p = {c, bd, 0.0};
    const struct model_cfg *m = &c->model;
    const struct impl_profile *im = &c->impl;
    const struct step_totals *t = &sd->tot;
    double a = 2.0, h = m->hidden, qd = model_q_dim(m), kvd = model_kv_dim(m), V = m->vocab;
    double T = (double)t->q_tokens, R = (double)t->logit_rows, W = (double)t->kv_write_tokens;
    double nl = m->num_layers, moe = model_num_moe_layers(m), dense = nl - moe;
    double chunks = sd->ffn_chunks > 0 ? sd->ffn_chunks : 1;
    double ge = im->gemm_eff;

    if (T > 0) {
        add_op(&p, OP_EMBED, 1, 0, 2 * T * h * a, ge);
        add_op(&p, OP_NORM, 2 * nl + 1, 5 * T * h, 2 * T * h * a, ge);
        add_op(&p, OP_QKV, nl, 2 * T * h * (qd + 2 * kvd),
               a * (h * (qd + 2 * kvd) + T * h + T * (qd + 2 * kvd)), ge);
        add_op(&p, OP_ROPE, nl, 6 * T * (qd + kvd), 2 * a * T * (qd + kvd), ge);
        add_op(&p, OP_KV_WRITE, W > 0 ? nl : 0, 0, 2 * a * W * 2 * kvd, ge);
        add_op(&p, OP_ATTN, nl, 4.0 * qd * t->attn_qk_pairs,
               a * (2 * T * qd + (double)t->attn_kv_read * 2 * kvd), im->attn_eff);
        const double cand = (double)t->sel_cand, rows = (double)t->sel_rows, hkv = m->num_kv_heads;
        add_op(&p, OP_KV_SELECT, t->sel_segs > 0 ? nl : 0, 2 * cand * qd + rows * qd,
               a * (cand * kvd + rows * qd) + 3 * 4 * cand * hkv + 2 * 2 * a * (double)t->sel_keep * kvd, ge);
        add_op(&p, OP_OPROJ, nl, 2 * T * qd * h, a * (qd * h + T * qd + T * h), ge);
        add_op(&p, OP_RESID, 2 * nl, T * h, 3 * T * h * a, ge);
        if (dense > 0) {
            double F = m->ffn;
            const double out = im->fused_ffn ? F : 2 * F; /* fused: SwiGLU in the epilogue writes [T, F] */
            add_op(&p, OP_GATE_UP, dense * chunks, 2 * T / chunks * h * 2 * F,
                   a * (2 * F * h + T / chunks * (h + out)), ge);
            if (!im->fused_ffn)
                add_op(&p, OP_ACT, dense * chunks, 4 * T / chunks * F, a * T / chunks * 3 * F, ge);
            add_op(&p, OP_DOWN, dense * chunks, 2 * T / chunks * F * h,
                   a * (F * h + T / chunks * (F + h)), ge);
        }
        if (moe > 0) {
            double E = m->num_experts, k = m->experts_top_k, Fe = m->moe_ffn;
            double touched = E * (1.0 - pow(1.0 - k / E, T));
            add_op(&p, OP_ROUTER, moe, 2 * T * h * E, a * (h * E + T * h) + 4 * T * E, ge);
            add_op(&p, OP_EXPERTS, moe, 6 * T * k * h * Fe,
                   a * (touched * 3 * h * Fe + T * k * (2 * h + 3 * Fe)), ge);
            if (m->num_shared_experts > 0) {
                double S = Fe * m->num_shared_experts;
                add_op(&p, OP_GATE_UP, moe, 2 * T * h * 2 * S, a * (2 * S * h + T * (h + 2 * S)), ge);
                add_op(&p, OP_ACT, moe, 4 * T * S, a * T * 3 * S, ge);
                add_op(&p, OP_DOWN, moe, 2 * T * S * h, a * (S * h + T * (S + h)), ge);
            }
        }
    }
    if (R > 0) {
        double nch = (double)step_num_logit_chunks(sd);
        add_op(&p, OP_LM_HEAD, nch, 2 * R / nch * h * V, a * (h * V + R / nch * (h + V)), ge);
        add_op(&p, OP_SAMPLE, nch, 3 * R / nch * V,
               R / nch * V * (a + 2.0 * im->softmax_copy_bytes), ge);
    }
    double host = im->host_step_s + im->host_seg_s * (double)t->num_segs;
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
