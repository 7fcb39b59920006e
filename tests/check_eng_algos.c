/*
 * check_eng_algos.c: the GEMM algorithm cache (host code, no GPU): choices survive a reopen, rows
 * of other devices, library versions or workspaces stay apart, the first writer of a shape wins
 * across processes sharing a file, and broken files are refused naming file, row and field.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_algos.h"
#include "test_util.h"

#define BLOB 16
static const char *DEV = "NVIDIA H200 (sm_90, 132 SMs)";

static void blob(unsigned char *b, int v)
{
    for (int i = 0; i < BLOB; i++)
        b[i] = (unsigned char)(v * 31 + i);
}

static void open_ok(struct algo_cache *c, const char *path, const char *dev, int64_t ver, int64_t ws)
{
    struct ts_err err;
    ck_assert_msg(algo_cache_open(c, path, dev, ver, ws, BLOB, &err) == 0, "%s", err.msg);
}

static void put_ok(struct algo_cache *c, struct algo_key k, int v, const struct algo_entry **kept)
{
    unsigned char b[BLOB];
    blob(b, v);
    struct ts_err err;
    ck_assert_msg(algo_cache_put(c, k, b, 0.01f * (float)v, 0.02f, kept, &err) == 0, "%s", err.msg);
}

static bool holds(const struct algo_entry *e, int v)
{
    unsigned char b[BLOB];
    blob(b, v);
    return e && memcmp(e->blob, b, BLOB) == 0;
}

START_TEST(choices_survive_reopen)
{
    const char *p = tmp_path(0, ".db");
    struct algo_cache c;
    const struct algo_entry *kept;
    open_ok(&c, p, DEV, 130100, 1 << 25);
    ck_assert_uint_eq(c.n, 0);
    put_ok(&c, (struct algo_key){32, 4096, 4096, 1}, 1, &kept);
    ck_assert(holds(kept, 1));
    put_ok(&c, (struct algo_key){32, 4096, 4096, 0}, 2, &kept); /* C read or not: another shape */
    ck_assert(holds(kept, 2));
    algo_cache_close(&c);
    open_ok(&c, p, DEV, 130100, 1 << 25);
    ck_assert_uint_eq(c.n, 2);
    const struct algo_entry *e = algo_cache_find(&c, (struct algo_key){32, 4096, 4096, 1});
    ck_assert(holds(e, 1));
    ck_assert_float_eq_tol(e->ms, 0.01f, 1e-7f);
    ck_assert_float_eq_tol(e->heuristic_ms, 0.02f, 1e-7f);
    ck_assert(holds(algo_cache_find(&c, (struct algo_key){32, 4096, 4096, 0}), 2));
    ck_assert_ptr_null(algo_cache_find(&c, (struct algo_key){64, 4096, 4096, 0}));
    algo_cache_close(&c);
    algo_cache_close(&c); /* closing twice is harmless */
    remove(p);
}
END_TEST

START_TEST(devices_versions_workspaces_stay_apart)
{
    const char *p = tmp_path(0, ".db");
    struct algo_cache c;
    const struct algo_entry *kept;
    struct algo_key k = {512, 12288, 4096, 0};
    open_ok(&c, p, DEV, 130100, 1 << 25);
    put_ok(&c, k, 1, &kept);
    algo_cache_close(&c);
    const struct {
        const char *dev;
        int64_t ver, ws;
    } other[] = {{"NVIDIA A100-SXM4-80GB (sm_80, 108 SMs)", 130100, 1 << 25}, {DEV, 130000, 1 << 25}, {DEV, 130100, 1 << 22}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        open_ok(&c, p, other[i].dev, other[i].ver, other[i].ws);
        ck_assert_uint_eq(c.n, 0);
        put_ok(&c, k, (int)i + 2, &kept);
        ck_assert(holds(kept, (int)i + 2));
        algo_cache_close(&c);
    }
    open_ok(&c, p, DEV, 130100, 1 << 25);
    ck_assert_uint_eq(c.n, 1);
    ck_assert(holds(algo_cache_find(&c, k), 1));
    algo_cache_close(&c);
    remove(p);
}
END_TEST

START_TEST(first_writer_wins_across_processes)
{
    const char *p = tmp_path(0, ".db");
    struct algo_cache a, b;
    const struct algo_entry *kept;
    struct algo_key k = {32, 24576, 4096, 0};
    open_ok(&a, p, DEV, 130100, 1 << 25);
    open_ok(&b, p, DEV, 130100, 1 << 25); /* both started before either tuned */
    put_ok(&a, k, 7, &kept);
    ck_assert(holds(kept, 7));
    put_ok(&b, k, 8, &kept); /* b timed the shape too, but a wrote first */
    ck_assert(holds(kept, 7));
    ck_assert(holds(algo_cache_find(&b, k), 7));
    put_ok(&a, k, 9, &kept); /* a shape already chosen keeps its choice */
    ck_assert(holds(kept, 7));
    algo_cache_close(&a);
    algo_cache_close(&b);
    open_ok(&a, p, DEV, 130100, 1 << 25);
    ck_assert_uint_eq(a.n, 1);
    algo_cache_close(&a);
    remove(p);
}
END_TEST

static void sql(const char *path, const char *stmt)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, stmt, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

static void refused(const char *path, const char *want)
{
    struct algo_cache c;
    struct ts_err err;
    ck_assert_int_ne(algo_cache_open(&c, path, DEV, 130100, 1 << 25, BLOB, &err), 0);
    ck_assert_msg(strstr(err.msg, path) != NULL, "no file in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, want) != NULL, "no '%s' in: %s", want, err.msg);
    algo_cache_close(&c); /* a refused open leaves nothing to free */
}

START_TEST(broken_files_are_refused)
{
    refused(tmp_file(0, ".db", "this is not a database, it is text long enough to be read as a header\n"),
            "not a cache file");
    refused("/nonexistent-dir/cache.db", "cannot open");

    const char *p = tmp_path(1, ".db");
    struct algo_cache c;
    const struct algo_entry *kept;
    open_ok(&c, p, DEV, 130100, 1 << 25);
    put_ok(&c, (struct algo_key){32, 4096, 4096, 0}, 1, &kept);
    algo_cache_close(&c);
    sql(p, "INSERT INTO gemm_algos VALUES('NVIDIA H200 (sm_90, 132 SMs)', 130100, 33554432, 64, 4096, 4096, 0, "
           "x'0102', 0.1, 0.1)");
    refused(p, "row 2: algo: 2 bytes, expected a 16-byte blob");
    sql(p, "DELETE FROM gemm_algos WHERE rowid = 2");
    sql(p, "INSERT INTO gemm_algos VALUES('NVIDIA H200 (sm_90, 132 SMs)', 130100, 33554432, 0, 4096, 4096, 0, "
           "zeroblob(16), 0.1, 0.1)");
    refused(p, "m, n, k: 0 x 4096 x 4096");
    remove(p);

    p = tmp_path(1, ".db");
    sql(p, "CREATE TABLE gemm_algos(device TEXT, shape TEXT)");
    refused(p, "no gemm_algos table of the expected columns");
    remove(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eng_algos");
    ck_case(s, choices_survive_reopen, 0);
    ck_case(s, devices_versions_workspaces_stay_apart, 0);
    ck_case(s, first_writer_wins_across_processes, 0);
    ck_case(s, broken_files_are_refused, 0);
    return run_suite("eng_algos", s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
