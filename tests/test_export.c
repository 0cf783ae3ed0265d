/*
 * test_export.c — the export to a PyTorch image: each format for caching
 * with knobs, expandable, async and stitch with hooks; every conf string
 * parsed back equals the parameters and holds only keys PyTorch accepts;
 * --merge keeps foreign keys, overrides conflicting ones (with a note) and
 * refuses unknown keys and hostile characters; the GC warning and the
 * set_per_process_memory_fraction line appear exactly when they should, with
 * int(F * total) >= capacity.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "testutil.h"


#define GIB (UINT64_C(1) << 30)
#define H200 UINT64_C(150109880320)

static const char *const allowed[] = {"backend", "max_split_size_mb", "max_non_split_rounding_mb",
                                      "garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments",
                                      "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
                                      "pinned_num_register_threads"};

/* Output of pt_export_write in a malloc'd string (NULL on error, err filled). */
static char *render(const pt_export_input *in, const char *format, const char *merge, int *rc, pt_err *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  *rc = pt_export_write(f, in, format, merge, err);
  fclose(f);
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Every line is a comment, an export/ENV line, or empty: nothing a shell or Docker would run otherwise. */
static int lines_ok(const char *out, const char *live_prefix) {
  const char *p = out;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len && p[0] != '#' && strncmp(p, live_prefix, strlen(live_prefix))) return 0;
    /* a live line holds exactly one quoted value and nothing after it */
    if (len && p[0] != '#') {
      char q = live_prefix[0] == 'e' ? '\'' : '"';
      int quotes = 0;
      for (size_t i = 0; i < len; i++) quotes += p[i] == q;
      if (quotes != 2 || p[len - 1] != q) return 0;
    }
    p += len + (nl ? 1 : 0);
  }
  return 1;
}

/* Every key of a conf is one PyTorch accepts. */
static int only_allowed_keys(const char *conf) {
  char buf[PT_EXPORT_CONF_MAX];
  snprintf(buf, sizeof buf, "%s", conf);
  int depth = 0, at_key = 1;
  char *key = buf;
  for (char *p = buf;; p++) {
    if (*p == '[') depth++;
    if (*p == ']') depth--;
    if (at_key && *p == ':') {
      *p = 0;
      int ok = 0;
      for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) ok |= !strcmp(key, allowed[i]);
      if (!ok) return 0;
      at_key = 0;
    } else if (!*p || (*p == ',' && !depth)) {
      if (!*p) return 1;
      key = p + 1;
      at_key = 1;
    }
  }
}

static void exports_conf(const char *out, const char *conf, int dockerfile) {
  char line[2 * PT_EXPORT_CONF_MAX];
  const char *fmt1 = dockerfile ? "ENV PYTORCH_ALLOC_CONF=\"%s\"\n" : "export PYTORCH_ALLOC_CONF='%s'\n";
  const char *fmt2 = dockerfile ? "ENV PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n" : "export PYTORCH_CUDA_ALLOC_CONF='%s'\n";
  snprintf(line, sizeof line, fmt1, conf);
  CU_ASSERT_EQUAL(count(out, line), 1);
  snprintf(line, sizeof line, fmt2, conf);
  CU_ASSERT_EQUAL(count(out, line), 1);
}

/* ---- each format ------------------------------------------------------------------ */

static void test_caching_formats(void) {
  pt_params p = {0};
  pt_params_set(&p, "garbage_collection_threshold", 0.6);
  pt_params_set(&p, "max_split_size_mb", 64);
  pt_params_set(&p, "max_non_split_rounding_mb", 40);
  pt_params_set(&p, "roundup_power2_divisions", 4);
  pt_export_input in = {.policy = "pytorch_default", .mechanism = "caching", .params = &p, .capacity = 40 * GIB,
                        .device_total_bytes = H200, .trace = "llm_decode", .run_id = 12};
  const char *want = "garbage_collection_threshold:0.6,max_split_size_mb:64,max_non_split_rounding_mb:40,roundup_power2_divisions:4";
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, want);
  int rc;
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  exports_conf(env, want, 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_EQUAL(count(env, "#   torch.cuda.set_per_process_memory_fraction("), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "run 12"));
  CU_ASSERT_PTR_NULL(strstr(env, "PLANNED"));
  free(env);
  char *df = render(&in, "dockerfile", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  exports_conf(df, want, 1);
  CU_ASSERT(lines_ok(df, "ENV "));
  CU_ASSERT_PTR_NULL(strstr(df, "COPY"));
  free(df);
  char *js = render(&in, "json", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  char kv[512];
  snprintf(kv, sizeof kv, "\"pytorch_alloc_conf\": \"%s\"", want);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, kv));
  snprintf(kv, sizeof kv, "\"pytorch_cuda_alloc_conf\": \"%s\"", want);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, kv));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"run_id\": 12"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"trace\": \"llm_decode\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"mechanism\": \"caching\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"policy\": \"pytorch_default\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"memory_fraction\": 0."));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pagetune_library\": null"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"python\": [\"import torch\", \"torch.cuda.set_per_process_memory_fraction("));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"approximations\": []"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"warnings\": []"));
  free(js);
}

static void test_expandable_formats(void) {
  pt_params p = {0};
  pt_params_set(&p, "device_total_bytes", (double)H200);
  pt_export_input in = {.policy = "expandable", .mechanism = "expandable", .params = &p, .run_id = -1};
  int rc;
  pt_err err = {{0}};
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  exports_conf(env, "expandable_segments:True", 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NULL(strstr(env, "set_per_process_memory_fraction"));
  free(env);
  char *df = render(&in, "dockerfile", NULL, &rc, &err);
  exports_conf(df, "expandable_segments:True", 1);
  CU_ASSERT(lines_ok(df, "ENV "));
  free(df);
  char *js = render(&in, "json", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pytorch_alloc_conf\": \"expandable_segments:True\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"run_id\": null"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"trace\": null"));
  free(js);
  /* a large-pool page other than 20 MiB is not expressible: said so */
  pt_params_set(&p, "large_segment_size_mb", 64);
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "expandable_segments:True");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: large_segment_size_mb 64"));
}

static void test_async_formats(void) {
  pt_params p = {0};
  pt_params_set(&p, "release_threshold", 1 << 30);
  pt_export_input in = {.policy = "async", .mechanism = "async_pool", .params = &p, .run_id = 3};
  int rc;
  pt_err err = {{0}};
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  exports_conf(env, "backend:cudaMallocAsync", 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "# approximation: release_threshold (1073741824 B in the tuned run) is not expressible"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "UINT64_MAX"));
  free(env);
  char *df = render(&in, "dockerfile", NULL, &rc, &err);
  exports_conf(df, "backend:cudaMallocAsync", 1);
  CU_ASSERT(lines_ok(df, "ENV "));
  free(df);
  char *js = render(&in, "json", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pytorch_cuda_alloc_conf\": \"backend:cudaMallocAsync\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"approximations\": [\"release_threshold (1073741824 B"));
  free(js);
}

static void check_library_outputs(const pt_export_input *in) {
  int rc;
  pt_err err = {{0}};
  char *env = render(in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "PLANNED, NOT SHIPPED"));
  CU_ASSERT_PTR_NULL(strstr(env, "export PYTORCH_ALLOC_CONF")); /* nothing PyTorch-side to set */
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "export PAGETUNE_ALLOC_CONF='mechanism="));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "#   alloc = torch.cuda.memory.CUDAPluggableAllocator(\"/opt/pagetune/libpagetune_alloc.so\", "
                                     "\"pagetune_alloc\", \"pagetune_free\")"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "#   torch.cuda.memory.change_current_allocator(alloc)"));
  free(env);
  char *df = render(in, "dockerfile", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(lines_ok(df, "ENV ")); /* so the COPY line is a comment */
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "# COPY libpagetune_alloc.so /opt/pagetune/libpagetune_alloc.so\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "PLANNED, NOT SHIPPED"));
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "ENV PAGETUNE_ALLOC_CONF=\"mechanism="));
  free(df);
  char *js = render(in, "json", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pagetune_library\": {\"status\": \"planned, not shipped\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"warnings\": [\"PLANNED, NOT SHIPPED"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"python\": [\"# PLANNED, NOT SHIPPED"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pytorch_alloc_conf\": \"\""));
  free(js);
}

static void test_stitch_hooks_formats(void) {
  pt_params p = {0};
  pt_params_set(&p, "stitch_min_bytes", 8 << 20);
  pt_params_set(&p, "max_stitched", 16);
  pt_params_set(&p, "large_page_from", 1 << 30); /* a policy-only parameter its hooks read */
  pt_export_input in = {.policy = "stitch_big_pages", .mechanism = "stitch", .params = &p, .has_hooks = 1,
                        .capacity = 64 * GIB, .device_total_bytes = H200, .trace = "train", .run_id = 5};
  check_library_outputs(&in);
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: stitch"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: the policy's hooks"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "capacity=68719476736"));
  CU_ASSERT_PTR_NULL(strstr(notes, "set_per_process_memory_fraction(")); /* no cap line for a pluggable allocator */
  int rc;
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "export PAGETUNE_ALLOC_CONF='mechanism=stitch,policy=stitch_big_pages,capacity=68719476736,"
                                     "stitch_min_bytes=8388608,max_stitched=16,large_page_from=1073741824,hooks=policy'\n"));
  free(env);
  /* caching with hooks needs the library too; the nearest PyTorch setting is named */
  pt_params q = {0};
  pt_params_set(&q, "max_split_size_mb", 64);
  pt_export_input in2 = {.policy = "caching hooks", .mechanism = "caching", .params = &q, .has_hooks = 1, .run_id = -1};
  check_library_outputs(&in2);
  CU_ASSERT_EQUAL(pt_export_conf(&in2, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "nearest PyTorch setting is PYTORCH_ALLOC_CONF='max_split_size_mb:64'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "policy name written as 'caching_hooks'"));
  /* a parameter name that could break the library's conf is refused */
  pt_params bad = {0};
  pt_params_set(&bad, "x,y=1", 2);
  in2.params = &bad;
  CU_ASSERT_EQUAL(pt_export_conf(&in2, NULL, conf, sizeof conf, notes, sizeof notes, &err), PT_EFORBID);
}

static void test_direct(void) {
  pt_export_input in = {.policy = "direct", .mechanism = "direct", .capacity = 8 * GIB, .device_total_bytes = H200, .run_id = 1};
  int rc;
  pt_err err = {{0}};
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "export PYTORCH_NO_CUDA_MEMORY_CACHING='1'\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "# approximation: direct"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "does not enforce set_per_process_memory_fraction"));
  CU_ASSERT_PTR_NULL(strstr(env, "export PYTORCH_ALLOC_CONF"));
  CU_ASSERT(lines_ok(env, "export "));
  free(env);
}

/* ---- round trip and allowed keys --------------------------------------------------------- */

static void test_round_trip(void) {
  const double gcs[] = {0, 0.1, 0.6, 1.0 / 3, 0.999, 1};
  const double splits[] = {INFINITY, 20, 21, 64, 1000.7, 3e9};
  const double roundings[] = {20, 0, 40, 512.5, INFINITY};
  const double rp2s[] = {0, 1, 2, 4, 16};
  int cases = 0;
  for (size_t a = 0; a < sizeof gcs / sizeof gcs[0]; a++)
    for (size_t b = 0; b < sizeof splits / sizeof splits[0]; b++)
      for (size_t c = 0; c < sizeof roundings / sizeof roundings[0]; c++)
        for (size_t d = 0; d < sizeof rp2s / sizeof rp2s[0]; d++) {
          pt_params p = {0};
          pt_params_set(&p, "garbage_collection_threshold", gcs[a]);
          pt_params_set(&p, "max_split_size_mb", splits[b]);
          pt_params_set(&p, "max_non_split_rounding_mb", roundings[c]);
          pt_params_set(&p, "roundup_power2_divisions", rp2s[d]);
          pt_export_input in = {.policy = "rt", .mechanism = "caching", .params = &p, .run_id = -1};
          char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX], backend[32];
          pt_err err = {{0}};
          CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
          CU_ASSERT(only_allowed_keys(conf));
          pt_params back;
          CU_ASSERT_EQUAL_FATAL(pt_export_parse_conf(conf, &back, backend, sizeof backend, &err), 0);
          CU_ASSERT_STRING_EQUAL(backend, "native");
          /* what the model ran with, in PyTorch's terms */
          double gc = gcs[a] > 0 && gcs[a] < 1 ? gcs[a] : 0;
          double split = splits[b] >= PT_EXPORT_MB_UNLIMITED ? INFINITY : floor(splits[b]);
          double rounding = roundings[c] >= PT_EXPORT_MB_UNLIMITED ? INFINITY : roundings[c] < 20 ? 20 : floor(roundings[c]);
          double rp2 = rp2s[d] >= 2 ? rp2s[d] : 0;
          CU_ASSERT_EQUAL(pt_params_get(&back, "garbage_collection_threshold", 0), gc); /* exact: shortest round-trip digits */
          CU_ASSERT_EQUAL(pt_params_get(&back, "max_split_size_mb", INFINITY), split);
          CU_ASSERT_EQUAL(pt_params_get(&back, "max_non_split_rounding_mb", 20), rounding);
          CU_ASSERT_EQUAL(pt_params_get(&back, "roundup_power2_divisions", 0), rp2);
          /* defaults are left out */
          CU_ASSERT_EQUAL(strstr(conf, "garbage_collection_threshold") != NULL, gc != 0);
          CU_ASSERT_EQUAL(strstr(conf, "max_split_size_mb") != NULL, !isinf(split));
          CU_ASSERT_EQUAL(strstr(conf, "max_non_split_rounding_mb") != NULL, rounding != 20);
          CU_ASSERT_EQUAL(strstr(conf, "roundup_power2_divisions") != NULL, rp2 != 0);
          /* *_mb as integers */
          const char *ms = strstr(conf, "max_split_size_mb:");
          if (ms) CU_ASSERT(strspn(ms + 18, "0123456789") == strcspn(ms + 18, ","));
          cases++;
        }
  CU_ASSERT_EQUAL(cases, 900);
  /* the other mechanisms */
  const char *mechs[] = {"expandable", "async_pool"};
  for (int i = 0; i < 2; i++) {
    pt_export_input in = {.policy = "rt", .mechanism = mechs[i], .run_id = -1};
    char conf[PT_EXPORT_CONF_MAX], backend[32];
    pt_err err = {{0}};
    pt_params back;
    CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, NULL, conf, sizeof conf, NULL, 0, &err), 0);
    CU_ASSERT(only_allowed_keys(conf));
    CU_ASSERT_EQUAL_FATAL(pt_export_parse_conf(conf, &back, backend, sizeof backend, &err), 0);
    CU_ASSERT_EQUAL(pt_params_get(&back, "expandable_segments", 0), i == 0);
    CU_ASSERT_STRING_EQUAL(backend, i == 0 ? "native" : "cudaMallocAsync");
  }
}

/* ---- parse ------------------------------------------------------------------------------ */

static void test_parse_conf(void) {
  pt_params p;
  char backend[32];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL_FATAL(pt_export_parse_conf(" max_split_size_mb : 128 , expandable_segments:False,"
                                             "release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
                                             "pinned_num_register_threads:8,backend:native,garbage_collection_threshold:1e-3",
                                             &p, backend, sizeof backend, &err), 0);
  CU_ASSERT_EQUAL(pt_params_get(&p, "max_split_size_mb", 0), 128);
  CU_ASSERT_EQUAL(pt_params_get(&p, "expandable_segments", -1), 0);
  CU_ASSERT_EQUAL(pt_params_get(&p, "release_lock_on_cudamalloc", 0), 1);
  CU_ASSERT_EQUAL(pt_params_get(&p, "pinned_use_cuda_host_register", 0), 1);
  CU_ASSERT_EQUAL(pt_params_get(&p, "pinned_num_register_threads", 0), 8);
  CU_ASSERT_EQUAL(pt_params_get(&p, "garbage_collection_threshold", 0), 1e-3);
  CU_ASSERT_STRING_EQUAL(backend, "native");
  /* the list form, PyTorch 2.11's reading: [64:8,256:4,>:1] -> 0..6 = 8, 7 = 0, 8 = 4, 9..15 = 1 */
  CU_ASSERT_EQUAL_FATAL(pt_export_parse_conf("roundup_power2_divisions:[64:8,256:4,>:1]", &p, NULL, 0, &err), 0);
  const unsigned want[16] = {8, 8, 8, 8, 8, 8, 8, 0, 4, 1, 1, 1, 1, 1, 1, 1};
  for (int i = 0; i < 16; i++) {
    char name[48];
    snprintf(name, sizeof name, "roundup_power2_divisions.%d", i);
    CU_ASSERT_EQUAL(pt_params_get(&p, name, -1), want[i]);
  }
  CU_ASSERT_EQUAL(pt_export_parse_conf("roundup_power2_divisions:[1:4,>:4]", &p, NULL, 0, &err), 0);
  CU_ASSERT_EQUAL(pt_params_get(&p, "roundup_power2_divisions", 0), 4); /* uniform list = the integer form */
  CU_ASSERT_EQUAL(pt_export_parse_conf("", &p, backend, sizeof backend, &err), 0);
  CU_ASSERT_EQUAL(p.n, 0);
  CU_ASSERT_EQUAL(pt_export_parse_conf("backend:cudaMallocAsync", &p, backend, sizeof backend, &err), 0);
  CU_ASSERT_STRING_EQUAL(backend, "cudaMallocAsync");
  CU_ASSERT_EQUAL(pt_export_parse_conf("max_split_size_mb:2147483647", &p, NULL, 0, &err), 0);
  CU_ASSERT(isinf(pt_params_get(&p, "max_split_size_mb", 0)));

  /* refused, each with a reason */
  struct {
    const char *conf;
    int rc;
    const char *msg;
  } bad[] = {
      {"max_split_size_mb:64,bogus_key:1", PT_EFORMAT, "unknown key 'bogus_key'"},
      {"large_segment_size_mb:40", PT_EFORMAT, "unknown key 'large_segment_size_mb'"},
      {"garbage_collection_threshold:0", PT_EFORMAT, "open interval"},
      {"garbage_collection_threshold:1.0", PT_EFORMAT, "open interval"},
      {"garbage_collection_threshold:abc", PT_EFORMAT, "must be a number"},
      {"max_split_size_mb:19", PT_EFORMAT, "at least 20"},
      {"max_split_size_mb:64.5", PT_EFORMAT, "whole number"},
      {"max_non_split_rounding_mb:10", PT_EFORMAT, "at least 20"},
      {"roundup_power2_divisions:3", PT_EFORMAT, "power of two"},
      {"roundup_power2_divisions:0", PT_EFORMAT, "power of two"},
      {"roundup_power2_divisions:[64:3]", PT_EFORMAT, "power of two"},
      {"roundup_power2_divisions:[63:4]", PT_EFORMAT, "power of two"},
      {"roundup_power2_divisions:[64:4", PT_EFORMAT, "without ']'"},
      {"roundup_power2_divisions:[[64:4]]", PT_EFORMAT, "nested"},
      {"expandable_segments:true", PT_EFORMAT, "True or False"},
      {"backend:hipMallocAsync", PT_EFORMAT, "native or cudaMallocAsync"},
      {"pinned_num_register_threads:3", PT_EFORMAT, "power of two"},
      {"pinned_num_register_threads:256", PT_EFORMAT, "power of two"},
      {"max_split_size_mb:64,max_split_size_mb:128", PT_EFORMAT, "given twice"},
      {"max_split_size_mb:64,,expandable_segments:True", PT_EFORMAT, "empty item"},
      {"max_split_size_mb", PT_EFORMAT, "no ':VALUE'"},
      {"max_split_size_mb:", PT_EFORMAT, "empty value"},
      {"expandable_segments:True\n", PT_EFORBID, "0x0a"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err.msg[0] = 0;
    int rc = pt_export_parse_conf(bad[i].conf, &p, NULL, 0, &err);
    CU_ASSERT_EQUAL(rc, bad[i].rc);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, bad[i].msg));
    if (rc != bad[i].rc || !strstr(err.msg, bad[i].msg)) fprintf(stderr, "\n  '%s': %d %s\n", bad[i].conf, rc, err.msg);
  }
}

/* ---- merge ------------------------------------------------------------------------------- */

static void test_merge(void) {
  pt_params p = {0};
  pt_params_set(&p, "max_split_size_mb", 64);
  pt_params_set(&p, "garbage_collection_threshold", 0.6);
  pt_export_input in = {.policy = "p", .mechanism = "caching", .params = &p, .run_id = -1};
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  /* foreign-but-allowed keys kept in place, a conflicting one overridden, with a note */
  CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, "pinned_use_cuda_host_register:True, max_split_size_mb:128,release_lock_on_cudamalloc:True",
                                       conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "pinned_use_cuda_host_register:True,max_split_size_mb:64,release_lock_on_cudamalloc:True,"
                               "garbage_collection_threshold:0.6");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing max_split_size_mb:128 replaced by max_split_size_mb:64 (the tuned value)\n"));
  CU_ASSERT(only_allowed_keys(conf));
  CU_ASSERT_EQUAL(pt_export_parse_conf(conf, NULL, NULL, 0, &err), 0);
  /* the same value: no override */
  CU_ASSERT_EQUAL(pt_export_conf(&in, "max_split_size_mb:64", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "max_split_size_mb:64,garbage_collection_threshold:0.6");
  CU_ASSERT_PTR_NULL(strstr(notes, "override"));
  /* a key the mechanism decides, at a non-default value: removed, with a note; at the default: kept */
  CU_ASSERT_EQUAL(pt_export_conf(&in, "expandable_segments:True,backend:native", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "backend:native,garbage_collection_threshold:0.6,max_split_size_mb:64");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing expandable_segments:True removed"));
  /* async: the native-only knobs go (PyTorch ignores them and warns) */
  pt_export_input as = {.policy = "a", .mechanism = "async_pool", .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&as, "max_split_size_mb:128,pinned_num_register_threads:4", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "pinned_num_register_threads:4,backend:cudaMallocAsync");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing max_split_size_mb:128 removed: backend:cudaMallocAsync ignores it"));
  /* expandable: caching knobs kept, with a note that the model did not include them */
  pt_export_input ex = {.policy = "e", .mechanism = "expandable", .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&ex, "roundup_power2_divisions:[64:8,>:1],backend:cudaMallocAsync", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "roundup_power2_divisions:[64:8,>:1],expandable_segments:True");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing backend:cudaMallocAsync removed"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "note: existing roundup_power2_divisions:[64:8,>:1] kept"));
  /* merge into nothing-to-set still writes the (empty) value, so the image's old one is replaced */
  pt_export_input lib = {.policy = "s", .mechanism = "stitch", .run_id = -1};
  int rc;
  char *out = render(&lib, "env", "expandable_segments:True", &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "export PYTORCH_ALLOC_CONF=''\nexport PYTORCH_CUDA_ALLOC_CONF=''\n"));
  free(out);
}

static void test_merge_rejects(void) {
  pt_params p = {0};
  pt_params_set(&p, "max_split_size_mb", 64);
  pt_export_input in = {.policy = "p", .mechanism = "caching", .params = &p, .run_id = -1};
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_conf(&in, "max_split_size_mb:128,foo_bar:1", conf, sizeof conf, notes, sizeof notes, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--merge"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown key 'foo_bar'"));
  const char *hostile[] = {"max_split_size_mb:64'; rm -rf /; echo '", "max_split_size_mb:64\"\nRUN curl x|sh\n#",
                           "max_split_size_mb:$(reboot)", "max_split_size_mb:`id`", "max_split_size_mb:64\\",
                           "max_split_size_mb:64;id", "max_split_size_mb:64\r", "max_split_size_mb:64\t",
                           "expandable_segments:True\x1b[2J", "max_split_size_mb:64|x", "max_split_size_mb:64&"};
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    CU_ASSERT_EQUAL(pt_export_conf(&in, hostile[i], conf, sizeof conf, notes, sizeof notes, &err), PT_EFORBID);
    int rc;
    char *out = render(&in, "dockerfile", hostile[i], &rc, &err);
    CU_ASSERT_EQUAL(rc, PT_EFORBID);
    CU_ASSERT_STRING_EQUAL(out, ""); /* nothing written */
    free(out);
  }
  char longv[2 * PT_EXPORT_CONF_MAX];
  memset(longv, ' ', sizeof longv - 1);
  longv[sizeof longv - 1] = 0;
  CU_ASSERT_EQUAL(pt_export_conf(&in, longv, conf, sizeof conf, notes, sizeof notes, &err), PT_ELIMIT);
}

/* ---- the cap: GC warning and the fraction line -------------------------------------------- */

/* F from the env output's fraction line, or -1 when there is none. */
static double fraction_in(const char *out) {
  const char *p = strstr(out, "set_per_process_memory_fraction(");
  if (!p) return -1;
  return strtod(p + strlen("set_per_process_memory_fraction("), NULL);
}

static void test_gc_warning_and_fraction(void) {
  const double gcs[] = {0, 0.6};
  const uint64_t caps[] = {0, 40 * GIB, 100 * GIB + 12345, 2 << 20};
  for (int g = 0; g < 2; g++)
    for (int c = 0; c < 4; c++) {
      pt_params p = {0};
      pt_params_set(&p, "garbage_collection_threshold", gcs[g]);
      pt_export_input in = {.policy = "p", .mechanism = "caching", .params = &p, .capacity = caps[c], .device_total_bytes = H200, .run_id = -1};
      int rc;
      pt_err err = {{0}};
      char *env = render(&in, "env", NULL, &rc, &err);
      CU_ASSERT_EQUAL_FATAL(rc, 0);
      int warned = strstr(env, "# warning: garbage_collection_threshold does nothing without a memory-fraction cap") != NULL;
      CU_ASSERT_EQUAL(warned, gcs[g] > 0 && caps[c] == 0);
      CU_ASSERT_EQUAL(count(env, "set_per_process_memory_fraction("), caps[c] ? 1 : 0);
      double f = fraction_in(env);
      if (caps[c]) {
        CU_ASSERT(f > 0 && f < 1);
        uint64_t got = (uint64_t)(f * (double)H200); /* as PyTorch computes the cap */
        CU_ASSERT(got >= caps[c]);
        CU_ASSERT(got / (2 << 20) == caps[c] / (2 << 20)); /* the same 2 MiB steps fit */
      }
      free(env);
      char *js = render(&in, "json", NULL, &rc, &err);
      CU_ASSERT_EQUAL(strstr(js, "\"memory_fraction\": null") != NULL, caps[c] == 0);
      free(js);
    }
  /* the fraction itself, over many capacities and devices */
  const uint64_t totals[] = {H200, UINT64_C(85899345920), UINT64_C(25769803776), UINT64_C(1) << 40, 1000003};
  unsigned seed = 12345;
  for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++)
    for (int i = 0; i < 2000; i++) {
      seed = seed * 1103515245u + 12345u;
      uint64_t cap = 1 + (uint64_t)(((double)seed / 4294967296.0) * (double)(totals[t] - 1));
      if (i == 0) cap = 1;
      if (i == 1) cap = totals[t] - 1;
      char buf[32];
      pt_err err = {{0}};
      int rc = pt_export_fraction(cap, totals[t], buf, sizeof buf, &err);
      CU_ASSERT_EQUAL(rc, 0);
      if (rc != 0) {
        fprintf(stderr, "\n  fraction(%llu, %llu): %s\n", (unsigned long long)cap, (unsigned long long)totals[t], err.msg);
        continue;
      }
      double f = strtod(buf, NULL);
      uint64_t got = (uint64_t)(f * (double)totals[t]);
      CU_ASSERT(f < 1.0);
      CU_ASSERT(got >= cap);
      CU_ASSERT(got / (2 << 20) == cap / (2 << 20));
      CU_ASSERT(strlen(buf) <= 19);
    }
  char buf[32];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_fraction(H200, H200, buf, sizeof buf, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_export_fraction(H200 + 1, H200, buf, sizeof buf, &err), PT_EUSAGE);
  CU_ASSERT_EQUAL(pt_export_fraction(0, H200, buf, sizeof buf, &err), PT_EUSAGE);
  /* a cap the device cannot hold: warned, no fraction line */
  pt_export_input big = {.policy = "p", .mechanism = "caching", .capacity = 2 * H200, .device_total_bytes = H200, .run_id = -1};
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  CU_ASSERT_EQUAL(pt_export_conf(&big, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "warning: the tuned run's cap cannot be set"));
  CU_ASSERT_PTR_NULL(strstr(notes, "set_per_process_memory_fraction("));
  /* device unknown: the line computes F on the machine, from cap + 1 */
  pt_export_input unk = {.policy = "p", .mechanism = "expandable", .capacity = 40 * GIB, .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&unk, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "set_per_process_memory_fraction(42949672961 / torch.cuda.get_device_properties(0).total_memory)"));
}

/* ---- bad input, hostile names --------------------------------------------------------------- */

static void test_bad_input(void) {
  pt_err err = {{0}};
  char conf[PT_EXPORT_CONF_MAX];
  pt_export_input in = {.policy = "p", .mechanism = "slab", .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, NULL, 0, &err), PT_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown mechanism"));
  in.mechanism = "caching";
  int rc;
  char *out = render(&in, "yaml", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, PT_EUSAGE);
  free(out);
  pt_params p = {0};
  pt_params_set(&p, "roundup_power2_divisions", 3);
  in.params = &p;
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, NULL, 0, &err), PT_EUSAGE);
  pt_params_set(&p, "roundup_power2_divisions", NAN);
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, NULL, 0, &err), PT_EUSAGE);
  /* a conf buffer too small */
  pt_params_set(&p, "roundup_power2_divisions", 4);
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, 8, NULL, 0, &err), PT_ELIMIT);
  /* names with newlines and quotes stay inside comments and JSON strings */
  pt_export_input h = {.policy = "x'\n rm -rf / #", .mechanism = "caching", .params = &p, .trace = "t\"\nRUN id\n\xff",
                       .run_id = 1};
  out = render(&h, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(lines_ok(out, "export "));
  free(out);
  out = render(&h, "dockerfile", NULL, &rc, &err);
  CU_ASSERT(lines_ok(out, "ENV "));
  CU_ASSERT_PTR_NULL(strstr(out, "\nRUN"));
  free(out);
  out = render(&h, "json", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"trace\": \"t\\\"\\u000aRUN id\\u000a\\ufffd\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"policy\": \"x'\\u000a rm -rf / #\""));
  free(out);
}

int pt_test_add_export(void) {
  CU_pSuite s = CU_add_suite("export", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "caching with knobs: env, dockerfile, json", test_caching_formats);
  CU_add_test(s, "expandable: env, dockerfile, json", test_expandable_formats);
  CU_add_test(s, "async_pool: env, dockerfile, json; release threshold approximated", test_async_formats);
  CU_add_test(s, "stitch and hooks: pagetune library, planned not shipped", test_stitch_hooks_formats);
  CU_add_test(s, "direct: PYTORCH_NO_CUDA_MEMORY_CACHING, said to be the nearest", test_direct);
  CU_add_test(s, "round trip: exported conf parses back to the params, allowed keys only", test_round_trip);
  CU_add_test(s, "parse: accepted forms, list form, every refusal", test_parse_conf);
  CU_add_test(s, "merge: foreign keys kept, conflicts overridden with a note", test_merge);
  CU_add_test(s, "merge: unknown keys and hostile characters refused", test_merge_rejects);
  CU_add_test(s, "GC warning and fraction line exactly when due; int(F*total) >= capacity", test_gc_warning_and_fraction);
  CU_add_test(s, "bad input; hostile policy and trace names", test_bad_input);
  return CU_get_error();
}
