/* cost_op.c: the names of the forward's ops (cost_op.h). */
#include "cost_op.h"

#include <string.h>

static const char *const op_names[OP_COUNT] = {
    "embed", "norm", "qkv", "rope", "kv_write", "attention", "kv_select", "feat_cache", "o_proj", "resid",
    "gate_up", "act", "down", "router", "experts", "allreduce", "lm_head", "sample", "host"};

const char *cost_op_name(enum cost_op op) { return (unsigned)op < OP_COUNT ? op_names[op] : "?"; }

int cost_op_parse(const char *name, enum cost_op *out)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_names[i], name) == 0) {
            *out = (enum cost_op)i;
            return 0;
        }
    return -1;
}
