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
 *
 * A disaggregated fleet moves K/V between the workers' engines. Each worker then sees every GPU of
 * the fleet, its own first (device 0), and opens every other worker's K/V pool through the handle
 * that worker gives ('E' asks for it, 'O' opens one: CUDA IPC). A move is four messages, each
 * answered but the last: 'H' sets the request's pages aside under a ticket at the sender as it
 * is handed on; 'P' asks the sender for their page ids; 'M' has the receiver copy them from the
 * sender's pool over the link between the GPUs into pages of its own, held under the move's key,
 * and answers the copy's time; 'D' frees the sender's. Once the request arrives, 'A' gives the
 * receiver's pages to its id there.
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
    char devices[512]; /* its CUDA_VISIBLE_DEVICES: its GPU, then where the fleet moves K/V the others */
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

/* A worker gone: its pipe ended. */
static int gone(const struct live_worker *w, struct ts_err *err)
{
    return ts_fail(err, "replica %d: its GPU's worker (CUDA_VISIBLE_DEVICES=%s) ended", w->replica, w->devices);
}

static int read_answer(struct live_worker *w, double *seconds, struct ts_err *err)
{
    int32_t status;
    char text[sizeof err->msg];
    if (read_all(w->from, &status, sizeof status) || read_all(w->from, seconds, sizeof *seconds) ||
        read_all(w->from, text, sizeof text))
        return gone(w, err);
    text[sizeof text - 1] = '\0';
    return status ? ts_fail(err, "replica %d (GPU %s): %s", w->replica, w->gpu, text) : 0;
}

/* A worker's answer to a move's message (type, as the file's head says), read from in; -1 where
 * the pipe failed. */
static int serve_move(char type, const struct sim_executor *ex, const struct engine_moves *mv, int in, int out,
                      int32_t **pages, size_t *cap)
{
    struct ts_err err = {0};
    int32_t id, n = 0, from;
    int64_t ticket;
    int rc = -1;
    double seconds = 0;
    if (type == 'H') {
        if (read_all(in, &id, sizeof id) || read_all(in, &ticket, sizeof ticket))
            return -1;
        rc = ex->hold(ex->ctx, id, ticket, &err);
    } else if (type == 'E') {
        char handle[ENGINE_POOL_HANDLE_BYTES];
        rc = mv->share(ex->ctx, handle, &err);
        return answer(out, rc ? -1 : 0, 0, rc ? err.msg : NULL) || (!rc && write_all(out, handle, sizeof handle));
    } else if (type == 'O') {
        char handle[ENGINE_POOL_HANDLE_BYTES];
        if (read_all(in, &from, sizeof from) || read_all(in, handle, sizeof handle))
            return -1;
        rc = mv->peer(ex->ctx, from, handle, &err);
    } else if (type == 'P') {
        const int32_t *held = NULL;
        if (read_all(in, &ticket, sizeof ticket))
            return -1;
        if ((rc = mv->pages(ex->ctx, ticket, &held, &n)) != 0)
            ts_fail(&err, "K/V move %lld: no pages are set aside under it", (long long)ticket);
        return answer(out, rc ? -1 : 0, 0, rc ? err.msg : NULL) ||
               (!rc && (write_all(out, &n, sizeof n) || write_all(out, held, sizeof *held * (size_t)n)));
    } else if (type == 'M') {
        if (read_all(in, &from, sizeof from) || read_all(in, &ticket, sizeof ticket) || read_all(in, &n, sizeof n) ||
            n < 0)
            return -1;
        ts_grow((void **)pages, cap, (size_t)n, sizeof **pages);
        if (read_all(in, *pages, sizeof **pages * (size_t)n))
            return -1;
        rc = mv->pull(ex->ctx, from, *pages, n, ticket, &seconds, &err);
    } else if (type == 'D') {
        if (read_all(in, &ticket, sizeof ticket))
            return -1;
        mv->drop(ex->ctx, ticket);
        return 0;
    } else if (type == 'A') {
        if (read_all(in, &ticket, sizeof ticket) || read_all(in, &id, sizeof id))
            return -1;
        rc = mv->adopt(ex->ctx, ticket, id, &err);
    } else {
        return -1;
    }
    return answer(out, rc ? -1 : 0, seconds, rc ? err.msg : NULL);
}

/* The worker: the engine opened for replica configuration c on its GPU, then steps run until the
 * fleet is done. Never returns. */
static void worker(const struct sim_config *c, int in, int out)
{
    struct ts_err err = {0};
    struct sim *s = sim_create_fed(c, &err);
    engine_live_open_fn open = NULL;
    engine_live_close_fn close_fn = NULL;
    engine_moves_fn moves_fn = NULL;
    if (s) {
        *(void **)&open = engine_symbol("eng_live_open", &err);
        if (open)
            *(void **)&close_fn = engine_symbol("eng_live_close", &err);
        if (close_fn)
            *(void **)&moves_fn = engine_symbol("eng_live_moves", &err);
    }
    struct sim_executor ex = {0};
    const int bad = !s || !open || !close_fn || !moves_fn || open(s, c->live_mem_gib, &ex, &err);
    if (answer(out, bad ? -1 : 0, 0, bad ? err.msg : NULL) || bad)
        _exit(1);
    const struct engine_moves *mv = moves_fn();
    struct step_desc sd;
    struct segment *segs = NULL;
    int32_t *pages = NULL;
    size_t cap = 0, cap_pages = 0;
    char type;
    while (read_all(in, &type, 1) == 0 && type != 'Q') {
        if (type == 'R') {
            int32_t id;
            if (read_all(in, &id, sizeof id))
                break;
            ex.release(ex.ctx, id);
            continue;
        }
        if (type != 'S') {
            if (serve_move(type, &ex, mv, in, out, &pages, &cap_pages))
                break;
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
    free(pages);
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
        return gone(w, err);
    return read_answer(w, seconds, err);
}

static void remote_release(void *ctx, int32_t req_id)
{
    struct live_worker *w = ctx;
    const char type = 'R';
    if (write_all(w->to, &type, 1) == 0)
        write_all(w->to, &req_id, sizeof req_id); /* (a worker gone fails the next step, which says so) */
}

static int remote_hold(void *ctx, int32_t req_id, int64_t ticket, struct ts_err *err)
{
    struct live_worker *w = ctx;
    const char type = 'H';
    double ignored;
    if (write_all(w->to, &type, 1) || write_all(w->to, &req_id, sizeof req_id) || write_all(w->to, &ticket, sizeof ticket))
        return gone(w, err);
    return read_answer(w, &ignored, err);
}

int fleet_live_share(struct live_worker *w, int n, struct ts_err *err)
{
    char(*handle)[ENGINE_POOL_HANDLE_BYTES] = xmalloc(sizeof *handle * (size_t)n);
    double ignored;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char type = 'E';
        rc = write_all(w[i].to, &type, 1) ? gone(&w[i], err) : read_answer(&w[i], &ignored, err);
        if (!rc && read_all(w[i].from, handle[i], sizeof handle[i]))
            rc = gone(&w[i], err);
    }
    for (int i = 0; i < n && !rc; i++)
        for (int32_t k = 0; k < n && !rc; k++) {
            const char type = 'O';
            if (k == i)
                continue;
            rc = write_all(w[i].to, &type, 1) || write_all(w[i].to, &k, sizeof k) ||
                         write_all(w[i].to, handle[k], sizeof handle[k])
                     ? gone(&w[i], err)
                     : read_answer(&w[i], &ignored, err);
        }
    free(handle);
    return rc;
}

int fleet_live_move(struct live_worker *w, int from, int64_t ticket, int to, int64_t key, double *seconds,
                    struct ts_err *err)
{
    struct live_worker *a = &w[from], *b = &w[to];
    char type = 'P';
    double ignored;
    int32_t n = 0;
    if (write_all(a->to, &type, 1) || write_all(a->to, &ticket, sizeof ticket))
        return gone(a, err);
    if (read_answer(a, &ignored, err))
        return -1;
    if (read_all(a->from, &n, sizeof n) || n < 0)
        return gone(a, err);
    int32_t *pages = xmalloc(sizeof *pages * (size_t)(n ? n : 1));
    const int32_t sender = from;
    int rc = read_all(a->from, pages, sizeof *pages * (size_t)n) ? gone(a, err) : 0;
    type = 'M';
    if (!rc && (write_all(b->to, &type, 1) || write_all(b->to, &sender, sizeof sender) ||
                write_all(b->to, &key, sizeof key) || write_all(b->to, &n, sizeof n) ||
                write_all(b->to, pages, sizeof *pages * (size_t)n)))
        rc = gone(b, err);
    free(pages);
    if (!rc)
        rc = read_answer(b, seconds, err);
    type = 'D';
    if (write_all(a->to, &type, 1) == 0) /* (the sender's pages freed, copied or not) */
        write_all(a->to, &ticket, sizeof ticket);
    return rc;
}

int fleet_live_adopt(struct live_worker *w, int to, int64_t key, int32_t req_id, struct ts_err *err)
{
    const char type = 'A';
    double ignored;
    if (write_all(w[to].to, &type, 1) || write_all(w[to].to, &key, sizeof key) ||
        write_all(w[to].to, &req_id, sizeof req_id))
        return gone(&w[to], err);
    return read_answer(&w[to], &ignored, err);
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

/* The devices worker i sees: its own GPU, then (share) the fleet's others in order; -1 where they
 * do not fit. */
static int devices_of(struct live_worker *w, int n, int i, bool share)
{
    char *d = w[i].devices;
    size_t len = (size_t)snprintf(d, sizeof w[i].devices, "%s", w[i].gpu);
    for (int k = 0; share && k < n && len < sizeof w[i].devices; k++)
        if (k != i)
            len += (size_t)snprintf(d + len, sizeof w[i].devices - len, ",%s", w[k].gpu);
    return len < sizeof w[i].devices ? 0 : -1;
}

int fleet_live_open(const struct sim_config *cfg, int n, bool share, struct sim_executor *ex, struct live_worker **out,
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
    for (int i = 0; i < n; i++)
        if (devices_of(w, n, i, share))
            return ts_fail(err, "%d replicas moving K/V: their GPUs' list is longer than %zu characters", n,
                           sizeof w->devices - 1);
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
            setenv("CUDA_VISIBLE_DEVICES", w[i].devices, 1);
            worker(&cfg[i], down[0], up[1]);
        }
        close(down[0]), close(up[1]);
        w[i].pid = pid, w[i].to = down[1], w[i].from = up[0];
        ex[i] = (struct sim_executor){&w[i], remote_step, remote_release, share ? remote_hold : NULL};
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
