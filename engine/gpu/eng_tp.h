/*
 * eng_tp.h: tensor parallelism's processes and collectives, over NCCL.
 *
 * `tessera ... --tp N` runs N copies of the same command, one per GPU (eng_tp_launch): rank r
 * drives GPU r. Every rank executes the same steps in the same order (each builds them itself,
 * deterministically), so every collective meets its peers; what the ranks decide from their own
 * clocks or memory is agreed (eng_tp_agree). Rank 0 reports: the others' standard output goes to
 * /dev/null and they write no files. A rank that fails ends the run: the launcher stops the others
 * (they would wait in a collective for ever) and exits with the failed rank's status. A rank that
 * enqueues no collective for TESSERA_TP_TIMEOUT_S seconds (default 600: it waits on a peer stuck
 * elsewhere) exits with a message (status 3); TESSERA_TP_TEST_STALL=R
 * makes rank R stall so (tests).
 *
 * A rank learns its place from the environment the launcher sets: TESSERA_TP_RANK,
 * TESSERA_TP_SIZE and TESSERA_TP_ID (NCCL's unique id, in hex). Without NCCL at build time
 * (nccl.h not found) every entry point refuses with the reason.
 */
#ifndef TESSERA_ENG_TP_H
#define TESSERA_ENG_TP_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "eng.h"
#include "kernels.h"
#include "util.h"

#define ENG_TP_ID_BYTES 128 /* sizeof(ncclUniqueId) */
#define ENG_TP_MAX 8

struct eng_tp;

/* Whether this build has NCCL. */
bool eng_tp_built(void);
/* Runs the command argv[0..argc) (its words after the program's name: "sim ...", "engine ...") as
 * `size` ranks (this executable again, with the rank's environment) and waits for them;
 * returns the exit status: rank 0's, or that of the first rank to fail (the others then stopped).
 * Refuses (2) a size outside 2..ENG_TP_MAX or beyond the visible GPUs. */
int eng_tp_launch(int size, int argc, char **argv);
/* This process's rank and size from the environment (0 and 1 outside a launch); -1 with err when
 * the environment is malformed. */
int eng_tp_env(int *rank, int *size, unsigned char id[ENG_TP_ID_BYTES], struct ts_err *err);
/* The same into o (tp_rank, tp_size and tp_id, the id held here for the process's life). */
int eng_tp_place(struct eng_opts *o, struct ts_err *err);
/* Whether this process is a rank of a launch (eng_tp_launch): 1, its rank in *rank; 0 outside one (its
 * command then launches itself); -1 where the launcher's environment is malformed (said on stderr,
 * naming cmd). */
int eng_tp_in_launch(const char *cmd, int *rank);

/* The engine the tools that set a split beside one GPU (check_engine --tp, engine_bench --tp) build:
 * random weights of seed, steps of ENG_TP_TOOL_TOKENS rows over a pool of ENG_TP_TOOL_KV_TOKENS, LM-head
 * chunks of ENG_TP_TOOL_LOGIT_CHUNK rows (its steps' logit_chunk_rows: the default workspace's). With
 * size > 0 this process is rank *rank of a launch that must be of `size` ranks (refused otherwise) and
 * the engine its share of the model; size 0: the whole model on this process's GPU, rank 0. */
#define ENG_TP_TOOL_TOKENS 8192
#define ENG_TP_TOOL_KV_TOKENS 32768
#define ENG_TP_TOOL_LOGIT_CHUNK 2048
struct eng_choices;
int eng_tp_create(const struct model_cfg *m, uint64_t seed, int size, const struct eng_choices *choices, int *rank,
                  struct eng **e, struct ts_err *err);

/* The communicator of rank `rank` of `size` (on the current device, which must be GPU rank). NCCL's
 * unique id serves one communicator: the process's first is made, and every later call gets it
 * again; it lives as long as the process (eng_tp_destroy leaves it). */
int eng_tp_init(int rank, int size, const unsigned char id[ENG_TP_ID_BYTES], struct eng_tp **out,
                struct ts_err *err);
void eng_tp_destroy(struct eng_tp *t); /* NULL is safe */
/* In-place sum of n bf16 values over the ranks, enqueued on s (capturable into a CUDA graph). */
int eng_tp_allreduce(struct eng_tp *t, bf16_t *buf, int64_t n, cudaStream_t s, struct ts_err *err);
/* Every rank's n floats, rank r's at recv + r n. */
int eng_tp_allgather(struct eng_tp *t, const float *send, float *recv, int64_t n, cudaStream_t s,
                     struct ts_err *err);
/* One value the ranks agree on, in place: rank 0's, the smallest or the largest; waits on s. */
enum eng_tp_agree { ENG_TP_RANK0, ENG_TP_MIN, ENG_TP_LARGEST };
int eng_tp_agree(struct eng_tp *t, double *v, enum eng_tp_agree how, cudaStream_t s, struct ts_err *err);

#endif
