/* fuzz_decode.c: libFuzzer target for the decode-profile file parser. */
#include <stdint.h>
#include <stdlib.h>

#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_err err;
    double tpf;
    (void)decode_profile_parse("fuzz.json", (const char *)data, size, "llada-gsm8k", "threshold", &tpf, &err);
    return 0;
}
