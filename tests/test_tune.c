/*
 * test_tune.c — the tuner on objectives whose optimum is known:
 * f(x, y, z) = (x - 3)^2 + (log10 y - 2)^2 + (z == 4 ? 0 : 1), with x
 * continuous in [0, 10], y log-scaled in [1, 1e4], z a choice of {1, 2, 4, 8}:
 * the minimum is 0 at x = 3, y = 100, z = 4.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "tune.h"

static int calls;

static double bowl_at(const pt_params *p) {
  double x = pt_params_get(p, "x", NAN), y = pt_params_get(p, "y", NAN), z = pt_params_get(p, "z", NAN);
  return (x - 3) * (x - 3) + (log10(y) - 2) * (log10(y) - 2) + (z == 4 ? 0 : 1);
}

static int bowl(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  calls++;
  *value = bowl_at(p);
  return 0;
}

static void test_known_optimum(void) {
  static const double zs[] = {1, 2, 4, 8};
  pt_tune_param ps[] = {
      {"x", 9, 0, 10, 0, 0, NULL, 0, NULL},
      {"y", 5000, 1, 1e4, 1, 0, NULL, 0, NULL},
      {"z", 1, 0, 0, 0, 0, zs, 4, NULL},
  };
  pt_tune_opts o = {.budget = 800, .starts = 2, .seed = 7};
  pt_tune_result r;
  pt_err err;
  calls = 0;
  CU_ASSERT_EQUAL_FATAL(pt_tune(ps, 3, &o, bowl, NULL, &err, &r), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_params_get(&r.best, "x", NAN), 3, 0.05);
  CU_ASSERT_DOUBLE_EQUAL(log10(pt_params_get(&r.best, "y", NAN)), 2, 0.05);
  CU_ASSERT_EQUAL(pt_params_get(&r.best, "z", NAN), 4);
  CU_ASSERT(r.best_value < 0.01);
  CU_ASSERT(r.evaluations <= 800);
  CU_ASSERT_EQUAL(r.evaluations, calls); /* memoised points are counted once */
}

/* A list-valued knob is a grid parameter: every choice, lists among them, is tried, and the best is the list. */
static int by_table(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  calls++;
  const pt_plist *l = pt_params_get_list(p, "t");
  *value = l ? 10 - l->v[15] : 20 - pt_params_get(p, "t", NAN); /* the list with 8 in its last entry: 2 */
  return 0;
}

static void test_list_choices(void) {
  static const double nums[] = {4, NAN, NAN};
  static pt_plist lists[3];
  double num;
  char why[100];
  lists[0].n = 0;
  CU_ASSERT_EQUAL_FATAL(pt_param_value_parse("[256:1,>:8]", &num, &lists[1], why, sizeof why), 0);
  CU_ASSERT_EQUAL_FATAL(pt_param_value_parse("[256:1,>:2]", &num, &lists[2], why, sizeof why), 0);
  pt_tune_param ps[] = {{"t", 4, 0, 0, 0, 1, nums, 3, lists}};
  pt_tune_opts o = {.budget = 20, .starts = 1, .seed = 1};
  pt_tune_result r;
  pt_err err;
  calls = 0;
  CU_ASSERT_EQUAL_FATAL(pt_tune(ps, 1, &o, by_table, NULL, &err, &r), 0);
  CU_ASSERT_EQUAL(calls, 3);
  CU_ASSERT_EQUAL(r.best_value, 2);
  const pt_plist *best = pt_params_get_list(&r.best, "t");
  CU_ASSERT_PTR_NOT_NULL_FATAL(best);
  CU_ASSERT_EQUAL(best->v[15], 8);
}

static int parabola(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  calls++;
  double n = pt_params_get(p, "n", NAN);
  *value = (n - 10.3) * (n - 10.3);
  return 0;
}

/*
 * tune -j N: a prefetch that makes points ahead (here: evaluates the bowl,
 * with a hole of infeasible points so that starts are replaced by probes)
 * must leave the search as it was: the same points asked of eval, in the
 * same order, the same result.  And it must have made most of them ahead.
 */
typedef struct trail {
  pt_params asked[512];
  int n, made, prefetches, hits;
  pt_params ahead[4096];
  int nahead;
} trail;

static double holed(const pt_params *p) {
  return pt_params_get(p, "x", NAN) > 6 ? HUGE_VAL : bowl_at(p); /* x > 6: out of memory, say */
}

static int same_params(const pt_params *a, const pt_params *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].name, b->v[i].name) || a->v[i].value != b->v[i].value) return 0;
  return 1;
}

static int trail_eval(void *ctx, const pt_params *p, double *value, pt_err *err) {
  trail *t = ctx;
  (void)err;
  if (t->n < 512) t->asked[t->n] = *p;
  t->n++;
  for (int i = 0; i < t->nahead; i++) t->hits += same_params(&t->ahead[i], p);
  *value = holed(p);
  return 0;
}

static int trail_prefetch(void *ctx, const pt_params *pts, int n, double *values, pt_err *err) {
  trail *t = ctx;
  (void)err;
  t->prefetches++;
  for (int i = 0; i < n; i++) {
    values[i] = holed(&pts[i]);
    for (int k = 0; k < t->nahead; k++) CU_ASSERT_FALSE(same_params(&t->ahead[k], &pts[i])); /* each made once */
    if (t->nahead < 4096) t->ahead[t->nahead++] = pts[i];
  }
  t->made += n;
  return 0;
}

static void test_prefetch_same_search(void) {
  static const double zs[] = {1, 2, 4, 8};
  pt_tune_param ps[] = {
      {"x", 9, 0, 10, 0, 0, NULL, 0, NULL},
      {"y", 5000, 1, 1e4, 1, 0, NULL, 0, NULL},
      {"z", 1, 0, 0, 0, 0, zs, 4, NULL},
  };
  static trail alone, ahead;
  for (int budget = 40; budget <= 160; budget += 120) {
    memset(&alone, 0, sizeof alone);
    memset(&ahead, 0, sizeof ahead);
    pt_tune_opts o = {.budget = budget, .starts = 3, .seed = 5};
    pt_tune_result r1, r2;
    pt_err err;
    CU_ASSERT_EQUAL_FATAL(pt_tune(ps, 3, &o, trail_eval, &alone, &err, &r1), 0);
    o.prefetch = trail_prefetch;
    o.parallel = 4;
    CU_ASSERT_EQUAL_FATAL(pt_tune(ps, 3, &o, trail_eval, &ahead, &err, &r2), 0);
    CU_ASSERT_EQUAL(alone.n, ahead.n);
    CU_ASSERT_EQUAL(r1.evaluations, r2.evaluations);
    CU_ASSERT_EQUAL(r1.best_value, r2.best_value);
    CU_ASSERT(same_params(&r1.best, &r2.best));
    int same = alone.n == ahead.n;
    for (int i = 0; same && i < alone.n && i < 512; i++) same = same_params(&alone.asked[i], &ahead.asked[i]);
    CU_ASSERT(same);
    CU_ASSERT(ahead.prefetches > 1);           /* rounds, not one batch */
    CU_ASSERT(ahead.hits * 3 >= ahead.n * 2);  /* at least 2 in 3 of the points asked were made ahead (27/40, 114/160) */
    CU_ASSERT(ahead.made <= 2 * budget);       /* and not much more than the budget was made */
  }
}

static void test_budget_and_integer(void) {
  pt_tune_param ps[] = {{"n", 1, 1, 64, 1, 1, NULL, 0, NULL}};
  pt_tune_opts o = {.budget = 10, .starts = 5, .seed = 1};
  pt_tune_result r;
  pt_err err;
  calls = 0;
  CU_ASSERT_EQUAL(pt_tune(ps, 1, &o, parabola, NULL, &err, &r), 0);
  CU_ASSERT(r.evaluations <= 10);
  CU_ASSERT_EQUAL(r.evaluations, calls);
  double n = pt_params_get(&r.best, "n", NAN);
  CU_ASSERT_EQUAL(n, round(n)); /* integer parameters are rounded */
  o.budget = 100;
  CU_ASSERT_EQUAL(pt_tune(ps, 1, &o, parabola, NULL, &err, &r), 0);
  CU_ASSERT_EQUAL(pt_params_get(&r.best, "n", NAN), 10); /* the best integer */
  pt_tune_param bad[] = {{"y", 1, 0, 10, 1, 0, NULL, 0, NULL}};
  CU_ASSERT(pt_tune(bad, 1, &o, bowl, NULL, &err, &r) < 0); /* log scale from 0 */
}

/*
 * A tuner inside another's objective: the inner one must not touch the outer
 * one's search (a search state shared by every call would be reset by it).
 * Outer: x in [0, 10], value (x - 3)^2 + the inner tuner's best of (n - 10.3)^2.
 */
static int nested(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  pt_tune_param inner[] = {{"n", 1, 1, 64, 1, 1, NULL, 0, NULL}};
  pt_tune_opts o = {.budget = 30, .starts = 1, .seed = 3};
  pt_tune_result r;
  int rc = pt_tune(inner, 1, &o, parabola, NULL, err, &r);
  if (rc < 0) return rc;
  double x = pt_params_get(p, "x", NAN);
  *value = (x - 3) * (x - 3) + r.best_value;
  return 0;
}

static void test_nested(void) {
  pt_tune_param ps[] = {{"x", 9, 0, 10, 0, 0, NULL, 0, NULL}};
  pt_tune_opts o = {.budget = 60, .starts = 1, .seed = 7};
  pt_tune_result r;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_tune(ps, 1, &o, nested, NULL, &err, &r), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_params_get(&r.best, "x", NAN), 3, 0.05);
  CU_ASSERT(r.evaluations > 1 && r.evaluations <= 60);
  CU_ASSERT(isnan(pt_params_get(&r.best, "n", NAN))); /* the inner search's parameter stays inside it */
}

/* An objective that is infinite (or NaN) everywhere but one point, and a
 * budget that runs out while the simplex is being built: GSL must never see
 * a non-finite value (its handler, process-wide, aborts by default). */
static int spiky(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  double x = pt_params_get(p, "x", NAN), y = pt_params_get(p, "y", NAN);
  *value = x == 2 && y == 2 ? 1 : (x > 5 ? NAN : INFINITY);
  return 0;
}

static void test_non_finite(void) {
  pt_tune_param ps[] = {{"x", 2, 0, 10, 0, 0, NULL, 0, NULL}, {"y", 2, 0, 10, 0, 0, NULL, 0, NULL}};
  pt_err err;
  pt_tune_result r;
  for (int budget = 1; budget <= 40; budget += 3) {
    pt_tune_opts o = {.budget = budget, .starts = 3, .seed = 5};
    CU_ASSERT_EQUAL(pt_tune(ps, 2, &o, spiky, NULL, &err, &r), 0);
    CU_ASSERT_EQUAL(r.best_value, 1);
    CU_ASSERT(r.evaluations <= budget);
  }
}

/* Feasible only in a box away from the defaults and the range's ends (as a
 * capacity that the defaults run out of): the starts must be replaced by
 * feasible points, and every point evaluated must be a value the parameter
 * can mean (in range, no subnormal rounding noise). */
static int odd_points;
static int boxed(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  calls++;
  double x = pt_params_get(p, "x", NAN), y = pt_params_get(p, "y", NAN);
  if (!(x >= 0 && x <= 10 && y >= 1 && y <= 1e4) || (x != 0 && fabs(x) < 1e-3) || fpclassify(y) == FP_SUBNORMAL)
    odd_points++;
  int in = x >= 6 && x <= 8 && y >= 100 && y <= 1000;
  *value = in ? (x - 7) * (x - 7) + (log10(y) - 2.5) * (log10(y) - 2.5) : INFINITY;
  return 0;
}

static int never(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)p;
  (void)err;
  calls++;
  *value = INFINITY;
  return 0;
}

static void test_infeasible_starts(void) {
  pt_tune_param ps[] = {{"x", 0, 0, 10, 0, 0, NULL, 0, NULL}, {"y", 1, 1, 1e4, 1, 0, NULL, 0, NULL}};
  pt_err err;
  pt_tune_result r;
  for (unsigned long seed = 1; seed <= 5; seed++) {
    pt_tune_opts o = {.budget = 100, .starts = 3, .seed = seed};
    calls = odd_points = 0;
    CU_ASSERT_EQUAL(pt_tune(ps, 2, &o, boxed, NULL, &err, &r), 0);
    CU_ASSERT(r.best_value < 0.05);
    CU_ASSERT_EQUAL(odd_points, 0);
  }
  pt_tune_opts o = {.budget = 100, .starts = 3, .seed = 1};
  calls = 0;
  CU_ASSERT_EQUAL(pt_tune(ps, 2, &o, never, NULL, &err, &r), PT_ENOTFOUND);
  CU_ASSERT(calls > 3 && calls <= 100); /* the probe grid was tried */
  CU_ASSERT(strstr(err.msg, "finite") != NULL);
}

/* Tuned values are what the knob can mean: a fraction's rounding noise at 0 is 0. */
static int near_zero(void *ctx, const pt_params *p, double *value, pt_err *err) {
  (void)ctx;
  (void)err;
  double g = pt_params_get(p, "g", NAN);
  if ((g != 0 && g < 1e-4) || round(g * 1e4) / 1e4 != g) odd_points++; /* 1e-3 of [0, 0.99] is 1e-4 */
  *value = g; /* the optimum is the end of the range, 0: "off" */
  return 0;
}

static void test_values_meant(void) {
  pt_tune_param ps[] = {{"g", 0.5, 0, 0.99, 0, 0, NULL, 0, NULL}};
  pt_tune_opts o = {.budget = 200, .starts = 3, .seed = 2};
  pt_tune_result r;
  pt_err err;
  odd_points = 0;
  CU_ASSERT_EQUAL(pt_tune(ps, 1, &o, near_zero, NULL, &err, &r), 0);
  CU_ASSERT_EQUAL(pt_params_get(&r.best, "g", NAN), 0);
  CU_ASSERT_EQUAL(odd_points, 0);
}

int pt_test_add_tune(void) {
  CU_pSuite s = CU_add_suite("tune", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "a list-valued knob: each choice, lists among them, tried once", test_list_choices);
  CU_add_test(s, "finds the known optimum (grid x Nelder-Mead, log scale)", test_known_optimum);
  CU_add_test(s, "budget, integers, bad ranges", test_budget_and_integer);
  CU_add_test(s, "points made ahead (tune -j) leave the search as it was", test_prefetch_same_search);
  CU_add_test(s, "a tuner inside another's objective", test_nested);
  CU_add_test(s, "non-finite objectives and a budget spent mid-simplex", test_non_finite);
  CU_add_test(s, "infeasible starts replaced; nothing feasible is PT_ENOTFOUND", test_infeasible_starts);
  CU_add_test(s, "tuned values are what the parameter can mean", test_values_meant);
  return CU_get_error();
}
