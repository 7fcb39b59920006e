/*
 * engine_bench_internal.h: what the benchmark's body (engine_bench.c) and its steps
 * (engine_bench_steps.c) share; nothing else includes it.
 */
#ifndef TESSERA_ENGINE_BENCH_INTERNAL_H
#define TESSERA_ENGINE_BENCH_INTERNAL_H

#include <stdio.h>

#include "engine_bench.h"

/* The ceilings the floors use: the short-run and the held GEMM rates (FLOP/s), the copy rate (B/s) */
struct ceilings {
    double peak, held, bw;
};

/* engine_bench_steps.c: each part of the run over the ceilings cl, said on out and o->json; 0, or -1
 * with why on stderr. */
/* The bench's steps (the default four, or the --step ones) against their floors, their variants and ops. */
int engine_bench_steps(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out);
/* FOCUS's evicting steps beside the whole block at 16, 32 and 64 sequences (--only focus). */
int engine_bench_focus(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out);
/* Each step of the clock's ladder (or the --step ones) alone from a cool card (--only clock). */
int engine_bench_clock(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out);
/* Every shape of the PyTorch anchor o->anchor, its steps beside PyTorch eager's (--anchor). */
int engine_bench_anchor_grid(const struct engine_bench_opts *o, const struct ceilings *cl, FILE *out);

#endif
