/*
 * eng_ext_decl.c: the declarations of the engine's extensions (eng_ext_decl.h). Adding an extension:
 * one row here (one the engine runs itself: at its id, eng_ext_decl.h, before those run beside it),
 * and its file and row in engine/ext/.
 */
#include "eng_ext_decl.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

static const struct eng_ext_decl decls[] = {
    [EXT_SPARSED] = {.name = "sparsed",
     .what = "SparseD's patterns of kept key blocks, built from each request's queries and keys, its steps "
             "attending by them",
     .keeps = "each request's pattern of kept key blocks (built from its own queries and keys)"},
    [EXT_DRIFT] = {.name = "drift", .what = "Elastic-Cache's drift test, measured in every layer"},
    [EXT_ROLLOUT] = {.name = "rollout", .what = "d2Cache's attention rollout, measured over every layer"},
    [EXT_SMOOTH] = {.name = "smooth", .what = "dInfer's IterSmooth: soft embeddings of the masked positions"},
    [EXT_CREDIT] = {.name = "credit", .what = "dInfer's credit decoding: each logit row fused with its credits"},
    {.name = "host", .what = "K/V offloaded to host memory, its transfers and host scan (HERALD's)", .beside = true},
};

const struct eng_ext_decl *eng_ext_decl_find(const char *name)
{
    for (size_t i = 0; name && i < TS_ARRAY_LEN(decls); i++)
        if (strcmp(decls[i].name, name) == 0)
            return &decls[i];
    return NULL;
}

const struct eng_ext_decl *eng_ext_decl_get(int i)
{
    return i >= 0 && (size_t)i < TS_ARRAY_LEN(decls) ? &decls[i] : NULL;
}

/* The next name of list from *at on into word (at most len - 1 characters); false at the end. */
static bool next_name(const char **at, char *word, size_t len)
{
    const char *p = *at + strspn(*at, " ");
    const size_t n = strcspn(p, " ");
    if (n == 0)
        return false;
    snprintf(word, len, "%.*s", (int)n, p);
    *at = p + n;
    return true;
}

bool eng_ext_named(const char *list, const char *name)
{
    char word[64];
    for (const char *at = list ? list : ""; next_name(&at, word, sizeof word);)
        if (strcmp(word, name) == 0)
            return true;
    return false;
}

const char *eng_ext_refused(const char *list, enum eng_ext_use use, char *buf, int len)
{
    char word[64];
    for (const char *at = list ? list : ""; next_name(&at, word, sizeof word);) {
        const struct eng_ext_decl *d = eng_ext_decl_find(word);
        if (!d)
            snprintf(buf, (size_t)len, "the engine extension '%s', which the engine does not have", word);
        else if (use == ENG_EXT_REPLAY && d->beside)
            snprintf(buf, (size_t)len, "%s (the engine extension %s), which runs beside the engine in a live run "
                                       "(tessera sim --executor gpu), not in a replay of the engine's steps", d->what,
                     d->name);
        else if (use != ENG_EXT_LIVE && d->keeps)
            snprintf(buf, (size_t)len, "%s (the engine extension %s), which keeps %s on the engine: %s", d->what,
                     d->name, d->keeps,
                     use == ENG_EXT_REPLAY ? "a live run builds it (tessera sim --executor gpu), a replay of stored "
                                             "steps lacks it"
                                           : "a live move carries a request's K and V alone");
        else
            continue;
        return buf;
    }
    return NULL;
}
