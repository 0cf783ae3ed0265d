/* u64map.c — uint64 -> uint64 hash map (see u64map.h). */
#include "u64map.h"

#include <stdlib.h>

#include "error.h"

static size_t slot_of(uint64_t x, size_t mask) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & mask;
}

static int grow(pt_u64map *m) {
  size_t ncap = m->cap ? m->cap * 2 : 256;
  uint64_t *nk = malloc(ncap * sizeof *nk), *nv = malloc(ncap * sizeof *nv);
  uint8_t *nu = calloc(ncap, 1);
  if (!nk || !nv || !nu || ncap < m->cap) {
    free(nk);
    free(nv);
    free(nu);
    return PT_ENOMEM;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = slot_of(m->keys[i], ncap - 1);
    while (nu[j]) j = (j + 1) & (ncap - 1);
    nu[j] = 1;
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = nk;
  m->vals = nv;
  m->used = nu;
  m->cap = ncap;
  return 0;
}

uint64_t *pt_u64map_get(const pt_u64map *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = slot_of(key, mask); m->used[i]; i = (i + 1) & mask)
    if (m->keys[i] == key) return &m->vals[i];
  return NULL;
}

int pt_u64map_put(pt_u64map *m, uint64_t key, uint64_t val) {
  uint64_t *v = pt_u64map_get(m, key);
  if (v) {
    *v = val;
    return 0;
  }
  if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0) return PT_ENOMEM;
  size_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->used[i]) i = (i + 1) & mask;
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = val;
  m->len++;
  return 0;
}

int pt_u64map_del(pt_u64map *m, uint64_t key) {
  if (!m->cap) return 0;
  size_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
  if (!m->used[i]) return 0;
  /* backward-shift: pull later members of the probe run into the hole */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
    size_t home = slot_of(m->keys[j], mask);
    /* j may move to hole if home is not cyclically in (hole, j] */
    int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      m->keys[hole] = m->keys[j];
      m->vals[hole] = m->vals[j];
      hole = j;
    }
  }
  m->used[hole] = 0;
  m->len--;
  return 1;
}

void pt_u64map_free(pt_u64map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  *m = (pt_u64map){0};
}
