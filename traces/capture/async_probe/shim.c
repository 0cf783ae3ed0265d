/*
 * shim.c — what PyTorch's backend:cudaMallocAsync asks of the driver, and what the driver answers, in a real
 * run (issue 12).  An LD_PRELOAD library: it wraps cudaMallocAsync and cudaFreeAsync (logging each call, the
 * address returned and the pool's reserved bytes after it, read with cudaMemPoolGetAttribute as probe.cu's
 * replays do), and counts the calls that could tell the driver how far a stream has got (stream and event
 * queries and synchronisations, event records and waits, kernel launches through the runtime), logged as one
 * line before the next pool call.  Nothing else changes: every call goes on to the runtime as it was.
 *
 * Built and used on the GPU machine (traces/capture/async_shim_on_device.sh):
 *     gcc -O2 -shared -fPIC -I$CUDA_HOME/include -o shim.so shim.c -ldl -lpthread
 *     PT_SHIM_OUT=run.log LD_PRELOAD=$PWD/shim.so PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python3 ...
 * The log (sim/trace/gpufrees.h: `pagetune trace import --async-run` reads it), one call a line:
 *     pagetune-async-run 1
 *     a BYTES ADDR STREAM RESERVED     cudaMallocAsync (ADDR, STREAM hex)
 *     f ADDR STREAM RESERVED           cudaFreeAsync
 *     n L=.. Q=.. S=.. E=.. R=.. W=..  since the last pool call: kernel launches, stream/event queries,
 *                                      synchronisations, event records, stream waits (only when one is not 0)
 *     e EVENT STREAM, w STREAM EVENT   with PT_SHIM_EVENTS=1: an event recorded on a stream, a stream made to wait
 *                                      for an event (in order with the pool's calls)
 *     k I K                            with PT_SHIM_MARK=1: the I-th free (from 1) was passed by the GPU after
 *                                      K more requests (0: before the next one)
 *     end CALLS                        at exit: the number of a and f lines (none: the process did not exit)
 * Preloaded into a run under the native allocator (PT_GPU_FREES=1 captures), it writes nothing; it counts the
 * synchronisations for gpufrees.py (pt_shim_syncs) and times them and the native allocator's cudaMalloc and
 * cudaFree (pt_shim_sync_ns, pt_shim_stall_ns: the host's stalls, for gpufrees.py's times file).
 * PT_SHIM_MARK=1 times the frees without asking the driver anything: after each cudaFreeAsync a stream
 * memory operation (cuStreamWriteValue32) writes the free's number to host memory, which the shim reads
 * before each request (a plain load, no CUDA call).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static void *cudart;
static unsigned long long n_launch, n_query, n_sync, n_record, n_wait, n_evquery;
static unsigned long long n_sync_total; /* every synchronisation, for pt_shim_syncs */
/* PT_SHIM_MARK: one host word per stream, written by the GPU as it passes each free */
#define MARK_STREAMS 16
#define MARK_MAX (1 << 20)
static int marking = -1;
static volatile unsigned *mark_host;
static void *mark_dev;
static cudaStream_t mark_stream[MARK_STREAMS];
static int mark_nstreams;
static int (*write_value)(void *stream, unsigned long long addr, unsigned value, unsigned flags);
static struct { unsigned seq; int slot; unsigned long long at; } mark_free[MARK_MAX];
static unsigned mark_n, mark_head[MARK_STREAMS], mark_tail[MARK_STREAMS], mark_q[MARK_STREAMS][4096];
static unsigned long long mark_requests, calls;

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libcudart.so")) {
    snprintf((char *)data, 4096, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

/* The runtime's own function: the next definition, else the loaded libcudart's. */
static void *real(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (f) return f;
  if (!cudart) {
    char path[4096] = "";
    dl_iterate_phdr(find_cudart, path);
    if (*path) cudart = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  }
  f = cudart ? dlsym(cudart, name) : NULL;
  if (!f) {
    fprintf(stderr, "shim: %s not found\n", name);
    abort();
  }
  return f;
}

#define REAL(type, name, args) \
  static type(*fn) args;       \
  if (!fn) fn = (type(*) args)real(#name)

static void open_out(void) {
  if (out) return;
  const char *p = getenv("PT_SHIM_OUT");
  out = fopen(p ? p : "shim.log", "w");
  if (!out) {
    perror("shim");
    abort();
  }
  setvbuf(out, NULL, _IOFBF, 1 << 20);
  fputs("pagetune-async-run 1\n", out);
}

/* The pool's reserved bytes (0 where it cannot be read). */
static unsigned long long pool_reserved(void) {
  static cudaError_t (*get_device)(int *);
  static cudaError_t (*get_pool)(cudaMemPool_t *, int);
  static cudaError_t (*get_attr)(cudaMemPool_t, enum cudaMemPoolAttr, void *);
  if (!get_device) {
    get_device = (cudaError_t(*)(int *))real("cudaGetDevice");
    get_pool = (cudaError_t(*)(cudaMemPool_t *, int))real("cudaDeviceGetDefaultMemPool");
    get_attr = (cudaError_t(*)(cudaMemPool_t, enum cudaMemPoolAttr, void *))real("cudaMemPoolGetAttribute");
  }
  int dev = 0;
  cudaMemPool_t pool;
  unsigned long long v = 0;
  if (get_device(&dev) == cudaSuccess && get_pool(&pool, dev) == cudaSuccess)
    get_attr(pool, cudaMemPoolAttrReservedMemCurrent, &v);
  return v;
}

static void mark_init(void) {
  if (marking >= 0) return;
  const char *e = getenv("PT_SHIM_MARK");
  marking = e && *e == '1';
  if (!marking) return;
  cudaError_t (*host_alloc)(void **, size_t, unsigned) = (cudaError_t(*)(void **, size_t, unsigned))real("cudaHostAlloc");
  cudaError_t (*dev_ptr)(void **, void *, unsigned) = (cudaError_t(*)(void **, void *, unsigned))real("cudaHostGetDevicePointer");
  void *h = NULL;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (cuda) write_value = dlsym(cuda, "cuStreamWriteValue32_v2");
  if (cuda && !write_value) write_value = dlsym(cuda, "cuStreamWriteValue32");
  if (!write_value || host_alloc(&h, 4096, cudaHostAllocMapped) != cudaSuccess || dev_ptr(&mark_dev, h, 0) != cudaSuccess) {
    fprintf(stderr, "shim: PT_SHIM_MARK: no stream memory operations\n");
    marking = 0;
    return;
  }
  mark_host = h;
  memset(h, 0, 4096);
}

static int mark_slot(cudaStream_t s) {
  for (int i = 0; i < mark_nstreams; i++)
    if (mark_stream[i] == s) return i;
  if (mark_nstreams == MARK_STREAMS) return -1;
  mark_stream[mark_nstreams] = s;
  return mark_nstreams++;
}

/* Before a request: the frees the GPU has passed since the last look. */
static void mark_poll(void) {
  for (int i = 0; i < mark_nstreams; i++) {
    unsigned done = mark_host[i];
    while (mark_head[i] != mark_tail[i]) {
      unsigned f = mark_q[i][mark_head[i] % 4096];
      if (mark_free[f].seq > done) break;
      fprintf(out, "k %u %llu\n", f + 1, mark_requests - mark_free[f].at);
      mark_head[i]++;
    }
  }
  mark_requests++;
}

/* After a free: its number, written when the GPU gets there. */
static void mark_after_free(cudaStream_t s) {
  int i = mark_slot(s);
  if (i < 0 || mark_n == MARK_MAX || mark_tail[i] - mark_head[i] == 4096) {
    mark_n++;
    return;
  }
  unsigned seq = mark_tail[i] + 1;
  mark_free[mark_n].seq = seq;
  mark_free[mark_n].slot = i;
  mark_free[mark_n].at = mark_requests;
  mark_q[i][mark_tail[i]++ % 4096] = mark_n++;
  write_value((void *)s, (unsigned long long)(uintptr_t)mark_dev + 4 * (unsigned)i, seq, 0);
}

static void counts(void) {
  if (n_launch | n_query | n_sync | n_record | n_wait | n_evquery)
    fprintf(out, "n L=%llu Q=%llu S=%llu E=%llu R=%llu W=%llu\n", n_launch, n_query, n_sync, n_evquery, n_record,
            n_wait);
  n_launch = n_query = n_sync = n_record = n_wait = n_evquery = 0;
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
  REAL(cudaError_t, cudaMallocAsync, (void **, size_t, cudaStream_t));
  pthread_mutex_lock(&mu);
  open_out();
  counts();
  mark_init();
  if (marking) mark_poll();
  cudaError_t rc = fn(p, bytes, s);
  fprintf(out, "a %zu 0x%llx 0x%llx %llu%s\n", bytes, rc == cudaSuccess ? (unsigned long long)(uintptr_t)*p : 0ull,
          (unsigned long long)(uintptr_t)s, pool_reserved(), rc == cudaSuccess ? "" : " failed");
  calls++;
  pthread_mutex_unlock(&mu);
  return rc;
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  REAL(cudaError_t, cudaFreeAsync, (void *, cudaStream_t));
  pthread_mutex_lock(&mu);
  open_out();
  counts();
  cudaError_t rc = fn(p, s);
  mark_init();
  if (marking) mark_after_free(s);
  fprintf(out, "f 0x%llx 0x%llx %llu\n", (unsigned long long)(uintptr_t)p, (unsigned long long)(uintptr_t)s,
          pool_reserved());
  calls++;
  pthread_mutex_unlock(&mu);
  return rc;
}

#define COUNTED(counter, type, name, params, args) \
  type name params {                               \
    REAL(type, name, params);                      \
    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED); \
    return fn args;                                \
  }

COUNTED(n_launch, cudaError_t, cudaLaunchKernel, (const void *f, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s),
        (f, g, b, a, sh, s))
COUNTED(n_query, cudaError_t, cudaStreamQuery, (cudaStream_t s), (s))
COUNTED(n_evquery, cudaError_t, cudaEventQuery, (cudaEvent_t e), (e))
static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static unsigned long long sync_ns, stall_ns; /* ns the host spent in synchronisations, in cudaMalloc and cudaFree */
#define COUNTED_SYNC(type, name, params, args)                    \
  type name params {                                              \
    REAL(type, name, params);                                     \
    __atomic_add_fetch(&n_sync, 1, __ATOMIC_RELAXED);             \
    __atomic_add_fetch(&n_sync_total, 1, __ATOMIC_RELAXED);       \
    unsigned long long t0 = now_ns();                             \
    type rc = fn args;                                            \
    __atomic_add_fetch(&sync_ns, now_ns() - t0, __ATOMIC_RELAXED); \
    return rc;                                                    \
  }
COUNTED_SYNC(cudaError_t, cudaStreamSynchronize, (cudaStream_t s), (s))
COUNTED_SYNC(cudaError_t, cudaDeviceSynchronize, (void), ())
COUNTED_SYNC(cudaError_t, cudaEventSynchronize, (cudaEvent_t e), (e))

/* The synchronisations so far: gpufrees.py's tracker reads them (dlsym) to place them among the native
   allocator's requests and frees, where the shim logs nothing (no cudaMallocAsync is made). */
unsigned long long pt_shim_syncs(void) { return __atomic_load_n(&n_sync_total, __ATOMIC_RELAXED); }
/* The host's time in synchronisations, and in the native allocator's cudaMalloc and cudaFree (a segment made or
   given back), ns so far (CLOCK_MONOTONIC): gpufrees.py's tracker reads them for its times file, so that the
   stalls a cudaMallocAsync run does not make can be taken out of a native capture's host timeline.  Every
   thread's calls are added up: right for the one-thread workloads of traces/capture, not for a program whose
   other threads allocate or synchronise while the allocator's works. */
unsigned long long pt_shim_sync_ns(void) { return __atomic_load_n(&sync_ns, __ATOMIC_RELAXED); }
unsigned long long pt_shim_stall_ns(void) { return __atomic_load_n(&stall_ns, __ATOMIC_RELAXED); }
#define TIMED(type, name, params, args)                            \
  type name params {                                               \
    REAL(type, name, params);                                      \
    unsigned long long t0 = now_ns();                              \
    type rc = fn args;                                             \
    __atomic_add_fetch(&stall_ns, now_ns() - t0, __ATOMIC_RELAXED); \
    return rc;                                                     \
  }
TIMED(cudaError_t, cudaMalloc, (void **p, size_t bytes), (p, bytes))
TIMED(cudaError_t, cudaFree, (void *p), (p))
/* With PT_SHIM_EVENTS=1 event records and stream waits are logged one a line, in order with the pool's calls
   (`e EVENT STREAM`, `w STREAM EVENT`): which stream waited for which, what the driver follows when it lets a free
   on one stream serve another (cudaMemPoolReuseFollowEventDependencies). */
static int log_events = -1;
static int events_on(void) {
  if (log_events < 0) {
    const char *v = getenv("PT_SHIM_EVENTS");
    log_events = v && *v == '1';
  }
  return log_events;
}

/* One event line (kind e or w) and the counter, under the log's lock. */
static void event_line(unsigned long long *counter, char kind, const void *x, const void *y) {
  __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
  if (!events_on()) return;
  pthread_mutex_lock(&mu);
  open_out();
  counts();
  fprintf(out, "%c 0x%llx 0x%llx\n", kind, (unsigned long long)(uintptr_t)x, (unsigned long long)(uintptr_t)y);
  pthread_mutex_unlock(&mu);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  REAL(cudaError_t, cudaEventRecord, (cudaEvent_t, cudaStream_t));
  event_line(&n_record, 'e', e, s);
  return fn(e, s);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int f) {
  REAL(cudaError_t, cudaEventRecordWithFlags, (cudaEvent_t, cudaStream_t, unsigned int));
  event_line(&n_record, 'e', e, s);
  return fn(e, s, f);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int f) {
  REAL(cudaError_t, cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned int));
  event_line(&n_wait, 'w', s, e);
  return fn(s, e, f);
}

__attribute__((destructor)) static void done(void) {
  pthread_mutex_lock(&mu);
  if (out) {
    counts();
    fprintf(out, "end %llu\n", calls);
    fflush(out);
  }
  pthread_mutex_unlock(&mu);
}
