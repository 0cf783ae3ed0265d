/*
 * gpufrees.h — when the GPU passed each free of a capture, counted in requests
 * (`trace import --gpu-frees`; written by traces/capture/gpufrees.py).
 *
 * The file, text, one record a line:
 *     pagetune-gpu-frees 2     (1: no syncs lines)
 *     requests N              (requests the capture made while measuring)
 *     syncs recorded          (2, when the capture could count synchronisations: async_probe/shim.c preloaded;
 *                              then the s lines are every one)
 *     f ADDR K [end]          (one a free, in the order the allocator freed them: the block at ADDR
 *                              (hex) was freed, and K requests came before its event was seen complete;
 *                              "end": not before the measuring stopped)
 *     s N                     (2: the program synchronised with the GPU before the N-th request or free, from 1)
 *     end COUNT               (the number of f lines)
 * Beside it gpufrees.py writes NAME.gpufrees.times.gz (each call's and free's time in µs), which
 * traces/capture/async_timeline.py reads to write this file again on a cudaMallocAsync run's timeline; the
 * importer reads only this one.
 */
#ifndef PT_GPUFREES_H
#define PT_GPUFREES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "trace.h"

#define PT_GPU_FREES_MAX (UINT64_C(1) << 30)

typedef struct pt_gpu_free {
  uint64_t addr, requests; /* requests: those made before the GPU was seen past the free */
} pt_gpu_free;

typedef struct pt_gpu_frees {
  pt_gpu_free *f;
  size_t n, cap;
  uint64_t requests;
  uint64_t *sync_at;  /* ascending: a synchronisation before the request or free of that number (from 1) */
  size_t nsync, cap_sync;
  int syncs_recorded; /* the capture counted synchronisations: the sync_at are all of them */
} pt_gpu_frees;

/* Read path (plain or gzip'd).  0, or a negative PT_E* with "path: line N: reason" in err. */
int pt_gpu_frees_load(const char *path, pt_gpu_frees *out /* OUT */, pt_err *err);
void pt_gpu_frees_free(pt_gpu_frees *g);

/*
 * A run of the same workload under PyTorch's backend:cudaMallocAsync, as traces/capture/async_probe/shim.c
 * logged it (`trace import --async-run`): the requests and frees PyTorch made of the driver, where the
 * program synchronised with the GPU, and, for a run with PT_SHIM_MARK=1, when the GPU passed each free.
 * PyTorch cannot record a snapshot under that backend; this gives a snapshot of the same workload, taken
 * under the native allocator, the timing of a cudaMallocAsync run (docs/model.md).
 *
 * The file, text, one record a line (plain or gzip'd):
 *     pagetune-async-run 1
 *     a BYTES ADDR STREAM RESERVED [failed]  a request (ADDR, STREAM hex; "failed": refused, left out)
 *     f ADDR STREAM RESERVED                 a free
 *     n L=.. Q=.. S=.. E=.. R=.. W=..        calls since the last request or free (S: synchronisations)
 *     e EVENT STREAM, w STREAM EVENT         an event recorded on a stream, a stream made to wait for one (PT_SHIM_EVENTS=1;
 *                                            EVENT, STREAM hex): the stream order, events numbered from 1 by first sight
 *     k I K                                  the I-th free (from 1): K more requests came before the GPU passed it
 *     end CALLS                              the number of a and f lines
 */
#define PT_ASYNC_RUN_MAX (UINT64_C(1) << 30)

typedef struct pt_async_call {
  uint64_t bytes; /* a request's bytes; a free: its request's */
  uint64_t stream; /* the stream it was made on */
  uint32_t req;   /* a request: its number, from 1; a free: its request's (the one that got the address) */
  uint32_t free;  /* a free: its number, from 1; 0 for a request */
  uint8_t sync;   /* the program synchronised with the GPU just before this call */
} pt_async_call;

typedef struct pt_async_run {
  pt_async_call *c; /* the requests that succeeded and the frees, in order */
  size_t n, cap;
  uint64_t *lag;    /* lag[i - 1]: the i-th free's K + 1; 0: not timed */
  size_t nfree;
  uint64_t timed;   /* frees with a K */
  size_t nreq;      /* requests */
  pt_order order;   /* the e and w lines, each before call op.before (an index into c; n: after the last) */
} pt_async_run;

int pt_async_run_load(const char *path, pt_async_run *out /* OUT */, pt_err *err);
void pt_async_run_free(pt_async_run *r);

#endif
