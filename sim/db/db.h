/*
 * db.h: a run's SQLite database, by job: its tables and reading recorded steps back
 * (db_schema.c); the one rule for reading a database (db_own.c); the checks before a write
 * (db_check.c); files made whole, and opened by descriptor (db_file.c); writing a run, its steps
 * streamed to the writer as the simulator makes them (db_write.c); merging databases (db_merge.c);
 * exporting a table (db_export.c); what every connection may do (db_guard.c). These
 * files are the room sim/db/. The simulator knows none of it: a run's steps reach the writer through
 * the sink sim_stream_steps sets.
 */
#ifndef TESSERA_DB_H
#define TESSERA_DB_H

#include <stdbool.h>
#include <stdint.h>

struct sim;
/* Reading recorded steps back (engine replay, calib eval): db_segments_prepare() prepares the
 * query on an open database; db_read_step() fills sd (cleared first, knobs kept) with the segments
 * of one recorded step: 0, or -1 with err naming the step and what is wrong (a malformed segment,
 * an SQLite error). db_segments_prepare returns 0 or an SQLite error code. */
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
struct step_desc;
int db_segments_prepare(sqlite3 *db, sqlite3_stmt **out);
struct ts_err;
int db_read_step(sqlite3_stmt *st, int64_t run_id, int64_t step_id, struct step_desc *sd, struct ts_err *err);
/* A run's steps as recorded, in order (bind the run_id to 1): step_id, duration_ns, then every step
 * knob (step_knobs' order); db_step_knobs sets sd's knobs from the current row, keeping sd's own
 * where the row has none (a run recorded before the knob was): true when it had every one. */
int db_steps_prepare(sqlite3 *db, sqlite3_stmt **out);
bool db_step_knobs(sqlite3_stmt *st, struct step_desc *sd);
/* Opens an existing database to read it: read-write where this process may write the file, so that
 * its close (the last connection's) checkpoints a database in WAL mode and removes its -wal and -shm
 * files, which a read-only connection leaves behind; read-only where it may not. Creates nothing.
 * SQLite's result code; *db is to be closed either way. */
int db_open_read(const char *path, sqlite3 **db);

/* The one rule for reading a run database (db_own.c): every object its schema holds is one tessera's
 * own statements create (after the upgrades), compared by its SQL text; an empty database passes. 0,
 * or -1 with err naming the object. */
int db_own(sqlite3 *db, const char *path, struct ts_err *err);
/* The values a reader's loops are counted by, bounded by what they describe: each run's runs of steps
 * tile its steps (0 to its summary's num_steps) and its runs of a request's segments lie within them
 * (run_id < 0: every run). 0, or -1 with err naming the run and the row. */
int db_bounded(sqlite3 *db, const char *path, int64_t run_id, struct ts_err *err);
/* A run database opened to read it (db_open_read) and held to db_own: 0, or -1 with err; *db is to be
 * closed either way. */
int db_open_run(const char *path, sqlite3 **db, struct ts_err *err);

/* Every SQLite connection the process opens from then on is guarded: defensive, its schema
 * untrusted, no triggers, extensions, ATTACH but tessera's own, or functions that reach outside the
 * database (db_guard.c). tessera's database functions call it themselves; main() calls it first, for
 * every other connection. 0, or -1 where SQLite refused. */
int db_guard_process(void);

/* What --db does with a database that holds runs already: refuse it (the default), add the run
 * beside them (--append), or replace them (--replace). */
enum db_mode { DB_NEW = 0, DB_APPEND, DB_REPLACE };
#define DB_BUSY_MS 600000 /* how long a writer waits for the others (SQLite's busy handler) */
/* Checks --db before any work, creating nothing: a new path's folder must exist and take a file;
 * an existing file must be a tessera database (or empty) this process can write, holding no runs
 * unless mode says what to do with them. -1 with err naming the file. */
int db_check(const char *path, enum db_mode mode, struct ts_err *err);
/* With DB_APPEND, db_check also runs SQLite's integrity check over a database of at most this many
 * bytes, and refuses a damaged one; a larger one is not read through, so that an append costs the
 * same whatever the database's size (tessera db check reads any database through). */
#define DB_CHECK_MAX_BYTES (16LL << 20)
/* SQLite's integrity check of the open database at path: 0 when it passes, else -1 with err naming
 * the file and the first problems found. */
int db_integrity(sqlite3 *db, const char *path, struct ts_err *err);
/* A run's database output. Opened before the run (nothing is created yet), it takes the run's step
 * rows as they are made (sim_stream_steps: in batches, their runs spilled into unnamed temporary
 * files, gone whatever happens to the process), so the run's memory stays bounded; db_out_commit then
 * writes the whole run into the database in one transaction, waiting for concurrent writers, its
 * run_id the database's next. A failure, SIGINT or SIGTERM during the commit leaves no part of the
 * run (the signal is then taken as usual); a process killed outright leaves a transaction SQLite
 * rolls back on the next open. */
struct db_out;
int db_out_open(const char *path, enum db_mode mode, struct db_out **out, struct ts_err *err);
void sim_stream_steps(struct sim *s, struct db_out *out); /* before sim_run */
/* The run's --interval (its JSON object, the summary's interval_json), before db_out_commit; NULL: none. */
void db_out_set_interval(struct db_out *out, const char *json);
int db_out_commit(struct db_out *out, struct sim *s, struct ts_err *err);
void db_out_close(struct db_out *out); /* NULL is safe */
/* A fleet's run (fleet.h) written as db_out_commit writes one: the runs row of the fleet's
 * configuration `base`, the fleet's merged summary in summary and op_breakdown, and its own tables:
 * fleets (the fleet's figures), fleet_replicas (a row a replica, with its configuration cfg[i]) and
 * fleet_readings (the autoscaler's and load control's). Its replicas' requests and steps are not
 * written. */
struct fleet_result;
struct sim_config;
int db_out_commit_fleet(struct db_out *out, const struct sim_config *base, const struct sim_config *cfg,
                        const struct fleet_result *r, struct ts_err *err);
/* Removes the database at path and SQLite's files beside it (its -wal, -shm and -journal). */
void db_remove(const char *path);
/* A plan's candidate (tessera plan size): a row of plan_candidates. */
struct db_plan_row {
    char plan[24];               /* the plan's digest: what sizes it (its load, SLO, search and space) */
    int64_t candidate;           /* its place in the space, from 1 */
    char label[1024];            /* "gpu=h100 threshold=0.9" */
    char status[16];             /* sized, no-rate, too-many, unbuilt, error */
    char why[640];               /* why not sized ("" where sized) */
    double rps_per_replica, rps_failed;
    int replicas, gpus, probes;
    int64_t request_steps;
    double p99_s, mean_s, within; /* at the load, the confirming fleet's; within NAN: no share term */
    double content_tok_s, mean_power_w;
    double accuracy;             /* < 0: none published */
    char accuracy_task[32], known[16], gpu[256]; /* gpu: CFG_STR */
    double wall_s;
};
/* A candidate written as a run: cfg its configuration (at its replicas and the plan's load), m the
 * summary of the fleet run that confirmed it (NULL: none), row its plan_candidates row. */
struct sim_summary;
int db_out_commit_plan(struct db_out *out, const struct sim_config *cfg, const struct sim_summary *m,
                       const struct db_plan_row *row, struct ts_err *err);
/* The candidates of plan `plan` the database at path holds, each handed to each (which returns nonzero
 * to stop); the database is held to db_own. 0, or -1 with err naming the file. */
int db_plan_read(const char *path, const char *plan, int (*each)(void *ctx, const struct db_plan_row *row), void *ctx,
                 struct ts_err *err);
/* A plan ranked: its candidate's price per hour and per million tokens, rank (0: not ranked) and place
 * on the front, set in the database at path; one transaction. */
struct db_plan_rank {
    int64_t candidate;
    double usd_per_hour, usd_per_mtok;
    int rank;
    bool front;
};
int db_plan_set_ranks(const char *path, const char *plan, const struct db_plan_rank *r, int64_t n, struct ts_err *err);
/* tessera db export: table `table` of the run database at path (runs, requests, steps, segments, ops,
 * replicas; db_export_table), of run run_id (< 0: every run), written as CSV (a header, a line a row) or
 * JSON (an array of objects, one a line) into out, a file made whole or not at all (whole.h; NULL:
 * stdout). The database is held to db_own and db_bounded and its text never SQL (db_export.c); the rows
 * are counted first, more than max_rows refused. 0, or -1 with err naming the file. */
struct db_export_opts {
    bool json;
    int64_t run_id;
    const char *out;
    bool force;       /* out may replace a file that holds something (never the database itself) */
    int64_t max_rows;
};
#define DB_EXPORT_MAX_ROWS 1000000000LL /* --max-rows' default */
#define DB_EXPORT_MANY_ROWS 10000000LL  /* more rows than this are said before they are written */
int db_export(const char *path, const char *table, const struct db_export_opts *o, struct ts_err *err);
/* The i-th table db_export writes and its help, NULL past the last. */
const char *db_export_table(int i, const char **help);
/* db_out_open, every recorded step, db_out_commit and db_out_close in one call. */
int sim_write_db(struct sim *s, const char *path, enum db_mode mode, struct ts_err *err);
/* Merges the runs of the databases in[0..n) into out (created if new), each run under a new run_id
 * with every table that has a run_id column (engine replays' among them), one transaction an input
 * (an input's runs land together or not at all); *runs counts them. A run out holds already (the
 * same created time, code version, seed and configuration) is left out and counted in *already, so
 * merging again after an interruption adds only what is missing. Every input is checked before
 * anything is written. */
int db_merge(const char *out, const char *const *in, int n, int64_t *runs, int64_t *already, struct ts_err *err);

#endif
