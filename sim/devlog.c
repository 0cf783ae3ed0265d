/* devlog.c — resolving a run's driver calls into ids a replay can keep (see devlog.h). */
#include "devlog.h"

#include <stdlib.h>

#include "u64map.h"

enum { DEAD, ALIVE, MAPPED }; /* what became of the thing call `id` made */

typedef struct walk {
  const pt_dev_log *log;
  unsigned char *state;   /* per call index */
  uint64_t *map_va;       /* per handle id: its VA while MAPPED */
  pt_u64map allocs;       /* address -> id of the live allocation there */
  pt_u64map maps;         /* VA -> handle id mapped there */
  size_t *ranges, nranges;   /* live reservations (call ids) */
  size_t *idle, nidle;       /* unmapped handles, last in last */
  size_t *adopted, nadopted; /* segments from before the trace */
} walk;

static int bad(pt_err *err, size_t i, const char *why) {
  return pt_err_set(err, PT_EFORMAT, "driver call %zu: %s", i, why);
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

#define CALL(f, ...) (ops->f ? ops->f(ops->ctx, __VA_ARGS__) : 0)

static int step(walk *w, size_t i, const pt_devlog_ops *ops, pt_err *err) {
  const pt_dev_call *c = &w->log->v[i];
  uint64_t *slot;
  long k;
  int rc;
  switch (c->call) {
  case PT_DRV_ADOPT:
  case PT_DRV_malloc:
    if (pt_u64map_get(&w->allocs, c->va)) return bad(err, i, "an allocation at an address already held");
    if (pt_u64map_put(&w->allocs, c->va, i) < 0) return PT_ENOMEM;
    w->state[i] = ALIVE;
    if (c->call == PT_DRV_ADOPT) {
      w->adopted[w->nadopted++] = i;
      return CALL(adopt, i, c->bytes);
    }
    return CALL(malloc, i, c->bytes);
  case PT_DRV_free:
    if (!(slot = pt_u64map_get(&w->allocs, c->va))) return bad(err, i, "a free of an address no allocation holds");
    size_t id = (size_t)*slot;
    if (w->log->v[id].bytes != c->bytes) return bad(err, i, "a free whose size differs from its allocation's");
    pt_u64map_del(&w->allocs, c->va);
    w->state[id] = DEAD;
    return CALL(free, id);
  case PT_DRV_address_reserve:
    w->ranges[w->nranges++] = i;
    w->state[i] = ALIVE;
    return CALL(reserve, i, c->bytes, UINT64_C(2) << 20);
  case PT_DRV_address_free:
    for (k = 0; k < (long)w->nranges; k++)
      if (w->log->v[w->ranges[k]].va == c->va) break;
    if (k == (long)w->nranges) return bad(err, i, "an address_free of no reservation");
    size_t rid = w->ranges[k];
    drop(w->ranges, &w->nranges, (size_t)k);
    w->state[rid] = DEAD;
    return CALL(address_free, rid);
  case PT_DRV_mem_create:
    w->idle[w->nidle++] = i;
    w->state[i] = ALIVE;
    return CALL(create, i, c->bytes);
  case PT_DRV_mem_map: {
    if (in_adopted(w, c->va)) return bad(err, i, "a map inside a segment from before the trace (not replayed yet)");
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad(err, i, "a map outside every reservation");
    if (pt_u64map_get(&w->maps, c->va)) return bad(err, i, "a map over a mapped address");
    size_t j = w->nidle;
    while (j > 0 && w->log->v[w->idle[j - 1]].bytes != c->bytes) j--;
    if (!j) return bad(err, i, "a map with no unmapped handle of its size (one handle at two addresses?)");
    size_t hid = w->idle[j - 1], r = w->ranges[k];
    for (; j < w->nidle; j++) w->idle[j - 1] = w->idle[j]; /* keep the order of the rest */
    w->nidle--;
    if (pt_u64map_put(&w->maps, c->va, hid) < 0) return PT_ENOMEM;
    w->state[hid] = MAPPED;
    w->map_va[hid] = c->va;
    return CALL(map, hid, r, c->va - w->log->v[r].va, c->bytes);
  }
  case PT_DRV_mem_set_access:
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad(err, i, "a set_access outside every reservation");
    return CALL(set_access, w->ranges[k], c->va - w->log->v[w->ranges[k]].va, c->bytes);
  case PT_DRV_mem_unmap: {
    if (!(slot = pt_u64map_get(&w->maps, c->va))) return bad(err, i, "an unmap of an address nothing is mapped at");
    size_t hid = (size_t)*slot;
    if (w->log->v[hid].bytes != c->bytes) return bad(err, i, "an unmap whose size differs from its map's");
    if ((k = range_of(w, c->va, c->bytes)) < 0) return bad(err, i, "an unmap outside every reservation");
    pt_u64map_del(&w->maps, c->va);
    w->state[hid] = ALIVE;
    w->idle[w->nidle++] = hid;
    size_t r = w->ranges[k];
    if ((rc = CALL(unmap, hid, r, c->va - w->log->v[r].va, c->bytes)) < 0) return rc;
    return 0;
  }
  case PT_DRV_mem_release: {
    size_t j = w->nidle;
    while (j > 0 && w->log->v[w->idle[j - 1]].bytes != c->bytes) j--;
    if (!j) return bad(err, i, "a release with no unmapped handle of its size");
    size_t hid = w->idle[j - 1];
    for (; j < w->nidle; j++) w->idle[j - 1] = w->idle[j];
    w->nidle--;
    w->state[hid] = DEAD;
    return CALL(release, hid);
  }
  default: return bad(err, i, "an unknown call");
  }
}

static int collect(const walk *w, pt_devlog_left *left) {
  size_t n = w->log->n;
  left->allocs = malloc((n ? n : 1) * sizeof *left->allocs);
  left->maps = malloc((n ? n : 1) * sizeof *left->maps);
  left->map_at = malloc((n ? n : 1) * sizeof *left->map_at);
  left->handles = malloc((n ? n : 1) * sizeof *left->handles);
  left->ranges = malloc((n ? n : 1) * sizeof *left->ranges);
  if (!left->allocs || !left->maps || !left->map_at || !left->handles || !left->ranges) return PT_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int call = w->log->v[i].call;
    if (!w->state[i]) continue;
    if (call == PT_DRV_malloc || call == PT_DRV_ADOPT) left->allocs[left->nallocs++] = i;
    else if (call == PT_DRV_address_reserve) left->ranges[left->nranges++] = i;
    else if (w->state[i] == ALIVE) left->handles[left->nhandles++] = i;
    else {
      long k = range_of(w, w->map_va[i], w->log->v[i].bytes);
      size_t r = w->ranges[k]; /* a live map lies in a live reservation (checked at its map) */
      left->map_at[left->nmaps].rid = r;
      left->map_at[left->nmaps].offset = w->map_va[i] - w->log->v[r].va;
      left->map_at[left->nmaps].bytes = w->log->v[i].bytes;
      left->maps[left->nmaps++] = i;
    }
  }
  return 0;
}

int pt_devlog_walk(const pt_dev_log *log, const pt_devlog_ops *ops, pt_devlog_left *left, pt_err *err) {
  static const pt_devlog_ops none = {0};
  if (!ops) ops = &none;
  if (left) *left = (pt_devlog_left){0};
  size_t n = log->n ? log->n : 1;
  walk w = {.log = log};
  w.state = calloc(n, 1);
  w.map_va = calloc(n, sizeof *w.map_va);
  w.ranges = malloc(n * sizeof *w.ranges);
  w.idle = malloc(n * sizeof *w.idle);
  w.adopted = malloc(n * sizeof *w.adopted);
  int rc = w.state && w.map_va && w.ranges && w.idle && w.adopted ? 0 : PT_ENOMEM;
  for (size_t i = 0; rc == 0 && i < log->n; i++) rc = step(&w, i, ops, err);
  if (rc == 0 && left) rc = collect(&w, left);
  if (rc == PT_ENOMEM) pt_err_set(err, rc, "out of memory");
  if (rc < 0 && left) pt_devlog_left_free(left);
  free(w.state);
  free(w.map_va);
  free(w.ranges);
  free(w.idle);
  free(w.adopted);
  pt_u64map_free(&w.allocs);
  pt_u64map_free(&w.maps);
  return rc;
}

void pt_devlog_left_free(pt_devlog_left *left) {
  free(left->allocs);
  free(left->maps);
  free(left->map_at);
  free(left->handles);
  free(left->ranges);
  *left = (pt_devlog_left){0};
}
