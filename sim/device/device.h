/*
 * device.h — the modelled GPU as the driver shows it to an allocator: every
 * call a mechanism makes (cudaMalloc/cudaFree, the VMM calls), the physical
 * bytes held ("reserved"), an optional cap (--capacity, PyTorch's
 * set_per_process_memory_fraction), and where new segments land.
 *
 * Addresses: the real allocator's segment_alloc records give the addresses
 * cudaMalloc returned.  While the model's k-th cudaMalloc asks for the same
 * size as the real k-th one, it gets the same address (best fit breaks ties
 * by address, so this keeps a faithful model on the real run's path); after
 * the first disagreement, or with no hints, addresses are invented upward
 * from a base far from real ones.
 */
#ifndef PT_DEVICE_H
#define PT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
struct pt_pagetable; /* the page-table model (gpu/pagetable.h), when the run has one */

/* X(name): the driver calls the model counts; the JSON keys of driver_calls. */
#define PT_DRIVER_CALLS(X) \
  X(malloc)                \
  X(free)                  \
  X(mem_create)            \
  X(mem_map)               \
  X(mem_set_access)        \
  X(mem_unmap)             \
  X(mem_release)           \
  X(address_reserve)       \
  X(address_free)

enum pt_drv_call {
#define PT_X(n) PT_DRV_##n,
  PT_DRIVER_CALLS(PT_X)
#undef PT_X
  PT_DRV_NCALLS
};

/*
 * The calls the model made, in order, when a run asks for them: what
 * `pagetune replay` makes on a real GPU.  call is a pt_drv_call, or
 * PT_DRV_ADOPT for a segment that existed before the trace began (the
 * replay makes it first, untimed).  va is the model's address (0 for
 * mem_create and mem_release, which name no address).  A map with src maps
 * again the handle mapped at src (stitching: one physical page at two
 * addresses); src is 0 otherwise.
 */
#define PT_DRV_ADOPT PT_DRV_NCALLS
typedef struct pt_dev_call {
  uint64_t va, bytes;
  int call;
  uint64_t src;
} pt_dev_call;

typedef struct pt_dev_log {
  pt_dev_call *v;
  size_t n, cap;
} pt_dev_log;

void pt_dev_log_free(pt_dev_log *log);

/*
 * Calls by kind and size class (class k: sizes in [2^k, 2^(k+1)), class 0
 * also 0 and 1): what a cost that is not linear in size needs (cost.h).
 */
#define PT_SIZE_CLASSES 64
typedef struct pt_call_sizes {
  uint64_t calls[PT_DRV_NCALLS][PT_SIZE_CLASSES];
  uint64_t bytes[PT_DRV_NCALLS][PT_SIZE_CLASSES];
} pt_call_sizes;

typedef struct pt_addr_hint {
  uint64_t addr, bytes;
} pt_addr_hint;

/* Address ranges held in an array, in no order: few, and changed rarely. */
typedef struct pt_dev_ranges {
  pt_addr_hint *v;
  size_t n, cap;
} pt_dev_ranges;

typedef struct pt_device {
  uint64_t capacity;                 /* 0: no cap */
  uint64_t reserved, peak_reserved;  /* physical bytes held: segments + created handles */
  uint64_t calls[PT_DRV_NCALLS];
  uint64_t call_bytes[PT_DRV_NCALLS];/* bytes passed to each kind of call, summed */
  pt_call_sizes sizes;               /* the same by size class */
  uint64_t segments_allocated;       /* cudaMalloc calls + cuMemCreate calls */
  uint64_t bytes_mapped_total;
  const pt_addr_hint *hints;         /* recorded cudaMalloc results, in order */
  size_t nhints, next_hint;
  int hints_followed;                /* still on the recorded path */
  /* while on it: the segments held, so that a recorded address the model
     still holds (the real run had freed it; the model has not) ends the
     path instead of placing a second segment there */
  pt_dev_ranges held;
  /* live VMM maps: a cuMemSetAccess costs what setting each handle in its
     range does (~23-37 us a 2 MiB handle on the H200), so its cost is
     counted by the maps it covers, not by its bytes (sizes) */
  pt_dev_ranges maps;
  uint64_t next_va;                  /* invented addresses start here */
  /* called after every change of reserved (timelines); may be NULL */
  void (*on_change)(void *ctx);
  void *ctx;
  /*
   * Optional page-table model: every cudaMalloc segment and every VMM map is
   * mapped in it, with the page size page_size(page_ctx, bytes) gives (the
   * policy's hook) or the driver's default: 2 MiB pages for cudaMalloc
   * segments of 2 MiB or more and for VMM handles, 64 KiB below.  A failure
   * (a hook error; a mechanism out of memory, pt_mech_set_insert) is kept in
   * error/err and stops the run.
   */
  struct pt_pagetable *pt;
  int (*page_size)(void *page_ctx, uint64_t bytes, uint64_t *out, pt_err *err);
  void *page_ctx;
  int error;
  pt_err *err;
  pt_dev_log *log;                   /* NULL: calls are counted, not logged */
} pt_device;

void pt_dev_init(pt_device *d, uint64_t capacity, const pt_addr_hint *hints, size_t nhints);
/* What the device keeps besides its counters (the recorded path, the live maps), freed. */
void pt_dev_done(pt_device *d);
/* 1 when bytes more would pass the cap. */
int pt_dev_would_exceed(const pt_device *d, uint64_t bytes);

/* cudaMalloc: 0 with *addr, or PT_EOOM past the cap (no call counted then). */
int pt_dev_malloc(pt_device *d, uint64_t bytes, uint64_t *addr /* OUT */);
void pt_dev_free(pt_device *d, uint64_t addr, uint64_t bytes);
/* A segment that exists before the trace starts: held, but no call made. */
void pt_dev_adopt(pt_device *d, uint64_t bytes);
/* The same, mapping it in the page-table model at addr. */
void pt_dev_adopt_at(pt_device *d, uint64_t addr, uint64_t bytes);

/* VMM: reserve VA (no physical bytes), create/release physical handles, map. */
uint64_t pt_dev_address_reserve(pt_device *d, uint64_t bytes, uint64_t align);
void pt_dev_address_free(pt_device *d, uint64_t va, uint64_t bytes);
int pt_dev_mem_create(pt_device *d, uint64_t bytes);  /* 0 or PT_EOOM */
void pt_dev_mem_release(pt_device *d, uint64_t bytes);
void pt_dev_mem_map(pt_device *d, uint64_t va, uint64_t bytes);
/* Map at va the handle already mapped at src_va (a second mapping of the same memory); src_va 0: a handle of its own, as pt_dev_mem_map. */
void pt_dev_mem_map_alias(pt_device *d, uint64_t va, uint64_t bytes, uint64_t src_va);
void pt_dev_mem_set_access(pt_device *d, uint64_t va, uint64_t bytes);
void pt_dev_mem_unmap(pt_device *d, uint64_t va, uint64_t bytes);

#endif
