/*
 * test_report.c — the Pareto front on a set worked out by hand (ties, NAN
 * times, two traces), the text table's markers and width, and the HTML page:
 * one timeline per run, one Pareto plot per trace, nothing fetched from
 * anywhere, hostile strings escaped, peaks kept through downsampling.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"
#include "report.h"
#include "testutil.h"


#define MiB (1024.0 * 1024.0)

/*
 * Trace "A" (times in µs, memory in MiB):                      front?
 *   1: 10, 100    5: 10, 100 (tie with 1)                       yes, yes
 *   6:  5, 200                                                  yes (fastest)
 *   2: 20,  50    3: 20, 60 (same time, more memory)            yes, no
 *   4: 30,  50 (more time, same memory as 2)                    no
 *  10: 40,  30   11: 50, 30 (more time, same memory as 10)      yes, no
 *   7: NAN, 40    8: NAN, 40 (tie)   9: NAN, 45                  yes, yes, no
 * Trace "B", interleaved: 21: 100, 500 and 23: 100, 500 (tie) yes, yes;
 *   24: 150, 600 no; 22: NAN, 1 yes.  Run 1 of trace A would beat 21 and
 *   23; the front is per trace, so it does not.
 */
typedef struct spec {
  int64_t id;
  const char *trace;
  double us, mib;
  int front;
} spec;

static const spec set[] = {
    {1, "A", 10, 100, 1},   {21, "B", 100, 500, 1}, {2, "A", 20, 50, 1},   {3, "A", 20, 60, 0},
    {4, "A", 30, 50, 0},    {22, "B", NAN, 1, 1},   {5, "A", 10, 100, 1},  {6, "A", 5, 200, 1},
    {7, "A", NAN, 40, 1},   {8, "A", NAN, 40, 1},   {23, "B", 100, 500, 1}, {9, "A", NAN, 45, 0},
    {10, "A", 40, 30, 1},   {11, "A", 50, 30, 0},   {24, "B", 150, 600, 0},
};
#define NSET (sizeof set / sizeof set[0])

static char names[NSET][32];

static void fill(pt_report_run *r, size_t n) {
  memset(r, 0, n * sizeof *r);
  for (size_t i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "pol_%c%lld", set[i].trace[0] + 32, (long long)set[i].id);
    r[i] = (pt_report_run){.id = set[i].id, .trace = set[i].trace, .policy = names[i], .mechanism = "caching",
                           .params_json = "{\"max_split_size_mb\":null,\"segment\":2097152}",
                           .peak_reserved_bytes = (uint64_t)(set[i].mib * MiB),
                           .peak_allocated_bytes = (uint64_t)(set[i].mib * MiB * 0.8),
                           .segments_allocated = (uint64_t)set[i].id, .fragmentation = 0.2,
                           .predicted_alloc_us = set[i].us};
  }
}

static void test_pareto(void) {
  pt_report_run r[NSET];
  int on[NSET];
  fill(r, NSET);
  CU_ASSERT_EQUAL_FATAL(pt_report_pareto(r, NSET, on), 0);
  for (size_t i = 0; i < NSET; i++) {
    if (on[i] != set[i].front) fprintf(stderr, "\nrun %lld: front %d, expected %d\n", (long long)set[i].id, on[i], set[i].front);
    CU_ASSERT_EQUAL(on[i], set[i].front);
  }
  CU_ASSERT_EQUAL(pt_report_pareto(NULL, 0, NULL), 0);
  CU_ASSERT_EQUAL(pt_report_pareto(r, 1, NULL), PT_EUSAGE);
  /* a run that ran out of memory is on no front and beats none: 6 (the fastest) and 2 out, 3 and 4 in */
  r[5 + 2].ooms = 1; /* run 6 */
  r[2].ooms = 3;     /* run 2 */
  CU_ASSERT_EQUAL_FATAL(pt_report_pareto(r, NSET, on), 0);
  for (size_t i = 0; i < NSET; i++) {
    int want = set[i].id == 6 || set[i].id == 2 ? 0 : set[i].id == 3 || set[i].id == 4 ? 1 : set[i].front;
    if (on[i] != want) fprintf(stderr, "\nrun %lld (OOMs in 2 and 6): front %d, expected %d\n", (long long)set[i].id, on[i], want);
    CU_ASSERT_EQUAL(on[i], want);
  }
  fill(r, NSET);
  /* one run alone is on its front, NAN or not */
  r[0].predicted_alloc_us = NAN;
  CU_ASSERT_EQUAL(pt_report_pareto(r, 1, on), 0);
  CU_ASSERT_EQUAL(on[0], 1);
}

/* Output of a printer, as a string the caller frees. */
static char *capture_text(const pt_report_run *r, size_t n, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  pt_err err = {{0}};
  *rc = pt_report_text(f, r, n, NULL, 0, NULL, 0, &err);
  fclose(f);
  return buf;
}

static char *capture_html(const char *title, const pt_report_run *r, size_t n, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  pt_err err = {{0}};
  *rc = pt_report_html(f, title, r, n, NULL, 0, NULL, 0, &err);
  fclose(f);
  return buf;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0, k = strlen(needle);
  for (const char *p = hay; (p = strstr(p, needle)); p += k) n++;
  return n;
}

/* The line of s that contains word followed by a space (names here are prefixes of each other). */
static const char *line_with(const char *s, const char *word, size_t *len) {
  char w[64];
  if (snprintf(w, sizeof w, " %.60s ", word) >= (int)sizeof w) return NULL;
  const char *p = strstr(s, w);
  if (!p) return NULL;
  while (p > s && p[-1] != '\n') p--;
  *len = strcspn(p, "\n");
  return p;
}

/* The headline never names a run that ran out of memory: runs 10 (least memory, with 11) and 6 (fastest) did. */
static void test_headline_without_oom(void) {
  pt_report_run r[NSET];
  fill(r, NSET);
  for (size_t i = 0; i < NSET; i++)
    if (set[i].id == 10 || set[i].id == 6) r[i].ooms = 1;
  int rc;
  char *out = capture_html("t", r, NSET, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "<b>2</b> ran out of memory"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "least memory: <b>pol_a11</b>"));
  CU_ASSERT(strstr(out, "fastest predicted: <b>pol_a1</b>") || strstr(out, "fastest predicted: <b>pol_a5</b>"));
  CU_ASSERT_PTR_NULL(strstr(out, "least memory: <b>pol_a10</b>"));
  CU_ASSERT_PTR_NULL(strstr(out, "fastest predicted: <b>pol_a6</b>"));
  free(out);
}

static void test_text(void) {
  pt_report_run r[NSET];
  fill(r, NSET);
  int rc;
  char *out = capture_text(r, NSET, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  for (size_t i = 0; i < NSET; i++) {
    size_t len;
    const char *line = line_with(out, names[i], &len);
    CU_ASSERT_PTR_NOT_NULL(line);
    if (!line) continue;
    CU_ASSERT_EQUAL(line[0] == '*', set[i].front);
    CU_ASSERT(line[0] == '*' || line[0] == ' ');
  }
  /* sorted by peak reserved: 10 (30 MiB) before 2 (50) before 1 (100) before 6 (200) */
  CU_ASSERT(strstr(out, " pol_a10 ") < strstr(out, " pol_a2 "));
  CU_ASSERT(strstr(out, " pol_a2 ") < strstr(out, " pol_a1 "));
  CU_ASSERT(strstr(out, " pol_a1 ") < strstr(out, " pol_a6 "));
  /* both traces, A first (first to appear), and the NAN time shown as '-' */
  CU_ASSERT(strstr(out, "trace A") && strstr(out, "trace B") && strstr(out, "trace A") < strstr(out, "trace B"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "max_split_size_mb=inf segment=2MiB"));
  free(out);

  /* long names and parameters are cut so lines fit 100 columns; control characters do not pass */
  static char longname[300], longparams[600];
  memset(longname, 'p', sizeof longname - 1);
  longname[5] = '\033';
  strcpy(longparams, "{");
  for (int i = 0; i < 20; i++)
    snprintf(longparams + strlen(longparams), sizeof longparams - strlen(longparams), "%s\"knob_%d\":%d",
             i ? "," : "", i, i * 1000);
  strcat(longparams, "}");
  r[0].policy = longname;
  r[0].params_json = longparams;
  r[0].capacity = (uint64_t)8 << 30;
  out = capture_text(r, NSET, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NULL(strchr(out, '\033'));
  for (const char *p = out; *p;) {
    size_t len = strcspn(p, "\n");
    CU_ASSERT(len <= PT_REPORT_COLUMNS);
    p += len + (p[len] == '\n');
  }
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "ppppp?ppp"));
  free(out);

  out = capture_text(NULL, 0, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "no runs"));
  free(out);
}

static const char hostile[] = "<img src=x onerror=alert(1)>&\"'";

/* A timeline of n points: flat at 1 MiB reserved with one spike of spike_mib at the middle. */
static pt_sim_point *timeline(size_t n, double spike_mib) {
  pt_sim_point *t = calloc(n, sizeof *t);
  if (!t) return NULL;
  for (size_t i = 0; i < n; i++)
    t[i] = (pt_sim_point){.event = 10 * (i + 1), .time_us = (int64_t)i, .reserved = (uint64_t)MiB,
                          .allocated = (uint64_t)(MiB / 2)};
  t[n / 2 + 7].reserved = (uint64_t)(spike_mib * MiB);
  return t;
}

static void test_html(void) {
  pt_report_run r[NSET];
  fill(r, NSET);
  pt_sim_point *big = timeline(100000, 300), *small = timeline(50, 3);
  CU_ASSERT_FATAL(big && small);
  r[0].timeline = big; /* run 1: 100000 points, peak 300 MiB in one of them */
  r[0].ntimeline = 100000;
  r[0].peak_reserved_bytes = (uint64_t)(300 * MiB);
  r[1].timeline = small;
  r[1].ntimeline = 50;
  r[2].policy = hostile; /* the rest have no timeline */
  r[2].params_json = "{\"</svg><script>x</script>\":1}";
  r[14].trace = "<b>B</b>&"; /* run 24 alone under a hostile trace name: a third trace */
  int rc;
  char *out = capture_html("report <title>", r, NSET, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);

  CU_ASSERT_EQUAL(count(out, "<svg class=\"timeline\""), NSET);
  for (size_t i = 0; i < NSET; i++) {
    char want[64];
    snprintf(want, sizeof want, "<svg class=\"timeline\" data-run=\"%lld\"", (long long)set[i].id);
    CU_ASSERT_EQUAL(count(out, want), 1);
  }
  CU_ASSERT_EQUAL(count(out, "<svg class=\"pareto\""), 3);
  CU_ASSERT_EQUAL(count(out, "<svg"), count(out, "</svg>"));
  CU_ASSERT_EQUAL(count(out, "<svg"), NSET + 3);
  CU_ASSERT_EQUAL(count(out, "<table"), 3);
  CU_ASSERT_EQUAL(count(out, "<table"), count(out, "</table>"));
  CU_ASSERT_EQUAL(count(out, "<section"), count(out, "</section>"));
  CU_ASSERT_EQUAL(count(out, "no timeline recorded"), NSET - 2);

  /* self-contained */
  CU_ASSERT_PTR_NULL(strstr(out, "http://"));
  CU_ASSERT_PTR_NULL(strstr(out, "https://"));
  CU_ASSERT_PTR_NULL(strstr(out, "<script"));
  CU_ASSERT_PTR_NULL(strstr(out, "<link"));
  CU_ASSERT_PTR_NULL(strstr(out, "url("));
  CU_ASSERT_PTR_NULL(strstr(out, "@import"));

  /* escaped everywhere it appears: tables, labels, titles */
  CU_ASSERT_PTR_NULL(strstr(out, "<img"));
  CU_ASSERT_PTR_NULL(strstr(out, "<b>B"));
  CU_ASSERT_PTR_NULL(strstr(out, "<title>report <title>"));
  CU_ASSERT(count(out, "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;") >= 2);
  CU_ASSERT(count(out, "&lt;/svg&gt;&lt;script&gt;") >= 1);
  CU_ASSERT(count(out, "&lt;b&gt;B&lt;/b&gt;&amp;") >= 1);

  /* run 1's timeline: at most PT_REPORT_MAX_POINTS steps, and the one-point spike survives:
     300 MiB is the top of the shared scale, so the path reaches the plot's top, y = 52 */
  const char *svg = strstr(out, "<svg class=\"timeline\" data-run=\"1\"");
  CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
  const char *path = strstr(svg, "<path class=\"res\" d=\"");
  CU_ASSERT_PTR_NOT_NULL_FATAL(path);
  const char *end = strchr(path + 21, '"');
  size_t steps = 0, top = 0;
  for (const char *p = path; p < end; p++) {
    steps += *p == 'H';
    top += !strncmp(p, "V52.0H", 6);
  }
  CU_ASSERT(steps <= PT_REPORT_MAX_POINTS);
  CU_ASSERT(steps >= PT_REPORT_MAX_POINTS / 2);
  CU_ASSERT_EQUAL(top, 1);
  CU_ASSERT(strlen(out) < 400000);
  free(out);

  /* nothing to show is still a page */
  out = capture_html(NULL, NULL, 0, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(count(out, "<svg"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "No runs"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "</html>"));
  free(out);

  /* only runs without a predicted time: the Pareto plot says so and still draws them */
  for (size_t i = 0; i < NSET; i++) r[i].predicted_alloc_us = NAN;
  out = capture_html("t", r, NSET, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(count(out, "<svg class=\"pareto\""), 3);
  CU_ASSERT_EQUAL(count(out, "no predicted allocator times"), 3);
  free(out);
  free(big);
  free(small);
}

/* A write that fails (a full device) comes back as PT_EIO with a message. */
/*
 * A trace of 300 runs: runs 0..149 take 5 µs with peaks of 900..1049 MiB (of
 * them only run 0 is on the front), runs 150..299 take i µs with peaks of
 * 1000 - i MiB (each slower and smaller than the last: all on the front).
 * The page shows the 100 of least peak (200..299) and the first 100 of the
 * front by peak (the same runs), not run 0; a second trace of 5 runs is shown
 * whole.
 */
static void test_html_selection(void) {
  enum { N = 300, M = 5 };
  pt_report_run *r = calloc(N + M, sizeof *r);
  char *shown = malloc(N + M);
  CU_ASSERT_FATAL(r && shown);
  for (int i = 0; i < N; i++)
    r[i] = (pt_report_run){.id = i, .trace = "big", .policy = "p", .params_json = "{}",
                           .peak_reserved_bytes = (uint64_t)((i < 150 ? 900 + i : 1000 - i) * MiB),
                           .predicted_alloc_us = i < 150 ? 5 : i};
  for (int i = N; i < N + M; i++)
    r[i] = (pt_report_run){.id = i, .trace = "small", .policy = "p", .params_json = "{}",
                           .peak_reserved_bytes = (uint64_t)(5 * MiB), .predicted_alloc_us = 1};
  CU_ASSERT_EQUAL(pt_report_html_shown(r, N + M, shown), 0);
  int front[N + M];
  CU_ASSERT_EQUAL(pt_report_pareto(r, N + M, front), 0);
  CU_ASSERT_EQUAL(front[0], 1);
  CU_ASSERT_EQUAL(front[1], 0);
  size_t nshown = 0;
  for (int i = 0; i < N + M; i++) nshown += shown[i] != 0;
  CU_ASSERT_EQUAL(nshown, PT_REPORT_HTML_RUNS + M);
  for (int i = 0; i < N; i++) CU_ASSERT_EQUAL(shown[i] != 0, i >= 200);
  for (int i = N; i < N + M; i++) CU_ASSERT_EQUAL(shown[i], 1);
  /* the page draws exactly those timelines, says so, and plots every run */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_report_html(f, NULL, r, N + M, NULL, 0, NULL, 0, &err), 0);
  fclose(f);
  size_t svgs = 0;
  for (const char *q = buf; (q = strstr(q, "<svg class=\"timeline\"")); q++) svgs++;
  CU_ASSERT_EQUAL(svgs, PT_REPORT_HTML_RUNS + M);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "100 of 300 runs"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "200 more runs"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "data-run=\"299\""));
  CU_ASSERT_PTR_NULL(strstr(buf, "data-run=\"199\""));
  free(buf);
  free(shown);
  free(r);
}

/* Two runs worked by hand: the why names each figure against the captured settings'. */
static void test_why(void) {
  pt_sim_point tr[3] = {{.event = 1, .reserved = (uint64_t)(100 * MiB), .allocated = (uint64_t)(90 * MiB)},
                        {.event = 2, .reserved = (uint64_t)(352 * MiB), .allocated = (uint64_t)(300 * MiB)},
                        {.event = 3, .reserved = (uint64_t)(352 * MiB), .allocated = (uint64_t)(10 * MiB)}};
  pt_sim_point tb[2] = {{.event = 1, .reserved = (uint64_t)(390 * MiB), .allocated = (uint64_t)(301 * MiB)},
                        {.event = 2, .reserved = (uint64_t)(200 * MiB), .allocated = (uint64_t)(100 * MiB)}};
  pt_report_run r = {.id = 4, .trace = "T", .policy = "cuda_async", .mechanism = "async_pool",
                     .peak_reserved_bytes = (uint64_t)(352 * MiB), .peak_allocated_bytes = (uint64_t)(301 * MiB),
                     .segments_allocated = 11, .driver_calls_total = 34, .predicted_alloc_us = 1110, .timeline = tr,
                     .ntimeline = 3};
  pt_report_run b = {.id = 1, .trace = "T", .policy = "pytorch_native", .mechanism = "caching",
                     .peak_reserved_bytes = (uint64_t)(390 * MiB), .peak_allocated_bytes = (uint64_t)(301 * MiB),
                     .segments_allocated = 18, .driver_calls_total = 28, .predicted_alloc_us = 2030, .timeline = tb,
                     .ntimeline = 2};
  char why[2048];
  CU_ASSERT_PTR_EQUAL(pt_report_why(&r, &b, why, sizeof why), why);
  /* the peak held on after frees (event 3) is not where the reserve was needed: 352 - 300 = 52 MiB free */
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "at most 352 MiB for at most 301 MiB of live requests"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "38 MiB less than the captured settings' 390 MiB"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "52 MiB lay free inside its segments, against 89 MiB"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "11 segments with 34 driver calls in all, against 18 and 28"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "1.11 ms against 2.03 ms (the cost model")); /* more calls, less time: said why */
  /* alone: no comparison; without a timeline: no free bytes */
  r.timeline = NULL;
  r.ntimeline = 0;
  pt_report_why(&r, NULL, why, sizeof why);
  CU_ASSERT_PTR_NULL(strstr(why, "against"));
  CU_ASSERT_PTR_NULL(strstr(why, "free inside"));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "11 segments with 34 driver calls in all."));
  /* a short buffer stays terminated */
  char tiny[16];
  pt_report_why(&r, &b, tiny, sizeof tiny);
  CU_ASSERT_EQUAL(strlen(tiny), sizeof tiny - 1);
  /* who may headline */
  CU_ASSERT(pt_report_recommendable(&r));
  r.ooms = 1;
  CU_ASSERT(!pt_report_recommendable(&r));
  r.ooms = 0;
  r.mechanism = "direct";
  CU_ASSERT(!pt_report_recommendable(&r));
  CU_ASSERT(!pt_report_recommendable(NULL));
}

/* A printer's output with recommendations (kind 't'ext, 'h'tml, 'j'son), as a string the caller frees. */
static char *capture_recs(int kind, const pt_report_run *r, size_t n, const pt_report_rec *recs, size_t nrecs, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  pt_err err = {{0}};
  *rc = kind == 't'   ? pt_report_text(f, r, n, recs, nrecs, NULL, 0, &err)
        : kind == 'h' ? pt_report_html(f, "t", r, n, recs, nrecs, NULL, 0, &err)
                      : pt_report_json(f, r, n, recs, nrecs, NULL, 0, &err);
  fclose(f);
  return buf;
}

/* With a recommendation: it comes first (text and HTML), paste lines whole, the overlay and the folded rest. */
static void test_recommendation(void) {
  pt_report_run r[NSET];
  fill(r, NSET);
  pt_sim_point *tl = timeline(50, 3);
  CU_ASSERT_FATAL(tl != NULL);
  for (size_t i = 0; i < NSET; i++) r[i].timeline = tl, r[i].ntimeline = 50;
  static char longline[200];
  snprintf(longline, sizeof longline, "export PYTORCH_ALLOC_CONF=max_split_size_mb:64,%0120d", 0);
  char paste[400];
  snprintf(paste, sizeof paste, "%s\nexport B='<&>'\n", longline);
  pt_report_rec rec[2] = {{.trace = "A", .run = 2, .baseline = 1, .baseline_desc = "pol at its defaults",
                           .chosen_by = "time", .paste = paste, .code = "import torch\n", .notes = "note: one\nnote: two\n",
                           .command = "pagetune export --trace A --run 2 --format env"},
                          {.trace = "B", .run = 0, .baseline = 0}};
  int rc;
  char *buf = capture_recs('h', r, NSET, rec, 2, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  CU_ASSERT_EQUAL(rc, 0);
  const char *card = strstr(buf, "<section class=\"rec\">"), *first_trace = strstr(buf, "<section class=\"trace\"");
  CU_ASSERT(card && first_trace && card < first_trace);
  CU_ASSERT_EQUAL(count(buf, "<section class=\"rec\">"), 2); /* B's says there is nothing to recommend */
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Nothing to recommend"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, longline)); /* whole, never cut */
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "export B=&#39;&lt;&amp;&gt;&#39;"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "What else the export notes (2)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "<svg class=\"overlay\" data-run=\"2\" data-baseline=\"1\""));
  CU_ASSERT_EQUAL(count(buf, "<svg class=\"overlay\""), 1);
  CU_ASSERT_EQUAL(count(buf, "<svg class=\"timeline\""), NSET - 2); /* the rest, folded */
  CU_ASSERT_PTR_NULL(strstr(buf, "data-run=\"2\" viewBox=\"0 0 640"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "(recommended)</text>"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "(captured)</text>"));
  CU_ASSERT_EQUAL(count(buf, "<svg"), count(buf, "</svg>"));
  CU_ASSERT_EQUAL(count(buf, "<details"), count(buf, "</details>"));
  free(buf);

  buf = capture_recs('t', r, NSET, rec, 2, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(strncmp(buf, "RECOMMENDED SETTINGS\n", 21), 0);
  const char *line = strstr(buf, longline);
  CU_ASSERT(line && line[-1] == ' ' && line[strlen(longline)] == '\n');
  CU_ASSERT(strstr(buf, "A: run 2, pol_a2") && strstr(buf, "A: run 2, pol_a2") < strstr(buf, "trace A"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "B: nothing to recommend"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "    import torch\n"));
  for (const char *p = buf; *p;) { /* every line but the paste-ready one fits */
    size_t l = strcspn(p, "\n");
    CU_ASSERT(l <= PT_REPORT_COLUMNS || strstr(p, longline) == p + 4);
    p += l + (p[l] == '\n');
  }
  free(buf);

  buf = capture_recs('j', r, NSET, rec, 2, &rc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"recommendations\":[{\"trace\":\"A\",\"run\":2,\"baseline_run\":1,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "{\"trace\":\"B\",\"run\":null,\"baseline_run\":null,"));
  free(buf);
  free(tl);
}

static void test_write_error(void) {
  FILE *f = fopen("/dev/full", "w");
  if (!f) return; /* no /dev/full here: nothing to test */
  pt_report_run r[NSET];
  fill(r, NSET);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_report_html(f, "t", r, NSET, NULL, 0, NULL, 0, &err), PT_EIO);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "write failed"));
  clearerr(f);
  CU_ASSERT_EQUAL(pt_report_text(f, r, NSET, NULL, 0, NULL, 0, &err), PT_EIO);
  fclose(f);
}

/* Two confirmations of trace A, hostile text in their strings, one with nothing measured. */
static void fill_confirms(pt_report_confirm *c) {
  c[0] = (pt_report_confirm){7, 1, 2, "A", "pol_a1", "pol_a2", "pytorch", "pagetune", "median_step_s", "gpu<host>\x01",
                             "NVIDIA \"H200\"", "2026-12-01T10:00:00Z", 5,
                             {0.001, 0.02, -0.01, 0.05, 0.5, 0.49, PT_VERDICT_NOISE},
                             {0.4, 0.41, 0.40, 0.42, 1e9, 5.9e8, PT_VERDICT_CONFIRMED}, 9000, 4000, 1000u << 20, 590u << 20};
  c[1] = (pt_report_confirm){8, 1, 3, "A", "pol_a1", "pol_a3", "pytorch", "pytorch", "wall_s", "", NULL,
                             "2026-12-02T10:00:00Z", 2, {NAN, 0.1, 0.05, 0.15, 10, 9, PT_VERDICT_NO_PREDICTION},
                             {0.1, NAN, NAN, NAN, NAN, NAN, PT_VERDICT_NOT_MEASURED}, NAN, NAN, 1u << 30, 1u << 29};
}

static void test_confirmations(void) {
  pt_report_run r[NSET];
  fill(r, NSET);
  pt_report_confirm c[2];
  fill_confirms(c);
  char *buf = NULL;
  size_t len = 0;
  pt_err err;
  FILE *f = open_memstream(&buf, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(pt_report_text(f, r, NSET, NULL, 0, c, 2, &err), 0);
  fclose(f);
  CU_ASSERT_EQUAL(count(buf, "confirmation 7: 5 runs each"), 1);
  CU_ASSERT_EQUAL(count(buf, "confirmation 8: 2 runs each"), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "time (median step) predicted   +0.10%  measured   +2.00% [-1.00%, +5.00%]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "within noise"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "peak reserved      predicted  +40.00%  measured  +41.00% [+40.00%, +42.00%]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "time (wall)        predicted        -  measured  +10.00%"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "not measured"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "no prediction"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "predicted: allocator time 9.00 ms -> 4.00 ms, peak reserved 1000.0 MiB -> 590.0 MiB"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "gpu<host>?")); /* a control character printed as '?' */
  /* they follow trace A's table, not B's */
  CU_ASSERT(strstr(buf, "confirmation 7") < strstr(buf, "trace B"));
  for (const char *p = buf; *p;) {
    size_t k = strcspn(p, "\n");
    CU_ASSERT(k <= PT_REPORT_COLUMNS);
    p += k + (p[k] == '\n');
  }
  free(buf);

  /* JSON: one object a strict reader takes, bytes as integers, unknowns null */
  buf = NULL;
  f = open_memstream(&buf, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(pt_report_json(f, r, NSET, NULL, 0, c, 2, &err), 0);
  fclose(f);
  pt_jr_doc *doc;
  CU_ASSERT_EQUAL_FATAL(pt_jr_parse(buf, len, NULL, &doc, &err), 0);
  const pt_jr_val *root = pt_jr_root(doc), *runs = pt_jr_get(root, "runs"), *cs = pt_jr_get(root, "confirmations");
  CU_ASSERT_EQUAL(pt_jr_len(runs), NSET);
  CU_ASSERT_EQUAL(pt_jr_len(cs), 2);
  for (size_t i = 0; i < NSET; i++) {
    const pt_jr_val *run = pt_jr_index(runs, i);
    CU_ASSERT_EQUAL(pt_jr_bool(pt_jr_get(run, "pareto")), set[i].front);
    CU_ASSERT_EQUAL(pt_jr_type(pt_jr_get(run, "predicted_alloc_us")), isnan(set[i].us) ? PT_JR_NULL : PT_JR_NUMBER);
  }
  const pt_jr_val *c0 = pt_jr_index(cs, 0), *c1 = pt_jr_index(cs, 1);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(c0, "confirmation")), 7);
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(pt_jr_get(c0, "tuned"), "allocator"), NULL), "pagetune");
  CU_ASSERT_STRING_EQUAL(pt_jr_number_text(pt_jr_get(pt_jr_get(c0, "tuned"), "predicted_peak_reserved_bytes")), "618659840");
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(c0, "gpu_name"), NULL), "NVIDIA \"H200\"");
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(pt_jr_get(c0, "time"), "verdict"), NULL), "within noise");
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_index(pt_jr_get(pt_jr_get(c0, "peak_reserved"), "interval"), 1)), 0.42);
  CU_ASSERT_EQUAL(pt_jr_type(pt_jr_get(pt_jr_get(c1, "peak_reserved"), "interval")), PT_JR_NULL);
  CU_ASSERT_EQUAL(pt_jr_type(pt_jr_get(pt_jr_get(c1, "time"), "predicted_gain")), PT_JR_NULL);
  CU_ASSERT_EQUAL(pt_jr_type(pt_jr_get(c1, "gpu_name")), PT_JR_NULL);
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(pt_jr_get(c1, "time"), "metric"), NULL), "wall_s");
  pt_jr_free(doc);
  free(buf);

  /* HTML: a table in trace A's section, hostile text escaped */
  buf = NULL;
  f = open_memstream(&buf, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(pt_report_html(f, "t", r, NSET, NULL, 0, c, 2, &err), 0);
  fclose(f);
  CU_ASSERT_EQUAL(count(buf, "<table class=\"runs confirm\">"), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "gpu&lt;host&gt;"));
  CU_ASSERT_PTR_NULL(strstr(buf, "gpu<host>"));
  CU_ASSERT_PTR_NOT_NULL(strstr(buf, "<td class=\"verdict ok\">confirmed</td>"));
  CU_ASSERT_EQUAL(count(buf, "<td class=\"verdict \">not measured</td>"), 1);
  const char *secb = strstr(buf, "<span class=\"k\">trace</span> B");
  CU_ASSERT_PTR_NOT_NULL(secb);
  if (secb) CU_ASSERT_PTR_NULL(strstr(secb, "runs confirm"));
  free(buf);
}

int pt_test_add_report(void) {
  CU_pSuite s = CU_add_suite("report", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "Pareto front per trace: ties, equal time or memory, NAN times", test_pareto);
  CU_add_test(s, "HTML headline: never a run that ran out of memory", test_headline_without_oom);
  CU_add_test(s, "text table: every policy, '*' on the front, 100 columns, sorted", test_text);
  CU_add_test(s, "HTML: one timeline per run, one Pareto per trace, self-contained, escaped", test_html);
  CU_add_test(s, "HTML of a large trace: its 100 least-peak runs and front drawn, every run plotted", test_html_selection);
  CU_add_test(s, "the why: each figure against the captured settings'; OOM and direct never headline", test_why);
  CU_add_test(s, "a recommendation leads: paste lines whole, the overlay, the rest folded, JSON", test_recommendation);
  CU_add_test(s, "a failed write is PT_EIO", test_write_error);
  CU_add_test(s, "confirmations: text within 100 columns, strict JSON, escaped HTML", test_confirmations);
  return CU_get_error();
}
