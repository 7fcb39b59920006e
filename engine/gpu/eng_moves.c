/*
 * eng_moves.c: a request's pages released, and the KV pool shared with and pulled from another engine
 * (a disaggregated fleet's moves; eng_internal.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"
#include "eng_ext.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int32_t eng_pool_free_pages(const struct eng *e) { return e->kv.num_free; }

void eng_release(struct eng *e, int32_t req_id)
{
    eng_kv_release(&e->kv, req_id);
    eng_exts_release(e, req_id);
    if (e->focus_prog && req_id >= 0 && req_id < EVICT_REQS) /* a request id used again starts afresh */
        cudaMemsetAsync(e->focus_prog + req_id, 0xff, sizeof(int32_t), e->stream);
}

void eng_pool_of(const struct eng *e, struct eng_pool *out)
{
    *out = (struct eng_pool){.k = e->k_pool, .v = e->v_pool, .slots = e->slots, .page_tokens = e->kv.page_tokens,
                             .layers = e->m.num_layers, .kv_row = e->m.num_kv_heads * e->m.head_dim};
}

_Static_assert(sizeof(cudaIpcMemHandle_t) == ENG_POOL_HANDLE, "a pool's handle is CUDA's IPC handle");

int eng_pool_export(const struct eng *e, struct eng_pool_handle *out, struct ts_err *err)
{
    struct eng_pool p;
    eng_pool_of(e, &p);
    if (!p.k)
        return ts_fail(err, "a stateless engine has no K/V pool to share");
    cudaIpcMemHandle_t k, v;
    CU(cudaIpcGetMemHandle(&k, p.k));
    CU(cudaIpcGetMemHandle(&v, p.v));
    *out = (struct eng_pool_handle){.slots = p.slots, .page_tokens = p.page_tokens, .layers = p.layers,
                                    .kv_row = p.kv_row};
    memcpy(out->k, &k, sizeof k);
    memcpy(out->v, &v, sizeof v);
    return 0;
}

int eng_pool_import(const struct eng_pool_handle *h, struct eng_pool *out, struct ts_err *err)
{
    *out = (struct eng_pool){.slots = h->slots, .page_tokens = h->page_tokens, .layers = h->layers,
                             .kv_row = h->kv_row};
    cudaIpcMemHandle_t k, v;
    memcpy(&k, h->k, sizeof k);
    memcpy(&v, h->v, sizeof v);
    CU(cudaIpcOpenMemHandle(&out->k, k, cudaIpcMemLazyEnablePeerAccess));
    const cudaError_t rc = cudaIpcOpenMemHandle(&out->v, v, cudaIpcMemLazyEnablePeerAccess);
    if (rc != cudaSuccess) {
        cudaIpcCloseMemHandle(out->k);
        out->k = NULL;
        return ts_fail(err, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(rc));
    }
    return 0;
}

void eng_pool_close(struct eng_pool *p)
{
    if (p->k)
        cudaIpcCloseMemHandle(p->k);
    if (p->v)
        cudaIpcCloseMemHandle(p->v);
    p->k = p->v = NULL;
}

int eng_hold(struct eng *e, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    return eng_kv_hold(&e->kv, req_id, ticket, err);
}

int eng_held(const struct eng *e, int64_t ticket, const int32_t **pages, int32_t *n)
{
    const struct eng_kv_req *r = eng_kv_held(&e->kv, ticket);
    if (!r)
        return -1;
    *pages = r->pages, *n = r->num_pages;
    return 0;
}

int eng_pull(struct eng *e, const struct eng_pool *src, const int32_t *pages, int32_t n, int64_t ticket, float *ms,
             struct ts_err *err)
{
    struct eng_pool dst;
    eng_pool_of(e, &dst);
    if (src->page_tokens != dst.page_tokens || src->layers != dst.layers || src->kv_row != dst.kv_row)
        return ts_fail(err, "K/V move %lld: the sender's pool (%d layers of %d values a token, pages of %d) is not "
                            "this engine's (%d, %d, %d)", (long long)ticket, src->layers, src->kv_row,
                       src->page_tokens, dst.layers, dst.kv_row, dst.page_tokens);
    if (eng_kv_take(&e->kv, ticket, n, err))
        return -1;
    if (2 * n > e->cap_move) {
        if (e->d_move)
            CU(cudaFree(e->d_move));
        e->d_move = NULL;
        e->cap_move = 0;
        CU(cudaMalloc((void **)&e->d_move, sizeof(int32_t) * (size_t)(2 * n)));
        e->cap_move = 2 * n;
    }
    int32_t *h = xmalloc(sizeof *h * (size_t)(2 * (n ? n : 1)));
    memcpy(h, pages, sizeof *h * (size_t)n);
    memcpy(h + n, eng_kv_held(&e->kv, ticket)->pages, sizeof *h * (size_t)n);
    CU(cudaEventRecord(e->ev0, e->stream));
    const cudaError_t up = cudaMemcpyAsync(e->d_move, h, sizeof *h * (size_t)(2 * n), cudaMemcpyHostToDevice, e->stream);
    CU(cudaStreamSynchronize(e->stream)); /* (h is the host's own memory) */
    free(h);
    CU(up);
    KL(k_copy_pages(dst.k, dst.slots, src->k, src->slots, e->d_move, e->d_move + n, n, dst.layers, dst.page_tokens,
                    dst.kv_row, e->stream));
    KL(k_copy_pages(dst.v, dst.slots, src->v, src->slots, e->d_move, e->d_move + n, n, dst.layers, dst.page_tokens,
                    dst.kv_row, e->stream));
    CU(cudaEventRecord(e->ev1, e->stream));
    CU(cudaEventSynchronize(e->ev1));
    if (ms)
        CU(cudaEventElapsedTime(ms, e->ev0, e->ev1));
    return 0;
}

int eng_adopt(struct eng *e, int64_t ticket, int32_t req_id, struct ts_err *err)
{
    if (eng_kv_adopt(&e->kv, ticket, req_id, err))
        return -1;
    if (e->focus_prog && req_id < EVICT_REQS) /* (a request id used again starts afresh) */
        CU(cudaMemsetAsync(e->focus_prog + req_id, 0xff, sizeof(int32_t), e->stream));
    return 0;
}

void eng_drop(struct eng *e, int64_t ticket) { eng_kv_drop(&e->kv, ticket); }
