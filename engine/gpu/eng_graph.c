/*
 * eng_graph.c: CUDA graphs of steps: capture, warm-up and timed replays; the all-reduce timed alone
 * (eng_internal.h)
 */
#define _POSIX_C_SOURCE 200809L
#include "eng_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_tp.h"

int eng_graph_capture(struct eng *e, const struct step_desc *sd, struct ts_err *err)
{
    if (e->have_graph) {
        CU(cudaGraphExecDestroy(e->graph));
        e->have_graph = false;
    }
    if (eng_prepare(e, sd, true, err))
        return -1;
    /* one eager run first: GEMM shapes get tuned outside the capture */
    if (eng_forward(e, err) || eng_drop_tune_scratch(e, err))
        return -1;
    CU(cudaStreamSynchronize(e->stream));
    cudaGraph_t g;
    e->tuning = false;
    CU(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
    int rc = eng_forward(e, err);
    cudaError_t ce = cudaStreamEndCapture(e->stream, &g);
    e->tuning = true;
    if (rc)
        return -1;
    if (ce != cudaSuccess)
        return ts_fail(err, "engine: graph capture failed: %s", cudaGetErrorString(ce));
    ce = cudaGraphInstantiate(&e->graph, g, 0);
    cudaGraphDestroy(g);
    if (ce != cudaSuccess)
        return ts_fail(err, "engine: graph instantiation failed: %s", cudaGetErrorString(ce));
    e->have_graph = true;
    CU(cudaGraphLaunch(e->graph, e->stream));
    return eng_fetch_outputs(e, NULL, err);
}

/* Whether the replays go on: tensor-parallel ranks do as rank 0 says, so that each replays its
 * graphs (and their collectives) as often as the others. */
static int go_on(struct eng *e, bool *more, struct ts_err *err)
{
    double v = *more;
    if (e->tp && eng_tp_agree(e->tp, &v, ENG_TP_RANK0, e->stream, err))
        return -1;
    *more = v != 0;
    return 0;
}

/* Replays of graphs[0..n-1] in turn before any is timed: at least three rounds, and rounds until
 * eng_opts.warm_s have passed, so that a step is timed at the clock its own repetition holds under
 * the power limit rather than the one the work before it left (a 14 ms step after a lighter one ran
 * 3% faster than among its own kind; after a Refresh, Reuse 16 x 32 swung by up to 25% once a
 * second for the next 3 s); each round timed into the warm-up trace where one is set */
static int warm_up(struct eng *e, const cudaGraphExec_t *graphs, int n, double t0, struct ts_err *err)
{
    if (e->o.idle_s > 0) { /* a cool card to start from (eng_opts.idle_s) */
        CU(cudaStreamSynchronize(e->stream));
        ts_sleep_s(e->o.idle_s);
        t0 = ts_wall_s();
    }
    for (int r = 0;; r++) {
        bool more = r < 3 || ts_wall_s() - t0 < e->o.warm_s;
        if (go_on(e, &more, err))
            return -1;
        if (!more)
            break;
        if (e->warm_trace)
            CU(cudaEventRecord(e->ev0, e->stream));
        for (int g = 0; g < n; g++)
            CU(cudaGraphLaunch(graphs[g], e->stream));
        if (e->warm_trace)
            CU(cudaEventRecord(e->ev1, e->stream));
        CU(cudaStreamSynchronize(e->stream));
        if (e->warm_trace) {
            float ms;
            CU(cudaEventElapsedTime(&ms, e->ev0, e->ev1));
            fprintf(e->warm_trace, "\"%s\",warm,%d,-1,%.4f,%.4f\n", e->warm_label, r, ts_wall_s() - t0, ms / n);
        }
    }
    return 0;
}

/* Warms graphs[0..n-1] up (warm_up), then replays them in turn for at least `rounds` rounds and at
 * least ENG_TIMED_S, round r starting at graph r mod n so that no graph always follows the same
 * one, each replay timed with events; median_ms[g] is graph g's median. The second's worth keeps a
 * short step's median off the power limiter's cycle: after a Refresh it slowed Reuse 16 x 32 by up
 * to 25% for a quarter of a second, once a second, and 20 replays (0.3 s) could fall on it. */
static int time_graphs(struct eng *e, const cudaGraphExec_t *graphs, int n, int rounds, float *median_ms,
                       struct ts_err *err)
{
    if (rounds < 1)
        return ts_fail(err, "engine: %d rounds of graph replays", rounds);
    const double t0 = ts_wall_s();
    if (warm_up(e, graphs, n, t0, err))
        return -1;
    size_t cap = (size_t)n * (size_t)rounds;
    float *t = xmalloc(sizeof *t * cap);
    cudaError_t ce = cudaSuccess;
    const double t1 = ts_wall_s();
    int r = 0; /* rounds timed */
    for (; ce == cudaSuccess; r++) {
        bool more = r < rounds || ts_wall_s() - t1 < ENG_TIMED_S;
        if (go_on(e, &more, err)) {
            free(t);
            return -1;
        }
        if (!more)
            break;
        ts_grow((void **)&t, &cap, (size_t)n * (size_t)(r + 1), sizeof *t);
        for (int i = 0; i < n && ce == cudaSuccess; i++) {
            const int g = (r + i) % n;
            float *slot = &t[(size_t)r * n + g];
            ce = cudaEventRecord(e->ev0, e->stream);
            if (ce == cudaSuccess)
                ce = cudaGraphLaunch(graphs[g], e->stream);
            if (ce == cudaSuccess)
                ce = cudaEventRecord(e->ev1, e->stream);
            if (ce == cudaSuccess)
                ce = cudaEventSynchronize(e->ev1);
            if (ce == cudaSuccess)
                ce = cudaEventElapsedTime(slot, e->ev0, e->ev1);
            if (ce == cudaSuccess && e->warm_trace)
                fprintf(e->warm_trace, "\"%s\",timed,%d,%d,%.4f,%.4f\n", e->warm_label, r, g, ts_wall_s() - t0, *slot);
        }
    }
    if (ce == cudaSuccess)
        ce = cudaGetLastError();
    if (ce != cudaSuccess) {
        free(t);
        return ts_fail(err, "engine: timing graph replays failed: %s", cudaGetErrorString(ce));
    }
    /* graph g's times, gathered from the rounds */
    float *tr = xmalloc(sizeof *tr * (size_t)r);
    for (int g = 0; g < n; g++) {
        for (int k = 0; k < r; k++)
            tr[k] = t[(size_t)k * n + g];
        qsort(tr, (size_t)r, sizeof *tr, eng_cmp_float);
        median_ms[g] = tr[r / 2];
    }
    free(tr);
    free(t);
    return 0;
}

int eng_graph_replay(struct eng *e, int n, float *median_ms, struct ts_err *err)
{
    if (!e->have_graph)
        return ts_fail(err, "engine: no captured graph to replay");
    return time_graphs(e, &e->graph, 1, n, median_ms, err);
}

int eng_graph_keep(struct eng *e, int slot, struct ts_err *err)
{
    if (slot < 0 || slot >= ENG_KEPT_GRAPHS)
        return ts_fail(err, "engine: graph slot %d outside 0..%d", slot, ENG_KEPT_GRAPHS - 1);
    if (!e->have_graph)
        return ts_fail(err, "engine: no captured graph to keep");
    if (e->kept[slot])
        CU(cudaGraphExecDestroy(e->kept[slot]));
    e->kept[slot] = e->graph;
    e->have_graph = false;
    return 0;
}

int eng_graph_replay_kept(struct eng *e, int n, int rounds, float *median_ms, struct ts_err *err)
{
    if (n < 1 || n > ENG_KEPT_GRAPHS)
        return ts_fail(err, "engine: %d kept graphs", n);
    for (int g = 0; g < n; g++)
        if (!e->kept[g])
            return ts_fail(err, "engine: no graph kept in slot %d", g);
    return time_graphs(e, e->kept, n, rounds, median_ms, err);
}

int eng_allreduce_us(struct eng *e, int64_t n, int reps, double *us, struct ts_err *err)
{
    enum { TRIALS = 5 };
    if (!e->tp || n < 1 || reps < 1)
        return ts_fail(err, "engine: an all-reduce needs tensor parallelism, values and repetitions");
    bf16_t *buf;
    CU(cudaMalloc((void **)&buf, 2 * (size_t)n));
    float t[TRIALS];
    int rc = 0;
    cudaError_t ce = cudaMemsetAsync(buf, 0, 2 * (size_t)n, e->stream);
    for (int i = 0; i < 3 && ce == cudaSuccess && !rc; i++) /* warm-up */
        rc = eng_tp_allreduce(e->tp, buf, n, e->stream, err);
    for (int k = 0; k < TRIALS && ce == cudaSuccess && !rc; k++) { /* reps calls back to back, as a step queues them */
        ce = cudaEventRecord(e->ev0, e->stream);
        for (int i = 0; i < reps && ce == cudaSuccess && !rc; i++)
            rc = eng_tp_allreduce(e->tp, buf, n, e->stream, err);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventRecord(e->ev1, e->stream);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventSynchronize(e->ev1);
        if (ce == cudaSuccess && !rc)
            ce = cudaEventElapsedTime(&t[k], e->ev0, e->ev1);
    }
    cudaFree(buf);
    if (ce != cudaSuccess)
        rc = ts_fail(err, "engine: timing an all-reduce failed: %s", cudaGetErrorString(ce));
    if (!rc) {
        qsort(t, TRIALS, sizeof *t, eng_cmp_float);
        *us = 1e3 * t[TRIALS / 2] / reps;
    }
    return rc ? -1 : 0;
}
