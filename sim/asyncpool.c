/*
 * asyncpool.c — the "async_pool" mechanism: cudaMallocAsync / cudaFreeAsync
 * on stream-ordered memory pools, with the pool's release threshold
 * (cudaMemPoolAttrReleaseThreshold).
 *
 * The driver's pool is not documented inside, so this is a model, and these
 * are its simplifications:
 *   - One pool per stream.  (CUDA has one default pool per device and lets a
 *     stream reuse another stream's freed memory only after an event or a
 *     synchronisation; a trace records neither, so reuse stays on the stream
 *     that freed.)
 *   - A pool reserves VA once (1 TiB; another range when that is used up)
 *     and grows by physical chunks created on demand: a request the pool's
 *     free memory cannot hold gets one new chunk of the request rounded up
 *     to 2 MiB (the VMM granularity), or of what the segment_size hook says:
 *     one cuMemCreate, one cuMemMap and one cuMemSetAccess, at the next free
 *     VA of the pool.  Released chunks' VA is not reused.
 *   - Inside a pool, best fit over free ranges ordered by (size, address);
 *     the remainder is split off when >= 512 B; freed ranges merge with free
 *     neighbours inside their chunk.  A request served this way makes no
 *     driver call (a cache hit: 0.7-1.4 us on the H200 against tens of us).
 *     Requests are rounded to 512 B, as for cudaMalloc.
 *   - Synchronisation points are not in a trace.  The model takes one when a
 *     free brings its pool's in-use bytes to 0 (the stream went idle), or,
 *     with trim_every_free=1, after every free.  There, when the pool holds
 *     more than release_threshold bytes, it releases wholly unused chunks,
 *     oldest idle first (cuMemUnmap + cuMemRelease each), until it holds no
 *     more than the threshold; a partly used chunk is never released.  The
 *     should_collect hook, when present, decides instead whether to trim.
 *   - empty_cache trims every pool to 0, as PyTorch's cudaMallocAsync
 *     backend does (cudaDeviceSynchronize, then cudaMemPoolTrimTo(pool, 0)).
 *     PyTorch sets the threshold to UINT64_MAX; release_threshold=2^50 is
 *     that setting here.
 *   - When a chunk cannot be created under the cap, every pool is trimmed
 *     to 0 and the chunk is tried once more.
 *   - Segments alive at trace start become chunks of their stream's pool
 *     (held, no call counted), released like any other chunk.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "u64map.h"

#define MIB (UINT64_C(1) << 20)
#define MIN_BLOCK UINT64_C(512)
#define CHUNK_GRAIN (2 * MIB)             /* VMM granularity */
#define POOL_VA (UINT64_C(1) << 40)       /* VA reserved for a pool at a time */
#define MAX_THRESHOLD 1125899906842624.0  /* 2^50 */

/* ---- pools, chunks, blocks ---------------------------------------------- */

typedef struct apool apool;

/* One physical allocation (one handle) mapped into its pool's VA. */
typedef struct achunk {
  struct achunk *prev, *next;   /* the pool's chunks */
  struct achunk *iprev, *inext; /* the pool's idle chunks, oldest first */
  struct ablock *whole;         /* the one free block, while idle */
  apool *pool;
  uint64_t va, bytes;
} achunk;

/* A range of a chunk; free ones sit in the free set, key (stream, size, addr). */
typedef struct ablock {
  pt_bnode node;
  pt_bnode anode;              /* free blocks by address (0, 0, addr), while the initial state is built */
  struct ablock *prev, *next;  /* neighbours in the chunk */
  achunk *chunk;
  uint64_t addr, size;
  int allocated;
} ablock;

#define BLK(n) ((ablock *)(void *)((char *)(n) - offsetof(ablock, node)))
#define ABLK(n) ((ablock *)(void *)((char *)(n) - offsetof(ablock, anode)))

#define SLAB_BLOCKS 256
typedef struct slab {
  struct slab *next;
  ablock b[SLAB_BLOCKS];
} slab;

struct apool {
  uint64_t stream;
  uint64_t va_next, va_end;    /* where the next chunk is mapped */
  uint64_t held, in_use;       /* chunk bytes; bytes of allocated blocks */
  achunk *chunks;
  achunk *idle_head, *idle_tail;
};

typedef struct async_state {
  pt_mech_env env;
  pt_bset freet;
  pt_bset addrt;               /* initial state only */
  int init_phase;
  apool **pools;
  size_t npools, cap;
  pt_u64map by_stream;         /* stream -> index in pools */
  uint64_t threshold;
  int every_free;
  uint64_t allocated;
  slab *slabs;
  ablock *spare;               /* unused block records, linked through next */
  size_t nspare;
} async_state;

static int oom(async_state *st) { return pt_err_set(st->env.err, PT_ENOMEM, "async_pool: out of memory"); }

static int ensure_spare(async_state *st, size_t n) {
  while (st->nspare < n) {
    slab *s = malloc(sizeof *s);
    if (!s) return oom(st);
    s->next = st->slabs;
    st->slabs = s;
    for (int i = 0; i < SLAB_BLOCKS; i++) {
      s->b[i].next = st->spare;
      st->spare = &s->b[i];
    }
    st->nspare += SLAB_BLOCKS;
  }
  return 0;
}

/* A zeroed block record; ensure_spare must have been called. */
static ablock *take_block(async_state *st, achunk *c, uint64_t addr, uint64_t size) {
  ablock *b = st->spare;
  st->spare = b->next;
  st->nspare--;
  memset(b, 0, sizeof *b);
  b->chunk = c;
  b->addr = addr;
  b->size = size;
  return b;
}

static void drop_block(async_state *st, ablock *b) {
  b->next = st->spare;
  st->spare = b;
  st->nspare++;
}

static void free_insert(async_state *st, ablock *b) {
  b->node.key = (pt_bkey){b->chunk->pool->stream, b->size, b->addr};
  pt_bset_insert(&st->freet, &b->node);
  if (st->init_phase) {
    b->anode.key = (pt_bkey){0, 0, b->addr};
    pt_bset_insert(&st->addrt, &b->anode);
  }
}

static void free_remove(async_state *st, ablock *b) {
  pt_bset_erase(&st->freet, &b->node);
  if (st->init_phase) pt_bset_erase(&st->addrt, &b->anode);
}

/* The initial state is complete: the address index is no longer kept. */
static void end_init(async_state *st) {
  st->init_phase = 0;
  st->addrt = (pt_bset){0};
}

static void idle_push(apool *p, achunk *c, ablock *whole) {
  c->whole = whole;
  c->inext = NULL;
  c->iprev = p->idle_tail;
  if (p->idle_tail)
    p->idle_tail->inext = c;
  else
    p->idle_head = c;
  p->idle_tail = c;
}

static void idle_remove(apool *p, achunk *c) {
  if (c->iprev)
    c->iprev->inext = c->inext;
  else
    p->idle_head = c->inext;
  if (c->inext)
    c->inext->iprev = c->iprev;
  else
    p->idle_tail = c->iprev;
  c->whole = NULL;
  c->iprev = c->inext = NULL;
}

static void chunk_link(apool *p, achunk *c) {
  c->pool = p;
  c->prev = NULL;
  c->next = p->chunks;
  if (p->chunks) p->chunks->prev = c;
  p->chunks = c;
  p->held += c->bytes;
}

static void chunk_unlink(apool *p, achunk *c) {
  if (c->prev)
    c->prev->next = c->next;
  else
    p->chunks = c->next;
  if (c->next) c->next->prev = c->prev;
  p->held -= c->bytes;
}

/* The pool of a stream, made (with its VA reservation) on first use. */
static int get_pool(async_state *st, uint64_t stream, int reserve, apool **out) {
  uint64_t *ix = pt_u64map_get(&st->by_stream, stream);
  if (ix) {
    *out = st->pools[*ix];
    return 0;
  }
  if (st->npools == st->cap) {
    size_t cap = st->cap ? 2 * st->cap : 8;
    apool **v = realloc(st->pools, cap * sizeof *v);
    if (!v) return oom(st);
    st->pools = v;
    st->cap = cap;
  }
  apool *p = calloc(1, sizeof *p);
  if (!p) return oom(st);
  if (pt_u64map_put(&st->by_stream, stream, st->npools) < 0) {
    free(p);
    return oom(st);
  }
  p->stream = stream;
  if (reserve) {
    p->va_next = pt_dev_address_reserve(st->env.dev, POOL_VA, CHUNK_GRAIN);
    p->va_end = p->va_next + POOL_VA;
  }
  st->pools[st->npools++] = p;
  *out = p;
  return 0;
}

/* Release idle chunks of p, oldest first, until it holds no more than keep. */
static void trim(async_state *st, apool *p, uint64_t keep) {
  int any = 0;
  while (p->held > keep && p->idle_head) {
    achunk *c = p->idle_head;
    ablock *b = c->whole;
    idle_remove(p, c);
    free_remove(st, b);
    pt_dev_mem_unmap(st->env.dev, c->va, c->bytes);
    pt_dev_mem_release(st->env.dev, c->bytes);
    chunk_unlink(p, c);
    drop_block(st, b);
    free(c);
    any = 1;
  }
  if (any) st->env.counters->collections++;
}

static void trim_all(async_state *st) {
  for (size_t i = 0; i < st->npools; i++) trim(st, st->pools[i], 0);
}

/* A synchronisation point on pool p. */
static int sync_point(async_state *st, apool *p) {
  const pt_policy_hooks *h = st->env.hooks;
  if (h && h->should_collect) {
    int yes = 0;
    int rc = h->should_collect(h->ctx, st->env.dev->reserved, st->allocated, &yes, st->env.err);
    if (rc < 0) return rc;
    if (!yes) return 0;
  }
  trim(st, p, st->threshold);
  return 0;
}

/* A new chunk of bytes in pool p, returned as one free block (in no set); needs a spare record. */
static int grow(async_state *st, apool *p, uint64_t bytes, ablock **out) {
  pt_device *dev = st->env.dev;
  achunk *c = calloc(1, sizeof *c);
  if (!c) return oom(st);
  int rc = pt_dev_mem_create(dev, bytes);
  if (rc < 0) {
    free(c);
    return rc;
  }
  if (p->va_end - p->va_next < bytes) { /* the pool's VA is used up: reserve more */
    uint64_t va = bytes > POOL_VA ? bytes : POOL_VA;
    p->va_next = pt_dev_address_reserve(dev, va, CHUNK_GRAIN);
    p->va_end = p->va_next + va;
  }
  c->va = p->va_next;
  c->bytes = bytes;
  p->va_next += bytes;
  pt_dev_mem_map(dev, c->va, bytes);
  pt_dev_mem_set_access(dev, c->va, bytes);
  chunk_link(p, c);
  *out = take_block(st, c, c->va, bytes);
  return 0;
}

static int bad_hook_size(async_state *st, const char *hook, uint64_t in, uint64_t out) {
  return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: policy %s(%llu) returned %llu, less than its argument",
                    hook, (unsigned long long)in, (unsigned long long)out);
}

/* ---- the mechanism ------------------------------------------------------ */

static const pt_mech_param async_params[] = {
    {"release_threshold", 0, MAX_THRESHOLD,
     "bytes a pool keeps at a synchronisation point (cudaMemPoolAttrReleaseThreshold); default 0 as CUDA's default pool"},
    {"trim_every_free", 0, 1,
     "1: every free is a synchronisation point; 0 (default): only a free that leaves the stream's pool unused"},
    {NULL, 0, 0, NULL}};

static int async_create(const pt_mech_env *env, void **state) {
  double thr = pt_params_get(env->params, "release_threshold", 0);
  double every = pt_params_get(env->params, "trim_every_free", 0);
  if (!(thr >= 0 && thr <= MAX_THRESHOLD) || thr != (double)(uint64_t)thr)
    return pt_err_set(env->err, PT_EUSAGE, "async_pool: release_threshold must be a whole number of bytes from 0 to 2^50, not %g", thr);
  if (every != 0 && every != 1)
    return pt_err_set(env->err, PT_EUSAGE, "async_pool: trim_every_free must be 0 or 1, not %g", every);
  async_state *st = calloc(1, sizeof *st);
  if (!st) return pt_err_set(env->err, PT_ENOMEM, "async_pool: out of memory");
  st->env = *env;
  st->threshold = (uint64_t)thr;
  st->every_free = every == 1;
  st->init_phase = 1;
  *state = st;
  return 0;
}

static int async_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  async_state *st = state;
  const pt_policy_hooks *h = st->env.hooks;
  uint64_t size;
  apool *p;
  int rc;
  if (st->init_phase) end_init(st);
  if (h && h->round) {
    if ((rc = h->round(h->ctx, bytes, &size, st->env.err)) < 0) return rc;
    if (size < bytes || size == 0) return bad_hook_size(st, "round", bytes, size);
  } else {
    size = bytes < MIN_BLOCK ? MIN_BLOCK : (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
  }
  if ((rc = get_pool(st, stream, 1, &p)) < 0) return rc;
  if (!p->va_end) { /* a pool made for initial segments reserves on first growth */
    p->va_next = pt_dev_address_reserve(st->env.dev, POOL_VA, CHUNK_GRAIN);
    p->va_end = p->va_next + POOL_VA;
  }
  if ((rc = ensure_spare(st, 2)) < 0) return rc; /* a chunk's block, a split remainder */
  ablock *b = NULL;
  pt_bnode *n = pt_bset_lower_bound(&st->freet, &(pt_bkey){stream, size, 0}); /* best fit */
  if (n && n->key.stream == stream) {
    b = BLK(n);
    free_remove(st, b);
    if (b->chunk->whole) idle_remove(p, b->chunk);
    st->env.counters->cache_hits++;
  } else {
    uint64_t want = size;
    if (h && h->segment_size) {
      if ((rc = h->segment_size(h->ctx, size, &want, st->env.err)) < 0) return rc;
      if (want < size) return bad_hook_size(st, "segment_size", size, want);
    }
    if (want > UINT64_MAX - CHUNK_GRAIN)
      return pt_err_set(st->env.err, PT_ELIMIT, "async_pool: chunk of %llu bytes", (unsigned long long)want);
    want = (want + CHUNK_GRAIN - 1) / CHUNK_GRAIN * CHUNK_GRAIN;
    rc = grow(st, p, want, &b);
    if (rc == PT_EOOM) {
      trim_all(st);
      st->env.counters->alloc_retries++;
      rc = grow(st, p, want, &b);
    }
    if (rc < 0) return rc;
  }
  if (b->size - size >= MIN_BLOCK) {
    ablock *rest = take_block(st, b->chunk, b->addr + size, b->size - size);
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    free_insert(st, rest);
  }
  b->allocated = 1;
  p->in_use += b->size;
  st->allocated += b->size;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

/* b absorbs its free neighbour nb (prev or next). */
static void merge(async_state *st, ablock *b, ablock *nb) {
  if (!nb || nb->allocated) return;
  free_remove(st, nb);
  if (nb == b->prev) {
    b->addr = nb->addr;
    b->prev = nb->prev;
    if (b->prev) b->prev->next = b;
  } else {
    b->next = nb->next;
    if (b->next) b->next->prev = b;
  }
  b->size += nb->size;
  drop_block(st, nb);
}

static int async_free(void *state, uint64_t handle) {
  async_state *st = state;
  ablock *b = (ablock *)(uintptr_t)handle;
  achunk *c = b->chunk;
  apool *p = c->pool;
  if (st->init_phase) end_init(st);
  b->allocated = 0;
  p->in_use -= b->size;
  st->allocated -= b->size;
  merge(st, b, b->prev);
  merge(st, b, b->next);
  free_insert(st, b);
  if (!b->prev && !b->next) idle_push(p, c, b);
  if (st->every_free || p->in_use == 0) return sync_point(st, p);
  return 0;
}

static int async_empty_cache(void *state) {
  async_state *st = state;
  if (st->init_phase) end_init(st);
  trim_all(st);
  return 0;
}

static int async_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  async_state *st = state;
  apool *p;
  (void)expandable;
  if (!st->init_phase) return pt_err_set(st->env.err, PT_EUSAGE, "async_pool: initial segment after the first request");
  if (!bytes) return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: initial segment of 0 bytes");
  int rc = get_pool(st, stream, 0, &p);
  if (rc < 0) return rc;
  if ((rc = ensure_spare(st, 1)) < 0) return rc;
  achunk *c = calloc(1, sizeof *c);
  if (!c) return oom(st);
  c->va = addr;
  c->bytes = bytes;
  chunk_link(p, c);
  ablock *b = take_block(st, c, addr, bytes);
  free_insert(st, b);
  idle_push(p, c, b);
  pt_dev_adopt_at(st->env.dev, addr, bytes);
  return 0;
}

/* A block live at trace start, carved out of the free part of a chunk. */
static int async_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  async_state *st = state;
  (void)stream;
  if (!st->init_phase) return pt_err_set(st->env.err, PT_EUSAGE, "async_pool: initial block after the first request");
  uint64_t size = bytes < MIN_BLOCK ? MIN_BLOCK : (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
  pt_bnode *n = pt_bset_before(&st->addrt, &(pt_bkey){0, 0, addr + 1}); /* last at or below */
  ablock *b = n ? ABLK(n) : NULL;
  if (!b || addr + size > b->addr + b->size)
    return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: initial block at 0x%llx (%llu bytes) lies in no free part of a segment",
                      (unsigned long long)addr, (unsigned long long)bytes);
  int rc = ensure_spare(st, 2);
  if (rc < 0) return rc;
  achunk *c = b->chunk;
  free_remove(st, b);
  if (c->whole) idle_remove(c->pool, c);
  if (addr > b->addr) { /* free part before */
    ablock *f = take_block(st, c, b->addr, addr - b->addr);
    f->next = b;
    f->prev = b->prev;
    if (b->prev) b->prev->next = f;
    b->prev = f;
    free_insert(st, f);
  }
  if (addr + size < b->addr + b->size) { /* free part after */
    ablock *g = take_block(st, c, addr + size, b->addr + b->size - (addr + size));
    g->prev = b;
    g->next = b->next;
    if (b->next) b->next->prev = g;
    b->next = g;
    free_insert(st, g);
  }
  b->addr = addr;
  b->size = size;
  b->allocated = 1;
  c->pool->in_use += size;
  st->allocated += size;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

static uint64_t async_addr_of(void *state, uint64_t handle) {
  (void)state;
  return ((const ablock *)(uintptr_t)handle)->addr;
}

static void async_destroy(void *state) {
  async_state *st = state;
  if (!st) return;
  for (size_t i = 0; i < st->npools; i++) {
    apool *p = st->pools[i];
    while (p->chunks) {
      achunk *c = p->chunks;
      p->chunks = c->next;
      free(c);
    }
    free(p);
  }
  while (st->slabs) {
    slab *s = st->slabs;
    st->slabs = s->next;
    free(s);
  }
  free(st->pools);
  pt_u64map_free(&st->by_stream);
  free(st);
}

const pt_mech_ops pt_mech_async_pool = {
    .name = "async_pool",
    .params = async_params,
    .create = async_create,
    .init_segment = async_init_segment,
    .init_alloc = async_init_alloc,
    .alloc = async_alloc,
    .free = async_free,
    .empty_cache = async_empty_cache,
    .destroy = async_destroy,
    .addr_of = async_addr_of,
};
