/* cli.h: the subcommands of the tessera binary. Each returns the process exit status:
 * 0 success, 2 bad input or usage, 1 anything else. */
#ifndef TESSERA_CLI_H
#define TESSERA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

int cli_sim(int argc, char **argv);
int cli_trace(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_calib(int argc, char **argv);
int cli_mem(int argc, char **argv);
int cli_exp(int argc, char **argv);
int cli_db(int argc, char **argv);
int cli_plan_capacity(int argc, char **argv); /* cli_plan.c */
int cli_plan_size(int argc, char **argv);     /* cli_plan_size.c */
int cli_engine(int argc, char **argv); /* engine/cli_engine.c, built with CUDA */

#define EXIT_USAGE 2

/* tessera sim's own (cli_sim_opts.c, cli_summary.c): argv parsed into *c (0, 1 for --help, printed, -1 on a usage
 * error, said); a run's summary as the JSON object --json prints. And a fleet (cli_fleet.c): the
 * replicas of base (--replicas, --fleet) run behind its router, reported. */
struct sim_config;
struct sim_summary;
struct ts_err;
int cli_sim_parse(int argc, char **argv, struct sim_config *c);
/* A run file (cli_runfile.c): where argv holds --config FILE, out->argv is argv[0], the file's options
 * (one a line, each checked by parse, tessera sim's parser, a bad one named by its line) and the rest
 * of argv; else NULL.
 * -1 with err for a file that cannot be read or holds a bad line; a run file holds no option that
 * writes an output (--db, --append, --replace, --gemm-cache). cli_runfile_write writes c as a run
 * file: its preset, then each stored option and parameter that differs from it; -1 with err, nothing
 * written, where a value holds a control character (a line break would begin a line of its own). */
/* --interval P (cli_interval.c): the summary's figures (throughput, mean/p50/p90/p99 latency, energy)
 * over iv->runs replicates of the configuration, each drawing the sources of variance of
 * sim/data/variance.csv that the run has (an eager runtime's host, from run to run and, without
 * --host, from machine to machine; the card's clock; the calibration's held-out error, or the roofline's
 * error where no calibration prices the run; a calibration carried from another card's error;
 * tessera's own engine serving under load against its calibration; a drawn decoder's streams), their central iv->level percent. A source never measured for the run's card is
 * named as such (the interval then says it is not bounded), not drawn. */
struct sim;
enum cli_interval_source { SRC_HOST_RUN, SRC_HOST_MACHINE, SRC_CLOCK, SRC_CALIBRATION, SRC_RUNTIME_RUN, SRC_RUNTIME_MACHINE,
                             SRC_ROOFLINE, SRC_TRANSFER, SRC_LIVE_LOAD, SRC_COUNT };
#define CLI_INTERVAL_FIGURES 6
struct cli_interval {
    int level, runs;                 /* set by the caller */
    double sigma[SRC_COUNT];         /* each source's spread (the log of a speed's factor) */
    char record[SRC_COUNT][64];      /* and the record it was measured in */
    bool used[SRC_COUNT], decode;    /* the sources this run has */
    bool carried[SRC_COUNT];         /* measured on another card than the run's (variance.csv's '*' row) */
    bool unmeasured[SRC_COUNT];      /* never measured for the run's card ('-'; a fleet: some replica's):
                                      * named, not drawn */
    bool drawn[SRC_COUNT];           /* drawn (a fleet: by some replica) */
    double lo[CLI_INTERVAL_FIGURES], hi[CLI_INTERVAL_FIGURES];
    /* optional, for figures of a caller's own (tessera plan's robust verdict): each, a single
     * instance's replicate before it runs (ran false) and after (true); each_fleet, a fleet's
     * replicate's fleet summary once it ran */
    void (*each)(void *ctx, struct sim *s, bool ran);
    void (*each_fleet)(void *ctx, const struct sim_summary *fleet);
    void *each_ctx;
};
struct sim_setup;
struct json_t;
const char *cli_interval_source_name(int k);
int cli_interval_run(const struct sim_config *base, const struct sim_setup *setup, struct cli_interval *iv,
                     struct ts_err *err);
struct fleet_opts;
int cli_interval_fleet(const struct sim_config *workload, const struct sim_config *cfg, int n,
                       const struct fleet_opts *o, struct cli_interval *iv, struct ts_err *err);
void cli_interval_print(const struct cli_interval *iv, const struct sim_summary *m, FILE *f);
void cli_interval_json(const struct cli_interval *iv, struct json_t *o);
struct db_out;
/* The interval as --json gives it, stored beside the run's summary (the database's interval_json). */
void cli_interval_to_db(const struct cli_interval *iv, struct db_out *out);
typedef int (*cli_parse_fn)(int argc, char **argv, struct sim_config *c);
/* argv with a run file's options in place of --config FILE: argv[1 .. 1 + owned) are the file's (held
 * until cli_args_free), the rest argv's own. */
struct cli_args {
    int argc;
    char **argv; /* NULL: argv held no --config */
    int owned;
};
/* (resolve: the option an argument names as the parser resolves it, abbreviations too: cli_sim_option) */
typedef const char *(*cli_resolve_fn)(const char *word);
int cli_runfile_expand(int argc, char **argv, struct cli_args *out, cli_parse_fn parse, cli_resolve_fn resolve,
                       struct ts_err *err);
void cli_args_free(struct cli_args *a);
int cli_runfile_write(const struct sim_config *c, FILE *f, struct ts_err *err);
/* The name of the tessera sim option that argument `word` (--NAME or --NAME=VALUE) gives, as the
 * parser resolves it: its exact name, else the one option it abbreviates; NULL where it gives none
 * (not an option, unknown, or an ambiguous abbreviation, which the parser refuses). */
const char *cli_sim_option(const char *word);
struct json_t *cli_summary_json(const struct sim_config *c, const struct sim_summary *m);
/* The summary's beyond line, where steps were priced past the measured range (--extrapolate). */
void cli_print_beyond(const struct sim_summary *m);
/* The summary's prompt cache line (--prompt-cache), where its prefills ran with one. */
void cli_print_prompt_cache(const struct sim_summary *m);
/* The summary's overloaded line (sim_overload_rule), where it is: what the run is ("configuration",
 * "fleet") named in it. */
void cli_print_overload(const struct sim_summary *m, const char *what);
/* The run's largest step against vLLM's DiffusionGemma sampler memory, where it was judged (sim.h). */
void cli_print_sampler(const struct sim_summary *m);
/* The summary's latency line: over the finished requests, said so where some were rejected. */
void cli_print_latency(const struct sim_summary *m);
/* The run's load in words (its requests, and their rate or trace, arrivals and lengths): into buf. */
const char *cli_load_text(const struct sim_config *c, const struct sim_summary *m, char *buf, size_t len);
/* Prints o compactly on a line (its reals to 10 digits), and releases it. */
void cli_print_json(struct json_t *o);
/* The run's summary as tessera sim prints it; the reasons its requests were rejected, each with how
 * many and what admits them, a line each after indent (cli_summary.c); the cost model that priced
 * it in words, into buf (cli_sim_opts.c). */
struct sim;
struct sim_setup;
void cli_print_summary(const struct sim_config *c, const struct sim_setup *setup, const struct sim_summary *m);
void cli_reject_lines(const struct sim *s, const char *indent, FILE *to);
const char *cli_cost_text(const struct sim_config *c, char *buf, size_t len);
int cli_fleet(const struct sim_config *base, int argc, char **argv);
/* A fleet as cli_fleet makes it from base (its --replicas, or its --fleet FILE's groups, each line's
 * options over argv's) with its options (router, autoscaler, disaggregation, load control), checked:
 * 0, or EXIT_USAGE said on stderr, each message headed by cmd ("tessera sim"). *cfg is the caller's
 * to free. */
struct fleet_opts;
int cli_fleet_build(const struct sim_config *base, int argc, char **argv, struct sim_config **cfg, int *n,
                    struct fleet_opts *o, const char *cmd);
/* "8 x llada-8b on h100 (dllm-serve), 16 x ..." of the fleet's consecutive equal replicas. */
void cli_fleet_describe(const struct sim_config *cfg, int n, char *buf, size_t len);

/* What the parsers share (cli_common.c). Each error is said on stderr and returns EXIT_USAGE. */
/* "tessera CMD: unknown option 'ARG' (did you mean NEAR?)": NEAR the nearest of names[0..n)
 * (param_nearest), left out where none is near. */
int cli_unknown_option(const char *cmd, const char *arg, const char *const *names, int n);
/* The same, the valid options a space-separated list ("--gpu --out"). */
int cli_unknown_in_list(const char *cmd, const char *arg, const char *list);
/* After getopt_long returned ret ('?' or ':', its optstring starting with ':' and opterr 0): the
 * unknown option, with the nearest of o's, or the option missing its value. */
struct option;
int cli_getopt_error(const char *cmd, int ret, char **argv, const struct option *o);
/* Whether argv[1..argc) asks for --help (or -h) before any "--". */
bool cli_help_asked(int argc, char **argv);
/* A file a command writes (PATH, "-" for stdout): refused where it holds something unless force. */
int cli_check_out_file(const char *cmd, const char *path, bool force);
/* The lines of the open text file f (path names it in messages), each given to fn with its number,
 * its newline and any '#' comment cut off: a UTF-8 byte-order mark it begins with is skipped and said
 * on stderr; a line longer than CLI_LINE_MAX characters or holding a NUL byte stops it with err,
 * naming the line, as does fn's nonzero return (its err as fn set it). 0, or -1. */
#define CLI_LINE_MAX 4095
struct ts_err;
typedef int (*cli_line_fn)(void *ctx, const char *path, int line, char *text, struct ts_err *err);
int cli_text_lines(FILE *f, const char *path, cli_line_fn fn, void *ctx, struct ts_err *err);
/* word for a POSIX shell: between single quotes, each of its own written '\'' (any byte else as it is). */
void cli_shell_quote(FILE *to, const char *word);

#endif
