/*
 * cudadev.h — the real GPU as a device (device/device.h): each operation a
 * CUDA driver call on one device ordinal, in that device's primary context.
 *
 * The same mechanism code that runs on the modelled device runs on this one
 * (the allocator library, the real-mechanism replay).  What only a real
 * device needs:
 *   - the context: each call runs in the device's primary context, pushed
 *     for the call when another is current on the thread and popped after,
 *     so the caller's current context is left as it was;
 *   - out of memory: CUDA_ERROR_OUT_OF_MEMORY is PT_EOOM, which a mechanism
 *     answers by freeing cached memory and retrying, as PyTorch does; any
 *     other failure is PT_EIO with the driver's text;
 *   - the GPU's own use of memory: a block handed back by its user may still
 *     be read or written by work queued on its stream.  Reuse on the same
 *     stream is ordered by the stream itself (the mechanisms keep free
 *     blocks per stream); memory going back to the driver is not, so after
 *     pt_cudadev_note_free the first cuMemFree or cuMemUnmap synchronises
 *     the context first (once, until the next note);
 *   - memory from before the run does not exist here: adopt is refused;
 *   - VA reservations still held at close are given back there (a run that
 *     stopped half way, an async pool's range).
 * Handles are the driver's CUmemGenericAllocationHandle values.
 */
#ifndef PT_CUDADEV_H
#define PT_CUDADEV_H

#include <stdint.h>

#include "device.h"
#include "driver.h"
#include "error.h"

typedef struct pt_cudadev pt_cudadev;

extern const pt_dev_ops pt_cudadev_ops;

/* Device ordinal `device` through the loaded driver d (which must outlive it); errors go to err
   (which must outlive it too: the device describes its failures there). */
int pt_cudadev_open(pt_driver *d, int device, pt_err *err, pt_cudadev **out /* OUT */);
void pt_cudadev_close(pt_cudadev *c);
/* A user freed memory: the GPU may still use it until the context is synchronised. */
void pt_cudadev_note_free(pt_cudadev *c);
/* Take device memory (cuMemAlloc, given back at close) until about leave_free bytes are free: a test of running
   out of memory for real (pagetune replay --mechanism --leave-free). */
int pt_cudadev_occupy(pt_cudadev *c, uint64_t leave_free);
/* Free and total bytes of the device, as cuMemGetInfo says. */
int pt_cudadev_mem_info(pt_cudadev *c, uint64_t *free_bytes, uint64_t *total_bytes);
/* words 32-bit words of value at addr (asynchronous, on the default stream); then a read of one word. */
int pt_cudadev_fill(pt_cudadev *c, uint64_t addr, uint64_t words, uint32_t value);
int pt_cudadev_read_word(pt_cudadev *c, uint64_t addr, uint32_t *value /* OUT */);

#endif
