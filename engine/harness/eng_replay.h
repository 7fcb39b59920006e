/* eng_replay.h: `tessera engine replay` and `tessera engine profile`. */
#ifndef TESSERA_ENG_REPLAY_H
#define TESSERA_ENG_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

/*
 * Replay: executes, step by step, the steps run `run_id` (0: the latest) of the simulation database
 * `db` recorded, on the engine, and stores each measured duration beside the predicted one in the
 * table engine_steps(run_id, step_id, predicted_ns, measured_ns, device) of the same database, in
 * one transaction. Requests are released after their last segment. Prints the per-step error.
 * With ops, each step is also run once with an event after every op, and the ops' times, scaled
 * to sum to the step's measured time, go to engine_step_ops(run_id, step_id, op, ms).
 */
struct eng_choices;
int eng_replay_run(const char *db, int64_t run_id, int64_t max_steps, double mem_limit_gb,
                   const char *weights, bool ops, const struct eng_choices *choices, FILE *out);

/*
 * Profile: sweeps step shapes of a model (segments of q tokens over kv cached keys, with and
 * without logits), times each op of each step with CUDA events (an event after each op) and the
 * whole step without them (total_ms), its engine made with the command line's choices, and stores the rows in the table engine_profile of `db` with
 * the GPU name, clocks, driver, CUDA runtime and cuBLAS versions.
 */
/* Each step runs warmup times untimed first, and then again until its warm-up runs have taken warm_ms
 * (the card settles at the clock the step's own repetition holds under the power limit, rather than
 * the one the sweep's heavier steps before it left); the n_steps steps (segs, q, kv, logit rows: 0 or
 * q, and kv_long: > 0, the last sequence over that many cached keys instead), where n_steps > 0, are
 * profiled instead of the grid, which is grid_part's (enum grid_part, eng_grid.h), of its steps those
 * of at most max_rows rows where max_rows > 0. */
#define ENG_PROFILE_MAX_STEPS 32 /* engine profile --step at most this often */
int eng_profile_run(const struct model_cfg *m, const char *db, int reps, int warmup, double warm_ms,
                    const int32_t (*steps)[5], int n_steps, int grid_part, int64_t max_rows, double mem_limit_gb,
                    const struct eng_choices *choices, FILE *out);

#endif
