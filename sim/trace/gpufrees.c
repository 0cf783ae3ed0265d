/* gpufrees.c — reading a capture's GPU free times (see gpufrees.h). */
#include "gpufrees.h"

#include "u64map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct reader {
  const char *path;
  unsigned long line;
  pt_err *err;
} reader;

static int bad(reader *r, const char *why) {
  return pt_err_set(r->err, PT_EFORMAT, "%s: line %lu: %s", r->path, r->line, why);
}

/* A number at *p after one blank, decimal or (hex) 0x...; 0, or bad. */
static int field(reader *r, const char **p, int hex, uint64_t *out, const char *what) {
  const char *s = *p;
  char why[96];
  snprintf(why, sizeof why, "expected %s", what);
  if (*s++ != ' ') return bad(r, why);
  if (hex && (s[0] != '0' || s[1] != 'x')) return bad(r, why);
  s += hex ? 2 : 0;
  uint64_t v = 0, base = hex ? 16 : 10;
  const char *s0 = s;
  for (;; s++) {
    int d = *s >= '0' && *s <= '9' ? *s - '0' : hex && *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
    if (d < 0) break;
    if (v > (UINT64_MAX - (uint64_t)d) / base) return bad(r, "number out of range");
    v = v * base + (uint64_t)d;
  }
  if (s == s0) return bad(r, why);
  *p = s;
  *out = v;
  return 0;
}

/* A line just read into buf (LINE_CHARS bytes): counted, its newline cut; too long is bad, and so is a last line
   without its newline (a file cut there: 'end 1529' cut to 'end 152' is not an end line). */
#define LINE_CHARS 256
static int line_end(gzFile gz, reader *r, char *buf) {
  r->line++;
  size_t len = strlen(buf);
  if (len && buf[len - 1] == '\n') buf[--len] = '\0';
  else if (!gzeof(gz)) return bad(r, "line longer than 255 characters");
  else return bad(r, "truncated (no newline at end of file)");
  return 0;
}

/* After the last line: a read error, an empty file or one without its end line, or 0. */
static int finish(gzFile gz, reader *r, int ended) {
  int zerr;
  const char *zmsg = gzerror(gz, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END)
    return pt_err_set(r->err, PT_EIO, "%s: %s", r->path, zerr == Z_ERRNO ? strerror(errno) : zmsg);
  if (r->line == 0) return pt_err_set(r->err, PT_EFORMAT, "%s: empty", r->path);
  if (!ended) return pt_err_set(r->err, PT_EFORMAT, "%s: truncated (no end line)", r->path);
  return 0;
}

/* Room for one more element in *arr (n used, *cap allocated) of elt bytes. */
static int grow(reader *r, void **arr, size_t n, size_t *cap, size_t elt) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 4096;
  void *v = realloc(*arr, ncap * elt);
  if (!v) return pt_err_set(r->err, PT_ENOMEM, "%s: out of memory", r->path);
  *arr = v;
  *cap = ncap;
  return 0;
}

static int parse_frees(gzFile gz, reader *r, void *out) {
  pt_gpu_frees *g = out;
  char buf[LINE_CHARS];
  int have_requests = 0, ended = 0, version = 0, rc;
  while (gzgets(gz, buf, sizeof buf)) {
    if ((rc = line_end(gz, r, buf)) < 0) return rc;
    const char *p = buf;
    uint64_t a, k;
    if (r->line == 1) {
      if (!strcmp(buf, "pagetune-gpu-frees 1")) version = 1;
      else if (!strcmp(buf, "pagetune-gpu-frees 2")) version = 2;
      else return bad(r, "not a pagetune GPU free-times file (version 1 or 2)");
      continue;
    }
    if (ended) return bad(r, "a record after the end line");
    if (!strncmp(p, "f ", 2)) {
      p += 1;
      if (!have_requests) return bad(r, "a free before the requests line");
      if ((rc = field(r, &p, 1, &a, "an address (0x...)")) < 0 || (rc = field(r, &p, 0, &k, "a request count")) < 0)
        return rc;
      if (!strcmp(p, " end")) p += 4;
      if (*p) return bad(r, "extra fields");
      if (k > g->requests) return bad(r, "more requests than the capture made");
      if (g->n == PT_GPU_FREES_MAX) return bad(r, "more than 2^30 frees");
      if ((rc = grow(r, (void **)&g->f, g->n, &g->cap, sizeof *g->f)) < 0) return rc;
      g->f[g->n++] = (pt_gpu_free){a, k};
    } else if (!strncmp(p, "requests ", 9)) {
      p += 8;
      if (have_requests) return bad(r, "two requests lines");
      if ((rc = field(r, &p, 0, &g->requests, "a request count")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      have_requests = 1;
    } else if (version == 2 && !strcmp(p, "syncs recorded")) {
      g->syncs_recorded = 1;
    } else if (version == 2 && !strncmp(p, "s ", 2)) {
      p += 1;
      if ((rc = field(r, &p, 0, &k, "a call's number")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      if (k == 0 || (g->nsync && k <= g->sync_at[g->nsync - 1])) return bad(r, "a synchronisation out of order");
      if ((rc = grow(r, (void **)&g->sync_at, g->nsync, &g->cap_sync, sizeof *g->sync_at)) < 0) return rc;
      g->sync_at[g->nsync++] = k;
    } else if (!strncmp(p, "end ", 4)) {
      p += 3;
      if ((rc = field(r, &p, 0, &k, "a count")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      if (k != g->n) return bad(r, "the end line's count is not the number of frees");
      ended = 1;
    } else {
      return bad(r, "unknown record");
    }
  }
  return finish(gz, r, ended);
}

/* " X=N" fields to the end of the line; *sync: S's value is not 0. */
static int counts(reader *r, const char *p, int *sync) {
  while (*p) {
    if (p[0] != ' ' || !p[1] || p[2] != '=') return bad(r, "expected a count (X=N)");
    char key = p[1];
    p += 3;
    uint64_t v = 0;
    const char *p0 = p;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return bad(r, "number out of range");
      v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == p0) return bad(r, "expected a count (X=N)");
    if (key == 'S' && v) *sync = 1;
  }
  return 0;
}

/* An e or w line's [p...): the stream order before the run's next call, the event numbered by first sight. */
static int order_line(reader *r, const char *p, int wait, pt_async_run *a, pt_u64map *events) {
  uint64_t x, y;
  int rc;
  if ((rc = field(r, &p, 1, &x, wait ? "a stream (0x...)" : "an event (0x...)")) < 0 ||
      (rc = field(r, &p, 1, &y, wait ? "an event (0x...)" : "a stream (0x...)")) < 0)
    return rc;
  if (*p) return bad(r, "extra fields");
  uint64_t handle = wait ? y : x, *num = pt_u64map_get(events, handle), event = num ? *num : events->len + 1;
  if (event >= PT_TRACE_MAX_EVENTS) return bad(r, "more than 2^24 - 1 events");
  if (!num && pt_u64map_put(events, handle, event) < 0) return pt_err_set(r->err, PT_ENOMEM, "%s: out of memory", r->path);
  if ((rc = grow(r, (void **)&a->order.op, a->order.n, &a->order.cap, sizeof *a->order.op)) < 0) return rc;
  a->order.op[a->order.n++] = (pt_order_op){.before = a->n, .event = event, .stream = wait ? x : y, .wait = wait};
  return 0;
}

static int parse_async_with(gzFile gz, reader *r, pt_async_run *a, pt_u64map *live, pt_u64map *events) {
  char buf[LINE_CHARS];
  int ended = 0, sync = 0, rc;
  size_t cap_free = 0;
  uint64_t calls = 0;
  while (gzgets(gz, buf, sizeof buf)) {
    if ((rc = line_end(gz, r, buf)) < 0) return rc;
    const char *p = buf;
    uint64_t v, addr, stream, res;
    if (r->line == 1) {
      if (strcmp(buf, "pagetune-async-run 1")) return bad(r, "not a pagetune cudaMallocAsync run log (version 1)");
      continue;
    }
    if (ended) return bad(r, "a record after the end line");
    if (buf[0] == 'a' || buf[0] == 'f') {
      int req = buf[0] == 'a';
      p++;
      if ((req && (rc = field(r, &p, 0, &v, "a byte count")) < 0) || (rc = field(r, &p, 1, &addr, "an address (0x...)")) < 0 ||
          (rc = field(r, &p, 1, &stream, "a stream (0x...)")) < 0 || (rc = field(r, &p, 0, &res, "reserved bytes")) < 0)
        return rc;
      int failed = req && !strcmp(p, " failed");
      if (failed) p += 7;
      if (*p) return bad(r, "extra fields");
      calls++;
      if (failed) continue; /* refused: no request of the run's */
      if (a->n == PT_ASYNC_RUN_MAX) return bad(r, "more than 2^30 calls");
      if ((rc = grow(r, (void **)&a->c, a->n, &a->cap, sizeof *a->c)) < 0) return rc;
      pt_async_call c = {.bytes = req ? v : 0, .stream = stream, .sync = (uint8_t)sync};
      if (req) { /* the address is its until freed: request number and bytes */
        c.req = (uint32_t)++a->nreq;
        if (pt_u64map_put(live, addr, (uint64_t)a->n) < 0) return pt_err_set(r->err, PT_ENOMEM, "%s: out of memory", r->path);
      } else {
        uint64_t *at = pt_u64map_get(live, addr);
        if (!at) return bad(r, "a free of an address no request got");
        c.req = a->c[*at].req;
        c.bytes = a->c[*at].bytes;
        pt_u64map_del(live, addr);
        if ((rc = grow(r, (void **)&a->lag, a->nfree, &cap_free, sizeof *a->lag)) < 0) return rc;
        a->lag[a->nfree++] = 0;
        c.free = (uint32_t)a->nfree;
      }
      a->c[a->n++] = c;
      sync = 0;
    } else if (buf[0] == 'n') {
      if ((rc = counts(r, p + 1, &sync)) < 0) return rc;
    } else if ((buf[0] == 'e' || buf[0] == 'w') && buf[1] == ' ') {
      if ((rc = order_line(r, p + 1, buf[0] == 'w', a, events)) < 0) return rc;
    } else if (buf[0] == 'k') {
      p++;
      uint64_t i;
      if ((rc = field(r, &p, 0, &i, "a free's number")) < 0 || (rc = field(r, &p, 0, &v, "a request count")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      if (i == 0 || i > a->nfree) return bad(r, "a time for a free not yet made");
      if (a->lag[i - 1]) return bad(r, "two times for one free");
      if (v >= PT_ASYNC_RUN_MAX) return bad(r, "more than 2^30 requests");
      a->lag[i - 1] = v + 1;
      a->timed++;
    } else if (!strncmp(buf, "end", 3)) {
      p += 3;
      if ((rc = field(r, &p, 0, &v, "a count")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      if (v != calls) return bad(r, "the end line's count is not the number of requests and frees");
      ended = 1;
    } else {
      return bad(r, "unknown record");
    }
  }
  return finish(gz, r, ended);
}

static int parse_async(gzFile gz, reader *r, void *out) {
  pt_u64map live = {0}, events = {0}; /* a live address -> its request's call; an event's handle -> its number */
  int rc = parse_async_with(gz, r, out, &live, &events);
  pt_u64map_free(&live);
  pt_u64map_free(&events);
  return rc;
}

/* path read by read_fn into out (zeroed first, freed by done on an error). */
static int load(const char *path, int (*read_fn)(gzFile, reader *, void *), void *out, size_t size, void (*done)(void *),
                pt_err *err) {
  memset(out, 0, size);
  errno = 0;
  gzFile gz = gzopen(path, "rb");
  if (!gz) return pt_err_set(err, PT_EIO, "%s: %s", path, errno ? strerror(errno) : "cannot open");
  reader r = {path, 0, err};
  int rc = read_fn(gz, &r, out);
  gzclose(gz);
  if (rc < 0) done(out);
  return rc;
}

static void async_done(void *a) { pt_async_run_free(a); }
static void frees_done(void *g) { pt_gpu_frees_free(g); }

int pt_async_run_load(const char *path, pt_async_run *a, pt_err *err) {
  return load(path, parse_async, a, sizeof *a, async_done, err);
}

void pt_async_run_free(pt_async_run *a) {
  free(a->c);
  free(a->lag);
  free(a->order.op); /* not pt_order_free: this file stands without trace.c (tests/fuzz/build.sh) */
  memset(a, 0, sizeof *a);
}

int pt_gpu_frees_load(const char *path, pt_gpu_frees *g, pt_err *err) {
  return load(path, parse_frees, g, sizeof *g, frees_done, err);
}

void pt_gpu_frees_free(pt_gpu_frees *g) {
  free(g->f);
  free(g->sync_at);
  memset(g, 0, sizeof *g);
}
