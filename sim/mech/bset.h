/*
 * bset.h — an ordered set of free blocks keyed by (stream, size, address),
 * the order PyTorch's caching allocator searches for a best fit: the first
 * block at or after (stream, size, 0) is the smallest block of that stream
 * that fits, and among equal sizes the lowest address.
 *
 * A block embeds a pt_bnode and sets its key before inserting; the key must
 * not change while the node is in a set.  The set keeps the keys itself, in
 * sorted chunks of PT_BSET_CHUNK under one sorted array of chunks (a B+ tree
 * two levels deep), and beside that array the last key of every chunk in
 * one contiguous array, so that finding the chunk reads no chunk: a set of
 * thousands of blocks (a long fragmented decode holds some 2 000 in the
 * large pool) is a few halving steps over keys already in cache, then one
 * chunk.  A node records its chunk while it is in a set, so an erase by node
 * searches that chunk alone.  Small sets (tens of blocks, the real traces'
 * usual) are one chunk: a few halving steps, then a branch-free count over at
 * most 16 contiguous keys; an insert shifts a few hundred bytes with a loop.
 *
 * An insert that needs a new chunk may fail (PT_ENOMEM, the set unchanged).
 * Chunks an erase empties are kept for later inserts; pt_bset_free gives
 * everything back.  A zeroed pt_bset is an empty set.
 */
#ifndef PT_BSET_H
#define PT_BSET_H

#include <stddef.h>
#include <stdint.h>

#define PT_BSET_CHUNK 16 /* keys per chunk */

typedef struct pt_bkey {
  uint64_t stream, size, addr;
} pt_bkey;

typedef struct pt_bchunk pt_bchunk;

typedef struct pt_bnode {
  pt_bkey key;
  pt_bchunk *chunk;    /* the set's chunk holding it while it is in a set, else NULL (zeroed) */
} pt_bnode;

typedef struct pt_bset {
  pt_bchunk **chunk;   /* in key order; none is empty */
  pt_bkey *last;       /* last[i]: the last key of chunk[i] */
  size_t nchunks, cap; /* cap: room in chunk[] and last[] */
  pt_bchunk *spare;    /* empty chunks kept for inserts, linked */
  size_t nspare;
  size_t len;          /* nodes in the set */
} pt_bset;

/* Where a node sits: chunk index and index in the chunk. */
typedef struct pt_bpos {
  size_t chunk, at;
} pt_bpos;

int pt_bkey_cmp(const pt_bkey *a, const pt_bkey *b);

/* n->key set by the caller; keys are unique.  0, or PT_ENOMEM with s unchanged. */
int pt_bset_insert(pt_bset *s, pt_bnode *n);
void pt_bset_erase(pt_bset *s, pt_bnode *n);    /* nothing happens when n is in no set, or in another */
pt_bnode *pt_bset_lower_bound(const pt_bset *s, const pt_bkey *k);  /* first >= k, or NULL */
pt_bnode *pt_bset_upper_bound(const pt_bset *s, const pt_bkey *k);  /* first >  k, or NULL */
pt_bnode *pt_bset_before(const pt_bset *s, const pt_bkey *k);       /* last  <  k, or NULL */
pt_bnode *pt_bset_first(const pt_bset *s);
/* The first node >= k and where it sits, or NULL: lets a caller inspect
   that node and then remove it without a second search. */
pt_bnode *pt_bset_lower_bound_pos(const pt_bset *s, const pt_bkey *k, pt_bpos *pos /* OUT */);
void pt_bset_erase_pos(pt_bset *s, pt_bpos pos);
/* In-order successor of a node in the set (NULL after the last). */
static inline pt_bnode *pt_bset_next(const pt_bset *s, const pt_bnode *n) {
  return pt_bset_upper_bound(s, &n->key);
}
void pt_bset_free(pt_bset *s); /* the set is empty afterwards, and owns no memory */

/*
 * Work counters, for the cost model (docs/design.md, The cost model): the
 * allocator's own work follows the instructions its code executes, and what
 * the free sets do, and how large they are when they do it, stands in for
 * them deterministically.  ops counts every search and change of any set:
 * insert, erase, erase_pos, lower_bound (and lower_bound_pos, once a call),
 * before, upper_bound (so pt_bset_next), first; chunks sums the set's chunk
 * count (before the insert) at each insert; visits sums the keys of the
 * chunk each search looks at (0 to PT_BSET_CHUNK: a set of a few blocks is
 * searched in a few steps, a full chunk in sixteen), and the blocks a
 * mechanism's own walks step over (pt_bset_work_visit: stitch's walk along a
 * range's blocks).  Per thread, across every set, never reset: a caller
 * reads them before and after the work it prices and keeps the difference.
 * An increment or two a call: nothing measurable in a replay
 * (bench/RESULTS.md).
 */
typedef struct pt_bset_work {
  uint64_t ops, chunks, visits;
} pt_bset_work;

/* The counters themselves (bset.c), read inline: a call would return the three through memory, twice a
   request.  initial-exec: a direct %fs-relative access, where the default model of position-independent code
   calls __tls_get_addr each time; the allocator library, loaded by dlopen, takes these 24 bytes from the
   static TLS glibc keeps spare for that. */
extern __thread pt_bset_work pt_bset_work_tls __attribute__((tls_model("initial-exec")));

/* This thread's counts so far. */
static inline pt_bset_work pt_bset_work_read(void) { return pt_bset_work_tls; }
/* n blocks a walk outside the sets stepped over, into visits. */
static inline void pt_bset_work_visit(uint64_t n) { pt_bset_work_tls.visits += n; }

#endif
