/*
 * driver.c — run-time loading of the CUDA driver API (see driver.h).
 *
 * The function pointers are resolved by their ABI names (the _v2 ones where
 * cuda.h maps a name onto a versioned symbol).  Each call's CUresult is
 * checked and turned into a message with cuGetErrorString.
 */
#include "driver.h"

#include <config.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <dlfcn.h>

#include "clock.h"
#include "cudafns.h"

int pt_driver_built(void) { return 1; }

int pt_cu_fail(pt_driver *d, CUresult r, const char *what, pt_err *err) {
  const char *s = NULL;
  if (!d->GetErrorString || d->GetErrorString(r, &s) != CUDA_SUCCESS || !s) s = "unknown error";
  return pt_err_set(err, r == CUDA_ERROR_NO_DEVICE ? PT_ENODEV : PT_EIO, "%s failed: %s (CUresult %d)",
                    what, s, (int)r);
}

int pt_driver_open(pt_err *err, pt_driver **out) {
  *out = NULL;
  pt_driver *d = calloc(1, sizeof *d);
  if (!d) return pt_err_set(err, PT_ENOMEM, "out of memory");
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *why = dlerror();
    free(d);
    return pt_err_set(err, PT_ENODEV, "no GPU: cannot load the CUDA driver (%s)",
                      why ? why : "libcuda.so.1 not found");
  }
  static const struct { const char *name; size_t off; } syms[] = {
      {"cuInit", offsetof(pt_driver, Init)},
      {"cuDriverGetVersion", offsetof(pt_driver, DriverGetVersion)},
      {"cuDeviceGetCount", offsetof(pt_driver, DeviceGetCount)},
      {"cuDeviceGet", offsetof(pt_driver, DeviceGet)},
      {"cuDeviceGetName", offsetof(pt_driver, DeviceGetName)},
      {"cuDeviceTotalMem_v2", offsetof(pt_driver, DeviceTotalMem)},
      {"cuGetErrorString", offsetof(pt_driver, GetErrorString)},
      {"cuDevicePrimaryCtxRetain", offsetof(pt_driver, DevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease_v2", offsetof(pt_driver, DevicePrimaryCtxRelease)},
      {"cuCtxSetCurrent", offsetof(pt_driver, CtxSetCurrent)},
      {"cuCtxGetCurrent", offsetof(pt_driver, CtxGetCurrent)},
      {"cuCtxPushCurrent_v2", offsetof(pt_driver, CtxPushCurrent)},
      {"cuCtxPopCurrent_v2", offsetof(pt_driver, CtxPopCurrent)},
      {"cuMemGetInfo_v2", offsetof(pt_driver, MemGetInfo)},
      {"cuMemsetD32_v2", offsetof(pt_driver, MemsetD32)},
      {"cuMemcpyDtoH_v2", offsetof(pt_driver, MemcpyDtoH)},
      {"cuCtxSynchronize", offsetof(pt_driver, CtxSynchronize)},
      {"cuMemAlloc_v2", offsetof(pt_driver, MemAlloc)},
      {"cuMemFree_v2", offsetof(pt_driver, MemFree)},
      {"cuMemCreate", offsetof(pt_driver, MemCreate)},
      {"cuMemRelease", offsetof(pt_driver, MemRelease)},
      {"cuMemAddressReserve", offsetof(pt_driver, MemAddressReserve)},
      {"cuMemAddressFree", offsetof(pt_driver, MemAddressFree)},
      {"cuMemMap", offsetof(pt_driver, MemMap)},
      {"cuMemUnmap", offsetof(pt_driver, MemUnmap)},
      {"cuMemSetAccess", offsetof(pt_driver, MemSetAccess)},
      {"cuMemGetAllocationGranularity", offsetof(pt_driver, MemGetAllocationGranularity)},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(d->lib, syms[i].name);
    if (!p) {
      pt_driver_close(d);
      return pt_err_set(err, PT_ENODEV, "no GPU: the CUDA driver lacks %s", syms[i].name);
    }
    memcpy((char *)d + syms[i].off, &p, sizeof p);
  }
  CUresult r = d->Init(0);
  if (r != CUDA_SUCCESS) {
    int rc = pt_cu_fail(d, r, "cuInit", err);
    pt_driver_close(d);
    return rc == PT_EIO ? PT_ENODEV : rc;
  }
  *out = d;
  return 0;
}

int pt_driver_info(pt_driver *d, pt_gpu_info *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  CUresult r;
  CUdevice dev;
  if ((r = d->DriverGetVersion(&out->driver_version)) != CUDA_SUCCESS)
    return pt_cu_fail(d, r, "cuDriverGetVersion", err);
  if ((r = d->DeviceGetCount(&out->device_count)) != CUDA_SUCCESS)
    return pt_cu_fail(d, r, "cuDeviceGetCount", err);
  if (out->device_count < 1) return pt_err_set(err, PT_ENODEV, "no GPU: the driver sees no device");
  if ((r = d->DeviceGet(&dev, 0)) != CUDA_SUCCESS) return pt_cu_fail(d, r, "cuDeviceGet", err);
  if ((r = d->DeviceGetName(out->name, (int)sizeof out->name, dev)) != CUDA_SUCCESS)
    return pt_cu_fail(d, r, "cuDeviceGetName", err);
  if ((r = d->DeviceTotalMem(&out->total_memory, dev)) != CUDA_SUCCESS)
    return pt_cu_fail(d, r, "cuDeviceTotalMem", err);
  return 0;
}

CUmemAllocationProp pt_cu_handle_prop_on(int device) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

CUmemAccessDesc pt_cu_access_on(int device) {
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = device;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a;
}

CUmemAllocationProp pt_cu_handle_prop(const pt_driver *d) { return pt_cu_handle_prop_on((int)d->dev); }

CUmemAccessDesc pt_cu_access(const pt_driver *d) { return pt_cu_access_on((int)d->dev); }

double pt_cu_now_us(void) { return pt_clock_s() * 1e6; }

int pt_cu_context(pt_driver *d, pt_err *err) {
  CUresult r;
  if (d->ctx) return 0;
  if ((r = d->DeviceGet(&d->dev, 0)) != CUDA_SUCCESS) return pt_cu_fail(d, r, "cuDeviceGet", err);
  if ((r = d->DevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS) {
    d->ctx = NULL;
    return pt_cu_fail(d, r, "cuDevicePrimaryCtxRetain", err);
  }
  if ((r = d->CtxSetCurrent(d->ctx)) != CUDA_SUCCESS) {
    d->DevicePrimaryCtxRelease(d->dev);
    d->ctx = NULL;
    return pt_cu_fail(d, r, "cuCtxSetCurrent", err);
  }
  return 0;
}

void pt_driver_close(pt_driver *d) {
  if (!d) return;
  if (d->ctx) d->DevicePrimaryCtxRelease(d->dev);
  if (d->lib) dlclose(d->lib);
  free(d);
}

#else /* built without the CUDA Toolkit */

struct pt_driver {
  int unused;
};

int pt_driver_built(void) { return 0; }

int pt_driver_open(pt_err *err, pt_driver **out) {
  *out = NULL;
  return pt_err_set(err, PT_ENODEV,
                    "no GPU support in this build: reconfigure with --with-cuda (CUDA Toolkit headers)");
}

int pt_driver_info(pt_driver *d, pt_gpu_info *out, pt_err *err) {
  (void)d;
  memset(out, 0, sizeof *out);
  return pt_err_set(err, PT_ENODEV, "no GPU support in this build");
}

void pt_driver_close(pt_driver *d) { (void)d; }

#endif
