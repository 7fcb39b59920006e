/*
 * fleet_merge.h: a fleet's summary merged from its replicas' (fleet.c's last step): counts summed,
 * latencies' mean and spread pooled and their quantiles taken over every replica's requests, energy
 * over each replica's time up, the expected accuracy weighted by the tokens each decoded.
 */
#ifndef TESSERA_FLEET_MERGE_H
#define TESSERA_FLEET_MERGE_H

#include "fleet.h"
#include "sim.h"

/* A replica's energy over its time up, active_s (its summary's own counts it from 0 to its last
 * finish): its steps', and its idle draw the rest of that time. */
void fleet_replica_energy(struct sim_summary *m, double active_s);
/* The fleet's summary f from the replicas' (r[0..out->n), their runs done and their energy over their
 * time up; the requests the fleet refused, out->refused, counted rejected); slo: the latency SLO (0:
 * none). -1 where a quantile cannot be taken. */
int fleet_merge(struct sim **r, const struct fleet_result *out, double slo, struct sim_summary *f);

#endif
