/* fuzz_clock.c: libFuzzer target for the warm-trace reader (calib clock's input), then the clock
 * model's prediction of whatever it accepts: every round priced finite and positive. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct clock_trace *t;
    size_t n;
    struct ts_err err;
    if (clock_traces_parse("fuzz.csv", (const char *)data, size, &t, &n, &err) != 0)
        return 0;
    const struct clock_params p = {.k = 0.15, .tau_s = 0.04, .lo = 0.5, .hi = 0.8, .held_flops = 7e14};
    for (size_t i = 0; i < n; i++) {
        double *pred = malloc(sizeof *pred * (t[i].n ? t[i].n : 1));
        t[i].flops = 0.9 * p.held_flops * t[i].held_ms * 1e-3;
        clock_predict(&p, &t[i], pred);
        for (size_t j = 0; j < t[i].n; j++)
            if (!(pred[j] > 0) || !isfinite(pred[j]))
                __builtin_trap();
        free(pred);
    }
    clock_traces_free(t, n);
    return 0;
}
