/* calib_host.c: the host of an eager implementation's calibration, apart from its GPU (calib.h): taken
 * from a calibration, replaced by another machine's host profile or scaled (--host), and host profiles
 * found (DATADIR/hosts), read and written. */
#define _POSIX_C_SOURCE 200809L
#include "calib_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "whole.h"

bool calib_measures_host(const struct calib *c) { return c->host_bound; }

int calib_host_of(const struct calib *c, struct calib_host *h, struct ts_err *err)
{
    if (!c->host_bound)
        return ts_fail(err, "the calibration of %s on %s measured no host apart from its GPU (an engine "
                            "issuing CUDA graphs): it has no host to take or replace", c->model, c->device);
    *h = (struct calib_host){c->host0, c->host_seg, c->eager_gap, c->host_steps, "", "", c->host_lo, c->host_hi};
    snprintf(h->device, sizeof h->device, "%s", c->device);
    return 0;
}

int calib_set_host(struct calib *c, const struct calib_host *h, struct ts_err *err)
{
    struct calib_host own;
    if (calib_host_of(c, &own, err))
        return -1;
    /* (the launch gaps of GPU-bound steps are in the fitted op curves: they stay the profiled machine's;
     * a selecting segment's loop is issued by the other host as its steps are, scaled as they scale) */
    if (own.host0_ms > 0)
        c->host_sel *= h->host0_ms / own.host0_ms;
    c->host0 = h->host0_ms, c->host_seg = h->seg_ms, c->host_steps = h->steps;
    c->host_lo = h->lo, c->host_hi = h->hi;
    return 0;
}

int calib_scale_host(struct calib *c, double scale, struct ts_err *err)
{
    struct calib_host own;
    if (calib_host_of(c, &own, err))
        return -1;
    c->host0 *= scale, c->host_seg *= scale, c->host_sel *= scale;
    return 0;
}
/* The refusal of --host NAME: the error prefixed by the option, and by NAME where the message does not
 * name it already (a file's own error names its path). */
static int host_fail(struct ts_err *err, const char *name)
{
    return strstr(err->msg, name) ? ts_fail_prefix(err, "--host") : ts_fail_prefix(err, "--host %s", name);
}


int calib_host_scale(const char *name, const struct impl_profile *im, double *scale, struct ts_err *err)
{
    struct calib_host ref, h;
    if (calib_host_load(im->host_ref, &ref, err) || calib_host_load(name, &h, err))
        return host_fail(err, name);
    if (!(ref.host0_ms > 0))
        return ts_fail(err, "--host %s: the host profile %s, which %s's costs were measured with, takes no "
                            "time a step", name, im->host_ref, im->name);
    *scale = h.host0_ms / ref.host0_ms;
    return 0;
}

/* scandir's filter: the files named *.csv */
static int is_csv(const struct dirent *e)
{
    const size_t n = strlen(e->d_name);
    return n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0;
}

int calib_csv_files(const char *dir, struct dirent ***names)
{
    *names = NULL;
    return scandir(dir, names, is_csv, alphasort);
}

void calib_hosts_dir(char *dir, size_t len)
{
    struct sim_config cfg;
    sim_config_defaults(&cfg);
    snprintf(dir, len, "%s/hosts", cfg.datadir);
}

/* The shipped host profile (DATADIR/hosts) measured on the machine that measured a calibration of
 * device `device` (a transferred one's, "GPU (roofline transfer from DEVICE)", its origin's), into
 * *ref: false where none was (an unreadable file there is passed over). */
static bool machine_host(const char *device, struct calib_host *ref)
{
    static const char from[] = " (roofline transfer from ";
    const char *o = strstr(device, from);
    char origin[sizeof ref->device];
    if (o)
        snprintf(origin, sizeof origin, "%.*s", (int)strlen(o + sizeof from - 1) - 1, o + sizeof from - 1);
    else
        snprintf(origin, sizeof origin, "%s", device);
    char dir[CFG_PATH + 16];
    calib_hosts_dir(dir, sizeof dir);
    struct dirent **names;
    const int n = calib_csv_files(dir, &names);
    bool found = false;
    for (int i = 0; i < n; i++) {
        char path[sizeof dir + 256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        struct calib_host h;
        struct ts_err err;
        if (!found && calib_host_load(path, &h, &err) == 0 && strcmp(h.device, origin) == 0) {
            *ref = h;
            found = true;
        }
        free(names[i]);
    }
    free(names);
    return found;
}

int calib_use_host(struct calib *c, const char *name, const struct impl_profile *im, struct ts_err *err)
{
    struct calib_host h, ref;
    if (calib_host_load(name, &h, err))
        return host_fail(err, name);
    c->host_own_loop = false;
    if (h.impl[0]) { /* measured on an implementation's own loop: that implementation's line */
        if (strcmp(h.impl, im->name) != 0)
            return ts_fail(err, "--host %s: measured on %s's own loop, not --impl %s's (give --impl %s)", name, h.impl,
                           im->name, h.impl);
        if (calib_set_host(c, &h, err))
            return host_fail(err, name);
        c->host_own_loop = true;
        return 0;
    }
    if (im->host_line_own) {
        double scale;
        if (calib_host_scale(name, im, &scale, err))
            return -1;
        return calib_scale_host(c, scale, err) ? host_fail(err, name) : 0;
    }
    if (machine_host(c->device, &ref) && ref.host0_ms > 0) {
        /* c's line scaled whole by the two machines' per-step issue times, measured on the same layer
         * (a per-segment term is fitted from few segment counts and may be 0 on either machine) */
        return calib_scale_host(c, h.host0_ms / ref.host0_ms, err) ? host_fail(err, name) : 0;
    }
    return calib_set_host(c, &h, err) ? host_fail(err, name) : 0;
}

#define HOST_HEADER "host0_ms,seg_ms,eager_gap_ms,steps,device"
#define HOST_IMPL_HEADER "host0_ms,seg_ms,eager_gap_ms,steps,impl,device"

/* text begins with the header line hdr */
static bool header_is(const char *text, const char *hdr)
{
    const size_t hl = strlen(hdr);
    return strncmp(text, hdr, hl) == 0 && (text[hl] == '\n' || text[hl] == '\r');
}

int calib_host_parse(const char *path, const char *text, struct calib_host *h, struct ts_err *err)
{
    const bool with_impl = header_is(text, HOST_IMPL_HEADER);
    if (!with_impl && !header_is(text, HOST_HEADER))
        return 1;
    const char *line = strchr(text, '\n');
    int used = 0;
    bool ok = line && sscanf(line + 1, "%lf,%lf,%lf,%d,%n", &h->host0_ms, &h->seg_ms, &h->eager_gap_ms, &h->steps,
                             &used) == 4 && used > 0 && h->host0_ms >= 0 && h->host0_ms < 1e5 && h->seg_ms >= 0 &&
              h->seg_ms < 1e5 && h->eager_gap_ms >= 0 && h->eager_gap_ms < 1e5 && h->steps >= 0;
    line = ok ? line + 1 + used : line;
    h->impl[0] = '\0';
    if (ok && with_impl) {
        const size_t n = strcspn(line, ",\r\n");
        ok = n > 0 && n < sizeof h->impl && line[n] == ',';
        if (ok) {
            snprintf(h->impl, sizeof h->impl, "%.*s", (int)n, line);
            line += n + 1;
        }
    }
    if (!ok)
        return ts_fail(err, "%s:2: expected %s (times >= 0 ms)", path, with_impl ? HOST_IMPL_HEADER : HOST_HEADER);
    snprintf(h->device, sizeof h->device, "%.*s", (int)strcspn(line, "\r\n"), line);
    h->lo = h->hi = 0; /* a host file keeps the line, not how far its steps lay from it */
    return 0;
}

int calib_host_load(const char *name, struct calib_host *h, struct ts_err *err)
{
    /* a bare name: a shipped host profile, DATADIR/hosts/NAME.csv (or its name in older runs) */
    static const char *const renamed[][2] = {{"lent-h100", "h100-xeon"}, {"lent-h200", "h200-xeon"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(renamed); i++)
        if (strcmp(name, renamed[i][0]) == 0)
            name = renamed[i][1];
    char path[CFG_PATH + 64];
    if (!strchr(name, '/') && !strstr(name, ".csv")) {
        char dir[CFG_PATH + 16];
        calib_hosts_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    } else {
        snprintf(path, sizeof path, "%s", name);
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return ts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char text[1024];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    const int rc = calib_host_parse(path, text, h, err);
    if (rc <= 0)
        return rc;
    /* not a host file: a calibration or profile CSV, whose host is taken */
    struct calib_data d;
    struct calib *c = NULL;
    int bad = calib_data_load(path, &d, err);
    if (!bad) {
        bad = calib_fit(&d, &c, err) || calib_host_of(c, h, err) ? -1 : 0;
        calib_free(c);
        calib_data_free(&d);
    }
    return bad && !strstr(err->msg, path) ? ts_fail_prefix(err, "%s", path) : bad ? -1 : 0;
}

int calib_host_write(const struct calib_host *h, const char *path, struct ts_err *err)
{
    /* (whole or not at all: a host file already at path stays as it was where this one fails) */
    struct ts_whole w;
    if (ts_whole_open(&w, path, TS_WHOLE_REPLACE, NULL, err))
        return -1;
    FILE *f = w.f;
    if (h->impl[0])
        fprintf(f, HOST_IMPL_HEADER "\n%.6g,%.6g,%.6g,%d,%s,%s\n", h->host0_ms, h->seg_ms, h->eager_gap_ms, h->steps,
                h->impl, h->device);
    else
        fprintf(f, HOST_HEADER "\n%.6g,%.6g,%.6g,%d,%s\n", h->host0_ms, h->seg_ms, h->eager_gap_ms, h->steps, h->device);
    return ts_whole_close(&w, false, err);
}
