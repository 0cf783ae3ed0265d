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
