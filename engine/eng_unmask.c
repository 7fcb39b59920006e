/* eng_unmask.c: the unmasking rules' host reference and their spec (eng_unmask.h). */
#include "eng_unmask.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[UNMASK_KINDS] = {"topk", "threshold", "hierarchical", "credit"};

const char *unmask_name(int32_t kind) { return kind >= 0 && kind < UNMASK_KINDS ? names[kind] : "?"; }

/* A probability argument: a number in [0, 1], or in (0, 1] where zero is refused (a threshold of 0
 * would unmask every row at once). */
static int parse_prob(const char *spec, const char *what, const char *text, bool zero, float *out,
                      struct ts_err *err)
{
    double v;
    if (ts_parse_double(text, &v) || !(zero ? v >= 0 : v > 0) || !(v <= 1))
        return ts_fail(err, "--decoder %s: %s '%s' must be a confidence in %s, 1]", spec, what, text,
                       zero ? "[0" : "(0");
    *out = (float)v;
    return 0;
}

int unmask_parse(const char *spec, struct unmask_rule *out, struct ts_err *err)
{
    const char *colon = strchr(spec, ':');
    const size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    int kind = -1;
    for (int i = 0; i < UNMASK_KINDS; i++)
        if (strlen(names[i]) == len && strncmp(spec, names[i], len) == 0)
            kind = i;
    if (kind < 0 || !colon || !colon[1])
        return ts_fail(err, "--decoder %s: expected topk:K, threshold:TAU, hierarchical:TAU[,LOW] or credit:TAU", spec);
    *out = (struct unmask_rule){.kind = kind, .low = 0.4f, .alpha = 0.7f, .beta = 0.8f, .gamma = 0.2f};
    const char *arg = colon + 1;
    if (kind == UNMASK_TOPK) {
        int64_t k;
        if (ts_parse_i64(arg, &k) || k < 1 || k > UNMASK_MAX_ROWS)
            return ts_fail(err, "--decoder %s: K '%s' must be an integer in 1..%d", spec, arg, UNMASK_MAX_ROWS);
        out->k = (int32_t)k;
        return 0;
    }
    char tau[64];
    const char *comma = strchr(arg, ',');
    if (comma && kind != UNMASK_HIERARCHICAL)
        return ts_fail(err, "--decoder %s: %s takes one confidence (%s:TAU)", spec, names[kind], names[kind]);
    snprintf(tau, sizeof tau, "%.*s", comma ? (int)(comma - arg) : (int)strlen(arg), arg);
    if (parse_prob(spec, "TAU", tau, false, &out->tau, err))
        return -1;
    return comma ? parse_prob(spec, "LOW", comma + 1, true, &out->low, err) : 0;
}

void unmask_format(const struct unmask_rule *u, char *buf, size_t n)
{
    if (u->kind == UNMASK_TOPK)
        snprintf(buf, n, "topk:%d", u->k);
    else if (u->kind == UNMASK_THRESHOLD || u->kind == UNMASK_CREDIT)
        snprintf(buf, n, "%s:%g", names[u->kind], u->tau);
    else
        snprintf(buf, n, "hierarchical:%g,%g", u->tau, u->low);
}

/* Row i ranks above row j: more confident, or as confident and lower (NaN below every number). */
static int above(const float *conf, int32_t i, int32_t j)
{
    const float a = isnan(conf[i]) ? -INFINITY : conf[i], b = isnan(conf[j]) ? -INFINITY : conf[j];
    return a > b || (a == b && i < j);
}

int32_t unmask_block(const struct unmask_rule *u, const float *conf, const uint8_t *masked, int32_t n,
                     uint8_t *pick)
{
    int32_t count = 0;
    for (int32_t i = 0; i < n; i++) {
        pick[i] = 0;
        if (!masked[i])
            continue;
        int32_t rank = 0; /* masked rows above it */
        for (int32_t j = 0; j < n; j++)
            rank += j != i && masked[j] && above(conf, j, i);
        bool take = rank == 0;
        if (u->kind == UNMASK_TOPK)
            take = rank < u->k;
        else if (u->kind == UNMASK_THRESHOLD || u->kind == UNMASK_CREDIT) /* credit: over fused logits */
            take |= conf[i] >= u->tau;
        else {
            bool best = conf[i] > u->low; /* the best of its run of masked rows (every tie) */
            for (int32_t j = i - 1; best && j >= 0 && masked[j]; j--)
                best = !(conf[j] > conf[i]);
            for (int32_t j = i + 1; best && j < n && masked[j]; j++)
                best = !(conf[j] > conf[i]);
            take |= best || conf[i] > u->tau;
        }
        pick[i] = take;
        count += take;
    }
    return count;
}

void credit_fuse(const struct unmask_rule *u, struct credit_row *st, uint32_t flags, const float *logits, int V,
                 int32_t *tok, float *maxv, float *conf)
{
    if (flags & CREDIT_CLEAR)
        st->n = 0;
    if (flags & CREDIT_DECAY)
        for (int32_t j = 0; j < st->n; j++)
            st->val[j] *= u->beta;
    if (flags & CREDIT_MASKED) { /* the plain top-1's probability, boosted, to its token's credit */
        int32_t j = 0;
        while (j < st->n && st->tok[j] != *tok)
            j++;
        if (j == st->n && st->n == CREDIT_MAX) { /* full: the smallest credit goes */
            j = 0;
            for (int32_t k = 1; k < st->n; k++)
                if (st->val[k] < st->val[j])
                    j = k;
            st->val[j] = 0;
        } else if (j == st->n) {
            st->val[st->n++] = 0;
        }
        st->tok[j] = *tok;
        st->val[j] += powf(*conf, u->gamma);
    }
    /* the fused row differs from the plain one at the credited tokens alone: its max, the sum of
     * exp(l - max) (1 / conf of the plain row) corrected there, its argmax (ties: the lower token) */
    const float m0 = *maxv;
    float m = m0;
    int32_t arg = *tok;
    for (int32_t j = 0; j < st->n; j++) {
        const float f = logits[st->tok[j]] + u->alpha * log1pf(st->val[j]);
        if (f > m || (f == m && st->tok[j] < arg))
            m = f, arg = st->tok[j];
    }
    double sum = (double)(1.0f / *conf) * exp((double)m0 - m);
    for (int32_t j = 0; j < st->n; j++) {
        const double l = logits[st->tok[j]];
        sum += exp(l + u->alpha * log1p((double)st->val[j]) - m) - exp(l - m);
    }
    (void)V;
    *tok = arg;
    *maxv = m;
    *conf = (float)(1.0 / sum);
}
