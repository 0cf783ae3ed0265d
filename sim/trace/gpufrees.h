/*
 * gpufrees.h — when the GPU passed each free of a capture, counted in requests
 * (`trace import --gpu-frees`; written by traces/capture/gpufrees.py).
 *
 * The file, text, one record a line:
 *     pagetune-gpu-frees 1
 *     requests N              (requests the capture made while measuring)
 *     f ADDR K [end]          (one a free, in the order the allocator freed them: the block at ADDR
 *                              (hex) was freed, and K requests came before its event was seen complete;
 *                              "end": not before the measuring stopped)
 *     end COUNT               (the number of f lines)
 */
#ifndef PT_GPUFREES_H
#define PT_GPUFREES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PT_GPU_FREES_MAX (UINT64_C(1) << 30)

typedef struct pt_gpu_free {
  uint64_t addr, requests; /* requests: those made before the GPU was seen past the free */
} pt_gpu_free;

typedef struct pt_gpu_frees {
  pt_gpu_free *f;
  size_t n, cap;
  uint64_t requests;
} pt_gpu_frees;

/* Read path (plain or gzip'd).  0, or a negative PT_E* with "path: line N: reason" in err. */
int pt_gpu_frees_load(const char *path, pt_gpu_frees *out /* OUT */, pt_err *err);
void pt_gpu_frees_free(pt_gpu_frees *g);

#endif
