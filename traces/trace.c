/*
 * trace.c: trace loaders. Every format goes through one line iterator (LF or CRLF, with or
 * without a final newline) and, for CSV, one header-driven column lookup, so every error names
 * the file, the 1-based line and the column as the file spells it.
 */
#define _DEFAULT_SOURCE
#include "trace.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {"auto", "azure", "burstgpt", "mooncake", "lengths",
                                           "tessera"};

const char *trace_format_name(enum trace_format f)
{
    return (unsigned)f < TS_ARRAY_LEN(format_names) ? format_names[f] : "?";
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    free(t->reqs);
    free(t->hash);
    memset(t, 0, sizeof *t);
}

void trace_push(struct trace *t, int64_t arrival_ns, int32_t prompt, int32_t output)
{
    ts_grow((void **)&t->reqs, &t->cap, (size_t)t->n + 1, sizeof *t->reqs);
    t->reqs[t->n++] = (struct trace_req){.arrival_ns = arrival_ns, .prompt = prompt, .output = output};
}

/* --- lines and fields -------------------------------------------------------------------- */

struct line_iter {
    const char *p, *end;
    int64_t lineno;
    char *buf;
    size_t cap;
};

/* Returns the next line (without its terminator) NUL-terminated in it->buf, or NULL at the end. */
static char *next_line(struct line_iter *it)
{
    if (it->p >= it->end)
        return NULL;
    const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
    const char *stop = nl ? nl : it->end;
    size_t n = (size_t)(stop - it->p);
    if (n && it->p[n - 1] == '\r')
        n--;
    ts_grow((void **)&it->buf, &it->cap, n + 1, 1);
    memcpy(it->buf, it->p, n);
    it->buf[n] = '\0';
    it->p = nl ? nl + 1 : it->end;
    it->lineno++;
    return it->buf;
}

#define MAX_FIELDS 32

/* Splits a CSV line in place (no quoting in these formats; a quoted field is stripped of its
 * quotes). Returns the field count. */
static int split_csv(char *line, char **fields)
{
    int n = 0;
    char *s = line;
    for (;;) {
        if (n == MAX_FIELDS)
            return n;
        char *comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        char *f = s;
        while (*f == ' ' || *f == '\t')
            f++;
        size_t len = strlen(f);
        while (len && (f[len - 1] == ' ' || f[len - 1] == '\t'))
            f[--len] = '\0';
        if (len >= 2 && f[0] == '"' && f[len - 1] == '"') {
            f[len - 1] = '\0';
            f++;
        }
        fields[n++] = f;
        if (!comma)
            return n;
        s = comma + 1;
    }
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return false;
    return true;
}

/* --- field parsers ----------------------------------------------------------------------- */

static int field_count(const char *path, int64_t line, const char *name, const char *s, int32_t *out,
                       struct ts_err *err)
{
    int64_t v;
    double d;
    if (ts_parse_i64(s, &v) != 0) {
        /* some dumps write counts as 12.0 (decimal: strtod's hexadecimal, inf and nan are no count) */
        if (s[strspn(s, "0123456789.eE+- \t\r")] || ts_parse_double(s, &d) != 0 || d != floor(d))
            return ts_fail(err, "%s:%lld: %s: not an integer ('%s')", path, (long long)line, name, s);
        v = fabs(d) < 1e15 ? (int64_t)d : (d < 0 ? -1 : 100000001);
    }
    if (v < 0)
        return ts_fail(err, "%s:%lld: %s: negative length ('%s')", path, (long long)line, name, s);
    if (v > 100000000)
        return ts_fail(err, "%s:%lld: %s: '%s' is not a plausible token count (0..100000000)", path, (long long)line,
                       name, s);
    *out = (int32_t)v;
    return 0;
}

static int field_seconds_ns(const char *path, int64_t line, const char *name, const char *s,
                            double scale_to_ns, int64_t *out, struct ts_err *err)
{
    double d;
    if (ts_parse_double(s, &d) != 0)
        return ts_fail(err, "%s:%lld: %s: not a number ('%s')", path, (long long)line, name, s);
    if (d < 0)
        return ts_fail(err, "%s:%lld: %s: negative time (%s)", path, (long long)line, name, s);
    if (d * scale_to_ns > 9.0e18)
        return ts_fail(err, "%s:%lld: %s: time out of range (%s)", path, (long long)line, name, s);
    *out = llround(d * scale_to_ns);
    return 0;
}

/* A whole number of nanoseconds, in decimal digits alone (a fraction, a sign or a hexadecimal
 * number is refused: tessera's own traces write integers). */
static int field_ns(const char *path, int64_t line, const char *name, const char *s, int64_t *out, struct ts_err *err)
{
    const char *d = s;
    while (*d == ' ')
        d++;
    const char *digits = d;
    while (*d >= '0' && *d <= '9')
        d++;
    const char *end = d;
    while (*d == ' ' || *d == '\r')
        d++;
    if (end == digits || *d)
        return ts_fail(err, "%s:%lld: %s: not a whole number of nanoseconds ('%s')", path, (long long)line, name, s);
    if (ts_parse_i64(digits, out) != 0)
        return ts_fail(err, "%s:%lld: %s: time out of range (%s)", path, (long long)line, name, s);
    return 0;
}

/* Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "2031-03-04 05:06:07.1000000" (or with 'T', optional fraction) -> ns since the epoch. */
static int field_datetime_ns(const char *path, int64_t line, const char *name, const char *s,
                             int64_t *out, struct ts_err *err)
{
    int y, mo, d, h, mi, sec, used = 0;
    char sep;
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &sec, &used) != 7 ||
        (sep != ' ' && sep != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60 || y < 1970 || y > 2200)
        return ts_fail(err, "%s:%lld: %s: not a date-time YYYY-MM-DD HH:MM:SS[.frac] ('%s')", path,
                       (long long)line, name, s);
    const char *p = s + used;
    int64_t frac_ns = 0;
    if (*p == '.') {
        int64_t scale = 100000000;
        for (p++; *p >= '0' && *p <= '9'; p++) {
            frac_ns += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p == 'Z' || *p == '+') /* a UTC designator or offset: times are relative anyway */
        p += strlen(p);
    if (*p)
        return ts_fail(err, "%s:%lld: %s: trailing characters in date-time ('%s')", path,
                       (long long)line, name, s);
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *out = secs * 1000000000LL + frac_ns;
    return 0;
}

/* --- CSV formats ------------------------------------------------------------------------- */

struct csv_layout {
    enum trace_format fmt;
    int col_time, col_prompt, col_output;
    const char *name_time, *name_prompt, *name_output;
    int min_fields;
    int max_fields; /* the header's columns, where the format has no others (0: any more) */
};

static int find_col(char **fields, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (ts_name_eq(fields[i], name))
            return i;
    return -1;
}

static int detect_csv(char **fields, int n, struct csv_layout *lay)
{
    static const struct {
        enum trace_format fmt;
        const char *time, *prompt, *output;
        bool exact; /* the format has these columns and no others (BurstGPT's and the length-only
                     * CSVs' carry more: model, log type, total tokens, ratio) */
    } known[] = {
        {TRACE_AZURE, "TIMESTAMP", "ContextTokens", "GeneratedTokens", true},
        {TRACE_BURSTGPT, "Timestamp", "Request tokens", "Response tokens", false},
        {TRACE_TESSERA, "arrival_ns", "prompt_tokens", "output_tokens", true},
        {TRACE_LENGTHS, NULL, "num_prefill_tokens", "num_decode_tokens", false},
    };
    for (size_t k = 0; k < TS_ARRAY_LEN(known); k++) {
        int ct = known[k].time ? find_col(fields, n, known[k].time) : -1;
        int cp = find_col(fields, n, known[k].prompt), co = find_col(fields, n, known[k].output);
        if (cp < 0 || co < 0 || (known[k].time && ct < 0))
            continue;
        lay->fmt = known[k].fmt;
        lay->col_time = ct;
        lay->col_prompt = cp;
        lay->col_output = co;
        lay->name_time = known[k].time;
        lay->name_prompt = known[k].prompt;
        lay->name_output = known[k].output;
        lay->min_fields = TS_MAX(ct, TS_MAX(cp, co)) + 1;
        lay->max_fields = known[k].exact ? 3 : 0;
        return 0;
    }
    return -1;
}

static int parse_csv_row(const char *path, struct line_iter *it, const struct csv_layout *lay,
                         char **f, int nf, struct trace *out, int64_t *last_ns, struct ts_err *err)
{
    if (nf < lay->min_fields)
        return ts_fail(err, "%s:%lld: %s: missing field (row has %d of %d columns)", path,
                       (long long)it->lineno,
                       nf <= lay->col_prompt ? lay->name_prompt
                       : nf <= lay->col_output ? lay->name_output
                                               : lay->name_time,
                       nf, lay->min_fields);
    if (lay->max_fields && nf > lay->max_fields)
        return ts_fail(err, "%s:%lld: column %d: a field the header does not have (row has %d of %d columns)", path,
                       (long long)it->lineno, lay->max_fields + 1, nf, lay->max_fields);
    int32_t p, o;
    int64_t t = -1;
    if (field_count(path, it->lineno, lay->name_prompt, f[lay->col_prompt], &p, err) ||
        field_count(path, it->lineno, lay->name_output, f[lay->col_output], &o, err))
        return -1;
    if (lay->col_time >= 0) {
        int rc;
        if (lay->fmt == TRACE_AZURE)
            rc = field_datetime_ns(path, it->lineno, lay->name_time, f[lay->col_time], &t, err);
        else if (lay->fmt == TRACE_TESSERA)
            rc = field_ns(path, it->lineno, lay->name_time, f[lay->col_time], &t, err);
        else
            rc = field_seconds_ns(path, it->lineno, lay->name_time, f[lay->col_time], 1e9, &t, err);
        if (rc)
            return -1;
        if (t < *last_ns)
            return ts_fail(err, "%s:%lld: %s: time goes backwards ('%s' is before the previous row)",
                           path, (long long)it->lineno, lay->name_time, f[lay->col_time]);
        *last_ns = t;
    }
    trace_push(out, t, p, o);
    return 0;
}

static int parse_csv(const char *path, struct line_iter *it, bool skip_bad, struct trace *out,
                     struct ts_err *err)
{
    char *f[MAX_FIELDS];
    char *line;
    while ((line = next_line(it)) && blank(line))
        ;
    if (!line)
        return ts_fail(err, "%s: empty file", path);
    int nf = split_csv(line, f);
    struct csv_layout lay;
    if (detect_csv(f, nf, &lay))
        return ts_fail(err, "%s:%lld: header: not a known trace format (expected Azure "
                            "'TIMESTAMP,ContextTokens,GeneratedTokens', BurstGPT 'Timestamp,...,"
                            "Request tokens,Response tokens,...', 'num_prefill_tokens,"
                            "num_decode_tokens' or 'arrival_ns,prompt_tokens,output_tokens')",
                       path, (long long)it->lineno);
    if (lay.max_fields && nf > lay.max_fields)
        return ts_fail(err, "%s:%lld: header: column '%s': not a column of this format (%s,%s,%s)", path,
                       (long long)it->lineno, f[lay.max_fields], lay.name_time, lay.name_prompt, lay.name_output);
    out->format = lay.fmt;
    out->has_times = lay.col_time >= 0;
    int64_t last_ns = INT64_MIN;
    while ((line = next_line(it))) {
        if (blank(line))
            continue;
        nf = split_csv(line, f);
        if (parse_csv_row(path, it, &lay, f, nf, out, &last_ns, err)) {
            if (!skip_bad)
                return -1;
            out->skipped_rows++;
        }
    }
    return 0;
}

/* --- Mooncake JSONL ---------------------------------------------------------------------- */

static int json_count(const char *path, int64_t line, json_t *o, const char *key, int32_t *out,
                      struct ts_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return ts_fail(err, "%s:%lld: %s: missing field", path, (long long)line, key);
    if (!json_is_number(v))
        return ts_fail(err, "%s:%lld: %s: not a number", path, (long long)line, key);
    double d = json_number_value(v);
    if (d < 0)
        return ts_fail(err, "%s:%lld: %s: negative length (%g)", path, (long long)line, key, d);
    if (d != floor(d) || d > 1e8) {
        char text[64];
        snprintf(text, sizeof text, "%.15g", d); /* jansson keeps the number, not its spelling */
        return ts_fail(err, "%s:%lld: %s: %s is not a plausible token count (0..100000000)", path, (long long)line,
                       key, text);
    }
    *out = (int32_t)d;
    return 0;
}

/* The row's optional hash_ids into the trace's pool (row pointers are set once the file is read:
 * the pool moves as it grows); at most one id a started block of the prompt, each a non-negative
 * integer. */
static int json_hashes(const char *path, int64_t line, json_t *o, int32_t prompt, struct trace *out, int32_t *n,
                       struct ts_err *err)
{
    json_t *a = json_object_get(o, "hash_ids");
    *n = 0;
    if (!a)
        return 0;
    if (!json_is_array(a))
        return ts_fail(err, "%s:%lld: hash_ids: not an array", path, (long long)line);
    const size_t m = json_array_size(a);
    if (m > ((size_t)prompt + TRACE_HASH_BLOCK - 1) / TRACE_HASH_BLOCK)
        return ts_fail(err, "%s:%lld: hash_ids: %zu ids for %d input tokens (one a started block of %d at most)",
                       path, (long long)line, m, prompt, TRACE_HASH_BLOCK);
    for (size_t k = 0; k < m; k++) {
        json_t *v = json_array_get(a, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
            return ts_fail(err, "%s:%lld: hash_ids: item %zu is not an integer in 0..%d", path, (long long)line,
                           k + 1, INT32_MAX);
    }
    ts_grow((void **)&out->hash, &out->hash_cap, (size_t)out->n_hash + m, sizeof *out->hash);
    for (size_t k = 0; k < m; k++)
        out->hash[out->n_hash++] = (int32_t)json_integer_value(json_array_get(a, k));
    *n = (int32_t)m;
    return 0;
}

static int parse_jsonl_row(const char *path, int64_t lineno, const char *line, struct trace *out,
                           int64_t *last_ns, struct ts_err *err)
{
    json_error_t jerr;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return ts_fail(err, "%s:%lld: json: %s", path, (long long)lineno, jerr.text);
    int rc = -1;
    if (!json_is_object(o)) {
        ts_fail(err, "%s:%lld: json: a row must be an object", path, (long long)lineno);
        goto done;
    }
    json_t *ts = json_object_get(o, "timestamp");
    if (!ts) {
        ts_fail(err, "%s:%lld: timestamp: missing field", path, (long long)lineno);
        goto done;
    }
    if (!json_is_number(ts) || json_number_value(ts) < 0 || json_number_value(ts) > 9e12) {
        ts_fail(err, "%s:%lld: timestamp: not a non-negative number of milliseconds", path,
                (long long)lineno);
        goto done;
    }
    int64_t t = llround(json_number_value(ts) * 1e6);
    int32_t p, q, nh;
    if (json_count(path, lineno, o, "input_length", &p, err) ||
        json_count(path, lineno, o, "output_length", &q, err))
        goto done;
    if (t < *last_ns) {
        ts_fail(err, "%s:%lld: timestamp: time goes backwards", path, (long long)lineno);
        goto done;
    }
    if (json_hashes(path, lineno, o, p, out, &nh, err))
        goto done;
    *last_ns = t;
    trace_push(out, t, p, q);
    out->reqs[out->n - 1].n_hash = nh;
    rc = 0;
done:
    json_decref(o);
    return rc;
}

static int parse_jsonl(const char *path, struct line_iter *it, bool skip_bad, struct trace *out,
                       struct ts_err *err)
{
    out->format = TRACE_MOONCAKE;
    out->has_times = true;
    int64_t last_ns = INT64_MIN;
    char *line;
    while ((line = next_line(it))) {
        if (blank(line))
            continue;
        if (parse_jsonl_row(path, it->lineno, line, out, &last_ns, err)) {
            if (!skip_bad)
                return -1;
            out->skipped_rows++;
        }
    }
    int64_t at = 0; /* each row's ids, now that the pool holds them all */
    for (int64_t i = 0; i < out->n; i++) {
        out->reqs[i].hash = out->reqs[i].n_hash ? out->hash + at : NULL;
        at += out->reqs[i].n_hash;
    }
    return 0;
}

/* --- entry points ------------------------------------------------------------------------ */

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

int trace_parse(const char *path, const char *buf, size_t len, bool skip_bad, struct trace *out,
                struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    /* a text file: a NUL byte is named where it is, not taken for the end of its line */
    if (ts_text_nul(path, buf, len, err))
        return -1;
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) { /* a UTF-8 byte-order mark: skipped, and said */
        buf += 3, len -= 3;
        out->skipped_bom = true;
    }
    struct line_iter it = {buf, buf + len, 0, NULL, 0};
    const char *first = buf;
    while (first < buf + len && (*first == ' ' || *first == '\n' || *first == '\r'))
        first++;
    int rc = (has_suffix(path, ".jsonl") || (first < buf + len && *first == '{'))
                 ? parse_jsonl(path, &it, skip_bad, out, err)
                 : parse_csv(path, &it, skip_bad, out, err);
    free(it.buf);
    if (rc == 0 && out->n == 0)
        rc = ts_fail(err, "%s: no requests in the file%s", path,
                     out->skipped_rows ? " (every row was malformed)" : "");
    if (rc) {
        trace_free(out);
        return -1;
    }
    if (out->has_times) { /* make times relative to the first request */
        int64_t t0 = out->reqs[0].arrival_ns;
        for (int64_t i = 0; i < out->n; i++) {
            if (out->reqs[i].arrival_ns > t0 && out->reqs[i].arrival_ns - t0 > TRACE_MAX_NS) {
                ts_fail(err, "%s: request %lld arrives %.3g years after the first, past the %.0f years a "
                        "trace's clock holds", path, (long long)i + 1,
                        trace_years((double)(out->reqs[i].arrival_ns - t0)), trace_years((double)TRACE_MAX_NS));
                trace_free(out);
                return -1;
            }
            out->reqs[i].arrival_ns -= t0;
        }
    }
    return 0;
}

int trace_load(const char *path, bool skip_bad, struct trace *out, struct ts_err *err)
{
    char *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    if (ts_read_file(path, &buf, &len, err))
        return -1;
    int rc = trace_parse(path, buf, len, skip_bad, out, err);
    free(buf);
    return rc;
}
