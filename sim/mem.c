/*
 * mem.c: activation peak from the op sequence of one forward.
 *
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
#include "mem.h"

#include "opgraph.h"

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

int64_t mem_logits_bytes(const struct model_cfg *m, int64_t logit_rows, const struct act_knobs *k)
{
    int64_t rows = logit_rows;
    if (k->logit_chunk_rows > 0 && rows > k->logit_chunk_rows)
        rows = k->logit_chunk_rows;
    return rows * (int64_t)m->vocab * (2 + k->softmax_copy_bytes);
}

int64_t mem_act_peak(const struct model_cfg *m, int64_t T, int64_t R, const struct act_knobs *k)
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

void mem_act_parts(const struct model_cfg *m, int64_t T, int64_t R, const struct act_knobs *k,
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

int64_t mem_act_peak_step(const struct model_cfg *m, const struct step_desc *sd,
                          int32_t softmax_copy_bytes, bool fused_ffn, int32_t layout)
{
    struct act_knobs k = {sd->logit_chunk_rows, sd->ffn_chunks, softmax_copy_bytes, fused_ffn, layout};
    return mem_act_peak(m, sd->tot.rows, sd->tot.logit_rows, &k);
}
