/*
 * cost.h — predicted time: driver calls and translation.
 *
 * Each driver call's time is a straight line in its size, t = a + b * bytes,
 * fitted with GSL (gsl_fit_wlinear, weights 1/t^2 so small and large calls
 * count alike in relative error) to calibration points: measured (bytes, µs)
 * pairs.  The H200 figures in DESIGN.md ship as defaults in the GPU
 * description; `pagetune calibrate` will replace them with measured ones.
 * Since the line is linear, the time of many calls is a*n + b*(sum of bytes),
 * which is what the device counts.
 */
#ifndef PT_COST_H
#define PT_COST_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"

#define PT_COST_MAX_POINTS 16

typedef struct pt_cost_points {
  size_t n;
  double bytes[PT_COST_MAX_POINTS], us[PT_COST_MAX_POINTS];
} pt_cost_points;

typedef struct pt_cost_line {
  double a_us, b_us_per_byte;
  int fitted;              /* 0: no points, costs nothing */
} pt_cost_line;

typedef struct pt_cost_model {
  pt_cost_line call[PT_DRV_NCALLS];
  double bookkeeping_us;   /* per request or free handled by the allocator itself */
} pt_cost_model;

/* Fit one line; one point gives a constant, two or more a weighted least-squares line. */
int pt_cost_fit(const pt_cost_points *p, pt_cost_line *out /* OUT */, pt_err *err);
double pt_cost_eval(const pt_cost_line *l, double bytes);
/* Predicted time of n calls of one kind whose sizes sum to bytes, µs. */
double pt_cost_calls_us(const pt_cost_line *l, uint64_t calls, uint64_t bytes);
/* Predicted allocator time, µs: every driver call plus bookkeeping per operation. */
double pt_cost_alloc_us(const pt_cost_model *m, const uint64_t calls[PT_DRV_NCALLS],
                        const uint64_t bytes[PT_DRV_NCALLS], uint64_t operations);

#endif
