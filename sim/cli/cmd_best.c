/* cmd_best.c — pagetune best: the best stored run of a trace by an objective. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workbench.h"

static const pt_cli_opt best_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("the trace: a file, a stored name or a prefix of its content hash (one)"),
    PT_WB_OPT_OBJECTIVE("time (default), memory, or weighted:W;"),
    PT_WB_OPT_JSON("the run as one JSON object"),
    PT_CLI_END};
const pt_cli_table pt_opts_best = {
    "usage: pagetune best [--db DB] --trace T [--objective time|memory|weighted:W] [--json]\n"
    "\n"
    "The best stored run for TRACE (a name or a prefix of its content hash) by the\n"
    "objective; runs that hit OOM are out.  The objective's value is printed with\n"
    "its formula; weighted:W is time_us^W * peak_reserved_bytes^(1-W), as tune\n"
    "minimises it.\n",
    best_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

static void print_best(const pt_wb_args *a, const pt_store_run *r) {
  const char *obj = a->objective.text;
  char f[96];
  if (a->json) {
    printf("{\"run\":%" PRId64 ",\"trace\":", r->id);
    pt_json_str(stdout, r->trace);
    printf(",\"policy\":");
    pt_json_str(stdout, r->policy);
    printf(",\"mechanism\":");
    pt_json_str(stdout, r->mechanism);
    printf(",\"params\":%s,\"capacity\":%" PRIu64 ",\"objective\":", r->params_json, r->capacity);
    pt_json_str(stdout, obj);
    printf(",\"objective_formula\":\"%s\",\"objective_value\":%.17g,", pt_objective_formula(&a->objective, f, sizeof f),
           pt_objective_value(&a->objective, &r->r));
    pt_sim_print_json_members(stdout, &r->r, 0);
    puts("}");
    return;
  }
  printf("best run for %s by %s: run %" PRId64 ", policy %s (%s)\nparams: %s\nobjective: %s = %.6g\n", r->trace, obj,
         r->id, r->policy, r->mechanism, r->params_json, pt_objective_formula(&a->objective, f, sizeof f),
         pt_objective_value(&a->objective, &r->r));
  char us[32] = "-"; /* a time never predicted (a run without a GPU description) */
  if (r->r.has_gpu) snprintf(us, sizeof us, "%.1f us", r->r.predicted_alloc_us);
  printf("peak reserved %" PRIu64 " bytes (%.1f MiB), fragmentation %.3f, %" PRIu64
         " segments, predicted allocator time %s\n",
         r->r.peak_reserved_bytes, r->r.peak_reserved_bytes / 1048576.0, r->r.fragmentation, r->r.segments_allocated, us);
}

int pt_cmd_best(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces != 1) return pt_cli_usage(err, "needs exactly one --trace");
  pt_store *db;
  int rc = pt_store_open(a->db, PT_STORE_READONLY, err, &db);
  if (rc < 0) return rc;
  pt_store_run *rows;
  size_t n;
  long b;
  rc = pt_wb_best(db, a->traces[0], &a->objective, err, &rows, &n, &b);
  pt_store_close(db);
  if (rc < 0) return rc;
  if (b < 0)
    rc = pt_wb_no_run(a->db, a->traces[0], &a->objective, rows, n, err);
  else
    print_best(a, &rows[b]);
  free(rows);
  return rc;
}
