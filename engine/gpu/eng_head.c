/*
 * eng_head.c: the LM head, the step's outputs and the unmasking decision on the GPU (eng_internal.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_ext.h"
#include "eng_tp.h"

_Static_assert((int)K_UNMASK_TOPK == (int)UNMASK_TOPK && (int)K_UNMASK_THRESHOLD == (int)UNMASK_THRESHOLD &&
                   (int)K_UNMASK_HIERARCHICAL == (int)UNMASK_HIERARCHICAL &&
                   (int)K_UNMASK_CREDIT == (int)UNMASK_CREDIT && K_UNMASK_MAX_ROWS == UNMASK_MAX_ROWS,
               "kernels.h's unmasking rules are eng_unmask.h's");

/* The LM head over the logit rows of x: gathered (fewer than the tokens) or in place, normalised, then
 * chunk by chunk the logits and their argmax, max and confidence (d_tok, d_max, d_conf); a
 * tensor-parallel rank's over its vocabulary share, gathered from every rank and merged. */
int eng_lm_head(struct eng *e, bf16_t *x, struct ts_err *err)
{
    const struct model_cfg *m = &e->m;
    const struct eng_plan *p = &e->plan;
    const struct eng_act *a = &e->act;
    const int h = m->hidden;
    cudaStream_t st = e->stream;
    /* a tensor-parallel rank's own results go to the first part of tp_gather, [3][R] */
    float *mine = e->tp ? e->tp_gather : NULL, *all = e->tp ? e->tp_gather + 3 * p->R : NULL;
    int32_t *tok = e->tp ? (int32_t *)mine : e->d_tok;
    float *maxv = e->tp ? mine + p->R : e->d_max, *conf = e->tp ? mine + 2 * p->R : e->d_conf;
    /* fewer logit rows than tokens: gathered into their own buffer; else x, in place */
    bf16_t *hr = (bf16_t *)eng_arena_at(&e->arena, a->head);
    /* the final norm runs whenever the LM head does, even with the norms left out: the head's
     * logits land where the layers' inputs were planned, so with x unnormalised (in place when
     * not gathered) each replay of the linear layers alone would feed a larger x to the next
     * until they ran on inf and NaN, which draw less power and run faster */
    const bool final_norm = eng_runs(e, OP_NORM) || eng_runs(e, OP_LM_HEAD);
    if (a->head_gathered && final_norm)
        KL(k_gather_rows(hr, x, e->dm.logit_idx, p->R, h, st));
    if (final_norm)
        KL(k_rmsnorm(hr, a->head_gathered ? hr : x, eng_w(e, W_FINAL_NORM, -1), p->R, h, model_rms_eps(&e->m), st));
    eng_mark(e, OP_NORM);
    e->hr_last = hr;
    for (int c = 0, c0 = 0; c0 < p->R; c++, c0 += a->logit_rows) {
        int rows = TS_MIN(a->logit_rows, p->R - c0);
        bf16_t *logits = (bf16_t *)eng_arena_at(&e->arena, a->logits[c]);
        if (eng_runs(e, OP_LM_HEAD) &&
            eng_run_gemm(e, eng_w(e, W_LM, -1), hr + (size_t)c0 * h, logits, rows, h, m->vocab, 0.f, err))
            return -1;
        eng_mark(e, OP_LM_HEAD);
        /* PyTorch's fp32 copy of the logits, held as long as it does */
        if (a->softmax[c] >= 0 && eng_runs(e, OP_SAMPLE))
            KL(k_bf16_to_f32((float *)eng_arena_at(&e->arena, a->softmax[c]), logits,
                             (int64_t)rows * m->vocab, st));
        if (eng_runs(e, OP_SAMPLE))
            KL(k_argmax_conf(logits, rows, m->vocab, tok, maxv, conf, e->d_gap, c0, st));
        const struct eng_chunk ch = {logits, rows, c0, tok, maxv, conf};
        if (eng_exts_head_sampled(e, &ch, err))
            return -1;
        eng_mark(e, OP_SAMPLE);
        if (eng_exts_head_chunk(e, &ch, err))
            return -1;
    }
    if (!e->tp || !eng_runs(e, OP_SAMPLE))
        return 0;
    if (eng_tp_allgather(e->tp, mine, all, 3LL * p->R, st, err))
        return -1;
    eng_mark(e, OP_ALLREDUCE);
    KL(k_tp_argmax_merge(all, e->o.tp_size, p->R, m->vocab, e->d_tok, e->d_max, e->d_conf, st));
    eng_mark(e, OP_SAMPLE);
    return 0;
}

int eng_fetch_outputs(struct eng *e, struct eng_out *out, struct ts_err *err)
{
    int R = e->plan.R;
    e->last_R = R;
    if (R > 0) {
        CU(cudaMemcpyAsync(e->h_tok, e->d_tok, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        CU(cudaMemcpyAsync(e->h_max, e->d_max, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        CU(cudaMemcpyAsync(e->h_conf, e->d_conf, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
        if (e->d_gap)
            CU(cudaMemcpyAsync(e->h_gap, e->d_gap, sizeof(float) * (size_t)R, cudaMemcpyDeviceToHost, e->stream));
    }
    CU(cudaStreamSynchronize(e->stream));
    if (out)
        *out = (struct eng_out){R, e->h_tok, e->h_max, e->h_conf, e->h_gap};
    return 0;
}

int eng_unmask(struct eng *e, const struct unmask_rule *u, const int32_t *groups, int32_t n, const int32_t *masked,
               const float *tau, int32_t *commit, int32_t *count, float *ms, struct ts_err *err)
{
    const int32_t R = e->last_R, T = e->o.max_tokens;
    if (n < 0 || n > T)
        return ts_fail(err, "unmask: %d blocks (at most %d)", n, T);
    for (int32_t g = 0; g < n; g++)
        if (groups[2 * g] < 0 || groups[2 * g + 1] < 1 || groups[2 * g + 1] > UNMASK_MAX_ROWS ||
            groups[2 * g] + groups[2 * g + 1] > R)
            return ts_fail(err, "unmask: block %d's rows %d..%d are not 1 to %d of the last step's %d logit rows", g,
                           groups[2 * g], groups[2 * g] + groups[2 * g + 1] - 1, UNMASK_MAX_ROWS, R);
    if (u->kind < 0 || u->kind >= UNMASK_KINDS)
        return ts_fail(err, "unmask: no rule %d", u->kind);
    memcpy(e->h_um, groups, sizeof(int32_t) * 2 * (size_t)n);
    memcpy(e->h_um + 2 * T, masked, sizeof(int32_t) * (size_t)R);
    CU(cudaMemcpyAsync(e->d_um, e->h_um, sizeof(int32_t) * 2 * (size_t)n, cudaMemcpyHostToDevice, e->stream));
    CU(cudaMemcpyAsync(e->d_um + 2 * T, e->h_um + 2 * T, sizeof(int32_t) * (size_t)R, cudaMemcpyHostToDevice,
                       e->stream));
    CU(cudaMemsetAsync(e->d_um + 3 * T, 0xff, sizeof(int32_t) * (size_t)R, e->stream)); /* rows of no block: -1 */
    if (tau) {
        memcpy(e->h_um + 5 * T, tau, sizeof(float) * (size_t)n);
        CU(cudaMemcpyAsync(e->d_um + 5 * T, e->h_um + 5 * T, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice,
                           e->stream));
    }
    const k_unmask_args a = {.groups = e->d_um, .tok = e->d_tok, .masked = e->d_um + 2 * T, .conf = e->d_conf,
                             .commit = e->d_um + 3 * T, .count = e->d_um + 4 * T, .num_groups = n,
                             .kind = u->kind, .k = u->k, .tau = u->tau, .low = u->low,
                             .group_tau = tau ? (const float *)(e->d_um + 5 * T) : NULL};
    CU(cudaEventRecord(e->ev0, e->stream));
    KL(k_unmask(&a, e->stream));
    CU(cudaEventRecord(e->ev1, e->stream));
    CU(cudaMemcpyAsync(e->h_um + 3 * T, e->d_um + 3 * T, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost,
                       e->stream));
    CU(cudaMemcpyAsync(e->h_um + 4 * T, e->d_um + 4 * T, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost,
                       e->stream));
    CU(cudaStreamSynchronize(e->stream));
    memcpy(commit, e->h_um + 3 * T, sizeof(int32_t) * (size_t)R);
    if (count)
        memcpy(count, e->h_um + 4 * T, sizeof(int32_t) * (size_t)n);
    if (ms)
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
    return 0;
}

int eng_last_hidden(struct eng *e, float *dst, struct ts_err *err)
{
    return eng_read_widened(e->hr_last, (int64_t)e->last_R * e->m.hidden, dst, "hidden", err);
}
