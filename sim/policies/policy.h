/*
 * policy.h: denoising/caching policies, the room sim/policies/: this table, a file
 * a policy, and a policy driven outside the event loop (policy_drive.c). A policy is a small state
 * machine per request: emit() gives the exact shape of the request's next step, advance() moves its
 * phase state after the step, and kv_tokens()/kv_peak_tokens() say how much KV cache it holds.
 * Block progress (decoded tokens, block index) is advanced by policy_advance() for every policy.
 *
 * Adding a policy: one new file policy_NAME.c defining a `const struct policy_ops` (with its
 * parameters, declared once as param_specs, and its per-request state, a struct of its own read
 * through POLICY_STATE), and one line in the table of policy.c. Its parameters become options of
 * `tessera sim`, lines of its --help and of `tessera list policies`, and keys of the stored
 * configuration; the policy reads their resolved values as pc->p[i], in declaration order.
 */
#ifndef TESSERA_POLICY_H
#define TESSERA_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "decode.h"
#include "eng_ext_decl.h"
#include "model.h"
#include "params.h"
#include "request.h"
#include "step_desc.h"
#include "util.h"

struct policy_cfg {
    int32_t block_size;       /* Bs */
    bool mask_only;           /* logit rows are only the masked rows among the queries */
    bool block_logits;        /* a whole-sequence segment's logit rows are only the current block's */
    bool early_stop;          /* finish once the content and one EOS block are decoded */
    bool aligned_blocks;      /* blocks are the sequence's (policy_ops.caps' POLICY_ALIGNED_BLOCKS; request.head) */
    double early_commit;      /* > 0: once this share of a request's positions is decoded, the step commits
                               * the rest (Prophet's early commit) and the request is finished */
    double p[PARAMS_MAX];     /* the policy's own parameters, resolved, in declaration order */
    const struct decode_model *dm; /* the run's decode model (a policy that decides decodes draws it) */
    gsl_rng *rng;             /* scratch stream of a policy that decides, seeded per step from r->seed */
};

/* A policy's per-request state: its own struct in r->pstate (a struct larger than REQ_POLICY_STATE
 * bytes does not compile: the array size turns negative). */
#define POLICY_STATE(r, type) \
    ((type *)((r)->pstate + 0 * sizeof(char[sizeof(type) <= REQ_POLICY_STATE ? 1 : -1])))

/* What a policy's steps are (policy_ops.caps, or'ed). */
enum policy_caps {
    POLICY_SELECTS = 1u << 0,      /* some of its steps select a sparse cache (segment.keep > 0) */
    POLICY_DECIDES = 1u << 1,      /* its emit sets the segment's decoded (and missed) itself: which tokens a
                                    * step decodes depends on what it computes (focus's eviction) */
    POLICY_PIPELINED = 1u << 2,    /* its steps decode in several blocks at once (D2F): segment.decoded counts
                                    * them all, and its advance moves the block progress (cur_block,
                                    * decoded_in_block) itself */
    POLICY_SCATTERED = 1u << 3,    /* its steps' rows are positions chosen across the sequence, not a window
                                    * (d2cache) */
    POLICY_BLOCK_CAUSAL = 1u << 4, /* its steps run one block over the cache of the blocks before it, so a
                                    * block-causal model (SDAR, LLaDA2.0) attends block-causally there */
    POLICY_NEEDS_BLOCK_MODEL = 1u << 5, /* a model of bidirectional attention is refused (HERALD's selection
                                         * holds for block models alone) */
    POLICY_EVERY_POSITION = 1u << 6,    /* each step runs every position of its request, each with its logits
                                         * (no cache): what the engine's measurements of every position read
                                         * (Prophet's gap, Elastic-Cache's drift, d2Cache's rollout) */
    POLICY_CONFIRMS_BLOCK = 1u << 7,    /* a block is done only after a step that begins with none of its
                                         * positions masked, which commits nothing (SGLang's dLLM path: the
                                         * forward that finds the block resolved writes its K/V), or after
                                         * policy_ops.confirm_steps of them */
    POLICY_OWN_COUNT = 1u << 9,         /* its commits follow a law of its own (LinearSpec's verify): the decode
                                         * model is not read, and a run naming one other than fixed:1 is
                                         * refused */
    POLICY_ALIGNED_BLOCKS = 1u << 8,    /* its blocks are the sequence's, from position 0 (SGLang's): the
                                         * first generation block holds the prompt's last P mod Bs positions
                                         * (request.head) and masks the rest; a run sets
                                         * policy_cfg.aligned_blocks by it */
};

struct policy_ops {
    const char *name;
    const char *help;
    const struct param_spec *params; /* its parameters (NULL when none) */
    int num_params;
    uint32_t caps;     /* what its steps are: enum policy_caps, or'ed */
    const char *engine; /* NULL, or the engine's extensions its steps need, space-separated
                         * (sim/core/eng_ext_decl.h): a live run, a replay or a live fleet's move that
                         * cannot carry one is refused at start, naming what it lacks */
    /* What its parameters set in the extensions it needs (engine), typed (NULL: nothing to set). */
    void (*ext_params)(const struct policy_cfg *pc, struct eng_ext_params *out);
    /* Refuses a model its parameters do not fit, naming the parameter (NULL: every model fits). */
    int (*check_model)(const struct policy_cfg *pc, const struct model_cfg *m, struct ts_err *err);
    /* Fills *seg with the next step's shape for r (everything but `decoded`). */
    void (*emit)(const struct request *r, const struct policy_cfg *pc, struct segment *seg);
    /* Updates the policy state after a step with shape *seg; `block_done` says the step finished
     * the block r->cur_block had when the step was emitted (r->cur_block is already advanced). */
    void (*advance)(struct request *r, const struct policy_cfg *pc, const struct segment *seg,
                    bool block_done);
    /* A POLICY_CONFIRMS_BLOCK policy's forwards a block runs once none of its positions is masked, the
     * last of them the confirming one (NULL: 1): a decoder's edits after the block's masks are filled. */
    int32_t (*confirm_steps)(const struct policy_cfg *pc);
    /* K/V tokens the request must hold for its next step. */
    int64_t (*kv_tokens)(const struct request *r, const struct policy_cfg *pc);
    /* The most K/V tokens it holds at any point of its life. */
    int64_t (*kv_peak_tokens)(const struct request *r, const struct policy_cfg *pc);
    /* The largest q any step of this request can have (admission control uses it). */
    int32_t (*peak_q)(const struct request *r, const struct policy_cfg *pc);
    /* The most logit rows any step of this request has (NULL: as many as peak_q's, every row of its
     * largest step); admission reserves the activations of peak_q rows with at most this many logits. */
    int32_t (*peak_logits)(const struct request *r, const struct policy_cfg *pc);
    /* Sets the step knobs its segments need (NULL: none): the sparse selection's, the front
     * layers and the feature cache. */
    void (*knobs)(const struct policy_cfg *pc, struct step_desc *sd);
    /* The first position of a REUSE step's rows, a window of q consecutive positions holding the
     * current block (NULL: the block's first position; policy_drive.h places rows by it). */
    int32_t (*reuse_from)(const struct request *r, const struct policy_cfg *pc);
    /* Bytes a cached token takes beyond its K and V, over the model's GPUs (NULL: none; each GPU holds
     * a TP share of it): a policy that caches more of each token (Elastic-Cache's queries and layer
     * inputs). */
    int64_t (*token_bytes)(const struct model_cfg *m);
    /* A speculative policy's drafter (NULL: none): its layers, each of the model's shape, sharing the
     * model's embedding and LM head. Each step that verifies a block (a BLOCK segment) then runs the
     * drafter over the block first, priced beside the step (the pricing chain's drafter link, pricing.h). */
    int32_t (*drafter_layers)(const struct policy_cfg *pc);
    /* The rows of the pass that writes a finished block's K/V, a prefill of its own (NULL, or 0 under
     * pc: none, the block's K/V written by its last denoising step): what a scheduler that encodes a
     * context apart (sglang's separate-context) budgets for. */
    int32_t (*context_pass_rows)(const struct policy_cfg *pc);
};

/* Why policy po cannot be driven with its rows at positions (policy_drive.h), or NULL: it decides
 * what a step decodes itself, selects a sparse cache, sets step knobs (front layers, probes), keeps a
 * count of cached positions inside the block (the delayed cache, which assumes where the decoded
 * positions lie), or runs rows chosen across the sequence (scattered). */
const char *policy_drive_lacks(const struct policy_ops *po);
/* Policy `name` with the parameters given (each one it declares; the rest at their defaults) as a
 * drive over n requests of prompt_len[i] prompt and gen_len response positions in blocks of
 * `block`, its whole-sequence steps' logits the current block's alone with block_logits (tessera sim
 * --block-logits) (sim/policies/policy_drive.c); -1 with err for an unknown policy, one that cannot be driven
 * (policy_drive_lacks), or a parameter it lacks or refuses. policy_drive_free releases it. */
struct policy_drive;
int policy_drive_init(struct policy_drive *out, const char *name, const struct param_values *given, int32_t n,
                      const int32_t *prompt_len, int32_t gen_len, int32_t block, bool block_logits, struct ts_err *err);
void policy_drive_free(struct policy_drive *d);

/* Adds a policy after the built-in ones (tests, experiments kept out of the tree); -1 when its
 * name is taken or the table is full. The entry must outlive every run. */
int policy_register(const struct policy_ops *p);
const struct policy_ops *policy_find(const char *name);
/* The i-th policy of the table, NULL past the end. */
const struct policy_ops *policy_get(int i);
void policy_list(char *buf, size_t len);
int policy_resolve(const char *name, const struct policy_ops **out, struct ts_err *err);
/* The block of block-causal attention a run's steps take (step_desc.attn_block): block_size for a
 * block-causal model (SDAR, LLaDA2.0) under a policy of block_causal steps, else 0 (bidirectional). */
int32_t policy_attn_block(const char *policy, const struct model_cfg *m, int32_t block_size);
/* The step knobs a run's policy sets: its attention block (policy_attn_block's) and its own
 * (policy_ops.knobs: the selection's). */
void policy_step_knobs(const struct policy_ops *po, const struct policy_cfg *pc, const struct model_cfg *m,
                       struct step_desc *sd);
/* What po's parameters (pc's) set in the engine's extensions (policy_ops.ext_params), into *out:
 * zero where it sets nothing. */
void policy_ext_params(const struct policy_ops *po, const struct policy_cfg *pc, struct eng_ext_params *out);

/* Sets up r's shape-derived fields for the policy config (num_blocks, last_block, progress). */
void policy_req_init(struct request *r, const struct policy_cfg *pc);
/* A pipelined policy's block progress once `total` positions are committed left to right: the block
 * holding the first one not committed (the last, once all are) and the positions committed in it. */
void policy_progress_to(struct request *r, int32_t total);
/* Applies a finished step: advances the block progress and the policy state. Returns true when
 * the request is finished. */
bool policy_advance(const struct policy_ops *po, struct request *r, const struct policy_cfg *pc,
                    const struct segment *seg);
/* The logit rows of a segment of q rows containing `masked` masked rows. */
static inline int32_t policy_logit_rows(const struct policy_cfg *pc, int32_t q, int32_t masked)
{
    return pc->mask_only ? (masked < q ? masked : q) : q;
}

/* The logit rows of a segment of q rows over the whole sequence (or more than the block): all q (the
 * masked positions left, mask-only), or with block logits the current block's rows (its masked ones). */
static inline int32_t policy_logit_rows_seq(const struct policy_cfg *pc, const struct request *r, int32_t q)
{
    return pc->block_logits ? policy_logit_rows(pc, req_block_len(r, r->cur_block), req_masked_in_block(r))
                            : policy_logit_rows(pc, q, r->G - r->decoded_total);
}

/* Pieces the policies share. */
/* REFRESH of the whole sequence: q = L, all its K/V written, logits over the masked positions left. */
void policy_emit_refresh(const struct request *r, const struct policy_cfg *pc, struct segment *s);
/* PREFILL of the prompt and the finished blocks: q = kv_write = P + b*Bs, no logits; the prompt's
 * first r->prefix_hit tokens found in the prompt cache are read (kv) instead of computed. */
void policy_emit_prefill(const struct request *r, struct segment *s);
/* The whole sequence: its K/V (kv_tokens, kv_peak_tokens) and its rows (peak_q). */
int64_t policy_kv_whole(const struct request *r, const struct policy_cfg *pc);
int32_t policy_q_whole(const struct request *r, const struct policy_cfg *pc);
/* No cache (vanilla, sparsed): no K/V held (kv_tokens, kv_peak_tokens). */
int64_t policy_kv_none(const struct request *r, const struct policy_cfg *pc);
/* The logit rows admission reserves for r's largest step of q rows (policy_ops.peak_logits). */
int32_t policy_peak_logit_rows(const struct policy_ops *po, const struct request *r, const struct policy_cfg *pc,
                               int32_t q);
/* The largest q of a block policy: the fused commit (2*Bs) or a prefill after recompute. */
int32_t policy_block_peak_q(const struct request *r, const struct policy_cfg *pc);
/* Rows chosen across the sequence (d2cache, elastic): the state (whether a forward cached every
 * position, what the step before decoded), read through POLICY_STATE, and the step's shape. The first
 * forward, and the one after a recompute, runs every row and caches their K/V: FULL q = kv_write = L;
 * the others run q chosen rows, `masked` of them masked, over the cache of the rest: REUSE
 * q = kv_write = q, kv = L - q. emit returns whether it emitted the first (full) forward. */
struct chosen_state {
    bool cached;
    int32_t last_decoded;
};
bool policy_emit_chosen(const struct request *r, const struct policy_cfg *pc, int32_t q, int32_t masked,
                        struct segment *s);
void policy_chosen_advance(struct request *r, const struct segment *s);

/* Periodic refreshes: the state (steps since the last REFRESH, that one counted), read through
 * POLICY_STATE, and the advance that keeps it. */
struct refresh_state {
    int32_t since_refresh;
};
void policy_refresh_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                            bool block_done);

/* The delayed intra-block cache (block+delayed, and focus on top of it): its state, the first member
 * of a state that extends it, and its steps. */
struct delayed_state {
    bool prefilled;
    int32_t cached;      /* positions of the current block whose K/V are in the cache */
    int32_t stable;      /* positions stable after the last step (written by the next one) */
    int32_t commit_rest; /* > 0: the finished block's uncached positions, committed next step */
};
void policy_delayed_emit(const struct request *r, const struct policy_cfg *pc, struct segment *s);
void policy_delayed_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s, bool block_done);
int64_t policy_delayed_kv(const struct request *r, const struct policy_cfg *pc);
int64_t policy_delayed_kv_peak(const struct request *r, const struct policy_cfg *pc);

extern const struct policy_ops policy_vanilla;
extern const struct policy_ops policy_prefix;
extern const struct policy_ops policy_dual;
extern const struct policy_ops policy_block;
extern const struct policy_ops policy_vicinity;
extern const struct policy_ops policy_block_delayed;
extern const struct policy_ops policy_sparse;
extern const struct policy_ops policy_dllm_cache;
extern const struct policy_ops policy_focus;
extern const struct policy_ops policy_ar;
extern const struct policy_ops policy_dpad;
extern const struct policy_ops policy_fdllm_v2;
extern const struct policy_ops policy_d2cache;
extern const struct policy_ops policy_elastic;
extern const struct policy_ops policy_d2f;
extern const struct policy_ops policy_sparsed;
extern const struct policy_ops policy_herald;
extern const struct policy_ops policy_dkv;
extern const struct policy_ops policy_serve_block;
extern const struct policy_ops policy_dsb;
extern const struct policy_ops policy_linear_spec;
extern const struct policy_ops policy_dflash;

#endif
