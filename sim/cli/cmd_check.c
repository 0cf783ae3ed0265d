/*
 * cmd_check.c — pagetune check: a gate for CI.  The settings a workload runs
 * with today (a PYTORCH_CUDA_ALLOC_CONF value) against a change (a stored
 * run: --run, or the best by --objective among --policy's runs), on one
 * trace; exit 1 when the change's peak reserved memory, or its predicted
 * allocator time, is more than the allowed ratio of the baseline's.
 *
 * The baseline is the bundled policy that models the conf (pytorch_native,
 * pytorch_expandable or cuda_async) with the conf's knobs, at the change's
 * capacity and GPU description: its stored run when there is one, else
 * simulated here from the trace's file.  Nothing is written to the store,
 * so a CI job can check against a read-only database.
 */
#include <config.h>

#include "cli.h"
#include "allocconf.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sha256.h"
#include "workbench.h"

/* The workbench's options first, so that PT_WB_OPT_* (offsets into pt_wb_args) fill wb. */
typedef struct check_args {
  pt_wb_args wb;
  const char *baseline;
  double max_peak, max_time; /* NAN: not given */
} check_args;

static const check_args check_defaults = {PT_WB_DEFAULTS, NULL, NAN, NAN};

/* A ratio limit: a finite number > 0 (1.05 allows 5% worse; 1 allows nothing worse). */
static const pt_cli_opt check_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("the trace: a file, a stored name or a prefix of its content hash (one)"),
    PT_CLI_OPT_STR("baseline", 0, "CONF", check_args, baseline,
                   "the settings run today: a PYTORCH_CUDA_ALLOC_CONF value ('' for\n"
                   "PyTorch's defaults), modelled by pytorch_native, pytorch_expandable\n"
                   "(expandable_segments:True) or cuda_async (backend:cudaMallocAsync)"),
    PT_CLI_OPT_PARSE("max-peak-ratio", "R", check_args, max_peak, pt_cli_opt_positive, " (a number > 0)",
                     "fail when the change's peak reserved bytes exceed R x the baseline's"),
    PT_CLI_OPT_PARSE("max-time-ratio", "R", check_args, max_time, pt_cli_opt_positive, " (a number > 0)",
                     "fail when its predicted allocator time exceeds R x the baseline's\n"
                     "(both runs need a GPU description)"),
    PT_WB_OPT_POLICY("the change is the best run of these policies (names or text-hash\n"
                     "prefixes; default: every stored run of the trace)"),
    PT_CLI_OPT_ULONG("run", "ID", pt_wb_args, run, 1, LONG_MAX, NULL, "the change is this stored run (instead of the best)"),
    PT_WB_OPT_OBJECTIVE("how the best run is chosen: time (default), memory, or weighted:W;"),
    PT_WB_OPT_JSON("one JSON object: both runs, each limit with its ratio and verdict, pass"),
    PT_CLI_END};
const pt_cli_table pt_opts_check = {
    "usage: pagetune check [--db DB] --trace T --baseline CONF --max-peak-ratio R\n"
    "                      [--max-time-ratio R] [--policy P]... [--run ID] [--objective O] [--json]\n"
    "\n"
    "For CI: is a change of allocator settings no worse than what runs today?\n"
    "The change is a stored run of TRACE (--run, or the best by the objective\n"
    "among --policy's runs, as best chooses it); the baseline is CONF, the\n"
    "PYTORCH_CUDA_ALLOC_CONF value deployed now, modelled at the change's\n"
    "capacity and GPU description (its stored run, or simulated from the trace's\n"
    "file; nothing is stored).  One verdict line per limit, PASS or FAIL; exit 0\n"
    "when every limit holds, 1 when one does not (or the change ran out of\n"
    "memory), or on bad input, 2 on bad usage.\n"
    "A command of its own rather than thresholds on best or diff: best chooses\n"
    "among stored runs and diff compares two of them, while a gate compares a\n"
    "change with the settings in production, which are a conf value, not a run.\n",
    check_opts, sizeof(check_args), &check_defaults, 0};

/* ---- the baseline: a conf as a bundled policy ------------------------------------------ */

/*
 * The bundled policy that models conf and the assignments to make on it
 * (pt_conf_model_of, what sim --conf reads too).  Keys that do not change
 * what the model sees (release_lock_on_cudamalloc, pinned_*; native knobs
 * under cudaMallocAsync, which PyTorch ignores there) are named in notes;
 * per_process_memory_fraction too, since the baseline runs under the
 * compared run's cap.  A key the model does not model but that would change
 * the run is refused: a baseline that silently drops one would be another
 * setting than the one deployed.
 */
static int conf_policy(const char *conf, pt_conf_model *m, char *notes, size_t nn, pt_err *err) {
  char what[256];
  snprintf(what, sizeof what, "--baseline '%.200s'", conf);
  notes[0] = 0;
  pt_conf *c = calloc(1, sizeof *c);
  if (!c) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_conf_read(c, conf, "--baseline");
  int rc = pt_conf_model_of(c, what, m, err);
  if (rc == 0 && pt_conf_value(c, "per_process_memory_fraction")) m->ignored |= 1u << pt_conf_key("per_process_memory_fraction");
  for (int k = 0; rc == 0 && k < pt_conf_nkeys(); k++)
    if (m->unmodelled >> k & 1u)
      rc = pt_err_set(err, PT_EFORMAT, "%s: %s is not modelled by %s", what, pt_conf_key_name(k), m->policy);
  size_t len = 0;
  for (int k = 0; rc == 0 && k < pt_conf_nkeys(); k++)
    if ((m->ignored >> k & 1u) && len < nn) len += (size_t)snprintf(notes + len, nn - len, "%s%s", len ? ", " : "", pt_conf_key_name(k));
  free(c);
  return rc;
}

/* ---- the two runs ------------------------------------------------------------------------ */

typedef struct check_state {
  const check_args *a;
  pt_store *db;
  pt_store_run *rows;        /* the trace's runs */
  size_t nrows;
  const pt_store_run *cand;  /* the change */
  const char *bpolicy;       /* the baseline's policy name */
  pt_policy *bpol;
  char bparams[PT_PARAMS_JSON_MAX], ignored[512];
  pt_store_run *brows;       /* the baseline policy's runs of the trace */
  size_t nbrows;
  const pt_store_run *bstored; /* its stored run, or NULL: simulated */
  pt_sim_result bres;
  int bsimulated;
  pt_gpu gpu;
  const pt_gpu *gpup;
} check_state;

static int is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int find_change(check_state *s, pt_err *err) {
  const check_args *a = s->a;
  long b = -1;
  int rc = pt_wb_best_of(s->db, a->wb.traces[0], (const char *const *)a->wb.policies, a->wb.npolicies, &a->wb.objective,
                         err, &s->rows, &s->nrows, &b);
  if (rc < 0) return rc;
  if (a->wb.run) {
    b = -1;
    for (size_t i = 0; i < s->nrows; i++)
      if (s->rows[i].id == (int64_t)a->wb.run) b = (long)i;
    if (b < 0) return pt_err_set(err, PT_ENOTFOUND, "%s: no run %lu of trace '%s'", a->wb.db, a->wb.run, a->wb.traces[0]);
  } else if (b < 0) {
    return pt_wb_no_run(a->wb.db, a->wb.traces[0], &a->wb.objective, s->rows, s->nrows, err);
  }
  s->cand = &s->rows[b];
  return 0;
}

/* The trace's records, from --trace when it is the file, else from the file the store names. */
static int load_trace(check_state *s, pt_trace_data *td, pt_err *err) {
  const pt_store_run *c = s->cand;
  char src[4096], hash[65] = "";
  int rc = 0;
  if (is_file(s->a->wb.traces[0])) snprintf(src, sizeof src, "%s", s->a->wb.traces[0]);
  else if ((rc = pt_store_trace_source(s->db, c->trace_id, err, src, sizeof src)) < 0) return rc;
  pt_err lerr;
  int have = is_file(src) && pt_trace_load(src, NULL, &lerr, td) == 0;
  if (have) pt_trace_content_hash(td, hash);
  if (have && !strcmp(hash, c->trace_hash)) return 0;
  if (have) pt_trace_data_free(td);
  return pt_err_set(err, PT_ENOTFOUND,
                    "%s: the baseline (%s %s, capacity %" PRIu64 ", GPU '%s') has no stored run of trace '%s', and the "
                    "trace's file is not at '%.200s' to simulate it: give --trace FILE",
                    s->a->wb.db, s->bpolicy, s->bparams, c->capacity, c->gpu, c->trace, src);
}

static int find_baseline(check_state *s, pt_err *err) {
  const pt_store_run *c = s->cand;
  pt_conf_model m;
  int rc = conf_policy(s->a->baseline, &m, s->ignored, sizeof s->ignored, err);
  if (rc < 0) return rc; /* its message names --baseline */
  s->bpolicy = m.policy;
  char buf[4096];
  rc = pt_wb_policy_file(s->bpolicy, buf, sizeof buf, err);
  if (rc == 0) rc = pt_policy_load(buf, NULL, err, &s->bpol);
  for (int i = 0; rc == 0 && i < m.nsets; i++) rc = pt_policy_set(s->bpol, m.sets[i], err);
  if (rc < 0) return pt_err_prefix(err, rc, "--baseline '%.200s'", s->a->baseline);
  if ((rc = pt_wb_gpu(c->gpu[0] ? c->gpu : "none", &s->gpu, &s->gpup, err)) < 0)
    return pt_err_prefix(err, rc, "run %" PRId64 "'s GPU description '%s'", c->id, c->gpu);
  pt_sim_config cfg;
  pt_wb_config(s->bpol, c->capacity, s->gpup, &cfg);
  pt_params_json(&cfg.params, 1, s->bparams, sizeof s->bparams);
  size_t len;
  const char *text = pt_policy_source(s->bpol, &len);
  char phash[65];
  pt_sha256_hex(text, len, phash);
  if ((rc = pt_store_runs(s->db, c->trace_hash, phash, err, &s->brows, &s->nbrows)) < 0) return rc;
  if ((s->bstored = pt_wb_find_like(s->brows, s->nbrows, s->bparams, c))) return 0;
  pt_trace_data td;
  if ((rc = load_trace(s, &td, err)) < 0) return rc;
  rc = pt_sim_run(&td, &cfg, err, &s->bres);
  pt_trace_data_free(&td);
  if (rc < 0) return pt_err_prefix(err, rc, "simulating the baseline");
  s->bsimulated = 1;
  return 0;
}

/* ---- the verdicts ------------------------------------------------------------------------ */

typedef struct limit {
  const char *metric, *label;
  double cand, base, ratio, max;
  int pass;
} limit;

static double ratio_of(double cand, double base) { return base > 0 ? cand / base : cand > 0 ? INFINITY : 1; }

static void json_num(double v) {
  if (isfinite(v)) printf("%.17g", v);
  else fputs("null", stdout);
}

static void print_json(const check_state *s, const pt_sim_result *br, const limit *l, int nl, int pass) {
  const pt_store_run *c = s->cand;
  printf("{\"pass\":%s,\"trace\":", pass ? "true" : "false");
  pt_json_str(stdout, c->trace);
  printf(",\"change\":{\"run\":%" PRId64 ",\"policy\":", c->id);
  pt_json_str(stdout, c->policy);
  printf(",\"params\":%s,\"capacity\":%" PRIu64 ",\"gpu\":", c->params_json, c->capacity);
  pt_json_str(stdout, c->gpu);
  printf(",\"peak_reserved_bytes\":%" PRIu64 ",\"ooms\":%" PRIu64 ",\"predicted_alloc_us\":", c->r.peak_reserved_bytes,
         c->r.ooms);
  json_num(c->r.has_gpu ? c->r.predicted_alloc_us : NAN);
  fputs("},\"baseline\":{\"conf\":", stdout);
  pt_json_str(stdout, s->a->baseline);
  fputs(",\"run\":", stdout);
  if (s->bstored) printf("%" PRId64, s->bstored->id);
  else fputs("null", stdout);
  fputs(",\"policy\":", stdout);
  pt_json_str(stdout, s->bpolicy);
  printf(",\"params\":%s,\"ignored\":", s->bparams);
  pt_json_str(stdout, s->ignored);
  printf(",\"peak_reserved_bytes\":%" PRIu64 ",\"ooms\":%" PRIu64 ",\"predicted_alloc_us\":", br->peak_reserved_bytes,
         br->ooms);
  json_num(br->has_gpu ? br->predicted_alloc_us : NAN);
  fputs("},\"limits\":[", stdout);
  for (int i = 0; i < nl; i++) {
    printf("%s{\"metric\":\"%s\",\"change\":", i ? "," : "", l[i].metric);
    json_num(l[i].cand);
    fputs(",\"baseline\":", stdout);
    json_num(l[i].base);
    fputs(",\"ratio\":", stdout);
    json_num(l[i].ratio);
    fputs(",\"max_ratio\":", stdout);
    json_num(l[i].max);
    printf(",\"pass\":%s}", l[i].pass ? "true" : "false");
  }
  puts("]}");
}

static void fmt_value(char *buf, size_t n, const limit *l, double v) {
  if (!strcmp(l->metric, "ooms")) snprintf(buf, n, "%.0f", v);
  else if (!strcmp(l->metric, "peak_reserved_bytes")) snprintf(buf, n, "%.1f MiB", v / 1048576.0);
  else snprintf(buf, n, "%.1f us", v);
}

static void print_text(const check_state *s, const pt_sim_result *br, const limit *l, int nl) {
  const pt_store_run *c = s->cand;
  printf("change:   run %" PRId64 ", %s %s\n", c->id, c->policy, c->params_json);
  printf("baseline: '%s' as %s %s, ", s->a->baseline, s->bpolicy, s->bparams);
  if (s->bstored) printf("run %" PRId64 "\n", s->bstored->id);
  else puts("simulated now (not stored)");
  if (s->ignored[0]) printf("          keys that change nothing the model runs (PyTorch ignores them here, or they\n"
                                  "          do not touch device memory): %s\n", s->ignored);
  if (br->ooms) printf("          the baseline ran out of memory (%" PRIu64 " requests) at capacity %" PRIu64 "\n", br->ooms, c->capacity);
  for (int i = 0; i < nl; i++) {
    char a[48], b[48];
    fmt_value(a, sizeof a, &l[i], l[i].cand);
    fmt_value(b, sizeof b, &l[i], l[i].base);
    if (!strcmp(l[i].metric, "ooms"))
      printf("%s %-15s change %s requests failed for want of memory (baseline %s)\n", l[i].pass ? "PASS" : "FAIL",
             l[i].label, a, b);
    else
      printf("%s %-15s change %s, baseline %s: ratio %.4f %s %.4g\n", l[i].pass ? "PASS" : "FAIL", l[i].label, a, b,
             l[i].ratio, l[i].pass ? "<=" : ">", l[i].max);
  }
}

int pt_cmd_check(void *args, char **pos, int npos, pt_err *err) {
  const check_args *a = args;
  if (a->wb.ntraces != 1) return pt_cli_usage(err, "needs exactly one --trace");
  if (!a->baseline) return pt_cli_usage(err, "needs --baseline CONF (the settings run today; '' for PyTorch's defaults)");
  if (isnan(a->max_peak)) return pt_cli_usage(err, "needs --max-peak-ratio R");
  if (a->wb.run && (a->wb.npolicies || a->wb.objective_given))
    return pt_cli_usage(err, "--run names the change; --%s chooses one: give one of them",
                        a->wb.npolicies ? "policy" : "objective");
  check_state s = {.a = a};
  int rc = pt_store_open(a->wb.db, PT_STORE_READONLY, err, &s.db);
  if (rc < 0) return rc;
  if ((rc = find_change(&s, err)) == 0) rc = find_baseline(&s, err);
  const pt_sim_result *br = s.bstored ? &s.bstored->r : &s.bres, *cr = s.cand ? &s.cand->r : NULL;
  limit l[3];
  int nl = 0, pass = 1;
  if (rc == 0 && !isnan(a->max_time) && (!cr->has_gpu || !br->has_gpu))
    rc = pt_err_set(err, PT_EFORMAT,
                    "%s: --max-time-ratio needs predicted times: %s has none (modelled without a GPU description); store "
                    "the change with --gpu NAME, or drop --max-time-ratio",
                    a->wb.db, cr->has_gpu ? "the baseline" : "the change");
  if (rc == 0) {
    l[nl++] = (limit){"ooms", "out of memory", (double)cr->ooms, (double)br->ooms, NAN, NAN, cr->ooms == 0};
    l[nl++] = (limit){"peak_reserved_bytes", "peak reserved", (double)cr->peak_reserved_bytes, (double)br->peak_reserved_bytes,
                      ratio_of((double)cr->peak_reserved_bytes, (double)br->peak_reserved_bytes), a->max_peak, 0};
    if (!isnan(a->max_time))
      l[nl++] = (limit){"predicted_alloc_us", "predicted time", cr->predicted_alloc_us, br->predicted_alloc_us,
                        ratio_of(cr->predicted_alloc_us, br->predicted_alloc_us), a->max_time, 0};
    for (int i = 1; i < nl; i++) l[i].pass = l[i].ratio <= l[i].max;
    for (int i = 0; i < nl; i++) pass &= l[i].pass;
    if (a->wb.json) print_json(&s, br, l, nl, pass);
    else print_text(&s, br, l, nl);
    if (!pass) {
      int nfail = 0;
      for (int i = 0; i < nl; i++) nfail += !l[i].pass;
      rc = pt_err_set(err, PT_EFORMAT, "check failed: run %" PRId64 " of trace '%s' is worse than '%s' allows (%d of %d limits)",
                      s.cand->id, s.cand->trace, a->baseline, nfail, nl);
    }
  }
  if (s.bsimulated) pt_sim_result_free(&s.bres);
  pt_policy_free(s.bpol);
  pt_store_close(s.db);
  free(s.brows);
  free(s.rows);
  return rc;
}
