/* calibrate.c — driver-call costs measured on device 0 (see calibrate.h). */
#include "calibrate.h"

#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include "cudafns.h"

#define MAX_REPS 64
#define MIB (UINT64_C(1) << 20)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void add(pt_cost_points *p, uint64_t bytes, double *t, unsigned n) {
  qsort(t, n, sizeof *t, cmp);
  if (p->n < PT_COST_MAX_POINTS) {
    p->bytes[p->n] = (double)bytes;
    p->us[p->n++] = t[n / 2];
  }
}

#define TIMED(slot, expr, what)                                   \
  do {                                                            \
    double t0_ = pt_cu_now_us();                                  \
    CUresult r_ = (expr);                                         \
    (slot) = pt_cu_now_us() - t0_;                                \
    if (r_ != CUDA_SUCCESS) { rc = pt_cu_fail(d, r_, what, err); goto out; } \
  } while (0)

/* cudaMalloc/cudaFree: reps blocks of each size, allocated, then freed. */
static int alloc_free(pt_driver *d, unsigned reps, pt_cost_points *pm, pt_cost_points *pf, pt_err *err) {
  /* the driver sub-allocates small blocks (~2 us) and not large ones (~45 us): points every power
     of two from 64 KiB to 2 MiB (and just below 2 MiB) find the step, so sizes near it are not
     drawn on a long slope between a cheap point and a dear one */
  static const uint64_t sizes[] = {512,     64 << 10,          128 << 10, 256 << 10, 512 << 10,  MIB,
                                   2 * MIB - 512, 2 * MIB, 16 * MIB,  256 * MIB, 1024 * MIB};
  CUdeviceptr p[MAX_REPS] = {0};
  double tm[MAX_REPS], tf[MAX_REPS];
  int rc = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (unsigned i = 0; i < reps; i++) TIMED(tm[i], d->MemAlloc(&p[i], sizes[s]), "cuMemAlloc");
    for (unsigned i = 0; i < reps; i++) {
      TIMED(tf[i], d->MemFree(p[i]), "cuMemFree");
      p[i] = 0;
    }
    add(pm, sizes[s], tm, reps);
    add(pf, sizes[s], tf, reps);
  }
out:
  for (unsigned i = 0; i < reps; i++)
    if (p[i]) d->MemFree(p[i]);
  return rc;
}

/* One handle's life: create, reserve, map, set access, unmap, release (and free the VA). */
static int vmm_cycle(pt_driver *d, unsigned reps, pt_cost_points *pts, pt_err *err) {
  static const uint64_t sizes[] = {2 * MIB, 32 * MIB, 512 * MIB, 2048 * MIB};
  double t[5][MAX_REPS];
  CUmemGenericAllocationHandle h = 0;
  CUdeviceptr va = 0;
  int mapped = 0, rc = 0;
  uint64_t bytes = 0;
  CUmemAllocationProp prop = pt_cu_handle_prop(d);
  CUmemAccessDesc acc = pt_cu_access(d);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    bytes = sizes[s];
    for (unsigned i = 0; i < reps; i++) {
      TIMED(t[0][i], d->MemCreate(&h, bytes, &prop, 0), "cuMemCreate");
      CUresult r = d->MemAddressReserve(&va, bytes, 2 * MIB, 0, 0);
      if (r != CUDA_SUCCESS) {
        va = 0;
        rc = pt_cu_fail(d, r, "cuMemAddressReserve", err);
        goto out;
      }
      TIMED(t[1][i], d->MemMap(va, bytes, 0, h, 0), "cuMemMap");
      mapped = 1;
      TIMED(t[2][i], d->MemSetAccess(va, bytes, &acc, 1), "cuMemSetAccess");
      TIMED(t[3][i], d->MemUnmap(va, bytes), "cuMemUnmap");
      mapped = 0;
      TIMED(t[4][i], d->MemRelease(h), "cuMemRelease");
      h = 0;
      d->MemAddressFree(va, bytes);
      va = 0;
    }
    add(&pts[PT_DRV_mem_create], bytes, t[0], reps);
    add(&pts[PT_DRV_mem_map], bytes, t[1], reps);
    add(&pts[PT_DRV_mem_set_access], bytes, t[2], reps);
    add(&pts[PT_DRV_mem_unmap], bytes, t[3], reps);
    add(&pts[PT_DRV_mem_release], bytes, t[4], reps);
  }
out:
  if (mapped) d->MemUnmap(va, bytes);
  if (h) d->MemRelease(h);
  if (va) d->MemAddressFree(va, bytes);
  return rc;
}

/* cuMemAddressReserve / cuMemAddressFree, 2 MiB to 1 TiB. */
static int reserve_free(pt_driver *d, unsigned reps, pt_cost_points *pr, pt_cost_points *pf, pt_err *err) {
  static const uint64_t sizes[] = {2 * MIB, 1024 * MIB, UINT64_C(64) << 30, UINT64_C(1) << 40};
  double tr[MAX_REPS], tf[MAX_REPS];
  CUdeviceptr va = 0;
  uint64_t bytes = 0;
  int rc = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    bytes = sizes[s];
    for (unsigned i = 0; i < reps; i++) {
      TIMED(tr[i], d->MemAddressReserve(&va, bytes, 2 * MIB, 0, 0), "cuMemAddressReserve");
      TIMED(tf[i], d->MemAddressFree(va, bytes), "cuMemAddressFree");
      va = 0;
    }
    add(pr, bytes, tr, reps);
    add(pf, bytes, tf, reps);
  }
out:
  if (va) d->MemAddressFree(va, bytes);
  return rc;
}

int pt_calibrate(pt_driver *d, unsigned reps, int noisy, pt_cost_points points[PT_DRV_NCALLS], pt_err *err) {
  memset(points, 0, PT_DRV_NCALLS * sizeof *points);
  if (reps < 1 || reps > MAX_REPS) return pt_err_set(err, PT_EUSAGE, "repetitions must be 1..%d", MAX_REPS);
  int rc = pt_cu_context(d, err);
  if (rc < 0) return rc;
  pt_cost_points warm[2] = {{0}};
  if (noisy) fputs("calibrating: warm-up", stderr);
  if ((rc = alloc_free(d, 2, &warm[0], &warm[1], err)) < 0) return rc; /* the first calls of a context are slower */
  if (noisy) fputs(", cudaMalloc/cudaFree", stderr);
  if ((rc = alloc_free(d, reps, &points[PT_DRV_malloc], &points[PT_DRV_free], err)) < 0) return rc;
  if (noisy) fputs(", VMM handles", stderr);
  if ((rc = vmm_cycle(d, reps, points, err)) < 0) return rc;
  if (noisy) fputs(", VA reservations", stderr);
  rc = reserve_free(d, reps, &points[PT_DRV_address_reserve], &points[PT_DRV_address_free], err);
  if (noisy) fputc('\n', stderr);
  return rc;
}

#else /* built without the CUDA Toolkit */

int pt_calibrate(pt_driver *d, unsigned reps, int noisy, pt_cost_points points[PT_DRV_NCALLS], pt_err *err) {
  (void)d, (void)reps, (void)noisy;
  memset(points, 0, PT_DRV_NCALLS * sizeof *points);
  return pt_err_set(err, PT_ENODEV, "no GPU support in this build");
}

#endif
