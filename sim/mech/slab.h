/*
 * slab.h — fixed-size records from slabs, with a free list: the block
 * records of the VMM mechanisms (expandable, async_pool, stitch) come from
 * here, so a split or a merge on the replay's hot path costs no malloc.
 * Reserve before an operation that needs records, so the operation itself
 * cannot fail half-way.
 */
#ifndef PT_SLAB_H
#define PT_SLAB_H

#include <stddef.h>

typedef struct pt_slab_chunk pt_slab_chunk;

typedef struct pt_slab {
  size_t item;            /* record size, rounded up to 16 */
  size_t per_chunk;       /* records per slab */
  void *free;             /* free records, linked through their first word */
  size_t nfree;
  pt_slab_chunk *chunks;
} pt_slab;

void pt_slab_init(pt_slab *s, size_t item_size, size_t per_chunk);
/* At least n free records: 0 or PT_ENOMEM. */
int pt_slab_reserve(pt_slab *s, size_t n);
/* A zeroed record; pt_slab_reserve must have made one available. */
void *pt_slab_take(pt_slab *s);
void pt_slab_drop(pt_slab *s, void *p);
/* Every slab goes, records in use too. */
void pt_slab_free(pt_slab *s);

#endif
