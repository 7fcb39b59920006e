/*
 * cli_fleet_live.c: a live fleet (`tessera sim --replicas N --executor gpu`). Each replica's steps
 * run on a GPU of its own, in a worker process forked for it before any CUDA call: the worker sees
 * only its GPU (CUDA_VISIBLE_DEVICES, the i-th of the parent's list where it has one), opens the
 * engine for its replica's configuration as a single live run does (eng_live_open), and runs the
 * steps the fleet sends it, one at a time, returning each one's measured time. The fleet's clock
 * then moves by measured times, replica by replica, as a single live run's does.
 *
 * The pipe carries a message a step: 'S', the step_desc's fields, its segments; the answer: a
 * status, the seconds, and on failure the engine's message. 'R' and a request id release its K/V;
 * 'Q' (or the pipe's end) stops the worker.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_fleet_live.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_load.h"
#include "step_desc.h"

struct live_worker {
    pid_t pid;
    int to, from; /* the pipe's ends: steps out, answers in */
    int replica;
    char gpu[128];
};

/* n bytes written (out) or read (!out) whole, across partial transfers and signals; -1 on an error or
 * the pipe's end. */
static int move_all(int fd, char *c, size_t n, bool out)
{
    while (n > 0) {
        const ssize_t k = out ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k, n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const void *p, size_t n) { return move_all(fd, (char *)p, n, true); }
static int read_all(int fd, void *p, size_t n) { return move_all(fd, p, n, false); }

/* An answer: status 0 and the seconds, or -1 and the message. */
static int answer(int fd, int32_t status, double seconds, const char *msg)
{
    char text[sizeof ((struct ts_err *)0)->msg] = "";
    snprintf(text, sizeof text, "%s", msg ? msg : "");
    return write_all(fd, &status, sizeof status) || write_all(fd, &seconds, sizeof seconds) ||
           write_all(fd, text, sizeof text);
}

static int read_answer(struct live_worker *w, double *seconds, struct ts_err *err)
{
    int32_t status;
    char text[sizeof err->msg];
    if (read_all(w->from, &status, sizeof status) || read_all(w->from, seconds, sizeof *seconds) ||
        read_all(w->from, text, sizeof text))
        return ts_fail(err, "replica %d: its GPU's worker (CUDA_VISIBLE_DEVICES=%s) ended", w->replica, w->gpu);
    text[sizeof text - 1] = '\0';
    return status ? ts_fail(err, "replica %d (GPU %s): %s", w->replica, w->gpu, text) : 0;
}

/* The worker: the engine opened for replica configuration c on the one GPU it sees, then steps run
 * until the fleet is done. Never returns. */
static void worker(const struct sim_config *c, int in, int out)
{
    struct ts_err err = {0};
    struct sim *s = sim_create_fed(c, &err);
    engine_live_open_fn open = NULL;
    engine_live_close_fn close_fn = NULL;
    if (s) {
        *(void **)&open = engine_symbol("eng_live_open", &err);
        if (open)
            *(void **)&close_fn = engine_symbol("eng_live_close", &err);
    }
    struct sim_executor ex = {0};
    const int bad = !s || !open || !close_fn || open(s, c->live_mem_gib, &ex, &err);
    if (answer(out, bad ? -1 : 0, 0, bad ? err.msg : NULL) || bad)
        _exit(1);
    struct step_desc sd;
    struct segment *segs = NULL;
    size_t cap = 0;
    char type;
    while (read_all(in, &type, 1) == 0 && type != 'Q') {
        if (type == 'R') {
            int32_t id;
            if (read_all(in, &id, sizeof id))
                break;
            ex.release(ex.ctx, id);
            continue;
        }
        if (read_all(in, &sd, sizeof sd))
            break;
        ts_grow((void **)&segs, &cap, (size_t)sd.num_segs, sizeof *segs);
        if (read_all(in, segs, sizeof *segs * (size_t)sd.num_segs))
            break;
        sd.segs = segs, sd.cap_segs = sd.num_segs;
        double seconds = 0;
        const int rc = ex.step(ex.ctx, &sd, &seconds, &err);
        if (answer(out, rc ? -1 : 0, seconds, rc ? err.msg : NULL))
            break;
    }
    close_fn(&ex);
    sim_destroy(s);
    _exit(0);
}

static int remote_step(void *ctx, const struct step_desc *sd, double *seconds, struct ts_err *err)
{
    struct live_worker *w = ctx;
    const char type = 'S';
    if (write_all(w->to, &type, 1) || write_all(w->to, sd, sizeof *sd) ||
        write_all(w->to, sd->segs, sizeof *sd->segs * (size_t)sd->num_segs))
        return ts_fail(err, "replica %d: its GPU's worker (CUDA_VISIBLE_DEVICES=%s) ended", w->replica, w->gpu);
    return read_answer(w, seconds, err);
}

static void remote_release(void *ctx, int32_t req_id)
{
    struct live_worker *w = ctx;
    const char type = 'R';
    if (write_all(w->to, &type, 1) == 0)
        write_all(w->to, &req_id, sizeof req_id); /* (a worker gone fails the next step, which says so) */
}

/* The GPU the i-th worker sees: the i-th of the parent's CUDA_VISIBLE_DEVICES where it is set, else
 * i; "" where the list is shorter than the fleet or its entry longer than out. */
static void gpu_of(int i, char *out, size_t len)
{
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    if (!list || !*list) {
        snprintf(out, len, "%d", i);
        return;
    }
    out[0] = '\0';
    for (int k = 0; *list; k++) {
        const size_t n = strcspn(list, ",");
        if (k == i && n < len)
            snprintf(out, len, "%.*s", (int)n, list);
        list += n + (list[n] == ',');
    }
}

int fleet_live_open(const struct sim_config *cfg, int n, struct sim_executor *ex, struct live_worker **out,
                    struct ts_err *err)
{
    *out = NULL;
    for (int i = 0; i < n; i++)
        if (cfg[i].tp > 1 || cfg[i].ep > 1)
            return ts_fail(err, "a fleet runs live with one GPU a replica (replica %d has --tp %d --ep %d)", i,
                           cfg[i].tp, cfg[i].ep);
    signal(SIGPIPE, SIG_IGN); /* (a worker gone: its pipe's write fails, and says so) */
    struct live_worker *w = xcalloc((size_t)n, sizeof *w);
    *out = w;
    for (int i = 0; i < n; i++) { /* every worker's GPU, before any starts */
        w[i] = (struct live_worker){.pid = -1, .to = -1, .from = -1, .replica = i};
        gpu_of(i, w[i].gpu, sizeof w[i].gpu);
        if (!w[i].gpu[0])
            return ts_fail(err, "%d replicas, but CUDA_VISIBLE_DEVICES (%s) names fewer GPUs (or one longer than %zu "
                                "characters)", n, getenv("CUDA_VISIBLE_DEVICES"), sizeof w[i].gpu - 1);
    }
    for (int i = 0; i < n; i++) {
        int down[2] = {-1, -1}, up[2] = {-1, -1};
        fflush(NULL);
        const pid_t pid = pipe(down) || pipe(up) ? -1 : fork();
        if (pid < 0) {
            const int e = errno;
            for (int k = 0; k < 2; k++)
                if (down[k] >= 0)
                    close(down[k]);
            for (int k = 0; k < 2; k++)
                if (up[k] >= 0)
                    close(up[k]);
            return ts_fail(err, "cannot start replica %d's worker: %s", i, strerror(e));
        }
        if (pid == 0) {
            close(down[1]), close(up[0]);
            for (int k = 0; k < i; k++) /* (the other workers' pipes: theirs alone) */
                close(w[k].to), close(w[k].from);
            setenv("CUDA_VISIBLE_DEVICES", w[i].gpu, 1);
            worker(&cfg[i], down[0], up[1]);
        }
        close(down[0]), close(up[1]);
        w[i].pid = pid, w[i].to = down[1], w[i].from = up[0];
        ex[i] = (struct sim_executor){&w[i], remote_step, remote_release};
    }
    for (int i = 0; i < n; i++) { /* each engine open, or the first refusal */
        double ignored;
        if (read_answer(&w[i], &ignored, err))
            return -1;
    }
    return 0;
}

void fleet_live_close(struct live_worker *w, int n)
{
    for (int i = 0; w && i < n; i++) {
        if (w[i].to >= 0) {
            const char quit = 'Q';
            write_all(w[i].to, &quit, 1);
            close(w[i].to);
        }
        if (w[i].from >= 0)
            close(w[i].from);
        if (w[i].pid > 0)
            waitpid(w[i].pid, NULL, 0);
    }
    free(w);
}
