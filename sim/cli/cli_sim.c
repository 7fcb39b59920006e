/*
 * cli_sim.c: `tessera sim`: its options parsed (cli_sim_opts.c), a fleet handed to cli_fleet.c, one run
 * simulated or run live, its summary printed (cli_summary.c) and stored.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "calib.h"
#include "cli.h"
#include "cost.h"
#include "model.h"
#include "engine_load.h"
#include "decode.h"
#include "eng_ext_decl.h"
#include "setup.h"
#include "planner.h"
#include "presets.h"
#include "sim.h"

static int live_tp(struct sim_config *c, int argc, char **argv)
{
    const char *rank = getenv("TESSERA_TP_RANK");
    if (getenv("TESSERA_TP_SIZE")) {
        if (!rank || strcmp(rank, "0") != 0) {
            c->db[0] = '\0';
            c->db_mode = 0;
            c->progress = false;
            c->quiet = true;
        }
        return -1;
    }
    struct ts_err err;
    struct sim *s = sim_create(c, &err); /* refused at start, with the reason, before any GPU work */
    if (!s) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        return EXIT_USAGE;
    }
    sim_destroy(s);
    int (*launch)(int, int, char **);
    *(void **)&launch = engine_symbol("eng_tp_launch", &err);
    if (!launch) {
        fprintf(stderr, "tessera sim: --executor gpu --tp %d: %s\n", c->tp, err.msg);
        return EXIT_USAGE;
    }
    return launch(c->tp, argc, argv);
}

/* Whether a live run (--executor gpu) of c is refused, said on stderr: its policy, model or decoder
 * needing what the engine does not run, or an interval asked of it. */
static bool live_refused(const struct sim_config *c, const struct sim_setup *setup)
{
    const struct policy_ops *po = setup->policy;
    char needs[512];
    struct ts_err err;
    struct model_cfg m;
    const char *lacks = model_resolve(c->model, &m, &err) == 0 ? model_engine_lacks(&m) : NULL;
    if (eng_ext_refused(po->engine, ENG_EXT_LIVE, needs, sizeof needs))
        fprintf(stderr, "tessera sim: --executor gpu: policy %s needs %s; price it with the cost model (--executor "
                        "model)\n", po->name, needs);
    else if (lacks)
        fprintf(stderr, "tessera sim: --executor gpu: model %s has %s, which the CUDA engine does not run; "
                        "price it with the cost model (--executor model)\n", m.name, lacks);
    else if (setup->impl.self_cond != SELF_COND_NONE)
        fprintf(stderr, "tessera sim: --executor gpu: --impl %s prices a self-conditioning product the CUDA engine "
                        "does not run; run the schedule with --impl tessera\n", setup->impl.name);
    else if (strncmp(c->decode, "spiffy:", 7) == 0 || strncmp(c->decode, "wino:", 5) == 0)
        fprintf(stderr, "tessera sim: --executor gpu: --decode %s verifies %s under a mask of its own "
                        "(in place of its block), which the CUDA engine does not run; price it with the cost "
                        "model (--executor model)\n", c->decode, c->decode[0] == 's' ? "draft blocks" : "a shadow block");
    else if (c->interval > 0)
        fprintf(stderr, "tessera sim: --interval draws the sources of a prediction's variance; a live run "
                        "(--executor gpu) measures instead\n");
    else
        return false;
    return true;
}

/* --interval's replicates (cli_interval.c), their interval stored beside the summary as --json gives it
 * where the run goes to a database; -1 where a replicate fails, said on stderr. */
static int run_interval(const struct sim_config *c, const struct sim_setup *setup, struct cli_interval *iv,
                        struct db_out *out)
{
    struct ts_err err;
    if (cli_interval_run(c, setup, iv, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        return -1;
    }
    if (out)
        cli_interval_to_db(iv, out);
    return 0;
}

static int sim_command(int argc, char **argv);

/* A run file is read once, here: a fleet's replica groups and a live run's children parse its options
 * from the expanded command line. */
int cli_sim(int argc, char **argv)
{
    struct ts_err why;
    struct cli_args e;
    if (cli_runfile_expand(argc, argv, &e, cli_sim_parse, cli_sim_option, &why)) {
        fprintf(stderr, "tessera sim: %s\n", why.msg);
        return EXIT_USAGE;
    }
    if (!e.argv)
        return sim_command(argc, argv);
    const int rc = sim_command(e.argc, e.argv);
    cli_args_free(&e);
    return rc;
}

static int sim_command(int argc, char **argv)
{
    struct sim_config c;
    int rc = cli_sim_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? 0 : EXIT_USAGE;
    if (c.replicas > 1 || c.fleet[0])
        return cli_fleet(&c, argc, argv);
    if (c.disagg[0] || c.autoscale[0] || c.load_control[0]) {
        fprintf(stderr, "tessera sim: %s: a fleet's option (--replicas N or --fleet FILE)\n",
                c.disagg[0] ? "--disagg" : c.autoscale[0] ? "--autoscale" : "--load-control");
        return EXIT_USAGE;
    }
    struct ts_err err;
    struct sim_setup setup;
    if (sim_config_validate(&c, &setup, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (c.executor == EXECUTOR_GPU && live_refused(&c, &setup))
        return EXIT_USAGE;
    if (c.executor == EXECUTOR_GPU && c.tp > 1 && (rc = live_tp(&c, argc, argv)) >= 0)
        return rc;
    if (c.db_mode && !c.db[0]) {
        fprintf(stderr, "tessera sim: --append and --replace say what --db does with the runs it holds; no --db given\n");
        return EXIT_USAGE;
    }
    if (!c.db[0]) /* no database: no step rows to keep (they would only grow in memory) */
        c.no_steps = true;
    struct db_out *out = NULL;
    if (c.db[0] && (db_check(c.db, (enum db_mode)c.db_mode, &err) || /* before any work */
                    db_out_open(c.db, (enum db_mode)c.db_mode, &out, &err))) {
        fprintf(stderr, "tessera sim: --db %s\n", err.msg);
        return EXIT_USAGE;
    }
    struct sim *s = sim_create(&c, &err);
    if (!s) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        db_out_close(out);
        return EXIT_USAGE;
    }
    if (out)
        sim_stream_steps(s, out); /* step rows leave memory as the run makes them */
    const struct preset *p = c.system[0] ? preset_find(c.system) : NULL;
    if (p && p->note && !c.quiet)
        fprintf(stderr, "tessera sim: note: --system %s: %s\n", p->name, p->note);
    struct sim_executor ex = {0};
    engine_live_close_fn live_close = NULL;
    if (c.executor == EXECUTOR_GPU) {
        engine_live_open_fn live_open;
        *(void **)&live_open = engine_symbol("eng_live_open", &err);
        if (live_open)
            *(void **)&live_close = engine_symbol("eng_live_close", &err);
        if (!live_open || !live_close || live_open(s, c.live_mem_gib, &ex, &err)) {
            fprintf(stderr, "tessera sim: --executor gpu: %s\n", err.msg);
            sim_destroy(s);
            db_out_close(out);
            return EXIT_USAGE;
        }
        sim_set_executor(s, &ex);
    }
    int run_rc = sim_run(s, &err);
    if (live_close)
        live_close(&ex);
    if (run_rc) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        sim_destroy(s);
        db_out_close(out);
        return EXIT_USAGE;
    }
    struct sim_summary m;
    sim_get_summary(s, &m);
    if (m.num_requests > 0 && m.num_rejected == m.num_requests) { /* nothing ran: no run to keep */
        char why[1024];
        sim_reject_reasons(s, why, sizeof why);
        fprintf(stderr, "tessera sim: every one of the %lld requests was rejected (%s)\n", (long long)m.num_requests, why);
        cli_reject_lines(s, "  ", stderr);
        sim_destroy(s);
        db_out_close(out);
        return EXIT_USAGE;
    }
    struct cli_interval iv = {.level = c.interval, .runs = c.interval_runs};
    if (c.interval > 0 && run_interval(&c, &setup, &iv, out)) {
        sim_destroy(s);
        db_out_close(out);
        return EXIT_USAGE;
    }
    rc = 0;
    if (out && db_out_commit(out, s, &err)) {
        fprintf(stderr, "tessera sim: %s\n", err.msg);
        rc = 1;
    }
    if (c.json) {
        json_t *o = cli_summary_json(sim_config(s), &m);
        if (c.interval > 0)
            cli_interval_json(&iv, o);
        cli_print_json(o);
    } else {
        cli_print_summary(sim_config(s), sim_setup_of(s), &m);
        if (c.interval > 0)
            cli_interval_print(&iv, &m, stdout);
        if (m.num_rejected)
            cli_reject_lines(s, "  rejected      ", stdout);
    }
    sim_destroy(s);
    db_out_close(out);
    return rc;
}
