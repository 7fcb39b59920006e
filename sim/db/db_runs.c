/*
 * db_runs.c: a run's steps and segments as runs of alike rows (db_writer.h): a request's segment that
 * keeps its shape step after step is one row of segment_runs, and steps alike but for their start,
 * each starting when the one before ended, one row of step_runs. Runs are spilled into the writer's
 * unnamed files as they close and inserted at commit, many rows a statement.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "db_writer.h"

int db_writer_fail(struct writer *w, const char *what)
{
    char why[320];
    return ts_fail(w->err, "%s: %s: %s", w->path, what, db_why(w->db, why, sizeof why));
}

int db_writer_prepare(struct writer *w, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(w->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_writer_fail(w, "prepare");
    return 0;
}

int db_writer_step(struct writer *w, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        return db_writer_fail(w, "insert");
    sqlite3_reset(st);
    return 0;
}

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


static bool same_shape(const struct segment *a, const struct segment *b)
{
    return a->q == b->q && a->kv == b->kv && a->kv_write == b->kv_write && a->logit_rows == b->logit_rows &&
           a->decoded == b->decoded && a->phase == b->phase && a->padding == b->padding && a->keep == b->keep &&
           a->score_rows == b->score_rows && a->q_front == b->q_front && a->kv_front == b->kv_front &&
           a->kv_write_front == b->kv_write_front && a->probe == b->probe && a->carry == b->carry &&
           a->picked == b->picked && a->attn_keys == b->attn_keys && a->host_kv == b->host_kv &&
           a->host_scan == b->host_scan;
}

static int spill(struct writer *w, const int64_t *v, int n, FILE *f)
{
    if (ts_spill_write(f, v, n))
        return ts_fail(w->err, "%s: cannot spill the step rows to a temporary file: %s", w->path, strerror(errno));
    return 0;
}


/* Spills a closed run of segments: first and last step, then db_seg_cols (the phase as its number). */
static int run_write(struct writer *w, const struct seg_run *r)
{
    const struct segment *g = &r->g;
    const int64_t v[SEG_RUN_COLS - 1] = {r->first,     r->last,          g->req_id,   g->phase,    g->q,
                                         g->kv,        g->kv_write,      g->logit_rows, g->decoded, g->padding,
                                         g->keep,      g->score_rows,    g->q_front,  g->kv_front, g->kv_write_front,
                                         g->probe,     g->carry,         g->picked,   g->attn_keys,
                                         g->host_kv,   g->host_scan};
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
int db_runs_add(struct writer *w, const struct sim *sim, struct seg_runs *rs, bool last)
{
    struct sim_steps s;
    sim_steps_recorded(sim, &s);
    int rc = 0;
    for (size_t i = 0; i < s.num_steps && !rc; i++) {
        const struct step_rec *p = &s.steps[i];
        const int64_t step_id = s.first_id + (int64_t)i;
        rc = step_add(w, rs, p, step_id);
        size_t end = i + 1 < s.num_steps ? (size_t)s.steps[i + 1].first_seg : s.num_segs;
        for (size_t j = (size_t)p->first_seg; j < end && !rc; j++)
            rc = runs_add(w, rs, &s.segs[j], step_id);
    }
    /* a run that missed the batch's last step has ended */
    if (!rc)
        rc = runs_close(w, rs, last ? INT64_MAX : s.first_id + (int64_t)s.num_steps - 1);
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
    const int rc = db_writer_prepare(w, sql, st);
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
        for (r = 0, got = 1; r < COPY_ROWS && (got = ts_spill_read(f, v[r], ncols - 1)) == 1; r++)
            ;
        if (r == COPY_ROWS) {
            for (int k = 0; k < r; k++)
                bind_run(many, k, run_id, v[k], ncols - 1, phase, bound[k]);
            rc = db_writer_step(w, many);
        }
        for (int k = 0; k < r && r < COPY_ROWS && !rc; k++) {
            bind_run(one, 0, run_id, v[k], ncols - 1, phase, bound[COPY_ROWS]);
            rc = db_writer_step(w, one);
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
int db_runs_copy(struct writer *w, int64_t run_id)
{
    char cols[1024];
    snprintf(cols, sizeof cols, "start_ns, duration_ns, %s", db_step_cols());
    if (copy_runs(w, w->steps, "step_runs", cols, STEP_RUN_COLS, -1, run_id))
        return -1;
    return copy_runs(w, w->segs, "segment_runs", db_seg_cols, SEG_RUN_COLS, 3, run_id);
}

void db_runs_free(struct seg_runs *rs)
{
    free(rs->v);
    free(rs->at.key), free(rs->at.val);
}
