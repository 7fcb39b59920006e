/*
 * eng_ref_internal.h: what the CPU reference's files (eng_ref.c, eng_ref_ops.c) share beyond eng_ref.h;
 * nothing else includes it.
 */
#ifndef TESSERA_ENG_REF_INTERNAL_H
#define TESSERA_ENG_REF_INTERNAL_H

#include <stdint.h>

#include "eng_ref.h"

/* eng_ref_ops.c */
/* The weights wts [k] of a row's experts ids [k] under router rt (ref_moe_route's, and those of the
 * experts a step is forced to). */
void ref_route_weights(const float *logits, int E, int k, const struct k_moe_router *rt, const int32_t *ids,
                       float *wts);

#endif
