/*
 * test_confirm.c — what `pagetune confirm` concludes: medians, the bootstrap
 * interval (known answers, the same interval from the same seed), the
 * verdict rule at each of its edges, the predicted gains, and the
 * measurement file the hook writes (good files, a missing one, and each
 * malformed form refused with its line).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confirm.h"
#include "testutil.h"

#define R PT_CONFIRM_RESAMPLES

static pt_confirm_gain boot(const double *b, size_t nb, const double *t, size_t nt, double predicted, uint64_t seed) {
  pt_confirm_gain g = {.predicted = predicted};
  pt_err err;
  CU_ASSERT_EQUAL(pt_confirm_bootstrap(b, nb, t, nt, R, seed, &g, &err), 0);
  return g;
}

static void test_median(void) {
  double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2}, one[] = {7}, nan[] = {1, NAN};
  CU_ASSERT_EQUAL(pt_confirm_median(odd, 3), 2);
  CU_ASSERT_EQUAL(pt_confirm_median(even, 4), 2.5);
  CU_ASSERT_EQUAL(pt_confirm_median(one, 1), 7);
  CU_ASSERT(isnan(pt_confirm_median(odd, 0)));
  CU_ASSERT(isnan(pt_confirm_median(nan, 2)));
  CU_ASSERT_EQUAL(odd[0], 3); /* the input is left as it was */
  CU_ASSERT_EQUAL(even[0], 4);
}

/* Identical arms: the interval holds 0, and so does any small prediction inside it. */
static void test_identical_arms(void) {
  double same[] = {10, 10, 10, 10, 10};
  pt_confirm_gain g = boot(same, 5, same, 5, 0, 1);
  CU_ASSERT_EQUAL(g.measured, 0);
  CU_ASSERT_EQUAL(g.lo, 0);
  CU_ASSERT_EQUAL(g.hi, 0);
  CU_ASSERT_EQUAL(g.base_median, 10);
  CU_ASSERT_EQUAL(g.tuned_median, 10);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOISE);
  /* the same noisy values in both arms: an interval around 0 */
  double noisy[] = {10, 11, 9, 10.5, 9.5};
  g = boot(noisy, 5, noisy, 5, 0.01, 1);
  CU_ASSERT_EQUAL(g.measured, 0);
  CU_ASSERT(g.lo < 0 && g.hi > 0);
  CU_ASSERT(g.lo > -0.25 && g.hi < 0.25);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOISE);
  /* ... but a large predicted gain lies outside it: ruled out */
  g = boot(noisy, 5, noisy, 5, 0.5, 1);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_REFUTED);
}

/* Separated arms: the interval lies clear of 0, on the tuned arm's side. */
static void test_separated_arms(void) {
  double base[] = {100, 101, 102, 103, 104}, tuned[] = {80, 81, 82, 83, 84};
  pt_confirm_gain g = boot(base, 5, tuned, 5, 0.2, 7);
  CU_ASSERT_DOUBLE_EQUAL(g.measured, 20.0 / 102, 1e-15);
  CU_ASSERT(g.lo > 0.15 && g.lo <= g.measured && g.hi >= g.measured && g.hi < 0.25);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_CONFIRMED);
  g = boot(base, 5, tuned, 5, -0.1, 7);           /* predicted slower, measured faster */
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_REFUTED);
  g = boot(base, 5, tuned, 5, 0, 7);              /* no change predicted */
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_REFUTED);
  g = boot(base, 5, tuned, 5, 0.9, 7);            /* the right side, another size: still the direction */
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_CONFIRMED);
  g = boot(tuned, 5, base, 5, -0.2, 7);           /* the tuned arm worse, as predicted */
  CU_ASSERT(g.hi < 0);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_CONFIRMED);
  g = boot(base, 5, tuned, 5, NAN, 7);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NO_PREDICTION);
}

/*
 * A known answer: base {1, 2, 3}, tuned {1, 1, 1}.  A resample of base has
 * median 1 or 3 with probability 7/27 each and 2 with 13/27, so the gain is
 * 0, 1/2 or 2/3; the 2.5% and 97.5% points are 0 and 2/3, the point gain 1/2.
 */
static void test_known_interval(void) {
  double base[] = {1, 2, 3}, tuned[] = {1, 1, 1};
  pt_confirm_gain g = boot(base, 3, tuned, 3, 0.5, 1);
  CU_ASSERT_EQUAL(g.measured, 0.5);
  CU_ASSERT_EQUAL(g.lo, 0);
  CU_ASSERT_DOUBLE_EQUAL(g.hi, 2.0 / 3, 1e-15);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOISE); /* holds 0 and 0.5 */
  /* a constant pair is exact: every resample gives the same gain */
  double b2[] = {4, 4}, t2[] = {1, 1, 1};
  g = boot(b2, 2, t2, 3, 0.75, 3);
  CU_ASSERT_EQUAL(g.measured, 0.75);
  CU_ASSERT_EQUAL(g.lo, 0.75);
  CU_ASSERT_EQUAL(g.hi, 0.75);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_CONFIRMED);
}

static void test_fixed_seed(void) {
  double base[] = {1.00, 1.07, 0.96, 1.02, 0.99, 1.11}, tuned[] = {0.97, 1.01, 0.93, 1.05, 0.95};
  pt_confirm_gain a = boot(base, 6, tuned, 5, 0.02, 1), b = boot(base, 6, tuned, 5, 0.02, 1);
  CU_ASSERT_EQUAL(a.lo, b.lo);
  CU_ASSERT_EQUAL(a.hi, b.hi);
  CU_ASSERT_EQUAL(a.measured, b.measured);
  CU_ASSERT(a.lo < a.measured && a.measured < a.hi);
  /* another seed: the same point gain, an interval of about the same place */
  pt_confirm_gain c = boot(base, 6, tuned, 5, 0.02, 99);
  CU_ASSERT_EQUAL(c.measured, a.measured);
  CU_ASSERT(fabs(c.lo - a.lo) < 0.02 && fabs(c.hi - a.hi) < 0.02);
}

static void test_not_measured(void) {
  double base[] = {1, 2}, zero[] = {0, 1}, nan[] = {1, NAN};
  pt_confirm_gain g = boot(base, 2, base, 0, 0.1, 1);
  CU_ASSERT(isnan(g.measured) && isnan(g.lo) && isnan(g.hi));
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOT_MEASURED);
  g = boot(zero, 2, base, 2, 0.1, 1); /* a baseline of 0: no gain to divide */
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOT_MEASURED);
  g = boot(base, 2, nan, 2, 0.1, 1);
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NOT_MEASURED);
  g = boot(base, 2, zero, 2, NAN, 1); /* a tuned 0 is a measurement */
  CU_ASSERT_EQUAL(g.verdict, PT_VERDICT_NO_PREDICTION);
  pt_err err;
  pt_confirm_gain h = {0};
  CU_ASSERT_EQUAL(pt_confirm_bootstrap(base, 2, base, 2, 0, 1, &h, &err), PT_EUSAGE);
}

/* The rule at its edges. */
static void test_judge(void) {
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, 0.01, 0.2), PT_VERDICT_CONFIRMED);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, 0.15, 0.2), PT_VERDICT_CONFIRMED); /* direction, not size */
  CU_ASSERT_EQUAL(pt_confirm_judge(-0.1, -0.2, -0.01), PT_VERDICT_CONFIRMED);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, -0.2, -0.01), PT_VERDICT_REFUTED);
  CU_ASSERT_EQUAL(pt_confirm_judge(-0.1, 0.01, 0.2), PT_VERDICT_REFUTED);
  CU_ASSERT_EQUAL(pt_confirm_judge(0, 0.01, 0.2), PT_VERDICT_REFUTED);
  CU_ASSERT_EQUAL(pt_confirm_judge(0, -0.01, 0.01), PT_VERDICT_NOISE);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.005, -0.01, 0.01), PT_VERDICT_NOISE);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.01, -0.01, 0.01), PT_VERDICT_NOISE);   /* the ends belong to the interval */
  CU_ASSERT_EQUAL(pt_confirm_judge(0.3, -0.01, 0.01), PT_VERDICT_REFUTED);  /* holds 0, rules the prediction out */
  CU_ASSERT_EQUAL(pt_confirm_judge(-0.3, -0.01, 0.01), PT_VERDICT_REFUTED);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, 0, 0.2), PT_VERDICT_NOISE);         /* lo = 0 holds 0 */
  CU_ASSERT_EQUAL(pt_confirm_judge(0, 0, 0), PT_VERDICT_NOISE);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, 0, 0), PT_VERDICT_REFUTED);
  CU_ASSERT_EQUAL(pt_confirm_judge(NAN, 0.1, 0.2), PT_VERDICT_NO_PREDICTION);
  CU_ASSERT_EQUAL(pt_confirm_judge(0.1, NAN, NAN), PT_VERDICT_NOT_MEASURED);
  for (int v = 0; v < PT_CONFIRM_NVERDICTS; v++)
    CU_ASSERT_EQUAL(pt_confirm_verdict_parse(pt_confirm_verdict_name((pt_confirm_verdict)v)), v);
  CU_ASSERT_EQUAL(pt_confirm_verdict_parse("maybe"), -1);
  CU_ASSERT_STRING_EQUAL(pt_confirm_verdict_name(PT_VERDICT_NOISE), "within noise");
}

static void test_predictions(void) {
  /* 5 ms saved in the allocator over a 10 s run: 0.05% */
  CU_ASSERT_DOUBLE_EQUAL(pt_confirm_time_prediction(9000, 4000, 10), 0.0005, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(pt_confirm_time_prediction(4000, 9000, 10), -0.0005, 1e-15);
  CU_ASSERT(isnan(pt_confirm_time_prediction(NAN, 4000, 10)));
  CU_ASSERT(isnan(pt_confirm_time_prediction(9000, 4000, 0)));
  CU_ASSERT_DOUBLE_EQUAL(pt_confirm_peak_prediction(200, 150), 0.25, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(pt_confirm_peak_prediction(200, 250), -0.25, 1e-15);
  CU_ASSERT_EQUAL(pt_confirm_peak_prediction(200, 200), 0);
  CU_ASSERT(isnan(pt_confirm_peak_prediction(0, 1)));
}

static const char *write_tmp(const char *text) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".jsonl"));
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_read(void) {
  pt_confirm_measure m;
  pt_err err;
  const char *p = write_tmp("{\"pid\": 1, \"allocator\": \"pytorch\", \"peak_reserved_bytes\": 1126170624, "
                            "\"steps_s\": [0.5, 0.25, 0.75], \"gpu_name\": \"NVIDIA H200\", \"future\": {\"x\": 1}, \"note\": \"a\\nb\"}\n");
  CU_ASSERT_EQUAL_FATAL(pt_confirm_read(p, &m, &err), 0);
  CU_ASSERT_EQUAL(m.processes, 1);
  CU_ASSERT_STRING_EQUAL(m.allocator, "pytorch");
  CU_ASSERT(m.has_peak && m.peak_reserved_bytes == 1126170624ULL);
  CU_ASSERT_EQUAL(m.nsteps, 3);
  CU_ASSERT_EQUAL(m.step_processes, 1);
  CU_ASSERT_EQUAL(m.steps_s[1], 0.25);
  CU_ASSERT_STRING_EQUAL(m.gpu_name, "NVIDIA H200");
  CU_ASSERT_STRING_EQUAL(m.note, "a?b");
  char *js;
  CU_ASSERT_EQUAL(pt_confirm_steps_json(m.steps_s, m.nsteps, &js, &err), 0);
  CU_ASSERT_STRING_EQUAL(js, "[0.5,0.25,0.75]");
  free(js);
  pt_confirm_measure_free(&m);
  unlink(p);

  /* two processes: the larger peak, both step lists, allocators that differ are "mixed"; blank lines skipped */
  p = write_tmp("{\"allocator\": \"pagetune\", \"peak_reserved_bytes\": 10, \"steps_s\": [1]}\n\n"
                "{\"allocator\": \"pytorch\", \"peak_reserved_bytes\": 30, \"steps_s\": [2, 3], \"gpu_name\": null}\n"
                "  {\"allocator\": null, \"peak_reserved_bytes\": null}\r\n");
  CU_ASSERT_EQUAL_FATAL(pt_confirm_read(p, &m, &err), 0);
  CU_ASSERT_EQUAL(m.processes, 3);
  CU_ASSERT_STRING_EQUAL(m.allocator, "mixed");
  CU_ASSERT_EQUAL(m.peak_reserved_bytes, 30);
  CU_ASSERT_EQUAL(m.nsteps, 3);
  CU_ASSERT_EQUAL(m.step_processes, 2);
  CU_ASSERT_STRING_EQUAL(m.gpu_name, "");
  pt_confirm_measure_free(&m);
  unlink(p);

  /* no file: nothing measured, not an error; an empty file the same */
  CU_ASSERT_EQUAL(pt_confirm_read(pt_test_tmp(".absent"), &m, &err), 0);
  CU_ASSERT_EQUAL(m.processes, 0);
  CU_ASSERT(!m.has_peak && m.nsteps == 0 && !m.steps_s);
  p = write_tmp("");
  CU_ASSERT_EQUAL(pt_confirm_read(p, &m, &err), 0);
  CU_ASSERT_EQUAL(m.processes, 0);
  unlink(p);
}

static void test_read_refused(void) {
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"{\"allocator\": \"pytorch\"}\nnot json\n", "line 2: line 1, column 1"},
      {"[1, 2]\n", "line 1: not a JSON object"},
      {"{\"allocator\": \"jemalloc\"}\n", "allocator must be"},
      {"{\"peak_reserved_bytes\": -5}\n", "peak_reserved_bytes must be"},
      {"{\"peak_reserved_bytes\": 1.5}\n", "peak_reserved_bytes must be"},
      {"{\"peak_reserved_bytes\": \"12\"}\n", "peak_reserved_bytes must be"},
      {"{\"peak_reserved_bytes\": 99999999999999999999}\n", "peak_reserved_bytes must be"},
      {"{\"steps_s\": 0.5}\n", "steps_s must be an array"},
      {"{\"steps_s\": [0.5, -1]}\n", "steps_s[1] is not a time"},
      {"{\"steps_s\": [\"a\"]}\n", "steps_s[0] is not a time"},
      {"{\"gpu_name\": 5}\n", "gpu_name must be"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *p = write_tmp(bad[i].text);
    pt_confirm_measure m;
    pt_err err = {{0}};
    int rc = pt_confirm_read(p, &m, &err);
    CU_ASSERT(rc == PT_EFORMAT);
    if (!strstr(err.msg, bad[i].why) || !strstr(err.msg, p))
      fprintf(stderr, "\n  case %zu: rc %d, '%s' lacks '%s'\n", i, rc, err.msg, bad[i].why);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, bad[i].why));
    CU_ASSERT(!m.steps_s);
    unlink(p);
  }
}

int pt_test_add_confirm(void) {
  CU_pSuite s = CU_add_suite("confirm", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "medians of odd and even counts; NAN for none; the input untouched", test_median);
  CU_add_test(s, "identical arms: the interval holds 0 (within noise, or refuted for a prediction it excludes)",
              test_identical_arms);
  CU_add_test(s, "separated arms: confirmed on the prediction's side, refuted on the other or for no change",
              test_separated_arms);
  CU_add_test(s, "known intervals: {1,2,3} against {1,1,1} gives [0, 2/3]; constant arms are exact",
              test_known_interval);
  CU_add_test(s, "a fixed seed gives the same interval", test_fixed_seed);
  CU_add_test(s, "a metric without samples, or with a baseline of 0, is not measured", test_not_measured);
  CU_add_test(s, "the verdict rule at each edge", test_judge);
  CU_add_test(s, "predicted gains: allocator time saved as a share of the measured time; peak", test_predictions);
  CU_add_test(s, "the measurement file: one process, several, none", test_read);
  CU_add_test(s, "the measurement file: each malformed form refused with its line", test_read_refused);
  return CU_get_error();
}
