/*
 * db_file.c: a database file made whole or not at all (the schema laid out in memory and linked under
 * its name once complete), and the VFS that opens SQLite's files by descriptor.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "db_internal.h"
#include "util.h"


/* The schema laid out in memory and written into fd as a whole database file, its header saying
 * WAL mode where wal (else the rollback journal: a database being written with no journal at all). */
int db_lay_out(int fd, const char *path, bool wal, struct ts_err *err)
{
    sqlite3 *mem = NULL;
    char *sch = db_schema_in("main");
    unsigned char *image = NULL;
    sqlite3_int64 size = 0;
    if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK &&
        sqlite3_exec(mem, "PRAGMA page_size=65536", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_exec(mem, sch, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(mem, "main") == 0)
        image = sqlite3_serialize(mem, "main", &size, 0);
    free(sch);
    sqlite3_close(mem);
    int rc = 0;
    if (!image || size < 100) {
        rc = ts_fail(err, "%s: cannot lay out a new database", path);
    } else {
        image[18] = image[19] = wal ? 2 : 1; /* the file format's write and read versions */
        ssize_t k = 0;
        for (sqlite3_int64 done = 0; done < size && (k = write(fd, image + done, (size_t)(size - done))) > 0;)
            done += k; /* (a short write is followed by the one that says why: a full disk) */
        if (k <= 0)
            rc = ts_fail(err, "%s: cannot write a new database: %s", path, k < 0 ? strerror(errno) : "nothing written");
    }
    sqlite3_free(image);
    return rc;
}

/* Links the unnamed file fd under path once its data are on the disk: 0 when linked, 1 when another
 * writer's database is there (EEXIST) or the file cannot be linked (no /proc), -1 on a failure. */
int db_link_whole(int fd, const char *path, struct ts_err *err)
{
    if (fdatasync(fd) != 0)
        return ts_fail(err, "%s: cannot write a new database: %s", path, strerror(errno));
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, fdpath, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ? 0 : 1;
}

/* An unnamed file (O_TMPFILE, gone with the process whatever ends it) in the folder of path, which
 * does not exist yet: its descriptor, or -1 where path exists or the folder's file system has no
 * unnamed files. */
int db_unnamed_beside(const char *path)
{
    if (access(path, F_OK) == 0)
        return -1;
    char dir[CFG_PATH + 8];
    ts_folder_of(path, dir, sizeof dir);
    return open(dir, O_TMPFILE | O_RDWR, 0666);
}

/* A new database made whole or not at all: the schema, in WAL mode, written into an unnamed file of
 * the output's folder (O_TMPFILE, gone with the process whatever ends it) and linked under its name
 * only once complete; no moment of its making leaves a journal or a half-made file. A database
 * another writer linked first is kept. Where the folder's file system has no unnamed files (or
 * /proc, to link one by), SQLite makes the file as the run is written (a process killed then may
 * leave an empty journal beside it). */
int db_create_whole(const char *path, struct ts_err *err)
{
    const int fd = db_unnamed_beside(path);
    if (fd < 0)
        return 0;
    const int rc = db_lay_out(fd, path, true, err) ? -1 : db_link_whole(fd, path, err) < 0 ? -1 : 0;
    close(fd);
    return rc;
}

/* The VFS the run's connection opens files by: the system's, but for the name /proc/self/fd/N, a
 * file this process has open (an unnamed one) that no other process sees, read and written through
 * a copy of that descriptor with no locks. The system's VFS cannot open it: it resolves the link
 * to the name of an unnamed file, "/dir/#123 (deleted)", and refuses to open links. */
struct fd_file {
    sqlite3_file base;
    int fd;
};

static int fd_close(sqlite3_file *f)
{
    close(((struct fd_file *)f)->fd);
    return SQLITE_OK;
}

static int fd_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at)
{
    const ssize_t got = pread(((struct fd_file *)f)->fd, buf, (size_t)n, at);
    if (got == n)
        return SQLITE_OK;
    if (got < 0)
        return SQLITE_IOERR_READ;
    memset((char *)buf + got, 0, (size_t)(n - got)); /* past the file's end: zeros, as SQLite asks */
    return SQLITE_IOERR_SHORT_READ;
}

/* the cause of this VFS's last failure (its xGetLastError: what sqlite3_system_errno reports) */
static int fd_errno;

static int fd_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at)
{
    const ssize_t put = pwrite(((struct fd_file *)f)->fd, buf, (size_t)n, at);
    if (put == n)
        return SQLITE_OK;
    fd_errno = put < 0 ? errno : ENOSPC; /* a short write: the disk filled */
    return fd_errno == ENOSPC || fd_errno == EDQUOT ? SQLITE_FULL : SQLITE_IOERR_WRITE;
}

static int fd_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    if (ftruncate(((struct fd_file *)f)->fd, size) == 0)
        return SQLITE_OK;
    fd_errno = errno;
    return SQLITE_IOERR_TRUNCATE;
}

static int fd_last_error(sqlite3_vfs *vfs, int n, char *buf)
{
    (void)vfs, (void)n, (void)buf;
    return fd_errno;
}

static int fd_sync(sqlite3_file *f, int flags)
{
    (void)f, (void)flags; /* the link makes the file's data durable first (link_whole) */
    return SQLITE_OK;
}

static int fd_size(sqlite3_file *f, sqlite3_int64 *size)
{
    struct stat sb;
    if (fstat(((struct fd_file *)f)->fd, &sb) != 0)
        return SQLITE_IOERR_FSTAT;
    *size = sb.st_size;
    return SQLITE_OK;
}

static int fd_lock(sqlite3_file *f, int level)
{
    (void)f, (void)level; /* no other process sees the file */
    return SQLITE_OK;
}

static int fd_reserved(sqlite3_file *f, int *out)
{
    (void)f;
    *out = 0;
    return SQLITE_OK;
}

static int fd_control(sqlite3_file *f, int op, void *arg)
{
    (void)f, (void)op, (void)arg;
    return SQLITE_NOTFOUND;
}

static int fd_sector(sqlite3_file *f)
{
    (void)f;
    return 4096;
}

static int fd_traits(sqlite3_file *f)
{
    (void)f;
    return 0;
}

static const sqlite3_io_methods fd_methods = {
    .iVersion = 1, .xClose = fd_close, .xRead = fd_read, .xWrite = fd_write, .xTruncate = fd_truncate,
    .xSync = fd_sync, .xFileSize = fd_size, .xLock = fd_lock, .xUnlock = fd_lock,
    .xCheckReservedLock = fd_reserved, .xFileControl = fd_control, .xSectorSize = fd_sector,
    .xDeviceCharacteristics = fd_traits};

static sqlite3_vfs *sys_vfs;
static const char fd_prefix[] = "/proc/self/fd/";

static int fd_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
    if (!name || strncmp(name, fd_prefix, sizeof fd_prefix - 1) != 0)
        return sys_vfs->xOpen(vfs, name, f, flags, out_flags);
    struct fd_file *ff = (struct fd_file *)f;
    ff->base.pMethods = NULL;
    char *end = NULL;
    const long fd = strtol(name + sizeof fd_prefix - 1, &end, 10);
    /* the descriptor's own name alone: a journal or log beside it ("/proc/self/fd/N-journal") has
     * no file to be, and is refused rather than written into the database */
    if (end == name + sizeof fd_prefix - 1 || *end || fd < 0 || fd > INT_MAX || (ff->fd = dup((int)fd)) < 0)
        return SQLITE_CANTOPEN;
    ff->base.pMethods = &fd_methods;
    if (out_flags)
        *out_flags = flags;
    return SQLITE_OK;
}

static int fd_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    if (strncmp(name, fd_prefix, sizeof fd_prefix - 1) != 0)
        return sys_vfs->xFullPathname(vfs, name, n, out);
    snprintf(out, (size_t)n, "%s", name);
    return SQLITE_OK;
}

/* Registers it on first use (its methods and data otherwise the system VFS's own): 0, or -1. */
int db_fd_vfs(void)
{
    static sqlite3_vfs vfs;
    if (!vfs.zName) {
        if (!(sys_vfs = sqlite3_vfs_find(NULL)))
            return -1;
        vfs = *sys_vfs;
        vfs.pNext = NULL;
        vfs.zName = "tessera-fd";
        if (vfs.szOsFile < (int)sizeof(struct fd_file))
            vfs.szOsFile = (int)sizeof(struct fd_file);
        vfs.xOpen = fd_open;
        vfs.xFullPathname = fd_full_pathname;
        vfs.xGetLastError = fd_last_error;
        if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) {
            vfs.zName = NULL;
            return -1;
        }
    }
    return 0;
}
