/*
 * fit.c — a probe log's request stream (probe.cu's replay/replaysync/replayx output, or shim2log.py's:
 * "a ID BYTES OFFSET RESERVED" and "f ID RESERVED" lines, "s" a synchronisation, "k ID K" free ID's GPU
 * time, "e EVENT STREAM" / "w STREAM EVENT" an event record / a stream wait; FIT_NO_EV=1 ignores them, FIT_NO_K=1
 * every free time, FIT_NO_DK=1 those of frees on another stream than their request's) through the async_pool model with free_lag L: how many of the driver's offsets and reserved
 * figures the model reproduces, and the first that differs (v: the first few differences; NAME=VALUE:
 * a parameter, lazy_check=0 for the synchronised logs).  Built against a configured build tree, from
 * the repository root:
 *     gcc -O1 $(find sim -mindepth 1 -maxdepth 1 -type d -printf '-I %p ') -o fit traces/capture/async_probe/fit.c \
 *       -Wl,--start-group $(find sim -name 'libpt_*.a') -Wl,--end-group -lm -lz
 *     zcat traces/capture/async_probe/transformer_train.log.gz >t.log; ./fit t.log 0 v
 * (README.md: what the synchronised and unsynchronised logs gave.)  The model is compiled in from
 * sim/mech/asyncpool.c (not the library's copy), so that FIT_AT can print its state and a change there is
 * tried without rebuilding the library.  FIT_AT=N prints the model's state before and after record N (a
 * line of the log that is not a "k" line, from 1; the last line's "first at" is that number of the first
 * offset that differs, and "call" counts the requests and frees up to it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mech.h"
#include "modeldev.h"
#include "device.h"
#include "asyncpool.c" /* the model itself, so FIT_AT can print its state */
typedef struct { char k; unsigned long long id, bytes, off, res, stream; } rec;
/* FIT_AT=N: per id, the records (1, 2, ...) of its request and free, the free's stream and its place among the
   pool's frees (0: a deferred free, which has none), the model's offset and size */
typedef struct { size_t arec, frec; unsigned long long fstream; uint32_t order; uint64_t off, size; } hist;

/* FIT_AT=N: the model's state: the heap's blocks in address order (allocated: its id and stream; deferred: freed
   on another stream, the pool's until the driver sees it, and the request count it is due at; pending: on its
   stream, its place among the pool's frees and its due count; free: seen complete; the top), under each free block
   the frees its range holds that no later request overlapped, and the stream order (for each stream, the last of
   each stream's frees it is ordered after). */
static void dump_state(async_state *st, uint64_t base, const hist *H, const uint64_t *h, size_t nid) {
  ablock *b = st->last;
  while (b && b->prev) b = b->prev;
  printf("  state: %llu requests, %u frees; pending %zu, deferred %zu\n", (unsigned long long)st->nreq, st->frees,
         st->pend.n, st->defer.n);
  for (; b; b = b->next) {
    size_t id = 0;
    for (size_t i = 1; i < nid; i++) /* its latest request (block records are reused) */
      if (b->allocated && h[i] == (uint64_t)(uintptr_t)b && (!id || H[i].arec > H[id].arec)) id = i;
    int deferred = 0; uint64_t due = 0;
    for (size_t i = 0; i < st->defer.n; i++) if (st->defer.v[i].b == b) deferred = 1, due = st->defer.v[i].due;
    printf("  +%-10llu %9llu ", (unsigned long long)(b->addr - base), (unsigned long long)b->size);
    if (deferred) printf("deferred id %zu stream %llu due %llu\n", id, (unsigned long long)STREAM(b), (unsigned long long)due);
    else if (b->allocated) printf("allocated id %zu stream %llu\n", id, (unsigned long long)STREAM(b));
    else if (b->ticket) printf("pending stream %llu order %u due %llu\n", (unsigned long long)STREAM(b), b->order, (unsigned long long)b->due);
    else if (is_top(st, b)) printf("top\n");
    else printf("free (stamp %llu)\n", (unsigned long long)b->node.key.addr);
    if (b->allocated) continue;
    for (size_t i = 1; i < nid; i++) { /* the frees inside it that no later request overlapped */
      if (!H[i].frec || H[i].off + H[i].size <= b->addr - base || H[i].off >= b->addr + b->size - base) continue;
      int stale = 0;
      for (size_t j = 1; j < nid && !stale; j++)
        stale = H[j].arec > H[i].frec && H[j].off < H[i].off + H[i].size && H[i].off < H[j].off + H[j].size;
      if (stale) continue;
      printf("      freed id %zu +%llu %llu: request at %zu, free at %zu stream %llu ", i, (unsigned long long)H[i].off,
             (unsigned long long)H[i].size, H[i].arec, H[i].frec, H[i].fstream);
      if (H[i].order) printf("order %u\n", H[i].order);
      else printf("deferred\n");
    }
  }
  for (int i = 0; i < st->nstreams; i++) {
    printf("  stream %llu after:", (unsigned long long)st->sid[i]);
    for (int j = 0; j < st->nstreams; j++) printf(" %u", st->after[i][j]);
    printf("\n");
  }
}
int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: fit LOG FREE_LAG [v] [NAME=VALUE...]\n"); return 2; }
  FILE *f = fopen(argv[1], "r"); int L = atoi(argv[2]); int verbose = 0;
  if (!f) { perror(argv[1]); return 1; }
  enum { MAXREC = 1 << 20 };
  static rec R[MAXREC]; size_t n = 0; char line[256];
  static unsigned long long K[MAXREC]; /* a free's GPU time from probe's +track ("k ID K" lines): K + 1, 0 none */
  while (n < MAXREC && fgets(line, sizeof line, f)) {
    rec r = {0}; r.k = line[0];
    if (r.k == 's') { R[n++] = r; continue; } /* a synchronisation */
    if (r.k == 'e' || r.k == 'w') { /* an event record (id: the event), a stream wait (id: the event) */
      if (r.k == 'e') sscanf(line + 2, "%llu %llu", &r.id, &r.stream);
      else sscanf(line + 2, "%llu %llu", &r.stream, &r.id);
      R[n++] = r;
      continue;
    }
    if (r.k == 'k') {
      unsigned long long id, k;
      if (sscanf(line + 2, "%llu %llu", &id, &k) == 2 && id < MAXREC) K[id] = k + 1;
      continue;
    }
    if (r.k == 'a') sscanf(line + 2, "%llu %llu %llu %llu %llu", &r.id, &r.bytes, &r.off, &r.res, &r.stream);
    else sscanf(line + 2, "%llu %llu %llu", &r.id, &r.res, &r.stream);
    if (r.id >= MAXREC) { fprintf(stderr, "%s: id %llu too large\n", argv[1], r.id); return 1; }
    R[n++] = r;
  }
  pt_model_dev model; pt_device dev; pt_err err = {0}; uint64_t allocated = 0; int fault = 0;
  pt_mech_counters ctr = {0}; pt_params params = {0}; pt_policy_hooks hooks = {0};
  pt_model_dev_init(&model, NULL, 0, &err);
  pt_dev_init(&dev, &pt_model_dev_ops, &model, 0, &err);
  pt_params_set(&params, "release_threshold", 1125899906842624.0);
  pt_params_set(&params, "free_lag", L);
  for (int i = 3; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) { verbose = 1; continue; }
    *eq = 0;
    pt_params_set(&params, argv[i], atof(eq + 1));
  }
  pt_mech_env env = {.dev = &dev, .counters = &ctr, .params = &params, .hooks = &hooks, .err = &err, .allocated = &allocated, .fault = &fault,
                     .trace_synced = 1}; /* the driver's own runs: lazy_check 1 unless set (0 for the synchronised logs) */
  void *st; if (pt_mech_create(&pt_mech_async_pool, &env, &st)) { fprintf(stderr, "create failed\n"); return 1; }
  static uint64_t h[MAXREC], hs[MAXREC]; uint64_t base = 0, peak = 0; size_t offbad = 0, resbad = 0, first = 0;
  size_t calls = 0, firstcall = 0; /* requests and frees: the run's calls */
  static hist H[MAXREC]; size_t at = getenv("FIT_AT") ? strtoul(getenv("FIT_AT"), NULL, 10) : 0, nid = 1;
  for (size_t i = 0; i < n; i++) {
    if (i + 1 == at) dump_state(st, base, H, h, nid);
    if (R[i].k == 's') {
      if (pt_mech_async_pool.synchronize(st)) { fprintf(stderr, "synchronize failed\n"); return 1; }
      continue;
    }
    if (R[i].k == 'e' || R[i].k == 'w') {
      if (getenv("FIT_NO_EV")) continue;
      if ((R[i].k == 'e' ? pt_mech_async_pool.event_record(st, R[i].id, R[i].stream)
                         : pt_mech_async_pool.stream_wait(st, R[i].stream, R[i].id)) < 0) { fprintf(stderr, "%s\n", err.msg); return 1; }
      continue;
    }
    calls++;
    uint32_t frees = ((async_state *)st)->frees;
    if (R[i].k == 'f') H[R[i].id].frec = i + 1, H[R[i].id].fstream = R[i].stream;
    if (R[i].k == 'a') {
      if (pt_mech_async_pool.alloc(st, R[i].bytes, R[i].stream, &h[R[i].id])) { fprintf(stderr, "alloc failed\n"); return 1; }
      hs[R[i].id] = R[i].stream;
      uint64_t a = pt_mech_async_pool.addr_of(st, h[R[i].id]);
      if (!base) base = a;
      H[R[i].id] = (hist){.arec = i + 1, .off = a - base, .size = ((ablock *)(uintptr_t)h[R[i].id])->size};
      if (R[i].id >= nid) nid = R[i].id + 1;
      if (a - base != R[i].off) { offbad++; if (!first) first = i + 1, firstcall = calls; if (verbose && offbad < 6) printf("  %zu: a %llu %llu model +%llu real +%llu\n", i, R[i].id, R[i].bytes, (unsigned long long)(a - base), R[i].off); }
    } else if (R[i].stream != hs[R[i].id] && pt_mech_async_pool.free_deferred) { /* on another stream (the unifying one) */
      pt_mech_async_pool.free_deferred(st, h[R[i].id], K[R[i].id] && !getenv("FIT_NO_K") && !getenv("FIT_NO_DK") ? K[R[i].id] - 1 : PT_MECH_UNTIMED);
    } else if (K[R[i].id] && !getenv("FIT_NO_K")) {
      pt_mech_async_pool.free_pending(st, h[R[i].id], K[R[i].id] - 1);
    } else pt_mech_async_pool.free(st, h[R[i].id]);
    if (i + 1 == at) printf("  after record %zu:\n", at), dump_state(st, base, H, h, nid);
    if (R[i].k == 'f' && ((async_state *)st)->frees != frees) H[R[i].id].order = ((async_state *)st)->frees; /* 0: deferred */
    uint64_t res = pt_dev_reserved(&dev); if (res > peak) peak = res;
    if (getenv("FIT_DUMP")) {
      if (R[i].k == 'a') printf("a %llu %llu %llu %llu\n", R[i].id, R[i].bytes, (unsigned long long)(pt_mech_async_pool.addr_of(st, h[R[i].id]) - base), (unsigned long long)res);
      else printf("f %llu %llu\n", R[i].id, (unsigned long long)res);
    }
    if (res != R[i].res) resbad++;
  }
  printf("L=%d offsets differ %zu of %zu (first at %zu, call %zu), reserved differs %zu, peak %llu MiB\n", L, offbad, n, first, firstcall, resbad,
         (unsigned long long)(peak >> 20));
  pt_mech_async_pool.destroy(st); /* everything given back: a leak checker (tests/fit_probe.sh under ASan) sees none */
  pt_dev_done(&dev);
  pt_model_dev_done(&model);
  return 0;
}
