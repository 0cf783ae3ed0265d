/*
 * fit.h — a GPU description's costs from measurements in context: the
 * driver calls and the allocator's own work timed in real-mechanism replays
 * (pagetune replay --mechanism --json, measured_costs), summed over the
 * runs given, written as cost and bookkeeping_us lines (pagetune gpu fit).
 *
 * Nothing is fitted in the least-squares sense: a size class's point is its
 * mean, (bytes / calls, µs / calls), the cost a call of that class had on
 * average in the runs, which is what a predicted total (a sum over calls)
 * needs.  Calibration points from `pagetune calibrate` time one call at a
 * time on a quiet device; these carry what a real run adds (a
 * synchronisation before memory goes back, a driver holding many
 * allocations).
 */
#ifndef PT_FIT_H
#define PT_FIT_H

#include <stdint.h>
#include <stdio.h>

#include "cost.h"
#include "device.h"
#include "error.h"

#define PT_FIT_MECHS 8
#define PT_FIT_WORK_TERMS 4 /* requests, ops, chunks, visits (cost.h's pt_work_counts) */

typedef struct pt_fit_sum {
  uint64_t n, bytes;
  double us;
} pt_fit_sum;

/* Sums by request class (cost.h): class PT_REQ_OTHER holds everything from a replay without the class axis. */
typedef struct pt_cost_fit {
  pt_fit_sum call[PT_REQ_CLASSES][PT_DRV_NCALLS][PT_SIZE_CLASSES]; /* less the calls after a large one */
  pt_fit_sum after[PT_DRV_NCALLS][PT_SIZE_CLASSES];                /* those, of every class (device.h) */
  int no_after;                                                     /* replays' after-large sums not read (cmd_gpu.c) */
  struct {
    char name[16];
    pt_fit_sum req[PT_REQ_CLASSES][PT_SIZE_CLASSES], req_call[PT_REQ_CLASSES][PT_SIZE_CLASSES]; /* without, with calls */
    /* the work fit's normal equations (pt_cost_fit_work): each run a row (requests, ops, chunks, visits) / own,
       aiming at 1 */
    double xtx[PT_FIT_WORK_TERMS][PT_FIT_WORK_TERMS], xty[PT_FIT_WORK_TERMS];
    unsigned nwork;
  } mech[PT_FIT_MECHS];
  int nmech;
  unsigned runs;
  unsigned work_skipped; /* runs whose measured own work was not > 0: no relative error to weigh them by */
  unsigned loop_points;  /* the base's bookkeeping_loop points added to the work fit (cmd_gpu.c) */
  int loop_skipped;      /* some were not: the base names no host speed to add a clock read at */
  double host_clock_read_us; /* > 0: the host speed the runs' times were brought to (gpu.h), written as a line;
                                -1: as measured (the base's line dropped, none written); 0: as measured, none said */
  double base_clock_read_us; /* the base's line (0: none), for the comment when the two differ */
} pt_cost_fit;

/* n calls of kind c (pt_drv_call) made in requests of class cls, of bytes in all, us in all. */
int pt_cost_fit_call(pt_cost_fit *f, int cls, int c, uint64_t n, uint64_t bytes, double us, pt_err *err);
/* n calls of kind c after a large one (device.h), among those pt_cost_fit_call was given for class cls (their
   sizes' class as there): moved from the class's sums to the after-large ones. */
int pt_cost_fit_call_after(pt_cost_fit *f, int cls, int c, uint64_t n, uint64_t bytes, double us, pt_err *err);
/* n requests and frees of class cls of mechanism mech that made no driver call (with_calls 0) or some (1),
   bytes in all, us of the allocator's own work in all. */
int pt_cost_fit_requests(pt_cost_fit *f, const char *mech, int cls, int with_calls, uint64_t n, uint64_t bytes, double us,
                         pt_err *err);
/*
 * The work fit (gpu fit --work): own work = REQ_US × requests + OP_US × ops + CHUNK_US × chunks + VISIT_US ×
 * visits (cost.h's pt_cost_work), by least squares on the relative error, each run's counts c and measured own work own_us (its
 * requests' measured time less the driver calls made in them).  A run of own_us <= 0 is skipped (counted in work_skipped).
 */
int pt_cost_fit_work(pt_cost_fit *f, const char *mech, const pt_work_counts *c, double own_us, pt_err *err);
/* The fitted costs of mech, non-negative: the least squares over the terms that leave none negative, of the
   smallest residual (a term no run has, or that the others determine, is 0).  PT_ENOTFOUND when no run of mech
   was added, PT_EFORMAT when no term is left. */
int pt_cost_fit_work_solve(const pt_cost_fit *f, const char *mech, pt_cost_work *out /* OUT */, pt_err *err);

/* The description base (its text, read from in; its calls' points in base, or NULL) named name, with the
   measured kinds' cost lines and the measured mechanisms' bookkeeping lines replaced by the fitted ones
   (a class's mean, from classes of 5 calls or more where a kind has any; the base's points kept outside
   the sizes measured), and source; to out.  Where repeat-class sums exist, their lines too (cost_repeat,
   bookkeeping_repeat_us, bookkeeping_call_repeat_us: the repeats' means, the plain line's points outside
   the sizes the repeats measured); the base's repeat lines of what was measured are dropped either way; and
   where after-large sums exist, a cost_after_large line of their means (the base's of a measured call dropped).  A
   mechanism with work runs (pt_cost_fit_work) gets its bookkeeping_work line; a measured mechanism's
   bookkeeping_work line in the base is dropped (it would stand in front of the fitted lines).  With
   host_clock_read_us, its line in place of the base's. */
int pt_cost_fit_write(const pt_cost_fit *f, FILE *in, const pt_cost_points base[PT_DRV_NCALLS], FILE *out,
                      const char *name, const char *source, pt_err *err);

#endif
