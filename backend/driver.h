/*
 * driver.h — the CUDA driver, loaded at run time.
 *
 * pagetune never links libcuda: GPU commands dlopen("libcuda.so.1") through
 * this seam, so every other command runs on a machine with no driver, and a
 * GPU command there fails with one clear line instead of a loader error.
 * Everything CUDA in backend/ goes through this table.
 */
#ifndef PT_DRIVER_H
#define PT_DRIVER_H

#include <stddef.h>

#include "error.h"

typedef struct pt_driver pt_driver;

typedef struct pt_gpu_info {
  int driver_version;     /* e.g. 13000 */
  int device_count;
  char name[256];         /* device 0 */
  size_t total_memory;    /* device 0, bytes */
} pt_gpu_info;

/* 1 when this build has the GPU backend (configure found cuda.h). */
int pt_driver_built(void);
/* Load libcuda.so.1 and cuInit(0); PT_ENODEV with a reason when impossible. */
int pt_driver_open(pt_err *err, pt_driver **out /* OUT */);
int pt_driver_info(pt_driver *d, pt_gpu_info *out /* OUT */, pt_err *err);
void pt_driver_close(pt_driver *d);

#endif
