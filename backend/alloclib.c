/*
 * alloclib.c — libpagetune_alloc.so: pagetune's allocator for PyTorch.
 *
 *   import pagetune_alloc; pagetune_alloc.install()        (backend/pagetune_alloc.py)
 * or by hand, before the first CUDA allocation:
 *   alloc = torch.cuda.memory.CUDAPluggableAllocator(PATH, "pagetune_malloc", "pagetune_free")
 *   torch.cuda.memory.change_current_allocator(alloc)
 *
 * The exported policy's mechanism runs on each GPU the program uses, through
 * the same mechanism code as pagetune's model (alloc.h over cudadev.h).  The
 * configuration is read once, when the library loads: the file named by
 * PAGETUNE_CONFIG (what `pagetune export --format json` writes), else the
 * string in PAGETUNE_ALLOC_CONF ("mechanism=caching,max_split_size_mb=64");
 * neither: PyTorch's defaults (the caching mechanism).  A policy's size
 * hooks come as tables in the JSON (libconf.h, sizetable.h): the library
 * runs no Lua.  A bad configuration
 * is one line on stderr at load, pagetune_status() says it, and every
 * allocation fails rather than running something else.
 *
 * A request that fails (out of memory, or the library not serving) throws a
 * C++ exception with the reason (oomthrow.cc): PyTorch raises it as a
 * RuntimeError the program can catch.  PAGETUNE_ON_FAILURE=null returns NULL
 * instead, which is PyTorch's contract on paper but which PyTorch does not
 * check: the tensor it makes lies at address 0.
 *
 * PAGETUNE_RECORD=PATH records every request served, every free and every
 * out-of-memory refusal as a native trace, a file per device (record.h,
 * traces/FORMAT.md "Recorded by the allocator library"), ended at exit; a
 * PATH the recorder refuses (.gz, a folder it cannot write) is a bad
 * configuration, a file that fails later one line on stderr while serving
 * goes on.
 *
 * PyTorch reaches the library only through malloc and free: the cache is
 * emptied, statistics read and peaks reset through the functions below (the
 * Python module wraps them).  The one allocator is process-wide state by
 * nature: PyTorch's calls carry no context.
 */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "alloc.h"
#include "cudadev.h"
#include "driver.h"
#include "libconf.h"
#include "pagetune_alloc.h"
#include "record.h"

#define PT_EXPORT __attribute__((visibility("default")))

static struct {
  int ready;               /* 1: serving; 0: init failed (status says why) */
  pt_err status;
  pt_driver *drv;
  pt_alloc *alloc;
  pt_libconf conf;
  pt_recorder *rec;        /* PAGETUNE_RECORD: NULL when not recording */
} lib;

static __thread pt_err last_error;
static int fail_null;      /* PAGETUNE_ON_FAILURE=null: return NULL rather than throw */

void pt_alloc_throw(const char *msg); /* oomthrow.cc: never returns */

/* A request that could not be served: thrown, or NULL. */
static void *refuse(void) {
  if (!fail_null) pt_alloc_throw(last_error.msg);
  return NULL;
}

static int be_open(void *ctx, int device, pt_err *err, const pt_dev_ops **ops, void **st) {
  (void)ctx;
  pt_cudadev *c;
  int rc = pt_cudadev_open(lib.drv, device, err, &c);
  if (rc < 0) return rc;
  *ops = &pt_cudadev_ops;
  *st = c;
  return 0;
}

static void be_close(void *ctx, void *st) {
  (void)ctx;
  pt_cudadev_close(st);
}

static void be_note_free(void *ctx, void *st) {
  (void)ctx;
  pt_cudadev_note_free(st);
}

/* The recorder's one line, when a device's recording stops. */
static void record_report(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "pagetune_alloc: %s\n", line);
}

/* At exit: every trace gets its end line (the recorder stays, ignoring frees PyTorch makes after this). */
static void record_at_exit(void) { pt_recorder_close(lib.rec, NULL); }

/* PAGETUNE_RECORD, when set: checked with the configuration, before the driver (a bad one is a bad configuration). */
static int record_open(pt_err *err) {
  const char *path = getenv("PAGETUNE_RECORD");
  if (!path || !*path) return 0;
  char settings[PT_RECORD_SETTINGS_MAX];
  if (pt_libconf_to_conf_string(&lib.conf, settings, sizeof settings) < 0) snprintf(settings, sizeof settings, "mechanism=%s", lib.conf.mech->name);
  pt_recorder_opts o = {.path = path, .settings = settings, .report = record_report};
  return pt_recorder_create(&o, err, &lib.rec);
}

/* The recorder watching lib.alloc from its first request, and ended at exit. */
static int record_attach(pt_err *err) {
  if (!lib.rec) return 0;
  pt_alloc_observer obs;
  pt_recorder_observer(lib.rec, &obs);
  int rc = pt_alloc_set_observer(lib.alloc, &obs);
  if (rc == 0 && atexit(record_at_exit) != 0) rc = pt_err_set(err, PT_ENOMEM, "PAGETUNE_RECORD: cannot register the exit handler");
  return rc;
}

/* The configuration, the driver and the allocator, once, when the library loads. */
__attribute__((constructor)) static void pagetune_alloc_init(void) {
  const char *path = getenv("PAGETUNE_CONFIG"), *conf = getenv("PAGETUNE_ALLOC_CONF");
  const char *onf = getenv("PAGETUNE_ON_FAILURE");
  fail_null = onf && !strcmp(onf, "null");
  int rc;
  if (path && *path) rc = pt_libconf_load(path, &lib.conf, &lib.status);
  else rc = pt_libconf_from_conf_string(conf && *conf ? conf : "mechanism=caching", &lib.conf, &lib.status);
  if (rc == 0) rc = record_open(&lib.status);
  if (rc == 0) rc = pt_driver_open(&lib.status, &lib.drv);
  pt_alloc_backend be = {be_open, be_close, be_note_free, NULL};
  pt_policy_hooks hooks; /* the policy's hooks as tables (lib.conf holds them for the library's life); none: all NULL */
  pt_sizetab_hooks(&lib.conf.tables, &hooks);
  if (rc == 0) rc = pt_alloc_create(lib.conf.mech, &lib.conf.params, lib.conf.capacity, &hooks, &be, &lib.status, &lib.alloc);
  if (rc == 0) rc = record_attach(&lib.status);
  if (rc < 0) {
    fprintf(stderr, "pagetune_alloc: %s; every allocation will fail\n", lib.status.msg);
    return;
  }
  snprintf(lib.status.msg, sizeof lib.status.msg, "serving: mechanism %s%s%s%s%s%.400s", lib.conf.mech->name,
           lib.conf.policy[0] ? ", policy " : "", lib.conf.policy, hooks.round || hooks.segment_size ? ", hooks as tables" : "",
           lib.rec ? ", recording to " : "",
           lib.rec ? getenv("PAGETUNE_RECORD") : "");
  lib.ready = 1;
}

/* At exit nothing is given back: the driver frees a process's memory, and PyTorch may still free tensors
   from its own exit handlers after ours. */

PT_EXPORT void *pagetune_malloc(ssize_t size, int device, void *stream) {
  if (!lib.ready) {
    last_error = lib.status;
    pt_err_prefix(&last_error, PT_ENODEV, "pagetune_alloc");
    return refuse();
  }
  uint64_t addr = 0;
  int rc = size < 0 ? pt_err_set(&last_error, PT_EUSAGE, "a request of %zd bytes", size)
                    : pt_alloc_malloc(lib.alloc, device, (uint64_t)size, (uint64_t)(uintptr_t)stream, &addr, &last_error);
  if (rc < 0) {
    pt_err_prefix(&last_error, rc, "pagetune_alloc");
    fprintf(stderr, "%s\n", last_error.msg);
    return refuse();
  }
  return (void *)(uintptr_t)addr;
}

PT_EXPORT void pagetune_free(void *ptr, ssize_t size, int device, void *stream) {
  (void)size, (void)stream;
  if (!lib.ready || !ptr) return;
  if (pt_alloc_free(lib.alloc, device, (uint64_t)(uintptr_t)ptr, &last_error) < 0)
    fprintf(stderr, "pagetune_alloc: %s\n", last_error.msg);
}

/* 1 when serving, 0 when not; buf (of n bytes) says what, or why not. */
PT_EXPORT int pagetune_status(char *buf, size_t n) {
  if (buf && n) snprintf(buf, n, "%s", lib.status.msg);
  return lib.ready;
}

/* The last failure on this thread. */
PT_EXPORT const char *pagetune_last_error(void) { return last_error.msg; }

PT_EXPORT int pagetune_empty_cache(int device) {
  if (!lib.ready) return -1;
  return pt_alloc_empty_cache(lib.alloc, device, &last_error) < 0 ? -1 : 0;
}

PT_EXPORT int pagetune_reset_peak_stats(int device) {
  if (!lib.ready) return -1;
  return pt_alloc_reset_peaks(lib.alloc, device) < 0 ? -1 : 0;
}

/* device's statistics as one JSON object in buf; the length it needs (as snprintf), or -1. */
PT_EXPORT int pagetune_stats_json(int device, char *buf, size_t n) {
  pt_alloc_stats s;
  if (!lib.ready || pt_alloc_get_stats(lib.alloc, device, &s) < 0) return -1;
  char tmp[2048];
  size_t at = 0;
  at += (size_t)snprintf(tmp + at, sizeof tmp - at, "{\"device\":%d,\"mechanism\":\"%s\",\"capacity\":%llu", device,
                         lib.conf.mech->name, (unsigned long long)s.capacity);
#define PT_X(f, h) at += (size_t)snprintf(tmp + at, sizeof tmp - at, ",\"" #f "\":%llu", (unsigned long long)s.f);
  PT_ALLOC_STATS_FIELDS(PT_X)
#undef PT_X
  at += (size_t)snprintf(tmp + at, sizeof tmp - at, ",\"driver_calls\":{");
  for (int c = 0; c < PT_DRV_NCALLS; c++)
    at += (size_t)snprintf(tmp + at, sizeof tmp - at, "%s\"%s\":%llu", c ? "," : "", pt_drv_call_names[c],
                           (unsigned long long)s.driver_calls[c]);
  at += (size_t)snprintf(tmp + at, sizeof tmp - at, "}}");
  if (at >= sizeof tmp) return -1;
  if (buf && n) snprintf(buf, n, "%s", tmp);
  return (int)at;
}
