/*
 * test_pagetable.c — page-table counts computed by hand.
 *
 * 4 GiB at VA 1 TiB (aligned to everything) on Hopper's MMU v3:
 *   512 MiB pages: 8 PDE1 entries; tables PDE4 (16 B) + PDE3, PDE2, PDE1 (4 KiB each).
 *   2 MiB: 2048 PDE0 entries in 8 PDE0 tables (256 entries x 16 B = 4 KiB each, 512 MiB apiece).
 *   64 KiB: 65536 PTEs in 2048 tables of 32 x 8 B = 256 B.
 *   4 KiB: 1048576 PTEs in 2048 tables of 512 x 8 B = 4 KiB.
 */
#include <string.h>

#include "pagetable.h"
#include "testutil.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

static uint64_t sum(const uint64_t *a, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; i++) s += a[i];
  return s;
}

static void map_4g(const pt_mmu_desc *d, uint64_t page, uint64_t ptes, uint64_t tables, uint64_t bytes,
                   uint64_t fallbacks) {
  pt_pagetable *pt;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_pagetable_create(d, &pt), 0);
  CU_ASSERT_EQUAL_FATAL(pt_pagetable_map(pt, TiB, 4 * GiB, page, 4 * GiB, &err), 0);
  const pt_pagetable_stats *s = pt_pagetable_get_stats(pt);
  CU_ASSERT_EQUAL(s->pte_writes, ptes);
  CU_ASSERT_EQUAL(sum(s->tables_allocated, PT_PT_LEVELS), tables);
  CU_ASSERT_EQUAL(sum(s->table_bytes, PT_PT_LEVELS), bytes);
  CU_ASSERT_EQUAL(s->fallbacks, fallbacks);
  CU_ASSERT_EQUAL(pt_pagetable_page_at(pt, TiB + 3 * GiB + 12345 * 4 * KiB), fallbacks ? 2 * MiB : page);
  CU_ASSERT_EQUAL(pt_pagetable_unmap(pt, TiB, 4 * GiB, &err), 0);
  CU_ASSERT_EQUAL(s->pte_invalidations, ptes);
  CU_ASSERT_EQUAL(sum(s->tables_freed, PT_PT_LEVELS), tables - 1); /* the root stays */
  CU_ASSERT_EQUAL(sum(s->table_bytes, PT_PT_LEVELS), d == &pt_mmu_v3 ? 16 : 32);
  CU_ASSERT_EQUAL(pt_pagetable_page_at(pt, TiB), 0);
  pt_pagetable_destroy(pt);
}

static void test_4g_v3(void) {
  const uint64_t dirs = 16 + 3 * 4096;
  map_4g(&pt_mmu_v3, 512 * MiB, 8, 4, dirs, 0);
  map_4g(&pt_mmu_v3, 2 * MiB, 2048, 4 + 8, dirs + 8 * 4096, 0);
  map_4g(&pt_mmu_v3, 64 * KiB, 65536, 4 + 8 + 2048, dirs + 8 * 4096 + 2048 * 256, 0);
  map_4g(&pt_mmu_v3, 4 * KiB, 1048576, 4 + 8 + 2048, dirs + 8 * 4096 + 2048 * 4096, 0);
}

/* MMU v2: a 4-entry PDE3 root, and no 512 MiB page: it falls back to 2 MiB. */
static void test_4g_v2(void) {
  const uint64_t dirs = 32 + 2 * 4096;
  map_4g(&pt_mmu_v2, 512 * MiB, 2048, 3 + 8, dirs + 8 * 4096, 1);
  map_4g(&pt_mmu_v2, 2 * MiB, 2048, 3 + 8, dirs + 8 * 4096, 0);
  map_4g(&pt_mmu_v2, 64 * KiB, 65536, 3 + 8 + 2048, dirs + 8 * 4096 + 2048 * 256, 0);
}

/* Misaligned VA or backing in small chunks: large pages fall back, and are counted. */
static void test_fallbacks(void) {
  pt_pagetable *pt;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_pagetable_create(&pt_mmu_v3, &pt), 0);
  const pt_pagetable_stats *s = pt_pagetable_get_stats(pt);
  /* 3 MiB at a 2 MiB boundary with 2 MiB pages: one 2 MiB page, then 16 x 64 KiB */
  CU_ASSERT_EQUAL(pt_pagetable_map(pt, TiB, 3 * MiB, 2 * MiB, 0, &err), 0);
  CU_ASSERT_EQUAL(s->pte_writes, 1 + 16);
  CU_ASSERT_EQUAL(s->fallbacks, 1);
  CU_ASSERT_EQUAL(s->fallback_bytes, 1 * MiB);
  /* 4 MiB starting 64 KiB past a 2 MiB boundary: all 64 KiB pages (64), one run */
  CU_ASSERT_EQUAL(pt_pagetable_map(pt, TiB + 8 * MiB + 64 * KiB, 4 * MiB, 2 * MiB, 0, &err), 0);
  CU_ASSERT_EQUAL(s->pte_writes, 17 + 64);
  CU_ASSERT_EQUAL(s->fallbacks, 2);
  /* 1 GiB of 512 MiB pages backed by 2 MiB handles: 512 x 2 MiB pages */
  CU_ASSERT_EQUAL(pt_pagetable_map(pt, 2 * TiB, GiB, 512 * MiB, 2 * MiB, &err), 0);
  CU_ASSERT_EQUAL(s->pte_writes, 81 + 512);
  CU_ASSERT_EQUAL(s->fallbacks, 3);
  CU_ASSERT_EQUAL(s->bytes_by_page[2], 2 * MiB + GiB);
  /* 60 KiB at a 4 KiB boundary with 64 KiB pages: 15 x 4 KiB */
  CU_ASSERT_EQUAL(pt_pagetable_map(pt, 3 * TiB + 4 * KiB, 60 * KiB, 64 * KiB, 0, &err), 0);
  CU_ASSERT_EQUAL(s->bytes_by_page[0], 60 * KiB);
  CU_ASSERT_EQUAL(s->fallbacks, 4);
  /* mapping over a mapped range fails and changes nothing */
  CU_ASSERT(pt_pagetable_map(pt, TiB + 2 * MiB, 4 * MiB, 64 * KiB, 0, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "already mapped"));
  CU_ASSERT_EQUAL(s->bytes_by_page[1], 1 * MiB + 4 * MiB);
  CU_ASSERT_EQUAL(pt_pagetable_page_at(pt, TiB + 5 * MiB), 0);
  /* 4 KiB and 64 KiB pages under one PDE0 cannot overlap */
  CU_ASSERT(pt_pagetable_map(pt, 3 * TiB + 8 * KiB, 4 * KiB, 4 * KiB, 0, &err) < 0);
  /* unmapping half a page is refused */
  CU_ASSERT(pt_pagetable_unmap(pt, TiB, MiB, &err) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "splits the page"));
  pt_pagetable_destroy(pt);
}

int pt_test_add_pagetable(void) {
  CU_pSuite s = CU_add_suite("pagetable", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "4 GiB on MMU v3 at each page size", test_4g_v3);
  CU_add_test(s, "4 GiB on MMU v2", test_4g_v2);
  CU_add_test(s, "fall-backs for misaligned VA and small backing", test_fallbacks);
  return CU_get_error();
}
