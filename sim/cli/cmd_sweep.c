/*
 * cmd_sweep.c — pagetune sweep: every trace under every policy for every
 * combination of the --grid values, each run stored (and skipped when it is
 * stored already, so an interrupted sweep resumes).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "workbench.h"

static const pt_cli_opt sweep_opts[] = {
    PT_CLI_OPT_STR("db", 0, "DB", pt_wb_args, db, "the SQLite database (default pagetune.db; created if missing)"),
    PT_WB_OPT_TRACE("a trace or PyTorch snapshot (repeatable)"),
    PT_WB_OPT_POLICY("a policy file or bundled name (repeatable)"),
    PT_CLI_OPT_PARSE("grid", "NAME=LIST", pt_wb_args, grid, pt_cli_opt_grid,
                     " (NAME=A,B,C, a list value whole in its brackets; at most 8 grids of 64 values of 127 bytes)",
                     "values for a parameter, comma-separated (repeatable); a list value\n"
                     "is one value, its commas inside brackets: roundup_power2_divisions=4,[256:1,512:2,>:8]"),
    PT_WB_OPT_CAPACITY,
    PT_WB_OPT_GPU("GPU description for predicted times (default h200):\n" PT_WB_GPU_RULE),
    PT_WB_OPT_JSON("a JSON summary on stdout"),
    PT_CLI_END};
const pt_cli_table pt_opts_sweep = {
    "usage: pagetune sweep [--db DB] --trace T... --policy P... [--grid NAME=A,B,C]...\n"
    "                      [--capacity BYTES] [--gpu NAME] [--json]\n"
    "\n"
    "Simulate every trace under every policy, for every combination of the --grid\n"
    "values (applied to the policies that declare that parameter), and store each\n"
    "result in DB (default pagetune.db).  A run already stored (same trace\n"
    "content, policy text, parameters, capacity, GPU and engine version) is\n"
    "skipped, so an interrupted sweep resumes where it stopped.  Progress goes to\n"
    "stderr: a bar on a terminal, one line a run otherwise.\n",
    sweep_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

typedef struct progress {
  size_t done, total;
  double t0;
  int tty;
} progress;

static void progress_step(progress *p, const char *what, int ran) {
  p->done++;
  double el = pt_clock_s() - p->t0, rate = el > 0 ? (double)p->done / el : 0;
  double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0;
  if (p->tty)
    fprintf(stderr, "\r[%zu/%zu] %5.1f runs/s  ETA %4.0f s  %-50.50s", p->done, p->total, rate, eta, what);
  else
    fprintf(stderr, "run %zu/%zu: %s: %s\n", p->done, p->total, what, ran ? "stored" : "already stored, skipped");
  if (p->tty && p->done == p->total) fputc('\n', stderr);
}

static int policy_declares(const pt_policy *pol, const char *name) {
  for (int i = 0; i < pt_policy_nparams(pol); i++)
    if (!strcmp(pt_policy_param_at(pol, i)->name, name)) return 1;
  return 0;
}

/* Apply grid combination k (mixed radix over the axes the policy declares). */
static int apply_grid(pt_policy *pol, const pt_grid *g, size_t k, pt_err *err) {
  for (int i = 0; i < g->n; i++) {
    const pt_grid_axis *ax = &g->axis[i];
    if (!policy_declares(pol, ax->name)) continue;
    char as[PT_PARAM_NAME_MAX + PT_GRID_VALUE_MAX];
    snprintf(as, sizeof as, "%s=%s", ax->name, ax->values[k % (size_t)ax->n]);
    k /= (size_t)ax->n;
    int rc = pt_policy_set(pol, as, err);
    if (rc < 0) return rc;
  }
  return 0;
}

static size_t grid_size(const pt_policy *pol, const pt_grid *g) {
  size_t n = 1;
  for (int i = 0; i < g->n; i++)
    if (policy_declares(pol, g->axis[i].name)) n *= (size_t)g->axis[i].n;
  return n;
}

typedef struct sweep_state {
  pt_wb_env env;
  pt_policy *pols[64];
  int64_t pids[64];
  pt_wb_trace *trs;
  int ntr, npol;
  size_t stored, skipped;
  progress pr;
} sweep_state;

/* Every run of the loaded traces and policies, skipping those stored already. */
static int sweep(const pt_wb_args *a, sweep_state *s, pt_err *err) {
  int rc = 0;
  s->pr.t0 = pt_clock_s();
  for (int p = 0; p < s->npol; p++) s->pr.total += grid_size(s->pols[p], &a->grid) * (size_t)s->ntr;
  for (int ti = 0; rc == 0 && ti < s->ntr; ti++)
    for (int p = 0; rc == 0 && p < s->npol; p++) {
      size_t n = grid_size(s->pols[p], &a->grid);
      for (size_t k = 0; rc == 0 && k < n; k++) {
        if ((rc = apply_grid(s->pols[p], &a->grid, k, err)) < 0) break;
        int64_t id;
        int ran;
        pt_sim_result res;
        if ((rc = pt_wb_run(&s->env, &s->trs[ti], s->pols[p], s->pids[p], 1, err, &id, &ran, &res)) < 0) break;
        pt_sim_result_free(&res);
        ran ? s->stored++ : s->skipped++;
        char what[200], pj[PT_PARAMS_JSON_MAX];
        pt_params cur;
        pt_policy_params(s->pols[p], &cur);
        pt_params_json(&cur, 1, pj, sizeof pj);
        snprintf(what, sizeof what, "%.40s %.40s %.110s", pt_wb_base_name(a->traces[ti]), pt_policy_name(s->pols[p]),
                 pj);
        progress_step(&s->pr, what, ran);
      }
    }
  return rc;
}

int pt_cmd_sweep(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (!a->ntraces || !a->npolicies) return pt_cli_usage(err, "needs at least one --trace and one --policy");
  pt_gpu gpu;
  sweep_state s = {.env = {.capacity = a->capacity}, .pr = {.tty = isatty(2)}};
  int rc = pt_wb_gpu(a->gpu, &gpu, &s.env.gpu, err);
  if (rc < 0 || (rc = pt_store_open(a->db, 0, err, &s.env.db)) < 0) return rc;
  s.trs = calloc((size_t)a->ntraces, sizeof *s.trs);
  rc = s.trs ? 0 : pt_err_set(err, PT_ENOMEM, "out of memory");
  for (int i = 0; rc == 0 && i < a->npolicies; i++)
    if ((rc = pt_wb_load_policy(s.env.db, a->policies[i], err, &s.pols[i], &s.pids[i])) == 0) s.npol++;
  /* unknown grid names are a usage error: no policy declares them */
  for (int g = 0; rc == 0 && g < a->grid.n; g++) {
    int any = 0;
    for (int p = 0; p < s.npol; p++) any |= policy_declares(s.pols[p], a->grid.axis[g].name);
    if (!any) rc = pt_err_set(err, PT_EUSAGE, "--grid %s: no policy given declares that parameter", a->grid.axis[g].name);
  }
  for (int i = 0; rc == 0 && i < a->ntraces; i++)
    if ((rc = pt_wb_load_trace(s.env.db, a->traces[i], err, &s.trs[i])) == 0) s.ntr++;
  if (rc == 0) rc = sweep(a, &s, err);
  for (int p = 0; p < s.npol; p++) pt_policy_free(s.pols[p]);
  for (int t = 0; t < s.ntr; t++) pt_trace_data_free(&s.trs[t].t);
  free(s.trs);
  pt_store_close(s.env.db);
  if (rc < 0) {
    if (s.pr.tty && s.pr.done) fputc('\n', stderr);
    return rc;
  }
  if (a->json) {
    fputs("{\"db\":", stdout);
    pt_json_str(stdout, a->db);
    printf(",\"runs\":%zu,\"stored\":%zu,\"skipped\":%zu}\n", s.pr.total, s.stored, s.skipped);
  } else {
    printf("%zu runs: %zu simulated and stored, %zu already in %s\n", s.pr.total, s.stored, s.skipped, a->db);
  }
  return 0;
}
