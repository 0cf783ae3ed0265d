/*
 * u64map.h — a hash map from uint64_t keys to uint64_t values (open
 * addressing, linear probing, backward-shift deletion).  Used for live ids,
 * live addresses and distinct-value sets; zero-initialise to start empty.
 *
 * Key and value share a slot so a probe touches one cache line; the key
 * UINT64_MAX marks an empty slot, so that one key lives beside the table.
 */
#ifndef PT_U64MAP_H
#define PT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_u64map_slot {
  uint64_t key, val;
} pt_u64map_slot;

typedef struct pt_u64map {
  pt_u64map_slot *slots;
  size_t cap;      /* 0 or a power of two */
  size_t len;      /* keys held, the UINT64_MAX one included */
  int has_max;     /* key UINT64_MAX is present, its value in max_val */
  uint64_t max_val;
} pt_u64map;

/* Insert or overwrite; 0 or PT_ENOMEM. */
int pt_u64map_put(pt_u64map *m, uint64_t key, uint64_t val);
/* Value slot for key, or NULL; valid until the next put or del. */
uint64_t *pt_u64map_get(pt_u64map *m, uint64_t key);
/* 1 when key was present and is now gone, else 0. */
int pt_u64map_del(pt_u64map *m, uint64_t key);
void pt_u64map_free(pt_u64map *m);

#endif
