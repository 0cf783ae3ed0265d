/*
 * test_device.c — the device seam: every mechanism over a test double that
 * fails the Nth call that acquires something (cudaMalloc, address reserve,
 * cuMemCreate, cuMemMap, cuMemSetAccess), for every N a workload reaches.
 *
 * The double takes its addresses and handles from the model device and
 * checks every call the way a real driver would refuse it (a free of memory
 * it never handed out, a map over a mapped address or of an unknown handle,
 * a release of a handle still mapped, an unmap of nothing).  After each
 * operation the books (pt_device) must hold what the double holds; a failed
 * request must return the injected error; after every block is freed and
 * the cache emptied, nothing may be left: no allocation, handle or map, no
 * byte reserved; and the call log must still replay (calllog.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "calllog.h"
#include "mech.h"
#include "modeldev.h"
#include "mreplay.h"
#include "sim.h"
#include "testutil.h"
#include "u64map.h"

#define MIB (UINT64_C(1) << 20)
#define INJECTED (-5) /* PT_EIO's value is not needed: any distinct error will do */

typedef struct dbl {
  pt_model_dev model;       /* addresses and handle numbers */
  long fail_at, acquiring;  /* the fail_at-th acquiring call fails (1-based; 0: none) */
  int injected;
  pt_u64map allocs;         /* addr -> bytes */
  pt_u64map handles;        /* handle -> live maps of it */
  pt_u64map maps;           /* va -> handle */
  uint64_t down;            /* non-zero: addresses handed out downward from here, not the model's */
  uint64_t held;            /* bytes of live allocations and handles */
  int misuse;               /* calls a real driver would refuse */
  pt_err *err;
} dbl;

static int acquire(dbl *d) {
  if (d->fail_at && ++d->acquiring == d->fail_at) {
    d->injected++;
    return pt_err_set(d->err, INJECTED, "injected failure of call %ld", d->fail_at);
  }
  return 0;
}

static int d_malloc(void *st, uint64_t bytes, uint64_t *addr) {
  dbl *d = st;
  int rc = acquire(d);
  if (rc < 0 || (rc = pt_model_dev_ops.malloc(&d->model, bytes, addr)) < 0) return rc;
  if (d->down) *addr = d->down -= (bytes + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
  if (pt_u64map_get(&d->allocs, *addr)) d->misuse++;
  if (pt_u64map_put(&d->allocs, *addr, bytes) < 0) return PT_ENOMEM;
  d->held += bytes;
  return 0;
}

static int d_free(void *st, uint64_t addr, uint64_t bytes) {
  dbl *d = st;
  uint64_t *b = pt_u64map_get(&d->allocs, addr);
  if (!b || *b != bytes) return d->misuse++, PT_EFORMAT;
  pt_u64map_del(&d->allocs, addr);
  d->held -= bytes;
  return pt_model_dev_ops.free(&d->model, addr, bytes);
}

static int d_reserve(void *st, uint64_t bytes, uint64_t align, uint64_t *va) {
  dbl *d = st;
  int rc = acquire(d);
  if (rc < 0 || (rc = pt_model_dev_ops.address_reserve(&d->model, bytes, align, va)) < 0) return rc;
  if (d->down) *va = d->down = (d->down - bytes) / align * align;
  return 0;
}

static int d_address_free(void *st, uint64_t va, uint64_t bytes) {
  dbl *d = st;
  return pt_model_dev_ops.address_free(&d->model, va, bytes);
}

static int d_create(void *st, uint64_t bytes, uint64_t *handle) {
  dbl *d = st;
  int rc = acquire(d);
  if (rc < 0 || (rc = pt_model_dev_ops.mem_create(&d->model, bytes, handle)) < 0) return rc;
  if (pt_u64map_put(&d->handles, *handle, 0) < 0) return PT_ENOMEM;
  d->held += bytes;
  return 0;
}

static int d_release(void *st, uint64_t handle, uint64_t bytes) {
  dbl *d = st;
  uint64_t *maps = pt_u64map_get(&d->handles, handle);
  if (!maps || *maps) return d->misuse++, PT_EFORMAT; /* unknown, or still mapped */
  pt_u64map_del(&d->handles, handle);
  d->held -= bytes;
  return 0;
}

static int d_map(void *st, uint64_t va, uint64_t bytes, uint64_t handle) {
  dbl *d = st;
  int rc = acquire(d);
  if (rc < 0) return rc;
  uint64_t *maps = pt_u64map_get(&d->handles, handle);
  if (!maps || pt_u64map_get(&d->maps, va)) return d->misuse++, PT_EFORMAT;
  ++*maps;
  if (pt_u64map_put(&d->maps, va, handle) < 0) return PT_ENOMEM;
  return pt_model_dev_ops.mem_map(&d->model, va, bytes, handle);
}

static int d_set_access(void *st, uint64_t va, uint64_t bytes) {
  dbl *d = st;
  int rc = acquire(d);
  if (rc < 0) return rc;
  if (!pt_u64map_get(&d->maps, va)) d->misuse++; /* access to nothing mapped */
  return pt_model_dev_ops.mem_set_access(&d->model, va, bytes);
}

static int d_unmap(void *st, uint64_t va, uint64_t bytes) {
  dbl *d = st;
  uint64_t *h = pt_u64map_get(&d->maps, va);
  if (!h) return d->misuse++, PT_EFORMAT;
  uint64_t *maps = pt_u64map_get(&d->handles, *h);
  if (maps) --*maps;
  pt_u64map_del(&d->maps, va);
  return pt_model_dev_ops.mem_unmap(&d->model, va, bytes);
}

static int d_adopt(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles) {
  dbl *d = st;
  int rc = pt_model_dev_ops.adopt(&d->model, addr, bytes, page, handles);
  if (rc < 0) return rc;
  d->held += bytes;
  if (!page) return pt_u64map_put(&d->allocs, addr, bytes) < 0 ? PT_ENOMEM : 0;
  for (uint64_t off = 0, i = 0; off < bytes; off += page, i++)
    if (pt_u64map_put(&d->handles, handles[i], 1) < 0 || pt_u64map_put(&d->maps, addr + off, handles[i]) < 0)
      return PT_ENOMEM;
  return 0;
}

static const pt_dev_ops dbl_ops = {"double", d_malloc, d_free, d_reserve, d_address_free, d_create,
                                   d_release, d_map, d_set_access, d_unmap, d_adopt};

/* The double's own memory, given back. */
static void dbl_done(dbl *d) {
  pt_model_dev_done(&d->model);
  pt_u64map_free(&d->allocs);
  pt_u64map_free(&d->handles);
  pt_u64map_free(&d->maps);
}

/* The device holds nothing: no byte, allocation, handle or map, and no call a driver would refuse. */
static void assert_given_back(const dbl *d) {
  CU_ASSERT_EQUAL(d->held, 0);
  CU_ASSERT_EQUAL(d->handles.len, 0);
  CU_ASSERT_EQUAL(d->maps.len, 0);
  CU_ASSERT_EQUAL(d->allocs.len, 0);
  CU_ASSERT_EQUAL(d->misuse, 0);
}

/* ---- a workload ------------------------------------------------------------------ */

typedef struct outcome {
  long acquiring;   /* acquiring calls made (the baseline's count) */
  int injected, surfaced, ooms, bad;
} outcome;

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

/*
 * 400 operations: requests of 512 B to 60 MiB on two streams, frees of
 * random live blocks, an empty_cache every 97 operations, under a 256 MiB
 * cap so that releases and retries run too.
 */
static outcome run(const pt_mech_ops *m, long fail_at) {
  outcome o = {0};
  pt_err err = {{0}};
  dbl d = {.fail_at = fail_at, .err = &err};
  pt_model_dev_init(&d.model, NULL, 0, &err);
  pt_device dev;
  pt_dev_init(&dev, &dbl_ops, &d, 256 * MIB, &err);
  pt_call_log log = {0};
  dev.log = &log;
  pt_mech_counters ctr = {0};
  pt_params params = {0};
  pt_policy_hooks hooks = {0};
  uint64_t allocated = 0;
  int fault = 0;
  if (m == &pt_mech_stitch) pt_params_set(&params, "max_stitched", 2); /* evictions too */
  pt_mech_env env = {.dev = &dev, .counters = &ctr, .params = &params, .hooks = &hooks,
                     .allocated = &allocated, .fault = &fault, .err = &err};
  void *st = NULL;
  CU_ASSERT_EQUAL_FATAL(pt_mech_create(m, &env, &st), 0);
  uint64_t live[64], bytes[64], seed = 42;
  size_t n = 0;
  static const uint64_t sizes[] = {512, 4000, 300000, 1 << 20, (1 << 20) + 512, 3 * MIB, 9 * MIB, 12 * MIB, 21 * MIB, 60 * MIB};
  for (int op = 0; op < 400; op++) {
    uint64_t r = lcg(&seed);
    int rc = 0;
    if (op % 97 == 96) {
      rc = m->empty_cache(st);
    } else if (n < 64 && (n == 0 || r % 10 < 6)) {
      uint64_t b = sizes[(r >> 4) % (sizeof sizes / sizeof sizes[0])] + (r >> 12) % 4096, h;
      rc = m->alloc(st, b, (r >> 20) & 1, &h);
      if (rc == 0) {
        live[n] = h;
        bytes[n++] = b;
        allocated += b;
      } else if (rc == PT_EOOM) {
        o.ooms++, rc = 0;
      } else if (rc == INJECTED) {
        o.surfaced++, rc = 0;
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "injected failure"));
      }
    } else {
      size_t k = (r >> 8) % n;
      rc = m->free(st, live[k]);
      allocated -= bytes[k];
      live[k] = live[--n];
      bytes[k] = bytes[n];
    }
    if (rc < 0 || fault) {
      o.bad++;
      fprintf(stderr, "\n  %s, failing call %ld, op %d: %d %s\n", m->name, fail_at, op, rc, err.msg);
      break;
    }
    if (dev.reserved != d.held) {
      o.bad++;
      fprintf(stderr, "\n  %s, failing call %ld, op %d: the books hold %llu bytes, the device %llu\n", m->name,
              fail_at, op, (unsigned long long)dev.reserved, (unsigned long long)d.held);
      break;
    }
  }
  while (n) CU_ASSERT_EQUAL(m->free(st, live[--n]), 0);
  CU_ASSERT_EQUAL(m->empty_cache(st), 0);
  /* nothing left behind, and the log of what was made and undone still replays */
  if (d.held || dev.reserved || d.allocs.len || d.handles.len || d.maps.len || d.misuse) {
    o.bad++;
    fprintf(stderr, "\n  %s, failing call %ld: left %llu bytes (books %llu), %zu allocations, %zu handles, %zu maps; %d misuses\n",
            m->name, fail_at, (unsigned long long)d.held, (unsigned long long)dev.reserved, d.allocs.len,
            d.handles.len, d.maps.len, d.misuse);
  }
  if (pt_call_log_walk(&log, NULL, &err) < 0) {
    o.bad++;
    fprintf(stderr, "\n  %s, failing call %ld: the log does not replay: %s\n", m->name, fail_at, err.msg);
  }
  o.acquiring = d.acquiring;
  o.injected = d.injected;
  m->destroy(st);
  pt_call_log_free(&log);
  pt_dev_done(&dev);
  dbl_done(&d);
  return o;
}

/* Books with no cap over a fresh test double (addresses from the model device). */
static void books_on_double(dbl *d, pt_device *dev, pt_err *err) {
  *d = (dbl){.err = err};
  pt_model_dev_init(&d->model, NULL, 0, err);
  pt_dev_init(dev, &dbl_ops, d, 0, err);
}

/* The books' live maps, found by address: a second map at a mapped address refused before the device sees it;
   an unmap (the last map moved into its place) gives each map's own handle; a failed map leaves no map behind;
   cuMemSetAccess counted by the maps it covers. */
static void test_books_maps(void) {
  pt_err err = {{0}};
  dbl d;
  pt_device dev;
  books_on_double(&d, &dev, &err);
  uint64_t va, h[4];
  CU_ASSERT_EQUAL_FATAL(pt_dev_address_reserve(&dev, 64 * MIB, 2 * MIB, &va), 0);
  for (int i = 0; i < 4; i++) {
    CU_ASSERT_EQUAL_FATAL(pt_dev_mem_create(&dev, 2 * MIB, &h[i]), 0);
    CU_ASSERT_EQUAL_FATAL(pt_dev_mem_map(&dev, va + (uint64_t)i * 2 * MIB, 2 * MIB, h[i]), 0);
  }
  CU_ASSERT_EQUAL(pt_dev_mem_map(&dev, va + 2 * MIB, 2 * MIB, h[0]), PT_EUSAGE); /* mapped there */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "a map at 0x"));
  CU_ASSERT_EQUAL(d.misuse, 0); /* the device never saw it */
  CU_ASSERT_EQUAL(dev.nmaps, 4);
  CU_ASSERT_EQUAL(pt_dev_mem_set_access(&dev, va + 2 * MIB, 4 * MIB), 0);
  CU_ASSERT_EQUAL(dev.sizes.calls[PT_DRV_mem_set_access][21], 2); /* two 2 MiB handles covered (class 21) */
  pt_call_log log = {0};
  dev.log = &log;
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&dev, va, 2 * MIB), 0);            /* the first: the last moves in */
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&dev, va + 6 * MIB, 2 * MIB), 0); /* the moved one, found */
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&dev, va + 2 * MIB, 2 * MIB), 0);
  CU_ASSERT_EQUAL_FATAL(log.n, 3);
  CU_ASSERT_EQUAL(log.v[0].handle, h[0]);
  CU_ASSERT_EQUAL(log.v[1].handle, h[3]);
  CU_ASSERT_EQUAL(log.v[2].handle, h[1]);
  CU_ASSERT_EQUAL(dev.nmaps, 1);
  d.fail_at = d.acquiring + 1; /* the next map fails in the device: no map is kept */
  CU_ASSERT_EQUAL(pt_dev_mem_map(&dev, va, 2 * MIB, h[0]), INJECTED);
  CU_ASSERT_EQUAL(dev.nmaps, 1);
  d.fail_at = 0;
  CU_ASSERT_EQUAL(pt_dev_mem_map(&dev, va, 2 * MIB, h[0]), 0); /* and the address is free again */
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&dev, va, 2 * MIB), 0);
  CU_ASSERT_EQUAL(pt_dev_mem_unmap(&dev, va + 4 * MIB, 2 * MIB), 0);
  CU_ASSERT_EQUAL(dev.nmaps, 0);
  CU_ASSERT_EQUAL(dev.at.len, 0);
  CU_ASSERT_EQUAL(d.maps.len, 0);
  dev.log = NULL;
  pt_call_log_free(&log);
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(pt_dev_mem_release(&dev, h[i], 2 * MIB), 0);
  CU_ASSERT_EQUAL(pt_dev_address_free(&dev, va, 64 * MIB), 0);
  CU_ASSERT_EQUAL(d.misuse, 0);
  pt_dev_done(&dev);
  dbl_done(&d);
}

/*
 * Calls after a large one (device.h): a 2 MiB cuMemAlloc, then ten of 512 B: the first PT_DRV_AFTER_LARGE are
 * after it, the rest are not; a large call itself is never one; the untimed set's are not counted; the class's
 * books get theirs while set.
 */
static void test_books_after_large(void) {
  pt_err err = {{0}};
  dbl d;
  pt_device dev;
  books_on_double(&d, &dev, &err);
  static pt_call_sizes after, cls_after, cls;
  dev.after_sizes = &after;
  uint64_t big, a[12];
  CU_ASSERT_EQUAL_FATAL(pt_dev_malloc(&dev, 2 * MIB, &big), 0);
  for (int i = 0; i < 10; i++) {
    if (i == 2) dev.class_sizes = &cls, dev.class_after_sizes = &cls_after; /* calls 3 and 4 in the class */
    if (i == 4) dev.class_sizes = NULL, dev.class_after_sizes = NULL;
    CU_ASSERT_EQUAL_FATAL(pt_dev_malloc(&dev, 512, &a[i]), 0);
  }
  CU_ASSERT_EQUAL(after.calls[PT_DRV_malloc][9], PT_DRV_AFTER_LARGE);
  CU_ASSERT_EQUAL(after.bytes[PT_DRV_malloc][9], PT_DRV_AFTER_LARGE * 512);
  CU_ASSERT_EQUAL(after.calls[PT_DRV_malloc][21], 0);
  CU_ASSERT_EQUAL(cls.calls[PT_DRV_malloc][9], 2);
  CU_ASSERT_EQUAL(cls_after.calls[PT_DRV_malloc][9], 2);
  CU_ASSERT_EQUAL(pt_dev_free(&dev, big, 2 * MIB), 0); /* a large free: the next small calls are after it */
  dev.untimed = 1;
  CU_ASSERT_EQUAL(pt_dev_free(&dev, a[0], 512), 0); /* no request's: not counted */
  dev.untimed = 0;
  CU_ASSERT_EQUAL(pt_dev_free(&dev, a[1], 512), 0);
  CU_ASSERT_EQUAL(after.calls[PT_DRV_free][9], 1);
  for (int i = 2; i < 10; i++) CU_ASSERT_EQUAL(pt_dev_free(&dev, a[i], 512), 0);
  CU_ASSERT_EQUAL(after.calls[PT_DRV_free][9], PT_DRV_AFTER_LARGE - 1); /* the untimed one took a place in the 8 */
  CU_ASSERT_EQUAL(after.calls[PT_DRV_malloc][9], PT_DRV_AFTER_LARGE);
  CU_ASSERT_EQUAL(d.misuse, 0);
  pt_dev_done(&dev);
  dbl_done(&d);
}

static void test_fail_every_call(void) {
  const pt_mech_ops *all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable, &pt_mech_async_pool,
                              &pt_mech_stitch};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    /* the baseline: no failure; count the acquiring calls (a fail_at past them all counts without failing) */
    outcome base = run(all[i], LONG_MAX);
    CU_ASSERT_EQUAL(base.bad, 0);
    CU_ASSERT_EQUAL(base.injected, 0);
    fprintf(stderr, " [%s: %ld calls, %d OOMs]", all[i]->name, base.acquiring, base.ooms);
    CU_ASSERT(base.acquiring > 10);
    CU_ASSERT(base.ooms > 0); /* the cap was reached: releases and retries ran */
    int bad = 0;
    long surfaced = 0;
    for (long k = 1; k <= base.acquiring && bad < 3; k++) {
      outcome o = run(all[i], k);
      CU_ASSERT_EQUAL(o.injected, 1);
      bad += o.bad;
      surfaced += o.surfaced;
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* every injected failure reached the caller as an error of the request that met it */
    CU_ASSERT_EQUAL(surfaced, base.acquiring);
  }
}

/* The observer: blocks seen after their allocation and before their free. */
typedef struct seen {
  uint64_t allocs, frees, live_bytes;
} seen;
static int seen_alloc(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  seen *s = ctx;
  (void)addr, (void)id;
  s->allocs++;
  s->live_bytes += bytes;
  return 0;
}
static int seen_free(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id) {
  seen *s = ctx;
  (void)addr, (void)id;
  s->frees++;
  s->live_bytes -= bytes;
  return 0;
}

/*
 * The engine on a device it is given (what pagetune replay --mechanism runs
 * on a GPU), here the checking double over the model: every mechanism on a
 * real trace gives the model's results with invented addresses, every
 * request is timed, the observer sees every block, and at the end the device
 * holds nothing (async_pool keeps its pool's VA reservation only).
 */
static void test_engine_on_device(void) {
  const pt_mech_ops *all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable, &pt_mech_async_pool,
                              &pt_mech_stitch};
  /* graph_pool: a CUDA graph's private pool, whose memory is given back too (release_pool, then empty_cache) */
  const char *traces[] = {"traces/transformer_train.pickle.gz", "traces/knobs/graph_pool.pickle.gz"};
  pt_err err = {{0}};
  pt_trace_data t;
  for (size_t ti = 0; ti < sizeof traces / sizeof traces[0]; ti++) {
    CU_ASSERT_EQUAL_FATAL(pt_trace_load(pt_test_src(traces[ti]), NULL, &err, &t), 0);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
      pt_sim_config model_cfg = {.mech = all[i], .invent_addresses = 1};
      pt_sim_result want, got;
      CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &model_cfg, &err, &want), 0);
      dbl d = {.err = &err};
      pt_model_dev_init(&d.model, NULL, 0, &err);
      seen sn = {0};
      pt_sim_config cfg = {.mech = all[i], .device_ops = &dbl_ops, .device_st = &d, .on_alloc = seen_alloc,
                           .on_free = seen_free, .observer_ctx = &sn};
      int rc = pt_sim_run(&t, &cfg, &err, &got);
      if (rc < 0) fprintf(stderr, "\n  %s: %s\n", all[i]->name, err.msg);
      CU_ASSERT_EQUAL_FATAL(rc, 0);
      CU_ASSERT_EQUAL(got.peak_reserved_bytes, want.peak_reserved_bytes);
      CU_ASSERT_EQUAL(got.segments_allocated, want.segments_allocated);
      CU_ASSERT_EQUAL(memcmp(got.driver_calls, want.driver_calls, sizeof got.driver_calls), 0);
      CU_ASSERT_EQUAL(got.nalloc_us, got.allocs);
      CU_ASSERT_EQUAL(got.nfree_us, sn.frees);
      CU_ASSERT_EQUAL(sn.allocs, got.allocs - got.ooms);
      assert_given_back(&d);
      pt_sim_result_free(&want);
      pt_sim_result_free(&got);
      dbl_done(&d);
    }
    pt_trace_data_free(&t);
  }
}

/*
 * On a given device the books time every call and a request splits into its
 * calls and the allocator's own work; the model fed the addresses the device
 * returned (handed out downward, unlike the model's) makes the same calls and
 * reaches the same peak; and with stop_at_oom a request the device cannot
 * serve ends the run with everything given back.
 */
static void test_timed_and_fed(void) {
  const pt_mech_ops *all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable, &pt_mech_async_pool,
                              &pt_mech_stitch};
  pt_err err = {{0}};
  pt_trace_data t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_load(pt_test_src("traces/varlen_infer.pickle.gz"), NULL, &err, &t), 0);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    dbl d = {.err = &err, .down = UINT64_C(1) << 47};
    pt_model_dev_init(&d.model, NULL, 0, &err);
    pt_call_log log = {0};
    pt_sim_config cfg = {.mech = all[i], .device_ops = &dbl_ops, .device_st = &d, .log = &log};
    pt_sim_result got, fed;
    CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, &got), 0);
    double calls = 0, own = 0, req = 0;
    uint64_t counted = 0;
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      for (int k = 0; k < PT_SIZE_CLASSES; k++) {
        calls += got.call_times->us[c][k];
        counted += got.call_sizes->calls[c][k];
        CU_ASSERT(got.call_times->us[c][k] >= 0);
      }
    for (int k = 0; k < PT_SIZE_CLASSES; k++) own += got.own_us[k] + got.own_call_us[k];
    for (size_t k = 0; k < got.nalloc_us; k++) req += got.alloc_us[k];
    for (size_t k = 0; k < got.nfree_us; k++) req += got.free_us[k];
    CU_ASSERT(counted > 0);
    CU_ASSERT_DOUBLE_EQUAL(calls, got.call_times->total_us, 1e-6 * (1 + calls));
    CU_ASSERT_DOUBLE_EQUAL(own + calls, req, 1e-3 * req + 1); /* request times are floats */
    /* the class axis on the live path: the repeats' calls, times and own work are a part of the whole, their
       call times are those of the calls counted for them, and the classes are the model's (the same trace,
       the same rule, whatever the device) */
    CU_ASSERT_FATAL(got.classified);
    double rcalls = 0, rown = 0;
    uint64_t rcounted = 0, nrep = 0, dist = 0;
    for (int c = 0; c < PT_DRV_NCALLS; c++)
      for (int k = 0; k < PT_SIZE_CLASSES; k++) {
        rcalls += got.repeat_call_times->us[c][k];
        rcounted += got.repeat_call_sizes->calls[c][k];
        CU_ASSERT(got.repeat_call_sizes->calls[c][k] <= got.call_sizes->calls[c][k]);
        CU_ASSERT(got.repeat_call_times->us[c][k] <= got.call_times->us[c][k] + 1e-9);
      }
    for (int k = 0; k < PT_SIZE_CLASSES; k++) {
      rown += got.own_repeat_us[k] + got.own_call_repeat_us[k];
      nrep += got.req_repeat.n[k] + got.req_repeat.n_call[k];
      CU_ASSERT(got.req_repeat.n[k] <= got.req.n[k] && got.req_repeat.n_call[k] <= got.req.n_call[k]);
    }
    for (int k = 0; k <= PT_REPEAT_RING; k++) dist += got.by_free_distance[k];
    CU_ASSERT_DOUBLE_EQUAL(rcalls, got.repeat_call_times->total_us, 1e-6 * (1 + rcalls));
    CU_ASSERT(rcalls <= calls + 1e-9);
    CU_ASSERT(nrep > 0 && nrep < got.allocs + got.frees);
    CU_ASSERT_EQUAL(dist, got.allocs + got.frees); /* the trace's records, classed once */
    CU_ASSERT(rown <= own + 1e-3 * own + 1);
    uint64_t rdrv = 0;
    for (int c = 0; c < PT_DRV_NCALLS; c++) rdrv += got.repeat_driver_calls[c];
    CU_ASSERT_EQUAL(rdrv, rcounted);
    if (all[i] == &pt_mech_direct) { /* a call a request: a repeat's call is counted and timed as one */
      CU_ASSERT_EQUAL(rcounted, nrep);
      CU_ASSERT(rcalls > 0);
    }
    pt_gpu g;
    CU_ASSERT_EQUAL_FATAL(pt_gpu_load("h200", &err, &g), 0);
    pt_sim_config mc = {.mech = all[i], .gpu = &g};
    pt_sim_result model;
    CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &mc, &err, &model), 0);
    CU_ASSERT_EQUAL(memcmp(model.by_free_distance, got.by_free_distance, sizeof got.by_free_distance), 0);
    uint64_t mrep = 0;
    for (int k = 0; k < PT_SIZE_CLASSES; k++) mrep += model.req_repeat.n[k] + model.req_repeat.n_call[k];
    CU_ASSERT_EQUAL(mrep, nrep);
    pt_sim_result_free(&model);
    pt_addr_hint *mh, *vh;
    size_t nm, nv;
    CU_ASSERT_EQUAL_FATAL(pt_mreplay_hints(&log, &mh, &nm, &vh, &nv, &err), 0);
    CU_ASSERT_EQUAL(nm, got.driver_calls[PT_DRV_malloc]);
    CU_ASSERT_EQUAL(nv, got.driver_calls[PT_DRV_address_reserve]);
    pt_sim_config fc = {.mech = all[i], .given_addresses = 1, .malloc_hints = mh, .nmalloc_hints = nm,
                        .reserve_hints = vh, .nreserve_hints = nv};
    CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &fc, &err, &fed), 0);
    CU_ASSERT_EQUAL(memcmp(fed.driver_calls, got.driver_calls, sizeof got.driver_calls), 0);
    CU_ASSERT_EQUAL(fed.peak_reserved_bytes, got.peak_reserved_bytes);
    CU_ASSERT_PTR_NULL(fed.call_times); /* the model is not timed */
    free(mh);
    free(vh);
    pt_call_log_free(&log);
    pt_sim_result_free(&got);
    pt_sim_result_free(&fed);
    /* out of memory on the device mid-run, under a cap the trace passes */
    pt_sim_config oc = {.mech = all[i], .device_ops = &dbl_ops, .device_st = &d, .capacity = 64 * MIB, .stop_at_oom = 1};
    err.msg[0] = 0;
    CU_ASSERT_EQUAL(pt_sim_run(&t, &oc, &err, &got), PT_EOOM);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "out of GPU memory"));
    assert_given_back(&d);
    pt_sim_result_free(&got);
    dbl_done(&d);
  }
  pt_trace_data_free(&t);
}

int pt_test_add_device(void) {
  CU_pSuite s = CU_add_suite("device", NULL, NULL);
  if (!s) return CU_get_error();
  if (!CU_add_test(s, "the books' live maps: by address, a second map refused, a failed one undone", test_books_maps) ||
      !CU_add_test(s, "the books count the calls after a large one apart, as the cost model prices them",
                   test_books_after_large) ||
      !CU_add_test(s, "every mechanism survives a failed call at every point", test_fail_every_call) ||
      !CU_add_test(s, "the engine on a device it is given", test_engine_on_device) ||
      !CU_add_test(s, "a given device's calls timed; the model fed its addresses repeats them; out of memory ends the run",
                   test_timed_and_fed))
    return CU_get_error();
  return CUE_SUCCESS;
}
