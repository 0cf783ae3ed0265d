/* device.c — the modelled driver: counts, reserved bytes, cap, addresses (see device.h). */
#include "device.h"
#include "pagetable.h"

#include <stdlib.h>
#include <string.h>

#include "mech.h"

#define INVENTED_BASE (UINT64_C(1) << 46) /* below CUDA's (~2^47), inside MMU v2's 49-bit VA */
#define VA_ALIGN (UINT64_C(2) << 20)

void pt_dev_init(pt_device *d, uint64_t capacity, const pt_addr_hint *hints, size_t nhints) {
  memset(d, 0, sizeof *d);
  d->capacity = capacity;
  d->hints = hints;
  d->nhints = nhints;
  d->hints_followed = nhints > 0;
  d->next_va = INVENTED_BASE;
}

static int ranges_push(pt_dev_ranges *r, uint64_t addr, uint64_t bytes) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    pt_addr_hint *v = realloc(r->v, cap * sizeof *v);
    if (!v) return PT_ENOMEM;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (pt_addr_hint){addr, bytes};
  return 0;
}

static void ranges_drop(pt_dev_ranges *r, uint64_t addr) {
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i].addr == addr) {
      r->v[i] = r->v[--r->n];
      return;
    }
}

static void ranges_free(pt_dev_ranges *r) {
  free(r->v);
  *r = (pt_dev_ranges){0};
}

void pt_dev_done(pt_device *d) {
  ranges_free(&d->held);
  ranges_free(&d->maps);
}

/* Off the recorded path for good: addresses are invented from here on. */
static void leave_path(pt_device *d) {
  d->hints_followed = 0;
  ranges_free(&d->held);
}

static int overlaps_held(const pt_device *d, uint64_t addr, uint64_t bytes) {
  for (size_t i = 0; i < d->held.n; i++)
    if (addr < d->held.v[i].addr + d->held.v[i].bytes && d->held.v[i].addr < addr + bytes) return 1;
  return 0;
}

/* A segment held while on the recorded path; without memory to keep the list, leave the path
   (invented addresses are always safe). */
static void hold(pt_device *d, uint64_t addr, uint64_t bytes) {
  if (d->hints_followed && ranges_push(&d->held, addr, bytes) < 0) leave_path(d);
}

int pt_dev_would_exceed(const pt_device *d, uint64_t bytes) {
  return d->capacity && (bytes > d->capacity || d->reserved > d->capacity - bytes);
}

static void held(pt_device *d, uint64_t bytes) {
  d->reserved += bytes;
  if (d->reserved > d->peak_reserved) d->peak_reserved = d->reserved;
  if (d->on_change) d->on_change(d->ctx);
}

static void released(pt_device *d, uint64_t bytes) {
  d->reserved -= bytes < d->reserved ? bytes : d->reserved;
  if (d->on_change) d->on_change(d->ctx);
}

static void log_call(pt_device *d, int c, uint64_t va, uint64_t bytes, uint64_t src) {
  pt_dev_log *log = d->log;
  if (log->n == log->cap) {
    size_t cap = log->cap ? 2 * log->cap : 256;
    pt_dev_call *v = realloc(log->v, cap * sizeof *v);
    if (!v) { /* kept, and it stops the run */
      if (!d->error) d->error = pt_err_set(d->err, PT_ENOMEM, "out of memory (driver call log)");
      return;
    }
    log->v = v;
    log->cap = cap;
  }
  log->v[log->n++] = (pt_dev_call){va, bytes, c, src};
}

/* One call's worth of cost, at a size (pt_call_sizes). */
static inline void cost_at(pt_device *d, enum pt_drv_call c, uint64_t bytes) {
  int k = 63 - __builtin_clzll(bytes | 1);
  d->sizes.calls[c][k]++;
  d->sizes.bytes[c][k] += bytes;
}

/* src: for a map, the address whose handle it maps again (0: none) */
static inline void count_only(pt_device *d, enum pt_drv_call c, uint64_t va, uint64_t bytes, uint64_t src) {
  d->calls[c]++;
  d->call_bytes[c] += bytes;
  if (d->log) log_call(d, (int)c, va, bytes, src);
}

static inline void count(pt_device *d, enum pt_drv_call c, uint64_t va, uint64_t bytes) {
  count_only(d, c, va, bytes, 0);
  cost_at(d, c, bytes);
}

void pt_dev_log_free(pt_dev_log *log) {
  free(log->v);
  *log = (pt_dev_log){0};
}

static uint64_t invent(pt_device *d, uint64_t bytes, uint64_t align) {
  uint64_t va = (d->next_va + align - 1) & ~(align - 1);
  d->next_va = va + bytes;
  return va;
}

/* Map [va, va+bytes) in the page-table model, if there is one. */
static void pt_map(pt_device *d, uint64_t va, uint64_t bytes, int vmm) {
  if (!d->pt || d->error) return;
  uint64_t page = vmm || bytes >= (UINT64_C(2) << 20) ? UINT64_C(2) << 20 : UINT64_C(64) << 10;
  if (d->page_size && (d->error = d->page_size(d->page_ctx, bytes, &page, d->err)) < 0) return;
  uint64_t start = va & ~(UINT64_C(4095)), len = ((va + bytes + 4095) & ~UINT64_C(4095)) - start;
  d->error = pt_pagetable_map(d->pt, start, len, page, len, d->err);
}

static void pt_unmap(pt_device *d, uint64_t va, uint64_t bytes) {
  if (!d->pt || d->error) return;
  uint64_t start = va & ~(UINT64_C(4095)), len = ((va + bytes + 4095) & ~UINT64_C(4095)) - start;
  d->error = pt_pagetable_unmap(d->pt, start, len, d->err);
}

int pt_dev_malloc(pt_device *d, uint64_t bytes, uint64_t *addr) {
  if (pt_dev_would_exceed(d, bytes)) return PT_EOOM;
  if (d->hints_followed && d->next_hint < d->nhints && d->hints[d->next_hint].bytes == bytes &&
      !overlaps_held(d, d->hints[d->next_hint].addr, bytes)) {
    *addr = d->hints[d->next_hint++].addr;
    hold(d, *addr, bytes);
  } else {
    if (d->hints_followed) leave_path(d);
    *addr = invent(d, bytes, VA_ALIGN);
  }
  count(d, PT_DRV_malloc, *addr, bytes);
  d->segments_allocated++;
  held(d, bytes);
  pt_map(d, *addr, bytes, 0);
  return 0;
}

void pt_dev_free(pt_device *d, uint64_t addr, uint64_t bytes) {
  if (d->hints_followed) ranges_drop(&d->held, addr);
  pt_unmap(d, addr, bytes);
  count(d, PT_DRV_free, addr, bytes);
  released(d, bytes);
}

void pt_dev_adopt(pt_device *d, uint64_t bytes) { held(d, bytes); }

void pt_dev_adopt_at(pt_device *d, uint64_t addr, uint64_t bytes) {
  held(d, bytes);
  hold(d, addr, bytes);
  if (d->log) log_call(d, PT_DRV_ADOPT, addr, bytes, 0);
  pt_map(d, addr, bytes, 0);
}

uint64_t pt_dev_address_reserve(pt_device *d, uint64_t bytes, uint64_t align) {
  uint64_t va = invent(d, bytes, align > VA_ALIGN ? align : VA_ALIGN);
  count(d, PT_DRV_address_reserve, va, bytes);
  return va;
}

void pt_dev_address_free(pt_device *d, uint64_t va, uint64_t bytes) {
  count(d, PT_DRV_address_free, va, bytes);
}

int pt_dev_mem_create(pt_device *d, uint64_t bytes) {
  if (pt_dev_would_exceed(d, bytes)) return PT_EOOM;
  count(d, PT_DRV_mem_create, 0, bytes);
  d->segments_allocated++;
  held(d, bytes);
  return 0;
}

void pt_dev_mem_release(pt_device *d, uint64_t bytes) {
  count(d, PT_DRV_mem_release, 0, bytes);
  released(d, bytes);
}

void pt_dev_mem_map_alias(pt_device *d, uint64_t va, uint64_t bytes, uint64_t src_va) {
  pt_map(d, va, bytes, 1);
  count_only(d, PT_DRV_mem_map, va, bytes, src_va);
  cost_at(d, PT_DRV_mem_map, bytes);
  d->bytes_mapped_total += bytes;
  if (ranges_push(&d->maps, va, bytes) < 0 && !d->error) /* kept, and it stops the run */
    d->error = pt_err_set(d->err, PT_ENOMEM, "out of memory (live maps)");
}

void pt_dev_mem_map(pt_device *d, uint64_t va, uint64_t bytes) { pt_dev_mem_map_alias(d, va, bytes, 0); }

void pt_dev_mem_set_access(pt_device *d, uint64_t va, uint64_t bytes) {
  count_only(d, PT_DRV_mem_set_access, va, bytes, 0);
  int covered = 0;
  for (size_t i = 0; i < d->maps.n; i++)
    if (d->maps.v[i].addr >= va && d->maps.v[i].addr - va < bytes) {
      cost_at(d, PT_DRV_mem_set_access, d->maps.v[i].bytes);
      covered = 1;
    }
  if (!covered) cost_at(d, PT_DRV_mem_set_access, bytes); /* no map known there: the range as one */
}

void pt_dev_mem_unmap(pt_device *d, uint64_t va, uint64_t bytes) {
  pt_unmap(d, va, bytes);
  count(d, PT_DRV_mem_unmap, va, bytes);
  ranges_drop(&d->maps, va);
}
