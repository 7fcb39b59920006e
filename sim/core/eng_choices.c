/* eng_choices.c: the names of the engine's choices (eng_choices.h). */
#include "eng_choices.h"

const char *const eng_attention_names[3] = {"mma", "wgmma", "auto"};
const char *const eng_ffn_names[3] = {"split", "fused", "auto"};
const char *const eng_routing_names[3] = {"auto", "router", "balanced"};
const char *const eng_select_names[2] = {"end", "layer"};
const char *const eng_kernels_names[2] = {"device", "portable"};
