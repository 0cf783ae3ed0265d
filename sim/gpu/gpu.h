/*
 * gpu.h — a GPU description: MMU layout, TLB geometry and latencies, and
 * driver-call cost points.  Read from a small text file (sim/gpus/NAME.gpu),
 * so calibration changes data, not code.  Format, one setting a line:
 *   name h200
 *   description NVIDIA H200 ...
 *   mmu v3                          (v3: Hopper; v2: Pascal–Ada)
 *   sms 132
 *   memory_bytes N                  (device memory as CUDA reports it; caps are fractions of it)
 *   l1_tlb SETS WAYS HIT_NS         (per SM)
 *   l2_tlb SETS WAYS HIT_NS         (shared)
 *   pwc SETS WAYS                   (page-walk cache)
 *   walk_access_ns NS               (one page-table read)
 *   bookkeeping_us [MECH] US        (allocator work per request/free: a constant; per mechanism)
 *   bookkeeping_us MECH BYTES:US ... (the same by request size, interpolated like cost points)
 *   bookkeeping_call_us [MECH] US | MECH BYTES:US ...
 *                                   (the same for requests that made driver calls; default: as above)
 *   bookkeeping_repeat_us, bookkeeping_call_repeat_us: the same two for the repeat class (cost.h's
 *                                   request classes; absent: the plain lines price repeats too)
 *   bookkeeping_work MECH REQ_US OP_US CHUNK_US [VISIT_US]
 *                                   (MECH's own work by what it did, cost.h's pt_cost_work: µs a request or
 *                                   free, a free-set operation, a chunk at an insert, a key or block looked
 *                                   at (0 when left out); where given, in place of MECH's four lines above;
 *                                   written by gpu fit --work)
 *   bookkeeping_loop MECH BYTES:US:OPS:CHUNKS:VISITS ...
 *                                   (calibrate's allocate + free loops through MECH, cached and crowded: µs a
 *                                   request or free and the free-set work each did, by request size; not used to price
 *                                   a run: gpu fit --work adds them to MECH's runs)
 *   torch_pair_us BACKEND BYTES:US ... (PyTorch's allocators measured by calibrate: checked, not used)
 *   host_clock_read_us US           (the host speed the costs hold at: µs one read of the clock took there,
 *                                   clock.h's pt_clock_read_us, which replay --mechanism reports; 0 or absent:
 *                                   not said)
 *   note TEXT                       (what reports must say about this GPU)
 *   cost CALL BYTES:US ...          (CALL: malloc, free, mem_create, ...)
 *   cost_repeat CALL BYTES:US ...   (the calls made in repeat-class requests; absent: cost CALL's)
 *   cost_after_large CALL BYTES:US ... (the calls below 1 MiB within 8 calls of a larger one, either class:
 *                                   device.h's PT_DRV_AFTER_LARGE; absent: their class's line)
 *   source TEXT                     (where the numbers come from)
 * '#' starts a comment.
 */
#ifndef PT_GPU_H
#define PT_GPU_H

#include <stdio.h>

#include "cost.h"
#include "error.h"
#include "pagetable.h"
#include "tlb.h"

/* One point of a bookkeeping_loop line: a request or free of the loop at that size. */
typedef struct pt_gpu_loop_point {
  double bytes, us, ops, chunks, visits;
} pt_gpu_loop_point;

#define PT_GPU_LOOP_MAX 16

/* A mechanism's own-work lines. */
typedef struct pt_gpu_mech_cost {
  char mech[16];
  pt_cost_line line, call_line; /* call_line.n = 0: line serves requests that made calls too */
  pt_cost_line repeat_line, repeat_call_line; /* the repeat class's (n = 0: the plain lines serve it) */
  int has_work;                 /* a bookkeeping_work line: work prices its own work, not the lines */
  pt_cost_work work;
  pt_gpu_loop_point loop[PT_GPU_LOOP_MAX]; /* bookkeeping_loop's points */
  int nloop;
} pt_gpu_mech_cost;

typedef struct pt_gpu {
  char name[64];
  char description[256];
  char source[512];
  char note[512];
  pt_gpu_mech_cost bookkeeping[8];
  int nbookkeeping;
  const pt_mmu_desc *mmu;
  uint64_t memory_bytes;
  double host_clock_read_us;    /* the host speed the costs hold at (0: not said) */
  pt_tlb_config tlb;
  pt_cost_model cost;
  pt_cost_points points[PT_DRV_NCALLS];
} pt_gpu;

/*
 * Load NAME, a bundled description (searched as datadir.h says: $PAGETUNE_GPU_DIR,
 * the program's build tree, the installed data; never the current directory), or
 * a path (a name with a '/' or ending in .gpu).  PT_ENOTFOUND names the search path.
 */
int pt_gpu_load(const char *name_or_path, pt_err *err, pt_gpu *out /* OUT */);
/* The same for a name only, refusing a path: for names read from a store, never opened as files. */
int pt_gpu_load_named(const char *name, pt_err *err, pt_gpu *out /* OUT */);
/* The description file of a name (searched as pt_gpu_load does) or a path, open for reading; NULL with err set. */
FILE *pt_gpu_open(const char *name, char *path /* OUT */, size_t n, pt_err *err);
/* A mechanism's own lines (bookkeeping_*, bookkeeping_work, bookkeeping_loop), or NULL when it has none. */
const pt_gpu_mech_cost *pt_gpu_mech_lines(const pt_gpu *g, const char *mech);
/* The bookkeeping line of a mechanism (µs per request or free by its size) for requests that made no driver
   call (with_calls 0) or some (1): the mechanism's own lines, else the default's; a call line where given,
   else the plain one. */
const pt_cost_line *pt_gpu_bookkeeping(const pt_gpu *g, const char *mech, int with_calls);
/* The repeat class's line of a mechanism (n = 0 when the description has none: the plain line serves). */
const pt_cost_line *pt_gpu_bookkeeping_repeat(const pt_gpu *g, const char *mech, int with_calls);
/* The cost model a mechanism is priced by: the description's calls, the mechanism's bookkeeping lines and its
   work line (has_work) where it has one. */
pt_cost_model pt_gpu_cost_of(const pt_gpu *g, const char *mech);
/* Names of the bundled descriptions, space-separated, into buf; PT_ENOTFOUND when there is none. */
int pt_gpu_list(char *buf, size_t n);

#endif
