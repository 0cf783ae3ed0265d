/* clockread.c — the host's speed read two ways, side by side: the mean over n reads (pt_clock_read_us before
   session 19) and the median batch's (pt_clock_read_us now), T times each, alternating.  On a loaded host the mean
   jumps when the process is preempted inside its window; the median should not.
     cc -O2 -I../../sim/base clockread.c ../../sim/base/clock.c -o clockread && ./clockread [T] [n] */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"

static double mean_read_us(int n) {
  volatile double sink = 0;
  double t0 = pt_clock_s();
  for (int i = 0; i < n; i++) sink = pt_clock_s();
  (void)sink;
  return (pt_clock_s() - t0) * 1e6 / n;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void summary(const char *name, double *v, int t) {
  qsort(v, (size_t)t, sizeof *v, cmp);
  int over = 0; /* reads over 1.5 times the median */
  for (int i = 0; i < t; i++) over += v[i] > 1.5 * v[t / 2];
  printf("%-22s min %.4f  median %.4f  p99 %.4f  max %.4f  over 1.5x median: %d of %d\n", name, v[0], v[t / 2],
         v[(int)(0.99 * (t - 1))], v[t - 1], over, t);
}

int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 2000, n = argc > 2 ? atoi(argv[2]) : 20000;
  if (t < 1 || n < 1) return fprintf(stderr, "usage: clockread [T >= 1] [n >= 1]\n"), 2;
  double *mean = malloc((size_t)t * sizeof *mean), *med = malloc((size_t)t * sizeof *med);
  if (!mean || !med) return 1;
  for (int i = 0; i < t; i++) {
    mean[i] = mean_read_us(n);
    med[i] = pt_clock_read_us(n);
  }
  printf("%d reads of %d clock reads each, us a read\n", t, n);
  summary("mean over the reads", mean, t);
  summary("median batch (now)", med, t);
  free(mean), free(med);
  return 0;
}
