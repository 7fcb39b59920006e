/*
 * fleet_spec.c: what a fleet's options name (fleet.h): the routers' table and their picks, the links' table,
 * and the parsers of --router, --disagg, --autoscale and --load-control. Adding a router: its pick and one
 * row of the table below; adding a link: one row of its table.
 */
#define _POSIX_C_SOURCE 200809L
#include "fleet.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* --- the routers --------------------------------------------------------------------------- */

static int parse_keys(const char *opt, const char *spec, int n, const char *const *keys, double *const *fields,
                      const double *lo, const double *hi, const char *name_key, char *name, size_t name_len,
                      struct ts_err *err);

static int pick_round_robin(const struct router_view *v, int n, int *next, const struct router_req *q)
{
    (void)q;
    int k = *next % n;
    for (int j = 0; j < n && v[k].closed; j++)
        k = (k + 1) % n;
    *next = (k + 1) % n;
    return k;
}

/* The open replica of the least key, ties to the first met from the cursor on (which then moves past
 * it, so that equal replicas take turns). */
static int least(const struct router_view *v, int n, int *next, double (*key)(const struct router_view *))
{
    int best = -1;
    double kb = 0;
    for (int j = 0; j < n; j++) {
        const int k = (*next + j) % n;
        if (v[k].closed)
            continue;
        const double kk = key(&v[k]);
        if (best < 0 || kk < kb)
            best = k, kb = kk;
    }
    TS_ASSERT(best >= 0);
    *next = (best + 1) % n;
    return best;
}

static double outstanding(const struct router_view *v) { return (double)(v->load.outstanding + v->sent); }

/* The share of the KV pool in use, then the outstanding requests. */
static double kv_then_outstanding(const struct router_view *v) { return v->load.kv_used * 1e9 + outstanding(v); }

/* The requests that start a block next (each one routed since will: its first step), then the
 * outstanding ones. */
static double refreshing_then_outstanding(const struct router_view *v)
{
    return (double)(v->load.refreshing + v->sent) * 1e9 + outstanding(v);
}

/* The most of the request's blocks held, then the outstanding requests; the fewest blocks held, then
 * the outstanding requests. */
static double match_then_outstanding(const struct router_view *v) { return -(double)v->match * 1e9 + outstanding(v); }
static double held_then_outstanding(const struct router_view *v) { return (double)v->held * 1e9 + outstanding(v); }

static int pick_least_outstanding(const struct router_view *v, int n, int *next, const struct router_req *q)
{
    (void)q;
    return least(v, n, next, outstanding);
}
static int pick_least_kv(const struct router_view *v, int n, int *next, const struct router_req *q)
{
    (void)q;
    return least(v, n, next, kv_then_outstanding);
}
static int pick_phase_aware(const struct router_view *v, int n, int *next, const struct router_req *q)
{
    (void)q;
    return least(v, n, next, refreshing_then_outstanding);
}

/* SGLang's cache-aware choice (fleet.h): balance first, then the prompt's blocks, then room. */
static int pick_affinity(const struct router_view *v, int n, int *next, const struct router_req *q)
{
    double lo = INFINITY, hi = 0;
    int32_t most = 0;
    for (int k = 0; k < n; k++)
        if (!v[k].closed) {
            lo = fmin(lo, outstanding(&v[k])), hi = fmax(hi, outstanding(&v[k]));
            most = TS_MAX(most, v[k].match);
        }
    if (q->blocks == 0 || (hi - lo > q->balance_abs && hi > q->balance_rel * lo))
        return least(v, n, next, outstanding);
    if ((double)most > q->threshold * q->blocks)
        return least(v, n, next, match_then_outstanding);
    return least(v, n, next, held_then_outstanding);
}

static const struct router_ops routers[] = {
    {"round-robin", "each replica in turn", pick_round_robin, false},
    {"least-outstanding", "the replica holding the fewest requests (arrived, not done)", pick_least_outstanding, false},
    {"least-kv", "the replica with the smallest share of its KV pool in use, then the fewest requests",
     pick_least_kv, false},
    {"phase-aware", "the replica with the fewest requests about to start a block (a Refresh, where a new request's "
                    "first step joins them), then the fewest requests: a new Refresh lands among Reuse steps",
     pick_phase_aware, false},
    {"affinity", "SGLang's cache-aware router: the replica whose prompt cache holds most of the request's prompt "
                 "(more than threshold of its blocks), else the one holding least, unless the load is out of "
                 "balance (then the fewest requests); needs --prompt-cache and a trace's prompt block ids",
     .affinity = true, .pick = pick_affinity},
};

const struct router_ops *router_get(int i) { return i >= 0 && i < (int)TS_ARRAY_LEN(routers) ? &routers[i] : NULL; }

const struct router_ops *router_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(routers); i++)
        if (strcmp(routers[i].name, name) == 0)
            return &routers[i];
    return NULL;
}

int fleet_router_parse(const char *spec, const struct router_ops **ops, struct router_req *q, struct ts_err *err)
{
    *q = (struct router_req){.threshold = 0.5, .balance_abs = 32, .balance_rel = 1.1};
    const char *colon = strchr(spec, ':');
    char name[CFG_STR];
    snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
    if (!(*ops = router_find(name))) {
        char list[256];
        router_list(list, sizeof list);
        return ts_fail(err, "--router: '%s' is not a router (%s)", name, list);
    }
    if (!colon)
        return 0;
    if (!(*ops)->affinity)
        return ts_fail(err, "--router '%s': router %s takes no parameters", spec, name);
    static const char *const keys[] = {"threshold", "abs", "rel"};
    double *const fields[] = {&q->threshold, &q->balance_abs, &q->balance_rel};
    static const double lo[] = {0, 0, 1}, hi[] = {1, 1e9, 1e9};
    return parse_keys("--router", colon + 1, 3, keys, fields, lo, hi, NULL, NULL, 0, err);
}

void router_list(char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < TS_ARRAY_LEN(routers); i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", routers[i].name);
}

/* --- disaggregation ------------------------------------------------------------------------- */

/* Bandwidth a GPU one way, nominal; latency a transfer: an assumption (its setup and completion
 * message), set with lat= where a fleet's is known. */
static const struct fleet_link links[] = {
    {"host", 0, 10e-6, "each card's own link to the GPUs of its host (the GPU table's link_bw: NVLink where the card "
                       "has it, else PCIe); two H100s measured 397 GB/s for 1 GiB and 10 us for 4 KiB (record "
                       "link-h100x2)"},
    {"ib-ndr", 50e9, 25e-6, "InfiniBand NDR, 400 Gb/s a GPU (NVIDIA ConnectX-7 datasheet; DGX H100: one a GPU)"},
    {"ib-hdr", 25e9, 25e-6, "InfiniBand HDR, 200 Gb/s a GPU (NVIDIA ConnectX-6 datasheet; DGX A100: one a GPU)"},
    {"eth-100g", 12.5e9, 50e-6, "100 Gb/s Ethernet with RDMA (RoCE v2), one port a GPU"},
};

const struct fleet_link *fleet_link_get(int i) { return i >= 0 && i < (int)TS_ARRAY_LEN(links) ? &links[i] : NULL; }

int fleet_disagg_parse(const char *spec, struct fleet_disagg *out, struct ts_err *err)
{
    *out = (struct fleet_disagg){0};
    if (!spec || !*spec)
        return 0;
    const size_t n = strcspn(spec, ",");
    const bool first = n == 5 && strncmp(spec, "first", 5) == 0, every = n == 5 && strncmp(spec, "every", 5) == 0;
    if (!first && !every)
        return ts_fail(err, "--disagg '%s': begins with its mode, first (a request's first step in the Refresh pool) "
                            "or every (each Refresh step there)", spec);
    out->mode = first ? DISAGG_FIRST : DISAGG_EVERY;
    static const char *const keys[] = {"refresh", "bw", "lat"};
    double refresh = 0, bw = -1, lat = -1;
    double *const fields[] = {&refresh, &bw, &lat};
    static const double lo[] = {1, 0.001, 0}, hi[] = {65535, 1e9, 1e9};
    char link[32] = "";
    if (parse_keys("--disagg", spec + n + (spec[n] == ','), (int)TS_ARRAY_LEN(keys), keys, fields, lo, hi, "link", link,
                   sizeof link, err))
        return -1;
    if (refresh != floor(refresh))
        return ts_fail(err, "--disagg '%s': refresh %g must be a whole number of replicas", spec, refresh);
    out->refresh = (int)refresh;
    if (!link[0])
        return ts_fail(err, "--disagg '%s': the pools need a link between them (link=NAME: tessera list links)", spec);
    const struct fleet_link *l = NULL;
    for (int i = 0; (l = fleet_link_get(i)) && strcmp(l->name, link) != 0; i++)
        ;
    if (!l) {
        char names[128] = "";
        for (int i = 0; fleet_link_get(i); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", links[i].name);
        return ts_fail(err, "--disagg '%s': link '%s' is not in the table (%s)", spec, link, names);
    }
    out->link = *l;
    if (bw > 0)
        out->link.bw = bw * 1e9;
    if (lat >= 0)
        out->link.lat_s = lat * 1e-6;
    return 0;
}

/* --- the autoscaler and load control's options ---------------------------------------------- */

/* KEY=VALUE,... of `spec` (option `opt`) into fields[k] for keys[k], each checked in [lo[k], hi[k]]. */
static int parse_keys(const char *opt, const char *spec, int n, const char *const *keys, double *const *fields,
                      const double *lo, const double *hi, const char *name_key, char *name, size_t name_len,
                      struct ts_err *err)
{
    char text[CFG_STR];
    snprintf(text, sizeof text, "%s", spec);
    char *save = NULL;
    for (char *kv = strtok_r(text, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq && name_key && strlen(name_key) == (size_t)(eq - kv) && strncmp(kv, name_key, (size_t)(eq - kv)) == 0) {
            snprintf(name, name_len, "%s", eq + 1);
            continue;
        }
        int k = 0;
        while (eq && k < n && (strlen(keys[k]) != (size_t)(eq - kv) || strncmp(kv, keys[k], (size_t)(eq - kv))))
            k++;
        if (!eq || k == n) {
            char names[160] = "";
            for (int j = 0; j < n; j++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "", keys[j]);
            if (name_key)
                snprintf(names + strlen(names), sizeof names - strlen(names), " or %s=NAME", name_key);
            return ts_fail(err, "%s '%s': '%s' is not KEY=VALUE of %s", opt, spec, kv, names);
        }
        double v;
        if (ts_parse_double(eq + 1, &v) || !(v >= lo[k] && v <= hi[k]))
            return ts_fail(err, "%s '%s': %s '%s' must be a number in %.10g..%.10g", opt, spec, keys[k], eq + 1,
                           lo[k], hi[k]);
        *fields[k] = v;
    }
    return 0;
}

int fleet_scale_parse(const char *spec, struct fleet_scale *out, struct ts_err *err)
{
    *out = (struct fleet_scale){.min = 1, .up = 8, .down = 2, .every_s = 10, .delay_s = 60, .cooldown_s = 120};
    if (!spec || !*spec)
        return 0;
    out->on = true;
    static const char *const keys[] = {"min", "up", "down", "every", "delay", "cooldown"};
    double min = out->min;
    double *const fields[] = {&min, &out->up, &out->down, &out->every_s, &out->delay_s, &out->cooldown_s};
    static const double lo[] = {1, 0, 0, 0.01, 0, 0}, hi[] = {65536, 1e6, 1e6, 1e6, 1e6, 1e6};
    if (parse_keys("--autoscale", spec, (int)TS_ARRAY_LEN(keys), keys, fields, lo, hi, NULL, NULL, 0, err))
        return -1;
    if (min != floor(min))
        return ts_fail(err, "--autoscale '%s': min %g must be a whole number of replicas", spec, min);
    out->min = (int)min;
    if (out->down >= out->up)
        return ts_fail(err, "--autoscale '%s': down (%g) must be below up (%g), or replicas start and stop in turn",
                       spec, out->down, out->up);
    return 0;
}

int fleet_tau_parse(const char *spec, struct fleet_tau *out, struct ts_err *err)
{
    *out = (struct fleet_tau){.tau0 = 0.9, .lo = 0.7, .step = 0.05, .up = 8, .down = 2, .every_s = 10,
                              .elasticity = 1};
    if (!spec || !*spec)
        return 0;
    out->on = true;
    static const char *const keys[] = {"lo", "step", "up", "down", "every", "tau0", "elasticity"};
    double *const fields[] = {&out->lo, &out->step, &out->up, &out->down, &out->every_s, &out->tau0, &out->elasticity};
    static const double lo[] = {0.01, 0.001, 0, 0, 0.01, 0.02, 0}, hi[] = {0.99, 0.5, 1e6, 1e6, 1e6, 0.999, 10};
    if (parse_keys("--load-control", spec, (int)TS_ARRAY_LEN(keys), keys, fields, lo, hi, NULL, NULL, 0, err))
        return -1;
    out->tau0_given = strstr(spec, "tau0=") != NULL; /* (its keys checked: only tau0's name holds it) */
    if (out->tau0_given && out->lo >= out->tau0)
        return ts_fail(err, "--load-control '%s': lo (%g) must be below tau0 (%g), the decode model's threshold", spec,
                       out->lo, out->tau0);
    if (out->down >= out->up)
        return ts_fail(err, "--load-control '%s': down (%g) must be below up (%g), or the threshold moves at every "
                            "reading", spec, out->down, out->up);
    return 0;
}
