/*
 * devlog.h — a run's driver calls (pt_dev_log, device.h), resolved into
 * what a real GPU needs to repeat them.
 *
 * The model names memory by address and size only: a cudaFree names the
 * address its cudaMalloc returned, a cuMemMap names a VA and a size but not
 * which cuMemCreate handle, a cuMemRelease only a size.  The walk gives
 * every allocation, VA reservation and physical handle an id (the index of
 * the call that made it) and calls one callback per call with those ids, so
 * that a replay (backend/replay.c) keeps arrays of real pointers, handles
 * and ranges indexed by id.  A map takes an unmapped handle of its size (the
 * one created or unmapped last); an unmap gives it back; a release destroys
 * an unmapped one.  Following the real run's addresses, the model may hold
 * two allocations at one address (the real allocator had freed and reused
 * it); a free takes the newest live one of its size there.  A log that
 * cannot be repeated this way (a free of an address no allocation holds, a
 * map outside every reservation or at a mapped address, an address_free
 * with pages still mapped, or a VMM call on a segment from before the
 * trace, which a replay makes with cuMemAlloc only) stops the walk with the
 * call's index and the reason.  A map with src (stitch's second mapping of
 * a page) takes the handle mapped at src; a handle is unmapped, free to map
 * or release again, when its last map goes.
 * The walk is pure bookkeeping: it knows no CUDA.
 */
#ifndef PT_DEVLOG_H
#define PT_DEVLOG_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"

typedef struct pt_devlog_ops {
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
} pt_devlog_ops;

/* Walk log; 0, or the first error (with "driver call N: reason" in err, or the callback's). */
int pt_devlog_walk(const pt_dev_log *log, const pt_devlog_ops *ops, pt_err *err);

#endif
