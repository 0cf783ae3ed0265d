/*
 * cost.h — predicted time: driver calls and translation.
 *
 * Each driver call's time is a function of its size through calibration
 * points, measured (bytes, µs) pairs: a straight line between neighbouring
 * points, the first point's time below the first, the last segment carried
 * on above the last but never below the last point's time (a single point:
 * a constant).  The points live in the
 * GPU description; `pagetune calibrate` measures them on a GPU (the H200's
 * shipped ones were measured so).  Points, not one line a call, because the
 * time has steps no line follows: cuMemAlloc takes 2.5 µs below 2 MiB, where
 * the driver sub-allocates, and 48 µs at 2 MiB (bench/RESULTS.md).  Since the
 * time is not linear in size, the device counts calls by size (pt_call_sizes:
 * powers of two, where calibration points sit), and a total is the sum over
 * sizes.
 */
#ifndef PT_COST_H
#define PT_COST_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"

#define PT_COST_MAX_POINTS 64 /* a point a size class, at most */

typedef struct pt_cost_points {
  size_t n;
  double bytes[PT_COST_MAX_POINTS], us[PT_COST_MAX_POINTS];
} pt_cost_points;

typedef struct pt_cost_line {
  size_t n;                /* 0: no points, costs nothing */
  double bytes[PT_COST_MAX_POINTS], us[PT_COST_MAX_POINTS]; /* by size, sizes distinct */
} pt_cost_line;

/*
 * The allocator's own work (everything but driver calls) is a line too, by
 * request size: µs per request or free, measured per mechanism by `pagetune
 * calibrate` (a cached allocate + free pair) or fitted from real-mechanism
 * replays (`pagetune gpu fit`); a constant is a line of one point.
 */
/*
 * Request classes: the engine puts each request and free in one (sim.h): 0 "other", 1 "repeat" (its size is
 * one of the last few sizes freed: a best fit finds the block whole, the driver's sub-allocator has it
 * back).  Every line has a repeat twin, n = 0 where the description gives none: then the plain line prices
 * the repeats too, which is what a description without class lines meant.
 */
enum { PT_REQ_OTHER, PT_REQ_REPEAT, PT_REQ_CLASSES };

/*
 * Or the allocator's own work by what it did (gpu.h's bookkeeping_work line, fitted by `pagetune gpu fit
 * --work`): its requests and frees, the operations on its free-block sets, the sets' chunk count summed at
 * each insert and the keys and blocks its searches and walks look at (bset.h's counters, which stand in for
 * the instructions its code executes: bench/RESULTS.md), each at a cost.  Where a mechanism has one, it
 * replaces the four bookkeeping lines; driver calls are priced as before.
 */
typedef struct pt_cost_work {
  double req_us, op_us, chunk_us, visit_us; /* µs a request or free, a free-set operation, a chunk at an insert,
                                               a key or block looked at */
} pt_cost_work;

/* What the engine counted for it over the requests and frees of a run. */
typedef struct pt_work_counts {
  uint64_t requests, ops, chunks, visits;
} pt_work_counts;

typedef struct pt_cost_model {
  pt_cost_line call[PT_DRV_NCALLS];
  int has_work;                   /* price own work by work (the bookkeeping lines unused) */
  pt_cost_work work;
  pt_cost_line bookkeeping;       /* µs per request or free, by the request's size */
  pt_cost_line bookkeeping_call;  /* the same for a request that made driver calls (n = 0: as bookkeeping) */
  /* the repeat class's lines (n = 0: the plain line above) */
  pt_cost_line call_repeat[PT_DRV_NCALLS];
  /* the calls after a large one (device.h, PT_DRV_AFTER_LARGE), of either class (n = 0: their class's line) */
  pt_cost_line call_after[PT_DRV_NCALLS];
  pt_cost_line bookkeeping_repeat, bookkeeping_call_repeat;
} pt_cost_model;

/* Requests and frees by size class (as pt_call_sizes): those served without a driver call, and those that
   made one or more (a segment carved, merged or given back costs the allocator more work too). */
typedef struct pt_req_sizes {
  uint64_t n[PT_SIZE_CLASSES], bytes[PT_SIZE_CLASSES];
  uint64_t n_call[PT_SIZE_CLASSES], bytes_call[PT_SIZE_CLASSES];
} pt_req_sizes;

/* The piecewise-linear line through the points, sorted by size (nothing is fitted: it passes through
 * every point): 0, or PT_EFORMAT for a time <= 0, a negative size or one size twice. */
int pt_cost_line_from_points(const pt_cost_points *p, pt_cost_line *out /* OUT */, pt_err *err);
double pt_cost_eval(const pt_cost_line *l, double bytes);
/* Predicted time of the calls of one kind, by size (pt_call_sizes), µs. */
double pt_cost_calls_us(const pt_cost_line *l, const uint64_t calls[PT_SIZE_CLASSES],
                        const uint64_t bytes[PT_SIZE_CLASSES]);
/* A constant: one point (no points for 0). */
pt_cost_line pt_cost_constant(double us);
/* Predicted allocator time, µs: every driver call, plus the bookkeeping of each request and free by its
   size class and whether it made driver calls. */
double pt_cost_alloc_us(const pt_cost_model *m, const pt_call_sizes *sizes, const pt_req_sizes *req);
/* A run's calls: every one (all), the repeat class's among them (repeat), the calls after a large one
   (after: device.h) and the repeats' among those (repeat_after); each a subset of the one before it but after
   of all; NULL: none. */
typedef struct pt_call_books {
  const pt_call_sizes *all, *repeat, *after, *repeat_after;
} pt_call_books;

/* The calls of kind c in b, µs: the calls after a large one by the call_after line where m has one, the other
   repeats by the repeat line (else the plain one), the rest by the plain line. */
double pt_cost_kind_us(const pt_cost_model *m, int c, const pt_call_books *b);
/* The same with the class axis: b's calls priced as pt_cost_kind_us, req every request, rep_req the repeat
   class's among them (a subset) by the repeat lines where the model has them, the rest by the plain lines.
   With no repeat or after line this is pt_cost_alloc_us. */
double pt_cost_alloc_class_us(const pt_cost_model *m, const pt_call_books *b, const pt_req_sizes *req,
                              const pt_req_sizes *rep_req);

/* Own work priced by w: req_us × requests + op_us × ops + chunk_us × chunks + visit_us × visits. */
double pt_cost_work_us(const pt_cost_work *w, const pt_work_counts *c);
/* pt_cost_alloc_class_us, but where m has a work line (has_work) the allocator's own work is priced by it from
   counts, in place of the bookkeeping lines; the driver calls as there. */
double pt_cost_alloc_total_us(const pt_cost_model *m, const pt_call_books *b, const pt_req_sizes *req,
                              const pt_req_sizes *rep_req, const pt_work_counts *counts);

#endif
