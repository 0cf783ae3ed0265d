/*
 * testdev.h — what the suites that drive the live allocator (alloc.h) share:
 * a backend of modelled devices, one per ordinal, counting its opens and
 * closes.
 */
#ifndef PT_TESTDEV_H
#define PT_TESTDEV_H

#include "alloc.h"

typedef struct pt_test_models {
  int opened, closed;
} pt_test_models;

/* A backend that opens a modelled device (no recorded addresses) per ordinal; counts go to counts (may be NULL). */
pt_alloc_backend pt_test_model_backend(pt_test_models *counts);

/* n threads, thread i running fn(args + i * size); fn returns its failures as (void *)(intptr_t)count.
   The failures summed, or -1 when a thread could not start. */
int pt_test_threads(int n, void *(*fn)(void *), void *args, size_t size);

#endif
