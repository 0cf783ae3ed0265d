/*
 * tlb.h — the GPU's translation caches: a per-SM L1 TLB, a shared L2 TLB
 * and a page-walk cache of upper-level directory entries.
 *
 * Each TLB is set-associative with LRU replacement; an entry caches one page
 * of one size (a 2 MiB entry covers 2 MiB).  A miss in both TLBs walks the
 * page table from the root: each directory level whose entry is in the
 * page-walk cache costs nothing more, each other level is one memory access.
 * Geometry and latencies come from a GPU description (gpu.h), not from code.
 */
#ifndef PT_TLB_H
#define PT_TLB_H

#include <stdint.h>

#include "error.h"

typedef struct pt_tlb_geom {
  uint32_t sets, ways;
  double hit_ns;            /* latency added by a hit at this level */
} pt_tlb_geom;

typedef struct pt_tlb_config {
  uint32_t sms;             /* SMs, one L1 TLB each */
  pt_tlb_geom l1, l2;
  uint32_t pwc_sets, pwc_ways;  /* page-walk cache (directory entries) */
  uint32_t walk_levels;     /* directory levels above the leaf walked on a miss (MMU layout) */
  double walk_access_ns;    /* one page-table memory access */
} pt_tlb_config;

typedef struct pt_tlb_stats {
  uint64_t accesses, l1_hits, l2_hits, walks, pwc_hits, pwc_misses, walk_accesses;
} pt_tlb_stats;

typedef struct pt_tlb pt_tlb;

int pt_tlb_create(const pt_tlb_config *cfg, pt_tlb **out /* OUT */);
void pt_tlb_destroy(pt_tlb *t);
/*
 * One access by SM sm to va, translated by a page of page_size bytes whose
 * leaf sits at depth `leaf_level` (number of directory levels above it).
 */
void pt_tlb_access(pt_tlb *t, uint32_t sm, uint64_t va, uint64_t page_size, uint32_t leaf_level);
/* Forget everything (an unmap invalidates; the model flushes the whole TLB). */
void pt_tlb_flush(pt_tlb *t);
const pt_tlb_stats *pt_tlb_get_stats(const pt_tlb *t);
/* Translation time the counted misses cost, nanoseconds. */
double pt_tlb_miss_ns(const pt_tlb *t);

#endif
