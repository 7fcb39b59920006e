/* check_db.c: the run database's defences (sim/db/), each tried directly: the guard's settings read
 * back on every kind of connection tessera opens, the one rule for reading a database (db_own) against
 * crafted schemas, SQLite's reserved names among them, the bounds on the rows a reader expands
 * (db_bounded), and a merge compared with its inputs value by value. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "db_internal.h"
#include "sim.h"
#include "test_util.h"

static bool runs_sql(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK; }

/* A run of `requests` requests (seed seed) written into a new database at path. */
static void make_run_db(const char *path, int requests, uint64_t seed)
{
    struct sim_config c;
    test_config(&c);
    c.requests = requests;
    c.rps = 4;
    c.gen_len = 32;
    c.seed = seed;
    struct ts_err err;
    struct sim *s = sim_create(&c, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    ck_assert_int_eq(sim_run(s, NULL), 0);
    unlink(path);
    ck_assert_msg(sim_write_db(s, path, DB_NEW, &err) == 0, "%s", err.msg);
    sim_destroy(s);
}

/* sql run in the database at path by a connection without the guard (a crafted file's maker) */
static void craft(const char *path, const char *sql)
{
    sqlite3_reset_auto_extension();
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, NULL);
    ck_assert_msg(runs_sql(db, sql), "crafting: %s: %s", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A copy of file `from` at path `to`. */
static void copy_file(const char *from, const char *to)
{
    char *buf = NULL;
    size_t len = 0;
    struct ts_err err;
    ck_assert_msg(ts_read_file(from, &buf, &len, &err) == 0, "%s", err.msg);
    FILE *f = fopen(to, "wb");
    ck_assert(f != NULL);
    ck_assert_int_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

/* db_open_run's verdict on path: 0, or -1 with err. */
static int own(const char *path, struct ts_err *err)
{
    sqlite3 *db = NULL;
    const int rc = db_open_run(path, &db, err);
    sqlite3_close(db);
    return rc;
}

static void noop(sqlite3_context *cx, int n, sqlite3_value **v)
{
    (void)n, (void)v;
    sqlite3_result_null(cx);
}

/* The guard's settings as SQLite reports them, and its authorizer's refusals, on connection db. */
static void guarded(sqlite3 *db, const char *kind)
{
    static const struct {
        int op, want;
        const char *name;
    } settings[] = {{SQLITE_DBCONFIG_DEFENSIVE, 1, "defensive"},
                    {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, "trusted schema"},
                    {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, "triggers"},
                    {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, "extensions"},
                    {SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, "FTS3's tokenizer"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(settings); i++) {
        int got = -1;
        ck_assert_int_eq(sqlite3_db_config(db, settings[i].op, -1, &got), SQLITE_OK);
        ck_assert_msg(got == settings[i].want, "%s: %s is %d", kind, settings[i].name, got);
    }
    /* the functions that reach outside, refused even where the connection has them */
    static const char *const outside[] = {"readfile", "writefile", "edit", "load_extension", "fts3_tokenizer"};
    for (size_t i = 0; i < TS_ARRAY_LEN(outside); i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT %s('x')", outside[i]);
        ck_assert_int_eq(sqlite3_create_function(db, outside[i], -1, SQLITE_UTF8, NULL, noop, NULL, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        const int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        sqlite3_finalize(st);
        ck_assert_msg(rc != SQLITE_OK && strstr(sqlite3_errmsg(db), "not authorized"), "%s: %s was not refused (%s)",
                      kind, outside[i], sqlite3_errmsg(db));
    }
    ck_assert_msg(!runs_sql(db, "ATTACH ':memory:' AS other"), "%s: an ATTACH went through", kind);
    ck_assert_msg(!runs_sql(db, "CREATE TEMP TRIGGER u AFTER INSERT ON runs BEGIN SELECT 1; END"), "%s: a trigger", kind);
}

/* Every kind of connection tessera opens has every guard: a fresh one, one after tessera's own ATTACH
 * (the guard back on after it), a read-only one, and db_open_read's. */
START_TEST(guard_settings_read_back_on_every_connection)
{
    const char *path = tmp_path(0, ".db"), *other = tmp_path(1, ".db");
    make_run_db(path, 2, 1);
    make_run_db(other, 2, 2);
    ck_assert_int_eq(db_guard_process(), 0);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    guarded(db, "a fresh connection");
    ck_assert_int_eq(db_attach(db, other, "out"), SQLITE_OK);
    guarded(db, "after tessera's own attach");
    sqlite3_close(db);
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    guarded(db, "a read-only connection");
    sqlite3_close(db);
    ck_assert_int_eq(db_open_read(path, &db), SQLITE_OK);
    guarded(db, "db_open_read's");
    sqlite3_close(db);
}
END_TEST

/* Crafted databases, each one statement over a tessera run's database, and the text db_own's refusal
 * names. */
static const char *const crafted[][2] = {
    {"ALTER TABLE runs RENAME TO r0; CREATE TABLE runs(run_id TEXT PRIMARY KEY, created TEXT, code_version TEXT, "
     "seed INTEGER, config_json TEXT); INSERT INTO runs SELECT * FROM r0; DROP TABLE r0",
     "'run_id TEXT PRIMARY KEY'"},
    {"ALTER TABLE summary ADD COLUMN g TEXT AS (printf('%.*c', 1000, 'x'))", "'g TEXT AS"},
    {"ALTER TABLE summary ADD COLUMN c INTEGER CHECK (c > 0)", "'c INTEGER CHECK"},
    {"ALTER TABLE summary ADD COLUMN extra TEXT", "'extra TEXT'"},
    {"DROP TABLE op_breakdown; CREATE TABLE op_breakdown(run_id INTEGER, op TEXT, seconds REAL DEFAULT (random()), "
     "PRIMARY KEY(run_id, op))",
     "'seconds REAL DEFAULT (random())'"},
    {"DROP TABLE op_breakdown; CREATE TABLE op_breakdown(run_id INTEGER, op TEXT, seconds REAL, PRIMARY KEY(run_id, "
     "op)) WITHOUT ROWID",
     "table op_breakdown is not one tessera makes"},
    {"CREATE INDEX IF NOT EXISTS segment_runs_first ON segment_runs(run_id, first_step, length(printf('%.*c', 100, "
     "'x')))",
     "index 'segment_runs_first'"},
    {"CREATE INDEX i ON runs(seed)", "index 'i'"},
    {"DROP VIEW steps; CREATE VIEW steps AS SELECT 1 AS run_id", "view 'steps'"},
    {"CREATE VIEW v AS SELECT 1", "view 'v'"},
    {"CREATE TABLE evil(run_id INTEGER)", "table 'evil'"},
    {"CREATE TRIGGER t AFTER INSERT ON runs BEGIN SELECT 1; END", "trigger 't'"},
    /* SQLite's reserved names, written into the schema as a file's maker can */
    {"PRAGMA writable_schema = ON; INSERT INTO sqlite_schema VALUES('index', 'sqlite_autoindex_runs_9', 'runs', 0, "
     "'CREATE INDEX sqlite_autoindex_runs_9 ON runs(length(config_json))')",
     "index 'sqlite_autoindex_runs_9' under a name of SQLite's own"},
    {"PRAGMA writable_schema = ON; INSERT INTO sqlite_schema VALUES('view', 'sqlite_v', 'sqlite_v', 0, "
     "'CREATE VIEW sqlite_v AS SELECT 1')",
     "view 'sqlite_v' under a name of SQLite's own"},
    {"PRAGMA writable_schema = ON; INSERT INTO sqlite_schema VALUES('table', 'sqlite_stat1', 'sqlite_stat1', 0, "
     "'CREATE TABLE sqlite_stat1(tbl,idx,stat,x AS (1))')",
     "table 'sqlite_stat1' under a name of SQLite's own"},
    {"PRAGMA writable_schema = ON; INSERT INTO sqlite_schema VALUES('index', 'sqlite_autoindex_evil_1', 'evil', 0, "
     "NULL)",
     "sqlite_autoindex_evil_1"},
};

/* db_own takes a run's database as written, analysed (ANALYZE's statistics table) and an older one of
 * single steps and segments upgraded; it refuses every crafted one, naming the object. */
START_TEST(own_rule_compares_every_object_by_its_text)
{
    const char *path = tmp_path(0, ".db"), *bad = tmp_path(1, ".db");
    make_run_db(path, 3, 1);
    struct ts_err err;
    ck_assert_msg(own(path, &err) == 0, "%s", err.msg);
    for (size_t k = 0; k < TS_ARRAY_LEN(crafted); k++) {
        unlink(bad);
        copy_file(path, bad);
        craft(bad, crafted[k][0]);
        ck_assert_msg(own(bad, &err) != 0, "taken: %s", crafted[k][0]);
        ck_assert_msg(strstr(err.msg, crafted[k][1]) != NULL, "%s: said '%s', not '%s'", crafted[k][0], err.msg,
                      crafted[k][1]);
    }
    unlink(bad);
    copy_file(path, bad);
    craft(bad, "ANALYZE");
    ck_assert_msg(own(bad, &err) == 0, "analysed: %s", err.msg);
    /* an older database: its steps and segments tables of single rows, and the upgrade of it */
    unlink(bad);
    char older[2048];
    snprintf(older, sizeof older,
             "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, created TEXT, code_version TEXT, seed INTEGER, config_json "
             "TEXT); CREATE TABLE steps(run_id INTEGER, step_id INTEGER, start_ns INTEGER, duration_ns INTEGER, "
             "num_segs INTEGER, q_tokens INTEGER, PRIMARY KEY(run_id, step_id)); CREATE TABLE segments(run_id INTEGER, "
             "step_id INTEGER, req_id INTEGER, phase TEXT, q INTEGER, kv INTEGER, kv_write INTEGER, logit_rows "
             "INTEGER, decoded INTEGER, padding INTEGER); ALTER TABLE segments ADD COLUMN keep INTEGER NOT NULL "
             "DEFAULT 0");
    craft(bad, older);
    ck_assert_msg(own(bad, &err) == 0, "an older database: %s", err.msg);
    craft(bad, "ALTER TABLE steps ADD COLUMN evil TEXT");
    ck_assert_msg(own(bad, &err) != 0 && strstr(err.msg, "'evil TEXT'"), "an older database's extra column: %s",
                  err.msg);
}
END_TEST

/* db_bounded: each run's runs of steps tile its steps and its segments lie within them; a range past
 * the run's steps, before its first, overlapping, leaving a gap, or not of whole numbers is refused,
 * naming the run; so is a summary that does not count its steps. */
START_TEST(bounds_hold_the_rows_to_their_runs)
{
    const char *path = tmp_path(0, ".db"), *bad = tmp_path(1, ".db");
    make_run_db(path, 3, 1);
    struct ts_err err;
    sqlite3 *db = NULL;
    ck_assert_int_eq(db_open_run(path, &db, &err), 0);
    ck_assert_msg(db_bounded(db, path, -1, &err) == 0, "%s", err.msg);
    sqlite3_close(db);
    static const char *const rows[] = {
        "UPDATE step_runs SET last_step = 9000000000000000000 WHERE rowid = (SELECT max(rowid) FROM step_runs)",
        "UPDATE step_runs SET first_step = -9000000000000000000 WHERE rowid = (SELECT min(rowid) FROM step_runs)",
        "UPDATE step_runs SET last_step = last_step + 1 WHERE rowid = (SELECT min(rowid) FROM step_runs)",
        "UPDATE step_runs SET last_step = last_step - 1 WHERE rowid = (SELECT min(rowid) FROM step_runs WHERE "
        "last_step > first_step)",
        "UPDATE step_runs SET last_step = '9e18' WHERE rowid = (SELECT max(rowid) FROM step_runs)",
        "UPDATE summary SET num_steps = num_steps + 1",
        "UPDATE summary SET num_steps = NULL",
        "UPDATE segment_runs SET last_step = 9000000000000000000 WHERE rowid = (SELECT max(rowid) FROM segment_runs)",
        "UPDATE segment_runs SET first_step = -1 WHERE rowid = (SELECT min(rowid) FROM segment_runs)",
        "UPDATE segment_runs SET last_step = (SELECT num_steps FROM summary) WHERE rowid = (SELECT max(rowid) FROM "
        "segment_runs)",
        "UPDATE step_runs SET last_step = last_step + 1 WHERE rowid = (SELECT max(rowid) FROM step_runs)",
        "INSERT INTO step_runs(run_id, first_step, last_step) SELECT run_id, first_step, last_step FROM step_runs "
        "LIMIT 1",
    };
    for (size_t k = 0; k < TS_ARRAY_LEN(rows); k++) {
        unlink(bad);
        copy_file(path, bad);
        craft(bad, rows[k]);
        ck_assert_int_eq(db_open_run(bad, &db, &err), 0);
        const int rc = db_bounded(db, bad, -1, &err);
        sqlite3_close(db);
        ck_assert_msg(rc != 0, "taken: %s", rows[k]);
        ck_assert_msg(strstr(err.msg, "run 1:") != NULL, "%s: said '%s'", rows[k], err.msg);
    }
}
END_TEST

/* The rows of table t in attached database `in`, their run_id raised by shift, that main's table of
 * the same name lacks, plus the rows main's holds of those runs that the input lacks. */
static int64_t rows_apart(sqlite3 *db, const char *in, const char *t, int64_t shift, int64_t runs)
{
    char cols[2048] = "", sql[4800];
    size_t n = 0;
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s', 'main') WHERE name != 'run_id'", t);
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        n += (size_t)snprintf(cols + n, sizeof cols - n, ", \"%s\"", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM (SELECT run_id + %lld%s FROM %s.%s EXCEPT SELECT run_id%s FROM main.%s)) + "
             "(SELECT count(*) FROM (SELECT run_id%s FROM main.%s WHERE run_id BETWEEN %lld AND %lld EXCEPT SELECT "
             "run_id + %lld%s FROM %s.%s)) + abs((SELECT count(*) FROM %s.%s) - (SELECT count(*) FROM main.%s WHERE "
             "run_id BETWEEN %lld AND %lld))",
             (long long)shift, cols, in, t, cols, t, cols, t, (long long)shift + 1, (long long)(shift + runs),
             (long long)shift, cols, in, t, in, t, t, (long long)shift + 1, (long long)(shift + runs));
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    const int64_t apart = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return apart;
}

/* A merge of two runs' databases holds every value of both, table by table and column by column, each
 * input's runs under the ids that follow the one before it; a run two inputs hold lands once. */
START_TEST(merge_keeps_every_value)
{
    const char *in[2] = {tmp_path(0, ".db"), tmp_path(1, ".db")}, *out = tmp_path(2, ".db");
    make_run_db(in[0], 5, 3);
    make_run_db(in[1], 7, 4);
    unlink(out);
    int64_t runs = 0, held = 0;
    struct ts_err err;
    ck_assert_msg(db_merge(out, in, 2, &runs, &held, &err) == 0, "%s", err.msg);
    ck_assert(runs == 2 && held == 0);
    sqlite3_reset_auto_extension();
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(out, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    static const char *const tables[] = {"runs", "requests", "step_runs", "segment_runs", "summary", "op_breakdown"};
    for (int i = 0; i < 2; i++) {
        char sql[4200];
        snprintf(sql, sizeof sql, "ATTACH '%s' AS in%d", in[i], i);
        ck_assert(runs_sql(db, sql));
        for (size_t t = 0; t < TS_ARRAY_LEN(tables); t++) {
            char name[8];
            snprintf(name, sizeof name, "in%d", i);
            ck_assert_msg(rows_apart(db, name, tables[t], i, 1) == 0, "input %d, table %s: rows differ", i, tables[t]);
        }
    }
    sqlite3_close(db);
    /* a run two inputs hold lands once: the second's counted as held */
    const char *twice[2] = {in[0], tmp_path(3, ".db")}, *out2 = tmp_path(4, ".db");
    unlink(twice[1]), unlink(out2);
    copy_file(in[0], twice[1]);
    ck_assert_msg(db_merge(out2, twice, 2, &runs, &held, &err) == 0, "%s", err.msg);
    ck_assert_msg(runs == 1 && held == 1, "one run twice: %lld merged, %lld held", (long long)runs, (long long)held);
    /* and a run one input holds twice lands once too */
    unlink(twice[1]), unlink(out2);
    copy_file(in[0], twice[1]);
    craft(twice[1], "INSERT INTO runs(created, code_version, seed, config_json) SELECT created, code_version, seed, "
                    "config_json FROM runs");
    ck_assert_msg(db_merge(out2, &twice[1], 1, &runs, &held, &err) == 0, "%s", err.msg);
    ck_assert_msg(runs == 1 && held == 1, "one input's run twice: %lld merged, %lld held", (long long)runs,
                  (long long)held);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("db");
    ck_case(s, guard_settings_read_back_on_every_connection, 120);
    ck_case(s, own_rule_compares_every_object_by_its_text, 120);
    ck_case(s, bounds_hold_the_rows_to_their_runs, 120);
    ck_case(s, merge_keeps_every_value, 120);
    return run_suite("db", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
