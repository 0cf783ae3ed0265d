/* gpufrees.c — reading a capture's GPU free times (see gpufrees.h). */
#include "gpufrees.h"

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

static int parse(gzFile gz, reader *r, pt_gpu_frees *g) {
  char buf[128];
  int have_requests = 0, ended = 0;
  while (gzgets(gz, buf, sizeof buf)) {
    r->line++;
    size_t len = strlen(buf);
    if (len && buf[len - 1] == '\n') buf[--len] = '\0';
    else if (!gzeof(gz)) return bad(r, "line longer than 127 characters");
    const char *p = buf;
    uint64_t a, k;
    int rc;
    if (r->line == 1) {
      if (strcmp(buf, "pagetune-gpu-frees 1")) return bad(r, "not a pagetune GPU free-times file (version 1)");
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
      if (g->n == g->cap) {
        size_t ncap = g->cap ? g->cap * 2 : 4096;
        pt_gpu_free *nf = realloc(g->f, ncap * sizeof *nf);
        if (!nf) return pt_err_set(r->err, PT_ENOMEM, "%s: out of memory", r->path);
        g->f = nf;
        g->cap = ncap;
      }
      g->f[g->n++] = (pt_gpu_free){a, k};
    } else if (!strncmp(p, "requests ", 9)) {
      p += 8;
      if (have_requests) return bad(r, "two requests lines");
      if ((rc = field(r, &p, 0, &g->requests, "a request count")) < 0) return rc;
      if (*p) return bad(r, "extra fields");
      have_requests = 1;
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
  int zerr;
  const char *zmsg = gzerror(gz, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END)
    return pt_err_set(r->err, PT_EIO, "%s: %s", r->path, zerr == Z_ERRNO ? strerror(errno) : zmsg);
  if (r->line == 0) return pt_err_set(r->err, PT_EFORMAT, "%s: empty", r->path);
  if (!ended) return pt_err_set(r->err, PT_EFORMAT, "%s: truncated (no end line)", r->path);
  return 0;
}

int pt_gpu_frees_load(const char *path, pt_gpu_frees *g, pt_err *err) {
  memset(g, 0, sizeof *g);
  errno = 0;
  gzFile gz = gzopen(path, "rb");
  if (!gz) return pt_err_set(err, PT_EIO, "%s: %s", path, errno ? strerror(errno) : "cannot open");
  reader r = {path, 0, err};
  int rc = parse(gz, &r, g);
  gzclose(gz);
  if (rc < 0) pt_gpu_frees_free(g);
  return rc;
}

void pt_gpu_frees_free(pt_gpu_frees *g) {
  free(g->f);
  memset(g, 0, sizeof *g);
}
