/*
 * test_caching.c — the model of PyTorch's caching allocator.
 *
 * Hand-computed cases for each rule (rounding, pools, segment sizes, best
 * fit by address, splitting, merging, oversize limits, retry and OOM under a
 * cap), then fidelity: on every real trace captured on the H200, replaying
 * the requests with the settings of that capture reproduces the number of
 * segments the real allocator created and its peak reserved bytes, exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bset.h"
#include "mech.h"
#include "sim.h"
#include "testutil.h"

#define MiB (UINT64_C(1) << 20)

typedef struct fixture {
  pt_model_dev model;
  pt_device dev;
  uint64_t allocated;
  int fault;
  pt_mech_counters counters;
  pt_params params;
  pt_policy_hooks hooks;
  pt_err err;
  void *st;
} fixture;

static void setup(fixture *f, uint64_t capacity) {
  memset(f, 0, sizeof *f);
  pt_model_dev_init(&f->model, NULL, 0, &f->err);
  pt_dev_init(&f->dev, &pt_model_dev_ops, &f->model, capacity, &f->err);
}

static void create(fixture *f) {
  pt_mech_env env = {.dev = &f->dev, .counters = &f->counters, .params = &f->params, .hooks = &f->hooks, .err = &f->err,
                     .allocated = &f->allocated, .fault = &f->fault};
  CU_ASSERT_EQUAL_FATAL(pt_mech_create(&pt_mech_caching, &env, &f->st), 0);
}

static uint64_t alloc(fixture *f, uint64_t bytes, uint64_t stream) {
  uint64_t h = 0;
  CU_ASSERT_EQUAL(pt_mech_caching.alloc(f->st, bytes, stream, &h), 0);
  return h;
}

/* The address a handle stands for: blocks begin with their free-set node, then addr. */
typedef struct peek {
  pt_bnode node;
  uint64_t addr, size, stream;
} peek;
static uint64_t addr_of(uint64_t h) { return ((const peek *)(uintptr_t)h)->addr; }
static uint64_t size_of(uint64_t h) { return ((const peek *)(uintptr_t)h)->size; }

static void test_small_pool(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  uint64_t a = alloc(&f, 1, 0), b = alloc(&f, 1000, 0), c = alloc(&f, MiB, 0);
  CU_ASSERT_EQUAL(size_of(a), 512);          /* minimum block */
  CU_ASSERT_EQUAL(size_of(b), 1024);         /* 512-byte rounding */
  CU_ASSERT_EQUAL(size_of(c), MiB);          /* 1 MiB is still small */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 1); /* all in one 2 MiB segment */
  CU_ASSERT_EQUAL(f.dev.reserved, 2 * MiB);
  CU_ASSERT_EQUAL(addr_of(b), addr_of(a) + 512);  /* front of the free block */
  CU_ASSERT_EQUAL(addr_of(c), addr_of(b) + 1024);
  uint64_t d = alloc(&f, MiB, 0);             /* 2 MiB - 1.5 KiB left: new segment */
  uint64_t a_addr = addr_of(a);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.free(f.st, b);              /* merges with a */
  uint64_t e = alloc(&f, 1500, 0);            /* best fit: the merged 1.5 KiB hole */
  CU_ASSERT_EQUAL(addr_of(e), a_addr);
  CU_ASSERT_EQUAL(f.counters.cache_hits, 3);  /* b, c, e came from the cache */
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.free(f.st, d);
  pt_mech_caching.free(f.st, e);
  CU_ASSERT_EQUAL(pt_mech_caching.empty_cache(f.st), 0);
  CU_ASSERT_EQUAL(f.dev.reserved, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 2);
  pt_mech_caching.destroy(f.st);
}

static void test_large_pool(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  uint64_t a = alloc(&f, MiB + 1, 0);         /* large pool: a 20 MiB segment */
  CU_ASSERT_EQUAL(size_of(a), MiB + 512);
  CU_ASSERT_EQUAL(f.dev.call_bytes[PT_DRV_malloc], 20 * MiB);
  /* 18 MiB fits the 19 MiB - 512 rest; what remains (1 MiB - 512) is not > 1 MiB: no split */
  uint64_t b = alloc(&f, 18 * MiB, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 1);
  CU_ASSERT_EQUAL(addr_of(b), addr_of(a) + MiB + 512);
  CU_ASSERT_EQUAL(size_of(b), 19 * MiB - 512);
  /* 12 MiB + 1: >= 10 MiB, so its own segment rounded up to 2 MiB: 14 MiB; 2 MiB - 512 left: split */
  uint64_t c = alloc(&f, 12 * MiB + 1, 0);
  CU_ASSERT_EQUAL(f.dev.call_bytes[PT_DRV_malloc], 34 * MiB);
  CU_ASSERT_EQUAL(size_of(c), 12 * MiB + 512);
  /* 1 MiB + 513 rounds to 1 MiB + 1 KiB and takes that rest (best fit); 1 MiB - 1.5 KiB left: kept whole */
  uint64_t d = alloc(&f, MiB + 513, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_EQUAL(addr_of(d), addr_of(c) + 12 * MiB + 512);
  CU_ASSERT_EQUAL(size_of(d), 2 * MiB - 512);
  uint64_t a_addr = addr_of(a);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.free(f.st, b);             /* merges with a: the whole segment again */
  uint64_t e = alloc(&f, 20 * MiB, 0);       /* ... which a 20 MiB request now takes */
  CU_ASSERT_EQUAL(addr_of(e), a_addr);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.free(f.st, d);
  pt_mech_caching.free(f.st, e);
  pt_mech_caching.destroy(f.st);
}

static void test_no_split_small_rest(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  /* a 12 MiB segment for a 11 MiB + 1 request: 1 MiB - 512 left, not split */
  uint64_t a = alloc(&f, 11 * MiB + 1, 0);
  CU_ASSERT_EQUAL(f.dev.call_bytes[PT_DRV_malloc], 12 * MiB);
  CU_ASSERT_EQUAL(size_of(a), 12 * MiB);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 1);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.destroy(f.st);
}

static void test_best_fit_by_address_and_stream(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  uint64_t a = alloc(&f, 4 * MiB, 0), gap1 = alloc(&f, 2 * MiB, 0), b = alloc(&f, 4 * MiB, 0),
           gap2 = alloc(&f, 2 * MiB, 0);
  uint64_t a_addr = addr_of(a);
  pt_mech_caching.free(f.st, b); /* two free 4 MiB holes: b (higher) then a (lower) */
  pt_mech_caching.free(f.st, a);
  uint64_t c = alloc(&f, 4 * MiB, 0);
  CU_ASSERT_EQUAL(addr_of(c), a_addr); /* equal sizes: lowest address wins */
  uint64_t s = alloc(&f, 4 * MiB, 7);      /* another stream never takes stream 0's blocks */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.free(f.st, s);
  pt_mech_caching.free(f.st, gap1);
  pt_mech_caching.free(f.st, gap2);
  pt_mech_caching.destroy(f.st);
}

static void test_roundup_power2(void) {
  fixture f;
  setup(&f, 0);
  pt_params_set(&f.params, "roundup_power2_divisions", 4);
  create(&f);
  /* 1200 KiB: interval [1 MiB, 2 MiB) in quarters -> 1.25 MiB */
  uint64_t a = alloc(&f, 1200 * 1024, 0);
  CU_ASSERT_EQUAL(size_of(a), 1280 * 1024);
  uint64_t b = alloc(&f, 5 * MiB + 1, 0);   /* [4, 8) MiB in quarters -> 6 MiB */
  CU_ASSERT_EQUAL(size_of(b), 6 * MiB);
  uint64_t c = alloc(&f, 4 * MiB, 0);       /* a power of two stays */
  CU_ASSERT_EQUAL(size_of(c), 4 * MiB);
  uint64_t d = alloc(&f, 1000, 0);          /* below 512 x 4: plain 512 rounding */
  CU_ASSERT_EQUAL(size_of(d), 1024);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.free(f.st, b);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.free(f.st, d);
  pt_mech_caching.destroy(f.st);
}

/*
 * The list form, as PyTorch 2.11 reads [256:1,512:2,1024:4,>:8]: entries 0..8
 * (everything below 512 MiB) 1 division, so 512-byte rounding only; [512 MiB,
 * 1 GiB) halves; [1, 2) GiB quarters; from 2 GiB eighths.  Sizes by hand.
 */
static void test_roundup_power2_list(void) {
  fixture f;
  setup(&f, 0);
  double num;
  pt_plist l;
  char why[200];
  CU_ASSERT_EQUAL_FATAL(pt_param_value_parse("[256:1,512:2,1024:4,>:8]", &num, &l, why, sizeof why), 0);
  CU_ASSERT_EQUAL_FATAL(pt_params_set_list(&f.params, "roundup_power2_divisions", &l), 0);
  create(&f);
  struct {
    uint64_t bytes, want;
  } cases[] = {
      {300 * MiB + 1, 300 * MiB + 512},           /* [256, 512) MiB: 1 division */
      {100 * MiB + 7, 100 * MiB + 512},           /* below 256 MiB: the first entry's 1 */
      {600 * MiB, 768 * MiB},                     /* [512 MiB, 1 GiB) in halves */
      {513 * MiB, 768 * MiB},
      {1229 * MiB, 1280 * MiB},                   /* [1, 2) GiB in quarters */
      {2560 * MiB + 1, 2816 * MiB},               /* from 2 GiB in eighths: 256 MiB steps */
      {2560 * MiB, 2560 * MiB},                   /* on a division: stays */
      {4096 * MiB, 4096 * MiB},                   /* a power of two stays */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t h = alloc(&f, cases[i].bytes, 0);
    CU_ASSERT_EQUAL(size_of(h), cases[i].want);
    pt_mech_caching.free(f.st, h);
  }
  pt_mech_caching.destroy(f.st);
  /* the closest single value, 8, rounds the first two differently: 320 MiB and 104 MiB */
  setup(&f, 0);
  pt_params_set(&f.params, "roundup_power2_divisions", 8);
  create(&f);
  uint64_t a = alloc(&f, 300 * MiB + 1, 0), b = alloc(&f, 100 * MiB + 7, 0);
  CU_ASSERT_EQUAL(size_of(a), 320 * MiB);
  CU_ASSERT_EQUAL(size_of(b), 104 * MiB);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.free(f.st, b);
  pt_mech_caching.destroy(f.st);
}

static void test_max_split(void) {
  fixture f;
  setup(&f, 0);
  pt_params_set(&f.params, "max_split_size_mb", 64);
  create(&f);
  uint64_t big = alloc(&f, 100 * MiB, 0);
  pt_mech_caching.free(f.st, big);
  /* a small request may not take the oversize cached block */
  uint64_t a = alloc(&f, 30 * MiB, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  /* a large one may, if it wastes less than max_non_split_rounding (20 MiB) */
  uint64_t b = alloc(&f, 90 * MiB, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_EQUAL(size_of(b), 100 * MiB); /* not split */
  pt_mech_caching.free(f.st, b);
  uint64_t c = alloc(&f, 70 * MiB, 0);    /* 30 MiB waste: no */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 3);
  pt_mech_caching.free(f.st, a);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.destroy(f.st);
}

static void test_capacity_retry_and_oom(void) {
  fixture f;
  setup(&f, 60 * MiB);
  create(&f);
  uint64_t a = alloc(&f, 30 * MiB, 0);
  pt_mech_caching.free(f.st, a);            /* 30 MiB cached */
  uint64_t b = alloc(&f, 40 * MiB, 0);      /* 30 + 40 > 60: free cache, retry */
  CU_ASSERT_EQUAL(f.counters.alloc_retries, 1);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 1);
  CU_ASSERT_EQUAL(f.dev.reserved, 40 * MiB);
  uint64_t h;
  CU_ASSERT_EQUAL(pt_mech_caching.alloc(f.st, 30 * MiB, 0, &h), PT_EOOM);
  CU_ASSERT_EQUAL(f.counters.alloc_retries, 2);
  pt_mech_caching.free(f.st, b);
  pt_mech_caching.destroy(f.st);
}

static void test_bad_params(void) {
  fixture f;
  setup(&f, 0);
  pt_params_set(&f.params, "roundup_power2_divisions", 3);
  pt_mech_env env = {.dev = &f.dev, .counters = &f.counters, .params = &f.params, .hooks = &f.hooks, .err = &f.err};
  CU_ASSERT(pt_mech_create(&pt_mech_caching, &env, &f.st) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(f.err.msg, "power of two"));
}

/* ---- the free-block set ------------------------------------------------------------ */

/*
 * The ordered set against a sorted array: random inserts, erases (by node and
 * through lower_bound_link) and every query, on keys with few streams and few
 * sizes so that ties on stream and size are common.
 */
static int bkey_qcmp(const void *a, const void *b) {
  return pt_bkey_cmp(&(*(pt_bnode *const *)a)->key, &(*(pt_bnode *const *)b)->key);
}

static pt_bnode *ref_find(pt_bnode **ref, size_t n, const pt_bkey *k, int want) {
  /* want: 0 = first >= k, 1 = first > k, 2 = last < k */
  pt_bnode *hit = NULL;
  for (size_t i = 0; i < n; i++) {
    int c = pt_bkey_cmp(&ref[i]->key, k);
    if (want == 2 ? c < 0 : want == 1 ? c > 0 : c >= 0) {
      hit = ref[i];
      if (want != 2) break;
    }
  }
  return hit;
}

/* An emptied set keeps answering: nothing found, nothing erased, and it fills again. */
static void test_bset_empty_again(void) {
  pt_bset s = {0};
  pt_bnode a = {{0, 512, 0}, NULL}, b = {{0, 512, 512}, NULL}, absent = {{0, 1024, 0}, NULL};
  pt_bkey any = {0, 0, 0};
  for (int round = 0; round < 2; round++) {
    CU_ASSERT_PTR_NULL(pt_bset_first(&s));
    CU_ASSERT_PTR_NULL(pt_bset_lower_bound(&s, &any));
    CU_ASSERT_PTR_NULL(pt_bset_before(&s, &absent.key));
    pt_bset_erase(&s, &absent); /* not in the set: nothing happens */
    CU_ASSERT_EQUAL(s.len, 0);
    CU_ASSERT_EQUAL(pt_bset_insert(&s, &b), 0);
    CU_ASSERT_EQUAL(pt_bset_insert(&s, &a), 0);
    CU_ASSERT_PTR_EQUAL(pt_bset_first(&s), &a);
    CU_ASSERT_PTR_EQUAL(pt_bset_next(&s, &a), &b);
    CU_ASSERT_PTR_EQUAL(pt_bset_before(&s, &absent.key), &b);
    CU_ASSERT_PTR_NULL(pt_bset_lower_bound(&s, &absent.key));
    pt_bset_erase(&s, &absent);
    CU_ASSERT_EQUAL(s.len, 2);
    pt_bset_erase(&s, &a);
    pt_bset_erase(&s, &b);
  }
  pt_bset_free(&s);
}

/* The work counters (bset.h): one op a call of each kind, the chunks a set had at each insert, and the keys of
   the chunk each search looks at.  20 keys ascending into an empty set: the first sees no chunk, the next 15
   one, the 17th one (it splits the full chunk in two), the last 3 two: 0 + 15 + 1 + 6 = 22 chunks; visits: the
   first searches nothing, the next 15 the one chunk's 1..15 keys, the 17th its 16, the last 3 go above every
   chunk's last key and search no chunk: 120 + 16 = 136.  Then the first chunk holds 8 keys: the two lower
   bounds look at 8 each; erase_pos searches nothing; upper_bound, before and next at 7, the erase by node its
   chunk's 7: 8 + 8 + 7 + 7 + 7 + 7 = 44 (first looks at none). */
static void test_bset_work_counts(void) {
  static pt_bnode n[20];
  pt_bset s = {0};
  pt_bset_work w0 = pt_bset_work_read();
  for (int i = 0; i < 20; i++) {
    n[i].key = (pt_bkey){0, 512, (uint64_t)i * 512};
    CU_ASSERT_EQUAL_FATAL(pt_bset_insert(&s, &n[i]), 0);
  }
  pt_bset_work w1 = pt_bset_work_read();
  CU_ASSERT_EQUAL(w1.ops - w0.ops, 20);
  CU_ASSERT_EQUAL(w1.chunks - w0.chunks, 22);
  CU_ASSERT_EQUAL(w1.visits - w0.visits, 136);
  CU_ASSERT_EQUAL(s.nchunks, 2);
  pt_bpos pos;
  CU_ASSERT_PTR_EQUAL(pt_bset_lower_bound(&s, &n[3].key), &n[3]);
  CU_ASSERT_PTR_EQUAL(pt_bset_lower_bound_pos(&s, &n[4].key, &pos), &n[4]);
  pt_bset_erase_pos(&s, pos);
  CU_ASSERT_PTR_EQUAL(pt_bset_upper_bound(&s, &n[3].key), &n[5]);
  CU_ASSERT_PTR_EQUAL(pt_bset_before(&s, &n[3].key), &n[2]);
  CU_ASSERT_PTR_EQUAL(pt_bset_first(&s), &n[0]);
  CU_ASSERT_PTR_EQUAL(pt_bset_next(&s, &n[0]), &n[1]);
  pt_bset_erase(&s, &n[0]);
  pt_bset_work w2 = pt_bset_work_read();
  CU_ASSERT_EQUAL(w2.ops - w1.ops, 8);
  CU_ASSERT_EQUAL(w2.chunks, w1.chunks); /* only inserts add chunks */
  CU_ASSERT_EQUAL(w2.visits - w1.visits, 44);
  pt_bset_work_visit(5); /* a mechanism's own walk */
  CU_ASSERT_EQUAL(pt_bset_work_read().visits - w2.visits, 5);
  pt_bset_free(&s);
}

static void test_bset_against_sorted_array(void) {
  enum { CAP = 600, OPS = 60000 };
  static pt_bnode nodes[CAP];
  pt_bnode *ref[CAP];
  size_t n = 0, used = 0, mismatches = 0, most = 0, chunks = 0;
  pt_bset s = {0};
  uint64_t x = 88172645463325252ull;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
  pt_bnode *spare[CAP];
  size_t nspare = 0;
  pt_bset other = {0}; /* a second set, and a node in s that never enters it */
  pt_bnode in_other = {{1, 512, 0}, NULL}, stranger = {{UINT64_MAX, 512, 0}, NULL};
  CU_ASSERT_EQUAL_FATAL(pt_bset_insert(&other, &in_other), 0);
  CU_ASSERT_EQUAL_FATAL(pt_bset_insert(&s, &stranger), 0); /* above every random key */
  for (int op = 0; op < OPS; op++) {
    unsigned what = (unsigned)(RND() % 8);
    pt_bkey k = {RND() % 3 * 0x7f00, (RND() % 12 + 1) * 512, (RND() % 4096) * 512};
    if (what < 3 && (nspare || used < CAP)) { /* insert, unless the key is present */
      if (ref_find(ref, n, &k, 0) && pt_bkey_cmp(&ref_find(ref, n, &k, 0)->key, &k) == 0) continue;
      pt_bnode *node = nspare ? spare[--nspare] : &nodes[used++];
      node->key = k;
      mismatches += pt_bset_insert(&s, node) != 0;
      ref[n++] = node;
      qsort(ref, n, sizeof *ref, bkey_qcmp);
    } else if (what < 5 && n) { /* erase a random member by node */
      if (nspare) pt_bset_erase(&s, spare[RND() % nspare]); /* one erased before: nothing happens */
      pt_bset_erase(&other, &stranger); /* a member of s, erased from another set: nothing happens */
      size_t i = (size_t)(RND() % n);
      pt_bnode *node = ref[i];
      pt_bset_erase(&s, node);
      memmove(&ref[i], &ref[i + 1], (n - i - 1) * sizeof *ref);
      n--;
      spare[nspare++] = node;
    } else if (what == 5) { /* best fit and remove in one descent */
      pt_bpos pos;
      pt_bnode *got = pt_bset_lower_bound_pos(&s, &k, &pos), *want = ref_find(ref, n, &k, 0);
      mismatches += got != (want ? want : &stranger);
      if (got && want) {
        pt_bset_erase_pos(&s, pos);
        size_t i = 0;
        while (ref[i] != want) i++;
        memmove(&ref[i], &ref[i + 1], (n - i - 1) * sizeof *ref);
        n--;
        spare[nspare++] = want;
      }
    } else { /* queries */
      pt_bnode *lb = ref_find(ref, n, &k, 0), *ub = ref_find(ref, n, &k, 1); /* none: the stranger, above all */
      mismatches += pt_bset_lower_bound(&s, &k) != (lb ? lb : &stranger);
      mismatches += pt_bset_upper_bound(&s, &k) != (ub ? ub : &stranger);
      mismatches += pt_bset_before(&s, &k) != ref_find(ref, n, &k, 2);
    }
    mismatches += s.len != n + 1 || other.len != 1 || pt_bset_first(&other) != &in_other;
    if (n > most) most = n;
    if (s.nchunks > chunks) chunks = s.nchunks;
    if (op % 997 == 0) { /* the whole order, walked */
      size_t i = 0;
      for (pt_bnode *t = pt_bset_first(&s); t; t = pt_bset_next(&s, t), i++) mismatches += i < n ? t != ref[i] : t != &stranger;
      mismatches += i != n + 1;
    }
  }
  pt_bset_erase(&other, &stranger); /* still nothing */
  mismatches += s.len != n + 1;
  pt_bset_erase(&s, &stranger);
  mismatches += s.len != n || stranger.chunk != NULL;
  pt_bset_free(&other);
  while (n) { /* then empty it in random order: chunks merge down to one */
    size_t i = (size_t)(RND() % n);
    pt_bset_erase(&s, ref[i]);
    memmove(&ref[i], &ref[i + 1], (n - i - 1) * sizeof *ref);
    n--;
    mismatches += s.len != n || pt_bset_first(&s) != (n ? ref[0] : NULL);
    pt_bkey mid = n ? ref[n / 2]->key : (pt_bkey){0, 0, 0};
    mismatches += pt_bset_before(&s, &mid) != (n > 1 ? ref[n / 2 - 1] : NULL);
  }
  CU_ASSERT_EQUAL(s.nchunks, 1);
#undef RND
  CU_ASSERT_EQUAL(mismatches, 0);
  CU_ASSERT(most > 8 * PT_BSET_CHUNK); /* the set grew to many chunks */
  CU_ASSERT(chunks > 8);

  pt_bset_free(&s);
  CU_ASSERT_PTR_NULL(pt_bset_first(&s));
}

/*
 * Private pools (use_pool, PyTorch's PrivatePool): a pool's free blocks
 * serve only its own requests, the default pool's serve none of a private
 * pool's, and empty_cache frees the default pool's whole segments only.
 */
static void test_private_pools(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pt_mech_caching.use_pool);
  uint64_t a = alloc(&f, MiB, 0), seg_a = addr_of(a);
  pt_mech_caching.free(f.st, a);                 /* the default pool: one whole free 2 MiB segment */
  CU_ASSERT_EQUAL(pt_mech_caching.use_pool(f.st, 1), 0);
  uint64_t b = alloc(&f, MiB, 0), seg_b = addr_of(b);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2); /* not the default pool's free segment */
  CU_ASSERT_NOT_EQUAL(seg_b, seg_a);
  pt_mech_caching.free(f.st, b);                 /* pool 1: one whole free segment */
  CU_ASSERT_EQUAL(pt_mech_caching.use_pool(f.st, 0), 0);
  uint64_t c = alloc(&f, MiB, 0);
  CU_ASSERT_EQUAL(addr_of(c), seg_a);            /* the default pool's own, not pool 1's */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  pt_mech_caching.free(f.st, c);
  CU_ASSERT_EQUAL(pt_mech_caching.empty_cache(f.st), 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 1);  /* the default pool's segment; pool 1's lives on */
  CU_ASSERT_EQUAL(f.dev.reserved, 2 * MiB);
  CU_ASSERT_EQUAL(pt_mech_caching.use_pool(f.st, 2), 0);
  uint64_t d = alloc(&f, MiB, 0);                /* another private pool: not pool 1's free segment */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 3);
  CU_ASSERT_NOT_EQUAL(addr_of(d), seg_b);
  CU_ASSERT_EQUAL(pt_mech_caching.use_pool(f.st, 1), 0);
  uint64_t e = alloc(&f, MiB, 0);                /* back in pool 1: its cached segment */
  CU_ASSERT_EQUAL(addr_of(e), seg_b);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 3);
  pt_mech_caching.free(f.st, d);                 /* frees go to the block's own pool, whichever is current */
  CU_ASSERT_EQUAL(pt_mech_caching.use_pool(f.st, 2), 0);
  uint64_t g = alloc(&f, MiB, 0);
  CU_ASSERT_EQUAL(addr_of(g), addr_of(d));
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 3);
  pt_mech_caching.free(f.st, g);
  pt_mech_caching.free(f.st, e);
  CU_ASSERT_EQUAL(pt_mech_caching.empty_cache(f.st), 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 1);  /* both private pools keep their segments */
  CU_ASSERT_EQUAL(f.dev.reserved, 4 * MiB);
  pt_mech_caching.release_pool(f.st, 1);         /* pool 1's graph goes (releasePool): freed at the next release */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 1);
  CU_ASSERT_EQUAL(pt_mech_caching.empty_cache(f.st), 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_free], 2);
  CU_ASSERT_EQUAL(f.dev.reserved, 2 * MiB);      /* pool 2's stays */
  pt_mech_caching.destroy(f.st);
}

/* ---- fidelity on the real traces ------------------------------------------------- */

static const struct {
  const char *trace;
  uint64_t capacity;
  double gc, max_split_mb, rp2;
  uint64_t ooms, retries;
} real[] = {
    {"traces/randn_loop.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/cnn_train.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/transformer_train.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/varlen_infer.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/llm_decode.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/weights_load.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/two_streams.pickle.gz", 0, 0, INFINITY, 0, 0, 0},
    {"traces/rp2.pickle.gz", 0, 0, INFINITY, 4, 0, 0},
    {"traces/gc_cap.pickle.gz", 378702643, 0.6, 64, 0, 0, 2},
    {"traces/cap_retry.pickle.gz", 631171072, 0, INFINITY, 0, 0, 1},
    {"traces/cap_retry_oom.pickle.gz", 378702643, 0, INFINITY, 0, 1, 2},
    {"traces/knobs/graph_pool.pickle.gz", 0, 0, INFINITY, 0, 0, 0}, /* a CUDA graph's private pool */
};

static void test_fidelity(void) {
  for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
    pt_err err = {{0}};
    pt_trace_data t;
    CU_ASSERT_EQUAL_FATAL(pt_trace_load(pt_test_src(real[i].trace), NULL, &err, &t), 0);
    pt_sim_config cfg = {.mech = &pt_mech_caching, .capacity = real[i].capacity};
    pt_params_set(&cfg.params, "garbage_collection_threshold", real[i].gc);
    pt_params_set(&cfg.params, "max_split_size_mb", real[i].max_split_mb);
    pt_params_set(&cfg.params, "roundup_power2_divisions", real[i].rp2);
    pt_sim_result r;
    CU_ASSERT_EQUAL_FATAL(pt_sim_run(&t, &cfg, &err, &r), 0);
    if (r.segments_allocated != r.observed_segment_allocs || r.peak_reserved_bytes != r.observed_peak_reserved_bytes)
      fprintf(stderr, "\n  %s: model %llu segments / %llu peak, real %llu / %llu\n", real[i].trace,
              (unsigned long long)r.segments_allocated, (unsigned long long)r.peak_reserved_bytes,
              (unsigned long long)r.observed_segment_allocs, (unsigned long long)r.observed_peak_reserved_bytes);
    CU_ASSERT_EQUAL(r.segments_allocated, r.observed_segment_allocs);
    CU_ASSERT_EQUAL(r.peak_reserved_bytes, r.observed_peak_reserved_bytes);
    CU_ASSERT_EQUAL(r.segment_releases, r.observed_segment_releases);
    CU_ASSERT_EQUAL(r.ooms, real[i].ooms);
    CU_ASSERT_EQUAL(r.alloc_retries, real[i].retries);
    pt_sim_result_free(&r);
    pt_trace_data_free(&t);
  }
}

/*
 * should_split in the large pool splits only when the rest is strictly more
 * than kSmallSize (PyTorch: `remaining > kSmallSize`): a rest of exactly
 * 1 MiB stays with the block, 1 MiB + 512 is split off.
 */
static void test_split_rest_exactly_1mib(void) {
  fixture f;
  setup(&f, 0);
  create(&f);
  /* 19 MiB >= 10 MiB: its own segment, rounded up to 2 MiB: 20 MiB; rest exactly 1 MiB: not split */
  uint64_t a = alloc(&f, 19 * MiB, 0);
  CU_ASSERT_EQUAL(f.dev.call_bytes[PT_DRV_malloc], 20 * MiB);
  CU_ASSERT_EQUAL(size_of(a), 20 * MiB);
  /* 512 less: rest 1 MiB + 512 > 1 MiB: split */
  uint64_t b = alloc(&f, 19 * MiB - 512, 0);
  CU_ASSERT_EQUAL(f.dev.call_bytes[PT_DRV_malloc], 40 * MiB);
  CU_ASSERT_EQUAL(size_of(b), 19 * MiB - 512);
  /* the same rule on a cached block: a's 20 MiB, freed, for 19 MiB again: rest 1 MiB, kept whole */
  uint64_t a_addr = addr_of(a);
  pt_mech_caching.free(f.st, a);
  uint64_t c = alloc(&f, 19 * MiB, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_EQUAL(addr_of(c), a_addr);
  CU_ASSERT_EQUAL(size_of(c), 20 * MiB);
  /* b's split-off rest (1 MiB + 512) is a free block: a request of that size takes it, no driver call */
  uint64_t d = alloc(&f, MiB + 512, 0);
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_EQUAL(addr_of(d), addr_of(b) + 19 * MiB - 512);
  pt_mech_caching.free(f.st, b);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.free(f.st, d);
  pt_mech_caching.destroy(f.st);
}

/*
 * get_free_block's oversize limits at their boundaries (PyTorch:
 * `rs < max_split_size && size >= max_split_size` and
 * `rs >= max_split_size && size >= rs + max_non_split_rounding_size` reject
 * the block): with max_split 64 MiB and the default rounding of 20 MiB, a
 * cached 100 MiB block serves 80 MiB + 512 (waste just under 20 MiB) but
 * not 80 MiB (waste exactly 20 MiB); a request of exactly max_split is an
 * oversize request and may take a cached 80 MiB block.
 */
static void test_non_split_rounding_boundary(void) {
  fixture f;
  setup(&f, 0);
  pt_params_set(&f.params, "max_split_size_mb", 64);
  create(&f);
  uint64_t big = alloc(&f, 100 * MiB, 0);
  uint64_t big_addr = addr_of(big);
  pt_mech_caching.free(f.st, big);
  uint64_t a = alloc(&f, 80 * MiB + 512, 0);  /* 100 < 80 + 512 + 20: taken, not split */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 1);
  CU_ASSERT_EQUAL(addr_of(a), big_addr);
  CU_ASSERT_EQUAL(size_of(a), 100 * MiB);
  pt_mech_caching.free(f.st, a);
  uint64_t b = alloc(&f, 80 * MiB, 0);        /* 100 >= 80 + 20: refused, a new segment */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_NOT_EQUAL(addr_of(b), big_addr);
  CU_ASSERT_EQUAL(size_of(b), 80 * MiB);
  pt_mech_caching.free(f.st, b);              /* cached now: 80 MiB and 100 MiB */
  uint64_t c = alloc(&f, 64 * MiB, 0);        /* rs == max_split: oversize; 80 < 64 + 20: taken */
  CU_ASSERT_EQUAL(f.dev.calls[PT_DRV_malloc], 2);
  CU_ASSERT_EQUAL(size_of(c), 80 * MiB);
  pt_mech_caching.free(f.st, c);
  pt_mech_caching.destroy(f.st);
}

int pt_test_add_caching(void) {
  CU_pSuite s = CU_add_suite("caching", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "small pool: rounding, one 2 MiB segment, merge, best fit", test_small_pool);
  CU_add_test(s, "large pool: 20 MiB segments, 2 MiB rounding, splitting", test_large_pool);
  CU_add_test(s, "large block not split when 1 MiB or less remains", test_no_split_small_rest);
  CU_add_test(s, "best fit: lowest address among equals, per stream", test_best_fit_by_address_and_stream);
  CU_add_test(s, "roundup_power2_divisions", test_roundup_power2);
  CU_add_test(s, "roundup_power2_divisions, list form [256:1,512:2,1024:4,>:8]", test_roundup_power2_list);
  CU_add_test(s, "max_split_size_mb and max_non_split_rounding", test_max_split);
  CU_add_test(s, "capacity: free cached and retry, then OOM", test_capacity_retry_and_oom);
  CU_add_test(s, "bad parameters refused", test_bad_params);
  CU_add_test(s, "private pools: blocks kept apart, empty_cache frees the default pool's only", test_private_pools);
  CU_add_test(s, "free-block set: 60k random operations against a sorted array", test_bset_against_sorted_array);
  CU_add_test(s, "free-block set: emptied, it answers and fills again", test_bset_empty_again);
  CU_add_test(s, "free-block set: work counters, one a call, chunks at each insert", test_bset_work_counts);
  CU_add_test(s, "fidelity on every real H200 trace", test_fidelity);
  CU_add_test(s, "large pool: a rest of exactly 1 MiB is not split, 1 MiB + 512 is", test_split_rest_exactly_1mib);
  CU_add_test(s, "oversize limits at their boundaries (max_non_split_rounding, max_split)",
              test_non_split_rounding_boundary);
  return CU_get_error();
}
