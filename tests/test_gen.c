/* test_gen.c — synthetic traces: a seed names one trace; kinds differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"
#include "testutil.h"
#include "trace.h"
#include "tracestats.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void gen_stats(pt_gen_kind kind, unsigned long seed, const char *path, pt_trace_stats *s) {
  pt_err err = {{0}};
  pt_gen_opts o = {.kind = kind, .seed = seed, .steps = 0};
  CU_ASSERT_EQUAL_FATAL(pt_gen_write(&o, path, &err), 0);
  pt_trace *t;
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(path, NULL, &err, &t), 0);
  CU_ASSERT_EQUAL(pt_trace_stats_compute(t, s, &err), 0);
  pt_trace_close(t);
}

static void test_reproducible(void) {
  for (int k = PT_GEN_TRAIN; k <= PT_GEN_KVCACHE; k++) {
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s", pt_test_tmp(".trace"));
    snprintf(b, sizeof b, "%s", pt_test_tmp(".trace"));
    snprintf(c, sizeof c, "%s", pt_test_tmp(".trace"));
    pt_trace_stats sa, sb, sc;
    gen_stats((pt_gen_kind)k, 42, a, &sa);
    gen_stats((pt_gen_kind)k, 42, b, &sb);
    gen_stats((pt_gen_kind)k, 43, c, &sc);
    size_t la, lb, lc;
    char *ba = slurp(a, &la), *bb = slurp(b, &lb), *bc = slurp(c, &lc);
    CU_ASSERT_FATAL(ba && bb && bc);
    CU_ASSERT(la == lb && memcmp(ba, bb, la) == 0); /* same seed: same bytes */
    CU_ASSERT(la != lc || memcmp(ba, bc, la) != 0); /* other seed: another trace */
    CU_ASSERT(sa.allocs > 100);
    CU_ASSERT(sa.peak_live_bytes > 0);
    CU_ASSERT_EQUAL(memcmp(&sa, &sb, sizeof sa), 0);
    free(ba);
    free(bb);
    free(bc);
    unlink(a);
    unlink(b);
    unlink(c);
  }
}

/* Shapes: inference and decoding free everything; training keeps weights. */
static void test_shapes(void) {
  char p[4096];
  snprintf(p, sizeof p, "%s", pt_test_tmp(".trace.gz"));
  pt_trace_stats s;
  gen_stats(PT_GEN_TRAIN, 1, p, &s);
  CU_ASSERT(s.live_bytes_at_end > 0);
  CU_ASSERT(s.allocs > s.frees);
  gen_stats(PT_GEN_INFER, 1, p, &s);
  CU_ASSERT_EQUAL(s.live_bytes_at_end, 0);
  CU_ASSERT_EQUAL(s.allocs, s.frees);
  CU_ASSERT(s.distinct_sizes > 50); /* variable lengths and batches */
  gen_stats(PT_GEN_KVCACHE, 1, p, &s);
  CU_ASSERT_EQUAL(s.live_bytes_at_end, 0);
  CU_ASSERT(s.allocs > 10000);
  unlink(p);
  pt_gen_kind k;
  CU_ASSERT_EQUAL(pt_gen_kind_parse("kvcache", &k), 0);
  CU_ASSERT_EQUAL(k, PT_GEN_KVCACHE);
  CU_ASSERT(pt_gen_kind_parse("bogus", &k) < 0);
}

/* long_decode: reproducible, everything freed, the caches grow a token a step (a few steps here). */
static void test_long_decode(void) {
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s", pt_test_tmp(".trace"));
  snprintf(b, sizeof b, "%s", pt_test_tmp(".trace"));
  pt_err err = {{0}};
  pt_gen_opts o = {.kind = PT_GEN_LONG_DECODE, .seed = 7, .steps = 3};
  CU_ASSERT_EQUAL_FATAL(pt_gen_write(&o, a, &err), 0);
  CU_ASSERT_EQUAL_FATAL(pt_gen_write(&o, b, &err), 0);
  size_t la, lb;
  char *ba = slurp(a, &la), *bb = slurp(b, &lb);
  CU_ASSERT_FATAL(ba && bb);
  CU_ASSERT(la == lb && memcmp(ba, bb, la) == 0);
  pt_trace *t;
  pt_trace_stats s;
  CU_ASSERT_EQUAL_FATAL(pt_trace_open(a, NULL, &err, &t), 0);
  CU_ASSERT_EQUAL(pt_trace_stats_compute(t, &s, &err), 0);
  pt_trace_close(t);
  CU_ASSERT_EQUAL(s.allocs, s.frees);
  CU_ASSERT_EQUAL(s.live_bytes_at_end, 0);
  CU_ASSERT(s.allocs > 10000); /* the chunked prefill alone: 24+ layers x 32+ chunks */
  pt_gen_kind k;
  CU_ASSERT_EQUAL(pt_gen_kind_parse("long_decode", &k), 0);
  CU_ASSERT_EQUAL(k, PT_GEN_LONG_DECODE);
  free(ba);
  free(bb);
  unlink(a);
  unlink(b);
}

int pt_test_add_gen(void) {
  CU_pSuite s = CU_add_suite("gen", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "same seed, same trace", test_reproducible);
  CU_add_test(s, "kinds have their shapes", test_shapes);
  CU_add_test(s, "long_decode", test_long_decode);
  return CU_get_error();
}
