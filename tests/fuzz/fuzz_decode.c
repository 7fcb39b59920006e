/* fuzz_decode.c: libFuzzer target for the decode-profile file parser. */
#include <stdint.h>
#include <stdlib.h>

#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_err err;
    static struct decode_profile pr;
    if (decode_profile_parse("fuzz.json", (const char *)data, size, "llada-gsm8k", "threshold", &pr, &err) == 0 &&
        (pr.tpf < 1 || pr.nsteps < 0 || pr.nsteps > DECODE_STEPS_MAX))
        __builtin_trap();
    return 0;
}
