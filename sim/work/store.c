/*
 * store.c — the SQLite store (see store.h; the schema is documented for
 * users in docs/store.md).
 *
 * In order: the schema (migration steps and the per-field columns, both
 * generated from the stats X-macros), the statements (one table, each
 * prepared once with SQLITE_PREPARE_PERSISTENT, then bind / step / reset),
 * opening (every check that can refuse a file runs before the first write),
 * transactions, writes, reads, and SHA-256 for policy text hashes.
 *
 * Integers go in as SQLite's signed 64-bit INTEGER: a uint64_t is stored by
 * its bit pattern and read back the same, so the round trip is exact (values
 * of 2^63 and more would look negative in the sqlite3 shell; no byte count
 * gets there).  A double NaN is stored as NULL (SQLite does that) and read
 * back as NaN.  No user text is ever pasted into SQL: it is bound.
 */
#include "store.h"
#include "sha256.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#define PT_STR_(x) #x
#define PT_STR(x) PT_STR_(x)

#define PT_NOW "(strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
#define PT_SQL_U " INTEGER"     /* column type of a uint64_t stats field */
#define PT_SQL_D " REAL"        /* ... of a double */

/* ---- schema ------------------------------------------------------------ */

/* Column definitions, names and placeholders generated from the X-macros. */
#define PT_RES_DEF(t, f, h) ",\n  " #f PT_SQL_##t
#define PT_RES_CALL_DEF(n) ",\n  calls_" #n " INTEGER, bytes_" #n " INTEGER"
#define PT_RES_NAME(t, f, h) ", " #f
#define PT_RES_CALL_NAME(n) ", calls_" #n ", bytes_" #n
#define PT_RES_QM(t, f, h) ", ?"
#define PT_RES_CALL_QM(n) ", ?, ?"
#define PT_RES_SEL(t, f, h) ", s." #f
#define PT_RES_CALL_SEL(n) ", s.calls_" #n ", s.bytes_" #n
#define PT_RES_CALL_SUM(n) " + s.calls_" #n
#define PT_TR_DEF(f, h) ",\n  " #f " INTEGER"
#define PT_TR_NAME(f, h) ", " #f
#define PT_TR_QM(f, h) ", ?"

/* Columns of results after the stats and the driver calls (fixed). */
#define PT_RES_TAIL_DEF ",\n  predicted_alloc_us REAL, predicted_translation_us REAL,\n" \
                        "  addresses_followed INTEGER, sim_seconds REAL"
#define PT_RES_TAIL_NAME ", predicted_alloc_us, predicted_translation_us, addresses_followed, sim_seconds"

/*
 * Schema version 1.  Runs without a GPU description have predicted_alloc_us
 * NULL, so the time objective and the Pareto front leave them out.  Ties in
 * the best views go to the other objective, then to the older run.
 */
static const char pt_store_schema_v1[] =
  "PRAGMA application_id = " PT_STR(PT_STORE_APPLICATION_ID) ";\n"
  "CREATE TABLE traces (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  content_hash TEXT NOT NULL UNIQUE,\n"
  "  name TEXT NOT NULL,\n"
  "  source TEXT NOT NULL DEFAULT ''"
  PT_TRACE_STATS_FIELDS(PT_TR_DEF) ",\n"
  "  added_at TEXT NOT NULL DEFAULT " PT_NOW "\n"
  ");\n"
  "CREATE TABLE policies (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  text_hash TEXT NOT NULL UNIQUE,\n"
  "  name TEXT NOT NULL,\n"
  "  mechanism TEXT NOT NULL DEFAULT '',\n"
  "  text TEXT NOT NULL,\n"
  "  added_at TEXT NOT NULL DEFAULT " PT_NOW "\n"
  ");\n"
  "CREATE TABLE runs (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  trace_id INTEGER NOT NULL REFERENCES traces(id),\n"
  "  policy_id INTEGER NOT NULL REFERENCES policies(id),\n"
  "  params_json TEXT NOT NULL,\n"
  "  capacity INTEGER NOT NULL,\n"
  "  gpu TEXT NOT NULL,\n"
  "  engine_version TEXT NOT NULL,\n"
  "  git_revision TEXT NOT NULL DEFAULT '',\n"
  "  created_at TEXT NOT NULL DEFAULT " PT_NOW ",\n"
  "  UNIQUE (trace_id, policy_id, params_json, capacity, gpu, engine_version)\n"
  ");\n"
  "CREATE INDEX runs_policy ON runs(policy_id);\n"
  "CREATE TABLE results (\n"
  "  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE"
  PT_SIM_STATS_FIELDS(PT_RES_DEF) PT_DRIVER_CALLS(PT_RES_CALL_DEF) PT_RES_TAIL_DEF "\n"
  ");\n"
  "CREATE TABLE timelines (\n"
  "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
  "  seq INTEGER NOT NULL,\n"
  "  event INTEGER NOT NULL,\n"
  "  time_us INTEGER NOT NULL,\n"
  "  reserved_bytes INTEGER NOT NULL,\n"
  "  allocated_bytes INTEGER NOT NULL,\n"
  "  PRIMARY KEY (run_id, seq)\n"
  ") WITHOUT ROWID;\n"
  "CREATE TABLE calibrations (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  gpu TEXT NOT NULL,\n"
  "  call TEXT NOT NULL,\n"
  "  bytes INTEGER NOT NULL,\n"
  "  us REAL NOT NULL,\n"
  "  measured_at TEXT NOT NULL DEFAULT " PT_NOW ",\n"
  "  source TEXT NOT NULL DEFAULT ''\n"
  ");\n"
  "CREATE INDEX calibrations_gpu_call ON calibrations(gpu, call);\n"
  "CREATE TABLE measurements (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  run_id INTEGER REFERENCES runs(id) ON DELETE CASCADE,\n"
  "  kind TEXT NOT NULL,\n"
  "  value REAL NOT NULL,\n"
  "  unit TEXT NOT NULL DEFAULT '',\n"
  "  measured_at TEXT NOT NULL DEFAULT " PT_NOW ",\n"
  "  machine TEXT NOT NULL DEFAULT '',\n"
  "  notes TEXT NOT NULL DEFAULT ''\n"
  ");\n"
  "CREATE INDEX measurements_run ON measurements(run_id);\n"
  "CREATE VIEW run_summary AS\n"
  "  SELECT r.id AS run_id, t.name AS trace, t.content_hash AS trace_hash,\n"
  "    p.name AS policy, p.mechanism AS mechanism, r.params_json, r.capacity, r.gpu,\n"
  "    r.engine_version, r.git_revision, r.created_at,\n"
  "    s.peak_reserved_bytes, s.peak_allocated_bytes, s.fragmentation, s.segments_allocated,\n"
  "    s.cache_hits, s.ooms, (0" PT_DRIVER_CALLS(PT_RES_CALL_SUM) ") AS driver_calls,\n"
  "    s.predicted_alloc_us, s.predicted_translation_us, r.trace_id, r.policy_id\n"
  "  FROM runs r JOIN traces t ON t.id = r.trace_id JOIN policies p ON p.id = r.policy_id\n"
  "    JOIN results s ON s.run_id = r.id;\n"
  "CREATE VIEW best_per_trace AS\n"
  "  SELECT objective, trace_id, trace, run_id, policy, params_json, capacity, gpu,\n"
  "    peak_reserved_bytes, predicted_alloc_us\n"
  "  FROM (SELECT 'memory' AS objective, *, row_number() OVER (PARTITION BY trace_id\n"
  "          ORDER BY peak_reserved_bytes, predicted_alloc_us IS NULL, predicted_alloc_us, run_id) AS place\n"
  "        FROM run_summary\n"
  "        UNION ALL\n"
  "        SELECT 'time' AS objective, *, row_number() OVER (PARTITION BY trace_id\n"
  "          ORDER BY predicted_alloc_us, peak_reserved_bytes, run_id) AS place\n"
  "        FROM run_summary WHERE predicted_alloc_us IS NOT NULL)\n"
  "  WHERE place = 1;\n"
  "CREATE VIEW pareto AS\n"
  "  SELECT a.* FROM run_summary a\n"
  "  WHERE a.predicted_alloc_us IS NOT NULL AND NOT EXISTS (\n"
  "    SELECT 1 FROM runs rb JOIN results b ON b.run_id = rb.id\n"
  "    WHERE rb.trace_id = a.trace_id AND b.predicted_alloc_us IS NOT NULL\n"
  "      AND b.predicted_alloc_us <= a.predicted_alloc_us\n"
  "      AND b.peak_reserved_bytes <= a.peak_reserved_bytes\n"
  "      AND (b.predicted_alloc_us < a.predicted_alloc_us\n"
  "           OR b.peak_reserved_bytes < a.peak_reserved_bytes));\n";

/*
 * Schema version 2: what `pagetune confirm` measured (confirm.h).  A
 * confirmation is one run of confirm: the two stored runs it compared (the
 * baseline's and the tuned one's, of one trace), the command, how each arm
 * was set up, the gains with their intervals and verdicts; confirm_runs
 * holds each run of the workload, in the order run.  Gains and medians are
 * NULL where not measured (or, for predicted gains, not predicted).
 */
static const char pt_store_schema_v2[] =
  "CREATE TABLE confirmations (\n"
  "  id INTEGER PRIMARY KEY,\n"
  "  trace_id INTEGER NOT NULL REFERENCES traces(id),\n"
  "  baseline_run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
  "  tuned_run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
  "  command TEXT NOT NULL,\n"
  "  runs_per_arm INTEGER NOT NULL,\n"
  "  baseline_allocator TEXT NOT NULL,\n"
  "  tuned_allocator TEXT NOT NULL,\n"
  "  baseline_env TEXT NOT NULL,\n"
  "  tuned_env TEXT NOT NULL,\n"
  "  time_metric TEXT NOT NULL,\n"
  "  predicted_time_gain REAL, measured_time_gain REAL, time_gain_lo REAL, time_gain_hi REAL,\n"
  "  baseline_time_s REAL, tuned_time_s REAL,\n"
  "  time_verdict TEXT NOT NULL,\n"
  "  predicted_peak_gain REAL, measured_peak_gain REAL, peak_gain_lo REAL, peak_gain_hi REAL,\n"
  "  baseline_peak_bytes REAL, tuned_peak_bytes REAL,\n"
  "  peak_verdict TEXT NOT NULL,\n"
  "  resamples INTEGER NOT NULL,\n"
  "  seed INTEGER NOT NULL,\n"
  "  hostname TEXT NOT NULL DEFAULT '',\n"
  "  gpu_name TEXT NOT NULL DEFAULT '',\n"
  "  engine_version TEXT NOT NULL DEFAULT '',\n"
  "  git_revision TEXT NOT NULL DEFAULT '',\n"
  "  started_at TEXT NOT NULL,\n"
  "  measured_at TEXT NOT NULL DEFAULT " PT_NOW "\n"
  ");\n"
  "CREATE INDEX confirmations_trace ON confirmations(trace_id);\n"
  "CREATE TABLE confirm_runs (\n"
  "  confirmation_id INTEGER NOT NULL REFERENCES confirmations(id) ON DELETE CASCADE,\n"
  "  seq INTEGER NOT NULL,\n"
  "  arm TEXT NOT NULL CHECK (arm IN ('baseline', 'tuned')),\n"
  "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
  "  wall_s REAL NOT NULL,\n"
  "  steps INTEGER NOT NULL,\n"
  "  median_step_s REAL,\n"
  "  steps_s TEXT NOT NULL,\n"
  "  peak_reserved_bytes INTEGER,\n"
  "  allocator TEXT NOT NULL,\n"
  "  processes INTEGER NOT NULL,\n"
  "  PRIMARY KEY (confirmation_id, seq)\n"
  ") WITHOUT ROWID;\n";

/*
 * Schema version 3: best_per_trace and pareto leave out runs that ran out of
 * memory (ooms > 0).  Such a run's peak is what the model held before the
 * request it could not serve, so it looks small without being a setting
 * anyone can use; best, report and export already passed them over.
 * Views hold no rows, so dropping and recreating them loses nothing.
 */
static const char pt_store_schema_v3[] =
  "DROP VIEW best_per_trace;\n"
  "DROP VIEW pareto;\n"
  "CREATE VIEW best_per_trace AS\n"
  "  SELECT objective, trace_id, trace, run_id, policy, params_json, capacity, gpu,\n"
  "    peak_reserved_bytes, predicted_alloc_us\n"
  "  FROM (SELECT 'memory' AS objective, *, row_number() OVER (PARTITION BY trace_id\n"
  "          ORDER BY peak_reserved_bytes, predicted_alloc_us IS NULL, predicted_alloc_us, run_id) AS place\n"
  "        FROM run_summary WHERE ooms = 0\n"
  "        UNION ALL\n"
  "        SELECT 'time' AS objective, *, row_number() OVER (PARTITION BY trace_id\n"
  "          ORDER BY predicted_alloc_us, peak_reserved_bytes, run_id) AS place\n"
  "        FROM run_summary WHERE predicted_alloc_us IS NOT NULL AND ooms = 0)\n"
  "  WHERE place = 1;\n"
  "CREATE VIEW pareto AS\n"
  "  SELECT a.* FROM run_summary a\n"
  "  WHERE a.predicted_alloc_us IS NOT NULL AND a.ooms = 0 AND NOT EXISTS (\n"
  "    SELECT 1 FROM runs rb JOIN results b ON b.run_id = rb.id\n"
  "    WHERE rb.trace_id = a.trace_id AND b.predicted_alloc_us IS NOT NULL AND b.ooms = 0\n"
  "      AND b.predicted_alloc_us <= a.predicted_alloc_us\n"
  "      AND b.peak_reserved_bytes <= a.peak_reserved_bytes\n"
  "      AND (b.predicted_alloc_us < a.predicted_alloc_us\n"
  "           OR b.peak_reserved_bytes < a.peak_reserved_bytes));\n";

/*
 * Schema version 4: each trace's allocator settings at capture (the trace
 * header's settings line; a PyTorch snapshot's allocator_settings, which
 * holds the PYTORCH_CUDA_ALLOC_CONF it ran under), so that report can
 * compare with the settings a snapshot was captured with.  Traces stored
 * before it have '' (unknown: taken as PyTorch's defaults).
 */
static const char pt_store_schema_v4[] =
  "ALTER TABLE traces ADD COLUMN settings TEXT NOT NULL DEFAULT '';\n";

/*
 * Migration steps, the store's readers of older versions (the rule is above
 * PT_STORE_SCHEMA_VERSION in store.h): step i takes user_version i to i + 1.
 * The steps from the version found run in one transaction with the
 * user_version they set, so a failed migration leaves the file as it was.
 * A step only adds (tables, columns, views, rows derived from the old ones)
 * and never drops a committed row; never edit a step once released — append
 * one, and add its tests/data/vN fixture.
 */
static const char *const pt_store_migrations[] = {
  pt_store_schema_v1,   /* 0 -> 1 */
  pt_store_schema_v2,   /* 1 -> 2 */
  pt_store_schema_v3,   /* 2 -> 3 */
  pt_store_schema_v4,   /* 3 -> 4 */
};
_Static_assert(sizeof pt_store_migrations / sizeof pt_store_migrations[0] == PT_STORE_SCHEMA_VERSION,
               "one migration step per schema version");

/*
 * The per-field columns, so a database written by a build that knew fewer
 * stats fields gains the new ones (ALTER TABLE ... ADD COLUMN) when a newer
 * build opens it read-write; older rows hold NULL there.  Additive only: a
 * field dropped from the X-macro leaves its column in place, unused.
 */
typedef struct pt_store_column {
  const char *table, *name, *add;
} pt_store_column;

static const pt_store_column pt_store_columns[] = {
#define PT_X(t, f, h) {"results", #f, "ALTER TABLE results ADD COLUMN " #f PT_SQL_##t},
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#define PT_X(n) {"results", "calls_" #n, "ALTER TABLE results ADD COLUMN calls_" #n " INTEGER"}, \
                {"results", "bytes_" #n, "ALTER TABLE results ADD COLUMN bytes_" #n " INTEGER"},
  PT_DRIVER_CALLS(PT_X)
#undef PT_X
#define PT_X(f, h) {"traces", #f, "ALTER TABLE traces ADD COLUMN " #f " INTEGER"},
  PT_TRACE_STATS_FIELDS(PT_X)
#undef PT_X
};

/* ---- statements -------------------------------------------------------- */

#define PT_RUN_KEY_WHERE \
  "trace_id = ? AND policy_id = ? AND params_json = ? AND capacity = ? AND gpu = ? AND engine_version = ?"

/* X(id, sql): every statement the store runs after open, prepared once. */
#define PT_STORE_STATEMENTS(X)                                                                     \
  X(BEGIN, "BEGIN IMMEDIATE")                                                                      \
  X(COMMIT, "COMMIT")                                                                              \
  X(ROLLBACK, "ROLLBACK")                                                                          \
  X(SAVEPOINT, "SAVEPOINT pt_store_put")                                                           \
  X(RELEASE, "RELEASE pt_store_put")                                                               \
  X(ROLLBACK_TO, "ROLLBACK TO pt_store_put")                                                       \
  X(TRACE_INSERT, "INSERT INTO traces (content_hash, name, source" PT_TRACE_STATS_FIELDS(PT_TR_NAME) \
                  ") VALUES (?, ?, ?" PT_TRACE_STATS_FIELDS(PT_TR_QM)                              \
                  ") ON CONFLICT (content_hash) DO NOTHING")                                       \
  X(TRACE_FIND, "SELECT id FROM traces WHERE content_hash = ?")                                    \
  X(POLICY_INSERT, "INSERT INTO policies (text_hash, name, mechanism, text) VALUES (?, ?, ?, ?)"  \
                   " ON CONFLICT (text_hash) DO NOTHING")                                          \
  X(POLICY_FIND, "SELECT id FROM policies WHERE text_hash = ?")                                    \
  X(POLICY_TEXT, "SELECT text FROM policies WHERE id = ?")                                         \
  X(TRACE_SOURCE, "SELECT source FROM traces WHERE id = ?")                                        \
  X(TRACES, "SELECT id, name, content_hash, source FROM traces WHERE name = ?1"                    \
            " OR (length(?1) >= 4 AND substr(content_hash, 1, length(?1)) = ?1) ORDER BY id")        \
  X(RUN_INSERT, "INSERT INTO runs (trace_id, policy_id, params_json, capacity, gpu, engine_version," \
                " git_revision) VALUES (?, ?, ?, ?, ?, ?, ?)"                                      \
                " ON CONFLICT (trace_id, policy_id, params_json, capacity, gpu, engine_version)"   \
                " DO NOTHING")                                                                     \
  X(RUN_FIND, "SELECT id FROM runs WHERE " PT_RUN_KEY_WHERE)                                       \
  X(RESULT_INSERT, "INSERT INTO results (run_id" PT_SIM_STATS_FIELDS(PT_RES_NAME)                  \
                   PT_DRIVER_CALLS(PT_RES_CALL_NAME) PT_RES_TAIL_NAME ") VALUES (?"                \
                   PT_SIM_STATS_FIELDS(PT_RES_QM) PT_DRIVER_CALLS(PT_RES_CALL_QM) ", ?, ?, ?, ?)") \
  X(POINT_INSERT, "INSERT INTO timelines (run_id, seq, event, time_us, reserved_bytes,"           \
                  " allocated_bytes) VALUES (?, ?, ?, ?, ?, ?)")                                   \
  X(RUNS, "SELECT r.id, r.trace_id, r.policy_id, t.name, t.content_hash, p.name, p.mechanism,"    \
          " r.params_json, r.gpu, r.engine_version, r.git_revision, r.created_at, r.capacity"      \
          PT_SIM_STATS_FIELDS(PT_RES_SEL) PT_DRIVER_CALLS(PT_RES_CALL_SEL)                         \
          ", s.predicted_alloc_us, s.predicted_translation_us, s.addresses_followed, s.sim_seconds" \
          " FROM runs r JOIN traces t ON t.id = r.trace_id JOIN policies p ON p.id = r.policy_id"  \
          " JOIN results s ON s.run_id = r.id"                                                     \
          " WHERE (?1 IS NULL OR t.name = ?1"                                                      \
          "        OR (length(?1) >= 4 AND substr(t.content_hash, 1, length(?1)) = ?1))"           \
          "   AND (?2 IS NULL OR p.name = ?2"                                                      \
          "        OR (length(?2) >= 4 AND substr(p.text_hash, 1, length(?2)) = ?2))"             \
          " ORDER BY r.id")                                                                        \
  X(RUN_EXISTS, "SELECT 1 FROM runs WHERE id = ?")                                                 \
  X(TIMELINE, "SELECT event, time_us, reserved_bytes, allocated_bytes FROM timelines"             \
              " WHERE run_id = ? ORDER BY seq")                                                    \
  X(CALIBRATION_INSERT, "INSERT INTO calibrations (gpu, call, bytes, us, source)"                 \
                        " VALUES (?, ?, ?, ?, ?)")                                                 \
  X(MEASUREMENT_INSERT, "INSERT INTO measurements (run_id, kind, value, unit, machine, notes)"     \
                        " VALUES (?, ?, ?, ?, ?, ?)")

/* The statements on the tables of schema version 2 (confirm), not prepared on a version-1 file read as it is. */
#define PT_CONFIRM_COLS                                                                                    \
  "trace_id, baseline_run_id, tuned_run_id, command, runs_per_arm, baseline_allocator, tuned_allocator,"   \
  " baseline_env, tuned_env, time_metric, predicted_time_gain, measured_time_gain, time_gain_lo,"          \
  " time_gain_hi, baseline_time_s, tuned_time_s, time_verdict, predicted_peak_gain, measured_peak_gain,"   \
  " peak_gain_lo, peak_gain_hi, baseline_peak_bytes, tuned_peak_bytes, peak_verdict, resamples, seed,"     \
  " hostname, gpu_name, engine_version, git_revision, started_at"
#define PT_STORE_STATEMENTS_V2(X)                                                                  \
  X(CONFIRM_INSERT, "INSERT INTO confirmations (" PT_CONFIRM_COLS ") SELECT t.trace_id, b.id, t.id," \
                    " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"  \
                    " FROM runs t JOIN runs b ON b.trace_id = t.trace_id WHERE t.id = ? AND b.id = ?")   \
  X(CONFIRM_RUN_INSERT, "INSERT INTO confirm_runs (confirmation_id, seq, arm, run_id, wall_s, steps,"   \
                        " median_step_s, steps_s, peak_reserved_bytes, allocator, processes)"          \
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                                   \
  X(CONFIRMATIONS, "SELECT c.id, c.trace_id, t.name, c.baseline_run_id, c.tuned_run_id, pb.name,"      \
                   " pb.mechanism, pt.name, pt.mechanism, c.baseline_allocator, c.tuned_allocator,"    \
                   " c.time_metric, c.hostname, c.gpu_name, c.started_at, c.measured_at, c.command,"   \
                   " c.runs_per_arm, c.resamples, c.seed,"                                             \
                   " c.predicted_time_gain, c.measured_time_gain, c.time_gain_lo, c.time_gain_hi,"     \
                   " c.baseline_time_s, c.tuned_time_s, c.time_verdict,"                               \
                   " c.predicted_peak_gain, c.measured_peak_gain, c.peak_gain_lo, c.peak_gain_hi,"     \
                   " c.baseline_peak_bytes, c.tuned_peak_bytes, c.peak_verdict,"                       \
                   " sb.predicted_alloc_us, st.predicted_alloc_us, sb.peak_reserved_bytes,"            \
                   " st.peak_reserved_bytes"                                                           \
                   " FROM confirmations c JOIN traces t ON t.id = c.trace_id"                          \
                   " JOIN runs rb ON rb.id = c.baseline_run_id JOIN policies pb ON pb.id = rb.policy_id" \
                   " JOIN results sb ON sb.run_id = rb.id"                                             \
                   " JOIN runs rt ON rt.id = c.tuned_run_id JOIN policies pt ON pt.id = rt.policy_id"   \
                   " JOIN results st ON st.run_id = rt.id"                                             \
                   " WHERE (?1 IS NULL OR t.name = ?1"                                                 \
                   "        OR (length(?1) >= 4 AND substr(t.content_hash, 1, length(?1)) = ?1))"      \
                   " ORDER BY c.id")

/* The statements on schema version 4's column (traces.settings). */
#define PT_STORE_STATEMENTS_V4(X)                                                                  \
  X(TRACE_SETTINGS_SET, "UPDATE traces SET settings = ? WHERE id = ? AND settings = ''")             \
  X(TRACE_SETTINGS, "SELECT settings FROM traces WHERE id = ?")

enum pt_store_stmt {
#define PT_X(id, sql) PT_ST_##id,
  PT_STORE_STATEMENTS(PT_X)
  PT_STORE_STATEMENTS_V2(PT_X)
  PT_STORE_STATEMENTS_V4(PT_X)
#undef PT_X
  PT_ST_COUNT
};

static const char *const pt_store_sql[PT_ST_COUNT] = {
#define PT_X(id, sql) sql,
  PT_STORE_STATEMENTS(PT_X)
  PT_STORE_STATEMENTS_V2(PT_X)
  PT_STORE_STATEMENTS_V4(PT_X)
#undef PT_X
};

/* The schema version each statement's tables came with. */
static const unsigned char pt_store_since[PT_ST_COUNT] = {
#define PT_X1(id, sql) 1,
#define PT_X2(id, sql) 2,
#define PT_X4(id, sql) 4,
  PT_STORE_STATEMENTS(PT_X1)
  PT_STORE_STATEMENTS_V2(PT_X2)
  PT_STORE_STATEMENTS_V4(PT_X4)
#undef PT_X1
#undef PT_X2
#undef PT_X4
};

/*
 * The handle.  batch: inside pt_store_begin ... pt_store_commit, where a put
 * is a savepoint rather than its own transaction.
 */
struct pt_store {
  sqlite3 *db;
  sqlite3_stmt *st[PT_ST_COUNT]; /* NULL for a statement whose tables a file read as it is lacks */
  char *path;
  int readonly;
  int batch;
  int64_t version; /* the schema version the file has (after any migration) */
};

/* ---- errors ------------------------------------------------------------ */

static int pt_code_of(int src) {
  switch (src & 0xff) {
  case SQLITE_NOMEM: return PT_ENOMEM;
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
  case SQLITE_FORMAT: return PT_EFORMAT;
  case SQLITE_TOOBIG: return PT_ELIMIT;
  case SQLITE_CONSTRAINT: return PT_EUSAGE;  /* e.g. a trace_id or run_id that is not stored */
  default: return PT_EIO;   /* FULL, IOERR, READONLY, CANTOPEN, BUSY, ... */
  }
}

/*
 * "DBPATH: WHAT: sqlite's message", and a note when the failure also ended
 * the caller's batch (SQLite rolls a whole transaction back on some errors,
 * SQLITE_FULL among them).  Call it before anything else touches the handle.
 */
static int pt_fail(pt_store *s, int src, pt_err *err, const char *what) {
  int code = pt_code_of(src);
  const char *m = sqlite3_errmsg(s->db);
  if (s->batch && sqlite3_get_autocommit(s->db)) {
    s->batch = 0;
    return pt_err_set(err, code, "%s: %s: %s (the open batch was rolled back)", s->path, what, m);
  }
  return pt_err_set(err, code, "%s: %s: %s", s->path, what, m);
}

/* Reset after use.  reset only repeats the step's result, which was handled. */
static void pt_done(sqlite3_stmt *st) {
  (void)sqlite3_reset(st);
  (void)sqlite3_clear_bindings(st);
}

static int pt_too_long(pt_store *s, pt_err *err, const char *what, const char *v, size_t size) {
  if (v && strlen(v) >= size)
    return pt_err_set(err, PT_ELIMIT, "%s: %s is %zu bytes long; at most %zu are kept", s->path, what,
                      strlen(v), size - 1);
  return 0;
}

static int pt_writable(pt_store *s, pt_err *err) {
  return s->readonly ? pt_err_set(err, PT_EUSAGE, "%s: opened read-only", s->path) : 0;
}

/* ---- binding and reading ------------------------------------------------ */

/* Binds parameters 1, 2, ... in turn; the first failure sticks in rc. */
typedef struct pt_binder {
  sqlite3_stmt *st;
  int i, rc;
} pt_binder;

static void pt_bind_i64(pt_binder *b, int64_t v) {
  if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_int64(b->st, ++b->i, v);
}
static void pt_bind_U(pt_binder *b, uint64_t v) {
  pt_bind_i64(b, (int64_t)v);   /* bit pattern kept; read back with (uint64_t) */
}
static void pt_bind_D(pt_binder *b, double v) {
  if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_double(b->st, ++b->i, v);
}
static void pt_bind_null(pt_binder *b) {
  if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_null(b->st, ++b->i);
}
static void pt_bind_text(pt_binder *b, const char *v) {
  if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_text(b->st, ++b->i, v, -1, SQLITE_STATIC);
}
static void pt_bind_textn(pt_binder *b, const char *v, size_t len) {
  if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_text64(b->st, ++b->i, v, len, SQLITE_STATIC, SQLITE_UTF8);
}

/* Reads columns 0, 1, ... in turn. */
typedef struct pt_reader {
  sqlite3_stmt *st;
  int i;
} pt_reader;

static int64_t pt_get_i64(pt_reader *c) { return sqlite3_column_int64(c->st, c->i++); }
static uint64_t pt_get_U(pt_reader *c) { return (uint64_t)sqlite3_column_int64(c->st, c->i++); }
static int pt_get_null(pt_reader *c) { return sqlite3_column_type(c->st, c->i) == SQLITE_NULL; }
static double pt_get_D(pt_reader *c) {
  int i = c->i++;
  return sqlite3_column_type(c->st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(c->st, i);
}
static void pt_get_text(pt_reader *c, char *dst, size_t size) {
  const unsigned char *v = sqlite3_column_text(c->st, c->i);
  size_t n = v ? (size_t)sqlite3_column_bytes(c->st, c->i) : 0;
  c->i++;
  if (n >= size) n = size - 1;   /* only from rows another program wrote: puts check lengths */
  if (n) memcpy(dst, v, n);
  dst[n] = 0;
}

/* Step a statement that returns no rows (or whose rows do not matter). */
static int pt_exec_stmt(pt_store *s, int id, pt_err *err, const char *what) {
  sqlite3_stmt *st = s->st[id];
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    rc = pt_fail(s, rc, err, what);
    pt_done(st);
    return rc;
  }
  pt_done(st);
  return 0;
}

/* Step a bound statement that yields at most one id; *id = 0 when none. */
static int pt_step_id(pt_store *s, sqlite3_stmt *st, pt_err *err, const char *what, int64_t *id) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    rc = 0;
  } else if (rc == SQLITE_DONE) {
    *id = 0;
    rc = 0;
  } else {
    rc = pt_fail(s, rc, err, what);
  }
  pt_done(st);
  return rc;
}

/* ---- opening ------------------------------------------------------------ */

/*
 * One-off statement of open and migration (not kept): one row's first column
 * as a number and, when text is given, as text.  Returns a SQLite code.
 */
static int pt_one_row(sqlite3 *db, const char *sql, int64_t *num, char *text, size_t tsize) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    if (num) *num = sqlite3_column_int64(st, 0);
    if (text) {
      const unsigned char *v = sqlite3_column_text(st, 0);
      snprintf(text, tsize, "%s", v ? (const char *)v : "");
    }
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    if (num) *num = 0;
    if (text && tsize) text[0] = 0;
    rc = SQLITE_OK;
  }
  int frc = sqlite3_finalize(st);
  return rc != SQLITE_OK ? rc : frc;
}

/*
 * Why the file could not be opened or read, in words.  SQLite's errno is
 * often that of a later, harmless call (its fallback open), so look again:
 * a missing file, a directory we cannot create files in (the database keeps
 * its -wal and -shm files beside it, so even a reader needs that), a file we
 * cannot write.
 */
static int pt_access_fail(pt_store *s, pt_err *err, const char *what, const char *m) {
  char dir[4096];
  const char *slash = strrchr(s->path, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == s->path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - s->path), s->path);
  struct stat sb;
  if (stat(s->path, &sb) != 0) {
    int e = errno;
    if (e == ENOENT && !s->readonly && access(dir, W_OK | X_OK) != 0)
      return pt_err_set(err, PT_EIO, "%s: cannot create the database: directory %s: %s", s->path, dir,
                        strerror(errno));
    return pt_err_set(err, PT_EIO, "%s: %s: %s", s->path, what, strerror(e));
  }
  if (S_ISDIR(sb.st_mode))
    return pt_err_set(err, PT_EIO, "%s: %s: is a directory", s->path, what);
  if (access(dir, W_OK | X_OK) != 0)
    return pt_err_set(err, PT_EIO,
                      "%s: %s: directory %s is not writable, and the database keeps its -wal and -shm "
                      "files beside it", s->path, what, dir);
  if (!s->readonly && access(s->path, R_OK | W_OK) != 0)
    return pt_err_set(err, PT_EIO, "%s: %s: %s; fix the file's permissions", s->path, what,
                      strerror(errno));
  int e = sqlite3_system_errno(s->db);
  if (e) return pt_err_set(err, PT_EIO, "%s: %s: %s (%s)", s->path, what, m, strerror(e));
  return pt_err_set(err, PT_EIO, "%s: %s: %s", s->path, what, m);
}

/* A failure before the file is known to be ours: name what the file is. */
static int pt_open_fail(pt_store *s, int src, pt_err *err, const char *what) {
  const char *m = sqlite3_errmsg(s->db);
  switch (src & 0xff) {
  case SQLITE_NOTADB:
    return pt_err_set(err, PT_EFORMAT, "%s: not a pagetune database (%s)", s->path, m);
  case SQLITE_CORRUPT:
    return pt_err_set(err, PT_EFORMAT, "%s: damaged database (%s)", s->path, m);
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
    return pt_access_fail(s, err, what, m);
  case SQLITE_IOERR: {
    int e = sqlite3_system_errno(s->db);
    if (e) return pt_err_set(err, PT_EIO, "%s: %s: %s (%s)", s->path, what, m, strerror(e));
    return pt_err_set(err, PT_EIO, "%s: %s: %s", s->path, what, m);
  }
  default:
    return pt_err_set(err, pt_code_of(src), "%s: %s: %s", s->path, what, m);
  }
}

/*
 * Count the per-field columns the database lacks (tables of version >= 1)
 * and, with add, add them (inside the migration transaction).
 */
static int pt_sync_columns(pt_store *s, int add, size_t *missing) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", -1,
                              &st, NULL);
  if (rc != SQLITE_OK) return rc;
  *missing = 0;
  for (size_t i = 0; i < sizeof pt_store_columns / sizeof pt_store_columns[0] && rc == SQLITE_OK; i++) {
    int have = 1;
    rc = sqlite3_bind_text(st, 1, pt_store_columns[i].table, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 2, pt_store_columns[i].name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      have = sqlite3_column_int64(st, 0) != 0;
      rc = SQLITE_OK;
    }
    if (rc == SQLITE_OK) rc = sqlite3_reset(st);
    if (rc == SQLITE_OK && !have) {
      (*missing)++;
      if (add) rc = sqlite3_exec(s->db, pt_store_columns[i].add, NULL, NULL, NULL);
    }
  }
  int frc = sqlite3_finalize(st);
  return rc != SQLITE_OK ? rc : frc;
}

/*
 * Bring the schema to PT_STORE_SCHEMA_VERSION in one transaction: the steps
 * from the version found, then the per-field columns.  The version is read
 * again under the write lock, since another process may have migrated it.
 */
static int pt_migrate(pt_store *s, pt_err *err) {
  int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "migrating the schema");
  int64_t v = 0;
  rc = pt_one_row(s->db, "PRAGMA user_version", &v, NULL, 0);
  if (rc == SQLITE_OK && v > PT_STORE_SCHEMA_VERSION) {
    (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);  /* nothing written; the refusal is the news */
    return pt_err_set(err, PT_EFORMAT,
                      "%s: written by a newer pagetune (schema version %lld > %d); upgrade pagetune",
                      s->path, (long long)v, PT_STORE_SCHEMA_VERSION);
  }
  for (int64_t i = v < 0 ? 0 : v; rc == SQLITE_OK && i < PT_STORE_SCHEMA_VERSION; i++)
    rc = sqlite3_exec(s->db, pt_store_migrations[i], NULL, NULL, NULL);
  size_t added = 0;
  if (rc == SQLITE_OK) rc = pt_sync_columns(s, 1, &added);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(s->db, "PRAGMA user_version = " PT_STR(PT_STORE_SCHEMA_VERSION), NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    int out = pt_open_fail(s, rc, err, "migrating the schema");
    if (!sqlite3_get_autocommit(s->db))
      (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);  /* the error above is what matters */
    return out;
  }
  return 0;
}

/*
 * Everything that can refuse the file reads only, so a refused file is left
 * byte for byte as it was: the header fields, then (read-write) WAL, the
 * migration and the statements.
 */
/*
 * A read-only open of a database no one is writing (no -wal file beside it)
 * opens it immutable: SQLite then takes no locks and creates no -wal or -shm
 * file, so a read-only file in a read-only folder can be read and nothing is
 * left behind.  While a writer works (a -wal file exists) the open is an
 * ordinary read-only one, which sees the writer's committed transactions.
 */
static int pt_open_readonly(pt_store *s) {
  char wal[4200];
  struct stat sb;
  snprintf(wal, sizeof wal, "%s-wal", s->path);
  if (stat(wal, &sb) == 0 || strlen(s->path) > 4000)
    return sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READONLY, NULL);
  sqlite3_str *uri = sqlite3_str_new(NULL);
  sqlite3_str_appendall(uri, "file:");
  for (const char *p = s->path; *p; p++) { /* the path, percent-encoded where a URI needs it */
    unsigned char c = (unsigned char)*p;
    if (c == '?' || c == '#' || c == '%' || c <= ' ' || c >= 0x7f) sqlite3_str_appendf(uri, "%%%02X", c);
    else sqlite3_str_appendchar(uri, 1, (char)c);
  }
  sqlite3_str_appendall(uri, "?mode=ro&immutable=1");
  char *u = sqlite3_str_finish(uri);
  if (!u) return SQLITE_NOMEM;
  int rc = sqlite3_open_v2(u, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  sqlite3_free(u);
  return rc;
}

/*
 * Some SQLite calls answer SQLITE_BUSY without waiting (changing the journal
 * mode while another process creates the file): retry them for the busy
 * timeout's 5 s.
 */
static int pt_exec_retry(sqlite3 *db, const char *sql, char *text, size_t tsize) {
  int rc = SQLITE_BUSY;
  for (int i = 0; i < 500 && ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED); i++) {
    if (i) sqlite3_sleep(10);
    rc = pt_one_row(db, sql, NULL, text, tsize);
  }
  return rc;
}

static int pt_open_db(pt_store *s, int flags, pt_err *err) {
  int rc = (flags & PT_STORE_READONLY) ? pt_open_readonly(s)
                                       : sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (!s->db) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", s->path);
  if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "cannot open");
  if (!s->readonly && sqlite3_db_readonly(s->db, "main") == 1)
    return pt_err_set(err, PT_EIO,
                      "%s: database file is read-only; fix its permissions or open it read-only", s->path);
  rc = sqlite3_busy_timeout(s->db, 5000);
  if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
  if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "cannot open");

  /* the header fields in one read transaction: one snapshot, never half of another's migration */
  int64_t app = 0, version = 0, objects = 0;
  rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = pt_one_row(s->db, "PRAGMA application_id", &app, NULL, 0);
  if (rc == SQLITE_OK) rc = pt_one_row(s->db, "PRAGMA user_version", &version, NULL, 0);
  if (rc == SQLITE_OK) rc = pt_one_row(s->db, "SELECT count(*) FROM sqlite_master", &objects, NULL, 0);
  if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    int out = pt_open_fail(s, rc, err, "cannot read"); /* before the rollback replaces SQLite's message */
    if (!sqlite3_get_autocommit(s->db)) (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return out;
  }
  if (app != 0 && app != PT_STORE_APPLICATION_ID)
    return pt_err_set(err, PT_EFORMAT, "%s: not a pagetune database (application_id %lld)", s->path,
                      (long long)app);
  if (version > PT_STORE_SCHEMA_VERSION)
    return pt_err_set(err, PT_EFORMAT,
                      "%s: written by a newer pagetune (schema version %lld > %d); upgrade pagetune",
                      s->path, (long long)version, PT_STORE_SCHEMA_VERSION);
  if (app == 0 && (version != 0 || objects != 0))
    return pt_err_set(err, PT_EFORMAT, "%s: not a pagetune database (it holds another program's tables)",
                      s->path);

  size_t missing = 0;
  if (version > 0) {
    rc = pt_sync_columns(s, 0, &missing);
    if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "cannot read");
  }
  if (s->readonly) {
    if (version == 0)
      return pt_err_set(err, PT_EFORMAT, "%s: empty database, not yet a pagetune database", s->path);
    if (version < PT_STORE_READ_VERSION || missing)
      return pt_err_set(err, PT_EFORMAT,
                        "%s: database schema is older than this pagetune's; open it once read-write "
                        "to migrate it", s->path);
  } else {
    char mode[16]; /* concurrent creators of a new file serialize here, then on the migration */
    rc = pt_exec_retry(s->db, "PRAGMA journal_mode = WAL", mode, sizeof mode);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "setting the journal");
    if (version < PT_STORE_SCHEMA_VERSION || missing) {
      int r = pt_migrate(s, err);
      if (r < 0) return r;
      version = PT_STORE_SCHEMA_VERSION;
    }
  }
  s->version = version;
  for (int i = 0; i < PT_ST_COUNT; i++) {
    if (pt_store_since[i] > version) continue; /* a read-only open of an older file: its reads find nothing */
    rc = sqlite3_prepare_v3(s->db, pt_store_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
    if (rc != SQLITE_OK) return pt_open_fail(s, rc, err, "preparing statements");
  }
  return 0;
}

int pt_store_open(const char *path, int flags, pt_err *err, pt_store **out) {
  *out = NULL;
  if (!path || !*path) return pt_err_set(err, PT_EUSAGE, "database path is empty");
  pt_store *s = calloc(1, sizeof *s);
  if (!s) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  s->path = strdup(path);
  if (!s->path) {
    free(s);
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  }
  s->readonly = (flags & PT_STORE_READONLY) != 0;
  int rc = pt_open_db(s, flags, err);
  if (rc < 0) {
    pt_store_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

const char *pt_store_path(const pt_store *s) { return s->path; }

void pt_store_close(pt_store *s) {
  if (!s) return;
  if (s->db && !sqlite3_get_autocommit(s->db))
    (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);  /* an unfinished batch is not kept */
  for (int i = 0; i < PT_ST_COUNT; i++)
    (void)sqlite3_finalize(s->st[i]);  /* returns the statement's last error, already reported */
  /* With every statement finalized close cannot be busy; close_v2 defers if it were. */
  (void)sqlite3_close_v2(s->db);
  free(s->path);
  free(s);
}

/* ---- transactions ------------------------------------------------------- */

/* A put's own transaction, or a savepoint inside the caller's batch. */
static int pt_tx_begin(pt_store *s, pt_err *err) {
  return pt_exec_stmt(s, s->batch ? PT_ST_SAVEPOINT : PT_ST_BEGIN, err, "starting a transaction");
}

static void pt_tx_abort(pt_store *s) {
  if (sqlite3_get_autocommit(s->db)) {  /* SQLite already rolled everything back */
    s->batch = 0;
    return;
  }
  /* Errors here cannot be reported better than the one that brought us here. */
  if (s->batch) {
    if (sqlite3_step(s->st[PT_ST_ROLLBACK_TO]) == SQLITE_DONE) (void)sqlite3_step(s->st[PT_ST_RELEASE]);
    pt_done(s->st[PT_ST_ROLLBACK_TO]);
    pt_done(s->st[PT_ST_RELEASE]);
  } else {
    (void)sqlite3_step(s->st[PT_ST_ROLLBACK]);
    pt_done(s->st[PT_ST_ROLLBACK]);
  }
}

static int pt_tx_end(pt_store *s, pt_err *err) {
  int rc = pt_exec_stmt(s, s->batch ? PT_ST_RELEASE : PT_ST_COMMIT, err, "committing run");
  if (rc < 0) pt_tx_abort(s);
  return rc;
}

int pt_store_begin(pt_store *s, pt_err *err) {
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (s->batch) return pt_err_set(err, PT_EUSAGE, "%s: a batch is already open", s->path);
  rc = pt_exec_stmt(s, PT_ST_BEGIN, err, "starting a batch");
  if (rc == 0) s->batch = 1;
  return rc;
}

int pt_store_commit(pt_store *s, pt_err *err) {
  if (!s->batch) return pt_err_set(err, PT_EUSAGE, "%s: commit without an open batch", s->path);
  int rc = pt_exec_stmt(s, PT_ST_COMMIT, err, "committing the batch");
  if (rc < 0 && !sqlite3_get_autocommit(s->db)) {
    (void)sqlite3_step(s->st[PT_ST_ROLLBACK]);  /* the commit's error is the one reported */
    pt_done(s->st[PT_ST_ROLLBACK]);
  }
  s->batch = 0;
  return rc;
}

int pt_store_rollback(pt_store *s, pt_err *err) {
  if (!s->batch) return pt_err_set(err, PT_EUSAGE, "%s: rollback without an open batch", s->path);
  s->batch = 0;
  if (sqlite3_get_autocommit(s->db)) return 0;
  return pt_exec_stmt(s, PT_ST_ROLLBACK, err, "rolling the batch back");
}

/* ---- writes ------------------------------------------------------------- */


/* INSERT ... ON CONFLICT DO NOTHING, then the id of the row that is there. */
static int pt_insert_or_find(pt_store *s, sqlite3_stmt *ins, sqlite3_stmt *find, const char *key,
                             pt_err *err, const char *what, int64_t *id) {
  int rc = sqlite3_step(ins);
  if (rc != SQLITE_DONE) {
    rc = pt_fail(s, rc, err, what);
    pt_done(ins);
    return rc;
  }
  pt_done(ins);
  if (sqlite3_changes(s->db) > 0) {
    *id = sqlite3_last_insert_rowid(s->db);
    return 0;
  }
  rc = sqlite3_bind_text(find, 1, key, -1, SQLITE_STATIC);
  if (rc != SQLITE_OK) {
    rc = pt_fail(s, rc, err, what);
    pt_done(find);
    return rc;
  }
  rc = pt_step_id(s, find, err, what, id);
  if (rc == 0 && *id == 0) return pt_err_set(err, PT_EIO, "%s: %s: row vanished", s->path, what);
  return rc;
}

int pt_store_put_trace(pt_store *s, const char *name, const char *source, const char *content_hash,
                       const pt_trace_stats *st, pt_err *err, int64_t *id) {
  *id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!name || !content_hash || !*content_hash)
    return pt_err_set(err, PT_EUSAGE, "%s: a trace needs a name and a content hash", s->path);
  if ((rc = pt_too_long(s, err, "trace name", name, sizeof ((pt_store_run *)0)->trace)) < 0 ||
      (rc = pt_too_long(s, err, "trace hash", content_hash, sizeof ((pt_store_run *)0)->trace_hash)) < 0)
    return rc;
  sqlite3_stmt *ins = s->st[PT_ST_TRACE_INSERT];
  pt_binder b = {ins, 0, SQLITE_OK};
  pt_bind_text(&b, content_hash);
  pt_bind_text(&b, name);
  pt_bind_text(&b, source ? source : "");
#define PT_X(f, h) if (st) pt_bind_U(&b, st->f); else pt_bind_null(&b);
  PT_TRACE_STATS_FIELDS(PT_X)
#undef PT_X
  if (b.rc != SQLITE_OK) {
    rc = pt_fail(s, b.rc, err, "storing trace");
    pt_done(ins);
    return rc;
  }
  return pt_insert_or_find(s, ins, s->st[PT_ST_TRACE_FIND], content_hash, err, "storing trace", id);
}

int pt_store_put_policy(pt_store *s, const char *name, const char *mechanism, const char *text,
                        size_t len, pt_err *err, int64_t *id) {
  *id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!name || (!text && len))
    return pt_err_set(err, PT_EUSAGE, "%s: a policy needs a name and its text", s->path);
  if ((rc = pt_too_long(s, err, "policy name", name, sizeof ((pt_store_run *)0)->policy)) < 0 ||
      (rc = pt_too_long(s, err, "mechanism", mechanism, sizeof ((pt_store_run *)0)->mechanism)) < 0)
    return rc;
  char hash[65];
  pt_sha256_hex(text, len, hash);
  sqlite3_stmt *ins = s->st[PT_ST_POLICY_INSERT];
  pt_binder b = {ins, 0, SQLITE_OK};
  pt_bind_text(&b, hash);
  pt_bind_text(&b, name);
  pt_bind_text(&b, mechanism ? mechanism : "");
  pt_bind_textn(&b, text ? text : "", len);
  if (b.rc != SQLITE_OK) {
    rc = pt_fail(s, b.rc, err, "storing policy");
    pt_done(ins);
    return rc;
  }
  return pt_insert_or_find(s, ins, s->st[PT_ST_POLICY_FIND], hash, err, "storing policy", id);
}

/* The key with NULLs replaced, checked against pt_store_run's field sizes. */
static int pt_key_norm(pt_store *s, const pt_store_run_key *k, pt_err *err, pt_store_run_key *n) {
  *n = *k;
  if (!n->params_json) n->params_json = "{}";
  if (!n->gpu) n->gpu = "";
  if (!n->engine_version) n->engine_version = "";
  int rc;
  if ((rc = pt_too_long(s, err, "params_json", n->params_json, sizeof ((pt_store_run *)0)->params_json)) < 0 ||
      (rc = pt_too_long(s, err, "gpu", n->gpu, sizeof ((pt_store_run *)0)->gpu)) < 0 ||
      (rc = pt_too_long(s, err, "engine_version", n->engine_version,
                        sizeof ((pt_store_run *)0)->engine_version)) < 0)
    return rc;
  return 0;
}

static void pt_bind_key(pt_binder *b, const pt_store_run_key *k) {
  pt_bind_i64(b, k->trace_id);
  pt_bind_i64(b, k->policy_id);
  pt_bind_text(b, k->params_json);
  pt_bind_U(b, k->capacity);
  pt_bind_text(b, k->gpu);
  pt_bind_text(b, k->engine_version);
}

int pt_store_find_run(pt_store *s, const pt_store_run_key *k, pt_err *err, int64_t *run_id) {
  *run_id = 0;
  pt_store_run_key key;
  int rc = pt_key_norm(s, k, err, &key);
  if (rc < 0) return rc;
  sqlite3_stmt *st = s->st[PT_ST_RUN_FIND];
  pt_binder b = {st, 0, SQLITE_OK};
  pt_bind_key(&b, &key);
  if (b.rc != SQLITE_OK) {
    rc = pt_fail(s, b.rc, err, "looking a run up");
    pt_done(st);
    return rc;
  }
  return pt_step_id(s, st, err, "looking a run up", run_id);
}

/* Step a bound insert; a failure is reported and the statement reset. */
static int pt_step_insert(pt_store *s, sqlite3_stmt *st, int brc, pt_err *err, const char *what) {
  int rc = brc == SQLITE_OK ? sqlite3_step(st) : brc;
  if (rc != SQLITE_DONE) {
    rc = pt_fail(s, rc, err, what);
    pt_done(st);
    return rc;
  }
  pt_done(st);
  return 0;
}

/* The rows of one run, inside the transaction pt_store_put_run opened. */
static int pt_put_run_rows(pt_store *s, const pt_store_run_key *k, const char *git_revision,
                           const pt_sim_result *r, pt_err *err, int64_t *run_id) {
  sqlite3_stmt *st = s->st[PT_ST_RUN_INSERT];
  pt_binder b = {st, 0, SQLITE_OK};
  pt_bind_key(&b, k);
  pt_bind_text(&b, git_revision ? git_revision : "");
  int rc = pt_step_insert(s, st, b.rc, err, "storing run");
  if (rc < 0) return rc;
  if (sqlite3_changes(s->db) == 0) {   /* stored before: keep that one */
    st = s->st[PT_ST_RUN_FIND];
    b = (pt_binder){st, 0, SQLITE_OK};
    pt_bind_key(&b, k);
    if (b.rc != SQLITE_OK) {
      rc = pt_fail(s, b.rc, err, "storing run");
      pt_done(st);
      return rc;
    }
    rc = pt_step_id(s, st, err, "storing run", run_id);
    if (rc == 0 && *run_id == 0) return pt_err_set(err, PT_EIO, "%s: storing run: row vanished", s->path);
    return rc;
  }
  int64_t id = sqlite3_last_insert_rowid(s->db);

  st = s->st[PT_ST_RESULT_INSERT];
  b = (pt_binder){st, 0, SQLITE_OK};
  pt_bind_i64(&b, id);
#define PT_X(t, f, h) pt_bind_##t(&b, r->f);
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#define PT_X(n) pt_bind_U(&b, r->driver_calls[PT_DRV_##n]); pt_bind_U(&b, r->driver_bytes[PT_DRV_##n]);
  PT_DRIVER_CALLS(PT_X)
#undef PT_X
  if (r->has_gpu) pt_bind_D(&b, r->predicted_alloc_us); else pt_bind_null(&b);
  if (r->has_tlb) pt_bind_D(&b, r->predicted_translation_us); else pt_bind_null(&b);
  pt_bind_i64(&b, r->addresses_followed != 0);
  pt_bind_D(&b, r->seconds);
  rc = pt_step_insert(s, st, b.rc, err, "storing results");
  if (rc < 0) return rc;

  st = s->st[PT_ST_POINT_INSERT];
  for (size_t i = 0; i < r->ntimeline; i++) {
    const pt_sim_point *p = &r->timeline[i];
    b = (pt_binder){st, 0, SQLITE_OK};
    pt_bind_i64(&b, id);
    pt_bind_i64(&b, (int64_t)i);
    pt_bind_U(&b, p->event);
    pt_bind_i64(&b, p->time_us);
    pt_bind_U(&b, p->reserved);
    pt_bind_U(&b, p->allocated);
    rc = pt_step_insert(s, st, b.rc, err, "storing timeline");
    if (rc < 0) return rc;
  }
  *run_id = id;
  return 0;
}

int pt_store_put_run(pt_store *s, const pt_store_run_key *k, const char *git_revision,
                     const pt_sim_result *r, pt_err *err, int64_t *run_id) {
  *run_id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!k || !r) return pt_err_set(err, PT_EUSAGE, "%s: storing run: no key or no result", s->path);
  pt_store_run_key key;
  if ((rc = pt_key_norm(s, k, err, &key)) < 0 ||
      (rc = pt_too_long(s, err, "git_revision", git_revision, sizeof ((pt_store_run *)0)->git_revision)) < 0)
    return rc;
  if (r->ntimeline && !r->timeline)
    return pt_err_set(err, PT_EUSAGE, "%s: storing run: timeline points missing", s->path);
  if ((rc = pt_tx_begin(s, err)) < 0) return rc;
  int64_t id = 0;
  rc = pt_put_run_rows(s, &key, git_revision, r, err, &id);
  if (rc == 0) rc = pt_tx_end(s, err);
  else pt_tx_abort(s);
  if (rc == 0) *run_id = id;
  return rc;
}

int pt_store_put_calibration(pt_store *s, const char *gpu, const char *call, uint64_t bytes, double us,
                             const char *source, pt_err *err, int64_t *id) {
  *id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!gpu || !call) return pt_err_set(err, PT_EUSAGE, "%s: a calibration needs a gpu and a call", s->path);
  sqlite3_stmt *st = s->st[PT_ST_CALIBRATION_INSERT];
  pt_binder b = {st, 0, SQLITE_OK};
  pt_bind_text(&b, gpu);
  pt_bind_text(&b, call);
  pt_bind_U(&b, bytes);
  pt_bind_D(&b, us);
  pt_bind_text(&b, source ? source : "");
  rc = pt_step_insert(s, st, b.rc, err, "storing calibration");
  if (rc == 0) *id = sqlite3_last_insert_rowid(s->db);
  return rc;
}

int pt_store_put_measurement(pt_store *s, int64_t run_id, const char *kind, double value,
                             const char *unit, const char *machine, const char *notes, pt_err *err,
                             int64_t *id) {
  *id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!kind) return pt_err_set(err, PT_EUSAGE, "%s: a measurement needs a kind", s->path);
  sqlite3_stmt *st = s->st[PT_ST_MEASUREMENT_INSERT];
  pt_binder b = {st, 0, SQLITE_OK};
  if (run_id) pt_bind_i64(&b, run_id); else pt_bind_null(&b);
  pt_bind_text(&b, kind);
  pt_bind_D(&b, value);
  pt_bind_text(&b, unit ? unit : "");
  pt_bind_text(&b, machine ? machine : "");
  pt_bind_text(&b, notes ? notes : "");
  rc = pt_step_insert(s, st, b.rc, err, "storing measurement");
  if (rc == 0) *id = sqlite3_last_insert_rowid(s->db);
  return rc;
}

/* A double, or NULL when it is NaN (SQLite would store NULL anyway: said here). */
static void pt_bind_D_or_null(pt_binder *b, double v) {
  if (isnan(v)) pt_bind_null(b);
  else pt_bind_D(b, v);
}

static void pt_bind_gain(pt_binder *b, const pt_confirm_gain *g) {
  pt_bind_D_or_null(b, g->predicted);
  pt_bind_D_or_null(b, g->measured);
  pt_bind_D_or_null(b, g->lo);
  pt_bind_D_or_null(b, g->hi);
  pt_bind_D_or_null(b, g->base_median);
  pt_bind_D_or_null(b, g->tuned_median);
  pt_bind_text(b, pt_confirm_verdict_name(g->verdict));
}

/* The rows of one confirmation, inside the transaction pt_store_put_confirmation opened. */
static int pt_put_confirm_rows(pt_store *s, const pt_store_confirm *c, const pt_confirm_run *runs, size_t n,
                               pt_err *err, int64_t *id) {
  sqlite3_stmt *st = s->st[PT_ST_CONFIRM_INSERT];
  pt_binder b = {st, 0, SQLITE_OK};
  pt_bind_text(&b, c->command);
  pt_bind_i64(&b, c->runs_per_arm);
  pt_bind_text(&b, c->baseline_allocator);
  pt_bind_text(&b, c->tuned_allocator);
  pt_bind_text(&b, c->baseline_env ? c->baseline_env : "{}");
  pt_bind_text(&b, c->tuned_env ? c->tuned_env : "{}");
  pt_bind_text(&b, c->time_metric);
  pt_bind_gain(&b, &c->time);
  pt_bind_gain(&b, &c->peak);
  pt_bind_i64(&b, (int64_t)c->resamples);
  pt_bind_U(&b, c->seed);
  pt_bind_text(&b, c->hostname ? c->hostname : "");
  pt_bind_text(&b, c->gpu_name ? c->gpu_name : "");
  pt_bind_text(&b, c->engine_version ? c->engine_version : "");
  pt_bind_text(&b, c->git_revision ? c->git_revision : "");
  pt_bind_text(&b, c->started_at);
  pt_bind_i64(&b, c->tuned_run);
  pt_bind_i64(&b, c->baseline_run);
  int rc = pt_step_insert(s, st, b.rc, err, "storing a confirmation");
  if (rc < 0) return rc;
  if (sqlite3_changes(s->db) == 0)
    return pt_err_set(err, PT_EUSAGE, "%s: storing a confirmation: runs %lld and %lld are not stored runs of one trace",
                      s->path, (long long)c->baseline_run, (long long)c->tuned_run);
  int64_t cid = sqlite3_last_insert_rowid(s->db);
  st = s->st[PT_ST_CONFIRM_RUN_INSERT];
  for (size_t i = 0; i < n; i++) {
    const pt_confirm_run *r = &runs[i];
    char *steps;
    if ((rc = pt_confirm_steps_json(r->m.steps_s, r->m.nsteps, &steps, err)) < 0) return rc;
    b = (pt_binder){st, 0, SQLITE_OK};
    pt_bind_i64(&b, cid);
    pt_bind_i64(&b, r->seq);
    pt_bind_text(&b, pt_confirm_arm_name(r->arm));
    pt_bind_i64(&b, r->run_id);
    pt_bind_D(&b, r->wall_s);
    pt_bind_i64(&b, (int64_t)r->m.nsteps);
    pt_bind_D_or_null(&b, r->median_step_s);
    pt_bind_text(&b, steps);
    if (r->m.has_peak) pt_bind_U(&b, r->m.peak_reserved_bytes);
    else pt_bind_null(&b);
    pt_bind_text(&b, r->m.allocator);
    pt_bind_i64(&b, r->m.processes);
    rc = pt_step_insert(s, st, b.rc, err, "storing a confirmation's run");
    free(steps);
    if (rc < 0) return rc;
  }
  *id = cid;
  return 0;
}

int pt_store_put_confirmation(pt_store *s, const pt_store_confirm *c, const pt_confirm_run *runs, size_t n,
                              pt_err *err, int64_t *id) {
  *id = 0;
  int rc = pt_writable(s, err);
  if (rc < 0) return rc;
  if (!c || (n && !runs) || !c->command || !c->baseline_allocator || !c->tuned_allocator || !c->time_metric ||
      !c->started_at)
    return pt_err_set(err, PT_EUSAGE, "%s: storing a confirmation: fields missing", s->path);
  const pt_store_confirmation *f = NULL;
  if ((rc = pt_too_long(s, err, "allocator", c->baseline_allocator, sizeof f->baseline_allocator)) < 0 ||
      (rc = pt_too_long(s, err, "allocator", c->tuned_allocator, sizeof f->tuned_allocator)) < 0 ||
      (rc = pt_too_long(s, err, "time_metric", c->time_metric, sizeof f->time_metric)) < 0 ||
      (rc = pt_too_long(s, err, "hostname", c->hostname, sizeof f->hostname)) < 0 ||
      (rc = pt_too_long(s, err, "gpu_name", c->gpu_name, sizeof f->gpu_name)) < 0 ||
      (rc = pt_too_long(s, err, "started_at", c->started_at, sizeof f->started_at)) < 0 ||
      (rc = pt_too_long(s, err, "engine_version", c->engine_version, sizeof ((pt_store_run *)0)->engine_version)) < 0 ||
      (rc = pt_too_long(s, err, "git_revision", c->git_revision, sizeof ((pt_store_run *)0)->git_revision)) < 0)
    return rc;
  for (size_t i = 0; i < n; i++)
    if (runs[i].run_id != (runs[i].arm == PT_CONFIRM_TUNED ? c->tuned_run : c->baseline_run))
      return pt_err_set(err, PT_EUSAGE, "%s: storing a confirmation: run %zu is not of its arm's stored run", s->path, i);
  if ((rc = pt_tx_begin(s, err)) < 0) return rc;
  int64_t cid = 0;
  rc = pt_put_confirm_rows(s, c, runs, n, err, &cid);
  if (rc == 0) rc = pt_tx_end(s, err);
  else pt_tx_abort(s);
  if (rc == 0) *id = cid;
  return rc;
}

/* ---- reads -------------------------------------------------------------- */

/* One row of PT_ST_RUNS, columns in the order the statement names them. */
static void pt_read_run(sqlite3_stmt *st, pt_store_run *row) {
  memset(row, 0, sizeof *row);
  pt_reader c = {st, 0};
  row->id = pt_get_i64(&c);
  row->trace_id = pt_get_i64(&c);
  row->policy_id = pt_get_i64(&c);
  pt_get_text(&c, row->trace, sizeof row->trace);
  pt_get_text(&c, row->trace_hash, sizeof row->trace_hash);
  pt_get_text(&c, row->policy, sizeof row->policy);
  pt_get_text(&c, row->mechanism, sizeof row->mechanism);
  pt_get_text(&c, row->params_json, sizeof row->params_json);
  pt_get_text(&c, row->gpu, sizeof row->gpu);
  pt_get_text(&c, row->engine_version, sizeof row->engine_version);
  pt_get_text(&c, row->git_revision, sizeof row->git_revision);
  pt_get_text(&c, row->created_at, sizeof row->created_at);
  row->capacity = pt_get_U(&c);
  pt_sim_result *r = &row->r;
#define PT_X(t, f, h) r->f = pt_get_##t(&c);
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#define PT_X(n) r->driver_calls[PT_DRV_##n] = pt_get_U(&c); r->driver_bytes[PT_DRV_##n] = pt_get_U(&c);
  PT_DRIVER_CALLS(PT_X)
#undef PT_X
  r->has_gpu = !pt_get_null(&c);   /* stored NULL when the run had none */
  double us = pt_get_D(&c);
  r->predicted_alloc_us = r->has_gpu ? us : 0.0;
  r->has_tlb = !pt_get_null(&c);
  us = pt_get_D(&c);
  r->predicted_translation_us = r->has_tlb ? us : 0.0;
  r->addresses_followed = (int)pt_get_i64(&c);
  r->seconds = pt_get_D(&c);
}

int pt_store_runs(pt_store *s, const char *trace, const char *policy, pt_err *err, pt_store_run **rows,
                  size_t *n) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = s->st[PT_ST_RUNS];
  pt_binder b = {st, 0, SQLITE_OK};
  if (trace) pt_bind_text(&b, trace); else pt_bind_null(&b);
  if (policy) pt_bind_text(&b, policy); else pt_bind_null(&b);
  int rc = b.rc == SQLITE_OK ? SQLITE_ROW : b.rc;
  pt_store_run *v = NULL;
  size_t cnt = 0, cap = 0;
  while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (cnt == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      pt_store_run *nv = ncap <= SIZE_MAX / sizeof *nv ? realloc(v, ncap * sizeof *nv) : NULL;
      if (!nv) {
        pt_done(st);
        free(v);
        return pt_err_set(err, PT_ENOMEM, "%s: listing runs: out of memory", s->path);
      }
      v = nv;
      cap = ncap;
    }
    pt_read_run(st, &v[cnt++]);
  }
  if (rc != SQLITE_DONE) {
    rc = pt_fail(s, rc, err, "listing runs");
    pt_done(st);
    free(v);
    return rc;
  }
  pt_done(st);
  *rows = v;
  *n = cnt;
  return 0;
}

static void pt_get_gain(pt_reader *c, pt_confirm_gain *g) {
  g->predicted = pt_get_D(c);
  g->measured = pt_get_D(c);
  g->lo = pt_get_D(c);
  g->hi = pt_get_D(c);
  g->base_median = pt_get_D(c);
  g->tuned_median = pt_get_D(c);
  char v[32];
  pt_get_text(c, v, sizeof v);
  int k = pt_confirm_verdict_parse(v);
  g->verdict = k < 0 ? pt_confirm_judge(g->predicted, g->lo, g->hi) : (pt_confirm_verdict)k;
}

/* One row of PT_ST_CONFIRMATIONS. */
static void pt_read_confirmation(sqlite3_stmt *st, pt_store_confirmation *row) {
  memset(row, 0, sizeof *row);
  pt_reader c = {st, 0};
  row->id = pt_get_i64(&c);
  row->trace_id = pt_get_i64(&c);
  pt_get_text(&c, row->trace, sizeof row->trace);
  row->baseline_run = pt_get_i64(&c);
  row->tuned_run = pt_get_i64(&c);
  pt_get_text(&c, row->baseline_policy, sizeof row->baseline_policy);
  pt_get_text(&c, row->baseline_mechanism, sizeof row->baseline_mechanism);
  pt_get_text(&c, row->tuned_policy, sizeof row->tuned_policy);
  pt_get_text(&c, row->tuned_mechanism, sizeof row->tuned_mechanism);
  pt_get_text(&c, row->baseline_allocator, sizeof row->baseline_allocator);
  pt_get_text(&c, row->tuned_allocator, sizeof row->tuned_allocator);
  pt_get_text(&c, row->time_metric, sizeof row->time_metric);
  pt_get_text(&c, row->hostname, sizeof row->hostname);
  pt_get_text(&c, row->gpu_name, sizeof row->gpu_name);
  pt_get_text(&c, row->started_at, sizeof row->started_at);
  pt_get_text(&c, row->measured_at, sizeof row->measured_at);
  size_t clen = (size_t)sqlite3_column_bytes(st, c.i);
  pt_get_text(&c, row->command, sizeof row->command);
  if (clen >= sizeof row->command) memcpy(row->command + sizeof row->command - 4, "...", 4); /* display only */
  row->runs_per_arm = (int)pt_get_i64(&c);
  row->resamples = (unsigned long)pt_get_i64(&c);
  row->seed = pt_get_U(&c);
  pt_get_gain(&c, &row->time);
  pt_get_gain(&c, &row->peak);
  row->baseline_predicted_us = pt_get_D(&c);
  row->tuned_predicted_us = pt_get_D(&c);
  row->baseline_predicted_peak = pt_get_U(&c);
  row->tuned_predicted_peak = pt_get_U(&c);
}

int pt_store_confirmations(pt_store *s, const char *trace, pt_err *err, pt_store_confirmation **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = s->st[PT_ST_CONFIRMATIONS];
  if (!st) return 0; /* a version-1 file read as it is: no confirmations */
  pt_binder b = {st, 0, SQLITE_OK};
  if (trace) pt_bind_text(&b, trace); else pt_bind_null(&b);
  int rc = b.rc == SQLITE_OK ? SQLITE_ROW : b.rc;
  pt_store_confirmation *v = NULL;
  size_t cnt = 0, cap = 0;
  while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (cnt == cap) {
      size_t ncap = cap ? 2 * cap : 8;
      pt_store_confirmation *nv = ncap <= SIZE_MAX / sizeof *nv ? realloc(v, ncap * sizeof *nv) : NULL;
      if (!nv) {
        pt_done(st);
        free(v);
        return pt_err_set(err, PT_ENOMEM, "%s: listing confirmations: out of memory", s->path);
      }
      v = nv;
      cap = ncap;
    }
    pt_read_confirmation(st, &v[cnt++]);
  }
  if (rc != SQLITE_DONE) {
    rc = pt_fail(s, rc, err, "listing confirmations");
    pt_done(st);
    free(v);
    return rc;
  }
  pt_done(st);
  *rows = v;
  *n = cnt;
  return 0;
}

int pt_store_timeline(pt_store *s, int64_t run_id, pt_err *err, pt_sim_point **pts, size_t *n) {
  *pts = NULL;
  *n = 0;
  sqlite3_stmt *st = s->st[PT_ST_RUN_EXISTS];
  int64_t found = 0;
  int rc = sqlite3_bind_int64(st, 1, run_id);
  if (rc != SQLITE_OK) {
    rc = pt_fail(s, rc, err, "reading timeline");
    pt_done(st);
    return rc;
  }
  if ((rc = pt_step_id(s, st, err, "reading timeline", &found)) < 0) return rc;
  if (!found) return pt_err_set(err, PT_ENOTFOUND, "%s: no run %lld", s->path, (long long)run_id);

  st = s->st[PT_ST_TIMELINE];
  rc = sqlite3_bind_int64(st, 1, run_id);
  if (rc == SQLITE_OK) rc = SQLITE_ROW;
  pt_sim_point *v = NULL;
  size_t cnt = 0, cap = 0;
  while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (cnt == cap) {
      size_t ncap = cap ? 2 * cap : 256;
      pt_sim_point *nv = ncap <= SIZE_MAX / sizeof *nv ? realloc(v, ncap * sizeof *nv) : NULL;
      if (!nv) {
        pt_done(st);
        free(v);
        return pt_err_set(err, PT_ENOMEM, "%s: reading timeline: out of memory", s->path);
      }
      v = nv;
      cap = ncap;
    }
    pt_reader c = {st, 0};
    v[cnt].event = pt_get_U(&c);
    v[cnt].time_us = pt_get_i64(&c);
    v[cnt].reserved = pt_get_U(&c);
    v[cnt].allocated = pt_get_U(&c);
    cnt++;
  }
  if (rc != SQLITE_DONE) {
    rc = pt_fail(s, rc, err, "reading timeline");
    pt_done(st);
    free(v);
    return rc;
  }
  pt_done(st);
  *pts = v;
  *n = cnt;
  return 0;
}

int pt_store_traces(pt_store *s, const char *ref, pt_err *err, pt_store_trace **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st = s->st[PT_ST_TRACES];
  size_t cap = 0;
  int rc = sqlite3_bind_text(st, 1, ref, -1, SQLITE_STATIC);
  while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      pt_store_trace *m = realloc(*rows, (cap = cap ? 2 * cap : 4) * sizeof *m);
      if (!m) {
        rc = SQLITE_NOMEM;
        break;
      }
      *rows = m;
    }
    pt_store_trace *t = &(*rows)[(*n)++];
    pt_reader c = {st, 0};
    t->id = sqlite3_column_int64(st, c.i++);
    pt_get_text(&c, t->name, sizeof t->name);
    pt_get_text(&c, t->hash, sizeof t->hash);
    pt_get_text(&c, t->source, sizeof t->source);
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK) {
    rc = rc == SQLITE_NOMEM ? pt_err_set(err, PT_ENOMEM, "%s: out of memory", s->path) : pt_fail(s, rc, err, "reading traces");
    free(*rows);
    *rows = NULL;
    *n = 0;
  }
  pt_done(st);
  return rc;
}

int pt_store_set_trace_settings(pt_store *s, int64_t trace_id, const char *settings, pt_err *err) {
  int rc = pt_writable(s, err);
  if (rc < 0 || !settings || !*settings) return rc < 0 ? rc : 0;
  sqlite3_stmt *st = s->st[PT_ST_TRACE_SETTINGS_SET];
  rc = sqlite3_bind_text(st, 1, settings, -1, SQLITE_TRANSIENT);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 2, trace_id);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  rc = rc == SQLITE_DONE ? 0 : pt_fail(s, rc, err, "storing a trace's settings");
  pt_done(st);
  return rc;
}

/* One text column of trace trace_id by statement st into buf (what names the column in errors); PT_ELIMIT
   when it does not fit and cut is 0. */
static int pt_trace_text(pt_store *s, sqlite3_stmt *st, int64_t trace_id, const char *what, int cut, pt_err *err,
                         char *buf, size_t n) {
  if (n) buf[0] = 0;
  int rc = sqlite3_bind_int64(st, 1, trace_id);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    pt_done(st);
    return pt_err_set(err, PT_ENOTFOUND, "%s: no trace %lld", s->path, (long long)trace_id);
  }
  if (rc != SQLITE_ROW) {
    rc = pt_fail(s, rc, err, what);
    pt_done(st);
    return rc;
  }
  pt_reader c = {st, 0};
  size_t len = (size_t)sqlite3_column_bytes(st, 0);
  pt_get_text(&c, buf, n);
  pt_done(st);
  if (len >= n && !cut)
    return pt_err_set(err, PT_ELIMIT, "%s: trace %lld: its source is longer than %zu bytes", s->path,
                      (long long)trace_id, n - 1);
  return 0;
}

int pt_store_trace_settings(pt_store *s, int64_t trace_id, pt_err *err, char *buf, size_t n) {
  if (!s->st[PT_ST_TRACE_SETTINGS]) { /* a file of schema < 4 read as it is: none stored */
    if (n) buf[0] = 0;
    return 0;
  }
  return pt_trace_text(s, s->st[PT_ST_TRACE_SETTINGS], trace_id, "reading a trace's settings", 1, err, buf, n);
}

int pt_store_trace_source(pt_store *s, int64_t trace_id, pt_err *err, char *buf, size_t n) {
  return pt_trace_text(s, s->st[PT_ST_TRACE_SOURCE], trace_id, "reading a trace's source", 0, err, buf, n);
}

int pt_store_policy_text(pt_store *s, int64_t policy_id, pt_err *err, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  sqlite3_stmt *st = s->st[PT_ST_POLICY_TEXT];
  int rc = sqlite3_bind_int64(st, 1, policy_id);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    pt_done(st);
    return pt_err_set(err, PT_ENOTFOUND, "%s: no policy %lld", s->path, (long long)policy_id);
  }
  if (rc != SQLITE_ROW) {
    rc = pt_fail(s, rc, err, "reading a policy's text");
    pt_done(st);
    return rc;
  }
  const char *v = (const char *)sqlite3_column_blob(st, 0);
  size_t n = (size_t)sqlite3_column_bytes(st, 0);
  char *t = malloc(n + 1);
  if (t) {
    if (n) memcpy(t, v, n);
    t[n] = 0;
  }
  pt_done(st);
  if (!t) return pt_err_set(err, PT_ENOMEM, "%s: reading a policy's text: out of memory", s->path);
  *text = t;
  *len = n;
  return 0;
}
