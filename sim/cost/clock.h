/*
 * clock.h: the GPU's clock under its power limit, as a state of the simulated card.
 *
 * A compute-bound step draws the card to its power limit within tens of milliseconds, and the SM
 * clock falls (on the lent H200 and H100, 1,980 MHz to about 1,500): the same step then takes
 * 15-17% longer than on a cool card. A calibration times each step at the clock its own
 * repetition holds (engine_bench/profile), but in a serving schedule a Refresh often runs alone
 * among light Reuse steps, on a card with headroom, and a heavy step after a pause starts cool.
 *
 * The model: the card's load x is the share of time its tensor cores would be busy at the GEMM
 * rate it holds, g = FLOPs / (held rate x time), averaged over the past with time constant tau
 * (idle time counts as g = 0). The clock is throttled by theta(x) = clamp((x - lo) / (hi - lo), 0, 1),
 * and a step takes (1 + k theta) times its cool time. A calibrated step's price t is its time at its
 * own steady state (theta(g)), so at the card's state it takes
 *     t (1 + k theta(xbar)) / (1 + k theta(g)),
 * xbar the load averaged over the step as x relaxes toward g. k, tau, lo and hi are fitted to warm
 * traces of a ladder of steps, each from a cool card (`tessera calib clock`), with the GEMM rate the
 * card held in the same bench; a card's line is in clock.csv (gpu,k,tau_ms,lo,hi,held_tflops,record)
 * of the folder this machine's calibrations go to (make calibrate, calib_user_dir), else of DATADIR.
 */
#ifndef TESSERA_CLOCK_H
#define TESSERA_CLOCK_H

#include <stdint.h>
#include <stdio.h>

#include "util.h"

struct clock_params {
    double k;          /* how much longer a step takes at the held clock than cool */
    double tau_s;      /* the load's time constant */
    double lo, hi;     /* the load where the clock begins to fall, and where it is held */
    double held_flops; /* the GEMM rate the card holds under its power limit (FLOP/s) */
    char record[256];  /* where the traces it was fitted to are recorded */
};

struct clock_state {
    double x;       /* the load, 0..1 */
    int64_t end_ns; /* when the last step ended */
};

/* The clock parameters of GPU `gpu`: its line of clock.csv in this machine's calibrations' folder,
 * else in datadir. 1 found, 0 not measured, -1 on a malformed line (err names the file, line and
 * field). */
int clock_params_find(const char *datadir, const char *gpu, struct clock_params *out, struct ts_err *err);

/* The throttle at load x. */
double clock_theta(const struct clock_params *p, double x);

/* A step starting at now_ns (at or after st->end_ns; the card idle in between) priced t_s at its own
 * steady state, with `flops` of tensor-core work: its time at the card's state, which it advances. */
double clock_step(const struct clock_params *p, struct clock_state *st, int64_t now_ns, double t_s, double flops);

/* One step's warm trace (engine_bench --warm-trace): SEGS sequences of Q tokens over KV cached ones,
 * LOGITS logit rows each; every warm-up round's time from a cool card, and the median of its timed
 * replays (its own steady state). */
struct clock_trace {
    int32_t segs, q, kv, logits;
    double flops;           /* set by the caller: the step's tensor-core work */
    double held_ms;         /* the timed replays' median */
    double *warm_ms, *warm_t; /* [n] each warm-up round's time and when it ended (s from the start) */
    size_t n;
};

/* Reads the "step" traces of an engine_bench --warm-trace CSV (the variants' traces skipped):
 * *out[*n], freed with clock_traces_free. Refuses a malformed line naming the file, line and field. */
int clock_traces_read(const char *path, struct clock_trace **out, size_t *n, struct ts_err *err);
/* The same of text[0..len) held in memory, named `name` in messages. */
int clock_traces_parse(const char *name, const char *text, size_t len, struct clock_trace **out, size_t *n,
                       struct ts_err *err);
void clock_traces_free(struct clock_trace *t, size_t n);

/* The parameters (k, tau, lo, hi; held_flops as given) that best predict the warm rounds of the
 * traces within window_s of their start, each from a cool card: the least squares of the relative
 * errors, over a grid and then refined by the simplex (GSL). *rms: the fit's RMS relative error. */
int clock_fit(const struct clock_trace *t, size_t n, double window_s, struct clock_params *p, double *rms,
              struct ts_err *err);

/* The round-by-round prediction of trace t under p (a cool card at its start): pred[t->n]. */
void clock_predict(const struct clock_params *p, const struct clock_trace *t, double *pred);

#endif
