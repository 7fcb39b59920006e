/* fuzz_trace.c: libFuzzer target for the trace parsers. The first byte picks the name (and so the
 * format detection path: .csv or .jsonl) and the skip-bad-rows mode; the rest is the file. Whatever
 * is accepted must give each row's prompt block ids within the trace's pool, in row order, at most one
 * a started block of its prompt, none negative. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *name = (data[0] & 1) ? "fuzz.jsonl" : "fuzz.csv";
    bool skip = (data[0] & 2) != 0;
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    struct trace t;
    struct ts_err err;
    if (trace_parse(name, buf, size - 1, skip, &t, &err) == 0) {
        struct trace_stats s;
        trace_stats_compute(&t, &s);
        int64_t at = 0;
        for (int64_t i = 0; i < t.n; i++) {
            const struct trace_req *r = &t.reqs[i];
            if (r->n_hash < 0 || (r->n_hash > 0) != (r->hash != NULL) || r->n_hash > (r->prompt + TRACE_HASH_BLOCK - 1) / TRACE_HASH_BLOCK ||
                (r->hash && r->hash != t.hash + at))
                __builtin_trap();
            for (int32_t k = 0; k < r->n_hash; k++)
                if (r->hash[k] < 0)
                    __builtin_trap();
            at += r->n_hash;
        }
        if (at != t.n_hash)
            __builtin_trap();
        trace_free(&t);
    }
    free(buf);
    return 0;
}
