/*
 * workbench.h — what the commands that keep results (sweep, tune, best,
 * report, export, replay --db) share: a run's key in the store, finding
 * bundled policies and GPU descriptions, loading traces and policies into
 * the store, and the best stored run by an objective.
 */
#ifndef PT_CLI_WORKBENCH_H
#define PT_CLI_WORKBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"
#include "export.h"
#include "gpu.h"
#include "json.h"
#include "paramjson.h"
#include "policy.h"
#include "report.h"
#include "sim.h"
#include "sizetable.h"
#include "store.h"
#include "trace.h"
#include "opts.h"
#include "values.h"

/* Part of every stored run's key: a sweep resumed by a newer model recomputes
   instead of reusing old rows.  model-2: driver costs through calibration
   points by size class, and the H200's measured points (cost.h).  model-3:
   the allocator's own work measured per mechanism, by request size and
   whether a request made driver calls, and the H200's costs fitted from
   real-mechanism replays (docs/design.md, The cost model).  model-4: the
   driver calls no request makes (the initial state, the try of a request
   that failed in the real run, a capture's empty_cache) left out of the
   predicted allocator time, as a replay on the GPU leaves them untimed.
   model-5: the bundled h200 description prices every mechanism's own work
   but direct's by what it did (bookkeeping_work lines: its requests and frees,
   free-set operations, chunks, visits), in place of its bookkeeping lines.
   model-6: the calls below 1 MiB within 8 calls of a larger one priced apart
   (cost_after_large), and the bundled h200's every cost line refitted from
   bench/replay/mechanism8 at one host speed, repeat lines and after lines too.
   model-7: the bundled h200's bookkeeping_work lines fitted again with each
   replay's own work as its requests measured it (gpu fit --work). */
#define PT_WB_ENGINE_VERSION "pagetune-" PACKAGE_VERSION "/model-7"
#define PT_WB_DEFAULT_DB "pagetune.db"

/* What the workbench commands' options set (each command takes some of them). */
typedef struct pt_wb_args {
  const char *db, *gpu, *html, *format, *merge, *context;
  const char *traces[64], *policies[64];
  int ntraces, npolicies, json;
  pt_grid grid;
  uint64_t capacity;
  pt_objective objective;
  unsigned long budget, seed, run;
  int timeline;             /* --timeline (pt_wb_timeline); PT_WB_TL_DEFAULT: the command's own */
  unsigned long jobs;       /* -j N: worker processes (1: none, the command simulates itself) */
  int broadcast_traces;     /* --broadcast-traces (under MPI) */
  int objective_given;      /* --objective was given (not the default): it and --run do not go together */
} pt_wb_args;

/*
 * How much of a run's timeline is stored: full (about 1000 points, what the
 * report plots), thin (PT_WB_THIN_POINTS: each the maxima of its stretch of
 * events, so peaks survive), none.  Sweeps store thin by default, tune full.
 * Not part of a run's key: a run stored thin is not simulated again for full.
 */
typedef enum pt_wb_timeline { PT_WB_TL_DEFAULT, PT_WB_TL_FULL, PT_WB_TL_THIN, PT_WB_TL_NONE } pt_wb_timeline;
#define PT_WB_THIN_POINTS 50
int pt_wb_opt_timeline(const char *arg, void *field);

/* Before parsing: pagetune.db, objective time, budget 60, seed 1. */
#define PT_WB_DEFAULTS {.db = PT_WB_DEFAULT_DB, .objective = {.text = "time", .kind = PT_OBJ_TIME}, .budget = 60, .seed = 1, .jobs = 1}
extern const pt_wb_args pt_wb_defaults;

/* The options more than one workbench command takes. */
#define PT_WB_OPT_DB PT_CLI_OPT_STR("db", 0, "DB", pt_wb_args, db, "the SQLite database (default pagetune.db)")
#define PT_WB_OPT_TRACE(h) PT_CLI_OPT_LIST("trace", "T", pt_wb_args, traces, ntraces, h)
#define PT_WB_OPT_POLICY(h) PT_CLI_OPT_LIST("policy", "P", pt_wb_args, policies, npolicies, h)
#define PT_WB_OPT_CAPACITY                                                                                \
  PT_CLI_OPT_PARSE("capacity", "BYTES", pt_wb_args, capacity, pt_cli_opt_capacity, NULL,                \
                   "cap on reserved bytes (set_per_process_memory_fraction;\n"                \
                   "suffixes K, M, G, T)")
#define PT_WB_OPT_GPU(h) PT_CLI_OPT_STR("gpu", 0, "NAME", pt_wb_args, gpu, h)
/*
 * The one rule for --gpu, said in every command's help: NAME is a bundled
 * description (h200, a100) or a .gpu file; "none" is no GPU model, so no
 * predicted times: what needs one (the time and weighted objectives, replay)
 * says so and names the runs that lack one.  A time never predicted prints as
 * "-" (text) and null (JSON).
 */
#define PT_WB_GPU_RULE "h200, a100, a .gpu file, or none: no GPU model, no predicted times"

#define PT_WB_OPT_OBJECTIVE(h)                                                                            \
  {.name = "objective", .value = "O", .help = h "\n" PT_OBJ_WEIGHTED_HELP, .kind = PT_CLI_PARSE,            \
   PT_CLI_F_(pt_wb_args, objective), .parse = pt_cli_opt_objective,                                       \
   .suffix = " (time, memory or weighted:W with W in [0,1])", .seen = offsetof(pt_wb_args, objective_given) + 1}
#define PT_WB_OPT_JSON(h) PT_CLI_OPT_FLAG("json", pt_wb_args, json, h)
#define PT_WB_OPT_TIMELINE(h)                                                                             \
  PT_CLI_OPT_PARSE("timeline", "full|thin|none", pt_wb_args, timeline, pt_wb_opt_timeline,              \
                   " (full, thin or none)", "how much of each run's timeline to store: full (~1000 points),\n" \
                   "thin (50, peaks kept) or none; " h)
#define PT_WB_OPT_JOBS(h)                                                                                 \
  {.name = "jobs", .short_name = 'j', .value = "N", .help = h, .kind = PT_CLI_ULONG,                  \
   PT_CLI_F_(pt_wb_args, jobs), .min = 1, .max = 1024, .suffix = " (1..1024)"}
#define PT_WB_OPT_BROADCAST                                                                               \
  PT_CLI_OPT_FLAG("broadcast-traces", pt_wb_args, broadcast_traces,                                     \
                  "under MPI (pagetune-mpi), rank 0 reads the traces and sends them to\n"                 \
                  "the other ranks (nodes without a shared file system); otherwise every\n"            \
                  "rank reads them from the paths given")

/*
 * The file of the policy arg names, into buf: arg itself when it is a path (has
 * a '/' or ends in .lua), else the bundled policy of that name (datadir.h:
 * $PAGETUNE_POLICY_DIR, the program's build tree, the installed data; never the
 * current directory).  PT_ENOTFOUND names the search path.
 */
int pt_wb_policy_file(const char *arg, char *buf, size_t n, pt_err *err);

/* The last component of a path. */
const char *pt_wb_base_name(const char *path);

/* The simulation of pol's current parameters, with capacity and gpu (NULL: none). */
void pt_wb_config(pt_policy *pol, uint64_t capacity, const pt_gpu *gpu, pt_sim_config *out /* OUT */);

/* The GPU description --gpu names ("none": none, *out NULL); h200 when name is NULL. */
int pt_wb_gpu(const char *name, pt_gpu *g, const pt_gpu **out /* OUT */, pt_err *err);
/* Does o need a predicted time (time, weighted)? */
int pt_wb_needs_time(const pt_objective *o);
/*
 * Why no run of trace could be chosen by o among its stored runs rows: how
 * many ran out of memory, how many have no predicted time (and that o needs
 * one: a GPU description), into err; returns PT_ENOTFOUND.
 */
int pt_wb_no_run(const char *db, const char *trace, const pt_objective *o, const pt_store_run *rows, size_t n,
                 pt_err *err);

/* A trace loaded for the workbench, and its row in the store. */
typedef struct pt_wb_trace {
  pt_trace_data t;
  char hash[65];
  int64_t id;
} pt_wb_trace;

/* A loaded trace's row in the store (found or added), with its statistics and content hash. */
int pt_wb_put_trace(pt_store *db, const char *path, const pt_trace_data *data, pt_err *err, char hash[65],
                    int64_t *id /* OUT */);
/* Load path and put it in the store; free out->t after. */
int pt_wb_load_trace(pt_store *db, const char *path, pt_err *err, pt_wb_trace *out /* OUT */);
/* A loaded policy's row in the store (found or added). */
int pt_wb_put_policy(pt_store *db, const pt_policy *pol, pt_err *err, int64_t *id /* OUT */);
/* Load the policy arg names and put it in the store (db NULL: not, and id untouched); *pol is NULL on failure. */
int pt_wb_load_policy(pt_store *db, const char *arg, pt_err *err, pt_policy **pol /* OUT */, int64_t *id /* OUT */);

/* What a stored run is keyed by; pj (PT_PARAMS_JSON_MAX bytes) holds the parameters' text the key points to. */
void pt_wb_key(int64_t trace_id, int64_t policy_id, const pt_sim_config *cfg, char *pj, pt_store_run_key *out /* OUT */);

typedef struct pt_wb_env {
  pt_store *db;
  const pt_gpu *gpu;
  uint64_t capacity;
  int timeline;             /* pt_wb_timeline: FULL (also DEFAULT), THIN or NONE */
} pt_wb_env;

/* Simulate pol's current parameters on t as env says (capacity, GPU, timeline); free *res. */
int pt_wb_sim(const pt_wb_env *env, const pt_trace_data *t, pt_policy *pol, pt_err *err, pt_sim_result *res /* OUT */);

/*
 * Run the policy's current parameters on the trace and store the run unless
 * it is stored already (*stored: 1 when this call stored it).  With reuse, a
 * run already stored is not simulated again (*res zeroed); otherwise *res
 * always holds the result.  Free *res with pt_sim_result_free.
 */
int pt_wb_run(const pt_wb_env *env, const pt_wb_trace *tr, pt_policy *pol, int64_t policy_id, int reuse, pt_err *err,
              int64_t *run_id /* OUT */, int *stored /* OUT */, pt_sim_result *res /* OUT */);

/*
 * Among rows, the run of params_json at like's capacity and GPU, of like's
 * engine version first, then of this pagetune's (NULL: none): the stored run a
 * baseline (confirm's, check's) is compared from.
 */
const pt_store_run *pt_wb_find_like(const pt_store_run *rows, size_t n, const char *params_json, const pt_store_run *like);

/* A stored run as the report reads one. */
pt_report_run pt_wb_report_run(const pt_store_run *r);

/*
 * The content hash of the stored trace arg names, into hash: a trace file (a
 * regular file there, or any name with a '/'), by its content; else a stored
 * name or a content-hash prefix that matches exactly one stored trace.  An
 * ambiguous name is refused, listing the candidates (hash prefix and source).
 * 1: no stored trace has that name (hash untouched; the caller reports no run).
 */
int pt_wb_trace_ref(pt_store *db, const char *arg, pt_err *err, char hash[65] /* OUT */);

/* The stored runs of trace (*rows, free it) and the index of the best by o (*best -1: none). */
int pt_wb_best(pt_store *db, const char *trace, const pt_objective *o, pt_err *err, pt_store_run **rows /* OUT */,
               size_t *n /* OUT */, long *best /* OUT */);
/* The same among the runs of the npolicies policies named (names or text-hash prefixes; none: all). */
int pt_wb_best_of(pt_store *db, const char *trace, const char *const *policies, int npolicies, const pt_objective *o,
                  pt_err *err, pt_store_run **rows /* OUT */, size_t *n /* OUT */, long *best /* OUT */);

/*
 * A run's configuration as the export reads it (export, confirm): the
 * parameters, the policy's hooks resolved into tables for the library
 * (hooktab.h) or why not, and the pt_export_input pointing at them.  The
 * struct points into itself and at the run's or policy's strings: allocate
 * it (it is large), keep the run or policy alive, never copy it.
 */
typedef struct pt_wb_export {
  pt_export_input in;
  pt_params params;
  int has_hooks, resolved, page_size_dropped;
  pt_sizetab_set tables;
  char refused[PT_ERRMSG_MAX];
  char device[64]; /* the GPU description the device's size is taken from */
} pt_wb_export;

/*
 * Stored run r's export: the policy as the store keeps its text (the file may
 * have changed since; nothing is read from disk by a name the store holds) with
 * the run's parameters, for the device gpu names (the user's --gpu: a name or a
 * path; "none": the size left to the machine; NULL: the run's GPU, by name
 * only).  A policy text that no longer loads is taken to have no hooks.
 * PT_EFORMAT for unreadable parameters; PT_ENOTFOUND for no such gpu.
 */
int pt_wb_export_of_run(pt_store *db, const pt_store_run *r, const char *gpu, pt_wb_export *out /* OUT */, pt_err *err);
/*
 * The export of pol (its parameters set to params) at capacity on the GPU
 * description gpu, a stored name looked up among the bundled descriptions,
 * never a path ("" or NULL: the h200; not found: the size left to the
 * machine), for trace and run_id (shown; -1: none).
 */
int pt_wb_export_of_policy(pt_policy *pol, const pt_params *params, uint64_t capacity, const char *gpu, const char *trace,
                           int64_t run_id, pt_wb_export *out /* OUT */, pt_err *err);

/*
 * Where the allocator library and its Python files are, as the package lays
 * them out: the library named by PAGETUNE_ALLOC_LIB (as pagetune_alloc.py
 * reads it), else the running program's build tree (backend/.libs/), else
 * pkglibdir; the Python files beside the library, else in the build tree's
 * sources.  ctx's lib, alloc_py and site_py point into *lf (NULL: not found).
 */
typedef struct pt_wb_lib_files {
  char lib[4096], alloc_py[4096], site_py[4096];
} pt_wb_lib_files;
void pt_wb_find_lib_files(pt_wb_lib_files *lf, pt_export_context *ctx /* OUT: lib, alloc_py, site_py */);
/* Why a library was not found, for a message: where it was looked for. */
const char *pt_wb_lib_looked(const pt_export_context *ctx);

/*
 * One of pagetune's Python files (backend/python/NAME): beside the library
 * pt_wb_find_lib_files finds, in the running program's build tree or its
 * sources, or in pkglibdir; into buf, or NULL when none is readable.
 */
const char *pt_wb_find_python(const char *name, char *buf, size_t n);

#endif
