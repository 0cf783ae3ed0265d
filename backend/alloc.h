/*
 * alloc.h — an allocator for a running program: one mechanism per device,
 * driven by requests as they come (what pagetune's allocator library for
 * PyTorch runs, and what a test runs on a modelled or failing device).
 *
 * The engine (engine/sim.h) replays a trace; this serves live requests: the
 * same mechanisms (mech.h) over a device (device.h) per ordinal, opened on
 * first use through a backend the caller gives (the real driver in the
 * library, the model or a test double in tests).  Each device has its own
 * lock, books, cap, mechanism state and statistics: memory of one device is
 * never handed to another, and requests on different devices do not wait
 * for each other.  A request's address maps back to the mechanism's handle
 * at free.  Knows no CUDA.
 */
#ifndef PT_ALLOC_H
#define PT_ALLOC_H

#include <stdint.h>

#include "device.h"
#include "error.h"
#include "mech.h"

#define PT_ALLOC_MAX_DEVICES 64

/* What a device ordinal runs on; close is given back what open made. */
typedef struct pt_alloc_backend {
  int (*open)(void *ctx, int device, pt_err *err, const pt_dev_ops **ops /* OUT */, void **st /* OUT */);
  void (*close)(void *ctx, void *st);
  /* a user freed memory on st (the GPU may still use it); may be NULL */
  void (*note_free)(void *ctx, void *st);
  void *ctx;
} pt_alloc_backend;

/* X(name, help): the per-device statistics besides the driver calls; the JSON keys. */
#define PT_ALLOC_STATS_FIELDS(X)                                           \
  X(reserved_bytes, "bytes held from the driver now")                      \
  X(peak_reserved_bytes, "most bytes held from the driver since the reset")\
  X(allocated_bytes, "bytes of live requests now")                         \
  X(peak_allocated_bytes, "most bytes of live requests since the reset")   \
  X(allocs, "requests served")                                             \
  X(frees, "frees")                                                        \
  X(ooms, "requests that failed for want of memory")                       \
  X(cache_hits, "requests served without a driver call")                   \
  X(alloc_retries, "requests that freed cached memory and retried")        \
  X(collections, "garbage collections / pool trims")

typedef struct pt_alloc_stats {
#define PT_X(f, h) uint64_t f;
  PT_ALLOC_STATS_FIELDS(PT_X)
#undef PT_X
  uint64_t driver_calls[PT_DRV_NCALLS];
  uint64_t capacity;  /* the cap, 0 = none */
} pt_alloc_stats;

/*
 * Told of every request served, every free and every request refused for want
 * of memory, per device (what the trace recorder, record.h, writes down).
 * The calls come under the device's lock, in the order the device serves
 * them: an address freed and handed out again is told free first, and times
 * an observer takes are in that order.  An observer must be quick and must
 * not call back into the allocator; each function may be NULL.  Requests of
 * 0 bytes, refused frees and what pt_alloc_destroy gives back are not told.
 */
typedef struct pt_alloc_observer {
  void (*on_alloc)(void *ctx, int device, uint64_t bytes, uint64_t stream, uint64_t addr);
  void (*on_free)(void *ctx, int device, uint64_t addr);
  void (*on_oom)(void *ctx, int device, uint64_t bytes, uint64_t stream);
  void *ctx;
} pt_alloc_observer;

typedef struct pt_alloc pt_alloc;

/*
 * An allocator running m with params p (checked here), capacity bytes per device (0: no cap), with
 * the policy's hooks (copied; NULL: none), whose ctx must outlive the allocator: in the library,
 * the tables a policy's hooks became (sizetable.h, pt_sizetab_hooks), never Lua.
 */
int pt_alloc_create(const pt_mech_ops *m, const pt_params *p, uint64_t capacity, const pt_policy_hooks *hooks,
                    const pt_alloc_backend *be, pt_err *err, pt_alloc **out /* OUT */);
/* o (copied; NULL: none) is told from the next request on; PT_EUSAGE once a device has been opened. */
int pt_alloc_set_observer(pt_alloc *a, const pt_alloc_observer *o);
/* Every device's memory given back (cached and live) and the devices closed. */
void pt_alloc_destroy(pt_alloc *a);

/* bytes on device for stream: 0 with *addr (bytes 0: *addr 0), PT_EOOM, or another error; err says why. */
int pt_alloc_malloc(pt_alloc *a, int device, uint64_t bytes, uint64_t stream, uint64_t *addr /* OUT */, pt_err *err);
/* addr from pt_alloc_malloc on device (0: nothing); an address it never gave is PT_EUSAGE. */
int pt_alloc_free(pt_alloc *a, int device, uint64_t addr, pt_err *err);
/* Cached memory back to the driver, as torch.cuda.empty_cache(); a device never used: nothing. */
int pt_alloc_empty_cache(pt_alloc *a, int device, pt_err *err);
/* device's statistics (zeros for a device never used); PT_EUSAGE for an ordinal out of range. */
int pt_alloc_get_stats(pt_alloc *a, int device, pt_alloc_stats *out /* OUT */);
/* Peaks start again from the current values. */
int pt_alloc_reset_peaks(pt_alloc *a, int device);

#endif
