/*
 * record.h — native traces (traces/FORMAT.md) written by a running
 * allocator: what PAGETUNE_RECORD=PATH makes the allocator library record,
 * where PyTorch's snapshot cannot run (it refuses memory history under a
 * pluggable allocator).  libc only: the library is loaded into PyTorch.
 *
 * Two levels.  A pt_record is one trace file of one device: the header
 * (`pagetune-trace 1`, @source, @tool, @device, @settings), then an `a` line
 * per served request and an `f` line per free, ids numbered from 1 in
 * allocation order and mapped from addresses here, an `O` line per request
 * refused for want of memory, and `end N` at close.  It refuses what the
 * trace reader would refuse (an address handed out twice while live, a free
 * of an address it never saw, more than 2^50 bytes, the time INT64_MIN),
 * writing nothing, so what it writes always reads back.  A pt_recorder is
 * the process's set of
 * them: one file per device, opened on the device's first event, fed through
 * the allocator's observer table (alloc.h).
 *
 * Text is uncompressed (the library links no zlib): a PATH ending in .gz is
 * refused.  Lines go into a buffer (1 MiB by default), written when full and
 * at close with write(2), every call checked; close writes `end N`, then
 * fsync(2)s (a late ENOSPC or EIO shows there) and closes.  The header is
 * written at open, so an unwritable file fails at once.  After a write
 * failure a record stops for good: every later call returns the same error
 * and writes nothing; the file is left without its `end` line, which the
 * reader refuses, as it refuses the file of a process killed before close.
 *
 * Thread safety: a pt_record has its own mutex, so any thread may call it;
 * a pt_recorder locks each device's slot on its own, so devices record in
 * parallel.  The allocator calls the observer under the device's lock, so a
 * file's records (and the times the recorder takes for them) are in the
 * order the device served them.
 */
#ifndef PT_RECORD_H
#define PT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "error.h"

#define PT_RECORD_VERSION 1                     /* the native format version written */
#define PT_RECORD_MAX_BYTES (UINT64_C(1) << 50) /* the reader's limit (PT_TRACE_MAX_BYTES) */
#define PT_RECORD_BUFFER (1u << 20)             /* default buffer */
#define PT_RECORD_MIN_BUFFER 256                /* the smallest buffer: a few lines */
#define PT_RECORD_SETTINGS_MAX 4096             /* @settings text kept, at most */

/* What the header says; NULL strings take the defaults. */
typedef struct pt_record_meta {
  int device;            /* @device: the CUDA ordinal (0 to 4096) */
  const char *source;    /* @source; NULL: "pagetune-alloc" */
  const char *tool;      /* @tool; NULL: "libpagetune_alloc.so" */
  const char *settings;  /* @settings: the configuration recorded under (newlines become spaces); NULL: none */
  size_t buffer_bytes;   /* 0: PT_RECORD_BUFFER; at least PT_RECORD_MIN_BUFFER */
} pt_record_meta;

/* Where a record's bytes go: a file (pt_record_open), or a test's buffer or failing double. */
typedef struct pt_record_sink {
  int (*write)(void *ctx, const void *buf, size_t n, pt_err *err); /* all n bytes: 0, or <0 with err's reason */
  int (*finish)(void *ctx, pt_err *err); /* after the last write: make it durable, release; NULL: nothing */
  void (*abandon)(void *ctx);            /* release without finishing (after a failure); NULL: nothing */
  void *ctx;
} pt_record_sink;

typedef struct pt_record pt_record;

/* path created or truncated (mode 0666 less umask); the header written.  PT_EUSAGE for a .gz path. */
int pt_record_open(const char *path, const pt_record_meta *meta, pt_err *err, pt_record **out /* OUT */);
/* The same over sink; name labels messages (as a path does). */
int pt_record_open_sink(const pt_record_sink *sink, const char *name, const pt_record_meta *meta, pt_err *err,
                        pt_record **out /* OUT */);
/* `a id bytes stream time addr`, id the next (from 1), returned in *id.  PT_EUSAGE: refused, nothing written. */
int pt_record_alloc(pt_record *r, uint64_t bytes, uint64_t stream, int64_t time_us, uint64_t addr, uint64_t *id /* OUT */,
                    pt_err *err);
/* `f id time` for the live allocation at addr.  PT_EUSAGE: not live, nothing written. */
int pt_record_free(pt_record *r, uint64_t addr, int64_t time_us, pt_err *err);
/* `O bytes stream time`: a request refused for want of memory. */
int pt_record_oom(pt_record *r, uint64_t bytes, uint64_t stream, int64_t time_us, pt_err *err);
/* Records written so far (the `end` count). */
uint64_t pt_record_count(pt_record *r);
/* `end N`, the buffer written, the sink finished; r freed.  0, or the first failure (then no `end`). */
int pt_record_close(pt_record *r, pt_err *err);
/* r freed without `end` (a trace the reader refuses), for a recording given up. */
void pt_record_abandon(pt_record *r);

/* Device device's file for PAGETUNE_RECORD=path: path itself for device 0; for device N, ".devN" before the
   name's last extension (/tmp/run.trace: /tmp/run.dev1.trace), or after a name without one.  PT_ELIMIT if it
   does not fit in n bytes. */
int pt_record_path(const char *path, int device, char *buf, size_t n);

/* ---- the process's recorder: a file per device, fed by the allocator ------ */

typedef struct pt_recorder_opts {
  const char *path;       /* PAGETUNE_RECORD: device 0's file, the others by pt_record_path */
  const char *settings;   /* @settings of every file; NULL: none */
  size_t buffer_bytes;    /* per file; 0: PT_RECORD_BUFFER */
  /* told one line (no newline) for each device whose recording stops: its file cannot be opened or written,
     or close failed; the allocator goes on serving.  NULL: nobody is told (close still returns it). */
  void (*report)(void *ctx, const char *line);
  void *report_ctx;
} pt_recorder_opts;

typedef struct pt_recorder pt_recorder;

/* Checks path (not empty, not .gz, fits, its folder writable); opens nothing yet. */
int pt_recorder_create(const pt_recorder_opts *o, pt_err *err, pt_recorder **out /* OUT */);
/* The observer table that feeds r (for pt_alloc_set_observer); times are microseconds since the epoch: the
   real-time clock read at create plus the monotonic clock's advance since, so they never go back. */
void pt_recorder_observer(pt_recorder *r, pt_alloc_observer *out /* OUT */);
/* Every open file ended and closed (each failure reported); later events are ignored.  In a process forked
   after the files opened, the files are left to the parent.  0 or the first failure.  r stays valid. */
int pt_recorder_close(pt_recorder *r, pt_err *err);
/* r and what it holds freed (closing first if not closed). */
void pt_recorder_free(pt_recorder *r);

#endif
