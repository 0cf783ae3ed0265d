/*
 * test_sizetab.c — size tables (sim/mech/sizetable.c): lookup at every piece
 * boundary and its neighbours, appends that merge, malformed tables refused
 * naming the piece, and the pt_policy_hooks adapter answering as the table.
 */
#include <string.h>

#include "sizetable.h"
#include "testutil.h"

#define MiB (UINT64_C(1) << 20)
#define LIMIT PT_SIZETAB_LIMIT

/* [1, 2 MiB] const 2 MiB; [2 MiB + 1, 10 MiB - 1] const 20 MiB; [10 MiB, 2^50] round_up 2 MiB. */
static pt_sizetab three(void) {
  pt_sizetab t = {0};
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 1, 2 * MiB, PT_SIZETAB_CONST, 2 * MiB), 0);
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 2 * MiB + 1, 10 * MiB - 1, PT_SIZETAB_CONST, 20 * MiB), 0);
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 10 * MiB, LIMIT, PT_SIZETAB_ROUND_UP, 2 * MiB), 0);
  return t;
}

static uint64_t look(const pt_sizetab *t, uint64_t b) {
  uint64_t v = 0;
  CU_ASSERT_EQUAL(pt_sizetab_lookup(t, b, &v), 0);
  return v;
}

static void test_lookup_boundaries(void) {
  pt_sizetab t = three();
  int bad;
  pt_err err;
  CU_ASSERT_EQUAL(t.n, 3);
  CU_ASSERT_EQUAL(pt_sizetab_check(&t, &bad, &err), 0);
  CU_ASSERT_EQUAL(look(&t, 1), 2 * MiB);
  CU_ASSERT_EQUAL(look(&t, 2 * MiB - 1), 2 * MiB);
  CU_ASSERT_EQUAL(look(&t, 2 * MiB), 2 * MiB);
  CU_ASSERT_EQUAL(look(&t, 2 * MiB + 1), 20 * MiB);
  CU_ASSERT_EQUAL(look(&t, 10 * MiB - 1), 20 * MiB);
  CU_ASSERT_EQUAL(look(&t, 10 * MiB), 10 * MiB);
  CU_ASSERT_EQUAL(look(&t, 10 * MiB + 1), 12 * MiB);
  CU_ASSERT_EQUAL(look(&t, LIMIT - 1), LIMIT);
  CU_ASSERT_EQUAL(look(&t, LIMIT), LIMIT);
  uint64_t v;
  CU_ASSERT_EQUAL(pt_sizetab_lookup(&t, 0, &v), PT_ELIMIT);
  CU_ASSERT_EQUAL(pt_sizetab_lookup(&t, LIMIT + 1, &v), PT_ELIMIT);
  /* identity, and a table of many pieces: every boundary against a linear scan */
  pt_sizetab m = {0};
  uint64_t lo = 1;
  for (int i = 0; i < PT_SIZETAB_MAX_PIECES; i++) {
    uint64_t hi = i == PT_SIZETAB_MAX_PIECES - 1 ? LIMIT : lo + (UINT64_C(1) << (i % 40)) + (uint64_t)i;
    int form = i % 3;
    CU_ASSERT_EQUAL(pt_sizetab_append(&m, lo, hi, form, form == PT_SIZETAB_IDENTITY ? 0 : 512 + (uint64_t)i), 0);
    lo = hi + 1;
  }
  CU_ASSERT_EQUAL(m.n, PT_SIZETAB_MAX_PIECES);
  CU_ASSERT_EQUAL(pt_sizetab_check(&m, &bad, &err), 0);
  for (int i = 0; i < m.n; i++) {
    const pt_sizetab_piece *p = &m.p[i];
    const uint64_t at[] = {p->lo, p->lo + 1, p->hi - 1, p->hi};
    for (int k = 0; k < 4; k++) {
      if (at[k] < p->lo || at[k] > p->hi) continue;
      uint64_t want = p->form == PT_SIZETAB_CONST ? p->arg : p->form == PT_SIZETAB_IDENTITY ? at[k] : (at[k] + p->arg - 1) / p->arg * p->arg;
      CU_ASSERT_EQUAL(look(&m, at[k]), want);
    }
  }
  CU_ASSERT_EQUAL(pt_sizetab_append(&m, LIMIT + 1, LIMIT + 1, PT_SIZETAB_CONST, 7), PT_ELIMIT); /* full */
}

static void test_append_merges(void) {
  pt_sizetab t = {0};
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 2, 5, PT_SIZETAB_CONST, 8), PT_EFORMAT); /* must start at 1 */
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 1, 5, PT_SIZETAB_ROUND_UP, 512), 0);
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 6, 100, PT_SIZETAB_ROUND_UP, 512), 0);
  CU_ASSERT_EQUAL(t.n, 1);
  CU_ASSERT_EQUAL(t.p[0].hi, 100);
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 50, 200, PT_SIZETAB_CONST, 8), PT_EFORMAT); /* overlaps */
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 102, 200, PT_SIZETAB_CONST, 8), PT_EFORMAT); /* a gap */
  CU_ASSERT_EQUAL(pt_sizetab_append(&t, 101, 200, PT_SIZETAB_IDENTITY, 99), 0);
  CU_ASSERT_EQUAL(t.p[1].arg, 0);
  CU_ASSERT_EQUAL(pt_sizetab_form_find("round_up", 8), PT_SIZETAB_ROUND_UP);
  CU_ASSERT_EQUAL(pt_sizetab_form_find("round", 5), -1);
  CU_ASSERT_STRING_EQUAL(pt_sizetab_form_name(PT_SIZETAB_IDENTITY), "identity");
  CU_ASSERT_PTR_NULL(pt_sizetab_form_name(PT_SIZETAB_NFORMS));
}

static void test_malformed_refused(void) {
  struct {
    int piece;          /* which piece to break */
    pt_sizetab_piece p; /* into this */
    int bad;            /* the index check names */
    const char *reason;
  } cases[] = {
      {0, {2, 2 * MiB, PT_SIZETAB_CONST, 2 * MiB}, 0, "piece 0 starts at 2, not 1"},
      {1, {2 * MiB + 2, 10 * MiB - 1, PT_SIZETAB_CONST, 20 * MiB}, 1, "piece 1 starts at 2097154, not 2097153"},
      {1, {2 * MiB, 10 * MiB - 1, PT_SIZETAB_CONST, 20 * MiB}, 1, "piece 1 starts at 2097152, not 2097153"},
      {1, {2 * MiB + 1, 2 * MiB, PT_SIZETAB_CONST, 20 * MiB}, 1, "before its start"},
      {2, {10 * MiB, LIMIT - 1, PT_SIZETAB_ROUND_UP, 2 * MiB}, 3, "the pieces end at 1125899906842623, not at 2^50"},
      {2, {10 * MiB, LIMIT + 1, PT_SIZETAB_ROUND_UP, 2 * MiB}, 2, "past 2^50"},
      {2, {10 * MiB, LIMIT, PT_SIZETAB_ROUND_UP, 0}, 2, "round_up needs a positive argument"},
      {0, {1, 2 * MiB, PT_SIZETAB_CONST, 0}, 0, "const needs a positive argument"},
      {0, {1, 2 * MiB, 7, 1}, 0, "unknown form 7"},
      {0, {1, 2 * MiB, PT_SIZETAB_CONST, UINT64_MAX}, 0, "results past 2^62"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pt_sizetab t = three();
    t.p[cases[i].piece] = cases[i].p;
    int bad = -9;
    pt_err err = {{0}};
    CU_ASSERT_EQUAL(pt_sizetab_check(&t, &bad, &err), PT_EFORMAT);
    CU_ASSERT_EQUAL(bad, cases[i].bad);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].reason));
  }
  pt_sizetab empty = {0};
  int bad;
  pt_err err;
  CU_ASSERT_EQUAL(pt_sizetab_check(&empty, &bad, &err), PT_EFORMAT);
  CU_ASSERT_EQUAL(bad, -1);
}

static void test_hooks_adapter(void) {
  pt_sizetab_set set = {.segment_size = three()};
  pt_policy_hooks h;
  pt_sizetab_hooks(&set, &h);
  CU_ASSERT_PTR_NULL(h.round);
  CU_ASSERT_PTR_NULL(h.page_size);
  CU_ASSERT_PTR_NULL(h.should_collect);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.segment_size);
  uint64_t v = 0;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(h.segment_size(h.ctx, 3 * MiB, &v, &err), 0);
  CU_ASSERT_EQUAL(v, 20 * MiB);
  CU_ASSERT_EQUAL(h.segment_size(h.ctx, LIMIT + 1, &v, &err), PT_ELIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "segment_size table: 1125899906842625 bytes is outside 1 to 2^50"));
  set.round = three();
  pt_sizetab_hooks(&set, &h);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.round);
  CU_ASSERT_EQUAL(h.round(h.ctx, 1, &v, &err), 0);
  CU_ASSERT_EQUAL(v, 2 * MiB);
}

int pt_test_add_sizetab(void) {
  CU_pSuite s = CU_add_suite("sizetab", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "lookup at every boundary and its neighbours", test_lookup_boundaries);
  CU_add_test(s, "append: contiguous only, like pieces merge", test_append_merges);
  CU_add_test(s, "malformed tables refused, naming the piece", test_malformed_refused);
  CU_add_test(s, "the hooks adapter answers as the table", test_hooks_adapter);
  return CU_get_error();
}
