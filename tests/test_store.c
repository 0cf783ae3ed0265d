/*
 * test_store.c — the SQLite store: schema and migrations, idempotent puts,
 * run round trips (every stats field, through the X-macros), the views on a
 * hand-computed set of runs, batches, a reader beside a writer, and the files
 * it must refuse untouched (corrupt, newer, another program's, read-only).
 *
 * The tests read the database with the sqlite3 API directly, as a user of
 * the sqlite3 shell would, so they check the schema docs/store.md promises.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"
#include "testutil.h"


#define NOBODY 65534

/* A fresh path that stays valid (pt_test_tmp reuses its buffer). */
static char *tmp_path(const char *suffix) {
  char *p = strdup(pt_test_tmp(suffix));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  return p;
}

static void rm_db(const char *path) {
  char buf[4200];
  const char *ext[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(buf, sizeof buf, "%s%s", path, ext[i]);
    (void)unlink(buf);
  }
}

static int exists(const char *path, const char *suffix) {
  char buf[4200];
  snprintf(buf, sizeof buf, "%s%s", path, suffix);
  return access(buf, F_OK) == 0;
}

/* The whole file, malloc'd; *n its size. */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 8192;
      unsigned char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  fclose(f);
  *n = len;
  return buf;
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* First column of the first row of sql on a raw connection (-1 on error). */
static long long raw_int(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  long long v = -1;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return v;
}

static int raw_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  return rc;
}

static pt_store *open_new(const char *path) {
  pt_store *s = NULL;
  pt_err err = {{0}};
  rm_db(path);
  int rc = pt_store_open(path, 0, &err, &s);
  if (rc != 0) fprintf(stderr, "open: %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  return s;
}

/* A result whose every field differs: stats from the X-macro get k, k+1, ... */
static void fill_result(pt_sim_result *r, uint64_t k, pt_sim_point *tl, size_t ntl) {
  memset(r, 0, sizeof *r);
  uint64_t v = k;
#define PT_U(f) r->f = v++;
#define PT_D(f) r->f = (double)(v++) + 0.25;
#define PT_X(t, f, h) PT_##t(f)
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#undef PT_U
#undef PT_D
  for (int i = 0; i < PT_DRV_NCALLS; i++) {
    r->driver_calls[i] = v++;
    r->driver_bytes[i] = (v++) << 21;
  }
  r->has_gpu = r->has_tlb = 1;
  r->predicted_alloc_us = 1000.5 + (double)k;
  r->predicted_translation_us = 7.125;
  r->addresses_followed = 1;
  r->seconds = 0.5;
  r->timeline = tl;
  r->ntimeline = ntl;
}

static int64_t put_trace(pt_store *s, const char *name, const char *hash) {
  pt_trace_stats st;
  memset(&st, 0, sizeof st);
  uint64_t v = 10;
#define PT_X(f, h) st.f = v++;
  PT_TRACE_STATS_FIELDS(PT_X)
#undef PT_X
  pt_err err;
  int64_t id = 0;
  CU_ASSERT_EQUAL(pt_store_put_trace(s, name, "test", hash, &st, &err, &id), 0);
  return id;
}

static int64_t put_policy(pt_store *s, const char *name, const char *text) {
  pt_err err;
  int64_t id = 0;
  CU_ASSERT_EQUAL(pt_store_put_policy(s, name, "caching", text, strlen(text), &err, &id), 0);
  return id;
}

/* ---- schema ---- */

static void test_schema(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), PT_STORE_SCHEMA_VERSION);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA application_id"), PT_STORE_APPLICATION_ID);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                "('traces','policies','runs','results','timelines','calibrations',"
                                "'measurements','confirmations','confirm_runs')"), 9);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name IN "
                                "('run_summary','best_per_trace','pareto')"), 3);
  /* WAL is persistent: the header says so */
  CU_ASSERT_EQUAL(raw_int(path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
  /* one column per stats field and per driver call */
  int ncols = 0;
#define PT_X(t, f, h) ncols++;
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pragma_table_info('results')"),
                  1 + ncols + 2 * PT_DRV_NCALLS + 4);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pragma_table_info('results') WHERE name IN "
                                "('peak_reserved_bytes','fragmentation','calls_mem_map','bytes_malloc',"
                                "'predicted_alloc_us','predicted_translation_us')"), 6);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pragma_table_info('traces') WHERE name IN "
                                "('content_hash','duration_us','observed_peak_reserved_bytes')"), 3);
  /* the views run */
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM run_summary"), 0);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM best_per_trace"), 0);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pareto"), 0);
  /* opening again is a no-op */
  pt_err err;
  CU_ASSERT_EQUAL(pt_store_open(path, 0, &err, &s), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(pt_store_open(path, PT_STORE_READONLY, &err, &s), 0);
  pt_store_close(s);
  rm_db(path);
  free(path);
}

static void test_migrate_empty_file(void) {
  char *path = tmp_path(".db");
  rm_db(path);
  CU_ASSERT_EQUAL_FATAL(write_file(path, "", 0), 0);   /* version 0: a 0-byte file */
  pt_store *s = NULL;
  pt_err err;
  CU_ASSERT_EQUAL(pt_store_open(path, PT_STORE_READONLY, &err, &s), PT_EFORMAT);  /* cannot migrate */
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, 0, &err, &s), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), PT_STORE_SCHEMA_VERSION);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'pareto'"), 1);
  rm_db(path);
  free(path);
}

/* A database from a build that knew one stats field less gains the column. */
static void test_migrate_new_column(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  pt_store_close(s);
  CU_ASSERT_EQUAL_FATAL(raw_exec(path, "ALTER TABLE results DROP COLUMN collections"), SQLITE_OK);
  pt_err err;
  CU_ASSERT_EQUAL(pt_store_open(path, PT_STORE_READONLY, &err, &s), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "open it once read-write"));
  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, 0, &err, &s), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'collections'"),
                  1);
  rm_db(path);
  free(path);
}

static void test_newer_version_refused(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  pt_store_close(s);
  CU_ASSERT_EQUAL_FATAL(raw_exec(path, "PRAGMA user_version = 999"), SQLITE_OK);
  size_t n0 = 0, n1 = 0;
  unsigned char *before = slurp(path, &n0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(before);
  pt_err err;
  for (int flags = 0; flags <= PT_STORE_READONLY; flags++) {
    s = NULL;
    CU_ASSERT_EQUAL(pt_store_open(path, flags, &err, &s), PT_EFORMAT);
    CU_ASSERT_PTR_NULL(s);
    char want[4400];
    snprintf(want, sizeof want,
             "%s: written by a newer pagetune (schema version 999 > %d); upgrade pagetune", path,
             PT_STORE_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(err.msg, want);
  }
  unsigned char *after = slurp(path, &n1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(after);
  CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), 999);
  free(before);
  free(after);
  rm_db(path);
  free(path);
}

static void test_foreign_database_refused(void) {
  char *path = tmp_path(".db");
  rm_db(path);
  sqlite3 *db = NULL;
  CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
  CU_ASSERT_EQUAL(sqlite3_exec(db, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine')", NULL, NULL,
                               NULL), SQLITE_OK);
  sqlite3_close(db);
  pt_store *s = NULL;
  pt_err err;
  CU_ASSERT_EQUAL(pt_store_open(path, 0, &err, &s), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a pagetune database"));
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM sqlite_master"), 1);  /* nothing added */
  CU_ASSERT_EQUAL(raw_exec(path, "PRAGMA application_id = 42"), SQLITE_OK);
  CU_ASSERT_EQUAL(pt_store_open(path, 0, &err, &s), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a pagetune database (application_id 42)"));
  rm_db(path);
  free(path);
}

/* ---- puts ---- */

static void test_idempotent_puts(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t a = put_trace(s, "decode", "aaaa1111");
  int64_t b = put_trace(s, "decode-again", "aaaa1111");
  int64_t c = put_trace(s, "other", "bbbb2222");
  CU_ASSERT(a > 0);
  CU_ASSERT_EQUAL(a, b);
  CU_ASSERT(c > 0 && c != a);
  int64_t p = put_policy(s, "native", "abc");
  int64_t q = put_policy(s, "native-copy", "abc");
  int64_t r = put_policy(s, "native", "abd");
  CU_ASSERT(p > 0);
  CU_ASSERT_EQUAL(p, q);
  CU_ASSERT(r > 0 && r != p);
  pt_err err;
  int64_t id;
  CU_ASSERT_EQUAL(pt_store_put_trace(s, "x", NULL, "", NULL, &err, &id), PT_EUSAGE);
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CU_ASSERT_EQUAL(pt_store_put_trace(s, longname, NULL, "cccc", NULL, &err, &id), PT_ELIMIT);
  /* stats NULL: the columns stay NULL */
  CU_ASSERT_EQUAL(pt_store_put_trace(s, "nostats", NULL, "dddd", NULL, &err, &id), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM traces"), 3);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM policies"), 2);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT name = 'decode' FROM traces WHERE content_hash = 'aaaa1111'"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT events FROM traces WHERE content_hash = 'aaaa1111'"), 10);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT duration_us IS NULL FROM traces WHERE name = 'nostats'"), 1);
  /* text_hash is SHA-256 (FIPS 180-2 test vector for "abc") */
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM policies WHERE text_hash = "
                                "'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'"), 1);
  rm_db(path);
  free(path);
}

/* SHA-256 on inputs that cross the one- and two-block padding boundaries. */
static void test_policy_hash_vectors(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  const char *t448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  /* 56 bytes */
  char mil[1000];
  memset(mil, 'a', sizeof mil);
  pt_err err;
  int64_t id;
  CU_ASSERT_EQUAL(pt_store_put_policy(s, "empty", "direct", "", 0, &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_put_policy(s, "448", "direct", t448, strlen(t448), &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_put_policy(s, "a1000", "direct", mil, sizeof mil, &err, &id), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM policies WHERE text_hash IN ("
                                "'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',"
                                "'248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',"
                                "'41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3')"), 3);
  rm_db(path);
  free(path);
}

static void check_same_result(const pt_sim_result *a, const pt_sim_result *b) {
#define PT_U(f) CU_ASSERT_EQUAL(a->f, b->f);
#define PT_D(f) CU_ASSERT((isnan(a->f) && isnan(b->f)) || a->f == b->f);
#define PT_X(t, f, h) PT_##t(f)
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
#undef PT_U
#undef PT_D
  for (int i = 0; i < PT_DRV_NCALLS; i++) {
    CU_ASSERT_EQUAL(a->driver_calls[i], b->driver_calls[i]);
    CU_ASSERT_EQUAL(a->driver_bytes[i], b->driver_bytes[i]);
  }
  CU_ASSERT_EQUAL(a->has_gpu, b->has_gpu);
  CU_ASSERT_EQUAL(a->has_tlb, b->has_tlb);
  CU_ASSERT(a->predicted_alloc_us == b->predicted_alloc_us);
  CU_ASSERT(a->predicted_translation_us == b->predicted_translation_us);
  CU_ASSERT_EQUAL(a->addresses_followed, b->addresses_followed);
  CU_ASSERT(a->seconds == b->seconds);
}

static void test_run_round_trip(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t t = put_trace(s, "decode", "0123456789abcdef");
  int64_t p = put_policy(s, "native", "return {name = 'native'}");
  pt_sim_point tl[5] = {{0, -3, 0, 0}, {10, 100, 2097152, 512}, {20, 250, 4194304, 1 << 20},
                        {30, 400, UINT64_MAX - 1, 4096}, {40, 1000, 0, 0}};
  pt_sim_result r;
  fill_result(&r, 7, tl, 5);
  r.peak_reserved_bytes = UINT64_MAX - 3;   /* above 2^63: stored by bit pattern */
  pt_store_run_key k = {t, p, "{\"max_split_size_mb\":20}", 80ull << 30, "h200", "0.1.0"};
  pt_err err;
  int64_t id = 0;
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &k, "abc123", &r, &err, &id), 0);
  CU_ASSERT(id > 0);
  /* a second run without GPU figures, and a NaN stats double */
  pt_sim_result r2;
  fill_result(&r2, 100, NULL, 0);
  r2.has_gpu = r2.has_tlb = 0;
  r2.predicted_alloc_us = r2.predicted_translation_us = 0;
  r2.fragmentation = NAN;
  pt_store_run_key k2 = {t, p, NULL, 0, NULL, NULL};
  int64_t id2 = 0;
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &k2, NULL, &r2, &err, &id2), 0);
  CU_ASSERT(id2 > id);

  pt_store_run *rows = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL_FATAL(pt_store_runs(s, NULL, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL_FATAL(n, 2);
  CU_ASSERT_EQUAL(rows[0].id, id);
  CU_ASSERT_EQUAL(rows[0].trace_id, t);
  CU_ASSERT_EQUAL(rows[0].policy_id, p);
  CU_ASSERT_STRING_EQUAL(rows[0].trace, "decode");
  CU_ASSERT_STRING_EQUAL(rows[0].trace_hash, "0123456789abcdef");
  CU_ASSERT_STRING_EQUAL(rows[0].policy, "native");
  CU_ASSERT_STRING_EQUAL(rows[0].mechanism, "caching");
  CU_ASSERT_STRING_EQUAL(rows[0].params_json, "{\"max_split_size_mb\":20}");
  CU_ASSERT_STRING_EQUAL(rows[0].gpu, "h200");
  CU_ASSERT_STRING_EQUAL(rows[0].engine_version, "0.1.0");
  CU_ASSERT_STRING_EQUAL(rows[0].git_revision, "abc123");
  CU_ASSERT_EQUAL(strlen(rows[0].created_at), 20);
  CU_ASSERT_EQUAL(rows[0].capacity, 80ull << 30);
  CU_ASSERT_PTR_NULL(rows[0].r.timeline);
  check_same_result(&r, &rows[0].r);
  CU_ASSERT_STRING_EQUAL(rows[1].params_json, "{}");
  CU_ASSERT_STRING_EQUAL(rows[1].gpu, "");
  check_same_result(&r2, &rows[1].r);
  free(rows);

  /* filters: trace name, hash prefix (4+), policy name; none match */
  CU_ASSERT_EQUAL(pt_store_runs(s, "decode", "native", &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 2);
  free(rows);
  CU_ASSERT_EQUAL(pt_store_runs(s, "0123", NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 2);
  free(rows);
  CU_ASSERT_EQUAL(pt_store_runs(s, "012", NULL, &err, &rows, &n), 0);  /* too short for a prefix */
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_PTR_NULL(rows);
  CU_ASSERT_EQUAL(pt_store_runs(s, NULL, "other", &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(pt_store_runs(s, "'; DROP TABLE runs; --", NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 0);

  pt_sim_point *pts = NULL;
  CU_ASSERT_EQUAL_FATAL(pt_store_timeline(s, id, &err, &pts, &n), 0);
  CU_ASSERT_EQUAL_FATAL(n, 5);
  for (size_t i = 0; i < 5; i++) {
    CU_ASSERT_EQUAL(pts[i].event, tl[i].event);
    CU_ASSERT_EQUAL(pts[i].time_us, tl[i].time_us);
    CU_ASSERT_EQUAL(pts[i].reserved, tl[i].reserved);
    CU_ASSERT_EQUAL(pts[i].allocated, tl[i].allocated);
  }
  free(pts);
  CU_ASSERT_EQUAL(pt_store_timeline(s, id2, &err, &pts, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(pt_store_timeline(s, 9999, &err, &pts, &n), PT_ENOTFOUND);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 2);   /* the injection above was bound */
  CU_ASSERT_EQUAL(raw_int(path, "SELECT predicted_alloc_us IS NULL FROM results WHERE run_id = 2"), 1);
  rm_db(path);
  free(path);
}

static void test_find_run_skip(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t t = put_trace(s, "decode", "feedface");
  int64_t p = put_policy(s, "native", "return {}");
  pt_store_run_key k = {t, p, "{\"a\":1}", 0, "h200", "0.1.0"};
  pt_err err;
  int64_t found = -1, id = 0;
  CU_ASSERT_EQUAL(pt_store_find_run(s, &k, &err, &found), 0);
  CU_ASSERT_EQUAL(found, 0);
  pt_sim_result r;
  fill_result(&r, 1, NULL, 0);
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &k, "rev", &r, &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_find_run(s, &k, &err, &found), 0);
  CU_ASSERT_EQUAL(found, id);
  /* each part of the key matters */
  pt_store_run_key other[] = {{t, p, "{\"a\":2}", 0, "h200", "0.1.0"}, {t, p, "{\"a\":1}", 1, "h200", "0.1.0"},
                              {t, p, "{\"a\":1}", 0, "a100", "0.1.0"}, {t, p, "{\"a\":1}", 0, "h200", "0.2.0"},
                              {t, p + 1, "{\"a\":1}", 0, "h200", "0.1.0"}};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    CU_ASSERT_EQUAL(pt_store_find_run(s, &other[i], &err, &found), 0);
    CU_ASSERT_EQUAL(found, 0);
  }
  /* NULL strings are the same key as their defaults */
  pt_store_run_key kn = {t, p, NULL, 0, NULL, NULL}, kd = {t, p, "{}", 0, "", ""};
  CU_ASSERT_EQUAL(pt_store_put_run(s, &kn, NULL, &r, &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_find_run(s, &kd, &err, &found), 0);
  CU_ASSERT_EQUAL(found, id);
  /* too long a key is refused, not truncated */
  char big[1100];
  memset(big, ' ', sizeof big - 1);
  big[sizeof big - 1] = 0;
  pt_store_run_key kb = {t, p, big, 0, "", ""};
  CU_ASSERT_EQUAL(pt_store_put_run(s, &kb, NULL, &r, &err, &id), PT_ELIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "params_json"));
  /* a trace that is not stored: the foreign key refuses */
  pt_store_run_key kf = {t + 100, p, NULL, 0, NULL, NULL};
  CU_ASSERT_EQUAL(pt_store_put_run(s, &kf, NULL, &r, &err, &id), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "FOREIGN KEY"));
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 2);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM results"), 2);
  rm_db(path);
  free(path);
}

static void test_unique_key(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t t = put_trace(s, "decode", "cafe0001");
  int64_t p = put_policy(s, "native", "return {}");
  pt_sim_point tl[3] = {{0, 0, 1, 1}, {1, 1, 2, 2}, {2, 2, 3, 3}};
  pt_sim_result r;
  fill_result(&r, 1, tl, 3);
  pt_store_run_key k = {t, p, "{}", 0, "", "0.1.0"};
  pt_err err;
  int64_t a = 0, b = 0;
  CU_ASSERT_EQUAL(pt_store_put_run(s, &k, NULL, &r, &err, &a), 0);
  fill_result(&r, 50, tl, 2);   /* same key, other figures: the first run stays */
  CU_ASSERT_EQUAL(pt_store_put_run(s, &k, NULL, &r, &err, &b), 0);
  CU_ASSERT_EQUAL(a, b);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM results"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM timelines"), 3);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT events FROM results"), 1);
  /* the index itself refuses a duplicate, whoever writes it */
  CU_ASSERT_EQUAL(raw_exec(path, "INSERT INTO runs (trace_id, policy_id, params_json, capacity, gpu, "
                                 "engine_version) SELECT trace_id, policy_id, params_json, capacity, gpu, "
                                 "engine_version FROM runs"), SQLITE_CONSTRAINT);
  rm_db(path);
  free(path);
}

/* ---- views: four runs on one trace, computed by hand ---- */

static void test_views(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t t = put_trace(s, "decode", "aaaa0000");
  int64_t t2 = put_trace(s, "train", "bbbb0000");
  int64_t p = put_policy(s, "native", "return {}");
  /* (predicted_alloc_us, peak_reserved_bytes):
       A (100, 400)  fastest                  -> best time, on the front
       B (200, 300)  smallest                 -> best memory, on the front
       C (150, 350)  neither beats it         -> on the front
       D (250, 350)  B is faster and smaller  -> dominated
       E (50, 100)   ran out of memory        -> in neither view (schema 3), though it beats them all
     and on a second trace one run without GPU figures: best memory only, no front. */
  struct { const char *params; double us; uint64_t peak; uint64_t ooms; } v[] = {
    {"{\"r\":\"A\"}", 100, 400, 0}, {"{\"r\":\"B\"}", 200, 300, 0}, {"{\"r\":\"C\"}", 150, 350, 0},
    {"{\"r\":\"D\"}", 250, 350, 0}, {"{\"r\":\"E\"}", 50, 100, 1}};
  int64_t ids[5];
  pt_err err;
  for (int i = 0; i < 5; i++) {
    pt_sim_result r;
    fill_result(&r, 1, NULL, 0);
    r.predicted_alloc_us = v[i].us;
    r.peak_reserved_bytes = v[i].peak;
    r.ooms = v[i].ooms;
    pt_store_run_key k = {t, p, v[i].params, 0, "h200", "0.1.0"};
    CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &k, NULL, &r, &err, &ids[i]), 0);
  }
  pt_sim_result r;
  fill_result(&r, 1, NULL, 0);
  r.has_gpu = 0;
  r.peak_reserved_bytes = 5;
  r.ooms = 0;
  pt_store_run_key k = {t2, p, NULL, 0, NULL, "0.1.0"};
  int64_t nogpu;
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &k, NULL, &r, &err, &nogpu), 0);
  pt_store_close(s);

  char sql[512];
  snprintf(sql, sizeof sql, "SELECT run_id FROM best_per_trace WHERE objective = 'memory' AND trace_id = %lld",
           (long long)t);
  CU_ASSERT_EQUAL(raw_int(path, sql), ids[1]);
  snprintf(sql, sizeof sql, "SELECT run_id FROM best_per_trace WHERE objective = 'time' AND trace_id = %lld",
           (long long)t);
  CU_ASSERT_EQUAL(raw_int(path, sql), ids[0]);
  snprintf(sql, sizeof sql, "SELECT run_id FROM best_per_trace WHERE objective = 'memory' AND trace = 'train'");
  CU_ASSERT_EQUAL(raw_int(path, sql), nogpu);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM best_per_trace"), 3);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pareto"), 3);
  snprintf(sql, sizeof sql, "SELECT count(*) FROM pareto WHERE run_id IN (%lld, %lld, %lld)", (long long)ids[0],
           (long long)ids[1], (long long)ids[2]);
  CU_ASSERT_EQUAL(raw_int(path, sql), 3);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM run_summary"), 6);
  snprintf(sql, sizeof sql, "SELECT driver_calls FROM run_summary WHERE run_id = %lld", (long long)ids[0]);
  long long calls = 0;
  for (int i = 0; i < PT_DRV_NCALLS; i++) calls += (long long)r.driver_calls[i];
  CU_ASSERT_EQUAL(raw_int(path, sql), calls);
  rm_db(path);
  free(path);
}

/* ---- batches and a reader beside a writer ---- */

static void test_batch_and_reader(void) {
  char *path = tmp_path(".db");
  pt_store *w = open_new(path);
  pt_store *rd = NULL;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, PT_STORE_READONLY, &err, &rd), 0);
  int64_t t = put_trace(w, "decode", "abcd0001");
  int64_t p = put_policy(w, "native", "return {}");
  pt_sim_result r;
  pt_sim_point tl[2] = {{0, 0, 1, 1}, {1, 1, 2, 2}};
  fill_result(&r, 1, tl, 2);
  int64_t id;

  CU_ASSERT_EQUAL(pt_store_commit(w, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL_FATAL(pt_store_begin(w, &err), 0);
  CU_ASSERT_EQUAL(pt_store_begin(w, &err), PT_EUSAGE);
  pt_store_run_key k1 = {t, p, "{\"i\":1}", 0, "", ""}, k2 = {t, p, "{\"i\":2}", 0, "", ""};
  CU_ASSERT_EQUAL(pt_store_put_run(w, &k1, NULL, &r, &err, &id), 0);
  /* a failed put inside the batch undoes only itself */
  pt_store_run_key bad = {t + 50, p, NULL, 0, NULL, NULL};
  CU_ASSERT(pt_store_put_run(w, &bad, NULL, &r, &err, &id) < 0);
  CU_ASSERT_EQUAL(pt_store_put_run(w, &k2, NULL, &r, &err, &id), 0);
  /* the reader does not wait for the writer, and sees the last commit */
  pt_store_run *rows = NULL;
  size_t n = 99;
  CU_ASSERT_EQUAL(pt_store_runs(rd, NULL, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(pt_store_rollback(w, &err), 0);
  CU_ASSERT_EQUAL(pt_store_find_run(w, &k1, &err, &id), 0);
  CU_ASSERT_EQUAL(id, 0);

  CU_ASSERT_EQUAL_FATAL(pt_store_begin(w, &err), 0);
  CU_ASSERT_EQUAL(pt_store_put_run(w, &k1, NULL, &r, &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_put_run(w, &k2, NULL, &r, &err, &id), 0);
  CU_ASSERT_EQUAL(pt_store_commit(w, &err), 0);
  CU_ASSERT_EQUAL(pt_store_runs(rd, NULL, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 2);
  free(rows);
  /* the read-only handle refuses writes with a clear line */
  CU_ASSERT_EQUAL(pt_store_put_trace(rd, "x", NULL, "ffff", NULL, &err, &id), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "opened read-only"));
  /* closing with a batch open keeps nothing of it */
  CU_ASSERT_EQUAL_FATAL(pt_store_begin(w, &err), 0);
  pt_store_run_key k3 = {t, p, "{\"i\":3}", 0, "", ""};
  CU_ASSERT_EQUAL(pt_store_put_run(w, &k3, NULL, &r, &err, &id), 0);
  pt_store_close(w);
  pt_store_close(rd);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 2);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM timelines"), 4);
  rm_db(path);
  free(path);
}

static void test_calibration_measurement(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  pt_err err;
  int64_t id = 0, m = 0;
  CU_ASSERT_EQUAL(pt_store_put_calibration(s, "h200", "mem_create", 2 << 20, 11.0, "bench/vmm", &err, &id), 0);
  CU_ASSERT(id > 0);
  CU_ASSERT_EQUAL(pt_store_put_measurement(s, 0, "replay_us", 1234.5, "us", "gpu-1", NULL, &err, &m), 0);
  CU_ASSERT(m > 0);
  CU_ASSERT_EQUAL(pt_store_put_measurement(s, 77, "replay_us", 1.0, "us", NULL, NULL, &err, &m), PT_EUSAGE);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT bytes FROM calibrations WHERE gpu = 'h200' AND call = 'mem_create'"),
                  2 << 20);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM measurements WHERE run_id IS NULL"), 1);
  rm_db(path);
  free(path);
}

/* ---- files that must be refused untouched ---- */

static void check_refused_untouched(const char *path, const char *want) {
  size_t n0 = 0, n1 = 0;
  unsigned char *before = slurp(path, &n0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(before);
  pt_err err;
  for (int flags = 0; flags <= PT_STORE_READONLY; flags++) {
    pt_store *s = NULL;
    CU_ASSERT_EQUAL(pt_store_open(path, flags, &err, &s), PT_EFORMAT);
    CU_ASSERT_PTR_NULL(s);
    char line[4400];
    snprintf(line, sizeof line, "%s: %s", path, want);
    CU_ASSERT_STRING_EQUAL(err.msg, line);
  }
  unsigned char *after = slurp(path, &n1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(after);
  CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
  CU_ASSERT(!exists(path, "-wal") && !exists(path, "-shm") && !exists(path, "-journal"));
  free(before);
  free(after);
}

static void test_corrupt_refused(void) {
  char *path = tmp_path(".db");
  rm_db(path);
  unsigned char junk[4096];
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < sizeof junk; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    junk[i] = (unsigned char)x;
  }
  CU_ASSERT_EQUAL_FATAL(write_file(path, junk, sizeof junk), 0);
  check_refused_untouched(path, "not a pagetune database (file is not a database)");
  const char *text = "# my notes\nthis is a text file, not a database\n";
  CU_ASSERT_EQUAL_FATAL(write_file(path, text, strlen(text)), 0);
  check_refused_untouched(path, "not a pagetune database (file is not a database)");
  rm_db(path);
  free(path);
}

/*
 * The open as a user file permissions apply to: root ignores them, so as
 * root a child drops to nobody first.  Returns the open's code (1: skipped,
 * the path is not reachable as nobody) and its message in msg.
 */
static int open_unprivileged(const char *path, char *msg, size_t size) {
  pt_err err = {{0}};
  if (geteuid() != 0) {
    pt_store *s = NULL;
    int rc = pt_store_open(path, 0, &err, &s);
    pt_store_close(s);
    snprintf(msg, size, "%s", err.msg);
    return rc;
  }
  int fd[2];
  if (pipe(fd) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return 1;
  }
  if (pid == 0) {
    close(fd[0]);
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0) _exit(1);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (access(slash ? dir : ".", X_OK) != 0) _exit(1);
    pt_store *s = NULL;
    int rc = pt_store_open(path, 0, &err, &s);
    pt_store_close(s);
    ssize_t w = write(fd[1], err.msg, strlen(err.msg));
    (void)w;
    _exit(rc < 0 ? 100 - rc : 0);   /* 101.. for PT_E*, 0 for success */
  }
  close(fd[1]);
  ssize_t got = read(fd[0], msg, size - 1);
  msg[got > 0 ? got : 0] = 0;
  close(fd[0]);
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 1;
  int code = WEXITSTATUS(st);
  return code == 0 ? 0 : code == 1 ? 1 : 100 - code;
}

static void test_readonly_refused(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  put_trace(s, "decode", "aaaa9999");
  pt_store_close(s);
  CU_ASSERT_EQUAL_FATAL(chmod(path, 0444), 0);
  char msg[PT_ERRMSG_MAX];
  int rc = open_unprivileged(path, msg, sizeof msg);
  if (rc == 1) {
    fprintf(stderr, "(read-only file: skipped, %s not reachable as nobody) ", path);
  } else {
    CU_ASSERT_EQUAL(rc, PT_EIO);
    CU_ASSERT(strncmp(msg, path, strlen(path)) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "read-only"));
    CU_ASSERT_PTR_NULL(strchr(msg, '\n'));
  }
  /* read-only handles still read it */
  pt_err err;
  CU_ASSERT_EQUAL(pt_store_open(path, PT_STORE_READONLY, &err, &s), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(chmod(path, 0644), 0);
  rm_db(path);
  free(path);

  /* a read-only directory: a new database cannot be made there, an existing one not written */
  char *dir = tmp_path(".d");
  CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
  char db[4200], fresh[4200];
  snprintf(db, sizeof db, "%s/pagetune.db", dir);
  snprintf(fresh, sizeof fresh, "%s/new.db", dir);
  CU_ASSERT_EQUAL_FATAL(pt_store_open(db, 0, &err, &s), 0);
  pt_store_close(s);
  if (geteuid() == 0) CU_ASSERT_EQUAL(chown(db, NOBODY, NOBODY), 0);
  CU_ASSERT_EQUAL_FATAL(chmod(dir, 0555), 0);
  rc = open_unprivileged(fresh, msg, sizeof msg);
  if (rc != 1) {
    CU_ASSERT_EQUAL(rc, PT_EIO);
    CU_ASSERT(strncmp(msg, fresh, strlen(fresh)) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Permission denied"));
  }
  rc = open_unprivileged(db, msg, sizeof msg);
  if (rc != 1) {
    CU_ASSERT_EQUAL(rc, PT_EIO);
    CU_ASSERT(strncmp(msg, db, strlen(db)) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "is not writable"));
  }
  CU_ASSERT_EQUAL(access(fresh, F_OK), -1);
  CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
  rm_db(db);
  rmdir(dir);
  free(dir);
}

/* ---- confirmations (schema version 2) ---- */

static pt_store_confirm sample_confirm(int64_t base, int64_t tuned) {
  pt_store_confirm c = {base, tuned, "[\"python3\",\"train.py\"]", 2, "pytorch", "pagetune", "{}",
                        "{\"PAGETUNE_CONFIG\":\"/tmp/x/pagetune.json\"}", "median_step_s",
                        {0.001, 0.02, -0.01, 0.05, 0.5, 0.49, PT_VERDICT_NOISE},
                        {0.4, 0.41, 0.40, 0.42, 1e9, 5.9e8, PT_VERDICT_CONFIRMED},
                        10000, 1, "gpuhost", "NVIDIA H200", "0.1.0", "abc", "2026-12-01T00:00:00Z"};
  return c;
}

static void sample_runs(pt_confirm_run *runs, int64_t base, int64_t tuned, double *steps) {
  for (int i = 0; i < 4; i++) {
    memset(&runs[i], 0, sizeof runs[i]);
    runs[i].seq = i + 1;
    runs[i].arm = i % 2 ? PT_CONFIRM_TUNED : PT_CONFIRM_BASELINE;
    runs[i].run_id = i % 2 ? tuned : base;
    runs[i].wall_s = 10 + i;
    runs[i].median_step_s = i == 3 ? NAN : 0.5;
    runs[i].m.processes = i == 3 ? 0 : 1;
    snprintf(runs[i].m.allocator, sizeof runs[i].m.allocator, "%s", i == 3 ? "" : i % 2 ? "pagetune" : "pytorch");
    runs[i].m.has_peak = i != 3;
    runs[i].m.peak_reserved_bytes = (uint64_t)(i + 1) << 30;
    runs[i].m.steps_s = i == 3 ? NULL : steps;
    runs[i].m.nsteps = i == 3 ? 0 : 3;
  }
}

static void test_confirmations(void) {
  char *path = tmp_path(".db");
  pt_store *s = open_new(path);
  int64_t t = put_trace(s, "train", "aaaa1111"), t2 = put_trace(s, "other", "bbbb2222");
  int64_t p = put_policy(s, "pytorch_native", "native"), q = put_policy(s, "stitch", "stitch");
  pt_sim_result r;
  fill_result(&r, 1, NULL, 0);
  pt_err err;
  int64_t base, tuned, elsewhere, cid;
  pt_store_run_key kb = {t, p, "{}", 0, "h200", "0.1.0"}, kt = {t, q, "{}", 0, "h200", "0.1.0"},
                   ke = {t2, q, "{}", 0, "h200", "0.1.0"};
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &kb, NULL, &r, &err, &base), 0);
  r.peak_reserved_bytes = 123456;
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &kt, NULL, &r, &err, &tuned), 0);
  CU_ASSERT_EQUAL_FATAL(pt_store_put_run(s, &ke, NULL, &r, &err, &elsewhere), 0);

  pt_confirm_run runs[4];
  double steps[] = {0.5, 0.25, 0.75};
  sample_runs(runs, base, tuned, steps);
  pt_store_confirm c = sample_confirm(base, tuned);
  CU_ASSERT_EQUAL_FATAL(pt_store_put_confirmation(s, &c, runs, 4, &err, &cid), 0);
  CU_ASSERT(cid > 0);

  pt_store_confirmation *rows;
  size_t n;
  CU_ASSERT_EQUAL_FATAL(pt_store_confirmations(s, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL_FATAL(n, 1);
  const pt_store_confirmation *g = &rows[0];
  CU_ASSERT_EQUAL(g->id, cid);
  CU_ASSERT_EQUAL(g->trace_id, t);
  CU_ASSERT_STRING_EQUAL(g->trace, "train");
  CU_ASSERT_EQUAL(g->baseline_run, base);
  CU_ASSERT_EQUAL(g->tuned_run, tuned);
  CU_ASSERT_STRING_EQUAL(g->baseline_policy, "pytorch_native");
  CU_ASSERT_STRING_EQUAL(g->tuned_policy, "stitch");
  CU_ASSERT_STRING_EQUAL(g->tuned_allocator, "pagetune");
  CU_ASSERT_STRING_EQUAL(g->time_metric, "median_step_s");
  CU_ASSERT_STRING_EQUAL(g->hostname, "gpuhost");
  CU_ASSERT_STRING_EQUAL(g->gpu_name, "NVIDIA H200");
  CU_ASSERT_STRING_EQUAL(g->command, "[\"python3\",\"train.py\"]");
  CU_ASSERT_STRING_EQUAL(g->started_at, "2026-12-01T00:00:00Z");
  CU_ASSERT_EQUAL(strlen(g->measured_at), 20);
  CU_ASSERT_EQUAL(g->runs_per_arm, 2);
  CU_ASSERT_EQUAL(g->resamples, 10000);
  CU_ASSERT_EQUAL(g->seed, 1);
  CU_ASSERT_EQUAL(g->time.predicted, 0.001);
  CU_ASSERT_EQUAL(g->time.lo, -0.01);
  CU_ASSERT_EQUAL(g->time.verdict, PT_VERDICT_NOISE);
  CU_ASSERT_EQUAL(g->peak.tuned_median, 5.9e8);
  CU_ASSERT_EQUAL(g->peak.verdict, PT_VERDICT_CONFIRMED);
  CU_ASSERT_EQUAL(g->baseline_predicted_us, 1001.5);
  CU_ASSERT_EQUAL(g->tuned_predicted_peak, 123456);
  free(rows);
  CU_ASSERT_EQUAL(pt_store_confirmations(s, "other", &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
  free(rows);
  CU_ASSERT_EQUAL(pt_store_confirmations(s, "aaaa", &err, &rows, &n), 0); /* by hash prefix */
  CU_ASSERT_EQUAL(n, 1);
  free(rows);

  /* the runs, as a user of the shell reads them */
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs"), 4);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs WHERE arm = 'tuned' AND seq % 2 = 0"), 2);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs WHERE steps_s = '[0.5,0.25,0.75]' AND steps = 3"), 3);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs WHERE peak_reserved_bytes IS NULL AND "
                                "median_step_s IS NULL AND steps_s = '[]' AND seq = 4"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT peak_reserved_bytes FROM confirm_runs WHERE seq = 2"), 2LL << 30);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirmations WHERE measured_time_gain = 0.02 AND "
                                "time_verdict = 'within noise' AND peak_verdict = 'confirmed'"), 1);

  /* refused whole: runs of two traces, a run of the wrong arm, a run id not stored */
  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, 0, &err, &s), 0);
  c = sample_confirm(base, elsewhere);
  CU_ASSERT_EQUAL(pt_store_put_confirmation(s, &c, NULL, 0, &err, &cid), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not stored runs of one trace"));
  c = sample_confirm(base, tuned);
  runs[1].run_id = base;
  CU_ASSERT_EQUAL(pt_store_put_confirmation(s, &c, runs, 4, &err, &cid), PT_EUSAGE);
  runs[1].run_id = tuned;
  c = sample_confirm(base, 999);
  CU_ASSERT_EQUAL(pt_store_put_confirmation(s, &c, NULL, 0, &err, &cid), PT_EUSAGE);
  /* a field too long is refused before anything is written */
  c = sample_confirm(base, tuned);
  c.time_metric = "a time metric far too long";
  CU_ASSERT_EQUAL(pt_store_put_confirmation(s, &c, runs, 4, &err, &cid), PT_ELIMIT);
  /* a failure half-way, inside a batch: the savepoint takes the confirmation's rows back, the batch goes on */
  c = sample_confirm(base, tuned);
  CU_ASSERT_EQUAL(pt_store_begin(s, &err), 0);
  runs[3].seq = 1; /* a duplicate (confirmation_id, seq): the last row fails */
  CU_ASSERT(pt_store_put_confirmation(s, &c, runs, 4, &err, &cid) < 0);
  CU_ASSERT_EQUAL(pt_store_commit(s, &err), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirmations"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs"), 4);
  /* deleting a run takes its confirmations with it */
  CU_ASSERT_EQUAL(raw_exec(path, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = (SELECT tuned_run_id FROM confirmations)"),
                  SQLITE_OK);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs"), 0);
  rm_db(path);
  free(path);
}

/*
 * tests/data/v1/sweep.db, written by pagetune 0.1.0 (schema 1): read as it
 * is by a read-only open (its runs, and no confirmations), migrated by a
 * read-write one to this version with every row kept, and then takes a
 * confirmation.
 */
static void test_v1_store(void) {
  char *path = tmp_path(".db");
  size_t len;
  unsigned char *v1 = slurp(pt_test_src("tests/data/v1/sweep.db"), &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
  CU_ASSERT_EQUAL_FATAL(write_file(path, v1, len), 0);
  free(v1);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), 1);
  pt_store *s;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, PT_STORE_READONLY, &err, &s), 0);
  pt_store_run *rows;
  size_t n;
  CU_ASSERT_EQUAL(pt_store_runs(s, NULL, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL(n, 5);
  free(rows);
  pt_store_confirmation *cs;
  CU_ASSERT_EQUAL(pt_store_confirmations(s, NULL, &err, &cs, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_PTR_NULL(cs);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), 1); /* read as it is */

  CU_ASSERT_EQUAL_FATAL(pt_store_open(path, 0, &err, &s), 0);
  CU_ASSERT_EQUAL(pt_store_runs(s, NULL, NULL, &err, &rows, &n), 0);
  CU_ASSERT_EQUAL_FATAL(n, 5);
  int64_t base = rows[0].id, tuned = rows[1].id;
  free(rows);
  pt_confirm_run runs[4];
  double steps[] = {1, 2, 3};
  sample_runs(runs, base, tuned, steps);
  pt_store_confirm c = sample_confirm(base, tuned);
  int64_t cid;
  CU_ASSERT_EQUAL(pt_store_put_confirmation(s, &c, runs, 4, &err, &cid), 0);
  pt_store_close(s);
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), PT_STORE_SCHEMA_VERSION);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 5);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM results"), 5);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM timelines") > 0, 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM confirm_runs"), 4);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
  rm_db(path);
  free(path);
}

/* A migration that fails part-way leaves the file as it was: version 1, no new table. */
static void test_v2_migration_atomic(void) {
  char *path = tmp_path(".db");
  size_t len;
  unsigned char *v1 = slurp(pt_test_src("tests/data/v1/sweep.db"), &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
  CU_ASSERT_EQUAL_FATAL(write_file(path, v1, len), 0);
  free(v1);
  /* an object named like one the step creates makes the step fail */
  CU_ASSERT_EQUAL_FATAL(raw_exec(path, "CREATE INDEX confirm_runs ON runs(gpu)"), SQLITE_OK);
  pt_store *s;
  pt_err err;
  CU_ASSERT(pt_store_open(path, 0, &err, &s) < 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "migrating the schema"));
  CU_ASSERT_EQUAL(raw_int(path, "PRAGMA user_version"), 1);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'confirmations'"), 0);
  CU_ASSERT_EQUAL(raw_int(path, "SELECT count(*) FROM runs"), 5);
  rm_db(path);
  free(path);
}

int pt_test_add_store(void) {
  CU_pSuite s = CU_add_suite("store", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "schema: version, tables, views, WAL", test_schema);
  CU_add_test(s, "migration from a version-0 empty file", test_migrate_empty_file);
  CU_add_test(s, "migration adds a stats column the file lacks", test_migrate_new_column);
  CU_add_test(s, "newer schema version refused, file unchanged", test_newer_version_refused);
  CU_add_test(s, "another program's database refused", test_foreign_database_refused);
  CU_add_test(s, "idempotent trace and policy puts", test_idempotent_puts);
  CU_add_test(s, "policy text hash is SHA-256", test_policy_hash_vectors);
  CU_add_test(s, "run round trip: every stats field, timeline", test_run_round_trip);
  CU_add_test(s, "find_run: skip what is stored", test_find_run_skip);
  CU_add_test(s, "unique run key: no duplicates", test_unique_key);
  CU_add_test(s, "views: best per trace and Pareto front", test_views);
  CU_add_test(s, "batches; a reader beside a writer", test_batch_and_reader);
  CU_add_test(s, "calibrations and measurements", test_calibration_measurement);
  CU_add_test(s, "corrupt file refused, unchanged", test_corrupt_refused);
  CU_add_test(s, "read-only file and directory refused", test_readonly_refused);
  CU_add_test(s, "confirmations: round trip, refusals whole, cascade", test_confirmations);
  CU_add_test(s, "a version-1 store: read as it is read-only, migrated read-write, rows kept", test_v1_store);
  CU_add_test(s, "a failed migration to version 2 leaves the file as it was", test_v2_migration_atomic);
  return CU_get_error();
}
