/* record.c — native traces written by a running allocator (see record.h). */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "u64map.h"

#define LINE_MAX_BYTES 128 /* the longest record line: "a" and five 20-digit fields */

/*
 * A record: the buffer, the sink, the live addresses.  live maps an address
 * to its id; ids count from 1 and are never given again, so the reader's rule
 * (no id allocated while live) holds by construction.  failed is sticky: the
 * first I/O error, after which nothing is written.
 */
struct pt_record {
  pthread_mutex_t lock;
  pt_record_sink sink;
  char *name;
  char *buf;
  size_t len, cap;
  uint64_t next_id;   /* the next allocation's id */
  uint64_t records;   /* lines written: the `end` count */
  pt_u64map live;     /* addr -> id */
  int failed;         /* 0, or the PT_E* of the first I/O failure */
  pt_err fail_err;    /* its message */
};

/* ---- a file as a sink ------------------------------------------------------ */

static int fd_write(void *ctx, const void *buf, size_t n, pt_err *err) {
  int fd = *(int *)ctx;
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return pt_err_set(err, PT_EIO, "write failed: %s", w < 0 ? strerror(errno) : "nothing written");
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int fd_finish(void *ctx, pt_err *err) {
  int *fd = ctx, rc = 0;
  /* a pipe or a device cannot be synced (EINVAL, EROFS); anything else is a write that did not land */
  if (fsync(*fd) < 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
    rc = pt_err_set(err, PT_EIO, "fsync failed: %s", strerror(errno));
  if (close(*fd) < 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "close failed: %s", strerror(errno));
  free(fd);
  return rc;
}

static void fd_abandon(void *ctx) {
  close(*(int *)ctx);
  free(ctx);
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

int pt_record_open(const char *path, const pt_record_meta *meta, pt_err *err, pt_record **out) {
  *out = NULL;
  if (ends_with(path, ".gz"))
    return pt_err_set(err, PT_EUSAGE, "%s: the allocator records plain text (it links no zlib): name the file without .gz, "
                      "gzip it afterwards", path);
  int *fd = malloc(sizeof *fd);
  if (!fd) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (*fd < 0) {
    int e = errno;
    free(fd);
    return pt_err_set(err, PT_EIO, "%s: cannot open: %s", path, strerror(e));
  }
  pt_record_sink sink = {fd_write, fd_finish, fd_abandon, fd};
  return pt_record_open_sink(&sink, path, meta, err, out);
}

/* ---- lines into the buffer ---------------------------------------------------- */

/* The buffer to the sink; a failure sticks.  Under r->lock. */
static int flush(pt_record *r) {
  if (r->failed) return r->failed;
  if (!r->len) return 0;
  int rc = r->sink.write(r->sink.ctx, r->buf, r->len, &r->fail_err);
  r->len = 0;
  if (rc < 0) {
    pt_err_prefix(&r->fail_err, rc, "%s", r->name);
    r->failed = rc;
  }
  return rc;
}

/* The caller's err gets the sticky failure. */
static int failed(pt_record *r, pt_err *err) {
  if (err) *err = r->fail_err;
  return r->failed;
}

static char *put_dec(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while (v /= 10);
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_hex(char *p, uint64_t v) {
  char tmp[16];
  int n = 0;
  *p++ = '0';
  *p++ = 'x';
  do tmp[n++] = "0123456789abcdef"[v & 15];
  while (v >>= 4);
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_time(char *p, int64_t t) {
  if (t < 0) {
    *p++ = '-';
    return put_dec(p, (uint64_t)0 - (uint64_t)t);
  }
  return put_dec(p, (uint64_t)t);
}

/* Room for one more line, writing the buffer out when it is short.  Under r->lock. */
static char *line_start(pt_record *r) {
  if (r->cap - r->len < LINE_MAX_BYTES && flush(r) < 0) return NULL;
  return r->buf + r->len;
}

/* One record at p (from line_start): tag, then a field per letter of how (d decimal, x hex, t a time). */
static void put_record(pt_record *r, char *p, char tag, const char *how, const uint64_t *v) {
  *p++ = tag;
  for (; *how; how++, v++) {
    *p++ = ' ';
    p = *how == 'd' ? put_dec(p, *v) : *how == 'x' ? put_hex(p, *v) : put_time(p, (int64_t)*v);
  }
  *p++ = '\n';
  r->len = (size_t)(p - r->buf);
  r->records++;
}

/* What the reader would refuse in a request's size, stream or time: PT_EUSAGE, or 0. */
static int check_request(pt_record *r, uint64_t bytes, uint64_t stream, int64_t time_us, pt_err *err) {
  if (bytes > PT_RECORD_MAX_BYTES)
    return pt_err_set(err, PT_EUSAGE, "%s: a request of %llu bytes (the trace's limit is 2^50)", r->name, (unsigned long long)bytes);
  if (stream >> 63) /* a handle is an address: the trace's streams are below 2^63 */
    return pt_err_set(err, PT_EUSAGE, "%s: stream 0x%llx is past the trace's 2^63", r->name, (unsigned long long)stream);
  if (time_us == INT64_MIN) /* the reader takes times from -(2^63 - 1) to 2^63 - 1 */
    return pt_err_set(err, PT_EUSAGE, "%s: time %lld is outside the trace's range", r->name, (long long)time_us);
  return 0;
}

/* Header text into the buffer (it is empty and at least PT_RECORD_MIN_BUFFER long); settings may need flushes. */
static int put_text(pt_record *r, const char *s, size_t n, int clean) {
  for (size_t i = 0; i < n; i++) {
    if (r->len == r->cap && flush(r) < 0) return r->failed;
    char c = s[i];
    r->buf[r->len++] = clean && (c == '\n' || c == '\r' || c == 0) ? ' ' : c;
  }
  return 0;
}

static int put_header(pt_record *r, const pt_record_meta *m) {
  char head[512];
  char *p = head;
  memcpy(p, "pagetune-trace ", 15);
  p = put_dec(p + 15, PT_RECORD_VERSION);
  const char *source = m->source ? m->source : "pagetune-alloc", *tool = m->tool ? m->tool : "libpagetune_alloc.so";
  int rc = put_text(r, head, (size_t)(p - head), 0);
  const char *parts[][2] = {{"\n@source ", source}, {"\n@tool ", tool}};
  for (size_t i = 0; rc == 0 && i < 2; i++)
    if ((rc = put_text(r, parts[i][0], strlen(parts[i][0]), 0)) == 0) rc = put_text(r, parts[i][1], strnlen(parts[i][1], 256), 1);
  p = head;
  memcpy(p, "\n@device ", 9);
  p = put_dec(p + 9, (uint64_t)m->device);
  if (rc == 0) rc = put_text(r, head, (size_t)(p - head), 0);
  if (rc == 0 && m->settings) {
    if ((rc = put_text(r, "\n@settings ", 11, 0)) == 0)
      rc = put_text(r, m->settings, strnlen(m->settings, PT_RECORD_SETTINGS_MAX), 1);
  }
  if (rc == 0) rc = put_text(r, "\n", 1, 0);
  return rc == 0 ? flush(r) : rc;
}

static void record_free(pt_record *r) {
  pt_u64map_free(&r->live);
  pthread_mutex_destroy(&r->lock);
  free(r->buf);
  free(r->name);
  free(r);
}

int pt_record_open_sink(const pt_record_sink *sink, const char *name, const pt_record_meta *meta, pt_err *err,
                        pt_record **out) {
  *out = NULL;
  size_t cap = meta->buffer_bytes ? meta->buffer_bytes : PT_RECORD_BUFFER;
  int rc = 0;
  if (meta->device < 0 || meta->device > 4096) rc = pt_err_set(err, PT_EUSAGE, "%s: device %d out of range", name, meta->device);
  else if (cap < PT_RECORD_MIN_BUFFER) rc = pt_err_set(err, PT_EUSAGE, "%s: a buffer of %zu bytes (at least %d)", name, cap, PT_RECORD_MIN_BUFFER);
  pt_record *r = rc == 0 ? calloc(1, sizeof *r) : NULL;
  if (rc == 0 && (!r || !(r->name = strdup(name)) || !(r->buf = malloc(cap)) || pthread_mutex_init(&r->lock, NULL) != 0)) {
    if (r) {
      free(r->buf);
      free(r->name);
      free(r);
    }
    rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", name);
  }
  if (rc < 0) {
    if (sink->abandon) sink->abandon(sink->ctx);
    return rc;
  }
  r->sink = *sink;
  r->cap = cap;
  r->next_id = 1;
  if ((rc = put_header(r, meta)) < 0) {
    failed(r, err);
    pt_record_abandon(r);
    return rc;
  }
  r->records = 0; /* header lines are not records */
  *out = r;
  return 0;
}

int pt_record_alloc(pt_record *r, uint64_t bytes, uint64_t stream, int64_t time_us, uint64_t addr, uint64_t *id, pt_err *err) {
  *id = 0;
  pthread_mutex_lock(&r->lock);
  int rc = r->failed ? failed(r, err) : check_request(r, bytes, stream, time_us, err);
  char *p = NULL;
  if (rc == 0 && pt_u64map_get(&r->live, addr))
    rc = pt_err_set(err, PT_EUSAGE, "%s: address 0x%llx handed out again while live", r->name, (unsigned long long)addr);
  if (rc == 0 && !(p = line_start(r))) rc = failed(r, err);
  if (rc == 0 && pt_u64map_put(&r->live, addr, r->next_id) < 0) rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", r->name);
  if (rc == 0) {
    put_record(r, p, 'a', "ddxtx", (const uint64_t[]){r->next_id, bytes, stream, (uint64_t)time_us, addr});
    *id = r->next_id++;
  }
  pthread_mutex_unlock(&r->lock);
  return rc;
}

int pt_record_free(pt_record *r, uint64_t addr, int64_t time_us, pt_err *err) {
  pthread_mutex_lock(&r->lock);
  int rc = r->failed ? failed(r, err) : check_request(r, 0, 0, time_us, err);
  uint64_t *slot = NULL;
  char *p = NULL;
  if (rc == 0 && !(slot = pt_u64map_get(&r->live, addr)))
    rc = pt_err_set(err, PT_EUSAGE, "%s: a free of 0x%llx, which is not live", r->name, (unsigned long long)addr);
  if (rc == 0 && !(p = line_start(r))) rc = failed(r, err);
  if (rc == 0) {
    put_record(r, p, 'f', "dt", (const uint64_t[]){*slot, (uint64_t)time_us});
    pt_u64map_del(&r->live, addr);
  }
  pthread_mutex_unlock(&r->lock);
  return rc;
}

int pt_record_oom(pt_record *r, uint64_t bytes, uint64_t stream, int64_t time_us, pt_err *err) {
  pthread_mutex_lock(&r->lock);
  int rc = r->failed ? failed(r, err) : check_request(r, bytes, stream, time_us, err);
  char *p = NULL;
  if (rc == 0 && !(p = line_start(r))) rc = failed(r, err);
  if (rc == 0) put_record(r, p, 'O', "dxt", (const uint64_t[]){bytes, stream, (uint64_t)time_us});
  pthread_mutex_unlock(&r->lock);
  return rc;
}

uint64_t pt_record_count(pt_record *r) {
  pthread_mutex_lock(&r->lock);
  uint64_t n = r->records;
  pthread_mutex_unlock(&r->lock);
  return n;
}

int pt_record_close(pt_record *r, pt_err *err) {
  if (!r) return 0;
  pthread_mutex_lock(&r->lock);
  char *p = line_start(r);
  if (p) {
    memcpy(p, "end ", 4);
    p = put_dec(p + 4, r->records);
    *p++ = '\n';
    r->len = (size_t)(p - r->buf);
  }
  int rc = flush(r);
  if (rc == 0 && r->sink.finish) {
    rc = r->sink.finish(r->sink.ctx, &r->fail_err);
    if (rc < 0) pt_err_prefix(&r->fail_err, rc, "%s", r->name);
  } else if (rc < 0 && r->sink.abandon) {
    r->sink.abandon(r->sink.ctx);
  }
  if (rc < 0 && err) *err = r->fail_err;
  pthread_mutex_unlock(&r->lock);
  record_free(r);
  return rc;
}

void pt_record_abandon(pt_record *r) {
  if (!r) return;
  if (r->sink.abandon) r->sink.abandon(r->sink.ctx);
  record_free(r);
}

int pt_record_path(const char *path, int device, char *buf, size_t n) {
  size_t len = strlen(path);
  int w;
  if (device == 0) {
    w = snprintf(buf, n, "%s", path);
  } else {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
    size_t stem = dot && dot > base ? (size_t)(dot - path) : len; /* a leading dot (".trace") is no extension */
    w = snprintf(buf, n, "%.*s.dev%d%s", (int)stem, path, device, path + stem);
  }
  return w < 0 || (size_t)w >= n ? PT_ELIMIT : 0;
}

/* ---- the process's recorder ------------------------------------------------- */

enum { SLOT_NEW, SLOT_OPEN, SLOT_DONE }; /* DONE: closed, given up, or never to be opened */

typedef struct slot {
  pthread_mutex_t lock;
  int state;
  pt_record *rec;
} slot;

struct pt_recorder {
  char path[PATH_MAX];
  char *settings;
  size_t buffer_bytes;
  void (*report)(void *ctx, const char *line);
  void *report_ctx;
  int64_t epoch_us;      /* real time at create, less the monotonic clock then */
  pid_t pid;             /* the process that owns the files */
  int closed;
  slot dev[PT_ALLOC_MAX_DEVICES];
};

int pt_recorder_create(const pt_recorder_opts *o, pt_err *err, pt_recorder **out) {
  *out = NULL;
  const char *path = o->path ? o->path : "";
  if (!*path) return pt_err_set(err, PT_EUSAGE, "PAGETUNE_RECORD: an empty path");
  if (ends_with(path, ".gz"))
    return pt_err_set(err, PT_EUSAGE, "PAGETUNE_RECORD=%s: the allocator records plain text (it links no zlib): name the file "
                      "without .gz and gzip it afterwards", path);
  char probe[PATH_MAX];
  if (pt_record_path(path, PT_ALLOC_MAX_DEVICES - 1, probe, sizeof probe) < 0)
    return pt_err_set(err, PT_ELIMIT, "PAGETUNE_RECORD: a path longer than %d bytes", PATH_MAX - 8);
  const char *slash = strrchr(path, '/');
  if (slash) snprintf(probe, sizeof probe, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  else snprintf(probe, sizeof probe, ".");
  if (access(probe, W_OK | X_OK) < 0)
    return pt_err_set(err, PT_EIO, "PAGETUNE_RECORD=%s: cannot write in %s: %s", path, probe, strerror(errno));
  pt_recorder *r = calloc(1, sizeof *r);
  if (!r || (o->settings && !(r->settings = strdup(o->settings)))) {
    free(r);
    return pt_err_set(err, PT_ENOMEM, "PAGETUNE_RECORD: out of memory");
  }
  int n = 0;
  for (; n < PT_ALLOC_MAX_DEVICES; n++)
    if (pthread_mutex_init(&r->dev[n].lock, NULL) != 0) break;
  if (n < PT_ALLOC_MAX_DEVICES) {
    while (n--) pthread_mutex_destroy(&r->dev[n].lock);
    free(r->settings);
    free(r);
    return pt_err_set(err, PT_ENOMEM, "PAGETUNE_RECORD: cannot make a lock");
  }
  snprintf(r->path, sizeof r->path, "%s", path);
  r->buffer_bytes = o->buffer_bytes;
  r->report = o->report;
  r->report_ctx = o->report_ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r->epoch_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - pt_clock_us();
  r->pid = getpid();
  *out = r;
  return 0;
}

static void tell(pt_recorder *r, const pt_err *e, int device, const char *what) {
  if (!r->report) return;
  char line[PT_ERRMSG_MAX + 128];
  snprintf(line, sizeof line, "%s: %s of device %d stopped (the allocator goes on serving)", e->msg, what, device);
  r->report(r->report_ctx, line);
}

/* Device n's record, opened on its first event, locked; NULL (unlocked) when it does not record. */
static pt_record *slot_get(pt_recorder *r, int n) {
  if (n < 0 || n >= PT_ALLOC_MAX_DEVICES) return NULL;
  slot *s = &r->dev[n];
  pthread_mutex_lock(&s->lock);
  if (s->state == SLOT_NEW) {
    char path[PATH_MAX];
    pt_err e;
    pt_record_meta m = {.device = n, .settings = r->settings, .buffer_bytes = r->buffer_bytes};
    pt_record_path(r->path, n, path, sizeof path); /* fits: checked at create */
    if (pt_record_open(path, &m, &e, &s->rec) < 0) tell(r, &e, n, "recording");
    s->state = s->rec ? SLOT_OPEN : SLOT_DONE;
  }
  if (s->state == SLOT_OPEN) return s->rec;
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* After an event: a failure gives the device's recording up (its file left without `end`); unlocks. */
static void slot_put(pt_recorder *r, int n, int rc, const pt_err *e) {
  slot *s = &r->dev[n];
  if (rc < 0) {
    tell(r, e, n, "recording");
    pt_record_abandon(s->rec);
    s->rec = NULL;
    s->state = SLOT_DONE;
  }
  pthread_mutex_unlock(&s->lock);
}

static int64_t now_us(const pt_recorder *r) { return r->epoch_us + pt_clock_us(); }

static void on_alloc(void *ctx, int device, uint64_t bytes, uint64_t stream, uint64_t addr) {
  pt_recorder *r = ctx;
  pt_record *rec = slot_get(r, device);
  if (!rec) return;
  pt_err e;
  uint64_t id;
  slot_put(r, device, pt_record_alloc(rec, bytes, stream, now_us(r), addr, &id, &e), &e);
}

static void on_free(void *ctx, int device, uint64_t addr) {
  pt_recorder *r = ctx;
  pt_record *rec = slot_get(r, device);
  if (!rec) return;
  pt_err e;
  slot_put(r, device, pt_record_free(rec, addr, now_us(r), &e), &e);
}

static void on_oom(void *ctx, int device, uint64_t bytes, uint64_t stream) {
  pt_recorder *r = ctx;
  pt_record *rec = slot_get(r, device);
  if (!rec) return;
  pt_err e;
  slot_put(r, device, pt_record_oom(rec, bytes, stream, now_us(r), &e), &e);
}

void pt_recorder_observer(pt_recorder *r, pt_alloc_observer *out) {
  *out = (pt_alloc_observer){on_alloc, on_free, on_oom, r};
}

int pt_recorder_close(pt_recorder *r, pt_err *err) {
  int first = 0, forked = getpid() != r->pid;
  for (int n = 0; n < PT_ALLOC_MAX_DEVICES; n++) {
    slot *s = &r->dev[n];
    pthread_mutex_lock(&s->lock);
    if (s->state == SLOT_OPEN) {
      pt_err e;
      int rc = 0;
      if (forked) pt_record_abandon(s->rec); /* a copy of the parent's buffer: the parent writes the file */
      else if ((rc = pt_record_close(s->rec, &e)) < 0) tell(r, &e, n, "the end of the recording");
      if (rc < 0 && first == 0) {
        first = rc;
        if (err) *err = e;
      }
      s->rec = NULL;
    }
    s->state = SLOT_DONE;
    pthread_mutex_unlock(&s->lock);
  }
  r->closed = 1;
  return first;
}

void pt_recorder_free(pt_recorder *r) {
  if (!r) return;
  if (!r->closed) pt_recorder_close(r, NULL);
  for (int n = 0; n < PT_ALLOC_MAX_DEVICES; n++) pthread_mutex_destroy(&r->dev[n].lock);
  free(r->settings);
  free(r);
}
