/*
 * calib.h: calibration of the cost model from the engine's measured per-op profile
 * (`tessera engine profile`). A calibration is fitted from rows
 * (segments, q, kv, logit_rows, op, ms) measured on one GPU for one model and implementation:
 *
 *   token-driven ops (embed, norm, qkv, rope, o_proj, gate_up, act, down): time as a function of the
 *     step's packed query tokens T, a monotone (Steffen) interpolation over the profiled T; a step
 *     run in FFN chunks prices gate_up, act and down piece by piece, as the engine splits its rows
 *   LM head and sampling: time per chunk as a function of the chunk's rows, summed over the step's
 *     chunks (a chunk larger than the largest profiled one counts as several of that size)
 *   attention: least squares (weights 1/t^2, i.e. relative errors) over the step's Σ q(q+kv),
 *     Σ ceil(q/64)(q+kv) (the kernel's 64-row tiles), Σ q, the segment count, the longest segment's
 *     q + kv, a constant, over the segments of at least ATTN_LONG_Q rows, which the engine gives
 *     its wgmma kernel on Hopper, Σ q(q+kv) and Σ ceil(q/128)(q+kv) again, and the mma.sync
 *     kernel's waves of blocks times the keys a block covers (its launch as the engine that was
 *     profiled made it: its attention launch rules version, the model's heads, the GPU's SMs from
 *     the profile's device name)
 * Each profiled step's op times are first scaled to the step's own time measured without the
 * per-op events (total_ms), down or up: the events cost time real steps do not spend, and a step
 * slower than its ops keeps its launch gaps in its own ops rather than in a constant for all steps.
 *
 * Below the smallest profiled T a token-driven op keeps its smallest time (the weights are read
 * whatever T is); above the largest, predictions are refused unless extrapolation is allowed.
 *
 * Host-bound implementations (eager PyTorch): when the profile also measured each step's GPU work
 * alone (gpu_ms) and the host's issue time (host_ms), a step is priced as max(host, GPU): the host
 * runs ahead of the GPU, and a small step waits for the host whatever its size. The ops are then
 * scaled to the GPU time as an eager step sees it (gpu_ms plus the launch gaps of GPU-bound steps,
 * their median of total_ms - gpu_ms), and the host time is a least-squares line in the segment
 * count fitted on the host-bound steps (host_ms above that GPU time).
 */
#ifndef TESSERA_CALIB_H
#define TESSERA_CALIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cost.h"
#include "step_desc.h"
#include "util.h"

struct calib_row {
    union { /* the profiled step's shape (step_desc.h), as a whole or field by field */
        struct step_shape shape;
        struct {
            STEP_SHAPE_FIELDS
        };
    };
    enum cost_op op;
    double ms;       /* the op's time in the step */
    double total_ms; /* the whole step */
    double gpu_ms;   /* the step's GPU work alone (a CUDA graph replay); 0: not measured */
    double host_ms;  /* the host's time to issue the step (eager frameworks); 0: not measured */
};

struct calib_data {
    char device[128], model[64];
    int attn_rules; /* the engine's attention launch rules the profile was measured under
                     * (ATTN_RULES, sim/core/attn_rules.h); 0 or 1: the first, which profiles before
                     * the versions (no attn_rules column) were measured under */
    struct calib_row *rows;
    size_t n, cap;
};

/* The folder of calibrations made on this machine (make calibrate installs them):
 * $TESSERA_CALIB_DIR, else $XDG_DATA_HOME/tessera/calib, else ~/.local/share/tessera/calib; -1 when
 * none can be named. */
int calib_user_dir(char *out, size_t len);
/* Where the calibration of GPU, MODEL and IMPL is found: USER_DIR/GPU-MODEL-IMPL.csv where this
 * machine has one (calib_user_dir), else the shipped DATADIR/calib/GPU-MODEL-IMPL.csv. */
void calib_shipped_path(const char *datadir, const char *gpu, const char *model, const char *impl, char *out,
                        size_t len);
void calib_data_free(struct calib_data *d);
/* Reads the CSV `tessera calib import` writes (the engine_profile columns; attn_rules optional,
 * 1 where absent, one value for all rows; kv_long optional, 0 where absent). */
int calib_data_load(const char *path, struct calib_data *out, struct ts_err *err);
/* The same from text in memory (modified in place); `path` names it in messages. */
int calib_data_parse(const char *path, char *text, struct calib_data *out, struct ts_err *err);
/* Reads the engine_profile table of a profile database. */
int calib_data_import_db(const char *path, struct calib_data *out, struct ts_err *err);
int calib_data_write(const struct calib_data *d, const char *path, struct ts_err *err);
/* Whether a profile measured the host/GPU split (gpu_ms, host_ms): all rows or none (the parser's rule). */
bool calib_data_host_split(const struct calib_data *d);
/* Merges profiles of one engine on one GPU for one model, measured on several machine instances or
 * at several times: each op of each profiled step takes the median of its times (ms, total_ms and,
 * where measured, gpu_ms and host_ms) over the inputs that measured it; a step only some inputs
 * hold (one an older profile grid lacks) takes the median of those, and *partial counts such rows.
 * Rows keep the order in which they first appear. Refuses inputs of different devices, models,
 * attention launch rules or op sets (implementations), naming the file (names[i] names in[i]),
 * and an op measured twice in one input. Each input should be validated first. */
int calib_data_merge(const struct calib_data *in, const char *const *names, size_t n_in, struct calib_data *out,
                     size_t *partial, struct ts_err *err);
/* The same, the last n_over inputs profiles that supersede the others where they hold a step (a part
 * of the grid profiled again after its kernels changed): a step any of them holds takes each op's
 * median over them alone, the others' rows of that step dropped (*replaced counts those); *partial
 * counts the rows held by fewer inputs than their side has. */
int calib_data_merge_over(const struct calib_data *in, const char *const *names, size_t n_in, size_t n_over,
                          struct calib_data *out, size_t *partial, size_t *replaced, struct ts_err *err);
/* Refuses data with several devices or models, missing ops, too few token counts, or GEMM times
 * that cannot belong to the model it names on the GPU it names (against the roofline, with the GPU
 * figures of gpu_name). */
int calib_data_validate(const struct calib_data *d, const char *gpu_name, struct ts_err *err);
/* The same for a GPU of a --gpu-file (gpu_file NULL: tessera's table alone). */
int calib_data_validate_on(const struct calib_data *d, const char *gpu_name, const char *gpu_file,
                           struct ts_err *err);
/* The sum of the op times (ms) of the profiled step row r of d belongs to (the rows of d with r's
 * shape: every column but op and the times). */
double calib_step_ops_ms(const struct calib_data *d, const struct calib_row *r);
/* Carries a calibration measured on GPU `from` over to GPU `to` without measuring there: every
 * profiled step is priced by the roofline model (implementation profile `impl`) on both GPUs (over
 * their measured ceilings where both were measured, DATADIR/gpu_measured.csv); each op's roofline
 * time on `from` becomes its roofline time on `to` and what it took beyond that stays (an op faster
 * than its roofline scales by the ratio whole); each step's time (and a split profile's GPU time)
 * scales as the sum of its ops does. An estimate: a calibration measured on `to` replaces it. */
int calib_data_transfer(const struct calib_data *in, const char *from, const char *to, const char *impl,
                        struct calib_data *out, struct ts_err *err);

/* How far a transferred step may be off: a transfer scales each op by its roofline ratio, which
 * assumes the roofline knew which resource limited the kernel on the source GPU. The band prices
 * every op both ways, scaled by the peak-FLOP ratio of the two GPUs and by their bandwidth ratio
 * (and by the roofline ratio itself, for launch-bound ops), host time unchanged: the low and high
 * ends take each op's smaller and larger scaling. c is the transferred calibration; mid_s its
 * price. Not a measurement on the target. */
int calib_transfer_band(const struct calib *c, const char *model, const char *from, const char *to,
                        const char *impl, const struct step_desc *sd, double *mid_s, double *lo_s,
                        double *hi_s, struct ts_err *err);

struct calib;

int calib_fit(const struct calib_data *d, struct calib **out, struct ts_err *err);
/* Whether a profile is a part to merge into a whole one (engine profile --grid ladder, select or fc
 * alone), which calib_fit refuses: its steps lack the curves the base grid gives. */
bool calib_data_is_part(const struct calib_data *d);
void calib_free(struct calib *c);
/* Whether the calibration prices the sparse selection of this kind (its profile had such steps). */
bool calib_prices_selection(const struct calib *c, bool per_head);
/* Whether the calibration times the all-reduces itself (a profile of the engine split over GPUs,
 * tessera engine profile --tp N); else --tp N adds them from the all-reduce model. */
bool calib_prices_allreduce(const struct calib *c);
/* Whether the calibration measured dLLM-Cache's feature cache (its profile had the fc grid's steps);
 * without, feat_cache is composed from the other ops' curves. */
bool calib_prices_feature_cache(const struct calib *c);
/* Whether the calibration measured its host apart from its GPU (an eager implementation's: a step
 * priced as max(host, GPU)). */
bool calib_measures_host(const struct calib *c);

/* The host of an eager implementation's calibration, apart from its GPU: what the machine's CPU takes
 * to issue a step (host0_ms + seg_ms a segment, a line fitted on the profile's host-bound steps) and
 * the launch gaps its GPU-bound steps add (eager_gap_ms). A calibration prices a step as
 * max(host, GPU); another machine's host profile swapped in (--host) prices the same GPU work issued
 * by that machine's CPU. */
struct calib_host {
    double host0_ms, seg_ms, eager_gap_ms;
    int steps;          /* host-bound profile steps the line was fitted on */
    char device[128];   /* the profile's device string (the machine it was measured on) */
    char impl[32];      /* the implementation whose own loop the line was measured on ("": the eager
                         * harness's layer, or unknown) */
    double lo, hi;      /* those steps' issue times over the line, 10th and 90th percentiles (0: not
                         * known, a host file: it keeps the line alone) */
};
/* c's host; -1 when c measured none (an engine's calibration: CUDA graphs, never host-bound). */
int calib_host_of(const struct calib *c, struct calib_host *h, struct ts_err *err);
/* c priced with host h in place of its own; -1 when c measured no host to replace. */
int calib_set_host(struct calib *c, const struct calib_host *h, struct ts_err *err);
/* c's host line (and its selecting loop's term) scaled by `scale`: its own runtime issued by a host
 * that takes `scale` times as long; -1 when c measured no host. */
int calib_scale_host(struct calib *c, double scale, struct ts_err *err);
/* --host NAME for implementation im: NAME's per-step issue time over that of the host im's costs were
 * measured with (im->host_ref), in *scale. Messages name the option. */
int calib_host_scale(const char *name, const struct impl_profile *im, double *scale, struct ts_err *err);
/* --host NAME: c, the calibration of implementation im, priced with the host profile NAME
 * (calib_host_load). c's host is the eager harness's, and NAME's line replaces it; where a shipped
 * host profile was measured on the machine that measured c (its device, a transfer's origin), c's
 * own line is scaled instead, whole, by NAME's per-step issue time over that profile's (a host
 * profile is one model's line: another model's layers issue another count of kernels). Where im's
 * host line is its own (im->host_line_own: a runtime measured on host im->host_ref), that line
 * scales by NAME's per-step issue time over im->host_ref's. A host profile measured on im's own loop
 * (its impl is im's name) replaces im's line, whatever im's host_line_own; one measured on another
 * implementation's own loop is refused. Messages name the option. */
int calib_use_host(struct calib *c, const char *name, const struct impl_profile *im, struct ts_err *err);
/* The folder of the shipped host profiles, DATADIR/hosts. */
void calib_hosts_dir(char *dir, size_t len);
/* The files named *.csv in folder dir, in name order, into *names (scandir's: free each, then the
 * array); their count, or < 0 where the folder cannot be read. */
struct dirent;
int calib_csv_files(const char *dir, struct dirent ***names);
/* A host profile: NAME, one shipped in DATADIR/hosts (tessera list hosts), or a file: one calib host
 * wrote, or any calibration or profile CSV whose host was measured apart from its GPU (its host
 * taken). */
int calib_host_load(const char *name, struct calib_host *h, struct ts_err *err);
int calib_host_write(const struct calib_host *h, const char *path, struct ts_err *err);
/* ", 80% of them LO-HIx the line" into buf where lo and hi are known (a calib_host's), else "". */
void calib_host_band(double lo, double hi, char *buf, size_t len);
/* A host file's text (path names it in messages): 0, -1 on a malformed one, 1 when the text is no
 * host file (its first line is not calib host's header). Its header is
 * host0_ms,seg_ms,eager_gap_ms,steps,device, or with the implementation whose own loop was measured,
 * host0_ms,seg_ms,eager_gap_ms,steps,impl,device. */
int calib_host_parse(const char *path, const char *text, struct calib_host *h, struct ts_err *err);
/* Prices a step; fills bd if not NULL. Returns -1 (and err) when the step lies outside the
 * profiled range and extrapolation is off. A step whose segments have front shapes, probes or
 * carried rows, or that caches outputs, needs the cost context (its model and GPU):
 * calib_step_ctx_s, which is what the `calibrated` back end calls. */
int calib_step_s(const struct calib *c, const struct step_desc *sd, bool extrapolate, double *seconds,
                 struct cost_breakdown *bd, struct ts_err *err);
struct cost_ctx;
int calib_step_ctx_s(const struct cost_ctx *cx, const struct calib *c, const struct step_desc *sd, bool extrapolate,
                     double *seconds, struct cost_breakdown *bd, struct ts_err *err);
/* How the engine a calibration was profiled from launches a step's attention, by the calibration's
 * launch rules (the attention model's own reading of them): the segments on the wgmma and on the
 * mma.sync kernel, and the mma.sync launch's query heads a block (GQA packing, rules 4), key splits
 * and K/V tile keys (all 0 where no segment runs on it). */
struct calib_attn_launch {
    int rules;
    int wgmma_segs, mma_segs;
    int heads_a_block, splits, tile_keys;
};
void calib_attn_launch(const struct calib *c, const struct step_desc *sd, struct calib_attn_launch *out);
/* Prints each fit with its residuals on the profile rows. */
void calib_show(const struct calib *c, FILE *out);

#endif
