/* check_engine.h: the engine's GPU test suite (build/tests/gpu/check_engine): kernels and steps
 * against the CPU reference (check_engine.c), the split engine against one GPU (check_engine_tp.c). */
#ifndef TESSERA_CHECK_ENGINE_H
#define TESSERA_CHECK_ENGINE_H

#include <stdint.h>
#include <stdio.h>

#include "eng_choices.h"

/* Runs every check (only "kernels": the kernels'; only "steps": the whole steps' and the rest, with
 * parts > 1 only its groups part, part + parts, ... of them, counted from 1: a slow sanitizer's run
 * split over calls), reporting one line each to out; returns 0 when all pass. */
/* The engine choices of check_engine's command line: every engine the suite makes takes them
 * (eng_opts_defaults). */
extern struct eng_choices check_choices;
int check_engine_run(uint64_t seed, const char *only, int part, int parts, FILE *out);
/* The tensor-parallel engine of `size` ranks (this process one of them) against one GPU on the same
 * weights; 0 when every step agrees. */
int check_engine_tp_run(int size, uint64_t seed, FILE *out);
/* ||a - b|| / ||b|| over n values (||a - b|| where b is all zeros); any non-finite value of a makes it
 * infinite. */
double check_rel_err(const float *a, const float *b, int64_t n);

#endif
