/*
 * cli_exp.c: `tessera exp list | run NAME OUT | sweep GRID OUT`: the experiment definitions of
 * experiments/, and sweeps of independent runs (experiments/lib/sweep.sh).
 *
 * Every experiment and sweep follows one rule for its folder OUT, kept here rather than in each
 * script: a non-empty OUT is refused (exit 2, nothing written) unless --force; while the script
 * runs OUT holds a file INCOMPLETE saying what runs; a script that fails or is interrupted
 * (SIGINT, SIGTERM, SIGHUP: passed on to the script's process group) leaves INCOMPLETE saying so,
 * and a rerun of the same command replaces such a folder without --force; a script that refuses
 * its arguments before writing anything leaves nothing. An experiment whose header says
 * "# Needs: GPU" is refused at once where there is no CUDA engine or device.
 */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine_load.h"

#ifndef TS_SRCDIR
#define TS_SRCDIR "."
#endif

#define MARK "INCOMPLETE"

/* What a script's header comment says of it. */
struct exp_script {
    char path[4096];
    char about[512];  /* its first line, after "NAME.sh: " */
    char opts[512];   /* the options of its "# Usage:" line, space-separated; a value's after '=' */
    char needs[64];   /* its "# Needs:" line: "", "GPU", "GPU unless VAR", "GPU with VAR" */
    char knobs[512];  /* the environment variables its usage and needs name ("RPS GPU ..."), each an option
                       * too: --gpu h100 sets GPU=h100 */
};

static void exp_usage(FILE *f)
{
    fprintf(f, "usage: tessera exp list\n"
               "       tessera exp run NAME OUT [--force] [ARGS]   (tessera exp run NAME --help: its options)\n"
               "       tessera exp run papers OUT [--force] [--quick] [--strict]\n"
               "       tessera exp sweep GRID OUT [--jobs N] [--max-runs N] [--slurm] [--force]\n"
               "\n"
               "list    the experiments of experiments/ (GPU: needs the CUDA engine and a device) and the\n"
               "        papers' evaluations (experiments/papers.tsv)\n"
               "run     runs experiments/NAME.sh into the folder OUT; papers: every paper evaluation\n"
               "sweep   a grid of tessera sim runs (its format and what it writes: tessera exp sweep --help)\n"
               "\n"
               "OUT must be missing or empty, unless --force writes over it. While a run is under way OUT\n"
               "holds a file " MARK "; a run that fails or is interrupted leaves it there, saying what\n"
               "happened, and the same command run again replaces such a folder (no --force needed).\n");
}

/* The line of experiments/papers.tsv naming `name` (its fields cut at tabs into f[3]), or false. */
static bool paper_entry(const char *dir, const char *name, char *line, size_t len, char *f[3])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/papers.tsv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    bool found = false;
    while (!found && fgets(line, (int)len, fp)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        f[0] = line;
        f[1] = strchr(line, '\t');
        f[2] = f[1] ? strchr(f[1] + 1, '\t') : NULL;
        if (!f[1] || !f[2])
            continue;
        *f[1]++ = '\0';
        *f[2]++ = '\0';
        found = name == NULL || strcmp(f[0], name) == 0;
    }
    fclose(fp);
    return found;
}

/* The options of a "# Usage:" line: each "--NAME", with "=" after it where a value follows. */
static void usage_opts(const char *line, char *opts, size_t len)
{
    const char *p = line;
    while ((p = strstr(p, "--")) != NULL) {
        const size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
        const bool value = p[2 + n] == ' ' && p[3 + n] >= 'A' && p[3 + n] <= 'Z';
        if (n)
            snprintf(opts + strlen(opts), len - strlen(opts), "%s--%.*s%s", opts[0] ? " " : "", (int)n, p + 2,
                     value ? "=" : "");
        p += 2 + n;
    }
}

/* Adds the environment variables text names to knobs, once each: every NAME of "NAME=" (TESSERA, the
 * binary's own, left out), or with bare the NAME text begins with (a "# Needs:" line's variable). */
static void knob_names(const char *text, bool bare, char *knobs, size_t len)
{
    for (const char *p = text; *p; p++) {
        const bool starts = p == text || (!isalnum((unsigned char)p[-1]) && p[-1] != '_');
        const size_t n = starts ? strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") : 0;
        if (n == 0 || n >= 64 || *p < 'A' || *p > 'Z' || !(p[n] == '=' || (bare && p == text)))
            continue;
        char key[72], have[600];
        snprintf(key, sizeof key, " %.*s ", (int)n, p);
        snprintf(have, sizeof have, " %s ", knobs);
        if (strcmp(key, " TESSERA ") != 0 && !strstr(have, key))
            snprintf(knobs + strlen(knobs), len - strlen(knobs), "%s%.*s", knobs[0] ? " " : "", (int)n, p);
        p += n - 1;
    }
}

/* Whether option opt (--gpu) stands for one of the script's knobs (GPU): its name into name. */
static bool knob_of(const struct exp_script *s, const char *opt, char *name, size_t len)
{
    if (strncmp(opt, "--", 2) != 0 || !opt[2] || strlen(opt) >= len + 2)
        return false;
    size_t i = 0;
    for (const char *p = opt + 2; *p; p++)
        name[i++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    name[i] = '\0';
    char key[80], have[600];
    snprintf(key, sizeof key, " %s ", name);
    snprintf(have, sizeof have, " %s ", s->knobs);
    return strstr(have, key) != NULL;
}

/* The knobs given as options among args (--gpu h100) set in the environment the script runs in. */
static void knobs_set(const struct exp_script *s, int n, char **args)
{
    char name[64];
    for (int i = 0; i + 1 < n; i++)
        if (knob_of(s, args[i], name, sizeof name))
            setenv(name, args[++i], 1);
}

/* Reads the header comment of experiments/FILE (or of the script at path). False if unreadable. */
static bool script_read(const char *path, struct exp_script *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    char line[1024];
    bool usage = false; /* within the usage lines (the first and those indented under it) */
    for (int i = 0; fgets(line, sizeof line, fp) && (line[0] == '#' || i == 0); i++) {
        line[strcspn(line, "\n")] = '\0';
        const char *colon = strstr(line, ".sh: ");
        if (!s->about[0] && colon)
            snprintf(s->about, sizeof s->about, "%s", colon + 5);
        usage = strncmp(line, "# Usage:", 8) == 0 || (usage && strncmp(line, "#   ", 4) == 0);
        if (strncmp(line, "# Usage:", 8) == 0)
            usage_opts(line, s->opts, sizeof s->opts);
        if (strncmp(line, "# Needs: ", 9) == 0) {
            snprintf(s->needs, sizeof s->needs, "%.63s", line + 9);
            const char *var = strstr(line, " unless ") ? strstr(line, " unless ") + 8
                              : strstr(line, " with ") ? strstr(line, " with ") + 6 : NULL;
            if (var)
                knob_names(var, true, s->knobs, sizeof s->knobs);
        }
        if (usage)
            knob_names(line, false, s->knobs, sizeof s->knobs);
    }
    fclose(fp);
    return true;
}

/* Whether the script needs the GPU as asked now: "GPU unless VAR" not where VAR is set, "GPU with
 * VAR" only where it is. */
static bool needs_gpu_now(const struct exp_script *s)
{
    if (strncmp(s->needs, "GPU", 3) != 0)
        return false;
    const char *unless = strstr(s->needs, " unless "), *with = strstr(s->needs, " with ");
    const char *var = unless ? unless + 8 : with ? with + 6 : NULL;
    const bool set = var && getenv(var) && getenv(var)[0];
    return unless ? !set : with ? set : true;
}

/* Whether this machine runs the CUDA engine: the engine built and loadable, and a device. */
static bool gpu_ready(char *why, size_t len)
{
    struct ts_err err;
    if (!engine_symbol("cli_engine", &err)) {
        snprintf(why, len, "%s", err.msg);
        return false;
    }
    if (access("/dev/nvidia0", F_OK) != 0 && access("/dev/nvidiactl", F_OK) != 0) {
        snprintf(why, len, "no CUDA device on this machine (/dev/nvidia0)");
        return false;
    }
    return true;
}

/* Prints the experiments: the scripts of experiments/ but the papers' (what each does, GPU where it
 * needs one), then the papers' evaluations (experiments/papers.tsv), each built or waiting. */
static int exp_list(const char *dir, FILE *to)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tessera exp: %s: no experiments folder\n", dir);
        return EXIT_USAGE;
    }
    struct dirent *de;
    char line[1024], *f[3];
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 3 || strcmp(de->d_name + n - 3, ".sh") != 0)
            continue;
        char name[256], path[4096];
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), de->d_name);
        if (paper_entry(dir, name, line, sizeof line, f))
            continue;
        struct exp_script s;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        script_read(path, &s);
        char gpu[300] = "";
        const char *unless = strstr(s.needs, " unless "), *with = strstr(s.needs, " with ");
        if (strncmp(s.needs, "GPU", 3) == 0)
            snprintf(gpu, sizeof gpu, "[needs a GPU%s%s%s] ", unless ? " unless " : with ? " where " : "",
                     unless ? unless + 8 : with ? with + 6 : "", unless || with ? " is set" : "");
        fprintf(to, "%-18s %s%s\n", name, gpu, s.about);
    }
    closedir(d);
    char path[4096];
    snprintf(path, sizeof path, "%s/papers.tsv", dir);
    FILE *fp = fopen(path, "r");
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *what = strchr(line, '\t'), *wait = what ? strchr(what + 1, '\t') : NULL;
        if (!wait)
            continue;
        *what++ = '\0';
        *wait++ = '\0';
        fprintf(to, "%-18s %s%s%s%s\n", line, what, *wait ? " (waiting on: " : "", wait, *wait ? ")" : "");
    }
    if (fp)
        fclose(fp);
    return 0;
}

/* The script's knobs as options, each " --name" (GPU_UTIL: --gpu-util), appended to buf. */
static void knob_options(const struct exp_script *s, char *buf, size_t len)
{
    for (const char *k = s->knobs; *k; k += strcspn(k, " "), k += *k == ' ') {
        snprintf(buf + strlen(buf), len - strlen(buf), " --");
        for (size_t j = 0, m = strcspn(k, " "); j < m; j++)
            snprintf(buf + strlen(buf), len - strlen(buf), "%c", k[j] == '_' ? '-' : (char)tolower((unsigned char)k[j]));
    }
}

/* `exp run NAME --help`: the script's header comment, without its "# ", and its knobs as options. */
static int print_header(const struct exp_script *s)
{
    FILE *fp = fopen(s->path, "r");
    char line[1024];
    for (int i = 0; fp && fgets(line, sizeof line, fp) && (line[0] == '#' || i == 0); i++)
        if (line[0] == '#' && line[1] != '!')
            fputs(line[1] == ' ' ? line + 2 : line + 1, stdout);
    if (fp)
        fclose(fp);
    if (s->knobs[0]) {
        char opts[1200] = "";
        knob_options(s, opts, sizeof opts);
        printf("\nEach variable above is an option too, after OUT (--name VALUE sets NAME):%s\n", opts);
    }
    return 0;
}

/* Checks the arguments after OUT against the script's options: an unknown option is refused with
 * the nearest; --force is taken out (*force). The rest go to args. */
static int check_args(const char *cmd, const struct exp_script *s, int n, char **in, char **args, int *nargs,
                      bool *force, char *knobs_given, size_t knobs_len)
{
    char list[1200], name[64];
    snprintf(list, sizeof list, "--force %s", s->opts);
    for (char *p = list; (p = strchr(p, '=')) != NULL;)
        *p = ' ';
    knob_options(s, list + strlen(list), sizeof list - strlen(list));
    for (int i = 0; i < n; i++) {
        if (strcmp(in[i], "--force") == 0) {
            *force = true;
            continue;
        }
        if (knob_of(s, in[i], name, sizeof name)) { /* (set in the environment already: knobs_set) */
            if (i + 1 >= n) {
                fprintf(stderr, "tessera %s: %s needs a value (it sets %s)\n", cmd, in[i], name);
                return EXIT_USAGE;
            }
            snprintf(knobs_given + strlen(knobs_given), knobs_len - strlen(knobs_given), " %s %s", in[i], in[i + 1]);
            i++;
            continue;
        }
        if (in[i][0] == '-') {
            char key[128];
            snprintf(key, sizeof key, " %s%s", in[i], "=");
            char opts[600];
            snprintf(opts, sizeof opts, " %s", s->opts);
            bool known = false, value = strstr(opts, key) != NULL;
            key[strlen(key) - 1] = '\0';
            for (const char *p = opts; !known && (p = strstr(p, key)) != NULL; p += strlen(key))
                known = p[strlen(key)] == ' ' || p[strlen(key)] == '=' || p[strlen(key)] == '\0';
            if (!known)
                return cli_unknown_in_list(cmd, in[i], list);
            if (value && i + 1 < n)
                args[(*nargs)++] = in[i++];
        }
        args[(*nargs)++] = in[i];
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    return ftw->level > 0 ? remove(path) : 0;
}

/* Whether OUT holds a marker this command wrote (its first line "tessera exp ..."). */
static bool marked_incomplete(const char *out)
{
    char path[4200], line[32] = "";
    snprintf(path, sizeof path, "%s/" MARK, out);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    const bool ours = fgets(line, sizeof line, fp) && strncmp(line, "tessera exp ", 12) == 0;
    fclose(fp);
    return ours;
}

/* Makes OUT (and missing parents) ready: refused where it holds something unless force or marked
 * incomplete (then emptied, or, where resume, kept for the script to go on: TESSERA_SWEEP_RESUME).
 * *made: how many levels of OUT's path were created. */
static int out_prepare(const char *cmd, const char *out, bool force, bool resume, int *made)
{
    struct stat st;
    *made = 0;
    if (stat(out, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "tessera %s: %s is not a folder\n", cmd, out);
            return EXIT_USAGE;
        }
        DIR *d = opendir(out);
        struct dirent *de;
        bool empty = true;
        while (d && (de = readdir(d)))
            empty = empty && (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
        if (d)
            closedir(d);
        if (empty || force)
            return 0;
        if (!marked_incomplete(out)) {
            fprintf(stderr, "tessera %s: %s is not empty (--force writes over it)\n", cmd, out);
            return EXIT_USAGE;
        }
        if (resume) {
            fprintf(stderr, "tessera %s: %s holds an interrupted sweep (%s): going on with it\n", cmd, out, MARK);
            setenv("TESSERA_SWEEP_RESUME", "1", 1);
            return 0;
        }
        fprintf(stderr, "tessera %s: %s holds an incomplete run (%s): replacing it\n", cmd, out, MARK);
        return nftw(out, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", out);
    for (char *p = path + 1;; p++) { /* each missing level, from the top */
        const bool end = *p == '\0';
        if (*p != '/' && !end)
            continue;
        *p = '\0';
        if (mkdir(path, 0777) == 0)
            (*made)++;
        else if (errno != EEXIST) {
            fprintf(stderr, "tessera %s: %s: %s\n", cmd, path, strerror(errno));
            return EXIT_USAGE;
        }
        if (end)
            break;
        *p = '/';
    }
    return 0;
}

/* OUT/INCOMPLETE: the command, and what became of it. */
static void mark_write(const char *out, const char *command, const char *state, bool resumes)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" MARK, out);
    FILE *fp = fopen(path, "w");
    if (!fp)
        return;
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    fprintf(fp, "%s\n%s (%s). The files here are partial: run the same command again to %s\n"
                "(no --force needed).\n", command, state, when,
            resumes ? "go on with them" : "replace them");
    fclose(fp);
}

/* After a script refused its arguments: OUT back as it was where the script wrote nothing. */
static void out_undo(const char *out, int made)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" MARK, out);
    remove(path);
    snprintf(path, sizeof path, "%s", out);
    for (int i = 0; i < made && rmdir(path) == 0; i++) {
        char *slash = strrchr(path, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
}

static volatile sig_atomic_t got_signal;
static volatile pid_t child_pid;

static void on_signal(int sig)
{
    got_signal = sig;
    if (child_pid > 0)
        kill(-child_pid, sig);
}

/* Waits until no process of the script's group is left (each is this process's child once the script
 * has ended: run_child makes it their subreaper), so that none still writes in OUT when the command
 * returns (a run killed mid-write rolls back; the same command run at once must not meet it). One that
 * outlives SIGTERM by 5 s gets SIGKILL. */
static void reap_group(pid_t pgid)
{
    const struct timespec tick = {0, 25 * 1000 * 1000};
    for (int i = 0; i < 400; i++) {
        const pid_t p = waitpid(-pgid, NULL, WNOHANG);
        if (p < 0 && errno != EINTR)
            return; /* (ECHILD: none left) */
        if (p == 0) {
            if (i == 200)
                kill(-pgid, SIGKILL);
            nanosleep(&tick, NULL);
        }
    }
}

/* Runs `bash args...` in its own process group, signals passed on to it; returns its status once the
 * group has ended. */
static int run_child(char **args)
{
    struct sigaction sa = {0}, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* the script's own children, once it ends, are reaped here */
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* tessera killed outright: the script (and its group) told */
        for (int i = 0; i < 3; i++)
            signal(sigs[i], SIG_DFL);
        execvp("bash", args);
        perror("tessera exp: bash");
        _exit(127);
    }
    int status = -1;
    if (pid > 0) {
        setpgid(pid, pid);
        child_pid = pid;
        if (got_signal)
            kill(-pid, got_signal);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        kill(-pid, SIGTERM); /* what it left running */
        reap_group(pid);
        child_pid = 0;
    }
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return status;
}

/* Runs script (argv: its arguments, OUT among them) under OUT's rule; cmd names it in messages. */
static int exp_exec(const char *cmd, const struct exp_script *s, const char *out, char **args, int argc,
                    char **argv)
{
    int made, rc;
    bool force = false;
    const bool resumes = strncmp(cmd, "exp sweep", 9) == 0; /* run again, a sweep goes on with its runs */
    char **pass = calloc((size_t)argc + 5, sizeof *pass); /* bash, script, GRID, OUT, the arguments, NULL */
    int npass = 2;
    pass[0] = "bash";
    pass[1] = (char *)s->path;
    for (int i = 0; args[i]; i++) /* the arguments before OUT's options (GRID OUT, or OUT) */
        pass[npass++] = args[i];
    char knobs_given[1024] = "";
    if ((rc = check_args(cmd, s, argc, argv, pass, &npass, &force, knobs_given, sizeof knobs_given)) ||
        (rc = out_prepare(cmd, out, force, resumes, &made))) {
        free(pass);
        return rc;
    }
    char command[4096];
    snprintf(command, sizeof command, "tessera %s", cmd);
    for (int i = 2; i < npass; i++)
        snprintf(command + strlen(command), sizeof command - strlen(command), " %s", pass[i]);
    snprintf(command + strlen(command), sizeof command - strlen(command), "%s", knobs_given);
    mark_write(out, command, "under way", resumes);
    setenv("TESSERA_EXP_OUT_CHECKED", "1", 1); /* the scripts leave OUT's rule to this command */
    const int status = run_child(pass);
    free(pass);
    char state[128];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/" MARK, out);
        remove(path);
        return 0;
    }
    if (WIFSIGNALED(status) || got_signal) {
        const int sig = got_signal ? got_signal : WTERMSIG(status);
        snprintf(state, sizeof state, "interrupted by %s", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
                                                           : sig == SIGHUP ? "SIGHUP" : "a signal");
        rc = 128 + sig;
    } else {
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        snprintf(state, sizeof state, "failed with exit status %d", rc);
    }
    DIR *d = opendir(out);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)))
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 && strcmp(de->d_name, MARK) != 0;
    if (d)
        closedir(d);
    if (n == 0) /* it wrote nothing: nothing left */
        out_undo(out, made);
    else {
        mark_write(out, command, state, resumes);
        fprintf(stderr, "tessera %s: %s: %s; %s/%s says so, and the same command %s\n", cmd, out, state, out,
                MARK, resumes ? "goes on with it" : "replaces it");
    }
    return rc;
}

/* A path as the scripts take it: one beginning with '-' behind "./", so that no command they run
 * reads it as an option; into buf. */
static const char *as_path(const char *p, char *buf, size_t len)
{
    if (p[0] != '-')
        return p;
    snprintf(buf, len, "./%s", p);
    return buf;
}

/* `exp run NAME ...` and `exp sweep GRID OUT ...`: argv[1] the verb. */
static int exp_run(const char *dir, int argc, char **argv)
{
    const bool sweep = strcmp(argv[1], "sweep") == 0;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "exp %s%s%.256s", sweep ? "sweep" : "run", sweep ? "" : " ", sweep ? "" : argv[2]);
    char path[4096], line[1024], *f[3];
    if (argc < 3 || (!sweep && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0))) {
        exp_usage(argc < 3 ? stderr : stdout);
        return argc < 3 ? EXIT_USAGE : 0;
    }
    const char *name = argv[2];
    if (sweep)
        snprintf(path, sizeof path, "%s/lib/sweep.sh", dir);
    else
        snprintf(path, sizeof path, "%s/%s.sh", dir, name);
    if (!sweep && !strchr(name, '/') && access(path, R_OK) != 0 && paper_entry(dir, name, line, sizeof line, f)) {
        fprintf(stderr, "tessera exp: %s (%s) waits on %s; nothing was run\n", f[0], f[1], f[2]);
        return EXIT_USAGE;
    }
    struct exp_script s;
    if ((!sweep && strchr(name, '/')) || !script_read(path, &s)) {
        if (sweep) {
            fprintf(stderr, "tessera exp sweep: %s: not found (TESSERA_EXPERIMENTS names the folder)\n", path);
        } else {
            fprintf(stderr, "tessera exp: no experiment '%s'; the experiments:\n", name);
            exp_list(dir, stderr);
        }
        return EXIT_USAGE;
    }
    if (cli_help_asked(argc - 1, argv + 1))
        return print_header(&s);
    if (argc < 4) {
        fprintf(stderr, "tessera %s: which OUT folder? (tessera %s --help)\n", cmd, cmd);
        return EXIT_USAGE;
    }
    knobs_set(&s, argc - 4, argv + 4); /* before the GPU's need, which a knob may decide */
    char why[512];
    if (needs_gpu_now(&s) && !gpu_ready(why, sizeof why)) {
        fprintf(stderr, "tessera %s: needs a GPU and the CUDA engine: %s; nothing was run\n", cmd, why);
        return EXIT_USAGE;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        setenv("TESSERA", self, 1);
    }
    char grid_buf[4080], out_buf[4080]; /* (room for OUT/INCOMPLETE in the 4096 bytes of a path) */
    char *out = (char *)as_path(argv[3], out_buf, sizeof out_buf);
    char *head[3] = {sweep ? (char *)as_path(argv[2], grid_buf, sizeof grid_buf) : out, sweep ? out : NULL, NULL};
    return exp_exec(cmd, &s, out, head, argc - 4, argv + 4); /* argv[4..): the arguments after OUT */
}

int cli_exp(int argc, char **argv)
{
    const char *dir = getenv("TESSERA_EXPERIMENTS") ? getenv("TESSERA_EXPERIMENTS") : TS_SRCDIR "/experiments";
    if (argc >= 2 && strcmp(argv[1], "list") == 0) {
        if (argc > 2 && cli_help_asked(argc - 1, argv + 1)) {
            exp_usage(stdout);
            return 0;
        }
        return argc > 2 ? cli_unknown_in_list("exp list", argv[2], "--help") : exp_list(dir, stdout);
    }
    if (argc >= 2 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "sweep") == 0))
        return exp_run(dir, argc, argv);
    const bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc >= 2 && !help)
        fprintf(stderr, "tessera exp: unknown subcommand '%s' (list, run, sweep)\n", argv[1]);
    exp_usage(help ? stdout : stderr);
    return help ? 0 : EXIT_USAGE;
}
