/*
 * tlb.c — set-associative LRU TLBs and the page-walk cache (see tlb.h).
 *
 * A cache line holds a tag (page number with the page-size index in its low
 * bits, so pages of different sizes never alias) and an LRU stamp.  Set
 * index: the page number modulo the number of sets.
 */
#include "tlb.h"

#include <stdlib.h>
#include <string.h>

typedef struct line {
  uint64_t tag;   /* 0 = empty; else ((page number << 3) | size class) + 1 */
  uint64_t used;  /* LRU stamp */
} line;

typedef struct cache {
  uint32_t sets, ways;
  line *lines;
} cache;

struct pt_tlb {
  pt_tlb_config cfg;
  cache *l1;      /* one per SM */
  cache l2, pwc;
  uint64_t clock;
  pt_tlb_stats s;
};

static int cache_init(cache *c, uint32_t sets, uint32_t ways) {
  c->sets = sets ? sets : 1;
  c->ways = ways ? ways : 1;
  c->lines = calloc((size_t)c->sets * c->ways, sizeof *c->lines);
  return c->lines ? 0 : PT_ENOMEM;
}

/* Look tag up; on a miss insert it over the LRU way.  Returns 1 on a hit. */
static int cache_touch(cache *c, uint64_t key, uint64_t tag, uint64_t now) {
  line *set = &c->lines[(size_t)(key % c->sets) * c->ways];
  line *victim = set;
  for (uint32_t w = 0; w < c->ways; w++) {
    if (set[w].tag == tag) {
      set[w].used = now;
      return 1;
    }
    if (set[w].used < victim->used) victim = &set[w];
  }
  victim->tag = tag;
  victim->used = now;
  return 0;
}

int pt_tlb_create(const pt_tlb_config *cfg, pt_tlb **out) {
  pt_tlb *t = calloc(1, sizeof *t);
  if (!t) return PT_ENOMEM;
  t->cfg = *cfg;
  if (!t->cfg.sms) t->cfg.sms = 1;
  t->l1 = calloc(t->cfg.sms, sizeof *t->l1);
  int rc = t->l1 ? 0 : PT_ENOMEM;
  for (uint32_t i = 0; rc == 0 && i < t->cfg.sms; i++) rc = cache_init(&t->l1[i], cfg->l1.sets, cfg->l1.ways);
  if (rc == 0) rc = cache_init(&t->l2, cfg->l2.sets, cfg->l2.ways);
  if (rc == 0) rc = cache_init(&t->pwc, cfg->pwc_sets, cfg->pwc_ways);
  if (rc < 0) {
    pt_tlb_destroy(t);
    return rc;
  }
  *out = t;
  return 0;
}

void pt_tlb_destroy(pt_tlb *t) {
  if (!t) return;
  for (uint32_t i = 0; t->l1 && i < t->cfg.sms; i++) free(t->l1[i].lines);
  free(t->l1);
  free(t->l2.lines);
  free(t->pwc.lines);
  free(t);
}

static int size_class(uint64_t page_size) {
  return 63 - __builtin_clzll(page_size); /* log2: 12, 16, 21, 29 */
}

void pt_tlb_access(pt_tlb *t, uint32_t sm, uint64_t va, uint64_t page_size, uint32_t leaf_level) {
  int lg = size_class(page_size);
  uint64_t page = va >> lg;
  uint64_t tag = ((page << 6) | (uint64_t)lg) + 1;
  uint64_t now = ++t->clock;
  t->s.accesses++;
  if (cache_touch(&t->l1[sm % t->cfg.sms], page, tag, now)) {
    t->s.l1_hits++;
    return;
  }
  if (cache_touch(&t->l2, page, tag, now)) {
    t->s.l2_hits++;
    return;
  }
  /*
   * Walk: the leaf entry is read always; going up from its table, each
   * directory entry costs a read unless the page-walk cache has it, and a
   * cached one means everything above it is known.  The nearest directory
   * entry spans 2 MiB above 4 KiB/64 KiB leaves, 512 MiB above a 2 MiB leaf,
   * 256 GiB above a 512 MiB leaf; each level up spans 512 times more.
   */
  t->s.walks++;
  t->s.walk_accesses++;
  int base = lg <= 16 ? 21 : lg <= 21 ? 29 : 38;
  for (uint32_t k = 0; k < leaf_level; k++) {
    int shift = base + 9 * (int)k;
    uint64_t key = shift < 64 ? va >> shift : 0;
    uint64_t ptag = ((key << 4) | k) + 1;
    if (cache_touch(&t->pwc, key, ptag, now)) {
      t->s.pwc_hits++;
      break; /* this entry and everything above it are cached */
    }
    t->s.pwc_misses++;
    t->s.walk_accesses++;
  }
}

void pt_tlb_flush(pt_tlb *t) {
  for (uint32_t i = 0; i < t->cfg.sms; i++)
    memset(t->l1[i].lines, 0, (size_t)t->l1[i].sets * t->l1[i].ways * sizeof(line));
  memset(t->l2.lines, 0, (size_t)t->l2.sets * t->l2.ways * sizeof(line));
  memset(t->pwc.lines, 0, (size_t)t->pwc.sets * t->pwc.ways * sizeof(line));
}

const pt_tlb_stats *pt_tlb_get_stats(const pt_tlb *t) { return &t->s; }

double pt_tlb_miss_ns(const pt_tlb *t) {
  uint64_t l1_misses = t->s.accesses - t->s.l1_hits;
  return (double)l1_misses * t->cfg.l2.hit_ns + (double)t->s.walk_accesses * t->cfg.walk_access_ns;
}
