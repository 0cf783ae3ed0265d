/*
 * asyncpool.c — the "async_pool" mechanism: cudaMallocAsync / cudaFreeAsync
 * on the device's default stream-ordered memory pool, with the pool's
 * release threshold (cudaMemPoolAttrReleaseThreshold).
 *
 * What NVIDIA documents (CUDA Runtime API, "Stream Ordered Memory
 * Allocator"; CUDA Programming Guide 4.3; the blog "Using the NVIDIA CUDA
 * Stream-Ordered Memory Allocator, Part 1", 2021):
 *   - one default pool per device, used by cudaMallocAsync on every stream;
 *     memory freed on one stream is reused on another after an ordering
 *     dependency or, with cudaMemPoolReuseAllowOpportunistic (on by default),
 *     once the free has completed;
 *   - cudaMemPoolAttrReleaseThreshold: "amount of reserved memory in bytes to
 *     hold onto before trying to release memory back to the OS"; the pool
 *     tries to release when it holds more, at the next stream, event or
 *     context synchronisation (default 0);  cudaMemPoolTrimTo releases memory
 *     that backs no outstanding allocation;
 *   - cudaMemPoolAttrReservedMemCurrent / ...High: the backing memory the pool
 *     holds (PyTorch's reserved_bytes with backend:cudaMallocAsync);
 *   - "If a memory allocation request ... can't be serviced due to
 *     fragmentation of the ... pool, the CUDA driver defragments the pool by
 *     remapping unused memory in the pool to a contiguous portion of the
 *     GPU's virtual address space" (the blog).
 * Nothing is documented about the physical granularity, the VA layout or
 * the fit policy.  Those rules below were measured on the H200 (driver
 * 580.159.04, CUDA 13.0) with a probe that calls cudaMallocAsync directly
 * (release threshold UINT64_MAX, one stream, synchronised after every call)
 * and reads cudaMemPoolAttrReservedMemCurrent and the returned addresses:
 *   - in a fresh pool a request of 512 B, 1 MiB, 2 MiB + 1 B, 20 or 32 MiB
 *     leaves 32 MiB reserved; 32 MiB + 1 B, 33 or 48 MiB: 64 MiB; 100 MiB:
 *     128; 200 MiB: 224; 1 GiB + 1 B: 1056 MiB.  So backing comes in 32 MiB
 *     chunks (chunk_mb); and PyTorch's three reserved peaks are multiples of
 *     32 MiB;
 *   - the pool is one contiguous VA range grown at its end; a block may span
 *     adjacent chunks (forty 1.5 MiB requests get consecutive addresses
 *     across the 32 MiB boundary);
 *   - replayed through the probe, the request streams of varlen_infer,
 *     llm_decode and transformer_train (27845 allocations) got, from the
 *     driver, exactly the addresses and reserved bytes this model gives.
 *
 * The model:
 *   - One pool for all streams: frees seen complete are reusable by any
 *     stream; a pending one by its own stream only (below).
 *   - One VA reservation for the pool (1 TiB); the heap is [base, end), tiled
 *     by blocks, allocated or free, free neighbours merged.  Requests are
 *     rounded up to 512 B.
 *   - Fit: the smallest free block that holds the request, among equal sizes
 *     the one that became free (or was last split) longest ago; the block is
 *     split at its front.  The free block at the heap's end (the "top") is
 *     used only when no other block fits: the request goes at the top's start
 *     (or at the end), and the heap grows to the next chunk boundary.
 *   - Backing: the heap is cut into chunk_mb chunks aligned to its base; each
 *     chunk a block touches must be backed by a physical chunk.  A missing one
 *     is first filled by moving an idle chunk (backed, touched by no
 *     allocated block; oldest idle first): cuMemUnmap at its old place,
 *     cuMemMap + cuMemSetAccess at the new one, no new memory — the blog's
 *     defragmentation, seen on the H200: four 32 MiB blocks, the first and
 *     third freed, then a 64 MiB request: reserved stays 128 MiB.  Otherwise
 *     a new chunk: cuMemCreate + cuMemMap + cuMemSetAccess.  Only whole idle
 *     chunks move (H200: 35 MiB lacking, one idle 32 MiB chunk and 8 MiB free
 *     in a busy one: one chunk moved, one created); which of several idle
 *     chunks goes first was not measured.  A chunk moved away leaves its VA
 *     in the heap, free and unbacked; a block placed there later needs
 *     backing again.  A request that needed neither is a cache
 *     hit (0.7-1.4 us on the H200 against tens of us).
 *   - Synchronisation points are not in a trace.  The model takes one when a
 *     free leaves no allocated byte in the pool, or, with trim_every_free=1,
 *     after every free.  There, when the pool holds more than
 *     release_threshold bytes, it releases idle chunks, oldest idle first
 *     (cuMemUnmap + cuMemRelease each), until it holds no more than the
 *     threshold.  The should_collect hook, when present, decides instead
 *     whether to trim.  empty_cache trims to 0, as PyTorch's cudaMallocAsync
 *     backend does (cudaDeviceSynchronize, cudaMemPoolTrimTo(pool, 0)).
 *     PyTorch sets the threshold to UINT64_MAX; release_threshold=2^50 is that
 *     setting here.
 *   - The cap: when the new chunks a request needs would pass it, the pool is
 *     trimmed to 0 (PyTorch syncs and calls cudaMemPoolTrimTo(pool, 0)) and
 *     the request is tried once more; then it fails, the pool as the trim
 *     left it.
 *   - Segments alive at trace start stay where they are (held, no call
 *     counted): their free parts serve requests like any non-top free block;
 *     they are never moved, and are released (cuMemUnmap + cuMemRelease) when
 *     idle at a trim.
 *   - Policy hooks: round replaces the 512 B rounding; segment_size, when
 *     present, gives the bytes the heap grows by for a request (at least what
 *     the request lacks, rounded up to 2 MiB), and chunks are then 2 MiB, the
 *     VMM granularity, so that any growth can be honoured.
 *
 * When the driver sees a free complete (lazy_check 1, and by default on a
 * trace that says where the program synchronised; measured on the H200,
 * traces/capture/async_probe/README.md): not when the GPU passes
 * it, but when it next looks, and it looks only when a request finds no free
 * block that serves it without new backing, and at a synchronisation.  Until
 * then a free is pending: it serves later requests of its own stream first
 * (best fit among that stream's pending frees, before any free block seen
 * complete), merges with pending neighbours of its stream only, and holds its
 * chunks (none idle, moved or released).  When a request finds nothing, the
 * driver sees complete every pending free the GPU has passed, merges each
 * with its free neighbours, and tries again; then it grows the pool.  So a
 * free made microseconds before the request that needs its space is missed
 * only if the GPU is still behind it, but a free seen complete after the
 * stream's own requests were served from fresher pending frees can stay
 * where it is for the rest of the run: transformer_train's request stream,
 * replayed from C with no kernels and no synchronisations, peaks at 1 024
 * MiB (the model without the rule: 992), as PyTorch's runs do; with a
 * synchronisation after every call, 992, as the model with lazy_check 0.
 * This model reproduces, address for address and reserved byte for reserved
 * byte, the probe's replays of five workloads' requests without kernels,
 * with a 20 us kernel after every call (given the GPU's times, measured
 * without a CUDA call), and PyTorch's own backend:cudaMallocAsync runs of
 * cnn_train, transformer_train, varlen_infer, rp2_sizes, weights_load and
 * randn_loop (their synchronisations and free times logged by shim.c: `trace
 * import --async-run`).  What a trace says about time: `+gpu K` (K requests
 * came before the GPU passed the free: free_pending, followed while gpu_lag
 * is 1), free_lag for frees without (requests a free stays behind the GPU;
 * default 0: passed at once), `+sync` (the program synchronised: every free
 * is seen complete, a synchronisation point).  The lag differs between runs
 * of one workload (other work on the GPU, clocks), so the real peak is a
 * spread: swept over free_lag the model gives the spread it expects
 * (docs/model.md).  A free of a block other streams used (the trace's
 * deferred frees: PyTorch frees those on a stream of its own, which no
 * request is made on) is the pool's until the driver sees it complete
 * (free_deferred; with the run's time for it, +gpu, until the GPU passed it).
 * The driver also follows the order between streams
 * (cudaMemPoolReuseFollowEventDependencies, which PyTorch turns on): a pending
 * free on one stream serves another stream's requests, as a free seen complete
 * does (best fit among them, after the stream's own pending frees), once that
 * stream waited for an event recorded after the free, directly or through
 * other streams (event_record, stream_wait: the trace's +event and +wait;
 * each stream keeps, per stream, the last of the pool's frees it is ordered
 * after; ORDER_STREAMS streams are followed).  With lazy_check 0 a
 * free is seen complete at the first
 * request after the GPU passed it, reused by any stream while pending, as
 * the model was before the rule was found: the rule with a synchronisation
 * before every request.  A trace that does not say where the program
 * synchronised (a plain snapshot; +gpu alone) gets that by default: between
 * never (lazy_check 1) and always, neither is right for every workload
 * (docs/model.md).
 *
 * A trace that begins with segments alive was captured under another
 * allocator (a snapshot cannot be taken under backend:cudaMallocAsync), so
 * by default (adopt_initial 0) those segments are not the pool's: their live
 * blocks are allocated from the pool, in trace order, before the first
 * request, as the backend would have served them from the process's start
 * (randn_loop: 3 blocks, 15.7 MB, in one 32 MiB chunk; the real peak is
 * 32 MiB, the recorded segments 22 MiB).  adopt_initial 1 keeps the
 * recorded segments as they are, idle ones releasable like chunks.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "slab.h"
#include "span.h"

#define MIB (UINT64_C(1) << 20)
#define MIN_BLOCK UINT64_C(512)
#define GRAIN (2 * MIB)                   /* VMM granularity */
#define POOL_VA (UINT64_C(1) << 40)       /* the pool's VA reservation */
#define MAX_THRESHOLD 1125899906842624.0  /* 2^50 */
#define NO_SLOT UINT64_MAX
#define ORDER_STREAMS 8                   /* streams whose order is followed: a later one's waits order nothing, and an
                                             event it records orders nothing after */
#define ORDER_SCAN 256                    /* pending frees made after a wait that a search passes over, at most */
#define MAX_EVENTS (UINT64_C(1) << 24)    /* event numbers below this */

/* ---- chunks, blocks ------------------------------------------------------- */

/* A physical allocation: one chunk of the heap, or a segment alive at trace start. */
typedef struct achunk {
  struct achunk *iprev, *inext; /* idle list, oldest first */
  struct achunk *sprev, *snext; /* initial segments */
  struct ablock *whole;         /* initial segment: its one free block, while idle */
  uint64_t va, bytes;
  uint64_t handle;              /* its physical memory */
  uint64_t slot;                /* heap chunk: index in the heap; NO_SLOT: initial segment */
  uint64_t live;                /* initial segment: allocated blocks in it */
  int idle;
} achunk;

/* A range of the heap or of an initial segment; free ones (but the top) sit in the free set. */
typedef struct ablock {
  pt_bnode node;               /* free set: key (0, size, stamp) */
  pt_bnode anode;              /* free blocks by address (0, 0, addr), while the initial state is built */
  struct ablock *prev, *next;  /* neighbours: in the heap, or in the initial segment */
  achunk *seg;                 /* the initial segment; NULL in the heap */
  uint64_t addr, size;
  uint64_t ticket, due;        /* pending (free_lag): its entry in the pending heap (0: seen complete), and
                                  the request count at which it is */
  int allocated;
  uint32_t order;              /* pending with lazy_check: the free's place among the pool's frees (1, 2, ...): another
                                  stream reuses it while pending once that stream waited for an event recorded
                                  after it */
} ablock;

#define BLK(n) ((ablock *)(void *)((char *)(n) - offsetof(ablock, node)))
/* The stream a block was allocated on, kept in the stream field of its set key (which the free set leaves 0):
   while it is in no set (allocated, or just taken out), and in the pending set's key with PEND_BIT, which says
   that that is the set it is in.  Kept there, not in fields of its own, so a block stays two cache lines and the
   free set's hot path touches one.  Every reader refuses a stream past 2^63 (traces/FORMAT.md), so the bit is free. */
#define PEND_BIT (UINT64_C(1) << 63)
#define STREAM(b) ((b)->node.key.stream & ~PEND_BIT)
#define SET_STREAM(b, s) ((b)->node.key.stream = (s))
#define IN_PENDT(b) (((b)->node.key.stream & PEND_BIT) != 0)
#define ABLK(n) ((ablock *)(void *)((char *)(n) - offsetof(ablock, anode)))

#define SLAB_BLOCKS 256
/* One chunk-sized slot of the heap: its chunk (NULL: unbacked) and the allocated blocks touching it. */
typedef struct aslot {
  achunk *c;
  uint64_t live;
} aslot;

/* A min-heap of blocks by the request count at which they are due; stable: among equal counts, by ticket (the
   order they came in). */
typedef struct aheap {
  struct apending { ablock *b; uint64_t due, ticket; } *v;
  size_t n, cap;
  int stable;
} aheap;

typedef struct async_state {
  pt_mech_env env;
  pt_bset freet;
  pt_bset pendt;               /* lazy_check: frees not seen complete, key (stream, size, stamp) */
  pt_bset addrt;               /* initial state only */
  int init_phase;
  uint64_t unit;               /* bytes of a chunk */
  uint64_t threshold;
  int every_free;
  int adopt;                   /* adopt_initial: keep the segments alive at trace start as they are */
  int gpu_lag;                 /* gpu_lag: the trace's measured lags (free_pending) are followed */
  int lazy;                    /* lazy_check: frees are looked at only when a request finds no free block that
                                  serves it, and at a synchronisation */
  /* the heap: [base, end) of the VA reserved at [base, base + POOL_VA) */
  uint64_t base, end;
  aslot *slots;
  size_t nslots, slots_cap;
  ablock *last;                /* the heap's last block; free: the top */
  /* idle chunks (heap and initial), oldest first */
  achunk *idle_head, *idle_tail;
  uint64_t idle_heap;          /* idle heap chunks */
  achunk *segs;                /* initial segments */
  uint64_t held, allocated, stamp;
  pt_slab blocks;             /* block records (slab.h) */
  /* free_lag: frees not yet seen complete (pend), and frees made on PyTorch's unifying free stream (defer:
     free_deferred; still allocated to the pool until due, then seen complete), each a min-heap by the request
     count at which they are */
  uint64_t lag, nreq, tickets;
  aheap pend, defer;
  uint64_t deferrals;
  /* stream order (event_record, stream_wait; with lazy_check): after[t][s], the last of the pool's frees on
     stream s that stream t waited for (0: none), frees counting the pool's frees so far; events[e], stream s's
     row at event e's latest record (its own entry: the frees so far) */
  uint32_t frees;
  int nstreams, ordered;       /* ordered: a stream waited for another's frees */
  uint64_t sid[ORDER_STREAMS];
  uint32_t after[ORDER_STREAMS][ORDER_STREAMS];
  uint32_t (*events)[ORDER_STREAMS];
  size_t nevents;
} async_state;

/* Where a request goes (computed before anything changes). */
typedef struct aplace {
  ablock *b;                   /* a free block that fits, or NULL: the top / the end */
  uint64_t addr, size;         /* the block as it will be */
  uint64_t new_end;            /* the heap's end after the request */
  uint64_t first, lastslot;    /* slots to back (heap only; first > lastslot: none) */
} aplace;

static int oom(async_state *st) { return pt_err_set(st->env.err, PT_ENOMEM, "async_pool: out of memory"); }

static int ensure_spare(async_state *st, size_t n) {
  return pt_slab_reserve(&st->blocks, n) < 0 ? oom(st) : 0;
}

/* A zeroed block record; ensure_spare must have been called. */
static ablock *take_block(async_state *st, achunk *seg, uint64_t addr, uint64_t size) {
  ablock *b = pt_slab_take(&st->blocks);
  b->seg = seg;
  b->addr = addr;
  b->size = size;
  return b;
}

static void drop_block(async_state *st, ablock *b) {
  b->ticket = 0; /* a stale heap entry must not match a record taken again */
  pt_slab_drop(&st->blocks, b);
}

static int is_top(const async_state *st, const ablock *b) { return b == st->last && !b->allocated; }

/* Into the free set, behind every free block of its size (FIFO among equals); with lazy_check a pending
   block into the pending set, under its stream. */
__attribute__((always_inline)) static inline void free_insert(async_state *st, ablock *b) {
  int pend = __builtin_expect(st->lazy, 0) && b->ticket;
  b->node.key = (pt_bkey){pend ? STREAM(b) | PEND_BIT : 0, b->size, ++st->stamp};
  pt_mech_set_insert(&st->env, pend ? &st->pendt : &st->freet, &b->node);
  if (st->init_phase) {
    b->anode.key = (pt_bkey){0, 0, b->addr};
    pt_mech_set_insert(&st->env, &st->addrt, &b->anode);
  }
}

__attribute__((always_inline)) static inline void free_remove(async_state *st, ablock *b) {
  pt_bset_erase(IN_PENDT(b) ? &st->pendt : &st->freet, &b->node);
  if (st->init_phase) pt_bset_erase(&st->addrt, &b->anode);
}

/* The initial state is complete: the address index is no longer kept. */
static void end_init(async_state *st) {
  st->init_phase = 0;
  pt_bset_free(&st->addrt);
}

static void idle_push(async_state *st, achunk *c) {
  c->idle = 1;
  c->inext = NULL;
  c->iprev = st->idle_tail;
  if (st->idle_tail)
    st->idle_tail->inext = c;
  else
    st->idle_head = c;
  st->idle_tail = c;
  if (c->slot != NO_SLOT) st->idle_heap++;
}

static void idle_remove(async_state *st, achunk *c) {
  if (c->iprev)
    c->iprev->inext = c->inext;
  else
    st->idle_head = c->inext;
  if (c->inext)
    c->inext->iprev = c->iprev;
  else
    st->idle_tail = c->iprev;
  c->iprev = c->inext = NULL;
  c->idle = 0;
  if (c->slot != NO_SLOT) st->idle_heap--;
}

static uint64_t slot_of(const async_state *st, uint64_t addr) { return (addr - st->base) / st->unit; }

/* Slots up to the heap's end (new ones unbacked and untouched). */
static int grow_slots(async_state *st, uint64_t end) {
  size_t n = (size_t)((end - st->base) / st->unit);
  if (n <= st->nslots) return 0;
  if (n > st->slots_cap) {
    size_t cap = st->slots_cap ? st->slots_cap : 64;
    while (cap < n) cap *= 2;
    aslot *v = realloc(st->slots, cap * sizeof *v);
    if (!v) return oom(st);
    st->slots = v;
    st->slots_cap = cap;
  }
  memset(st->slots + st->nslots, 0, (n - st->nslots) * sizeof *st->slots);
  st->nslots = n;
  return 0;
}

/* An allocated block b comes (+1) or goes (-1): the chunks it touches become busy or idle. */
static void touch(async_state *st, ablock *b, int delta) {
  if (b->seg) {
    achunk *c = b->seg;
    if (delta > 0) {
      if (c->live++ == 0 && c->idle) idle_remove(st, c);
      c->whole = NULL;
    } else if (--c->live == 0) {
      idle_push(st, c);
    }
    return;
  }
  for (uint64_t s = slot_of(st, b->addr), e = slot_of(st, b->addr + b->size - 1); s <= e; s++) {
    aslot *sl = &st->slots[s];
    if (delta > 0) {
      if (sl->live++ == 0 && sl->c && sl->c->idle) idle_remove(st, sl->c);
    } else if (--sl->live == 0 && sl->c) {
      idle_push(st, sl->c);
    }
  }
}

/* Release idle chunks, oldest first, until the pool holds no more than keep; a driver's error stops it. */
static void pend_complete(async_state *st, uint64_t upto);
static void defer_complete(async_state *st, uint64_t upto);

/* A synchronisation first: every pending free is seen complete. */
static int trim(async_state *st, uint64_t keep) {
  int any = 0, rc = 0;
  if (st->defer.n) defer_complete(st, UINT64_MAX);
  if (st->pend.n) pend_complete(st, UINT64_MAX);
  while (st->held > keep && st->idle_head) {
    achunk *c = st->idle_head;
    if ((rc = pt_dev_mem_unmap(st->env.dev, c->va, c->bytes)) < 0) break;
    if ((rc = pt_dev_mem_release(st->env.dev, c->handle, c->bytes)) < 0) {
      pt_dev_mem_map(st->env.dev, c->va, c->bytes, c->handle); /* back as it was, if the driver lets it */
      break;
    }
    idle_remove(st, c);
    st->held -= c->bytes;
    if (c->slot != NO_SLOT) {
      st->slots[c->slot].c = NULL; /* its VA stays in the heap, unbacked */
    } else {
      free_remove(st, c->whole);
      drop_block(st, c->whole);
      if (c->sprev)
        c->sprev->snext = c->snext;
      else
        st->segs = c->snext;
      if (c->snext) c->snext->sprev = c->sprev;
    }
    free(c);
    any = 1;
  }
  if (any) st->env.counters->collections++;
  return rc;
}

/* A synchronisation point. */
static int sync_point(async_state *st) {
  const pt_policy_hooks *h = st->env.hooks;
  if (st->defer.n) defer_complete(st, UINT64_MAX);
  if (st->pend.n) pend_complete(st, UINT64_MAX);
  if (h && h->should_collect) {
    int yes = 0;
    int rc = pt_mech_should_collect(&st->env, &yes);
    if (rc < 0) return rc;
    if (!yes) return 0;
  }
  return trim(st, st->threshold);
}

static int va_used_up(async_state *st, uint64_t size) {
  return pt_err_set(st->env.err, PT_ELIMIT, "async_pool: a request of %llu bytes passes the end of the pool's %llu GiB of VA",
                    (unsigned long long)size, (unsigned long long)(POOL_VA >> 30));
}

/* The stream order's slot of stream, -1 when it has none (ORDER_STREAMS taken); add: make one. */
static int stream_slot(async_state *st, uint64_t stream, int add) {
  for (int i = 0; i < st->nstreams; i++)
    if (st->sid[i] == stream) return i;
  if (!add || st->nstreams == ORDER_STREAMS) return -1;
  st->sid[st->nstreams] = stream;
  return st->nstreams++;
}

/* With the stream order: the best fit for size on stream among the free blocks seen complete (seen: theirs, or
   NULL) and the pending frees of other streams it waited for (smallest, then oldest), or NULL.  A free made after
   the wait is passed over in a scan, which a run ordering its streams between requests keeps short (on the eight
   two_streams traces paired with events2's runs, tests/async_run.sh, no search passed over one); past ORDER_SCAN
   of them the stream's frees are not looked at (a crafted trace: no quadratic replay). */
__attribute__((noinline)) static pt_bnode *ordered_fit(async_state *st, uint64_t size, uint64_t stream, pt_bnode *seen) {
  int t = stream_slot(st, stream, 0);
  if (t < 0) return seen;
  pt_bnode *best = seen;
  for (int j = 0; j < st->nstreams; j++) {
    uint32_t upto = st->after[t][j];
    if (j == t || !upto) continue;
    uint64_t key = st->sid[j] | PEND_BIT;
    pt_bnode *n = pt_bset_lower_bound(&st->pendt, &(pt_bkey){key, size, 0});
    for (int k = 0; n && n->key.stream == key && BLK(n)->order > upto; k++) /* made after the wait */
      n = k < ORDER_SCAN ? pt_bset_next(&st->pendt, n) : NULL;
    if (!n || n->key.stream != key) continue;
    if (!best || n->key.size < best->key.size || (n->key.size == best->key.size && n->key.addr < best->key.addr)) best = n;
  }
  return best;
}

/* Where a request of size bytes on stream goes, and what the heap must back; nothing changes.  Inlined: it is
   most of a request's work. */
__attribute__((always_inline)) static inline int find_place(async_state *st, uint64_t size, uint64_t stream, aplace *pl) {
  const pt_policy_hooks *h = st->env.hooks;
  memset(pl, 0, sizeof *pl);
  pl->new_end = st->end;
  pt_bnode *n = NULL;
  if (__builtin_expect(st->lazy, 0)) { /* the stream's own pending frees first */
    n = pt_bset_lower_bound(&st->pendt, &(pt_bkey){stream | PEND_BIT, size, 0});
    if (n && n->key.stream != (stream | PEND_BIT)) n = NULL;
  }
  if (!n) {
    n = pt_bset_lower_bound(&st->freet, &(pt_bkey){0, size, 0});
    if (__builtin_expect(st->ordered, 0)) n = ordered_fit(st, size, stream, n); /* or another stream's it waited for */
  }
  if (n) { /* best fit: smallest, then oldest */
    ablock *b = BLK(n);
    pl->b = b;
    pl->addr = b->addr;
    pl->size = b->size - size >= MIN_BLOCK ? size : b->size;
    if (b->seg) {
      pl->first = 1; /* nothing to back */
      pl->lastslot = 0;
    } else {
      pl->first = slot_of(st, pl->addr);
      pl->lastslot = slot_of(st, pl->addr + pl->size - 1);
    }
    return 0;
  }
  /* the top, or the end */
  uint64_t start = st->last && !st->last->allocated ? st->last->addr : st->end;
  if (size > POOL_VA - (start - st->base)) return va_used_up(st, size);
  uint64_t stop = start + size;
  if (stop > st->end) {
    uint64_t grow = stop - st->end;
    if (h && h->segment_size) {
      uint64_t want;
      int rc = h->segment_size(h->ctx, size, &want, st->env.err);
      if (rc < 0) return rc;
      if ((rc = pt_mech_check_hook_size(&st->env, "async_pool", "segment_size", size, want)) < 0) return rc;
      if (want > grow) grow = want;
    }
    if (grow > POOL_VA - (st->end - st->base)) return va_used_up(st, size);
    grow = (grow + st->unit - 1) / st->unit * st->unit;
    if (grow > POOL_VA - (st->end - st->base)) return va_used_up(st, size);
    pl->new_end = st->end + grow;
  }
  pl->addr = start;
  pl->size = pl->new_end - stop >= MIN_BLOCK ? size : pl->new_end - start;
  pl->first = slot_of(st, start);
  /* a growth backs all it adds; else the chunks the block touches */
  pl->lastslot = slot_of(st, (pl->new_end > st->end ? pl->new_end : pl->addr + pl->size) - 1);
  return 0;
}

/* The place needs a chunk backed: 1. */
static int needs_backing(const async_state *st, const aplace *pl) {
  for (uint64_t s = pl->first; s <= pl->lastslot; s++)
    if (s >= st->nslots || !st->slots[s].c) return 1;
  return 0;
}

/* New chunks the place needs (after moving idle ones) would pass the cap: 1. */
static int over_cap(async_state *st, const aplace *pl) {
  uint64_t unbacked = 0, idle_inside = 0;
  for (uint64_t s = pl->first; s <= pl->lastslot; s++) {
    if (s >= st->nslots || !st->slots[s].c)
      unbacked++;
    else if (st->slots[s].c->idle)
      idle_inside++;
  }
  uint64_t movable = st->idle_heap - idle_inside;
  if (unbacked <= movable) return 0;
  return pt_dev_would_exceed(st->env.dev, (unbacked - movable) * st->unit);
}

/* ---- frees the GPU has not passed (free_lag) -------------------------------
 * On the H200 (traces/capture/async_probe, `probe pending`, a kernel keeping
 * the stream busy): a free still pending on the GPU is reused by a later
 * request of its size or smaller, and merges with an adjacent pending free,
 * but not with free space next to it that the driver has seen complete; once
 * complete it merges as any free.  How many later requests a free stays
 * pending: the trace's measured count (+gpu) where it has one, else free_lag
 * (0: seen complete at once, the synchronised replay the model reproduces
 * address for address). */

/* Room for one more in the array *arr of n elements of elt bytes (*cap allocated): doubled from 64. */
static int room(async_state *st, void **arr, size_t n, size_t *cap, size_t elt) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 64;
  void *na = realloc(*arr, ncap * elt);
  if (!na) return oom(st);
  *arr = na;
  *cap = ncap;
  return 0;
}

static int heap_before(const aheap *h, const struct apending *a, const struct apending *b) {
  return a->due < b->due || (h->stable && a->due == b->due && a->ticket < b->ticket);
}

static int heap_push(async_state *st, aheap *h, ablock *b, uint64_t due, uint64_t ticket) {
  void *arr = h->v;
  int rc = room(st, &arr, h->n, &h->cap, sizeof *h->v);
  h->v = arr;
  if (rc < 0) return rc;
  struct apending e = {b, due, ticket};
  size_t i = h->n++;
  while (i > 0 && heap_before(h, &e, &h->v[(i - 1) / 2])) { /* sift up */
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = e;
  return 0;
}

static struct apending heap_pop(aheap *h) {
  struct apending top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) { /* sift down */
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && heap_before(h, &h->v[c + 1], &h->v[c])) c++;
    if (!heap_before(h, &h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

static int pend_push(async_state *st, ablock *b, uint64_t due) {
  b->ticket = ++st->tickets;
  b->due = due;
  return heap_push(st, &st->pend, b, due, b->ticket);
}

static void merge(async_state *st, ablock *b, ablock *nb);

/* The entries due by request count upto (all: UINT64_MAX): each still-pending block is seen complete, lets go of
   the chunks it held, and merges with the free neighbours already seen complete (a pending one merges when it
   completes in turn). */
static void pend_complete(async_state *st, uint64_t upto) {
  while (st->pend.n && st->pend.v[0].due <= upto) {
    struct apending e = heap_pop(&st->pend);
    ablock *b = e.b;
    if (b->ticket != e.ticket) continue; /* reused, merged away or freed again since */
    b->ticket = 0;
    touch(st, b, -1);
    if (!is_top(st, b)) free_remove(st, b);
    if (b->prev && !b->prev->ticket) merge(st, b, b->prev);
    if (b->next && !b->next->ticket) merge(st, b, b->next);
    if (!is_top(st, b)) free_insert(st, b);
    if (b->seg && !b->prev && !b->next) b->seg->whole = b;
  }
}

/* The deferred frees due by request count upto (all: UINT64_MAX): each is seen complete at once, and merges
   with the free neighbours already seen complete (not with pending ones, as pend_complete). */
static void defer_complete(async_state *st, uint64_t upto) {
  while (st->defer.n && st->defer.v[0].due <= upto) {
    ablock *b = heap_pop(&st->defer).b;
    b->allocated = 0;
    st->allocated -= b->size;
    touch(st, b, -1);
    if (b->prev && !b->prev->ticket) merge(st, b, b->prev);
    if (b->next && !b->next->ticket) merge(st, b, b->next);
    if (!is_top(st, b)) free_insert(st, b);
    if (b->seg && !b->prev && !b->next) b->seg->whole = b;
  }
}

/* Split b at its front: b keeps size bytes, the rest becomes a free block (the top if b was last), pending
   until due where b was pending. */
static int split_front(async_state *st, ablock *b, uint64_t size, int pending, uint64_t due) {
  if (b->size == size) return 0;
  ablock *rest = take_block(st, b->seg, b->addr + size, b->size - size);
  PT_SPAN_LINK_AFTER(b, rest);
  b->size = size;
  SET_STREAM(rest, STREAM(b));
  rest->order = b->order;
  int rc = 0;
  if (pending) {
    touch(st, rest, +1); /* a pending free holds its chunks */
    if ((rc = pend_push(st, rest, due)) < 0) touch(st, rest, -1);
  }
  if (b == st->last)
    st->last = rest; /* the top: not in the free set */
  else
    free_insert(st, rest);
  return rc;
}

/*
 * Back every slot of [first, lastslot]: move idle chunks, else create new
 * ones.  *calls: driver calls made.  When a call fails, the slots backed so
 * far stay backed (idle where nothing uses them) and a chunk caught between
 * its old place and its new one is released.
 */
static int back(async_state *st, uint64_t first, uint64_t lastslot, int *calls) {
  pt_device *dev = st->env.dev;
  int rc = 0;
  for (uint64_t s = first; s <= lastslot && rc == 0; s++) {
    aslot *sl = &st->slots[s];
    if (sl->c) continue;
    uint64_t va = st->base + s * st->unit;
    achunk *c = NULL;
    for (achunk *i = st->idle_head; i; i = i->inext)
      if (i->slot != NO_SLOT) {
        c = i;
        break;
      }
    if (c) { /* remap an idle chunk */
      if ((rc = pt_dev_mem_unmap(dev, c->va, c->bytes)) < 0) break;
      idle_remove(st, c);
      st->slots[c->slot].c = NULL;
    } else {
      uint64_t h;
      if ((rc = pt_dev_mem_create(dev, st->unit, &h)) < 0) break;
      if (!(c = calloc(1, sizeof *c))) {
        pt_dev_mem_release(dev, h, st->unit);
        rc = oom(st);
        break;
      }
      c->bytes = st->unit;
      c->handle = h;
      st->held += st->unit;
    }
    *calls = 1;
    if ((rc = pt_dev_mem_map(dev, va, c->bytes, c->handle)) == 0 &&
        (rc = pt_dev_mem_set_access(dev, va, c->bytes)) < 0)
      pt_dev_mem_unmap(dev, va, c->bytes);
    if (rc < 0) { /* mapped nowhere now */
      pt_dev_mem_release(dev, c->handle, c->bytes);
      st->held -= c->bytes;
      free(c);
      break;
    }
    c->va = va;
    c->slot = s;
    sl->c = c;
  }
  /* what a growth added beyond the block is idle (only now: not a chunk to move within this loop) */
  for (uint64_t s = first; s <= lastslot; s++)
    if (st->slots[s].c && st->slots[s].live == 0 && !st->slots[s].c->idle) idle_push(st, st->slots[s].c);
  return rc;
}

static int unallocate(async_state *st, ablock *b, uint64_t lag);

/* lazy_check: nothing free serves the request without new backing, so the driver looks at its pending frees,
   sees those the GPU has passed complete, and tries again before it grows the pool: the new place in *pl. */
__attribute__((noinline)) static int look_again(async_state *st, uint64_t size, uint64_t stream, aplace *pl) {
  if (st->defer.n) defer_complete(st, st->nreq);
  if (st->pend.n) pend_complete(st, st->nreq);
  return find_place(st, size, stream, pl);
}

/* Serve a request of size bytes on stream: PT_EOOM (nothing changed but what a check saw complete) when new
   chunks would pass the cap. */
static int place(async_state *st, uint64_t size, uint64_t stream, ablock **out) {
  aplace pl;
  int rc = find_place(st, size, stream, &pl);
  if (rc < 0) return rc;
  if (__builtin_expect(st->lazy, 0) && (st->pend.n || st->defer.n) && (!pl.b || needs_backing(st, &pl)) &&
      (rc = look_again(st, size, stream, &pl)) < 0)
    return rc;
  if (!pl.b && (rc = grow_slots(st, pl.new_end > st->end ? pl.new_end : st->end)) < 0) return rc;
  if (over_cap(st, &pl)) return PT_EOOM;
  ablock *b = pl.b, *cand = b ? b : st->last && !st->last->allocated ? st->last : NULL;
  uint64_t due = 0;
  int pending = cand && cand->ticket;
  if (pending) { /* reused while pending: the part not asked for stays pending */
    touch(st, cand, -1);
    due = cand->due;
    cand->ticket = 0;
  }
  if (b) {
    free_remove(st, b);
  } else if (st->last && !st->last->allocated) {
    b = st->last; /* the top */
    b->size = pl.new_end - b->addr;
  } else { /* a new block at the end */
    b = take_block(st, NULL, st->end, pl.new_end - st->end);
    b->prev = st->last;
    if (st->last) st->last->next = b;
    st->last = b;
  }
  st->end = pl.new_end;
  if ((rc = split_front(st, b, pl.size, pending, due)) < 0) return rc;
  b->allocated = 1;
  SET_STREAM(b, stream);
  touch(st, b, +1);
  int calls = 0;
  if (pl.first <= pl.lastslot && (rc = back(st, pl.first, pl.lastslot, &calls)) < 0) {
    st->allocated += b->size;
    (void)unallocate(st, b, st->lag); /* the request fails: its block is free again (the failure is rc) */
    return rc;
  }
  if (!calls) st->env.counters->cache_hits++;
  st->allocated += b->size;
  *out = b;
  return 0;
}

/* ---- the mechanism ------------------------------------------------------ */

static const pt_mech_param async_params[] = {
    {"release_threshold", 0, MAX_THRESHOLD, PT_PARAM_WHOLE, 0,
     "bytes the pool keeps at a synchronisation point (cudaMemPoolAttrReleaseThreshold); default 0 as CUDA's default pool", 0},
    {"trim_every_free", 0, 1, PT_PARAM_FLAG, 0,
     "1: every free is a synchronisation point; 0 (default): only a free that leaves the pool unused", 0},
    {"chunk_mb", 2, 1024, PT_PARAM_EVEN, 32,
     "MiB of backing the pool adds, maps and moves at a time, a multiple of 2; default 32, measured on the H200", 0},
    {"free_lag", 0, 1e9, PT_PARAM_WHOLE, 0,
     "requests a free stays pending on the GPU (reused, merged only with pending frees); 0 (default): seen complete at once", 0},
    {"gpu_lag", 0, 1, PT_PARAM_FLAG, 1,
     "1 (default): a free whose GPU time the trace measured (+gpu, trace import --gpu-frees) stays pending until "
     "the GPU passed it; 0: such frees as any other (free_lag)", 0},
    {"lazy_check", 0, 2, PT_PARAM_WHOLE, 2,
     "1: a free is seen complete only when a request finds no free block that serves it without new backing, or "
     "at a synchronisation (+sync), and until then serves its own stream's requests first (the driver's rule, "
     "measured on the H200); 0: seen complete at the first request after the GPU passed it (the rule with a "
     "synchronisation before every request); 2 (default): 1 on a trace that says where the program synchronised "
     "(+sync, @syncs recorded: trace import --async-run), else 0", 0},
    {"adopt_initial", 0, 1, PT_PARAM_FLAG, 0,
     "1: the segments alive at trace start are kept as recorded; 0 (default): their live blocks are allocated from the pool first, "
     "as under backend:cudaMallocAsync from the process's start", 0},
    {NULL, 0, 0, PT_PARAM_REAL, 0, NULL, 0}};

static int async_create(const pt_mech_env *env, void **state) {
  double thr = pt_mech_param_get(async_params, "release_threshold", env->params);
  double every = pt_mech_param_get(async_params, "trim_every_free", env->params);
  double chunk = pt_mech_param_get(async_params, "chunk_mb", env->params);
  double lag = pt_mech_param_get(async_params, "free_lag", env->params);
  async_state *st = calloc(1, sizeof *st);
  if (st) pt_slab_init(&st->blocks, sizeof(ablock), SLAB_BLOCKS);
  if (!st) return pt_err_set(env->err, PT_ENOMEM, "async_pool: out of memory");
  st->env = *env;
  st->threshold = (uint64_t)thr;
  st->every_free = every == 1;
  st->lag = (uint64_t)lag;
  st->adopt = pt_mech_param_get(async_params, "adopt_initial", env->params) == 1;
  st->gpu_lag = pt_mech_param_get(async_params, "gpu_lag", env->params) == 1;
  double lazy = pt_mech_param_get(async_params, "lazy_check", env->params);
  st->lazy = lazy == 1 || (lazy == 2 && env->trace_synced);
  st->unit = env->hooks && env->hooks->segment_size ? GRAIN : (uint64_t)chunk * MIB;
  st->init_phase = 1;
  st->defer.stable = 1;
  *state = st;
  return 0;
}

static int async_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  async_state *st = state;
  uint64_t size;
  int rc;
  if (st->init_phase) end_init(st);
  if ((rc = pt_mech_round(&st->env, "async_pool", bytes, &size)) < 0) return rc;
  if (!st->base) {
    if ((rc = pt_dev_address_reserve(st->env.dev, POOL_VA, st->unit, &st->base)) < 0) return rc;
    st->end = st->base;
  }
  if ((rc = ensure_spare(st, 2)) < 0) return rc; /* a new block at the end, a split remainder */
  st->nreq++;
  if (!st->lazy && st->defer.n) defer_complete(st, st->nreq);
  if (!st->lazy && st->pend.n) pend_complete(st, st->nreq);
  ablock *b = NULL;
  rc = place(st, size, stream, &b);
  if (rc == PT_EOOM) {
    if ((rc = trim(st, 0)) < 0) return rc;
    st->env.counters->alloc_retries++;
    rc = place(st, size, stream, &b);
  }
  if (rc < 0) return rc;
  *handle = (uint64_t)(uintptr_t)b;
  return 0;
}

/* b absorbs its free neighbour nb (prev or next). */
static void merge(async_state *st, ablock *b, ablock *nb) {
  if (!nb || nb->allocated) return;
  if (nb == st->last)
    st->last = b; /* the top: in no set */
  else
    free_remove(st, nb);
  PT_SPAN_ABSORB(b, nb);
  drop_block(st, nb);
}

/* nb, a neighbour of b, is a pending free b merges with while pending: with lazy_check, of b's stream. */
static int pending_twin(const async_state *st, const ablock *b, const ablock *nb) {
  return nb && nb->ticket && (!st->lazy || STREAM(nb) == STREAM(b));
}

/* An allocated block becomes free, merged with free neighbours.  With free_lag (or lazy_check) it is
   pending: it keeps the chunks it touches (none is idle, moved or released), and merges only with pending
   neighbours (of its stream with lazy_check; completing with the latest of them). */
static int unallocate(async_state *st, ablock *b, uint64_t lag) {
  b->allocated = 0;
  st->allocated -= b->size;
  int pending = lag || st->lazy, rc = 0;
  if (!pending) { /* seen complete: merges with free neighbours also seen complete (pending ones: +gpu frees) */
    touch(st, b, -1);
    if (b->prev && !b->prev->ticket) merge(st, b, b->prev);
    if (b->next && !b->next->ticket) merge(st, b, b->next);
  } else if (pending_twin(st, b, b->prev) || pending_twin(st, b, b->next)) {
    touch(st, b, -1); /* held again below, as one range */
    for (int side = 0; side < 2; side++) {
      ablock *nb = side ? b->next : b->prev;
      if (!pending_twin(st, b, nb)) continue;
      touch(st, nb, -1);
      nb->ticket = 0;
      merge(st, b, nb);
    }
    touch(st, b, +1);
  }
  if (pending) {
    if (st->lazy) b->order = ++st->frees; /* merged pending neighbours: with the latest */
    rc = pend_push(st, b, st->nreq + lag); /* before the set: a pending block's set is its own */
  }
  if (!is_top(st, b)) free_insert(st, b);
  if (b->seg && !b->prev && !b->next) b->seg->whole = b;
  return rc;
}

/* A free pending for lag requests (0: seen complete at once). */
static int free_after(async_state *st, uint64_t handle, uint64_t lag) {
  ablock *b = (ablock *)(uintptr_t)handle;
  if (st->init_phase) end_init(st);
  int rc = unallocate(st, b, lag);
  if (rc < 0) return rc;
  if (st->every_free || st->allocated == 0) return sync_point(st);
  return 0;
}

static int async_free(void *state, uint64_t handle) {
  async_state *st = state;
  return free_after(st, handle, st->lag);
}

/* A free the trace says the GPU passed after k more requests (+gpu k): pending until the (k+1)-th, seen
   complete at once for k 0, whatever free_lag says; with gpu_lag 0 as any free. */
static int async_free_pending(void *state, uint64_t handle, uint64_t k) {
  async_state *st = state;
  return free_after(st, handle, !st->gpu_lag ? st->lag : k ? k + 1 : 0);
}

/*
 * A free of a block other streams used (record_stream): PyTorch's backend makes a stream of its own (the
 * "unifying free stream") wait for the block's creation stream and every stream recorded on it, and frees
 * it there (CUDAMallocAsyncAllocator.cpp).  No request is made on that stream, so while the GPU has not
 * passed the free nothing reuses the memory, not even a request of its size on the stream that made it (a
 * pending free on a request's own stream is reused: async_free).  It stays the pool's for free_lag requests;
 * with no lag it is any free.
 */
static int async_free_deferred(void *state, uint64_t handle, uint64_t k) {
  async_state *st = state;
  uint64_t lag = k == PT_MECH_UNTIMED || !st->gpu_lag ? st->lag : k ? k + 1 : 0;
  if (!lag && !st->lazy) return async_free(state, handle);
  if (st->init_phase) end_init(st);
  return heap_push(st, &st->defer, (ablock *)(uintptr_t)handle, st->nreq + lag, ++st->deferrals); /* oldest first */
}

/* Stream order, followed with lazy_check (without it a pending free serves any stream). */
static int async_event_record(void *state, uint64_t event, uint64_t stream) {
  async_state *st = state;
  if (!st->lazy) return 0;
  if (event >= MAX_EVENTS)
    return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: event %llu: numbers go below %llu", (unsigned long long)event,
                      (unsigned long long)MAX_EVENTS);
  int s = stream_slot(st, stream, 1);
  if (s < 0) { /* not followed: its record orders nothing */
    if (event < st->nevents) memset(st->events[event], 0, sizeof st->events[event]);
    return 0;
  }
  if (event >= st->nevents) {
    size_t n = st->nevents ? st->nevents : 64;
    while (n <= event) n *= 2;
    void *v = realloc(st->events, n * sizeof *st->events);
    if (!v) return oom(st);
    st->events = v;
    memset(st->events + st->nevents, 0, (n - st->nevents) * sizeof *st->events);
    st->nevents = n;
  }
  st->after[s][s] = st->frees;
  memcpy(st->events[event], st->after[s], sizeof st->after[s]);
  return 0;
}

static int async_stream_wait(void *state, uint64_t stream, uint64_t event) {
  async_state *st = state;
  if (!st->lazy || event >= st->nevents) return 0; /* never recorded: orders nothing */
  int t = stream_slot(st, stream, 1);
  if (t < 0) return 0;
  for (int j = 0; j < ORDER_STREAMS; j++) {
    if (st->events[event][j] > st->after[t][j]) st->after[t][j] = st->events[event][j];
    if (j != t && st->after[t][j]) st->ordered = 1;
  }
  return 0;
}

static int async_synchronize(void *state) {
  async_state *st = state;
  if (st->init_phase) end_init(st);
  return sync_point(st);
}

static int async_empty_cache(void *state) {
  async_state *st = state;
  if (st->init_phase) end_init(st);
  return trim(st, 0);
}

static int async_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  async_state *st = state;
  (void)stream;
  (void)expandable;
  if (!st->adopt) return 0; /* the pool makes its own: the blocks come next */
  if (!st->init_phase) return pt_err_set(st->env.err, PT_EUSAGE, "async_pool: initial segment after the first request");
  if (!bytes) return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: initial segment of 0 bytes");
  int rc = ensure_spare(st, 1);
  if (rc < 0) return rc;
  achunk *c = calloc(1, sizeof *c);
  if (!c) return oom(st);
  if ((rc = pt_dev_adopt_mapped(st->env.dev, addr, bytes, bytes, &c->handle)) < 0) {
    free(c);
    return rc;
  }
  c->va = addr;
  c->bytes = bytes;
  c->slot = NO_SLOT;
  c->snext = st->segs;
  if (st->segs) st->segs->sprev = c;
  st->segs = c;
  ablock *b = take_block(st, c, addr, bytes);
  free_insert(st, b);
  c->whole = b;
  idle_push(st, c);
  st->held += bytes;
  return 0;
}

static ablock *piece_new(async_state *st, const ablock *b, uint64_t addr, uint64_t size) {
  return take_block(st, b->seg, addr, size);
}

/* A block live at trace start, carved out of the free part of an initial segment. */
static int async_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  async_state *st = state;
  if (!st->adopt) return async_alloc(state, bytes, stream, handle); /* in trace order, before any request */
  if (!st->init_phase) return pt_err_set(st->env.err, PT_EUSAGE, "async_pool: initial block after the first request");
  uint64_t size = pt_mech_round512(bytes);
  pt_bnode *n = pt_bset_before(&st->addrt, &(pt_bkey){0, 0, addr + 1}); /* last at or below */
  ablock *b = n ? ABLK(n) : NULL;
  if (!b || size < bytes || addr + size < addr || addr + size > b->addr + b->size)
    return pt_err_set(st->env.err, PT_EFORMAT, "async_pool: initial block at 0x%llx (%llu bytes) lies in no free part of a segment",
                      (unsigned long long)addr, (unsigned long long)bytes);
  int rc = ensure_spare(st, 2);
  if (rc < 0) return rc;
  free_remove(st, b);
  PT_SPAN_CARVE(st, b, addr, size, piece_new, free_insert); /* the free parts before and after stay free */
  b->allocated = 1;
  SET_STREAM(b, stream);
  touch(st, b, +1);
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
  for (size_t i = 0; i < st->nslots; i++) free(st->slots[i].c);
  free(st->slots);
  while (st->segs) {
    achunk *c = st->segs;
    st->segs = c->snext;
    free(c);
  }
  pt_bset_free(&st->freet);
  pt_bset_free(&st->pendt);
  pt_bset_free(&st->addrt);
  pt_slab_free(&st->blocks);
  free(st->pend.v);
  free(st->defer.v);
  free(st->events);
  free(st);
}

static const char *const async_of_run[] = {"free_lag", "gpu_lag", "lazy_check", "adopt_initial", NULL};

const pt_mech_ops pt_mech_async_pool = {
    .name = "async_pool",
    .params = async_params,
    .create = async_create,
    .init_segment = async_init_segment,
    .init_alloc = async_init_alloc,
    .alloc = async_alloc,
    .free = async_free,
    .free_deferred = async_free_deferred,
    .free_pending = async_free_pending,
    .synchronize = async_synchronize,
    .event_record = async_event_record,
    .stream_wait = async_stream_wait,
    .empty_cache = async_empty_cache,
    .destroy = async_destroy,
    .addr_of = async_addr_of,
    .shares_streams = 1,
    .of_run = async_of_run,
};
