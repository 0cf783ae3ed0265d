/*
 * tracestats.h — what a trace holds, in numbers (`pagetune trace stats`).
 *
 * The fields are listed once in PT_TRACE_STATS_FIELDS, which generates the
 * struct, the text printer and the JSON keys, so the three never drift.
 */
#ifndef PT_TRACESTATS_H
#define PT_TRACESTATS_H

#include <stdint.h>
#include <stdio.h>

#include "trace.h"

/* X(field, help) — field is also the JSON key; all are integer counts/bytes. */
#define PT_TRACE_STATS_FIELDS(X)                                                           \
  X(events, "records of every kind")                                                      \
  X(allocs, "allocation requests")                                                        \
  X(frees, "frees (free_completed)")                                                      \
  X(accesses, "access records")                                                           \
  X(streams, "distinct streams")                                                          \
  X(distinct_sizes, "distinct requested sizes")                                           \
  X(peak_live_bytes, "peak of live requested bytes (initial blocks included)")            \
  X(live_bytes_at_end, "requested bytes still live at the end")                           \
  X(bytes_allocated_total, "sum of requested bytes over all allocations")                 \
  X(initial_segments, "segments alive when capture began")                                \
  X(initial_reserved_bytes, "bytes of those segments")                                    \
  X(initial_allocs, "blocks allocated when capture began")                                \
  X(initial_live_bytes, "requested bytes of those blocks")                                \
  X(observed_segment_allocs, "segment allocations the real allocator recorded")           \
  X(observed_segment_frees, "segment frees the real allocator recorded")                  \
  X(observed_segment_maps, "expandable-segment maps the real allocator recorded")         \
  X(observed_segment_unmaps, "expandable-segment unmaps the real allocator recorded")     \
  X(observed_peak_reserved_bytes, "peak reserved bytes the real allocator went through")  \
  X(observed_ooms, "out-of-memory events recorded")                                       \
  X(duration_us, "time from first to last timed record")

/* Private memory pools (CUDA graphs): printed, text and JSON, only for a trace that has one, so that
   the figures of every trace without stay as they were. */
#define PT_TRACE_STATS_POOL_FIELDS(X)                                                      \
  X(private_pools, "private memory pools (CUDA graphs' segment_pool_id)")                 \
  X(private_pool_allocs, "allocation requests served from a private pool")                \
  X(private_pool_segment_allocs, "segment allocations the real allocator made for one")   \
  X(captures, "CUDA graph captures begun with an empty_cache that freed memory")

/* Synchronisations with the GPU (+sync): printed only for a trace that has one. */
#define PT_TRACE_STATS_SYNC_FIELDS(X) \
  X(syncs, "synchronisations with the GPU between records (+sync)")

/* The stream order between records (+event, +wait): printed only for a trace that has some. */
#define PT_TRACE_STATS_ORDER_FIELDS(X)                                                     \
  X(event_records, "events recorded on a stream between records (+event)")                \
  X(stream_waits, "streams made to wait for an event between records (+wait)")

/* Frees that waited for another stream's work (+deferred): printed only for a trace that has one. */
#define PT_TRACE_STATS_DEFERRED_FIELDS(X) \
  X(deferred_frees, "frees that waited for other streams' work (record_stream)")

/* Frees whose GPU time was measured (+gpu): printed only for a trace that has one. */
#define PT_TRACE_STATS_GPU_FIELDS(X)                                                       \
  X(gpu_timed_frees, "frees with the requests made before the GPU passed them (+gpu)")    \
  X(gpu_pending_frees, "of those, frees the GPU had not passed by the next request")      \
  X(gpu_lag_requests_max, "the most requests made before the GPU passed a free")

typedef struct pt_trace_stats {
#define PT_X(f, h) uint64_t f;
  PT_TRACE_STATS_FIELDS(PT_X)
  PT_TRACE_STATS_POOL_FIELDS(PT_X)
  PT_TRACE_STATS_DEFERRED_FIELDS(PT_X)
  PT_TRACE_STATS_SYNC_FIELDS(PT_X)
  PT_TRACE_STATS_ORDER_FIELDS(PT_X)
  PT_TRACE_STATS_GPU_FIELDS(PT_X)
#undef PT_X
} pt_trace_stats;

/* Read every record of t and count.  0 or a negative PT_E* (err filled). */
int pt_trace_stats_compute(pt_trace *t, pt_trace_stats *out /* OUT */, pt_err *err);

void pt_trace_stats_print_text(FILE *f, const pt_trace_info *info, const pt_trace_stats *s);
void pt_trace_stats_print_json(FILE *f, const char *path, const pt_trace_info *info,
                               const pt_trace_stats *s);

#endif
