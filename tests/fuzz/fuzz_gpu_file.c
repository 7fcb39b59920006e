/* fuzz_gpu_file.c: libFuzzer target for the GPU override file parser. */
#include <stdint.h>
#include <stdlib.h>

#include "gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gpu_table *t = gpu_table_create();
    struct ts_err err;
    struct gpu_spec g;
    if (gpu_parse(t, "fuzz.json", (const char *)data, size, &err) == 0)
        (void)gpu_lookup(t, "h200", &g, &err);
    gpu_table_destroy(t);
    return 0;
}
