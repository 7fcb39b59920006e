/*
 * db_schema.c: a run's database as tables, upgrading an older one, reading its
 * recorded steps back, and SQLite's integrity check.
 *
 *   runs          run_id, created (UTC, to the nanosecond), code_version, seed, config_json
 *   requests      per request: arrival, admitted, first block done, finish (ns), P, G, C, steps,
 *                 preemptions, state, reject_reason
 *   steps         (view) per step: start, duration, segments, q/kv/kv_write/logit tokens, decoded,
 *                 Refresh/Reuse/... counts, activation peak, KV in use   (skipped by --no-steps)
 *   segments      (view) per step and request: phase, q, kv, kv_write, logit_rows, decoded, padding,
 *                 keep, score_rows, q_front, kv_front, kv_write_front, probe, carry, picked, attn_keys,
 *                 host_kv, host_scan
 *                 (what `tessera engine replay` executes; skipped by --no-steps)
 *   step_runs     what the steps view expands: runs of consecutive steps alike but for their start
 *   segment_runs  what the segments view expands: runs of consecutive steps in which a request's
 *                 segment kept its shape
 *   summary       one row per run: throughput, latency statistics, counts, memory, redundancy,
 *                 energy, the share of requests within --slo, how its system is known (sim_known:
 *                 validated, measured or modelled, with the evidence), the rate offered and whether
 *                 the run was overloaded (sim_overload_rule; NULL where fewer than SIM_OVERLOAD_MIN
 *                 arrived), the pricing chain's links that priced its steps (pricing.h; NULL in a
 *                 database written before it was kept), and a run of vLLM's DiffusionGemma sampler
 *                 against vLLM's memory: its largest step's canvases, what a step holds, whether it ran
 *                 out (sim_sampler.c; NULL where not judged)
 *   op_breakdown  per-op seconds summed over the run
 *   plan_candidates  a plan's candidate a run (tessera plan size; db_out_commit_plan)
 *
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "db_internal.h"
#include "step_desc.h"

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
    " picked INTEGER, attn_keys INTEGER, host_kv INTEGER, host_scan INTEGER);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER PRIMARY KEY, num_requests INTEGER,"
    " num_finished INTEGER, num_rejected INTEGER, num_preemptions INTEGER, num_steps INTEGER,"
    " request_steps INTEGER, tokens_decoded INTEGER, content_tokens INTEGER, makespan_s REAL,"
    " throughput_tok_s REAL, content_tok_s REAL, req_s REAL, lat_mean_s REAL, lat_p50_s REAL,"
    " lat_p90_s REAL, lat_p99_s REAL, lat_std_s REAL, lat_span_s REAL, ttfb_mean_s REAL,"
    " queue_mean_s REAL, mean_q_per_step REAL, mean_segs_per_step REAL, peak_mem_bytes INTEGER,"
    " weight_bytes INTEGER, kv_pool_bytes INTEGER, act_reserved_bytes INTEGER,"
    " capacity_bytes INTEGER, static_batch INTEGER, rows_processed INTEGER, missed_decodes INTEGER,"
    " redundancy REAL, num_stalls INTEGER, energy_j REAL, mean_power_w REAL, slo_attainment REAL,"
    " expected_accuracy REAL, accuracy_task TEXT, interval_json TEXT, known TEXT, offered_rps REAL,"
    " overloaded INTEGER, pricing TEXT, sampler_canvases INTEGER, sampler_holds INTEGER, sampler_oom INTEGER);"
    "CREATE TABLE IF NOT EXISTS op_breakdown(run_id INTEGER, op TEXT, seconds REAL,"
    " PRIMARY KEY(run_id, op));";

/* A fleet's run (tessera sim --replicas|--fleet --db): its summary is the fleet's; these tables hold
 * the fleet's own figures, each replica's and the control loops' readings. A database gets them with
 * its first fleet (db_merge carries them), so that a run's database holds no empty ones. */
static const char *const fleet_schema =
    "CREATE TABLE IF NOT EXISTS fleets(run_id INTEGER PRIMARY KEY, replicas INTEGER, refused INTEGER,"
    " deferred INTEGER, started INTEGER, stopped INTEGER, refresh_pool INTEGER, moves INTEGER,"
    " moves_with_kv INTEGER, moved_bytes REAL, move_mean_s REAL, threshold_mean REAL);"
    "CREATE TABLE IF NOT EXISTS fleet_replicas(run_id INTEGER, replica INTEGER, pool TEXT, routed INTEGER,"
    " moved_in INTEGER, moved_out INTEGER, num_requests INTEGER, num_finished INTEGER, num_rejected INTEGER,"
    " num_steps INTEGER, tokens_decoded INTEGER, active_s REAL, lat_mean_s REAL, lat_p50_s REAL,"
    " lat_p90_s REAL, lat_p99_s REAL, busy_s REAL, energy_j REAL, energy_per_token_j REAL, config_json TEXT,"
    " PRIMARY KEY(run_id, replica));"
    "CREATE TABLE IF NOT EXISTS fleet_readings(run_id INTEGER, control TEXT, t_s REAL, value REAL, value2 REAL,"
    " outstanding INTEGER);";

/* A plan's candidates (tessera plan size --out DIR: DIR/plan.db): each candidate is a run (its
 * configuration at the replicas it was sized to and the plan's load; its summary the fleet run that
 * confirmed it, none where it was not sized) with its row here: the plan it belongs to (a digest of
 * what sizes it), its place in the space, how it was sized and, once the plan is ranked, its price,
 * rank and place on the front. A database gets the table with its first candidate. */
static const char *const plan_schema =
    "CREATE TABLE IF NOT EXISTS plan_candidates(run_id INTEGER PRIMARY KEY, plan TEXT, candidate INTEGER,"
    " label TEXT, status TEXT, why TEXT, rps_per_replica REAL, rps_failed REAL, replicas INTEGER, gpus INTEGER,"
    " probes INTEGER, request_steps INTEGER, p99_s REAL, mean_s REAL, within REAL, content_tok_s REAL,"
    " mean_power_w REAL, accuracy REAL, accuracy_task TEXT, known TEXT, gpu TEXT, wall_s REAL, usd_per_hour REAL,"
    " usd_per_mtok REAL, rank INTEGER, front INTEGER);";

/* The tables an engine replay adds to a run's database (tessera engine replay): each replayed step's
 * measured time beside the model's, and with --ops each op's. */
static const char *const engine_schema =
    "CREATE TABLE IF NOT EXISTS engine_steps(run_id INTEGER, step_id INTEGER, predicted_ns INTEGER,"
    " measured_ns INTEGER, device TEXT, PRIMARY KEY(run_id, step_id));"
    "CREATE TABLE IF NOT EXISTS engine_step_ops(run_id INTEGER, step_id INTEGER, op TEXT, ms REAL,"
    " PRIMARY KEY(run_id, step_id, op));";

/* The step rows and the segment rows, one a step and one a request and step, are views over runs:
 * consecutive steps alike but for their start, each starting when the one before ended
 * (step_runs), and consecutive steps in which a request's segment kept one shape
 * (segment_runs). A run thus writes a row per change rather than per step. The views expand them
 * (a step's start is its run's plus the durations before it); they are made after the upgrade,
 * which turns an older database's tables of these names into runs of one step. */
static const char *const step_totals_cols = "num_segs, q_tokens, kv_tokens, kv_write_tokens, logit_rows, decoded, "
                                            "num_full, num_refresh, num_reuse, num_prefill, num_block, act_peak_bytes, "
                                            "kv_in_use_bytes";


/* Appends ", KNOB" for every step knob (step_knobs) to buf[*n..len): with db, NULL for one that
 * `name`.`table` lacks (a database written before it was recorded), as SELECT's "NULL AS KNOB".
 * -1 on an SQLite error. */
static int knob_cols(sqlite3 *db, const char *name, const char *table, char *buf, size_t *n, size_t len)
{
    for (int i = 0; i < STEP_KNOBS; i++) {
        const int have = db ? db_has_column(db, name, table, step_knobs[i].name) : 1;
        if (have < 0)
            return -1;
        *n += (size_t)snprintf(buf + *n, len - *n, have ? ", %s" : ", NULL AS %s", step_knobs[i].name);
    }
    TS_ASSERT(*n < len);
    return 0;
}

/* The step rows' columns but run_id, step_id, start_ns and duration_ns: the totals and memory, then
 * every step knob by its name in step_knobs */
const char *db_step_cols(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t n = (size_t)snprintf(buf, sizeof buf, "%s", step_totals_cols);
        knob_cols(NULL, NULL, NULL, buf, &n, sizeof buf);
    }
    return buf;
}
const char *const db_seg_cols = "req_id, phase, q, kv, kv_write, logit_rows, decoded, padding, keep, score_rows, "
                                "q_front, kv_front, kv_write_front, probe, carry, picked, attn_keys, host_kv, host_scan";

/* One view's statement over its runs: the steps view (steps) or the segments view, whose row columns
 * are cols (db_step_cols or db_seg_cols, or an older database's), made by `create` ("CREATE VIEW IF
 * NOT EXISTS main." to make it; "CREATE VIEW " as SQLite stores it), into buf. */
void db_view_sql(bool steps, const char *create, const char *cols, char *buf, size_t len)
{
    const char *c = cols;
    const int n = steps ? snprintf(buf, len,
                                   "%ssteps AS WITH RECURSIVE x(run_id, step_id, last_step, start_ns, duration_ns, %s) AS "
                                   "(SELECT run_id, first_step, last_step, start_ns, duration_ns, %s FROM step_runs UNION "
                                   "ALL SELECT run_id, step_id + 1, last_step, start_ns + duration_ns, duration_ns, %s FROM "
                                   "x WHERE step_id < last_step) SELECT run_id, step_id, start_ns, duration_ns, %s FROM x",
                                   create, c, c, c, c)
                        : snprintf(buf, len,
                                   "%ssegments AS WITH RECURSIVE x(run_id, step_id, last_step, %s) AS (SELECT run_id, "
                                   "first_step, last_step, %s FROM segment_runs UNION ALL SELECT run_id, step_id + 1, "
                                   "last_step, %s FROM x WHERE step_id < last_step) SELECT run_id, step_id, %s FROM x",
                                   create, c, c, c, c);
    TS_ASSERT(n > 0 && (size_t)n < len);
}

/* The views in database `name`, into buf. */
static void views_sql(const char *name, char *buf, size_t len)
{
    char create[64];
    snprintf(create, sizeof create, "CREATE VIEW IF NOT EXISTS %s.", name);
    db_view_sql(true, create, db_step_cols(), buf, len);
    size_t n = strlen(buf);
    TS_ASSERT(n + 2 < len);
    buf[n++] = ';';
    db_view_sql(false, create, db_seg_cols, buf + n, len - n);
}

/* Columns later versions added to a table, with their type: a database written before them gets them
 * (their older rows read as the default) before a run is added to it. */
static const char *const added_columns[][3] = {
    {"segments", "keep", "INTEGER NOT NULL DEFAULT 0"},       {"segments", "score_rows", "INTEGER NOT NULL DEFAULT 0"},
    {"segments", "q_front", "INTEGER NOT NULL DEFAULT 0"},    {"segments", "kv_front", "INTEGER NOT NULL DEFAULT 0"},
    {"segments", "kv_write_front", "INTEGER NOT NULL DEFAULT 0"}, {"segments", "probe", "INTEGER NOT NULL DEFAULT 0"},
    {"segments", "carry", "INTEGER NOT NULL DEFAULT 0"},      {"segments", "picked", "INTEGER NOT NULL DEFAULT 0"},
    {"segment_runs", "picked", "INTEGER NOT NULL DEFAULT 0"}, {"segments", "attn_keys", "INTEGER NOT NULL DEFAULT 0"},
    {"segment_runs", "attn_keys", "INTEGER NOT NULL DEFAULT 0"}, {"segments", "host_kv", "INTEGER NOT NULL DEFAULT 0"},
    {"segment_runs", "host_kv", "INTEGER NOT NULL DEFAULT 0"}, {"segments", "host_scan", "INTEGER NOT NULL DEFAULT 0"},
    {"segment_runs", "host_scan", "INTEGER NOT NULL DEFAULT 0"}, {"summary", "rows_processed", "INTEGER NOT NULL DEFAULT 0"},
    {"summary", "missed_decodes", "INTEGER NOT NULL DEFAULT 0"}, {"summary", "redundancy", "INTEGER NOT NULL DEFAULT 0"},
    {"summary", "num_stalls", "INTEGER NOT NULL DEFAULT 0"},
    /* (a run priced before its energy was: NULL, not known) */
    {"summary", "energy_j", "REAL"}, {"summary", "mean_power_w", "REAL"}, {"summary", "slo_attainment", "REAL"},
    {"summary", "expected_accuracy", "REAL"}, {"summary", "accuracy_task", "TEXT"},
    {"summary", "interval_json", "TEXT"}, {"summary", "known", "TEXT"}, {"summary", "offered_rps", "REAL"},
    {"summary", "overloaded", "INTEGER"}, {"summary", "pricing", "TEXT"}, {"summary", "sampler_canvases", "INTEGER"},
    {"summary", "sampler_holds", "INTEGER"}, {"summary", "sampler_oom", "INTEGER"}};

bool db_added_piece(const char *table, const char *piece)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        const size_t n = strlen(added_columns[i][1]);
        if (strcmp(added_columns[i][0], table) == 0 && strncmp(piece, added_columns[i][1], n) == 0 &&
            piece[n] == ' ' && strcmp(piece + n + 1, added_columns[i][2]) == 0)
            return true;
    }
    return false;
}

int db_has_column(sqlite3 *db, const char *name, const char *table, const char *col)
{
    sqlite3_stmt *st = NULL;
    int have = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, col, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            have = sqlite3_column_int(st, 0) > 0;
    }
    sqlite3_finalize(st);
    return have;
}

int db_is_table(sqlite3 *db, const char *name, const char *what, bool *out)
{
    char sql[160];
    sqlite3_stmt *ty = NULL;
    snprintf(sql, sizeof sql, "SELECT type FROM %s.sqlite_master WHERE name = ?1", name);
    *out = false;
    if (sqlite3_prepare_v2(db, sql, -1, &ty, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(ty, 1, what, -1, SQLITE_STATIC);
    if (sqlite3_step(ty) == SQLITE_ROW)
        *out = strcmp((const char *)sqlite3_column_text(ty, 0), "table") == 0;
    sqlite3_finalize(ty);
    return 0;
}

bool db_has_table(sqlite3 *db, const char *what)
{
    bool is = false;
    return db_is_table(db, "main", what, &is) == 0 && is;
}

/* Brings the database `name` (main, out, src) to the current schema, whose tables it already has
 * (CREATE ... IF NOT EXISTS): the added columns it lacks, an older database's tables of step and
 * segment rows turned into runs of one step each, and the views over the runs. */
int db_upgrade(sqlite3 *db, const char *name)
{
    char sql[8192];
    bool old_steps, old_segs;
    if (db_is_table(db, name, "steps", &old_steps) || db_is_table(db, name, "segments", &old_segs))
        return -1;
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++) {
        const bool runs_col = strcmp(added_columns[i][0], "segment_runs") == 0;
        if (strcmp(added_columns[i][0], "segments") == 0 && !old_segs)
            continue; /* the view has them */
        const int have = db_has_column(db, name, added_columns[i][0], added_columns[i][1]);
        if (have < 0)
            return -1;
        /* a column added to the runs: the view over them is made again with it */
        snprintf(sql, sizeof sql, "ALTER TABLE %s.%s ADD COLUMN %s %s;%s%s%s", name, added_columns[i][0],
                 added_columns[i][1], added_columns[i][2], runs_col ? "DROP VIEW IF EXISTS " : "",
                 runs_col ? name : "", runs_col ? ".segments;" : "");
        if (!have && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    /* step knobs a database's step runs do not record yet: NULL in its older rows (not recorded; a
     * replay derives them from the run's configuration), and the steps view made again with them */
    for (int i = 0; i < STEP_KNOBS && !old_steps; i++) {
        const int have = db_has_column(db, name, "step_runs", step_knobs[i].name);
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
                 name, db_seg_cols + strlen("req_id, "), name, name);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return -1;
    }
    views_sql(name, sql, sizeof sql);
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int db_views_in(sqlite3 *db, const char *name)
{
    char sql[8192];
    views_sql(name, sql, sizeof sql);
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* Schema text `schema` with every table in the attached database `name`. Caller frees. */
static char *schema_in(const char *text, const char *name)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS ", knobs[] = "@KNOBS";
    char *out = xmalloc(strlen(text) + 64 * (strlen(name) + 1) + 64 * STEP_KNOBS + 1), *o = out;
    for (const char *p = text; *p;) {
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

char *db_schema_in(const char *name) { return schema_in(schema, name); }
char *db_fleet_schema_in(const char *name) { return schema_in(fleet_schema, name); }
char *db_engine_schema_in(const char *name) { return schema_in(engine_schema, name); }
char *db_plan_schema_in(const char *name) { return schema_in(plan_schema, name); }

const char *db_column_fill(const char *table, const char *col)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(added_columns); i++)
        if (strcmp(added_columns[i][0], table) == 0 && strcmp(added_columns[i][1], col) == 0)
            return strstr(added_columns[i][2], "DEFAULT 0") ? "0" : "NULL";
    for (int i = 0; i < STEP_KNOBS; i++)
        if ((strcmp(table, "step_runs") == 0 || strcmp(table, "steps") == 0) && strcmp(step_knobs[i].name, col) == 0)
            return "NULL";
    return NULL;
}


/* SQLite's message for db's last failure, with the system's where one caused it (a full disk, a
 * read-only file system, a permission): into buf. */
const char *db_why(sqlite3 *db, char *buf, size_t len)
{
    const int sys = db ? sqlite3_system_errno(db) : 0;
    snprintf(buf, len, "%s%s%s%s", db ? sqlite3_errmsg(db) : "?", sys ? " (" : "", sys ? strerror(sys) : "",
             sys ? ")" : "");
    return buf;
}


/* Whether the connection's last failure is one another writer's work causes, which waiting and
 * trying again clears: busy or locked beyond what the busy handler covers (a journal-mode switch,
 * WAL recovery), a schema another writer changed under a statement, and the schema read that
 * fails while a new database is being made ("not an error"). */
bool db_transient(sqlite3 *db)
{
    const int primary = sqlite3_errcode(db) & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_SCHEMA ||
           primary == SQLITE_PROTOCOL || (primary == SQLITE_ERROR && strcmp(sqlite3_errmsg(db), "not an error") == 0);
}


int db_segments_prepare(sqlite3 *db, sqlite3_stmt **out)
{
    /* its index, made by the first reader rather than by every run's write (a database opened read-only
     * goes without: the query is then slower, not wrong) */
    sqlite3_exec(db, DB_SEGMENT_INDEX, NULL, NULL, NULL);
    /* the runs covering the step: those that start no longer before it than the longest run lasts */
    if (sqlite3_prepare_v2(db, "SELECT req_id, phase, q, kv, kv_write, logit_rows, decoded, padding, keep, score_rows, "
                               "q_front, kv_front, kv_write_front, probe, carry, picked, attn_keys, host_kv, host_scan FROM segment_runs "
                               "WHERE run_id = ?1 AND "
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
        const bool have = db_has_column(db, "main", added_columns[i][0], added_columns[i][1]) > 0;
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
                             .carry = sqlite3_column_int(st, 14), .picked = sqlite3_column_int(st, 15),
                             .attn_keys = sqlite3_column_int(st, 16), .host_kv = sqlite3_column_int(st, 17),
                             .host_scan = sqlite3_column_int(st, 18)};
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

int db_prepare_waiting(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    int rc = SQLITE_OK;
    for (int waited = 0; waited <= DB_BUSY_MS; waited += 10) {
        rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
        if (rc == SQLITE_OK || !db_transient(db))
            return rc;
        sqlite3_finalize(*st);
        *st = NULL;
        sqlite3_sleep(10);
    }
    return rc;
}

int db_integrity(sqlite3 *db, const char *path, struct ts_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prepare_waiting(db, "PRAGMA integrity_check(3)", &st);
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


int db_open_read(const char *path, sqlite3 **db)
{
    *db = NULL;
    if (db_guard_process())
        return SQLITE_ERROR;
    return sqlite3_open_v2(path, db, access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY, NULL);
}
