/*
 * mech.h — how allocator mechanisms plug into the simulator.
 *
 * A mechanism (direct, caching, expandable, async_pool, stitch) is a table of
 * functions over its own state (Dinero's replacementf / ChampSim's
 * replacement hooks).  It asks a device (device.h: the model, the real
 * driver, a test double) for memory through the books every device sits
 * under, keeps the handles it is given, and undoes its partial work when a
 * call fails; it reads its parameters from pt_params and may
 * consult the policy through pt_policy_hooks.  Neither table knows Lua,
 * SQLite or CUDA: the Lua adapter (policy.c) is one implementation of the
 * hooks, tests use plain C ones.
 */
#ifndef PT_MECH_H
#define PT_MECH_H

#include <stdint.h>

#include "device.h"
#include "error.h"

/* ---- parameters: name -> value, as the policy (or --set) gave them ------- */

#define PT_MAX_PARAMS 32
#define PT_PARAM_NAME_MAX 48

/*
 * A value is a number or a list.  The one list-valued knob is PyTorch's
 * roundup_power2_divisions in its list form: a value per power-of-two size
 * interval, PT_PARAM_LIST_MAX of them (entry 0: below 2 MiB; entry i, 1..14:
 * [2^i, 2^(i+1)) MiB; entry 15: from 32 GiB), the table PyTorch's parser
 * builds (c10 AllocatorConfig).  A list is kept as that table, whatever text
 * it came from, so two spellings of one table are one value; a table whose
 * entries are all equal is that number (what PyTorch's integer form means),
 * so the number stays the canonical spelling.  A list's number is NaN.
 */
#define PT_PARAM_LIST_MAX 16
typedef struct pt_plist {
  int n;                          /* 0: the value is a number */
  double v[PT_PARAM_LIST_MAX];
} pt_plist;

typedef struct pt_params {
  int n;
  struct {
    char name[PT_PARAM_NAME_MAX];
    double value;                 /* NaN when list.n > 0 */
    pt_plist list;
  } v[PT_MAX_PARAMS];
} pt_params;

/* Value of name, or dflt when absent (NaN when it is a list). */
double pt_params_get(const pt_params *p, const char *name, double dflt);
/* Set (add or overwrite) a number; PT_ELIMIT when full. */
int pt_params_set(pt_params *p, const char *name, double value);
/* Set a list (a list of equal entries is set as that number); PT_ELIMIT when full or longer than PT_PARAM_LIST_MAX. */
int pt_params_set_list(pt_params *p, const char *name, const pt_plist *list);
/* The list name holds, or NULL when it is absent or a number. */
const pt_plist *pt_params_get_list(const pt_params *p, const char *name);
/* Whether two parameter sets hold the same names and values, in the same order. */
int pt_params_equal(const pt_params *a, const pt_params *b);

/*
 * A value's text: a number (decimal, inf) or PyTorch's list form
 * [BOUNDARY:V,...,>:V] (BOUNDARY a power of two in MiB), read as 2.11 reads
 * it: the first entry also fills every interval below its own, '>' fills
 * those after the last boundary given, intervals between two boundaries stay
 * 0, V must be 0 or a power of two; a list whose intervals are all alike
 * comes back as that number.  0 with *num or *list (list->n 0 for a
 * number), or PT_EFORMAT with why (n bytes) saying what is wrong.
 */
int pt_param_value_parse(const char *text, double *num /* OUT */, pt_plist *list /* OUT */, char *why, size_t n);
/* A list as PyTorch's list form, the shortest that builds the same table: "[256:1,512:2,1024:4,>:8]". */
const char *pt_param_list_format(const pt_plist *list, char *buf, size_t n);
/* p's i-th value as text pt_param_value_parse reads back exactly: the shortest such decimal, inf, or the list form. */
const char *pt_params_value_text(const pt_params *p, int i, char *buf, size_t n);

/* ---- policy hooks: optional decisions the mechanism delegates ------------- */

/*
 * Each hook may be NULL (the mechanism's own rule applies).  A hook returns
 * 0 with *out set, or a negative PT_E* with err filled (e.g. a Lua error
 * naming the script and line); the simulation then stops with that error.
 */
typedef struct pt_policy_hooks {
  void *ctx;
  /* bytes a request is rounded to (caching: replaces round_size) */
  int (*round)(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err);
  /* bytes of a new segment for a (rounded) request */
  int (*segment_size)(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err);
  /* page size for a mapping of bytes (model only; see docs/design.md) */
  int (*page_size)(void *ctx, uint64_t bytes, uint64_t *out, pt_err *err);
  /* whether to collect cached memory now, given reserved and allocated bytes */
  int (*should_collect)(void *ctx, uint64_t reserved, uint64_t allocated, int *out, pt_err *err);
} pt_policy_hooks;

/* ---- the mechanism table ------------------------------------------------- */

/* What a mechanism did besides driver calls; the engine reports these. */
typedef struct pt_mech_counters {
  uint64_t alloc_retries;       /* requests that freed cached memory and retried */
  uint64_t collections;         /* garbage collections / pool trims run */
  uint64_t cache_hits;          /* requests served without a driver call */
  uint64_t unmap_ranges;        /* expandable: contiguous ranges unmapped, one a snapshot's segment_unmap */
  /* what a request did to the blocks (caching only; 0 elsewhere): cache hits that split the block found, and
     frees that merged with a free neighbour (each neighbour once) */
  uint64_t hit_splits, free_merges;
} pt_mech_counters;

/* What a mechanism is created with. */
typedef struct pt_mech_env {
  pt_device *dev;               /* the device's books: calls, reserved bytes, capacity */
  pt_mech_counters *counters;
  const pt_params *params;
  const pt_policy_hooks *hooks;
  const uint64_t *allocated;    /* live requested bytes, kept by the caller: what should_collect is told */
  int *fault;                   /* a failure on a path that cannot return one, kept; it stops the run */
  pt_err *err;                  /* where hook errors and bad parameters are described */
  int trace_synced;             /* the trace says where the program synchronised with the GPU (+sync, @syncs) */
} pt_mech_env;

/* What values a parameter takes besides its range. */
enum pt_param_kind {
  PT_PARAM_REAL,    /* any number in range (infinity where max is) */
  PT_PARAM_WHOLE,   /* a whole number */
  PT_PARAM_EVEN,    /* an even whole number */
  PT_PARAM_POW2,    /* 0 or a power of two */
  PT_PARAM_FLAG     /* 0 or 1 */
};

/* A known parameter: name, allowed range and kind, its default, what it does. */
typedef struct pt_mech_param {
  const char *name;
  double min, max;
  enum pt_param_kind kind;
  double dflt;
  const char *doc;
  int list;                     /* 1: a list (pt_plist) is also a value, each entry of this kind and range */
} pt_mech_param;

/* NULL when v is a value mp allows; else what it must be ("an even whole number from 12 to 4096"), in buf. */
const char *pt_mech_param_violation(const pt_mech_param *mp, double v, char *buf, size_t n);
/* The same for a list (or a number, when list is NULL or empty). */
const char *pt_mech_param_violation_list(const pt_mech_param *mp, double v, const pt_plist *list, char *buf, size_t n);
/*
 * The table a parameter of mp's kind stands for, PT_PARAM_LIST_MAX entries:
 * its list, or its number in every entry (the default where p lacks it).
 */
void pt_mech_param_table(const pt_mech_param *table, const char *name, const pt_params *p, double out[PT_PARAM_LIST_MAX]);
/* The value of the table's parameter name in p, or its default. */
double pt_mech_param_get(const pt_mech_param *table, const char *name, const pt_params *p);

#define PT_MECH_UNTIMED UINT64_MAX /* free_deferred: the trace did not time the free */

typedef struct pt_mech_ops {
  const char *name;
  const pt_mech_param *params;  /* terminated by a NULL name */
  /* called through pt_mech_create, which has checked env->params against params */
  int (*create)(const pt_mech_env *env, void **state /* OUT */);
  /* initial state, before any request: a segment, then blocks inside segments */
  int (*init_segment)(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, int expandable);
  int (*init_alloc)(void *state, uint64_t addr, uint64_t bytes, uint64_t stream, uint64_t *handle /* OUT */);
  /* a request of bytes on stream: 0 with a handle, PT_EOOM, or another error */
  int (*alloc)(void *state, uint64_t bytes, uint64_t stream, uint64_t *handle /* OUT */);
  int (*free)(void *state, uint64_t handle);
  /* NULL, or a free that waited for other streams' work (the trace's PT_EVF_DEFERRED: record_stream), where
     the mechanism treats one apart (async_pool: PyTorch frees it on a stream of its own); k as free_pending's,
     or PT_MECH_UNTIMED */
  int (*free_deferred)(void *state, uint64_t handle, uint64_t k);
  /* NULL, or a free the trace timed (+gpu K): K later requests come before the GPU passes it, the (K+1)-th
     sees it complete (K 0: at once); until then it is a free not seen complete, as the mechanism treats
     one (async_pool: as under free_lag) */
  int (*free_pending)(void *state, uint64_t handle, uint64_t k);
  /* NULL, or the program waited for the GPU (a stream or device synchronisation) before the next record:
     every free made so far has completed (async_pool: the driver sees them complete, a synchronisation point) */
  int (*synchronize)(void *state);
  /* NULL, or the stream order the program set up between streams, before the next record: event (the trace's
     number) recorded on stream (cudaEventRecord), and stream waiting for the work before an event's latest
     record (cudaStreamWaitEvent); a wait for an event never recorded orders nothing (async_pool: a free on
     one stream serves another once that stream waited for an event recorded after the free) */
  int (*event_record)(void *state, uint64_t event, uint64_t stream);
  int (*stream_wait)(void *state, uint64_t stream, uint64_t event);
  /*
   * Later requests, initial segments and initial blocks go to private pool `pool` (the trace's number,
   * 1..; 0: the default pool), as between PyTorch's beginAllocateToPool and endAllocateToPool: a private
   * pool's blocks never serve a request outside it, and are not released while the pool lives (until
   * release_pool; a trace does not say when a pool is released).  Frees go to their block's own pool.
   * NULL: the mechanism keeps one pool, and a pool's requests are served as any other.
   */
  int (*use_pool)(void *state, unsigned pool);
  /* private pool `pool` is released (PyTorch's releasePool, when its graph goes): the next empty_cache frees
     its whole segments too, until use_pool names it again.  NULL with use_pool NULL. */
  void (*release_pool)(void *state, unsigned pool);
  /* release cached memory, as torch.cuda.empty_cache() (NULL when meaningless) */
  int (*empty_cache)(void *state);
  void (*destroy)(void *state);
  /* device address of a live handle (for the access stream); NULL: unknown */
  uint64_t (*addr_of)(void *state, uint64_t handle);
  /* 1: memory freed on one stream is handed to requests on any stream at once (async_pool, as a
     driver pool whose frees have completed); 0: free blocks are kept per stream */
  int shares_streams;
  /* NULL or NULL-terminated: the parameters that describe the run modelled (the GPU's lag, where the trace
     began), not a setting of the allocator, so that export gives them to no allocator */
  const char *const *of_run;
} pt_mech_ops;

extern const pt_mech_ops pt_mech_direct, pt_mech_caching, pt_mech_expandable, pt_mech_async_pool,
    pt_mech_stitch;

/*
 * Into a free set, from a path that cannot return an error (a block split
 * deep inside an operation): when the set has no memory for it, the failure
 * is kept in *env->fault, which stops the run.
 */
struct pt_bset;
struct pt_bnode;
void pt_mech_set_insert(const pt_mech_env *env, struct pt_bset *s, struct pt_bnode *n);

/* ---- what every mechanism shares ------------------------------------------- */

#define PT_MIN_BLOCK UINT64_C(512) /* PyTorch's kMinBlockSize: requests are rounded to it */

/* bytes rounded up to 512 B, at least 512; 0 when that overflows. */
static inline uint64_t pt_mech_round512(uint64_t bytes) {
  if (bytes > UINT64_MAX - PT_MIN_BLOCK) return 0;
  return bytes < PT_MIN_BLOCK ? PT_MIN_BLOCK : (bytes + PT_MIN_BLOCK - 1) / PT_MIN_BLOCK * PT_MIN_BLOCK;
}

/*
 * PyTorch's CUDAAllocatorConfig knobs that the native allocator reads with
 * and without expandable segments (docs/pytorch-caching-allocator.md): one
 * declaration, one reading, one rounding, one oversize rule for caching and
 * expandable alike.
 */
#define PT_MECH_UNLIMITED UINT64_MAX
#define PT_MECH_ALLOC_CONF_PARAMS                                                                                  \
  {"max_split_size_mb", 20, INFINITY, PT_PARAM_REAL, INFINITY,                                                     \
   "blocks this large (MiB) are never split; inf = unlimited (PyTorch's default)", 0},                             \
      {"max_non_split_rounding_mb", 0, INFINITY, PT_PARAM_REAL, 20,                                                \
       "an unsplittable request may take a cached block up to this much (MiB) larger (default 20)", 0},            \
      {"garbage_collection_threshold", 0, 1, PT_PARAM_REAL, 0,                                                     \
       "under a cap, reclaim cached blocks once reserved exceeds this fraction of it (0 = off)", 0},               \
      {"roundup_power2_divisions", 0, 1 << 20, PT_PARAM_POW2, 0,                                                   \
       "round sizes up to one of N divisions of their power-of-two interval (0 = off; a power of two), "         \
       "or a list [BOUNDARY_MIB:N,...,>:N] of N per interval", 1}
typedef struct pt_mech_alloc_conf {
  uint64_t max_split;              /* bytes; PT_MECH_UNLIMITED when off */
  uint64_t max_non_split_rounding; /* bytes */
  double gc_threshold;             /* fraction of the cap; 0 = off */
  unsigned rp2[PT_PARAM_LIST_MAX]; /* roundup_power2_divisions per interval; 0/1 = off */
} pt_mech_alloc_conf;
/* The knobs from p (checked by pt_mech_create against table, which holds PT_MECH_ALLOC_CONF_PARAMS). */
void pt_mech_alloc_conf_read(const pt_mech_param *table, const pt_params *p, pt_mech_alloc_conf *out /* OUT */);
/* roundup_power2_next_division: size up to the next of `divisions` equal steps of its power-of-two interval. */
static inline uint64_t pt_mech_next_division(uint64_t size, unsigned divisions) {
  if ((size & (size - 1)) == 0) return size;
  uint64_t floor2 = UINT64_C(1) << (63 - __builtin_clzll(size));
  uint64_t step = floor2 >> (31 - __builtin_clz(divisions));
  if (step == 0) return floor2 << 1;
  uint64_t down = size & ~(step - 1);
  return down == size ? size : down + step;
}
/* round_size: at least 512, a division of its power-of-two interval where rp2 says, else 512-byte multiples;
   0 when that overflows.  (Inline: every request of caching and expandable goes through it.) */
static inline uint64_t pt_mech_round_size(const pt_mech_alloc_conf *k, uint64_t size) {
  if (size < PT_MIN_BLOCK) return PT_MIN_BLOCK;
  int lg = 63 - __builtin_clzll(size), idx = lg > 20 ? lg - 20 : 0; /* intervals from 1 MiB; entry 0 holds all below */
  unsigned div = k->rp2[idx < PT_PARAM_LIST_MAX ? idx : PT_PARAM_LIST_MAX - 1];
  if (div > 1 && size > PT_MIN_BLOCK * div) return pt_mech_next_division(size, div);
  return pt_mech_round512(size);
}
/* get_free_block's oversize rule: 1 when a free block of block bytes may not serve a rounded request of size. */
static inline int pt_mech_oversize_refused(const pt_mech_alloc_conf *k, uint64_t size, uint64_t block) {
  if (size < k->max_split) return block >= k->max_split;
  return block >= size + k->max_non_split_rounding;
}

/* A request's size: the policy's round hook (checked: at least the request, not 0), else 512 B rounding.
   who names the mechanism in errors.  (The hook's path and the errors are out of line.) */
int pt_mech_round_slow(const pt_mech_env *env, const char *who, uint64_t bytes, uint64_t *size /* OUT */);
static inline int pt_mech_round(const pt_mech_env *env, const char *who, uint64_t bytes, uint64_t *size /* OUT */) {
  if ((env->hooks && env->hooks->round) || !(*size = pt_mech_round512(bytes))) return pt_mech_round_slow(env, who, bytes, size);
  return 0;
}
/* A hook's size result checked: less than its argument, or more than 2^50 bytes (a trace's own limit on a
   size: past it a segment's bytes wrap the books' counters), is an error naming who and the hook. */
#define PT_MECH_MAX_HOOK_BYTES (UINT64_C(1) << 50)
int pt_mech_check_hook_size(const pt_mech_env *env, const char *who, const char *hook, uint64_t in, uint64_t out);
/* The policy's should_collect, told reserved (the books) and allocated (the caller's); 0 without a hook. */
int pt_mech_should_collect(const pt_mech_env *env, int *yes /* OUT */);

/*
 * A mechanism made after every parameter it declares (m->params) is checked
 * against its table: the one check every caller (the engine, the tests, the
 * allocator library) gets.  Names the table does not know are the policy's
 * own and pass.  PT_EUSAGE: "MECH: NAME must be WHAT, not V".
 */
int pt_mech_check_params(const pt_mech_ops *m, const pt_params *p, pt_err *err);
int pt_mech_create(const pt_mech_ops *m, const pt_mech_env *env, void **state /* OUT */);

/* Look a mechanism up by name; NULL when unknown. */
const pt_mech_ops *pt_mech_find(const char *name);
/* "direct, caching, expandable, async_pool, stitch" */
const char *pt_mech_names(void);

#endif
