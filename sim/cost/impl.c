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
 *                records/torch-moe-h100); dLLM-Cache's feature-cache kernels are counted, not
 *                timed apart (16: the value check's norm, projection, similarity and top-k, the
 *                gathers and scatters): its code's static batches of 4 and 16 on an H100 are
 *                predicted within 3.9% in throughput (experiments/records/validate-h100,
 *                dllm-cache-b4, -b16), its loop over the rows (torch-dllm-cache) included.
 *                Logits get an fp32 softmax, as in Fast-dLLM's sampling: PyTorch casts the bf16
 *                logits to fp32 and writes the softmax to a second fp32 tensor, both alive beside
 *                the logits (8 bytes a logit; engine/bench/torch_lmax.py: the op graph with them
 *                holds PyTorch's peak allocation to the byte, records/torch-lmax-h100).
 *                The efficiencies are starting points: the calibrated back end replaces them.
 *   torch-dllm-serve  dLLM-Serve's own PyTorch runtime (chosen-ox/dLLM-Serve; engine/bench/
 *                torch_dllm_serve.py rebuilds it and torch_profile.py --runtime dllm-serve measures it,
 *                sim/data/calib/{h200,h100}-llada-8b-torch-dllm-serve.csv): nano-vLLM's layers, their RMSNorm
 *                and RoPE one torch.compile'd kernel each, Q, K, V, gate and up five GEMMs, and in
 *                every layer's attention a Python loop over the sequences (29 kernels a layer at one
 *                sequence, counted with torch.profiler) whose lengths' copy to the GPU waits for it; the
 *                inputs and the unmasking a sequence at a time, with read-backs. Its host: 3.57 ms a
 *                sequence a step over 27.2 ms (the measured line), its softmax a bf16 copy (2 bytes a
 *                logit). Its host line is its own: --host scales it by the two hosts' ratio, and a host
 *                profile of the runtime itself (an impl column naming torch-dllm-serve) replaces it.
 *                The runtime itself, run on an H100 (experiments/records/validate-h100), takes 11.8 ms
 *                a sequence a step over 46 ms: the rebuild misses host work it does a sequence and a
 *                layer (records/torch-dllm-serve-h100).
 *   tessera      one fused kernel per op, issued from a CUDA graph.
 *   torch-eager-f64, torch-llada, torch-fast-dllm, torch-dllm-cache, torch-sparse-dllm, torch-dpad,
 *   torch-dpad-cache, torch-d2f, torch-dkv, torch-elastic, torch-d2cache, torch-fdllm-v2
 *                torch-eager as a seed system's own generate loop runs it (derived_impls below): its
 *                softmax's copies beside the logits (float64: 16 bytes a logit; bf16: 2) priced as
 *                those bytes at the memory bandwidth beyond (or short of) torch-eager's fp32 8, and its
 *                loop's host issue time a forward as a multiple of the harness's.
 *   vllm-dgemma, vllm-dgemma-probs, vllm-dgemma-tiled
 *                vLLM's DiffusionGemma runner as tessera (CUDA graphs), with its sampler's fp32 copies
 *                beside the logits (every canvas at once, or tiled by requests) and a self-conditioning
 *                canvas a request (derived_impls below).
 *   sglang-dgemma  SGLang's DiffusionGemma runner as tessera (CUDA graphs), its sampler's copies and
 *                self-conditioning canvas as vllm-dgemma's (derived_impls below).
 *   sglang       SGLang's runtime (its dLLM path, --system sglang and sglang-sync): each step priced by the
 *                runtime's own rounds, measured whole on the card for the model (sim/cost/rounds.h,
 *                sim/data/rounds/; experiments/validate/sglang_rounds.py fits them from the record
 *                sglang-h200's bursts): a round's forward by its requests, its captured graph's batch
 *                and the keys its attention reads, and the scheduler's host work between rounds (first
 *                done, first out: a round a forward; sync: a block's forwards, the host's work once).
 *                Where the GPU and model have no measured rounds, priced as tessera (the summary says so).
 *   tessera-fused  tessera with the fused FFN (the engine's --ffn fused): the gate/up GEMM
 *                computes SwiGLU in its epilogue, so there is no act kernel and no [T, 2F] gate/up
 *                output, in the activations (op graph) as in the bytes moved. Its calibrations:
 *                sim/data/calib/h200-*-tessera-fused.csv (engine profile --ffn fused).
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
     .softmax_copy_bytes = 8, .reserve_bytes = (int64_t)(1.0 * TS_GIB), .host_ref = "h200-xeon"},
    {.name = "torch-dllm-serve", .launch_s = 11.4e-6, .host_step_s = 0, .host_seg_s = 3.57e-3,
     .gemm_eff = 0.80, .attn_eff = 0.45, .mem_eff = 0.75,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 1, [OP_QKV] = 3, [OP_ROPE] = 1, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 29, [OP_KV_SELECT] = 8, [OP_FEAT_CACHE] = 16, [OP_OPROJ] = 2, [OP_RESID] = 0, [OP_GATE_UP] = 2, [OP_ACT] = 2,
                 [OP_DOWN] = 3, [OP_ROUTER] = 6, [OP_EXPERTS] = 12, [OP_LM_HEAD] = 12,
                 [OP_SAMPLE] = 21},
     .softmax_copy_bytes = 2, .reserve_bytes = (int64_t)(1.0 * TS_GIB), .host_ref = "h200-xeon",
     .host_line_own = true},
    {.name = "tessera", .launch_s = 1.5e-6, .host_step_s = 50e-6, .host_seg_s = 0.2e-6,
     .gemm_eff = 0.85, .attn_eff = 0.60, .mem_eff = 0.85,
     .kernels = {[OP_EMBED] = 1, [OP_NORM] = 1, [OP_QKV] = 1, [OP_ROPE] = 1, [OP_KV_WRITE] = 0,
                 [OP_ATTN] = 1, [OP_KV_SELECT] = 3, [OP_FEAT_CACHE] = 4, [OP_OPROJ] = 1, [OP_RESID] = 0, [OP_GATE_UP] = 1, [OP_ACT] = 1,
                 [OP_DOWN] = 1, [OP_ROUTER] = 2, [OP_EXPERTS] = 3, [OP_LM_HEAD] = 1,
                 [OP_SAMPLE] = 1},
     .softmax_copy_bytes = 0, .reserve_bytes = (int64_t)(0.5 * TS_GIB)},
};

/* Profiles derived from a base, each pricing with its base's calibration so the two never drift
 * apart: tessera-fused is tessera with its FFN fused; the others are torch-eager as a seed system's own
 * generate loop runs it, with that loop's softmax and host work. softmax_bytes: bytes a logit of the
 * softmax copies beside the logits (-1: the base's); host: its loop's issue time a forward over the
 * torch-eager harness's on one host. Each loop's host was timed on an H100 with the loop's own code
 * on a grid of prompts (128 to 2,048 tokens, 64 positions each) at batch 1: its mean forward where the
 * GPU does not bound it (a block forward, or a full forward of at most 576 tokens) over the same mean
 * of LLaDA's reference loop, which issues the harness's layer (experiments/records/validate-h100,
 * profile/; the validation runs themselves are not in it). */
/* GPU work a loop's cached forward does over every key it reads, a layer, counted from its model code as
 * bytes a K element moves (bf16 2, fp32 4):
 *   KEY_ROPE_BYTES  LLaDA's RotaryEmbedding.forward with rope_full_precision (Fast-dLLM's
 *                   llada/model/modeling_llada.py at 24cc59e; dLLM-Cache's RoPe_forward hook the same)
 *                   applied to the whole cache, its keys kept unrotated: k.float() (2 read, 4 written),
 *                   t * cos (4 + 4), rotate_half's -x2 over half (2 + 2) and cat (4 + 4), * sin (4 + 4),
 *                   the sum (8 + 4), type_as back to bf16 (4 + 2): 52;
 *   KV_CAT_BYTES    torch.cat of the cache and the rows' K/V in every layer (dLLM-Cache's hook, Fast-dLLM
 *                   v2's model): K and V each read and written in bf16, 8 a K element. */
enum { KEY_ROPE_BYTES = 52, KV_CAT_BYTES = 8 };

static const struct derived_impl {
    const char *name, *base;
    int32_t softmax_bytes, sample_kernels;
    double host;
    bool fused_ffn, select_batched;
    int32_t reuse_row_kernels; /* its loop over a batch's rows in REUSE steps (impl_profile's) */
    int32_t self_cond;         /* impl_profile's */
    bool rounds;               /* impl_profile's */
    int32_t key_rope_bytes;    /* impl_profile's (KEY_ROPE_BYTES above) */
    int32_t sampler;           /* impl_profile's */
} derived_impls[] = {
    /* LLaDA's generate.py before f51cb17 (the native preset's): softmax(logits.to(torch.float64)) */
    {"torch-eager-f64", "torch-eager", 16, 1, 1.0, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* ML-GSAI/LLaDA generate.py at b7e6c35: the softmax in the logits' dtype (bf16) over every row */
    {"torch-llada", "torch-eager", 2, 0, 1.0, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* NVlabs/Fast-dLLM llada/generate.py at 24cc59e: float64 softmax over every row of the call
     * (get_transfer_index); its block forwards re-apply RoPE in fp32 to all cached keys and read a
     * position back (.item()) in every layer: 40.4 ms a block forward against 28.9 */
    {"torch-fast-dllm", "torch-eager", 16, 1, 1.398, false, false, 0, 0, false, KEY_ROPE_BYTES, SAMPLER_NONE},
    /* maomaocun/dLLM-cache utils/generate_function.py at 17235bf: bf16 softmax over the response's
     * rows; its hooks (cache_hook_LLaDA.py) concatenate the cached features and recompute RoPE in
     * fp32 with a Python loop in every layer: 53.6 ms a forward against 28.9 at batch 1; in a partial
     * update (REUSE) its RoPE_forward loops over the batch's rows, 7 kernels a row and a layer (the
     * row's sin and cos gathered by index, rotate_half's neg and cat, two products and their sum) */
    {"torch-dllm-cache", "torch-eager", 2, 0, 1.854, false, false, 7, 0, false, KEY_ROPE_BYTES + KV_CAT_BYTES, SAMPLER_NONE},
    /* OpenMOSS/Sparse-dLLM llada_generate.py at 3fd8986: bf16 softmax over every row of the call; a
     * block forward over the kept keys issues about as much as the harness's: 28.3 ms against 28.9;
     * its selection (modeling_llada.py filter_cache) one top-k over the batch a layer, no loop */
    {"torch-sparse-dllm", "torch-eager", 2, 0, 0.977, false, true, 0, 0, false, 0, SAMPLER_NONE},
    /* Crys-Chen/DPad llada/generate_dropout.py at 461b36e: float64 softmax over every row of the call
     * (get_transfer_index); its model file (Fast-dLLM's with RoPE tables kept across a block's forwards,
     * rebuilt at its first: update_rope) issues less than LLaDA's loop without a cache, 0.835 of it, and
     * more with one, 1.17 (the prefix and dual loops alike: 1.171 and 1.176), on its own held-out grid
     * (experiments/records/validate-mechanisms-h100, dpad/profile/) */
    {"torch-dpad", "torch-eager", 16, 1, 0.835, false, false, 0, 0, false, 0, SAMPLER_NONE},
    {"torch-dpad-cache", "torch-eager", 16, 1, 1.17, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py at 771f745: the softmax in the
     * logits' dtype (bf16) over each block's masked rows; its loop issues 0.843 of LLaDA's a forward on
     * its held-out grid (experiments/records/validate-mechanisms-h100, d2f/) */
    {"torch-d2f", "torch-eager", 2, 0, 0.843, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* horseee/dKV-Cache generation_utils/llada_dkv_cache_decode.py at 49a76fc: float64 softmax over every
     * row of a forward; its cached forwards rebuild the rotary tables of the rows they run and gather
     * the rows and the cache by index in every layer: 1.52 of LLaDA's loop a forward on its held-out
     * grid (experiments/records/dkv-own-code-h100, dkv-profile/ and native/profile/) */
    {"torch-dkv", "torch-eager", 16, 1, 1.52, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* yxu-dev/Elastic-Cache llada/generate.py at 46c0bc3: float64 softmax over the window's rows; every
     * layer that reuses the cache computes the tracked tokens' attention twice, eagerly (its drift test),
     * and picks the most-attended token: 1.117 of LLaDA's loop a forward on its held-out grid
     * (experiments/records/elastic-own-code-h100, elastic-profile/ and native/profile/) */
    {"torch-elastic", "torch-eager", 16, 1, 1.117, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* Kamichanw/d2Cache src/generation/vanilla.py and src/cache/d2cache.py at 72feb60: the softmax in the
     * logits' dtype (bf16); every layer selects its rows by mask and builds the attention rollout (an
     * identity of the sequence's size, a product a layer), with read-backs: 1.679 of LLaDA's loop a
     * forward on its held-out grid (experiments/records/d2cache-own-code-h100) */
    {"torch-d2cache", "torch-eager", 2, 0, 1.679, false, false, 0, 0, false, 0, SAMPLER_NONE},
    /* NVlabs/Fast-dLLM v2/generation_functions.py at af42f51 over Fast-dLLM v2 7B's remote code: the
     * softmax in the logits' dtype (bf16) over the sub-block's rows; every forward concatenates the
     * whole cache to its rows' K/V in every layer and builds its block mask on the host: 0.802 of LLaDA's
     * loop a forward on its held-out grid, a model of 28 layers against 32
     * (experiments/records/fdllm-v2-own-code-h100, fdllm-v2-profile/ and native/profile/) */
    {"torch-fdllm-v2", "torch-eager", 2, 0, 0.802, false, false, 0, 0, false, KV_CAT_BYTES, SAMPLER_NONE},
    /* the engine's --ffn fused: SwiGLU in the gate/up GEMM's epilogue */
    {"tessera-fused", "tessera", -1, 0, 1.0, true, false, 0, 0, false, 0, SAMPLER_NONE},
    /* vLLM's DiffusionGemma runner (vllm/model_executor/models/diffusion_gemma.py as merged at eb28452 and
     * released in 0.33.0), CUDA graphs as tessera's (vLLM's default captures at most 512 tokens, two
     * canvases: a batch of more runs its forward unreplayed, which this profile does not price): its
     * compiled sampler over every canvas row at once holds the softcapped fp32 logits and 3 fp32 copies of
     * them (16 bytes a logit, the LM head's bf16 2 dropped by then: 14 beside them; measured, the step run
     * on an H200: experiments/records/dgemma-sampler-h200, tessera mem sampler); a request keeps its canvas
     * of fp32 soft embeddings (probabilities times the embedding: self_conditioning_embeds) across its
     * steps */
    {"vllm-dgemma", "tessera", 14, 0, 1.0, false, false, 0, SELF_COND_HIDDEN, false, 0, SAMPLER_WHOLE},
    /* the same after PR #45672 (diffusion_gemma.py at 00c25c8): the compiled step over groups of canvases
     * sized from what the device has free (sampler_mem.h), the same copies and bytes moved */
    {"vllm-dgemma-tiled", "tessera", 14, 0, 1.0, false, false, 0, SELF_COND_HIDDEN, false, 0, SAMPLER_TILED},
    /* the same with the runner's pre-merge state (DiffusionGemma4RequestStates, in no merged commit): a
     * canvas of fp32 probabilities a request (self_conditioning_probs, max_num_seqs x canvas x vocab: 256
     * MiB a request at 256 x 262,144), the buffer vLLM's recipe names when it advises --max-num-seqs 4 */
    {"vllm-dgemma-probs", "tessera", 14, 0, 1.0, false, false, 0, SELF_COND_VOCAB, false, 0, SAMPLER_WHOLE},
    /* SGLang's DiffusionGemma path (release 0.5.23: dllm/algorithm/gemma4_renoise.py, models/gemma4_diffusion.py)
     * as tessera, its canvas rounds under CUDA graphs (its context passes run eagerly, which this profile does
     * not price apart): the logits processor's fp32 logits of every canvas row, their bf16 probabilities for
     * the soft embeddings and a request's fp32 exponential race over its canvas (10 bytes a logit, read from
     * the code, not measured); a request keeps its canvas's soft embeddings across its rounds */
    {"sglang-dgemma", "tessera", 10, 0, 1.0, false, false, 0, SELF_COND_HIDDEN, false, 0, SAMPLER_NONE},
    /* SGLang's own runtime (release 0.5.17, the record sglang-h200): its scheduler's rounds measured whole,
     * a round's forward (its CUDA graph, FlashInfer attention, fused MoE and LowConfidence's step) and the
     * scheduler's host work before the next (rounds.h, sim/data/rounds/); its memory as tessera's */
    {"sglang", "tessera", -1, 0, 1.0, false, false, 0, 0, true, 0, SAMPLER_NONE},
};

static const char *impl_name_at(int i)
{
    if ((size_t)i < TS_ARRAY_LEN(builtin_impls))
        return builtin_impls[i].name;
    i -= (int)TS_ARRAY_LEN(builtin_impls);
    return (size_t)i < TS_ARRAY_LEN(derived_impls) ? derived_impls[i].name : NULL;
}

void impl_list(char *buf, size_t len) { ts_join_names(buf, len, impl_name_at); }

int impl_resolve(const char *name, struct impl_profile *out, struct ts_err *err)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(builtin_impls); i++)
        if (ts_name_eq(builtin_impls[i].name, name)) {
            *out = builtin_impls[i];
            return 0;
        }
    for (size_t i = 0; i < TS_ARRAY_LEN(derived_impls); i++) {
        const struct derived_impl *d = &derived_impls[i];
        if (!ts_name_eq(d->name, name))
            continue;
        if (impl_resolve(d->base, out, err))
            return -1;
        snprintf(out->name, sizeof out->name, "%s", d->name);
        snprintf(out->calib_base, sizeof out->calib_base, "%s", d->base);
        if (d->softmax_bytes >= 0) {
            out->calib_extra_bytes = d->softmax_bytes - out->softmax_copy_bytes;
            out->softmax_copy_bytes = d->softmax_bytes;
        }
        out->kernels[OP_SAMPLE] += d->sample_kernels; /* the float64 cast */
        out->launch_s *= d->host, out->host_step_s *= d->host, out->host_seg_s *= d->host;
        out->host_factor = d->host;
        out->select_batched = d->select_batched;
        out->reuse_row_kernels = d->reuse_row_kernels;
        out->self_cond = d->self_cond;
        out->rounds = d->rounds;
        out->key_rope_bytes = d->key_rope_bytes;
        out->sampler = d->sampler;
        if (d->fused_ffn) {
            out->kernels[OP_ACT] = 0; /* SwiGLU runs in the gate/up GEMM's epilogue */
            out->fused_ffn = true;
        }
        return 0;
    }
    char list[128];
    impl_list(list, sizeof list);
    return ts_fail(err, "unknown implementation profile '%s' (known: %s)", name, list);
}

int32_t impl_layer_kernels(const struct impl_profile *im)
{
    /* (two norms and two residual adds a layer, as the roofline counts them) */
    static const enum cost_op layer_ops[] = {OP_NORM, OP_NORM, OP_QKV, OP_ROPE, OP_KV_WRITE, OP_ATTN, OP_OPROJ,
                                             OP_RESID, OP_RESID, OP_GATE_UP, OP_ACT, OP_DOWN};
    int32_t n = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(layer_ops); i++)
        n += im->kernels[layer_ops[i]];
    return n;
}

double impl_row_loop(const struct impl_profile *im, int32_t layers, const struct step_totals *t,
                       double host_kernel)
{
    const int64_t rows = t->by_phase[PHASE_REUSE] - 1;
    return rows > 0 ? (double)rows * im->reuse_row_kernels * layers * host_kernel : 0.0;
}
