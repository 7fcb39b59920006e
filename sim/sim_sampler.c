/*
 * sim_sampler.c: a run of vLLM's DiffusionGemma runner held against vLLM's own memory (sampler_mem.h).
 * vLLM sizes its KV pool from a profile run that never samples, so the sampler's transient at a step
 * takes what the budget left outside it; tessera's own accounting reserves each request's logits and
 * never runs out. The run's largest step, in canvases (a request's segment with logits: vLLM samples
 * a canvas of --block rows for each), is judged at vLLM's utilization (SAMPLER_UTIL), its profile run
 * of --max-num-seqs the run's cap (else vLLM's default for the card, sampler_vllm_defaults) and
 * tessera's assumption of what is held outside the budget (SAMPLER_OUTSIDE_GIB), as `tessera mem
 * sampler` prints them; where vLLM's budget holds no KV pool it does not start: a step holds none.
 */
#include "sim_internal.h"

#include "sampler_mem.h"

/* canvases a step holds at most, searched up to */
#define SAMPLER_SEARCH_MAX 4096

void sim_sampler_setup(struct sim *s)
{
    s->sampler_holds = -1;
    if (s->impl.sampler == SAMPLER_NONE || s->cfg.tp != 1 || s->cfg.block < 1)
        return;
    /* the profile run: a logit row a sequence, up to --max-num-seqs (the run's cap, else vLLM's default) */
    int32_t seqs;
    int64_t batched;
    sampler_vllm_defaults(s->gpu.mem_bytes, s->gpu.name, &seqs, &batched);
    if (s->sum.concurrency_cap > 0)
        seqs = s->sum.concurrency_cap;
    struct sampler_setup su;
    struct ts_err err;
    if (sampler_setup_make(&s->model, s->gpu.mem_bytes, SAMPLER_UTIL, SAMPLER_OUTSIDE_GIB, batched, seqs,
                           s->cfg.block, SAMPLER_COPIES, s->impl.sampler == SAMPLER_TILED, &su, &err))
        return; /* (the caching planner refusing the profile run's forward: not judged) */
    s->sampler_holds = sampler_kv_pool(&su, s->mem.weight_bytes) > 0 ? sampler_mem_max(&su, SAMPLER_SEARCH_MAX) : 0;
}

void sim_sampler_judge(const struct sim *s, struct sim_summary *out)
{
    /* (a canvas a request, --block rows, however many of them it masks) */
    const bool judged = s->sampler_holds >= 0;
    out->sampler_holds = s->sampler_holds;
    out->sampler_canvases = judged ? s->peak_canvases : 0;
    out->sampler_oom = judged && out->sampler_canvases > out->sampler_holds;
}
