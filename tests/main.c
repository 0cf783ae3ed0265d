/*
 * tests/main.c — the CUnit runner: one suite per module.  Exit status 0 when
 * every test passed, 1 otherwise: a failed test, a suite whose setup or
 * teardown failed, or an error CUnit itself reports (never the failure count,
 * which automake would read as SKIP at 77 and ERROR at 99).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "testutil.h"

const char *pt_test_src(const char *rel) {
  static char buf[4096];
  const char *top = getenv("top_srcdir");
  snprintf(buf, sizeof buf, "%s/%s", top ? top : PT_SRCDIR, rel);
  return buf;
}

const char *pt_test_tmp(const char *suffix) {
  static char buf[4096];
  static unsigned n;
  const char *dir = getenv("TMPDIR");
  snprintf(buf, sizeof buf, "%s/pt-test-%ld-%u%s", dir ? dir : "/tmp", (long)getpid(), n++, suffix);
  return buf;
}

int main(void) {
  int (*adders[])(void) = {pt_test_add_pickle, pt_test_add_trace, pt_test_add_snapshot,
                           pt_test_add_gen, pt_test_add_u64map,
                           pt_test_add_caching, pt_test_add_mechs, pt_test_add_policy,
                           pt_test_add_pagetable, pt_test_add_tlb, pt_test_add_cost,
                           pt_test_add_gpu, pt_test_add_work, pt_test_add_tune, pt_test_add_store,
                           pt_test_add_report, pt_test_add_export, pt_test_add_device,
                           pt_test_add_paramjson, pt_test_add_cli, pt_test_add_alloc,
                           pt_test_add_jsonread, pt_test_add_libconf, pt_test_add_record,
                           pt_test_add_sizetab, pt_test_add_hooktab, pt_test_add_calibrate, pt_test_add_confirm};
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  for (size_t i = 0; i < sizeof adders / sizeof adders[0]; i++)
    if (adders[i]() != CUE_SUCCESS) {
      fprintf(stderr, "suite registration failed: %s\n", CU_get_error_msg());
      CU_cleanup_registry();
      return 1;
    }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_ErrorCode run = CU_basic_run_tests();
  unsigned failed = CU_get_number_of_tests_failed(), suites = CU_get_number_of_suites_failed();
  if (run != CUE_SUCCESS) fprintf(stderr, "CUnit error: %s\n", CU_get_error_msg());
  if (failed || suites) fprintf(stderr, "%u test(s) and %u suite(s) failed\n", failed, suites);
  CU_cleanup_registry();
  return run != CUE_SUCCESS || failed || suites ? 1 : 0;
}
