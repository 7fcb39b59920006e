/*
 * eng_plan.h: turning a step description into the flat arrays the kernels read. Pure host code,
 * tested on the CPU.
 *
 * The engine keeps each request's K/V in pages of a pool. A segment (q, kv) of request r reads its
 * kv cached keys from key indices [0, kv) of r's pages and writes the K/V of its q fresh tokens at
 * key indices [kv, kv + q), so attention covers key_len = kv + q keys; query i sits at position
 * kv + i (RoPE). This is exact for prefix and block caches and a relabelling of positions for the
 * dual cache's Reuse block, which does not change the work done. Logits are produced for the last
 * logit_rows query rows of each segment.
 *
 * A selecting segment (keep > 0, sparse KV) writes its q fresh tokens at key indices
 * [base, base + q), base = keep rounded up to whole pages, so that its keep selected tokens can be
 * copied to keys [0, keep) (where the Reuse steps after it read them) without touching the
 * candidates; it describes the copy in `sel` (k_select_args.sel's fields).
 *
 * A layered step (eng_plan_layered: a feature cache, or segments with front shapes, probe or carried
 * rows; dLLM-Cache) keeps every hidden row of its segments, X in all (segment_rows each): row i of
 * a segment sits at position i and key i, so its keys are its rows (kv + q = rows, and kv_front +
 * q_front = rows where the front shape is given). A layer computes T of them: its plan's rows are
 * the computed rows (the later layers' here, the front layers' in `front`), c_row says which hidden
 * row each is, x_comp the reverse (-1: the row rides on its cached outputs). Without a probe the
 * computed rows are a segment's last q rows. With one, its first q - picked rows and `picked` of its
 * last probe rows, which each layer chooses on the GPU (their c_row, tok_pos, tok_slot and x_comp
 * entries are then the device's; the plan's placeholders are the last picked rows). Embedding ids
 * and logit rows index the hidden rows.
 *
 * An evicting step (step_desc.evict; FOCUS) is two plain plans: `front`, every segment's front rows
 * (q_front of them over kv_front cached keys, at positions kv_front + i or where a generation places
 * them, eng_plan_set_ids; a segment without a front shape its q rows), and this one, the rows the
 * later layers keep. An evicting segment's later rows
 * are its q - picked front rows before its candidates (key kv_front + i), then the picked ones,
 * which the front layers' importance delta chooses on the GPU (their c_row, tok_pos and tok_slot
 * entries are then the device's; the plan's placeholders are the last picked candidates). c_row
 * [T] says which front row each later row continues; `probe` describes each evicting segment in
 * ENG_EVICT_FIELDS values (k_focus_args.probe: the candidates' first front row, candidates, picked,
 * the first later row of the picked ones, the first candidate's position, the request, the
 * segment). The front layers see kv_front + q_front keys; the later layers at most as many (kv + q),
 * up to the right-most row of the block that they run or that an earlier step ran through every
 * layer (the request's progress: k_focus_args), which the GPU writes into key_len. Logits are taken
 * from each segment's last logit_rows later rows.
 *
 * A widening step (step_desc.cache_inputs with front shapes; Elastic-Cache's refresh) is two plain
 * plans too: `front`, every segment's front rows as an evicting step's, and this one, the later
 * layers' rows: a widening segment's every key, 0..q - 1 (kv = 0, q = kv_front + q_front), a segment
 * without a front shape its q rows where its front rows sit. Each layer first keeps its rows' inputs
 * by KV slot (the engine's input cache); the first later layer takes every later row's input from
 * there, the front rows' just kept, the others' as an earlier step kept them. Logits are taken from
 * each segment's last logit_rows later rows.
 */
#define ENG_EVICT_FIELDS 7 /* K_FOCUS_FIELDS (kernels.h) */
#ifndef TESSERA_ENG_PLAN_H
#define TESSERA_ENG_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "step_desc.h"
#include "util.h"

/* The page table of every request the engine has seen. */
struct eng_kv {
    int32_t page_tokens;
    int32_t num_pages;
    int32_t *free_pages; /* stack of free page ids */
    int32_t num_free;
    struct eng_kv_req {
        int32_t *pages;
        int32_t num_pages, cap;
    } *reqs; /* indexed by request id */
    int32_t num_reqs;
    /* pages set aside under a ticket, owned by no request: a request's K/V moving to or from another
     * engine (a disaggregated fleet's move) */
    struct eng_kv_held {
        int64_t ticket;
        struct eng_kv_req r;
    } *held;
    int32_t num_held, cap_held;
};

void eng_kv_init(struct eng_kv *kv, int32_t page_tokens, int32_t num_pages);
void eng_kv_free(struct eng_kv *kv);
/* Grows r's pages to hold `tokens` keys; fails (nothing changed) when the pool is short. */
int eng_kv_reserve(struct eng_kv *kv, int32_t req_id, int32_t tokens, struct ts_err *err);
void eng_kv_release(struct eng_kv *kv, int32_t req_id);
/* Frees r's pages beyond those its first `tokens` keys take (a sparse selection's candidates once
 * the kept keys were copied to the front); fewer pages than that are left as they are. */
void eng_kv_truncate(struct eng_kv *kv, int32_t req_id, int32_t tokens);
int32_t eng_kv_slot(const struct eng_kv *kv, int32_t req_id, int32_t key);
/* A move between engines. The sender sets a request's pages aside under a ticket (eng_kv_hold: the
 * request then holds none) and frees them once they are copied (eng_kv_drop). The receiver takes
 * free pages under a ticket of its own to copy into (eng_kv_take) and gives them to the request's id
 * there (eng_kv_adopt), which must hold no pages. A ticket names one set at a time: -1 with err where
 * it is in use (hold, take) or unknown (adopt), or the pool is short (take); nothing changes then. */
int eng_kv_hold(struct eng_kv *kv, int32_t req_id, int64_t ticket, struct ts_err *err);
int eng_kv_take(struct eng_kv *kv, int64_t ticket, int32_t pages, struct ts_err *err);
int eng_kv_adopt(struct eng_kv *kv, int64_t ticket, int32_t req_id, struct ts_err *err);
void eng_kv_drop(struct eng_kv *kv, int64_t ticket); /* an unknown ticket: nothing */
/* The pages set aside under ticket, or NULL. */
const struct eng_kv_req *eng_kv_held(const struct eng_kv *kv, int64_t ticket);

struct eng_plan {
    int32_t T, S, R, num_tiles, num_page_refs;
    int32_t max_key_len; /* the longest segment's kv + q */
    int32_t min_q, max_q; /* the shortest and the longest segment's q */
    int32_t long_tiles, long_rows, wg_tiles; /* k_attn_args' fields (attn_tiles): the tiles
                                              * and rows of the segments of at least ATTN_LONG_Q
                                              * rows, whose tiles come first, those at multiples of
                                              * 128 rows (wg_tiles of them) before the others */
    /* per token [T] */
    int32_t *tok_pos, *tok_slot, *tok_ids;
    /* per segment [S] */
    int32_t *q_start, *q_len, *key_len, *kv_cached, *page_off;
    int32_t *pages;     /* [num_page_refs]: each segment's page list, concatenated */
    int32_t *tiles;     /* [num_tiles][2]: (segment, first query row) of 64-row query tiles */
    int32_t *logit_idx; /* [R]: packed rows whose logits are computed */
    int32_t num_sel, max_cand, max_keep; /* selecting segments, their most candidates and kept */
    int32_t *sel;       /* [num_sel][6]: first scoring row, scoring rows, candidates, keep, the
                         * page_off of the candidates' pages and of the kept tokens' pages */
    /* a layered step (X > 0; see above) */
    int32_t X;          /* hidden rows; 0: not layered (the hidden rows are the T query rows) */
    int32_t *x_ids, *x_slot; /* [X] token ids; each row's KV slot */
    int32_t *x_comp;    /* [X] the computed row of each hidden row, or -1 */
    int32_t *c_row;     /* [T] the hidden row of each computed row */
    int32_t num_probe, probe_rows, max_probe; /* probing segments, their probe rows summed, the most */
    int32_t *probe;     /* [num_probe][5]: first hidden row of the probe rows, probe rows, picked, the
                         * first computed row of the picked ones, the first probe row's position
                         * (k_fc_pick_args.probe) */
    int32_t *probe_idx; /* [probe_rows]: the probe rows' hidden rows */
    struct eng_plan *front; /* the front layers' plan (T, attention, tok_pos, tok_slot, c_row, x_comp;
                             * owned), or NULL: every layer runs this one */
    bool evict;             /* an evicting step (see above): front and this plan, c_row and probe */
    bool widen;             /* a widening step (see above): front and this plan */
    size_t cap_T, cap_S, cap_R, cap_tiles, cap_pages, cap_sel, cap_X, cap_probe, cap_probe_idx;
};

void eng_plan_init(struct eng_plan *p);
void eng_plan_free(struct eng_plan *p);
/* Reserves pages and fills the plan for sd. Token ids are a hash of (seed, request, position), so a
 * replay is deterministic. Fails, with nothing launched, when the pool is short. kv = NULL: the
 * stateless engine (no pool, K/V read in place from the step's qkv rows): every segment must read
 * no cached tokens and select none; token t's slot is t and the pages are one token each over the
 * segment's rows. */
int eng_plan_build(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd,
                   int32_t vocab, uint64_t seed, struct ts_err *err);
/* A generation's tokens (eng_gen.h): id(ctx, request, position) is the token at a key position, or
 * -1 where the request has none (the hash stays); pos(ctx, request, i) (NULL: none) the position of
 * the segment's i-th query row (an evicting segment's i-th front row) where its rows do not follow
 * its cached keys, or -1: the dual cache's block between cached positions, FOCUS's rows of a block
 * whose decided positions are scattered among its masked ones. */
struct eng_tokens {
    int32_t (*id)(void *ctx, int32_t req_id, int32_t pos);
    int32_t (*pos)(void *ctx, int32_t req_id, int32_t row);
    /* IterSmooth (eng_smooth_next; NULL: none): the soft-embedding row the position's embedding
     * adds, times *w, or -1 */
    int32_t (*soft)(void *ctx, int32_t req_id, int32_t pos, float *w);
    /* A request's prompt length, for the extensions that read it (SparseD's patterns; NULL: unknown) */
    int32_t (*prompt)(void *ctx, int32_t req_id);
    void *ctx;
};
/* Applies t to p: the hashed token ids of p (its front plan's, a layered step's hidden rows')
 * replaced by the requests' own; a segment whose rows t places gets those positions and their slots
 * (its keys stay kv + q: every position up to the last, the rows' own K/V written where they sit;
 * an evicting segment's later rows the positions of the front rows they continue). Fails, changing
 * nothing, where a placed row would leave its segment's keys, an evicting segment's candidates would
 * not ascend, or the step selects or has per-layer rows. */
int eng_plan_set_ids(struct eng_plan *p, struct eng_kv *kv, const struct step_desc *sd, const struct eng_tokens *t,
                     struct ts_err *err);

/* Whether sd is a layered step, an evicting one or a widening one (see above; the evict or the
 * cache_inputs knob and some segment with a front shape: without one, it is a plain step). */
bool eng_plan_layered(const struct step_desc *sd);
bool eng_plan_evicting(const struct step_desc *sd);
bool eng_plan_widening(const struct step_desc *sd);

#endif
