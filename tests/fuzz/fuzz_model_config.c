/* fuzz_model_config.c: libFuzzer target for the Hugging Face config.json parser. */
#include <stdint.h>
#include <stdlib.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_cfg m;
    struct ts_err err;
    if (model_parse_hf("fuzz.json", (const char *)data, size, &m, &err) == 0) {
        (void)model_params(&m);
        (void)model_kv_bytes_per_token(&m);
    }
    return 0;
}
