/*
 * db_export.c: a table of a run database written out as CSV or JSON (tessera db export), for tools
 * that do not speak SQLite: a spreadsheet, pandas, a plotting script.
 *
 * A database is data, never code: it is opened by the one rule for reading one (db_own.c: its
 * objects tessera's by their SQL text, and its runs of steps and segments bounded by its runs), and
 * what is read comes from fixed statements over its tables (the step and segment rows through views
 * this connection makes in its own temporary schema). Nothing of the file's own text becomes SQL; the
 * run asked for is a bound parameter. The rows are counted before any is written: more than a cap
 * are refused, many are said. The output is made whole or not at all (whole.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "db_internal.h"
#include "util.h"
#include "whole.h"

/* The tables an export reads: the name it takes, what it reads and the tables that must be there. */
static const struct {
    const char *name, *help, *select, *needs[2];
    bool views; /* reads the step or segment rows: the views over their runs, made in temp */
} exports[] = {
    {"runs", "a row a run: its configuration (config_json) and its summary's columns",
     "SELECT * FROM main.runs LEFT JOIN main.summary USING (run_id)", {"runs", "summary"}, false},
    {"requests", "a row a request: its arrival, admission, first block and finish (ns), P, G, C, steps, state",
     "SELECT * FROM main.requests", {"requests", NULL}, false},
    {"steps", "a row a step: its start and duration (ns), its totals and knobs",
     "SELECT * FROM temp.steps", {"step_runs", NULL}, true},
    {"segments", "a row a request's part of a step: its phase and shape",
     "SELECT * FROM temp.segments", {"segment_runs", NULL}, true},
    {"ops", "a row a run and operator: the seconds the cost model gave it",
     "SELECT * FROM main.op_breakdown", {"op_breakdown", NULL}, false},
    {"replicas", "a row a fleet's replica: its routed requests, latency, energy and configuration",
     "SELECT * FROM main.fleet_replicas", {"fleet_replicas", NULL}, false},
    {"plan", "a row a plan's candidate: how it was sized (capacity, replicas, p99 at the load), its price and rank",
     "SELECT * FROM main.plan_candidates", {"plan_candidates", NULL}, false},
};

const char *db_export_table(int i, const char **help)
{
    if (i < 0 || (size_t)i >= sizeof exports / sizeof *exports)
        return NULL;
    if (help)
        *help = exports[i].help;
    return exports[i].name;
}

/* A CSV field as RFC 4180 writes it: quoted where it holds a comma, a quote or a line break. */
static void csv_field(FILE *to, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, to);
        return;
    }
    fputc('"', to);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', to);
        fputc(*s, to);
    }
    fputc('"', to);
}

/* One row as a JSON object of the columns' own types (NULL: null). -1 with err for text that is not
 * UTF-8. */
static int json_row(sqlite3_stmt *st, const char *path, int64_t row, FILE *to, struct ts_err *err)
{
    json_t *o = json_object();
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        json_t *v;
        switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER:
            v = json_integer(sqlite3_column_int64(st, c));
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(st, c));
            break;
        case SQLITE_NULL:
            v = json_null();
            break;
        default:
            v = json_stringn((const char *)sqlite3_column_text(st, c), (size_t)sqlite3_column_bytes(st, c));
            break;
        }
        if (!v) {
            json_decref(o);
            return ts_fail(err, "%s: row %lld, column %s: not UTF-8 text", path, (long long)row,
                           sqlite3_column_name(st, c));
        }
        json_object_set_new(o, sqlite3_column_name(st, c), v);
    }
    const int rc = json_dumpf(o, to, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return rc == 0 ? 0 : ts_fail(err, "%s: row %lld: cannot write it", path, (long long)row);
}

/* Every object of the file under a name the export reads must be a table. */
static int tables_only(sqlite3 *db, const char *path, int k, struct ts_err *err)
{
    for (int i = 0; i < 2 && exports[k].needs[i]; i++) {
        bool is = false;
        if (db_is_table(db, "main", exports[k].needs[i], &is))
            return ts_fail(err, "%s: %s", path, sqlite3_errmsg(db));
        if (!is)
            return ts_fail(err, "%s: holds no table %s, so no %s to export%s", path, exports[k].needs[i],
                           exports[k].name, exports[k].views || k > 1 ? " (none of its runs recorded them)" : "");
    }
    return 0;
}

/* The rows of export k (of run_id where >= 0) written to `to`. */
static int write_rows(sqlite3 *db, const char *path, int k, int64_t run_id, bool json, FILE *to, struct ts_err *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, "%s%s", exports[k].select, run_id >= 0 ? " WHERE run_id = ?1" : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return ts_fail(err, "%s: cannot read %s: %s", path, exports[k].name, sqlite3_errmsg(db));
    if (run_id >= 0)
        sqlite3_bind_int64(st, 1, run_id);
    const int ncol = sqlite3_column_count(st);
    if (json)
        fputs("[", to);
    else
        for (int c = 0; c < ncol; c++) {
            if (c)
                fputc(',', to);
            csv_field(to, sqlite3_column_name(st, c));
        }
    int rc = 0, step;
    int64_t row = 0;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        row++;
        if (json) {
            fputs(row > 1 ? ",\n" : "\n", to);
            rc = json_row(st, path, row, to, err);
            continue;
        }
        fputc('\n', to);
        for (int c = 0; c < ncol; c++) {
            if (c)
                fputc(',', to);
            const unsigned char *v = sqlite3_column_text(st, c);
            csv_field(to, v ? (const char *)v : "");
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = ts_fail(err, "%s: reading %s: %s", path, exports[k].name, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    fputs(json ? "\n]\n" : "\n", to);
    return rc;
}

/* The rows export k would write (of run_id where >= 0): the runs of steps or segments expanded, or the
 * table's rows. -1 on an SQLite error. */
static int64_t rows_to_write(sqlite3 *db, int k, int64_t run_id)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM main.%s WHERE ?1 < 0 OR run_id = ?1",
             exports[k].views ? "coalesce(sum(last_step - first_step + 1), 0)" : "count(*)", exports[k].needs[0]);
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

int db_export(const char *path, const char *table, const struct db_export_opts *o, struct ts_err *err)
{
    int k = -1;
    for (size_t i = 0; i < sizeof exports / sizeof *exports; i++)
        if (strcmp(table, exports[i].name) == 0)
            k = (int)i;
    if (k < 0)
        return ts_fail(err, "no table '%s' to export (runs, requests, steps, segments, ops, replicas)", table);
    sqlite3 *db = NULL;
    int rc = db_open_run(path, &db, err);
    if (rc == 0)
        rc = tables_only(db, path, k, err);
    /* (the views expand every run's rows whichever run is asked for: all of them bounded and counted) */
    if (rc == 0 && exports[k].views)
        rc = db_bounded(db, path, -1, err);
    if (rc == 0 && exports[k].views && db_views_in(db, "temp") != 0)
        rc = ts_fail(err, "%s: cannot lay its %s out: %s (a database of an older tessera: db merge it into a new "
                          "one first)", path, exports[k].name, sqlite3_errmsg(db));
    /* the rows counted before any is written: more than --max-rows is refused, and many are said */
    const int64_t rows = rc == 0 ? rows_to_write(db, k, exports[k].views ? -1 : o->run_id) : 0;
    if (rc == 0 && rows < 0)
        rc = ts_fail(err, "%s: cannot count its %s: %s", path, exports[k].name, sqlite3_errmsg(db));
    if (rc == 0 && rows > o->max_rows)
        rc = ts_fail(err, "%s: %lld %s rows to write, more than --max-rows %lld", path, (long long)rows,
                     exports[k].name, (long long)o->max_rows);
    if (rc == 0 && rows > DB_EXPORT_MANY_ROWS)
        fprintf(stderr, "tessera db export: %s: %lld %s rows to write\n", path, (long long)rows, exports[k].name);
    /* the rows into a file beside OUT, renamed onto it once whole; or onto stdout */
    struct ts_whole w = {.slot = -1};
    if (rc == 0 && o->out)
        rc = ts_whole_open(&w, o->out, o->force ? TS_WHOLE_REPLACE : 0, path, err);
    if (rc == 0)
        rc = write_rows(db, path, k, o->run_id, o->json, o->out ? w.f : stdout, err);
    sqlite3_close(db);
    if (o->out && w.f)
        rc = ts_whole_close(&w, rc != 0, err) || rc ? -1 : 0;
    else if (!o->out && (fflush(stdout) != 0 || ferror(stdout)) && rc == 0)
        rc = ts_fail(err, "stdout: cannot write it: %s", strerror(errno));
    return rc;
}
