/*
 * db.c: the SQLite output of a run (SPEC section 10).
 *
 *   runs          run_id, created (UTC, to the nanosecond), code_version, seed, config_json
 *   requests      per request: arrival, admitted, first block done, finish (ns), P, G, C, steps,
 *                 preemptions, state, reject_reason
 *   steps         (view) per step: start, duration, segments, q/kv/kv_write/logit tokens, decoded,
 *                 Refresh/Reuse/... counts, activation peak, KV in use   (skipped by --no-steps)
 *   segments      (view) per step and request: phase, q, kv, kv_write, logit_rows, decoded, padding,
 *                 keep, score_rows, q_front, kv_front, kv_write_front, probe, carry, picked
 *                 (what `tessera engine replay` executes; skipped by --no-steps)
 *   step_runs     what the steps view expands: runs of consecutive steps alike but for their start
 *   segment_runs  what the segments view expands: runs of consecutive steps in which a request's
 *                 segment kept its shape
 *   summary       one row per run: throughput, latency statistics, counts, memory, redundancy
 *   op_breakdown  per-op seconds summed over the run
 *
 * A run is written in one transaction straight into the database, in WAL mode, waiting for other
 * writers (SQLite's busy handling, and a new try of the whole write where another writer's work
 * fails it): any number of processes may write into one database at once, each run under its own
 * run_id. A failure, SIGINT or SIGTERM rolls the transaction back; a process killed outright leaves
 * a transaction SQLite rolls back the next time the file is opened. Either way no partial run is
 * ever visible, and no file but the database (and, while it is open, SQLite's own -wal and -shm) is
 * made: a new database is written whole, with its run, into an unnamed file that is linked under its
 * name once complete (no journal or log is written for it), and the step rows wait for the commit in
 * unnamed temporary files (tmpfile), which no path names. A database is left in rollback-journal
 * mode (read-only media can read it): a new one is made so, and the last writer to close an existing
 * one switches it back from WAL.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim_internal.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY, created TEXT, code_version TEXT,"
    " seed INTEGER, config_json TEXT);"
    "CREATE TABLE IF NOT EXISTS requests(run_id INTEGER, req_id INTEGER, arrival_ns INTEGER,"
    " admitted_ns INTEGER, first_block_ns INTEGER, finish_ns INTEGER, P INTEGER, G INTEGER,"
    " C INTEGER, steps INTEGER, preemptions INTEGER, state TEXT, reject_reason TEXT,"
    " PRIMARY KEY(run_id, req_id));"
    "CREATE TABLE IF NOT EXISTS step_runs(run_id INTEGER, first_step INTEGER, last_step INTEGER,"
    " start_ns INTEGER, duration_ns INTEGER, num_segs INTEGER, q_tokens INTEGER, kv_tokens INTEGER,"
    " kv_write_tokens INTEGER, logit_rows INTEGER, decoded INTEGER, num_full INTEGER,"
    " num_refresh INTEGER, num_reuse INTEGER, num_prefill INTEGER, num_block INTEGER,"
    " act_peak_bytes INTEGER, kv_in_use_bytes INTEGER@KNOBS);" /* and a column a step knob (step_knobs) */
    "CREATE TABLE IF NOT EXISTS segment_runs(run_id INTEGER, req_id INTEGER,"
    " first_step INTEGER, last_step INTEGER, phase TEXT, q INTEGER, kv INTEGER, kv_write INTEGER,"
    " logit_rows INTEGER, decoded INTEGER, padding INTEGER, keep INTEGER, score_rows INTEGER,"
    " q_front INTEGER, kv_front INTEGER, kv_write_front INTEGER, probe INTEGER, carry INTEGER,"
    " picked INTEGER);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER PRIMARY KEY, num_requests INTEGER,"
    " num_finished INTEGER, num_rejected INTEGER, num_preemptions INTEGER, num_steps INTEGER,"
    " request_steps INTEGER, tokens_decoded INTEGER, content_tokens INTEGER, makespan_s REAL,"
    " throughput_tok_s REAL, content_tok_s REAL, req_s REAL, lat_mean_s REAL, lat_p50_s REAL,"
    " lat_p90_s REAL, lat_p99_s REAL, lat_std_s REAL, lat_span_s REAL, ttfb_mean_s REAL,"
    " queue_mean_s REAL, mean_q_per_step REAL, mean_segs_per_step REAL, peak_mem_bytes INTEGER,"
    " weight_bytes INTEGER, kv_pool_bytes INTEGER, act_reserved_bytes INTEGER,"
    " capacity_bytes INTEGER, static_batch INTEGER, rows_processed INTEGER, missed_decodes INTEGER,"
    " redundancy REAL, num_stalls INTEGER);"
    "CREATE TABLE IF NOT EXISTS op_breakdown(run_id INTEGER, op TEXT, seconds REAL,"
    " PRIMARY KEY(run_id, op));";

/* The step rows and the segment rows, one a step and one a request and step, are views over runs:
 * consecutive steps alike but for their start, each starting when the one before ended
 * (step_runs), and consecutive steps in which a request's segment kept one shape
 * (segment_runs). A run thus writes a row per change rather than per step. The views expand them
 * (a step's start is its run's plus the durations before it); they are made after the upgrade,
 * which turns an older database's tables of these names into runs of one step. */
static const char *const step_totals_cols = "num_segs, q_tokens, kv_tokens, kv_write_tokens, logit_rows, decoded, "
                                            "num_full, num_refresh, num_reuse, num_prefill, num_block, act_peak_bytes, "
                                            "kv_in_use_bytes";

static int has_column(sqlite3 *db, const char *name, const char *table, const char *col);

/* Appends ", KNOB" for every step knob (step_knobs) to buf[*n..len): with db, NULL for one that
 * `name`.`table` lacks (a database written before it was recorded), as SELECT's "NULL AS KNOB".
 * -1 on an SQLite error. */
static int knob_cols(sqlite3 *db, const char *name, const char *table, char *buf, size_t *n, size_t len)
{
    for (int i = 0; i < STEP_KNOBS; i++) {
        const int have = db ? has_column(db, name, table, step_knobs[i].name) : 1;
        if (have < 0)
            return -1;
        *n += (size_t)snprintf(buf + *n, len - *n, have ? ", %s" : ", NULL AS %s", step_knobs[i].name);
    }
    TS_ASSERT(*n < len);
    return 0;
}

/* The step rows' columns but run_id, step_id, start_ns and duration_ns: the totals and memory, then
 * every step knob by its name in step_knobs */
static const char *step_cols_list(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t n = (size_t)snprintf(buf, sizeof buf, "%s", step_totals_cols);
        knob_cols(NULL, NULL, NULL, buf, &n, sizeof buf);
    }
    return buf;
}
#define step_cols step_cols_list()
static const char *const seg_cols = "req_id, phase, q, kv, kv_write, logit_rows, decoded, padding, keep, score_rows, "
                                    "q_front, kv_front, kv_write_front, probe, carry, picked";

/* The views in database `name`, into buf. */
static void views_sql(const char *name, char *buf, size_t len)
{
    const int n = snprintf(buf, len,
             "CREATE VIEW IF NOT EXISTS %s.steps AS WITH RECURSIVE x(run_id, step_id, last_step, start_ns, duration_ns, "
             "%s) AS (SELECT run_id, first_step, last_step, start_ns, duration_ns, %s FROM step_runs UNION ALL SELECT "
             "run_id, step_id + 1, last_step, start_ns + duration_ns, duration_ns, %s FROM x WHERE step_id < last_step) "
             "SELECT run_id, step_id, start_ns, duration_ns, %s FROM x;"
             "CREATE VIEW IF NOT EXISTS %s.segments AS WITH RECURSIVE x(run_id, step_id, last_step, %s) AS (SELECT "
             "run_id, first_step, last_step, %s FROM segment_runs UNION ALL SELECT run_id, step_id + 1, last_step, %s "
             "FROM x WHERE step_id < last_step) SELECT run_id, step_id, %s FROM x;",
             name, step_cols, step_cols, step_cols, step_cols, name, seg_cols, seg_cols, seg_cols, seg_cols);
    TS_ASSERT(n > 0 && (size_t)n < len);
}

/* Columns later versions added to a table: a database written before them gets them (their rows
 * read as 0) before a run is added to it. */
static const char *const added_columns[][2] = {{"segments", "keep"},    {"segments", "score_rows"},
                                                {"segments", "q_front"}, {"segments", "kv_front"},
                                                {"segments", "kv_write_front"}, {"segments", "probe"},
                                                {"segments", "carry"},   {"segments", "picked"},
                                                {"segment_runs", "picked"}, {"summary", "rows_processed"},
                                                {"summary", "missed_decodes"}, {"summary", "redundancy"},
                                                {"summary", "num_stalls"}};

/* Whether table `table` of database `name` has column `col`: 1 or 0, -1 on an SQLite error. */
static int has_column(sqlite3 *db, const char *name, const char *table, const char *col)
{
    char sql[256];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s', '%s') WHERE name = '%s'", table, name, col);
    int have = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        have = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return have;
}

/* Whether `name`.`what` is a table (an older database's step or segment rows) rather than a view. */
static int is_table(sqlite3 *db, const char *name, const char *what, bool *out)
{
    char sql[160];
    sqlite3_stmt *ty = NULL;
    snprintf(sql, sizeof sql, "SELECT type FROM %s.sqlite_master WHERE name = '%s'", name, what);
    *out = false;
    if (sqlite3_prepare_v2(db, sql, -1, &ty, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(ty) == SQLITE_ROW)
        *out = strcmp((const char *)sqlite3_column_text(ty, 0), "table") == 0;
    sqlite3_finalize(ty);
    return 0;
}

/* Brings the database `name` (main, out, src) to the current schema, whose tables it already has
 * (CREATE ... IF NOT EXISTS): the added columns it lacks, an older database's tables of step and
 * segment rows turned into runs of one step each, and the views over the runs. */
static int db_upgrade(sqlite3 *db, const char *name)
{
    char sql[8192];
    bool old_steps, old_segs;
    if (is_table(db, name, "steps", &old_steps) || is_table(db, name, "segments", &old_segs))
        return -1;
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        const bool runs_col = strcmp(added_columns[i][0], "segment_runs") == 0;
        if (strcmp(added_columns[i][0], "segments") == 0 && !old_segs)
            continue; /* the view has them */
        const int have = has_column(db, name, added_columns[i][0], added_columns[i][1]);
        if (have < 0)
            return -1;
        /* a column added to the runs: the view over them is made again with it */
        snprintf(sql, sizeof sql, "ALTER TABLE %s.%s ADD COLUMN %s INTEGER NOT NULL DEFAULT 0;%s%s%s", name,
                 added_columns[i][0], added_columns[i][1], runs_col ? "DROP VIEW IF EXISTS " : "",
                 runs_col ? name : "", runs_col ? ".segments;" : "");
        if (!have && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    /* step knobs a database's step runs do not record yet: NULL in its older rows (not recorded; a
     * replay derives them from the run's configuration), and the steps view made again with them */
    for (int i = 0; i < STEP_KNOBS && !old_steps; i++) {
        const int have = has_column(db, name, "step_runs", step_knobs[i].name);
        if (have < 0)
            return -1;
        snprintf(sql, sizeof sql, "ALTER TABLE %s.step_runs ADD COLUMN %s INTEGER; DROP VIEW IF EXISTS %s.steps;", name,
                 step_knobs[i].name, name);
        if (!have && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    if (old_steps) { /* a table of steps: its knob columns where it has them, NULL for the others */
        char cols[1024];
        size_t n = (size_t)snprintf(cols, sizeof cols, "%s", step_totals_cols);
        if (knob_cols(db, name, "steps", cols, &n, sizeof cols))
            return -1;
        snprintf(sql, sizeof sql, "INSERT INTO %s.step_runs SELECT run_id, step_id, step_id, start_ns, duration_ns, %s "
                                  "FROM %s.steps ORDER BY run_id, step_id; DROP TABLE %s.steps;",
                 name, cols, name, name);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    if (old_segs) {
        snprintf(sql, sizeof sql, "INSERT INTO %s.segment_runs SELECT run_id, req_id, step_id, step_id, %s "
                                  "FROM %s.segments ORDER BY rowid; DROP TABLE %s.segments;",
                 name, seg_cols + strlen("req_id, "), name, name);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    views_sql(name, sql, sizeof sql);
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* The schema with every table in the attached database `name`. Caller frees. */
static char *schema_in(const char *name)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS ", knobs[] = "@KNOBS";
    char *out = xmalloc(strlen(schema) + 64 * (strlen(name) + 1) + 64 * STEP_KNOBS + 1), *o = out;
    for (const char *p = schema; *p;) {
        if (strncmp(p, create, sizeof create - 1) == 0) {
            o += sprintf(o, "%s%s.", create, name);
            p += sizeof create - 1;
        } else if (strncmp(p, knobs, sizeof knobs - 1) == 0) { /* step_runs' knob columns */
            for (int i = 0; i < STEP_KNOBS; i++)
                o += sprintf(o, ", %s INTEGER", step_knobs[i].name);
            p += sizeof knobs - 1;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* The folder a database path names its file in ("." for a bare name). */
static void folder_of(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, len, ".");
}

/* The schema laid out in memory and written into fd as a whole database file, its header saying
 * WAL mode where wal (else the rollback journal: a database being written with no journal at all). */
static int lay_out(int fd, const char *path, bool wal, struct ts_err *err)
{
    sqlite3 *mem = NULL;
    char *sch = schema_in("main");
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
        if (write(fd, image, (size_t)size) != (ssize_t)size)
            rc = ts_fail(err, "%s: cannot write a new database: %s", path, strerror(errno));
    }
    sqlite3_free(image);
    return rc;
}

/* Links the unnamed file fd under path once its data are on the disk: 0 when linked, 1 when another
 * writer's database is there (EEXIST) or the file cannot be linked (no /proc), -1 on a failure. */
static int link_whole(int fd, const char *path, struct ts_err *err)
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
static int unnamed_beside(const char *path)
{
    if (access(path, F_OK) == 0)
        return -1;
    char dir[CFG_PATH + 8];
    folder_of(path, dir, sizeof dir);
    return open(dir, O_TMPFILE | O_RDWR, 0666);
}

/* A new database made whole or not at all: the schema, in WAL mode, written into an unnamed file of
 * the output's folder (O_TMPFILE, gone with the process whatever ends it) and linked under its name
 * only once complete; no moment of its making leaves a journal or a half-made file. A database
 * another writer linked first is kept. Where the folder's file system has no unnamed files (or
 * /proc, to link one by), SQLite makes the file as the run is written (a process killed then may
 * leave an empty journal beside it). */
static int create_whole(const char *path, struct ts_err *err)
{
    const int fd = unnamed_beside(path);
    if (fd < 0)
        return 0;
    const int rc = lay_out(fd, path, true, err) ? -1 : link_whole(fd, path, err) < 0 ? -1 : 0;
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
static int fd_vfs(void)
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

static const char *const state_names[] = {"pending", "waiting", "running", "finished", "rejected"};

struct writer {
    sqlite3 *db;
    struct ts_err *err;
    const char *path;
    enum db_mode mode;
    bool fresh; /* writing a database no one else sees yet (write_fresh): no journal */
    /* the run's runs of steps and of segments, spilled as they close into two unnamed temporary
     * files (gone with the process, whatever ends it) and inserted into the database at commit */
    FILE *steps, *segs;
};

/* SQLite's message for db's last failure, with the system's where one caused it (a full disk, a
 * read-only file system, a permission): into buf. */
static const char *db_why(sqlite3 *db, char *buf, size_t len)
{
    const int sys = db ? sqlite3_system_errno(db) : 0;
    snprintf(buf, len, "%s%s%s%s", db ? sqlite3_errmsg(db) : "?", sys ? " (" : "", sys ? strerror(sys) : "",
             sys ? ")" : "");
    return buf;
}

static int db_fail(struct writer *w, const char *what)
{
    char why[320];
    return ts_fail(w->err, "%s: %s: %s", w->path, what, db_why(w->db, why, sizeof why));
}

static int prepare(struct writer *w, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(w->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_fail(w, "prepare");
    return 0;
}

static int step_done(struct writer *w, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        return db_fail(w, "insert");
    sqlite3_reset(st);
    return 0;
}

/* The requests' rows, as sim_record spilled them when each was done. */
static int write_requests(struct writer *w, const struct sim *s, int64_t run_id)
{
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO out.requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    int rc = 0, got;
    int64_t v[SIM_REQ_ROW], rows = 0;
    if (fflush(s->req_spill) || fseeko(s->req_spill, 0, SEEK_SET))
        rc = ts_fail(w->err, "%s: cannot read back the requests' rows: %s", w->path, strerror(errno));
    while (!rc && (got = db_spill_read(s->req_spill, v, SIM_REQ_ROW)) != 0) {
        if (got < 0) {
            rc = ts_fail(w->err, "%s: the requests' rows spilled to a temporary file came back short", w->path);
            break;
        }
        /* id, arrival, admitted, first block, finish (-1: none), P, G, C, steps, preemptions, state,
         * reject reason (-1: none) */
        int k = 1;
        sqlite3_bind_int64(st, k++, run_id);
        for (int j = 0; j < 5; j++) {
            if (j < 2 || v[j] >= 0)
                sqlite3_bind_int64(st, k++, v[j]);
            else
                sqlite3_bind_null(st, k++);
        }
        for (int j = 5; j < 10; j++)
            sqlite3_bind_int64(st, k++, v[j]);
        if (v[10] < 0 || v[10] >= (int64_t)TS_ARRAY_LEN(state_names) || v[11] >= s->num_reasons) {
            rc = ts_fail(w->err, "%s: request %lld's row spilled to a temporary file came back damaged", w->path,
                         (long long)v[0]);
            break;
        }
        sqlite3_bind_text(st, k++, state_names[v[10]], -1, SQLITE_STATIC);
        if (v[11] >= 0)
            sqlite3_bind_text(st, k++, s->reasons[v[11]], -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, k++);
        rc = step_done(w, st);
        rows++;
    }
    if (!rc && (ferror(s->req_spill) || rows != s->num_done))
        rc = ts_fail(w->err, "%s: %lld of the %lld requests' rows came back from their temporary file%s", w->path,
                     (long long)rows, (long long)s->num_done, ferror(s->req_spill) ? " (a read error)" : "");
    fseeko(s->req_spill, 0, SEEK_END); /* where the requests recorded next are spilled */
    sqlite3_finalize(st);
    return rc;
}

/* The open runs of segments: per request, the shape its segment has kept since first_step
 * (through last), not yet written. */
/* The columns of a row of step_runs (run_id, first_step, last_step, start_ns, duration_ns and
 * step_cols) and of segment_runs (run_id, first_step, last_step and seg_cols). */
#define STEP_RUN_COLS (18 + STEP_KNOBS)
#define SEG_RUN_COLS 19
#define RUN_COLS_MAX (STEP_RUN_COLS > SEG_RUN_COLS ? STEP_RUN_COLS : SEG_RUN_COLS)

struct seg_run {
    struct segment g;
    int64_t first, last;
};
/* The open runs' places in seg_runs.v by request id: open addressing with linear probing, a closed
 * run's entry deleted by shifting its successors back, so it holds as many entries as runs are open. */
struct run_index {
    int64_t *key; /* a request id, or -1: empty */
    int32_t *val;
    size_t cap, n; /* cap a power of two, at least twice n */
};

static size_t ri_home(const struct run_index *m, int64_t key) { return (size_t)ts_mix64((uint64_t)key) & (m->cap - 1); }

static int32_t ri_get(const struct run_index *m, int64_t key)
{
    for (size_t i = m->cap ? ri_home(m, key) : 0; m->cap; i = (i + 1) & (m->cap - 1)) {
        if (m->key[i] == key)
            return m->val[i];
        if (m->key[i] < 0)
            break;
    }
    return -1;
}

static void ri_put(struct run_index *m, int64_t key, int32_t val)
{
    if (2 * (m->n + 1) > m->cap) { /* doubled, every entry placed again */
        struct run_index old = *m;
        m->cap = old.cap ? 2 * old.cap : 64, m->n = 0;
        m->key = xmalloc(m->cap * sizeof *m->key), m->val = xmalloc(m->cap * sizeof *m->val);
        for (size_t i = 0; i < m->cap; i++)
            m->key[i] = -1;
        for (size_t i = 0; i < old.cap; i++)
            if (old.key[i] >= 0)
                ri_put(m, old.key[i], old.val[i]);
        free(old.key), free(old.val);
    }
    size_t i = ri_home(m, key);
    while (m->key[i] >= 0 && m->key[i] != key)
        i = (i + 1) & (m->cap - 1);
    m->n += m->key[i] < 0;
    m->key[i] = key, m->val[i] = val;
}

static void ri_del(struct run_index *m, int64_t key)
{
    if (!m->cap)
        return;
    size_t i = ri_home(m, key);
    while (m->key[i] != key) {
        if (m->key[i] < 0)
            return;
        i = (i + 1) & (m->cap - 1);
    }
    for (size_t j = i;;) { /* each later entry of the probe run whose home is not in (i, j] moves to i */
        j = (j + 1) & (m->cap - 1);
        if (m->key[j] < 0)
            break;
        const size_t h = ri_home(m, m->key[j]);
        if (i <= j ? i < h && h <= j : i < h || h <= j)
            continue;
        m->key[i] = m->key[j], m->val[i] = m->val[j];
        i = j;
    }
    m->key[i] = -1;
    m->n--;
}

struct seg_runs {
    struct seg_run *v;
    size_t n, cap;
    struct run_index at; /* each open run's place in v, by its request's id */
    /* the steps' open run: its columns (the first step's start), first and last step, and where the
     * step after it must start to extend it */
    int64_t step[STEP_RUN_COLS];
    bool step_open;
    int64_t step_next_start;
};

static bool same_shape(const struct segment *a, const struct segment *b)
{
    return a->q == b->q && a->kv == b->kv && a->kv_write == b->kv_write && a->logit_rows == b->logit_rows &&
           a->decoded == b->decoded && a->phase == b->phase && a->padding == b->padding && a->keep == b->keep &&
           a->score_rows == b->score_rows && a->q_front == b->q_front && a->kv_front == b->kv_front &&
           a->kv_write_front == b->kv_write_front && a->probe == b->probe && a->carry == b->carry &&
           a->picked == b->picked;
}

/* A spilled record: its n values (those of a row but run_id, which the commit gives), each a
 * zigzag LEB128 varint (most are small or 0: a fifth of their fixed size). */
int db_spill_write(FILE *f, const int64_t *v, int n)
{
    unsigned char buf[RUN_COLS_MAX * 10];
    size_t len = 0;
    TS_ASSERT(n <= RUN_COLS_MAX);
    for (int k = 0; k < n; k++) {
        uint64_t z = ((uint64_t)v[k] << 1) ^ (uint64_t)(v[k] >> 63);
        do {
            buf[len++] = (unsigned char)((z & 0x7f) | (z > 0x7f ? 0x80 : 0));
            z >>= 7;
        } while (z);
    }
    return fwrite(buf, len, 1, f) == 1 ? 0 : -1;
}

static int spill(struct writer *w, const int64_t *v, int n, FILE *f)
{
    if (db_spill_write(f, v, n))
        return ts_fail(w->err, "%s: cannot spill the step rows to a temporary file: %s", w->path, strerror(errno));
    return 0;
}

int db_spill_read(FILE *f, int64_t *v, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t z = 0;
        int c, shift = 0;
        do {
            if ((c = getc_unlocked(f)) == EOF)
                return k == 0 && shift == 0 ? 0 : -1;
            z |= (uint64_t)(c & 0x7f) << shift;
            shift += 7;
        } while ((c & 0x80) && shift < 64);
        v[k] = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    }
    return 1;
}

/* Spills a closed run of segments: first and last step, then seg_cols (the phase as its number). */
static int run_write(struct writer *w, const struct seg_run *r)
{
    const struct segment *g = &r->g;
    const int64_t v[SEG_RUN_COLS - 1] = {r->first,     r->last,          g->req_id,   g->phase,    g->q,
                                         g->kv,        g->kv_write,      g->logit_rows, g->decoded, g->padding,
                                         g->keep,      g->score_rows,    g->q_front,  g->kv_front, g->kv_write_front,
                                         g->probe,     g->carry,         g->picked};
    return spill(w, v, SEG_RUN_COLS - 1, w->segs);
}

/* Writes and closes the open runs that ended before step `before` (every one for INT64_MAX). */
static int runs_close(struct writer *w, struct seg_runs *rs, int64_t before)
{
    for (size_t k = 0; k < rs->n;) {
        if (rs->v[k].last >= before) {
            k++;
            continue;
        }
        if (run_write(w, &rs->v[k]))
            return -1;
        ri_del(&rs->at, rs->v[k].g.req_id);
        rs->v[k] = rs->v[--rs->n];
        if (k < rs->n)
            ri_put(&rs->at, rs->v[k].g.req_id, (int32_t)k);
    }
    return 0;
}

/* A request's segment in step step_id: extends its open run, or writes that run and opens another. */
static int runs_add(struct writer *w, struct seg_runs *rs, const struct segment *g, int64_t step_id)
{
    int32_t k = ri_get(&rs->at, g->req_id);
    if (k >= 0) {
        struct seg_run *r = &rs->v[k];
        if (r->last == step_id - 1 && same_shape(&r->g, g)) {
            r->last = step_id;
            return 0;
        }
        if (run_write(w, r))
            return -1;
    } else {
        ts_grow((void **)&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v);
        k = (int32_t)rs->n++;
        ri_put(&rs->at, g->req_id, k);
    }
    rs->v[k] = (struct seg_run){*g, step_id, step_id};
    return 0;
}

/* Spills the steps' open run. */
static int step_run_write(struct writer *w, struct seg_runs *rs)
{
    rs->step_open = false;
    return spill(w, rs->step + 1, STEP_RUN_COLS - 1, w->steps);
}

/* A step's row: extends the steps' open run where it is alike but for its start and starts when
 * that run's last step ended, or writes that run and opens another. */
static int step_add(struct writer *w, struct seg_runs *rs, const struct step_rec *p, int64_t step_id)
{
    int64_t v[STEP_RUN_COLS] = {0, step_id, step_id, p->start_ns, p->duration_ns, p->tot.num_segs, p->tot.q_tokens,
                                p->tot.kv_tokens, p->tot.kv_write_tokens, p->tot.logit_rows, p->tot.decoded,
                                p->tot.by_phase[PHASE_FULL], p->tot.by_phase[PHASE_REFRESH], p->tot.by_phase[PHASE_REUSE],
                                p->tot.by_phase[PHASE_PREFILL], p->tot.by_phase[PHASE_BLOCK], p->act_peak_bytes,
                                p->kv_in_use_bytes};
    memcpy(&v[STEP_RUN_COLS - STEP_KNOBS], p->knobs, sizeof p->knobs);
    _Static_assert(sizeof v == sizeof rs->step, "a step run's columns");
    if (rs->step_open && rs->step[2] == step_id - 1 && rs->step_next_start == p->start_ns &&
        memcmp(&rs->step[4], &v[4], sizeof v - 4 * sizeof v[0]) == 0) {
        rs->step[2] = step_id;
    } else {
        if (rs->step_open && step_run_write(w, rs))
            return -1;
        memcpy(rs->step, v, sizeof v);
        rs->step_open = true;
    }
    rs->step_next_start = p->start_ns + p->duration_ns;
    return 0;
}

/* The step rows recorded since the last flush into runs of steps and of segments, spilled as they
 * close (step ids counted over the run); `last`: the run's last rows, so every open run is spilled. */
static int write_steps(struct writer *w, const struct sim *s, struct seg_runs *rs, bool last)
{
    int rc = 0;
    for (size_t i = 0; i < s->num_steps && !rc; i++) {
        const struct step_rec *p = &s->steps[i];
        const int64_t step_id = s->steps_flushed + (int64_t)i;
        rc = step_add(w, rs, p, step_id);
        size_t end = i + 1 < s->num_steps ? (size_t)s->steps[i + 1].first_seg : s->num_segs;
        for (size_t j = (size_t)p->first_seg; j < end && !rc; j++)
            rc = runs_add(w, rs, &s->segs[j], step_id);
    }
    /* a run that missed the batch's last step has ended */
    if (!rc)
        rc = runs_close(w, rs, last ? INT64_MAX : s->steps_flushed + (int64_t)s->num_steps - 1);
    if (!rc && last && rs->step_open)
        rc = step_run_write(w, rs);
    return rc;
}

/* Rows a multi-row INSERT of the spilled runs takes at once (its per-statement work shared by them;
 * 32 x 20 parameters stay under SQLite's oldest limit of 999). */
#define COPY_ROWS 32

/* "INSERT INTO out.TABLE(run_id, first_step, last_step, COLS) VALUES(?,...),..." for rows rows of
 * cols parameters, prepared. */
static int prepare_rows(struct writer *w, const char *table, const char *cols, int ncols, int rows, sqlite3_stmt **st)
{
    char *sql = xmalloc(512 + (size_t)rows * (2 * (size_t)ncols + 3));
    int n = sprintf(sql, "INSERT INTO out.%s(run_id, first_step, last_step, %s) VALUES", table, cols);
    for (int r = 0; r < rows; r++) {
        n += sprintf(sql + n, "%s(?", r ? "," : "");
        for (int c = 1; c < ncols; c++)
            n += sprintf(sql + n, ",?");
        n += sprintf(sql + n, ")");
    }
    const int rc = prepare(w, sql, st);
    free(sql);
    return rc;
}

/* Binds a spilled record of n values as row r of a multi-row insert, run_id first; with phase, the
 * value at that index is a segment's phase, bound by its name. A value already bound where it goes
 * (bound: what each of the row's n + 1 parameters holds, INT64_MIN for none) is left as it is:
 * bindings outlast the statement's reset, and most of a run's values repeat the row's before. */
static void bind_run(sqlite3_stmt *st, int r, int64_t run_id, const int64_t *v, int n, int phase, int64_t *bound)
{
    const int at = r * (n + 1) + 1;
    if (bound[0] != run_id)
        sqlite3_bind_int64(st, at, bound[0] = run_id);
    for (int k = 0; k < n; k++) {
        if (bound[k + 1] == v[k])
            continue;
        bound[k + 1] = v[k];
        if (k == phase)
            sqlite3_bind_text(st, at + 1 + k, seg_phase_name((enum seg_phase)v[k]), -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, at + 1 + k, v[k]);
    }
}

/* The spilled runs of one kind (file f, records of ncols - 1 values) into the output's TABLE under
 * run_id, in the order they closed, COPY_ROWS a statement and the rest one a statement; phase as for
 * bind_run. */
static int copy_runs(struct writer *w, FILE *f, const char *table, const char *cols, int ncols, int phase,
                     int64_t run_id)
{
    sqlite3_stmt *many = NULL, *one = NULL;
    if (prepare_rows(w, table, cols, ncols, COPY_ROWS, &many) || prepare_rows(w, table, cols, ncols, 1, &one)) {
        sqlite3_finalize(many);
        return -1;
    }
    int64_t v[COPY_ROWS][STEP_RUN_COLS], bound[COPY_ROWS + 1][STEP_RUN_COLS]; /* the last: one's */
    for (int r = 0; r <= COPY_ROWS; r++)
        for (int k = 0; k < STEP_RUN_COLS; k++)
            bound[r][k] = INT64_MIN;
    int rc = 0, got, r;
    rewind(f);
    do {
        for (r = 0, got = 1; r < COPY_ROWS && (got = db_spill_read(f, v[r], ncols - 1)) == 1; r++)
            ;
        if (r == COPY_ROWS) {
            for (int k = 0; k < r; k++)
                bind_run(many, k, run_id, v[k], ncols - 1, phase, bound[k]);
            rc = step_done(w, many);
        }
        for (int k = 0; k < r && r < COPY_ROWS && !rc; k++) {
            bind_run(one, 0, run_id, v[k], ncols - 1, phase, bound[COPY_ROWS]);
            rc = step_done(w, one);
        }
    } while (!rc && got == 1);
    if (!rc && (got < 0 || ferror(f)))
        rc = ts_fail(w->err, "%s: cannot read the spilled step rows back", w->path);
    sqlite3_finalize(many);
    sqlite3_finalize(one);
    return rc;
}

/* The spilled runs of steps and of segments into the output's step_runs and segment_runs, under
 * run_id, in the order they closed. */
static int copy_spilled(struct writer *w, int64_t run_id)
{
    char cols[1024];
    snprintf(cols, sizeof cols, "start_ns, duration_ns, %s", step_cols);
    if (copy_runs(w, w->steps, "step_runs", cols, STEP_RUN_COLS, -1, run_id))
        return -1;
    return copy_runs(w, w->segs, "segment_runs", seg_cols, SEG_RUN_COLS, 3, run_id);
}

static int write_summary(struct writer *w, const struct sim *s, int64_t run_id)
{
    struct sim_summary m;
    sim_get_summary(s, &m);
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO out.summary VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                &st))
        return -1;
    int k = 1;
    int64_t ints1[] = {run_id, m.num_requests, m.num_finished, m.num_rejected, m.num_preemptions,
                       m.num_steps, m.request_steps, m.tokens_decoded, m.content_tokens};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints1); i++)
        sqlite3_bind_int64(st, k++, ints1[i]);
    double reals[] = {(double)m.makespan_ns * 1e-9, m.throughput_tok_s, m.content_tok_s, m.req_s,
                      m.lat_mean_s, m.lat_p50_s, m.lat_p90_s, m.lat_p99_s, m.lat_std_s, m.lat_span_s,
                      m.ttfb_mean_s, m.queue_mean_s, m.mean_q_per_step, m.mean_segs_per_step};
    for (size_t i = 0; i < TS_ARRAY_LEN(reals); i++)
        sqlite3_bind_double(st, k++, reals[i]);
    int64_t ints2[] = {m.peak_mem_bytes, m.weight_bytes, m.kv_pool_bytes, m.act_reserved_bytes,
                       m.capacity_bytes, m.static_batch, m.rows_processed, m.missed_decodes};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints2); i++)
        sqlite3_bind_int64(st, k++, ints2[i]);
    sqlite3_bind_double(st, k++, m.redundancy);
    sqlite3_bind_int64(st, k++, m.num_stalls);
    int rc = step_done(w, st);
    sqlite3_finalize(st);
    if (rc || prepare(w, "INSERT INTO out.op_breakdown VALUES(?,?,?)", &st))
        return -1;
    for (int op = 0; op < OP_COUNT && !rc; op++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, m.ops.op_s[op]);
        rc = step_done(w, st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Whether the connection's last failure is one another writer's work causes, which waiting and
 * trying again clears: busy or locked beyond what the busy handler covers (a journal-mode switch,
 * WAL recovery), a schema another writer changed under a statement, and the schema read that
 * fails while a new database is being made ("not an error"). */
static bool transient(sqlite3 *db)
{
    const int primary = sqlite3_errcode(db) & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_SCHEMA ||
           primary == SQLITE_PROTOCOL || (primary == SQLITE_ERROR && strcmp(sqlite3_errmsg(db), "not an error") == 0);
}

/* The run's transaction on `out`: its schema first in a transaction of its own, then WAL mode, then
 * the run (so that a new database's header records WAL mode before the run's transaction starts,
 * and a process killed inside it leaves a write-ahead log SQLite recovers and removes on the next
 * open, rather than one a database that never recorded the mode would ignore and leave behind). */
static int write_run(struct writer *w, const struct sim *s)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "begin");
    char *sch = schema_in("out");
    const int ok = sqlite3_exec(w->db, sch, NULL, NULL, NULL) == SQLITE_OK;
    free(sch);
    if (!ok || db_upgrade(w->db, "out"))
        return db_fail(w, "schema (is it a tessera database?)");
    /* (a busy answer the busy handler does not cover, as when writers switch a database's journal
     * mode at once, fails this try of the write, which db_out_commit makes again) */
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(w->db,
                     w->fresh ? "PRAGMA out.journal_mode=OFF; PRAGMA out.synchronous=OFF; BEGIN IMMEDIATE"
                              : "PRAGMA out.journal_mode=WAL; PRAGMA out.synchronous=NORMAL; BEGIN IMMEDIATE",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "begin");
    /* without --append or --replace, a database another writer gave a run since this one's pre-run
     * check is refused too, as it would have been had it come first: whichever writers start
     * together, exactly one lands its run and every other is refused */
    if (w->mode == DB_NEW && !w->fresh) {
        sqlite3_stmt *n = NULL;
        int64_t runs = 0;
        if (prepare(w, "SELECT count(*) FROM out.runs", &n))
            return -1;
        if (sqlite3_step(n) == SQLITE_ROW)
            runs = sqlite3_column_int64(n, 0);
        sqlite3_finalize(n);
        if (runs > 0)
            return ts_fail(w->err, "%s: holds %lld runs already, written by another tessera since this one began; "
                           "--append adds this one beside them, --replace replaces them", w->path,
                           (long long)runs);
    }
    if (w->mode == DB_REPLACE &&
        sqlite3_exec(w->db, "DELETE FROM out.runs; DELETE FROM out.requests; DELETE FROM out.step_runs; "
                            "DELETE FROM out.segment_runs; DELETE FROM out.summary; DELETE FROM out.op_breakdown;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "replacing the runs");
    sqlite3_stmt *st;
    if (prepare(w, "INSERT INTO out.runs(created, code_version, seed, config_json) VALUES(?,?,?,?)", &st))
        return -1;
    /* created to the nanosecond: with the code version, seed and configuration, the run's identity
     * (db merge leaves out a run its output holds already) */
    char created[48], secs[32];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    strftime(secs, sizeof secs, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(created, sizeof created, "%s.%09ldZ", secs, (long)now.tv_nsec);
    char *cfg = sim_config_to_json(&s->cfg);
    sqlite3_bind_text(st, 1, created, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, s->code_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (int64_t)s->cfg.seed);
    sqlite3_bind_text(st, 4, cfg, -1, SQLITE_TRANSIENT);
    int rc = step_done(w, st);
    sqlite3_finalize(st);
    free(cfg);
    if (rc)
        return -1;
    const int64_t run_id = sqlite3_last_insert_rowid(w->db);
    if (write_requests(w, s, run_id) || copy_spilled(w, run_id))
        return -1;
    if (write_summary(w, s, run_id))
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(w, "commit");
    return 0;
}

int db_segments_prepare(sqlite3 *db, sqlite3_stmt **out)
{
    /* its index, made by the first reader rather than by every run's write (a database opened read-only
     * goes without: the query is then slower, not wrong) */
    sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS segment_runs_first ON segment_runs(run_id, first_step)", NULL, NULL,
                 NULL);
    /* the runs covering the step: those that start no longer before it than the longest run lasts */
    if (sqlite3_prepare_v2(db, "SELECT req_id, phase, q, kv, kv_write, logit_rows, decoded, padding, keep, score_rows, "
                               "q_front, kv_front, kv_write_front, probe, carry, picked FROM segment_runs WHERE run_id = ?1 AND "
                               "first_step <= ?2 AND first_step >= ?2 - (SELECT coalesce(max(last_step - first_step), 0) "
                               "FROM segment_runs WHERE run_id = ?1) AND last_step >= ?2 ORDER BY req_id",
                           -1, out, NULL) == SQLITE_OK)
        return SQLITE_OK;
    /* a database from before the runs, not upgraded (nothing was added to it): its rows, a column
     * added since read as 0 */
    char sql[512];
    int n = snprintf(sql, sizeof sql, "SELECT req_id, phase, q, kv, kv_write, logit_rows, decoded, padding");
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        if (strcmp(added_columns[i][0], "segments") != 0)
            continue;
        const bool have = has_column(db, "main", added_columns[i][0], added_columns[i][1]) > 0;
        n += snprintf(sql + n, sizeof sql - (size_t)n, ", %s", have ? added_columns[i][1] : "0");
    }
    snprintf(sql + n, sizeof sql - (size_t)n, " FROM segments WHERE run_id = ?1 AND step_id = ?2 ORDER BY req_id");
    return sqlite3_prepare_v2(db, sql, -1, out, NULL);
}

int db_steps_prepare(sqlite3 *db, sqlite3_stmt **out)
{
    char sql[1024];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT step_id, duration_ns");
    if (knob_cols(db, "main", "steps", sql, &n, sizeof sql))
        return sqlite3_errcode(db) != SQLITE_OK ? sqlite3_errcode(db) : SQLITE_ERROR;
    snprintf(sql + n, sizeof sql - n, " FROM steps WHERE run_id = ? ORDER BY step_id");
    return sqlite3_prepare_v2(db, sql, -1, out, NULL);
}

bool db_step_knobs(sqlite3_stmt *st, struct step_desc *sd)
{
    int64_t v[STEP_KNOBS];
    step_knobs_get(sd, v);
    bool all = true;
    for (int i = 0; i < STEP_KNOBS; i++) {
        if (sqlite3_column_type(st, 2 + i) == SQLITE_NULL)
            all = false;
        else
            v[i] = sqlite3_column_int64(st, 2 + i);
    }
    step_knobs_set(sd, v);
    return all;
}

int db_read_step(sqlite3_stmt *st, int64_t run_id, int64_t step_id, struct step_desc *sd, struct ts_err *err)
{
    step_desc_clear(sd);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, step_id);
    int rc;
    const char *bad = NULL;
    struct segment g;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        g = (struct segment){.req_id = sqlite3_column_int(st, 0),
                             .phase = (uint8_t)seg_phase_from_name((const char *)sqlite3_column_text(st, 1)),
                             .q = sqlite3_column_int(st, 2), .kv = sqlite3_column_int(st, 3),
                             .kv_write = sqlite3_column_int(st, 4), .logit_rows = sqlite3_column_int(st, 5),
                             .decoded = sqlite3_column_int(st, 6), .padding = (uint8_t)sqlite3_column_int(st, 7),
                             .keep = sqlite3_column_int(st, 8), .score_rows = sqlite3_column_int(st, 9),
                             .q_front = sqlite3_column_int(st, 10), .kv_front = sqlite3_column_int(st, 11),
                             .kv_write_front = sqlite3_column_int(st, 12), .probe = sqlite3_column_int(st, 13),
                             .carry = sqlite3_column_int(st, 14), .picked = sqlite3_column_int(st, 15)};
        if ((bad = segment_check(&g)) != NULL)
            break;
        step_desc_add(sd, &g);
    }
    const char *msg = sqlite3_errmsg(sqlite3_db_handle(st));
    sqlite3_reset(st);
    if (bad)
        return ts_fail(err, "run %lld, step %lld: segment of request %d has %s", (long long)run_id,
                       (long long)step_id, g.req_id, bad);
    return rc == SQLITE_DONE ? 0 : ts_fail(err, "run %lld, step %lld: %s", (long long)run_id, (long long)step_id, msg);
}

/* The tables a tessera database has, each with a column that only it has. */
static const char *const tables[][2] = {{"runs", "config_json"}, {"requests", "reject_reason"}, {"steps", "ffn_chunks"},
                                       {"segments", "padding"}, {"summary", "act_reserved_bytes"},
                                       {"op_breakdown", "seconds"}};

/* sqlite3_prepare_v2, waiting out another writer's schema change (a new database being made: its
 * tables, views and journal mode); any other failure returns at once. */
static int prepare_waiting(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    int rc = SQLITE_OK;
    for (int waited = 0; waited <= DB_BUSY_MS; waited += 10) {
        rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
        if (rc == SQLITE_OK || !transient(db))
            return rc;
        sqlite3_finalize(*st);
        *st = NULL;
        sqlite3_sleep(10);
    }
    return rc;
}

int db_check(const char *path, enum db_mode mode, struct ts_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) { /* a new database: its folder must take it */
        const int why = errno;
        char dir[CFG_PATH + 8];
        folder_of(path, dir, sizeof dir);
        if (why != ENOENT)
            return ts_fail(err, "%s: %s", path, strerror(why));
        if (lstat(path, &sb) == 0) /* a link to nothing: SQLite would not follow it to make the file */
            return ts_fail(err, "%s: a symbolic link to a file that does not exist", path);
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return ts_fail(err, "%s: no such folder '%s'", path, dir);
        if (access(dir, W_OK | X_OK) != 0)
            return ts_fail(err, "%s: cannot create a file in '%s': %s", path, dir, strerror(errno));
        return 0;
    }
    if (S_ISDIR(sb.st_mode))
        return ts_fail(err, "%s: a folder, not a database file", path);
    if (!S_ISREG(sb.st_mode))
        return ts_fail(err, "%s: not a regular file (a device, pipe or socket), so no database", path);
    if (access(path, W_OK) != 0) /* a read-only file system or file: said before the run, not after */
        return ts_fail(err, "%s: cannot write it: %s", path, strerror(errno));
    sqlite3 *db = NULL;
    int rc = -1;
    int64_t runs = 0;
    char why[320];
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open it for writing: %s", path, db_why(db, why, sizeof why));
        goto done;
    }
    sqlite3_busy_timeout(db, DB_BUSY_MS);
    for (size_t i = 0; i < TS_ARRAY_LEN(tables); i++) {
        char sql[128];
        sqlite3_stmt *st = NULL;
        /* compiled, not run: a table or column missing fails here, and no row is read (the steps and
         * segments views expand every stored run); the runs table alone is counted */
        if (i == 0)
            snprintf(sql, sizeof sql, "SELECT count(*), count(%s) FROM %s", tables[i][1], tables[i][0]);
        else
            snprintf(sql, sizeof sql, "SELECT %s FROM %s LIMIT 0", tables[i][1], tables[i][0]);
        int prc = prepare_waiting(db, sql, &st);
        if (prc == SQLITE_NOTADB || prc == SQLITE_CORRUPT) {
            ts_fail(err, "%s: not an SQLite database", path);
            sqlite3_finalize(st);
            goto done;
        }
        if (prc != SQLITE_OK && prc != SQLITE_ERROR) { /* the environment's refusal, not the schema's */
            ts_fail(err, "%s: cannot read it: %s", path, db_why(db, why, sizeof why));
            sqlite3_finalize(st);
            goto done;
        }
        if (prc != SQLITE_OK) {
            /* an empty file or an empty database becomes a tessera one; a database of other tables does not */
            sqlite3_stmt *any = NULL;
            bool empty = prepare_waiting(db, "SELECT count(*) FROM sqlite_master", &any) == SQLITE_OK &&
                         sqlite3_step(any) == SQLITE_ROW && sqlite3_column_int64(any, 0) == 0;
            sqlite3_finalize(any);
            if (!empty) {
                ts_fail(err, "%s: not a tessera database (table %s: %s)", path, tables[i][0], sqlite3_errmsg(db));
                goto done;
            }
            rc = 0;
            goto done;
        }
        if (sqlite3_step(st) == SQLITE_ROW && i == 0)
            runs = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (runs > 0 && mode == DB_NEW) {
        ts_fail(err, "%s: holds %lld runs already; --append adds this one beside them, --replace replaces them",
                path, (long long)runs);
        goto done;
    }
    if (mode == DB_APPEND && runs > 0 && sb.st_size <= DB_CHECK_MAX_BYTES && db_integrity(db, path, err)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        ts_fail(err, "%s; a damaged database is neither appended to nor merged", msg);
        goto done;
    }
    rc = 0;
done:
    sqlite3_close(db);
    return rc;
}

int db_integrity(sqlite3 *db, const char *path, struct ts_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare_waiting(db, "PRAGMA integrity_check(3)", &st);
    if (rc != SQLITE_OK) {
        char why[320];
        ts_fail(err, "%s: cannot check it: %s", path, db_why(db, why, sizeof why));
        sqlite3_finalize(st);
        return -1;
    }
    char found[512] = "";
    size_t used = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (!line || strcmp(line, "ok") == 0)
            continue;
        if (strncmp(line, "*** in database main ***", 24) == 0) /* its heading: the problem follows */
            line += 24;
        else if (used && used + 3 < sizeof found) /* a row of its own: another problem */
            used += (size_t)snprintf(found + used, sizeof found - used, "; ");
        for (; *line && used + 3 < sizeof found; line++) /* on one line, the problems ;-separated */
            if (*line == '\n')
                used += (size_t)snprintf(found + used, sizeof found - used, "%s", used ? "; " : "");
            else if (*line != ' ' || (used && found[used - 1] != ' '))
                found[used++] = *line, found[used] = '\0';
    }
    const bool corrupt = rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
    sqlite3_finalize(st);
    if (found[0] || corrupt)
        return ts_fail(err, "%s: the database is damaged (SQLite's integrity check: %s)", path,
                       found[0] ? found : sqlite3_errmsg(db));
    if (rc != SQLITE_DONE) {
        char why[320];
        return ts_fail(err, "%s: cannot check it: %s", path, db_why(db, why, sizeof why));
    }
    return 0;
}

/* SIGINT and SIGTERM while a run is written: the transaction is interrupted and rolled back, the
 * database closed, and then the signal is taken as it would have been. Once the run is committed,
 * either ends the process with status 0, the run being in the database (a signal that came during
 * the write but after its commit too): the exit status says whether the run was kept. */
static sqlite3 *volatile writing;
static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    caught = sig;
    if (writing)
        sqlite3_interrupt(writing);
}

/* set while the committed database is switched to rollback-journal mode: a signal then waits for
 * the switch (ended halfway, it would leave a journal beside the database) */
static volatile sig_atomic_t leaving, pending;

static void on_signal_saved(int sig)
{
    static const char msg[] = "tessera: interrupted; the run was saved to its database already\n";
    if (leaving) {
        pending = sig;
        return;
    }
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(0);
}

struct db_out {
    sqlite3 *db; /* an empty database in memory, the output attached to it as `out` at commit */
    struct writer w;
    struct seg_runs runs; /* the segments' open runs, between flushes */
    char path[CFG_PATH];
    bool fd_vfs;    /* its connection opens files by the VFS fd_vfs registers */
    bool in_wal; /* the run went into an existing database, in WAL mode: closing leaves it in
                  * rollback-journal mode (a new database is made so) */
};

int db_out_open(const char *path, enum db_mode mode, struct db_out **out, struct ts_err *err)
{
    struct db_out *o = xcalloc(1, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    /* the connection the output is attached to at commit: its own database holds nothing (the step
     * rows wait in the spill files), so it is an empty one in memory; no mutexes (one thread uses it) */
    o->fd_vfs = fd_vfs() == 0;
    if (sqlite3_open_v2(":memory:", &o->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        o->fd_vfs ? "tessera-fd" : NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open the run's connection: %s", path, o->db ? sqlite3_errmsg(o->db) : "?");
        db_out_close(o);
        return -1;
    }
    sqlite3_busy_timeout(o->db, DB_BUSY_MS);
    o->w = (struct writer){.db = o->db, .err = err, .path = o->path, .mode = mode, .steps = tmpfile(), .segs = tmpfile()};
    if (!o->w.steps || !o->w.segs) {
        ts_fail(err, "%s: cannot make the temporary files the step rows spill into: %s", path, strerror(errno));
        db_out_close(o);
        return -1;
    }
    *out = o;
    return 0;
}

/* The step rows in memory into runs, spilled as they close; with drop (a streaming run) they are
 * then dropped from memory, else kept (the run stays whole in memory for whoever reads it after). */
static int spill_steps(struct db_out *o, struct sim *s, bool drop, bool last, struct ts_err *err)
{
    o->w.err = err;
    if (write_steps(&o->w, s, &o->runs, last))
        return -1;
    if (drop) {
        s->steps_flushed += (int64_t)s->num_steps;
        s->num_steps = s->num_segs = 0;
    }
    return 0;
}

int db_out_flush(struct db_out *o, struct sim *s, struct ts_err *err) { return spill_steps(o, s, true, false, err); }

/* The run written into `name` attached as `out`, in its transaction (rolled back if it fails), the
 * output detached again; *again says whether the failure was another writer's doing, so that a
 * new try may succeed. */
static int attach_write(struct db_out *o, const struct sim *s, const char *name, bool *again)
{
    sqlite3_stmt *at = NULL;
    bool attached = sqlite3_prepare_v2(o->db, "ATTACH ? AS out", -1, &at, NULL) == SQLITE_OK;
    sqlite3_bind_text(at, 1, name, -1, SQLITE_STATIC);
    attached = attached && sqlite3_step(at) == SQLITE_DONE;
    sqlite3_finalize(at);
    char why[320];
    const int rc = attached ? write_run(&o->w, s)
                            : ts_fail(o->w.err, "%s: cannot open database: %s", o->path, db_why(o->db, why, sizeof why));
    *again = rc && transient(o->db);
    if (rc)
        sqlite3_exec(o->db, "ROLLBACK", NULL, NULL, NULL);
    if (attached)
        sqlite3_exec(o->db, "DETACH out", NULL, NULL, NULL);
    return rc;
}

/* A run into a database that does not exist yet: the whole database, this run in it, written into
 * an unnamed file of its folder with no journal (nothing else can see it) and linked under its name
 * once complete, in rollback-journal mode; no write-ahead log is written and checkpointed.
 * 0 when linked, -1 on a failure, 1 when this way is closed (another writer's database is there
 * by now, or the folder has no unnamed files or no /proc to link one by): then the run goes the
 * way of an existing database. */
static int write_fresh(struct db_out *o, const struct sim *s)
{
    const int fd = o->fd_vfs ? unnamed_beside(o->path) : -1;
    if (fd < 0)
        return 1;
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    bool again;
    o->w.fresh = true;
    /* (its header stays in rollback-journal mode, as every database is left: no switch to make after
     * the link, which a process killed then would leave a journal of) */
    int rc = lay_out(fd, o->path, false, o->w.err) || attach_write(o, s, name, &again) ? -1 : 0;
    o->w.fresh = false;
    if (rc == 0)
        rc = link_whole(fd, o->path, o->w.err);
    close(fd);
    return rc;
}

/* One try at writing the run (see attach_write): into a new database whole where it can be, else
 * (another writer's database there by now, or no unnamed files) as into an existing one. A new
 * database's write that failed is not tried the other way: what failed it (a full disk) would leave
 * a database of the schema alone under its name. */
static int try_write(struct db_out *o, const struct sim *s, bool *again)
{
    *again = false;
    const int fresh = write_fresh(o, s);
    if (fresh <= 0 || caught)
        return fresh ? -1 : 0;
    if (create_whole(o->path, o->w.err))
        return -1;
    const int rc = attach_write(o, s, o->path, again);
    o->in_wal = rc == 0;
    return rc;
}

int db_out_commit(struct db_out *o, struct sim *s, struct ts_err *err)
{
    if (!s->cfg.no_steps && spill_steps(o, s, s->out == o, true, err)) /* the steps still in memory */
        return -1;
    o->w.err = err;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    caught = 0;
    writing = o->db;
    sigaction(SIGINT, NULL, &old_int); /* a signal the process ignores stays ignored */
    sigaction(SIGTERM, NULL, &old_term);
    if (old_int.sa_handler != SIG_IGN)
        sigaction(SIGINT, &sa, NULL);
    if (old_term.sa_handler != SIG_IGN)
        sigaction(SIGTERM, &sa, NULL);
    /* what another writer's work fails is tried again, the whole run each time, after a pause that
     * differs between processes (so that writers failing together do not try again together) */
    int rc;
    bool again;
    for (int waited = 0; (rc = try_write(o, s, &again)) && again && waited < DB_BUSY_MS;) {
        const int pause = 10 + (int)(((unsigned)getpid() * 7919u + (unsigned)waited) % 40u);
        sqlite3_sleep(pause);
        waited += pause;
        if (caught) /* a signal in the pause: no new try */
            break;
    }
    writing = NULL;
    if (rc == 0) { /* committed: from here a signal ends the process as a success */
        struct sigaction saved = {.sa_handler = on_signal_saved};
        sigemptyset(&saved.sa_mask);
        if (old_int.sa_handler != SIG_IGN)
            sigaction(SIGINT, &saved, NULL);
        if (old_term.sa_handler != SIG_IGN)
            sigaction(SIGTERM, &saved, NULL);
        if (caught)
            on_signal_saved(caught);
        /* fault injection for the tests: a SIGINT the moment the run is committed */
        if (getenv("TESSERA_FAULT") && strcmp(getenv("TESSERA_FAULT"), "sigint-after-commit") == 0)
            raise(SIGINT);
        return 0;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (caught) { /* nothing of the run was kept: close, then take the signal as it would have been */
        sqlite3_close(o->db);
        o->db = NULL;
        raise(caught);
    }
    return rc;
}

/* A database written, left in rollback-journal mode where no other connection has it open (read-only
 * media can then read it, which a WAL database's header forbids); a writer at work keeps WAL, and the
 * last to finish leaves it. */
static void leave_rollback(const char *path)
{
    sqlite3 *db = NULL;
    leaving = 1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
        sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL); /* busy elsewhere: stays WAL */
    sqlite3_close(db);
    leaving = 0;
    if (pending)
        on_signal_saved(pending);
}

void db_out_close(struct db_out *o)
{
    if (!o)
        return;
    sqlite3_close(o->db);
    if (o->in_wal)
        leave_rollback(o->path);
    if (o->w.steps)
        fclose(o->w.steps);
    if (o->w.segs)
        fclose(o->w.segs);
    free(o->runs.v);
    free(o->runs.at.key), free(o->runs.at.val);
    free(o);
}

int sim_write_db(struct sim *s, const char *path, enum db_mode mode, struct ts_err *err)
{
    struct db_out *o;
    if (db_out_open(path, mode, &o, err))
        return -1;
    int rc = db_out_commit(o, s, err);
    db_out_close(o);
    return rc;
}

/* The columns of table `t` of schema `schema` but run_id, comma-separated into buf; 0 if it has
 * no run_id column (nothing to merge) or no such table. */
static int columns_but_run_id(sqlite3 *db, const char *schema_name, const char *t, char *buf, size_t len)
{
    char sql[192];
    snprintf(sql, sizeof sql, "PRAGMA %s.table_info(\"%s\")", schema_name, t);
    sqlite3_stmt *st = NULL;
    int has_run = 0;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 1);
        if (strcmp(c, "run_id") == 0)
            has_run = 1;
        else
            snprintf(buf + strlen(buf), len - strlen(buf), "%s\"%s\"", buf[0] ? ", " : "", c);
    }
    sqlite3_finalize(st);
    return has_run;
}

/* Copies every run of the attached database `src` into main, each under a new run_id, and every
 * table of src with a run_id column along with it (a table main lacks is created as src has it). */
static int merge_one(sqlite3 *db, const char *path, int64_t *runs, int64_t *already, struct ts_err *err)
{
    sqlite3_stmt *tabs = NULL, *rs = NULL;
    int rc = -1;
    /* the input's runs, each with whether main holds it already (a run's identity: its created time,
     * code version, seed and configuration) */
    if (sqlite3_prepare_v2(db, "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' ORDER BY name", -1,
                           &tabs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT s.run_id, EXISTS (SELECT 1 FROM main.runs m WHERE m.created IS s.created AND "
                           "m.code_version IS s.code_version AND m.seed IS s.seed AND m.config_json IS s.config_json) "
                           "FROM src.runs s ORDER BY s.run_id", -1, &rs, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
        goto done;
    }
    while (sqlite3_step(tabs) == SQLITE_ROW) { /* tables main lacks (engine_steps, engine_profile, ...) */
        const char *name = (const char *)sqlite3_column_text(tabs, 0), *sql = (const char *)sqlite3_column_text(tabs, 1);
        char probe[160];
        snprintf(probe, sizeof probe, "SELECT 1 FROM main.\"%s\" LIMIT 0", name);
        sqlite3_stmt *p = NULL;
        const bool have = sqlite3_prepare_v2(db, probe, -1, &p, NULL) == SQLITE_OK;
        sqlite3_finalize(p);
        if (!have && sql && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: table %s: %s", path, name, sqlite3_errmsg(db));
            goto done;
        }
    }
    while (sqlite3_step(rs) == SQLITE_ROW) {
        const int64_t old = sqlite3_column_int64(rs, 0);
        if (sqlite3_column_int(rs, 1)) {
            (*already)++;
            continue;
        }
        char cols[1024], sql[2600];
        sqlite3_reset(tabs);
        /* the run first: its new run_id is the one every other table's rows take */
        columns_but_run_id(db, "src", "runs", cols, sizeof cols);
        snprintf(sql, sizeof sql, "INSERT INTO main.runs(%s) SELECT %s FROM src.runs WHERE run_id = %lld", cols, cols,
                 (long long)old);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: run %lld: %s", path, (long long)old, sqlite3_errmsg(db));
            goto done;
        }
        const int64_t id = sqlite3_last_insert_rowid(db);
        while (sqlite3_step(tabs) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(tabs, 0);
            if (strcmp(name, "runs") == 0 || !columns_but_run_id(db, "src", name, cols, sizeof cols))
                continue;
            snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\"(run_id, %s) SELECT %lld, %s FROM src.\"%s\" WHERE run_id = %lld",
                     name, cols, (long long)id, cols, name, (long long)old);
            if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                ts_fail(err, "%s: run %lld, table %s: %s", path, (long long)old, name, sqlite3_errmsg(db));
                goto done;
            }
        }
        (*runs)++;
    }
    rc = 0;
done:
    sqlite3_finalize(tabs);
    sqlite3_finalize(rs);
    return rc;
}

int db_open_read(const char *path, sqlite3 **db)
{
    return sqlite3_open_v2(path, db, access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY, NULL);
}

int db_merge(const char *out, const char *const *in, int n, int64_t *runs, int64_t *already, struct ts_err *err)
{
    *runs = *already = 0;
    if (db_check(out, DB_APPEND, err))
        return -1;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (stat(in[i], &sb) != 0)
            return ts_fail(err, "%s: %s", in[i], strerror(errno));
        if (db_check(in[i], DB_APPEND, err))
            return -1;
    }
    sqlite3 *db = NULL;
    if (create_whole(out, err))
        return -1;
    if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: cannot open database: %s", out, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, DB_BUSY_MS);
    int rc = -1;
    if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
        ts_fail(err, "%s: %s", out, sqlite3_errmsg(db));
        goto done;
    }
    for (int i = 0; i < n; i++) { /* one transaction an input (SQLite attaches outside them) */
        sqlite3_stmt *at = NULL;
        bool ok = sqlite3_prepare_v2(db, "ATTACH ? AS src", -1, &at, NULL) == SQLITE_OK;
        sqlite3_bind_text(at, 1, in[i], -1, SQLITE_STATIC);
        ok = ok && sqlite3_step(at) == SQLITE_DONE;
        sqlite3_finalize(at);
        if (!ok) {
            ts_fail(err, "%s: cannot attach: %s", in[i], sqlite3_errmsg(db));
            goto done;
        }
        int64_t got = 0;
        /* both at the current schema: an older input is upgraded in place, as appending to it would */
        char *src_schema = schema_in("src"), *main_schema = schema_in("main");
        ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(db, main_schema, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(db, "main") == 0 &&
             sqlite3_exec(db, src_schema, NULL, NULL, NULL) == SQLITE_OK && db_upgrade(db, "src") == 0;
        free(src_schema), free(main_schema);
        if (!ok)
            ts_fail(err, "%s: %s", out, sqlite3_errmsg(db));
        ok = ok && merge_one(db, in[i], &got, already, err) == 0;
        if (ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            ts_fail(err, "%s: commit: %s", out, sqlite3_errmsg(db));
            ok = false;
        }
        if (!ok)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_exec(db, "DETACH src", NULL, NULL, NULL);
        if (!ok) {
            if (i > 0)
                ts_fail_prefix(err, "%d of %d databases merged, %lld runs; then", i, n, (long long)*runs);
            goto done;
        }
        *runs += got;
    }
    rc = 0;
done:
    sqlite3_close(db);
    if (rc == 0)
        leave_rollback(out);
    return rc;
}
