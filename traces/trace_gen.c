/*
 * trace_gen.c: synthetic arrivals and lengths, rescaling, writing and statistics.
 *
 * Arrivals: Poisson (exponential gaps) or Gamma gaps with a coefficient of variation cv (shape
 * 1/cv^2), both at a mean rate. Lengths: fixed, lognormal, or rows sampled from a trace file.
 * The built-in "sharegpt" lognormal was fitted by `tessera trace fit` to the ShareGPT length
 * file of shared/traces/raw (30,731 rows): the mean and standard deviation of log(token count).
 * The built-in "sharegpt-first" is ShareGPT served one request a conversation, as serving
 * benchmarks do (vLLM's, LMDeploy's, FOCUS's benchmark/profile_throughput.py): each
 * conversation's first prompt and ChatGPT's first answer. vLLM's paper artifact publishes those
 * lengths (sosp-ae-39/sosp-ae-astra, datasets/sharegpt_opt_text_completion_length.pkl: 84,226
 * rounds of March 2023, OPT tokenizer); traces/derive/sharegpt_first_lengths.py drops the rounds
 * under 4 tokens a side, as the benchmarks do, and prints the quantiles drawn here: prompt median
 * 41 and mean 299, answer median 282 and mean 366, the top 0.1% clipped to the 99.9th percentile
 * (6,219 and 3,024 tokens). Prompt and answer are drawn independently (their rank correlation in
 * the file is 0.20).
 * The built-in "wildchat" (FOCUS's WildChat workload) is a lognormal of the mean and standard
 * deviation of WildChat's user and chatbot turns that its paper's Table 1 prints (Zhao et al., ICLR
 * 2024; Llama-2 tokenizer, every turn of 1,039,785 conversations): 295.58 +- 1,609.18 and
 * 441.34 +- 410.91 tokens, medians 53 and 323. The same fit to that table's ShareGPT row gives the
 * answers of ShareGPT's first rounds (median 276 against 282) but prompts a third of theirs (median
 * 14 against 41): a conversation's first prompt runs longer than its follow-ups, so "wildchat"'s
 * prompts likely fall short of the first prompts FOCUS's benchmark sends.
 * The built-in "math" (FOCUS's MATH workload) draws the problem and the answer from the percentiles
 * of 1,000 of MATH's test problems and their reference solutions (cmu-mind/RISE data/math/
 * test.jsonl, Llama-2 vocabulary; traces/derive/math_lengths.py): problem median 49 (9 to 1,034),
 * solution median 158 (23 to 1,991); the two drawn independently.
 * The built-in "osc" (dLLM-Serve's OSC workload: OpenAI's summarize-from-feedback comparisons)
 * matches the length statistics published with the dataset's standard preprocessing
 * (vwxyzjn/summarize_from_feedback_oai_preprocessing, its label_token_len figures; GPT-NeoX
 * tokenizer): the query 346.68 tokens on average, median 352, at most 512 (posts truncated to fit),
 * a normal of that median whose clip at 512 gives that mean (sd 121.4, 9% of the queries at 512);
 * the chosen summary median 32, mean 33.92, at most 134, a lognormal of that median and mean.
 *
 * The built-in "livebench" (dLLM-Serve's LiveBench coding workload) draws prompts from the
 * percentiles of LiveBench's coding prompt built around each of LiveCodeBench's 1,055
 * code-generation problems, which LiveBench's coding questions are drawn from, counted with the
 * Llama-2 vocabulary like the ShareGPT file (traces/derive/livebench_lengths.py computes them:
 * mean 668, median 632, 5% 374, 95% 1,110, at most 2,043 tokens). LiveBench publishes no answer
 * lengths; every answer is taken to fill dLLM-Serve's 256-token generation (its Table 3).
 *
 * The built-in "burstgpt" (dLLM-Serve's Burst workload) draws request and response lengths from
 * the percentiles of the first 38 complete rows (both counts above zero) of BurstGPT's trace,
 * BurstGPT_1.csv, as Hugging Face's viewer of the dataset shows them (lzzmm/BurstGPT): request
 * median 594 and at most 1,840 tokens, response median 336, the responses inside the band the
 * dataset's own response-against-request figure draws (HPMLL/BurstGPT, img/req-res.png). The two
 * are drawn independently. The full trace is in Git LFS and out of reach here; with it,
 * `--trace BurstGPT_1.csv` replays the real rows. BurstGPT's arrivals are bursty: its authors'
 * workload generator (example/profile_server/server.py) draws gaps from a Gamma of shape 0.5,
 * `--arrivals gamma:1.41`; the viewer's 42 gaps have a CV of 1.74.
 */
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_interp.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "whole.h"

#define SHAREGPT_MU_P 7.0065
#define SHAREGPT_SIGMA_P 1.6257
#define SHAREGPT_MU_O 5.7694
#define SHAREGPT_SIGMA_O 1.0011
#define OSC_MEAN_P 352.0
#define OSC_SD_P 121.4
#define OSC_CAP_P 512
#define OSC_MU_O 3.4657 /* log 32 */
#define OSC_SIGMA_O 0.341 /* sqrt(2 log(33.92 / 32)) */
#define OSC_CAP_O 134
#define LIVEBENCH_OUTPUT 256
#define WILDCHAT_MU_P 3.9778 /* WildChat's Table 1: 295.58 +- 1609.18 user tokens a turn */
#define WILDCHAT_SIGMA_P 1.8499
#define WILDCHAT_MU_O 5.7777 /* 441.34 +- 410.91 chatbot tokens a turn */
#define WILDCHAT_SIGMA_O 0.7901
/* LiveBench coding prompts, percentiles 0, 5, ..., 100 (traces/derive/livebench_lengths.py). */
static const double livebench_pct[] = {286, 374, 413, 444, 470, 496, 518, 542, 573, 600, 632,
                                       654, 683, 711, 745, 789, 839, 888, 969, 1110, 2043};
/* BurstGPT's first 38 complete rows, request and response percentiles 0, 5, ..., 100. */
static const double burstgpt_pct_p[] = {14, 19, 33, 73, 94, 175, 266, 415, 500, 535, 594,
                                        805, 973, 1088, 1285, 1322, 1350, 1455, 1533, 1599, 1840};
static const double burstgpt_pct_o[] = {11, 61, 124, 181, 206, 219, 239, 245, 266, 287, 336,
                                        354, 372, 384, 427, 442, 456, 488, 519, 614, 1656};
#define N_PCT (int)(sizeof livebench_pct / sizeof *livebench_pct)
/* ShareGPT's first rounds (traces/derive/sharegpt_first_lengths.py): the prompt's and answer's
 * quantiles at these positions, the 99.9th closing the table. */
static const double sharegpt_first_x[] = {0,    .05,  .10, .15,  .20,  .25, .30, .35,  .40,
                                          .45,  .50,  .55, .60,  .65,  .70, .75, .80,  .85,
                                          .90,  .95,  .98, .99,  .995, .999, 1};
static const double sharegpt_first_p[] = {4,   8,   10,  12,  14,   17,   20,   23,   27,
                                          33,  41,  52,  67,  90,   126,  192,  314,  496,
                                          847, 1550, 2674, 3364, 4096, 6219, 6219};
static const double sharegpt_first_o[] = {4,   31,  59,  88,   113,  141,  171,  200,  227,
                                          254, 282, 312, 343,  379,  424,  482,  558,  662,
                                          776, 983, 1251, 1474, 1712, 3024, 3024};
/* MATH's problems and reference solutions, percentiles 0, 5, ..., 100 (traces/derive/math_lengths.py). */
static const double math_pct_p[] = {9,  17, 21, 26, 30, 34, 36,  39,  42,  45,  49,
                                    52, 56, 62, 68, 76, 86, 101, 140, 233, 1034};
static const double math_pct_o[] = {23,  51,  62,  76,  85,  93,  106, 119, 130, 146, 158,
                                    176, 191, 215, 239, 279, 312, 369, 451, 634, 1991};
#define N_SHAREGPT_FIRST (int)(sizeof sharegpt_first_x / sizeof *sharegpt_first_x)

int arrival_parse(const char *spec, double rps, struct arrival_gen *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(rps > 0))
        return ts_fail(err, "arrival rate must be positive (got %g)", rps);
    out->rps = rps;
    out->cv = 1.0;
    if (strcmp(spec, "poisson") == 0) {
        out->kind = ARRIVAL_POISSON;
        return 0;
    }
    if (strncmp(spec, "gamma:", 6) == 0) {
        if (ts_parse_double(spec + 6, &out->cv) || !(out->cv > 0) || out->cv > 100)
            return ts_fail(err, "arrivals '%s': CV must be a number in (0, 100]", spec);
        out->kind = ARRIVAL_GAMMA;
        return 0;
    }
    return ts_fail(err, "arrivals '%s': expected poisson or gamma:CV", spec);
}

int length_parse(const char *spec, struct length_gen *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(spec, "sharegpt") == 0) {
        *out = (struct length_gen){.kind = LENGTH_LOGNORMAL, .mu_p = SHAREGPT_MU_P,
                                   .sigma_p = SHAREGPT_SIGMA_P, .mu_o = SHAREGPT_MU_O,
                                   .sigma_o = SHAREGPT_SIGMA_O};
        return 0;
    }
    if (strcmp(spec, "sharegpt-first") == 0) {
        *out = (struct length_gen){.kind = LENGTH_QUANTILE, .pct_p = sharegpt_first_p,
                                   .pct_o = sharegpt_first_o, .pct_x = sharegpt_first_x,
                                   .n_pct = N_SHAREGPT_FIRST};
        return 0;
    }
    if (strcmp(spec, "wildchat") == 0) {
        *out = (struct length_gen){.kind = LENGTH_LOGNORMAL, .mu_p = WILDCHAT_MU_P, .sigma_p = WILDCHAT_SIGMA_P,
                                   .mu_o = WILDCHAT_MU_O, .sigma_o = WILDCHAT_SIGMA_O};
        return 0;
    }
    if (strcmp(spec, "math") == 0) {
        *out = (struct length_gen){.kind = LENGTH_QUANTILE, .pct_p = math_pct_p, .pct_o = math_pct_o,
                                   .n_pct = N_PCT};
        return 0;
    }
    if (strcmp(spec, "osc") == 0) {
        *out = (struct length_gen){.kind = LENGTH_LOGNORMAL, .mu_p = OSC_MEAN_P, .sigma_p = OSC_SD_P,
                                   .normal_p = true, .cap_p = OSC_CAP_P, .mu_o = OSC_MU_O,
                                   .sigma_o = OSC_SIGMA_O, .cap_o = OSC_CAP_O};
        return 0;
    }
    if (strcmp(spec, "livebench") == 0) {
        *out = (struct length_gen){.kind = LENGTH_QUANTILE, .pct_p = livebench_pct,
                                   .n_pct = N_PCT, .output = LIVEBENCH_OUTPUT};
        return 0;
    }
    if (strcmp(spec, "burstgpt") == 0) {
        *out = (struct length_gen){.kind = LENGTH_QUANTILE, .pct_p = burstgpt_pct_p,
                                   .pct_o = burstgpt_pct_o, .n_pct = N_PCT};
        return 0;
    }
    if (strncmp(spec, "fixed:", 6) == 0) {
        int p, o, used = 0;
        if (sscanf(spec + 6, "%d,%d%n", &p, &o, &used) != 2 || spec[6 + used] || p < 0 || o < 0)
            return ts_fail(err, "lengths '%s': expected fixed:PROMPT,OUTPUT with counts >= 0", spec);
        out->kind = LENGTH_FIXED;
        out->prompt = p;
        out->output = o;
        return 0;
    }
    if (strncmp(spec, "lognormal:", 10) == 0) {
        int used = 0;
        if (sscanf(spec + 10, "%lf,%lf,%lf,%lf%n", &out->mu_p, &out->sigma_p, &out->mu_o,
                   &out->sigma_o, &used) != 4 || spec[10 + used] || !(out->sigma_p >= 0) ||
            !(out->sigma_o >= 0) || !isfinite(out->mu_p) || !isfinite(out->mu_o) ||
            out->mu_p > 20 || out->mu_o > 20)
            return ts_fail(err, "lengths '%s': expected lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O "
                                "(of log token counts)", spec);
        out->kind = LENGTH_LOGNORMAL;
        return 0;
    }
    return ts_fail(err, "lengths '%s': expected sharegpt, sharegpt-first, wildchat, math, osc, livebench, burstgpt, fixed:P,O, "
                        "lognormal:MU_P,SIGMA_P,MU_O,SIGMA_O or file:PATH", spec);
}

static gsl_rng *rng_for(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)ts_mix64(seed));
    return r;
}

static double next_gap_s(const struct arrival_gen *ag, gsl_rng *r)
{
    if (ag->kind == ARRIVAL_POISSON)
        return gsl_ran_exponential(r, 1.0 / ag->rps);
    double shape = 1.0 / (ag->cv * ag->cv);
    return gsl_ran_gamma(r, shape, 1.0 / (ag->rps * shape));
}

static int32_t clip_len(double v, int32_t lo, int32_t hi)
{
    if (!(v >= lo))
        return lo;
    if (hi > 0 && v > hi)
        return hi;
    return v > 1e8 ? 100000000 : (int32_t)llround(v);
}

/* The inverse CDFs of percentile tables: linear between the percentiles at even steps. */
struct pct_draw {
    gsl_interp *ip, *io;
    double x[TS_MAX_PCT];
};

static void pct_draw_init(struct pct_draw *d, const struct length_gen *lg)
{
    TS_ASSERT(lg->n_pct >= 2 && lg->n_pct <= TS_MAX_PCT);
    for (int i = 0; i < lg->n_pct; i++)
        d->x[i] = lg->pct_x ? lg->pct_x[i] : (double)i / (lg->n_pct - 1);
    TS_ASSERT(d->x[0] == 0 && d->x[lg->n_pct - 1] == 1);
    d->ip = gsl_interp_alloc(gsl_interp_linear, (size_t)lg->n_pct);
    gsl_interp_init(d->ip, d->x, lg->pct_p, (size_t)lg->n_pct);
    if (lg->pct_o) {
        d->io = gsl_interp_alloc(gsl_interp_linear, (size_t)lg->n_pct);
        gsl_interp_init(d->io, d->x, lg->pct_o, (size_t)lg->n_pct);
    }
}

void trace_stream_of(struct trace_stream *st, const struct trace *t)
{
    memset(st, 0, sizeof *st);
    st->t = t;
    st->n = t->n;
}

void trace_stream_gen(struct trace_stream *st, int64_t n, const struct arrival_gen *ag, const struct length_gen *lg,
                      uint64_t seed)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    st->ag = *ag;
    st->lg = *lg;
    st->rl = rng_for(seed * 2 + 1);
    st->ra = rng_for(seed * 2);
    if (lg->kind == LENGTH_QUANTILE) {
        st->pd = xcalloc(1, sizeof *st->pd);
        pct_draw_init(st->pd, lg);
    }
}

void trace_stream_free(struct trace_stream *st)
{
    if (st->pd) {
        if (st->pd->ip)
            gsl_interp_free(st->pd->ip);
        if (st->pd->io)
            gsl_interp_free(st->pd->io);
        free(st->pd);
    }
    if (st->rl)
        gsl_rng_free(st->rl);
    if (st->ra)
        gsl_rng_free(st->ra);
    memset(st, 0, sizeof *st);
}

/* The next generated request's lengths, drawn from the lengths' stream. */
static void draw_lengths(struct trace_stream *st, int32_t *p, int32_t *o)
{
    const struct length_gen *lg = &st->lg;
    gsl_rng *rl = st->rl;
    switch (lg->kind) {
    case LENGTH_FIXED:
        *p = lg->prompt;
        *o = lg->output;
        break;
    case LENGTH_LOGNORMAL: {
        double dp = lg->normal_p ? lg->mu_p + gsl_ran_gaussian(rl, lg->sigma_p)
                                 : gsl_ran_lognormal(rl, lg->mu_p, lg->sigma_p);
        double d_o = gsl_ran_lognormal(rl, lg->mu_o, lg->sigma_o);
        if (lg->cap_p > 0 && dp > lg->cap_p)
            dp = lg->cap_p;
        if (lg->cap_o > 0 && d_o > lg->cap_o)
            d_o = lg->cap_o;
        *p = clip_len(dp, 1, lg->max_prompt);
        *o = clip_len(d_o, 1, lg->max_output);
        break;
    }
    case LENGTH_QUANTILE:
        *p = clip_len(gsl_interp_eval(st->pd->ip, st->pd->x, lg->pct_p, gsl_rng_uniform(rl), NULL), 1,
                      lg->max_prompt);
        *o = clip_len(st->pd->io ? gsl_interp_eval(st->pd->io, st->pd->x, lg->pct_o, gsl_rng_uniform(rl), NULL)
                                 : lg->output, 1, lg->max_output);
        break;
    default: {
        TS_ASSERT(lg->src && lg->src->n > 0);
        const struct trace_req *s = &lg->src->reqs[gsl_rng_uniform_int(rl, (unsigned long)lg->src->n)];
        *p = clip_len(s->prompt, 0, lg->max_prompt);
        *o = clip_len(s->output, 0, lg->max_output);
    }
    }
}

/* The refusal of an arrival past TRACE_MAX_NS: request i at at_ns. */
static int too_late(int64_t i, double at_ns, double rps, struct ts_err *err)
{
    return ts_fail(err, "arrival rate %g req/s: request %lld would arrive after %.3g years, past the %.0f "
                   "years a trace's clock holds (int64 nanoseconds, with room for the simulation); raise "
                   "--rps or lower --requests", rps, (long long)i + 1, trace_years(at_ns),
                   trace_years((double)TRACE_MAX_NS));
}

int trace_stream_repeat(struct trace_stream *st, const struct trace *t, int64_t n, struct ts_err *err)
{
    trace_stream_of(st, t);
    if (n <= t->n || t->n == 0)
        return 0;
    const int64_t first = t->reqs[0].arrival_ns, last = t->reqs[t->n - 1].arrival_ns;
    TS_ASSERT(first >= 0 && last >= first); /* (trace_parse's and trace_generate's) */
    /* the period, the span times n / (n - 1) rounded, in integers: the span plus its mean gap, or
     * past the clock (where no pass after the first can start) */
    const int64_t span = last - first, gaps = t->n - 1;
    const int64_t gap = gaps > 0 ? span / gaps + (2 * (span % gaps) >= gaps) : 1000000000;
    const bool past = gaps > 0 && gap > TRACE_MAX_NS - span;
    st->period_ns = past ? TRACE_MAX_NS : TS_MAX(gaps > 0 ? span + gap : gap, 1);
    /* the stream's last request, its row's arrival plus its pass's shift, arrives last (a pass ends
     * no later than the next pass's row of any arrival, the period being at least the span) */
    const int64_t passes = (n - 1) / t->n, tail = t->reqs[(n - 1) % t->n].arrival_ns;
    if (past || passes > (TRACE_MAX_NS - tail) / st->period_ns) {
        const double at = (double)tail + (double)passes * (past ? (double)span + (double)gap : (double)st->period_ns);
        return ts_fail(err, "%lld requests of a trace of %lld played again end to end: the last would arrive after "
                       "%.3g years, past the %.0f years a trace's clock holds; raise --rps or lower --requests",
                       (long long)n, (long long)t->n, trace_years(at), trace_years((double)TRACE_MAX_NS));
    }
    st->n = n;
    return 0;
}

int trace_stream_next(struct trace_stream *st, struct trace_req *out, struct ts_err *err)
{
    if (st->i >= st->n)
        return 0;
    if (st->t) {
        *out = st->t->reqs[st->i % st->t->n];
        out->arrival_ns += st->i / st->t->n * st->period_ns; /* (a pass after the first: trace_stream_repeat) */
        st->i++;
        return 1;
    }
    *out = (struct trace_req){0}; /* (a generated request names no prompt blocks) */
    draw_lengths(st, &out->prompt, &out->output);
    if (st->i > 0)
        st->now_s += next_gap_s(&st->ag, st->ra);
    if (!(st->now_s * 1e9 <= (double)TRACE_MAX_NS))
        return too_late(st->i, st->now_s * 1e9, st->ag.rps, err);
    out->arrival_ns = llround(st->now_s * 1e9);
    st->i++;
    return 1;
}

int trace_generate(struct trace *out, int64_t n, const struct arrival_gen *ag, const struct length_gen *lg,
                   uint64_t seed, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    out->format = TRACE_TESSERA;
    out->has_times = true;
    struct trace_stream st;
    trace_stream_gen(&st, n, ag, lg, seed);
    struct trace_req r;
    int rc;
    while ((rc = trace_stream_next(&st, &r, err)) == 1)
        trace_push(out, r.arrival_ns, r.prompt, r.output);
    trace_stream_free(&st);
    if (rc < 0)
        trace_free(out);
    return rc < 0 ? -1 : 0;
}

int trace_assign_arrivals(struct trace *t, const struct arrival_gen *ag, uint64_t seed, struct ts_err *err)
{
    gsl_rng *ra = rng_for(seed * 2);
    double now = 0.0;
    for (int64_t i = 0; i < t->n; i++) {
        if (i > 0)
            now += next_gap_s(ag, ra);
        if (!(now * 1e9 <= (double)TRACE_MAX_NS)) {
            gsl_rng_free(ra);
            return too_late(i, now * 1e9, ag->rps, err);
        }
        t->reqs[i].arrival_ns = llround(now * 1e9);
    }
    t->has_times = true;
    gsl_rng_free(ra);
    return 0;
}

int trace_rescale(struct trace *t, double rps, struct ts_err *err)
{
    TS_ASSERT(rps > 0 && t->has_times);
    if (t->n < 2)
        return 0;
    double dur = (double)(t->reqs[t->n - 1].arrival_ns - t->reqs[0].arrival_ns);
    if (dur <= 0)
        return 0;
    double factor = ((double)(t->n - 1) / rps * 1e9) / dur;
    if (!((double)t->reqs[t->n - 1].arrival_ns * factor <= (double)TRACE_MAX_NS))
        return too_late(t->n - 1, (double)t->reqs[t->n - 1].arrival_ns * factor, rps, err);
    for (int64_t i = 0; i < t->n; i++)
        t->reqs[i].arrival_ns = llround((double)t->reqs[i].arrival_ns * factor);
    return 0;
}

void trace_truncate(struct trace *t, int64_t n)
{
    if (n >= 0 && n < t->n) {
        t->n = n;
        t->n_hash = 0; /* (the kept rows' ids: a prefix of the pool) */
        for (int64_t i = 0; i < n; i++)
            t->n_hash += t->reqs[i].n_hash;
    }
}

int trace_write(const struct trace *t, const char *path, struct ts_err *err)
{
    /* a file is written beside path and renamed onto it: whole or not at all (whole.h) */
    const bool out = strcmp(path, "-") == 0;
    struct ts_whole w = {.slot = -1};
    if (!out && ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
        return -1;
    FILE *f = out ? stdout : w.f;
    fprintf(f, "arrival_ns,prompt_tokens,output_tokens\n");
    for (int64_t i = 0; i < t->n; i++)
        fprintf(f, "%lld,%d,%d\n", (long long)t->reqs[i].arrival_ns, t->reqs[i].prompt,
                t->reqs[i].output);
    if (!out)
        return ts_whole_close(&w, false, err);
    if (ferror(f) || fflush(f) != 0)
        return ts_fail(err, "%s: cannot write it: %s", path, strerror(errno));
    return 0;
}

static void dist_of(double *v, int64_t n, struct dist_stats *d)
{
    memset(d, 0, sizeof *d);
    if (n == 0)
        return;
    gsl_sort(v, 1, (size_t)n);
    d->mean = gsl_stats_mean(v, 1, (size_t)n);
    d->p50 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.50);
    d->p90 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.90);
    d->p99 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.99);
    d->min = v[0];
    d->max = v[n - 1];
}

/* Mean and sd of log(x) over x > 0. */
static void log_fit(const double *v, int64_t n, double *mu, double *sigma)
{
    double *l = xmalloc(sizeof *l * (size_t)(n ? n : 1));
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (v[i] > 0)
            l[k++] = log(v[i]);
    *mu = k ? gsl_stats_mean(l, 1, (size_t)k) : 0;
    *sigma = k > 1 ? gsl_stats_sd_m(l, 1, (size_t)k, *mu) : 0;
    free(l);
}

void trace_stats_compute(const struct trace *t, struct trace_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = t->n;
    if (t->n == 0)
        return;
    double *v = xmalloc(sizeof *v * (size_t)t->n);
    if (t->has_times && t->n > 1) {
        s->duration_s = (double)(t->reqs[t->n - 1].arrival_ns - t->reqs[0].arrival_ns) * 1e-9;
        s->rate_rps = s->duration_s > 0 ? (double)(t->n - 1) / s->duration_s : 0;
        for (int64_t i = 1; i < t->n; i++)
            v[i - 1] = (double)(t->reqs[i].arrival_ns - t->reqs[i - 1].arrival_ns) * 1e-9;
        double m = gsl_stats_mean(v, 1, (size_t)(t->n - 1));
        s->cv = m > 0 && t->n > 2 ? gsl_stats_sd_m(v, 1, (size_t)(t->n - 1), m) / m : 0;
    }
    for (int64_t i = 0; i < t->n; i++)
        v[i] = t->reqs[i].prompt;
    log_fit(v, t->n, &s->mu_p, &s->sigma_p);
    dist_of(v, t->n, &s->prompt);
    for (int64_t i = 0; i < t->n; i++)
        v[i] = t->reqs[i].output;
    log_fit(v, t->n, &s->mu_o, &s->sigma_o);
    dist_of(v, t->n, &s->output);
    free(v);
}
