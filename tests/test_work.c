/*
 * test_work.c — the allocator's own work priced by what it did (issue 11): the bookkeeping_work line
 * (gpu.h) parsed and refused, the prediction from known counts (cost.h), the engine's counts (sim.h's
 * work: the free sets' operations read around each request and free) the same on the same trace, the
 * keys and blocks stitch's searches and walks look at counted by hand, and gpu fit's weighted least
 * squares recovering known coefficients (fit.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "cost.h"
#include "fit.h"
#include "gpu.h"
#include "mech.h"
#include "sim.h"
#include "testutil.h"

#define MIB (UINT64_C(1) << 20)

static const char *base_desc = "name x\nmmu v3\nsms 1\nl1_tlb 1 1 0\nl2_tlb 1 1 0\npwc 1 1\n";

static void write_desc(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "%s%s", base_desc, text);
  fclose(f);
}

/* The line: a mechanism's three or four costs (a visit's left out: 0), in place of its lines; another
   mechanism keeps its lines; bad lines name the file's line 7 and a reason. */
static void test_work_line(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".gpu"));
  write_desc(path, "bookkeeping_us 0.5\nbookkeeping_us caching 0.2\nbookkeeping_work caching 0.05 0.0125 0.002\n"
                   "bookkeeping_work stitch 1 0 0 0.5\nbookkeeping_work stitch 2 0 0 0.25\n");
  pt_gpu g;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(path, &err, &g), 0);
  pt_cost_model m = pt_gpu_cost_of(&g, "caching");
  CU_ASSERT_EQUAL(m.has_work, 1);
  CU_ASSERT_DOUBLE_EQUAL(m.work.req_us, 0.05, 0);
  CU_ASSERT_DOUBLE_EQUAL(m.work.op_us, 0.0125, 0);
  CU_ASSERT_DOUBLE_EQUAL(m.work.chunk_us, 0.002, 0);
  CU_ASSERT_EQUAL(m.work.visit_us, 0); /* three costs: visits cost nothing */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&m.bookkeeping, 512), 0.2, 1e-12); /* the lines are still read */
  m = pt_gpu_cost_of(&g, "stitch");
  CU_ASSERT_DOUBLE_EQUAL(m.work.req_us, 2, 0); /* the last line wins */
  CU_ASSERT_DOUBLE_EQUAL(m.work.visit_us, 0.25, 0);
  m = pt_gpu_cost_of(&g, "expandable");
  CU_ASSERT_EQUAL(m.has_work, 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&m.bookkeeping, 512), 0.5, 1e-12);
  /* the bundled h200 has one for every mechanism but direct (its own work is its calls), fitted with visits */
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(pt_test_src("sim/gpus/h200.gpu"), &err, &g), 0);
  const char *priced[] = {"caching", "expandable", "async_pool", "stitch"};
  for (size_t i = 0; i < sizeof priced / sizeof *priced; i++) CU_ASSERT_EQUAL(pt_gpu_cost_of(&g, priced[i]).has_work, 1);
  CU_ASSERT_EQUAL(pt_gpu_cost_of(&g, "direct").has_work, 0);
  CU_ASSERT(pt_gpu_cost_of(&g, "stitch").work.visit_us > 0);
  const char *bad[] = {"bookkeeping_work caching 1 2\n",      "bookkeeping_work 1 2 3\n",
                       "bookkeeping_work 0.1 0.2 0.3 0.4\n",  "bookkeeping_work caching 1 2 -3\n",
                       "bookkeeping_work caching 1 2 x\n",    "bookkeeping_work caching 1 2 3 4 5\n",
                       "bookkeeping_work caching 1 2 3 -4\n", "bookkeeping_work caching 1 2 3 x\n",
                       "bookkeeping_work caching 1 nan 3\n",  "bookkeeping_work caching 1 2 1e10\n",
                       "bookkeeping_work\n",                  "bookkeeping_work an_overlong_mechanism_name 1 2 3\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_desc(path, bad[i]);
    err.msg[0] = 0;
    CU_ASSERT(pt_gpu_load(path, &err, &g) < 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ":7: "));
    if (!strstr(err.msg, ":7: ")) fprintf(stderr, "\n  %s: %s\n", bad[i], err.msg);
  }
  remove(path);
}

/* Known counts: 0.05 µs × 100 requests + 0.01 × 300 operations + 0.002 × 1 000 chunks + 0.001 × 4 000 visits =
   14 µs of own work, beside 4 calls of 1 MB at 11 µs; the bookkeeping lines (2 µs a request) are not used. */
static void test_work_prediction(void) {
  pt_cost_points p = {2, {0, 1e7}, {10, 20}};
  pt_cost_model m = {.bookkeeping = pt_cost_constant(2), .bookkeeping_call = pt_cost_constant(5)};
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_cost_line_from_points(&p, &m.call[PT_DRV_malloc], &err), 0);
  pt_req_sizes req = {.n = {[9] = 96}, .bytes = {[9] = 96 * 512}, .n_call = {[19] = 4}, .bytes_call = {[19] = 4000000}};
  static pt_req_sizes none_req;
  static pt_call_sizes sz, none;
  sz.calls[PT_DRV_malloc][19] = 4;
  sz.bytes[PT_DRV_malloc][19] = 4000000;
  pt_work_counts c = {100, 300, 1000, 4000};
  double lines = 4 * 11 + 96 * 2 + 4 * 5;
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_total_us(&m, &(pt_call_books){&sz, &none, NULL, NULL}, &req, &none_req, &c), lines, 1e-9); /* no work line */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_class_us(&m, &(pt_call_books){&sz, &none, NULL, NULL}, &req, &none_req), lines, 1e-9);
  m.has_work = 1;
  m.work = (pt_cost_work){0.05, 0.01, 0.002, 0.001};
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_work_us(&m.work, &c), 14, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_total_us(&m, &(pt_call_books){&sz, &none, NULL, NULL}, &req, &none_req, &c), 4 * 11 + 14, 1e-9);
}

/* A caching trace with reuse, splits and merges, into a temporary file. */
static const char *caching_trace =
    "pagetune-trace 1\n"
    "a 1 512 0 1\na 2 4096 0 2\na 3 1048576 0 3\nf 2 4\na 4 1024 0 5\na 5 3000000 0 6\nf 1 7\nf 4 8\n"
    "a 6 512 0 9\na 7 700 0 10\nf 3 11\na 8 600000 0 12\nf 5 13\nf 6 14\nf 7 15\nf 8 16\nend 16\n";

static void run_desc(const char *trace_path, const char *gpu_path, const char *desc, pt_sim_result *r) {
  write_desc(gpu_path, desc);
  pt_gpu g;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(gpu_path, &err, &g), 0);
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(trace_path, NULL, &err, &t), 0);
  pt_sim_config cfg = {.mech = pt_mech_find("caching"), .gpu = &g};
  CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, r), 0);
  pt_trace_data_free(&t);
}

/* The engine's counts: every request and free made, the same on the same trace twice; none without a GPU
   description; a work line prices them, in place of the bookkeeping lines. */
static void test_work_counts(void) {
  char trace[4096], gpu[4096];
  snprintf(trace, sizeof trace, "%s", pt_test_tmp(".trace"));
  snprintf(gpu, sizeof gpu, "%s", pt_test_tmp(".gpu"));
  FILE *f = fopen(trace, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(caching_trace, f);
  fclose(f);
  const char *calls = "cost malloc 512:40 1073741824:100\ncost free 512:30\n";
  char with_lines[512], with_work[512];
  snprintf(with_lines, sizeof with_lines, "%sbookkeeping_us caching 7\n", calls);
  snprintf(with_work, sizeof with_work, "%sbookkeeping_us caching 7\nbookkeeping_work caching 0.5 0.25 0.125 0.0625\n",
           calls);
  pt_sim_result a, b, c, d;
  run_desc(trace, gpu, calls, &a);
  run_desc(trace, gpu, with_lines, &b);
  run_desc(trace, gpu, with_work, &c);
  CU_ASSERT_EQUAL(a.work.requests, a.allocs + a.frees); /* no request failed here */
  CU_ASSERT_EQUAL(a.work.requests, 16);
  CU_ASSERT(a.work.ops >= a.work.requests); /* a best fit searches the set at least once a request */
  CU_ASSERT(a.work.chunks > 0);
  CU_ASSERT(a.work.visits > 0);
  CU_ASSERT_EQUAL(b.work.requests, a.work.requests);
  CU_ASSERT_EQUAL(b.work.ops, a.work.ops);
  CU_ASSERT_EQUAL(b.work.chunks, a.work.chunks);
  CU_ASSERT_EQUAL(b.work.visits, a.work.visits);
  CU_ASSERT_DOUBLE_EQUAL(b.predicted_alloc_us - a.predicted_alloc_us, 16 * 7, 1e-9); /* the lines, as before */
  double w = 0.5 * (double)a.work.requests + 0.25 * (double)a.work.ops + 0.125 * (double)a.work.chunks +
             0.0625 * (double)a.work.visits;
  CU_ASSERT_DOUBLE_EQUAL(c.predicted_alloc_us - a.predicted_alloc_us, w, 1e-9); /* the work line, not the lines */
  CU_ASSERT_DOUBLE_EQUAL(c.predicted_untimed_us, a.predicted_untimed_us, 1e-9);
  /* without a GPU description nothing is counted */
  pt_err err = {{0}};
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(trace, NULL, &err, &t), 0);
  pt_sim_config cfg = {.mech = pt_mech_find("caching")};
  CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, &d), 0);
  CU_ASSERT_EQUAL(d.work.requests + d.work.ops + d.work.chunks + d.work.visits, 0);
  pt_trace_data_free(&t);
  pt_sim_result_free(&a);
  pt_sim_result_free(&b);
  pt_sim_result_free(&c);
  pt_sim_result_free(&d);
  remove(trace);
  remove(gpu);
}

/*
 * Stitch's walk along a range's blocks counted by hand.  R1, a 4 MiB range, holds two 1 MiB blocks in use
 * and its second page free; R2, a 2 MiB range, is free.  A 4 MiB request stitches the two free pages into a
 * new VA range; freed, the range is cached.  The same request again reuses it, and what it looks at is:
 *   best fit over the free set (R1's page and R2, 2 keys)                           2
 *   the cache set's lower bound (1 key)                                              1
 *   each page's block, checked free: R2's page is its range's first block (1); R1's
 *     is its range's third, after the two blocks in use (3)                           4
 *   the cache entry erased (1 key)                                                   1
 *   each page's block again, to lend it                                              4
 *   the two blocks erased from the free set (2 keys, then 1)                         3
 * 15 visits, 8 of them the walks; 5 operations (two lower bounds, three erases); no insert, so no chunk.
 */
static void test_work_stitch_walk(void) {
  pt_model_dev model;
  pt_device dev;
  pt_err err = {{0}};
  uint64_t allocated = 0;
  int fault = 0;
  pt_mech_counters ctr = {0};
  pt_params params = {0};
  pt_policy_hooks hooks = {0};
  pt_model_dev_init(&model, NULL, 0, &err);
  pt_dev_init(&dev, &pt_model_dev_ops, &model, 0, &err);
  pt_mech_env env = {.dev = &dev, .counters = &ctr, .params = &params, .hooks = &hooks, .err = &err,
                     .allocated = &allocated, .fault = &fault};
  const pt_mech_ops *m = &pt_mech_stitch;
  void *st;
  CU_ASSERT_EQUAL_FATAL(pt_mech_create(m, &env, &st), 0);
  uint64_t r1, r2, p, q, s, t;
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, 4 * MIB, 0, &r1), 0); /* R1 */
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, 2 * MIB, 0, &r2), 0); /* R2 */
  CU_ASSERT_EQUAL(m->free(st, r1), 0);
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, MIB, 0, &p), 0); /* R1's first MiB */
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, MIB, 0, &q), 0); /* its second: the second page stays free */
  CU_ASSERT_EQUAL(m->free(st, r2), 0);
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, 4 * MIB, 0, &s), 0); /* stitched */
  CU_ASSERT_EQUAL(dev.calls[PT_DRV_mem_create], 3);
  CU_ASSERT_EQUAL(dev.calls[PT_DRV_address_reserve], 3);
  CU_ASSERT_EQUAL(m->free(st, s), 0); /* cached */
  uint64_t hits = ctr.cache_hits, maps = dev.calls[PT_DRV_mem_map];
  pt_bset_work w0 = pt_bset_work_read();
  CU_ASSERT_EQUAL_FATAL(m->alloc(st, 4 * MIB, 0, &t), 0);
  pt_bset_work w1 = pt_bset_work_read();
  CU_ASSERT_EQUAL(ctr.cache_hits, hits + 1); /* the cached range, no call */
  CU_ASSERT_EQUAL(dev.calls[PT_DRV_mem_map], maps);
  CU_ASSERT_EQUAL(m->addr_of(st, t), m->addr_of(st, s));
  CU_ASSERT_EQUAL(w1.visits - w0.visits, 15);
  CU_ASSERT_EQUAL(w1.ops - w0.ops, 5);
  CU_ASSERT_EQUAL(w1.chunks - w0.chunks, 0);
  CU_ASSERT_EQUAL(m->free(st, t), 0);
  CU_ASSERT_EQUAL(m->free(st, p), 0);
  CU_ASSERT_EQUAL(m->free(st, q), 0);
  m->destroy(st);
  pt_dev_done(&dev);
  pt_model_dev_done(&model);
}

/* Whether w is the non-negative least-squares optimum of mech's normal equations in f (the conditions that
   hold there and nowhere else): the gradient xtx.b - xty is 0 on every term above 0 and >= 0 on the rest. */
static int nnls_optimal(const pt_cost_fit *f, const char *mech, const pt_cost_work *w) {
  int m = 0;
  while (m < f->nmech && strcmp(f->mech[m].name, mech)) m++;
  if (m == f->nmech) return 0;
  double b[PT_FIT_WORK_TERMS] = {w->req_us, w->op_us, w->chunk_us, w->visit_us};
  for (int i = 0; i < PT_FIT_WORK_TERMS; i++) {
    double g = -f->mech[m].xty[i], scale = fabs(f->mech[m].xty[i]);
    for (int j = 0; j < PT_FIT_WORK_TERMS; j++) g += f->mech[m].xtx[i][j] * b[j];
    if (b[i] < 0 || (b[i] > 0 && fabs(g) > 1e-6 * scale) || (b[i] == 0 && g < -1e-6 * scale)) return 0;
  }
  return 1;
}

/* gpu fit --work's solve: runs whose own work is exactly 0.05 R + 0.01 O + 0.002 C + 0.0005 V give those
   coefficients back; own work 0.05 R + 0.01 O - 0.001 C (a negative chunk cost) drops the chunk term, which
   leaves the others non-negative, and own work off every line (a known noise on the first) is fitted to the
   non-negative optimum; the written line reads back. */
static void test_work_fit(void) {
  static const pt_work_counts runs[] = {{1000, 1500, 800, 3000},  {2000, 2500, 9000, 100},  {500, 2000, 100, 7000},
                                        {4000, 4100, 4000, 500}, {300, 900, 2700, 12000}, {10000, 15000, 50, 40000}};
  static const double noise[] = {1.3, 0.8, 1.1, 0.7, 1.25, 0.9};
  pt_cost_fit *f = calloc(1, sizeof *f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  pt_err err = {{0}};
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    const pt_work_counts *c = &runs[i];
    double own = 0.05 * (double)c->requests + 0.01 * (double)c->ops + 0.002 * (double)c->chunks + 0.0005 * (double)c->visits;
    CU_ASSERT_EQUAL(pt_cost_fit_work(f, "caching", c, own, &err), 0);
    double neg = 0.05 * (double)c->requests + 0.01 * (double)c->ops - 0.001 * (double)c->chunks;
    CU_ASSERT_EQUAL(pt_cost_fit_work(f, "expandable", c, neg, &err), 0);
    CU_ASSERT_EQUAL(pt_cost_fit_work(f, "async_pool", c, noise[i] * (0.02 * (double)c->ops + 0.001 * (double)c->visits), &err), 0);
  }
  CU_ASSERT_EQUAL(pt_cost_fit_work(f, "caching", &runs[0], 0, &err), 0); /* no relative error: skipped */
  CU_ASSERT_EQUAL(f->work_skipped, 1);
  pt_cost_work w;
  CU_ASSERT_EQUAL_FATAL(pt_cost_fit_work_solve(f, "caching", &w, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(w.req_us, 0.05, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(w.op_us, 0.01, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(w.chunk_us, 0.002, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(w.visit_us, 0.0005, 1e-9);
  CU_ASSERT(nnls_optimal(f, "caching", &w));
  CU_ASSERT_EQUAL_FATAL(pt_cost_fit_work_solve(f, "expandable", &w, &err), 0);
  CU_ASSERT_EQUAL(w.chunk_us, 0);
  CU_ASSERT(w.req_us >= 0 && w.op_us >= 0 && w.visit_us >= 0 && w.req_us + w.op_us > 0);
  CU_ASSERT(nnls_optimal(f, "expandable", &w));
  CU_ASSERT_EQUAL_FATAL(pt_cost_fit_work_solve(f, "async_pool", &w, &err), 0);
  CU_ASSERT(nnls_optimal(f, "async_pool", &w));
  CU_ASSERT(pt_cost_fit_work_solve(f, "stitch", &w, &err) < 0); /* no runs of it */
  /* written and read back: the fitted lines of both, in place of the base's */
  char in_path[4096], out_path[4096];
  snprintf(in_path, sizeof in_path, "%s", pt_test_tmp(".gpu"));
  snprintf(out_path, sizeof out_path, "%s", pt_test_tmp(".gpu"));
  write_desc(in_path, "bookkeeping_work caching 9 9 9\nbookkeeping_work stitch 1 2 3\n");
  CU_ASSERT_EQUAL(pt_cost_fit_requests(f, "caching", PT_REQ_OTHER, 0, 10, 5120, 1.0, &err), 0);
  FILE *in = fopen(in_path, "r"), *out = fopen(out_path, "w");
  CU_ASSERT_FATAL(in && out);
  CU_ASSERT_EQUAL(pt_cost_fit_write(f, in, NULL, out, "y", "a test", &err), 0);
  fclose(in);
  fclose(out);
  pt_gpu g;
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(out_path, &err, &g), 0);
  pt_cost_model m = pt_gpu_cost_of(&g, "caching");
  CU_ASSERT_EQUAL(m.has_work, 1);
  CU_ASSERT(fabs(m.work.req_us / 0.05 - 1) < 1e-5 && fabs(m.work.op_us / 0.01 - 1) < 1e-5 &&
            fabs(m.work.chunk_us / 0.002 - 1) < 1e-5 && fabs(m.work.visit_us / 0.0005 - 1) < 1e-5);
  CU_ASSERT_EQUAL(pt_gpu_cost_of(&g, "expandable").has_work, 1);
  m = pt_gpu_cost_of(&g, "stitch"); /* not measured: the base's line kept */
  CU_ASSERT(m.has_work && m.work.chunk_us == 3);
  remove(in_path);
  remove(out_path);
  free(f);
}

int pt_test_add_work(void) {
  CU_pSuite s = CU_add_suite("work", NULL, NULL);
  if (!s) return -1;
  CU_add_test(s, "bookkeeping_work: parsed per mechanism, bad lines refused naming the line", test_work_line);
  CU_add_test(s, "own work priced from known counts, in place of the lines", test_work_prediction);
  CU_add_test(s, "the engine's work counts: the same twice, priced by the line", test_work_counts);
  CU_add_test(s, "stitch's walks and searches: the visits of a cached range's reuse, by hand", test_work_stitch_walk);
  CU_add_test(s, "gpu fit --work's least squares recovers known costs, drops a negative one", test_work_fit);
  return 0;
}
