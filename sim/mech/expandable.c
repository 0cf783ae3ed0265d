/*
 * expandable.c — PyTorch's CUDA caching allocator with
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the "expandable"
 * mechanism).  Rules follow c10/cuda/CUDACachingAllocator.cpp as summarised
 * in docs/pytorch-caching-allocator.md (§5, §6, §9); the model keeps the
 * allocator's decisions and drops what a trace cannot show (events,
 * record_stream, CUDA graphs, IPC).
 *
 *   - A request is rounded by round_size (512 B, or a division of its
 *     power-of-two interval under roundup_power2_divisions, the list form
 *     too) and goes to the small pool (<= 1 MiB) or the large pool.
 *   - Each (stream, pool) has an expandable segment: one VA reservation of
 *     ceil(1.125 x total GPU memory / page) pages (cuMemAddressReserve),
 *     grown by mapping pages at the lowest address where free + unmapped
 *     space fits the request.  A page is one physical handle of 2 MiB (small
 *     pool) or 20 MiB (large pool, large_segment_size_mb): cuMemCreate and
 *     cuMemMap per page, then one cuMemSetAccess over the pages of that map.
 *     A map is what a snapshot records as one segment_map.
 *   - Best fit over free mapped blocks ordered by (stream, size, address),
 *     with PyTorch's twist: a block followed by unmapped space counts as its
 *     size plus that space, so the search prefers other blocks; then the
 *     oversize rule of max_split_size_mb / max_non_split_rounding_mb: a
 *     block it refuses ends the search (the segment grows instead).  Splitting
 *     leaves a remainder of >= 512 B in either pool; freed blocks merge with
 *     free neighbours.
 *   - Pages are unmapped (cuMemUnmap + cuMemRelease per page) only where
 *     PyTorch does: in release_cached_blocks, reached from empty_cache and
 *     from the last retry of a request that failed; each free block's whole
 *     pages are one range, what a snapshot records as one segment_unmap
 *     (counted as unmap_ranges).  A segment left with no mapped page gives
 *     its VA back.  garbage_collection_threshold changes nothing here:
 *     PyTorch's collection frees only unsplit blocks that are not
 *     expandable, and max_split_size_mb's release of oversize blocks skips
 *     expandable ones too (both are declared, as PyTorch accepts them).
 *   - The cap (--capacity, set_per_process_memory_fraction) is checked as
 *     PyTorch does, against the allocation size the native allocator would
 *     have used (2 MiB, 20 MiB, or the request rounded to 2 MiB), before any
 *     page is mapped; the device's own check on each cuMemCreate stays.
 *   - Segments alive at trace start: an expandable one becomes the mapped
 *     part of its (stream, pool) segment; a cudaMalloc'd one stays a plain
 *     segment whose blocks are used by best fit and which is cudaFree'd when
 *     wholly free at a release.  The pool of an expandable initial segment is
 *     guessed from its size (a multiple of 20 MiB: large), that of a plain
 *     one likewise (2 MiB: small).
 *
 * Private pools (a CUDA graph's; PyTorch's PrivatePool uses expandable
 * segments too): each has a small and a large pool of its own, so its own
 * (stream, pool) segments, chosen by use_pool; release_cached (empty_cache,
 * the retry) unmaps the default pool's pages, and a private pool's only once
 * it is released (release_pool), as PyTorch.
 *
 * Policy hooks: round replaces round_size; segment_size gives the least
 * bytes a growth maps for a request (PyTorch: the request itself);
 * should_collect, asked before the segment grows, runs a release when it
 * says so (PyTorch's own garbage collection never unmaps expandable pages,
 * so there is no default collection).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "slab.h"
#include "span.h"

#define MIB (UINT64_C(1) << 20)
#define MIN_BLOCK UINT64_C(512)       /* kMinBlockSize */
#define SMALL_SIZE MIB                /* kSmallSize: largest small request */
#define SMALL_PAGE (2 * MIB)          /* kSmallBuffer: small-pool page */
#define MIN_LARGE_ALLOC (10 * MIB)    /* kMinLargeAlloc */
#define ROUND_LARGE (2 * MIB)         /* kRoundLarge */
#define H200_TOTAL UINT64_C(150109880320) /* totalGlobalMem of the traces' H200 */

enum { SMALL, LARGE, NPOOLS }; /* pool index: NPOOLS x the memory pool (0 the default, k private pool k) + kind */
#define KIND(pool) ((pool) % NPOOLS)

/* ---- blocks and segments ------------------------------------------------ */

typedef struct eseg {
  struct eseg *prev, *next; /* every segment, for destroy */
  uint64_t base, bytes;     /* VA reservation (expandable) or the cudaMalloc'd range */
  uint64_t page;            /* handle size; 0: a plain cudaMalloc'd segment */
  uint64_t stream;
  int pool;
  uint64_t *handles;        /* expandable: the handle mapped at each page, by page index (0: none) */
  size_t nhandles;          /* pages the array covers: up to the highest page mapped so far */
} eseg;

/*
 * A block: a run of a segment, allocated, free and mapped (in the pool's
 * free set, key (stream, size, addr)), or unmapped (in the pool's unmapped
 * set, key (stream, 0, addr): by address).  prev/next are its neighbours in
 * the segment.
 */
typedef struct eblock {
  pt_bnode node;
  pt_bnode anode;              /* free blocks by address (0, 0, addr), while the initial state is built */
  struct eblock *prev, *next;
  eseg *seg;
  uint64_t addr, size;
  uint8_t allocated, mapped;
} eblock;

#define BLK(n) ((eblock *)(void *)((char *)(n) - offsetof(eblock, node)))
#define ABLK(n) ((eblock *)(void *)((char *)(n) - offsetof(eblock, anode)))

#define SLAB_BLOCKS 256
typedef struct exp_state {
  pt_mech_env env;
  pt_bset *freet, *unmapped;   /* by pool index, nsets of each */
  size_t nsets;
  uint8_t *freeable;           /* by memory pool (nsets / NPOOLS): released (release_pool) */
  int cur;                     /* pool index of the current memory pool's SMALL (use_pool) */
  pt_bset addrt;               /* free mapped blocks by address: initial state only */
  int init_phase;              /* still reading initial segments and blocks */
  eseg *segs;
  pt_slab blocks;             /* block records (slab.h) */
  eblock **scratch;            /* release_blocks' list */
  size_t scratch_cap;
  pt_mech_alloc_conf k;        /* the knobs PyTorch reads with expandable segments too */
  uint64_t page[NPOOLS];       /* handle size per pool */
  uint64_t va_bytes[NPOOLS];   /* VA reserved per segment */
} exp_state;

static int ensure_spare(exp_state *st, size_t n) {
  if (pt_slab_reserve(&st->blocks, n) < 0) return pt_err_set(st->env.err, PT_ENOMEM, "expandable: out of memory");
  return 0;
}

/* A block record; ensure_spare must have been called. */
static eblock *take_block(exp_state *st, eseg *sg, uint64_t addr, uint64_t size, int mapped) {
  eblock *b = pt_slab_take(&st->blocks);
  b->seg = sg;
  b->addr = addr;
  b->size = size;
  b->mapped = (uint8_t)mapped;
  return b;
}

static void drop_block(exp_state *st, eblock *b) {
  pt_slab_drop(&st->blocks, b);
}

static void link_after(eblock *at, eblock *b) { PT_SPAN_LINK_AFTER(at, b); }


static void free_insert(exp_state *st, eblock *b) {
  b->node.key = (pt_bkey){b->seg->stream, b->size, b->addr};
  pt_mech_set_insert(&st->env, &st->freet[b->seg->pool], &b->node);
  if (st->init_phase) {
    b->anode.key = (pt_bkey){0, 0, b->addr};
    pt_mech_set_insert(&st->env, &st->addrt, &b->anode);
  }
}

static void free_remove(exp_state *st, eblock *b) {
  pt_bset_erase(&st->freet[b->seg->pool], &b->node);
  if (st->init_phase) pt_bset_erase(&st->addrt, &b->anode);
}

static void unmapped_insert(exp_state *st, eblock *b) {
  b->node.key = (pt_bkey){b->seg->stream, 0, b->addr};
  pt_mech_set_insert(&st->env, &st->unmapped[b->seg->pool], &b->node);
}

/*
 * Shrink b (out of every set) to [lo, lo+len): the parts before and after
 * become blocks of their own, in the state b had (a mapped part goes back to
 * the free set, an unmapped one to the unmapped set).  Needs two spare
 * records.
 */
static eblock *piece_new(exp_state *st, const eblock *b, uint64_t addr, uint64_t size) {
  return take_block(st, b->seg, addr, size, b->mapped);
}

static void piece_keep(exp_state *st, eblock *f) {
  if (f->mapped) free_insert(st, f);
  else unmapped_insert(st, f);
}

static void carve(exp_state *st, eblock *b, uint64_t lo, uint64_t len) {
  PT_SPAN_CARVE(st, b, lo, len, piece_new, piece_keep);
}

static void unmapped_remove(exp_state *st, eblock *b) { pt_bset_erase(&st->unmapped[b->seg->pool], &b->node); }

/* The initial state is complete: the address index is no longer kept. */
static void end_init(exp_state *st) {
  st->init_phase = 0;
  pt_bset_free(&st->addrt);
}

/* try_merge_blocks: dst absorbs src when src is free in the same mapping state. */
static void try_merge(exp_state *st, eblock *dst, eblock *src) {
  if (!src || src->allocated || src->mapped != dst->mapped) return;
  if (src->mapped)
    free_remove(st, src);
  else
    unmapped_remove(st, src);
  PT_SPAN_ABSORB(dst, src);
  drop_block(st, src);
}

static void seg_link(exp_state *st, eseg *sg) {
  sg->prev = NULL;
  sg->next = st->segs;
  if (st->segs) st->segs->prev = sg;
  st->segs = sg;
}

static void seg_unlink(exp_state *st, eseg *sg) {
  if (sg->prev)
    sg->prev->next = sg->next;
  else
    st->segs = sg->next;
  if (sg->next) sg->next->prev = sg->prev;
  free(sg->handles);
  free(sg);
}

/* The handle array of sg covers pages [0, end). */
static int seg_handles_cover(exp_state *st, eseg *sg, uint64_t end) {
  if (end <= sg->nhandles) return 0;
  size_t n = sg->nhandles ? sg->nhandles : 16;
  while (n < end) n *= 2;
  uint64_t *v = realloc(sg->handles, n * sizeof *v);
  if (!v) return pt_err_set(st->env.err, PT_ENOMEM, "expandable: out of memory");
  memset(v + sg->nhandles, 0, (n - sg->nhandles) * sizeof *v);
  sg->handles = v;
  sg->nhandles = n;
  return 0;
}

/* ---- sizes -------------------------------------------------------------- */

/* get_allocation_size: what the native allocator would cudaMalloc (the cap check uses it). */
static uint64_t allocation_size(const exp_state *st, uint64_t size) {
  if (size <= SMALL_SIZE) return SMALL_PAGE;
  if (size < MIN_LARGE_ALLOC) return st->page[LARGE];
  return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

/* ---- finding a block ---------------------------------------------------- */

/* Size for best fit: a block before unmapped space could grow over it. */
static uint64_t esize(const eblock *b) { return b->size + (b->next && !b->next->mapped ? b->next->size : 0); }

static eblock *get_free_block(exp_state *st, int pool, uint64_t stream, uint64_t size) {
  const pt_bset *t = &st->freet[pool];
  pt_bnode *n = pt_bset_lower_bound(t, &(pt_bkey){stream, size, 0});
  if (!n || n->key.stream != stream) return NULL;
  if (BLK(n)->seg->page) {
    pt_bnode *nx = pt_bset_next(t, n);
    while (BLK(n)->seg->page && nx && nx->key.stream == stream && esize(BLK(nx)) < esize(BLK(n))) {
      n = nx;
      nx = pt_bset_next(t, n);
    }
  }
  eblock *b = BLK(n);
  if (pt_mech_oversize_refused(&st->k, size, b->size)) return NULL; /* no further search, as PyTorch */
  free_remove(st, b);
  return b;
}

/* Whether free and unmapped blocks from b on add up to size before an allocated one. */
static int has_room(const eblock *b, uint64_t size) {
  uint64_t bytes = 0;
  for (; b && !b->allocated && bytes < size; b = b->next) bytes += b->size;
  return bytes >= size;
}

/* find_expandable_block: lowest-address room on this stream, else a new segment. */
static int find_expandable(exp_state *st, int pool, uint64_t stream, uint64_t size, eblock **out) {
  const pt_bset *t = &st->unmapped[pool];
  for (pt_bnode *n = pt_bset_lower_bound(t, &(pt_bkey){stream, 0, 0}); n && n->key.stream == stream;
       n = pt_bset_next(t, n)) {
    eblock *c = BLK(n);
    if (c->prev && !c->prev->allocated) c = c->prev; /* the free mapped tail before the hole */
    if (has_room(c, size)) {
      *out = c;
      return 0;
    }
  }
  eseg *sg = calloc(1, sizeof *sg);
  if (!sg) return pt_err_set(st->env.err, PT_ENOMEM, "expandable: out of memory");
  sg->page = st->page[KIND(pool)];
  sg->bytes = st->va_bytes[KIND(pool)];
  sg->stream = stream;
  sg->pool = pool;
  int rc = pt_dev_address_reserve(st->env.dev, sg->bytes, sg->page, &sg->base);
  if (rc < 0) {
    free(sg);
    return rc;
  }
  seg_link(st, sg);
  eblock *c = take_block(st, sg, sg->base, sg->bytes, 0);
  unmapped_insert(st, c);
  *out = c;
  return 0;
}

/* Unmap pages [0, mapped) and release pages [0, made) from va on (handles h): undoing a growth. */
static void unmake(exp_state *st, uint64_t va, uint64_t page, uint64_t *h, uint64_t mapped, uint64_t made) {
  for (uint64_t j = 0; j < mapped; j++) pt_dev_mem_unmap(st->env.dev, va + j * page, page);
  for (uint64_t j = 0; j < made; j++) {
    pt_dev_mem_release(st->env.dev, h[j], page);
    h[j] = 0;
  }
}

/*
 * map_block: back the first n bytes of unmapped block u with pages, one
 * handle each, and make it a free mapped block merged with its neighbours.
 * When a driver call fails, what this call made is unmapped and released.
 */
static int map_block(exp_state *st, eblock *u, uint64_t n) {
  pt_device *dev = st->env.dev;
  eseg *sg = u->seg;
  uint64_t page = sg->page, npages = (n + page - 1) / page, bytes = npages * page;
  uint64_t first = (u->addr - sg->base) / page, i;
  int rc = seg_handles_cover(st, sg, first + npages);
  if (rc < 0) return rc;
  uint64_t *h = sg->handles + first;
  for (i = 0; i < npages && (rc = pt_dev_mem_create(dev, page, &h[i])) == 0; i++) {}
  if (rc < 0) {
    unmake(st, u->addr, page, h, 0, i);
    return rc;
  }
  for (i = 0; i < npages && (rc = pt_dev_mem_map(dev, u->addr + i * page, page, h[i])) == 0; i++) {}
  if (rc == 0) rc = pt_dev_mem_set_access(dev, u->addr, bytes);
  if (rc < 0) {
    unmake(st, u->addr, page, h, i, npages);
    return rc;
  }
  unmapped_remove(st, u);
  if (bytes < u->size) {
    eblock *rest = take_block(st, sg, u->addr + bytes, u->size - bytes, 0);
    link_after(u, rest);
    unmapped_insert(st, rest);
    u->size = bytes;
  }
  u->mapped = 1;
  try_merge(st, u, u->prev);
  try_merge(st, u, u->next);
  free_insert(st, u);
  return 0;
}

/* try_allocate_expandable_block: a free mapped block of at least size bytes. */
static int grow(exp_state *st, int pool, uint64_t stream, uint64_t size, eblock **out) {
  eblock *c = NULL;
  int rc = ensure_spare(st, 4);
  if (rc < 0) return rc;
  rc = find_expandable(st, pool, stream, size, &c);
  if (rc < 0) return rc;
  if (!c->mapped && (rc = map_block(st, c, c->size < size ? c->size : size)) < 0) return rc;
  while (c->size < size) {
    eblock *nx = c->next; /* unmapped, by has_room */
    if (!nx || nx->mapped || nx->allocated) return PT_EOOM; /* cannot happen */
    uint64_t want = size - c->size;
    if ((rc = map_block(st, nx, want < nx->size ? want : nx->size)) < 0) return rc;
    c = nx; /* map_block merged the old c into nx */
  }
  free_remove(st, c);
  *out = c;
  return 0;
}

/* alloc_block: the cap check on the native allocation size, then growth. */
static int alloc_block(exp_state *st, int pool, uint64_t stream, uint64_t size, uint64_t target,
                       eblock **out) {
  if (pt_dev_would_exceed(st->env.dev, allocation_size(st, size))) return PT_EOOM;
  return grow(st, pool, stream, target, out);
}

/* ---- giving memory back ------------------------------------------------- */

/* unmap_block: unmap the whole pages inside free mapped block b. */
static int unmap_block(exp_state *st, eblock *b) {
  eseg *sg = b->seg;
  uint64_t page = sg->page, off = b->addr - sg->base, end = off + b->size;
  uint64_t first = (off + page - 1) / page, last = end / page;
  if (first >= last) return 0;
  int rc = ensure_spare(st, 2);
  if (rc < 0) return rc;
  /* the driver first: the pages given back before a failed call are the ones the blocks lose */
  uint64_t ua = sg->base + first * page, i;
  for (i = 0; i < last - first; i++) {
    uint64_t *h = &sg->handles[first + i];
    if ((rc = pt_dev_mem_unmap(st->env.dev, ua + i * page, page)) < 0) break;
    if ((rc = pt_dev_mem_release(st->env.dev, *h, page)) < 0) {
      pt_dev_mem_map(st->env.dev, ua + i * page, page, *h); /* back as it was, if the driver lets it */
      break;
    }
    *h = 0;
  }
  if (i == 0) return rc;
  st->env.counters->unmap_ranges++;
  free_remove(st, b);
  carve(st, b, ua, i * page);
  b->mapped = 0;
  try_merge(st, b, b->prev);
  try_merge(st, b, b->next);
  unmapped_insert(st, b);
  return rc;
}

/* release_blocks: cudaFree whole plain segments, unmap free expandable pages. */
static int release_blocks(exp_state *st, int pool) {
  size_t n = st->freet[pool].len;
  if (n > st->scratch_cap) {
    eblock **s = realloc(st->scratch, n * sizeof *s);
    if (!s) return pt_err_set(st->env.err, PT_ENOMEM, "expandable: out of memory");
    st->scratch = s;
    st->scratch_cap = n;
  }
  n = 0;
  for (pt_bnode *x = pt_bset_first(&st->freet[pool]); x; x = pt_bset_next(&st->freet[pool], x)) st->scratch[n++] = BLK(x);
  for (size_t i = 0; i < n; i++) { /* release_block */
    eblock *b = st->scratch[i];
    if (b->seg->page || b->prev || b->next) continue;
    int rc = pt_dev_free(st->env.dev, b->addr, b->size);
    if (rc < 0) return rc;
    free_remove(st, b);
    seg_unlink(st, b->seg);
    drop_block(st, b);
    st->scratch[i] = NULL;
  }
  for (size_t i = 0; i < n; i++) {
    eblock *b = st->scratch[i];
    if (!b || !b->seg->page) continue;
    int rc = unmap_block(st, b);
    if (rc < 0) return rc;
    if (!b->prev && !b->next && !b->mapped) { /* release_expandable_segment */
      if ((rc = pt_dev_address_free(st->env.dev, b->seg->base, b->seg->bytes)) < 0) return rc;
      unmapped_remove(st, b);
      seg_unlink(st, b->seg);
      drop_block(st, b);
    }
  }
  return 0;
}

/* release_cached_blocks: the default pool's large pool first, then small, then the private pools released,
   small first (events: none in the model). */
static int release_cached(exp_state *st) {
  int rc = release_blocks(st, LARGE);
  if (rc == 0) rc = release_blocks(st, SMALL);
  for (size_t k = 1; rc == 0 && k < st->nsets / NPOOLS; k++)
    if (st->freeable[k] && (rc = release_blocks(st, (int)k * NPOOLS + SMALL)) == 0)
      rc = release_blocks(st, (int)k * NPOOLS + LARGE);
  return rc;
}

/* ---- the mechanism ------------------------------------------------------ */

static const pt_mech_param exp_params[] = {
    {"device_total_bytes", 2097152, 1125899906842624.0, PT_PARAM_WHOLE, (double)H200_TOTAL,
     "GPU memory (totalGlobalMem): each segment reserves VA for 1.125 times it; default the GPU description's "
     "memory_bytes, or without one 150109880320 (the H200 the bundled traces were captured on)", 0},
    {"large_segment_size_mb", 12, 4096, PT_PARAM_EVEN, 20,
     "large-pool page (handle) size in MiB, even (PyTorch large_segment_size_mb); default 20", 0},
    PT_MECH_ALLOC_CONF_PARAMS,
    {NULL, 0, 0, PT_PARAM_REAL, 0, NULL, 0}};

static int exp_create(const pt_mech_env *env, void **state) {
  double total = pt_mech_param_get(exp_params, "device_total_bytes", env->params);
  double large = pt_mech_param_get(exp_params, "large_segment_size_mb", env->params);
  exp_state *st = calloc(1, sizeof *st);
  if (st) pt_slab_init(&st->blocks, sizeof(eblock), SLAB_BLOCKS);
  if (st && (!(st->freet = calloc(NPOOLS, sizeof *st->freet)) || !(st->unmapped = calloc(NPOOLS, sizeof *st->unmapped)) ||
             !(st->freeable = calloc(1, 1)))) {
    free(st->freet);
    free(st->unmapped);
    free(st);
    st = NULL;
  }
  if (!st) return pt_err_set(env->err, PT_ENOMEM, "expandable: out of memory");
  st->nsets = NPOOLS;
  st->env = *env;
  st->init_phase = 1;
  pt_mech_alloc_conf_read(exp_params, env->params, &st->k);
  st->page[SMALL] = SMALL_PAGE;
  st->page[LARGE] = (uint64_t)large * MIB;
  uint64_t t = (uint64_t)total, va = t + t / 8;
  for (int p = 0; p < NPOOLS; p++) st->va_bytes[p] = (va + st->page[p] - 1) / st->page[p] * st->page[p];
  *state = st;
  return 0;
}

static int exp_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  exp_state *st = state;
  const pt_policy_hooks *h = st->env.hooks;
  uint64_t size;
  if (st->init_phase) end_init(st);
  int rc = 0;
  if (h && h->round) rc = pt_mech_round(&st->env, "expandable", bytes, &size);
  else if (!(size = pt_mech_round_size(&st->k, bytes))) rc = pt_mech_round_slow(&st->env, "expandable", bytes, &size);
  if (rc < 0) return rc;
  int pool = st->cur + (size <= SMALL_SIZE ? SMALL : LARGE);
  if ((rc = ensure_spare(st, 1)) < 0) return rc;
  eblock *b = get_free_block(st, pool, stream, size);
  if (b) {
    st->env.counters->cache_hits++;
  } else {
    uint64_t target = size;
    if (h && h->should_collect) {
      int yes = 0;
      if ((rc = pt_mech_should_collect(&st->env, &yes)) < 0) return rc;
      if (yes) {
        if ((rc = release_cached(st)) < 0) return rc;
        st->env.counters->collections++;
      }
    }
    if (h && h->segment_size) {
      if ((rc = h->segment_size(h->ctx, size, &target, st->env.err)) < 0) return rc;
      if (target < size) target = size; /* a growth maps at least the request */
      if ((rc = pt_mech_check_hook_size(&st->env, "expandable", "segment_size", size, target)) < 0) return rc;
    }
    rc = alloc_block(st, pool, stream, size, target, &b);
    if (rc == PT_EOOM) { /* free every cached page and segment, then once more */
      if ((rc = release_cached(st)) < 0) return rc;
      st->env.counters->alloc_retries++;
      rc = alloc_block(st, pool, stream, size, target, &b);
    }
    if (rc < 0) return rc;
    if ((rc = ensure_spare(st, 1)) < 0) {
      free_insert(st, b);
      return rc;
    }
  }
  if (b->size - size >= MIN_BLOCK) { /* should_split with expandable segments on */
    eblock *rest = take_block(st, b->seg, b->addr + size, b->size - size, 1);
    link_after(b, rest);
    free_insert(st, rest);
    b->size = size;
  }
  b->allocated = 1;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

static int exp_free(void *state, uint64_t handle) {
  exp_state *st = state;
  eblock *b = (eblock *)(uintptr_t)handle;
  if (st->init_phase) end_init(st);
  b->allocated = 0;
  try_merge(st, b, b->prev);
  try_merge(st, b, b->next);
  free_insert(st, b);
  return 0;
}

static int exp_empty_cache(void *state) {
  exp_state *st = state;
  if (st->init_phase) end_init(st);
  return release_cached(st);
}

static int exp_use_pool(void *state, unsigned k) {
  exp_state *st = state;
  size_t need = ((size_t)k + 1) * NPOOLS;
  if (need > st->nsets) { /* a set may move: nodes know their chunk, not their set */
    pt_bset *f = realloc(st->freet, need * sizeof *f);
    if (f) st->freet = f;
    pt_bset *u = f ? realloc(st->unmapped, need * sizeof *u) : NULL;
    if (u) st->unmapped = u;
    uint8_t *fr = u ? realloc(st->freeable, need / NPOOLS) : NULL;
    if (!fr) return pt_err_set(st->env.err, PT_ENOMEM, "expandable: out of memory");
    st->freeable = fr;
    memset(fr + st->nsets / NPOOLS, 0, (need - st->nsets) / NPOOLS);
    memset(st->freet + st->nsets, 0, (need - st->nsets) * sizeof *f);
    memset(st->unmapped + st->nsets, 0, (need - st->nsets) * sizeof *u);
    st->nsets = need;
  }
  st->cur = (int)k * NPOOLS;
  st->freeable[k] = 0;
  return 0;
}

static void exp_release_pool(void *state, unsigned k) {
  exp_state *st = state;
  if (k && k < st->nsets / NPOOLS) st->freeable[k] = 1;
}

static int exp_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  exp_state *st = state;
  pt_err *err = st->env.err;
  if (!st->init_phase) return pt_err_set(err, PT_EUSAGE, "expandable: initial segment after the first request");
  if (!bytes) return pt_err_set(err, PT_EFORMAT, "expandable: initial segment of 0 bytes");
  int rc = ensure_spare(st, 3);
  if (rc < 0) return rc;
  if (!expandable) {
    if ((rc = pt_dev_adopt(st->env.dev, addr, bytes)) < 0) return rc;
    eseg *sg = malloc(sizeof *sg);
    if (!sg) return pt_err_set(err, PT_ENOMEM, "expandable: out of memory"); /* the run stops; the books are the engine's */
    *sg = (eseg){.base = addr, .bytes = bytes, .stream = stream, .pool = st->cur + (bytes == SMALL_PAGE ? SMALL : LARGE)};
    seg_link(st, sg);
    free_insert(st, take_block(st, sg, addr, bytes, 1));
    return 0;
  }
  int pool = st->cur + (bytes % st->page[LARGE] == 0 ? LARGE : SMALL);
  uint64_t page = st->page[KIND(pool)];
  if (bytes % page)
    return pt_err_set(err, PT_EFORMAT, "expandable: initial expandable segment at 0x%llx maps %llu bytes, not whole 2 MiB pages",
                      (unsigned long long)addr, (unsigned long long)bytes);
  eseg *sg = NULL;
  for (eseg *s = st->segs; s; s = s->next)
    if (s->page && s->pool == pool && s->stream == stream && addr >= s->base && addr - s->base < s->bytes) sg = s;
  if (!sg) { /* reserved before the trace began: no call counted */
    if (!(sg = malloc(sizeof *sg))) return pt_err_set(err, PT_ENOMEM, "expandable: out of memory");
    *sg = (eseg){.base = addr, .bytes = st->va_bytes[KIND(pool)], .page = page, .stream = stream, .pool = pool};
    seg_link(st, sg);
    unmapped_insert(st, take_block(st, sg, addr, sg->bytes, 0));
  }
  pt_bnode *n = pt_bset_before(&st->unmapped[pool], &(pt_bkey){stream, 0, addr + 1}); /* last at or below */
  eblock *u = n ? BLK(n) : NULL;
  if (!u || u->seg != sg || (addr - sg->base) % page || addr + bytes > u->addr + u->size)
    return pt_err_set(err, PT_EFORMAT, "expandable: initial expandable segment at 0x%llx (%llu bytes) overlaps another or is misaligned",
                      (unsigned long long)addr, (unsigned long long)bytes);
  uint64_t first = (addr - sg->base) / page;
  if ((rc = seg_handles_cover(st, sg, first + bytes / page)) < 0 ||
      (rc = pt_dev_adopt_mapped(st->env.dev, addr, bytes, page, sg->handles + first)) < 0)
    return rc;
  unmapped_remove(st, u);
  carve(st, u, addr, bytes);
  u->mapped = 1;
  try_merge(st, u, u->prev);
  try_merge(st, u, u->next);
  free_insert(st, u);
  return 0;
}

/*
 * A block live at trace start: carved out of the free part of a segment
 * that holds it.  Its size is the request rounded to 512 B; a real block
 * may have been larger (an unsplit remainder), which no trace records.
 */
static int exp_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  exp_state *st = state;
  (void)stream;
  if (!st->init_phase) return pt_err_set(st->env.err, PT_EUSAGE, "expandable: initial block after the first request");
  uint64_t size = pt_mech_round512(bytes);
  pt_bnode *n = pt_bset_before(&st->addrt, &(pt_bkey){0, 0, addr + 1}); /* last at or below */
  eblock *b = n ? ABLK(n) : NULL;
  if (!b || addr + size > b->addr + b->size)
    return pt_err_set(st->env.err, PT_EFORMAT, "expandable: initial block at 0x%llx (%llu bytes) lies in no free part of a segment",
                      (unsigned long long)addr, (unsigned long long)bytes);
  int rc = ensure_spare(st, 2);
  if (rc < 0) return rc;
  free_remove(st, b);
  carve(st, b, addr, size);
  b->allocated = 1;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

static uint64_t exp_addr_of(void *state, uint64_t handle) {
  (void)state;
  return ((const eblock *)(uintptr_t)handle)->addr;
}

/* The model ends: records are dropped; no driver call is counted. */
static void exp_destroy(void *state) {
  exp_state *st = state;
  if (!st) return;
  while (st->segs) seg_unlink(st, st->segs);
  for (size_t p = 0; p < st->nsets; p++) {
    pt_bset_free(&st->freet[p]);
    pt_bset_free(&st->unmapped[p]);
  }
  free(st->freet);
  free(st->unmapped);
  free(st->freeable);
  pt_bset_free(&st->addrt);
  pt_slab_free(&st->blocks);
  free(st->scratch);
  free(st);
}

const pt_mech_ops pt_mech_expandable = {
    .name = "expandable",
    .params = exp_params,
    .create = exp_create,
    .init_segment = exp_init_segment,
    .init_alloc = exp_init_alloc,
    .alloc = exp_alloc,
    .free = exp_free,
    .use_pool = exp_use_pool,
    .release_pool = exp_release_pool,
    .empty_cache = exp_empty_cache,
    .destroy = exp_destroy,
    .addr_of = exp_addr_of,
};
