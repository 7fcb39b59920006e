/* eng_tp.c: tensor parallelism's launcher and NCCL collectives (eng_tp.h). */
#define _POSIX_C_SOURCE 200809L
#include "eng_tp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef TS_HAVE_NCCL
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes" /* nccl.h's own declarations */
#include <nccl.h>
#pragma GCC diagnostic pop
_Static_assert(sizeof(ncclUniqueId) == ENG_TP_ID_BYTES, "ncclUniqueId's size");
#endif

#define STOP_GRACE_S 10.0 /* a stopped rank's time to exit before it is killed */

int eng_tp_env(int *rank, int *size, unsigned char id[ENG_TP_ID_BYTES], struct ts_err *err)
{
    const char *r = getenv("TESSERA_TP_RANK"), *n = getenv("TESSERA_TP_SIZE"), *hex = getenv("TESSERA_TP_ID");
    *rank = 0;
    *size = 1;
    if (!n)
        return 0;
    char *end;
    long lr = r ? strtol(r, &end, 10) : -1, ln = strtol(n, &end, 10);
    if (!r || !hex || ln < 2 || ln > ENG_TP_MAX || lr < 0 || lr >= ln || strlen(hex) != 2 * ENG_TP_ID_BYTES)
        return ts_fail(err, "tensor parallelism: TESSERA_TP_RANK, TESSERA_TP_SIZE and TESSERA_TP_ID are set by "
                            "the launcher (--tp); found rank '%s', size '%s' and an id of %zu characters",
                       r ? r : "(unset)", n, hex ? strlen(hex) : 0);
    for (int i = 0; i < ENG_TP_ID_BYTES; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return ts_fail(err, "tensor parallelism: TESSERA_TP_ID is not hexadecimal");
        id[i] = (unsigned char)v;
    }
    *rank = (int)lr;
    *size = (int)ln;
    return 0;
}

int eng_tp_place(struct eng_opts *o, struct ts_err *err)
{
    static unsigned char id[ENG_TP_ID_BYTES];
    if (eng_tp_env(&o->tp_rank, &o->tp_size, id, err))
        return -1;
    o->tp_id = id;
    return 0;
}

int eng_tp_in_launch(const char *cmd, int *rank)
{
    int size;
    unsigned char id[ENG_TP_ID_BYTES];
    struct ts_err err;
    if (eng_tp_env(rank, &size, id, &err)) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return -1;
    }
    return size > 1;
}

#ifndef TS_HAVE_NCCL

bool eng_tp_built(void) { return false; }

int eng_tp_launch(int size, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tessera: --tp %d: this engine was built without NCCL (nccl.h not found; NCCL_HOME names "
                    "its folder)\n", size);
    return 2;
}

int eng_tp_init(int rank, int size, const unsigned char id[ENG_TP_ID_BYTES], struct eng_tp **out, struct ts_err *err)
{
    (void)rank;
    (void)id;
    *out = NULL;
    return ts_fail(err, "tensor parallelism over %d GPUs: this engine was built without NCCL", size);
}

void eng_tp_destroy(struct eng_tp *t) { (void)t; }

static int no_nccl(struct ts_err *err) { return ts_fail(err, "tensor parallelism: built without NCCL"); }

int eng_tp_allreduce(struct eng_tp *t, bf16_t *buf, int64_t n, cudaStream_t s, struct ts_err *err)
{
    (void)t, (void)buf, (void)n, (void)s;
    return no_nccl(err);
}

int eng_tp_allgather(struct eng_tp *t, const float *send, float *recv, int64_t n, cudaStream_t s, struct ts_err *err)
{
    (void)t, (void)send, (void)recv, (void)n, (void)s;
    return no_nccl(err);
}

int eng_tp_agree(struct eng_tp *t, double *v, enum eng_tp_agree how, cudaStream_t s, struct ts_err *err)
{
    (void)t, (void)v, (void)how, (void)s;
    return no_nccl(err);
}

#else

struct eng_tp {
    ncclComm_t comm;
    int rank, size;
    double *d_val; /* eng_tp_agree's value on the device */
};

bool eng_tp_built(void) { return true; }

static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }

/* Starts rank `rank`: this executable again with argv, its place in the environment, its standard
 * output discarded unless it is rank 0. */
static pid_t start_rank(int rank, int size, const char *hex, char **argv)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char r[16], n[16];
    snprintf(r, sizeof r, "%d", rank);
    snprintf(n, sizeof n, "%d", size);
    setenv("TESSERA_TP_RANK", r, 1);
    setenv("TESSERA_TP_SIZE", n, 1);
    setenv("TESSERA_TP_ID", hex, 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (rank > 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
    }
    execv("/proc/self/exe", argv);
    fprintf(stderr, "tessera: --tp: cannot start rank %d: %s\n", rank, strerror(errno));
    _exit(127);
}

static void describe(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* Waits for the ranks; the first to fail (or a stop signal to the launcher) stops the others: SIGTERM,
 * then SIGKILL after STOP_GRACE_S. */
static int supervise(pid_t *pids, int size)
{
    int left = size, rc = 0, failed = -1;
    double stop_at = 0;
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p < 0 && errno != EINTR)
            break;
        if (p > 0) {
            int rank = 0;
            while (rank < size && pids[rank] != p)
                rank++;
            if (rank == size)
                continue;
            pids[rank] = 0;
            left--;
            const bool bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            if (bad && failed < 0 && !stop_at) {
                char how[64];
                describe(status, how, sizeof how);
                if (left > 0)
                    fprintf(stderr, "tessera: --tp: rank %d %s; stopping the other ranks\n", rank, how);
                failed = rank;
                rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            } else if (rank == 0 && failed < 0) {
                rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            continue;
        }
        if ((failed >= 0 || stop_signal) && !stop_at) {
            stop_at = ts_wall_s() + STOP_GRACE_S;
            for (int r = 0; r < size; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGTERM);
            if (stop_signal && failed < 0)
                rc = 128 + stop_signal;
        } else if (stop_at && ts_wall_s() > stop_at) {
            for (int r = 0; r < size; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGKILL);
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return rc;
}

int eng_tp_launch(int size, int argc, char **argv)
{
    int devices = 0;
    if (size < 2 || size > ENG_TP_MAX) {
        fprintf(stderr, "tessera: --tp %d: tensor parallelism runs over 2 to %d GPUs\n", size, ENG_TP_MAX);
        return 2;
    }
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
        devices = 0;
    if (devices < size) {
        fprintf(stderr, "tessera: --tp %d: only %d GPU%s visible\n", size, devices, devices == 1 ? " is" : "s are");
        return 2;
    }
    ncclUniqueId id;
    ncclResult_t nr = ncclGetUniqueId(&id);
    if (nr != ncclSuccess) {
        fprintf(stderr, "tessera: --tp: NCCL's unique id: %s\n", ncclGetErrorString(nr));
        return 1;
    }
    char hex[2 * ENG_TP_ID_BYTES + 1];
    for (int i = 0; i < ENG_TP_ID_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
    setenv("NCCL_NVLS_ENABLE", "0", 0); /* NVLink multicast stays off unless asked for */
    fflush(NULL);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char **full = xmalloc(sizeof *full * (size_t)(argc + 2)); /* the program's name, then the command */
    full[0] = "tessera";
    memcpy(full + 1, argv, sizeof *full * (size_t)argc);
    full[argc + 1] = NULL;
    pid_t pids[ENG_TP_MAX] = {0};
    for (int r = 0; r < size; r++)
        if ((pids[r] = start_rank(r, size, hex, full)) < 0) {
            fprintf(stderr, "tessera: --tp: cannot start rank %d: %s\n", r, strerror(errno));
            stop_signal = SIGTERM;
            break;
        }
    const int rc = supervise(pids, size);
    free(full);
    return rc;
}

/* The process's communicator: NCCL's unique id serves one communicator, so the engines a rank makes
 * in turn (check_engine's models) share the first, which lives as long as the process. */
static struct eng_tp *shared;

/* The watchdog: a rank that enqueues no collective and agrees on nothing for TESSERA_TP_TIMEOUT_S
 * seconds (default WATCH_DEFAULT_S) waits on a peer that will not come (one stuck elsewhere, or
 * gone where the launcher could not see it): it exits with a message, and the launcher stops the
 * others. */
#define WATCH_DEFAULT_S 600.0
static _Atomic double last_progress;

static void progress(void) { last_progress = ts_wall_s(); }

static void *watch(void *arg)
{
    const double limit = *(const double *)arg;
    for (;;) {
        sleep(1);
        if (ts_wall_s() - last_progress > limit) {
            fprintf(stderr, "tessera: tensor-parallel rank %d: no collective for %.0f s; stopping "
                            "(TESSERA_TP_TIMEOUT_S)\n", shared->rank, limit);
            _exit(3); /* (not ncclCommAbort: the main thread may be inside NCCL; exiting frees all) */
        }
    }
    return NULL;
}

static int start_watch(struct ts_err *err)
{
    static double limit = WATCH_DEFAULT_S;
    const char *v = getenv("TESSERA_TP_TIMEOUT_S");
    char *end;
    if (v && *v && (!(limit = strtod(v, &end)) || *end || !(limit > 0)))
        return ts_fail(err, "TESSERA_TP_TIMEOUT_S=%s is not a number of seconds above 0", v);
    progress();
    pthread_t th;
    if (pthread_create(&th, NULL, watch, &limit) != 0)
        return ts_fail(err, "tensor parallelism: cannot start the watchdog");
    pthread_detach(th);
    return 0;
}

int eng_tp_init(int rank, int size, const unsigned char id[ENG_TP_ID_BYTES], struct eng_tp **out, struct ts_err *err)
{
    *out = NULL;
    if (shared) {
        if (shared->rank != rank || shared->size != size)
            return ts_fail(err, "tensor parallelism: this process is rank %d of %d, not %d of %d", shared->rank,
                           shared->size, rank, size);
        *out = shared;
        return 0;
    }
    struct eng_tp *t = xcalloc(1, sizeof *t);
    /* every connection made now, not at a collective's first call, so that the memory the engine sizes
     * its KV pool from already holds NCCL's buffers */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    ncclUniqueId uid;
    memcpy(uid.internal, id, ENG_TP_ID_BYTES);
    ncclResult_t nr = ncclCommInitRank(&t->comm, size, uid, rank);
    if (nr != ncclSuccess) {
        free(t);
        return ts_fail(err, "tensor parallelism: rank %d of %d: NCCL's communicator: %s", rank, size,
                       ncclGetErrorString(nr));
    }
    t->rank = rank;
    t->size = size;
    if (cudaMalloc((void **)&t->d_val, sizeof *t->d_val) != cudaSuccess) {
        ncclCommDestroy(t->comm);
        free(t);
        return ts_fail(err, "tensor parallelism: cannot allocate 8 bytes on the device");
    }
    *out = shared = t;
    if (start_watch(err))
        return -1;
    const char *stall = getenv("TESSERA_TP_TEST_STALL"); /* a test's rank stuck outside any collective */
    if (stall && atoi(stall) == rank)
        for (;;)
            pause();
    return 0;
}

void eng_tp_destroy(struct eng_tp *t) { (void)t; /* the shared communicator stays (eng_tp_init) */ }

static int nccl_fail(struct eng_tp *t, const char *what, ncclResult_t nr, struct ts_err *err)
{
    return ts_fail(err, "tensor parallelism: rank %d's %s: %s (%s)", t->rank, what, ncclGetErrorString(nr),
                   ncclGetLastError(t->comm));
}

int eng_tp_allreduce(struct eng_tp *t, bf16_t *buf, int64_t n, cudaStream_t s, struct ts_err *err)
{
    progress();
    ncclResult_t nr = ncclAllReduce(buf, buf, (size_t)n, ncclBfloat16, ncclSum, t->comm, s);
    return nr == ncclSuccess ? 0 : nccl_fail(t, "all-reduce", nr, err);
}

int eng_tp_allgather(struct eng_tp *t, const float *send, float *recv, int64_t n, cudaStream_t s, struct ts_err *err)
{
    progress();
    ncclResult_t nr = ncclAllGather(send, recv, (size_t)n, ncclFloat32, t->comm, s);
    return nr == ncclSuccess ? 0 : nccl_fail(t, "all-gather", nr, err);
}

int eng_tp_agree(struct eng_tp *t, double *v, enum eng_tp_agree how, cudaStream_t s, struct ts_err *err)
{
    if (cudaMemcpyAsync(t->d_val, v, sizeof *v, cudaMemcpyHostToDevice, s) != cudaSuccess)
        return ts_fail(err, "tensor parallelism: copying a value to agree on failed");
    ncclResult_t nr = how == ENG_TP_RANK0
                          ? ncclBroadcast(t->d_val, t->d_val, 1, ncclFloat64, 0, t->comm, s)
                          : ncclAllReduce(t->d_val, t->d_val, 1, ncclFloat64, how == ENG_TP_MIN ? ncclMin : ncclMax,
                                          t->comm, s);
    if (nr != ncclSuccess)
        return nccl_fail(t, "agreement", nr, err);
    if (cudaMemcpyAsync(v, t->d_val, sizeof *v, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
        return ts_fail(err, "tensor parallelism: rank %d: agreeing on a value failed", t->rank);
    progress();
    return 0;
}

#endif
