/*
 * sim.h — the simulator: replay a trace's requests through one mechanism on
 * the modelled device and report what happened (`pagetune sim`).
 *
 * The engine owns the run state (no globals): the loaded records, the
 * id -> handle map, the modelled device and its books, the counters and the
 * timeline.  Results leave
 * it as pt_sim_result, whose fields are listed once in PT_SIM_STATS_FIELDS
 * (struct, text, JSON keys — and later SQL columns — from one list).
 */
#ifndef PT_SIM_H
#define PT_SIM_H

#include <stdio.h>

#include "device.h"
#include "gpu.h"
#include "mech.h"
#include "modeldev.h"
#include "trace.h"

/*
 * Request classes (cost.h): a request or free is a repeat when its size (as the trace gives it) is one of the
 * sizes of the last PT_REPEAT_WINDOW free records before it.  Decided once, when the trace is loaded, from its
 * records alone: the same on the model and on a real device, whatever the mechanism and whatever a run
 * makes of the records, so a prediction counts what a measurement timed.  The window was chosen on the
 * traces in traces/ (bench/RESULTS.md, issue 11: the cost axis).  A run uses the classes only when a cost
 * is asked for (a GPU description, or a device given by the config).
 */
#define PT_REPEAT_RING 16   /* the distances counted (by_free_distance) */
#define PT_REPEAT_WINDOW 6 /* a repeat: within this many frees back */

/*
 * A trace read into memory: initial-state records first, in file order.
 * Allocation ids are renumbered densely (the k-th allocation gets id k, its
 * frees and accesses follow), so the replay indexes arrays, not hash maps.
 */
typedef struct pt_trace_data {
  pt_event *ev;
  size_t n;
  size_t nallocs;           /* ids are 0 .. nallocs-1 */
  pt_trace_info info;
  char *path;
  /* what the real allocator recorded, gathered once at load */
  pt_addr_hint *hints;      /* its cudaMalloc results (segment_alloc), in order */
  size_t nhints;
  uint64_t observed_segment_allocs, observed_peak_reserved_bytes;
  uint64_t observed_segment_releases; /* its segment_free and segment_unmap records */
  pt_frames frames;         /* what the records' stack ids name (none: stripped, or never recorded) */
  pt_pools pools;           /* what the records' pool numbers name (none: no private pool) */
  pt_order order;           /* the stream order between records (+event, +wait; none: not recorded), its events
                               numbered 1, 2, ... by first sight */
  uint64_t *repeat;         /* bit i: record i is a repeat (request classes, above) */
  int synced;               /* a record carries +sync: the trace says where the program synchronised */
  /* the allocation and free records by how many frees back their size was last freed: [d - 1] for d = 1 ..
     PT_REPEAT_RING, [PT_REPEAT_RING] for none as recent (what the window was chosen by) */
  uint64_t by_free_distance[PT_REPEAT_RING + 1];
} pt_trace_data;

int pt_trace_load(const char *path, const pt_trace_opts *opts, pt_err *err, pt_trace_data *out /* OUT */);
void pt_trace_data_free(pt_trace_data *t);
/* SHA-256 (hex) of the records, field by field: the same content from a
   snapshot or from its imported native trace hashes the same. */
void pt_trace_content_hash(const pt_trace_data *t, char out[65]);

typedef struct pt_sim_config {
  const pt_mech_ops *mech;
  pt_params params;
  pt_policy_hooks hooks;     /* zero: none */
  uint64_t capacity;         /* bytes; 0 = no cap */
  int invent_addresses;      /* ignore the recorded segment addresses */
  size_t timeline_points;    /* about this many samples; 0 = 1000 */
  const pt_gpu *gpu;         /* NULL: no page tables, TLBs or predicted times */
  int tlb;                   /* run the synthetic access stream through the TLBs */
  pt_call_log *log;          /* non-NULL: every driver call is appended to it (pagetune replay) */
  pt_call_tlog *call_tlog;   /* non-NULL, on a given device: each call's measured time appended, in order */
  /*
   * A device to run on instead of the model (a real GPU: backend/cudadev.h):
   * no recorded addresses, no page tables, and at the end every block is
   * freed and the cache emptied through the mechanism, so the device gets
   * its memory back.  With it, each request's time is measured (request_us)
   * and the optional observer sees each block after its allocation and
   * before its free, outside the timing (pagetune replay --mechanism --touch).
   */
  const pt_dev_ops *device_ops;
  void *device_st;
  int stop_at_oom;           /* a request the device cannot serve ends the run (PT_EOOM), as on a real GPU */
  /*
   * Addresses to follow instead of the trace's (given_addresses): cudaMalloc
   * results and VA reservations, in order, while their sizes agree — those a
   * real GPU returned in a replay, so that the model's best fit breaks ties
   * as the real run's did.
   */
  int given_addresses;
  const pt_addr_hint *malloc_hints, *reserve_hints;
  size_t nmalloc_hints, nreserve_hints;
  int (*on_alloc)(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id);
  int (*on_free)(void *ctx, uint64_t addr, uint64_t bytes, uint64_t id);
  void (*on_reserved)(void *ctx, uint64_t reserved); /* after every change of reserved bytes */
  void *observer_ctx;
} pt_sim_config;

/* X(type, name, help): U = uint64_t, D = double. */
#define PT_SIM_STATS_FIELDS(X)                                                                 \
  X(U, events, "records replayed")                                                             \
  X(U, allocs, "allocation requests")                                                          \
  X(U, frees, "frees")                                                                         \
  X(U, peak_reserved_bytes, "peak bytes held from the driver (initial segments included)")     \
  X(U, peak_allocated_bytes, "peak live requested bytes")                                      \
  X(D, fragmentation, "1 - peak_allocated / peak_reserved")                                    \
  X(U, segments_allocated, "cudaMalloc + cuMemCreate calls")                                   \
  X(U, bytes_mapped_total, "bytes mapped through the VMM API")                                 \
  X(U, ooms, "requests that failed for want of memory")                                        \
  X(U, alloc_retries, "requests that freed cached memory and retried")                         \
  X(U, collections, "garbage collections / pool trims")                                        \
  X(U, cache_hits, "requests served without a driver call")                                    \
  X(U, final_reserved_bytes, "bytes held at the end")                                          \
  X(U, observed_segment_allocs, "segment allocations the real allocator recorded")             \
  X(U, observed_peak_reserved_bytes, "peak reserved bytes the real allocator recorded")

typedef struct pt_sim_point {
  uint64_t event;
  int64_t time_us;
  uint64_t reserved, allocated;
} pt_sim_point;

#define PT_LIVE_BINS 16


/* PT_SIM_STATS_FIELDS(PT_SIM_STATS_MEMBER): the fields as struct members (here, and in what the farm sends). */
#define PT_SIM_STATS_TYPE_U uint64_t
#define PT_SIM_STATS_TYPE_D double
#define PT_SIM_STATS_MEMBER(t, f, h) PT_SIM_STATS_TYPE_##t f;

typedef struct pt_sim_result {
  PT_SIM_STATS_FIELDS(PT_SIM_STATS_MEMBER)
  uint64_t driver_calls[PT_DRV_NCALLS];
  uint64_t driver_bytes[PT_DRV_NCALLS];
  int addresses_followed;    /* the model stayed on the recorded segment addresses */
  /* memory given back, counted as a snapshot counts it: a cudaFree (segment_free) or an expandable range unmapped
     (segment_unmap, however many handles); not stored (the store keeps the driver calls) */
  uint64_t segment_releases, observed_segment_releases;
  pt_sim_point *timeline;
  size_t ntimeline;
  /* requests and frees by size class, with and without driver calls: what bookkeeping is priced by */
  pt_req_sizes req;
  /* on a device given by the config: each request's time in µs (allocations, then frees, in order) */
  float *alloc_us, *free_us;
  size_t nalloc_us, nfree_us;
  /* on a device given by the config, measured: each driver call's time as counted (device.h), and the
     allocator's own time (a request's time less the driver calls made in it) by the request's size class */
  pt_call_times *call_times;
  pt_call_sizes *call_sizes; /* the calls those times are of */
  double own_us[PT_SIZE_CLASSES], own_call_us[PT_SIZE_CLASSES]; /* requests without, with driver calls */
  /* the requests without driver calls again, by how many blocks were live when each was made: bin k holds
     2^k - 1 up to 2^(k+1) - 2 live blocks (the last bin everything above) */
  uint64_t own_live_n[PT_LIVE_BINS];
  double own_live_us[PT_LIVE_BINS];
  /* the class axis, when classified: the repeat class's requests and frees (a subset of req), the driver calls
     they made (repeat_driver_calls counts as the cost model does: a cuMemSetAccess once a handle it covers),
     and (on a given device) their measured share of own_us / own_call_us and of call_times */
  int classified;
  pt_req_sizes req_repeat;
  uint64_t repeat_driver_calls[PT_DRV_NCALLS];
  double own_repeat_us[PT_SIZE_CLASSES], own_call_repeat_us[PT_SIZE_CLASSES];
  pt_call_times *repeat_call_times;
  pt_call_sizes *repeat_call_sizes;
  /* the requests' calls after a large one (device.h, PT_DRV_AFTER_LARGE), by kind (with a GPU description or on a
     given device), and on a given device by size class with their measured times, all and the repeats' (subsets
     of call_sizes and repeat_call_sizes) */
  int after_counted; /* after_driver_calls was counted (a run here; a stored one keeps none) */
  uint64_t after_driver_calls[PT_DRV_NCALLS];
  pt_call_sizes *after_call_sizes, *repeat_after_call_sizes;
  pt_call_times *after_call_times, *repeat_after_call_times;
  uint64_t by_free_distance[PT_REPEAT_RING + 1]; /* the trace's (pt_trace_data), when classified */
  uint64_t hit_splits, free_merges; /* the mechanism's (pt_mech_counters: caching's only); in JSON when classified */
  double seconds;            /* wall time of the replay itself */
  /* with a GPU description */
  int has_gpu, has_tlb;
  pt_pagetable_stats page_table;
  const pt_mmu_desc *mmu;
  const char *gpu_note;      /* the description's note (points into the pt_gpu) */
  pt_tlb_stats tlb;
  /* with a GPU description: the requests' and frees' time (what a replay on the GPU times), the calls no
     request made (the initial state, the try of a request that failed in the real run, a capture's
     empty_cache: untimed there), and every call's time by kind, both kinds of call (what `pagetune replay`
     replays and times) */
  double predicted_alloc_us, predicted_untimed_us, predicted_translation_us;
  double predicted_call_us[PT_DRV_NCALLS];
  /* with a GPU description: the requests and frees made and their free sets' work (bset.h's counters, read
     around each; not around the set-up, a capture's empty_cache or the try of a request that failed in the
     real run), what a bookkeeping_work line prices (cost.h); in JSON as "work", not stored */
  pt_work_counts work;
} pt_sim_result;

int pt_sim_run(const pt_trace_data *t, const pt_sim_config *cfg, pt_err *err, pt_sim_result *out /* OUT */);
void pt_sim_result_free(pt_sim_result *r);

void pt_sim_print_text(FILE *f, const pt_sim_result *r);
/* The stats as JSON members (no braces), so callers can add their own. */
void pt_sim_print_json_members(FILE *f, const pt_sim_result *r, int with_timeline);
/* "key":{"malloc":N,...}: a figure for every kind of driver call (counts, bytes; one JSON member, no comma). */
void pt_sim_print_calls_json(FILE *f, const char *key, const uint64_t calls[PT_DRV_NCALLS]);

#endif
