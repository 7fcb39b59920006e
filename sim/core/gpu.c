/*
 * gpu.c: the built-in GPU table (datasheet figures) and its JSON override file.
 *
 * Memory is what nvidia-smi reports (MiB); FLOP/s are dense (no sparsity) bf16 tensor-core figures
 * with fp32 accumulation, which is half the fp16-accumulate figure on GeForce cards; bandwidths are
 * the datasheet peaks; the link between two GPUs of a host is NVLink's one-way bandwidth on the
 * SXM parts, PCIe 4.0 x16's on the others. Power is the board's limit (TDP) from the same
 * datasheets; NVIDIA publishes no idle draw, so idle is GPU_IDLE_SHARE of the TDP (gpu.h) but where a
 * card's was measured (the H100's: nvidia-smi on an idle card, experiments/records/power-h100). A --gpu-file entry replaces a row; the ceilings measured
 * on a card (gpu_measured.csv) stand beside its row (list gpus --measured), and a transfer between
 * two measured cards prices by them.
 */
#include "gpu.h"

#include <math.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024LL * 1024LL)

static const struct gpu_spec builtin_gpus[] = {
    /* NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX 3090: peak BF16 tensor TFLOPS with
     * FP32 accumulate 71 (dense), GDDR6X 936 GB/s; total graphics power 350 W */
    {"rtx3090", 24576 * MIB, 71e12, 936e9, 25e9, 25e9, 350, 350 * GPU_IDLE_SHARE, 0},
    /* NVIDIA Ada Lovelace GPU Architecture whitepaper, GeForce RTX 4090: peak BF16 tensor TFLOPS with
     * FP32 accumulate 165.2 (dense), FP8 with FP32 accumulate 330.3 (dense), 1,008 GB/s; total graphics
     * power 450 W */
    {"rtx4090", 24564 * MIB, 165.2e12, 1008e9, 25e9, 25e9, 450, 450 * GPU_IDLE_SHARE, 330.3e12},
    /* NVIDIA L40S datasheet: BF16 tensor core 362.05 TFLOPS dense (733 with sparsity), FP8 733 dense (1,466
     * with sparsity), 864 GB/s; max power consumption 350 W */
    {"l40s", 46068 * MIB, 362.05e12, 864e9, 25e9, 25e9, 350, 350 * GPU_IDLE_SHARE, 733e12},
    /* NVIDIA A100 Tensor Core GPU datasheet: BF16 tensor core 312 TFLOPS (dense); 40GB 1,555 GB/s,
     * 80GB SXM 2,039 GB/s; NVLink 600 GB/s both ways; max TDP 400 W (SXM); no FP8 tensor cores */
    {"a100-40gb", 40960 * MIB, 312e12, 1555e9, 25e9, 300e9, 400, 400 * GPU_IDLE_SHARE, 0},
    {"a100-80gb", 81920 * MIB, 312e12, 2039e9, 25e9, 300e9, 400, 400 * GPU_IDLE_SHARE, 0},
    /* NVIDIA H100 Tensor Core GPU datasheet, SXM: BF16 tensor core 1,979 TFLOPS with sparsity, 989.4
     * dense; FP8 3,958 with sparsity, 1,979 dense; 3.35 TB/s; NVLink 900 GB/s both ways; max TDP up to
     * 700 W */
    {"h100", 81559 * MIB, 989.4e12, 3350e9, 50e9, 450e9, 700, 72, 1978.9e12},
    /* NVIDIA H800 Tensor Core GPU (SXM), the H100 SXM's compute and memory (989.4 TFLOPS BF16 dense,
     * 80 GB HBM3 at 3.35 TB/s, up to 700 W) with NVLink cut to 400 GB/s both ways: dInfer's GPU */
    {"h800", 81559 * MIB, 989.4e12, 3350e9, 50e9, 200e9, 700, 700 * GPU_IDLE_SHARE, 1978.9e12},
    /* NVIDIA H200 Tensor Core GPU datasheet, SXM: BF16 tensor core 1,979 TFLOPS with sparsity, 989.4
     * dense; FP8 1,979 dense; 4.8 TB/s; NVLink 900 GB/s both ways; max TDP up to 700 W */
    {"h200", 143771 * MIB, 989.4e12, 4800e9, 50e9, 450e9, 700, 700 * GPU_IDLE_SHARE, 1978.9e12},
    /* NVIDIA HGX B200 specifications, one GPU: FP16/BF16 tensor core 4.5 PFLOPS with sparsity (2.25 dense),
     * FP8 9 with sparsity (4.5 dense); 180 GB HBM3e at 7.7 TB/s; NVLink 1.8 TB/s both ways; TDP
     * configurable up to 1,000 W; memory as the driver reports it (179 GiB on a provider's HGX B200 page:
     * 183,359 MiB taken, an assumption to a few MiB) */
    {"b200", 183359 * MIB, 2250e12, 7700e9, 64e9, 900e9, 1000, 1000 * GPU_IDLE_SHARE, 4500e12},
};

struct gpu_table {
    struct gpu_spec *v;
    size_t n, cap;
};

struct gpu_table *gpu_table_create(void)
{
    struct gpu_table *t = xcalloc(1, sizeof *t);
    ts_grow((void **)&t->v, &t->cap, TS_ARRAY_LEN(builtin_gpus), sizeof *t->v);
    memcpy(t->v, builtin_gpus, sizeof builtin_gpus);
    t->n = TS_ARRAY_LEN(builtin_gpus);
    return t;
}

void gpu_table_destroy(struct gpu_table *t)
{
    if (!t)
        return;
    free(t->v);
    free(t);
}

int gpu_measured_find(const char *path, const char *name, struct gpu_measured *out, struct ts_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int rc = 0;
    for (int lineno = 1; rc == 0 && fgets(line, sizeof line, f); lineno++) {
        char gpu[64];
        double tf, held, copy;
        if (lineno == 1)
            continue; /* the header */
        if (sscanf(line, "%63[^,],%lf,%lf,%lf,%255[^\r\n]", gpu, &tf, &held, &copy, out->record) != 5 || !(tf > 0) ||
            !(held > 0) || !(copy > 0) || !isfinite(tf) || !isfinite(held) || !isfinite(copy))
            rc = ts_fail(err, "%s:%d: not gpu,gemm_tflops,gemm_held_tflops,copy_tbs,record", path, lineno);
        else if (ts_name_eq(gpu, name)) {
            out->gemm_flops = tf * 1e12, out->gemm_held_flops = held * 1e12, out->copy_bw = copy * 1e12;
            rc = 1;
        }
    }
    fclose(f);
    return rc;
}

const char *gpu_of_device(const char *driver_name, int64_t mem_mib)
{
    static const char *const cards[][2] = {{"H200", "h200"}, {"H100", "h100"},         {"H800", "h800"},
                                           {"L40S", "l40s"}, {"RTX 4090", "rtx4090"}, {"RTX 3090", "rtx3090"},
                                           {"B200", "b200"}};
    if (strstr(driver_name, "GB200")) /* (a B200 beside a Grace CPU, at another power limit: not the table's) */
        return NULL;
    for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++)
        if (strstr(driver_name, cards[i][0]))
            return cards[i][1];
    if (!strstr(driver_name, "A100"))
        return NULL;
    if (strstr(driver_name, "80GB") || (!strstr(driver_name, "40GB") && mem_mib > 50000))
        return "a100-80gb";
    if (strstr(driver_name, "40GB") || mem_mib > 0)
        return "a100-40gb";
    return "a100";
}

bool gpu_is_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtin_gpus / sizeof builtin_gpus[0]; i++)
        if (strcmp(builtin_gpus[i].name, name) == 0)
            return true;
    return false;
}

int gpu_table_count(const struct gpu_table *t) { return (int)t->n; }

const struct gpu_spec *gpu_table_get(const struct gpu_table *t, int i)
{
    TS_ASSERT(i >= 0 && (size_t)i < t->n);
    return &t->v[i];
}

static struct gpu_spec *find(const struct gpu_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (ts_name_eq(t->v[i].name, name))
            return &t->v[i];
    return NULL;
}

static int get_pos(const char *path, const char *gpu, json_t *o, const char *key, double scale,
                   double *out, struct ts_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e6)
        return ts_fail(err, "%s: %s.%s: must be a positive number (at most 1e6)", path, gpu, key);
    *out = json_number_value(v) * scale;
    return 0;
}

int gpu_parse(struct gpu_table *t, const char *path, const char *text, size_t len,
              struct ts_err *err)
{
    if (ts_json_text(path, text, len, err))
        return -1;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return ts_fail(err, "%s:%d: %s", path, jerr.line, jerr.text);
    int rc = -1;
    if (!json_is_object(root)) {
        ts_fail(err, "%s: top level must be an object of GPU names", path);
        goto done;
    }
    const char *key;
    json_t *o;
    json_object_foreach(root, key, o) {
        if (!json_is_object(o)) {
            ts_fail(err, "%s: %s: must be an object", path, key);
            goto done;
        }
        if (strlen(key) == 0 || strlen(key) >= sizeof t->v[0].name) {
            ts_fail(err, "%s: GPU name '%s' is empty or longer than 31 characters", path, key);
            goto done;
        }
        static const char *const known[] = {"mem_gib", "bf16_tflops", "mem_bw_gbs", "host_bw_gbs",
                                            "link_bw_gbs", "tdp_w", "idle_w", "fp8_tflops"};
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) { /* a misspelt key would otherwise leave the stock figure */
            size_t i = 0;
            while (i < TS_ARRAY_LEN(known) && strcmp(k, known[i]) != 0)
                i++;
            if (i == TS_ARRAY_LEN(known)) {
                ts_fail(err, "%s: %s.%s: unknown key (a GPU has mem_gib, bf16_tflops, mem_bw_gbs, host_bw_gbs, "
                        "link_bw_gbs, tdp_w, idle_w, fp8_tflops)", path, key, k);
                goto done;
            }
        }
        struct gpu_spec g, *old = find(t, key);
        if (old)
            g = *old;
        else {
            memset(&g, 0, sizeof g);
            snprintf(g.name, sizeof g.name, "%s", key);
        }
        double mem = (double)g.mem_bytes;
        const double tdp_before = g.tdp_w;
        if (get_pos(path, key, o, "mem_gib", TS_GIB, &mem, err) ||
            get_pos(path, key, o, "bf16_tflops", 1e12, &g.bf16_flops, err) ||
            get_pos(path, key, o, "mem_bw_gbs", 1e9, &g.mem_bw, err) ||
            get_pos(path, key, o, "host_bw_gbs", 1e9, &g.host_bw, err) ||
            get_pos(path, key, o, "link_bw_gbs", 1e9, &g.link_bw, err) ||
            get_pos(path, key, o, "tdp_w", 1, &g.tdp_w, err) || get_pos(path, key, o, "idle_w", 1, &g.idle_w, err) ||
            get_pos(path, key, o, "fp8_tflops", 1e12, &g.fp8_flops, err))
            goto done;
        g.mem_bytes = (int64_t)mem;
        if (g.host_bw == 0)
            g.host_bw = 25e9;
        if (g.link_bw == 0)
            g.link_bw = g.host_bw;
        if (g.tdp_w == 0) /* a new card without its power: an H100's limit */
            g.tdp_w = 700;
        if (!json_object_get(o, "idle_w") && (g.idle_w == 0 || g.tdp_w != tdp_before)) /* the assumed share */
            g.idle_w = g.tdp_w * GPU_IDLE_SHARE;
        if (g.idle_w >= g.tdp_w) {
            ts_fail(err, "%s: %s: idle_w %g W is not below tdp_w %g W", path, key, g.idle_w, g.tdp_w);
            goto done;
        }
        if (g.mem_bytes <= 0 || g.bf16_flops <= 0 || g.mem_bw <= 0) {
            ts_fail(err, "%s: %s: a new GPU needs mem_gib, bf16_tflops and mem_bw_gbs", path, key);
            goto done;
        }
        if (old)
            *old = g;
        else {
            ts_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
            t->v[t->n++] = g;
        }
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int gpu_load_file(struct gpu_table *t, const char *path, struct ts_err *err)
{
    char *text;
    size_t len;
    if (ts_read_file(path, &text, &len, err))
        return -1;
    int rc = gpu_parse(t, path, text, len, err);
    free(text);
    return rc;
}

int gpu_lookup(const struct gpu_table *t, const char *name, struct gpu_spec *out,
               struct ts_err *err)
{
    const struct gpu_spec *g = find(t, name);
    if (g) {
        *out = *g;
        return 0;
    }
    char list[512];
    size_t off = 0;
    list[0] = '\0';
    for (size_t i = 0; i < t->n && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", t->v[i].name);
    return ts_fail(err, "unknown GPU '%s' (known: %s; add one with --gpu-file)", name, list);
}
