/* test_cost.c — cost functions through calibration points, on known answers. */
#include <string.h>

#include "clock.h"
#include "cost.h"
#include "modeldev.h"
#include "testutil.h"

static void test_exact_line(void) {
  /* points on t = 10 + 2e-6 * bytes, given out of order: between them, and
     past the last, the cost is that line */
  pt_cost_points p = {4, {5e6, 0, 2e7, 1e6}, {20, 10, 50, 12}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &l, &err), 0);
  CU_ASSERT_EQUAL(l.n, 4);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 3e6), 16, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 1e6), 12, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 4e7), 90, 1e-9);
}

static void test_step(void) {
  /* cuMemAlloc as calibrated on the H200: 2.5 µs up to 64 KiB (sub-allocated),
     48 at 2 MiB, 110.7 at 1 GiB.  Each point is kept, so the step is there,
     which no single line through them has. */
  pt_cost_points p = {4, {512, 65536, 2097152, 1073741824}, {2.5, 2.5, 48, 110.7}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &l, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 100), 2.5, 1e-12); /* below the first point: its time */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 4096), 2.5, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 20971520), 48 + (110.7 - 48) * (20971520.0 - 2097152) / (1073741824.0 - 2097152), 1e-9);
  CU_ASSERT(pt_cost_eval(&l, 20971520) > 45); /* a 20 MiB segment costs what a 2 MiB one does, about */
}

static void test_h200_cudafree(void) {
  /* docs/design.md's first cudaFree: 35 µs at 512 B, 43 at 16 MiB, 183 at 256 MiB, 609 at 1 GiB.
     Through the points the model gives each one back exactly, and in between
     stays between its neighbours. */
  pt_cost_points p = {4, {512, 16777216, 268435456, 1073741824}, {35, 43, 183, 609}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &l, &err), 0);
  for (size_t i = 0; i < p.n; i++) CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, p.bytes[i]), p.us[i], 1e-9);
  double mid = pt_cost_eval(&l, 134217728);
  CU_ASSERT(mid > 43 && mid < 183);
  CU_ASSERT(pt_cost_eval(&l, 2147483648.0) > 609); /* past the last: the last segment carried on */
}

static void test_one_point_and_errors(void) {
  pt_cost_points one = {1, {2097152}, {11}};
  pt_cost_line l;
  pt_err err;
  CU_ASSERT_EQUAL(pt_cost_line_from_points(&one, &l, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 1e9), 11, 1e-12);
  pt_cost_points same = {2, {4096, 4096}, {1, 2}};
  CU_ASSERT(pt_cost_line_from_points(&same, &l, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "two at 4096 bytes"));
  pt_cost_points neg = {2, {1, 2}, {1, -2}};
  CU_ASSERT(pt_cost_line_from_points(&neg, &l, &err) < 0);
  pt_cost_points none = {0, {0}, {0}};
  CU_ASSERT_EQUAL(pt_cost_line_from_points(&none, &l, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&l, 1e6), 0, 0);
}

static void test_totals_by_size(void) {
  /* 3 calls of 1 MB and 1 of 4 KiB on t = 10 + 1e-6 b, plus 2 µs bookkeeping x 5 */
  pt_cost_points p = {2, {0, 1e7}, {10, 20}};
  pt_cost_model m = {.bookkeeping = pt_cost_constant(2)};
  pt_req_sizes req = {.n = {[9] = 5}, .bytes = {[9] = 5 * 512}};
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &m.call[PT_DRV_malloc], &err), 0);
  static pt_call_sizes sz;
  memset(&sz, 0, sizeof sz);
  sz.calls[PT_DRV_malloc][19] = 3; /* 1e6 is in [2^19, 2^20) */
  sz.bytes[PT_DRV_malloc][19] = 3000000;
  sz.calls[PT_DRV_malloc][12] = 1;
  sz.bytes[PT_DRV_malloc][12] = 4096;
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, &sz, &req), 3 * 11 + (10 + 4096e-6) + 10, 1e-9);
  /* kinds without points cost nothing */
  sz.calls[PT_DRV_free][19] = 7;
  sz.bytes[PT_DRV_free][19] = 7000000;
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, &sz, &req), 3 * 11 + (10 + 4096e-6) + 10, 1e-9);
}

/*
 * The class axis: of 5 requests of 512 B (2 with driver calls) and 4 calls of 1 MB, 3 requests (1 with calls)
 * and 1 call are repeats.  Plain: 2 µs a request, 5 with calls, calls 10 + 1e-6 b.  Repeat lines: 0.5 µs,
 * 1.5 with calls, a call 4 µs.
 */
static void test_totals_by_class(void) {
  pt_cost_points p = {2, {0, 1e7}, {10, 20}};
  pt_cost_model m = {.bookkeeping = pt_cost_constant(2), .bookkeeping_call = pt_cost_constant(5)};
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &m.call[PT_DRV_malloc], &err), 0);
  pt_req_sizes req = {.n = {[9] = 3}, .bytes = {[9] = 3 * 512}, .n_call = {[9] = 2}, .bytes_call = {[9] = 2 * 512}};
  pt_req_sizes rep = {.n = {[9] = 2}, .bytes = {[9] = 2 * 512}, .n_call = {[9] = 1}, .bytes_call = {[9] = 512}};
  static pt_call_sizes sz, rsz;
  memset(&sz, 0, sizeof sz);
  memset(&rsz, 0, sizeof rsz);
  sz.calls[PT_DRV_malloc][19] = 4;
  sz.bytes[PT_DRV_malloc][19] = 4000000;
  rsz.calls[PT_DRV_malloc][19] = 1;
  rsz.bytes[PT_DRV_malloc][19] = 1000000;
  double plain = 4 * 11 + 3 * 2 + 2 * 5;
  /* no repeat line: what pt_cost_alloc_us says */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &(pt_call_books){&sz, &rsz, NULL, NULL}, &req, &rep), plain, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, &sz, &req), plain, 1e-9);
  m.bookkeeping_repeat = pt_cost_constant(0.5);
  /* the repeats' plain requests at 0.5; the one with calls still at the plain call line (5) */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &(pt_call_books){&sz, &rsz, NULL, NULL}, &req, &rep), 4 * 11 + 1 * 2 + 2 * 0.5 + 2 * 5, 1e-9);
  m.bookkeeping_call_repeat = pt_cost_constant(1.5);
  m.call_repeat[PT_DRV_malloc] = pt_cost_constant(4);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &(pt_call_books){&sz, &rsz, NULL, NULL}, &req, &rep),
                         3 * 11 + 4 + 1 * 2 + 2 * 0.5 + 1 * 5 + 1 * 1.5, 1e-9);
  /* every request a repeat: only repeat lines */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &(pt_call_books){&sz, &sz, NULL, NULL}, &req, &req), 4 * 4 + 3 * 0.5 + 2 * 1.5, 1e-9);
}

/*
 * Calls after a large one: 10 cuMemAllocs of 512 B, 4 of them repeats; 3 of the 10 after a large call, 1 of
 * those a repeat.  Plain line 2 µs, repeat line 1 µs; with an after line of 6 µs the 3 are priced by it alone.
 */
static void test_after_large(void) {
  pt_cost_model m = {.call = {[PT_DRV_malloc] = pt_cost_constant(2)}, .call_repeat = {[PT_DRV_malloc] = pt_cost_constant(1)}};
  static pt_call_sizes all, rep, aft, rep_aft;
  all.calls[PT_DRV_malloc][9] = 10, all.bytes[PT_DRV_malloc][9] = 10 * 512;
  rep.calls[PT_DRV_malloc][9] = 4, rep.bytes[PT_DRV_malloc][9] = 4 * 512;
  aft.calls[PT_DRV_malloc][9] = 3, aft.bytes[PT_DRV_malloc][9] = 3 * 512;
  rep_aft.calls[PT_DRV_malloc][9] = 1, rep_aft.bytes[PT_DRV_malloc][9] = 512;
  pt_call_books b = {&all, &rep, &aft, &rep_aft};
  static pt_req_sizes none;
  /* no after line: the classes' lines, as without the after books */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_kind_us(&m, PT_DRV_malloc, &b), 6 * 2 + 4 * 1, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &b, &none, &none), 6 * 2 + 4 * 1, 1e-12);
  m.call_after[PT_DRV_malloc] = pt_cost_constant(6);
  /* the plain class's 6 less its 2 after, the repeats' 4 less their 1, and the 3 after */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_kind_us(&m, PT_DRV_malloc, &b), 4 * 2 + 3 * 1 + 3 * 6, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &b, &none, &none), 4 * 2 + 3 * 1 + 3 * 6, 1e-12);
  /* another kind's after line prices nothing here */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_kind_us(&m, PT_DRV_free, &b), 0, 1e-12);
  b.after = b.repeat_after = NULL; /* no after books: the classes' lines */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_kind_us(&m, PT_DRV_malloc, &b), 6 * 2 + 4 * 1, 1e-12);
}

/* cuMemSetAccess over a range of three mapped 2 MiB handles: one call, costed as three handles. */
static void test_set_access_by_handles(void) {
  static pt_device d;
  pt_model_dev m;
  pt_err err = {{0}};
  pt_model_dev_init(&m, NULL, 0, &err);
  pt_dev_init(&d, &pt_model_dev_ops, &m, 0, &err);
  const uint64_t P = UINT64_C(2) << 20, va = UINT64_C(1) << 40;
  for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(pt_dev_mem_map(&d, va + i * P, P, (uint64_t)i + 1), 0);
  CU_ASSERT_EQUAL(pt_dev_mem_set_access(&d, va, 3 * P), 0);
  CU_ASSERT_EQUAL(d.calls[PT_DRV_mem_set_access], 1);
  CU_ASSERT_EQUAL(d.call_bytes[PT_DRV_mem_set_access], 3 * P);
  CU_ASSERT_EQUAL(d.sizes.calls[PT_DRV_mem_set_access][21], 3); /* three handles of 2^21 bytes */
  CU_ASSERT_EQUAL(d.sizes.calls[PT_DRV_mem_set_access][22], 0);
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&d, va + P, P), 0);
  CU_ASSERT_EQUAL(pt_dev_mem_set_access(&d, va, 3 * P), 0); /* the middle one gone: two handles */
  CU_ASSERT_EQUAL(d.sizes.calls[PT_DRV_mem_set_access][21], 5);
  CU_ASSERT_EQUAL(pt_dev_mem_set_access(&d, va + 8 * P, P), 0); /* no map there: the range as one */
  CU_ASSERT_EQUAL(d.sizes.calls[PT_DRV_mem_set_access][21], 6);
  pt_dev_done(&d);
  pt_model_dev_done(&m);
}

static void test_at_speed(void) {
  /* three timed runs at 0.035, 0.035 and 0.070 us a read: at 0.035 they are 100, 200 and 75; the median is 100, not
     the median run (150, read at 0.070) scaled by its own read (75) */
  double totals[] = {100, 200, 150}, reads[] = {0.035, 0.035, 0.070};
  CU_ASSERT_DOUBLE_EQUAL(pt_clock_at_speed(totals, reads, 3, 0.035), 100, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(pt_clock_at_speed(totals, reads, 3, 0.070), 200, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(pt_clock_at_speed(totals, reads, 1, 0.070), 200, 1e-9); /* one run: its own */
  /* an even count: the upper of the two middle ones, as the median run is chosen */
  double t4[] = {10, 40, 20, 30}, r4[] = {1, 1, 1, 1};
  CU_ASSERT_DOUBLE_EQUAL(pt_clock_at_speed(t4, r4, 4, 1), 30, 1e-9);
  /* equal figures are counted once each */
  double t5[] = {5, 5, 5, 1, 9}, r5[] = {1, 1, 1, 1, 1};
  CU_ASSERT_DOUBLE_EQUAL(pt_clock_at_speed(t5, r5, 5, 1), 5, 1e-9);
  /* no runs, or a read that is not > 0: none (0) */
  CU_ASSERT_EQUAL(pt_clock_at_speed(totals, reads, 0, 0.035), 0);
  reads[1] = 0;
  CU_ASSERT_EQUAL(pt_clock_at_speed(totals, reads, 3, 0.035), 0);
  CU_ASSERT_EQUAL(pt_clock_at_speed(totals, reads, 1, 0), 0);
}

/* A clock of the test's own: 0.035 us a read, and jumps (the process preempted) at the reads listed. */
static long fake_reads;
static double fake_step_s, fake_now_s;
static const long *fake_jump_at;
static size_t fake_njumps;
static double fake_clock(void) {
  fake_now_s += fake_step_s;
  for (size_t i = 0; i < fake_njumps; i++)
    if (fake_jump_at[i] == fake_reads) fake_now_s += 0.010; /* 10 ms away */
  fake_reads++;
  return fake_now_s;
}
static double fake_read_us(int n, double step_us, const long *jumps, size_t njumps) {
  fake_reads = 0, fake_now_s = 0, fake_step_s = step_us * 1e-6, fake_jump_at = jumps, fake_njumps = njumps;
  double r = pt_clock_read_with(n, fake_clock);
  CU_ASSERT_EQUAL(fake_reads, (n < 1 ? 1 : n) + 1); /* n reads and the one the first batch starts from */
  return r;
}

static void test_clock_read(void) {
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(20000, 0.035, NULL, 0), 0.035, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(20000, 0.070, NULL, 0), 0.070, 1e-9); /* a host twice as slow throughout */
  /* preempted for 10 ms in one batch: a mean over the 20 000 reads would say 0.535 us */
  long one[] = {5000};
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(20000, 0.035, one, 1), 0.035, 1e-9);
  /* in 7 of the 15 batches (one each: a batch is 1 333 or 1 334 reads): still the host's speed */
  long seven[] = {10, 3000, 6000, 9000, 12000, 15000, 18000};
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(20000, 0.035, seven, 7), 0.035, 1e-9);
  /* in 8 of them, more than half: the read says slow */
  long eight[] = {10, 3000, 6000, 9000, 12000, 15000, 18000, 19990};
  CU_ASSERT(fake_read_us(20000, 0.035, eight, 8) > 1);
  /* fewer reads than batches: a batch a read; one read, or none asked for: one */
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(4, 0.035, NULL, 0), 0.035, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(1, 0.035, NULL, 0), 0.035, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(fake_read_us(0, 0.035, NULL, 0), 0.035, 1e-9);
  /* the real clock: a positive, finite read */
  double r = pt_clock_read_us(PT_CLOCK_READS);
  CU_ASSERT(r > 0 && r < 1e3);
}

int pt_test_add_cost(void) {
  CU_pSuite s = CU_add_suite("cost", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "request classes: repeats priced by the repeat lines, the rest by the plain ones", test_totals_by_class);
  CU_add_test(s, "calls after a large one: priced by the after line, subtracted from their class", test_after_large);
  CU_add_test(s, "points on a line give that line, past the last too", test_exact_line);
  CU_add_test(s, "a step between points is kept (cuMemAlloc on the H200)", test_step);
  CU_add_test(s, "the first H200 cudaFree points (docs/design.md)", test_h200_cudafree);
  CU_add_test(s, "one point, no points, refused points", test_one_point_and_errors);
  CU_add_test(s, "totals by size class, with bookkeeping", test_totals_by_size);
  CU_add_test(s, "cuMemSetAccess costed by the handles it covers", test_set_access_by_handles);
  CU_add_test(s, "timed runs at one host speed: each by its own clock read, the median", test_at_speed);
  CU_add_test(s, "a clock read: the median batch's, a preempted batch left out", test_clock_read);
  return CU_get_error();
}
