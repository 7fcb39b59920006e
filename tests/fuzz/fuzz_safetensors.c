/* fuzz_safetensors.c: libFuzzer target for the safetensors header check (what st_open runs on
 * every shard before reading a tensor). The first 8 bytes give the data section's length. */
#include <stdint.h>
#include <string.h>

#include "eng_safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t data_len;
    memcpy(&data_len, data, 8);
    struct ts_err err;
    st_check_header("fuzz.safetensors", (const char *)data + 8, size - 8, data_len, &err);
    return 0;
}
