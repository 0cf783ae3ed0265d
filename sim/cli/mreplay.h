/*
 * mreplay.h — the real-mechanism replay: a trace's requests through the
 * policy's mechanism on the real GPU (backend/cudadev.h), allocator work and
 * driver calls together, each request timed (pagetune replay --mechanism).
 *
 * The engine runs as for the model (engine/sim.h), on device 0 through the
 * books, so peak reserved and the driver calls come from the same
 * accounting; cuMemGetInfo is read before and after, untimed, and the run
 * must give back what it took.  With touch, each block is filled with a
 * pattern of its own after its allocation and three words of it (first,
 * middle, last) are read back before its free, outside the timing: a block
 * another overwrote (overlapping or lost mappings) shows as a mismatch.
 * Not yet: traces that begin with segments alive (the real device has no
 * memory from before the run: refused at the first initial segment).
 */
#ifndef PT_MREPLAY_H
#define PT_MREPLAY_H

#include <stdint.h>

#include "driver.h"
#include "error.h"
#include "sim.h"

typedef struct pt_mreplay_result {
  uint64_t free_before, free_after, total;   /* cuMemGetInfo around the run, bytes */
  uint64_t touched, checked, mismatches;     /* with touch: blocks filled, blocks read back, bad words */
  uint64_t first_bad_addr, first_bad_bytes;  /* the first block that read back wrong */
} pt_mreplay_result;

/* One run of t under cfg (its mechanism, parameters, cap) on device 0; r is the engine's result. */
int pt_mreplay_run(pt_driver *d, const pt_trace_data *t, const pt_sim_config *cfg, int touch, pt_sim_result *r /* OUT */,
                   pt_mreplay_result *out /* OUT */, pt_err *err);

#endif
