/* test_util.c: helpers shared by the Check suites. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every temporary path and folder handed out, with the process that asked for it: a suite's forked
 * test removes at its exit only what it made itself, whether it passed or failed an assertion. */
struct temporary {
    char path[256];
    pid_t owner;
    bool folder;
};
static struct temporary *made;
static size_t n_made, cap_made;
static char paths[8][256], dirs[4][256];

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(p);
    return 0;
}

static void remove_temporaries(void)
{
    static const char *const sides[] = {"", "-journal", "-wal", "-shm"};
    for (size_t i = 0; i < n_made; i++) {
        if (made[i].owner != getpid())
            continue;
        if (made[i].folder) {
            nftw(made[i].path, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
            continue;
        }
        for (size_t k = 0; k < sizeof sides / sizeof *sides; k++) {
            char p[300];
            snprintf(p, sizeof p, "%s%s", made[i].path, sides[k]);
            unlink(p);
        }
    }
    free(made);
    made = NULL;
    n_made = cap_made = 0;
}

static void remove_at_exit(const char *path, bool folder)
{
    static bool registered;
    if (!registered)
        atexit(remove_temporaries);
    registered = true;
    if (n_made == cap_made) {
        cap_made = cap_made ? 2 * cap_made : 64;
        made = realloc(made, cap_made * sizeof *made);
        ck_assert_ptr_nonnull(made);
    }
    snprintf(made[n_made].path, sizeof made[n_made].path, "%s", path);
    made[n_made].owner = getpid();
    made[n_made++].folder = folder;
}

static const char *tmp_root(void)
{
    return getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
}

const char *tmp_path(int slot, const char *suffix)
{
    snprintf(paths[slot], sizeof paths[slot], "%s/tessera-test-%ld-%d%s", tmp_root(), (long)getpid(), slot, suffix);
    unlink(paths[slot]);
    remove_at_exit(paths[slot], false);
    return paths[slot];
}

const char *tmp_dir(int slot)
{
    snprintf(dirs[slot], sizeof dirs[slot], "%s/tessera-test-XXXXXX", tmp_root());
    ck_assert_ptr_nonnull(mkdtemp(dirs[slot]));
    remove_at_exit(dirs[slot], true);
    return dirs[slot];
}

const char *tmp_file(int slot, const char *suffix, const char *text)
{
    const char *p = tmp_path(slot, suffix);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return p;
}

void test_config(struct sim_config *c)
{
    sim_config_defaults(c);
    c->quiet = true;
    c->progress = false;
}

void ck_case_add(Suite *s, const char *name, const TTest *fn, int start, int end, double timeout_s)
{
    TCase *tc = tcase_create(name);
    if (timeout_s > 0)
        tcase_set_timeout(tc, timeout_s);
    tcase_add_loop_test(tc, fn, start, end);
    suite_add_tcase(s, tc);
}

int run_suite(const char *name, Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    srunner_free(sr);
    printf("%s: %d passed, %d failed\n", name, run - failed, failed);
    return failed;
}

const char *shared_trace(const char *name)
{
    static char p[512];
    const char *roots[] = {"../shared/traces/raw", "../../shared/traces/raw"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", roots[i], name);
        if (access(p, R_OK) == 0)
            return p;
    }
    return NULL;
}

void test_param(struct sim_config *c, const char *name, double v)
{
    char text[32];
    snprintf(text, sizeof text, "%.17g", v);
    struct ts_err err;
    TS_ASSERTF(param_values_set(&c->params, name, text, &err) == 0, "%s", err.msg);
}

void test_step_repeat(struct step_desc *sd, const struct segment *seg, int n)
{
    for (int i = 0; i < n; i++) {
        struct segment s = *seg;
        s.req_id = seg->req_id + i;
        step_desc_add(sd, &s);
    }
}
