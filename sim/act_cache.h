/*
 * act_cache.h: the activation reservation of a step as a planner lays it out, cached by shape. The
 * simulator asks for the same shapes over and over (each admission, each static batch size it
 * tries), so each distinct og_shape is built into an op graph and planned once; later asks are a
 * hash lookup. The planner decides; nothing here approximates it.
 */
#ifndef TESSERA_ACT_CACHE_H
#define TESSERA_ACT_CACHE_H

#include <stdint.h>

#include "opgraph.h"
#include "planner.h"

struct act_cache;

/* A cache for one model and planner (neither is copied: both outlive the cache). */
struct act_cache *act_cache_create(const struct model_cfg *m, const struct planner_ops *p,
                                   const struct planner_opts *o);
void act_cache_destroy(struct act_cache *c); /* NULL is safe */
/* The planner's arena (reserved bytes for caching and profiled) for a forward of this shape into
 * *bytes. Returns -1 with err where the planner refuses the graph. */
int act_cache_peak(struct act_cache *c, const struct og_shape *shape, int64_t *bytes, struct ts_err *err);
/* Distinct shapes planned so far (each planned once). */
int64_t act_cache_planned(const struct act_cache *c);

#endif
