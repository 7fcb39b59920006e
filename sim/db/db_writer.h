/*
 * db_writer.h: what writing a run shares inside sim/db (db_write.c, db_runs.c): the writer of one
 * run's transaction, and the run's steps and segments as runs of alike rows, built as the steps are
 * recorded, spilled into unnamed files as they close and copied into the database at commit.
 */
#ifndef TESSERA_DB_WRITER_H
#define TESSERA_DB_WRITER_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "db_internal.h"
#include "sim.h"
#include "sim_record.h"

/* The writer of one run's transaction. */
struct writer {
    sqlite3 *db;
    struct ts_err *err;
    const char *path;
    enum db_mode mode;
    bool fresh; /* writing a database no one else sees yet (write_fresh): no journal */
    /* the run's runs of steps and of segments, spilled as they close into two unnamed temporary
     * files (gone with the process, whatever ends it) and inserted into the database at commit */
    FILE *steps, *segs;
    char *interval_json; /* the run's --interval (db_out_set_interval), or NULL */
    char known[512];     /* how the run's system is known (sim_known), the summary's `known` */
};

/* A failure of w's statement (what: the operation), named with w's path and SQLite's reason: -1. */
int db_writer_fail(struct writer *w, const char *what);
/* sql prepared on w's connection, or -1 with the failure. */
int db_writer_prepare(struct writer *w, const char *sql, sqlite3_stmt **st);
/* st run to its end and reset, or -1 with the failure. */
int db_writer_step(struct writer *w, sqlite3_stmt *st);

/* The columns of a row of step_runs (run_id, first_step, last_step, start_ns, duration_ns and
 * db_step_cols()) and of segment_runs (run_id, first_step, last_step and db_seg_cols). */
#define STEP_RUN_COLS (18 + STEP_KNOBS)
#define SEG_RUN_COLS 22
_Static_assert(STEP_RUN_COLS <= TS_SPILL_MAX && SEG_RUN_COLS <= TS_SPILL_MAX, "a run spills as one record");

/* An open run of segments: a request's segment, the shape it has kept since first_step (through
 * last), not yet written. */
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

/* The step rows recorded since the last call (sim_steps_recorded) into runs of steps and of segments,
 * spilled into w's files as they close (step ids counted over the run); `last`: the run's last rows,
 * so every open run is spilled. */
int db_runs_add(struct writer *w, const struct sim *sim, struct seg_runs *rs, bool last);
/* The spilled runs of steps and of segments into the output's step_runs and segment_runs, under
 * run_id, in the order they closed. */
int db_runs_copy(struct writer *w, int64_t run_id);
void db_runs_free(struct seg_runs *rs);

#endif
