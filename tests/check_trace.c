/* check_trace.c: trace loaders, their error messages, generators, rescaling and statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "trace.h"

static struct trace T;
static struct ts_err E;

static int parse(const char *name, const char *text, bool skip)
{
    return trace_parse(name, text, strlen(text), skip, &T, &E);
}

START_TEST(azure_crlf_no_final_newline)
{
    ck_assert_msg(parse("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                  "2031-03-04 05:06:07.1000000,2048,16\r\n"
                                  "2031-03-04 05:06:07.1520000,1536,12\r\n"
                                  "2031-03-04 10:49:03.12004,1,2", false) == 0, "%s", E.msg);
    ck_assert_int_eq(T.format, TRACE_AZURE);
    ck_assert_int_eq(T.n, 3);
    ck_assert_int_eq(T.reqs[0].arrival_ns, 0);
    ck_assert_int_eq(T.reqs[1].arrival_ns, 52000000);
    ck_assert_int_eq(T.reqs[2].arrival_ns, (int64_t)(5 * 3600 + 42 * 60 + 56) * 1000000000LL + 20040000);
    ck_assert_int_eq(T.reqs[0].prompt, 2048);
    ck_assert_int_eq(T.reqs[1].output, 12);
    trace_free(&T);
}
END_TEST

START_TEST(burstgpt_mooncake_lengths_tessera)
{
    ck_assert_int_eq(parse("b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,"
                                    "Log Type\n7,ChatGPT,300,20,320,Conversation log\n"
                                    "47.5,GPT-4,900,0,900,API log\n", false), 0);
    ck_assert_int_eq(T.format, TRACE_BURSTGPT);
    ck_assert_int_eq(T.reqs[1].arrival_ns, 40500000000LL);
    ck_assert_int_eq(T.reqs[1].output, 0);
    trace_free(&T);
    ck_assert_int_eq(parse("m.jsonl", "{\"timestamp\": 0, \"input_length\": 5000, \"output_length\": 400,"
                                      " \"hash_ids\": [0, 1]}\n{\"timestamp\": 40, \"input_length\": 7,"
                                      " \"output_length\": 3}\n", false), 0);
    ck_assert_int_eq(T.format, TRACE_MOONCAKE);
    ck_assert_int_eq(T.reqs[1].arrival_ns, 40000000);
    ck_assert(T.reqs[0].n_hash == 2 && T.reqs[0].hash[0] == 0 && T.reqs[0].hash[1] == 1);
    ck_assert(T.reqs[1].n_hash == 0 && T.reqs[1].hash == NULL);
    trace_free(&T);
    /* each row's ids where they were, across a skipped row and the pool's growth */
    char rows[8192] = "";
    for (int i = 0; i < 40; i++)
        snprintf(rows + strlen(rows), sizeof rows - strlen(rows),
                 "{\"timestamp\": %d, \"input_length\": 2000, \"output_length\": 1, \"hash_ids\": [%d, %d, %s]}\n",
                 i, i, i + 1, i == 7 ? "-1" : "99");
    ck_assert_int_eq(parse("m.jsonl", rows, true), 0);
    ck_assert_int_eq(T.n, 39);
    ck_assert_int_eq(T.skipped_rows, 1);
    for (int i = 0; i < 39; i++) {
        const int row = i < 7 ? i : i + 1;
        ck_assert(T.reqs[i].n_hash == 3 && T.reqs[i].hash[0] == row && T.reqs[i].hash[1] == row + 1 &&
                  T.reqs[i].hash[2] == 99);
    }
    trace_free(&T);
    ck_assert_int_eq(parse("l.csv", "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
                                    "81,640,721,0.13\n300,700,1000,0.43\n", false), 0);
    ck_assert_int_eq(T.format, TRACE_LENGTHS);
    ck_assert(!T.has_times);
    ck_assert_int_eq(T.reqs[1].prompt, 300);
    trace_free(&T);
    ck_assert_int_eq(parse("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,5,6\n1000,7,8\n", false), 0);
    ck_assert_int_eq(T.format, TRACE_TESSERA);
    ck_assert_int_eq(T.reqs[1].arrival_ns, 1000);
    trace_free(&T);
}
END_TEST

/* A malformed row names FILE:LINE: FIELD: problem. */
static void expect_error(const char *name, const char *text, const char *msg)
{
    ck_assert_int_ne(parse(name, text, false), 0);
    ck_assert_msg(strstr(E.msg, msg) != NULL, "got '%s', expected '%s'", E.msg, msg);
    ck_assert_int_eq(T.n, 0);
    ck_assert_ptr_null(T.reqs);
}

START_TEST(errors_name_file_line_field)
{
    const char *hdr = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s2031-03-04 05:06:07,10,5\n2031-03-04 05:06:08,abc,5\n", hdr);
    expect_error("a.csv", buf, "a.csv:3: ContextTokens: not an integer ('abc')");
    snprintf(buf, sizeof buf, "%s2031-03-04 05:06:07,10,-5\n", hdr);
    expect_error("a.csv", buf, "a.csv:2: GeneratedTokens: negative length ('-5')");
    snprintf(buf, sizeof buf, "%s2031-03-04 05:06:07,1e30,5\n", hdr);
    expect_error("a.csv", buf, "a.csv:2: ContextTokens: '1e30' is not a plausible token count (0..100000000)");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": -4, \"output_length\": 1}\n",
                 "m.jsonl:1: input_length: negative length (-4)");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1e30}\n",
                 "m.jsonl:1: output_length: 1e+30 is not a plausible token count (0..100000000)");
    snprintf(buf, sizeof buf, "%s2031-03-04 05:06:07,10\n", hdr);
    expect_error("a.csv", buf, "a.csv:2: GeneratedTokens: missing field");
    snprintf(buf, sizeof buf, "%s2031-03-04 05:06:09,10,5\n2031-03-04 05:06:08,10,5\n", hdr);
    expect_error("a.csv", buf, "a.csv:3: TIMESTAMP: time goes backwards");
    snprintf(buf, sizeof buf, "%syesterday,10,5\n", hdr);
    expect_error("a.csv", buf, "a.csv:2: TIMESTAMP: not a date-time");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1}\n"
                            "{\"timestamp\": 2, \"input_length\": 5}\n",
                 "m.jsonl:2: output_length: missing field");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": \"x\", \"output_length\": 1}\n",
                 "m.jsonl:1: input_length: not a number");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1\n",
                 "m.jsonl:1: json:");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": 3}\n",
                 "m.jsonl:1: hash_ids: not an array");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
                 "m.jsonl:1: hash_ids: 2 ids for 512 input tokens (one a started block of 512 at most)");
    expect_error("m.jsonl", "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [\"a\"]}\n",
                 "m.jsonl:1: hash_ids: item 1 is not an integer in 0..2147483647");
    expect_error("x.csv", "a,b,c\n1,2,3\n", "x.csv:1: header: not a known trace format");
    expect_error("e.csv", "", "e.csv: empty file");
    expect_error("h.csv", "num_prefill_tokens,num_decode_tokens\n", "h.csv: no requests");
    /* a column the format does not have, in the header or a row, is named (BurstGPT's and the
     * length-only CSVs' extra columns are theirs) */
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens,extra\n0,1,2,3\n",
                 "t.csv:1: header: column 'extra': not a column of this format");
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n5,1,2,9\n",
                 "t.csv:3: column 4: a field the header does not have (row has 4 of 3 columns)");
    ck_assert_int_eq(parse("l.csv", "num_prefill_tokens,num_decode_tokens,num_total_tokens\n3,4,7\n", false), 0);
    trace_free(&T);
    /* a NUL byte is named where it is */
    static const char nul[] = "arrival_ns,prompt_tokens,output_tokens\n0,1\0,2\n";
    ck_assert_int_ne(trace_parse("n.csv", nul, sizeof nul - 1, false, &T, &E), 0);
    ck_assert_msg(strstr(E.msg, "n.csv:2: a NUL byte at column 4") != NULL, "got '%s'", E.msg);
    /* tessera's own arrivals are whole nanoseconds, in decimal */
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n1.5,1,2\n",
                 "t.csv:3: arrival_ns: not a whole number of nanoseconds ('1.5')");
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n0x10,1,2\n",
                 "t.csv:3: arrival_ns: not a whole number of nanoseconds ('0x10')");
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n-5,1,2\n",
                 "t.csv:3: arrival_ns: not a whole number of nanoseconds ('-5')");
    expect_error("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n99999999999999999999,1,2\n",
                 "t.csv:3: arrival_ns: time out of range");
    ck_assert_int_eq(parse("t.csv", "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n4611686018427387904,1,2\n", false), 0);
    ck_assert_int_eq(T.reqs[1].arrival_ns, TRACE_MAX_NS);
    trace_free(&T);
    /* a UTF-8 byte-order mark is skipped, and said */
    ck_assert_int_eq(parse("b.csv", "\xef\xbb\xbf" "arrival_ns,prompt_tokens,output_tokens\n0,1,2\n", false), 0);
    ck_assert(T.skipped_bom && T.n == 1 && T.reqs[0].prompt == 1);
    trace_free(&T);
}
END_TEST

START_TEST(skip_bad_rows_counts)
{
    ck_assert_int_eq(parse("a.csv", "num_prefill_tokens,num_decode_tokens\n1,2\nx,3\n4,-1\n5,6\n7\n",
                           true), 0);
    ck_assert_int_eq(T.n, 2);
    ck_assert_int_eq(T.skipped_rows, 3);
    trace_free(&T);
}
END_TEST

START_TEST(poisson_and_gamma_rates)
{
    struct arrival_gen ag;
    struct length_gen lg;
    ck_assert_int_eq(length_parse("fixed:100,50", &lg, NULL), 0);
    ck_assert_int_eq(arrival_parse("poisson", 4.0, &ag, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 40000, &ag, &lg, 11, NULL), 0);
    struct trace_stats s;
    trace_stats_compute(&T, &s);
    ck_assert_msg(fabs(s.rate_rps - 4.0) < 0.1, "rate %.3f", s.rate_rps);
    ck_assert_msg(fabs(s.cv - 1.0) < 0.03, "cv %.3f", s.cv);
    ck_assert(s.prompt.p50 == 100 && s.output.max == 50);
    trace_free(&T);
    ck_assert_int_eq(arrival_parse("gamma:3", 4.0, &ag, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 40000, &ag, &lg, 11, NULL), 0);
    trace_stats_compute(&T, &s);
    ck_assert_msg(fabs(s.rate_rps - 4.0) < 0.25, "rate %.3f", s.rate_rps);
    ck_assert_msg(fabs(s.cv - 3.0) < 0.25, "cv %.3f", s.cv);
    /* rescaling hits the target rate exactly */
    ck_assert_int_eq(trace_rescale(&T, 0.5, NULL), 0);
    trace_stats_compute(&T, &s);
    ck_assert(fabs(s.rate_rps - 0.5) < 1e-6);
    trace_free(&T);
}
END_TEST

/* Arrivals stay inside the clock: a rate whose n requests span about 2^62 ns is generated or refused
 * by where its last arrival falls, never wrapped; one far below is refused with the rate named, and a
 * rescale past the clock leaves the trace as it was. */
START_TEST(rates_past_the_clock_refused)
{
    struct arrival_gen ag;
    struct length_gen lg;
    struct ts_err err;
    ck_assert_int_eq(length_parse("fixed:100,50", &lg, NULL), 0);
    /* fixed gaps (gamma with a tiny CV): 4 requests a gap of 1e18 ns apart end at 3e18 < 2^62 */
    ck_assert_int_eq(arrival_parse("gamma:0.0001", 1e-9, &ag, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 4, &ag, &lg, 3, &err), 0);
    for (int64_t i = 1; i < T.n; i++)
        ck_assert(T.reqs[i].arrival_ns > T.reqs[i - 1].arrival_ns && T.reqs[i].arrival_ns <= TRACE_MAX_NS);
    trace_free(&T);
    /* ... and 6 would end at 5e18 > 2^62 (4.61e18) */
    ck_assert_int_eq(trace_generate(&T, 6, &ag, &lg, 3, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "arrival rate 1e-09 req/s: request 6 would arrive after"));
    ck_assert_int_eq(T.n, 0);
    ck_assert_int_eq(arrival_parse("poisson", 1e-12, &ag, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 5, &ag, &lg, 3, &err), -1);
    /* a rescale that would carry the last arrival past the clock leaves the times as they were */
    ck_assert_int_eq(arrival_parse("poisson", 1.0, &ag, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 10, &ag, &lg, 3, NULL), 0);
    const int64_t last = T.reqs[9].arrival_ns;
    ck_assert_int_eq(trace_rescale(&T, 1e-10, &err), -1);
    ck_assert_int_eq(T.reqs[9].arrival_ns, last);
    trace_free(&T);
}
END_TEST

START_TEST(lognormal_fit_recovers_parameters)
{
    struct arrival_gen ag;
    struct length_gen lg;
    ck_assert_int_eq(arrival_parse("poisson", 1.0, &ag, NULL), 0);
    ck_assert_int_eq(length_parse("lognormal:6.5,0.8,5.0,0.6", &lg, NULL), 0);
    ck_assert_int_eq(trace_generate(&T, 50000, &ag, &lg, 5, NULL), 0);
    struct trace_stats s;
    trace_stats_compute(&T, &s);
    ck_assert_msg(fabs(s.mu_p - 6.5) < 0.02 && fabs(s.sigma_p - 0.8) < 0.02, "%f %f", s.mu_p, s.sigma_p);
    ck_assert_msg(fabs(s.mu_o - 5.0) < 0.02 && fabs(s.sigma_o - 0.6) < 0.02, "%f %f", s.mu_o, s.sigma_o);
    trace_free(&T);
    struct ts_err err;
    ck_assert_int_ne(length_parse("lognormal:1,2", &lg, &err), 0);
    ck_assert_int_ne(length_parse("fixed:1", &lg, &err), 0);
    ck_assert_int_ne(arrival_parse("gamma:-1", 1.0, &ag, &err), 0);
    ck_assert_int_ne(arrival_parse("uniform", 1.0, &ag, &err), 0);
}
END_TEST

START_TEST(same_seed_same_trace)
{
    struct arrival_gen ag;
    struct length_gen lg;
    arrival_parse("gamma:2", 3.0, &ag, NULL);
    length_parse("sharegpt", &lg, NULL);
    struct trace a, b;
    ck_assert_int_eq(trace_generate(&a, 500, &ag, &lg, 9, NULL), 0);
    ck_assert_int_eq(trace_generate(&b, 500, &ag, &lg, 9, NULL), 0);
    ck_assert_int_eq(memcmp(a.reqs, b.reqs, 500 * sizeof *a.reqs), 0);
    trace_free(&b);
    ck_assert_int_eq(trace_generate(&b, 500, &ag, &lg, 10, NULL), 0);
    ck_assert_int_ne(memcmp(a.reqs, b.reqs, 500 * sizeof *a.reqs), 0);
    trace_free(&a);
    trace_free(&b);
}
END_TEST

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* n requests of the named length profile, Poisson at 1 req/s, drawn from seed into *t; *lg (when given)
 * receives the parsed profile. */
static void draw_profile(const char *spec, int n, uint64_t seed, struct trace *t, struct length_gen *lg)
{
    struct arrival_gen ag;
    struct length_gen own;
    if (!lg)
        lg = &own;
    ck_assert_int_eq(arrival_parse("poisson", 1.0, &ag, NULL), 0);
    ck_assert_int_eq(length_parse(spec, lg, NULL), 0);
    ck_assert_int_eq(trace_generate(t, n, &ag, lg, seed, NULL), 0);
}

/* t's prompt lengths into p and its output lengths into o (n each), each sorted; the sum of each. */
static void sorted_lengths(const struct trace *t, int32_t *p, int32_t *o, double *sum_p, double *sum_o)
{
    *sum_p = *sum_o = 0;
    for (int64_t i = 0; i < t->n; i++)
        p[i] = t->reqs[i].prompt, o[i] = t->reqs[i].output, *sum_p += p[i], *sum_o += o[i];
    qsort(p, (size_t)t->n, sizeof *p, cmp_i32);
    qsort(o, (size_t)t->n, sizeof *o, cmp_i32);
}

/* The osc profile draws the lengths its published statistics describe: the query 346.68 tokens on
 * average (within 1%), median 352, at most 512; the summary median 32, mean 33.92, at most 134. */
START_TEST(osc_lengths_match_the_published_statistics)
{
    enum { N = 40000 };
    struct trace t;
    draw_profile("osc", N, 3, &t, NULL);
    int32_t *p = xmalloc(sizeof *p * N), *o = xmalloc(sizeof *o * N);
    double sp, so;
    sorted_lengths(&t, p, o, &sp, &so);
    ck_assert_msg(fabs(sp / N / 346.68 - 1) < 0.01, "query mean %g", sp / N);
    ck_assert_msg(abs(p[N / 2] - 352) <= 3 && p[N - 1] == 512 && p[0] >= 1, "query median %d max %d", p[N / 2],
                  p[N - 1]);
    ck_assert_msg(fabs(so / N / 33.92 - 1) < 0.02 && abs(o[N / 2] - 32) <= 1 && o[N - 1] <= 134,
                  "summary mean %g median %d", so / N, o[N / 2]);
    free(p), free(o);
    trace_free(&t);
}
END_TEST

/* The percentile profiles draw what their tables hold: livebench's prompts between 286 and 2,043
 * tokens around a median of 632 (within 4%), each answer 256 tokens; burstgpt's requests median 594 (at most
 * 1,840) and responses median 336 (at most 1,656); sharegpt-first's prompts median 41 (4 to 6,219) and
 * answers median 282 (4 to 3,024); math's problems median 49 (9 to 1,034) and solutions median 158 (23 to
 * 1,991). Every draw stays inside its table. */
START_TEST(percentile_profiles_draw_their_tables)
{
    static const struct {
        const char *spec;
        int p_lo, p_med, p_hi, o_lo, o_med, o_hi;
    } cases[] = {{"livebench", 286, 632, 2043, 256, 256, 256}, {"burstgpt", 14, 594, 1840, 11, 336, 1656},
                 {"sharegpt-first", 4, 41, 6219, 4, 282, 3024}, {"math", 9, 49, 1034, 23, 158, 1991}};
    enum { N = 40000 };
    int32_t *p = xmalloc(sizeof *p * N), *o = xmalloc(sizeof *o * N);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct trace t;
        double sp, so;
        draw_profile(cases[c].spec, N, 5, &t, NULL);
        sorted_lengths(&t, p, o, &sp, &so);
        ck_assert_msg(p[0] >= cases[c].p_lo && p[N - 1] <= cases[c].p_hi &&
                          abs(p[N / 2] - cases[c].p_med) <= cases[c].p_med / 25,
                      "%s: prompts %d..%d, median %d", cases[c].spec, p[0], p[N - 1], p[N / 2]);
        ck_assert_msg(o[0] >= cases[c].o_lo && o[N - 1] <= cases[c].o_hi &&
                          abs(o[N / 2] - cases[c].o_med) <= cases[c].o_med / 25,
                      "%s: outputs %d..%d, median %d", cases[c].spec, o[0], o[N - 1], o[N / 2]);
        trace_free(&t);
    }
    free(p), free(o);
}
END_TEST

/* sharegpt-first's table is uneven, its tail finer than 5% steps: 5% of the prompts lie past its 95th
 * percentile (1,550 tokens) and 1% past its 99th (3,364), where even steps over its 25 points would put
 * 21% and 13% there; the mean is the file's 299 tokens within 3%. */
START_TEST(uneven_percentile_positions)
{
    enum { N = 100000 };
    struct trace t;
    struct length_gen lg;
    draw_profile("sharegpt-first", N, 3, &t, &lg);
    ck_assert_ptr_nonnull(lg.pct_x);
    int past95 = 0, past99 = 0;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        past95 += t.reqs[i].prompt > 1550;
        past99 += t.reqs[i].prompt > 3364;
        sum += t.reqs[i].prompt;
    }
    ck_assert_msg(fabs(past95 / (double)N - 0.05) < 0.004 && fabs(past99 / (double)N - 0.01) < 0.002,
                  "past the 95th: %.4f, past the 99th: %.4f", past95 / (double)N, past99 / (double)N);
    ck_assert_msg(fabs(sum / N - 299) < 9, "mean prompt %.1f", sum / N);
    trace_free(&t);
}
END_TEST

/* wildchat is the lognormal of WildChat's Table 1: chatbot turns of mean 441 tokens (within 3%), user
 * turns of median 53 (within 4%). */
START_TEST(wildchat_matches_its_table)
{
    enum { N = 100000 };
    struct trace t;
    draw_profile("wildchat", N, 4, &t, NULL);
    int32_t *p = xmalloc(sizeof *p * N), *o = xmalloc(sizeof *o * N);
    double sp, so;
    sorted_lengths(&t, p, o, &sp, &so);
    ck_assert_msg(fabs(so / N - 441.34) < 13 && abs(p[N / 2] - 53) <= 2, "answers mean %.1f, prompts median %d",
                  so / N, p[N / 2]);
    free(p), free(o);
    trace_free(&t);
}
END_TEST

START_TEST(write_and_read_back)
{
    struct arrival_gen ag;
    struct length_gen lg;
    arrival_parse("poisson", 2.0, &ag, NULL);
    length_parse("sharegpt", &lg, NULL);
    struct trace a;
    ck_assert_int_eq(trace_generate(&a, 300, &ag, &lg, 1, NULL), 0);
    const char *p = tmp_path(0, ".csv");
    ck_assert_int_eq(trace_write(&a, p, NULL), 0);
    ck_assert_int_eq(trace_load(p, false, &T, &E), 0);
    ck_assert_int_eq(T.n, 300);
    ck_assert_int_eq(memcmp(a.reqs, T.reqs, 300 * sizeof *a.reqs), 0);
    trace_free(&a);
    trace_free(&T);
}
END_TEST

/* A trace played again: n requests of its rows in turn, each pass's arrivals shifted by its span and
 * its mean gap (the rate continues across the seam), the lengths as in the file; a pass past the
 * clock refused; fewer than the rows, the first n. */
START_TEST(stream_repeats_a_trace)
{
    const char *p = tmp_file(0, ".csv", "arrival_ns,prompt_tokens,output_tokens\n0,10,1\n1000,20,2\n3000,30,3\n");
    ck_assert_int_eq(trace_load(p, false, &T, &E), 0);
    struct trace_stream st;
    ck_assert_int_eq(trace_stream_repeat(&st, &T, 8, &E), 0);
    /* span 3000 over 2 gaps: a mean gap of 1500, a pass every 4500 ns */
    const int64_t at[8] = {0, 1000, 3000, 4500, 5500, 7500, 9000, 10000};
    struct trace_req r;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(trace_stream_next(&st, &r, &E), 1);
        ck_assert_int_eq(r.arrival_ns, at[i]);
        ck_assert_int_eq(r.prompt, 10 * (i % 3 + 1));
        ck_assert_int_eq(r.output, i % 3 + 1);
    }
    ck_assert_int_eq(trace_stream_next(&st, &r, &E), 0);
    ck_assert_int_eq(trace_stream_repeat(&st, &T, 2, &E), 0); /* (trace_truncate gives the first n) */
    ck_assert_int_eq(st.n, 3);
    ck_assert_int_ne(trace_stream_repeat(&st, &T, INT64_MAX / 2, &E), 0);
    ck_assert_ptr_nonnull(strstr(E.msg, "played again end to end"));
    trace_free(&T);
}
END_TEST

/* The clock's edge: a trace whose last arrival is the clock's limit (its span times n / (n - 1)
 * past int64's range) is played again by no pass (the next would arrive past the clock), and one
 * whose passes fit is played to the limit exactly; every arrival a stream gives is within the clock
 * and none goes backwards. */
START_TEST(stream_repeat_at_the_clocks_edge)
{
    struct trace_stream st;
    struct trace_req r;
    /* (a third of the clock and one more: three of it lie 2 ns past, which a double rounds back inside) */
    static const int64_t lasts[] = {TRACE_MAX_NS, TRACE_MAX_NS - 1, TRACE_MAX_NS / 2, TRACE_MAX_NS / 3 + 1,
                                    TRACE_MAX_NS / 3, TRACE_MAX_NS / 4, 3};
    for (size_t k = 0; k < sizeof lasts / sizeof *lasts; k++) {
        memset(&T, 0, sizeof T);
        trace_push(&T, 0, 100, 50);
        trace_push(&T, lasts[k], 10, 10);
        /* by hand: period 2 last; pass p's two rows arrive at 2p last and (2p + 1) last, and the
         * stream's n-th request is the first of pass (n - 1) / 2 where n is odd, its second where even */
        for (int64_t n = 3; n <= 6; n++) {
            const int64_t passes = (n - 1) / 2, times = 2 * passes + (n % 2 == 0);
            const bool fits = lasts[k] <= TRACE_MAX_NS / times;
            const int rc = trace_stream_repeat(&st, &T, n, &E);
            ck_assert_msg((rc == 0) == fits, "last %lld, %lld requests: %s", (long long)lasts[k], (long long)n,
                          rc ? E.msg : "played");
            if (rc)
                continue;
            int64_t prev = 0;
            for (int64_t i = 0; i < n; i++) {
                ck_assert_int_eq(trace_stream_next(&st, &r, &E), 1);
                ck_assert(r.arrival_ns >= prev && r.arrival_ns <= TRACE_MAX_NS);
                prev = r.arrival_ns;
            }
        }
        trace_free(&T);
    }
}
END_TEST

/* The real public traces, when ../shared is beside the checkout (as in CI). */
START_TEST(shared_traces)
{
    struct { const char *file; int64_t rows; enum trace_format fmt; } files[] = {
        {"AzureLLMInferenceTrace_code.csv", 8819, TRACE_AZURE},
        {"AzureLLMInferenceTrace_conv.csv", 19366, TRACE_AZURE},
        {"mooncake_conversation_trace.jsonl", 12031, TRACE_MOONCAKE},
        {"sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731, TRACE_LENGTHS},
        {"arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257, TRACE_LENGTHS},
    };
    int found = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        const char *p = shared_trace(files[i].file);
        if (!p)
            continue;
        found++;
        ck_assert_msg(trace_load(p, false, &T, &E) == 0, "%s", E.msg);
        ck_assert_int_eq(T.format, files[i].fmt);
        ck_assert_int_eq(T.n, files[i].rows);
        struct trace_stats s;
        trace_stats_compute(&T, &s);
        if (files[i].fmt == TRACE_AZURE && strstr(files[i].file, "code")) {
            /* README-SOURCES: 3,435.9 s; context mean 2,048, median 1,469; generated mean 28 */
            ck_assert(fabs(s.duration_s - 3435.9) < 1.0);
            ck_assert(fabs(s.prompt.mean - 2048) < 2 && fabs(s.output.mean - 28) < 1);
        }
        if (files[i].fmt == TRACE_LENGTHS && strstr(files[i].file, "sharegpt")) {
            /* the built-in sharegpt lognormal is this fit */
            ck_assert(fabs(s.mu_p - 7.0065) < 1e-3 && fabs(s.sigma_o - 1.0011) < 1e-3);
        }
        trace_free(&T);
    }
    if (!found)
        fprintf(stderr, "trace: ../shared/traces/raw not found, real-trace checks skipped\n");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    ck_case(s, azure_crlf_no_final_newline, 60);
    ck_case(s, burstgpt_mooncake_lengths_tessera, 60);
    ck_case(s, uneven_percentile_positions, 60);
    ck_case(s, wildchat_matches_its_table, 60);
    ck_case(s, errors_name_file_line_field, 60);
    ck_case(s, skip_bad_rows_counts, 60);
    ck_case(s, poisson_and_gamma_rates, 60);
    ck_case(s, rates_past_the_clock_refused, 60);
    ck_case(s, lognormal_fit_recovers_parameters, 60);
    ck_case(s, same_seed_same_trace, 60);
    ck_case(s, write_and_read_back, 60);
    ck_case(s, osc_lengths_match_the_published_statistics, 60);
    ck_case(s, percentile_profiles_draw_their_tables, 60);
    ck_case(s, stream_repeats_a_trace, 60);
    ck_case(s, stream_repeat_at_the_clocks_edge, 60);
    ck_case(s, shared_traces, 60);
    return run_suite("trace", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
