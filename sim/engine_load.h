/*
 * engine_load.h: the CUDA engine is a shared library loaded on demand; engine_symbol() loads it
 * (once) from beside the executable and returns one of its entry points, or NULL with err (no
 * CUDA in this build, library missing).
 */
#ifndef TESSERA_ENGINE_LOAD_H
#define TESSERA_ENGINE_LOAD_H

#include "util.h"

void *engine_symbol(const char *name, struct ts_err *err);

/* Entry points (engine/cli_engine.c, engine/eng_live.c). */
typedef int (*engine_cli_fn)(int argc, char **argv);
struct sim;
struct sim_executor;
/* Opens the engine for live execution of simulation s (its model and knobs) and fills ex. */
typedef int (*engine_live_open_fn)(const struct sim *s, double mem_limit_gb, struct sim_executor *ex,
                                   struct ts_err *err);
typedef void (*engine_live_close_fn)(struct sim_executor *ex);
int eng_live_open(const struct sim *s, double mem_limit_gb, struct sim_executor *ex, struct ts_err *err);
void eng_live_close(struct sim_executor *ex);

#endif
