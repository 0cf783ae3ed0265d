/*
 * calibrate.h — the driver calls' costs, measured on device 0.
 *
 * For each call the cost model knows, times `reps` calls at each of a few
 * sizes and keeps the median, as (bytes, µs) points: what a GPU
 * description's `cost CALL BYTES:US ...` lines hold (gpu.h), and what
 * `pagetune calibrate` writes.  Patterns: cuMemAlloc reps blocks of a size,
 * then cuMemFree them; cuMemCreate a handle, reserve VA for it, map it, set
 * its access, then unmap and release it; cuMemAddressReserve and
 * cuMemAddressFree of ranges up to 1 TiB.
 */
#ifndef PT_CALIBRATE_H
#define PT_CALIBRATE_H

#include "cost.h"
#include "device.h"
#include "driver.h"
#include "error.h"

/* points[call] filled for every call but those the model has no use for; progress on stderr when noisy. */
int pt_calibrate(pt_driver *d, unsigned reps, int noisy, pt_cost_points points[PT_DRV_NCALLS] /* OUT */,
                 pt_err *err);

#endif
