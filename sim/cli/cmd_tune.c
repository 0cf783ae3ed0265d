/*
 * cmd_tune.c — pagetune tune: search the ranges a policy declares for the
 * best value of an objective on one trace (a grid over choices, GSL's
 * Nelder-Mead over continuous ones), every point stored; then the Pareto
 * front of the stored runs.
 */
#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tune.h"
#include "workbench.h"

static const pt_cli_opt tune_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("the trace or PyTorch snapshot (one)"),
    PT_WB_OPT_POLICY("the policy file or bundled name (one)"),
    PT_WB_OPT_OBJECTIVE("time (predicted allocator time, default), memory (peak reserved\n"
                        "bytes) or weighted:W, as best ranks runs;"),
    PT_CLI_OPT_ULONG("budget", "N", pt_wb_args, budget, 1, 100000, NULL, "at most N simulations (default 60)"),
    PT_WB_OPT_CAPACITY,
    PT_WB_OPT_GPU("GPU description for predicted times (default h200):\n" PT_WB_GPU_RULE
                  "\n(a time objective needs one)"),
    PT_CLI_OPT_ULONG("seed", "S", pt_wb_args, seed, 0, ULONG_MAX, NULL, "seed of the random starts (default 1)"),
    PT_WB_OPT_JSON("one JSON object: the best point and the Pareto front"),
    PT_CLI_END};
const pt_cli_table pt_opts_tune = {
    "usage: pagetune tune [--db DB] --trace T --policy P [--objective time|memory|weighted:W]\n"
    "                     [--budget N] [--capacity BYTES] [--gpu NAME] [--seed S] [--json]\n"
    "\n"
    "Search the parameter ranges POLICY declares for the best value of the\n"
    "objective on TRACE: every combination of parameters with choices (a grid;\n"
    "a list-valued knob's choices, such as roundup_power2_divisions tables, are\n"
    "grid values too), and GSL's Nelder-Mead simplex over continuous ones (log\n"
    "scale where declared), from several starts.  Every point is stored in DB; a\n"
    "run that hits OOM is out: a start that does is replaced by a point of a\n"
    "coarse grid that does not, and when every point tried runs out of memory\n"
    "tune says so (exit 1).  Prints the best point and the Pareto front of\n"
    "predicted allocator time against peak reserved bytes over the stored runs\n"
    "of this trace and policy that did not.\n",
    tune_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

typedef struct tune_ctx {
  const pt_wb_env *env;
  pt_wb_trace *tr;
  pt_policy *pol;
  int64_t policy_id;
  pt_objective obj;
  int stored, evaluated, oom; /* runs made by the search, and those of them that ran out of memory */
} tune_ctx;

/* Simulate the policy at its current values, storing the run if new. */
static int tune_point(tune_ctx *c, pt_err *err, pt_sim_result *res) {
  int64_t id;
  int stored;
  int rc = pt_wb_run(c->env, c->tr, c->pol, c->policy_id, 0, err, &id, &stored, res);
  c->stored += stored;
  return rc;
}

static int tune_eval(void *ctx, const pt_params *point, double *value, pt_err *err) {
  tune_ctx *c = ctx;
  for (int i = 0; i < point->n; i++) {
    char as[PT_PARAM_NAME_MAX + 300], v[256];
    snprintf(as, sizeof as, "%s=%s", point->v[i].name, pt_params_value_text(point, i, v, sizeof v));
    int rc = pt_policy_set(c->pol, as, err);
    if (rc < 0) return rc == PT_EUSAGE ? PT_EFORMAT : rc; /* a point the search made: a failed run, not usage */
  }
  pt_sim_result res;
  int rc = tune_point(c, err, &res);
  if (rc < 0) return rc;
  *value = pt_objective_value(&c->obj, &res);
  c->evaluated++;
  c->oom += res.ooms > 0;
  pt_sim_result_free(&res);
  return 0;
}

/* Print the stored runs of a trace (and policy) on the Pareto front; runs that ran out of memory are not on it. */
static int print_front(pt_store *db, const char *trace, const char *policy, int json, pt_err *err) {
  pt_store_run *rows;
  size_t n;
  int rc = pt_store_runs(db, trace, policy, err, &rows, &n);
  if (rc < 0) return rc;
  pt_report_run *rr = calloc(n ? n : 1, sizeof *rr);
  int *front = calloc(n ? n : 1, sizeof *front);
  if (!rr || !front) {
    free(rr);
    free(front);
    free(rows);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) rr[i] = pt_wb_report_run(&rows[i]);
  pt_report_pareto(rr, n, front);
  if (json) fputs("\"pareto\":[", stdout);
  else printf("Pareto front (predicted allocator time vs peak reserved), %s:\n", trace);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!front[i] || rows[i].r.ooms) continue;
    if (json) {
      printf("%s{\"run\":%" PRId64 ",\"policy\":", first ? "" : ",", rows[i].id);
      pt_json_str(stdout, rows[i].policy);
      char us[32] = "null"; /* a time never predicted */
      if (rows[i].r.has_gpu) snprintf(us, sizeof us, "%.6g", rows[i].r.predicted_alloc_us);
      printf(",\"params\":%s,\"predicted_alloc_us\":%s,\"peak_reserved_bytes\":%" PRIu64 "}", rows[i].params_json,
             us, rows[i].r.peak_reserved_bytes);
    } else {
      char us[32] = "-";
      if (rows[i].r.has_gpu) snprintf(us, sizeof us, "%.1f us", rows[i].r.predicted_alloc_us);
      printf("  run %-6" PRId64 " %-20s %13s  %12.1f MiB  %s\n", rows[i].id, rows[i].policy, us,
             rows[i].r.peak_reserved_bytes / 1048576.0, rows[i].params_json);
    }
    first = 0;
  }
  if (json) fputs("]", stdout);
  free(rr);
  free(front);
  free(rows);
  return 0;
}

/* p as NAME=VALUE words, each value the shortest decimal that reads back as it (what sim --set takes). */
static void print_point(const pt_params *p) {
  for (int i = 0; i < p->n; i++) {
    char v[256];
    printf("%s%s=%s", i ? " " : "", p->v[i].name, pt_params_value_text(p, i, v, sizeof v));
  }
}

/* The search (from the policy's defaults first), then the report. */
static int tune(const pt_wb_args *a, tune_ctx *c, pt_err *err) {
  pt_tune_param tp[PT_MAX_PARAMS];
  int ntp = 0;
  for (int i = 0; i < pt_policy_nparams(c->pol); i++) {
    const pt_policy_param *p = pt_policy_param_at(c->pol, i);
    if (!p->has_range && p->nchoices <= 0) continue;
    tp[ntp++] = (pt_tune_param){p->name, p->dflt, p->min, p->max, p->log_scale, p->integer, p->choices, p->nchoices,
                                p->choice_lists};
  }
  if (!ntp) return pt_err_set(err, PT_EUSAGE, "%s declares no range or choices to tune", pt_policy_path(c->pol));
  int rc;
  pt_tune_opts o = {.budget = (int)a->budget, .starts = 3, .seed = a->seed};
  pt_tune_result best;
  if ((rc = pt_tune(tp, ntp, &o, tune_eval, c, err, &best)) == PT_ENOTFOUND && c->oom == c->evaluated)
    return pt_err_set(err, PT_ENOTFOUND,
                      "tune: every one of the %d points of %s tried on %s ran out of memory under --capacity %" PRIu64
                      " B: %s",
                      c->evaluated, pt_policy_name(c->pol), a->traces[0], a->capacity,
                      c->evaluated >= (int)a->budget ? "the budget ran out first; a larger --budget or capacity may find one"
                                                      : "nothing to tune; give a larger capacity");
  if (rc < 0) return rc;
  char pj[PT_PARAMS_JSON_MAX];
  pt_params_json(&best.best, 1, pj, sizeof pj);
  const char *name = pt_policy_name(c->pol);
  if (!a->json) {
    printf("tuned %s on %s (%s): %d simulations, %d new runs stored in %s\n", name, a->traces[0], a->objective.text,
           best.evaluations, c->stored, a->db);
    char f[96];
    fputs("best: ", stdout);
    print_point(&best.best);
    printf("  objective %.6g (%s)\n\n", best.best_value, pt_objective_formula(&c->obj, f, sizeof f));
    return print_front(c->env->db, c->tr->hash, name, 0, err);
  }
  printf("{\"trace\":");
  pt_json_str(stdout, a->traces[0]);
  printf(",\"policy\":");
  pt_json_str(stdout, name);
  char f[96];
  printf(",\"objective\":\"%s\",\"objective_formula\":\"%s\",\"best_value\":%.17g,\"best_params\":%s,"
         "\"evaluations\":%d,\"stored\":%d,",
         a->objective.text, pt_objective_formula(&c->obj, f, sizeof f), best.best_value, pj, best.evaluations, c->stored);
  rc = print_front(c->env->db, c->tr->hash, name, 1, err);
  puts("}");
  return rc;
}

int pt_cmd_tune(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces != 1 || a->npolicies != 1) return pt_cli_usage(err, "needs exactly one --trace and one --policy");
  pt_gpu gpu;
  pt_wb_env env = {.capacity = a->capacity};
  int rc = pt_wb_gpu(a->gpu, &gpu, &env.gpu, err);
  if (rc < 0) return rc;
  if (!env.gpu && pt_wb_needs_time(&a->objective))
    return pt_cli_usage(err, "--objective %s needs a predicted time: a GPU description (--gpu NAME, not none)",
                        a->objective.text);
  if ((rc = pt_store_open(a->db, 0, err, &env.db)) < 0) return rc;
  tune_ctx c = {.env = &env, .obj = a->objective};
  pt_wb_trace tr;
  if ((rc = pt_wb_load_policy(env.db, a->policies[0], err, &c.pol, &c.policy_id)) == 0) {
    if ((rc = pt_wb_load_trace(env.db, a->traces[0], err, &tr)) == 0) {
      c.tr = &tr;
      rc = tune(a, &c, err);
      pt_trace_data_free(&tr.t);
    }
    pt_policy_free(c.pol);
  }
  pt_store_close(env.db);
  return rc;
}
