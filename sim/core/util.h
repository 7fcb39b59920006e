/*
 * util.h: the few helpers every tessera module shares.
 *
 * Two kinds of failure:
 *   - recoverable errors (bad input, unknown names) travel as a non-zero return status with a
 *     message in a struct ts_err, written "FILE:LINE: FIELD: problem" where a file is involved;
 *   - broken invariants trip TS_ASSERT, which is always on (never compiled out by NDEBUG), prints
 *     file:line and the failed expression, and aborts.
 * Allocation failure is treated as a broken invariant (xmalloc aborts with a message).
 */
#ifndef TESSERA_UTIL_H
#define TESSERA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#define TS_ERR_MAX 512

struct ts_err {
    char msg[TS_ERR_MAX];
};

/* Formats msg into err (which may be NULL) and returns -1, so callers can `return ts_fail(...)`. */
int ts_fail(struct ts_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes err's message with a formatted context and ": " ("step 12: " + what failed); returns -1. */
int ts_fail_prefix(struct ts_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The code version (git describe --always --dirty at build time; sim/version.c). */
const char *ts_version(void);

void ts_assert_fail(const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

#define TS_ASSERT(cond) \
    do { if (!(cond)) ts_assert_fail(#cond, __FILE__, __LINE__, NULL); } while (0)
#define TS_ASSERTF(cond, ...) \
    do { if (!(cond)) ts_assert_fail(#cond, __FILE__, __LINE__, __VA_ARGS__); } while (0)

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Grows *buf (of *cap elements of elem_size bytes) so that it holds at least need elements. */
void ts_grow(void **buf, size_t *cap, size_t need, size_t elem_size);
/* The same for n arrays that share one capacity. */
void ts_grow_group(void **const *bufs, int n, size_t *cap, size_t need, size_t elem_size);

/* The largest n in [0, cap] for which fits(ctx, n) holds, where fits holds up to some n and not
 * beyond: n doubles from 1 while it fits, then the last step is bisected. fits returns 1 or 0, or
 * -1 on an error, which stops the search (-1 is returned). Values above cap are never asked. */
int64_t ts_search_largest(int (*fits)(void *ctx, int64_t n), void *ctx, int64_t cap);

/* Reads a whole file into a NUL-terminated buffer. Caller frees *out. */
int ts_read_file(const char *path, char **out, size_t *len, struct ts_err *err);
/* Where buf[0..len), the text of file `path`, holds a NUL byte: -1 with err naming its line and
 * column ("PATH:LINE: a NUL byte at column C: not a text file"); else 0. */
int ts_text_nul(const char *path, const char *buf, size_t len, struct ts_err *err);
/* Where buf[0..len), the text of JSON file `path`, is not one (a NUL byte, ts_text_nul, or a UTF-8
 * byte-order mark, which JSON leaves out: RFC 8259 8.1): -1 with err naming its line; else 0. */
int ts_json_text(const char *path, const char *buf, size_t len, struct ts_err *err);

/* Strict number parsing: the whole string must be a number. Return 0 on success. */
int ts_parse_i64(const char *s, int64_t *out);
int ts_parse_double(const char *s, double *out);

/* Writes "a, b, c" into buf from name(0), name(1), ... until name returns NULL. */
void ts_join_names(char *buf, size_t len, const char *(*name)(int i));

/* Case-insensitive equality of ASCII names ("LLaDA-8B" == "llada-8b"). */
bool ts_name_eq(const char *a, const char *b);
/* Whether text holds a control character (a line break or a terminal's escape among them). */
bool ts_has_control(const char *text);
/* text into buf with every control character written as \xNN, so that text from a file shows and
 * never acts on the terminal or begins a line of its own; cut to fit. */
void ts_escape_controls(const char *text, char *buf, size_t len);

/* The wall clock as Unix time, seconds (what other tools' timestamps are set against). */
double ts_unix_s(void);
/* Monotonic wall clock in seconds, for benchmarks and progress only (never for simulated time). */
double ts_wall_s(void);
/* Sleeps s seconds (the rest of them if a signal interrupts). */
void ts_sleep_s(double s);
/* The calling thread's CPU time in seconds: its own work, whatever else the machine runs. */
double ts_cpu_s(void);

/* SplitMix64: turns (seed, stream id) into well-mixed seeds for independent GSL streams. */
uint64_t ts_mix64(uint64_t x);

#define TS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define TS_GIB (1024.0 * 1024.0 * 1024.0)
#define TS_MIB (1024.0 * 1024.0)

/* n (at most TS_SPILL_MAX) int64 values as one spilled record, zigzag LEB128 varints, and read back:
 * 1, 0 at the file's end, -1 on a short record; the write -1 where the file takes no more (errno
 * says why). */
#define TS_SPILL_MAX 64
int ts_spill_write(FILE *f, const int64_t *v, int n);
int ts_spill_read(FILE *f, int64_t *v, int n);

/* The folder a path names its file in, into dir ("." for a bare name). */
void ts_folder_of(const char *path, char *dir, size_t len);

#endif
