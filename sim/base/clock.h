/*
 * clock.h — the one monotonic clock: seconds since an arbitrary start, for
 * timing runs, replays and budgets (never a date).
 */
#ifndef PT_CLOCK_H
#define PT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in seconds. */
double pt_clock_s(void);
/* The same clock in whole microseconds (exact, for timestamps). */
int64_t pt_clock_us(void);

#endif
