/*
 * test_libconf.c — the allocator library's configuration: real exports
 * (stitch, pytorch_native, a tuned one, one with hooks the library refuses),
 * every prefix of an export, each edit that must be refused with the file and
 * position named, and the PAGETUNE_ALLOC_CONF form.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconf.h"
#include "testutil.h"

static char *slurp(const char *rel, size_t *n) {
  FILE *f = fopen(pt_test_src(rel), "rb");
  if (!f) return NULL;
  char *buf = malloc(65536);
  *n = buf ? fread(buf, 1, 65535, f) : 0;
  if (buf) buf[*n] = 0;
  fclose(f);
  return buf;
}

static void test_real_exports(void) {
  pt_libconf c;
  pt_err err = {""};
  CU_ASSERT_EQUAL_FATAL(pt_libconf_load(pt_test_src("tests/data/libconf/stitch.json"), &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_stitch);
  CU_ASSERT_STRING_EQUAL(c.policy, "stitch");
  CU_ASSERT_EQUAL(c.params.n, 1);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "stitch_min_bytes", 0), 2097152);
  CU_ASSERT_EQUAL(c.capacity, 0);
  CU_ASSERT_EQUAL(c.device_total_bytes, UINT64_C(150109880320));

  CU_ASSERT_EQUAL_FATAL(pt_libconf_load(pt_test_src("tests/data/libconf/pytorch_native.json"), &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_caching);
  CU_ASSERT_STRING_EQUAL(c.policy, "pytorch_native");
  CU_ASSERT_EQUAL(c.params.n, 0); /* PyTorch's defaults */

  CU_ASSERT_EQUAL_FATAL(pt_libconf_load(pt_test_src("tests/data/libconf/pytorch_native_tuned.json"), &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_caching);
  CU_ASSERT_EQUAL(c.params.n, 2);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "garbage_collection_threshold", 0), 0.6);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "max_split_size_mb", 0), 64);
  CU_ASSERT_EQUAL(c.capacity, UINT64_C(629145600));

  /* a policy with hooks: the library cannot run it, and says so in one line naming the file */
  const char *path = pt_test_src("tests/data/libconf/large_page_threshold.json");
  char want[4096];
  snprintf(want, sizeof want,
           "%s: line 13, column 170: pagetune_library.conf column 95: hooks=policy: the policy large_page_threshold has hooks (Lua), which "
           "the library cannot run: it runs mechanisms only",
           path);
  CU_ASSERT_EQUAL(pt_libconf_load(path, &c, &err), PT_EFORMAT);
  CU_ASSERT_STRING_EQUAL(err.msg, want);
  CU_ASSERT_PTR_NULL(c.mech); /* nothing half-filled */

  CU_ASSERT_EQUAL(pt_libconf_load("/nonexistent/x.json", &c, &err), PT_EIO);
  CU_ASSERT_STRING_EQUAL(err.msg, "/nonexistent/x.json: cannot open: No such file or directory");
}

/* Every prefix of each real export fails with the name first, never a crash; the whole file loads. */
static void test_every_prefix(void) {
  const char *files[] = {"tests/data/libconf/stitch.json", "tests/data/libconf/pytorch_native_tuned.json"};
  for (size_t f = 0; f < 2; f++) {
    size_t n;
    char *s = slurp(files[f], &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    size_t close = n;
    while (close > 0 && s[close - 1] != '}') close--;
    for (size_t k = 0; k <= n; k++) {
      char *copy = malloc(k ? k : 1);
      CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
      memcpy(copy, s, k);
      pt_libconf c;
      pt_err err = {""};
      int rc = pt_libconf_parse(copy, k, "t.json", &c, &err);
      CU_ASSERT_EQUAL(rc, k < close ? PT_EFORMAT : 0);
      if (k < close) CU_ASSERT_NSTRING_EQUAL(err.msg, "t.json: line ", 13);
      free(copy);
    }
    free(s);
  }
}

/* The stitch export with one edit: from replaced by to (which must occur). */
static int edited(const char *from, const char *to, size_t to_len, pt_libconf *c, pt_err *err) {
  size_t n;
  char *s = slurp("tests/data/libconf/stitch.json", &n);
  if (!s) return 1;
  char *at = strstr(s, from);
  CU_ASSERT_PTR_NOT_NULL(at);
  if (!at) {
    free(s);
    return 1;
  }
  size_t fl = strlen(from), tl = to_len ? to_len : strlen(to);
  char *t = malloc(n - fl + tl);
  memcpy(t, s, (size_t)(at - s));
  memcpy(t + (at - s), to, tl);
  memcpy(t + (at - s) + tl, at + fl, n - (size_t)(at - s) - fl);
  int rc = pt_libconf_parse(t, n - fl + tl, "e.json", c, err);
  free(t);
  free(s);
  return rc;
}

/* the library's conf as the stitch export writes it (its env holds the same text) */
#define LIBCONF "\"conf\": \"mechanism=stitch,policy=stitch,"

static void test_refused_edits(void) {
  static const struct {
    const char *from, *to;
    size_t to_len;
    const char *msg;
  } cases[] = {
      {"\"mechanism\": \"stitch\"", "\"mechanism\": \"stitchy\"", 0,
       "e.json: line 3, column 16: unknown mechanism \"stitchy\" (one of: direct, caching, expandable, async_pool, stitch)"},
      {"\"mechanism\": \"stitch\"", "\"mechanism\": 3", 0, "e.json: line 3, column 16: mechanism must be a string, not a number"},
      {"\"mechanism\": \"stitch\"", "\"mech\": \"stitch\"", 0, "e.json: mechanism is missing"},
      {"\"capacity\": 0", "\"capacity\": -1", 0,
       "e.json: line 10, column 15: capacity must be a whole number of bytes from 0 to 18446744073709551615, not -1"},
      {"\"capacity\": 0", "\"capacity\": 1.5", 0,
       "e.json: line 10, column 15: capacity must be a whole number of bytes from 0 to 18446744073709551615, not 1.5"},
      {"\"capacity\": 0", "\"capacity\": 18446744073709551616", 0,
       "e.json: line 10, column 15: capacity must be a whole number of bytes from 0 to 18446744073709551615, not 18446744073709551616"},
      {"\"capacity\": 0", "\"capacity\": 1e999", 0, "e.json: line 10, column 15: number '1e999' is out of range"},
      {"\"capacity\": 0", "\"capacity\": 0, \"capacity\": 1", 0, "e.json: line 10, column 18: duplicate key \"capacity\" (first at line 10, column 3)"},
      {"\"policy\": \"stitch\"", "\"policy\": \"st\\u0000tch\"", 0,
       "e.json: line 2, column 13: policy must be a name of 1 to 63 bytes without control characters"},
      {"\"policy\": \"stitch\"", "\"policy\": \"st\xfftch\"", 0, "e.json: line 2, column 16: byte 0xff in a string is not valid UTF-8"},
      {"\"policy\": \"stitch\"", "\"policy\": \"st\0tch\"", 18, "e.json: line 2, column 16: control character 0x00 in a string (write it as \\u0000)"},
      {"conf\": \"mechanism=stitch,", "conf\": \"mechanism=caching,", 0,
       "e.json: line 13, column 170: pagetune_library.conf column 11: mechanism=caching differs from the file's \"mechanism\": \"stitch\""},
      {LIBCONF "stitch_min_bytes=2097152\"}", LIBCONF "stitch_min_bytes=1\"}", 0,
       "e.json: line 13, column 170: pagetune_library.conf: stitch: stitch_min_bytes must be a whole number from 2097152 to "
       "1125899906842624, not 1"},
      {LIBCONF "stitch_min_bytes=2097152\"}", LIBCONF "stitch_min_bytes=2MiB\"}", 0,
       "e.json: line 13, column 170: pagetune_library.conf column 49: stitch_min_bytes: '2MiB' is not a number"},
      {LIBCONF "stitch_min_bytes=2097152\"}", LIBCONF "stitch_min_bytes=2097152,stitch_min_bytes=4194304\"}", 0,
       "e.json: line 13, column 170: pagetune_library.conf column 57: duplicate key stitch_min_bytes (first at column 32)"},
      {LIBCONF "stitch_min_bytes=2097152\"}", LIBCONF "stitch_min_bytes=2097152,capacity=5\"}", 0,
       "e.json: line 13, column 170: pagetune_library.conf column 66: capacity=5 differs from the file's \"capacity\": 0"},
      {LIBCONF "stitch_min_bytes=2097152\"}", LIBCONF "max_split_size_mb=64\"}", 0,
       "e.json: line 13, column 170: pagetune_library.conf column 32: stitch has no parameter max_split_size_mb (it has: stitch_min_bytes, "
       "max_stitched)"},
      {"\"conf\": \"mechanism", "\"conf\": [\"mechanism", 0, NULL}, /* malformed: any JSON error */
      {"\"pagetune_library\": {", "\"pagetune_librar\": {", 0, "e.json: pagetune_library is missing"},
      {"\"pagetune_library\": {", "\"pagetune_library\": [{", 0, NULL},
      {"{\n", "[{\n", 0, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pt_libconf c;
    pt_err err = {""};
    int rc = edited(cases[i].from, cases[i].to, cases[i].to_len, &c, &err);
    CU_ASSERT(rc < 0);
    CU_ASSERT_PTR_NULL(c.mech);
    CU_ASSERT_NSTRING_EQUAL(err.msg, "e.json: ", 8);
    if (cases[i].msg && strcmp(err.msg, cases[i].msg)) fprintf(stderr, "\ncase %zu: got \"%s\"\n", i, err.msg);
    if (cases[i].msg) CU_ASSERT_STRING_EQUAL(err.msg, cases[i].msg);
  }
  /* keys the library does not read are skipped (formats grow by additions) */
  pt_libconf c;
  pt_err err;
  CU_ASSERT_EQUAL(edited("\"run_id\": 1", "\"run_id\": 1, \"later\": {\"x\": [1, 2]}", 0, &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_stitch);
}

static void test_conf_string(void) {
  pt_libconf c;
  pt_err err = {""};
  CU_ASSERT_EQUAL_FATAL(pt_libconf_from_conf_string("mechanism=caching,max_split_size_mb=64", &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_caching);
  CU_ASSERT_EQUAL(c.params.n, 1);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "max_split_size_mb", 0), 64);
  CU_ASSERT_STRING_EQUAL(c.policy, "");
  CU_ASSERT_EQUAL_FATAL(pt_libconf_from_conf_string(" mechanism = caching , max_split_size_mb=Infinity,policy=mine,capacity=629145600,"
                                                    "garbage_collection_threshold=6e-1,device_total_bytes=150109880320",
                                                    &c, &err),
                        0);
  CU_ASSERT(isinf(pt_params_get(&c.params, "max_split_size_mb", 0)));
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "garbage_collection_threshold", 0), 0.6);
  CU_ASSERT_STRING_EQUAL(c.policy, "mine");
  CU_ASSERT_EQUAL(c.capacity, UINT64_C(629145600));
  CU_ASSERT_EQUAL(c.device_total_bytes, UINT64_C(150109880320));
  CU_ASSERT_EQUAL(pt_libconf_from_conf_string("mechanism=stitch,stitch_min_bytes=2097152,policy=stitch", &c, &err), 0);
  CU_ASSERT_EQUAL(pt_libconf_from_conf_string("mechanism=caching,max_split_size_mb=inf", &c, &err), 0);
  /* a list value, its commas its own; written back the same way */
  CU_ASSERT_EQUAL_FATAL(pt_libconf_from_conf_string("mechanism=caching,roundup_power2_divisions=[256:1,512:2,1024:4,>:8],max_split_size_mb=64",
                                                    &c, &err), 0);
  const pt_plist *l = pt_params_get_list(&c.params, "roundup_power2_divisions");
  CU_ASSERT_FATAL(l != NULL);
  CU_ASSERT(l->v[8] == 1 && l->v[9] == 2 && l->v[10] == 4 && l->v[15] == 8);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "max_split_size_mb", 0), 64);
  char back[512];
  CU_ASSERT_EQUAL(pt_libconf_to_conf_string(&c, back, sizeof back), 0);
  CU_ASSERT_STRING_EQUAL(back, "mechanism=caching,roundup_power2_divisions=[256:1,512:2,1024:4,>:8],max_split_size_mb=64");
  CU_ASSERT_EQUAL(pt_libconf_from_conf_string("mechanism=caching,roundup_power2_divisions=[256:3]", &c, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "roundup_power2_divisions: divisions 3"));
  CU_ASSERT_EQUAL(pt_libconf_from_conf_string("mechanism=stitch,max_stitched=[1:2,>:4]", &c, &err), PT_EFORMAT); /* a number knob */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "max_stitched must be a number, not a list"));

  static const struct {
    const char *conf, *msg;
  } bad[] = {
      {"", "PAGETUNE_ALLOC_CONF: column 1: empty: no mechanism=NAME"},
      {"max_split_size_mb=64", "PAGETUNE_ALLOC_CONF: column 1: no mechanism= (one of: direct, caching, expandable, async_pool, stitch)"},
      {"mechanism=cache", "PAGETUNE_ALLOC_CONF: column 11: unknown mechanism 'cache' (one of: direct, caching, expandable, async_pool, stitch)"},
      {"mechanism=caching,mechanism=caching", "PAGETUNE_ALLOC_CONF: column 19: duplicate key mechanism (first at column 1)"},
      {"mechanism=caching,max_split_size_mb=abc", "PAGETUNE_ALLOC_CONF: column 37: max_split_size_mb: 'abc' is not a number"},
      {"mechanism=caching,max_split_size_mb=nan", "PAGETUNE_ALLOC_CONF: column 37: max_split_size_mb: 'nan' is not a number"},
      {"mechanism=caching,max_split_size_mb=0x40", "PAGETUNE_ALLOC_CONF: column 37: max_split_size_mb: '0x40' is not a number"},
      {"mechanism=caching,max_split_size_mb=64MB", "PAGETUNE_ALLOC_CONF: column 37: max_split_size_mb: '64MB' is not a number"},
      {"mechanism=caching,max_split_size_mb=1e999",
       "PAGETUNE_ALLOC_CONF: column 37: max_split_size_mb: '1e999' is out of range (write inf for no limit)"},
      {"mechanism=caching,max_split_size_mb=10",
       "PAGETUNE_ALLOC_CONF: caching: max_split_size_mb must be a number from 20 to inf, not 10"},
      {"mechanism=caching,garbage_collection_threshold=1.5",
       "PAGETUNE_ALLOC_CONF: caching: garbage_collection_threshold must be a number from 0 to 1, not 1.5"},
      {"mechanism=caching,max_split_size=64",
       "PAGETUNE_ALLOC_CONF: column 19: caching has no parameter max_split_size (it has: max_split_size_mb, max_non_split_rounding_mb, "
       "garbage_collection_threshold, roundup_power2_divisions)"},
      {"mechanism=caching,,max_split_size_mb=64", "PAGETUNE_ALLOC_CONF: column 19: an empty item"},
      {"mechanism=caching,", "PAGETUNE_ALLOC_CONF: column 19: an empty item"},
      {"mechanism=caching,max_split_size_mb", "PAGETUNE_ALLOC_CONF: column 19: 'max_split_size_mb' is not NAME=VALUE"},
      {"mechanism=caching,=64", "PAGETUNE_ALLOC_CONF: column 19: no name before '='"},
      {"mechanism=caching,max_split_size_mb=", "PAGETUNE_ALLOC_CONF: column 37: no value for max_split_size_mb"},
      {"mechanism=caching,max-split=1", "PAGETUNE_ALLOC_CONF: column 22: a name may hold only letters, digits, _ and . (not byte 0x2d)"},
      {"mechanism=stitch,capacity=40G", "PAGETUNE_ALLOC_CONF: column 27: capacity: '40G' is not a whole number of bytes"},
      {"mechanism=stitch,capacity=18446744073709551616",
       "PAGETUNE_ALLOC_CONF: column 27: capacity: '18446744073709551616' is not a whole number of bytes"},
      {"mechanism=caching,policy=large_page_threshold,large_page_threshold=1048576,hooks=policy",
       "PAGETUNE_ALLOC_CONF: column 76: hooks=policy: the policy has hooks (Lua), which the library cannot run: it runs mechanisms only"},
      {"mechanism=caching,device_total_bytes=1.5", "PAGETUNE_ALLOC_CONF: column 38: device_total_bytes must be a whole number of bytes"},
      {"mechanism=caching,policy=a\tb", "PAGETUNE_ALLOC_CONF: column 26: policy: a name of 1 to 63 bytes without control characters"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = pt_libconf_from_conf_string(bad[i].conf, &c, &err);
    CU_ASSERT(rc < 0);
    CU_ASSERT_PTR_NULL(c.mech);
    if (strcmp(err.msg, bad[i].msg)) fprintf(stderr, "\nconf %zu: got \"%s\"\n", i, err.msg);
    CU_ASSERT_STRING_EQUAL(err.msg, bad[i].msg);
  }
  CU_ASSERT_EQUAL(pt_libconf_from_conf_string(NULL, &c, &err), PT_EUSAGE);
}

int pt_test_add_libconf(void) {
  CU_pSuite s = CU_add_suite("libconf", NULL, NULL);
  if (!s) return CU_get_error();
  if (!CU_add_test(s, "real exports", test_real_exports) || !CU_add_test(s, "every prefix of an export", test_every_prefix) ||
      !CU_add_test(s, "refused edits of an export", test_refused_edits) || !CU_add_test(s, "PAGETUNE_ALLOC_CONF strings", test_conf_string))
    return CU_get_error();
  return CUE_SUCCESS;
}
