/*
 * check_engine.c: the GPU against the CPU reference (build/tests/gpu/check_engine).
 *
 * Kernel by kernel on fresh random inputs (outputs poisoned with NaN first): RMSNorm, bias+RoPE+K/V
 * store, SwiGLU, varlen paged attention (bidirectional and block-causal, GQA, head dims 64 and 128,
 * segments from 1 to 300 rows over up to 480 cached keys), the argmax/confidence reduction, the row
 * gather. Then whole steps of tiny models (mixed Refresh/Reuse/prefill segments, QKV bias, GQA)
 * against eng_ref_step, chunked against unchunked logits, and a Reuse step against the Refresh it
 * reuses; the activation planners' layouts in the virtual-memory arena against first-fit (bit for
 * bit) with the device memory they take, and the stateless engine against the pooled one. Each
 * line reports the largest normwise relative error ||gpu - ref|| / ||ref|| against its
 * bound; bf16 storage between fp32 accumulations puts honest results between 1e-3 and 1e-2.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "eng.h"
#include "check_engine.h"
#include "eng_gen.h"
#include "ext_credit.h"
#include "ext_smooth.h"
#include "ext_sparsed.h"
#include "eng_plan.h"
#include "eng_ref.h"
#include "eng_safetensors.h"
#include "eng_weights.h"
#include "kernels.h"
#include "params.h"
#include "policy.h"

struct checker {
    FILE *out;
    int failed, passed;
    uint64_t seed;
    int part, parts, group; /* the steps half's part `part` of `parts` (0: all), its groups dealt in turn */
};

/* Whether the next group of step checks is this run's (check_engine_run's part of parts). */
static bool take(struct checker *c) { return c->parts <= 1 || c->group++ % c->parts == c->part - 1; }

static void report(struct checker *c, const char *what, double err, double bound)
{
    bool ok = isfinite(err) && err <= bound;
    fprintf(c->out, "  %-58s %10.3e  (bound %.0e)  %s\n", what, err, bound, ok ? "ok" : "FAIL");
    fflush(c->out); /* each line out as it is known: a run a sanitizer or a time limit cuts short keeps it */
    if (ok)
        c->passed++;
    else
        c->failed++;
}

static void fail_msg(struct checker *c, const char *what, const char *msg)
{
    fprintf(c->out, "  %-58s FAIL: %s\n", what, msg);
    fflush(c->out);
    c->failed++;
}

double check_rel_err(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]))
            return INFINITY;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* random bf16 values, as floats (exactly representable) and as bf16 */
static void rand_bf16(struct checker *c, float *f, bf16_t *b, int64_t n, float scale)
{
    uint64_t s = ts_mix64(++c->seed);
    for (int64_t i = 0; i < n; i++) {
        b[i] = eng_f2bf(scale * eng_hash_uniform(s, (uint64_t)i));
        f[i] = eng_bf2f(b[i]);
    }
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(c->out, "  CUDA error at %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(e_));                                                       \
            c->failed++;                                                                           \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define KK(call) CK((cudaError_t)(call))

static void *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 16) != cudaSuccess)
        return NULL;
    if (bytes && cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        return NULL;
    }
    return d;
}

/* dev_copy of each of n host buffers src[i] (bytes[i]) into *dev[i]; false when any failed (the
 * others are set all the same, for cudaFree). */
static bool dev_copies(void **const dev[], const void *const src[], const size_t bytes[], size_t n)
{
    bool all = true;
    for (size_t i = 0; i < n; i++)
        all &= (*dev[i] = dev_copy(src[i], bytes[i])) != NULL;
    return all;
}

static void to_float(float *dst, const bf16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = eng_bf2f(src[i]);
}

/* Whether this is a compute capability 9.0 device, where every sm_90a kernel must run (unless
 * --kernels portable asks for the kernels of earlier GPUs). */
static bool hopper(void)
{
    int dev = 0, major = 0, minor = 0;
    return !k_portable() && cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
           minor == 0;
}

static void check_rmsnorm_swiglu_gather(struct checker *c, int h)
{
    const int rows = 37, F = h;
    int64_t n = (int64_t)rows * h;
    float *xf = xmalloc(4 * n), *wf = xmalloc(4 * h), *rf = xmalloc(4 * n * 2), *gf = xmalloc(8 * n);
    bf16_t *xb = xmalloc(2 * n), *wb = xmalloc(2 * h), *ob = xmalloc(4 * n), *gb = xmalloc(4 * n);
    float *of = xmalloc(8 * n);
    bf16_t *dx = NULL, *dw = NULL, *dout = NULL, *dgu = NULL;
    int32_t *didx = NULL;
    char what[96];
    rand_bf16(c, xf, xb, n, 3.0f);
    rand_bf16(c, wf, wb, h, 1.0f);
    rand_bf16(c, gf, gb, 2 * n, 4.0f);
    dx = dev_copy(xb, 2 * n);
    dw = dev_copy(wb, 2 * h);
    dgu = dev_copy(gb, 4 * n);
    CK(cudaMalloc((void **)&dout, 4 * n));
    if (!dx || !dw || !dgu)
        CK(cudaErrorMemoryAllocation);
    /* RMSNorm */
    KK(k_fill_bits(dout, 2 * n, 0x7fc0, NULL));
    KK(k_rmsnorm(dout, dx, dw, rows, h, 1e-5f, NULL));
    CK(cudaMemcpy(ob, dout, 2 * n, cudaMemcpyDeviceToHost));
    to_float(of, ob, n);
    ref_rmsnorm(rf, xf, wf, rows, h, 1e-5f);
    snprintf(what, sizeof what, "rmsnorm %d x %d", rows, h);
    report(c, what, check_rel_err(of, rf, n), 1e-2);
    /* SwiGLU over a fused gate|up of width 2F */
    KK(k_fill_bits(dout, 2 * n, 0x7fc0, NULL));
    KK(k_swiglu(dout, dgu, rows, F, NULL));
    CK(cudaMemcpy(ob, dout, 2 * n, cudaMemcpyDeviceToHost));
    to_float(of, ob, n);
    ref_swiglu(rf, gf, rows, F);
    snprintf(what, sizeof what, "swiglu %d x %d", rows, F);
    report(c, what, check_rel_err(of, rf, n), 1e-2);
    /* gather rows (exact) */
    int32_t idx[5] = {36, 0, 17, 17, 5};
    didx = dev_copy(idx, sizeof idx);
    KK(k_fill_bits(dout, 5 * h, 0x7fc0, NULL));
    KK(k_gather_rows(dout, dx, didx, 5, h, NULL));
    CK(cudaMemcpy(ob, dout, 2 * 5 * h, cudaMemcpyDeviceToHost));
    double bad = 0;
    for (int i = 0; i < 5; i++)
        bad += memcmp(ob + (size_t)i * h, xb + (size_t)idx[i] * h, 2 * (size_t)h) != 0;
    snprintf(what, sizeof what, "gather 5 rows of %d (rows that differ)", h);
    report(c, what, bad, 0);
done:
    cudaFree(dx), cudaFree(dw), cudaFree(dout), cudaFree(dgu), cudaFree(didx);
    free(xf), free(wf), free(rf), free(gf), free(xb), free(wb), free(ob), free(gb), free(of);
}

/* k_qkv_rope_store on 50 tokens against ref_qkv_rope: with a bias, with per-head QK norms (weights
 * drawn around 1) and over the first rot dimensions of each head (0: all). */
static void check_rope_store(struct checker *c, int H, int Hkv, int d, bool bias, bool norms, int rot)
{
    const int T = 50, width = (H + 2 * Hkv) * d, slots = 64;
    float nf[2 * 256];
    bf16_t nb[2 * 256];
    bf16_t *dn = NULL;
    int64_t n = (int64_t)T * width, pn = (int64_t)slots * Hkv * d;
    float *qf = xmalloc(4 * n), *bf = xmalloc(4 * width), *got = xmalloc(4 * n), *kref = xmalloc(4 * pn);
    float *kgot = xmalloc(4 * pn), *vref = xmalloc(4 * pn), *vgot = xmalloc(4 * pn);
    bf16_t *qb = xmalloc(2 * n), *bb = xmalloc(2 * width), *hb = xmalloc(2 * (n > pn ? n : pn));
    int32_t pos[50], slot[50];
    bf16_t *dq = NULL, *db = NULL, *dk = NULL, *dv = NULL;
    int32_t *dpos = NULL, *dslot = NULL;
    rand_bf16(c, qf, qb, n, 2.0f);
    rand_bf16(c, bf, bb, width, 0.5f);
    rand_bf16(c, nf, nb, 2 * d, 0.5f);
    for (int i = 0; i < 2 * d; i++) /* norm weights in [0.5, 1.5] */
        nb[i] = eng_f2bf(nf[i] + 1.0f), nf[i] = eng_bf2f(nb[i]);
    for (int t = 0; t < T; t++) {
        pos[t] = t * 37 % 3000;   /* positions far apart exercise the angles */
        slot[t] = (t * 13) % slots; /* distinct slots, permuted */
    }
    dq = dev_copy(qb, 2 * n);
    db = dev_copy(bb, 2 * width);
    dpos = dev_copy(pos, sizeof pos);
    dslot = dev_copy(slot, sizeof slot);
    CK(cudaMalloc((void **)&dk, 2 * pn));
    CK(cudaMalloc((void **)&dv, 2 * pn));
    KK(k_fill_bits(dk, pn, 0, NULL));
    KK(k_fill_bits(dv, pn, 0, NULL));
    dn = dev_copy(nb, sizeof nb);
    const struct k_qk_norm norm = {norms ? dn : NULL, norms ? dn + d : NULL, rot, 1e-5f};
    KK(k_qkv_rope_store(dq, bias ? db : NULL, dpos, dslot, dk, dv, 0, T, H, Hkv, d, 10000.0f, &norm, NULL));
    CK(cudaMemcpy(hb, dq, 2 * n, cudaMemcpyDeviceToHost));
    to_float(got, hb, n);
    CK(cudaMemcpy(hb, dk, 2 * pn, cudaMemcpyDeviceToHost));
    to_float(kgot, hb, pn);
    CK(cudaMemcpy(hb, dv, 2 * pn, cudaMemcpyDeviceToHost));
    to_float(vgot, hb, pn);
    ref_qkv_rope(qf, bias ? bf : NULL, norms ? nf : NULL, norms ? nf + d : NULL, rot, 1e-5f, pos, T, H, Hkv, d,
                 10000.0f);
    memset(kref, 0, 4 * pn);
    memset(vref, 0, 4 * pn);
    for (int t = 0; t < T; t++) {
        memcpy(kref + (size_t)slot[t] * Hkv * d, qf + (size_t)t * width + H * d, 4 * (size_t)Hkv * d);
        memcpy(vref + (size_t)slot[t] * Hkv * d, qf + (size_t)t * width + (H + Hkv) * d, 4 * (size_t)Hkv * d);
    }
    /* compare only the q part in place */
    double qe = 0, qn = 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < H * d; j++) {
            double a = got[(size_t)t * width + j], b = qf[(size_t)t * width + j];
            qe += (a - b) * (a - b);
            qn += b * b;
        }
    char what[112];
    snprintf(what, sizeof what, "rope q (H %d, d %d%s%s, rotary over %d)", H, d, bias ? ", bias" : "",
             norms ? ", QK norms" : "", rot ? rot : d);
    report(c, what, sqrt(qe / qn), 1e-2);
    snprintf(what, sizeof what, "rope + store k into permuted slots (Hkv %d)", Hkv);
    report(c, what, check_rel_err(kgot, kref, pn), 1e-2);
    snprintf(what, sizeof what, "store v into permuted slots");
    report(c, what, check_rel_err(vgot, vref, pn), 1e-2);
done:
    cudaFree(dq), cudaFree(db), cudaFree(dk), cudaFree(dv), cudaFree(dpos), cudaFree(dslot), cudaFree(dn);
    free(qf), free(bf), free(got), free(kref), free(kgot), free(vref), free(vgot), free(qb), free(bb), free(hb);
}

/* The page ids of check_kv_select's pool: a permutation, so that no two lists are contiguous. */
#define SEL_PAGES 256
#define SEL_PT 16

/* k_kv_select's inputs: two selecting segments (cand, keep, score rows) over permuted pages. */
struct sel_case {
    int H, Hkv, d, kernel, per_head;
    int cand[2], keep[2], rows[2];
};

/* Whether kept keys idx[0..keep) are ascending and below cand, and how many of them the reference's
 * ref[0..keep) lacks. */
static int sel_compare(const int32_t *idx, const int32_t *ref, int keep, int cand, int *missing)
{
    int bad = 0;
    for (int j = 0; j < keep; j++) {
        bad += idx[j] < 0 || idx[j] >= cand || (j > 0 && idx[j] <= idx[j - 1]);
        bool found = false;
        for (int i = 0; i < keep && !found; i++)
            found = ref[i] == idx[j];
        *missing += !found;
    }
    return bad;
}

/* The kept K/V against their sources, bit for bit: mismatching head rows. */
static int sel_copies(const bf16_t *before, const bf16_t *after, const int32_t *pages, int src_off, int dst_off,
                      const int32_t *idx, int keep, int Hkv, int d, int kh)
{
    int bad = 0;
    for (int j = 0; j < keep; j++) {
        size_t src = ((size_t)pages[src_off + idx[j] / SEL_PT] * SEL_PT + idx[j] % SEL_PT) * Hkv * d + (size_t)kh * d;
        size_t dst = ((size_t)pages[dst_off + j / SEL_PT] * SEL_PT + j % SEL_PT) * Hkv * d + (size_t)kh * d;
        bad += memcmp(before + src, after + dst, 2 * (size_t)d) != 0;
    }
    return bad;
}

/* The selection a made, run again over two layers at once (each layer's means by
 * k_kv_select_means, then one k_kv_select of layers 2, each layer's pool a copy of the one a
 * started from: kb, vb, pn elements): how many of its kept keys (nidx a layer) and of its pools'
 * elements differ from a's (gidx; kg, vg), or -1 where a CUDA call failed. */
static int64_t sel_layers_differ(struct checker *c, const struct k_select_args *a, const bf16_t *kb, const bf16_t *vb,
                                 int64_t pn, const int32_t *gidx, const bf16_t *kg, const bf16_t *vg, int64_t nidx)
{
    const int64_t qd = (int64_t)a->H * a->d;
    int64_t diff = -1;
    bf16_t *dk = NULL, *dv = NULL, *hk = xmalloc(4 * (size_t)pn), *hv = xmalloc(4 * (size_t)pn);
    float *means = NULL;
    int32_t *idx = xmalloc(8 * (size_t)nidx);
    struct k_select_args b = *a;
    b.ws = NULL;
    CK(cudaMalloc((void **)&dk, 4 * (size_t)pn));
    CK(cudaMalloc((void **)&dv, 4 * (size_t)pn));
    CK(cudaMalloc((void **)&means, 8 * (size_t)a->num_sel * qd));
    for (int l = 0; l < 2; l++) {
        CK(cudaMemcpy(dk + l * pn, kb, 2 * (size_t)pn, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dv + l * pn, vb, 2 * (size_t)pn, cudaMemcpyHostToDevice));
        KK(k_kv_select_means(a, means + l * a->num_sel * qd, NULL));
    }
    b.k_pool = dk, b.v_pool = dv, b.layers = 2, b.layer_stride = pn, b.means = means, b.q = NULL;
    b.ws_bytes = k_kv_select_ws_bytes(2 * a->num_sel, a->max_cand, a->max_keep, a->Hkv);
    CK(cudaMalloc(&b.ws, (size_t)b.ws_bytes));
    KK(k_kv_select(&b, NULL));
    CK(cudaMemcpy(idx, k_kv_select_idx(&b), 8 * (size_t)nidx, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hk, dk, 4 * (size_t)pn, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hv, dv, 4 * (size_t)pn, cudaMemcpyDeviceToHost));
    diff = 0;
    for (int l = 0; l < 2; l++) {
        for (int64_t i = 0; i < nidx; i++)
            diff += idx[l * nidx + i] != gidx[i];
        for (int64_t i = 0; i < pn; i++)
            diff += hk[l * pn + i] != kg[i] || hv[l * pn + i] != vg[i];
    }
done:
    cudaFree(dk), cudaFree(dv), cudaFree(means), cudaFree(b.ws);
    free(hk), free(hv), free(idx);
    return diff;
}

static void check_kv_select(struct checker *c, const struct sel_case *x)
{
    const int H = x->H, Hkv = x->Hkv, d = x->d, qd = H * d, kvrow = Hkv * d, sets = x->per_head ? Hkv : 1;
    const int T = x->cand[0] + x->rows[0] + x->cand[1] + x->rows[1], max_keep = TS_MAX(x->keep[0], x->keep[1]);
    const int64_t pn = (int64_t)SEL_PAGES * SEL_PT * kvrow, qn = (int64_t)T * qd;
    int32_t pages[SEL_PAGES], sel[12], nref = 0;
    for (int i = 0; i < SEL_PAGES; i++)
        pages[i] = i * 37 % SEL_PAGES;
    for (int s = 0, row = 0; s < 2; s++) { /* candidates' pages, then the kept ones' */
        int32_t f[6] = {row + x->cand[s], x->rows[s], x->cand[s], x->keep[s], nref, 0};
        nref += (x->cand[s] + SEL_PT - 1) / SEL_PT;
        f[5] = nref;
        nref += (x->keep[s] + SEL_PT - 1) / SEL_PT;
        memcpy(sel + 6 * s, f, sizeof f);
        row += x->cand[s] + x->rows[s];
    }
    TS_ASSERT(nref <= SEL_PAGES);
    float *qf = xmalloc(4 * qn), *kf = xmalloc(4 * pn), *vf = xmalloc(4 * pn);
    bf16_t *qb = xmalloc(2 * qn), *kb = xmalloc(2 * pn), *vb = xmalloc(2 * pn), *kg = xmalloc(2 * pn), *vg = xmalloc(2 * pn);
    float *ks = xmalloc(8 * (size_t)TS_MAX(x->cand[0], x->cand[1]) * kvrow), *vs = NULL;
    int32_t *gidx = xmalloc(4 * (size_t)2 * sets * max_keep), *ridx = xmalloc(4 * (size_t)sets * max_keep);
    rand_bf16(c, qf, qb, qn, 1.0f);
    rand_bf16(c, kf, kb, pn, 1.0f);
    rand_bf16(c, vf, vb, pn, 1.0f);
    bf16_t *dq = dev_copy(qb, 2 * qn), *dk = dev_copy(kb, 2 * pn), *dv = dev_copy(vb, 2 * pn);
    int32_t *dpages = dev_copy(pages, sizeof pages), *dsel = dev_copy(sel, sizeof sel);
    struct k_select_args a = {.q = dq, .q_stride = qd, .k_pool = dk, .v_pool = dv, .pages = dpages, .sel = dsel,
                              .page_shift = 4, .num_sel = 2, .max_cand = TS_MAX(x->cand[0], x->cand[1]),
                              .max_keep = max_keep, .H = H, .Hkv = Hkv, .d = d, .kernel = x->kernel,
                              .per_head = x->per_head};
    a.ws_bytes = k_kv_select_ws_bytes(2, a.max_cand, max_keep, Hkv);
    CK(cudaMalloc(&a.ws, (size_t)a.ws_bytes));
    KK(k_kv_select(&a, NULL));
    CK(cudaMemcpy(kg, dk, 2 * pn, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(vg, dv, 2 * pn, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gidx, k_kv_select_idx(&a), 4 * (size_t)2 * sets * max_keep, cudaMemcpyDeviceToHost));
    int bad = 0, missing = 0, wrong = 0, kept = 0;
    for (int s = 0; s < 2; s++) {
        const int cand = x->cand[s], keep = x->keep[s];
        vs = ks + (size_t)cand * kvrow;
        for (int j = 0; j < cand; j++) { /* the candidates in key order, for the reference */
            size_t slot = (size_t)pages[sel[6 * s + 4] + j / SEL_PT] * SEL_PT + j % SEL_PT;
            memcpy(ks + (size_t)j * kvrow, kf + slot * kvrow, 4 * (size_t)kvrow);
            memcpy(vs + (size_t)j * kvrow, vf + slot * kvrow, 4 * (size_t)kvrow);
        }
        ref_kv_select(qf + (size_t)sel[6 * s] * qd, qd, x->rows[s], ks, vs, cand, keep, H, Hkv, d, x->kernel,
                      x->per_head, ridx);
        for (int set = 0; set < sets; set++) {
            const int32_t *g = gidx + ((size_t)s * sets + set) * max_keep;
            bad += sel_compare(g, ridx + (size_t)set * keep, keep, cand, &missing);
            kept += keep;
            for (int kh = set; kh < (x->per_head ? set + 1 : Hkv); kh++) {
                wrong += sel_copies(kb, kg, pages, sel[6 * s + 4], sel[6 * s + 5], g, keep, Hkv, d, kh);
                wrong += sel_copies(vb, vg, pages, sel[6 * s + 4], sel[6 * s + 5], g, keep, Hkv, d, kh);
            }
        }
    }
    char what[128];
    snprintf(what, sizeof what, "kv select %s (H %d, Hkv %d, d %d, pool %d): kept keys unordered", x->per_head ? "head" : "uniform",
             H, Hkv, d, x->kernel);
    report(c, what, bad, 0);
    snprintf(what, sizeof what, "  kept keys the reference does not keep (fraction)");
    report(c, what, kept ? (double)missing / kept : 0, 0.02);
    snprintf(what, sizeof what, "  K/V head rows not copied exactly");
    report(c, what, wrong, 0);
    snprintf(what, sizeof what, "  two layers at once: kept keys or pool elements not the same");
    const int64_t differ = sel_layers_differ(c, &a, kb, vb, pn, gidx, kg, vg, (int64_t)2 * sets * max_keep);
    report(c, what, differ < 0 ? INFINITY : (double)differ, 0);
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dpages), cudaFree(dsel), cudaFree(a.ws);
    free(qf), free(kf), free(vf), free(qb), free(kb), free(vb), free(kg), free(vg), free(ks), free(gidx), free(ridx);
}

/* k_fc_store and k_fc_carry against the CPU: every fourth of 340 hidden rows computed (in an order
 * of their own) stores and adds its output, the others add both their cached outputs; slot[] the
 * rows' permuted pool slots (of 512). */
static void check_fc_store_carry(struct checker *c, const int32_t *slot)
{
    enum { SLOTS = 512, H = 64, X = 340, T = 80 };
    int32_t xcomp[X] = {0}, crow[T] = {0};
    void *dslot = dev_copy(slot, sizeof(int32_t) * X), *dxc = dev_copy(xcomp, sizeof xcomp), *dcrow = dev_copy(crow, sizeof crow);
    float *xf = xmalloc(sizeof *xf * (size_t)X * H), *outf = xmalloc(sizeof *outf * (size_t)T * H);
    float *af = xmalloc(sizeof *af * (size_t)SLOTS * H), *ff = xmalloc(sizeof *ff * (size_t)SLOTS * H);
    bf16_t *xh = xmalloc(2 * (size_t)X * H), *outh = xmalloc(2 * (size_t)T * H), *ah = xmalloc(2 * (size_t)SLOTS * H);
    bf16_t *fh = xmalloc(2 * (size_t)SLOTS * H);
    void *dx = NULL, *dout = NULL, *da = NULL, *dff = NULL;
    rand_bf16(c, xf, xh, (int64_t)X * H, 1.0f);
    rand_bf16(c, outf, outh, (int64_t)T * H, 1.0f);
    rand_bf16(c, af, ah, (int64_t)SLOTS * H, 1.0f);
    rand_bf16(c, ff, fh, (int64_t)SLOTS * H, 1.0f);
    for (int i = 0; i < X; i++)
        xcomp[i] = -1;
    for (int j = 0; j < T; j++) { /* every fourth row computed, in an order of their own */
        crow[j] = 4 * ((j * 7) % T);
        xcomp[crow[j]] = j;
    }
    bool ok = dslot && dxc && dcrow && (dx = dev_copy(xh, 2 * (size_t)X * H)) &&
              (dout = dev_copy(outh, 2 * (size_t)T * H)) && (da = dev_copy(ah, 2 * (size_t)SLOTS * H)) && (dff = dev_copy(fh, 2 * (size_t)SLOTS * H)) &&
              cudaMemcpy(dxc, xcomp, sizeof xcomp, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(dcrow, crow, sizeof crow, cudaMemcpyHostToDevice) == cudaSuccess &&
              k_fc_store(dx, dout, dcrow, dslot, da, T, H, NULL) == 0 &&
              k_fc_carry(dx, dxc, dslot, da, dff, X, H, NULL) == 0 &&
              cudaMemcpy(xh, dx, 2 * (size_t)X * H, cudaMemcpyDeviceToHost) == cudaSuccess &&
              cudaMemcpy(ah, da, 2 * (size_t)SLOTS * H, cudaMemcpyDeviceToHost) == cudaSuccess;
    double xerr = 0, cerr = 0;
    for (int i = 0; ok && i < X; i++)
        for (int e = 0; e < H; e++) {
            const size_t at = (size_t)slot[i] * H + e;
            const float add = xcomp[i] >= 0 ? outf[(size_t)xcomp[i] * H + e] : af[at] + ff[at];
            const float want = xf[(size_t)i * H + e] + add, cached = xcomp[i] >= 0 ? outf[(size_t)xcomp[i] * H + e] : af[at];
            xerr = fmax(xerr, fabs(eng_bf2f(xh[(size_t)i * H + e]) - want) / (1 + fabs(want)));
            cerr = fmax(cerr, fabs(eng_bf2f(ah[at]) - cached));
        }
    if (!ok) {
        fail_msg(c, "fc store and carry", "a CUDA call failed");
    } else {
        report(c, "fc store and carry: x + output, or + both cached (relative)", xerr, 1e-2);
        report(c, "  outputs cached, the others kept (largest difference)", cerr, 0);
    }
    cudaFree(dx), cudaFree(dout), cudaFree(da), cudaFree(dff);
    free(xf), free(outf), free(af), free(ff), free(xh), free(outh), free(ah), free(fh);
    cudaFree(dslot), cudaFree(dxc), cudaFree(dcrow);
}

/* k_fc_pick on two probing segments over permuted pool slots (with and without a V bias): the
 * picked rows against ref_fc_pick on the same bf16 values (random vectors: no near ties), the
 * computed-row arrays, the V stored; k_fc_store and k_fc_carry against the CPU. */
static void check_fc_kernels(struct checker *c, int kvd, bool bias)
{
    enum { NP = 2, SLOTS = 512, H = 64 };
    const int rows[NP] = {37, 200}, picked[NP] = {9, 50}, first[NP] = {3, 140}, comp[NP] = {5, 20}, pos0[NP] = {3, 60};
    const int X = 340, T = 80, P = rows[0] + rows[1];
    int32_t probe[5 * NP], slot[X], pidx[P], crow[T], cpos[T], cslot[T], xcomp[X], trace[NP * 200];
    float *vf = xmalloc(sizeof *vf * (size_t)P * kvd), *of = xmalloc(sizeof *of * (size_t)SLOTS * kvd);
    float *bf = xmalloc(sizeof *bf * (size_t)kvd), *vb = xmalloc(sizeof *vb * (size_t)P * kvd);
    bf16_t *vh = xmalloc(2 * (size_t)P * kvd), *oh = xmalloc(2 * (size_t)SLOTS * kvd), *bh = xmalloc(2 * (size_t)kvd);
    bf16_t *pool_back = xmalloc(2 * (size_t)SLOTS * kvd);
    void *dv = NULL, *dpool = NULL, *dbias = NULL, *dslot = NULL, *dprobe = NULL, *dcrow = NULL, *dpos = NULL;
    void *dcs = NULL, *dxc = NULL, *dtr = NULL, *dpidx = NULL, *dsim = NULL;
    rand_bf16(c, vf, vh, (int64_t)P * kvd, 1.0f);
    rand_bf16(c, of, oh, (int64_t)SLOTS * kvd, 1.0f);
    rand_bf16(c, bf, bh, kvd, 0.5f);
    for (int i = 0; i < X; i++) /* a permutation of some slots */
        slot[i] = (int)((i * 97 + 13) % SLOTS);
    for (int n = 0, k = 0; n < NP; n++) {
        const int32_t f[5] = {first[n], rows[n], picked[n], comp[n], pos0[n]};
        memcpy(probe + 5 * n, f, sizeof f);
        for (int i = 0; i < rows[n]; i++)
            pidx[k++] = first[n] + i;
    }
    for (int i = 0; i < X; i++)
        xcomp[i] = 1000 + i; /* every probe row's entry must be rewritten */
    memset(crow, 0xff, sizeof crow);
    void **const dev[] = {&dv, &dpool, &dbias, &dslot, &dprobe, &dcrow, &dpos, &dcs, &dxc, &dtr, &dpidx, &dsim};
    const void *const src[] = {vh, oh, bh, slot, probe, crow, crow, crow, xcomp, trace, pidx, vf};
    const size_t bytes[] = {2 * (size_t)P * kvd, 2 * (size_t)SLOTS * kvd, 2 * (size_t)kvd, sizeof slot, sizeof probe,
                            sizeof crow, sizeof crow, sizeof crow, sizeof xcomp, sizeof trace, sizeof pidx,
                            sizeof(float) * P};
    if (!dev_copies(dev, src, bytes, TS_ARRAY_LEN(dev))) {
        fail_msg(c, "fc pick", "device allocation failed");
        goto done;
    }
    const struct k_fc_pick_args a = {.vnew = dv, .v_bias = bias ? dbias : NULL, .v_pool = dpool, .sim = dsim,
                                     .x_slot = dslot, .probe = dprobe, .probe_idx = dpidx, .c_row = dcrow,
                                     .tok_pos = dpos, .tok_slot = dcs, .x_comp = dxc, .trace = dtr, .num_probe = NP,
                                     .probe_rows = P, .max_probe = 200, .kv_dim = kvd};
    KK(k_fc_pick(&a, NULL));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(crow, dcrow, sizeof crow, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cpos, dpos, sizeof cpos, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cslot, dcs, sizeof cslot, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(xcomp, dxc, sizeof xcomp, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(trace, dtr, sizeof trace, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(pool_back, dpool, 2 * (size_t)SLOTS * kvd, cudaMemcpyDeviceToHost));
    int wrong = 0, arrays = 0;
    double verr = 0;
    for (int n = 0, k0 = 0; n < NP; n++) {
        float *vn = xmalloc(sizeof *vn * (size_t)rows[n] * kvd), *vo = xmalloc(sizeof *vo * (size_t)rows[n] * kvd);
        int32_t *ref = xmalloc(sizeof *ref * (size_t)picked[n]);
        for (int i = 0; i < rows[n]; i++)
            for (int e = 0; e < kvd; e++) { /* the stored V: the sum rounded to bf16, as the kernel compares */
                vn[(size_t)i * kvd + e] = eng_bf2f(eng_f2bf(vf[(size_t)(k0 + i) * kvd + e] + (bias ? bf[e] : 0)));
                vo[(size_t)i * kvd + e] = of[(size_t)slot[first[n] + i] * kvd + e];
            }
        ref_fc_pick(vn, vo, rows[n], kvd, picked[n], ref);
        for (int k = 0; k < picked[n]; k++) {
            const int i = ref[k], x = first[n] + i, j = comp[n] + k;
            wrong += trace[n * 200 + k] != i;
            arrays += crow[j] != x || cpos[j] != pos0[n] + i || cslot[j] != slot[x] || xcomp[x] != j;
        }
        for (int i = 0; i < rows[n]; i++) {
            bool is = false;
            for (int k = 0; k < picked[n]; k++)
                is |= ref[k] == i;
            arrays += !is && xcomp[first[n] + i] != -1;
            for (int e = 0; e < kvd; e++)
                verr = fmax(verr, fabs(eng_bf2f(pool_back[(size_t)slot[first[n] + i] * kvd + e]) - vn[(size_t)i * kvd + e]));
        }
        k0 += rows[n];
        free(vn), free(vo), free(ref);
    }
    char what[96];
    snprintf(what, sizeof what, "fc pick (kv_dim %d%s): picked rows that differ", kvd, bias ? ", bias" : "");
    report(c, what, wrong, 0);
    report(c, "  computed-row arrays (c_row, tok_pos, tok_slot, x_comp) wrong", arrays, 0);
    report(c, "  new V stored (largest difference)", verr, 0);
    check_fc_store_carry(c, slot);
done:
    cudaFree(dv), cudaFree(dpool), cudaFree(dbias), cudaFree(dslot), cudaFree(dprobe), cudaFree(dcrow);
    cudaFree(dpos), cudaFree(dcs), cudaFree(dxc), cudaFree(dtr), cudaFree(dpidx), cudaFree(dsim);
    free(vf), free(of), free(bf), free(vb), free(vh), free(oh), free(bh), free(pool_back);
}

/* FOCUS's kernels on two evicting segments (m candidates each; the second a first step of its block,
 * its candidates' positions two apart, as a generation scatters them among decided ones; the first
 * with `done` candidates run before): both layers' importance against the reference's,
 * the picks against the reference's from the GPU's deltas (the same ranking), and every array the
 * pick writes. */
static void check_focus_kernels(struct checker *c, int H, int Hkv, int d, int m0, int m1)
{
    enum { NP = 2, SLOTS = 512, MAXC = K_FOCUS_MAX_CAND };
    const int m[NP] = {m0, m1}, K[NP] = {TS_MAX(1, m0 / 5), TS_MAX(1, m1 / 3)}, first[NP] = {3, 3 + m0 + 5};
    const int comp[NP] = {2, 2 + K[0] + 1}, pos0[NP] = {100, 40}, req[NP] = {7, 3}, seg[NP] = {0, 1}, done = m0 / 3;
    const int rows = first[1] + m1 + 2, width = (H + 2 * Hkv) * d, kvd = Hkv * d, P = m0 + m1;
    int32_t probe[K_FOCUS_FIELDS * NP], slot[512], fpos[512], crow[256], cpos[256], cslot[256], klen[NP], prog[8],
        trace[NP * MAXC];
    float *qf = xmalloc(sizeof *qf * (size_t)2 * rows * width), *kf = xmalloc(sizeof *kf * (size_t)2 * SLOTS * kvd);
    bf16_t *qh = xmalloc(2 * (size_t)2 * rows * width), *kh = xmalloc(2 * (size_t)2 * SLOTS * kvd);
    float *delta = xmalloc(sizeof *delta * (size_t)P), *imp = xmalloc(sizeof *imp * (size_t)2 * P);
    float *gimp = xmalloc(sizeof *gimp * (size_t)2 * H * P);
    void *dq = NULL, *dk = NULL, *dslot = NULL, *dprobe = NULL, *dimp = NULL, *ddelta = NULL, *dcrow = NULL;
    void *dpos = NULL, *dcs = NULL, *dklen = NULL, *dprog = NULL, *dtr = NULL, *dfpos = NULL;
    rand_bf16(c, qf, qh, (int64_t)2 * rows * width, 1.0f);
    rand_bf16(c, kf, kh, (int64_t)2 * SLOTS * kvd, 1.0f);
    for (int i = 0; i < rows; i++)
        slot[i] = (int)((i * 37 + 11) % SLOTS), fpos[i] = 1000 + i;
    for (int n = 0; n < NP; n++) /* the first segment's candidates follow each other, the second's scatter */
        for (int j = 0; j < m[n]; j++)
            fpos[first[n] + j] = pos0[n] + (n + 1) * j;
    for (int n = 0; n < NP; n++) {
        const int32_t f[K_FOCUS_FIELDS] = {first[n], m[n], K[n], comp[n], pos0[n], req[n], seg[n]};
        memcpy(probe + K_FOCUS_FIELDS * n, f, sizeof f);
    }
    for (int i = 0; i < 8; i++)
        prog[i] = -1;
    prog[req[0]] = fpos[first[0] + done - 1];
    memset(crow, 0xff, sizeof crow);
    void **const dev[] = {&dq, &dk, &dslot, &dprobe, &dimp, &ddelta, &dcrow, &dpos, &dcs, &dklen, &dprog, &dtr, &dfpos};
    const void *const src[] = {qh, kh, slot, probe, gimp, delta, crow, crow, crow, klen, prog, trace, fpos};
    const size_t bytes[] = {2 * (size_t)2 * rows * width, 2 * (size_t)2 * SLOTS * kvd, sizeof slot, sizeof probe,
                            sizeof(float) * (size_t)2 * H * P, sizeof(float) * (size_t)P, sizeof crow, sizeof crow,
                            sizeof crow, sizeof klen, sizeof prog, sizeof trace, sizeof fpos};
    if (!dev_copies(dev, src, bytes, TS_ARRAY_LEN(dev))) {
        fail_msg(c, "focus", "device allocation failed");
        goto done;
    }
    struct k_focus_args a = {.front_slot = dslot, .front_pos = dfpos, .probe = dprobe, .imp = dimp, .delta = ddelta,
                             .c_row = dcrow,
                             .tok_pos = dpos, .tok_slot = dcs, .key_len = dklen, .progress = dprog, .trace = dtr,
                             .q_stride = width, .num_probe = NP, .probe_rows = P, .max_probe = TS_MAX(m0, m1),
                             .H = H, .Hkv = Hkv, .d = d, .scale = 1.0f / sqrtf((float)d)};
    for (int L = 0; L < 2; L++) {
        a.layer = L;
        a.q = (const bf16_t *)dq + (size_t)L * rows * width;
        a.k_pool = (const bf16_t *)dk + (size_t)L * SLOTS * kvd;
        KK(k_focus_importance(&a, NULL));
    }
    KK(k_focus_pick(&a, NULL));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(gimp, dimp, sizeof(float) * (size_t)2 * H * P, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(delta, ddelta, sizeof(float) * (size_t)P, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(crow, dcrow, sizeof crow, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cpos, dpos, sizeof cpos, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cslot, dcs, sizeof cslot, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(klen, dklen, sizeof klen, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(prog, dprog, sizeof prog, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(trace, dtr, sizeof trace, cudaMemcpyDeviceToHost));
    double ierr = 0, inorm = 0;
    int wrong = 0, arrays = 0;
    for (int n = 0, g0 = 0; n < NP; g0 += m[n], n++) {
        float *kr = xmalloc(sizeof *kr * (size_t)m[n] * kvd), *rimp = xmalloc(sizeof *rimp * (size_t)2 * m[n]);
        for (int L = 0; L < 2; L++) {
            for (int j = 0; j < m[n]; j++)
                memcpy(kr + (size_t)j * kvd, kf + ((size_t)L * SLOTS + slot[first[n] + j]) * kvd, sizeof *kr * kvd);
            ref_focus_importance(qf + ((size_t)L * rows + first[n]) * width, width, kr, m[n], H, Hkv, d,
                                 1.0f / sqrtf((float)d), rimp + (size_t)L * m[n]);
            for (int j = 0; j < m[n]; j++) {
                double g = 0;
                for (int hd = 0; hd < H; hd++)
                    g += gimp[((size_t)L * H + hd) * P + g0 + j];
                ierr = fmax(ierr, fabs(g - rimp[(size_t)L * m[n] + j]));
                inorm = fmax(inorm, fabs(rimp[(size_t)L * m[n] + j]));
            }
        }
        for (int j = 0; j < m[n]; j++)
            ierr = fmax(ierr, fabs(delta[g0 + j] - (rimp[m[n] + j] - rimp[j])));
        int32_t ref[MAXC];
        const int np = n == 0 ? done : 0;
        ref_focus_pick(delta + g0, m[n], K[n], np, ref);
        int right = -1;
        for (int k = 0; k < K[n]; k++) {
            const int j = comp[n] + k, x = first[n] + ref[k];
            wrong += trace[n * a.max_probe + k] != ref[k];
            arrays += crow[j] != x || cpos[j] != fpos[x] || cslot[j] != slot[x];
            right = TS_MAX(right, ref[k]);
        }
        const int end = TS_MAX(n == 0 ? fpos[first[0] + done - 1] : -1, fpos[first[n] + right]);
        arrays += klen[seg[n]] != end + 1 || prog[req[n]] != end;
        free(kr), free(rimp);
    }
    char what[96];
    snprintf(what, sizeof what, "focus importance (H %d, Hkv %d, d %d; %d, %d candidates), largest error", H, Hkv, d,
             m0, m1);
    report(c, what, ierr / fmax(inorm, 1e-6), 1e-3);
    report(c, "  kept candidates that differ", wrong, 0);
    report(c, "  later-row arrays (c_row, tok_pos, tok_slot, key_len, progress) wrong", arrays, 0);
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dslot), cudaFree(dprobe), cudaFree(dimp), cudaFree(ddelta);
    cudaFree(dcrow), cudaFree(dpos), cudaFree(dcs), cudaFree(dklen), cudaFree(dprog), cudaFree(dtr), cudaFree(dfpos);
    free(qf), free(kf), free(qh), free(kh), free(delta), free(imp), free(gimp);
}

/* Routers of the MoE kernel checks: a softmax's top k renormalised (LLaDA-MoE's), and LLaDA2.0's
 * sigmoid scores, the best 4 of 8 groups, renormalised times 2.5 (with an expert bias the check draws). */
#define SOFTMAX_RENORMALISED ((struct k_moe_router){.norm = true})
#define LLADA2_ROUTER ((struct k_moe_router){.sigmoid = true, .norm = true, .n_group = 8, .topk_group = 4, .scale = 2.5f})

/* The choices of T rows (ids, wts [T k]) that differ from ref_moe_route's over the logits lf [T, E];
 * *werr gets the largest weight's difference. */
static int moe_route_wrong(const float *lf, const int32_t *ids, const float *wts, int T, int E, int k, uint32_t balance,
                           const struct k_moe_router *rt, const float *bias, double *werr)
{
    int wrong = 0;
    int32_t *rid = xmalloc(sizeof *rid * (size_t)k);
    float *rw = xmalloc(sizeof *rw * (size_t)k);
    for (int t = 0; t < T; t++) {
        ref_moe_route(lf + (size_t)t * E, E, k, balance, rt, bias, t, rid, rw);
        for (int j = 0; j < k; j++) {
            wrong += ids[t * k + j] != rid[j];
            *werr = fmax(*werr, fabs(wts[t * k + j] - rw[j]));
        }
    }
    free(rid), free(rw);
    return wrong;
}

/* The dispatch's arrays (offsets off [E + 1], tok and pos [n]) and tiles wrong for the choices ids [n]:
 * each expert's copies within its offsets, each place taken once; the tiles cover them. */
static int moe_dispatch_wrong(const int32_t *ids, const int32_t *off, const int32_t *tok, const int32_t *pos,
                              const int32_t *tiles, int ntiles, int n, int E, int k, int tile, int max_tiles)
{
    int arrays = 0, covered = 0;
    unsigned char *taken = xcalloc((size_t)n, 1);
    for (int e = 0, p = 0; e < E; e++) {
        const int lo = off[e], hi = off[e + 1];
        arrays += lo != p;
        for (int i = 0; i < n; i++)
            if (ids[i] == e) {
                const int q = pos[i];
                const bool in = q >= lo && q < hi && q < n;
                arrays += !in || taken[q] || tok[q] != i / k;
                if (in)
                    taken[q] = 1;
                p++;
            }
    }
    free(taken);
    arrays += off[E] != n;
    for (int i = 0; i < ntiles; i++) {
        const int e = tiles[2 * i], s = tiles[2 * i + 1];
        arrays += e < 0 || e >= E || s < off[e] || s >= off[e + 1] || (s - off[e]) % tile;
        covered += TS_MIN(tile, off[e + 1] - s);
    }
    arrays += covered != n || ntiles > max_tiles;
    return arrays;
}

/* The MoE kernels on T rows of E experts, k each: the routing (the router's, or balanced by salt
 * balance) against the reference's, the dispatch's arrays against a count on the host, and the
 * grouped GEMM (in two chunks of the copies, the second ragged) and the combine against a product
 * on the host of the same bf16 inputs. */
static void check_moe_kernels(struct checker *c, int T, int E, int k, int N, int K, int tile, uint32_t balance,
                              struct k_moe_router rt, bool has_bias)
{
    const int n = T * k, max_tiles = (n + K_MOE_TILE_MIN - 1) / K_MOE_TILE_MIN + E, h = N;
    float *lf = xmalloc(sizeof *lf * (size_t)T * E), *xf = xmalloc(sizeof *xf * (size_t)n * K);
    float *wf = xmalloc(sizeof *wf * (size_t)E * N * K), *wts = xmalloc(sizeof *wts * (size_t)n);
    bf16_t *lb = xmalloc(2 * (size_t)T * E), *xb = xmalloc(2 * (size_t)n * K), *wb = xmalloc(2 * (size_t)E * N * K);
    bf16_t *yb = xmalloc(2 * (size_t)n * N), *xo = xmalloc(2 * (size_t)T * h);
    int32_t *ids = xmalloc(sizeof *ids * (size_t)n), *tok = xmalloc(sizeof *tok * (size_t)n);
    int32_t *pos = xmalloc(sizeof *pos * (size_t)n), *off = xmalloc(sizeof *off * (size_t)(E + 1));
    int32_t *tiles = xmalloc(sizeof *tiles * 2 * (size_t)max_tiles), ntiles = 0;
    void *dl = NULL, *dids = NULL, *dwts = NULL, *dcnt = NULL, *doff = NULL, *dtok = NULL, *dpos = NULL;
    void *dtiles = NULL, *dnt = NULL, *dx = NULL, *dw = NULL, *dy = NULL, *dacc = NULL, *dxo = NULL;
    rand_bf16(c, lf, lb, (int64_t)T * E, 2.0f);
    rand_bf16(c, xf, xb, (int64_t)n * K, 1.0f);
    rand_bf16(c, wf, wb, (int64_t)E * N * K, 0.2f);
    for (int64_t i = 0; i < (int64_t)T * h; i++)
        xo[i] = eng_f2bf(0.5f);
    float *biasf = xmalloc(sizeof *biasf * (size_t)E); /* an expert bias, if has_bias */
    bf16_t *biasb = xmalloc(2 * (size_t)E);
    void *dbias = NULL;
    rand_bf16(c, biasf, biasb, E, 0.05f);
    void **const dev[] = {&dl, &dids, &dwts, &dcnt, &doff, &dtok, &dpos, &dtiles, &dnt, &dx, &dw, &dy, &dacc, &dxo,
                          &dbias};
    const void *const src[] = {lb, ids, wts, off, off, tok, pos, tiles, &ntiles, xb, wb, yb, wf, xo, biasb};
    const size_t bytes[] = {2 * (size_t)T * E, 4 * (size_t)n, 4 * (size_t)n, 4 * (size_t)E, 4 * (size_t)(E + 1),
                            4 * (size_t)n, 4 * (size_t)n, 8 * (size_t)max_tiles, 4, 2 * (size_t)n * K,
                            2 * (size_t)E * N * K, 2 * (size_t)n * N, 4 * (size_t)T * h, 2 * (size_t)T * h,
                            2 * (size_t)E};
    if (!dev_copies(dev, src, bytes, TS_ARRAY_LEN(dev))) {
        fail_msg(c, "moe", "device allocation failed");
        goto done;
    }
    rt.bias = has_bias ? dbias : NULL;
    KK(k_moe_route(dl, T, E, k, balance, &rt, dids, dwts, NULL));
    const struct k_moe_dispatch_args da = {dids, dcnt, doff, dtok, dpos, dtiles, dnt, T, k, E, tile};
    KK(k_moe_dispatch(&da, NULL));
    const int p1 = n / 2 + 3; /* two chunks: [0, p1) and [p1, n) */
    for (int ch = 0; ch < 2; ch++) {
        const int a0 = ch ? p1 : 0, a1 = ch ? n : p1;
        const struct k_moe_gemm_args ga = {(const bf16_t *)dx + (size_t)a0 * K, dw, (bf16_t *)dy + (size_t)a0 * N,
                                           doff, dtiles, dnt, a0, a1, N, K, max_tiles, tile, E};
        KK(k_moe_gemm(&ga, NULL));
        const struct k_moe_combine_args ca = {(const bf16_t *)dy + (size_t)a0 * N, dpos, dwts, dacc, dxo, T, k, h, a0,
                                              a1, ch == 0, ch == 1, false};
        KK(k_moe_combine(&ca, NULL));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ids, dids, 4 * (size_t)n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(wts, dwts, 4 * (size_t)n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(off, doff, 4 * (size_t)(E + 1), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(tok, dtok, 4 * (size_t)n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(pos, dpos, 4 * (size_t)n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(tiles, dtiles, 8 * (size_t)max_tiles, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&ntiles, dnt, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(yb, dy, 2 * (size_t)n * N, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(xo, dxo, 2 * (size_t)T * h, cudaMemcpyDeviceToHost));
    double werr = 0;
    const int wrong_ids = moe_route_wrong(lf, ids, wts, T, E, k, balance, &rt, has_bias ? biasf : NULL, &werr);
    const int arrays = moe_dispatch_wrong(ids, off, tok, pos, tiles, ntiles, n, E, k, tile, max_tiles);
    /* Y = X W_e^T row by row; the combine's sums */
    double yerr = 0, ynorm = 0, cerr = 0, cnorm = 0;
    float *yr = xmalloc(sizeof *yr * (size_t)n * N);
    for (int p = 0; p < n; p++) {
        int e = 0;
        while (e + 1 < E && off[e + 1] <= p)
            e++;
        ref_linear(yr + (size_t)p * N, xf + (size_t)p * K, wf + (size_t)e * N * K, 1, K, N);
        for (int q = 0; q < N; q++) {
            yerr = fmax(yerr, fabs(eng_bf2f(yb[(size_t)p * N + q]) - yr[(size_t)p * N + q]));
            ynorm = fmax(ynorm, fabs(yr[(size_t)p * N + q]));
        }
    }
    for (int t = 0; t < T; t++)
        for (int q = 0; q < h; q++) {
            double v = 0.5;
            for (int j = 0; j < k; j++)
                v += wts[t * k + j] * eng_bf2f(yb[(size_t)pos[t * k + j] * N + q]);
            cerr = fmax(cerr, fabs(eng_bf2f(xo[(size_t)t * h + q]) - v));
            cnorm = fmax(cnorm, fabs(v));
        }
    char what[112];
    char groups[32] = "";
    if (rt.n_group > 1)
        snprintf(groups, sizeof groups, ", best %d of %d groups", rt.topk_group, rt.n_group);
    snprintf(what, sizeof what, "moe routing (%d rows, %d experts, top %d%s, %s%s%s): choices that differ", T, E, k,
             balance ? ", balanced" : "", rt.sigmoid ? "sigmoid" : "softmax", has_bias ? " with a bias" : "", groups);
    report(c, what, wrong_ids, 0);
    report(c, "  routing weights (largest difference)", werr, 1e-5);
    report(c, "  dispatch arrays and tiles wrong", arrays, 0);
    snprintf(what, sizeof what, "  grouped GEMM %d x %d x %d in two chunks (largest error over the largest)", n, N, K);
    report(c, what, yerr / fmax(ynorm, 1e-6), 1e-2);
    report(c, "  combine into x (largest error over the largest)", cerr / fmax(cnorm, 1e-6), 1e-2);
    free(yr);
done:
    cudaFree(dl), cudaFree(dids), cudaFree(dwts), cudaFree(dcnt), cudaFree(doff), cudaFree(dtok), cudaFree(dpos);
    cudaFree(dtiles), cudaFree(dnt), cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dacc), cudaFree(dxo);
    cudaFree(dbias);
    free(lf), free(xf), free(wf), free(wts), free(lb), free(xb), free(wb), free(yb), free(xo);
    free(ids), free(tok), free(pos), free(off), free(tiles), free(biasf), free(biasb);
}

/* check_moe_kernels' cases: LLaDA-MoE's router (a softmax renormalised) over 8, 64 and 256 experts,
 * balanced too; a softmax's probabilities as they are; LLaDA2.0's router, and balanced. */
static void check_moe_kernel_cases(struct checker *c)
{
    check_moe_kernels(c, 100, 8, 2, 128, 256, 64, 0, SOFTMAX_RENORMALISED, false);
    check_moe_kernels(c, 300, 64, 8, 256, 128, 32, 0, SOFTMAX_RENORMALISED, false);
    check_moe_kernels(c, 300, 256, 8, 128, 128, 32, 7, SOFTMAX_RENORMALISED, false);
    check_moe_kernels(c, 300, 64, 6, 128, 128, 32, 0, (struct k_moe_router){.norm = false}, false); /* probabilities */
    check_moe_kernels(c, 300, 256, 8, 128, 128, 32, 0, LLADA2_ROUTER, true); /* LLaDA2.0's */
    check_moe_kernels(c, 100, 256, 8, 128, 128, 32, 5, LLADA2_ROUTER, true);
    if (k_gemm_wgmma_ready(NULL)) { /* the wgmma grouped GEMM: tiles over both warpgroups, the first alone, */
        check_moe_kernels(c, 300, 8, 4, 256, 192, K_MOE_TILE_WGMMA, 0, SOFTMAX_RENORMALISED, false); /* chunks */
        check_moe_kernels(c, 40, 64, 8, 512, 128, K_MOE_TILE_WGMMA, 3, SOFTMAX_RENORMALISED, false);
        check_moe_kernels(c, 600, 16, 8, 256, 512, K_MOE_TILE_WGMMA, 0, LLADA2_ROUTER, true); /* splitting tiles */
    }
}

/* The selection kernels on two segments each, per K/V head and one set for all; the ranking's
 * blocks 256, 512 and 1,024 wide, and more candidates than a block has threads (its scan over them
 * in turns, the copy of more kept rows than threads). */
static void check_select_kernels(struct checker *c)
{
    static const struct sel_case sel_cases[] = {
        {4, 2, 64, 3, 0, {300, 190}, {150, 1}, {32, 17}},    {4, 2, 64, 3, 1, {300, 190}, {150, 95}, {32, 17}},
        {8, 8, 128, 1, 1, {160, 33}, {160, 16}, {32, 1}},     {32, 32, 128, 5, 0, {700, 64}, {350, 64}, {32, 32}},
        {32, 32, 128, 3, 1, {700, 64}, {350, 32}, {32, 32}},  {8, 2, 128, 3, 0, {1500, 40}, {1100, 8}, {32, 8}},
        {8, 4, 64, 3, 1, {2100, 250}, {1030, 249}, {32, 17}},
        /* over a thousand candidates, at most 512 kept: the select kernel copies them itself */
        {8, 4, 64, 3, 1, {1100, 300}, {400, 150}, {32, 17}},  {16, 16, 128, 3, 0, {1200, 64}, {300, 32}, {32, 8}},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(sel_cases); i++)
        check_kv_select(c, &sel_cases[i]);
}

/* The query sets of check_attention */
enum { SET_LONG, SET_SHORT, SET_ONE, SET_TINY };

/* Runs the attention of a (the wgmma kernel alone where wgmma_only) over its output poisoned with
 * NaN first, and reads that back as fp32 into of (ob: its bf16 copy): 0; 1 where the wgmma kernel
 * does not run on this device, which is no compute capability 9.0 one; -1 on a CUDA error (counted
 * as a failure). */
static int run_attention(struct checker *c, const struct k_attn_args *a, bool wgmma_only, bf16_t *ob, float *of,
                         int64_t nq)
{
    KK(k_fill_bits(a->o, nq, 0x7fc0, NULL));
    int rc = wgmma_only ? k_attention_wgmma(a, NULL) : k_attention(a, NULL);
    if (wgmma_only && rc == (int)cudaErrorNotSupported && !hopper())
        return 1;
    KK(rc);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ob, a->o, 2 * (size_t)nq, cudaMemcpyDeviceToHost));
    to_float(of, ob, nq);
    return 0;
done:
    return -1;
}

/* Attention over 5 segments at once against the reference, K/V scattered over permuted pages of
 * pt tokens: query lengths up to 130 (SET_LONG: 64-key K/V tiles, and the wgmma kernel for the
 * 130-row segment under auto), up to 32 (SET_SHORT), as in Reuse steps (32-key K/V tiles where
 * the keys are not split; under auto, GQA heads packed two a block), up to 16 (SET_TINY: four a
 * block where the K/V heads' groups allow), or one 128-row segment over 2,100 cached keys beside
 * short ones (SET_ONE: auto runs it on the mma.sync kernel, attn_long_on_mma). */
/* One attention case under check: its launch arguments, its shape, the reference output rf and the
 * buffers the kernels write (ob on the device's bf16, of as floats). */
struct attn_case {
    struct k_attn_args a;
    int H, Hkv, d, block_size, pt, set;
    bool split, short_q;
    int min_q, max_q, max_keys, splits, long_tiles, long_rows, wg_tiles;
    bf16_t *ob;
    float *of, *rf;
    int64_t nq;
};

/* The case's name for the report: heads, mask, and what is under test (`what`). */
static void attn_case_name(const struct attn_case *x, const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "attention H %d Hkv %d d %d %s, %s", x->H, x->Hkv, x->d,
             x->block_size ? "block-causal 32" : "bidirectional", what);
}

/* The mma.sync kernel, and the wgmma kernel where it applies (head dim 128 without key split; on a
 * compute capability 9.0 device it must run). wg 0: the mma.sync kernel; 1: the wgmma kernel alone;
 * 2: auto, each segment to the kernel its length calls for (the long set mixes both), the tile
 * list's order not given; 3 (long set): auto given the order, each kernel over its own tiles.
 * -1: a CUDA failure (reported). */
static int attn_check_kernels(struct checker *c, struct attn_case *x)
{
    struct k_attn_args *a = &x->a;
    for (int wg = 0; wg <= (x->d == 128 ? (x->short_q ? 2 : 3) : 0); wg++) {
        if (wg == 1 && x->splits > 1) /* the wgmma kernel never splits */
            continue;
        a->impl = wg >= 2 ? 2 : 0;
        a->min_q_len = wg >= 2 ? x->min_q : 0;
        a->max_q_len = wg >= 2 ? x->max_q : 0;
        a->long_tiles = wg == 3 ? x->long_tiles : 0;
        a->long_rows = wg == 3 ? x->long_rows : 0;
        a->wg_tiles = wg == 3 ? x->wg_tiles : 0;
        const int wsplits = wg >= 2 ? k_attention_splits(a) : x->splits;
        const int pack = k_attention_head_pack(a);
        char desc[112], what[192];
        snprintf(desc, sizeof desc, "%d key split%s%s%s%s%s", wsplits, wsplits > 1 ? "s" : "",
                 x->pt == 1 ? ", 1-token pages" : "",
                 x->set == SET_SHORT ? ", short" : x->set == SET_TINY ? ", tiny" : x->set == SET_ONE ? ", one long" : "",
                 wg == 1 ? ", wgmma" : wg == 2 ? ", auto" : wg == 3 ? ", auto ordered" : "",
                 pack > 1 ? (pack == 2 ? ", 2 heads a block" : ", 4 heads a block") : "");
        attn_case_name(x, desc, what, sizeof what);
        const int ran = run_attention(c, a, wg == 1, x->ob, x->of, x->nq);
        if (ran < 0)
            return -1;
        if (ran > 0) {
            fprintf(c->out, "  %-58s skipped: no sm_90a device\n", what);
            continue;
        }
        if (wg == 0 && x->split && wsplits < 2)
            fail_msg(c, what, "the split-KV path was not taken");
        if (wg == 3 && x->set == SET_ONE && x->split && wsplits < 2)
            fail_msg(c, what, "the long segment was not given to the mma.sync kernel and its key split");
        if (wg == 0 && k_attention_tile_keys(a) != (x->set != SET_LONG && !x->split ? 32 : 64))
            fail_msg(c, what, "the K/V tile size is not the one these query lengths call for");
        if (wg == 2 && pack != attn_head_pack_v(ATTN_RULES, x->H, x->Hkv, x->max_q, x->max_keys))
            fail_msg(c, what, "the heads a block takes are not the rules' (GQA packing)");
        report(c, what, check_rel_err(x->of, x->rf, x->nq), 2e-2);
    }
    return 0;
}

/* Heads packed by force (k_attn_args.head_pack): each count where it fits these lengths and heads,
 * else none. */
static int attn_check_forced_packs(struct checker *c, struct attn_case *x)
{
    struct k_attn_args *a = &x->a;
    for (int P = 1; x->short_q && P <= 4; P *= 2) {
        a->impl = 0, a->min_q_len = x->min_q, a->max_q_len = x->max_q, a->long_tiles = a->long_rows = a->wg_tiles = 0;
        a->head_pack = P;
        const int want = attn_pack_fits(P, x->H, x->Hkv, x->max_q) ? P : 1, got = k_attention_head_pack(a);
        char desc[112], what[192];
        snprintf(desc, sizeof desc, "%d head%s a block forced%s%s", P, P > 1 ? "s" : "", x->split ? ", split" : "",
                 want < P ? " (takes 1)" : "");
        attn_case_name(x, desc, what, sizeof what);
        if (got != want) {
            fail_msg(c, what, "the forced head count was not taken where it fits, or taken where it does not");
            continue;
        }
        if (run_attention(c, a, false, x->ob, x->of, x->nq) < 0)
            return -1;
        report(c, what, check_rel_err(x->of, x->rf, x->nq), 2e-2);
    }
    a->head_pack = 0;
    return 0;
}

/* Key splits forced (k_attn_args.splits, for measuring the split rule): one, three, sixteen. */
static int attn_check_forced_splits(struct checker *c, struct attn_case *x)
{
    struct k_attn_args *a = &x->a;
    for (int k = 0; x->split && x->set == SET_SHORT && k < 3; k++) {
        const int want = k == 0 ? 1 : k == 1 ? 3 : 16;
        a->impl = 0, a->min_q_len = a->max_q_len = a->long_tiles = a->long_rows = a->wg_tiles = 0;
        a->splits = want;
        const int got = k_attention_splits(a);
        char desc[64], what[192];
        snprintf(desc, sizeof desc, "%d key splits forced", want);
        attn_case_name(x, desc, what, sizeof what);
        if (got != TS_MIN(want, (x->max_keys + 63) / 64)) {
            fail_msg(c, what, "the forced split count was not taken");
            continue;
        }
        if (run_attention(c, a, false, x->ob, x->of, x->nq) < 0)
            return -1;
        report(c, what, check_rel_err(x->of, x->rf, x->nq), 2e-2);
    }
    a->splits = 0;
    return 0;
}

static void check_attention(struct checker *c, int H, int Hkv, int d, int block_size, bool split,
                            int pt, int set)
{
    const int nseg = 5;
    static const int sets_q[4][5] = {
        {1, 70, 32, 130, 64}, {1, 32, 17, 32, 8}, {128, 32, 1, 16, 8}, {1, 16, 9, 16, 8}};
    static const int sets_kv[4][5] = {
        {0, 0, 480, 600, 64}, {0, 480, 64, 600, 100}, {2100, 480, 0, 64, 100}, {0, 480, 64, 600, 100}};
    struct attn_case x = {.H = H, .Hkv = Hkv, .d = d, .block_size = block_size, .pt = pt, .set = set,
                          .split = split, .short_q = set == SET_SHORT || set == SET_TINY};
    const int *q_len = sets_q[set], *kv = sets_kv[set];
    int q_start[5], key_len[5], page_off[5], T = 0, npages = 0;
    for (int s = 0; s < nseg; s++) {
        q_start[s] = T;
        T += q_len[s];
        key_len[s] = kv[s] + q_len[s];
        page_off[s] = npages;
        npages += (key_len[s] + pt - 1) / pt;
    }
    int32_t *pages = xmalloc(4 * (size_t)npages);
    for (int i = 0; i < npages; i++)
        pages[i] = (int32_t)((i * 7 + 3) % npages); /* a permutation (npages is not a multiple of 7) */
    /* the tiles as eng_plan lists them (attn_tiles) */
    int32_t tiles[2 * 64];
    const int ntiles = attn_tiles(nseg, q_len, tiles, &x.long_tiles, &x.long_rows, &x.wg_tiles);
    const int qs = H * d, slots = npages * pt;
    int64_t nq = (int64_t)T * qs, np = (int64_t)slots * Hkv * d;
    x.nq = nq;
    float *qf = xmalloc(4 * nq), *kf = xmalloc(4 * np), *vf = xmalloc(4 * np), *ks = NULL, *vs = NULL;
    x.of = xmalloc(4 * nq);
    x.rf = xmalloc(4 * nq);
    bf16_t *qb = xmalloc(2 * nq), *kb = xmalloc(2 * np), *vb = xmalloc(2 * np);
    x.ob = xmalloc(2 * nq);
    bf16_t *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL;
    int32_t *dmeta[7] = {0};
    void *ws = NULL;
    x.min_q = x.max_q = q_len[0];
    for (int s = 0; s < nseg; s++) {
        x.max_keys = TS_MAX(x.max_keys, key_len[s]);
        x.min_q = TS_MIN(x.min_q, q_len[s]);
        x.max_q = TS_MAX(x.max_q, q_len[s]);
    }
    rand_bf16(c, qf, qb, nq, 1.5f);
    rand_bf16(c, kf, kb, np, 1.5f);
    rand_bf16(c, vf, vb, np, 1.0f);
    dq = dev_copy(qb, 2 * nq);
    dk = dev_copy(kb, 2 * np);
    dv = dev_copy(vb, 2 * np);
    const int32_t *hm[7] = {q_start, q_len, key_len, kv, page_off, pages, tiles};
    size_t hs[7] = {sizeof q_start, 4 * (size_t)nseg, sizeof key_len, 4 * (size_t)nseg, sizeof page_off,
                    4 * (size_t)npages, 8 * (size_t)ntiles};
    for (int i = 0; i < 7; i++)
        dmeta[i] = dev_copy(hm[i], hs[i]);
    CK(cudaMalloc((void **)&dout, 2 * nq));
    x.a = (struct k_attn_args){.q = dq, .q_stride = qs, .k_pool = dk, .v_pool = dv, .o = dout,
                               .q_start = dmeta[0], .q_len = dmeta[1], .key_len = dmeta[2],
                               .kv_cached = dmeta[3], .page_off = dmeta[4], .pages = dmeta[5],
                               .tiles = dmeta[6], .num_tiles = ntiles, .H = H, .Hkv = Hkv, .d = d,
                               .page_tokens = pt, .page_shift = __builtin_ctz((unsigned)pt),
                               .block_size = block_size, .scale = 1.0f / sqrtf((float)d),
                               .T = T, .max_key_len = x.max_keys};
    if (split) {
        x.a.ws_bytes = 64 << 20;
        CK(cudaMalloc(&ws, (size_t)x.a.ws_bytes));
        x.a.ws = ws;
    }
    x.splits = k_attention_splits(&x.a);
    /* reference: gather each segment's keys into a contiguous array */
    ks = xmalloc(4 * (size_t)x.max_keys * Hkv * d);
    vs = xmalloc(4 * (size_t)x.max_keys * Hkv * d);
    for (int s = 0; s < nseg; s++) {
        for (int j = 0; j < key_len[s]; j++) {
            int slot = pages[page_off[s] + j / pt] * pt + j % pt;
            memcpy(ks + (size_t)j * Hkv * d, kf + (size_t)slot * Hkv * d, 4 * (size_t)Hkv * d);
            memcpy(vs + (size_t)j * Hkv * d, vf + (size_t)slot * Hkv * d, 4 * (size_t)Hkv * d);
        }
        ref_attention(x.rf + (size_t)q_start[s] * qs, qf + (size_t)q_start[s] * qs, qs, ks, vs, q_len[s],
                      key_len[s], kv[s], H, Hkv, d, block_size, 1.0f / sqrtf((float)d));
    }
    if (attn_check_kernels(c, &x) == 0 && attn_check_forced_packs(c, &x) == 0)
        attn_check_forced_splits(c, &x);
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(ws);
    for (int i = 0; i < 7; i++)
        cudaFree(dmeta[i]);
    free(pages), free(qf), free(kf), free(vf), free(x.of), free(x.rf), free(ks), free(vs);
    free(qb), free(kb), free(vb), free(x.ob);
}

static void check_argmax(struct checker *c, int V)
{
    const int rows = 9;
    int64_t n = (int64_t)rows * V;
    float *lf = xmalloc(4 * n), rmax[9], rconf[9], gmax[9], gconf[9], ggap[9];
    bf16_t *lb = xmalloc(2 * n), *dl = NULL;
    int32_t rtok[9], gtok[9], *dt = NULL;
    float *dm = NULL, *dc = NULL, *dg = NULL;
    rand_bf16(c, lf, lb, n, 6.0f);
    dl = dev_copy(lb, 2 * n);
    CK(cudaMalloc((void **)&dt, 4 * rows));
    CK(cudaMalloc((void **)&dm, 4 * rows));
    CK(cudaMalloc((void **)&dc, 4 * rows));
    CK(cudaMalloc((void **)&dg, 4 * rows));
    /* row 0's largest logit twice (a gap of 0), row 1's two largest apart by a known step (V > 9) */
    lb[7] = lb[V - 3] = eng_f2bf(40.0f), lf[7] = lf[V - 3] = eng_bf2f(lb[7]);
    lb[V + 5] = eng_f2bf(30.0f), lb[V + 9] = eng_f2bf(29.0f);
    lf[V + 5] = eng_bf2f(lb[V + 5]), lf[V + 9] = eng_bf2f(lb[V + 9]);
    CK(cudaMemcpy(dl, lb, 2 * n, cudaMemcpyHostToDevice));
    KK(k_argmax_conf(dl, rows, V, dt, dm, dc, dg, 0, NULL));
    CK(cudaMemcpy(gtok, dt, 4 * rows, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gmax, dm, 4 * rows, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gconf, dc, 4 * rows, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ggap, dg, 4 * rows, cudaMemcpyDeviceToHost));
    ref_argmax_conf(lf, rows, V, rtok, rmax, rconf);
    int wrong = 0, gaps = 0;
    for (int r = 0; r < rows; r++) {
        wrong += gtok[r] != rtok[r] || gmax[r] != rmax[r];
        float second = -INFINITY; /* the runner-up: the largest but for one occurrence of the max */
        bool seen = false;
        for (int v = 0; v < V; v++) {
            const float x = lf[(size_t)r * V + v];
            if (x == rmax[r] && !seen)
                seen = true;
            else if (x > second)
                second = x;
        }
        gaps += ggap[r] != rmax[r] - second;
    }
    gaps += ggap[0] != 0.0f || ggap[1] != 1.0f;
    char what[96];
    snprintf(what, sizeof what, "argmax + max over V = %d (rows that differ)", V);
    report(c, what, wrong, 0);
    snprintf(what, sizeof what, "top-2 gap over V = %d (rows that differ)", V);
    report(c, what, gaps, 0);
    snprintf(what, sizeof what, "confidence over V = %d", V);
    report(c, what, check_rel_err(gconf, rconf, rows), 1e-3);
done:
    cudaFree(dl), cudaFree(dt), cudaFree(dm), cudaFree(dc), cudaFree(dg);
    free(lf), free(lb);
}

/* Elastic-Cache's drift test (k_drift) against a naive double-precision computation from the same bf16
 * rows: H query heads over Hkv K/V heads of dimension d, N positions at rows row0.. of a qkv buffer (in
 * another order), their keys at scattered pool slots, the cache's queries and keys by position; every
 * fourth position queried (its key fresh, the others' the cache's) unless an earlier layer's test fired
 * (all fresh); the window's most-attended eligible key (checked by its score: within 1e-5 of the best),
 * the tracked tokens' mean similarity, and the cache after the layer. */
static void check_drift(struct checker *c, int H, int Hkv, int d, int N, int nwin, int ntrack, bool fired)
{
    const int row0 = 3, rows = row0 + N + 2, width = (H + 2 * Hkv) * d, qd = H * d, kvd = Hkv * d;
    const int64_t nq = (int64_t)rows * width, nk = (int64_t)(2 * N + 5) * kvd;
    float *qf = xmalloc(4 * nq), *kf = xmalloc(4 * nk), *pqf = xmalloc(4 * (size_t)N * qd);
    float *pkf = xmalloc(4 * (size_t)N * kvd);
    bf16_t *qb = xmalloc(2 * nq), *kb = xmalloc(2 * nk), *pqb = xmalloc(2 * (size_t)N * qd);
    bf16_t *pkb = xmalloc(2 * (size_t)N * kvd), *kq = xmalloc(2 * (size_t)N * qd), *kk = xmalloc(2 * (size_t)N * kvd);
    int32_t *slot = xmalloc(4 * (size_t)rows), *map = xmalloc(4 * (size_t)N), sel[K_DRIFT_MAX_ROWS], gtrack = -2;
    uint8_t *elig = xmalloc((size_t)N), *qry = xmalloc((size_t)N);
    const float sims[2] = {0.95f, fired ? 0.5f : 0.95f}; /* layer 2's earlier layers: 1 fired, or none */
    double *p = xmalloc(8 * (size_t)(nwin + 2 * ntrack) * H * N), *score = xcalloc((size_t)N, 8);
    float gsim = 0;
    bf16_t *dq = NULL, *dk = NULL, *dpq = NULL, *dpk = NULL, *dwq = NULL, *dwk = NULL;
    int32_t *dslot = NULL, *dsel = NULL, *dmap = NULL, *dtrack = NULL;
    uint8_t *delig = NULL, *dqry = NULL;
    float *dprobs = NULL, *dsim = NULL, *dsims = NULL;
    rand_bf16(c, qf, qb, nq, 1.0f);
    rand_bf16(c, kf, kb, nk, 1.0f);
    rand_bf16(c, pqf, pqb, (int64_t)N * qd, 1.0f);
    rand_bf16(c, pkf, pkb, (int64_t)N * kvd, 1.0f);
    for (int r = 0; r < rows; r++) /* row row0 + k's key at slot 2 (N - 1 - k) + 1: scattered, reversed */
        slot[r] = r >= row0 && r < row0 + N ? 2 * (N - 1 - (r - row0)) + 1 : 0;
    for (int j = 0; j < N; j++) /* position j at row (j + 7) mod N: rows in another order than positions */
        map[j] = (j + 7) % N;
    for (int j = 0; j < N; j++)
        elig[j] = (uint8_t)(j % 3 != 1), qry[j] = (uint8_t)(j % 4 == 0);
    for (int k = 0; k < nwin + ntrack; k++)
        sel[k] = k < nwin ? (7 * k + 1) % N : (5 * k + 2) % N, qry[sel[k]] = 1;
    const int cur = nwin + ntrack;
    for (int s = 0; s < nwin + 2 * ntrack; s++)
        for (int h = 0; h < H; h++) {
            const int pos = sel[s < cur ? s : s - ntrack], kvh = h / (H / Hkv);
            const float *q = s < cur ? qf + (int64_t)(row0 + map[pos]) * width + h * d
                                     : pqf + ((int64_t)pos * H + h) * d;
            double *row = p + ((int64_t)s * H + h) * N, mx = -INFINITY, sum = 0;
            for (int j = 0; j < N; j++) {
                const float *k = s < cur && (fired || qry[j]) ? kf + (int64_t)slot[row0 + map[j]] * kvd + kvh * d
                                                              : pkf + ((int64_t)j * Hkv + kvh) * d;
                double dot = 0;
                for (int e = 0; e < d; e++)
                    dot += (double)q[e] * k[e];
                row[j] = dot / sqrt((double)d);
                mx = fmax(mx, row[j]);
            }
            for (int j = 0; j < N; j++)
                sum += row[j] = exp(row[j] - mx);
            for (int j = 0; j < N; j++)
                row[j] /= sum;
        }
    double best = -1, sim = 0;
    for (int j = 0; j < N; j++) {
        for (int w = 0; w < nwin; w++)
            for (int h = 0; h < H; h++)
                score[j] += p[((int64_t)w * H + h) * N + j];
        if (elig[j])
            best = fmax(best, score[j]);
        for (int t = 0; t < ntrack; t++) {
            double dot = 0, na = 0, nb = 0;
            for (int h = 0; h < H; h++) {
                const double x = p[((int64_t)(nwin + t) * H + h) * N + j], y = p[((int64_t)(cur + t) * H + h) * N + j];
                dot += x * y, na += x * x, nb += y * y;
            }
            sim += dot / sqrt(na * nb);
        }
    }
    sim /= (double)ntrack * N;
    dq = dev_copy(qb, 2 * nq), dk = dev_copy(kb, 2 * nk), dpq = dev_copy(pqb, 2 * (size_t)N * qd);
    dpk = dev_copy(pkb, 2 * (size_t)N * kvd), dslot = dev_copy(slot, 4 * (size_t)rows);
    dsel = dev_copy(sel, sizeof sel), delig = dev_copy(elig, (size_t)N), dmap = dev_copy(map, 4 * (size_t)N);
    dqry = dev_copy(qry, (size_t)N), dsims = dev_copy(sims, sizeof sims);
    CK(cudaMalloc((void **)&dwq, 2 * (size_t)N * qd));
    CK(cudaMalloc((void **)&dwk, 2 * (size_t)N * kvd));
    CK(cudaMalloc((void **)&dprobs, 4 * (size_t)(nwin + 2 * ntrack) * H * N));
    CK(cudaMalloc((void **)&dtrack, 4));
    CK(cudaMalloc((void **)&dsim, 4));
    const struct k_drift_args a = {
        .q = dq, .k_pool = dk, .slot = dslot, .rowmap = dmap, .prev_q_read = dpq, .prev_k_read = dpk,
        .prev_q_write = dwq,
        .prev_k_write = dwk, .sel = dsel, .eligible = delig, .queried = dqry, .sims = dsims, .probs = dprobs,
        .out_track = dtrack, .out_sim = dsim, .row0 = row0, .N = N, .nwin = nwin, .ntrack = ntrack, .q_stride = width,
        .k_stride = kvd, .H = H, .Hkv = Hkv, .d = d, .layer = 2, .scale = 1.0f / sqrtf((float)d), .gamma = 0.9f};
    KK(k_drift(&a, NULL));
    CK(cudaMemcpy(&gtrack, dtrack, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&gsim, dsim, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(kq, dwq, 2 * (size_t)N * qd, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(kk, dwk, 2 * (size_t)N * kvd, cudaMemcpyDeviceToHost));
    int kept = 0;
    for (int j = 0; j < N; j++) {
        const bool fresh = fired || qry[j];
        kept += memcmp(kq + (int64_t)j * qd, fresh ? qb + (int64_t)(row0 + map[j]) * width : pqb + (int64_t)j * qd,
                       2 * (size_t)qd) != 0;
        kept += memcmp(kk + (int64_t)j * kvd, fresh ? kb + (int64_t)slot[row0 + map[j]] * kvd : pkb + (int64_t)j * kvd,
                       2 * (size_t)kvd) != 0;
    }
    char what[96];
    snprintf(what, sizeof what, "drift: tracked key's score below the best (H %d, N %d%s)", H, N,
             fired ? ", fired" : "");
    report(c, what, gtrack >= 0 && gtrack < N && elig[gtrack] ? (best - score[gtrack]) / best : INFINITY, 1e-5);
    snprintf(what, sizeof what, "drift: tracked tokens' similarity (%d of them)", ntrack);
    report(c, what, fabs(gsim - sim) / sim, 1e-4);
    snprintf(what, sizeof what, "drift: queries and keys kept (positions that differ)");
    report(c, what, kept, 0);
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dpq), cudaFree(dpk), cudaFree(dwq), cudaFree(dwk), cudaFree(dslot);
    cudaFree(dsel), cudaFree(dmap), cudaFree(delig), cudaFree(dqry), cudaFree(dsims), cudaFree(dprobs);
    cudaFree(dtrack), cudaFree(dsim);
    free(qf), free(kf), free(pqf), free(pkf), free(qb), free(kb), free(pqb), free(pkb), free(kq), free(kk);
    free(slot), free(map), free(elig), free(qry), free(p), free(score);
}

/* Whether the reference's sum v of a block that the engine's pattern keeps or drops where the
 * reference does the opposite is a near tie with its pass's boundary: within 1e-4 of the weakest block
 * the reference keeps, or of the strongest it drops (rounding decides such ties). */
static bool sparsed_near_tie(const double *imp, int from, int n, int top, double v)
{
    double in = INFINITY, out = -INFINITY; /* the top-th largest and the one after it */
    for (int b = from; b < n; b++) {
        int rank = 0;
        for (int j = from; j < n; j++)
            rank += imp[j] > imp[b] || (imp[j] == imp[b] && j < b);
        if (rank == top - 1)
            in = imp[b];
        if (rank == top)
            out = imp[b];
    }
    return fabs(v - in) <= 1e-4 * in || fabs(v - out) <= 1e-4 * in;
}

/* The engine's pattern (gcnt, glist, gimp: k_sparsed_pattern's, H heads of nb blocks in storage of
 * qblocks and stride) against the reference's (rimp, rkeep): the engine's as 0/1 into gkeep, its sums'
 * largest relative error, the blocks kept or dropped against the reference outside near ties (bad) and
 * within them (ties), and lists out of range or order. */
static void sparsed_compare(const int32_t *gcnt, const int16_t *glist, const float *gimp, const double *rimp,
                            const uint8_t *rkeep, uint8_t *gkeep, int H, int nb, int last, int qblocks, int stride,
                            double select, double *imp_err, int *bad, int *ties, int *order)
{
    const int64_t ne = (int64_t)H * qblocks;
    const int ng = nb - last, top1 = TS_MIN(nb, (int)(nb * select) + 1);
    const int top2 = ng > 0 ? TS_MIN(ng, (int)(ng * select) + 1) : 0;
    for (int h = 0; h < H; h++)
        for (int q = 0; q < nb; q++) {
            const int64_t e = (int64_t)h * qblocks + q;
            for (int j = 0; j < gcnt[e]; j++) {
                const int k = glist[e * stride + j];
                *order += k < 0 || k >= nb || (j > 0 && k <= glist[e * stride + j - 1]);
                if (k >= 0 && k < nb)
                    gkeep[((size_t)h * nb + q) * nb + k] = 1;
            }
            for (int pass = 0; pass < 2; pass++) {
                const double *r = rimp + (((size_t)pass * H + h) * nb + q) * nb;
                const float *g = gimp + ((size_t)pass * ne + e) * stride;
                for (int k = pass ? last : 0; k < nb; k++)
                    *imp_err = fmax(*imp_err, fabs(g[k] - r[k]) / fmax(r[k], 1e-6));
            }
            for (int k = 0; k < nb; k++) {
                const size_t i = ((size_t)h * nb + q) * nb + k;
                if (gkeep[i] == rkeep[i])
                    continue;
                const int pass = k >= last;
                const double *r = rimp + (((size_t)pass * H + h) * nb + q) * nb;
                const bool tie = pass ? sparsed_near_tie(r, last, nb, top2, r[k]) : sparsed_near_tie(r, 0, nb, top1, r[k]);
                *ties += tie, *bad += !tie;
            }
        }
}

/* SparseD's pattern (k_sparsed_pattern) and the attention by it (k_attention with kb_*) against the
 * double-precision reference (ref_sparsed_pattern, ref_attention_blocks): a dense segment of 40 rows,
 * then one of N rows over its N keys, at permuted pages of pt tokens. The pattern's sums within 1e-3
 * of the reference's; its kept blocks the reference's but for near ties (sparsed_near_tie); the
 * attention by the engine's pattern against the reference by the same, with `splits` key splits
 * forced (0: the rules'); where select keeps every block, against dense attention too. */
static void check_sparsed(struct checker *c, int H, int Hkv, int d, int N, int block, int prompt, double select,
                          int pt, int splits)
{
    const int nseg = 2, q_len[2] = {40, N}, q_start[2] = {0, 40}, T = 40 + N, qs = H * d, kvd = Hkv * d;
    const int nb = (N + block - 1) / block, last = TS_MIN((prompt + block - 1) / block, nb - 1);
    const int qblocks = nb + 1, stride = nb + 2; /* the storage's, wider than the pattern */
    int key_len[2] = {40, N}, kvc[2] = {0, 0}, page_off[2] = {0, (40 + pt - 1) / pt};
    const int npages = page_off[1] + (N + pt - 1) / pt, slots = npages * pt, base[2] = {-1, 0};
    int32_t *pages = xmalloc(4 * (size_t)npages), tiles[2 * 256];
    for (int i = 0; i < npages; i++)
        pages[i] = (int32_t)((i * 7 + 3) % npages);
    int long_tiles, long_rows, wg_tiles;
    const int ntiles = attn_tiles(nseg, q_len, tiles, &long_tiles, &long_rows, &wg_tiles);
    const int64_t nq = (int64_t)T * qs, np = (int64_t)slots * kvd, ne = (int64_t)H * qblocks;
    float *qf = xmalloc(4 * nq), *kf = xmalloc(4 * np), *vf = xmalloc(4 * np), *of = xmalloc(4 * nq);
    float *rf = xmalloc(4 * nq), *df = xmalloc(4 * nq), *ks = xmalloc(4 * (size_t)N * kvd);
    float *vs = xmalloc(4 * (size_t)N * kvd), *gimp = xmalloc(4 * (size_t)(2 * ne * stride));
    bf16_t *qb = xmalloc(2 * nq), *kb = xmalloc(2 * np), *vb = xmalloc(2 * np), *ob = xmalloc(2 * nq);
    double *rimp = xmalloc(8 * (size_t)(2 * H * nb * nb));
    uint8_t *rkeep = xmalloc((size_t)(H * nb * nb)), *gkeep = xcalloc((size_t)(H * nb * nb), 1);
    int32_t *gcnt = xmalloc(4 * (size_t)ne);
    int16_t *glist = xmalloc(2 * (size_t)(ne * stride));
    bf16_t *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL;
    int32_t *dmeta[8] = {0}, *dcnt = NULL;
    int16_t *dlist = NULL;
    float *dpart = NULL, *dimp = NULL;
    void *ws = NULL;
    rand_bf16(c, qf, qb, nq, 1.5f);
    rand_bf16(c, kf, kb, np, 1.5f);
    rand_bf16(c, vf, vb, np, 1.0f);
    dq = dev_copy(qb, 2 * nq), dk = dev_copy(kb, 2 * np), dv = dev_copy(vb, 2 * np);
    const int32_t *hm[8] = {q_start, q_len, key_len, kvc, page_off, pages, tiles, base};
    const size_t hs[8] = {8, 8, 8, 8, 8, 4 * (size_t)npages, 8 * (size_t)ntiles, 8};
    for (int i = 0; i < 8; i++)
        dmeta[i] = dev_copy(hm[i], hs[i]);
    CK(cudaMalloc((void **)&dout, 2 * nq));
    CK(cudaMalloc((void **)&dcnt, 4 * (size_t)ne));
    CK(cudaMalloc((void **)&dlist, 2 * (size_t)(ne * stride)));
    CK(cudaMalloc((void **)&dimp, 4 * (size_t)(2 * ne * stride)));
    CK(cudaMalloc((void **)&dpart, (size_t)k_sparsed_part_bytes(N, H)));
    CK(cudaMalloc(&ws, 64 << 20));
    struct k_attn_args a = {.q = dq, .q_stride = qs, .k_pool = dk, .v_pool = dv, .o = dout, .q_start = dmeta[0],
                            .q_len = dmeta[1], .key_len = dmeta[2], .kv_cached = dmeta[3], .page_off = dmeta[4],
                            .pages = dmeta[5], .tiles = dmeta[6], .num_tiles = ntiles, .H = H, .Hkv = Hkv, .d = d,
                            .page_tokens = pt, .page_shift = __builtin_ctz((unsigned)pt),
                            .scale = 1.0f / sqrtf((float)d), .ws = ws, .ws_bytes = 64 << 20, .T = T,
                            .max_key_len = N, .impl = 2, .splits = splits};
    const struct k_sparsed_args sa = {.at = &a, .seg = 1, .N = N, .block = block, .last = last, .qblocks = qblocks,
                                      .stride = stride, .select = select, .scale = 1.0f / sqrtf((float)H),
                                      .part = dpart, .imp = dimp, .cnt = dcnt, .list = dlist};
    KK(k_sparsed_pattern(&sa, NULL));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(gcnt, dcnt, 4 * (size_t)ne, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(glist, dlist, 2 * (size_t)(ne * stride), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gimp, dimp, 4 * (size_t)(2 * ne * stride), cudaMemcpyDeviceToHost));
    for (int j = 0; j < N; j++) { /* the long segment's keys, gathered */
        const int slot = pages[page_off[1] + j / pt] * pt + j % pt;
        memcpy(ks + (size_t)j * kvd, kf + (size_t)slot * kvd, 4 * (size_t)kvd);
        memcpy(vs + (size_t)j * kvd, vf + (size_t)slot * kvd, 4 * (size_t)kvd);
    }
    ref_sparsed_pattern(qf + (size_t)q_start[1] * qs, qs, ks, N, H, Hkv, d, block, last, select,
                        1.0f / sqrtf((float)H), rimp, rkeep);
    double imp_err = 0;
    int bad = 0, ties = 0, order = 0;
    sparsed_compare(gcnt, glist, gimp, rimp, rkeep, gkeep, H, nb, last, qblocks, stride, select, &imp_err, &bad, &ties,
                    &order);
    char what[160];
    snprintf(what, sizeof what, "sparsed: H %d Hkv %d d %d, N %d, blocks of %d, select %.2f: pattern's sums", H, Hkv, d,
             N, block, select);
    report(c, what, imp_err, 1e-3);
    snprintf(what, sizeof what, "sparsed: N %d: kept blocks not the reference's (%d near ties), out of order", N, ties);
    report(c, what, bad + order, 0);
    /* the attention by the engine's pattern (the dense segment beside it) */
    {
        float *k0 = xmalloc(4 * (size_t)40 * kvd), *v0 = xmalloc(4 * (size_t)40 * kvd);
        for (int j = 0; j < 40; j++) {
            const int slot = pages[j / pt] * pt + j % pt;
            memcpy(k0 + (size_t)j * kvd, kf + (size_t)slot * kvd, 4 * (size_t)kvd);
            memcpy(v0 + (size_t)j * kvd, vf + (size_t)slot * kvd, 4 * (size_t)kvd);
        }
        ref_attention(rf, qf, qs, k0, v0, 40, 40, 0, H, Hkv, d, 0, 1.0f / sqrtf((float)d));
        memcpy(df, rf, 4 * (size_t)40 * qs);
        free(k0), free(v0);
    }
    ref_attention_blocks(rf + (size_t)40 * qs, qf + (size_t)40 * qs, qs, ks, vs, N, H, Hkv, d, block, gkeep,
                         1.0f / sqrtf((float)d));
    ref_attention(df + (size_t)40 * qs, qf + (size_t)40 * qs, qs, ks, vs, N, N, 0, H, Hkv, d, 0, 1.0f / sqrtf((float)d));
    a.kb_base = dmeta[7], a.kb_cnt = dcnt, a.kb_list = dlist;
    a.kb_block = block, a.kb_qblocks = qblocks, a.kb_stride = stride;
    /* the mma.sync kernel; the wgmma kernel alone (blocks of a multiple of 128 rows, head dim 128); auto */
    for (int impl = 0; impl <= 2; impl++) {
        static const char *const kernel[3] = {"mma.sync", "wgmma", "auto"};
        if (impl == 1 && (block % 128 || d != 128))
            continue;
        a.impl = impl;
        const int ran = run_attention(c, &a, impl == 1, ob, of, nq);
        if (ran < 0)
            goto done;
        if (ran > 0) {
            fprintf(c->out, "  %-58s skipped: no sm_90a device\n", "sparsed: attention by the pattern, wgmma");
            continue;
        }
        snprintf(what, sizeof what, "sparsed: attention by the pattern (%s, %s)", kernel[impl],
                 splits > 0 ? "key splits forced" : "the rules' splits");
        report(c, what, check_rel_err(of, rf, nq), 2e-2);
        if (TS_MIN(nb, (int)(nb * select) + 1) >= nb) {
            snprintf(what, sizeof what, "sparsed: every block kept (select %.2f, %s) against dense", select, kernel[impl]);
            report(c, what, check_rel_err(of, df, nq), 2e-2);
        }
    }
done:
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(ws), cudaFree(dcnt), cudaFree(dlist);
    cudaFree(dimp), cudaFree(dpart);
    for (int i = 0; i < 8; i++)
        cudaFree(dmeta[i]);
    free(pages), free(qf), free(kf), free(vf), free(of), free(rf), free(df), free(ks), free(vs), free(gimp);
    free(qb), free(kb), free(vb), free(ob), free(rimp), free(rkeep), free(gkeep), free(gcnt), free(glist);
}

/* SparseD's cases: LLaDA's heads at its blocks of 128 (the last query tile of 20 rows, on the
 * key-split warp pairs); GQA at head dim 64 in blocks of 64 over one-token pages, three key splits
 * forced; every block kept (select 1); blocks of 192 (three 64-key tiles a block) */
static void check_sparsed_all(struct checker *c)
{
    check_sparsed(c, 32, 32, 128, 660, 128, 400, 0.3, 16, 0);
    check_sparsed(c, 8, 2, 64, 1000, 64, 700, 0.25, 1, 3);
    check_sparsed(c, 8, 8, 128, 530, 128, 300, 1.0, 16, 0);
    check_sparsed(c, 4, 4, 128, 300, 192, 100, 0.5, 16, 0);
}

/* d2Cache's attention rollout (k_rollout_layer, k_rollout_importance) against a double-precision oracle:
 * two layers of N rows (queries and keys of their own, keys at scattered slots), each layer's mix
 * (A + I) / 2 with A the heads' mean attention, and the rollout's column sums 1^T M_1 M_0. */
static void check_rollout(struct checker *c, int H, int Hkv, int d, int N)
{
    const int row0 = 3, rows = row0 + N + 2, width = (H + 2 * Hkv) * d, kvd = Hkv * d;
    const int64_t nq = (int64_t)rows * width, nk = (int64_t)(2 * N + 5) * kvd, NN = (int64_t)N * N;
    float *qf[2], *kf[2], *mix = xmalloc(4 * (size_t)(2 * NN)), imp[K_ROLLOUT_MAX_N];
    bf16_t *qb[2], *kb[2], *dq[2] = {NULL, NULL}, *dk[2] = {NULL, NULL};
    int32_t *slot = xmalloc(4 * (size_t)rows), *dslot = NULL;
    double *M = xmalloc(8 * (size_t)(2 * NN)), *v = xmalloc(8 * (size_t)N), *w = xmalloc(8 * (size_t)N);
    float *dmix = NULL, *dimp = NULL, *dtmp = NULL;
    for (int r = 0; r < rows; r++) /* row row0 + k's key at slot 2 (N - 1 - k) + 1: scattered, reversed */
        slot[r] = r >= row0 && r < row0 + N ? 2 * (N - 1 - (r - row0)) + 1 : 0;
    for (int l = 0; l < 2; l++) {
        qf[l] = xmalloc(4 * nq), kf[l] = xmalloc(4 * nk), qb[l] = xmalloc(2 * nq), kb[l] = xmalloc(2 * nk);
        rand_bf16(c, qf[l], qb[l], nq, 1.0f);
        rand_bf16(c, kf[l], kb[l], nk, 1.0f);
        double *Ml = M + l * NN, *p = v; /* (v as a row's scratch) */
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++)
                Ml[i * N + j] = i == j ? 0.5 : 0;
            for (int h = 0; h < H; h++) {
                const float *q = qf[l] + (int64_t)(row0 + i) * width + h * d;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < N; j++) {
                    const float *k = kf[l] + (int64_t)slot[row0 + j] * kvd + h / (H / Hkv) * d;
                    double dot = 0;
                    for (int e = 0; e < d; e++)
                        dot += (double)q[e] * k[e];
                    p[j] = dot / sqrt((double)d);
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j < N; j++)
                    sum += p[j] = exp(p[j] - mx);
                for (int j = 0; j < N; j++)
                    Ml[i * N + j] += 0.5 * p[j] / sum / H;
            }
        }
    }
    for (int j = 0; j < N; j++) { /* 1^T M_1, then times M_0 */
        w[j] = 0;
        for (int i = 0; i < N; i++)
            w[j] += M[NN + (int64_t)i * N + j];
    }
    for (int j = 0; j < N; j++) {
        v[j] = 0;
        for (int i = 0; i < N; i++)
            v[j] += w[i] * M[(int64_t)i * N + j];
    }
    for (int l = 0; l < 2; l++)
        dq[l] = dev_copy(qb[l], 2 * nq), dk[l] = dev_copy(kb[l], 2 * nk);
    dslot = dev_copy(slot, 4 * (size_t)rows);
    CK(cudaMalloc((void **)&dmix, 4 * (size_t)(2 * NN)));
    CK(cudaMalloc((void **)&dimp, 4 * (size_t)N));
    CK(cudaMalloc((void **)&dtmp, 4 * (size_t)N));
    for (int l = 0; l < 2; l++) {
        const struct k_rollout_args a = {.q = dq[l], .k_pool = dk[l], .slot = dslot, .mix = dmix, .importance = dimp,
                                         .scratch = dtmp, .row0 = row0, .N = N, .q_stride = width, .k_stride = kvd,
                                         .H = H, .Hkv = Hkv, .d = d, .layer = l, .layers = 2,
                                         .scale = 1.0f / sqrtf((float)d)};
        KK(k_rollout_layer(&a, NULL));
        if (l == 1)
            KK(k_rollout_importance(&a, NULL));
    }
    CK(cudaMemcpy(mix, dmix, 4 * (size_t)(2 * NN), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(imp, dimp, 4 * (size_t)N, cudaMemcpyDeviceToHost));
    double em = 0, ei = 0;
    for (int64_t k = 0; k < 2 * NN; k++)
        em = fmax(em, fabs(mix[k] - M[k]));
    for (int j = 0; j < N; j++)
        ei = fmax(ei, fabs(imp[j] - v[j]) / v[j]);
    char what[96];
    snprintf(what, sizeof what, "rollout: each layer's mix (H %d, Hkv %d, N %d), largest difference", H, Hkv, N);
    report(c, what, em, 1e-5);
    snprintf(what, sizeof what, "rollout: the positions' importance, largest relative difference");
    report(c, what, ei, 1e-4);
done:
    for (int l = 0; l < 2; l++)
        cudaFree(dq[l]), cudaFree(dk[l]), free(qf[l]), free(kf[l]), free(qb[l]), free(kb[l]);
    cudaFree(dslot), cudaFree(dmix), cudaFree(dimp), cudaFree(dtmp);
    free(mix), free(slot), free(M), free(v), free(w);
}

/* The unmasking kernel against unmask_block: blocks of 1 to K_UNMASK_MAX_ROWS rows, confidences
 * on a grid of 1/64 (ties) with NaNs, about 70% of the rows masked, under each rule, and each
 * threshold rule again with a threshold of each block's own (IterSmooth's decaying one). */
static void check_unmask_kernel(struct checker *c)
{
    static const int sizes[] = {1, 7, 32, 64, 333, K_UNMASK_MAX_ROWS};
    static const char *const rules[] = {"topk:1", "topk:5", "threshold:0.5", "threshold:0.99", "hierarchical:0.9,0.4",
                                        "hierarchical:0.5,0.2"};
    const int n = (int)TS_ARRAY_LEN(sizes);
    int32_t groups[2 * TS_ARRAY_LEN(sizes)], R = 0;
    for (int g = 0; g < n; g++) {
        groups[2 * g] = R;
        groups[2 * g + 1] = sizes[g];
        R += sizes[g];
    }
    int32_t *tok = xmalloc(4 * (size_t)R), *masked = xmalloc(4 * (size_t)R), *commit = xmalloc(4 * (size_t)R);
    float *conf = xmalloc(4 * (size_t)R);
    uint8_t *mk = xmalloc((size_t)R), *pick = xmalloc((size_t)R);
    uint64_t h = c->seed ^ 0x5eed;
    for (int32_t i = 0; i < R; i++) {
        h = ts_mix64(h);
        tok[i] = (int32_t)(h % 50000);
        conf[i] = h % 97 == 0 ? NAN : (float)((h >> 20) % 65) / 64.0f;
        masked[i] = mk[i] = (h >> 8) % 10 < 7;
    }
    static const float group_tau[TS_ARRAY_LEN(sizes)] = {0.2f, 0.9f, 0.5f, 1.0f, 0.34375f, 0.75f};
    int32_t *dg = dev_copy(groups, sizeof groups), *dt = dev_copy(tok, 4 * (size_t)R);
    int32_t *dm = dev_copy(masked, 4 * (size_t)R), *dcommit = NULL, *dcount = NULL;
    float *dc = dev_copy(conf, 4 * (size_t)R), *dtau = dev_copy(group_tau, sizeof group_tau);
    CK(cudaMalloc((void **)&dcommit, 4 * (size_t)R));
    CK(cudaMalloc((void **)&dcount, sizeof groups));
    for (size_t k = 0; k < 2 * TS_ARRAY_LEN(rules); k++) {
        const bool own_tau = k >= TS_ARRAY_LEN(rules); /* the second round: each block's own threshold */
        const char *rule = rules[k % TS_ARRAY_LEN(rules)];
        struct unmask_rule u;
        struct ts_err err;
        if (unmask_parse(rule, &u, &err)) {
            fail_msg(c, rule, err.msg);
            continue;
        }
        if (own_tau && u.kind == UNMASK_TOPK)
            continue;
        const k_unmask_args a = {.groups = dg, .tok = dt, .masked = dm, .conf = dc, .commit = dcommit, .count = dcount,
                                 .num_groups = n, .kind = u.kind, .k = u.k, .tau = u.tau, .low = u.low,
                                 .group_tau = own_tau ? dtau : NULL};
        int32_t count[TS_ARRAY_LEN(sizes)];
        KK(k_unmask(&a, NULL));
        CK(cudaMemcpy(commit, dcommit, 4 * (size_t)R, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(count, dcount, sizeof count, cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (int g = 0; g < n; g++) {
            const int32_t f = groups[2 * g];
            u.tau = own_tau ? group_tau[g] : u.tau;
            wrong += unmask_block(&u, conf + f, mk + f, sizes[g], pick + f) != count[g];
            for (int32_t i = f; i < f + sizes[g]; i++)
                wrong += commit[i] != (pick[i] ? tok[i] : -1);
        }
        char what[96];
        snprintf(what, sizeof what, "unmask %s over %d blocks%s (rows, counts that differ)", rule, n,
                 own_tau ? ", a threshold each" : "");
        report(c, what, wrong, 0);
    }
done:
    cudaFree(dg), cudaFree(dt), cudaFree(dm), cudaFree(dc), cudaFree(dcommit), cudaFree(dcount), cudaFree(dtau);
    free(tok), free(masked), free(commit), free(conf), free(mk), free(pick);
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Credit decoding's fusion kernel against credit_fuse over one LM-head chunk (its rows from row 3 of
 * the step's): credit rows with 0 to CREDIT_MAX credits (the tokens the row's plain argmax among
 * them), every combination of flags, rows without credits. */
static void check_credit_kernel(struct checker *c, int V)
{
    enum { ROWS = 24, BASE = 3, R = ROWS + BASE };
    const struct unmask_rule u = {.kind = UNMASK_CREDIT, .tau = 0.9f, .alpha = 0.7f, .beta = 0.8f, .gamma = 0.2f};
    const int64_t n = (int64_t)ROWS * V;
    float *lf = xmalloc(4 * (size_t)n), maxv[R], conf[R], gmax[R], gconf[R];
    bf16_t *lb = xmalloc(2 * (size_t)n);
    int32_t tok[R], gtok[R], state[R], flags[R], in_tok[ROWS * CREDIT_MAX], in_n[ROWS], out_tok[ROWS * CREDIT_MAX],
        out_n[ROWS];
    float in_val[ROWS * CREDIT_MAX], out_val[ROWS * CREDIT_MAX];
    struct credit_row st[ROWS];
    rand_bf16(c, lf, lb, n, 6.0f); /* lf: the bf16 values, widened */
    ref_argmax_conf(lf, ROWS, V, tok + BASE, maxv + BASE, conf + BASE);
    uint64_t h = c->seed ^ 0xc7ed;
    for (int i = 0; i < BASE; i++)
        tok[i] = 0, maxv[i] = 0, conf[i] = 1, state[i] = -1, flags[i] = 0;
    for (int i = 0; i < ROWS; i++) {
        h = ts_mix64(h);
        const int row = BASE + i;
        state[row] = i % 7 == 6 ? -1 : ROWS - 1 - i; /* credit rows in another order than logit rows */
        flags[row] = (int32_t)(h % 8 == 7 ? 0 : h % 8);
        const int s = ROWS - 1 - i;
        st[s].n = (int32_t)(i * 3 % (CREDIT_MAX + 1));
        for (int j = 0; j < st[s].n; j++) {
            st[s].tok[j] = j == 0 && i % 2 ? tok[row] : (int32_t)((h >> 16) % (uint64_t)V + (uint64_t)j) % V;
            st[s].val[j] = (float)((h >> (j % 40)) % 1000) / 500.0f;
        }
        in_n[s] = st[s].n;
        for (int j = 0; j < CREDIT_MAX; j++) {
            in_tok[s * CREDIT_MAX + j] = j < st[s].n ? st[s].tok[j] : 0;
            in_val[s * CREDIT_MAX + j] = j < st[s].n ? st[s].val[j] : 0;
        }
    }
    memcpy(gtok, tok, sizeof tok), memcpy(gmax, maxv, sizeof maxv), memcpy(gconf, conf, sizeof conf);
    for (int row = BASE; row < R; row++)
        if (state[row] >= 0)
            credit_fuse(&u, &st[state[row]], (uint32_t)flags[row], lf + (size_t)(row - BASE) * V, V, &tok[row],
                        &maxv[row], &conf[row]);
    bf16_t *dl = dev_copy(lb, 2 * (size_t)n);
    int32_t *dt = dev_copy(gtok, sizeof gtok), *ds = dev_copy(state, sizeof state), *df = dev_copy(flags, sizeof flags);
    int32_t *dit = dev_copy(in_tok, sizeof in_tok), *din = dev_copy(in_n, sizeof in_n), *dot = NULL, *don = NULL;
    float *dm = dev_copy(gmax, sizeof gmax), *dc = dev_copy(gconf, sizeof gconf), *div = dev_copy(in_val, sizeof in_val);
    float *dov = NULL;
    CK(cudaMalloc((void **)&dot, sizeof out_tok));
    CK(cudaMalloc((void **)&don, sizeof out_n));
    CK(cudaMalloc((void **)&dov, sizeof out_val));
    const k_credit_args a = {dl, ROWS, V, BASE, dt, dm, dc, ds, df, dit, din, div, dot, don, dov, u.alpha, u.beta, u.gamma};
    KK(k_credit_fuse(&a, NULL));
    CK(cudaMemcpy(gtok, dt, sizeof gtok, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gconf, dc, sizeof gconf, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gmax, dm, sizeof gmax, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out_tok, dot, sizeof out_tok, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out_n, don, sizeof out_n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out_val, dov, sizeof out_val, cudaMemcpyDeviceToHost));
    int wrong = 0;
    double worst = 0;
    for (int row = 0; row < R; row++) {
        wrong += gtok[row] != tok[row];
        worst = fmax(worst, fabs(gconf[row] - conf[row]) / conf[row] + fabs(gmax[row] - maxv[row]) / (1 + fabs(maxv[row])));
        const int s = state[row];
        if (s < 0)
            continue;
        wrong += out_n[s] != st[s].n;
        for (int j = 0; j < st[s].n && j < out_n[s]; j++) {
            wrong += out_tok[s * CREDIT_MAX + j] != st[s].tok[j];
            worst = fmax(worst, fabs(out_val[s * CREDIT_MAX + j] - st[s].val[j]) / (1e-3 + st[s].val[j]));
        }
    }
    char what[96];
    snprintf(what, sizeof what, "credit fusion over V = %d (argmax, credits that differ)", V);
    report(c, what, wrong, 0);
    snprintf(what, sizeof what, "credit fusion over V = %d: confidence, max, credits", V);
    report(c, what, worst, 1e-4);
done:
    cudaFree(dl), cudaFree(dt), cudaFree(ds), cudaFree(df), cudaFree(dit), cudaFree(din), cudaFree(dot);
    cudaFree(don), cudaFree(dm), cudaFree(dc), cudaFree(div), cudaFree(dov);
    free(lf), free(lb);
}

/* One generation step's decisions: the GPU's beside unmask_block over the engine's own outputs
 * (*exact: rows and counts that differ) and over the reference's (*parted: rows decided otherwise);
 * taus (NULL: the rule's) each block's threshold. */
static void gen_decisions(const struct unmask_rule *rule, const int32_t *groups, int32_t ng, const int32_t *masked,
                          const float *taus, const struct eng_out *out, const float *rconf, const int32_t *commit,
                          const int32_t *count, int64_t *exact, int64_t *parted, int64_t *rows)
{
    uint8_t mk[UNMASK_MAX_ROWS], pick[UNMASK_MAX_ROWS], rpick[UNMASK_MAX_ROWS];
    for (int32_t g = 0; g < ng; g++) {
        const int32_t f = groups[2 * g], n = groups[2 * g + 1];
        struct unmask_rule own = *rule; /* IterSmooth: the block's own threshold */
        own.tau = taus ? taus[g] : own.tau;
        const struct unmask_rule *u = &own;
        for (int32_t i = 0; i < n; i++)
            mk[i] = (uint8_t)masked[f + i];
        *exact += unmask_block(u, out->conf + f, mk, n, pick) != count[g];
        unmask_block(u, rconf + f, mk, n, rpick);
        for (int32_t i = 0; i < n; i++) {
            *exact += commit[f + i] != (pick[i] ? out->tok[f + i] : -1);
            *parted += pick[i] != rpick[i];
        }
        *rows += n;
    }
}

/* Credit decoding on the reference: its logits from its final hidden rows [R, hidden] by the LM head,
 * its own credits (credits[], by the step's credit rows and flags) fused into tok, maxv, conf. */
static void gen_ref_credit(struct eng_ref *r, const struct model_cfg *m, const struct unmask_rule *u,
                           const float *hidden, int R, const int32_t *state, const int32_t *flags,
                           struct credit_row *credits, float *logits, int32_t *tok, float *maxv, float *conf)
{
    ref_linear(logits, hidden, eng_ref_weight(r, W_LM, -1), R, m->hidden, m->vocab);
    for (int i = 0; i < R; i++)
        if (state[i] >= 0)
            credit_fuse(u, &credits[state[i]], (uint32_t)flags[i], logits + (size_t)i * m->vocab, m->vocab, &tok[i],
                        &maxv[i], &conf[i]);
}

/* A generation checked step by step (check_generation): the engine and the reference over the same
 * tokens and plan. */
enum { GEN_MOST = 3 * (40 + 64) }; /* a step's logit rows at most: the whole sequences */
struct gen_check {
    struct eng *e;
    struct eng_ref *r;
    struct eng_plan p;
    struct eng_kv kv;
    struct eng_tokens tk;
    struct unmask_rule u;
    int32_t rtok[GEN_MOST], cstate[GEN_MOST], cflags[GEN_MOST], cand[GEN_MOST], picks[3 * 32];
    float rmax[GEN_MOST], rconf[GEN_MOST];
    struct credit_row credits[96]; /* the reference's own, 3 requests x 32 positions */
    float *href, *logits;
    int64_t argmax_wrong, logit_rows;
    double hidden_err; /* the worst step's final hidden rows, normwise */
    /* IterSmooth: the logit rows' soft rows, the blocks' thresholds; the reference's own soft rows
     * [3 x 64, hidden], a step's additions to its embeddings, the engine's soft rows read back */
    int32_t slot[GEN_MOST];
    float taus[3];
    float *rsoft, *add, *gsoft;
    double soft_err;   /* the worst step's soft rows, normwise */
    int64_t kept_parted, kept; /* FOCUS's kept rows over the whole generation */
};

/* What check_generation found: exact (the GPU's decisions other than the host rule's over the
 * engine's outputs), parted (the reference's own decisions), its argmax, its kept rows, the ending. */
static void gen_check_report(struct checker *c, const struct gen *g, const struct gen_check *gc, int kind,
                             int attn_block, const char *policy, int64_t exact, double parted)
{
    char what[128];
    snprintf(what, sizeof what, "generation %s%s%s, policy %s: %lld steps, TPF %.2f (rows, counts off)", unmask_name(kind),
             g->c.smooth.on ? " + IterSmooth" : "", attn_block ? " block-causal" : "", policy, (long long)g->steps,
             gen_tpf(g));
    report(c, what, (double)exact, 0);
    report(c, "generation: rows the reference decides otherwise (fraction)", parted, 0.10);
    report(c, "generation: argmax differs from the reference (fraction)",
           gc->logit_rows ? (double)gc->argmax_wrong / gc->logit_rows : 1, 0.10);
    report(c, "generation: final hidden rows (the worst step's, normwise)", gc->hidden_err, 3e-2);
    if (g->c.smooth.on)
        report(c, "generation: IterSmooth's soft rows (the worst step's, normwise)", gc->soft_err, 3e-2);
    if (g->c.focus) /* near ties of the importance delta part them (a step of few kept rows by half or
                     * more, hence the whole generation's share); a wrong score, many */
        report(c, "generation: kept rows the reference would not keep (fraction)",
               gc->kept ? (double)gc->kept_parted / gc->kept : 1, 0.25);
    int undone = 0;
    for (int32_t i = 0; i < g->c.requests; i++)
        undone += !g->r[i].done;
    report(c, "generation: requests unfinished, or one commit a step", undone + (gen_tpf(g) > 1.2 ? 0 : 1), 0);
}

/* IterSmooth before a step: its logit rows' soft rows named to the engine, its blocks' thresholds,
 * and the reference's additions to its embeddings (the weighted soft rows of its own that the
 * generation's soft callback names at each embedded row of the plan). */
static int gen_smooth_before(struct gen_check *gc, const struct gen *g, const struct step_desc *sd, struct ts_err *err)
{
    gen_smooth_rows(g, sd, gc->slot);
    gen_smooth_taus(g, sd, gc->u.tau, gc->taus);
    return eng_smooth_next(gc->e, gc->slot, (int32_t)sd->tot.logit_rows, err);
}

static void gen_smooth_adds(struct gen_check *gc, const struct model_cfg *m, const struct step_desc *sd)
{
    const int h = m->hidden;
    for (int32_t s = 0; s < gc->p.S; s++)
        for (int32_t i = 0, r = gc->p.q_start[s]; i < gc->p.q_len[s]; i++, r++) {
            float w = 0;
            const int32_t slot = gc->tk.soft(gc->tk.ctx, sd->segs[s].req_id, gc->p.tok_pos[r], &w);
            for (int k = 0; k < h; k++)
                gc->add[(size_t)r * h + k] = slot >= 0 ? w * gc->rsoft[(size_t)slot * h + k] : 0.0f;
        }
    eng_ref_add_embed(gc->r, gc->add);
}

/* IterSmooth after a step: the reference's soft rows from its own logits (softmax times the
 * embedding matrix), kept at the logit rows' soft rows, beside the engine's (the worst normwise
 * error into soft_err). */
static int gen_smooth_after(struct gen_check *gc, const struct model_cfg *m, int32_t R, struct ts_err *err)
{
    const int h = m->hidden, V = m->vocab;
    const float *emb = eng_ref_weight(gc->r, W_EMB, -1);
    ref_linear(gc->logits, gc->href, eng_ref_weight(gc->r, W_LM, -1), R, h, V);
    int64_t n = 0;
    for (int32_t i = 0; i < R; i++) {
        const int32_t slot = gc->slot[i];
        if (slot < 0)
            continue;
        const float *l = gc->logits + (size_t)i * V;
        float *soft = gc->rsoft + (size_t)slot * h, mx = -INFINITY;
        double sum = 0;
        for (int v = 0; v < V; v++)
            mx = fmaxf(mx, l[v]);
        for (int v = 0; v < V; v++)
            sum += exp((double)l[v] - mx);
        for (int k = 0; k < h; k++)
            soft[k] = 0;
        for (int v = 0; v < V; v++) {
            const float p = (float)(exp((double)l[v] - mx) / sum);
            for (int k = 0; k < h; k++)
                soft[k] += p * emb[(size_t)v * h + k];
        }
        if (eng_soft_rows(gc->e, gc->gsoft + (size_t)n * h, slot, 1, err))
            return -1;
        memcpy(gc->add + (size_t)n * h, soft, sizeof *soft * h); /* (add is free once the step ran) */
        n++;
    }
    if (n > 0)
        gc->soft_err = fmax(gc->soft_err, check_rel_err(gc->gsoft, gc->add, n * h));
    return 0;
}

/* One step of g on the engine (credits named first; FOCUS's picks read after) and on the reference
 * (handed the engine's picks), into out and gc's reference outputs. */
static int gen_check_step(struct gen_check *gc, const struct model_cfg *m, struct gen *g, struct step_desc *sd,
                          uint64_t seed, struct eng_out *out, struct ts_err *err)
{
    if (gc->u.kind == UNMASK_CREDIT) {
        gen_credit_rows(g, sd, gc->cstate, gc->cflags);
        if (eng_credit_next(gc->e, &gc->u, gc->cstate, gc->cflags, (int32_t)sd->tot.logit_rows, err))
            return -1;
    }
    if (g->c.smooth.on && gen_smooth_before(gc, g, sd, err))
        return -1;
    if (eng_step(gc->e, sd, out, NULL, err) || eng_plan_build(&gc->p, &gc->kv, sd, m->vocab, seed, err) ||
        eng_plan_set_ids(&gc->p, &gc->kv, sd, &gc->tk, err))
        return -1;
    int max_probe = 0;
    if (g->c.focus && sd->tot.probe_tokens > 0) { /* the rows FOCUS kept: the engine's, the reference's too */
        if (eng_picks(gc->e, gc->picks, (int64_t)TS_ARRAY_LEN(gc->picks), &max_probe, err))
            return -1;
        gen_focus_cands(sd, gc->picks, max_probe, gc->cand);
        eng_ref_force_picks(gc->r, gc->picks, max_probe);
    }
    if (g->c.smooth.on)
        gen_smooth_adds(gc, m, sd);
    eng_ref_step(gc->r, sd, &gc->p, sd->attn_block, gc->href, gc->rtok, gc->rmax, gc->rconf);
    if (eng_last_hidden(gc->e, gc->add, err))
        return -1;
    gc->hidden_err = fmax(gc->hidden_err, check_rel_err(gc->add, gc->href, (int64_t)out->R * m->hidden));
    if (g->c.smooth.on && gen_smooth_after(gc, m, out->R, err))
        return -1;
    int64_t picks = 0;
    gc->kept_parted += eng_ref_pick_missing(gc->r, &picks);
    gc->kept += picks;
    if (gc->u.kind == UNMASK_CREDIT) /* the reference's own fusion of its own logits */
        gen_ref_credit(gc->r, m, &gc->u, gc->href, out->R, gc->cstate, gc->cflags, gc->credits, gc->logits, gc->rtok,
                       gc->rmax, gc->rconf);
    for (int32_t i = 0; i < out->R; i++)
        gc->argmax_wrong += out->tok[i] != gc->rtok[i];
    gc->logit_rows += out->R;
    return 0;
}

/* A whole generation of a tiny model (3 requests, 64 tokens in blocks of 32, real token ids fed back)
 * under a policy (the simulator's, driven; focus: FOCUS's by position; vicinity: a window of 8,
 * refreshed every 3 steps) on the engine, each step also on the reference over the
 * same tokens (credit decoding: each with its own credits; FOCUS: the engine's kept rows, the
 * reference's own ranking reported; IterSmooth, smooth: each with its own soft rows, weighted 6 and
 * up, as a tiny model's near-uniform softmax averages its embeddings nearly away and dInfer's 0.15
 * would leave the hidden rows as they were without them, the threshold decaying by 0.3 a step); the
 * rule's threshold the median confidence of the first block step (IterSmooth: of the step before),
 * so that steps commit several rows. */
/* A SparseD generation's step sd (policy sparsed): its entries for the engine (a segment scoring
 * more keys than its rows builds its request's pattern, one scoring fewer attends by it), and the
 * patterns a sparse segment attends by, read back into keep (per_req bytes a request) and handed to
 * the reference. */
static int gen_sparsed_step(struct gen_check *gc, const struct gen *g, const struct step_desc *sd, uint8_t *keep,
                            int64_t per_req, int block, struct ts_err *err)
{
    struct eng_sparsed_req q[3];
    int32_t n = 0, nb;
    for (int32_t s = 0; s < sd->num_segs && n < 3; s++) {
        const struct segment *x = &sd->segs[s];
        if (x->attn_keys > 0)
            q[n++] = (struct eng_sparsed_req){s, x->req_id, g->r[x->req_id].P, segment_builds_pattern(x)};
    }
    if (eng_sparsed_next(gc->e, q, n, err))
        return -1;
    for (int32_t i = 0; i < n; i++) {
        if (q[i].build)
            continue;
        uint8_t *k = keep + q[i].req * per_req;
        if (eng_sparsed_pattern(gc->e, q[i].req, k, &nb, err))
            return ts_fail(err, "SparseD: request %d's pattern is not built", q[i].req);
        eng_ref_force_blocks(gc->r, q[i].req, k, block);
    }
    return 0;
}

static void check_generation(struct checker *c, const struct model_cfg *m, int attn_block, int kind, const char *policy,
                             bool smooth)
{
    struct eng_opts o;
    eng_opts_defaults(&o, &check_choices);
    o.max_tokens = 1024, o.logit_chunk_rows = 64, o.kv_tokens = 4096, o.seed = 91;
    if (kind == UNMASK_CREDIT)
        o.room[EXT_CREDIT] = (struct eng_ext_room){3, 32};
    const bool focus = strcmp(policy, "focus") == 0, sparsed = strcmp(policy, "sparsed") == 0;
    o.trace_selection = focus;
    if (sparsed) /* SparseD: its patterns in blocks of 64 over the requests' 104 positions */
        o.room[EXT_SPARSED] = (struct eng_ext_room){3, 128}, o.ext.sparsed_block = 64, o.ext.sparsed_select = 0.3;
    const int64_t per_req = (int64_t)m->num_layers * m->num_heads * 2 * 2;
    uint8_t *spkeep = sparsed ? xmalloc((size_t)(3 * per_req)) : NULL;
    struct gen_cfg cfg = {.requests = 3, .prompt_len = 40, .gen_len = 64, .block = 32, .mask_id = m->vocab - 1,
                          .vocab = m->vocab, .seed = 5, .attn_block = attn_block ? 32 : 0, .max_tokens = 1024,
                          .logit_chunk_rows = 64, .max_pos = m->max_pos, .focus = focus, .focus_alpha = 1.5,
                          .smooth = {.on = smooth, .cont = 12, .init = 6, .growth = 2, .decay = 0.3}};
    struct policy_drive drive = {0};
    struct param_values pv = {0};
    if (smooth)
        o.room[EXT_SMOOTH] = (struct eng_ext_room){cfg.requests, cfg.gen_len};
    struct gen g = {0};
    struct gen_check *gc = xcalloc(1, sizeof *gc);
    eng_plan_init(&gc->p);
    eng_kv_init(&gc->kv, o.page_tokens, 256);
    gc->u.kind = -1;
    gc->href = xmalloc(sizeof *gc->href * GEN_MOST * (size_t)m->hidden);
    gc->logits = xmalloc(sizeof *gc->logits * GEN_MOST * (size_t)m->vocab);
    gc->add = xmalloc(sizeof *gc->add * GEN_MOST * (size_t)m->hidden);
    gc->rsoft = xcalloc((size_t)(cfg.requests * cfg.gen_len) * (size_t)m->hidden, sizeof *gc->rsoft);
    gc->gsoft = xmalloc(sizeof *gc->gsoft * GEN_MOST * (size_t)m->hidden);
    struct step_desc sd;
    step_desc_init(&sd);
    struct ts_err err;
    int32_t groups[6], masked[GEN_MOST], commit[GEN_MOST], count[3], ng;
    int64_t exact = 0, parted = 0, rows = 0;
    const int32_t plen[3] = {40, 40, 40};
    const bool vicinity = strcmp(policy, "vicinity") == 0;
    /* "dpad:CACHE": DPad over that cache, its window (24) shorter than the suffix past block 0 (32) */
    const char *dpad = strncmp(policy, "dpad:", 5) == 0 ? policy + 5 : NULL;
    if ((vicinity && (param_values_set(&pv, "vicinity", "8", &err) || param_values_set(&pv, "refresh-interval", "3", &err))) ||
        (dpad && (param_values_set(&pv, "dpad-window", "24", &err) || param_values_set(&pv, "dpad-cache", dpad, &err))) ||
        (!focus && policy_drive_init(&drive, dpad ? "dpad" : policy, &pv, cfg.requests, plen, cfg.gen_len, cfg.block,
                                     false, &err))) {
        fail_msg(c, "generation", err.msg);
        goto done;
    }
    cfg.policy = focus ? NULL : &drive;
    if (gen_init(&g, &cfg, NULL, &err) || eng_create(m, &o, &gc->e, &err) ||
        eng_ref_create(m, NULL, o.seed, &gc->r, &err)) {
        fail_msg(c, "generation", err.msg);
        goto done;
    }
    gc->tk = gen_tokens(&g);
    eng_set_tokens(gc->e, &gc->tk);
    while (gen_next_step(&g, &sd, groups, &ng, masked)) {
        struct eng_out out;
        if (ng > 0 && gc->u.kind < 0)
            gc->u = (struct unmask_rule){.kind = kind, .alpha = 0.7f, .beta = 0.8f, .gamma = 0.2f};
        if ((sparsed && gen_sparsed_step(gc, &g, &sd, spkeep, per_req, o.ext.sparsed_block, &err)) ||
            gen_check_step(gc, m, &g, &sd, o.seed, &out, &err)) {
            fail_msg(c, "generation step", err.msg);
            goto done;
        }
        if (ng > 0 && (gc->u.tau == 0 || smooth)) { /* IterSmooth: each step's (its soft rows lower them) */
            float sorted[GEN_MOST];
            memcpy(sorted, out.conf, sizeof(float) * (size_t)out.R);
            qsort(sorted, (size_t)out.R, sizeof *sorted, cmp_float);
            gc->u.tau = sorted[out.R / 2], gc->u.low = sorted[out.R / 4];
        }
        if (ng > 0 && eng_unmask(gc->e, &gc->u, groups, ng, masked, smooth ? gc->taus : NULL, commit, count, NULL, &err)) {
            fail_msg(c, "generation unmask", err.msg);
            goto done;
        }
        gen_decisions(&gc->u, groups, ng, masked, smooth ? gc->taus : NULL, &out, gc->rconf, commit, count, &exact,
                      &parted, &rows);
        if (smooth)
            gen_smooth_keep(&g, &sd, commit);
        if (gen_apply(&g, &sd, commit, focus ? gc->cand : NULL, &err)) {
            fail_msg(c, "generation apply", err.msg);
            goto done;
        }
        for (int32_t s = 0; s < sd.num_segs; s++)
            if (g.r[sd.segs[s].req_id].done)
                eng_release(gc->e, sd.segs[s].req_id), eng_ref_release(gc->r, sd.segs[s].req_id);
    }
    gen_check_report(c, &g, gc, kind, attn_block, policy, exact, rows ? (double)parted / rows : 1);
done:
    free(gc->href), free(gc->logits), free(gc->add), free(gc->rsoft), free(gc->gsoft), free(spkeep);
    step_desc_free(&sd);
    eng_plan_free(&gc->p);
    eng_kv_free(&gc->kv);
    gen_free(&g);
    policy_drive_free(&drive);
    eng_destroy(gc->e);
    eng_ref_destroy(gc->r);
    free(gc);
}

/* --- whole steps ------------------------------------------------------------------------- */

static void seg(struct step_desc *sd, int req, int q, int kv, int logits)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* Three steps with Refresh-like, Reuse-like, prefill (no logits) and fused-commit segments, in
 * order (each reuses the cache of the ones before), run with LM-head chunks of logit_chunk_rows rows,
 * ffn_chunks FFN chunks and block-causal attention over blocks of attn_block tokens (0: none). */
static void mixed_steps(struct step_desc steps[3], int32_t logit_chunk_rows, int32_t ffn_chunks, int32_t attn_block)
{
    for (int k = 0; k < 3; k++) {
        step_desc_init(&steps[k]);
        steps[k].logit_chunk_rows = logit_chunk_rows;
        steps[k].ffn_chunks = ffn_chunks;
        steps[k].attn_block = attn_block; /* before the segments: the totals count its pairs */
    }
    seg(&steps[0], 0, 200, 0, 200);
    seg(&steps[0], 1, 37, 0, 0);
    seg(&steps[1], 0, 32, 168, 32);
    seg(&steps[1], 1, 32, 37, 32);
    seg(&steps[1], 2, 100, 0, 100);
    seg(&steps[2], 2, 64, 100, 32);
    seg(&steps[2], 0, 200, 0, 17);
}

/* Kept keys out of order (each set ascending) or out of range, over every layer and selecting
 * segment of the step, as a fraction of the keys kept (kept[]: eng_selection's layout). */
static double kept_malformed(const struct model_cfg *m, const struct step_desc *sd, const int32_t *kept,
                             int max_keep)
{
    const int sets = sd->select_heads ? m->num_kv_heads : 1;
    int64_t bad = 0, all = 0;
    for (int L = 0, n = 0; L < m->num_layers; L++, n = 0)
        for (int s = 0; s < sd->num_segs; s++) {
            const struct segment *g = &sd->segs[s];
            if (g->keep == 0)
                continue;
            for (int set = 0; set < sets; set++, all += g->keep) {
                const int32_t *k = kept + (((size_t)L * sd->tot.sel_segs + n) * sets + set) * max_keep;
                for (int j = 0; j < g->keep; j++)
                    bad += k[j] < 0 || k[j] >= g->q - g->score_rows || (j > 0 && k[j] <= k[j - 1]);
            }
            n++;
        }
    return all ? (double)bad / (double)all : 0;
}

/* The engine's kept keys of the step just run, handed to the reference so that it keeps the same
 * (a discrete choice between near-equal scores would otherwise part two computations that differ
 * in rounding); NULL after reporting a failure. The caller frees it once the reference step ran. */
static int32_t *forced_selection(struct checker *c, struct eng *e, struct eng_ref *r, const struct model_cfg *m,
                                 const struct step_desc *sd, const struct eng_plan *p, int step)
{
    const int64_t n = (int64_t)m->num_layers * sd->tot.sel_segs * (sd->select_heads ? m->num_kv_heads : 1) *
                      TS_MAX(p->max_keep, 1);
    int32_t *kept = xmalloc(sizeof *kept * (size_t)n);
    int max_keep = 0;
    struct ts_err err;
    if (eng_selection(e, kept, n, &max_keep, &err)) {
        fail_msg(c, "read selection", err.msg);
        free(kept);
        return NULL;
    }
    char what[96];
    snprintf(what, sizeof what, "step %d: kept keys out of order or range (fraction)", step);
    report(c, what, kept_malformed(m, sd, kept, max_keep), 0);
    eng_ref_force_selection(r, kept, max_keep);
    return kept;
}

/* Picked rows out of order or range, or a count other than the segment's picked, over every layer
 * and probing segment of the step, as a fraction of the rows picked (picks[]: eng_picks' layout). */
static double picks_malformed(const struct model_cfg *m, const struct step_desc *sd, const int32_t *picks,
                              int num_probe, int max_probe)
{
    int64_t bad = 0, all = 0;
    const int nf = step_front_layers(sd, m->num_layers);
    for (int L = sd->evict ? m->num_layers - 1 : nf, n = 0; L < m->num_layers; L++, n = 0) /* evicting: one set */
        for (int s = 0; s < sd->num_segs; s++) {
            const struct segment *g = &sd->segs[s];
            if (g->probe == 0)
                continue;
            const int32_t *k = picks + ((size_t)(sd->evict ? 0 : L) * num_probe + n) * max_probe;
            for (int j = 0; j < g->picked; j++, all++)
                bad += k[j] < 0 || k[j] >= g->probe || (j > 0 && k[j] <= k[j - 1]);
            n++;
        }
    return all ? (double)bad / (double)all : 0;
}

/* The engine's picked rows of the step just run, handed to the reference so that it picks the
 * same (the value check's ranking parts computations that differ in rounding where similarities
 * are near: with synthetic tokens a request's values repeat from step to step, so they are all
 * near 1); NULL after reporting a failure. The caller frees it once the reference step ran. */
static int32_t *forced_picks(struct checker *c, struct eng *e, struct eng_ref *r, const struct model_cfg *m,
                             const struct step_desc *sd, const struct eng_plan *p, int step)
{
    const int64_t n = (int64_t)m->num_layers * p->num_probe * p->max_probe;
    int32_t *picks = xmalloc(sizeof *picks * (size_t)TS_MAX(n, 1));
    int max_probe = 0;
    struct ts_err err;
    if (eng_picks(e, picks, n, &max_probe, &err)) {
        fail_msg(c, "read picks", err.msg);
        free(picks);
        return NULL;
    }
    char what[96];
    snprintf(what, sizeof what, "step %d: picked rows out of order, range or count (fraction)", step);
    report(c, what, picks_malformed(m, sd, picks, p->num_probe, max_probe), 0);
    eng_ref_force_picks(r, picks, max_probe);
    return picks;
}

/* Runs steps[0..n) on the engine (options o) and on the reference and compares their outputs;
 * `label` names the run in the report. */
static void compare_steps(struct checker *c, const struct model_cfg *m, const struct eng_opts *o,
                          const struct step_desc *steps, int n, const char *label)
{
    struct eng *e = NULL;
    struct eng_ref *r = NULL;
    struct ts_err err;
    struct eng_plan p;
    eng_plan_init(&p);
    struct eng_kv kv;
    eng_kv_init(&kv, o->page_tokens, 256);
    char what[160];
    if (eng_create(m, o, &e, &err) || eng_ref_create(m, NULL, o->seed, &r, &err)) {
        fail_msg(c, "engine create", err.msg);
        goto done;
    }
    eng_ref_balance_routes(r, eng_routes_balanced(e));
    if (o->ffn && !eng_ffn_fused_runs(e)) {
        if (hopper())
            fail_msg(c, "fused FFN", "k_gemm_swiglu does not run on this compute capability 9.0 device");
        goto done; /* elsewhere the kernel check says it was skipped */
    }
    for (int step = 0; step < n; step++) {
        const struct step_desc *sd = &steps[step];
        struct eng_out out;
        if (eng_poison_workspace(e, &err) || eng_step(e, sd, &out, NULL, &err)) {
            fail_msg(c, "engine step", err.msg);
            goto done;
        }
        if (eng_plan_build(&p, &kv, sd, m->vocab, o->seed, &err)) {
            fail_msg(c, "plan", err.msg);
            goto done;
        }
        int R = p.R;
        float *href = xmalloc(4 * (size_t)R * m->hidden), *hgpu = xmalloc(4 * (size_t)R * m->hidden);
        float *rmax = xmalloc(4 * (size_t)R), *rconf = xmalloc(4 * (size_t)R);
        int32_t *rtok = xmalloc(4 * (size_t)R), *kept = NULL, *picks = NULL;
        if ((sd->tot.sel_segs > 0 && (kept = forced_selection(c, e, r, m, sd, &p, step)) == NULL) ||
            (sd->tot.probe_tokens > 0 && (picks = forced_picks(c, e, r, m, sd, &p, step)) == NULL)) {
            free(href), free(hgpu), free(rmax), free(rconf), free(rtok), free(kept);
            goto done;
        }
        int32_t *routes = NULL; /* a mixture of experts: the engine's experts handed to the reference */
        if (m->num_experts > 0) {
            const int64_t nr = (int64_t)m->num_layers * o->max_tokens * m->experts_top_k;
            int64_t stride = 0;
            routes = xmalloc(sizeof *routes * (size_t)nr);
            if (eng_routes(e, routes, nr, &stride, &err)) {
                fail_msg(c, "read routes", err.msg);
                free(routes), free(href), free(hgpu), free(rmax), free(rconf), free(rtok), free(kept), free(picks);
                goto done;
            }
            eng_ref_force_routes(r, routes, stride);
        }
        eng_ref_step(r, sd, &p, sd->attn_block, href, rtok, rmax, rconf);
        if (routes) { /* near ties of the router's logits part them; a wrong router, most (balanced
                       * routing hashes: none) */
            snprintf(what, sizeof what, "step %d: rows the reference would route elsewhere (fraction)", step);
            report(c, what, eng_ref_route_disagreement(r), eng_routes_balanced(e) ? 0 : 0.10);
            free(routes);
        }
        if (kept) { /* the reference's own ranking beside the engine's: near ties part them, a wrong
                     * scoring row or key would leave about r of the keys in common */
            snprintf(what, sizeof what, "step %d: kept keys the reference would not keep (fraction)", step);
            report(c, what, eng_ref_ranking_disagreement(r), 0.25);
        }
        free(kept);
        free(picks);
        if (sd->evict && p.evict) { /* near ties of the importance delta part them; a wrong score, many */
            snprintf(what, sizeof what, "step %d: kept rows the reference would not keep (fraction)", step);
            report(c, what, eng_ref_pick_disagreement(r), 0.25);
        }
        eng_ref_pick_disagreement(r);
        int same = 0;
        double max_err = 0;
        for (int i = 0; i < R; i++) {
            same += out.tok[i] == rtok[i];
            max_err = fmax(max_err, fabs(out.maxv[i] - rmax[i]) / (1.0 + fabs(rmax[i])));
            if (!isfinite(out.maxv[i]) || !isfinite(out.conf[i]) || out.tok[i] < 0 || out.tok[i] >= m->vocab)
                max_err = INFINITY;
        }
        if (eng_last_hidden(e, hgpu, &err)) {
            fail_msg(c, "read hidden", err.msg);
        } else {
            snprintf(what, sizeof what, "step %d of %s%s: final hidden", step, m->name, label);
            report(c, what, check_rel_err(hgpu, href, (int64_t)R * m->hidden), 3e-2);
        }
        snprintf(what, sizeof what, "step %d: max logit of %d rows", step, R);
        report(c, what, max_err, 3e-2);
        snprintf(what, sizeof what, "step %d: argmax differs from the reference (fraction)", step);
        report(c, what, R ? 1.0 - (double)same / R : 0, 0.10);
        free(href), free(hgpu), free(rmax), free(rconf), free(rtok);
    }
done:
    eng_destroy(e);
    eng_ref_destroy(r);
    eng_plan_free(&p);
    eng_kv_free(&kv);
}

/* The options of the steps checked against the reference. */
static void ref_step_opts(struct eng_opts *o, int ffn, int logit_chunk)
{
    eng_opts_defaults(o, &check_choices);
    o->trace_selection = true;
    o->ffn = ffn;
    o->max_tokens = 1024;
    o->logit_chunk_rows = logit_chunk;
    o->kv_tokens = 4096;
    o->seed = 77;
}

/* The mixed steps (mixed_steps) on the engine and on the reference. */
static void check_steps(struct checker *c, const struct model_cfg *m, int block_size, int logit_chunk, int ffn)
{
    struct eng_opts o;
    ref_step_opts(&o, ffn, logit_chunk);
    struct step_desc steps[3];
    mixed_steps(steps, logit_chunk, 1, block_size);
    char label[96];
    snprintf(label, sizeof label, "%s, chunk %d%s", block_size ? " block-causal" : "", logit_chunk,
             ffn == 1 ? ", fused FFN" : ffn == 2 ? ", auto FFN" : "");
    compare_steps(c, m, &o, steps, 3, label);
    for (int k = 0; k < 3; k++)
        step_desc_free(&steps[k]);
}

static void sel_seg(struct step_desc *sd, int req, enum seg_phase ph, int q, int kv, int logits, int keep, int rows)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = (uint8_t)ph,
                        .kv_write = keep ? keep : q, .keep = keep, .score_rows = rows};
    step_desc_add(sd, &s);
}

/* A sparse policy's steps: a FULL step, a selecting REFRESH, REUSE steps over the kept tokens, and
 * a second selection over a cache selected before. */
static void check_sparse_steps(struct checker *c, const struct model_cfg *m, bool per_head, int kernel)
{
    struct eng_opts o;
    ref_step_opts(&o, 0, 64);
    struct step_desc steps[4];
    for (int k = 0; k < 4; k++) {
        step_desc_init(&steps[k]);
        steps[k].logit_chunk_rows = 64;
        steps[k].select_heads = per_head;
        steps[k].select_kernel = kernel;
    }
    sel_seg(&steps[0], 0, PHASE_FULL, 200, 0, 200, 0, 0);
    sel_seg(&steps[0], 1, PHASE_REFRESH, 150, 0, 40, 59, 32);
    sel_seg(&steps[1], 0, PHASE_REFRESH, 200, 0, 60, 84, 32);
    sel_seg(&steps[1], 1, PHASE_REUSE, 32, 59, 32, 0, 0);
    sel_seg(&steps[2], 0, PHASE_REUSE, 32, 84, 32, 0, 0);
    sel_seg(&steps[2], 1, PHASE_REFRESH, 150, 0, 32, 17, 7);
    sel_seg(&steps[3], 0, PHASE_REUSE, 32, 84, 32, 0, 0);
    sel_seg(&steps[3], 1, PHASE_REUSE, 7, 17, 7, 0, 0);
    char label[96];
    snprintf(label, sizeof label, ", sparse %s, pool %d", per_head ? "head" : "uniform", kernel);
    compare_steps(c, m, &o, steps, 4, label);
    /* after its selection a request holds the pages of its kept keys alone */
    struct eng *e = NULL;
    struct ts_err err;
    struct eng_out out;
    if (eng_create(m, &o, &e, &err) == 0) {
        const int32_t before = eng_pool_free_pages(e), pt = o.page_tokens;
        const int32_t want = before - (200 + pt - 1) / pt - (59 + pt - 1) / pt; /* request 0: 200 keys, 1: 59 kept */
        if (eng_step(e, &steps[0], &out, NULL, &err))
            fail_msg(c, "selecting step", err.msg);
        else
            report(c, "  the pool after a selection: pages beyond the kept keys' (|free - expected|)",
                   abs(eng_pool_free_pages(e) - want), 0);
    } else {
        fail_msg(c, "engine create", err.msg);
    }
    eng_destroy(e);
    for (int k = 0; k < 4; k++)
        step_desc_free(&steps[k]);
}

static void fc_seg(struct step_desc *sd, int req, enum seg_phase ph, int P, int G, int q, int probe, int picked,
                   int logits)
{
    const int L = P + G;
    struct segment s = {.req_id = req, .phase = (uint8_t)ph, .q = q, .kv = L - q, .kv_write = q, .logit_rows = logits,
                        .carry = L - q, .probe = probe, .picked = picked};
    if (q < L) { /* layer 0 runs the whole sequence */
        s.q_front = L;
        s.kv_write_front = L;
    }
    step_desc_add(sd, &s);
}

/* dLLM-Cache's steps (a tiny model of three layers: layer 0 the front, two with value checks): whole
 * refreshes, a response refresh over the cached prompt (its outputs carried), partial updates
 * picking among the response rows with and without the prompt refreshed, and a request of its own
 * beside them in each. */
static void check_fc_steps(struct checker *c, const struct model_cfg *m0)
{
    struct model_cfg m = *m0;
    m.num_layers = 3;
    struct eng_opts o;
    ref_step_opts(&o, 0, 64);
    o.feature_cache = true;
    struct step_desc steps[4];
    for (int k = 0; k < 4; k++) {
        step_desc_init(&steps[k]);
        steps[k].logit_chunk_rows = 64;
        steps[k].front_layers = 1;
        steps[k].cache_outputs = true;
    }
    fc_seg(&steps[0], 0, PHASE_REFRESH, 50, 40, 90, 0, 0, 90);
    fc_seg(&steps[0], 1, PHASE_REFRESH, 40, 30, 70, 0, 0, 70);
    fc_seg(&steps[1], 0, PHASE_REUSE, 50, 40, 8, 40, 8, 90);    /* u rows over the rest */
    fc_seg(&steps[1], 1, PHASE_REFRESH, 40, 30, 30, 0, 0, 30);  /* the response over the cached prompt */
    fc_seg(&steps[2], 0, PHASE_REUSE, 50, 40, 58, 40, 8, 40);   /* the prompt and u response rows */
    fc_seg(&steps[2], 1, PHASE_REUSE, 40, 30, 5, 30, 5, 70);
    fc_seg(&steps[2], 2, PHASE_REFRESH, 20, 12, 32, 0, 0, 32);  /* a request of its own, whole */
    fc_seg(&steps[3], 2, PHASE_REUSE, 20, 12, 3, 12, 3, 32);
    fc_seg(&steps[3], 0, PHASE_REUSE, 50, 40, 8, 40, 8, 90);
    compare_steps(c, &m, &o, steps, 4, ", feature cache");
    /* the engine without a feature cache refuses them, naming it */
    struct eng *e = NULL;
    struct ts_err err;
    struct eng_out out;
    o.feature_cache = false;
    if (eng_create(&m, &o, &e, &err) == 0) {
        const bool refused = eng_step(e, &steps[0], &out, NULL, &err) != 0 && strstr(err.msg, "feature cache");
        report(c, "an engine without a feature cache refuses its steps", refused ? 0 : 1, 0);
    } else {
        fail_msg(c, "engine create", err.msg);
    }
    eng_destroy(e);
    for (int k = 0; k < 4; k++)
        step_desc_free(&steps[k]);
}

/* Elastic-Cache's segments: a whole forward of L rows, q rows over the other L - q cached (a cached
 * step), or a refresh: q rows over the others through the front layers, then all L. */
static void ec_seg(struct step_desc *sd, int req, int L, int q, bool refresh)
{
    struct segment s = {.req_id = req, .phase = (uint8_t)(q == L ? PHASE_FULL : PHASE_REUSE), .q = q, .kv = L - q,
                        .kv_write = q, .logit_rows = q};
    if (refresh) {
        s = (struct segment){.req_id = req, .phase = PHASE_REFRESH, .q = L, .kv_write = L, .logit_rows = L,
                             .q_front = q, .kv_front = L - q, .kv_write_front = q};
    }
    step_desc_add(sd, &s);
}

/* Elastic-Cache's steps (a tiny model of four layers: two front, two later) over the input cache:
 * whole forwards, cached steps and refreshes side by side, and a request of its own beside them. */
static void check_elastic_steps(struct checker *c, const struct model_cfg *m0)
{
    struct model_cfg m = *m0;
    m.num_layers = 4;
    struct eng_opts o;
    ref_step_opts(&o, 0, 128);
    o.input_cache = true;
    struct step_desc steps[4];
    for (int k = 0; k < 4; k++) {
        step_desc_init(&steps[k]);
        steps[k].logit_chunk_rows = 64;
        steps[k].front_layers = 2;
        steps[k].cache_inputs = true;
    }
    ec_seg(&steps[0], 0, 90, 90, false);
    ec_seg(&steps[0], 1, 70, 70, false);
    ec_seg(&steps[1], 0, 90, 12, false);
    ec_seg(&steps[1], 1, 70, 10, true);
    ec_seg(&steps[2], 0, 90, 12, true);
    ec_seg(&steps[2], 1, 70, 10, false);
    ec_seg(&steps[2], 2, 32, 32, false);
    ec_seg(&steps[3], 2, 32, 5, true);
    ec_seg(&steps[3], 0, 90, 12, false);
    compare_steps(c, &m, &o, steps, 4, ", input cache");
    /* the engine without an input cache refuses them, naming it */
    struct eng *e = NULL;
    struct ts_err err;
    struct eng_out out;
    o.input_cache = false;
    if (eng_create(&m, &o, &e, &err) == 0) {
        const bool refused = eng_step(e, &steps[0], &out, NULL, &err) != 0 && strstr(err.msg, "input cache");
        report(c, "an engine without an input cache refuses Elastic-Cache's steps", refused ? 0 : 1, 0);
    } else {
        fail_msg(c, "engine create", err.msg);
    }
    eng_destroy(e);
    for (int k = 0; k < 4; k++)
        step_desc_free(&steps[k]);
}

/* An evicting segment: a block of B rows over kv_front cached keys, `fixed` decoded rows waiting for
 * the cache, the others candidates of which `picked` are kept (logits: the kept rows). */
static void focus_seg(struct step_desc *sd, int req, int kv_front, int B, int fixed, int picked)
{
    const int q = fixed + picked;
    struct segment s = {.req_id = req, .phase = PHASE_BLOCK, .q = q, .kv = kv_front + B - q, .kv_write = q,
                        .logit_rows = picked, .q_front = B, .kv_front = kv_front, .kv_write_front = B,
                        .probe = B - fixed, .picked = picked, .decoded = 1};
    step_desc_add(sd, &s);
}

/* FOCUS's steps (a tiny model of four layers: two front, two later): prefills, a block's first
 * evicting step (nothing run before: a prefix of its candidates kept), later ones choosing by the
 * importance delta among the candidates run before, a request's block without eviction beside
 * them, and block-causal attention where asked. */
static void check_focus_steps(struct checker *c, const struct model_cfg *m0, int block_size)
{
    struct model_cfg m = *m0;
    m.num_layers = 4;
    struct eng_opts o;
    ref_step_opts(&o, 0, 64);
    struct step_desc steps[4];
    for (int k = 0; k < 4; k++) {
        step_desc_init(&steps[k]);
        steps[k].logit_chunk_rows = 64;
        steps[k].front_layers = 2;
        steps[k].evict = true;
        steps[k].attn_block = block_size;
    }
    seg(&steps[0], 0, 40, 0, 0);
    seg(&steps[0], 1, 24, 0, 8);
    seg(&steps[0], 2, 64, 0, 0);
    focus_seg(&steps[1], 0, 40, 32, 0, 6);
    focus_seg(&steps[1], 1, 24, 32, 2, 4);
    seg(&steps[1], 2, 32, 64, 32); /* a block without eviction */
    focus_seg(&steps[2], 0, 40, 32, 0, 9);
    focus_seg(&steps[2], 1, 24, 32, 2, 4);
    focus_seg(&steps[3], 1, 26, 32, 0, 12);
    focus_seg(&steps[3], 0, 42, 32, 1, 3);
    char label[64];
    snprintf(label, sizeof label, ", focus%s", block_size ? ", block-causal" : "");
    compare_steps(c, &m, &o, steps, 4, label);
    for (int k = 0; k < 4; k++)
        step_desc_free(&steps[k]);
}

/* The engine against itself: chunked vs unchunked logits; Reuse against the Refresh it reuses. */
static void check_self(struct checker *c, const struct model_cfg *m)
{
    struct eng_opts o;
    eng_opts_defaults(&o, &check_choices);
    o.max_tokens = 1024;
    o.kv_tokens = 4096;
    struct eng *a = NULL, *b = NULL;
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    float *ha = NULL, *hb = NULL;
    int32_t *ta = NULL;
    o.logit_chunk_rows = 1024;
    if (eng_create(m, &o, &a, &err)) {
        fail_msg(c, "engine create", err.msg);
        goto done;
    }
    o.logit_chunk_rows = 7;
    if (eng_create(m, &o, &b, &err)) {
        fail_msg(c, "engine create", err.msg);
        goto done;
    }
    const int L = 288, Bs = 32;
    sd.logit_chunk_rows = 1024;
    seg(&sd, 0, L, 0, L);
    struct eng_out oa, ob;
    if (eng_step(a, &sd, &oa, NULL, &err)) {
        fail_msg(c, "refresh step", err.msg);
        goto done;
    }
    ta = xmalloc(4 * L);
    memcpy(ta, oa.tok, 4 * L);
    ha = xmalloc(4 * (size_t)L * m->hidden);
    hb = xmalloc(4 * (size_t)L * m->hidden);
    sd.logit_chunk_rows = 7; /* the step's knob: the engine sized for 7-row chunks runs them */
    if (eng_last_hidden(a, ha, &err) || eng_step(b, &sd, &ob, NULL, &err)) {
        fail_msg(c, "chunked step", err.msg);
        goto done;
    }
    int diff = 0;
    for (int i = 0; i < L; i++)
        diff += ob.tok[i] != ta[i];
    report(c, "argmax: 7-row logit chunks vs one chunk (rows that differ)", diff, 0);
    /* the step's knobs, not the engine's options, decide its chunks: the same step on engine a in
     * 5 FFN chunks and 96-row logit chunks plans them so and gives the same rows */
    sd.logit_chunk_rows = 96;
    sd.ffn_chunks = 5;
    struct eng_act_info ai;
    if (eng_step(a, &sd, &oa, NULL, &err) || eng_last_hidden(a, hb, &err)) {
        fail_msg(c, "step with its own chunking", err.msg);
        goto done;
    }
    eng_act_info(a, &ai);
    report(c, "the step's knobs planned: |logit chunk rows - 96| + |FFN chunks - 5|",
           abs(ai.logit_rows - 96) + abs(ai.ffn_chunks - 5), 0);
    report(c, "5 FFN chunks and 96-row logit chunks vs one of each: final hidden", check_rel_err(hb, ha, (int64_t)L * m->hidden),
           1e-2);
    sd.ffn_chunks = 1;
    /* Reuse of the last block over the Refresh's cache: same rows, same result */
    step_desc_clear(&sd);
    sd.logit_chunk_rows = 1024;
    seg(&sd, 0, Bs, L - Bs, Bs);
    if (eng_step(a, &sd, &oa, NULL, &err) || eng_last_hidden(a, hb, &err)) {
        fail_msg(c, "reuse step", err.msg);
        goto done;
    }
    report(c, "reuse block over the cache vs the refresh's last rows", 
           check_rel_err(hb, ha + (size_t)(L - Bs) * m->hidden, (int64_t)Bs * m->hidden), 2e-2);
done:
    eng_destroy(a);
    eng_destroy(b);
    step_desc_free(&sd);
    free(ha), free(hb), free(ta);
}

/* A request's K/V moved between two engines (a disaggregated fleet's move, here all on this GPU and
 * of different pool sizes): a's Refresh, its pages set aside and a's next step beside them; b,
 * already serving another request, copies them into pages of its own and gives them to the request's
 * id there. b's Reuse of the last block over them then gives the Refresh's last rows (the oracle
 * check_self uses). c, given K's pages as V and V's as K, does not; the sender gets its pages back
 * when it drops them. */
static void check_moves(struct checker *c, const struct model_cfg *m)
{
    struct eng_opts o;
    eng_opts_defaults(&o, &check_choices);
    o.max_tokens = 1024;
    o.logit_chunk_rows = 1024;
    o.kv_tokens = 4096;
    struct eng *e[3] = {NULL, NULL, NULL}; /* the sender a, the receivers b and c */
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 1024;
    const int L = 288, Bs = 32;
    float *ha = xmalloc(4 * (size_t)L * m->hidden), *hb = xmalloc(4 * (size_t)Bs * m->hidden);
    struct eng_out out;
    for (int k = 0; k < 3; k++)
        if ((o.kv_tokens = k ? 2048 : 4096, eng_create(m, &o, &e[k], &err))) {
            fail_msg(c, "engine create", err.msg);
            goto done;
        }
    seg(&sd, 0, L, 0, L);
    const int32_t free0 = eng_pool_free_pages(e[0]);
    if (eng_step(e[0], &sd, &out, NULL, &err) || eng_last_hidden(e[0], ha, &err) || eng_hold(e[0], 0, 7, &err)) {
        fail_msg(c, "the sender's refresh", err.msg);
        goto done;
    }
    step_desc_clear(&sd);
    seg(&sd, 1, 200, 0, 200); /* the sender goes on: its next request must not take the pages set aside */
    if (eng_step(e[0], &sd, &out, NULL, &err) || (step_desc_clear(&sd), seg(&sd, 3, 400, 0, 400), eng_step(e[1], &sd, &out, NULL, &err))) {
        fail_msg(c, "the steps beside the move", err.msg);
        goto done;
    }
    const int32_t *pages;
    int32_t n;
    struct eng_pool src;
    eng_pool_of(e[0], &src);
    if (eng_held(e[0], 7, &pages, &n)) {
        fail_msg(c, "the move", "nothing set aside");
        goto done;
    }
    struct eng_pool swapped = src;
    swapped.k = src.v, swapped.v = src.k;
    report(c, "moved pages: those of the refresh's keys (pages - ceil(L / page))", abs(n - (L + o.page_tokens - 1) / o.page_tokens), 0);
    double rel[3] = {0};
    for (int k = 1; k < 3; k++) { /* (token ids hash the request id: the same id at each engine) */
        float ms = 0;
        step_desc_clear(&sd);
        seg(&sd, 0, Bs, L - Bs, Bs);
        if (eng_pull(e[k], k == 1 ? &src : &swapped, pages, n, 9, &ms, &err) || eng_adopt(e[k], 9, 0, &err) ||
            eng_step(e[k], &sd, &out, NULL, &err) || eng_last_hidden(e[k], hb, &err)) {
            fail_msg(c, "the receiver's copy and reuse", err.msg);
            goto done;
        }
        if (k == 1)
            report(c, "the copy timed (1 if not)", ms > 0 ? 0 : 1, 0);
        rel[k] = check_rel_err(hb, ha + (size_t)(L - Bs) * m->hidden, (int64_t)Bs * m->hidden);
    }
    report(c, "reuse over the moved K/V vs the sender's refresh's last rows", rel[1], 2e-2);
    report(c, "the same reuse over K and V moved into each other's pools differs (1 if not)", rel[2] < 0.2 ? 1 : 0, 0);
    eng_drop(e[0], 7);
    eng_release(e[0], 1);
    report(c, "the sender's pages free again once dropped (pages short)", free0 - eng_pool_free_pages(e[0]), 0);
done:
    for (int k = 0; k < 3; k++)
        eng_destroy(e[k]);
    step_desc_free(&sd);
    free(ha), free(hb);
}

/* Weights saved as an HF checkpoint and loaded back give the seeded engine's results exactly. */
static void check_weights_file(struct checker *c, const struct model_cfg *m, enum st_names names)
{
    struct eng_layout l;
    struct ts_err err;
    struct eng *a = NULL, *b = NULL;
    bf16_t *w = NULL;
    float *ha = NULL, *hb = NULL;
    struct step_desc sd;
    step_desc_init(&sd);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tessera-check-%d.safetensors", (int)getpid());
    if (eng_layout_build(m, &l, &err)) {
        fail_msg(c, "layout", err.msg);
        return;
    }
    w = xmalloc(2 * (size_t)l.total);
    for (int i = 0; i < l.n; i++)
        eng_fill_host(&l, i, 77, w + l.t[i].offset);
    struct eng_opts o;
    eng_opts_defaults(&o, &check_choices);
    o.max_tokens = 512;
    o.logit_chunk_rows = 256;
    o.kv_tokens = 2048;
    o.seed = 77;
    o.routing = 1; /* the router's choice, the seeded engine's as the loaded one's (auto balances the first) */
    if (st_export_hf(path, m, w, names, false, &err) || eng_create(m, &o, &a, &err)) {
        fail_msg(c, "checkpoint", err.msg);
        goto done;
    }
    o.weights = path;
    if (eng_create(m, &o, &b, &err)) {
        fail_msg(c, "engine from a checkpoint", err.msg);
        goto done;
    }
    seg(&sd, 0, 100, 0, 100);
    struct eng_out oa, ob;
    ha = xmalloc(4 * 100 * (size_t)m->hidden);
    hb = xmalloc(4 * 100 * (size_t)m->hidden);
    if (eng_step(a, &sd, &oa, NULL, &err) || eng_last_hidden(a, ha, &err) || eng_step(b, &sd, &ob, NULL, &err) ||
        eng_last_hidden(b, hb, &err)) {
        fail_msg(c, "steps", err.msg);
        goto done;
    }
    char what[200];
    snprintf(what, sizeof what, "%s: weights from a %s-named checkpoint vs from the seed (max diff)", m->name,
             names == ST_NAMES_LLADA ? "LLaDA" : names == ST_NAMES_LLADA2 ? "LLaDA2.0" : "Qwen");
    double diff = 0;
    for (int i = 0; i < 100 * m->hidden; i++)
        diff = fmax(diff, fabs((double)ha[i] - hb[i]));
    report(c, what, diff, 0);
done:
    unlink(path);
    eng_destroy(a);
    eng_destroy(b);
    eng_layout_free(&l);
    step_desc_free(&sd);
    free(w), free(ha), free(hb);
}

/* The fused gate/up GEMM + SwiGLU (k_gemm_swiglu) against the reference's linear layer, its
 * output rounded to bf16 as the split path's GEMM writes it, then SwiGLU; the output is poisoned
 * first. Row counts cover single blocks (an odd count of row tiles) and clusters of two (an even
 * count), partial last tiles, stages wrapping around the ring within a tile and across tiles, and
 * more work than the persistent grid takes in one round. */
static void check_gemm_swiglu(struct checker *c, int rows, int K, int F)
{
    const int64_t nx = (int64_t)rows * K, nw = (int64_t)2 * F * K, no = (int64_t)rows * F;
    float *xf = xmalloc(4 * nx), *wf = xmalloc(4 * nw), *gu = xmalloc(8 * no), *rf = xmalloc(4 * no);
    float *of = xmalloc(4 * no);
    bf16_t *xb = xmalloc(2 * nx), *wb = xmalloc(2 * nw), *ob = xmalloc(2 * no);
    bf16_t *dx = NULL, *dw = NULL, *dout = NULL;
    char what[96];
    snprintf(what, sizeof what, "gate/up GEMM + SwiGLU fused, %d x %d, F %d", rows, K, F);
    rand_bf16(c, xf, xb, nx, 2.0f);
    rand_bf16(c, wf, wb, nw, 1.0f / sqrtf((float)K));
    dx = dev_copy(xb, 2 * nx);
    dw = dev_copy(wb, 2 * nw);
    CK(cudaMalloc((void **)&dout, 2 * no));
    if (!dx || !dw)
        CK(cudaErrorMemoryAllocation);
    KK(k_fill_bits(dout, no, 0x7fc0, NULL));
    int rc = k_gemm_swiglu(dout, dx, dw, rows, K, F, NULL);
    if (rc == (int)cudaErrorNotSupported && !hopper()) {
        fprintf(c->out, "  %-58s skipped: no sm_90a device\n", what);
        goto done;
    }
    KK(rc);
    CK(cudaMemcpy(ob, dout, 2 * no, cudaMemcpyDeviceToHost));
    to_float(of, ob, no);
    ref_linear(gu, xf, wf, rows, K, 2 * F);
    for (int64_t i = 0; i < 2 * no; i++)
        gu[i] = eng_bf2f(eng_f2bf(gu[i]));
    ref_swiglu(rf, gu, rows, F);
    report(c, what, check_rel_err(of, rf, no), 1e-2);
done:
    cudaFree(dx), cudaFree(dw), cudaFree(dout);
    free(xf), free(wf), free(gu), free(rf), free(of), free(xb), free(wb), free(ob);
}

/* The outputs of a few steps, kept to compare engines bit for bit. */
struct step_outs {
    int n;
    int32_t *tok;
    float *maxv, *conf, *hidden;
};

static void outs_free(struct step_outs *o)
{
    free(o->tok), free(o->maxv), free(o->conf), free(o->hidden);
    memset(o, 0, sizeof *o);
}

/* Runs the steps (arena poisoned before each) and keeps every output. */
static int run_steps(struct eng *e, const struct model_cfg *m, struct step_desc *steps, int n,
                     struct step_outs *o, struct ts_err *err)
{
    memset(o, 0, sizeof *o);
    for (int k = 0; k < n; k++) {
        struct eng_out out;
        if (eng_poison_workspace(e, err) || eng_step(e, &steps[k], &out, NULL, err))
            return -1;
        int base = o->n;
        o->n += out.R;
        o->tok = xrealloc(o->tok, 4 * (size_t)o->n);
        o->maxv = xrealloc(o->maxv, 4 * (size_t)o->n);
        o->conf = xrealloc(o->conf, 4 * (size_t)o->n);
        o->hidden = xrealloc(o->hidden, 4 * (size_t)o->n * m->hidden);
        memcpy(o->tok + base, out.tok, 4 * (size_t)out.R);
        memcpy(o->maxv + base, out.maxv, 4 * (size_t)out.R);
        memcpy(o->conf + base, out.conf, 4 * (size_t)out.R);
        if (eng_last_hidden(e, o->hidden + (size_t)base * m->hidden, err))
            return -1;
    }
    return 0;
}

/* The largest difference between two runs' outputs (0 when identical; infinite on a NaN or a
 * different count). */
static double outs_diff(const struct step_outs *a, const struct step_outs *b, int hidden)
{
    if (a->n != b->n)
        return INFINITY;
    double d = 0;
    for (int i = 0; i < a->n; i++) {
        d = fmax(d, a->tok[i] != b->tok[i] ? 1.0 : 0.0);
        d = fmax(d, fabs((double)a->maxv[i] - b->maxv[i]));
        d = fmax(d, fabs((double)a->conf[i] - b->conf[i]));
        if (!isfinite(a->maxv[i]) || !isfinite(b->maxv[i]))
            return INFINITY;
    }
    for (int64_t i = 0; i < (int64_t)a->n * hidden; i++) {
        if (!isfinite(a->hidden[i]) || !isfinite(b->hidden[i]))
            return INFINITY;
        d = fmax(d, fabs((double)a->hidden[i] - b->hidden[i]));
    }
    return d;
}

/* The engine options of the whole-step checks against the engine itself: small buffers, no GEMM
 * tuning (every engine then runs the same algorithms, so outputs compare bit for bit). */
static void self_check_opts(struct eng_opts *o, uint64_t seed)
{
    eng_opts_defaults(o, &check_choices);
    o->max_tokens = 1024;
    o->kv_tokens = 4096;
    o->no_tune = true;
    o->seed = seed;
}

/* Activations laid out by every planner in the virtual-memory arena give bit-identical results
 * (any two live buffers sharing memory would show), and the device memory the arena takes is the
 * plan's, to the mapping granularity. GEMM tuning is off so that every engine runs the same
 * algorithms. */
static void check_planners(struct checker *c, const struct model_cfg *m, int ffn)
{
    const char *how = ffn ? ", fused FFN" : "";
    const char *planners[] = {"first-fit", "greedy-size", "caching", "profiled", "ilp"};
    struct step_desc steps[3];
    mixed_steps(steps, 100, 3, 0);
    struct step_outs ref = {0};
    char what[128];
    for (size_t k = 0; k < TS_ARRAY_LEN(planners); k++) {
        struct eng_opts o;
        self_check_opts(&o, 91);
        o.logit_chunk_rows = 100;
        o.ffn_chunks = 3;
        o.planner = planners[k];
        o.ffn = ffn;
        o.softmax_copy = k == 2 ? 4 : 0; /* PyTorch's fp32 copy of the logits, with its allocator */
        struct eng *e = NULL;
        struct ts_err err;
        struct step_outs got = {0}, again = {0};
        int64_t before = 0, after = 0;
        /* the second run starts from an unmapped arena, after everything loaded lazily has loaded */
        if (eng_create(m, &o, &e, &err) || run_steps(e, m, steps, 3, &got, &err) ||
            eng_release_activations(e, &err) || eng_device_used(e, &before, &err) ||
            run_steps(e, m, steps, 3, &again, &err) || eng_device_used(e, &after, &err)) {
            snprintf(what, sizeof what, "planner %s%s", planners[k], how);
            fail_msg(c, what, err.msg);
        } else {
            struct eng_mem mem;
            eng_mem_info(e, &mem);
            int64_t planned = 0;
            for (int s = 0; s < 3; s++)
                planned = TS_MAX(planned, eng_step_workspace_bytes(e, &steps[s]));
            snprintf(what, sizeof what, "%s%s: a remapped arena gives the same outputs", planners[k], how);
            report(c, what, outs_diff(&got, &again, m->hidden), 0);
            if (k == 0) {
                ref = got;
                memset(&got, 0, sizeof got);
            } else {
                snprintf(what, sizeof what, "%s%s layout vs first-fit (largest output difference)", planners[k], how);
                report(c, what, outs_diff(&got, &ref, m->hidden), 0);
            }
            /* mapped: the largest plan of the three steps, rounded up to the 2 MiB granularity */
            double slack = (double)(mem.arena_mapped - planned) / 1048576.0;
            snprintf(what, sizeof what, "%s%s: mapped %.1f MiB - largest plan %.2f MiB (MiB)", planners[k], how,
                     mem.arena_mapped / 1048576.0, planned / 1048576.0);
            report(c, what, slack >= 0 && slack < 2.0 ? slack : INFINITY, 2.0);
            snprintf(what, sizeof what, "%s%s: device memory the steps took - mapped (MiB)", planners[k], how);
            if (getenv("TESSERA_GPU_SHARED")) /* the device's free memory moves with the other processes' */
                fprintf(c->out, "  %-58s not measured: TESSERA_GPU_SHARED\n", what);
            else
                report(c, what, fabs((double)(after - before - mem.arena_mapped)) / 1048576.0, 2.0);
        }
        outs_free(&again);
        outs_free(&got);
        eng_destroy(e);
    }
    outs_free(&ref);
    for (int k = 0; k < 3; k++)
        step_desc_free(&steps[k]);
}

/* The stateless engine (K/V read in place from the qkv rows, no pool) gives the pooled engine's
 * results bit for bit on no-cache steps, and refuses a step that reads a cache. */
static void check_stateless(struct checker *c, const struct model_cfg *m)
{
    struct step_desc steps[2], cached;
    step_desc_init(&steps[0]);
    step_desc_init(&steps[1]);
    step_desc_init(&cached);
    seg(&steps[0], 0, 300, 0, 300);
    seg(&steps[0], 1, 37, 0, 0);
    seg(&steps[1], 3, 130, 0, 65);
    seg(&steps[1], 4, 17, 0, 17);
    seg(&cached, 0, 32, 300, 32);
    struct step_outs a = {0}, b = {0};
    struct eng *pooled = NULL, *stateless = NULL;
    struct ts_err err;
    struct eng_opts o;
    self_check_opts(&o, 5);
    if (eng_create(m, &o, &pooled, &err) || run_steps(pooled, m, steps, 2, &a, &err)) {
        fail_msg(c, "pooled engine", err.msg);
        goto done;
    }
    o.stateless = true;
    o.kv_tokens = 0;
    if (eng_create(m, &o, &stateless, &err) || run_steps(stateless, m, steps, 2, &b, &err)) {
        fail_msg(c, "stateless engine", err.msg);
        goto done;
    }
    report(c, "stateless (K/V in the qkv rows) vs pooled (largest difference)", outs_diff(&a, &b, m->hidden), 0);
    struct eng_out out;
    bool refused = eng_step(stateless, &cached, &out, NULL, &err) != 0 && strstr(err.msg, "stateless");
    report(c, "stateless engine refuses a step that reads a cache", refused ? 0 : 1, 0);
done:
    outs_free(&a);
    outs_free(&b);
    eng_destroy(pooled);
    eng_destroy(stateless);
    step_desc_free(&steps[0]);
    step_desc_free(&steps[1]);
    step_desc_free(&cached);
}

/* RMS of the last step's hidden rows (the LM head's input) */
static int hidden_rms(struct eng *e, int rows, int hidden, double *rms, struct ts_err *err)
{
    float *hid = xmalloc(sizeof *hid * (size_t)rows * (size_t)hidden);
    int rc = eng_last_hidden(e, hid, err);
    double ss = 0;
    for (int64_t i = 0; i < (int64_t)rows * hidden; i++)
        ss += (double)hid[i] * hid[i];
    *rms = sqrt(ss / ((double)rows * hidden));
    free(hid);
    return rc;
}

/* The linear layers alone, replayed as engine bench replays them (seconds of warm-up and timing:
 * thousands of replays of a tiny step), keep the LM head's input as a whole step leaves it. The
 * logits land where the layers' inputs were planned and the residual adds go into x, so without
 * the final norm each replay would feed the next a larger x, until the GEMMs ran on inf and NaN
 * (engine bench's Reuse 16 x 32 read 10.3 ms alone, faster than its floor at the held rate).
 * Logits for every row (x normalised in place) and for some (gathered first). */
static void check_linear_alone(struct checker *c, struct eng *e, const struct model_cfg *m)
{
    for (int gathered = 0; gathered < 2; gathered++) {
        struct step_desc sd;
        step_desc_init(&sd);
        const int rows = gathered ? 60 : 200;
        seg(&sd, 5 + gathered, 200, 0, rows);
        struct eng_out out;
        struct ts_err err;
        double whole = 0, alone = 0;
        float med = 0;
        int rc = eng_step(e, &sd, &out, NULL, &err) || hidden_rms(e, rows, m->hidden, &whole, &err);
        eng_set_skip_ops(e, ~eng_linear_ops());
        rc = rc || eng_graph_capture(e, &sd, &err) || eng_graph_replay(e, 5, &med, &err) ||
             hidden_rms(e, rows, m->hidden, &alone, &err);
        eng_set_skip_ops(e, 0);
        eng_release(e, 5 + gathered);
        step_desc_free(&sd);
        char what[96];
        snprintf(what, sizeof what, "linear layers alone, replayed for 3 s: LM head input RMS / a step's - 1%s",
                 gathered ? " (gathered)" : "");
        if (rc)
            fail_msg(c, what, err.msg);
        else
            report(c, what, fabs(alone / whole - 1.0), 0.5);
    }
}

/* Ops left out of the steps (eng_set_skip_ops, engine bench's "linear layers alone") change the
 * outputs, and once none is left out the same steps give the first run's outputs bit for bit. */
static void check_skip_ops(struct checker *c, const struct model_cfg *m)
{
    struct step_desc steps[3];
    mixed_steps(steps, 2048, 1, 0);
    struct step_outs a = {0}, skipped = {0}, b = {0};
    struct eng *e = NULL;
    struct ts_err err;
    struct eng_opts o;
    self_check_opts(&o, 17);
    if (eng_create(m, &o, &e, &err) || run_steps(e, m, steps, 3, &a, &err)) {
        fail_msg(c, "skipped ops", err.msg);
        goto done;
    }
    eng_set_skip_ops(e, 1u << OP_ATTN);
    int rc = run_steps(e, m, steps, 3, &skipped, &err);
    eng_set_skip_ops(e, 0);
    if (rc || run_steps(e, m, steps, 3, &b, &err)) {
        fail_msg(c, "skipped ops", err.msg);
        goto done;
    }
    report(c, "attention left out changes the outputs", outs_diff(&a, &skipped, m->hidden) > 0 ? 0 : 1, 0);
    /* engine bench's side-by-side variants: two graphs kept and replayed in turn; a slot never
     * filled is refused */
    float med[3] = {0, 0, 0};
    struct ts_err kerr;
    eng_set_attention(e, 0);
    bool kept = eng_graph_capture(e, &steps[2], &err) == 0 && eng_graph_keep(e, 0, &err) == 0;
    eng_set_attention(e, 2);
    kept = kept && eng_graph_capture(e, &steps[2], &err) == 0 && eng_graph_keep(e, 1, &err) == 0 &&
           eng_graph_replay_kept(e, 2, 3, med, &err) == 0;
    if (!kept)
        fail_msg(c, "kept graphs", err.msg);
    else
        report(c, "kept graphs replayed in turn: both timed", med[0] > 0 && med[1] > 0 ? 0 : 1, 0);
    report(c, "replaying a graph slot never kept is refused",
           eng_graph_replay_kept(e, 3, 1, med, &kerr) != 0 && strstr(kerr.msg, "slot 2") ? 0 : 1, 0);
    report(c, "every op run again: the first run's outputs (largest difference)", outs_diff(&a, &b, m->hidden), 0);
    check_linear_alone(c, e, m);
done:
    outs_free(&a);
    outs_free(&skipped);
    outs_free(&b);
    eng_destroy(e);
    for (int k = 0; k < 3; k++)
        step_desc_free(&steps[k]);
}

/* Every kernel against the CPU reference. */
static void check_kernels(struct checker *c)
{
    fprintf(c->out, "kernels against the CPU reference (normwise relative error):\n");
    if (k_portable()) { /* the path of GPUs before Hopper: none of the sm_90a kernels may run */
        report(c, "portable kernels: the wgmma attention and GEMM stay off (ready)",
               k_attention_wgmma_ready(NULL) + k_gemm_wgmma_ready(NULL), 0);
    }
    check_rmsnorm_swiglu_gather(c, 4096);
    check_rmsnorm_swiglu_gather(c, 64);
    check_rope_store(c, 4, 2, 128, true, false, 0);
    check_rope_store(c, 8, 8, 64, false, false, 0);
    check_rope_store(c, 4, 2, 128, false, true, 0);  /* Qwen3's, LLaDA-MoE's QK norms */
    check_rope_store(c, 4, 2, 128, true, true, 64);  /* LLaDA2.0's: rotary over half of each head */
    check_rope_store(c, 8, 8, 64, false, true, 32);
    /* heads, K/V heads, head dim, block size, key split, page tokens: on the long and on the short
     * query set each; a few on the set of one long segment over many keys */
    static const int attn_cases[][6] = {{8, 2, 128, 0, 0, 16}, {8, 2, 128, 0, 1, 16}, {8, 2, 128, 32, 0, 16},
                                        {8, 2, 128, 32, 1, 16}, {4, 4, 64, 0, 0, 16},  {4, 4, 64, 0, 1, 16},
                                        {8, 2, 128, 0, 0, 1}};
    for (int set = SET_LONG; set <= SET_SHORT; set++)
        for (size_t i = 0; i < TS_ARRAY_LEN(attn_cases); i++) {
            const int *k = attn_cases[i];
            check_attention(c, k[0], k[1], k[2], k[3], k[4], k[5], set);
        }
    for (size_t i = 0; i < 4; i++) {
        const int *k = attn_cases[i];
        check_attention(c, k[0], k[1], k[2], k[3], k[4], k[5], SET_ONE);
        check_attention(c, k[0], k[1], k[2], k[3], k[4], k[5], SET_TINY);
    }
    check_attention(c, 12, 2, 128, 32, true, 16, SET_SHORT); /* 6 query heads a K/V head: packs of 2 */
    check_attention(c, 8, 2, 64, 0, true, 16, SET_TINY);     /* head dim 64, packs of 4 */
    check_attention(c, 32, 32, 128, 0, false, 16, SET_LONG);
    check_gemm_swiglu(c, 16, 256, 256);   /* one tile of 16 rows: X's box of 16, the upper consumer idle */
    check_gemm_swiglu(c, 20, 640, 256);   /* a box of 24 rows over 20 (4 read as zeros), 10 stages */
    check_gemm_swiglu(c, 72, 256, 384);   /* the upper consumer's 8 rows */
    check_gemm_swiglu(c, 100, 256, 256);  /* one partial row tile: single blocks */
    check_gemm_swiglu(c, 136, 256, 256);  /* a cluster of two tiles, the second's upper consumer idle */
    check_gemm_swiglu(c, 300, 640, 384);  /* three row tiles (single blocks), 10 stages a tile */
    check_gemm_swiglu(c, 500, 256, 384);  /* four: clusters of two, the last tile partial */
    check_gemm_swiglu(c, 2000, 256, 2048); /* more clusters' work than fit at once */
    check_argmax(c, 126464);
    check_argmax(c, 1003);
    check_drift(c, 32, 32, 128, 300, 16, 12, false);
    check_drift(c, 8, 2, 64, 1111, 5, 30, true);
    check_rollout(c, 32, 32, 128, 300);
    check_rollout(c, 8, 2, 64, 777);
    check_sparsed_all(c);
    check_select_kernels(c);
    check_fc_kernels(c, 128, false);
    check_fc_kernels(c, 512, true);
    check_focus_kernels(c, 8, 2, 128, 29, 32);
    check_focus_kernels(c, 4, 4, 64, 100, K_FOCUS_MAX_CAND);
    check_moe_kernel_cases(c);
    check_unmask_kernel(c);
    check_credit_kernel(c, 1003);
    check_credit_kernel(c, 126464);
}

static void check_moe_steps(struct checker *c);

/* The tiny models whole steps run on: GQA with head dim 64, and a QKV bias with head dim 128. */
static const struct model_cfg tiny_gqa = {.name = "tiny-gqa-d64", .num_layers = 2, .hidden = 256, .num_heads = 4,
                                          .num_kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 1000,
                                          .max_pos = 4096, .rope_theta = 10000.0, .weight_bytes = 2, .kv_bytes = 2};

/* tiny_gqa with Qwen3's per-head QK norms (SDAR's), a rotary embedding over half of each head and
 * Qwen3's norm epsilon. */
static const struct model_cfg tiny_qk = {.name = "tiny-qknorm-d64", .num_layers = 2, .hidden = 256, .num_heads = 4,
                                         .num_kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 1000,
                                         .max_pos = 4096, .rope_theta = 10000.0, .rms_eps = 1e-6, .qk_norm = true,
                                         .rotary_dim = 32, .weight_bytes = 2, .kv_bytes = 2};

/* SparseD's steps (eng_sparsed_next) against the CPU reference: two requests of every position (300
 * and 200 positions, blocks of `block` rows, select 0.3), a step building both patterns (dense attention), then
 * one attending by them (the reference given the engine's patterns, eng_ref_force_blocks). Each
 * pattern keeps, in every layer, head and query block, exactly pass 2's count of the response's
 * blocks and at most pass 1's of the prompt's. */
static void check_sparsed_steps(struct checker *c, const struct model_cfg *m, int block)
{
    struct eng_opts o;
    ref_step_opts(&o, 0, 128);
    o.room[EXT_SPARSED] = (struct eng_ext_room){2, 512}, o.ext.sparsed_block = block, o.ext.sparsed_select = 0.3;
    const int N[2] = {300, 200}, P[2] = {180, 150}, layers = m->num_layers, H = m->num_heads;
    struct eng *e = NULL;
    struct eng_ref *r = NULL;
    struct ts_err err;
    struct eng_plan p;
    eng_plan_init(&p);
    struct eng_kv kv;
    eng_kv_init(&kv, o.page_tokens, 256);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = 64;
    for (int i = 0; i < 2; i++) {
        const struct segment g = {.req_id = i, .phase = PHASE_FULL, .q = N[i], .kv_write = N[i], .logit_rows = 40};
        step_desc_add(&sd, &g);
    }
    const int nb0 = (N[0] + block - 1) / block, nb1 = (N[1] + block - 1) / block;
    uint8_t *keep[2] = {xmalloc((size_t)layers * H * nb0 * nb0), xmalloc((size_t)layers * H * nb1 * nb1)};
    float *href = NULL, *hgpu = NULL, *rmax = NULL, *rconf = NULL;
    int32_t *rtok = NULL;
    char what[160];
    if (eng_create(m, &o, &e, &err) || eng_ref_create(m, NULL, o.seed, &r, &err)) {
        fail_msg(c, "engine create", err.msg);
        goto done;
    }
    for (int step = 0; step < 2; step++) {
        const struct eng_sparsed_req q[2] = {{0, 0, P[0], step == 0}, {1, 1, P[1], step == 0}};
        struct eng_out out;
        if (eng_sparsed_next(e, q, 2, &err) || eng_poison_workspace(e, &err) || eng_step(e, &sd, &out, NULL, &err) ||
            eng_plan_build(&p, &kv, &sd, m->vocab, o.seed, &err)) {
            fail_msg(c, "SparseD step", err.msg);
            goto done;
        }
        if (!href) {
            href = xmalloc(4 * (size_t)p.R * m->hidden), hgpu = xmalloc(4 * (size_t)p.R * m->hidden);
            rmax = xmalloc(4 * (size_t)p.R), rconf = xmalloc(4 * (size_t)p.R), rtok = xmalloc(4 * (size_t)p.R);
        }
        int wrong = 0;
        for (int i = 0; step == 1 && i < 2; i++) {
            int32_t nb = 0;
            if (eng_sparsed_pattern(e, i, keep[i], &nb, &err)) {
                fail_msg(c, "SparseD pattern", err.msg);
                goto done;
            }
            eng_ref_force_blocks(r, i, keep[i], o.ext.sparsed_block);
            const int last = TS_MIN((P[i] + block - 1) / block, nb - 1), ng = nb - last;
            const int top1 = TS_MIN(nb, (int)(nb * o.ext.sparsed_select) + 1), top2 = TS_MIN(ng, (int)(ng * o.ext.sparsed_select) + 1);
            for (int64_t row = 0; row < (int64_t)layers * H * nb; row++) {
                int prompt = 0, resp = 0;
                for (int k = 0; k < nb; k++)
                    *(k < last ? &prompt : &resp) += keep[i][row * nb + k];
                wrong += resp != top2 || prompt > top1;
            }
        }
        eng_ref_step(r, &sd, &p, 0, href, rtok, rmax, rconf);
        if (eng_last_hidden(e, hgpu, &err)) {
            fail_msg(c, "read hidden", err.msg);
            goto done;
        }
        snprintf(what, sizeof what, "SparseD %s step of %s, blocks of %d: final hidden", step ? "sparse" : "building",
                 m->name, block);
        report(c, what, check_rel_err(hgpu, href, (int64_t)p.R * m->hidden), 3e-2);
        if (step == 1) {
            snprintf(what, sizeof what, "SparseD patterns of %s: query blocks keeping other counts", m->name);
            report(c, what, wrong, 0);
        }
    }
    /* a step whose segments carry a sparse pattern that no entry names is refused */
    {
        struct step_desc sk;
        step_desc_init(&sk);
        sk.logit_chunk_rows = 64;
        const struct segment g = {.req_id = 0, .phase = PHASE_FULL, .q = N[0], .kv_write = N[0], .logit_rows = 40,
                                  .attn_keys = 100};
        step_desc_add(&sk, &g);
        struct eng_out o2;
        const bool unnamed = eng_step(e, &sk, &o2, NULL, &err) != 0 && strstr(err.msg, "no SparseD entry");
        report(c, "SparseD: a sparse pattern no entry names refused", unnamed ? 0 : 1, 0);
        step_desc_free(&sk);
    }
    /* a sparse step over a slot built at another length is refused, naming both */
    const struct eng_sparsed_req bad = {1, 0, P[0], false};
    struct eng_out out;
    const bool refused = eng_sparsed_next(e, &bad, 1, &err) == 0 && eng_step(e, &sd, &out, NULL, &err) != 0 &&
                         strstr(err.msg, "built over 300 positions");
    snprintf(what, sizeof what, "SparseD: a pattern of another length refused");
    report(c, what, refused ? 0 : 1, 0);
done:
    eng_destroy(e);
    eng_ref_destroy(r);
    eng_plan_free(&p);
    eng_kv_free(&kv);
    step_desc_free(&sd);
    free(keep[0]), free(keep[1]), free(href), free(hgpu), free(rmax), free(rconf), free(rtok);
}

/* Whole steps against the CPU reference, the engine against itself, the planned activations. */
static void check_engine_steps(struct checker *c)
{
    fprintf(c->out, "whole steps against the CPU reference:\n");
    struct model_cfg tiny_a = tiny_gqa;
    struct model_cfg tiny_b = {.name = "tiny-bias-d128", .num_layers = 2, .hidden = 256, .num_heads = 2,
                               .num_kv_heads = 1, .head_dim = 128, .ffn = 768, .vocab = 2048,
                               .max_pos = 4096, .rope_theta = 1000000.0, .qkv_bias = true,
                               .weight_bytes = 2, .kv_bytes = 2};
    const struct { /* check_steps' models and arguments */
        const struct model_cfg *m;
        int block_size, logit_chunk, ffn;
    } dense[] = {{&tiny_a, 0, 64, 0}, {&tiny_b, 0, 1024, 0}, {&tiny_a, 32, 50, 0},
                 {&tiny_a, 0, 64, 1}, {&tiny_b, 0, 1024, 1}, {&tiny_a, 32, 50, 2}, {&tiny_qk, 32, 64, 0}};
    for (size_t i = 0; i < TS_ARRAY_LEN(dense); i++)
        if (take(c))
            check_steps(c, dense[i].m, dense[i].block_size, dense[i].logit_chunk, dense[i].ffn);
    if (take(c))
        check_sparse_steps(c, &tiny_a, false, 3);
    if (take(c))
        check_sparse_steps(c, &tiny_a, true, 3);
    if (take(c))
        check_sparse_steps(c, &tiny_b, true, 1);
    if (take(c))
        check_fc_steps(c, &tiny_a);
    if (take(c))
        check_fc_steps(c, &tiny_b);
    if (take(c))
        check_focus_steps(c, &tiny_a, 0);
    if (take(c))
        check_focus_steps(c, &tiny_b, 32);
    if (take(c))
        check_elastic_steps(c, &tiny_a);
    if (take(c))
        check_elastic_steps(c, &tiny_b);
    if (take(c))
        check_sparsed_steps(c, &tiny_a, 64);
    if (take(c))
        check_moe_steps(c);
    struct model_cfg tiny_qk4 = tiny_qk; /* FOCUS: two front layers, two later ones */
    tiny_qk4.num_layers = 4;
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "block", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "dual", false);
    if (take(c))
        check_generation(c, &tiny_qk, 32, UNMASK_HIERARCHICAL, "block", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_CREDIT, "dual", false);
    if (take(c))
        check_generation(c, &tiny_qk4, 32, UNMASK_THRESHOLD, "focus", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "dual", true);
    if (take(c))
        check_generation(c, &tiny_qk, 32, UNMASK_CREDIT, "block", true);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_HIERARCHICAL, "vicinity", true);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "dpad:none", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "dpad:prefix", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "dpad:dual", false);
    if (take(c))
        check_generation(c, &tiny_a, 0, UNMASK_THRESHOLD, "sparsed", false);
    fprintf(c->out, "the engine against itself:\n");
    if (take(c))
        check_self(c, &tiny_b);
    if (take(c))
        check_moves(c, &tiny_a);
    if (take(c))
        check_weights_file(c, &tiny_a, ST_NAMES_LLADA);
    if (take(c))
        check_weights_file(c, &tiny_b, ST_NAMES_QWEN);
    if (take(c))
        check_weights_file(c, &tiny_qk, ST_NAMES_QWEN);
    fprintf(c->out, "activations planned in the virtual-memory arena:\n");
    if (take(c))
        check_planners(c, &tiny_a, 0);
    if (take(c))
        check_planners(c, &tiny_b, 0);
    if (take(c))
        check_planners(c, &tiny_a, 1);
    if (take(c))
        check_stateless(c, &tiny_a);
    if (take(c))
        check_stateless(c, &tiny_b);
    if (take(c))
        check_skip_ops(c, &tiny_a);
}

/* The sparse selection alone: its kernels and whole sparse steps (a sanitizer's short run). */
static void check_select_only(struct checker *c)
{
    fprintf(c->out, "the sparse selection: kernels and whole steps against the CPU reference:\n");
    check_select_kernels(c);
    check_sparse_steps(c, &tiny_gqa, false, 3);
    check_sparse_steps(c, &tiny_gqa, true, 3);
}

/* The feature cache alone: its kernels and whole dLLM-Cache steps. */
static void check_fc_only(struct checker *c)
{
    fprintf(c->out, "the feature cache: kernels and whole steps against the CPU reference:\n");
    check_fc_kernels(c, 128, false);
    check_fc_kernels(c, 512, true);
    check_fc_steps(c, &tiny_gqa);
}

/* Tiny mixtures of experts: every layer routed (8 experts, top 2; its widths fit the wgmma grouped
 * GEMM, which its steps run on Hopper), and one with a dense first layer and a shared expert (16
 * experts, top 4; on fragments everywhere); their steps with the FFN in one chunk and in two. */
static const struct model_cfg tiny_moe = {.name = "tiny-moe", .num_layers = 2, .hidden = 256, .num_heads = 4,
                                          .num_kv_heads = 2, .head_dim = 64, .vocab = 1000, .max_pos = 4096,
                                          .rope_theta = 10000.0, .num_experts = 8, .experts_top_k = 2,
                                          .moe_ffn = 128, .weight_bytes = 2, .kv_bytes = 2};
static const struct model_cfg tiny_moe_shared = {
    .name = "tiny-moe-shared", .num_layers = 3, .hidden = 128, .num_heads = 2, .num_kv_heads = 1, .head_dim = 64,
    .ffn = 256, .vocab = 1000, .max_pos = 4096, .rope_theta = 10000.0, .block_causal = true, .num_experts = 16,
    .experts_top_k = 4, .moe_ffn = 64, .num_shared_experts = 1, .first_dense_layers = 1, .weight_bytes = 2,
    .kv_bytes = 2};

/* LLaDA2.0's layer in small: per-head QK norms, rotary over half of each head, sigmoid scores with an
 * expert bias, the best 2 of 4 groups, weights renormalised times 2.5. */
static const struct model_cfg tiny_moe_llada2 = {
    .name = "tiny-moe-llada2", .num_layers = 3, .hidden = 128, .num_heads = 2, .num_kv_heads = 1, .head_dim = 64,
    .ffn = 256, .vocab = 1000, .max_pos = 4096, .rope_theta = 10000.0, .rms_eps = 1e-6, .qk_norm = true,
    .rotary_dim = 32,
    .block_causal = true, .num_experts = 16, .experts_top_k = 4, .moe_ffn = 64, .num_shared_experts = 1,
    .first_dense_layers = 1, .router_sigmoid = true, .expert_bias = true, .norm_topk = true, .n_group = 4,
    .topk_group = 2, .routed_scale = 2.5, .weight_bytes = 2, .kv_bytes = 2};

static void check_moe_steps(struct checker *c)
{
    const struct model_cfg *models[3] = {&tiny_moe, &tiny_moe_shared, &tiny_moe_llada2};
    static const int runs[3][2] = {{1, 1}, {2, 1}, {1, 2}}; /* FFN chunks, eng_opts.routing */
    for (int i = 0; i < 3; i++)
        for (int u = 0; u < 3; u++) {
            const int chunks = runs[u][0];
            struct eng_opts o;
            ref_step_opts(&o, 0, 64);
            o.routing = runs[u][1];
            struct step_desc steps[3];
            mixed_steps(steps, 64, chunks, models[i]->block_causal ? 32 : 0);
            char label[64];
            snprintf(label, sizeof label, ", FFN in %d chunk%s, %s routing", chunks, chunks > 1 ? "s" : "",
                     o.routing == 2 ? "balanced" : "router's");
            compare_steps(c, models[i], &o, steps, 3, label);
            for (int k = 0; k < 3; k++)
                step_desc_free(&steps[k]);
        }
    /* checkpoints with LLaDA-MoE's and LLaDA2.0's tensor names */
    check_weights_file(c, &tiny_moe, ST_NAMES_QWEN);
    check_weights_file(c, &tiny_moe_llada2, ST_NAMES_LLADA2);
}

/* The mixture of experts alone: its kernels and whole steps of the tiny MoE models. */
static void check_moe_only(struct checker *c)
{
    fprintf(c->out, "mixtures of experts: kernels and whole steps against the CPU reference:\n");
    check_moe_kernel_cases(c);
    check_moe_steps(c);
}

/* FOCUS's eviction alone: its kernels and whole evicting steps. */
static void check_focus_only(struct checker *c)
{
    fprintf(c->out, "FOCUS's eviction: kernels and whole steps against the CPU reference:\n");
    check_focus_kernels(c, 8, 2, 128, 29, 32);
    check_focus_kernels(c, 4, 4, 64, 100, K_FOCUS_MAX_CAND);
    check_focus_steps(c, &tiny_gqa, 0);
    check_focus_steps(c, &tiny_gqa, 32);
}

/* Elastic-Cache's steps alone, over the input cache. */
static void check_sparsed_only(struct checker *c)
{
    check_sparsed_all(c);
    fprintf(c->out, "SparseD's steps against the CPU reference:\n");
    check_sparsed_steps(c, &tiny_gqa, 64);
    check_sparsed_steps(c, &tiny_qk, 64);
    const struct model_cfg tiny_d128 = {.name = "tiny-d128", .num_layers = 2, .hidden = 256, .num_heads = 2,
                                        .num_kv_heads = 1, .head_dim = 128, .ffn = 768, .vocab = 2048,
                                        .max_pos = 4096, .rope_theta = 1000000.0, .weight_bytes = 2, .kv_bytes = 2};
    check_sparsed_steps(c, &tiny_d128, 128); /* head dim 128, blocks of 128: the wgmma kernel's long items */
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "sparsed", false);
}

static void check_elastic_only(struct checker *c)
{
    fprintf(c->out, "Elastic-Cache's steps over the input cache against the CPU reference:\n");
    check_elastic_steps(c, &tiny_gqa);
    check_elastic_steps(c, &tiny_qk);
}

/* Generation alone: the unmasking kernel and whole generations with real token ids. */
static void check_generate_only(struct checker *c)
{
    fprintf(c->out, "generation: the unmasking kernel and whole generations against the CPU reference:\n");
    check_unmask_kernel(c);
    check_credit_kernel(c, 1003);
    check_credit_kernel(c, 126464);
    struct model_cfg tiny_qk4 = tiny_qk; /* FOCUS: two front layers, two later ones */
    tiny_qk4.num_layers = 4;
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "block", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "dual", false);
    check_generation(c, &tiny_qk, 32, UNMASK_HIERARCHICAL, "block", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_CREDIT, "dual", false);
    check_generation(c, &tiny_qk4, 32, UNMASK_THRESHOLD, "focus", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "dual", true);
    check_generation(c, &tiny_qk, 32, UNMASK_CREDIT, "block", true);
    check_generation(c, &tiny_gqa, 0, UNMASK_HIERARCHICAL, "vicinity", true);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "dpad:none", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "dpad:prefix", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "dpad:dual", false);
    check_generation(c, &tiny_gqa, 0, UNMASK_THRESHOLD, "sparsed", false);
}

int check_engine_run(uint64_t seed, const char *only, int part, int parts, FILE *out)
{
    struct checker c = {out, 0, 0, seed, part, parts, 0};
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        fprintf(out, "engine check: no CUDA device here (it runs on a GPU machine: make check-gpu)\n");
        return 2;
    }
    if (!only || strcmp(only, "kernels") == 0)
        check_kernels(&c);
    if (!only || strcmp(only, "steps") == 0)
        check_engine_steps(&c);
    if (only && strcmp(only, "select") == 0)
        check_select_only(&c);
    if (only && strcmp(only, "fc") == 0)
        check_fc_only(&c);
    if (only && strcmp(only, "focus") == 0)
        check_focus_only(&c);
    if (only && strcmp(only, "elastic") == 0)
        check_elastic_only(&c);
    if (only && strcmp(only, "sparsed") == 0)
        check_sparsed_only(&c);
    if (only && strcmp(only, "moe") == 0)
        check_moe_only(&c);
    if (only && strcmp(only, "generate") == 0)
        check_generate_only(&c);
    if (only && strcmp(only, "moves") == 0) {
        fprintf(out, "a request's K/V moved between two engines:\n");
        check_moves(&c, &tiny_gqa);
        check_moves(&c, &tiny_qk);
    }
    fprintf(out, "engine check: %d passed, %d failed\n", c.passed, c.failed);
    return c.failed ? 1 : 0;
}
