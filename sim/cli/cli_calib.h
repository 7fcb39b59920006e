/*
 * cli_calib.h: what the two files of `tessera calib` share: the subcommands that price steps
 * (cli_calib_eval.c), which the dispatcher (cli_calib.c) runs, and how a calibration is found and
 * fitted, which both read.
 */
#ifndef TESSERA_CLI_CALIB_H
#define TESSERA_CLI_CALIB_H

#include <stdbool.h>
#include <stddef.h>

#include "calib.h"
#include "config.h"

/* The calibration CSV at path, validated against GPU gpu and fitted into *out (the caller frees it,
 * calib_free); -1 with err. */
int cli_calib_load_fit(const char *path, const char *gpu, struct calib **out, struct ts_err *err);
/* The shipped calibration of gpu, model and impl under the default data directory. */
void cli_calib_shipped_path(const char *gpu, const char *model, const char *impl, char *path, size_t len);
/* `calib eval --db RUN.db`: the last run replayed in dbpath priced step by step by the calibrated
 * (calib_path, else the shipped one; its host host_path where given) and the roofline back ends against
 * its measured times; csv, where given, gets every step. Returns the exit status. */
int cli_calib_eval(const char *dbpath, const char *calib_path, const char *host_path, bool extrapolate,
                   enum cfg_clock clock, const char *csv);
/* `calib price --step SPEC`: one step priced per op by the calibrated and the roofline back ends (the
 * roofline alone with roofline_only). Returns the exit status. */
int cli_calib_price(const char *gpu, const char *model, const char *impl, const char *calib_path,
                    const char *host_path, const char *spec, const char *attn_block, bool extrapolate,
                    bool roofline_only, bool iter_smooth);

#endif
