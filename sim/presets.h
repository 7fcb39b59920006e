/*
 * presets.h: --system presets, a policy + scheduler + logit handling + decode model +
 * implementation profile as a paper ran it. Applied before explicit options, which override them.
 */
#ifndef TESSERA_PRESETS_H
#define TESSERA_PRESETS_H

#include "config.h"
#include "util.h"

struct preset {
    const char *name;
    const char *help;
    const char *policy, *scheduler, *decode, *impl;
    int32_t max_num_logits; /* --max-num-logits; 0 = monolithic */
    const char *planner;    /* activation reservations */
    bool mask_only, lazy_chunking;
    const char *note;       /* what is not modelled yet, or NULL */
    struct preset_param {   /* its policy's or scheduler's parameters (name NULL: none further) */
        const char *name, *value;
    } params[8];
    const char *sources;    /* where each choice comes from: the paper's sections, the public code's files */
    const char *act_layout; /* its layer's activations (opgraph.h): "engine", or "mosaic", Mosaic's own */
    const char *cost;       /* the cost model its paper experiments price it with where --cost is not
                             * given: "calibrated" (a calibration of the model and implementation
                             * shipped for the GPU, or carried to it from PRESET_CALIB_FROM's first
                             * holding one; the roofline where none is) or "roofline" */
    bool block_logits;      /* --block-logits */
    const char *model;      /* the model its code runs where it runs one alone (NULL: --model's) */
    int32_t block, ep;      /* --block and --ep (0: the defaults) */
};

/* The GPUs a --system's calibration is carried from, in order, where none is shipped for its GPU
 * (the paper experiments' carry_calib: h200, and h100 for models calibrated there alone). */
#define PRESET_CALIB_FROM {"h200", "h100"}

const struct preset *preset_find(const char *name);
int preset_apply(const char *name, struct sim_config *c, struct ts_err *err);
int preset_count(void);
const struct preset *preset_get(int i);
/* How preset `name`'s system is known, a line beginning "validated:", "measured:" or "modelled:" with
 * its evidence (the record and its error, or the code read and why it never ran); NULL for a name
 * that is no preset. */
const char *preset_known(const char *name);
/* The card preset `name` was validated on ("h100", "h200"), or NULL where it was not validated. */
const char *preset_known_gpu(const char *name);
/* How the system a run configures is known, into buf: its preset's (preset_known) where it runs on the
 * preset's own runtime and, validated, on the card it was validated on; "modelled" on another card,
 * and for a preset's schedule on another runtime (what validated it was its own); "measured" for tessera's engine priced by its calibration; else "modelled", naming the policy,
 * scheduler, runtime and cost model. */
const char *sim_known(const struct sim_config *c, char *buf, size_t len);

#endif
