/*
 * version.c: the code version (git describe) recorded with every run. Only this file is built
 * with it, and it is rebuilt whenever the version changes (Makefile: VERSION_FILE), so a run's
 * recorded version is never stale and a commit does not rebuild everything.
 */
#include "util.h"

#ifndef TS_VERSION
#define TS_VERSION "unknown"
#endif

const char *ts_version(void) { return TS_VERSION; }
