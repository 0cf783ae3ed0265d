/*
 * bset.h — an ordered set of free blocks keyed by (stream, size, address),
 * the order PyTorch's caching allocator searches for a best fit: the first
 * block at or after (stream, size, 0) is the smallest block of that stream
 * that fits, and among equal sizes the lowest address.
 *
 * Intrusive: a block embeds a pt_bnode and sets its key before inserting; the
 * key must not change while the node is in a set.  A treap whose priorities
 * are a hash of the key, so runs are deterministic.
 */
#ifndef PT_BSET_H
#define PT_BSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_bkey {
  uint64_t stream, size, addr;
} pt_bkey;

typedef struct pt_bnode {
  pt_bkey key;
  struct pt_bnode *left, *right;
  uint64_t prio;
} pt_bnode;

typedef struct pt_bset {
  pt_bnode *root;
  size_t len;
} pt_bset;

int pt_bkey_cmp(const pt_bkey *a, const pt_bkey *b);
void pt_bset_insert(pt_bset *s, pt_bnode *n);   /* n->key set by the caller; keys are unique */
void pt_bset_erase(pt_bset *s, pt_bnode *n);    /* n must be in s */
pt_bnode *pt_bset_lower_bound(const pt_bset *s, const pt_bkey *k);  /* first >= k, or NULL */
pt_bnode *pt_bset_upper_bound(const pt_bset *s, const pt_bkey *k);  /* first >  k, or NULL */
pt_bnode *pt_bset_before(const pt_bset *s, const pt_bkey *k);       /* last  <  k, or NULL */
pt_bnode *pt_bset_first(const pt_bset *s);
/* The link (parent's child pointer) to the first node >= k, or NULL: lets a
   caller inspect that node and then remove it without a second descent. */
pt_bnode **pt_bset_lower_bound_link(pt_bset *s, const pt_bkey *k);
void pt_bset_erase_at(pt_bset *s, pt_bnode **link);
/* In-order successor of a node in the set (NULL after the last). */
static inline pt_bnode *pt_bset_next(const pt_bset *s, const pt_bnode *n) {
  return pt_bset_upper_bound(s, &n->key);
}

#endif
