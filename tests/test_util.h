/* test_util.h: helpers shared by the Check suites. */
#ifndef TESSERA_TEST_UTIL_H
#define TESSERA_TEST_UTIL_H

#include <check.h>
#include <stdbool.h>

#include "config.h"
#include "step_desc.h"

/* Writes text to a fresh temporary file whose name ends in `suffix`; returns its path (static
 * storage, valid until the next call with the same slot 0..7), removed as tmp_path's is. */
const char *tmp_file(int slot, const char *suffix, const char *text);
/* A temporary path that does not exist yet. It is removed (with SQLite's side files) when the
 * process that asked for it exits. */
const char *tmp_path(int slot, const char *suffix);
/* A fresh empty temporary folder (slot 0..3), removed with its contents when the process that made
 * it exits; the path is static storage, valid until the next call with the same slot. */
const char *tmp_dir(int slot);
/* Default config for tests: quiet, no progress line. */
void test_config(struct sim_config *c);
/* Gives a policy's or scheduler's parameter (params.h) its value, as --NAME V would. */
void test_param(struct sim_config *c, const char *name, double v);
/* Runs a Check suite; returns the number of failures. Prints "NAME: N passed, M failed". */
int run_suite(const char *name, Suite *s);
/* Test fn (a START_TEST) into suite s in a test case of its own, named as the function (CK_RUN_CASE=NAME
 * runs it alone: a planted bug's recorded killer, tests/mutate.sh), its loop over [start, end), each
 * run given timeout_s seconds (0: Check's default). */
void ck_case_add(Suite *s, const char *name, const TTest *fn, int start, int end, double timeout_s);
#define ck_case(s, fn, timeout_s) ck_case_add((s), #fn, (fn), 0, 1, (timeout_s))
#define ck_loop_case(s, fn, start, end, timeout_s) ck_case_add((s), #fn, (fn), (start), (end), (timeout_s))
/* Adds n copies of seg to sd, the i-th with request id seg->req_id + i: a step of n equal
 * segments. */
void test_step_repeat(struct step_desc *sd, const struct segment *seg, int n);
/* Path of a file in ../shared/traces/raw if it exists, else NULL. */
const char *shared_trace(const char *name);

#endif
