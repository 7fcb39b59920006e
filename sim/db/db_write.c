/*
 * db_write.c: writing a run into its database.
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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db_internal.h"
#include "db_writer.h"
#include "presets.h"
#include "fleet.h"
#include "sim.h"
#include "sim_record.h"

static const char *const state_names[] = {"pending", "waiting", "running", "finished", "rejected"};

/* The requests' rows, as sim_record spilled them when each was done. */
static int write_requests(struct writer *w, const struct sim *s, int64_t run_id)
{
    sqlite3_stmt *st;
    if (db_writer_prepare(w, "INSERT INTO out.requests VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    int rc = 0, got;
    int64_t v[SIM_REQ_ROW], rows = 0, num = 0;
    FILE *spill = sim_request_rows(s, &num);
    if (!spill) {
        rc = ts_fail(w->err, "%s: cannot read back the requests' rows: %s", w->path, strerror(errno));
        sqlite3_finalize(st);
        return rc;
    }
    while (!rc && (got = ts_spill_read(spill, v, SIM_REQ_ROW)) != 0) {
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
        if (v[10] < 0 || v[10] >= (int64_t)TS_ARRAY_LEN(state_names) ||
            (v[11] >= 0 && !sim_reject_reason(s, v[11]))) {
            rc = ts_fail(w->err, "%s: request %lld's row spilled to a temporary file came back damaged", w->path,
                         (long long)v[0]);
            break;
        }
        sqlite3_bind_text(st, k++, state_names[v[10]], -1, SQLITE_STATIC);
        if (v[11] >= 0)
            sqlite3_bind_text(st, k++, sim_reject_reason(s, v[11]), -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, k++);
        rc = db_writer_step(w, st);
        rows++;
    }
    if (!rc && (ferror(spill) || rows != num))
        rc = ts_fail(w->err, "%s: %lld of the %lld requests' rows came back from their temporary file%s", w->path,
                     (long long)rows, (long long)num, ferror(spill) ? " (a read error)" : "");
    fseeko(spill, 0, SEEK_END); /* where the requests recorded next are spilled */
    sqlite3_finalize(st);
    return rc;
}

/* A run's summary row and its op breakdown, from summary m. */
static int write_summary(struct writer *w, const struct sim_summary *mp, int64_t run_id)
{
    const struct sim_summary m = *mp;
    sqlite3_stmt *st;
    /* (by name: an older database's columns stand in the order its upgrades added them) */
    if (db_writer_prepare(w, "INSERT INTO out.summary(run_id, num_requests, num_finished, num_rejected, num_preemptions, "
                   "num_steps, request_steps, tokens_decoded, content_tokens, makespan_s, throughput_tok_s, "
                   "content_tok_s, req_s, lat_mean_s, lat_p50_s, lat_p90_s, lat_p99_s, lat_std_s, lat_span_s, "
                   "ttfb_mean_s, queue_mean_s, mean_q_per_step, mean_segs_per_step, peak_mem_bytes, weight_bytes, "
                   "kv_pool_bytes, act_reserved_bytes, capacity_bytes, static_batch, rows_processed, missed_decodes, "
                   "redundancy, num_stalls, energy_j, mean_power_w, slo_attainment, expected_accuracy, accuracy_task, "
                   "interval_json, known, offered_rps, overloaded, pricing, sampler_canvases, sampler_holds, "
                   "sampler_oom) "
                   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
    sqlite3_bind_double(st, k++, m.energy_j);
    sqlite3_bind_double(st, k++, m.mean_power_w);
    if (isnan(m.slo_attainment)) /* (no --slo) */
        sqlite3_bind_null(st, k++);
    else
        sqlite3_bind_double(st, k++, m.slo_attainment);
    if (m.expected_accuracy < 0) /* (no decode profile publishes one, or load control moved the decoder) */
        sqlite3_bind_null(st, k++);
    else
        sqlite3_bind_double(st, k++, m.expected_accuracy);
    if (m.accuracy_task[0])
        sqlite3_bind_text(st, k++, m.accuracy_task, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, k++);
    if (w->interval_json) /* (no --interval: NULL) */
        sqlite3_bind_text(st, k++, w->interval_json, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, k++);
    sqlite3_bind_text(st, k++, w->known, -1, SQLITE_TRANSIENT);
    if (m.offered_rps > 0) { /* (fewer than SIM_OVERLOAD_MIN arrivals: not judged, NULL) */
        sqlite3_bind_double(st, k++, m.offered_rps);
        sqlite3_bind_int(st, k++, m.overloaded);
    } else {
        sqlite3_bind_null(st, k++);
        sqlite3_bind_null(st, k++);
    }
    char priced[128];
    sqlite3_bind_text(st, k++, sim_pricing_text(m.pricing, priced, sizeof priced), -1, SQLITE_TRANSIENT);
    if (m.sampler_holds >= 0) { /* (no vLLM sampler, or --tp > 1: not judged, NULL) */
        sqlite3_bind_int(st, k++, m.sampler_canvases);
        sqlite3_bind_int(st, k++, m.sampler_holds);
        sqlite3_bind_int(st, k++, m.sampler_oom);
    } else {
        for (int i = 0; i < 3; i++)
            sqlite3_bind_null(st, k++);
    }
    int rc = db_writer_step(w, st);
    sqlite3_finalize(st);
    if (rc || db_writer_prepare(w, "INSERT INTO out.op_breakdown VALUES(?,?,?)", &st))
        return -1;
    for (int op = 0; op < OP_COUNT && !rc; op++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, cost_op_name((enum cost_op)op), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, m.ops.op_s[op]);
        rc = db_writer_step(w, st);
    }
    sqlite3_finalize(st);
    return rc;
}


/* What a run's transaction writes: its configuration and code version (the runs row), and then its
 * content under its run_id. */
struct run_src {
    const struct sim_config *cfg;
    const struct sim_setup *setup; /* cfg's parts, resolved */
    const char *code_version;
    int (*content)(struct writer *w, const void *ctx, int64_t run_id);
    const void *ctx;
};

/* A simulation's content: its requests, its spilled step rows, its summary. */
static int sim_content(struct writer *w, const void *ctx, int64_t run_id)
{
    const struct sim *s = ctx;
    struct sim_summary m;
    sim_get_summary(s, &m);
    return write_requests(w, s, run_id) || db_runs_copy(w, run_id) || write_summary(w, &m, run_id) ? -1 : 0;
}

/* The run's transaction on `out`: its schema first in a transaction of its own, then WAL mode, then
 * the run (so that a new database's header records WAL mode before the run's transaction starts,
 * and a process killed inside it leaves a write-ahead log SQLite recovers and removes on the next
 * open, rather than one a database that never recorded the mode would ignore and leave behind). */
static int write_run(struct writer *w, const struct run_src *src)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_writer_fail(w, "begin");
    char *sch = db_schema_in("out");
    const int ok = sqlite3_exec(w->db, sch, NULL, NULL, NULL) == SQLITE_OK;
    free(sch);
    if (!ok || db_upgrade(w->db, "out"))
        return db_writer_fail(w, "schema (is it a tessera database?)");
    /* (a busy answer the busy handler does not cover, as when writers switch a database's journal
     * mode at once, fails this try of the write, which db_out_commit makes again) */
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(w->db,
                     w->fresh ? "PRAGMA out.journal_mode=OFF; PRAGMA out.synchronous=OFF; BEGIN IMMEDIATE"
                              : "PRAGMA out.journal_mode=WAL; PRAGMA out.synchronous=NORMAL; BEGIN IMMEDIATE",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_writer_fail(w, "begin");
    /* without --append or --replace, a database another writer gave a run since this one's pre-run
     * check is refused too, as it would have been had it come first: whichever writers start
     * together, exactly one lands its run and every other is refused */
    if (w->mode == DB_NEW && !w->fresh) {
        sqlite3_stmt *n = NULL;
        int64_t runs = 0;
        if (db_writer_prepare(w, "SELECT count(*) FROM out.runs", &n))
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
        return db_writer_fail(w, "replacing the runs");
    static const char *const fleet_tables[] = {"fleets", "fleet_replicas", "fleet_readings"};
    for (size_t i = 0; w->mode == DB_REPLACE && i < TS_ARRAY_LEN(fleet_tables); i++) { /* where it has them */
        char sql[160];
        sqlite3_stmt *has = NULL;
        snprintf(sql, sizeof sql, "SELECT 1 FROM out.sqlite_master WHERE type = 'table' AND name = '%s'", fleet_tables[i]);
        const bool there = db_writer_prepare(w, sql, &has) == 0 && sqlite3_step(has) == SQLITE_ROW;
        sqlite3_finalize(has);
        snprintf(sql, sizeof sql, "DELETE FROM out.%s", fleet_tables[i]);
        if (there && sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return db_writer_fail(w, "replacing the runs");
    }
    sqlite3_stmt *st;
    if (db_writer_prepare(w, "INSERT INTO out.runs(created, code_version, seed, config_json) VALUES(?,?,?,?)", &st))
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
    char *cfg = sim_config_to_json(src->cfg, src->setup);
    sim_known(src->cfg, w->known, sizeof w->known);
    sqlite3_bind_text(st, 1, created, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, src->code_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (int64_t)src->cfg->seed);
    sqlite3_bind_text(st, 4, cfg, -1, SQLITE_TRANSIENT);
    int rc = db_writer_step(w, st);
    sqlite3_finalize(st);
    free(cfg);
    if (rc)
        return -1;
    if (src->content(w, src->ctx, sqlite3_last_insert_rowid(w->db)))
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_writer_fail(w, "commit");
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
    bool fd_vfs;    /* its connection opens files by the VFS db_fd_vfs registers */
    bool in_wal; /* the run went into an existing database, in WAL mode: closing leaves it in
                  * rollback-journal mode (a new database is made so) */
};

void db_out_set_interval(struct db_out *out, const char *json)
{
    free(out->w.interval_json);
    out->w.interval_json = json ? xstrdup(json) : NULL;
}

int db_out_open(const char *path, enum db_mode mode, struct db_out **out, struct ts_err *err)
{
    if (db_guard_process())
        return ts_fail(err, "%s: cannot set SQLite's guards", path);
    struct db_out *o = xcalloc(1, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    /* the connection the output is attached to at commit: its own database holds nothing (the step
     * rows wait in the spill files), so it is an empty one in memory; no mutexes (one thread uses it) */
    o->fd_vfs = db_fd_vfs() == 0;
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
    if (db_runs_add(&o->w, s, &o->runs, last))
        return -1;
    if (drop)
        sim_steps_drop(s);
    return 0;
}

/* the simulator's step sink (sim_record.h): a streaming run's steps handed over and dropped */
static int flush_steps(void *o, struct sim *s, struct ts_err *err) { return spill_steps(o, s, true, false, err); }

void sim_stream_steps(struct sim *s, struct db_out *out) { sim_set_step_sink(s, flush_steps, out); }

/* The run written into `name` attached as `out`, in its transaction (rolled back if it fails), the
 * output detached again; *again says whether the failure was another writer's doing, so that a
 * new try may succeed. */
static int attach_write(struct db_out *o, const struct run_src *s, const char *name, bool *again)
{
    const bool attached = db_attach(o->db, name, "out") == SQLITE_OK;
    char why[320];
    const int rc = attached ? write_run(&o->w, s)
                            : ts_fail(o->w.err, "%s: cannot open database: %s", o->path, db_why(o->db, why, sizeof why));
    *again = rc && db_transient(o->db);
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
static int write_fresh(struct db_out *o, const struct run_src *s)
{
    const int fd = o->fd_vfs ? db_unnamed_beside(o->path) : -1;
    if (fd < 0)
        return 1;
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    bool again;
    o->w.fresh = true;
    /* (its header stays in rollback-journal mode, as every database is left: no switch to make after
     * the link, which a process killed then would leave a journal of; the file is tessera's own
     * making, written with no journal, which the guard's defensive mode allows for it alone) */
    int rc = db_lay_out(fd, o->path, false, o->w.err) || db_guard_trust(o->db, true) ||
                     attach_write(o, s, name, &again)
                 ? -1
                 : 0;
    db_guard_trust(o->db, false);
    o->w.fresh = false;
    if (rc == 0)
        rc = db_link_whole(fd, o->path, o->w.err);
    close(fd);
    return rc;
}

/* One try at writing the run (see attach_write): into a new database whole where it can be, else
 * (another writer's database there by now, or no unnamed files) as into an existing one. A new
 * database's write that failed is not tried the other way: what failed it (a full disk) would leave
 * a database of the schema alone under its name. */
static int try_write(struct db_out *o, const struct run_src *s, bool *again)
{
    *again = false;
    const int fresh = write_fresh(o, s);
    if (fresh <= 0 || caught)
        return fresh ? -1 : 0;
    if (db_create_whole(o->path, o->w.err))
        return -1;
    /* (a writer refused here, as when another landed its run first, leaves the database in
     * rollback-journal mode as one that wrote does: whichever is the last to close switches it) */
    o->in_wal = true;
    return attach_write(o, s, o->path, again);
}

/* The run of src written, once, with its signals' handling (db_out_commit). */
static int commit_src(struct db_out *o, const struct run_src *s, struct ts_err *err)
{
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
        /* fault injection for the tests: a SIGINT the moment the run is committed (its handler called
         * where the process was started with SIGINT ignored, as a shell's background job is) */
        if (getenv("TESSERA_FAULT") && strcmp(getenv("TESSERA_FAULT"), "sigint-after-commit") == 0) {
            if (old_int.sa_handler != SIG_IGN)
                raise(SIGINT);
            else
                on_signal_saved(SIGINT);
        }
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

int db_out_commit(struct db_out *o, struct sim *s, struct ts_err *err)
{
    /* the steps still in memory */
    if (!sim_config(s)->no_steps && spill_steps(o, s, sim_steps_stream_to(s, o), true, err))
        return -1;
    const struct run_src src = {sim_config(s), sim_setup_of(s), sim_code_version(s), sim_content, s};
    return commit_src(o, &src, err);
}

/* --- a fleet ------------------------------------------------------------------------------- */

struct fleet_src {
    const struct sim_config *cfg; /* [r->n] */
    const struct fleet_result *r;
};

/* A fleet's content: its merged summary as the run's, its own row, a row a replica (its pool, what it
 * was routed and moved, its summary's main figures, its configuration) and the control loops'
 * readings. */
static int fleet_content(struct writer *w, const void *ctx, int64_t run_id)
{
    const struct fleet_src *f = ctx;
    const struct fleet_result *r = f->r;
    char *sch = db_fleet_schema_in("out");
    const int made = sqlite3_exec(w->db, sch, NULL, NULL, NULL) == SQLITE_OK;
    free(sch);
    if (!made)
        return db_writer_fail(w, "the fleet tables");
    if (write_summary(w, &r->fleet, run_id))
        return -1;
    sqlite3_stmt *st;
    if (db_writer_prepare(w, "INSERT INTO out.fleets VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    const int64_t ints[] = {run_id, r->n, r->refused, r->deferred, r->started, r->stopped, r->refresh_pool, r->handoffs,
                            r->handoffs_kv};
    for (size_t i = 0; i < TS_ARRAY_LEN(ints); i++)
        sqlite3_bind_int64(st, (int)i + 1, ints[i]);
    sqlite3_bind_double(st, 10, r->moved_bytes);
    sqlite3_bind_double(st, 11, r->handoffs ? r->xfer_s / (double)r->handoffs : 0);
    if (r->ntau > 0)
        sqlite3_bind_double(st, 12, r->tau_mean);
    int rc = db_writer_step(w, st);
    sqlite3_finalize(st);
    if (rc || db_writer_prepare(w, "INSERT INTO out.fleet_replicas VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    for (int i = 0; i < r->n && !rc; i++) {
        const struct sim_summary *m = &r->replica[i];
        const int64_t iv[] = {run_id, i};
        for (int k = 0; k < 2; k++)
            sqlite3_bind_int64(st, k + 1, iv[k]);
        sqlite3_bind_text(st, 3, r->refresh_pool == 0 ? "both" : i < r->refresh_pool ? "refresh" : "reuse", -1,
                          SQLITE_STATIC);
        const int64_t counts[] = {r->routed[i], m->handed_in, m->handed_out, m->num_requests, m->num_finished,
                                  m->num_rejected, m->num_steps, m->tokens_decoded};
        for (size_t k = 0; k < TS_ARRAY_LEN(counts); k++)
            sqlite3_bind_int64(st, 4 + (int)k, counts[k]);
        const double reals[] = {r->active_s[i], m->lat_mean_s, m->lat_p50_s, m->lat_p90_s, m->lat_p99_s, m->busy_s,
                                m->energy_j, m->energy_per_token_j};
        for (size_t k = 0; k < TS_ARRAY_LEN(reals); k++)
            sqlite3_bind_double(st, 12 + (int)k, reals[k]);
        char *cfg = sim_config_to_json(&f->cfg[i], NULL);
        sqlite3_bind_text(st, 20, cfg, -1, SQLITE_TRANSIENT);
        free(cfg);
        rc = db_writer_step(w, st);
    }
    sqlite3_finalize(st);
    if (rc || db_writer_prepare(w, "INSERT INTO out.fleet_readings VALUES(?,?,?,?,?,?)", &st))
        return -1;
    for (int64_t k = 0; k < r->nscale + r->ntau && !rc; k++) {
        const bool scale = k < r->nscale;
        const struct fleet_scale_point *p = scale ? &r->scale[k] : NULL;
        const struct fleet_tau_point *q = scale ? NULL : &r->tau[k - r->nscale];
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, scale ? "autoscale" : "threshold", -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 3, scale ? p->t_s : q->t_s);
        sqlite3_bind_double(st, 4, scale ? p->up : q->tau);
        sqlite3_bind_double(st, 5, scale ? p->starting : q->tpf);
        sqlite3_bind_int64(st, 6, scale ? p->outstanding : q->outstanding);
        rc = db_writer_step(w, st);
    }
    sqlite3_finalize(st);
    return rc;
}

int db_out_commit_fleet(struct db_out *o, const struct sim_config *base, const struct sim_config *cfg,
                        const struct fleet_result *r, struct ts_err *err)
{
    const struct fleet_src f = {cfg, r};
    const struct run_src src = {base, NULL, ts_version(), fleet_content, &f};
    return commit_src(o, &src, err);
}

/* --- a plan's candidate ------------------------------------------------------------------------ */

struct plan_src {
    const struct sim_summary *m;
    const struct db_plan_row *row;
};

/* A candidate's content: the confirming fleet's summary (where it has one) and its plan_candidates row
 * (every text bound, none of it SQL). */
static int plan_content(struct writer *w, const void *ctx, int64_t run_id)
{
    const struct plan_src *p = ctx;
    const struct db_plan_row *r = p->row;
    char *sch = db_plan_schema_in("out");
    const int made = sqlite3_exec(w->db, sch, NULL, NULL, NULL) == SQLITE_OK;
    free(sch);
    if (!made)
        return db_writer_fail(w, "the plan's table");
    if (p->m && write_summary(w, p->m, run_id))
        return -1;
    sqlite3_stmt *st;
    if (db_writer_prepare(w, "INSERT INTO out.plan_candidates(run_id, plan, candidate, label, status, why, rps_per_replica, "
                   "rps_failed, replicas, gpus, probes, request_steps, p99_s, mean_s, within, content_tok_s, "
                   "mean_power_w, accuracy, accuracy_task, known, gpu, wall_s) "
                   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &st))
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    const char *texts[] = {r->plan, NULL, r->label, r->status, r->why};
    for (int k = 2; k <= 6; k++)
        if (k == 3)
            sqlite3_bind_int64(st, k, r->candidate);
        else
            sqlite3_bind_text(st, k, texts[k - 2], -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 7, r->rps_per_replica);
    sqlite3_bind_double(st, 8, r->rps_failed);
    const int64_t ints[] = {r->replicas, r->gpus, r->probes, r->request_steps};
    for (size_t k = 0; k < TS_ARRAY_LEN(ints); k++)
        sqlite3_bind_int64(st, 9 + (int)k, ints[k]);
    const double reals[] = {r->p99_s, r->mean_s, r->within, r->content_tok_s, r->mean_power_w, r->accuracy};
    for (size_t k = 0; k < TS_ARRAY_LEN(reals); k++)
        if (isfinite(reals[k]) && !(k == 5 && reals[k] < 0)) /* (NULL: none, or no accuracy published) */
            sqlite3_bind_double(st, 13 + (int)k, reals[k]);
    const char *more[] = {r->accuracy_task, r->known, r->gpu};
    for (size_t k = 0; k < TS_ARRAY_LEN(more); k++)
        sqlite3_bind_text(st, 19 + (int)k, more[k], -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 22, r->wall_s);
    const int rc = db_writer_step(w, st);
    sqlite3_finalize(st);
    return rc;
}

int db_out_commit_plan(struct db_out *o, const struct sim_config *cfg, const struct sim_summary *m,
                       const struct db_plan_row *row, struct ts_err *err)
{
    const struct plan_src p = {m, row};
    const struct run_src src = {cfg, NULL, ts_version(), plan_content, &p};
    return commit_src(o, &src, err);
}

/* A database written, left in rollback-journal mode where no other connection has it open (read-only
 * media can then read it, which a WAL database's header forbids); a writer at work keeps WAL, and the
 * last to finish leaves it. */
void db_leave_rollback(const char *path)
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
        db_leave_rollback(o->path);
    if (o->w.steps)
        fclose(o->w.steps);
    if (o->w.segs)
        fclose(o->w.segs);
    db_runs_free(&o->runs);
    free(o->w.interval_json);
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
