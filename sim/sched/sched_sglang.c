/*
 * sched_sglang.c: SGLang's dLLM scheduler (sglang 0.5.23: srt/dllm/mixin/scheduler.py's
 * get_new_batch_dllm and process_batch_result_dllm, srt/dllm/algorithm/base.py's _run_sync and
 * _run_fdfo, srt/dllm/config.py).
 *
 * A round forms a batch of the running requests, at most max-running-requests of them (SGLang's
 * --max-running-requests; its dLLM default 1), admitted FCFS from the queue at the start of a round
 * with their whole KV reserved. Prefill first: while any running request has a prompt block to
 * prefill, a round holds only those (each one block a forward, policy serve-block), and the others
 * wait; else it holds every running request's denoising step. The two modes:
 *   fdfo 1 (first done, first out; SGLang's default): a round is one forward. A row whose block
 *     resolves leaves it with that forward and starts its next block in the next round, while the
 *     others go on denoising theirs; a request that finishes leaves at once. With steps-per-round K
 *     (SGLANG_DLLM_FDFO_STEPS_PER_ROUND, sgl-project/sglang PR #33190, open; read from its
 *     DllmAlgorithm._run_fdfo unit test, whose contract is that K inner forwards leave the state K
 *     one-forward rounds would, the scheduler's per-round host work alone amortized, and that a round
 *     stops once every row has resolved): the round's frozen batch runs up to K forwards, a row whose
 *     block resolved waiting in it as padding, and the round ends early once every row's has; the
 *     scheduler's host work between rounds is paid once a round, admission waits for the round's end.
 *   fdfo 0 (sync, --no-dllm-fdfo): a denoising round runs its rows' blocks to the end in forward after
 *     forward; a row whose block is done early stays in the batch as padding (its block's rows again,
 *     committing nothing) until the slowest is done, and requests join or leave only between rounds.
 *     A prefill round is one forward.
 * A model whose algorithm encodes its context apart (separate-context 1: DiffusionGemma's Gemma4Renoise,
 * dllm/algorithm/gemma4_renoise.py, requires_separate_context_encoding) has its prompt and each finished
 * canvas but the last encoded by EXTEND forwards of their own (policy fdllm-v2 --v2-context-pass 1): its
 * prefill rounds (prefill first still holds) take a request's prompt whole, within a round's budget of
 * max-prefill-tokens (SGLang's --max-prefill-tokens, 16,384: schedule_policy.py's rem_dllm_tokens for a
 * separate-context model; a request that does not fit waits for the next round, where SGLang would cut
 * it and carry the rest), and run eagerly (gemma4_renoise.py turns prefill graphs off but on
 * Blackwell's FA4).
 * CUDA graphs (cuda-graph 1, SGLang's default): a round of n requests, its prompt blocks' or its
 * denoising steps' (both DLLM_EXTEND, a mode forward_batch_info.py's is_cuda_graph takes), runs as the
 * captured decode graph of the smallest batch of at least n (server_args.py's
 * _generate_decode_cuda_graph_batch_sizes: 1, 2, 4, 8, 12, 16 to 256 in 8s, 272 to 496 in 16s, then
 * 32s, up to its --cuda-graph-max-bs, which it sets by the card's memory: 8 under 20 GiB, 24 under 35,
 * 32 under 60, 256 under 160 (with tensor parallelism of 4 or more 80, 160, 512), 512 above; then only
 * sizes up to max-running-requests, which is captured too: model_executor/runner/
 * base_cuda_graph_runner.py), the rows past n padding: a block of rows each, reading no cache (the
 * graph's padded sequence lengths are its fill value, a token), committing nothing, carrying the
 * round's last request's id. A round larger than every graph runs eagerly, unpadded. cuda-graph 0 is
 * --disable-cuda-graph.
 * Memory: the activation budget of a forward of max-running-requests blocks (every row's logits) is
 * reserved once (separate-context 1: or of a prefill round's max-prefill-tokens rows without logits, the
 * larger), and a request whose largest step runs more than a block (separate-context 1: whose prompt is
 * longer than max-prefill-tokens) is rejected; the rest of the device after the weights, less the K/V a
 * round's graph padding writes (graph_cap - 1 blocks), is the KV pool.
 */
#include <stdlib.h>

#include "rounds.h"
#include "sched.h"
#include "sched_view.h"
#include "sim.h"

enum { MAX_RUNNING, FDFO, CUDA_GRAPH, SEPARATE, MAX_PREFILL, STEPS_PER_ROUND };
static const struct param_spec sglang_params[] = {
    [MAX_RUNNING] = {"max-running-requests", "requests a dLLM round batches at most (SGLang's "
                     "--max-running-requests; 1 where not given, as its dLLM config sets it)", 1, 1, 1 << 16, true},
    [FDFO] = {"fdfo", "1: first done, first out (SGLang's default, --dllm-fdfo): one forward a round, a row leaving "
              "its block as soon as it resolves; 0: sync (--no-dllm-fdfo): a round runs its rows' blocks to the "
              "end, rows done early padded", 1, 0, 1, true},
    [CUDA_GRAPH] = {"cuda-graph", "1: a round runs as SGLang's captured decode graph of the smallest batch at least "
                    "its size (1, 2, 4, 8, 12, 16, 24, ... up to max-running-requests or its cap for the card's "
                    "memory), the rest padding; 0: --disable-cuda-graph", 1, 0, 1, true},
    [SEPARATE] = {"separate-context", "1: prompts and finished canvases encoded by EXTEND forwards of their own "
                  "(DiffusionGemma's Gemma4Renoise; policy fdllm-v2 --v2-context-pass 1): a prefill round takes "
                  "prompts whole within max-prefill-tokens and runs eagerly; 0: a prompt a block a forward",
                  0, 0, 1, true},
    [MAX_PREFILL] = {"max-prefill-tokens", "separate-context 1: the tokens a prefill round holds at most (SGLang's "
                     "--max-prefill-tokens)", 16384, 1, 1 << 24, true},
    [STEPS_PER_ROUND] = {"steps-per-round", "fdfo 1: forwards a denoising round runs its frozen batch for (SGLang's "
                         "SGLANG_DLLM_FDFO_STEPS_PER_ROUND, 1 by default): a row whose block resolves waits padded, "
                         "the round ending early once every row's has; the round's host work once", 1, 1, 1024, true},
};

int32_t sglang_graph_max_bs(int64_t mem_bytes, int32_t tp)
{
    const double mib = (double)mem_bytes / (1 << 20);
    if (mib < 20 * 1024)
        return 8;
    if (mib < 35 * 1024)
        return tp < 4 ? 24 : 80;
    if (mib < 60 * 1024)
        return tp < 4 ? 32 : 160;
    if (mib < 160 * 1024)
        return tp < 4 ? 256 : 512;
    return 512;
}

int32_t sglang_graph_batch(int32_t n, int32_t max_bs)
{
    TS_ASSERT(n >= 1);
    if (n > max_bs) /* (no graph holds it: the round runs eagerly) */
        return n;
    int32_t b;
    if (n <= 2)
        b = n;
    else if (n <= 4)
        b = 4;
    else if (n <= 8)
        b = 8;
    else if (n <= 12)
        b = 12;
    else if (n <= 256)
        b = (n + 7) / 8 * 8;
    else if (n <= 496)
        b = 272 + (n - 272 + 15) / 16 * 16;
    else
        b = 512 + (n - 512 + 31) / 32 * 32;
    return TS_MIN(b, max_bs);
}

struct sglang_round {
    int32_t *id;     /* the round's requests */
    int32_t *block;  /* each one's block when the round began */
    int32_t *kv;     /* and the keys its block's rows read (its padding rows read them again) */
    int32_t n, cap;
    bool prefill;    /* a round of prompt blocks: one forward */
    int32_t forwards; /* the forwards the round has run */
    int32_t graph_cap; /* the largest captured graph (cuda-graph 1; 0: none): the card's cap or max-running-requests */
};

static int sglang_init(struct sim *s, struct ts_err *err)
{
    struct sim_mem *m = sim_mem(s);
    const double *p = sim_sched_p(s);
    const struct policy_ops *pol = sim_policy(s);
    const int32_t block = sim_policy_cfg(s)->block_size;
    const int32_t canvas = pol->context_pass_rows ? pol->context_pass_rows(sim_policy_cfg(s)) : 0;
    const bool context_pass = canvas > 0;
    if (context_pass != (p[SEPARATE] != 0))
        return ts_fail(err, "sglang scheduler: separate-context %d under policy %s%s: SGLang encodes the context "
                            "apart exactly where a finished canvas's K/V is written by a context pass (--policy "
                            "fdllm-v2 --v2-context-pass 1 --separate-context 1, as --system sglang-dgemma runs)",
                       (int)p[SEPARATE], pol->name, context_pass ? " with --v2-context-pass 1" : "");
    if (context_pass && p[MAX_PREFILL] < canvas)
        return ts_fail(err, "sglang scheduler: --max-prefill-tokens %d is less than a canvas's context pass (%d "
                            "rows)", (int)p[MAX_PREFILL], (int)canvas);
    if (p[STEPS_PER_ROUND] > 1 && p[FDFO] == 0)
        return ts_fail(err, "sglang scheduler: steps-per-round %d under fdfo 0: a sync round runs its blocks to the end "
                            "already (SGLANG_DLLM_FDFO_STEPS_PER_ROUND is first done, first out's)",
                       (int)p[STEPS_PER_ROUND]);
    struct sglang_round *rd = xcalloc(1, sizeof *rd);
    *sim_sched_state(s) = rd;
    if (p[CUDA_GRAPH])
        rd->graph_cap = TS_MIN((int32_t)p[MAX_RUNNING], sglang_graph_max_bs(sim_gpu(s)->mem_bytes, sim_gpus(s)));
    const int64_t rows = (int64_t)p[MAX_RUNNING] * block;
    m->act_reserved = sim_act_peak(s, rows, rows);
    if (p[SEPARATE]) /* (a prefill round's rows, without logits) */
        m->act_reserved = TS_MAX(m->act_reserved, sim_act_peak(s, (int64_t)p[MAX_PREFILL], 0));
    m->kv_pool_bytes = m->capacity - m->weight_bytes - m->act_reserved;
    if (m->kv_pool_bytes <= 0)
        return ts_fail(err, "sglang scheduler: a forward of max-running-requests=%d blocks of %d (or a prefill round) "
                            "plans %.2f GiB of activations, which with %.2f GiB of weights leaves no KV pool on %s; "
                            "lower --max-running-requests (or --max-prefill-tokens)",
                       (int)p[MAX_RUNNING], block, m->act_reserved / TS_GIB,
                       m->weight_bytes / TS_GIB, sim_gpu(s)->name);
    /* a round's graph padding writes K/V too, at most graph_cap - 1 blocks of them: kept out of the pool */
    const int64_t page = m->kv_page_tokens * m->kv_token_bytes,
                  block_pages = (block + m->kv_page_tokens - 1) / m->kv_page_tokens,
                  pad = rd->graph_cap > 1 ? (int64_t)(rd->graph_cap - 1) * block_pages * page : 0;
    if (m->kv_pool_bytes <= pad)
        return ts_fail(err, "sglang scheduler: the KV its captured graphs' padding writes (%.2f GiB) takes the whole "
                            "KV pool on %s; lower --max-running-requests or give --cuda-graph 0", pad / TS_GIB,
                       sim_gpu(s)->name);
    m->kv_pool_bytes -= pad;
    m->kv_pages_total = m->kv_pool_bytes / page;
    return 0;
}

static const char *sglang_reject(struct sim *s, const struct request *r)
{
    const double *p = sim_sched_p(s);
    const int32_t block = sim_policy_cfg(s)->block_size;
    if (r->L + block > sim_model(s)->max_pos) /* (tp_worker.py: the longest input less a block) */
        return "P + G and a block exceed the model's maximum positions";
    if (sim_kv_pages(s, sim_kv_need(s, r, true)) > sim_mem(s)->kv_pages_total)
        return "its KV cache is larger than the whole KV pool";
    int32_t q, logits;
    sim_peak_shape(s, r, &q, &logits);
    if (p[SEPARATE]) { /* (its largest forward the prompt's pass: no preemption recomputes more) */
        if (r->P > p[MAX_PREFILL])
            return "its prompt pass runs more rows than --max-prefill-tokens (SGLang carries the rest to the next "
                   "round; tessera does not)";
        if (logits > block)
            return "a step of it takes more logit rows than a canvas, which a round's activations are reserved for";
    } else if (q > block) { /* (a round's activations are reserved for a block a request) */
        return "its largest step runs more rows than a block, which a round of max-running-requests blocks does "
               "not hold (policy serve-block prefills a block a forward)";
    }
    return NULL;
}

/* Admits queued requests (FCFS, their whole KV reserved) while the running set has room. */
static void admit(struct sim *s)
{
    while (sim_waiting(s)->n > 0 && sim_num_running(s) < (size_t)sim_sched_p(s)[MAX_RUNNING]) {
        struct request *r = sim_request(s, deque_front(sim_waiting(s)));
        if (!sim_kv_reserve(s, r, sim_kv_need(s, r, true)))
            break;
        deque_pop_front(sim_waiting(s));
        sim_admit(s, r);
    }
}

/* The next round: the running requests with a prompt block to prefill, else all of them. */
static void start_round(struct sim *s, struct sglang_round *rd)
{
    admit(s);
    rd->n = 0;
    rd->forwards = 0;
    rd->prefill = false;
    int64_t tokens = 0; /* separate-context: the prefill round's, within max-prefill-tokens */
    struct segment seg;
    for (size_t i = 0; i < sim_num_running(s); i++) {
        struct request *r = sim_request(s, sim_running(s, i));
        sim_emit(s, r, &seg);
        const bool prefill = seg.phase == PHASE_PREFILL;
        if (prefill && !rd->prefill) /* prefill first: the denoising rows taken so far sit the round out */
            rd->n = 0, rd->prefill = true;
        if (prefill != rd->prefill)
            continue;
        if (prefill && sim_sched_p(s)[SEPARATE]) {
            if (rd->n > 0 && tokens + seg.q > sim_sched_p(s)[MAX_PREFILL])
                continue; /* (it waits for a round with room) */
            tokens += seg.q;
        }
        if (rd->n == rd->cap) {
            rd->cap = rd->cap ? 2 * rd->cap : 16;
            rd->id = xrealloc(rd->id, sizeof *rd->id * (size_t)rd->cap);
            rd->block = xrealloc(rd->block, sizeof *rd->block * (size_t)rd->cap);
            rd->kv = xrealloc(rd->kv, sizeof *rd->kv * (size_t)rd->cap);
        }
        rd->id[rd->n] = r->id, rd->block[rd->n] = r->cur_block, rd->kv[rd->n] = seg.kv;
        rd->n++;
    }
}

/* Whether row i of the round is done with the block it began the round in. */
static bool row_done(struct sim *s, const struct sglang_round *rd, int32_t i)
{
    const struct request *r = sim_request(s, rd->id[i]);
    return r->work_done || r->cur_block != rd->block[i];
}

static void sglang_build(struct sim *s)
{
    struct sglang_round *rd = *sim_sched_state(s);
    const double *p = sim_sched_p(s);
    const int32_t block = sim_policy_cfg(s)->block_size;
    const bool begins = rd->n == 0;
    if (begins)
        start_round(s, rd);
    sim_set_round(s, &(struct round_step){p[FDFO] ? ROUND_FDFO : ROUND_SYNC, begins});
    struct segment seg;
    for (int32_t i = 0; i < rd->n; i++) {
        if (row_done(s, rd, i)) { /* (sync: the batch's row, committing nothing) */
            seg = (struct segment){.req_id = rd->id[i], .phase = PHASE_BLOCK, .q = block,
                                   .kv = rd->kv[i], .logit_rows = block, .padding = PAD_REQUEST};
            sim_add_segment(s, &seg);
            continue;
        }
        sim_emit(s, sim_request(s, rd->id[i]), &seg);
        sim_add_segment(s, &seg);
    }
    /* the captured graph's rows past the round's (a separate-context model's prefill rounds run eagerly) */
    if (rd->graph_cap > 0 && rd->n > 0 && !(rd->prefill && p[SEPARATE])) {
        const int32_t graph = sglang_graph_batch(rd->n, rd->graph_cap);
        for (int32_t i = rd->n; i < graph; i++) {
            seg = (struct segment){.req_id = rd->id[rd->n - 1], .phase = PHASE_BLOCK, .q = block,
                                   .logit_rows = block, .padding = PAD_GRAPH};
            sim_add_segment(s, &seg);
        }
    }
}

static void sglang_after_step(struct sim *s)
{
    struct sglang_round *rd = *sim_sched_state(s);
    /* sync: the round lasts while a row is in its block; first done, first out: while a row is and the
     * round has run fewer than steps-per-round forwards */
    const double *p = sim_sched_p(s);
    const bool lasts = !rd->prefill && (p[FDFO] == 0 || ++rd->forwards < p[STEPS_PER_ROUND]);
    for (int32_t i = 0; lasts && i < rd->n; i++)
        if (!row_done(s, rd, i))
            return;
    for (size_t i = 0; i < sim_num_running(s);) { /* (sim_finish takes it out of the running set) */
        struct request *r = sim_request(s, sim_running(s, i));
        if (r->work_done)
            sim_finish(s, r);
        else
            i++;
    }
    rd->n = 0;
}

static void sglang_free(struct sim *s)
{
    struct sglang_round *rd = *sim_sched_state(s);
    if (rd)
        free(rd->id), free(rd->block), free(rd->kv);
    free(rd);
    *sim_sched_state(s) = NULL;
}

const struct sched_ops sched_sglang = {
    .name = "sglang",
    .cap_param = "max-running-requests",
    .help = "SGLang's dLLM scheduler: rounds of at most max-running-requests, prefill first; fdfo 1 a forward a "
            "round (steps-per-round K: up to K), a row leaving its block as it resolves; fdfo 0 (sync) a round runs "
            "its blocks to the end; rounds padded to its captured CUDA-graph batches",
    .params = sglang_params,
    .num_params = (int)TS_ARRAY_LEN(sglang_params),
    .finish_with_batch = true,
    .budgeted = true,
    .init = sglang_init,
    .reject = sglang_reject,
    .build = sglang_build,
    .after_step = sglang_after_step,
    .free = sglang_free,
};
