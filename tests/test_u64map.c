/* test_u64map.c — the hash map against a plain array, over random operations. */
#include <stdlib.h>

#include "testutil.h"
#include "u64map.h"

#define KEYS 3000

static void test_random_ops(void) {
  pt_u64map m = {0};
  static uint64_t ref[KEYS];
  static int present[KEYS];
  srand(1);
  /* keys clustered so probe runs collide and wrap, plus the reserved UINT64_MAX */
  uint64_t keyof[KEYS];
  for (int i = 0; i < KEYS; i++) keyof[i] = i == 0 ? UINT64_MAX : (uint64_t)i * 64;
  for (int step = 0; step < 200000; step++) {
    int k = rand() % KEYS, op = rand() % 3;
    if (op == 0) {
      uint64_t v = (uint64_t)rand();
      CU_ASSERT_EQUAL_FATAL(pt_u64map_put(&m, keyof[k], v), 0);
      ref[k] = v;
      present[k] = 1;
    } else if (op == 1) {
      CU_ASSERT_EQUAL(pt_u64map_del(&m, keyof[k]), present[k]);
      present[k] = 0;
    } else {
      uint64_t *v = pt_u64map_get(&m, keyof[k]);
      CU_ASSERT_EQUAL(v != NULL, present[k]);
      if (v && present[k]) CU_ASSERT_EQUAL(*v, ref[k]);
    }
  }
  size_t n = 0;
  for (int i = 0; i < KEYS; i++) {
    n += (size_t)present[i];
    uint64_t *v = pt_u64map_get(&m, keyof[i]);
    CU_ASSERT_EQUAL(v != NULL, present[i]);
  }
  CU_ASSERT_EQUAL(m.len, n);
  pt_u64map_free(&m);
}

int pt_test_add_u64map(void) {
  CU_pSuite s = CU_add_suite("u64map", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "random puts, gets and deletes agree with an array", test_random_ops);
  return CU_get_error();
}
