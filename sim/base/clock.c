/* clock.c — the one monotonic clock (see clock.h). */
#include "clock.h"

#include <time.h>

/* noinline: pt_clock_read_us times the call every other file makes, not an inlined copy */
__attribute__((noinline)) double pt_clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t pt_clock_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double pt_clock_read_us(int n) {
  volatile double sink = 0; /* keeps the loop */
  double t0 = pt_clock_s();
  for (int i = 0; i < n; i++) sink = pt_clock_s();
  (void)sink;
  return (pt_clock_s() - t0) * 1e6 / n;
}

double pt_clock_at_speed(const double *totals, const double *reads, size_t n, double ref) {
  if (!n || !(ref > 0)) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(reads[i] > 0)) return 0;
  /* the one whose rank (ties by index) is n / 2: no copy to sort, and n is a run count */
  for (size_t i = 0; i < n; i++) {
    double x = totals[i] * ref / reads[i];
    size_t below = 0;
    for (size_t j = 0; j < n; j++) {
      double y = totals[j] * ref / reads[j];
      below += y < x || (y == x && j < i);
    }
    if (below == n / 2) return x;
  }
  return 0; /* not reached: one of them has that rank */
}
