/* testutil.h — what the CUnit suites share: registration hooks and paths. */
#ifndef PT_TESTUTIL_H
#define PT_TESTUTIL_H

#include <CUnit/CUnit.h>

/* One per module; each adds its suite and returns a CUE_* code. */
int pt_test_add_pickle(void);
int pt_test_add_trace(void);
int pt_test_add_snapshot(void);
int pt_test_add_gen(void);
int pt_test_add_u64map(void);
int pt_test_add_caching(void);
int pt_test_add_mechs(void);
int pt_test_add_policy(void);
int pt_test_add_pagetable(void);
int pt_test_add_tlb(void);
int pt_test_add_cost(void);
int pt_test_add_work(void);
int pt_test_add_gpu(void);
int pt_test_add_tune(void);
int pt_test_add_store(void);
int pt_test_add_report(void);
int pt_test_add_export(void);
int pt_test_add_device(void);
int pt_test_add_paramjson(void);
int pt_test_add_alloc(void);
int pt_test_add_cli(void);
int pt_test_add_jsonread(void);
int pt_test_add_libconf(void);
int pt_test_add_record(void);
int pt_test_add_sizetab(void);
int pt_test_add_hooktab(void);
int pt_test_add_calibrate(void);
int pt_test_add_confirm(void);

/* Path of a file under the source tree (tests/data/...), in a static buffer. */
const char *pt_test_src(const char *rel);
/* A fresh temporary file name under TMPDIR with the given suffix. */
const char *pt_test_tmp(const char *suffix);

#endif
