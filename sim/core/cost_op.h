/*
 * cost_op.h: the ops of a forward, as the cost model prices them and the engine times them. One
 * list, so that a per-op breakdown means the same in a simulated step, a profiled step and a
 * replayed one (calibration rows, engine_step_ops, op_breakdown all name ops by cost_op_name).
 */
#ifndef TESSERA_COST_OP_H
#define TESSERA_COST_OP_H

enum cost_op {
    OP_EMBED = 0, OP_NORM, OP_QKV, OP_ROPE, OP_KV_WRITE, OP_ATTN, OP_KV_SELECT, OP_FEAT_CACHE, OP_OPROJ, OP_RESID,
    OP_GATE_UP, OP_ACT, OP_DOWN, OP_ROUTER, OP_EXPERTS, OP_ALLREDUCE, OP_LM_HEAD, OP_SAMPLE, OP_HOST,
    OP_COUNT
};

/* The LM-head chunk `tessera engine profile` runs its steps with: a calibration's LM-head and
 * sampling rows are times of chunks of at most this many rows. */
#define PROFILE_LOGIT_CHUNK 2048
/* The scoring rows of each segment of a profiled selecting step (a block of the papers' 32): the
 * calibration's kv_select rows time steps whose segments keep some of their other q - 32 rows. */
#define PROFILE_SCORE_ROWS 32

/* The op's name ("embed", "norm", "qkv", ..., "host"); "?" outside the list. */
const char *cost_op_name(enum cost_op op);
/* The op of a name cost_op_name gives into *out: 0, or -1 if none. */
int cost_op_parse(const char *name, enum cost_op *out);

#endif
