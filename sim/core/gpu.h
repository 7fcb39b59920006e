/*
 * gpu.h: GPU datasheet figures: memory, dense bf16 tensor FLOP/s (fp32 accumulate), memory
 * bandwidth and the host link. Built-in entries can be overridden, and new ones added, from a JSON
 * file (gpu_load_file), e.g. with the figures a calibration measured.
 */
#ifndef TESSERA_GPU_H
#define TESSERA_GPU_H

#include <stdint.h>

#include "util.h"

struct gpu_spec {
    char name[32];
    int64_t mem_bytes;     /* device memory as the driver reports it */
    double bf16_flops;     /* dense bf16 tensor FLOP/s with fp32 accumulation */
    double mem_bw;         /* bytes/s */
    double host_bw;        /* bytes/s over the host link (PCIe), for swapping */
    double link_bw;        /* bytes/s one way between two GPUs of a host (NVLink, else PCIe) */
    double tdp_w;          /* the board's power limit (TDP, W): what a step that keeps the tensor cores
                            * busy draws */
    double idle_w;         /* an idle card's draw (W) */
    double fp8_flops;      /* dense fp8 tensor FLOP/s with fp32 accumulation; 0: no fp8 tensor cores */
};
/* The share of the dynamic power (TDP less idle) memory-bound work draws, against compute-bound
 * work's 1 (sim/docs/cost-model.md, "Energy"): 0.83, what an H100's draw over the engine's small-batch
 * decoding steps gave (experiments/records/power-h100, its first run); taken for every card. */
#define GPU_MEM_POWER_SHARE 0.83
/* An idle card's draw as a share of its TDP where no measurement gives it: an assumption (NVIDIA
 * publishes no idle figures). */
#define GPU_IDLE_SHARE 0.1

struct gpu_table;

/* Returns a table holding the built-in GPUs. Caller frees with gpu_table_destroy(). */
struct gpu_table *gpu_table_create(void);
void gpu_table_destroy(struct gpu_table *t);
/* Merges {"GPU-NAME": {"mem_gib":..,"bf16_tflops":..,"mem_bw_gbs":..,"host_bw_gbs":..,
 * "link_bw_gbs":..,"tdp_w":..,"idle_w":..,"fp8_tflops":..}, ...} into
 * the table: known names are overridden field by field, unknown names are added. */
int gpu_load_file(struct gpu_table *t, const char *path, struct ts_err *err);
int gpu_parse(struct gpu_table *t, const char *path, const char *text, size_t len,
              struct ts_err *err);
int gpu_lookup(const struct gpu_table *t, const char *name, struct gpu_spec *out,
               struct ts_err *err);
/* The ceilings measured on a lent GPU (engine_bench's first lines): its GEMM rate short and held for
 * 2 s under the power limit, its device copy's read + write bandwidth, the record they come from. */
struct gpu_measured {
    double gemm_flops, gemm_held_flops, copy_bw;
    char record[256];
};
/* The measurement of GPU `name` in the CSV at path (gpu,gemm_tflops,gemm_held_tflops,copy_tbs,record;
 * DATADIR/gpu_measured.csv): 1 found, 0 not there (or no file), -1 for a malformed line (err names it). */
int gpu_measured_find(const char *path, const char *name, struct gpu_measured *out, struct ts_err *err);
/* The built-in table's entry a card is, by the name its driver gives it (nvidia-smi's, or the
 * engine's device string, "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)") and its memory in MiB (<= 0:
 * unknown): "h100", "a100-80gb", ...; for an A100 whose memory neither the name nor mem_mib gives,
 * "a100" (the prefix of both); NULL for a card not in the table. The one map of driver names. */
const char *gpu_of_device(const char *driver_name, int64_t mem_mib);
/* Whether `name` is an entry of the built-in table (not one a --gpu-file adds). */
bool gpu_is_builtin(const char *name);
int gpu_table_count(const struct gpu_table *t);
const struct gpu_spec *gpu_table_get(const struct gpu_table *t, int i);

#endif
