/*
 * eng_choices.h: the engine's choices, on the ground floor so that every command line that drives
 * the engine (tessera engine's, tessera sim --executor gpu's) names them alike and a run stores them.
 */
#ifndef TESSERA_ENG_CHOICES_H
#define TESSERA_ENG_CHOICES_H

#include <stdbool.h>
#include <stdint.h>

/* The choices of the engine's command lines (tessera engine's options, tessera sim --executor gpu's):
 * its kernels, attention, FFN, routing, selection and GEMM tuning. Each engine takes them in its
 * eng_opts (eng_opts_defaults). Their names, in the order of their values, are the options'
 * choices. */
struct eng_choices {
    int32_t attention;  /* eng_opts.attention: mma, wgmma, auto (the default) */
    int32_t ffn;        /* eng_opts.ffn: split (the default), fused, auto */
    int32_t routing;    /* eng_opts.routing: auto (the default), router, balanced */
    int32_t select_at;  /* eng_opts.select_at: end (the default), layer */
    bool portable;      /* the kernels of a GPU before Hopper, whatever the device (k_portable) */
    int32_t gemm_algos; /* cuBLASLt candidates a new GEMM shape's tuning times, 1 to 128; 0: 16 */
    const char *gemm_cache; /* the GEMM algorithm cache file, or NULL */
};
extern const char *const eng_attention_names[3], *const eng_ffn_names[3], *const eng_routing_names[3],
    *const eng_select_names[2], *const eng_kernels_names[2];

#endif
