/*
 * mreplay.h — the real-mechanism replay: a trace's requests through the
 * policy's mechanism on the real GPU (backend/cudadev.h), allocator work and
 * driver calls together, each request timed (pagetune replay --mechanism).
 *
 * The engine runs as for the model (engine/sim.h), on device 0 through the
 * books, so peak reserved and the driver calls come from the same
 * accounting, and the books time every driver call (device.h's
 * pt_call_times), so a request's time splits into the calls made in it and
 * the allocator's own work.  cuMemGetInfo is read before and after, untimed,
 * and the run must give back what it took.  A request the GPU cannot serve
 * ends the run with one error, after everything it took was given back.
 *
 * Options, each outside the timing:
 *   - touch: each block is filled with a pattern of its own after its
 *     allocation and three words of it (first, middle, last) are read back
 *     before its free: a block another overwrote (overlapping or lost
 *     mappings) shows as a mismatch;
 *   - poll: cuMemGetInfo after every allocation, the driver's own view of
 *     the peak (a pass of its own, since polling would disturb the timing);
 *   - log: the calls made, with the addresses the GPU returned (what the
 *     model is fed to check its driver-call counts: pt_mreplay_hints).
 * A trace that begins with segments alive has them made first (the real
 * device's adopt), untimed; except expandable segments alive at the start
 * under the expandable mechanism, whose reservation's extent no snapshot
 * records (refused in one line).
 */
#ifndef PT_MREPLAY_H
#define PT_MREPLAY_H

#include <stdint.h>

#include "driver.h"
#include "error.h"
#include "sim.h"

typedef struct pt_mreplay_opts {
  int touch, poll;
  pt_call_log *log;  /* NULL: not logged */
  pt_call_tlog *tlog; /* NULL: the calls' times not kept one by one */
} pt_mreplay_opts;

typedef struct pt_mreplay_result {
  uint64_t free_before, free_after, total;   /* cuMemGetInfo around the run, bytes */
  uint64_t touched, checked, mismatches;     /* with touch: blocks filled, blocks read back, bad words */
  uint64_t first_bad_addr, first_bad_bytes;  /* the first block that read back wrong */
  uint64_t driver_peak_used;                 /* with poll: the most of free_before the run used, bytes */
} pt_mreplay_result;

/* One run of t under cfg (its mechanism, parameters, cap) on device 0; r is the engine's result. */
int pt_mreplay_run(pt_driver *d, const pt_trace_data *t, const pt_sim_config *cfg, const pt_mreplay_opts *o,
                   pt_sim_result *r /* OUT */, pt_mreplay_result *out /* OUT */, pt_err *err);

/* The addresses a logged real run got, in order: cudaMalloc results and VA reservations (fresh arrays,
   the caller frees them), for pt_sim_config's given addresses. */
int pt_mreplay_hints(const pt_call_log *log, pt_addr_hint **mallocs /* OUT */, size_t *nmallocs /* OUT */,
                     pt_addr_hint **reserves /* OUT */, size_t *nreserves /* OUT */, pt_err *err);

#endif
