/*
 * clock.h — the one monotonic clock: seconds since an arbitrary start, for
 * timing runs, replays and budgets (never a date).
 */
#ifndef PT_CLOCK_H
#define PT_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in seconds. */
double pt_clock_s(void);
/* The same clock in whole microseconds (exact, for timestamps). */
int64_t pt_clock_us(void);
/* One read of pt_clock_s, µs, the mean of n (n >= 1).  Also the host's speed at that moment: a host that runs
   slower (a lower clock, a shared core) reads its clock slower too, in proportion, and so runs everything else
   (bench/RESULTS.md, "the host's speed"); a GPU description's host_clock_read_us says at which its costs hold. */
double pt_clock_read_us(int n);
/* A process's n timed runs at one host speed, ref µs a read: each run's total scaled by ref / the clock read taken
   just before it (the host's speed moves between the runs of one process too: bench/RESULTS.md, "each run at its
   own host speed"), and the median of those (the upper middle one for an even n, as a median run is chosen).  0
   when n is 0 or a read or ref is not > 0. */
double pt_clock_at_speed(const double *totals, const double *reads, size_t n, double ref);
/* Reads that measure the host's speed well (about 4 ms): what replay --mechanism and calibrate report. */
#define PT_CLOCK_READS 100000

#endif
