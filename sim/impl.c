/*
 * impl.c: implementation profiles. The papers' systems run PyTorch eager; tessera's engine runs
 * fused kernels under CUDA graphs.
 *   torch-eager  kernel counts per op and the host's issue cost measured with the PyTorch harness
 *                (engine/bench/torch_profile.py) on an H200: 55 kernels per layer (each RMSNorm 8
 *                element-wise kernels, RoPE 26 recomputing its tables, attention 4 with the cache
 *                concatenation), 11.4 us of host time per kernel and 27 us per segment (the
 *                harness's kernel counts against the host times of the shipped torch-eager
 *                calibration, sim/data/calib/h200-llada-8b-torch-eager.csv); the MoE router and
 *                experts a grouped MoE's as the harness runs LLaDA-MoE-7B (19 and 12 kernels,
 *                records/torch-eager-moe-h100; Hugging Face's loop over the experts issues about
 *                15 kernels an expert, 953-1,035 a layer: engine/bench/torch_moe.py,
 *                records/torch-moe-h100); dLLM-Cache's feature-cache kernels are not measured
 *                (16: the value check's norm, projection, similarity and top-k, the gathers and
 *                scatters).
 *                Logits get an fp32 softmax, as in Fast-dLLM's sampling: PyTorch casts the bf16
 *                logits to fp32 and writes the softmax to a second fp32 tensor, both alive beside
 *                the logits (8 bytes a logit; engine/bench/torch_lmax.py: the op graph with them
 *                holds PyTorch's peak allocation to the byte, records/torch-lmax-h100).
 *                The efficiencies are starting points: the calibrated back end replaces them.
 *   torch-dllm-serve  dLLM-Serve's own PyTorch runtime (chosen-ox/dLLM-Serve; engine/bench/
 *                torch_dllm_serve.py rebuilds it and torch_profile.py --runtime dllm-serve measures it,
 *                sim/data/calib/h200-llada-8b-torch-dllm-serve.csv): nano-vLLM's layers, their RMSNorm
 *                and RoPE one torch.compile'd kernel each, Q, K, V, gate and up five GEMMs, and in
 *                every layer's attention a Python loop over the sequences (29 kernels a layer at one
 *                sequence, counted with torch.profiler) whose lengths' copy to the GPU waits for it; the
 *                inputs and the unmasking a sequence at a time, with read-backs. Its host: 3.57 ms a
 *                sequence a step over 27.2 ms (the measured line), its softmax a bf16 copy (2 bytes a
 *                logit). Its host line is its own: --host scales it by the two hosts' ratio.
 *   tessera      one fused kernel per op, issued from a CUDA graph.
 *   torch-eager-f64  torch-eager sampling as the LLaDA and Fast-dLLM reference code does
 *                (llada/generate.py: softmax(logits.to(torch.float64))): the logits cast to
 *                float64 and their softmax in float64, both alive with the bf16 logits (16 bytes a
 *                logit beside them, against torch-eager's 8 in fp32); priced with the
 *                torch-eager calibration plus those bytes at the memory bandwidth.
 *   tessera-fused  tessera with the fused FFN (the engine's TESSERA_FFN=fused): the gate/up GEMM
 *                computes SwiGLU in its epilogue, so there is no act kernel and no [T, 2F] gate/up
 *                output, in the activations (op graph) as in the bytes moved. Its calibrations:
 *                sim/data/calib/h200-*-tessera-fused.csv (engine profile, TESSERA_FFN=fused).
 */
#include "cost.h"

#include <stdio.h>
#include <string.h>

static const struct impl_profile builtin_impls[] = {
    {.name = "torch-eager", .launch_s = 11.4e-6, .host_step_s = 0, .host_seg_s = 27e-6,
     .gemm_eff = 0.80, .attn_eff = 0.45, .mem_eff = 0.75,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 8, [OP_QKV] = 1, [OP_ROPE] = 26, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 4, [OP_KV_SELECT] = 8, [OP_FEAT_CACHE] = 16, [OP_OPROJ] = 1, [OP_RESID] = 1, [OP_GATE_UP] = 1, [OP_ACT] = 2,
                 [OP_DOWN] = 2, [OP_ROUTER] = 19, [OP_EXPERTS] = 12, [OP_LM_HEAD] = 2,
                 [OP_SAMPLE] = 3},
     .softmax_copy_bytes = 8, .reserve_bytes = (int64_t)(1.0 * TS_GIB), .host_ref = "lent-h200"},
    {.name = "torch-dllm-serve", .launch_s = 11.4e-6, .host_step_s = 0, .host_seg_s = 3.57e-3,
     .gemm_eff = 0.80, .attn_eff = 0.45, .mem_eff = 0.75,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 1, [OP_QKV] = 3, [OP_ROPE] = 1, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 29, [OP_KV_SELECT] = 8, [OP_FEAT_CACHE] = 16, [OP_OPROJ] = 2, [OP_RESID] = 0, [OP_GATE_UP] = 2, [OP_ACT] = 2,
                 [OP_DOWN] = 3, [OP_ROUTER] = 6, [OP_EXPERTS] = 12, [OP_LM_HEAD] = 12,
                 [OP_SAMPLE] = 21},
     .softmax_copy_bytes = 2, .reserve_bytes = (int64_t)(1.0 * TS_GIB), .host_ref = "lent-h200",
     .host_line_own = true},
    {.name = "tessera", .launch_s = 1.5e-6, .host_step_s = 50e-6, .host_seg_s = 0.2e-6,
     .gemm_eff = 0.85, .attn_eff = 0.60, .mem_eff = 0.85,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 1, [OP_QKV] = 1, [OP_ROPE] = 1, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 1, [OP_KV_SELECT] = 3, [OP_FEAT_CACHE] = 4, [OP_OPROJ] = 1, [OP_RESID] = 0, [OP_GATE_UP] = 1, [OP_ACT] = 1,
                 [OP_DOWN] = 1, [OP_ROUTER] = 2, [OP_EXPERTS] = 3, [OP_LM_HEAD] = 1,
                 [OP_SAMPLE] = 1},
     .softmax_copy_bytes = 0, .reserve_bytes = (int64_t)(0.5 * TS_GIB)},
};

/* tessera-fused is tessera with its FFN fused, torch-eager-f64 torch-eager with float64 sampling,
 * each derived from its base so the two never drift apart */
#define FUSED_NAME "tessera-fused"
#define F64_NAME "torch-eager-f64"

static const char *impl_name_at(int i)
{
    if ((size_t)i < TS_ARRAY_LEN(builtin_impls))
        return builtin_impls[i].name;
    i -= (int)TS_ARRAY_LEN(builtin_impls);
    return i == 0 ? FUSED_NAME : i == 1 ? F64_NAME : NULL;
}

void impl_list(char *buf, size_t len) { ts_join_names(buf, len, impl_name_at); }

int impl_resolve(const char *name, struct impl_profile *out, struct ts_err *err)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(builtin_impls); i++)
        if (ts_name_eq(builtin_impls[i].name, name)) {
            *out = builtin_impls[i];
            return 0;
        }
    if (ts_name_eq(F64_NAME, name)) {
        if (impl_resolve("torch-eager", out, err))
            return -1;
        snprintf(out->name, sizeof out->name, "%s", F64_NAME);
        snprintf(out->calib_base, sizeof out->calib_base, "torch-eager");
        out->calib_extra_bytes = 16 - out->softmax_copy_bytes;
        out->softmax_copy_bytes = 16;
        out->kernels[OP_SAMPLE] += 1; /* the cast */
        return 0;
    }
    if (ts_name_eq(FUSED_NAME, name)) {
        if (impl_resolve("tessera", out, err))
            return -1;
        snprintf(out->name, sizeof out->name, "%s", FUSED_NAME);
        out->kernels[OP_ACT] = 0; /* SwiGLU runs in the gate/up GEMM's epilogue */
        out->fused_ffn = true;
        return 0;
    }
    char list[128];
    impl_list(list, sizeof list);
    return ts_fail(err, "unknown implementation profile '%s' (known: %s)", name, list);
}
