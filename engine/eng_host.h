/*
 * eng_host.h: the host's part of a step over K/V offloaded to host memory (HERALD's: the policy
 * herald), as a live run does it beside the engine (engine/harness/eng_live.c). The host scores each
 * offloaded token's keys against one query, reading them from host memory over several threads, and
 * keeps the tokens of the highest scores; their K and V then cross the host link.
 */
#ifndef TESSERA_ENG_HOST_H
#define TESSERA_ENG_HOST_H

#include <stdint.h>

/* The host threads that score: the sim's scan rate (--herald-scan-gbs) is what 16 threads read. */
#define ENG_HOST_THREADS 16

/* Scores tokens 0..n-1 of keys (token t's key: `row` bf16 values at keys + t * stride) against
 * query (row floats), score[t] = their dot product, over `threads` threads (1 to 64), and writes
 * the k (at most n) tokens of the highest scores to top, highest first. scores: room for n. Returns
 * the count kept, or -1 where a thread cannot start. */
int32_t eng_host_select(const uint16_t *keys, int64_t n, int64_t row, int64_t stride, const float *query, int32_t k,
                        int threads, float *scores, int32_t *top);

#endif
