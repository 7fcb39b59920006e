/*
 * trace.h: request-arrival traces: loaders for the public formats, generators, rescaling and
 * statistics. A trace is a list of (arrival, prompt tokens, output tokens) sorted
 * by arrival; output tokens are what the original (autoregressive) service generated, which the
 * simulator maps onto a dLLM's generation length and content length.
 *
 * Formats (detected from the header or the .jsonl extension):
 *   azure     TIMESTAMP,ContextTokens,GeneratedTokens        (Azure LLM inference 2023)
 *   burstgpt  Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
 *   mooncake  JSONL {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}
 *             (hash_ids optional: the prompt's blocks of TRACE_HASH_BLOCK tokens, one id a block,
 *             two prompts sharing their first k ids sharing their first k blocks)
 *   lengths   num_prefill_tokens,num_decode_tokens[,...]     (no arrival times)
 *   tessera   arrival_ns,prompt_tokens,output_tokens          (what `tessera trace gen` writes)
 * A malformed row stops the load with "FILE:LINE: FIELD: problem" unless skip_bad is set, in
 * which case it is skipped and counted.
 */
#ifndef TESSERA_TRACE_H
#define TESSERA_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>

#include "util.h"

enum trace_format { TRACE_AUTO = 0, TRACE_AZURE, TRACE_BURSTGPT, TRACE_MOONCAKE, TRACE_LENGTHS,
                    TRACE_TESSERA };

struct trace_req {
    int64_t arrival_ns; /* relative to the first request */
    int32_t prompt;     /* tokens */
    int32_t output;     /* tokens the original service generated */
    const int32_t *hash; /* the prompt's block ids (into the trace's pool), or NULL */
    int32_t n_hash;
};

/* Tokens a prompt block's id stands for: Mooncake's traces hash 512-token blocks (their
 * FAST25-release/traces README; an input of 6,755 tokens carries 14 ids). */
#define TRACE_HASH_BLOCK 512
/* The whole blocks among n_hash ids of a prompt of `prompt` tokens (a last partial block's id is not
 * another prompt's). */
static inline int32_t trace_whole_blocks(int32_t n_hash, int32_t prompt)
{
    return n_hash < prompt / TRACE_HASH_BLOCK ? n_hash : prompt / TRACE_HASH_BLOCK;
}

struct trace {
    struct trace_req *reqs; /* [n], owned */
    int64_t n;
    size_t cap;
    bool has_times;         /* false for length-only files until arrivals are assigned */
    int64_t skipped_rows;   /* malformed rows skipped under skip_bad */
    bool skipped_bom;       /* the file began with a UTF-8 byte-order mark, which was skipped */
    enum trace_format format;
    int32_t *hash;          /* the rows' block ids, each row's in turn, owned */
    int64_t n_hash;
    size_t hash_cap;
};

const char *trace_format_name(enum trace_format f);

void trace_free(struct trace *t); /* safe on a zeroed struct */
void trace_push(struct trace *t, int64_t arrival_ns, int32_t prompt, int32_t output);

/* Loads a trace file. On error *out is left empty and err names file, line and field. */
int trace_load(const char *path, bool skip_bad, struct trace *out, struct ts_err *err);
/* Parses a trace held in memory; `path` names it in messages and, with a .jsonl suffix, selects
 * the Mooncake format. */
int trace_parse(const char *path, const char *buf, size_t len, bool skip_bad, struct trace *out,
                struct ts_err *err);

/* --- generation -------------------------------------------------------------------------- */

enum arrival_kind { ARRIVAL_POISSON = 0, ARRIVAL_GAMMA };
struct arrival_gen {
    enum arrival_kind kind;
    double rps; /* mean requests per second */
    double cv;  /* gamma: coefficient of variation of inter-arrival times (1 = Poisson) */
};

#define TS_MAX_PCT 101
enum length_kind { LENGTH_FIXED = 0, LENGTH_LOGNORMAL, LENGTH_QUANTILE, LENGTH_SAMPLE };
struct length_gen {
    enum length_kind kind;
    int32_t prompt, output;           /* fixed; quantile: the output */
    double mu_p, sigma_p, mu_o, sigma_o; /* lognormal (of token counts) */
    bool normal_p;                    /* lognormal: the prompt a normal of mean mu_p, sd sigma_p
                                       * (token counts) instead */
    int32_t cap_p, cap_o;             /* the distribution's own largest lengths (0: none), before
                                       * any clip: a dataset that truncates at a length */
    const double *pct_p, *pct_o;      /* quantile: the prompt's and output's quantiles at n_pct
                                       * positions, drawn by linear interpolation (no pct_o: the
                                       * output is `output`) */
    const double *pct_x;              /* quantile: those positions, rising from 0 to 1 (NULL:
                                       * n_pct even steps) */
    int n_pct;
    const struct trace *src;          /* sample: rows drawn uniformly from this trace */
    int32_t max_prompt, max_output;   /* clip (0 = none) */
};

/* Parses "poisson" or "gamma:CV". */
int arrival_parse(const char *spec, double rps, struct arrival_gen *out, struct ts_err *err);
/* Parses "fixed:P,O", "lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O", "sharegpt" (a lognormal fitted to
 * the ShareGPT length file), "sharegpt-first" (ShareGPT's first rounds: each conversation's
 * first prompt and answer), "wildchat" (WildChat's turns), "math" (MATH's problems and
 * solutions), "osc" (OpenAI's summarize-from-feedback comparisons, from their
 * published length statistics), "livebench" (LiveBench's coding prompts, measured from the
 * LiveCodeBench problems it draws on) or "burstgpt" (the first complete rows of BurstGPT's
 * trace); trace_gen.c says where each comes from. "file:PATH" is resolved by the caller. */
int length_parse(const char *spec, struct length_gen *out, struct ts_err *err);

/* The latest arrival a trace may hold: 2^62 ns (146 years), so that the simulation's clock has as
 * much again to run before int64 nanoseconds overflow. */
#define TRACE_MAX_NS (INT64_C(1) << 62)
/* ns nanoseconds in years (of 365.25 days), as the refusals of a time past TRACE_MAX_NS say them */
static inline double trace_years(double ns) { return ns * 1e-9 / (365.25 * 86400); }

/* Generates n requests with the given arrivals and lengths from `seed`. Fails (and leaves out empty)
 * where an arrival would fall past TRACE_MAX_NS. */
int trace_generate(struct trace *out, int64_t n, const struct arrival_gen *ag, const struct length_gen *lg,
                   uint64_t seed, struct ts_err *err);
/* Requests one at a time: a trace's in order, or generated as trace_generate makes them (the same
 * requests from the same seed), each drawn when asked, so that a run of any length holds none it
 * has not reached. The generator's length source (lg->src) must outlive it. */
struct pct_draw;
struct trace_stream {
    const struct trace *t;     /* served in order; NULL: generated */
    int64_t i, n;              /* the next request's index; how many the stream gives */
    int64_t period_ns;         /* a trace played again: each pass's arrivals this much after the last's */
    struct arrival_gen ag;
    struct length_gen lg;
    gsl_rng *rl, *ra;          /* the lengths' and the arrivals' random streams */
    struct pct_draw *pd;       /* quantile lengths: their inverse CDFs */
    double now_s;              /* the last arrival drawn */
};
void trace_stream_of(struct trace_stream *st, const struct trace *t);
/* n requests of trace t, its rows played again end to end where n exceeds them, each pass shifted by the trace's span plus its mean gap (the arrivals keep
 * their rate across the seam); -1 with err where the last would arrive past TRACE_MAX_NS. */
int trace_stream_repeat(struct trace_stream *st, const struct trace *t, int64_t n, struct ts_err *err);
void trace_stream_gen(struct trace_stream *st, int64_t n, const struct arrival_gen *ag, const struct length_gen *lg,
                      uint64_t seed);
/* The next request into *out: 1, or 0 when the stream has given all it has; -1 with err where a
 * generated arrival would fall past TRACE_MAX_NS. */
int trace_stream_next(struct trace_stream *st, struct trace_req *out, struct ts_err *err);
void trace_stream_free(struct trace_stream *st); /* safe on a zeroed struct */
/* Gives a trace without times arrival times from the generator (stream `seed`); fails where one
 * would fall past TRACE_MAX_NS. */
int trace_assign_arrivals(struct trace *t, const struct arrival_gen *ag, uint64_t seed, struct ts_err *err);
/* Scales arrival times so the trace's mean rate becomes rps; fails where the last would fall past
 * TRACE_MAX_NS. */
int trace_rescale(struct trace *t, double rps, struct ts_err *err);
/* Keeps the first n requests. */
void trace_truncate(struct trace *t, int64_t n);
/* Writes the tessera CSV format. */
int trace_write(const struct trace *t, const char *path, struct ts_err *err);

/* --- statistics -------------------------------------------------------------------------- */

struct dist_stats {
    double mean, p50, p90, p99, min, max;
};

struct trace_stats {
    int64_t n;
    double duration_s; /* last arrival - first arrival */
    double rate_rps;   /* (n - 1) / duration */
    double cv;         /* coefficient of variation of inter-arrival gaps */
    struct dist_stats prompt, output;
    double mu_p, sigma_p, mu_o, sigma_o; /* lognormal fit (mean and sd of the logs of counts > 0) */
};

void trace_stats_compute(const struct trace *t, struct trace_stats *s);

#endif
