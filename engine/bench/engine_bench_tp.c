/*
 * engine_bench_tp.c: `engine_bench --tp N`, run by every rank of a launch (eng_tp.h); rank 0 reports.
 *
 * bench: each step replayed as a CUDA graph through the tensor-parallel engine, then through the
 * one-GPU engine on rank 0 (the other ranks idle), and the ratio; beside them the all-reduce alone
 * at the step's message size (its time as a step queues them, eng_allreduce_us, and NCCL's bus
 * bandwidth, 2 (N - 1) / N bytes over the time) and its share of the step (2 a layer); then the
 * all-reduce alone from 4 KiB to 256 MiB.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine_bench.h"

#include <stdlib.h>
#include <string.h>

#include "eng.h"
#include "eng_tp.h"

#define ALLREDUCE_SIZES 17  /* the all-reduce sweep: 4 KiB, doubling to 256 MiB */

/* The tools' engine (eng_tp_create) of this rank of a launch of `size`, or with size 0 the whole
 * model on GPU 0, said on stderr where it cannot be made. */
static int tp_engine(const struct model_cfg *m, int size, const struct eng_choices *choices, int *rank, struct eng **e)
{
    struct ts_err err;
    if (eng_tp_create(m, 1, size, choices, rank, e, &err) == 0)
        return 0;
    fprintf(stderr, "engine_bench --tp: %s%s\n", size ? "" : "the one-GPU engine: ", err.msg);
    return -1;
}

static void seg(struct step_desc *sd, int req, int q, int kv, int logits)
{
    const struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* Median milliseconds of sd's graph replays (its caches filled first), said on stderr when it fails. */
static int replay(struct eng *e, const struct step_desc *sd, int nseq, int kv, int q, int reps, float *ms)
{
    struct ts_err err;
    struct step_desc fill;
    step_desc_init(&fill);
    for (int s = 0; s < nseq && kv > 0; s++)
        seg(&fill, s, kv + q, 0, 0);
    int rc = (kv > 0 && eng_step(e, &fill, NULL, NULL, &err)) || eng_graph_capture(e, sd, &err) ||
             eng_graph_replay(e, reps, ms, &err);
    step_desc_free(&fill);
    for (int s = 0; s < nseq; s++)
        eng_release(e, s);
    if (rc)
        fprintf(stderr, "engine_bench --tp: %s\n", err.msg);
    return rc ? -1 : 0;
}

int engine_bench_tp_run(const struct engine_bench_tp_opts *o, FILE *out)
{
    static const int32_t default_steps[][4] = {{16, 512, 0, 512}, {16, 32, 480, 32}};
    const int32_t(*steps)[4] = o->nsteps ? o->steps : default_steps;
    const int n = o->nsteps ? o->nsteps : (int)TS_ARRAY_LEN(default_steps);
    const struct model_cfg *m = &o->model;
    int rank = 0;
    float tp_ms[ENG_BENCH_MAX_STEPS], one_ms[ENG_BENCH_MAX_STEPS];
    double ar_us[ENG_BENCH_MAX_STEPS];
    struct step_desc sd;
    step_desc_init(&sd);
    sd.logit_chunk_rows = ENG_TP_TOOL_LOGIT_CHUNK;
    struct eng *e = NULL;
    int rc = 1;
    struct ts_err err = {{0}};
    if (tp_engine(m, o->size, &o->choices, &rank, &e))
        goto done;
    for (int k = 0; k < n; k++) { /* the tensor-parallel engine, every rank */
        const int32_t *st = steps[k];
        step_desc_clear(&sd);
        for (int s = 0; s < st[0]; s++)
            seg(&sd, s, st[1], st[2], st[3]);
        if (replay(e, &sd, st[0], st[2], st[1], o->reps, &tp_ms[k]) ||
            eng_allreduce_us(e, (int64_t)st[0] * st[1] * m->hidden, o->reps, &ar_us[k], &err))
            goto fail;
    }
    double sweep_us[ALLREDUCE_SIZES]; /* the all-reduce alone, 4 KiB to 256 MiB */
    for (int i = 0; i < ALLREDUCE_SIZES; i++)
        if (eng_allreduce_us(e, 2048LL << i, o->reps, &sweep_us[i], &err))
            goto fail;
    eng_destroy(e);
    e = NULL;
    if (rank == 0) {
        fprintf(out, "all-reduce of bf16 values over %d GPUs as the steps queue them (%d back to back, median of 5 "
                     "runs):\n%12s %10s %10s\n", o->size, o->reps, "bytes", "us", "busbw_GBps");
        for (int i = 0; i < ALLREDUCE_SIZES; i++) {
            const double bytes = 4096.0 * (1 << i), bw = bytes * 2 * (o->size - 1) / o->size / sweep_us[i] * 1e-3;
            fprintf(out, "%12.0f %10.1f %10.1f\n", bytes, sweep_us[i], bw);
            if (o->json)
                fprintf(o->json, "{\"tp\":%d,\"allreduce_bytes\":%.0f,\"allreduce_us\":%.2f,\"busbw_GBps\":%.2f}\n",
                        o->size, bytes, sweep_us[i], bw);
        }
    }
    if (rank == 0) { /* the whole model on GPU 0 */
        if (tp_engine(m, 0, &o->choices, &rank, &e))
            goto done;
        for (int k = 0; k < n; k++) {
            const int32_t *st = steps[k];
            step_desc_clear(&sd);
            for (int s = 0; s < st[0]; s++)
                seg(&sd, s, st[1], st[2], st[3]);
            if (replay(e, &sd, st[0], st[2], st[1], o->reps, &one_ms[k]))
                goto done;
        }
        fprintf(out, "%s, tensor parallel over %d GPUs (%s), against one:\n", m->name, o->size, eng_device_name(e));
        fprintf(out, "%-36s %10s %10s %7s %14s %10s %12s\n", "step", "tp_ms", "one_ms", "ratio", "allreduce_us",
                "busbw_GBps", "allreduce_%");
        for (int k = 0; k < n; k++) {
            const int32_t *st = steps[k];
            const double bytes = 2.0 * st[0] * st[1] * m->hidden, busbw = bytes * 2 * (o->size - 1) / o->size / ar_us[k] * 1e-3;
            const double share = 100.0 * 2 * m->num_layers * ar_us[k] * 1e-3 / tp_ms[k];
            char name[80];
            snprintf(name, sizeof name, "%dx%d over %d cached, %d logits", st[0], st[1], st[2], st[3]);
            fprintf(out, "%-36s %10.3f %10.3f %7.3f %14.1f %10.1f %12.1f\n", name, tp_ms[k], one_ms[k],
                    tp_ms[k] / one_ms[k], ar_us[k], busbw, share);
            if (o->json)
                fprintf(o->json, "{\"model\":\"%s\",\"tp\":%d,\"case\":\"%s\",\"tp_ms\":%.4f,\"one_ms\":%.4f,"
                                 "\"ratio\":%.4f,\"allreduce_bytes\":%.0f,\"allreduce_us\":%.2f,\"busbw_GBps\":%.2f}\n",
                        m->name, o->size, name, tp_ms[k], one_ms[k], tp_ms[k] / one_ms[k], bytes, ar_us[k], busbw);
        }
    }
    rc = 0;
    goto done;
fail:
    if (err.msg[0])
        fprintf(stderr, "engine_bench --tp: %s\n", err.msg);
done:
    eng_destroy(e);
    step_desc_free(&sd);
    return rc;
}
