/*
 * calibrate.h — what allocation costs on device 0, measured: the driver
 * calls by size, and the allocators' own work per request.
 *
 * Driver calls: for each call the cost model knows, times `reps` calls at
 * each of a few sizes and keeps the median, as (bytes, µs) points: what a
 * GPU description's `cost CALL BYTES:US ...` lines hold (gpu.h).  Patterns:
 * cuMemAlloc reps blocks of a size, then cuMemFree them; cuMemCreate a
 * handle, reserve VA for it, map it, set its access, then unmap and release
 * it; cuMemAddressReserve and cuMemAddressFree of ranges up to 1 TiB.
 *
 * The allocators' own work: one cached allocate + free pair at each of a
 * few request sizes, timed back to back in batches after warm-up pairs.
 * pagetune's mechanisms (mech.h) run on a device through the books
 * (device.h), so a timed batch is checked to make no driver call; their
 * pairs become `bookkeeping_us MECH SIZE:US ...` lines, half a pair a
 * request or a free (direct's pair is one cudaMalloc and one cudaFree, which
 * the cost lines charge already: its own work is written as 0 and its pair
 * time in a comment), and `bookkeeping_loop MECH SIZE:US:OPS:CHUNKS:VISITS
 * ...` lines, the same with the free-set work a request or free did in them
 * (bset.h's counts), and those of the same pairs among many free blocks
 * (the crowded loop, pt_calibrate_mechs): the points `gpu fit --work` adds
 * to a mechanism's runs, loops every calibration measures alike.
 * PyTorch's allocators are timed through torch in another process
 * (torchcal.h) and written as `torch_pair_us BACKEND SIZE:US ...` lines,
 * which the model does not use: they are there to compare pagetune's
 * mechanisms with PyTorch's (and for `pagetune confirm`).
 * The writers below are the one place those lines are formatted.
 */
#ifndef PT_CALIBRATE_H
#define PT_CALIBRATE_H

#include <stdint.h>
#include <stdio.h>

#include "alloc.h"
#include "cost.h"
#include "device.h"
#include "driver.h"
#include "error.h"

/* points[call] filled for every call but those the model has no use for; progress on stderr when noisy. */
int pt_calibrate(pt_driver *d, unsigned reps, int noisy, pt_cost_points points[PT_DRV_NCALLS] /* OUT */,
                 pt_err *err);

/* ---- a cached allocate + free pair, timed -------------------------------- */

#define PT_CAL_MAX_SIZES 16
#define PT_CAL_NMECHS 5     /* direct, caching, expandable, async_pool, stitch */
#define PT_CAL_NTORCH 3     /* PyTorch's native, expandable and cudaMallocAsync backends */

#define PT_CAL_MAX_CROWD 64

/* What is timed, at each size. */
typedef struct pt_cal_plan {
  size_t nsizes;
  uint64_t sizes[PT_CAL_MAX_SIZES];  /* request bytes, distinct */
  unsigned batches;                  /* batches a size, 1..99 */
  unsigned pairs;                    /* pairs a batch at most; fewer where a pair is slow (direct's large ones) */
  unsigned crowd;                    /* the crowded loop: free blocks around its pairs, 2..PT_CAL_MAX_CROWD (0: none) */
  uint64_t crowd_upto;               /* ... at the sizes up to this many bytes (it holds about 2 * crowd of a size) */
} pt_cal_plan;

/* 512 B, 64 KiB, 1 MiB, 8 MiB, 64 MiB, 512 MiB; 5 batches of up to 2000 pairs; the crowded loop among 32 free blocks
   at the sizes up to 8 MiB. */
extern const pt_cal_plan pt_cal_default_plan;

/* One size's pairs. */
typedef struct pt_cal_point {
  uint64_t bytes;
  double pair_us;              /* one pair: the median of the batches' means */
  double min_us, max_us;       /* the least and the most of the batches' means */
  unsigned pairs, batches;     /* pairs a batch, batches */
  uint64_t driver_calls;       /* made during the timed batches (the books count them; torch: not known, 0) */
  double driver_us;            /* of a pair, in those calls (the books time them; torch: 0) */
  double ops, chunks, visits;  /* a request's or a free's free-set work in the timed pairs (bset.h's counts over the
                                  pairs' requests and frees; torch: 0) */
  unsigned crowd;              /* free blocks around the pairs: 0 in the cached loop, plan->crowd in the crowded one */
} pt_cal_point;

/* One allocator's pairs, by size (and crowd). */
typedef struct pt_cal_series {
  char name[32];               /* a mechanism ("caching") or a PyTorch backend ("native") */
  char from[16];               /* how it was timed: "mechanism", "cpp_extension" or "python" */
  size_t n;
  pt_cal_point at[PT_CAL_MAX_SIZES];
} pt_cal_series;

/*
 * Each mechanism with its default parameters on a device that be opens
 * afresh for it (ordinal 0): for each size, a first pair and 5 ms of warm-up pairs
 * (which may call the driver), then the timed batches.  One 512 B block
 * stays allocated meanwhile, as a program always holds some memory: without
 * it async_pool, at its default release threshold of 0, trims its pool at
 * every free that empties it.  Then, with plan->crowd, the crowded loop at
 * each size up to plan->crowd_upto, after giving the cache back: crowd
 * blocks of distinct sizes near the size's (the size's own among them), each
 * followed by a block of the size that stays allocated so that no two free
 * blocks merge, the first ones freed, then the same pairs: each search of
 * the free set now looks among them (a full chunk of keys where the cached
 * loop looks at one or two), the work a long trace's requests do.  Its
 * points go beside the cached ones, with their crowd.  Everything is given
 * back after (empty_cache).  out[i] follows pt_mech_names()' order.
 */
int pt_calibrate_mechs(const pt_alloc_backend *be, const pt_cal_plan *plan, int noisy,
                       pt_cal_series out[PT_CAL_NMECHS] /* OUT */, pt_err *err);
/* The real GPU as pt_calibrate_mechs's backend: the driver's device 0 (cudadev.h); d outlives it. */
pt_alloc_backend pt_calibrate_gpu_backend(pt_driver *d);

/* The µs a request (or a free) a GPU description gets for point k: half the pair; 0 for direct. */
double pt_calibrate_bookkeeping_us(const pt_cal_series *s, size_t k);

/* What was learnt about PyTorch's allocators (torchcal.h fills it). */
typedef struct pt_cal_torch {
  int measured;                 /* 1: backends[0..n) hold the pairs */
  char skipped[PT_ERRMSG_MAX];  /* when not measured: why ("--no-torch", "torch is not importable with ...") */
  char python[256];             /* the interpreter */
  char version[64];             /* torch.__version__ */
  char device[128];             /* the GPU torch saw */
  char build_dir[1024];         /* where the C++ extension was built */
  char cpp_error[PT_ERRMSG_MAX];/* why the C++ extension was not used ("" when it was) */
  size_t n;
  pt_cal_series backends[PT_CAL_NTORCH];
} pt_cal_torch;

/* ---- the writers: the one place these lines and keys are formatted -------- */

/*
 * `bookkeeping_us MECH SIZE:US ...` lines of the cached loop's points
 * (sizes ascending), each after a comment with its pairs' medians and
 * spread, and a `bookkeeping_loop` line of every point with its work, the
 * cached loop's, then the crowded loop's (after a comment of their own);
 * direct as `bookkeeping_us direct 0`.  A mechanism whose timed batches
 * called the driver says so in a WARNING comment.  Series without points
 * are left out.
 */
void pt_calibrate_write_bookkeeping(FILE *out, const pt_cal_plan *plan, const pt_cal_series *s, size_t n);
/* `torch_pair_us BACKEND SIZE:US ...` lines with a comment saying how they were measured, or a comment saying why
   they were not. */
void pt_calibrate_write_torch(FILE *out, const pt_cal_torch *t);
/* The same as JSON members (a leading comma, then "mechanisms":{...} / "torch":{...}). */
void pt_calibrate_json_mechs(FILE *out, const pt_cal_plan *plan, const pt_cal_series *s, size_t n);
void pt_calibrate_json_torch(FILE *out, const pt_cal_torch *t);

#endif
