// probe.cu - what CUDA's default mempool does (threshold UINT64_MAX, as PyTorch's cudaMallocAsync backend).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#define MIB (1ull << 20)
static cudaMemPool_t pool;
static unsigned long long attr(cudaMemPoolAttr a) { uint64_t v = 0; cudaMemPoolGetAttribute(pool, a, &v); return (unsigned long long)v; }
#define RES() attr(cudaMemPoolAttrReservedMemCurrent)
#define CK(x) do { cudaError_t e = (x); if (e) { printf("ERR %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
static uintptr_t base;
static void *al(size_t n, const char *tag) {
  void *p; CK(cudaMallocAsync(&p, n, 0)); CK(cudaStreamSynchronize(0));
  if (!base) base = (uintptr_t)p;
  printf("  alloc %-6s %12zu (%.3f MiB) at base%+.3f MiB  reserved %llu (%.1f MiB) used %llu\n", tag, n, n / (double)MIB,
         ((double)(intptr_t)((uintptr_t)p - base)) / MIB, RES(), RES() / (double)MIB, attr(cudaMemPoolAttrUsedMemCurrent));
  return p;
}
/* The same without a synchronisation: the request is made while earlier work may still be running. */
static void *aln(size_t n, cudaStream_t st, const char *tag) {
  void *p; CK(cudaMallocAsync(&p, n, st));
  if (!base) base = (uintptr_t)p;
  printf("  alloc %-6s %12zu (%.3f MiB) at base%+.3f MiB  reserved %.1f MiB (no sync)\n", tag, n, n / (double)MIB,
         ((double)(intptr_t)((uintptr_t)p - base)) / MIB, RES() / (double)MIB);
  return p;
}
static void frn(void *p, cudaStream_t st) { CK(cudaFreeAsync(p, st)); }
/* A kernel that keeps the stream busy for about ms milliseconds, so frees behind it are pending. */
__global__ void spin(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) { } }
/* The same, then it writes v where the host reads it without a CUDA call: which kernels have run. */
__global__ void mark(volatile unsigned long long *p, unsigned long long v, long long cycles) {
  long long t0 = clock64(); while (clock64() - t0 < cycles) { }
  *p = v; __threadfence_system();
}
static void busy(cudaStream_t st, int ms) { int khz; cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0); spin<<<1, 1, 0, st>>>((long long)khz * ms); }
static void fr(void *p) { CK(cudaFreeAsync(p, 0)); CK(cudaStreamSynchronize(0)); }
static void reset(void) { CK(cudaDeviceSynchronize()); CK(cudaMemPoolTrimTo(pool, 0)); base = 0; printf("  -- trimmed, reserved %llu\n", RES()); }
int main(int argc, char **argv) {
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  CK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t thr = UINT64_MAX; CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
  const char *m = argv[1];
  if (!strcmp(m, "sizes")) {
    size_t s[] = {512, MIB, 2 * MIB + 1, 20 * MIB, 32 * MIB, 32 * MIB + 1, 33 * MIB, 48 * MIB, 64 * MIB + 1, 100 * MIB, 200 * MIB, 1024 * MIB + 1};
    for (int i = 0; i < 12; i++) { void *p = al(s[i], "one"); fr(p); reset(); }
  } else if (!strcmp(m, "grow")) {
    for (int i = 0; i < 40; i++) al(MIB + 512 * 1024, "1.5M");
  } else if (!strcmp(m, "span")) {
    void *a = al(20 * MIB, "A"), *b = al(20 * MIB, "B"), *c = al(20 * MIB, "C"); (void)a; (void)b; (void)c;
    void *d = al(40 * MIB, "D"); (void)d;
    fr(a); fr(b); printf("  freed A,B reserved %llu\n", RES());
    void *e = al(40 * MIB, "E"); (void)e;
  } else if (!strcmp(m, "remap")) {
    void *a = al(32 * MIB, "A"), *b = al(32 * MIB, "B"), *c = al(32 * MIB, "C"), *x = al(32 * MIB, "X");
    fr(a); fr(c); printf("  freed A,C reserved %llu\n", RES()); (void)b; (void)x;
    al(64 * MIB, "D");
    al(20 * MIB, "E");
  } else if (!strcmp(m, "big")) {
    void *a = al(100 * MIB, "A"); al(20 * MIB, "B"); al(10 * MIB, "C"); fr(a); al(120 * MIB, "D"); al(3 * MIB, "E");
  } else if (!strcmp(m, "gran")) {
    void *a = al(40 * MIB, "A"); al(MIB, "B"); al(20 * MIB, "C"); al(20 * MIB, "D");
    fr(a); printf("  freed A reserved %llu\n", RES());
    al(50 * MIB, "E"); al(2 * MIB, "F"); al(2 * MIB, "G");
  } else if (!strcmp(m, "place")) {
    void *a = al(10 * MIB, "A"); al(MIB, "B"); void *c = al(4 * MIB, "C"); al(MIB, "D");
    fr(a); fr(c); printf("  freed A,C reserved %llu\n", RES());
    al(3 * MIB, "E"); al(9 * MIB, "F"); al(12 * MIB, "G"); al(20 * MIB, "H");
  } else if (!strcmp(m, "remap2")) {
    void *a = al(30 * MIB, "A"); al(4 * MIB, "B"); void *c = al(30 * MIB, "C"); al(MIB, "D");
    fr(a); fr(c); printf("  freed A,C reserved %llu\n", RES());
    al(40 * MIB, "E"); al(8 * MIB, "F"); al(8 * MIB, "G");
  } else if (!strcmp(m, "pending")) {
    /* Which frees the pool reuses while they are still pending on the GPU (a kernel runs ahead of them):
       each case once with the stream busy, then once idle (synchronised before the request). */
    cudaStream_t s1; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    for (int idle = 0; idle < 2; idle++) {
      const char *how = idle ? "idle" : "busy";
#define WAIT() do { if (idle) CK(cudaDeviceSynchronize()); } while (0)
      printf("== P1 same size, same stream (%s)\n", how); busy(0, 50);
      { void *x = aln(8 * MIB, 0, "x"); frn(x, 0); WAIT(); void *y = aln(8 * MIB, 0, "y"); printf("  y %s x\n", y == x ? "==" : "!="); frn(y, 0); }
      reset(); printf("== P2 two adjacent pending frees, then their sum (%s)\n", how); busy(0, 50);
      { void *x = aln(8 * MIB, 0, "x"), *z = aln(8 * MIB, 0, "z"); void *k = aln(8 * MIB, 0, "keep"); frn(x, 0); frn(z, 0); WAIT();
        void *w = aln(16 * MIB, 0, "w"); printf("  w %s x\n", w == x ? "==" : "!="); frn(w, 0); frn(k, 0); }
      reset(); printf("== P3 a smaller request from a pending free (%s)\n", how); busy(0, 50);
      { void *x = aln(40 * MIB, 0, "x"); void *k = aln(8 * MIB, 0, "keep"); frn(x, 0); WAIT(); void *y = aln(20 * MIB, 0, "y");
        printf("  y %s x\n", y == x ? "==" : "!="); frn(y, 0); frn(k, 0); }
      reset(); printf("== P4 freed on stream 0, asked on another stream (%s)\n", how); busy(0, 50);
      { void *x = aln(8 * MIB, 0, "x"); frn(x, 0); WAIT(); void *y = aln(8 * MIB, s1, "y"); printf("  y %s x\n", y == x ? "==" : "!="); frn(y, s1); }
      reset(); printf("== P5 a pending free next to the pool's free end, then a request larger than either (%s)\n", how); busy(0, 50);
      { void *x = aln(24 * MIB, 0, "x"); frn(x, 0); WAIT(); void *y = aln(28 * MIB, 0, "y"); printf("  y %s x\n", y == x ? "==" : "!="); frn(y, 0); }
      reset();
#undef WAIT
    }
  } else if (!strcmp(m, "replay") || !strcmp(m, "replaysync") || !strcmp(m, "replayx")) {
    /* replayx TRACE LOG WHAT: after each call, WHAT: none, kernel (an empty kernel on stream 0), spin (a
       kernel of about 20 us), query (cudaStreamQuery), event (cudaEventRecord + cudaEventQuery, as
       gpufrees.py's tracker), lasterr (cudaGetLastError, as PyTorch's backend); WHAT+track also times each
       free as gpufrees.py does (an event recorded after it, the oldest queried before each request) and
       logs `k ID K` when it is seen passed: K requests came before; kmark and smark: an empty or a 20 us
       kernel that writes its number to mapped host memory, which the host reads (no CUDA call) before each
       request to log `k ID K` for the frees the GPU has passed (a free is passed once the kernel before it
       has run) */
    int sync = !strcmp(m, "replaysync");
    char what[64];
    snprintf(what, sizeof what, "%s", !strcmp(m, "replayx") && argc > 4 ? argv[4] : "none");
    char *plus = strstr(what, "+track");
    int track = plus != NULL;
    if (plus) *plus = 0;
    static cudaEvent_t tev[100000]; static unsigned long long tid[100000], tat[100000]; size_t th = 0, tt = 0;
    unsigned long long nreq = 0;
    volatile unsigned long long *hmark = NULL; unsigned long long *dmark = NULL, kseq = 0;
    int marks = !strcmp(what, "kmark") || !strcmp(what, "smark");
    if (marks) {
      CK(cudaHostAlloc((void **)&hmark, sizeof *hmark, cudaHostAllocMapped));
      *hmark = 0;
      CK(cudaHostGetDevicePointer((void **)&dmark, (void *)hmark, 0));
    }
    cudaEvent_t xev; CK(cudaEventCreateWithFlags(&xev, cudaEventDisableTiming));
    int khz; cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
#define AFTER() do { \
      if (!strcmp(what, "kernel")) spin<<<1, 1, 0, 0>>>(0); \
      else if (!strcmp(what, "spin")) spin<<<1, 1, 0, 0>>>((long long)khz / 50); \
      else if (!strcmp(what, "query")) (void)cudaStreamQuery(0); \
      else if (!strcmp(what, "event")) { CK(cudaEventRecord(xev, 0)); (void)cudaEventQuery(xev); } \
      else if (!strcmp(what, "lasterr")) (void)cudaGetLastError(); \
      else if (marks) mark<<<1, 1, 0, 0>>>(dmark, ++kseq, !strcmp(what, "smark") ? (long long)khz / 50 : 0); \
    } while (0)
    FILE *f = fopen(argv[2], "r"); FILE *o = fopen(argv[3], "w");
    static void *ptr[100000]; char line[512]; unsigned long long peak = 0, n = 0, last = 0;
    while (fgets(line, sizeof line, f)) {
      unsigned long long id, bytes; char stream[64];
      if (line[0] == 'a' && sscanf(line + 2, "%llu %llu %63s", &id, &bytes, stream) == 3) {
        while (marks && th < tt && *hmark >= tat[th] >> 32) {
          fprintf(o, "k %llu %llu\n", tid[th], nreq - (tat[th] & 0xffffffffull));
          th++;
        }
        while (track && th < tt && cudaEventQuery(tev[th]) == cudaSuccess) {
          fprintf(o, "k %llu %llu\n", tid[th], nreq - tat[th]);
          th++;
        }
        nreq++;
        CK(cudaMallocAsync(&ptr[id], bytes, 0)); if (sync) CK(cudaStreamSynchronize(0)); AFTER();
        if (!base) base = (uintptr_t)ptr[id];
        unsigned long long r = RES(); if (r > peak) peak = r;
        fprintf(o, "a %llu %llu %lld %llu%s\n", id, bytes, (long long)((uintptr_t)ptr[id] - base), r, r != last ? " *" : ""); last = r;
      } else if (line[0] == 'f' && sscanf(line + 2, "%llu", &id) == 1) {
        CK(cudaFreeAsync(ptr[id], 0)); if (sync) CK(cudaStreamSynchronize(0));
        if (marks && tt < 100000) { /* passed once the kernel launched before it has run */
          tid[tt] = id; tat[tt++] = kseq << 32 | nreq;
        }
        if (track && tt < 100000) {
          CK(cudaEventCreateWithFlags(&tev[tt], cudaEventDisableTiming));
          CK(cudaEventRecord(tev[tt], 0));
          tid[tt] = id; tat[tt++] = nreq;
        }
        AFTER();
        unsigned long long r = RES(); if (r > peak) peak = r;
        fprintf(o, "f %llu %llu%s\n", id, r, r != last ? " *" : ""); last = r;
      } else continue;
      n++;
    }
    CK(cudaDeviceSynchronize());
    for (; th < tt; th++) fprintf(o, "k %llu %llu end\n", tid[th], nreq - (tat[th] & (marks ? 0xffffffffull : ~0ull)));
    printf("%s: %llu requests, peak reserved (polled) %llu, ReservedMemHigh %llu, UsedMemHigh %llu\n", argv[2], n, peak,
           attr(cudaMemPoolAttrReservedMemHigh), attr(cudaMemPoolAttrUsedMemHigh));
    fclose(o);
  }
  return 0;
}
