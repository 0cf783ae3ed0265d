/* test_cost.c — cost-line fits on points with known answers. */
#include "cost.h"
#include "testutil.h"

static void test_exact_line(void) {
  /* points on t = 10 + 2e-6 * bytes: the fit must return the line itself */
  pt_cost_points p = {4, {0, 1e6, 5e6, 2e7}, {10, 12, 20, 50}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_fit(&p, &l, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(l.a_us, 10, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(l.b_us_per_byte, 2e-6, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 3e6), 16, 1e-9);
}

static void test_h200_cudafree(void) {
  /* DESIGN.md's cudaFree: 35 µs at 512 B, 43 at 16 MiB, 183 at 256 MiB, 609 at 1 GiB.
     A relative-error fit keeps the small sizes near 35-43 µs and 1 GiB within 10%. */
  pt_cost_points p = {4, {512, 16777216, 268435456, 1073741824}, {35, 43, 183, 609}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_fit(&p, &l, &err), 0);
  CU_ASSERT(pt_cost_eval(&l, 512) > 30 && pt_cost_eval(&l, 512) < 45);
  double big = pt_cost_eval(&l, 1073741824);
  CU_ASSERT(big > 0.9 * 609 && big < 1.1 * 609);
}

static void test_one_point_and_errors(void) {
  pt_cost_points one = {1, {2097152}, {11}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL(pt_cost_fit(&one, &l, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 1e9), 11, 1e-12);
  pt_cost_points same = {2, {4096, 4096}, {1, 2}};
  CU_ASSERT(pt_cost_fit(&same, &l, &err) < 0);
  pt_cost_points neg = {2, {1, 2}, {1, -2}};
  CU_ASSERT(pt_cost_fit(&neg, &l, &err) < 0);
  /* totals: 3 calls of 1 MB on t = 10 + 1e-6 b, plus 2 us bookkeeping x 5 */
  pt_cost_model m = {.bookkeeping_us = 2};
  m.call[PT_DRV_malloc] = (pt_cost_line){10, 1e-6, 1};
  uint64_t calls[PT_DRV_NCALLS] = {0}, bytes[PT_DRV_NCALLS] = {0};
  calls[PT_DRV_malloc] = 3;
  bytes[PT_DRV_malloc] = 3000000;
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, calls, bytes, 5), 30 + 3 + 10, 1e-9);
}

int pt_test_add_cost(void) {
  CU_pSuite s = CU_add_suite("cost", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "fit recovers an exact line", test_exact_line);
  CU_add_test(s, "fit of the H200 cudaFree figures", test_h200_cudafree);
  CU_add_test(s, "one point, degenerate points, totals", test_one_point_and_errors);
  return CU_get_error();
}
