/*
 * sim.h: the discrete-event simulator. A run: resolve the configuration (model, GPU, policy,
 * scheduler, decode model, cost model, workload), replay the arrivals, and loop
 *     schedule -> price -> advance
 * until every request is finished or rejected. The handle is opaque; results come out as a plain
 * summary struct and, when asked, as a SQLite database (db.h).
 */
#ifndef TESSERA_SIM_H
#define TESSERA_SIM_H

#include <stdint.h>

#include "config.h"
#include "cost.h"
#include "util.h"

struct sim;

struct sim_summary {
    int64_t num_requests, num_finished, num_rejected, num_preemptions;
    int64_t num_stalls;               /* request-steps a running request sat out (the step's token budget
                                       * left it no room): what the lookahead scheduler avoids */
    int64_t num_steps, request_steps; /* steps; segments summed over steps */
    int64_t tokens_decoded;           /* positions committed (G per request without early stop) */
    int64_t content_tokens;           /* sum of C over finished requests */
    int64_t makespan_ns;              /* last finish (arrivals start at 0) */
    double throughput_tok_s;          /* tokens_decoded / makespan */
    double content_tok_s;
    double req_s;
    double lat_mean_s, lat_p50_s, lat_p90_s, lat_p99_s, lat_std_s, lat_span_s; /* finish - arrival */
    double ttfb_mean_s;               /* first block done - arrival */
    double queue_mean_s;              /* admitted - arrival */
    double mean_q_per_step, mean_segs_per_step;
    int64_t peak_mem_bytes;           /* weights + KV in use + activations, largest over steps */
    int64_t weight_bytes, kv_pool_bytes, act_reserved_bytes, capacity_bytes;
    int32_t static_batch;             /* static scheduler: the batch size used (0 otherwise) */
    int64_t rows_processed;           /* the later layers' rows of the decoding steps (not prefill,
                                       * not padding), summed: N_processed of FOCUS's redundancy */
    int64_t missed_decodes;           /* decodable tokens steps left undecoded (focus's eviction) */
    double redundancy;                /* rows_processed / the tokens those steps decoded */
    struct cost_breakdown ops;        /* per-op seconds summed over steps */
    double run_wall_s;                /* host wall time sim_run took (simulator speed) */
    /* live mode (an executor set): steps run on it, their measured time drives the clock */
    int64_t live_steps;
    double live_measured_s, live_model_s; /* summed: measured, and what the cost model predicted */
    double live_abs_rel;                  /* sum over steps of |model - measured| / measured */
    /* the card's clock modelled (--clock): how much it moved the steps' time, summed */
    bool clock_modelled;
    double clock_delta_s;
};

/* Live execution (`tessera sim --executor gpu`): an executor runs every step for real and returns
 * its time, which replaces the cost model's on the clock (the cost model still prices the step,
 * for comparison). release() frees a request's KV state when the simulator frees its KV pages
 * (finished or preempted). */
struct sim_executor {
    void *ctx;
    int (*step)(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err);
    void (*release)(void *ctx, int32_t req_id);
};

/* Builds a simulation from a validated config: loads the model, GPU, trace, etc. Returns NULL and
 * fills err on bad input. */
struct sim *sim_create(const struct sim_config *cfg, struct ts_err *err);
void sim_destroy(struct sim *s); /* NULL is safe */
/* Keeps every request in memory after it is done (a run frees them as they are recorded, so that
 * its memory does not grow with its length): for tests that read the requests after the run.
 * Before sim_run. */
void sim_keep_requests(struct sim *s);
/* Runs to completion. Returns -1 with err when a step cannot be priced (a calibrated cost model
 * asked outside its range); the run is then incomplete and should not be written. */
int sim_run(struct sim *s, struct ts_err *err);
void sim_get_summary(const struct sim *s, struct sim_summary *out);
const struct sim_config *sim_config(const struct sim *s);
const struct model_cfg *sim_model(const struct sim *s);
/* The run's step knobs (step_desc.h), as every step it emits carries them. */
const struct step_desc *sim_knobs(const struct sim *s);
/* The run's scheduler's parameter `name` as resolved (its option's name, e.g.
 * "max-num-batched-tokens"), or dflt when the scheduler has no such parameter. */
double sim_sched_param(const struct sim *s, const char *name, double dflt);
/* The distinct reasons requests were rejected for, each with its count ("N: reason; ..."), into buf. */
void sim_reject_reasons(const struct sim *s, char *buf, size_t len);
/* Sets the executor before sim_run (NULL: back to the cost model). */
void sim_set_executor(struct sim *s, const struct sim_executor *ex);
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
#define DB_CHECK_MAX_BYTES (128LL << 20)
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
int db_out_commit(struct db_out *out, struct sim *s, struct ts_err *err);
void db_out_close(struct db_out *out); /* NULL is safe */
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
