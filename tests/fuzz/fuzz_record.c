/*
 * fuzz_record.c — libFuzzer target for the trace recorder (backend/record.c)
 * against the trace reader: the bytes choose a buffer size, a write that
 * fails (or none), the header's device and settings, then a sequence of
 * allocations (size, stream, time, one of 64 addresses or any), frees and
 * out-of-memory records, written into memory.  A model here says what each
 * call must do: refuse (an address live twice, a free of one not live, more
 * than 2^50 bytes, a stream past 2^63, the time INT64_MIN, which the reader cannot take:
 * PT_EUSAGE, nothing written), or write the next record with
 * the next id; after a failed write every call fails the same way.  Then the
 * reader reads the bytes back: a recording that closed cleanly must read as
 * exactly the records the model kept, header included; one whose write
 * failed must be refused (it has no `end` line).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSLOTS 64
#define MAX_OPS 4096

typedef struct input {
  const uint8_t *p;
  size_t n;
} input;

static uint64_t take(input *in, int bytes) { /* little-endian; zeros past the end */
  uint64_t v = 0;
  for (int i = 0; i < bytes && in->n; i++, in->n--) v |= (uint64_t)*in->p++ << (8 * i);
  return v;
}

typedef struct sink {
  uint8_t *buf;
  size_t len, cap;
  int writes, fail_at;
} sink;

static int s_write(void *ctx, const void *buf, size_t n, pt_err *err) {
  sink *s = ctx;
  if (++s->writes == s->fail_at) return pt_err_set(err, PT_EIO, "write failed: injected");
  if (s->len + n > s->cap) {
    size_t cap = (s->len + n) * 2;
    uint8_t *b = realloc(s->buf, cap);
    if (!b) return pt_err_set(err, PT_ENOMEM, "out of memory");
    s->buf = b;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, buf, n);
  s->len += n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  sink s = {0};
  size_t buffer = PT_RECORD_MIN_BUFFER + take(&in, 1) * 64;
  unsigned f = (unsigned)take(&in, 1);
  s.fail_at = f < 32 ? (int)f : 0; /* 0: no failure */
  pt_record_meta meta = {.device = (int)(take(&in, 2) % 4097), .buffer_bytes = buffer};
  size_t slen = (size_t)take(&in, 1);
  if (slen > in.n) slen = in.n;
  char *settings = malloc(slen + 1);
  if (!settings) return 0;
  memcpy(settings, in.p, slen);
  settings[slen] = 0;
  in.p += slen;
  in.n -= slen;
  meta.settings = slen ? settings : NULL;

  /* what the reader must say the settings are: to the first NUL, newlines as spaces, leading blanks gone, 1023 bytes */
  char want_settings[1024];
  const char *q = settings;
  while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
  size_t wl = strlen(q) < sizeof want_settings - 1 ? strlen(q) : sizeof want_settings - 1;
  for (size_t i = 0; i < wl; i++) want_settings[i] = q[i] == '\n' || q[i] == '\r' ? ' ' : q[i];
  want_settings[wl] = 0;

  pt_record_sink sk = {s_write, NULL, NULL, &s};
  pt_err err;
  pt_record *r;
  int rc = pt_record_open_sink(&sk, "fuzz", &meta, &err, &r);
  if (rc < 0) {
    if (rc != PT_EIO || !s.fail_at || strncmp(err.msg, "fuzz: ", 6) != 0) __builtin_trap();
    free(settings);
    free(s.buf);
    return 0;
  }

  /* the model: which slot addresses are live under which id; the records expected */
  uint64_t slot_addr[NSLOTS], slot_id[NSLOTS] = {0}, next_id = 1;
  for (int i = 0; i < NSLOTS; i++) slot_addr[i] = i == 0 ? 0 : i == 1 ? UINT64_MAX : UINT64_C(0x7f0000000000) + (uint64_t)i * 0x200000;
  pt_event *want = malloc(MAX_OPS * sizeof *want);
  size_t nwant = 0;
  int64_t t = 0;
  int dead = 0; /* a write failed: every call fails from here */
  for (int op = 0; op < MAX_OPS && in.n && want; op++) {
    unsigned c = (unsigned)take(&in, 1);
    int slot = (int)(take(&in, 1) % NSLOTS);
    if (c & 0x80) t = (int64_t)take(&in, 8); /* any time */
    else t = (int64_t)((uint64_t)t + (uint64_t)(int64_t)(int16_t)take(&in, 2)); /* a step, wrapping */
    uint64_t id;
    if ((c & 3) < 2) { /* alloc: bytes shifted down by a chosen amount, so small and huge sizes both come */
      uint64_t bytes = take(&in, 8) >> ((c >> 2) & 63), stream = (c & 0x40) ? take(&in, 8) : (uint64_t)(c & 1);
      uint64_t addr = slot_addr[slot];
      int live = slot_id[slot] != 0;
      rc = pt_record_alloc(r, bytes, stream, t, addr, &id, &err);
      if (dead) {
        if (rc != PT_EIO) __builtin_trap();
      } else if (live || bytes > PT_RECORD_MAX_BYTES || stream >> 63 || t == INT64_MIN) {
        if (rc != PT_EUSAGE || id != 0) __builtin_trap();
      } else if (rc == PT_EIO) {
        dead = 1;
      } else {
        if (rc != 0 || id != next_id) __builtin_trap();
        slot_id[slot] = next_id++;
        want[nwant++] = (pt_event){.kind = 'a', .id = id, .bytes = bytes, .stream = stream, .time_us = t, .addr = addr,
                                   .flags = PT_EVF_HAS_ADDR};
      }
    } else if ((c & 3) == 2) { /* free */
      uint64_t addr = slot_addr[slot];
      rc = pt_record_free(r, addr, t, &err);
      if (dead) {
        if (rc != PT_EIO) __builtin_trap();
      } else if (!slot_id[slot] || t == INT64_MIN) {
        if (rc != PT_EUSAGE) __builtin_trap();
      } else if (rc == PT_EIO) {
        dead = 1;
      } else {
        if (rc != 0) __builtin_trap();
        uint64_t bytes = 0, stream = 0;
        for (size_t k = 0; k < nwant; k++) /* the allocation's size and stream, as the reader fills them in */
          if (want[k].kind == 'a' && want[k].id == slot_id[slot]) bytes = want[k].bytes, stream = want[k].stream;
        want[nwant++] = (pt_event){.kind = 'f', .id = slot_id[slot], .bytes = bytes, .stream = stream, .time_us = t};
        slot_id[slot] = 0;
      }
    } else { /* out of memory */
      uint64_t bytes = take(&in, 8) >> ((c >> 2) & 63), stream = take(&in, 1);
      rc = pt_record_oom(r, bytes, stream, t, &err);
      if (dead) {
        if (rc != PT_EIO) __builtin_trap();
      } else if (bytes > PT_RECORD_MAX_BYTES || t == INT64_MIN) {
        if (rc != PT_EUSAGE) __builtin_trap();
      } else if (rc == PT_EIO) {
        dead = 1;
      } else {
        if (rc != 0) __builtin_trap();
        want[nwant++] = (pt_event){.kind = 'O', .bytes = bytes, .stream = stream, .time_us = t};
      }
    }
    if (rc < 0 && strncmp(err.msg, "fuzz: ", 6) != 0) __builtin_trap(); /* every error names the record */
  }
  if (!dead && pt_record_count(r) != nwant) __builtin_trap();
  rc = pt_record_close(r, &err);
  if (rc == PT_EIO) dead = 1;
  else if (rc != 0 || dead) __builtin_trap();

  pt_trace *tr;
  if (pt_trace_open_mem(s.buf, s.len, "back", NULL, &err, &tr) < 0) {
    if (!dead) __builtin_trap(); /* a clean recording always opens */
  } else {
    const pt_trace_info *info = pt_trace_get_info(tr);
    if (!dead && (info->device != meta.device || strcmp(info->source, "pagetune-alloc") != 0 ||
                  strcmp(info->tool, "libpagetune_alloc.so") != 0 || strcmp(info->settings, want_settings) != 0))
      __builtin_trap();
    pt_event ev;
    size_t k = 0;
    while ((rc = pt_trace_next(tr, &ev, &err)) > 0) {
      if (dead) continue; /* what a failed recording holds is a prefix: the end must be refused */
      const pt_event *w = k < nwant ? &want[k] : NULL;
      k++;
      if (!w || ev.kind != w->kind || ev.id != w->id || ev.bytes != w->bytes || ev.stream != w->stream ||
          ev.time_us != w->time_us || ev.addr != w->addr || ev.flags != w->flags)
        __builtin_trap();
    }
    if (dead ? rc == 0 : rc != 0 || k != nwant) __builtin_trap(); /* clean: all of it; failed: refused */
    pt_trace_close(tr);
  }
  free(want);
  free(settings);
  free(s.buf);
  return 0;
}
