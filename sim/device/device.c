/* device.c — the books kept above every device: bytes, cap, calls, live maps, the call log (see device.h). */
#include "device.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *const pt_drv_call_names[PT_DRV_NCALLS] = {
#define PT_X(n) #n,
    PT_DRIVER_CALLS(PT_X)
#undef PT_X
};

void pt_dev_init(pt_device *d, const pt_dev_ops *ops, void *st, uint64_t capacity, pt_err *err) {
  memset(d, 0, sizeof *d);
  d->ops = ops;
  d->st = st;
  d->capacity = capacity;
  d->err = err;
}

void pt_dev_done(pt_device *d) {
  free(d->maps);
  d->maps = NULL;
  d->nmaps = d->cap_maps = 0;
  pt_u64map_free(&d->at);
}

void pt_call_log_free(pt_call_log *log) {
  free(log->v);
  *log = (pt_call_log){0};
}

void pt_call_tlog_free(pt_call_tlog *tl) {
  free(tl->v);
  *tl = (pt_call_tlog){0};
}

/* v (*cap elements of elem bytes, len used) reallocated to hold n more, *cap updated; NULL (v kept, the
   error described with what it was for) when there is no memory. */
static void *grow(pt_device *d, void *v, size_t *cap, size_t len, size_t n, size_t elem, size_t first, const char *what) {
  size_t c = *cap ? 2 * *cap : first;
  while (c - len < n) c *= 2;
  void *nv = c <= SIZE_MAX / elem ? realloc(v, c * elem) : NULL;
  if (!nv) pt_err_set(d->err, PT_ENOMEM, "out of memory (%s)", what);
  else *cap = c;
  return nv;
}

void pt_dev_tlog_add(pt_device *d, enum pt_drv_call c, uint64_t bytes) {
  pt_call_tlog *tl = d->tlog;
  if (tl->n == tl->cap) {
    pt_call_timing *v = grow(d, tl->v, &tl->cap, tl->n, 1, sizeof *v, 4096, "call times");
    if (!v) { /* the run goes on: the entry is counted lost (grow's message is not an error of the run) */
      tl->lost++;
      return;
    }
    tl->v = v;
  }
  tl->v[tl->n++] = (pt_call_timing){bytes, d->call_us, (int)c, !d->untimed};
}

int pt_dev_log_grow(pt_device *d, size_t n) {
  pt_call_log *log = d->log;
  pt_dev_call *v = grow(d, log->v, &log->cap, log->n, n, sizeof *v, 256, "driver call log");
  if (!v) return PT_ENOMEM;
  log->v = v;
  return 0;
}

/* Room for n more live maps. */
static int maps_room(pt_device *d, size_t n) {
  if (d->cap_maps - d->nmaps >= n) return 0;
  pt_dev_map *v = grow(d, d->maps, &d->cap_maps, d->nmaps, n, sizeof *v, 64, "live maps");
  if (!v) return PT_ENOMEM;
  d->maps = v;
  return 0;
}

/* A live map at va added (room made first): 0, or PT_ENOMEM, or PT_EUSAGE for a second one there (the driver
   refuses to map over a mapping), nothing changed. */
static int maps_add(pt_device *d, pt_dev_map m) {
  if (pt_u64map_get(&d->at, m.va))
    return pt_err_set(d->err, PT_EUSAGE, "a map at 0x%llx, which is mapped", (unsigned long long)m.va);
  if (pt_u64map_put(&d->at, m.va, d->nmaps + 1) < 0) return pt_err_set(d->err, PT_ENOMEM, "out of memory (live maps)");
  d->maps[d->nmaps++] = m;
  return 0;
}

/* The live map at va taken out: its handle, or 0 when none is there. */
static uint64_t maps_drop(pt_device *d, uint64_t va) {
  uint64_t *at = pt_u64map_get(&d->at, va);
  if (!at) return 0;
  size_t i = (size_t)*at - 1;
  uint64_t h = d->maps[i].handle;
  pt_u64map_del(&d->at, va);
  if (i != --d->nmaps) { /* the last one fills the hole */
    d->maps[i] = d->maps[d->nmaps];
    *pt_u64map_get(&d->at, d->maps[i].va) = i + 1;
  }
  return h;
}

int pt_dev_address_reserve(pt_device *d, uint64_t bytes, uint64_t align, uint64_t *va) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->address_reserve(d->st, bytes, align, va))) < 0) return rc;
  pt_dev_count(d, PT_DRV_address_reserve, *va, bytes, 0);
  return 0;
}

int pt_dev_address_free(pt_device *d, uint64_t va, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->address_free(d->st, va, bytes))) < 0) return rc;
  pt_dev_count(d, PT_DRV_address_free, va, bytes, 0);
  return 0;
}

int pt_dev_mem_create(pt_device *d, uint64_t bytes, uint64_t *handle) {
  if (pt_dev_would_exceed(d, bytes)) return PT_EOOM;
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->mem_create(d->st, bytes, handle))) < 0) return rc;
  pt_dev_count(d, PT_DRV_mem_create, 0, bytes, *handle);
  d->segments_allocated++;
  pt_dev_reserved_add(d, bytes);
  return 0;
}

int pt_dev_mem_release(pt_device *d, uint64_t handle, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->mem_release(d->st, handle, bytes))) < 0) return rc;
  pt_dev_count(d, PT_DRV_mem_release, 0, bytes, handle);
  pt_dev_reserved_sub(d, bytes);
  return 0;
}

int pt_dev_mem_map(pt_device *d, uint64_t va, uint64_t bytes, uint64_t handle) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0 || (rc = maps_room(d, 1)) < 0 || (rc = maps_add(d, (pt_dev_map){va, bytes, handle})) < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->mem_map(d->st, va, bytes, handle))) < 0) {
    maps_drop(d, va); /* the books as they were */
    return rc;
  }
  pt_dev_count(d, PT_DRV_mem_map, va, bytes, handle);
  d->bytes_mapped_total += bytes;
  return 0;
}

int pt_dev_mem_set_access(pt_device *d, uint64_t va, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->mem_set_access(d->st, va, bytes))) < 0) return rc;
  pt_dev_count_only(d, PT_DRV_mem_set_access, va, bytes, 0);
  int covered = 0;
  for (size_t i = 0; i < d->nmaps; i++) covered += d->maps[i].va >= va && d->maps[i].va - va < bytes;
  if (covered) d->call_us /= covered; /* the call's time, an equal share a handle */
  for (size_t i = 0; i < d->nmaps; i++)
    if (d->maps[i].va >= va && d->maps[i].va - va < bytes) pt_dev_cost_at(d, PT_DRV_mem_set_access, d->maps[i].bytes);
  if (!covered) pt_dev_cost_at(d, PT_DRV_mem_set_access, bytes); /* no map known there: the range as one */
  return 0;
}

int pt_dev_mem_unmap(pt_device *d, uint64_t va, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0) return rc;
  double t0 = pt_dev_clock(d);
  if ((rc = pt_dev_took(d, t0, d->ops->mem_unmap(d->st, va, bytes))) < 0) return rc;
  pt_dev_count(d, PT_DRV_mem_unmap, va, bytes, maps_drop(d, va));
  return 0;
}

int pt_dev_adopt(pt_device *d, uint64_t addr, uint64_t bytes) {
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0 || (rc = d->ops->adopt(d->st, addr, bytes, 0, NULL)) < 0) return rc;
  pt_dev_reserved_add(d, bytes);
  pt_dev_log_call(d, PT_DRV_ADOPT, addr, bytes, 0);
  return 0;
}

int pt_dev_adopt_mapped(pt_device *d, uint64_t va, uint64_t bytes, uint64_t page, uint64_t *handles) {
  if (!page) return pt_err_set(d->err, PT_EUSAGE, "adopted VMM pages of 0 bytes");
  uint64_t n = bytes / page + (bytes % page != 0);
  int rc = pt_dev_log_room(d, 1);
  if (rc < 0 || (rc = maps_room(d, (size_t)n)) < 0) return rc;
  size_t first = d->nmaps; /* the books first, their handles once the device says */
  for (uint64_t i = 0; rc == 0 && i < n; i++) {
    uint64_t off = i * page;
    rc = maps_add(d, (pt_dev_map){va + off, bytes - off < page ? bytes - off : page, 0});
  }
  if (rc == 0) rc = d->ops->adopt(d->st, va, bytes, page, handles);
  if (rc < 0) {
    while (d->nmaps > first) maps_drop(d, d->maps[d->nmaps - 1].va);
    return rc;
  }
  for (uint64_t i = 0; i < n; i++) d->maps[first + i].handle = handles[i];
  pt_dev_reserved_add(d, bytes);
  pt_dev_log_call(d, PT_DRV_ADOPT, va, bytes, 0);
  return 0;
}
