/*
 * trace.c — the trace reader interface, the checks every record passes, and
 * the native text format (reader and writer).  See trace.h and
 * traces/FORMAT.md.
 *
 * Input goes through zlib's gzread, which reads plain and gzip'd files alike,
 * or through a caller's buffer (tests, fuzzing).  The first bytes pick the
 * format; the format's next() yields raw records; check_event() then enforces
 * the id rules once for all formats.
 */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "snapshot.h"
#include "u64map.h"

/* ---- id table: which allocation ids are live, and what they hold --------- */

/*
 * live maps a live id to the index of its {bytes, stream} slot; slots of
 * freed ids are recycled through a free list, so live stays as small as the
 * working set and lookups stay in cache.  Ids ever allocated are remembered
 * apart, only so that a second free can be told from a free of an id never
 * seen: a bitmap for ids below SEEN_BITMAP_IDS (traces number their ids
 * densely from 1), a hash set beyond.
 */
#define SEEN_BITMAP_IDS (UINT64_C(1) << 27) /* at most a 16 MiB bitmap */

typedef struct id_info {
  uint64_t bytes, stream;
} id_info;

typedef struct id_table {
  pt_u64map live;
  id_info *info;
  size_t len, cap;
  size_t *spare;       /* recycled slot indices */
  size_t nspare;
  uint8_t *seen;       /* bit i: id i was allocated at some point */
  size_t seen_bytes;
  pt_u64map seen_big;  /* the same, for ids >= SEEN_BITMAP_IDS */
} id_table;

static int ids_mark_seen(id_table *tab, uint64_t id) {
  if (id >= SEEN_BITMAP_IDS) return pt_u64map_put(&tab->seen_big, id, 1);
  size_t byte = (size_t)(id >> 3);
  if (byte >= tab->seen_bytes) {
    size_t n = tab->seen_bytes ? tab->seen_bytes : 4096;
    while (n <= byte) n *= 2;
    uint8_t *ns = realloc(tab->seen, n);
    if (!ns) return PT_ENOMEM;
    memset(ns + tab->seen_bytes, 0, n - tab->seen_bytes);
    tab->seen = ns;
    tab->seen_bytes = n;
  }
  tab->seen[byte] |= (uint8_t)(1u << (id & 7));
  return 0;
}

static int ids_was_seen(id_table *tab, uint64_t id) {
  if (id >= SEEN_BITMAP_IDS) return pt_u64map_get(&tab->seen_big, id) != NULL;
  size_t byte = (size_t)(id >> 3);
  return byte < tab->seen_bytes && (tab->seen[byte] >> (id & 7) & 1);
}

static int ids_add(id_table *tab, uint64_t id, uint64_t bytes, uint64_t stream) {
  size_t slot;
  if (tab->nspare) {
    slot = tab->spare[--tab->nspare];
  } else {
    if (tab->len == tab->cap) {
      size_t ncap = tab->cap ? tab->cap * 2 : 1024;
      id_info *ni = realloc(tab->info, ncap * sizeof *ni);
      if (!ni) return PT_ENOMEM;
      tab->info = ni;
      size_t *ns = realloc(tab->spare, ncap * sizeof *ns);
      if (!ns) return PT_ENOMEM;
      tab->spare = ns;
      tab->cap = ncap;
    }
    slot = tab->len++;
  }
  tab->info[slot] = (id_info){bytes, stream};
  if (pt_u64map_put(&tab->live, id, slot) < 0) return PT_ENOMEM;
  return ids_mark_seen(tab, id);
}

static void ids_remove(id_table *tab, uint64_t id, uint64_t slot) {
  tab->spare[tab->nspare++] = (size_t)slot;
  pt_u64map_del(&tab->live, id);
}

static void ids_free(id_table *tab) {
  pt_u64map_free(&tab->live);
  pt_u64map_free(&tab->seen_big);
  free(tab->info);
  free(tab->spare);
  free(tab->seen);
}

/* ---- the initial segments' ranges ----------------------------------------- */

/* The initial segments seen, sorted by address: no two may overlap (nor one pass the end of the address
   space), since every mechanism places the initial blocks in them and counts their bytes as reserved. */
typedef struct seg_ranges {
  struct { uint64_t addr, end; } *v;
  size_t n, cap;
} seg_ranges;

static int segs_add(seg_ranges *s, uint64_t addr, uint64_t bytes, pt_err *err) {
  if (bytes > UINT64_MAX - addr)
    return pt_err_set(err, PT_EFORMAT, "initial segment at 0x%llx of %llu bytes passes the end of the address space",
                      (unsigned long long)addr, (unsigned long long)bytes);
  size_t lo = 0, hi = s->n; /* the first range that starts after addr */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  uint64_t end = addr + bytes;
  const char *fmt = "initial segment [0x%llx, +%llu) overlaps the one at 0x%llx";
  if (lo > 0 && s->v[lo - 1].end > addr)
    return pt_err_set(err, PT_EFORMAT, fmt, (unsigned long long)addr, (unsigned long long)bytes,
                      (unsigned long long)s->v[lo - 1].addr);
  if (lo < s->n && s->v[lo].addr < end)
    return pt_err_set(err, PT_EFORMAT, fmt, (unsigned long long)addr, (unsigned long long)bytes,
                      (unsigned long long)s->v[lo].addr);
  if (s->n == s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 64;
    void *nv = realloc(s->v, ncap * sizeof *s->v);
    if (!nv) return pt_err_set(err, PT_ENOMEM, "out of memory");
    s->v = nv;
    s->cap = ncap;
  }
  memmove(&s->v[lo + 1], &s->v[lo], (s->n - lo) * sizeof *s->v);
  s->v[lo].addr = addr;
  s->v[lo].end = end;
  s->n++;
  return 0;
}

/* ---- the reader handle ---------------------------------------------------- */

#define PEEK_MAX 64

struct pt_trace {
  char *name;
  gzFile gz;               /* file input, or NULL for memory input */
  const uint8_t *mem;      /* memory input */
  size_t mem_len, mem_pos;
  uint8_t peek[PEEK_MAX];  /* first bytes, read for probing, replayed first */
  size_t peek_len, peek_pos;
  const pt_trace_format *fmt;
  void *state;
  pt_trace_info info;
  id_table ids;
  int seen_events;         /* a non-initial record has been yielded */
  seg_ranges segs;         /* the initial segments read */
  pt_frames frames;        /* what records' stack ids name */
  pt_pools pools;          /* what records' pool numbers name */
  pt_order order;          /* the stream order before the record last returned (keep_order: every record's) */
  int keep_order;
};

static const pt_trace_format pt_native_format;
static const pt_trace_format *const formats[] = {&pt_native_format, &pt_snapshot_format};

long pt_trace_read(pt_trace *t, void *buf, size_t n, pt_err *err) {
  size_t got = 0;
  if (t->peek_pos < t->peek_len) {
    got = t->peek_len - t->peek_pos;
    if (got > n) got = n;
    memcpy(buf, t->peek + t->peek_pos, got);
    t->peek_pos += got;
  }
  if (got == n) return (long)got;
  if (t->gz) {
    size_t want = n - got;
    if (want > (1u << 30)) want = 1u << 30;
    int r = gzread(t->gz, (uint8_t *)buf + got, (unsigned)want);
    if (r < 0) {
      int zerr;
      const char *m = gzerror(t->gz, &zerr);
      return pt_err_set(err, PT_EIO, "read failed: %s", zerr == Z_ERRNO ? strerror(errno) : m);
    }
    got += (size_t)r;
  } else {
    size_t want = n - got, left = t->mem_len - t->mem_pos;
    if (want > left) want = left;
    memcpy((uint8_t *)buf + got, t->mem + t->mem_pos, want);
    t->mem_pos += want;
    got += want;
  }
  return (long)got;
}

int pt_trace_rewind(pt_trace *t, pt_err *err) {
  if (t->gz && gzrewind(t->gz) != 0) /* a pipe: nothing changed, the input reads on */
    return pt_err_set(err, PT_EIO, "cannot read the input twice (a pipe?)");
  t->mem_pos = 0;
  t->peek_len = t->peek_pos = 0; /* the first bytes come again from the input */
  return 0;
}

pt_trace_info *pt_trace_info_mut(pt_trace *t) { return &t->info; }
pt_frames *pt_trace_frames_mut(pt_trace *t) { return &t->frames; }
pt_pools *pt_trace_pools_mut(pt_trace *t) { return &t->pools; }
const pt_pools *pt_trace_pools(const pt_trace *t) { return &t->pools; }
void pt_trace_take_pools(pt_trace *t, pt_pools *out) {
  *out = t->pools;
  memset(&t->pools, 0, sizeof t->pools);
}

int pt_pools_intern(pt_pools *p, uint64_t first, uint64_t second, uint16_t *out) {
  if (!first && !second) return PT_EFORMAT; /* the default pool has no number */
  for (size_t i = 0; i < p->n; i++)
    if (p->id[i].first == first && p->id[i].second == second) {
      *out = (uint16_t)(i + 1);
      return 0;
    }
  if (p->n == PT_TRACE_MAX_POOLS) return PT_ELIMIT;
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    pt_pool_id *id = realloc(p->id, cap * sizeof *id);
    if (!id) return PT_ENOMEM;
    p->id = id;
    p->cap = cap;
  }
  p->id[p->n++] = (pt_pool_id){first, second};
  *out = (uint16_t)p->n;
  return 0;
}

void pt_pools_free(pt_pools *p) {
  free(p->id);
  memset(p, 0, sizeof *p);
}

const pt_order *pt_trace_order(const pt_trace *t) { return &t->order; }
void pt_trace_take_order(pt_trace *t, pt_order *out) {
  *out = t->order;
  memset(&t->order, 0, sizeof t->order);
}

void pt_order_free(pt_order *o) {
  free(o->op);
  memset(o, 0, sizeof *o);
}

/* One more stream-order operation, before record `before`: 0, or PT_ENOMEM. */
static int order_add(pt_order *o, const pt_order_op *op) {
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 64;
    pt_order_op *v = realloc(o->op, cap * sizeof *v);
    if (!v) return PT_ENOMEM;
    o->op = v;
    o->cap = cap;
  }
  o->op[o->n++] = *op;
  return 0;
}
const pt_frames *pt_trace_frames(const pt_trace *t) { return &t->frames; }
void pt_trace_take_frames(pt_trace *t, pt_frames *out) {
  *out = t->frames;
  memset(&t->frames, 0, sizeof t->frames);
}
const pt_trace_info *pt_trace_get_info(const pt_trace *t) { return &t->info; }
const char *pt_trace_format_name(const pt_trace *t) { return t->fmt ? t->fmt->name : "?"; }
void *pt_trace_state(pt_trace *t) { return t->state; }
void pt_trace_set_state(pt_trace *t, void *state) { t->state = state; }

void pt_trace_close(pt_trace *t) {
  if (!t) return;
  if (t->fmt && t->fmt->close) t->fmt->close(t);
  if (t->gz) gzclose(t->gz);
  ids_free(&t->ids);
  free(t->segs.v);
  pt_frames_free(&t->frames);
  pt_pools_free(&t->pools);
  pt_order_free(&t->order);
  free(t->name);
  free(t);
}

/* Prefix err->msg with the file name: "NAME: <position>: <reason>". */
static int name_error(pt_trace *t, int rc, pt_err *err) {
  return pt_err_prefix(err, rc, "%s", t->name);
}

static int open_common(pt_trace *t, const pt_trace_opts *opts, pt_err *err) {
  pt_trace_opts defaults = {.device = -1};
  if (!opts) opts = &defaults;
  t->info.device = -1;
  t->keep_order = opts->keep_order;
  long n = pt_trace_read(t, t->peek, PEEK_MAX, err);
  if (n < 0) return name_error(t, (int)n, err);
  t->peek_len = (size_t)n;
  t->peek_pos = 0;
  if (n == 0) return name_error(t, pt_err_set(err, PT_EFORMAT, "byte 0: empty file"), err);
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    if (formats[i]->probe(t->peek, t->peek_len)) {
      t->fmt = formats[i];
      int rc = t->fmt->open(t, opts, err);
      return rc < 0 ? name_error(t, rc, err) : 0;
    }
  }
  return name_error(t, pt_err_set(err, PT_EFORMAT,
                                  "byte 0: not a pagetune trace (\"pagetune-trace N\") "
                                  "or a PyTorch memory snapshot (pickle)"),
                    err);
}

static pt_trace *trace_new(const char *name) {
  pt_trace *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->name = strdup(name);
  if (!t->name) {
    free(t);
    return NULL;
  }
  return t;
}

int pt_trace_open(const char *path, const pt_trace_opts *opts, pt_err *err, pt_trace **out) {
  *out = NULL;
  pt_trace *t = trace_new(path);
  if (!t) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  t->gz = gzopen(path, "rb");
  if (!t->gz) {
    int e = errno;
    pt_trace_close(t);
    return pt_err_set(err, PT_EIO, "%s: cannot open: %s", path, e ? strerror(e) : "out of memory");
  }
  gzbuffer(t->gz, 1 << 17);
  int rc = open_common(t, opts, err);
  if (rc < 0) {
    pt_trace_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

int pt_trace_open_mem(const void *buf, size_t len, const char *name, const pt_trace_opts *opts,
                      pt_err *err, pt_trace **out) {
  *out = NULL;
  pt_trace *t = trace_new(name);
  if (!t) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", name);
  t->mem = buf;
  t->mem_len = len;
  int rc = open_common(t, opts, err);
  if (rc < 0) {
    pt_trace_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

void pt_trace_track_reserved(const pt_event *ev, uint64_t *reserved) {
  switch (ev->kind) {
  case PT_EV_INIT_SEGMENT:
  case PT_EV_SEG_ALLOC:
  case PT_EV_SEG_MAP: *reserved += ev->bytes; break;
  case PT_EV_SEG_FREE:
  case PT_EV_SEG_UNMAP: *reserved -= ev->bytes < *reserved ? ev->bytes : *reserved; break;
  default: break;
  }
}

/* ---- the checks every record passes ---------------------------------------- */

static int is_initial(int kind) { return kind == PT_EV_INIT_SEGMENT || kind == PT_EV_INIT_ALLOC; }

/*
 * Enforce the trace's invariants and complete FREE records with the bytes and
 * stream of the allocation they end.  On error, err holds "reason" and the
 * format's position was already written by the caller's prefix.
 */
static int check_event(pt_trace *t, pt_event *ev, pt_err *err) {
  if (ev->bytes > PT_TRACE_MAX_BYTES)
    return pt_err_set(err, PT_EFORMAT, "absurd size %llu bytes (limit 2^50)",
                      (unsigned long long)ev->bytes);
  if (is_initial(ev->kind)) {
    if (t->seen_events)
      return pt_err_set(err, PT_EFORMAT, "initial-state record '%c' after the first event", ev->kind);
  } else {
    t->seen_events = 1;
  }
  switch (ev->kind) {
  case PT_EV_ALLOC:
  case PT_EV_INIT_ALLOC:
    if (pt_u64map_get(&t->ids.live, ev->id))
      return pt_err_set(err, PT_EFORMAT, "id %llu reused while still live",
                        (unsigned long long)ev->id);
    if (ids_add(&t->ids, ev->id, ev->bytes, ev->stream) < 0)
      return pt_err_set(err, PT_ENOMEM, "out of memory");
    return 0;
  case PT_EV_FREE:
  case PT_EV_ACCESS: {
    const uint64_t *slot = pt_u64map_get(&t->ids.live, ev->id);
    if (!slot) {
      int freed = ids_was_seen(&t->ids, ev->id);
      const char *what = ev->kind == PT_EV_FREE ? (freed ? "double free of id" : "free of unknown id")
                                                : (freed ? "access after free of id" : "access to unknown id");
      return pt_err_set(err, PT_EFORMAT, "%s %llu", what, (unsigned long long)ev->id);
    }
    const id_info *in = &t->ids.info[*slot];
    ev->stream = in->stream;
    if (ev->kind == PT_EV_ACCESS) {
      if (ev->offset > in->bytes || ev->bytes > in->bytes - ev->offset)
        return pt_err_set(err, PT_EFORMAT, "access [%llu, +%llu) outside id %llu of %llu bytes",
                          (unsigned long long)ev->offset, (unsigned long long)ev->bytes,
                          (unsigned long long)ev->id, (unsigned long long)in->bytes);
      return 0;
    }
    ev->bytes = in->bytes;
    ids_remove(&t->ids, ev->id, *slot);
    return 0;
  }
  case PT_EV_INIT_SEGMENT:
  case PT_EV_SEG_ALLOC:
  case PT_EV_SEG_FREE:
  case PT_EV_SEG_MAP:
  case PT_EV_SEG_UNMAP:
    if (ev->bytes == 0) return pt_err_set(err, PT_EFORMAT, "segment of 0 bytes");
    return ev->kind == PT_EV_INIT_SEGMENT ? segs_add(&t->segs, ev->addr, ev->bytes, err) : 0;
  case PT_EV_OOM:
    return 0;
  default:
    return pt_err_set(err, PT_EFORMAT, "unknown record kind %d", ev->kind);
  }
}

int pt_trace_next(pt_trace *t, pt_event *ev, pt_err *err) {
  if (!t->keep_order) t->order.n = 0; /* the last record's: a reader streaming the file keeps no more */
  int rc = t->fmt->next(t, ev, err);
  if (rc <= 0) return rc < 0 ? name_error(t, rc, err) : 0;
  rc = check_event(t, ev, err);
  if (rc < 0) {
    char pos[128]; /* the format knows the position: "NAME: POSITION: REASON" */
    t->fmt->position(t, pos, sizeof pos);
    pt_err_prefix(err, rc, "%s", pos);
    return name_error(t, rc, err);
  }
  return 1;
}

/* ---- native format: reader ----------------------------------------------- */

#define NATIVE_MAGIC "pagetune-trace"
#define NATIVE_CHUNK (1u << 20)

typedef struct native_state {
  uint8_t *buf;
  size_t len, pos;     /* valid bytes, start of the next line */
  int eof;
  uint64_t line;       /* number of the line last returned */
  uint64_t records;    /* records returned so far */
  int ended;           /* the "end" line was read */
  int pending;         /* [ps, pe) is a line put back, to be returned next */
  uint32_t at;         /* a +at line's stack, for the next record */
  uint16_t pool;       /* a +pool line's pool, for the next record */
  int capture;         /* a +capture line, for the next record */
  int sync;            /* a +sync line, for the next record */
  int order;           /* +event / +wait lines read for the next record */
  int deferred;        /* a +deferred line, for the next record (a free) */
  int gpu;             /* a +gpu line, for the next record (a free): its lag in gpu_lag */
  uint64_t gpu_lag;
  const char *ps, *pe;
  int (*record)(const char *s, const char *e, pt_event *ev, pt_err *err); /* the file's version's parser */
} native_state;

static int native_probe(const uint8_t *head, size_t len) {
  size_t m = sizeof NATIVE_MAGIC - 1;
  return len >= m && memcmp(head, NATIVE_MAGIC, m) == 0;
}

/*
 * Next line as [*s, *e) without the newline.  Returns 1, 0 at the end of
 * input, or <0.  A final line without a newline is a truncated file.
 */
static int native_line(pt_trace *t, native_state *st, const char **s, const char **e, pt_err *err) {
  if (st->pending) { /* the line native_open looked at and put back */
    st->pending = 0;
    *s = st->ps;
    *e = st->pe;
    return 1;
  }
  for (;;) {
    uint8_t *nl = memchr(st->buf + st->pos, '\n', st->len - st->pos);
    if (nl && (size_t)(nl - (st->buf + st->pos)) > PT_TRACE_MAX_LINE)
      return pt_err_set(err, PT_ELIMIT, "line %llu: longer than %d bytes",
                        (unsigned long long)st->line + 1, PT_TRACE_MAX_LINE);
    if (nl) {
      *s = (const char *)st->buf + st->pos;
      *e = (const char *)nl;
      st->pos = (size_t)(nl - st->buf) + 1;
      st->line++;
      if (*e > *s && (*e)[-1] == '\r') (*e)--;
      return 1;
    }
    if (st->eof) {
      if (st->pos < st->len) {
        st->line++;
        return pt_err_set(err, PT_EFORMAT, "line %llu: truncated (no newline at end of file)",
                          (unsigned long long)st->line);
      }
      return 0;
    }
    size_t rest = st->len - st->pos;
    if (rest >= PT_TRACE_MAX_LINE)
      return pt_err_set(err, PT_ELIMIT, "line %llu: longer than %d bytes",
                        (unsigned long long)st->line + 1, PT_TRACE_MAX_LINE);
    memmove(st->buf, st->buf + st->pos, rest);
    st->len = rest;
    st->pos = 0;
    long r = pt_trace_read(t, st->buf + rest, NATIVE_CHUNK - rest, err);
    if (r < 0) return (int)r;
    if (r == 0) st->eof = 1;
    st->len += (size_t)r;
  }
}

static const char *skip_blank(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t')) p++;
  return p;
}

/* Streams are below 2^63 (traces/FORMAT.md): the cudaMallocAsync model keeps a flag in the top bit.  0, or
   PT_EFORMAT with "[PATH: ]stream 0x...: past 2^63" (the writer names its file; the reader's caller adds the line). */
static int stream_check(uint64_t stream, const char *path, pt_err *err) {
  if (!(stream >> 63)) return 0;
  return pt_err_set(err, PT_EFORMAT, "%s%sstream 0x%llx: past 2^63", path ? path : "", path ? ": " : "",
                    (unsigned long long)stream);
}

/* Unsigned decimal or 0x-hex field; *p advances past it. */
static int parse_u64(const char **p, const char *e, const char *what, uint64_t *out, pt_err *err) {
  const char *q = skip_blank(*p, e);
  if (q == e) return pt_err_set(err, PT_EFORMAT, "missing field %s", what);
  if (*q == '-') return pt_err_set(err, PT_EFORMAT, "negative %s", what);
  uint64_t v = 0;
  const char *start = q;
  if (e - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
    q += 2;
    start = q;
    for (; q < e; q++) {
      unsigned d;
      if (*q >= '0' && *q <= '9') d = (unsigned)(*q - '0');
      else if (*q >= 'a' && *q <= 'f') d = (unsigned)(*q - 'a' + 10);
      else if (*q >= 'A' && *q <= 'F') d = (unsigned)(*q - 'A' + 10);
      else break;
      if (v >> 60) return pt_err_set(err, PT_EFORMAT, "%s out of range", what);
      v = v << 4 | d;
    }
  } else {
    for (; q < e && *q >= '0' && *q <= '9'; q++) {
      unsigned d = (unsigned)(*q - '0');
      if (v > (UINT64_MAX - d) / 10) return pt_err_set(err, PT_EFORMAT, "%s out of range", what);
      v = v * 10 + d;
    }
  }
  if (q == start || (q < e && *q != ' ' && *q != '\t'))
    return pt_err_set(err, PT_EFORMAT, "bad number in field %s", what);
  *out = v;
  *p = q;
  return 0;
}

/* A record's stream field: parse_u64's, and below 2^63. */
static int parse_stream(const char **p, const char *e, uint64_t *out, pt_err *err) {
  int rc = parse_u64(p, e, "stream", out, err);
  return rc < 0 ? rc : stream_check(*out, NULL, err);
}

static int parse_time(const char **p, const char *e, int64_t *out, pt_err *err) {
  const char *q = skip_blank(*p, e);
  int neg = q < e && *q == '-';
  if (neg) q++;
  uint64_t v;
  int rc = parse_u64(&q, e, "time", &v, err);
  if (rc < 0) return rc;
  if (v > (uint64_t)INT64_MAX) return pt_err_set(err, PT_EFORMAT, "time out of range");
  *out = neg ? -(int64_t)v : (int64_t)v;
  *p = q;
  return 0;
}

static int at_end(const char *p, const char *e) { return skip_blank(p, e) == e; }

/* Copy the rest of a header line into dst (truncating to its size). */
static void header_text(char *dst, size_t n, const char *p, const char *e) {
  p = skip_blank(p, e);
  size_t len = (size_t)(e - p);
  if (len >= n) len = n - 1;
  memcpy(dst, p, len);
  dst[len] = 0;
}

static int native_record_v1(const char *s, const char *e, pt_event *ev, pt_err *err);

/*
 * One record parser per released version of the format, version v at
 * [v - 1] (the rule is above PT_TRACE_VERSION in trace.h).  A new version
 * appends its parser; the older ones stay as they are, so every trace ever
 * written still reads as it did.
 */
static int (*const native_versions[])(const char *, const char *, pt_event *, pt_err *) = {
    native_record_v1,
};
_Static_assert(sizeof native_versions / sizeof native_versions[0] == PT_TRACE_VERSION,
               "one reader per trace format version");

static int native_open(pt_trace *t, const pt_trace_opts *opts, pt_err *err) {
  native_state *st = calloc(1, sizeof *st);
  if (!st) return pt_err_set(err, PT_ENOMEM, "out of memory");
  st->buf = malloc(NATIVE_CHUNK);
  if (!st->buf) {
    free(st);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  pt_trace_set_state(t, st);
  const char *s, *e;
  int rc = native_line(t, st, &s, &e, err);
  if (rc <= 0) return rc < 0 ? rc : pt_err_set(err, PT_EFORMAT, "line 1: truncated header");
  const char *p = s + sizeof NATIVE_MAGIC - 1;
  uint64_t version;
  if (p == e || (*p != ' ' && *p != '\t') || parse_u64(&p, e, "version", &version, err) < 0 ||
      !at_end(p, e))
    return pt_err_set(err, PT_EFORMAT, "line 1: bad header, expected \"pagetune-trace %d\"",
                      PT_TRACE_VERSION);
  if (version > PT_TRACE_VERSION)
    return pt_err_set(err, PT_EFORMAT,
                      "line 1: written by a newer pagetune (trace format %llu > %d); upgrade pagetune",
                      (unsigned long long)version, PT_TRACE_VERSION);
  if (version == 0) return pt_err_set(err, PT_EFORMAT, "line 1: no trace format version 0");
  st->record = native_versions[version - 1];
  pt_trace_info *info = pt_trace_info_mut(t);
  info->version = (int)version;
  /* header fields: "@key value" lines before the first record */
  while ((rc = native_line(t, st, &s, &e, err)) > 0) {
    if (s == e || *s != '@') { /* first record: hand it to next() */
      st->pending = 1;
      st->ps = s;
      st->pe = e;
      break;
    }
    p = s + 1;
    const char *k = p;
    while (p < e && *p != ' ' && *p != '\t') p++;
    size_t klen = (size_t)(p - k);
    if (klen == 6 && !memcmp(k, "source", 6)) header_text(info->source, sizeof info->source, p, e);
    else if (klen == 4 && !memcmp(k, "tool", 4)) header_text(info->tool, sizeof info->tool, p, e);
    else if (klen == 8 && !memcmp(k, "settings", 8))
      header_text(info->settings, sizeof info->settings, p, e);
    else if (klen == 6 && !memcmp(k, "device", 6)) {
      uint64_t d;
      if (parse_u64(&p, e, "device", &d, err) < 0 || d > 4096 || !at_end(p, e))
        return pt_err_set(err, PT_EFORMAT, "line %llu: bad @device", (unsigned long long)st->line);
      info->device = (int)d;
    } else if (klen == 5 && !memcmp(k, "syncs", 5)) {
      char v[16];
      header_text(v, sizeof v, p, e);
      info->syncs_recorded = !strcmp(v, "recorded"); /* another value: not known to this reader, ignored */
    } /* other keys: ignored, so newer writers stay readable */
  }
  if (rc < 0) return rc;
  /* a native trace holds one device: --device names it or is a mistake, never a choice among several */
  if (opts->device >= 0 && info->device >= 0 && opts->device != info->device)
    return pt_err_set(err, PT_ENOTFOUND, "@device: the trace holds device %d, not --device %d", info->device,
                      opts->device);
  return 0;
}

/* Version 1's records: one line [s, e) that is not blank, a comment, @, + or end.  Returns 1 or <0. */
static int native_record_v1(const char *s, const char *e, pt_event *ev, pt_err *err) {
  memset(ev, 0, sizeof *ev);
  const char *p = s + 1;
  int rc = 0;
  if (p < e && *p != ' ' && *p != '\t')
    return pt_err_set(err, PT_EFORMAT, "unknown record \"%.*s\"", (int)(e - s > 16 ? 16 : e - s), s);
  ev->kind = (uint8_t)*s;
  switch (*s) {
  case 'a':
    if ((rc = parse_u64(&p, e, "id", &ev->id, err)) < 0 ||
        (rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_stream(&p, e, &ev->stream, err)) < 0 ||
        (rc = parse_time(&p, e, &ev->time_us, err)) < 0)
      return rc;
    if (!at_end(p, e)) {
      if ((rc = parse_u64(&p, e, "addr", &ev->addr, err)) < 0) return rc;
      ev->flags |= PT_EVF_HAS_ADDR;
    }
    break;
  case 'f':
    if ((rc = parse_u64(&p, e, "id", &ev->id, err)) < 0 || (rc = parse_time(&p, e, &ev->time_us, err)) < 0)
      return rc;
    break;
  case 'x':
    if ((rc = parse_u64(&p, e, "id", &ev->id, err)) < 0 ||
        (rc = parse_u64(&p, e, "offset", &ev->offset, err)) < 0 ||
        (rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_time(&p, e, &ev->time_us, err)) < 0)
      return rc;
    break;
  case 'S': {
    uint64_t flags = 0;
    if ((rc = parse_u64(&p, e, "addr", &ev->addr, err)) < 0 ||
        (rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_stream(&p, e, &ev->stream, err)) < 0)
      return rc;
    if (!at_end(p, e) && (rc = parse_u64(&p, e, "flags", &flags, err)) < 0) return rc;
    if (flags & ~(uint64_t)PT_SEGF_EXPANDABLE) return pt_err_set(err, PT_EFORMAT, "unknown segment flags");
    ev->flags = (uint8_t)flags;
    break;
  }
  case 'I':
    if ((rc = parse_u64(&p, e, "id", &ev->id, err)) < 0 ||
        (rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_stream(&p, e, &ev->stream, err)) < 0 ||
        (rc = parse_u64(&p, e, "addr", &ev->addr, err)) < 0)
      return rc;
    ev->flags = PT_EVF_HAS_ADDR;
    break;
  case 'A':
  case 'F':
  case 'M':
  case 'U':
    if ((rc = parse_u64(&p, e, "addr", &ev->addr, err)) < 0 ||
        (rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_stream(&p, e, &ev->stream, err)) < 0 ||
        (rc = parse_time(&p, e, &ev->time_us, err)) < 0)
      return rc;
    break;
  case 'O':
    if ((rc = parse_u64(&p, e, "bytes", &ev->bytes, err)) < 0 ||
        (rc = parse_stream(&p, e, &ev->stream, err)) < 0 ||
        (rc = parse_time(&p, e, &ev->time_us, err)) < 0)
      return rc;
    break;
  default:
    return pt_err_set(err, PT_EFORMAT, "unknown record \"%.*s\"", (int)(e - s > 16 ? 16 : e - s), s);
  }
  if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after record '%c'", *s);
  return 1;
}

/* One escaped text field (frames.h) of a +frame line, decoded in place into *f. */
static int text_field(const char **p, const char *e, char **f, size_t *n, const char *what, pt_err *err) {
  const char *q = skip_blank(*p, e), *start = q;
  while (q < e && *q != ' ' && *q != '\t') q++;
  if (q == start) return pt_err_set(err, PT_EFORMAT, "missing field %s", what);
  *f = (char *)start; /* the line lives in the reader's own buffer */
  long len = pt_frames_unescape(*f, (size_t)(q - start));
  if (len < 0) return pt_err_set(err, PT_EFORMAT, "bad %%XX escape in field %s", what);
  *n = (size_t)len;
  *p = q;
  return 0;
}

/*
 * Extension lines (traces/FORMAT.md): `+frame FID LINE NAME FILE`,
 * `+stack SID FID...` and `+at SID`, numbered in order from 1; any other
 * tag is skipped, as the format's rule says.
 */
static int native_extension(pt_trace *t, native_state *st, const char *s, const char *e, pt_err *err) {
  const char *p = s + 1, *k = p;
  while (p < e && *p != ' ' && *p != '\t') p++;
  size_t klen = (size_t)(p - k);
  pt_frames *fr = &t->frames;
  uint64_t id, v;
  int rc;
  if (klen == 5 && !memcmp(k, "frame", 5)) {
    char *name, *file;
    size_t nn, fn;
    uint32_t got;
    if ((rc = parse_u64(&p, e, "frame id", &id, err)) < 0 || (rc = parse_u64(&p, e, "line", &v, err)) < 0 ||
        (rc = text_field(&p, e, &name, &nn, "name", err)) < 0 ||
        (rc = text_field(&p, e, &file, &fn, "file", err)) < 0)
      return rc;
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +frame");
    if (id != fr->nframes + 1)
      return pt_err_set(err, PT_EFORMAT, "+frame %llu out of order (expected %zu)", (unsigned long long)id,
                        fr->nframes + 1);
    if (v > UINT32_MAX) return pt_err_set(err, PT_EFORMAT, "line number out of range");
    if (pt_frames_intern_frame(fr, file, fn, name, nn, (uint32_t)v, &got) < 0)
      return pt_err_set(err, PT_ENOMEM, "out of memory");
    if (got != id) return pt_err_set(err, PT_EFORMAT, "+frame %llu repeats frame %u", (unsigned long long)id, got);
    return 0;
  }
  if (klen == 5 && !memcmp(k, "stack", 5)) {
    uint32_t fids[256], got;
    size_t n = 0;
    if ((rc = parse_u64(&p, e, "stack id", &id, err)) < 0) return rc;
    while (!at_end(p, e)) {
      if ((rc = parse_u64(&p, e, "frame id", &v, err)) < 0) return rc;
      if (!v || v > fr->nframes) return pt_err_set(err, PT_EFORMAT, "+stack names frame %llu, not defined", (unsigned long long)v);
      if (n == sizeof fids / sizeof fids[0]) return pt_err_set(err, PT_ELIMIT, "+stack of more than 256 frames");
      fids[n++] = (uint32_t)v;
    }
    if (!n) return pt_err_set(err, PT_EFORMAT, "+stack without frames");
    if (id != fr->nstacks + 1)
      return pt_err_set(err, PT_EFORMAT, "+stack %llu out of order (expected %zu)", (unsigned long long)id,
                        fr->nstacks + 1);
    if (pt_frames_intern_stack(fr, fids, n, &got) < 0) return pt_err_set(err, PT_ENOMEM, "out of memory");
    if (got != id) return pt_err_set(err, PT_EFORMAT, "+stack %llu repeats stack %u", (unsigned long long)id, got);
    return 0;
  }
  if (klen == 2 && !memcmp(k, "at", 2)) {
    if ((rc = parse_u64(&p, e, "stack id", &id, err)) < 0) return rc;
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +at");
    if (!id || id > fr->nstacks) return pt_err_set(err, PT_EFORMAT, "+at names stack %llu, not defined", (unsigned long long)id);
    if (st->at) return pt_err_set(err, PT_EFORMAT, "two +at lines for one record");
    st->at = (uint32_t)id;
    return 0;
  }
  if (klen == 4 && !memcmp(k, "pool", 4)) {
    uint16_t pool;
    if ((rc = parse_u64(&p, e, "pool id (first)", &id, err)) < 0 || (rc = parse_u64(&p, e, "pool id (second)", &v, err)) < 0)
      return rc;
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +pool");
    if (st->pool) return pt_err_set(err, PT_EFORMAT, "two +pool lines for one record");
    rc = pt_pools_intern(&t->pools, id, v, &pool);
    if (rc == PT_EFORMAT) return pt_err_set(err, PT_EFORMAT, "+pool 0 0 is the default pool, never written");
    if (rc == PT_ELIMIT) return pt_err_set(err, PT_ELIMIT, "more than %d private pools", PT_TRACE_MAX_POOLS);
    if (rc < 0) return pt_err_set(err, PT_ENOMEM, "out of memory");
    st->pool = pool;
    return 0;
  }
  if (klen == 7 && !memcmp(k, "capture", 7)) {
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +capture");
    if (st->capture) return pt_err_set(err, PT_EFORMAT, "two +capture lines for one record");
    st->capture = 1;
    return 0;
  }
  if (klen == 4 && !memcmp(k, "sync", 4)) {
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +sync");
    if (st->sync) return pt_err_set(err, PT_EFORMAT, "two +sync lines for one record");
    st->sync = 1;
    return 0;
  }
  if ((klen == 5 && !memcmp(k, "event", 5)) || (klen == 4 && !memcmp(k, "wait", 4))) {
    pt_order_op op = {.before = st->records, .wait = klen == 4};
    uint64_t a, b;
    if ((rc = parse_u64(&p, e, op.wait ? "stream" : "event", &a, err)) < 0 ||
        (rc = parse_u64(&p, e, op.wait ? "event" : "stream", &b, err)) < 0)
      return rc;
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +%s", op.wait ? "wait" : "event");
    op.event = op.wait ? b : a;
    op.stream = op.wait ? a : b;
    if (!op.event || op.event >= PT_TRACE_MAX_EVENTS)
      return pt_err_set(err, PT_EFORMAT, "event %llu: events are numbered 1 to %llu", (unsigned long long)op.event,
                        (unsigned long long)(PT_TRACE_MAX_EVENTS - 1));
    if ((rc = stream_check(op.stream, NULL, err)) < 0) return rc;
    if (st->order == PT_TRACE_MAX_ORDER_RUN)
      return pt_err_set(err, PT_ELIMIT, "more than %d +event and +wait lines before one record", PT_TRACE_MAX_ORDER_RUN);
    if (order_add(&t->order, &op) < 0) return pt_err_set(err, PT_ENOMEM, "out of memory");
    st->order++;
    return 0;
  }
  if (klen == 8 && !memcmp(k, "deferred", 8)) {
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +deferred");
    if (st->deferred) return pt_err_set(err, PT_EFORMAT, "two +deferred lines for one record");
    st->deferred = 1;
    return 0;
  }
  if (klen == 3 && !memcmp(k, "gpu", 3)) {
    if ((rc = parse_u64(&p, e, "request count", &v, err)) < 0) return rc;
    if (!at_end(p, e)) return pt_err_set(err, PT_EFORMAT, "extra fields after +gpu");
    if (st->gpu) return pt_err_set(err, PT_EFORMAT, "two +gpu lines for one record");
    if (v > PT_TRACE_MAX_GPU_REQUESTS)
      return pt_err_set(err, PT_EFORMAT, "+gpu %llu: more than 2^40 requests", (unsigned long long)v);
    st->gpu = 1;
    st->gpu_lag = v;
    return 0;
  }
  return 0; /* a tag this build does not know */
}

/* What *pending (a +tag line's) says of the record after it, which may be any but an initial-state record: its
   flag set, *pending cleared; 0, or the error. */
static int flag_next(const native_state *st, pt_event *ev, int *pending, uint8_t flag, const char *tag, pt_err *err) {
  if (!*pending) return 0;
  if (ev->kind == PT_EV_INIT_SEGMENT || ev->kind == PT_EV_INIT_ALLOC)
    return pt_err_set(err, PT_EFORMAT, "line %llu: %s before an initial-state record", (unsigned long long)st->line, tag);
  ev->flags |= flag;
  *pending = 0;
  return 0;
}

static int native_next(pt_trace *t, pt_event *ev, pt_err *err) {
  native_state *st = pt_trace_state(t);
  const char *s, *e;
  int rc;
  while ((rc = native_line(t, st, &s, &e, err)) > 0) {
    s = skip_blank(s, e);
    if (s == e || *s == '#') continue;
    if (st->ended)
      return pt_err_set(err, PT_EFORMAT, "line %llu: record after the end line",
                        (unsigned long long)st->line);
    if (e - s >= 3 && !memcmp(s, "end", 3) && (e - s == 3 || s[3] == ' ' || s[3] == '\t')) {
      const char *p = s + 3;
      uint64_t n;
      if (parse_u64(&p, e, "count", &n, err) < 0 || !at_end(p, e))
        return pt_err_set(err, PT_EFORMAT, "line %llu: bad end line", (unsigned long long)st->line);
      if (st->at || st->pool || st->capture || st->deferred || st->gpu || st->sync || st->order)
        return pt_err_set(err, PT_EFORMAT, "line %llu: +%s before the end line", (unsigned long long)st->line,
                          st->at ? "at" : st->pool ? "pool" : st->capture ? "capture" : st->deferred ? "deferred"
                          : st->gpu ? "gpu" : st->sync ? "sync" : "event or +wait");
      if (n != st->records)
        return pt_err_set(err, PT_EFORMAT, "line %llu: end line says %llu records, file has %llu",
                          (unsigned long long)st->line, (unsigned long long)n,
                          (unsigned long long)st->records);
      st->ended = 1;
      continue;
    }
    if (*s == '@')
      return pt_err_set(err, PT_EFORMAT, "line %llu: header field after the first record",
                        (unsigned long long)st->line);
    if (*s == '+') { /* an extension line: frames are read, other tags skipped */
      if ((rc = native_extension(t, st, s, e, err)) < 0)
        return pt_err_prefix(err, rc, "line %llu", (unsigned long long)st->line);
      continue;
    }
    rc = st->record(s, e, ev, err);
    if (rc < 0) return pt_err_prefix(err, rc, "line %llu", (unsigned long long)st->line);
    if (st->at) {
      if (ev->kind != PT_EV_ALLOC && ev->kind != PT_EV_INIT_ALLOC)
        return pt_err_set(err, PT_EFORMAT, "line %llu: +at before a '%c' record, not an allocation",
                          (unsigned long long)st->line, ev->kind);
      ev->stack = st->at;
      st->at = 0;
    }
    if (st->pool) {
      if (ev->kind == PT_EV_FREE || ev->kind == PT_EV_ACCESS || ev->kind == PT_EV_OOM)
        return pt_err_set(err, PT_EFORMAT, "line %llu: +pool before a '%c' record, which has no address of its own",
                          (unsigned long long)st->line, ev->kind);
      ev->pool = st->pool;
      st->pool = 0;
    }
    if ((rc = flag_next(st, ev, &st->capture, PT_EVF_CAPTURE, "+capture", err)) < 0 ||
        (rc = flag_next(st, ev, &st->sync, PT_EVF_SYNC, "+sync", err)) < 0 ||
        (rc = flag_next(st, ev, &st->order, PT_EVF_ORDER, "+event or +wait", err)) < 0)
      return rc;
    if (st->deferred) {
      if (ev->kind != PT_EV_FREE)
        return pt_err_set(err, PT_EFORMAT, "line %llu: +deferred before a '%c' record, not a free",
                          (unsigned long long)st->line, ev->kind);
      ev->flags |= PT_EVF_DEFERRED;
      st->deferred = 0;
    }
    if (st->gpu) {
      if (ev->kind != PT_EV_FREE)
        return pt_err_set(err, PT_EFORMAT, "line %llu: +gpu before a '%c' record, not a free",
                          (unsigned long long)st->line, ev->kind);
      ev->flags |= PT_EVF_GPU_LAG;
      ev->offset = st->gpu_lag;
      st->gpu = 0;
    }
    st->records++;
    return 1;
  }
  if (rc < 0) return rc;
  if (!st->ended)
    return pt_err_set(err, PT_EFORMAT, "line %llu: truncated (no end line)", (unsigned long long)st->line);
  return 0;
}

static void native_position(pt_trace *t, char *buf, size_t n) {
  native_state *st = pt_trace_state(t);
  snprintf(buf, n, "line %llu", (unsigned long long)st->line);
}

static void native_close(pt_trace *t) {
  native_state *st = pt_trace_state(t);
  if (!st) return;
  free(st->buf);
  free(st);
}

static const pt_trace_format pt_native_format = {
    "native", native_probe, native_open, native_next, native_close, native_position};

/* ---- native format: writer ------------------------------------------------ */

#define WBUF 65536

struct pt_trace_writer {
  gzFile gz;
  char *path, *tmp;
  uint64_t records;
  /* frames: the source table, and the id each source frame / stack was written as (0: not yet) */
  const pt_frames *frames;
  const pt_pools *pools;       /* what events' pool numbers name */
  uint32_t *frame_out, *stack_out;
  size_t frame_cap, stack_cap; /* source ids they cover */
  uint32_t nframes_out, nstacks_out;
  int order;                   /* a +event / +wait line written, for the next record */
  size_t len;
  char buf[WBUF];
};

static int wflush(pt_trace_writer *w, pt_err *err) {
  if (w->len && gzwrite(w->gz, w->buf, (unsigned)w->len) != (int)w->len) {
    int zerr;
    const char *m = gzerror(w->gz, &zerr);
    return pt_err_set(err, PT_EIO, "%s: write failed: %s", w->path,
                      zerr == Z_ERRNO ? strerror(errno) : m);
  }
  w->len = 0;
  return 0;
}

static char *put_u64(char *p, uint64_t v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10); while ((v /= 10));
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_hex(char *p, uint64_t v) {
  static const char hex[] = "0123456789abcdef";
  char tmp[20];
  int n = 0;
  do tmp[n++] = hex[v & 15]; while ((v >>= 4));
  *p++ = '0';
  *p++ = 'x';
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

static int wtext(pt_trace_writer *w, const char *s, pt_err *err) {
  size_t n = strlen(s);
  if (w->len + n > WBUF && wflush(w, err) < 0) return PT_EIO;
  if (n > WBUF) return pt_err_set(err, PT_ELIMIT, "header text too long");
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  return 0;
}

/* Header text must stay on one line. */
static int wheader(pt_trace_writer *w, const char *key, const char *val, pt_err *err) {
  char line[1400];
  size_t n = (size_t)snprintf(line, sizeof line - 1, "@%s %s", key, val);
  if (n >= sizeof line - 1) n = sizeof line - 2;
  for (size_t i = 1; i < n; i++)
    if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
  line[n] = '\n';
  line[n + 1] = 0;
  return wtext(w, line, err);
}

int pt_trace_writer_open(const char *path, const pt_trace_info *info, pt_err *err,
                         pt_trace_writer **out) {
  *out = NULL;
  pt_trace_writer *w = calloc(1, sizeof *w);
  size_t plen = strlen(path);
  if (!w || !(w->path = strdup(path)) || !(w->tmp = malloc(plen + 16))) {
    if (w) free(w->path);
    free(w);
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  }
  int fd = pt_file_create_beside(path, w->tmp, plen + 16, err);
  if (fd < 0) {
    free(w->tmp);
    free(w->path);
    free(w);
    return PT_EIO;
  }
  int gzip = plen > 3 && !strcmp(path + plen - 3, ".gz");
  w->gz = gzdopen(fd, gzip ? "wb6" : "wbT");
  if (!w->gz) {
    close(fd);
    pt_trace_writer_abort(w);
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  }
  char head[64];
  snprintf(head, sizeof head, NATIVE_MAGIC " %d\n", PT_TRACE_VERSION);
  int rc = wtext(w, head, err);
  if (rc == 0 && info->source[0]) rc = wheader(w, "source", info->source, err);
  if (rc == 0 && info->tool[0]) rc = wheader(w, "tool", info->tool, err);
  if (rc == 0 && info->device >= 0) {
    char d[16];
    snprintf(d, sizeof d, "%d", info->device);
    rc = wheader(w, "device", d, err);
  }
  if (rc == 0 && info->settings[0]) rc = wheader(w, "settings", info->settings, err);
  if (rc == 0 && info->syncs_recorded) rc = wheader(w, "syncs", "recorded", err);
  if (rc < 0) {
    pt_trace_writer_abort(w);
    return rc;
  }
  *out = w;
  return 0;
}

void pt_trace_writer_set_frames(pt_trace_writer *w, const pt_frames *f) { w->frames = f; }
void pt_trace_writer_set_pools(pt_trace_writer *w, const pt_pools *p) { w->pools = p; }

/* Room for n more bytes in the buffer. */
static int wroom(pt_trace_writer *w, size_t n, pt_err *err) {
  return w->len + n > WBUF ? wflush(w, err) : 0;
}

/* Grow *out (ids by source id, 0: not written) to cover source ids up to n: a reader's table
   grows as it reads. */
static int out_ids(uint32_t **out, size_t *cap, size_t n) {
  if (n < *cap) return 0;
  uint32_t *o = realloc(*out, (n + 1) * sizeof *o);
  if (!o) return PT_ENOMEM;
  memset(o + *cap, 0, (n + 1 - *cap) * sizeof *o);
  *out = o;
  *cap = n + 1;
  return 0;
}

/* The lines ev's stack needs (its frames and itself, the first time) and its +at line.  Ids
   are renumbered in the order written, so a file's ids count from 1 whatever the source's were. */
static int wstack(pt_trace_writer *w, uint32_t sid, pt_err *err) {
  const pt_frames *f = w->frames;
  const uint32_t *fids;
  size_t n = pt_frames_stack(f, sid, &fids);
  if (!n) return pt_err_set(err, PT_EFORMAT, "%s: stack %u unknown", w->path, sid);
  if (out_ids(&w->stack_out, &w->stack_cap, f->nstacks) < 0 || out_ids(&w->frame_out, &w->frame_cap, f->nframes) < 0)
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", w->path);
  if (!w->stack_out[sid]) {
    for (size_t i = 0; i < n; i++) {
      if (w->frame_out[fids[i]]) continue;
      const pt_frame *fr = pt_frames_frame(f, fids[i]);
      size_t fl = strlen(fr->file), nl = strlen(fr->name);
      if (3 * (fl + nl) + 64 > PT_TRACE_MAX_LINE) return pt_err_set(err, PT_ELIMIT, "%s: frame text too long", w->path);
      if (wroom(w, 3 * (fl + nl) + 64, err) < 0) return PT_EIO;
      char *p = w->buf + w->len;
      memcpy(p, "+frame ", 7);
      p = put_u64(p + 7, ++w->nframes_out);
      *p++ = ' ';
      p = put_u64(p, fr->line);
      *p++ = ' ';
      p += pt_frames_escape(fr->name, nl, p);
      *p++ = ' ';
      p += pt_frames_escape(fr->file, fl, p);
      *p++ = '\n';
      w->len = (size_t)(p - w->buf);
      w->frame_out[fids[i]] = w->nframes_out;
    }
    if (n > 256) return pt_err_set(err, PT_ELIMIT, "%s: a stack of more than 256 frames", w->path);
    if (wroom(w, 32 + 12 * n, err) < 0) return PT_EIO;
    char *p = w->buf + w->len;
    memcpy(p, "+stack ", 7);
    p = put_u64(p + 7, ++w->nstacks_out);
    for (size_t i = 0; i < n; i++) {
      *p++ = ' ';
      p = put_u64(p, w->frame_out[fids[i]]);
    }
    *p++ = '\n';
    w->len = (size_t)(p - w->buf);
    w->stack_out[sid] = w->nstacks_out;
  }
  if (wroom(w, 32, err) < 0) return PT_EIO;
  char *p = w->buf + w->len;
  memcpy(p, "+at ", 4);
  p = put_u64(p + 4, w->stack_out[sid]);
  *p++ = '\n';
  w->len = (size_t)(p - w->buf);
  return 0;
}

int pt_trace_writer_put_order(pt_trace_writer *w, const pt_order_op *op, pt_err *err) {
  if (!op->event || op->event >= PT_TRACE_MAX_EVENTS)
    return pt_err_set(err, PT_EFORMAT, "%s: event %llu: events are numbered 1 to %llu", w->path,
                      (unsigned long long)op->event, (unsigned long long)(PT_TRACE_MAX_EVENTS - 1));
  int rc = stream_check(op->stream, w->path, err);
  if (rc < 0) return rc;
  if (w->len + 64 > WBUF && wflush(w, err) < 0) return PT_EIO;
  char *p = w->buf + w->len;
  if (op->wait) {
    memcpy(p, "+wait ", 6);
    p = put_hex(p + 6, op->stream);
    *p++ = ' ';
    p = put_u64(p, op->event);
  } else {
    memcpy(p, "+event ", 7);
    p = put_u64(p + 7, op->event);
    *p++ = ' ';
    p = put_hex(p, op->stream);
  }
  *p++ = '\n';
  w->len = (size_t)(p - w->buf);
  w->order = 1;
  return 0;
}

int pt_trace_writer_put(pt_trace_writer *w, const pt_event *ev, pt_err *err) {
  int src = stream_check(ev->stream, w->path, err);
  if (src < 0) return src;
  if (w->order && (ev->kind == PT_EV_INIT_SEGMENT || ev->kind == PT_EV_INIT_ALLOC))
    return pt_err_set(err, PT_EFORMAT, "%s: stream order before an initial-state record", w->path);
  w->order = 0;
  if (ev->stack && w->frames && (ev->kind == PT_EV_ALLOC || ev->kind == PT_EV_INIT_ALLOC) &&
      (src = wstack(w, ev->stack, err)) < 0)
    return src;
  if (w->len + 224 > WBUF && wflush(w, err) < 0) return PT_EIO;
  char *p = w->buf + w->len;
  if (ev->flags & PT_EVF_CAPTURE) {
    memcpy(p, "+capture\n", 9);
    p += 9;
  }
  if (ev->flags & PT_EVF_SYNC) {
    memcpy(p, "+sync\n", 6);
    p += 6;
  }
  if (ev->kind == PT_EV_FREE && (ev->flags & PT_EVF_DEFERRED)) {
    memcpy(p, "+deferred\n", 10);
    p += 10;
  }
  if (ev->kind == PT_EV_FREE && (ev->flags & PT_EVF_GPU_LAG)) { /* +gpu K: requests before the GPU passed it */
    memcpy(p, "+gpu ", 5);
    p = put_u64(p + 5, ev->offset);
    *p++ = '\n';
  }
  if (ev->pool) { /* +pool FIRST SECOND: the private pool the record is in */
    if (!w->pools || ev->pool > w->pools->n)
      return pt_err_set(err, PT_EFORMAT, "%s: pool %u unknown", w->path, (unsigned)ev->pool);
    const pt_pool_id *id = &w->pools->id[ev->pool - 1];
    memcpy(p, "+pool ", 6);
    p = put_u64(p + 6, id->first);
    *p++ = ' ';
    p = put_u64(p, id->second);
    *p++ = '\n';
  }
  *p++ = (char)ev->kind;
#define SP(x) (*p++ = ' ', p = (x))
  switch (ev->kind) {
  case PT_EV_ALLOC:
    SP(put_u64(p, ev->id)); SP(put_u64(p, ev->bytes)); SP(put_hex(p, ev->stream));
    SP(put_i64(p, ev->time_us));
    if (ev->flags & PT_EVF_HAS_ADDR) SP(put_hex(p, ev->addr));
    break;
  case PT_EV_FREE:
    SP(put_u64(p, ev->id)); SP(put_i64(p, ev->time_us));
    break;
  case PT_EV_ACCESS:
    SP(put_u64(p, ev->id)); SP(put_u64(p, ev->offset)); SP(put_u64(p, ev->bytes));
    SP(put_i64(p, ev->time_us));
    break;
  case PT_EV_INIT_SEGMENT:
    SP(put_hex(p, ev->addr)); SP(put_u64(p, ev->bytes)); SP(put_hex(p, ev->stream));
    if (ev->flags & PT_SEGF_EXPANDABLE) SP(put_u64(p, PT_SEGF_EXPANDABLE));
    break;
  case PT_EV_INIT_ALLOC:
    SP(put_u64(p, ev->id)); SP(put_u64(p, ev->bytes)); SP(put_hex(p, ev->stream));
    SP(put_hex(p, ev->addr));
    break;
  case PT_EV_SEG_ALLOC:
  case PT_EV_SEG_FREE:
  case PT_EV_SEG_MAP:
  case PT_EV_SEG_UNMAP:
    SP(put_hex(p, ev->addr)); SP(put_u64(p, ev->bytes)); SP(put_hex(p, ev->stream));
    SP(put_i64(p, ev->time_us));
    break;
  case PT_EV_OOM:
    SP(put_u64(p, ev->bytes)); SP(put_hex(p, ev->stream)); SP(put_i64(p, ev->time_us));
    break;
  default:
    return pt_err_set(err, PT_EFORMAT, "%s: cannot write record kind %d", w->path, ev->kind);
  }
#undef SP
  *p++ = '\n';
  w->len = (size_t)(p - w->buf);
  w->records++;
  return 0;
}

int pt_trace_writer_commit(pt_trace_writer *w, pt_err *err) {
  if (w->order) {
    int rc = pt_err_set(err, PT_EFORMAT, "%s: stream order after the last record", w->path);
    pt_trace_writer_abort(w);
    return rc;
  }
  char end[40];
  char *p = end + sizeof "end " - 1;
  memcpy(end, "end ", 4);
  p = put_u64(p, w->records);
  *p++ = '\n';
  *p = 0;
  int rc = wtext(w, end, err);
  if (rc == 0) rc = wflush(w, err);
  int zrc = gzclose(w->gz);
  w->gz = NULL;
  if (rc == 0 && zrc != Z_OK)
    rc = pt_err_set(err, PT_EIO, "%s: write failed (%s)", w->path,
                    zrc == Z_ERRNO ? strerror(errno) : "zlib error");
  if (rc == 0 && rename(w->tmp, w->path) != 0)
    rc = pt_err_set(err, PT_EIO, "%s: cannot rename into place: %s", w->path, strerror(errno));
  if (rc < 0) {
    pt_trace_writer_abort(w);
    return rc;
  }
  free(w->frame_out);
  free(w->stack_out);
  free(w->tmp);
  free(w->path);
  free(w);
  return 0;
}

void pt_trace_writer_abort(pt_trace_writer *w) {
  if (!w) return;
  if (w->gz) gzclose(w->gz);
  unlink(w->tmp);
  free(w->frame_out);
  free(w->stack_out);
  free(w->tmp);
  free(w->path);
  free(w);
}
