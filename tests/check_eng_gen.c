/* check_eng_gen.c: the unmasking rules' reference and a generation's host side (eng_unmask.h,
 * eng_gen.h; no GPU: the decisions come from the reference over hashed confidences). */
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "eng_gen.h"
#include "kernels.h"
#include "eng_plan.h"
#include "eng_ref.h"
#include "eng_unmask.h"
#include "params.h"
#include "policy.h"
#include "test_util.h"

static struct unmask_rule rule(const char *spec)
{
    struct unmask_rule u;
    struct ts_err err;
    ck_assert_msg(unmask_parse(spec, &u, &err) == 0, "%s: %s", spec, err.msg);
    return u;
}

static int32_t picks(const char *spec, const float *conf, const uint8_t *masked, int n, uint8_t *pick)
{
    const struct unmask_rule u = rule(spec);
    return unmask_block(&u, conf, masked, n, pick);
}

START_TEST(rules_by_hand)
{
    /* rows 0..7; row 2 and 5 decided */
    const float conf[8] = {0.30f, 0.95f, 0.99f, 0.50f, 0.91f, 0.97f, 0.20f, 0.50f};
    const uint8_t masked[8] = {1, 1, 0, 1, 1, 0, 1, 1};
    uint8_t p[8];
    /* threshold: every masked row at or above tau */
    ck_assert_int_eq(picks("threshold:0.9", conf, masked, 8, p), 2);
    ck_assert(p[1] && p[4] && !p[2] && !p[5]);
    /* none above: the most confident alone (ties: the lower row, 3 before 7) */
    ck_assert_int_eq(picks("threshold:0.96", conf, masked, 8, p), 1);
    ck_assert(p[1]);
    const float flat[8] = {0.1f, 0.1f, 0.5f, 0.5f, 0.1f, 0.5f, 0.1f, 0.5f};
    ck_assert_int_eq(picks("threshold:0.9", flat, masked, 8, p), 1);
    ck_assert(p[3] && !p[7]);
    /* topk: the k most confident masked rows */
    ck_assert_int_eq(picks("topk:3", conf, masked, 8, p), 3);
    ck_assert(p[1] && p[4] && p[3] && !p[7]);
    ck_assert_int_eq(picks("topk:100", conf, masked, 8, p), 6);
    /* hierarchical: runs {0,1}, {3,4}, {6,7}: their best above 0.4 (1, 4, 7), above 0.9, the top */
    ck_assert_int_eq(picks("hierarchical:0.99,0.4", conf, masked, 8, p), 3);
    ck_assert(p[1] && p[4] && p[7] && !p[0] && !p[3] && !p[6]);
    /* LOW above every run's best: the block's most confident alone */
    ck_assert_int_eq(picks("hierarchical:0.99,0.96", conf, masked, 8, p), 1);
    ck_assert(p[1]);
    /* nothing masked: nothing */
    const uint8_t none[8] = {0};
    ck_assert_int_eq(picks("threshold:0.1", conf, none, 8, p), 0);
    /* NaN ranks last */
    const float nan3[3] = {NAN, 0.2f, NAN};
    const uint8_t all3[3] = {1, 1, 1};
    ck_assert_int_eq(picks("threshold:0.9", nan3, all3, 3, p), 1);
    ck_assert(p[1]);
}
END_TEST

/* Random blocks: each rule commits only masked rows, at least one where any is masked, and what its
 * definition says from the sorted confidences. */
START_TEST(rules_properties)
{
    uint64_t h = 7;
    float conf[64];
    uint8_t masked[64], p[64];
    for (int trial = 0; trial < 2000; trial++) {
        const int n = 1 + (int)((h = ts_mix64(h)) % 64);
        int m = 0;
        for (int i = 0; i < n; i++) {
            h = ts_mix64(h);
            conf[i] = (float)((h >> 11) % 1000) / 1000.0f; /* ties happen */
            masked[i] = (h >> 3) % 3 != 0;
            m += masked[i];
        }
        const float tau = (float)(1 + trial % 10) / 10.0f; /* 0.1 .. 1 */
        char spec[64];
        snprintf(spec, sizeof spec, "threshold:%g", tau);
        int32_t c = picks(spec, conf, masked, n, p), above = 0;
        for (int i = 0; i < n; i++) {
            ck_assert(!p[i] || masked[i]);
            above += masked[i] && conf[i] >= tau;
            if (masked[i] && conf[i] >= tau)
                ck_assert(p[i]);
        }
        ck_assert_int_eq(c, m == 0 ? 0 : TS_MAX(above, 1));
        const int k = 1 + trial % 5;
        snprintf(spec, sizeof spec, "topk:%d", k);
        c = picks(spec, conf, masked, n, p);
        ck_assert_int_eq(c, TS_MIN(k, m));
        for (int i = 0; i < n; i++) /* nothing left out is more confident than something taken */
            for (int j = 0; j < n; j++)
                if (p[i] && masked[j] && !p[j])
                    ck_assert(conf[i] > conf[j] || (conf[i] == conf[j] && i < j));
        snprintf(spec, sizeof spec, "hierarchical:%g,0.3", tau);
        c = picks(spec, conf, masked, n, p);
        ck_assert(m == 0 ? c == 0 : c >= 1);
        for (int i = 0; i < n; i++)
            if (masked[i] && conf[i] > tau)
                ck_assert(p[i]);
    }
}
END_TEST

START_TEST(rule_specs)
{
    struct unmask_rule u;
    struct ts_err err;
    char buf[64];
    const char *good[] = {"topk:1", "threshold:0.9", "threshold:1", "hierarchical:0.9,0.4", "hierarchical:0.8,0",
                          "hierarchical:0.8", "credit:0.9"};
    for (size_t i = 0; i < TS_ARRAY_LEN(good); i++) {
        ck_assert_int_eq(unmask_parse(good[i], &u, &err), 0);
        unmask_format(&u, buf, sizeof buf);
        struct unmask_rule v;
        ck_assert_int_eq(unmask_parse(buf, &v, &err), 0);
        ck_assert(v.kind == u.kind && v.k == u.k && v.tau == u.tau && v.low == u.low);
    }
    ck_assert_float_eq(rule("hierarchical:0.8").low, 0.4f);
    const struct {
        const char *spec, *says;
    } bad[] = {{"topk:0", "1..1024"}, {"topk:x", "1..1024"}, {"threshold:1.5", "(0, 1]"},
               {"threshold:0", "(0, 1]"}, {"credit:-0.1", "(0, 1]"}, {"hierarchical:0,0.4", "TAU"},
               {"threshold:0.9,0.4", "one confidence"}, {"hierarchical:0.9,-1", "LOW"}, {"fixed:2", "expected"},
               {"threshold", "expected"}, {"threshold:", "expected"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_int_ne(unmask_parse(bad[i].spec, &u, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, bad[i].spec), "%s: %s", bad[i].spec, err.msg);
    }
}
END_TEST

/* The argmax (the lower on ties), max and softmax probability of a row, in double. */
static void plain_top(const double *l, int V, int32_t *tok, double *maxv, double *conf)
{
    int32_t a = 0;
    for (int v = 1; v < V; v++)
        if (l[v] > l[a])
            a = v;
    double sum = 0;
    for (int v = 0; v < V; v++)
        sum += exp(l[v] - l[a]);
    *tok = a, *maxv = l[a], *conf = 1.0 / sum;
}

/* Credit decoding's fusion as dInfer computes it, over a dense [rows, V] credit matrix, against the
 * sparse credits of credit_fuse: over a block's steps, positions unmasking as they go; with 40
 * steps and a new top-1 token nearly every step, past CREDIT_MAX credits a position (full). */
static void credit_against_dense(int steps, double spread, double tol, bool full)
{
    enum { ROWS = 6, V = 400 };
    const struct unmask_rule u = rule("credit:0.9");
    static double mat[ROWS][V];
    memset(mat, 0, sizeof mat);
    struct credit_row st[ROWS];
    bool masked[ROWS] = {1, 1, 1, 1, 1, 1};
    uint64_t h = 11;
    double worst = 0;
    int wrong = 0, most = 0;
    for (int it = 0; it < steps; it++)
        for (int r = 0; r < ROWS; r++) {
            double l[V], fused[V];
            float lf[V];
            for (int v = 0; v < V; v++) {
                h = ts_mix64(h);
                lf[v] = (float)(spread * ((double)(h % 10000) / 10000.0 - 0.5));
                l[v] = lf[v];
            }
            int32_t top;
            double m, p;
            plain_top(l, V, &top, &m, &p);
            for (int v = 0; v < V; v++) { /* dInfer: decay, add, fuse */
                if (it > 0)
                    mat[r][v] *= u.beta;
                if (v == top && masked[r])
                    mat[r][v] += pow((float)p, u.gamma);
                fused[v] = l[v] + u.alpha * log(mat[r][v] + 1);
            }
            int32_t dtok;
            double dmax, dconf;
            plain_top(fused, V, &dtok, &dmax, &dconf);
            int32_t tok = top;
            float maxv = (float)m, conf = (float)p;
            credit_fuse(&u, &st[r], (masked[r] ? CREDIT_MASKED : 0) | (it ? CREDIT_DECAY : CREDIT_CLEAR), lf, V,
                        &tok, &maxv, &conf);
            wrong += tok != dtok;
            worst = fmax(worst, fabs(conf - dconf) / dconf);
            ck_assert_int_le(st[r].n, CREDIT_MAX);
            most = TS_MAX(most, st[r].n);
            if (it == steps / 2 && r % 2)
                masked[r] = false; /* decided: its credits only decay from now on */
        }
    ck_assert_int_eq(wrong, 0);
    ck_assert_msg(worst < tol, "confidence off by %g", worst);
    ck_assert(full == (most == CREDIT_MAX));
}

START_TEST(credit_fusion)
{
    credit_against_dense(12, 6.0, 1e-5, false); /* a block's steps; fewer credits a row than the cap */
    credit_against_dense(40, 60.0, 2e-3, true); /* past the cap: the smallest credits dropped */
    /* a credited token overtakes: two near-equal logits, the second's credit decides */
    const struct unmask_rule u = rule("credit:0.9");
    struct credit_row st;
    float l[3] = {1.0f, 1.05f, -3.0f};
    int32_t tok = 1;
    float maxv = 1.05f, conf = 0.5f;
    credit_fuse(&u, &st, CREDIT_CLEAR, l, 3, &tok, &maxv, &conf); /* not masked: no credit */
    ck_assert_int_eq(tok, 1);
    st = (struct credit_row){.n = 1, .tok = {0}, .val = {1.0f}};
    tok = 1, maxv = 1.05f;
    conf = (float)(1.0 / (exp(1.0 - 1.05) + 1 + exp(-3.0 - 1.05)));
    credit_fuse(&u, &st, 0, l, 3, &tok, &maxv, &conf);
    ck_assert_int_eq(tok, 0);
    ck_assert_float_eq_tol(maxv, 1.0f + 0.7f * logf(2.0f), 1e-6);
    struct unmask_rule v;
    struct ts_err err;
    ck_assert_int_ne(unmask_parse("credit:0.9,0.3", &v, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "credit takes one confidence"));
}
END_TEST

static struct gen_cfg cfg(int requests, int P, int G, int B)
{
    return (struct gen_cfg){.requests = requests, .prompt_len = P, .gen_len = G, .block = B, .mask_id = 99,
                            .vocab = 100, .seed = 3, .max_tokens = 4096, .logit_chunk_rows = 64};
}

/* The generations under way and their policies' drives (gen_start, gen_stop). */
static struct {
    struct gen *g;
    struct policy_drive d;
} runs[4];

/* gen_init of c under the simulator's policy (its parameters "NAME=VALUE,..." or NULL), driven;
 * policy NULL: c as it is (FOCUS). */
static int gen_start(struct gen *g, struct gen_cfg *c, const char *policy, const char *params,
                     const struct gen_prompts *pr, struct ts_err *err)
{
    size_t k = 0;
    while (runs[k].g && k + 1 < TS_ARRAY_LEN(runs))
        k++;
    ck_assert_ptr_null(runs[k].g);
    c->policy = NULL;
    if (policy) {
        struct param_values pv = {0};
        char text[256];
        snprintf(text, sizeof text, "%s", params ? params : "");
        for (char *save = NULL, *kv = strtok_r(text, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            ck_assert_ptr_nonnull(eq);
            *eq = '\0';
            ck_assert_int_eq(param_values_set(&pv, kv, eq + 1, err), 0);
        }
        const int32_t n = pr ? (c->requests > 0 ? TS_MIN(pr->n, c->requests) : pr->n) : c->requests;
        int32_t plen[64];
        ck_assert(n <= 64);
        for (int32_t i = 0; i < n; i++)
            plen[i] = pr ? pr->len[i] : c->prompt_len;
        if (policy_drive_init(&runs[k].d, policy, &pv, n, plen, c->gen_len, c->block, false, err))
            return -1;
        c->policy = &runs[k].d;
    }
    if (gen_init(g, c, pr, err)) {
        policy_drive_free(&runs[k].d);
        return -1;
    }
    runs[k].g = g;
    return 0;
}

static void gen_stop(struct gen *g)
{
    for (size_t k = 0; k < TS_ARRAY_LEN(runs); k++)
        if (runs[k].g == g) {
            gen_free(g);
            policy_drive_free(&runs[k].d);
            runs[k].g = NULL;
            return;
        }
    ck_abort_msg("no generation under way");
}

/* The vicinity policy's window and refresh interval the generations run_gen checks were given. */
static int32_t vic_w = 8, vic_every = 3;

/* Runs g to the end with the reference deciding over confidences hashed from (request, position,
 * step); checks every step's shapes and rows against its policy's as written out here. Returns the
 * steps run. */
static int64_t run_gen(struct gen *g, const char *spec)
{
    const struct unmask_rule u = rule(spec);
    const int32_t n = g->c.requests, B = g->c.block;
    int32_t *groups = xmalloc(sizeof *groups * 2 * (size_t)n), ngroups;
    const size_t most = (size_t)n * (size_t)(g->r[0].P + g->c.gen_len + B); /* hashed prompts: one length */
    int32_t *masked = xmalloc(sizeof *masked * most), *commit = xmalloc(sizeof *commit * most);
    float *conf = xmalloc(sizeof *conf * (size_t)B);
    uint8_t *mk = xmalloc((size_t)B), *pick = xmalloc((size_t)B);
    struct step_desc sd;
    step_desc_init(&sd);
    struct ts_err err;
    int64_t steps = 0;
    while (gen_next_step(g, &sd, groups, &ngroups, masked)) {
        ck_assert_int_le(sd.tot.q_tokens, g->c.max_tokens);
        int32_t row = 0, grp = 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const struct segment *seg = &sd.segs[s];
            const struct gen_req *r = &g->r[seg->req_id];
            if (seg->phase == PHASE_PREFILL) {
                ck_assert(strcmp(g->c.policy->name, "block") == 0);
                ck_assert(!r->prefilled && seg->q == r->P && seg->kv_write == r->P && seg->logit_rows == 0);
                continue;
            }
            ck_assert(!r->done);
            const int32_t L = r->P + g->c.gen_len, start = r->P + r->block * B;
            const struct eng_tokens tk = gen_tokens(g);
            /* the policy's step, as its paper has it: vanilla the whole sequence; prefix, dual and vicinity
             * the whole sequence at a block's start (vicinity every vic_every-th step too); then prefix the
             * suffix from the block, dual the block, vicinity the block and vic_w each side (clipped); block
             * the block over the cached prefix, the finished block's commit fused into the next one's first */
            const char *pol = g->c.policy->name;
            const bool whole = strcmp(pol, "vanilla") == 0 ||
                               (strcmp(pol, "block") != 0 && (r->block_steps == 0 ||
                                                              (strcmp(pol, "vicinity") == 0 && r->block_steps % vic_every == 0)));
            int32_t lo = start, hi = start + B;
            if (whole)
                lo = 0, hi = L;
            else if (strcmp(pol, "prefix") == 0)
                hi = L;
            else if (strcmp(pol, "vicinity") == 0)
                lo = TS_MAX(0, start - vic_w), hi = TS_MIN(L, start + B + vic_w);
            else if (strcmp(pol, "block") == 0)
                lo = r->block > 0 && r->block_steps == 0 ? start - B : start;
            ck_assert_int_eq(seg->q, hi - lo);
            ck_assert_int_eq(seg->kv + seg->q, strcmp(pol, "block") == 0 ? start + B : L); /* its keys */
            ck_assert_int_eq(seg->logit_rows, strcmp(pol, "block") == 0 ? B : seg->q);
            ck_assert_int_eq(seg->phase, strcmp(pol, "vanilla") == 0 ? PHASE_FULL : whole ? PHASE_REFRESH
                                         : strcmp(pol, "block") == 0 ? PHASE_BLOCK : PHASE_REUSE);
            /* its rows at their positions: the window's outside the block ascending, then the block */
            for (int32_t k = 0, last = -1; k < seg->q; k++) {
                const int32_t at = tk.pos(g, seg->req_id, k);
                ck_assert(at >= lo && at < hi);
                if (k >= seg->q - B) {
                    ck_assert_int_eq(at, start + k - (seg->q - B));
                } else {
                    ck_assert(at > last && (at < start || at >= start + B));
                    last = at;
                }
            }
            const int32_t first = seg->logit_rows - B; /* the block's first logit row */
            ck_assert_int_eq(groups[2 * grp], row + first);
            ck_assert_int_eq(groups[2 * grp + 1], B);
            for (int32_t k = 0; k < first; k++) { /* outside the block: never masked, never committed */
                ck_assert_int_eq(masked[row + k], 0);
                commit[row + k] = -1;
            }
            for (int32_t k = 0; k < B; k++) {
                const uint64_t h = ts_mix64(((uint64_t)seg->req_id << 40) ^ ((uint64_t)(r->block * B + k) << 20) ^
                                            (uint64_t)steps);
                conf[k] = (float)(h % 1000) / 1000.0f;
                mk[k] = (uint8_t)masked[row + first + k];
                ck_assert_int_eq(masked[row + first + k], !r->decided[r->block * B + k]);
            }
            unmask_block(&u, conf, mk, B, pick);
            for (int32_t k = 0; k < B; k++)
                commit[row + first + k] = pick[k] ? (seg->req_id * 7 + k) % 90 : -1;
            row += seg->logit_rows;
            grp++;
        }
        ck_assert_int_eq(grp, ngroups);
        ck_assert_int_eq(row, sd.tot.logit_rows);
        ck_assert_msg(gen_apply(g, &sd, commit, NULL, &err) == 0, "%s", err.msg);
        steps++;
        ck_assert_int_lt(steps, 100000);
    }
    for (int32_t i = 0; i < n; i++) { /* every position decided, with the token committed there */
        const struct gen_req *r = &g->r[i];
        ck_assert(r->done);
        for (int32_t p = 0; p < g->c.gen_len; p++) {
            ck_assert(r->decided[p]);
            ck_assert_int_eq(r->ids[r->P + p], (i * 7 + p % B) % 90);
        }
        ck_assert_int_eq(r->decoded, g->c.gen_len);
    }
    step_desc_free(&sd);
    free(groups), free(masked), free(commit), free(conf), free(mk), free(pick);
    return steps;
}

START_TEST(generation_topk_exact)
{
    /* topk:1 takes exactly one step a position, topk:4 a quarter, plus the prefill */
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:1"), 1 + 64);
    ck_assert_double_eq(gen_tpf(&g), 1.0);
    ck_assert_int_eq(g.per_step[1], 3 * 64);
    ck_assert_int_eq(g.block_rows, 3 * (64 * 16 + 3 * 16)); /* every block's steps, the 3 commits' rows too */
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:4"), 1 + 16);
    ck_assert_double_eq(gen_tpf(&g), 4.0);
    gen_stop(&g);
}
END_TEST

/* Prophet's early commit, by hand: three requests of a 64-position response in blocks of 16, two
 * positions a step, every position's logits (vanilla), each row's argmax a token of its request and
 * position and each request's top-2 gaps one number: request 0's 0.1 never passes; request 1's 8
 * passes the early threshold 7.5 after its first step (2 of 64 decoded); request 2's 3 passes only
 * the late one, 2.5, after the step that leaves 44 of 64 decoded (the first share of 0.67 or more).
 * Each passing request gets every masked position's argmax and is finished. */
START_TEST(generation_prophet)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_prophet_parse("40", &c.prophet, &err), 0);
    ck_assert_int_eq(gen_start(&g, &c, "vanilla", NULL, NULL, &err), 0);
    const double gaps[3] = {0.1, 8, 3};
    const int32_t most = 3 * (20 + 64);
    int32_t groups[6], ng, masked[3 * 84], commit[3 * 84], tok[3 * 84];
    float gap[3 * 84];
    struct step_desc sd;
    step_desc_init(&sd);
    int exits_at[3] = {-1, -1, -1};
    for (int step = 0; gen_next_step(&g, &sd, groups, &ng, masked); step++) {
        ck_assert_int_le(sd.tot.logit_rows, most);
        const struct eng_tokens tk = gen_tokens(&g);
        int32_t row = 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const struct segment *seg = &sd.segs[s];
            const int32_t i = seg->req_id, P = g.r[i].P;
            ck_assert_int_eq(seg->logit_rows, seg->q);
            int32_t taken = 0;
            for (int32_t k = 0; k < seg->logit_rows; k++, row++) {
                const int32_t o = tk.pos(&g, i, k) - P;
                tok[row] = (i * 11 + (o < 0 ? 0 : o)) % 90;
                gap[row] = (float)gaps[i];
                const bool in_block = o >= g.r[i].block * 16 && o < g.r[i].block * 16 + 16;
                commit[row] = in_block && !g.r[i].decided[o] && taken < 2 ? (taken++, tok[row]) : -1;
            }
        }
        ck_assert_msg(gen_apply(&g, &sd, commit, NULL, &err) == 0, "%s", err.msg);
        const int n = gen_prophet_apply(&g, &sd, tok, gap, &err);
        ck_assert_msg(n >= 0, "%s", err.msg);
        for (int i = 0; i < 3; i++)
            if (exits_at[i] < 0 && g.r[i].done && g.r[i].decoded == 64 && g.prophet_exits > 0 && i > 0)
                exits_at[i] = step;
    }
    ck_assert_int_eq(exits_at[1], 0);
    ck_assert_int_eq(exits_at[2], 21); /* its 22nd step leaves 44 decoded */
    ck_assert(g.r[0].exit_steps == 0 && g.r[1].exit_steps == 1 && g.r[2].exit_steps == 22);
    ck_assert_int_eq(g.prophet_exits, 2);
    ck_assert_int_eq(g.prophet_filled, 62 + 20);
    ck_assert(fabs(g.prophet_share - (2.0 / 64 + 44.0 / 64)) < 1e-12);
    for (int i = 0; i < 3; i++) { /* every position the argmax of its request and position */
        ck_assert(g.r[i].done);
        for (int32_t o = 0; o < 64; o++)
            ck_assert_int_eq(g.r[i].ids[g.r[i].P + o], (i * 11 + o) % 90);
    }
    step_desc_free(&sd);
    gen_stop(&g);
    /* its specs, and a policy whose steps do not hold every position's logits */
    struct gen_prophet p;
    ck_assert_int_eq(gen_prophet_parse("7,1,0.5,0.25", &p, &err), 0);
    ck_assert(p.on && p.answer == 7 && p.len == 5 && p.early == 1 && p.mid == 0.5 && p.late == 0.25);
    const char *bad[] = {"", "-1", "1.5", "3,1", "3,1,2,3,4", "3,1,,2", "3,x,1,1", "3,"};
    for (size_t k = 0; k < TS_ARRAY_LEN(bad); k++) {
        ck_assert_msg(gen_prophet_parse(bad[k], &p, &err) != 0, "'%s' accepted", bad[k]);
        ck_assert_ptr_nonnull(strstr(err.msg, "--prophet"));
    }
    c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_prophet_parse("40", &c.prophet, &err), 0);
    ck_assert_int_ne(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "a policy whose steps run every position"));
    ck_assert_int_eq(gen_prophet_parse("64", &c.prophet, &err), 0);
    ck_assert_int_ne(gen_start(&g, &c, "vanilla", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the response"));
}
END_TEST

/* commit[*row..] for request i's `rows` logit rows (a prompt of 20 tokens, blocks of 16): token 5 at
 * the first two undecided positions of its block, -1 at the others; *row moves past them. */
static void commit_two(struct gen *g, const struct eng_tokens *tk, int32_t i, int32_t rows, int32_t *commit, int32_t *row)
{
    int32_t taken = 0;
    for (int32_t k = 0; k < rows; k++, (*row)++) {
        const int32_t o = tk->pos(g, i, k) - 20;
        const bool in_block = o >= g->r[i].block * 16 && o < g->r[i].block * 16 + 16;
        commit[*row] = in_block && !g->r[i].decided[o] && taken < 2 ? (taken++, 5) : -1;
    }
}

/* Elastic-Cache's drift test, by hand: two requests of a 64-position response after prompts of 20, in
 * blocks of 16, two positions a step, a window of 4 over 3 layers. Each step's entries hold every
 * position once (rowmap against the rows' positions), the first 4 masked positions as the window, the
 * tracked tokens the step before's layers named (none at the first), the prompt and the decided ones
 * eligible, and as queried the window, the tracked ones and the positions the step before decided (the
 * first step: all). The engine's answers are made up: every layer tracks a prompt position (the last
 * layer repeats the first's, or none on odd steps); request 0's layer 1 drifts below 0.9 on even steps
 * (a refresh from layer 2), its last layer on odd ones (no refresh: nothing after it); request 1 never. */
START_TEST(generation_elastic_drift)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(2, 20, 64, 16);
    ck_assert_int_eq(gen_elastic_parse("0.9,4", &c.elastic, &err), 0);
    c.elastic.layers = 3;
    ck_assert_int_eq(gen_start(&g, &c, "vanilla", NULL, NULL, &err), 0);
    int32_t groups[4], ng, masked[2 * 84], commit[2 * 84], sel[2 * K_DRIFT_MAX_ROWS], map[2 * 84], track[6];
    int32_t prev_track[2][3], nprev[2] = {0, 0};
    uint8_t flags[4 * 84], before[2][64] = {{0}}, seen[2][64] = {{0}};
    float sim[6];
    struct eng_drift_req q[2];
    struct step_desc sd;
    step_desc_init(&sd);
    int steps = 0, even = 0;
    for (; gen_next_step(&g, &sd, groups, &ng, masked); steps++) {
        const struct eng_tokens tk = gen_tokens(&g);
        for (int i = 0; i < 2; i++)
            memcpy(before[i], g.r[i].decided, 64);
        ck_assert_int_eq(gen_elastic_reqs(&g, &sd, q, sel, map, flags, &err), sd.num_segs);
        int32_t row = 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const int32_t i = q[s].req, N = 84;
            ck_assert(q[s].seg == s && q[s].N == N && i == sd.segs[s].req_id);
            for (int32_t k = 0; k < N; k++) /* the row of each position, as the step places them */
                ck_assert_int_eq(q[s].rowmap[tk.pos(&g, i, k)], k);
            int32_t w = 0;
            for (int32_t o = 0; o < 64 && w < 4; o++)
                if (!g.r[i].decided[o])
                    ck_assert_int_eq(q[s].sel[w++], 20 + o);
            ck_assert_int_eq(q[s].nwin, w);
            ck_assert_int_eq(q[s].ntrack, steps ? nprev[i] : 0);
            for (int32_t t = 0; t < q[s].ntrack; t++)
                ck_assert_int_eq(q[s].sel[w + t], prev_track[i][t]);
            for (int32_t p = 0; p < N; p++) {
                const bool decided = p < 20 || g.r[i].decided[p - 20];
                bool queried = steps == 0 || (p >= 20 && decided && !seen[i][p - 20]);
                for (int32_t k = 0; k < q[s].nwin + q[s].ntrack; k++)
                    queried |= q[s].sel[k] == p;
                ck_assert_int_eq(q[s].eligible[p], decided);
                ck_assert_int_eq(q[s].queried[p], queried);
            }
            memcpy(seen[i], before[i], 64);
            for (int l = 0; l < 3; l++) {
                track[s * 3 + l] = l == 2 ? (steps % 2 ? -1 : track[s * 3]) : (7 * l + steps + i) % 20;
                sim[s * 3 + l] = i == 0 && ((l == 1 && steps % 2 == 0) || (l == 2 && steps % 2)) ? 0.5f : 0.95f;
            }
            commit_two(&g, &tk, i, sd.segs[s].logit_rows, commit, &row);
        }
        ck_assert_msg(gen_apply(&g, &sd, commit, NULL, &err) == 0, "%s", err.msg);
        gen_elastic_apply(&g, q, sd.num_segs, track, sim);
        even += steps > 0 && steps % 2 == 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const int32_t i = q[s].req;
            nprev[i] = 0;
            for (int l = 0; l < 3; l++) {
                bool dup = track[s * 3 + l] < 0;
                for (int t = 0; t < nprev[i]; t++)
                    dup |= prev_track[i][t] == track[s * 3 + l];
                if (!dup)
                    prev_track[i][nprev[i]++] = track[s * 3 + l];
            }
        }
    }
    ck_assert_int_eq(steps, 32);
    ck_assert(g.r[0].ec_tested == 31 && g.r[1].ec_tested == 31 && g.ec_tested == 62);
    ck_assert_int_eq(g.r[0].ec_refreshes, even);
    ck_assert_int_eq(g.r[1].ec_refreshes, 0);
    ck_assert(g.ec_refreshes == even && g.ec_from[2] == even && g.ec_from[0] == 0 && g.ec_from[1] == 0);
    step_desc_free(&sd);
    gen_stop(&g);
    /* its specs, and a policy whose steps do not run every position */
    struct gen_elastic e;
    ck_assert_int_eq(gen_elastic_parse("0.75", &e, &err), 0);
    ck_assert(e.on && e.gamma == 0.75 && e.window == 16);
    const char *bad[] = {"", "1.5", "-0.1", "0.9,0", "0.9,33", "0.9,2.5", "x", "0.9,4,1", "0.9,"};
    for (size_t k = 0; k < TS_ARRAY_LEN(bad); k++) {
        ck_assert_msg(gen_elastic_parse(bad[k], &e, &err) != 0, "'%s' accepted", bad[k]);
        ck_assert_ptr_nonnull(strstr(err.msg, "--elastic-drift"));
    }
    c = cfg(2, 20, 64, 16);
    ck_assert_int_eq(gen_elastic_parse("0.9", &c.elastic, &err), 0);
    c.elastic.layers = 3;
    ck_assert_int_ne(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "a policy whose steps run every position"));
}
END_TEST

/* d2Cache's rollout on the host: its nucleus by hand (nucleus_select: the fewest of the most important
 * eligible positions whose shares sum to at most p, one at least), and a vanilla generation's entries
 * (each request's rows, decided before the step) and counts from made-up importances and confidences:
 * position 0's importance 100, every other's 1; a row's confidence its position, so that the K = 4
 * masked positions left of the highest confidence are the 4 last. The others: the positions decided
 * before the step and the masked ones past those 4. */
START_TEST(generation_d2_rollout)
{
    const float sc[6] = {4, 1, 2, 2, 8, 3};
    const uint8_t all[6] = {1, 1, 1, 1, 1, 1}, some[6] = {1, 1, 0, 1, 0, 1}, none[6] = {0};
    int32_t order[6];
    /* shares of 20: 8 0.4, 4 0.2, 3 0.15, 2 0.1, 2 0.1, 1 0.05 */
    ck_assert_int_eq(gen_rollout_nucleus(sc, all, 6, 0.6, order), 2);
    ck_assert_int_eq(gen_rollout_nucleus(sc, all, 6, 0.75, order), 3);
    ck_assert_int_eq(gen_rollout_nucleus(sc, all, 6, 0.1, order), 1); /* one at least */
    ck_assert_int_eq(gen_rollout_nucleus(sc, all, 6, 1, order), 6);
    /* among positions 0, 1, 3, 5 (4, 1, 2, 3 of 10): 0.4, 0.3, 0.2, 0.1 */
    ck_assert_int_eq(gen_rollout_nucleus(sc, some, 6, 0.7, order), 2);
    ck_assert_int_eq(gen_rollout_nucleus(sc, some, 6, 0.69, order), 1);
    ck_assert_int_eq(gen_rollout_nucleus(sc, none, 6, 0.5, order), 0);
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(2, 20, 64, 16);
    ck_assert_int_eq(gen_rollout_parse("0.5,4", &c.rollout, &err), 0);
    ck_assert_int_eq(gen_start(&g, &c, "vanilla", NULL, NULL, &err), 0);
    enum { N = 84 };
    int32_t groups[4], ng, masked[2 * N], commit[2 * N], ord[N];
    uint8_t before[2 * N];
    float imp[2 * N], conf[2 * N];
    struct eng_rollout_req q[2];
    struct step_desc sd;
    step_desc_init(&sd);
    int steps = 0;
    int64_t want_eligible = 0;
    for (; gen_next_step(&g, &sd, groups, &ng, masked); steps++) {
        const struct eng_tokens tk = gen_tokens(&g);
        ck_assert_int_eq(gen_rollout_reqs(&g, &sd, q, before, N, &err), sd.num_segs);
        int32_t row = 0;
        int64_t decided_before = 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const int32_t i = sd.segs[s].req_id;
            ck_assert(q[s].seg == s && q[s].N == N);
            for (int32_t k = 0; k < N; k++) {
                const int32_t p = tk.pos(&g, i, k);
                ck_assert_int_eq(before[s * N + k], p < 20 || g.r[i].decided[p - 20]);
                decided_before += before[s * N + k];
                imp[s * N + k] = p == 0 ? 100.f : 1.f;
                conf[s * N + k] = (float)p;
            }
            commit_two(&g, &tk, i, sd.segs[s].logit_rows, commit, &row);
        }
        ck_assert_msg(gen_apply(&g, &sd, commit, NULL, &err) == 0, "%s", err.msg);
        want_eligible += decided_before;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            int32_t left = 0;
            for (int32_t o = 0; o < 64; o++)
                left += !g.r[sd.segs[s].req_id].decided[o];
            want_eligible += TS_MAX(left - 4, 0);
        }
        gen_rollout_apply(&g, &sd, q, sd.num_segs, imp, conf, before, N, ord);
        for (int32_t s = 0; s < sd.num_segs; s++) /* the 4 most certain masked ones are not among the others */
            for (int32_t k = 0; k < N; k++) {
                const int32_t i = sd.segs[s].req_id, p = tk.pos(&g, i, k);
                if (p >= 20 && !g.r[i].decided[p - 20]) {
                    int32_t above = 0;
                    for (int32_t o = p - 20 + 1; o < 64; o++)
                        above += !g.r[i].decided[o];
                    ck_assert_int_eq(before[s * N + k], above >= 4);
                }
            }
    }
    /* every step of both requests measured, each nucleus position 0 alone (100 of at most 183: more than half) */
    ck_assert_int_eq(steps, 32);
    ck_assert(g.d2_steps == 64 && g.r[0].d2_steps == 32 && g.d2_nucleus == 64);
    ck_assert_int_eq(g.d2_eligible, want_eligible);
    ck_assert_int_eq(g.r[0].d2_eligible + g.r[1].d2_eligible, want_eligible);
    step_desc_free(&sd);
    gen_stop(&g);
    /* its specs, and a policy whose steps do not run every position */
    struct gen_rollout ro;
    ck_assert(gen_rollout_parse("0.25", &ro, &err) == 0 && ro.on && ro.p == 0.25 && ro.k == 32);
    ck_assert(gen_rollout_parse("0.1,8", &ro, &err) == 0 && ro.k == 8);
    const char *bad[] = {"", "1.5", "-0.1", "x", "0.1,2.5", "0.1,-1", "0.1,2,3"};
    for (size_t k = 0; k < TS_ARRAY_LEN(bad); k++) {
        ck_assert_msg(gen_rollout_parse(bad[k], &ro, &err) != 0, "'%s' accepted", bad[k]);
        ck_assert_ptr_nonnull(strstr(err.msg, "--d2-rollout"));
    }
    c = cfg(2, 20, 64, 16);
    ck_assert_int_eq(gen_rollout_parse("0.1", &c.rollout, &err), 0);
    ck_assert_int_ne(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--d2-rollout"));
}
END_TEST

START_TEST(generation_threshold)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(5, 7, 96, 32);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    const int64_t steps = run_gen(&g, "threshold:0.7");
    /* each block step commits about 30% of its masked rows, at least one */
    ck_assert(gen_tpf(&g) > 1.5 && gen_tpf(&g) < 32);
    ck_assert_int_eq(g.decoded, 5 * 96);
    ck_assert(steps < 1 + 96 && steps > 1 + 3);
    int64_t segs = 0;
    for (int k = 0; k <= 32; k++)
        segs += g.per_step[k];
    ck_assert_int_eq(segs, g.block_segs);
    ck_assert_int_eq(g.per_step[0], 0);
    gen_stop(&g);
    /* hierarchical at the same tau commits at least as much a step as threshold */
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    run_gen(&g, "hierarchical:0.7,0.1");
    ck_assert(g.decoded == 5 * 96);
    gen_stop(&g);
}
END_TEST

/* Runs `steps` steps of g (3 requests, prompts of 20 tokens, 64 to generate), each planned with g's
 * tokens: every segment's keys the whole sequence, its rows[step] rows at positions at(step, i), their
 * slots and ids the request's; each step commits one position a block (token 50 + step). */
static void placed_steps(struct gen *g, int steps, int32_t (*rows)(int), int32_t (*at)(int, int32_t))
{
    struct ts_err err;
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[6], masked[3 * 84], commit[3 * 84], ng;
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    const struct eng_tokens tk = gen_tokens(g);
    for (int step = 0; step < steps; step++) {
        ck_assert(gen_next_step(g, &sd, groups, &ng, masked));
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
        ck_assert_int_eq(eng_plan_set_ids(&p, &kv, &sd, &tk, &err), 0);
        for (int32_t s = 0; s < p.S; s++) {
            const int32_t req = sd.segs[s].req_id;
            ck_assert_int_eq(p.key_len[s], 84);
            ck_assert_int_eq(p.q_len[s], rows(step));
            for (int32_t i = 0; i < p.q_len[s]; i++) {
                const int32_t row = p.q_start[s] + i, pos = at(step, i);
                ck_assert_int_eq(p.tok_pos[row], pos);
                ck_assert_int_eq(p.tok_slot[row], eng_kv_slot(&kv, req, pos));
                ck_assert_int_eq(p.tok_ids[row], gen_token(g, req, pos));
            }
        }
        for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
            commit[r] = -1;
        for (int32_t k = 0; k < ng; k++) /* one position a step */
            commit[groups[2 * k] + step] = 50 + step;
        ck_assert_int_eq(gen_apply(g, &sd, commit, NULL, &err), 0);
    }
    eng_plan_free(&p);
    eng_kv_free(&kv);
    step_desc_free(&sd);
}

/* The dual cache's rows: the whole sequence (the block, positions 20..35, last), then the block. */
static int32_t dual_rows(int step) { return step == 0 ? 84 : 16; }
static int32_t dual_at(int step, int32_t i) { return step > 0 ? 20 + i : i < 20 ? i : i < 68 ? i + 16 : i - 48; }
/* The vicinity cache's (window 8): the whole sequence, then 12..19 (the prompt), 36..43, the block. */
static int32_t vicinity_rows(int step) { return step == 0 ? 84 : 8 + 16 + 8; }
static int32_t vicinity_at(int step, int32_t i) { return step == 0 ? dual_at(0, i) : i < 8 ? 12 + i : i < 16 ? 36 + i - 8 : 20 + i - 16; }

/* The dual cache: each block's first step the whole sequence, the others the block at its positions;
 * the plan puts those rows there, their slots the request's, its keys every position. */
START_TEST(generation_dual)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:4"), 4 * 4); /* 4 blocks of 4 steps, no prefill */
    ck_assert_int_eq(g.block_rows, 3 * 4 * (84 + 3 * 16));
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    run_gen(&g, "threshold:0.6");
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    placed_steps(&g, 3, dual_rows, dual_at);
    ck_assert_int_eq(gen_token(&g, 2, 20 + 1), 51);
    gen_stop(&g);
    /* a commit past the block is refused (a whole-sequence step's logit rows run on past it) */
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[6], masked[3 * 84], commit[3 * 84], ng;
    ck_assert_int_eq(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    ck_assert_int_eq(sd.segs[0].logit_rows, 84);
    for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
        commit[r] = r == 20 ? 3 : -1; /* position 36 */
    ck_assert_int_ne(gen_apply(&g, &sd, commit, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside its block"));
    gen_stop(&g);
    c.attn_block = 16;
    ck_assert_int_ne(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "block-causal"));
    step_desc_free(&sd);
}
END_TEST

/* The simulator's policies as generations: each the drive can place runs with its own steps
 * (run_gen's oracle); the others are refused, naming why. */
START_TEST(generation_policies)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_start(&g, &c, "vanilla", NULL, NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:4"), 4 * 4);
    ck_assert_int_eq(g.block_rows, 3 * 16 * 84); /* the whole sequence every step */
    ck_assert_int_eq(c.policy->ext.sparsed_block, 0); /* (a policy that sets nothing in the engine) */
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "prefix", NULL, NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:4"), 4 * 4);
    /* block b: the whole sequence, then three steps of the suffix from it, 64 - 16 b rows */
    ck_assert_int_eq(g.block_rows, 3 * (4 * 84 + 3 * (64 + 48 + 32 + 16)));
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "prefix", NULL, NULL, &err), 0);
    run_gen(&g, "threshold:0.6");
    gen_stop(&g);
    /* SparseD: vanilla's steps, the first dense; what the driven policy's parameters set in the engine
     * arrives typed, the given one and the default */
    ck_assert_int_eq(gen_start(&g, &c, "sparsed", "sparsed-block=64", NULL, &err), 0);
    ck_assert_int_eq(c.policy->ext.sparsed_block, 64);
    ck_assert_double_eq_tol(c.policy->ext.sparsed_select, 0.3, 1e-12);
    {
        struct step_desc sd;
        step_desc_init(&sd);
        int32_t groups[6], masked[3 * 84], ng;
        ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
        ck_assert_int_eq(sd.segs[0].phase, PHASE_FULL);
        ck_assert_int_eq(sd.segs[0].attn_keys, 0);
        step_desc_free(&sd);
    }
    gen_stop(&g);
    /* --block-logits: a whole-sequence step's logits the block's rows alone, which end the segment */
    struct policy_drive d;
    const int32_t plen[3] = {20, 20, 20};
    ck_assert_int_eq(policy_drive_init(&d, "dual", NULL, 3, plen, 64, 16, true, &err), 0);
    c.policy = &d;
    ck_assert_int_eq(gen_init(&g, &c, NULL, &err), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[6], masked[3 * 84], ng;
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    ck_assert_int_eq(sd.segs[0].phase, PHASE_REFRESH);
    ck_assert_int_eq(sd.segs[0].q, 84);
    ck_assert_int_eq(sd.segs[0].logit_rows, 16);
    ck_assert_int_eq(groups[0], 0);
    ck_assert_int_eq(gen_tokens(&g).pos(&g, 0, 84 - 16), 20); /* the block's first row */
    step_desc_free(&sd);
    gen_free(&g);
    policy_drive_free(&d);
    static const struct {
        const char *policy, *params, *says;
    } bad[] = {{"sparse", NULL, "selects a sparse cache"},
               {"focus", NULL, "decides what a step decodes"},
               {"block+delayed", NULL, "counts the block's cached positions"},
               {"dllm-cache", NULL, "knobs of their own"},
               {"dual", "vicinity=4", "policy dual has no parameter --vicinity"},
               {"blok", NULL, "blok"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_int_ne(gen_start(&g, &c, bad[i].policy, bad[i].params, NULL, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s: %s", bad[i].policy, err.msg);
    }
}
END_TEST

/* IterSmooth: its option, its schedule, and over a dual-cache generation the soft rows each logit
 * row keeps, the weights the next step's embedded rows add them by, the blocks' thresholds. */
START_TEST(generation_smooth)
{
    struct ts_err err;
    struct gen_smooth sm;
    ck_assert_int_eq(gen_smooth_parse(NULL, &sm, &err), 0);
    ck_assert(sm.on && sm.cont == 0.3 && sm.init == 0.15 && sm.growth == 0.02 && sm.decay == 0.02);
    ck_assert_int_eq(gen_smooth_parse("0.5", &sm, &err), 0);
    ck_assert(sm.cont == 0.5 && sm.init == 0.15 && sm.decay == 0.02);
    ck_assert_int_eq(gen_smooth_parse("0.5,0.1,0.05,0.1", &sm, &err), 0);
    ck_assert(sm.cont == 0.5 && sm.init == 0.1 && sm.growth == 0.05 && sm.decay == 0.1);
    static const char *const bad[] = {"a", "0.5,", ",1", "1,2,3,4,5", "-1", "0.3,nan", "1e9"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_msg(gen_smooth_parse(bad[i], &sm, &err) != 0, "%s accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(err.msg, "--iter-smooth"));
    }
    sm = GEN_SMOOTH_DEFAULTS;
    ck_assert_double_eq_tol(gen_smooth_weight(&sm, 0), 0.15, 1e-12);
    ck_assert_double_eq_tol(gen_smooth_weight(&sm, 5), 0.25, 1e-12);
    ck_assert_double_eq_tol(gen_smooth_weight(&sm, 100), 0.3, 1e-12);
    ck_assert_float_eq_tol(gen_smooth_tau(&sm, 0, 0.9f), 1.0f, 1e-6f);
    ck_assert_float_eq_tol(gen_smooth_tau(&sm, 3, 0.9f), 0.94f, 1e-6f);
    ck_assert_float_eq_tol(gen_smooth_tau(&sm, 10, 0.9f), 0.9f, 1e-6f);

    struct gen g;
    struct gen_cfg c = cfg(2, 20, 64, 16);
    c.focus = true, c.focus_alpha = 1.5, c.smooth = sm;
    ck_assert_int_ne(gen_start(&g, &c, NULL, NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "IterSmooth"));
    c.focus = false;
    c.smooth.growth = -1;
    ck_assert_int_ne(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    c.smooth = sm;
    ck_assert_int_eq(gen_start(&g, &c, "dual", NULL, NULL, &err), 0);
    ck_assert_int_eq(gen_soft_rows(&g), 2 * 64);
    const struct eng_tokens tk = gen_tokens(&g);
    ck_assert_ptr_nonnull(tk.soft);
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[4], masked[2 * 84], commit[2 * 84], slot[2 * 84], ng;
    float taus[2], w = 1;
    for (int step = 0; step < 2; step++) {
        ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
        ck_assert(sd.iter_smooth);
        gen_smooth_rows(&g, &sd, slot);
        gen_smooth_taus(&g, &sd, 0.9f, taus);
        for (int32_t i = 0; i < 2; i++) {
            ck_assert_float_eq_tol(taus[i], step == 0 ? 1.0f : 0.98f, 1e-6f);
            ck_assert_int_eq(slot[groups[2 * i] + 3], i * 64 + 3); /* the block's row 3 */
        }
        if (step == 0) { /* the whole sequence: every row a logit row, each response position its own soft row */
            ck_assert_int_eq(slot[84 + 20 + 4], 64 + 20); /* request 1's row 24: position 40 */
            ck_assert_int_eq(slot[84 + 3], -1);           /* a prompt position's */
        }
        for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
            commit[r] = r == groups[0] + step || r == groups[2] + step ? 7 : -1; /* one position a block */
        gen_smooth_keep(&g, &sd, commit);
        ck_assert_int_eq(gen_apply(&g, &sd, commit, NULL, &err), 0);
        /* a committed position adds nothing; a masked one its soft row, by the step's weight */
        ck_assert_int_eq(tk.soft(tk.ctx, 1, 20 + step, &w), -1);
        ck_assert_float_eq(g.r[1].soft_w[step], 0.0f); /* (its weight dropped too) */
        ck_assert_int_eq(tk.soft(tk.ctx, 1, 20 + 5, &w), 64 + 5);
        ck_assert_float_eq_tol(w, step == 0 ? 0.15f : 0.17f, 1e-6f);
        ck_assert_int_eq(tk.soft(tk.ctx, 0, 20 + 40, &w), 40); /* past the block: the first step's */
        ck_assert_float_eq_tol(w, 0.15f, 1e-6f);
        ck_assert_int_eq(tk.soft(tk.ctx, 0, 3, &w), -1); /* the prompt */
        ck_assert_int_eq(tk.soft(tk.ctx, 5, 25, &w), -1);
    }
    gen_stop(&g);
    /* the block policy: its rows the block's */
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked)); /* the prefill */
    ck_assert_int_eq(ng, 0);
    gen_smooth_rows(&g, &sd, slot);
    ck_assert_int_eq(gen_apply(&g, &sd, commit, NULL, &err), 0);
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    gen_smooth_rows(&g, &sd, slot);
    ck_assert_int_eq(sd.tot.logit_rows, 2 * 16);
    ck_assert_int_eq(slot[16 + 2], 64 + 2);
    gen_stop(&g);
    c.smooth = (struct gen_smooth){0};
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_ptr_null(gen_tokens(&g).soft);
    ck_assert_int_eq(gen_soft_rows(&g), 0);
    gen_stop(&g);
    step_desc_free(&sd);
}
END_TEST

/* dInfer's vicinity cache: the dual cache's whole sequence at a block's start and every refresh-th
 * step, the others the block and a window each side (clipped), placed where they sit by the plan,
 * each position once, their slots the request's; the block's rows last, its logit rows. */
START_TEST(generation_vicinity)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    ck_assert_int_eq(gen_start(&g, &c, "vicinity", "vicinity=8,refresh-interval=3", NULL, &err), 0);
    ck_assert_int_eq(run_gen(&g, "topk:2"), 4 * 8); /* 4 blocks of 8 steps, no prefill */
    /* refreshes at steps 0, 3 and 6 of a block (84 rows), windows elsewhere: 8 + 16 + 8, the last block's
     * 8 + 16 (the sequence ends) */
    ck_assert_int_eq(g.block_rows, 3 * (4 * 3 * 84 + 5 * (24 + 32 + 32 + 32)));
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "vicinity", "vicinity=8,refresh-interval=3", NULL, &err), 0);
    run_gen(&g, "threshold:0.6");
    gen_stop(&g);
    /* no window: the dual cache's steps */
    ck_assert_int_eq(gen_start(&g, &c, "vicinity", "vicinity=0,refresh-interval=1000", NULL, &err), 0);
    vic_w = 0, vic_every = 1000;
    ck_assert_int_eq(run_gen(&g, "topk:4"), 4 * 4);
    vic_w = 8, vic_every = 3;
    ck_assert_int_eq(g.block_rows, 3 * 4 * (84 + 3 * 16));
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "vicinity", "vicinity=8,refresh-interval=3", NULL, &err), 0);
    placed_steps(&g, 2, vicinity_rows, vicinity_at);
    ck_assert_int_eq(gen_token(&g, 1, 20 + 1), 51);
    gen_stop(&g);
    c.attn_block = 16;
    ck_assert_int_ne(gen_start(&g, &c, "vicinity", "vicinity=8,refresh-interval=3", NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "policy vicinity runs whole-sequence steps"));
    c.attn_block = 0;
    ck_assert_int_ne(gen_start(&g, &c, "vicinity", "vicinity=8,refresh-interval=0", NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--refresh-interval"));
}
END_TEST

/* FOCUS: each block step's front rows its uncached positions (decided first, then the masked
 * candidates, ascending), K of the candidates kept (here the leftmost, as placeholder integrity
 * allows), their logits alone deciding; the delayed cache and a finished block's rest; the plan
 * places the rows where they sit. */
START_TEST(generation_focus)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(3, 20, 64, 16);
    c.focus = true, c.focus_alpha = 1.5, c.attn_block = 16;
    ck_assert_int_eq(gen_start(&g, &c, NULL, NULL, NULL, &err), 0);
    const struct eng_tokens tk = gen_tokens(&g);
    struct step_desc sd;
    step_desc_init(&sd);
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 256);
    struct eng_plan p;
    eng_plan_init(&p);
    int32_t groups[6], masked[48], commit[48], cand[48], picks[3 * 16], ng, rests = 0, steps = 0;
    while (gen_next_step(&g, &sd, groups, &ng, masked)) {
        ck_assert(sd.evict && sd.front_layers == 2);
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
        ck_assert_msg(eng_plan_set_ids(&p, &kv, &sd, &tk, &err) == 0, "%s", err.msg);
        int32_t row = 0, n = 0;
        for (int32_t s = 0; s < sd.num_segs; s++) {
            const struct segment *seg = &sd.segs[s];
            const struct gen_req *r = &g.r[seg->req_id];
            const int32_t end = r->P + (r->block + 1) * 16;
            if (r->last == GEN_SEG_REST) { /* the previous block's uncached rest, over its keys */
                rests++;
                ck_assert(seg->q == r->nrest && seg->q_front == 0 && seg->kv + seg->q == end - 16);
                for (int32_t i = 0; i < seg->q; i++)
                    ck_assert_int_eq(p.tok_pos[p.q_start[s] + i], r->P + r->rest[i]);
                continue;
            }
            if (r->last != GEN_SEG_BLOCK)
                continue;
            ck_assert_int_eq(seg->q_front, r->nfixed + r->ncand);
            ck_assert_int_eq(seg->kv_front + seg->q_front, end);
            ck_assert(seg->probe == r->ncand && seg->picked == r->picked && seg->q == r->nfixed + r->picked);
            ck_assert_int_eq(seg->picked, TS_MIN(r->ncand, (int32_t)ceil(1.5 * fmax(1.0, r->steps ? (double)r->decoded / r->steps : 1))));
            const struct eng_plan *fp = p.front;
            for (int32_t i = 0; i < seg->q_front; i++) { /* the front rows where they sit */
                const int32_t at = fp->tok_pos[fp->q_start[s] + i], k = at - r->P - r->block * 16;
                ck_assert(k >= 0 && k < 16 && !r->cached[r->block * 16 + k]);
                ck_assert_int_eq(r->decided[r->block * 16 + k], i < r->nfixed); /* decided, then masked */
                ck_assert_int_eq(fp->tok_slot[fp->q_start[s] + i], eng_kv_slot(&kv, seg->req_id, at));
                ck_assert_int_eq(fp->tok_ids[fp->q_start[s] + i], gen_token(&g, seg->req_id, at));
            }
            for (int32_t i = 0; i < r->nfixed; i++) /* the later layers' fixed rows at the same positions */
                ck_assert_int_eq(p.tok_pos[p.q_start[s] + i], fp->tok_pos[fp->q_start[s] + i]);
            for (int32_t k = 0; k < seg->picked; k++) { /* kept: the leftmost candidates; decided: some */
                picks[n * 16 + k] = k;
                const uint64_t h = ts_mix64(((uint64_t)seg->req_id << 32) ^ (uint64_t)(steps * 64 + k));
                commit[row + k] = k == 0 || h % 3 == 0 ? 7 + k : -1;
            }
            ck_assert_int_eq(groups[2 * n], row);
            row += seg->logit_rows;
            n++;
        }
        ck_assert_int_eq(n, ng);
        gen_focus_cands(&sd, picks, 16, cand);
        ck_assert_msg(gen_apply(&g, &sd, commit, cand, &err) == 0, "%s", err.msg);
        for (int32_t i = 0; i < 3; i++) /* the delayed cache: a cached position's right neighbour is decided */
            for (int32_t k = 0; k + 1 < 64; k++)
                if (g.r[i].cached[k] && (k + 1) % 16)
                    ck_assert(g.r[i].decided[k + 1]);
        ck_assert_int_lt(++steps, 1000);
    }
    ck_assert_int_gt(rests, 0);
    for (int32_t i = 0; i < 3; i++) {
        ck_assert(g.r[i].done);
        for (int32_t k = 0; k < 64; k++)
            ck_assert(g.r[i].decided[k]);
    }
    ck_assert_int_eq(g.decoded, 3 * 64);
    ck_assert(g.front_rows > g.block_rows && g.block_rows >= g.decoded);
    /* a logit row without a candidate is refused; so is FOCUS over the dual cache */
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, NULL, NULL, NULL, &err), 0);
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked)); /* the prefills */
    ck_assert_int_eq(gen_apply(&g, &sd, commit, cand, &err), 0);
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
        cand[r] = 99, commit[r] = -1;
    ck_assert_int_ne(gen_apply(&g, &sd, commit, cand, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "holds no candidate"));
    gen_stop(&g);
    c.block = 256, c.gen_len = 256, c.max_tokens = 1024; /* past the importance kernel's candidates */
    ck_assert_int_ne(gen_start(&g, &c, NULL, NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "FOCUS evicts over the prefix cache"));
    eng_plan_free(&p);
    eng_kv_free(&kv);
    step_desc_free(&sd);
}
END_TEST

/* Rows placed at fixed positions (the oracle's plain step). */
static int32_t fixed_pos(void *ctx, int32_t req, int32_t row)
{
    (void)req;
    const int32_t *pos = ctx;
    return pos[row];
}

static int32_t hashed_id(void *ctx, int32_t req, int32_t pos)
{
    (void)ctx;
    return (int32_t)(ts_mix64(((uint64_t)req << 32) ^ (uint64_t)pos) % 97);
}

/* The CPU reference's evicting step with a block's rows scattered (decided and masked positions
 * interleaved, each where it sits): keeping every candidate it computes what a plain step over the
 * same rows at the same positions computes (the oracle of the GPU's FOCUS generation check). */
START_TEST(reference_scattered_eviction)
{
    static const struct model_cfg m = {.name = "tiny4", .num_layers = 4, .hidden = 64, .num_heads = 4,
                                       .num_kv_heads = 2, .head_dim = 64, .ffn = 128, .vocab = 97, .max_pos = 4096,
                                       .rope_theta = 10000.0, .weight_bytes = 2, .kv_bytes = 2};
    enum { P = 24, B = 16, FIXED = 5, CAND = B - FIXED };
    int32_t pos[B], k = 0;
    for (int32_t i = 0; i < B; i++) /* block offsets 1, 4, 7, 10, 13 decided: the front rows, then the rest */
        if (i % 3 == 1)
            pos[k++] = P + i;
    for (int32_t i = 0; i < B; i++)
        if (i % 3 != 1)
            pos[k++] = P + i;
    float *hidden[2];
    for (int variant = 0; variant < 2; variant++) { /* 0: evicting, every candidate kept; 1: plain */
        struct eng_ref *r;
        struct ts_err err;
        ck_assert_int_eq(eng_ref_create(&m, NULL, 5, &r, &err), 0);
        struct eng_kv kv;
        eng_kv_init(&kv, 16, 64);
        struct eng_plan p;
        eng_plan_init(&p);
        struct step_desc sd;
        step_desc_init(&sd);
        const struct eng_tokens none = {.id = hashed_id}, placed = {.id = hashed_id, .pos = fixed_pos, .ctx = pos};
        struct segment pre = {.req_id = 0, .phase = PHASE_PREFILL, .q = P, .kv_write = P};
        step_desc_add(&sd, &pre);
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 97, 1, &err), 0);
        ck_assert_int_eq(eng_plan_set_ids(&p, &kv, &sd, &none, &err), 0);
        int32_t tok[B];
        float mx[B], cf[B];
        eng_ref_step(r, &sd, &p, 0, NULL, tok, mx, cf);
        step_desc_clear(&sd);
        struct segment g = {.req_id = 0, .phase = PHASE_BLOCK, .q = B, .kv = P, .kv_write = B, .logit_rows = CAND};
        if (variant == 0) {
            sd.evict = true, sd.front_layers = 2;
            g.q_front = g.kv_write_front = B, g.kv_front = P, g.probe = g.picked = CAND;
        }
        step_desc_add(&sd, &g);
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 97, 1, &err), 0);
        ck_assert_msg(eng_plan_set_ids(&p, &kv, &sd, &placed, &err) == 0, "%s", err.msg);
        hidden[variant] = xmalloc(sizeof(float) * CAND * 64);
        eng_ref_step(r, &sd, &p, 0, hidden[variant], tok, mx, cf);
        step_desc_free(&sd);
        eng_plan_free(&p);
        eng_kv_free(&kv);
        eng_ref_destroy(r);
    }
    double worst = 0;
    for (int i = 0; i < CAND * 64; i++)
        worst = fmax(worst, fabs(hidden[0][i] - hidden[1][i]));
    ck_assert_msg(worst < 1e-5, "evicting and plain steps differ by %g", worst);
    free(hidden[0]), free(hidden[1]);
}
END_TEST

/* A step's rows cap: prefills wait for room, never a step over it. */
START_TEST(generation_room)
{
    struct gen g;
    struct ts_err err;
    struct gen_cfg c = cfg(6, 100, 32, 32);
    c.max_tokens = 250;
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[12], masked[6 * 32], ng;
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    ck_assert_int_eq(sd.num_segs, 2); /* two prompts of 100 fit in 250 */
    step_desc_free(&sd);
    gen_stop(&g);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    run_gen(&g, "threshold:0.5");
    gen_stop(&g);
    c.max_tokens = 63; /* 2 B does not fit */
    ck_assert_int_ne(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than the engine's 63"));
    c = cfg(1, 10, 48, 32);
    ck_assert_int_ne(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "multiple of --block 32"));
    c = cfg(1, 10, 64, 32);
    c.max_pos = 70;
    ck_assert_int_ne(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "context of 70"));
    c = cfg(1, 10, 64, 32);
    c.mask_id = 100;
    ck_assert_int_ne(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--mask-id 100"));
}
END_TEST

/* Token ids reach the engine's plan: prompts as given, the response the mask or its commits. */
START_TEST(generation_ids_in_plan)
{
    struct gen g;
    struct ts_err err;
    const char *path = tmp_file(0, ".jsonl", "[5, 6, 7]\n\n[1, 2, 3, 4, 8]\n");
    struct gen_prompts pr;
    ck_assert_int_eq(gen_prompts_load(path, 100, 0, &pr, &err), 0);
    ck_assert_int_eq(pr.n, 2);
    struct gen_cfg c = cfg(0, 0, 32, 16);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, &pr, &err), 0);
    gen_prompts_free(&pr);
    ck_assert_int_eq(g.c.requests, 2);
    ck_assert_int_eq(gen_token(&g, 1, 4), 8);
    ck_assert_int_eq(gen_token(&g, 1, 5), 99);
    ck_assert_int_eq(gen_token(&g, 1, 5 + 32), -1);
    ck_assert_int_eq(gen_token(&g, 2, 0), -1);
    struct step_desc sd;
    step_desc_init(&sd);
    int32_t groups[4], masked[64], ng, commit[64];
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    for (int step = 0; step < 3; step++) {
        ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, 100, 1, &err), 0);
        const struct eng_tokens tk = gen_tokens(&g);
        ck_assert_int_eq(eng_plan_set_ids(&p, &kv, &sd, &tk, &err), 0);
        for (int32_t s = 0; s < p.S; s++)
            for (int32_t i = 0; i < p.q_len[s]; i++) {
                const int32_t row = p.q_start[s] + i;
                ck_assert_int_eq(p.tok_ids[row], gen_token(&g, sd.segs[s].req_id, p.tok_pos[row]));
            }
        int32_t state[64], flags[64];
        gen_credit_rows(&g, &sd, state, flags); /* credit decoding's rows: a position each, its flags */
        for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++) {
            ck_assert_int_eq(state[r], (r / 16) * 16 + r % 16);
            ck_assert_int_eq(flags[r], (masked[r] ? CREDIT_MASKED : 0) | (step == 1 ? CREDIT_CLEAR : CREDIT_DECAY));
        }
        for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++) /* odd rows, then the rest */
            commit[r] = masked[r] && (r % 2 || step == 2) ? 40 + r : -1;
        ck_assert_int_eq(gen_apply(&g, &sd, commit, NULL, &err), 0);
    }
    ck_assert_int_eq(gen_token(&g, 0, 3 + 1), 41); /* step 1 committed rows 1, 3, ... of block 0 */
    ck_assert_int_eq(gen_token(&g, 0, 3 + 0), 40); /* step 2 the others */
    ck_assert_int_eq(gen_token(&g, 1, 5 + 1), 40 + 17);
    /* a commit at a decided position is refused */
    ck_assert(gen_next_step(&g, &sd, groups, &ng, masked));
    ck_assert_int_eq(sd.segs[0].q, 32);
    for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
        commit[r] = r == 0 ? 1 : -1;
    ck_assert_int_eq(gen_apply(&g, &sd, commit, NULL, &err), 0);
    ck_assert_int_ne(gen_apply(&g, &sd, commit, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "committed twice"));
    eng_plan_free(&p);
    eng_kv_free(&kv);
    step_desc_free(&sd);
    gen_stop(&g);
}
END_TEST

START_TEST(prompt_file_errors)
{
    struct gen_prompts pr;
    struct ts_err err;
    const struct {
        const char *text, *says;
    } bad[] = {{"[1, 2]\n[1, 200]\n", ":2: token 1 must be an integer id in 0..99"},
               {"[1, 2]\n{\"ids\": 3}\n", ":2: a prompt is a non-empty JSON array"},
               {"[]\n", ":1: a prompt is a non-empty"},
               {"[1, -2]\n", ":1: token 1"},
               {"[1, 2.5]\n", ":1: token 1"},
               {"[1, 2\n", ":1:"},
               {"\n\n", "no prompts"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        const char *path = tmp_file(1, ".jsonl", bad[i].text);
        ck_assert_int_ne(gen_prompts_load(path, 100, 0, &pr, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, path), "%s", err.msg);
    }
    ck_assert_int_ne(gen_prompts_load("/nonexistent/p.jsonl", 100, 0, &pr, &err), 0);
    ck_assert_int_eq(gen_prompts_load(tmp_file(1, ".jsonl", "[1]\n[2]\n[3]\n"), 100, 2, &pr, &err), 0);
    ck_assert_int_eq(pr.n, 2);
    gen_prompts_free(&pr);
}
END_TEST

/* A measured generation becomes a profile the simulator's decoders read (sim/decode.h): its TPF and
 * its distribution of a step's commits, which they then draw from. */
START_TEST(profile_round_trip)
{
    struct ts_err err;
    struct gen g, h;
    struct gen_cfg c = cfg(6, 9, 96, 32);
    ck_assert_int_eq(gen_start(&g, &c, "block", NULL, NULL, &err), 0);
    run_gen(&g, "threshold:0.7");
    ck_assert_int_eq(gen_start(&h, &c, "block", NULL, NULL, &err), 0);
    run_gen(&h, "hierarchical:0.8,0.3");
    const char *path = tmp_path(2, ".json");
    ck_assert_int_eq(gen_profile_write(path, "mine", &h, "threshold", "first", &err), 0);
    ck_assert_int_eq(gen_profile_write(path, "deep", &h, "hierarchical", "tessera engine generate", &err), 0);
    ck_assert_int_eq(gen_profile_write(path, "mine", &g, "threshold", "again", &err), 0); /* replaces it */
    FILE *f = fopen(path, "r");
    static char text[65536];
    const size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    static struct decode_profile pr;
    ck_assert_int_eq(decode_profile_parse(path, text, n, "mine", "threshold", &pr, &err), 0);
    ck_assert_double_eq_tol(pr.tpf, gen_tpf(&g), 1e-9);
    for (int32_t k = 1; k <= pr.nsteps; k++)
        ck_assert_double_eq(pr.steps[k - 1], (double)g.per_step[k]);
    ck_assert_int_eq(decode_profile_parse(path, text, n, "deep", "hierarchical", &pr, &err), 0);
    ck_assert_double_eq_tol(pr.tpf, gen_tpf(&h), 1e-9);
    ck_assert_int_ne(decode_profile_parse(path, text, n, "deep", "threshold", &pr, &err), 0);
    /* the simulator's threshold decoder draws a step's commits from the measured distribution */
    char spec[1200];
    snprintf(spec, sizeof spec, "threshold:%s:mine", path);
    static struct decode_model dm;
    ck_assert_msg(decode_parse(spec, ".", &dm, &err) == 0, "%s", err.msg);
    ck_assert_int_gt(dm.ncdf, 1);
    struct request r = {.G = 1 << 20, .C = 1 << 20, .Bs = 1 << 20, .L = 1 << 20};
    r.rng = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r.rng, 5);
    double sum = 0, seen[33] = {0};
    const int draws = 200000;
    for (int i = 0; i < draws; i++) {
        const int32_t k = decode_get(dm.kind)->draw(&dm, &r);
        ck_assert(k >= 1 && k <= dm.ncdf);
        sum += k;
        seen[k] += 1;
    }
    gsl_rng_free(r.rng);
    ck_assert_double_eq_tol(sum / draws, gen_tpf(&g), 0.02 * gen_tpf(&g));
    double all = 0;
    for (int32_t k = 1; k <= 32; k++)
        all += (double)g.per_step[k];
    for (int32_t k = 1; k <= dm.ncdf; k++) /* each count as often as measured */
        ck_assert_double_eq_tol(seen[k] / draws, g.per_step[k] / all, 0.01);
    /* refused: a file that is not an object of profiles, a generation with no block step, steps whose
     * mean is not the TPF, bad counts */
    ck_assert_int_ne(gen_profile_write(tmp_file(3, ".json", "[1]"), "x", &g, "threshold", "s", &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a JSON object"));
    gen_stop(&g);
    gen_stop(&h);
    ck_assert_int_ne(gen_profile_write(path, "x", &g, "threshold", "s", &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "no block step ran"));
    const struct {
        const char *text, *says;
    } bad[] = {{"{\"p\": {\"tpf\": 2.0, \"steps\": [1, 1, 5]}}", "is not its tpf"},
               {"{\"p\": {\"tpf\": 2.0, \"steps\": [1, -1, 1]}}", "p.steps[1]: must be a count"},
               {"{\"p\": {\"tpf\": 2.0, \"steps\": []}}", "p.steps: must be an array"},
               {"{\"p\": {\"tpf\": 2.0, \"steps\": [0, 0]}}", "counts no step"},
               {"{\"p\": {\"tpf\": 2.0, \"step\": [1]}}", "p.step: unknown key"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        ck_assert_int_ne(decode_profile_parse("x.json", bad[i].text, strlen(bad[i].text), "p", "threshold", &pr, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s", err.msg);
    }
    const char *ok = "{\"p\": {\"tpf\": 2.0, \"steps\": [1, 1, 1]}}";
    ck_assert_int_eq(decode_profile_parse("x.json", ok, strlen(ok), "p", "threshold", &pr, &err), 0);
    ck_assert_int_eq(pr.nsteps, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_gen");
    ck_case(s, rules_by_hand, 0);
    ck_case(s, rules_properties, 0);
    ck_case(s, rule_specs, 0);
    ck_case(s, credit_fusion, 0);
    ck_case(s, generation_topk_exact, 0);
    ck_case(s, generation_threshold, 0);
    ck_case(s, generation_prophet, 0);
    ck_case(s, generation_elastic_drift, 0);
    ck_case(s, generation_d2_rollout, 0);
    ck_case(s, generation_room, 0);
    ck_case(s, generation_dual, 0);
    ck_case(s, generation_policies, 0);
    ck_case(s, generation_focus, 0);
    ck_case(s, generation_smooth, 0);
    ck_case(s, generation_vicinity, 0);
    ck_case(s, reference_scattered_eviction, 0);
    ck_case(s, generation_ids_in_plan, 0);
    ck_case(s, prompt_file_errors, 0);
    ck_case(s, profile_round_trip, 0);
    return run_suite("eng_gen", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
