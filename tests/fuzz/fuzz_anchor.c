/* fuzz_anchor.c: libFuzzer target for the PyTorch anchor's output parser (engine/eng_anchor.c),
 * then the engine steps of whatever it accepts. */
#include <stdint.h>

#include "eng_anchor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct anchor_run r;
    struct ts_err err;
    if (anchor_parse("fuzz.jsonl", (const char *)data, size, &r, &err) == 0)
        for (int i = 0; i < r.n; i++)
            for (int s = 0; s < ANCHOR_STEPS; s++) {
                int32_t q, kv, lr;
                anchor_step_shape(&r.c[i], (enum anchor_step)s, &q, &kv, &lr);
                if (q < 1 || kv < 0 || lr < 1 || lr > q)
                    __builtin_trap();
            }
    return 0;
}
