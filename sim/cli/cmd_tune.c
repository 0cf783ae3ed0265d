/*
 * cmd_tune.c — pagetune tune: search the ranges a policy declares for the
 * best value of an objective on one trace (a grid over choices, GSL's
 * Nelder-Mead over continuous ones), every point stored; then the Pareto
 * front of the stored runs.
 */
#include <config.h>

#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "farm.h"
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
    PT_WB_OPT_TIMELINE("default full"),
    PT_WB_OPT_JOBS("N worker processes simulate, this one stores (default 1: it does both):\n"
                   "each start's simplex is run ahead side by side, then the search takes what\n"
                   "it asks for; the same points, result and stored runs as -j 1"),
    PT_WB_OPT_BROADCAST,
    PT_WB_OPT_JSON("one JSON object: the best point and the Pareto front"),
    PT_CLI_END};
const pt_cli_table pt_opts_tune = {
    "usage: pagetune tune [--db DB] --trace T --policy P [--objective time|memory|weighted:W]\n"
    "                     [--budget N] [--capacity BYTES] [--gpu NAME] [--seed S]\n"
    "                     [--timeline full|thin|none] [-j N] [--broadcast-traces] [--json]\n"
    "       mpirun -n N pagetune-mpi tune ...   (pagetune-mpi: configure --with-mpi;\n"
    "                                   rank 0 stores, the other ranks simulate)\n"
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
    "of this trace and policy that did not.\n"
    "\n"
    "Environment: PAGETUNE_NOOP_ENGINE=1 makes workers answer without simulating\n"
    "(zero results), to measure what the writer alone can store: a scratch DB only.\n",
    tune_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

/* A point's run made by a worker, kept until the search asks for it (tune -j N). */
typedef struct tune_made {
  char assign[PT_MAX_PARAMS * (PT_PARAM_NAME_MAX + 32)];
  int have;          /* res holds the result, or (rc < 0) the run failed: said if the search asks for it */
  int rc;
  pt_err why;
  pt_sim_result res; /* its own copy of the timeline */
} tune_made;

typedef struct tune_ctx {
  const pt_wb_env *env;
  pt_wb_trace *tr;
  pt_policy *pol;
  int64_t policy_id;
  pt_objective obj;
  int stored, evaluated, oom; /* runs made by the search, and those of them that ran out of memory */
  pt_farm *farm;     /* NULL: the runs are made here */
  tune_made *made;   /* with a farm: points made ahead, and the one asked for */
  int nmade, maxmade, next;
} tune_ctx;

/* A point as the assignments a worker takes (what tune_eval sets here). */
static int point_assign(const pt_params *point, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < point->n; i++) {
    char v[256];
    int w = snprintf(buf + len, n - len, "%s=%s\n", point->v[i].name, pt_params_value_text(point, i, v, sizeof v));
    if (w < 0 || (size_t)w >= n - len) return -1;
    len += (size_t)w;
  }
  return 0;
}

static int made_next(void *ctx, pt_farm_job *job, pt_err *err) {
  tune_ctx *c = ctx;
  while (c->next < c->nmade && c->made[c->next].have) c->next++;
  if (c->next >= c->nmade) return 0;
  *job = (pt_farm_job){0, 0, (uint64_t)c->next, c->made[c->next].assign};
  c->next++;
  return 1;
}

static int made_done(void *ctx, uint64_t tag, int failed, const pt_sim_result *res, const pt_err *why, pt_err *err) {
  tune_ctx *c = ctx;
  if (tag >= (uint64_t)c->nmade || c->made[tag].have) return pt_err_set(err, PT_EFORMAT, "a result of no job");
  tune_made *m = &c->made[tag];
  if (failed < 0) { /* a point made ahead may be one the search never reaches: its failure waits until asked for */
    m->have = 1;
    m->rc = failed;
    m->why = *why;
    return 0;
  }
  m->res = *res;
  m->res.timeline = NULL;
  if (res->ntimeline && !(m->res.timeline = malloc(res->ntimeline * sizeof *res->timeline)))
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  if (res->ntimeline) memcpy(m->res.timeline, res->timeline, res->ntimeline * sizeof *res->timeline);
  m->have = 1;
  return 0;
}

/* Room for n more points to make; their slots are made[nmade .. nmade+n). */
static int made_room(tune_ctx *c, int n, pt_err *err) {
  if (c->nmade + n <= c->maxmade) return 0;
  int max = (c->nmade + n) * 2;
  tune_made *m = realloc(c->made, (size_t)max * sizeof *m);
  if (!m) return pt_err_set(err, PT_ENOMEM, "out of memory");
  c->made = m;
  c->maxmade = max;
  return 0;
}

/* Points the search's chains wait for (tune.h), made by the workers side by side, and their values. */
static int tune_prefetch(void *ctx, const pt_params *points, int n, double *values, pt_err *err) {
  tune_ctx *c = ctx;
  int rc = made_room(c, n, err), first = c->nmade;
  for (int i = 0; rc == 0 && i < n; i++) {
    tune_made *m = &c->made[c->nmade];
    memset(m, 0, sizeof *m);
    if (point_assign(&points[i], m->assign, sizeof m->assign) < 0) return pt_err_set(err, PT_ELIMIT, "a point too long");
    c->nmade++;
  }
  if (rc == 0) rc = pt_farm_pump(c->farm, made_next, made_done, c, err);
  for (int i = 0; rc == 0 && i < n; i++) {
    const tune_made *m = &c->made[first + i];
    values[i] = m->have && m->rc == 0 ? pt_objective_value(&c->obj, &m->res) : NAN;
  }
  return rc;
}

/* The workers' result for the point the policy is set to (made now if it was not made ahead), taken out of c->made. */
static int tune_made_result(tune_ctx *c, const pt_params *point, pt_err *err, pt_sim_result *res) {
  char assign[sizeof c->made->assign];
  if (point_assign(point, assign, sizeof assign) < 0) return pt_err_set(err, PT_ELIMIT, "a point too long");
  int i = 0;
  while (i < c->nmade && strcmp(c->made[i].assign, assign)) i++;
  if (i == c->nmade) {
    int rc = made_room(c, 1, err);
    if (rc < 0) return rc;
    memset(&c->made[i], 0, sizeof c->made[i]);
    memcpy(c->made[i].assign, assign, sizeof assign);
    c->nmade++;
    if ((rc = pt_farm_pump(c->farm, made_next, made_done, c, err)) < 0) return rc;
  }
  if (!c->made[i].have) return pt_err_set(err, PT_EIO, "tune: no result came back for %s", assign);
  if (c->made[i].rc < 0) return pt_err_set(err, c->made[i].rc, "%s", c->made[i].why.msg);
  *res = c->made[i].res;
  c->made[i].have = 0; /* the timeline is now *res's; asked for again (past the memo), the point is made again */
  c->made[i].assign[0] = 0;
  c->made[i].res.timeline = NULL;
  return 0;
}

/* Simulate the policy at its current values (point), storing the run if new. */
static int tune_point(tune_ctx *c, const pt_params *point, pt_err *err, pt_sim_result *res) {
  int64_t id;
  int stored = 0;
  int rc;
  if (!c->farm) {
    rc = pt_wb_run(c->env, c->tr, c->pol, c->policy_id, 0, err, &id, &stored, res);
  } else if ((rc = tune_made_result(c, point, err, res)) == 0) { /* as pt_wb_run stores it */
    pt_sim_config cfg;
    pt_wb_config(c->pol, c->env->capacity, c->env->gpu, &cfg);
    char pj[PT_PARAMS_JSON_MAX];
    pt_store_run_key key;
    pt_wb_key(c->tr->id, c->policy_id, &cfg, pj, &key);
    if ((rc = pt_store_find_run(c->env->db, &key, err, &id)) == 0 && !id &&
        (rc = pt_store_put_run(c->env->db, &key, PT_GIT_REVISION, res, err, &id)) == 0)
      stored = 1;
    if (rc < 0) pt_sim_result_free(res);
  }
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
  int rc = tune_point(c, point, err, &res);
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
  pt_tune_opts o = {.budget = (int)a->budget, .starts = 3, .seed = a->seed, .prefetch = c->farm ? tune_prefetch : NULL,
                    .parallel = c->farm ? c->farm->nworkers : 0};
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

/* The search with the runs made here, or by -j N worker processes or a launcher's ranks. */
static int tune_with(const pt_wb_args *a, tune_ctx *c, const pt_farm_launcher *l, pt_err *err) {
  pt_farm f;
  pt_farm_work w = pt_farm_work_of(c->env, &c->tr->t, 1, &c->pol, 1);
  int rc;
  if (l) rc = pt_farm_launched(l, &f, err);
  else if (a->jobs > 1) rc = pt_farm_procs((int)a->jobs, &w, &f, err);
  else return tune(a, c, err);
  if (rc < 0) return rc;
  c->farm = &f;
  rc = tune(a, c, err);
  c->farm = NULL;
  if (l) pt_farm_free(&f);
  else pt_farm_procs_end(&f);
  for (int i = 0; i < c->nmade; i++)
    if (c->made[i].have && c->made[i].rc == 0) pt_sim_result_free(&c->made[i].res);
  free(c->made);
  return rc;
}

static int tune_main(const pt_wb_args *a, const pt_farm_launcher *l, pt_err *err) {
  pt_gpu gpu;
  pt_wb_env env = {.capacity = a->capacity, .timeline = a->timeline ? a->timeline : PT_WB_TL_FULL};
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
      rc = tune_with(a, &c, l, err);
      pt_trace_data_free(&tr.t);
    }
    pt_policy_free(c.pol);
  }
  pt_store_close(env.db);
  return rc;
}

int pt_cmd_tune(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  return pt_farm_command(a, a->timeline ? a->timeline : PT_WB_TL_FULL,
                         a->ntraces != 1 || a->npolicies != 1 ? "needs exactly one --trace and one --policy" : NULL,
                         tune_main, err);
}
