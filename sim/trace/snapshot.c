/*
 * snapshot.c — PyTorch memory snapshots as a trace source (see snapshot.h).
 *
 * The whole pickle is read (decompressed by the trace layer), parsed by the
 * data-only unpickler, and converted at open into an array of records: the
 * initial state first, then the events in trace order.  Each record keeps
 * the index of the trace entry it came from, so a later check can name
 * "device_traces[D][I]".
 */
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "u64map.h"

#define SNAPSHOT_MAX_BYTES (UINT64_C(1) << 33) /* 8 GiB of pickle */
#define SRC_STATE UINT32_MAX                   /* record from `segments`, not the trace */

typedef struct snap_state {
  pt_event *ev;
  uint32_t *src;    /* trace index each record came from, or SRC_STATE */
  size_t len, cap, pos;
  int device;
} snap_state;

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

/* Pick the device: the one asked for, else the only one with events. */
static int pick_device(const pt_pyobj *traces, int want, pt_err *err) {
  size_t ndev = pt_py_len(traces);
  if (want >= 0) {
    if ((size_t)want >= ndev)
      return pt_err_set(err, PT_EFORMAT, "device_traces: no device %d (snapshot has %zu)", want, ndev);
    return want;
  }
  int found = -1;
  for (size_t d = 0; d < ndev; d++) {
    if (pt_py_len(pt_py_index(traces, d)) == 0) continue;
    if (found >= 0)
      return pt_err_set(err, PT_EUSAGE,
                        "device_traces: devices %d and %zu both have events; pick one with --device N",
                        found, d);
    found = (int)d;
  }
  return found >= 0 ? found : 0;
}

enum act { ACT_SKIP, ACT_ALLOC, ACT_FREE, ACT_SEG_ALLOC, ACT_SEG_FREE, ACT_MAP, ACT_UNMAP, ACT_OOM };

static enum act action_of(const pt_pyobj *a) {
  static const struct { const char *name; enum act act; } tab[] = {
      {"alloc", ACT_ALLOC},           {"free_completed", ACT_FREE}, {"segment_alloc", ACT_SEG_ALLOC},
      {"segment_free", ACT_SEG_FREE}, {"segment_map", ACT_MAP},     {"segment_unmap", ACT_UNMAP},
      {"oom", ACT_OOM}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (pt_py_is_str(a, tab[i].name)) return tab[i].act;
  return ACT_SKIP; /* free_requested, snapshot, and actions newer than this reader */
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
  uint64_t next_id;
  int dev;
} conv;

static int convert_entry(conv *c, const pt_pyobj *e, uint32_t idx, pt_err *err) {
  const pt_pyobj *act = pt_py_get(e, "action");
  if (!act || act->type != PT_PY_STR)
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: entry without an action", c->dev, idx);
  enum act a = action_of(act);
  if (a == ACT_SKIP) return 0;
  int64_t addr = 0, size, stream = 0, t = 0;
  if (get_int(e, "size", &size) < 0 || (a != ACT_OOM && get_int(e, "addr", &addr) < 0))
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: %.*s entry without int addr/size",
                      c->dev, idx, (int)act->u.s.len, act->u.s.ptr);
  if (size < 0 || addr < 0)
    return pt_err_set(err, PT_EFORMAT, "device_traces[%d][%u]: negative %s", c->dev, idx,
                      size < 0 ? "size" : "addr");
  (void)get_int(e, "stream", &stream); /* optional in old snapshots */
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
    if (push(&c->init, &in, SRC_STATE) < 0) return PT_ENOMEM;
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

static int snapshot_open(pt_trace *t, const pt_trace_opts *opts, pt_err *err) {
  uint8_t *buf = NULL;
  size_t len = 0;
  pt_pickle *pk = NULL;
  snap_state *st = calloc(1, sizeof *st);
  if (!st) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_trace_set_state(t, st);
  conv c = {.st = st, .next_id = 1};
  int rc = pt_trace_slurp(t, SNAPSHOT_MAX_BYTES, err, &buf, &len);
  if (rc < 0) goto out;
  /* pickle errors are "NAME: byte N: ..."; the trace layer adds NAME itself */
  rc = pt_pickle_parse(buf, len, "", NULL, err, &pk);
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
  c.dev = st->device = rc;
  pt_trace_info *info = pt_trace_info_mut(t);
  info->version = PT_TRACE_VERSION;
  info->device = c.dev;
  snprintf(info->source, sizeof info->source, "pytorch-snapshot");
  snprintf(info->tool, sizeof info->tool, "torch.cuda.memory._dump_snapshot");
  settings_text(pt_py_get(root, "allocator_settings"), info->settings, sizeof info->settings);

  const pt_pyobj *dt = pt_py_index(traces, (size_t)c.dev);
  size_t n = pt_py_len(dt);
  if (n >= SRC_STATE) {
    rc = pt_err_set(err, PT_ELIMIT, "device_traces[%d]: too many entries", c.dev);
    goto out;
  }
  if (n && dt->type != PT_PY_LIST) {
    rc = pt_err_set(err, PT_EFORMAT, "device_traces[%d]: not a list", c.dev);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const pt_pyobj *e = pt_py_index(dt, i);
    if (!e || e->type != PT_PY_DICT) {
      rc = pt_err_set(err, PT_EFORMAT, "device_traces[%d][%zu]: not a dict", c.dev, i);
      goto out;
    }
    if ((rc = convert_entry(&c, e, (uint32_t)i, err)) < 0) goto out;
  }
  if ((rc = initial_segments(&c, segments, err)) < 0) goto out;
  /* initial state first, then the events */
  size_t ninit = c.init.len;
  for (size_t i = 0; i < st->len; i++)
    if ((rc = push(&c.init, &st->ev[i], st->src[i])) < 0) goto out;
  free(st->ev);
  free(st->src);
  st->ev = c.init.ev;
  st->src = c.init.src;
  st->len = c.init.len;
  st->cap = c.init.cap;
  c.init = (snap_state){0};
  (void)ninit;
  rc = 0;
out:
  if (rc == PT_ENOMEM) pt_err_set(err, PT_ENOMEM, "out of memory");
  free(c.init.ev);
  free(c.init.src);
  pt_u64map_free(&c.live);
  pt_u64map_free(&c.segs);
  pt_pickle_free(pk);
  free(buf);
  return rc;
}

static int snapshot_next(pt_trace *t, pt_event *ev, pt_err *err) {
  (void)err; /* converted at open: nothing can fail here */
  snap_state *st = pt_trace_state(t);
  if (st->pos == st->len) return 0;
  *ev = st->ev[st->pos++];
  return 1;
}

static void snapshot_position(pt_trace *t, char *buf, size_t n) {
  snap_state *st = pt_trace_state(t);
  uint32_t src = st->pos ? st->src[st->pos - 1] : SRC_STATE;
  if (src == SRC_STATE) snprintf(buf, n, "segments");
  else snprintf(buf, n, "device_traces[%d][%u]", st->device, src);
}

static void snapshot_close(pt_trace *t) {
  snap_state *st = pt_trace_state(t);
  if (!st) return;
  free(st->ev);
  free(st->src);
  free(st);
}

const pt_trace_format pt_snapshot_format = {
    "pytorch-snapshot", snapshot_probe, snapshot_open, snapshot_next, snapshot_close, snapshot_position};
