/* tracestats.c — counting a trace's records (see tracestats.h). */
#include "tracestats.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "u64map.h"

int pt_trace_stats_compute(pt_trace *t, pt_trace_stats *s, pt_err *err) {
  memset(s, 0, sizeof *s);
  pt_u64map sizes = {0}, streams = {0};
  uint64_t live = 0, reserved = 0;
  int64_t tmin = INT64_MAX, tmax = INT64_MIN;
  pt_event ev;
  int rc;
  while ((rc = pt_trace_next(t, &ev, err)) > 0) {
    const pt_order *o = pt_trace_order(t); /* the stream order before this record */
    for (size_t i = 0; i < o->n; i++) {
      s->stream_waits += o->op[i].wait;
      s->event_records += !o->op[i].wait;
    }
    s->events++;
    s->captures += (ev.flags & PT_EVF_CAPTURE) != 0;
    s->deferred_frees += ev.kind == PT_EV_FREE && (ev.flags & PT_EVF_DEFERRED);
    s->syncs += (ev.flags & PT_EVF_SYNC) != 0;
    if (ev.kind == PT_EV_FREE && (ev.flags & PT_EVF_GPU_LAG)) {
      s->gpu_timed_frees++;
      s->gpu_pending_frees += ev.offset > 0;
      if (ev.offset > s->gpu_lag_requests_max) s->gpu_lag_requests_max = ev.offset;
    }
    if (ev.pool) {
      s->private_pool_allocs += ev.kind == PT_EV_ALLOC;
      s->private_pool_segment_allocs += ev.kind == PT_EV_SEG_ALLOC;
    }
    switch (ev.kind) {
    case PT_EV_INIT_ALLOC:
      s->initial_allocs++;
      s->initial_live_bytes += ev.bytes;
      live += ev.bytes;
      break;
    case PT_EV_ALLOC:
      s->allocs++;
      s->bytes_allocated_total += ev.bytes;
      live += ev.bytes;
      if (pt_u64map_put(&sizes, ev.bytes, 1) < 0) goto nomem;
      break;
    case PT_EV_FREE:
      s->frees++;
      live -= ev.bytes;
      break;
    case PT_EV_ACCESS: s->accesses++; break;
    case PT_EV_INIT_SEGMENT:
      s->initial_segments++;
      s->initial_reserved_bytes += ev.bytes;
      break;
    case PT_EV_SEG_ALLOC: s->observed_segment_allocs++; break;
    case PT_EV_SEG_MAP: s->observed_segment_maps++; break;
    case PT_EV_SEG_FREE: s->observed_segment_frees++; break;
    case PT_EV_SEG_UNMAP: s->observed_segment_unmaps++; break;
    case PT_EV_OOM: s->observed_ooms++; break;
    }
    pt_trace_track_reserved(&ev, &reserved);
    if (live > s->peak_live_bytes) s->peak_live_bytes = live;
    if (reserved > s->observed_peak_reserved_bytes) s->observed_peak_reserved_bytes = reserved;
    if (ev.kind != PT_EV_INIT_SEGMENT && ev.kind != PT_EV_INIT_ALLOC &&
        pt_u64map_put(&streams, ev.stream, 1) < 0)
      goto nomem;
    if (ev.kind != PT_EV_INIT_SEGMENT && ev.kind != PT_EV_INIT_ALLOC) {
      if (ev.time_us < tmin) tmin = ev.time_us;
      if (ev.time_us > tmax) tmax = ev.time_us;
    }
  }
  s->private_pools = pt_trace_pools(t)->n;
  s->distinct_sizes = sizes.len;
  s->streams = streams.len;
  s->live_bytes_at_end = live;
  s->duration_us = tmax > tmin ? (uint64_t)tmax - (uint64_t)tmin : 0;
  pt_u64map_free(&sizes);
  pt_u64map_free(&streams);
  return rc;
nomem:
  pt_u64map_free(&sizes);
  pt_u64map_free(&streams);
  return pt_err_set(err, PT_ENOMEM, "out of memory");
}

void pt_trace_stats_print_text(FILE *f, const pt_trace_info *info, const pt_trace_stats *s) {
  fprintf(f, "source:   %s\n", info->source[0] ? info->source : "-");
  if (info->device >= 0) fprintf(f, "device:   %d\n", info->device);
  if (info->settings[0]) fprintf(f, "settings: %s\n", info->settings);
#define PT_X(fld, h) fprintf(f, "%-30s %15" PRIu64 "  %s\n", #fld, s->fld, h);
  PT_TRACE_STATS_FIELDS(PT_X)
  if (s->private_pools || s->captures) { PT_TRACE_STATS_POOL_FIELDS(PT_X) } /* braces: the list is several statements */
  if (s->deferred_frees) { PT_TRACE_STATS_DEFERRED_FIELDS(PT_X) }
  if (s->syncs) { PT_TRACE_STATS_SYNC_FIELDS(PT_X) }
  if (s->event_records || s->stream_waits) { PT_TRACE_STATS_ORDER_FIELDS(PT_X) }
  if (s->gpu_timed_frees) { PT_TRACE_STATS_GPU_FIELDS(PT_X) }
#undef PT_X
}

void pt_trace_stats_print_json(FILE *f, const char *path, const pt_trace_info *info,
                               const pt_trace_stats *s) {
  fputs("{\"trace\":", f);
  pt_json_str(f, path);
  fputs(",\"source\":", f);
  pt_json_str(f, info->source);
  fprintf(f, ",\"device\":%d,\"settings\":", info->device);
  pt_json_str(f, info->settings);
#define PT_X(fld, h) fprintf(f, ",\"" #fld "\":%" PRIu64, s->fld);
  PT_TRACE_STATS_FIELDS(PT_X)
  if (s->private_pools || s->captures) { PT_TRACE_STATS_POOL_FIELDS(PT_X) } /* braces: the list is several statements */
  if (s->deferred_frees) { PT_TRACE_STATS_DEFERRED_FIELDS(PT_X) }
  if (s->syncs) { PT_TRACE_STATS_SYNC_FIELDS(PT_X) }
  if (s->event_records || s->stream_waits) { PT_TRACE_STATS_ORDER_FIELDS(PT_X) }
  if (s->gpu_timed_frees) { PT_TRACE_STATS_GPU_FIELDS(PT_X) }
#undef PT_X
  fputs("}\n", f);
}
