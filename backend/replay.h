/*
 * replay.h — a run's driver calls made again on a real GPU, and timed.
 *
 * The model logs every driver call a policy's mechanism makes (pt_call_log);
 * pt_replay_log makes the same calls through the CUDA driver on device 0 —
 * cuMemAlloc/cuMemFree for cudaMalloc/cudaFree, cuMemCreate, cuMemAddressReserve,
 * cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree for
 * the VMM mechanisms — in the same order, with the same sizes, and times
 * each call.  Segments that existed before the trace are made first,
 * untimed; whatever is still held at the end is given back, untimed.  It
 * measures the driver side of an allocator (what docs/design.md's first table says
 * dominates), not the allocator's own bookkeeping.
 */
#ifndef PT_REPLAY_H
#define PT_REPLAY_H

#include <stdint.h>

#include "device.h"
#include "driver.h"
#include "error.h"

typedef struct pt_replay_result {
  uint64_t calls[PT_DRV_NCALLS];  /* calls made, by kind */
  double us[PT_DRV_NCALLS];       /* their time, µs, summed */
  double total_us;
} pt_replay_result;

/* 0, PT_ENODEV (no GPU), PT_EFORMAT (a log that cannot be repeated) or PT_EIO (a call failed). */
int pt_replay_log(pt_driver *d, const pt_call_log *log, pt_replay_result *out /* OUT */, pt_err *err);

#endif
