/*
 * eng_live.c: live mode, the engine in place of the cost model (`tessera sim --executor gpu`).
 * The simulator builds each step as usual; the engine executes it on the GPU and its measured time
 * (CUDA events) advances the simulated clock, so one schedule runs live, its latencies measured.
 * Requests' KV pages are freed when the simulator frees them. Beside the engine, the executor runs
 * what it does not: a step's host part over offloaded K/V (HERALD's: host_step), and a disaggregated
 * fleet's moves of K/V between engines (engine_moves).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_load.h"
#include "cost.h"
#include "eng.h"
#include "eng_ext_decl.h"
#include "eng_host.h"
#include "eng_tp.h"
#include "gpu.h"
#include "harness.h"
#include "kernels.h"
#include "setup.h"
#include "policy.h"
#include "sim.h"

/* The host's part of steps over K/V offloaded to host memory (HERALD's; host_step): the offloaded
 * tokens' K and V, token by token, in pinned host memory the GPU reads (mapped), the query, the
 * scores and the kept tokens, and the device memory the kept tokens' K and V cross the link into. */
struct live_host {
    uint16_t *kv;    /* [tokens][kv_row]: a token's K (every layer) then its V */
    int64_t tokens;  /* rows of kv */
    int64_t kv_row;  /* bf16 values a token: the model's K/V bytes a token / 2 */
    float *query, *scores;
    int32_t *top, *d_top;
    uint16_t *d_stage;
    int64_t kept;    /* rows of top, d_top and d_stage */
    cudaStream_t stream;
    struct step_desc gpu; /* the step without its host part: the engine's share */
    const struct step_desc *sd;
    double seconds; /* the host part's wall time */
    int rc;
    char msg[sizeof ((struct ts_err *)0)->msg];
};

/* The requests an extension the policy needs keeps room for without --max-batch (with it: that many,
 * at most 64). */
#define LIVE_EXT_REQUESTS 8

/* A live engine and, in a disaggregated fleet, the other replicas' K/V pools it has opened. */
struct live {
    struct eng *e;
    const struct sim *s;
    struct eng_pool *peers; /* [num_peers], by replica; k NULL where not opened */
    int num_peers;
    struct live_host host;
    struct step_desc padded;  /* a step whose captured graph pads it, its padding under ids of its own */
    int32_t next_id;          /* past every request id a step has named: no request holds K/V there */
};

/* A request's prompt length (eng_tokens.prompt: the extensions read it). */
static int32_t live_prompt(void *ctx, int32_t req_id)
{
    const struct live *l = ctx;
    return sim_request_prompt(l->s, req_id);
}

#define HOST_CU(call)                                                                                        \
    do {                                                                                                   \
        const cudaError_t rc_ = (call);                                                                    \
        if (rc_ != cudaSuccess)                                                                            \
            return ts_fail(err, "%s: %s", #call, cudaGetErrorString(rc_));                                 \
    } while (0)

/* The rows of h->kv that h->top's first `rows` name read by the GPU from host memory over the link
 * into h->d_stage, and waited for. */
static cudaError_t gather(struct live_host *h, int32_t rows)
{
    cudaError_t rc = cudaMemcpyAsync(h->d_top, h->top, sizeof *h->top * (size_t)rows, cudaMemcpyHostToDevice, h->stream);
    if (rc == cudaSuccess)
        rc = (cudaError_t)k_gather_rows(h->d_stage, h->kv, h->d_top, rows, (int)h->kv_row, h->stream);
    const cudaError_t sync = cudaStreamSynchronize(h->stream);
    return rc != cudaSuccess ? rc : sync;
}

/* Room for a step scoring `tokens` offloaded tokens a request and keeping `kept` in all: grown by half
 * again at least (never shrunk), the new K/V filled with small values, then read once by the host and
 * by the GPU, so that no step pays the first touch of memory it is the first to read. */
static int host_room(struct live_host *h, int64_t tokens, int64_t kept, struct ts_err *err)
{
    const bool grow = tokens > h->tokens;
    if (grow) {
        tokens = TS_MAX(tokens, h->tokens + h->tokens / 2);
        kept = TS_MAX(kept, h->kept);
        if (h->kv)
            HOST_CU(cudaFreeHost(h->kv));
        free(h->query), free(h->scores);
        h->kv = NULL, h->tokens = 0;
        HOST_CU(cudaHostAlloc((void **)&h->kv, sizeof *h->kv * (size_t)(tokens * h->kv_row), cudaHostAllocMapped));
        for (int64_t i = 0; i < tokens * h->kv_row; i++)
            h->kv[i] = (uint16_t)(0x3c00 + (i * 2654435761u >> 20) % 256); /* bf16 in [2^-7, 2^-5) */
        h->query = xmalloc(sizeof *h->query * (size_t)h->kv_row);
        for (int64_t i = 0; i < h->kv_row; i++)
            h->query[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
        h->scores = xmalloc(sizeof *h->scores * (size_t)tokens);
        h->tokens = tokens;
    }
    if (kept > h->kept) {
        if (h->d_stage)
            HOST_CU(cudaFree(h->d_stage));
        if (h->d_top)
            HOST_CU(cudaFree(h->d_top));
        free(h->top);
        h->d_stage = NULL, h->d_top = NULL, h->kept = 0;
        HOST_CU(cudaMalloc((void **)&h->d_stage, sizeof *h->d_stage * (size_t)(kept * h->kv_row)));
        HOST_CU(cudaMalloc((void **)&h->d_top, sizeof *h->d_top * (size_t)kept));
        h->top = xmalloc(sizeof *h->top * (size_t)kept);
        h->kept = kept;
    }
    if (!h->stream)
        HOST_CU(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking));
    if (grow && h->kept > 0) { /* the first touch: every token scored, and gathered in turn */
        if (eng_host_select(h->kv, h->tokens, h->kv_row / 2, h->kv_row, h->query, 0, ENG_HOST_THREADS, h->scores,
                            h->top) < 0)
            return ts_fail(err, "cannot start the host's scoring threads");
        for (int64_t t0 = 0; t0 < h->tokens; t0 += h->kept) {
            const int32_t rows = (int32_t)TS_MIN(h->kept, h->tokens - t0);
            for (int32_t i = 0; i < rows; i++)
                h->top[i] = (int32_t)(t0 + i);
            HOST_CU(gather(h, rows));
        }
    }
    return 0;
}

/* The host's part of step h->sd: each segment's host_scan tokens scored by the host's threads (the
 * keys: each token's first half-row), its host_kv best kept; then every kept token's K and V read by
 * the GPU from host memory over the link into device memory. h->rc and h->msg say how it went. */
static void *host_part(void *arg)
{
    struct live_host *h = arg;
    struct ts_err e = {0}, *err = &e;
    const double t0 = ts_wall_s();
    int64_t kept = 0;
    for (int32_t s = 0; s < h->sd->num_segs && !h->rc; s++) {
        const struct segment *g = &h->sd->segs[s];
        if (g->host_scan <= 0 && g->host_kv <= 0)
            continue;
        const int32_t k = g->host_scan > 0 ? eng_host_select(h->kv, g->host_scan, h->kv_row / 2, h->kv_row, h->query,
                                                             g->host_kv, ENG_HOST_THREADS, h->scores, h->top + kept)
                                           : 0;
        if (k < 0) {
            h->rc = -1, ts_fail(err, "cannot start the host's scoring threads");
            break;
        }
        for (int32_t i = k; i < g->host_kv; i++) /* those it brings without scoring them */
            h->top[kept + i] = i;
        kept += g->host_kv;
    }
    if (!h->rc && kept > 0) {
        const cudaError_t rc = gather(h, (int32_t)kept);
        if (rc != cudaSuccess)
            h->rc = -1, ts_fail(err, "the kept K/V's copy over the host link: %s", cudaGetErrorString(rc));
    }
    if (h->rc)
        snprintf(h->msg, sizeof h->msg, "%s", e.msg);
    h->seconds = ts_wall_s() - t0;
    return NULL;
}

/* dst emptied to a step of src's knobs, for a copy of src's segments as the engine is to run them */
static void step_like(struct step_desc *dst, const struct step_desc *src)
{
    int64_t knobs[STEP_KNOBS];
    step_knobs_get(src, knobs);
    step_desc_clear(dst);
    step_knobs_set(dst, knobs);
}

/* A step with a host part (HERALD's): the engine runs the step without it (its attention over the
 * K/V it keeps on the GPU, as many as the step names) while the host part runs for real, beside it
 * (host_overlap) or before it. Its time: the GPU's by CUDA events, as every live step's (the host's
 * planning and a new shape's GEMM tuning left out), and the host part's by the wall clock, the longer
 * of the two where they ran together, else their sum. */
static int host_step(struct live *l, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    struct live_host *h = &l->host;
    int64_t scan = 0;
    for (int32_t s = 0; s < sd->num_segs; s++)
        scan = TS_MAX(scan, TS_MAX((int64_t)sd->segs[s].host_scan, (int64_t)sd->segs[s].host_kv));
    if (host_room(h, scan, sd->tot.host_kv_tokens, err))
        return -1;
    step_like(&h->gpu, sd);
    for (int32_t s = 0; s < sd->num_segs; s++) {
        struct segment g = sd->segs[s];
        g.host_kv = g.host_scan = 0;
        step_desc_add(&h->gpu, &g);
    }
    h->sd = sd, h->rc = 0;
    pthread_t th;
    if (sd->host_overlap) {
        if (pthread_create(&th, NULL, host_part, h))
            return ts_fail(err, "cannot start the host's part of a step");
    } else {
        host_part(h);
    }
    float ms = 0;
    const int rc = eng_step(l->e, &h->gpu, NULL, &ms, err);
    if (sd->host_overlap)
        pthread_join(th, NULL);
    *seconds = sd->host_overlap ? fmax(h->seconds, ms * 1e-3) : h->seconds + ms * 1e-3;
    if (rc)
        return -1;
    return h->rc ? ts_fail(err, "%s", h->msg) : 0;
}

static void host_free(struct live_host *h)
{
    if (h->kv)
        cudaFreeHost(h->kv);
    if (h->d_stage)
        cudaFree(h->d_stage);
    if (h->d_top)
        cudaFree(h->d_top);
    if (h->stream)
        cudaStreamDestroy(h->stream);
    free(h->query), free(h->scores), free(h->top);
    step_desc_free(&h->gpu);
}

/* A step a captured graph pads (SGLang's rounds, PAD_GRAPH): the graph's padding rows are no request's,
 * so each runs under an id no request has held K/V under (past every id a step has named or a move has
 * given K/V: a request's K/V are taken at its first step or adopted before it), its pages freed with the
 * step (the sglang scheduler keeps them out of the simulated pool). */
static int padded_step(struct live *l, const struct step_desc *sd, float *ms, struct ts_err *err)
{
    step_like(&l->padded, sd);
    int32_t id = l->next_id;
    for (int32_t s = 0; s < sd->num_segs; s++) {
        struct segment g = sd->segs[s];
        if (g.padding == PAD_GRAPH)
            g.req_id = id++;
        step_desc_add(&l->padded, &g);
    }
    const int rc = eng_step(l->e, &l->padded, NULL, ms, err);
    while (id > l->next_id)
        eng_release(l->e, --id);
    return rc;
}

static int live_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    struct live *l = ctx;
    for (int32_t s = 0; s < sd->num_segs; s++)
        if (sd->segs[s].padding != PAD_GRAPH)
            l->next_id = TS_MAX(l->next_id, sd->segs[s].req_id + 1);
    if (sd->tot.host_kv_tokens > 0 || sd->tot.host_scan_tokens > 0)
        return host_step(l, sd, seconds, err);
    float ms = 0;
    if (sd->tot.graph_rows > 0 ? padded_step(l, sd, &ms, err) : eng_step(l->e, sd, NULL, &ms, err))
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static void live_release(void *ctx, int32_t req_id)
{
    struct live *l = ctx;
    eng_release(l->e, req_id);
}

static int live_hold(void *ctx, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    return eng_hold(((struct live *)ctx)->e, req_id, ticket, err);
}

/* --- a disaggregated fleet's moves (engine_load.h, engine_moves) ---------------------------- */

_Static_assert(sizeof(struct eng_pool_handle) <= ENGINE_POOL_HANDLE_BYTES, "a pool's handle fits the fleet's message");

static int share(void *ctx, void *handle, struct ts_err *err)
{
    memset(handle, 0, ENGINE_POOL_HANDLE_BYTES);
    return eng_pool_export(((struct live *)ctx)->e, handle, err);
}

static int open_peer(void *ctx, int index, const void *handle, struct ts_err *err)
{
    struct live *l = ctx;
    if (index < 0 || index >= 65536)
        return ts_fail(err, "replica %d: out of range", index);
    if (index >= l->num_peers) {
        l->peers = xrealloc(l->peers, sizeof *l->peers * (size_t)(index + 1));
        memset(l->peers + l->num_peers, 0, sizeof *l->peers * (size_t)(index + 1 - l->num_peers));
        l->num_peers = index + 1;
    }
    struct eng_pool_handle h;
    memcpy(&h, handle, sizeof h);
    if (eng_pool_import(&h, &l->peers[index], err))
        return ts_fail_prefix(err, "replica %d's K/V pool", index);
    return 0;
}

static int held_pages(void *ctx, int64_t ticket, const int32_t **pages, int32_t *n)
{
    return eng_held(((struct live *)ctx)->e, ticket, pages, n);
}

static int pull(void *ctx, int from, const int32_t *pages, int32_t n, int64_t key, double *seconds, struct ts_err *err)
{
    struct live *l = ctx;
    if (from < 0 || from >= l->num_peers || !l->peers[from].k)
        return ts_fail(err, "replica %d's K/V pool is not open here", from);
    float ms = 0;
    if (eng_pull(l->e, &l->peers[from], pages, n, key, &ms, err))
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static int adopt(void *ctx, int64_t key, int32_t req_id, struct ts_err *err)
{
    struct live *l = ctx;
    l->next_id = TS_MAX(l->next_id, req_id + 1); /* (its K/V are here before its first step) */
    return eng_adopt(l->e, key, req_id, err);
}

static void drop(void *ctx, int64_t ticket) { eng_drop(((struct live *)ctx)->e, ticket); }

static const struct engine_moves moves = {share, open_peer, held_pages, pull, adopt, drop};

const struct engine_moves *eng_live_moves(void) { return &moves; }

/* The engine sized for the simulation's steps (its token cap, its LM-head chunk, its FFN chunks: each
 * step then runs by its own step_desc, lazy chunking's counts and block-causal attention included),
 * the FFN fused under an implementation profile with a fused FFN, and its activations laid out by
 * the simulation's planner. */
int eng_live_open(const struct sim *s, double mem_limit_gb, struct sim_executor *ex, struct ts_err *err)
{
    const struct sim_config *c = sim_config(s);
    const struct model_cfg *m = sim_model(s);
    struct eng_choices choices; /* the run's engine options (stored with it) */
    eng_choices_of(c, &choices);
    struct eng_opts o;
    eng_opts_defaults(&o, &choices);
    const double cap = sim_sched_param(s, "max-num-batched-tokens", 0); /* the phase scheduler's step cap */
    o.max_tokens = cap > 0 ? (int32_t)cap : 16384;
    o.logit_chunk_rows = c->max_num_logits > 0 ? c->max_num_logits : o.max_tokens;
    o.ffn_chunks = c->ffn_chunks > 0 ? c->ffn_chunks : 1;
    o.page_tokens = c->kv_page;
    o.mem_limit = (int64_t)(mem_limit_gb * 1e9);
    o.planner = c->planner;
    eng_opts_follow_impl(&o, &sim_setup_of(s)->impl); /* --impl tessera-fused: the FFN fused, as simulated */
    if (eng_tp_place(&o, err)) /* --tp: this rank's place in the launch (eng_tp.h) */
        return -1;
    if (o.tp_size != c->tp)
        return ts_fail(err, "--tp %d, but this process is rank %d of %d (launched by --tp)", c->tp, o.tp_rank,
                       o.tp_size);
    o.feature_cache = sim_knobs(s)->cache_outputs; /* dLLM-Cache's pool: outputs beside K and V */
    o.input_cache = sim_knobs(s)->cache_inputs;    /* Elastic-Cache's: each layer's inputs beside them */
    const struct policy_ops *po = sim_setup_of(s)->policy;
    sim_ext_params(s, &o.ext); /* the policy's parameters, typed */
    const double batch = sim_sched_param(s, "max-batch", 0);
    const int32_t held = batch > 0 ? (int32_t)TS_MIN(batch, 64) : LIVE_EXT_REQUESTS;
    for (int id = 0; id < EXT_ENGINE_IDS; id++) /* room in each extension the policy needs: a step's rows a request */
        if (eng_ext_named(po->engine, eng_ext_decl_get(id)->name))
            o.room[id] = (struct eng_ext_room){held, o.max_tokens};
    struct live *l = xcalloc(1, sizeof *l);
    if (eng_create(m, &o, &l->e, err)) {
        free(l);
        return -1;
    }
    /* the card the steps run on is the card they are priced for: a live step measured on another card
     * reads as the cost model's error */
    const char *card = gpu_of_device(eng_device_name(l->e), 0);
    if (card && !c->gpu_file[0] && !ts_name_eq(card, c->gpu)) {
        ts_fail(err, "--gpu %s, but the engine runs on %s (%s in tessera list gpus): its steps would be priced as "
                     "another card's; give --gpu %s", c->gpu, eng_device_name(l->e), card, card);
        eng_destroy(l->e);
        free(l);
        return -1;
    }
    if (!card && !c->gpu_file[0])
        fprintf(stderr, "tessera sim: note: the engine runs on %s, which tessera's GPU table does not name; its "
                        "steps are priced as --gpu %s's (--gpu-file FILE adds the card)\n", eng_device_name(l->e),
                c->gpu);
    l->s = s;
    eng_set_tokens(l->e, &(struct eng_tokens){.prompt = live_prompt, .ctx = l}); /* the prompts' lengths */
    l->host.kv_row = model_kv_bytes_per_token(m) / 2; /* bf16 values: K and V, every layer */
    step_desc_init(&l->host.gpu);
    step_desc_init(&l->padded);
    *ex = (struct sim_executor){l, live_step, live_release, live_hold};
    return 0;
}

void eng_live_close(struct sim_executor *ex)
{
    struct live *l = ex ? ex->ctx : NULL;
    if (l) {
        for (int i = 0; i < l->num_peers; i++)
            eng_pool_close(&l->peers[i]);
        free(l->peers);
        host_free(&l->host);
        step_desc_free(&l->padded);
        eng_destroy(l->e);
        free(l);
    }
    if (ex)
        memset(ex, 0, sizeof *ex);
}

void eng_opts_follow_impl(struct eng_opts *o, const struct impl_profile *impl)
{
    if (impl->fused_ffn)
        o->ffn = 1;
}
