/* test_tlb.c — TLB hits and misses for crafted access streams, counted by hand. */
#include "testutil.h"
#include "tlb.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* One SM; a fully associative 16-entry L1, a 64-entry L2 (16 sets x 4), an 8-entry PWC. */
static pt_tlb *make(void) {
  pt_tlb_config c = {.sms = 1, .l1 = {1, 16, 0}, .l2 = {16, 4, 10}, .pwc_sets = 1, .pwc_ways = 8,
                     .walk_levels = 4, .walk_access_ns = 100};
  pt_tlb *t;
  CU_ASSERT_FATAL(pt_tlb_create(&c, &t) == 0);
  return t;
}

static void test_within_reach(void) {
  pt_tlb *t = make();
  for (int pass = 0; pass < 3; pass++)
    for (uint64_t p = 0; p < 16; p++) pt_tlb_access(t, 0, GiB + p * 2 * MiB + 4096, 2 * MiB, 4);
  const pt_tlb_stats *s = pt_tlb_get_stats(t);
  CU_ASSERT_EQUAL(s->accesses, 48);
  CU_ASSERT_EQUAL(s->walks, 16);     /* only the first pass misses */
  CU_ASSERT_EQUAL(s->l1_hits, 32);
  /* 16 pages in one 512 MiB region: the first walk reads 4 directory entries
     (nothing cached) + the leaf; the other 15 find the PDE1 entry cached */
  CU_ASSERT_EQUAL(s->pwc_misses, 4);
  CU_ASSERT_EQUAL(s->pwc_hits, 15);
  CU_ASSERT_EQUAL(s->walk_accesses, 16 + 4);
  pt_tlb_destroy(t);
}

static void test_cyclic_over_reach(void) {
  pt_tlb *t = make();
  for (int pass = 0; pass < 4; pass++)
    for (uint64_t p = 0; p < 17; p++) pt_tlb_access(t, 0, p * 2 * MiB, 2 * MiB, 4);
  const pt_tlb_stats *s = pt_tlb_get_stats(t);
  CU_ASSERT_EQUAL(s->l1_hits, 0);    /* LRU with 17 in a cycle over 16 ways: always evicted */
  CU_ASSERT_EQUAL(s->walks, 17);     /* the L2 (64 entries, 4 per set) holds them after pass 1 */
  CU_ASSERT_EQUAL(s->l2_hits, 3 * 17);
  pt_tlb_destroy(t);
}

static void test_two_page_sizes(void) {
  pt_tlb *t = make();
  /* 32 x 64 KiB steps inside one 2 MiB page mapped with 2 MiB pages: 1 miss */
  for (uint64_t i = 0; i < 32; i++) pt_tlb_access(t, 0, 8 * GiB + i * 64 * KiB, 2 * MiB, 4);
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->walks, 1);
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->l1_hits, 31);
  /* the same steps elsewhere with 64 KiB pages: 32 distinct entries, 32 misses */
  for (uint64_t i = 0; i < 32; i++) pt_tlb_access(t, 0, 9 * GiB + i * 64 * KiB, 64 * KiB, 5);
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->walks, 33);
  /* and a 64 KiB entry never answers for the 2 MiB page at the same address */
  pt_tlb_flush(t);
  pt_tlb_access(t, 0, 10 * GiB, 64 * KiB, 5);
  pt_tlb_access(t, 0, 10 * GiB, 2 * MiB, 4);
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->walks, 35);
  pt_tlb_destroy(t);
}

static void test_per_sm(void) {
  pt_tlb_config c = {.sms = 2, .l1 = {1, 4, 0}, .l2 = {1, 64, 10}, .pwc_sets = 1, .pwc_ways = 8, .walk_access_ns = 100};
  pt_tlb *t;
  CU_ASSERT_FATAL(pt_tlb_create(&c, &t) == 0);
  pt_tlb_access(t, 0, 0, 2 * MiB, 4);
  pt_tlb_access(t, 1, 0, 2 * MiB, 4); /* SM 1's L1 misses, the shared L2 hits */
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->walks, 1);
  CU_ASSERT_EQUAL(pt_tlb_get_stats(t)->l2_hits, 1);
  CU_ASSERT_DOUBLE_EQUAL(pt_tlb_miss_ns(t), 2 * 10 + 5 * 100, 1e-9);
  pt_tlb_destroy(t);
}

int pt_test_add_tlb(void) {
  CU_pSuite s = CU_add_suite("tlb", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "sequential within reach: hits after the first pass", test_within_reach);
  CU_add_test(s, "cyclic just over reach: LRU misses every time", test_cyclic_over_reach);
  CU_add_test(s, "two page sizes mixed", test_two_page_sizes);
  CU_add_test(s, "per-SM L1, shared L2, walk cost", test_per_sm);
  return CU_get_error();
}
