/*
 * eng_arena.h: the engine's activation arena in CUDA virtual memory. One address range is reserved
 * up front (cuMemAddressReserve, as large as the device's memory: addresses cost nothing); physical
 * memory is created and mapped into it only up to what the planned steps need (cuMemCreate,
 * cuMemMap, cuMemSetAccess), so buffers keep their addresses while the arena grows, and a CUDA graph
 * captured over them stays valid. The driver entry points are fetched through the runtime
 * (cudaGetDriverEntryPointByVersion): the engine links no libcuda.
 */
#ifndef TESSERA_ENG_ARENA_H
#define TESSERA_ENG_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct eng_arena {
    unsigned long long base; /* CUdeviceptr */
    size_t reserved, mapped, granularity;
    struct eng_arena_chunk {
        unsigned long long handle;
        size_t offset, bytes;
    } *chunks;
    size_t n, cap;
    int device;
};

int eng_arena_init(struct eng_arena *a, int device, size_t reserve_bytes, struct ts_err *err);
/* Maps physical memory so that [0, bytes) is backed (rounded up to the granularity). Returns 0,
 * 1 when the device is out of memory (nothing changed; err says how much was asked), -1 on another
 * CUDA error. */
int eng_arena_map(struct eng_arena *a, size_t bytes, struct ts_err *err);
/* Unmaps and frees every chunk that lies wholly past `bytes`. */
int eng_arena_trim(struct eng_arena *a, size_t bytes, struct ts_err *err);
void eng_arena_destroy(struct eng_arena *a);
static inline void *eng_arena_at(const struct eng_arena *a, int64_t offset)
{
    return (void *)(uintptr_t)(a->base + (unsigned long long)offset);
}

#endif
