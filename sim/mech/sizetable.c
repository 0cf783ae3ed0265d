/* sizetable.c — size tables: checks, lookup by binary search, the hooks adapter (see sizetable.h). */
#include "sizetable.h"

#include <string.h>

static const char *const form_names[PT_SIZETAB_NFORMS] = {"const", "identity", "round_up"};

const char *pt_sizetab_form_name(int form) {
  return form >= 0 && form < PT_SIZETAB_NFORMS ? form_names[form] : NULL;
}

int pt_sizetab_form_find(const char *s, size_t len) {
  for (int f = 0; f < PT_SIZETAB_NFORMS; f++)
    if (strlen(form_names[f]) == len && !memcmp(form_names[f], s, len)) return f;
  return -1;
}

int pt_sizetab_append(pt_sizetab *t, uint64_t lo, uint64_t hi, int form, uint64_t arg) {
  uint64_t next = t->n ? t->p[t->n - 1].hi + 1 : 1;
  if (lo != next || hi < lo) return PT_EFORMAT;
  if (form == PT_SIZETAB_IDENTITY) arg = 0;
  if (t->n) {
    pt_sizetab_piece *last = &t->p[t->n - 1];
    if (last->form == form && last->arg == arg) {
      last->hi = hi;
      return 0;
    }
  }
  if (t->n == PT_SIZETAB_MAX_PIECES) return PT_ELIMIT;
  t->p[t->n++] = (pt_sizetab_piece){lo, hi, form, arg};
  return 0;
}

/* The largest result a piece gives: at its end, all three forms being nondecreasing. */
static int piece_fits(const pt_sizetab_piece *p) {
  if (p->form == PT_SIZETAB_ROUND_UP && p->arg > PT_SIZETAB_MAX_RESULT) return 0;
  return pt_sizetab_piece_eval(p, p->hi) <= PT_SIZETAB_MAX_RESULT;
}

int pt_sizetab_check(const pt_sizetab *t, int *bad, pt_err *err) {
  *bad = -1;
  if (t->n <= 0 || t->n > PT_SIZETAB_MAX_PIECES)
    return pt_err_set(err, PT_EFORMAT, "a table has 1 to %d pieces, not %d", PT_SIZETAB_MAX_PIECES, t->n);
  uint64_t next = 1;
  for (int i = 0; i < t->n; i++) {
    const pt_sizetab_piece *p = &t->p[i];
    *bad = i;
    if (p->lo != next)
      return pt_err_set(err, PT_EFORMAT, "piece %d starts at %llu, not %llu (pieces are sorted, contiguous, from 1)", i,
                        (unsigned long long)p->lo, (unsigned long long)next);
    if (p->hi < p->lo || p->hi > PT_SIZETAB_LIMIT)
      return pt_err_set(err, PT_EFORMAT, "piece %d ends at %llu: before its start %llu or past 2^50", i, (unsigned long long)p->hi,
                        (unsigned long long)p->lo);
    if (!pt_sizetab_form_name(p->form)) return pt_err_set(err, PT_EFORMAT, "piece %d: unknown form %d", i, p->form);
    if (p->form != PT_SIZETAB_IDENTITY && p->arg == 0)
      return pt_err_set(err, PT_EFORMAT, "piece %d: %s needs a positive argument, not 0", i, form_names[p->form]);
    if (!piece_fits(p)) return pt_err_set(err, PT_EFORMAT, "piece %d: results past 2^62 bytes", i);
    next = p->hi + 1;
  }
  if (next != PT_SIZETAB_LIMIT + 1) {
    *bad = t->n;
    return pt_err_set(err, PT_EFORMAT, "the pieces end at %llu, not at 2^50 (%llu)", (unsigned long long)(next - 1),
                      (unsigned long long)PT_SIZETAB_LIMIT);
  }
  *bad = 0;
  return 0;
}

int pt_sizetab_lookup(const pt_sizetab *t, uint64_t bytes, uint64_t *out) {
  if (bytes < 1 || bytes > PT_SIZETAB_LIMIT || t->n <= 0) return PT_ELIMIT;
  int lo = 0, hi = t->n - 1; /* the piece holding bytes is in [lo, hi] */
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (t->p[mid].lo <= bytes) lo = mid;
    else hi = mid - 1;
  }
  if (bytes > t->p[lo].hi) return PT_ELIMIT; /* only for an unchecked table */
  *out = pt_sizetab_piece_eval(&t->p[lo], bytes);
  return 0;
}

int pt_sizetab_equal(const pt_sizetab *a, const pt_sizetab *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++)
    if (a->p[i].lo != b->p[i].lo || a->p[i].hi != b->p[i].hi || a->p[i].form != b->p[i].form || a->p[i].arg != b->p[i].arg)
      return 0;
  return 1;
}

static int table_hook(const pt_sizetab *t, const char *hook, uint64_t bytes, uint64_t *out, pt_err *err) {
  if (pt_sizetab_lookup(t, bytes, out) == 0) return 0;
  return pt_err_set(err, PT_ELIMIT, "policy %s table: %llu bytes is outside 1 to 2^50", hook, (unsigned long long)bytes);
}

static int hook_round(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err) {
  return table_hook(&((const pt_sizetab_set *)ctx)->round, "round", bytes, out, err);
}

static int hook_segment_size(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err) {
  return table_hook(&((const pt_sizetab_set *)ctx)->segment_size, "segment_size", bytes, out, err);
}

void pt_sizetab_hooks(const pt_sizetab_set *set, pt_policy_hooks *out) {
  *out = (pt_policy_hooks){.ctx = (void *)set};
  if (set->round.n) out->round = hook_round;
  if (set->segment_size.n) out->segment_size = hook_segment_size;
}
