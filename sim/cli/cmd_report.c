/*
 * cmd_report.c — pagetune report: tables of the stored runs with each
 * trace's Pareto front, and with --html one self-contained page.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workbench.h"

static const pt_cli_opt report_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("only this trace: a file, a stored name or a content-hash prefix (at most one)"),
    PT_CLI_OPT_STR("html", 0, "FILE", pt_wb_args, html, "also write the HTML page there"),
    PT_WB_OPT_JSON("one JSON object on stdout (runs and confirmations) instead of the tables"),
    PT_CLI_END};
const pt_cli_table pt_opts_report = {
    "usage: pagetune report [--db DB] [--trace T] [--html FILE] [--json]\n"
    "\n"
    "Tables of the stored runs (all traces, or TRACE: a name or a content-hash\n"
    "prefix), each trace's Pareto front marked '*', and what `pagetune confirm`\n"
    "measured on a GPU beside what the model predicted: predicted and measured\n"
    "gains, the measured gain's 95% interval, the verdict.  With --html, also one\n"
    "self-contained page (inline SVG, no network): each policy's reserved/\n"
    "allocated timeline, the Pareto plot, the table of runs and the\n"
    "confirmations.  With --json, one object {\"runs\": [...], \"confirmations\": [...]}.\n",
    report_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

/* Write the page beside the target, then rename: no half-written page. */
static int write_html(const char *path, const pt_report_run *rr, size_t n, const pt_report_confirm *rc_, size_t nc,
                      pt_err *err) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return pt_err_set(err, PT_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  int rc = pt_report_html(f, "pagetune report", rr, n, rc_, nc, err);
  if (fclose(f) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: write failed: %s", tmp, strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0) rc = pt_err_set(err, PT_EIO, "%s: cannot rename: %s", path, strerror(errno));
  if (rc < 0) remove(tmp);
  else fprintf(stderr, "wrote %s (%zu runs)\n", path, n);
  return rc;
}

/* "NAME@HASH12": a trace's name where another stored trace has the same one. */
static void rename_trace(pt_store_run *r) {
  char named[sizeof r->trace];
  snprintf(named, sizeof named, "%.200s@%.12s", r->trace, r->trace_hash);
  memcpy(r->trace, named, sizeof named);
}

static int by_name_hash(const void *x, const void *y) {
  const pt_store_run *a = *(const pt_store_run *const *)x, *b = *(const pt_store_run *const *)y;
  int c = strcmp(a->trace, b->trace);
  return c ? c : strcmp(a->trace_hash, b->trace_hash);
}

/* Every run whose trace name another stored trace has too, renamed (rename_trace); sorted, so a store of 10^5 runs
   takes n log n, not n^2. */
static int rename_clashes(pt_store_run *rows, size_t n, pt_err *err) {
  pt_store_run **p = malloc((n ? n : 1) * sizeof *p);
  if (!p) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) p[i] = &rows[i];
  qsort(p, n, sizeof *p, by_name_hash);
  for (size_t i = 0, e; i < n; i = e) {
    for (e = i + 1; e < n && !strcmp(p[e]->trace, p[i]->trace);) e++;
    if (strcmp(p[i]->trace_hash, p[e - 1]->trace_hash)) /* sorted by hash within the name: two hashes */
      for (size_t j = i; j < e; j++) rename_trace(p[j]);
  }
  free(p);
  return 0;
}

int pt_cmd_report(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces > 1) return pt_cli_usage(err, "takes at most one --trace");
  pt_store *db;
  int rc = pt_store_open(a->db, PT_STORE_READONLY, err, &db);
  if (rc < 0) return rc;
  pt_store_run *rows = NULL;
  size_t n = 0, nc = 0;
  pt_store_confirmation *cs = NULL;
  pt_report_confirm *rc_ = NULL;
  char hash[65];
  const char *trace = a->ntraces ? a->traces[0] : NULL;
  if (trace && (rc = pt_wb_trace_ref(db, trace, err, hash)) == 0) trace = hash;
  if (rc == 1) rc = 0; /* no trace of that name: no runs, said below */
  if (rc == 0) rc = pt_store_runs(db, trace, NULL, err, &rows, &n);
  if (rc == 0 && a->ntraces && !n) /* as best and export: a trace asked for and not there is bad input */
    rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s' stored", a->db, a->traces[0]);
  if (rc == 0) rc = pt_store_confirmations(db, trace, err, &cs, &nc);
  /* two traces stored under one name are two traces: each such name gets its content-hash prefix */
  if (rc == 0) rc = rename_clashes(rows, n, err);
  if (rc == 0 && !(rc_ = calloc(nc ? nc : 1, sizeof *rc_))) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < nc; i++) {
    const pt_store_confirmation *c = &cs[i];
    rc_[i] = (pt_report_confirm){c->id, c->baseline_run, c->tuned_run, c->trace, c->baseline_policy, c->tuned_policy,
                                 c->baseline_allocator, c->tuned_allocator, c->time_metric, c->hostname, c->gpu_name,
                                 c->measured_at, c->runs_per_arm, c->time, c->peak, c->baseline_predicted_us,
                                 c->tuned_predicted_us, c->baseline_predicted_peak, c->tuned_predicted_peak};
  }
  pt_report_run *rr = rc == 0 ? calloc(n ? n : 1, sizeof *rr) : NULL;
  pt_sim_point **tl = rc == 0 ? calloc(n ? n : 1, sizeof *tl) : NULL;
  if (rc == 0 && (!rr || !tl)) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) rr[i] = pt_wb_report_run(&rows[i]);
  char *shown = rc == 0 && a->html ? malloc(n ? n : 1) : NULL; /* the runs whose timelines the page draws */
  if (rc == 0 && a->html && (!shown || pt_report_html_shown(rr, n, shown) < 0))
    rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && a->html && i < n; i++) {
    if (shown[i]) rc = pt_store_timeline(db, rows[i].id, err, &tl[i], &rr[i].ntimeline);
    rr[i].timeline = tl[i];
  }
  free(shown);
  pt_store_close(db);
  if (rc == 0) rc = a->json ? pt_report_json(stdout, rr, n, rc_, nc, err) : pt_report_text(stdout, rr, n, rc_, nc, err);
  if (rc == 0 && a->html) rc = write_html(a->html, rr, n, rc_, nc, err);
  for (size_t i = 0; tl && i < n; i++) free(tl[i]);
  free(tl);
  free(rr);
  free(rows);
  free(rc_);
  free(cs);
  return rc;
}
