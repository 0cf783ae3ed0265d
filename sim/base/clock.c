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

/* n reads of clock in PT_CLOCK_BATCHES batches, each batch timed from the read that ended the one before; the
   median batch's µs a read.  static inline: pt_clock_read_us's copy calls pt_clock_s directly. */
static inline double read_batches(int n, double (*clock)(void)) {
  if (n < 1) n = 1;
  int nb = n < PT_CLOCK_BATCHES ? n : PT_CLOCK_BATCHES;
  double us[PT_CLOCK_BATCHES], reads[PT_CLOCK_BATCHES];
  double last = clock();
  for (int b = 0, done = 0; b < nb; b++) {
    int k = (n - done) / (nb - b); /* the n reads spread over the batches left */
    double t = last;
    for (int i = 0; i < k; i++) t = clock();
    us[b] = (t - last) * 1e6;
    reads[b] = k;
    last = t;
    done += k;
  }
  return pt_clock_at_speed(us, reads, (size_t)nb, 1); /* each batch's µs a read; the median */
}

double pt_clock_read_us(int n) { return read_batches(n, pt_clock_s); }

double pt_clock_read_with(int n, double (*clock)(void)) { return read_batches(n, clock); }

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
