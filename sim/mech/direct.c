/*
 * direct.c — the "direct" mechanism: no allocator at all.  Every request is
 * one cudaMalloc and every free one cudaFree, so it is the baseline the
 * other mechanisms are measured against.
 *
 * A request is rounded up to 512 B.  cudaMalloc hands out memory in units of
 * at least that (its pointers are 256 B aligned and the driver sub-allocates
 * small requests from larger pages), so 512 B is a lower bound on what a
 * request holds; the policy's round hook may say more.  The segment_size
 * hook, when present, gives the bytes passed to cudaMalloc for a rounded
 * request.
 *
 * Segments alive at trace start are held as they were; one is cudaFree'd
 * when its last initial block is freed.  One that holds no block is the only
 * thing this mechanism can have cached: empty_cache frees it, and so does a
 * request that fails against the cap, before its one retry.
 */
#include <stdlib.h>

#include "mech.h"

#define NO_SEG UINT32_MAX

/* A live allocation; the handle is its index.  Free records chain through seg. */
typedef struct drec {
  uint64_t addr, bytes;
  uint32_t seg; /* initial segment it lies in, or NO_SEG */
} drec;

typedef struct dseg {
  uint64_t addr, bytes;
  uint64_t live;   /* initial blocks still allocated in it */
  int held;        /* not yet cudaFree'd */
} dseg;

typedef struct direct_state {
  pt_mech_env env;
  drec *recs;
  size_t nrecs, cap;
  uint64_t free_head; /* first unused record + 1; 0: none */
  dseg *segs;
  size_t nsegs, segcap;
  int started;        /* a request has been seen */
} direct_state;

static int oom(direct_state *st) { return pt_err_set(st->env.err, PT_ENOMEM, "direct: out of memory"); }

/* A record for a new allocation; 0 with *idx, or PT_ENOMEM. */
static int new_rec(direct_state *st, uint64_t *idx) {
  if (st->free_head) {
    *idx = st->free_head - 1;
    st->free_head = st->recs[*idx].addr;
    return 0;
  }
  if (st->nrecs == st->cap) {
    size_t cap = st->cap ? 2 * st->cap : 1024;
    drec *r = realloc(st->recs, cap * sizeof *r);
    if (!r) return oom(st);
    st->recs = r;
    st->cap = cap;
  }
  *idx = st->nrecs++;
  return 0;
}

static void drop_rec(direct_state *st, uint64_t idx) {
  st->recs[idx].addr = st->free_head; /* the free list reuses addr */
  st->recs[idx].bytes = 0;
  st->free_head = idx + 1;
}

/* cudaFree the initial segments nothing lives in; 1 when one was freed, 0 when none, or the driver's error. */
static int release_idle(direct_state *st) {
  int any = 0;
  for (size_t i = 0; i < st->nsegs; i++)
    if (st->segs[i].held && !st->segs[i].live) {
      int rc = pt_dev_free(st->env.dev, st->segs[i].addr, st->segs[i].bytes);
      if (rc < 0) return rc;
      st->segs[i].held = 0;
      any = 1;
    }
  return any;
}

static int direct_create(const pt_mech_env *env, void **state) {
  direct_state *st = calloc(1, sizeof *st);
  if (!st) return pt_err_set(env->err, PT_ENOMEM, "direct: out of memory");
  st->env = *env;
  *state = st;
  return 0;
}

static int direct_alloc(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  direct_state *st = state;
  const pt_policy_hooks *h = st->env.hooks;
  uint64_t size, idx, addr;
  int rc;
  (void)stream;
  st->started = 1;
  if ((rc = pt_mech_round(&st->env, "direct", bytes, &size)) < 0) return rc;
  if (h && h->segment_size) {
    uint64_t in = size;
    if ((rc = h->segment_size(h->ctx, in, &size, st->env.err)) < 0 ||
        (rc = pt_mech_check_hook_size(&st->env, "direct", "segment_size", in, size)) < 0)
      return rc;
  }
  if ((rc = new_rec(st, &idx)) < 0) return rc;
  rc = pt_dev_malloc(st->env.dev, size, &addr);
  if (rc == PT_EOOM) {
    st->env.counters->alloc_retries++;
    if ((rc = release_idle(st)) >= 0) rc = pt_dev_malloc(st->env.dev, size, &addr);
  }
  if (rc < 0) {
    drop_rec(st, idx);
    return rc;
  }
  st->recs[idx] = (drec){.addr = addr, .bytes = size, .seg = NO_SEG};
  *handle = idx;
  return 0;
}

static int direct_free(void *state, uint64_t handle) {
  direct_state *st = state;
  drec *r = &st->recs[handle];
  st->started = 1;
  int rc;
  if (r->seg == NO_SEG) {
    if ((rc = pt_dev_free(st->env.dev, r->addr, r->bytes)) < 0) return rc; /* still live */
  } else {
    dseg *s = &st->segs[r->seg];
    if (s->live == 1 && (rc = pt_dev_free(st->env.dev, s->addr, s->bytes)) < 0) return rc;
    if (--s->live == 0) s->held = 0;
  }
  drop_rec(st, handle);
  return 0;
}

static int direct_empty_cache(void *state) {
  direct_state *st = state;
  st->started = 1;
  int rc = release_idle(st);
  return rc < 0 ? rc : 0;
}

static int direct_init_segment(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable) {
  direct_state *st = state;
  (void)stream;
  (void)expandable; /* a mapped expandable range is held the same way */
  if (st->started) return pt_err_set(st->env.err, PT_EUSAGE, "direct: initial segment after the first request");
  if (st->nsegs == NO_SEG) return pt_err_set(st->env.err, PT_ELIMIT, "direct: too many initial segments");
  if (st->nsegs == st->segcap) {
    size_t cap = st->segcap ? 2 * st->segcap : 64;
    dseg *s = realloc(st->segs, cap * sizeof *s);
    if (!s) return oom(st);
    st->segs = s;
    st->segcap = cap;
  }
  int rc = pt_dev_adopt(st->env.dev, addr, bytes);
  if (rc == 0) st->segs[st->nsegs++] = (dseg){.addr = addr, .bytes = bytes, .held = 1};
  return rc;
}

/* Initial segments are few; a linear search at trace start is fine. */
static int direct_init_alloc(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle) {
  direct_state *st = state;
  uint64_t idx;
  (void)stream;
  if (st->started) return pt_err_set(st->env.err, PT_EUSAGE, "direct: initial block after the first request");
  for (size_t i = 0; i < st->nsegs; i++) {
    dseg *s = &st->segs[i];
    if (addr < s->addr || addr - s->addr >= s->bytes) continue;
    int rc = new_rec(st, &idx);
    if (rc < 0) return rc;
    st->recs[idx] = (drec){.addr = addr, .bytes = bytes, .seg = (uint32_t)i};
    s->live++;
    *handle = idx;
    return 0;
  }
  return pt_err_set(st->env.err, PT_EFORMAT, "direct: initial block at 0x%llx lies in no initial segment",
                    (unsigned long long)addr);
}

static uint64_t direct_addr_of(void *state, uint64_t handle) {
  const direct_state *st = state;
  return st->recs[handle].addr;
}

static void direct_destroy(void *state) {
  direct_state *st = state;
  if (!st) return;
  free(st->recs);
  free(st->segs);
  free(st);
}

static const pt_mech_param direct_params[] = {{NULL, 0, 0, PT_PARAM_REAL, 0, NULL, 0}};

const pt_mech_ops pt_mech_direct = {
    .name = "direct",
    .params = direct_params,
    .create = direct_create,
    .init_segment = direct_init_segment,
    .init_alloc = direct_init_alloc,
    .alloc = direct_alloc,
    .free = direct_free,
    .empty_cache = direct_empty_cache,
    .destroy = direct_destroy,
    .addr_of = direct_addr_of,
};
