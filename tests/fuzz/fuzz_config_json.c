/* fuzz_config_json.c: libFuzzer target for a stored run configuration read back (sim_config_from_json:
 * what engine replay and calib eval read from a database's runs.config_json), then validated, stored
 * again and read back once more. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *o = json_loadb((const char *)data, size, 0, &jerr);
    if (!o)
        return 0;
    struct sim_config c, again;
    struct ts_err err;
    if (sim_config_from_json(o, &c, &err) == 0 && sim_config_validate(&c, NULL, &err) == 0) {
        char *text = sim_config_to_json(&c, NULL);
        json_t *back = json_loads(text, 0, &jerr);
        if (!back || sim_config_from_json(back, &again, &err) != 0)
            abort(); /* what was stored must read back */
        json_decref(back);
        free(text);
    }
    json_decref(o);
    return 0;
}
