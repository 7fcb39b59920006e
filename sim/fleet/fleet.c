/*
 * fleet.c: replicas behind a router (fleet.h). The workload's arrivals are taken in order; at each,
 * the autoscaler's readings due before it are taken (every replica run up to each), the router's
 * view is refreshed where it is due (every replica run up to the arrival, its load read), the
 * router picks an open replica, which is run up to the arrival and fed the request. Once the
 * workload is spent, every replica runs to its end and the fleet's summary is merged from theirs.
 */
#define _POSIX_C_SOURCE 200809L
#include "fleet.h"
#include "fleet_merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "eng_ext_decl.h"
#include "event.h"
#include "model.h"
#include "setup.h"
#include "policy.h"
#include "prompt_cache.h"
#include "trace.h"

/* --- the run ------------------------------------------------------------------------------- */

/* The requests the fleet holds back (deferred admission), oldest first: each its trace row and its
 * place in the workload. */
struct held {
    struct trace_req tr;
    int64_t index;
};
struct hold_queue {
    struct held *v;
    size_t cap, head, n;
};

static void hold(struct hold_queue *q, const struct trace_req *tr, int64_t index)
{
    if (q->n == q->cap) { /* grown, its ring unrolled */
        struct held *v = xmalloc(sizeof *v * (q->cap ? 2 * q->cap : 64));
        for (size_t i = 0; i < q->n; i++)
            v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v, q->head = 0, q->cap = q->cap ? 2 * q->cap : 64;
    }
    q->v[(q->head + q->n++) % q->cap] = (struct held){*tr, index};
}

/* A request moving between the pools: its handoff and the replicas it leaves and goes to. */
struct moving {
    struct sim_handoff h;
    int from, to;
};

/* The fleet: its replicas, the router's view and cursors, and where disaggregated the moves. */
struct fleet_state {
    struct sim **r;
    int n;
    const struct fleet_opts *o;
    struct router_view *v;
    bool *dirty;
    int cursor[2]; /* the router's in each pool (one: co-located) */
    int entry;     /* arrivals go to replicas [0, entry): the Refresh pool, or all of them */
    struct hold_queue q;
    struct fleet_result *out;
    /* disaggregation */
    bool disagg;
    int64_t *port_out, *port_in; /* when each replica's sending and receiving port is next free */
    int64_t *inbound;            /* the moves in flight to each (the router counts them as sent) */
    /* load control: the threshold now, its next reading, its readings' room */
    double tau, tau0, tau_next_s; /* (tau0: the spec's, or the decode models' own) */
    size_t tau_cap;
    struct event_queue xq;       /* the moves in flight by their arrival, each its slot of mv */
    struct moving *mv;
    size_t num_mv, cap_mv;
    int32_t *free_mv; /* slots of mv free again */
    size_t num_free, cap_free;
    struct prompt_cache **seen; /* an affinity router's picture of each replica's prompt cache, or NULL */
    /* overload (sim_overload_rule): the requests outstanding at its two marks, the fleet's (held back
     * and moving among them) and each replica's [n], and the last arrival */
    int64_t marks[2];
    int64_t (*rep_marks)[2];
    int64_t last_arrival_ns;
};

/* The replica of [lo, hi) the router picks for request tr (NULL: one moved between the pools), from
 * cursor c's place; an affinity router's picture of that replica's cache then holds tr's prompt. */
static int pick_in(struct fleet_state *fl, int lo, int hi, int c, const struct trace_req *tr)
{
    struct router_req q = fl->o->affinity;
    q.blocks = tr && fl->seen ? trace_whole_blocks(tr->n_hash, tr->prompt) : 0;
    for (int i = lo; q.blocks > 0 && i < hi; i++) {
        fl->v[i].match = prompt_cache_match(fl->seen[i], tr->hash, q.blocks);
        fl->v[i].held = prompt_cache_size(fl->seen[i]);
    }
    const int k = lo + fl->o->router->pick(fl->v + lo, hi - lo, &fl->cursor[c], &q);
    if (q.blocks > 0)
        prompt_cache_put(fl->seen[k], tr->hash, q.blocks);
    return k;
}

static void step_to(struct fleet_state *fl, int64_t t);

/* Every replica run up to t (disaggregated: the fleet's events in one order) and its load read into
 * the view (again only where it ran events or was fed since: dirty), its sent count cleared. */
static void refresh_view(struct fleet_state *fl, int64_t t)
{
    if (fl->disagg)
        step_to(fl, t);
    for (int i = 0; i < fl->n; i++) {
        fl->dirty[i] |= sim_advance(fl->r[i], t) || fl->v[i].sent > 0;
        if (fl->dirty[i])
            sim_load(fl->r[i], &fl->v[i].load);
        fl->dirty[i] = false;
        fl->v[i].sent = fl->disagg ? fl->inbound[i] : 0;
    }
}

/* Whether every open replica of the entry pool holds admit_max requests or more. */
static bool fleet_full(const struct fleet_state *fl)
{
    for (int i = 0; i < fl->entry; i++)
        if (!fl->v[i].closed && fl->v[i].load.outstanding + fl->v[i].sent < fl->o->admit_max)
            return false;
    return true;
}

/* Request tr (the workload's index-th) routed at t_ns, its arrival or its release. */
static void route(struct fleet_state *fl, const struct trace_req *tr, int64_t index, int64_t t_ns)
{
    const int k = pick_in(fl, 0, fl->entry, 0, tr);
    if (fl->disagg)
        step_to(fl, t_ns);
    else
        fl->dirty[k] |= sim_advance(fl->r[k], t_ns);
    sim_feed(fl->r[k], tr, index, t_ns);
    fl->v[k].sent++;
    fl->out->routed[k]++;
}

/* The held requests routed, oldest first, while a replica has room (at t_ns). */
static void release(struct fleet_state *fl, int64_t t_ns)
{
    while (fl->q.n > 0 && !fleet_full(fl)) {
        const struct held h = fl->q.v[fl->q.head];
        fl->q.head = (fl->q.head + 1) % fl->q.cap, fl->q.n--;
        route(fl, &h.tr, h.index, t_ns);
    }
}

/* After the workload (its last arrival at last_ns): the replicas run event by event, the view
 * refreshed after each, until every held request is routed. */
static void release_rest(struct fleet_state *fl, int64_t last_ns)
{
    bool failed = false;
    while (fl->q.n > 0 && !failed) { /* (a replica that failed holds its requests: its run says why) */
        for (int i = 0; i < fl->n; i++)
            failed = failed || sim_failed(fl->r[i]);
        int64_t t = fl->disagg && !evq_empty(&fl->xq) ? evq_peek_time(&fl->xq) : INT64_MAX;
        for (int i = 0; i < fl->n; i++)
            t = TS_MIN(t, sim_next_event_ns(fl->r[i]));
        if (t == INT64_MAX) /* every replica idle: each has room */
            for (int i = 0; i < fl->n; i++)
                t = TS_MIN(t, sim_now_ns(fl->r[i]));
        else
            t++; /* past the next event */
        int64_t now = last_ns;
        for (int i = 0; i < fl->n; i++)
            now = TS_MAX(now, sim_now_ns(fl->r[i]));
        refresh_view(fl, TS_MAX(t, now));
        release(fl, TS_MAX(t, now));
    }
}

/* --- moves between the pools --------------------------------------------------------------- */

/* Live: move h's K/V from replica `from`'s engine to replica to's under key, the copy's measured
 * time returned (the link's model_s where it fails, the failure then the sender's run's). */
static double live_move(struct fleet_state *fl, int from, const struct sim_handoff *h, int to, int64_t key,
                        double model_s)
{
    struct ts_err err = {0};
    double secs = model_s;
    if (fl->o->live_move(fl->o->live_ctx, from, h->ticket, to, key, &secs, &err)) {
        sim_fail(fl->r[from], &err);
        return model_s;
    }
    fl->out->moves_live++;
    fl->out->move_live_s += secs, fl->out->move_model_s += model_s;
    return secs;
}

/* The requests replica i handed on, each sent to a replica of the other pool over the link: it
 * leaves once its sender's and its receiver's ports are free, and arrives its bytes' time and the
 * latency later (live, with K/V: the copy's measured time later, the latency within it). */
static void send_handoffs(struct fleet_state *fl, int i)
{
    struct sim_handoff *h;
    const size_t m = sim_take_handoffs(fl->r[i], &h);
    const struct fleet_link *link = &fl->o->disagg.link;
    for (size_t j = 0; j < m; j++) {
        const bool to_reuse = i < fl->entry;
        const int lo = to_reuse ? fl->entry : 0, hi = to_reuse ? fl->n : fl->entry;
        if (fl->o->staleness_s <= 0) /* a fresh view: the other pool's load now, and the moves to it */
            for (int k = lo; k < hi; k++)
                sim_load(fl->r[k], &fl->v[k].load), fl->v[k].sent = fl->inbound[k];
        const int to = pick_in(fl, lo, hi, to_reuse, NULL);
        fl->v[to].sent++, fl->inbound[to]++;
        const struct sim_config *rc = sim_config(fl->r[to]);
        const int32_t gpus = TS_MIN(h[j].gpus, TS_MAX(rc->tp, rc->ep)); /* (a port a GPU) */
        const double bw = (link->bw > 0 ? link->bw : fmin(sim_gpu(fl->r[i])->link_bw, sim_gpu(fl->r[to])->link_bw)) * gpus;
        int32_t slot;
        if (fl->num_free > 0) {
            slot = fl->free_mv[--fl->num_free];
        } else {
            ts_grow((void **)&fl->mv, &fl->cap_mv, fl->num_mv + 1, sizeof *fl->mv);
            slot = (int32_t)fl->num_mv++;
        }
        const bool live = h[j].ticket >= 0;
        const double wire_s = (double)h[j].bytes / bw;
        const double busy_s = live ? live_move(fl, i, &h[j], to, slot, wire_s + link->lat_s) : wire_s;
        const int64_t start = TS_MAX(h[j].left_ns, TS_MAX(fl->port_out[i], fl->port_in[to]));
        const int64_t end = start + llround(busy_s * 1e9);
        fl->port_out[i] = fl->port_in[to] = end;
        const int64_t at = end + (live ? 0 : llround(link->lat_s * 1e9));
        struct fleet_result *out = fl->out;
        out->handoffs++, out->handoffs_kv += h[j].cache;
        out->moved_bytes += (double)h[j].bytes;
        out->xfer_s += (double)(at - h[j].left_ns) * 1e-9;
        out->xfer_wait_s += (double)(start - h[j].left_ns) * 1e-9;
        fl->mv[slot] = (struct moving){h[j], i, to};
        evq_push(&fl->xq, at, EV_ARRIVAL, slot);
    }
}

/* Disaggregated: the fleet's events before t in one order of time. At each instant the moves that
 * arrive then are fed to their replicas, then every replica with an event then runs it, and the
 * requests it handed on are sent. */
static void step_to(struct fleet_state *fl, int64_t t)
{
    for (;;) {
        int64_t now = evq_empty(&fl->xq) ? INT64_MAX : evq_peek_time(&fl->xq);
        for (int i = 0; i < fl->n; i++)
            now = TS_MIN(now, sim_next_event_ns(fl->r[i]));
        if (now >= t)
            return;
        struct event e;
        while (!evq_empty(&fl->xq) && evq_peek_time(&fl->xq) == now && evq_pop(&fl->xq, &e)) {
            struct moving *mv = &fl->mv[e.arg];
            const int64_t ticket = mv->h.ticket;
            const int32_t id = sim_feed_moved(fl->r[mv->to], &mv->h, now);
            struct ts_err err = {0};
            if (ticket >= 0 && fl->o->live_adopt(fl->o->live_ctx, mv->to, e.arg, id, &err))
                sim_fail(fl->r[mv->to], &err);
            fl->dirty[mv->to] = true;
            fl->inbound[mv->to]--;
            ts_grow((void **)&fl->free_mv, &fl->cap_free, fl->num_free + 1, sizeof *fl->free_mv);
            fl->free_mv[fl->num_free++] = e.arg;
        }
        for (int i = 0; i < fl->n; i++)
            if (sim_next_event_ns(fl->r[i]) == now) {
                fl->dirty[i] |= sim_advance(fl->r[i], now + 1);
                send_handoffs(fl, i);
            }
    }
}

/* Keeps reading p (size bytes, its time first) after the n kept in *v (room for *cap), unless the two
 * kept last equal it but in their time (same): then the later of them, the last of their run, becomes
 * p. Of a run of equal readings its first and last are kept (fleet_result). */
static void keep_reading(void **v, size_t *cap, int64_t *n, size_t size, const void *p,
                         bool (*same)(const void *, const void *))
{
    char *last = *n >= 2 ? (char *)*v + (size_t)(*n - 1) * size : NULL;
    if (last && same(last, p) && same(last - size, p)) {
        memcpy(last, p, size);
        return;
    }
    ts_grow(v, cap, (size_t)*n + 1, size);
    memcpy((char *)*v + (size_t)(*n)++ * size, p, size);
}

static bool same_tau(const void *a, const void *b)
{
    const struct fleet_tau_point *x = a, *y = b;
    return x->tau == y->tau && x->tpf == y->tpf && x->outstanding == y->outstanding;
}

static bool same_scale(const void *a, const void *b)
{
    const struct fleet_scale_point *x = a, *y = b;
    return x->up == y->up && x->starting == y->starting && x->outstanding == y->outstanding;
}

/* Load control's reading at t (every replica run up to it, its load read): the threshold moved a step
 * by the load, and set on every replica. */
static int tau_tick(struct fleet_state *fl, double t_s, int64_t t_ns, struct ts_err *err)
{
    double *tau = &fl->tau;
    const struct fleet_tau *lc = &fl->o->tau;
    refresh_view(fl, t_ns);
    int open = 0;
    int64_t held = 0;
    for (int i = 0; i < fl->n; i++)
        if (!fl->v[i].closed)
            open++, held += fl->v[i].load.outstanding;
    const double mean = open > 0 ? (double)held / open : 0;
    if (mean > lc->up)
        *tau = fmax(lc->lo, *tau - lc->step);
    else if (mean < lc->down)
        *tau = fmin(fl->tau0, *tau + lc->step);
    const double factor = pow((1 - *tau) / (1 - fl->tau0), lc->elasticity);
    double tpf_sum = 0;
    for (int i = 0; i < fl->n; i++) {
        double tpf;
        if (sim_scale_decode(fl->r[i], factor, *tau, &tpf, err))
            return ts_fail_prefix(err, "--load-control: replica %d", i);
        tpf_sum += tpf;
    }
    struct fleet_result *out = fl->out;
    const struct fleet_tau_point p = {t_s, *tau, tpf_sum / fl->n, held};
    keep_reading((void **)&out->tau, &fl->tau_cap, &out->ntau, sizeof p, &p, same_tau);
    out->tau_taken++;
    return 0;
}

/* Load control's start: every replica's decode model one whose threshold can move (at tau0 now),
 * along the whole band where its profile publishes a sweep. */
static int tau_setup(struct fleet_state *fl, struct ts_err *err)
{
    const struct fleet_tau *lc = &fl->o->tau;
    fl->tau0 = lc->tau0;
    if (!lc->tau0_given) { /* the decode models' own threshold, where their profiles all say one */
        const double own = sim_decode_model(fl->r[0])->tau;
        bool same = own > 0;
        for (int i = 1; i < fl->n && same; i++)
            same = sim_decode_model(fl->r[i])->tau == own;
        fl->tau0 = same ? own : 0.9;
        if (lc->lo >= fl->tau0)
            return ts_fail(err, "--load-control: lo (%g) must be below tau0 (%g), the decode models' threshold", lc->lo,
                           fl->tau0);
    }
    fl->tau = fl->out->tau0 = fl->tau0;
    for (int i = 0; i < fl->n; i++) {
        const struct decode_model *dm = sim_decode_model(fl->r[i]);
        const struct decode_sweep *sw = &dm->sweep;
        if (sw->n > 0 && (fl->tau0 > sw->tau[0] || lc->lo < sw->tau[sw->n - 1]))
            return ts_fail(err, "--load-control: replica %d: its band, lo %g to tau0 %g, leaves the thresholds decode "
                                "model %s publishes (%g to %g): set lo and tau0 within them", i, lc->lo, fl->tau0,
                           dm->spec, sw->tau[sw->n - 1], sw->tau[0]);
        fl->out->tau_swept |= sw->n > 0;
        double tpf;
        if (sim_scale_decode(fl->r[i], 1, fl->tau0, &tpf, err))
            return ts_fail_prefix(err, "--load-control: replica %d", i);
    }
    return 0;
}

enum { R_OFF = 0, R_STARTING, R_UP, R_DRAINING };

/* The fleet's state as the autoscaler keeps it. */
struct scaler {
    uint8_t *state;
    double *ready_s, *since_s; /* when a starting replica takes requests; when each was started */
    double *drain_s;           /* when a draining one was told to drain */
    double next_s, last_down_s;
    size_t cap;
};

/* Opens the view to the replicas up (a starting one once ready), closes it to the others. */
static void scaler_doors(const struct scaler *sc, double t_s, int n, struct router_view *v)
{
    for (int i = 0; i < n; i++) {
        if (sc->state[i] == R_STARTING && sc->ready_s[i] <= t_s)
            sc->state[i] = R_UP;
        v[i].closed = sc->state[i] != R_UP;
    }
}

/* The autoscaler's reading at t (every replica run up to it, its load read). */
static void scaler_tick(struct scaler *sc, const struct fleet_scale *fs, struct fleet_state *fl, double t_s,
                        int64_t t_ns, struct fleet_result *out)
{
    const int n = fl->n;
    struct router_view *v = fl->v;
    refresh_view(fl, t_ns);
    for (int i = 0; i < n; i++)
        if (sc->state[i] == R_DRAINING && v[i].load.outstanding == 0) { /* drained: stopped */
            sc->state[i] = R_OFF;
            out->active_s[i] += t_s - sc->since_s[i];
        }
    scaler_doors(sc, t_s, n, v);
    int up = 0, starting = 0, off = -1, drain = -1;
    int64_t held = 0, all = 0;
    for (int i = 0; i < n; i++) {
        all += v[i].load.outstanding;
        if (sc->state[i] == R_UP) {
            up++, held += v[i].load.outstanding;
            if (drain < 0 || v[i].load.outstanding <= v[drain].load.outstanding)
                drain = i;
        }
        starting += sc->state[i] == R_STARTING;
        if (sc->state[i] == R_OFF && off < 0)
            off = i;
    }
    const double mean = up > 0 ? (double)held / up : 0;
    if (mean > fs->up && off >= 0 && starting == 0) {
        sc->state[off] = R_STARTING, sc->ready_s[off] = t_s + fs->delay_s, sc->since_s[off] = t_s;
        out->started++, starting++;
    } else if (mean < fs->down && up > fs->min && t_s - sc->last_down_s >= fs->cooldown_s) {
        sc->state[drain] = R_DRAINING, sc->last_down_s = sc->drain_s[drain] = t_s;
        v[drain].closed = true;
        out->stopped++, up--;
    }
    const struct fleet_scale_point p = {t_s, up, starting, all};
    keep_reading((void **)&out->scale, &sc->cap, &out->nscale, sizeof p, &p, same_scale);
    out->up_mean += (up - out->up_mean) / (double)++out->scale_taken;
}

#define FLEET_READINGS_SAID 1000000 /* control readings past which the run says how many it takes */

/* The overload rule's mark k (0: at a third of the arrivals, 1: at the last) taken at t: each replica
 * run up to t (its view left as the router last saw it, so that the routing is as without the mark)
 * and its requests outstanding counted, with the fleet's held back and moving. */
static void overload_mark(struct fleet_state *fl, int k, int64_t t)
{
    if (fl->disagg)
        step_to(fl, t);
    int64_t all = (int64_t)fl->q.n;
    for (int i = 0; i < fl->n; i++) {
        fl->dirty[i] |= sim_advance(fl->r[i], t);
        struct sim_load ld;
        sim_load(fl->r[i], &ld);
        fl->rep_marks[i][k] = ld.outstanding;
        all += ld.outstanding + (fl->disagg ? fl->inbound[i] : 0);
    }
    fl->marks[k] = all;
}

/* The overload rule over the fleet and each replica (where SIM_OVERLOAD_MIN requests arrived). */
static void overload_judge(struct fleet_state *fl, int64_t arrivals)
{
    struct fleet_result *out = fl->out;
    const double span_s = (double)fl->last_arrival_ns * 1e-9;
    if (arrivals < SIM_OVERLOAD_MIN || span_s <= 0)
        return;
    struct sim_summary *f = &out->fleet;
    memcpy(f->outstanding, fl->marks, sizeof fl->marks);
    f->offered_rps = (double)(arrivals - 1) / span_s;
    f->overloaded = sim_overload_rule(f->outstanding, f->offered_rps, f->req_s); /* (req_s: merge's) */
    for (int i = 0; i < fl->n; i++) {
        struct sim_summary *m = &out->replica[i];
        memcpy(m->outstanding, fl->rep_marks[i], sizeof fl->rep_marks[i]);
        m->offered_rps = (double)(out->routed[i] + m->handed_in) / span_s;
        m->overloaded = m->makespan_ns > 0 && sim_overload_rule(m->outstanding, m->offered_rps, m->req_s);
    }
}

/* The control loops' readings due before the arrival at t_ns (the autoscaler's, load control's), in
 * order of time; -1 with err where load control cannot set a replica's threshold. */
static int controls(struct fleet_state *fl, struct scaler *sc, int64_t t_ns, struct ts_err *err)
{
    const struct fleet_scale *fs = &fl->o->scale;
    const struct fleet_tau *lc = &fl->o->tau;
    const double t_s = (double)t_ns * 1e-9;
    for (;;) {
        const double a = fs->on ? sc->next_s : INFINITY, b = lc->on ? fl->tau_next_s : INFINITY;
        if (fmin(a, b) > t_s)
            return 0;
        /* (their count is the workload's span over every: a long span at a short every is said, once) */
        if (fl->out->scale_taken + fl->out->tau_taken == FLEET_READINGS_SAID)
            fprintf(stderr, "tessera sim: %lld control readings taken by %.0f s of simulated time (--autoscale or "
                    "--load-control every=%g s): the run's time grows with the workload's span over every; a "
                    "longer every takes fewer\n", (long long)FLEET_READINGS_SAID, fmin(a, b),
                    fs->on ? fs->every_s : lc->every_s);
        if (a <= b) {
            scaler_tick(sc, fs, fl, a, TS_MIN((int64_t)(a * 1e9), t_ns), fl->out);
            sc->next_s += fs->every_s;
        } else {
            if (tau_tick(fl, b, TS_MIN((int64_t)(b * 1e9), t_ns), err))
                return -1;
            fl->tau_next_s += lc->every_s;
        }
    }
}

static void show_progress(int64_t done, int64_t total, int64_t now_ns, bool last)
{
    fprintf(stderr, "\rfleet: %lld of %lld requests routed, simulated %.1f s%s", (long long)done, (long long)total,
            (double)now_ns * 1e-9, last ? "\n" : "");
}

int fleet_room(int n, struct ts_err *err)
{
    struct rlimit rl;
    const rlim_t need = (rlim_t)n * FLEET_FILES_PER_REPLICA + FLEET_FILES_BESIDE;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        const long long most = ((long long)rl.rlim_max - FLEET_FILES_BESIDE) / FLEET_FILES_PER_REPLICA;
        return ts_fail(err, "%d replicas keep %llu files open (%d each, %d besides), more than this process may "
                            "open (ulimit -n: %llu): raise it (ulimit -n %llu) or run at most %lld replicas", n,
                       (unsigned long long)need, FLEET_FILES_PER_REPLICA, FLEET_FILES_BESIDE,
                       (unsigned long long)rl.rlim_max, (unsigned long long)need, most > 0 ? most : 0);
    }
    rl.rlim_cur = need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : ts_fail(err, "cannot raise the open-file limit (ulimit -n) to "
                                                                 "%llu for %d replicas", (unsigned long long)need, n);
}

/* Disaggregation's pools (o->disagg): the Refresh pool the first replicas, each replica's rule for
 * handing requests on, the ports and the moves in flight; -1 with err where a pool would be empty or
 * the fleet autoscaled. */
static int disagg_setup(struct fleet_state *fl, struct ts_err *err)
{
    const struct fleet_disagg *dg = &fl->o->disagg;
    const int n = fl->n;
    fl->entry = fl->out->refresh_pool = dg->refresh > 0 ? dg->refresh : n / 2;
    if (fl->o->scale.on)
        return ts_fail(err, "--disagg with --autoscale: a disaggregated fleet's pools are fixed");
    if (fl->entry < 1 || fl->entry >= n)
        return ts_fail(err, "--disagg: a Refresh pool of %d of the %d replicas leaves %s (refresh=N, 1 to %d)",
                       fl->entry, n, fl->entry < 1 ? "it empty" : "no Reuse pool", n - 1);
    for (int i = 1; i < n; i++) { /* a request moves whole: each replica must run it as the first would */
        const char *what = sim_hand_mismatch(fl->r[0], fl->r[i]);
        if (what)
            return ts_fail(err, "--disagg: replica %d's %s differs from replica 0's, so a request moved between them "
                                "could not go on (the pools may differ in card, TP and scheduler)", i, what);
    }
    fl->disagg = true;
    fl->port_out = xcalloc((size_t)n, sizeof *fl->port_out);
    fl->port_in = xcalloc((size_t)n, sizeof *fl->port_in);
    fl->inbound = xcalloc((size_t)n, sizeof *fl->inbound);
    evq_init(&fl->xq);
    const bool every = dg->mode == DISAGG_EVERY;
    for (int i = 0; i < n; i++)
        sim_set_hand(fl->r[i], i < fl->entry ? (every ? SIM_HAND_REUSE : SIM_HAND_ALL)
                                             : (every ? SIM_HAND_REFRESH : SIM_HAND_NONE));
    return 0;
}

/* Why a live disaggregated fleet cannot move its requests between its engines, or 0: a move carries a
 * request's K and V pages alone, so a policy whose engine keeps more for a request (dLLM-Cache's
 * feature cache, Elastic-Cache's layer inputs, FOCUS's eviction progress, or an extension its steps
 * need that keeps some: SparseD's pattern) is refused. */
static int live_moves_refused(struct sim **r, const struct fleet_opts *o, struct ts_err *err)
{
    if (!o->live_move || !o->live_adopt)
        return ts_fail(err, "--disagg with --executor gpu: this fleet's executors cannot move K/V between them");
    const struct step_desc *k = sim_knobs(r[0]); /* (every replica runs replica 0's policy: disagg_setup) */
    const struct policy_ops *po = sim_setup_of(r[0])->policy;
    const char *what = k->cache_outputs  ? "each token's attention and FFN outputs (a feature cache)"
                       : k->cache_inputs ? "each token's input to every layer"
                       : k->evict        ? "each request's eviction progress"
                                         : NULL;
    if (what)
        return ts_fail(err, "--disagg with --executor gpu: a live move carries a request's K and V alone, and policy "
                            "'%s' keeps %s on the engine as well", sim_config(r[0])->policy, what);
    char why[512];
    if (po && eng_ext_refused(po->engine, ENG_EXT_MOVE, why, sizeof why))
        return ts_fail(err, "--disagg with --executor gpu: policy '%s' needs %s", po->name, why);
    return 0;
}

/* Why the replicas' prompt caches cannot run on workload trace t, or 0: the workload must give prompt
 * block ids where any keeps one, and under an affinity router every replica must keep one. */
static int prompts_refused(const struct trace *t, const struct sim_config *cfg, int n, bool affinity,
                           struct ts_err *err)
{
    for (int i = 0; i < n && t->n_hash == 0; i++)
        if (affinity || cfg[i].prompt_cache > 0)
            return ts_fail(err, "%s: the workload (%s) gives no prompt block ids (a Mooncake trace's hash_ids), so "
                                "no request could find another's prompt", affinity ? "--router affinity" : "--prompt-cache",
                           cfg[0].trace);
    for (int i = 0; i < n && affinity; i++)
        if (cfg[i].prompt_cache < TRACE_HASH_BLOCK)
            return ts_fail(err, "--router affinity: replica %d keeps no prompt cache (--prompt-cache TOKENS), so "
                                "no request gains from the replica it is routed to", i);
    return 0;
}

/* An affinity router's pictures of the replicas' prompt caches, each as large as the replica's may grow
 * (its --prompt-cache, bounded by its KV pool). */
static int prompts_setup(struct fleet_state *fl, const struct sim_config *cfg, const struct trace *t,
                         struct ts_err *err)
{
    if (prompts_refused(t, cfg, fl->n, fl->o->router->affinity, err))
        return -1;
    if (!fl->o->router->affinity)
        return 0;
    fl->seen = xcalloc((size_t)fl->n, sizeof *fl->seen);
    for (int i = 0; i < fl->n; i++)
        fl->seen[i] = prompt_cache_new(sim_prompt_blocks(fl->r[i]));
    return 0;
}

/* The workload routed: every replica's run finished, its summary taken, its energy over its time up,
 * and the fleet's merged. */
static int finish(struct fleet_state *fl, const struct scaler *sc, double slo, int64_t arrivals, struct ts_err *err)
{
    struct fleet_result *out = fl->out;
    const int n = fl->n;
    for (int i = 0; i < n; i++) {
        if (sim_run(fl->r[i], err))
            return ts_fail_prefix(err, "replica %d", i);
        sim_get_summary(fl->r[i], &out->replica[i]);
    }
    int64_t end_ns = 0;
    for (int i = 0; i < n; i++)
        end_ns = TS_MAX(end_ns, out->replica[i].makespan_ns);
    for (int i = 0; i < n; i++) { /* up to the fleet's last finish, a draining one to its own (or its drain) */
        const double own_s = (double)out->replica[i].makespan_ns * 1e-9;
        if (sc->state[i] != R_OFF)
            out->active_s[i] += fmax(0, (sc->state[i] == R_DRAINING ? fmax(sc->drain_s[i], own_s) : (double)end_ns * 1e-9) -
                                            sc->since_s[i]);
        fleet_replica_energy(&out->replica[i], out->active_s[i]);
    }
    if (fleet_merge(fl->r, out, slo, &out->fleet))
        return ts_fail(err, "cannot read the replicas' spilled latencies back");
    overload_judge(fl, arrivals);
    return 0;
}

int fleet_run(const struct sim_config *workload, const struct sim_config *cfg, int n, const struct fleet_opts *o,
              struct fleet_result *out, struct ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return ts_fail(err, "a fleet needs at least one replica");
    if (fleet_room(n, err))
        return FLEET_REFUSED;
    const double t0 = ts_wall_s();
    out->n = n;
    out->replica = xcalloc((size_t)n, sizeof *out->replica);
    out->routed = xcalloc((size_t)n, sizeof *out->routed);
    out->active_s = xcalloc((size_t)n, sizeof *out->active_s);
    const struct fleet_scale *fs = &o->scale;
    struct scaler sc = {.state = xcalloc((size_t)n, 1), .ready_s = xcalloc((size_t)n, sizeof *sc.ready_s),
                        .since_s = xcalloc((size_t)n, sizeof *sc.since_s),
                        .drain_s = xcalloc((size_t)n, sizeof *sc.drain_s), .next_s = fs->every_s,
                        .last_down_s = -INFINITY};
    for (int i = 0; i < n; i++) /* up from the start: all of them, or the autoscaler's min */
        sc.state[i] = !fs->on || i < fs->min ? R_UP : R_OFF;
    struct sim **r = xcalloc((size_t)n, sizeof *r);
    struct router_view *v = xcalloc((size_t)n, sizeof *v);
    bool *dirty = xmalloc(sizeof *dirty * (size_t)n);
    for (int i = 0; i < n; i++)
        dirty[i] = true;
    struct fleet_state fl = {.r = r, .n = n, .o = o, .v = v, .dirty = dirty, .entry = n, .out = out,
                             .rep_marks = xcalloc((size_t)n, sizeof(int64_t[2]))};
    struct trace t = {0}, lengths = {0};
    struct trace_stream st = {0};
    struct model_cfg m;
    int rc = -1;
    bool started = false; /* past the checks of its input: a failure now is the run's */
    for (int i = 0; i < n; i++)
        if (!(r[i] = sim_create_fed(&cfg[i], err))) {
            ts_fail_prefix(err, "replica %d (--gpu %s --model %s%s%s)", i, cfg[i].gpu, cfg[i].model,
                           cfg[i].system[0] ? " --system " : "", cfg[i].system);
            goto done;
        }
    if ((o->disagg.mode != DISAGG_OFF && (disagg_setup(&fl, err) || (o->ex && live_moves_refused(r, o, err)))) || (o->tau.on && tau_setup(&fl, err)) || sim_model_resolve(workload, &m, err) || sim_workload_open(workload, &m, &t, &lengths, &st, err) ||
        prompts_setup(&fl, cfg, &t, err) || (o->live_open && o->live_open(o->live_ctx, err)))
        goto done;
    for (int i = 0; o->ex && i < n; i++) /* (live: its workers started, past every check) */
        sim_set_executor(r[i], &o->ex[i]);
    started = true;
    const int64_t stale_ns = (int64_t)(o->staleness_s * 1e9);
    int64_t next_refresh = INT64_MIN, routed = 0;
    int got;
    struct trace_req tr = {0};
    double shown = ts_wall_s();
    scaler_doors(&sc, 0, n, v);
    fl.tau_next_s = o->tau.every_s; /* (the threshold itself: tau_setup's) */
    while ((got = trace_stream_next(&st, &tr, err)) == 1) {
        const double t_s = (double)tr.arrival_ns * 1e-9;
        if (controls(&fl, &sc, tr.arrival_ns, err))
            goto done;
        const int64_t index = st.i - 1;
        if (st.n >= SIM_OVERLOAD_MIN && (index == st.n / 3 || index == st.n - 1))
            overload_mark(&fl, index == st.n - 1, tr.arrival_ns);
        fl.last_arrival_ns = tr.arrival_ns;
        if (stale_ns <= 0 || tr.arrival_ns >= next_refresh) {
            refresh_view(&fl, tr.arrival_ns);
            next_refresh = tr.arrival_ns + stale_ns;
        }
        scaler_doors(&sc, t_s, n, v);
        release(&fl, tr.arrival_ns); /* those held back first, in their order */
        if (o->admit_max > 0 && (fl.q.n > 0 || fleet_full(&fl))) {
            if (o->defer)
                hold(&fl.q, &tr, st.i - 1), out->deferred++;
            else
                out->refused++;
            continue;
        }
        route(&fl, &tr, st.i - 1, tr.arrival_ns);
        if (o->progress && ++routed % 1024 == 0 && ts_wall_s() - shown > 0.5) {
            show_progress(routed + out->refused, st.n, tr.arrival_ns, false);
            shown = ts_wall_s();
        }
    }
    if (got < 0)
        goto done;
    release_rest(&fl, tr.arrival_ns);
    if (fl.disagg) /* (the replicas' runs finish together) */
        step_to(&fl, INT64_MAX);
    if (o->progress)
        show_progress(st.n, st.n, tr.arrival_ns, true);
    rc = finish(&fl, &sc, cfg[0].slo, st.n, err);
    if (!rc && out->ntau > 0) { /* the threshold weighted by how long it held, to the fleet's end */
        const double end = fmax((double)out->fleet.makespan_ns * 1e-9, out->tau[out->ntau - 1].t_s), span = end - out->tau[0].t_s;
        for (int64_t k = 0; k < out->ntau; k++)
            out->tau_mean += out->tau[k].tau * ((k + 1 < out->ntau ? out->tau[k + 1].t_s : end) - out->tau[k].t_s);
        out->tau_mean = span > 0 ? out->tau_mean / span : out->tau[0].tau;
    }
done:
    out->fleet.run_wall_s = ts_wall_s() - t0;
    /* the last opened first: the C library unlinks each file it closes from its list of open files,
     * searched newest first, so that n replicas' spills close in O(n) rather than O(n^2) */
    for (int i = n; i-- > 0;)
        sim_destroy(r[i]);
    free(fl.q.v);
    for (struct event e; fl.disagg && evq_pop(&fl.xq, &e);) /* (moves a failed run left in flight) */
        sim_handoff_drop(&fl.mv[e.arg].h);
    evq_free(&fl.xq);
    free(fl.mv), free(fl.free_mv), free(fl.port_out), free(fl.port_in), free(fl.inbound);
    for (int i = 0; fl.seen && i < n; i++)
        prompt_cache_free(fl.seen[i]);
    free(fl.seen);
    free(fl.rep_marks);
    free(r);
    free(v);
    free(dirty);
    free(sc.state), free(sc.ready_s), free(sc.since_s), free(sc.drain_s);
    trace_stream_free(&st);
    trace_free(&t);
    trace_free(&lengths);
    if (rc)
        fleet_result_free(out);
    return rc && !started ? FLEET_REFUSED : rc;
}

void fleet_result_free(struct fleet_result *r)
{
    free(r->tau);
    free(r->replica);
    free(r->routed);
    free(r->active_s);
    free(r->scale);
    memset(r, 0, sizeof *r);
}
