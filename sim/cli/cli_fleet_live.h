/*
 * cli_fleet_live.h: a live fleet's workers, one process a replica on a GPU of its own
 * (cli_fleet_live.c).
 */
#ifndef TESSERA_CLI_FLEET_LIVE_H
#define TESSERA_CLI_FLEET_LIVE_H

#include <stdbool.h>

#include "config.h"
#include "sim.h"
#include "util.h"

struct live_worker;
/* Starts a worker for each of the n replicas of configurations cfg[0..n) on GPU i (the i-th of
 * CUDA_VISIBLE_DEVICES where it is set) and fills ex[i] with the executor that runs replica i's steps
 * there; -1 with err where a replica spans GPUs (--tp, --ep), a worker cannot start or its engine
 * refuses (the workers started are then stopped by fleet_live_close). *w holds them. share: the
 * fleet moves K/V between them (a disaggregated fleet): each worker sees the others' GPUs after its
 * own, and its executor holds a request's K/V as it is handed on (sim_executor.hold). */
int fleet_live_open(const struct sim_config *cfg, int n, bool share, struct sim_executor *ex, struct live_worker **w,
                    struct ts_err *err);
/* share: every worker opens every other's K/V pool (after fleet_live_open). */
int fleet_live_share(struct live_worker *w, int n, struct ts_err *err);
/* A move (fleet.h, fleet_opts.live_move and live_adopt) between workers from and to. */
int fleet_live_move(struct live_worker *w, int from, int64_t ticket, int to, int64_t key, double *seconds,
                    struct ts_err *err);
int fleet_live_adopt(struct live_worker *w, int to, int64_t key, int32_t req_id, struct ts_err *err);
/* Stops the n workers and waits for them; w NULL is safe. */
void fleet_live_close(struct live_worker *w, int n);

#endif
