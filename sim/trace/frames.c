/*
 * frames.c — distinct stack frames and stacks, interned (see frames.h).
 */
#include "frames.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}
#define FNV0 0xcbf29ce484222325ull

static int grow(void **arr, size_t *cap, size_t want, size_t el, size_t *bytes) {
  if (want <= *cap) return 0;
  size_t n = *cap ? *cap : 64;
  while (n < want) n *= 2;
  void *q = realloc(*arr, n * el);
  if (!q) return PT_ENOMEM;
  *bytes += (n - *cap) * el;
  *arr = q;
  *cap = n;
  return 0;
}

/* An open-addressing table of ids, kept at most half full; hash(i) of id i. */
typedef uint64_t (*hash_fn)(const pt_frames *f, uint32_t id);

static int rehash(pt_frames *f, uint32_t **tab, size_t *cap, size_t count, hash_fn h) {
  if (2 * (count + 1) <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 256;
  uint32_t *nt = calloc(nc, sizeof *nt);
  if (!nt) return PT_ENOMEM;
  f->bytes += (nc - *cap) * sizeof *nt;
  for (size_t i = 0; i < *cap; i++) {
    uint32_t id = (*tab)[i];
    if (!id) continue;
    size_t j = (size_t)h(f, id) & (nc - 1);
    while (nt[j]) j = (j + 1) & (nc - 1);
    nt[j] = id;
  }
  free(*tab);
  *tab = nt;
  *cap = nc;
  return 0;
}

static uint64_t str_hash(const pt_frames *f, uint32_t id) {
  const char *s = f->strs[id - 1];
  return fnv(s, strlen(s), FNV0);
}

/* The table's copy of s[0..n). */
static int intern_str(pt_frames *f, const char *s, size_t n, const char **out) {
  if (rehash(f, &f->strhash, &f->strhash_cap, f->nstrs, str_hash) < 0) return PT_ENOMEM;
  size_t mask = f->strhash_cap - 1, j = (size_t)fnv(s, n, FNV0) & mask;
  for (; f->strhash[j]; j = (j + 1) & mask) {
    const char *t = f->strs[f->strhash[j] - 1];
    if (strlen(t) == n && !memcmp(t, s, n)) {
      *out = t;
      return 0;
    }
  }
  if (grow((void **)&f->strs, &f->strs_cap, f->nstrs + 1, sizeof *f->strs, &f->bytes) < 0) return PT_ENOMEM;
  char *c = malloc(n + 1);
  if (!c) return PT_ENOMEM;
  memcpy(c, s, n);
  c[n] = 0;
  f->bytes += n + 1;
  f->strs[f->nstrs++] = c;
  f->strhash[j] = (uint32_t)f->nstrs;
  *out = c;
  return 0;
}

static uint64_t frame_hash(const pt_frames *f, uint32_t id) {
  const pt_frame *fr = &f->frame[id];
  uint64_t h = fnv(&fr->file, sizeof fr->file, FNV0); /* strings are interned: pointers compare */
  h = fnv(&fr->name, sizeof fr->name, h);
  return fnv(&fr->line, sizeof fr->line, h);
}

int pt_frames_intern_frame(pt_frames *f, const char *file, size_t flen, const char *name, size_t nlen,
                           uint32_t line, uint32_t *fid) {
  pt_frame fr = {.line = line};
  if (intern_str(f, file, flen, &fr.file) < 0 || intern_str(f, name, nlen, &fr.name) < 0) return PT_ENOMEM;
  if (f->nframes >= UINT32_MAX - 1) return PT_ENOMEM;
  if (grow((void **)&f->frame, &f->frame_cap, f->nframes + 2, sizeof *f->frame, &f->bytes) < 0 ||
      rehash(f, &f->fhash, &f->fhash_cap, f->nframes, frame_hash) < 0)
    return PT_ENOMEM;
  f->frame[f->nframes + 1] = fr; /* the candidate, hashed in place */
  size_t mask = f->fhash_cap - 1, j = (size_t)frame_hash(f, (uint32_t)f->nframes + 1) & mask;
  for (; f->fhash[j]; j = (j + 1) & mask) {
    const pt_frame *o = &f->frame[f->fhash[j]];
    if (o->file == fr.file && o->name == fr.name && o->line == fr.line) {
      *fid = f->fhash[j];
      return 0;
    }
  }
  f->fhash[j] = (uint32_t)++f->nframes;
  *fid = (uint32_t)f->nframes;
  return 0;
}

static uint64_t stack_hash(const pt_frames *f, uint32_t id) {
  return fnv(f->fids + f->stack_at[id], (f->stack_at[id + 1] - f->stack_at[id]) * sizeof *f->fids, FNV0);
}

int pt_frames_intern_stack(pt_frames *f, const uint32_t *fids, size_t n, uint32_t *sid) {
  *sid = 0;
  if (!n) return 0;
  if (f->nstacks >= UINT32_MAX - 1) return PT_ENOMEM;
  if (grow((void **)&f->stack_at, &f->stack_cap, f->nstacks + 3, sizeof *f->stack_at, &f->bytes) < 0 ||
      grow((void **)&f->fids, &f->fids_cap, f->nfids + n, sizeof *f->fids, &f->bytes) < 0 ||
      rehash(f, &f->shash, &f->shash_cap, f->nstacks, stack_hash) < 0)
    return PT_ENOMEM;
  size_t s = f->nstacks + 1; /* the candidate, appended; dropped again if it is known */
  memcpy(f->fids + f->nfids, fids, n * sizeof *fids);
  f->stack_at[s] = f->nfids;
  f->stack_at[s + 1] = f->nfids + n;
  size_t mask = f->shash_cap - 1, j = (size_t)stack_hash(f, (uint32_t)s) & mask;
  for (; f->shash[j]; j = (j + 1) & mask) {
    uint32_t o = f->shash[j];
    size_t on = f->stack_at[o + 1] - f->stack_at[o];
    if (on == n && !memcmp(f->fids + f->stack_at[o], fids, n * sizeof *fids)) {
      *sid = o;
      return 0;
    }
  }
  f->shash[j] = (uint32_t)s;
  f->nstacks = s;
  f->nfids += n;
  *sid = (uint32_t)s;
  return 0;
}

size_t pt_frames_stack(const pt_frames *f, uint32_t sid, const uint32_t **fids) {
  *fids = NULL;
  if (!f || !sid || sid > f->nstacks) return 0;
  *fids = f->fids + f->stack_at[sid];
  return f->stack_at[sid + 1] - f->stack_at[sid];
}

const pt_frame *pt_frames_frame(const pt_frames *f, uint32_t fid) {
  return f && fid && fid <= f->nframes ? &f->frame[fid] : NULL;
}

void pt_frames_free(pt_frames *f) {
  if (!f) return;
  for (size_t i = 0; i < f->nstrs; i++) free(f->strs[i]);
  free(f->strs);
  free(f->strhash);
  free(f->frame);
  free(f->fhash);
  free(f->fids);
  free(f->stack_at);
  free(f->shash);
  memset(f, 0, sizeof *f);
}

static int plain(unsigned char c) { return c > 0x20 && c < 0x7f && c != '%'; }

size_t pt_frames_escape(const char *s, size_t n, char *out) {
  static const char hex[] = "0123456789ABCDEF";
  char *o = out;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (plain(c)) {
      *o++ = (char)c;
    } else {
      *o++ = '%';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    }
  }
  *o = 0;
  return (size_t)(o - out);
}

static int hexv(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

long pt_frames_unescape(char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      s[o++] = s[i];
      continue;
    }
    if (i + 2 >= n) return -1;
    int h = hexv(s[i + 1]), l = hexv(s[i + 2]);
    if (h < 0 || l < 0) return -1;
    s[o++] = (char)(h << 4 | l);
    i += 2;
  }
  return (long)o;
}
