/* presets.c: the --system table. */
#include "presets.h"

#include <stdio.h>
#include <string.h>

#include "opgraph.h"

static const struct preset presets[] = {
    {"fast-dllm", "Fast-dLLM dual cache as its code at 24cc59e runs it: one request at a time, monolithic "
                  "logits, PyTorch eager with float64 sampling and its own loop's host work",
     "dual", "static", "fixed:1", "torch-fast-dllm", 0, "caching", false, false,
     "Fast-dLLM's later eval_llada.py batches requests in dataset order, left-padded: give --max-batch N",
     {{"max-batch", "1"}},
     "dual cache, batch and sampling: NVlabs/Fast-dLLM llada/generate.py at 24cc59e "
     "(generate_with_dual_cache: the canvas one row; get_transfer_index: softmax of the logits cast to "
     "float64); its loop's host work: torch-fast-dllm (tessera list impls; experiments/records/validate-h100)",
     "engine", "calibrated", false, NULL, 0, 0},
    /* DPad's three loops: NAME, the cache under it, its generate function, its loop's implementation */
#define DPAD_PRESET(NAME, CACHE, UNDER, FN, IMPL)                                                                      \
    {NAME, "DPad as its code at 461b36e runs it: the Gaussian suffix dropout (window 256, k 4, scale 2) over " UNDER   \
           ", one request at a time, monolithic logits, PyTorch eager with float64 sampling",                          \
     "dpad", "static", "fixed:1", IMPL, 0, "caching", false, false, NULL, {{"max-batch", "1"}, {"dpad-cache", CACHE}}, \
     "Crys-Chen/DPad llada/generate_dropout.py at 461b36e (" FN ": the canvas one row; get_transfer_index: softmax "   \
     "of the logits cast to float64; suffix_dropout over sampler.py's GaussianSampler) and llada/scripts/"             \
     "main_instruct.sh (-k=4 -sc=2 -w=256); its loop's host work: " IMPL " (tessera list impls; experiments/records/"  \
     "validate-mechanisms-h100)", "engine", "calibrated", false, NULL, 0, 0}
    DPAD_PRESET("dpad", "none", "no cache", "generate", "torch-dpad"),
    DPAD_PRESET("dpad-prefix", "prefix", "Fast-dLLM's prefix cache", "generate_with_prefix_cache", "torch-dpad-cache"),
    DPAD_PRESET("dpad-dual", "dual", "Fast-dLLM's dual cache", "generate_with_dual_cache", "torch-dpad-cache"),
#undef DPAD_PRESET
    {"sparsed", "SparseD as its code at 52155b4 runs it: LLaDA's generate without a cache, dense attention for the "
                "first fifth of the steps, then a pattern of key blocks a query block and head (select 0.3, blocks of "
                "128), one request at a time, monolithic logits, PyTorch eager",
     "sparsed", "static", "fixed:1", "torch-llada", 0, "caching", false, false,
     "its pattern's step is priced as half pairs of a fused attention kernel and its sparse steps at the calibration "
     "of a dense one: its code builds the pattern in a PyTorch loop and runs FlexAttention, both slower "
     "(experiments/records/validate-mechanisms-h100)",
     {{"max-batch", "1"}},
     "INV-WZQ/SparseD models/LLaDA/generate.py and modeling_llada.py at 52155b4 (generate: the canvas one row, "
     "the logits of every row; LLaDABlock.attention: the pattern at step int(skip T) + 1, flex_attention after) and "
     "llada_generation.py's defaults (skip 0.2, select 0.3, block_size 128); its loop: LLaDA's reference generate "
     "(torch-llada)",
     "engine", "calibrated", false, NULL, 0, 0},
    {"d2f", "D2F as its code at 771f745 runs it: pipelined blocks of 32 (tau_add 0.1, tau_act 0.95) over the prefix "
            "cache, threshold decoding at 0.9, one request at a time, monolithic logits, PyTorch eager",
     "d2f", "static", "threshold:llada-gsm8k", "torch-d2f", 0, "caching", false, false,
     "its threshold of 0.9 is priced with Fast-dLLM's profile at 0.9 on GSM8K (TPF 2.77): D2F's LoRA changes the "
     "confidences; a semi-activated block decoding half its count (--d2f-semi) is an assumption",
     {{"max-batch", "1"}},
     "zhijie-group/Discrete-Diffusion-Forcing D2F-eval/eval_llada.py at 771f745 (_generate_block_single, "
     "_update_block_completion_states; sample_tokens: the softmax in the logits' bf16) and its paper's Appendix "
     "Table 8 (tau_add 0.1, tau_act 0.95, tau_conf 0.9); its loop's host work: torch-d2f (tessera list impls; "
     "experiments/records/validate-mechanisms-h100)",
     "engine", "calibrated", false, NULL, 0, 0},
    {"elastic-cache", "Elastic-Cache as its code at 46c0bc3 runs it: the tracked tokens, the ones just decoded and a "
                      "window of 16 masked ones over the cache, its drift test refreshing the later layers, threshold "
                      "decoding at 0.9, one request at a time, PyTorch eager with float64 sampling",
     "elastic", "static", "threshold:llada-gsm8k", "torch-elastic", 0, "caching", false, false,
     "its tokens tracked and how often and from which layer its drift test refreshes depend on the attention: its "
     "loop's on random weights (29 a step, 63% of the steps, from layer 4: experiments/records/elastic-own-code-h100); "
     "tessera engine generate --elastic-drift measures them on a checkpoint",
     {{"max-batch", "1"}, {"ec-track", "29"}, {"ec-refresh-share", "0.6325"}, {"ec-depth", "4"}},
     "yxu-dev/Elastic-Cache llada/generate.py at 46c0bc3 (generate_with_elastic_cache: the canvas one row; "
     "get_decoded_token_confident: softmax of the logits cast to float64) and llada/eval_gsm8k.sh (window_length 16, "
     "threshold 0.9, gamma 0.9, track_num 1); its loop's host work: torch-elastic (tessera list impls)",
     "engine", "calibrated", false, NULL, 0, 0},
    {"d2cache", "d2Cache as its code at 72feb60 runs it for LLaDA-Instruct: a full first forward, then the 32 most "
                "certain masked positions, the one just decoded and the attention rollout's nucleus over the cache, "
                "one position a step, one request at a time, PyTorch eager with bf16 sampling",
     "d2cache", "static", "fixed:1", "torch-d2cache", 0, "caching", false, false,
     "its rollout's nucleus depends on the attention: its loop's on random weights (0.0876 of the other positions: "
     "experiments/records/d2cache-own-code-h100); a trained model's concentrated attention keeps fewer",
     {{"max-batch", "1"}, {"d2-k", "32"}, {"d2-rollout-share", "0.0876"}},
     "Kamichanw/d2Cache src/cache/d2cache.py and src/generation/vanilla.py at 72feb60 (current_k 32, rollout_p 0.1, "
     "one token a step: configs/cache/d2cache.yaml, configs/gen_args.py; sample_tokens: the softmax in the logits' "
     "bf16); its loop's host work: torch-d2cache (tessera list impls)",
     "engine", "calibrated", false, NULL, 0, 0},
    {"dllm-serve", "dLLM-Serve: head-centric sparse KV cache (r 0.5, one kept set per K/V head), "
                   "phase-multiplexed scheduler, logits of the block rows alone in chunks of 2048, its own PyTorch runtime "
                   "(torch-dllm-serve)", "sparse", "phase",
     "fixed:1", "torch-dllm-serve", 2048, "profiled", false, false, NULL, {{"sparse-select", "head"}, {"gpu-memory-utilization", "0.8"}},
     "dLLM-Serve sections 4.3 (logit decomposition), 4.4 (phase-multiplexed greedy scheduler), 4.5 "
     "(head-centric sparse KV cache), 6.1 Table 3 (retention ratio 0.5); the per-head selection: "
     "chosen-ox/dLLM-Serve dllmserve/layers/attention.py (_select_important_head_kv: the block's mean "
     "query, scores max-pooled, int(r x candidates) kept a K/V head); its runtime, measured: "
     "dllmserve/models/llada.py over nano-vLLM's layers (dllmserve/layers: torch.compile'd RMSNorm and "
     "RoPE), the attention's loop over the sequences, engine/model_runner.py's inputs and unmasking a "
     "sequence at a time (engine/bench/torch_dllm_serve.py); the logits of each sequence's block rows alone, "
     "in every step: engine/model_runner.py _reconstruct_and_sample_optimized_v2 (log_optimize_level 2, "
     "its default); its KV pool: engine/model_runner.py allocate_kv_cache (gpu_memory_utilization 0.8 of the "
     "device after warmup_model_diffusion, config.py's defaults)", "engine", "calibrated", true, NULL, 0, 0},
    {"sparse-dllm", "Sparse-dLLM: sparse KV cache (r 0.5, one kept set for all heads, delayed one step), one "
                    "request at a time as its code at 3fd8986 runs it, monolithic logits, PyTorch eager with bf16 "
                    "sampling and its own loop's host work", "sparse", "static",
     "fixed:1", "torch-sparse-dllm", 0,
     "caching", false, false, NULL, {{"sparse-select", "uniform"}, {"max-batch", "1"}},
     "OpenMOSS/Sparse-dLLM opencompass/models/sparse_dllm/llada_wrapper.py (delayed bidirectional sparse "
     "caching, one kept set for all heads) and llada_generate.py at 3fd8986 (generate: the canvas one row, "
     "the softmax in the logits' bf16; modeling_llada.py filter_cache squeezes the selection to batch 1); "
     "retention ratio 0.5, its default; its loop's host work: torch-sparse-dllm", "engine", "calibrated", false, NULL, 0, 0},
    {"dllm-cache", "dLLM-Cache: K, V, attention and FFN outputs cached (prompt every 100 forwards, response "
                   "every 7, a quarter of the response updated between), static batches, monolithic logits, "
                   "PyTorch eager with bf16 sampling and its hooks' host work", "dllm-cache", "static", "fixed:1",
     "torch-dllm-cache", 0, "caching", false, false, NULL,
     {{"prompt-interval", "100"}, {"response-interval", "7"}, {"update-ratio", "0.25"}},
     "maomaocun/dLLM-cache dllm_cache/hooks/cache_hook_LLaDA.py at 17235bf (prompt and response refresh, the "
     "value-similarity partial update) and utils/generate_function.py (left-padded batches, the softmax "
     "in the logits' bf16); prompt interval 100 and response interval 7 as dLLM-Serve ran it: its section "
     "6.1 Table 3; its hooks' host work: torch-dllm-cache", "engine", "calibrated", false, NULL, 0, 0},
    {"lmdeploy", "LMDeploy's PyTorch engine running block diffusion: request-level continuous batching, "
                 "fused kernels launched eagerly (priced as tessera's engine, their issue and the scheduler "
                 "left out)", "block", "request", "fixed:1", "tessera", 0,
     "first-fit", false, false, NULL, {{NULL}},
     "FOCUS section 5 (its baseline: LMDeploy's block diffusion with request-level continuous batching); "
     "sands-lab/FOCUS benchmark/run_baseline_throughput_evaluation.sh (LMDeploy's PyTorch backend in eager "
     "mode, blocks of 32, confidence 0.9, at most 2,048 new tokens); FOCUS appendix F.1 (CUDA graphs off "
     "in every throughput run); its SDAR layer's 12 kernels: InternLM/lmdeploy lmdeploy/pytorch/models/sdar.py", "engine", "calibrated", false, NULL, 0, 0},
    {"focus", "FOCUS: block diffusion with the delayed intra-block cache and token eviction (alpha 1.5), "
              "threshold decoding (SDAR-8B TPF), request-level continuous batching, LMDeploy's PyTorch engine "
              "(fused kernels launched eagerly, priced as tessera's engine)",
     "focus", "request", "threshold:sdar-low", "tessera", 0, "first-fit", false, false,
     "FOCUS ran block-causal models: give --model sdar-8b or llada2.0-mini", {{"focus-alpha", "1.5"}},
     "FOCUS sections 4.1 (the budget, Eq. 4), 4.2 (eviction), 4.3 (delayed intra-block cache), 5.2 (alpha "
     "1.5, confidence 0.8); sands-lab/FOCUS SGLangFOCUS/python/sglang/srt/dllm/focus.py (importance delta,"
     " AR context, placeholder integrity) and benchmark/run_focus_throughput_evaluation.sh (LMDeploy's "
     "PyTorch backend with FOCUS, confidence 0.8)", "engine", "calibrated", false, NULL, 0, 0},
    {"dinfer", "dInfer: vicinity cache refresh, hierarchical decoding (its GSM8K TPF with a cache), static "
               "batches, compiled runtime (CUDA graphs)", "vicinity", "static", "hierarchical:dinfer-moe-cache-gsm8k",
     "tessera", 0, "caching", false, false,
     "dInfer's TPFs are LLaDA-MoE's (its Table 1): give --model llada-moe-7b for its setting", {{NULL}},
     "dInfer's slides (vicinity refresh, hierarchical decoding, the TPFs of its Table 1); inclusionAI/dInfer python/dinfer/decoding/generate_uniform.py (vicinity cache refresh) and parallel_strategy.py (hierarchical decoding)", "engine", "roofline", false, NULL, 0, 0},
    {"dinfer-fast-dllm", "dInfer's port of Fast-dLLM (its Table 1's Fast-dLLM): LLaDA-MoE's dual cache in blocks "
                         "of 64, threshold decoding with float64 sampling over every row, one request at a time, "
                         "PyTorch eager attention replicated on 4 GPUs with the experts split over them (vLLM's "
                         "FusedMoE, expert parallel)", "dual", "static", "threshold:fastdllm-moe-cache-gsm8k",
     "torch-eager-f64", 0, "caching", false, false,
     "its model code (OLMoE's Hugging Face attention over vLLM's FusedMoE) was not run: its steps are priced with "
     "the PyTorch harness's LLaDA-MoE profile, the experts a grouped MoE as vLLM runs them; its script forces the "
     "dual cache, so its table's row without a cache ran another invocation (give --policy vanilla)",
     {{"max-batch", "1"}},
     "inclusionAI/dInfer benchmarks/benchmark_dataset_fastdllm.py at fce4e32 (one prompt a call, --block_length 64, "
     "--threshold 0.95, --gpu 0,1,2,3, args.cache and args.dual_cache forced on, vLLM's ParallelConfig "
     "enable_expert_parallel with model.tensor_parallel only under --use_tp); python/dinfer/decoding/"
     "generate_fastdllm.py (generate_with_dual_cache) and parallel_strategy.py (get_transfer_index: the softmax "
     "of the logits cast to float64, every row of the call); python/dinfer/model/modeling_fused_olmoe.py "
     "(OlmoeSdpaAttention, FusedMoE with reduce_results: one all-reduce a MoE layer)", "engine", "calibrated", false,
     "llada-moe-7b", 64, 4},
    {"vllm", "vLLM serving an autoregressive model: one token a step over the K/V cache, continuous "
             "batching, CUDA graphs", "ar", "request", "fixed:1", "tessera", 0, "first-fit", false, false,
     "dInfer's autoregressive baseline: give --model qwen2.5-3b", {{NULL}},
     "dInfer's slides, Table 1 (Qwen2.5-3B on vLLM at batch size 1, one token a forward)", "engine", "roofline", false, NULL, 0, 0},
    {"mosaic", "Mosaic: no cache, mask-only logits, lazy chunking, one arena laid out first-fit with each "
               "layer as its own plan holds it, PyTorch runtime", "vanilla", "request", "fixed:1", "torch-eager", 0, "first-fit", true, true,
     "its steps are priced with PyTorch eager's kernels here; experiments/mosaic-fig10.sh prices its "
     "runtime's fused RMSNorm, RoPE and sampling kernels in place of eager's", {{NULL}},
     "Mosaic sections 4.2 (mask-only logits kernel), 4.4 (lazy chunking optimizer), 4.5 (global memory "
     "manager, first-fit); flashserve/Mosaic diffusion_tools/online_searcher.py (the chunk search keeps 900 "
     "MiB free, an MoE model's plan 700 MiB more; the part it chunks: the largest of the logits', the FFN's "
     "and the fixed part's peaks); its plan of a layer's activations: vllm/v1/worker/graph_builder.py; its layer: flashserve/Mosaic vllm_add_llada/llada_blocks.py (vLLM's rms_norm "
     "and fused_add_rms_norm_out, vLLM's rotary kernel, flash_attn_varlen, eager GEMMs and SwiGLU into "
     "planned buffers) and flash_sample (the confidence kernels)", "mosaic", "roofline", false, NULL, 0, 0},
    {"mosaic-torch", "Mosaic-Torch: Mosaic's baseline, the model code on a serving framework (variable-length "
                     "batches), no cache, logits for every row in one piece, PyTorch's caching allocator, PyTorch "
                     "eager", "vanilla", "request", "fixed:1", "torch-eager", 0, "caching", false, false, NULL, {{NULL}},
     "Mosaic section 5, its baselines (2): the PyTorch model code ported onto vLLM (varlen), without its "
     "memory optimizations; PyTorch's allocator and fp32 softmax as experiments/mosaic-fig10.sh runs it", "engine", "roofline", false, NULL, 0, 0},
    {"native", "Native: the unmodified official PyTorch code, one request at a time, no cache, logits in one "
               "piece with float64 sampling, PyTorch's caching allocator", "vanilla", "static", "fixed:1",
     "torch-eager-f64", 0, "caching", false, false,
     "LLaDA's code samples in float64; for Dream-7B's (fp32) give --impl torch-eager", {{"max-batch", "1"}},
     "Mosaic section 5, its baselines (1): the unmodified official PyTorch code; LLaDA's: ML-GSAI/LLaDA "
     "generate.py (no cache, one prompt a call, the softmax of the logits cast to float64)", "engine", "roofline", false, NULL, 0, 0},
    {"fast-dllm-v2", "Fast-dLLM v2: its 7B block-diffusion model, blocks of 32 decoded in sub-blocks of 8 over a "
                     "block-level prefix cache, one token a step, static batches of 32, Hugging Face PyTorch code "
                     "run eagerly", "fdllm-v2", "static", "fixed:1", "torch-fdllm-v2", 0, "caching", false, false,
     "its evaluation sorts a batch's prompts by length and pads them with masks; tessera's static batches take "
     "requests in arrival order", {{"max-batch", "32"}, {"v2-sub-blocks", "4"}},
     "Fast-dLLM v2 (arXiv 2509.26328); NVlabs/Fast-dLLM v2/eval.py (bd_size 32, small_block_size 8, batch size "
     "32, use_block_cache off), v2/eval_script.sh (threshold 1 for GSM8K and MATH: one token a step), "
     "v2/generation_functions.py batch_sample (the loop; its host work: torch-fdllm-v2, tessera list impls)",
     "engine", "roofline", false, "fast-dllm-v2-7b", 8, 0},
    {"diffusion-gemma", "vLLM serving DiffusionGemma 26B-A4B: its prompt once, then a canvas of 256 positions "
                        "denoised over the prompt's K/V and committed by a causal pass of its own, continuous "
                        "batching, every canvas row's logits at once, CUDA graphs",
     "fdllm-v2", "request", "threshold:5.33", "vllm-dgemma", 0, "first-fit", false, false,
     "a canvas's steps depend on its entropies (entropy bound 0.1, done when stable and confident or after 48): "
     "tessera takes the 48, TPF 256 / 48, an assumption and an upper bound (reports of real runs give 20-34); "
     "its sampler's memory (16 bytes a logit: the fp32 logits and 3 fp32 copies) is measured on its step alone "
     "(experiments/records/dgemma-sampler-h200); vLLM's default CUDA graphs "
     "cover at most two canvases, tessera's profile prices any batch as graphed; the engine runs one attention "
     "shape a model, not its sliding and global layers; vLLM itself has not run it: 0.33.0 needs PyTorch 2.14, and "
     "the newest release for the GPU machines' 2.11 (0.26.0) holds an earlier runner. Its schedule, run on the "
     "engine with LLaDA2.0-mini in its place (experiments/records/dgemma-live-h200), is priced within 1.3-1.7% "
     "a run and 1.7% a step",
     {{"v2-sub-blocks", "1"}, {"v2-commit-decodes", "0"}, {"v2-prefill-logits", "0"}},
     "vllm-project/vllm vllm/model_executor/models/diffusion_gemma.py as merged at eb28452 (PR #45163) and "
     "released in 0.33.0 (DiffusionGemmaModelState: the encoder pass of the "
     "prompt, the canvas's bidirectional decoder steps over its K/V, the commit pass that writes the canvas's K/V "
     "and drops its sampler's outputs; self_conditioning_embeds; _compiled_sample_step over every canvas row) and "
     "the checkpoint's generation_config (canvas_length 256, max_denoising_steps 48)",
     "engine", "roofline", false, "diffusion-gemma", 256, 0},
    {"sglang-dgemma", "SGLang serving DiffusionGemma 26B-A4B on its dLLM path (release 0.5.23, Gemma4Renoise), first "
                      "done, first out: rounds of at most --max-running-requests [1, its dLLM default], prefill first, "
                      "the prompt whole in an EXTEND forward with no logits, then a canvas of 256 positions a forward a "
                      "round over the prompt's K/V with every row's logits, each finished canvas but the last encoded "
                      "again by an EXTEND forward of its own; --fdfo 0: sync",
     "fdllm-v2", "sglang", "threshold:5.33", "sglang-dgemma", 0, "first-fit", false, false,
     "a canvas's steps depend on its entropies (entropy bound 0.1, done when its argmax is stable and its mean "
     "entropy under 0.005, or after 48; at least 2): tessera takes the 48, TPF 256 / 48, an assumption and an upper "
     "bound, as for vLLM's (--system diffusion-gemma); its sampler's memory (10 bytes a logit) is read from the code, "
     "not measured; its EXTEND forwards run eagerly and its canvas rounds as captured graphs, both priced as "
     "tessera's engine runs a forward; a prompt past --max-prefill-tokens is refused where SGLang cuts it; the engine "
     "runs one attention shape a model, not DiffusionGemma's sliding and global layers. SGLang itself has not run "
     "it: 0.5.17, the newest release for the GPU machines' PyTorch 2.11, has no DiffusionGemma. Its schedule, run "
     "on the engine with LLaDA2.0-mini in its place (experiments/records/dgemma-live-h200), is priced within "
     "1.2-2.4% a run and 1.3-2.4% a step",
     {{"v2-sub-blocks", "1"}, {"v2-commit-decodes", "0"}, {"v2-prefill-logits", "0"}, {"v2-context-pass", "1"},
      {"separate-context", "1"}, {"fdfo", "1"}, {"max-running-requests", "1"}},
     "sgl-project/sglang release 0.5.23 (its wheel, files dated 2026-10-30; it records no commit), python/sglang/srt/: "
     "dllm/algorithm/gemma4_renoise.py (max_denoising_steps 48, entropy bound 0.1, stable and confident or 48; "
     "configure_server_args: radix cache off, chunked prefill off, prefill graphs off but with FA4; the per-request "
     "exponential race; the soft embeddings), dllm/mixin/scheduler.py (prefill first, EXTEND for a "
     "separate-context model's prefill rounds; _stash_dllm_context: the canvas's K/V freed), dllm/mixin/req.py (a "
     "finished canvas re-encoded as a prefill), managers/schedule_policy.py (rem_dllm_tokens: "
     "--max-prefill-tokens for it), models/gemma4_diffusion.py (context passes return no logits; every canvas row's "
     "logits), model_executor/runner/base_cuda_graph_runner.py (its graphs' batches capped at "
     "max_running_requests)",
     "engine", "roofline", false, "diffusion-gemma", 256, 0},
    {"vllm-dllm-plugin", "vLLM serving LLaDA2.0-mini through vllm-project/dllm-plugin: continuous batching of up to "
                         "32 requests, the prompt prefilled at once, then blocks of 32 from position 0 denoised with "
                         "every row's logits (threshold 0.9, at least one token a step), each block ended by a K/V "
                         "refresh forward", "serve-block", "request", "threshold:llada2-mini", "tessera", 0,
     "first-fit", false, false,
     "not run: the plugin needs a vLLM fork (its scheduler's dllm_* fields are not upstream), and neither could "
     "be installed offline; its forwards are priced as tessera's engine runs them, though the plugin runs without "
     "CUDA graphs (its docs: 10-15% longer steps) and syncs with the host every step, neither priced; the TPF is "
     "LLaDA2.0-mini's published mean (decode profile llada2-mini), not the plugin's at 0.9 (an assumption)",
     {{"serve-prefill-block", "0"}, {"max-batch", "32"}},
     "vllm-project/dllm-plugin at 0c53db5 (dllm/config.py: DRAFT_SIZE 32) and its later files (PRs "
     "#30 and #38): dllm_plugin/models/llada2_model_state.py (commit threshold 0.9, at most 64 iterations, the first "
     "block the prompt's tail and masks), sampling/diffusion_sampler.py (at least one token a step; a K/V refresh "
     "forward once a block has no mask), docs/KNOWN_LIMITATIONS.md (CUDA graphs disabled), "
     "docs/TP2_BENCHMARK_RESULTS.md (--max-num-seqs 32)", "engine", "calibrated", false, "llada2.0-mini", 32, 0},
    /* SGLang's dLLM path, first done first out (its default) and sync */
#define SGLANG_PRESET(NAME, FDFO, MODE)                                                                               \
    {NAME, "SGLang serving LLaDA2.0-mini on its dLLM path (release 0.5.23), " MODE ": rounds of at most "             \
           "--max-running-requests [1, its dLLM default], prefill first, the prompt a block of 32 a forward, each "   \
           "block confirmed by a forward that finds it resolved, LowConfidence decoding; SDAR: --model sdar-8b "      \
           "--block 4; LLaDA2.0-flash (100B): --model llada2.0-flash --tp 4",                                        \
           "serve-block", "sglang", "threshold:llada2-mini", "sglang", 0, "first-fit", false, false,                 \
     "each round padded to SGLang's captured CUDA-graph batch and priced by SGLang's own rounds, measured whole on "  \
     "an H200 for LLaDA2.0-mini (--impl sglang: a round's forward by its requests, graph and keys read, and the "      \
     "scheduler's host work between rounds, fitted on bursts of 1-32 requests); another card or model is priced "    \
     "as tessera's engine runs the forward, the host's work unpriced unless --rounds-host h200 carries the "         \
     "H200 host's (an assumption; the summary says which). SGLang 0.5.17 itself "                                  \
     "on an H200 (experiments/records/sglang-h200: --max-running-requests 8, five traces a mode) matched its "       \
     "throughput within 1% and its mean latency at +2% to +15% first done first out (+15% at 1 request a second), " \
     "-1% to +15% sync (+15% with lognormal lengths, where the preset runs 6% more forwards); the profile's engine "  \
     "ran --max-running-requests 32, its rounds of one or two requests 10% longer than at 8. The TPF is "             \
     "LLaDA2.0-mini's published mean (decode profile llada2-mini), not LowConfidence's at its threshold 0.95 (an "    \
     "assumption)",                                                                                                   \
     {{"fdfo", FDFO}, {"max-running-requests", "1"}},                                                                 \
     "sgl-project/sglang release 0.5.23 (its wheel, files dated 2026-10-30; it records no commit), "                  \
     "python/sglang/srt/: dllm/config.py (LLaDA2's block 32, SDAR's 4; max_running_requests 1 unless given), "       \
     "dllm/mixin/scheduler.py (get_new_batch_dllm: prefill first; process_batch_result_dllm), dllm/mixin/req.py "     \
     "(the phases; blocks from position 0), dllm/algorithm/base.py (_run_sync, _run_fdfo), "                          \
     "dllm/algorithm/low_confidence.py (threshold 0.95, at least one a step, done tested before the step), "          \
     "managers/schedule_policy.py (a request's extend at most one block), arg_groups/fields/exec_.py (--dllm-fdfo "  \
     "on by default), managers/tp_worker.py (the longest input less a block)",                                        \
     "engine", "calibrated", false, "llada2.0-mini", 32, 0}
    SGLANG_PRESET("sglang", "1", "first done, first out (--dllm-fdfo, its default): a forward a round, a request "
                                  "leaving its block as it resolves"),
    SGLANG_PRESET("sglang-sync", "0", "sync (--no-dllm-fdfo): a round runs its requests' blocks to the end, those "
                                       "done early padded"),
};

int preset_count(void) { return (int)TS_ARRAY_LEN(presets); }

const struct preset *preset_get(int i)
{
    TS_ASSERT(i >= 0 && i < preset_count());
    return &presets[i];
}

/* How each preset's system is known (sim_known): validated (tessera's prediction compared run for run
 * with the system itself running: the record, the error, where), measured (priced from measurements
 * of the system's own code, never compared end to end) or modelled (read from its code or paper,
 * never run: the commit). Its schedule run on tessera's own engine checks the cost model, not the
 * system, and validates nothing. */
static const struct {
    const char *name, *gpu, *known; /* gpu: the card a validation ran on */
} known[] = {
    {"fast-dllm", "h100", "validated: records/validate-h100, throughput within 3.6%, mean latency 28-29% short, 0.33-0.7 req/s, "
                  "H100"},
    {"dpad", "h100", "validated: records/validate-mechanisms-h100, throughput +29.4%, mean latency -23.7%, a burst of 6, H100"},
    {"dpad-prefix", "h100", "validated: records/validate-mechanisms-h100, throughput +0.9%, mean latency -3.4%, a burst of 6, "
                    "H100"},
    {"dpad-dual", "h100", "validated: records/validate-mechanisms-h100, throughput +2.9%, mean latency -1.6%, a burst of 6, "
                  "H100"},
    {"sparsed", "h100", "validated: records/validate-mechanisms-h100, a request 12-16% short, prompts 2,048-16,384, H100"},
    {"d2f", "h100", "validated: records/validate-mechanisms-h100, throughput +12.0%, mean latency -15.0% at fixed:1, a burst "
            "of 6, H100"},
    {"elastic-cache", "h100", "validated: records/elastic-own-code-h100, -9.2% over 6 requests one at a time (knobs from "
                      "that run), H100"},
    {"d2cache", "h100", "validated: records/d2cache-own-code-h100, -0.6% over 6 requests one at a time (knob from that run), "
                "H100"},
    {"dllm-serve", "h100", "validated: records/validate-h100, throughput within 7.7%, mean latency 11-12% short, 0.55 and 6 "
                   "req/s, H100"},
    {"sparse-dllm", "h100", "validated: records/validate-h100, throughput within 8.0%, mean latency -2.6% below saturation, "
                    "+35% above, H100"},
    {"dllm-cache", "h100", "validated: records/validate-h100, throughput within 6.1%, mean latency -0.8% below saturation, "
                   "+22% above, H100"},
    {"lmdeploy", NULL, "modelled: read from FOCUS's paper and scripts and LMDeploy's sdar.py (no commit); LMDeploy never run"},
    {"focus", NULL, "modelled: read from FOCUS's paper and sands-lab/FOCUS (no commit); FOCUS itself never run"},
    {"dinfer", NULL, "modelled: read from dInfer's slides and code (no commit); dInfer itself never run"},
    {"dinfer-fast-dllm", NULL, "modelled: dInfer's benchmark_dataset_fastdllm.py read at fce4e32; its model code never run"},
    {"vllm", NULL, "modelled: dInfer's Table 1 vLLM baseline, from its slides; vLLM never run"},
    {"mosaic", NULL, "modelled: read from Mosaic's paper and flashserve/Mosaic (no commit); Mosaic itself never run"},
    {"mosaic-torch", NULL, "modelled: Mosaic's baseline, from its paper's section 5; never run"},
    {"native", "h100", "validated: records/validate-h100 (LLaDA's bf16 sampling), throughput within 0.2%, mean latency -25.6% "
               "to +0.9%, H100"},
    {"fast-dllm-v2", "h100", "validated: records/fdllm-v2-own-code-h100, -18.4% over 6 requests at batch 1 (the preset "
                     "batches 32), H100"},
    {"diffusion-gemma", NULL, "modelled: vLLM's diffusion_gemma.py read at eb28452 (0.33.0); never run: it needs PyTorch "
                        "2.14"},
    {"sglang-dgemma", NULL, "modelled: SGLang 0.5.23 read (no commit); never run: 0.5.17, the newest for PyTorch 2.11, lacks "
                      "DiffusionGemma"},
    {"vllm-dllm-plugin", NULL, "modelled: dllm-plugin read at 0c53db5 (and PRs #30, #38); never run: it needs a vLLM fork"},
    {"sglang", "h200", "validated: records/sglang-h200 (SGLang 0.5.17), throughput within 1%, mean latency +1.9% to +14.5% at "
               "48-100% load, H200"},
    {"sglang-sync", "h200", "validated: records/sglang-h200 (SGLang 0.5.17), throughput within 1%, mean latency -1.4% to "
                    "+14.5% at 41-95% load, H200"},
};

/* The row of preset `name` in the table above, or -1. */
static int known_row(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(known); i++)
        if (ts_name_eq(known[i].name, name))
            return (int)i;
    return -1;
}

const char *preset_known_gpu(const char *name)
{
    const int i = known_row(name);
    return i < 0 ? NULL : known[i].gpu;
}

const char *preset_known(const char *name)
{
    const int i = known_row(name);
    return i < 0 ? NULL : known[i].known;
}

const char *sim_known(const struct sim_config *c, char *buf, size_t len)
{
    const struct preset *p = c->system[0] ? preset_find(c->system) : NULL;
    const char *k = p ? preset_known(p->name) : NULL;
    const bool own = strcmp(c->impl, "tessera") == 0 || strcmp(c->impl, "tessera-fused") == 0;
    const char *card = p ? preset_known_gpu(p->name) : NULL;
    if (k && strcmp(c->impl, p->impl) == 0 && (!card || ts_name_eq(card, c->gpu)))
        snprintf(buf, len, "%s", k);
    else if (k && strcmp(c->impl, p->impl) == 0) /* (validated on another card than this run's) */
        snprintf(buf, len, "modelled: %s on %s, where it never ran (%s)", p->name, c->gpu, k);
    else if (k) /* (the system's schedule on another runtime: what validated it was its own) */
        snprintf(buf, len, "modelled: %s's schedule on runtime %s, priced by the %s cost model (the preset's own "
                 "runtime is %s)", p->name, c->impl, c->cost, p->impl);
    else if (own && strcmp(c->cost, "calibrated") == 0)
        snprintf(buf, len, "measured: tessera's engine running policy %s and scheduler %s, priced by its calibration "
                 "(its held-out error: tessera calib show)", c->policy, c->scheduler);
    else
        snprintf(buf, len, "modelled: policy %s and scheduler %s on runtime %s, priced by the %s cost model", c->policy,
                 c->scheduler, c->impl, c->cost);
    return buf;
}

static const char *preset_name_at(int i)
{
    return i < preset_count() ? presets[i].name : NULL;
}

const struct preset *preset_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(presets); i++)
        if (ts_name_eq(presets[i].name, name))
            return &presets[i];
    return NULL;
}

int preset_apply(const char *name, struct sim_config *c, struct ts_err *err)
{
    const struct preset *p = preset_find(name);
    if (!p) {
        char list[256];
        ts_join_names(list, sizeof list, preset_name_at);
        return ts_fail(err, "unknown system preset '%s' (known: %s)", name, list);
    }
    snprintf(c->system, sizeof c->system, "%s", p->name);
    snprintf(c->policy, sizeof c->policy, "%s", p->policy);
    snprintf(c->scheduler, sizeof c->scheduler, "%s", p->scheduler);
    snprintf(c->decode, sizeof c->decode, "%s", p->decode);
    snprintf(c->impl, sizeof c->impl, "%s", p->impl);
    c->max_num_logits = p->max_num_logits;
    snprintf(c->planner, sizeof c->planner, "%s", p->planner);
    c->mask_only = p->mask_only;
    c->block_logits = p->block_logits;
    c->lazy_chunking = p->lazy_chunking;
    c->act_layout = og_layout_find(p->act_layout);
    TS_ASSERT(c->act_layout >= 0);
    if (p->model)
        snprintf(c->model, sizeof c->model, "%s", p->model);
    if (p->block)
        c->block = p->block;
    if (p->ep)
        c->ep = p->ep;
    for (size_t i = 0; i < TS_ARRAY_LEN(p->params) && p->params[i].name; i++)
        if (param_values_set_preset(&c->params, p->params[i].name, p->params[i].value, err))
            return -1;
    return 0;
}
