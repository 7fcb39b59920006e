/* sampler_mem.c: vLLM's DiffusionGemma sampler's memory at a step (sampler_mem.h). */
#include "sampler_mem.h"

#include <math.h>
#include <string.h>

#include "act_cache.h"
#include "planner.h"
#include "util.h"

int sampler_setup_make(const struct model_cfg *m, int64_t device_bytes, double util, double outside_gib,
                       int64_t max_batched, int32_t max_num_seqs, int32_t canvas, int32_t copies, bool tiled,
                       struct sampler_setup *out, struct ts_err *err)
{
    /* the profile run: a forward of max_batched tokens with a logit row a sequence */
    const struct og_shape prof = {max_batched, TS_MIN((int64_t)max_num_seqs, max_batched), 0, 1, 0, false, 1, 0};
    int64_t slack = 0;
    if (act_planned_bytes(m, planner_find("caching"), &prof, &slack, err))
        return -1;
    *out = (struct sampler_setup){device_bytes, util, (int64_t)(outside_gib * TS_GIB), slack, canvas, m->vocab,
                                  copies, tiled};
    return 0;
}

void sampler_mem_at(const struct sampler_setup *su, int32_t n, struct sampler_step *out)
{
    const int64_t rows = (int64_t)n * su->canvas, canvas_logits = (int64_t)su->canvas * su->vocab;
    *out = (struct sampler_step){.canvases = n, .logit_bytes = 4 * rows * su->vocab};
    const int64_t outside_free = (int64_t)((1 - su->util) * (double)su->device_bytes) - su->outside_bytes;
    out->avail_bytes = outside_free + su->slack_bytes;
    /* (the fp32 logits take PyTorch's cached blocks first, then the device's free memory) */
    out->free_bytes = TS_MAX(0, outside_free - TS_MAX(0, out->logit_bytes - su->slack_bytes));
    out->group = n;
    if (su->tiled) {
        const int64_t per_canvas = canvas_logits * 4 * SAMPLER_TILE_COPIES;
        out->group = (int32_t)TS_MAX(1, TS_MIN(n, (int64_t)(SAMPLER_TILE_SHARE * (double)out->free_bytes) / per_canvas));
    }
    out->transient_bytes = (int64_t)su->copies * 4 * out->group * canvas_logits;
    const int64_t softcap = 6 * rows * su->vocab; /* (the bf16 logits beside their fp32 copy) */
    out->need_bytes = TS_MAX(softcap, out->logit_bytes + out->transient_bytes);
    out->oom = out->need_bytes > out->avail_bytes;
}

void sampler_vllm_defaults(int64_t device_bytes, const char *gpu_name, int32_t *max_num_seqs, int64_t *batched)
{
    const bool large = device_bytes >= 70 * (int64_t)TS_GIB && !strstr(gpu_name, "a100");
    *max_num_seqs = large ? 1024 : 256;
    *batched = large ? SAMPLER_BATCHED : 2048;
}

int64_t sampler_kv_pool(const struct sampler_setup *su, int64_t weight_bytes)
{
    return (int64_t)(su->util * (double)su->device_bytes) - weight_bytes - su->slack_bytes;
}

int32_t sampler_mem_max(const struct sampler_setup *su, int32_t max)
{
    struct sampler_step st;
    int32_t n = 0;
    while (n < max && (sampler_mem_at(su, n + 1, &st), !st.oom))
        n++;
    return n;
}
