/*
 * test_policy.c — the Lua policy host: every shipped policy loads, PyTorch's
 * defaults are PyTorch's, --set checks its input, hooks answer and are
 * memoised, and hostile or broken scripts fail with one line naming the
 * script and the line, without side effects, hangs or crashes.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "testutil.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

static char *src_path(const char *rel) {
  static char buf[8][4096];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s", pt_test_src(rel));
  return buf[k];
}

/* msg is one line starting "PATH:LINE: " (LINE 0: "PATH: "; -1: any line; -2: either) and contains reason. */
static int msg_ok(const char *msg, const char *path, int line, const char *reason) {
  char want[4200];
  size_t pl = strlen(path);
  int ok = !strchr(msg, '\n') && strstr(msg, reason) != NULL && !strncmp(msg, path, pl);
  if (ok && line > 0) {
    snprintf(want, sizeof want, ":%d: ", line);
    ok = !strncmp(msg + pl, want, strlen(want));
  } else if (ok && line == 0) {
    ok = !strncmp(msg + pl, ": ", 2);
  } else if (ok && line == -2) {
    ok = msg[pl] == ':';
  } else if (ok) {
    const char *p = msg + pl;
    ok = *p++ == ':' && *p >= '1' && *p <= '9';
    while (ok && *p >= '0' && *p <= '9') p++;
    ok = ok && !strncmp(p, ": ", 2);
  }
  if (!ok) fprintf(stderr, "\n    got:    %s\n    wanted: %s:%d: ...%s...\n", msg, path, line, reason);
  return ok;
}

/* The LINE of a message "PATH:LINE: ...", or 0. */
static int msg_line(const char *msg, const char *path) {
  size_t pl = strlen(path);
  return !strncmp(msg, path, pl) && msg[pl] == ':' ? atoi(msg + pl + 1) : 0;
}

static pt_policy *load_ok(const char *path) {
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  int rc = pt_policy_load(path, NULL, &err, &pol);
  if (rc) fprintf(stderr, "\n    %s\n", err.msg);
  CU_ASSERT_EQUAL(rc, 0);
  return pol;
}

static pt_policy *buffer_ok(const char *src, const char *name) {
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  int rc = pt_policy_load_buffer(src, strlen(src), name, NULL, &err, &pol);
  if (rc) fprintf(stderr, "\n    %s\n", err.msg);
  CU_ASSERT_EQUAL(rc, 0);
  return pol;
}

/* Loading rel fails with code and a message at line (-1: any line; see msg_ok); returns the line. */
static int load_fails(const char *rel, int code, int line, const char *reason) {
  const char *path = src_path(rel);
  pt_err err = {{0}};
  pt_policy *pol = (pt_policy *)&err; /* must come back NULL */
  int rc = pt_policy_load(path, NULL, &err, &pol);
  if (rc != code) fprintf(stderr, "\n    %s: rc %d (%s)\n", rel, rc, err.msg);
  CU_ASSERT_EQUAL(rc, code);
  CU_ASSERT_PTR_NULL(pol);
  CU_ASSERT(msg_ok(err.msg, path, line, reason));
  return msg_line(err.msg, path);
}

static void buffer_fails(const char *src, int code, int line, const char *reason) {
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  int rc = pt_policy_load_buffer(src, strlen(src), "inline.lua", NULL, &err, &pol);
  if (rc != code) fprintf(stderr, "\n    rc %d (%s) for:\n%s\n", rc, err.msg, src);
  CU_ASSERT_EQUAL(rc, code);
  CU_ASSERT_PTR_NULL(pol);
  CU_ASSERT(msg_ok(err.msg, "inline.lua", line, reason));
}

static double param_value(const pt_policy *pol, const char *name) {
  pt_params p;
  pt_policy_params(pol, &p);
  return pt_params_get(&p, name, NAN);
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* ---- the shipped policies ---------------------------------------------------- */

static void test_shipped_policies_load(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", pt_test_src("policies"));
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".lua")) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    pt_policy *pol = load_ok(path);
    if (!pol) continue;
    n++;
    /* the name is the file's, the mechanism is known, the values are the defaults */
    CU_ASSERT(strlen(pt_policy_name(pol)) == len - 4 && !strncmp(pt_policy_name(pol), e->d_name, len - 4));
    CU_ASSERT_PTR_NOT_NULL(pt_mech_find(pt_policy_mechanism(pol)));
    CU_ASSERT(strlen(pt_policy_doc(pol)) > 0);
    CU_ASSERT_STRING_EQUAL(pt_policy_path(pol), path);
    pt_params p;
    pt_policy_params(pol, &p);
    CU_ASSERT_EQUAL(p.n, pt_policy_nparams(pol));
    for (int i = 0; i < pt_policy_nparams(pol); i++) {
      const pt_policy_param *q = pt_policy_param_at(pol, i);
      CU_ASSERT(q->value == q->dflt);
      CU_ASSERT(pt_params_get(&p, q->name, NAN) == q->dflt);
      CU_ASSERT(strlen(q->doc) > 0);
    }
    CU_ASSERT_PTR_NULL(pt_policy_param_at(pol, pt_policy_nparams(pol)));
    /* the source handed back is the file */
    size_t slen;
    const char *src = pt_policy_source(pol, &slen);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char *buf = malloc(slen + 2);
    CU_ASSERT_EQUAL(fread(buf, 1, slen + 1, f), slen);
    CU_ASSERT(!memcmp(buf, src, slen));
    free(buf);
    fclose(f);
    pt_policy_free(pol);
  }
  closedir(d);
  CU_ASSERT(n >= 7);
}

static void test_pytorch_native_defaults(void) {
  pt_policy *pol = load_ok(src_path("policies/pytorch_native.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  CU_ASSERT_STRING_EQUAL(pt_policy_mechanism(pol), "caching");
  /* c10/cuda/CUDAAllocatorConfig.cpp: SIZE_MAX, kLargeBuffer, 0, all 0 */
  CU_ASSERT(isinf(param_value(pol, "max_split_size_mb")) && param_value(pol, "max_split_size_mb") > 0);
  CU_ASSERT_EQUAL(param_value(pol, "max_non_split_rounding_mb"), 20);
  CU_ASSERT_EQUAL(param_value(pol, "garbage_collection_threshold"), 0);
  CU_ASSERT_EQUAL(param_value(pol, "roundup_power2_divisions"), 0);
  CU_ASSERT_EQUAL(pt_policy_nparams(pol), 4);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  CU_ASSERT(!h.round && !h.segment_size && !h.page_size && !h.should_collect);
  CU_ASSERT_PTR_EQUAL(h.ctx, pol);
  pt_policy_free(pol);
}

static void test_declared_order(void) {
  pt_policy *pol = load_ok(src_path("policies/tunable_caching.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  CU_ASSERT_EQUAL_FATAL(pt_policy_nparams(pol), 3);
  CU_ASSERT_STRING_EQUAL(pt_policy_param_at(pol, 0)->name, "garbage_collection_threshold");
  CU_ASSERT_STRING_EQUAL(pt_policy_param_at(pol, 1)->name, "max_split_size_mb");
  CU_ASSERT_STRING_EQUAL(pt_policy_param_at(pol, 2)->name, "roundup_power2_divisions");
  const pt_policy_param *q = pt_policy_param_at(pol, 1);
  CU_ASSERT(q->has_range && q->min == 20 && q->max == 4096 && q->log_scale && !q->integer);
  q = pt_policy_param_at(pol, 2);
  CU_ASSERT(!q->has_range && q->nchoices == 9 && q->choices[5] == 16 && q->integer);
  CU_ASSERT(q->choice_lists && q->choice_lists[6].n == 16 && q->choice_lists[6].v[9] == 2 && !q->choice_lists[5].n);
  pt_policy_free(pol);
}

/* ---- --set ------------------------------------------------------------------------ */

static void set_fails(pt_policy *pol, const char *assignment, const char *reason) {
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_policy_set(pol, assignment, &err), PT_EUSAGE);
  CU_ASSERT(msg_ok(err.msg, pt_policy_path(pol), 0, reason));
}

static void test_set(void) {
  pt_policy *pol = load_ok(src_path("policies/tunable_caching.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_policy_set(pol, "max_split_size_mb=1024", &err), 0);
  CU_ASSERT_EQUAL(param_value(pol, "max_split_size_mb"), 1024);
  CU_ASSERT_EQUAL(pt_policy_param_at(pol, 1)->value, 1024);
  CU_ASSERT_EQUAL(pt_policy_param_at(pol, 1)->dflt, 4096);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "garbage_collection_threshold=0.75", &err), 0);
  CU_ASSERT_EQUAL(param_value(pol, "garbage_collection_threshold"), 0.75);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "roundup_power2_divisions=8", &err), 0);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "max_split_size_mb=2e3", &err), 0);
  CU_ASSERT_EQUAL(param_value(pol, "max_split_size_mb"), 2000);

  set_fails(pol, "max_split_size_mb=10", "--set max_split_size_mb=10: 10 lies outside the range [20, 4096]");
  set_fails(pol, "max_split_size_mb=5000", "5000 lies outside the range [20, 4096]");
  set_fails(pol, "max_split_size_mb=inf", "inf lies outside the range");
  set_fails(pol, "garbage_collection_threshold=1", "1 lies outside the range [0, 0.99]");
  set_fails(pol, "roundup_power2_divisions=3", "3 is not one of the choices {0, 1, 2, 4, 8, 16, [256:1,512:2,1024:4,>:8], [64:8,>:1], [256:1,>:4]}");
  set_fails(pol, "roundup_power2_divisions=[256:1,>:2]", "[256:1,>:2] is not one of the choices");
  CU_ASSERT_EQUAL(pt_policy_set(pol, "roundup_power2_divisions=[256:1, 512:2,1024:4,>:8]", &err), PT_EUSAGE); /* no spaces in a value */
  CU_ASSERT_EQUAL(pt_policy_set(pol, "roundup_power2_divisions=[128:1,256:1,512:2,1024:4,>:8]", &err), 0); /* the same table */
  CU_ASSERT(isnan(param_value(pol, "roundup_power2_divisions")) && pt_policy_param_at(pol, 2)->list.v[10] == 4);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "roundup_power2_divisions=8", &err), 0);
  set_fails(pol, "roundup_power2_divisions=2.5", "2.5 is not an integer");
  set_fails(pol, "max_split_sz=100",
            "the policy declares no parameter 'max_split_sz' (declared: garbage_collection_threshold, "
            "max_split_size_mb, roundup_power2_divisions)");
  set_fails(pol, "max_split_size_mb=abc", "'abc' is not a number");
  set_fails(pol, "max_split_size_mb=", "'' is not a number");
  set_fails(pol, "max_split_size_mb= 30", "is not a number");
  set_fails(pol, "max_split_size_mb=0x20", "is not a number");
  set_fails(pol, "max_split_size_mb=30MB", "is not a number");
  set_fails(pol, "max_split_size_mb=nan", "is not a number");
  set_fails(pol, "max_split_size_mb=1e999", "is not a number");
  set_fails(pol, "max_split_size_mb", "--set expects NAME=VALUE");
  set_fails(pol, "=30", "--set expects NAME=VALUE");
  /* failures change nothing */
  CU_ASSERT_EQUAL(param_value(pol, "max_split_size_mb"), 2000);
  CU_ASSERT_EQUAL(param_value(pol, "roundup_power2_divisions"), 8);
  pt_policy_free(pol);

  /* without a declared range, the mechanism's own bounds still hold */
  pol = load_ok(src_path("policies/pytorch_native.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "max_split_size_mb=512", &err), 0);
  CU_ASSERT_EQUAL(pt_policy_set(pol, "max_split_size_mb=inf", &err), 0);
  CU_ASSERT(isinf(param_value(pol, "max_split_size_mb")));
  set_fails(pol, "max_split_size_mb=10", "10 is not what the caching mechanism accepts: a number from 20 to inf");
  set_fails(pol, "garbage_collection_threshold=-0.5", "-0.5 is not what the caching mechanism accepts: a number from 0 to 1");
  set_fails(pol, "pages=1", "(declared: max_split_size_mb, max_non_split_rounding_mb, "
                            "garbage_collection_threshold, roundup_power2_divisions)");
  pt_policy_free(pol);

  pol = load_ok(src_path("policies/direct.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  set_fails(pol, "x=1", "declares no parameter 'x' (declared: none)");
  pt_policy_free(pol);
}

/* ---- hooks ------------------------------------------------------------------------ */

static void test_large_page_threshold_hooks(void) {
  pt_policy *pol = load_ok(src_path("policies/large_page_threshold.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  CU_ASSERT_PTR_NULL(h.round);
  CU_ASSERT_PTR_NULL(h.should_collect);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.page_size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.segment_size);
  const pt_policy_param *q = pt_policy_param_at(pol, 0);
  CU_ASSERT(q->dflt == 1048576 && q->min == 65536 && q->max == 1073741824 && q->log_scale && q->integer);
  pt_err err = {{0}};
  uint64_t v = 0;
  CU_ASSERT(h.page_size(h.ctx, MiB - 1, &v, &err) == 0 && v == 64 * KiB);
  CU_ASSERT(h.page_size(h.ctx, MiB, &v, &err) == 0 && v == 2 * MiB);
  CU_ASSERT(h.page_size(h.ctx, 3 * MiB, &v, &err) == 0 && v == 2 * MiB);
  CU_ASSERT(h.segment_size(h.ctx, MiB - 1, &v, &err) == 0 && v == 2 * MiB);
  CU_ASSERT(h.segment_size(h.ctx, MiB, &v, &err) == 0 && v == 2 * MiB);
  CU_ASSERT(h.segment_size(h.ctx, 3 * MiB, &v, &err) == 0 && v == 4 * MiB);
  /* --set reaches the hooks, past the memo */
  CU_ASSERT_EQUAL(pt_policy_set(pol, "large_page_threshold=4194304", &err), 0);
  CU_ASSERT(h.page_size(h.ctx, 3 * MiB, &v, &err) == 0 && v == 64 * KiB);
  CU_ASSERT(h.segment_size(h.ctx, 3 * MiB, &v, &err) == 0 && v == 20 * MiB);
  CU_ASSERT(h.page_size(h.ctx, 4 * MiB, &v, &err) == 0 && v == 2 * MiB);
  set_fails(pol, "large_page_threshold=1000.5", "1000.5 is not an integer");
  set_fails(pol, "large_page_threshold=1024", "1024 lies outside the range [65536, 1073741824]");
  pt_policy_free(pol);
}

static void test_memoised(void) {
  pt_policy *pol = load_ok(src_path("tests/data/policies/counter.lua"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.page_size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h.should_collect);
  pt_err err = {{0}};
  uint64_t v = 0;
  int bad = 0;
  /* page_size answers 4096 x (its Lua calls so far) x p.scale */
  for (int i = 0; i < 1000000; i++)
    bad += h.page_size(h.ctx, 12345, &v, &err) != 0 || v != 4096;
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT(h.page_size(h.ctx, 999, &v, &err) == 0 && v == 2 * 4096); /* only the second Lua call */
  CU_ASSERT(h.page_size(h.ctx, UINT64_MAX, &v, &err) == 0 && v == 3 * 4096);
  CU_ASSERT(h.page_size(h.ctx, UINT64_MAX, &v, &err) == 0 && v == 3 * 4096);
  /* --set clears the memo: the next answer comes from Lua, with the new p */
  CU_ASSERT_EQUAL(pt_policy_set(pol, "scale=2", &err), 0);
  CU_ASSERT(h.page_size(h.ctx, 12345, &v, &err) == 0 && v == 4 * 4096 * 2);
  CU_ASSERT(h.page_size(h.ctx, 12345, &v, &err) == 0 && v == 4 * 4096 * 2);
  /* should_collect is asked every time */
  int c = -1;
  for (int i = 0; i < 6; i++) {
    CU_ASSERT_EQUAL(h.should_collect(h.ctx, 100, 50, &c, &err), 0);
    CU_ASSERT_EQUAL(c, i % 2);
  }
  pt_policy_free(pol);
}

/* A policy whose page_size returns what `ret` says; hook defined on line 3. */
static void hook_returns(const char *ret, int want_rc, uint64_t want, const char *reason) {
  char src[1024];
  snprintf(src, sizeof src,
           "return { name = 'r', mechanism = 'caching',\n"
           "  params = { k = { default = 3 } },\n"
           "  page_size = function(p, bytes)\n"
           "    return %s\n"
           "  end }\n",
           ret);
  pt_policy *pol = buffer_ok(src, "ret.lua");
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  pt_err err = {{0}};
  uint64_t v = 0;
  int rc = h.page_size(h.ctx, 4096, &v, &err);
  CU_ASSERT_EQUAL(rc, want_rc);
  if (rc == 0) {
    CU_ASSERT_EQUAL(v, want);
  } else {
    CU_ASSERT(msg_ok(err.msg, "ret.lua", reason[0] == '!' ? 4 : 3, reason + (reason[0] == '!')));
  }
  pt_policy_free(pol);
}

static void test_hook_results(void) {
  hook_returns("2^21", 0, 2 * MiB, NULL); /* a float with an integral value is fine */
  hook_returns("bytes * 2", 0, 8192, NULL);
  hook_returns("p.k", 0, 3, NULL);
  hook_returns("nil", PT_EFORMAT, 0, "page_size returned nil, expected a positive integer number of bytes");
  hook_returns("-4096", PT_EFORMAT, 0, "page_size returned -4096, expected a positive");
  hook_returns("0", PT_EFORMAT, 0, "page_size returned 0, expected");
  hook_returns("1.5", PT_EFORMAT, 0, "page_size returned 1.5, expected");
  hook_returns("0/0", PT_EFORMAT, 0, "returned nan");
  hook_returns("math.huge", PT_EFORMAT, 0, "returned inf");
  hook_returns("'4096'", PT_EFORMAT, 0, "returned the string \"4096\"");
  hook_returns("{}", PT_EFORMAT, 0, "returned a table");
  hook_returns("true", PT_EFORMAT, 0, "returned true");
  /* errors inside the hook: the line where they happen */
  hook_returns("p.nope", PT_EFORMAT, 0, "!p.nope: the policy declares no such parameter (declared: k)");
  hook_returns("(function() p.k = 1 end)()", PT_EFORMAT, 0, "!p is read-only (assigning p.k)");
  hook_returns("rawset(p, 'k', 1)", PT_EFORMAT, 0, "!bad argument #1 to 'rawset'");
  hook_returns("getmetatable(p) == false and error('locked', 0)", PT_EFORMAT, 0, "!locked");
  hook_returns("error({})", PT_EFORMAT, 0, "!(error object is a table value)");
  hook_returns("error('first\\nsecond')", PT_EFORMAT, 0, "!first second");
}

static void test_hook_reads_p(void) {
  pt_policy *pol = buffer_ok("return { name = 'p', mechanism = 'caching',\n"
                             "  params = { a = { default = 1 }, b = { default = 2, integer = true } },\n"
                             "  round = function(p, bytes)\n"
                             "    local s = 0\n"
                             "    for k, v in pairs(p) do s = s + v end\n"
                             "    assert(math.type(p.b) == 'integer' and tostring(p) == 'policy parameters')\n"
                             "    return bytes + s\n"
                             "  end }\n",
                             "p.lua");
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  pt_err err = {{0}};
  uint64_t v = 0;
  CU_ASSERT(h.round && h.round(h.ctx, 100, &v, &err) == 0 && v == 103);
  CU_ASSERT(h.round(h.ctx, UINT64_MAX - 10, &v, &err) != 0); /* 2^64 - 8 is past 2^64 as a double */
  CU_ASSERT_EQUAL(pt_policy_set(pol, "a=10", &err), 0);
  CU_ASSERT(h.round(h.ctx, 100, &v, &err) == 0 && v == 112);
  pt_policy_free(pol);
}

/* ---- hostile and broken scripts ---------------------------------------------------- */

static void test_no_os(void) {
  unlink("/tmp/pagetune-pwned");
  load_fails("tests/data/policies/os_execute.lua", PT_EFORMAT, 3, "attempt to index a nil value (global 'os')");
  CU_ASSERT(!file_exists("/tmp/pagetune-pwned"));
}

static void test_no_io(void) {
  unlink("/tmp/pagetune-io-open-pwned");
  load_fails("tests/data/policies/io_open.lua", PT_EFORMAT, 2, "attempt to index a nil value (global 'io')");
  CU_ASSERT(!file_exists("/tmp/pagetune-io-open-pwned"));
}

static void test_no_require(void) {
  unlink("/tmp/pagetune-require-pwned");
  load_fails("tests/data/policies/require.lua", PT_EFORMAT, 2, "attempt to call a nil value (global 'require')");
  CU_ASSERT(!file_exists("/tmp/pagetune-require-pwned"));
}

static void test_no_bytecode(void) {
  load_fails("tests/data/policies/bytecode_load.lua", PT_EFORMAT, 3, "attempt to call a nil value (global 'load')");
  load_fails("tests/data/policies/precompiled.lua", PT_EFORBID, 0, "a precompiled (binary) Lua chunk");
  /* its source is a fine policy: only the form is refused */
  pt_policy *pol = load_ok(src_path("tests/data/policies/precompiled.src.lua"));
  pt_policy_free(pol);
}

static void test_budgets(void) {
  /* the loop is lines 3-5; which instruction is the 10 millionth is Lua's business */
  int line = load_fails("tests/data/policies/infinite_loop.lua", PT_ELIMIT, -1,
                        "instruction budget exceeded (10000000 instructions)");
  CU_ASSERT(line >= 3 && line <= 5);
  load_fails("tests/data/policies/huge_table.lua", PT_ELIMIT, 4, "memory budget exceeded (limit 67108864 bytes)");
  /* catching the budget error does not buy more instructions */
  buffer_fails("local n = 0\n"
               "while true do\n"
               "  pcall(function() while true do n = n + 1 end end)\n"
               "end\n",
               PT_ELIMIT, -1, "instruction budget exceeded");
  buffer_fails("local ok, e = pcall(string.rep, 'x', 1 << 30)\n"
               "assert(not ok and e == 'not enough memory')\n"
               "local t = {}\n"
               "for i = 1, 1e9 do t[i] = {} end\n",
               PT_ELIMIT, 4, "memory budget exceeded");
  buffer_fails("local s = string.rep('x', 1 << 30)\n", PT_ELIMIT, 1, "memory budget exceeded");
  buffer_fails("local s = ('ab'):rep(1 << 28, ',')\n", PT_ELIMIT, 1, "memory budget exceeded");
  /* an xpcall handler for the budget's error would run with Lua's hooks off */
  buffer_fails("local ok = xpcall(function() while true do end end, function(e) while true do end end)\n",
               PT_EFORMAT, 1, "attempt to call a nil value (global 'xpcall')");
  /* work in C that no instruction count sees (4 MiB compared per loop): the clock stops it */
  pt_policy_limits quick = {.max_seconds = 0.2};
  const char *slow = "local a, b = string.rep('x', 1 << 22), string.rep('x', 1 << 22)\n"
                     "local n = 0\n"
                     "while a == b do n = n + 1 end\n";
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  CU_ASSERT_EQUAL(pt_policy_load_buffer(slow, strlen(slow), "slow.lua", &quick, &err, &pol), PT_ELIMIT);
  CU_ASSERT(msg_ok(err.msg, "slow.lua", 3, "time budget exceeded (0.2 seconds)"));
  /* C loops a script could make endless are gone or bounded */
  pol = buffer_ok("assert(string.rep('', 1 << 50) == '' and ('x'):rep(3, '') == 'xxx')\n"
                  "assert(string.rep('', 1 << 50, '') == '' and string.rep('x', 0) == '')\n"
                  "assert(table.move == nil and string.find == nil and string.gsub == nil)\n"
                  "assert(string.match == nil and string.gmatch == nil)\n"
                  "return { name = 'x', mechanism = 'direct' }\n",
                  "loops.lua");
  pt_policy_free(pol);
  /* finalizers would run outside the budgets */
  buffer_fails("local t = setmetatable({}, { __gc = function() while true do end end })\n", PT_EFORMAT, 1,
               "setmetatable: __gc metamethods are not allowed in a policy");
  pol = buffer_ok("local t = setmetatable({}, { __index = function(t, k) return k * 2 end })\n"
                  "assert(t[21] == 42)\n"
                  "return { name = 'x', mechanism = 'direct' }\n",
                  "mt.lua");
  pt_policy_free(pol);
}

static void test_hook_budget(void) {
  const char *path = src_path("tests/data/policies/infinite_loop_hook.lua");
  pt_policy *pol = load_ok(path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  pt_err err = {{0}};
  uint64_t v = 0;
  for (int i = 0; i < 2; i++) { /* and again: the budget is armed afresh */
    CU_ASSERT_EQUAL(h.page_size(h.ctx, 4096, &v, &err), PT_ELIMIT);
    CU_ASSERT(msg_ok(err.msg, path, -1, "instruction budget exceeded"));
    CU_ASSERT(msg_line(err.msg, path) >= 7 && msg_line(err.msg, path) <= 9);
  }
  CU_ASSERT(strstr(pt_policy_traceback(pol), "stack traceback:") != NULL);
  CU_ASSERT(strstr(pt_policy_traceback(pol), "instruction budget exceeded") != NULL);
  pt_policy_free(pol);

  /* each call has its own budget: three calls of 60% each all pass */
  pt_policy_limits lim = {.max_instructions = 100000};
  const char *src = "local function spin() local n = 0 for i = 1, 60000 do end end\n"
                    "spin()\n"
                    "return { name = 'spin', mechanism = 'caching',\n"
                    "  page_size = function(p, bytes) spin() return 4096 end,\n"
                    "  should_collect = function(p, r, a) spin() spin() return false end }\n";
  CU_ASSERT_EQUAL(pt_policy_load_buffer(src, strlen(src), "spin.lua", &lim, &err, &pol), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_get_hooks(pol, &h);
  for (uint64_t b = 1; b <= 3; b++) CU_ASSERT_EQUAL(h.page_size(h.ctx, b, &v, &err), 0);
  int c;
  CU_ASSERT_EQUAL(h.should_collect(h.ctx, 1, 1, &c, &err), PT_ELIMIT);
  CU_ASSERT(msg_ok(err.msg, "spin.lua", 1, "instruction budget exceeded (100000 instructions)"));
  pt_policy_free(pol);

  /* memory in a hook: the budget is the state's, the line the hook's */
  src = "return { name = 'm', mechanism = 'caching',\n"
        "  page_size = function(p, bytes)\n"
        "    return #string.rep('x', bytes)\n"
        "  end }\n";
  CU_ASSERT_EQUAL(pt_policy_load_buffer(src, strlen(src), "mem.lua", NULL, &err, &pol), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_get_hooks(pol, &h);
  CU_ASSERT(h.page_size(h.ctx, 1000, &v, &err) == 0 && v == 1000);
  CU_ASSERT_EQUAL(h.page_size(h.ctx, 1ull << 30, &v, &err), PT_ELIMIT);
  CU_ASSERT(msg_ok(err.msg, "mem.lua", 2, "memory budget exceeded in page_size"));
  CU_ASSERT(h.page_size(h.ctx, 2000, &v, &err) == 0 && v == 2000); /* the state survives */
  pt_policy_free(pol);
}

static void test_bad_tables(void) {
  load_fails("tests/data/policies/wrong_shape.lua", PT_EFORMAT, 4, "the script returned a number; a policy returns a table");
  load_fails("tests/data/policies/no_mechanism.lua", PT_EFORMAT, 2, "the policy sets no mechanism (one of direct, caching");
  load_fails("tests/data/policies/unknown_mechanism.lua", PT_EFORMAT, 5,
             "unknown mechanism 'buddy' (known: direct, caching, expandable, async_pool, stitch)");
  load_fails("tests/data/policies/bad_default.lua", PT_EFORMAT, 9,
             "params.max_split_size_mb: default 10 lies outside the range [20, 4096]");
  load_fails("tests/data/policies/syntax_error.lua", PT_EFORMAT, 5, "'}' expected (to close '{' at line 2) near 'params'");

  buffer_fails("", PT_EFORMAT, -1, "the script returned nothing");
  buffer_fails("return {\n name = 'x',\n mechanism = 'direct',\n page_sizes = function() end }\n", PT_EFORMAT, 4,
               "unknown field 'page_sizes' in the policy");
  buffer_fails("return { mechanism = 'direct' }\n", PT_EFORMAT, 1, "the policy needs a name");
  buffer_fails("return { name = 'x', mechanism = 'direct',\n  page_size = 4096 }\n", PT_EFORMAT, 2,
               "'page_size' must be a function, not a number");
  buffer_fails("return { name = 'x', mechanism = 42 }\n", PT_EFORMAT, 1, "'mechanism' must be a string, not a number");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  a = { default = 1 },\n"
               "  b = { defualt = 1 } } }\n",
               PT_EFORMAT, 3, "params.b: unknown field 'defualt'");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { range = {1, 2} } } }\n",
               PT_EFORMAT, 2, "params.b: 'default' is missing");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = '1' } } }\n",
               PT_EFORMAT, 2, "params.b: 'default' must be a number, not a string");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = 5 } }\n",
               PT_EFORMAT, 2, "params.b must be a table");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 1,\n"
               "        range = {1, 2, 3} } } }\n",
               PT_EFORMAT, 3, "params.b: range must be {lo, hi}, two numbers");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 1, range = {2, 1} } } }\n",
               PT_EFORMAT, 2, "must be finite with lo <= hi");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 1, range = {1, 2}, choices = {1} } } }\n",
               PT_EFORMAT, 2, "params.b: give a range or choices, not both");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 1, range = {0, 2}, scale = 'log' } } }\n",
               PT_EFORMAT, 2, "a log scale needs a range above 0");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 1, range = {1, 2}, scale = 'exp' } } }\n",
               PT_EFORMAT, 2, "scale must be \"linear\" or \"log\"");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 2, choices = {1, 2.5}, integer = true } } }\n",
               PT_EFORMAT, 2, "params.b: choice 2.5 is not an integer");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  b = { default = 3, choices = {1, 2} } } }\n",
               PT_EFORMAT, 2, "params.b: default 3 is not one of the choices {1, 2}");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  ['a-b'] = { default = 1 } } }\n",
               PT_EFORMAT, 1, "a parameter name must be an identifier");
  /* parameters the mechanism knows stay inside its bounds */
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  garbage_collection_threshold = { default = 0.5,\n"
               "    range = {0, 2} } } }\n",
               PT_EFORMAT, 3, "range [0, 2] reaches outside what the caching mechanism accepts, [0, 1]");
  buffer_fails("return { name = 'x', mechanism = 'caching', params = {\n"
               "  max_split_size_mb = { default = 10 } } }\n",
               PT_EFORMAT, 2, "default 10 is not what the caching mechanism accepts: a number from 20 to inf");
  /* ... while parameters it does not know are the hooks' business */
  pt_policy *pol = buffer_ok("return { name = 'x', mechanism = 'direct', params = {\n"
                             "  anything = { default = -5, range = {-10, 10} } } }\n",
                             "free.lua");
  CU_ASSERT_EQUAL(pol ? param_value(pol, "anything") : 0, -5);
  pt_policy_free(pol);
}

static void test_load_errors(void) {
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  CU_ASSERT_EQUAL(pt_policy_load("/nonexistent/policy.lua", NULL, &err, &pol), PT_EIO);
  CU_ASSERT(msg_ok(err.msg, "/nonexistent/policy.lua", 0, "No such file or directory"));
  CU_ASSERT_PTR_NULL(pol);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", pt_test_src("policies"));
  CU_ASSERT_EQUAL(pt_policy_load(dir, NULL, &err, &pol), PT_EIO);
  CU_ASSERT(msg_ok(err.msg, dir, 0, "Is a directory"));

  pt_policy_limits small = {.max_bytes = 100};
  const char *big = "-- a comment long enough to pass a hundred bytes..........................................\n"
                    "return { name = 'x', mechanism = 'direct' }\n";
  CU_ASSERT_EQUAL(pt_policy_load_buffer(big, strlen(big), "big.lua", &small, &err, &pol), PT_ELIMIT);
  CU_ASSERT(msg_ok(err.msg, "big.lua", 0, "over the 100-byte limit"));
  const char *tiny = "return { name = 'x', mechanism = 'direct' }\n";
  CU_ASSERT_NOT_EQUAL(pt_policy_load_buffer(tiny, strlen(tiny), "tiny.lua", &small, &err, &pol), 0);
  CU_ASSERT(msg_ok(err.msg, "tiny.lua", 0, "budget"));
  CU_ASSERT_PTR_NULL(pol);

  /* a byte-order mark is skipped; line numbers still count from the top */
  const char *bom = "\xEF\xBB\xBF-- bom\nerror('here')\n";
  CU_ASSERT_EQUAL(pt_policy_load_buffer(bom, strlen(bom), "bom.lua", NULL, &err, &pol), PT_EFORMAT);
  CU_ASSERT(msg_ok(err.msg, "bom.lua", 2, "here"));
  buffer_fails("error('no position', 0)\n", PT_EFORMAT, 1, "no position");
  buffer_fails("local x = nil\nlocal y = x.field\n", PT_EFORMAT, 2, "attempt to index a nil value (local 'x')");
}

/* Lua abbreviates long chunk names ("...tail"); messages still carry the whole path. */
static void test_long_path(void) {
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s", pt_test_tmp("-a-directory-name-long-enough-to-be-abbreviated-by-lua"));
  CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/also-a-rather-long-policy-file-name.lua", dir);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("local a = 1\nlocal b = a .. {}\n", f);
  CU_ASSERT_EQUAL(fclose(f), 0);
  pt_err err = {{0}};
  pt_policy *pol = NULL;
  CU_ASSERT(strlen(path) > 70);
  CU_ASSERT_EQUAL(pt_policy_load(path, NULL, &err, &pol), PT_EFORMAT);
  CU_ASSERT(msg_ok(err.msg, path, 2, "attempt to concatenate a table value"));
  f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("return {\n  name = 'x',\n  mechanism = 'nope' }\n", f);
  CU_ASSERT_EQUAL(fclose(f), 0);
  CU_ASSERT_EQUAL(pt_policy_load(path, NULL, &err, &pol), PT_EFORMAT);
  CU_ASSERT(msg_ok(err.msg, path, 3, "unknown mechanism 'nope'"));
  unlink(path);
  rmdir(dir);
}

/*
 * The allocator failing at every point: with each byte budget from too small
 * for a Lua state up to enough, loading and calling either works or fails
 * cleanly (an unprotected Lua error would abort the test).
 */
static void test_every_budget(void) {
  const char *path = src_path("policies/large_page_threshold.lua");
  int ok = 0, failed = 0, bad = 0;
  for (size_t max = 1024; max < 24 * 1024; max += 7) {
    pt_policy_limits lim = {.max_bytes = max};
    pt_err err = {{0}};
    pt_policy *pol = NULL;
    int rc = pt_policy_load(path, &lim, &err, &pol);
    if (rc) {
      failed++;
      bad += pol != NULL || (rc != PT_ELIMIT && rc != PT_ENOMEM) || !msg_ok(err.msg, path, -2, "limit");
      continue;
    }
    pt_policy_hooks h;
    pt_policy_get_hooks(pol, &h);
    uint64_t v;
    for (uint64_t b = 1; b < 200; b++) {
      rc = h.page_size(h.ctx, b * 4096, &v, &err);
      bad += rc != 0 && (rc != PT_ELIMIT || !msg_ok(err.msg, path, -2, "memory budget exceeded in page_size"));
      bad += rc == 0 && v != (b * 4096 >= 1048576 ? 2097152 : 65536);
    }
    ok++;
    pt_policy_free(pol);
  }
  CU_ASSERT(ok > 0 && failed > 0);
  CU_ASSERT_EQUAL(bad, 0);
}

static void test_hook_returns_string(void) {
  const char *path = src_path("tests/data/policies/hook_returns_string.lua");
  pt_policy *pol = load_ok(path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pol);
  pt_policy_hooks h;
  pt_policy_get_hooks(pol, &h);
  pt_err err = {{0}};
  uint64_t v = 0;
  CU_ASSERT_EQUAL(h.page_size(h.ctx, 4096, &v, &err), PT_EFORMAT);
  CU_ASSERT(msg_ok(err.msg, path, 6, "page_size returned the string \"2M\", expected a positive integer number of bytes"));
  pt_policy_free(pol);
}

/* A hook that spends most of its per-call budget on every call: the run's budget stops it, naming the
 * script and the hook; calls once the run's budget is spent fail at once; a new run starts afresh. */
static void test_run_budget(void) {
  pt_policy_limits lim = {.max_instructions = 1000000, .max_run_instructions = 5000000};
  const char *src = "return { name = 'burn', mechanism = 'caching',\n"
                    "  round = function(p, bytes) local n = 0 for i = 1, 300000 do n = n + i end return bytes end }\n";
  pt_policy *pol;
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_policy_load_buffer(src, strlen(src), "burn.lua", &lim, &err, &pol), 0);
  for (int run = 0; run < 2; run++) {
    pt_policy_hooks h;
    pt_policy_get_hooks(pol, &h); /* a run begins */
    uint64_t v, b;
    int rc = 0;
    uint64_t first = 1 + 1000 * (uint64_t)run; /* sizes not memoised yet */
    for (b = first; b < first + 100 && (rc = h.round(h.ctx, b * 512, &v, &err)) == 0; b++) {}
    CU_ASSERT_EQUAL(rc, PT_ELIMIT);
    CU_ASSERT_EQUAL(b - first + 1, 9); /* 600000 instructions a call: the 9th passes 5 million */
    CU_ASSERT(msg_ok(err.msg, "burn.lua", 2, "round: whole-run instruction budget exceeded (5000000 instructions"));
    CU_ASSERT_EQUAL(h.round(h.ctx, 999 * 512, &v, &err), PT_ELIMIT); /* spent: at once */
    CU_ASSERT(msg_ok(err.msg, "burn.lua", 0, "round: whole-run instruction budget exceeded"));
    CU_ASSERT_EQUAL(h.round(h.ctx, 512, &v, &err), 0); /* memoised: no Lua call, no budget */
  }
  pt_policy_free(pol);
}

int pt_test_add_policy(void) {
  CU_pSuite s = CU_add_suite("policy", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "every policies/*.lua loads, names a known mechanism, starts at its defaults", test_shipped_policies_load);
  CU_add_test(s, "pytorch_native carries PyTorch's defaults and no hooks", test_pytorch_native_defaults);
  CU_add_test(s, "parameters come in the order the script declares them", test_declared_order);
  CU_add_test(s, "--set takes values in range and refuses the rest with a clear message", test_set);
  CU_add_test(s, "large_page_threshold's hooks at 1 MiB - 1, 1 MiB, 3 MiB and after --set", test_large_page_threshold_hooks);
  CU_add_test(s, "size hooks are memoised (1e6 calls, one Lua call); should_collect is not", test_memoised);
  CU_add_test(s, "hook results: integers and integral floats pass, the rest are named", test_hook_results);
  CU_add_test(s, "hooks read p: pairs, integer parameters, --set", test_hook_reads_p);
  CU_add_test(s, "os.execute at load fails and runs nothing", test_no_os);
  CU_add_test(s, "io.open at load fails and creates nothing", test_no_io);
  CU_add_test(s, "require is absent", test_no_require);
  CU_add_test(s, "binary chunks are refused, loaded or in place of a script", test_no_bytecode);
  CU_add_test(s, "instruction, memory and time budgets stop loops, huge tables, slow C work", test_budgets);
  CU_add_test(s, "budgets in hooks: per call, re-armed, state survives", test_hook_budget);
  CU_add_test(s, "a whole run's budget stops a hook that burns its budget on every call", test_run_budget);
  CU_add_test(s, "malformed policy tables are refused at the line that wrote them", test_bad_tables);
  CU_add_test(s, "unreadable, oversized and positionless failures name the script", test_load_errors);
  CU_add_test(s, "long paths are named whole", test_long_path);
  CU_add_test(s, "a hook returning a string names the hook and its line", test_hook_returns_string);
  CU_add_test(s, "every byte budget: a policy loads and answers, or fails cleanly", test_every_budget);
  return CU_get_error();
}
