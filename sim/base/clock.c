/* clock.c — the one monotonic clock (see clock.h). */
#include "clock.h"

#include <time.h>

double pt_clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
