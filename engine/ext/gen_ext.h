/*
 * gen_ext.h: an extension in `tessera engine generate` (engine/harness/eng_generate.c): its row's
 * generation hooks (eng_ext.gen, beside its device hooks in ext_NAME.c), which the generation's loop
 * calls at fixed points, in the table's order, naming no mechanism: whether the generation runs it and
 * the room it keeps, each step's entries, what it reads back after the step and does with the step's
 * commits, and its lines of the report and of each request's outcome. Its host half (what it decides
 * from a generation's state, tested on the CPU) is engine/gen_NAME.c.
 */
#ifndef TESSERA_GEN_EXT_H
#define TESSERA_GEN_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "eng.h"
#include "eng_gen.h"

/* One step of a generation, as the loop hands it to the hooks; each field is set from the point that
 * says so on. */
struct gen_step {
    struct eng *e;
    struct gen *g;
    const struct unmask_rule *u;
    const struct step_desc *sd;  /* the step (gen_next_step) */
    const float *taus;           /* each unmask group's threshold, where a hook before the step set it
                                  * (NULL: the rule's) */
    const struct eng_out *out;   /* after the step: its argmax, confidences and gaps */
    const int32_t *commit;       /* after the unmasking: each logit row's committed token, or -1 */
};

struct gen_ext {
    bool (*on)(const struct gen *g, const struct unmask_rule *u); /* whether the generation runs it */
    struct eng_ext_room (*room)(const struct gen *g);            /* the room it keeps on the engine */
    size_t state_bytes;                                           /* its state, zeroed */
    void (*start)(void *st, const struct gen *g);                 /* its buffers */
    void (*stop)(void *st);
    int (*before)(void *st, struct gen_step *s, struct ts_err *err);  /* the step's entries */
    int (*after)(void *st, struct gen_step *s, struct ts_err *err);   /* after the step, before unmasking */
    void (*committed)(void *st, const struct gen_step *s);            /* after unmasking, before gen_apply */
    void (*applied)(void *st, const struct gen_step *s);              /* after gen_apply */
    void (*report)(const void *st, const struct gen *g);              /* its report lines (stdout) */
    void (*outcome)(const struct gen *g, int32_t i, FILE *f);         /* request i's fields ("k": v, ) */
};

/* The room of an extension that measures every position of each request: a request's whole sequence
 * (gen_longest) for each of the generation's requests. */
struct eng_ext_room gen_ext_every_position(const struct gen *g);

/* The engine's extensions with generation hooks, in the table's order (eng_ext.c): the i-th's hooks
 * and its id (into *id), NULL past the last. */
const struct gen_ext *eng_ext_gen(int i, enum eng_ext_id *id);

#endif
