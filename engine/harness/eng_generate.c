/*
 * eng_generate.c: `tessera engine generate`, a diffusion generation on the GPU with real token ids:
 * the simulator's caching policy driven request by request (eng_gen.h), each step's unmasking decided on the GPU
 * (eng_unmask), the decided tokens fed back as the next step's input. With a checkpoint
 * (--weights) and real prompts it measures a decoder's tokens per forward and its redundancy (rows
 * computed per position decoded); --profile-out writes that TPF as a decode profile the simulator
 * reads (--decode threshold:FILE:NAME). With random weights every confidence is about 1/vocab, so
 * the rules commit one position a step: a timing run.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "eng.h"
#include "eng_gen.h"
#include "gen_ext.h"
#include "kernels.h"
#include "harness.h"
#include "model.h"
#include "eng_ext_decl.h"
#include "policy.h"

/* The parameters of the policies this command drives, and FOCUS's alpha (the engine picks its rows). */
static void policies_help(FILE *f)
{
    fprintf(f, "\nThe policies' parameters (a policy that this command drives, or focus):\n");
    const struct policy_ops *po;
    for (int i = 0; (po = policy_get(i)) != NULL; i++)
        if (strcmp(po->name, GEN_FOCUS) == 0)
            params_help(f, params_find(po->params, po->num_params, GEN_FOCUS_ALPHA), 1, po->name);
        else if (po->num_params > 0 && !policy_drive_lacks(po))
            params_help(f, po->params, po->num_params, po->name);
}

static void generate_usage(FILE *f)
{
    fprintf(f,
"usage: tessera engine generate [--model NAME|config.json] [--weights PATH] [--decoder SPEC]\n"
"                               [--requests N] [--prompt-len P | --prompts FILE] [--gen-len G]\n"
"                               [--block B] [--policy NAME] [--POLICY-PARAMETER V ...] [--block-logits]\n"
"                               [--iter-smooth[=CONT,INIT,GROWTH,DECAY]]\n"
"                               [--prophet OFFSET[,EARLY,MID,LATE]] [--elastic-drift GAMMA[,WINDOW]]\n"
"                               [--d2-rollout P[,K]]\n"
"                               [--mask-id ID] [--seed S]\n"
"                               [--mem-limit GB]\n"
"                               [--profile-out FILE --name NAME] [--ids-out FILE]\n"
"                               [--requests-out FILE]\n"
"                               [the engine's choices: tessera engine --help]\n"
"\n"
"Generates G tokens for each of N requests on the GPU, block by block: each step runs a request's\n"
"current block of B positions and commits some of its masked positions, decided on the GPU from\n"
"each row's argmax and confidence; the committed tokens are the next step's input. Requests advance\n"
"on their own, one step holding each one's.\n"
"\n"
"--model, --requests, --gen-len, --block, --seed, --policy and --block-logits are read and checked as\n"
"tessera sim reads them.\n"
"\n"
"  --model NAME|config.json   the model [llada-8b]; --weights PATH a safetensors checkpoint (a file or\n"
"                             a directory of shards) instead of random weights\n"
"  --decoder SPEC             topk:K (the K most confident masked positions a step), threshold:TAU\n"
"                             (every one at least TAU, and the most confident; Fast-dLLM's),\n"
"                             hierarchical:TAU[,LOW] (dInfer's: each run of masked positions' best\n"
"                             above LOW [0.4], every one above TAU, and the most confident) or\n"
"                             credit:TAU (dInfer's: threshold over logits fused with each position's\n"
"                             credit, an EMA of its top-1 probabilities, in the LM head)\n"
"                             [threshold:0.9]. This is the rule the GPU runs; tessera sim's --decode\n"
"                             is a model of its outcome (such as the profile --profile-out writes)\n"
"  --requests N               sequences [16] (with --prompts: at most N of the file's [all])\n"
"  --prompt-len P             hashed prompt ids of P tokens [256]; --prompts FILE one JSON array of\n"
"                             token ids a line instead (a tokenizer's output)\n"
"  --gen-len G, --block B     tokens to generate [256], a multiple of B [32]\n"
"  --policy NAME              the simulator's caching policy (tessera list policies), its steps'\n"
"                             rows placed at their positions: vanilla (every step the whole\n"
"                             sequence), prefix (Fast-dLLM's prefix cache), dual (Fast-dLLM's dual\n"
"                             cache; its --refresh-interval refreshes every F steps of a block too),\n"
"                             block (the prompt prefilled once, each step the block over the cached\n"
"                             prefix, a finished block's K/V written by the next block's first\n"
"                             step: SDAR's, LLaDA2.0's block diffusion), vicinity (dInfer's: as dual,\n"
"                             but every --refresh-interval steps of a block the whole sequence\n"
"                             again, the others the block and --vicinity positions each side), or\n"
"                             focus (FOCUS's delayed intra-block cache and eviction\n"
"                             over the block policy: layers 0-1 over the block's uncached\n"
"                             positions, the later ones over its decided ones and the K masked ones\n"
"                             the importance delta keeps on the GPU, K = ceil(--focus-alpha x the\n"
"                             mean decodes a step)), or sparsed (SparseD's: vanilla's steps, its\n"
"                             pattern built from a step's own queries and keys and attended by;\n"
"                             blocks a multiple of 64); the summary gives\n"
"                             pass 1's share of top blocks in the prompt, the simulator's\n"
"                             --sparsed-prompt-share); the policies that decide\n"
"                             a step's decodes themselves (but focus), select a sparse cache or\n"
"                             count the block's cached positions run in the simulator only\n"
"                             [dual for a bidirectional model, block for a block-causal one]\n"
"  --POLICY-PARAMETER V       the policy's parameters, as tessera sim takes them (below)\n"
"  --block-logits             a whole-sequence step's logits the current block's rows alone, not\n"
"                             every row's (as tessera sim --block-logits prices it)\n"
"  --iter-smooth[=CONT,INIT,GROWTH,DECAY]\n"
"                             dInfer's IterSmooth with a threshold, hierarchical or credit decoder\n"
"                             (any policy but focus): after a request's n-th step each\n"
"                             position still masked keeps softmax(logits) x the embedding matrix,\n"
"                             which its next step adds, times min(INIT + GROWTH n, CONT), to the\n"
"                             mask token's embedding; step n decides by max(1 - DECAY n, TAU)\n"
"                             [0.3,0.15,0.02,0.02]\n"
"  --prophet OFFSET[,EARLY,MID,LATE]\n"
"                             Prophet's early commit, with --policy vanilla (every position's\n"
"                             logits each step, as its own loop): after each step a request whose\n"
"                             top-2 logit gap, averaged over the 5 answer positions from response\n"
"                             offset OFFSET, reaches its phase's threshold (decoded share below\n"
"                             0.33: EARLY, below 0.67: MID, after: LATE) [7.5,5,2.5] commits every\n"
"                             masked position to the step's argmax. Random weights' gaps are tenths:\n"
"                             the defaults, set for a trained model's, never fire there\n"
"  --elastic-drift GAMMA[,WINDOW]\n"
"                             Elastic-Cache's drift test, measured with --policy vanilla: in every\n"
"                             layer the first WINDOW [16] masked positions track their most-attended\n"
"                             decided position; each step compares the tracked tokens' attention\n"
"                             with their attention from Elastic-Cache's cache (queries and keys as\n"
"                             its schedule last computed them; cosine similarity over the heads,\n"
"                             averaged over keys), and the first layer below GAMMA [0.9] would\n"
"                             start its refresh at the next layer. The generation stays vanilla's;\n"
"                             the steps whose test fires, and from which layer, are reported (the\n"
"                             simulator's --ec-refresh-share and --ec-depth) and the steps' times\n"
"                             include it\n"
"  --d2-rollout P[,K]         d2Cache's attention rollout, measured with --policy vanilla: each step\n"
"                             multiplies its layers' (A + I) / 2, A a layer's attention averaged over\n"
"                             the heads; each position's importance is its column sum. Beside the\n"
"                             positions the step decoded and the K [32] masked ones of the highest\n"
"                             confidence, d2Cache's next step runs the nucleus of the others, whose\n"
"                             shares of their importance sum to at most P [0.1] (its rollout_p). The\n"
"                             generation stays vanilla's; the nucleus's share of the others is\n"
"                             reported (the simulator's --d2-rollout-share) and the steps' times\n"
"                             include it\n"
"  --mask-id ID               the mask token (LLaDA-8B 126336, LLaDA-MoE-7B 156895; with random\n"
"                             weights and another model: the vocabulary's last; with --weights\n"
"                             for another model: required)\n"
"  --profile-out FILE --name NAME\n"
"                             adds the measured tokens per forward to FILE as decode profile NAME\n"
"                             (for tessera sim --decode threshold:FILE:NAME, hierarchical:... or credit:...)\n"
"  --ids-out FILE             each request's generated ids, a JSON array a line\n"
"  --requests-out FILE        each request's outcome, a JSON object a line: its prompt's length, its\n"
"                             steps, the steps at which Prophet committed its rest (0: never), with\n"
"                             --elastic-drift its tested steps, those that would refresh and the\n"
"                             tracked tokens they tested (summed), with --d2-rollout its measured\n"
"                             steps, their nuclei and the positions they chose among (summed) and the\n"
"                             nucleus's mean share, its ids\n"
"Prints the steps, tokens per forward (and how many positions each block step committed), the\n"
"redundancy (block rows computed per position decided), the GPU time of the steps and of the\n"
"unmasking, the generated tokens a second, and with --prophet the requests it finished early and\n"
"the decoded share they were at (the simulator's --early-commit F), and with --elastic-drift the steps\n"
"whose drift test fires, the layers it would refresh from and the tokens it tracks, and with\n"
"--d2-rollout the rollout's nucleus as a share of the positions it is chosen among.\n");
    policies_help(f);
}

struct gen_args {
    const char *model, *weights, *prompts, *profile_out, *name, *ids_out, *requests_out, *policy;
    struct param_values params; /* the policy's parameters given (--vicinity, --refresh-interval, --sparsed-*) */
    bool block_logits;          /* whole-sequence steps' logits the block's alone (tessera sim's --block-logits) */
    struct sim_config cfg; /* the options that are rows of tessera sim's table (SIM_ROW), as they set them, and the
                            * engine's choices (eng_choice_take) */
    struct unmask_rule rule;
    struct gen_smooth smooth;
    struct gen_prophet prophet;
    struct gen_elastic elastic;
    struct gen_rollout rollout;
    char rule_text[64];
    int64_t requests, prompt_len, gen_len, block, mask_id, seed;
    double mem_gb;
};

/* The options' combinations parse_args refuses, each said on stderr: -1, or 0. */
static int check_args(const struct gen_args *a)
{
    if (!a->profile_out != !a->name) {
        fprintf(stderr, "tessera engine generate: --profile-out and --name go together (the file and the profile)\n");
        return -1;
    }
    if (a->profile_out && a->rule.kind == UNMASK_TOPK) {
        fprintf(stderr, "tessera engine generate: --profile-out: topk:K commits K positions a step; the simulator "
                        "models it as --decode fixed:K, no profile needed\n");
        return -1;
    }
    if (a->policy && strcmp(a->policy, GEN_FOCUS) == 0 && a->rule.kind == UNMASK_CREDIT) {
        fprintf(stderr, "tessera engine generate: --policy focus with credit decoding: the rows FOCUS keeps are chosen "
                        "on the GPU during the step, after the credits they fuse with must be named\n");
        return -1;
    }
    if (a->prophet.on && a->rule.kind == UNMASK_CREDIT) {
        fprintf(stderr, "tessera engine generate: --prophet with credit decoding: its tokens are the credit-fused "
                        "logits' argmax, its gap the plain logits' (use topk, threshold or hierarchical)\n");
        return -1;
    }
    if (a->smooth.on && a->rule.kind == UNMASK_TOPK) {
        fprintf(stderr, "tessera engine generate: --iter-smooth: dInfer's IterSmooth decays a threshold; topk:K has "
                        "none (use threshold, hierarchical or credit)\n");
        return -1;
    }
    return 0;
}

/* The options that are rows of tessera sim's table (--model, --requests, --gen-len, --block, --seed,
 * --policy, --block-logits) as a generation takes them: parsed and checked by their rows, then the
 * bounds of a generation on the GPU (a block of at most UNMASK_MAX_ROWS rows, at most 65,536 requests,
 * a length given); --requests unset is 16 (or the prompt file's), --policy unset the model's kind's. */
static int take_rows(bool policy_given, struct gen_args *a)
{
    const struct sim_config *c = &a->cfg;
    struct ts_err err;
    if ((c->requests > 65536 && ts_fail(&err, "--requests %lld: at most 65536 requests", (long long)c->requests)) ||
        (c->gen_len < 1 && ts_fail(&err, "--gen-len 0: a generation's length is at least 1 (0, the trace's lengths, "
                                         "is tessera sim's)")) ||
        (c->block > UNMASK_MAX_ROWS && ts_fail(&err, "--block %d: at most %d positions (a block's rows are unmasked in "
                                                     "one kernel block)", c->block, UNMASK_MAX_ROWS))) {
        fprintf(stderr, "tessera engine generate: %s\n", err.msg);
        return -1;
    }
    a->model = c->model;
    a->requests = c->requests > 0 ? c->requests : -1;
    a->gen_len = c->gen_len, a->block = c->block, a->seed = c->seed;
    a->policy = policy_given ? c->policy : NULL;
    a->block_logits = c->block_logits;
    return 0;
}

enum { SIM_ROW = ENG_CHOICE_OPT + 1 };
/* The command's own options (SIM_ROW: a row of tessera sim's table, parsed by it) */
static const struct option own[] = {{"model", required_argument, 0, SIM_ROW},   {"weights", required_argument, 0, 'w'},
                                    {"decoder", required_argument, 0, 'd'}, {"requests", required_argument, 0, SIM_ROW},
                                    {"prompt-len", required_argument, 0, 'p'}, {"prompts", required_argument, 0, 'P'},
                                    {"gen-len", required_argument, 0, SIM_ROW}, {"block", required_argument, 0, SIM_ROW},
                                    {"mask-id", required_argument, 0, 'k'}, {"seed", required_argument, 0, SIM_ROW},
                                    {"mem-limit", required_argument, 0, 'M'},
                                    {"profile-out", required_argument, 0, 'o'}, {"name", required_argument, 0, 'N'},
                                    {"ids-out", required_argument, 0, 'i'}, {"policy", required_argument, 0, SIM_ROW},
                                    {"iter-smooth", optional_argument, 0, 'S'},
                                    {"block-logits", no_argument, 0, SIM_ROW},
                                    {"prophet", required_argument, 0, 'R'},
                                    {"elastic-drift", required_argument, 0, 'E'},
                                    {"d2-rollout", required_argument, 0, 'D'},
                                    {"requests-out", required_argument, 0, 'q'},
                                  ENG_CHOICE_OPTS,
                                    {"help", no_argument, 0, 'h'}};

static int parse_with(int argc, char **argv, const struct option *o, struct gen_args *a);

/* Its own options, then every policy's parameters (each name once), as tessera sim takes them. */
static int parse_args(int argc, char **argv, struct gen_args *a)
{
    size_t most = TS_ARRAY_LEN(own) + 1;
    const struct policy_ops *po;
    for (int i = 0; (po = policy_get(i)) != NULL; i++)
        most += (size_t)po->num_params;
    struct option *o = xmalloc(sizeof *o * most);
    int no = 0;
    for (; no < (int)TS_ARRAY_LEN(own); no++)
        o[no] = own[no];
    for (int i = 0; (po = policy_get(i)) != NULL; i++)
        for (int k = 0; k < po->num_params; k++) {
            bool have = false;
            for (int j = 0; j < no && !have; j++)
                have = strcmp(o[j].name, po->params[k].name) == 0;
            if (!have)
                o[no++] = (struct option){po->params[k].name, required_argument, 0, 'W'};
        }
    o[no] = (struct option){0, 0, 0, 0};
    const int rc = parse_with(argc, argv, o, a);
    free(o);
    return rc;
}

static int parse_with(int argc, char **argv, const struct option *o, struct gen_args *a)
{
    *a = (struct gen_args){.prompt_len = 256, .mask_id = -1};
    sim_config_defaults(&a->cfg);
    bool policy_given = false;
    struct ts_err err;
    if (unmask_parse("threshold:0.9", &a->rule, &err))
        return EXIT_USAGE;
    optind = 1;
    int c, idx = 0;
    opterr = 0; /* an unknown option is answered with the nearest (cli_getopt_error) */
    while ((c = getopt_long(argc, argv, ":h", o, &idx)) != -1) {
        bool bad = false;
        const char *range = "";
        switch (c) {
        case SIM_ROW:
            if (cfg_option_set(cfg_option_find(o[idx].name), optarg, &a->cfg, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            policy_given |= strcmp(o[idx].name, "policy") == 0;
            break;
        case 'w': a->weights = optarg; break;
        case 'P': a->prompts = optarg; break;
        case 'o': a->profile_out = optarg; break;
        case 'N': a->name = optarg; break;
        case 'i': a->ids_out = optarg; break;
        case 'q': a->requests_out = optarg; break;
        case 'S':
            if (gen_smooth_parse(optarg, &a->smooth, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'E':
            if (gen_elastic_parse(optarg, &a->elastic, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'D':
            if (gen_rollout_parse(optarg, &a->rollout, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'R':
            if (gen_prophet_parse(optarg, &a->prophet, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'd':
            if (unmask_parse(optarg, &a->rule, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'p': bad = ts_parse_i64(optarg, &a->prompt_len) || a->prompt_len < 1 || a->prompt_len > 1 << 20, range = "1..1048576"; break;
        case 'k': bad = ts_parse_i64(optarg, &a->mask_id) || a->mask_id < 0 || a->mask_id > INT32_MAX, range = "a token id"; break;
        case 'W': /* the policy's, checked against it once it is known */
            if (param_values_set(&a->params, o[idx].name, optarg, &err)) {
                fprintf(stderr, "tessera engine generate: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'M': bad = ts_parse_double(optarg, &a->mem_gb) || !(a->mem_gb > 0 && a->mem_gb < 1e6), range = "GB > 0"; break;
        case 'h': generate_usage(stdout); return 1;
        case ENG_CHOICE_OPT:
            if (eng_choice_take("engine generate", o[idx].name, optarg, &a->cfg))
                return EXIT_USAGE;
            break;
        default: return cli_getopt_error("engine generate", c, argv, o);
        }
        if (bad) {
            fprintf(stderr, "tessera engine generate: --%s: bad value '%s' (%s)\n", o[idx].name, optarg, range);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera engine generate: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (take_rows(policy_given, a) || check_args(a))
        return EXIT_USAGE;
    unmask_format(&a->rule, a->rule_text, sizeof a->rule_text);
    if (a->smooth.on) {
        const size_t n = strlen(a->rule_text);
        snprintf(a->rule_text + n, sizeof a->rule_text - n, " + IterSmooth %g,%g,%g,%g", a->smooth.cont, a->smooth.init,
                 a->smooth.growth, a->smooth.decay);
    }
    return 0;
}

/* The mask token: given, a known model's, or (random weights) the vocabulary's last. */
static int mask_token(const struct gen_args *a, const struct model_cfg *m, int32_t *out)
{
    static const struct {
        const char *model;
        int32_t id;
    } known[] = {{"llada-8b", 126336}, {"llada-moe-7b", 156895}};
    *out = (int32_t)a->mask_id;
    for (size_t i = 0; *out < 0 && i < TS_ARRAY_LEN(known); i++)
        if (ts_name_eq(m->name, known[i].model))
            *out = known[i].id;
    if (*out < 0 && a->weights) {
        fprintf(stderr, "tessera engine generate: --mask-id: the mask token of %s is not known here; give it\n", m->name);
        return EXIT_USAGE;
    }
    if (*out < 0)
        *out = m->vocab - 1;
    if (*out >= m->vocab) {
        fprintf(stderr, "tessera engine generate: --mask-id %d: beyond %s's vocabulary of %d\n", *out, m->name, m->vocab);
        return EXIT_USAGE;
    }
    return 0;
}

struct gen_run {
    double step_ms, unmask_ms;
    float *ms; /* each step's */
    int64_t nms, cap;
    /* the extensions the generation runs (gen_ext.h) and their states */
    const struct gen_ext *ext[EXT_ENGINE_IDS];
    void *ext_st[EXT_ENGINE_IDS];
    int num_ext;
};

/* The extensions g runs with rule u (gen_ext.h), each its room in o and its state started. */
static void gen_exts_start(struct gen_run *run, const struct gen *g, const struct unmask_rule *u,
                           struct eng_opts *o)
{
    enum eng_ext_id id;
    const struct gen_ext *x;
    for (int i = 0; (x = eng_ext_gen(i, &id)) != NULL; i++)
        if (x->on(g, u) && run->num_ext < EXT_ENGINE_IDS) {
            o->room[id] = x->room(g);
            run->ext[run->num_ext] = x;
            run->ext_st[run->num_ext] = xcalloc(1, x->state_bytes ? x->state_bytes : 1);
            if (x->start)
                x->start(run->ext_st[run->num_ext], g);
            run->num_ext++;
        }
}

static void gen_exts_stop(struct gen_run *run)
{
    for (int i = 0; i < run->num_ext; i++) {
        if (run->ext[i]->stop)
            run->ext[i]->stop(run->ext_st[i]);
        free(run->ext_st[i]);
    }
    run->num_ext = 0;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Runs g to its end on e; steps' and unmasking's GPU times into run, whose extensions (gen_exts_start)
 * take part in each step at their points (gen_ext.h). */
static int run_generation(struct eng *e, struct gen *g, const struct unmask_rule *u, struct gen_run *run,
                          struct ts_err *err)
{
    const int32_t n = g->c.requests;
    const size_t most = (size_t)gen_rows_most(g); /* a step's logit rows at most: each request's whole sequence */
    int32_t *groups = xmalloc(sizeof *groups * 2 * (size_t)n), ng;
    int32_t *masked = xmalloc(sizeof *masked * most), *commit = xmalloc(sizeof *commit * most);
    int32_t *cand = NULL, *picks = NULL;
    int64_t npicks = (int64_t)n * g->c.block;
    if (g->c.focus) { /* FOCUS: which candidates the GPU kept, for each logit row */
        cand = xmalloc(sizeof *cand * most);
        picks = xmalloc(sizeof *picks * (size_t)npicks);
    }
    struct step_desc sd;
    step_desc_init(&sd);
    const bool tty = isatty(STDERR_FILENO);
    int rc = 0;
    const struct eng_tokens tk = gen_tokens(g);
    eng_set_tokens(e, &tk);
    while (rc == 0 && gen_next_step(g, &sd, groups, &ng, masked)) {
        float ms = 0, ums = 0;
        struct gen_step st = {.e = e, .g = g, .u = u, .sd = &sd};
        for (int i = 0; rc == 0 && i < run->num_ext; i++)
            if (run->ext[i]->before)
                rc = run->ext[i]->before(run->ext_st[i], &st, err);
        struct eng_out out;
        if (rc != 0 || (rc = eng_step(e, &sd, &out, &ms, err)) != 0)
            break;
        st.out = &out;
        for (int i = 0; rc == 0 && i < run->num_ext; i++)
            if (run->ext[i]->after)
                rc = run->ext[i]->after(run->ext_st[i], &st, err);
        if (rc != 0)
            break;
        int max_probe = 0;
        if (cand && sd.tot.probe_tokens > 0) {
            if ((rc = eng_picks(e, picks, npicks, &max_probe, err)) != 0)
                break;
            gen_focus_cands(&sd, picks, max_probe, cand);
        }
        for (int32_t r = 0; r < (int32_t)sd.tot.logit_rows; r++)
            commit[r] = -1;
        if (ng > 0 && (rc = eng_unmask(e, u, groups, ng, masked, st.taus, commit, NULL, &ums, err)) != 0)
            break;
        st.commit = commit;
        for (int i = 0; i < run->num_ext; i++)
            if (run->ext[i]->committed)
                run->ext[i]->committed(run->ext_st[i], &st);
        if ((rc = gen_apply(g, &sd, commit, cand, err)) != 0)
            break;
        for (int i = 0; i < run->num_ext; i++)
            if (run->ext[i]->applied)
                run->ext[i]->applied(run->ext_st[i], &st);
        if (g->c.prophet.on && (rc = gen_prophet_apply(g, &sd, out.tok, out.gap, err) < 0 ? -1 : 0) != 0)
            break;
        for (int32_t s = 0; s < sd.num_segs; s++)
            if (g->r[sd.segs[s].req_id].done)
                eng_release(e, sd.segs[s].req_id);
        run->step_ms += ms, run->unmask_ms += ums;
        if (run->nms == run->cap)
            run->ms = xrealloc(run->ms, sizeof *run->ms * (size_t)(run->cap = run->cap ? 2 * run->cap : 256));
        run->ms[run->nms++] = ms;
        if (tty && g->steps % 16 == 0)
            fprintf(stderr, "\r  step %lld: %lld of %lld positions decided", (long long)g->steps, (long long)g->decoded,
                    (long long)n * g->c.gen_len);
    }
    if (tty)
        fprintf(stderr, "\r%60s\r", "");
    eng_set_tokens(e, NULL);
    step_desc_free(&sd);
    free(groups), free(masked), free(commit), free(cand), free(picks);
    return rc;
}

/* Each request's generated ids, a line a request: a JSON array (--ids-out), or with outcome a JSON object
 * of its prompt's length, its steps, the steps at which Prophet committed its rest and what the
 * extensions run measured of it (--elastic-drift: the drift test's counts) beside them (--requests-out). */
static int write_requests(const char *path, const struct gen *g, const struct gen_run *run, bool outcome,
                          struct ts_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ts_fail(err, "%s: cannot write", path);
    for (int32_t i = 0; i < g->c.requests; i++) {
        const struct gen_req *r = &g->r[i];
        if (outcome)
            fprintf(f, "{\"request\": %d, \"prompt\": %d, \"steps\": %d, \"prophet_exit_steps\": %d, ", i, r->P,
                    r->steps, r->exit_steps);
        for (int x = 0; outcome && x < run->num_ext; x++)
            if (run->ext[x]->outcome)
                run->ext[x]->outcome(g, i, f);
        if (outcome)
            fprintf(f, "\"ids\": ");
        for (int32_t p = 0; p < g->c.gen_len; p++)
            fprintf(f, "%s%d", p ? ", " : "[", r->ids[r->P + p]);
        fprintf(f, outcome ? "]}\n" : "]\n");
    }
    return fclose(f) == 0 ? 0 : ts_fail(err, "%s: write failed", path);
}

static void report(const struct gen_args *a, const struct model_cfg *m, struct eng *e, const struct gen *g,
                   struct gen_run *run, int32_t mask_id)
{
    printf("tessera engine generate: %s (%s) on %s, %d requests, %d tokens each in blocks of %d, policy %s, %s, "
           "mask id %d\n", m->name, a->weights ? a->weights : "random weights", eng_device_name(e), g->c.requests,
           g->c.gen_len, g->c.block, g->c.focus ? "focus" : g->c.policy->name, a->rule_text, mask_id);
    printf("  steps            %lld (%lld block steps of requests)\n", (long long)g->steps, (long long)g->block_segs);
    printf("  tokens/forward   %.3f; block steps by positions committed:", gen_tpf(g));
    for (int32_t k = 1; k <= g->c.block; k++)
        if (g->per_step[k])
            printf(" %d:%lld", k, (long long)g->per_step[k]);
    printf("\n  redundancy       %.2f block rows computed per position decided", g->decoded ? (double)g->block_rows / (double)g->decoded : 0);
    if (g->c.focus) /* N_processed / N_decoded: the later layers' rows, and the front layers' */
        printf(" (through every layer; %.2f through layers 0-1)", g->decoded ? (double)g->front_rows / (double)g->decoded : 0);
    printf("\n");
    qsort(run->ms, (size_t)run->nms, sizeof *run->ms, cmp_float);
    printf("  GPU time         %.3f s in steps (median step %.3f ms), unmasking %.3f ms in all (%.2f%%)\n",
           run->step_ms / 1e3, run->nms ? run->ms[run->nms / 2] : 0, run->unmask_ms,
           run->step_ms > 0 ? 100 * run->unmask_ms / run->step_ms : 0);
    printf("  throughput       %.1f generated tokens/s of GPU time\n",
           run->step_ms > 0 ? (double)(g->decoded + g->prophet_filled) / (run->step_ms / 1e3) : 0);
    if (g->c.prophet.on)
        printf("  Prophet          %lld of %d requests committed early (answer at offset %d; thresholds %g, %g, %g), "
               "at a decoded share of %.3f on average, %lld positions committed by it\n",
               (long long)g->prophet_exits, g->c.requests, g->c.prophet.answer, g->c.prophet.early, g->c.prophet.mid,
               g->c.prophet.late, g->prophet_exits ? g->prophet_share / (double)g->prophet_exits : 0,
               (long long)g->prophet_filled);
    for (int i = 0; i < run->num_ext; i++)
        if (run->ext[i]->report)
            run->ext[i]->report(run->ext_st[i], g);
}

int eng_generate_main(int argc, char **argv)
{
    struct gen_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct ts_err err;
    struct model_cfg m;
    if (model_resolve(a.model, &m, &err)) {
        fprintf(stderr, "tessera engine generate: %s\n", err.msg);
        return EXIT_USAGE;
    }
    int32_t mask_id;
    if ((rc = mask_token(&a, &m, &mask_id)) != 0)
        return rc;
    struct gen_prompts prompts = {0};
    if (a.prompts && gen_prompts_load(a.prompts, m.vocab, a.requests > 0 ? (int32_t)a.requests : 0, &prompts, &err)) {
        fprintf(stderr, "tessera engine generate: %s\n", err.msg);
        return EXIT_USAGE;
    }
    int32_t longest = (int32_t)a.prompt_len;
    for (int32_t i = 0; i < prompts.n; i++)
        longest = i ? TS_MAX(longest, prompts.len[i]) : prompts.len[i];
    const int32_t n = a.prompts ? prompts.n : (int32_t)(a.requests > 0 ? a.requests : 16), B = (int32_t)a.block;
    const char *policy = a.policy ? a.policy : m.block_causal ? "block" : "dual";
    struct gen_cfg gc = {
        .requests = n, .prompt_len = (int32_t)a.prompt_len, .gen_len = (int32_t)a.gen_len, .block = B,
        .mask_id = mask_id, .vocab = m.vocab, .max_pos = m.max_pos, .seed = (uint64_t)a.seed,
        .attn_block = m.block_causal ? B : 0, .logit_chunk_rows = 2048, .focus = strcmp(policy, GEN_FOCUS) == 0,
        .smooth = a.smooth, .prophet = a.prophet, .elastic = a.elastic, .rollout = a.rollout};
    gc.elastic.layers = m.num_layers;
    struct policy_drive drive = {0};
    struct gen g = {0};
    bool refused = false;
    if (gc.focus) { /* FOCUS runs by position here (eng_gen.h), by its policy's parameters */
        const struct policy_ops *fo = policy_find(GEN_FOCUS);
        double v[PARAMS_MAX];
        for (int i = 0; i < a.params.n && !refused; i++)
            if (strcmp(a.params.name[i], GEN_FOCUS_ALPHA) != 0)
                refused = ts_fail(&err, "policy focus: --%s is %s (the engine's FOCUS takes --%s alone: its rows are "
                                        "picked on the GPU)", a.params.name[i],
                                  params_find(fo->params, fo->num_params, a.params.name[i]) ? "the simulator's alone"
                                                                                            : "not its parameter",
                                  GEN_FOCUS_ALPHA);
        if (!refused && a.block_logits)
            refused = ts_fail(&err, "--block-logits with policy focus: FOCUS's logits are the rows it keeps");
        if (!refused && !(refused = params_resolve(fo->params, fo->num_params, &a.params, v, &err)))
            gc.focus_alpha = params_value(fo->params, fo->num_params, v, GEN_FOCUS_ALPHA, 0);
    } else {
        int32_t *plen = xmalloc(sizeof *plen * (size_t)n);
        for (int32_t i = 0; i < n; i++)
            plen[i] = a.prompts ? prompts.len[i] : (int32_t)a.prompt_len;
        if (policy_drive_init(&drive, policy, &a.params, n, plen, gc.gen_len, B, a.block_logits, &err) == 0)
            gc.policy = &drive;
        free(plen);
    }
    /* a step's rows: room for every request's block (a whole-sequence policy: its whole sequence), within 16K */
    const int64_t seq = (int64_t)longest + a.gen_len;
    const int64_t each = gen_whole(&gc) ? seq : 2 * B;
    gc.max_tokens = (int32_t)TS_MAX(TS_MAX(seq, 2 * B), TS_MIN((int64_t)n * each, 16384));
    if ((!gc.focus && !gc.policy) || refused ||
        gen_init(&g, &gc, a.prompts ? &prompts : NULL, &err)) {
        gen_prompts_free(&prompts);
        policy_drive_free(&drive);
        fprintf(stderr, "tessera engine generate: %s\n", err.msg);
        return EXIT_USAGE;
    }
    gen_prompts_free(&prompts);
    struct eng_choices choices;
    eng_choices_of(&a.cfg, &choices);
    struct eng_opts o;
    eng_opts_defaults(&o, &choices);
    o.max_tokens = gc.max_tokens;
    o.logit_chunk_rows = gc.logit_chunk_rows;
    o.mem_limit = (int64_t)(a.mem_gb * 1e9);
    o.weights = a.weights;
    o.seed = (uint64_t)a.seed;
    o.trace_selection = gc.focus; /* the rows FOCUS kept (eng_picks) */
    o.top2_gap = gc.prophet.on;    /* Prophet's gaps (eng_out.gap) */
    if (gc.policy) /* what its parameters set in the engine's extensions, typed */
        o.ext = gc.policy->ext;
    struct eng *e = NULL;
    struct gen_run run = {0};
    gen_exts_start(&run, &g, &a.rule, &o); /* the extensions it runs, their room */
    rc = 1;
    if (eng_create(&m, &o, &e, &err) || run_generation(e, &g, &a.rule, &run, &err) ||
        (a.ids_out && write_requests(a.ids_out, &g, &run, false, &err)) ||
        (a.requests_out && write_requests(a.requests_out, &g, &run, true, &err))) {
        fprintf(stderr, "tessera engine generate: %s\n", err.msg);
        goto done;
    }
    report(&a, &m, e, &g, &run, mask_id);
    if (a.profile_out) {
        char source[512];
        snprintf(source, sizeof source, "tessera engine generate --model %s --decoder %s --policy %s (%s, %d requests, "
                 "%d tokens in blocks of %d)", m.name, a.rule_text, policy,
                 a.weights ? a.weights : "random weights", n, gc.gen_len, B);
        if (gen_profile_write(a.profile_out, a.name, &g, unmask_name(a.rule.kind), source, &err)) {
            fprintf(stderr, "tessera engine generate: %s\n", err.msg);
            goto done;
        }
        printf("  profile          %s in %s (TPF %.3f)\n", a.name, a.profile_out, gen_tpf(&g));
    }
    rc = 0;
done:
    gen_exts_stop(&run);
    free(run.ms);
    gen_free(&g);
    policy_drive_free(&drive);
    eng_destroy(e);
    return rc;
}
