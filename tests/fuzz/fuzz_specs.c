/* fuzz_specs.c: libFuzzer target for the option specs a run is given as text: --lengths (then eight
 * requests drawn from what it accepts), --arrivals (the same), --decode (decode_profiles.json from
 * sim/data: run from the repository's root), --op-scale and a policy parameter's value. The first
 * byte picks the parser (and a parameter's spec), the rest is the spec. Whatever is accepted must
 * draw requests of non-negative lengths at non-decreasing times, scale each op by a factor in
 * (0, 100], and a parameter's value must lie in its range. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "decode.h"
#include "params.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Eight requests of lg at ag: lengths >= 0, arrivals from 0 and never earlier than the one before
 * (or refused where they would run past the trace's clock). */
static void draw(const struct arrival_gen *ag, const struct length_gen *lg)
{
    struct trace t;
    if (trace_generate(&t, 8, ag, lg, 7, NULL)) /* past the clock's range: refused, nothing kept */
        return;
    for (int64_t i = 0; i < t.n; i++)
        if (t.reqs[i].prompt < 0 || t.reqs[i].output < 0 || t.reqs[i].arrival_ns < 0 ||
            (i > 0 && t.reqs[i].arrival_ns < t.reqs[i - 1].arrival_ns))
            __builtin_trap();
    trace_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 512)
        return 0;
    char spec[512];
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = '\0';
    struct ts_err err;
    struct arrival_gen ag;
    struct length_gen lg;
    switch (data[0] % 5) {
    case 0:
        if (length_parse(spec, &lg, &err) == 0 && arrival_parse("poisson", 2.0, &ag, &err) == 0)
            draw(&ag, &lg);
        break;
    case 1:
        if (arrival_parse(spec, 2.0, &ag, &err) == 0 && length_parse("fixed:100,50", &lg, &err) == 0)
            draw(&ag, &lg);
        break;
    case 2: {
        struct decode_model dm;
        (void)decode_parse(spec, "sim/data", &dm, &err);
        break;
    }
    case 3: {
        double scale[OP_COUNT];
        if (cost_op_scale_parse(spec, scale, &err) == 0)
            for (int i = 0; i < OP_COUNT; i++)
                if (!(scale[i] > 0 && scale[i] <= 100))
                    __builtin_trap();
        break;
    }
    default: {
        static const char *const names[] = {"uniform", "head", NULL};
        static const struct param_spec specs[] = {
            {"ratio", "a share", 0.5, 0, 1, .lo_open = true},
            {"kernel", "an odd window", 3, 1, 255, .odd = true},
            {"interval", "whole steps", 7, 1, 1e6, true},
            {"select", "a choice", 0, .choices = names},
        };
        const struct param_spec *s = &specs[data[0] / 5 % 4];
        double v;
        if (param_parse(s, spec, &v, &err) == 0 && !s->choices &&
            (!isfinite(v) || v < s->lo || v > s->hi || (s->lo_open && v == s->lo) ||
             (s->integer && v != floor(v)) || (s->odd && fmod(v, 2) != 1)))
            __builtin_trap();
        break;
    }
    }
    return 0;
}
