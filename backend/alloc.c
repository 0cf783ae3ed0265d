/* alloc.c — live requests through one mechanism per device (see alloc.h). */
#include "alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

#define FREE_REC UINT64_MAX /* a record slot on the free list */

/* A live request: where it is, the mechanism's handle, its size; free slots chain through handle. */
typedef struct arec {
  uint64_t addr, handle, bytes;
} arec;

/* One device: everything under its lock. */
typedef struct adev {
  pthread_mutex_t lock;
  const pt_dev_ops *ops;
  void *st;                  /* the device's state (the backend's) */
  pt_device books;
  pt_mech_counters counters;
  void *mech;
  uint64_t allocated, peak_allocated;
  uint64_t allocs, frees, ooms;
  uint64_t stream;           /* a mechanism that shares memory across streams: the one stream it serves */
  int have_stream;
  int fault;
  pt_u64map live;            /* addr -> index in recs */
  arec *recs;
  size_t nrecs, cap_recs;
  uint64_t free_head;        /* first free slot + 1; 0: none */
  pt_err err;                /* what the device, the books and the mechanism say went wrong */
} adev;

struct pt_alloc {
  const pt_mech_ops *mech;
  pt_params params;
  pt_policy_hooks hooks;     /* the caller's (the library's: tables); zero: none */
  uint64_t capacity;
  pt_alloc_backend be;
  pt_alloc_observer obs;     /* all NULL: none */
  pthread_mutex_t table_lock;/* for opening devices */
  adev *dev[PT_ALLOC_MAX_DEVICES];
};

int pt_alloc_create(const pt_mech_ops *m, const pt_params *p, uint64_t capacity, const pt_policy_hooks *hooks,
                    const pt_alloc_backend *be, pt_err *err, pt_alloc **out) {
  *out = NULL;
  int rc = pt_mech_check_params(m, p, err);
  if (rc < 0) return rc;
  pt_alloc *a = calloc(1, sizeof *a);
  if (!a) return pt_err_set(err, PT_ENOMEM, "out of memory");
  a->mech = m;
  a->params = *p;
  a->capacity = capacity;
  if (hooks) a->hooks = *hooks;
  a->be = *be;
  if (pthread_mutex_init(&a->table_lock, NULL) != 0) {
    free(a);
    return pt_err_set(err, PT_ENOMEM, "cannot make a lock");
  }
  *out = a;
  return 0;
}

int pt_alloc_set_observer(pt_alloc *a, const pt_alloc_observer *o) {
  pthread_mutex_lock(&a->table_lock);
  int used = 0;
  for (int n = 0; n < PT_ALLOC_MAX_DEVICES; n++) used |= a->dev[n] != NULL;
  if (!used) a->obs = o ? *o : (pt_alloc_observer){0};
  pthread_mutex_unlock(&a->table_lock);
  return used ? PT_EUSAGE : 0;
}

/* The caller's err gets the device's message. */
static int fail(adev *d, int rc, pt_err *err) {
  if (err && err != &d->err) *err = d->err;
  return rc;
}

static void dev_close(pt_alloc *a, adev *d) {
  if (d->mech) a->mech->destroy(d->mech);
  pt_dev_done(&d->books);
  if (d->st) a->be.close(a->be.ctx, d->st);
  pt_u64map_free(&d->live);
  free(d->recs);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

/* Device n, opened on first use. */
static int dev_get(pt_alloc *a, int n, pt_err *err, adev **out) {
  if (n < 0 || n >= PT_ALLOC_MAX_DEVICES)
    return pt_err_set(err, PT_EUSAGE, "device %d: pagetune's allocator serves devices 0 to %d", n, PT_ALLOC_MAX_DEVICES - 1);
  adev *d = __atomic_load_n(&a->dev[n], __ATOMIC_ACQUIRE);
  if (d) {
    *out = d;
    return 0;
  }
  pthread_mutex_lock(&a->table_lock);
  int rc = 0;
  if (!(d = a->dev[n])) {
    d = calloc(1, sizeof *d);
    if (!d || pthread_mutex_init(&d->lock, NULL) != 0) {
      free(d);
      pthread_mutex_unlock(&a->table_lock);
      return pt_err_set(err, PT_ENOMEM, "out of memory");
    }
    if ((rc = a->be.open(a->be.ctx, n, &d->err, &d->ops, &d->st)) == 0) {
      pt_dev_init(&d->books, d->ops, d->st, a->capacity, &d->err);
      pt_mech_env env = {.dev = &d->books, .counters = &d->counters, .params = &a->params, .hooks = &a->hooks,
                         .allocated = &d->allocated, .fault = &d->fault, .err = &d->err};
      rc = pt_mech_create(a->mech, &env, &d->mech);
    }
    if (rc < 0) {
      rc = pt_err_prefix(&d->err, rc, "device %d", n);
      fail(d, rc, err);
      dev_close(a, d);
      pthread_mutex_unlock(&a->table_lock);
      return rc;
    }
    __atomic_store_n(&a->dev[n], d, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&a->table_lock);
  *out = d;
  return 0;
}

static int rec_take(adev *d, uint64_t *idx) {
  if (d->free_head) {
    *idx = d->free_head - 1;
    d->free_head = d->recs[*idx].handle == FREE_REC ? 0 : d->recs[*idx].handle;
    return 0;
  }
  if (d->nrecs == d->cap_recs) {
    size_t cap = d->cap_recs ? 2 * d->cap_recs : 1024;
    arec *v = realloc(d->recs, cap * sizeof *v);
    if (!v) return PT_ENOMEM;
    d->recs = v;
    d->cap_recs = cap;
  }
  *idx = d->nrecs++;
  return 0;
}

static void rec_drop(adev *d, uint64_t idx) {
  d->recs[idx] = (arec){0, d->free_head ? d->free_head : FREE_REC, 0};
  d->free_head = idx + 1;
}

int pt_alloc_malloc(pt_alloc *a, int device, uint64_t bytes, uint64_t stream, uint64_t *addr, pt_err *err) {
  *addr = 0;
  adev *d = NULL;
  int rc = dev_get(a, device, err, &d);
  if (rc < 0 || bytes == 0) return rc;
  pthread_mutex_lock(&d->lock);
  uint64_t h, idx;
  if (a->mech->shares_streams && d->have_stream && stream != d->stream) {
    rc = pt_err_set(&d->err, PT_EUSAGE,
                    "device %d: the %s mechanism hands memory freed on one stream to any other at once, which is safe on "
                    "one stream only: a request on stream 0x%llx after stream 0x%llx (use a mechanism that keeps "
                    "blocks per stream, or PyTorch's backend:cudaMallocAsync)",
                    device, a->mech->name, (unsigned long long)stream, (unsigned long long)d->stream);
    goto out;
  }
  d->stream = stream;
  d->have_stream = 1;
  if ((rc = rec_take(d, &idx)) < 0) {
    rc = pt_err_set(&d->err, PT_ENOMEM, "out of memory (live requests)");
    goto out;
  }
  rc = a->mech->alloc(d->mech, bytes, stream, &h);
  if (rc == 0 && d->fault) rc = d->fault;
  if (rc < 0) {
    rec_drop(d, idx);
    if (rc == PT_EOOM) {
      d->ooms++;
      if (a->obs.on_oom) a->obs.on_oom(a->obs.ctx, device, bytes, stream);
      char cap[64] = "";
      if (a->capacity) snprintf(cap, sizeof cap, ", pagetune's cap %llu", (unsigned long long)a->capacity);
      pt_err_set(&d->err, PT_EOOM, "device %d: out of memory: %llu bytes asked, %llu held from the driver, %llu in live requests%s",
                 device, (unsigned long long)bytes, (unsigned long long)d->books.reserved,
                 (unsigned long long)d->allocated, cap);
    }
    goto out;
  }
  uint64_t p = a->mech->addr_of(d->mech, h);
  if ((rc = pt_u64map_put(&d->live, p, idx)) < 0) {
    a->mech->free(d->mech, h);
    rec_drop(d, idx);
    rc = pt_err_set(&d->err, PT_ENOMEM, "out of memory (live requests)");
    goto out;
  }
  d->recs[idx] = (arec){p, h, bytes};
  d->allocs++;
  d->allocated += bytes;
  if (d->allocated > d->peak_allocated) d->peak_allocated = d->allocated;
  if (a->obs.on_alloc) a->obs.on_alloc(a->obs.ctx, device, bytes, stream, p);
  *addr = p;
out:
  if (rc < 0) fail(d, rc, err);
  pthread_mutex_unlock(&d->lock);
  return rc;
}

/* Device n if it was ever used, else NULL. */
static adev *dev_if_open(pt_alloc *a, int n) {
  return n >= 0 && n < PT_ALLOC_MAX_DEVICES ? __atomic_load_n(&a->dev[n], __ATOMIC_ACQUIRE) : NULL;
}

int pt_alloc_free(pt_alloc *a, int device, uint64_t addr, pt_err *err) {
  if (!addr) return 0;
  adev *d = dev_if_open(a, device);
  if (!d)
    return pt_err_set(err, PT_EUSAGE, "device %d: a free of 0x%llx, which this allocator did not hand out there",
                      device, (unsigned long long)addr);
  int rc;
  pthread_mutex_lock(&d->lock);
  uint64_t *slot = pt_u64map_get(&d->live, addr);
  if (!slot) {
    rc = pt_err_set(&d->err, PT_EUSAGE, "device %d: a free of 0x%llx, which this allocator did not hand out there",
                    device, (unsigned long long)addr);
  } else {
    uint64_t idx = *slot;
    arec r = d->recs[idx];
    if ((rc = a->mech->free(d->mech, r.handle)) == 0 && d->fault) rc = d->fault;
    if (rc == 0) {
      pt_u64map_del(&d->live, addr);
      rec_drop(d, idx);
      d->frees++;
      d->allocated -= r.bytes;
      if (a->obs.on_free) a->obs.on_free(a->obs.ctx, device, addr);
      if (a->be.note_free) a->be.note_free(a->be.ctx, d->st);
    }
  }
  if (rc < 0) fail(d, rc, err);
  pthread_mutex_unlock(&d->lock);
  return rc;
}

int pt_alloc_empty_cache(pt_alloc *a, int device, pt_err *err) {
  if (device < 0 || device >= PT_ALLOC_MAX_DEVICES) return pt_err_set(err, PT_EUSAGE, "device %d: out of range", device);
  adev *d = dev_if_open(a, device);
  if (!d) return 0;
  pthread_mutex_lock(&d->lock);
  int rc = a->mech->empty_cache ? a->mech->empty_cache(d->mech) : 0;
  if (rc == 0 && d->fault) rc = d->fault;
  if (rc < 0) fail(d, rc, err);
  pthread_mutex_unlock(&d->lock);
  return rc;
}

int pt_alloc_get_stats(pt_alloc *a, int device, pt_alloc_stats *out) {
  memset(out, 0, sizeof *out);
  out->capacity = a->capacity;
  if (device < 0 || device >= PT_ALLOC_MAX_DEVICES) return PT_EUSAGE;
  adev *d = dev_if_open(a, device);
  if (!d) return 0;
  pthread_mutex_lock(&d->lock);
  out->reserved_bytes = d->books.reserved;
  out->peak_reserved_bytes = d->books.peak_reserved;
  out->allocated_bytes = d->allocated;
  out->peak_allocated_bytes = d->peak_allocated;
  out->allocs = d->allocs;
  out->frees = d->frees;
  out->ooms = d->ooms;
  out->cache_hits = d->counters.cache_hits;
  out->alloc_retries = d->counters.alloc_retries;
  out->collections = d->counters.collections;
  memcpy(out->driver_calls, d->books.calls, sizeof out->driver_calls);
  pthread_mutex_unlock(&d->lock);
  return 0;
}

int pt_alloc_reset_peaks(pt_alloc *a, int device) {
  if (device < 0 || device >= PT_ALLOC_MAX_DEVICES) return PT_EUSAGE;
  adev *d = dev_if_open(a, device);
  if (!d) return 0;
  pthread_mutex_lock(&d->lock);
  d->books.peak_reserved = d->books.reserved;
  d->peak_allocated = d->allocated;
  pthread_mutex_unlock(&d->lock);
  return 0;
}

void pt_alloc_destroy(pt_alloc *a) {
  if (!a) return;
  for (int n = 0; n < PT_ALLOC_MAX_DEVICES; n++) {
    adev *d = a->dev[n];
    if (!d) continue;
    for (size_t i = 0; i < d->nrecs; i++) /* live requests back to the mechanism, then its cache to the driver */
      if (d->recs[i].addr) a->mech->free(d->mech, d->recs[i].handle);
    if (a->mech->empty_cache) a->mech->empty_cache(d->mech);
    dev_close(a, d);
  }
  pthread_mutex_destroy(&a->table_lock);
  free(a);
}
