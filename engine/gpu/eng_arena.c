/* eng_arena.c: reserve, map and unmap the activation arena (CUDA virtual memory management). */
#define _POSIX_C_SOURCE 200809L
#include "eng_arena.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static struct {
    bool loaded;
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*error_string)(CUresult, const char **);
} drv;

static int load_driver(struct ts_err *err)
{
    if (drv.loaded)
        return 0;
    struct { const char *name; void **fn; } syms[] = {
        {"cuMemAddressReserve", (void **)&drv.reserve}, {"cuMemAddressFree", (void **)&drv.addr_free},
        {"cuMemCreate", (void **)&drv.create},          {"cuMemRelease", (void **)&drv.release},
        {"cuMemMap", (void **)&drv.map},                {"cuMemUnmap", (void **)&drv.unmap},
        {"cuMemSetAccess", (void **)&drv.set_access},
        {"cuMemGetAllocationGranularity", (void **)&drv.granularity},
        {"cuGetErrorString", (void **)&drv.error_string},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(syms); i++) {
        enum cudaDriverEntryPointQueryResult q;
        cudaError_t ce = cudaGetDriverEntryPointByVersion(syms[i].name, syms[i].fn, 12000, cudaEnableDefault, &q);
        if (ce != cudaSuccess || q != cudaDriverEntryPointSuccess || !*syms[i].fn)
            return ts_fail(err, "engine: the CUDA driver has no %s (virtual memory management)", syms[i].name);
    }
    drv.loaded = true;
    return 0;
}

static const char *cu_str(CUresult r)
{
    const char *s = NULL;
    if (drv.error_string)
        drv.error_string(r, &s);
    return s ? s : "unknown CUDA driver error";
}

#define CUD(call)                                                                                  \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            return ts_fail(err, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cu_str(r_));          \
    } while (0)

static CUmemAllocationProp prop_of(int device)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = device;
    return p;
}

int eng_arena_init(struct eng_arena *a, int device, size_t reserve_bytes, struct ts_err *err)
{
    memset(a, 0, sizeof *a);
    a->device = device;
    if (load_driver(err))
        return -1;
    CUmemAllocationProp p = prop_of(device);
    CUD(drv.granularity(&a->granularity, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    size_t g = a->granularity;
    a->reserved = (reserve_bytes + g - 1) / g * g;
    CUdeviceptr base = 0;
    CUD(drv.reserve(&base, a->reserved, g, 0, 0));
    a->base = base;
    return 0;
}

int eng_arena_map(struct eng_arena *a, size_t bytes, struct ts_err *err)
{
    if (bytes <= a->mapped)
        return 0;
    const size_t g = a->granularity, want = (bytes + g - 1) / g * g, add = want - a->mapped;
    if (want > a->reserved) {
        ts_fail(err, "engine: %.2f GiB of activations exceed the arena's %.2f GiB address range",
                want / TS_GIB, a->reserved / TS_GIB);
        return 1;
    }
    CUmemAllocationProp p = prop_of(a->device);
    CUmemGenericAllocationHandle h;
    CUresult r = drv.create(&h, add, &p, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        ts_fail(err, "engine: out of device memory mapping %.3f GiB more activations (arena %.3f -> %.3f GiB)",
                add / TS_GIB, a->mapped / TS_GIB, want / TS_GIB);
        return 1;
    }
    CUD(r);
    r = drv.map(a->base + a->mapped, add, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        drv.release(h);
        return ts_fail(err, "engine: cuMemMap of %.3f GiB failed: %s", add / TS_GIB, cu_str(r));
    }
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = p.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = drv.set_access(a->base + a->mapped, add, &acc, 1);
    if (r != CUDA_SUCCESS) {
        drv.unmap(a->base + a->mapped, add);
        drv.release(h);
        return ts_fail(err, "engine: cuMemSetAccess failed: %s", cu_str(r));
    }
    ts_grow((void **)&a->chunks, &a->cap, a->n + 1, sizeof *a->chunks);
    a->chunks[a->n++] = (struct eng_arena_chunk){h, a->mapped, add};
    a->mapped = want;
    return 0;
}

int eng_arena_trim(struct eng_arena *a, size_t bytes, struct ts_err *err)
{
    while (a->n > 0 && a->chunks[a->n - 1].offset >= bytes) {
        struct eng_arena_chunk *c = &a->chunks[a->n - 1];
        CUD(drv.unmap(a->base + c->offset, c->bytes));
        CUD(drv.release(c->handle));
        a->mapped = c->offset;
        a->n--;
    }
    return 0;
}

void eng_arena_destroy(struct eng_arena *a)
{
    if (!a || !a->base)
        return;
    eng_arena_trim(a, 0, NULL);
    drv.addr_free(a->base, a->reserved);
    free(a->chunks);
    memset(a, 0, sizeof *a);
}
