/*
 * eng_grid.h: the steps `tessera engine profile` times, from which `tessera calib import` fits a
 * calibration.
 *
 * The base grid is the one every shipped calibration was profiled over: token counts from 1 to
 * 16,384, caches up to 4,096 keys, a few and many sequences, and uneven Reuse steps. The long part
 * adds Reuse steps over caches of 8,192 and 16,384 keys, for models whose context reaches that far
 * (SDAR-8B's 32,768; not LLaDA-8B's 4,096): without them the attention model extrapolates there.
 * The select part has Refresh steps that select a sparse cache (keep half of each segment's
 * candidates, one kept set for all heads and one per K/V head), for the calibration's kv_select.
 * The fc part has dLLM-Cache's steps over its feature cache (partial updates picked by the value
 * check, response refreshes over the cached prompt, whole refreshes), for its feat_cache.
 * The ladder part has Reuse steps of every count of 32-token blocks from 3 to 15 that the base
 * grid lacks, so that the GEMMs' curves hold each step up where their rows spill into one more
 * tile; calibrations profiled before it take it through calib merge.
 * The batch part has Reuse steps of 24 to 64 sequences (the base grid's have at most 16), whose
 * attention a calibration without them extrapolates in the count of sequences; calibrations profiled
 * before it take it through calib merge.
 */
#ifndef TESSERA_ENG_GRID_H
#define TESSERA_ENG_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "step_desc.h"

enum grid_part { GRID_ALL, GRID_BASE, GRID_LONG, GRID_SELECT, GRID_FC, GRID_LADDER, GRID_BATCH };

/* "all", "base", "long", "select", "fc", "ladder" or "batch"; -1 for anything else */
int grid_part_parse(const char *name);

/* The grid's steps (*n of them; the caller frees the array; NULL when there are none). The long
 * part holds only steps whose sequences fit the model's context (q + kv <= max_pos) and whose
 * caches fit kv_pool_tokens (< 0: no bound); *skipped (may be NULL) counts the long steps left out
 * for the pool. */
struct step_shape *profile_grid(const struct model_cfg *m, enum grid_part part, int64_t kv_pool_tokens,
                               size_t *n, int *skipped);
/* Keeps, in their order, the first n steps of g that have at most max_rows rows (the part of a grid
 * a change to small steps' kernels touches); returns how many. */
size_t profile_grid_rows_at_most(struct step_shape *g, size_t n, int64_t max_rows);

#endif
