/* fuzz_calib.c: libFuzzer target for the calibration CSV parser, then validation and fitting of
 * whatever it accepts, and for the host profile parser (calib host's files). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    struct calib_data d;
    struct ts_err err;
    if (calib_data_parse("fuzz.csv", text, &d, &err) == 0) {
        struct calib *c;
        if (calib_fit(&d, &c, &err) == 0)
            calib_free(c);
        calib_data_free(&d);
    }
    struct calib_host h;
    (void)calib_host_parse("fuzz.csv", text, &h, &err);
    free(text);
    return 0;
}
