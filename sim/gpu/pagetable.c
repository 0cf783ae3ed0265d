/*
 * pagetable.c — the page-table radix tree (see pagetable.h).
 *
 * A mapping is cut greedily into pages: at each address the largest page
 * no bigger than asked for whose VA and backing are aligned for it and that
 * fits before the end.  Each page is written by walking from the root,
 * creating tables on the way; an unmap clears entries and frees tables left
 * empty.  Tables are sparse: a directory keeps child pointers, and each
 * table its entries' page sizes, so the model's memory follows the mapped
 * ranges, not the address space.
 */
#include "pagetable.h"

#include <stdlib.h>
#include <string.h>

const uint64_t pt_page_sizes[PT_NPAGE_SIZES] = {UINT64_C(4) << 10, UINT64_C(64) << 10, UINT64_C(2) << 20,
                                                UINT64_C(512) << 20};
enum { P4K, P64K, P2M, P512M };

const pt_mmu_desc pt_mmu_v3 = {
    "v3", 57, 5,
    {{"PDE4", 56, 56, 8, -1}, {"PDE3", 55, 47, 8, -1}, {"PDE2", 46, 38, 8, -1}, {"PDE1", 37, 29, 8, P512M},
     {"PDE0", 28, 21, 16, P2M}},
    5, 9};

const pt_mmu_desc pt_mmu_v2 = {
    "v2", 49, 4,
    {{"PDE3", 48, 47, 8, -1}, {"PDE2", 46, 38, 8, -1}, {"PDE1", 37, 29, 8, -1}, {"PDE0", 28, 21, 16, P2M}},
    5, 9};

const pt_mmu_desc *pt_mmu_find(const char *name) {
  if (!strcmp(name, "v3")) return &pt_mmu_v3;
  if (!strcmp(name, "v2")) return &pt_mmu_v2;
  return NULL;
}

/*
 * A table.  leaf[i] is 1 + the page-size index of a PTE in entry i, or 0.
 * Directory tables have child[] (the dual PDE0 has two per entry: 64 KiB
 * table at 2i, 4 KiB table at 2i+1).  used counts leaves and children.
 */
typedef struct table {
  uint32_t used;
  uint8_t *leaf;
  struct table **child;
} table;

/* Stats slot of the 64 KiB and 4 KiB PTE tables. */
#define SLOT_64K PT_MMU_MAX_LEVELS
#define SLOT_4K (PT_MMU_MAX_LEVELS + 1)

struct pt_pagetable {
  const pt_mmu_desc *d;
  table *root;
  pt_pagetable_stats s;
};

static uint32_t entries(const pt_mmu_desc *d, int slot) {
  if (slot == SLOT_64K) return 1u << d->pte64k_bits;
  if (slot == SLOT_4K) return 1u << d->pte4k_bits;
  return 1u << (d->level[slot].hi - d->level[slot].lo + 1);
}

static uint64_t table_bytes(const pt_mmu_desc *d, int slot) {
  int eb = slot >= SLOT_64K ? 8 : d->level[slot].entry_bytes;
  return (uint64_t)entries(d, slot) * (uint64_t)eb;
}

static table *table_new(pt_pagetable *pt, int slot) {
  uint32_t n = entries(pt->d, slot);
  int directory = slot < pt->d->nlevels;
  int dual = directory && slot == pt->d->nlevels - 1;
  table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->leaf = calloc(n, 1);
  if (directory) t->child = calloc((size_t)n * (dual ? 2 : 1), sizeof *t->child);
  if (!t->leaf || (directory && !t->child)) {
    free(t->leaf);
    free(t->child);
    free(t);
    return NULL;
  }
  pt->s.tables_allocated[slot]++;
  pt->s.table_bytes[slot] += table_bytes(pt->d, slot);
  if (pt->s.table_bytes[slot] > pt->s.peak_table_bytes[slot]) pt->s.peak_table_bytes[slot] = pt->s.table_bytes[slot];
  return t;
}

static void table_free(pt_pagetable *pt, table *t, int slot) {
  pt->s.tables_freed[slot]++;
  pt->s.table_bytes[slot] -= table_bytes(pt->d, slot);
  free(t->leaf);
  free(t->child);
  free(t);
}

int pt_pagetable_create(const pt_mmu_desc *desc, pt_pagetable **out) {
  pt_pagetable *pt = calloc(1, sizeof *pt);
  if (!pt) return PT_ENOMEM;
  pt->d = desc;
  if (!(pt->root = table_new(pt, 0))) {
    free(pt);
    return PT_ENOMEM;
  }
  *out = pt;
  return 0;
}

static void destroy_rec(pt_pagetable *pt, table *t, int slot) {
  if (t->child) {
    int dual = slot == pt->d->nlevels - 1;
    uint32_t n = entries(pt->d, slot) * (dual ? 2 : 1);
    for (uint32_t i = 0; i < n; i++)
      if (t->child[i]) destroy_rec(pt, t->child[i], dual ? (i & 1 ? SLOT_4K : SLOT_64K) : slot + 1);
  }
  table_free(pt, t, slot);
}

void pt_pagetable_destroy(pt_pagetable *pt) {
  if (!pt) return;
  destroy_rec(pt, pt->root, 0);
  free(pt);
}

const pt_pagetable_stats *pt_pagetable_get_stats(const pt_pagetable *pt) { return &pt->s; }
const pt_mmu_desc *pt_pagetable_desc(const pt_pagetable *pt) { return pt->d; }

static uint32_t index_at(const pt_mmu_level *l, uint64_t va) {
  return (uint32_t)((va >> l->lo) & ((UINT64_C(1) << (l->hi - l->lo + 1)) - 1));
}

/* Largest page size the MMU supports at all for index p (v2 has no 512 MiB page). */
static int supported(const pt_mmu_desc *d, int p) {
  if (p <= P64K) return 1;
  for (int l = 0; l < d->nlevels; l++)
    if (d->level[l].leaf_page == p) return 1;
  return 0;
}

/*
 * Write one page of size index p at va.  Returns 0, or PT_EUSAGE when that
 * part of the range is already mapped, PT_ENOMEM.
 */
static int set_page(pt_pagetable *pt, uint64_t va, int p) {
  const pt_mmu_desc *d = pt->d;
  table *t = pt->root;
  for (int l = 0; l < d->nlevels; l++) {
    uint32_t i = index_at(&d->level[l], va);
    if (t->leaf[i]) return PT_EUSAGE;
    if (d->level[l].leaf_page == p) {
      int has_child = l == d->nlevels - 1 ? t->child[2 * i] || t->child[2 * i + 1] : t->child[i] != NULL;
      if (has_child) return PT_EUSAGE;
      t->leaf[i] = (uint8_t)(p + 1);
      t->used++;
      return 0;
    }
    int dual = l == d->nlevels - 1;
    if (dual) { /* a 64 KiB or a 4 KiB table under this PDE0 entry */
      table **big = &t->child[2 * i], **sm = &t->child[2 * i + 1];
      uint32_t j64 = (uint32_t)((va >> 16) & ((1u << d->pte64k_bits) - 1));
      if (p == P64K) { /* the 4 KiB sibling must hold nothing in this 64 KiB */
        for (uint32_t k = 0; *sm && k < 16; k++)
          if ((*sm)->leaf[(j64 * 16 + k) & ((1u << d->pte4k_bits) - 1)]) return PT_EUSAGE;
      } else if (*big && (*big)->leaf[j64]) {
        return PT_EUSAGE;
      }
      table **c = p == P64K ? big : sm;
      if (!*c) {
        if (!(*c = table_new(pt, p == P64K ? SLOT_64K : SLOT_4K))) return PT_ENOMEM;
        t->used++;
      }
      uint32_t j = p == P64K ? j64 : (uint32_t)((va >> 12) & ((1u << d->pte4k_bits) - 1));
      if ((*c)->leaf[j]) return PT_EUSAGE;
      (*c)->leaf[j] = (uint8_t)(p + 1);
      (*c)->used++;
      return 0;
    }
    table **c = &t->child[i];
    if (!*c) {
      if (!(*c = table_new(pt, l + 1))) return PT_ENOMEM;
      t->used++;
    }
    t = *c;
  }
  return PT_EUSAGE;
}

uint64_t pt_pagetable_page_at(const pt_pagetable *pt, uint64_t va) {
  const pt_mmu_desc *d = pt->d;
  const table *t = pt->root;
  for (int l = 0; l < d->nlevels; l++) {
    uint32_t i = index_at(&d->level[l], va);
    if (t->leaf[i]) return pt_page_sizes[t->leaf[i] - 1];
    if (l == d->nlevels - 1) {
      const table *big = t->child[2 * i], *small = t->child[2 * i + 1];
      if (big && big->leaf[(va >> 16) & ((1u << d->pte64k_bits) - 1)]) return pt_page_sizes[P64K];
      if (small && small->leaf[(va >> 12) & ((1u << d->pte4k_bits) - 1)]) return pt_page_sizes[P4K];
      return 0;
    }
    if (!(t = t->child[i])) return 0;
  }
  return 0;
}

int pt_pagetable_map(pt_pagetable *pt, uint64_t va, uint64_t bytes, uint64_t page_size, uint64_t chunk, pt_err *err) {
  const uint64_t small = pt_page_sizes[P4K];
  if (!bytes || (va | bytes) & (small - 1) || va + bytes < va || (va + bytes - 1) >> pt->d->va_bits)
    return pt_err_set(err, PT_EUSAGE, "map of [0x%llx, +%llu): not 4 KiB aligned or outside the %d-bit VA",
                      (unsigned long long)va, (unsigned long long)bytes, pt->d->va_bits);
  int want = -1;
  for (int p = 0; p < PT_NPAGE_SIZES; p++)
    if (pt_page_sizes[p] == page_size) want = p;
  if (want < 0) return pt_err_set(err, PT_EUSAGE, "page size %llu is not 4K, 64K, 2M or 512M", (unsigned long long)page_size);
  if (!chunk) chunk = bytes;
  uint64_t end = va + bytes;
  int prev_fallback = 0;
  for (uint64_t x = va; x < end;) {
    int p = want;
    for (; p > 0; p--) {
      uint64_t s = pt_page_sizes[p];
      uint64_t off = (x - va) % chunk; /* offset in its physically contiguous chunk */
      if (supported(pt->d, p) && !(x & (s - 1)) && !(off & (s - 1)) && off + s <= chunk && s <= end - x) break;
    }
    uint64_t s = pt_page_sizes[p];
    int rc = set_page(pt, x, p);
    if (rc < 0) {
      /* undo what this call mapped, so a failed map changes nothing */
      if (x > va) pt_pagetable_unmap(pt, va, x - va, NULL);
      return pt_err_set(err, rc, rc == PT_ENOMEM ? "out of memory"
                                                  : "map of [0x%llx, +%llu): 0x%llx is already mapped",
                        (unsigned long long)va, (unsigned long long)bytes, (unsigned long long)x);
    }
    pt->s.pte_writes++;
    pt->s.bytes_by_page[p] += s;
    pt->s.mapped_by_page[p] += s;
    if (p < want) {
      pt->s.fallback_bytes += s;
      if (!prev_fallback) pt->s.fallbacks++;
    }
    prev_fallback = p < want;
    x += s;
  }
  return 0;
}

/*
 * Clear the page at va (which must start there and end by `end`) and free
 * the tables that become empty.  Returns the page size, 0 when unmapped,
 * or a negative PT_E*.
 */
static int64_t clear_page(pt_pagetable *pt, uint64_t va, uint64_t end) {
  const pt_mmu_desc *d = pt->d;
  table *path[PT_MMU_MAX_LEVELS + 1];
  uint32_t idx[PT_MMU_MAX_LEVELS + 1];
  int slots[PT_MMU_MAX_LEVELS + 1];
  table *t = pt->root;
  int depth = 0, p = -1;
  for (int l = 0; l < d->nlevels; l++) {
    uint32_t i = index_at(&d->level[l], va);
    path[depth] = t;
    idx[depth] = i;
    slots[depth] = l;
    depth++;
    if (t->leaf[i]) {
      p = t->leaf[i] - 1;
      break;
    }
    if (l == d->nlevels - 1) {
      uint32_t j64 = (uint32_t)((va >> 16) & ((1u << d->pte64k_bits) - 1));
      uint32_t j4 = (uint32_t)((va >> 12) & ((1u << d->pte4k_bits) - 1));
      table *big = t->child[2 * i], *sm = t->child[2 * i + 1];
      if (big && big->leaf[j64]) {
        path[depth] = big, idx[depth] = j64, slots[depth] = SLOT_64K, idx[depth - 1] = 2 * i;
      } else if (sm && sm->leaf[j4]) {
        path[depth] = sm, idx[depth] = j4, slots[depth] = SLOT_4K, idx[depth - 1] = 2 * i + 1;
      } else {
        return 0;
      }
      p = path[depth]->leaf[idx[depth]] - 1;
      depth++;
      break;
    }
    if (!(t = t->child[i])) return 0;
  }
  if (p < 0) return 0;
  uint64_t s = pt_page_sizes[p];
  if (va & (s - 1) || s > end - va) return PT_EUSAGE; /* would split a page */
  table *leaf_table = path[depth - 1];
  leaf_table->leaf[idx[depth - 1]] = 0;
  leaf_table->used--;
  pt->s.pte_invalidations++;
  pt->s.bytes_by_page[p] -= s;
  /* free tables left empty, bottom up (never the root) */
  for (int k = depth - 1; k > 0 && path[k]->used == 0; k--) {
    table *parent = path[k - 1];
    parent->child[idx[k - 1]] = NULL;
    parent->used--;
    table_free(pt, path[k], slots[k]);
  }
  return (int64_t)s;
}

int pt_pagetable_unmap(pt_pagetable *pt, uint64_t va, uint64_t bytes, pt_err *err) {
  uint64_t end = va + bytes;
  if ((va | bytes) & (pt_page_sizes[P4K] - 1) || end < va)
    return pt_err_set(err, PT_EUSAGE, "unmap of [0x%llx, +%llu): not 4 KiB aligned", (unsigned long long)va,
                      (unsigned long long)bytes);
  for (uint64_t x = va; x < end;) {
    int64_t s = clear_page(pt, x, end);
    if (s < 0)
      return pt_err_set(err, PT_EUSAGE, "unmap of [0x%llx, +%llu) splits the page at 0x%llx", (unsigned long long)va,
                        (unsigned long long)bytes, (unsigned long long)x);
    x += s ? (uint64_t)s : pt_page_sizes[P4K];
  }
  return 0;
}
