/* cost.c — driver-call cost lines fitted with GSL (see cost.h). */
#include "cost.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <math.h>

int pt_cost_fit(const pt_cost_points *p, pt_cost_line *out, pt_err *err) {
  *out = (pt_cost_line){0};
  if (p->n == 0) return 0;
  for (size_t i = 0; i < p->n; i++)
    if (!(p->us[i] > 0) || !(p->bytes[i] >= 0))
      return pt_err_set(err, PT_EFORMAT, "calibration point %zu: time must be > 0 and bytes >= 0", i + 1);
  if (p->n == 1) {
    *out = (pt_cost_line){p->us[0], 0, 1};
    return 0;
  }
  double w[PT_COST_MAX_POINTS], c0, c1, cov00, cov01, cov11, chisq;
  for (size_t i = 0; i < p->n; i++) w[i] = 1.0 / (p->us[i] * p->us[i]);
  gsl_error_handler_t *old = gsl_set_error_handler_off();
  int rc = gsl_fit_wlinear(p->bytes, 1, w, 1, p->us, 1, p->n, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
  gsl_set_error_handler(old);
  int same = 1;
  for (size_t i = 1; i < p->n; i++) same &= p->bytes[i] == p->bytes[0];
  if (rc == GSL_SUCCESS && (same || !isfinite(c0) || !isfinite(c1))) rc = GSL_EDOM;
  if (rc != GSL_SUCCESS)
    return pt_err_set(err, PT_EFORMAT, "calibration points cannot be fitted (%s): are all sizes equal?",
                      gsl_strerror(rc));
  *out = (pt_cost_line){c0, c1, 1};
  return 0;
}

double pt_cost_eval(const pt_cost_line *l, double bytes) {
  if (!l->fitted) return 0;
  double t = l->a_us + l->b_us_per_byte * bytes;
  return t > 0 ? t : 0;
}

double pt_cost_alloc_us(const pt_cost_model *m, const uint64_t calls[PT_DRV_NCALLS],
                        const uint64_t bytes[PT_DRV_NCALLS], uint64_t operations) {
  double t = m->bookkeeping_us * (double)operations;
  for (int i = 0; i < PT_DRV_NCALLS; i++) t += pt_cost_calls_us(&m->call[i], calls[i], bytes[i]);
  return t;
}

double pt_cost_calls_us(const pt_cost_line *l, uint64_t calls, uint64_t bytes) {
  if (!l->fitted || !calls) return 0;
  double c = l->a_us * (double)calls + l->b_us_per_byte * (double)bytes;
  return c > 0 ? c : 0;
}
