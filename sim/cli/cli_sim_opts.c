/*
 * cli_sim_opts.c: `tessera sim`'s options (cli.h): config.c's table and the parts' parameters as one getopt table,
 * --help, and the parse (twice: the first pass finds --system so that the preset is applied first
 * and every explicit option overrides it); the run's cost model in words
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
#include "parts.h"
#include "planner.h"
#include "presets.h"
#include "setup.h"
#include "sim.h"

enum { O_HELP = 1024, O_PARAM /* a policy's or scheduler's parameter, found by its option's name */ };

/* The getopt table: every option of config.c's table (its index + 256), then the policies' and
 * schedulers' parameters, each name once (parts.h), and --help. */
struct opt_table {
    struct option o[256];
    int n;
};

static void build_opts(struct opt_table *t)
{
    t->n = 0;
    for (int i = 0; i < cfg_num_options; i++) {
        const enum cfg_kind k = cfg_options[i].kind;
        const int has = k == CFG_FLAG || k == CFG_SET ? no_argument : required_argument;
        t->o[t->n++] = (struct option){cfg_options[i].name, has, 0, 256 + i};
    }
    struct part p;
    for (int i = 0; parts_get(i, &p); i++)
        for (int k = 0; k < p.num_params; k++) {
            const char *name = p.params[k].name;
            bool have = false;
            for (int j = 0; j < t->n && !have; j++)
                have = strcmp(t->o[j].name, name) == 0;
            TS_ASSERT(have || t->n < (int)TS_ARRAY_LEN(t->o) - 2);
            if (!have)
                t->o[t->n++] = (struct option){name, required_argument, 0, O_PARAM};
        }
    t->o[t->n++] = (struct option){"help", no_argument, 0, O_HELP};
    t->o[t->n] = (struct option){0, 0, 0, 0};
}

/* The option of table t that argument `word` gives (cli_sim_option), as getopt_long resolves it: an
 * exact name, else the first option it abbreviates, unless another it abbreviates sets something
 * else (has_arg, flag, val: the parameters share theirs), which makes it ambiguous. */
static const char *resolve(const struct opt_table *t, const char *word)
{
    if (strncmp(word, "--", 2) != 0 || word[2] == '\0' || word[2] == '=')
        return NULL;
    const char *name = word + 2;
    const size_t len = strcspn(name, "=");
    const struct option *found = NULL;
    bool ambiguous = false;
    for (int i = 0; i < t->n; i++) {
        const struct option *o = &t->o[i];
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return o->name;
        if (!found)
            found = o;
        else if (found->has_arg != o->has_arg || found->flag != o->flag || found->val != o->val)
            ambiguous = true;
    }
    return found && !ambiguous ? found->name : NULL;
}

const char *cli_sim_option(const char *word)
{
    struct opt_table t;
    build_opts(&t);
    return resolve(&t, word);
}

/* Prints `lhs` in a 24-column margin and `text` wrapped to 104 columns beside it (a longer lhs: the
 * text after it where its first word fits, the rest at the margin). */
static void print_wrapped(FILE *f, const char *lhs, const char *text)
{
    enum { MARGIN = 27, WIDTH = 104 };
    int col = MARGIN;
    bool after = false; /* the line holds something the next word is spaced from */
    if (strlen(lhs) > MARGIN - 3)
        col = fprintf(f, "  %s", lhs), after = true;
    else
        fprintf(f, "  %-24s ", lhs);
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        const int len = (int)strcspn(p, " ");
        if (len == 0)
            break;
        if (after && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", MARGIN, "");
            col = MARGIN, after = false;
        }
        col += fprintf(f, "%s%.*s", after ? " " : "", len, p);
        after = true;
        p += len;
    }
    fputc('\n', f);
}

/* One option's --help line(s): --name ARG (and the option listed with it), its help, the names of
 * its table, its default. */
static void option_usage(FILE *f, const struct cfg_option *o, const struct sim_config *d,
                         const struct cfg_option *with)
{
    char lhs[96], text[2048], def[CFG_PATH];
    if (with) {
        snprintf(lhs, sizeof lhs, "--%s, --%s", o->name, with->name);
    } else if (o->kind == CFG_CHOICE && !o->arg) {
        snprintf(lhs, sizeof lhs, "--%s ", o->name);
        for (int i = 0; i < o->num_choices; i++)
            snprintf(lhs + strlen(lhs), sizeof lhs - strlen(lhs), "%s%s", i ? "|" : "", o->choices[i]);
    } else {
        snprintf(lhs, sizeof lhs, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    }
    snprintf(text, sizeof text, "%s", o->help);
    for (int i = 0; o->kind == CFG_CHOICE && o->arg && i < o->num_choices; i++) /* (its choices after its help) */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? "|" : ": ", o->choices[i]);
    for (int i = 0; o->names && o->names(i); i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), " %s", o->names(i));
    const bool flag = o->kind == CFG_FLAG || o->kind == CFG_SET;
    const char *shown = o->shown ? o->shown : flag ? "" : cfg_option_text(o, d, def, sizeof def);
    if (shown[0])
        snprintf(text + strlen(text), sizeof text - strlen(text), " [%s]", shown);
    print_wrapped(f, lhs, text);
}

/* Whether two entries of a kind declare the same parameters, with the same defaults. */
static bool same_params(const struct part *a, const struct part *b)
{
    if (strcmp(a->kind, b->kind) != 0 || a->num_params != b->num_params)
        return false;
    for (int k = 0; k < a->num_params; k++)
        if (strcmp(a->params[k].name, b->params[k].name) != 0 || a->params[k].def != b->params[k].def)
            return false;
    return true;
}

/* The parameters, a line an entry that has any (one line for entries in a row that declare the same):
 * its name, then each --NAME with its argument and default, kept whole when the line wraps (`tessera
 * list policies` and `list schedulers` give their help). */
static void params_usage(FILE *f)
{
    enum { MARGIN = 27, WIDTH = 104 };
    struct part p, next;
    for (int i = 0; parts_get(i, &p); i++) {
        if (p.num_params == 0)
            continue;
        char lhs[64], def[32];
        int n = snprintf(lhs, sizeof lhs, "%s", p.name);
        for (; parts_get(i + 1, &next) && same_params(&p, &next); i++)
            n += snprintf(lhs + n, sizeof lhs - (size_t)n, ", %s", next.name);
        snprintf(lhs + n, sizeof lhs - (size_t)n, " (%s%s)", p.kind, strchr(lhs, ',') ? "s" : "");
        fprintf(f, "  %-24s", lhs);
        int col = MARGIN - 1;
        for (int k = 0; k < p.num_params; k++) {
            const struct param_spec *s = &p.params[k];
            char item[128];
            const int len = snprintf(item, sizeof item, "--%s %s [%s]", s->name,
                                     s->choices ? "NAME" : s->integer || s->odd ? "N" : "X",
                                     param_text(s, s->def, def, sizeof def));
            if (k > 0 && col + 1 + len > WIDTH)
                col = fprintf(f, "\n%*s", MARGIN - 1, "") - 1;
            col += fprintf(f, " %s", item);
        }
        fputc('\n', f);
    }
}

static void sim_usage(FILE *f)
{
    fprintf(f,
"usage: tessera sim [options]\n"
"\n"
"Replays a request trace through a dLLM denoising policy, a scheduler and a cost model, and prints a\n"
"summary. Every option has a default: alone, 200 ShareGPT-shaped requests at 1 req/s on LLaDA-8B /\n"
"H200 (dual cache, phase scheduler). --config FILE: options a line (rps 2); tessera db show writes one.\n");
    struct sim_config d;
    sim_config_defaults(&d);
    const char *group = NULL;
    for (int i = 0; i < cfg_num_options; i++) {
        const struct cfg_option *o = &cfg_options[i];
        if (group != o->group) {
            if (group && strcmp(group, "denoising") == 0) {
                fprintf(f, "\npolicy and scheduler parameters (each one's help: tessera list policies, list schedulers):\n");
                params_usage(f);
            }
            fprintf(f, "\n%s:\n", o->group);
            group = o->group;
        }
        if (o->help)
            option_usage(f, o, &d, i + 1 < cfg_num_options && !cfg_options[i + 1].help ? &cfg_options[i + 1] : NULL);
    }
    fprintf(f,
"\n"
"summary: finished, completed; rejected, refused on arrival; preemptions, evicted for memory;\n"
"  stalls, request-steps sat out for the token budget; makespan, first arrival to last finish;\n"
"  latency, arrival to finish; first block, to its first; queueing, to admission; cost, the pricing.\n"
"Bad input exits with status 2, a message naming file, line and field, and no database file.\n"
"With --db, status 0 means the run is in the database: "
"SIGINT or SIGTERM before its commit rolls it\n"
"back (status 130 or 143), after it exits 0.\n");
}

/* Applies one option of the table (the second pass: --system was applied by the first). Two
 * options that set a mode to different values (--append and --replace) are refused together; of
 * two that set a switch (--progress, --no-progress) the last wins. */
static int apply_opt(const struct cfg_option *o, const char *value, struct sim_config *c, const struct cfg_option **set_by)
{
    if (strcmp(o->name, "system") == 0)
        return 0;
    if (o->kind == CFG_SET && o->size != sizeof(bool)) {
        for (int i = 0; i < cfg_num_options; i++) {
            const struct cfg_option *p = set_by[i];
            if (p && p != o && p->offset == o->offset && p->value != o->value) {
                fprintf(stderr, "tessera sim: --%s and --%s: one or the other\n", p->name, o->name);
                return -1;
            }
        }
        set_by[o - cfg_options] = o;
    }
    struct ts_err err;
    if (cfg_option_set(o, value, c, &err) == 0)
        return 0;
    fprintf(stderr, "tessera sim: %s\n", err.msg);
    return -1;
}

/* Whether argv gives the option --name (of table t), in full or abbreviated. */
static bool given(const struct opt_table *t, int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *o = resolve(t, argv[i]);
        if (o && strcmp(o, name) == 0)
            return true;
    }
    return false;
}

/* The path of the shipped calibration of c's model and implementation measured on gpu ("" where
 * the model or implementation is unknown). */
static void shipped_calib(const struct sim_config *c, const char *gpu, char *path, size_t len)
{
    struct model_cfg m;
    struct impl_profile im;
    struct ts_err err;
    path[0] = '\0';
    if (model_resolve(c->model, &m, &err) == 0 && impl_resolve(c->impl, &im, &err) == 0)
        calib_shipped_path(c->datadir, gpu, m.name, im.calib_base[0] ? im.calib_base : im.name, path, len);
}

/* --system without --cost: the cost model its paper experiments price it with (presets.h): the
 * calibration of its model and implementation shipped for the GPU, else one shipped for a GPU of
 * PRESET_CALIB_FROM carried over, else the roofline. */
static void system_cost(struct sim_config *c)
{
    const struct preset *p = preset_find(c->system);
    if (!p || strcmp(p->cost, "calibrated") != 0 || c->tp > 1)
        return;
    static const char *const from[] = PRESET_CALIB_FROM;
    char path[CFG_PATH + 256];
    for (int i = -1; i < (int)TS_ARRAY_LEN(from); i++) {
        shipped_calib(c, i < 0 ? c->gpu : from[i], path, sizeof path);
        if (path[0] && access(path, R_OK) == 0) {
            snprintf(c->cost, sizeof c->cost, "calibrated");
            snprintf(c->calib_from, sizeof c->calib_from, "%s", i < 0 || ts_name_eq(from[i], c->gpu) ? "" : from[i]);
            c->extrapolate = true; /* as the experiments price it: steps beyond the profile too */
            return;
        }
    }
}

int cli_sim_parse(int argc, char **argv, struct sim_config *c)
{
    struct ts_err why;
    struct cli_args e;
    if (cli_runfile_expand(argc, argv, &e, cli_sim_parse, cli_sim_option, &why)) {
        fprintf(stderr, "tessera sim: %s\n", why.msg);
        return -1;
    }
    if (e.argv) { /* the run file's options, then the command line's over them */
        const int rc = cli_sim_parse(e.argc, e.argv, c);
        cli_args_free(&e);
        return rc;
    }
    sim_config_defaults(c);
    c->progress = isatty(STDERR_FILENO);
    struct opt_table t;
    build_opts(&t);
    for (int i = 1; i < argc; i++) { /* first pass: the preset (--system, or what abbreviates it) */
        const char *o = resolve(&t, argv[i]), *eq = strchr(argv[i], '=');
        const char *v = !o || strcmp(o, "system") != 0 ? NULL : eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        if (v) {
            struct ts_err err;
            if (preset_apply(v, c, &err)) {
                fprintf(stderr, "tessera sim: %s\n", err.msg);
                return -1;
            }
        }
    }
    optind = 1;
    opterr = 0;
    int o, idx;
    const struct cfg_option *set_by[256] = {0};
    while ((o = getopt_long(argc, argv, ":h", t.o, &idx)) != -1) {
        if (o == O_HELP || o == 'h') {
            sim_usage(stdout);
            return 1;
        }
        if (o == '?' || o == ':') {
            cli_getopt_error("sim", o, argv, t.o);
            return -1;
        }
        if (optarg && optarg[0] == '-' && optarg[1] == '-') { /* a missing value: the next option taken for it */
            fprintf(stderr, "tessera sim: --%s: missing value (the next argument is the option %s)\n", t.o[idx].name,
                    optarg);
            return -1;
        }
        if (o == O_PARAM) {
            struct ts_err err;
            if (param_values_set(&c->params, t.o[idx].name, optarg, &err)) {
                fprintf(stderr, "tessera sim: %s\n", err.msg);
                return -1;
            }
        } else if (apply_opt(&cfg_options[o - 256], optarg, c, set_by)) {
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera sim: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (!given(&t, argc, argv, "gen-len") && strcmp(c->trace, "synthetic") != 0)
        c->gen_len = 0; /* a trace file's output lengths are the requests' unless --gen-len says */
    if (c->system[0] && !given(&t, argc, argv, "cost") && !given(&t, argc, argv, "calib") &&
        !given(&t, argc, argv, "calib-from"))
        system_cost(c);
    return 0;
}

/* The cost model that priced the run, as the summary names it: "roofline (tessera profile)", or
 * "calibrated, FILE[ carried to GPU]" (the steps priced past its range: the summary's beyond line). */
const char *cli_cost_text(const struct sim_config *c, char *buf, size_t len)
{
    char path[CFG_PATH + 256];
    if (strcmp(c->cost, "calibrated") != 0) {
        snprintf(buf, len, "%s (%s profile)", c->cost, c->impl);
    } else if (c->calib[0]) {
        snprintf(buf, len, "calibrated, %s", c->calib);
    } else {
        shipped_calib(c, c->calib_from[0] ? c->calib_from : c->gpu, path, sizeof path);
        const char *shown = strstr(path, "/sim/data/") ? strstr(path, "/sim/data/") + 1 : path;
        snprintf(buf, len, "calibrated, %s%s%s", shown, c->calib_from[0] ? " carried to " : "",
                 c->calib_from[0] ? c->gpu : "");
    }
    /* an eager runtime's host, which issues its GPU work: the machine it was measured on */
    struct impl_profile im;
    struct calib_host h;
    struct ts_err err;
    const char *host = c->host[0] ? c->host : NULL;
    if (impl_resolve(c->impl, &im, &err) == 0 && im.host_ref[0]) {
        if (!host && strcmp(c->cost, "calibrated") != 0)
            host = im.host_ref; /* (the roofline prices its launches as that host issued them) */
        if (host && calib_host_load(host, &h, &err) == 0)
            snprintf(buf + strlen(buf), len - strlen(buf), "; host %s (%s)%s", host, h.device,
                     c->host[0] ? "" : ", another machine's: tessera calib host --probe measures this one's");
        else if (!host)
            snprintf(buf + strlen(buf), len - strlen(buf), "; host as calibrated, on the profiling machine "
                     "(tessera calib host --probe measures this one's, --host takes it)");
    }
    struct model_cfg m;
    if (impl_resolve(c->impl, &im, &err) == 0 && im.rounds && sim_model_resolve(c, &m, &err) == 0) {
        struct rounds_source src;
        sim_rounds_source(c, m.name, &im, &src);
        const char *shown = strstr(src.path, "/sim/data/") ? strstr(src.path, "/sim/data/") + 1 : src.path;
        if (src.use == ROUNDS_HOST_ONLY && src.bf16_only)
            snprintf(buf + strlen(buf), len - strlen(buf), "; %s's rounds ran bf16 weights: the forwards priced as %s, "
                     "the host's work between rounds from them: %s", im.name, im.calib_base, shown);
        else if (src.use == ROUNDS_WHOLE)
            snprintf(buf + strlen(buf), len - strlen(buf), "; each step %s's own round, measured whole: %s", im.name,
                     shown);
        else if (src.use == ROUNDS_HOST_ONLY)
            snprintf(buf + strlen(buf), len - strlen(buf), "; no %s rounds measured for %s on %s: the forwards priced "
                     "as %s, the host's work between rounds as measured beside %s (--rounds-host: %s)", im.name, m.name,
                     c->gpu, im.calib_base, c->rounds_host, shown);
        else
            snprintf(buf + strlen(buf), len - strlen(buf), "; no %s rounds measured for %s on %s%s: priced as %s",
                     im.name, m.name, c->gpu, c->tp > 1 || c->ep > 1 ? " on one GPU" : "", im.calib_base);
    }

    return buf;
}
