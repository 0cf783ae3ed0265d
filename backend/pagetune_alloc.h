/*
 * pagetune_alloc.h — the C interface of libpagetune_alloc.so, pagetune's
 * allocator library for PyTorch (backend/alloclib.c says how it is loaded
 * and configured; backend/python/pagetune_alloc.py wraps it).
 */
#ifndef PAGETUNE_ALLOC_H
#define PAGETUNE_ALLOC_H

#include <stddef.h>
#include <sys/types.h>

/* What torch.cuda.memory.CUDAPluggableAllocator calls: stream is the cudaStream_t. */
void *pagetune_malloc(ssize_t size, int device, void *stream);
void pagetune_free(void *ptr, ssize_t size, int device, void *stream);

/* 1 when serving, 0 when the configuration or the driver failed; buf (n bytes) says which. */
int pagetune_status(char *buf, size_t n);
/* The last failure on the calling thread, as one line. */
const char *pagetune_last_error(void);
/* Cached memory of device back to the driver (torch.cuda.empty_cache() does not reach the library): 0 or -1. */
int pagetune_empty_cache(int device);
/* Peaks start again from the current values: 0 or -1. */
int pagetune_reset_peak_stats(int device);
/* device's statistics as one JSON object in buf (n bytes); the length it needs, as snprintf, or -1. */
int pagetune_stats_json(int device, char *buf, size_t n);

#endif
