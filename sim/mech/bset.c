/* bset.c — the (stream, size, address) ordered set of free blocks: sorted chunks (see bset.h). */
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "error.h"

#define B PT_BSET_CHUNK

/* bset.h's work counters (initial-exec: see there). */
__thread pt_bset_work pt_bset_work_tls __attribute__((tls_model("initial-exec")));

typedef struct entry {
  pt_bkey key;
  pt_bnode *node;
} entry;

struct pt_bchunk {
  size_t n;            /* entries in use: 1..B, or 0 in the only chunk of an empty set */
  size_t idx;          /* where it sits in chunk[] */
  pt_bchunk *next;     /* spare list */
  entry e[B];          /* sorted by key */
};

/*
 * Open a gap at e[at] of c, or close it: a plain loop, as the moves are a
 * few entries and a call to memmove (with its dispatch on the length) costs
 * more than the copying.  The empty asm keeps the compiler from turning the
 * loop back into that call.
 */
static inline void open_gap(pt_bchunk *c, size_t at) {
  for (size_t i = c->n; i > at; i--) {
    c->e[i] = c->e[i - 1];
    __asm__("" ::: "memory");
  }
}

static inline void close_gap(pt_bchunk *c, size_t at) {
  for (size_t i = at; i + 1 < c->n; i++) {
    c->e[i] = c->e[i + 1];
    __asm__("" ::: "memory");
  }
}

int pt_bkey_cmp(const pt_bkey *a, const pt_bkey *b) {
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  return 0;
}

/*
 * Whether key x comes before the answer to a search for k: x < k for a
 * lower bound, x <= k for an upper bound (strict).  Within one stream (nearly
 * every comparison) one 128-bit compare, no branch on size or address.
 */
__attribute__((always_inline)) static inline int before_answer(const pt_bkey *x, const pt_bkey *k, int strict) {
  if (x->stream != k->stream) return x->stream < k->stream;
  unsigned __int128 a = (unsigned __int128)x->size << 64 | x->addr, b = (unsigned __int128)k->size << 64 | k->addr;
  return strict ? a <= b : a < b;
}

/*
 * Index of the first key of c (c->n >= 1) not before the answer; c->n when
 * none.  Halving steps down to a window of SCAN keys, then a count over the
 * window: the count's comparisons do not wait on one another, where each
 * halving step waits on the load the step before chose.
 */
#define SCAN 16
__attribute__((always_inline)) static inline size_t search_chunk(const pt_bchunk *c, const pt_bkey *k, int strict) {
  size_t base = 0, len = c->n, below = 0;
  pt_bset_work_tls.visits += c->n;
  for (; len > SCAN; len -= len / 2) /* the answer lies in [base, base + len] */
    base = before_answer(&c->e[base + len / 2].key, k, strict) ? base + len / 2 : base;
  for (size_t i = 0; i < len; i++) below += (size_t)before_answer(&c->e[base + i].key, k, strict);
  return base + below;
}

/* Index of the first chunk (s->len >= 1) whose last key is not before the answer; nchunks when none.
   Over last[], contiguous: no step waits on a chunk's load. */
__attribute__((always_inline)) static inline size_t search_chunks(const pt_bset *s, const pt_bkey *k, int strict) {
  size_t lo = 0;
  for (size_t len = s->nchunks; len > 1; len -= len / 2)
    lo = before_answer(&s->last[lo + len / 2], k, strict) ? lo + len / 2 : lo;
  return lo + (size_t)before_answer(&s->last[lo], k, strict);
}

/* last[i] after chunk[i] changed.  A set of one chunk searches it directly and keeps no last[]
   (a split sets both halves'); an empty chunk keeps what it had: no search reads it. */
static inline void set_last(pt_bset *s, size_t i) {
  const pt_bchunk *c = s->chunk[i];
  if (s->nchunks > 1 && c->n) s->last[i] = c->e[c->n - 1].key;
}

/* Where the answer sits; pos->chunk == s->nchunks when there is none.  Inlined,
   so that each caller gets the comparison it asks for (strict) compiled in. */
__attribute__((always_inline)) static inline void find(const pt_bset *s, const pt_bkey *k, int strict, pt_bpos *pos) {
  if (s->nchunks == 1) { /* the usual case: one search, no look at the chunk's last key first */
    const pt_bchunk *c = s->chunk[0];
    size_t at = c->n ? search_chunk(c, k, strict) : 0;
    pos->chunk = at == c->n; /* 1 (= nchunks): no answer */
    pos->at = at == c->n ? 0 : at;
    return;
  }
  pos->chunk = s->len ? search_chunks(s, k, strict) : s->nchunks;
  pos->at = pos->chunk < s->nchunks ? search_chunk(s->chunk[pos->chunk], k, strict) : 0;
}

static pt_bnode *at(const pt_bset *s, pt_bpos pos) {
  return pos.chunk < s->nchunks ? s->chunk[pos.chunk]->e[pos.at].node : NULL;
}

/* Room for one more chunk: a spare one and a slot in chunk[]. */
static int room_for_chunk(pt_bset *s) {
  if (s->nchunks == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 4;
    pt_bchunk **chunk = realloc(s->chunk, cap * sizeof *chunk);
    if (!chunk) return PT_ENOMEM;
    s->chunk = chunk;
    pt_bkey *last = realloc(s->last, cap * sizeof *last);
    if (!last) return PT_ENOMEM; /* chunk[] is larger than it need be: harmless */
    s->last = last;
    s->cap = cap;
  }
  if (!s->spare) {
    pt_bchunk *c = malloc(sizeof *c);
    if (!c) return PT_ENOMEM;
    c->next = NULL;
    s->spare = c;
    s->nspare = 1;
  }
  return 0;
}

/* A spare chunk (room_for_chunk made sure of one) into chunk[i]. */
static pt_bchunk *add_chunk(pt_bset *s, size_t i) {
  pt_bchunk *c = s->spare;
  s->spare = c->next;
  s->nspare--;
  c->n = 0;
  memmove(&s->chunk[i + 1], &s->chunk[i], (s->nchunks - i) * sizeof *s->chunk);
  memmove(&s->last[i + 1], &s->last[i], (s->nchunks - i) * sizeof *s->last);
  s->chunk[i] = c;
  s->nchunks++;
  for (size_t j = i; j < s->nchunks; j++) s->chunk[j]->idx = j;
  return c;
}

/* chunk[i] out of the array, onto the spare list. */
static void drop_chunk(pt_bset *s, size_t i) {
  pt_bchunk *c = s->chunk[i];
  memmove(&s->chunk[i], &s->chunk[i + 1], (s->nchunks - i - 1) * sizeof *s->chunk);
  memmove(&s->last[i], &s->last[i + 1], (s->nchunks - i - 1) * sizeof *s->last);
  s->nchunks--;
  for (size_t j = i; j < s->nchunks; j++) s->chunk[j]->idx = j;
  c->next = s->spare;
  s->spare = c;
  s->nspare++;
}

/* Entries [from, c->n) of c to the end of d. */
static void move_entries(pt_bchunk *d, pt_bchunk *c, size_t from) {
  for (size_t i = from; i < c->n; i++) c->e[i].node->chunk = d;
  memcpy(&d->e[d->n], &c->e[from], (c->n - from) * sizeof *c->e);
  d->n += c->n - from;
  c->n = from;
}

int pt_bset_insert(pt_bset *s, pt_bnode *n) {
  pt_bset_work_tls.ops++;
  pt_bset_work_tls.chunks += s->nchunks;
  if (s->nchunks == 1 && s->chunk[0]->n < B) { /* the usual case: one chunk with room */
    pt_bchunk *c = s->chunk[0];
    size_t at = c->n ? search_chunk(c, &n->key, 0) : 0;
    open_gap(c, at);
    c->e[at] = (entry){n->key, n};
    c->n++;
    n->chunk = c;
    s->len++;
    return 0;
  }
  pt_bpos pos = {0, 0};
  if (!s->nchunks) {
    if (room_for_chunk(s) < 0) return PT_ENOMEM;
    add_chunk(s, 0);
  } else if (s->len) {
    find(s, &n->key, 0, &pos);
  }
  if (pos.chunk == s->nchunks) { /* above every key: the end of the last chunk */
    pos.chunk--;
    pos.at = s->chunk[pos.chunk]->n;
  }
  pt_bchunk *c = s->chunk[pos.chunk];
  if (c->n == B) { /* full: its upper half becomes the next chunk */
    if (room_for_chunk(s) < 0) return PT_ENOMEM;
    pt_bchunk *d = add_chunk(s, pos.chunk + 1);
    move_entries(d, c, B / 2);
    set_last(s, pos.chunk);
    set_last(s, pos.chunk + 1);
    if (pos.at > B / 2) {
      c = d;
      pos.chunk++;
      pos.at -= B / 2;
    }
  }
  open_gap(c, pos.at);
  c->e[pos.at] = (entry){n->key, n};
  c->n++;
  n->chunk = c;
  if (pos.at + 1 == c->n) set_last(s, pos.chunk);
  s->len++;
  return 0;
}

/* Inlined into both erases: most sets hold a handful of blocks, where a call costs what the work does. */
__attribute__((always_inline)) static inline void erase_at(pt_bset *s, pt_bpos pos) {
  size_t i = pos.chunk;
  pt_bchunk *c = s->chunk[i];
  c->e[pos.at].node->chunk = NULL;
  close_gap(c, pos.at);
  c->n--;
  s->len--;
  if (s->nchunks == 1) return; /* nothing to merge, no last key kept */
  /* keep chunks at least a quarter full on average: merge with a neighbour when both fit in half a chunk */
  if (i + 1 < s->nchunks && c->n + s->chunk[i + 1]->n <= B / 2) {
    move_entries(c, s->chunk[i + 1], 0);
    drop_chunk(s, i + 1);
    set_last(s, i);
  } else if (i > 0 && s->chunk[i - 1]->n + c->n <= B / 2) {
    move_entries(s->chunk[i - 1], c, 0);
    drop_chunk(s, i);
    set_last(s, i - 1);
  } else if (!c->n && s->nchunks > 1) { /* the last chunk stays, empty, for the next insert */
    drop_chunk(s, i);
  } else if (pos.at == c->n) {
    set_last(s, i);
  }
}

void pt_bset_erase_pos(pt_bset *s, pt_bpos pos) {
  pt_bset_work_tls.ops++;
  erase_at(s, pos);
}

void pt_bset_erase(pt_bset *s, pt_bnode *n) {
  pt_bchunk *c = n->chunk;
  pt_bset_work_tls.ops++;
  if (!c) return; /* in no set */
  if (s->nchunks == 1) {
    pt_bpos pos;
    find(s, &n->key, 0, &pos);
    if (at(s, pos) == n) erase_at(s, pos);
    return;
  }
  if (c->idx >= s->nchunks || s->chunk[c->idx] != c) return; /* in another set */
  size_t i = search_chunk(c, &n->key, 0);
  if (i < c->n && c->e[i].node == n) erase_at(s, (pt_bpos){c->idx, i});
}

/* Both lower bounds' search, counted once by each. */
__attribute__((always_inline)) static inline pt_bnode *lower_bound(const pt_bset *s, const pt_bkey *k, pt_bpos *pos) {
  pt_bset_work_tls.ops++;
  find(s, k, 0, pos);
  return at(s, *pos);
}

pt_bnode *pt_bset_lower_bound_pos(const pt_bset *s, const pt_bkey *k, pt_bpos *pos) { return lower_bound(s, k, pos); }

pt_bnode *pt_bset_lower_bound(const pt_bset *s, const pt_bkey *k) {
  pt_bpos pos;
  return lower_bound(s, k, &pos);
}

pt_bnode *pt_bset_upper_bound(const pt_bset *s, const pt_bkey *k) {
  pt_bpos pos;
  pt_bset_work_tls.ops++;
  find(s, k, 1, &pos);
  return at(s, pos);
}

pt_bnode *pt_bset_before(const pt_bset *s, const pt_bkey *k) {
  pt_bpos pos;
  pt_bset_work_tls.ops++;
  if (!s->len) return NULL;
  find(s, k, 0, &pos);
  if (pos.chunk < s->nchunks && pos.at > 0) return s->chunk[pos.chunk]->e[pos.at - 1].node;
  if (pos.chunk == 0) return NULL;
  const pt_bchunk *c = s->chunk[pos.chunk - 1]; /* the answer opens chunk pos.chunk, or there is none */
  return c->e[c->n - 1].node;
}

pt_bnode *pt_bset_first(const pt_bset *s) {
  pt_bset_work_tls.ops++;
  return s->len ? s->chunk[0]->e[0].node : NULL;
}

void pt_bset_free(pt_bset *s) {
  for (size_t i = 0; i < s->nchunks; i++) free(s->chunk[i]);
  while (s->spare) {
    pt_bchunk *c = s->spare;
    s->spare = c->next;
    free(c);
  }
  free(s->chunk);
  free(s->last);
  *s = (pt_bset){0};
}
