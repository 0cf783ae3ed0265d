/*
 * trace.h — allocation traces: the fixed record every reader yields, the
 * reader interface (one implementation per source format), and the writer of
 * the native format (traces/FORMAT.md).
 *
 * Whatever the source (native text, gzip'd or not; a PyTorch memory
 * snapshot), pt_trace_next() hands out pt_event records that have already
 * been checked: ids are live when freed, never reused while live, sizes are
 * sane, initial state comes first.  The model downstream never re-checks and
 * never knows which format a record came from.
 */
#ifndef PT_TRACE_H
#define PT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frames.h"

/*
 * The versioning rule (traces/FORMAT.md, "Versions"; the store follows the
 * same one, docs/store.md).  PT_TRACE_VERSION is the version this build
 * writes.  It reads every version from 1 up to it, each through its own
 * reader in trace.c (native_versions[]; a released version's reader never
 * changes), and refuses a newer one with one line: "written by a newer
 * pagetune".  Additions an older reader can skip keep the version: a new
 * `@key` header line, a new `+tag` extension line.  Anything else (a new
 * record tag, a new field, a new meaning) is a new version.
 */
#define PT_TRACE_VERSION 1
#define PT_TRACE_MAX_BYTES (UINT64_C(1) << 50)  /* 1 PiB: anything larger is absurd */
#define PT_TRACE_MAX_LINE 65536                  /* longest native line (header text) */
#define PT_TRACE_MAX_GPU_REQUESTS (UINT64_C(1) << 40) /* +gpu: more requests than any trace holds */

/*
 * Record kinds.  The value is the tag letter of the native format.
 * Requests (what the workload asked for) drive the model; observed records
 * (what the real allocator did) are ground truth for fidelity and an address
 * source; initial-state records describe the allocator at capture start and
 * come before any other record.
 */
typedef enum pt_ev_kind {
  PT_EV_ALLOC = 'a',        /* request: id bytes stream time [addr]       */
  PT_EV_FREE = 'f',         /* request: id time (bytes, stream filled in) */
  PT_EV_ACCESS = 'x',       /* request: id offset bytes time              */
  PT_EV_INIT_SEGMENT = 'S', /* initial: addr bytes stream [flags]         */
  PT_EV_INIT_ALLOC = 'I',   /* initial: id bytes stream addr (live block) */
  PT_EV_SEG_ALLOC = 'A',    /* observed: addr bytes stream time           */
  PT_EV_SEG_FREE = 'F',     /* observed: addr bytes stream time           */
  PT_EV_SEG_MAP = 'M',      /* observed: addr bytes stream time           */
  PT_EV_SEG_UNMAP = 'U',    /* observed: addr bytes stream time           */
  PT_EV_OOM = 'O'           /* observed: bytes stream time                */
} pt_ev_kind;

#define PT_SEGF_EXPANDABLE 1u /* initial segment is an expandable (VMM) one */
#define PT_EVF_HAS_ADDR 2u    /* alloc carries the address the real run used */
#define PT_EVF_CAPTURE 4u     /* a CUDA graph capture begins before this record (torch.cuda.graph's empty_cache) */
#define PT_EVF_DEFERRED 8u    /* a free that waited for other streams' work (record_stream): the snapshot's
                                 free_requested came records before its free_completed */
#define PT_EVF_GPU_LAG 16u    /* a free whose GPU time was measured (+gpu): pt_event.offset holds the lag */
#define PT_EVF_SYNC 32u       /* the program waited for the GPU (a stream or device synchronisation) before this
                                 record (+sync): every free before it had completed */
#define PT_EVF_ORDER 64u      /* stream order was set up before this record (+event, +wait: pt_trace_order); set
                                 by the reader, ignored by the writer */

typedef struct pt_event {
  uint64_t id;      /* allocation id (ALLOC, FREE, ACCESS, INIT_ALLOC) */
  uint64_t bytes;   /* requested bytes / segment bytes / bytes touched */
  uint64_t addr;    /* device address where known (0 otherwise) */
  uint64_t stream;  /* CUDA stream handle as recorded (0 = default) */
  uint64_t offset;  /* ACCESS: offset into the allocation; FREE with PT_EVF_GPU_LAG: the requests made
                       after it before the GPU passed it (the lag) */
  int64_t time_us;  /* capture time, microseconds */
  uint8_t kind;     /* pt_ev_kind */
  uint8_t flags;    /* PT_SEGF_* / PT_EVF_* */
  uint16_t pool;    /* the private memory pool it is in (pt_trace_pools), 0: the default pool */
  uint32_t stack;   /* ALLOC, INIT_ALLOC: where it was allocated (pt_trace_frames); 0 unknown */
} pt_event;

/*
 * Private memory pools (a CUDA graph's, or a torch.cuda.MemPool's), as PyTorch
 * names them: a MempoolId_t, two numbers ((0, 0) is the default pool, never
 * listed).  A trace numbers the pools it holds from 1 in the order first met;
 * pt_event.pool is that number.  Only records with an address carry one.
 */
#define PT_TRACE_MAX_POOLS 65535
typedef struct pt_pool_id {
  uint64_t first, second;
} pt_pool_id;

typedef struct pt_pools {
  pt_pool_id *id;   /* id[k - 1]: pool k */
  size_t n, cap;
} pt_pools;

/* The number of pool (first, second), added when new: 1.., or PT_ENOMEM / PT_ELIMIT; (0, 0) is PT_EFORMAT. */
int pt_pools_intern(pt_pools *p, uint64_t first, uint64_t second, uint16_t *out /* OUT */);
void pt_pools_free(pt_pools *p);

/*
 * The stream order a program set up between records (+event, +wait): an event recorded on a stream
 * (cudaEventRecord), a stream made to wait for the work before an event's latest record (cudaStreamWaitEvent).
 * Events are numbered 1 .. PT_TRACE_MAX_EVENTS - 1 in the file.
 */
#define PT_TRACE_MAX_EVENTS (UINT64_C(1) << 24)
#define PT_TRACE_MAX_ORDER_RUN 65536 /* +event / +wait lines before one record */
typedef struct pt_order_op {
  uint64_t before;  /* the record it comes before: its index among the records read (from 0) */
  uint64_t event;
  uint64_t stream;
  int wait;         /* 0: the event recorded on stream; 1: stream waits for the event */
} pt_order_op;

typedef struct pt_order {
  pt_order_op *op;  /* in file order */
  size_t n, cap;
} pt_order;

void pt_order_free(pt_order *o);

/* What the header says about a trace. */
typedef struct pt_trace_info {
  int version;
  int device;            /* -1 when unknown */
  char source[256];      /* where it came from, e.g. "pytorch-snapshot" */
  char tool[128];        /* capture tool and version */
  char settings[1024];   /* allocator settings at capture, free text */
  int syncs_recorded;    /* @syncs recorded: its +sync lines are every synchronisation the run made between its
                            records (trace import --async-run), so none where there is none */
} pt_trace_info;

typedef struct pt_trace_opts {
  int device;            /* snapshot device to read; -1: the only one with events */
  int strip_frames;      /* keep no stack frames (pt_event.stack stays 0) */
  int keep_order;        /* keep the stream order before every record read (pt_trace_order), not only the last's */
} pt_trace_opts;

typedef struct pt_trace pt_trace;

/*
 * One source format.  probe() looks at the first bytes (decompressed);
 * open() takes ownership of nothing and reads what it needs from the
 * buffer/stream in pt_trace; next() returns 1 with a record, 0 at the end,
 * or a negative PT_E* with err filled (position and reason; pt_trace_next
 * adds the file name).
 */
typedef struct pt_trace_format {
  const char *name;
  int (*probe)(const uint8_t *head, size_t len);
  int (*open)(pt_trace *t, const pt_trace_opts *opts, pt_err *err);
  int (*next)(pt_trace *t, pt_event *ev, pt_err *err);
  void (*close)(pt_trace *t);
  /* where the record last returned came from: "line 12", "device_traces[0][7]" */
  void (*position)(pt_trace *t, char *buf, size_t n);
} pt_trace_format;

int pt_trace_open(const char *path, const pt_trace_opts *opts, pt_err *err,
                  pt_trace **out /* OUT */);
/* Same, over a buffer the caller keeps alive until close; name labels errors. */
int pt_trace_open_mem(const void *buf, size_t len, const char *name,
                      const pt_trace_opts *opts, pt_err *err, pt_trace **out /* OUT */);
int pt_trace_next(pt_trace *t, pt_event *ev /* OUT */, pt_err *err);
const pt_trace_info *pt_trace_get_info(const pt_trace *t);
/* The frames the records' stack ids name: complete once the last record is read. */
const pt_frames *pt_trace_frames(const pt_trace *t);
/* Move the frames to *out (the reader keeps none). */
void pt_trace_take_frames(pt_trace *t, pt_frames *out /* OUT */);
/* The private pools the records' pool numbers name: complete once the last record is read. */
const pt_pools *pt_trace_pools(const pt_trace *t);
void pt_trace_take_pools(pt_trace *t, pt_pools *out /* OUT */);
/* The stream order before the record last returned, or with keep_order before every record read so far
   (pt_order_op.before indexes them). */
const pt_order *pt_trace_order(const pt_trace *t);
void pt_trace_take_order(pt_trace *t, pt_order *out /* OUT */);
const char *pt_trace_format_name(const pt_trace *t);
void pt_trace_close(pt_trace *t);

/*
 * The bytes the real allocator held, as its records tell: initial segments
 * and segment allocs/maps add, segment frees/unmaps take away.  Apply to
 * each record in order; other kinds leave *reserved alone.
 */
void pt_trace_track_reserved(const pt_event *ev, uint64_t *reserved);

/* ---- what format implementations may use (trace.c) ---------------------- */

/* Read up to n bytes of the (decompressed) input; returns bytes read or <0. */
long pt_trace_read(pt_trace *t, void *buf, size_t n, pt_err *err);
/* Start the input again from its first byte (a pipe cannot: PT_EIO, and the input reads on). */
int pt_trace_rewind(pt_trace *t, pt_err *err);
pt_trace_info *pt_trace_info_mut(pt_trace *t);
pt_frames *pt_trace_frames_mut(pt_trace *t);
pt_pools *pt_trace_pools_mut(pt_trace *t);
void *pt_trace_state(pt_trace *t);          /* format's private state */
void pt_trace_set_state(pt_trace *t, void *state);

/* ---- writer of the native format ---------------------------------------- */

typedef struct pt_trace_writer pt_trace_writer;

/*
 * Writes to a temporary file beside path; commit renames it into place, abort
 * (or any failure) removes it, so no partial output is ever left behind.
 * A path ending in ".gz" is gzip-compressed.
 */
int pt_trace_writer_open(const char *path, const pt_trace_info *info, pt_err *err,
                         pt_trace_writer **out /* OUT */);
/* The table the events' stack ids name; without one (or with stack 0) no frames are written. */
void pt_trace_writer_set_frames(pt_trace_writer *w, const pt_frames *f);
/* The table the events' pool numbers name; needed to write an event with a pool (+pool lines). */
void pt_trace_writer_set_pools(pt_trace_writer *w, const pt_pools *p);
int pt_trace_writer_put(pt_trace_writer *w, const pt_event *ev, pt_err *err);
/* A stream-order line (+event / +wait) before the next record put; op->before is not used. */
int pt_trace_writer_put_order(pt_trace_writer *w, const pt_order_op *op, pt_err *err);
int pt_trace_writer_commit(pt_trace_writer *w, pt_err *err);  /* frees w */
void pt_trace_writer_abort(pt_trace_writer *w);               /* frees w */

#endif
