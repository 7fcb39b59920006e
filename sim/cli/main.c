/* main.c: `tessera <command> ...`, dispatch to the subcommands. */
#define _DEFAULT_SOURCE
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "cli.h"
#include "db.h"
#include "engine_load.h"
#include "params.h"


static void usage(FILE *f)
{
    fprintf(f,
            "tessera %s: a simulator for serving diffusion LLMs\n"
            "\n"
            "usage: tessera <command> [options]\n"
            "\n"
            "commands:\n"
            "  sim      replay a trace through a policy, scheduler and cost model; print a summary\n"
            "  trace    info FILE | gen ... | fit FILE: inspect, generate and fit traces\n"
            "  mem      plan | lmax: activation-memory planners and the longest context that fits\n"
            "  calib    import | merge | fit | show | eval | transfer | host | clock | price: the\n"
            "           calibrated cost model\n"
            "  exp      list | run NAME OUT | run papers OUT | sweep GRID OUT: the experiments of\n"
            "           experiments/, the papers' figures, grids of runs\n"
            "  db       merge OUT IN... | check FILE... | export DB TABLE | show DB RUN: run\n"
            "           databases merged, checked, their tables as CSV or JSON, a run as a run file\n"
            "  plan     capacity | size: the highest rate a configuration serves within an SLO, and\n"
            "           the cheapest configuration of a space that serves a load\n"
            "  list     models | gpus | policies | schedulers | planners | costs | systems | impls |\n"
            "           decode | calibrations | hosts: the built-in tables\n"
            "  engine   replay | profile | generate: the CUDA engine (%s)\n"
            "\n"
            "Every command takes --help. `tessera sim` alone runs the default scenario.\n",
            ts_version(),
#ifdef TS_HAVE_CUDA
            "built in"
#else
            "not built: nvcc was not found at build time"
#endif
    );
}

/* `tessera plan capacity | size` (cli_plan.c, cli_plan_size.c). */
static int run_plan(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "capacity") == 0)
        return cli_plan_capacity(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "size") == 0)
        return cli_plan_size(argc - 1, argv + 1);
    const bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc >= 2 && !help)
        fprintf(stderr, "tessera plan: unknown subcommand '%s' (capacity, size)\n", argv[1]);
    fprintf(help ? stdout : stderr,
            "usage: tessera plan capacity | size [options]\n"
            "\n"
            "capacity  the highest rate a configuration serves within an SLO, point and robust\n"
            "size      the cheapest candidate of a space that serves a load within an SLO (and a\n"
            "          quality floor): its replicas, cost per hour and per million tokens\n"
            "\n"
            "Each takes --help. See sim/docs/plan.md.\n");
    return help ? 0 : EXIT_USAGE;
}

/* The engine is loaded only for `tessera engine` (engine_load.h). */
static int run_engine(int argc, char **argv)
{
    struct ts_err err;
    engine_cli_fn entry;
    *(void **)&entry = engine_symbol("cli_engine", &err);
    if (!entry && cli_help_asked(argc, argv)) { /* the engine's own usage lives in the engine */
        printf("usage: tessera engine replay | profile | generate [options]\n"
               "\n"
               "replay    a simulated run's steps executed on the GPU, measured step by step\n"
               "profile   the grid of steps a calibration is fitted to (tessera calib import)\n"
               "generate  a model's weights run on a prompt: its text, tokens a forward and time\n"
               "\n"
               "The engine is not available in this tessera (%s): each subcommand's options are\n"
               "printed by a tessera built with CUDA (tessera engine SUBCOMMAND --help). Beside it,\n"
               "such a build has the engine's GPU test suite (build/tests/gpu/check_engine, make\n"
               "check-gpu) and its benchmark (build/engine_bench, make bench-engine).\n", err.msg);
        return 0;
    }
    if (!entry) {
        fprintf(stderr, "tessera engine: %s\n", err.msg);
        return EXIT_USAGE;
    }
    return entry(argc, argv);
}

int main(int argc, char **argv)
{
    /* GSL's default handler aborts; tessera checks every GSL status itself and reports it */
    gsl_set_error_handler_off();
    /* every SQLite connection of the process guarded, the engine's and the calibration's among them:
     * a database is a file users pass to each other, never code */
    if (db_guard_process()) {
        fprintf(stderr, "tessera: cannot set SQLite's guards\n");
        return 1;
    }
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "sim") == 0)
        return cli_sim(argc - 1, argv + 1);
    if (strcmp(cmd, "trace") == 0)
        return cli_trace(argc - 1, argv + 1);
    if (strcmp(cmd, "mem") == 0)
        return cli_mem(argc - 1, argv + 1);
    if (strcmp(cmd, "exp") == 0)
        return cli_exp(argc - 1, argv + 1);
    if (strcmp(cmd, "calib") == 0)
        return cli_calib(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0)
        return cli_list(argc - 1, argv + 1);
    if (strcmp(cmd, "db") == 0)
        return cli_db(argc - 1, argv + 1);
    if (strcmp(cmd, "plan") == 0)
        return run_plan(argc - 1, argv + 1);
    if (strcmp(cmd, "engine") == 0)
        return run_engine(argc - 1, argv + 1);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("tessera %s\n", ts_version());
        return 0;
    }
    static const char *const commands[] = {"sim", "trace", "mem", "calib", "exp", "db", "plan", "list", "engine"};
    const char *near = param_nearest(cmd, commands, (int)TS_ARRAY_LEN(commands));
    fprintf(stderr, "tessera: unknown command '%s'%s%s%s (commands: sim, trace, mem, calib, exp, db, plan, list, engine)\n",
            cmd, near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    return EXIT_USAGE;
}
