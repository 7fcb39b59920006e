/*
 * eng_ext_decl.h: the engine's extensions as every floor knows them (the engine's own table of hooks
 * is engine/ext/eng_ext.h, whose rows carry these names). A policy names the extensions its steps
 * need (policy_ops.engine); the command lines ask here whether a live run, a replay of stored steps or
 * a live fleet's move can carry them, and say what is missing by the declaration's words.
 */
#ifndef TESSERA_ENG_EXT_DECL_H
#define TESSERA_ENG_EXT_DECL_H

#include <stdbool.h>
#include <stdint.h>

struct eng_ext_decl {
    const char *name;
    const char *what;  /* what it does, a phrase */
    const char *keeps; /* NULL, or what it keeps on the engine for a request beyond its K/V, built by a
                        * live run from the request's own activations: a replay of stored steps lacks
                        * it, and a live fleet's move does not carry it */
    bool beside;       /* run beside the engine by the live executor (engine/harness/eng_live.c), not by
                        * the engine itself: a replay, the engine's steps alone, lacks it */
};

/* What a policy's parameters set in the extensions its steps need, typed (policy_ops.ext_params fills
 * it from the policy's own parameters; the engine takes it as eng_opts.ext). Zero where the policy
 * needs no such extension. */
struct eng_ext_params {
    int32_t sparsed_block; /* SparseD's patterns: their blocks of query rows and keys (a multiple of 64) */
    double sparsed_select; /* the share of key blocks each pass keeps (SparseD's select) */
};

/* The extensions the engine runs itself, by their place in the declarations (eng_ext_decl_get): the
 * engine's table of hooks (engine/ext/eng_ext.c) has a row for each, and eng_opts.room an entry. */
enum eng_ext_id { EXT_SPARSED, EXT_DRIFT, EXT_ROLLOUT, EXT_SMOOTH, EXT_CREDIT, EXT_ENGINE_IDS };

/* The room an engine keeps for one of its extensions (eng_opts.room[id]): the requests it holds state
 * for and the positions (rows) of each; 0 requests: the extension is off. What a position is, is the
 * extension's own (a request's whole sequence for SparseD, the drift test and the rollout; a block's
 * positions for credit decoding; the response's for IterSmooth). */
struct eng_ext_room {
    int32_t requests, positions;
};

/* The declaration named `name`, or NULL. */
const struct eng_ext_decl *eng_ext_decl_find(const char *name);
/* The i-th declaration, NULL past the end. */
const struct eng_ext_decl *eng_ext_decl_get(int i);
/* Whether the space-separated list of extension names `list` (NULL: none) names `name`. */
bool eng_ext_named(const char *list, const char *name);

/* Where a policy's steps run (eng_ext_refused's use). */
enum eng_ext_use {
    ENG_EXT_LIVE,   /* a live run: the engine and the live executor */
    ENG_EXT_REPLAY, /* a replay of stored steps: the engine alone */
    ENG_EXT_MOVE,   /* a live fleet's move of a request between engines: its K/V pages alone */
};
/* Why steps that need the extensions `list` cannot run where `use` says, as a phrase naming the first
 * that cannot and what it lacks ("SparseD's patterns (sparsed) keep each request's pattern ..."), or
 * NULL where every one can. An unknown name cannot run anywhere. The text lives in buf. */
const char *eng_ext_refused(const char *list, enum eng_ext_use use, char *buf, int len);

#endif
