/*
 * step_desc.h: the description of one model forward, the contract of tessera.
 *
 * The simulator's policies emit segments, schedulers pack them into a step_desc, the memory model
 * sizes its activations, the cost model prices it and the engine executes it. Nothing else crosses
 * those boundaries, so every field below is a shape, never a pointer into simulator state.
 *
 * A segment is one request's part of a step:
 *   q           query tokens: rows that run through every layer
 *   kv          cached context tokens those queries attend to (read from the KV cache)
 *   kv_write    tokens whose K/V this step stores into the cache
 *   logit_rows  rows whose logits are materialised (LM head rows)
 *   decoded     tokens committed by this step
 *   missed      decodable tokens the step did not decode because it did not compute them (FOCUS's
 *               eviction); an outcome like decoded, not a shape
 *   phase       FULL, REFRESH, REUSE, PREFILL or BLOCK
 *   padding     the rows are run only to keep a batch in lockstep: PAD_REQUEST (1), a static batch's or a
 *               sync round's rows for a request that waits; PAD_GRAPH (2), the rows a captured CUDA
 *               graph runs past the batch's requests (no request's)
 *   keep        > 0: sparse KV (Sparse-dLLM, dLLM-Serve): after this step the cache keeps only keep
 *               of the segment's tokens per layer, those its scoring rows attend to most (see below)
 *   score_rows  with keep > 0: its last score_rows query rows (the current block) score the other
 *               q - score_rows rows, the candidates; the scoring rows are never kept
 *   q_front, kv_front, kv_write_front
 *               > 0 (q_front): the step's first front_layers layers (a step knob) run this shape
 *               instead: q_front rows over kv_front cached tokens, writing kv_write_front tokens'
 *               K/V (dLLM-Cache's layer 0 runs the whole sequence; FOCUS's layers 0-1 run every
 *               active token of the block and the later layers only the kept ones). 0: every
 *               layer runs q, kv and kv_write
 *   probe       candidate rows, the segment's last probe rows (at most q + carry, or q_front), among
 *               which the later layers' rows are picked: each later layer projects their values
 *               again and compares them with the cached ones (dLLM-Cache's similarity check; their V
 *               is written), or, in an evicting step (the evict knob), the front layers' attention
 *               ranks them once (FOCUS's importance delta)
 *   picked      with probe > 0: how many of the q rows are picked among the probe rows (those whose V
 *               moved most, or whose importance delta is largest); the other q - picked are rows
 *               always computed (dLLM-Cache's refreshed prompt; FOCUS's decoded rows waiting for the
 *               cache, the front rows before the candidates)
 *   carry       rows the later layers carry on cached attention and FFN outputs (added to the
 *               residual stream, not computed): their logits can still be taken, so logit_rows is
 *               at most q + carry
 *   attn_keys   > 0: each query row's attention scores this many keys instead of its q + kv, at
 *               every layer: a block-sparse pattern (SparseD's kept key blocks) keeps fewer; the
 *               step that builds one scores more (its pattern's scores priced as pairs). The K/V
 *               read and written are those of q, kv and kv_write
 *   host_kv     tokens whose K/V the step first brings from host memory into its kv, over the
 *               card's host link (HERALD's selected entries, offloaded to the host)
 *   host_scan   keys the host scores for a selection before the step (HERALD's top-k, on the CPU
 *               over the offloaded keys); each a key's bytes read from host memory
 * Attention within a segment is bidirectional over its own q tokens plus its kv cached tokens
 * (block-causal models attend to the same set: the cached prefix plus the current block).
 */
#ifndef TESSERA_STEP_DESC_H
#define TESSERA_STEP_DESC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

enum { PAD_REQUEST = 1, PAD_GRAPH = 2 };
enum seg_phase {
    PHASE_FULL = 0, /* vanilla: the whole sequence, no cache */
    PHASE_REFRESH,  /* recompute everything and (re)write the cache */
    PHASE_REUSE,    /* a few rows over cached K/V */
    PHASE_PREFILL,  /* block policy: prompt K/V only, nothing decoded */
    PHASE_BLOCK,    /* block policy: the current block over the cached prefix */
    PHASE_COUNT
};

const char *seg_phase_name(enum seg_phase p);
/* The phase named `name` (as seg_phase_name writes it); PHASE_REUSE for an unknown name. */
enum seg_phase seg_phase_from_name(const char *name);

struct segment {
    int32_t req_id;
    int32_t q;          /* tokens */
    int32_t kv;         /* tokens */
    int32_t kv_write;   /* tokens */
    int32_t logit_rows; /* rows */
    int32_t decoded;    /* tokens */
    int32_t missed;     /* tokens */
    uint8_t phase;      /* enum seg_phase */
    uint8_t padding;    /* 0, PAD_REQUEST or PAD_GRAPH (above); padding commits nothing */
    int32_t keep;       /* tokens the cache keeps after the step (sparse selection); 0: no selection.
                         * A selecting segment reads no cache (kv = 0) and keeps at most its
                         * candidates, q - score_rows */
    int32_t score_rows; /* the selecting segment's last rows, whose attention scores the candidates */
    int32_t q_front;        /* rows of the front layers (> 0), or 0: as q */
    int32_t kv_front;       /* cached tokens the front layers read (with q_front > 0) */
    int32_t kv_write_front; /* tokens whose K/V the front layers write (with q_front > 0) */
    int32_t probe;          /* rows whose values are checked against the cache, at most q + carry */
    int32_t carry;          /* rows carried on cached outputs through the later layers */
    int32_t picked;         /* of the q rows, those the probe picks (1..min(q, probe) with probe > 0) */
    int32_t attn_keys;      /* > 0: the keys each query row's attention scores, in place of q + kv (a
                             * sparse pattern keeps fewer; building one scores more: SparseD's) */
    int32_t host_kv;        /* tokens of kv whose K/V come from host memory for this step */
    int32_t host_scan;      /* keys the host scores (reading them from host memory) for this step */
};

/* A segment's shape at the front layers (q_front > 0) or at the others. */
static inline void segment_layer_shape(const struct segment *s, bool front, int32_t *q, int32_t *kv, int32_t *kv_write)
{
    const bool f = front && s->q_front > 0;
    *q = f ? s->q_front : s->q;
    *kv = f ? s->kv_front : s->kv;
    *kv_write = f ? s->kv_write_front : s->kv_write;
}

/* Whether a segment builds a block-sparse pattern (SparseD's: its attention scores more keys than
 * its rows see, the pattern's scores beside its own), where attn_keys > 0 and it does not: it
 * attends by the pattern its request built. */
static inline bool segment_builds_pattern(const struct segment *s)
{
    return s->attn_keys > (int64_t)s->q + s->kv;
}

/* The rows whose hidden state a segment holds at once: the front rows, or the later layers' rows
 * and carried rows, whichever is more. */
static inline int32_t segment_rows(const struct segment *s)
{
    return s->q_front > s->q + s->carry ? s->q_front : s->q + s->carry;
}

/* The sums a layer's cost depends on, at the front layers (step_totals.front). */
struct layer_totals {
    int64_t q_tokens;
    int64_t kv_write_tokens;
    int64_t max_q;
    double attn_qk_pairs;
    int64_t attn_kv_read;
};

/* Sums over a step's segments, kept up to date by step_desc_add(). The cost model and the memory
 * model read only these, so pricing a step is O(1) once it is packed. The layer sums (q_tokens,
 * kv_tokens, kv_write_tokens, max_q, attn_*) are the later layers'; the front layers' are in front
 * (the same values where no segment has a front shape). */
struct step_totals {
    int64_t num_segs;
    int64_t q_tokens;
    int64_t kv_tokens;
    int64_t kv_write_tokens;
    int64_t logit_rows;
    int64_t decoded;
    int64_t max_q;        /* the longest segment's q */
    double attn_qk_pairs; /* sum over segments of q * (q + kv): query-key pairs scored (fewer where
                           * attn_block > 0: attn_pairs) */
    int64_t attn_kv_read; /* sum over segments of (q + kv): keys/values each segment reads */
    int64_t by_phase[PHASE_COUNT];
    int64_t sel_segs;     /* segments that select (keep > 0) */
    int64_t sel_cand;     /* their candidate tokens (q - score_rows), summed */
    int64_t sel_keep;     /* their kept tokens, summed */
    int64_t sel_rows;     /* their scoring rows, summed */
    int64_t sel_max_cand; /* the most candidates one of them has */
    int64_t sel_max_keep; /* the most tokens one of them keeps */
    struct layer_totals front; /* the front layers' sums */
    int64_t split_segs;   /* segments with a front shape (q_front > 0) */
    int64_t probe_tokens; /* rows checked against the cache, summed */
    int64_t carry_tokens; /* rows carried on cached outputs, summed */
    int64_t rows;         /* sum of segment_rows: the hidden states the step holds at once */
    int64_t graph_rows;   /* segments that are a captured graph's padding (PAD_GRAPH): no request's */
    int64_t host_kv_tokens;   /* K/V tokens brought from host memory, summed */
    int64_t host_scan_tokens; /* keys scored on the host, summed */
};

struct step_desc {
    struct segment *segs; /* [num_segs] owned by the step_desc */
    int32_t num_segs;
    int32_t cap_segs;
    /* execution knobs: the cost model prices them, the planners size them and the engine runs them
     * as given (one name each, here and in every struct that carries them) */
    int32_t logit_chunk_rows; /* rows per LM-head chunk; 0 = monolithic (the user's --max-num-logits) */
    int32_t ffn_chunks;       /* FFN token chunks (>= 1) */
    bool mask_only;           /* logits only for masked rows (Mosaic): the policies then give each
                               * segment logit_rows = its masked rows, and the engine gathers just
                               * those rows for the LM head */
    int32_t attn_block;       /* > 0: block-causal attention over blocks of this many tokens (a
                               * block-causal model under the block policy, as the engine runs it):
                               * query row i of a segment sees its cached keys and its own rows up to
                               * the end of i's block; 0: bidirectional. Set before adding segments
                               * (the totals count the pairs it leaves); clear keeps it */
    bool select_heads;        /* sparse selection (segments with keep > 0): one kept set per K/V head
                               * (dLLM-Serve's head-centric cache) rather than one set shared by
                               * every head (Sparse-dLLM) */
    int32_t select_kernel;    /* the max-pool window over the candidates' scores (odd; 1: none) */
    int32_t front_layers;     /* the first layers that run a segment's front shape (q_front > 0);
                               * 0: none */
    bool decode_credit;       /* the decoder fuses the logits with a per-block credit matrix (dInfer's
                               * credit decoding): each logit row pays the fusion */
    bool iter_smooth;         /* dInfer's IterSmooth: each logit row's softmax times the embedding
                               * matrix is the next iteration's input embedding (a second LM-head
                               * GEMM, transposed, and a softmax over the vocabulary a row) */
    bool evict;               /* FOCUS's token eviction: the later layers run only the rows the front
                               * layers keep. A segment with a front shape runs q_front rows, the
                               * q_front - probe rows before its candidates and its probe candidates,
                               * through the front layers (at least 2); the importance delta of
                               * layers 1 and 0 over the candidates (the column sums of each head's
                               * softmax of its max-pooled pre-softmax scores among them) picks
                               * `picked` of them, and the later layers run those after the others
                               * (q = q_front - probe + picked) over the keys the front wrote,
                               * kv + q = kv_front + q_front at most (the engine's stop at the
                               * right-most row some step ran through every layer: eng_plan.h).
                               * Evicted rows leave the step; a segment without a front shape runs
                               * q rows through every layer */
    bool cache_outputs;       /* the cache also holds each token's attention and FFN outputs per
                               * layer (dLLM-Cache's feature cache): every computed row writes its
                               * outputs there, carried rows read theirs */
    bool cache_inputs;        /* the cache also holds each token's input to every layer (Elastic-Cache's
                               * layer inputs): every computed row writes its input there before the
                               * layer; a segment whose front shape is narrower (q_front rows over
                               * kv_front cached keys, then every row: kv = 0, q = kv_front + q_front)
                               * takes each other row's input to the first later layer from there */
    int32_t host_link_mbs;    /* MB/s of the host link host_kv crosses; 0: the card's (gpu.h host_bw) */
    int32_t host_scan_mbs;    /* MB/s at which the host reads the keys it scores (host_scan) */
    bool host_overlap;        /* the host's part (scoring, then the link) runs under the step's GPU work,
                               * layer by layer, the step taking the longer of the two; else before it */
    struct step_totals tot;
};

/* The shape of a profiled step, as the engine's profile grid makes it and a calibration row records
 * it (calib.h): segs sequences of q query rows over kv cached keys, logit_rows logit rows each. The
 * fields are written once here; a calibration row holds them in place (STEP_SHAPE_FIELDS). */
#define STEP_SHAPE_FIELDS \
    int32_t segs, q, kv, logit_rows; \
    int32_t kv_long;   /* 0: every sequence over kv cached keys; > 0: an uneven step, its last over kv_long \
                        * (the profile's uneven Reuse steps) */ \
    int32_t keep;      /* > 0: a selecting step (sparse KV): each sequence's last PROFILE_SCORE_ROWS rows \
                        * score the others and keep `keep` of them (the select grid) */ \
    int32_t sel_heads; /* with keep: 1 one kept set per K/V head, 0 one for all heads */ \
    int32_t fc_rows;   /* > 0: a dLLM-Cache step (step_desc_add_fc): each sequence's fc_rows hidden rows, \
                        * q computed over the kv = fc_rows - q others (the fc grid) */ \
    int32_t probe;     /* with fc_rows: > 0, the q rows picked among the last probe rows */ \
    int32_t q_long;    /* > 0: a mixed step, its last sequence q_long rows over kv_long cached keys (a \
                        * Refresh beside Reuse blocks: the ladder grid) */
struct step_shape {
    STEP_SHAPE_FIELDS
};
/* The rows and the cached keys of sequence s, and the rows of all of them. */
int32_t step_shape_q(const struct step_shape *p, int32_t s);
int32_t step_shape_kv(const struct step_shape *p, int32_t s);
int64_t step_shape_rows(const struct step_shape *p);
/* The step a shape prices, its sequences requests first.. on: a dLLM-Cache step over its feature
 * cache (step_desc_add_fc; front layers and the cached outputs set), else each sequence Reuse over
 * its cached keys or Full without. (engine profile runs a selecting step's own shape besides.) */
void step_shape_desc(const struct step_shape *p, int32_t first, struct step_desc *sd);

/* The execution knobs, each once: its name (as the database's step rows store it: step_runs, steps)
 * and its field. A run records every knob of every step, and a replay runs the step as recorded. */
struct step_knob {
    const char *name;
    size_t offset; /* in struct step_desc */
    bool is_bool;  /* a bool field, else an int32_t */
};
#define STEP_KNOBS 15
extern const struct step_knob step_knobs[STEP_KNOBS];
/* The knobs of sd as values in step_knobs' order, and back. */
void step_knobs_get(const struct step_desc *sd, int64_t v[STEP_KNOBS]);
void step_knobs_set(struct step_desc *sd, const int64_t v[STEP_KNOBS]);

void step_desc_init(struct step_desc *sd);
void step_desc_free(struct step_desc *sd); /* safe on a zeroed struct */
void step_desc_clear(struct step_desc *sd); /* drops segments, keeps knobs and storage */
/* NULL for a well-formed segment, else what is wrong with it, naming the field. */
const char *segment_check(const struct segment *seg);
/* Appends a copy of *seg (well-formed: segment_check) and updates the totals. */
void step_desc_add(struct step_desc *sd, const struct segment *seg);
/* Appends one of dLLM-Cache's segments for request req (as its policy emits them): `rows` hidden
 * rows, each a key, q of them computed over the cached K/V of the others, which ride on their cached
 * outputs; probe > 0: the q are picked among the last probe rows (a partial update); q < rows: the
 * front layers run every row (set the step's knobs: front_layers, cache_outputs). */
void step_desc_add_fc(struct step_desc *sd, int32_t req, int32_t q, int32_t rows, int32_t probe, int32_t logit_rows);
/* Recomputes the totals from the segments (tests compare it with the incremental ones). */
void step_totals_compute(const struct step_desc *sd, struct step_totals *out);
/* The keys query row `row` of a segment of q rows over kv cached sees: all q + kv, or with block-
 * causal attention over blocks of bs tokens (bs > 0) kv and its rows up to the end of row's block. */
int64_t attn_row_keys(int64_t q, int64_t kv, int32_t bs, int64_t row);
/* The query-key pairs a segment scores: q (q + kv), or the block-causal count (bs > 0). */
double attn_pairs(int64_t q, int64_t kv, int32_t bs);
/* The pairs segment s scores at its later layers: q attn_keys where it has them, else attn_pairs. */
double segment_attn_pairs(const struct segment *s, int32_t bs);
/* Number of LM-head chunks the step runs (0 when it has no logit rows). */
int64_t step_num_logit_chunks(const struct step_desc *sd);
/* The layers of a model of num_layers that run the front shapes: front_layers where some segment
 * has one, else 0. */
int32_t step_front_layers(const struct step_desc *sd, int32_t num_layers);

#endif
