/* calllog.c — resolving a run's driver calls into ids a replay can keep (see calllog.h). */
#include "calllog.h"

#include <stdlib.h>

#include "u64map.h"

typedef struct walk {
  const pt_call_log *log;
  pt_u64map allocs;       /* address -> id of the newest live allocation there */
  size_t *under;          /* per allocation id: the live one at its address before it, or NONE */
  pt_u64map maps;         /* VA -> handle id mapped there */
  pt_u64map handles;      /* the device's handle -> handle id, while not released */
  size_t *ranges, nranges;   /* live reservations (call ids) */
  size_t *adopted, nadopted; /* memory from before the trace */
  uint32_t *maps_of;         /* per handle id: its live maps (more than one when aliased) */
  uint32_t *maps_in;         /* per reservation id: its live maps */
} walk;

#define NONE ((size_t)-1)

static int bad(pt_err *err, size_t i, const char *why) {
  return pt_err_set(err, PT_EFORMAT, "driver call %zu: %s", i, why);
}

/* A VMM call that does not resolve: say so, and why it may be, when the trace began with segments. */
static int bad_vmm(const walk *w, pt_err *err, size_t i, const char *why) {
  if (!w->nadopted) return bad(err, i, why);
  return pt_err_set(err, PT_EFORMAT,
                    "driver call %zu: %s; the trace begins with segments, and a replay makes those with "
                    "cuMemAlloc only: VMM segments from before the trace (expandable, async_pool) are not replayed",
                    i, why);
}

/* The live reservation holding [va, va + bytes), or -1. */
static long range_of(const walk *w, uint64_t va, uint64_t bytes) {
  for (size_t k = 0; k < w->nranges; k++) {
    const pt_dev_call *r = &w->log->v[w->ranges[k]];
    if (va >= r->va && bytes <= r->bytes && va - r->va <= r->bytes - bytes) return (long)k;
  }
  return -1;
}

static int in_adopted(const walk *w, uint64_t va) {
  for (size_t k = 0; k < w->nadopted; k++) {
    const pt_dev_call *a = &w->log->v[w->adopted[k]];
    if (va >= a->va && va - a->va < a->bytes) return 1;
  }
  return 0;
}

static void drop(size_t *v, size_t *n, size_t k) { v[k] = v[--*n]; }

/* The id of a live handle, or NONE. */
static size_t handle_id(walk *w, uint64_t handle) {
  const uint64_t *slot = pt_u64map_get(&w->handles, handle);
  return slot ? (size_t)*slot : NONE;
}

#define CALL(f, ...) (ops->f ? ops->f(ops->ctx, __VA_ARGS__) : 0)

static int step(walk *w, size_t i, const pt_call_log_ops *ops, pt_err *err) {
  const pt_dev_call *c = &w->log->v[i];
  uint64_t *slot;
  long k;
  switch (c->call) {
  case PT_DRV_ADOPT:
  case PT_DRV_malloc:
    /* following the real run's addresses, the model may get one it still holds (the real allocator
       had freed and reused it): both live, the newer on top; the replay never uses model addresses */
    slot = pt_u64map_get(&w->allocs, c->va);
    w->under[i] = slot ? (size_t)*slot : NONE;
    if (pt_u64map_put(&w->allocs, c->va, i) < 0) return PT_ENOMEM;
    if (c->call == PT_DRV_ADOPT) {
      w->adopted[w->nadopted++] = i;
      return CALL(adopt, i, c->bytes);
    }
    return CALL(malloc, i, c->bytes);
  case PT_DRV_free:
    if (!(slot = pt_u64map_get(&w->allocs, c->va))) return bad(err, i, "a free of an address no allocation holds");
    size_t id = (size_t)*slot, above = NONE;
    while (id != NONE && w->log->v[id].bytes != c->bytes) above = id, id = w->under[id];
    if (id == NONE) return bad(err, i, "a free whose size matches no allocation at its address");
    if (above != NONE) w->under[above] = w->under[id];
    else if (w->under[id] != NONE) *slot = w->under[id];
    else pt_u64map_del(&w->allocs, c->va);
    return CALL(free, id);
  case PT_DRV_address_reserve:
    w->ranges[w->nranges++] = i;
    return CALL(reserve, i, c->bytes, UINT64_C(2) << 20);
  case PT_DRV_address_free:
    for (k = 0; k < (long)w->nranges; k++)
      if (w->log->v[w->ranges[k]].va == c->va) break;
    if (k == (long)w->nranges) return bad_vmm(w, err, i, "an address_free of no reservation");
    size_t rid = w->ranges[k];
    if (w->maps_in[rid]) return bad(err, i, "an address_free of a reservation with pages still mapped");
    drop(w->ranges, &w->nranges, (size_t)k);
    return CALL(address_free, rid);
  case PT_DRV_mem_create:
    if (!c->handle || handle_id(w, c->handle) != NONE) return bad(err, i, "a create whose handle is 0 or live already");
    if (pt_u64map_put(&w->handles, c->handle, i) < 0) return PT_ENOMEM;
    return CALL(create, i, c->bytes);
  case PT_DRV_mem_map: {
    if (in_adopted(w, c->va)) return bad(err, i, "a map inside a segment from before the trace (not replayed yet)");
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad_vmm(w, err, i, "a map outside every reservation");
    if (pt_u64map_get(&w->maps, c->va)) return bad(err, i, "a map over a mapped address");
    size_t hid = handle_id(w, c->handle), r = w->ranges[k];
    if (hid == NONE) return bad_vmm(w, err, i, "a map of a handle never created or released already");
    if (w->log->v[hid].bytes != c->bytes) return bad(err, i, "a map whose size differs from its handle's");
    if (pt_u64map_put(&w->maps, c->va, hid) < 0) return PT_ENOMEM;
    w->maps_of[hid]++;
    w->maps_in[r]++;
    return CALL(map, hid, r, c->va - w->log->v[r].va, c->bytes);
  }
  case PT_DRV_mem_set_access:
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad(err, i, "a set_access outside every reservation");
    return CALL(set_access, w->ranges[k], c->va - w->log->v[w->ranges[k]].va, c->bytes);
  case PT_DRV_mem_unmap: {
    if (!(slot = pt_u64map_get(&w->maps, c->va))) return bad_vmm(w, err, i, "an unmap of an address nothing is mapped at");
    size_t hid = (size_t)*slot;
    if (w->log->v[hid].bytes != c->bytes) return bad(err, i, "an unmap whose size differs from its map's");
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad(err, i, "an unmap outside every reservation");
    pt_u64map_del(&w->maps, c->va);
    size_t r = w->ranges[k];
    w->maps_in[r]--;
    w->maps_of[hid]--;
    return CALL(unmap, hid, r, c->va - w->log->v[r].va, c->bytes);
  }
  case PT_DRV_mem_release: {
    size_t hid = handle_id(w, c->handle);
    if (hid == NONE) return bad_vmm(w, err, i, "a release of a handle never created or released already");
    if (w->maps_of[hid]) return bad(err, i, "a release of a handle still mapped");
    pt_u64map_del(&w->handles, c->handle);
    return CALL(release, hid);
  }
  default: return bad(err, i, "an unknown call");
  }
}

int pt_call_log_walk(const pt_call_log *log, const pt_call_log_ops *ops, pt_err *err) {
  static const pt_call_log_ops none = {0};
  if (!ops) ops = &none;
  size_t n = log->n ? log->n : 1;
  walk w = {.log = log};
  w.ranges = malloc(n * sizeof *w.ranges);
  w.adopted = malloc(n * sizeof *w.adopted);
  w.under = malloc(n * sizeof *w.under);
  w.maps_in = calloc(n, sizeof *w.maps_in);
  w.maps_of = calloc(n, sizeof *w.maps_of);
  int rc = w.ranges && w.adopted && w.under && w.maps_in && w.maps_of ? 0 : PT_ENOMEM;
  for (size_t i = 0; rc == 0 && i < log->n; i++) rc = step(&w, i, ops, err);
  if (rc == PT_ENOMEM) pt_err_set(err, rc, "out of memory");
  free(w.ranges);
  free(w.adopted);
  free(w.under);
  free(w.maps_in);
  free(w.maps_of);
  pt_u64map_free(&w.allocs);
  pt_u64map_free(&w.maps);
  pt_u64map_free(&w.handles);
  return rc;
}

