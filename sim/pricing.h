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
 * runtime's pricing is a link: its function and its row in pricing.c's table. The event loop (sim.c)
 * sees the chain as the simulator's creator set it (sim.pricing, sim_internal.h), as it sees its
 * scheduler, and never this file.
 */
#ifndef TESSERA_PRICING_H
#define TESSERA_PRICING_H

#include "sim_internal.h"

/* The run's chain, from its setup, into s (s->pricer_link): the back end, then each link the setup
 * takes; and s->pricing, what the event loop calls (pricing_ops: it prices a step down the chain). */
void pricing_resolve(struct sim *s);
extern const struct sim_pricing pricing_ops;

#endif
