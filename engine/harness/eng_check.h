/* eng_check.h: `tessera engine check`: GPU kernels and steps against the CPU reference. */
#ifndef TESSERA_ENG_CHECK_H
#define TESSERA_ENG_CHECK_H

#include <stdint.h>
#include <stdio.h>

/* Runs every check (only "kernels": the kernels'; only "steps": the whole steps' and the rest, with
 * parts > 1 only its groups part, part + parts, ... of them, counted from 1: a slow sanitizer's run
 * split over calls), reporting one line each to out; returns 0 when all pass. */
int eng_check_run(uint64_t seed, const char *only, int part, int parts, FILE *out);
/* ||a - b|| / ||b|| over n values (||a - b|| where b is all zeros); any non-finite value of a makes it
 * infinite. */
double eng_rel_err(const float *a, const float *b, int64_t n);

#endif
