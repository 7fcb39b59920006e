/*
 * act_cache.h: a step's activation memory, the one model of it. A step's shape
 * (og_shape) is built into its op graph and laid out by a planner; the plan's bytes are what the
 * step holds. Every user asks here: the simulator's admission reservations, each step's recorded
 * peak and capacity check, lazy chunking, `mem plan`, `mem lmax` and the engine's probes.
 *
 * The simulator asks for the same shapes over and over, so each distinct shape is planned once and
 * later asks are a hash lookup; first-fit and greedy-size plan the engine's layout over one layer of
 * each kind, which gives the full graph's bytes (opgraph_build_compact). The planner decides; nothing
 * here approximates it.
 *
 * Chunking (Mosaic's lazy chunking, and a brute-force search beside it) looks for the logits' and
 * the FFN's chunk counts that make a shape's plan fit a budget, through the same cache.
 */
#ifndef TESSERA_ACT_CACHE_H
#define TESSERA_ACT_CACHE_H

#include <stdint.h>

#include "opgraph.h"
#include "planner.h"

struct act_cache;

/* What the planner laid out for one shape. */
struct act_plan {
    int64_t bytes;       /* the planner's arena (reserved bytes for caching and profiled) */
    int64_t theoretical; /* the graph's theoretical peak */
    int64_t fixed, ffn, logits; /* the parts' peaks as the chunk search weighs them (opgraph_part_peaks) */
    uint8_t largest;     /* enum og_kind: the largest tensor alive at the theoretical peak */
};

/* A cache for one model (copied) and planner (outlives the cache); o NULL: defaults. */
struct act_cache *act_cache_create(const struct model_cfg *m, const struct planner_ops *p,
                                   const struct planner_opts *o);
void act_cache_destroy(struct act_cache *c); /* NULL is safe */
/* The plan of a forward of this shape (a shape of no tokens holds nothing). Returns -1 with err
 * where the planner refuses the graph. */
int act_cache_get(struct act_cache *c, const struct og_shape *shape, struct act_plan *out, struct ts_err *err);
/* act_cache_get's bytes alone. */
int act_cache_peak(struct act_cache *c, const struct og_shape *shape, int64_t *bytes, struct ts_err *err);
/* Distinct shapes planned so far (each planned once). */
int64_t act_cache_planned(const struct act_cache *c);
/* The planned bytes of one shape, without keeping a cache (a planner's defaults). */
int act_planned_bytes(const struct model_cfg *m, const struct planner_ops *p, const struct og_shape *shape,
                      int64_t *bytes, struct ts_err *err);

/* --- chunking -------------------------------------------------------------------------------- */

enum chunking { CHUNK_NONE = 0, CHUNK_LAZY, CHUNK_BRUTE };

struct chunk_choice {
    int32_t logit_chunks, ffn_chunks; /* counts chosen */
    struct og_shape shape;            /* the shape they give */
    struct act_plan at;               /* its plan */
    int plans_tried;                  /* shapes weighed (asked of the cache) */
    bool fits;
    char why[200];                    /* when it does not fit: why (the largest tensor at the peak) */
};

/* The bytes a chunk search keeps free of the memory it plans in: mib MiB where mib >= 0 (what
 * --search-margin-mib gives), else Mosaic's (flashserve/Mosaic diffusion_tools/online_searcher.py):
 * a 900 MiB safety margin, and for an MoE model a plan that leaves less than 700 MiB more is refused
 * too. Callers plan lazy and brute-force chunking within their budget less this. */
int64_t chunk_search_margin(const struct model_cfg *m, double mib);

/* Finds chunk counts so that the planned activations fit `budget` bytes: lazy raises the chunk
 * count of whichever of the logits' and the FFN's peaks is the larger (opgraph_part_peaks), while it
 * is above the fixed part's, until the plan fits (a budget of 0: as far as chunking shrinks the
 * step); brute tries every pair up to the limits and keeps the fewest chunks in all; none plans the
 * shape as it is. shape->ffn_chunks and logit_chunk_rows are the starting point (chunks of 1 =
 * unchunked). */
int act_cache_chunk(enum chunking how, struct act_cache *c, const struct og_shape *shape, int64_t budget,
                    struct chunk_choice *out, struct ts_err *err);

/* act_cache_chunk on a cache of its own, with the chosen shape's plan (its offsets) for display. */
struct chunk_result {
    struct chunk_choice choice;
    struct plan plan; /* the chosen shape's plan (owned) */
};
int chunk_search(enum chunking how, const struct model_cfg *m, const struct og_shape *shape,
                 const struct planner_ops *p, const struct planner_opts *o, int64_t budget,
                 struct chunk_result *out, struct ts_err *err);

#endif
