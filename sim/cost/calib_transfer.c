/* calib_transfer.c: carrying a calibration over to a GPU it was not measured on, and the band of
 * how far such a transfer may be off. Each profiled op's time is split into its roofline time on
 * the source GPU (over measured ceilings where both GPUs have them) and what it took beyond that
 * (launches, waves, synchronisation: latency the roofline does not see); the first is priced on the
 * target GPU by the roofline, the second kept as it is. An op measured faster than its roofline
 * (an efficiency the implementation profile under-states) scales by the roofline ratio whole. A
 * step's time scales as the sum of its ops does (transfer_totals). */
#include <math.h>
#include <string.h>

#include "calib.h"
#include "config.h"
#include "cost.h"
#include "gpu.h"
#include "model.h"

/* Where both GPUs' ceilings were measured (DATADIR/gpu_measured.csv), the GEMM rate each reaches
 * (not the lower rate it holds for 2 s under its power limit: a profile times each op or step in
 * short runs, and the held ratio left every H200/H100 transfer but tessera-fused LLaDA-8B's further
 * off, analysis/transfer_check.sh, sim/docs/calibration.md) and its copy bandwidth in place of the datasheet's
 * peaks: the ratios a transfer scales by are then measured ones. Mixing one GPU's measured figures
 * with another's datasheet would bias the ratio, so one measured is not enough. */
static int measured_ceilings(struct gpu_spec *a, struct gpu_spec *b, struct ts_err *err)
{
    struct sim_config c;
    sim_config_defaults(&c);
    char path[CFG_PATH + 32];
    snprintf(path, sizeof path, "%s/gpu_measured.csv", c.datadir);
    struct gpu_measured ma, mb;
    const int fa = gpu_measured_find(path, a->name, &ma, err), fb = fa < 0 ? -1 : gpu_measured_find(path, b->name, &mb, err);
    if (fa < 0 || fb < 0)
        return -1;
    if (fa && fb) {
        a->bf16_flops = ma.gemm_flops, a->mem_bw = ma.copy_bw;
        b->bf16_flops = mb.gemm_flops, b->mem_bw = mb.copy_bw;
    }
    return 0;
}

/* Roofline contexts of one model and implementation on two GPUs (their measured ceilings where both
 * have them); gpu_only: without the implementation's launch and host costs, for a calibration that
 * measured its host apart from its GPU (an eager one: its ops are GPU time, its host is a line of its
 * own, and a launch floor in the ratio would keep a small op's GPU time on a slower card). */
static int two_gpus(const char *model, const char *from, const char *to, const char *impl, bool gpu_only,
                    struct cost_ctx *src, struct cost_ctx *dst, struct ts_err *err)
{
    memset(src, 0, sizeof *src);
    memset(dst, 0, sizeof *dst);
    struct gpu_table *t = gpu_table_create();
    int rc = model_resolve(model, &src->model, err) || gpu_lookup(t, from, &src->gpu, err) ||
                     gpu_lookup(t, to, &dst->gpu, err) || impl_resolve(impl, &src->impl, err) ||
                     measured_ceilings(&src->gpu, &dst->gpu, err)
                 ? -1 : 0;
    gpu_table_destroy(t);
    if (gpu_only)
        src->impl.launch_s = 0, src->impl.host_step_s = 0, src->impl.host_seg_s = 0;
    dst->model = src->model;
    dst->impl = src->impl;
    return rc;
}

/* A step priced by the roofline on both GPUs; ratio(op) is how much slower the op is on the
 * second (the step's ratio for an op the roofline does not price). */
struct roofline_pair {
    struct cost_breakdown a, b;
    double sa, sb;
};

static int roofline_both(const struct cost_ctx *src, const struct cost_ctx *dst, const struct step_desc *sd,
                         struct roofline_pair *p, struct ts_err *err)
{
    return cost_roofline.step_s(src, sd, &p->sa, &p->a, err) || cost_roofline.step_s(dst, sd, &p->sb, &p->b, err)
               ? -1 : 0;
}

static double roofline_ratio(const struct roofline_pair *p, int op)
{
    return p->a.op_s[op] > 0 && p->b.op_s[op] > 0 ? p->b.op_s[op] / p->a.op_s[op] : p->sb / p->sa;
}

/* Each profiled step's time on the target scales as the sum of its ops does: an op's time above its
 * roofline (launches, waves, an eager step's small kernels) takes about as long on either card, so a
 * step scales less than its roofline ratio says. Against the H100's measured profiles, the H200's
 * carried over take the steps' per-step error from 7.8-9.6% to 4.1-5.2% (tessera-fused: LLaDA-8B,
 * SDAR-8B, Dream-7B) and from 5.5% to 3.9% (tessera); in the eager profiles, the GPU time's from
 * 11.6% and 9.9% (H200 to H100 and back) to 5.1% and 5.9% (analysis/transfer_check.sh).
 * A host/GPU split profile (split): its GPU time scales so, the host's issue stays (same CPU), and
 * so does what the step took beyond the larger of the two (launch gaps); a selecting step's loop
 * waits for the GPU in every layer, so its host and GPU times add: the GPU's change adds in full. */
static void transfer_totals(const struct calib_data *in, bool split, struct calib_data *out)
{
    for (size_t i = 0; i < in->n; i++) {
        const struct calib_row *r = &in->rows[i];
        const double was = calib_step_ops_ms(in, r), now = calib_step_ops_ms(out, &out->rows[i]);
        const double ratio = was > 0 ? now / was : 1;
        if (!split) {
            out->rows[i].total_ms = r->total_ms * ratio;
            continue;
        }
        const double gpu = r->gpu_ms * ratio, over = r->total_ms - fmax(r->host_ms, r->gpu_ms);
        out->rows[i].gpu_ms = gpu;
        out->rows[i].total_ms = r->keep > 0 ? r->total_ms + (gpu - r->gpu_ms) : fmax(fmax(r->host_ms, gpu) + over, gpu);
    }
}

int calib_data_transfer(const struct calib_data *in, const char *from, const char *to, const char *impl,
                        struct calib_data *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    struct cost_ctx src, dst;
    const bool split = calib_data_host_split(in);
    if (two_gpus(in->model, from, to, impl, split, &src, &dst, err))
        return -1;
    *out = *in;
    snprintf(out->device, sizeof out->device, "%.24s (roofline transfer from %.70s)", dst.gpu.name, in->device);
    out->rows = xmalloc(sizeof *in->rows * (in->n ? in->n : 1));
    out->cap = in->n;
    struct step_desc sd;
    step_desc_init(&sd);
    for (size_t i = 0; i < in->n; i++) {
        const struct calib_row *r = &in->rows[i];
        sd.logit_chunk_rows = (int32_t)TS_MAX(1, (int64_t)r->segs * r->logit_rows);
        step_shape_desc(&r->shape, 0, &sd);
        struct roofline_pair rp;
        if (roofline_both(&src, &dst, &sd, &rp, err)) {
            step_desc_free(&sd);
            calib_data_free(out);
            return -1;
        }
        double op_ratio = roofline_ratio(&rp, r->op);
        out->rows[i] = *r;
        out->rows[i].ms = r->ms * op_ratio;
        const double ra = rp.a.op_s[r->op] * 1e3, rb = rp.b.op_s[r->op] * 1e3;
        if (ra > 0 && rb > 0 && r->ms > ra) /* the roofline's part scales, the time above it stays */
            out->rows[i].ms = rb + (r->ms - ra);
    }
    step_desc_free(&sd);
    transfer_totals(in, split, out);
    return 0;
}

int calib_transfer_band(const struct calib *c, const char *model, const char *from, const char *to,
                        const char *impl, const struct step_desc *sd, double *mid_s, double *lo_s,
                        double *hi_s, struct ts_err *err)
{
    struct cost_ctx src, dst;
    if (two_gpus(model, from, to, impl, calib_measures_host(c), &src, &dst, err))
        return -1;
    struct cost_breakdown bd;
    struct roofline_pair rp;
    if (calib_step_ctx_s(&src, c, sd, true, mid_s, &bd, err) || roofline_both(&src, &dst, sd, &rp, err))
        return -1;
    const double rc_ = src.gpu.bf16_flops / dst.gpu.bf16_flops, rm = src.gpu.mem_bw / dst.gpu.mem_bw;
    double gpu = 0, lo = 0, hi = 0;
    for (int o = 0; o < OP_COUNT; o++) {
        double v = bd.op_s[o];
        if (v <= 0 || o == OP_HOST)
            continue;
        double r = roofline_ratio(&rp, o), base = v / r;
        gpu += v;
        lo += base * fmin(r, fmin(rc_, rm));
        hi += base * fmax(r, fmax(rc_, rm));
    }
    /* a host-bound step (calib_step_s's max(host, GPU)) keeps its host time: the same host */
    double host = bd.op_s[OP_HOST] > 0 ? gpu + bd.op_s[OP_HOST] : 0;
    *lo_s = fmax(host, lo);
    *hi_s = fmax(host, hi);
    return 0;
}
