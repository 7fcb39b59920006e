/* cost.c: the table of cost back ends (cost.h); a new back end is one file and one line here. */
#include "cost.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const struct cost_ops *const backends[] = {&cost_roofline, &cost_calibrated};

const struct cost_ops *cost_backend(int i) { return i >= 0 && (size_t)i < TS_ARRAY_LEN(backends) ? backends[i] : NULL; }

static const char *backend_name(int i)
{
    const struct cost_ops *b = cost_backend(i);
    return b ? b->name : NULL;
}

int cost_resolve(const char *name, const struct cost_ops **out, struct ts_err *err)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(backends); i++)
        if (ts_name_eq(name, backends[i]->name)) {
            *out = backends[i];
            return 0;
        }
    char known[128];
    ts_join_names(known, sizeof known, backend_name);
    return ts_fail(err, "unknown cost model '%s' (known: %s)", name, known);
}

int cost_op_scale_parse(const char *spec, double scale[OP_COUNT], struct ts_err *err)
{
    bool seen[OP_COUNT] = {false};
    for (int i = 0; i < OP_COUNT; i++)
        scale[i] = 1.0;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        char part[64], name[32];
        if (len == 0 || len >= sizeof part)
            return ts_fail(err, "--op-scale: '%s': an empty or overlong OP=F part", spec);
        snprintf(part, sizeof part, "%.*s", (int)len, p);
        if (!eq || eq >= p + len || (size_t)(eq - p) >= sizeof name)
            return ts_fail(err, "--op-scale: '%s' is not OP=F", part);
        snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
        enum cost_op op;
        double f;
        if (cost_op_parse(name, &op))
            return ts_fail(err, "--op-scale: '%s': no op '%s' (tessera calib price lists the ops)", part, name);
        if (seen[op])
            return ts_fail(err, "--op-scale: '%s': op %s given twice", spec, name);
        if (ts_parse_double(part + (eq - p) + 1, &f) || !(f > 0 && f <= 100))
            return ts_fail(err, "--op-scale: '%s': the factor is not a number in (0, 100]", part);
        seen[op] = true;
        scale[op] = f;
        p += len + (end ? 1 : 0);
        if (end && !*p)
            return ts_fail(err, "--op-scale: '%s' ends in a comma", spec);
    }
    return 0;
}

double cost_tp_sample_gather_s(const struct cost_ctx *c, const struct step_desc *sd)
{
    const double R = (double)sd->tot.logit_rows;
    return c->tp > 1 && R > 0 ? allreduce_s(c->ar, 0.5 * c->tp * R * 3 * 4) : 0;
}

double cost_ep_allreduce_s(const struct cost_ctx *c, const struct step_desc *sd)
{
    const struct step_totals *t = &sd->tot;
    if (c->ep <= 1 || t->q_tokens <= 0)
        return 0;
    TS_ASSERT(c->ar != NULL);
    const double nl = c->model.num_layers, nf = step_front_layers(sd, c->model.num_layers),
                 moe = model_num_moe_layers(&c->model), h = c->model.hidden;
    /* the MoE layers among the front ones in proportion, as the back ends share the layers' ops */
    return moe * (nf / nl) * allreduce_s(c->ar, 2.0 * (double)t->front.q_tokens * h) +
           moe * ((nl - nf) / nl) * allreduce_s(c->ar, 2.0 * (double)t->q_tokens * h);
}

double cost_host_s(const struct cost_ctx *c, const struct step_desc *sd)
{
    const struct step_totals *t = &sd->tot;
    if (t->host_kv_tokens == 0 && t->host_scan_tokens == 0)
        return 0;
    const double gpus = c->tp > 1 ? c->tp : 1, kv = (double)model_kv_bytes_per_token(&c->model);
    const double link = sd->host_link_mbs > 0 ? sd->host_link_mbs * 1e6 : c->gpu.host_bw;
    double s = (double)t->host_kv_tokens * kv / gpus / link;
    if (t->host_scan_tokens > 0) {
        TS_ASSERTF(sd->host_scan_mbs > 0, "a step scores %lld keys on the host at no bandwidth",
                   (long long)t->host_scan_tokens);
        s += (double)t->host_scan_tokens * kv / 2 / (sd->host_scan_mbs * 1e6);
    }
    return s;
}

double cost_with_host(const struct step_desc *sd, double gpu_s, double host_s)
{
    return sd->host_overlap ? fmax(gpu_s, host_s) : gpu_s + host_s;
}

static const struct host_link host_links[] = {
    {"card", 0, "the GPU table's host_bw (tessera list gpus)"},
    {"pcie4", 25e9, "PCIe 4.0 x16: 31.5 GB/s a direction nominal, 25 GB/s as the GPU table takes it for its "
                    "PCIe 4.0 cards"},
    {"pcie5", 50e9, "PCIe 5.0 x16: 63 GB/s a direction nominal, 50 GB/s as the GPU table takes it for the H100 "
                    "and H200; one H100 SXM measured 54.7 GB/s host to device and 55.1 back for 1 GiB of pinned "
                    "memory, 8 from pageable (record host-link-h100)"},
    {"c2c", 450e9, "NVLink-C2C between a Grace CPU and its Hopper GPU (GH200): 900 GB/s both ways, 450 one way "
                   "(NVIDIA GH200 Grace Hopper Superchip datasheet)"},
};

const struct host_link *host_link_get(int i)
{
    return i >= 0 && i < (int)TS_ARRAY_LEN(host_links) ? &host_links[i] : NULL;
}

double cost_op_scale_ops(const double scale[OP_COUNT], struct cost_breakdown *bd)
{
    double added = 0;
    for (int i = 0; i < OP_COUNT; i++)
        if (i != OP_HOST && scale[i] != 1.0) {
            added += (scale[i] - 1.0) * bd->op_s[i];
            bd->op_s[i] *= scale[i];
        }
    return added;
}
