/*
 * test_calibrate.c — the allocators' own work as calibrate measures and
 * writes it (calibrate.h, torchcal.h), without a GPU: every mechanism timed
 * on modelled devices (no driver call in a timed batch, direct's two a pair,
 * everything given back, also when a device call fails); the
 * bookkeeping_us and torch_pair_us text exactly; the JSON members valid;
 * the torch script's result read strictly; and the runner against
 * stand-ins for python: /bin/false, a missing program, one that prints
 * garbage, one that hangs, one that speaks the protocol (with and without a
 * C++ build), and the real script under the real python3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "jsonread.h"
#include "mech.h"
#include "modeldev.h"
#include "testdev.h"
#include "testutil.h"
#include "torchcal.h"

#define MIB (UINT64_C(1) << 20)

static const pt_cal_plan small_plan = {4, {512, MIB, 64 * MIB, 512 * MIB}, 3, 50, 0, 0};

static void test_mechs_on_model(void) {
  pt_test_models counts = {0};
  pt_alloc_backend be = pt_test_model_backend(&counts);
  pt_cal_series s[PT_CAL_NMECHS];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_calibrate_mechs(&be, &small_plan, 0, s, &err), 0);
  CU_ASSERT_EQUAL(counts.opened, PT_CAL_NMECHS);
  CU_ASSERT_EQUAL(counts.closed, PT_CAL_NMECHS);
  const char *names[] = {"direct", "caching", "expandable", "async_pool", "stitch"};
  for (int i = 0; i < PT_CAL_NMECHS; i++) {
    CU_ASSERT_STRING_EQUAL(s[i].name, names[i]);
    CU_ASSERT_STRING_EQUAL(s[i].from, "mechanism");
    CU_ASSERT_EQUAL_FATAL(s[i].n, small_plan.nsizes);
    for (size_t k = 0; k < s[i].n; k++) {
      const pt_cal_point *p = &s[i].at[k];
      CU_ASSERT_EQUAL(p->bytes, small_plan.sizes[k]);
      CU_ASSERT(p->pair_us > 0 && p->min_us <= p->pair_us && p->pair_us <= p->max_us);
      CU_ASSERT_EQUAL(p->batches, 3);
      CU_ASSERT(p->pairs >= 10 && p->pairs <= 50);
      if (i == 0) { /* direct: a cudaMalloc and a cudaFree a pair, timed; its own work 0 */
        CU_ASSERT_EQUAL(p->driver_calls, 2 * (uint64_t)p->pairs * p->batches);
        CU_ASSERT(p->driver_us > 0 && p->driver_us <= p->max_us);
        CU_ASSERT_EQUAL(pt_calibrate_bookkeeping_us(&s[i], k), 0);
      } else { /* a cached pair makes no call: async_pool's pool is not trimmed, the 512 B block holds it */
        CU_ASSERT_EQUAL(p->driver_calls, 0);
        CU_ASSERT_EQUAL(p->driver_us, 0);
        CU_ASSERT_DOUBLE_EQUAL(pt_calibrate_bookkeeping_us(&s[i], k), p->pair_us / 2, 1e-12);
      }
    }
  }
  /* the free-set work a request or free of the loop did (bset.h), as the engine counts it in a replay of the same
     loop (bench/replay/loop_points.py): at 512 B and at 64 MiB, by mechanism */
  const struct {
    int mech;
    size_t k;
    double ops, chunks, visits;
  } work[] = {{0, 0, 0, 0, 0},     {1, 0, 2.5, 1, 1}, {1, 2, 1.5, 0.5, 0.5}, {2, 0, 3, 1, 2},
              {3, 0, 0.5, 0, 0},   {3, 2, 0.5, 0, 0}, {4, 0, 2.5, 1, 1.5},   {4, 2, 1.5, 0.5, 2.5}};
  for (size_t j = 0; j < sizeof work / sizeof work[0]; j++) {
    const pt_cal_point *p = &s[work[j].mech].at[work[j].k];
    CU_ASSERT_DOUBLE_EQUAL(p->ops, work[j].ops, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(p->chunks, work[j].chunks, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(p->visits, work[j].visits, 1e-9);
    if (fabs(p->ops - work[j].ops) + fabs(p->chunks - work[j].chunks) + fabs(p->visits - work[j].visits) > 1e-9)
      fprintf(stderr, "%s at %llu: %g %g %g\n", s[work[j].mech].name, (unsigned long long)p->bytes, p->ops, p->chunks,
              p->visits);
  }
  pt_cal_plan bad = small_plan;
  bad.batches = 0;
  CU_ASSERT_EQUAL(pt_calibrate_mechs(&be, &bad, 0, s, &err), PT_EUSAGE);
  bad = small_plan;
  bad.sizes[1] = 0;
  CU_ASSERT_EQUAL(pt_calibrate_mechs(&be, &bad, 0, s, &err), PT_EUSAGE);
}

/* The crowded loop (pt_calibrate_mechs): at the sizes up to crowd_upto, the same pairs among crowd free blocks, after
   the cached loop's points; no driver call in its timed pairs either; a search there looks at a full chunk of keys
   (bset.h: 16) where the cached loop's looks at one or two. */
static void test_crowded_on_model(void) {
  pt_test_models counts = {0};
  pt_alloc_backend be = pt_test_model_backend(&counts);
  pt_cal_plan plan = small_plan;
  plan.crowd = 32;
  plan.crowd_upto = MIB;
  pt_cal_series s[PT_CAL_NMECHS];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_calibrate_mechs(&be, &plan, 0, s, &err), 0);
  CU_ASSERT_EQUAL(counts.opened, PT_CAL_NMECHS);
  CU_ASSERT_EQUAL(counts.closed, PT_CAL_NMECHS);
  /* visits a request or free among the 32 free blocks, at 512 B and 1 MiB (the cached loop's: test_mechs_on_model) */
  const double visits[PT_CAL_NMECHS][2] = {{0, 0}, {8.5, 14}, {17.5, 17.5}, {23.5, 16}, {13, 21}};
  for (int i = 0; i < PT_CAL_NMECHS; i++) {
    CU_ASSERT_EQUAL_FATAL(s[i].n, plan.nsizes + 2); /* the cached loop's four, then the crowded loop's two */
    for (size_t k = 0; k < s[i].n; k++) {
      const pt_cal_point *p = &s[i].at[k], *cached = &s[i].at[k < plan.nsizes ? k : k - plan.nsizes];
      CU_ASSERT_EQUAL(p->bytes, plan.sizes[k < plan.nsizes ? k : k - plan.nsizes]);
      CU_ASSERT_EQUAL(p->crowd, k < plan.nsizes ? 0 : 32);
      CU_ASSERT(p->pair_us > 0 && p->min_us <= p->pair_us && p->pair_us <= p->max_us);
      CU_ASSERT_EQUAL(p->driver_calls, i ? 0 : 2 * (uint64_t)p->pairs * p->batches); /* direct's two a pair */
      if (k < plan.nsizes) continue;
      CU_ASSERT_DOUBLE_EQUAL(p->visits, visits[i][k - plan.nsizes], 1e-9);
      if (i) CU_ASSERT(p->visits > 4 * cached->visits && p->chunks > cached->chunks);
      if (fabs(p->visits - visits[i][k - plan.nsizes]) > 1e-9)
        fprintf(stderr, "%s at %llu among 32: %g %g %g\n", s[i].name, (unsigned long long)p->bytes, p->ops, p->chunks,
                p->visits);
    }
  }
  /* the points bounded: at most PT_CAL_MAX_SIZES of them, 2 to PT_CAL_MAX_CROWD free blocks */
  pt_cal_plan bad = plan;
  bad.crowd = 1;
  CU_ASSERT_EQUAL(pt_calibrate_mechs(&be, &bad, 0, s, &err), PT_EUSAGE);
  bad.crowd = PT_CAL_MAX_CROWD + 1;
  CU_ASSERT_EQUAL(pt_calibrate_mechs(&be, &bad, 0, s, &err), PT_EUSAGE);
  bad = (pt_cal_plan){PT_CAL_MAX_SIZES, {512}, 1, 10, 2, UINT64_MAX};
  for (size_t k = 0; k < PT_CAL_MAX_SIZES; k++) bad.sizes[k] = 512 * (k + 1);
  CU_ASSERT_EQUAL(pt_calibrate_mechs(&be, &bad, 0, s, &err), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "at most 16 points"));
}

/* ---- a modelled device that fails its Nth acquiring call and counts what is held ---- */

typedef struct failing {
  pt_model_dev m;
  long calls, fail_at;   /* fail the fail_at-th acquiring call (0: never) */
  long held;             /* segments + handles held */
  long reserved;         /* VA reservations held */
  pt_err *err;
} failing;

typedef struct failing_ctx {
  long fail_at, fail_open; /* fail_open: only the device opened that time fails (from 1; 0: each one) */
  long opened, closed, left_held, left_reserved, total_calls;
} failing_ctx;

static int acquire(failing *f) {
  if (++f->calls == f->fail_at) return pt_err_set(f->err, PT_EIO, "injected failure at call %ld", f->calls);
  return 0;
}

static int f_malloc(void *st, uint64_t bytes, uint64_t *addr) {
  failing *f = st;
  int rc = acquire(f);
  if (rc == 0 && (rc = pt_model_dev_ops.malloc(&f->m, bytes, addr)) == 0) f->held++;
  return rc;
}
static int f_free(void *st, uint64_t addr, uint64_t bytes) {
  failing *f = st;
  int rc = pt_model_dev_ops.free(&f->m, addr, bytes);
  if (rc == 0) f->held--;
  return rc;
}
static int f_reserve(void *st, uint64_t bytes, uint64_t align, uint64_t *va) {
  failing *f = st;
  int rc = acquire(f);
  if (rc == 0 && (rc = pt_model_dev_ops.address_reserve(&f->m, bytes, align, va)) == 0) f->reserved++;
  return rc;
}
static int f_unreserve(void *st, uint64_t va, uint64_t bytes) {
  failing *f = st;
  int rc = pt_model_dev_ops.address_free(&f->m, va, bytes);
  if (rc == 0) f->reserved--;
  return rc;
}
static int f_create(void *st, uint64_t bytes, uint64_t *h) {
  failing *f = st;
  int rc = acquire(f);
  if (rc == 0 && (rc = pt_model_dev_ops.mem_create(&f->m, bytes, h)) == 0) f->held++;
  return rc;
}
static int f_release(void *st, uint64_t h, uint64_t bytes) {
  failing *f = st;
  int rc = pt_model_dev_ops.mem_release(&f->m, h, bytes);
  if (rc == 0) f->held--;
  return rc;
}
static int f_map(void *st, uint64_t va, uint64_t bytes, uint64_t h) {
  failing *f = st;
  int rc = acquire(f);
  return rc ? rc : pt_model_dev_ops.mem_map(&f->m, va, bytes, h);
}
static int f_access(void *st, uint64_t va, uint64_t bytes) {
  return pt_model_dev_ops.mem_set_access(&((failing *)st)->m, va, bytes);
}
static int f_unmap(void *st, uint64_t va, uint64_t bytes) { return pt_model_dev_ops.mem_unmap(&((failing *)st)->m, va, bytes); }
static int f_adopt(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles) {
  return pt_model_dev_ops.adopt(&((failing *)st)->m, addr, bytes, page, handles);
}

static const pt_dev_ops failing_ops = {"failing", f_malloc, f_free, f_reserve, f_unreserve, f_create,
                                       f_release, f_map, f_access, f_unmap, f_adopt};

static int fb_open(void *ctx, int device, pt_err *err, const pt_dev_ops **ops, void **st) {
  failing_ctx *c = ctx;
  (void)device;
  failing *f = calloc(1, sizeof *f);
  if (!f) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_model_dev_init(&f->m, NULL, 0, err);
  f->fail_at = !c->fail_open || c->opened + 1 == c->fail_open ? c->fail_at : 0;
  f->err = err;
  c->opened++;
  *ops = &failing_ops;
  *st = f;
  return 0;
}

static void fb_close(void *ctx, void *st) {
  failing_ctx *c = ctx;
  failing *f = st;
  c->closed++;
  c->left_held += f->held;
  c->left_reserved += f->reserved;
  c->total_calls += f->calls;
  pt_model_dev_done(&f->m);
  free(f);
}

/* calibrate with the fail_at-th acquiring call failing (of the device opened the fail_open-th time; 0: of each):
   whether it failed or not, every device closed and nothing left held; its return. */
static int run_failing(pt_alloc_backend *be, const pt_cal_plan *plan, long fail_at, long fail_open, pt_cal_series *s,
                       pt_err *err) {
  failing_ctx c = {.fail_at = fail_at, .fail_open = fail_open};
  be->ctx = &c;
  err->msg[0] = 0;
  int rc = pt_calibrate_mechs(be, plan, 0, s, err);
  CU_ASSERT_EQUAL(c.opened, c.closed);
  CU_ASSERT_EQUAL(c.left_held, 0);
  CU_ASSERT(c.left_reserved <= 1);
  return rc;
}

static void test_mechs_device_fails(void) {
  failing_ctx probe = {0};
  pt_alloc_backend be = {fb_open, fb_close, NULL, &probe};
  pt_cal_series s[PT_CAL_NMECHS];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_calibrate_mechs(&be, &small_plan, 0, s, &err), 0);
  CU_ASSERT_EQUAL(probe.left_held, 0); /* every byte given back */
  CU_ASSERT_EQUAL(probe.left_reserved, 1); /* async_pool's range, which the real device frees at close */
  /* every acquiring call of the whole run made to fail in turn (each mechanism's device counts from 1; direct's
     fails first) */
  int failures = 0;
  for (long n = 1; n <= 40; n++) {
    if (run_failing(&be, &small_plan, n, 0, s, &err) < 0) {
      failures++;
      CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "calibrate: "));
      CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "injected failure"));
    }
  }
  CU_ASSERT(failures > 0);
  /* the crowded loop: each other mechanism's device failing each of its first calls in turn, the crowd's blocks
     among them (acquired after the cached loop's few) */
  const pt_cal_plan crowded = {1, {MIB}, 1, 10, 32, MIB};
  for (long dev = 2; dev <= PT_CAL_NMECHS; dev++) {
    int crowd_failures = 0;
    for (long n = 1; n <= 24; n++) {
      if (run_failing(&be, &crowded, n, dev, s, &err) < 0) {
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "injected failure"));
        crowd_failures += strstr(err.msg, "1048576 bytes, crowded: ") != NULL;
      }
    }
    CU_ASSERT(crowd_failures > 0);
    if (!crowd_failures) fprintf(stderr, "device %ld: no failure in the crowded loop\n", dev);
  }
}

/* ---- the text ------------------------------------------------------------------- */

static char *capture(void (*fn)(FILE *, const void *), const void *arg) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fn(f, arg);
  fclose(f);
  return buf;
}

static pt_cal_series series(const char *name, const char *from, size_t n, const pt_cal_point *at) {
  pt_cal_series s = {.n = n};
  snprintf(s.name, sizeof s.name, "%s", name);
  snprintf(s.from, sizeof s.from, "%s", from);
  if (n) memcpy(s.at, at, n * sizeof *at);
  return s;
}

static pt_cal_series text_series[4];
static const pt_cal_plan text_plan = {2, {512, 65536}, 5, 2000, 16, 65536};

static void write_bk(FILE *f, const void *arg) {
  (void)arg;
  pt_calibrate_write_bookkeeping(f, &text_plan, text_series, 4);
}

static void test_bookkeeping_text(void) {
  const pt_cal_point direct[] = {{512, 3.0, 2.9, 3.2, 2000, 5, 20000, 2.95, 0, 0, 0, 0},
                                 {1048576, 60.0, 59.0, 61.0, 333, 5, 3330, 59.8, 0, 0, 0, 0}};
  const pt_cal_point caching[] = {{512, 0.3, 0.28, 0.31, 2000, 5, 0, 0, 1.5, 2, 8.5, 16}, /* crowded: after the rest */
                                  {65536, 0.25, 0.24, 0.3, 2000, 5, 0, 0, 2.5, 1, 0.75, 0},
                                  {512, 0.2, 0.19, 0.21, 2000, 5, 0, 0, 1.5, 0.5, 0, 0}};
  const pt_cal_point stitch[] = {{512, 0.3, 0.3, 0.3, 2000, 5, 4, 0, 0, 0, 0, 0}};
  text_series[0] = series("direct", "mechanism", 2, direct);
  text_series[1] = series("caching", "mechanism", 3, caching); /* out of order: written cached first, ascending */
  text_series[2] = series("expandable", "mechanism", 0, NULL);   /* no points: left out */
  text_series[3] = series("stitch", "mechanism", 1, stitch);
  char *text = capture(write_bk, NULL);
  const char *want =
      "\n# ---- the allocator's own work, measured: a cached allocate + free pair through each mechanism on\n"
      "# this GPU after warm-up, median of 5 batches of up to 2000 pairs (fewer where a pair is slow), one\n"
      "# 512 B block held meanwhile; bookkeeping_us is half a pair: the µs of a request or of a free;\n"
      "# bookkeeping_loop the same points with the free-set work a request or a free did in them\n"
      "# (SIZE:US:OPS:CHUNKS:VISITS): what gpu fit --work adds to each mechanism's runs\n"
      "# The crowded loop: the same pairs among 16 free blocks of sizes near theirs, none beside another\n"
      "# (at sizes up to 65536 bytes): their points follow the cached loop's on the bookkeeping_loop line\n"
      "# direct, µs a pair (least-most batch): 512:3.000 (2.900-3.200) 1048576:60.000 (59.000-61.000)\n"
      "# direct: each request is a cudaMalloc and each free a cudaFree, which the cost lines charge; of a\n"
      "# pair, µs in them: 512:2.950 1048576:59.800\n"
      "# its own work, the rest, is within their noise: 0\n"
      "bookkeeping_us direct 0\n"
      "# caching, µs a pair (least-most batch): 512:0.200 (0.190-0.210) 65536:0.250 (0.240-0.300)\n"
      "# caching among 16 free blocks: 512:0.300 (0.280-0.310)\n"
      "bookkeeping_us caching 512:0.1000 65536:0.1250\n"
      "bookkeeping_loop caching 512:0.1000:1.5:0.5:0 65536:0.1250:2.5:1:0.75 512:0.1500:1.5:2:8.5\n"
      "# stitch, µs a pair (least-most batch): 512:0.300 (0.300-0.300)\n"
      "# WARNING: stitch's timed pairs at 512 bytes made 4 driver calls: its time there includes them\n"
      "bookkeeping_us stitch 512:0.1500\n"
      "bookkeeping_loop stitch 512:0.1500:0:0:0\n";
  CU_ASSERT_STRING_EQUAL(text, want);
  if (strcmp(text, want)) fprintf(stderr, "got:\n%s", text);
  free(text);
  /* a pair too quick for 4 decimals: a point of 0.0001, never 0 (a description refuses points <= 0) */
  const pt_cal_point quick[] = {{512, 0.00002, 0.00001, 0.00003, 2000, 5, 0, 0, 0, 0, 0, 0}};
  pt_cal_series keep = text_series[1];
  text_series[1] = series("caching", "mechanism", 1, quick);
  text = capture(write_bk, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nbookkeeping_us caching 512:0.0001\n"));
  free(text);
  text_series[1] = keep;
}

static pt_cal_torch text_torch;

static void write_tt(FILE *f, const void *arg) {
  (void)arg;
  pt_calibrate_write_torch(f, &text_torch);
}

static void test_torch_text(void) {
  memset(&text_torch, 0, sizeof text_torch);
  snprintf(text_torch.skipped, sizeof text_torch.skipped, "torch is not importable with python3: No module named 'torch'");
  char *text = capture(write_tt, NULL);
  CU_ASSERT_STRING_EQUAL(text, "\n# PyTorch's allocators: not measured (torch is not importable with python3: No module "
                               "named 'torch')\n");
  free(text);

  const pt_cal_point a[] = {{65536, 0.43, 0.4, 0.5, 2000, 5, 0, 0, 0, 0, 0, 0}, {512, 0.55, 0.5, 0.6, 2000, 5, 0, 0, 0, 0, 0, 0}};
  const pt_cal_point b[] = {{512, 1.46, 1.4, 1.5, 2000, 5, 0, 0, 0, 0, 0, 0}};
  text_torch = (pt_cal_torch){.measured = 1, .n = 2};
  snprintf(text_torch.python, sizeof text_torch.python, "python3");
  snprintf(text_torch.version, sizeof text_torch.version, "2.11.0");
  snprintf(text_torch.device, sizeof text_torch.device, "NVIDIA H200");
  text_torch.backends[0] = series("native", "cpp_extension", 2, a);
  text_torch.backends[1] = series("cudaMallocAsync", "cpp_extension", 1, b);
  text = capture(write_tt, NULL);
  const char *want =
      "\n# ---- PyTorch's own allocators (torch 2.11.0 on NVIDIA H200, python3): a cached allocate + free pair, µs;\n"
      "# not used by the model: they are there to compare pagetune's mechanisms with PyTorch's\n"
      "# (pagetune confirm may use them)\n"
      "# measured from C++ (cpp_extension): c10::cuda::CUDACachingAllocator raw_alloc + raw_delete\n"
      "# native, µs a pair (least-most batch): 512:0.550 (0.500-0.600) 65536:0.430 (0.400-0.500)\n"
      "torch_pair_us native 512:0.5500 65536:0.4300\n"
      "# cudaMallocAsync, µs a pair (least-most batch): 512:1.460 (1.400-1.500)\n"
      "torch_pair_us cudaMallocAsync 512:1.4600\n";
  CU_ASSERT_STRING_EQUAL(text, want);
  if (strcmp(text, want)) fprintf(stderr, "got:\n%s", text);
  free(text);

  /* from Python, saying why not from C++ */
  snprintf(text_torch.backends[0].from, sizeof text_torch.backends[0].from, "python");
  snprintf(text_torch.backends[1].from, sizeof text_torch.backends[1].from, "python");
  snprintf(text_torch.cpp_error, sizeof text_torch.cpp_error, "no compiler");
  text = capture(write_tt, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\n# measured from Python: torch.empty + del (the C++ extension: no compiler)\n"
                                      "# native"));
  CU_ASSERT_PTR_NULL(strstr(text, "C++ (cpp_extension)"));
  free(text);
}

static void write_json(FILE *f, const void *arg) {
  (void)arg;
  fputs("{\"x\":0", f);
  pt_calibrate_json_mechs(f, &text_plan, text_series, 4);
  pt_calibrate_json_torch(f, &text_torch);
  fputs("}", f);
}

static void test_json(void) {
  test_bookkeeping_text(); /* text_series */
  test_torch_text();       /* text_torch: measured, from Python */
  char *text = capture(write_json, NULL);
  pt_jr_doc *doc;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_jr_parse(text, strlen(text), NULL, &doc, &err), 0);
  const pt_jr_val *m = pt_jr_get(pt_jr_root(doc), "mechanisms"), *pts = pt_jr_get(m, "points");
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(m, "batches")), 5);
  CU_ASSERT_EQUAL(pt_jr_len(pts), 3); /* expandable had no points */
  const pt_jr_val *c0 = pt_jr_index(pt_jr_get(pts, "caching"), 0), *d0 = pt_jr_index(pt_jr_get(pts, "direct"), 0);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(c0, "bytes")), 512);
  CU_ASSERT_DOUBLE_EQUAL(pt_jr_number(pt_jr_get(c0, "bookkeeping_us")), 0.1, 1e-9);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(c0, "free_blocks")), 0);
  const pt_jr_val *c2 = pt_jr_index(pt_jr_get(pts, "caching"), 2); /* the crowded point, last */
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(c2, "bytes")), 512);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(c2, "free_blocks")), 16);
  CU_ASSERT_DOUBLE_EQUAL(pt_jr_number(pt_jr_get(c2, "visits")), 8.5, 1e-9);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(m, "crowd")), 16);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(m, "crowd_upto")), 65536);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(d0, "bookkeeping_us")), 0);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(d0, "driver_calls")), 20000);
  CU_ASSERT_DOUBLE_EQUAL(pt_jr_number(pt_jr_get(d0, "driver_us")), 2.95, 1e-9);
  const pt_jr_val *t = pt_jr_get(pt_jr_root(doc), "torch");
  CU_ASSERT_EQUAL(pt_jr_bool(pt_jr_get(t, "measured")), 1);
  CU_ASSERT_EQUAL(pt_jr_bool(pt_jr_get(t, "used_by_model")), 0);
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(t, "cpp_extension_error"), NULL), "no compiler");
  const pt_jr_val *nat = pt_jr_get(pt_jr_get(t, "backends"), "native");
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(nat, "from"), NULL), "python");
  CU_ASSERT_DOUBLE_EQUAL(pt_jr_number(pt_jr_get(pt_jr_index(pt_jr_get(nat, "points"), 1), "pair_us")), 0.43, 1e-9);
  pt_jr_free(doc);
  free(text);
  text_torch.measured = 0;
  snprintf(text_torch.skipped, sizeof text_torch.skipped, "--no-torch");
  text = capture(write_json, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, ",\"torch\":{\"measured\":false,\"skipped\":\"--no-torch\"}}"));
  free(text);
}

/* ---- reading the script's results ---------------------------------------------------- */

static const pt_cal_plan two_sizes = {2, {512, 65536}, 5, 2000, 0, 0};

/* parse_measure on text for backend i: its return, the message in err. */
static int parse(const char *text, int i, pt_cal_series *s, pt_err *err) {
  pt_jr_doc *doc;
  err->msg[0] = 0;
  int rc = pt_jr_parse(text, strlen(text), NULL, &doc, err);
  if (rc < 0) return rc;
  rc = pt_torchcal_parse_measure(pt_jr_root(doc), &pt_torchcal_backends[i], &two_sizes, s, err);
  pt_jr_free(doc);
  return rc;
}

#define GOOD_PAIRS                                                                    \
  "\"us_per_pair\":{\"512\":{\"median\":0.5,\"min\":0.4,\"max\":0.6,\"pairs\":2000}," \
  "\"65536\":{\"median\":0.45,\"min\":0.44,\"max\":0.5,\"pairs\":2000}}"

static void test_parse_measure(void) {
  pt_cal_series s;
  pt_err err;
  CU_ASSERT_EQUAL(parse("{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS
                        ",\"expandable_segments\":false}", 0, &s, &err), 0);
  CU_ASSERT_STRING_EQUAL(s.name, "native");
  CU_ASSERT_STRING_EQUAL(s.from, "cpp_extension");
  CU_ASSERT_EQUAL(s.n, 2);
  CU_ASSERT_EQUAL(s.at[1].bytes, 65536);
  CU_ASSERT_DOUBLE_EQUAL(s.at[1].pair_us, 0.45, 1e-12);
  CU_ASSERT_EQUAL(s.at[0].pairs, 2000);
  CU_ASSERT_EQUAL(s.at[0].batches, 5);
  /* expandable_segments null (not known) passes; extra keys pass */
  CU_ASSERT_EQUAL(parse("{\"from\":\"python\",\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS
                        ",\"expandable_segments\":null,\"torch\":\"2.11.0\"}", 1, &s, &err), 0);
  CU_ASSERT_EQUAL(parse("{\"from\":\"python\",\"allocator_backend\":\"cudaMallocAsync\",\"batches\":5," GOOD_PAIRS "}",
                        2, &s, &err), 0);
  struct {
    const char *text;
    int backend;
    const char *says;
  } bad[] = {
      {"{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\",\"batches\":5,"
       "\"us_per_pair\":{\"512\":{\"median\":0.5,\"min\":0.4,\"max\":0.6,\"pairs\":2000}}}", 0,
       "us_per_pair.65536 is missing"},
      {"{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\",\"batches\":5,"
       "\"us_per_pair\":{\"512\":{\"median\":\"fast\",\"min\":0.4,\"max\":0.6,\"pairs\":2000}}}", 0,
       "us_per_pair.512.median must be a number, not a string"},
      {"{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\",\"batches\":5,"
       "\"us_per_pair\":{\"512\":{\"median\":-1,\"min\":0.4,\"max\":0.6,\"pairs\":2000}}}", 0,
       "us_per_pair.512.median must be a positive number"},
      {"{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\",\"batches\":5,"
       "\"us_per_pair\":{\"512\":{\"median\":0.9,\"min\":0.4,\"max\":0.6,\"pairs\":2000}}}", 0,
       "min <= median <= max does not hold"},
      {"{\"from\":\"cpp_extension\",\"allocator_backend\":\"native\"," GOOD_PAIRS "}", 0, "the result.batches is missing"},
      {"{\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS "}", 0, "from is missing"},
      {"{\"from\":\"c\",\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS "}", 0,
       "from must be \"cpp_extension\" or \"python\""},
      {"{\"from\":\"python\",\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS "}", 2,
       "torch's allocator is \"native\", not \"cudaMallocAsync\": PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync was "
       "not honoured"},
      {"{\"from\":\"python\",\"allocator_backend\":\"native\",\"batches\":5," GOOD_PAIRS
       ",\"expandable_segments\":false}", 1, "segments are not expandable under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
      {"{\"from\":\"python\",\"allocator_backend\":\"native\",\"batches\":5,\"us_per_pair\":[]}", 0,
       "us_per_pair must be an object, not an array"},
      {"[1]", 0, "the result must be an object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(parse(bad[i].text, bad[i].backend, &s, &err), PT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, bad[i].says));
    if (!strstr(err.msg, bad[i].says)) fprintf(stderr, "case %zu: %s\n", i, err.msg);
  }
}

/* ---- the runner, against stand-ins for python ------------------------------------------ */

static char fakes[32][4096]; /* the stand-ins made, removed by the suite's cleanup */
static int nfakes;

static int remove_fakes(void) {
  while (nfakes) remove(fakes[--nfakes]);
  return 0;
}

/* An executable shell script with body, its path in a static buffer. */
static const char *fake_python(const char *body) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".sh"));
  if (nfakes < 32) snprintf(fakes[nfakes++], sizeof fakes[0], "%s", path);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  chmod(path, 0700);
  return path;
}

static pt_torchcal_cfg cfg(const char *python, const char *build_dir) {
  return (pt_torchcal_cfg){python, "calibrate_torch.py", build_dir, 10, &two_sizes, 0};
}

static int exec_says(const char *python, double timeout, const char *says) {
  pt_torchcal_cfg c = cfg(python, NULL);
  c.timeout_s = timeout;
  const char *const args[] = {"probe", NULL};
  pt_jr_doc *doc = NULL;
  pt_err err = {{0}};
  int rc = pt_torchcal_exec(&c, NULL, args, &doc, &err);
  CU_ASSERT_PTR_NULL(doc);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, says));
  if (!strstr(err.msg, says)) fprintf(stderr, "wanted '%s' in: %s\n", says, err.msg);
  return rc;
}

static void test_exec_failures(void) {
  CU_ASSERT_EQUAL(exec_says("/bin/false", 10, "/bin/false calibrate_torch.py probe: exited with status 1 and printed "
                                               "nothing on stderr"), PT_EIO);
  CU_ASSERT_EQUAL(exec_says("/nonexistent/python3", 10, "exited with status 127: 'cannot run /nonexistent/python3: No such "
                                                         "file or directory'"), PT_EIO);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo garbage"), 10,
                            "printed no JSON result: its last line 'garbage' is not a JSON object (line 1, column 1"),
                  PT_EFORMAT);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo '{\"torch\": 1'"), 10, "its last line '{\"torch\": 1' is not a JSON object"),
                  PT_EFORMAT);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo '[1, 2]'"), 10, "is not a JSON object (not a JSON object)"), PT_EFORMAT);
  CU_ASSERT_EQUAL(exec_says(fake_python("true"), 10, "printed no result (no JSON line on standard output)"), PT_EFORMAT);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo '{\"error\": \"torch is not importable: boom\"}'; exit 1"), 10,
                            "probe: torch is not importable: boom"), PT_EIO);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo '{\"torch\": \"2\"}'; echo oops >&2; exit 3"), 10, "exited with status 3"),
                  PT_EIO);
  CU_ASSERT_EQUAL(exec_says(fake_python("echo dying words >&2; kill -9 $$"), 10, "was killed by signal 9: 'dying words'"),
                  PT_EIO);
  double t0 = (double)time(NULL);
  /* a hang, its child too: the group is stopped at the limit */
  CU_ASSERT_EQUAL(exec_says(fake_python("echo building >&2; sleep 30 & sleep 30"), 1,
                            "did not finish in 1 s and was stopped (--torch-timeout) (its last words: 'building')"), PT_EIO);
  CU_ASSERT((double)time(NULL) - t0 < 10);
}

/* The protocol spoken by a shell script: probe, build (when build_ok), measure at 512 and 65536; it checks the
   environment the runner promises. */
static const char *protocol(int build_ok) {
  static char body[2048];
  snprintf(body, sizeof body,
           "[ \"$PAGETUNE_DISABLE\" = 1 ] && [ -n \"$TORCH_EXTENSIONS_DIR\" ] && [ -z \"${PYTORCH_ALLOC_CONF+x}\" ] || "
           "{ echo '{\"error\": \"bad environment\"}'; exit 1; }\n"
           "case \"$2\" in\n"
           "probe) echo '{\"torch\": \"2.11.0\", \"cuda\": true, \"device\": \"Fake GPU\"}';;\n"
           "build) %s;;\n"
           "measure)\n"
           "  [ \"$4\" = %s ] || { echo '{\"error\": \"wrong mode\"}'; exit 1; }\n"
           "  case \"$PYTORCH_CUDA_ALLOC_CONF\" in *cudaMallocAsync*) a=cudaMallocAsync;; *) a=native;; esac\n"
           "  case \"$PYTORCH_CUDA_ALLOC_CONF\" in *expandable*) e=true;; *) e=false;; esac\n"
           "  echo 'noise from a build'\n"
           "  echo \"{\\\"from\\\": \\\"%s\\\", \\\"allocator_backend\\\": \\\"$a\\\", \\\"expandable_segments\\\": $e, "
           "\\\"batches\\\": 5, \\\"us_per_pair\\\": {\\\"512\\\": {\\\"median\\\": 0.5, \\\"min\\\": 0.4, "
           "\\\"max\\\": 0.6, \\\"pairs\\\": 2000}, \\\"65536\\\": {\\\"median\\\": 0.45, \\\"min\\\": 0.4, "
           "\\\"max\\\": 0.5, \\\"pairs\\\": 2000}}}\";;\n"
           "esac",
           build_ok ? "echo '{\"built\": true}'" : "echo '{\"error\": \"the C++ extension did not build: no g++\"}'; exit 1",
           build_ok ? "cpp" : "python", build_ok ? "cpp_extension" : "python");
  return body;
}

static void test_run(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", pt_test_tmp("-ext"));
  pt_cal_torch t;
  pt_err err = {{0}};
  setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1); /* the runner keeps it from the children */

  /* torch not importable: not an error, the reason kept */
  pt_torchcal_cfg c = cfg("/bin/false", dir);
  CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), 0);
  CU_ASSERT_EQUAL(t.measured, 0);
  CU_ASSERT_STRING_EQUAL(t.skipped, "torch is not importable with /bin/false: exited with status 1 and printed nothing "
                                    "on stderr");
  c = cfg(fake_python("echo garbage"), dir);
  CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), 0);
  CU_ASSERT_EQUAL(t.measured, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(t.skipped, ".sh: printed no JSON result: its last line 'garbage'"));
  c = cfg(fake_python("echo '{\"torch\": \"2.11.0+cpu\", \"cuda\": false}'"), dir);
  CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), 0);
  CU_ASSERT_EQUAL(t.measured, 0);
  CU_ASSERT_STRING_EQUAL(t.skipped + strlen(t.skipped) - strlen("sees no GPU"), "sees no GPU");

  /* the whole protocol, from C++ */
  c = cfg(fake_python(protocol(1)), dir);
  CU_ASSERT_EQUAL_FATAL(pt_torchcal_run(&c, &t, &err), 0);
  CU_ASSERT_EQUAL(t.measured, 1);
  CU_ASSERT_EQUAL(t.n, PT_CAL_NTORCH);
  CU_ASSERT_STRING_EQUAL(t.version, "2.11.0");
  CU_ASSERT_STRING_EQUAL(t.device, "Fake GPU");
  CU_ASSERT_STRING_EQUAL(t.build_dir, dir);
  CU_ASSERT_STRING_EQUAL(t.cpp_error, "");
  for (int i = 0; i < PT_CAL_NTORCH; i++) {
    CU_ASSERT_STRING_EQUAL(t.backends[i].name, pt_torchcal_backends[i].name);
    CU_ASSERT_STRING_EQUAL(t.backends[i].from, "cpp_extension");
    CU_ASSERT_EQUAL(t.backends[i].n, 2);
  }
  struct stat st;
  CU_ASSERT(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));

  /* the C++ extension does not build: from Python, saying why */
  c = cfg(fake_python(protocol(0)), dir);
  CU_ASSERT_EQUAL_FATAL(pt_torchcal_run(&c, &t, &err), 0);
  CU_ASSERT_EQUAL(t.measured, 1);
  CU_ASSERT_STRING_EQUAL(t.backends[2].from, "python");
  CU_ASSERT_PTR_NOT_NULL(strstr(t.cpp_error, "the C++ extension did not build: no g++"));

  /* torch imports, then a measurement goes wrong: an error naming the backend */
  c = cfg(fake_python("case \"$2\" in probe) echo '{\"torch\": \"2.11.0\", \"cuda\": true}';; build) echo '{\"built\": "
                      "true}';; *) echo 'Segmentation fault' >&2; kill -11 $$;; esac"), dir);
  CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), PT_EIO);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "calibrate: PyTorch's native allocator: "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "measure: was killed by signal 11: 'Segmentation fault'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "(--no-torch leaves PyTorch out)"));
  c = cfg(fake_python("case \"$2\" in probe) echo '{\"torch\": \"2.11.0\", \"cuda\": true}';; build) echo '{\"built\": "
                      "true}';; *) echo '{\"from\": \"python\"}';; esac"), dir);
  CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "measure's result: allocator_backend is missing"));
  unsetenv("PYTORCH_ALLOC_CONF");
  rmdir(dir);
}

static void test_build_dir(void) {
  char tmp[4096], dir[4200], want[4200];
  snprintf(tmp, sizeof tmp, "%s", pt_test_tmp("-tmpdir"));
  CU_ASSERT_EQUAL_FATAL(mkdir(tmp, 0700), 0);
  const char *was = getenv("TMPDIR");
  char saved[4096] = "";
  if (was) snprintf(saved, sizeof saved, "%s", was);
  setenv("TMPDIR", tmp, 1);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_torchcal_build_dir(NULL, dir, sizeof dir, &err), 0);
  snprintf(want, sizeof want, "%s/pagetune-torch-ext-%ld", tmp, (long)getuid());
  CU_ASSERT_STRING_EQUAL(dir, want);
  struct stat st;
  CU_ASSERT(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  CU_ASSERT_EQUAL(pt_torchcal_build_dir(NULL, dir, sizeof dir, &err), 0); /* again: there already */
  chmod(want, 0777);
  CU_ASSERT_EQUAL(pt_torchcal_build_dir(NULL, dir, sizeof dir, &err), PT_EFORBID); /* others may write it */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--torch-build DIR"));
  CU_ASSERT_EQUAL(pt_torchcal_build_dir(want, dir, sizeof dir, &err), 0); /* named: the user's choice */
  rmdir(want);
  FILE *f = fopen(want, "w"); /* a file where the directory should be */
  if (f) fclose(f);
  CU_ASSERT_EQUAL(pt_torchcal_build_dir(NULL, dir, sizeof dir, &err), PT_EIO);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a directory"));
  remove(want);
  rmdir(tmp);
  if (was) setenv("TMPDIR", saved, 1);
  else unsetenv("TMPDIR");
}

/* The real script under the real python3: where torch does not import, the probe says so in one line. */
static void test_real_script(void) {
  if (system("python3 -c '' >/dev/null 2>&1") != 0) return; /* no python3 here */
  char script[4096];
  snprintf(script, sizeof script, "%s", pt_test_src("backend/calibrate_torch.py"));
  pt_torchcal_cfg c = {"python3", script, NULL, 120, &two_sizes, 0};
  const char *const args[] = {"probe", NULL};
  pt_jr_doc *doc = NULL;
  pt_err err = {{0}};
  if (pt_torchcal_exec(&c, NULL, args, &doc, &err) == 0) { /* torch is there */
    CU_ASSERT_PTR_NOT_NULL(pt_jr_string(pt_jr_get(pt_jr_root(doc), "torch"), NULL));
    CU_ASSERT(pt_jr_bool(pt_jr_get(pt_jr_root(doc), "cuda")) >= 0);
    pt_jr_free(doc);
  } else { /* the whole run: said in one line, not an error */
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "probe: torch is not importable: "));
    pt_cal_torch t;
    CU_ASSERT_EQUAL(pt_torchcal_run(&c, &t, &err), 0);
    CU_ASSERT_EQUAL(t.measured, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.skipped, "torch is not importable with python3: "));
    CU_ASSERT_PTR_NULL(strstr(t.skipped, "probe"));
  }
  const char *const bad[] = {"measure", "--batches", "0", NULL};
  CU_ASSERT(pt_torchcal_exec(&c, NULL, bad, &doc, &err) < 0);
}

int pt_test_add_calibrate(void) {
  CU_pSuite s = CU_add_suite("calibrate", NULL, remove_fakes);
  if (!s) return CU_get_error();
  CU_add_test(s, "every mechanism's pairs on modelled devices", test_mechs_on_model);
  CU_add_test(s, "the crowded loop on modelled devices", test_crowded_on_model);
  CU_add_test(s, "a device that fails: an error, everything given back", test_mechs_device_fails);
  CU_add_test(s, "bookkeeping_us lines", test_bookkeeping_text);
  CU_add_test(s, "torch_pair_us lines", test_torch_text);
  CU_add_test(s, "the JSON members", test_json);
  CU_add_test(s, "the script's result read strictly", test_parse_measure);
  CU_add_test(s, "the runner: stand-ins that fail, print garbage, hang", test_exec_failures);
  CU_add_test(s, "the runner: not importable, the protocol, C++ or Python, failures", test_run);
  CU_add_test(s, "the build directory", test_build_dir);
  CU_add_test(s, "the real script under python3", test_real_script);
  return CU_get_error();
}
