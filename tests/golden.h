/*
 * golden.h: pinned results of the golden scenarios of check_sim.c (fixed seeds, exact integers).
 * A deliberate change to the models that moves them updates them in the same commit, saying why;
 * regenerate with the commands beside each group.
 */
/* tessera sim --json */
#define GOLDEN_DEFAULT_STEPS 18073
#define GOLDEN_DEFAULT_MAKESPAN_NS 189649761109LL
#define GOLDEN_DEFAULT_CONTENT 42231
/* tessera sim --system fast-dllm --max-batch 0 --cost roofline --gpu rtx4090
 *             --lengths lognormal:5.5,0.5,5.0,0.5 --requests 64 --rps 4 --seed 42 --json
 * (static batches as large as fit, as Fast-dLLM's later eval_llada.py batches: the preset's float64
 * sampling bounds them, torch-fast-dllm) */
#define GOLDEN_FAST_BATCH 2
#define GOLDEN_FAST_STEPS 8448
#define GOLDEN_FAST_MAKESPAN_NS 428708413032LL
/* tessera sim --scheduler lookahead --gpu rtx4090 --rps 4 --requests 200
 *             --decode threshold:llada-gsm8k --seed 7 --json
 * (its projections at the decoder's mean TPF; the drawn counts leave some stalls) */
#define GOLDEN_LOOKAHEAD_STEPS 1603
#define GOLDEN_LOOKAHEAD_MAKESPAN_NS 261784409768LL
#define GOLDEN_LOOKAHEAD_STALLS 93
