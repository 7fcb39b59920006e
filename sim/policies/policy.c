/* policy.c: the policy table and the block progress shared by every policy. */
#include "policy.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const struct policy_ops *const policies[] = {
    &policy_vanilla,
    &policy_prefix,
    &policy_dual,
    &policy_block,
    &policy_block_delayed,
    &policy_vicinity,
    &policy_sparse,
    &policy_dllm_cache,
    &policy_focus,
    &policy_ar,
    &policy_dpad,
    &policy_fdllm_v2,
    &policy_d2cache,
    &policy_elastic,
    &policy_d2f,
    &policy_sparsed,
    &policy_herald,
    &policy_dkv,
    &policy_serve_block,
    &policy_dsb,
    &policy_linear_spec,
    &policy_dflash,
};

/* policies added at run time (policy_register), after the built-in ones */
static const struct policy_ops *registered[8];
static size_t num_registered;

const struct policy_ops *policy_get(int i)
{
    if (i < 0)
        return NULL;
    if ((size_t)i < TS_ARRAY_LEN(policies))
        return policies[i];
    i -= (int)TS_ARRAY_LEN(policies);
    return (size_t)i < num_registered ? registered[i] : NULL;
}

const struct policy_ops *policy_find(const char *name)
{
    for (int i = 0; policy_get(i); i++)
        if (ts_name_eq(policy_get(i)->name, name))
            return policy_get(i);
    return NULL;
}

int policy_register(const struct policy_ops *p)
{
    if (policy_find(p->name) || num_registered == TS_ARRAY_LEN(registered) || p->num_params > PARAMS_MAX)
        return -1;
    registered[num_registered++] = p;
    return 0;
}

static const char *policy_name_at(int i) { return policy_get(i) ? policy_get(i)->name : NULL; }

void policy_list(char *buf, size_t len) { ts_join_names(buf, len, policy_name_at); }

int policy_resolve(const char *name, const struct policy_ops **out, struct ts_err *err)
{
    *out = policy_find(name);
    if (*out)
        return 0;
    char list[256];
    policy_list(list, sizeof list);
    return ts_fail(err, "unknown policy '%s' (known: %s)", name, list);
}

int32_t policy_attn_block(const char *policy, const struct model_cfg *m, int32_t block_size)
{
    const struct policy_ops *po = policy ? policy_find(policy) : NULL;
    return po && (po->caps & POLICY_BLOCK_CAUSAL) && m->block_causal ? block_size : 0;
}

void policy_step_knobs(const struct policy_ops *po, const struct policy_cfg *pc, const struct model_cfg *m,
                       struct step_desc *sd)
{
    sd->attn_block = (po->caps & POLICY_BLOCK_CAUSAL) && m->block_causal ? pc->block_size : 0;
    if (po->knobs)
        po->knobs(pc, sd);
}

void policy_ext_params(const struct policy_ops *po, const struct policy_cfg *pc, struct eng_ext_params *out)
{
    *out = (struct eng_ext_params){0};
    if (po->ext_params)
        po->ext_params(pc, out);
}

void policy_req_init(struct request *r, const struct policy_cfg *pc)
{
    TS_ASSERT(pc->block_size > 0 && r->G > 0 && r->P >= 0 && r->C >= 0 && r->C <= r->G);
    r->Bs = pc->block_size;
    r->L = r->P + r->G;
    r->head = pc->aligned_blocks ? r->P % r->Bs : 0;
    r->num_blocks = (r->G + r->head + r->Bs - 1) / r->Bs;
    r->last_block = r->num_blocks - 1;
    if (pc->early_stop) {
        int32_t eos_block = (r->C + r->head) / r->Bs; /* the block holding the first EOS position */
        if (eos_block < r->last_block)
            r->last_block = eos_block;
    }
    r->cur_block = r->decoded_in_block = r->decoded_total = 0;
    r->steps_in_block = r->steps = r->resolved_in_block = 0;
    memset(r->pstate, 0, sizeof r->pstate);
    r->need_refresh = false;
}

/* A block policy's step: the block progress moved by the step's count, then the policy's state. */
static bool advance_block(const struct policy_ops *po, struct request *r, const struct policy_cfg *pc,
                          const struct segment *seg)
{
    TS_ASSERT(seg->decoded <= req_masked_in_block(r));
    const bool resolved = req_masked_in_block(r) == 0; /* (before the step) */
    r->decoded_in_block += seg->decoded;
    r->decoded_total += seg->decoded;
    r->steps++;
    r->steps_in_block++;
    r->need_refresh = false;
    if (resolved && seg->phase != PHASE_PREFILL)
        r->resolved_in_block++;
    bool block_done = (po->caps & POLICY_CONFIRMS_BLOCK)
                          ? r->resolved_in_block >= (po->confirm_steps ? po->confirm_steps(pc) : 1)
                          : r->decoded_in_block == req_block_len(r, r->cur_block);
    bool finished = block_done && r->cur_block == r->last_block;
    if (block_done && !finished) {
        r->cur_block++;
        r->decoded_in_block = 0;
        r->steps_in_block = 0;
        r->resolved_in_block = 0;
    }
    po->advance(r, pc, seg, block_done);
    return finished;
}

void policy_progress_to(struct request *r, int32_t total)
{
    int32_t b = r->cur_block;
    while (b < r->last_block && total >= req_block_start(r, b) + req_block_len(r, b))
        b++;
    r->cur_block = b;
    r->decoded_in_block = total - req_block_start(r, b);
}

/* A pipelined policy's step: its advance (seeing the request as its emit did) moves the block progress. */
static bool advance_pipelined(const struct policy_ops *po, struct request *r, const struct policy_cfg *pc,
                              const struct segment *seg, int32_t end)
{
    const int32_t block = r->cur_block;
    po->advance(r, pc, seg, false);
    r->decoded_total += seg->decoded;
    TS_ASSERT(r->decoded_total <= end);
    r->steps++;
    r->steps_in_block = r->cur_block == block ? r->steps_in_block + 1 : 0;
    r->need_refresh = false;
    return r->decoded_total == end;
}

bool policy_advance(const struct policy_ops *po, struct request *r, const struct policy_cfg *pc,
                    const struct segment *seg)
{
    const int32_t end = req_end(r);
    bool finished = (po->caps & POLICY_PIPELINED) ? advance_pipelined(po, r, pc, seg, end) : advance_block(po, r, pc, seg);
    /* Prophet's early commit: every position left (to the last block, --early-stop's where it moved it)
     * commits with this step */
    if (!finished && pc->early_commit > 0 && r->decoded_total >= pc->early_commit * end) {
        r->decoded_total = end;
        finished = true;
    }
    return finished;
}

void policy_emit_refresh(const struct request *r, const struct policy_cfg *pc, struct segment *s)
{
    s->phase = PHASE_REFRESH;
    s->q = r->L;
    s->kv = 0;
    s->kv_write = r->L;
    s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
}

void policy_emit_prefill(const struct request *r, struct segment *s)
{
    s->phase = PHASE_PREFILL;
    s->q = r->P + r->cur_block * r->Bs - r->prefix_hit;
    s->kv = r->prefix_hit;
    s->kv_write = s->q;
    s->logit_rows = 0;
}

int64_t policy_kv_none(const struct request *r, const struct policy_cfg *pc)
{
    (void)r, (void)pc;
    return 0;
}

int64_t policy_kv_whole(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

int32_t policy_q_whole(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    return r->L;
}

int32_t policy_peak_logit_rows(const struct policy_ops *po, const struct request *r, const struct policy_cfg *pc,
                               int32_t q)
{
    const int32_t all = policy_logit_rows(pc, q, r->G);
    return po->peak_logits ? TS_MIN(all, po->peak_logits(r, pc)) : all;
}

int32_t policy_block_peak_q(const struct request *r, const struct policy_cfg *pc)
{
    (void)pc;
    int32_t commit = r->last_block > 0 ? 2 * r->Bs : r->Bs;
    int32_t prefill = r->P + r->last_block * r->Bs; /* a prefill after recompute */
    return prefill > commit ? prefill : commit;
}

bool policy_emit_chosen(const struct request *r, const struct policy_cfg *pc, int32_t q, int32_t masked,
                        struct segment *s)
{
    if (!POLICY_STATE(r, const struct chosen_state)->cached || r->need_refresh) {
        s->phase = PHASE_FULL;
        s->q = s->kv_write = r->L;
        s->logit_rows = policy_logit_rows_seq(pc, r, s->q);
        return true;
    }
    s->phase = PHASE_REUSE;
    s->q = s->kv_write = TS_MIN(r->L, q);
    s->kv = r->L - s->q;
    s->logit_rows = policy_logit_rows(pc, s->q, masked);
    return false;
}

void policy_chosen_advance(struct request *r, const struct segment *s)
{
    *POLICY_STATE(r, struct chosen_state) = (struct chosen_state){.cached = true, .last_decoded = s->decoded};
}

void policy_refresh_advance(struct request *r, const struct policy_cfg *pc, const struct segment *s,
                            bool block_done)
{
    (void)pc, (void)block_done;
    struct refresh_state *st = POLICY_STATE(r, struct refresh_state);
    st->since_refresh = s->phase == PHASE_REFRESH ? 1 : st->since_refresh + 1;
}
