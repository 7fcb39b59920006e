/*
 * engine_load.c: finding the CUDA engine. It lives in libtessera_engine.so beside the executable
 * and is loaded only when asked for (`tessera engine`, `tessera sim --executor gpu`), so the
 * simulator never pays for, or needs, the CUDA libraries.
 */
#define _GNU_SOURCE
#include "engine_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void *engine_symbol(const char *name, struct ts_err *err)
{
#ifndef TS_HAVE_CUDA
    (void)name;
    ts_fail(err, "this tessera was built without CUDA (nvcc was not found at build time); rebuild "
                 "with nvcc on the PATH or NVCC=/path/to/nvcc");
    return NULL;
#else
    static void *h;
    if (!h) {
        char exe[4096], lib[4200];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) {
            ts_fail(err, "cannot locate the executable");
            return NULL;
        }
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(lib, sizeof lib, "%s/libtessera_engine.so", exe);
        if (access(lib, F_OK) != 0) { /* built for CUDA, the engine not built (make builds the simulator) */
            ts_fail(err, "the CUDA engine is not built beside this tessera: make engine builds it (it needs a "
                         "GPU to run); the simulator works without it");
            return NULL;
        }
        h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) { /* (dlerror names the library and the symbol or dependency it lacks) */
            ts_fail(err, "cannot load the CUDA engine, libtessera_engine.so beside this tessera: %s; make engine "
                         "builds it again, and the simulator works without it", dlerror());
            return NULL;
        }
    }
    void *sym = dlsym(h, name);
    if (!sym)
        ts_fail(err, "the engine library has no %s", name);
    return sym; /* the library stays loaded until exit */
#endif
}
