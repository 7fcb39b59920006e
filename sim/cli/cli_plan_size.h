/* cli_plan_size.h: what tessera plan size's files share: the space, a candidate, and the plan's folder
 * and database (cli_plan_out.c). */
#ifndef TESSERA_CLI_PLAN_SIZE_H
#define TESSERA_CLI_PLAN_SIZE_H

#include <stdbool.h>

#include "cli_plan.h"
#include "db.h"
#include "sim.h"

#define SPACE_LINES 16
#define SPACE_VALUES 64
#define SPACE_MAX 10000 /* candidates */

/* The space: a grid file, one option a line (exp sweep's syntax). */
struct space {
    int n;                                  /* lines */
    char name[SPACE_LINES][64];             /* --NAME */
    char *value[SPACE_LINES][SPACE_VALUES];
    int count[SPACE_LINES];
    long total;                             /* candidates */
};

/* A candidate: how it was sized, and (the parent's) how it is priced and ranked. */
enum cand_status { CAND_SIZED, CAND_NO_RATE, CAND_TOO_MANY, CAND_UNBUILT, CAND_ERROR };
struct cand {
    long index;
    int status;
    struct db_plan_row r; /* what sizing found: the plan's database row */
    struct sim_summary m; /* the confirming fleet run's (where it ran) */
    bool confirmed;
    bool kept;            /* read back from the plan's database, not sized by this run */
    /* the parent's: */
    double price, usd_h, usd_mtok;
    bool floor_ok, front;
};

/* What the plan's database gets: a sized candidate as a run. */
struct keeper {
    const struct plan_args *a;
    const struct space *sp;
    const char *db, *key;
    struct ts_err err;
};

/* cli_plan_space.c */
/* A line of the space file (cli_text_lines' callback; ctx the space). */
int plan_space_line(void *ctx, const char *path, int line, char *text, struct ts_err *err);
void plan_space_free(struct space *sp);
/* Candidate i's label ("gpu=h100 threshold=0.9") into buf. */
const char *plan_label_of(const struct space *sp, long i, char *buf, size_t len);
/* Candidate i's configuration: the command line's sim options, then its values. 0, or the parser's
 * nonzero (said on stderr by it). */
int plan_config_of(const struct plan_args *a, const struct space *sp, long i, struct sim_config *c);
/* Whether a candidate is ranked: sized, priced and above the floor. */
bool plan_ranked(const struct cand *c);

/* cli_plan_out.c */
void plan_digest(const struct plan_args *a, char *out, size_t len);
int plan_out_ready(const char *dir, const char *key, bool force, bool *resume);
int plan_keep_one(void *ctx, const struct cand *c);
long plan_read_back(const char *path, const char *key, struct cand *c, long total, struct ts_err *err);
int plan_merge_shards(const char *dir, struct ts_err *err);
int plan_write_sbatch(const char *dir, int argc, char **argv, int tasks, struct ts_err *err);
int plan_write_out(const struct plan_args *a, const struct space *sp, struct cand *c, struct cand *const *order,
                   const char *key);

#endif
