/*
 * calib_internal.h: a fitted calibration, inside: struct calib and what the files of its fit, its
 * pricing and its host share among themselves (calib.h is the outside's view).
 *
 *   calib_fit.c    the fit: the token-driven ops' curves, the least-squares fits (attention, selection,
 *                  feature cache) and the host line of a split profile; calib_fit and calib_free;
 *   calib_price.c  the attention model and the features the fits read, pricing a step (the
 *                  `calibrated` cost back end) and the report of a fit;
 *   calib_host.c   the host of an eager implementation's calibration: taken, replaced or scaled, and
 *                  host profiles read and written.
 */
#ifndef TESSERA_CALIB_INTERNAL_H
#define TESSERA_CALIB_INTERNAL_H

#include <gsl/gsl_interp.h>
#include <stdbool.h>
#include <stdint.h>

#include "calib.h"
#include "cost.h"

/* The attention model's features (attn_add, attn_finish, attn_wave_finish) */
enum {
    AF_LONG_PAIRS,      /* the wgmma kernel's segments' query-key pairs */
    AF_TILE_KEYS,       /* every segment's 64-row query tiles' keys, over the heads a block packs */
    AF_LONG_ROWS,       /* the wgmma kernel's segments' rows */
    AF_SEGS,            /* segments */
    AF_MAX_KEYS,        /* the longest segment's keys */
    AF_CONST,           /* 1 */
    AF_KV,              /* cached keys */
    AF_LONG_TILE_KEYS,  /* the wgmma kernel's 128-row tiles' keys */
    AF_WAVE_KEYS,       /* the mma.sync launch's waves of blocks over their keys */
    ATTN_FEATURES
};
#define SELECT_FEATURES 4
#define FC_FEATURES 6

/* The token-driven ops: a curve each over a step's packed tokens (struct calib.tok) */
static const enum cost_op token_ops[] = {OP_EMBED, OP_NORM, OP_QKV, OP_ROPE, OP_OPROJ,
                                         OP_GATE_UP, OP_ACT, OP_DOWN, OP_ROUTER, OP_EXPERTS, OP_ALLREDUCE};

struct curve {
    double *x, *y;
    int n;
    gsl_interp *interp;
    gsl_interp_accel *acc;
};

struct calib {
    char device[128], model[64];
    struct curve tok[OP_COUNT]; /* token-driven ops */
    struct curve lm, sample;    /* per chunk of rows */
    struct curve lm_carry, sample_carry; /* the same after layers that computed few of the rows (a
                                          * dLLM-Cache step's logits over its carried rows too); n = 0:
                                          * the profile has no such step */
    double beta[ATTN_FEATURES]; /* attention least squares */
    double sel[2][SELECT_FEATURES]; /* the selection's least squares, [sel_heads] */
    bool has_sel[2];                /* fitted (the profile had selecting steps of that kind) */
    double fc[FC_FEATURES];         /* the feature cache's least squares */
    bool has_fc;                    /* fitted (the profile had dLLM-Cache steps) */
    int heads, kv_heads, sms;   /* the model's query and K/V heads, the GPU's SMs (attn_finish) */
    int attn_rules;             /* the profiled engine's attention launch rules (calib_data's) */
    bool host_bound;            /* priced as max(host, GPU) */
    double host0, host_seg;     /* host issue time (ms) = host0 + host_seg * segments */
    double host_sel;            /* ms a selecting segment adds to a step beyond max(host, GPU): an eager
                                 * selection's loop over the sequences, which waits for the GPU in every
                                 * layer (a mask's nonzero), so its issue stalls the GPU rather than
                                 * overlapping it */
    int host_sel_steps;         /* the selecting profile steps host_sel is the median over (0: none) */
    double eager_gap;           /* ms an eager GPU-bound step adds to its graph-replayed GPU time */
    int host_steps;             /* host-bound profile steps the line was fitted on */
    bool host_own_loop;         /* the line was measured on the implementation's own loop (a host profile
                                 * naming it): a derived profile's host factor is in it already */
    double host_lo, host_hi;    /* their issue times over the line, 10th and 90th percentiles (0: none) */
    int64_t max_T;
    const struct calib_data *data; /* for residuals in calib_show (not owned; may be NULL later) */
    struct calib_data own;
};

/* calib_price.c: the features of the attention model, the selection and the feature cache, which the
 * fits (calib_fit.c) read from the profile rows and the pricing from a step */
void calib_attn_features(const struct calib_row *r, int heads, int kv_heads, int sms, int rules, double *f);
void calib_select_features(int64_t segs, int64_t cand, int64_t max_cand, double *f);
void calib_fc_features(int64_t probe_rows, int64_t computed, int64_t rows, double probe_sq, double *f);

#endif
