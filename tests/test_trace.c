/*
 * test_trace.c — the native trace format: writer/reader round trip, and every
 * kind of bad input refused with its line and reason (never a crash, never a
 * partial output file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "trace.h"

/* One record of every kind, in an order the checks accept. */
static const pt_event sample[] = {
    {.kind = PT_EV_INIT_SEGMENT, .addr = 0x7f0000000000, .bytes = 20 << 20, .stream = 0},
    {.kind = PT_EV_INIT_SEGMENT, .addr = 0x7e0000000000, .bytes = 2 << 20, .stream = 0x55,
     .flags = PT_SEGF_EXPANDABLE},
    {.kind = PT_EV_INIT_ALLOC, .id = 9, .bytes = 4096, .stream = 0, .addr = 0x7f0000000000,
     .flags = PT_EVF_HAS_ADDR},
    {.kind = PT_EV_SEG_ALLOC, .addr = 0x7f0002000000, .bytes = 2 << 20, .stream = 0x55, .time_us = 10},
    {.kind = PT_EV_ALLOC, .id = 1, .bytes = 1000, .stream = 0x55, .time_us = 11, .addr = 0x7f0002000000,
     .flags = PT_EVF_HAS_ADDR},
    {.kind = PT_EV_ALLOC, .id = 2, .bytes = 1ull << 40, .stream = 0, .time_us = -5},
    {.kind = PT_EV_ACCESS, .id = 1, .offset = 512, .bytes = 488, .time_us = 12, .stream = 0x55},
    {.kind = PT_EV_FREE, .id = 1, .time_us = 13, .bytes = 1000, .stream = 0x55},
    {.kind = PT_EV_FREE, .id = 9, .time_us = 14, .bytes = 4096, .stream = 0},
    {.kind = PT_EV_ALLOC, .id = 1, .bytes = 7, .stream = 0, .time_us = 15}, /* id reuse after free */
    {.kind = PT_EV_SEG_MAP, .addr = 0x7e0000200000, .bytes = 2 << 20, .stream = 0x55, .time_us = 16},
    {.kind = PT_EV_SEG_UNMAP, .addr = 0x7e0000200000, .bytes = 2 << 20, .stream = 0x55, .time_us = 17},
    {.kind = PT_EV_SEG_FREE, .addr = 0x7f0002000000, .bytes = 2 << 20, .stream = 0x55, .time_us = 18},
    {.kind = PT_EV_OOM, .bytes = 1ull << 34, .stream = 0, .time_us = 19},
};
#define NSAMPLE (sizeof sample / sizeof sample[0])

static void round_trip(const char *suffix) {
  const char *path = pt_test_tmp(suffix);
  char saved[4096];
  snprintf(saved, sizeof saved, "%s", path);
  pt_err err = {{0}};
  pt_trace_info info = {.version = 1, .device = 3};
  snprintf(info.source, sizeof info.source, "unit test\nwith a newline");
  snprintf(info.tool, sizeof info.tool, "test_trace");
  snprintf(info.settings, sizeof info.settings, "expandable_segments=True");
  pt_trace_writer *w;
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(saved, &info, &err, &w), 0);
  for (size_t i = 0; i < NSAMPLE; i++) CU_ASSERT_EQUAL(pt_trace_writer_put(w, &sample[i], &err), 0);
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_commit(w, &err), 0);

  pt_trace *t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(saved, NULL, &err, &t), 0);
  const pt_trace_info *ri = pt_trace_get_info(t);
  CU_ASSERT_EQUAL(ri->version, 1);
  CU_ASSERT_EQUAL(ri->device, 3);
  CU_ASSERT_STRING_EQUAL(ri->source, "unit test with a newline");
  CU_ASSERT_STRING_EQUAL(ri->tool, "test_trace");
  CU_ASSERT_STRING_EQUAL(ri->settings, "expandable_segments=True");
  CU_ASSERT_STRING_EQUAL(pt_trace_format_name(t), "native");
  pt_event ev;
  size_t n = 0;
  int rc;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
    CU_ASSERT_FATAL(n < NSAMPLE);
    const pt_event *want = &sample[n++];
    CU_ASSERT_EQUAL(ev.kind, want->kind);
    CU_ASSERT_EQUAL(ev.id, want->id);
    CU_ASSERT_EQUAL(ev.bytes, want->bytes);
    CU_ASSERT_EQUAL(ev.addr, want->addr);
    CU_ASSERT_EQUAL(ev.stream, want->stream);
    CU_ASSERT_EQUAL(ev.offset, want->offset);
    CU_ASSERT_EQUAL(ev.time_us, want->time_us);
    CU_ASSERT_EQUAL(ev.flags, want->flags);
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(n, NSAMPLE);
  pt_trace_close(t);
  unlink(saved);
}

static void test_round_trip_plain(void) { round_trip(".trace"); }
static void test_round_trip_gzip(void) { round_trip(".trace.gz"); }

/*
 * Private pools and captures (+pool FIRST SECOND, +capture): written before
 * the records they annotate, read back as each record's pool number, the
 * same pool ids in the order first met, and the capture flag.
 */
static void test_pools_round_trip(void) {
  const char *path = pt_test_tmp(".trace");
  char saved[4096];
  snprintf(saved, sizeof saved, "%s", path);
  pt_err err = {{0}};
  pt_pools pools = {0};
  uint16_t k1, k2, again;
  CU_ASSERT_EQUAL_FATAL(pt_pools_intern(&pools, 7, 3, &k1), 0);
  CU_ASSERT_EQUAL_FATAL(pt_pools_intern(&pools, 1, 0, &k2), 0);
  CU_ASSERT_EQUAL(pt_pools_intern(&pools, 7, 3, &again), 0);
  CU_ASSERT_EQUAL(again, k1);
  CU_ASSERT_EQUAL(pt_pools_intern(&pools, 0, 0, &again), PT_EFORMAT); /* the default pool has no number */
  /* written with pool 2 = (1, 0) met first: the file numbers (1, 0) as 1 */
  const pt_event ev[] = {
      {.kind = PT_EV_INIT_SEGMENT, .addr = 0x7f0000000000, .bytes = 2 << 20, .pool = k2},
      {.kind = PT_EV_SEG_ALLOC, .addr = 0x7f0000200000, .bytes = 2 << 20, .time_us = 1, .flags = PT_EVF_CAPTURE},
      {.kind = PT_EV_ALLOC, .id = 1, .bytes = 512, .time_us = 2, .addr = 0x7f0000000000, .flags = PT_EVF_HAS_ADDR,
       .pool = k2},
      {.kind = PT_EV_ALLOC, .id = 2, .bytes = 512, .time_us = 3, .addr = 0x7f0000200000,
       .flags = PT_EVF_HAS_ADDR | PT_EVF_CAPTURE, .pool = k1},
      {.kind = PT_EV_ALLOC, .id = 3, .bytes = 512, .time_us = 4},
      {.kind = PT_EV_FREE, .id = 1, .time_us = 5},
      {.kind = PT_EV_FREE, .id = 2, .time_us = 6, .flags = PT_EVF_DEFERRED}, /* +deferred */
  };
  const uint16_t want_pool[] = {1, 0, 1, 2, 0, 0, 0};
  pt_trace_info info = {.version = 1, .device = 0};
  pt_trace_writer *w;
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(saved, &info, &err, &w), 0);
  pt_trace_writer_set_pools(w, &pools);
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) CU_ASSERT_EQUAL(pt_trace_writer_put(w, &ev[i], &err), 0);
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_commit(w, &err), 0);
  pt_trace *t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(saved, NULL, &err, &t), 0);
  pt_event got;
  size_t n = 0;
  int rc;
  while ((rc = pt_trace_next(t, &got, &err)) > 0) {
    CU_ASSERT_FATAL(n < sizeof ev / sizeof ev[0]);
    CU_ASSERT_EQUAL(got.kind, ev[n].kind);
    CU_ASSERT_EQUAL(got.pool, want_pool[n]);
    CU_ASSERT_EQUAL(got.flags & PT_EVF_CAPTURE, ev[n].flags & PT_EVF_CAPTURE);
    CU_ASSERT_EQUAL(got.flags & PT_EVF_DEFERRED, ev[n].flags & PT_EVF_DEFERRED);
    n++;
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(n, sizeof ev / sizeof ev[0]);
  const pt_pools *rp = pt_trace_pools(t);
  CU_ASSERT_EQUAL_FATAL(rp->n, 2);
  CU_ASSERT_EQUAL(rp->id[0].first, 1);
  CU_ASSERT_EQUAL(rp->id[0].second, 0);
  CU_ASSERT_EQUAL(rp->id[1].first, 7);
  CU_ASSERT_EQUAL(rp->id[1].second, 3);
  pt_trace_close(t);
  /* a record with a pool the writer was not given a table for is an error, and no file is left */
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(saved, &info, &err, &w), 0);
  CU_ASSERT(pt_trace_writer_put(w, &ev[2], &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "pool 2 unknown") ? err.msg : NULL);
  pt_trace_writer_abort(w);
  /* and so is one on a stream past 2^63, which no reader would take */
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(saved, &info, &err, &w), 0);
  pt_event high = {.kind = PT_EV_ALLOC, .id = 1, .bytes = 512, .stream = UINT64_C(1) << 63};
  CU_ASSERT(pt_trace_writer_put(w, &high, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "stream 0x8000000000000000: past 2^63") ? err.msg : NULL);
  pt_trace_writer_abort(w);
  pt_pools_free(&pools);
  unlink(saved);
}

/* Read text as a trace; return the first error's message ("" when it reads clean). */
static const char *read_text(const char *text) {
  static pt_err err;
  memset(&err, 0, sizeof err);
  pt_trace *t;
  if (pt_trace_open_mem(text, strlen(text), "mem", NULL, &err, &t) < 0) return err.msg;
  pt_event ev;
  int rc;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {}
  pt_trace_close(t);
  return rc < 0 ? err.msg : "";
}

#define EXPECT_ERROR(text, ...)                                                                  \
  do {                                                                                           \
    const char *m_ = read_text(text);                                                            \
    const char *want_[] = {__VA_ARGS__};                                                         \
    CU_ASSERT(strncmp(m_, "mem: ", 5) == 0);                                                     \
    for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                               \
      if (!strstr(m_, want_[i_])) {                                                              \
        fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", m_, want_[i_]);                     \
        CU_FAIL("error message");                                                                \
      }                                                                                          \
  } while (0)

static void test_good_minimal(void) {
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\nend 0\n"), "");
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\n@source x\n# comment\n\na 1 10 0 5\nf 1 6\nend 2\n"), "");
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\r\na 0x10 0x20 0x0 -7 0xdead\r\nend 1\r\n"), "");
}

/* How the format grows without a new version: lines an older reader skips. */
static void test_skippable_additions(void) {
  const char *text = "pagetune-trace 1\n@source x\n@frames_table f.bin\n+frames 1 0x10 0x20\n"
                     "a 1 10 0 5\n+graph_pool 1 7\nf 1 6\n+anything at all\nend 2\n";
  pt_trace *t;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_trace_open_mem(text, strlen(text), "mem", NULL, &err, &t), 0);
  pt_event ev;
  CU_ASSERT_EQUAL(pt_trace_next(t, &ev, &err), 1);
  CU_ASSERT_EQUAL(ev.kind, PT_EV_ALLOC);
  CU_ASSERT_EQUAL(pt_trace_next(t, &ev, &err), 1);
  CU_ASSERT_EQUAL(ev.kind, PT_EV_FREE);
  CU_ASSERT_EQUAL(pt_trace_next(t, &ev, &err), 0);
  pt_trace_close(t);
  EXPECT_ERROR("pagetune-trace 1\nend 0\n+late 1\n", "line 3", "after the end line");
}

/* Traces written by pagetune 0.1.0 (tests/data/v1/README.md) still read, every record. */
static void test_v1_fixtures(void) {
  const char *names[] = {"tests/data/v1/trace.gz", "tests/data/v1/initial.trace.gz"};
  const unsigned long long want[] = {5653, 2005}; /* the importer's count when they were written */
  for (int i = 0; i < 2; i++) {
    pt_trace *t;
    pt_err err;
    int rc = pt_trace_open(pt_test_src(names[i]), NULL, &err, &t);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(pt_trace_get_info(t)->version, 1);
    pt_event ev;
    unsigned long long n = 0;
    while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
      n++;
      CU_ASSERT_EQUAL(ev.pool, 0); /* written before pools existed: all in the default pool */
      CU_ASSERT_EQUAL(ev.flags & PT_EVF_CAPTURE, 0);
    }
    if (rc < 0) fprintf(stderr, "\n  %s\n", err.msg);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(n, want[i]);
    pt_trace_close(t);
  }
}

/* Malformed +pool and +capture lines: one error naming the line and the reason. */
static void test_bad_pool_lines(void) {
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\n+pool 1 0\n+capture\na 1 10 0 5 0x100\nend 1\n"), "");
  EXPECT_ERROR("pagetune-trace 1\n+pool 1\na 1 10 0 5\nend 1\n", "line 2", "missing field");
  EXPECT_ERROR("pagetune-trace 1\n+pool one 0\na 1 10 0 5\nend 1\n", "line 2", "bad number");
  EXPECT_ERROR("pagetune-trace 1\n+pool 1 0 9\na 1 10 0 5\nend 1\n", "line 2", "extra fields after +pool");
  EXPECT_ERROR("pagetune-trace 1\n+pool 0 0\na 1 10 0 5\nend 1\n", "line 2", "default pool");
  EXPECT_ERROR("pagetune-trace 1\n+pool 1 0\n+pool 2 0\na 1 10 0 5\nend 1\n", "line 3", "two +pool lines");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\n+pool 1 0\nf 1 6\nend 2\n", "line 4", "+pool before a 'f' record");
  EXPECT_ERROR("pagetune-trace 1\n+pool 1 0\nend 0\n", "line 3", "+pool before the end line");
  EXPECT_ERROR("pagetune-trace 1\n+capture now\na 1 10 0 5\nend 1\n", "line 2", "extra fields after +capture");
  EXPECT_ERROR("pagetune-trace 1\n+capture\n+capture\na 1 10 0 5\nend 1\n", "line 3", "two +capture lines");
  EXPECT_ERROR("pagetune-trace 1\n+capture\nS 0x100 512 0\nend 1\n", "line 3", "+capture before an initial-state");
  EXPECT_ERROR("pagetune-trace 1\n+capture\nend 0\n", "line 3", "+capture before the end line");
  /* +deferred: before a free only */
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\na 1 10 0 5\n+deferred\nf 1 6\nend 2\n"), "");
  EXPECT_ERROR("pagetune-trace 1\n+deferred\na 1 10 0 5\nend 1\n", "line 3", "+deferred before a 'a' record, not a free");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\n+deferred 1\nf 1 6\nend 2\n", "line 3", "extra fields after +deferred");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\n+deferred\n+deferred\nf 1 6\nend 2\n", "line 4", "two +deferred lines");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nf 1 6\n+deferred\nend 2\n", "line 5", "+deferred before the end line");
}

static void test_bad_header(void) {
  EXPECT_ERROR("", "empty file");
  EXPECT_ERROR("hello world\n", "byte 0", "not a pagetune trace");
  EXPECT_ERROR("pagetune-trace\nend 0\n", "line 1", "bad header");
  EXPECT_ERROR("pagetune-trace one\nend 0\n", "line 1", "bad header");
  EXPECT_ERROR("pagetune-trace 2\nend 0\n", "line 1", "written by a newer pagetune (trace format 2 > 1)");
  EXPECT_ERROR("pagetune-trace 0\nend 0\n", "line 1", "no trace format version 0");
  EXPECT_ERROR("pagetune-trace 1\n@device -1\nend 0\n", "line 2", "@device");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\n@source late\nend 1\n", "line 3", "header field after");
}

static void test_truncated(void) {
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\n", "line 2", "truncated (no end line)");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nf 1", "line 3", "truncated");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0\nend 1\n", "line 2", "missing field time");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nend 2\n", "line 3", "end line says 2 records, file has 1");
  EXPECT_ERROR("pagetune-trace 1\nend 0\na 1 10 0 5\n", "line 3", "after the end line");
}

static void test_bad_values(void) {
  EXPECT_ERROR("pagetune-trace 1\na 1 -5 0 5\nend 1\n", "line 2", "negative bytes");
  EXPECT_ERROR("pagetune-trace 1\na 1 99999999999999999999 0 5\nend 1\n", "line 2", "bytes out of range");
  EXPECT_ERROR("pagetune-trace 1\na 1 2251799813685248 0 5\nend 1\n", "line 2", "absurd size");
  EXPECT_ERROR("pagetune-trace 1\na 1 12x 0 5\nend 1\n", "line 2", "bad number in field bytes");
  EXPECT_ERROR("pagetune-trace 1\na 1 12 0 5 0x10 99\nend 1\n", "line 2", "extra fields");
  EXPECT_ERROR("pagetune-trace 1\nq 1\nend 1\n", "line 2", "unknown record");
  EXPECT_ERROR("pagetune-trace 1\nalloc 1 2 0 0\nend 1\n", "line 2", "unknown record");
  EXPECT_ERROR("pagetune-trace 1\nA 0x1000 0 0 5\nend 1\n", "line 2", "segment of 0 bytes");
  EXPECT_ERROR("pagetune-trace 1\nS 0x1000 4096 0 7\nend 1\n", "line 2", "unknown segment flags");
  /* a stream past 2^63, in every record that has one (the cudaMallocAsync model keeps a flag in that bit) */
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0x8000000000000000 5\nend 1\n", "line 2", "stream 0x8000000000000000: past 2^63");
  EXPECT_ERROR("pagetune-trace 1\nS 0x1000 4096 0xffffffffffffffff\nend 0\n", "line 2", "past 2^63");
  EXPECT_ERROR("pagetune-trace 1\nI 1 10 0x8000000000000001 0x1000\nend 0\n", "line 2", "past 2^63");
  EXPECT_ERROR("pagetune-trace 1\nA 0x1000 4096 0x8000000000000000 5\nend 1\n", "line 2", "past 2^63");
  EXPECT_ERROR("pagetune-trace 1\nO 4096 0x8000000000000000 5\nend 1\n", "line 2", "past 2^63");
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\na 1 10 0x7fffffffffffffff 5\nend 1\n"), "");
  /* initial segments that overlap (in either order, or the same one twice), or pass the end of the address
     space: every mechanism would hold their bytes twice, or wrap */
  EXPECT_ERROR("pagetune-trace 1\nS 0x100000 2097152 0\nS 0x100000 2097152 0\nend 2\n", "line 3",
               "initial segment [0x100000, +2097152) overlaps the one at 0x100000");
  EXPECT_ERROR("pagetune-trace 1\nS 0x400000 2097152 0\nS 0x200000 2097153 0\nend 2\n", "line 3",
               "overlaps the one at 0x400000");
  EXPECT_ERROR("pagetune-trace 1\nS 0x200000 2097152 0\nS 0x800000 4096 0\nS 0x3ff000 8192 0\nend 3\n",
               "line 4", "overlaps the one at 0x200000");
  EXPECT_ERROR("pagetune-trace 1\nS 0xfffffffffff00000 2097152 0\nend 1\n", "line 2",
               "passes the end of the address space");
  CU_ASSERT_STRING_EQUAL(read_text("pagetune-trace 1\nS 0x400000 2097152 0\nS 0x200000 2097152 0\n"
                                   "S 0x600000 2097152 0 1\nend 3\n"), ""); /* adjacent ones are fine */
}

static void test_bad_ids(void) {
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nf 2 6\nend 2\n", "line 3", "free of unknown id 2");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nf 1 6\nf 1 7\nend 3\n", "line 4", "double free of id 1");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\na 1 10 0 6\nend 2\n", "line 3", "id 1 reused while still live");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nx 1 8 4 6\nend 2\n", "line 3", "outside id 1");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nf 1 6\nx 1 0 4 7\nend 3\n", "line 4", "access after free");
  EXPECT_ERROR("pagetune-trace 1\na 1 10 0 5\nS 0x1000 4096 0\nend 2\n", "line 3", "initial-state record");
}

static void test_long_line(void) {
  size_t n = PT_TRACE_MAX_LINE + 100;
  char *text = malloc(n + 64);
  CU_ASSERT_FATAL(text != NULL);
  strcpy(text, "pagetune-trace 1\n# ");
  size_t len = strlen(text);
  memset(text + len, 'x', n);
  strcpy(text + len + n, "\nend 0\n");
  const char *m = read_text(text);
  CU_ASSERT_PTR_NOT_NULL(strstr(m, "line 2: longer than"));
  free(text);
}

/* A gzip'd trace cut in half fails cleanly. */
static void test_truncated_gzip(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace.gz"));
  pt_err err = {{0}};
  pt_trace_info info = {.version = 1, .device = -1};
  pt_trace_writer *w;
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(path, &info, &err, &w), 0);
  for (uint64_t i = 1; i <= 20000; i++) {
    pt_event a = {.kind = PT_EV_ALLOC, .id = i, .bytes = i * 4099 % 100000 + 1, .time_us = (int64_t)i};
    CU_ASSERT_EQUAL(pt_trace_writer_put(w, &a, &err), 0);
  }
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_commit(w, &err), 0);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
  CU_ASSERT_EQUAL_FATAL(truncate(path, st.st_size / 2), 0);
  pt_trace *t;
  int rc = pt_trace_open(path, NULL, &err, &t);
  if (rc == 0) {
    pt_event ev;
    while ((rc = pt_trace_next(t, &ev, &err)) > 0) {}
    pt_trace_close(t);
  }
  CU_ASSERT(rc < 0);
  CU_ASSERT(strstr(err.msg, path) == err.msg);
  unlink(path);
}

/* A writer that fails or is aborted leaves nothing behind. */
static void test_writer_no_partial(void) {
  pt_err err = {{0}};
  pt_trace_info info = {.version = 1, .device = -1};
  pt_trace_writer *w;
  CU_ASSERT(pt_trace_writer_open("/nonexistent-dir/x.trace", &info, &err, &w) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent-dir/x.trace: cannot create"));

  char path[4096];
  snprintf(path, sizeof path, "%s", pt_test_tmp(".trace"));
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(path, &info, &err, &w), 0);
  pt_event a = {.kind = PT_EV_ALLOC, .id = 1, .bytes = 10};
  CU_ASSERT_EQUAL(pt_trace_writer_put(w, &a, &err), 0);
  pt_trace_writer_abort(w);
  CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
  /* and no temporary beside it */
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls %s.tmp.* >/dev/null 2>&1", path);
  CU_ASSERT_NOT_EQUAL(system(cmd), 0);
}

int pt_test_add_trace(void) {
  CU_pSuite s = CU_add_suite("trace", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "round trip, plain", test_round_trip_plain);
  CU_add_test(s, "round trip, gzip", test_round_trip_gzip);
  CU_add_test(s, "minimal and lenient forms", test_good_minimal);
  CU_add_test(s, "bad header and version", test_bad_header);
  CU_add_test(s, "truncated files", test_truncated);
  CU_add_test(s, "negative, absurd and malformed values", test_bad_values);
  CU_add_test(s, "unknown, double-freed and reused ids", test_bad_ids);
  CU_add_test(s, "overlong line", test_long_line);
  CU_add_test(s, "truncated gzip", test_truncated_gzip);
  CU_add_test(s, "writer leaves no partial file", test_writer_no_partial);
  CU_add_test(s, "+ lines and unknown @ keys are skipped", test_skippable_additions);
  CU_add_test(s, "v1 fixtures read", test_v1_fixtures);
  CU_add_test(s, "+pool, +capture and +deferred: written, read back", test_pools_round_trip);
  CU_add_test(s, "malformed +pool, +capture and +deferred lines refused with their line", test_bad_pool_lines);
  return CU_get_error();
}
