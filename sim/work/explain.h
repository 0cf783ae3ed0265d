/*
 * explain.h — why memory is wasted (`pagetune explain`): at the peak of
 * reserved memory, which segments hold free space, how much, and which live
 * blocks pin them, with the stack frames the snapshot recorded for those
 * blocks.
 *
 * The trace is run twice through the policy's mechanism on a modelled
 * device seen through a thin wrapper that keeps the live segments (what
 * cudaMalloc returned; VA reservations with the bytes mapped in them): the
 * first run finds the first moment reserved bytes reach their peak, the
 * second stops there (after the request that reached it) and takes the
 * segments and the live blocks.  A segment's free bytes are its bytes less
 * the requested bytes of the live blocks inside it (rounding slack
 * included: what the caller did not ask for).  Segments are listed largest
 * free space first.
 *
 * pt_explain_summary is the small part the report's first screen shows.
 */
#ifndef PT_EXPLAIN_H
#define PT_EXPLAIN_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "sim.h"

typedef struct pt_explain_summary {
  uint64_t peak_reserved_bytes;
  uint64_t live_bytes;          /* requested bytes of the blocks live at the peak */
  uint64_t free_bytes;          /* reserved at the peak less live_bytes */
  uint64_t pinned_free_bytes;   /* free bytes in segments that hold a live block */
  uint64_t cached_free_bytes;   /* free bytes in segments that hold none (empty_cache would give them back) */
  uint64_t pool_free_bytes;     /* ... in empty segments of CUDA graphs' private pools (empty_cache keeps them) */
  uint64_t segments, pinned_segments, cached_segments, pool_segments;
  uint64_t record;              /* the request after which the peak holds: its record number in the trace, from 1 */
  int64_t time_us;              /* that request's time */
  /* the largest waste a live block causes: its segment, and that segment's largest live block */
  uint64_t top_segment_addr, top_segment_bytes, top_free_bytes;
  uint64_t top_block_addr, top_block_bytes;
  uint32_t top_block_stack;     /* in the trace's frames; 0: none recorded */
  uint64_t ooms;                /* requests the run failed for want of memory (under a cap): in no block */
} pt_explain_summary;

typedef struct pt_explain_block {
  uint64_t addr, bytes;         /* bytes: requested */
  uint64_t record;              /* its allocation's record number in the trace, from 1 */
  uint32_t stack;               /* in the trace's frames; 0: none recorded */
} pt_explain_block;

typedef struct pt_explain_segment {
  uint64_t addr, bytes;         /* bytes: the segment's (VMM: mapped) */
  uint64_t live_bytes, free_bytes;
  int vmm;                      /* a VA reservation with mapped memory, not a cudaMalloc */
  unsigned pool;                /* the private pool (the trace's number) its recorded segment was in; 0: default */
  size_t first, nblocks;        /* its live blocks: blocks[first ..], largest first */
} pt_explain_segment;

typedef struct pt_explain {
  pt_explain_summary sum;
  pt_explain_segment *seg;      /* largest free space first */
  size_t nseg;
  pt_explain_block *blocks;
  size_t nblocks;
} pt_explain;

/* cfg as for pt_sim_run, on the model (its device_ops and observers must be unset). */
int pt_explain_run(const pt_trace_data *t, const pt_sim_config *cfg, pt_err *err, pt_explain *out /* OUT */);
void pt_explain_free(pt_explain *x);

/* One line: where the waste is and what pins it ("42.0 MiB reserved at the peak: ..."). */
void pt_explain_summary_text(const pt_explain_summary *s, const pt_frames *frames, char *buf, size_t n);

/* The whole answer: at most max_segments segments with free space, max_frames frames a block. */
void pt_explain_print_text(FILE *f, const pt_explain *x, const pt_frames *frames, size_t max_segments,
                           size_t max_frames);
/* The members of one JSON object (no braces), every segment with free space, max_frames frames a block. */
void pt_explain_print_json_members(FILE *f, const pt_explain *x, const pt_frames *frames, size_t max_frames);

#endif
