/* calibrate.c — driver-call costs and the allocators' own work, measured on device 0 (see calibrate.h). */
#include "calibrate.h"

#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "clock.h"
#include "cudadev.h"
#include "json.h"
#include "mech.h"

#define MIB (UINT64_C(1) << 20)

#ifdef HAVE_CUDA
#include "cudafns.h"

#define MAX_REPS 64

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

/* ---- the mechanisms' own work: a cached allocate + free pair ------------- */

#define WARM_PAIRS 20            /* after the first pair of a size, untimed, in rounds of these ... */
#define WARM_US 5000.0           /* ... until this long has passed (the clock and the caches settle) */
#define MIN_PAIRS 10             /* a batch has at least these */
#define BATCH_BUDGET_US 20000.0  /* a batch of slow pairs (direct's cudaMalloc + cudaFree) is cut to about this */

const pt_cal_plan pt_cal_default_plan = {6, {512, 64 << 10, MIB, 8 * MIB, 64 * MIB, 512 * MIB}, 5, 2000, 32, 8 * MIB};

/* The mechanisms in pt_mech_names()' order. */
static const pt_mech_ops *const cal_mechs[PT_CAL_NMECHS] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable,
                                                            &pt_mech_async_pool, &pt_mech_stitch};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of t[0..n) (sorted in place), the least and the most. */
static void summarise(double *t, unsigned n, pt_cal_point *p) {
  qsort(t, n, sizeof *t, cmp_double);
  p->pair_us = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  p->min_us = t[0];
  p->max_us = t[n - 1];
}

/* n pairs of bytes back to back; *us the mean µs a pair (NULL: untimed). */
static int pairs(const pt_mech_ops *m, void *st, uint64_t bytes, unsigned n, const int *fault, double *us) {
  double t0 = pt_clock_s();
  for (unsigned i = 0; i < n; i++) {
    uint64_t h;
    int rc = m->alloc(st, bytes, 0, &h);
    if (rc < 0 || (rc = m->free(st, h)) < 0) return rc;
  }
  double t1 = pt_clock_s();
  if (*fault) return *fault;
  if (us) *us = (t1 - t0) * 1e6 / n;
  return 0;
}

/* What timing a mechanism's pairs needs: the mechanism, its state, the books and their call times. */
typedef struct cal_run {
  const pt_mech_ops *m;
  void *st;
  pt_device *books;
  pt_call_times *times;
  const pt_cal_plan *plan;
  int fault;
} cal_run;

/* Pairs of bytes: a first one, warm-up pairs, then the timed batches, into *p (crowd: the free blocks around). */
static int time_size(cal_run *r, uint64_t bytes, unsigned crowd, pt_cal_point *p) {
  const pt_cal_plan *plan = r->plan;
  double t[100], warm = 0, warm_t0 = pt_clock_s();
  int rc = pairs(r->m, r->st, bytes, 1, &r->fault, NULL);
  while (rc == 0 && (rc = pairs(r->m, r->st, bytes, WARM_PAIRS, &r->fault, &warm)) == 0 &&
         (pt_clock_s() - warm_t0) * 1e6 < WARM_US) {
  }
  if (rc < 0) return rc;
  unsigned n = plan->pairs;
  if (warm * n > BATCH_BUDGET_US) n = warm > 0 ? (unsigned)(BATCH_BUDGET_US / warm) : n;
  if (n < MIN_PAIRS) n = MIN_PAIRS;
  if (n > plan->pairs) n = plan->pairs;
  uint64_t calls0 = r->books->ncalls;
  double us0 = r->times->total_us;
  pt_bset_work w0 = pt_bset_work_read();
  r->books->times = r->times; /* the timed batches' calls timed too (two clock reads a call) */
  for (unsigned b = 0; rc == 0 && b < plan->batches; b++) rc = pairs(r->m, r->st, bytes, n, &r->fault, &t[b]);
  r->books->times = NULL;
  pt_bset_work w1 = pt_bset_work_read();
  if (rc < 0) return rc;
  double reqs = 2.0 * n * plan->batches; /* a pair is a request and a free */
  *p = (pt_cal_point){.bytes = bytes, .pairs = n, .batches = plan->batches, .driver_calls = r->books->ncalls - calls0,
                      .driver_us = (r->times->total_us - us0) / ((double)n * plan->batches),
                      .ops = (double)(w1.ops - w0.ops) / reqs, .chunks = (double)(w1.chunks - w0.chunks) / reqs,
                      .visits = (double)(w1.visits - w0.visits) / reqs, .crowd = crowd};
  summarise(t, plan->batches, p);
  return 0;
}

/* The crowded loop's i-th free block of k around pairs of bytes: bytes itself first, then steps of a 2k-th of it (at
   least 512 B, caching's rounding, so that no two round alike) downwards, or upwards from a size too small for that:
   near the size, so that every mechanism keeps them in the same free set (caching's small or large pool). */
static uint64_t crowd_bytes(uint64_t bytes, unsigned i, unsigned k) {
  uint64_t step = (bytes / (2 * k) + 511) / 512 * 512;
  if (step < 512) step = 512;
  return bytes > (uint64_t)k * step ? bytes - i * step : bytes + i * step;
}

/* The crowded loop at bytes: the cache given back, k free blocks each before a held one, the pairs timed among them,
   then the held ones freed. */
static int time_crowded(cal_run *r, uint64_t bytes, pt_cal_point *p) {
  unsigned k = r->plan->crowd;
  uint64_t freed[PT_CAL_MAX_CROWD], held[PT_CAL_MAX_CROWD];
  unsigned nheld = 0, nfreed = 0;
  int rc = r->m->empty_cache ? r->m->empty_cache(r->st) : 0;
  for (unsigned i = 0; rc == 0 && i < k; i++) {
    if ((rc = r->m->alloc(r->st, crowd_bytes(bytes, i, k), 0, &freed[nfreed])) < 0) break;
    nfreed++;
    if ((rc = r->m->alloc(r->st, bytes, 0, &held[nheld])) < 0) break;
    nheld++;
  }
  while (nfreed) { /* the free blocks, none beside another */
    int frc = r->m->free(r->st, freed[--nfreed]);
    if (rc == 0) rc = frc;
  }
  if (rc == 0) rc = r->fault;
  if (rc == 0) rc = time_size(r, bytes, k, p);
  while (nheld) {
    int frc = r->m->free(r->st, held[--nheld]);
    if (rc == 0) rc = frc;
  }
  return rc;
}

/* One mechanism on a device of its own; the mechanism's or the device's message in *merr on failure. */
static int time_mech(const pt_alloc_backend *be, const pt_mech_ops *m, const pt_cal_plan *plan, pt_cal_series *out,
                     pt_err *merr) {
  const pt_dev_ops *ops;
  void *dst = NULL;
  pt_device books;
  pt_mech_counters counters = {0};
  pt_params params = {0};
  pt_policy_hooks hooks = {0};
  pt_call_times times = {0};
  uint64_t allocated = 0, resident = 0;
  int have_resident = 0;
  cal_run r = {.m = m, .books = &books, .times = &times, .plan = plan};
  int rc = be->open(be->ctx, 0, merr, &ops, &dst);
  if (rc < 0) return rc;
  pt_dev_init(&books, ops, dst, 0, merr);
  pt_mech_env env = {.dev = &books, .counters = &counters, .params = &params, .hooks = &hooks,
                     .allocated = &allocated, .fault = &r.fault, .err = merr};
  if ((rc = pt_mech_create(m, &env, &r.st)) < 0) goto out;
  if ((rc = m->alloc(r.st, 512, 0, &resident)) < 0) { /* memory a program holds all along */
    pt_err_prefix(merr, rc, "%s: the block held", m->name);
    goto out;
  }
  have_resident = 1;
  allocated = 512;
  out->n = 0;
  for (int crowded = 0; crowded < 2; crowded++)
    for (size_t s = 0; s < plan->nsizes; s++) {
      uint64_t bytes = plan->sizes[s];
      if (crowded && (!plan->crowd || bytes > plan->crowd_upto)) continue;
      if ((rc = crowded ? time_crowded(&r, bytes, &out->at[out->n]) : time_size(&r, bytes, 0, &out->at[out->n])) < 0) {
        pt_err_prefix(merr, rc, "%s at %llu bytes%s", m->name, (unsigned long long)bytes, crowded ? ", crowded" : "");
        goto out;
      }
      out->n++;
    }
out:
  if (r.st) {
    if (have_resident && m->free(r.st, resident) == 0) allocated = 0;
    if (m->empty_cache) {
      int erc = m->empty_cache(r.st);
      if (rc == 0 && erc < 0) rc = pt_err_prefix(merr, erc, "%s: giving memory back", m->name);
    }
    m->destroy(r.st);
  }
  pt_dev_done(&books);
  be->close(be->ctx, dst);
  return rc;
}

/* The points plan makes a series: every size, and the crowded loop's sizes. */
static size_t plan_points(const pt_cal_plan *plan) {
  size_t n = plan->nsizes;
  for (size_t s = 0; plan->crowd && s < plan->nsizes; s++) n += plan->sizes[s] <= plan->crowd_upto;
  return n;
}

int pt_calibrate_mechs(const pt_alloc_backend *be, const pt_cal_plan *plan, int noisy, pt_cal_series out[PT_CAL_NMECHS],
                       pt_err *err) {
  memset(out, 0, PT_CAL_NMECHS * sizeof *out);
  if (plan->nsizes < 1 || plan->nsizes > PT_CAL_MAX_SIZES || plan->batches < 1 || plan->batches > 99 || plan->pairs < 1)
    return pt_err_set(err, PT_EUSAGE, "calibrate: 1 to %d sizes, 1 to 99 batches and at least one pair a batch",
                      PT_CAL_MAX_SIZES);
  if (plan->crowd == 1 || plan->crowd > PT_CAL_MAX_CROWD || plan_points(plan) > PT_CAL_MAX_SIZES)
    return pt_err_set(err, PT_EUSAGE, "calibrate: the crowded loop wants 2 to %d free blocks, and at most %d points "
                      "with the sizes'", PT_CAL_MAX_CROWD, PT_CAL_MAX_SIZES);
  for (size_t s = 0; s < plan->nsizes; s++)
    if (!plan->sizes[s]) return pt_err_set(err, PT_EUSAGE, "calibrate: a request size of 0 bytes");
  if (noisy)
    fprintf(stderr, "calibrating the allocators' own work (a cached allocate + free pair, %zu sizes, %zu among %u free "
            "blocks):", plan->nsizes, plan_points(plan) - plan->nsizes, plan->crowd);
  int rc = 0;
  for (int i = 0; rc == 0 && i < PT_CAL_NMECHS; i++) {
    pt_err merr = {{0}};
    snprintf(out[i].name, sizeof out[i].name, "%s", cal_mechs[i]->name);
    snprintf(out[i].from, sizeof out[i].from, "mechanism");
    if (noisy) fprintf(stderr, " %s", cal_mechs[i]->name);
    if ((rc = time_mech(be, cal_mechs[i], plan, &out[i], &merr)) < 0)
      pt_err_set(err, rc, "calibrate: %s", merr.msg[0] ? merr.msg : pt_strerror(rc));
    for (size_t k = 0; noisy && i > 0 && k < out[i].n; k++) /* direct calls the driver by nature */
      if (out[i].at[k].driver_calls)
        fprintf(stderr, " (WARNING: %llu driver calls in its timed pairs at %llu bytes%s)",
                (unsigned long long)out[i].at[k].driver_calls, (unsigned long long)out[i].at[k].bytes,
                out[i].at[k].crowd ? ", crowded" : "");
  }
  if (noisy) fputc('\n', stderr);
  return rc;
}

static int gpu_open(void *ctx, int device, pt_err *err, const pt_dev_ops **ops, void **st) {
  pt_cudadev *c;
  int rc = pt_cudadev_open(ctx, device, err, &c);
  *ops = &pt_cudadev_ops;
  *st = c;
  return rc;
}

static void gpu_close(void *ctx, void *st) {
  (void)ctx;
  pt_cudadev_close(st);
}

pt_alloc_backend pt_calibrate_gpu_backend(pt_driver *d) { return (pt_alloc_backend){gpu_open, gpu_close, NULL, d}; }

double pt_calibrate_bookkeeping_us(const pt_cal_series *s, size_t k) {
  return strcmp(s->name, "direct") ? s->at[k].pair_us / 2 : 0;
}

/* ---- the writers ----------------------------------------------------------- */

static int cmp_point(const void *a, const void *b) {
  const pt_cal_point *x = a, *y = b;
  if (x->crowd != y->crowd) return x->crowd < y->crowd ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* s with its points in ascending crowd (the cached loop's first), then size. */
static pt_cal_series sorted(const pt_cal_series *s) {
  pt_cal_series c = *s;
  if (c.n > PT_CAL_MAX_SIZES) c.n = PT_CAL_MAX_SIZES;
  qsort(c.at, c.n, sizeof c.at[0], cmp_point);
  return c;
}

/* A point's µs as a line gives it: 4 decimals, and never 0 (a description's points must be > 0; a mean
   that rounds to 0 is below 0.1 ns, written as 0.0001). */
static double point_us(double us) { return us < 0.0001 ? 0.0001 : us; }

/* " 512:0.212 (0.200-0.230)" for each point of the crowd: a pair's median and spread. */
static void write_pairs(FILE *out, const pt_cal_series *s, unsigned crowd) {
  for (size_t k = 0; k < s->n; k++)
    if (s->at[k].crowd == crowd)
      fprintf(out, " %llu:%.3f (%.3f-%.3f)", (unsigned long long)s->at[k].bytes, s->at[k].pair_us, s->at[k].min_us,
              s->at[k].max_us);
}

/* The crowd of s's crowded points (its last point's), 0 when it has none. */
static unsigned crowd_of(const pt_cal_series *s) { return s->n ? s->at[s->n - 1].crowd : 0; }

void pt_calibrate_write_bookkeeping(FILE *out, const pt_cal_plan *plan, const pt_cal_series *series, size_t n) {
  fprintf(out, "\n# ---- the allocator's own work, measured: a cached allocate + free pair through each mechanism on\n"
               "# this GPU after warm-up, median of %u batches of up to %u pairs (fewer where a pair is slow), one\n"
               "# 512 B block held meanwhile; bookkeeping_us is half a pair: the µs of a request or of a free;\n"
               "# bookkeeping_loop the same points with the free-set work a request or a free did in them\n"
               "# (SIZE:US:OPS:CHUNKS:VISITS): what gpu fit --work adds to each mechanism's runs\n",
          plan->batches, plan->pairs);
  if (plan->crowd)
    fprintf(out, "# The crowded loop: the same pairs among %u free blocks of sizes near theirs, none beside another\n"
                 "# (at sizes up to %llu bytes): their points follow the cached loop's on the bookkeeping_loop line\n",
            plan->crowd, (unsigned long long)plan->crowd_upto);
  for (size_t i = 0; i < n; i++) {
    pt_cal_series s = sorted(&series[i]);
    if (!s.n) continue;
    int direct = !strcmp(s.name, "direct");
    fprintf(out, "# %s, µs a pair (least-most batch):", s.name);
    write_pairs(out, &s, 0);
    fputc('\n', out);
    if (crowd_of(&s)) {
      fprintf(out, "# %s among %u free blocks:", s.name, crowd_of(&s));
      write_pairs(out, &s, crowd_of(&s));
      fputc('\n', out);
    }
    if (direct) {
      fputs("# direct: each request is a cudaMalloc and each free a cudaFree, which the cost lines charge; of a\n"
            "# pair, µs in them:", out);
      for (size_t k = 0; k < s.n; k++)
        if (!s.at[k].crowd) fprintf(out, " %llu:%.3f", (unsigned long long)s.at[k].bytes, s.at[k].driver_us);
      fputs("\n# its own work, the rest, is within their noise: 0\n"
            "bookkeeping_us direct 0\n", out);
      continue;
    }
    for (size_t k = 0; k < s.n; k++)
      if (s.at[k].driver_calls)
        fprintf(out, "# WARNING: %s's timed pairs at %llu bytes%s made %llu driver calls: its time there includes them\n",
                s.name, (unsigned long long)s.at[k].bytes, s.at[k].crowd ? " (crowded)" : "",
                (unsigned long long)s.at[k].driver_calls);
    fprintf(out, "bookkeeping_us %s", s.name);
    for (size_t k = 0; k < s.n; k++)
      if (!s.at[k].crowd)
        fprintf(out, " %llu:%.4f", (unsigned long long)s.at[k].bytes, point_us(pt_calibrate_bookkeeping_us(&s, k)));
    fprintf(out, "\nbookkeeping_loop %s", s.name);
    for (size_t k = 0; k < s.n; k++)
      fprintf(out, " %llu:%.4f:%.4g:%.4g:%.4g", (unsigned long long)s.at[k].bytes,
              point_us(pt_calibrate_bookkeeping_us(&s, k)), s.at[k].ops, s.at[k].chunks, s.at[k].visits);
    fputc('\n', out);
  }
}

/* What a `from` means, in words. */
static const char *from_words(const char *from) {
  if (!strcmp(from, "cpp_extension")) return "from C++ (cpp_extension): c10::cuda::CUDACachingAllocator raw_alloc + raw_delete";
  if (!strcmp(from, "python")) return "from Python: torch.empty + del";
  return from;
}

void pt_calibrate_write_torch(FILE *out, const pt_cal_torch *t) {
  if (!t->measured) {
    fprintf(out, "\n# PyTorch's allocators: not measured (%s)\n", t->skipped[0] ? t->skipped : "not asked");
    return;
  }
  fprintf(out, "\n# ---- PyTorch's own allocators (torch %s on %s, %s): a cached allocate + free pair, µs;\n"
               "# not used by the model: they are there to compare pagetune's mechanisms with PyTorch's\n"
               "# (pagetune confirm may use them)\n",
          t->version, t->device, t->python);
  const char *last = "";
  for (size_t i = 0; i < t->n && i < PT_CAL_NTORCH; i++) {
    pt_cal_series s = sorted(&t->backends[i]);
    if (!s.n) continue;
    if (strcmp(last, s.from)) {
      fprintf(out, "# measured %s", from_words(s.from));
      if (!strcmp(s.from, "python") && t->cpp_error[0]) fprintf(out, " (the C++ extension: %s)", t->cpp_error);
      fputc('\n', out);
      last = t->backends[i].from;
    }
    fprintf(out, "# %s, µs a pair (least-most batch):", s.name);
    write_pairs(out, &s, 0);
    fprintf(out, "\ntorch_pair_us %s", s.name);
    for (size_t k = 0; k < s.n; k++)
      fprintf(out, " %llu:%.4f", (unsigned long long)s.at[k].bytes, point_us(s.at[k].pair_us));
    fputc('\n', out);
  }
}

/* "[{"bytes":...,...},...]"; bookkeeping: with each point's bookkeeping_us. */
static void json_points(FILE *out, const pt_cal_series *s, int bookkeeping) {
  fputc('[', out);
  for (size_t k = 0; k < s->n; k++) {
    const pt_cal_point *p = &s->at[k];
    fprintf(out, "%s{\"bytes\":%llu,\"pair_us\":%.4f,\"pair_us_min\":%.4f,\"pair_us_max\":%.4f,\"pairs\":%u,\"batches\":%u",
            k ? "," : "", (unsigned long long)p->bytes, p->pair_us, p->min_us, p->max_us, p->pairs, p->batches);
    if (bookkeeping)
      fprintf(out, ",\"driver_calls\":%llu,\"driver_us\":%.4f,\"bookkeeping_us\":%.4f,\"ops\":%.4g,\"chunks\":%.4g,"
              "\"visits\":%.4g,\"free_blocks\":%u", (unsigned long long)p->driver_calls, p->driver_us,
              pt_calibrate_bookkeeping_us(s, k), p->ops, p->chunks, p->visits, p->crowd);
    fputc('}', out);
  }
  fputc(']', out);
}

void pt_calibrate_json_mechs(FILE *out, const pt_cal_plan *plan, const pt_cal_series *series, size_t n) {
  fprintf(out, ",\"mechanisms\":{\"batches\":%u,\"pairs\":%u,\"held_bytes\":512,\"crowd\":%u,\"crowd_upto\":%llu,"
          "\"points\":{", plan->batches, plan->pairs, plan->crowd, (unsigned long long)plan->crowd_upto);
  for (size_t i = 0, first = 1; i < n; i++) {
    pt_cal_series s = sorted(&series[i]);
    if (!s.n) continue;
    fputs(first ? "" : ",", out);
    pt_json_str(out, s.name);
    fputc(':', out);
    json_points(out, &s, 1);
    first = 0;
  }
  fputs("}}", out);
}

void pt_calibrate_json_torch(FILE *out, const pt_cal_torch *t) {
  fputs(",\"torch\":{\"measured\":", out);
  fputs(t->measured ? "true" : "false", out);
  if (!t->measured) {
    fputs(",\"skipped\":", out);
    pt_json_str(out, t->skipped);
    fputs("}", out);
    return;
  }
  fputs(",\"python\":", out);
  pt_json_str(out, t->python);
  fputs(",\"torch_version\":", out);
  pt_json_str(out, t->version);
  fputs(",\"device\":", out);
  pt_json_str(out, t->device);
  fputs(",\"cpp_extension_error\":", out);
  pt_json_str(out, t->cpp_error[0] ? t->cpp_error : NULL);
  fputs(",\"used_by_model\":false,\"backends\":{", out);
  for (size_t i = 0, first = 1; i < t->n && i < PT_CAL_NTORCH; i++) {
    pt_cal_series s = sorted(&t->backends[i]);
    fputs(first ? "" : ",", out);
    pt_json_str(out, s.name);
    fputs(":{\"from\":", out);
    pt_json_str(out, s.from);
    fputs(",\"points\":", out);
    json_points(out, &s, 0);
    fputc('}', out);
    first = 0;
  }
  fputs("}}", out);
}
