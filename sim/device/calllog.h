/*
 * calllog.h — a run's driver calls (pt_call_log, device.h), resolved into
 * what a real GPU needs to repeat them.
 *
 * The walk gives every allocation, VA reservation and physical handle an id
 * (the index of the call that made it) and calls one callback per call with
 * those ids, so that a replay (backend/replay.c) keeps arrays of real
 * pointers, handles and ranges indexed by id.  Handles come from the log
 * itself (the device's own ids); allocations and reservations are found by
 * address.  Following the real run's addresses, the model may hold two
 * allocations at one address (the real allocator had freed and reused it); a
 * free takes the newest live one of its size there.  A log that cannot be
 * repeated this way stops the walk with the call's index and the reason: a
 * free of an address no allocation holds, a map outside every reservation
 * or over a mapped address, a map or release of a handle never created or
 * already released, an unmap of an address nothing is mapped at, an
 * address_free with pages still mapped, a release of a handle still mapped,
 * or a VMM call on memory from before the trace (a replay makes that with
 * cuMemAlloc only).  A map of a handle mapped already maps the same memory
 * at a second address (stitching).  The walk is pure bookkeeping: it knows
 * no CUDA.
 */
#ifndef PT_CALLLOG_H
#define PT_CALLLOG_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"

typedef struct pt_call_log_ops {
  /* each returns 0 or a negative PT_E* code, which stops the walk; NULL: nothing to do */
  int (*adopt)(void *ctx, size_t id, uint64_t bytes);     /* a segment from before the trace */
  int (*malloc)(void *ctx, size_t id, uint64_t bytes);
  int (*free)(void *ctx, size_t id);
  int (*reserve)(void *ctx, size_t rid, uint64_t bytes, uint64_t align);
  int (*address_free)(void *ctx, size_t rid);
  int (*create)(void *ctx, size_t hid, uint64_t bytes);
  int (*map)(void *ctx, size_t hid, size_t rid, uint64_t offset, uint64_t bytes);
  int (*set_access)(void *ctx, size_t rid, uint64_t offset, uint64_t bytes);
  int (*unmap)(void *ctx, size_t hid, size_t rid, uint64_t offset, uint64_t bytes);
  int (*release)(void *ctx, size_t hid);
  void *ctx;
} pt_call_log_ops;

/* Walk log; 0, or the first error (with "driver call N: reason" in err, or the callback's). */
int pt_call_log_walk(const pt_call_log *log, const pt_call_log_ops *ops, pt_err *err);

#endif
