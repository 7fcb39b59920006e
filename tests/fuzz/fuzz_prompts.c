/* fuzz_prompts.c: libFuzzer target for `engine generate`'s prompt file parser (engine/eng_gen.c),
 * then a whole generation's host side over whatever it accepts (the block or the vicinity policy),
 * with IterSmooth, every masked position committed in turn; and the input's start as
 * --iter-smooth's value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eng_gen.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gen_prompts p;
    struct ts_err err;
    char spec[64];
    struct gen_smooth sm;
    memcpy(spec, data, size < sizeof spec ? size : sizeof spec - 1);
    spec[size < sizeof spec ? size : sizeof spec - 1] = '\0';
    if (gen_smooth_parse(spec, &sm, &err) == 0 && !(sm.on && sm.cont >= 0 && sm.decay >= 0))
        __builtin_trap();
    if (gen_prompts_parse("fuzz.jsonl", (const char *)data, size, 1000, 8, &p, &err))
        return 0;
    /* the policy by the input's length: block, or dInfer's vicinity (a window of 0 to 7, a refresh
     * every 1 to 4 steps) */
    struct param_values pv = {0};
    char w[8], f[8];
    snprintf(w, sizeof w, "%d", (int)(size / 2 % 8));
    snprintf(f, sizeof f, "%d", (int)(size / 16 % 4) + 1);
    if (size % 2 && (param_values_set(&pv, "vicinity", w, &err) || param_values_set(&pv, "refresh-interval", f, &err)))
        __builtin_trap();
    struct gen_cfg c = {.gen_len = 32, .block = 16, .mask_id = 999, .vocab = 1000, .max_tokens = 512,
                        .logit_chunk_rows = 64, .max_pos = 600, .smooth = GEN_SMOOTH_DEFAULTS};
    struct policy_drive drive;
    if (policy_drive_init(&drive, size % 2 ? "vicinity" : "block", &pv, p.n, p.len, c.gen_len, c.block, size % 4 == 3,
                          &err))
        __builtin_trap();
    c.policy = &drive;
    struct gen g;
    if (gen_init(&g, &c, &p, &err) == 0) {
        struct step_desc sd;
        step_desc_init(&sd);
        int32_t groups[16], masked[1024], commit[1024], slot[1024], ng; /* a step's rows: at most max_tokens */
        float taus[8];
        for (int steps = 0; gen_next_step(&g, &sd, groups, &ng, masked); steps++) {
            if (steps > 1000 || sd.tot.q_tokens > c.max_tokens)
                __builtin_trap();
            for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
                commit[r] = -1;
            for (int32_t k = 0; k < ng; k++) /* each block's first masked row */
                for (int32_t r = groups[2 * k]; r < groups[2 * k] + groups[2 * k + 1]; r++)
                    if (masked[r]) {
                        commit[r] = 7;
                        break;
                    }
            gen_smooth_rows(&g, &sd, slot);
            gen_smooth_taus(&g, &sd, 0.9f, taus);
            for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
                if (slot[r] < -1 || slot[r] >= gen_soft_rows(&g))
                    __builtin_trap();
            for (int32_t k = 0; k < ng; k++)
                if (!(taus[k] >= 0.9f && taus[k] <= 1.0f))
                    __builtin_trap();
            gen_smooth_keep(&g, &sd, commit);
            if (gen_apply(&g, &sd, commit, NULL, &err))
                __builtin_trap();
        }
        step_desc_free(&sd);
        gen_free(&g);
    }
    policy_drive_free(&drive);
    gen_prompts_free(&p);
    return 0;
}
