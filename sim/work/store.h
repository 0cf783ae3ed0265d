/*
 * store.h — every result kept in one SQLite database (`--db`, default
 * pagetune.db): traces, policies, runs, their results and timelines, GPU
 * calibrations and measurements.  docs/store.md documents the schema for
 * users of the sqlite3 shell.
 *
 * This is the only module that includes sqlite3.h; callers see an opaque
 * handle.  Results go in as pt_sim_result and come out the same way: the
 * columns of the results table, the INSERT and the row reader are generated
 * from PT_SIM_STATS_FIELDS and PT_DRIVER_CALLS (and the traces table from
 * PT_TRACE_STATS_FIELDS), so a new stats field needs no change here.  A
 * database written by an older build gets the new column added when it is
 * next opened read-write (NULL in the rows stored before; read back as 0,
 * or NaN for a double).
 *
 * Every function returns 0 or a negative PT_E* code with one line in err,
 * "DBPATH: reason".  PT_EIO: the file or its directory cannot be read or
 * written, the disk is full, a lock was held past the 5 s busy timeout;
 * PT_EFORMAT: not a pagetune database (corrupt, another program's), or one
 * from a newer pagetune; PT_ELIMIT: a string too long for pt_store_run's
 * fields; PT_EUSAGE: a write on a read-only handle, commit without begin, a
 * trace_id, policy_id or run_id that is not stored.  A failed write rolls
 * back what it had written, so the database never holds half a run.
 *
 * A handle belongs to one thread at a time.  Several processes may open the
 * same database: the journal is WAL, so readers query while a writer writes.
 */
#ifndef PT_STORE_H
#define PT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "confirm.h"
#include "error.h"
#include "sim.h"
#include "tracestats.h"

/*
 * The versioning rule (docs/store.md, "Versions and migrations"; the trace
 * format follows the same one, traces/FORMAT.md).  PRAGMA user_version is
 * the schema version.  This build opens every version from 0 (empty) up to
 * PT_STORE_SCHEMA_VERSION, migrating an older one read-write by one step a
 * version (store.c, pt_store_migrations), and refuses a newer one untouched:
 * "DB: written by a newer pagetune (schema version N > M); upgrade pagetune".
 * Additions an older build can ignore keep the version: a new statistics
 * column (added when opened, NULL in older rows).  Anything else (a table,
 * a key, a column's meaning) is a new version with its step.  A run's key
 * keeps its meaning across versions: params_json is written canonically
 * (docs/store.md, "params_json"), pinned by tests/formats.sh.
 *
 * Version 2 added the tables of `pagetune confirm` (confirmations,
 * confirm_runs).  A read-only open reads a database from
 * PT_STORE_READ_VERSION on as it is, without migrating it: the steps since
 * only added tables, and a read of a table the file lacks finds nothing.
 */
#define PT_STORE_SCHEMA_VERSION 4       /* PRAGMA user_version this build writes */
#define PT_STORE_READ_VERSION 1         /* the oldest version a read-only open reads as it is */
#define PT_STORE_APPLICATION_ID 1347699778 /* PRAGMA application_id: 0x50544442, "PTDB" */

typedef struct pt_store pt_store;

#define PT_STORE_READONLY 1  /* open for queries only: no create, no migration */

/*
 * Open (creating and migrating unless PT_STORE_READONLY) the database at path.
 * Refuses, untouched: a file that is not a SQLite database or holds another
 * program's tables, and a schema newer than PT_STORE_SCHEMA_VERSION; read-only,
 * also an empty file and one older than PT_STORE_READ_VERSION or lacking a
 * statistics column (asking for one read-write open to migrate it).
 * Journal WAL, synchronous FULL, busy timeout 5 s, foreign keys on.
 */
int pt_store_open(const char *path, int flags, pt_err *err, pt_store **out /* OUT */);
/* The path the handle was opened with (for messages). */
const char *pt_store_path(const pt_store *s);
/* Finalize every statement and close; an open batch is rolled back.  NULL is fine. */
void pt_store_close(pt_store *s);

/*
 * Idempotent by content_hash (at most 64 characters, e.g. hex SHA-256 of the
 * trace file): the second put of a hash returns the first id and keeps the
 * first name.  st may be NULL (stats columns left NULL).  name < 256 bytes.
 */
int pt_store_put_trace(pt_store *s, const char *name, const char *source, const char *content_hash,
                       const pt_trace_stats *st, pt_err *err, int64_t *id /* OUT */);

/*
 * Idempotent by the SHA-256 of the text (text_hash, hex): the same script
 * under another name returns the first id.  name < 128 bytes, mechanism < 32.
 */
int pt_store_put_policy(pt_store *s, const char *name, const char *mechanism, const char *text,
                        size_t len, pt_err *err, int64_t *id /* OUT */);

/*
 * What makes a run the same run.  NULL strings are stored as "{}" (params_json)
 * and "" (gpu, engine_version).  params_json is compared as text, so the caller
 * writes it canonically (keys sorted, numbers formatted one way); < 1024 bytes.
 * gpu < 64 bytes, engine_version < 32.
 */
typedef struct pt_store_run_key {
  int64_t trace_id, policy_id;
  const char *params_json;
  uint64_t capacity;          /* bytes; 0 = no cap */
  const char *gpu;            /* GPU description name; "" = none */
  const char *engine_version;
} pt_store_run_key;

/* *run_id = the stored run with this key, 0 when there is none. */
int pt_store_find_run(pt_store *s, const pt_store_run_key *k, pt_err *err, int64_t *run_id /* OUT */);

/*
 * Store a run, its results and its timeline in one transaction (a savepoint
 * inside a batch).  A run with the same key already stored is left as it is
 * and its id returned.  git_revision may be NULL ("", < 64 bytes).
 * predicted_alloc_us is stored NULL unless r->has_gpu, predicted_translation_us
 * NULL unless r->has_tlb.
 */
int pt_store_put_run(pt_store *s, const pt_store_run_key *k, const char *git_revision,
                     const pt_sim_result *r, pt_err *err, int64_t *run_id /* OUT */);

/*
 * Optional outer batch for sweeps: BEGIN IMMEDIATE ... COMMIT (fewer fsyncs,
 * but a kill loses the whole open batch).  Puts inside it use savepoints, so
 * one failed put does not undo the others — except a full disk or an I/O
 * error, after which SQLite may have rolled the whole batch back (the message
 * then says so, and the batch is over).  A failed commit rolls the batch back.
 */
int pt_store_begin(pt_store *s, pt_err *err);
int pt_store_commit(pt_store *s, pt_err *err);
int pt_store_rollback(pt_store *s, pt_err *err);

/* One stored run, as pt_store_runs returns it.  Strings are NUL-terminated. */
typedef struct pt_store_run {
  int64_t id, trace_id, policy_id;
  char trace[256], trace_hash[65], policy[128], mechanism[32], params_json[1024], gpu[64];
  char engine_version[32], git_revision[64], created_at[32];
  uint64_t capacity;
  /*
   * Scalar stats, driver_calls/driver_bytes, addresses_followed, seconds,
   * predicted_alloc_us (has_gpu) and predicted_translation_us (has_tlb).
   * Not stored: timeline (pt_store_timeline), page_table, tlb, mmu, gpu_note.
   */
  pt_sim_result r;
} pt_store_run;

/*
 * Runs ordered by id.  trace: a trace name or a prefix (4 characters or more)
 * of its content hash; policy: a policy name or a prefix of its text hash;
 * NULL matches all.  *rows is NULL when *n is 0; the caller frees it with free().
 */
int pt_store_runs(pt_store *s, const char *trace, const char *policy, pt_err *err,
                  pt_store_run **rows /* OUT */, size_t *n /* OUT */);

/* The text of stored policy policy_id (a run's policy_id), NUL-terminated, *len its bytes; PT_ENOTFOUND for no
   such policy.  Free *text with free(). */
int pt_store_policy_text(pt_store *s, int64_t policy_id, pt_err *err, char **text /* OUT */, size_t *len /* OUT */);

/* A stored trace, as pt_store_traces returns it (source cut to fit). */
typedef struct pt_store_trace {
  int64_t id;
  char name[256], hash[65], source[1024];
} pt_store_trace;

/* The stored traces ref names (a name, or a prefix of 4 characters or more of the content hash), by id; free *rows. */
int pt_store_traces(pt_store *s, const char *ref, pt_err *err, pt_store_trace **rows /* OUT */, size_t *n /* OUT */);

/* Where trace trace_id was read from when first stored (traces.source: a path as given then) into buf; PT_ENOTFOUND
   for no such trace, PT_ELIMIT when it does not fit. */
int pt_store_trace_source(pt_store *s, int64_t trace_id, pt_err *err, char *buf, size_t n);

/* A trace's allocator settings at capture (schema 4; '' when unknown, and on an older file read as it is):
   set once, the first non-empty value kept; read into buf (cut to n - 1 bytes). */
int pt_store_set_trace_settings(pt_store *s, int64_t trace_id, const char *settings, pt_err *err);
int pt_store_trace_settings(pt_store *s, int64_t trace_id, pt_err *err, char *buf, size_t n);

/* A run's timeline in order; PT_ENOTFOUND for no such run.  Free *pts with free(). */
int pt_store_timeline(pt_store *s, int64_t run_id, pt_err *err, pt_sim_point **pts /* OUT */,
                      size_t *n /* OUT */);

/* One calibration point: a driver call (PT_DRIVER_CALLS name) of `bytes` took `us` on gpu. */
int pt_store_put_calibration(pt_store *s, const char *gpu, const char *call, uint64_t bytes, double us,
                             const char *source, pt_err *err, int64_t *id /* OUT */);

/*
 * What `pagetune confirm` measured (confirm.h): two stored runs of one trace
 * compared on the user's workload.  Strings: allocator and time_metric < 16
 * bytes, hostname < 256, gpu_name < 128, engine_version < 32, git_revision
 * < 64 (NULL: ""); command and the two env texts are JSON and have no limit.
 */
typedef struct pt_store_confirm {
  int64_t baseline_run, tuned_run;
  const char *command;                        /* the argv, a JSON array of strings */
  int runs_per_arm;
  const char *baseline_allocator, *tuned_allocator; /* what ran each arm: "pytorch" or "pagetune" */
  const char *baseline_env, *tuned_env;       /* the allocator variables each arm set, a JSON object */
  const char *time_metric;                    /* "median_step_s" or "wall_s" */
  pt_confirm_gain time, peak;
  unsigned long resamples;
  uint64_t seed;
  const char *hostname, *gpu_name, *engine_version, *git_revision;
  const char *started_at;                     /* UTC, ISO 8601 */
} pt_store_confirm;

/*
 * Store a confirmation and its runs (runs[0..n), each of c's baseline or
 * tuned run) in one transaction (a savepoint inside a batch): all of it or
 * none.  PT_EUSAGE when the two runs are not stored runs of one trace.
 */
int pt_store_put_confirmation(pt_store *s, const pt_store_confirm *c, const pt_confirm_run *runs, size_t n,
                              pt_err *err, int64_t *id /* OUT */);

/* A stored confirmation as the report reads it, with the predictions of its two runs. */
typedef struct pt_store_confirmation {
  int64_t id, trace_id, baseline_run, tuned_run;
  char trace[256], baseline_policy[128], tuned_policy[128], baseline_mechanism[32], tuned_mechanism[32];
  char baseline_allocator[16], tuned_allocator[16], time_metric[16];
  char hostname[256], gpu_name[128], started_at[32], measured_at[32];
  char command[1024];          /* the argv's JSON, cut to fit ("..." at the end) */
  int runs_per_arm;
  unsigned long resamples;
  uint64_t seed;
  pt_confirm_gain time, peak;
  double baseline_predicted_us, tuned_predicted_us; /* the runs' predicted_alloc_us; NAN without a GPU description */
  uint64_t baseline_predicted_peak, tuned_predicted_peak;
} pt_store_confirmation;

/*
 * Confirmations ordered by id; trace as for pt_store_runs (NULL: all).  A
 * database of version 1, read as it is, has none.  Free *rows with free().
 */
int pt_store_confirmations(pt_store *s, const char *trace, pt_err *err, pt_store_confirmation **rows /* OUT */,
                           size_t *n /* OUT */);

/* One measurement on a real GPU, of a stored run (run_id 0: of none). */
int pt_store_put_measurement(pt_store *s, int64_t run_id, const char *kind, double value,
                             const char *unit, const char *machine, const char *notes, pt_err *err,
                             int64_t *id /* OUT */);

#endif
