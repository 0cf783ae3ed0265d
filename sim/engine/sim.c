/*
 * sim.c — the replay engine (see sim.h).
 *
 * One pass sets up the initial state (segments, then the blocks inside
 * them), a second replays requests in order.  Observed records are not acted
 * on: they give the recorded segment addresses (device.h) and the ground
 * truth reported beside the model's figures — except an observed OOM, which
 * is also a request (one that failed in the real run) and is tried.  A request the mechanism cannot
 * satisfy counts as an OOM; the workload would have raised, and its later
 * free is skipped.
 */
#include "sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bset.h"
#include "clock.h"
#include "json.h"
#include "sha256.h"
#include "u64map.h"

#define FAILED UINT64_MAX       /* handle of a request that hit OOM */
#define FREED (UINT64_MAX - 1)  /* handle slot of a block given back (or never made) */

static int observe(pt_trace_data *t);

/* The stream order's events renumbered 1, 2, ... by first sight, so that a mechanism's table of them is as large as
   the trace's events, whatever numbers the file gave them: 0 or PT_ENOMEM. */
static int dense_events(pt_order *o) {
  pt_u64map num = {0};
  int rc = 0;
  for (size_t i = 0; i < o->n && rc == 0; i++) {
    uint64_t *d = pt_u64map_get(&num, o->op[i].event), e = d ? *d : num.len + 1;
    if (!d && pt_u64map_put(&num, o->op[i].event, e) < 0) rc = PT_ENOMEM;
    o->op[i].event = e;
  }
  pt_u64map_free(&num);
  return rc;
}

int pt_trace_load(const char *path, const pt_trace_opts *opts, pt_err *err, pt_trace_data *out) {
  memset(out, 0, sizeof *out);
  pt_trace *t;
  pt_trace_opts o = opts ? *opts : (pt_trace_opts){.device = -1};
  o.keep_order = 1; /* every record's stream order, as every record */
  int rc = pt_trace_open(path, &o, err, &t);
  if (rc < 0) return rc;
  size_t cap = 4096;
  out->ev = malloc(cap * sizeof *out->ev);
  out->path = strdup(path);
  if (!out->ev || !out->path) {
    rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
    goto fail;
  }
  pt_u64map dense = {0}; /* trace id -> dense id, while live */
  pt_event ev;
  while ((rc = pt_trace_next(t, &ev, err)) > 0) {
    if (ev.kind == PT_EV_ALLOC || ev.kind == PT_EV_INIT_ALLOC) {
      if (pt_u64map_put(&dense, ev.id, out->nallocs) < 0) {
        rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
        break;
      }
      ev.id = out->nallocs++;
    } else if (ev.kind == PT_EV_FREE || ev.kind == PT_EV_ACCESS) {
      uint64_t *d = pt_u64map_get(&dense, ev.id); /* present: the reader checked liveness */
      uint64_t id = d ? *d : UINT64_MAX;
      if (ev.kind == PT_EV_FREE) pt_u64map_del(&dense, ev.id);
      ev.id = id;
    }
    if (out->n == cap) {
      pt_event *ne = realloc(out->ev, 2 * cap * sizeof *ne);
      if (!ne) {
        rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
        break;
      }
      out->ev = ne;
      cap *= 2;
    }
    out->ev[out->n++] = ev;
  }
  pt_u64map_free(&dense);
  if (rc == 0 && observe(out) < 0) rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  if (rc < 0) goto fail;
  out->info = *pt_trace_get_info(t);
  pt_trace_take_frames(t, &out->frames);
  pt_trace_take_pools(t, &out->pools);
  pt_trace_take_order(t, &out->order);
  pt_trace_close(t);
  if (dense_events(&out->order) < 0) {
    rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
    pt_trace_data_free(out);
    return rc;
  }
  return 0;
fail:
  pt_trace_close(t);
  pt_trace_data_free(out);
  return rc;
}

void pt_trace_data_free(pt_trace_data *t) {
  pt_frames_free(&t->frames);
  pt_pools_free(&t->pools);
  pt_order_free(&t->order);
  free(t->repeat);
  free(t->hints);
  free(t->ev);
  free(t->path);
  memset(t, 0, sizeof *t);
}

static unsigned char *put_le(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

void pt_trace_content_hash(const pt_trace_data *t, char out[65]) {
  pt_sha256 s;
  pt_sha256_init(&s);
  for (size_t i = 0; i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    unsigned char buf[2 + 6 * 8], *p = buf;
    *p++ = e->kind;
    *p++ = e->flags;
    p = put_le(p, e->id);
    p = put_le(p, e->bytes);
    p = put_le(p, e->addr);
    p = put_le(p, e->stream);
    p = put_le(p, e->offset);
    p = put_le(p, (uint64_t)e->time_us);
    pt_sha256_update(&s, buf, (size_t)(p - buf));
    if (e->pool && e->pool <= t->pools.n) { /* only then: a trace without pools hashes as before pools existed */
      p = put_le(buf, t->pools.id[e->pool - 1].first);
      p = put_le(p, t->pools.id[e->pool - 1].second);
      pt_sha256_update(&s, buf, (size_t)(p - buf));
    }
  }
  for (size_t i = 0; i < t->order.n; i++) { /* only with some: a trace without stream order hashes as before it existed */
    const pt_order_op *o = &t->order.op[i];
    unsigned char buf[1 + 3 * 8], *p = buf;
    *p++ = (unsigned char)o->wait;
    p = put_le(p, o->before);
    p = put_le(p, o->event);
    p = put_le(p, o->stream);
    pt_sha256_update(&s, buf, (size_t)(p - buf));
  }
  pt_sha256_final_hex(&s, out);
}

/* ---- run state ------------------------------------------------------------------ */

typedef struct run {
  pt_model_dev model;       /* the device */
  pt_device dev;            /* its books */
  int fault;                /* a mechanism's failure on a path that cannot return one */
  pt_pagetable *pt;         /* with a GPU description */
  pt_tlb *tlb;              /* with --tlb */
  int leaf_level[PT_NPAGE_SIZES];
  uint32_t sms;
  uint64_t unmaps_seen;     /* driver frees + unmaps at the last TLB flush */
  int recorded_accesses;    /* the trace has access records: no synthetic stream */
  pt_mech_counters counters;
  uint64_t *handles;        /* dense id -> mechanism handle, FAILED, or FREED */
  uint64_t allocated, peak_allocated;
  /* timeline: one point per window of `every` events, holding the window's maxima */
  pt_sim_point *points;
  size_t npoints, cap_points;
  uint64_t every, win_reserved, win_allocated;
  /* on a device the config gives: requests timed, blocks shown to the observer */
  const pt_sim_config *live;
  pt_sim_result *out;
  int stop_at_oom;
  uint64_t nlive;           /* on a device: blocks live, for own_live_* */
  unsigned pool;            /* the private pool the mechanism now serves (use_pool), 0: the default */
  /* request classes (sim.h), when classified: the trace's (pt_trace_data.repeat) */
  int classify, cls;        /* classified at all; the class of the request being made */
  pt_call_sizes repeat_sizes; /* the calls made in repeat-class requests */
  pt_call_sizes after_sizes, repeat_after_sizes; /* the requests' calls after a large one (device.h), and the repeats' */
  pt_call_sizes untimed;    /* the calls no request made (untimed_begin): not the requests' time */
  int count_work;           /* a cost is asked for: the free sets' work (bset.h) read around each request */
} run;

/* The mechanism told which pool the next record's memory comes from, when it keeps pools and that changed. */
static inline int use_pool(run *r, const pt_mech_ops *m, void *st, unsigned pool) {
  if (!m->use_pool || pool == r->pool) return 0;
  r->pool = pool;
  return m->use_pool(st, pool);
}

/* A request on a given device, timed; the observer sees the block outside the timing. */
/* A request's time (µs, from t0) and the allocator's own part of it (less the driver calls since calls0),
   kept by whether it made driver calls (the books' count was n0 before it). */
static float live_took(run *r, double t0, double calls0, uint64_t n0, uint64_t bytes) {
  double us = (pt_clock_s() - t0) * 1e6, own = us - (r->out->call_times->total_us - calls0);
  int k = 63 - __builtin_clzll(bytes | 1);
  if (r->dev.ncalls != n0) {
    r->out->own_call_us[k] += own;
    if (r->cls) r->out->own_call_repeat_us[k] += own;
  } else {
    r->out->own_us[k] += own;
    if (r->cls) r->out->own_repeat_us[k] += own;
    int b = 63 - __builtin_clzll(r->nlive + 1);
    if (b >= PT_LIVE_BINS) b = PT_LIVE_BINS - 1;
    r->out->own_live_n[b]++;
    r->out->own_live_us[b] += own;
  }
  return (float)us;
}

static int live_alloc(run *r, const pt_mech_ops *m, void *st, uint64_t bytes, uint64_t stream, uint64_t id, uint64_t *h) {
  uint64_t n0 = r->dev.ncalls;
  double calls0 = r->out->call_times->total_us, t0 = pt_clock_s();
  int rc = m->alloc(st, bytes, stream, h);
  r->out->alloc_us[r->out->nalloc_us++] = live_took(r, t0, calls0, n0, bytes);
  r->nlive += rc == 0;
  if (rc == 0 && r->live->on_alloc) rc = r->live->on_alloc(r->live->observer_ctx, m->addr_of(st, *h), bytes, id);
  return rc;
}

/* Free record i's block h the way the record says: after other streams' work (free_deferred), pending on the
   GPU (free_pending), or at once. */
static int free_record(const pt_trace_data *t, size_t i, const pt_mech_ops *m, void *st, uint64_t h) {
  unsigned fl = t->ev[i].flags;
  if ((fl & PT_EVF_DEFERRED) && m->free_deferred)
    return m->free_deferred(st, h, (fl & PT_EVF_GPU_LAG) ? t->ev[i].offset : PT_MECH_UNTIMED);
  return (fl & PT_EVF_GPU_LAG) && m->free_pending ? m->free_pending(st, h, t->ev[i].offset) : m->free(st, h);
}

static int live_free(run *r, const pt_trace_data *t, size_t i, const pt_mech_ops *m, void *st, uint64_t h) {
  const pt_event *e = &t->ev[i];
  int rc = r->live->on_free ? r->live->on_free(r->live->observer_ctx, m->addr_of(st, h), e->bytes, e->id) : 0;
  if (rc < 0) return rc;
  uint64_t bytes = e->bytes, n0 = r->dev.ncalls;
  double calls0 = r->out->call_times->total_us, t0 = pt_clock_s();
  rc = free_record(t, i, m, st, h);
  r->out->free_us[r->out->nfree_us++] = live_took(r, t0, calls0, n0, bytes);
  r->nlive -= r->nlive > 0;
  return rc;
}

static void on_reserved_change(void *ctx) {
  run *r = ctx;
  if (r->dev.reserved > r->win_reserved) r->win_reserved = r->dev.reserved;
  if (__builtin_expect(r->live != NULL, 0) && r->live->on_reserved) r->live->on_reserved(r->live->observer_ctx, r->dev.reserved);
}

static int close_window(run *r, uint64_t event, int64_t time_us) {
  if (r->npoints == r->cap_points) {
    size_t ncap = r->cap_points ? r->cap_points * 2 : 1024;
    pt_sim_point *np = realloc(r->points, ncap * sizeof *np);
    if (!np) return PT_ENOMEM;
    r->points = np;
    r->cap_points = ncap;
  }
  r->points[r->npoints++] = (pt_sim_point){event, time_us, r->win_reserved, r->win_allocated};
  r->win_reserved = r->dev.reserved;
  r->win_allocated = r->allocated;
  return 0;
}

/* Ground truth from the observed records: the recorded segment addresses,
   segment count and peak reserved, gathered once when the trace is loaded. */
/*
 * The request classes (sim.h), from the records alone: each allocation and free record is a repeat when its
 * size is that of one of the PT_REPEAT_WINDOW free records before it; by_free_distance counts how far back.
 */
static int classify(pt_trace_data *t) {
  if (!(t->repeat = calloc(t->n / 64 + 1, sizeof *t->repeat))) return PT_ENOMEM;
  uint64_t freed[PT_REPEAT_RING]; /* the last frees' sizes, the latest first */
  for (int k = 0; k < PT_REPEAT_RING; k++) freed[k] = UINT64_MAX;
  for (size_t i = 0; i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    if (e->kind != PT_EV_ALLOC && e->kind != PT_EV_FREE) continue;
    int back = 0;
    while (back < PT_REPEAT_RING && freed[back] != e->bytes) back++;
    t->by_free_distance[back]++;
    if (back < PT_REPEAT_WINDOW) t->repeat[i >> 6] |= UINT64_C(1) << (i & 63);
    if (e->kind == PT_EV_FREE) {
      memmove(freed + 1, freed, (PT_REPEAT_RING - 1) * sizeof freed[0]);
      freed[0] = e->bytes;
    }
  }
  return 0;
}

static int observe(pt_trace_data *t) {
  uint64_t reserved = 0, peak = 0, n = 0;
  if (classify(t) < 0) return PT_ENOMEM;
  for (size_t i = 0; i < t->n; i++) {
    n += t->ev[i].kind == PT_EV_SEG_ALLOC;
    t->synced |= (t->ev[i].flags & PT_EVF_SYNC) != 0;
  }
  if (n && !(t->hints = malloc(n * sizeof *t->hints))) return PT_ENOMEM;
  t->nhints = 0;
  for (size_t i = 0; i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    if (e->kind == PT_EV_SEG_ALLOC) t->hints[t->nhints++] = (pt_addr_hint){e->addr, e->bytes};
    if (e->kind == PT_EV_SEG_ALLOC || e->kind == PT_EV_SEG_MAP) t->observed_segment_allocs++;
    if (e->kind == PT_EV_SEG_FREE || e->kind == PT_EV_SEG_UNMAP) t->observed_segment_releases++;
    pt_trace_track_reserved(e, &reserved);
    if (reserved > peak) peak = reserved;
  }
  t->observed_peak_reserved_bytes = peak;
  return 0;
}

/* Set up the state captured at trace start: segments first, then blocks in them. */
/* An initial-state record the mechanism refused: its position, then the mechanism's reason (which names the
   segment or block: "initial block at 0x... lies in no free part of an initial segment"). */
static int initial_error(const pt_trace_data *t, size_t i, int rc, pt_err *err) {
  return pt_err_prefix(err, rc, "%s: record %zu (initial state)", t->path, i + 1);
}

static int initial_state(const pt_trace_data *t, const pt_mech_ops *m, void *st, run *r, pt_err *err) {
  int rc;
  for (size_t i = 0; i < t->n && (t->ev[i].kind == PT_EV_INIT_SEGMENT || t->ev[i].kind == PT_EV_INIT_ALLOC); i++) {
    const pt_event *e = &t->ev[i];
    if ((rc = use_pool(r, m, st, e->pool)) < 0 ||
        (e->kind == PT_EV_INIT_SEGMENT &&
         (rc = m->init_segment(st, e->addr, e->bytes, e->stream, e->flags & PT_SEGF_EXPANDABLE)) < 0))
      return initial_error(t, i, rc, err);
  }
  for (size_t i = 0; i < t->n && (t->ev[i].kind == PT_EV_INIT_SEGMENT || t->ev[i].kind == PT_EV_INIT_ALLOC); i++) {
    const pt_event *e = &t->ev[i];
    if (e->kind != PT_EV_INIT_ALLOC) continue;
    uint64_t h;
    if ((rc = use_pool(r, m, st, e->pool)) < 0 || (rc = m->init_alloc(st, e->addr, e->bytes, e->stream, &h)) < 0)
      return initial_error(t, i, rc, err);
    r->handles[e->id] = h;
    r->allocated += e->bytes;
  }
  if (r->allocated > r->peak_allocated) r->peak_allocated = r->allocated;
  return 0;
}

/*
 * The access stream.  Where the trace has access records ('x': which range
 * of an allocation a kernel touched), those are replayed; else the synthetic
 * model: every allocation is touched page by page after its alloc and again
 * before its free.  Page i goes to SM i mod SMs.  An unmap or free since the
 * last touch flushes the TLBs, as the driver's invalidation would.
 */
static void touch_at(run *r, const pt_mech_ops *m, void *st, uint64_t handle, uint64_t offset, uint64_t bytes) {
  if (!r->tlb || !m->addr_of || !bytes) return;
  uint64_t unmaps = r->dev.calls[PT_DRV_free] + r->dev.calls[PT_DRV_mem_unmap];
  if (unmaps != r->unmaps_seen) {
    pt_tlb_flush(r->tlb);
    r->unmaps_seen = unmaps;
  }
  uint64_t va = m->addr_of(st, handle) + offset, end = va + bytes;
  while (va < end) {
    uint64_t ps = pt_pagetable_page_at(r->pt, va);
    if (!ps) ps = UINT64_C(2) << 20; /* not in the model's tables: assume the driver's 2 MiB */
    int p = 63 - __builtin_clzll(ps);
    int idx = p == 12 ? 0 : p == 16 ? 1 : p == 21 ? 2 : 3;
    uint64_t page = va >> p;
    pt_tlb_access(r->tlb, (uint32_t)(page % r->sms), va, ps, (uint32_t)r->leaf_level[idx]);
    va = (page + 1) << p;
  }
}

static inline void touch(run *r, const pt_mech_ops *m, void *st, uint64_t handle, uint64_t bytes) {
  if (r->tlb && !r->recorded_accesses) touch_at(r, m, st, handle, 0, bytes);
}

/* A request or free of bytes into q, served with or without driver calls (the books' count was n0 before it). */
static inline void count_request(pt_req_sizes *q, const run *r, uint64_t n0, uint64_t bytes) {
  int k = 63 - __builtin_clzll(bytes | 1);
  if (r->dev.ncalls != n0) {
    q->n_call[k]++;
    q->bytes_call[k] += bytes;
  } else {
    q->n[k]++;
    q->bytes[k] += bytes;
  }
}

/* A repeat (sim.h: the trace's class of record i) begins: its calls are counted apart while it runs. */
static inline void repeat_begin(run *r, pt_sim_result *out) {
  r->cls = PT_REQ_REPEAT;
  r->dev.class_sizes = &r->repeat_sizes;
  r->dev.class_times = out->repeat_call_times; /* NULL but on a given device */
  r->dev.class_after_sizes = &r->repeat_after_sizes;
  r->dev.class_after_times = out->repeat_after_call_times;
}

/* ... and ends, counted among the repeats (the books' count was n0 before it). */
static inline void repeat_end(run *r, pt_sim_result *out, uint64_t n0, uint64_t bytes) {
  count_request(&out->req_repeat, r, n0, bytes);
  r->dev.class_sizes = NULL;
  r->dev.class_times = NULL;
  r->dev.class_after_sizes = NULL;
  r->dev.class_after_times = NULL;
  r->cls = PT_REQ_OTHER;
}

/*
 * Work no request does (the initial state, the try of a request that failed in the real run, the empty_cache a
 * capture begins with) begins: its calls are counted apart while it runs, so that the prediction prices what a
 * replay on the GPU times, the requests and frees (predicted_alloc_us; these are predicted_untimed_us).  Never
 * inside a request, so the books' second set is free.
 */
static inline void untimed_begin(run *r) {
  r->dev.class_sizes = &r->untimed;
  r->dev.class_times = NULL;
  r->dev.untimed = 1;
}

static inline void untimed_end(run *r) {
  r->dev.class_sizes = NULL;
  r->dev.untimed = 0;
}

/* What the mechanism does before record i that no request makes (fn: synchronize, empty_cache; NULL: nothing),
   its calls counted apart; what, for the error. */
static int before_record(run *r, int (*fn)(void *), void *st, const pt_trace_data *t, size_t i, const char *what,
                         pt_err *err) {
  if (!fn) return 0;
  untimed_begin(r);
  int rc = fn(st);
  untimed_end(r);
  return rc < 0 ? pt_err_prefix(err, rc, "%s: record %zu (%s)", t->path, i, what) : 0;
}

/* The free sets' work (bset.h) of one request or free, counted in out->work: w0 read before it. */
static inline pt_bset_work work_begin(const run *r) { return r->count_work ? pt_bset_work_read() : (pt_bset_work){0, 0, 0}; }

static inline void work_end(const run *r, pt_sim_result *out, pt_bset_work w0) {
  if (!r->count_work) return;
  pt_bset_work w = pt_bset_work_read();
  out->work.requests++;
  out->work.ops += w.ops - w0.ops;
  out->work.chunks += w.chunks - w0.chunks;
  out->work.visits += w.visits - w0.visits;
}

static inline int is_repeat(const pt_trace_data *t, size_t i) { return (int)(t->repeat[i >> 6] >> (i & 63)) & 1; }

/* The stream order before record i (the trace's ops from *at on with before == i), for a mechanism that follows it. */
static int order_before(const pt_trace_data *t, size_t i, size_t *at, const pt_mech_ops *m, void *st, pt_err *err) {
  for (; *at < t->order.n && t->order.op[*at].before <= i; ++*at) {
    const pt_order_op *op = &t->order.op[*at];
    if (op->before < i || !m->event_record) continue; /* a record without its flag: not this one's */
    int rc = op->wait ? m->stream_wait(st, op->stream, op->event) : m->event_record(st, op->event, op->stream);
    if (rc < 0) return pt_err_prefix(err, rc, "%s: record %zu (the stream order before it)", t->path, i);
  }
  return 0;
}

static int replay(const pt_trace_data *t, const pt_mech_ops *m, void *st, run *r, pt_sim_result *out, pt_err *err) {
  uint64_t win = 0;
  size_t order_at = 0;
  int rc;
  for (size_t i = 0; i < t->n; i++) {
    const pt_event *e = &t->ev[i];
    if (__builtin_expect(e->flags & (PT_EVF_SYNC | PT_EVF_CAPTURE | PT_EVF_ORDER), 0) &&
        ((rc = (e->flags & PT_EVF_ORDER) ? order_before(t, i, &order_at, m, st, err) : 0) < 0 ||
         (rc = before_record(r, (e->flags & PT_EVF_SYNC) ? m->synchronize : NULL, st, t, i, "the synchronisation before it",
                             err)) < 0 ||
         (rc = before_record(r, (e->flags & PT_EVF_CAPTURE) ? m->empty_cache : NULL, st, t, i,
                             "the empty_cache a CUDA graph capture begins with", err)) < 0))
      return rc;
    if (e->kind == PT_EV_ALLOC) {
      uint64_t h, n0 = r->dev.ncalls;
      out->allocs++;
      if ((rc = use_pool(r, m, st, e->pool)) < 0) return pt_err_prefix(err, rc, "%s: request %zu", t->path, i);
      int rep = r->classify && is_repeat(t, i);
      if (rep) repeat_begin(r, out);
      pt_bset_work w0 = work_begin(r);
      rc = __builtin_expect(r->live != NULL, 0) ? live_alloc(r, m, st, e->bytes, e->stream, e->id, &h)
                                                 : m->alloc(st, e->bytes, e->stream, &h);
      work_end(r, out, w0);
      count_request(&out->req, r, n0, e->bytes);
      if (rep) repeat_end(r, out, n0, e->bytes);
      if (rc == PT_EOOM && r->stop_at_oom) {
        return pt_err_set(err, PT_EOOM, "%s: request %zu (%" PRIu64 " bytes): out of GPU memory", t->path, i, e->bytes);
      } else if (rc == PT_EOOM) {
        out->ooms++;
        h = FAILED;
      } else if (rc < 0) {
        return pt_err_prefix(err, rc, "%s: request %zu (%" PRIu64 " bytes)", t->path, i, e->bytes);
      } else {
        r->allocated += e->bytes;
        if (r->allocated > r->peak_allocated) r->peak_allocated = r->allocated;
        if (r->allocated > r->win_allocated) r->win_allocated = r->allocated;
        touch(r, m, st, h, e->bytes);
      }
      r->handles[e->id] = h;
    } else if (e->kind == PT_EV_ACCESS) {
      uint64_t h = r->handles[e->id];
      if (h != FAILED && h != FREED) touch_at(r, m, st, h, e->offset, e->bytes);
    } else if (e->kind == PT_EV_OOM) {
      /* a request that failed in the real run: the model tries it too; if it
         fits here, it is given back at once (the workload stopped there) */
      uint64_t h;
      if ((rc = use_pool(r, m, st, 0)) < 0) return pt_err_prefix(err, rc, "%s: record %zu", t->path, i);
      untimed_begin(r);
      rc = m->alloc(st, e->bytes, e->stream, &h);
      int oom = rc == PT_EOOM;
      if (rc == 0) rc = m->free(st, h);
      untimed_end(r);
      if (oom) out->ooms++;
      else if (rc < 0) return pt_err_prefix(err, rc, "%s: failed request of %" PRIu64 " bytes", t->path, e->bytes);
    } else if (e->kind == PT_EV_FREE) {
      out->frees++;
      uint64_t *h = &r->handles[e->id];
      if (*h != FAILED) {
        uint64_t n0 = r->dev.ncalls;
        touch(r, m, st, *h, e->bytes);
        int rep = r->classify && is_repeat(t, i);
        if (rep) repeat_begin(r, out);
        pt_bset_work w0 = work_begin(r);
        rc = __builtin_expect(r->live != NULL, 0) ? live_free(r, t, i, m, st, *h)
             : __builtin_expect(e->flags & (PT_EVF_DEFERRED | PT_EVF_GPU_LAG), 0) ? free_record(t, i, m, st, *h)
                                                                                 : m->free(st, *h);
        work_end(r, out, w0);
        count_request(&out->req, r, n0, e->bytes);
        if (rep) repeat_end(r, out, n0, e->bytes);
        if (rc < 0) return pt_err_prefix(err, rc, "%s: record %zu (free)", t->path, i);
        r->allocated -= e->bytes;
      }
      *h = FREED;
    }
    if (r->fault) return pt_err_prefix(err, r->fault, "%s: record %zu", t->path, i);
    if (++win == r->every) {
      win = 0;
      if (close_window(r, i + 1, e->time_us) < 0) return pt_err_set(err, PT_ENOMEM, "out of memory");
    }
  }
  if (win && t->n && close_window(r, t->n, t->ev[t->n - 1].time_us) < 0)
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  out->events = t->n;
  return 0;
}

int pt_sim_run(const pt_trace_data *t, const pt_sim_config *cfg, pt_err *err, pt_sim_result *out) {
  memset(out, 0, sizeof *out);
  run r = {0};
  out->observed_segment_allocs = t->observed_segment_allocs;
  out->observed_peak_reserved_bytes = t->observed_peak_reserved_bytes;
  out->observed_segment_releases = t->observed_segment_releases;
  size_t nhints = cfg->invent_addresses ? 0 : cfg->given_addresses ? cfg->nmalloc_hints : t->nhints;
  const pt_addr_hint *hints = cfg->given_addresses ? cfg->malloc_hints : t->hints;
  r.handles = malloc((t->nallocs ? t->nallocs : 1) * sizeof *r.handles);
  if (!r.handles) return pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t i = 0; i < t->nallocs; i++) r.handles[i] = FREED;
  if (cfg->device_ops) {
    nhints = 0; /* a real device chooses its addresses */
    if (cfg->gpu && cfg->tlb) {
      free(r.handles);
      return pt_err_set(err, PT_EUSAGE, "a run on a real device has no TLB model");
    }
    size_t nreq = 0;
    for (size_t i = 0; i < t->n; i++) nreq += t->ev[i].kind == PT_EV_ALLOC;
    out->alloc_us = malloc((nreq ? nreq : 1) * sizeof *out->alloc_us);
    out->free_us = malloc((nreq ? nreq : 1) * sizeof *out->free_us);
    out->call_times = calloc(1, sizeof *out->call_times);
    out->call_sizes = calloc(1, sizeof *out->call_sizes);
    out->repeat_call_times = calloc(1, sizeof *out->repeat_call_times);
    out->repeat_call_sizes = calloc(1, sizeof *out->repeat_call_sizes);
    out->after_call_times = calloc(1, sizeof *out->after_call_times);
    out->repeat_after_call_times = calloc(1, sizeof *out->repeat_after_call_times);
    out->after_call_sizes = calloc(1, sizeof *out->after_call_sizes);
    out->repeat_after_call_sizes = calloc(1, sizeof *out->repeat_after_call_sizes);
    if (!out->alloc_us || !out->free_us || !out->call_times || !out->call_sizes || !out->repeat_call_times ||
        !out->repeat_call_sizes || !out->after_call_times || !out->repeat_after_call_times || !out->after_call_sizes ||
        !out->repeat_after_call_sizes) {
      free(r.handles);
      pt_sim_result_free(out);
      return pt_err_set(err, PT_ENOMEM, "out of memory");
    }
    r.live = cfg;
    r.out = out;
  }
  pt_model_dev_init(&r.model, hints, nhints, err);
  if (cfg->given_addresses && !cfg->invent_addresses) {
    r.model.va_hints = cfg->reserve_hints;
    r.model.nva_hints = cfg->nreserve_hints;
  }
  if (cfg->device_ops) pt_dev_init(&r.dev, cfg->device_ops, cfg->device_st, cfg->capacity, err);
  else pt_dev_init(&r.dev, &pt_model_dev_ops, &r.model, cfg->capacity, err);
  r.dev.on_change = on_reserved_change;
  r.dev.ctx = &r;
  r.dev.log = cfg->log;
  r.dev.times = out->call_times; /* NULL but on a given device */
  r.dev.tlog = cfg->call_tlog;
  if (cfg->gpu || cfg->device_ops) { /* a cost is asked for: the calls after a large one apart */
    r.dev.after_sizes = &r.after_sizes;
    r.dev.after_times = out->after_call_times; /* NULL but on a given device */
    out->after_counted = 1;
  }
  r.stop_at_oom = cfg->stop_at_oom;
  r.classify = out->classified = (cfg->gpu || cfg->device_ops) && t->repeat; /* a cost is asked for */
  r.count_work = cfg->gpu != NULL;
  if (out->classified) memcpy(out->by_free_distance, t->by_free_distance, sizeof out->by_free_distance);
  int rc = 0;
  if (cfg->gpu && !cfg->device_ops) { /* page tables are the model's */
    const pt_mmu_desc *mmu = cfg->gpu->mmu;
    rc = pt_pagetable_create(mmu, &r.pt);
    if (rc == 0 && cfg->tlb) rc = pt_tlb_create(&cfg->gpu->tlb, &r.tlb);
    if (rc < 0) {
      pt_pagetable_destroy(r.pt);
      free(r.handles);
      return pt_err_set(err, rc, "out of memory");
    }
    r.model.pt = r.pt;
    r.model.page_size = cfg->hooks.page_size;
    r.model.page_ctx = cfg->hooks.ctx;
    r.sms = cfg->gpu->tlb.sms ? cfg->gpu->tlb.sms : 1;
    for (int p = 0; p < PT_NPAGE_SIZES; p++) {
      r.leaf_level[p] = mmu->nlevels; /* a PTE-table page: below every directory */
      for (int l = 0; l < mmu->nlevels; l++)
        if (mmu->level[l].leaf_page == p) r.leaf_level[p] = l;
    }
  }
  size_t points = cfg->timeline_points ? cfg->timeline_points : 1000;
  r.every = t->n / points + 1;
  for (size_t i = 0; i < t->n && !r.recorded_accesses; i++) r.recorded_accesses = t->ev[i].kind == PT_EV_ACCESS;

  /* a mechanism that sizes VA by the GPU's memory (expandable) is told the described GPU's */
  pt_params params = cfg->params;
  if (cfg->gpu && cfg->gpu->memory_bytes && pt_params_get(&params, "device_total_bytes", -1) < 0)
    for (const pt_mech_param *mp = cfg->mech->params; mp && mp->name; mp++)
      if (!strcmp(mp->name, "device_total_bytes") && pt_params_set(&params, mp->name, (double)cfg->gpu->memory_bytes) < 0)
        rc = pt_err_set(err, PT_ELIMIT, "too many parameters");
  pt_mech_env env = {.dev = &r.dev, .counters = &r.counters, .params = &params, .hooks = &cfg->hooks,
                     .allocated = &r.allocated, .fault = &r.fault, .err = err, .trace_synced = t->synced || t->info.syncs_recorded};
  void *st = NULL;
  untimed_begin(&r); /* until the first record: what the mechanism sets up, the segments alive at the start */
  if (rc == 0) rc = pt_mech_create(cfg->mech, &env, &st);
  if (rc < 0) { /* what was made for the run goes with it: the books, the model's device, a device run's buffers */
    pt_dev_done(&r.dev);
    pt_model_dev_done(&r.model);
    pt_tlb_destroy(r.tlb);
    pt_pagetable_destroy(r.pt);
    free(r.handles);
    free(r.points);
    pt_sim_result_free(out);
    return rc;
  }
  double t0 = pt_clock_s();
  rc = initial_state(t, cfg->mech, st, &r, err);
  untimed_end(&r);
  r.win_reserved = r.dev.reserved;
  r.win_allocated = r.allocated;
  if (rc == 0 && r.fault) rc = pt_err_prefix(err, r.fault, "%s: initial state", t->path);
  if (rc == 0) rc = replay(t, cfg->mech, st, &r, out, err);
  out->seconds = pt_clock_s() - t0;

  out->peak_reserved_bytes = r.dev.peak_reserved;
  out->peak_allocated_bytes = r.peak_allocated;
  out->fragmentation = r.dev.peak_reserved ? 1.0 - (double)r.peak_allocated / (double)r.dev.peak_reserved : 0.0;
  out->segments_allocated = r.dev.segments_allocated;
  out->bytes_mapped_total = r.dev.bytes_mapped_total;
  out->alloc_retries = r.counters.alloc_retries;
  out->collections = r.counters.collections;
  out->cache_hits = r.counters.cache_hits;
  out->hit_splits = r.counters.hit_splits;
  out->free_merges = r.counters.free_merges;
  out->final_reserved_bytes = r.dev.reserved;
  memcpy(out->driver_calls, r.dev.calls, sizeof out->driver_calls);
  memcpy(out->driver_bytes, r.dev.call_bytes, sizeof out->driver_bytes);
  out->segment_releases = r.dev.calls[PT_DRV_free] + r.counters.unmap_ranges;
  out->addresses_followed = pt_model_dev_on_path(&r.model);
  out->timeline = r.points;
  out->ntimeline = r.npoints;
  if (cfg->gpu) {
    out->has_gpu = 1;
    if (r.pt) { /* the model's page tables; none on a real device */
      out->page_table = *pt_pagetable_get_stats(r.pt);
      out->mmu = cfg->gpu->mmu;
    }
    pt_cost_model cost = pt_gpu_cost_of(cfg->gpu, cfg->mech->name);
    pt_call_sizes timed = r.dev.sizes; /* the requests' calls: every call less the untimed (a subset) */
    for (int k = 0; k < PT_DRV_NCALLS; k++)
      for (int j = 0; j < PT_SIZE_CLASSES; j++) {
        timed.calls[k][j] -= r.untimed.calls[k][j];
        timed.bytes[k][j] -= r.untimed.bytes[k][j];
      }
    pt_call_books books = {&timed, &r.repeat_sizes, &r.after_sizes, &r.repeat_after_sizes};
    out->predicted_alloc_us = pt_cost_alloc_total_us(&cost, &books, &out->req, &out->req_repeat, &out->work);
    books.all = &r.dev.sizes; /* each kind's calls, the untimed too */
    for (int k = 0; k < PT_DRV_NCALLS; k++) {
      out->predicted_untimed_us += pt_cost_calls_us(&cost.call[k], r.untimed.calls[k], r.untimed.bytes[k]);
      out->predicted_call_us[k] = pt_cost_kind_us(&cost, k, &books);
    }
    out->gpu_note = cfg->gpu->note;
  }
  if (r.tlb) {
    out->has_tlb = 1;
    out->tlb = *pt_tlb_get_stats(r.tlb);
    out->predicted_translation_us = pt_tlb_miss_ns(r.tlb) / 1000.0;
  }

  /* give every live block back before the mechanism goes, so it owns all memory
     (not logged: the calls counted above are the run's, and a replay cleans up on its own) */
  r.dev.log = NULL;
  r.dev.times = NULL;
  r.dev.tlog = NULL;
  if (out->call_sizes) *out->call_sizes = r.dev.sizes;
  if (out->repeat_call_sizes) *out->repeat_call_sizes = r.repeat_sizes;
  if (out->after_call_sizes) {
    *out->after_call_sizes = r.after_sizes;
    *out->repeat_after_call_sizes = r.repeat_after_sizes;
  }
  for (int c = 0; c < PT_DRV_NCALLS; c++)
    for (int k = 0; k < PT_SIZE_CLASSES; k++) {
      out->repeat_driver_calls[c] += r.repeat_sizes.calls[c][k];
      out->after_driver_calls[c] += r.after_sizes.calls[c][k];
    }
  for (size_t i = 0; i < t->nallocs; i++)
    if (r.handles[i] != FAILED && r.handles[i] != FREED) cfg->mech->free(st, r.handles[i]);
  if (cfg->device_ops && cfg->mech->empty_cache) { /* a real device gets its memory back, graphs' pools too */
    for (size_t k = 1; cfg->mech->release_pool && k <= t->pools.n; k++) cfg->mech->release_pool(st, (unsigned)k);
    int erc = cfg->mech->empty_cache(st);
    if (rc == 0 && erc < 0) rc = pt_err_prefix(err, erc, "%s: giving the memory back", t->path);
  }
  cfg->mech->destroy(st);
  pt_dev_done(&r.dev);
  pt_model_dev_done(&r.model);
  pt_tlb_destroy(r.tlb);
  pt_pagetable_destroy(r.pt);
  free(r.handles);
  if (rc < 0) {
    pt_sim_result_free(out);
    return rc;
  }
  return 0;
}

void pt_sim_result_free(pt_sim_result *r) {
  free(r->timeline);
  r->timeline = NULL;
  r->ntimeline = 0;
  free(r->alloc_us);
  free(r->free_us);
  free(r->call_times);
  free(r->call_sizes);
  free(r->repeat_call_times);
  free(r->repeat_call_sizes);
  free(r->after_call_times);
  free(r->repeat_after_call_times);
  free(r->after_call_sizes);
  free(r->repeat_after_call_sizes);
  r->after_call_times = r->repeat_after_call_times = NULL;
  r->after_call_sizes = r->repeat_after_call_sizes = NULL;
  r->call_times = NULL;
  r->call_sizes = NULL;
  r->repeat_call_times = NULL;
  r->repeat_call_sizes = NULL;
  r->alloc_us = r->free_us = NULL;
  r->nalloc_us = r->nfree_us = 0;
}

/* ---- printers ------------------------------------------------------------------ */


static const char *const page_names[PT_NPAGE_SIZES] = {"4K", "64K", "2M", "512M"};

static double rate(uint64_t part, uint64_t whole) { return whole ? (double)part / (double)whole : 0.0; }

/* What the model may and may not claim (docs/design.md): said in every report. */
static const char translation_note[] =
    "through the CUDA VMM API a policy picks handle sizes (2 MiB multiples) and VA layout, not the hardware "
    "page size: page sizes other than the driver's are a model-only dimension";

void pt_sim_print_text(FILE *f, const pt_sim_result *r) {
#define PT_PRINT_U(f_, v) fprintf(f, "%-30s %15" PRIu64, #f_, v)
#define PT_PRINT_D(f_, v) fprintf(f, "%-30s %15.4f", #f_, v)
#define PT_X(t, fld, h) PT_PRINT_##t(fld, r->fld), fprintf(f, "  %s\n", h);
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#undef PT_PRINT_U
#undef PT_PRINT_D
  fprintf(f, "driver calls:");
  for (int i = 0; i < PT_DRV_NCALLS; i++)
    if (r->driver_calls[i]) fprintf(f, " %s=%" PRIu64, pt_drv_call_names[i], r->driver_calls[i]);
  fprintf(f, "\nrecorded segment addresses followed: %s\n", r->addresses_followed ? "yes" : "no");
  if (r->has_gpu && r->mmu) {
    const pt_pagetable_stats *p = &r->page_table;
    fprintf(f, "\npage tables (MMU %s): %" PRIu64 " PTE writes, %" PRIu64 " invalidations, %" PRIu64
               " fall-backs (%" PRIu64 " bytes)\n  peak table bytes:",
            r->mmu->name, p->pte_writes, p->pte_invalidations, p->fallbacks, p->fallback_bytes);
    for (int l = 0; l < r->mmu->nlevels; l++) fprintf(f, " %s=%" PRIu64, r->mmu->level[l].name, p->peak_table_bytes[l]);
    fprintf(f, " PTE64K=%" PRIu64 " PTE4K=%" PRIu64 "\n  bytes mapped by page size:", p->peak_table_bytes[PT_MMU_MAX_LEVELS],
            p->peak_table_bytes[PT_MMU_MAX_LEVELS + 1]);
    for (int i = 0; i < PT_NPAGE_SIZES; i++) fprintf(f, " %s=%" PRIu64, page_names[i], p->mapped_by_page[i]);
    fprintf(f, "\npredicted allocator time: %.1f us\n", r->predicted_alloc_us);
    if (r->predicted_untimed_us > 0)
      fprintf(f, "  and %.1f us of driver calls no request made (initial state, failed requests tried), not in it\n",
              r->predicted_untimed_us);
  }
  if (r->has_tlb && r->mmu) {
    const pt_tlb_stats *t = &r->tlb;
    fprintf(f, "TLB: %" PRIu64 " accesses, L1 hit rate %.4f, L2 hit rate %.4f, %" PRIu64
               " walks, walk-cache hit rate %.4f\npredicted translation time: %.1f us\n",
            t->accesses, rate(t->l1_hits, t->accesses), rate(t->l2_hits, t->accesses - t->l1_hits), t->walks,
            rate(t->pwc_hits, t->pwc_hits + t->pwc_misses), r->predicted_translation_us);
  }
  if (r->has_gpu) fprintf(f, "note: %s\n", translation_note);
  if (r->gpu_note && r->gpu_note[0]) fprintf(f, "note: %s\n", r->gpu_note);
}

void pt_sim_print_calls_json(FILE *f, const char *key, const uint64_t calls[PT_DRV_NCALLS]) {
  fprintf(f, "\"%s\":{", key);
  for (int i = 0; i < PT_DRV_NCALLS; i++) fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", pt_drv_call_names[i], calls[i]);
  fputc('}', f);
}

void pt_sim_print_json_members(FILE *f, const pt_sim_result *r, int with_timeline) {
  const char *sep = "";
#define PT_JSON_U(f_, v) fprintf(f, "%s\"%s\":%" PRIu64, sep, #f_, v)
#define PT_JSON_D(f_, v) fprintf(f, "%s\"%s\":%.6g", sep, #f_, isfinite(v) ? v : 0.0)
#define PT_X(t, fld, h) PT_JSON_##t(fld, r->fld), sep = ",";
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#undef PT_JSON_U
#undef PT_JSON_D
  fputc(',', f);
  pt_sim_print_calls_json(f, "driver_calls", r->driver_calls);
  fputc(',', f);
  pt_sim_print_calls_json(f, "driver_bytes", r->driver_bytes);
  fprintf(f, ",\"addresses_followed\":%s", r->addresses_followed ? "true" : "false");
  fprintf(f, ",\"segment_releases\":%" PRIu64 ",\"observed_segment_releases\":%" PRIu64, r->segment_releases,
          r->observed_segment_releases);
  if (r->classified) { /* the class axis (sim.h): what a prediction priced by class */
    uint64_t n = 0, nc = 0;
    for (int k = 0; k < PT_SIZE_CLASSES; k++) n += r->req_repeat.n[k], nc += r->req_repeat.n_call[k];
    fprintf(f, ",\"request_classes\":{\"repeat_window\":%d,\"repeat_requests\":%" PRIu64
               ",\"repeat_requests_with_calls\":%" PRIu64 ",",
            PT_REPEAT_WINDOW, n + nc, nc);
    pt_sim_print_calls_json(f, "repeat_driver_calls", r->repeat_driver_calls);
    fputs(",\"by_free_distance\":[", f);
    for (int d = 0; d <= PT_REPEAT_RING; d++) fprintf(f, "%s%" PRIu64, d ? "," : "", r->by_free_distance[d]);
    fprintf(f, "],\"cache_hit_splits\":%" PRIu64 ",\"free_merges\":%" PRIu64 "}", r->hit_splits, r->free_merges);
  }
  if (r->has_gpu) fprintf(f, ",\"predicted_alloc_us\":%.6g,\"predicted_untimed_us\":%.6g,\"work\":{\"requests\":%" PRIu64
                             ",\"set_ops\":%" PRIu64 ",\"set_chunks\":%" PRIu64 ",\"visits\":%" PRIu64 "}",
                          r->predicted_alloc_us, r->predicted_untimed_us, r->work.requests, r->work.ops, r->work.chunks,
                          r->work.visits);
  else fputs(",\"predicted_alloc_us\":null,\"predicted_untimed_us\":null", f); /* never predicted: no GPU description */
  if (r->after_counted) { /* the requests' calls after a large one (device.h): what a cost_after_large line prices */
    fputc(',', f);
    pt_sim_print_calls_json(f, "after_large_driver_calls", r->after_driver_calls);
  }
  if (r->has_gpu && r->mmu) { /* stored runs keep no page-table detail */
    const pt_pagetable_stats *p = &r->page_table;
    fprintf(f, ",\"page_table\":{\"mmu\":\"%s\",\"levels\":%d,\"pte_writes\":%" PRIu64 ",\"pte_invalidations\":%" PRIu64
               ",\"fallbacks\":%" PRIu64 ",\"fallback_bytes\":%" PRIu64 ",\"table_bytes\":{",
            r->mmu->name, r->mmu->nlevels + 1, p->pte_writes, p->pte_invalidations, p->fallbacks, p->fallback_bytes);
    for (int l = 0; l < r->mmu->nlevels; l++) fprintf(f, "\"%s\":%" PRIu64 ",", r->mmu->level[l].name, p->peak_table_bytes[l]);
    fprintf(f, "\"PTE64K\":%" PRIu64 ",\"PTE4K\":%" PRIu64 "},\"by_page_size\":{", p->peak_table_bytes[PT_MMU_MAX_LEVELS],
            p->peak_table_bytes[PT_MMU_MAX_LEVELS + 1]);
    for (int i = 0; i < PT_NPAGE_SIZES; i++) fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", page_names[i], p->mapped_by_page[i]);
    fputs("}}", f);
  }
  if (r->has_tlb && r->mmu) {
    const pt_tlb_stats *t = &r->tlb;
    fprintf(f, ",\"tlb\":{\"accesses\":%" PRIu64 ",\"l1_hit_rate\":%.6g,\"l2_hit_rate\":%.6g,\"walks\":%" PRIu64
               ",\"walk_cache_hit_rate\":%.6g}",
            t->accesses, rate(t->l1_hits, t->accesses), rate(t->l2_hits, t->accesses - t->l1_hits), t->walks,
            rate(t->pwc_hits, t->pwc_hits + t->pwc_misses));
  }
  if (r->has_tlb) fprintf(f, ",\"predicted_translation_us\":%.6g", r->predicted_translation_us);
  if (r->has_gpu) fprintf(f, ",\"translation_note\":\"%s\"", translation_note);
  if (r->gpu_note && r->gpu_note[0]) {
    fputs(",\"gpu_note\":", f);
    pt_json_str(f, r->gpu_note);
  }
  if (!with_timeline) return;
  fputs(",\"timeline\":{\"event\":[", f);
  for (size_t i = 0; i < r->ntimeline; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", r->timeline[i].event);
  fputs("],\"time_us\":[", f);
  for (size_t i = 0; i < r->ntimeline; i++) fprintf(f, "%s%" PRId64, i ? "," : "", r->timeline[i].time_us);
  fputs("],\"reserved_bytes\":[", f);
  for (size_t i = 0; i < r->ntimeline; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", r->timeline[i].reserved);
  fputs("],\"allocated_bytes\":[", f);
  for (size_t i = 0; i < r->ntimeline; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", r->timeline[i].allocated);
  fputs("]}", f);
}
