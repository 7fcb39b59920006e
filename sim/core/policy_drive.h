/*
 * policy_drive.h: a caching policy driven request by request outside the simulator's event loop,
 * with its rows placed at positions. `tessera engine generate` runs the simulator's policies
 * through it (sim/policies/policy_drive.c makes one of a policy in the table; engine/eng_gen.c runs its
 * steps on the GPU, where the unmasking rule decides what each step commits), so a policy added to
 * the table runs in the simulator and in engine generate alike.
 *
 * A request's positions are 0 .. P + G - 1 (the prompt, then the response in blocks). A segment's
 * q rows sit at q distinct positions below kv + q (its keys); its logit rows are its last
 * logit_rows rows, and its current block's positions are its last rows, in order, so the block's
 * rows end its logit rows.
 */
#ifndef TESSERA_POLICY_DRIVE_H
#define TESSERA_POLICY_DRIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_ext_decl.h"
#include "step_desc.h"

struct policy_drive {
    const char *name; /* the policy's */
    bool whole;       /* its steps may run a request's whole sequence (bidirectional models only) */
    bool every_position; /* each step runs every position, each with its logits (policy_caps
                          * POLICY_EVERY_POSITION, its logits not the block's alone) */
    const char *engine;  /* the engine's extensions its steps need (policy_ops.engine; NULL: none) */
    struct eng_ext_params ext; /* what its parameters set in them (policy_ops.ext_params) */
    void *ctx;
    /* Request req's next segment into *s (req_id left as it is) and its rows' positions, in row
     * order, into pos[0 .. s->q) (room for the request's P + G). */
    void (*emit)(void *ctx, int32_t req, struct segment *s, int32_t *pos);
    /* Request req's segment s ran, committing s->decoded of its current block's masked positions;
     * returns true when the request is finished. */
    bool (*advance)(void *ctx, int32_t req, const struct segment *s);
};

#endif
