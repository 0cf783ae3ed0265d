/*
 * export.h — the tuned policy as settings for a PyTorch image.
 *
 * What PyTorch can express (the caching allocator's knobs, expandable
 * segments, the cudaMallocAsync backend) becomes a PYTORCH_CUDA_ALLOC_CONF
 * value holding only keys PyTorch accepts (docs/design.md lists them), defaults
 * left out, values written as PyTorch parses them.  What it cannot express
 * (stitching, an async pool that releases memory) becomes the configuration
 * of pagetune's allocator library for PyTorch (libpagetune_alloc.so,
 * backend/alloclib.c) and the lines that install it in an image.  A policy
 * with hooks (Lua) is runnable by the library, which runs no Lua, when its
 * size hooks were resolved into tables (hooktab.h, docs/export.md): the
 * JSON carries them as "hook_tables" and the conf says hooks=tables (the
 * conf string alone cannot carry them); its page_size hook is dropped with
 * a note (page size is a model-only dimension).  One whose hooks could not
 * be resolved is not runnable: its export says so, with the reason, and
 * installs nothing.  Notes say what was
 * approximated and warn where a knob would silently do nothing
 * (garbage_collection_threshold without a memory-fraction cap).
 *
 * No SQLite, Lua or CUDA here: the caller (the CLI) reads the run from the
 * store and fills pt_export_input.
 */
#ifndef PT_EXPORT_H
#define PT_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "mech.h"
#include "sizetable.h"

typedef struct pt_export_input {
  const char *policy;          /* policy name (shown; [A-Za-z0-9_.-] where it enters a value) */
  const char *mechanism;       /* direct | caching | expandable | async_pool | stitch */
  const pt_params *params;     /* the run's parameters (may be NULL: all defaults) */
  uint64_t capacity;           /* the run's --capacity (bytes); 0 = no cap */
  uint64_t device_total_bytes; /* GPU memory (totalGlobalMem); 0 = unknown */
  int has_hooks;               /* the policy overrides decisions through hooks */
  const char *trace;           /* trace name (shown only; may be NULL) */
  int64_t run_id;              /* stored run id; < 0 = none */
  /* with has_hooks: the hooks resolved into tables (pt_hooktab_resolve_policy), or NULL when they could not be */
  const pt_sizetab_set *tables;
  const char *hooks_refused;   /* why not (one line), when tables is NULL; NULL: not said */
  int page_size_dropped;       /* the policy's page_size hook was left out of the tables */
  const char *device_name;     /* the GPU description device_total_bytes is of (shown with the fraction); NULL: unnamed */
} pt_export_input;

/*
 * Where an image holds the library's files: the COPY lines' destinations.  In
 * the build context they lie under PT_EXPORT_CONTEXT_SUBDIR (the COPY lines'
 * sources), named as the image names them.
 */
#define PT_EXPORT_IMAGE_DIR "/opt/pagetune"
#define PT_EXPORT_IMAGE_LIB PT_EXPORT_IMAGE_DIR "/libpagetune_alloc.so"
#define PT_EXPORT_IMAGE_CONFIG PT_EXPORT_IMAGE_DIR "/pagetune.json"
#define PT_EXPORT_IMAGE_PYDIR PT_EXPORT_IMAGE_DIR "/python" /* pagetune_alloc.py and sitecustomize.py: on PYTHONPATH */
#define PT_EXPORT_CONTEXT_SUBDIR "pagetune"
#define PT_EXPORT_LIB_ALLOC "pagetune_malloc" /* what CUDAPluggableAllocator calls (backend/pagetune_alloc.h) */
#define PT_EXPORT_LIB_FREE "pagetune_free"
/* An async_pool release threshold at or above this never releases when the device is unknown (the mechanism's largest, 2^50). */
#define PT_EXPORT_ASYNC_NEVER 1125899906842624.0

/* Limits of the strings this module writes and reads. */
#define PT_EXPORT_NAME_MAX 64     /* a policy's name as the library reads it (libconf.h: PT_LIBCONF_NAME_MAX) */
#define PT_EXPORT_CONF_MAX 1024   /* a conf value, merged */
#define PT_EXPORT_NOTES_MAX 8192  /* notes text */
/* *_mb values at or above this (2^31-1 MiB, ~2 PiB) mean "unlimited": it is the largest
 * value every PyTorch release parses (older ones used stoi). */
#define PT_EXPORT_MB_UNLIMITED 2147483647.0

/*
 * The conf value (key:value,key:value) for in, merged into merge (an existing
 * PYTORCH_CUDA_ALLOC_CONF value, or NULL).  Keys of merge are kept, in their
 * order, unless the export sets them (or, for the keys its mechanism owns,
 * leaves them at the default); each override is a note.  notes receives
 * newline-terminated lines, each starting "approximation: ", "warning: ",
 * "override: " or "note: ".  conf may come back empty (nothing to set).
 * Returns 0, or PT_EUSAGE (bad input: unknown mechanism, bad parameter),
 * PT_EFORMAT / PT_EFORBID (merge unparsable / hostile characters), PT_ELIMIT
 * (buffers too small); err says why.
 */
int pt_export_conf(const pt_export_input *in, const char *merge, char *conf, size_t n, char *notes, size_t nn,
                   pt_err *err);

/*
 * What an export sets in a process's environment, for a program that starts
 * the process itself (pagetune confirm) rather than writing lines for an
 * image: the same decisions pt_export_write makes.
 */
typedef struct pt_export_plan {
  int library;                   /* pagetune's allocator library is needed */
  int runnable;                  /* ... and can run it */
  char refused[PT_ERRMSG_MAX];   /* why it cannot, when library && !runnable */
  char conf[PT_EXPORT_CONF_MAX]; /* PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF ("": PyTorch's defaults, set neither) */
  int nenv;                      /* other variables for PyTorch's allocator (PYTORCH_NO_CUDA_MEMORY_CACHING for direct) */
  struct {
    char name[48];
    char value[PT_EXPORT_CONF_MAX];
  } env[2];
  char fraction[24];             /* torch.cuda.set_per_process_memory_fraction's argument for the cap, or "" */
} pt_export_plan;

/* The plan of in (merge NULL); 0, or pt_export_conf's errors. */
int pt_export_plan_of(const pt_export_input *in, pt_export_plan *out /* OUT */, pt_err *err);

/* format: "env" (shell export lines), "dockerfile" (ENV lines), "json" (one object). */
int pt_export_write(FILE *f, const pt_export_input *in, const char *format, const char *merge, pt_err *err);

/* The files an image of a library export needs (pt_export_write_context copies them). */
typedef struct pt_export_context {
  const char *dir;      /* the build context: DIR/PT_EXPORT_CONTEXT_SUBDIR/ is made and filled */
  const char *lib;      /* libpagetune_alloc.so */
  const char *alloc_py; /* pagetune_alloc.py */
  const char *site_py;  /* pagetune_sitecustomize.py, copied as sitecustomize.py */
} pt_export_context;

/*
 * The Dockerfile lines for in, as pt_export_write's "dockerfile" format, with
 * the files their COPY lines name written into ctx->dir first: the library
 * and the two Python files copied, the JSON configuration (the "json"
 * format) written; each file whole or not at all (written beside, then
 * renamed).  A policy PyTorch's own allocator runs needs no files: nothing is
 * written and a comment says so.  One with hooks not resolved into tables,
 * which the library does not run, is refused (PT_EFORBID); a missing source is PT_ENOTFOUND; a file that
 * cannot be written, PT_EIO.
 */
int pt_export_write_context(FILE *f, const pt_export_input *in, const char *merge, const pt_export_context *ctx, pt_err *err);

/*
 * Parse a PYTORCH_CUDA_ALLOC_CONF value.  Only the keys docs/design.md lists are
 * accepted (an unknown key is an error naming it), with PyTorch 2.11's value
 * rules.  out (cleared first) receives one entry per key, named as the key:
 * max_split_size_mb, max_non_split_rounding_mb (both INFINITY at or above
 * PT_EXPORT_MB_UNLIMITED), garbage_collection_threshold, expandable_segments,
 * release_lock_on_cudamalloc, pinned_use_cuda_host_register (0/1),
 * pinned_num_register_threads, roundup_power2_divisions (a number for the integer
 * form or a list whose 16 intervals are all equal, else a list value: mech.h).  backend receives the backend
 * ("native" when absent).  Whitespace is ignored, as PyTorch does; control
 * characters, quotes, '$', '\\' and '`' are refused (PT_EFORBID); a key given twice is
 * refused.  out and backend may be NULL.
 */
int pt_export_parse_conf(const char *conf, pt_params *out, char *backend, size_t nb, pt_err *err);

/*
 * The memory-fraction argument F for torch.cuda.set_per_process_memory_fraction
 * so that PyTorch's cap int(F * total) (computed in double) is >= capacity and
 * admits exactly the same 2 MiB-granular reservations; the shortest such decimal
 * is written to buf.  Returns 0, or PT_EUSAGE when capacity is 0, total is 0 or
 * capacity >= total (no fraction below 1 expresses it).
 */
int pt_export_fraction(uint64_t capacity, uint64_t total, char *buf, size_t n, pt_err *err);

#endif
