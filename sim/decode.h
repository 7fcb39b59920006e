/*
 * decode.h: decode models, i.e. how many masked tokens one step commits.
 *   fixed:k              k tokens per step (LLaDA default: k = 1, steps = G)
 *   threshold:PROFILE    a random count per step, at least 1 and at most the masked positions of
 *                        the block, with the profile's mean tokens per forward (TPF); PROFILE is a
 *                        name in sim/data/decode_profiles.json, a path to such a file
 *                        (threshold:FILE:NAME) or a number (threshold:2.5). The count is 1 +
 *                        Poisson(TPF - 1), or drawn from the profile's measured distribution where
 *                        it has one ("steps": how many block steps committed 1, 2, ... positions,
 *                        as `tessera engine generate --profile-out` writes it)
 *   hierarchical:PROFILE dInfer's hierarchical decoding, its count drawn the same way at its own
 *                        profiles' TPF (dInfer's Table 1)
 *   credit:TPF           dInfer's credit decoding, the same; its steps also fuse the logits with a
 *                        per-block credit matrix ([block, vocab] fp32), which the requests hold
 *   spiffy:TPF[,D]       Spiffy's lossless self-speculation (arXiv 2509.18085): the same count at TPF
 *                        tokens a forward, each forward also verifying D draft blocks of the model's
 *                        own predictions (decode_spiffy_shape)
 *   wino:PROFILE|TPF     WINO's revokable decoding (arXiv 2507.18578): drafts above a low
 *                        threshold, re-masks those a shadow block of masks no longer trusts; the
 *                        count at its profiles' TPF, each forward also running the shadow block
 *                        (decode_spiffy_shape with one block)
 * Under the models that decide by confidence (threshold, hierarchical, credit), once a request's
 * content is decoded its EOS positions decode in bulk (the rest of the block in one step); fixed:k
 * keeps its schedule to the end (LLaDA's, Fast-dLLM's and dLLM-Serve's generate loops commit
 * num_transfer_tokens a step whatever they hold). That rule lives in decode_tokens(); --eos bulk or
 * scheduled imposes one behaviour on every decoder.
 * Randomness comes from the request's own GSL stream, so results do not depend on batch makeup.
 */
#ifndef TESSERA_DECODE_H
#define TESSERA_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "request.h"
#include "step_desc.h"
#include "util.h"

enum decode_kind { DECODE_FIXED = 0, DECODE_THRESHOLD, DECODE_HIERARCHICAL, DECODE_CREDIT, DECODE_SPIFFY, DECODE_WINO };

/* The most positions a measured distribution's step commits (engine generate's largest block). */
#define DECODE_STEPS_MAX 1024
/* The most thresholds a profile's published sweep holds. */
#define DECODE_SWEEP_MAX 16

/* A published sweep: TPF and accuracy at n confidence thresholds, tau descending. */
struct decode_sweep {
    int32_t n;
    double tau[DECODE_SWEEP_MAX], tpf[DECODE_SWEEP_MAX], accuracy[DECODE_SWEEP_MAX];
};

/* A decode profile: its TPF, and the measured distribution of a step's commits where it has one. */
struct decode_profile {
    double tpf;
    double accuracy;                 /* the published accuracy at the TPF's setting, percent; < 0: none */
    char task[32];                   /* what it scores ("GSM8K", "average of 6"); "" where none */
    int32_t nsteps;                  /* 0: none; else steps[k - 1] counts the steps committing k */
    double steps[DECODE_STEPS_MAX];
    double tau;                      /* the threshold it was measured at; < 0: not given */
    struct decode_sweep sweep;       /* n = 0: none */
};

/* When a block's EOS positions commit (--eos): auto as the decoder does it (bulk_eos), bulk in one
 * step once the block's content is committed, scheduled at the decoder's own count like content */
enum decode_eos { EOS_AUTO = 0, EOS_BULK, EOS_SCHEDULED };

struct decode_model {
    enum decode_kind kind;
    enum decode_eos eos; /* set after decode_parse (EOS_AUTO there) */
    int32_t k;         /* fixed: tokens per step */
    double tpf;        /* threshold, hierarchical, credit, spiffy, wino: mean tokens per forward */
    int32_t drafts;    /* spiffy: draft blocks a forward verifies; wino: its shadow block (1); else 0 */
    int32_t ncdf;      /* a measured distribution: cdf[0] = 0, cdf[k] = P(a step commits <= k), k <= ncdf */
    double cdf[DECODE_STEPS_MAX + 1];
    char spec[128];    /* as given, for the run record */
    double accuracy;   /* a profile's published accuracy at its setting (percent) on `task`; < 0: none */
    char task[32];
    double tau;        /* the threshold it decodes at, where its profile says; < 0: not given */
    struct decode_sweep sweep; /* its profile's published sweep (n = 0: none): load control moves along it */
};

/* Finds profile `name` in the text of a profile file (path names it in messages): {"NAME":
 * {"tpf": x, "source": "...", "decoder": "...", "steps": [n1, n2, ...]}, ...}, of decoder `kind`
 * (threshold, hierarchical, credit; a profile without "decoder" is threshold's; NULL: any); unknown
 * keys of a profile, another decoder's profile, a TPF outside 1..1e6, and steps that are not counts
 * or whose mean is not the TPF (within 1%) are refused. A profile may carry a published sweep,
 * "sweep": [{"tau": t, "tpf": x, "accuracy": a}, ...] (2 to DECODE_SWEEP_MAX distinct thresholds,
 * with "tau", "accuracy" and "task" of its own: its tau one of the sweep's, its tpf and accuracy
 * that point's). */
int decode_profile_parse(const char *path, const char *text, size_t len, const char *name, const char *kind,
                         struct decode_profile *out, struct ts_err *err);
/* A decode model of the table (decode.c): the spec's prefix, its form and help, whether it draws
 * from the request's random stream, how its spec's argument is read and how many tokens a step
 * commits before the block's clamp. */
struct decode_ops {
    const char *name, *spec, *help;
    bool needs_rng;
    bool bulk_eos; /* decides by confidence: once a block's content is committed, its EOS positions
                    * (confident at once) commit in one step. A fixed schedule (LLaDA's
                    * num_transfer_tokens) commits K a step to the end of the generation */
    int (*parse)(const char *spec, const char *arg, const char *datadir, struct decode_model *out, struct ts_err *err);
    int32_t (*draw)(const struct decode_model *dm, const struct request *r);
};
/* Spiffy's verification forward (and WINO's, its one shadow block): segment s (a step of a block's rows)
 * also runs dm->drafts draft blocks of `block` rows, each a predicted later state of the block (WINO's:
 * the block's positions as masks), every one scoring as many keys as a real row (its own block in
 * place of the one it replaces): q and logit_rows grow by drafts x block, attn_keys
 * is the real rows' keys a row (q + kv, fewer where attention is block-causal at attn_block, or a
 * sparse pattern's). */
void decode_spiffy_shape(const struct decode_model *dm, int32_t block, int32_t attn_block, struct segment *s);
/* The i-th decode model of the table (indexed by enum decode_kind), NULL past the end. */
const struct decode_ops *decode_get(int i);
/* Load control (fleet.h): the tokens a step commits beyond the first scaled by `factor` from those of
 * TPF `base` (the model's as parsed): tpf = 1 + (base - 1) x factor. -1 with err for a decoder whose
 * count no threshold sets (fixed:K) or that draws from a measured distribution. */
int decode_scale_extra(struct decode_model *dm, double base, double factor, struct ts_err *err);
/* Load control along a published sweep: dm's TPF and accuracy at threshold tau, each interpolated
 * linearly between the two published thresholds around it (the sweep's own values at them). -1 with
 * err for a tau outside the sweep, or a model without one. */
int decode_at_threshold(struct decode_model *dm, double tau, struct ts_err *err);
/* Parses a decode model spec; `datadir` is where decode_profiles.json lives. */
int decode_parse(const char *spec, const char *datadir, struct decode_model *out,
                 struct ts_err *err);
/* Tokens committed by r's next (non-prefill) step; needs r->rng for threshold models. */
int32_t decode_tokens(const struct decode_model *dm, const struct request *r);
/* The same without drawing: fixed:k's k, or a model's mean TPF with its fraction kept in *carry
 * (0 to start) for the next step, so that steps projected one after another commit the mean; the
 * block's clamp and the bulk EOS commit as decode_tokens. A scheduler's projection of a request's
 * steps (lookahead). */
int32_t decode_tokens_mean(const struct decode_model *dm, const struct request *r, double *carry);
/* Whether the model needs a random stream per request. */
int decode_needs_rng(const struct decode_model *dm);

#endif
