/*
 * impl.c: implementation profiles. The papers' systems run PyTorch eager; tessera's engine runs
 * fused kernels under CUDA graphs. The defaults below are starting points until the calibration
 * issue replaces them with figures measured on one GPU:
 *   torch-eager  kernel counts of an HF-style eager layer (RMSNorm as ~8 element-wise kernels,
 *                RoPE recomputing its tables, SDPA, a copy before the O projection); the per-op
 *                issue cost is what the PyTorch anchor run on an H200 implies (a Reuse step of one
 *                32-token block takes 31 ms against a 4 ms weight-read floor, ~2000 kernels);
 *                logits get an fp32 softmax copy, as in Fast-dLLM's sampling.
 *   tessera      one fused kernel per op, issued from a CUDA graph.
 */
#include "cost.h"

#include <stdio.h>
#include <string.h>

static const struct impl_profile builtin_impls[] = {
    {.name = "torch-eager", .launch_s = 13e-6, .host_step_s = 2e-3, .host_seg_s = 20e-6,
     .gemm_eff = 0.80, .attn_eff = 0.45, .mem_eff = 0.75,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 8, [OP_QKV] = 1, [OP_ROPE] = 32, [OP_KV_WRITE] = 2,
                 [OP_ATTN] = 3, [OP_OPROJ] = 2, [OP_RESID] = 1, [OP_GATE_UP] = 1, [OP_ACT] = 2,
                 [OP_DOWN] = 1, [OP_ROUTER] = 6, [OP_EXPERTS] = 12, [OP_LM_HEAD] = 1,
                 [OP_SAMPLE] = 4},
     .softmax_copy_bytes = 4, .reserve_bytes = (int64_t)(1.0 * TS_GIB)},
    {.name = "tessera", .launch_s = 1.5e-6, .host_step_s = 50e-6, .host_seg_s = 0.2e-6,
     .gemm_eff = 0.85, .attn_eff = 0.60, .mem_eff = 0.85,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 1, [OP_QKV] = 1, [OP_ROPE] = 1, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 1, [OP_OPROJ] = 1, [OP_RESID] = 0, [OP_GATE_UP] = 1, [OP_ACT] = 1,
                 [OP_DOWN] = 1, [OP_ROUTER] = 2, [OP_EXPERTS] = 3, [OP_LM_HEAD] = 1,
                 [OP_SAMPLE] = 1},
     .softmax_copy_bytes = 0, .reserve_bytes = (int64_t)(0.5 * TS_GIB)},
};

static const char *impl_name_at(int i)
{
    return (size_t)i < TS_ARRAY_LEN(builtin_impls) ? builtin_impls[i].name : NULL;
}

void impl_list(char *buf, size_t len) { ts_join_names(buf, len, impl_name_at); }

int impl_resolve(const char *name, struct impl_profile *out, struct ts_err *err)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(builtin_impls); i++)
        if (ts_name_eq(builtin_impls[i].name, name)) {
            *out = builtin_impls[i];
            return 0;
        }
    char list[128];
    impl_list(list, sizeof list);
    return ts_fail(err, "unknown implementation profile '%s' (known: %s)", name, list);
}
