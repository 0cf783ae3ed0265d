/* slab.c — slab-allocated fixed-size records (see slab.h). */
#include "slab.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

struct pt_slab_chunk {
  union {
    pt_slab_chunk *next;
    max_align_t align; /* records start aligned */
  } h;
};

void pt_slab_init(pt_slab *s, size_t item_size, size_t per_chunk) {
  memset(s, 0, sizeof *s);
  if (item_size < sizeof(void *)) item_size = sizeof(void *);
  s->item = (item_size + 15) & ~(size_t)15;
  s->per_chunk = per_chunk ? per_chunk : 256;
}

int pt_slab_reserve(pt_slab *s, size_t n) {
  while (s->nfree < n) {
    pt_slab_chunk *c = malloc(sizeof *c + s->item * s->per_chunk);
    if (!c) return PT_ENOMEM;
    c->h.next = s->chunks;
    s->chunks = c;
    char *p = (char *)(c + 1);
    for (size_t i = 0; i < s->per_chunk; i++) pt_slab_drop(s, p + i * s->item);
  }
  return 0;
}

void *pt_slab_take(pt_slab *s) {
  void *p = s->free;
  memcpy(&s->free, p, sizeof s->free);
  s->nfree--;
  memset(p, 0, s->item);
  return p;
}

void pt_slab_drop(pt_slab *s, void *p) {
  memcpy(p, &s->free, sizeof s->free);
  s->free = p;
  s->nfree++;
}

void pt_slab_free(pt_slab *s) {
  while (s->chunks) {
    pt_slab_chunk *c = s->chunks;
    s->chunks = c->h.next;
    free(c);
  }
  s->free = NULL;
  s->nfree = 0;
}
