/*
 * clock.h — the one monotonic clock: seconds since an arbitrary start, for
 * timing runs, replays and budgets (never a date).
 */
#ifndef PT_CLOCK_H
#define PT_CLOCK_H

/* CLOCK_MONOTONIC in seconds. */
double pt_clock_s(void);

#endif
