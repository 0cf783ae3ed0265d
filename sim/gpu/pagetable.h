/*
 * pagetable.h — a radix-tree model of a GPU MMU's page tables.
 *
 * Layouts (from NVIDIA's open GPU kernel modules, uvm_hopper_mmu.c and the
 * MMU v2 code for Pascal–Ada):
 *   MMU v3 (Hopper): 57-bit VA, six levels — PDE4 (bit 56), PDE3 (55:47),
 *     PDE2 (46:38), PDE1 (37:29, or a 512 MiB PTE), PDE0 (28:21, dual: a
 *     64 KiB and a 4 KiB table, or a 2 MiB PTE), PTE (64 KiB: 20:16,
 *     4 KiB: 20:12).
 *   MMU v2 (Pascal–Ada): 49-bit VA, five levels — PDE3 (48:47), PDE2
 *     (46:38), PDE1 (37:29), PDE0 (28:21, dual, or a 2 MiB PTE), PTE.
 * A mapping goes in with the page size the policy asks for; a page is used
 * only where the VA is aligned to it and the physical backing is contiguous
 * and aligned for it (the backing's chunk size), else that part falls back
 * to the next smaller size and the fall-back is counted.  The model counts
 * PTE writes and invalidations, table pages allocated and freed, and table
 * bytes per level.  It knows nothing of allocators: mechanisms reach it
 * through the device (device.h).
 */
#ifndef PT_PAGETABLE_H
#define PT_PAGETABLE_H

#include <stdint.h>

#include "error.h"

#define PT_MMU_MAX_LEVELS 6
#define PT_NPAGE_SIZES 4 /* 4 KiB, 64 KiB, 2 MiB, 512 MiB */

extern const uint64_t pt_page_sizes[PT_NPAGE_SIZES];

typedef struct pt_mmu_level {
  const char *name;
  int hi, lo;             /* VA bits indexed at this level */
  int entry_bytes;        /* bytes of one entry (16 for the dual PDE0) */
  int leaf_page;          /* index into pt_page_sizes of a PTE this level can hold, or -1 */
} pt_mmu_level;

typedef struct pt_mmu_desc {
  const char *name;       /* "v3" (Hopper), "v2" (Pascal–Ada) */
  int va_bits;
  int nlevels;            /* directory levels, down to the dual PDE0 */
  pt_mmu_level level[PT_MMU_MAX_LEVELS];
  /* the last-level tables under the dual PDE0 */
  int pte64k_bits, pte4k_bits;  /* index bits of the 64 KiB and 4 KiB tables */
} pt_mmu_desc;

extern const pt_mmu_desc pt_mmu_v3, pt_mmu_v2;
const pt_mmu_desc *pt_mmu_find(const char *name);

/* Counters; table_* are per level (directory levels, then the 64K and 4K PTE tables). */
#define PT_PT_LEVELS (PT_MMU_MAX_LEVELS + 2)
typedef struct pt_pagetable_stats {
  uint64_t pte_writes;          /* entries written to map (PTEs and large-page PDEs) */
  uint64_t pte_invalidations;   /* entries cleared by unmap */
  uint64_t fallbacks;           /* regions mapped with a smaller page than asked for */
  uint64_t fallback_bytes;
  uint64_t tables_allocated[PT_PT_LEVELS], tables_freed[PT_PT_LEVELS];
  uint64_t table_bytes[PT_PT_LEVELS], peak_table_bytes[PT_PT_LEVELS];
  uint64_t bytes_by_page[PT_NPAGE_SIZES];   /* bytes currently mapped with each page size */
  uint64_t mapped_by_page[PT_NPAGE_SIZES];  /* bytes ever mapped with each page size */
} pt_pagetable_stats;

typedef struct pt_pagetable pt_pagetable;

int pt_pagetable_create(const pt_mmu_desc *desc, pt_pagetable **out /* OUT */);
void pt_pagetable_destroy(pt_pagetable *pt);

/*
 * Map [va, va+bytes) with pages of at most page_size bytes, backed by
 * physical memory contiguous and aligned in chunks of `chunk` bytes
 * (a VMM handle's size; a cudaMalloc segment's own size).  va, bytes: 4 KiB
 * multiples.  PT_EUSAGE for bad arguments or a range already mapped.
 */
int pt_pagetable_map(pt_pagetable *pt, uint64_t va, uint64_t bytes, uint64_t page_size, uint64_t chunk, pt_err *err);
int pt_pagetable_unmap(pt_pagetable *pt, uint64_t va, uint64_t bytes, pt_err *err);
/* Page size translating va (0 when unmapped). */
uint64_t pt_pagetable_page_at(const pt_pagetable *pt, uint64_t va);
const pt_pagetable_stats *pt_pagetable_get_stats(const pt_pagetable *pt);
const pt_mmu_desc *pt_pagetable_desc(const pt_pagetable *pt);

#endif
