/* test_paramjson.c — parameters as JSON: the store key's exact text, and back. */
#include <math.h>
#include <string.h>

#include "paramjson.h"
#include "testutil.h"

static pt_params sample(void) {
  pt_params p = {0};
  pt_params_set(&p, "max_split_size_mb", INFINITY);
  pt_params_set(&p, "garbage_collection_threshold", 0.6);
  pt_params_set(&p, "roundup_power2_divisions", 0);
  pt_params_set(&p, "expandable_segments", 1);
  return p;
}

/* The store finds a resumed sweep's runs by this text: it must not change. */
static void test_writer_text(void) {
  pt_params p = sample();
  char buf[PT_PARAMS_JSON_MAX];
  CU_ASSERT_EQUAL(pt_params_json(&p, 1, buf, sizeof buf), 0);
  CU_ASSERT_STRING_EQUAL(buf, "{\"expandable_segments\":1,\"garbage_collection_threshold\":0.59999999999999998,"
                              "\"max_split_size_mb\":null,\"roundup_power2_divisions\":0}");
  CU_ASSERT_EQUAL(pt_params_json(&p, 0, buf, sizeof buf), 0);
  CU_ASSERT_STRING_EQUAL(buf, "{\"max_split_size_mb\":null,\"garbage_collection_threshold\":0.59999999999999998,"
                              "\"roundup_power2_divisions\":0,\"expandable_segments\":1}");
  pt_params none = {0};
  CU_ASSERT_EQUAL(pt_params_json(&none, 1, buf, sizeof buf), 0);
  CU_ASSERT_STRING_EQUAL(buf, "{}");
  /* -0 is 0: one key for one setting (--grid garbage_collection_threshold=0,-0 stored two runs) */
  pt_params z = {0};
  pt_params_set(&z, "garbage_collection_threshold", -0.0);
  pt_params_set(&z, "roundup_power2_divisions", 0);
  pt_plist l = {.n = 2, .v = {-0.0, 4}};
  pt_params_set_list(&z, "r", &l);
  CU_ASSERT_EQUAL(pt_params_json(&z, 1, buf, sizeof buf), 0);
  CU_ASSERT_STRING_EQUAL(buf, "{\"garbage_collection_threshold\":0,\"r\":[0,4],\"roundup_power2_divisions\":0}");
}

static void test_writer_limit(void) {
  pt_params p = sample();
  char small[40];
  CU_ASSERT_EQUAL(pt_params_json(&p, 1, small, sizeof small), PT_ELIMIT);
  CU_ASSERT_STRING_EQUAL(small, "");
  /* the largest pt_params fits PT_PARAMS_JSON_MAX */
  pt_params big = {0};
  for (int i = 0; i < PT_MAX_PARAMS; i++) {
    char name[PT_PARAM_NAME_MAX];
    memset(name, 'a' + i % 26, sizeof name - 1);
    name[sizeof name - 1] = 0;
    name[0] = (char)('A' + i);
    CU_ASSERT_EQUAL(pt_params_set(&big, name, -1.2345678901234567e-308), 0);
  }
  char buf[PT_PARAMS_JSON_MAX];
  CU_ASSERT_EQUAL(pt_params_json(&big, 1, buf, sizeof buf), 0);
}

static void test_round_trip(void) {
  pt_params p = sample(), q;
  pt_params_set(&p, "tiny", 1e-300);
  pt_params_set(&p, "third", 1.0 / 3);
  char buf[PT_PARAMS_JSON_MAX], again[PT_PARAMS_JSON_MAX];
  for (int sorted = 0; sorted < 2; sorted++) {
    CU_ASSERT_EQUAL_FATAL(pt_params_json(&p, sorted, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL_FATAL(pt_params_from_json(buf, &q), 0);
    CU_ASSERT_EQUAL(q.n, p.n);
    for (int i = 0; i < p.n; i++) {
      double v = pt_params_get(&q, p.v[i].name, NAN);
      CU_ASSERT(v == p.v[i].value); /* exact: %.17g round-trips a double; null is inf again */
    }
    CU_ASSERT_EQUAL(pt_params_json(&q, sorted, again, sizeof again), 0);
    CU_ASSERT_STRING_EQUAL(again, buf);
  }
  CU_ASSERT_EQUAL(pt_params_from_json(" { \"a\" : 1 , \"b\":null } ", &q), 0);
  CU_ASSERT_EQUAL(q.n, 2);
  CU_ASSERT(isinf(pt_params_get(&q, "b", 0)));
}

static void test_parser_refuses(void) {
  const char *bad[] = {"", "[]", "{", "{\"a\":}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{\"a\":\"x\"}", "{\"a\":true}",
                       "{a:1}", "{\"unterminated:1}", "{\"a\\\"b\":1}",
                       "{\"a_name_longer_than_the_forty_seven_bytes_a_name_may_have\":1}"};
  pt_params q;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CU_ASSERT_EQUAL(pt_params_from_json(bad[i], &q), PT_EFORMAT);
}

static int count_members(void *ctx, const pt_pj_member *m) {
  int *n = ctx;
  static const pt_pj_kind want[] = {PT_PJ_STRING, PT_PJ_BOOL, PT_PJ_NULL, PT_PJ_NUMBER};
  CU_ASSERT_EQUAL(m->kind, want[*n % 4]);
  return ++*n == 5 ? -99 : 0;
}

/* The walker reads what the report shows: strings and booleans too, keys with escapes as written. */
static void test_walk(void) {
  int n = 0;
  CU_ASSERT_EQUAL(pt_params_json_walk("{\"k\\\"q\":\"v\",\"b\":false,\"n\":null,\"x\":-2.5e3}", count_members, &n), 0);
  CU_ASSERT_EQUAL(n, 4);
  n = 0;
  CU_ASSERT_EQUAL(pt_params_json_walk("{\"a\":\"1\",\"b\":true,\"c\":null,\"d\":4,\"e\":\"5\",\"f\":6}", count_members, &n), -99);
  CU_ASSERT_EQUAL(n, 5);
  n = 0;
  CU_ASSERT_EQUAL(pt_params_json_walk(NULL, count_members, &n), 0);
  CU_ASSERT_EQUAL(n, 0);
}


/* A list (mech.h) is an array of its table's numbers; numbers keep their text; arrays read back as lists. */
static void test_list_values(void) {
  pt_params p = {0}, q;
  pt_plist l = {16, {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8}};
  pt_params_set(&p, "b", 4);
  CU_ASSERT_EQUAL_FATAL(pt_params_set_list(&p, "a", &l), 0);
  char buf[PT_PARAMS_JSON_MAX], again[PT_PARAMS_JSON_MAX];
  CU_ASSERT_EQUAL_FATAL(pt_params_json(&p, 1, buf, sizeof buf), 0);
  CU_ASSERT_STRING_EQUAL(buf, "{\"a\":[1,1,1,1,1,1,1,1,1,2,4,8,8,8,8,8],\"b\":4}");
  CU_ASSERT_EQUAL_FATAL(pt_params_from_json(buf, &q), 0);
  const pt_plist *got = pt_params_get_list(&q, "a");
  CU_ASSERT_FATAL(got != NULL);
  CU_ASSERT_EQUAL(memcmp(got->v, l.v, sizeof l.v), 0);
  CU_ASSERT_EQUAL(pt_params_json(&q, 1, again, sizeof again), 0);
  CU_ASSERT_STRING_EQUAL(again, buf);
  /* an array of equal numbers is that number, as the writer would have written it */
  CU_ASSERT_EQUAL(pt_params_from_json("{\"a\":[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]}", &q), 0);
  CU_ASSERT(pt_params_get_list(&q, "a") == NULL && pt_params_get(&q, "a", 0) == 2);
  const char *bad[] = {"{\"a\":[]}", "{\"a\":[1,}", "{\"a\":[1 2]}", "{\"a\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
                       "{\"a\":[\"x\"]}", "{\"a\":[1,2]"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) CU_ASSERT_EQUAL(pt_params_from_json(bad[k], &q), PT_EFORMAT);
}

int pt_test_add_paramjson(void) {
  CU_pSuite s = CU_add_suite("paramjson", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "the writer's text is the store key's, sorted or in declared order", test_writer_text);
  CU_add_test(s, "a buffer too small is PT_ELIMIT; the largest parameters fit the maximum", test_writer_limit);
  CU_add_test(s, "written, parsed and written again: the same values and text", test_round_trip);
  CU_add_test(s, "the parser refuses what the writer never writes", test_parser_refuses);
  CU_add_test(s, "the walker yields each member's kind and stops on the callback's error", test_walk);
  CU_add_test(s, "a list value: an array of its table, read back as the list", test_list_values);
  return CU_get_error();
}
