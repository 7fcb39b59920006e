/* config.c: defaults, validation and the JSON echo of a run's configuration. */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "decode.h"
#include "opgraph.h"
#include "parts.h"

#ifndef TS_DATADIR
#define TS_DATADIR "sim/data"
#endif

const char *const cfg_executor_names[2] = {"model", "gpu"};
const char *const cfg_clock_names[3] = {"auto", "on", "off"};
const char *const cfg_preempt_names[2] = {"recompute", "swap"};

int cfg_choice(const char *opt, const char *name, const char *const *names, int n, int32_t *out, struct ts_err *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                 names[i]);
    return ts_fail(err, "--%s: '%s' is not %s", opt, name, list);
}

void sim_config_defaults(struct sim_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "llada-8b");
    snprintf(c->gpu, sizeof c->gpu, "h200");
    snprintf(c->policy, sizeof c->policy, "dual");
    snprintf(c->scheduler, sizeof c->scheduler, "phase");
    snprintf(c->decode, sizeof c->decode, "fixed:1");
    snprintf(c->eos, sizeof c->eos, "auto");
    snprintf(c->cost, sizeof c->cost, "roofline");
    c->executor = EXECUTOR_MODEL;
    c->clock = CLOCK_AUTO;
    snprintf(c->impl, sizeof c->impl, "tessera");
    const char *env = getenv("TESSERA_DATA");
    snprintf(c->datadir, sizeof c->datadir, "%s", env && *env ? env : TS_DATADIR);
    snprintf(c->trace, sizeof c->trace, "synthetic");
    snprintf(c->arrivals, sizeof c->arrivals, "poisson");
    snprintf(c->lengths, sizeof c->lengths, "sharegpt");
    c->rps = 0;
    c->requests = 0;
    c->seed = 1;
    c->gen_len = 256;
    c->block_size = 32;
    c->tp = 1;
    c->ep = 1;
    c->logit_chunk_rows = 2048;
    c->ffn_chunks = 1;
    c->kv_page_tokens = 16;
    c->reserve_gib = -1;
    c->search_margin_mib = -1;
    c->preempt = PREEMPT_RECOMPUTE;
    snprintf(c->planner, sizeof c->planner, "first-fit");
    snprintf(c->act_layout, sizeof c->act_layout, "engine");
}

int sim_config_validate(const struct sim_config *c, struct ts_err *err)
{
    TS_ASSERT(c->executor >= 0 && c->executor < (int32_t)TS_ARRAY_LEN(cfg_executor_names) && c->clock >= 0 &&
              c->clock < (int32_t)TS_ARRAY_LEN(cfg_clock_names) && c->preempt >= 0 &&
              c->preempt < (int32_t)TS_ARRAY_LEN(cfg_preempt_names));
    double scale[OP_COUNT];
    if (cost_op_scale_parse(c->op_scale, scale, err))
        return -1;
    if (!(c->live_mem_gib >= 0 && c->live_mem_gib <= 1e5))
        return ts_fail(err, "--live-mem-gib: %g is not in 0..100000 GiB (0 = all free memory)", c->live_mem_gib);
    enum decode_eos eos;
    if (decode_eos_parse(c->eos, &eos, err))
        return -1;
    if (c->block_size < 1 || c->block_size > 65536)
        return ts_fail(err, "--block: %d is not in 1..65536 tokens", c->block_size);
    if (c->tp < 1 || c->tp > 8)
        return ts_fail(err, "--tp: %d is not in 1..8 GPUs", c->tp);
    if (c->ep < 1 || c->ep > 8)
        return ts_fail(err, "--ep: %d is not in 1..8 GPUs", c->ep);
    if (c->ep > 1 && c->tp > 1)
        return ts_fail(err, "--ep %d with --tp %d: expert parallelism is modelled with the rest of the step "
                            "replicated on every GPU, not beside tensor parallelism", c->ep, c->tp);
    if (c->ep > 1 && c->executor == EXECUTOR_GPU)
        return ts_fail(err, "--ep %d: the engine runs no expert parallelism (--executor model)", c->ep);
    if (c->calib_from[0] && (c->calib[0] || strcmp(c->cost, "calibrated") != 0))
        return ts_fail(err, "--calib-from %s: a calibrated cost (--cost calibrated) carried from another GPU; "
                            "--calib names a calibration of its own", c->calib_from);
    if (c->gen_len < 0 || c->gen_len > (1 << 28))
        return ts_fail(err, "--gen-len: %d is not in 0..268435456 positions (0: the trace's output lengths)", c->gen_len);
    if (c->max_new_tokens < 0 || c->max_new_tokens > (1 << 28))
        return ts_fail(err, "--max-new-tokens: %d is not in 0..268435456 positions (0: no cap)", c->max_new_tokens);
    if (c->max_new_tokens > 0 && c->gen_len > 0)
        return ts_fail(err, "--max-new-tokens caps the trace's output lengths: give it with --gen-len 0 "
                            "(--gen-len %d sets every request's)", c->gen_len);
    if (c->max_new_tokens > 0 && c->max_new_tokens < c->block_size)
        return ts_fail(err, "--max-new-tokens: %d is less than one block (--block %d)", c->max_new_tokens,
                       c->block_size);
    if (!(c->rps >= 0 && c->rps <= 1e9))
        return ts_fail(err, "--rps: %g is not in 0..1e9 requests a second", c->rps);
    if (c->requests < 0)
        return ts_fail(err, "--requests: %lld is not 1 or more", (long long)c->requests);
    const struct policy_ops *po = policy_find(c->policy);
    const struct sched_ops *so = sched_find(c->scheduler);
    struct run_params rp;
    if (po && so && parts_resolve(po, so, &c->params, &rp, err))
        return -1;
    if (c->logit_chunk_rows < 0 || c->logit_chunk_rows > (1 << 24))
        return ts_fail(err, "--max-num-logits: %d is not in 0..16777216 rows (0 = monolithic)", c->logit_chunk_rows);
    if (c->ffn_chunks < 1 || c->ffn_chunks > 4096)
        return ts_fail(err, "--ffn-chunks: %d is not in 1..4096", c->ffn_chunks);
    if (c->kv_page_tokens < 1 || c->kv_page_tokens > 65536)
        return ts_fail(err, "--kv-page: %d is not in 1..65536 tokens", c->kv_page_tokens);
    if (!(c->reserve_gib <= 1e5)) /* < 0: the implementation profile's */
        return ts_fail(err, "--reserve-gib: %g is not in 0..100000 GiB", c->reserve_gib);
    if (!(c->search_margin_mib <= 1048576)) /* < 0: Mosaic's */
        return ts_fail(err, "--search-margin-mib: %g is not in 0..1048576 MiB", c->search_margin_mib);
    if (og_layout_find(c->act_layout) < 0)
        return ts_fail(err, "--act-layout: '%s' is not engine or mosaic", c->act_layout);
    return 0;
}

char *sim_config_to_json(const struct sim_config *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "system", json_string(c->system));
    json_object_set_new(o, "model", json_string(c->model));
    json_object_set_new(o, "gpu", json_string(c->gpu));
    json_object_set_new(o, "gpu_file", json_string(c->gpu_file));
    json_object_set_new(o, "policy", json_string(c->policy));
    json_object_set_new(o, "scheduler", json_string(c->scheduler));
    json_object_set_new(o, "decode", json_string(c->decode));
    json_object_set_new(o, "cost", json_string(c->cost));
    json_object_set_new(o, "impl", json_string(c->impl));
    json_object_set_new(o, "calib", json_string(c->calib));
    if (c->calib_from[0]) /* (absent where the calibration is the GPU's own) */
        json_object_set_new(o, "calib_from", json_string(c->calib_from));
    json_object_set_new(o, "host", json_string(c->host));
    json_object_set_new(o, "extrapolate", json_boolean(c->extrapolate));
    json_object_set_new(o, "clock", json_string(cfg_clock_names[c->clock]));
    json_object_set_new(o, "op_scale", json_string(c->op_scale));
    json_object_set_new(o, "tp", json_integer(c->tp));
    json_object_set_new(o, "ep", json_integer(c->ep));
    json_object_set_new(o, "executor", json_string(cfg_executor_names[c->executor]));
    json_object_set_new(o, "trace", json_string(c->trace));
    json_object_set_new(o, "arrivals", json_string(c->arrivals));
    json_object_set_new(o, "lengths", json_string(c->lengths));
    json_object_set_new(o, "rps", json_real(c->rps));
    json_object_set_new(o, "requests", json_integer(c->requests));
    json_object_set_new(o, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(o, "skip_bad_rows", json_boolean(c->skip_bad_rows));
    json_object_set_new(o, "clip_prompt", json_boolean(c->clip_prompt));
    json_object_set_new(o, "gen_len", json_integer(c->gen_len));
    json_object_set_new(o, "max_new_tokens", json_integer(c->max_new_tokens));
    json_object_set_new(o, "block_size", json_integer(c->block_size));
    json_object_set_new(o, "early_stop", json_boolean(c->early_stop));
    json_object_set_new(o, "eos", json_string(c->eos));
    json_object_set_new(o, "iter_smooth", json_boolean(c->iter_smooth));
    json_object_set_new(o, "mask_only", json_boolean(c->mask_only));
    json_object_set_new(o, "block_logits", json_boolean(c->block_logits));
    json_object_set_new(o, "max_num_logits", json_integer(c->logit_chunk_rows));
    json_object_set_new(o, "ffn_chunks", json_integer(c->ffn_chunks));
    json_object_set_new(o, "kv_page_tokens", json_integer(c->kv_page_tokens));
    json_object_set_new(o, "reserve_gib", json_real(c->reserve_gib));
    json_object_set_new(o, "preempt", json_string(cfg_preempt_names[c->preempt]));
    json_object_set_new(o, "planner", json_string(c->planner));
    json_object_set_new(o, "act_layout", json_string(c->act_layout));
    json_object_set_new(o, "lazy_chunking", json_boolean(c->lazy_chunking));
    json_object_set_new(o, "search_margin_mib", json_real(c->search_margin_mib));
    const struct policy_ops *po = policy_find(c->policy);
    const struct sched_ops *so = sched_find(c->scheduler);
    struct run_params rp;
    if (po && so && parts_resolve(po, so, &c->params, &rp, NULL) == 0) { /* their parameters, resolved */
        params_json(o, po->params, po->num_params, rp.policy);
        params_json(o, so->params, so->num_params, rp.sched);
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    TS_ASSERT(s != NULL);
    return s;
}
