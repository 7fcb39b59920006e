/*
 * eng_gen.h: a generation's host side (`tessera engine generate`): each request's tokens, the steps
 * that advance them and what the unmasking decisions did. Pure host code, tested on the CPU; the
 * engine runs the steps and decides on the GPU (eng_unmask).
 *
 * The caching policy is the simulator's (policy_drive.h): a policy of its table that can be driven
 * with its rows at positions (vanilla, prefix, dual, block, vicinity, and any added later that
 * policy_drive_lacks accepts) emits each request's segments and places their rows; the block's rows
 * end the segment's logit rows, and the GPU's unmasking decides what each commits. FOCUS (the focus
 * policy) runs here by position instead, since its rows are picked on the GPU: over the prefix cache
 * with its delayed intra-block cache, a block step's first two layers run the block's uncached
 * positions (its decided ones not yet cached, then its masked ones, each at its own position), the
 * later layers the decided ones and K of the masked ones, which the importance delta picks on the
 * GPU (K = ceil(alpha x the request's mean decodes a step so far), placeholder integrity on the GPU;
 * FOCUS's N_sigma and AR-context rules are the simulator's alone); only those get logits, so only
 * they can be decided. A decided position whose right neighbour was decided too is cached once a
 * step has run it (it leaves the block's rows); a finished block's uncached rest is written by a
 * step of its own before the next block.
 * In each block step the unmasking rule commits some of the block's masked positions. Requests
 * advance on their own, so one step holds each unfinished request's own step. Prompts are real token
 * ids (a file) or hashed ones, the response starts as the mask token everywhere.
 */
#ifndef TESSERA_ENG_GEN_H
#define TESSERA_ENG_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eng.h"
#include "eng_plan.h"
#include "eng_unmask.h"
#include "ext_drift.h"
#include "ext_rollout.h"
#include "policy_drive.h"
#include "step_desc.h"
#include "util.h"

/* dInfer's IterSmooth (IterSmoothDiffusionLLM, its IterationSmooth and H2Embed): after a request's
 * n-th block step (from 0) each of its logit rows still masked keeps softmax(logits) times the
 * embedding matrix, and the next step that embeds the position adds it, times
 * w(n) = min(init + growth n, cont), to the mask token's embedding; the n-th step decides by the
 * threshold max(1 - decay n, tau) in place of its decoder's tau. */
struct gen_smooth {
    bool on;
    double cont, init, growth, decay; /* dInfer's cont_weight 0.3, cont_weight_init 0.15,
                                       * cont_weight_growth 0.02, threshold_decay 0.02 */
};
#define GEN_SMOOTH_DEFAULTS ((struct gen_smooth){.on = true, .cont = 0.3, .init = 0.15, .growth = 0.02, .decay = 0.02})

/* Prophet's early commit (arXiv 2508.19982; pixeli99/Prophet generate_earlyexit.py at 460afe4,
 * should_early_exit): after a step, a request whose top-2 logit gap, averaged over its len answer
 * positions from response offset answer, reaches its phase's threshold commits every position still
 * masked to the step's argmax and is finished. The phase is the decoded share of its response after
 * the step (Prophet's step over its planned steps, the same at a fixed count a step): early below
 * 0.33, mid below 0.67, late after. Its positions' logits come from steps over the whole sequence
 * (--policy vanilla, as Prophet's own loop runs). */
struct gen_prophet {
    bool on;
    int32_t answer, len;
    double early, mid, late;
};
#define GEN_PROPHET_DEFAULTS ((struct gen_prophet){.on = true, .len = 5, .early = 7.5, .mid = 5.0, .late = 2.5})

/* Elastic-Cache's drift test (arXiv 2510.14973; yxu-dev/Elastic-Cache at 46c0bc3, llada/generate.py
 * generate_with_elastic_cache and model/modeling_llada.py's attention), run on steps over the whole
 * sequence (--policy vanilla): in every layer, the window (the first `window` masked positions) tracks
 * its most-attended decided position; the next step compares the tracked tokens' attention (the
 * distinct ones of all layers) with their attention from Elastic-Cache's cache (each position's query
 * and key as its schedule last computed them), by the cosine similarity over the heads of each key,
 * averaged; the first layer below gamma would start Elastic-Cache's refresh at the next layer (none
 * at the last). The generation itself is vanilla's: the test is measured, not acted on. */
struct gen_elastic {
    bool on;
    double gamma;   /* its drift bound [0.9] */
    int32_t window; /* window_length [16], at most GEN_ELASTIC_MAX_WINDOW */
    int32_t layers; /* the model's */
};
#define GEN_ELASTIC_DEFAULTS ((struct gen_elastic){.on = true, .gamma = 0.9, .window = 16})
#define GEN_ELASTIC_MAX_WINDOW 32

/* d2Cache's attention rollout (arXiv 2509.23094; Kamichanw/d2Cache at 72feb60, src/cache/d2cache.py
 * accumulate_attn_rollout and on_step_end, src/utils/common.py nucleus_select), run on steps over the
 * whole sequence (--policy vanilla): the product of the layers' (A + I) / 2, A a layer's attention
 * averaged over its heads, gives each position an importance (its column sum). d2Cache's next step runs
 * the positions this step decoded, the k masked ones left of the highest confidence (its certainty:
 * here the step's confidences), and the nucleus of the others: the most important ones whose
 * importances, as shares of all of theirs, sum to at most p (one at least). The generation itself is
 * vanilla's: the rule is measured, not acted on. */
struct gen_rollout {
    bool on;
    double p;  /* rollout_p [0.1] */
    int32_t k; /* current_k [32] */
};
#define GEN_ROLLOUT_DEFAULTS ((struct gen_rollout){.on = true, .p = 0.1, .k = 32})

struct gen_cfg {
    int32_t requests;   /* sequences generated together */
    int32_t prompt_len; /* hashed prompts' length (a prompt file gives its own) */
    int32_t gen_len;    /* response positions, a multiple of block */
    int32_t block;      /* B, at most UNMASK_MAX_ROWS */
    int32_t mask_id, vocab;
    int32_t max_pos;       /* the model's context (a prompt and its response must fit); 0: any */
    uint64_t seed;         /* hashed prompts */
    int32_t attn_block;    /* the steps' attn_block (block-causal models: B) */
    int32_t max_tokens;    /* a step's query rows at most (a request whose step does not fit waits) */
    const struct policy_drive *policy; /* the caching policy, driven (policy_drive.h); NULL with focus */
    bool focus;            /* FOCUS instead */
    double focus_alpha;    /* FOCUS's budget expansion (the simulator's --focus-alpha) */
    int32_t logit_chunk_rows;
    struct gen_smooth smooth; /* IterSmooth (a driven policy's generation) */
    struct gen_prophet prophet; /* Prophet's early commit (a driven policy's generation) */
    struct gen_elastic elastic; /* Elastic-Cache's drift test, measured (a vanilla generation) */
    struct gen_rollout rollout; /* d2Cache's attention rollout, measured (a vanilla generation) */
};

/* Prompts as token ids, one request each. */
struct gen_prompts {
    int32_t n;
    int32_t *len;
    int32_t **ids;
};

struct gen_req {
    int32_t P;
    int32_t *ids;      /* [P + gen_len]: the prompt, then the response (mask_id where undecided) */
    uint8_t *decided;  /* [gen_len] */
    float *soft_w;     /* [gen_len]: IterSmooth's weight of the soft row a masked position keeps (0: none) */
    int32_t block;     /* the current block */
    bool prefilled, done;   /* (prefilled: FOCUS's) */
    int32_t steps, decoded; /* its block steps and the positions they committed */
    int32_t block_steps;    /* the steps its current block has run */
    int32_t exit_steps;     /* Prophet: its steps when it exited (0: it did not) */
    int32_t *rowpos, nrow;  /* where the rows of its segment in the step built last sit (nrow 0: where
                             * the plan puts them; room for its whole sequence) */
    /* FOCUS */
    uint8_t *cached;        /* [gen_len]: a decided position whose K/V is final */
    int32_t *cand, ncand, nfixed, picked; /* the last block step's candidates (block offsets), fixed rows, K */
    int32_t *rest, nrest;   /* the finished block's uncached offsets (of the response), written next */
    uint8_t last;           /* what its segment in the step built last was (GEN_SEG_*) */
    /* Elastic-Cache's drift test: the positions its last step tracked (ec_measured: it ran the test),
     * the steps that tested drift and those whose test would refresh */
    int32_t *ec_track, ec_ntrack, ec_tested, ec_refreshes;
    int64_t ec_tracked;  /* the tracked tokens its tested steps tested, summed */
    /* d2Cache's attention rollout: the steps measured, their nuclei and eligible positions summed, and
     * their nuclei's shares of the eligible ones summed */
    int32_t d2_steps;
    int64_t d2_nucleus, d2_eligible;
    double d2_share;
    uint8_t *ec_seen; /* [gen_len] the positions decided before its last step */
    bool ec_measured;
};

enum { GEN_SEG_NONE = 0, GEN_SEG_PREFILL, GEN_SEG_REST, GEN_SEG_BLOCK };

/* The policy a generation runs by position itself (FOCUS), and the one of its policy's parameters it
 * takes (its N_sigma and AR-context rules are the simulator's alone). */
#define GEN_FOCUS "focus"
#define GEN_FOCUS_ALPHA "focus-alpha"
/* FOCUS's largest block: the importance kernel's candidates (K_FOCUS_MAX_CAND). */
#define GEN_FOCUS_MAX_BLOCK 128

struct gen {
    struct gen_cfg c;
    struct gen_req *r;
    int32_t *seg_req;   /* the last step's segment -> request */
    int64_t steps;      /* steps run */
    int64_t block_segs, decoded, block_rows; /* block segments, positions they committed, the rows they ran
                                              * (FOCUS: through every layer) */
    int64_t front_rows; /* FOCUS: the block segments' rows of the front layers */
    int64_t *per_step;  /* [block + 1]: block segments by how many positions they committed */
    int64_t prophet_exits, prophet_filled; /* Prophet: requests it finished, positions it committed */
    double prophet_share; /* the decoded shares its exits came at, summed */
    int64_t *ec_from;     /* Elastic-Cache: [layers] the refreshes by the layer they would start at */
    int64_t ec_tested, ec_refreshes, ec_tracked; /* tested steps, refreshing ones, tracked tokens summed */
    int64_t d2_steps, d2_nucleus, d2_eligible; /* d2Cache's rollout: as each request's, summed */
    double d2_share;
};

/* Loads a prompt file: one JSON array of token ids (each in [0, vocab)) a line, at most max lines
 * (0: all); a bad line is refused naming the file and line. */
int gen_prompts_load(const char *path, int32_t vocab, int32_t max, struct gen_prompts *out, struct ts_err *err);
/* The same over a file's text (path names it in messages). */
int gen_prompts_parse(const char *path, const char *text, size_t len, int32_t vocab, int32_t max,
                      struct gen_prompts *out, struct ts_err *err);
void gen_prompts_free(struct gen_prompts *p);

/* Checks c and sets up its requests (prompts NULL: hashed ones of c->prompt_len; else one request a
 * prompt, c->requests of them at most). */
int gen_init(struct gen *g, const struct gen_cfg *c, const struct gen_prompts *prompts, struct ts_err *err);
void gen_free(struct gen *g);
/* Whether c's steps may run a request's whole sequence (a driven policy's whole, policy_drive.h). */
bool gen_whole(const struct gen_cfg *c);
/* Whether c's steps run every position of each request, each with its logits (a driven policy's
 * every_position): what Prophet's gap, the drift test and the rollout read. */
bool gen_every_position(const struct gen_cfg *c);
/* Request req's token id at pos, -1 past its end. */
int32_t gen_token(void *ctx, int32_t req, int32_t pos);
/* The engine's view of g's tokens (eng_set_tokens, eng_plan_set_ids): each request's ids, where its
 * segment's rows sit, and its prompt's length. */
struct eng_tokens gen_tokens(struct gen *g);
/* The longest sequence of g's requests (prompt and response), and their sum: a step's logit rows at
 * most. */
int32_t gen_longest(const struct gen *g);
int64_t gen_rows_most(const struct gen *g);
/* The next step into sd (cleared first; its knobs set), its blocks' rows as unmask groups ([2 n]
 * first logit row and rows; room for c->requests) and each logit row's masked flag (room for the
 * step's logit rows: c->requests * (prompt + gen_len) at most). false when every request is done. */
bool gen_next_step(struct gen *g, struct step_desc *sd, int32_t *groups, int32_t *ngroups, int32_t *masked);
/* Applies the step's commits (commit[row]: the token, or -1, over its logit rows) and advances the
 * requests (a driven policy's too); a commit at a position already decided or outside the current
 * block is an error (the rule commits the block's masked rows), and so is a policy that finishes a
 * request before its blocks are decoded, or not after.
 * FOCUS: cand[row] is the candidate each logit row holds (the engine's picks, eng_picks), an index
 * into its request's cand; NULL otherwise. */
int gen_apply(struct gen *g, const struct step_desc *sd, const int32_t *commit, const int32_t *cand,
              struct ts_err *err);
/* FOCUS: each logit row's candidate (gen_apply's cand) from the engine's picks of the step (eng_picks:
 * [evicting segments][max_probe], each segment's kept candidates ascending, which its logit rows hold
 * in that order). */
void gen_focus_cands(const struct step_desc *sd, const int32_t *picks, int max_probe, int32_t *cand);
/* Credit decoding (eng_credit_next): each of sd's logit rows' credit row (request x block + row:
 * a position's credits live while its block runs) and flags, into state and flags. */
void gen_credit_rows(const struct gen *g, const struct step_desc *sd, int32_t *state, int32_t *flags);
/* IterSmooth (c.smooth.on). gen_soft_rows: the soft rows a generation keeps (eng_opts.room[EXT_SMOOTH]:
 * request x response position); gen_smooth_rows: each of sd's logit rows' soft row (eng_smooth_next:
 * request i's response offset o is row i gen_len + o; -1 in the prompt); gen_smooth_taus: each
 * unmask group's threshold (eng_unmask's tau) for decoder threshold tau; gen_smooth_keep: before
 * gen_apply, the weights the step's logit rows that stay masked after commit[] keep. The soft rows'
 * weights reach the engine through gen_tokens's soft. */
int32_t gen_soft_rows(const struct gen *g);
void gen_smooth_rows(const struct gen *g, const struct step_desc *sd, int32_t *slot);
void gen_smooth_taus(const struct gen *g, const struct step_desc *sd, float tau, float *taus);
void gen_smooth_keep(struct gen *g, const struct step_desc *sd, const int32_t *commit);
/* Parses --iter-smooth's value: empty (dInfer's defaults) or CONT[,INIT[,GROWTH[,DECAY]]], each a
 * number of at least 0 (the ones left out dInfer's); sets out->on. */
int gen_smooth_parse(const char *spec, struct gen_smooth *out, struct ts_err *err);
/* IterSmooth's weight and threshold after n steps (decoder threshold tau). */
double gen_smooth_weight(const struct gen_smooth *s, int32_t n);
float gen_smooth_tau(const struct gen_smooth *s, int32_t n, float tau);

/* Parses --prophet's value: OFFSET[,EARLY,MID,LATE] (the answer's first response offset, at least 0;
 * the thresholds, at least 0, Prophet's 7.5, 5 and 2.5 where left out); sets out->on. */
int gen_prophet_parse(const char *spec, struct gen_prophet *out, struct ts_err *err);
/* After gen_apply: Prophet's test on each request sd's block segments ran and left unfinished, with
 * the step's logit rows' argmax tok and top-2 gap (eng_out); a request that passes gets every masked
 * position's argmax and is finished (the policy is not told: it runs no step of it again). Returns
 * the requests it finished, or -1 with err where a segment's logit rows miss an answer position or
 * a masked one. */
int gen_prophet_apply(struct gen *g, const struct step_desc *sd, const int32_t *tok, const float *gap,
                      struct ts_err *err);

/* Parses --elastic-drift's value: GAMMA[,WINDOW] (a bound in 0..1; 1 to GEN_ELASTIC_MAX_WINDOW
 * positions [16]); sets out->on. */
int gen_elastic_parse(const char *spec, struct gen_elastic *out, struct ts_err *err);
/* Before a step: its entries for the drift test (eng_drift_next), one for each of sd's segments, each
 * with sel (K_DRIFT_MAX_ROWS positions an entry), rowmap (prompt + gen_len an entry), eligible and
 * queried (twice that, in turn) in the buffers given: the rows Elastic-Cache's step runs are the window,
 * the tracked tokens and the positions decided since the request's step before (its first: all); the
 * number of entries, or -1 with err where a segment does not run each position of its request's whole
 * sequence. */
int32_t gen_elastic_reqs(struct gen *g, const struct step_desc *sd, struct eng_drift_req *out, int32_t *sel,
                         int32_t *rowmap, uint8_t *eligible, struct ts_err *err);
/* After the step: each entry's tracked token and similarity a layer (eng_drift_out) into its request's
 * counts and its next tracked tokens. */
void gen_elastic_apply(struct gen *g, const struct eng_drift_req *q, int32_t n, const int32_t *track,
                       const float *sim);
/* Parses --d2-rollout's value: P[,K] (the nucleus's share, in 0..1; the certain masked positions). */
int gen_rollout_parse(const char *spec, struct gen_rollout *out, struct ts_err *err);
/* How many of the n scores d2Cache's nucleus_select keeps among the eligible ones: in order of score
 * (ties: the lower index), as long as their shares of the eligible scores' sum (plus 1e-9) add up to
 * at most p, one at least (0 where none is eligible). order: n ints of scratch. */
int32_t gen_rollout_nucleus(const float *score, const uint8_t *eligible, int32_t n, double p, int32_t *order);
/* The step's rollout entries, one a segment (eng_rollout_req), each segment's rows every position of
 * its request; before[s * stride + k] whether segment s's row k was decided before the step. Fails
 * where a segment does not run its whole sequence. */
int32_t gen_rollout_reqs(struct gen *g, const struct step_desc *sd, struct eng_rollout_req *out, uint8_t *before,
                         int32_t stride, struct ts_err *err);
/* After the step's commits (gen_apply): records the nucleus d2Cache's next step would add, entry i's
 * importance of row k at importance[i * stride + k], the step's confidence of each logit row in conf;
 * before as gen_rollout_reqs left it (overwritten: the eligible rows). order: stride ints of scratch. */
void gen_rollout_apply(struct gen *g, const struct step_desc *sd, const struct eng_rollout_req *q, int32_t n,
                       const float *importance, const float *conf, uint8_t *before, int32_t stride, int32_t *order);

/* Tokens per forward: positions committed over block steps. */
double gen_tpf(const struct gen *g);

/* Writes (or replaces, keeping the file's other profiles) profile `name` of a decode-profile file
 * (sim/decode.h): g's TPF, and how many block steps committed 1, 2, ... positions (its measured
 * distribution, which the simulator's decoders then draw from), the decoder and the source;
 * atomically (a temporary file renamed). */
int gen_profile_write(const char *path, const char *name, const struct gen *g, const char *decoder, const char *source,
                      struct ts_err *err);

#endif
