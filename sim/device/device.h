/*
 * device.h — the device seam: what an allocator mechanism asks of a GPU
 * driver, and the books kept above every device.
 *
 * A device is a table of operations over an opaque state (pt_dev_ops), as a
 * mechanism is (mech.h): cudaMalloc/cudaFree, the VMM calls (address
 * reserve/free, create -> handle, map a handle at a VA, set access, unmap,
 * release a handle), and memory that exists before a run begins.  Every
 * operation returns 0 or a negative PT_E* code with detail in the device's
 * error; results come back through out-parameters.  The modelled GPU
 * (engine/modeldev.h) is one device, the real driver (backend/) another, a
 * test double that fails on demand a third: the mechanisms cannot tell them
 * apart.
 *
 * pt_device is the accounting layer every mechanism holds.  It calls the
 * device below and keeps, the same way for every device: reserved and peak
 * bytes, the cap (--capacity, PyTorch's set_per_process_memory_fraction),
 * calls by kind and size class, the live maps, and the call log with the
 * device's own handle ids.  A call the cap refuses returns PT_EOOM without
 * reaching the device; a call the device fails is not counted.  So the books
 * hold what the device holds, whatever failed.
 */
#ifndef PT_DEVICE_H
#define PT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "error.h"
#include "u64map.h"

#define PT_EOOM (-20) /* a request that could not be satisfied: out of memory (the cap, or the device) */

/* X(name): the driver calls counted; the JSON keys of driver_calls. */
#define PT_DRIVER_CALLS(X) \
  X(malloc)                \
  X(free)                  \
  X(mem_create)            \
  X(mem_map)               \
  X(mem_set_access)        \
  X(mem_unmap)             \
  X(mem_release)           \
  X(address_reserve)       \
  X(address_free)

enum pt_drv_call {
#define PT_X(n) PT_DRV_##n,
  PT_DRIVER_CALLS(PT_X)
#undef PT_X
  PT_DRV_NCALLS
};

/* "malloc", "free", "mem_create", ...: each call's name, by pt_drv_call (JSON keys, SQL, descriptions). */
extern const char *const pt_drv_call_names[PT_DRV_NCALLS];

/* ---- the device below --------------------------------------------------- */

typedef struct pt_dev_ops {
  const char *name;
  int (*malloc)(void *st, uint64_t bytes, uint64_t *addr /* OUT */);
  int (*free)(void *st, uint64_t addr, uint64_t bytes);
  /* VA only, starting at a multiple of align (a multiple of 2 MiB; a device that needs a power of two
     may use the largest one align is a multiple of) */
  int (*address_reserve)(void *st, uint64_t bytes, uint64_t align, uint64_t *va /* OUT */);
  int (*address_free)(void *st, uint64_t va, uint64_t bytes);
  int (*mem_create)(void *st, uint64_t bytes, uint64_t *handle /* OUT, never 0 */);
  int (*mem_release)(void *st, uint64_t handle, uint64_t bytes);
  /* a handle may be mapped at several addresses at once (stitching) */
  int (*mem_map)(void *st, uint64_t va, uint64_t bytes, uint64_t handle);
  int (*mem_set_access)(void *st, uint64_t va, uint64_t bytes);
  int (*mem_unmap)(void *st, uint64_t va, uint64_t bytes);
  /* Memory from before the run, at addr: a cudaMalloc'd segment (page 0,
     handles NULL), or VMM pages of `page` bytes mapped from addr on (the
     last one shorter when bytes is not a multiple), whose handles come back
     in handles[ceil(bytes / page)]. */
  int (*adopt)(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles /* OUT */);
} pt_dev_ops;

/* ---- the books ------------------------------------------------------------ */

/*
 * The calls made, in order, when a run asks for them: what `pagetune replay`
 * makes on a real GPU.  call is a pt_drv_call, or PT_DRV_ADOPT for memory
 * that existed before the run (a replay makes it first, untimed).  va is the
 * address the call named (0 for mem_create and mem_release); handle the
 * device's handle for mem_create, mem_map, mem_unmap and mem_release (0
 * otherwise).  A map of a handle that is mapped already maps the same
 * memory at a second address.
 */
#define PT_DRV_ADOPT PT_DRV_NCALLS
typedef struct pt_dev_call {
  uint64_t va, bytes, handle;
  int call;
} pt_dev_call;

typedef struct pt_call_log {
  pt_dev_call *v;
  size_t n, cap;
} pt_call_log;

void pt_call_log_free(pt_call_log *log);

/*
 * Calls by kind and size class (class k: sizes in [2^k, 2^(k+1)), class 0
 * also 0 and 1): what a cost that is not linear in size needs (gpu/cost.h).
 */
#define PT_SIZE_CLASSES 64
typedef struct pt_call_sizes {
  uint64_t calls[PT_DRV_NCALLS][PT_SIZE_CLASSES];
  uint64_t bytes[PT_DRV_NCALLS][PT_SIZE_CLASSES];
} pt_call_sizes;

/*
 * The measured time of the calls made, when a caller asks for it (a real
 * device: pagetune replay --mechanism): µs by kind and size class,
 * attributed exactly as the calls are counted in pt_call_sizes (a
 * cuMemSetAccess split evenly over the handles it covers), so that a
 * class's time over its calls is the in-context cost of one call there;
 * total_us over every call counted.  A call the device failed is not
 * counted (its time is in failed_us).
 */
typedef struct pt_call_times {
  double us[PT_DRV_NCALLS][PT_SIZE_CLASSES];
  double total_us, failed_us;
} pt_call_times;

/*
 * Every timed call's time, in the order the calls were made, when a caller asks for it (a real device:
 * pagetune replay --mechanism --calls-out): what a cost that depends on the calls around it needs.  One entry
 * a counted call, as pt_call_times attributes it (a cuMemSetAccess one entry a handle it covers, its share of
 * the time); request: 0 for the calls no request makes (the run's untimed set), 1 for a request's.  Entries
 * past what memory holds are dropped and counted in lost.
 */
typedef struct pt_call_timing {
  uint64_t bytes;
  double us;
  int call, request;
} pt_call_timing;
typedef struct pt_call_tlog {
  pt_call_timing *v;
  size_t n, cap;
  uint64_t lost;
} pt_call_tlog;

void pt_call_tlog_free(pt_call_tlog *tl);

/*
 * Calls after a large one: on the H200 a call below PT_DRV_LARGE_CALL_BYTES made within PT_DRV_AFTER_LARGE calls
 * of one of at least that size costs more than the same call among small ones (a small cuMemAlloc 1.7-3.0 us
 * where none of the 8 calls before it was large, 2.9-6.4 us where one was, on five of six traces; cnn_train's
 * the other way: bench/RESULTS.md, calls after a large one).  The books count such calls apart when asked
 * (after_sizes), so that a cost model can price them by a line of their own (cost.h: cost_after_large).
 */
#define PT_DRV_LARGE_CALL_BYTES (UINT64_C(1) << 20)
#define PT_DRV_AFTER_LARGE 8

/* A live map: where, how long, which handle. */
typedef struct pt_dev_map {
  uint64_t va, bytes, handle;
} pt_dev_map;

typedef struct pt_device {
  const pt_dev_ops *ops;
  void *st;                          /* the device's state */
  uint64_t capacity;                 /* 0: no cap */
  uint64_t reserved, peak_reserved;  /* physical bytes held: segments + created handles */
  uint64_t calls[PT_DRV_NCALLS];
  uint64_t ncalls;                   /* every call counted, of every kind */
  uint64_t call_bytes[PT_DRV_NCALLS];/* bytes passed to each kind of call, summed */
  pt_call_sizes sizes;               /* the same by size class, and cuMemSetAccess by handle */
  uint64_t segments_allocated;       /* cudaMalloc calls + cuMemCreate calls */
  uint64_t bytes_mapped_total;
  /* live maps, in no order, and where each is by its address (at: va -> index + 1; stitch on a long decode
     keeps thousands and maps and unmaps one a request): a cuMemSetAccess costs what setting each handle in
     its range does (~23-37 us a 2 MiB handle on the H200), so it is counted by the maps it covers, not by its
     bytes; and an unmap is logged with the handle it unmapped */
  pt_dev_map *maps;
  size_t nmaps, cap_maps;
  pt_u64map at;
  void (*on_change)(void *ctx);      /* after every change of reserved (timelines); may be NULL */
  void *ctx;
  pt_call_log *log;                  /* NULL: calls are counted, not logged */
  pt_call_times *times;              /* NULL: calls are not timed */
  pt_call_tlog *tlog;                /* with times: each call's time kept too, in order; NULL: not */
  /* a second set of books the calls are also counted (and, when timed, timed) into while set: the engine
     points them at a request class's (sim.h, request classes) for the requests of that class, and at the
     run's untimed set (no times) for the work no request does; NULL: none */
  pt_call_sizes *class_sizes;
  pt_call_times *class_times;
  /* calls after a large one (PT_DRV_AFTER_LARGE), counted (and timed) into after_* when set, and into class_after_*
     too while those are set (the engine's repeat class: a subset); never those of the untimed set (untimed 1:
     the calls no request makes); cost_seq counts every call at a size, large_seq is the last large one's (0:
     none yet) */
  pt_call_sizes *after_sizes, *class_after_sizes;
  pt_call_times *after_times, *class_after_times;
  uint64_t cost_seq, large_seq;
  int untimed;
  double call_us;                    /* the time of the call being counted, when timed */
  pt_err *err;                       /* where the books' own failures are described */
} pt_device;

void pt_dev_init(pt_device *d, const pt_dev_ops *ops, void *st, uint64_t capacity, pt_err *err);
/* What the books keep besides counters (the live maps), freed; the device below is the caller's. */
void pt_dev_done(pt_device *d);
/* 1 when bytes more would pass the cap. */
static inline int pt_dev_would_exceed(const pt_device *d, uint64_t bytes) {
  return d->capacity && (bytes > d->capacity || d->reserved > d->capacity - bytes);
}
static inline uint64_t pt_dev_reserved(const pt_device *d) { return d->reserved; }
static inline uint64_t pt_dev_capacity(const pt_device *d) { return d->capacity; }

int pt_dev_address_reserve(pt_device *d, uint64_t bytes, uint64_t align, uint64_t *va /* OUT */);
int pt_dev_address_free(pt_device *d, uint64_t va, uint64_t bytes);
int pt_dev_mem_create(pt_device *d, uint64_t bytes, uint64_t *handle /* OUT */);
int pt_dev_mem_release(pt_device *d, uint64_t handle, uint64_t bytes);
int pt_dev_mem_map(pt_device *d, uint64_t va, uint64_t bytes, uint64_t handle);
int pt_dev_mem_set_access(pt_device *d, uint64_t va, uint64_t bytes);
int pt_dev_mem_unmap(pt_device *d, uint64_t va, uint64_t bytes);
/* A segment that existed before the run: held, no call counted. */
int pt_dev_adopt(pt_device *d, uint64_t addr, uint64_t bytes);
/* VMM pages that existed before the run, mapped from va on: held and mapped, their handles in
   handles[ceil(bytes / page)], no call counted. */
int pt_dev_adopt_mapped(pt_device *d, uint64_t va, uint64_t bytes, uint64_t page, uint64_t *handles /* OUT */);

/* ---- inline: the calls a mechanism makes on most requests (direct: every one) ---- */

int pt_dev_log_grow(pt_device *d, size_t n);

static inline void pt_dev_reserved_add(pt_device *d, uint64_t bytes) {
  d->reserved += bytes;
  if (d->reserved > d->peak_reserved) d->peak_reserved = d->reserved;
  if (d->on_change) d->on_change(d->ctx);
}

static inline void pt_dev_reserved_sub(pt_device *d, uint64_t bytes) {
  d->reserved -= bytes < d->reserved ? bytes : d->reserved;
  if (d->on_change) d->on_change(d->ctx);
}

/* Room for n more log entries, made before the device is asked, so that a call made is always logged. */
static inline int pt_dev_log_room(pt_device *d, size_t n) {
  return !d->log || d->log->cap - d->log->n >= n ? 0 : pt_dev_log_grow(d, n);
}

static inline void pt_dev_log_call(pt_device *d, int c, uint64_t va, uint64_t bytes, uint64_t handle) {
  if (d->log) d->log->v[d->log->n++] = (pt_dev_call){va, bytes, handle, c};
}

/* The clock before a device call, when calls are timed (else 0, and no clock read). */
static inline double pt_dev_clock(const pt_device *d) { return d->times ? pt_clock_s() : 0; }

/* After the device answered rc to a call begun at t0: the call's time kept for its counting, or, for a
   failed call, added to failed_us.  Returns rc. */
static inline int pt_dev_took(pt_device *d, double t0, int rc) {
  if (d->times) {
    d->call_us = (pt_clock_s() - t0) * 1e6;
    if (rc < 0) d->times->failed_us += d->call_us;
    else d->times->total_us += d->call_us;
  }
  return rc;
}

/* The call being counted appended to d->tlog (its time, call_us), or counted lost. */
void pt_dev_tlog_add(pt_device *d, enum pt_drv_call c, uint64_t bytes);

/* A call of kind c, size class k, bytes counted into a second set of books (and its time into tm, when timed). */
static inline void pt_dev_books_add(const pt_device *d, pt_call_sizes *sz, pt_call_times *tm, enum pt_drv_call c, int k,
                                    uint64_t bytes) {
  sz->calls[c][k]++;
  sz->bytes[c][k] += bytes;
  if (d->times && tm) {
    tm->us[c][k] += d->call_us;
    tm->total_us += d->call_us;
  }
}

/* One call's worth of cost, at a size (pt_call_sizes), with its measured time when timed. */
static inline void pt_dev_cost_at(pt_device *d, enum pt_drv_call c, uint64_t bytes) {
  int k = 63 - __builtin_clzll(bytes | 1);
  d->sizes.calls[c][k]++;
  d->sizes.bytes[c][k] += bytes;
  if (d->times) d->times->us[c][k] += d->call_us;
  if (__builtin_expect(d->tlog != NULL, 0) && d->times) pt_dev_tlog_add(d, c, bytes);
  if (__builtin_expect(d->class_sizes != NULL, 0)) pt_dev_books_add(d, d->class_sizes, d->class_times, c, k, bytes);
  uint64_t seq = ++d->cost_seq;
  if (bytes >= PT_DRV_LARGE_CALL_BYTES) {
    d->large_seq = seq;
  } else if (d->after_sizes && d->large_seq && seq - d->large_seq <= PT_DRV_AFTER_LARGE && !d->untimed) {
    pt_dev_books_add(d, d->after_sizes, d->after_times, c, k, bytes);
    if (d->class_after_sizes) pt_dev_books_add(d, d->class_after_sizes, d->class_after_times, c, k, bytes);
  }
}

static inline void pt_dev_count_only(pt_device *d, enum pt_drv_call c, uint64_t va, uint64_t bytes, uint64_t handle) {
  d->calls[c]++;
  d->ncalls++;
  d->call_bytes[c] += bytes;
  pt_dev_log_call(d, (int)c, va, bytes, handle);
}

static inline void pt_dev_count(pt_device *d, enum pt_drv_call c, uint64_t va, uint64_t bytes, uint64_t handle) {
  pt_dev_count_only(d, c, va, bytes, handle);
  pt_dev_cost_at(d, c, bytes);
}

/* cudaMalloc: 0 with *addr, PT_EOOM past the cap (nothing asked of the device), or the device's error. */
static inline int pt_dev_malloc(pt_device *d, uint64_t bytes, uint64_t *addr) {
  if (pt_dev_would_exceed(d, bytes)) return PT_EOOM;
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->malloc(d->st, bytes, addr))) < 0) return rc;
  pt_dev_count(d, PT_DRV_malloc, *addr, bytes, 0);
  d->segments_allocated++;
  pt_dev_reserved_add(d, bytes);
  return 0;
}

static inline int pt_dev_free(pt_device *d, uint64_t addr, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->free(d->st, addr, bytes))) < 0) return rc;
  pt_dev_count(d, PT_DRV_free, addr, bytes, 0);
  pt_dev_reserved_sub(d, bytes);
  return 0;
}


#endif
