/*
 * hooktab.c — size hooks resolved into tables by sampling, exact bisection
 * and verification (see hooktab.h for the method and what it cannot prove).
 */
#include "hooktab.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* The hook behind a counter and the bounds. */
typedef struct probe {
  pt_hooktab_fn fn;
  void *ctx;
  const char *hook;
  uint64_t calls;
  double deadline;
  pt_err *err;
} probe;

static int ask(probe *p, uint64_t bytes, uint64_t *out) {
  if (p->calls >= PT_HOOKTAB_MAX_CALLS)
    return pt_err_set(p->err, PT_ELIMIT, "%s: resolving it into a table would take more than %u hook calls", p->hook,
                      PT_HOOKTAB_MAX_CALLS);
  if ((p->calls & 1023) == 0 && pt_clock_s() > p->deadline)
    return pt_err_set(p->err, PT_ELIMIT, "%s: resolving it into a table took more than %g seconds", p->hook, PT_HOOKTAB_MAX_SECONDS);
  p->calls++;
  int rc = p->fn(p->ctx, bytes, out, p->err);
  return rc < 0 ? pt_err_prefix(p->err, rc, "%s at %llu B", p->hook, (unsigned long long)bytes) : 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sample points, sorted and distinct, in 1 .. 2^50. */
static int make_samples(uint64_t **out, size_t *n) {
  size_t cap = PT_HOOKTAB_SAMPLE_TOP / PT_HOOKTAB_SAMPLE_STEP + 3 * 51 + 1, k = 0;
  uint64_t *s = malloc(cap * sizeof *s);
  if (!s) return PT_ENOMEM;
  s[k++] = 1;
  for (int e = 0; e <= 50; e++) {
    uint64_t p = UINT64_C(1) << e;
    s[k++] = p - 1;
    s[k++] = p;
    s[k++] = p + 1;
  }
  for (uint64_t m = PT_HOOKTAB_SAMPLE_STEP; m <= PT_HOOKTAB_SAMPLE_TOP; m += PT_HOOKTAB_SAMPLE_STEP) s[k++] = m;
  qsort(s, k, sizeof *s, cmp_u64);
  size_t w = 0;
  for (size_t i = 0; i < k; i++)
    if (s[i] >= 1 && s[i] <= PT_SIZETAB_LIMIT && (w == 0 || s[i] != s[w - 1])) s[w++] = s[i];
  *out = s;
  *n = w;
  return 0;
}

/* A candidate form for a piece. */
typedef struct cand {
  int form;
  uint64_t arg;
} cand;

static uint64_t cand_eval(const cand *c, uint64_t b) {
  pt_sizetab_piece p = {b, b, c->form, c->arg};
  return pt_sizetab_piece_eval(&p, b);
}

/*
 * The forms that give v at lo: const v; identity when v == lo; round up to
 * M for every power of two M (and for M = v) whose multiple next from lo is v.
 */
static int candidates(uint64_t lo, uint64_t v, cand *c) {
  int n = 0;
  c[n++] = (cand){PT_SIZETAB_CONST, v};
  if (v == lo) c[n++] = (cand){PT_SIZETAB_IDENTITY, 0};
  int pow2_v = 0;
  for (int e = 0; e <= 50 && v >= lo; e++) {
    uint64_t m = UINT64_C(1) << e;
    if (v % m == 0 && v - lo < m) c[n++] = (cand){PT_SIZETAB_ROUND_UP, m};
    pow2_v |= m == v;
  }
  if (v >= lo && !pow2_v && v <= PT_SIZETAB_MAX_RESULT) c[n++] = (cand){PT_SIZETAB_ROUND_UP, v};
  return n;
}

/*
 * How far from lo candidate c agrees with the hook: over the samples first
 * (from index j, the first sample past lo), then by binary search between
 * the last sample it agrees at and the first it does not.  *end: the last
 * size of the run.
 */
static int extent(probe *p, const uint64_t *s, const uint64_t *val, size_t n, size_t j, uint64_t lo, const cand *c,
                  uint64_t *end) {
  uint64_t good = lo;
  while (j < n && cand_eval(c, s[j]) == val[j]) good = s[j++];
  if (j == n) {
    *end = PT_SIZETAB_LIMIT; /* the last sample is 2^50 */
    return 0;
  }
  uint64_t bad = s[j];
  while (bad - good > 1) { /* agrees at good, not at bad */
    uint64_t mid = good + (bad - good) / 2, v;
    int rc = ask(p, mid, &v);
    if (rc < 0) return rc;
    if (cand_eval(c, mid) == v) good = mid;
    else bad = mid;
  }
  *end = good;
  return 0;
}

/* xorshift64*: the verifier's sizes, the same every run. */
static uint64_t next_rand(uint64_t *x) {
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * UINT64_C(2685821657736338717);
}

static int log2_floor(uint64_t v) { return 63 - __builtin_clzll(v); }

/* The table and the hook agree at b, or a refusal naming both results. */
static int verify_at(probe *p, const pt_sizetab *t, uint64_t b, uint64_t *count) {
  if (b < 1 || b > PT_SIZETAB_LIMIT) return 0;
  uint64_t want, got = 0;
  int rc = ask(p, b, &want);
  if (rc < 0) return rc;
  (*count)++;
  if (pt_sizetab_lookup(t, b, &got) < 0 || got != want)
    return pt_err_set(p->err, PT_EFORMAT,
                      "%s cannot be made a table: at %llu B the table gives %llu, the hook %llu (its results are not pieces of "
                      "constant, identity and round-up forms; checked by sampling, docs/export.md)",
                      p->hook, (unsigned long long)b, (unsigned long long)got, (unsigned long long)want);
  return 0;
}

/* Each piece at its ends, the ends +-1, and PT_HOOKTAB_VERIFY pseudo-random sizes inside (half uniform, half by octave). */
static int verify(probe *p, const pt_sizetab *t, uint64_t *count) {
  uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
  for (int i = 0; i < t->n; i++) {
    const pt_sizetab_piece *q = &t->p[i];
    const uint64_t ends[] = {q->lo - 1, q->lo, q->lo + 1, q->hi - 1, q->hi, q->hi + 1};
    for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++) {
      int rc = verify_at(p, t, ends[k], count);
      if (rc < 0) return rc;
    }
    uint64_t span = q->hi - q->lo + 1;
    int elo = log2_floor(q->lo), ehi = log2_floor(q->hi);
    for (int k = 0; k < PT_HOOKTAB_VERIFY; k++) {
      uint64_t b;
      if (k % 2 == 0) {
        b = q->lo + next_rand(&seed) % span;
      } else { /* an octave of the piece, then a size in it: small sizes of a long piece get asked too */
        int e = elo + (int)(next_rand(&seed) % (uint64_t)(ehi - elo + 1));
        uint64_t a = UINT64_C(1) << e, z = (a << 1) - 1;
        if (a < q->lo) a = q->lo;
        if (z > q->hi) z = q->hi;
        b = a + next_rand(&seed) % (z - a + 1);
      }
      int rc = verify_at(p, t, b, count);
      if (rc < 0) return rc;
    }
  }
  return 0;
}

int pt_hooktab_resolve(pt_hooktab_fn fn, void *ctx, const char *hook, pt_sizetab *out, pt_hooktab_stats *stats, pt_err *err) {
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  probe p = {fn, ctx, hook, 0, pt_clock_s() + PT_HOOKTAB_MAX_SECONDS, err};
  uint64_t *s = NULL, *val = NULL;
  size_t n = 0;
  int rc = make_samples(&s, &n);
  if (rc == 0 && !(val = malloc(n * sizeof *val))) rc = PT_ENOMEM;
  if (rc == PT_ENOMEM) pt_err_set(err, rc, "%s: out of memory", hook);
  for (size_t i = 0; rc == 0 && i < n; i++) rc = ask(&p, s[i], &val[i]);
  pt_sizetab t = {0};
  uint64_t lo = 1;
  size_t j = 0; /* the first sample past lo */
  while (rc == 0 && lo <= PT_SIZETAB_LIMIT) {
    while (j < n && s[j] <= lo) j++;
    uint64_t v;
    if ((rc = ask(&p, lo, &v)) < 0) break;
    cand c[64];
    int nc = candidates(lo, v, c), best = 0;
    uint64_t best_end = 0;
    for (int k = 0; k < nc && rc == 0; k++) {
      uint64_t e;
      if ((rc = extent(&p, s, val, n, j, lo, &c[k], &e)) == 0 && e > best_end) best = k, best_end = e;
    }
    if (rc < 0) break;
    rc = pt_sizetab_append(&t, lo, best_end, c[best].form, c[best].arg);
    if (rc == PT_ELIMIT)
      rc = pt_err_set(err, PT_ELIMIT, "%s cannot be made a table: more than %d pieces (the %dth would start at %llu B, where the hook gives %llu)",
                      hook, PT_SIZETAB_MAX_PIECES, PT_SIZETAB_MAX_PIECES + 1, (unsigned long long)lo, (unsigned long long)v);
    else if (rc < 0)
      rc = pt_err_set(err, rc, "%s: internal: a piece at %llu B does not follow the last", hook, (unsigned long long)lo);
    lo = best_end + 1;
  }
  int bad;
  if (rc == 0 && pt_sizetab_check(&t, &bad, err) < 0) rc = pt_err_prefix(err, PT_EFORMAT, "%s cannot be made a table", hook);
  uint64_t verified = 0;
  if (rc == 0) rc = verify(&p, &t, &verified);
  if (stats) *stats = (pt_hooktab_stats){p.calls, n, verified};
  if (rc == 0) *out = t;
  free(s);
  free(val);
  return rc;
}

int pt_hooktab_resolve_policy(pt_policy *pol, pt_sizetab_set *out, int *page_size_dropped, pt_err *err) {
  memset(out, 0, sizeof *out);
  *page_size_dropped = 0;
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  const char *path = pt_policy_path(pol);
  if (h.should_collect)
    return pt_err_set(err, PT_EFORBID, "%s: should_collect cannot be made a table: its result depends on the state "
                                       "(reserved and allocated bytes), not on one size", path);
  *page_size_dropped = h.page_size != NULL;
  int rc = 0;
  if (h.round) rc = pt_hooktab_resolve(h.round, h.ctx, "round", &out->round, NULL, err);
  if (rc == 0 && h.segment_size) rc = pt_hooktab_resolve(h.segment_size, h.ctx, "segment_size", &out->segment_size, NULL, err);
  if (rc < 0) {
    memset(out, 0, sizeof *out);
    return pt_err_prefix(err, rc, "%s", path);
  }
  return 0;
}
