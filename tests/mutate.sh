#!/usr/bin/env bash
# mutate.sh: does the test suite catch small planted bugs? Each mutation below replaces one piece of
# code by a plausible mistake: the file is copied aside with the mistake in it, compiled with the
# flags the build gives it, and linked ahead of the built library into the suites that cover it (its
# functions then replace the library's), which must fail. The repository and its build are never
# touched. A mutation whose text is no longer in its file is reported as stale (the code moved:
# update the list). A suite named hostile:CASE is the command line linked with the mistake in it and
# run through the hostile inputs of tests/hostile/CASE.case.sh; sh:NAME, the same run through
# tests/NAME.sh. Prints one line a mutation and a closing "mutate: N passed, M failed" (a
# mutation passes when it is killed); exits 1 when any survives or is stale.
# Usage: mutate.sh [FILTER]   (FILTER: run only the mutations whose name contains it)
# Environment: BUILD (the build whose libtessera.a and flags it uses, default build), JOBS (mutations
# run at once, default 1), SHARD=K[,K...]/N (the mutations i, from 1, with (i - 1) mod N + 1 one of
# the Ks: runs whose Ks cover 1..N share the list),
# plus the Makefile's settings (NO_CUDA, DEPS, CC) passed to make.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
filter=${1:-}
build=${BUILD:-build}
jobs=${JOBS:-1}
shard=${SHARD:-1/1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root" || exit 2
mutations=(
    "kv bytes use the query heads|sim/core/model.c|    *local = 2LL * (m->num_layers - g) * model_kv_dim(m) * m->kv_bytes;|    *local = 2LL * (m->num_layers - g) * model_q_dim(m) * m->kv_bytes;|check_model check_cost"
    "the card never cools while idle|sim/cost/clock.c|    const double x0 = st->x * exp(-idle / p->tau_s);|    const double x0 = st->x;|check_clock"
    "a step priced at the cool clock whatever its own load|sim/cost/clock.c|/ (1 + p->k * clock_theta(p, g));|;|check_clock"
    "--op-scale leaves the roofline's host unscaled|sim/cost/cost_roofline.c|        host *= c->op_scale[OP_HOST];|        host *= 1;|check_cost"
    "--op-scale scales the calibrated ops after the host's wait|sim/cost/calib_price.c|        ms += 1e3 * cost_op_scale_ops(cx->op_scale, bd);|        bd->op_s[OP_HOST] -= cost_op_scale_ops(cx->op_scale, bd);|check_calib"
    "attention FLOPs halved|sim/cost/cost_roofline.c|add_split(p, OP_ATTN, layers, 4.0 * qd * lt->attn_qk_pairs,|add_split(p, OP_ATTN, layers, 2.0 * qd * lt->attn_qk_pairs,|check_cost"
    "IterSmooth's second LM head free under the roofline|sim/cost/cost_roofline.c|SELF_COND_NONE ? 2 : 1;|SELF_COND_NONE ? 1 : 1;|check_cost"
    "IterSmooth's second LM head free under the calibration|sim/cost/calib_price.c|        lm *= 2;|        lm *= 1;|check_cost"
    "DSB's cycle runs one step past its B commits|sim/policies/policy_dsb.c|st->cycle >= r->Bs;|st->cycle > r->Bs;|check_policy"
    "DSB's positions before the window ignore the last slide|sim/policies/policy_dsb.c|TS_MIN(TS_MAX(st->slide, (int32_t)pc->p[PREV]), first)|TS_MIN((int32_t)pc->p[PREV], first)|check_policy"
    "an editing decoder's post-edit forwards not run|sim/policies/policy.c|? r->resolved_in_block >= (po->confirm_steps ? po->confirm_steps(pc) : 1)|? r->resolved_in_block >= 1|check_sched"
    "a block's post-edit forwards counted on from the block before|sim/policies/policy.c|        r->resolved_in_block = 0;\n|\n|check_sched"
    "a loop's own host line multiplied by its loop's factor again|sim/cost/calib_price.c|(cx && cx->impl.host_factor > 0 && !c->host_own_loop ? cx->impl.host_factor : 1.0);|(cx && cx->impl.host_factor > 0 ? cx->impl.host_factor : 1.0);|check_calib"
    "a loop's own host line kept after another host profile replaces it|sim/cost/calib_host.c|    c->host_own_loop = false;|    (void)c;|check_calib"
    "--host replaces the line of its own machine's calibration|sim/cost/calib_host.c|    if (machine_host(c->device, &ref) && ref.host0_ms > 0) {|    if (!machine_host(c->device, &ref) && ref.host0_ms > 0) {|check_calib"
    "a transfer scales GEMMs by the rates the cards hold|sim/cost/calib_transfer.c|        a->bf16_flops = ma.gemm_flops, a->mem_bw = ma.copy_bw;|        a->bf16_flops = ma.gemm_held_flops, a->mem_bw = ma.copy_bw;|check_calib"
    "an FFN chunk priced once under the calibration|sim/cost/calib_price.c|    *ms = (double)full * piece + last;|    *ms = piece + last;|check_calib"
    "LM-head FLOPs halved|sim/cost/cost_roofline.c|add_split(&p, OP_LM_HEAD, lm_gemms * nch, 2 * R / nch * h * V,|add_split(&p, OP_LM_HEAD, lm_gemms * nch, R / nch * h * V,|check_cost"
    "K/V read as the query width|sim/cost/cost_roofline.c|a * (2 * T * qd + (double)lt->attn_kv_read * 2 * kvd)|a * (2 * T * qd + (double)lt->attn_kv_read * 2 * qd)|check_cost"
    "request admission ignores the activation peak|sim/sched/sched_request.c|r->act_need = TS_MAX(sim_act_peak(s, q, logits), 1);|r->act_need = 1;|check_sched"
    "lookahead checks its projections against twice the cap|sim/sched/sched_lookahead.c|fits = (in ? st->rows[t] : 0) + p->rows[t] <= cap &&|fits = (in ? st->rows[t] : 0) + p->rows[t] <= 2 * cap &&|check_sched"
    "another card's rounds price the forwards too|sim/pricing.c|    fwd = s->rounds_host_only ? ops : fwd * (raw > 0 ? ops / raw : 1);|    fwd = fwd * (raw > 0 ? ops / raw : 1);|check_sched"
    "the roofline leaves out a loop's work over its cached keys|sim/cost/cost_roofline.c|              2 * a * T * (qd + kvd) + im->key_rope_bytes * keys * kvd, ge);|              2 * a * T * (qd + kvd), ge);|check_cost"
    "the calibration counts a step's rows among its cached keys|sim/cost/calib_price.c|            const double keys = (nl - nf) * (double)(t->attn_kv_read - t->q_tokens) +|            const double keys = (nl - nf) * (double)(t->attn_kv_read) +|check_calib"
    "a derived loop's work over its cached keys dropped|sim/cost/impl.c|        out->key_rope_bytes = d->key_rope_bytes;\n|\n|check_cost check_calib"
    "dLLM-Cache's concatenation of its cache left out|sim/cost/impl.c|0, false, KEY_ROPE_BYTES + KV_CAT_BYTES},|0, false, KEY_ROPE_BYTES},|check_cost"
    "FP8 weights' GEMMs at the bf16 rate|sim/cost/cost_roofline.c|                       c->model.weight_bytes == 1 ? c->gpu.fp8_flops : c->gpu.bf16_flops};|                       c->gpu.bf16_flops};|check_cost"
    "FP8 weights read at two bytes|sim/cost/cost_roofline.c|    double a = 2.0, w = m->weight_bytes, h = m->hidden,|    double a = 2.0, w = 2.0, h = m->hidden,|check_cost"
    "FP8 weights' embedding, LM head and router held at a byte|sim/core/model.c|    return model_params(m) * m->weight_bytes + (m->weight_bytes < 2 ? kept * (2 - m->weight_bytes) : 0);|    return model_params(m) * m->weight_bytes + 0 * kept;|check_model"
    "FP8 weights' router held at a byte|sim/core/model.c|                         (int64_t)model_num_moe_layers(m) * m->hidden * m->num_experts;|                         0;|check_model"
    "load control starts at 0.9 whatever the profile's threshold|sim/fleet/fleet.c|        fl->tau0 = same ? own : 0.9;|        fl->tau0 = 0.9;|check_fleet"
    "a sweep beside a measured distribution taken|sim/decode.c|    if (out->nsteps > 0)\n        return ts_fail(err, \"%s: %s.sweep: a measured|    if (0)\n        return ts_fail(err, \"%s: %s.sweep: a measured|check_decode"
    "LinearSpec's draft keeps its window's K/V|sim/policies/policy_linear_spec.c|    s->kv_write = st->verify ? w : 0;|    s->kv_write = w;|check_policy"
    "LinearSpec's verify commits its matches but not the seed|sim/policies/policy_linear_spec.c|    return (int32_t)TS_MIN((int64_t)c + 1, (int64_t)window(r));|    return (int32_t)TS_MAX(TS_MIN((int64_t)c, (int64_t)window(r)), 1);|check_policy"
    "a sweep's accuracy held at its profile's threshold|sim/decode.c|    dm->accuracy = sw->accuracy[k] + w * (sw->accuracy[k + 1] - sw->accuracy[k]);|    (void)w;|check_decode check_sim"
    "a sweep's threshold read in the first segment alone|sim/decode.c|    while (k + 2 < sw->n && tau < sw->tau[k + 1])|    while (0)|check_decode"
    "a run's accuracy along a sweep not summed over its tokens|sim/sim.c|        s->acc_sum += (r->decoded_total - before) * s->dm.accuracy;|        (void)before;|check_sim"
    "the rounds' keys leave out the block's rows|sim/cost/rounds.c|        k += (double)s->q + (double)s->kv;|        k += (double)s->kv;|check_rounds"
    "the rounds' host work charged to every forward|sim/cost/rounds.c|    *host_s = rs->begins ? |    *host_s = true ? |check_rounds"
    "a graph between two measured ones priced as the smaller|sim/cost/rounds.c|    return f->a[j] + (f->a[j + 1] - f->a[j]) * ((double)g - x0) / (x1 - x0);|    return f->a[j];|check_rounds"
    "sglang's sync rounds charge the host every forward|sim/sched/sched_sglang.c|ROUND_SYNC, begins};|ROUND_SYNC, true};|check_sched"
    "the host's work between rounds charged at busy power|sim/pricing.c|    p->host_idles = true;|    p->host_idles = false;|check_sched"
    "an interval's draw leaves the rounds' host work alone|sim/pricing.c|* (s->cfg.speed_gpu > 0 \x26\x26 !s->rounds_host_only ? s->cfg.speed_gpu : 1);|* 1;|check_sched"
    "sglang admits one request past its cap|sim/sched/sched_sglang.c|s->num_running < (size_t)s->sched_p[MAX_RUNNING]|s->num_running <= (size_t)s->sched_p[MAX_RUNNING]|check_sched"
    "sglang's prefill rounds keep the denoising rows before them|sim/sched/sched_sglang.c|            rd->n = 0, rd->prefill = true;|            rd->prefill = true;|check_sched"
    "sglang's sync rounds end when one row is done|sim/sched/sched_sglang.c|        if (!row_done(s, rd, i))\n            return;|        if (row_done(s, rd, i))\n            return;|check_sched"
    "blocks confirmed without a forward|sim/policies/policy.c|    bool block_done = (po->caps & POLICY_CONFIRMS_BLOCK)|    bool block_done = (po->caps & 0)|check_sched"
    "blocks from the prompt's end under sglang|sim/policies/policy.c|    r->head = pc->aligned_blocks ? r->P % r->Bs : 0;|    r->head = 0;|check_sched"
    "a block's confirming step decodes|sim/sim.c|             req_masked_in_block(sim_req(s, seg.req_id)) > 0)|             req_masked_in_block(sim_req(s, seg.req_id)) >= 0)|check_sched"
    "sglang's graphs of 16 to 256 go in fours|sim/sched/sched_sglang.c|        b = (n + 7) / 8 * 8;|        b = (n + 3) / 4 * 4;|check_sched"
    "sglang's graph cap on a 24 GiB card is an L40S's|sim/sched/sched_sglang.c|        return tp < 4 ? 24 : 80;|        return tp < 4 ? 32 : 80;|check_sched"
    "sglang runs a round past every graph as the largest graph|sim/sched/sched_sglang.c|    if (n > max_bs) /* (no graph holds it: the round runs eagerly) */\n        return n;|    if (n > max_bs) /* (no graph holds it: the round runs eagerly) */\n        return max_bs;|check_sched"
    "sglang runs its prompt blocks without a graph|sim/sched/sched_sglang.c|    if (rd->graph_cap > 0 && rd->n > 0 && !(rd->prefill && s->sched_p[SEPARATE])) {|    if (rd->graph_cap > 0 && rd->n > 0 && !rd->prefill) {|check_sched"
    "sglang pads a separate-context model's EXTEND rounds to a graph|sim/sched/sched_sglang.c|    if (rd->graph_cap > 0 && rd->n > 0 && !(rd->prefill && s->sched_p[SEPARATE])) {|    if (rd->graph_cap > 0 && rd->n > 0) {|check_sched"
    "sglang's EXTEND rounds take every prompt past their budget|sim/sched/sched_sglang.c|            if (rd->n > 0 && tokens + seg.q > s->sched_p[MAX_PREFILL])|            if (0)|check_sched"
    "sglang's EXTEND rounds hold a prompt more than their budget|sim/sched/sched_sglang.c|            if (rd->n > 0 && tokens + seg.q > s->sched_p[MAX_PREFILL])|            if (rd->n > 1 && tokens + seg.q > s->sched_p[MAX_PREFILL])|check_sched"
    "sglang takes a prompt past a separate-context model's budget|sim/sched/sched_sglang.c|        if (r->P > s->sched_p[MAX_PREFILL])|        if (r->P > 2 * s->sched_p[MAX_PREFILL])|check_sched"
    "sglang's graph padding reads the last row's cache|sim/sched/sched_sglang.c|                                   .logit_rows = s->pcfg.block_size, .padding = PAD_GRAPH};|                                   .kv = rd->kv[rd->n - 1], .logit_rows = s->pcfg.block_size, .padding = PAD_GRAPH};|check_sched"
    "a captured graph's extra rows counted as a stalled request's|sim/core/step_desc.c|    t->graph_rows += s->padding == PAD_GRAPH;|    t->graph_rows += 0;|check_sched"
    "sglang keeps no pool for its graphs' padding K/V|sim/sched/sched_sglang.c|    s->kv_pool_bytes -= pad;|    (void)pad;|check_sched"
    "sglang takes a budget smaller than a canvas's context pass|sim/sched/sched_sglang.c|    if (context_pass && s->sched_p[MAX_PREFILL] < canvas)|    if (0)|check_sched"
    "a context pass counted as a prompt's prefill|sim/sim.c|    return seg->phase == PHASE_PREFILL && seg->kv < r->P;|    return seg->phase == PHASE_PREFILL;|check_sched"
    "sglang takes a request whose step outgrows its rounds' reservation|sim/sched/sched_sglang.c|    } else if (q > s->pcfg.block_size) {|    } else if (q > 4 * s->pcfg.block_size) {|check_sched"
    "serve-block prefills at once where a block a forward is asked|sim/policies/policy_serve_block.c|pc->p[PREFILL_BLOCK] == 0) {|pc->p[PREFILL_BLOCK] != 0) {|check_sched"
    "SparseD's block reaches the engine as its select|sim/policies/policy_sparsed.c|    out->sparsed_block = (int32_t)pc->p[BLOCK];|    out->sparsed_block = (int32_t)pc->p[SELECT];|check_eng_gen check_config"
    "a static replica sizes its batch by the model's positions, not its fleet's workload|sim/sim_create.c|    const bool scan = fed && s->sched == &sched_static;|    const bool scan = false;|check_fleet"
    "WINO runs without its shadow block|sim/decode.c|    out->drafts = 1;|    out->drafts = 0;|check_decode"
    "the last arrival counted among the outstanding|sim/sim_requests.c|        m->outstanding[1] = n - 1 - s->gone_before[1];|        m->outstanding[1] = n - s->gone_before[1];|check_sim"
    "a configuration's planner left out of its setup|sim/setup.c|planner_resolve(c->planner, &out->planner, err)|planner_resolve(\"first-fit\", &out->planner, err)|check_config"
    "a fleet's accuracy unweighted by its replicas' tokens|sim/fleet/fleet.c|        sum += m->expected_accuracy * (double)m->step_decoded, tokens += m->step_decoded;|        sum += m->expected_accuracy, tokens += m->step_decoded;|check_fleet"
    "a run's accuracy kept when load control moved its decoder|sim/sim.c|    out->expected_accuracy = !s->decode_moved ? s->dm.accuracy|    out->expected_accuracy = true ? s->dm.accuracy|check_sim"
    "a profile's accuracy past 100 taken|sim/decode.c|json_number_value(acc) <= 100|json_number_value(acc) <= 1000|check_decode"
    "phase budget overrun|sim/sched/sched_phase.c|int64_t budget = (int64_t)s->sched_p[MAX_TOKENS];|int64_t budget = (int64_t)s->sched_p[MAX_TOKENS] + 512;|check_sched"
    "JSONL negative length accepted|traces/trace.c|    if (d < 0)\n        return ts_fail(err, \"%s:%lld: %s: negative length (%g)\", path, (long long)line, key, d);|    if (d < -1e9)\n        return ts_fail(err, \"%s:%lld: %s: negative length (%g)\", path, (long long)line, key, d);|check_trace"
    "generated arrivals past the clock kept|traces/trace_gen.c|    if (!(st->now_s * 1e9 <= (double)TRACE_MAX_NS))|    if (!(st->now_s * 1e9 <= 2 * (double)TRACE_MAX_NS))|check_trace"
    "a trace played again checked against its whole last pass|traces/trace_gen.c|tail = t->reqs[(n - 1) % t->n].arrival_ns;|tail = last;|check_trace"
    "a trace played again takes its period from the span alone|traces/trace_gen.c|    st->period_ns = past ? TRACE_MAX_NS : TS_MAX(gaps > 0 ? span + gap : gap, 1);|    st->period_ns = past ? TRACE_MAX_NS : TS_MAX(gaps > 0 ? span : gap, 1);|check_trace"
    "queueing measured to the first block|sim/sim_requests.c|        gsl_rstat_add((double)(r->admitted_ns - r->arrival_ns) * 1e-9, s->queue_st);|        gsl_rstat_add((double)(r->first_block_ns - r->arrival_ns) * 1e-9, s->queue_st);|check_sim"
    "latency span without its shortest|sim/sim_requests.c| - (double)s->lat_min_ns * 1e-9;|;|check_sim"
    "latency spread around zero|sim/sim_requests.c|gsl_rstat_sd(s->lat_st) : 0;|gsl_rstat_rms(s->lat_st) : 0;|check_sim"
    "gamma arrivals without their CV|traces/trace_gen.c|    return gsl_ran_gamma(r, shape, 1.0 / (ag->rps * shape));|    return gsl_ran_exponential(r, 1.0 / ag->rps);|check_trace"
    "a static batch padded to its first request|sim/sched/sched_static.c|        int32_t P = TS_MAX(P_pad, r->P), G = TS_MAX(G_pad, r->G);|        int32_t P = st->n ? P_pad : r->P, G = st->n ? G_pad : r->G;|check_sched"
    "phase preempts the earliest admitted|sim/sched/sched_phase.c|        struct request *victim = sim_req(s, s->running[s->num_running - 1]);|        struct request *victim = sim_req(s, s->running[0]);|check_sched"
    "dual refreshes one step late|sim/policies/policy_dual.c|const struct refresh_state)->since_refresh >= every);|const struct refresh_state)->since_refresh > every);|check_policy"
    "greedy-size places the smallest first|sim/core/planner_arena.c|    if (x->bytes != y->bytes)\n        return (x->bytes < y->bytes) - (x->bytes > y->bytes);\n    return (x->idx > y->idx) - (x->idx < y->idx);\n}\n\nstatic int arena_plan|    if (x->bytes != y->bytes)\n        return (x->bytes > y->bytes) - (x->bytes < y->bytes);\n    return (x->idx > y->idx) - (x->idx < y->idx);\n}\n\nstatic int arena_plan|check_planner"
    "p99 at the 98th percentile|sim/sim_requests.c|lat_quantile(s, 0.99, &m->lat_p99_s)|lat_quantile(s, 0.98, &m->lat_p99_s)|check_sim"
    "lazy chunking stops where the step's peak is no part it chunks|sim/core/act_cache.c|        const bool logits = a->logits >= a->ffn && a->logits > a->fixed, ffn = !logits && a->ffn > a->fixed;|        const bool logits = a->logits >= a->ffn && a->logits > a->fixed, ffn = !logits && a->ffn > a->fixed && a->theoretical > a->fixed + a->fixed / 4;|check_planner"
    "Mosaic's layout reads x to the end of its layer|sim/core/opgraph.c|    g->t[*x].last = op + 7;|    g->t[*x].last = op + 8;|check_opgraph"
    "the simulator's lazy chunking forgets its search margin|sim/sim_create.c|    if (cfg->lazy_chunking) /* the chunk search keeps its margin of the card free as well */|    if (0) /* the chunk search keeps its margin of the card free as well */|check_sim"
    "first-fit forgets a span's end|sim/core/planner_arena.c|        cursor = TS_MAX(cursor, buf[k].hi);|        cursor = buf[k].lo + 1;|check_planner"
    "the GPU file's unknown keys accepted|sim/core/gpu.c|            if (i == TS_ARRAY_LEN(known)) {|            if (i == TS_ARRAY_LEN(known) + 1) {|check_gpu"
    "hidden size not checked against the heads|sim/core/model.c|        if (m.hidden % m.num_heads) {|        if (m.hidden % m.num_heads > m.hidden) {|check_model"
    "fixed decode commits one more|sim/decode.c|    return dm->k;|    return dm->k + 1;|check_decode check_policy"
    "fixed decode commits EOS positions in bulk|sim/decode.c|(dm->eos == EOS_AUTO && decode_get(dm->kind)->bulk_eos)|(dm->eos == EOS_AUTO)|check_policy check_sched"
    "--eos bulk ignored|sim/decode.c|const bool bulk = dm->eos == EOS_BULK|const bool bulk = dm->eos != dm->eos|check_sched"
    "eager sampling holds one fp32 copy|sim/cost/impl.c|.softmax_copy_bytes = 8, .reserve_bytes|.softmax_copy_bytes = 4, .reserve_bytes|check_cost"
    "block-causal pairs counted bidirectionally|sim/core/step_desc.c|    if (bs <= 0)|    if (bs <= 1 << 30)|check_step_desc check_cost"
    "vicinity window one token short at the end|sim/policies/policy_vicinity.c|    *hi = end + w < r->L ? end + w : r->L;|    *hi = end + w < r->L ? end + w : r->L - 1;|check_policy"
    "delayed cache commits one position short|sim/policies/policy_block_delayed.c|st->commit_rest = req_block_len(r, r->cur_block - 1) - st->cached;|st->commit_rest = req_block_len(r, r->cur_block - 1) - st->cached - 1;|check_policy"
    "reservations from the theoretical peak|sim/core/act_cache.c|        *e = (struct entry){{key[0], key[1]}, pl.arena_bytes, -1, packs};|        *e = (struct entry){{key[0], key[1]}, opgraph_peak(&c->graph), -1, packs};|check_sched"
    "the GPUs' idle draw left out between steps|sim/sim.c|    out->energy_j = s->sum.busy_energy_j + out->idle_w * fmax(0, span - s->sum.busy_s);|    out->energy_j = s->sum.busy_energy_j;|check_sim"
    "a step's energy on one GPU whatever --tp says|sim/pricing.c|    return sim_gpus(s) * secs * (s->gpu.idle_w + (s->gpu.tdp_w - s->gpu.idle_w) * share);|    return secs * (s->gpu.idle_w + (s->gpu.tdp_w - s->gpu.idle_w) * share);|check_sim"
    "every request within the SLO|sim/sim_requests.c|        s->sum.slo_met += s->cfg.slo > 0 && (double)ns <= s->cfg.slo * 1e9;|        s->sum.slo_met += s->cfg.slo > 0;|check_sim"
    "the compact graph keeps one layer in all|sim/core/opgraph.c|        if (compact && L > 0 && model_is_moe_layer(m, L) == model_is_moe_layer(m, L - 1))|        if (compact && L > 0)|check_planner"
    "a step's recorded peak from the configured chunking|sim/sim.c|    const struct og_shape shape = act_shape(s, s->sd.tot.rows, s->sd.tot.logit_rows, s->sd.logit_chunk_rows,\n                                            s->sd.ffn_chunks);|    const struct og_shape shape = act_shape(s, s->sd.tot.rows, s->sd.tot.logit_rows, s->cfg.logit_chunk_rows,\n                                            s->cfg.ffn_chunks);|check_sim"
    "sparse keeps r of the whole sequence|sim/policies/policy_sparse.c|return (int32_t)floor(pc->p[RATIO] * (double)(r->L - req_block_len(r, block)));|return (int32_t)floor(pc->p[RATIO] * (double)r->L);|check_policy"
    "sparse Reuse reads the dense cache|sim/policies/policy_sparse.c|    s->kv = sparse_keep(r, pc, r->cur_block);|    s->kv = r->L - bl;|check_policy"
    "selection pools one key short|engine/eng_ref_ops.c|for (int i = TS_MAX(0, j - kernel / 2); i <= TS_MIN(cand - 1, j + kernel / 2); i++)|for (int i = TS_MAX(0, j - kernel / 2); i < TS_MIN(cand - 1, j + kernel / 2); i++)|check_eng_ref"
    "selection ties go to the higher key|engine/eng_ref_ops.c|(x->j > y->j) - (x->j < y->j);|(x->j < y->j) - (x->j > y->j);|check_eng_ref"
    "selecting tokens written over their kept keys|engine/eng_plan.c|    return (g->keep + page_tokens - 1) / page_tokens * page_tokens;|    return 0;|check_eng_plan"
    "a chunk of requests freed before its last is recorded|sim/sim_requests.c|    if (--s->chunk_left[k] > 0|    if (--s->chunk_left[k] > 1|check_sim"
    "the radix select counts the latencies of other digits|sim/sim_requests.c|((uint64_t)v[i] >> (shift + BITS)) == prefix)|((uint64_t)v[i] >> (shift + BITS)) != prefix + 1)|check_sim"
    "a request's row spilled with its first block as its admission|sim/sim_requests.c|r->arrival_ns, r->admitted_ns, r->first_block_ns,|r->arrival_ns, r->first_block_ns, r->first_block_ns,|check_sim"
    "the open runs' index looks no further than an entry's home|sim/db/db_write.c|        if (m->key[i] < 0)\n            break;\n    }\n    return -1;|        break;\n    }\n    return -1;|check_sim"
    "a replay keeps the knobs it derives over the recorded ones|sim/db/db_schema.c|            v[i] = sqlite3_column_int64(st, 2 + i);|            v[i] = v[i] + 0 * sqlite3_column_int64(st, 2 + i);|check_sim"
    "a step recorded without its knobs|sim/sim.c|    step_knobs_get(&s->sd, rec->knobs);|    (void)rec;|check_sim"
    "a segment run extended across a step it missed|sim/db/db_write.c|        if (r->last == step_id - 1 && same_shape(&r->g, g)) {|        if (same_shape(&r->g, g)) {|check_sim"
    "a step run extended past a gap|sim/db/db_write.c|    if (rs->step_open && rs->step[2] == step_id - 1 && rs->step_next_start == p->start_ns &&|    if (rs->step_open && rs->step[2] == step_id - 1 &&|check_sim"
    "the guard sets no authorizer|sim/db/db_guard.c|    rc \x7c= sqlite3_set_authorizer(db, authorize, NULL) != SQLITE_OK;|    rc \x7c= 0;|check_sim"
    "the guard lets any ATTACH through|sim/db/db_guard.c|        return allow ? SQLITE_OK : SQLITE_DENY;|        return SQLITE_OK;|check_sim"
    "the guard leaves a file's triggers on|sim/db/db_guard.c|    static const int off[] = {SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_TRIGGER,|    static const int off[] = {SQLITE_DBCONFIG_TRUSTED_SCHEMA,|check_sim"
    "the check takes any column definition that begins with one of tessera's|sim/db/db_own.c|        if (k == n \x26\x26 strncmp(at, piece, n) == 0)|        if (k <= n \x26\x26 strncmp(at, piece, k) == 0)|check_db"
    "the check accepts an index by its name alone and does not compare its SQL text|sim/db/db_own.c|            if (!dsql[0] \x7c\x7c !sql \x7c\x7c strcmp(sql, dsql) != 0)|            if (!dsql[0] \x7c\x7c !sql)|check_db"
    "the check accepts an index under SQLite's automatic-index name even when it has SQL text|sim/db/db_own.c|    if (strncmp(name, \"sqlite_autoindex_\", 17) == 0 \x26\x26 strcmp(type, \"index\") == 0 \x26\x26 !sql) {|    if (strncmp(name, \"sqlite_autoindex_\", 17) == 0 \x26\x26 strcmp(type, \"index\") == 0) {|check_db"
    "the bounds check lets a run of steps overlap the one before it or start before step 0|sim/db/db_own.c|r.first_step != coalesce(r.prev + 1, 0)|r.first_step > coalesce(r.prev + 1, 0)|check_db"
    "the bounds check lets a run of segments end one step past the run's last step|sim/db/db_own.c|g.last_step >= s.num_steps|g.last_step > s.num_steps|check_db"
    "the guard leaves every connection non-defensive, so the schema can be written|sim/db/db_guard.c|db_guard_trust(db, false)|db_guard_trust(db, true)|check_db"
    "the authorizer refuses DETACH instead of ATTACH, so any ATTACH goes through|sim/db/db_guard.c|    case SQLITE_ATTACH:|    case SQLITE_DETACH:|check_db"
    "the writer spots its own input only by the same path text, so it replaces the input when it has another name|sim/core/whole.c|    if (ts_same_file(path, input))|    if (input \x26\x26 strcmp(path, input) == 0)|hostile:db-rule"
    "the writer does not catch SIGXFSZ, so hitting a file-size limit leaves the temporary behind|sim/core/whole.c|static const int caught[] = {SIGINT, SIGTERM, SIGXFSZ};|static const int caught[] = {SIGINT, SIGTERM};|hostile:db-rule"
    "the export's row count leaves out one step per run, so the cap lets too many rows through|sim/db/db_export.c|\"coalesce(sum(last_step - first_step + 1), 0)\"|\"coalesce(sum(last_step - first_step), 0)\"|hostile:db-rule"
    "the merge does not add a new run to the temp table, so the same run from a second input lands twice|sim/db/db_merge.c|            if (!put \x7c\x7c sqlite3_step(note) != SQLITE_DONE) {|            if (!put) {|check_db"
    "a run file is allowed to name db, an output path|sim/cli/cli_runfile.c|    static const char *const writes[] = {\"db\", \"append\", \"replace\", \"gemm-cache\"};|    static const char *const writes[] = {\"append\", \"replace\", \"gemm-cache\"};|hostile:db-rule"
    "the run-file writer looks for control characters in the option's name instead of its value|sim/cli/cli_runfile.c|    if (value \x26\x26 ts_has_control(value))|    if (value \x26\x26 ts_has_control(name))|hostile:db-rule"
    "escaping leaves line breaks, so db show's comment line takes stored text's line breaks raw|sim/core/util.c|return c < 0x20 \x7c\x7c c == 0x7f;|return c < 0x0a \x7c\x7c c == 0x7f;|hostile:db-rule"
    "overload rule counts any growth of the outstanding as overload instead of more than doubling|sim/sim_requests.c|outstanding[1] > 2 * outstanding[0]|outstanding[1] > outstanding[0]|check_sim check_fleet"
    "first outstanding mark subtracts the requests gone before the last arrival instead of before the third|sim/sim_requests.c|        m->outstanding[0] = n / 3 - s->gone_before[0];|        m->outstanding[0] = n / 3 - s->gone_before[1];|check_sim check_fleet"
    "summary row stores 0 and 0 instead of NULL for runs that were not judged|sim/db/db_write.c|    if (m.offered_rps > 0) {|    if (m.offered_rps >= 0) {|check_sim"
    "summary row always stores overloaded as 0 whatever the run's verdict|sim/db/db_write.c|        sqlite3_bind_int(st, k++, m.overloaded);|        sqlite3_bind_int(st, k++, 0);|check_sim"
    "fleet outstanding count leaves out the held-back queue|sim/fleet/fleet.c|    int64_t all = (int64_t)fl->q.n;|    int64_t all = 0;|check_fleet"
    "fleet marks are swapped: the third-of-arrivals count goes to mark 1 and the last-arrival count to mark 0|sim/fleet/fleet.c|overload_mark(\x26fl, index == st.n - 1, tr.arrival_ns);|overload_mark(\x26fl, index != st.n - 1, tr.arrival_ns);|check_fleet"
    "per-replica offered rate counts only routed requests and leaves out those moved in|sim/fleet/fleet.c|(double)(out->routed[i] + m->handed_in) / span_s;|(double)(out->routed[i]) / span_s;|check_fleet"
    "fleet takes its first overload mark at half the arrivals instead of a third|sim/fleet/fleet.c|(index == st.n / 3 \x7c\x7c index == st.n - 1)|(index == st.n / 2 \x7c\x7c index == st.n - 1)|check_fleet"
    "roofline source is drawn for calibrated runs too|sim/cli/cli_interval.c|iv->used[SRC_ROOFLINE] = !rounds \x26\x26 !calibrated;|iv->used[SRC_ROOFLINE] = !rounds;|sh:interval_test"
    "transfer source is drawn for any calibrated run, carried or not|sim/cli/cli_interval.c|iv->used[SRC_TRANSFER] = !rounds \x26\x26 calibrated \x26\x26 !c->calib[0] \x26\x26 c->calib_from[0];|iv->used[SRC_TRANSFER] = !rounds \x26\x26 calibrated \x26\x26 !c->calib[0];|sh:interval_test"
    "the '*' row overrides the card's own row|sim/cli/cli_interval.c|if (mine \x7c\x7c (!own[k] \x26\x26 strcmp(card, \"*\") == 0)) {|if (mine \x7c\x7c strcmp(card, \"*\") == 0) {|sh:interval_test"
    "a source measured on this card is marked carried|sim/cli/cli_interval.c|iv->carried[k] = per_card[k] \x26\x26 !own[k] \x26\x26 !iv->unmeasured[k];|iv->carried[k] = per_card[k] \x26\x26 !iv->unmeasured[k];|sh:interval_test"
    "a never-measured source is treated as measured with sigma 0 and never named not bounded|sim/cli/cli_interval.c|iv->unmeasured[k] = none;|iv->unmeasured[k] = false;|sh:interval_test"
    "replicates log like the base run instead of staying quiet|sim/cli/cli_interval.c|c.quiet = true;|c.quiet = base->quiet;|sh:interval_test"
    "interval tail comes from level/200, so higher levels give narrower intervals|sim/cli/cli_interval.c|const double tail = (1 - iv->level / 100.0) / 2;|const double tail = iv->level / 200.0;|sh:interval_test"
    "db merge copies the rows of a run OUT holds already|sim/db/db_merge.c|        if (!r \x7c\x7c r->id == 0) /* a row of no run, or of a run OUT holds already */|        if (!r) /* a row of no run, or of a run OUT holds already */|check_sim"
    "db merge counts no run it holds already|sim/db/db_merge.c|            m->already++;|            ;|check_sim"
    "a fleet keeps every control reading|sim/fleet/fleet.c|    if (last \x26\x26 same(last, p) \x26\x26 same(last - size, p)) {|    if (0) {|check_fleet"
    "a run of equal readings keeps its first alone|sim/fleet/fleet.c|        memcpy(last, p, size);\n        return;|        return;|check_fleet"
    "dllm-cache updates the whole response|sim/policies/policy_dllm_cache.c|        s->q = (prompt ? r->P : 0) + u;|        s->q = (prompt ? r->P : 0) + r->G;|check_policy"
    "focus without placeholder integrity|sim/policies/policy_focus.c|d + k > st->progress;|d + k > st->progress + 65536;|check_policy"
    "all-reduces forgotten under tensor parallelism|sim/cost/cost_roofline.c|        p->total += 2 * layers * t_ar;|        p->total += 0 * layers * t_ar;|check_cost"
    "front layers priced as the later ones|sim/cost/cost_roofline.c|        layer_ops(&p, m, false, sd, &t->front, nf, false);|        layer_ops(&p, m, false, sd, &later, nf, false);|check_cost"
    "every wave of the attention launch priced at its longest block|sim/cost/calib_price.c|    a->f[AF_WAVE_KEYS] = (ceil(blocks / a->wave_blocks) - 1) * mean + block_keys(a->short_max_k, a->splits);|    a->f[AF_WAVE_KEYS] = ceil(blocks / a->wave_blocks) * block_keys(a->short_max_k, a->splits);|check_calib"
    "the mma.sync kernel's segments priced by their pairs|sim/cost/calib_price.c|    if (q >= ATTN_LONG_Q) { /* the engine's wgmma kernel on Hopper: 128-row blocks */|    f[AF_LONG_PAIRS] += q < ATTN_LONG_Q ? attn_pairs(q, kv, bs) : 0; if (q >= ATTN_LONG_Q) {|check_calib"
    "kv_select priced without its candidates|sim/cost/calib_price.c|f[0] = 1, f[1] = (double)segs, f[2] = (double)cand, f[3] = (double)max_cand;|f[0] = 1, f[1] = (double)segs, f[2] = 0, f[3] = (double)max_cand;|check_calib"
    "feat_cache priced without the carried rows|sim/cost/calib_price.c|f[3] = (double)computed, f[4] = (double)rows;|f[3] = (double)computed, f[4] = (double)computed;|check_calib"
    "carried logits' LM head priced by the plain curve|sim/cost/calib_price.c|const bool carried = t->logit_rows > t->q_tokens;|const bool carried = false;|check_calib"
    "fc grid's partial updates without their logits twin|engine/eng_grid.c|.logit_rows = 1, .fc_rows = rows, .probe = G|.logit_rows = 0, .fc_rows = rows, .probe = G|check_eng_grid"
    "dLLM-Cache's steps feed the token curves|sim/cost/calib_fit.c|op != OP_NORM) && d->rows[i].fc_rows == 0) {|op != OP_NORM)) {|check_calib"
    "the token curves leave out the steps with logits|sim/cost/calib_fit.c|op != OP_NORM) && d->rows[i].fc_rows == 0) {|op == OP_NORM) && d->rows[i].fc_rows == 0) {|check_calib"
    "a mixed step's Refresh runs the blocks' rows|sim/core/step_desc.c|return p->q_long > 0 && s == p->segs - 1 ? p->q_long : p->q;|return p->q;|check_calib"
    "carried rows skip their cached outputs|engine/eng_ref.c|            for (int k = 0; k < h; k++)\n                xr[k] += cr[k];|            for (int k = 0; k < h && j >= 0; k++)\n                xr[k] += cr[k];|check_eng_ref"
    "the value check keeps the most similar rows|engine/eng_ref_ops.c|sc[i] = (struct scored){isnan(s) ? INFINITY : -(float)s, i};|sc[i] = (struct scored){isnan(s) ? INFINITY : (float)s, i};|check_eng_ref"
    "probing segments compute their last rows|engine/eng_plan.c|            const int32_t pos = i < fixed ? off + i : kvn + i;|            const int32_t pos = kvn + i;|check_eng_plan"
    "evicting rows lose their prefix|engine/eng_plan.c|        const int32_t off = evicting ? g->kv_front : 0;|        const int32_t off = 0;|check_eng_plan"
    "eviction without placeholder integrity|engine/eng_ref_ops.c|    u = TS_MAX(u, TS_MIN(picked - processed, m - processed));|    u = TS_MIN(u, TS_MIN(picked - processed, m - processed));|check_eng_ref"
    "routing weights not renormalised|engine/eng_ref_ops.c|(rt->norm && chosen > 0 ? 1.0 / chosen : 1.0)|(rt->norm && chosen > 0 ? 1.0 : 1.0)|check_eng_ref"
    "the router keeps its worst groups|engine/eng_ref_ops.c|gsc[g] <= gsc[worst]))|gsc[g] >= gsc[worst]))|check_eng_ref"
    "the expert bias left out of the choice|engine/eng_ref_ops.c|                                (bias ? bias[e] : 0.0);|                                0.0;|check_eng_ref"
    "the expert bias weighs the chosen|engine/eng_ref_ops.c|        wts[j] = (float)(rt->sigmoid ? 1.0 / (1.0 + exp(-(double)logits[ids[j]])) : exp(logits[ids[j]] - mx) / sum);|        wts[j] = (float)(rt->sigmoid ? 1.0 / (1.0 + exp(-(double)logits[ids[j]])) + (ids[j] == 6) : exp(logits[ids[j]] - mx) / sum);|check_eng_ref"
    "key heads normalised by the query's weights|engine/eng_ref_ops.c|            const float *w = head < H ? qn : kn;|            const float *w = qn;|check_eng_ref"
    "the rotary embedding turns a whole head|engine/eng_ref_ops.c|    rot = rot > 0 ? rot : d;|    rot = d;|check_eng_ref"
    "LLaDA2.0's QKV read as three tensors|engine/eng_safetensors.c|        if (l2) {\n            PIECE(qd + 2 * kvd, cols, 0,|        if (0) {\n            PIECE(qd + 2 * kvd, cols, 0,|check_eng_safetensors"
    "a host profile swaps its step time alone|sim/cost/calib_host.c|    c->host0 = h->host0_ms, c->host_seg = h->seg_ms, c->host_steps = h->steps;|    c->host0 = h->host0_ms, c->host_steps = h->steps;|check_calib"
    "ar reads one cached token short|sim/policies/policy_ar.c|    s->kv = r->P + r->decoded_total;|    s->kv = r->P + r->decoded_total - 1;|check_policy"
    "threshold decoding takes rows below tau|engine/eng_unmask.c|conf[i] >= u->tau;|conf[i] >= u->tau - 0.05f;|check_eng_gen"
    "hierarchical decoding ignores LOW|engine/eng_unmask.c|            bool best = conf[i] > u->low;|            bool best = true;|check_eng_gen"
    "a driven block step's rows start at the block, not the finished one before it|sim/policies/policy_drive.c|case PHASE_BLOCK: return end - s->q;|case PHASE_BLOCK: return start;|check_eng_gen"
    "FOCUS caches a decided position before its right neighbour is decided|engine/eng_gen.c|        if (r->decided[off + k] && !r->cached[off + k] && r->decided[off + k + 1])|        if (r->decided[off + k] && !r->cached[off + k])|check_eng_gen"
    "a driven Reuse step ignores the policy's window|sim/policies/policy_drive.c|default: return d->po->reuse_from ? d->po->reuse_from(r, &d->pc) : start;|default: return start;|check_eng_gen"
    "a driven segment's block rows left out of its rows|sim/policies/policy_drive.c|for (int32_t p = start; holds_block && p < end; p++)|for (int32_t p = start; holds_block && p < start; p++)|check_eng_gen"
    "the vicinity cache never refreshes inside a block|sim/policies/policy_vicinity.c|POLICY_STATE(r, const struct refresh_state)->since_refresh >= pc->p[REFRESH_INTERVAL];|false;|check_eng_gen check_policy"
    "the router forgets what it sent since its view's refresh|sim/fleet/fleet_spec.c|return (double)(v->load.outstanding + v->sent);|return (double)v->load.outstanding;|check_fleet"
    "round robin stays on one replica|sim/fleet/fleet_spec.c|    *next = (k + 1) % n;\n    return k;|    *next = k;\n    return k;|check_fleet"
    "a fed replica counts no requests|sim/sim_requests.c|    s->sum.num_requests = s->num_reqs;\n    return &s->chunks|    return &s->chunks|check_fleet"
    "a stopped replica still draws its idle power|sim/fleet/fleet.c|    m->energy_j = m->busy_energy_j + m->idle_w * fmax(0, active_s - m->busy_s);|    m->energy_j = m->busy_energy_j + m->idle_w * fmax(0, (double)m->makespan_ns * 1e-9 - m->busy_s);|check_fleet"
    "a starting replica takes requests before it is ready|sim/fleet/fleet.c|if (sc->state[i] == R_STARTING && sc->ready_s[i] <= t_s)|if (sc->state[i] == R_STARTING)|check_fleet"
    "the autoscaler drains below its min|sim/fleet/fleet.c|up > fs->min && t_s|up > 0 && t_s|check_fleet"
    "held requests released whether or not a replica has room|sim/fleet/fleet.c|    while (fl->q.n > 0 && !fleet_full(fl)) {|    while (fl->q.n > 0) {|check_fleet"
    "a move's bytes not waited for|sim/fleet/fleet.c|        const int64_t end = start + llround(|        const int64_t end = start + 0 * llround(|check_fleet"
    "a move waits for no port|sim/fleet/fleet.c|TS_MAX(h[j].left_ns, TS_MAX(fl->port_out[i], fl->port_in[to]))|h[j].left_ns|check_fleet"
    "a live step's host part added to its measured time|sim/pricing.c|    p->secs = measured;|    p->secs = p->host_s > 0 ? cost_with_host(\x26s->sd, measured, p->host_s) : measured;|check_sim"
    "the host's scoring drops a row's tail|engine/eng_host.c|        for (; i < p->row; i++)|        for (; i < p->row - 1; i++)|check_eng_host"
    "the host's threads each leave their last token unscored|engine/eng_host.c|n * i / threads, n * (i + 1) / threads, row|n * i / threads, n * (i + 1) / threads - 1, row|check_eng_host"
    "a dropped move's pages never freed|engine/eng_plan.c|    give_back(kv, r, 0);\n    free(r->pages);|    free(r->pages);|check_eng_plan"
    "a received move's pages taken twice|engine/eng_plan.c|    take_free(kv, &r, pages);|    take_free(kv, &r, pages);\n    kv->num_free += pages;|check_eng_plan"
    "a live move's K/V not set aside as its request is handed on|sim/sim.c|    if (cache && s->ex.hold) {|    if (false && s->ex.hold) {|check_fleet"
    "a live move's request given the keyed K/V of another|sim/fleet/fleet.c|fl->o->live_adopt(fl->o->live_ctx, mv->to, e.arg, id, &err)|fl->o->live_adopt(fl->o->live_ctx, mv->to, e.arg, id + 1, &err)|check_fleet"
    "a live move priced by the link's model|sim/fleet/fleet.c|live ? live_move(fl, i, &h[j], to, slot, wire_s + link->lat_s) : wire_s|(live ? live_move(fl, i, &h[j], to, slot, wire_s + link->lat_s), wire_s : wire_s)|check_fleet"
    "a handed request loses its progress|sim/sim_requests.c|    *r = *h->req; /* its shape|    *r = *h->req;\n    r->decoded_in_block = 0; /* its shape|check_fleet"
    "the Refresh pool keeps its Reuse steps|sim/sim.c|cache == (s->hand == SIM_HAND_REUSE))|(!cache && s->hand == SIM_HAND_REFRESH))|check_fleet"
    "load control lowers the threshold when the load is light|sim/fleet/fleet.c|    if (mean > lc->up)\n        *tau = fmax|    if (mean < lc->up)\n        *tau = fmax|check_fleet"
    "load control ignores the elasticity|sim/fleet/fleet.c|pow((1 - *tau) / (1 - fl->tau0), lc->elasticity)|pow((1 - *tau) / (1 - fl->tau0), 1.0)|check_fleet"
    "the threshold's TPF compounds at each reading|sim/decode.c|    dm->tpf = 1 + (base - 1) * factor;|    dm->tpf = 1 + (dm->tpf - 1) * factor;|check_fleet"
    "a fleet's last replica left out of its database|sim/db/db_write.c|    for (int i = 0; i < r->n && !rc; i++) {|    for (int i = 0; i < r->n - 1 && !rc; i++) {|check_fleet"
    "pools decoding differently take each other's requests|sim/sim.c|    if (strcmp(a->dm.spec, b->dm.spec) != 0|    if (0 && strcmp(a->dm.spec, b->dm.spec) != 0|check_fleet"
    "moved requests counted twice by the fleet|sim/fleet/fleet.c|        f->num_requests += m->num_requests - m->handed_in;|        f->num_requests += m->num_requests;|check_fleet"
    "a fully cached prompt's prefill computes no row|sim/sim.c|TS_MIN(hit, r->P - 1)|TS_MIN(hit, r->P)|check_prompt_cache"
    "a prefill computes the cached prefix anyway|sim/policies/policy.c|    s->q = r->P + r->cur_block * r->Bs - r->prefix_hit;|    s->q = r->P + r->cur_block * r->Bs;|check_prompt_cache"
    "a prompt's blocks stored first to last|sim/prompt_cache.c|    for (int32_t k = n - 1; k >= 0; k--) {|    for (int32_t k = 0; k < n; k++) {|check_prompt_cache"
    "the prompt cache's deletion leaves a probe run broken|sim/prompt_cache.c|(k < j) ? (k < h && h <= j)|(k < j) ? (k <= h && h <= j)|check_prompt_cache"
    "the prompt cache keeps pages a request reserved|sim/sim.c|    r->kv_tokens_held = tokens;\n    prompts_fit(s);|    r->kv_tokens_held = tokens;|check_prompt_cache"
    "the affinity router forgets what it routed|sim/fleet/fleet.c|    if (q.blocks > 0)\n        prompt_cache_put(fl->seen[k], tr->hash, q.blocks);|    (void)k;|check_prompt_cache"
    "the affinity router wins a request at the threshold exactly|sim/fleet/fleet_spec.c|if ((double)most > q->threshold * q->blocks)|if ((double)most >= q->threshold * q->blocks)|check_fleet"
    "a trace row's block ids point at the row before's|traces/trace.c|        out->reqs[i].hash = out->reqs[i].n_hash ? out->hash + at : NULL;\n        at += out->reqs[i].n_hash;|        at += out->reqs[i].n_hash;\n        out->reqs[i].hash = out->reqs[i].n_hash ? out->hash + at - 1 : NULL;|check_trace"
    "SparseD builds its pattern a step late|sim/policies/policy_sparsed.c|    return (int32_t)(pc->p[SKIP] * r->G) + 1;|    return (int32_t)(pc->p[SKIP] * r->G) + 2;|check_policy"
    "a parameter's resolved value read as its default|sim/params.c|    return p ? values[p - specs] : dflt;|    return p ? dflt : dflt;|check_sched"
    "SparseD's response starts past the last block|sim/policies/policy_sparsed.c|    *last = TS_MIN((r->P + b - 1) / b, *n - 1);|    *last = (r->P + b - 1) / b;|check_policy"
    "SparseD's pattern keeps the prompt's blocks past the prompt|sim/policies/policy_sparsed.c|TS_MIN(last, (int32_t)lround(pc->p[PROMPT_SHARE] * top))|(int32_t)lround(pc->p[PROMPT_SHARE] * top)|check_policy"
    "a sparse pattern's pairs priced dense|sim/core/step_desc.c|    return s->attn_keys > 0 ? (double)s->q * s->attn_keys : attn_pairs(s->q, s->kv, bs);|    return attn_pairs(s->q, s->kv, bs);|check_step_desc"
    "the calibrated attention ignores a sparse pattern|sim/cost/calib_price.c|    double *f = a->f, k = keys > 0 ? (double)keys : (double)(q + kv);|    double *f = a->f, k = (double)(q + kv);|check_calib"
    "the database drops a segment's keys a row|sim/db/db_write.c|g->picked,   g->attn_keys,|g->picked,   0,|check_sim"
    "the database drops a segment's host fetch|sim/db/db_write.c|                                         g->host_kv,   g->host_scan};|                                         0,   g->host_scan};|check_sim"
    "D2F writes a finished block while a block before it is unfinished|sim/policies/policy_d2f.c|    while (st->cached + n < st->added && done_of(r, st, st->cached + n) == req_block_len(r, st->cached + n))|    for (int32_t b = st->cached; b < st->added; b++) if (done_of(r, st, b) == req_block_len(r, b))|check_policy"
    "D2F activates a block on its own share, not its predecessor's|sim/policies/policy_d2f.c|share(r, &st, b - 1) >= pc->p[ACT]|share(r, &st, b) >= pc->p[ACT]|check_policy"
    "HERALD forgets its window|sim/policies/policy_herald.c|        s->kv += r->Bs;|        s->kv += 0;|check_policy"
    "HERALD selects among its window too|sim/policies/policy_herald.c|    return r->P + (int64_t)r->cur_block * r->Bs - (window ? r->Bs : 0);|    return r->P + (int64_t)r->cur_block * r->Bs;|check_policy"
    "HERALD selects every step|sim/policies/policy_herald.c|    st->need_select = block_done;|    st->need_select = true;|check_policy"
    "the host part always overlaps|sim/cost/cost.c|    return sd->host_overlap ? fmax(gpu_s, host_s) : gpu_s + host_s;|    return fmax(gpu_s, host_s);|check_cost"
    "the host scan reads K and V|sim/cost/cost.c|        s += (double)t->host_scan_tokens * kv / 2 / (sd->host_scan_mbs * 1e6);|        s += (double)t->host_scan_tokens * kv / (sd->host_scan_mbs * 1e6);|check_cost"
    "a sliding layer attends past its window|sim/cost/cost_roofline.c|            if (!global && m->sliding_window > 0)|            if (0)|check_cost"
    "a global layer projects its V though it is its K|sim/cost/cost_roofline.c|proj = k_eq_v ? kvd : 2 * kvd;|proj = 2 * kvd;|check_cost"
    "a sliding layer holds every token's K/V|sim/core/model.c|    return (g * tokens + l * m->sliding_window + g + l - 1) / (g + l);|    return tokens;|check_model"
    "a global layer's V projection counted in its weights|sim/core/model.c|kv = (k_eq_v ? 1 : 2) * kvd;|kv = 2 * kvd;|check_model"
    "admission reserves logits for every row of the largest step|sim/policies/policy.c|    return po->peak_logits ? TS_MIN(all, po->peak_logits(r, pc)) : all;|    return all;|check_sim"
    "DiffusionGemma's commit decodes the next canvas's first position|sim/policies/policy_fdllm_v2.c|        s->decoded = pc->p[CONTEXT] ? 0 : TS_MIN((int32_t)pc->p[COMMIT], req_masked_in_block(r));|        s->decoded = pc->p[CONTEXT] ? 0 : TS_MIN(1, req_masked_in_block(r));|check_policy"
    "SGLang's context pass run as a block step, not a prefill|sim/policies/policy_fdllm_v2.c|        s->phase = pc->p[CONTEXT] ? PHASE_PREFILL : PHASE_BLOCK;|        s->phase = PHASE_BLOCK;|check_sched"
    "SGLang's context pass takes its rows' logits|sim/policies/policy_fdllm_v2.c|        s->logit_rows = pc->p[CONTEXT] ? 0 : pc->mask_only ? 1 : w;|        s->logit_rows = pc->mask_only ? 1 : w;|check_sched"
    "Prophet's late phase starts later|engine/eng_gen.c|share < 0.67 ? p->mid : p->late|share < 0.70 ? p->mid : p->late|check_eng_gen"
    "Prophet fills the masked positions with the mask|engine/eng_gen.c|            r->ids[r->P + o] = tok[base + k];|            r->ids[r->P + o] = g->c.mask_id;|check_eng_gen"
    "dKV-Cache caches from a block's first step|sim/policies/policy_dkv.c|    if (i < 2 |    if (i < 1 |check_policy"
    "dKV-Cache writes nothing between refreshes|sim/policies/policy_dkv.c|    s->kv_write = last;|    s->kv_write = 0;|check_policy"
    "Spiffy's drafts score bidirectional keys on a block-causal step|sim/decode.c|llround(attn_pairs(s->q, s->kv, attn_block) / s->q)|llround(attn_pairs(s->q, s->kv, 0) / s->q)|check_decode"
    "Spiffy's drafts take no logits|sim/decode.c|    s->logit_rows += rows;|    s->logit_rows += 0;|check_decode"
    "admission leaves Spiffy's drafts out|sim/sim.c|        *q += drafts;|        *q += 0;|check_sim"
    "D2F adds a block every step|sim/policies/policy_d2f.c|&& last >= pc->p[ADD])|)|check_policy"
    "D2F reruns the cached blocks|sim/policies/policy_d2f.c|    s->q = front + span(r, first, st.added);|    s->q = front + span(r, 0, st.added);|check_policy"
    "DPad keeps the suffix past its window|sim/policies/policy_dpad.c|    const int32_t m = TS_MIN(W, TS_MAX(left, 0));|    const int32_t m = TS_MAX(left, 0);|check_policy"
    "DPad's prefix cache reads the kept suffix from the cache|sim/policies/policy_dpad.c|        s->q = cache == DPAD_PREFIX ? bl + n : bl;|        s->q = bl;|check_policy"
    "Fast-dLLM v2 commits a block in its next decoding step|sim/policies/policy_fdllm_v2.c|        s->decoded = pc->p[CONTEXT] ? 0 : TS_MIN((int32_t)pc->p[COMMIT], req_masked_in_block(r));\n        return;|        s->decoded = v2_draw(r, pc);\n        return;|check_policy"
    "Fast-dLLM v2's DualCache runs a new block's first step as a sub-block|sim/policies/policy_fdllm_v2.c|    st->block_kept = !st->commit_pending && pc->p[DUAL] > 0|    st->block_kept = pc->p[DUAL] > 0|check_policy"
    "Prophet's early commit leaves the rest undecoded|sim/policies/policy.c|        r->decoded_total = end;\n        finished = true;|        finished = true;|check_policy"
    "Prophet's early commit measured against G under early stop|sim/policies/policy.c|r->decoded_total >= pc->early_commit * end)|r->decoded_total >= pc->early_commit * r->G)|check_policy"
    "the prompt cache trims one block short|sim/prompt_cache.c|    while (c->n > TS_MAX(keep, 0))|    while (c->n > TS_MAX(keep, 0) + 1)|check_prompt_cache"
    "the prompt cache sits in the activations' reservation|sim/sim.c|s->weight_bytes - s->act_reserved - s->kv_pages_used * page;|s->weight_bytes - s->kv_pages_used * page;|check_prompt_cache"
    "d2Cache forgets the rows the step before decoded|sim/policies/policy_d2cache.c|masked + last + TS_MAX(|masked + TS_MAX(|check_policy"
    "d2Cache's nucleus counts the chosen rows among its candidates|sim/policies/policy_d2cache.c|(r->L - masked - last)|(r->L - masked)|check_policy"
    "d2Cache's nucleus ignores its least count|sim/policies/policy_d2cache.c|TS_MAX((int32_t)pc->p[ROLLOUT], others)|others|check_policy"
    "Elastic-Cache never refreshes|sim/policies/policy_elastic.c|st->since_refresh >= every)|st->since_refresh >= every + 1e9)|check_policy"
    "a common segment passes with one logit row too many|sim/core/step_desc.c|g->logit_rows <= g->q |g->logit_rows <= g->q + 1 |check_step_desc"
    "a common segment passes with a negative count|sim/core/step_desc.c|g->host_scan) >= 0 |g->host_scan) >= -1000000 |check_step_desc"
    "the drift test refreshes after the last layer|engine/eng_gen.c|            if (l + 1 < layers)|            if (l < layers)|check_eng_gen"
    "the drift test queries every decided position|engine/eng_gen.c|!r->ec_seen[o]; /* decoded|1; /* decoded|check_eng_gen"
    "the drift test tracks a position twice|engine/eng_gen.c|                seen = r->ec_track[k] == t[l];|                seen = false;|check_eng_gen"
    "Elastic-Cache's share refreshes a step late|sim/policies/policy_elastic.c|floor(k * share) > floor((k - 1) * share)|floor((k - 1) * share) > floor((k - 2) * share)|check_policy"
    "Elastic-Cache's pool holds only K and V|sim/sim_create.c|        s->kv_token_bytes += s->pol->token_bytes(&s->model) / cfg->tp;|        s->kv_token_bytes += 0;|check_sim"
    "IterSmooth's weight grows past its cap|engine/eng_gen.c|return fmin(s->init + s->growth * n, s->cont);|return s->init + s->growth * n;|check_eng_gen"
    "IterSmooth keeps a soft row at a position the step committed|engine/eng_gen.c|c->commit[row] >= 0 ? 0.0f|c->commit[row] >= 1 << 30 ? 0.0f|check_eng_gen"
    "IterSmooth's threshold never decays|engine/eng_gen.c|return fmaxf((float)(1.0 - s->decay * n), tau);|return tau;|check_eng_gen"
    "a generation's ids stay hashed|engine/eng_plan.c|            if (id >= 0)\n                p->tok_ids[r] = id;|            if (id < -1)\n                p->tok_ids[r] = id;|check_eng_gen"
    "credit boost without its power|engine/eng_unmask.c|        st->val[j] += powf(*conf, u->gamma);|        st->val[j] += *conf;|check_eng_gen"
    "a block's credits carried into the next|engine/eng_gen.c|(r->block_steps > 0 ? CREDIT_DECAY : CREDIT_CLEAR);|CREDIT_DECAY;|check_eng_gen"
    "a placed row written where the plan would have put it|engine/eng_plan.c|                rows->tok_slot[r] = eng_kv_slot(kv, req, at);|                rows->tok_slot[r] = rows->tok_slot[r];|check_eng_gen"
    "a measured distribution drawn one position short|sim/decode.c|        return 1 + (int32_t)gsl_interp_bsearch(dm->cdf, gsl_rng_uniform(r->rng), 0, (size_t)dm->ncdf);|        return (int32_t)gsl_interp_bsearch(dm->cdf, gsl_rng_uniform(r->rng), 0, (size_t)dm->ncdf);|check_eng_gen"
    "the reference's kept rows at contiguous positions|engine/eng_ref.c|            cpos[f[3] + k] = fp->tok_pos[f[0] + use[k]];|            cpos[f[3] + k] = f[4] + use[k];|check_eng_gen"
    "a refresh gathers its rows from the layer before|engine/eng_ref.c|memcpy(x + (size_t)(p->q_start[s] + i) * h, c->xi + ((size_t)nf * c->cap|memcpy(x + (size_t)(p->q_start[s] + i) * h, c->xi + ((size_t)(nf - 1) * c->cap|check_eng_ref"
    "a refresh keeps no front row's input|engine/eng_ref.c|    keep_inputs(r, sd, fp, fp->tok_pos, nf, x);|    (void)fp;|check_eng_ref"
    "a cached row beside a refresh loses its placed position|engine/eng_plan.c|        if (sd->segs[s].q_front == 0) /* its later rows are its front ones */|        if (sd->segs[s].q_front < 0) /* its later rows are its front ones */|check_eng_plan"
    "a refresh's later layers read cached keys|engine/eng_plan.c|    if (g->kv > 0 |    if (g->kv > 1 << 30 |check_eng_plan"
    "layer inputs cost nothing in the calibrated model|sim/cost/calib_price.c|            fc += input_cache_ms(cx, sd);|            fc += 0;|check_cost"
    "Elastic-Cache's depth unchecked against the model|sim/policies/policy_elastic.c| && pc->p[DEPTH] >= m->num_layers)| && pc->p[DEPTH] > m->num_layers)|check_sim"
    "Fast-dLLM v2's later sub-blocks run one whole-block step|sim/policies/policy_fdllm_v2.c|    if (k == 0)\n        return 1;|    if (k >= 0)\n        return 1;|check_policy"
    "Fast-dLLM v2's prefill keeps no logits|sim/policies/policy_fdllm_v2.c|s->logit_rows = pc->p[PLOGITS] == 0 ? 0 : pc->mask_only ? 1 : s->q;|s->logit_rows = 0;|check_policy"
    "d2Cache's nucleus takes ineligible positions|engine/eng_gen.c|        if (eligible[k]) {\n            order[m++] = k;|        if (1) {\n            order[m++] = k;|check_eng_gen"
    "d2Cache's nucleus may be empty|engine/eng_gen.c|    return m > 0 ? TS_MAX(kept, 1) : 0;|    return m > 0 ? kept : 0;|check_eng_gen"
    "d2Cache's rollout counts masked positions eligible|engine/eng_gen.c|            el[k] = whole && pos_decided(r, pos);|            el[k] = whole;|check_eng_gen"
    "d2Cache's most certain masked positions stay candidates|engine/eng_gen.c|            el[order[j]] = j >= g->c.rollout.k;|            el[order[j]] = 1;|check_eng_gen"
    "admission lets a request in at exactly admit_max|sim/fleet/fleet.c|fl->v[i].load.outstanding + fl->v[i].sent < fl->o->admit_max|fl->v[i].load.outstanding + fl->v[i].sent <= fl->o->admit_max|check_fleet"
    "the autoscaler starts a replica at exactly up|sim/fleet/fleet.c|    if (mean > fs->up && off >= 0 && starting == 0) {|    if (mean >= fs->up && off >= 0 && starting == 0) {|check_fleet"
    "the autoscaler drains at exactly down|sim/fleet/fleet.c|    } else if (mean < fs->down && up > fs->min|    } else if (mean <= fs->down && up > fs->min|check_fleet"
    "the autoscaler waits a reading past its cooldown|sim/fleet/fleet.c|t_s - sc->last_down_s >= fs->cooldown_s|t_s - sc->last_down_s > fs->cooldown_s|check_fleet"
    "a stopped replica's time up counted from its drain|sim/fleet/fleet.c|            out->active_s[i] += t_s - sc->since_s[i];|            out->active_s[i] += t_s - sc->drain_s[i];|check_fleet"
    "a draining replica's time up ends at its last finish|sim/fleet/fleet.c|sc->state[i] == R_DRAINING ? fmax(sc->drain_s[i], own_s)|sc->state[i] == R_DRAINING ? own_s|check_fleet"
    "a move under tensor parallelism uses its sender's ports alone|sim/fleet/fleet.c|        const int32_t gpus = TS_MIN(h[j].gpus, TS_MAX(rc->tp, rc->ep));|        const int32_t gpus = h[j].gpus;|check_fleet"
    "a move's K/V bytes one GPU's share|sim/sim.c|        .bytes = cache ? tokens * s->kv_token_bytes * sim_gpus(s) : (int64_t)r->L * 4};|        .bytes = cache ? tokens * s->kv_token_bytes : (int64_t)r->L * 4};|check_fleet"
    "a move holds its receiver's port alone|sim/fleet/fleet.c|        fl->port_out[i] = fl->port_in[to] = end;|        fl->port_in[to] = end;|check_fleet"
    "the affinity router out of balance at abs exactly|sim/fleet/fleet_spec.c|(hi - lo > q->balance_abs && hi > q->balance_rel * lo)|(hi - lo >= q->balance_abs && hi > q->balance_rel * lo)|check_fleet"
    "the affinity router out of balance at rel times exactly|sim/fleet/fleet_spec.c|(hi - lo > q->balance_abs && hi > q->balance_rel * lo)|(hi - lo > q->balance_abs && hi >= q->balance_rel * lo)|check_fleet"
    "the fleet's request rate over every request|sim/fleet/fleet.c|        f->req_s = fin / span;|        f->req_s = (double)f->num_requests / span;|check_fleet"
    "the fleet's mean power over its busy time|sim/fleet/fleet.c|        f->mean_power_w = f->energy_j / span;|        f->mean_power_w = f->energy_j / f->busy_s;|check_fleet"
    "the fleet's query tokens a step averaged over replicas|sim/fleet/fleet.c|        q_steps += m->mean_q_per_step * (double)m->num_steps;|        q_steps += m->mean_q_per_step;|check_fleet"
    "the request rate over every request|sim/sim.c|        out->req_s = (double)out->num_finished / span;|        out->req_s = (double)out->num_requests / span;|check_sim"
    "the content rate counts every decoded token|sim/sim.c|        out->content_tok_s = (double)out->content_tokens / span;|        out->content_tok_s = (double)out->tokens_decoded / span;|check_sim"
    "energy a request over every request|sim/sim.c|out->energy_per_request_j = out->num_finished > 0 ? out->energy_j / (double)out->num_finished : 0;|out->energy_per_request_j = out->num_finished > 0 ? out->energy_j / (double)out->num_requests : 0;|check_sim"
    "segments a step over the requests|sim/sim.c|        out->mean_segs_per_step = (double)out->request_steps / (double)out->num_steps;|        out->mean_segs_per_step = (double)out->num_requests / (double)out->num_steps;|check_sim"
    "SLO attainment over the finished requests|sim/sim.c|(double)out->slo_met / (double)out->num_requests|(double)out->slo_met / (double)out->num_finished|check_sim"
    "the database swaps first block and queueing|sim/db/db_write.c|m.ttfb_mean_s, m.queue_mean_s, m.mean_q_per_step|m.queue_mean_s, m.ttfb_mean_s, m.mean_q_per_step|check_sim"
    "the database swaps p90 and p99|sim/db/db_write.c|m.lat_p50_s, m.lat_p90_s, m.lat_p99_s, m.lat_std_s|m.lat_p50_s, m.lat_p99_s, m.lat_p90_s, m.lat_std_s|check_sim"
    "the database swaps rows and missed decodes|sim/db/db_write.c|m.rows_processed, m.missed_decodes};|m.missed_decodes, m.rows_processed};|check_sim"
    "the database swaps the KV pool and the activations|sim/db/db_write.c|m.weight_bytes, m.kv_pool_bytes, m.act_reserved_bytes,|m.weight_bytes, m.act_reserved_bytes, m.kv_pool_bytes,|check_sim"
    "the database stores the steps' energy alone|sim/db/db_write.c|    sqlite3_bind_double(st, k++, m.energy_j);|    sqlite3_bind_double(st, k++, m.busy_energy_j);|check_sim"
    "the database stores the makespan in milliseconds|sim/db/db_write.c|    double reals[] = {(double)m.makespan_ns * 1e-9,|    double reals[] = {(double)m.makespan_ns * 1e-6,|check_sim"
    "the database swaps steps and request steps|sim/db/db_write.c|m.num_steps, m.request_steps, m.tokens_decoded|m.request_steps, m.num_steps, m.tokens_decoded|check_sim"
    "a fleet replica's row stores its busy time as its time up|sim/db/db_write.c|        const double reals[] = {r->active_s[i], m->lat_mean_s|        const double reals[] = {m->busy_s, m->lat_mean_s|check_fleet"
    "phase admits no request that fills the budget exactly|sim/sched/sched_phase.c|segment_rows(&seg) > budget |segment_rows(&seg) >= budget |check_sched"
    "phase rejects a request whose largest step fills the budget exactly|sim/sched/sched_phase.c|    if (q > s->sched_p[MAX_TOKENS])|    if (q >= s->sched_p[MAX_TOKENS])|check_sched"
    "D2F's semi-activated share rounded down|sim/policies/policy_d2f.c|floor(pc->p[SEMI] * k + gsl_rng_uniform(pc->rng))|floor(pc->p[SEMI] * k)|check_policy"
    "D2F draws the same at every step|sim/policies/policy_d2f.c|ts_mix64(((uint64_t)r->steps << 16) + (uint64_t)b + 1)|ts_mix64((uint64_t)b + 1)|check_policy"
    "D2F reads its cache after a recompute|sim/policies/policy_d2f.c|r->need_refresh; /* the prompt (and the cached blocks) run again */|false; /* the prompt (and the cached blocks) run again */|check_policy"
    "DPad reads its cache after a recompute|sim/policies/policy_dpad.c|r->need_refresh;\n    if (cache == DPAD_NONE|false;\n    if (cache == DPAD_NONE|check_policy"
    "the calibration's chunks past the largest priced as one|sim/cost/calib_price.c|            total += ratio * y * rows / max_rows;|            total += ratio * y;|check_calib"
    "the calibration extrapolates along its first and last points|sim/cost/calib_price.c|        double slope = (c->y[c->n - 1] - c->y[c->n - 2]) / (c->x[c->n - 1] - c->x[c->n - 2]);|        double slope = (c->y[c->n - 1] - c->y[0]) / (c->x[c->n - 1] - c->x[0]);|check_calib"
    "the calibrated row loop prices a kernel at a layer's host time|sim/cost/calib_price.c|            const double kernel_ms = base0 / (cx->model.num_layers * (double)layer_kernels);|            const double kernel_ms = base0 / (double)layer_kernels;|check_calib"
    "the row loop runs in every phase|sim/cost/impl.c|    const int64_t rows = t->by_phase[PHASE_REUSE] - 1;|    const int64_t rows = t->num_segs - 1;|check_calib"
    "the reference's query heads take key heads in turn|engine/eng_ref_ops.c|            int hk = h / (H / Hkv);|            int hk = h % Hkv;|check_eng_ref"
    "the reference's partial rotary spaced over the whole head|engine/eng_ref_ops.c|pow((double)theta, -2.0 * i / rot)|pow((double)theta, -2.0 * i / d)|check_eng_ref"
    "SparseD's reference keeps one block short in pass 1|engine/eng_ref_ops.c|keep_top(i1, 0, nb, TS_MIN(nb, (int)(nb * select) + 1), kq);|keep_top(i1, 0, nb, TS_MIN(nb, (int)(nb * select)), kq);|check_eng_ref"
    "SparseD's reference keeps pass 1's response blocks|engine/eng_ref_ops.c|            memset(kq + last, 0, (size_t)ng);|            memset(kq + last, 0, 0);|check_eng_ref"
    "SparseD's reference ties to the higher block|engine/eng_ref_ops.c|(imp[j] == imp[b] && j < b)|(imp[j] == imp[b] && j > b)|check_eng_ref"
    "the reference's block mask read transposed|engine/eng_ref_ops.c|keep[((size_t)h * nqb + i / kblock) * nkb + j / kblock]|keep[((size_t)h * nqb + j / kblock) * nkb + i / kblock]|check_eng_ref"
    "the reference's RMSNorm without its epsilon|engine/eng_ref_ops.c|        float inv = (float)(1.0 / sqrt(ss / h + eps));|        float inv = (float)(1.0 / sqrt(ss / h));|check_eng_ref"
    "a driven block-causal policy said to run whole sequences|sim/policies/policy_drive.c|.whole = !(po->caps \x26 POLICY_BLOCK_CAUSAL),|.whole = true,|check_policy check_eng_gen"
    "a driven policy that caches said to run every position|sim/policies/policy_drive.c|.every_position = (po->caps \x26 POLICY_EVERY_POSITION) \x26\x26 !block_logits,|.every_position = true,|check_eng_gen"
    "the engine's extensions a policy needs read as none|sim/core/eng_ext_decl.c|        if (strcmp(word, name) == 0)\n            return true;|        if (strcmp(word, name) == 0)\n            return false;|check_policy"
    "SparseD's second pass keeps one block more than the response has|sim/policies/policy_sparsed.c|TS_MIN(n_g, (int32_t)(n_g * pc->p[SELECT]) + 1)|(int32_t)(n_g * pc->p[SELECT]) + 1|check_policy"
    "--early-commit never reaches the run's policy|sim/sim_create.c|.early_commit = cfg->early_commit, |.early_commit = 0, |check_sim"
    "Elastic-Cache's refreshes by share unchecked against its depth|sim/policies/policy_elastic.c|    if ((pc->p[EVERY] > 0 \x7c\x7c pc->p[SHARE] > 0) \x26\x26|    if ((pc->p[EVERY] > 0) \x26\x26|check_policy"
    "HERALD's peak counts a window beside a lone block|sim/policies/policy_herald.c|    return r->last_block == 0 ? selected(pc, all) :|    return r->last_block < 0 ? selected(pc, all) :|check_policy"
    "HERALD overlaps its selection whatever --herald-overlap says|sim/policies/policy_herald.c|    sd->host_overlap = pc->p[OVERLAP] != 0;|    sd->host_overlap = pc->p[OVERLAP] >= 0;|check_policy"
    "dKV-Cache holds no prompt|sim/policies/policy_dkv.c|    return r->P + r->decoded_total;|    return r->decoded_total;|check_policy"
    "Fast-dLLM v2's DualCache holds no room for the block it keeps aside|sim/policies/policy_fdllm_v2.c|    return cache + (pc->p[DUAL] > 0 ? len : 0);|    return cache;|check_policy"
    "Fast-dLLM v2's last block runs past the response|sim/policies/policy_fdllm_v2.c|    *len = TS_MIN(w, r->G - *start);|    *len = w;|check_policy"
    "Fast-dLLM v2's largest step a sub-block's rows, not a block's|sim/policies/policy_fdllm_v2.c|    return TS_MAX(cache, (int32_t)pc->p[SUBS] * r->Bs); /*|    return TS_MAX(cache, r->Bs); /*|check_policy"
    "Fast-dLLM v2's mask-only logits count the sub-block's decoded alone|sim/policies/policy_fdllm_v2.c|const int32_t done = (r->cur_block * r->Bs - start) + r->decoded_in_block;|const int32_t done = r->decoded_in_block;|check_policy"
    "Fast-dLLM v2's peak K/V read at the current block|sim/policies/policy_fdllm_v2.c|    last.cur_block = r->last_block;\n    return v2_kv(\x26last, pc);|    return v2_kv(r, pc);|check_policy"
    "ar's prefill recomputes the prompt the cache holds|sim/policies/policy_ar.c|        s->q = s->kv_write = r->P + r->decoded_total - r->prefix_hit;|        s->q = s->kv_write = r->P + r->decoded_total;|check_policy"
    "ar's largest step the prompt, not a recompute's prefill|sim/policies/policy_ar.c|    return r->L; /* a prefill|    return r->P; /* a prefill|check_policy"
    "ar holds no room for the token its step writes|sim/policies/policy_ar.c|    return r->P + (int64_t)r->decoded_total + (POLICY_STATE(r, const struct ar_state)->prefilled \x26\x26 !r->need_refresh);|    return r->P + (int64_t)r->decoded_total;|check_policy"
    "the row loop skips a step of two rows|sim/cost/impl.c|    return rows > 0 ?|    return rows > 1 ?|check_cost check_calib"
    "the float64 softmax's cast kernel left out|sim/cost/impl.c|        out->kernels[OP_SAMPLE] += d->sample_kernels;|        out->kernels[OP_SAMPLE] += 0;|check_cost"
    "--op-scale host leaves the calibrated row loop unscaled|sim/cost/calib_price.c|            row_loop = (cx->op_scale ? cx->op_scale[OP_HOST] : 1.0) *|            row_loop = 1.0 *|check_calib"
    "round robin sends to a closed replica|sim/fleet/fleet_spec.c|    for (int j = 0; j < n \x26\x26 v[k].closed; j++)|    for (int j = 0; j < n \x26\x26 !v[k].closed; j++)|check_fleet"
    "round robin's cursor moves past where it started, not past its pick|sim/fleet/fleet_spec.c|    *next = (k + 1) % n;\n    return k;|    *next = (*next + 1) % n;\n    return k;|check_fleet"
    "least-kv breaks its ties by the cursor alone|sim/fleet/fleet_spec.c|return v->load.kv_used * 1e9 + outstanding(v); }|return v->load.kv_used * 1e9; }|check_fleet"
    "phase-aware breaks its ties by the cursor alone|sim/fleet/fleet_spec.c|    return (double)(v->load.refreshing + v->sent) * 1e9 + outstanding(v);|    return (double)(v->load.refreshing + v->sent) * 1e9;|check_fleet"
    "a request at its block's second step counted as starting one|sim/sim.c|        out->refreshing += sim_req(s, s->running[i])->steps_in_block == 0;|        out->refreshing += sim_req(s, s->running[i])->steps_in_block <= 1;|check_sim"
    "a replica's KV use read in pages, not as a share of its pool|sim/sim.c|(double)s->kv_pages_used / (double)s->kv_pages_total : 0};|(double)s->kv_pages_used : 0};|check_sim"
    "--max-new-tokens not rounded down to whole blocks|sim/sim_requests.c|            g = TS_MIN(g, c->max_new_tokens / c->block * c->block);|            g = TS_MIN(g, c->max_new_tokens);|check_sim"
    "a request of exactly the model's positions left out of the workload's longest|sim/sim_requests.c|        if (P + G <= s->model.max_pos)|        if (P + G < s->model.max_pos)|check_sim"
    "tokens decoded counted as G under --early-stop|sim/sim_requests.c|        s->sum.tokens_decoded += r->decoded_total;|        s->sum.tokens_decoded += r->G;|check_sim"
    "a plan's SLO refuses the fourth percentile term the watch holds|sim/plan/plan.c|            if (++share_terms > SIM_WATCH_MAX)|            if (++share_terms >= SIM_WATCH_MAX)|check_plan"
    "the misses a share allows rounded the wrong way|sim/plan/plan.c|(int64_t)ceil(slo->t[k].share * (double)n - 1e-9)|(int64_t)floor(slo->t[k].share * (double)n - 1e-9)|check_plan"
    "the capacity search's tolerance taken relative to the rate that missed|sim/plan/plan.c|(failed - held) > o->tolerance * held)|(failed - held) > o->tolerance * failed)|check_plan"
    "a rejected request no miss of a plan's bound|sim/sim_requests.c|r->state == REQ_REJECTED \x7c\x7c (double)(r->finish_ns|(double)(r->finish_ns|check_plan"
    "the early stop at late requests merely as many as the misses left|sim/sim_requests.c|TS_MIN(room, INT64_MAX - 1) + 1) > room) {|TS_MIN(room, INT64_MAX - 1) + 1) >= room) {|check_plan"
    "the robust verdict at each interval's optimistic end|sim/cli/cli_plan.c|share ? tail : 1 - tail|share ? 1 - tail : tail|sh:plan_test"
    "equal accuracy lets no plan candidate dominate another|sim/cli/cli_plan_size.c|a->r.p99_s <= b->r.p99_s \x26\x26 a->r.accuracy >= b->r.accuracy|a->r.p99_s <= b->r.p99_s \x26\x26 a->r.accuracy > b->r.accuracy|sh:plan_test"
    "the plan's digest leaves out tessera sim's last option word|sim/cli/cli_plan_out.c|for (int i = 1; i < a->nrest; i++)|for (int i = 1; i < a->nrest - 1; i++)|sh:plan_test"
    "--force into a folder of the same plan goes on instead of starting over|sim/cli/cli_plan_out.c|strcmp(held, key) == 0 \x26\x26 !force|strcmp(held, key) == 0|sh:plan_test"
    "a plan's ranks written into plan.db one candidate early|sim/cli/cli_plan_out.c|{x->index + 1, x->usd_h|{x->index, x->usd_h|sh:plan_test"
    "a plan's shard K sizing shard K+1's candidates|sim/cli/cli_plan_size.c|i % a.shards == a.shard - 1|i % a.shards == a.shard|sh:plan_test"
    "a plan gone on sizing candidates by their place in the to-do list|sim/cli/cli_plan_size.c|size_one(a, sp, todo[i], \x26c)|size_one(a, sp, i, \x26c)|sh:plan_test"
    "a plan space's stride skipping the next line's count|sim/cli/cli_plan_space.c|j > k; j--|j > k + 1; j--|sh:plan_test"
    "a plan's last shard refused (--shard N/N)|sim/cli/cli_plan.c|k < 1 \x7c\x7c k > m)|k < 1 \x7c\x7c k >= m)|sh:plan_test"
    "a plan.db text exactly its field's length accepted|sim/db/db_plan.c|(size_t)n >= len \x7c\x7c|(size_t)n > len \x7c\x7c|sh:plan_test"
    "a plan.db candidate's GPUs read from its replicas column|sim/db/db_plan.c|int_col(st, 7, 0, 1 << 24, \x26v[1])|int_col(st, 6, 0, 1 << 24, \x26v[1])|sh:plan_test"
    "a plan candidate's reason not written into plan.db|sim/db/db_write.c|for (int k = 2; k <= 6; k++)|for (int k = 2; k < 6; k++)|sh:plan_test"
    "a DFlash cycle's match probability solved under a block one short|sim/policies/policy_dflash.c|match_probability(pc->p[ACCEPT], (int32_t)pc->p[BLOCK]);|match_probability(pc->p[ACCEPT], (int32_t)pc->p[BLOCK] - 1);|check_policy"
    "a DFlash draw's success probability the match's, not the miss's|sim/policies/policy_dflash.c|gsl_ran_geometric(pc->rng, 1 - p);|gsl_ran_geometric(pc->rng, p);|check_policy"
    "a DFlash request's K/V leaving out the block its verify writes|sim/policies/policy_dflash.c|return r->P + (int64_t)r->decoded_total + block_of(r, pc);|return r->P + (int64_t)r->decoded_total;|check_policy"
    "the drafter's LM head scaled by its layers|sim/pricing.c|return op != OP_EMBED \x26\x26 op != OP_LM_HEAD \x26\x26 op != OP_SAMPLE;|return op != OP_EMBED \x26\x26 op != OP_SAMPLE;|sh:spec_test"
    "the drafter's logits one row a block|sim/pricing.c|.logit_rows = g->q - 1});|.logit_rows = 1});|sh:spec_test"
    "the drafter's layer share in integers (none)|sim/pricing.c|(double)s->pol->drafter_layers(\x26s->pcfg) / s->model.num_layers;|(double)(s->pol->drafter_layers(\x26s->pcfg) / s->model.num_layers);|sh:spec_test"
    "sglang's steps-per-round ignored (a round one forward)|sim/sched/sched_sglang.c|++rd->forwards < s->sched_p[STEPS_PER_ROUND]|++rd->forwards < 1|check_sched"
    "the TP sampler's gather priced for one GPU's rows alone|sim/cost/cost.c|allreduce_s(c->ar, 0.5 * c->tp * R * 3 * 4)|allreduce_s(c->ar, 0.5 * R * 3 * 4)|check_cost"
    "multi_bd's buffer padded to one block, not the flight's|sim/policies/policy_d2f.c|(int64_t)pc->p[FLIGHT] * pc->block_size - s->q|(int64_t)pc->block_size - s->q|check_policy"
    "D2F's step count taken by the first block with masks alone|sim/policies/policy_d2f.c|for (int32_t b = b0; b < st->added \x26\x26 left > 0; b++)|for (int32_t b = b0; b < b0 + 1 \x26\x26 left > 0; b++)|check_policy"
    "a step at the calibration's largest profiled size said beyond it|sim/cost/calib_price.c|    if (x > c->x[c->n - 1]) {|    if (x >= c->x[c->n - 1]) {|check_calib"
    "a round within the measured graphs said beyond them where extrapolation is allowed|sim/cost/rounds.c|    *beyond = !within \x7c\x7c k / n > f->kv_max;|    *beyond = !ok \x7c\x7c k / n > f->kv_max;|check_rounds"
)

# the build's compile line for a file, and the suites' link line, as the Makefile gives them
mk() { make -s --no-print-directory BUILD="$build" "$@"; }
mk "$build/libtessera.a" "$build/tessera" >/dev/null || { echo "mutate: FAIL: the library does not build"; exit 1; }
link=$(mk print-test-link) && libs=$(mk print-libs) || exit 1
# cli_with DIR FILE: DIR/tessera, the command line linked with DIR/m.o (FILE mutated) in place of
# FILE's object: a file of the command line's own (sim/cli/) replaced among its objects, a library
# file replaced in a copy of the library
cli_with() {
    local dir=$1 file=$2 objs=() o lib=$build/libtessera.a
    for o in "$build"/sim/cli/*.o; do [ "$o" = "$build/${file%.c}.o" ] || objs+=("$o"); done
    if [[ $file == sim/cli/* ]]; then
        objs+=("$dir/m.o")
    else
        lib=$dir/lib.a
        cp "$build/libtessera.a" "$lib"
        cp "$dir/m.o" "$dir/$(basename "${file%.c}").o"
        ar d "$lib" "$(basename "${file%.c}").o" && ar q "$lib" "$dir/$(basename "${file%.c}").o" || return 1
    fi
    # shellcheck disable=SC2086 # the link line and the libraries: the Makefile's words, split on purpose
    $link -rdynamic -o "$dir/tessera" "${objs[@]}" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive $libs -ldl
}
# one mutation (its index in mutations): prints its line; exits 0 when killed
plant() {
    local i=$1 name file from to suites dir src caught="" s
    IFS='|' read -r name file from to suites <<<"${mutations[$i]}"
    from=$(printf '%b' "$from") to=$(printf '%b' "$to")
    dir=$work/m$i
    mkdir -p "$dir"
    src=$dir/$(basename "$file")
    if ! python3 - "$file" "$src" "$from" "$to" <<'PY'
import sys
path, out, old, new = sys.argv[1:5]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(1)
open(out, "w").write(text.replace(old, new))
PY
    then
        echo "mutate: STALE: $name ($file no longer holds its text once)"
        return 1
    fi
    # quoted includes still resolve beside the original file
    if ! ${cc[$file]} -iquote "$(dirname "$file")" -c "$src" -o "$dir/m.o" >"$dir/log" 2>&1; then
        echo "mutate: $name: killed (does not build)"
        return 0
    fi
    for s in $suites; do
        if [[ $s == hostile:* || $s == sh:* ]]; then # the command line with the mutation in it, run through a
            if ! cli_with "$dir" "$file" >"$dir/log" 2>&1; then # hostile case or a test script of its own
                caught="$s (does not link)"
                break
            fi
            if [[ $s == hostile:* ]]; then
                (cd "$root" && bash tests/hostile/hostile_test.sh "$dir/tessera" "${s#hostile:}" >/dev/null 2>&1)
            else
                (cd "$root" && bash "tests/${s#sh:}.sh" "$dir/tessera" >/dev/null 2>&1)
            fi || {
                caught=$s
                break
            }
            continue
        fi
        # shellcheck disable=SC2086 # the link line and the libraries: the Makefile's words, split on purpose
        if ! $link -o "$dir/$s" "$work/$s.o" "$work/test_util.o" "$dir/m.o" "$build/libtessera.a" $libs >"$dir/log" 2>&1; then
            caught="$s (does not link)"
            break
        fi
        (cd "$root" && CK_FORK=yes "$dir/$s" >/dev/null 2>&1) || { caught=$s; break; }
    done
    rm -rf "$dir"
    if [ -n "$caught" ]; then echo "mutate: $name: killed by $caught"; return 0; fi
    echo "mutate: SURVIVED: $name ($suites)"
    return 1
}
picked=()
for i in "${!mutations[@]}"; do
    name=${mutations[$i]%%|*}
    [ -n "$filter" ] && [[ $name != *"$filter"* ]] && continue
    case ",${shard%/*}," in *",$((i % ${shard#*/} + 1)),"*) ;; *) continue ;; esac
    picked+=("$i")
done
# what every mutation shares, made once: each mutated file's compile line, and the suites' objects
declare -A cc
suites_used=""
for i in "${picked[@]}"; do
    IFS='|' read -r _ file _ _ suites <<<"${mutations[$i]}"
    [ -n "${cc[$file]:-}" ] || cc[$file]=$(mk print-cc FILE="$file") || exit 1
    suites_used+=" $suites"
done
# shellcheck disable=SC2086 # the suites named, a word each
for s in test_util $(printf '%s\n' $suites_used | grep -v '^hostile:\|^sh:' | sort -u); do
    src=tests/$s.c
    $link -c "$src" -o "$work/$s.o" || { echo "mutate: FAIL: $src does not build"; exit 1; }
done
# JOBS at a time, each printing its line when it ends
{
for i in "${picked[@]}"; do
    plant "$i" &
    [ "$(jobs -rp | wc -l)" -ge "$jobs" ] && wait -n
done
wait
} | tee "$work/results"
killed=$(grep -c ': killed' "$work/results")
left=$((${#picked[@]} - killed))
echo "mutate: $killed passed, $left failed"
[ "$left" -eq 0 ]
