/*
 * sim_record.h: what a run records, as its writer (sim/db/db_write.c) reads it: the step rows and
 * their segments, the requests' rows, the reject reasons and the code's version. The writer sees
 * these and nothing else of the simulator.
 */
#ifndef TESSERA_SIM_RECORD_H
#define TESSERA_SIM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "step_desc.h"
#include "util.h"

struct sim;

/* A request's row: its values, as sim_request_rows reads them back. */
#define SIM_REQ_ROW 12

struct step_rec {
    int64_t start_ns, duration_ns;
    struct step_totals tot;
    int64_t act_peak_bytes, kv_in_use_bytes;
    int64_t knobs[STEP_KNOBS]; /* the step's knobs (step_knobs_get; lazy chunking changes two) */
    int64_t first_seg; /* index into sim_steps.segs */
};

/* The step rows recorded and not yet dropped: steps[0 .. num_steps), their segments segs[0 ..
 * num_segs) (each step's from its first_seg to the next one's), the first of them step first_id of
 * the run. Valid until the simulator records again. */
struct sim_steps {
    const struct step_rec *steps;
    size_t num_steps;
    const struct segment *segs;
    size_t num_segs;
    int64_t first_id;
};
void sim_steps_recorded(const struct sim *s, struct sim_steps *out);
/* The rows sim_steps_recorded gives dropped: the next start at the step after them. */
void sim_steps_drop(struct sim *s);
/* Where the run's step rows go while it runs, every SIM_STEP_BATCH steps: sink(ctx, s, err) takes
 * the rows recorded and drops them, -1 with err where it cannot (NULL: they stay in memory). */
typedef int (*sim_step_sink)(void *ctx, struct sim *s, struct ts_err *err);
void sim_set_step_sink(struct sim *s, sim_step_sink sink, void *ctx);
/* Whether the run's step rows stream to ctx (sim_set_step_sink's). */
bool sim_steps_stream_to(const struct sim *s, const void *ctx);

/* The requests' rows recorded so far (SIM_REQ_ROW values each, ts_spill_write's records), read from
 * their first: the file, positioned there, and in *n how many there are; NULL where it cannot be read
 * back (errno). The caller reads them and sets the file back at its end (fseeko SEEK_END). */
FILE *sim_request_rows(const struct sim *s, int64_t *n);
/* Reject reason i of the run (a request's row names it by index), NULL past the last. */
const char *sim_reject_reason(const struct sim *s, int64_t i);
/* The code that ran (git describe, as ts_version gives it). */
const char *sim_code_version(const struct sim *s);

#endif
