/*
 * rounds.h: a serving runtime priced by its rounds measured whole (an implementation profile with
 * `rounds`, SGLang's: --impl sglang). A round is what the runtime's scheduler runs between two looks
 * at its queue: one forward (first done, first out; a prefill round) or a block's forwards back to back
 * (sync). Its measured rows (experiments/validate/sglang_rounds.py writes them from the runtime's own
 * rounds, sim/data/rounds/GPU-MODEL-IMPL.csv) give, for each mode and phase, a forward's time and the
 * host's work between that round and the next (charged at a round's start) by the round's shape, and a
 * least-squares fit of each (a mode and phase needs a row for each coefficient at least):
 *   forward_ms = a(g) + c_req (n - g) + c_kv K / 1000
 *   host_ms    = h0 + h1 n + h2 K / 1000
 * n the round's requests, g the captured CUDA-graph batch it runs as (n and padding), K its requests'
 * sequence lengths summed (cached keys and the block's rows: what its attention reads), a(g) one
 * coefficient a measured graph batch (linear between them). The scheduler that runs the rounds says,
 * beside the step it builds, the round's mode and whether the step begins one (struct round_step); the
 * step's prefill rows say its phase.
 */
#ifndef TESSERA_ROUNDS_H
#define TESSERA_ROUNDS_H

#include <stdbool.h>
#include <stdint.h>

#include "step_desc.h"
#include "util.h"

/* A round's mode: a forward a round (first done, first out) or a block's forwards a round (sync). */
enum { ROUND_NONE = 0, ROUND_FDFO, ROUND_SYNC, ROUND_MODES };
/* What a step is of its round, as the scheduler running the rounds says (sim.round; cleared each step). */
struct round_step {
    int8_t mode;  /* ROUND_FDFO or ROUND_SYNC; ROUND_NONE: no scheduler of rounds built the step */
    bool begins;  /* the step begins a round: the host's work between rounds is charged to it */
};

#define ROUNDS_MAX_GRAPHS 64
enum { ROUNDS_PREFILL, ROUNDS_DENOISE, ROUNDS_PHASES };

struct rounds_fit {
    int rows;                            /* measured rows it was fitted on (0: none, no fit) */
    int graphs;
    int32_t graph[ROUNDS_MAX_GRAPHS];    /* the measured graph batches, ascending */
    double a[ROUNDS_MAX_GRAPHS];         /* ms: a forward of a full graph of that batch, no keys */
    double c_req, c_kv;                  /* ms a request short of the graph; ms per 1,000 keys */
    double h0, h1, h2;                   /* the host line: ms, ms a request, ms per 1,000 keys */
    double rms_pct;                      /* the fit's forward-and-host residual over its rows (root mean square, %) */
    double kv_max;                       /* the longest sequence a request its rows measured (tokens) */
};

struct rounds_profile {
    char path[1088];
    char device[64], model[64], impl[32];
    struct rounds_fit fit[ROUND_MODES][ROUNDS_PHASES]; /* [ROUND_FDFO or ROUND_SYNC][phase]; [ROUND_NONE] unused */
};

/* The shipped profile of impl for model on gpu: DATADIR/rounds/GPU-MODEL-IMPL.csv. */
void rounds_shipped_path(const char *datadir, const char *gpu, const char *model, const char *impl, char *out,
                         size_t len);
/* Parses and fits the profile text (path names it in messages: file, line and field); rows of another
 * device, model or implementation than gpu, model and impl are refused. */
int rounds_parse(const char *path, char *text, const char *gpu, const char *model, const char *impl,
                 struct rounds_profile *out, struct ts_err *err);
int rounds_load(const char *path, const char *gpu, const char *model, const char *impl, struct rounds_profile *out,
                struct ts_err *err);
/* A step of the runtime's scheduler: its forward's seconds and the host's between rounds (0 unless the
 * step begins a round). A graph batch beyond the measured ones is priced on the line through the last two,
 * and requests' sequences longer than the measured ones on the fit's lines, where extrapolate is set
 * (*beyond then says so), else refused; a mode and phase the profile did not measure is refused. */
int rounds_price(const struct rounds_profile *p, const struct step_desc *sd, const struct round_step *rs,
                 bool extrapolate, double *forward_s, double *host_s, bool *beyond, struct ts_err *err);

#endif
