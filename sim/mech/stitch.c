/*
 * stitch.c — the "stitch" mechanism: virtual-memory stitching in the style
 * of GMLake (Guo et al., ASPLOS 2024).  Physical memory is made of 2 MiB
 * handles; free handles scattered over several VA ranges can be mapped
 * side by side into a new VA range, so a request larger than any free
 * contiguous block is served without creating memory.
 *
 * The model, kept small and deterministic:
 *   - A primary range is one VA reservation backed by handles it created
 *     (cuMemCreate, cuMemMap per 2 MiB handle, one cuMemSetAccess).  Inside
 *     it, blocks are split (remainder >= 512 B) and merged as in PyTorch's
 *     segments, so small requests share a range.
 *   - A request (rounded to 512 B) is served, in this order, by:
 *       1. best fit over free primary blocks of its stream, key (stream,
 *          size, address): no driver call;
 *       2. a cached stitched range of exactly the request's page count whose
 *          pages are all free again (most recently freed first): no call;
 *       3. stitching: whole free pages of free primary blocks, taken from
 *          the largest block down, from blocks whose whole-page extent is at
 *          least stitch_min_bytes, until the request's pages are covered.
 *          The pages are lent out of their primary blocks and mapped in
 *          order into a new VA range: cuMemAddressReserve, one cuMemMap per
 *          page, one cuMemSetAccess; no cuMemCreate;
 *       4. a new primary range of the request rounded up to 2 MiB (or of
 *          what the segment_size hook says).
 *   - A stitched range serves one allocation at a time.  When it is freed,
 *     its pages go back to their primary blocks (free again for step 1)
 *     and the range keeps its mappings as a cache entry for step 2.  At most
 *     max_stitched ranges are cached; past that the least recently freed is
 *     unmapped (cuMemUnmap per page) and its VA freed.
 *   - Memory is released (step 4 failing against the cap, or empty_cache):
 *     every cached stitched range is unmapped, then every primary range
 *     with nothing allocated or lent is unmapped and released (per handle)
 *     and its VA freed; a failed step 4 is then tried once more.  The
 *     should_collect hook, asked before step 4, runs the same release.
 *   - GMLake also stitches free pages with new ones when the free ones fall
 *     short; this model creates a whole new range instead.
 *   - Segments alive at trace start become primary ranges (held, no call
 *     counted), released per 2 MiB like any other.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "slab.h"
#include "span.h"

#define MIB (UINT64_C(1) << 20)
#define PAGE (2 * MIB)                  /* handle size: the VMM granularity */
#define MIN_BLOCK UINT64_C(512)
#define MAX_BYTES 1125899906842624.0    /* 2^50 */

/* ---- ranges and blocks -------------------------------------------------- */

enum { K_BLOCK = 1, K_STITCH = 2 };      /* what a handle points at */
enum { B_FREE, B_ALLOC, B_LENT };        /* a primary block's state */

typedef struct sblock sblock;

typedef struct prange {
  struct prange *prev, *next;
  sblock *head;                /* lowest block; merges keep the lower block, so it lasts */
  uint64_t base, bytes, stream;
  uint64_t *handles;           /* the handle of each 2 MiB page, in VA order (owned) */
} prange;

/* A run of a primary range; a free one is in the free set. */
struct sblock {
  uint8_t kind;                /* K_BLOCK; first, as in srange */
  uint8_t state;
  pt_bnode node;               /* free set: (stream, size, addr) */
  sblock *prev, *next;
  prange *pr;
  uint64_t addr, size;
};

/* A page of a stitched range: where it lives in its primary range. */
typedef struct spage {
  prange *pr;
  uint64_t addr;
} spage;

typedef struct srange {
  uint8_t kind;                /* K_STITCH */
  uint8_t cached;
  pt_bnode cnode;              /* cache set while cached: (stream, pages, ~seq) */
  struct srange *lprev, *lnext;/* cached ranges, least recently freed first */
  struct srange *prev, *next;  /* every stitched range, for destroy */
  uint64_t stream, va, npages, size;
  spage *pages;                /* each page in its primary range, in VA order */
  sblock **lent;               /* primary blocks lent while allocated */
  size_t nlent;
} srange;

#define BLK(n) ((sblock *)(void *)((char *)(n) - offsetof(sblock, node)))
#define SRNG(n) ((srange *)(void *)((char *)(n) - offsetof(srange, cnode)))

#define SLAB_BLOCKS 256
typedef struct run {
  sblock *b;
  uint64_t start, npages;
} run;

typedef struct stitch_state {
  pt_mech_env env;
  pt_bset freet, cachet;
  prange *ranges;
  srange *stitched;
  srange *lru_head, *lru_tail;
  size_t ncached, max_cached;
  uint64_t seq, stitch_min;
  uint64_t free_pages;         /* stitchable pages in free blocks, every stream: step 3's bound */
  pt_slab blocks;             /* block records (slab.h) */
  run *runs;
  size_t runs_cap;
  sblock *init_cursor;         /* last initial block carved: the next one is usually after it */
} stitch_state;

static int oom(stitch_state *st) { return pt_err_set(st->env.err, PT_ENOMEM, "stitch: out of memory"); }

static int ensure_spare(stitch_state *st, size_t n) {
  return pt_slab_reserve(&st->blocks, n) < 0 ? oom(st) : 0;
}

/* A free block record; ensure_spare must have been called. */
static sblock *take_block(stitch_state *st, prange *pr, uint64_t addr, uint64_t size) {
  sblock *b = pt_slab_take(&st->blocks);
  b->kind = K_BLOCK;
  b->state = B_FREE;
  b->pr = pr;
  b->addr = addr;
  b->size = size;
  return b;
}

static void drop_block(stitch_state *st, sblock *b) {
  pt_slab_drop(&st->blocks, b);
}

/* Whole pages of free block b that step 3 may stitch (its whole-page extent >= stitch_min_bytes). */
static uint64_t stitchable(const stitch_state *st, const sblock *b) {
  uint64_t ps = (b->addr + PAGE - 1) / PAGE * PAGE, pe = (b->addr + b->size) / PAGE * PAGE;
  return pe > ps && pe - ps >= st->stitch_min ? (pe - ps) / PAGE : 0;
}

static void free_insert(stitch_state *st, sblock *b) {
  b->node.key = (pt_bkey){b->pr->stream, b->size, b->addr};
  pt_mech_set_insert(&st->env, &st->freet, &b->node);
  st->free_pages += stitchable(st, b);
}

static void free_erase(stitch_state *st, sblock *b) {
  pt_bset_erase(&st->freet, &b->node);
  st->free_pages -= stitchable(st, b);
}

/*
 * [a, a+len) out of free block b (in no free set): the pieces before and
 * after stay free; the middle is returned, b itself when a == b->addr, so a
 * range's lowest block stays its head.  Needs two spare records.
 */
static sblock *piece_new(stitch_state *st, const sblock *b, uint64_t addr, uint64_t size) {
  return take_block(st, b->pr, addr, size);
}

/* A free piece; one that now begins its range is the range's head. */
static void piece_keep(stitch_state *st, sblock *f) {
  if (!f->prev) f->pr->head = f;
  free_insert(st, f);
}

static sblock *carve(stitch_state *st, sblock *b, uint64_t a, uint64_t len) {
  PT_SPAN_CARVE(st, b, a, len, piece_new, piece_keep);
  return b;
}

/* b (in no free set) becomes free, merged into its free neighbours. */
static void make_free(stitch_state *st, sblock *b) {
  b->state = B_FREE;
  sblock *p = b->prev, *n = b->next;
  if (p && p->state == B_FREE) { /* the lower block lasts: a range's head stays its head */
    free_erase(st, p);
    PT_SPAN_ABSORB(p, b);
    drop_block(st, b);
    b = p;
  }
  if (n && n->state == B_FREE) {
    free_erase(st, n);
    PT_SPAN_ABSORB(b, n);
    drop_block(st, n);
  }
  free_insert(st, b);
}

/* ---- stitched ranges ---------------------------------------------------- */

static void lru_unlink(stitch_state *st, srange *s) {
  if (s->lprev)
    s->lprev->lnext = s->lnext;
  else
    st->lru_head = s->lnext;
  if (s->lnext)
    s->lnext->lprev = s->lprev;
  else
    st->lru_tail = s->lprev;
  s->lprev = s->lnext = NULL;
}

static void srange_free(stitch_state *st, srange *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    st->stitched = s->next;
  if (s->next) s->next->prev = s->prev;
  free(s->pages);
  free(s->lent);
  free(s);
}

/* Unmap pages [0, n) of a stitched range and give its VA back. */
static int unmap_stitched(stitch_state *st, const srange *s, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    int rc = pt_dev_mem_unmap(st->env.dev, s->va + i * PAGE, PAGE);
    if (rc < 0) return rc;
  }
  return pt_dev_address_free(st->env.dev, s->va, s->npages * PAGE);
}

/* Unmap a cached stitched range and give its VA back; on a driver's error it stays cached. */
static int evict(stitch_state *st, srange *s) {
  int rc = unmap_stitched(st, s, s->npages);
  if (rc < 0) return rc;
  pt_bset_erase(&st->cachet, &s->cnode);
  lru_unlink(st, s);
  st->ncached--;
  srange_free(st, s);
  return 0;
}

/* The handle of the primary page at addr. */
static uint64_t page_handle(const prange *pr, uint64_t addr) { return pr->handles[(addr - pr->base) / PAGE]; }

static srange *srange_new(stitch_state *st, uint64_t stream, uint64_t npages) {
  srange *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->pages = malloc(npages * sizeof *s->pages);
  s->lent = malloc(npages * sizeof *s->lent);
  if (!s->pages || !s->lent) {
    free(s->pages);
    free(s->lent);
    free(s);
    return NULL;
  }
  s->kind = K_STITCH;
  s->stream = stream;
  s->npages = npages;
  s->next = st->stitched;
  if (st->stitched) st->stitched->prev = s;
  st->stitched = s;
  return s;
}

/*
 * The block of its primary range that holds page pg, walking the range's
 * blocks from *from (when it lies in the same range, at or below the page)
 * or from the range's head; *from is left at that block.  Only the rare
 * reuse of a cached stitched range walks, so no address index is kept.
 * Every block the walk looks at, the first and the one it stops at
 * included, is counted as a visit (bset.h's work counters).
 */
static sblock *page_block(const spage *pg, sblock **from) {
  sblock *b = *from && (*from)->pr == pg->pr && (*from)->addr <= pg->addr ? *from : pg->pr->head;
  uint64_t n = 1;
  for (; b->addr + b->size <= pg->addr; n++) b = b->next; /* the range holds the page */
  pt_bset_work_visit(n);
  return *from = b;
}

static int page_free(const spage *pg, const sblock *b) { return b->state == B_FREE && pg->addr + PAGE <= b->addr + b->size; }

/* Step 2: a cached stitched range of npages pages whose pages are all free. */
static int reuse_cached(stitch_state *st, uint64_t stream, uint64_t npages, srange **out) {
  *out = NULL;
  for (pt_bnode *n = pt_bset_lower_bound(&st->cachet, &(pt_bkey){stream, npages, 0});
       n && n->key.stream == stream && n->key.size == npages; n = pt_bset_next(&st->cachet, n)) {
    srange *s = SRNG(n);
    sblock *at = NULL;
    uint64_t i = 0;
    while (i < npages && page_free(&s->pages[i], page_block(&s->pages[i], &at))) i++;
    if (i < npages) continue;
    int rc = ensure_spare(st, 2 * npages);
    if (rc < 0) return rc;
    pt_bset_erase(&st->cachet, &s->cnode);
    lru_unlink(st, s);
    st->ncached--;
    s->cached = 0;
    at = NULL;
    for (i = 0; i < npages; i++) {
      sblock *b = page_block(&s->pages[i], &at);
      free_erase(st, b);
      at = b = carve(st, b, s->pages[i].addr, PAGE);
      b->state = B_LENT;
      s->lent[i] = b;
    }
    s->nlent = npages;
    *out = s;
    return 0;
  }
  return 0;
}

/* Step 3: stitch whole free pages of free primary blocks into a new range. */
static int stitch(stitch_state *st, uint64_t stream, uint64_t npages, srange **out) {
  uint64_t got = 0;
  size_t nr = 0;
  *out = NULL;
  if (st->free_pages < npages) return 0; /* not enough anywhere: skip the walk */
  for (pt_bnode *n = pt_bset_before(&st->freet, &(pt_bkey){stream, UINT64_MAX, UINT64_MAX});
       n && n->key.stream == stream && n->key.size >= st->stitch_min && got < npages;
       n = pt_bset_before(&st->freet, &n->key)) { /* largest first */
    sblock *b = BLK(n);
    uint64_t take = stitchable(st, b);
    if (!take) continue;
    if (nr == st->runs_cap) {
      size_t cap = st->runs_cap ? 2 * st->runs_cap : 16;
      run *r = realloc(st->runs, cap * sizeof *r);
      if (!r) return oom(st);
      st->runs = r;
      st->runs_cap = cap;
    }
    if (take > npages - got) take = npages - got;
    st->runs[nr++] = (run){.b = b, .start = (b->addr + PAGE - 1) / PAGE * PAGE, .npages = take};
    got += take;
  }
  if (got < npages) return 0;
  int rc = ensure_spare(st, 2 * nr);
  if (rc < 0) return rc;
  srange *s = srange_new(st, stream, npages);
  if (!s) return oom(st);
  pt_device *dev = st->env.dev;
  if ((rc = pt_dev_address_reserve(dev, npages * PAGE, PAGE, &s->va)) < 0) {
    srange_free(st, s);
    return rc;
  }
  uint64_t j = 0; /* the driver first, so that a failed call leaves the primary blocks as they were */
  for (size_t r = 0; r < nr && rc == 0; r++)
    for (uint64_t i = 0; i < st->runs[r].npages && rc == 0; i++, j++) {
      s->pages[j] = (spage){st->runs[r].b->pr, st->runs[r].start + i * PAGE};
      rc = pt_dev_mem_map(dev, s->va + j * PAGE, PAGE, page_handle(s->pages[j].pr, s->pages[j].addr)); /* the primary page, again */
      if (rc < 0) j--;
    }
  if (rc == 0) rc = pt_dev_mem_set_access(dev, s->va, npages * PAGE);
  if (rc < 0) {
    unmap_stitched(st, s, j);
    srange_free(st, s);
    return rc;
  }
  for (size_t r = 0; r < nr; r++) {
    sblock *b = st->runs[r].b;
    free_erase(st, b);
    b = carve(st, b, st->runs[r].start, st->runs[r].npages * PAGE);
    b->state = B_LENT;
    s->lent[s->nlent++] = b;
  }
  *out = s;
  return 0;
}

/* ---- primary ranges ----------------------------------------------------- */

/* A primary range over handles (owned from here on, also when this fails). */
static prange *prange_new(stitch_state *st, uint64_t base, uint64_t bytes, uint64_t stream, uint64_t *handles) {
  prange *pr = calloc(1, sizeof *pr);
  if (!pr) {
    free(handles);
    return NULL;
  }
  pr->handles = handles;
  pr->base = base;
  pr->bytes = bytes;
  pr->stream = stream;
  pr->next = st->ranges;
  if (st->ranges) st->ranges->prev = pr;
  st->ranges = pr;
  pr->head = take_block(st, pr, base, bytes);
  return pr;
}

static void prange_unlink(stitch_state *st, prange *pr) {
  if (pr->prev)
    pr->prev->next = pr->next;
  else
    st->ranges = pr->next;
  if (pr->next) pr->next->prev = pr->prev;
  free(pr->handles);
  free(pr);
}

/* Step 4: a new primary range of bytes (2 MiB multiple); its one block, in no free set. */
static int new_range(stitch_state *st, uint64_t stream, uint64_t bytes, sblock **out) {
  pt_device *dev = st->env.dev;
  uint64_t n = bytes / PAGE, made, mapped = 0, va = 0, i;
  int rc = ensure_spare(st, 1), reserved = 0;
  if (rc < 0) return rc;
  uint64_t *h = calloc(n ? n : 1, sizeof *h);
  if (!h) return oom(st);
  for (i = 0; i < n && (rc = pt_dev_mem_create(dev, PAGE, &h[i])) == 0; i++) {}
  made = i;
  if (rc == 0 && (rc = pt_dev_address_reserve(dev, bytes, PAGE, &va)) == 0) {
    reserved = 1;
    for (i = 0; i < n && (rc = pt_dev_mem_map(dev, va + i * PAGE, PAGE, h[i])) == 0; i++) {}
    mapped = i;
    if (rc == 0) rc = pt_dev_mem_set_access(dev, va, bytes);
  }
  if (rc == 0) {
    prange *pr = prange_new(st, va, bytes, stream, h);
    if (pr) {
      *out = pr->head;
      return 0;
    }
    h = NULL;
    rc = oom(st);
  }
  /* undo what was made, so that the device holds what the ranges record */
  for (i = 0; i < mapped; i++) pt_dev_mem_unmap(dev, va + i * PAGE, PAGE);
  for (i = 0; h && i < made; i++) pt_dev_mem_release(dev, h[i], PAGE);
  if (reserved) pt_dev_address_free(dev, va, bytes);
  free(h);
  return rc;
}

/* Unmap every cached stitched range, then release every unused primary range; a driver's error stops it. */
static int release_all(stitch_state *st) {
  pt_device *dev = st->env.dev;
  int rc;
  while (st->lru_head)
    if ((rc = evict(st, st->lru_head)) < 0) return rc;
  for (prange *pr = st->ranges, *nx; pr; pr = nx) {
    nx = pr->next;
    sblock *b = pr->head;
    if (b->state != B_FREE || b->next) continue;
    for (uint64_t off = 0; off < pr->bytes; off += PAGE) {
      uint64_t len = pr->bytes - off < PAGE ? pr->bytes - off : PAGE;
      if ((rc = pt_dev_mem_unmap(dev, pr->base + off, len)) < 0 ||
          (rc = pt_dev_mem_release(dev, pr->handles[off / PAGE], len)) < 0)
        return rc;
    }
    if ((rc = pt_dev_address_free(dev, pr->base, pr->bytes)) < 0) return rc;
    free_erase(st, b);
    drop_block(st, b);
    prange_unlink(st, pr);
  }
  return 0;
}

/* ---- the mechanism ------------------------------------------------------ */

static const pt_mech_param stitch_params[] = {
    {"stitch_min_bytes", 2097152, MAX_BYTES, PT_PARAM_WHOLE, 2097152,
     "least whole-page extent of a free block for its pages to be stitched; default 2 MiB", 0},
    {"max_stitched", 0, 1000000, PT_PARAM_WHOLE, 64, "stitched ranges kept mapped after their allocation is freed; default 64", 0},
    {NULL, 0, 0, PT_PARAM_REAL, 0, NULL, 0}};

static int stitch_create(const pt_mech_env *env, void **state) {
  double min = pt_mech_param_get(stitch_params, "stitch_min_bytes", env->params);
  double cap = pt_mech_param_get(stitch_params, "max_stitched", env->params);
  stitch_state *st = calloc(1, sizeof *st);
  if (st) pt_slab_init(&st->blocks, sizeof(sblock), SLAB_BLOCKS);
  if (!st) return pt_err_set(env->err, PT_ENOMEM, "stitch: out of memory");
  st->env = *env;
  st->stitch_min = (uint64_t)min;
  st->max_cached = (size_t)cap;
  *state = st;
  return 0;
}

static int hook_size(stitch_state *st, int (*fn)(void *, uint64_t, uint64_t *, pt_err *), const char *name,
                     uint64_t in, uint64_t *out) {
  int rc = fn(st->env.hooks->ctx, in, out, st->env.err);
  return rc < 0 ? rc : pt_mech_check_hook_size(&st->env, "stitch", name, in, *out);
}

static int stitch_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  stitch_state *st = state;
  const pt_policy_hooks *h = st->env.hooks;
  uint64_t size;
  int rc;
  if (h && h->round) {
    if ((rc = hook_size(st, h->round, "round", bytes, &size)) < 0) return rc;
  } else {
    if (bytes > (uint64_t)MAX_BYTES)
      return pt_err_set(st->env.err, PT_ELIMIT, "stitch: request of %llu bytes", (unsigned long long)bytes);
    size = pt_mech_round512(bytes);
  }
  uint64_t npages = (size + PAGE - 1) / PAGE;
  st->init_cursor = NULL; /* merges may drop it from here on */
  if ((rc = ensure_spare(st, 2)) < 0) return rc;

  pt_bnode *n = pt_bset_lower_bound(&st->freet, &(pt_bkey){stream, size, 0}); /* 1: best fit */
  sblock *b = n && n->key.stream == stream ? BLK(n) : NULL;
  if (b) {
    free_erase(st, b);
    st->env.counters->cache_hits++;
  } else {
    srange *s;
    if ((rc = reuse_cached(st, stream, npages, &s)) < 0) return rc; /* 2 */
    if (s) st->env.counters->cache_hits++;
    if (!s && (rc = stitch(st, stream, npages, &s)) < 0) return rc; /* 3 */
    if (s) {
      s->size = size;
      *handle = (uint64_t)(uintptr_t)s;
      return 0;
    }
    if (h && h->should_collect) { /* 4: a new range */
      int yes = 0;
      if ((rc = pt_mech_should_collect(&st->env, &yes)) < 0) return rc;
      if (yes) {
        if ((rc = release_all(st)) < 0) return rc;
        st->env.counters->collections++;
      }
    }
    uint64_t bytes_new = size;
    if (h && h->segment_size && (rc = hook_size(st, h->segment_size, "segment_size", size, &bytes_new)) < 0) return rc;
    bytes_new = (bytes_new + PAGE - 1) / PAGE * PAGE;
    rc = new_range(st, stream, bytes_new, &b);
    if (rc == PT_EOOM) {
      if ((rc = release_all(st)) < 0) return rc;
      st->env.counters->alloc_retries++;
      rc = new_range(st, stream, bytes_new, &b);
    }
    if (rc < 0) return rc;
  }
  b = carve(st, b, b->addr, b->size - size >= MIN_BLOCK ? size : b->size);
  b->state = B_ALLOC;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

static int stitch_free(void *state, uint64_t handle) {
  stitch_state *st = state;
  st->init_cursor = NULL;
  if (*(const uint8_t *)(uintptr_t)handle == K_BLOCK) {
    sblock *b = (sblock *)(uintptr_t)handle;
    make_free(st, b);
    return 0;
  }
  srange *s = (srange *)(uintptr_t)handle;
  for (size_t i = 0; i < s->nlent; i++) make_free(st, s->lent[i]);
  s->nlent = 0;
  s->cached = 1;
  s->cnode.key = (pt_bkey){s->stream, s->npages, UINT64_MAX - ++st->seq}; /* most recently freed first */
  pt_mech_set_insert(&st->env, &st->cachet, &s->cnode);
  s->lprev = st->lru_tail;
  s->lnext = NULL;
  if (st->lru_tail)
    st->lru_tail->lnext = s;
  else
    st->lru_head = s;
  st->lru_tail = s;
  st->ncached++;
  while (st->ncached > st->max_cached) {
    int rc = evict(st, st->lru_head);
    if (rc < 0) return rc;
  }
  return 0;
}

static int stitch_empty_cache(void *state) {
  stitch_state *st = state;
  st->init_cursor = NULL;
  return release_all(st);
}

static int stitch_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  stitch_state *st = state;
  (void)expandable;
  if (!bytes) return pt_err_set(st->env.err, PT_EFORMAT, "stitch: initial segment of 0 bytes");
  for (const prange *pr = st->ranges; pr; pr = pr->next) /* initial segments are few */
    if (addr < pr->base + pr->bytes && pr->base < addr + bytes)
      return pt_err_set(st->env.err, PT_EFORMAT, "stitch: initial segment at 0x%llx overlaps another",
                        (unsigned long long)addr);
  int rc = ensure_spare(st, 1);
  if (rc < 0) return rc;
  uint64_t n = (bytes + PAGE - 1) / PAGE, *h = calloc(n, sizeof *h);
  if (!h) return oom(st);
  if ((rc = pt_dev_adopt_mapped(st->env.dev, addr, bytes, PAGE, h)) < 0) {
    free(h);
    return rc;
  }
  prange *pr = prange_new(st, addr, bytes, stream, h);
  if (!pr) return oom(st);
  free_insert(st, pr->head);
  return 0;
}

/* A block live at trace start, carved out of the free part of a range. */
static int stitch_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  stitch_state *st = state;
  (void)stream;
  uint64_t size = pt_mech_round512(bytes);
  sblock *b = NULL;
  for (prange *pr = st->ranges; pr && !b; pr = pr->next)
    if (addr >= pr->base && addr - pr->base < pr->bytes) b = page_block(&(spage){pr, addr}, &st->init_cursor);
  if (!b || b->state != B_FREE || addr + size > b->addr + b->size)
    return pt_err_set(st->env.err, PT_EFORMAT, "stitch: initial block at 0x%llx (%llu bytes) lies in no free part of a segment",
                      (unsigned long long)addr, (unsigned long long)bytes);
  int rc = ensure_spare(st, 2);
  if (rc < 0) return rc;
  free_erase(st, b);
  st->init_cursor = b = carve(st, b, addr, size);
  b->state = B_ALLOC;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

static uint64_t stitch_addr_of(void *state, uint64_t handle) {
  (void)state;
  if (*(const uint8_t *)(uintptr_t)handle == K_BLOCK) return ((const sblock *)(uintptr_t)handle)->addr;
  return ((const srange *)(uintptr_t)handle)->va;
}

static void stitch_destroy(void *state) {
  stitch_state *st = state;
  if (!st) return;
  while (st->stitched) srange_free(st, st->stitched);
  while (st->ranges) prange_unlink(st, st->ranges);
  pt_bset_free(&st->freet);
  pt_bset_free(&st->cachet);
  pt_slab_free(&st->blocks);
  free(st->runs);
  free(st);
}

const pt_mech_ops pt_mech_stitch = {
    .name = "stitch",
    .params = stitch_params,
    .create = stitch_create,
    .init_segment = stitch_init_segment,
    .init_alloc = stitch_init_alloc,
    .alloc = stitch_alloc,
    .free = stitch_free,
    .empty_cache = stitch_empty_cache,
    .destroy = stitch_destroy,
    .addr_of = stitch_addr_of,
};
