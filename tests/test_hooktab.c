/*
 * test_hooktab.c — a policy's size hooks as tables (sim/work/hooktab.c),
 * carried by export and read by the library's configuration reader:
 *   - exact breakpoints for a C hook with pieces at awkward sizes;
 *   - large_page_threshold at 64 KiB, 1 MiB, 3 MiB and 100 MiB: the table
 *     equals the Lua hook at every request size of every real trace (and
 *     its 512 B rounding) and at every piece boundary and its neighbours;
 *   - pt_sim_run on every real trace, with and without a cap, gives the
 *     same results with the table hooks as with the Lua ones (no GPU: page
 *     size is model-only and the tables leave it out);
 *   - the export JSON is read by pt_libconf_parse with the same tables, and
 *     the allocator (alloc.c) sizes segments by them; malformed tables in
 *     the JSON are refused with their position;
 *   - hooks a table cannot be are refused in one line: should_collect, a
 *     segment_size that needs too many pieces, one that slips past the
 *     samples (the verifier finds it), and export says NOT RUNNABLE with
 *     the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "export.h"
#include "hooktab.h"
#include "libconf.h"
#include "modeldev.h"
#include "policy.h"
#include "sim.h"
#include "testdev.h"
#include "testutil.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

static const char *const traces[] = {
    "traces/cap_retry.pickle.gz",   "traces/cap_retry_oom.pickle.gz", "traces/cnn_train.pickle.gz",
    "traces/expandable.pickle.gz",  "traces/gc_cap.pickle.gz",        "traces/llm_decode.pickle.gz",
    "traces/randn_loop.pickle.gz",  "traces/rp2.pickle.gz",           "traces/transformer_train.pickle.gz",
    "traces/two_streams.pickle.gz", "traces/varlen_infer.pickle.gz",  "traces/weights_load.pickle.gz"};
#define NTRACES (sizeof traces / sizeof traces[0])
static const uint64_t thresholds[] = {64 * KiB, 1 * MiB, 3 * MiB, 100 * MiB};
#define NTHRESH (sizeof thresholds / sizeof thresholds[0])

static pt_trace_data loaded[NTRACES];

static int suite_init(void) {
  for (size_t i = 0; i < NTRACES; i++) {
    pt_err err;
    if (pt_trace_load(pt_test_src(traces[i]), NULL, &err, &loaded[i]) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
  }
  return 0;
}

static int suite_clean(void) {
  for (size_t i = 0; i < NTRACES; i++) pt_trace_data_free(&loaded[i]);
  return 0;
}

/* large_page_threshold with its threshold set, its hooks and its resolved tables. */
static pt_policy *lpt(uint64_t threshold, pt_policy_hooks *lua, pt_sizetab_set *tabs) {
  pt_policy *pol = NULL;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_policy_load(pt_test_src("policies/large_page_threshold.lua"), NULL, &err, &pol), 0);
  char as[64];
  snprintf(as, sizeof as, "large_page_threshold=%llu", (unsigned long long)threshold);
  CU_ASSERT_EQUAL_FATAL(pt_policy_set(pol, as, &err), 0);
  pt_policy_get_hooks(pol, lua);
  int dropped = 0;
  int rc = pt_hooktab_resolve_policy(pol, tabs, &dropped, &err);
  if (rc) fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_EQUAL(dropped, 1);
  CU_ASSERT_EQUAL(tabs->round.n, 0);
  CU_ASSERT(tabs->segment_size.n >= 1);
  return pol;
}

/* ---- exact breakpoints ------------------------------------------------------------------ */

/* const 4096 to 777777; identity to 5000001; round up to 64 KiB to 3 GiB + 5; const 7 GiB to 2^40 - 3; round up to 2 MiB after. */
static int awkward(void *ctx, uint64_t b, uint64_t *out, pt_err *err) {
  (void)ctx, (void)err;
  if (b <= 777777) *out = 4096; /* less than b past 4096: a table copies what the hook says */
  else if (b <= 5000001) *out = b;
  else if (b <= (UINT64_C(3) << 30) + 5) *out = (b + 65535) / 65536 * 65536;
  else if (b <= (UINT64_C(1) << 40) - 3) *out = UINT64_C(7) << 30;
  else *out = (b + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
  return 0;
}

static void test_exact_breakpoints(void) {
  pt_sizetab t, want = {0};
  pt_hooktab_stats st;
  pt_err err = {{0}};
  int rc = pt_hooktab_resolve(awkward, NULL, "segment_size", &t, &st, &err);
  if (rc) fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  pt_sizetab_append(&want, 1, 777777, PT_SIZETAB_CONST, 4096);
  pt_sizetab_append(&want, 777778, 5000001, PT_SIZETAB_IDENTITY, 0);
  pt_sizetab_append(&want, 5000002, (UINT64_C(3) << 30) + 5, PT_SIZETAB_ROUND_UP, 65536);
  pt_sizetab_append(&want, (UINT64_C(3) << 30) + 6, (UINT64_C(1) << 40) - 3, PT_SIZETAB_CONST, UINT64_C(7) << 30);
  pt_sizetab_append(&want, (UINT64_C(1) << 40) - 2, PT_SIZETAB_LIMIT, PT_SIZETAB_ROUND_UP, 2 * MiB);
  CU_ASSERT(pt_sizetab_equal(&t, &want));
  for (int i = 0; i < t.n; i++)
    fprintf(stderr, "%s[%llu, %llu] %s %llu", i ? " " : "\n  ", (unsigned long long)t.p[i].lo, (unsigned long long)t.p[i].hi,
            pt_sizetab_form_name(t.p[i].form), (unsigned long long)t.p[i].arg);
  CU_ASSERT(st.calls < PT_HOOKTAB_MAX_CALLS);
  CU_ASSERT(st.verified >= (uint64_t)t.n * PT_HOOKTAB_VERIFY);
}

/* ---- large_page_threshold: the table is the hook at every size that occurs ------------------ */

/* The Lua hook and the table at b (in 1 .. 2^50): counted, and counted again when they differ. */
static void compare_at(const pt_policy_hooks *lua, const pt_policy_hooks *th, uint64_t b, uint64_t *checked, uint64_t *differ) {
  uint64_t x = 0, y = 0;
  pt_err err = {{0}};
  if (b < 1 || b > PT_SIZETAB_LIMIT) return;
  CU_ASSERT_EQUAL(lua->segment_size(lua->ctx, b, &x, &err), 0);
  CU_ASSERT_EQUAL(th->segment_size(th->ctx, b, &y, &err), 0);
  *differ += x != y;
  (*checked)++;
}

static void test_lpt_equals_lua_at_trace_sizes(void) {
  for (size_t k = 0; k < NTHRESH; k++) {
    pt_policy_hooks lua;
    pt_sizetab_set tabs;
    pt_policy *pol = lpt(thresholds[k], &lua, &tabs);
    pt_policy_hooks th;
    pt_sizetab_hooks(&tabs, &th);
    uint64_t checked = 0, differ = 0;
    for (size_t i = 0; i < NTRACES; i++)
      for (size_t e = 0; e < loaded[i].n; e++) {
        const pt_event *ev = &loaded[i].ev[e];
        if (ev->kind != PT_EV_ALLOC && ev->kind != PT_EV_INIT_ALLOC) continue;
        compare_at(&lua, &th, ev->bytes, &checked, &differ);
        compare_at(&lua, &th, pt_mech_round512(ev->bytes), &checked, &differ); /* what caching gives segment_size */
      }
    /* every piece boundary and its neighbours, every power of two and its neighbours, the threshold's */
    for (int p = 0; p < tabs.segment_size.n; p++) {
      const pt_sizetab_piece *q = &tabs.segment_size.p[p];
      for (int d = -1; d <= 1; d++) {
        compare_at(&lua, &th, q->lo + (uint64_t)(int64_t)d, &checked, &differ);
        compare_at(&lua, &th, q->hi + (uint64_t)(int64_t)d, &checked, &differ);
      }
    }
    for (int e = 0; e <= 50; e++)
      for (int d = -1; d <= 1; d++) {
        compare_at(&lua, &th, (UINT64_C(1) << e) + (uint64_t)(int64_t)d, &checked, &differ);
        compare_at(&lua, &th, thresholds[k] + (uint64_t)(int64_t)d, &checked, &differ);
      }
    if (differ) fprintf(stderr, "\n  threshold %llu: %llu of %llu sizes differ\n", (unsigned long long)thresholds[k],
                        (unsigned long long)differ, (unsigned long long)checked);
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(checked > 10000);
    pt_policy_free(pol);
  }
}

/* ---- the strongest: whole simulations agree ------------------------------------------------ */

static int same_result(const pt_sim_result *a, const pt_sim_result *b) {
  int same = 1;
#define PT_X(t, f, h) same &= a->f == b->f;
  PT_SIM_STATS_FIELDS(PT_X)
#undef PT_X
  same &= !memcmp(a->driver_calls, b->driver_calls, sizeof a->driver_calls);
  same &= !memcmp(a->driver_bytes, b->driver_bytes, sizeof a->driver_bytes);
  same &= a->addresses_followed == b->addresses_followed && a->ntimeline == b->ntimeline;
  for (size_t i = 0; same && i < a->ntimeline; i++)
    same &= a->timeline[i].reserved == b->timeline[i].reserved && a->timeline[i].allocated == b->timeline[i].allocated;
  return same;
}

static void test_lpt_sim_same_results(void) {
  const uint64_t caps[] = {0, 600 * MiB};
  int runs = 0;
  for (size_t k = 0; k < NTHRESH; k++) {
    pt_policy_hooks lua;
    pt_sizetab_set tabs;
    pt_policy *pol = lpt(thresholds[k], &lua, &tabs);
    for (size_t i = 0; i < NTRACES; i++)
      for (size_t c = 0; c < 2; c++) {
        pt_sim_config cfg = {.mech = &pt_mech_caching, .capacity = caps[c]};
        pt_policy_params(pol, &cfg.params);
        pt_sim_result a, b;
        pt_err err = {{0}};
        cfg.hooks = lua;
        CU_ASSERT_EQUAL_FATAL(pt_sim_run(&loaded[i], &cfg, &err, &a), 0);
        pt_sizetab_hooks(&tabs, &cfg.hooks);
        CU_ASSERT_EQUAL_FATAL(pt_sim_run(&loaded[i], &cfg, &err, &b), 0);
        int same = same_result(&a, &b);
        if (!same)
          fprintf(stderr, "\n  %s, threshold %llu, cap %llu: Lua %llu peak / %llu segments, table %llu / %llu\n", traces[i],
                  (unsigned long long)thresholds[k], (unsigned long long)caps[c], (unsigned long long)a.peak_reserved_bytes,
                  (unsigned long long)a.segments_allocated, (unsigned long long)b.peak_reserved_bytes,
                  (unsigned long long)b.segments_allocated);
        CU_ASSERT(same);
        runs++;
        pt_sim_result_free(&a);
        pt_sim_result_free(&b);
      }
    pt_policy_free(pol);
  }
  CU_ASSERT_EQUAL(runs, (int)(NTHRESH * NTRACES * 2));
}

/* ---- export carries the tables; the library reads them ------------------------------------ */

static char *export_json(const pt_export_input *in) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_write(f, in, "json", NULL, &err), 0);
  fclose(f);
  return buf;
}

static void test_export_read_by_library(void) {
  for (size_t k = 0; k < NTHRESH; k++) {
    pt_policy_hooks lua;
    pt_sizetab_set tabs;
    pt_policy *pol = lpt(thresholds[k], &lua, &tabs);
    pt_params p;
    pt_policy_params(pol, &p);
    pt_export_input in = {.policy = "large_page_threshold", .mechanism = "caching", .params = &p, .capacity = 600 * MiB,
                          .device_total_bytes = 150109880320ull, .has_hooks = 1, .run_id = 4, .tables = &tabs,
                          .page_size_dropped = 1};
    char *js = export_json(&in);
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"status\": \"runnable\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "hooks=tables\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"hook_tables\": {\"segment_size\": [[1, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "page_size hook is left out"));
    CU_ASSERT_PTR_NULL(strstr(js, "NOT RUNNABLE"));
    CU_ASSERT_PTR_NULL(strstr(js, "PAGETUNE_ALLOC_CONF\":")); /* the conf string alone cannot carry the tables */
    pt_libconf c;
    pt_err err = {{0}};
    int rc = pt_libconf_parse(js, strlen(js), "export.json", &c, &err);
    if (rc) fprintf(stderr, "\n  %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(pt_sizetab_equal(&c.tables.segment_size, &tabs.segment_size));
    CU_ASSERT_EQUAL(c.tables.round.n, 0);
    CU_ASSERT_EQUAL(c.capacity, 600 * MiB);
    char conf[512];
    CU_ASSERT_EQUAL(pt_libconf_to_conf_string(&c, conf, sizeof conf), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(conf, ",hooks=tables"));
    /* the conf string alone: refused, pointing at the JSON form */
    CU_ASSERT_EQUAL(pt_libconf_from_conf_string("mechanism=caching,hooks=tables", &c, &err), PT_EFORMAT);
    CU_ASSERT_STRING_EQUAL(err.msg, "PAGETUNE_ALLOC_CONF: column 19: hooks=tables: the policy's hooks travel as tables, which only the "
                                    "export's JSON holds: set PAGETUNE_CONFIG to the file `pagetune export --format json` writes");
    free(js);
    pt_policy_free(pol);
  }
}

/* The allocator sizes segments by the table it is given (alloc.c passes the hooks to the mechanism). */

static void test_alloc_runs_tables(void) {
  pt_sizetab_set tabs = {0};
  pt_sizetab_append(&tabs.segment_size, 1, PT_SIZETAB_LIMIT, PT_SIZETAB_ROUND_UP, 8 * MiB); /* every segment a multiple of 8 MiB */
  pt_policy_hooks h;
  pt_sizetab_hooks(&tabs, &h);
  pt_params p = {0};
  pt_alloc_backend be = pt_test_model_backend(NULL);
  for (int with = 0; with < 2; with++) {
    pt_alloc *a = NULL;
    pt_err err = {{0}};
    CU_ASSERT_EQUAL_FATAL(pt_alloc_create(&pt_mech_caching, &p, 0, with ? &h : NULL, &be, &err, &a), 0);
    uint64_t x;
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 1000, 0, &x, &err), 0);
    CU_ASSERT_EQUAL(pt_alloc_malloc(a, 0, 9 * MiB, 0, &x, &err), 0);
    pt_alloc_stats s;
    CU_ASSERT_EQUAL(pt_alloc_get_stats(a, 0, &s), 0);
    /* tables: 8 MiB + 16 MiB; PyTorch's sizes without: 2 MiB (small pool) + 20 MiB */
    CU_ASSERT_EQUAL(s.reserved_bytes, with ? 24 * MiB : 22 * MiB);
    pt_alloc_destroy(a);
  }
}

/* Malformed tables in the JSON: each refused, naming the line and column of what is wrong. */
static void test_libconf_refuses_bad_tables(void) {
  static const char head[] =
      "{\"policy\": \"p\", \"mechanism\": \"caching\", \"capacity\": 0, \"device_total_bytes\": 0,\n"
      " \"pagetune_library\": {\"conf\": \"mechanism=caching,policy=p%s\"},\n";
  const struct {
    const char *hooks, *tables, *reason;
  } cases[] = {
      {",hooks=tables", "", "pagetune_library.conf column 28: hooks=tables, but the file has no \"hook_tables\""},
      {"", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842624, \"identity\"]]},\n",
       "line 3, column 17: hook_tables without hooks=tables"},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 10, \"identity\"], [12, 1125899906842624, \"identity\"]]},\n",
       "line 3, column 56: hook_tables.segment_size: piece 1 starts at 12, not 11"},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842623, \"identity\"]]},\n",
       "line 3, column 34: hook_tables.segment_size: the pieces end at 1125899906842623, not at 2^50"},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842624, \"max\", 4]]},\n",
       "line 3, column 57: hook_tables.segment_size piece 0: unknown form \"max\""},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842624, \"const\"]]},\n",
       "line 3, column 35: hook_tables.segment_size piece 0: const takes an argument"},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842624, \"round_up\", 0]]},\n",
       "line 3, column 35: hook_tables.segment_size: piece 0: round_up needs a positive argument"},
      {",hooks=tables", " \"hook_tables\": {\"segment_size\": [[1, 1.5e15, \"identity\"]]},\n",
       "line 3, column 39: hook_tables.segment_size piece 0 must be a whole number of bytes"},
      {",hooks=tables", " \"hook_tables\": {\"page_size\": [[1, 1125899906842624, \"const\", 65536]]},\n",
       "line 3, column 31: hook_tables: no hook \"page_size\" travels as a table"},
      {",hooks=tables", " \"hook_tables\": {},\n", "line 3, column 17: hook_tables holds no table"},
      {",hooks=policy", " \"hook_tables\": {\"segment_size\": [[1, 1125899906842624, \"identity\"]]},\n",
       "hooks=policy: the policy p has hooks (Lua)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char js[1024];
    int n = snprintf(js, sizeof js, head, cases[i].hooks);
    snprintf(js + n, sizeof js - (size_t)n, "%s \"end\": 0}\n", cases[i].tables);
    pt_libconf c;
    pt_err err = {{0}};
    CU_ASSERT_NOT_EQUAL(pt_libconf_parse(js, strlen(js), "t.json", &c, &err), 0);
    if (!strstr(err.msg, cases[i].reason)) fprintf(stderr, "\n  case %zu: %s\n", i, err.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].reason));
    CU_ASSERT_EQUAL(c.tables.segment_size.n, 0);
  }
}

/* ---- what cannot be a table ---------------------------------------------------------------- */

static int refuse(const char *rel, pt_err *err) {
  pt_policy *pol = NULL;
  CU_ASSERT_EQUAL_FATAL(pt_policy_load(pt_test_src(rel), NULL, err, &pol), 0);
  pt_sizetab_set tabs;
  int dropped;
  int rc = pt_hooktab_resolve_policy(pol, &tabs, &dropped, err);
  CU_ASSERT_EQUAL(tabs.segment_size.n, 0);
  CU_ASSERT_PTR_NULL(strchr(err->msg, '\n'));
  pt_policy_free(pol);
  return rc;
}

static void test_unresolvable_refused(void) {
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(refuse("tests/data/policies/collect_hook.lua", &err), PT_EFORBID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "collect_hook.lua: should_collect cannot be made a table: its result depends on the state"));
  CU_ASSERT_EQUAL(refuse("tests/data/policies/odd_segment.lua", &err), PT_ELIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "odd_segment.lua: segment_size cannot be made a table: more than 64 pieces"));
  /* one that agrees at every sample point: the verifier's pseudo-random sizes find where it does not */
  CU_ASSERT_EQUAL(refuse("tests/data/policies/sly_segment.lua", &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "sly_segment.lua: segment_size cannot be made a table: at "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, " B the table gives "));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ", the hook "));
  fprintf(stderr, "\n  %s", err.msg);
  /* export says so, with the reason, and the library's reader refuses what it wrote */
  pt_export_input in = {.policy = "sly_segment", .mechanism = "caching", .has_hooks = 1, .run_id = -1, .hooks_refused = err.msg};
  char *js = export_json(&in);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "NOT RUNNABLE BY THE LIBRARY: "));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"reason\": \""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "segment_size cannot be made a table"));
  CU_ASSERT_PTR_NULL(strstr(js, "hook_tables"));
  pt_libconf c;
  pt_err lerr;
  CU_ASSERT_EQUAL(pt_libconf_parse(js, strlen(js), "export.json", &c, &lerr), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(lerr.msg, "hooks=policy"));
  free(js);
}

int pt_test_add_hooktab(void) {
  CU_pSuite s = CU_add_suite("hooktab", suite_init, suite_clean);
  if (!s) return CU_get_error();
  CU_add_test(s, "exact breakpoints of a hook with awkward pieces", test_exact_breakpoints);
  CU_add_test(s, "large_page_threshold: table = Lua at every trace size and boundary", test_lpt_equals_lua_at_trace_sizes);
  CU_add_test(s, "large_page_threshold: every real trace simulates the same with tables", test_lpt_sim_same_results);
  CU_add_test(s, "export's JSON carries the tables; the library reads them back equal", test_export_read_by_library);
  CU_add_test(s, "the allocator sizes segments by the tables it is given", test_alloc_runs_tables);
  CU_add_test(s, "malformed tables in the JSON refused with their position", test_libconf_refuses_bad_tables);
  CU_add_test(s, "hooks a table cannot be are refused in one line; export says why", test_unresolvable_refused);
  return CU_get_error();
}
