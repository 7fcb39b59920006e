/* main.c: `tessera <command> ...`, dispatch to the subcommands. */
#define _DEFAULT_SOURCE
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "cli.h"
#include "engine_load.h"


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
            "  db       merge OUT IN...: a sweep's run databases made one\n"
            "  list     models | gpus | policies | schedulers | planners | costs | systems | impls |\n"
            "           decode | calibrations | hosts: the built-in tables\n"
            "  engine   check | bench | replay | profile | generate: the CUDA engine (%s)\n"
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

/* The engine is loaded only for `tessera engine` (engine_load.h). */
static int run_engine(int argc, char **argv)
{
    struct ts_err err;
    engine_cli_fn entry;
    *(void **)&entry = engine_symbol("cli_engine", &err);
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
    fprintf(stderr, "tessera: unknown command '%s' (commands: sim, trace, mem, calib, exp, db, list, engine)\n", cmd);
    return EXIT_USAGE;
}
