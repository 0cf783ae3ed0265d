/* replay.c — a run's driver calls, made and timed on device 0 (see replay.h). */
#include "replay.h"

#include <config.h>
#include <stdlib.h>
#include <string.h>

#include "calllog.h"

#ifdef HAVE_CUDA
#include "cudafns.h"

/* The real thing each logged call made, by call index (calllog.h's ids). */
typedef struct replay {
  pt_driver *d;
  pt_err *err;
  CUdeviceptr *ptr;                  /* malloc / adopt: the allocation; reserve: the range's base */
  CUmemGenericAllocationHandle *h;   /* mem_create: the handle */
  uint64_t *bytes;                   /* what each call made, its size */
  CUdeviceptr *live_va;              /* live maps (a handle may have several): where, and how long */
  uint64_t *live_len;
  size_t nlive;
  pt_replay_result *out;
  double t0;
} replay;

static void start(replay *r) { r->t0 = pt_cu_now_us(); }

static void stop(replay *r, int call) {
  r->out->us[call] += pt_cu_now_us() - r->t0;
  r->out->calls[call]++;
}

static int check(replay *r, CUresult c, const char *what) { return c == CUDA_SUCCESS ? 0 : pt_cu_fail(r->d, c, what, r->err); }

static int r_adopt(void *ctx, size_t id, uint64_t bytes) {
  replay *r = ctx;
  r->bytes[id] = bytes;
  return check(r, r->d->MemAlloc(&r->ptr[id], bytes), "cuMemAlloc (a segment from before the trace)");
}

static int r_malloc(void *ctx, size_t id, uint64_t bytes) {
  replay *r = ctx;
  r->bytes[id] = bytes;
  start(r);
  CUresult c = r->d->MemAlloc(&r->ptr[id], bytes);
  stop(r, PT_DRV_malloc);
  return check(r, c, "cuMemAlloc");
}

static int r_free(void *ctx, size_t id) {
  replay *r = ctx;
  start(r);
  CUresult c = r->d->MemFree(r->ptr[id]);
  stop(r, PT_DRV_free);
  if (c == CUDA_SUCCESS) r->ptr[id] = 0; /* else give_back tries again */
  return check(r, c, "cuMemFree");
}

static int r_reserve(void *ctx, size_t rid, uint64_t bytes, uint64_t align) {
  replay *r = ctx;
  r->bytes[rid] = bytes;
  start(r);
  CUresult c = r->d->MemAddressReserve(&r->ptr[rid], bytes, align, 0, 0);
  stop(r, PT_DRV_address_reserve);
  return check(r, c, "cuMemAddressReserve");
}

static int r_address_free(void *ctx, size_t rid) {
  replay *r = ctx;
  start(r);
  CUresult c = r->d->MemAddressFree(r->ptr[rid], r->bytes[rid]);
  stop(r, PT_DRV_address_free);
  if (c == CUDA_SUCCESS) r->ptr[rid] = 0;
  return check(r, c, "cuMemAddressFree");
}

static int r_create(void *ctx, size_t hid, uint64_t bytes) {
  replay *r = ctx;
  CUmemAllocationProp p = pt_cu_handle_prop(r->d);
  r->bytes[hid] = bytes;
  start(r);
  CUresult c = r->d->MemCreate(&r->h[hid], bytes, &p, 0);
  stop(r, PT_DRV_mem_create);
  if (c != CUDA_SUCCESS) r->h[hid] = 0;
  return check(r, c, "cuMemCreate");
}

static int r_map(void *ctx, size_t hid, size_t rid, uint64_t off, uint64_t bytes) {
  replay *r = ctx;
  start(r);
  CUresult c = r->d->MemMap(r->ptr[rid] + off, bytes, 0, r->h[hid], 0);
  stop(r, PT_DRV_mem_map);
  if (c == CUDA_SUCCESS) {
    r->live_va[r->nlive] = r->ptr[rid] + off;
    r->live_len[r->nlive++] = bytes;
  }
  return check(r, c, "cuMemMap");
}

static int r_set_access(void *ctx, size_t rid, uint64_t off, uint64_t bytes) {
  replay *r = ctx;
  CUmemAccessDesc a = pt_cu_access(r->d);
  start(r);
  CUresult c = r->d->MemSetAccess(r->ptr[rid] + off, bytes, &a, 1);
  stop(r, PT_DRV_mem_set_access);
  return check(r, c, "cuMemSetAccess");
}

static int r_unmap(void *ctx, size_t hid, size_t rid, uint64_t off, uint64_t bytes) {
  replay *r = ctx;
  CUdeviceptr va = r->ptr[rid] + off;
  (void)hid;
  start(r);
  CUresult c = r->d->MemUnmap(va, bytes);
  stop(r, PT_DRV_mem_unmap);
  for (size_t k = 0; c == CUDA_SUCCESS && k < r->nlive; k++)
    if (r->live_va[k] == va) {
      r->nlive--;
      r->live_va[k] = r->live_va[r->nlive];
      r->live_len[k] = r->live_len[r->nlive];
      break;
    }
  return check(r, c, "cuMemUnmap");
}

static int r_release(void *ctx, size_t hid) {
  replay *r = ctx;
  start(r);
  CUresult c = r->d->MemRelease(r->h[hid]);
  stop(r, PT_DRV_mem_release);
  if (c == CUDA_SUCCESS) r->h[hid] = 0;
  return check(r, c, "cuMemRelease");
}

/* Give back what the run still holds, untimed: maps, handles, ranges, allocations. */
static void give_back(replay *r, const pt_call_log *log) {
  for (size_t k = 0; k < r->nlive; k++) r->d->MemUnmap(r->live_va[k], r->live_len[k]);
  r->nlive = 0;
  for (size_t i = 0; i < log->n; i++) {
    if (r->h[i]) r->d->MemRelease(r->h[i]);
    if (!r->ptr[i]) continue;
    if (log->v[i].call == PT_DRV_address_reserve) r->d->MemAddressFree(r->ptr[i], r->bytes[i]);
    else r->d->MemFree(r->ptr[i]);
  }
}

int pt_replay_log(pt_driver *d, const pt_call_log *log, pt_replay_result *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  int rc = pt_call_log_walk(log, NULL, err); /* a log that cannot be repeated is refused before any call */
  if (rc < 0) return rc;
  if ((rc = pt_cu_context(d, err)) < 0) return rc;
  size_t n = log->n ? log->n : 1;
  replay r = {.d = d, .err = err, .out = out};
  r.ptr = calloc(n, sizeof *r.ptr);
  r.h = calloc(n, sizeof *r.h);
  r.bytes = calloc(n, sizeof *r.bytes);
  r.live_va = calloc(n, sizeof *r.live_va);
  r.live_len = calloc(n, sizeof *r.live_len);
  int ready = r.ptr && r.h && r.bytes && r.live_va && r.live_len;
  if (!ready) rc = pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_call_log_ops ops = {r_adopt, r_malloc, r_free, r_reserve, r_address_free, r_create,
                       r_map, r_set_access, r_unmap, r_release, &r};
  if (rc == 0) rc = pt_call_log_walk(log, &ops, err);
  if (ready) {
    d->CtxSynchronize();
    give_back(&r, log);
  }
  for (int k = 0; k < PT_DRV_NCALLS; k++) out->total_us += out->us[k];
  free(r.ptr);
  free(r.h);
  free(r.bytes);
  free(r.live_va);
  free(r.live_len);
  return rc;
}

#else /* built without the CUDA Toolkit */

int pt_replay_log(pt_driver *d, const pt_call_log *log, pt_replay_result *out, pt_err *err) {
  (void)d;
  (void)log;
  memset(out, 0, sizeof *out);
  return pt_err_set(err, PT_ENODEV, "no GPU support in this build");
}

#endif
