/*
 * sizetable.h — a policy's size hook as data: a function from request bytes
 * (1 .. 2^50) to bytes, as sorted, contiguous pieces, each of one form.
 *
 * What a Lua hook (round, segment_size) becomes when it travels to the
 * allocator library, which has no Lua (sim/work/hooktab.c resolves a hook
 * into a table; backend/libconf.c reads one from the export JSON).  The
 * table answers through pt_policy_hooks, so a mechanism runs the same with
 * table hooks as with the Lua ones.  libc only.
 *
 * Forms, for a request of b bytes inside a piece [lo, hi]:
 *   const C      C
 *   identity     b
 *   round_up M   b rounded up to a multiple of M (any M > 0)
 * A table is well formed when it has 1 to PT_SIZETAB_MAX_PIECES pieces, the
 * first starting at 1, each starting one past the previous one's end, the
 * last ending at PT_SIZETAB_LIMIT, each with lo <= hi, a known form, C > 0
 * for const, M > 0 for round_up, and every result at most
 * PT_SIZETAB_MAX_RESULT (no overflow).
 */
#ifndef PT_SIZETABLE_H
#define PT_SIZETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mech.h"

#define PT_SIZETAB_LIMIT (UINT64_C(1) << 50)      /* the largest request a table answers */
#define PT_SIZETAB_MAX_RESULT (UINT64_C(1) << 62) /* the largest result a table gives */
#define PT_SIZETAB_MAX_PIECES 64

enum pt_sizetab_form { PT_SIZETAB_CONST, PT_SIZETAB_IDENTITY, PT_SIZETAB_ROUND_UP, PT_SIZETAB_NFORMS };

typedef struct pt_sizetab_piece {
  uint64_t lo, hi; /* the requests it covers, both ends included */
  int form;        /* enum pt_sizetab_form */
  uint64_t arg;    /* C (const), M (round_up); 0 for identity */
} pt_sizetab_piece;

/* A table; n == 0: no table (the hook is absent). */
typedef struct pt_sizetab {
  int n;
  pt_sizetab_piece p[PT_SIZETAB_MAX_PIECES];
} pt_sizetab;

/* The tables a policy's size hooks became (n == 0: that hook is absent). */
typedef struct pt_sizetab_set {
  pt_sizetab round, segment_size;
} pt_sizetab_set;

/* "const", "identity", "round_up"; NULL for an unknown form. */
const char *pt_sizetab_form_name(int form);
/* The form named s[0..len), or -1. */
int pt_sizetab_form_find(const char *s, size_t len);

/* One piece's result for b (b inside it; the checks made the result fit). */
static inline uint64_t pt_sizetab_piece_eval(const pt_sizetab_piece *p, uint64_t b) {
  switch (p->form) {
  case PT_SIZETAB_CONST: return p->arg;
  case PT_SIZETAB_IDENTITY: return b;
  default: return (b + p->arg - 1) / p->arg * p->arg;
  }
}

/*
 * Append [lo, hi] of form/arg at the end of t; a piece that continues the
 * last one with the same form and argument extends it.  PT_ELIMIT when t is
 * full; PT_EFORMAT when it does not start one past the last end (or at 1).
 */
int pt_sizetab_append(pt_sizetab *t, uint64_t lo, uint64_t hi, int form, uint64_t arg);

/*
 * 0 when t is well formed (above); else PT_EFORMAT, *bad the index of the
 * first bad piece (t->n when the table stops short, -1 for an empty one)
 * and err saying why ("piece 3: starts at 5, not 4").
 */
int pt_sizetab_check(const pt_sizetab *t, int *bad /* OUT */, pt_err *err);

/* t's result for bytes (binary search): 0, or PT_ELIMIT outside 1 .. PT_SIZETAB_LIMIT (t checked). */
int pt_sizetab_lookup(const pt_sizetab *t, uint64_t bytes, uint64_t *out /* OUT */);

/* Two tables the same piece for piece. */
int pt_sizetab_equal(const pt_sizetab *a, const pt_sizetab *b);

/*
 * Hooks answered by the tables of set (checked): round and segment_size for
 * the tables with pieces, NULL for the others; page_size and should_collect
 * NULL.  ctx is set, which must outlive the hooks.
 */
void pt_sizetab_hooks(const pt_sizetab_set *set, pt_policy_hooks *out /* OUT */);

#endif
