/*
 * whole.c: output files made whole or not at all (whole.h).
 */
#define _GNU_SOURCE /* mkostemp, realpath */
#include "whole.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporaries open now, which the signal handler removes (async-signal-safe: fixed buffers,
 * unlink); a slot is busy while its first byte is set. */
#define WHOLE_SLOTS 8
static char open_tmps[WHOLE_SLOTS][4120];
static volatile sig_atomic_t handlers_set;
static const int caught[] = {SIGINT, SIGTERM, SIGXFSZ};
static struct sigaction before[sizeof caught / sizeof *caught];

static void on_signal(int sig)
{
    for (int i = 0; i < WHOLE_SLOTS; i++)
        if (open_tmps[i][0])
            unlink(open_tmps[i]);
    for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
        if (caught[i] == sig)
            sigaction(sig, &before[i], NULL);
    raise(sig);
}

static void set_handlers(void)
{
    if (handlers_set)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* (a signal the process was started ignoring, as a shell's background job ignores SIGINT, stays
     * ignored) */
    for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
        if (sigaction(caught[i], NULL, &before[i]) == 0 && before[i].sa_handler != SIG_IGN)
            sigaction(caught[i], &sa, NULL);
    handlers_set = 1;
}

bool ts_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int ts_whole_open(struct ts_whole *w, const char *path, int flags, const char *input, struct ts_err *err)
{
    memset(w, 0, sizeof *w);
    w->slot = -1;
    struct stat sb;
    if (strlen(path) >= sizeof w->path - 1)
        return ts_fail(err, "%.200s...: the path is too long", path);
    if (ts_same_file(path, input))
        return ts_fail(err, "%s: is the input itself (%s); a writer never replaces its own input", path, input);
    /* (a link is followed: its target is replaced and the link stays) */
    char target[PATH_MAX];
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) && realpath(path, target) && strlen(target) < sizeof w->path - 1)
        path = target;
    mode_t keep = 0; /* an existing file's permissions, kept */
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return ts_fail(err, "%s: a folder, not a file", path);
        if (!S_ISREG(sb.st_mode))
            return ts_fail(err, "%s: not a regular file (a device, pipe or socket); a file is written whole", path);
        if (!(flags & TS_WHOLE_REPLACE) && sb.st_size > 0)
            return ts_fail(err, "%s: exists and is not empty; --force replaces it", path);
        keep = sb.st_mode & 07777;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmpXXXXXX", path);
    set_handlers();
    /* (made and noted with the signals held: none finds a file made and not yet noted) */
    sigset_t hold, was;
    sigemptyset(&hold);
    for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
        sigaddset(&hold, caught[i]);
    sigprocmask(SIG_BLOCK, &hold, &was);
    for (int i = 0; i < WHOLE_SLOTS && w->slot < 0; i++)
        if (!open_tmps[i][0])
            w->slot = i;
    if (w->slot < 0) { /* (every slot busy: a temporary no signal would remove is not made) */
        sigprocmask(SIG_SETMASK, &was, NULL);
        return ts_fail(err, "%s: more than %d files being written at once", path, WHOLE_SLOTS);
    }
    const int fd = mkostemp(w->tmp, O_CLOEXEC);
    const int made = errno;
    if (fd >= 0)
        memcpy(open_tmps[w->slot], w->tmp, sizeof w->tmp);
    sigprocmask(SIG_SETMASK, &was, NULL);
    if (fd < 0) {
        w->slot = -1;
        return ts_fail(err, "%s: cannot create it: %s", path, strerror(made));
    }
    /* the permissions of the file replaced, or those a file created at path would have had (mkostemp's
     * are 0600) */
    if (!keep) {
        const mode_t mask = umask(0);
        umask(mask);
        keep = 0666 & ~mask;
    }
    if (fchmod(fd, keep) != 0 || !(w->f = fdopen(fd, "w"))) {
        const int why = errno;
        close(fd);
        ts_whole_close(w, true, NULL);
        return ts_fail(err, "%s: cannot create it: %s", path, strerror(why));
    }
    return 0;
}

int ts_whole_close(struct ts_whole *w, bool failed, struct ts_err *err)
{
    int why = 0;
    if (w->f) {
        if (!failed && (fflush(w->f) != 0 || ferror(w->f) || fsync(fileno(w->f)) != 0))
            why = errno ? errno : EIO;
        if (fclose(w->f) != 0 && !failed && !why)
            why = errno;
        w->f = NULL;
    }
    if (!failed && !why && rename(w->tmp, w->path) != 0)
        why = errno;
    if (failed || why)
        unlink(w->tmp);
    if (w->slot >= 0)
        open_tmps[w->slot][0] = '\0';
    w->slot = -1;
    if (failed)
        return -1;
    return why ? ts_fail(err, "%s: cannot write it: %s", w->path, strerror(why)) : 0;
}
