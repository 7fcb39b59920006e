/*
 * whole.h: an output file made whole or not at all. Its bytes go into a temporary file beside it, of a
 * name no one can guess, made exclusively (so that no link planted at a predictable name is
 * followed); once complete it is flushed and renamed onto the file. A failure, or SIGINT, SIGTERM or
 * SIGXFSZ (a file-size limit) meanwhile, removes the temporary: the file is then as it was, and a
 * good one already there (a calibration, an export) is never left truncated. A file replaced keeps its
 * permissions; a link's target is replaced and the link kept; a device, pipe or socket is refused.
 */
#ifndef TESSERA_WHOLE_H
#define TESSERA_WHOLE_H

#include <stdbool.h>
#include <stdio.h>

#include "util.h"

struct ts_whole {
    FILE *f;        /* where the bytes go */
    char path[4096]; /* the file it becomes */
    char tmp[4120];  /* the temporary beside it */
    int slot;        /* its place among those the signal handler removes */
};

/* What ts_whole_open may replace: an existing file at path only with TS_WHOLE_REPLACE (a non-empty one
 * is refused by name without it); never the file `input` names, the writer's own input, by any of
 * its names. */
enum { TS_WHOLE_REPLACE = 1 };
/* Opens w->f on a new temporary beside path: 0, or -1 with err naming path (nothing made). */
int ts_whole_open(struct ts_whole *w, const char *path, int flags, const char *input, struct ts_err *err);
/* Flushes, closes and renames the temporary onto path: 0, or -1 with err (the temporary removed, path
 * as it was). With failed set (the writer's own failure), it only removes the temporary and returns -1. */
int ts_whole_close(struct ts_whole *w, bool failed, struct ts_err *err);
/* Whether paths a and b name one file (the same device and inode); false where either does not exist. */
bool ts_same_file(const char *a, const char *b);

#endif
