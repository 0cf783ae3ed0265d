/*
 * cmd_sweep.c — pagetune sweep: every trace under every policy for every
 * combination of the --grid values, each run stored (and skipped when it is
 * stored already, so an interrupted sweep resumes).
 */
#include <config.h>

#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "farm.h"
#include "workbench.h"

static const pt_cli_opt sweep_opts[] = {
    PT_CLI_OPT_STR("db", 0, "DB", pt_wb_args, db, "the SQLite database (default pagetune.db; created if missing)"),
    PT_WB_OPT_TRACE("a trace or PyTorch snapshot (repeatable)"),
    PT_WB_OPT_POLICY("a policy file or bundled name (repeatable)"),
    PT_CLI_OPT_PARSE_MANY("grid", "NAME=LIST", pt_wb_args, grid, pt_cli_opt_grid,
                          " (NAME=A,B,C, each NAME once, a list value whole in its brackets; at most 8 grids of 64 "
                          "values of 127 bytes)",
                          "values for a parameter, comma-separated (repeatable, a NAME once); a list value\n"
                          "is one value, its commas inside brackets: roundup_power2_divisions=4,[256:1,512:2,>:8]"),
    PT_WB_OPT_CAPACITY,
    PT_WB_OPT_GPU("GPU description for predicted times (default h200):\n" PT_WB_GPU_RULE),
    PT_WB_OPT_TIMELINE("default thin"),
    PT_WB_OPT_JOBS("N worker processes simulate, this one stores (default 1: it does both);\n"
                   "the same runs and results as -j 1, handed out biggest trace first"),
    PT_WB_OPT_BROADCAST,
    PT_WB_OPT_JSON("a JSON summary on stdout"),
    PT_CLI_END};
const pt_cli_table pt_opts_sweep = {
    "usage: pagetune sweep [--db DB] --trace T... --policy P... [--grid NAME=A,B,C]...\n"
    "                      [--capacity BYTES] [--gpu NAME] [--timeline full|thin|none]\n"
    "                      [-j N] [--broadcast-traces] [--json]\n"
    "       mpirun -n N pagetune-mpi sweep ...   (pagetune-mpi: configure --with-mpi;\n"
    "                                   rank 0 stores, the other ranks simulate)\n"
    "\n"
    "Simulate every trace under every policy, for every combination of the --grid\n"
    "values (applied to the policies that declare that parameter), and store each\n"
    "result in DB (default pagetune.db).  A run already stored (same trace\n"
    "content, policy text, parameters, capacity, GPU and engine version) is\n"
    "skipped, so an interrupted sweep resumes where it stopped.  Progress goes to\n"
    "stderr: a bar on a terminal, one line a run otherwise.  With workers (-j N,\n"
    "or the ranks of pagetune-mpi) this process is the only one that writes DB;\n"
    "it commits every 0.5 s, so a killed sweep loses at most the runs of its last\n"
    "half second and those the workers held, and running it again completes it.\n"
    "\n"
    "Environment: PAGETUNE_NOOP_ENGINE=1 makes workers answer without simulating\n"
    "(zero results), to measure what the writer alone can store: a scratch DB only.\n",
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

/* Grid combination k (mixed radix over the axes the policy declares) as assignment lines, into buf. */
static int grid_assign(const pt_policy *pol, const pt_grid *g, size_t k, char *buf, size_t n, pt_err *err) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < g->n; i++) {
    const pt_grid_axis *ax = &g->axis[i];
    if (!policy_declares(pol, ax->name)) continue;
    int w = snprintf(buf + len, n - len, "%s=%s\n", ax->name, ax->values[k % (size_t)ax->n]);
    if (w < 0 || (size_t)w >= n - len) return pt_err_set(err, PT_ELIMIT, "--grid: a combination too long");
    len += (size_t)w;
    k /= (size_t)ax->n;
  }
  return 0;
}

static size_t grid_size(const pt_policy *pol, const pt_grid *g) {
  size_t n = 1;
  for (int i = 0; i < g->n; i++)
    if (policy_declares(pol, g->axis[i].name)) n *= (size_t)g->axis[i].n;
  return n;
}

#define ASSIGN_MAX 2048 /* PT_GRID_AXES lines of a name and a value */

/* A run of the sweep: trace, policy, grid combination. */
typedef struct sweep_job {
  uint32_t trace, policy;
  size_t k;
  size_t cost; /* the trace's records: what a run of it costs, near enough */
} sweep_job;

typedef struct sweep_state {
  const pt_wb_args *a;
  pt_wb_env env;
  pt_policy *pols[64];
  int64_t pids[64];
  pt_wb_trace *trs;
  int ntr, npol;
  size_t stored, skipped;
  progress pr;
  /* with workers: every run, in the order handed out, and the next one */
  sweep_job *jobs;
  size_t njobs, next;
  char assign[ASSIGN_MAX];
  double committed; /* when the open batch began */
} sweep_state;

/* Set policy p to job j's values and say what the run is (for the progress line). */
static int sweep_set(sweep_state *s, const sweep_job *j, char *what, size_t n, pt_err *err) {
  int rc = grid_assign(s->pols[j->policy], &s->a->grid, j->k, s->assign, sizeof s->assign, err);
  if (rc == 0) rc = pt_farm_assign(s->pols[j->policy], s->assign, err);
  if (rc < 0 || !what) return rc;
  char pj[PT_PARAMS_JSON_MAX];
  pt_params cur;
  pt_policy_params(s->pols[j->policy], &cur);
  pt_params_json(&cur, 1, pj, sizeof pj);
  snprintf(what, n, "%.40s %.40s %.110s", pt_wb_base_name(s->a->traces[j->trace]), pt_policy_name(s->pols[j->policy]), pj);
  return 0;
}

/* The key of policy p's current values on trace t. */
static void sweep_key(sweep_state *s, uint32_t t, uint32_t p, char *pj, pt_store_run_key *key) {
  pt_sim_config cfg;
  pt_wb_config(s->pols[p], s->env.capacity, s->env.gpu, &cfg);
  pt_wb_key(s->trs[t].id, s->pids[p], &cfg, pj, key);
}

/* Every run, one after another in this process, skipping those stored already. */
static int sweep_here(sweep_state *s, pt_err *err) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < s->njobs; i++) {
    const sweep_job *j = &s->jobs[i];
    char what[200];
    if ((rc = sweep_set(s, j, what, sizeof what, err)) < 0) break;
    int64_t id;
    int ran;
    pt_sim_result res;
    if ((rc = pt_wb_run(&s->env, &s->trs[j->trace], s->pols[j->policy], s->pids[j->policy], 1, err, &id, &ran, &res)) < 0)
      break;
    pt_sim_result_free(&res);
    ran ? s->stored++ : s->skipped++;
    progress_step(&s->pr, what, ran);
  }
  return rc;
}

/* The farm's next job: the next run not stored already (those are counted as skipped). */
static int sweep_next(void *ctx, pt_farm_job *job, pt_err *err) {
  sweep_state *s = ctx;
  while (s->next < s->njobs) {
    size_t i = s->next++;
    const sweep_job *j = &s->jobs[i];
    char what[200], pj[PT_PARAMS_JSON_MAX];
    int rc = sweep_set(s, j, what, sizeof what, err);
    pt_store_run_key key;
    int64_t id = 0;
    if (rc == 0) sweep_key(s, j->trace, j->policy, pj, &key);
    if (rc == 0) rc = pt_store_find_run(s->env.db, &key, err, &id);
    if (rc < 0) return rc;
    if (!id) {
      *job = (pt_farm_job){j->trace, j->policy, i, s->assign};
      return 1;
    }
    s->skipped++;
    progress_step(&s->pr, what, 0);
  }
  return 0;
}

/* A batch is committed at least this often (a kill loses at most the open one). */
#define SWEEP_COMMIT_S 0.5

/* A run a worker made: stored by the writer, under the key its values make here. */
static int sweep_done(void *ctx, uint64_t tag, int failed, const pt_sim_result *res, const pt_err *why, pt_err *err) {
  sweep_state *s = ctx;
  if (failed < 0) return pt_err_set(err, failed, "%s", why->msg); /* as a sweep alone stops at a failed run */
  if (tag >= s->njobs) return pt_err_set(err, PT_EFORMAT, "a result of no job (%" PRIu64 ")", tag);
  const sweep_job *j = &s->jobs[tag];
  char what[200], pj[PT_PARAMS_JSON_MAX];
  int rc = sweep_set(s, j, what, sizeof what, err);
  pt_store_run_key key;
  int64_t id;
  if (rc == 0) sweep_key(s, j->trace, j->policy, pj, &key);
  if (rc == 0) rc = pt_store_put_run(s->env.db, &key, PT_GIT_REVISION, res, err, &id);
  if (rc == 0 && pt_clock_s() - s->committed >= SWEEP_COMMIT_S) {
    rc = pt_store_commit(s->env.db, err);
    if (rc == 0) rc = pt_store_begin(s->env.db, err);
    s->committed = pt_clock_s();
  }
  if (rc < 0) return rc;
  s->stored++;
  progress_step(&s->pr, what, 1);
  return 0;
}

/* Biggest trace first (a stable order: within a trace, the sweep's own). */
static int by_cost(const void *x, const void *y) {
  const sweep_job *a = x, *b = y;
  if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
  if (a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  if (a->policy != b->policy) return a->policy < b->policy ? -1 : 1;
  return a->k < b->k ? -1 : a->k > b->k;
}

/* The runs through a farm's workers, stored here in batches. */
static int sweep_farm(sweep_state *s, pt_farm *f, pt_err *err) {
  qsort(s->jobs, s->njobs, sizeof *s->jobs, by_cost);
  int rc = pt_store_begin(s->env.db, err);
  s->committed = pt_clock_s();
  if (rc == 0) rc = pt_farm_pump(f, sweep_next, sweep_done, s, err);
  pt_err cerr;
  int c = rc == 0 ? pt_store_commit(s->env.db, err) : pt_store_commit(s->env.db, &cerr); /* what finished is kept */
  return rc < 0 ? rc : c;
}

/* Every run of the loaded traces and policies, skipping those stored already. */
static int sweep(sweep_state *s, const pt_farm_launcher *l, pt_err *err) {
  const pt_wb_args *a = s->a;
  s->pr.t0 = pt_clock_s();
  for (int p = 0; p < s->npol; p++) s->pr.total += grid_size(s->pols[p], &a->grid) * (size_t)s->ntr;
  if (!(s->jobs = calloc(s->pr.total ? s->pr.total : 1, sizeof *s->jobs))) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (int ti = 0; ti < s->ntr; ti++)
    for (int p = 0; p < s->npol; p++)
      for (size_t k = 0, n = grid_size(s->pols[p], &a->grid); k < n; k++)
        s->jobs[s->njobs++] = (sweep_job){(uint32_t)ti, (uint32_t)p, k, s->trs[ti].t.n};
  if (l) {
    pt_farm f;
    int rc = pt_farm_launched(l, &f, err);
    if (rc == 0) rc = sweep_farm(s, &f, err);
    pt_farm_free(&f);
    return rc;
  }
  if (a->jobs <= 1) return sweep_here(s, err);
  pt_trace_data *ts = calloc((size_t)s->ntr, sizeof *ts);
  if (!ts) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (int i = 0; i < s->ntr; i++) ts[i] = s->trs[i].t;
  pt_farm_work w = pt_farm_work_of(&s->env, ts, s->ntr, s->pols, s->npol);
  pt_farm f;
  int rc = pt_farm_procs((int)a->jobs, &w, &f, err);
  if (rc == 0) rc = sweep_farm(s, &f, err);
  pt_farm_procs_end(&f);
  free(ts);
  return rc;
}

static int sweep_main(const pt_wb_args *a, const pt_farm_launcher *l, pt_err *err) {
  pt_gpu gpu;
  sweep_state s = {.a = a, .env = {.capacity = a->capacity, .timeline = a->timeline ? a->timeline : PT_WB_TL_THIN},
                   .pr = {.tty = isatty(2)}};
  int rc = pt_wb_gpu(a->gpu, &gpu, &s.env.gpu, err);
  if (rc < 0) return rc;
  s.trs = calloc((size_t)a->ntraces, sizeof *s.trs);
  rc = s.trs ? 0 : pt_err_set(err, PT_ENOMEM, "out of memory");
  /* the policies and the grid first: a bad one is said before the database is made or touched */
  for (int i = 0; rc == 0 && i < a->npolicies; i++)
    if ((rc = pt_wb_load_policy(NULL, a->policies[i], err, &s.pols[i], NULL)) == 0) s.npol++;
  /* unknown grid names are a usage error: no policy declares them */
  for (int g = 0; rc == 0 && g < a->grid.n; g++) {
    int any = 0;
    for (int p = 0; p < s.npol; p++) any |= policy_declares(s.pols[p], a->grid.axis[g].name);
    if (!any) rc = pt_err_set(err, PT_EUSAGE, "--grid %s: no policy given declares that parameter", a->grid.axis[g].name);
  }
  /* and every value of a grid one each policy declaring it takes, before any run (each run sets its own) */
  for (int g = 0; rc == 0 && g < a->grid.n; g++)
    for (int p = 0; rc == 0 && p < s.npol; p++)
      for (int v = 0; rc == 0 && policy_declares(s.pols[p], a->grid.axis[g].name) && v < a->grid.axis[g].n; v++) {
        char as[PT_PARAM_NAME_MAX + 1100];
        snprintf(as, sizeof as, "%s=%s", a->grid.axis[g].name, a->grid.axis[g].values[v]);
        rc = pt_policy_set_as(s.pols[p], as, "--grid", err);
      }
  if (rc == 0) rc = pt_store_open(a->db, 0, err, &s.env.db);
  for (int p = 0; rc == 0 && p < s.npol; p++) rc = pt_wb_put_policy(s.env.db, s.pols[p], err, &s.pids[p]);
  for (int i = 0; rc == 0 && i < a->ntraces; i++)
    if ((rc = pt_wb_load_trace(s.env.db, a->traces[i], err, &s.trs[i])) == 0) s.ntr++;
  if (rc == 0) rc = sweep(&s, l, err);
  for (int p = 0; p < s.npol; p++) pt_policy_free(s.pols[p]);
  for (int t = 0; t < s.ntr; t++) pt_trace_data_free(&s.trs[t].t);
  free(s.trs);
  free(s.jobs);
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

int pt_cmd_sweep(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  return pt_farm_command(a, a->timeline ? a->timeline : PT_WB_TL_THIN,
                         !a->ntraces || !a->npolicies ? "needs at least one --trace and one --policy" : NULL, sweep_main,
                         err);
}
