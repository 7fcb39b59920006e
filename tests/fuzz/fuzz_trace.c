/* fuzz_trace.c: libFuzzer target for the trace parsers. The first byte picks the name (and so the
 * format detection path: .csv or .jsonl) and the skip-bad-rows mode; the rest is the file. */
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
        trace_free(&t);
    }
    free(buf);
    return 0;
}
