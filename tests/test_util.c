/* test_util.c: helpers shared by the Check suites. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char paths[8][256];

const char *tmp_path(int slot, const char *suffix)
{
    snprintf(paths[slot], sizeof paths[slot], "%s/tessera-test-%ld-%d%s",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), slot, suffix);
    unlink(paths[slot]);
    return paths[slot];
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
