/*
 * prompt_cache.h: the K/V of prompt blocks kept across requests (vLLM's automatic prefix caching,
 * SGLang's radix cache), as a set of block ids under least-recently-used eviction. A prompt is a chain
 * of block ids (trace.h: Mooncake's hash_ids), an id standing for its block and every block before it,
 * so the blocks a prompt finds cached are its leading ids present in the set.
 *
 * A prompt's blocks are stored last to first (prompt_cache_put), so its first block is the most
 * recently used and its last is evicted first: a shared prefix outlives the suffixes that hang off it,
 * as vLLM frees a request's blocks in reverse order for the same reason.
 */
#ifndef TESSERA_PROMPT_CACHE_H
#define TESSERA_PROMPT_CACHE_H

#include <stdint.h>

struct prompt_cache;

/* A set of at most cap (> 0) block ids. */
struct prompt_cache *prompt_cache_new(int64_t cap);
void prompt_cache_free(struct prompt_cache *c); /* safe on NULL */

/* The leading ids of id[0..n) in the set (none moved in the eviction order). */
int32_t prompt_cache_match(const struct prompt_cache *c, const int32_t *id, int32_t n);
/* Stores id[0..n), last to first, each made the most recently used, the least recently used ids
 * evicted to make room. */
void prompt_cache_put(struct prompt_cache *c, const int32_t *id, int32_t n);
/* Evicts the least recently used ids until at most `keep` are held. */
void prompt_cache_trim(struct prompt_cache *c, int64_t keep);
/* Ids held, the most it holds, and ids evicted since creation. */
int64_t prompt_cache_size(const struct prompt_cache *c);
int64_t prompt_cache_cap(const struct prompt_cache *c);
int64_t prompt_cache_evicted(const struct prompt_cache *c);

#endif
