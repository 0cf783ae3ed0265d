/*
 * caching.c — PyTorch's CUDACachingAllocator (native backend), one device.
 *
 * A model of c10/cuda/CUDACachingAllocator.cpp as of PyTorch 2.11, written
 * from its source (docs/pytorch-caching-allocator.md has the rules this
 * follows, in words):
 *   - requests round to 512 B (or to a power-of-two division with
 *     roundup_power2_divisions); <= 1 MiB goes to the small pool (2 MiB
 *     segments), larger to the large pool (20 MiB segments below 10 MiB,
 *     else rounded up to 2 MiB);
 *   - best fit over free blocks ordered by (stream, size, address), with the
 *     max_split_size and max_non_split_rounding limits on oversize blocks;
 *   - a found block is split (front part returned) when the rest is at least
 *     512 B (small) or more than 1 MiB (large, and only below max_split_size);
 *   - freed blocks merge with free neighbours of the same segment;
 *   - on a miss: garbage collection (only under a cap with a threshold),
 *     cudaMalloc, then free oversize cached blocks and retry, then free every
 *     whole cached segment and retry (counted as an alloc retry), then OOM.
 * The cap is --capacity (set_per_process_memory_fraction): without it there
 * is no garbage collection, as in PyTorch.
 *
 * Private pools (a CUDA graph's, a torch.cuda.MemPool's) are PyTorch's
 * PrivatePool: a small and a large pool of their own, chosen by use_pool as
 * beginAllocateToPool routes a capture's requests.  Their blocks serve only
 * their own pool's requests; empty_cache, the retry's release and the
 * garbage collection free the default pool's segments only, and a private
 * pool's once it is released (release_pool; a trace does not record when, so
 * the engine releases them only at the end of a run on a real device).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "slab.h"
#include "span.h"

#define MIN_BLOCK (UINT64_C(512))
#define SMALL_SIZE (UINT64_C(1) << 20)      /* largest request of the small pool */
#define SMALL_BUFFER (UINT64_C(2) << 20)    /* small pool segment */
#define LARGE_BUFFER (UINT64_C(20) << 20)   /* large pool segment below MIN_LARGE_ALLOC */
#define MIN_LARGE_ALLOC (UINT64_C(10) << 20)
#define ROUND_LARGE (UINT64_C(2) << 20)
#define UNLIMITED PT_MECH_UNLIMITED

typedef struct pool pool;

/*
 * A block is a piece of a segment: allocated, or free and then in its pool's
 * set.  prev/next link the pieces of one segment by address, so a block with
 * neither is a whole segment.
 */
typedef struct block {
  pt_bnode node;           /* key (stream, size, addr) while free and in the set */
  uint64_t addr, size, stream;
  struct block *prev, *next;
  pool *pool;
  uint64_t gc_count_base;  /* pool's get-free-block count when it became free */
  int allocated;
} block;

struct pool {
  pt_bset blocks;
  int is_small;
  uint64_t get_free_blocks_calls;
};

/* A memory pool: the default one, or a private one (PyTorch's PrivatePool). */
typedef struct mempool {
  pool small, large;
  int freeable;                /* released (release_pool): release_cached frees its segments too */
} mempool;

typedef struct caching {
  pt_mech_env env;
  mempool def;                 /* the default pool */
  mempool **priv;              /* private pool k at priv[k - 1], made when first used */
  size_t npriv;
  mempool *cur;                /* where requests go: &def, or a private pool (use_pool) */
  pt_mech_alloc_conf k;        /* max_split_size_mb, max_non_split_rounding_mb, the GC threshold, the roundup table */
  pt_slab blocks;              /* block records: a split or a merge costs no malloc */
} caching;

static block *block_new(caching *c) {
  return pt_slab_reserve(&c->blocks, 1) < 0 ? NULL : pt_slab_take(&c->blocks);
}

static void block_dispose(caching *c, block *b) { pt_slab_drop(&c->blocks, b); }

static const pt_mech_param caching_params[] = {PT_MECH_ALLOC_CONF_PARAMS, {NULL, 0, 0, PT_PARAM_REAL, 0, NULL, 0}};

/* ---- sizes ------------------------------------------------------------------ */

static int round_size(caching *c, uint64_t size, uint64_t *out) {
  const pt_policy_hooks *h = c->env.hooks;
  if (h && h->round) return pt_mech_round(&c->env, "caching", size, out);
  *out = pt_mech_round_size(&c->k, size);
  return 0;
}

static int allocation_size(caching *c, uint64_t size, uint64_t *out) {
  const pt_policy_hooks *h = c->env.hooks;
  if (h && h->segment_size) {
    int rc = h->segment_size(h->ctx, size, out, c->env.err);
    return rc < 0 ? rc : pt_mech_check_hook_size(&c->env, "caching", "segment_size", size, *out);
  }
  if (size <= SMALL_SIZE) *out = SMALL_BUFFER;
  else if (size < MIN_LARGE_ALLOC) *out = LARGE_BUFFER;
  else *out = ROUND_LARGE * ((size + ROUND_LARGE - 1) / ROUND_LARGE);
  return 0;
}

/* ---- blocks and pools ------------------------------------------------------ */

/* Into the pool's free set: 0, or PT_ENOMEM with the set unchanged. */
static int pool_insert(caching *c, pool *p, block *b) {
  b->gc_count_base = p->get_free_blocks_calls;
  b->node.key = (pt_bkey){b->stream, b->size, b->addr};
  return pt_bset_insert(&p->blocks, &b->node) < 0 ? pt_err_set(c->env.err, PT_ENOMEM, "caching: out of memory") : 0;
}

static void pool_erase(pool *p, block *b) { pt_bset_erase(&p->blocks, &b->node); }

static block *of(pt_bnode *n) { return (block *)n; } /* node is the first member */

static int gc_enabled(const caching *c) { return pt_dev_capacity(c->env.dev) && c->k.gc_threshold > 0.0; }

/* Give a free whole segment back to the driver (release_block); when the free fails, b stays cached. */
static int release_block(caching *c, block *b) {
  int rc = pt_dev_free(c->env.dev, b->addr, b->size);
  if (rc < 0) return rc;
  pool_erase(b->pool, b);
  block_dispose(c, b);
  return 0;
}

/* get_free_block: best fit in the pool, within the oversize limits. */
static block *get_free_block(caching *c, pool *p, uint64_t size, uint64_t stream) {
  if (gc_enabled(c)) p->get_free_blocks_calls++;
  pt_bkey key = {stream, size, 0};
  pt_bpos pos;
  pt_bnode *n = pt_bset_lower_bound_pos(&p->blocks, &key, &pos);
  if (!n || n->key.stream != stream) return NULL;
  block *b = of(n);
  if (pt_mech_oversize_refused(&c->k, size, b->size)) return NULL;
  pt_bset_erase_pos(&p->blocks, pos); /* one search for the look and the removal */
  return b;
}

/* garbage_collect_cached_blocks: free old whole segments of the large pool. */
static int garbage_collect(caching *c) {
  uint64_t reserved = pt_dev_reserved(c->env.dev);
  uint64_t threshold = (uint64_t)(c->k.gc_threshold * (double)pt_dev_capacity(c->env.dev));
  if (reserved <= threshold) return 0;
  uint64_t target = reserved - threshold, reclaimed = 0, total_age = 0;
  size_t freeable = 0;
  pool *p = &c->def.large; /* PyTorch collects the default large pool only */
  for (pt_bnode *n = pt_bset_first(&p->blocks); n; n = pt_bset_next(&p->blocks, n))
    if (!of(n)->prev && !of(n)->next) {
      total_age += p->get_free_blocks_calls - of(n)->gc_count_base;
      freeable++;
    }
  if (!freeable) return 0;
  c->env.counters->collections++;
  int freed = 1;
  while (reclaimed < target && freed && freeable > 0) {
    double age_threshold = (double)total_age / (double)freeable;
    freed = 0;
    for (pt_bnode *n = pt_bset_first(&p->blocks); n;) {
      block *b = of(n);
      n = pt_bset_next(&p->blocks, n);
      uint64_t age = p->get_free_blocks_calls - b->gc_count_base;
      if (!b->prev && !b->next && (double)age >= age_threshold) {
        freed = 1;
        reclaimed += b->size;
        total_age -= age;
        freeable--;
        int rc = release_block(c, b);
        if (rc < 0) return rc;
      }
    }
  }
  return 0;
}

/* alloc_block: a new segment from the driver (0, PT_EOOM or PT_ENOMEM). */
static int alloc_block(caching *c, pool *p, uint64_t alloc_size, uint64_t stream, int retry, block **out) {
  if (retry) c->env.counters->alloc_retries++;
  uint64_t addr;
  int rc = pt_dev_malloc(c->env.dev, alloc_size, &addr);
  if (rc < 0) return rc;
  block *b = block_new(c);
  if (!b) { /* give the segment back: the books hold only what a block records */
    pt_dev_free(c->env.dev, addr, alloc_size);
    return PT_ENOMEM;
  }
  b->addr = addr;
  b->size = alloc_size;
  b->stream = stream;
  b->pool = p;
  *out = b;
  return 0;
}

/* release_available_cached_blocks: free oversize cached blocks to make room; 1 when it made enough,
   0 when not, or a driver's error. */
static int release_available(caching *c, pool *p, uint64_t size, uint64_t stream) {
  if (c->k.max_split == UNLIMITED) return 0;
  pt_bkey key = {stream, size < c->k.max_split ? c->k.max_split : size, 0};
  pt_bnode *n = pt_bset_lower_bound(&p->blocks, &key);
  if (n && of(n)->stream == stream) {
    if (of(n)->prev || of(n)->next) return 0; /* see below */
    int rc = release_block(c, of(n));
    return rc < 0 ? rc : 1;
  }
  /* no single block is large enough: free oversize ones, largest first */
  n = pt_bset_before(&p->blocks, &key);
  uint64_t released = 0;
  while (n && released < key.size && of(n)->size >= c->k.max_split && of(n)->stream == stream) {
    block *b = of(n);
    n = pt_bset_before(&p->blocks, &b->node.key);
    if (b->prev || b->next) continue; /* part of a segment: PyTorch never meets one here */
    released += b->size;
    int rc = release_block(c, b);
    if (rc < 0) return rc;
  }
  return released >= key.size;
}

/* One pool's whole free segments back to the driver (release_blocks). */
static int release_blocks(caching *c, pool *p) {
  for (pt_bnode *n = pt_bset_first(&p->blocks); n;) {
    block *b = of(n);
    n = pt_bset_next(&p->blocks, n);
    int rc = !b->prev && !b->next ? release_block(c, b) : 0;
    if (rc < 0) return rc;
  }
  return 0;
}

/* release_cached_blocks: every whole cached segment of the default pool, large first, then those of the
   private pools released (small first, as PyTorch). */
static int release_cached(caching *c) {
  int rc = release_blocks(c, &c->def.large);
  if (rc == 0) rc = release_blocks(c, &c->def.small);
  for (size_t k = 0; rc == 0 && k < c->npriv; k++)
    if (c->priv[k] && c->priv[k]->freeable && (rc = release_blocks(c, &c->priv[k]->small)) == 0)
      rc = release_blocks(c, &c->priv[k]->large);
  return rc;
}

static int should_split(const caching *c, const block *b, uint64_t size) {
  uint64_t remaining = b->size - size;
  if (b->pool->is_small) return remaining >= MIN_BLOCK;
  return size < c->k.max_split && remaining > SMALL_SIZE;
}

/* Cut b to size bytes at its front; the rest becomes a free block in the pool. */
static int split_front(caching *c, block *b, uint64_t size) {
  block *rest = block_new(c);
  if (!rest) return PT_ENOMEM;
  rest->addr = b->addr + size;
  rest->size = b->size - size;
  rest->stream = b->stream;
  rest->pool = b->pool;
  int rc = pool_insert(c, rest->pool, rest); /* first, so that a failure leaves b as it was */
  if (rc < 0) {
    block_dispose(c, rest);
    return rc;
  }
  PT_SPAN_LINK_AFTER(b, rest);
  b->size = size;
  return 0;
}

static int caching_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  caching *c = state;
  uint64_t size, alloc_size;
  int rc;
  if ((rc = round_size(c, bytes, &size)) < 0) return rc;
  pool *p = size <= SMALL_SIZE ? &c->cur->small : &c->cur->large;
  block *b = get_free_block(c, p, size, stream);
  int hit = b != NULL;
  if (hit) {
    c->env.counters->cache_hits++;
  } else {
    if ((rc = allocation_size(c, size, &alloc_size)) < 0) return rc;
    const pt_policy_hooks *h = c->env.hooks;
    int collect = gc_enabled(c);
    if (h && h->should_collect && (rc = pt_mech_should_collect(&c->env, &collect)) < 0) return rc;
    if (collect && (rc = garbage_collect(c)) < 0) return rc;
    rc = alloc_block(c, p, alloc_size, stream, 0, &b);
    if (rc == PT_EOOM) {
      int released = release_available(c, p, size, stream);
      if (released < 0) return released;
      if (released) rc = alloc_block(c, p, alloc_size, stream, 0, &b);
    }
    if (rc == PT_EOOM) {
      if ((rc = release_cached(c)) < 0) return rc;
      rc = alloc_block(c, p, alloc_size, stream, 1, &b);
    }
    if (rc < 0) return rc;
  }
  if (should_split(c, b, size)) {
    if ((rc = split_front(c, b, size)) < 0) return rc;
    c->env.counters->hit_splits += hit;
  }
  b->allocated = 1;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

/* Merge src into dst when src is a free neighbour (try_merge_blocks). */
static void try_merge(caching *c, block *dst, block *src) {
  if (!src || src->allocated) return;
  c->env.counters->free_merges++;
  PT_SPAN_ABSORB(dst, src);
  pool_erase(src->pool, src);
  block_dispose(c, src);
}

static int caching_free(void *state, uint64_t handle) {
  caching *c = state;
  block *b = (block *)(uintptr_t)handle;
  b->allocated = 0;
  try_merge(c, b, b->prev);
  try_merge(c, b, b->next);
  return pool_insert(c, b->pool, b);
}

static int caching_empty_cache(void *state) {
  return release_cached(state);
}

static int caching_use_pool(void *state, unsigned k) {
  caching *c = state;
  if (!k) {
    c->cur = &c->def;
    return 0;
  }
  if (k > c->npriv) {
    mempool **np = realloc(c->priv, k * sizeof *np);
    if (!np) return pt_err_set(c->env.err, PT_ENOMEM, "caching: out of memory");
    c->priv = np;
    memset(np + c->npriv, 0, (k - c->npriv) * sizeof *np);
    c->npriv = k;
  }
  if (!c->priv[k - 1]) {
    if (!(c->priv[k - 1] = calloc(1, sizeof **c->priv))) return pt_err_set(c->env.err, PT_ENOMEM, "caching: out of memory");
    c->priv[k - 1]->small.is_small = 1;
  }
  c->cur = c->priv[k - 1];
  c->cur->freeable = 0;
  return 0;
}

static void caching_release_pool(void *state, unsigned k) {
  caching *c = state;
  if (k && k <= c->npriv && c->priv[k - 1]) c->priv[k - 1]->freeable = 1;
}

/* ---- initial state ------------------------------------------------------------ */

static int caching_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  caching *c = state;
  if (expandable)
    return pt_err_set(c->env.err, PT_EFORMAT,
                      "the trace starts with an expandable segment; the caching mechanism has none "
                      "(use the expandable mechanism)");
  block *b = block_new(c);
  if (!b) return PT_ENOMEM;
  b->addr = addr;
  b->size = bytes;
  b->stream = stream;
  b->pool = bytes == SMALL_BUFFER ? &c->cur->small : &c->cur->large; /* only small segments are 2 MiB */
  int rc = pool_insert(c, b->pool, b);
  if (rc < 0) {
    block_dispose(c, b);
    return rc;
  }
  if ((rc = pt_dev_adopt(c->env.dev, addr, bytes)) < 0) {
    pool_erase(b->pool, b);
    block_dispose(c, b);
  }
  return rc;
}

/*
 * A block allocated before the trace began: carve it out of the free block
 * that covers addr.  Its size is the rounded request, or the whole rest of
 * the free block where the allocator would not have split it.
 */
static int caching_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  caching *c = state;
  pool *pools[2] = {&c->cur->small, &c->cur->large};
  block *b = NULL;
  for (int i = 0; i < 2 && !b; i++)
    for (pt_bnode *n = pt_bset_first(&pools[i]->blocks); n; n = pt_bset_next(&pools[i]->blocks, n))
      if (of(n)->addr <= addr && addr - of(n)->addr < of(n)->size) {
        b = of(n);
        break;
      }
  if (!b)
    return pt_err_set(c->env.err, PT_EFORMAT, "initial block at 0x%llx lies in no free part of an initial segment",
                      (unsigned long long)addr);
  uint64_t size;
  int rc = round_size(c, bytes, &size);
  if (rc < 0) return rc;
  pool *p = b->pool;
  pool_erase(p, b);
  if (addr > b->addr) { /* the free part before it stays free */
    uint64_t before = addr - b->addr;
    if ((rc = split_front(c, b, before)) < 0 || (rc = pool_insert(c, p, b)) < 0) return rc;
    b = b->next;
    pool_erase(p, b);
  }
  if (size > b->size)
    return pt_err_set(c->env.err, PT_EFORMAT, "initial block at 0x%llx (%llu bytes) overruns its segment",
                      (unsigned long long)addr, (unsigned long long)bytes);
  if (should_split(c, b, size) && (rc = split_front(c, b, size)) < 0) return rc;
  b->allocated = 1;
  b->stream = stream;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

/* ---- life cycle ------------------------------------------------------------------ */

static int caching_create(const pt_mech_env *env, void **state) {
  caching *c = calloc(1, sizeof *c);
  if (!c) return PT_ENOMEM;
  c->env = *env;
  pt_slab_init(&c->blocks, sizeof(block), 256);
  c->def.small.is_small = 1;
  c->cur = &c->def;
  pt_mech_alloc_conf_read(caching_params, env->params, &c->k);
  *state = c;
  return 0;
}


static void caching_destroy(void *state) {
  caching *c = state;
  if (!c) return;
  pt_bset_free(&c->def.small.blocks);
  pt_bset_free(&c->def.large.blocks);
  for (size_t i = 0; i < c->npriv; i++)
    if (c->priv[i]) {
      pt_bset_free(&c->priv[i]->small.blocks);
      pt_bset_free(&c->priv[i]->large.blocks);
      free(c->priv[i]);
    }
  free(c->priv);
  pt_slab_free(&c->blocks); /* every block record, free or allocated */
  free(c);
}

static uint64_t caching_addr_of(void *state, uint64_t handle) {
  (void)state;
  return ((const block *)(uintptr_t)handle)->addr;
}

const pt_mech_ops pt_mech_caching = {
    .name = "caching",
    .params = caching_params,
    .create = caching_create,
    .init_segment = caching_init_segment,
    .init_alloc = caching_init_alloc,
    .alloc = caching_alloc,
    .free = caching_free,
    .use_pool = caching_use_pool,
    .release_pool = caching_release_pool,
    .empty_cache = caching_empty_cache,
    .destroy = caching_destroy,
    .addr_of = caching_addr_of,
};
