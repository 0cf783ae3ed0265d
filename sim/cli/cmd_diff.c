/*
 * cmd_diff.c — pagetune diff: two runs side by side, and where in the
 * timeline they part.
 *
 * Two stored runs (`--db DB RUN_A RUN_B`, e.g. two policies on one trace),
 * or two traces simulated with one policy (`TRACE_A TRACE_B --policy P`,
 * before and after a code change).  The figures: peaks, fragmentation,
 * segments, driver calls by kind, predicted time, each with B - A.  The
 * timelines are compared point by point (a point is a window of events, the
 * window's maxima; two runs of one trace stored alike have the same windows):
 * the first point where reserved bytes differ, and the point of the largest
 * gap.  Two runs of one trace whose windows differ (one stored --timeline
 * thin, the other full; or none) are not compared point by point: their
 * points would be of different events.
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workbench.h"

static const pt_cli_opt diff_opts[] = {
    PT_WB_OPT_DB,
    PT_CLI_OPT_STR("policy", 0, "P", pt_wb_args, policies[0], "simulate two traces with policy P (a name or a .lua file)"),
    PT_WB_OPT_GPU("with --policy: the GPU description (h200 by default; " PT_WB_GPU_RULE ")"),
    PT_WB_OPT_CAPACITY,
    PT_WB_OPT_JSON("one JSON object: both runs, each figure with its difference, where they part"),
    PT_CLI_END};
const pt_cli_table pt_opts_diff = {
    "usage: pagetune diff [--db DB] RUN_A RUN_B [--json]\n"
    "       pagetune diff TRACE_A TRACE_B --policy P [--gpu NAME] [--capacity BYTES] [--json]\n"
    "\n"
    "Two stored runs (their ids, as best and report print them), or two traces\n"
    "simulated with one policy, side by side: peak reserved and allocated bytes,\n"
    "fragmentation, segments, driver calls by kind, predicted time, and B - A;\n"
    "then where the timelines part: the first point where reserved bytes differ,\n"
    "and the point of the largest gap (event index and time of each); for two runs\n"
    "of one trace, only when both timelines were stored alike (sweep and tune's\n"
    "--timeline thin and full keep other points, none keeps none: then it says\n"
    "it cannot tell).\n",
    diff_opts, sizeof(pt_wb_args), &pt_wb_defaults, 2};

/* One side: what it is, its figures and its timeline. */
typedef struct side {
  char label[2048];            /* the text header's line */
  int64_t run;                 /* the stored run; -1: simulated here */
  const char *trace, *policy, *params_json; /* params_json: NULL when simulated here */
  const char *trace_hash;      /* the stored run's trace; NULL when simulated here */
  const pt_sim_result *r;
  const pt_sim_point *tl;
  size_t ntl;
} side;

static void row_u(int json, const char *name, uint64_t a, uint64_t b, int *first) {
  if (json) printf("%s\"%s\":{\"a\":%" PRIu64 ",\"b\":%" PRIu64 ",\"diff\":%" PRId64 "}", *first ? "" : ",", name, a, b,
                   (int64_t)(b - a));
  else printf("%-28s %18" PRIu64 " %18" PRIu64 " %+19" PRId64 "\n", name, a, b, (int64_t)(b - a));
  *first = 0;
}

static void row_d(int json, const char *name, double a, double b, int has, int *first) {
  if (json) {
    if (has) printf("%s\"%s\":{\"a\":%.17g,\"b\":%.17g,\"diff\":%.17g}", *first ? "" : ",", name, a, b, b - a);
    else printf("%s\"%s\":{\"a\":null,\"b\":null,\"diff\":null}", *first ? "" : ",", name);
  } else if (has) {
    printf("%-28s %18.4f %18.4f %+19.4f\n", name, a, b, b - a);
  } else {
    printf("%-28s %18s %18s %19s\n", name, "-", "-", "-");
  }
  *first = 0;
}

/* A nullable time: one side may lack a GPU description. */
static void row_time(int json, const side *a, const side *b, int *first) {
  if (a->r->has_gpu && b->r->has_gpu) {
    row_d(json, "predicted_alloc_us", a->r->predicted_alloc_us, b->r->predicted_alloc_us, 1, first);
    return;
  }
  if (json) {
    printf("%s\"predicted_alloc_us\":{\"a\":", *first ? "" : ",");
    a->r->has_gpu ? printf("%.17g", a->r->predicted_alloc_us) : fputs("null", stdout);
    fputs(",\"b\":", stdout);
    b->r->has_gpu ? printf("%.17g", b->r->predicted_alloc_us) : fputs("null", stdout);
    fputs(",\"diff\":null}", stdout);
  } else {
    char ta[32] = "-", tb[32] = "-";
    if (a->r->has_gpu) snprintf(ta, sizeof ta, "%.1f", a->r->predicted_alloc_us);
    if (b->r->has_gpu) snprintf(tb, sizeof tb, "%.1f", b->r->predicted_alloc_us);
    printf("%-28s %18s %18s %19s\n", "predicted_alloc_us", ta, tb, "-");
  }
  *first = 0;
}

static void point(int json, const char *what, const side *a, const side *b, size_t i) {
  const pt_sim_point *pa = &a->tl[i], *pb = &b->tl[i];
  int64_t gap = (int64_t)(pb->reserved - pa->reserved);
  if (json)
    printf("\"%s\":{\"point\":%zu,\"event_a\":%" PRIu64 ",\"event_b\":%" PRIu64 ",\"time_us_a\":%" PRId64
           ",\"time_us_b\":%" PRId64 ",\"reserved_a\":%" PRIu64 ",\"reserved_b\":%" PRIu64 ",\"diff\":%" PRId64 "}",
           what, i, pa->event, pb->event, pa->time_us, pb->time_us, pa->reserved, pb->reserved, gap);
  else
    printf("%s: point %zu, event %" PRIu64 " / %" PRIu64 ", time %" PRId64 " / %" PRId64 " us: reserved %" PRIu64
           " / %" PRIu64 " (%+" PRId64 ")\n",
           what, i, pa->event, pb->event, pa->time_us, pb->time_us, pa->reserved, pb->reserved, gap);
}

static void side_json(const char *key, const side *s) {
  printf("\"%s\":{\"run\":", key);
  if (s->run > 0) printf("%" PRId64, s->run);
  else fputs("null", stdout);
  fputs(",\"trace\":", stdout);
  pt_json_str(stdout, s->trace);
  fputs(",\"policy\":", stdout);
  pt_json_str(stdout, s->policy);
  printf(",\"params\":%s}", s->params_json ? s->params_json : "null");
}

static void print_diff(int json, const side *a, const side *b) {
  int first = 1;
  if (json) {
    putchar('{');
    side_json("a", a);
    putchar(',');
    side_json("b", b);
    fputs(",\"figures\":{", stdout);
  } else {
    printf("A: %s\nB: %s\n\n%-28s %18s %18s %19s\n", a->label, b->label, "", "A", "B", "B - A");
  }
  row_u(json, "peak_reserved_bytes", a->r->peak_reserved_bytes, b->r->peak_reserved_bytes, &first);
  row_u(json, "peak_allocated_bytes", a->r->peak_allocated_bytes, b->r->peak_allocated_bytes, &first);
  row_d(json, "fragmentation", a->r->fragmentation, b->r->fragmentation, 1, &first);
  row_u(json, "segments_allocated", a->r->segments_allocated, b->r->segments_allocated, &first);
  row_u(json, "ooms", a->r->ooms, b->r->ooms, &first);
  row_u(json, "cache_hits", a->r->cache_hits, b->r->cache_hits, &first);
  row_time(json, a, b, &first);
  if (json) fputs("},\"driver_calls\":{", stdout);
  first = 1;
  for (int k = 0; k < PT_DRV_NCALLS; k++)
    if (json || a->r->driver_calls[k] || b->r->driver_calls[k]) {
      char name[48];
      snprintf(name, sizeof name, json ? "%s" : "calls %s", pt_drv_call_names[k]);
      row_u(json, name, a->r->driver_calls[k], b->r->driver_calls[k], &first);
    }
  /* the timelines, point by point: of one trace, only when stored at the same windows */
  size_t n = a->ntl < b->ntl ? a->ntl : b->ntl, firstd = n, big = n;
  int alike = a->ntl == b->ntl && a->ntl > 0;
  for (size_t i = 0; alike && i < n; i++) alike = a->tl[i].event == b->tl[i].event;
  if (a->trace_hash && b->trace_hash && !strcmp(a->trace_hash, b->trace_hash) && !alike) {
    const char *why = !a->ntl || !b->ntl ? "a run stored without its timeline (--timeline none)"
                                         : "timelines stored at different windows (--timeline thin and full)";
    if (json)
      printf("},\"timeline_points\":{\"a\":%zu,\"b\":%zu},\"timelines_compared\":false,\"first_difference\":null,"
             "\"largest_gap\":null}\n", a->ntl, b->ntl);
    else
      printf("\ntimelines: %zu / %zu points\nwhere they part is not known: %s\n", a->ntl, b->ntl, why);
    return;
  }
  uint64_t biggap = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t ra = a->tl[i].reserved, rb = b->tl[i].reserved, g = ra > rb ? ra - rb : rb - ra;
    if (g && firstd == n) firstd = i;
    if (g > biggap) biggap = g, big = i;
  }
  if (json) printf("},\"timeline_points\":{\"a\":%zu,\"b\":%zu},\"timelines_compared\":true,", a->ntl, b->ntl);
  else printf("\ntimelines: %zu / %zu points\n", a->ntl, b->ntl);
  if (firstd == n) {
    if (json) fputs("\"first_difference\":null,\"largest_gap\":null}\n", stdout);
    else puts("reserved bytes never differ");
    return;
  }
  point(json, "first_difference", a, b, firstd);
  if (json) putchar(',');
  point(json, "largest_gap", a, b, big);
  if (json) puts("}");
}

/* Run id from its text: a positive whole number, else bad usage. */
static int run_id(const char *s, int64_t *id, pt_err *err) {
  unsigned long v;
  if (pt_cli_parse_ulong(s, (unsigned long)INT64_MAX, &v) < 0 || v == 0)
    return pt_cli_usage(err, "'%s' is not a run id (a positive whole number)", s);
  *id = (int64_t)v;
  return 0;
}

static void run_label(const pt_store_run *r, char *buf, size_t n) {
  snprintf(buf, n, "run %" PRId64 ": %s on %s, %s, capacity %" PRIu64 ", gpu %s", r->id, r->policy, r->trace,
           r->params_json, r->capacity, r->gpu[0] ? r->gpu : "none");
}

static int diff_runs(const pt_wb_args *a, char **pos, pt_err *err) {
  int64_t ids[2];
  int rc = run_id(pos[0], &ids[0], err);
  if (rc == 0) rc = run_id(pos[1], &ids[1], err);
  if (rc < 0) return rc;
  pt_store *db;
  if ((rc = pt_store_open(a->db, PT_STORE_READONLY, err, &db)) < 0) return rc;
  pt_store_run *rows = NULL;
  size_t n = 0;
  const pt_store_run *r[2] = {NULL, NULL};
  pt_sim_point *tl[2] = {NULL, NULL};
  size_t ntl[2] = {0, 0};
  rc = pt_store_runs(db, NULL, NULL, err, &rows, &n);
  for (int k = 0; k < 2 && rc == 0; k++) {
    for (size_t i = 0; i < n && !r[k]; i++)
      if (rows[i].id == ids[k]) r[k] = &rows[i];
    if (!r[k]) rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run %" PRId64 " stored", a->db, ids[k]);
    else rc = pt_store_timeline(db, ids[k], err, &tl[k], &ntl[k]);
  }
  pt_store_close(db);
  if (rc == 0) {
    side s[2];
    for (int k = 0; k < 2; k++) {
      run_label(r[k], s[k].label, sizeof s[k].label);
      s[k].r = &r[k]->r, s[k].tl = tl[k], s[k].ntl = ntl[k];
      s[k].run = r[k]->id, s[k].trace = r[k]->trace, s[k].policy = r[k]->policy, s[k].params_json = r[k]->params_json;
      s[k].trace_hash = r[k]->trace_hash;
    }
    print_diff(a->json, &s[0], &s[1]);
  }
  free(tl[0]);
  free(tl[1]);
  free(rows);
  return rc;
}

static int diff_traces(const pt_wb_args *a, char **pos, pt_err *err) {
  char pbuf[4096];
  pt_policy *pol = NULL;
  int rc = pt_wb_policy_file(a->policies[0], pbuf, sizeof pbuf, err);
  if (rc == 0) rc = pt_policy_load(pbuf, NULL, err, &pol);
  if (rc < 0) return rc;
  pt_gpu gpu;
  const pt_gpu *g = NULL;
  if ((rc = pt_wb_gpu(a->gpu, &gpu, &g, err)) < 0) {
    pt_policy_free(pol);
    return rc;
  }
  pt_trace_data t[2] = {{0}};
  pt_sim_result res[2] = {{0}};
  int loaded = 0, ran = 0;
  for (int k = 0; k < 2 && rc == 0; k++) {
    if ((rc = pt_trace_load(pos[k], NULL, err, &t[k])) < 0) break;
    loaded++;
    pt_sim_config cfg;
    pt_wb_config(pol, a->capacity, g, &cfg);
    if ((rc = pt_sim_run(&t[k], &cfg, err, &res[k])) < 0) break;
    ran++;
  }
  if (rc == 0) {
    side s[2];
    for (int k = 0; k < 2; k++) {
      snprintf(s[k].label, sizeof s[k].label, "%s with %s, capacity %" PRIu64 ", gpu %s", pos[k], pt_policy_name(pol),
               a->capacity, g ? (a->gpu ? a->gpu : "h200") : "none");
      s[k].r = &res[k], s[k].tl = res[k].timeline, s[k].ntl = res[k].ntimeline;
      s[k].run = -1, s[k].trace = pos[k], s[k].policy = pt_policy_name(pol), s[k].params_json = NULL;
      s[k].trace_hash = NULL;
    }
    print_diff(a->json, &s[0], &s[1]);
  }
  for (int k = 0; k < ran; k++) pt_sim_result_free(&res[k]);
  for (int k = 0; k < loaded; k++) pt_trace_data_free(&t[k]);
  pt_policy_free(pol);
  return rc;
}

int pt_cmd_diff(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (npos != 2) return pt_cli_usage(err, "needs two runs (RUN_A RUN_B) or two traces (TRACE_A TRACE_B --policy P)");
  if (a->policies[0] && a->db != pt_wb_defaults.db) return pt_cli_usage(err, "--db applies to two runs (without --policy)");
  if (a->policies[0]) return diff_traces(a, pos, err);
  if (a->gpu || a->capacity) return pt_cli_usage(err, "--gpu and --capacity apply to two traces (with --policy)");
  return diff_runs(a, pos, err);
}
