/* util.c: error messages, always-on asserts, checked allocation, file and number helpers. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

bool ts_has_control(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (is_control(*p))
            return true;
    return false;
}

void ts_escape_controls(const char *text, char *buf, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 5 < len; p++)
        if (is_control(*p))
            n += (size_t)snprintf(buf + n, len - n, "\\x%02x", *p);
        else
            buf[n++] = (char)*p;
    buf[n] = '\0';
}

/* An error message shown and never acting on the terminal (ts_escape_controls): in place, cut to fit. */
static void ts_err_printable(char *msg, size_t len)
{
    char out[TS_ERR_MAX];
    ts_escape_controls(msg, out, sizeof out);
    snprintf(msg, len, "%s", out);
}

int ts_fail(struct ts_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        ts_err_printable(err->msg, sizeof err->msg);
    }
    return -1;
}

int ts_fail_prefix(struct ts_err *err, const char *fmt, ...)
{
    if (err) {
        char prefix[TS_ERR_MAX], msg[TS_ERR_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        int k = snprintf(err->msg, sizeof err->msg, "%.255s", prefix);
        snprintf(err->msg + k, sizeof err->msg - (size_t)k, ": %.250s", msg);
        ts_err_printable(err->msg, sizeof err->msg);
    }
    return -1;
}

void ts_assert_fail(const char *expr, const char *file, int line, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: invariant broken: %s", file, line, expr);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    TS_ASSERTF(p != NULL, "out of host memory allocating %zu bytes", n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    TS_ASSERTF(p != NULL, "out of host memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    TS_ASSERTF(q != NULL, "out of host memory reallocating %zu bytes", n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void ts_grow_group(void **const *bufs, int n, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        TS_ASSERT(c <= SIZE_MAX / 2);
        c *= 2;
    }
    TS_ASSERT(c <= SIZE_MAX / elem_size); /* (a count past what memory can hold is a broken invariant) */
    for (int i = 0; i < n; i++)
        *bufs[i] = xrealloc(*bufs[i], c * elem_size);
    *cap = c;
}

void ts_grow(void **buf, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap) /* the common case, on hot paths */
        return;
    void **const one[] = {buf};
    ts_grow_group(one, 1, cap, need, elem_size);
}

int64_t ts_search_largest(int (*fits)(void *ctx, int64_t n), void *ctx, int64_t cap)
{
    int64_t lo = 0, hi = 1; /* lo fits, hi does not (or lies past cap) */
    for (;; lo = hi, hi *= 2) {
        if (hi > cap) {
            hi = cap + 1;
            break;
        }
        int f = fits(ctx, hi);
        if (f < 0)
            return -1;
        if (!f)
            break;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        int f = fits(ctx, mid);
        if (f < 0)
            return -1;
        if (f)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int ts_read_file(const char *path, char **out, size_t *len, struct ts_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                const int why = errno;
                free(buf);
                fclose(f);
                return why == EISDIR ? ts_fail(err, "%s: a folder, not a file", path)
                                     : ts_fail(err, "%s: cannot read it: %s", path, strerror(why));
            }
            break;
        }
        cap *= 2;
        buf = xrealloc(buf, cap + 1);
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int ts_text_nul(const char *path, const char *buf, size_t len, struct ts_err *err)
{
    const char *nul = memchr(buf, '\0', len);
    if (!nul)
        return 0;
    long long line = 1;
    const char *bol = buf;
    for (const char *c = buf; c < nul; c++)
        if (*c == '\n')
            line++, bol = c + 1;
    return ts_fail(err, "%s:%lld: a NUL byte at column %lld: not a text file", path, line, (long long)(nul - bol + 1));
}

int ts_json_text(const char *path, const char *buf, size_t len, struct ts_err *err)
{
    if (ts_text_nul(path, buf, len, err))
        return -1;
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        return ts_fail(err, "%s:1: begins with a UTF-8 byte-order mark, which JSON leaves out (save the file "
                            "without it)", path);
    return 0;
}

int ts_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

int ts_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v))
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

void ts_join_names(char *buf, size_t len, const char *(*name)(int i))
{
    size_t off = 0;
    buf[0] = '\0';
    const char *n;
    for (int i = 0; (n = name(i)) && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", n);
}

bool ts_name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

double ts_unix_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ts_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ts_sleep_s(double s)
{
    if (!(s > 0))
        return;
    struct timespec left = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

double ts_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t ts_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* a record's values, each a zigzag LEB128 varint (most are small or 0: a fifth of their fixed size) */
int ts_spill_write(FILE *f, const int64_t *v, int n)
{
    unsigned char buf[TS_SPILL_MAX * 10];
    size_t len = 0;
    TS_ASSERT(n <= TS_SPILL_MAX);
    for (int k = 0; k < n; k++) {
        uint64_t z = ((uint64_t)v[k] << 1) ^ (uint64_t)(v[k] >> 63);
        do {
            buf[len++] = (unsigned char)((z & 0x7f) | (z > 0x7f ? 0x80 : 0));
            z >>= 7;
        } while (z);
    }
    return fwrite(buf, len, 1, f) == 1 ? 0 : -1;
}


int ts_spill_read(FILE *f, int64_t *v, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t z = 0;
        int c, shift = 0;
        do {
            if ((c = getc_unlocked(f)) == EOF)
                return k == 0 && shift == 0 ? 0 : -1;
            z |= (uint64_t)(c & 0x7f) << shift;
            shift += 7;
        } while ((c & 0x80) && shift < 64);
        v[k] = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    }
    return 1;
}

void ts_folder_of(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, len, ".");
}
