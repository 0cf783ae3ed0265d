/*
 * test_alloc.c — live requests through the per-device allocator (alloc.h)
 * on modelled devices: addresses map back at free, statistics per device,
 * peaks reset, a free of a foreign address refused, the cap's OOM message,
 * every mechanism, and four threads on two devices at once with nothing
 * handed to the wrong device.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "mech.h"
#include "modeldev.h"
#include "testdev.h"
#include "testutil.h"

#define MIB (UINT64_C(1) << 20)

static pt_alloc *make(const pt_mech_ops *m, uint64_t capacity, pt_test_models *b) {
  pt_params p = {0};
  pt_alloc_backend be = pt_test_model_backend(b);
  pt_err err = {{0}};
  pt_alloc *a = NULL;
  CU_ASSERT_EQUAL(pt_alloc_create(m, &p, capacity, NULL, &be, &err, &a), 0);
  return a;
}

static void test_alloc_basics(void) {
  const pt_mech_ops *all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable, &pt_mech_async_pool,
                              &pt_mech_stitch};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    pt_test_models b = {0};
    pt_alloc *a = make(all[i], 0, &b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    pt_err err = {{0}};
    uint64_t x = 0, y = 0, z = 0;
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 1000, 7, &x, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 3 * MIB, 7, &y, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 0, 7, &z, &err), 0); /* nothing asked, nothing given */
    CU_ASSERT_EQUAL(z, 0);
    CU_ASSERT(x && y && x != y);
    pt_alloc_stats s;
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 0, &s), 0);
    CU_ASSERT_EQUAL(s.allocs, 2);
    CU_ASSERT_EQUAL(s.allocated_bytes, 1000 + 3 * MIB);
    CU_ASSERT(s.reserved_bytes >= s.allocated_bytes);
    CU_ASSERT(s.driver_calls[PT_DRV_malloc] + s.driver_calls[PT_DRV_mem_create] > 0);
    CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x, &err), PT_EUSAGE); /* twice */
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "did not hand out"));
    CU_ASSERT_EQUAL(pt_alloc_free(a, 1, y, &err), PT_EUSAGE); /* on another device */
    CU_ASSERT_EQUAL(pt_alloc_free(a, 0, 0, &err), 0);        /* free(NULL) */
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 0, &s), 0);
    CU_ASSERT_EQUAL(s.peak_allocated_bytes, 1000 + 3 * MIB);
    CU_ASSERT_EQUAL(pt_alloc_reset_peaks(a, 0), 0);
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 0, &s), 0);
    CU_ASSERT_EQUAL(s.peak_allocated_bytes, 3 * MIB);
    CU_ASSERT_EQUAL(s.peak_reserved_bytes, s.reserved_bytes);
    CU_ASSERT_EQUAL(pt_alloc_free(a, 0, y, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_empty_cache(a, 0, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 0, &s), 0);
    CU_ASSERT_EQUAL(s.allocated_bytes, 0);
    if (all[i] != &pt_mech_async_pool) CU_ASSERT_EQUAL(s.reserved_bytes, 0); /* async_pool keeps its pool's VA only */
    CU_ASSERT_EQUAL(pt_alloc_empty_cache(a, 5, &err), 0); /* never used */
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 5, &s), 0);
    CU_ASSERT_EQUAL(s.allocs, 0);
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, PT_ALLOC_MAX_DEVICES, 512, 0, &z, &err), PT_EUSAGE);
    pt_alloc_destroy(a);
    CU_ASSERT_EQUAL(b.opened, 1);
    CU_ASSERT_EQUAL(b.closed, 1);
  }
}

/* Past the cap: PT_EOOM, and the message says what was asked, what is held and the cap. */
static void test_alloc_oom(void) {
  pt_test_models b = {0};
  pt_alloc *a = make(&pt_mech_caching, 64 * MIB, &b);
  pt_err err = {{0}};
  uint64_t x = 0, y = 0;
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 40 * MIB, 0, &x, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 40 * MIB, 0, &y, &err), PT_EOOM);
  CU_ASSERT_EQUAL(y, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "out of memory: 41943040 bytes asked, 41943040 held from the driver"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cap 67108864"));
  pt_alloc_stats s;
  pt_alloc_get_stats(a, 0, &s);
  CU_ASSERT_EQUAL(s.ooms, 1);
  CU_ASSERT_EQUAL(s.capacity, 64 * MIB);
  CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 40 * MIB, 0, &y, &err), 0); /* the cached block serves it */
  pt_alloc_destroy(a);
}

/* Parameters are checked before anything runs. */
static void test_alloc_bad_params(void) {
  pt_params p = {0};
  pt_params_set(&p, "roundup_power2_divisions", 3);
  pt_test_models b = {0};
  pt_alloc_backend be = pt_test_model_backend(&b);
  pt_err err = {{0}};
  pt_alloc *a = NULL;
  CU_ASSERT_EQUAL(pt_alloc_create(&pt_mech_caching, &p, 0, NULL, &be, &err, &a), PT_EUSAGE);
  CU_ASSERT_PTR_NULL(a);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "roundup_power2_divisions"));
}

/* Four threads, two devices each, 20000 requests each: every address freed on the device that gave it. */
typedef struct worker {
  pt_alloc *a;
  unsigned seed;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  uint64_t live[2][32] = {{0}};
  for (int i = 0; i < 20000; i++) {
    unsigned r = (w->seed = w->seed * 1103515245u + 12345u) >> 8;
    int dev = r & 1, k = (r >> 1) % 32;
    pt_err err = {{0}};
    if (live[dev][k]) {
      if (pt_alloc_free(w->a, dev, live[dev][k], &err) < 0) w->bad++;
      live[dev][k] = 0;
    } else {
      uint64_t bytes = 512 + (r >> 6) % (3 * MIB);
      if (pt_alloc_malloc(w->a, dev, bytes, (uint64_t)(r >> 3) % 2, &live[dev][k], &err) < 0) w->bad++;
    }
  }
  for (int dev = 0; dev < 2; dev++)
    for (int k = 0; k < 32; k++) {
      pt_err err = {{0}};
      if (live[dev][k] && pt_alloc_free(w->a, dev, live[dev][k], &err) < 0) w->bad++;
    }
  return (void *)(intptr_t)w->bad;
}

static void test_alloc_threads(void) {
  pt_test_models b = {0};
  pt_alloc *a = make(&pt_mech_caching, 0, &b);
  worker w[4];
  for (int i = 0; i < 4; i++) w[i] = (worker){a, (unsigned)i * 7919u + 1u, 0};
  CU_ASSERT_EQUAL(pt_test_threads(4, work, w, sizeof w[0]), 0);
  CU_ASSERT_EQUAL(b.opened, 2); /* each device opened once, though four threads raced for it */
  pt_alloc_stats s0, s1;
  pt_alloc_get_stats(a, 0, &s0);
  pt_alloc_get_stats(a, 1, &s1);
  CU_ASSERT_EQUAL(s0.allocated_bytes, 0);
  CU_ASSERT_EQUAL(s1.allocated_bytes, 0);
  CU_ASSERT_EQUAL(s0.allocs, s0.frees);
  CU_ASSERT_EQUAL(s1.allocs, s1.frees);
  CU_ASSERT(s0.allocs > 10000 && s1.allocs > 10000);
  pt_alloc_destroy(a);
  CU_ASSERT_EQUAL(b.closed, 2);
}

/* async_pool shares memory across streams: under the allocator it serves one stream, and refuses a second. */
static void test_alloc_shared_streams(void) {
  pt_test_models b = {0};
  pt_alloc *a = make(&pt_mech_async_pool, 0, &b);
  pt_err err = {{0}};
  uint64_t x = 0, y = 0;
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0x10, &x, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0x20, &y, &err), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "safe on one stream only"));
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0x10, &y, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 1, 4096, 0x20, &y, &err), 0); /* another device: its own stream */
  pt_alloc_destroy(a);
  a = make(&pt_mech_caching, 0, &b); /* per-stream pools: any stream */
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0x10, &x, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0x20, &y, &err), 0);
  pt_alloc_destroy(a);
}

int pt_test_add_alloc(void) {
  CU_pSuite s = CU_add_suite("alloc", NULL, NULL);
  if (!s) return CU_get_error();
  if (!CU_add_test(s, "every mechanism serves live requests per device", test_alloc_basics) ||
      !CU_add_test(s, "past the cap: PT_EOOM saying asked, held and cap", test_alloc_oom) ||
      !CU_add_test(s, "parameters checked before anything runs", test_alloc_bad_params) ||
      !CU_add_test(s, "four threads on two devices", test_alloc_threads) ||
      !CU_add_test(s, "a mechanism that shares memory across streams serves one", test_alloc_shared_streams))
    return CU_get_error();
  return CUE_SUCCESS;
}
