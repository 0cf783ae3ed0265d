/* cudadev.c — the real GPU as a device: driver calls on one ordinal (see cudadev.h). */
#include "cudadev.h"

#include <config.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_CUDA
#include "cudafns.h"

struct pt_cudadev {
  pt_driver *d;
  int ordinal;
  CUdevice dev;
  CUcontext ctx;               /* the device's primary context, retained */
  CUmemAllocationProp prop;    /* pinned device memory on this ordinal */
  CUmemAccessDesc access;      /* read-write from this ordinal */
  int pending;                 /* memory was freed by its user since the last synchronisation */
  pt_err *err;
  CUdeviceptr *ranges;         /* live VA reservations, in no order */
  size_t *range_bytes, nranges, cap_ranges;
  /* memory from before the run, made at adopt: the trace's addresses [at, at+bytes) and where the
     GPU put them (real; the same when the driver took the trace's address as its hint) */
  struct adopted {
    uint64_t at, real, bytes, span;          /* span: the VA reserved, 2 MiB granules */
    CUmemGenericAllocationHandle whole;      /* a cudaMalloc'd segment stood in for by one handle; 0 for pages */
  } *adopted;
  size_t nadopted;
  CUdeviceptr *ballast;        /* pt_cudadev_occupy's allocations, freed at close */
  size_t nballast;
};

#define GRANULE (UINT64_C(2) << 20)

/* A reservation remembered, for close; 0 or PT_ENOMEM (the reservation then given back by the caller). */
static int range_push(pt_cudadev *c, CUdeviceptr va, size_t bytes) {
  if (c->nranges == c->cap_ranges) {
    size_t cap = c->cap_ranges ? 2 * c->cap_ranges : 16;
    CUdeviceptr *v = realloc(c->ranges, cap * sizeof *v);
    if (!v) return PT_ENOMEM;
    c->ranges = v;
    size_t *b = realloc(c->range_bytes, cap * sizeof *b);
    if (!b) return PT_ENOMEM;
    c->range_bytes = b;
    c->cap_ranges = cap;
  }
  c->ranges[c->nranges] = va;
  c->range_bytes[c->nranges++] = bytes;
  return 0;
}

static void range_drop(pt_cudadev *c, CUdeviceptr va) {
  for (size_t i = 0; i < c->nranges; i++)
    if (c->ranges[i] == va) {
      c->nranges--;
      c->ranges[i] = c->ranges[c->nranges];
      c->range_bytes[i] = c->range_bytes[c->nranges];
      return;
    }
}

/* The device's context current for one call: pushed when another is current. */
static int enter(pt_cudadev *c, int *pushed) {
  CUcontext cur = NULL;
  *pushed = 0;
  CUresult r = c->d->CtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS) return pt_cu_fail(c->d, r, "cuCtxGetCurrent", c->err);
  if (cur == c->ctx) return 0;
  if ((r = c->d->CtxPushCurrent(c->ctx)) != CUDA_SUCCESS) return pt_cu_fail(c->d, r, "cuCtxPushCurrent", c->err);
  *pushed = 1;
  return 0;
}

static void leave(pt_cudadev *c, int pushed) {
  CUcontext was;
  if (pushed) c->d->CtxPopCurrent(&was);
}

/* A call's result: PT_EOOM for out of memory, else the driver's text. */
static int result(pt_cudadev *c, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 0;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    pt_cu_fail(c->d, r, what, c->err);
    return PT_EOOM;
  }
  return pt_cu_fail(c->d, r, what, c->err);
}

/* Before memory goes back to the driver: the work queued on it done. */
static CUresult quiesce(pt_cudadev *c) {
  if (!c->pending) return CUDA_SUCCESS;
  CUresult r = c->d->CtxSynchronize();
  if (r == CUDA_SUCCESS) c->pending = 0;
  return r;
}

/*
 * Memory from before the run.  The trace names it by the recorded
 * addresses, which mean nothing in this process: each adopted range is made
 * here with the VMM API (a VA reservation asked at the recorded address, so
 * usually no translation is needed; handles mapped into it) and every
 * address the mechanism names inside it is translated to where the GPU put
 * it.  A cudaMalloc'd segment is stood in for by one handle, given back at
 * its free.
 */
static struct adopted *adopted_at(const pt_cudadev *c, uint64_t va) {
  for (size_t i = 0; i < c->nadopted; i++)
    if (va >= c->adopted[i].at && va - c->adopted[i].at < c->adopted[i].bytes) return &c->adopted[i];
  return NULL;
}

static inline uint64_t tr(const pt_cudadev *c, uint64_t va) {
  if (!c->nadopted) return va;
  const struct adopted *a = adopted_at(c, va);
  return a ? a->real + (va - a->at) : va;
}

/* A new range [p, p+bytes) the GPU handed out that overlaps a trace address of an adopted range moved
   elsewhere: the mechanism would see two blocks at one address. */
static int clashes(const pt_cudadev *c, uint64_t p, uint64_t bytes) {
  for (size_t i = 0; i < c->nadopted; i++) {
    const struct adopted *a = &c->adopted[i];
    if (a->real != a->at && p < a->at + a->bytes && a->at < p + bytes) return 1;
  }
  return 0;
}

static int clash_error(pt_cudadev *c, uint64_t p, uint64_t bytes) {
  return pt_err_set(c->err, PT_EIO,
                    "the GPU handed out 0x%llx (%llu bytes), inside a segment the trace began with at an address this "
                    "process could not reserve; the mechanism would see two blocks at one address",
                    (unsigned long long)p, (unsigned long long)bytes);
}

#define CALL(c, what, expr)           \
  do {                                \
    int pushed_, rc_ = enter(c, &pushed_); \
    if (rc_ < 0) return rc_;          \
    CUresult r_ = (expr);             \
    leave(c, pushed_);                \
    return result(c, r_, what);       \
  } while (0)

static int cd_malloc(void *st, uint64_t bytes, uint64_t *addr) {
  pt_cudadev *c = st;
  CUdeviceptr p = 0;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = c->d->MemAlloc(&p, (size_t)bytes);
  if (r == CUDA_SUCCESS && clashes(c, p, bytes)) {
    c->d->MemFree(p);
    leave(c, pushed);
    return clash_error(c, p, bytes);
  }
  leave(c, pushed);
  *addr = (uint64_t)p;
  return result(c, r, "cuMemAlloc");
}

static void adopted_drop(pt_cudadev *c, struct adopted *a) { *a = c->adopted[--c->nadopted]; }

static int cd_free(void *st, uint64_t addr, uint64_t bytes) {
  pt_cudadev *c = st;
  (void)bytes;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = quiesce(c);
  struct adopted *a = c->nadopted ? adopted_at(c, addr) : NULL;
  if (a && a->whole && a->at == addr) { /* a segment from before the run: its stand-in given back */
    CUdeviceptr real = (CUdeviceptr)a->real;
    if (r == CUDA_SUCCESS) r = c->d->MemUnmap(real, (size_t)a->span);
    if (r == CUDA_SUCCESS) r = c->d->MemRelease(a->whole);
    if (r == CUDA_SUCCESS) r = c->d->MemAddressFree(real, (size_t)a->span);
    if (r == CUDA_SUCCESS) {
      range_drop(c, real);
      adopted_drop(c, a);
    }
  } else if (r == CUDA_SUCCESS) {
    r = c->d->MemFree((CUdeviceptr)addr);
  }
  leave(c, pushed);
  return result(c, r, "cuMemFree");
}

static int cd_address_reserve(void *st, uint64_t bytes, uint64_t align, uint64_t *va) {
  pt_cudadev *c = st;
  CUdeviceptr p = 0;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  /* the driver takes a power of two: the largest one align is a multiple of (20 MiB: 4 MiB) */
  CUresult r = c->d->MemAddressReserve(&p, (size_t)bytes, (size_t)(align & (~align + 1)), 0, 0);
  if (r == CUDA_SUCCESS && clashes(c, p, bytes)) {
    c->d->MemAddressFree(p, (size_t)bytes);
    leave(c, pushed);
    return clash_error(c, p, bytes);
  }
  leave(c, pushed);
  *va = (uint64_t)p;
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemAddressReserve of %llu bytes", (unsigned long long)bytes);
    return result(c, r, what);
  }
  if (range_push(c, p, (size_t)bytes) < 0) {
    c->d->MemAddressFree(p, (size_t)bytes);
    return pt_err_set(c->err, PT_ENOMEM, "out of memory (VA reservations)");
  }
  return 0;
}

static int cd_address_free(void *st, uint64_t va, uint64_t bytes) {
  pt_cudadev *c = st;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  struct adopted *a = c->nadopted ? adopted_at(c, va) : NULL;
  CUdeviceptr real = (CUdeviceptr)tr(c, va);
  if (a && a->at == va) bytes = a->span; /* the range from before the run, as it was reserved here */
  CUresult r = c->d->MemAddressFree(real, (size_t)bytes);
  leave(c, pushed);
  if (r == CUDA_SUCCESS) {
    range_drop(c, real);
    if (a && a->at == va) adopted_drop(c, a);
  }
  return result(c, r, "cuMemAddressFree");
}

static int cd_mem_create(void *st, uint64_t bytes, uint64_t *handle) {
  pt_cudadev *c = st;
  CUmemGenericAllocationHandle h = 0;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = c->d->MemCreate(&h, (size_t)bytes, &c->prop, 0);
  leave(c, pushed);
  if ((rc = result(c, r, "cuMemCreate")) < 0) return rc;
  if (!h) return pt_err_set(c->err, PT_EIO, "cuMemCreate returned handle 0 (the books take 0 for no handle)");
  *handle = (uint64_t)h;
  return 0;
}

static int cd_mem_release(void *st, uint64_t handle, uint64_t bytes) {
  pt_cudadev *c = st;
  (void)bytes;
  CALL(c, "cuMemRelease", c->d->MemRelease((CUmemGenericAllocationHandle)handle));
}

static int cd_mem_map(void *st, uint64_t va, uint64_t bytes, uint64_t handle) {
  pt_cudadev *c = st;
  CALL(c, "cuMemMap", c->d->MemMap((CUdeviceptr)tr(c, va), (size_t)bytes, 0, (CUmemGenericAllocationHandle)handle, 0));
}

static int cd_mem_set_access(void *st, uint64_t va, uint64_t bytes) {
  pt_cudadev *c = st;
  CALL(c, "cuMemSetAccess", c->d->MemSetAccess((CUdeviceptr)tr(c, va), (size_t)bytes, &c->access, 1));
}

static int cd_mem_unmap(void *st, uint64_t va, uint64_t bytes) {
  pt_cudadev *c = st;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = quiesce(c);
  if (r == CUDA_SUCCESS) r = c->d->MemUnmap((CUdeviceptr)tr(c, va), (size_t)bytes);
  leave(c, pushed);
  return result(c, r, "cuMemUnmap");
}

/* The length of handle i of pages of `page` bytes over bytes: page, the last one whole granules. */
static uint64_t piece(uint64_t bytes, uint64_t page, uint64_t i) {
  uint64_t left = bytes - i * page;
  return left < page ? (left + GRANULE - 1) / GRANULE * GRANULE : page;
}

/* The first n handles of map_pages unmapped and released. */
static void unmap_pages(pt_cudadev *c, CUdeviceptr real, uint64_t bytes, uint64_t page, CUmemGenericAllocationHandle *h,
                        uint64_t n) {
  for (uint64_t k = 0; k < n; k++)
    if (h[k]) {
      c->d->MemUnmap(real + k * page, (size_t)piece(bytes, page, k));
      c->d->MemRelease(h[k]);
    }
}

/* Handles of page bytes (a granule multiple) mapped from real on over bytes, access set; CUDA_SUCCESS, or the
   driver's failure with everything made here given back. */
static CUresult map_pages(pt_cudadev *c, CUdeviceptr real, uint64_t bytes, uint64_t page, CUmemGenericAllocationHandle *h) {
  uint64_t n = (bytes + page - 1) / page, i = 0;
  CUresult r = CUDA_SUCCESS;
  for (; i < n && r == CUDA_SUCCESS; i++) {
    h[i] = 0;
    if ((r = c->d->MemCreate(&h[i], (size_t)piece(bytes, page, i), &c->prop, 0)) != CUDA_SUCCESS) h[i] = 0;
    else if ((r = c->d->MemMap(real + i * page, (size_t)piece(bytes, page, i), 0, h[i], 0)) != CUDA_SUCCESS) {
      c->d->MemRelease(h[i]);
      h[i] = 0;
    }
  }
  if (r == CUDA_SUCCESS) r = c->d->MemSetAccess(real, (size_t)((bytes + GRANULE - 1) / GRANULE * GRANULE), &c->access, 1);
  if (r != CUDA_SUCCESS) unmap_pages(c, real, bytes, page, h, i);
  return r;
}

static int cd_adopt(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles) {
  pt_cudadev *c = st;
  if (!bytes || (page && page % GRANULE))
    return pt_err_set(c->err, PT_EUSAGE, "memory from before the run at 0x%llx: %llu bytes in pages of %llu, not 2 MiB granules",
                      (unsigned long long)addr, (unsigned long long)bytes, (unsigned long long)page);
  if (adopted_at(c, addr) || adopted_at(c, addr + bytes - 1))
    return pt_err_set(c->err, PT_EUSAGE, "memory from before the run at 0x%llx overlaps another", (unsigned long long)addr);
  struct adopted *v = realloc(c->adopted, (c->nadopted + 1) * sizeof *v);
  if (!v) return pt_err_set(c->err, PT_ENOMEM, "out of memory (adopted ranges)");
  c->adopted = v;
  uint64_t span = (bytes + GRANULE - 1) / GRANULE * GRANULE, each = page ? page : span, n = (bytes + each - 1) / each;
  CUmemGenericAllocationHandle *h = calloc(n, sizeof *h);
  if (!h) return pt_err_set(c->err, PT_ENOMEM, "out of memory (adopted handles)");
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) {
    free(h);
    return rc;
  }
  CUdeviceptr real = 0;
  CUresult r = c->d->MemAddressReserve(&real, (size_t)span, GRANULE, (CUdeviceptr)addr, 0);
  if (r == CUDA_SUCCESS && real != addr && clashes(c, real, span)) {
    c->d->MemAddressFree(real, (size_t)span);
    leave(c, pushed);
    free(h);
    return clash_error(c, real, span);
  }
  if (r == CUDA_SUCCESS && (r = map_pages(c, real, bytes, each, h)) != CUDA_SUCCESS) c->d->MemAddressFree(real, (size_t)span);
  if (r == CUDA_SUCCESS && range_push(c, real, (size_t)span) < 0) {
    unmap_pages(c, real, bytes, each, h, n);
    c->d->MemAddressFree(real, (size_t)span);
    leave(c, pushed);
    free(h);
    return pt_err_set(c->err, PT_ENOMEM, "out of memory (VA reservations)");
  }
  leave(c, pushed);
  if (r != CUDA_SUCCESS) {
    free(h);
    char what[128];
    snprintf(what, sizeof what, "making the %llu bytes at 0x%llx the trace began with", (unsigned long long)bytes,
             (unsigned long long)addr);
    return result(c, r, what);
  }
  c->adopted[c->nadopted++] = (struct adopted){addr, (uint64_t)real, bytes, span, page ? 0 : h[0]};
  for (uint64_t k = 0; page && k < n; k++) handles[k] = (uint64_t)h[k];
  free(h);
  return 0;
}

const pt_dev_ops pt_cudadev_ops = {
    .name = "cuda",
    .malloc = cd_malloc,
    .free = cd_free,
    .address_reserve = cd_address_reserve,
    .address_free = cd_address_free,
    .mem_create = cd_mem_create,
    .mem_release = cd_mem_release,
    .mem_map = cd_mem_map,
    .mem_set_access = cd_mem_set_access,
    .mem_unmap = cd_mem_unmap,
    .adopt = cd_adopt,
};

int pt_cudadev_open(pt_driver *d, int device, pt_err *err, pt_cudadev **out) {
  *out = NULL;
  pt_cudadev *c = calloc(1, sizeof *c);
  if (!c) return pt_err_set(err, PT_ENOMEM, "out of memory");
  c->d = d;
  c->ordinal = device;
  c->err = err;
  CUresult r;
  int count = 0;
  if ((r = d->DeviceGetCount(&count)) != CUDA_SUCCESS) {
    free(c);
    return pt_cu_fail(d, r, "cuDeviceGetCount", err);
  }
  if (device < 0 || device >= count) {
    free(c);
    return pt_err_set(err, PT_ENODEV, "no GPU %d: the driver sees %d", device, count);
  }
  if ((r = d->DeviceGet(&c->dev, device)) != CUDA_SUCCESS || (r = d->DevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
    free(c);
    return pt_cu_fail(d, r, "cuDevicePrimaryCtxRetain", err);
  }
  c->prop = pt_cu_handle_prop_on(device);
  c->access = pt_cu_access_on(device);
  size_t gran = 0;
  if ((r = d->MemGetAllocationGranularity(&gran, &c->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS) {
    pt_cudadev_close(c);
    return pt_cu_fail(d, r, "cuMemGetAllocationGranularity", err);
  }
  if (gran == 0 || (UINT64_C(2) << 20) % gran) {
    pt_cudadev_close(c);
    return pt_err_set(err, PT_ENODEV, "GPU %d maps memory in %zu-byte granules; the mechanisms need 2 MiB to be whole granules",
                      device, gran);
  }
  *out = c;
  return 0;
}

void pt_cudadev_close(pt_cudadev *c) {
  if (!c) return;
  if (c->nranges) {
    int pushed;
    if (enter(c, &pushed) == 0) {
      c->d->CtxSynchronize();
      for (size_t i = 0; i < c->nadopted; i++) /* stand-ins for segments never freed; their VA goes below */
        if (c->adopted[i].whole) {
          c->d->MemUnmap((CUdeviceptr)c->adopted[i].real, (size_t)c->adopted[i].span);
          c->d->MemRelease(c->adopted[i].whole);
        }
      for (size_t i = 0; i < c->nranges; i++) c->d->MemAddressFree(c->ranges[i], c->range_bytes[i]);
      leave(c, pushed);
    }
  }
  if (c->nballast) {
    int pushed;
    if (enter(c, &pushed) == 0) {
      for (size_t i = 0; i < c->nballast; i++) c->d->MemFree(c->ballast[i]);
      leave(c, pushed);
    }
  }
  free(c->ballast);
  free(c->ranges);
  free(c->range_bytes);
  free(c->adopted);
  if (c->ctx) c->d->DevicePrimaryCtxRelease(c->dev);
  free(c);
}

int pt_cudadev_fill(pt_cudadev *c, uint64_t addr, uint64_t words, uint32_t value) {
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = c->d->MemsetD32((CUdeviceptr)tr(c, addr), value, (size_t)words);
  leave(c, pushed);
  if (r == CUDA_SUCCESS) c->pending = 1; /* work on the memory now in flight */
  return result(c, r, "cuMemsetD32");
}

int pt_cudadev_read_word(pt_cudadev *c, uint64_t addr, uint32_t *value) {
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = c->d->MemcpyDtoH(value, (CUdeviceptr)tr(c, addr), sizeof *value);
  leave(c, pushed);
  return result(c, r, "cuMemcpyDtoH");
}

void pt_cudadev_note_free(pt_cudadev *c) { c->pending = 1; }

int pt_cudadev_occupy(pt_cudadev *c, uint64_t leave_free) {
  uint64_t f, t, chunk = UINT64_C(1) << 30;
  int rc = pt_cudadev_mem_info(c, &f, &t);
  if (rc < 0) return rc;
  int pushed;
  if ((rc = enter(c, &pushed)) < 0) return rc;
  while (rc == 0 && chunk >= GRANULE) {
    size_t fr = 0, tot = 0;
    CUresult r = c->d->MemGetInfo(&fr, &tot);
    if (r != CUDA_SUCCESS) {
      rc = result(c, r, "cuMemGetInfo");
      break;
    }
    if (fr < leave_free + chunk) {
      chunk /= 2;
      continue;
    }
    CUdeviceptr *v = realloc(c->ballast, (c->nballast + 1) * sizeof *v);
    if (!v) {
      rc = pt_err_set(c->err, PT_ENOMEM, "out of memory");
      break;
    }
    c->ballast = v;
    if ((r = c->d->MemAlloc(&c->ballast[c->nballast], (size_t)chunk)) == CUDA_SUCCESS) c->nballast++;
    else chunk /= 2;
  }
  leave(c, pushed);
  return rc;
}

int pt_cudadev_mem_info(pt_cudadev *c, uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t f = 0, t = 0;
  int pushed, rc = enter(c, &pushed);
  if (rc < 0) return rc;
  CUresult r = c->d->MemGetInfo(&f, &t);
  leave(c, pushed);
  *free_bytes = f;
  *total_bytes = t;
  return result(c, r, "cuMemGetInfo");
}

#else /* built without the CUDA Toolkit */

struct pt_cudadev {
  int unused;
};

static int cd_none(pt_err *err) { return pt_err_set(err, PT_ENODEV, "no GPU support in this build"); }

const pt_dev_ops pt_cudadev_ops = {.name = "cuda"};

int pt_cudadev_open(pt_driver *d, int device, pt_err *err, pt_cudadev **out) {
  (void)d, (void)device;
  *out = NULL;
  return cd_none(err);
}

void pt_cudadev_close(pt_cudadev *c) { (void)c; }

int pt_cudadev_fill(pt_cudadev *c, uint64_t addr, uint64_t words, uint32_t value) {
  (void)c, (void)addr, (void)words, (void)value;
  return PT_ENODEV;
}

int pt_cudadev_read_word(pt_cudadev *c, uint64_t addr, uint32_t *value) {
  (void)c, (void)addr;
  *value = 0;
  return PT_ENODEV;
}
void pt_cudadev_note_free(pt_cudadev *c) { (void)c; }

int pt_cudadev_occupy(pt_cudadev *c, uint64_t leave_free) {
  (void)c, (void)leave_free;
  return PT_ENODEV;
}

int pt_cudadev_mem_info(pt_cudadev *c, uint64_t *free_bytes, uint64_t *total_bytes) {
  (void)c;
  *free_bytes = *total_bytes = 0;
  return PT_ENODEV;
}

#endif
