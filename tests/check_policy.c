/*
 * check_policy.c: exact segment shapes of every policy over a whole request,
 * content/EOS decoding and early stop; every policy's K/V held and peaks against what its steps read
 * and write over random shapes; a driven policy's whole-sequence flag against its steps; a policy
 * with a parameter added as a user would.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "decode.h"
#include "eng_ext_decl.h"
#include "policy.h"
#include "policy_drive.h"
#include "sim_internal.h"
#include "test_util.h"

#define MAX_STEPS 8192

struct life {
    struct segment seg[MAX_STEPS];
    int n;
};

/* Runs one request to completion with decode model dm, recording every segment. */
static void run_life_dm(const struct policy_ops *po, const struct policy_cfg *pc, int P, int G, int C,
                        struct decode_model dm, struct life *out)
{
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = P;
    r.G = G;
    r.C = C;
    policy_req_init(&r, pc);
    struct policy_cfg pcd = *pc; /* a policy that decides draws the same decode model */
    pcd.dm = &dm;
    pcd.rng = (po->caps & POLICY_DECIDES) || decode_needs_rng(&dm) ? gsl_rng_alloc(gsl_rng_taus2) : NULL;
    r.rng = decode_needs_rng(&dm) ? pcd.rng : NULL;
    pc = &pcd;
    r.seed = 0x1234567u + (uint64_t)P * 7919u + (uint64_t)G;
    out->n = 0;
    for (;;) {
        ck_assert_int_lt(out->n, MAX_STEPS);
        struct segment *s = &out->seg[out->n++];
        memset(s, 0, sizeof *s);
        po->emit(&r, pc, s);
        ck_assert_int_le(po->kv_tokens(&r, pc), po->kv_peak_tokens(&r, pc));
        ck_assert_int_le(s->q, po->peak_q(&r, pc));
        if (!(po->caps & POLICY_DECIDES))
            s->decoded = s->phase == PHASE_PREFILL ? 0 : decode_tokens(&dm, &r);
        if (policy_advance(po, &r, pc, s))
            break;
    }
    ck_assert_int_eq(r.decoded_total, pc->early_stop ? r.decoded_total : G);
    if (pcd.rng)
        gsl_rng_free(pcd.rng);
}

/* The same with a fixed:k decode model. */
static void run_life(const struct policy_ops *po, const struct policy_cfg *pc, int P, int G, int C,
                     int k, struct life *out)
{
    run_life_dm(po, pc, P, G, C, (struct decode_model){.kind = DECODE_FIXED, .k = k}, out);
}

/* A threshold decoder committing exactly one position a step (TPF 1: 1 + Poisson(0)) while content
 * is left: it differs from fixed:1 only in its EOS positions. */
static const struct decode_model ONE_BY_CONFIDENCE = {.kind = DECODE_THRESHOLD, .tpf = 1.0};

static void expect_seg(const struct segment *s, int phase, int q, int kv, int kv_write, int logits,
                       int decoded)
{
    ck_assert_str_eq(seg_phase_name(s->phase), seg_phase_name(phase));
    ck_assert_int_eq(s->q, q);
    ck_assert_int_eq(s->kv, kv);
    ck_assert_int_eq(s->kv_write, kv_write);
    ck_assert_int_eq(s->logit_rows, logits);
    ck_assert_int_eq(s->decoded, decoded);
}

static struct life L;
static const struct policy_cfg PC = {.block_size = 32};

START_TEST(vanilla_shapes)
{
    run_life(&policy_vanilla, &PC, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    for (int i = 0; i < L.n; i++)
        expect_seg(&L.seg[i], PHASE_FULL, 164, 0, 0, 164, 1);
    struct policy_cfg mo = PC;
    mo.mask_only = true;
    run_life(&policy_vanilla, &mo, 100, 64, 64, 1, &L);
    for (int i = 0; i < L.n; i++)
        expect_seg(&L.seg[i], PHASE_FULL, 164, 0, 0, 64 - i, 1); /* masked positions left */
    /* block logits: the current block's rows alone (its masked ones, mask-only) */
    struct policy_cfg bl = PC;
    bl.block_logits = true;
    run_life(&policy_vanilla, &bl, 100, 64, 64, 1, &L);
    for (int i = 0; i < L.n; i++)
        expect_seg(&L.seg[i], PHASE_FULL, 164, 0, 0, 32, 1);
    bl.mask_only = true;
    run_life(&policy_vanilla, &bl, 100, 64, 64, 1, &L);
    for (int i = 0; i < L.n; i++)
        expect_seg(&L.seg[i], PHASE_FULL, 164, 0, 0, 32 - i % 32, 1);
}
END_TEST

START_TEST(prefix_shapes)
{
    run_life(&policy_prefix, &PC, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    expect_seg(&L.seg[0], PHASE_REFRESH, 164, 0, 100, 164, 1);
    for (int i = 1; i < 32; i++)
        expect_seg(&L.seg[i], PHASE_REUSE, 64, 100, 0, 64, 1);
    expect_seg(&L.seg[32], PHASE_REFRESH, 164, 0, 132, 164, 1);
    for (int i = 33; i < 64; i++)
        expect_seg(&L.seg[i], PHASE_REUSE, 32, 132, 0, 32, 1);
}
END_TEST

START_TEST(dual_shapes)
{
    run_life(&policy_dual, &PC, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    for (int b = 0; b < 2; b++) {
        expect_seg(&L.seg[32 * b], PHASE_REFRESH, 164, 0, 164, 164, 1);
        for (int i = 1; i < 32; i++)
            expect_seg(&L.seg[32 * b + i], PHASE_REUSE, 32, 132, 0, 32, 1);
    }
    /* mask-only: REFRESH logits for every masked position, REUSE for the block's masked ones */
    struct policy_cfg mo = PC;
    mo.mask_only = true;
    run_life(&policy_dual, &mo, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[0], PHASE_REFRESH, 164, 0, 164, 64, 1);
    expect_seg(&L.seg[1], PHASE_REUSE, 32, 132, 0, 31, 1);
    expect_seg(&L.seg[32], PHASE_REFRESH, 164, 0, 164, 32, 1);
    /* block logits: a REFRESH's logits over its block's 32 rows, the REUSE steps' unchanged */
    struct policy_cfg bl = PC;
    bl.block_logits = true;
    run_life(&policy_dual, &bl, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[0], PHASE_REFRESH, 164, 0, 164, 32, 1);
    expect_seg(&L.seg[1], PHASE_REUSE, 32, 132, 0, 32, 1);
    expect_seg(&L.seg[32], PHASE_REFRESH, 164, 0, 164, 32, 1);
}
END_TEST

START_TEST(dual_refresh_interval)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 8; /* refresh-interval */
    run_life(&policy_dual, &pc, 100, 32, 32, 1, &L);
    ck_assert_int_eq(L.n, 32);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(L.seg[i].phase, i % 8 == 0 ? PHASE_REFRESH : PHASE_REUSE);
}
END_TEST

/* vicinity: pc with w (vicinity) and F (refresh-interval) */
static struct policy_cfg vicinity_cfg(int w, int F)
{
    struct policy_cfg pc = PC;
    pc.p[0] = w;
    pc.p[1] = F;
    return pc;
}

START_TEST(vicinity_shapes)
{
    struct policy_cfg pc = vicinity_cfg(16, 32);
    run_life(&policy_vicinity, &pc, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    /* block 0 is positions 100..132: the window 84..148 over the other 100 */
    expect_seg(&L.seg[0], PHASE_REFRESH, 164, 0, 164, 164, 1);
    for (int i = 1; i < 32; i++)
        expect_seg(&L.seg[i], PHASE_REUSE, 64, 100, 64, 64, 1);
    /* block 1 is positions 132..164: the window 116..164, clipped at the end */
    expect_seg(&L.seg[32], PHASE_REFRESH, 164, 0, 164, 164, 1);
    for (int i = 33; i < 64; i++)
        expect_seg(&L.seg[i], PHASE_REUSE, 48, 116, 48, 48, 1);
    /* clipped at the start: a 10-token prompt, the window 0..58 */
    run_life(&policy_vicinity, &pc, 10, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 58, 16, 58, 58, 1);
    /* w = 0 is dual's shape, its block's K/V rewritten */
    pc = vicinity_cfg(0, 32);
    run_life(&policy_vicinity, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 32, 132, 32, 32, 1);
    /* mask-only: the block's masked rows */
    pc = vicinity_cfg(16, 32);
    pc.mask_only = true;
    run_life(&policy_vicinity, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 64, 100, 64, 31, 1);
    expect_seg(&L.seg[32], PHASE_REFRESH, 164, 0, 164, 32, 1);
}
END_TEST

/* Random requests, decode sizes, windows and intervals: every step's shape from the closed form
 * (C = G, fixed:k, so block b takes ceil(len_b / k) steps, the j-th a REFRESH iff j % F == 0) */
START_TEST(vicinity_property)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int trial = 0; trial < 300; trial++) {
        x = ts_mix64(x + (uint64_t)trial);
        const int P = (int)(x % 300), G = 1 + (int)((x >> 10) % 200), k = 1 + (int)((x >> 20) % 6);
        const int w = (int)((x >> 30) % 40), F = 1 + (int)((x >> 40) % 12);
        struct policy_cfg pc = vicinity_cfg(w, F);
        run_life(&policy_vicinity, &pc, P, G, G, k, &L);
        const int Lq = P + G;
        int i = 0;
        for (int b = 0; b * 32 < G; b++) {
            const int len = G - b * 32 < 32 ? G - b * 32 : 32, start = P + b * 32;
            const int lo = start - w > 0 ? start - w : 0, hi = start + len + w < Lq ? start + len + w : Lq;
            for (int j = 0; j < (len + k - 1) / k; j++, i++) {
                ck_assert_int_lt(i, L.n);
                const int dec = len - j * k < k ? len - j * k : k;
                if (j % F == 0)
                    expect_seg(&L.seg[i], PHASE_REFRESH, Lq, 0, Lq, Lq, dec);
                else
                    expect_seg(&L.seg[i], PHASE_REUSE, hi - lo, Lq - (hi - lo), hi - lo, hi - lo, dec);
            }
        }
        ck_assert_int_eq(i, L.n);
    }
}
END_TEST

/* sparse: pc with r (sparse-ratio), k (sparse-kernel), d (sparse-delay), head selection */
static struct policy_cfg sparse_cfg(double r, int d, bool head)
{
    struct policy_cfg pc = PC;
    pc.p[0] = r;
    pc.p[1] = 3;
    pc.p[2] = d;
    pc.p[3] = head;
    return pc;
}

static void expect_keep(const struct segment *s, int keep, int score_rows)
{
    ck_assert_int_eq(s->keep, keep);
    ck_assert_int_eq(s->score_rows, score_rows);
}

START_TEST(sparse_shapes)
{
    struct policy_cfg pc = sparse_cfg(0.5, 1, false);
    run_life(&policy_sparse, &pc, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    /* each block: one FULL step, the selecting REFRESH keeping floor(0.5 * (164 - 32)) = 66, REUSE */
    for (int b = 0; b < 2; b++) {
        expect_seg(&L.seg[32 * b], PHASE_FULL, 164, 0, 0, 164, 1);
        expect_keep(&L.seg[32 * b], 0, 0);
        expect_seg(&L.seg[32 * b + 1], PHASE_REFRESH, 164, 0, 66, 164, 1);
        expect_keep(&L.seg[32 * b + 1], 66, 32);
        for (int i = 2; i < 32; i++) {
            expect_seg(&L.seg[32 * b + i], PHASE_REUSE, 32, 66, 0, 32, 1);
            expect_keep(&L.seg[32 * b + i], 0, 0);
        }
    }
    /* no delay: the first step selects; a short last block keeps more */
    pc = sparse_cfg(0.25, 0, true);
    run_life(&policy_sparse, &pc, 100, 40, 40, 1, &L);
    expect_seg(&L.seg[0], PHASE_REFRESH, 140, 0, 27, 140, 1);
    expect_keep(&L.seg[0], 27, 32);
    expect_seg(&L.seg[1], PHASE_REUSE, 32, 27, 0, 32, 1);
    expect_seg(&L.seg[32], PHASE_REFRESH, 140, 0, 33, 140, 1);
    expect_keep(&L.seg[32], 33, 8);
    expect_seg(&L.seg[33], PHASE_REUSE, 8, 33, 0, 8, 1);
    /* r = 1 keeps every candidate */
    pc = sparse_cfg(1, 1, false);
    run_life(&policy_sparse, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[2], PHASE_REUSE, 32, 132, 0, 32, 1);
}
END_TEST

/* A dropped cache (preemption by recompute) restarts the delay: FULL, then the selecting REFRESH. */
START_TEST(sparse_after_drop)
{
    struct policy_cfg pc = sparse_cfg(0.5, 2, false);
    struct request r = {.P = 100, .G = 64, .C = 64};
    policy_req_init(&r, &pc);
    struct segment s;
    const int phases[] = {PHASE_FULL, PHASE_FULL, PHASE_REFRESH, PHASE_REUSE, PHASE_FULL, PHASE_FULL, PHASE_REFRESH,
                          PHASE_REUSE};
    for (int i = 0; i < 8; i++) {
        if (i == 4)
            r.need_refresh = true;
        memset(&s, 0, sizeof s);
        policy_sparse.emit(&r, &pc, &s);
        ck_assert_str_eq(seg_phase_name(s.phase), seg_phase_name(phases[i]));
        s.decoded = 1;
        policy_advance(&policy_sparse, &r, &pc, &s);
    }
}
END_TEST

/* Random requests, ratios, delays and decode sizes: every step from the closed form (C = G,
 * fixed:k: block b takes ceil(len_b / k) steps, the j-th FULL for j < d, selecting for j = d,
 * REUSE after) and the footprint: kv_tokens is the block's keep, never above kv_peak_tokens. */
START_TEST(sparse_property)
{
    uint64_t x = 0x51ed270b4f1a5c3dull;
    for (int trial = 0; trial < 300; trial++) {
        x = ts_mix64(x + (uint64_t)trial);
        const int P = (int)(x % 300), G = 1 + (int)((x >> 10) % 200), k = 1 + (int)((x >> 20) % 6);
        const int d = (int)((x >> 30) % 4);
        const double ratio = (1 + (double)((x >> 40) % 100)) / 100.0;
        struct policy_cfg pc = sparse_cfg(ratio, d, (x >> 50) & 1);
        run_life(&policy_sparse, &pc, P, G, G, k, &L);
        const int Lq = P + G;
        int i = 0;
        for (int b = 0; b * 32 < G; b++) {
            const int len = G - b * 32 < 32 ? G - b * 32 : 32, keep = (int)floor(ratio * (Lq - len));
            for (int j = 0; j < (len + k - 1) / k; j++, i++) {
                ck_assert_int_lt(i, L.n);
                const int dec = len - j * k < k ? len - j * k : k;
                if (j < d) {
                    expect_seg(&L.seg[i], PHASE_FULL, Lq, 0, 0, Lq, dec);
                } else if (j == d) {
                    expect_seg(&L.seg[i], PHASE_REFRESH, Lq, 0, keep, Lq, dec);
                    expect_keep(&L.seg[i], keep, keep > 0 ? len : 0);
                } else {
                    expect_seg(&L.seg[i], PHASE_REUSE, len, keep, 0, len, dec);
                }
                ck_assert(segment_check(&L.seg[i]) == NULL);
            }
        }
        ck_assert_int_eq(i, L.n);
    }
}
END_TEST

static struct policy_cfg dllm_cache_cfg(int Kp, int Kr, double rho)
{
    struct policy_cfg pc = PC;
    pc.p[0] = Kp;
    pc.p[1] = Kr;
    pc.p[2] = rho;
    return pc;
}

static void expect_layers(const struct segment *s, int q_front, int kv_front, int kv_write_front, int probe, int carry,
                          int picked)
{
    ck_assert_int_eq(s->picked, picked);
    ck_assert_int_eq(s->q_front, q_front);
    ck_assert_int_eq(s->kv_front, kv_front);
    ck_assert_int_eq(s->kv_write_front, kv_write_front);
    ck_assert_int_eq(s->probe, probe);
    ck_assert_int_eq(s->carry, carry);
}

/* P = 100, G = 64 (L = 164), Kp = 5, Kr = 3, rho = 0.25 (u = 16): forward n refreshes the prompt
 * where 5 | n and the response where 3 | n. */
START_TEST(dllm_cache_shapes)
{
    struct policy_cfg pc = dllm_cache_cfg(5, 3, 0.25);
    run_life(&policy_dllm_cache, &pc, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    expect_seg(&L.seg[0], PHASE_REFRESH, 164, 0, 164, 164, 1); /* both: the whole sequence */
    expect_layers(&L.seg[0], 0, 0, 0, 0, 0, 0);
    expect_seg(&L.seg[1], PHASE_REUSE, 16, 148, 16, 164, 1);   /* neither: u over the rest */
    expect_layers(&L.seg[1], 164, 0, 164, 64, 148, 16);
    expect_seg(&L.seg[3], PHASE_REFRESH, 64, 100, 64, 164, 1); /* the response over the cached prompt */
    expect_layers(&L.seg[3], 164, 0, 164, 0, 100, 0);
    expect_seg(&L.seg[5], PHASE_REUSE, 116, 48, 116, 164, 1);  /* the prompt and u response rows */
    expect_layers(&L.seg[5], 164, 0, 164, 64, 48, 16);
    expect_seg(&L.seg[15], PHASE_REFRESH, 164, 0, 164, 164, 1); /* 15: both again */
    for (int i = 0; i < L.n; i++)
        ck_assert(segment_check(&L.seg[i]) == NULL);
    /* mask-only logits take the masked rows of the whole response; a tiny ratio still updates one */
    pc = dllm_cache_cfg(100, 7, 0.001);
    pc.mask_only = true;
    run_life(&policy_dllm_cache, &pc, 10, 40, 40, 2, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 1, 49, 1, 38, 2);
    expect_layers(&L.seg[1], 50, 0, 50, 40, 49, 1);
}
END_TEST

/* A dropped cache (preemption by recompute) restarts the count: the whole sequence, then partial. */
START_TEST(dllm_cache_after_drop)
{
    struct policy_cfg pc = dllm_cache_cfg(100, 7, 0.5);
    struct request r = {.P = 20, .G = 64, .C = 64};
    policy_req_init(&r, &pc);
    struct segment s;
    for (int i = 0; i < 6; i++) {
        if (i == 3)
            r.need_refresh = true;
        memset(&s, 0, sizeof s);
        policy_dllm_cache.emit(&r, &pc, &s);
        ck_assert_int_eq(s.q, i == 0 || i == 3 ? 84 : 32);
        s.decoded = 1;
        policy_advance(&policy_dllm_cache, &r, &pc, &s);
    }
}
END_TEST

/* Random requests, intervals, ratios and decode sizes: every step from the closed form (forward n
 * of the request: the prompt refreshed where Kp | n, the response where Kr | n) and the footprint
 * (the whole sequence, its K/V and its outputs). */
START_TEST(dllm_cache_property)
{
    uint64_t x = 0x3c6ef372fe94f82bull;
    for (int trial = 0; trial < 300; trial++) {
        x = ts_mix64(x + (uint64_t)trial);
        const int P = (int)(x % 300), G = 1 + (int)((x >> 10) % 200), k = 1 + (int)((x >> 20) % 6);
        const int Kp = 1 + (int)((x >> 30) % 120), Kr = 1 + (int)((x >> 38) % 10);
        const double rho = (1 + (double)((x >> 44) % 100)) / 100.0;
        struct policy_cfg pc = dllm_cache_cfg(Kp, Kr, rho);
        run_life(&policy_dllm_cache, &pc, P, G, G, k, &L);
        const int Lq = P + G, u = (int)floor(rho * G) > 1 ? (int)floor(rho * G) : 1;
        int steps = 0;
        for (int b = 0; b * 32 < G; b++) {
            const int len = G - b * 32 < 32 ? G - b * 32 : 32;
            steps += (len + k - 1) / k;
        }
        ck_assert_int_eq(L.n, steps);
        for (int n = 0; n < L.n; n++) {
            const struct segment *s = &L.seg[n];
            const bool prompt = n % Kp == 0, response = n % Kr == 0;
            ck_assert(segment_check(s) == NULL);
            ck_assert_int_eq(s->logit_rows, Lq);
            if (prompt && response) {
                expect_seg(s, PHASE_REFRESH, Lq, 0, Lq, Lq, s->decoded);
                expect_layers(s, 0, 0, 0, 0, 0, 0);
                continue;
            }
            const int q = response ? G : (prompt ? P : 0) + u;
            expect_seg(s, response ? PHASE_REFRESH : PHASE_REUSE, q, Lq - q, q, Lq, s->decoded);
            expect_layers(s, Lq, 0, Lq, response ? 0 : G, Lq - q, response ? 0 : u);
        }
        struct request r = {.P = P, .G = G, .C = G};
        policy_req_init(&r, &pc);
        ck_assert_int_eq(policy_dllm_cache.kv_tokens(&r, &pc), Lq);
        ck_assert_int_eq(policy_dllm_cache.kv_peak_tokens(&r, &pc), Lq);
    }
}
END_TEST

static struct policy_cfg focus_cfg(double alpha, double snr)
{
    struct policy_cfg pc = PC;
    pc.p[0] = alpha;
    pc.p[1] = snr;
    return pc;
}

/* A clean signal (snr 100) and a budget of the decodes per step (alpha 1, fixed:2): after the
 * prefill every step keeps exactly the two decodable positions (the block's leftmost masked ones)
 * besides the decoded rows waiting for the cache, misses none, and its layers 0-1 run the whole
 * delayed step; the later layers attend to the prefix and every position of the block. */
START_TEST(focus_shapes)
{
    struct policy_cfg pc = focus_cfg(1, 100);
    run_life(&policy_focus, &pc, 100, 64, 64, 2, &L);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    ck_assert_int_eq(L.n, 1 + 32);
    int cached = 0, stable = 0, rest = 0;
    for (int i = 1; i < L.n; i++) {
        const struct segment *s = &L.seg[i];
        const int b = (i - 1) / 16, j = (i - 1) % 16, d = 2 * j; /* decoded in the block before the step */
        ck_assert(segment_check(s) == NULL);
        ck_assert_str_eq(seg_phase_name(s->phase), "BLOCK");
        ck_assert_int_eq(s->q_front, rest + 32 - cached);
        ck_assert_int_eq(s->kv_front, 100 + 32 * b - rest + cached);
        ck_assert_int_eq(s->q, rest + d - cached + 2);
        ck_assert_int_eq(s->kv, s->kv_front + s->q_front - s->q);
        ck_assert_int_eq(s->kv_write, rest + stable - cached);
        ck_assert_int_eq(s->decoded, 2);
        ck_assert_int_eq(s->missed, 0);
        ck_assert_int_eq(s->logit_rows, s->q);
        ck_assert_int_eq(s->probe, 32 - d); /* the candidates: the block's masked rows */
        ck_assert_int_eq(s->picked, 2);
        ck_assert_int_eq(s->q - s->picked, s->q_front - s->probe);
        /* the delayed cache's own bookkeeping (block+delayed) */
        cached = stable;
        rest = 0;
        if (j == 15) {
            rest = 32 - cached;
            cached = stable = 0;
        } else {
            stable = d + 2 - 1;
        }
    }
}
END_TEST

/* Placeholder integrity: a block's first step keeps every masked position left of the right-most one
 * chosen. With one decodable position (fixed:1) and a budget of 8 (alpha 8), the 7 others chosen by
 * noise lie anywhere in the block, so the step keeps far more than the 16 the budget and the AR
 * context alone could. */
START_TEST(focus_placeholders)
{
    int wide = 0, firsts = 0;
    for (int trial = 0; trial < 40; trial++) {
        struct policy_cfg pc = focus_cfg(8, 100);
        run_life(&policy_focus, &pc, 10 + trial, 64, 64, 1, &L);
        ck_assert_int_eq(L.n, 1 + 64);
        for (int b = 0; b < 2; b++, firsts++)
            wide += L.seg[1 + 32 * b].q > 16 + (b ? L.seg[1 + 32 * b].q_front - 32 : 0);
    }
    ck_assert_msg(wide * 10 > firsts * 8, "%d of %d blocks' first steps kept more than 16 rows", wide, firsts);
}
END_TEST

/* Random requests, budgets, signal qualities and decode sizes: every step is well formed, its later
 * layers run no more rows than its front layers (the kept set and the rows waiting for the cache),
 * it decodes at least one token and at most its decodable ones, emitting it twice gives the same
 * step, a weaker signal misses more decodable tokens, and every request finishes. */
START_TEST(focus_property)
{
    uint64_t x = 0x6a09e667f3bcc909ull;
    int64_t missed[2] = {0, 0};
    for (int trial = 0; trial < 200; trial++) {
        x = ts_mix64(x + (uint64_t)trial);
        const int P = (int)(x % 300), G = 1 + (int)((x >> 10) % 200), k = 1 + (int)((x >> 20) % 6);
        const double alpha = 1 + (double)((x >> 30) % 20) / 10.0;
        for (int weak = 0; weak < 2; weak++) {
            struct policy_cfg pc = focus_cfg(alpha, weak ? 0.5 : 4);
            run_life(&policy_focus, &pc, P, G, G, k, &L);
            int decoded = 0;
            for (int i = 0; i < L.n; i++) {
                const struct segment *s = &L.seg[i];
                ck_assert(segment_check(s) == NULL);
                decoded += s->decoded;
                if (s->phase == PHASE_PREFILL)
                    continue;
                ck_assert(s->q_front > 0 && s->q <= s->q_front && s->q > 0);
                ck_assert_int_eq(s->kv, s->kv_front + s->q_front - s->q);
                /* the candidates are the front rows after the ones waiting for the cache, which
                 * the later layers run before the picked ones (step_desc.evict) */
                ck_assert(s->probe > 0 && s->picked >= 1 && s->picked <= s->probe);
                ck_assert_int_eq(s->q - s->picked, s->q_front - s->probe);
                ck_assert(s->decoded >= 1 && s->decoded + s->missed <= k + s->q_front);
                ck_assert(s->missed >= 0);
                missed[weak] += s->missed;
            }
            ck_assert_int_eq(decoded, G);
        }
    }
    ck_assert_msg(missed[1] > 2 * missed[0], "missed with a weak signal %lld, a strong one %lld", (long long)missed[1],
                  (long long)missed[0]);
    /* emitting a step twice draws the same */
    struct policy_cfg pc = focus_cfg(1.5, 1);
    struct decode_model dm = {.kind = DECODE_THRESHOLD, .tpf = 3};
    pc.dm = &dm;
    pc.rng = gsl_rng_alloc(gsl_rng_taus2);
    struct request r = {.P = 50, .G = 64, .C = 64, .seed = 99};
    policy_req_init(&r, &pc);
    struct segment a, b;
    for (int i = 0; i < 40 && r.decoded_total < 64; i++) {
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        policy_focus.emit(&r, &pc, &a);
        policy_focus.emit(&r, &pc, &b);
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
        policy_advance(&policy_focus, &r, &pc, &a);
    }
    gsl_rng_free(pc.rng);
}
END_TEST

/* DPad keeps n_b of the suffix a block, by hand (W = 64, k = 4, sc = 2: the sum over d < min(64,
 * G - (b+1) Bs) of min(1, 2 phi(4 d / 63)) is 16.15 past block 0, 15.43 past block 1, none past the
 * last), over no cache, the prefix cache and the dual cache: P = 100, G = 96, fixed:8. */
START_TEST(dpad_shapes)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 64, pc.p[1] = 4, pc.p[2] = 2;
    const int n[3] = {16, 15, 0};
    for (int cache = 0; cache < 3; cache++) {
        pc.p[3] = cache;
        run_life(&policy_dpad, &pc, 100, 96, 96, 8, &L);
        ck_assert_int_eq(L.n, 12);
        for (int b = 0; b < 3; b++) {
            const int pre = 100 + 32 * b, all = pre + 32 + n[b];
            for (int i = 0; i < 4; i++) {
                const struct segment *g = &L.seg[4 * b + i];
                if (cache == 0)
                    expect_seg(g, PHASE_FULL, all, 0, 0, all, 8);
                else if (i == 0)
                    expect_seg(g, PHASE_REFRESH, all, 0, cache == 1 ? pre : all, all, 8);
                else if (cache == 1)
                    expect_seg(g, PHASE_REUSE, 32 + n[b], pre, 0, 32 + n[b], 8);
                else
                    expect_seg(g, PHASE_REUSE, 32, pre + n[b], 0, 32, 8);
            }
        }
    }
    /* mask-only logits: the block's masked rows and the kept suffix's */
    pc.p[3] = 0;
    pc.mask_only = true;
    run_life(&policy_dpad, &pc, 100, 96, 96, 8, &L);
    expect_seg(&L.seg[0], PHASE_FULL, 148, 0, 0, 48, 8);
    expect_seg(&L.seg[1], PHASE_FULL, 148, 0, 0, 40, 8);
    expect_seg(&L.seg[8], PHASE_FULL, 196, 0, 0, 32, 8);
    /* a window wider than the suffix keeps what its probabilities give of the suffix there is */
    pc.mask_only = false, pc.p[0] = 4096, pc.p[2] = 1;
    run_life(&policy_dpad, &pc, 10, 64, 64, 32, &L);
    ck_assert_int_eq(L.seg[0].q, 10 + 32 + 13); /* 32 x 0.3989 (phi near 0 over 32 of 4096) = 12.8 */
    /* a suffix longer than the window keeps none past it: W = 64 spanning one standard deviation (the
     * sum of phi(d / 63) over d < 64 is 21.9; the 160 positions past it would add 10) */
    pc.p[0] = 64, pc.p[1] = 1;
    run_life(&policy_dpad, &pc, 10, 256, 256, 32, &L);
    ck_assert_int_eq(L.seg[0].q, 10 + 32 + 22);
}
END_TEST

/* Fast-dLLM v2 by hand: P = 100, G = 64 in 2 blocks of 4 sub-blocks of 8, fixed:2. A prefill; block
 * 0's four sub-blocks, 4 steps each of its 32 rows over the prompt; the commit forward writing block
 * 0 and decoding block 1's first token; then block 1 (its first sub-block's 7 left in 2, 2, 2, 1).
 * With the DualCache a sub-block's first step (and block 1's first, after the commit) runs the block
 * and keeps its K/V, the others run the sub-block's 8 rows (--v2-full-steps 1; the parameters not set
 * here are 0). */
START_TEST(fdllm_v2_shapes)
{
    struct policy_cfg pc = {.block_size = 8};
    pc.p[0] = 4, pc.p[1] = 0, pc.p[2] = 1;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    ck_assert_int_eq(L.n, 34);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    for (int i = 1; i <= 16; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 100, 0, 32, 2);
    expect_seg(&L.seg[17], PHASE_BLOCK, 32, 100, 32, 32, 1);
    for (int i = 18; i < 34; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 132, 0, 32, i == 21 ? 1 : 2);
    pc.p[1] = 1;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    ck_assert_int_eq(L.n, 34);
    for (int i = 1; i <= 16; i++) {
        if ((i - 1) % 4 == 0)
            expect_seg(&L.seg[i], PHASE_BLOCK, 32, 100, 32, 32, 2);
        else
            expect_seg(&L.seg[i], PHASE_REUSE, 8, 124, 8, 8, 2);
    }
    expect_seg(&L.seg[17], PHASE_BLOCK, 32, 100, 32, 32, 1);
    expect_seg(&L.seg[18], PHASE_BLOCK, 32, 132, 32, 32, 2); /* block 1 not kept yet: its rows */
    expect_seg(&L.seg[19], PHASE_REUSE, 8, 156, 8, 8, 2);
    expect_seg(&L.seg[22], PHASE_BLOCK, 32, 132, 32, 32, 2); /* the next sub-block's first step */
    /* --v2-full-steps 2.5: a later sub-block runs the whole block until its first position is decoded,
     * 2.5 steps on average (the j-th later sub-block floor(2.5 (j + 1)) - floor(2.5 j): 2, 3, 2, ...) */
    pc.p[3] = 2.5;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    const int full[16] = {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 0};
    for (int i = 1; i <= 16; i++) {
        if (full[i - 1])
            expect_seg(&L.seg[i], PHASE_BLOCK, 32, 100, 32, 32, 2);
        else
            expect_seg(&L.seg[i], PHASE_REUSE, 8, 124, 8, 8, 2);
    }
    pc.p[3] = 0;
    /* --v2-prefill-logits 1: the prefill's LM head over every row (one where only masked rows count) */
    pc.p[1] = 0, pc.p[4] = 1;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 100, 0);
    ck_assert_int_ge(policy_fdllm_v2.peak_logits(&(struct request){.P = 100, .G = 64, .Bs = 8, .L = 164}, &pc), 100);
    pc.mask_only = true;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 1, 0);
    pc.mask_only = false, pc.p[4] = 0;
    /* mask-only logits: the block's masked rows; the commit's one */
    pc.p[1] = 0, pc.mask_only = true;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    expect_seg(&L.seg[1], PHASE_BLOCK, 32, 100, 0, 32, 2);
    expect_seg(&L.seg[2], PHASE_BLOCK, 32, 100, 0, 30, 2);
    expect_seg(&L.seg[17], PHASE_BLOCK, 32, 100, 32, 1, 1);
    expect_seg(&L.seg[18], PHASE_BLOCK, 32, 132, 0, 31, 2);
    /* the block's masked rows over its sub-blocks: the second's first step after the first's 8, the
     * block's last step after 30 */
    expect_seg(&L.seg[5], PHASE_BLOCK, 32, 100, 0, 24, 2);
    expect_seg(&L.seg[16], PHASE_BLOCK, 32, 100, 0, 2, 2);
    /* a commit that decodes nothing (DiffusionGemma's: one block of one sub-block, the canvas): block 1
     * then takes its 32 in 16 steps of 2 */
    pc.mask_only = false, pc.p[0] = 1, pc.p[2] = 0, pc.block_size = 32;
    run_life(&policy_fdllm_v2, &pc, 100, 64, 64, 2, &L);
    ck_assert_int_eq(L.n, 1 + 16 + 1 + 16);
    expect_seg(&L.seg[17], PHASE_BLOCK, 32, 100, 32, 32, 0);
    for (int i = 18; i < 34; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 132, 0, 32, 2);
    ck_assert_int_eq(policy_fdllm_v2.peak_logits(&(struct request){.Bs = 32}, &pc), 32);
    pc.block_size = 8, pc.p[0] = 4;
    /* attention block-causal at the block (its model's training), not the sub-block */
    struct step_desc sd = {0};
    policy_step_knobs(&policy_fdllm_v2, &pc, model_find("fast-dllm-v2-7b"), &sd);
    ck_assert_int_eq(sd.attn_block, 32);
    sd = (struct step_desc){0};
    policy_step_knobs(&policy_fdllm_v2, &pc, model_find("llada-8b"), &sd);
    ck_assert_int_eq(sd.attn_block, 0);
}
END_TEST

/* D2F by hand: P = 100, G = 64 in 8 blocks of 8, fixed:2, tau_add 0.5, tau_act 1 (a block fully
 * activated once its predecessor is finished), semi-activated blocks decoding nothing. Block 0 joins
 * at the first step, which writes the prompt; each later block joins once its predecessor is half
 * decoded, waits semi-activated until it is finished, and decodes in 4 steps; a finished block's K/V
 * are written by the step after it finishes, beside the rows of the block after it. */
START_TEST(d2f_shapes)
{
    struct policy_cfg pc = {.block_size = 8};
    pc.p[0] = 0.5, pc.p[1] = 1, pc.p[2] = 0, pc.p[3] = 12;
    run_life(&policy_d2f, &pc, 100, 64, 64, 2, &L);
    ck_assert_int_eq(L.n, 32);
    expect_seg(&L.seg[0], PHASE_REFRESH, 108, 0, 100, 108, 2);
    expect_seg(&L.seg[1], PHASE_BLOCK, 8, 100, 0, 8, 2);
    expect_seg(&L.seg[2], PHASE_BLOCK, 16, 100, 0, 16, 2); /* block 1 joins */
    expect_seg(&L.seg[3], PHASE_BLOCK, 16, 100, 0, 16, 2);
    for (int k = 1; k < 8; k++) {
        const int at = 4 * k, cache = 100 + 8 * k, both = k < 7 ? 16 : 8; /* no block after the last */
        expect_seg(&L.seg[at], PHASE_BLOCK, 16, cache - 8, 8, 16, 2); /* block k - 1 written */
        expect_seg(&L.seg[at + 1], PHASE_BLOCK, 8, cache, 0, 8, 2);
        expect_seg(&L.seg[at + 2], PHASE_BLOCK, both, cache, 0, both, 2);
        expect_seg(&L.seg[at + 3], PHASE_BLOCK, both, cache, 0, both, 2);
    }
    /* its mask is block-causal on a bidirectional model too (D2F's LoRA trains it so) */
    struct step_desc sd = {0};
    policy_step_knobs(&policy_d2f, &pc, model_find("llada-8b"), &sd);
    ck_assert_int_eq(sd.attn_block, 8);
}
END_TEST

/* DSB by hand (P 16, G 64, B 32, fixed:8): DSB Cache's full forward, then the window of the next 32
 * masked positions and the 24 before it over the cache until 32 are committed in the cycle, the window
 * shrinking only at the end; without its cache every step a full forward. */
START_TEST(dsb_shapes)
{
    struct policy_cfg pc = {.block_size = 32};
    pc.p[0] = 1, pc.p[1] = 24;
    run_life(&policy_dsb, &pc, 16, 64, 64, 8, &L);
    ck_assert_int_eq(L.n, 8);
    expect_seg(&L.seg[0], PHASE_REFRESH, 80, 0, 80, 80, 8);
    for (int j = 1; j < 4; j++)
        expect_seg(&L.seg[j], PHASE_REUSE, 56, 24, 56, 56, 8);
    expect_seg(&L.seg[4], PHASE_REFRESH, 80, 0, 80, 80, 8); /* a cycle of 32 commits */
    expect_seg(&L.seg[5], PHASE_REUSE, 48, 32, 48, 48, 8); /* 24 left: the window's 24 and 24 before */
    expect_seg(&L.seg[6], PHASE_REUSE, 40, 40, 40, 40, 8);
    expect_seg(&L.seg[7], PHASE_REUSE, 32, 48, 32, 32, 8);
    pc.p[1] = 0; /* no floor: the positions before are the last step's slide */
    run_life(&policy_dsb, &pc, 16, 64, 64, 8, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 40, 40, 40, 40, 8);
    pc.p[0] = 0;
    run_life(&policy_dsb, &pc, 16, 64, 64, 8, &L);
    ck_assert_int_eq(L.n, 8);
    for (int j = 0; j < 8; j++)
        expect_seg(&L.seg[j], PHASE_FULL, 80, 0, 0, 80, 8);
}
END_TEST

/* DSB against an oracle written as its code runs: positions committed left to right, the window
 * [s, min(s + B, P + G)) from the first masked position s, a cycle's commits (blk_acc) against B, the
 * last step's slide (cur_idx) against the floor (prefix_window_length). Random shapes and fixed:k. */
START_TEST(dsb_matches_its_window)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    for (int t = 0; t < 300; t++) {
        const int B = 1 + (int)gsl_rng_uniform_int(g, 64), P = (int)gsl_rng_uniform_int(g, 200);
        const int G = 1 + (int)gsl_rng_uniform_int(g, 300), k = 1 + (int)gsl_rng_uniform_int(g, 40);
        const int cache = (int)gsl_rng_uniform_int(g, 2), pwl = (int)gsl_rng_uniform_int(g, 40);
        struct policy_cfg pc = {.block_size = B};
        pc.p[0] = cache, pc.p[1] = pwl;
        run_life(&policy_dsb, &pc, P, G, G, k, &L);
        int committed = 0, acc = 0, slide = 0, n = 0;
        bool built = false;
        while (committed < G) {
            ck_assert_int_lt(n, L.n);
            const int s = P + committed, w = TS_MIN(s + B, P + G) - s, take = TS_MIN(k, w);
            const struct segment *seg = &L.seg[n++];
            if (!cache) {
                ck_assert(seg->phase == PHASE_FULL && seg->q == P + G && seg->kv == 0);
            } else if (!built || acc >= B) {
                ck_assert(seg->phase == PHASE_REFRESH && seg->q == P + G && seg->kv_write == P + G);
                built = true, acc = 0;
            } else {
                const int pw = TS_MIN(TS_MAX(slide, pwl), s);
                ck_assert_msg(seg->phase == PHASE_REUSE && seg->q == pw + w && seg->kv == P + G - pw - w &&
                                  seg->kv_write == pw + w,
                              "P %d G %d B %d k %d: step %d q %d, wanted %d", P, G, B, k, n, seg->q, pw + w);
            }
            ck_assert_int_eq(seg->decoded, take);
            committed += take, acc += take, slide = take;
        }
        ck_assert_int_eq(n, L.n);
    }
    gsl_rng_free(g);
}
END_TEST

/* LinearSpec by hand (P 16, G 10, B 4, every draft matching: --lspec-accept 1e6): the prompt's forward
 * with one logit row, then rounds of a draft (no K/V kept) and a verify (the window's K/V written)
 * of the seed and the 3 after it, committing all 4, the last window the 2 left; at --lspec-accept 1,
 * no draft matches: a position a round, two forwards a position, the window sliding by one. */
START_TEST(linear_spec_shapes)
{
    struct policy_cfg pc = {.block_size = 4};
    pc.p[0] = 1e6;
    run_life(&policy_linear_spec, &pc, 16, 10, 10, 1, &L);
    ck_assert_int_eq(L.n, 7);
    expect_seg(&L.seg[0], PHASE_PREFILL, 16, 0, 16, 1, 0);
    expect_seg(&L.seg[1], PHASE_BLOCK, 4, 16, 0, 4, 0);
    expect_seg(&L.seg[2], PHASE_BLOCK, 4, 16, 4, 4, 4);
    expect_seg(&L.seg[3], PHASE_BLOCK, 4, 20, 0, 4, 0);
    expect_seg(&L.seg[4], PHASE_BLOCK, 4, 20, 4, 4, 4);
    expect_seg(&L.seg[5], PHASE_BLOCK, 2, 24, 0, 2, 0);
    expect_seg(&L.seg[6], PHASE_BLOCK, 2, 24, 2, 2, 2);
    pc.p[0] = 1;
    run_life(&policy_linear_spec, &pc, 16, 10, 10, 1, &L);
    ck_assert_int_eq(L.n, 21);
    for (int j = 0; j < 10; j++) {
        const int w = TS_MIN(4, 10 - j);
        expect_seg(&L.seg[1 + 2 * j], PHASE_BLOCK, w, 16 + j, 0, w, 0);
        expect_seg(&L.seg[2 + 2 * j], PHASE_BLOCK, w, 16 + j, w, w, 1);
    }
}
END_TEST

/* LinearSpec's commits against the law of a run of matches: where each draft matches with probability
 * 1 - 1/A and the run stops at the first miss, a round commits k >= 1 with P(k) = (1/A)(1 - 1/A)^(k-1).
 * Over a long response in windows too wide to clamp (B 4096), the mean round commits A and a fifth of the
 * rounds (1/A at A 5) commit only the seed, within four standard errors; every verify commits at least one
 * and at most its window; the counts do not depend on whether a step is emitted twice. */
START_TEST(linear_spec_commits_a_run_of_matches)
{
    struct policy_cfg pc = {.block_size = 4096};
    pc.p[0] = 5;
    run_life(&policy_linear_spec, &pc, 64, 15000, 15000, 1, &L);
    int rounds = 0, ones = 0;
    double sum = 0, sq = 0;
    for (int j = 1; j < L.n; j++) {
        const struct segment *s = &L.seg[j];
        if (s->kv_write == 0) {
            ck_assert_int_eq(s->decoded, 0);
            continue;
        }
        ck_assert(s->decoded >= 1 && s->decoded <= s->q);
        if (j + 1 == L.n) /* (the last window may clamp) */
            break;
        rounds++, ones += s->decoded == 1, sum += s->decoded, sq += (double)s->decoded * s->decoded;
    }
    const double mean = sum / rounds, var = sq / rounds - mean * mean, p1 = (double)ones / rounds;
    ck_assert_int_gt(rounds, 2500);
    ck_assert_msg(fabs(mean - 5) < 4 * sqrt(var / rounds), "mean %g over %d rounds", mean, rounds);
    ck_assert_msg(fabs(var - 20) < 4.5, "variance %g (the law's (1 - p) / p^2 = 20)", var);
    ck_assert_msg(fabs(p1 - 0.2) < 4 * sqrt(0.2 * 0.8 / rounds), "P(1) %g", p1);
    struct life *again = xmalloc(sizeof *again);
    run_life(&policy_linear_spec, &pc, 64, 15000, 15000, 1, again);
    ck_assert_int_eq(again->n, L.n);
    for (int j = 0; j < L.n; j++)
        ck_assert_int_eq(again->seg[j].decoded, L.seg[j].decoded);
    free(again);
    /* a step emitted twice, another request's emitted between, draws the same count */
    struct policy_cfg q = {.block_size = 32};
    q.p[0] = 5.46;
    q.rng = gsl_rng_alloc(gsl_rng_taus2);
    struct request r, other;
    memset(&r, 0, sizeof r);
    r.P = 16, r.G = r.C = 256, r.seed = 77;
    policy_req_init(&r, &q);
    other = r, other.seed = 78;
    for (bool done = false; !done;) {
        struct segment s1 = {0}, s2 = {0}, s3 = {0};
        policy_linear_spec.emit(&r, &q, &s1);
        policy_linear_spec.emit(&other, &q, &s3);
        policy_linear_spec.emit(&r, &q, &s2);
        ck_assert(s1.decoded == s2.decoded && s1.q == s2.q && s1.kv_write == s2.kv_write);
        done = policy_advance(&policy_linear_spec, &r, &q, &s1);
        if (!policy_advance(&policy_linear_spec, &other, &q, &s3))
            continue;
        policy_req_init(&other, &q); /* (finished first: again from its start) */
    }
    gsl_rng_free(q.rng);
}
END_TEST

/* DFlash by hand (P 16, G 10, B 4 = --dflash-block, every draft matching: --dflash-accept 1e6): the
 * prompt's forward with one logit row, then a cycle a step, the target verifying the block (its K/V
 * written, a logit row a position) over the committed K/V and committing all of it, the last block the
 * 2 left; at --dflash-accept 1 no draft matches: a position a cycle, the block sliding by one. */
START_TEST(dflash_shapes)
{
    struct policy_cfg pc = {.block_size = 32};
    pc.p[0] = 4, pc.p[1] = 5, pc.p[2] = 1e6;
    run_life(&policy_dflash, &pc, 16, 10, 10, 1, &L);
    ck_assert_int_eq(L.n, 4);
    expect_seg(&L.seg[0], PHASE_PREFILL, 16, 0, 16, 1, 0);
    expect_seg(&L.seg[1], PHASE_BLOCK, 4, 16, 4, 4, 4);
    expect_seg(&L.seg[2], PHASE_BLOCK, 4, 20, 4, 4, 4);
    expect_seg(&L.seg[3], PHASE_BLOCK, 2, 24, 2, 2, 2);
    pc.p[2] = 1;
    run_life(&policy_dflash, &pc, 16, 10, 10, 1, &L);
    ck_assert_int_eq(L.n, 11);
    for (int j = 0; j < 10; j++) {
        const int w = TS_MIN(4, 10 - j);
        expect_seg(&L.seg[1 + j], PHASE_BLOCK, w, 16 + j, w, w, 1);
    }
    ck_assert_int_eq(policy_dflash.drafter_layers(&pc), 5);
    ck_assert_ptr_null(policy_ar.drafter_layers); /* (no other policy drafts) */
}
END_TEST

/* DFlash's commits against the law of a run of matches: each draft matching with probability p until
 * the first miss, a cycle commits k >= 1 with P(k) = (1 - p) p^(k-1), clamped at the block B, so its mean
 * is (1 - p^B) / (1 - p), which --dflash-accept (tau) sets. In blocks too wide to clamp (B 4096) at tau
 * 5: p = 4/5, the mean 5 and a fifth of the cycles committing only the target's token, within four
 * standard errors; at the published block of 16 and GSM8K's tau 6.55: no cycle commits more than 16,
 * the mean is 6.55 and the share of full blocks p^15 with the p solved here by hand from the mean. */
START_TEST(dflash_commits_a_run_of_matches)
{
    struct policy_cfg pc = {.block_size = 32};
    pc.p[0] = 4096, pc.p[1] = 5, pc.p[2] = 5;
    run_life(&policy_dflash, &pc, 64, 15000, 15000, 1, &L);
    int cycles = 0, ones = 0, full = 0;
    double sum = 0;
    for (int j = 1; j + 1 < L.n; j++) {
        ck_assert(L.seg[j].decoded >= 1 && L.seg[j].decoded <= L.seg[j].q);
        cycles++, ones += L.seg[j].decoded == 1, sum += L.seg[j].decoded;
    }
    ck_assert_int_gt(cycles, 2500);
    ck_assert_msg(fabs(sum / cycles - 5) < 4 * sqrt(20.0 / cycles), "mean %g over %d cycles", sum / cycles, cycles);
    ck_assert_msg(fabs((double)ones / cycles - 0.2) < 4 * sqrt(0.2 * 0.8 / cycles), "P(1) %g", (double)ones / cycles);
    pc.p[0] = 16, pc.p[2] = 6.55;
    run_life(&policy_dflash, &pc, 64, 15000, 15000, 1, &L);
    double p = 0.5, step = 0.25; /* (1 - p^16) / (1 - p) = 6.55, by halving the step */
    for (int i = 0; i < 50; i++, step /= 2)
        p += (1 - pow(p, 16)) / (1 - p) < 6.55 ? step : -step;
    cycles = 0, sum = 0, full = 0;
    double sq = 0;
    for (int j = 1; j + 1 < L.n; j++) {
        ck_assert(L.seg[j].decoded >= 1 && L.seg[j].decoded <= 16);
        cycles++, sum += L.seg[j].decoded, sq += (double)L.seg[j].decoded * L.seg[j].decoded, full += L.seg[j].decoded == 16;
    }
    const double mean = sum / cycles, sd = sqrt(sq / cycles - mean * mean), pf = pow(p, 15);
    ck_assert_msg(fabs(mean - 6.55) < 4 * sd / sqrt(cycles), "mean %g over %d cycles, tau 6.55", mean, cycles);
    ck_assert_msg(fabs((double)full / cycles - pf) < 4 * sqrt(pf * (1 - pf) / cycles), "full blocks %g, p^15 %g",
                  (double)full / cycles, pf);
    /* a block of 4, where the cap binds hardest: tau 2.5 is 1 + p + p^2 + p^3 at p = 0.6914 (by hand, to 4
     * places: 2.4999), so a cycle commits all 4 with probability p^3 = 0.3305 */
    pc.p[0] = 4, pc.p[2] = 2.5;
    run_life(&policy_dflash, &pc, 64, 15000, 15000, 1, &L);
    cycles = 0, sum = 0, full = 0;
    for (int j = 1; j + 1 < L.n; j++)
        cycles++, sum += L.seg[j].decoded, full += L.seg[j].decoded == 4;
    ck_assert_msg(fabs(sum / cycles - 2.5) < 4 * 1.2 / sqrt(cycles), "block 4: mean %g, tau 2.5", sum / cycles);
    ck_assert_msg(fabs((double)full / cycles - 0.3305) < 4 * sqrt(0.3305 * 0.6695 / cycles), "block 4: full %g, p^3 0.3305",
                  (double)full / cycles);
}
END_TEST

/* Diffulex's multi_bd as D2F's options. --d2f-pad 1: each step after the first runs the buffer's
 * --d2f-flight blocks of rows, within the sequence (q + kv <= P + G), the padding rows with their logits,
 * and decodes what the unpadded step decodes. --d2f-step-count 1 (fixed:3, blocks joining at once): a
 * step decodes the decode model's 3 over all its blocks together, the earliest first, so every step
 * but the last commits exactly 3; each block drawing its own commits more. */
START_TEST(d2f_buffer_and_step_count)
{
    struct policy_cfg pc = {.block_size = 32};
    pc.p[0] = 0.1, pc.p[1] = 0.95, pc.p[2] = 0, pc.p[3] = 2, pc.p[4] = 0, pc.p[5] = 0;
    struct life *plain = xmalloc(sizeof *plain);
    run_life(&policy_d2f, &pc, 16, 96, 96, 1, plain);
    pc.p[4] = 1;
    run_life(&policy_d2f, &pc, 16, 96, 96, 1, &L);
    ck_assert_int_eq(L.n, plain->n);
    int padded = 0;
    for (int j = 0; j < L.n; j++) {
        const struct segment *a = &plain->seg[j], *b = &L.seg[j];
        const int want = j == 0 ? a->q : TS_MAX(a->q, TS_MIN(64, 16 + 96 - a->kv));
        ck_assert_msg(b->q == want && b->kv == a->kv && b->decoded == a->decoded && b->kv_write == a->kv_write &&
                          b->logit_rows - a->logit_rows == b->q - a->q,
                      "step %d: q %d (unpadded %d, kv %d)", j, b->q, a->q, a->kv);
        padded += b->q > a->q;
    }
    ck_assert_int_gt(padded, 2); /* (the first block alone until it is a tenth decoded) */
    free(plain);
    struct policy_cfg sc = {.block_size = 32};
    sc.p[0] = 0, sc.p[1] = 0, sc.p[2] = 1, sc.p[3] = 12, sc.p[4] = 0, sc.p[5] = 1;
    run_life(&policy_d2f, &sc, 16, 96, 96, 3, &L);
    int total = 0;
    for (int j = 0; j < L.n; j++) {
        ck_assert_msg(L.seg[j].decoded == (j + 1 < L.n ? 3 : 96 - total), "step %d decoded %d", j, L.seg[j].decoded);
        total += L.seg[j].decoded;
    }
    ck_assert_int_eq(total, 96);
    sc.p[5] = 0;
    run_life(&policy_d2f, &sc, 16, 96, 96, 3, &L);
    int more = 0;
    for (int j = 0; j < L.n; j++)
        more += L.seg[j].decoded > 3;
    ck_assert_int_gt(more, 0);
}
END_TEST

/* D2F against an oracle written as its code keeps its blocks: a list of blocks, each active, waiting
 * for the cache or cached, with its decoded count and whether it is fully activated. Random shapes
 * and thresholds, a fixed:k decoder and semi-activated blocks decoding all (1) or nothing (0) of it,
 * so that every step is determined; at most 12 blocks, so that tessera's bound never binds. */
enum { D2F_ACTIVE, D2F_TO_CACHE, D2F_CACHED };
START_TEST(d2f_matches_its_block_list)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(g, 17);
    for (int trial = 0; trial < 200; trial++) {
        const int bs = 1 + (int)gsl_rng_uniform_int(g, 16), nb = 1 + (int)gsl_rng_uniform_int(g, 12);
        const int G = (nb - 1) * bs + 1 + (int)gsl_rng_uniform_int(g, bs), P = 1 + (int)gsl_rng_uniform_int(g, 300);
        const int k = 1 + (int)gsl_rng_uniform_int(g, 5), semi = (int)gsl_rng_uniform_int(g, 2);
        struct policy_cfg pc = {.block_size = bs};
        pc.p[0] = gsl_rng_uniform(g), pc.p[1] = gsl_rng_uniform(g), pc.p[2] = semi, pc.p[3] = 12;
        run_life(&policy_d2f, &pc, P, G, G, k, &L);
        int len[12], done[12] = {0}, state[12], full[12] = {0}, n = 0, prompt = D2F_TO_CACHE, step = 0;
        for (int b = 0; b < nb; b++)
            len[b] = b < nb - 1 ? bs : G - (nb - 1) * bs;
        for (int left = G; left > 0; step++) {
            ck_assert_int_lt(step, L.n);
            const double last = n == 0 ? 1.0 : (double)done[n - 1] / len[n - 1];
            if (n < nb && last >= pc.p[0])
                state[n++] = D2F_ACTIVE;
            for (int b = 0; b < n; b++)
                full[b] |= b == 0 || (double)done[b - 1] / len[b - 1] >= pc.p[1];
            int q = prompt == D2F_CACHED ? 0 : P, kv = prompt == D2F_CACHED ? P : 0, w = prompt == D2F_TO_CACHE ? P : 0;
            int dec = 0;
            for (int b = 0; b < n; b++) {
                q += state[b] == D2F_CACHED ? 0 : len[b];
                kv += state[b] == D2F_CACHED ? len[b] : 0;
                w += state[b] == D2F_TO_CACHE ? len[b] : 0;
                const int m = TS_MIN(k, len[b] - done[b]);
                const int d = state[b] == D2F_ACTIVE && (full[b] || semi) ? m : 0;
                done[b] += d, dec += d;
            }
            const struct segment *s = &L.seg[step];
            ck_assert_int_eq(s->q, q);
            ck_assert_int_eq(s->kv, kv);
            ck_assert_int_eq(s->kv_write, w);
            ck_assert_int_eq(s->decoded, dec);
            left -= dec;
            prompt = D2F_CACHED;
            bool earlier_active = false;
            for (int b = 0; b < n; b++) {
                if (state[b] == D2F_TO_CACHE)
                    state[b] = D2F_CACHED;
                else if (state[b] == D2F_ACTIVE && done[b] == len[b] && !earlier_active)
                    state[b] = D2F_TO_CACHE;
                earlier_active |= state[b] == D2F_ACTIVE;
            }
        }
        ck_assert_int_eq(step, L.n);
    }
    gsl_rng_free(g);
}
END_TEST

/* D2F's semi-activated blocks decode the share --d2f-semi of the decode model's count, rounded
 * stochastically: unbiased, drawn afresh each step. Two blocks of 2,000 under fixed:1, tau_add one
 * position's share, tau_act 1: block 0 decodes one position a step for 2,000 steps; block 1 joins at
 * the second and, semi-activated until block 0 is finished, decodes one position with probability 0.3
 * in each of the 1,999 steps before: Binomial(1999, 0.3), 599.7 within 5 standard deviations (102). */
START_TEST(d2f_semi_share_unbiased)
{
    struct policy_cfg pc = {.block_size = 2000};
    pc.p[0] = 0.0004, pc.p[1] = 1, pc.p[2] = 0.3, pc.p[3] = 12;
    run_life(&policy_d2f, &pc, 10, 4000, 4000, 1, &L);
    int semi = 0;
    for (int i = 1; i < 2000; i++)
        semi += L.seg[i].decoded - 1;
    const double mean = 1999 * 0.3, sd = sqrt(1999 * 0.3 * 0.7);
    ck_assert_msg(fabs(semi - mean) < 5 * sd, "%d decoded semi-activated, %.1f expected", semi, mean);
    ck_assert_int_eq(L.n, 2000 + (2000 - semi)); /* then block 1's rest, one a step */
}
END_TEST

/* A step after a preemption by recompute (need_refresh) reads no K/V beyond the prompt cache's (none
 * here): the request's cache is gone, whatever it held. Every policy of the table at its defaults,
 * D2F's pipelined blocks and DPad over its prefix and dual caches among them, stepped partway into a
 * request (P = 100, G = 96, fixed:2), then dropped; and the step after it, where all its layers run
 * its rows, reads no more than the recompute wrote. */
START_TEST(recompute_reads_no_cache)
{
    const struct policy_ops *dpad = policy_find("dpad");
    struct {
        const struct policy_ops *po;
        double cache; /* DPad's --dpad-cache, else -1 */
    } cases[64];
    int n = 0;
    for (const struct policy_ops *po; n < 60 && (po = policy_get(n)); n++)
        cases[n].po = po, cases[n].cache = -1;
    cases[n].po = dpad, cases[n++].cache = 1;
    cases[n].po = dpad, cases[n++].cache = 2;
    const struct decode_model dm = {.kind = DECODE_FIXED, .k = 2};
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    for (int k = 0; k < n; k++) {
        const struct policy_ops *po = cases[k].po;
        struct policy_cfg pc = {.block_size = 32, .dm = &dm, .rng = g};
        struct ts_err err;
        ck_assert_msg(params_resolve(po->params, po->num_params, NULL, pc.p, &err) == 0, "%s", err.msg);
        if (cases[k].cache >= 0)
            pc.p[3] = cases[k].cache;
        struct request r = {.P = 100, .G = 96, .C = 96, .seed = 77};
        policy_req_init(&r, &pc);
        struct segment s;
        for (int i = 0; i < 7; i++) {
            memset(&s, 0, sizeof s);
            po->emit(&r, &pc, &s);
            if (!(po->caps & POLICY_DECIDES))
                s.decoded = decode_tokens(&dm, &r);
            ck_assert(!policy_advance(po, &r, &pc, &s));
        }
        r.need_refresh = true;
        memset(&s, 0, sizeof s);
        po->emit(&r, &pc, &s);
        ck_assert_msg(s.kv == 0, "%s (cache %g): %d keys read after a recompute", po->name, cases[k].cache, s.kv);
        const int32_t wrote = s.kv_write;
        if (!(po->caps & POLICY_DECIDES))
            s.decoded = decode_tokens(&dm, &r);
        policy_advance(po, &r, &pc, &s);
        memset(&s, 0, sizeof s);
        po->emit(&r, &pc, &s);
        if (s.q_front == 0) /* (FOCUS's later layers read the evicted rows its front layers ran) */
            ck_assert_msg(s.kv <= wrote, "%s (cache %g): %d keys read, %d written", po->name, cases[k].cache, s.kv,
                          wrote);
    }
    gsl_rng_free(g);
}
END_TEST

/* SparseD by hand: P = 300, G = 128, one position a step, skip 0.2, select 0.3, blocks of 128.
 * Steps 0-25 are dense; step 26 (SparseD's int(0.2 x 128) + 1) builds the pattern, its scores priced
 * as half pairs over all 428 keys and the response's 44 (past the prompt's 3 blocks): 428 + 236 = 664
 * keys a row; the later steps attend to the top int(4 x 0.3) + 1 = 2 blocks of pass 1 (both in the
 * prompt at share 1) and int(1 x 0.3) + 1 = 1 of the response's: 384 keys. Every step runs the whole
 * sequence, no cache. */
START_TEST(sparsed_shapes)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 0.2, pc.p[1] = 0.3, pc.p[2] = 128, pc.p[3] = 1;
    run_life(&policy_sparsed, &pc, 300, 128, 128, 1, &L);
    ck_assert_int_eq(L.n, 128);
    for (int i = 0; i < L.n; i++) {
        expect_seg(&L.seg[i], PHASE_FULL, 428, 0, 0, 428, 1);
        ck_assert_int_eq(L.seg[i].attn_keys, i < 26 ? 0 : i == 26 ? 664 : 384);
    }
    /* pass 1's blocks none in the prompt: the response's block alone; a longer skip moves the pattern */
    pc.p[3] = 0, pc.p[0] = 0.5;
    run_life(&policy_sparsed, &pc, 300, 128, 128, 1, &L);
    for (int i = 0; i < L.n; i++)
        ck_assert_int_eq(L.seg[i].attn_keys, i < 65 ? 0 : i == 65 ? 664 : 128);
    /* four positions a step: the step starting with at least 26 decoded (the 7th, at 28) builds it */
    pc.p[3] = 1, pc.p[0] = 0.2;
    run_life(&policy_sparsed, &pc, 300, 128, 128, 4, &L);
    ck_assert_int_eq(L.n, 32);
    for (int i = 0; i < L.n; i++)
        ck_assert_int_eq(L.seg[i].attn_keys, i < 7 ? 0 : i == 7 ? 664 : 384);
    /* a short prompt: pass 1 keeps its one block at most (of its top 3 of 9), pass 2 the top 3 of the
     * response's 8: 4 blocks */
    pc.p[0] = 0.2, pc.p[1] = 0.3;
    run_life(&policy_sparsed, &pc, 100, 1000, 1000, 8, &L);
    ck_assert_int_eq(L.seg[L.n - 1].attn_keys, 512);
    /* a pattern that keeps every block prices the whole sequence */
    pc.p[1] = 1;
    run_life(&policy_sparsed, &pc, 300, 128, 128, 4, &L);
    ck_assert_int_eq(L.seg[L.n - 1].attn_keys, 428);
    /* a response inside the last block (400 + 28 of 4 blocks): its first block is the last (SparseD's
     * loop stops there), pass 2's 44 rows and its one block kept beside pass 1's top 2 */
    pc.p[1] = 0.3;
    run_life(&policy_sparsed, &pc, 400, 28, 28, 4, &L);
    ck_assert_int_eq(L.seg[2].attn_keys, 428 + (428 + 44) / 2);
    ck_assert_int_eq(L.seg[L.n - 1].attn_keys, 3 * 128);
    /* every block selected, none of pass 1's in the prompt: pass 2 keeps the response's one block
     * (min(n_g, int(n_g x 1) + 1) = 1 of n_g = 1), 128 keys */
    pc.p[1] = 1, pc.p[3] = 0;
    run_life(&policy_sparsed, &pc, 300, 128, 128, 4, &L);
    ck_assert_int_eq(L.seg[L.n - 1].attn_keys, 128);
}
END_TEST

/* Prophet's early commit: the step that brings a request to F of its positions commits the rest */
START_TEST(early_commit_finishes_the_request)
{
    struct policy_cfg pc = PC;
    pc.early_commit = 0.5;
    run_life(&policy_vanilla, &pc, 100, 64, 64, 1, &L); /* one a step: the 32nd reaches 32 of 64 */
    ck_assert_int_eq(L.n, 32);
    run_life(&policy_dual, &pc, 100, 64, 64, 5, &L); /* 5 a step: 30 after 6, the block's 2 left in the 7th */
    ck_assert_int_eq(L.n, 7);
    pc.early_commit = 0.25;
    run_life(&policy_block, &pc, 100, 64, 64, 8, &L); /* a prefill decodes nothing: then 8, 16 */
    ck_assert_int_eq(L.n, 3);
    pc.early_commit = 0;
    run_life(&policy_block, &pc, 100, 64, 64, 8, &L);
    ck_assert_int_eq(L.n, 9);
    /* with --early-stop, F of the positions the request will decode: 40 of content end it after block 1
     * (64 positions), so F = 0.45 commits at 29 */
    pc.early_commit = 0.45, pc.early_stop = true;
    run_life(&policy_dual, &pc, 100, 256, 40, 1, &L);
    ck_assert_int_eq(L.n, 29);
}
END_TEST

/* d2Cache by hand: one block of 64 after a prompt of 100, fixed:1, k = 32, one rollout position. The
 * first forward runs all 164 rows; step i runs min(32, 64 - i) masked rows, the one the step before
 * decoded and the rollout's one, over the other 164 - q. With fixed:4, 4 decoded rows. */
START_TEST(d2cache_shapes)
{
    struct policy_cfg pc = {.block_size = 64};
    pc.p[0] = 32, pc.p[1] = 1;
    run_life(&policy_d2cache, &pc, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    expect_seg(&L.seg[0], PHASE_FULL, 164, 0, 164, 164, 1);
    for (int i = 1; i < 64; i++) {
        const int q = (64 - i < 32 ? 64 - i : 32) + 2;
        expect_seg(&L.seg[i], PHASE_REUSE, q, 164 - q, q, q, 1);
    }
    pc.mask_only = true;
    run_life(&policy_d2cache, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 34, 130, 34, 32, 1);
    expect_seg(&L.seg[63], PHASE_REUSE, 3, 161, 3, 1, 1);
    pc.mask_only = false;
    run_life(&policy_d2cache, &pc, 100, 64, 64, 4, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 37, 127, 37, 37, 4);
    /* a nucleus of a quarter of the others: step 1 chooses 32 of 164 - 33, step 63 40 of 164 - 2; a
     * share whose count falls below --d2-rollout keeps that one */
    pc.p[2] = 0.25;
    run_life(&policy_d2cache, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 65, 99, 65, 65, 1);
    expect_seg(&L.seg[63], PHASE_REUSE, 42, 122, 42, 42, 1);
    pc.p[2] = 0.001;
    run_life(&policy_d2cache, &pc, 100, 64, 64, 1, &L);
    expect_seg(&L.seg[1], PHASE_REUSE, 34, 130, 34, 34, 1);
    pc.p[2] = 0;
    /* its rows are no window: engine generate cannot place them (its steps run live by shape) */
    ck_assert_ptr_nonnull(policy_drive_lacks(&policy_d2cache));
    ck_assert_ptr_null(policy_drive_lacks(&policy_dpad));
}
END_TEST

/* Elastic-Cache by hand: P = 100, G = 64, fixed:1, a window of 16, one tracked token. The first forward
 * runs all 164 rows; step i runs the tracked one, the one decoded and min(16, 64 - i) masked. Refreshing
 * every 4 steps with 16 layers kept, steps 4, 8, ... run those rows through 16 layers, then all 164. */
START_TEST(elastic_shapes)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 16, pc.p[1] = 1, pc.p[2] = 0, pc.p[3] = 0, pc.p[4] = 16;
    run_life(&policy_elastic, &pc, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 64);
    expect_seg(&L.seg[0], PHASE_FULL, 164, 0, 164, 164, 1);
    for (int i = 1; i < 64; i++) {
        const int q = 2 + (64 - i < 16 ? 64 - i : 16);
        expect_seg(&L.seg[i], PHASE_REUSE, q, 164 - q, q, q, 1);
        ck_assert_int_eq(L.seg[i].q_front, 0);
    }
    pc.p[2] = 4;
    run_life(&policy_elastic, &pc, 100, 64, 64, 1, &L);
    for (int i = 1; i < 64; i++) {
        const int q = 2 + (64 - i < 16 ? 64 - i : 16);
        if (i % 4 == 0) {
            expect_seg(&L.seg[i], PHASE_REFRESH, 164, 0, 164, 164, 1);
            ck_assert(L.seg[i].q_front == q && L.seg[i].kv_front == 164 - q && L.seg[i].kv_write_front == q);
        } else {
            expect_seg(&L.seg[i], PHASE_REUSE, q, 164 - q, q, q, 1);
        }
    }
    /* a share S of the cached steps refreshing: each prefix of n of them holds floor(n S), whatever the
     * step's shape (an oracle counting them apart from the policy's own test) */
    pc.p[2] = 0;
    for (double share = 0.25; share <= 1.0; share += 0.125) {
        pc.p[3] = share;
        run_life(&policy_elastic, &pc, 100, 64, 64, 1, &L);
        int refreshed = 0;
        for (int i = 1; i < 64; i++) {
            const int q = 2 + (64 - i < 16 ? 64 - i : 16);
            refreshed += L.seg[i].phase == PHASE_REFRESH;
            ck_assert_int_eq(refreshed, (int)floor(i * share + 1e-9));
            ck_assert_int_eq(L.seg[i].phase == PHASE_REFRESH ? L.seg[i].q_front : L.seg[i].q, q);
        }
    }
    pc.p[3] = 0;
    struct step_desc sd = {0};
    policy_step_knobs(&policy_elastic, &pc, model_find("llada-8b"), &sd);
    ck_assert_int_eq(sd.front_layers, 16);
    /* each token's query and layer input a layer are cached beside its K/V */
    ck_assert_int_eq(policy_elastic.token_bytes(model_find("llada-8b")), 2LL * 32 * 4096 * 2);
    /* a refresh by share recomputes the layers past --ec-depth as one by interval does: LLaDA-8B's 32
     * layers leave none at depth 32, 31 leaves one; without refreshes any depth fits */
    struct ts_err err;
    pc.p[2] = 0, pc.p[3] = 0.5, pc.p[4] = 32;
    ck_assert_int_ne(policy_elastic.check_model(&pc, model_find("llada-8b"), &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "--ec-depth 32"));
    pc.p[4] = 31;
    ck_assert_int_eq(policy_elastic.check_model(&pc, model_find("llada-8b"), &err), 0);
    pc.p[3] = 0, pc.p[4] = 32;
    ck_assert_int_eq(policy_elastic.check_model(&pc, model_find("llada-8b"), &err), 0);
}
END_TEST

/* HERALD by hand: P = 100, G = 96 in blocks of 32, fixed:1, budget 0.1. Block 0 selects ceil(10) of
 * the prompt's 100 offloaded tokens at its first step (their fetch and the host's scoring of all
 * 100); block 1's first step commits block 0 (the window, kept on the GPU) and selects among the same
 * 100; its later steps attend to the 10 and the window's 32; block 2 selects among the prompt and
 * block 0, 132 tokens: 14. */
START_TEST(herald_shapes)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 0.1, pc.p[1] = 200, pc.p[2] = 1, pc.p[3] = 0;
    run_life(&policy_herald, &pc, 100, 96, 96, 1, &L);
    ck_assert_int_eq(L.n, 1 + 96);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    for (int i = 1; i <= 32; i++) {
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 10, 0, 32, 1);
        ck_assert_int_eq(L.seg[i].host_kv, i == 1 ? 10 : 0);
        ck_assert_int_eq(L.seg[i].host_scan, i == 1 ? 100 : 0);
    }
    expect_seg(&L.seg[33], PHASE_BLOCK, 64, 10, 32, 32, 1);
    ck_assert_int_eq(L.seg[33].host_kv, 10);
    ck_assert_int_eq(L.seg[33].host_scan, 100);
    for (int i = 34; i <= 64; i++) {
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 42, 0, 32, 1);
        ck_assert_int_eq(L.seg[i].host_kv + L.seg[i].host_scan, 0);
    }
    expect_seg(&L.seg[65], PHASE_BLOCK, 64, 14, 32, 32, 1);
    ck_assert_int_eq(L.seg[65].host_kv, 14);
    ck_assert_int_eq(L.seg[65].host_scan, 132);
    expect_seg(&L.seg[66], PHASE_BLOCK, 32, 46, 0, 32, 1);
    /* the knobs: the link's bandwidth (0: the card's), the scan's, the overlap */
    struct step_desc sd = {0};
    pc.p[3] = 3; /* c2c */
    policy_step_knobs(&policy_herald, &pc, model_find("sdar-8b"), &sd);
    ck_assert_int_eq(sd.host_link_mbs, 450000);
    ck_assert_int_eq(sd.host_scan_mbs, 200000);
    ck_assert(sd.host_overlap);
    ck_assert_int_eq(sd.attn_block, 32);
    pc.p[2] = 0; /* the scoring and fetch before the block's first step */
    policy_step_knobs(&policy_herald, &pc, model_find("sdar-8b"), &sd);
    ck_assert(!sd.host_overlap);
    /* one block: no window ever joins the selection, the peak is the prompt's ceil(0.1 x 100) */
    struct request one = {.P = 100, .G = 32, .C = 32};
    policy_req_init(&one, &pc);
    ck_assert_int_eq(policy_herald.kv_peak_tokens(&one, &pc), 10);
    /* the link names it declares are the table's, in its order */
    const struct param_spec *link = &policy_herald.params[3];
    for (int i = 0; link->choices[i]; i++)
        ck_assert_str_eq(link->choices[i], host_link_get(i)->name);
}
END_TEST

/* HERALD against an oracle that keeps each token's place (the host, the GPU's window, being
 * written) and the GPU's selection, over random shapes, budgets and decode counts, a preemption by
 * recompute in some: every step's rows, keys read, keys written, tokens fetched and keys scored, and
 * the K/V the GPU holds, within the policy's peak. */
enum { HR_NONE, HR_HOST, HR_WINDOW };
START_TEST(herald_matches_its_token_places)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(g, 23);
    static uint8_t place[4096];
    for (int trial = 0; trial < 300; trial++) {
        const int bs = 1 + (int)gsl_rng_uniform_int(g, 40), nb = 1 + (int)gsl_rng_uniform_int(g, 8);
        const int G = (nb - 1) * bs + 1 + (int)gsl_rng_uniform_int(g, bs), P = (int)gsl_rng_uniform_int(g, 900);
        const int k = 1 + (int)gsl_rng_uniform_int(g, 6), drop_at = (int)gsl_rng_uniform_int(g, 3 * nb + 3);
        struct policy_cfg pc = {.block_size = bs};
        pc.p[0] = gsl_rng_uniform_pos(g), pc.p[1] = 100, pc.p[2] = 1, pc.p[3] = 0;
        struct request r;
        memset(&r, 0, sizeof r);
        r.P = P, r.G = G, r.C = G;
        policy_req_init(&r, &pc);
        memset(place, HR_NONE, sizeof place);
        int sel = 0, prefilled = 0, block = 0, done = 0, commit = -1, need_select = 1, steps = 0, dropped = 0;
        int64_t most = 0; /* the most K/V the GPU holds for a step */
        for (bool finished = false; !finished; steps++) {
            if (steps == drop_at && prefilled) { /* preempted: its cache dropped, the prefill recomputes */
                r.need_refresh = true, dropped = 1;
                memset(place, HR_NONE, sizeof place);
                prefilled = 0, commit = -1, sel = 0;
            }
            struct segment s = {0};
            policy_herald.emit(&r, &pc, &s);
            const int len = block < nb - 1 ? bs : G - (nb - 1) * bs;
            if (!prefilled) {
                const int upto = P + block * bs;
                ck_assert_int_eq(s.phase, PHASE_PREFILL);
                ck_assert_int_eq(s.q, upto);
                for (int i = 0; i < upto; i++)
                    place[i] = HR_HOST;
                prefilled = 1, need_select = 1;
            } else {
                if (commit >= 0) /* the committing block becomes the window: the old one goes to the host */
                    for (int i = 0; i < P + G; i++)
                        if (place[i] == HR_WINDOW)
                            place[i] = HR_HOST;
                int host = 0, window = 0;
                for (int i = 0; i < P + G; i++)
                    host += place[i] == HR_HOST, window += place[i] == HR_WINDOW;
                const int scan = need_select ? host : 0;
                if (need_select)
                    sel = (int)ceil(pc.p[0] * host - 1e-9), sel = sel > host ? host : sel;
                const int committing = commit >= 0 ? bs : 0;
                ck_assert_int_eq(s.phase, PHASE_BLOCK);
                ck_assert_int_eq(s.q, len + committing);
                ck_assert_int_eq(s.kv, sel + window);
                ck_assert_int_eq(s.kv_write, committing);
                ck_assert_int_eq(s.host_kv, need_select ? sel : 0);
                ck_assert_int_eq(s.host_scan, scan);
                if (commit >= 0) {
                    for (int i = 0; i < bs; i++)
                        place[P + commit * bs + i] = HR_WINDOW;
                    commit = -1;
                }
                need_select = 0;
            }
            s.decoded = s.phase == PHASE_PREFILL ? 0 : TS_MIN(k, len - done);
            ck_assert_int_le(policy_herald.kv_tokens(&r, &pc), policy_herald.kv_peak_tokens(&r, &pc));
            most = TS_MAX(most, policy_herald.kv_tokens(&r, &pc));
            finished = policy_advance(&policy_herald, &r, &pc, &s);
            done += s.decoded;
            if (done == len && !finished) {
                commit = block++, done = 0, need_select = 1;
            }
            int held = 0; /* what the GPU holds for the next step: the window and the selection */
            for (int i = 0; i < P + G; i++)
                held += place[i] == HR_WINDOW;
            if (!finished && prefilled && !need_select)
                ck_assert_int_eq(policy_herald.kv_tokens(&r, &pc), sel + held);
        }
        ck_assert_int_eq(block, nb - 1);
        if (!dropped) /* its peak is what a life holds at most (a drop can skip the last block's window) */
            ck_assert_int_eq(policy_herald.kv_peak_tokens(&r, &pc), most);
    }
    gsl_rng_free(g);
}
END_TEST

/* dKV-Cache-Decode by hand: P = 100, G = 64 in blocks of 32, fixed:4, a refresh every 4 steps. Each
 * block's step 0 runs the whole sequence uncached, step 1 again caching the prompt and the decoded,
 * step 4 again; the others the masked positions and the 4 just decoded over the cache of the rest,
 * writing those 4. */
START_TEST(dkv_shapes)
{
    struct policy_cfg pc = PC;
    pc.p[0] = 4;
    run_life(&policy_dkv, &pc, 100, 64, 64, 4, &L);
    ck_assert_int_eq(L.n, 16);
    expect_seg(&L.seg[0], PHASE_FULL, 164, 0, 0, 164, 4);
    expect_seg(&L.seg[1], PHASE_REFRESH, 164, 0, 104, 164, 4);
    expect_seg(&L.seg[2], PHASE_REUSE, 60, 104, 4, 60, 4);
    expect_seg(&L.seg[3], PHASE_REUSE, 56, 108, 4, 56, 4);
    expect_seg(&L.seg[4], PHASE_REFRESH, 164, 0, 116, 164, 4);
    expect_seg(&L.seg[5], PHASE_REUSE, 48, 116, 4, 48, 4);
    expect_seg(&L.seg[7], PHASE_REUSE, 40, 124, 4, 40, 4);
    expect_seg(&L.seg[8], PHASE_FULL, 164, 0, 0, 164, 4); /* the next block: its cache starts empty */
    expect_seg(&L.seg[9], PHASE_REFRESH, 164, 0, 136, 164, 4);
    expect_seg(&L.seg[10], PHASE_REUSE, 28, 136, 4, 28, 4);
    /* preempted mid-block, its cache dropped: the next step runs the whole sequence and caches the decoded */
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = 100, r.G = 64, r.C = 64;
    policy_req_init(&r, &pc);
    r.decoded_total = r.decoded_in_block = 12, r.steps_in_block = 3, r.need_refresh = true;
    struct segment g = {0};
    policy_dkv.emit(&r, &pc, &g);
    expect_seg(&g, PHASE_REFRESH, 164, 0, 112, 164, 0);
}
END_TEST

/* dKV-Cache-Decode against an oracle that keeps the cache as its code does, a set of positions: empty
 * at a block's start, every non-masked position on a full step from the block's second on, the
 * previous step's decoded added on the others, whose rows are the positions outside it. Random shapes,
 * refresh intervals and decode counts. */
START_TEST(dkv_matches_its_cache)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(g, 29);
    for (int trial = 0; trial < 300; trial++) {
        const int bs = 1 + (int)gsl_rng_uniform_int(g, 40), nb = 1 + (int)gsl_rng_uniform_int(g, 6);
        const int G = nb * bs, P = 1 + (int)gsl_rng_uniform_int(g, 300), k = 1 + (int)gsl_rng_uniform_int(g, 8);
        struct policy_cfg pc = {.block_size = bs};
        pc.p[0] = 1 + (int)gsl_rng_uniform_int(g, 10);
        run_life(&policy_dkv, &pc, P, G, G, k, &L);
        int cached = 0, decoded = 0, last = 0, i = 0, done_in_block = 0;
        for (int step = 0; step < L.n; step++) {
            const struct segment *s = &L.seg[step];
            /* its model's layers take the cache where "i > 1 and i % cache_reloading_step != 0" */
            bool cached_branch = i > 1;
            cached_branch = cached_branch && i % (int)pc.p[0] != 0;
            const bool full = !cached_branch;
            if (i == 0)
                cached = 0; /* past_qkv = None at the block's start */
            if (full) {
                ck_assert_int_eq(s->q, P + G);
                ck_assert_int_eq(s->kv, 0);
                ck_assert_int_eq(s->kv_write, i == 0 ? 0 : P + decoded);
                cached = i == 0 ? 0 : P + decoded;
            } else {
                cached += last; /* the step before's decoded, written now */
                ck_assert_int_eq(s->q, P + G - cached + last);
                ck_assert_int_eq(s->kv, cached - last);
                ck_assert_int_eq(s->kv_write, last);
            }
            last = s->decoded;
            decoded += s->decoded, done_in_block += s->decoded, i++;
            if (done_in_block == bs)
                i = 0, done_in_block = 0;
        }
        ck_assert_int_eq(decoded, G);
    }
    gsl_rng_free(g);
}
END_TEST

START_TEST(block_shapes)
{
    run_life(&policy_block, &PC, 100, 96, 96, 1, &L);
    ck_assert_int_eq(L.n, 1 + 96);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    for (int i = 1; i <= 32; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 100, 0, 32, 1);
    /* the first step of block 1 commits block 0: q = 2*Bs over the prompt */
    expect_seg(&L.seg[33], PHASE_BLOCK, 64, 100, 32, 32, 1);
    for (int i = 34; i <= 64; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 32, 132, 0, 32, 1);
    expect_seg(&L.seg[65], PHASE_BLOCK, 64, 132, 32, 32, 1);
    expect_seg(&L.seg[66], PHASE_BLOCK, 32, 164, 0, 32, 1);
}
END_TEST

/* autoregressive decoding: a prefill, then one row a step over a cache that grows by one, one token
 * committed a step even where the decode model would commit more; after a drop, the prefill covers
 * the tokens generated */
START_TEST(ar_shapes)
{
    run_life(&policy_ar, &PC, 100, 96, 96, 4, &L);
    ck_assert_int_eq(L.n, 1 + 96);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    for (int i = 1; i <= 96; i++)
        expect_seg(&L.seg[i], PHASE_BLOCK, 1, 100 + i - 1, 1, 1, 1);
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = 100, r.G = 96, r.C = 96;
    policy_req_init(&r, &PC);
    struct segment g = {0};
    policy_ar.emit(&r, &PC, &g);
    policy_advance(&policy_ar, &r, &PC, &g);
    for (int i = 0; i < 10; i++) {
        memset(&g, 0, sizeof g);
        policy_ar.emit(&r, &PC, &g);
        policy_advance(&policy_ar, &r, &PC, &g);
    }
    r.need_refresh = true;
    memset(&g, 0, sizeof g);
    policy_ar.emit(&r, &PC, &g);
    expect_seg(&g, PHASE_PREFILL, 110, 0, 110, 0, 0);
    ck_assert_int_eq(policy_ar.kv_tokens(&r, &PC), 110);
    ck_assert_int_eq(policy_ar.kv_peak_tokens(&r, &PC), 196);
    /* a prompt found in the prompt cache: its first 64 read, the rest (and the 10 generated) computed */
    r.prefix_hit = 64;
    memset(&g, 0, sizeof g);
    policy_ar.emit(&r, &PC, &g);
    expect_seg(&g, PHASE_PREFILL, 46, 64, 46, 0, 0);
}
END_TEST

START_TEST(block_delayed_shapes)
{
    run_life(&policy_block_delayed, &PC, 100, 64, 64, 1, &L);
    ck_assert_int_eq(L.n, 1 + 64);
    expect_seg(&L.seg[0], PHASE_PREFILL, 100, 0, 100, 0, 0);
    /* position i is stable once i + 1 is decoded (after step i + 1), written by step i + 2 and out
     * of the queries from step i + 3 */
    expect_seg(&L.seg[1], PHASE_BLOCK, 32, 100, 0, 32, 1);
    expect_seg(&L.seg[2], PHASE_BLOCK, 32, 100, 0, 32, 1);
    for (int j = 2; j < 32; j++)
        expect_seg(&L.seg[1 + j], PHASE_BLOCK, 32 - (j - 2), 100 + j - 2, 1, 32 - (j - 2), 1);
    /* block 1's first step commits block 0's last two positions */
    expect_seg(&L.seg[33], PHASE_BLOCK, 2 + 32, 130, 2, 32, 1);
    expect_seg(&L.seg[34], PHASE_BLOCK, 32, 132, 0, 32, 1);
    expect_seg(&L.seg[64], PHASE_BLOCK, 3, 161, 1, 3, 1);
}
END_TEST

/* stable after step j of a block of len positions decoded k a step */
static int delayed_stable(int j, int len, int k)
{
    if (j < 0)
        return 0;
    int d = (j + 1) * k < len ? (j + 1) * k : len;
    return d > 1 ? d - 1 : 0;
}

/* Random requests and decode sizes: every step from the closed form (C = G, fixed:k); with EOS
 * positions (C < G) every step ends at its block's end and every request finishes */
START_TEST(block_delayed_property)
{
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int trial = 0; trial < 300; trial++) {
        x = ts_mix64(x + (uint64_t)trial);
        const int P = 1 + (int)(x % 300), G = 1 + (int)((x >> 10) % 200), k = 1 + (int)((x >> 20) % 6);
        run_life(&policy_block_delayed, &PC, P, G, G, k, &L);
        expect_seg(&L.seg[0], PHASE_PREFILL, P, 0, P, 0, 0);
        int i = 1, rest = 0;
        for (int b = 0; b * 32 < G; b++) {
            const int len = G - b * 32 < 32 ? G - b * 32 : 32, n = (len + k - 1) / k, start = P + b * 32;
            for (int j = 0; j < n; j++, i++) {
                ck_assert_int_lt(i, L.n);
                const int cached = delayed_stable(j - 2, len, k), dec = len - j * k < k ? len - j * k : k;
                const int r = j == 0 ? rest : 0;
                expect_seg(&L.seg[i], PHASE_BLOCK, r + len - cached, start - r + cached,
                           r + delayed_stable(j - 1, len, k) - cached, len - cached, dec);
            }
            rest = len - delayed_stable(n - 2, len, k);
        }
        ck_assert_int_eq(i, L.n);
        const int C = (int)((x >> 40) % (uint64_t)(G + 1));
        run_life(&policy_block_delayed, &PC, P, G, C, k, &L);
        for (int j = 1; j < L.n; j++) {
            const struct segment *g = &L.seg[j];
            ck_assert(g->q >= 1 && ((g->q + g->kv - P) % 32 == 0 || g->q + g->kv == P + G));
            ck_assert_int_le(g->kv_write, g->q);
            ck_assert_int_le(g->logit_rows, g->q);
        }
    }
}
END_TEST

START_TEST(block_partial_last_block)
{
    run_life(&policy_block, &PC, 10, 40, 40, 4, &L);
    /* block 0: 8 steps of 4; block 1 (8 positions): 2 steps, the first fused with the commit */
    ck_assert_int_eq(L.n, 1 + 8 + 2);
    expect_seg(&L.seg[9], PHASE_BLOCK, 32 + 8, 10, 32, 8, 4);
    expect_seg(&L.seg[10], PHASE_BLOCK, 8, 42, 0, 8, 4);
}
END_TEST

START_TEST(eos_positions_decode_in_bulk)
{
    /* decided by confidence, C = 40 of G = 64: block 0 takes 32 steps, block 1 eight content steps
     * and one bulk step */
    run_life_dm(&policy_dual, &PC, 100, 64, 40, ONE_BY_CONFIDENCE, &L);
    ck_assert_int_eq(L.n, 32 + 8 + 1);
    ck_assert_int_eq(L.seg[L.n - 1].decoded, 24);
    /* C = 0: each block decodes in one step */
    run_life_dm(&policy_dual, &PC, 100, 64, 0, ONE_BY_CONFIDENCE, &L);
    ck_assert_int_eq(L.n, 2);
    /* fixed:k keeps its schedule through the EOS positions (LLaDA's num_transfer_tokens): G / k
     * steps whatever the content */
    for (int C = 0; C <= 64; C += 8) {
        run_life(&policy_dual, &PC, 100, 64, C, 1, &L);
        ck_assert_int_eq(L.n, 64);
        for (int i = 0; i < L.n; i++)
            ck_assert_int_eq(L.seg[i].decoded, 1);
        run_life(&policy_dual, &PC, 100, 64, C, 3, &L);
        ck_assert_int_eq(L.n, 2 * 11); /* a block of 32 in 11 steps of at most 3 */
    }
}
END_TEST

START_TEST(early_stop_after_one_eos_block)
{
    struct policy_cfg pc = PC;
    pc.early_stop = true;
    run_life_dm(&policy_dual, &pc, 100, 256, 10, ONE_BY_CONFIDENCE, &L); /* content ends in block 0 */
    ck_assert_int_eq(L.n, 10 + 1);
    /* content fills blocks 0-1; block 2 is EOS */
    run_life_dm(&policy_dual, &pc, 100, 256, 64, ONE_BY_CONFIDENCE, &L);
    ck_assert_int_eq(L.n, 64 + 1);
    run_life_dm(&policy_dual, &pc, 100, 256, 256, ONE_BY_CONFIDENCE, &L); /* no EOS at all */
    ck_assert_int_eq(L.n, 256);
    /* fixed:1 stops after the same blocks, each decoded one position a step */
    run_life(&policy_dual, &pc, 100, 256, 10, 1, &L);
    ck_assert_int_eq(L.n, 32);
    run_life(&policy_dual, &pc, 100, 256, 64, 1, &L);
    ck_assert_int_eq(L.n, 96);
}
END_TEST

START_TEST(fixed_k_and_peaks)
{
    run_life(&policy_dual, &PC, 50, 256, 256, 4, &L);
    ck_assert_int_eq(L.n, 64);
    struct request r;
    memset(&r, 0, sizeof r);
    r.P = 50;
    r.G = 256;
    r.C = 256;
    policy_req_init(&r, &PC);
    ck_assert_int_eq(policy_dual.kv_peak_tokens(&r, &PC), 306);
    ck_assert_int_eq(policy_block.kv_peak_tokens(&r, &PC), 50 + 7 * 32);
    ck_assert_int_eq(policy_prefix.kv_peak_tokens(&r, &PC), 50 + 7 * 32);
    ck_assert_int_eq(policy_vanilla.kv_peak_tokens(&r, &PC), 0);
    ck_assert_int_eq(policy_vicinity.kv_peak_tokens(&r, &PC), 306);
    ck_assert_int_eq(policy_block_delayed.kv_peak_tokens(&r, &PC), 306);
    ck_assert_int_eq(policy_vicinity.peak_q(&r, &PC), 306);
    ck_assert_int_eq(policy_block.peak_q(&r, &PC), 50 + 7 * 32);
}
END_TEST

/* The attention the engine runs: block-causal for block-causal models under the block policy */
START_TEST(attention_block_follows_policy_and_model)
{
    ck_assert_int_eq(policy_attn_block("block", model_find("sdar-8b"), 32), 32);
    ck_assert_int_eq(policy_attn_block("block", model_find("sdar-8b"), 4), 4);
    ck_assert_int_eq(policy_attn_block("block", model_find("llada-8b"), 32), 0); /* bidirectional model */
    ck_assert_int_eq(policy_attn_block("dual", model_find("sdar-8b"), 32), 0);
    ck_assert_int_eq(policy_attn_block("ar", model_find("qwen2.5-3b"), 32), 32); /* a causal prefill */
    ck_assert_int_eq(policy_attn_block(NULL, model_find("sdar-8b"), 32), 0);
}
END_TEST

/* Every policy, at its defaults and at settings that change its steps' shapes, over random shapes,
 * decode counts and a preemption by recompute at a random step, against what a step's numbers mean:
 *   - its keys (kv + q) are positions of the sequence, at most L (with blocks aligned to the sequence's
 *     start, at most the end of its last block);
 *   - the K/V the request holds for the step (kv_tokens) cover those it reads and writes, kv +
 *     kv_write (but for HERALD's prefill, whose K/V go to the host, and a step whose later layers
 *     read the rows its front layers ran, q_front > 0: FOCUS's evicted rows);
 *   - its peaks (kv_peak_tokens, peak_q) are one number a life, read before its first step, that
 *     no step's holding or rows pass;
 *   - the steps decode G positions in all. */
START_TEST(every_policy_holds_what_its_steps_touch)
{
    static const struct {
        const char *policy, *params;
    } variants[] = {{"fdllm-v2", "v2-dual=1"},          {"fdllm-v2", "v2-dual=1,v2-full-steps=2.5"},
                    {"elastic", "ec-refresh-every=3"},  {"elastic", "ec-refresh-share=0.5"},
                    {"d2cache", "d2-rollout-share=0.25"}, {"dkv-cache", "dkv-refresh=3"},
                    {"dpad", "dpad-cache=prefix"},      {"dpad", "dpad-cache=dual"},
                    {"sparsed", "sparsed-block=16"},    {"herald", "herald-budget=0.5"},
                    {"dual", "refresh-interval=2"},     {"serve-block", "serve-prefill-block=0"}};
    int num_table = 0;
    while (policy_get(num_table))
        num_table++;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_taus2), *draws = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(g, 31);
    for (int v = 0; v < num_table + (int)TS_ARRAY_LEN(variants); v++) {
        const bool own = v >= num_table;
        const struct policy_ops *po = own ? policy_find(variants[v - num_table].policy) : policy_get(v);
        ck_assert_ptr_nonnull(po);
        struct param_values pv = {0};
        struct ts_err err;
        if (own) {
            char text[128];
            snprintf(text, sizeof text, "%s", variants[v - num_table].params);
            for (char *save = NULL, *kv = strtok_r(text, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                *eq = '\0';
                ck_assert_int_eq(param_values_set(&pv, kv, eq + 1, &err), 0);
            }
        }
        for (int trial = 0; trial < 150; trial++) {
            const int bs = 1 + (int)gsl_rng_uniform_int(g, 40), G = 1 + (int)gsl_rng_uniform_int(g, 200);
            const int P = (int)gsl_rng_uniform_int(g, 300), k = 1 + (int)gsl_rng_uniform_int(g, 6);
            const int drop_at = 1 + (int)gsl_rng_uniform_int(g, 40);
            const struct decode_model dm = {.kind = DECODE_FIXED, .k = k};
            struct policy_cfg pc = {.block_size = bs, .dm = &dm, .rng = draws,
                                    .aligned_blocks = (po->caps & POLICY_ALIGNED_BLOCKS) != 0};
            ck_assert_msg(params_resolve(po->params, po->num_params, &pv, pc.p, &err) == 0, "%s", err.msg);
            struct request r = {.P = P, .G = G, .C = G, .seed = 101 + (uint64_t)trial};
            policy_req_init(&r, &pc);
            const int64_t peak = po->kv_peak_tokens(&r, &pc);
            const int32_t peak_q = po->peak_q(&r, &pc);
            int64_t decoded = 0;
            char bad[256] = ""; /* the first step that breaks a rule (checked in C: a Check assert writes to a pipe) */
            bool finished = false;
            for (int step = 0; !finished && step < 10000; step++) {
                r.need_refresh = r.need_refresh || step == drop_at;
                struct segment s = {0};
                po->emit(&r, &pc, &s);
                const int64_t held = po->kv_tokens(&r, &pc);
                const bool touched = s.q_front > 0 || (po == &policy_herald && s.phase == PHASE_PREFILL) ||
                                     held >= (int64_t)s.kv + s.kv_write;
                const int32_t end = (po->caps & POLICY_ALIGNED_BLOCKS) ? r.P - r.head + r.num_blocks * bs : r.L;
                if (!bad[0] && (s.kv + s.q > end || !touched || po->kv_peak_tokens(&r, &pc) != peak ||
                                po->peak_q(&r, &pc) != peak_q || held > peak || s.q > peak_q))
                    snprintf(bad, sizeof bad, "step %d (%s): %d rows over %d keys of %d positions, holds %lld (peak "
                             "%lld, then %lld), writes %d, peak q %d (then %d)", step, seg_phase_name(s.phase), s.q,
                             s.kv, r.L, (long long)held, (long long)peak, (long long)po->kv_peak_tokens(&r, &pc),
                             s.kv_write, peak_q, po->peak_q(&r, &pc));
                if (!(po->caps & POLICY_DECIDES))
                    s.decoded = s.phase == PHASE_PREFILL || req_masked_in_block(&r) == 0 ? 0 : decode_tokens(&dm, &r);
                decoded += s.decoded;
                finished = policy_advance(po, &r, &pc, &s);
            }
            ck_assert_msg(!bad[0] && finished && r.decoded_total == G && decoded == G,
                          "%s %s: P %d G %d Bs %d fixed:%d: %s; decoded %d (%lld by its steps) of %d", po->name,
                          own ? variants[v - num_table].params : "", P, G, bs, k, bad[0] ? bad : "no rule broken",
                          r.decoded_total, (long long)decoded, G);
        }
    }
    gsl_rng_free(g);
    gsl_rng_free(draws);
}
END_TEST

/* A driven policy says whether its steps may run a request's whole sequence (policy_drive.h: on
 * bidirectional models only): over a driven run of two requests, some step of each policy the drive
 * places runs all L rows exactly where it says so. */
START_TEST(a_driven_policy_says_where_it_runs_whole)
{
    int driven = 0;
    for (int i = 0; policy_get(i); i++) {
        const struct policy_ops *po = policy_get(i);
        if (policy_drive_lacks(po))
            continue;
        struct policy_drive d;
        struct ts_err err;
        const int32_t plen[2] = {5, 9};
        ck_assert_msg(policy_drive_init(&d, po->name, NULL, 2, plen, 8, 4, false, &err) == 0, "%s", err.msg);
        bool whole = false;
        for (int32_t req = 0; req < 2; req++) {
            int32_t pos[64];
            bool done = false;
            for (int step = 0; !done; step++) {
                ck_assert_int_lt(step, 100);
                struct segment s = {.req_id = req};
                d.emit(d.ctx, req, &s, pos);
                whole = whole || s.q == plen[req] + 8;
                s.decoded = s.phase == PHASE_PREFILL ? 0 : 2;
                done = d.advance(d.ctx, req, &s);
            }
        }
        ck_assert_msg(d.whole == whole, "%s: whole %d, but its steps %s the whole sequence", po->name, d.whole,
                      whole ? "run" : "never run");
        policy_drive_free(&d);
        driven++;
    }
    ck_assert_int_ge(driven, 2);
}
END_TEST

/* The engine's extensions a policy names: each one declared; a live run takes them all, a replay none
 * that runs beside the engine or keeps state of its own, a live move none that keeps state; a name
 * the engine lacks runs nowhere. A naive scan of the names is the oracle of eng_ext_named. */
START_TEST(engine_extensions_by_declaration)
{
    for (int i = 0; policy_get(i); i++) {
        const char *list = policy_get(i)->engine;
        char copy[256], buf[512];
        snprintf(copy, sizeof copy, "%s", list ? list : "");
        for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
            ck_assert_msg(eng_ext_decl_find(w) != NULL, "policy %s names undeclared extension %s", policy_get(i)->name, w);
            ck_assert(eng_ext_named(list, w));
        }
        ck_assert_msg(!eng_ext_refused(list, ENG_EXT_LIVE, buf, sizeof buf), "%s refused live: %s",
                      policy_get(i)->name, buf);
    }
    char buf[512];
    const struct policy_ops *sp = policy_find("sparsed"), *he = policy_find("herald"), *va = policy_find("vanilla");
    ck_assert(eng_ext_named(sp->engine, "sparsed") && !eng_ext_named(he->engine, "sparsed") && !va->engine);
    ck_assert(eng_ext_refused(sp->engine, ENG_EXT_REPLAY, buf, sizeof buf) && strstr(buf, "a replay of stored steps"));
    ck_assert(eng_ext_refused(sp->engine, ENG_EXT_MOVE, buf, sizeof buf) && strstr(buf, "K and V alone"));
    ck_assert(eng_ext_refused(he->engine, ENG_EXT_REPLAY, buf, sizeof buf) && strstr(buf, "beside the engine"));
    ck_assert(!eng_ext_refused(he->engine, ENG_EXT_MOVE, buf, sizeof buf));
    ck_assert(!eng_ext_refused(NULL, ENG_EXT_REPLAY, buf, sizeof buf));
    for (int use = ENG_EXT_LIVE; use <= ENG_EXT_MOVE; use++)
        ck_assert(eng_ext_refused("drift warp", (enum eng_ext_use)use, buf, sizeof buf) && strstr(buf, "'warp'"));
    ck_assert(eng_ext_named("  drift  rollout ", "rollout") && !eng_ext_named("drift rollout", "roll") &&
              !eng_ext_named("driftx", "drift") && !eng_ext_named(NULL, "drift"));
    for (int i = 0; eng_ext_decl_get(i); i++)
        ck_assert_ptr_eq(eng_ext_decl_find(eng_ext_decl_get(i)->name), eng_ext_decl_get(i));
    ck_assert(va->caps & POLICY_EVERY_POSITION);
    for (int i = 0; policy_get(i); i++) /* a policy that caches does not run every position */
        ck_assert(!(policy_get(i)->caps & POLICY_EVERY_POSITION) || policy_get(i)->kv_tokens == va->kv_tokens);
}
END_TEST

START_TEST(registry)
{
    ck_assert_ptr_eq(policy_find("DUAL"), &policy_dual);
    const struct policy_ops *po;
    struct ts_err err;
    ck_assert_int_ne(policy_resolve("sparse-magic", &po, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "vanilla, prefix, dual, block"));
}
END_TEST

/* --- a policy with a parameter, added as a user would: what follows is the whole of it (the
 * file policy_periodic.c would hold), and registering it stands for its line in policy.c's table.
 * "periodic": a dual cache that refreshes every `period` steps whatever the block, its own state a
 * step counter. */
enum { PERIOD };
static const struct param_spec periodic_params[] = {
    [PERIOD] = {"period", "refresh every N steps (1: every step)", 4, 1, 1000, true},
};
struct periodic_state {
    int32_t since;
};
static void periodic_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    const bool refresh = r->need_refresh || POLICY_STATE(r, const struct periodic_state)->since % (int)pc->p[PERIOD] == 0;
    const int32_t bl = req_block_len(r, r->cur_block);
    s->phase = refresh ? PHASE_REFRESH : PHASE_REUSE;
    s->q = refresh ? r->L : bl;
    s->kv = refresh ? 0 : r->L - bl;
    s->kv_write = refresh ? r->L : 0;
    s->logit_rows = policy_logit_rows(pc, s->q, refresh ? r->G - r->decoded_total : req_masked_in_block(r));
}
static void periodic_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool done)
{
    (void)pc, (void)s, (void)done;
    POLICY_STATE(r, struct periodic_state)->since++;
}
static int64_t periodic_kv(const struct request *r, const struct policy_cfg *pc) { (void)pc; return r->L; }
static int32_t periodic_peak_q(const struct request *r, const struct policy_cfg *pc) { (void)pc; return r->L; }
static const struct policy_ops policy_periodic = {
    .name = "periodic", .help = "dual cache, refreshed every --period steps",
    .params = periodic_params, .num_params = (int)TS_ARRAY_LEN(periodic_params),
    .emit = periodic_emit, .advance = periodic_advance, .kv_tokens = periodic_kv, .kv_peak_tokens = periodic_kv,
    .peak_q = periodic_peak_q,
};

/* Registered, the policy runs through the simulator by name; its parameter is resolved (default,
 * or the value given), stored in the run's configuration, refused by name out of range or for
 * another policy, and listed with the policy. */
START_TEST(a_policy_with_a_parameter)
{
    ck_assert_int_eq(policy_register(&policy_periodic), 0);
    ck_assert_int_ne(policy_register(&policy_periodic), 0); /* a name once */
    struct policy_cfg pc = PC;
    pc.p[PERIOD] = 3;
    run_life(&policy_periodic, &pc, 100, 64, 64, 1, &L);
    for (int i = 0; i < L.n; i++)
        ck_assert_int_eq(L.seg[i].phase, i % 3 == 0 ? PHASE_REFRESH : PHASE_REUSE);

    struct sim_config c;
    test_config(&c);
    snprintf(c.policy, sizeof c.policy, "periodic");
    c.requests = 4;
    struct ts_err err;
    int64_t steps[2]; /* Refresh segments over the run */
    for (int k = 0; k < 2; k++) {
        if (k == 1)
            ck_assert_int_eq(param_values_set(&c.params, "period", "1", &err), 0);
        struct sim_setup su; /* the parts resolved once: validation hands them out, the simulator keeps them */
        ck_assert_int_eq(sim_config_validate(&c, &su, &err), 0);
        ck_assert(su.policy == &policy_periodic && su.params.policy[PERIOD] == (k == 0 ? 4 : 1));
        struct sim *s = sim_create(&c, &err);
        ck_assert_msg(s != NULL, "%s", err.msg);
        ck_assert_int_eq(s->pcfg.p[PERIOD], k == 0 ? 4 : 1);
        ck_assert(sim_setup_of(s)->policy == &policy_periodic && s->pol == &policy_periodic &&
                  sim_setup_of(s)->sched == s->sched && sim_setup_of(s)->params.policy[PERIOD] == s->pcfg.p[PERIOD]);
        ck_assert_int_eq(sim_run(s, &err), 0);
        steps[k] = 0;
        for (size_t i = 0; i < s->num_steps; i++)
            steps[k] += s->steps[i].tot.by_phase[PHASE_REFRESH];
        sim_destroy(s);
    }
    ck_assert_int_gt(steps[1], steps[0]); /* refreshing every step refreshes more */
    char *json = sim_config_to_json(&c, NULL);
    ck_assert_ptr_nonnull(strstr(json, "\"period\":1"));
    free(json);
    ck_assert_int_eq(param_values_set(&c.params, "period", "0", &err), 0);
    ck_assert_int_ne(sim_config_validate(&c, NULL, &err), 0);
    ck_assert_str_eq(err.msg, "--period: '0' is not a whole number in 1..1000");
    snprintf(c.policy, sizeof c.policy, "dual");
    ck_assert_int_ne(sim_config_validate(&c, NULL, &err), 0);
    ck_assert_str_eq(err.msg, "--period: not a parameter of policy dual or scheduler phase (it is one of: policy periodic)");
    char *help = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&help, &len);
    params_help(f, policy_periodic.params, policy_periodic.num_params, policy_periodic.name);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(help, "--period N"));
    ck_assert_ptr_nonnull(strstr(help, "periodic: refresh every N steps (1: every step) [4; 1..1000]"));
    free(help);
}
END_TEST

/* The command line's "did you mean": the edit distance, and the nearest name where one is near. */
START_TEST(param_suggestions)
{
    ck_assert_int_eq(param_edit_distance("", ""), 0);
    ck_assert_int_eq(param_edit_distance("--reqests", "--requests"), 1);
    ck_assert_int_eq(param_edit_distance("kitten", "sitting"), 3);
    ck_assert_int_eq(param_edit_distance("abc", ""), 3);
    ck_assert_int_eq(param_edit_distance("--rsp", "--rps"), 1); /* a swap is one edit */
    ck_assert_int_eq(param_edit_distance("ca", "abc"), 3);      /* (no edit twice: not 2) */
    static const char *const opts[] = {"--rps", "--requests", "--seed", "--refresh-interval"};
    ck_assert_str_eq(param_nearest("--reqests", opts, 4), "--requests");
    ck_assert_str_eq(param_nearest("--rpss", opts, 4), "--rps");
    ck_assert_str_eq(param_nearest("--refresh-intervall", opts, 4), "--refresh-interval");
    ck_assert_ptr_null(param_nearest("--zzzzzzzz", opts, 4)); /* none near */
    ck_assert_ptr_null(param_nearest("x", opts, 4));
    ck_assert_ptr_null(param_nearest("--rps", opts, 0));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("policy");
    ck_case(s, vanilla_shapes, 0);
    ck_case(s, param_suggestions, 0);
    ck_case(s, prefix_shapes, 0);
    ck_case(s, dual_shapes, 0);
    ck_case(s, dual_refresh_interval, 0);
    ck_case(s, vicinity_shapes, 0);
    ck_case(s, vicinity_property, 0);
    ck_case(s, sparse_shapes, 0);
    ck_case(s, sparse_after_drop, 0);
    ck_case(s, sparse_property, 0);
    ck_case(s, dllm_cache_shapes, 0);
    ck_case(s, dllm_cache_after_drop, 0);
    ck_case(s, dllm_cache_property, 0);
    ck_case(s, focus_shapes, 0);
    ck_case(s, focus_property, 0);
    ck_case(s, focus_placeholders, 0);
    ck_case(s, dpad_shapes, 0);
    ck_case(s, fdllm_v2_shapes, 0);
    ck_case(s, d2f_shapes, 0);
    ck_case(s, dsb_shapes, 0);
    ck_case(s, dsb_matches_its_window, 0);
    ck_case(s, linear_spec_shapes, 0);
    ck_case(s, linear_spec_commits_a_run_of_matches, 0);
    ck_case(s, dflash_shapes, 0);
    ck_case(s, d2f_buffer_and_step_count, 0);
    ck_case(s, dflash_commits_a_run_of_matches, 0);
    ck_case(s, sparsed_shapes, 0);
    ck_case(s, d2f_matches_its_block_list, 0);
    ck_case(s, d2f_semi_share_unbiased, 0);
    ck_case(s, recompute_reads_no_cache, 0);
    ck_case(s, herald_shapes, 0);
    ck_case(s, herald_matches_its_token_places, 0);
    ck_case(s, dkv_shapes, 0);
    ck_case(s, dkv_matches_its_cache, 0);
    ck_case(s, early_commit_finishes_the_request, 0);
    ck_case(s, d2cache_shapes, 0);
    ck_case(s, elastic_shapes, 0);
    ck_case(s, block_shapes, 0);
    ck_case(s, ar_shapes, 0);
    ck_case(s, block_partial_last_block, 0);
    ck_case(s, block_delayed_shapes, 0);
    ck_case(s, block_delayed_property, 0);
    ck_case(s, eos_positions_decode_in_bulk, 0);
    ck_case(s, early_stop_after_one_eos_block, 0);
    ck_case(s, fixed_k_and_peaks, 0);
    ck_case(s, attention_block_follows_policy_and_model, 0);
    ck_case(s, every_policy_holds_what_its_steps_touch, 0);
    ck_case(s, a_driven_policy_says_where_it_runs_whole, 0);
    ck_case(s, registry, 0);
    ck_case(s, engine_extensions_by_declaration, 0);
    ck_case(s, a_policy_with_a_parameter, 0);
    return run_suite("policy", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
