/*
 * test_gpu.c — GPU descriptions: the parser, and the H200 description against
 * what bench/tlb measured on the GPU (docs/h200-translation.md):
 *   - reach: the modelled pointer chase steps up where the measured one did,
 *     within a factor of two (L1 TLB ~256 MiB, second level 64 GiB);
 *   - throughput: the modelled random gather over 32 GiB gives, between
 *     cudaMalloc and VMM handles of 2 MiB / 32 MiB / 512 MiB / 2 GiB, ratios
 *     within 5 percentage points of the measured ones (which differ by at
 *     most 0.12%: the hardware shows no effect, so the model must show none).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "gpu.h"
#include "modeldev.h"
#include "sim.h"
#include "testutil.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static void load_h200(pt_gpu *g) {
  pt_err err = {{0}};
  int rc = pt_gpu_load(pt_test_src("sim/gpus/h200.gpu"), &err, g);
  if (rc < 0) fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/*
 * Map `footprint` bytes the way the device model maps memory of the given
 * kind (cudaMalloc: one segment; VMM: one map per handle), through the
 * device, so the same default page rule is exercised.
 */
static pt_pagetable *map_kind(const pt_gpu *g, uint64_t footprint, uint64_t handle, uint64_t base) {
  pt_pagetable *pt;
  CU_ASSERT_FATAL(pt_pagetable_create(g->mmu, &pt) == 0);
  pt_device d;
  pt_model_dev m;
  pt_err err = {{0}};
  pt_model_dev_init(&m, NULL, 0, &err);
  m.pt = pt;
  pt_dev_init(&d, &pt_model_dev_ops, &m, 0, &err);
  if (!handle) {
    CU_ASSERT_EQUAL(pt_dev_adopt(&d, base, footprint), 0);
  } else {
    for (uint64_t off = 0; off < footprint; off += handle) CU_ASSERT_EQUAL(pt_dev_mem_map(&d, base + off, handle, 1 + off / handle), 0);
  }
  pt_dev_done(&d);
  pt_model_dev_done(&m);
  return pt;
}

static int leaf_level(const pt_mmu_desc *m, uint64_t ps) {
  int p = ps == 4096 ? 0 : ps == 65536 ? 1 : ps == 2 * MiB ? 2 : 3;
  for (int l = 0; l < m->nlevels; l++)
    if (m->level[l].leaf_page == p) return l;
  return m->nlevels;
}

/* ns of translation per load for a one-SM chase over `footprint`, after a warm pass. */
static double chase_ns(const pt_gpu *g, uint64_t footprint) {
  const uint64_t base = UINT64_C(1) << 42;
  pt_pagetable *pt = map_kind(g, footprint, 0, base);
  pt_tlb_config c = g->tlb;
  c.sms = 1;
  pt_tlb *t;
  CU_ASSERT_FATAL(pt_tlb_create(&c, &t) == 0);
  uint64_t pages = footprint / (2 * MiB), stride = 2 * MiB;
  /* a fixed pseudo-random permutation of the pages: multiply by an odd constant mod 2^k */
  uint64_t mask = pages - 1;
  double before = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) before = pt_tlb_miss_ns(t);
    for (uint64_t i = 0; i < pages; i++) {
      uint64_t va = base + ((i * UINT64_C(0x9E3779B1)) & mask) * stride;
      uint64_t ps = pt_pagetable_page_at(pt, va);
      pt_tlb_access(t, 0, va, ps, (uint32_t)leaf_level(g->mmu, ps));
    }
  }
  double ns = (pt_tlb_miss_ns(t) - before) / (double)pages;
  pt_tlb_destroy(t);
  pt_pagetable_destroy(pt);
  return ns;
}

static void test_h200_reach(void) {
  pt_gpu g;
  load_h200(&g);
  /* footprints by powers of two, 32 MiB .. 256 GiB; the model's steps */
  uint64_t l1_step = 0, l2_step = 0;
  double prev = chase_ns(&g, 32 * MiB);
  CU_ASSERT_DOUBLE_EQUAL(prev, 0, 1e-9); /* inside every reach: free */
  for (uint64_t f = 64 * MiB; f <= 256 * GiB; f *= 2) {
    double ns = chase_ns(&g, f);
    if (!l1_step && ns > 2.0) l1_step = f;                 /* half the 5.5 ns L1-miss cost */
    if (!l2_step && ns > 5.5 + 25.0) l2_step = f;          /* half the 50 ns walk on top */
    prev = ns;
  }
  /* measured: L1 reach ~256 MiB, second level 64 GiB; the step shows at the
     first footprint past the reach, so accept (reach/2, 2*reach] of the
     measured reach for the first footprint beyond it */
  fprintf(stderr, "\n  model: L1 step at %llu MiB, L2 step at %llu GiB; last %.1f ns\n",
          (unsigned long long)(l1_step / MiB), (unsigned long long)(l2_step / GiB), prev);
  CU_ASSERT(l1_step > 128 * MiB && l1_step <= 2 * 256 * MiB);
  CU_ASSERT(l2_step > 32 * GiB && l2_step <= 2 * 64 * GiB);
  CU_ASSERT(prev > 50.0 && prev < 60.0); /* far past both: a walk + an L1 miss per load */
}

/* Modelled translation ns per random 4-byte load, 132 SMs, over 32 GiB of the kind. */
static double gather_ns(const pt_gpu *g, uint64_t handle) {
  const uint64_t base = UINT64_C(1) << 42, footprint = 32 * GiB;
  pt_pagetable *pt = map_kind(g, footprint, handle, base);
  pt_tlb *t;
  CU_ASSERT_FATAL(pt_tlb_create(&g->tlb, &t) == 0);
  uint64_t x = 88172645463325252ull, n = 400000;
  double before = 0;
  for (uint64_t i = 0; i < 2 * n; i++) {
    if (i == n) before = pt_tlb_miss_ns(t);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t va = base + (x % (footprint / 4)) * 4;
    uint64_t ps = pt_pagetable_page_at(pt, va);
    pt_tlb_access(t, (uint32_t)(i % g->tlb.sms), va, ps, (uint32_t)leaf_level(g->mmu, ps));
  }
  double ns = (pt_tlb_miss_ns(t) - before) / (double)n;
  pt_tlb_destroy(t);
  pt_pagetable_destroy(pt);
  return ns;
}

static void test_h200_gather_ratios(void) {
  pt_gpu g;
  load_h200(&g);
  /* measured G loads/s over 32 GiB (docs/h200-translation.md), cudaMalloc first */
  const double measured[] = {38.12, 38.07, 38.12, 38.11, 38.11};
  const uint64_t handles[] = {0, 2 * MiB, 32 * MiB, 512 * MiB, 2 * GiB};
  /*
   * Throughput model (Little's law at fixed concurrency): loads/s is
   * proportional to 1 / (data latency + translation latency).  The data
   * latency of a random load over 32 GiB is a DRAM access, 333 ns measured;
   * the translation latency per load is the model's.  Ratio = time_k / time_0.
   */
  const double data_ns = 333.0;
  double t0 = gather_ns(&g, 0);
  CU_ASSERT(t0 > 4.0 && t0 < 7.0); /* 32 GiB: past L1 reach, inside the second level: ~5.5 ns */
  for (int k = 0; k < 5; k++) {
    double tk = gather_ns(&g, handles[k]);
    double model_ratio = (data_ns + tk) / (data_ns + t0);
    double meas_ratio = measured[0] / measured[k];
    fprintf(stderr, "  handle %llu MiB: model ratio %.4f, measured %.4f\n", (unsigned long long)(handles[k] / MiB),
            model_ratio, meas_ratio);
    CU_ASSERT(fabs(model_ratio - meas_ratio) < 0.05);
  }
}

/* A trace of text into a temporary file, loaded and run under mech with the H200 description (tlb: with its
   TLBs); the result is the caller's to free. */
/* g's class lines dropped (cost_repeat, cost_after_large, the repeat bookkeeping lines): what the tests that
   compute a prediction from the plain lines price by (the classes' own pricing: test_cost.c, cost_class.sh). */
static void plain_lines(pt_gpu *g) {
  memset(g->cost.call_repeat, 0, sizeof g->cost.call_repeat);
  memset(g->cost.call_after, 0, sizeof g->cost.call_after);
  g->cost.bookkeeping_repeat.n = g->cost.bookkeeping_call_repeat.n = 0;
  for (int i = 0; i < g->nbookkeeping; i++) g->bookkeeping[i].repeat_line.n = g->bookkeeping[i].repeat_call_line.n = 0;
}

/* text run under h200's plain lines (plain_lines) through mech. */
static void run_text(const char *text, const char *mech, int tlb, pt_gpu *g, pt_sim_result *r) {
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace"));
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
  load_h200(g);
  plain_lines(g);
  pt_err err = {{0}};
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(path, NULL, &err, &t), 0);
  pt_sim_config cfg = {.mech = pt_mech_find(mech), .gpu = g, .tlb = tlb};
  CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, r), 0);
  pt_trace_data_free(&t);
  remove(path);
}

/* The access stream: recorded access records replace the synthetic stream. */
static void run_stream(const char *text, uint64_t *accesses, uint64_t *walks) {
  pt_gpu g;
  pt_sim_result r;
  run_text(text, "caching", 1, &g, &r);
  *accesses = r.tlb.accesses;
  *walks = r.tlb.walks;
  pt_sim_result_free(&r);
}

/* A description of base plus text written to path and loaded into g. */
static void load_desc(const char *path, const char *base, const char *text, pt_gpu *g) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "%s%s", base, text);
  fclose(f);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(path, &err, g), 0);
}

/* Each of bad, after base (6 lines), refused naming line 7. */
static void expect_refused(const char *path, const char *base, const char *const *bad, size_t n) {
  pt_gpu g;
  pt_err err = {{0}};
  for (size_t i = 0; i < n; i++) {
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%s%s", base, bad[i]);
    fclose(f);
    err.msg[0] = 0;
    CU_ASSERT(pt_gpu_load(path, &err, &g) < 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ":7"));
  }
}

/* The class axis's lines: repeat twins per mechanism and per call; absent, the plain lines (n = 0). */
static void test_repeat_lines(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".gpu"));
  const char *base = "name x\nmmu v3\nsms 1\nl1_tlb 1 1 0\nl2_tlb 1 1 0\npwc 1 1\n";
  pt_gpu g;
  load_desc(path, base, "bookkeeping_us 0.5\nbookkeeping_repeat_us 0.25\nbookkeeping_us caching 512:0.2\n"
                        "bookkeeping_repeat_us caching 512:0.05 4096:0.1\nbookkeeping_call_repeat_us caching 0.7\n"
                        "cost malloc 512:2 2097152:40\ncost_repeat malloc 512:1\n", &g);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping_repeat(&g, "caching", 0), 2304), 0.075, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping_repeat(&g, "caching", 1), 1), 0.7, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "caching", 0), 512), 0.2, 1e-12); /* plain unchanged */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping_repeat(&g, "expandable", 0), 1), 0.25, 1e-12); /* the default's */
  CU_ASSERT_EQUAL(pt_gpu_bookkeeping_repeat(&g, "expandable", 1)->n, 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&g.cost.call_repeat[PT_DRV_malloc], 1e6), 1, 1e-12);
  CU_ASSERT_EQUAL(g.cost.call_repeat[PT_DRV_free].n, 0);
  CU_ASSERT_EQUAL(g.points[PT_DRV_malloc].n, 2); /* the plain points, what a fit keeps, are cost's */
  pt_cost_model m = pt_gpu_cost_of(&g, "caching");
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&m.bookkeeping_repeat, 512), 0.05, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&m.bookkeeping_call_repeat, 512), 0.7, 1e-12);
  /* a description without class lines: none, so every repeat is priced by the plain lines */
  load_desc(path, base, "bookkeeping_us caching 512:0.2\ncost malloc 512:2 2097152:40\n", &g);
  m = pt_gpu_cost_of(&g, "caching");
  CU_ASSERT_EQUAL(m.bookkeeping_repeat.n + m.bookkeeping_call_repeat.n, 0);
  for (int c = 0; c < PT_DRV_NCALLS; c++) CU_ASSERT_EQUAL(m.call_repeat[c].n, 0);
  const char *bad[] = {"cost_repeat mmap 512:1\n", "cost_repeat malloc\n", "cost_repeat malloc 512:0\n",
                       "bookkeeping_repeat_us caching\n", "bookkeeping_call_repeat_us caching 512:x\n",
                       "cost_after_large mmap 512:1\n", "cost_after_large free\n", "cost_after_large free 512:-1\n"};
  expect_refused(path, base, bad, sizeof bad / sizeof *bad);
  /* the calls after a large one: a line of their own, the plain points untouched */
  load_desc(path, base, "cost free 512:2 2097152:40\ncost_after_large free 512:3 8192:5\n"
                        "cost address_reserve 2097152:2\ncost address_free 2097152:0.5\n", &g);
  /* a plain line of a call whose name begins as the after key's fifth letter is still a plain line */
  CU_ASSERT_EQUAL(g.cost.call[PT_DRV_address_reserve].n, 1);
  CU_ASSERT_EQUAL(g.cost.call[PT_DRV_address_free].n, 1);
  CU_ASSERT_EQUAL(g.cost.call_after[PT_DRV_address_reserve].n + g.cost.call_after[PT_DRV_address_free].n, 0);
  CU_ASSERT_EQUAL(g.points[PT_DRV_address_reserve].n, 1);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&g.cost.call_after[PT_DRV_free], 4352), 4, 1e-12);
  CU_ASSERT_EQUAL(g.cost.call_after[PT_DRV_malloc].n, 0);
  CU_ASSERT_EQUAL(g.points[PT_DRV_free].n, 2);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(&g.cost.call[PT_DRV_free], 512), 2, 1e-12);
  m = pt_gpu_cost_of(&g, "direct");
  CU_ASSERT_EQUAL(m.call_after[PT_DRV_free].n, 2);
  remove(path);
}

static void test_access_stream(void) {
  uint64_t acc, walks;
  /* 8 MiB (its own 8 MiB segment, 2 MiB pages): synthetic = 4 pages after alloc + 4 before free */
  run_stream("pagetune-trace 1\na 1 8388608 0 1\nf 1 4\nend 2\n", &acc, &walks);
  CU_ASSERT_EQUAL(acc, 8);
  CU_ASSERT_EQUAL(walks, 4);
  /* recorded: the first 4 MiB twice = 2 pages x 2, the second pass hits */
  run_stream("pagetune-trace 1\na 1 8388608 0 1\nx 1 0 4194304 2\nx 1 0 4194304 3\nf 1 4\nend 4\n", &acc, &walks);
  CU_ASSERT_EQUAL(acc, 4);
  CU_ASSERT_EQUAL(walks, 2);
}

/*
 * Predicted driver time follows each call's size, not the mean size of a
 * kind: four 512 B requests and one of 2 MiB under direct (a cudaMalloc
 * each) cost 4 f(512) + f(2 MiB), with f the description's cuMemAlloc
 * curve; the mean size would land on the slope between them instead.
 */
static void test_prediction_by_size(void) {
  pt_gpu g;
  pt_sim_result r;
  run_text("pagetune-trace 1\na 1 512 0 1\na 2 512 0 2\na 3 512 0 3\na 4 512 0 4\na 5 2097152 0 5\n"
           "f 1 6\nf 2 7\nf 3 8\nf 4 9\nf 5 10\nend 10\n",
           "direct", 0, &g, &r);
  const pt_cost_line *m = &g.cost.call[PT_DRV_malloc], *fr = &g.cost.call[PT_DRV_free];
  double want_m = 4 * pt_cost_eval(m, 512) + pt_cost_eval(m, 2097152);
  double want_f = 4 * pt_cost_eval(fr, 512) + pt_cost_eval(fr, 2097152);
  double mean = pt_cost_eval(m, (4 * 512 + 2097152) / 5.0) * 5;
  CU_ASSERT_EQUAL(r.driver_calls[PT_DRV_malloc], 5);
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_call_us[PT_DRV_malloc], want_m, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_call_us[PT_DRV_free], want_f, 1e-9);
  CU_ASSERT(fabs(want_m - mean) > 1.0); /* the case tells the two apart with this description */
  /* every request and free of direct makes a call: its call line, by size (8 of 512 B, 2 of 2 MiB) */
  const pt_cost_line *bk = pt_gpu_bookkeeping(&g, "direct", 1);
  double want_b = 8 * pt_cost_eval(bk, 512) + 2 * pt_cost_eval(bk, 2097152);
  CU_ASSERT(want_b > 0);
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_alloc_us, want_m + want_f + want_b, 1e-9);
  pt_sim_result_free(&r);
}

/*
 * Calls no request makes are not the requests' time: a replay on the GPU times the requests, so the
 * prediction prices their calls and leaves out the others (predicted_untimed_us).  Under direct, a
 * request of 512 B and its free (a cudaMalloc and a cudaFree, timed) around an out-of-memory record of
 * 4 MiB, which the model tries and gives back at once (a cudaMalloc and a cudaFree no request made);
 * under cuda_async, a trace that begins with a segment alive, which the pool maps before any request.
 */
static void test_untimed_calls(void) {
  pt_gpu g;
  pt_sim_result r;
  run_text("pagetune-trace 1\na 1 512 0 1\nO 4194304 0 2\nf 1 3\nend 3\n", "direct", 0, &g, &r);
  const pt_cost_line *m = &g.cost.call[PT_DRV_malloc], *fr = &g.cost.call[PT_DRV_free];
  CU_ASSERT_EQUAL(r.driver_calls[PT_DRV_malloc], 2); /* every call is counted */
  CU_ASSERT_EQUAL(r.driver_calls[PT_DRV_free], 2);
  double probe = pt_cost_eval(m, 4194304) + pt_cost_eval(fr, 4194304);
  double req = pt_cost_eval(m, 512) + pt_cost_eval(fr, 512) + 2 * pt_cost_eval(pt_gpu_bookkeeping(&g, "direct", 1), 512);
  CU_ASSERT(probe > 10 * req); /* the case tells the two apart */
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_alloc_us, req, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_untimed_us, probe, 1e-9);
  /* predicted_call_us is every call's, what `pagetune replay` replays and times */
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_call_us[PT_DRV_malloc], pt_cost_eval(m, 512) + pt_cost_eval(m, 4194304), 1e-9);
  pt_sim_result_free(&r);

  run_text("pagetune-trace 1\nS 0x7f0000000000 2097152 0\nI 1 1024 0 0x7f0000000000\na 2 512 0 1\nf 2 2\nend 4\n",
           "async_pool", 0, &g, &r);
  uint64_t n = 0;
  for (int c = 0; c < PT_DRV_NCALLS; c++) n += r.driver_calls[c];
  CU_ASSERT(n > 0); /* the pool took the segment with VMM calls, before the first request */
  CU_ASSERT(r.predicted_untimed_us > 0);
  /* the two requests hit the pool: their own work only, priced by what they did (h200's bookkeeping_work line) */
  pt_cost_model am = pt_gpu_cost_of(&g, "async_pool");
  CU_ASSERT_EQUAL(am.has_work, 1);
  CU_ASSERT_EQUAL(r.work.requests, 2);
  CU_ASSERT(r.predicted_alloc_us > 0);
  CU_ASSERT_DOUBLE_EQUAL(r.predicted_alloc_us, pt_cost_work_us(&am.work, &r.work), 1e-9);
  double all = 0;
  for (int c = 0; c < PT_DRV_NCALLS; c++) all += r.predicted_call_us[c];
  CU_ASSERT_DOUBLE_EQUAL(all, r.predicted_untimed_us, 1e-9);
  pt_sim_result_free(&r);
}

/*
 * cap_retry without its cap: the model never frees what the real run freed
 * and re-allocated, so a recorded address comes up that the model still
 * holds.  The model leaves the recorded path there (invents addresses)
 * instead of placing a second segment at it, which the page tables refused.
 */
static void test_recorded_address_still_held(void) {
  pt_gpu g;
  load_h200(&g);
  pt_err err = {{0}};
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(pt_test_src("traces/cap_retry.pickle.gz"), NULL, &err, &t), 0);
  pt_sim_config cfg = {.mech = pt_mech_find("caching"), .gpu = &g};
  pt_sim_result r;
  int rc = pt_sim_run(&t, &cfg, &err, &r);
  if (rc < 0) fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_EQUAL(r.addresses_followed, 0);
  pt_sim_result_free(&r);
  cfg.capacity = 631171072; /* with its cap it follows the recorded addresses to the end, as before */
  CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, &r), 0);
  CU_ASSERT_EQUAL(r.addresses_followed, 1);
  CU_ASSERT_EQUAL(r.segments_allocated, r.observed_segment_allocs);
  pt_sim_result_free(&r);
  pt_trace_data_free(&t);
}

static void test_parse_errors(void) {
  pt_gpu g;
  pt_err err = {{0}};
  CU_ASSERT(pt_gpu_load("nonexistent_gpu_name", &err, &g) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no such GPU description"));
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".gpu"));
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("name x\nmmu v9\n", f);
  fclose(f);
  CU_ASSERT(pt_gpu_load(path, &err, &g) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ":2: unknown mmu 'v9'"));
  f = fopen(path, "w");
  fputs("name x\nmmu v3\nsms 132\nl1_tlb 16 8\n", f);
  fclose(f);
  CU_ASSERT(pt_gpu_load(path, &err, &g) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ":4: l1_tlb wants SETS WAYS HIT_NS"));
  remove(path);
  /* the bundled descriptions load */
  CU_ASSERT_EQUAL(pt_gpu_load(pt_test_src("sim/gpus/a100.gpu"), &err, &g), 0);
  CU_ASSERT_PTR_EQUAL(g.mmu, &pt_mmu_v2);
}

/* Bookkeeping: a constant, a mechanism's constant, a mechanism's line by request size; bad lines refused. */
static void test_bookkeeping_lines(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".gpu"));
  const char *base = "name x\nmmu v3\nsms 1\nl1_tlb 1 1 0\nl2_tlb 1 1 0\npwc 1 1\n";
  pt_gpu g;
  load_desc(path, base, "bookkeeping_us 0.5\nbookkeeping_us direct 0\nbookkeeping_us caching 1024:0.2 512:0.1 1048576:0.3\n"
                        "bookkeeping_us stitch 2\nbookkeeping_us stitch 3\nbookkeeping_call_us stitch 7\n"
                        "torch_pair_us native 512:0.4 1048576:0.3\n", &g);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "expandable", 0), 1e6), 0.5, 1e-12); /* the default */
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "direct", 0), 1e6), 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "stitch", 0), 1), 3, 1e-12); /* the last line wins */
  const pt_cost_line *c = pt_gpu_bookkeeping(&g, "caching", 0);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(c, 256), 0.1, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(c, 768), 0.15, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(c, 1048576), 0.3, 1e-12);
  /* no call line: requests that made calls take the plain one; stitch's call line is its own */
  CU_ASSERT_PTR_EQUAL(pt_gpu_bookkeeping(&g, "caching", 1), c);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "stitch", 1), 1), 7, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_eval(pt_gpu_bookkeeping(&g, "expandable", 1), 1), 0.5, 1e-12);
  /* requests priced by their size class and whether they made calls: 3 of 512 B without, 1 of 1 MiB with */
  pt_req_sizes req = {.n = {[9] = 3}, .bytes = {[9] = 1536}, .n_call = {[20] = 1}, .bytes_call = {[20] = 1048576}};
  static pt_call_sizes none;
  pt_cost_model m = {.bookkeeping = *c};
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, &none, &req), 3 * 0.1 + 0.3, 1e-12);
  m.bookkeeping_call = pt_cost_constant(2);
  CU_ASSERT_DOUBLE_EQUAL(pt_cost_alloc_us(&m, &none, &req), 3 * 0.1 + 2, 1e-12);
  const char *bad[] = {"bookkeeping_us caching\n", "bookkeeping_us caching 512:x\n", "bookkeeping_us -1\n",
                       "bookkeeping_us caching 1 2\n", "bookkeeping_us caching 512:0.1 512:0.2\n",
                       "bookkeeping_us caching 512:0\n", "bookkeeping_call_us caching\n", "torch_pair_us\n",
                       "torch_pair_us native 512:-1\n"};
  expect_refused(path, base, bad, sizeof bad / sizeof *bad);
  remove(path);
}

/* The expandable model sizes each segment's VA by the described GPU's memory, not a built-in H200's. */
/* Names are listed once each, and one that is part of another (h20 beside h200) is still listed. */
static void test_gpu_list_names(void) {
  char dir[] = "/tmp/pt_gpulistXXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  const char *names[] = {"h200", "h20", "a100", "a10", "b300", "b30", "l400", "l40", "t400", "t40", "v1000", "v100"}; /* readdir order varies: six chances */
  char path[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s.gpu", dir, names[i]);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
  }
  const char *old = getenv("PAGETUNE_GPU_DIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("PAGETUNE_GPU_DIR", dir, 1);
  char buf[1024];
  CU_ASSERT(pt_gpu_list(buf, sizeof buf) >= 0);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int count = 0;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", buf);
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " ")) count += !strcmp(t, names[i]);
    CU_ASSERT_EQUAL(count, 1);
    if (count != 1) fprintf(stderr, "\n  '%s' listed %d times in '%s'\n", names[i], count, buf);
  }
  if (saved) setenv("PAGETUNE_GPU_DIR", saved, 1);
  else unsetenv("PAGETUNE_GPU_DIR");
  free(saved);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s.gpu", dir, names[i]);
    remove(path);
  }
  rmdir(dir);
}

static void test_expandable_va_from_gpu(void) {
  pt_err err = {{0}};
  pt_gpu g;
  CU_ASSERT_EQUAL_FATAL(pt_gpu_load(pt_test_src("sim/gpus/a100.gpu"), &err, &g), 0);
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(pt_test_src("traces/two_streams.pickle.gz"), NULL, &err, &t), 0);
  pt_call_log log = {0};
  pt_sim_config cfg = {.mech = &pt_mech_expandable, .gpu = &g, .log = &log};
  pt_sim_result r;
  CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, &r), 0);
  uint64_t va = g.memory_bytes + g.memory_bytes / 8, small = (va + 2 * MiB - 1) / (2 * MiB) * (2 * MiB),
           large = (va + 20 * MiB - 1) / (20 * MiB) * (20 * MiB);
  size_t reserves = 0;
  for (size_t i = 0; i < log.n; i++)
    if (log.v[i].call == PT_DRV_address_reserve) {
      reserves++;
      CU_ASSERT(log.v[i].bytes == small || log.v[i].bytes == large);
    }
  CU_ASSERT(reserves >= 2);
  CU_ASSERT_NOT_EQUAL(g.memory_bytes, UINT64_C(150109880320)); /* not the H200's */
  pt_sim_result_free(&r);
  pt_call_log_free(&log);
  pt_trace_data_free(&t);
}

int pt_test_add_gpu(void) {
  CU_pSuite s = CU_add_suite("gpu", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "H200 description: TLB reach within 2x of the measured", test_h200_reach);
  CU_add_test(s, "H200 description: gather ratios within 5 pp of the measured", test_h200_gather_ratios);
  CU_add_test(s, "description parse errors name file and line", test_parse_errors);
  CU_add_test(s, "descriptions listed once each by whole name (h20 beside h200)", test_gpu_list_names);
  CU_add_test(s, "bookkeeping: constants and lines by request size, per mechanism", test_bookkeeping_lines);
  CU_add_test(s, "the repeat class's lines, and their absence", test_repeat_lines);
  CU_add_test(s, "access records replace the synthetic stream", test_access_stream);
  CU_add_test(s, "predicted driver time follows each call's size", test_prediction_by_size);
  CU_add_test(s, "calls no request makes are left out of the requests' time", test_untimed_calls);
  CU_add_test(s, "a recorded address the model still holds ends the recorded path", test_recorded_address_still_held);
  CU_add_test(s, "expandable reserves VA by the described GPU's memory", test_expandable_va_from_gpu);
  return CU_get_error();
}
