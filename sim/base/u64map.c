/* u64map.c — uint64 -> uint64 hash map (see u64map.h). */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

#define EMPTY UINT64_MAX

static size_t home_of(uint64_t x, size_t mask) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & mask;
}

static int grow(pt_u64map *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  if (ncap < m->cap || ncap > SIZE_MAX / sizeof(pt_u64map_slot)) return PT_ENOMEM;
  pt_u64map_slot *ns = malloc(ncap * sizeof *ns);
  if (!ns) return PT_ENOMEM;
  memset(ns, 0xff, ncap * sizeof *ns); /* every key EMPTY */
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slots[i].key == EMPTY) continue;
    size_t j = home_of(m->slots[i].key, ncap - 1);
    while (ns[j].key != EMPTY) j = (j + 1) & (ncap - 1);
    ns[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return 0;
}

uint64_t *pt_u64map_get(pt_u64map *m, uint64_t key) {
  if (key == EMPTY) return m->has_max ? &m->max_val : NULL;
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = home_of(key, mask);; i = (i + 1) & mask) {
    if (m->slots[i].key == key) return &m->slots[i].val;
    if (m->slots[i].key == EMPTY) return NULL;
  }
}

int pt_u64map_put(pt_u64map *m, uint64_t key, uint64_t val) {
  if (key == EMPTY) {
    m->len += !m->has_max;
    m->has_max = 1;
    m->max_val = val;
    return 0;
  }
  if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0) return PT_ENOMEM;
  size_t mask = m->cap - 1, i = home_of(key, mask);
  for (; m->slots[i].key != EMPTY; i = (i + 1) & mask)
    if (m->slots[i].key == key) {
      m->slots[i].val = val;
      return 0;
    }
  m->slots[i].key = key;
  m->slots[i].val = val;
  m->len++;
  return 0;
}

int pt_u64map_del(pt_u64map *m, uint64_t key) {
  if (key == EMPTY) {
    if (!m->has_max) return 0;
    m->has_max = 0;
    m->len--;
    return 1;
  }
  if (!m->cap) return 0;
  size_t mask = m->cap - 1, i = home_of(key, mask);
  while (m->slots[i].key != key) {
    if (m->slots[i].key == EMPTY) return 0;
    i = (i + 1) & mask;
  }
  /* backward shift: pull later members of the probe run into the hole */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->slots[j].key != EMPTY; j = (j + 1) & mask) {
    size_t home = home_of(m->slots[j].key, mask);
    /* the slot at j may move to hole unless its home lies cyclically in (hole, j] */
    int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      m->slots[hole] = m->slots[j];
      hole = j;
    }
  }
  m->slots[hole].key = EMPTY;
  m->len--;
  return 1;
}

void pt_u64map_free(pt_u64map *m) {
  free(m->slots);
  *m = (pt_u64map){0};
}
