/*
 * cmd_confirm.c — pagetune confirm: the user's own workload run alternately
 * under a baseline configuration and the tuned one, measured, set beside
 * the model's prediction, and stored (docs/confirm.md).
 *
 * In order: the options; the two runs compared (the tuned one stored; the
 * baseline's stored, or simulated now and stored with the measurements);
 * each arm set up as `export` would set it up (PyTorch's allocator through
 * its conf variables, or pagetune's allocator library through the files
 * `export --context` writes) with the measurement hook on PYTHONPATH; the
 * runs; the statistics (work/confirm.h); the store; the output.  Everything
 * confirm writes to the store is written in one transaction after the last
 * run, so a confirm that stops stores nothing.
 */
#include <config.h>

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "confirm.h"
#include "sha256.h"
#include "spawn.h"
#include "datadir.h"
#include "workbench.h"

extern char **environ;

#define MIB 1048576.0
#define MAX_NOTES 8

typedef struct confirm_args {
  const char *db;
  const char *traces[8], *policies[64];
  int ntraces, npolicies, json;
  unsigned long run, runs, seed;
  pt_objective objective;
  const char *baseline;
  int objective_given; /* --objective was given: it chooses the tuned run, as --run names one */
} confirm_args;

static const confirm_args confirm_defaults = {.db = PT_WB_DEFAULT_DB, .objective = {.text = "time", .kind = PT_OBJ_TIME},
                                              .baseline = "pytorch_native", .runs = 5, .seed = 1};

static const pt_cli_opt confirm_opts[] = {
    PT_CLI_OPT_STR("db", 0, "DB", confirm_args, db, "the SQLite database holding the trace's runs (default pagetune.db)"),
    PT_CLI_OPT_LIST("trace", "T", confirm_args, traces, ntraces,
                    "the trace: a name or a prefix of its content hash, or its file\n"
                    "(needed when the baseline's run must be simulated and the\n"
                    "file it was stored from is gone)"),
    PT_CLI_OPT_ULONG("run", "ID", confirm_args, run, 1, LONG_MAX, NULL, "the tuned configuration: this stored run of the trace"),
    PT_CLI_OPT_LIST("policy", "P", confirm_args, policies, npolicies,
                    "otherwise the best run among these policies' (repeatable;\n"
                    "default: among all the trace's runs)"),
    {.name = "objective", .value = "O", .help = "... by time (default), memory or weighted:W, as for best;\n" PT_OBJ_WEIGHTED_HELP,
     .kind = PT_CLI_PARSE, PT_CLI_F_(confirm_args, objective), .parse = pt_cli_opt_objective,
     .suffix = " (time, memory or weighted:W with W in [0,1])", .seen = offsetof(confirm_args, objective_given) + 1},
    PT_CLI_OPT_STR("baseline", 0, "POLICY", confirm_args, baseline,
                   "the baseline: this policy (a file, a bundled name, or one\n"
                   "stored with the trace's runs) with its default parameters\n"
                   "(default pytorch_native: PyTorch's own allocator as it comes)"),
    PT_CLI_OPT_ULONG("runs", "N", confirm_args, runs, 2, 1000, " (2..1000)", "runs of each arm (default 5)"),
    PT_CLI_OPT_ULONG("seed", "S", confirm_args, seed, 0, LONG_MAX, NULL, "the bootstrap's seed (default 1)"),
    PT_CLI_OPT_FLAG("json", confirm_args, json, "one JSON object on stdout instead of the table"),
    PT_CLI_END};

const pt_cli_table pt_opts_confirm = {
    "usage: pagetune confirm [--db DB] --trace T [--run ID | --policy P... [--objective O]]\n"
    "                        [--baseline POLICY] [--runs N] [--seed S] [--json] -- COMMAND [ARG]...\n"
    "\n"
    "Run COMMAND, the workload that made TRACE, alternately under the baseline\n"
    "and the tuned configuration (baseline first), N times each, and set the gain\n"
    "it measures beside the gain the model predicted.\n"
    "\n"
    "The tuned configuration is a stored run of TRACE: --run ID, or the best run by\n"
    "--objective (among --policy P's runs), as `best` chooses it.  The baseline is\n"
    "POLICY with its default parameters at the tuned run's GPU description and\n"
    "capacity; its run is simulated (as sweep would) when the store lacks it, and\n"
    "stored with the measurements.  Each arm runs as `export` configures it: under\n"
    "PyTorch's allocator with PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF set to\n"
    "its conf (neither for PyTorch's defaults; PYTORCH_NO_CUDA_MEMORY_CACHING=1 for\n"
    "direct), or under pagetune's allocator library where PyTorch cannot express\n"
    "the policy: the files `export --context` writes, in a temporary folder,\n"
    "PAGETUNE_CONFIG naming the JSON configuration, PAGETUNE_ALLOC_LIB the library.\n"
    "A cap (--capacity) is the library's to keep; under PyTorch's allocator the\n"
    "workload sets it itself, as the one that made the trace did.\n"
    "\n"
    "COMMAND runs by fork and exec, no shell, with standard input from /dev/null\n"
    "and standard output sent to standard error.  Its environment is confirm's,\n"
    "unchanged except: PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF,\n"
    "PYTORCH_NO_CUDA_MEMORY_CACHING, PAGETUNE_CONFIG, PAGETUNE_ALLOC_CONF,\n"
    "PAGETUNE_ALLOC_LIB, PAGETUNE_DISABLE, PAGETUNE_ON_INSTALL_ERROR,\n"
    "PAGETUNE_ON_FAILURE, PAGETUNE_RECORD and PAGETUNE_CONFIRM_* are removed, then\n"
    "set as the arm needs; PAGETUNE_CONFIRM_ARM is baseline or tuned and\n"
    "PAGETUNE_CONFIRM_OUT names the run's measurement file; PYTHONPATH is\n"
    "prefixed with a folder whose sitecustomize.py loads the measurement hook\n"
    "(pagetune_confirm.py) and, for a library arm, then with the folder of the\n"
    "sitecustomize.py that installs the library.\n"
    "\n"
    "Measured in each run: wall time (the monotonic clock around the child); step\n"
    "times, when the workload calls pagetune_confirm.step() at each step boundary;\n"
    "peak reserved bytes, from torch.cuda.max_memory_reserved() under PyTorch's\n"
    "allocator and from the library's statistics under the library (a workload\n"
    "that is not Python reports neither: wall time only).  The gain is\n"
    "(baseline - tuned) / baseline of the arms' medians, for time (each run's\n"
    "median step time when every run reported steps, else its wall time) and for\n"
    "peak reserved, with a 95% interval by bootstrap over runs (10000 resamples\n"
    "from --seed: the same runs give the same interval).  The predicted time gain\n"
    "is the model's allocator-time saving over the trace as a share of the\n"
    "baseline's measured time (one run of COMMAND taken to make the trace's\n"
    "requests once); the predicted peak gain compares the two runs' peaks.\n"
    "Verdicts: confirmed (the interval excludes 0 on the prediction's side),\n"
    "refuted (it excludes 0 on the other side, or at all when no change was\n"
    "predicted, or holds 0 but not the predicted gain), within noise (it holds 0\n"
    "and the predicted gain); no prediction, not measured.\n"
    "\n"
    "Every run and the summary are stored in DB (tables confirmations and\n"
    "confirm_runs) when the last run is done; `pagetune report` shows them.  A run\n"
    "that exits non-zero stops confirm (exit 1) with nothing stored; SIGINT,\n"
    "SIGTERM, SIGQUIT and SIGHUP sent to confirm are passed on to the running\n"
    "command.  Progress goes to standard error.\n",
    confirm_opts, sizeof(confirm_args), &confirm_defaults, PT_CLI_COMMAND};

/* The variables confirm removes from the environment it passes on, then sets as an arm needs. */
static const char *const alloc_vars[] = {
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PAGETUNE_CONFIG",
    "PAGETUNE_ALLOC_CONF", "PAGETUNE_ALLOC_LIB", "PAGETUNE_DISABLE", "PAGETUNE_ON_INSTALL_ERROR",
    "PAGETUNE_ON_FAILURE", "PAGETUNE_RECORD"};
#define CONFIRM_VAR_PREFIX "PAGETUNE_CONFIRM_"

/* One arm: what it runs and how. */
typedef struct arm {
  pt_confirm_arm which;
  int64_t run_id;                 /* 0 for a baseline simulated now, until it is stored */
  const char *policy, *mechanism, *params_json;
  double predicted_us;            /* NAN without a GPU description */
  uint64_t predicted_peak;
  pt_wb_export *x;
  pt_export_plan plan;
  const char *allocator;          /* "pytorch" or "pagetune" */
  int nset;                       /* the variables it sets */
  char set_name[4][48];
  char set_value[4][4400];
  char pydir[4300];               /* a library arm's folder of the library's sitecustomize.py */
} arm;

typedef struct state {
  const confirm_args *a;
  char **argv;
  int argc;
  pt_store *db;
  pt_store_run *rows;             /* the trace's runs */
  size_t nrows;
  const pt_store_run *tuned;
  pt_store_run *brows;            /* the baseline policy's runs of the trace */
  size_t nbrows;
  const pt_store_run *bstored;    /* the baseline's stored run, or NULL */
  pt_policy *bpol;
  char bpolicy_hash[65];
  pt_gpu gpu;
  const pt_gpu *gpup;
  pt_sim_config bcfg;
  char bparams[PT_PARAMS_JSON_MAX];
  pt_sim_result bres;
  int bsimulated;
  pt_trace_data td;
  int have_td;
  char tmp[4096];                 /* the temporary folder ("" none) */
  char hookdir[4200];
  arm arms[2];
  pt_confirm_run *runs;
  int nruns;
  char started_at[32], hostname[256], gpu_name[PT_CONFIRM_GPU_NAME_MAX];
  int time_steps;                 /* the time is each run's median step */
  pt_confirm_gain time, peak;
  double base_time_s;             /* the baseline's measured time the prediction is a share of */
  int64_t confirmation_id;
  int hook_noted[2];
  char notes[MAX_NOTES][600];
  int nnotes;
} state;

__attribute__((format(printf, 2, 3))) static void note(state *s, const char *fmt, ...) {
  if (s->nnotes == MAX_NOTES) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->notes[s->nnotes++], sizeof s->notes[0], fmt, ap);
  va_end(ap);
}

/* ---- files ------------------------------------------------------------------------------ */

static int copy_file(const char *src, const char *dst, pt_err *err) {
  FILE *in = fopen(src, "rb");
  if (!in) return pt_err_set(err, PT_EIO, "confirm: %s: cannot open: %s", src, strerror(errno));
  FILE *out = fopen(dst, "wb");
  if (!out) {
    int e = errno;
    fclose(in);
    return pt_err_set(err, PT_EIO, "confirm: %s: cannot create: %s", dst, strerror(e));
  }
  char buf[65536];
  size_t n;
  int rc = 0;
  while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) rc = pt_err_set(err, PT_EIO, "confirm: %s: write failed: %s", dst, strerror(errno));
  if (rc == 0 && ferror(in)) rc = pt_err_set(err, PT_EIO, "confirm: %s: read failed", src);
  fclose(in);
  if (fclose(out) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "confirm: %s: write failed: %s", dst, strerror(errno));
  return rc;
}

/* Remove path and, for a folder, what it holds (confirm's own temporary folder only). */
static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char sub[4352];
      if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub) remove_tree(sub);
    }
    if (d) closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* The temporary folder and, in it, hook/: the measurement hook's sitecustomize.py and pagetune_confirm.py. */
static int make_hook(state *s, pt_err *err) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  if (snprintf(s->tmp, sizeof s->tmp, "%s/pagetune-confirm.XXXXXX", base) >= (int)sizeof s->tmp || !mkdtemp(s->tmp)) {
    int e = errno;
    s->tmp[0] = 0;
    return pt_err_set(err, PT_EIO, "confirm: cannot make a temporary folder in %s: %s", base, strerror(e));
  }
  snprintf(s->hookdir, sizeof s->hookdir, "%s/hook", s->tmp);
  if (mkdir(s->hookdir, 0755) != 0) return pt_err_set(err, PT_EIO, "confirm: %s: %s", s->hookdir, strerror(errno));
  static const char *const files[][2] = {{"pagetune_confirm_sitecustomize.py", "sitecustomize.py"},
                                          {"pagetune_confirm.py", "pagetune_confirm.py"}};
  for (size_t i = 0; i < 2; i++) {
    char src[4096], dst[4400];
    if (!pt_wb_find_python(files[i][0], src, sizeof src))
      return pt_err_set(err, PT_ENOTFOUND,
                        "confirm: the measurement hook's %s is not beside the library, in the build tree or in " PT_PKGLIBDIR,
                        files[i][0]);
    snprintf(dst, sizeof dst, "%s/%s", s->hookdir, files[i][1]);
    int rc = copy_file(src, dst, err);
    if (rc < 0) return rc;
  }
  return 0;
}

/* ---- the two runs ----------------------------------------------------------------------- */

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The tuned run: --run, or the best by the objective among --policy's runs. */
static int find_tuned(state *s, pt_err *err) {
  const confirm_args *a = s->a;
  const char *trace = a->traces[0];
  char hash[65];
  if (is_file(trace)) { /* a file: its runs are found by its content */
    int rc = pt_trace_load(trace, NULL, err, &s->td);
    if (rc < 0) return rc;
    s->have_td = 1;
    pt_trace_content_hash(&s->td, hash);
    trace = hash;
  }
  long b = -1;
  int rc = pt_wb_best_of(s->db, trace, a->policies, a->npolicies, &a->objective, err, &s->rows, &s->nrows, &b);
  if (rc < 0) return rc;
  if (!s->nrows) return pt_err_set(err, PT_ENOTFOUND, "%s: no stored run of trace '%s' (sweep or tune it into %s first)", a->db,
                                   a->traces[0], a->db);
  if (a->run) {
    b = -1;
    for (size_t i = 0; i < s->nrows; i++)
      if (s->rows[i].id == (int64_t)a->run) b = (long)i;
    if (b < 0) return pt_err_set(err, PT_ENOTFOUND, "%s: no run %lu of trace '%s'", a->db, a->run, a->traces[0]);
  } else if (b < 0 && !a->npolicies) {
    return pt_wb_no_run(a->db, a->traces[0], &a->objective, s->rows, s->nrows, err);
  } else if (b < 0) {
    return pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s'%s (without OOM%s) to confirm", a->db, a->traces[0],
                      a->npolicies ? " among the policies given" : "", a->objective.kind != PT_OBJ_MEMORY ? ", with a predicted time" : "");
  }
  s->tuned = &s->rows[b];
  if (s->have_td && strcmp(s->tuned->trace_hash, hash)) /* a name matched several traces: not possible for a file */
    return pt_err_set(err, PT_EUSAGE, "%s: run %" PRId64 " is not of trace '%s'", a->db, s->tuned->id, a->traces[0]);
  return 0;
}

/*
 * The baseline: the policy with its defaults at the tuned run's capacity and
 * GPU, its stored run (the tuned run's engine version first, then this one's),
 * or else simulated now from the trace (--trace FILE, or the file the trace was
 * stored from).  Nothing is written to the store here.
 */
static int find_baseline(state *s, pt_err *err) {
  const confirm_args *a = s->a;
  const pt_store_run *t = s->tuned;
  char buf[4096];
  int rc = pt_wb_policy_file(a->baseline, buf, sizeof buf, err);
  if (rc == 0) rc = pt_policy_load(buf, NULL, err, &s->bpol);
  if (rc < 0 && !pt_datadir_is_path(PT_DATA_POLICIES, a->baseline)) {
    /* no such file: the policy of that name as the store keeps it, the newest of the trace's runs' */
    const pt_store_run *named = NULL;
    for (size_t i = 0; i < s->nrows; i++)
      if (!strcmp(s->rows[i].policy, a->baseline) && s->rows[i].trace_id == t->trace_id) named = &s->rows[i];
    char *stext;
    size_t slen;
    pt_err serr;
    if (named && pt_store_policy_text(s->db, named->policy_id, &serr, &stext, &slen) == 0) {
      rc = pt_policy_load_buffer(stext, slen, named->policy, NULL, err, &s->bpol);
      free(stext);
      if (rc == 0)
        note(s, "--baseline %s: no policy file of that name; its text as the store keeps it (policy %" PRId64 ") is used",
             a->baseline, named->policy_id);
    }
  }
  if (rc < 0) return pt_err_prefix(err, rc, "--baseline");
  size_t len;
  const char *text = pt_policy_source(s->bpol, &len);
  pt_sha256_hex(text, len, s->bpolicy_hash);
  if ((rc = pt_wb_gpu(t->gpu[0] ? t->gpu : "none", &s->gpu, &s->gpup, err)) < 0)
    return pt_err_prefix(err, rc, "the tuned run %" PRId64 "'s GPU description '%s'", t->id, t->gpu);
  pt_wb_config(s->bpol, t->capacity, s->gpup, &s->bcfg);
  if (!s->bcfg.mech) return pt_err_set(err, PT_EUSAGE, "--baseline %s: unknown mechanism", a->baseline);
  pt_params_json(&s->bcfg.params, 1, s->bparams, sizeof s->bparams);
  if ((rc = pt_store_runs(s->db, t->trace_hash, s->bpolicy_hash, err, &s->brows, &s->nbrows)) < 0) return rc;
  s->bstored = pt_wb_find_like(s->brows, s->nbrows, s->bparams, t);
  if (s->bstored) {
    if (strcmp(s->bstored->engine_version, t->engine_version))
      note(s, "the baseline's run %" PRId64 " is of engine %s, the tuned run %" PRId64 " of %s: their predictions come from different models",
           s->bstored->id, s->bstored->engine_version, t->id, t->engine_version);
    return 0;
  }
  /* simulate it, as sweep would, from the trace's file */
  if (!s->have_td) {
    char src[4096];
    if ((rc = pt_store_trace_source(s->db, t->trace_id, err, src, sizeof src)) < 0) return rc;
    pt_err lerr;
    char h[65] = "";
    if (is_file(src) && pt_trace_load(src, NULL, &lerr, &s->td) == 0) {
      s->have_td = 1;
      pt_trace_content_hash(&s->td, h);
    }
    if (!s->have_td || strcmp(h, t->trace_hash))
      return pt_err_set(err, PT_ENOTFOUND,
                        "%s: the baseline (%s with its defaults, capacity %" PRIu64 ", GPU '%s') has no stored run of trace '%s', "
                        "and the trace's file is not at '%.200s' to simulate it: give --trace FILE",
                        a->db, pt_policy_name(s->bpol), t->capacity, t->gpu, t->trace, src);
  }
  if ((rc = pt_sim_run(&s->td, &s->bcfg, err, &s->bres)) < 0) return pt_err_prefix(err, rc, "simulating the baseline");
  s->bsimulated = 1;
  if (strcmp(t->engine_version, PT_WB_ENGINE_VERSION))
    note(s, "the baseline was simulated by engine %s, the tuned run %" PRId64 " by %s: their predictions come from different models",
         PT_WB_ENGINE_VERSION, t->id, t->engine_version);
  return 0;
}

/* ---- the arms ----------------------------------------------------------------------------- */

static void arm_set(arm *m, const char *name, const char *value) {
  if (m->nset == 4) return;
  snprintf(m->set_name[m->nset], sizeof m->set_name[0], "%s", name);
  snprintf(m->set_value[m->nset], sizeof m->set_value[0], "%s", value);
  m->nset++;
}

/* How arm m runs: the export's plan, and for the library the files export --context writes. */
static int setup_arm(state *s, arm *m, pt_err *err) {
  int rc = pt_export_plan_of(&m->x->in, &m->plan, err);
  if (rc < 0) return pt_err_prefix(err, rc, "the %s arm", pt_confirm_arm_name(m->which));
  if (m->plan.library && !m->plan.runnable)
    return pt_err_set(err, PT_EFORBID, "the %s arm (%s%s%" PRId64 "): pagetune's allocator library cannot run it: %s; "
                                       "pagetune's model is the only place its hooks run",
                      pt_confirm_arm_name(m->which), m->policy, m->run_id ? ", run " : "", m->run_id, m->plan.refused);
  if (!m->plan.library) {
    m->allocator = "pytorch";
    if (m->plan.conf[0]) {
      arm_set(m, "PYTORCH_ALLOC_CONF", m->plan.conf);
      arm_set(m, "PYTORCH_CUDA_ALLOC_CONF", m->plan.conf);
    }
    for (int i = 0; i < m->plan.nenv; i++) arm_set(m, m->plan.env[i].name, m->plan.env[i].value);
    if (m->x->in.capacity && m->which == PT_CONFIRM_TUNED)
      note(s, "the runs were predicted under a cap of %" PRIu64 " B: under PyTorch's allocator the workload sets it itself "
              "(torch.cuda.set_per_process_memory_fraction%s%s%s), as the one that made the trace did; confirm does not",
           m->x->in.capacity, m->plan.fraction[0] ? "(" : "", m->plan.fraction, m->plan.fraction[0] ? ")" : "");
    return 0;
  }
  m->allocator = "pagetune";
  char dir[4200], dockerfile[4300];
  snprintf(dir, sizeof dir, "%s/%s", s->tmp, pt_confirm_arm_name(m->which));
  pt_wb_lib_files *lf = malloc(sizeof *lf);
  if (!lf) return pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  pt_export_context ctx = {dir, NULL, NULL, NULL};
  pt_wb_find_lib_files(lf, &ctx);
  snprintf(dockerfile, sizeof dockerfile, "%s.Dockerfile", dir);
  FILE *f = fopen(dockerfile, "w");
  if (!f) rc = pt_err_set(err, PT_EIO, "confirm: %s: cannot create: %s", dockerfile, strerror(errno));
  else {
    rc = pt_export_write_context(f, &m->x->in, NULL, &ctx, err);
    if (fclose(f) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "confirm: %s: write failed", dockerfile);
  }
  if (rc == PT_ENOTFOUND) {
    char why[PT_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    pt_err_set(err, rc, "the %s arm needs pagetune's allocator library: %.300s; looked for %s", pt_confirm_arm_name(m->which),
               why, pt_wb_lib_looked(&ctx));
  }
  free(lf);
  if (rc < 0) return rc;
  char v[4400];
  snprintf(m->pydir, sizeof m->pydir, "%s/" PT_EXPORT_CONTEXT_SUBDIR, dir);
  snprintf(v, sizeof v, "%s/pagetune.json", m->pydir);
  arm_set(m, "PAGETUNE_CONFIG", v);
  snprintf(v, sizeof v, "%s/libpagetune_alloc.so", m->pydir);
  arm_set(m, "PAGETUNE_ALLOC_LIB", v);
  return 0;
}

static int setup_arms(state *s, pt_err *err) {
  const pt_store_run *t = s->tuned;
  arm *b = &s->arms[PT_CONFIRM_BASELINE], *u = &s->arms[PT_CONFIRM_TUNED];
  b->which = PT_CONFIRM_BASELINE;
  u->which = PT_CONFIRM_TUNED;
  u->run_id = t->id;
  u->policy = t->policy;
  u->mechanism = t->mechanism;
  u->params_json = t->params_json;
  u->predicted_us = t->r.has_gpu ? t->r.predicted_alloc_us : NAN;
  u->predicted_peak = t->r.peak_reserved_bytes;
  const pt_sim_result *br = s->bstored ? &s->bstored->r : &s->bres;
  b->run_id = s->bstored ? s->bstored->id : 0;
  b->policy = pt_policy_name(s->bpol);
  b->mechanism = pt_policy_mechanism(s->bpol);
  b->params_json = s->bparams;
  b->predicted_us = br->has_gpu ? br->predicted_alloc_us : NAN;
  b->predicted_peak = br->peak_reserved_bytes;
  if (br->ooms) note(s, "the baseline's run had %" PRIu64 " OOMs in the model", br->ooms);
  if (s->bstored && s->bstored->id == t->id) note(s, "the tuned run is the baseline's own: the two arms run one configuration");
  b->x = malloc(sizeof *b->x);
  u->x = malloc(sizeof *u->x);
  if (!b->x || !u->x) return pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  int rc = pt_wb_export_of_run(s->db, t, NULL, u->x, err);
  if (rc == 0)
    rc = s->bstored ? pt_wb_export_of_run(s->db, s->bstored, NULL, b->x, err)
                    : pt_wb_export_of_policy(s->bpol, &s->bcfg.params, t->capacity, t->gpu, t->trace, -1, b->x, err);
  if (rc == 0) rc = make_hook(s, err);
  for (int i = 0; rc == 0 && i < 2; i++) rc = setup_arm(s, &s->arms[i], err);
  return rc;
}

/* ---- the environment ---------------------------------------------------------------------- */

typedef struct envv {
  char **v;
  size_t n, cap;
} envv;

static void env_free(envv *e) {
  for (size_t i = 0; i < e->n; i++) free(e->v[i]);
  free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}

static int env_push(envv *e, char *entry) {
  if (!entry) return -1;
  if (e->n + 2 > e->cap) {
    size_t ncap = e->cap ? 2 * e->cap : 64;
    char **nv = realloc(e->v, ncap * sizeof *nv);
    if (!nv) {
      free(entry);
      return -1;
    }
    e->v = nv;
    e->cap = ncap;
  }
  e->v[e->n++] = entry;
  e->v[e->n] = NULL;
  return 0;
}

static int env_add(envv *e, const char *name, const char *value) {
  size_t len = strlen(name) + strlen(value) + 2;
  char *s = malloc(len);
  if (s) snprintf(s, len, "%s=%s", name, value);
  return env_push(e, s);
}

/* Is entry ("NAME=VALUE") one of the variables confirm sets itself? */
static int is_ours(const char *entry) {
  size_t k = strcspn(entry, "=");
  if (!strncmp(entry, CONFIRM_VAR_PREFIX, strlen(CONFIRM_VAR_PREFIX))) return 1;
  if (k == 10 && !strncmp(entry, "PYTHONPATH", 10)) return 1;
  for (size_t i = 0; i < sizeof alloc_vars / sizeof alloc_vars[0]; i++)
    if (strlen(alloc_vars[i]) == k && !strncmp(entry, alloc_vars[i], k)) return 1;
  return 0;
}

/* The environment of one run of arm m: confirm's own, the allocator variables as m sets them, the hook's. */
static int build_env(const state *s, const arm *m, const char *out, envv *e) {
  int bad = 0;
  for (char **p = environ; *p && !bad; p++)
    if (!is_ours(*p)) bad = env_push(e, strdup(*p));
  for (int i = 0; i < m->nset && !bad; i++) bad = env_add(e, m->set_name[i], m->set_value[i]);
  if (!bad) bad = env_add(e, CONFIRM_VAR_PREFIX "ARM", pt_confirm_arm_name(m->which));
  if (!bad) bad = env_add(e, CONFIRM_VAR_PREFIX "OUT", out);
  const char *old = getenv("PYTHONPATH");
  size_t len = strlen(s->hookdir) + strlen(m->pydir) + (old ? strlen(old) : 0) + 4;
  char *pp = bad ? NULL : malloc(len);
  if (pp)
    snprintf(pp, len, "%s%s%s%s%s", s->hookdir, m->pydir[0] ? ":" : "", m->pydir, old && *old ? ":" : "",
             old && *old ? old : ""); /* an empty PYTHONPATH adds no entry (which would be the working folder) */
  if (!bad) bad = env_add(e, "PYTHONPATH", pp ? pp : "") || !pp;
  free(pp);
  return bad ? -1 : 0;
}

/* ---- the runs ----------------------------------------------------------------------------- */

static const char *arm_how(const arm *m) {
  return !strcmp(m->allocator, "pagetune") ? "pagetune's allocator library" : "PyTorch's allocator";
}

static void describe_status(char *buf, size_t n, const pt_spawn_result *r) {
  if (r->exited) snprintf(buf, n, "exited with status %d", r->status);
  else snprintf(buf, n, "was killed by signal %d (%s)", r->status, strsignal(r->status));
}

static int run_all(state *s, pt_err *err) {
  int total = 2 * (int)s->a->runs;
  s->runs = calloc((size_t)total, sizeof *s->runs);
  if (!s->runs) return pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(s->started_at, sizeof s->started_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int rc = 0;
  for (int k = 0; rc == 0 && k < total; k++) {
    const arm *m = &s->arms[k % 2];
    pt_confirm_run *r = &s->runs[k];
    r->seq = k + 1;
    r->arm = m->which;
    r->run_id = m->run_id;
    r->median_step_s = NAN;
    char out[4300];
    snprintf(out, sizeof out, "%s/measure-%d.jsonl", s->tmp, k + 1);
    unlink(out);
    envv e = {0};
    if (build_env(s, m, out, &e) < 0) {
      env_free(&e);
      return pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
    }
    fprintf(stderr, "confirm: run %d of %d: %s (%s)\n", k + 1, total, pt_confirm_arm_name(m->which), arm_how(m));
    pt_spawn_result res;
    rc = pt_spawn_run(s->argv, e.v, err, &res);
    env_free(&e);
    if (rc < 0) return pt_err_prefix(err, rc, "confirm: run %d of %d (%s)", k + 1, total, pt_confirm_arm_name(m->which));
    if (!res.exited || res.status != 0) {
      char how[160];
      describe_status(how, sizeof how, &res);
      return pt_err_set(err, PT_EIO, "confirm: run %d of %d (%s): '%.200s' %s after %.2f s; nothing stored", k + 1, total,
                        pt_confirm_arm_name(m->which), s->argv[0], how, res.seconds);
    }
    r->wall_s = res.seconds;
    if ((rc = pt_confirm_read(out, &r->m, err)) < 0)
      return pt_err_prefix(err, rc, "confirm: run %d of %d (%s): the measurement file", k + 1, total, pt_confirm_arm_name(m->which));
    s->nruns = k + 1;
    if (r->m.allocator[0] && strcmp(r->m.allocator, m->allocator))
      return pt_err_set(err, PT_EFORMAT,
                        "confirm: run %d of %d (%s): the workload reported running under %s, but the arm was set up for %s; "
                        "nothing stored", k + 1, total, pt_confirm_arm_name(m->which),
                        !strcmp(r->m.allocator, "mixed") ? "both allocators (its processes disagree)"
                        : !strcmp(r->m.allocator, "pagetune") ? "pagetune's allocator library" : "PyTorch's allocator",
                        arm_how(m));
    if (r->m.nsteps) r->median_step_s = pt_confirm_median(r->m.steps_s, r->m.nsteps);
    if (r->m.note[0] && !s->hook_noted[m->which]) { /* once an arm: why a figure is missing, in the hook's words */
      note(s, "run %d (%s): the measurement hook says: %s", k + 1, pt_confirm_arm_name(m->which), r->m.note);
      s->hook_noted[m->which] = 1;
    }
    if (!s->gpu_name[0] && r->m.gpu_name[0]) snprintf(s->gpu_name, sizeof s->gpu_name, "%s", r->m.gpu_name);
    char step[64] = "", peak[64] = "";
    if (r->m.nsteps) snprintf(step, sizeof step, ", median step %.4f s of %zu", r->median_step_s, r->m.nsteps);
    if (r->m.has_peak) snprintf(peak, sizeof peak, ", peak reserved %.1f MiB", (double)r->m.peak_reserved_bytes / MIB);
    fprintf(stderr, "confirm: run %d of %d: %s: %.2f s%s%s%s\n", k + 1, total, pt_confirm_arm_name(m->which), r->wall_s, step,
            peak, r->m.processes ? "" : " (no measurement file: wall time only)");
  }
  return rc;
}

/* ---- statistics -------------------------------------------------------------------------- */

static int analyse(state *s, pt_err *err) {
  size_t n = (size_t)s->a->runs;
  double *bt = malloc(n * sizeof *bt), *tt = malloc(n * sizeof *tt), *bp = malloc(n * sizeof *bp),
         *tp = malloc(n * sizeof *tp), *bw = malloc(n * sizeof *bw);
  int rc = bt && tt && bp && tp && bw ? 0 : pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  size_t nb = 0, nt = 0;
  int steps_all = 1, steps_some = 0, peak_all = 1, peak_some = 0, files_none = 1, several = 0;
  for (int k = 0; k < s->nruns; k++) {
    const pt_confirm_measure *m = &s->runs[k].m;
    steps_all &= m->nsteps > 0;
    steps_some |= m->nsteps > 0;
    peak_all &= m->has_peak;
    peak_some |= m->has_peak;
    files_none &= !m->processes;
    several |= m->processes > 1;
  }
  s->time_steps = steps_all;
  for (int k = 0; rc == 0 && k < s->nruns; k++) {
    const pt_confirm_run *r = &s->runs[k];
    double t = steps_all ? r->median_step_s : r->wall_s;
    double p = peak_all ? (double)r->m.peak_reserved_bytes : NAN;
    if (r->arm == PT_CONFIRM_BASELINE) {
      double sum = 0;
      for (size_t i = 0; i < r->m.nsteps; i++) sum += r->m.steps_s[i];
      bw[nb] = steps_all ? sum : r->wall_s; /* the time a trace's worth of requests is set against */
      bt[nb] = t;
      bp[nb++] = p;
    } else {
      tt[nt] = t;
      tp[nt++] = p;
    }
  }
  if (rc == 0) {
    const arm *b = &s->arms[PT_CONFIRM_BASELINE], *u = &s->arms[PT_CONFIRM_TUNED];
    s->base_time_s = pt_confirm_median(bw, nb);
    s->time.predicted = pt_confirm_time_prediction(b->predicted_us, u->predicted_us, s->base_time_s);
    s->peak.predicted = pt_confirm_peak_prediction(b->predicted_peak, u->predicted_peak);
    rc = pt_confirm_bootstrap(bt, nb, tt, nt, PT_CONFIRM_RESAMPLES, s->a->seed, &s->time, err);
    if (rc == 0)
      rc = pt_confirm_bootstrap(bp, peak_all ? nb : 0, tp, peak_all ? nt : 0, PT_CONFIRM_RESAMPLES, s->a->seed, &s->peak, err);
  }
  if (rc == 0 && !steps_all)
    note(s, "%s: the time compared is each run's wall time",
         steps_some ? "not every run reported step times" : "no run reported step times");
  if (rc == 0 && !peak_all)
    note(s, "%s: peak reserved is not measured",
         files_none  ? "no run wrote a measurement file (a workload that is not Python, or one that never used CUDA through torch)"
         : peak_some ? "not every run reported its peak reserved bytes"
                     : "no run reported its peak reserved bytes");
  if (rc == 0 && several)
    note(s, "some runs had several Python processes report: a run's peak is its largest process's, its steps all of theirs");
  free(bt);
  free(tt);
  free(bp);
  free(tp);
  free(bw);
  return rc;
}

/* ---- JSON text ------------------------------------------------------------------------------ */

/* A stream into memory; mem_close gives what was written, malloc'd (NULL on failure). */
typedef struct mem {
  char *buf;
  size_t len;
  FILE *f;
} mem;

static FILE *mem_open(mem *m) {
  memset(m, 0, sizeof *m);
  return m->f = open_memstream(&m->buf, &m->len);
}

static char *mem_close(mem *m) {
  if (!m->f) return NULL;
  int bad = ferror(m->f);
  fclose(m->f);
  m->f = NULL;
  if (bad) {
    free(m->buf);
    return NULL;
  }
  return m->buf;
}

static void argv_json_to(FILE *f, char **argv, int argc) {
  fputc('[', f);
  for (int i = 0; i < argc; i++) {
    if (i) fputc(',', f);
    pt_json_str(f, argv[i]);
  }
  fputc(']', f);
}

static void env_json_to(FILE *f, const arm *m) {
  fputc('{', f);
  for (int i = 0; i < m->nset; i++) {
    if (i) fputc(',', f);
    pt_json_str(f, m->set_name[i]);
    fputc(':', f);
    pt_json_str(f, m->set_value[i]);
  }
  fputc('}', f);
}

static char *argv_json(char **argv, int argc) {
  mem m;
  if (!mem_open(&m)) return NULL;
  argv_json_to(m.f, argv, argc);
  return mem_close(&m);
}

static char *env_json(const arm *a) {
  mem m;
  if (!mem_open(&m)) return NULL;
  env_json_to(m.f, a);
  return mem_close(&m);
}

/* ---- the store ------------------------------------------------------------------------------ */

static int store(state *s, pt_err *err) {
  char *cmd = argv_json(s->argv, s->argc);
  char *benv = env_json(&s->arms[PT_CONFIRM_BASELINE]), *tenv = env_json(&s->arms[PT_CONFIRM_TUNED]);
  int rc = cmd && benv && tenv ? 0 : pt_err_set(err, PT_ENOMEM, "confirm: out of memory");
  if (rc == 0) rc = pt_store_begin(s->db, err);
  int open = rc == 0;
  if (rc == 0 && s->bsimulated) { /* the baseline's run, as sweep stores it */
    int64_t pid = 0, bid = 0;
    char pj[PT_PARAMS_JSON_MAX];
    pt_store_run_key key;
    rc = pt_wb_put_policy(s->db, s->bpol, err, &pid);
    if (rc == 0) {
      pt_wb_key(s->tuned->trace_id, pid, &s->bcfg, pj, &key);
      rc = pt_store_put_run(s->db, &key, PT_GIT_REVISION, &s->bres, err, &bid);
    }
    if (rc == 0) {
      s->arms[PT_CONFIRM_BASELINE].run_id = bid;
      for (int k = 0; k < s->nruns; k++)
        if (s->runs[k].arm == PT_CONFIRM_BASELINE) s->runs[k].run_id = bid;
    }
  }
  if (rc == 0) {
    const arm *b = &s->arms[PT_CONFIRM_BASELINE], *u = &s->arms[PT_CONFIRM_TUNED];
    pt_store_confirm c = {b->run_id, u->run_id, cmd, (int)s->a->runs, b->allocator, u->allocator, benv, tenv,
                          s->time_steps ? "median_step_s" : "wall_s", s->time, s->peak, PT_CONFIRM_RESAMPLES,
                          (uint64_t)s->a->seed, s->hostname, s->gpu_name, PT_WB_ENGINE_VERSION, PT_GIT_REVISION,
                          s->started_at};
    rc = pt_store_put_confirmation(s->db, &c, s->runs, (size_t)s->nruns, err, &s->confirmation_id);
  }
  if (rc == 0) rc = pt_store_commit(s->db, err);
  else if (open) {
    pt_err rerr;
    (void)pt_store_rollback(s->db, &rerr); /* the error above is the one to report */
  }
  free(cmd);
  free(benv);
  free(tenv);
  return rc;
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_arm_text(const state *s, const arm *m) {
  printf("  %-9s run %" PRId64 "%s, %s (%s) %s\n", pt_confirm_arm_name(m->which), m->run_id,
         m->which == PT_CONFIRM_BASELINE && s->bsimulated ? " (simulated now)" : "", m->policy, m->mechanism, m->params_json);
  printf("            under %s: ", arm_how(m));
  if (!m->nset) {
    printf("PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF unset (PyTorch's defaults)\n");
    return;
  }
  for (int i = 0; i < m->nset; i++) printf("%s%s=%s", i ? ", " : "", m->set_name[i], m->set_value[i]);
  putchar('\n');
}

static void print_text(const state *s) {
  const confirm_args *a = s->a;
  const arm *b = &s->arms[PT_CONFIRM_BASELINE], *u = &s->arms[PT_CONFIRM_TUNED];
  printf("pagetune confirm: trace %s, %lu runs of each arm, stored as confirmation %" PRId64 " in %s\n", s->tuned->trace,
         a->runs, s->confirmation_id, a->db);
  print_arm_text(s, b);
  print_arm_text(s, u);
  printf("  command   ");
  for (int i = 0; i < s->argc; i++) printf("%s%s", i ? " " : "", s->argv[i]);
  printf("\n  host      %s%s%s\n\n", s->hostname[0] ? s->hostname : "?", s->gpu_name[0] ? ", " : "", s->gpu_name);
  printf("  %-18s %10s %10s  %-20s %11s %11s  %s\n", "metric", "predicted", "measured", "95% interval", "baseline", "tuned",
         "verdict");
  const struct {
    const char *name;
    const pt_confirm_gain *g;
    int bytes;
  } rows[] = {{s->time_steps ? "time (median step)" : "time (wall)", &s->time, 0}, {"peak reserved", &s->peak, 1}};
  for (size_t i = 0; i < 2; i++) {
    const pt_confirm_gain *g = rows[i].g;
    char pg[32], mg[32], iv[48], bm[32], tm[32];
    pt_confirm_fmt_gain(pg, sizeof pg, g->predicted);
    pt_confirm_fmt_gain(mg, sizeof mg, g->measured);
    pt_confirm_fmt_interval(iv, sizeof iv, g);
    (rows[i].bytes ? pt_confirm_fmt_mib : pt_confirm_fmt_seconds)(bm, sizeof bm, g->base_median);
    (rows[i].bytes ? pt_confirm_fmt_mib : pt_confirm_fmt_seconds)(tm, sizeof tm, g->tuned_median);
    printf("  %-18s %10s %10s  %-20s %11s %11s  %s\n", rows[i].name, pg, mg, iv, bm, tm, pt_confirm_verdict_name(g->verdict));
  }
  char bu[32], tu[32], bs[32];
  pt_confirm_fmt_seconds(bu, sizeof bu, b->predicted_us * 1e-6);
  pt_confirm_fmt_seconds(tu, sizeof tu, u->predicted_us * 1e-6);
  pt_confirm_fmt_seconds(bs, sizeof bs, s->base_time_s);
  printf("\n  predicted over the trace: allocator time %s (baseline) and %s (tuned), peak reserved %.1f and %.1f MiB;\n"
         "  the predicted time gain is the allocator time saved as a share of the baseline's measured %s, %s\n"
         "  (one run of the command taken to make the trace's requests once).\n",
         bu, tu, (double)b->predicted_peak / MIB, (double)u->predicted_peak / MIB,
         s->time_steps ? "steps (their sum, median run)" : "wall time (median run)", bs);
  printf("  gain = (baseline - tuned) / baseline of the arms' medians; 95%% interval: bootstrap over runs,\n"
         "  %lu resamples, seed %lu.\n", PT_CONFIRM_RESAMPLES, a->seed);
  for (const char *r = PT_CONFIRM_RULE; *r;) { /* the rule, indented */
    size_t k = strcspn(r, "\n");
    printf("  %.*s\n", (int)k, r);
    r += k + (r[k] == '\n');
  }
  for (int i = 0; i < s->nnotes; i++) printf("  note: %s\n", s->notes[i]);
}

static void jnum(double v) {
  if (!isfinite(v)) fputs("null", stdout);
  else printf("%.17g", v);
}

/* Bytes as an integer: a median of an even number of runs may end in .5, rounded here. */
static void jbytes(double v) {
  if (!isfinite(v)) fputs("null", stdout);
  else printf("%.0f", round(v));
}

static void print_gain_json(const char *key, const pt_confirm_gain *g, int bytes, const char *metric) {
  printf("\"%s\":{", key);
  if (metric) printf("\"metric\":\"%s\",", metric);
  fputs("\"predicted_gain\":", stdout);
  jnum(g->predicted);
  fputs(",\"measured_gain\":", stdout);
  jnum(g->measured);
  fputs(",\"interval\":", stdout);
  if (isnan(g->lo)) {
    fputs("null", stdout);
  } else {
    putchar('[');
    jnum(g->lo);
    putchar(',');
    jnum(g->hi);
    putchar(']');
  }
  printf(",\"baseline_median%s\":", bytes ? "_bytes" : "_s");
  (bytes ? jbytes : jnum)(g->base_median);
  printf(",\"tuned_median%s\":", bytes ? "_bytes" : "_s");
  (bytes ? jbytes : jnum)(g->tuned_median);
  printf(",\"verdict\":\"%s\"}", pt_confirm_verdict_name(g->verdict));
}

static void print_arm_json(const state *s, const arm *m) {
  printf("\"%s\":{\"run\":%" PRId64 ",\"simulated_now\":%s,\"policy\":", pt_confirm_arm_name(m->which), m->run_id,
         m->which == PT_CONFIRM_BASELINE && s->bsimulated ? "true" : "false");
  pt_json_str(stdout, m->policy);
  fputs(",\"mechanism\":", stdout);
  pt_json_str(stdout, m->mechanism);
  printf(",\"params\":%s,\"allocator\":\"%s\",\"env\":", m->params_json, m->allocator);
  env_json_to(stdout, m);
  fputs(",\"predicted_alloc_us\":", stdout);
  jnum(m->predicted_us);
  printf(",\"predicted_peak_reserved_bytes\":%" PRIu64 "}", m->predicted_peak);
}

static void print_json(const state *s) {
  const confirm_args *a = s->a;
  printf("{\"confirmation\":%" PRId64 ",\"db\":", s->confirmation_id);
  pt_json_str(stdout, a->db);
  fputs(",\"trace\":", stdout);
  pt_json_str(stdout, s->tuned->trace);
  fputs(",\"trace_hash\":", stdout);
  pt_json_str(stdout, s->tuned->trace_hash);
  fputs(",\"command\":", stdout);
  argv_json_to(stdout, s->argv, s->argc);
  printf(",\"runs_per_arm\":%lu,\"resamples\":%lu,\"seed\":%lu,\"capacity\":%" PRIu64 ",\"gpu\":", a->runs,
         PT_CONFIRM_RESAMPLES, a->seed, s->tuned->capacity);
  pt_json_str(stdout, s->tuned->gpu);
  fputs(",\"hostname\":", stdout);
  pt_json_str(stdout, s->hostname);
  fputs(",\"gpu_name\":", stdout);
  pt_json_str(stdout, s->gpu_name[0] ? s->gpu_name : NULL);
  fputs(",\"started_at\":", stdout);
  pt_json_str(stdout, s->started_at);
  putchar(',');
  print_arm_json(s, &s->arms[PT_CONFIRM_BASELINE]);
  putchar(',');
  print_arm_json(s, &s->arms[PT_CONFIRM_TUNED]);
  putchar(',');
  print_gain_json("time", &s->time, 0, s->time_steps ? "median_step_s" : "wall_s");
  fputs(",\"predicted_time_base_s\":", stdout);
  jnum(s->base_time_s);
  putchar(',');
  print_gain_json("peak_reserved", &s->peak, 1, NULL);
  fputs(",\"runs\":[", stdout);
  for (int k = 0; k < s->nruns; k++) {
    const pt_confirm_run *r = &s->runs[k];
    printf("%s{\"seq\":%d,\"arm\":\"%s\",\"run\":%" PRId64 ",\"wall_s\":", k ? "," : "", r->seq, pt_confirm_arm_name(r->arm),
           r->run_id);
    jnum(r->wall_s);
    printf(",\"steps\":%zu,\"median_step_s\":", r->m.nsteps);
    jnum(r->median_step_s);
    fputs(",\"peak_reserved_bytes\":", stdout);
    if (r->m.has_peak) printf("%" PRIu64, r->m.peak_reserved_bytes);
    else fputs("null", stdout);
    fputs(",\"allocator\":", stdout);
    pt_json_str(stdout, r->m.allocator[0] ? r->m.allocator : NULL);
    printf(",\"processes\":%d}", r->m.processes);
  }
  fputs("],\"rule\":", stdout);
  pt_json_str(stdout, PT_CONFIRM_RULE);
  fputs(",\"notes\":[", stdout);
  for (int i = 0; i < s->nnotes; i++) {
    if (i) putchar(',');
    pt_json_str(stdout, s->notes[i]);
  }
  fputs("]}\n", stdout);
}

/* ---- the command ---------------------------------------------------------------------------- */

static void state_free(state *s) {
  for (int i = 0; i < 2; i++) free(s->arms[i].x);
  for (int k = 0; s->runs && k < 2 * (int)s->a->runs; k++) pt_confirm_measure_free(&s->runs[k].m);
  free(s->runs);
  if (s->tmp[0]) remove_tree(s->tmp);
  if (s->bsimulated) pt_sim_result_free(&s->bres);
  if (s->have_td) pt_trace_data_free(&s->td);
  pt_policy_free(s->bpol);
  free(s->brows);
  free(s->rows);
  pt_store_close(s->db);
}

int pt_cmd_confirm(void *args, char **pos, int npos, pt_err *err) {
  const confirm_args *a = args;
  if (a->ntraces != 1) return pt_cli_usage(err, "needs exactly one --trace");
  if (a->run && a->npolicies) return pt_cli_usage(err, "--run and --policy do not go together");
  if (a->run && a->objective_given) return pt_cli_usage(err, "--run and --objective do not go together");
  if (npos > 0 && strcmp(pos[-1], "--"))
    return pt_cli_usage(err, "the command goes after '--' (unexpected argument '%s')", pos[0]);
  if (npos == 0)
    return pt_cli_usage(err, "needs COMMAND to run: give it after '--' (pagetune confirm ... -- python3 train.py)");
  state *s = calloc(1, sizeof *s);
  if (!s) return pt_err_set(err, PT_ENOMEM, "out of memory");
  s->a = a;
  s->argv = pos;
  s->argc = npos;
  if (gethostname(s->hostname, sizeof s->hostname) != 0) s->hostname[0] = 0;
  s->hostname[sizeof s->hostname - 1] = 0;
  int rc = 0;
  struct stat st;
  if (stat(a->db, &st) != 0)
    rc = pt_err_set(err, PT_ENOTFOUND, "%s: no such database (%s); sweep or tune the trace into it first", a->db, strerror(errno));
  if (rc == 0) rc = pt_store_open(a->db, 0, err, &s->db);
  if (rc == 0) rc = find_tuned(s, err);
  if (rc == 0) rc = find_baseline(s, err);
  if (rc == 0) rc = setup_arms(s, err);
  if (rc == 0) rc = run_all(s, err);
  if (rc == 0) rc = analyse(s, err);
  if (rc == 0) rc = store(s, err);
  if (rc == 0) {
    if (a->json) print_json(s);
    else print_text(s);
  }
  state_free(s);
  free(s);
  return rc == PT_EUSAGE ? PT_EFORMAT : rc; /* what went wrong past the options is bad input (exit 1), not usage */
}
