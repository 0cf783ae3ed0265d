/*
 * cudafns.h — inside backend/ only: the driver table driver.c fills from
 * libcuda.so.1 and the modules that make GPU calls (replay.c) use.  Needs
 * cuda.h, so it is included under HAVE_CUDA only.
 */
#ifndef PT_CUDAFNS_H
#define PT_CUDAFNS_H

#include <cuda.h>

#include "driver.h"

struct pt_driver {
  void *lib;
  CUdevice dev;
  CUcontext ctx;  /* device 0's primary context once a module asked for it; NULL before */
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*CtxPopCurrent)(CUcontext *);
  CUresult (*MemGetInfo)(size_t *, size_t *);
  CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*CtxSynchronize)(void);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
  CUresult (*MemRelease)(CUmemGenericAllocationHandle);
  CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*MemAddressFree)(CUdeviceptr, size_t);
  CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*MemUnmap)(CUdeviceptr, size_t);
  CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
  CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
};

/* A failed call as one line: "what failed: <driver's text> (CUresult N)"; PT_ENODEV or PT_EIO. */
int pt_cu_fail(pt_driver *d, CUresult r, const char *what, pt_err *err);
/* Device 0's primary context, current on this thread. */
int pt_cu_context(pt_driver *d, pt_err *err);
/* What pagetune's VMM handles are: pinned device memory on the context's device, read-write to it. */
CUmemAllocationProp pt_cu_handle_prop(const pt_driver *d);
CUmemAccessDesc pt_cu_access(const pt_driver *d);
/* The same for device ordinal `device`. */
CUmemAllocationProp pt_cu_handle_prop_on(int device);
CUmemAccessDesc pt_cu_access_on(int device);
/* A monotonic clock in microseconds, for timing driver calls. */
double pt_cu_now_us(void);

#endif
