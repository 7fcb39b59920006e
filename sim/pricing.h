/*
 * pricing.h: a step's price, through a chain of pricers resolved once for a run (pricing_resolve, at
 * create and when an executor is set). Each link takes the step's price so far and adjusts it:
 *
 *   back end   the roofline or the calibration (cost.h), op by op over the step's shape; its work by
 *              the roofline (FLOPs, compute and memory seconds) is what the clock and the energy read
 *   rounds     a runtime priced by its rounds measured whole (rounds.h): the round's forward and, where
 *              the step begins a round, the host's work between rounds (the GPU idles through it)
 *   drafter    a speculative policy's drafter (policy_ops.drafter_layers): its forwards before the
 *              target verifies, added to the step
 *   clock      the card's clock under its power limit (clock.h, --clock)
 *   host       the host's part over offloaded K/V (HERALD's), before or under the step's GPU work
 *   live       the executor runs the step and its measured time replaces the price (--executor gpu)
 *
 * The links a run takes are decided from its setup; the summary keeps those that priced at least one of
 * its steps (sim_summary.pricing; sim_pricing_text names them), which the summary's text and JSON and
 * the database's summary row show. A new
 * runtime's pricing is a link: its function and its row in pricing.c's table.
 */
#ifndef TESSERA_PRICING_H
#define TESSERA_PRICING_H

#include <stdbool.h>
#include <stddef.h>

#include "cost.h"

struct sim;

/* A step's price as it goes down the chain. */
struct step_price {
    double secs;                /* the step's seconds so far */
    struct cost_breakdown bd;   /* by op: the back end's, the rounds' and the drafter's (the summary's
                                 * shares); the clock, the host and live change secs alone */
    struct cost_breakdown work; /* the roofline's work (flops, compute_s, memory_s): the clock's load and
                                 * the energy's mix */
    bool host_idles;            /* the GPU idles through bd's OP_HOST seconds (a runtime's host work
                                 * between rounds, where the step was priced, not measured) */
    double host_s;              /* the host's part over offloaded K/V, as priced (0: none) */
};

#define PRICERS_MAX 8

/* A link: prices the step s->sd into *p; 1 where it changed the price, 0 where it left this step
 * alone, -1 with s->run_err where the step cannot be priced. */
struct pricer {
    const char *name;
    int (*price)(struct sim *s, struct step_price *p);
};

/* The run's chain, from its setup, into s (s->pricers): the back end, then each link the setup takes. */
void pricing_resolve(struct sim *s);
/* The step s->sd priced down the chain into *p: 0, or -1 with s->run_err. */
int pricing_step(struct sim *s, struct step_price *p);
/* The step's energy on the run's GPUs (joules) at its price p. */
double pricing_joules(const struct sim *s, const struct step_price *p);

#endif
