/*
 * test_snapshot.c — importing PyTorch memory snapshots.
 *
 * The expected numbers in tests/data/NAME.expected.json come from Python's own
 * pickle module reading the same files (tests/snapshot_stats.py, an
 * independent implementation of the rules in sim/snapshot.h); every key in
 * them must match what the C importer reports, and an import written to a
 * native trace must read back to the same stats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "trace.h"
#include "tracestats.h"

static const struct {
  const char *name;
  size_t off;
} fields[] = {
#define PT_X(f, h) {#f, offsetof(pt_trace_stats, f)},
    PT_TRACE_STATS_FIELDS(PT_X)
#undef PT_X
};

static int stats_of(const char *path, int device, pt_trace_stats *s, pt_err *err) {
  pt_trace *t;
  pt_trace_opts o = {.device = device};
  int rc = pt_trace_open(path, &o, err, &t);
  if (rc < 0) return rc;
  rc = pt_trace_stats_compute(t, s, err);
  pt_trace_close(t);
  return rc;
}

/* Compare every "key": int in the expected JSON with the computed stats. */
static void check_expected(const pt_trace_stats *s, const char *expected_rel) {
  FILE *f = fopen(pt_test_src(expected_rel), "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  int matched = 0;
  for (char *p = strchr(buf, '"'); p; p = strchr(p, '"')) {
    char *q = strchr(p + 1, '"');
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    *q = 0;
    const char *key = p + 1;
    unsigned long long want = strtoull(q + 2 + strspn(q + 2, " "), &p, 10);
    size_t i;
    for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
      if (!strcmp(fields[i].name, key)) break;
    if (i == sizeof fields / sizeof fields[0]) {
      fprintf(stderr, "\n  %s: unknown key %s\n", expected_rel, key);
      CU_FAIL("expected key not among the stats");
      continue;
    }
    uint64_t got = *(const uint64_t *)((const char *)s + fields[i].off);
    if (got != want) fprintf(stderr, "\n  %s: %s = %llu, python says %llu\n", expected_rel, key,
                             (unsigned long long)got, want);
    CU_ASSERT_EQUAL(got, want);
    matched++;
  }
  CU_ASSERT(matched >= 10);
}

static void check_snapshot(const char *rel, int device, const char *expected_rel) {
  pt_err err = {{0}};
  pt_trace_stats s;
  int rc = stats_of(pt_test_src(rel), device, &s, &err);
  if (rc < 0) fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  check_expected(&s, expected_rel);

  /* import to a native trace and read it back: nothing may change */
  char out[4096];
  snprintf(out, sizeof out, "%s", pt_test_tmp(".trace.gz"));
  pt_trace *t;
  pt_trace_opts o = {.device = device};
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(pt_test_src(rel), &o, &err, &t), 0);
  pt_trace_writer *w;
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_open(out, pt_trace_get_info(t), &err, &w), 0);
  pt_event ev;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) CU_ASSERT_EQUAL(pt_trace_writer_put(w, &ev, &err), 0);
  CU_ASSERT_EQUAL(rc, 0);
  pt_trace_close(t);
  CU_ASSERT_EQUAL_FATAL(pt_trace_writer_commit(w, &err), 0);
  pt_trace_stats back;
  CU_ASSERT_EQUAL_FATAL(stats_of(out, -1, &back, &err), 0);
  CU_ASSERT_EQUAL(memcmp(&s, &back, sizeof s), 0);
  unlink(out);
}

static void test_synthetic(void) {
  check_snapshot("tests/data/synthetic_snapshot.pickle", -1, "tests/data/synthetic_snapshot.expected.json");
}
static void test_synthetic_gzip_protocol2(void) {
  check_snapshot("tests/data/synthetic_snapshot.pickle.gz", -1, "tests/data/synthetic_snapshot.expected.json");
}
static void test_expandable(void) {
  check_snapshot("tests/data/expandable.pickle", -1, "tests/data/expandable.expected.json");
}
/* A map that crosses from one listed mapped range into the next, a hole unmapped later: nothing was mapped at the start. */
static void test_expandable_hole(void) {
  check_snapshot("tests/data/expandable_hole.pickle", -1, "tests/data/expandable_hole.expected.json");
}
static void test_device_pick(void) {
  check_snapshot("tests/data/two_devices.pickle", 1, "tests/data/two_devices.dev1.expected.json");
  pt_err err = {{0}};
  pt_trace_stats s;
  CU_ASSERT(stats_of(pt_test_src("tests/data/two_devices.pickle"), -1, &s, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "pick one with --device N"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "trace import SNAPSHOT --device N -o T' first")); /* sweep has no --device */
  CU_ASSERT(stats_of(pt_test_src("tests/data/two_devices.pickle"), 2, &s, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no device 2"));
}

/* The real capture: stats must equal what Python's pickle reads from it. */
static void test_real_capture(void) {
  check_snapshot("tests/data/real_small.pickle.gz", -1, "tests/data/real_small.expected.json");
}

static void expect_error(const char *rel, const char *a, const char *b) {
  pt_err err = {{0}};
  pt_trace_stats s;
  const char *path = pt_test_src(rel);
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  CU_ASSERT(stats_of(p, -1, &s, &err) < 0);
  CU_ASSERT(strncmp(err.msg, p, strlen(p)) == 0);
  if (!strstr(err.msg, a) || !strstr(err.msg, b)) {
    fprintf(stderr, "\n  message \"%s\" lacks \"%s\"/\"%s\"\n", err.msg, a, b);
    CU_FAIL("error message");
  }
}

static void test_bad_snapshots(void) {
  expect_error("tests/data/forbidden_opcode.pickle", "byte 1214", "forbidden opcode STACK_GLOBAL");
  expect_error("tests/data/negative_size.pickle", "device_traces[0][4]", "negative size");
  expect_error("tests/data/negative_stream.pickle", "device_traces[0][4]", "negative stream");
  expect_error("tests/data/not_a_snapshot.pickle", "top level: not a PyTorch memory snapshot", "device_traces");
}

/* Every prefix of a snapshot fails cleanly (the pickle ends without STOP). */
static void test_truncated_snapshot(void) {
  FILE *f = fopen(pt_test_src("tests/data/synthetic_snapshot.pickle"), "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  static uint8_t buf[8192];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  CU_ASSERT_FATAL(n > 100 && n < sizeof buf);
  int clean = 0;
  for (size_t len = 1; len < n; len++) {
    pt_err err = {{0}};
    pt_trace *t;
    if (pt_trace_open_mem(buf, len, "cut", NULL, &err, &t) == 0) {
      pt_trace_close(t);
      CU_FAIL("a truncated snapshot opened");
      continue;
    }
    clean += strncmp(err.msg, "cut: ", 5) == 0;
  }
  CU_ASSERT_EQUAL(clean, (int)n - 1);
}

/*
 * traces/knobs/graph_pool: one CUDA graph captured on the H200.  The dump's
 * segments name pool (1, 0) for three of them (0x7f40b7c00000,
 * 0x7f40b7e00000, 0x7f40c4000000); the five requests placed in them
 * (device_traces[0][45, 47, 48, 50, 53]) and their three segment_allocs are
 * the pool's, the two 8-byte requests before them on the capture stream (the
 * RNG prologue, in 0x7f40b7a00000, pool (0, 0)) are not, and the capture's
 * mark is on the segment_free torch.cuda.graph's empty_cache made
 * (device_traces[0][40]).
 */
static void test_graph_pool(void) {
  pt_trace *t;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(pt_test_src("traces/knobs/graph_pool.pickle.gz"), NULL, &err, &t), 0);
  pt_event ev;
  int rc, allocs = 0, segs = 0, captures = 0;
  uint64_t pooled_addr_lo = UINT64_MAX;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
    if (ev.flags & PT_EVF_CAPTURE) {
      captures++;
      CU_ASSERT_EQUAL(ev.kind, PT_EV_SEG_FREE);
      CU_ASSERT_EQUAL(ev.addr, 0x7f40bee00000);
    }
    if (ev.kind == PT_EV_ALLOC && ev.bytes == 8) CU_ASSERT_EQUAL(ev.pool, 0);
    if (!ev.pool) continue;
    CU_ASSERT_EQUAL(ev.pool, 1);
    CU_ASSERT_EQUAL(ev.stream, 0x1f559dc0);
    allocs += ev.kind == PT_EV_ALLOC;
    segs += ev.kind == PT_EV_SEG_ALLOC;
    if (ev.addr < pooled_addr_lo) pooled_addr_lo = ev.addr;
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(allocs, 5);
  CU_ASSERT_EQUAL(segs, 3);
  CU_ASSERT_EQUAL(captures, 1);
  CU_ASSERT_EQUAL(pooled_addr_lo, 0x7f40b7c00000);
  const pt_pools *p = pt_trace_pools(t);
  CU_ASSERT_EQUAL_FATAL(p->n, 1);
  CU_ASSERT_EQUAL(p->id[0].first, 1);
  CU_ASSERT_EQUAL(p->id[0].second, 0);
  pt_trace_close(t);
}

/*
 * traces/two_streams: tensors used on a second stream (record_stream) each
 * way.  855 of its 1 841 free_completed entries come records after their
 * free_requested (Python's pickle reads the same: the free waited for the
 * other stream), and only frees are so marked; the other 986 follow their
 * free_requested at once.
 */
static void test_deferred_frees(void) {
  pt_trace *t;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(pt_test_src("traces/two_streams.pickle.gz"), NULL, &err, &t), 0);
  pt_event ev;
  int rc, deferred = 0, frees = 0, other = 0;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
    frees += ev.kind == PT_EV_FREE;
    if (ev.flags & PT_EVF_DEFERRED) ev.kind == PT_EV_FREE ? deferred++ : other++;
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(frees, 1841);
  CU_ASSERT_EQUAL(deferred, 855);
  CU_ASSERT_EQUAL(other, 0);
  pt_trace_close(t);
  /* a trace of one stream has none */
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(pt_test_src("traces/llm_decode.pickle.gz"), NULL, &err, &t), 0);
  deferred = 0;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) deferred += (ev.flags & PT_EVF_DEFERRED) != 0;
  CU_ASSERT_EQUAL(deferred, 0);
  pt_trace_close(t);
}

int pt_test_add_snapshot(void) {
  CU_pSuite s = CU_add_suite("snapshot", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "hand-made snapshot matches python", test_synthetic);
  CU_add_test(s, "gzip'd protocol-2 pickle", test_synthetic_gzip_protocol2);
  CU_add_test(s, "expandable segments: initial mapped size", test_expandable);
  CU_add_test(s, "expandable segments: a hole in the end state is no initial mapping", test_expandable_hole);
  CU_add_test(s, "device choice", test_device_pick);
  CU_add_test(s, "real H200 capture matches python", test_real_capture);
  CU_add_test(s, "two_streams: frees that waited for the other stream marked deferred", test_deferred_frees);
  CU_add_test(s, "a CUDA graph's private pool and its capture found (traces/knobs/graph_pool)", test_graph_pool);
  CU_add_test(s, "bad snapshots: one clear error", test_bad_snapshots);
  CU_add_test(s, "every truncation fails cleanly", test_truncated_snapshot);
  return CU_get_error();
}
