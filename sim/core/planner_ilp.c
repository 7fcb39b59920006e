/*
 * planner_ilp.c: exact arena offsets with GLPK, the optimum the heuristics are measured against.
 *
 *   minimise M  subject to  o_i + s_i <= M                                  for every tensor i
 *                           o_i + s_i <= o_j + U z_ij,  o_j + s_j <= o_i + U (1 - z_ij)
 *                                                       for every pair alive at the same op
 * with o_i >= 0, z_ij binary and U the sum of sizes. Sizes are in KiB (rounded up) for the solver's
 * numerics, offsets are turned back into bytes. The best heuristic plan seeds the bound; if the
 * graph is too large or the time limit hits before optimality is proved, the best plan found (or
 * the best heuristic) is returned with a note saying so.
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

static int best_heuristic(const struct opgraph *g, const struct planner_opts *o, struct plan *out,
                          struct ts_err *err)
{
    struct plan a = {0}, b = {0};
    if (plan_first_fit(g, o, &a, err) || plan_greedy_size(g, o, &b, err)) {
        plan_free(&a);
        plan_free(&b);
        return -1;
    }
    if (a.arena_bytes <= b.arena_bytes) {
        *out = a;
        plan_free(&b);
    } else {
        *out = b;
        plan_free(&a);
    }
    return 0;
}

static int silent(void *info, const char *s)
{
    (void)info, (void)s;
    return 1; /* keep GLPK's terminal output off */
}

int plan_ilp(const struct opgraph *g, const struct planner_opts *o, struct plan *out, struct ts_err *err)
{
    if (best_heuristic(g, o, out, err))
        return -1;
    if (g->n > o->ilp_max_tensors) {
        snprintf(out->note, sizeof out->note, "ILP skipped: %d tensors > %d; best heuristic plan", g->n,
                 o->ilp_max_tensors);
        return 0;
    }
    const int n = g->n;
    double U = 0;
    double *s = xmalloc(sizeof *s * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        s[i] = ceil((double)g->t[i].bytes / 1024.0);
        U += s[i];
    }
    glp_term_hook(silent, NULL);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    /* columns: o_0..o_{n-1}, M, then one z per overlapping pair */
    glp_add_cols(lp, n + 1);
    for (int i = 0; i < n; i++)
        glp_set_col_bnds(lp, i + 1, GLP_DB, 0.0, U);
    glp_set_col_bnds(lp, n + 1, GLP_DB, 0.0, U);
    glp_set_obj_coef(lp, n + 1, 1.0);
    int ind[4];
    double val[4];
    for (int i = 0; i < n; i++) { /* o_i - M <= -s_i */
        int r = glp_add_rows(lp, 1);
        ind[1] = i + 1, val[1] = 1.0, ind[2] = n + 1, val[2] = -1.0;
        glp_set_mat_row(lp, r, 2, ind, val);
        glp_set_row_bnds(lp, r, GLP_UP, 0.0, -s[i]);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const struct og_tensor *a = &g->t[i], *b = &g->t[j];
            if (!(a->first <= b->last && b->first <= a->last))
                continue;
            int z = glp_add_cols(lp, 1);
            glp_set_col_kind(lp, z, GLP_BV);
            int r = glp_add_rows(lp, 2); /* o_i - o_j - U z <= -s_i ; o_j - o_i + U z <= U - s_j */
            ind[1] = i + 1, val[1] = 1.0, ind[2] = j + 1, val[2] = -1.0, ind[3] = z, val[3] = -U;
            glp_set_mat_row(lp, r, 3, ind, val);
            glp_set_row_bnds(lp, r, GLP_UP, 0.0, -s[i]);
            ind[1] = j + 1, val[1] = 1.0, ind[2] = i + 1, val[2] = -1.0, ind[3] = z, val[3] = U;
            glp_set_mat_row(lp, r + 1, 3, ind, val);
            glp_set_row_bnds(lp, r + 1, GLP_UP, 0.0, U - s[j]);
        }
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = (int)(o->ilp_time_limit_s * 1000);
    int rc = glp_intopt(lp, &parm);
    int status = glp_mip_status(lp);
    if ((rc == 0 || rc == GLP_ETMLIM) && (status == GLP_OPT || status == GLP_FEAS)) {
        int64_t arena = 0;
        int64_t *off = xmalloc(sizeof *off * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) {
            off[i] = (int64_t)llround(glp_mip_col_val(lp, i + 1)) * 1024;
            arena = TS_MAX(arena, off[i] + g->t[i].bytes);
        }
        if (arena <= out->arena_bytes) { /* take the solver's plan when it is no worse */
            free(out->offsets);
            out->offsets = off;
            out->arena_bytes = arena;
        } else {
            free(off);
        }
        out->optimal = status == GLP_OPT && rc == 0;
        if (!out->optimal)
            snprintf(out->note, sizeof out->note, "ILP hit its %.1f s limit before proving optimality: "
                     "best plan found", o->ilp_time_limit_s);
    } else {
        snprintf(out->note, sizeof out->note, "ILP found no solution in %.1f s: best heuristic plan",
                 o->ilp_time_limit_s);
    }
    glp_delete_prob(lp);
    glp_term_hook(NULL, NULL);
    free(s);
    return 0;
}
