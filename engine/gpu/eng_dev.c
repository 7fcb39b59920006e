/*
 * eng_dev.c: what the device side's files and the extensions share (eng_internal.h): device
 * allocations, rows read back widened, the step's GEMMs with their tuning scratch, an extension's
 * check of the rows it keeps, and an ordering of floats.
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <stdlib.h>
#include <string.h>

int eng_dev_alloc(void **p, int64_t bytes, struct ts_err *err)
{
    CU(cudaMalloc(p, (size_t)(bytes > 0 ? bytes : 16)));
    return 0;
}

/* n bf16 values of device memory src, widened into dst (what: the rows' name for an error). */
int eng_read_widened(const bf16_t *src, int64_t n, float *dst, const char *what, struct ts_err *err)
{
    bf16_t *tmp = xmalloc(sizeof *tmp * (size_t)(n ? n : 1));
    const cudaError_t ce = n ? cudaMemcpy(tmp, src, sizeof *tmp * (size_t)n, cudaMemcpyDeviceToHost) : cudaSuccess;
    for (int64_t i = 0; ce == cudaSuccess && i < n; i++)
        dst[i] = eng_bf2f(tmp[i]);
    free(tmp);
    return ce == cudaSuccess ? 0
                             : ts_fail(err, "engine: reading the %s rows back failed: %s", what, cudaGetErrorString(ce));
}

/* Y[rows, out] (+)= X[rows, in] W^T, W [out, in] row-major, through cuBLASLt (eng_gemm.c). A shape
 * tuned for the first time gets a scratch output outside the plan, freed when the step ends. */
/* The tuning scratch a GEMM of rows x out outputs needs, held while tuning. */
static int tune_scratch_for(struct eng *e, int rows, int in, int out, float beta, bool kn, struct ts_err *err)
{
    size_t need = 2 * (size_t)rows * (size_t)out;
    if (e->tuning && need > e->tune_scratch_bytes && !eng_gemm_is_tuned(e->gemm, rows, out, in, beta, kn)) {
        CU(cudaStreamSynchronize(e->stream));
        if (e->tune_scratch)
            CU(cudaFree(e->tune_scratch));
        e->tune_scratch = NULL;
        e->tune_scratch_bytes = 0;
        if (cudaMalloc(&e->tune_scratch, need) == cudaSuccess)
            e->tune_scratch_bytes = need;
        else /* no room: the heuristic's first algorithm */
            cudaGetLastError();
    }
    return 0;
}

int eng_run_gemm(struct eng *e, const bf16_t *Wt, const bf16_t *X, bf16_t *Y, int rows, int in,
                int out, float beta, struct ts_err *err)
{
    if (tune_scratch_for(e, rows, in, out, beta, false, err))
        return -1;
    return eng_gemm_run(e->gemm, Wt, X, Y, rows, out, in, beta, e->stream, e->tuning, e->tune_scratch,
                        e->tune_scratch_bytes, err);
}

/* Y [rows, out] = X [rows, in] W for W [in, out] (the embedding matrix). */
int eng_run_gemm_kn(struct eng *e, const bf16_t *W, const bf16_t *X, bf16_t *Y, int rows, int in, int out,
                   struct ts_err *err)
{
    if (tune_scratch_for(e, rows, in, out, 0.f, true, err))
        return -1;
    return eng_gemm_run_kn(e->gemm, W, X, Y, rows, out, in, e->stream, e->tuning, e->tune_scratch,
                           e->tune_scratch_bytes, err);
}

int eng_drop_tune_scratch(struct eng *e, struct ts_err *err)
{
    if (e->tune_scratch) {
        CU(cudaStreamSynchronize(e->stream));
        CU(cudaFree(e->tune_scratch));
    }
    e->tune_scratch = NULL;
    e->tune_scratch_bytes = 0;
    return 0;
}

int eng_ext_rows_check(const struct eng *e, const char *what, const char *kind, int32_t have, int32_t R,
                       struct ts_err *err)
{
    if (have < 1 || e->tp)
        return ts_fail(err, "%s: the engine was made without %s rows (eng_opts.room)%s", what, kind,
                       e->tp ? " or is split over GPUs" : "");
    if (R < 0 || R > e->o.max_tokens)
        return ts_fail(err, "%s: %d logit rows (at most %d)", what, R, e->o.max_tokens);
    return 0;
}

int eng_ext_seg_alone(const struct eng *e, const char *what, int32_t entry, int32_t seg, int32_t N,
                      struct ts_err *err)
{
    if (seg < 0 || seg >= e->plan.S || e->plan.q_len[seg] != N || e->plan.kv_cached[seg] != 0)
        return ts_fail(err, "%s: entry %d names segment %d, which does not run its request's %d positions alone", what,
                       entry, seg, N);
    return 0;
}

int eng_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
