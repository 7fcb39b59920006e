/* allreduce.c: the time of a tensor-parallel all-reduce (cost.h). Measured: NCCL's times for bf16
 * buffers on a GPU kind at a TP degree (sim/data/allreduce.csv, gpu,tp,bytes,us, as
 * engine/bench/allreduce_bench.py writes them), interpolated linearly in log-log, its largest
 * size's bandwidth beyond it and its smallest's time below it. Else the ring's bytes over the link:
 * ALLREDUCE_LATENCY_S + 2 (N - 1) / N x bytes / link bandwidth. */
#include "cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int allreduce_load(const char *path, const char *gpu, int32_t tp, double link_bw, struct allreduce_model *out,
                   struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    out->tp = tp;
    out->link_bw = link_bw;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0; /* no measurements: the link's bandwidth */
    char line[256], name[64];
    long lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1 || line[0] == '#' || line[0] == '\n')
            continue;
        int t, used = 0;
        double bytes, us;
        if (sscanf(line, "%63[^,],%d,%lf,%lf %n", name, &t, &bytes, &us, &used) != 4 || line[used] ||
            !(bytes > 0) || !(us > 0) || !isfinite(bytes) || !isfinite(us) || t < 2) {
            rc = ts_fail(err, "%s:%ld: expected gpu,tp,bytes,us (tp 2 or more, bytes and us finite and above 0)",
                         path, lineno);
            break;
        }
        if (!ts_name_eq(name, gpu) || t != tp)
            continue;
        if (out->n == ALLREDUCE_POINTS || (out->n > 0 && log(bytes) <= out->x[out->n - 1])) {
            rc = ts_fail(err, "%s:%ld: bytes: %s tp %d's sizes must grow, at most %d of them", path, lineno, gpu, tp,
                         ALLREDUCE_POINTS);
            break;
        }
        out->x[out->n] = log(bytes);
        out->y[out->n] = log(us * 1e-6);
        out->n++;
    }
    fclose(f);
    if (rc)
        out->n = 0;
    return rc;
}

double allreduce_s(const struct allreduce_model *m, double bytes)
{
    if (bytes <= 0 || m->tp < 2)
        return 0;
    if (m->n < 2)
        return ALLREDUCE_LATENCY_S + 2.0 * (m->tp - 1) / m->tp * bytes / m->link_bw;
    const double x = log(bytes);
    if (x <= m->x[0])
        return exp(m->y[0]);
    if (x >= m->x[m->n - 1])
        return exp(m->y[m->n - 1]) * bytes / exp(m->x[m->n - 1]);
    int i = 1;
    while (m->x[i] < x)
        i++;
    const double w = (x - m->x[i - 1]) / (m->x[i] - m->x[i - 1]);
    return exp(m->y[i - 1] + w * (m->y[i] - m->y[i - 1]));
}
