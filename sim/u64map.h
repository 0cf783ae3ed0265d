/*
 * u64map.h — a hash map from uint64_t keys to uint64_t values (open
 * addressing, linear probing, backward-shift deletion).  Used for live ids,
 * live addresses and distinct-value sets; zero-initialise to start empty.
 */
#ifndef PT_U64MAP_H
#define PT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_u64map {
  uint64_t *keys;
  uint64_t *vals;
  uint8_t *used;
  size_t cap;  /* 0 or a power of two */
  size_t len;
} pt_u64map;

/* Insert or overwrite; 0 or PT_ENOMEM. */
int pt_u64map_put(pt_u64map *m, uint64_t key, uint64_t val);
/* Value slot for key, or NULL; valid until the next put or del. */
uint64_t *pt_u64map_get(const pt_u64map *m, uint64_t key);
/* 1 when key was present and is now gone, else 0. */
int pt_u64map_del(pt_u64map *m, uint64_t key);
void pt_u64map_free(pt_u64map *m);

#endif
