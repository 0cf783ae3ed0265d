/* bset.c — the (stream, size, address) ordered set of free blocks: a treap (see bset.h). */
#include "bset.h"

int pt_bkey_cmp(const pt_bkey *a, const pt_bkey *b) {
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  return 0;
}

static uint64_t prio_of(const pt_bkey *k) {
  uint64_t x = k->addr * UINT64_C(0x9e3779b97f4a7c15) ^ k->size ^ (k->stream << 17);
  x ^= x >> 31;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 29;
  return x;
}

/* Split t into (< k) and (>= k). */
static void split(pt_bnode *t, const pt_bkey *k, pt_bnode **lo, pt_bnode **hi) {
  pt_bnode **l = lo, **h = hi;
  while (t) {
    if (pt_bkey_cmp(&t->key, k) < 0) {
      *l = t;
      l = &t->right;
      t = t->right;
    } else {
      *h = t;
      h = &t->left;
      t = t->left;
    }
  }
  *l = *h = NULL;
}

/* Join a and b, every key of a below every key of b. */
static pt_bnode *join(pt_bnode *a, pt_bnode *b) {
  pt_bnode *root = NULL, **at = &root;
  while (a && b) {
    if (a->prio > b->prio) {
      *at = a;
      at = &a->right;
      a = a->right;
    } else {
      *at = b;
      at = &b->left;
      b = b->left;
    }
  }
  *at = a ? a : b;
  return root;
}

void pt_bset_insert(pt_bset *s, pt_bnode *n) {
  n->prio = prio_of(&n->key);
  n->left = n->right = NULL;
  pt_bnode **at = &s->root;
  while (*at && (*at)->prio >= n->prio) at = pt_bkey_cmp(&n->key, &(*at)->key) < 0 ? &(*at)->left : &(*at)->right;
  split(*at, &n->key, &n->left, &n->right);
  *at = n;
  s->len++;
}

void pt_bset_erase(pt_bset *s, pt_bnode *n) {
  pt_bnode **at = &s->root;
  while (*at != n) {
    if (!*at) return; /* not in the set */
    at = pt_bkey_cmp(&n->key, &(*at)->key) < 0 ? &(*at)->left : &(*at)->right;
  }
  *at = join(n->left, n->right);
  n->left = n->right = NULL;
  s->len--;
}

pt_bnode *pt_bset_lower_bound(const pt_bset *s, const pt_bkey *k) {
  pt_bnode *best = NULL;
  for (pt_bnode *t = s->root; t;) {
    if (pt_bkey_cmp(&t->key, k) >= 0) {
      best = t;
      t = t->left;
    } else {
      t = t->right;
    }
  }
  return best;
}

pt_bnode *pt_bset_upper_bound(const pt_bset *s, const pt_bkey *k) {
  pt_bnode *best = NULL;
  for (pt_bnode *t = s->root; t;) {
    if (pt_bkey_cmp(&t->key, k) > 0) {
      best = t;
      t = t->left;
    } else {
      t = t->right;
    }
  }
  return best;
}

pt_bnode *pt_bset_before(const pt_bset *s, const pt_bkey *k) {
  pt_bnode *best = NULL;
  for (pt_bnode *t = s->root; t;) {
    if (pt_bkey_cmp(&t->key, k) < 0) {
      best = t;
      t = t->right;
    } else {
      t = t->left;
    }
  }
  return best;
}

pt_bnode *pt_bset_first(const pt_bset *s) {
  pt_bnode *t = s->root;
  while (t && t->left) t = t->left;
  return t;
}

pt_bnode **pt_bset_lower_bound_link(pt_bset *s, const pt_bkey *k) {
  pt_bnode **best = NULL;
  for (pt_bnode **at = &s->root; *at;) {
    if (pt_bkey_cmp(&(*at)->key, k) >= 0) {
      best = at;
      at = &(*at)->left;
    } else {
      at = &(*at)->right;
    }
  }
  return best;
}

void pt_bset_erase_at(pt_bset *s, pt_bnode **link) {
  pt_bnode *n = *link;
  *link = join(n->left, n->right);
  n->left = n->right = NULL;
  s->len--;
}
