/*
 * fakecuda.c — a stand-in libcuda.so.1 for tests on machines without a GPU:
 * the driver calls pagetune resolves (backend/driver.c), answered in memory
 * by one device, "Fake GPU", with 80 GiB.  Each call spins about a
 * microsecond, so measured times are positive.  What is still held when
 * the program exits (cuMemAlloc blocks, handles, VA reservations, maps,
 * primary-context references) is written to $FAKECUDA_REPORT, one line:
 *   allocs A handles H reservations R maps M ctx_refs C calls N
 * Only what the tests need: addresses are invented, memory is never there
 * (cuMemcpyDtoH reads zeros), the property and access arguments are not read.
 * Built by tests/calibrate_fake.sh with $CC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUhandle;
typedef int CUdevice;
typedef void *CUcontext;

#define OK 0
#define INVALID_VALUE 1
#define INVALID_DEVICE 101
#define NOT_FOUND 500
#define MAX_LIVE 65536

typedef struct span {
  unsigned long long at, bytes;
} span;

typedef struct set {
  span v[MAX_LIVE];
  int n;
} set;

static set allocs, handles, ranges, maps;
static int ctx_refs, ctx_obj, depth;
static CUcontext current, stack[64];
static unsigned long long next_addr = 0x7f0000000000ull, next_va = 0x100000000000ull, next_handle = 1;
static long calls;

static void spin(void) {
  struct timespec a, b;
  calls++;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1000);
}

static int add(set *s, unsigned long long at, unsigned long long bytes) {
  if (s->n == MAX_LIVE) return INVALID_VALUE;
  s->v[s->n++] = (span){at, bytes};
  return OK;
}

static int drop(set *s, unsigned long long at) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i].at == at) {
      s->v[i] = s->v[--s->n];
      return OK;
    }
  return INVALID_VALUE;
}

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("FAKECUDA_REPORT");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f) return;
  fprintf(f, "allocs %d handles %d reservations %d maps %d ctx_refs %d calls %ld\n", allocs.n, handles.n, ranges.n,
          maps.n, ctx_refs, calls);
  fclose(f);
}

CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
CUresult cuDriverGetVersion(int *v) { return *v = 13000, OK; }
CUresult cuDeviceGetCount(int *n) { return *n = 1, OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { return ordinal ? INVALID_DEVICE : (*d = 0, OK); }
CUresult cuDeviceGetName(char *name, int n, CUdevice d) { return snprintf(name, (size_t)n, "Fake GPU"), d ? INVALID_DEVICE : OK; }
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) { return *bytes = 80ull << 30, d ? INVALID_DEVICE : OK; }
CUresult cuGetErrorString(CUresult r, const char **s) { return *s = r == INVALID_VALUE ? "invalid argument" : "fake error", OK; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return d ? INVALID_DEVICE : (*c = &ctx_obj, ctx_refs++, OK); }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d || !ctx_refs ? INVALID_VALUE : (ctx_refs--, OK); }
CUresult cuCtxSetCurrent(CUcontext c) { return current = c, OK; }
CUresult cuCtxGetCurrent(CUcontext *c) { return *c = current, OK; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { return depth == 64 ? INVALID_VALUE : (stack[depth++] = current, current = c, OK); }
CUresult cuCtxPopCurrent_v2(CUcontext *c) { return !depth ? INVALID_VALUE : (*c = current, current = stack[--depth], OK); }
CUresult cuCtxSynchronize(void) { return current ? OK : INVALID_VALUE; }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  unsigned long long held = 0;
  for (int i = 0; i < allocs.n; i++) held += allocs.v[i].bytes;
  for (int i = 0; i < handles.n; i++) held += handles.v[i].bytes;
  *total = 80ull << 30;
  *free_bytes = *total - held;
  return OK;
}
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) { return (void)p, (void)v, (void)n, OK; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr p, size_t n) { return (void)p, memset(dst, 0, n), OK; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  spin();
  if (!bytes || !current) return INVALID_VALUE;
  *p = next_addr;
  next_addr += (bytes + 0xfffff) & ~0xfffffull;
  return add(&allocs, *p, bytes);
}
CUresult cuMemFree_v2(CUdeviceptr p) { return spin(), drop(&allocs, p); }
CUresult cuMemCreate(CUhandle *h, size_t bytes, const void *prop, unsigned long long flags) {
  spin();
  if (!bytes || bytes % (2u << 20) || flags || !prop) return INVALID_VALUE;
  *h = next_handle++;
  return add(&handles, *h, bytes);
}
CUresult cuMemRelease(CUhandle h) { return spin(), drop(&handles, h); }
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t bytes, size_t align, CUdeviceptr addr, unsigned long long flags) {
  spin();
  if (!bytes || bytes % (2u << 20) || addr || flags || (align & (align - 1))) return INVALID_VALUE;
  *p = next_va;
  next_va += bytes + (2u << 20);
  return add(&ranges, *p, bytes);
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t bytes) { return spin(), (void)bytes, drop(&ranges, p); }
CUresult cuMemMap(CUdeviceptr va, size_t bytes, size_t offset, CUhandle h, unsigned long long flags) {
  spin();
  int known = 0;
  for (int i = 0; i < handles.n; i++) known |= handles.v[i].at == h;
  return !known || offset || flags ? INVALID_VALUE : add(&maps, va, bytes);
}
/* every map inside [va, va + bytes) */
CUresult cuMemUnmap(CUdeviceptr va, size_t bytes) {
  spin();
  int found = 0;
  for (int i = 0; i < maps.n;)
    if (maps.v[i].at >= va && maps.v[i].at < va + bytes) maps.v[i] = maps.v[--maps.n], found = 1;
    else i++;
  return found ? OK : INVALID_VALUE;
}
CUresult cuMemSetAccess(CUdeviceptr va, size_t bytes, const void *desc, size_t n) {
  return spin(), (void)va, (void)bytes, desc && n ? OK : INVALID_VALUE;
}
CUresult cuMemGetAllocationGranularity(size_t *g, const void *prop, int flags) { return (void)prop, (void)flags, *g = 2u << 20, OK; }
