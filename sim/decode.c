/* decode.c: fixed and threshold decode models, and the TPF profile files they read. */
#include "decode.h"

#include <gsl/gsl_interp.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A profile's "steps" into out: counts of the steps that committed 1, 2, ... positions, whose mean
 * must be its TPF. */
static int parse_steps(const char *path, const char *name, const json_t *a, struct decode_profile *out,
                       struct ts_err *err)
{
    const size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n == 0 || n > DECODE_STEPS_MAX)
        return ts_fail(err, "%s: %s.steps: must be an array of 1 to %d counts (the steps that committed 1, 2, ... "
                            "positions)", path, name, DECODE_STEPS_MAX);
    double all = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        const double c = json_is_number(v) ? json_number_value(v) : -1;
        if (!(c >= 0 && c <= 1e15))
            return ts_fail(err, "%s: %s.steps[%zu]: must be a count (a number >= 0)", path, name, i);
        out->steps[i] = c;
        all += c;
        sum += c * (double)(i + 1);
    }
    if (!(all > 0))
        return ts_fail(err, "%s: %s.steps: counts no step", path, name);
    if (fabs(sum / all - out->tpf) > 0.01 * out->tpf)
        return ts_fail(err, "%s: %s.steps: their mean, %.4g positions a step, is not its tpf %.4g", path, name, sum / all,
                       out->tpf);
    out->nsteps = (int32_t)n;
    return 0;
}

/* A profile's "sweep" into out->sweep, tau descending: 2 to DECODE_SWEEP_MAX points of distinct
 * thresholds, each with its TPF and accuracy; the profile's own tau must be one of them, with that
 * point's TPF and accuracy. */
static int parse_sweep(const char *path, const char *name, const json_t *a, struct decode_profile *out,
                       struct ts_err *err)
{
    const size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n < 2 || n > DECODE_SWEEP_MAX)
        return ts_fail(err, "%s: %s.sweep: must be an array of 2 to %d points ({\"tau\": t, \"tpf\": x, \"accuracy\": "
                            "a}, each a published threshold's)", path, name, DECODE_SWEEP_MAX);
    if (out->tau < 0 || out->accuracy < 0)
        return ts_fail(err, "%s: %s.sweep: the profile's own tau, accuracy and task must be given (its point of the "
                            "sweep)", path, name);
    if (out->nsteps > 0)
        return ts_fail(err, "%s: %s.sweep: a measured distribution (steps) holds at one threshold; a sweep moves the "
                            "TPF, which the distribution would not follow", path, name);
    struct decode_sweep *sw = &out->sweep;
    for (size_t i = 0; i < n; i++) {
        const json_t *pt = json_array_get(a, i);
        const json_t *t = json_object_get(pt, "tau"), *x = json_object_get(pt, "tpf"), *c = json_object_get(pt, "accuracy");
        if (!json_is_object(pt) || json_object_size(pt) != 3 || !json_is_number(t) || !json_is_number(x) ||
            !json_is_number(c))
            return ts_fail(err, "%s: %s.sweep[%zu]: must be {\"tau\": t, \"tpf\": x, \"accuracy\": a}", path, name, i);
        const double tau = json_number_value(t), tpf = json_number_value(x), acc = json_number_value(c);
        if (!(tau > 0 && tau <= 1) || !(tpf >= 1 && tpf <= 1e6) || !(acc >= 0 && acc <= 100))
            return ts_fail(err, "%s: %s.sweep[%zu]: tau must be in (0, 1], tpf in 1..1000000 and accuracy a percentage",
                           path, name, i);
        int32_t k = sw->n; /* insertion, tau descending */
        while (k > 0 && sw->tau[k - 1] < tau)
            sw->tau[k] = sw->tau[k - 1], sw->tpf[k] = sw->tpf[k - 1], sw->accuracy[k] = sw->accuracy[k - 1], k--;
        if (k > 0 && sw->tau[k - 1] == tau)
            return ts_fail(err, "%s: %s.sweep[%zu]: tau %g is given twice", path, name, i, tau);
        sw->tau[k] = tau, sw->tpf[k] = tpf, sw->accuracy[k] = acc;
        sw->n++;
    }
    for (int32_t k = 0; k < sw->n; k++)
        if (sw->tau[k] == out->tau) {
            if (fabs(sw->tpf[k] - out->tpf) > 1e-9 || fabs(sw->accuracy[k] - out->accuracy) > 1e-9)
                return ts_fail(err, "%s: %s.sweep: its point at tau %g (tpf %g, accuracy %g) is not the profile's own "
                                    "(tpf %g, accuracy %g)", path, name, out->tau, sw->tpf[k], sw->accuracy[k], out->tpf,
                               out->accuracy);
            return 0;
        }
    return ts_fail(err, "%s: %s.sweep: holds no point at the profile's tau %g", path, name, out->tau);
}

int decode_profile_parse(const char *path, const char *text, size_t len, const char *name, const char *kind,
                         struct decode_profile *out, struct ts_err *err)
{
    out->tpf = 0;
    out->nsteps = 0;
    out->sweep.n = 0;
    out->tau = -1;
    out->accuracy = -1;
    out->task[0] = '\0';
    if (ts_json_text(path, text, len, err))
        return -1;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return ts_fail(err, "%s:%d: %s", path, jerr.line, jerr.text);
    int rc = -1;
    json_t *p = json_is_object(root) ? json_object_get(root, name) : NULL;
    if (!json_is_object(root)) {
        ts_fail(err, "%s: not a JSON object of profiles ({\"NAME\": {\"tpf\": x, \"source\": \"...\"}})", path);
        goto done;
    }
    if (!p || !json_is_object(p)) {
        char list[512];
        size_t off = 0;
        const char *key;
        json_t *v;
        list[0] = '\0';
        json_object_foreach(root, key, v) {
            if (key[0] != '_' && off < sizeof list)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", off ? ", " : "", key);
        }
        ts_fail(err, "%s: no decode profile '%s' (profiles: %s)", path, name, list);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(p, key, v) { /* a misspelt key would otherwise be ignored */
        if (strcmp(key, "tpf") != 0 && strcmp(key, "source") != 0 && strcmp(key, "decoder") != 0 &&
            strcmp(key, "steps") != 0 && strcmp(key, "tau") != 0 && strcmp(key, "accuracy") != 0 &&
            strcmp(key, "task") != 0 && strcmp(key, "sweep") != 0) {
            ts_fail(err, "%s: %s.%s: unknown key (a profile has tpf, source, decoder, tau, steps, accuracy, task and "
                         "sweep)", path, name, key);
            goto done;
        }
    }
    /* the published accuracy at its setting, on the task it names (the two together) */
    json_t *acc = json_object_get(p, "accuracy"), *task = json_object_get(p, "task");
    if (!acc != !task || (acc && (!json_is_number(acc) || !(json_number_value(acc) >= 0 && json_number_value(acc) <= 100))) ||
        (task && (!json_is_string(task) || !json_string_value(task)[0] ||
                  strlen(json_string_value(task)) >= sizeof out->task))) {
        ts_fail(err, "%s: %s: accuracy (a percentage, 0 to 100) and task (what it scores, a name of at most %zu "
                     "characters) go together", path, name, sizeof out->task - 1);
        goto done;
    }
    out->accuracy = acc ? json_number_value(acc) : -1;
    snprintf(out->task, sizeof out->task, "%s", task ? json_string_value(task) : "");
    json_t *tau = json_object_get(p, "tau");
    if (tau && (!json_is_number(tau) || !(json_number_value(tau) > 0 && json_number_value(tau) <= 1))) {
        ts_fail(err, "%s: %s.tau: must be a confidence threshold in (0, 1]", path, name);
        goto done;
    }
    out->tau = tau ? json_number_value(tau) : -1;
    /* the decoder whose TPF it is (threshold where it does not say): another one's is refused */
    json_t *dec = json_object_get(p, "decoder");
    const char *by = json_is_string(dec) ? json_string_value(dec) : "threshold";
    if (dec && !json_is_string(dec)) {
        ts_fail(err, "%s: %s.decoder: must be a decoder's name (threshold, hierarchical, credit, wino)", path, name);
        goto done;
    }
    if (kind && strcmp(by, kind) != 0) {
        ts_fail(err, "%s: profile '%s' is the TPF of %s decoding, not of %s (%s:%s)", path, name, by, kind, by, name);
        goto done;
    }
    json_t *t = json_object_get(p, "tpf");
    if (!json_is_number(t) || !(json_number_value(t) >= 1.0 && json_number_value(t) <= 1e6)) {
        ts_fail(err, "%s: %s.tpf: must be a number in 1..1000000", path, name);
        goto done;
    }
    out->tpf = json_number_value(t);
    json_t *steps = json_object_get(p, "steps"), *sweep = json_object_get(p, "sweep");
    rc = steps ? parse_steps(path, name, steps, out, err) : 0;
    if (rc == 0 && sweep)
        rc = parse_sweep(path, name, sweep, out, err);
done:
    json_decref(root);
    return rc;
}

/* Looks `name` up in a profile file: {"NAME": {"tpf": x, "decoder": "..."}, ...}, a profile of
 * decoder `kind`. */
static int profile_lookup(const char *path, const char *name, const char *kind, struct decode_model *out,
                          struct ts_err *err)
{
    char *text;
    size_t len;
    if (ts_read_file(path, &text, &len, err))
        return -1;
    struct decode_profile *pr = xmalloc(sizeof *pr);
    int rc = decode_profile_parse(path, text, len, name, kind, pr, err);
    free(text);
    if (rc == 0) {
        out->tpf = pr->tpf;
        out->accuracy = pr->accuracy;
        snprintf(out->task, sizeof out->task, "%s", pr->task);
        out->tau = pr->tau;
        out->sweep = pr->sweep;
        out->ncdf = pr->nsteps;
        double all = 0;
        for (int32_t k = 0; k < pr->nsteps; k++)
            all += pr->steps[k];
        out->cdf[0] = 0;
        for (int32_t k = 1; k <= pr->nsteps; k++)
            out->cdf[k] = out->cdf[k - 1] + pr->steps[k - 1] / all;
        if (pr->nsteps > 0)
            out->cdf[pr->nsteps] = 1.0;
    }
    free(pr);
    return rc;
}

static int parse_fixed(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                       struct ts_err *err)
{
    (void)datadir;
    int64_t k;
    if (ts_parse_i64(arg, &k) || k < 1 || k > 1 << 20)
        return ts_fail(err, "decode model '%s': K must be a whole number in 1..1048576", spec);
    out->k = (int32_t)k;
    return 0;
}

static int32_t draw_fixed(const struct decode_model *dm, const struct request *r)
{
    (void)r;
    return dm->k;
}

/* tau=TAU[,NAME]: the profile of decoder `kind` in path measured at confidence threshold TAU (its
 * "tau"): NAME, checked, or the file's first such one. */
static int tau_profile(const char *kind, const char *spec, const char *arg, const char *path, char *name, size_t len,
                       struct ts_err *err)
{
    char num[64];
    const char *comma = strchr(arg, ',');
    snprintf(num, sizeof num, "%.*s", comma ? (int)(comma - arg) : 63, arg);
    double want;
    if (ts_parse_double(num, &want) || !(want > 0 && want <= 1))
        return ts_fail(err, "decode model '%s': tau must be a confidence threshold in (0, 1]", spec);
    char *text;
    size_t n;
    if (ts_read_file(path, &text, &n, err))
        return -1;
    if (ts_json_text(path, text, n, err)) {
        free(text);
        return -1;
    }
    json_t *root = json_loadb(text, n, 0, NULL), *v;
    free(text);
    const char *key;
    char seen[512] = "";
    name[0] = '\0';
    json_object_foreach(root, key, v) {
        json_t *t = json_object_get(v, "tau"), *dec = json_object_get(v, "decoder");
        const char *by = json_is_string(dec) ? json_string_value(dec) : "threshold";
        if (!json_is_number(t) || strcmp(by, kind) != 0)
            continue;
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s%s at %g", seen[0] ? ", " : "", key,
                 json_number_value(t));
        if (!name[0] && fabs(json_number_value(t) - want) < 1e-9 && (!comma || strcmp(key, comma + 1) == 0))
            snprintf(name, len, "%s", key);
    }
    json_decref(root);
    if (!name[0])
        return ts_fail(err, "decode model '%s': no %s profile%s%s measured at confidence threshold %g (%s: %s); give "
                            "the mean tokens a forward it reaches (%s:TPF)", spec, kind, comma ? " " : "",
                       comma ? comma + 1 : "", want, path, seen[0] ? seen : "none says its tau", kind);
    return 0;
}

/* A TPF decoder's argument: a number, tau=TAU[,NAME] (the profile measured at that confidence
 * threshold), a profile of the shipped file or FILE:NAME, of decoder `kind`. */
static int parse_tpf(const char *kind, const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                     struct ts_err *err)
{
    double v;
    if (ts_parse_double(arg, &v) == 0) {
        if (!(v >= 1.0 && v <= 1e6))
            return ts_fail(err, "decode model '%s': mean tokens per forward must be in 1..1000000%s%s%s", spec,
                           v > 0 && v < 1 ? " (a confidence threshold is " : "", v > 0 && v < 1 ? kind : "",
                           v > 0 && v < 1 ? ":tau=TAU)" : "");
        out->tpf = v;
        return 0;
    }
    char path[1024], name[128];
    const char *sep = strrchr(arg, ':');
    if (strncmp(arg, "tau=", 4) == 0) { /* threshold:tau=0.9: the papers' confidence threshold */
        snprintf(path, sizeof path, "%s/decode_profiles.json", datadir);
        if (tau_profile(kind, spec, arg + 4, path, name, sizeof name, err)) {
            /* tau=TAU,NAME where NAME publishes a sweep of thresholds around TAU: the profile at TAU
             * along it (decode_at_threshold), as load control moves it */
            const char *comma = strchr(arg, ',');
            struct ts_err none;
            double tau;
            char num[64];
            snprintf(num, sizeof num, "%.*s", comma ? (int)(comma - arg - 4) : 0, arg + 4);
            if (!comma || ts_parse_double(num, &tau) || profile_lookup(path, comma + 1, kind, out, &none) ||
                out->sweep.n < 2)
                return -1;
            return decode_at_threshold(out, tau, err);
        }
    } else if (sep) { /* threshold:FILE:NAME */
        snprintf(path, sizeof path, "%.*s", (int)(sep - arg), arg);
        snprintf(name, sizeof name, "%s", sep + 1);
    } else {
        snprintf(path, sizeof path, "%s/decode_profiles.json", datadir);
        snprintf(name, sizeof name, "%s", arg);
    }
    return profile_lookup(path, name, kind, out, err);
}

static int parse_threshold(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                           struct ts_err *err)
{
    return parse_tpf("threshold", spec, arg, datadir, out, err);
}

static int parse_hierarchical(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                              struct ts_err *err)
{
    return parse_tpf("hierarchical", spec, arg, datadir, out, err);
}

static int parse_credit(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                        struct ts_err *err)
{
    return parse_tpf("credit", spec, arg, datadir, out, err);
}

static int32_t draw_threshold(const struct decode_model *dm, const struct request *r)
{
    TS_ASSERT(r->rng != NULL);
    if (dm->ncdf > 0) /* the measured distribution: k with cdf[k - 1] <= u < cdf[k] */
        return 1 + (int32_t)gsl_interp_bsearch(dm->cdf, gsl_rng_uniform(r->rng), 0, (size_t)dm->ncdf);
    return 1 + (int32_t)gsl_ran_poisson(r->rng, dm->tpf - 1.0);
}

static int parse_spiffy(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                        struct ts_err *err)
{
    (void)datadir;
    char text[64];
    snprintf(text, sizeof text, "%s", arg);
    char *comma = strchr(text, ',');
    double d = 3;
    if (comma) {
        *comma = '\0';
        if (ts_parse_double(comma + 1, &d) || !(d >= 1 && d <= 64) || d != floor(d))
            return ts_fail(err, "decode model '%s': D, the draft blocks a forward verifies, must be a whole number in "
                                "1..64", spec);
    }
    double v;
    if (ts_parse_double(text, &v) || !(v >= 1.0 && v <= 1e6))
        return ts_fail(err, "decode model '%s': TPF, the tokens a forward, must be a number in 1..1000000 (spiffy:TPF[,D])",
                       spec);
    out->tpf = v;
    out->drafts = (int32_t)d;
    return 0;
}

/* WINO: a TPF, a profile of wino's (its Table 1), and its shadow block. */
static int parse_wino(const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                      struct ts_err *err)
{
    out->drafts = 1;
    return parse_tpf("wino", spec, arg, datadir, out, err);
}

void decode_spiffy_shape(const struct decode_model *dm, int32_t block, int32_t attn_block, struct segment *s)
{
    const int32_t rows = dm->drafts * block;
    if (s->attn_keys == 0 && s->q > 0) /* the real rows' keys a row, on average */
        s->attn_keys = (int32_t)llround(attn_pairs(s->q, s->kv, attn_block) / s->q);
    s->q += rows;
    s->logit_rows += rows;
}

/* The decode models, in the order of enum decode_kind. Adding one: its parse and draw functions
 * and a line here. */
static const struct decode_ops decoders[] = {
    [DECODE_FIXED] = {"fixed", "fixed:K",
                      "K tokens per step, EOS positions too (LLaDA's fixed transfer schedule: G / K steps)", false,
                      false, parse_fixed, draw_fixed},
    [DECODE_THRESHOLD] = {"threshold", "threshold:PROFILE|TPF|tau=TAU[,PROFILE]|FILE:NAME",
                          "1 + Poisson(TPF - 1) tokens per step, TPF a profile's (tessera list decode), a number "
                          "(tokens a forward), the profile measured at confidence threshold TAU (tau=0.9: the "
                          "papers' threshold; its first profile, or PROFILE), or a profile of your own file (one "
                          "with a measured distribution of a step's commits, as engine generate writes it, draws "
                          "from that)",
                          true, true, parse_threshold, draw_threshold},
    [DECODE_HIERARCHICAL] = {"hierarchical", "hierarchical:PROFILE|TPF|FILE:NAME",
                             "dInfer's hierarchical decoding (each masked run's most confident token, and every "
                             "token above the threshold): 1 + Poisson(TPF - 1) at its profiles' TPF",
                             true, true, parse_hierarchical, draw_threshold},
    [DECODE_CREDIT] = {"credit", "credit:TPF|FILE:NAME",
                       "dInfer's credit decoding (threshold decoding on logits fused with a per-block credit "
                       "matrix of [block, vocab] fp32, kept across the block's steps): 1 + Poisson(TPF - 1); "
                       "its steps pay the fusion and the matrix's memory",
                       true, true, parse_credit, draw_threshold},
    [DECODE_SPIFFY] = {"spiffy", "spiffy:TPF[,D]",
                       "Spiffy's lossless self-speculation (arXiv 2509.18085; no public code): each forward also "
                       "verifies D [3] draft blocks, later states of the block predicted from the model's own "
                       "distributions, beside the block's rows (D x block rows more, their logits too); "
                       "1 + Poisson(TPF - 1) tokens a forward, TPF the steps it accepts a forward times its base "
                       "decoder's (the paper: 2.8-3.1 over one token a step on LLaDA)",
                       true, true, parse_spiffy, draw_threshold},
    [DECODE_WINO] = {"wino", "wino:PROFILE|TPF",
                     "WINO's revokable decoding (arXiv 2507.18578, Feng-Hong/WINO-DLLM): drafts every masked "
                     "position above a low threshold and re-masks those that a shadow block (the block's "
                     "positions again as masks, seeing the drafts) scores below a high one; each forward "
                     "runs the shadow block beside its rows (a block of rows more, their logits too); "
                     "1 + Poisson(TPF - 1) tokens a forward at its profiles' TPF, drafts net of those revoked",
                     true, true, parse_wino, draw_threshold},
};

const struct decode_ops *decode_get(int i)
{
    return i >= 0 && (size_t)i < TS_ARRAY_LEN(decoders) ? &decoders[i] : NULL;
}

int decode_parse(const char *spec, const char *datadir, struct decode_model *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", spec);
    out->accuracy = out->tau = -1;
    const char *colon = strchr(spec, ':');
    const size_t kind_len = colon ? (size_t)(colon - spec) : strlen(spec);
    char known[256] = "";
    for (size_t i = 0; i < TS_ARRAY_LEN(decoders); i++) {
        if (strlen(decoders[i].name) == kind_len && strncmp(spec, decoders[i].name, kind_len) == 0) {
            if (!colon)
                return ts_fail(err, "decode model '%s': expected %s", spec, decoders[i].spec);
            out->kind = (enum decode_kind)i;
            return decoders[i].parse(spec, colon + 1, datadir, out, err);
        }
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? " | " : "", decoders[i].spec);
    }
    return ts_fail(err, "decode model '%s': unknown kind (%s)", spec, known);
}

int decode_needs_rng(const struct decode_model *dm) { return decode_get(dm->kind)->needs_rng; }

/* Whether r's next step commits the rest of its block at once (only EOS positions left under a
 * decoder that commits them in bulk). */
static bool eos_in_bulk(const struct decode_model *dm, const struct request *r)
{
    const bool bulk = dm->eos == EOS_BULK || (dm->eos == EOS_AUTO && decode_get(dm->kind)->bulk_eos);
    return bulk && req_content_left_in_block(r) == 0;
}

int decode_scale_extra(struct decode_model *dm, double base, double factor, struct ts_err *err)
{
    if (dm->kind == DECODE_FIXED)
        return ts_fail(err, "decode model %s commits a fixed count a step: no threshold sets it", dm->spec);
    if (dm->ncdf > 0)
        return ts_fail(err, "decode model %s draws from a measured distribution, which a threshold's change does not "
                            "scale", dm->spec);
    dm->tpf = 1 + (base - 1) * factor;
    return 0;
}

int decode_at_threshold(struct decode_model *dm, double tau, struct ts_err *err)
{
    const struct decode_sweep *sw = &dm->sweep;
    if (sw->n < 2)
        return ts_fail(err, "decode model %s has no published sweep of thresholds", dm->spec);
    if (!(tau <= sw->tau[0] && tau >= sw->tau[sw->n - 1]))
        return ts_fail(err, "threshold %g lies outside decode model %s's published sweep (%g to %g)", tau, dm->spec,
                       sw->tau[sw->n - 1], sw->tau[0]);
    int32_t k = 0;
    while (k + 2 < sw->n && tau < sw->tau[k + 1])
        k++;
    const double w = (sw->tau[k] - tau) / (sw->tau[k] - sw->tau[k + 1]); /* 0 at tau[k], 1 at tau[k + 1] */
    dm->tpf = sw->tpf[k] + w * (sw->tpf[k + 1] - sw->tpf[k]);
    dm->accuracy = sw->accuracy[k] + w * (sw->accuracy[k + 1] - sw->accuracy[k]);
    dm->tau = tau;
    return 0;
}

int32_t decode_tokens(const struct decode_model *dm, const struct request *r)
{
    int32_t masked = req_masked_in_block(r);
    TS_ASSERT(masked > 0);
    if (eos_in_bulk(dm, r))
        return masked; /* only EOS positions left: the rest of the block decodes at once */
    const int32_t k = decode_get(dm->kind)->draw(dm, r);
    return k < masked ? k : masked;
}

int32_t decode_tokens_mean(const struct decode_model *dm, const struct request *r, double *carry)
{
    int32_t masked = req_masked_in_block(r);
    TS_ASSERT(masked > 0);
    if (eos_in_bulk(dm, r))
        return masked;
    int32_t k = dm->k;
    if (dm->kind != DECODE_FIXED) { /* the mean, its fraction carried to the next step */
        *carry += dm->tpf;
        k = TS_MAX(1, (int32_t)*carry);
        *carry -= k;
    }
    return k < masked ? k : masked;
}
