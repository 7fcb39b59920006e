/*
 * check_eng_ref.c: the CPU reference forward, the oracle of the engine's GPU checks: single ops
 * against hand-derived cases, and whole steps against each other (a cache that is reused must give
 * what recomputing gives).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_ref.h"
#include "test_util.h"

/* QK norms: each q and k head at RMS w after the norm (the rotation keeps norms), v untouched; a
 * partial rotary embedding turns the first rot dimensions alone. */
static void qk_norm_and_partial_rotary(void)
{
    enum { D = 8 };
    float x[3 * D], wq[D], wk[D];
    for (int i = 0; i < 3 * D; i++)
        x[i] = (float)(3 * sin(2 * i + 0.5));
    for (int i = 0; i < D; i++)
        wq[i] = 2.0f, wk[i] = 3.0f;
    int32_t p5[1] = {5};
    ref_qkv_rope(x, NULL, wq, wk, 4, 0.f, p5, 1, 1, 1, D, 10000.f);
    for (int head = 0; head < 2; head++) { /* the query's at RMS 2, the key's at 3 */
        double ss = 0;
        for (int i = 0; i < D; i++)
            ss += x[head * D + i] * x[head * D + i];
        ck_assert(fabs(ss / D - (head ? 9.0 : 4.0)) < 1e-5);
    }
    for (int i = 2 * D; i < 3 * D; i++)
        ck_assert(x[i] == (float)(3 * sin(2 * i + 0.5)));
    float y[3 * D], z[3 * D];
    for (int i = 0; i < 3 * D; i++)
        y[i] = z[i] = (float)sin(i + 1.0);
    ref_qkv_rope(y, NULL, NULL, NULL, 4, 0.f, p5, 1, 1, 1, D, 10000.f);
    for (int head = 0; head < 2; head++)
        for (int i = 4; i < D; i++) /* past the rotary dimensions */
            ck_assert(y[head * D + i] == z[head * D + i]);
    ck_assert(fabs(y[0] - (z[0] * cos(5.0) - z[2] * sin(5.0))) < 1e-6); /* the first pair: frequency 1 */
}

START_TEST(attention_cases)
{
    /* one key: the output is its value */
    float q[4] = {0.3f, -1, 2, 0.5f}, k[4] = {1, 2, 3, 4}, v[4] = {5, 6, 7, 8}, o[4];
    ref_attention(o, q, 4, k, v, 1, 1, 0, 1, 1, 4, 0, 0.5f);
    for (int i = 0; i < 4; i++)
        ck_assert(fabsf(o[i] - v[i]) < 1e-6f);
    /* a zero query weighs all keys equally: the mean of the values */
    float qz[2] = {0, 0}, k3[6] = {1, 2, 3, 4, 5, 6}, v3[6] = {1, 10, 2, 20, 3, 30}, o2[2];
    ref_attention(o2, qz, 2, k3, v3, 1, 3, 0, 1, 1, 2, 0, 1.0f);
    ck_assert(fabsf(o2[0] - 2) < 1e-6f && fabsf(o2[1] - 20) < 1e-5f);
    /* block-causal with blocks of 1 and no cache is causal: the first query sees the first key */
    float q2[4] = {1, 1, 1, 1}, o3[4];
    ref_attention(o3, q2, 2, k3, v3, 2, 2, 0, 1, 1, 2, 1, 1.0f);
    ck_assert(fabsf(o3[0] - 1) < 1e-6f && fabsf(o3[1] - 10) < 1e-6f);
    /* ...while cached keys stay visible to everyone */
    ref_attention(o3, qz, 2, k3, v3, 1, 3, 2, 1, 1, 2, 1, 1.0f);
    ck_assert(fabsf(o3[0] - 2) < 1e-6f);
}
END_TEST

START_TEST(rmsnorm_rope_swiglu_argmax)
{
    float x[8] = {1, -2, 3, -4, 0.5f, 0, 0, 2}, w[8] = {1, 1, 1, 1, 1, 1, 1, 1}, y[8];
    ref_rmsnorm(y, x, w, 1, 8, 0);
    double ss = 0;
    for (int i = 0; i < 8; i++)
        ss += y[i] * y[i];
    ck_assert(fabs(ss / 8 - 1) < 1e-6);
    /* RoPE: identity at position 0, norm-preserving, and q.k depends only on the distance */
    const int d = 8;
    float a[3 * d], b[3 * d];
    for (int i = 0; i < 3 * d; i++)
        a[i] = b[i] = (float)sin(i + 1.0);
    int32_t p0[1] = {0};
    ref_qkv_rope(a, NULL, NULL, NULL, 0, 1e-5f, p0, 1, 1, 1, d, 10000.f);
    for (int i = 0; i < 3 * d; i++)
        ck_assert(fabsf(a[i] - b[i]) < 1e-6f);
    qk_norm_and_partial_rotary();
    float r1[3 * d], r2[3 * d];
    int32_t pa[1] = {7}, pb[1] = {17};
    memcpy(r1, b, sizeof r1);
    memcpy(r2, b, sizeof r2);
    ref_qkv_rope(r1, NULL, NULL, NULL, 0, 1e-5f, pa, 1, 1, 1, d, 10000.f);
    ref_qkv_rope(r2, NULL, NULL, NULL, 0, 1e-5f, pb, 1, 1, 1, d, 10000.f);
    double n0 = 0, n1 = 0, dot1 = 0, dot2 = 0;
    for (int i = 0; i < d; i++) {
        n0 += b[i] * b[i];
        n1 += r1[i] * r1[i];
    }
    ck_assert(fabs(n0 - n1) < 1e-5);
    /* q at 7 with k at 7 vs q at 17 with k at 17: equal dot products */
    for (int i = 0; i < d; i++) {
        dot1 += r1[i] * r1[d + i];
        dot2 += r2[i] * r2[d + i];
    }
    ck_assert(fabs(dot1 - dot2) < 1e-5);
    float gu[4] = {0, 1, 2, 3}, s[2];
    ref_swiglu(s, gu, 1, 2);
    ck_assert(fabsf(s[0]) < 1e-7f && fabsf(s[1] - 1.0f / (1 + expf(-1)) * 3) < 1e-6f);
    float l[5] = {0, 3, 1, 3, -1};
    int32_t tok;
    float mx, conf;
    ref_argmax_conf(l, 1, 5, &tok, &mx, &conf);
    ck_assert_int_eq(tok, 1); /* ties go to the lower index */
    ck_assert(mx == 3);
    double z = exp(-3) + 1 + exp(-2) + 1 + exp(-4);
    ck_assert(fabs(conf - 1 / z) < 1e-6);
}
END_TEST

/* The single ops against naive ones written here from their definitions: RMSNorm with its epsilon
 * (x / sqrt(mean x^2 + eps) w); a partial rotary embedding's pair i turned by pos theta^(-2i/rot);
 * attention by a block-sparse pattern with grouped query heads (the H / Hkv consecutive query heads of
 * a group share its K/V head), each row over the key blocks its query block keeps in its head; and
 * SparseD's pattern: pass 1 the softmax of each row over every key, summed a query block and key
 * block, its top int(nb sel) + 1 blocks kept where they lie in the prompt; pass 2 the softmax over the
 * response's keys alone, its top int(ng sel) + 1 response blocks kept; ties to the lower block (a head
 * of zero queries attends evenly: every block ties). */
START_TEST(single_ops_against_naive_ones)
{
    float x[8], w[4], y[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)(1.5 * sin(3 * i + 1.0));
    for (int i = 0; i < 4; i++)
        w[i] = 0.5f + 0.25f * i;
    ref_rmsnorm(y, x, w, 2, 4, 0.5f);
    for (int t = 0; t < 2; t++) {
        double ss = 0;
        for (int c = 0; c < 4; c++)
            ss += (double)x[t * 4 + c] * x[t * 4 + c];
        for (int c = 0; c < 4; c++)
            ck_assert(fabs(y[t * 4 + c] - x[t * 4 + c] / sqrt(ss / 4 + 0.5) * w[c]) < 1e-6);
    }
    enum { D = 8 };
    float r[3 * D], z[3 * D];
    for (int i = 0; i < 3 * D; i++)
        r[i] = z[i] = (float)sin(i + 1.0);
    const int32_t p5[1] = {5};
    ref_qkv_rope(r, NULL, NULL, NULL, 4, 0.f, p5, 1, 1, 1, D, 10000.f);
    const double a = 5 * pow(10000.0, -2.0 / 4); /* pair 1 of a rotary width 4: dimensions 1 and 3 */
    ck_assert(fabs(r[1] - (z[1] * cos(a) - z[3] * sin(a))) < 1e-6);
    ck_assert(fabs(r[3] - (z[1] * sin(a) + z[3] * cos(a))) < 1e-6);

    enum { N = 8, H = 4, HKV = 2, DH = 4, B = 2, NB = N / B, LAST = 2 };
    float q[N * H * DH], k[N * HKV * DH], v[N * HKV * DH], out[N * H * DH];
    for (int i = 0; i < N * H * DH; i++) /* head 0's queries zero: it attends evenly */
        q[i] = (i / DH) % H == 0 ? 0.f : (float)sin(0.7 * i + 0.3);
    for (int i = 0; i < N * HKV * DH; i++)
        k[i] = (float)cos(1.3 * i), v[i] = (float)sin(0.9 * i + 2);
    uint8_t keep[H * NB * NB];
    for (int i = 0; i < H * NB * NB; i++)
        keep[i] = (uint8_t)((i * 7 + i / 5) % 3 != 0);
    const float scale = 0.5f;
    ref_attention_blocks(out, q, H * DH, k, v, N, H, HKV, DH, B, keep, scale);
    double err = 0;
    for (int i = 0; i < N; i++)
        for (int h = 0; h < H; h++) {
            const int g = h / (H / HKV);
            double p[N], sum = 0, o[DH] = {0};
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int c = 0; c < DH; c++)
                    s += (double)q[(i * H + h) * DH + c] * k[(j * HKV + g) * DH + c];
                p[j] = keep[(h * NB + i / B) * NB + j / B] ? exp(s * scale) : 0;
                sum += p[j];
            }
            for (int j = 0; j < N; j++)
                for (int c = 0; c < DH; c++)
                    o[c] += p[j] * v[(j * HKV + g) * DH + c];
            for (int c = 0; c < DH; c++)
                err = fmax(err, fabs(out[(i * H + h) * DH + c] - (sum > 0 ? o[c] / sum : 0)));
        }
    ck_assert_msg(err < 1e-5, "block-sparse attention off by %g", err);

    const double sel = 0.3;
    const int top1 = (int)(NB * sel) + 1, top2 = (int)((NB - LAST) * sel) + 1;
    double imp[2 * H * NB * NB];
    uint8_t got[H * NB * NB];
    ref_sparsed_pattern(q, H * DH, k, N, H, HKV, DH, B, LAST, sel, scale, imp, got);
    int response_tops = 0;
    for (int h = 0; h < H; h++)
        for (int qb = 0; qb < NB; qb++) {
            double i1[NB] = {0}, i2[NB] = {0};
            for (int i = qb * B; i < qb * B + B; i++) {
                double s[N], all = 0, resp = 0;
                for (int j = 0; j < N; j++) {
                    s[j] = 0;
                    for (int c = 0; c < DH; c++)
                        s[j] += (double)q[(i * H + h) * DH + c] * k[(j * HKV + h / (H / HKV)) * DH + c];
                    s[j] = exp(s[j] * scale);
                    all += s[j], resp += j >= LAST * B ? s[j] : 0;
                }
                for (int j = 0; j < N; j++) {
                    i1[j / B] += s[j] / all;
                    i2[j / B] += j >= LAST * B ? s[j] / resp : 0;
                }
            }
            uint8_t want[NB] = {0};
            for (int b = 0; b < NB; b++) { /* b's rank: the blocks above it, or level with it and lower */
                int above1 = 0, above2 = 0;
                for (int j = 0; j < NB; j++) {
                    above1 += i1[j] > i1[b] + 1e-12 || (fabs(i1[j] - i1[b]) <= 1e-12 && j < b);
                    above2 += j >= LAST && (i2[j] > i2[b] + 1e-12 || (fabs(i2[j] - i2[b]) <= 1e-12 && j < b));
                }
                want[b] = b < LAST ? above1 < top1 : above2 < top2;
                response_tops += b >= LAST && above1 < top1;
            }
            for (int b = 0; b < NB; b++) {
                ck_assert_msg(got[(h * NB + qb) * NB + b] == want[b], "head %d, query block %d, key block %d", h, qb,
                              b);
                ck_assert(fabs(imp[(h * NB + qb) * NB + b] - i1[b]) < 1e-9);
                ck_assert(b < LAST || fabs(imp[((H + h) * NB + qb) * NB + b] - i2[b]) < 1e-9);
            }
        }
    ck_assert(response_tops > 0); /* pass 1 ranks some response block among its top: cleared */
}
END_TEST

static const struct model_cfg TINY = {.name = "tiny", .num_layers = 2, .hidden = 64, .num_heads = 4,
                                      .num_kv_heads = 2, .head_dim = 64, .ffn = 128, .vocab = 97,
                                      .max_pos = 4096, .rope_theta = 10000.0, .qkv_bias = true,
                                      .weight_bytes = 2, .kv_bytes = 2};

static void seg(struct step_desc *sd, int req, int q, int kv, int logits)
{
    struct segment s = {.req_id = req, .q = q, .kv = kv, .logit_rows = logits, .phase = PHASE_REUSE};
    step_desc_add(sd, &s);
}

/* Runs steps[] in order on a fresh reference; returns the final hidden rows of the last step. */
static float *run_steps(int block_size, const int (*steps)[3], int n, int req, int *R_out)
{
    struct eng_ref *r;
    struct ts_err err;
    ck_assert_int_eq(eng_ref_create(&TINY, NULL, 5, &r, &err), 0);
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    float *hidden = NULL;
    for (int i = 0; i < n; i++) {
        step_desc_clear(&sd);
        seg(&sd, req, steps[i][0], steps[i][1], steps[i][2]);
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, TINY.vocab, 5, &err), 0);
        free(hidden);
        hidden = xmalloc(sizeof *hidden * (size_t)(p.R ? p.R : 1) * TINY.hidden);
        int32_t tok[512];
        float mx[512], conf[512];
        eng_ref_step(r, &sd, &p, block_size, hidden, tok, mx, conf);
        for (int j = 0; j < p.R; j++)
            ck_assert(tok[j] >= 0 && tok[j] < TINY.vocab && conf[j] > 0 && conf[j] <= 1);
        *R_out = p.R;
    }
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
    eng_ref_destroy(r);
    return hidden;
}

static double max_diff(const float *a, const float *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

START_TEST(reuse_equals_refresh)
{
    /* dual cache: the Reuse of the last block over the Refresh's cache gives the Refresh's rows */
    const int full[1][3] = {{96, 0, 96}}, reuse[2][3] = {{96, 0, 0}, {32, 64, 32}};
    int R1, R2;
    float *a = run_steps(0, full, 1, 0, &R1), *b = run_steps(0, reuse, 2, 0, &R2);
    ck_assert_int_eq(R1, 96);
    ck_assert_int_eq(R2, 32);
    ck_assert(max_diff(a + 64 * TINY.hidden, b, 32 * TINY.hidden) < 1e-4);
    /* a different request id means different tokens: different rows */
    float *c = run_steps(0, full, 1, 1, &R1);
    ck_assert(max_diff(a, c, 96 * TINY.hidden) > 1e-2);
    free(a), free(b), free(c);
}
END_TEST

START_TEST(block_causal_prefill_then_block)
{
    /* block policy: a prefill of 64 then a block of 32 over it equals one forward of 96 */
    const int one[1][3] = {{96, 0, 96}}, two[2][3] = {{64, 0, 0}, {32, 64, 32}};
    int R1, R2;
    float *a = run_steps(32, one, 1, 3, &R1), *b = run_steps(32, two, 2, 3, &R2);
    ck_assert(max_diff(a + 64 * TINY.hidden, b, 32 * TINY.hidden) < 1e-4);
    /* and a bidirectional forward differs on the first block (it sees the future) */
    float *c = run_steps(0, one, 1, 3, &R1);
    ck_assert(max_diff(a, c, 32 * TINY.hidden) > 1e-3);
    free(a), free(b), free(c);
}
END_TEST

/* dLLM-Cache on the reference: with a request's tokens unchanged every cached output is what the
 * layer would compute, so a response refresh over the cached prompt, partial updates (with and
 * without the prompt) and their value checks give the whole refresh's rows; the check itself picks
 * the least similar rows, NaN (never written) first, ties to the lower row. */
START_TEST(feature_cache_fixed_point)
{
    struct eng_ref *r;
    struct ts_err err;
    ck_assert_int_eq(eng_ref_create(&TINY, NULL, 5, &r, &err), 0);
    struct eng_kv kv;
    eng_kv_init(&kv, 16, 64);
    struct eng_plan p;
    eng_plan_init(&p);
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 1;
    sd.cache_outputs = true;
    enum { P = 50, G = 40, L = P + G };
    const int shapes[][3] = {{L, 0, 0}, {G, 0, 0}, {8, G, 8}, {P + 8, G, 8}}; /* q, probe, picked */
    float *h0 = xmalloc(sizeof *h0 * L * TINY.hidden), *h = xmalloc(sizeof *h * L * TINY.hidden);
    for (int k = 0; k < 4; k++) {
        const int q = shapes[k][0];
        struct segment g = {.req_id = 2, .q = q, .kv = L - q, .kv_write = q, .logit_rows = L, .carry = L - q,
                            .probe = shapes[k][1], .picked = shapes[k][2],
                            .phase = (uint8_t)(shapes[k][1] ? PHASE_REUSE : PHASE_REFRESH)};
        if (q < L)
            g.q_front = g.kv_write_front = L;
        step_desc_clear(&sd);
        step_desc_add(&sd, &g);
        ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, TINY.vocab, 5, &err), 0);
        ck_assert_int_eq(p.X, L);
        int32_t tok[L];
        float mx[L], conf[L];
        eng_ref_step(r, &sd, &p, 0, k ? h : h0, tok, mx, conf);
        if (k)
            ck_assert_msg(max_diff(h, h0, L * TINY.hidden) < 1e-4, "shape %d: %g", k, max_diff(h, h0, L * TINY.hidden));
    }
    /* the check by hand: rows 0..3 of 2-d values against cached ones */
    const float vnew[] = {1, 0, 0, 1, 1, 1, 2, 0}, vold[] = {1, 0, 1, 0, NAN, 0, 1, 0};
    int32_t pick[2];
    ref_fc_pick(vnew, vold, 4, 2, 2, pick); /* similarities 1, 0, NaN, 1 */
    ck_assert_int_eq(pick[0], 1);
    ck_assert_int_eq(pick[1], 2);
    int32_t three[3];
    ref_fc_pick(vnew, vold, 4, 2, 3, three); /* the tie between rows 0 and 3: the lower */
    ck_assert_int_eq(three[0], 0);
    ck_assert_int_eq(three[2], 2);
    free(h0), free(h);
    step_desc_free(&sd);
    eng_plan_free(&p);
    eng_kv_free(&kv);
    eng_ref_destroy(r);
}
END_TEST

/* Elastic-Cache's refresh on the reference, against dLLM-Cache's feature cache as the oracle: after
 * a whole forward, the last Q tokens change and one step runs them alone through the first NF
 * layers (over the other rows' cached K/V), then every row through the rest. A widening step takes
 * the other rows' inputs to layer NF from the input cache; a layered step carries them there on
 * their cached attention and FFN outputs. Both are the whole forward's rows, so the two agree, and
 * differ from a whole forward of the new tokens. */
static int32_t last_rows_changed(void *ctx, int32_t req, int32_t pos)
{
    (void)req;
    return pos >= *(const int *)ctx ? (7 * pos + 3) % 256 : -1;
}

START_TEST(widening_step_matches_feature_cache)
{
    enum { L = 40, Q = 8, NF = 2 };
    struct model_cfg m = TINY;
    m.num_layers = 4;
    int first = L - Q;
    const struct eng_tokens change = {.id = last_rows_changed, .ctx = &first};
    float *out[3];
    for (int way = 0; way < 3; way++) { /* input cache, feature cache, the new tokens from scratch */
        struct eng_ref *r;
        struct ts_err err;
        ck_assert_int_eq(eng_ref_create(&m, NULL, 5, &r, &err), 0);
        struct eng_kv kv;
        eng_kv_init(&kv, 16, 64);
        struct eng_plan p;
        eng_plan_init(&p);
        struct step_desc sd;
        step_desc_init(&sd);
        sd.front_layers = NF;
        sd.cache_inputs = way == 0;
        sd.cache_outputs = way == 1;
        struct segment full = {.req_id = 1, .q = L, .kv_write = L, .logit_rows = L, .phase = PHASE_FULL};
        struct segment wide = full;
        wide.q_front = wide.kv_write_front = Q, wide.kv_front = L - Q, wide.phase = PHASE_REFRESH;
        for (int k = way == 2; k < 2; k++) {
            step_desc_clear(&sd);
            step_desc_add(&sd, k ? &wide : &full);
            if (way == 2)
                sd.cache_outputs = false;
            ck_assert_int_eq(eng_plan_build(&p, &kv, &sd, m.vocab, 5, &err), 0);
            if (k)
                ck_assert_int_eq(eng_plan_set_ids(&p, &kv, &sd, &change, &err), 0);
            ck_assert(way != 0 || k == 0 || (p.widen && p.front->T == Q && p.T == L));
            out[way] = xmalloc(sizeof *out[way] * L * m.hidden);
            int32_t tok[L];
            float mx[L], conf[L];
            eng_ref_step(r, &sd, &p, 0, out[way], tok, mx, conf);
            if (k == 0 && way < 2)
                free(out[way]);
        }
        step_desc_free(&sd);
        eng_plan_free(&p);
        eng_kv_free(&kv);
        eng_ref_destroy(r);
    }
    ck_assert_msg(max_diff(out[0], out[1], L * m.hidden) < 1e-4, "%g", max_diff(out[0], out[1], L * m.hidden));
    ck_assert_msg(max_diff(out[0], out[2], L * m.hidden) > 1e-2, "%g", max_diff(out[0], out[2], L * m.hidden));
    for (int way = 0; way < 3; way++)
        free(out[way]);
}
END_TEST

/* One step sd on a reference r (its plan built over kv); the final hidden rows of its logit rows. */
static float *ref_run(struct eng_ref *r, struct eng_kv *kv, struct eng_plan *p, const struct step_desc *sd,
                      const struct model_cfg *m)
{
    struct ts_err err;
    ck_assert_int_eq(eng_plan_build(p, kv, sd, m->vocab, 5, &err), 0);
    float *hidden = xmalloc(sizeof *hidden * (size_t)(p->R ? p->R : 1) * m->hidden);
    int32_t tok[256];
    float mx[256], conf[256];
    eng_ref_step(r, sd, p, sd->attn_block, hidden, tok, mx, conf);
    return hidden;
}

/* FOCUS on the reference: an evicting step that keeps every candidate is the whole block's step;
 * one that keeps fewer gives its kept rows other values (their later layers miss the evicted
 * rows' fresh keys); the importance of m candidates sums to m per head; the picks keep no
 * unprocessed candidate out left of a kept one. */
START_TEST(focus_eviction)
{
    struct model_cfg m = TINY;
    m.num_layers = 4;
    struct step_desc sd;
    step_desc_init(&sd);
    sd.front_layers = 2;
    float *h[3];
    for (int run = 0; run < 3; run++) { /* the whole block, every candidate kept, 5 of 30 kept */
        struct eng_ref *r;
        struct ts_err err;
        ck_assert_int_eq(eng_ref_create(&m, NULL, 5, &r, &err), 0);
        struct eng_kv kv;
        eng_kv_init(&kv, 16, 64);
        struct eng_plan p;
        eng_plan_init(&p);
        sd.evict = false;
        step_desc_clear(&sd);
        seg(&sd, 1, 40, 0, 0);
        free(ref_run(r, &kv, &p, &sd, &m));
        step_desc_clear(&sd);
        if (run == 0) {
            seg(&sd, 1, 32, 40, 32);
        } else {
            const int picked = run == 1 ? 30 : 5;
            const struct segment g = {.req_id = 1, .q = 2 + picked, .kv = 72 - 2 - picked, .kv_write = 2 + picked,
                                      .logit_rows = 2 + picked, .phase = PHASE_BLOCK, .q_front = 32, .kv_front = 40,
                                      .kv_write_front = 32, .probe = 30, .picked = picked};
            sd.evict = true;
            step_desc_add(&sd, &g);
        }
        h[run] = ref_run(r, &kv, &p, &sd, &m);
        ck_assert_int_eq(p.R, run == 2 ? 7 : 32);
        eng_plan_free(&p);
        eng_kv_free(&kv);
        eng_ref_destroy(r);
    }
    ck_assert_msg(max_diff(h[0], h[1], 32 * m.hidden) < 1e-5, "%g", max_diff(h[0], h[1], 32 * m.hidden));
    /* the first evicting step of a block keeps a prefix of its candidates: rows 0..6 of the block */
    ck_assert(max_diff(h[0], h[2], 7 * m.hidden) > 1e-3);
    free(h[0]), free(h[1]), free(h[2]);
    /* the importance of 5 candidates, 2 heads over 1 K/V head: 5 per head */
    float q[5 * 2 * 4], k[5 * 4], imp[5];
    for (int i = 0; i < 40; i++)
        q[i] = (float)((i * 7) % 5) - 2.0f;
    for (int i = 0; i < 20; i++)
        k[i] = (float)((i * 3) % 4) - 1.5f;
    ref_focus_importance(q, 8, k, 5, 2, 1, 4, 0.5f, imp);
    double sum = 0;
    for (int j = 0; j < 5; j++)
        sum += imp[j];
    ck_assert(fabs(sum - 10.0) < 1e-4);
    /* picks: 3 of 6, candidates 0-1 processed; deltas rank 5, 0, 3, 1, 4, 2 */
    const float delta[6] = {5, 3, 0, 4, 1, 9};
    int32_t pick[6];
    ref_focus_pick(delta, 6, 3, 2, pick); /* 5 is the best but needs 2..5: the prefix 2..4 instead */
    ck_assert(pick[0] == 2 && pick[1] == 3 && pick[2] == 4);
    ref_focus_pick(delta, 6, 4, 6, pick); /* every one processed: the four largest */
    ck_assert(pick[0] == 0 && pick[1] == 1 && pick[2] == 3 && pick[3] == 5);
    ref_focus_pick(delta, 6, 4, 3, pick); /* 5 and 0 largest; 5 needs 3..5 (3 rows) and leaves 0 one */
    ck_assert(pick[0] == 0 && pick[1] == 3 && pick[2] == 4 && pick[3] == 5);
    step_desc_free(&sd);
}
END_TEST

/* Balanced routing: k distinct experts a row whatever its logits, the same for the same (salt, row)
 * and others for another layer's salt, their weights the row's probabilities renormalised over
 * them; over many rows every expert takes its share (T k / E copies, within 5 standard deviations)
 * and two rows share experts as often as independent draws do (k^2 / E on average). */
static void balanced_routing_is_uniform(void)
{
    enum { E = 64, K = 8, T = 4000 };
    float lg[E];
    for (int e = 0; e < E; e++)
        lg[e] = e == 5 ? 9.0f : 0.01f * (float)e; /* a router that would send every row to expert 5 */
    int32_t ids[K], again[K], other[K], prev[K];
    float wts[K];
    int count[E] = {0}, same_salted = 0;
    double shared = 0;
    for (int t = 0; t < T; t++) {
        ref_moe_route(lg, E, K, 4, NULL, NULL, t, other, wts);
        ref_moe_route(lg, E, K, 3, NULL, NULL, t, again, wts);
        ref_moe_route(lg, E, K, 3, NULL, NULL, t, ids, wts);
        ck_assert_int_eq(memcmp(ids, again, sizeof ids), 0);
        same_salted += memcmp(ids, other, sizeof ids) == 0;
        double sum = 0, mx = 0, wsum = 0;
        for (int e = 0; e < E; e++)
            mx = fmax(mx, lg[e]);
        for (int j = 0; j < K; j++) {
            sum += exp(lg[ids[j]] - mx);
            wsum += wts[j];
            count[ids[j]]++;
            for (int i = 0; i < j; i++)
                ck_assert_int_ne(ids[i], ids[j]);
            for (int i = 0; i < K && t > 0; i++)
                shared += prev[i] == ids[j];
        }
        ck_assert(fabs(wsum - 1) < 1e-5);
        ck_assert(fabs(wts[0] - exp(lg[ids[0]] - mx) / sum) < 1e-5);
        memcpy(prev, ids, sizeof prev);
    }
    ck_assert_int_le(same_salted, 1); /* another layer's salt, another draw */
    const double want = (double)T * K / E, sd = sqrt(want * (1 - (double)K / E));
    for (int e = 0; e < E; e++)
        ck_assert_msg(fabs(count[e] - want) < 5 * sd, "expert %d: %d copies, %.0f wanted", e, count[e], want);
    const double mean_shared = shared / (T - 1);
    ck_assert_msg(fabs(mean_shared - (double)K * K / E) < 0.1, "rows share %.3f experts, %.3f wanted", mean_shared,
                  (double)K * K / E);
}

START_TEST(weights_layout_and_fill)
{
    struct eng_layout l;
    struct ts_err err;
    const struct model_cfg *m = model_find("llada-8b");
    ck_assert_int_eq(eng_layout_build(m, &l, &err), 0);
    /* every parameter has a place (plus alignment padding of at most 7 per tensor) */
    ck_assert(l.total >= model_params(m) && l.total < model_params(m) + 8 * l.n);
    ck_assert_ptr_nonnull(eng_layout_find(&l, W_GU, 31));
    ck_assert_ptr_null(eng_layout_find(&l, W_QKV_BIAS, 0));
    eng_layout_free(&l);
    /* a mixture of experts: every parameter too; the router and experts in its MoE layers, its
     * shared expert as the dense FFN of those layers, its dense first layer's FFN */
    const struct model_cfg *mini = model_find("llada2.0-mini");
    ck_assert_int_eq(eng_layout_build(mini, &l, &err), 0);
    ck_assert(l.total >= model_params(mini) && l.total < model_params(mini) + 8 * l.n);
    ck_assert_ptr_null(eng_layout_find(&l, W_ROUTER, 0));
    ck_assert_int_eq(eng_layout_find(&l, W_GU, 0)->rows, 2 * mini->ffn);
    ck_assert_int_eq(eng_layout_find(&l, W_ROUTER, 1)->rows, mini->num_experts);
    ck_assert_int_eq(eng_layout_find(&l, W_EXP_GU, 1)->rows, 2LL * mini->num_experts * mini->moe_ffn);
    ck_assert_int_eq(eng_layout_find(&l, W_EXP_DOWN, 1)->rows, (int64_t)mini->num_experts * mini->hidden);
    ck_assert_int_eq(eng_layout_find(&l, W_GU, 1)->rows, 2 * mini->moe_ffn);
    eng_layout_free(&l);
    ck_assert_int_eq(eng_layout_build(model_find("llada-moe-7b"), &l, &err), 0);
    ck_assert_ptr_null(eng_layout_find(&l, W_GU, 3)); /* no shared expert, no dense layer */
    eng_layout_free(&l);
    /* routing by hand: logits 0, ln 3, ln 3, ln 2 (probabilities 1:3:3:2 over 9); top 2 are experts 1
     * and 2 (the tie to the lower first), each half of their sum */
    const float logits[4] = {0, logf(3), logf(3), logf(2)};
    int32_t ids[3];
    float wts[3];
    ref_moe_route(logits, 4, 2, 0, NULL, NULL, 0, ids, wts);
    ck_assert(ids[0] == 1 && ids[1] == 2 && fabsf(wts[0] - 0.5f) < 1e-6f && fabsf(wts[1] - 0.5f) < 1e-6f);
    ref_moe_route(logits, 4, 3, 0, NULL, NULL, 0, ids, wts);
    ck_assert(ids[2] == 3 && fabsf(wts[2] - 0.25f) < 1e-6f);
    balanced_routing_is_uniform();
    /* LLaDA2.0's router by hand: sigmoid scores s_e of logits l_e, chosen on s_e + bias among the
     * best 2 of 4 groups of 2 (a group's score: its two summed), weighed by s_e renormalised x 2.5 */
    const float l8[8] = {2.0f, -2.0f, 0.5f, 0.4f, 1.0f, 1.0f, -3.0f, 3.0f};
    const float bias8[8] = {0, 0, 0, 0, -0.5f, 0, 0, -0.9f};
    const struct k_moe_router llada2 = {.sigmoid = true, .norm = true, .n_group = 4, .topk_group = 2, .scale = 2.5f};
    double sg[8];
    for (int e = 0; e < 8; e++)
        sg[e] = 1.0 / (1.0 + exp(-(double)l8[e]));
    /* ranked: {0,1} 0.881+0.119 = 1.0, {2,3} 0.622+0.599 = 1.22, {4,5} 0.731-0.5+0.731 = 0.96 (1.46
     * without the bias), {6,7} 0.047+0.953-0.9 = 0.1: groups 1 and 0 stay; expert 7 (the best score) is
     * out with its group, 4 and 5 with theirs */
    ref_moe_route(l8, 8, 2, 0, &llada2, bias8, 0, ids, wts);
    ck_assert_int_eq(ids[0], 0);
    ck_assert_int_eq(ids[1], 2);
    ck_assert(fabs(wts[0] - 2.5 * sg[0] / (sg[0] + sg[2])) < 1e-6 && fabs(wts[1] - 2.5 * sg[2] / (sg[0] + sg[2])) < 1e-6);
    ref_moe_route(l8, 8, 3, 0, &llada2, bias8, 0, ids, wts);
    ck_assert_int_eq(ids[2], 3);
    ck_assert(fabs(wts[2] - 2.5 * sg[3] / (sg[0] + sg[2] + sg[3])) < 1e-6);
    /* the bias only ranks: an expert it lifts weighs its own score */
    const float lift[8] = {0, 0, 0, 0, 0, 0, 1.0f, 0};
    ref_moe_route(l8, 8, 2, 0, &(struct k_moe_router){.sigmoid = true}, lift, 0, ids, wts);
    ck_assert(ids[0] == 6 && fabs(wts[0] - sg[6]) < 1e-6 && ids[1] == 7 && fabs(wts[1] - sg[7]) < 1e-6);
    /* without groups and bias expert 7 leads; unnormalised weights are the scores times the scale */
    const struct k_moe_router plain = {.sigmoid = true, .scale = 2.0f};
    ref_moe_route(l8, 8, 2, 0, &plain, NULL, 0, ids, wts);
    ck_assert(ids[0] == 7 && ids[1] == 0 && fabs(wts[0] - 2 * sg[7]) < 1e-6 && fabs(wts[1] - 2 * sg[0]) < 1e-6);
    /* a softmax's probabilities without renormalising: 3/9 and 3/9 */
    const struct k_moe_router probs = {0};
    ref_moe_route(logits, 4, 2, 0, &probs, NULL, 0, ids, wts);
    ck_assert(fabsf(wts[0] - 1.0f / 3) < 1e-6f && fabsf(wts[1] - 1.0f / 3) < 1e-6f);
    /* the grouped GEMM's grid covers every tile list copies over experts can make: the worst cases
     * (one copy an expert, one past a tile) and random spreads */
    ck_assert_int_eq(k_moe_tiles_bound(256, 256, 32), 8 + 256);
    for (int trial = 0; trial < 2000; trial++) {
        const int E = 1 + trial % 300, copies = 1 + (trial * 7919) % 5000, tile = trial % 2 ? 32 : 64;
        int c[300] = {0}, tiles = 0;
        uint64_t x = (uint64_t)trial * 0x9e3779b97f4a7c15ULL + 1;
        for (int i = 0; i < copies; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            c[trial % 3 ? (int)(x % (uint64_t)E) : i % E]++; /* uniform, or round robin */
        }
        for (int e = 0; e < E; e++)
            tiles += (c[e] + tile - 1) / tile;
        ck_assert_int_le(tiles, k_moe_tiles_bound(copies, E, tile));
    }
    /* the host fill is deterministic and within scale */
    ck_assert_int_eq(eng_layout_build(&TINY, &l, &err), 0);
    int i = 2; /* qkv of layer 0 */
    int64_t n = l.t[i].rows * l.t[i].cols;
    bf16_t *a = xmalloc(2 * n), *b = xmalloc(2 * n);
    eng_fill_host(&l, i, 9, a);
    eng_fill_host(&l, i, 9, b);
    ck_assert_int_eq(memcmp(a, b, 2 * n), 0);
    double mean = 0;
    for (int64_t j = 0; j < n; j++) {
        float v = eng_bf2f(a[j]);
        ck_assert(fabsf(v) <= l.t[i].scale * 1.01f);
        mean += v;
    }
    ck_assert(fabs(mean / n) < 0.05 * l.t[i].scale);
    eng_fill_host(&l, i, 10, b);
    ck_assert_int_ne(memcmp(a, b, 2 * n), 0);
    ck_assert_int_eq(eng_f2bf(1.0f), 0x3f80);
    ck_assert(eng_bf2f(eng_f2bf(3.140625f)) == 3.140625f);
    ck_assert_int_eq(eng_f2bf(1.00390625f), 0x3f80); /* ties round to even */
    free(a), free(b);
    eng_layout_free(&l);
}
END_TEST

/* Every element of the model's tensors in exactly one rank's share where the tensor is split, in
 * every rank's where it is whole; each share cut from the very values the rank draws for it. */
static void check_shares(const struct model_cfg *m, int size)
{
    struct eng_layout g, l[8];
    struct ts_err err;
    ck_assert_int_eq(eng_layout_build(m, &g, &err), 0);
    for (int r = 0; r < size; r++)
        ck_assert_int_eq(eng_layout_build_tp(m, r, size, &l[r], &err), 0);
    struct eng_shard *sh = xmalloc(sizeof *sh * (size_t)ENG_SHARD_MAX(m));
    for (int i = 0; i < g.n; i++) {
        const struct eng_tensor *t = &g.t[i];
        const int64_t n = t->rows * t->cols;
        int *seen = xcalloc((size_t)n, sizeof *seen);
        bf16_t *whole = xmalloc(2 * (size_t)n), *share = xmalloc(2 * (size_t)n), *drawn = xmalloc(2 * (size_t)n);
        eng_fill_host(&g, i, 3, whole);
        int64_t total = 0;
        for (int r = 0; r < size; r++) {
            const struct eng_tensor *s = &l[r].t[i];
            ck_assert(s->kind == t->kind && s->layer == t->layer && s->scale == t->scale);
            int64_t col0, row = 0;
            const int k = eng_shard_rows(m, t, r, size, sh, &col0);
            for (int p = 0; p < k; p++)
                for (int64_t a = 0; a < sh[p].rows; a++, row++)
                    for (int64_t c = 0; c < s->cols; c++) {
                        const int64_t at = (sh[p].row0 + a) * t->cols + col0 + c;
                        seen[at]++;
                        /* what the GPU's window fill draws for this element of the share */
                        drawn[row * s->cols + c] = t->ones ? 0x3f80
                            : eng_f2bf(t->scale * eng_hash_uniform(eng_tensor_seed(3, i), (uint64_t)at));
                    }
            ck_assert_int_eq(row, s->rows);
            eng_shard_extract(m, t, r, size, whole, share);
            ck_assert_int_eq(memcmp(share, drawn, 2 * (size_t)(s->rows * s->cols)), 0);
            total += s->rows * s->cols;
        }
        const bool whole_everywhere = total == n * size;
        ck_assert(whole_everywhere || total == n);
        for (int64_t a = 0; a < n; a++)
            ck_assert_int_eq(seen[a], whole_everywhere ? size : 1);
        ck_assert(whole_everywhere == (t->kind == W_EMB || t->kind == W_ROUTER || t->ones));
        free(seen), free(whole), free(share), free(drawn);
    }
    free(sh);
    for (int r = 0; r < size; r++)
        eng_layout_free(&l[r]);
    eng_layout_free(&g);
}

START_TEST(tensor_parallel_shares)
{
    /* a dense model with QKV bias and GQA, and a mixture of experts with a shared expert and a dense
     * first layer, over 2 and 4 ranks */
    struct model_cfg dense = TINY, moe;
    dense.num_heads = 8, dense.num_kv_heads = 4, dense.vocab = 96;
    moe = dense;
    moe.num_experts = 4, moe.experts_top_k = 2, moe.moe_ffn = 256, moe.num_shared_experts = 1;
    moe.first_dense_layers = 1;
    for (int size = 2; size <= 4; size += 2) {
        check_shares(&dense, size);
        check_shares(&moe, size);
    }
    /* one rank is the model itself */
    struct eng_layout a, b;
    struct ts_err err;
    ck_assert_int_eq(eng_layout_build(&moe, &a, &err), 0);
    ck_assert_int_eq(eng_layout_build_tp(&moe, 0, 1, &b, &err), 0);
    ck_assert(a.n == b.n && a.total == b.total);
    for (int i = 0; i < a.n; i++) /* field by field: the structs' padding is never written */
        ck_assert(a.t[i].kind == b.t[i].kind && a.t[i].layer == b.t[i].layer && a.t[i].rows == b.t[i].rows &&
                  a.t[i].cols == b.t[i].cols && a.t[i].offset == b.t[i].offset && a.t[i].scale == b.t[i].scale &&
                  a.t[i].ones == b.t[i].ones);
    eng_layout_free(&a), eng_layout_free(&b);
    /* the share each rank runs, and the sizes refused by name */
    struct model_cfg local;
    ck_assert_int_eq(model_tp_share(model_find("dream-7b"), 2, &local, &err), 0);
    ck_assert(local.num_heads == 14 && local.num_kv_heads == 2 && local.ffn == 9472 && local.vocab == 76032 &&
              local.hidden == 3584);
    ck_assert_int_eq(model_tp_share(model_find("dream-7b"), 8, &local, &err), -1);
    ck_assert(strstr(err.msg, "--tp 8 does not divide dream-7b's 28 query heads"));
    moe.moe_ffn = 64; /* an expert's share of 32 columns is below the grouped GEMM's 64 */
    ck_assert_int_eq(eng_layout_build_tp(&moe, 0, 2, &a, &err), -1);
    ck_assert_int_eq(eng_layout_build_tp(&dense, 2, 2, &a, &err), -1);
    ck_assert(strstr(err.msg, "rank 2 of 2"));
}
END_TEST

static void expect_idx(const int32_t *got, const int32_t *want, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(got[i], want[i]);
}

/* The selection's reference on a case worked by hand: one query head of dimension 2 per K/V head,
 * one scoring row q = (1, 0 | 0, 1), so head 0 scores a key by its first value and head 1 by its
 * fourth. */
START_TEST(kv_select_by_hand)
{
    /* keys [6][2 heads x 2]: head 0 scores 5 1 0 0 0 4, head 1 scores 0 0 3 0 2 0 */
    const float keys[6][4] = {{5, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 3}, {0, 0, 0, 0}, {0, 0, 0, 2}, {4, 0, 0, 0}};
    const float q[4] = {1, 0, 0, 1};
    float k[24], v[24];
    int32_t idx[4];
    /* per head, no pooling, keep 2: head 0 keeps keys 0 and 5, head 1 keys 2 and 4 */
    memcpy(k, keys, sizeof k);
    for (int i = 0; i < 24; i++)
        v[i] = (float)i;
    ref_kv_select(q, 4, 1, k, v, 6, 2, 2, 2, 2, 1, 1, idx);
    expect_idx(idx, (const int32_t[]){0, 5, 2, 4}, 4);
    ck_assert(k[0] == 5 && k[4] == 4); /* head 0's rows moved to keys 0, 1 */
    ck_assert(k[3] == 3 && k[7] == 2); /* head 1's */
    ck_assert(v[0] == 0 && v[4] == 20 && v[2] == 10 && v[6] == 18);
    /* uniform: the sums 5 1 3 0 2 4, keep 3: keys 0, 2, 5 */
    memcpy(k, keys, sizeof k);
    ref_kv_select(q, 4, 1, k, v, 6, 3, 2, 2, 2, 1, 0, idx);
    expect_idx(idx, (const int32_t[]){0, 2, 5}, 3);
    /* pooling over 3 keys: 5 5 3 3 4 4 (uniform); keep 3 takes 0, 1 and the lower of the tied 4s */
    memcpy(k, keys, sizeof k);
    ref_kv_select(q, 4, 1, k, v, 6, 3, 2, 2, 2, 3, 0, idx);
    expect_idx(idx, (const int32_t[]){0, 1, 4}, 3);
    /* two scoring rows average: (1,0|0,1) and (3,0|0,3) score as (2,0|0,2): the same sets */
    const float q2[8] = {1, 0, 0, 1, 3, 0, 0, 3};
    memcpy(k, keys, sizeof k);
    ref_kv_select(q2, 4, 2, k, v, 6, 2, 2, 2, 2, 1, 1, idx);
    expect_idx(idx, (const int32_t[]){0, 5, 2, 4}, 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_ref");
    ck_case(s, attention_cases, 60);
    ck_case(s, rmsnorm_rope_swiglu_argmax, 60);
    ck_case(s, single_ops_against_naive_ones, 60);
    ck_case(s, reuse_equals_refresh, 60);
    ck_case(s, block_causal_prefill_then_block, 60);
    ck_case(s, weights_layout_and_fill, 60);
    ck_case(s, tensor_parallel_shares, 60);
    ck_case(s, feature_cache_fixed_point, 60);
    ck_case(s, widening_step_matches_feature_cache, 60);
    ck_case(s, focus_eviction, 60);
    ck_case(s, kv_select_by_hand, 60);
    return run_suite("eng_ref", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
