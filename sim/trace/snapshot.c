/*
 * snapshot.c — PyTorch memory snapshots as a trace source (see snapshot.h).
 *
 * The pickle is streamed (decompressed by the trace layer) through the
 * data-only unpickler: each entry of device_traces[D] is converted as it is
 * read and then freed, so memory holds the records, the distinct frames and
 * what the pickle's memo must keep, never the file.  The records are
 * gathered at open into an array: the initial state first (found only by the
 * end), then the events in trace order.  Each record keeps the index of the
 * trace entry it came from, so a later check can name "device_traces[D][I]".
 */
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "u64map.h"

#define SRC_STATE UINT32_MAX  /* record from `segments`, not the trace */
#define FRAME_TEXT_MAX 4096   /* longer file or function names are cut there */
#define STACK_MAX 256         /* frames kept of one stack, innermost first */

typedef struct snap_state {
  pt_event *ev;
  uint32_t *src;    /* trace index each record came from, or SRC_STATE */
  size_t len, cap, pos;
} snap_state;

/* What next() hands out: the initial state, then the events. */
typedef struct snap_reader {
  snap_state part[2];
  int cur;          /* the part next() reads */
  int device;
} snap_reader;

static int snapshot_probe(const uint8_t *head, size_t len) {
  return len >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5; /* PROTO n */
}

static int push(snap_state *st, const pt_event *ev, uint32_t src) {
  if (st->len == st->cap) {
    size_t ncap = st->cap ? st->cap * 2 : 4096;
    pt_event *ne = realloc(st->ev, ncap * sizeof *ne);
    if (!ne) return PT_ENOMEM;
    st->ev = ne;
    uint32_t *ns = realloc(st->src, ncap * sizeof *ns);
    if (!ns) return PT_ENOMEM;
    st->src = ns;
    st->cap = ncap;
  }
  st->ev[st->len] = *ev;
  st->src[st->len] = src;
  st->len++;
  return 0;
}

/* An int field of a dict entry; absent or not an int is an error. */
static int get_int(const pt_pyobj *d, const char *key, int64_t *out) {
  const pt_pyobj *v = pt_py_get(d, key);
  if (!v || (v->type != PT_PY_INT && v->type != PT_PY_BOOL)) return -1;
  *out = v->u.i;
  return 0;
}

/* Allocator settings as one line of "key=value;..." (scalars and int lists). */
static void settings_text(const pt_pyobj *set, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  if (!set || set->type != PT_PY_DICT) return;
  for (size_t i = 0; i < set->u.dict.len && len + 1 < n; i++) {
    const pt_pyobj *k = set->u.dict.kv[2 * i], *v = set->u.dict.kv[2 * i + 1];
    if (k->type != PT_PY_STR) continue;
    char val[256];
    switch (v->type) {
    case PT_PY_INT: snprintf(val, sizeof val, "%lld", (long long)v->u.i); break;
    case PT_PY_BOOL: snprintf(val, sizeof val, "%s", v->u.i ? "True" : "False"); break;
    case PT_PY_FLOAT: snprintf(val, sizeof val, "%g", v->u.f); break;
    case PT_PY_STR: snprintf(val, sizeof val, "%.*s", (int)(v->u.s.len > 200 ? 200 : v->u.s.len), v->u.s.ptr); break;
    case PT_PY_LIST:
    case PT_PY_TUPLE: {
      size_t m = 0;
      val[m++] = '[';
      for (size_t j = 0; j < v->u.seq.len && m + 24 < sizeof val; j++) {
        const pt_pyobj *it = v->u.seq.items[j];
        if (it->type == PT_PY_INT || it->type == PT_PY_BOOL)
          m += (size_t)snprintf(val + m, sizeof val - m, "%s%lld", j ? "," : "", (long long)it->u.i);
      }
      val[m++] = ']';
      val[m] = 0;
      break;
    }
    default: continue;
    }
    int w = snprintf(buf + len, n - len, "%s%.*s=%s", len ? ";" : "",
                     (int)(k->u.s.len > 64 ? 64 : k->u.s.len), k->u.s.ptr, val);
    if (w < 0) break;
    len += (size_t)w;
    if (len >= n) len = n - 1;
  }
  for (size_t i = 0; i < len; i++)
    if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
}

enum act { ACT_SKIP, ACT_ALLOC, ACT_FREE, ACT_FREE_REQ, ACT_SEG_ALLOC, ACT_SEG_FREE, ACT_MAP, ACT_UNMAP, ACT_OOM };

static enum act action_of(const pt_pyobj *a) {
  static const struct { const char *name; enum act act; } tab[] = {
      {"alloc", ACT_ALLOC},           {"free_completed", ACT_FREE}, {"segment_alloc", ACT_SEG_ALLOC},
      {"segment_free", ACT_SEG_FREE}, {"segment_map", ACT_MAP},     {"segment_unmap", ACT_UNMAP},
      {"oom", ACT_OOM},               {"free_requested", ACT_FREE_REQ}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (pt_py_is_str(a, tab[i].name)) return tab[i].act;
  return ACT_SKIP; /* snapshot, and actions newer than this reader */
}

/*
 * Conversion state.  live maps a block address to its id while allocated;
 * segs maps a segment address to its size while it exists (created in the
 * trace, or found to be initial).
 */
typedef struct conv {
  snap_state *st;
  snap_state init;      /* initial-state records, emitted first */
  pt_u64map live, segs;
  pt_u64map requested;  /* a block's address -> 1 + the index of its free_requested, until its free_completed */
  uint64_t next_id;
  int dev;
  pt_frames *frames;    /* the trace's, shared by every device's conversion */
  pt_u64map *known;     /* frame dicts that live to the end -> their frame id: PyTorch shares them */
  int stacks;           /* frames wanted (no --strip-frames) */
} conv;

static int str_of(const pt_pyobj *o, const char **s, size_t *n) {
  if (!o || o->type != PT_PY_STR) return -1;
  *s = o->u.s.ptr;
  *n = o->u.s.len > FRAME_TEXT_MAX ? FRAME_TEXT_MAX : o->u.s.len;
  return 0;
}

/* The stack id of a `frames` list ({filename, line, name} dicts, innermost
 * first); 0 when there is none.  Frames of another shape are skipped. */
static int stack_of(conv *c, const pt_pyobj *frames, uint32_t *sid) {
  uint32_t fids[STACK_MAX];
  size_t n = 0, len = pt_py_len(frames);
  *sid = 0;
  if (!c->stacks) return 0;
  for (size_t i = 0; i < len && n < STACK_MAX; i++) {
    const pt_pyobj *f = pt_py_index(frames, i);
    const char *file, *name;
    size_t fl, nl;
    int64_t line = 0;
    int lives = pt_py_lives(f);
    uint64_t *k = lives ? pt_u64map_get(c->known, (uint64_t)(uintptr_t)f) : NULL;
    if (k) {
      fids[n++] = (uint32_t)*k;
      continue;
    }
    if (!f || f->type != PT_PY_DICT || str_of(pt_py_get(f, "filename"), &file, &fl) < 0 ||
        str_of(pt_py_get(f, "name"), &name, &nl) < 0)
      continue;
    (void)get_int(f, "line", &line);
    if (line < 0 || line > UINT32_MAX) line = 0;
    if (pt_frames_intern_frame(c->frames, file, fl, name, nl, (uint32_t)line, &fids[n]) < 0 ||
        (lives && pt_u64map_put(c->known, (uint64_t)(uintptr_t)f, fids[n]) < 0))
      return PT_ENOMEM;
    n++;
  }
  return pt_frames_intern_stack(c->frames, fids, n, sid);
}

static int convert_entry(conv *c, const pt_pyobj *e, uint32_t idx, pt_err *err) {
  const pt_pyobj *act = pt_py_get(e, "action");
  if (!act || act->type != PT_PY_STR)
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: entry without an action", c->dev, idx);
  enum act a = action_of(act);
  if (a == ACT_SKIP) return 0;
  int64_t addr = 0, size, stream = 0, t = 0;
  if (a == ACT_FREE_REQ) /* PyTorch logs it at the free; free_completed follows at once unless other streams
                            used the block (record_stream), whose work the free then waited for */
    return get_int(e, "addr", &addr) < 0 || addr < 0 ? 0
           : pt_u64map_put(&c->requested, (uint64_t)addr, (uint64_t)idx + 1) < 0 ? PT_ENOMEM : 0;
  if (get_int(e, "size", &size) < 0 || (a != ACT_OOM && get_int(e, "addr", &addr) < 0))
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: %.*s entry without int addr/size",
                      c->dev, idx, (int)act->u.s.len, act->u.s.ptr);
  if (size < 0 || addr < 0)
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: negative %s", c->dev, idx,
                      size < 0 ? "size" : "addr");
  (void)get_int(e, "stream", &stream); /* optional in old snapshots; a handle, so not negative (past 2^63) */
  if (stream < 0) return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: negative stream", c->dev, idx);
  (void)get_int(e, "time_us", &t);
  pt_event ev = {.bytes = (uint64_t)size, .addr = (uint64_t)addr, .stream = (uint64_t)stream, .time_us = t};
  uint64_t *v;
  switch (a) {
  case ACT_ALLOC:
    if (pt_u64map_get(&c->live, ev.addr))
      return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: alloc at 0x%llx, which is still allocated",
                        c->dev, idx, (unsigned long long)ev.addr);
    ev.kind = PT_EV_ALLOC;
    ev.id = c->next_id++;
    ev.flags = PT_EVF_HAS_ADDR;
    if (stack_of(c, pt_py_get(e, "frames"), &ev.stack) < 0) return PT_ENOMEM;
    if (pt_u64map_put(&c->live, ev.addr, ev.id) < 0) return PT_ENOMEM;
    break;
  case ACT_FREE:
    v = pt_u64map_get(&c->live, ev.addr);
    if (!v) { /* allocated before recording started: part of the initial state */
      pt_event in = {.kind = PT_EV_INIT_ALLOC, .id = c->next_id++, .bytes = ev.bytes,
                     .addr = ev.addr, .stream = ev.stream, .flags = PT_EVF_HAS_ADDR};
      if (push(&c->init, &in, idx) < 0) return PT_ENOMEM;
      ev.id = in.id;
    } else {
      ev.id = *v;
      pt_u64map_del(&c->live, ev.addr);
    }
    ev.kind = PT_EV_FREE;
    if ((v = pt_u64map_get(&c->requested, ev.addr))) {
      if (*v != idx) ev.flags |= PT_EVF_DEFERRED; /* *v is 1 + the request's index: idx when just before */
      pt_u64map_del(&c->requested, ev.addr);
    }
    break;
  case ACT_SEG_ALLOC:
    ev.kind = PT_EV_SEG_ALLOC;
    if (pt_u64map_put(&c->segs, ev.addr, ev.bytes) < 0) return PT_ENOMEM;
    break;
  case ACT_SEG_FREE:
    if (!pt_u64map_get(&c->segs, ev.addr)) { /* existed at capture start */
      pt_event in = {.kind = PT_EV_INIT_SEGMENT, .addr = ev.addr, .bytes = ev.bytes, .stream = ev.stream};
      if (push(&c->init, &in, idx) < 0) return PT_ENOMEM;
    }
    pt_u64map_del(&c->segs, ev.addr);
    ev.kind = PT_EV_SEG_FREE;
    break;
  case ACT_MAP: ev.kind = PT_EV_SEG_MAP; break;
  case ACT_UNMAP: ev.kind = PT_EV_SEG_UNMAP; break;
  case ACT_OOM: ev.kind = PT_EV_OOM; ev.addr = 0; break;
  default: return 0;
  }
  return push(c->st, &ev, idx) < 0 ? PT_ENOMEM : 0;
}

/* Blocks still allocated at the end that the trace never allocated: initial. */
static int initial_blocks(conv *c, const pt_pyobj *blocks, size_t seg, uint64_t stream, pt_err *err) {
  size_t n = pt_py_len(blocks);
  for (size_t i = 0; i < n; i++) {
    const pt_pyobj *b = pt_py_index(blocks, i);
    int64_t addr, size;
    if (!b || b->type != PT_PY_DICT || get_int(b, "address", &addr) < 0 || get_int(b, "size", &size) < 0 ||
        addr < 0 || size < 0)
      return pt_err_set(err, PT_EFORMAT, "segments[%zu].blocks[%zu]: not a block (address, size)", seg, i);
    const pt_pyobj *state = pt_py_get(b, "state");
    if (!pt_py_is_str(state, "active_allocated") && !pt_py_is_str(state, "active_pending_free")) continue;
    if (pt_u64map_get(&c->live, (uint64_t)addr)) continue;
    int64_t req;
    if (get_int(b, "requested_size", &req) == 0 && req >= 0 && req <= size) size = req;
    pt_event in = {.kind = PT_EV_INIT_ALLOC, .id = c->next_id++, .bytes = (uint64_t)size,
                   .addr = (uint64_t)addr, .stream = stream, .flags = PT_EVF_HAS_ADDR};
    if (stack_of(c, pt_py_get(b, "frames"), &in.stack) < 0 || push(&c->init, &in, SRC_STATE) < 0)
      return PT_ENOMEM;
  }
  return 0;
}

/*
 * Mapped ranges of expandable segments: [lo, hi) on a stream, sorted by lo,
 * disjoint.  Few (one per contiguous mapped range of the end state, plus the
 * holes the trace unmapped), so plain arrays.
 */
typedef struct xspan {
  uint64_t lo, hi, stream;
} xspan;
typedef struct xspans {
  xspan *v;
  size_t n, cap;
} xspans;

/* Take [lo, hi) out of every range (a range may split in two). */
static int xspans_remove(xspans *s, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < s->n; i++) {
    xspan *x = &s->v[i];
    if (x->hi <= lo || x->lo >= hi) continue;
    if (x->lo < lo && x->hi > hi) { /* split: the part after hi goes in after */
      if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        xspan *v = realloc(s->v, cap * sizeof *v);
        if (!v) return PT_ENOMEM;
        s->v = v, s->cap = cap, x = &s->v[i];
      }
      memmove(&s->v[i + 2], &s->v[i + 1], (s->n - i - 1) * sizeof *x);
      s->v[i + 1] = (xspan){hi, x->hi, x->stream};
      x->hi = lo;
      s->n++;
      return 0;
    }
    if (x->lo >= lo && x->hi <= hi) { /* wholly inside: gone */
      memmove(x, x + 1, (s->n - i - 1) * sizeof *x);
      s->n--, i--;
    } else if (x->lo < lo) {
      x->hi = lo;
    } else {
      x->lo = hi;
    }
  }
  return 0;
}

/* Add [lo, hi) on stream, in order, joining a touching range of the same stream. */
static int xspans_add(xspans *s, uint64_t lo, uint64_t hi, uint64_t stream) {
  if (lo >= hi) return 0;
  int rc = xspans_remove(s, lo, hi);
  if (rc < 0) return rc;
  size_t i = 0;
  while (i < s->n && s->v[i].lo < lo) i++;
  if (i > 0 && s->v[i - 1].hi == lo && s->v[i - 1].stream == stream) {
    s->v[i - 1].hi = hi;
    if (i < s->n && s->v[i].lo == hi && s->v[i].stream == stream) {
      s->v[i - 1].hi = s->v[i].hi;
      memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof s->v[0]);
      s->n--;
    }
    return 0;
  }
  if (i < s->n && s->v[i].lo == hi && s->v[i].stream == stream) {
    s->v[i].lo = lo;
    return 0;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    xspan *v = realloc(s->v, cap * sizeof *v);
    if (!v) return PT_ENOMEM;
    s->v = v, s->cap = cap;
  }
  memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof s->v[0]);
  s->v[i] = (xspan){lo, hi, stream};
  s->n++;
  return 0;
}

/*
 * Segments in the end-state list that the trace did not create are initial.
 * What expandable segments had mapped when recording began is the end
 * state's mapped ranges (the list holds one entry per contiguous mapped
 * range, so one reservation with a hole is two entries) with the trace's
 * maps taken back out and its unmaps put back, walking the trace backwards:
 * range by range, since a map may cross from one entry's range into the
 * next one's.
 */
static int initial_segments(conv *c, const pt_pyobj *segments, pt_err *err) {
  size_t n = pt_py_len(segments);
  xspans mapped = {0};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const pt_pyobj *s = pt_py_index(segments, i);
    int64_t dev = 0, addr, size, stream = 0, expandable = 0;
    if (!s || s->type != PT_PY_DICT || get_int(s, "address", &addr) < 0 ||
        get_int(s, "total_size", &size) < 0 || addr < 0 || size < 0) {
      rc = pt_err_set(err, PT_EFORMAT, "segments[%zu]: not a segment (address, total_size)", i);
      break;
    }
    (void)get_int(s, "device", &dev);
    (void)get_int(s, "stream", &stream);
    (void)get_int(s, "is_expandable", &expandable);
    if (stream < 0) {
      rc = pt_err_set(err, PT_EFORMAT, "segments[%zu]: negative stream", i);
      break;
    }
    if (dev != c->dev) continue;
    if ((rc = initial_blocks(c, pt_py_get(s, "blocks"), i, (uint64_t)stream, err)) < 0) break;
    if (expandable) {
      if ((uint64_t)size > UINT64_MAX - (uint64_t)addr) rc = pt_err_set(err, PT_EFORMAT, "segments[%zu]: range past 2^64", i);
      else if (xspans_add(&mapped, (uint64_t)addr, (uint64_t)addr + (uint64_t)size, (uint64_t)stream) < 0) rc = PT_ENOMEM;
      continue;
    }
    if (pt_u64map_get(&c->segs, (uint64_t)addr)) continue;
    pt_event in = {.kind = PT_EV_INIT_SEGMENT, .addr = (uint64_t)addr, .bytes = (uint64_t)size,
                   .stream = (uint64_t)stream};
    if (in.bytes && push(&c->init, &in, SRC_STATE) < 0) rc = PT_ENOMEM;
  }
  for (size_t k = c->st->len; rc == 0 && k-- > 0;) {
    const pt_event *e = &c->st->ev[k];
    if ((e->kind != PT_EV_SEG_MAP && e->kind != PT_EV_SEG_UNMAP) || e->bytes > UINT64_MAX - e->addr) continue;
    if (e->kind == PT_EV_SEG_MAP) rc = xspans_remove(&mapped, e->addr, e->addr + e->bytes); /* not mapped before it */
    else rc = xspans_add(&mapped, e->addr, e->addr + e->bytes, e->stream);                  /* mapped before it */
  }
  for (size_t i = 0; rc == 0 && i < mapped.n; i++) { /* nothing left: nothing was mapped when recording began */
    pt_event in = {.kind = PT_EV_INIT_SEGMENT, .addr = mapped.v[i].lo, .bytes = mapped.v[i].hi - mapped.v[i].lo,
                   .stream = mapped.v[i].stream, .flags = PT_SEGF_EXPANDABLE};
    if (push(&c->init, &in, SRC_STATE) < 0) rc = PT_ENOMEM;
  }
  free(mapped.v);
  if (rc == PT_ENOMEM) return pt_err_set(err, PT_ENOMEM, "out of memory");
  return rc;
}

/*
 * Private pools.  Trace entries carry no pool; the end state's segments do
 * (segment_pool_id, (0, 0) the default pool), so a record is in a private
 * pool when its address lies in a segment of that pool alive at the dump,
 * and it comes at or after the segment's last segment_alloc (before it the
 * address belonged to an earlier segment); a segment the trace never
 * allocated was there from the start, its initial records included.
 * Segments of a pool released and freed before the dump are not in the list:
 * what was in them stays in the default pool.
 */
typedef struct pseg {
  uint64_t lo, hi;     /* [lo, hi) */
  size_t start;        /* index of its last segment_alloc in the trace; SIZE_MAX: none, there from the start */
  uint16_t pool;
} pseg;

static int pseg_cmp(const void *a, const void *b) {
  const pseg *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The private segment holding addr, or NULL. */
static const pseg *pseg_find(const pseg *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo && addr < v[lo - 1].hi ? &v[lo - 1] : NULL;
}

static int has_addr(int kind) {
  return kind == PT_EV_ALLOC || kind == PT_EV_INIT_ALLOC || kind == PT_EV_INIT_SEGMENT || kind == PT_EV_SEG_ALLOC ||
         kind == PT_EV_SEG_FREE || kind == PT_EV_SEG_MAP || kind == PT_EV_SEG_UNMAP;
}

/*
 * Where each capture begins.  While a capture is underway, the capturing
 * stream's requests go to the graph's pool, so a capture begins at a pooled
 * request whose stream's request before it was in another pool (or there
 * was none).  torch.cuda.graph empties the cache first, before the
 * generators' prologue (requests on the capture stream still in the default
 * pool): going back over those and their segment_allocs, the run of
 * segment_free records just before them is that empty_cache's, and the mark
 * goes on its first.  Without such a run there is nothing to mark: no
 * empty_cache (a raw capture_begin, a torch.cuda.MemPool, whose ids PyTorch
 * makes (0, N) like a shared graph pool's), or one that freed nothing, which
 * a faithful model's would not either.
 */
static int mark_captures(snap_state *st) {
  pt_u64map last = {0}; /* stream -> pool of its last request + 1 */
  for (size_t q = 0; q < st->len; q++) {
    pt_event *e = &st->ev[q];
    if (e->kind != PT_EV_ALLOC) continue;
    uint64_t *l = pt_u64map_get(&last, e->stream);
    int begins = e->pool && (!l || *l != (uint64_t)e->pool + 1);
    if (pt_u64map_put(&last, e->stream, (uint64_t)e->pool + 1) < 0) {
      pt_u64map_free(&last);
      return PT_ENOMEM;
    }
    if (!begins) continue;
    size_t m = q;
    while (m > 0 && (st->ev[m - 1].kind == PT_EV_SEG_ALLOC ||
                     (st->ev[m - 1].kind == PT_EV_ALLOC && st->ev[m - 1].stream == e->stream && !st->ev[m - 1].pool)))
      m--;
    size_t f = m;
    while (f > 0 && st->ev[f - 1].kind == PT_EV_SEG_FREE) f--;
    if (f < m) st->ev[f].flags |= PT_EVF_CAPTURE;
  }
  pt_u64map_free(&last);
  return 0;
}

static int pool_tags(conv *c, const pt_pyobj *segments, pt_pools *pools, pt_err *err) {
  size_t n = pt_py_len(segments), np = 0;
  pseg *v = NULL;
  pt_u64map base = {0}; /* a private segment's lo -> its index in v */
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const pt_pyobj *s = pt_py_index(segments, i), *id = pt_py_get(s, "segment_pool_id");
    int64_t dev = 0, addr, size, a = 0, b = 0;
    (void)get_int(s, "device", &dev);
    if (dev != c->dev || !id || get_int(s, "address", &addr) < 0 || get_int(s, "total_size", &size) < 0) continue;
    const pt_pyobj *x = pt_py_index(id, 0), *y = pt_py_index(id, 1);
    if ((id->type != PT_PY_TUPLE && id->type != PT_PY_LIST) || pt_py_len(id) != 2 || !x || !y ||
        x->type != PT_PY_INT || y->type != PT_PY_INT || x->u.i < 0 || y->u.i < 0) {
      rc = pt_err_set(err, PT_EFORMAT, "segments[%zu]: segment_pool_id is not two numbers", i);
      break;
    }
    a = x->u.i, b = y->u.i;
    if (!a && !b) continue;
    uint16_t pool;
    if ((rc = pt_pools_intern(pools, (uint64_t)a, (uint64_t)b, &pool)) < 0) {
      rc = rc == PT_ELIMIT ? pt_err_set(err, PT_ELIMIT, "segments[%zu]: more than %d private pools", i, PT_TRACE_MAX_POOLS) : PT_ENOMEM;
      break;
    }
    pseg *nv = realloc(v, (np + 1) * sizeof *v);
    if (!nv || pt_u64map_put(&base, (uint64_t)addr, np) < 0) {
      if (nv) v = nv;
      rc = PT_ENOMEM;
      break;
    }
    v = nv;
    v[np++] = (pseg){(uint64_t)addr, (uint64_t)addr + (uint64_t)size, SIZE_MAX, pool};
  }
  snap_state *st = c->st;
  for (size_t k = 0; rc == 0 && np && k < st->len; k++) {
    uint64_t *j = st->ev[k].kind == PT_EV_SEG_ALLOC ? pt_u64map_get(&base, st->ev[k].addr) : NULL;
    if (j) v[*j].start = k;
  }
  pt_u64map_free(&base);
  if (rc == 0 && np) {
    qsort(v, np, sizeof *v, pseg_cmp);
    for (size_t k = 0; k < st->len; k++) {
      const pseg *g = has_addr(st->ev[k].kind) ? pseg_find(v, np, st->ev[k].addr) : NULL;
      if (g && (g->start == SIZE_MAX || k >= g->start)) st->ev[k].pool = g->pool;
    }
    for (size_t k = 0; k < c->init.len; k++) {
      const pseg *g = pseg_find(v, np, c->init.ev[k].addr);
      if (g && g->start == SIZE_MAX) c->init.ev[k].pool = g->pool;
    }
    rc = mark_captures(st);
  }
  free(v);
  return rc == PT_ENOMEM ? pt_err_set(err, PT_ENOMEM, "out of memory") : rc;
}

/* The conversions, one per device seen (or only the one asked for). */
typedef struct reading {
  pt_trace *t;
  conv *dev;
  snap_state *out;  /* each device's records */
  size_t ndev;
  int want;         /* -1: every device, picked at the end */
  int stacks;
  pt_u64map known;  /* conv.known */
} reading;

static long read_input(void *ctx, void *buf, size_t n, pt_err *err) {
  return pt_trace_read(((reading *)ctx)->t, buf, n, err);
}

static int rewind_input(void *ctx, pt_err *err) { return pt_trace_rewind(((reading *)ctx)->t, err); }

static int device_of(reading *r, size_t d, conv **out) {
  *out = NULL;
  if (d > 4096) return 0; /* no such device: counted by the unpickler, never converted */
  if (r->want >= 0 && d != (size_t)r->want) return 0;
  if (d >= r->ndev) {
    conv *nc = realloc(r->dev, (d + 1) * sizeof *nc);
    snap_state *ns = nc ? realloc(r->out, (d + 1) * sizeof *ns) : NULL;
    if (nc) r->dev = nc;
    if (!ns) return PT_ENOMEM;
    r->out = ns;
    memset(r->dev + r->ndev, 0, (d + 1 - r->ndev) * sizeof *nc);
    memset(r->out + r->ndev, 0, (d + 1 - r->ndev) * sizeof *ns);
    r->ndev = d + 1;
  }
  *out = &r->dev[d];
  if (!(*out)->st) {
    (*out)->st = &r->out[d];
    (*out)->next_id = 1;
    (*out)->dev = (int)d;
    (*out)->frames = pt_trace_frames_mut(r->t);
    (*out)->known = &r->known;
    (*out)->stacks = r->stacks;
  }
  return 0;
}

/* One entry of device_traces[d], as the unpickler reads it. */
static int on_entry(void *ctx, size_t d, size_t i, const pt_pyobj *e, pt_err *err) {
  reading *r = ctx;
  conv *c;
  if (device_of(r, d, &c) < 0) return pt_err_set(err, PT_ENOMEM, "out of memory");
  if (!c) return 0;
  if (i >= SRC_STATE) return pt_err_set(err, PT_ELIMIT, "device_traces[%zu]: too many entries", d);
  if (!e || e->type != PT_PY_DICT)
    return pt_err_set(err, PT_EFORMAT, "device_traces[%zu][%zu]: not a dict", d, i);
  int rc = convert_entry(c, e, (uint32_t)i, err);
  return rc == PT_ENOMEM ? pt_err_set(err, PT_ENOMEM, "out of memory") : rc;
}

/* Pick the device: the one asked for, else the only one with entries. */
static int pick_device(const pt_pyobj *traces, int want, pt_err *err) {
  size_t ndev = pt_py_len(traces);
  if (want >= 0) {
    if ((size_t)want >= ndev)
      return pt_err_set(err, PT_EFORMAT, "device_traces: no device %d (snapshot has %zu)", want, ndev);
    return want;
  }
  int found = -1;
  for (size_t d = 0; d < ndev; d++) {
    const pt_pyobj *l = pt_py_index(traces, d);
    if (!pt_py_streamed(l) && !pt_py_len(l)) continue;
    if (found >= 0)
      return pt_err_set(err, PT_EUSAGE,
                        "device_traces: devices %d and %zu both have events; pick one with --device N (where a "
                        "command takes none, as sweep: 'pagetune trace import SNAPSHOT --device N -o T' first)",
                        found, d);
    found = (int)d;
  }
  return found >= 0 ? found : 0;
}

static void conv_free(conv *c) {
  free(c->init.ev);
  free(c->init.src);
  pt_u64map_free(&c->live);
  pt_u64map_free(&c->segs);
  pt_u64map_free(&c->requested);
}

static int snapshot_open(pt_trace *t, const pt_trace_opts *opts, pt_err *err) {
  pt_pickle *pk = NULL;
  snap_reader *st = calloc(1, sizeof *st);
  if (!st) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_trace_set_state(t, st);
  reading r = {.t = t, .want = opts->device, .stacks = !opts->strip_frames};
  conv *c = NULL;
  /* pickle errors are "NAME: byte N: ..."; the trace layer adds NAME itself */
  pt_pickle_source src = {.read = read_input, .rewind = rewind_input, .ctx = &r,
                          .stream_key = "device_traces", .item = on_entry, .item_ctx = &r};
  int rc = pt_pickle_parse_stream(&src, "", NULL, err, &pk);
  if (rc < 0) {
    if (err && !strncmp(err->msg, ": ", 2)) memmove(err->msg, err->msg + 2, strlen(err->msg + 2) + 1);
    goto out;
  }
  const pt_pyobj *root = pt_pickle_root(pk);
  const pt_pyobj *traces = pt_py_get(root, "device_traces");
  const pt_pyobj *segments = pt_py_get(root, "segments");
  if (!root || root->type != PT_PY_DICT || !traces || traces->type != PT_PY_LIST ||
      (segments && segments->type != PT_PY_LIST)) {
    rc = pt_err_set(err, PT_EFORMAT,
                    "top level: not a PyTorch memory snapshot (no dict with device_traces and segments)");
    goto out;
  }
  if ((rc = pick_device(traces, opts->device, err)) < 0) goto out;
  st->device = rc;
  const pt_pyobj *dt = pt_py_index(traces, (size_t)st->device);
  if (pt_py_len(dt)) { /* entries the unpickler could not stream (not as Python's pickler writes them) */
    for (size_t i = 0; i < pt_py_len(dt) && rc >= 0; i++) rc = on_entry(&r, (size_t)st->device, i, pt_py_index(dt, i), err);
    if (rc < 0) goto out;
  } else if (dt && dt->type != PT_PY_LIST) {
    rc = pt_err_set(err, PT_EFORMAT, "device_traces[%d]: not a list", st->device);
    goto out;
  }
  if ((rc = device_of(&r, (size_t)st->device, &c)) < 0) {
    rc = pt_err_set(err, PT_ENOMEM, "out of memory");
    goto out;
  }
  if (!c) {
    rc = pt_err_set(err, PT_ELIMIT, "device_traces[%d]: past the 4096 devices a trace may name", st->device);
    goto out;
  }
  pt_trace_info *info = pt_trace_info_mut(t);
  info->version = PT_TRACE_VERSION;
  info->device = st->device;
  snprintf(info->source, sizeof info->source, "pytorch-snapshot");
  snprintf(info->tool, sizeof info->tool, "torch.cuda.memory._dump_snapshot");
  settings_text(pt_py_get(root, "allocator_settings"), info->settings, sizeof info->settings);

  if ((rc = initial_segments(c, segments, err)) < 0) goto out;
  if ((rc = pool_tags(c, segments, pt_trace_pools_mut(t), err)) < 0) goto out;
  st->part[0] = c->init; /* initial state first, then the events */
  st->part[1] = *c->st;
  c->init = *c->st = (snap_state){0};
  rc = 0;
out:
  if (rc == PT_ENOMEM) pt_err_set(err, PT_ENOMEM, "out of memory");
  for (size_t d = 0; d < r.ndev; d++) {
    conv_free(&r.dev[d]);
    free(r.out[d].ev);
    free(r.out[d].src);
  }
  free(r.dev);
  free(r.out);
  pt_u64map_free(&r.known);
  pt_pickle_free(pk);
  return rc;
}

static int snapshot_next(pt_trace *t, pt_event *ev, pt_err *err) {
  (void)err; /* converted at open: nothing can fail here */
  snap_reader *r = pt_trace_state(t);
  if (r->cur == 0 && r->part[0].pos == r->part[0].len) r->cur = 1;
  snap_state *st = &r->part[r->cur];
  if (st->pos == st->len) return 0;
  *ev = st->ev[st->pos++];
  return 1;
}

static void snapshot_position(pt_trace *t, char *buf, size_t n) {
  snap_reader *r = pt_trace_state(t);
  const snap_state *st = &r->part[r->cur];
  uint32_t src = st->pos ? st->src[st->pos - 1] : SRC_STATE;
  if (src == SRC_STATE) snprintf(buf, n, "segments");
  else snprintf(buf, n, "device_traces[%d][%u]", r->device, src);
}

static void snapshot_close(pt_trace *t) {
  snap_reader *r = pt_trace_state(t);
  if (!r) return;
  for (int i = 0; i < 2; i++) {
    free(r->part[i].ev);
    free(r->part[i].src);
  }
  free(r);
}

const pt_trace_format pt_snapshot_format = {
    "pytorch-snapshot", snapshot_probe, snapshot_open, snapshot_next, snapshot_close, snapshot_position};
