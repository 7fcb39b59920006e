/* decode.c: fixed and threshold decode models, and the TPF profile files they read. */
#include "decode.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int decode_profile_parse(const char *path, const char *text, size_t len, const char *name, const char *kind,
                         double *tpf, struct ts_err *err)
{
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
        if (strcmp(key, "tpf") != 0 && strcmp(key, "source") != 0 && strcmp(key, "decoder") != 0) {
            ts_fail(err, "%s: %s.%s: unknown key (a profile has tpf, source and decoder)", path, name, key);
            goto done;
        }
    }
    /* the decoder whose TPF it is (threshold where it does not say): another one's is refused */
    json_t *dec = json_object_get(p, "decoder");
    const char *by = json_is_string(dec) ? json_string_value(dec) : "threshold";
    if (dec && !json_is_string(dec)) {
        ts_fail(err, "%s: %s.decoder: must be a decoder's name (threshold, hierarchical, credit)", path, name);
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
    *tpf = json_number_value(t);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* Looks `name` up in a profile file: {"NAME": {"tpf": x, "decoder": "..."}, ...}, a profile of
 * decoder `kind`. */
static int profile_lookup(const char *path, const char *name, const char *kind, double *tpf, struct ts_err *err)
{
    char *text;
    size_t len;
    if (ts_read_file(path, &text, &len, err))
        return -1;
    int rc = decode_profile_parse(path, text, len, name, kind, tpf, err);
    free(text);
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

/* A TPF decoder's argument: a number, a profile of the shipped file or FILE:NAME, of decoder `kind`. */
static int parse_tpf(const char *kind, const char *spec, const char *arg, const char *datadir, struct decode_model *out,
                     struct ts_err *err)
{
    double v;
    if (ts_parse_double(arg, &v) == 0) {
        if (!(v >= 1.0 && v <= 1e6))
            return ts_fail(err, "decode model '%s': mean tokens per forward must be in 1..1000000", spec);
        out->tpf = v;
        return 0;
    }
    char path[1024], name[128];
    const char *sep = strrchr(arg, ':');
    if (sep) { /* threshold:FILE:NAME */
        snprintf(path, sizeof path, "%.*s", (int)(sep - arg), arg);
        snprintf(name, sizeof name, "%s", sep + 1);
    } else {
        snprintf(path, sizeof path, "%s/decode_profiles.json", datadir);
        snprintf(name, sizeof name, "%s", arg);
    }
    return profile_lookup(path, name, kind, &out->tpf, err);
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
    return 1 + (int32_t)gsl_ran_poisson(r->rng, dm->tpf - 1.0);
}

/* The decode models, in the order of enum decode_kind. Adding one: its parse and draw functions
 * and a line here. */
static const struct decode_ops decoders[] = {
    [DECODE_FIXED] = {"fixed", "fixed:K", "K tokens per step", false, parse_fixed, draw_fixed},
    [DECODE_THRESHOLD] = {"threshold", "threshold:PROFILE|TPF|FILE:NAME",
                          "1 + Poisson(TPF - 1) tokens per step, TPF a profile's (tessera list decode), a number, "
                          "or a profile of your own file", true, parse_threshold, draw_threshold},
    [DECODE_HIERARCHICAL] = {"hierarchical", "hierarchical:PROFILE|TPF|FILE:NAME",
                             "dInfer's hierarchical decoding (each masked run's most confident token, and every "
                             "token above the threshold): 1 + Poisson(TPF - 1) at its profiles' TPF",
                             true, parse_hierarchical, draw_threshold},
    [DECODE_CREDIT] = {"credit", "credit:TPF|FILE:NAME",
                       "dInfer's credit decoding (threshold decoding on logits fused with a per-block credit "
                       "matrix of [block, vocab] fp32, kept across the block's steps): 1 + Poisson(TPF - 1); "
                       "its steps pay the fusion and the matrix's memory",
                       true, parse_credit, draw_threshold},
};

const struct decode_ops *decode_get(int i)
{
    return i >= 0 && (size_t)i < TS_ARRAY_LEN(decoders) ? &decoders[i] : NULL;
}

int decode_parse(const char *spec, const char *datadir, struct decode_model *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", spec);
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

int32_t decode_tokens(const struct decode_model *dm, const struct request *r)
{
    int32_t masked = req_masked_in_block(r);
    TS_ASSERT(masked > 0);
    if (req_content_left_in_block(r) == 0)
        return masked; /* only EOS positions left: the rest of the block decodes at once */
    const int32_t k = decode_get(dm->kind)->draw(dm, r);
    return k < masked ? k : masked;
}
