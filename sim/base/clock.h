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
/* One read of pt_clock_s, µs, over n reads (n >= 1; less is taken as 1): the median of PT_CLOCK_BATCHES batches'
   µs a read, so that the process being preempted in one batch does not count as the host's speed (reads up to 12
   times a process's fastest in bench/replay/mechanism18_h100's replays, their runs no slower: bench/RESULTS.md,
   session 19).  That speed is what it measures: a host that runs slower (a lower clock, a shared core) reads its
   clock slower too, in proportion, and so runs everything else (bench/RESULTS.md, "the host's speed"); a GPU
   description's host_clock_read_us says at which its costs hold. */
double pt_clock_read_us(int n);
/* The same over the clock given (what a test drives with a clock of its own). */
double pt_clock_read_with(int n, double (*clock)(void));
/* Batches a clock read is the median of: half of them less one may be disturbed. */
#define PT_CLOCK_BATCHES 15
/* A process's n timed runs at one host speed, ref µs a read: each run's total scaled by ref / the clock read taken
   just before it (the host's speed moves between the runs of one process too: bench/RESULTS.md, "each run at its
   own host speed"), and the median of those (the upper middle one for an even n, as a median run is chosen).  0
   when n is 0 or a read or ref is not > 0. */
double pt_clock_at_speed(const double *totals, const double *reads, size_t n, double ref);
/* Reads that measure the host's speed well (about 4 ms): what replay --mechanism and calibrate report. */
#define PT_CLOCK_READS 100000

#endif
