/*
 * test_record.c — the trace recorder (backend/record.h) read back by the
 * trace reader: the same allocations, frees, sizes, streams, addresses and
 * times; the header; refusals that write nothing; a sink that fails (sticky,
 * told once, no `end`, which the reader refuses); /dev/full through the
 * allocator, which goes on serving; the allocator's observer on modelled
 * devices, a file per device; many threads at once; a forked child leaving
 * the parent's file alone; `pagetune trace stats` on a recording; the
 * @settings text reading back as the configuration.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "libconf.h"
#include "modeldev.h"
#include "record.h"
#include "testdev.h"
#include "testutil.h"
#include "trace.h"

#define MIB (UINT64_C(1) << 20)

/* ---- reading a trace back ---------------------------------------------------- */

typedef struct readback {
  pt_event *ev;
  size_t n;
  pt_trace_info info;
  int rc;        /* pt_trace_open or the last pt_trace_next: 0 when the whole trace read */
  pt_err err;
} readback;

static void rb_add(readback *rb, const pt_event *ev) {
  if ((rb->n & (rb->n - 1)) == 0) { /* grow at powers of two */
    pt_event *v = realloc(rb->ev, (rb->n ? 2 * rb->n : 1) * sizeof *v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    rb->ev = v;
  }
  rb->ev[rb->n++] = *ev;
}

static void rb_drain(readback *rb, pt_trace *t) {
  pt_event ev;
  int rc;
  while ((rc = pt_trace_next(t, &ev, &rb->err)) > 0) rb_add(rb, &ev);
  rb->rc = rc;
  rb->info = *pt_trace_get_info(t);
  pt_trace_close(t);
}

static readback read_file(const char *path) {
  readback rb = {0};
  pt_trace *t;
  if ((rb.rc = pt_trace_open(path, NULL, &rb.err, &t)) == 0) rb_drain(&rb, t);
  return rb;
}

static readback read_mem(const void *buf, size_t len) {
  readback rb = {0};
  pt_trace *t;
  if ((rb.rc = pt_trace_open_mem(buf, len, "mem", NULL, &rb.err, &t)) == 0) rb_drain(&rb, t);
  return rb;
}

/* ---- sinks for tests: memory, and one that fails its Nth write ------------------------- */

typedef struct memsink {
  char *buf;
  size_t len, cap;
  int writes, fail_at; /* fail_at: the write that fails (1 = the first); 0: none */
  int finished, abandoned;
} memsink;

static int mem_write(void *ctx, const void *buf, size_t n, pt_err *err) {
  memsink *m = ctx;
  if (++m->writes == m->fail_at) return pt_err_set(err, PT_EIO, "write failed: No space left on device");
  if (m->len + n > m->cap) {
    size_t cap = (m->len + n) * 2;
    char *b = realloc(m->buf, cap);
    if (!b) return pt_err_set(err, PT_ENOMEM, "out of memory");
    m->buf = b;
    m->cap = cap;
  }
  memcpy(m->buf + m->len, buf, n);
  m->len += n;
  return 0;
}

static int mem_finish(void *ctx, pt_err *err) {
  (void)err;
  ((memsink *)ctx)->finished++;
  return 0;
}

static void mem_abandon(void *ctx) { ((memsink *)ctx)->abandoned++; }

static pt_record *mem_record(memsink *m, size_t buffer) {
  pt_record_sink s = {mem_write, mem_finish, mem_abandon, m};
  pt_record_meta meta = {.device = 3, .settings = "mechanism=caching", .buffer_bytes = buffer};
  pt_err err;
  pt_record *r = NULL;
  CU_ASSERT_EQUAL(pt_record_open_sink(&s, "mem", &meta, &err, &r), 0);
  return r;
}

/* ---- the writer alone ---------------------------------------------------------------- */

static void test_round_trip(void) {
  const char *path = pt_test_tmp(".trace");
  pt_record_meta meta = {.device = 2, .settings = "mechanism=caching,max_split_size_mb=64\nsecond line"};
  pt_err err;
  pt_record *r;
  CU_ASSERT_EQUAL_FATAL(pt_record_open(path, &meta, &err, &r), 0);
  uint64_t id[4];
  CU_ASSERT_EQUAL(pt_record_alloc(r, 1000, 0, 10, 0x7f0000000000, &id[0], &err), 0);
  CU_ASSERT_EQUAL(pt_record_alloc(r, 3 * MIB, 0xdeadbeef, 11, 0x7f0000200000, &id[1], &err), 0);
  CU_ASSERT_EQUAL(pt_record_free(r, 0x7f0000000000, 12, &err), 0);
  CU_ASSERT_EQUAL(pt_record_alloc(r, 512, INT64_MAX, -5, 0x7f0000000000, &id[2], &err), 0); /* the address again */
  CU_ASSERT_EQUAL(pt_record_oom(r, 80ull << 30, 7, 13, &err), 0);
  CU_ASSERT_EQUAL(pt_record_alloc(r, PT_RECORD_MAX_BYTES, 1, INT64_MAX, UINT64_MAX, &id[3], &err), 0);
  CU_ASSERT_EQUAL(pt_record_oom(r, 1, 0, INT64_MIN + 1, &err), 0);
  CU_ASSERT(id[0] == 1 && id[1] == 2 && id[2] == 3 && id[3] == 4);
  /* refused, nothing written */
  uint64_t x;
  CU_ASSERT_EQUAL(pt_record_alloc(r, 1, 0, 14, 0x7f0000200000, &x, &err), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "handed out again while live"));
  CU_ASSERT_EQUAL(x, 0);
  CU_ASSERT_EQUAL(pt_record_free(r, 0x1234, 14, &err), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not live"));
  CU_ASSERT_EQUAL(pt_record_alloc(r, PT_RECORD_MAX_BYTES + 1, 0, 14, 0x99, &x, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_record_oom(r, PT_RECORD_MAX_BYTES + 1, 0, 14, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_record_alloc(r, 1, UINT64_C(1) << 63, 14, 0x99, &x, &err), PT_EUSAGE); /* past the reader's streams */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "stream 0x8000000000000000 is past"));
  CU_ASSERT_EQUAL(pt_record_oom(r, 1, UINT64_MAX, 14, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_record_alloc(r, 1, 0, INT64_MIN, 0x99, &x, &err), PT_EUSAGE); /* the reader takes no -2^63 */
  CU_ASSERT_EQUAL(pt_record_free(r, 0x7f0000200000, INT64_MIN, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_record_oom(r, 1, 0, INT64_MIN, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_record_free(r, 0x7f0000200000, 15, &err), 0);
  CU_ASSERT_EQUAL(pt_record_count(r), 8);
  CU_ASSERT_EQUAL(pt_record_close(r, &err), 0);

  readback rb = read_file(path);
  CU_ASSERT_EQUAL_FATAL(rb.rc, 0);
  CU_ASSERT_STRING_EQUAL(rb.info.source, "pagetune-alloc");
  CU_ASSERT_STRING_EQUAL(rb.info.tool, "libpagetune_alloc.so");
  CU_ASSERT_STRING_EQUAL(rb.info.settings, "mechanism=caching,max_split_size_mb=64 second line");
  CU_ASSERT_EQUAL(rb.info.device, 2);
  CU_ASSERT_EQUAL_FATAL(rb.n, 8);
  const pt_event want[] = {
      {.kind = 'a', .id = 1, .bytes = 1000, .stream = 0, .time_us = 10, .addr = 0x7f0000000000},
      {.kind = 'a', .id = 2, .bytes = 3 * MIB, .stream = 0xdeadbeef, .time_us = 11, .addr = 0x7f0000200000},
      {.kind = 'f', .id = 1, .bytes = 1000, .stream = 0, .time_us = 12},
      {.kind = 'a', .id = 3, .bytes = 512, .stream = INT64_MAX, .time_us = -5, .addr = 0x7f0000000000},
      {.kind = 'O', .bytes = 80ull << 30, .stream = 7, .time_us = 13},
      {.kind = 'a', .id = 4, .bytes = PT_RECORD_MAX_BYTES, .stream = 1, .time_us = INT64_MAX, .addr = UINT64_MAX},
      {.kind = 'O', .bytes = 1, .stream = 0, .time_us = INT64_MIN + 1},
      {.kind = 'f', .id = 2, .bytes = 3 * MIB, .stream = 0xdeadbeef, .time_us = 15},
  };
  for (size_t i = 0; i < rb.n; i++) {
    const pt_event *g = &rb.ev[i], *w = &want[i];
    CU_ASSERT(g->kind == w->kind && g->id == w->id && g->bytes == w->bytes && g->stream == w->stream &&
              g->time_us == w->time_us && g->addr == w->addr);
    CU_ASSERT_EQUAL(!!(g->flags & PT_EVF_HAS_ADDR), g->kind == 'a');
  }
  free(rb.ev);
  remove(path);
  CU_ASSERT_EQUAL(PT_RECORD_MAX_BYTES, PT_TRACE_MAX_BYTES);
  CU_ASSERT_EQUAL(PT_RECORD_VERSION, PT_TRACE_VERSION);
}

static void test_refusals(void) {
  pt_err err;
  pt_record *r = (pt_record *)1;
  pt_record_meta meta = {.device = 0};
  CU_ASSERT_EQUAL(pt_record_open("/tmp/x.trace.gz", &meta, &err, &r), PT_EUSAGE);
  CU_ASSERT_PTR_NULL(r);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "plain text"));
  CU_ASSERT_EQUAL(pt_record_open("/nonexistent/x.trace", &meta, &err, &r), PT_EIO);
  CU_ASSERT_STRING_EQUAL(err.msg, "/nonexistent/x.trace: cannot open: No such file or directory");
  memsink m = {0};
  pt_record_sink s = {mem_write, mem_finish, mem_abandon, &m};
  meta.buffer_bytes = PT_RECORD_MIN_BUFFER - 1;
  CU_ASSERT_EQUAL(pt_record_open_sink(&s, "mem", &meta, &err, &r), PT_EUSAGE);
  CU_ASSERT_EQUAL(m.abandoned, 1); /* the sink released */

  pt_recorder *rec = (pt_recorder *)1;
  pt_recorder_opts o = {.path = "/tmp/run.trace.gz"};
  CU_ASSERT_EQUAL(pt_recorder_create(&o, &err, &rec), PT_EUSAGE);
  CU_ASSERT_PTR_NULL(rec);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "PAGETUNE_RECORD=/tmp/run.trace.gz: the allocator records plain text"));
  o.path = "";
  CU_ASSERT_EQUAL(pt_recorder_create(&o, &err, &rec), PT_EUSAGE);
  o.path = "/nonexistent/run.trace";
  CU_ASSERT_EQUAL(pt_recorder_create(&o, &err, &rec), PT_EIO);
  CU_ASSERT_STRING_EQUAL(err.msg, "PAGETUNE_RECORD=/nonexistent/run.trace: cannot write in /nonexistent: No such file or directory");
}

static void test_paths(void) {
  char buf[64];
  struct {
    const char *path;
    int dev;
    const char *want;
  } c[] = {{"/tmp/run.trace", 0, "/tmp/run.trace"}, {"/tmp/run.trace", 1, "/tmp/run.dev1.trace"},
           {"/tmp/run", 12, "/tmp/run.dev12"},      {"/tmp.d/run", 1, "/tmp.d/run.dev1"},
           {"/tmp/.hidden", 1, "/tmp/.hidden.dev1"}, {"a.b.trace", 3, "a.b.dev3.trace"}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    CU_ASSERT_EQUAL(pt_record_path(c[i].path, c[i].dev, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, c[i].want);
  }
  CU_ASSERT_EQUAL(pt_record_path("/tmp/run.trace", 1, buf, 19), PT_ELIMIT);
  CU_ASSERT_EQUAL(pt_record_path("/tmp/run.trace", 1, buf, 20), 0);
}

/* Buffers flushed when full: a 256-byte buffer over many records reads back whole. */
static void test_small_buffer(void) {
  memsink m = {0};
  pt_record *r = mem_record(&m, PT_RECORD_MIN_BUFFER);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  pt_err err;
  uint64_t id;
  for (uint64_t i = 0; i < 1000; i++) {
    CU_ASSERT_EQUAL(pt_record_alloc(r, i + 1, i % 3, (int64_t)i, 0x1000 * (i + 1), &id, &err), 0);
    if (i % 2) CU_ASSERT_EQUAL(pt_record_free(r, 0x1000 * i, (int64_t)i, &err), 0);
  }
  CU_ASSERT_EQUAL(pt_record_close(r, &err), 0);
  CU_ASSERT(m.writes > 50);
  CU_ASSERT_EQUAL(m.finished, 1);
  readback rb = read_mem(m.buf, m.len);
  CU_ASSERT_EQUAL(rb.rc, 0);
  CU_ASSERT_EQUAL(rb.n, 1500);
  CU_ASSERT_EQUAL(rb.info.device, 3);
  free(rb.ev);
  free(m.buf);
}

/* A write that fails: the error sticks (the sink is not asked again), close says it, no `end`: the reader refuses. */
static void test_write_failure(void) {
  for (int at = 1; at <= 4; at++) {
    memsink m = {.fail_at = at};
    pt_record_sink s = {mem_write, mem_finish, mem_abandon, &m};
    pt_record_meta meta = {.device = 0, .buffer_bytes = PT_RECORD_MIN_BUFFER};
    pt_err err;
    pt_record *r = NULL;
    int rc = pt_record_open_sink(&s, "mem", &meta, &err, &r);
    if (at == 1) { /* the header, written at open */
      CU_ASSERT_EQUAL(rc, PT_EIO);
      CU_ASSERT_STRING_EQUAL(err.msg, "mem: write failed: No space left on device");
      CU_ASSERT_EQUAL(m.abandoned, 1);
      free(m.buf);
      continue;
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    int fails = 0, writes_at_fail = 0;
    uint64_t id;
    for (uint64_t i = 0; i < 100; i++)
      if (pt_record_alloc(r, 512, 0, 1, 0x1000 * (i + 1), &id, &err) < 0) {
        if (!fails++) writes_at_fail = m.writes;
        CU_ASSERT_STRING_EQUAL(err.msg, "mem: write failed: No space left on device");
      }
    CU_ASSERT(fails > 0);
    CU_ASSERT_EQUAL(m.writes, writes_at_fail); /* nothing asked of the sink after the failure */
    CU_ASSERT_EQUAL(pt_record_close(r, &err), PT_EIO);
    CU_ASSERT_EQUAL(m.finished, 0);
    CU_ASSERT_EQUAL(m.abandoned, 1);
    readback rb = read_mem(m.buf, m.len);
    CU_ASSERT(rb.rc < 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(rb.err.msg, "truncated"));
    free(rb.ev);
    free(m.buf);
  }
}

/* ---- through the allocator --------------------------------------------------------- */


typedef struct reports {
  pthread_mutex_t lock;
  int n;
  char last[PT_ERRMSG_MAX + 128];
} reports;

static void report(void *ctx, const char *line) {
  reports *r = ctx;
  pthread_mutex_lock(&r->lock);
  r->n++;
  snprintf(r->last, sizeof r->last, "%s", line);
  pthread_mutex_unlock(&r->lock);
}

/* An allocator on modelled devices that records into path (its files, one a device). */
static pt_alloc *recorded(const pt_mech_ops *mech, uint64_t capacity, const char *path, reports *rep, pt_recorder **rec) {
  pt_params p = {0};
  pt_alloc_backend be = pt_test_model_backend(NULL);
  pt_err err = {{0}};
  pt_alloc *a = NULL;
  CU_ASSERT_EQUAL(pt_alloc_create(mech, &p, capacity, NULL, &be, &err, &a), 0);
  pt_recorder_opts o = {.path = path, .settings = "mechanism=caching", .report = report, .report_ctx = rep};
  CU_ASSERT_EQUAL(pt_recorder_create(&o, &err, rec), 0);
  pt_alloc_observer obs;
  pt_recorder_observer(*rec, &obs);
  CU_ASSERT_EQUAL(pt_alloc_set_observer(a, &obs), 0);
  return a;
}

/* What the allocator served on two devices reads back from two files, in order, with its addresses. */
static void test_observer(void) {
  char path[256], path1[256];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace"));
  pt_record_path(path, 1, path1, sizeof path1);
  reports rep = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
  pt_recorder *rec;
  pt_alloc *a = recorded(&pt_mech_caching, 64 * MIB, path, &rep, &rec);
  pt_err err;
  uint64_t x[6] = {0}, junk;
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 1000, 0, &x[0], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 1, 3 * MIB, 5, &x[1], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 40 * MIB, 9, &x[2], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 40 * MIB, 9, &junk, &err), PT_EOOM); /* past the cap: an O record */
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 0, 9, &junk, &err), 0);              /* nothing asked: nothing recorded */
  CU_ASSERT_EQUAL(pt_alloc_free(a, 0, 0xbad, &err), PT_EUSAGE);                /* refused: not recorded */
  CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x[0], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 700, 0, &x[3], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_free(a, 1, x[1], &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_set_observer(a, NULL), PT_EUSAGE); /* too late: devices are open */
  CU_ASSERT_EQUAL(pt_recorder_close(rec, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x[2], &err), 0); /* after close: served, not recorded */
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 2, 512, 0, &x[4], &err), 0); /* a device first used after close: no file */
  CU_ASSERT_EQUAL(rep.n, 0);

  readback r0 = read_file(path), r1 = read_file(path1);
  CU_ASSERT_EQUAL_FATAL(r0.rc, 0);
  CU_ASSERT_EQUAL_FATAL(r1.rc, 0);
  CU_ASSERT_EQUAL(r0.info.device, 0);
  CU_ASSERT_EQUAL(r1.info.device, 1);
  CU_ASSERT_STRING_EQUAL(r0.info.settings, "mechanism=caching");
  CU_ASSERT_EQUAL_FATAL(r0.n, 5);
  CU_ASSERT(r0.ev[0].kind == 'a' && r0.ev[0].id == 1 && r0.ev[0].bytes == 1000 && r0.ev[0].addr == x[0] && r0.ev[0].stream == 0);
  CU_ASSERT(r0.ev[1].kind == 'a' && r0.ev[1].id == 2 && r0.ev[1].bytes == 40 * MIB && r0.ev[1].addr == x[2] && r0.ev[1].stream == 9);
  CU_ASSERT(r0.ev[2].kind == 'O' && r0.ev[2].bytes == 40 * MIB && r0.ev[2].stream == 9);
  CU_ASSERT(r0.ev[3].kind == 'f' && r0.ev[3].id == 1);
  CU_ASSERT(r0.ev[4].kind == 'a' && r0.ev[4].id == 3 && r0.ev[4].bytes == 700 && r0.ev[4].addr == x[3]);
  for (size_t i = 1; i < r0.n; i++) CU_ASSERT(r0.ev[i].time_us >= r0.ev[i - 1].time_us);
  /* times are microseconds since the epoch: after 2020, and not in the future */
  CU_ASSERT(r0.ev[0].time_us > INT64_C(1577836800000000));
  CU_ASSERT(r0.ev[0].time_us <= (int64_t)time(NULL) * 1000000 + 1000000);
  CU_ASSERT_EQUAL_FATAL(r1.n, 2);
  CU_ASSERT(r1.ev[0].kind == 'a' && r1.ev[0].id == 1 && r1.ev[0].bytes == 3 * MIB && r1.ev[0].addr == x[1] && r1.ev[0].stream == 5);
  CU_ASSERT(r1.ev[1].kind == 'f' && r1.ev[1].id == 1 && r1.ev[1].bytes == 3 * MIB);
  char path2[256];
  pt_record_path(path, 2, path2, sizeof path2);
  CU_ASSERT_EQUAL(access(path2, F_OK), -1);

  /* pagetune trace stats reads it (the program beside the tests, when make check runs them) */
  const char *top = getenv("top_builddir");
  if (top) {
    char cmd[1024], out[4096] = "";
    snprintf(cmd, sizeof cmd, "%s/pagetune trace stats --json %s", top, path);
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    CU_ASSERT_EQUAL(pclose(p), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"allocs\":3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"frees\":1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"observed_ooms\":1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"live_bytes_at_end\":41943740"));
  }
  free(r0.ev);
  free(r1.ev);
  remove(path);
  remove(path1);
  pt_recorder_free(rec);
  pt_alloc_destroy(a);
}

/* Device 0's file is /dev/full: one line says so, device 0 goes on serving unrecorded, device 1 records. */
static void test_dev_full(void) {
  char dir[256], path[300], path1[300];
  snprintf(dir, sizeof dir, "%s", pt_test_tmp(".d"));
  CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/full.trace", dir);
  pt_record_path(path, 1, path1, sizeof path1);
  CU_ASSERT_EQUAL_FATAL(symlink("/dev/full", path), 0);
  reports rep = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
  pt_recorder *rec;
  pt_alloc *a = recorded(&pt_mech_caching, 0, path, &rep, &rec);
  pt_err err;
  uint64_t x = 0;
  for (int i = 0; i < 100; i++) {
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0, &x, &err), 0);
    CU_ASSERT(x != 0);
    CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 1, 4096, 0, &x, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_free(a, 1, x, &err), 0);
  }
  CU_ASSERT_EQUAL(rep.n, 1);
  char want[600];
  snprintf(want, sizeof want, "%s: write failed: No space left on device: recording of device 0 stopped (the allocator goes on serving)", path);
  CU_ASSERT_STRING_EQUAL(rep.last, want);
  CU_ASSERT_EQUAL(pt_recorder_close(rec, &err), 0); /* device 0 was given up already; device 1 closes clean */
  CU_ASSERT_EQUAL(rep.n, 1);
  pt_alloc_stats s;
  pt_alloc_get_stats(a, 0, &s);
  CU_ASSERT_EQUAL(s.allocs, 100);
  readback rb = read_file(path1);
  CU_ASSERT_EQUAL(rb.rc, 0);
  CU_ASSERT_EQUAL(rb.n, 200);
  free(rb.ev);
  pt_recorder_free(rec);
  pt_alloc_destroy(a);
  remove(path);
  remove(path1);
  rmdir(dir);
}

/* Eight threads on three devices through the allocator: every file valid, its counts the device's statistics. */
typedef struct worker {
  pt_alloc *a;
  unsigned seed;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  uint64_t live[3][16] = {{0}};
  for (int i = 0; i < 6000; i++) {
    unsigned r = (w->seed = w->seed * 1103515245u + 12345u) >> 8;
    int dev = (int)(r % 3), k = (int)((r >> 2) % 16);
    pt_err err;
    if (live[dev][k]) {
      if (pt_alloc_free(w->a, dev, live[dev][k], &err) < 0) w->bad++;
      live[dev][k] = 0;
    } else if (pt_alloc_malloc(w->a, dev, 512 + (r >> 6) % (2 * MIB), (r >> 4) % 3, &live[dev][k], &err) < 0) {
      w->bad++;
    }
  }
  return (void *)(intptr_t)w->bad; /* what is live stays live: the traces end with it */
}

static void test_threads(void) {
  char path[256];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace"));
  reports rep = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
  pt_recorder *rec;
  pt_alloc *a = recorded(&pt_mech_caching, 0, path, &rep, &rec);
  worker w[8];
  for (int i = 0; i < 8; i++) w[i] = (worker){a, (unsigned)i * 7919u + 3u, 0};
  int bad = pt_test_threads(8, work, w, sizeof w[0]);
  CU_ASSERT_EQUAL(bad, 0);
  pt_err err;
  CU_ASSERT_EQUAL(pt_recorder_close(rec, &err), 0);
  CU_ASSERT_EQUAL(rep.n, 0);
  for (int dev = 0; dev < 3; dev++) {
    char p[300];
    pt_record_path(path, dev, p, sizeof p);
    readback rb = read_file(p);
    CU_ASSERT_EQUAL(rb.rc, 0);
    pt_alloc_stats s;
    pt_alloc_get_stats(a, dev, &s);
    uint64_t allocs = 0, frees = 0, live = 0, next = 1;
    for (size_t i = 0; i < rb.n; i++) {
      if (rb.ev[i].kind == 'a') {
        allocs++;
        live += rb.ev[i].bytes;
        if (rb.ev[i].id != next++) bad++; /* ids from 1, in order */
      } else if (rb.ev[i].kind == 'f') {
        frees++;
        live -= rb.ev[i].bytes;
      }
      if (i && rb.ev[i].time_us < rb.ev[i - 1].time_us) bad++;
    }
    CU_ASSERT_EQUAL(allocs, s.allocs);
    CU_ASSERT_EQUAL(frees, s.frees);
    CU_ASSERT_EQUAL(live, s.allocated_bytes);
    CU_ASSERT(allocs > 5000);
    free(rb.ev);
    remove(p);
  }
  CU_ASSERT_EQUAL(bad, 0);
  pt_recorder_free(rec);
  pt_alloc_destroy(a);
}

/* One record, eight threads calling it directly (each its own addresses): one valid trace, the end count all of them. */
typedef struct direct {
  pt_record *r;
  uint64_t base;
  int bad;
} direct;

static void *direct_work(void *arg) {
  direct *d = arg;
  pt_err err;
  uint64_t id;
  for (uint64_t i = 0; i < 5000; i++) {
    if (pt_record_alloc(d->r, i + 1, d->base, (int64_t)i, d->base + i, &id, &err) < 0) d->bad++;
    if (i % 4 == 3)
      for (uint64_t j = i - 3; j <= i; j++)
        if (pt_record_free(d->r, d->base + j, (int64_t)i, &err) < 0) d->bad++;
  }
  return (void *)(intptr_t)d->bad;
}

static void test_threads_one_record(void) {
  memsink m = {0};
  pt_record *r = mem_record(&m, 4096);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  direct d[8];
  for (int i = 0; i < 8; i++) d[i] = (direct){r, (uint64_t)(i + 1) << 40, 0};
  int bad = pt_test_threads(8, direct_work, d, sizeof d[0]);
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(pt_record_count(r), 8 * 10000);
  pt_err err;
  CU_ASSERT_EQUAL(pt_record_close(r, &err), 0);
  readback rb = read_mem(m.buf, m.len);
  CU_ASSERT_EQUAL(rb.rc, 0);
  CU_ASSERT_EQUAL(rb.n, 8 * 10000);
  for (size_t i = 0; i < rb.n; i++) /* each record whole: its stream is its thread's, its address in that thread's range */
    if (rb.ev[i].kind == 'a' && (rb.ev[i].addr >> 40 != rb.ev[i].stream >> 40 || rb.ev[i].addr - rb.ev[i].stream + 1 != rb.ev[i].bytes)) bad++;
  CU_ASSERT_EQUAL(bad, 0);
  free(rb.ev);
  free(m.buf);
}

/* A child forked after the file opened ends nothing: the parent's trace stays whole. */
static void test_fork(void) {
  char path[256];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace"));
  reports rep = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
  pt_recorder *rec;
  pt_alloc *a = recorded(&pt_mech_direct, 0, path, &rep, &rec);
  pt_err err;
  uint64_t x, y;
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 4096, 0, &x, &err), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(pt_recorder_close(rec, &err) == 0 ? 0 : 1);
  CU_ASSERT_FATAL(pid > 0);
  int status;
  CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 8192, 0, &y, &err), 0);
  CU_ASSERT_EQUAL(pt_alloc_free(a, 0, x, &err), 0);
  CU_ASSERT_EQUAL(pt_recorder_close(rec, &err), 0);
  readback rb = read_file(path);
  CU_ASSERT_EQUAL(rb.rc, 0);
  CU_ASSERT_EQUAL(rb.n, 3);
  free(rb.ev);
  remove(path);
  pt_recorder_free(rec);
  pt_alloc_destroy(a);
}

/* The library's @settings: its configuration as a PAGETUNE_ALLOC_CONF string that reads back the same. */
static void test_settings(void) {
  const char *confs[] = {"mechanism=caching", "mechanism=caching,max_split_size_mb=64,garbage_collection_threshold=0.6,capacity=629145600",
                         "mechanism=stitch,policy=stitch,stitch_min_bytes=2097152,device_total_bytes=150109880320",
                         "mechanism=caching,max_split_size_mb=inf"};
  for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
    pt_libconf c, back;
    pt_err err;
    char s[1024];
    CU_ASSERT_EQUAL_FATAL(pt_libconf_from_conf_string(confs[i], &c, &err), 0);
    CU_ASSERT_EQUAL(pt_libconf_to_conf_string(&c, s, sizeof s), 0);
    CU_ASSERT_EQUAL_FATAL(pt_libconf_from_conf_string(s, &back, &err), 0);
    CU_ASSERT(back.mech == c.mech && back.capacity == c.capacity && !strcmp(back.policy, c.policy) &&
              back.params.n == c.params.n && back.device_total_bytes == c.device_total_bytes);
    for (int k = 0; k < c.params.n; k++)
      CU_ASSERT_EQUAL(pt_params_get(&back.params, c.params.v[k].name, -1), c.params.v[k].value);
    size_t len = strlen(s);
    CU_ASSERT_EQUAL(pt_libconf_to_conf_string(&c, s, len), PT_ELIMIT);
    CU_ASSERT_EQUAL(pt_libconf_to_conf_string(&c, s, len + 1), 0);
  }
}

int pt_test_add_record(void) {
  CU_pSuite s = CU_add_suite("record", NULL, NULL);
  if (!s) return CU_get_error();
  if (!CU_add_test(s, "recorded allocs, frees and OOMs read back the same", test_round_trip) ||
      !CU_add_test(s, ".gz, bad paths and small buffers refused", test_refusals) ||
      !CU_add_test(s, "a file per device: .devN before the extension", test_paths) ||
      !CU_add_test(s, "a small buffer flushed when full", test_small_buffer) ||
      !CU_add_test(s, "a failed write sticks, no end line: the reader refuses", test_write_failure) ||
      !CU_add_test(s, "the allocator's observer: two devices, two files", test_observer) ||
      !CU_add_test(s, "/dev/full: told once, the allocator goes on serving", test_dev_full) ||
      !CU_add_test(s, "eight threads on three devices", test_threads) ||
      !CU_add_test(s, "eight threads on one record", test_threads_one_record) ||
      !CU_add_test(s, "a forked child leaves the parent's file alone", test_fork) ||
      !CU_add_test(s, "@settings reads back as the configuration", test_settings))
    return CU_get_error();
  return CUE_SUCCESS;
}
