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

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "libconf.h"
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

static void check_library_outputs(const pt_export_input *in);

static void test_async_formats(void) {
  /* a pool that never releases is PyTorch's cudaMallocAsync backend */
  pt_params p = {0};
  pt_params_set(&p, "release_threshold", PT_EXPORT_ASYNC_NEVER);
  pt_export_input in = {.policy = "async", .mechanism = "async_pool", .params = &p, .run_id = 3};
  int rc;
  pt_err err = {{0}};
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  exports_conf(env, "backend:cudaMallocAsync", 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "# note: release_threshold 1125899906842624 B is at or above the device's memory"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "UINT64_MAX"));
  CU_ASSERT_PTR_NULL(strstr(env, "PAGETUNE"));
  free(env);
  char *df = render(&in, "dockerfile", NULL, &rc, &err);
  exports_conf(df, "backend:cudaMallocAsync", 1);
  CU_ASSERT(lines_ok(df, "ENV "));
  free(df);
  char *js = render(&in, "json", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pytorch_cuda_alloc_conf\": \"backend:cudaMallocAsync\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pagetune_library\": null"));
  free(js);
  /* on a known device, a threshold at its size never releases either */
  pt_params_set(&p, "release_threshold", (double)H200);
  in.device_total_bytes = H200;
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "backend:cudaMallocAsync");
  /* a pool that releases (below the device's size, or at every free) is not expressible: the library runs it */
  pt_params_set(&p, "release_threshold", 1 << 30);
  check_library_outputs(&in);
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: the pool's release (release_threshold 1073741824 B, trim_every_free 0) is not expressible"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "nearest PyTorch setting is PYTORCH_ALLOC_CONF='backend:cudaMallocAsync'"));
  pt_params_set(&p, "release_threshold", PT_EXPORT_ASYNC_NEVER);
  pt_params_set(&p, "trim_every_free", 1);
  check_library_outputs(&in);
  /* what describes the modelled run (the GPU's lag, where the trace began) is no setting: the library gets
     neither, a note says so when it is not at its default, chunk_mb (the pool's own) still goes */
  pt_params_set(&p, "free_lag", 8);
  pt_params_set(&p, "adopt_initial", 0);
  pt_params_set(&p, "chunk_mb", 32);
  char *lib = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(lib, "PAGETUNE_ALLOC_CONF='mechanism=async_pool"));
  CU_ASSERT_PTR_NULL(strstr(lib, ",free_lag="));
  CU_ASSERT_PTR_NULL(strstr(lib, ",adopt_initial="));
  CU_ASSERT_PTR_NOT_NULL(strstr(lib, "chunk_mb=32"));
  CU_ASSERT_PTR_NOT_NULL(strstr(lib, "parameter free_lag=8 describes the run the model replayed"));
  CU_ASSERT_PTR_NULL(strstr(lib, "parameter adopt_initial=0"));
  free(lib);
}

/* ---- Dockerfile lines: syntax, paths, and COPY against ENV ------------------------------------ */

/* NAME: [A-Za-z_][A-Za-z0-9_]* of n bytes. */
static int env_name_ok(const char *s, size_t n) {
  if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
  return 1;
}

/* A path in a COPY or ENV: printable, no spaces, quotes, backslashes or '$'. */
static int path_ok(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= ' ' || s[i] == 0x7f || s[i] == '"' || s[i] == '\'' || s[i] == '\\' || s[i] == '$') return 0;
  return 1;
}

#define DF_MAX 16
typedef struct dockerfile {
  int ncopy, nenv;
  char copy_src[DF_MAX][256], copy_dst[DF_MAX][256];
  char env_name[DF_MAX][64], env_val[DF_MAX][512];
} dockerfile;

static const char *df_env(const dockerfile *d, const char *name) {
  for (int i = 0; i < d->nenv; i++)
    if (!strcmp(d->env_name[i], name)) return d->env_val[i];
  return NULL;
}

static int df_copied_to(const dockerfile *d, const char *dst) {
  for (int i = 0; i < d->ncopy; i++)
    if (!strcmp(d->copy_dst[i], dst)) return 1;
  return 0;
}

/*
 * Every line of out is empty, a comment, COPY SRC DST or ENV NAME="VALUE": SRC relative, inside the
 * context (no ..), and a regular file under ctx when ctx is given; DST absolute; VALUE without quotes,
 * backslashes or newlines, '$' only in ${PYTHONPATH:+:$PYTHONPATH}; an instruction at most 200 bytes, a
 * comment at most 512.  Each problem is printed; the count comes back, and d holds the instructions.
 */
static int dockerfile_problems(const char *out, const char *ctx, dockerfile *d) {
  memset(d, 0, sizeof *d);
  int bad = 0;
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
    p += len + (nl ? 1 : 0);
#define DF_BAD(why)                                           \
  do {                                                        \
    fprintf(stderr, "\n  dockerfile: %s: '%s'\n", why, line); \
    bad++;                                                    \
    continue;                                                 \
  } while (0)
    if (!nl) DF_BAD("no newline at the end");
    if (!len) continue;
    if (line[0] == '#') {
      if (len > 512) DF_BAD("a comment over 512 bytes");
      continue;
    }
    if (len > 200) DF_BAD("an instruction over 200 bytes");
    if (!strncmp(line, "COPY ", 5)) {
      char *src = line + 5, *sp = strchr(src, ' ');
      if (!sp || strchr(sp + 1, ' ')) DF_BAD("COPY takes one source and one destination");
      *sp = 0;
      const char *dst = sp + 1;
      if (!path_ok(src, strlen(src)) || !path_ok(dst, strlen(dst))) DF_BAD("a COPY path with a character it should not have");
      if (src[0] == '/' || strstr(src, "..")) DF_BAD("a COPY source outside the context");
      if (dst[0] != '/') DF_BAD("a COPY destination that is not absolute");
      if (ctx) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", ctx, src);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) DF_BAD("a COPY source missing from the context");
      }
      if (d->ncopy == DF_MAX) DF_BAD("too many COPY lines");
      snprintf(d->copy_src[d->ncopy], sizeof d->copy_src[0], "%s", src);
      snprintf(d->copy_dst[d->ncopy++], sizeof d->copy_dst[0], "%s", dst);
    } else if (!strncmp(line, "ENV ", 4)) {
      const char *kv = line + 4, *eq = strchr(kv, '=');
      if (!eq || !env_name_ok(kv, (size_t)(eq - kv))) DF_BAD("ENV without NAME=");
      const char *v = eq + 1;
      size_t vl = strlen(v);
      if (vl < 2 || v[0] != '"' || v[vl - 1] != '"') DF_BAD("an ENV value not in double quotes");
      char val[512];
      snprintf(val, sizeof val, "%.*s", (int)(vl - 2), v + 1);
      if (strpbrk(val, "\"\\\n'`")) DF_BAD("an ENV value with a quote, backslash or backquote");
      const char *dollar = strchr(val, '$');
      if (dollar && strcmp(dollar, "${PYTHONPATH:+:$PYTHONPATH}")) DF_BAD("a '$' other than the PYTHONPATH suffix");
      if (d->nenv == DF_MAX) DF_BAD("too many ENV lines");
      snprintf(d->env_name[d->nenv], sizeof d->env_name[0], "%.*s", (int)(eq - kv), kv);
      snprintf(d->env_val[d->nenv++], sizeof d->env_val[0], "%s", val);
    } else {
      DF_BAD("not a comment, COPY or ENV");
    }
#undef DF_BAD
  }
  return bad;
}

/* A library export's lines agree with each other: PAGETUNE_CONFIG and PAGETUNE_ALLOC_LIB are files a COPY
   put in the image, PYTHONPATH starts with the directory both Python files went to and keeps the image's own. */
static int library_lines_agree(const dockerfile *d) {
  const char *conf = df_env(d, "PAGETUNE_CONFIG"), *lib = df_env(d, "PAGETUNE_ALLOC_LIB"), *pp = df_env(d, "PYTHONPATH");
  if (!conf || !lib || !pp || d->ncopy != 4) return 0;
  if (!df_copied_to(d, conf) || !df_copied_to(d, lib)) return 0;
  if (strcmp(lib + strlen(lib) - strlen("/libpagetune_alloc.so"), "/libpagetune_alloc.so")) return 0;
  const char *suffix = strstr(pp, "${PYTHONPATH:+:$PYTHONPATH}");
  if (!suffix || suffix[strlen("${PYTHONPATH:+:$PYTHONPATH}")]) return 0;
  char dir[512], want[600];
  snprintf(dir, sizeof dir, "%.*s", (int)(suffix - pp), pp);
  if (strchr(dir, ':')) return 0; /* one directory of ours */
  snprintf(want, sizeof want, "%s/sitecustomize.py", dir);
  if (!df_copied_to(d, want)) return 0;
  snprintf(want, sizeof want, "%s/pagetune_alloc.py", dir);
  if (!df_copied_to(d, want)) return 0;
  for (int i = 0; i < d->ncopy; i++) /* each source named as its destination: what a reader of the context expects */
    if (strcmp(strrchr(d->copy_src[i], '/') + 1, strrchr(d->copy_dst[i], '/') + 1)) return 0;
  return 1;
}

/* A runnable library export: no PLANNED text, the library's real function names, COPY and ENV lines that agree. */
static void check_library_outputs(const pt_export_input *in) {
  int rc;
  pt_err err = {{0}};
  char *env = render(in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NULL(strstr(env, "PLANNED"));
  CU_ASSERT_PTR_NULL(strstr(env, "\"pagetune_alloc\"")); /* the old, wrong function name */
  CU_ASSERT_PTR_NULL(strstr(env, "export PYTORCH_ALLOC_CONF")); /* nothing PyTorch-side to set */
  CU_ASSERT_EQUAL(count(env, "\nexport PAGETUNE_ALLOC_CONF='mechanism="), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "#   pagetune_alloc.install()  # = change_current_allocator(CUDAPluggableAllocator(LIB, "
                                     "\"pagetune_malloc\", \"pagetune_free\"))\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "# warning: pagetune's allocator library (libpagetune_alloc.so) replaces PyTorch's allocator"));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "raises RuntimeError, not torch.OutOfMemoryError"));
  free(env);
  char *df = render(in, "dockerfile", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  dockerfile d;
  CU_ASSERT_EQUAL(dockerfile_problems(df, NULL, &d), 0);
  CU_ASSERT(library_lines_agree(&d));
  CU_ASSERT_PTR_NULL(strstr(df, "PLANNED"));
  CU_ASSERT_PTR_NULL(df_env(&d, "PAGETUNE_ALLOC_CONF")); /* the image reads the file PAGETUNE_CONFIG names */
  CU_ASSERT_STRING_EQUAL(df_env(&d, "PAGETUNE_CONFIG"), PT_EXPORT_IMAGE_CONFIG);
  CU_ASSERT_STRING_EQUAL(df_env(&d, "PYTHONPATH"), PT_EXPORT_IMAGE_PYDIR "${PYTHONPATH:+:$PYTHONPATH}");
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "COPY pagetune/sitecustomize.py /opt/pagetune/python/sitecustomize.py\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "# Place in the build context first (or run this export with --context DIR"));
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "#   pagetune/pagetune.json "));
  free(df);
  char *js = render(in, "json", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pagetune_library\": {\"status\": \"runnable\", \"path\": \"/opt/pagetune/libpagetune_alloc.so\", "
                                    "\"alloc_fn\": \"pagetune_malloc\", \"free_fn\": \"pagetune_free\", \"config\": \"/opt/pagetune/pagetune.json\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"warnings\": [\"pagetune's allocator library"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"python\": [\"import pagetune_alloc"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pytorch_alloc_conf\": \"\""));
  CU_ASSERT_PTR_NULL(strstr(js, "PLANNED"));
  /* and the library's reader takes it, as the same mechanism */
  pt_libconf c;
  CU_ASSERT_EQUAL(pt_libconf_parse(js, strlen(js), "export.json", &c, &err), 0);
  if (c.mech) CU_ASSERT_STRING_EQUAL(c.mech->name, in->mechanism);
  CU_ASSERT_EQUAL(c.capacity, in->capacity);
  free(js);
}

/* A policy with hooks: marked not runnable everywhere, nothing that installs the library, and the library's reader refuses it. */
static void check_not_runnable(const pt_export_input *in) {
  int rc;
  pt_err err = {{0}};
  char *env = render(in, "env", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(lines_ok(env, "export "));
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "# warning: NOT RUNNABLE BY THE LIBRARY"));
  CU_ASSERT_PTR_NULL(strstr(env, "export PAGETUNE_ALLOC_CONF"));
  CU_ASSERT_PTR_NULL(strstr(env, "pagetune_alloc.install"));
  free(env);
  char *df = render(in, "dockerfile", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  dockerfile d;
  CU_ASSERT_EQUAL(dockerfile_problems(df, NULL, &d), 0);
  CU_ASSERT_EQUAL(d.ncopy, 0);
  CU_ASSERT_PTR_NULL(df_env(&d, "PAGETUNE_CONFIG"));
  CU_ASSERT_PTR_NULL(df_env(&d, "PYTHONPATH"));
  CU_ASSERT_PTR_NOT_NULL(strstr(df, "# NOT RUNNABLE BY THE LIBRARY (the policy has hooks): nothing to install."));
  free(df);
  char *js = render(in, "json", NULL, &rc, &err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"pagetune_library\": {\"status\": \"not runnable by the library: the policy has hooks (Lua)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"env\": {}"));
  pt_libconf c;
  CU_ASSERT_EQUAL(pt_libconf_parse(js, strlen(js), "export.json", &c, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "hooks=policy"));
  free(js);
}

static void test_stitch_hooks_formats(void) {
  pt_params p = {0};
  pt_params_set(&p, "stitch_min_bytes", 8 << 20);
  pt_params_set(&p, "max_stitched", 16);
  pt_export_input in = {.policy = "stitch", .mechanism = "stitch", .params = &p, .capacity = 64 * GIB, .device_total_bytes = H200,
                        .trace = "train", .run_id = 5};
  check_library_outputs(&in);
  char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: stitch"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "capacity=68719476736"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "without the library (keeping what a pluggable allocator loses), the nearest PyTorch setting is "
                                       "PYTORCH_ALLOC_CONF='expandable_segments:True'"));
  CU_ASSERT_PTR_NULL(strstr(notes, "set_per_process_memory_fraction(")); /* no cap line for a pluggable allocator */
  int rc;
  char *env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "export PAGETUNE_ALLOC_CONF='mechanism=stitch,policy=stitch,capacity=68719476736,"
                                     "stitch_min_bytes=8388608,max_stitched=16'\n"));
  free(env);
  /* a policy-only parameter (no hooks read it) is left out of what the library is told, with a note */
  pt_params_set(&p, "large_page_from", 1 << 30);
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "note: parameter large_page_from=1.07374e+09 is not a parameter of the stitch mechanism: not given to the library"));
  check_library_outputs(&in);

  /* with hooks: not runnable by the library, whatever the mechanism */
  in.has_hooks = 1;
  in.policy = "stitch_big_pages";
  check_not_runnable(&in);
  env = render(&in, "env", NULL, &rc, &err);
  CU_ASSERT_PTR_NOT_NULL(strstr(env, "#   mechanism=stitch,policy=stitch_big_pages,capacity=68719476736,"
                                     "stitch_min_bytes=8388608,max_stitched=16,large_page_from=1073741824,hooks=policy\n"));
  free(env);
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "approximation: the policy's hooks"));
  pt_params q = {0};
  pt_params_set(&q, "max_split_size_mb", 64);
  pt_export_input in2 = {.policy = "caching hooks", .mechanism = "caching", .params = &q, .has_hooks = 1, .run_id = -1};
  check_not_runnable(&in2);
  CU_ASSERT_EQUAL(pt_export_conf(&in2, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "instead, the nearest PyTorch setting is PYTORCH_ALLOC_CONF='max_split_size_mb:64'"));
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
          double gc = gcs[a] > 0 && gcs[a] < 1 ? round(gcs[a] * 1e4) / 1e4 : 0; /* a fraction to 4 decimals */
          double split = splits[b] >= PT_EXPORT_MB_UNLIMITED ? INFINITY : floor(splits[b]);
          double rounding = roundings[c] >= PT_EXPORT_MB_UNLIMITED ? INFINITY : roundings[c] < 20 ? 20 : floor(roundings[c]);
          double rp2 = rp2s[d] >= 2 ? rp2s[d] : 0;
          CU_ASSERT_EQUAL(pt_params_get(&back, "garbage_collection_threshold", 0), gc); /* exact: shortest digits of the rounded value */
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
  pt_params never = {0}; /* an async pool that never releases: PyTorch's backend */
  pt_params_set(&never, "release_threshold", PT_EXPORT_ASYNC_NEVER);
  for (int i = 0; i < 2; i++) {
    pt_export_input in = {.policy = "rt", .mechanism = mechs[i], .params = i ? &never : NULL, .run_id = -1};
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

/* Known values as the knobs can mean them: rounding noise is off, never on; tuned fractions exact. */
static void test_values_meant(void) {
  static const struct {
    double gc, split;
    const char *want, *note;
  } cases[] = {
      {5.551115123125783e-17, 4096, "max_split_size_mb:4096", "rounds to 0"},                   /* noise at 0: off */
      {0.00004, INFINITY, "", "rounds to 0"},                                                    /* below 1e-4: off */
      {0.63270000000000004, 165.3, "garbage_collection_threshold:0.6327,max_split_size_mb:165", NULL}, /* tune's */
      {1.0 / 3, 20.999999999, "garbage_collection_threshold:0.3333,max_split_size_mb:20", "0.3333"},
      {0.99996, INFINITY, "", "left out"},                                                        /* rounds to 1 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pt_params p = {0};
    pt_params_set(&p, "garbage_collection_threshold", cases[i].gc);
    pt_params_set(&p, "max_split_size_mb", cases[i].split);
    pt_export_input in = {.policy = "v", .mechanism = "caching", .params = &p, .run_id = -1};
    char conf[PT_EXPORT_CONF_MAX], notes[PT_EXPORT_NOTES_MAX];
    pt_err err = {{0}};
    CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, NULL, conf, sizeof conf, notes, sizeof notes, &err), 0);
    if (strcmp(conf, cases[i].want)) fprintf(stderr, "\ncase %zu: conf '%s', wanted '%s'\n", i, conf, cases[i].want);
    CU_ASSERT_STRING_EQUAL(conf, cases[i].want);
    if (cases[i].note) CU_ASSERT_PTR_NOT_NULL(strstr(notes, cases[i].note));
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
  const pt_plist *got = pt_params_get_list(&p, "roundup_power2_divisions");
  CU_ASSERT_FATAL(got != NULL);
  CU_ASSERT_EQUAL(got->n, 16);
  for (int i = 0; i < 16; i++) CU_ASSERT_EQUAL(got->v[i], want[i]);
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
      {"large_segment_size_mb:0", PT_EFORMAT, "greater than 0"},
      {"per_process_memory_fraction:1.5", PT_EFORMAT, "0 <= x <= 1"},
      {"garbage_collection_threshold:0", PT_EFORMAT, "0 < x < 1"},
      {"garbage_collection_threshold:1.0", PT_EFORMAT, "0 < x < 1"},
      {"garbage_collection_threshold:abc", PT_EFORMAT, "not a number"},
      {"max_split_size_mb:19", PT_EFORMAT, "requires >= 20"},
      {"max_split_size_mb:64.5", PT_EFORMAT, "whole number"},
      {"max_non_split_rounding_mb:10", PT_EFORMAT, "requires >= 20"},
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
  /* 2.11's later keys (lint's reader knows them: one reader) are kept as given, and are no parameter */
  CU_ASSERT_EQUAL_FATAL(pt_export_conf(&in, "per_process_memory_fraction:0.9,pinned_use_background_threads:True,"
                                       "graph_capture_record_stream_reuse:True,large_segment_size_mb:64",
                                       conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "per_process_memory_fraction:0.9,pinned_use_background_threads:True,"
                               "graph_capture_record_stream_reuse:True,large_segment_size_mb:64,"
                               "garbage_collection_threshold:0.6,max_split_size_mb:64");
  pt_params q = {0};
  CU_ASSERT_EQUAL(pt_export_parse_conf(conf, &q, NULL, 0, &err), 0);
  CU_ASSERT_EQUAL(q.n, 2);
  /* an unknown key's message names every key 2.11 accepts, the newest too */
  CU_ASSERT_EQUAL(pt_export_conf(&in, "bogus:1", conf, sizeof conf, notes, sizeof notes, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "graph_capture_record_stream_reuse"));
  /* the same value: no override */
  CU_ASSERT_EQUAL(pt_export_conf(&in, "max_split_size_mb:64", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "max_split_size_mb:64,garbage_collection_threshold:0.6");
  CU_ASSERT_PTR_NULL(strstr(notes, "override"));
  /* a key the mechanism decides, at a non-default value: removed, with a note; at the default: kept */
  CU_ASSERT_EQUAL(pt_export_conf(&in, "expandable_segments:True,backend:native", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "backend:native,garbage_collection_threshold:0.6,max_split_size_mb:64");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing expandable_segments:True removed"));
  /* async: the native-only knobs go (PyTorch ignores them and warns) */
  pt_params never = {0};
  pt_params_set(&never, "release_threshold", PT_EXPORT_ASYNC_NEVER);
  pt_export_input as = {.policy = "a", .mechanism = "async_pool", .params = &never, .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&as, "max_split_size_mb:128,pinned_num_register_threads:4", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "pinned_num_register_threads:4,backend:cudaMallocAsync");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing max_split_size_mb:128 removed: backend:cudaMallocAsync ignores it"));
  /* expandable: the knobs are the run's too (the model reads them with expandable segments): one at its default is removed */
  pt_export_input ex = {.policy = "e", .mechanism = "expandable", .run_id = -1};
  CU_ASSERT_EQUAL(pt_export_conf(&ex, "roundup_power2_divisions:[64:8,>:1],backend:cudaMallocAsync", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "expandable_segments:True");
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing backend:cudaMallocAsync removed"));
  CU_ASSERT_PTR_NOT_NULL(strstr(notes, "override: existing roundup_power2_divisions:[64:8,>:1] removed: the tuned run used expandable "
                                       "segments with this key at its default"));
  /* ... and one the run set replaces the merge's */
  pt_params exk = {0};
  pt_params_set(&exk, "max_split_size_mb", 64);
  ex.params = &exk;
  CU_ASSERT_EQUAL(pt_export_conf(&ex, "max_split_size_mb:128", conf, sizeof conf, notes, sizeof notes, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, "max_split_size_mb:64,expandable_segments:True");
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

/* ---- the build context, and the library's reader on every export ------------------------------ */

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int rc = fputs(text, f) < 0 ? -1 : 0;
  return fclose(f) || rc ? -1 : 0;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = calloc(1, 1 << 16);
  if (buf) fread(buf, 1, (1 << 16) - 1, f);
  fclose(f);
  return buf;
}

static void test_context(void) {
  char dir[] = "/tmp/pt_export_ctx_XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  char src[3][512], ctxdir[600], path[700];
  const char *names[] = {"lib.so", "alloc.py", "site.py"}, *texts[] = {"\177ELF fake\n", "# pagetune_alloc\n", "# sitecustomize\n"};
  for (int i = 0; i < 3; i++) {
    snprintf(src[i], sizeof src[i], "%s/%s", dir, names[i]);
    CU_ASSERT_EQUAL_FATAL(write_text(src[i], texts[i]), 0);
  }
  snprintf(ctxdir, sizeof ctxdir, "%s/ctx", dir);
  pt_params p = {0};
  pt_params_set(&p, "stitch_min_bytes", 4 << 20);
  pt_export_input in = {.policy = "stitch", .mechanism = "stitch", .params = &p, .capacity = 40 * GIB, .device_total_bytes = H200,
                        .trace = "train", .run_id = 9};
  pt_export_context ctx = {ctxdir, src[0], src[1], src[2]};
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  pt_err err = {{0}};
  CU_ASSERT_EQUAL(pt_export_write_context(f, &in, NULL, &ctx, &err), 0);
  fclose(f);
  dockerfile d;
  CU_ASSERT_EQUAL(dockerfile_problems(out, ctxdir, &d), 0); /* every COPY source is a file in the context */
  CU_ASSERT(library_lines_agree(&d));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "# --context wrote the files these COPY lines name"));
  CU_ASSERT_PTR_NULL(strstr(out, "# Place in the build context"));
  /* the same lines as without --context, but for that comment */
  int rc;
  char *plain = render(&in, "dockerfile", NULL, &rc, &err);
  dockerfile d2;
  dockerfile_problems(plain, NULL, &d2);
  CU_ASSERT_EQUAL(memcmp(&d, &d2, sizeof d), 0);
  free(plain);
  /* the copies are the sources; the config is the JSON export, and the library's reader loads it */
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", ctxdir, d.copy_src[i]);
    char *got = read_text(path);
    CU_ASSERT_PTR_NOT_NULL(got);
    if (got) CU_ASSERT_STRING_EQUAL(got, texts[i]);
    free(got);
  }
  snprintf(path, sizeof path, "%s/pagetune/pagetune.json", ctxdir);
  char *js = read_text(path), *want = render(&in, "json", NULL, &rc, &err);
  CU_ASSERT(js && want && !strcmp(js, want));
  free(js);
  free(want);
  pt_libconf c;
  CU_ASSERT_EQUAL(pt_libconf_load(path, &c, &err), 0);
  CU_ASSERT_PTR_EQUAL(c.mech, &pt_mech_stitch);
  CU_ASSERT_EQUAL(c.capacity, 40 * GIB);
  CU_ASSERT_EQUAL(c.device_total_bytes, H200);
  CU_ASSERT_EQUAL(pt_params_get(&c.params, "stitch_min_bytes", 0), 4 << 20);
  CU_ASSERT_STRING_EQUAL(c.policy, "stitch");
  struct stat st;
  snprintf(path, sizeof path, "%s/pagetune/libpagetune_alloc.so.tmp", ctxdir);
  CU_ASSERT_NOT_EQUAL(stat(path, &st), 0); /* no temporary left */
  free(out);

  /* hooks: refused, nothing written; a missing source: refused before anything is written */
  char other[700];
  snprintf(other, sizeof other, "%s/ctx2", dir);
  ctx.dir = other;
  in.has_hooks = 1;
  f = open_memstream(&out, &len);
  CU_ASSERT_EQUAL(pt_export_write_context(f, &in, NULL, &ctx, &err), PT_EFORBID);
  fclose(f);
  CU_ASSERT_STRING_EQUAL(out, "");
  free(out);
  in.has_hooks = 0;
  ctx.site_py = NULL;
  f = open_memstream(&out, &len);
  CU_ASSERT_EQUAL(pt_export_write_context(f, &in, NULL, &ctx, &err), PT_ENOTFOUND);
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "sitecustomize.py"));
  free(out);
  CU_ASSERT_NOT_EQUAL(stat(other, &st), 0);
  /* PyTorch's own allocator runs it: nothing written, and said */
  pt_export_input ex = {.policy = "e", .mechanism = "expandable", .run_id = -1};
  ctx.site_py = src[2];
  f = open_memstream(&out, &len);
  CU_ASSERT_EQUAL(pt_export_write_context(f, &ex, NULL, &ctx, &err), 0);
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "# --context: nothing written"));
  CU_ASSERT_EQUAL(dockerfile_problems(out, other, &d), 0);
  CU_ASSERT_EQUAL(d.ncopy, 0);
  free(out);
  CU_ASSERT_NOT_EQUAL(stat(other, &st), 0);

  /* clean up */
  const char *files[] = {"libpagetune_alloc.so", "pagetune_alloc.py", "sitecustomize.py", "pagetune.json"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/pagetune/%s", ctxdir, files[i]);
    remove(path);
  }
  snprintf(path, sizeof path, "%s/pagetune", ctxdir);
  rmdir(path);
  rmdir(ctxdir);
  for (int i = 0; i < 3; i++) remove(src[i]);
  rmdir(dir);
}

/* A value mp allows, drawn from its range (its ends and default often). */
static double draw(const pt_mech_param *mp, unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  unsigned r = *seed >> 8;
  double hi = isinf(mp->max) ? mp->min + 1e7 : mp->max, v;
  switch (r % 5) {
  case 0: v = mp->min; break;
  case 1: v = mp->max; break;
  case 2: v = mp->dflt; break;
  default: v = mp->min + (hi - mp->min) * ((r >> 4) % 10007) / 10007.0;
  }
  if (mp->kind == PT_PARAM_WHOLE) v = floor(v);
  if (mp->kind == PT_PARAM_EVEN) v = 2 * floor(v / 2);
  if (mp->kind == PT_PARAM_FLAG) v = r & 1;
  if (mp->kind == PT_PARAM_POW2) v = (r & 1) ? 0 : pow(2, floor(log2(v > 1 ? v : 1)));
  char buf[128];
  return pt_mech_param_violation(mp, v, buf, sizeof buf) ? mp->dflt : v;
}

/* Every export the library is told to run, as the file an image's PAGETUNE_CONFIG names, is read by the
   library's own reader (backend/libconf.c) as what was tuned: every mechanism, random parameters in range,
   policy-only ones, caps, device sizes, hostile names; with hooks, refused for its hooks.  An export
   PyTorch's allocator runs is read too when its policy name is one the reader takes. */
static void test_library_reads_every_export(void) {
  const pt_mech_ops *mechs[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable, &pt_mech_async_pool, &pt_mech_stitch};
  const char *names[] = {"stitch", "a b\nc", "", "x'\"$(id)", "a-very-long-policy-name-that-goes-on-and-on-past-the-sixty-four-bytes-the-library-keeps"};
  const uint64_t caps[] = {0, 600 << 20, 40 * GIB};
  const uint64_t totals[] = {0, H200};
  unsigned seed = 7;
  int runnable = 0, pytorch = 0, refused = 0;
  for (int m = 0; m < 5; m++)
    for (int k = 0; k < 120; k++) {
      pt_params p = {0};
      for (const pt_mech_param *mp = mechs[m]->params; mp->name; mp++)
        if ((seed = seed * 1103515245u + 12345u) >> 30) pt_params_set(&p, mp->name, draw(mp, &seed));
      if (k % 7 == 0) pt_params_set(&p, "policy_only", 3);
      if (k % 11 == 0) pt_params_set(&p, "device_total_bytes", (double)(k % 2 ? H200 : 85899345920.0));
      pt_export_input in = {.policy = names[k % 5], .mechanism = mechs[m]->name, .params = &p, .capacity = caps[k % 3],
                            .device_total_bytes = totals[(k / 3) % 2], .has_hooks = k % 13 == 5, .trace = "t", .run_id = k};
      int rc;
      pt_err err = {{0}};
      char *js = render(&in, "json", NULL, &rc, &err);
      if (rc != 0) { /* the export may refuse what PyTorch cannot take (a fraction of a cap above the device); never the library's part */
        CU_ASSERT(rc == PT_EUSAGE || rc == PT_EFORBID);
        free(js);
        continue;
      }
      pt_libconf c;
      pt_err lerr = {{0}};
      int lrc = pt_libconf_parse(js, strlen(js), "export.json", &c, &lerr);
      if (in.has_hooks) {
        CU_ASSERT_EQUAL(lrc, PT_EFORMAT);
        CU_ASSERT_PTR_NOT_NULL(strstr(lerr.msg, "hooks=policy"));
        refused++;
      } else if (strstr(js, "\"pagetune_library\": null") && (k % 5) != 0 && (k % 5) != 3) {
        /* PyTorch's allocator runs it and the image tells the library nothing; its "policy" is the name as given,
           which the library's reader takes only when it is 1 to 63 bytes without control characters */
        CU_ASSERT_EQUAL(lrc, PT_EFORMAT);
        CU_ASSERT_PTR_NOT_NULL(strstr(lerr.msg, "policy must be a name"));
      } else {
        CU_ASSERT_EQUAL(lrc, 0);
        if (lrc != 0) fprintf(stderr, "\n  %s: %s\n%s\n", mechs[m]->name, lerr.msg, js);
        else {
          CU_ASSERT_PTR_EQUAL(c.mech, mechs[m]);
          strstr(js, "\"pagetune_library\": null") ? pytorch++ : runnable++;
          if (!strstr(js, "\"pagetune_library\": null")) {
            CU_ASSERT_EQUAL(c.capacity, in.capacity);
            for (const pt_mech_param *mp = mechs[m]->params; mp->name; mp++) { /* what the library runs is what was tuned */
              int run = 0; /* but what describes the modelled run: the default */
              for (const char *const *r = mechs[m]->of_run; r && *r; r++) run |= !strcmp(*r, mp->name);
              CU_ASSERT_EQUAL(pt_params_get(&c.params, mp->name, mp->dflt), run ? mp->dflt : pt_params_get(&p, mp->name, mp->dflt));
            }
          }
        }
      }
      free(js);
    }
  CU_ASSERT(runnable > 100 && pytorch > 100 && refused > 20);
}

/* The plan confirm starts a process by: the same decisions the writers make. */
static void test_plan(void) {
  pt_err err;
  pt_export_plan pl;
  pt_params p = {0};
  pt_params_set(&p, "max_split_size_mb", 64);
  pt_params_set(&p, "garbage_collection_threshold", 0.6);
  pt_export_input in = {"tuned", "caching", &p, 4 * GIB, H200, 0, "t", 3, NULL, NULL, 0, NULL};
  CU_ASSERT_EQUAL_FATAL(pt_export_plan_of(&in, &pl, &err), 0);
  CU_ASSERT(!pl.library && !pl.runnable && pl.nenv == 0);
  CU_ASSERT_STRING_EQUAL(pl.conf, "garbage_collection_threshold:0.6,max_split_size_mb:64");
  CU_ASSERT(pl.fraction[0] == '0' && pl.fraction[1] == '.');
  char conf[PT_EXPORT_CONF_MAX];
  CU_ASSERT_EQUAL(pt_export_conf(&in, NULL, conf, sizeof conf, NULL, 0, &err), 0);
  CU_ASSERT_STRING_EQUAL(conf, pl.conf);
  pt_export_input native = {"pytorch_native", "caching", NULL, 0, H200, 0, "t", 1, NULL, NULL, 0, NULL};
  CU_ASSERT_EQUAL(pt_export_plan_of(&native, &pl, &err), 0);
  CU_ASSERT(!pl.library && pl.conf[0] == 0 && pl.nenv == 0 && pl.fraction[0] == 0);
  pt_export_input direct = {"direct", "direct", NULL, 0, H200, 0, "t", 2, NULL, NULL, 0, NULL};
  CU_ASSERT_EQUAL(pt_export_plan_of(&direct, &pl, &err), 0);
  CU_ASSERT_EQUAL_FATAL(pl.nenv, 1);
  CU_ASSERT_STRING_EQUAL(pl.env[0].name, "PYTORCH_NO_CUDA_MEMORY_CACHING");
  CU_ASSERT_STRING_EQUAL(pl.env[0].value, "1");
  pt_export_input stitch = {"stitch", "stitch", NULL, GIB, H200, 0, "t", 4, NULL, NULL, 0, NULL};
  CU_ASSERT_EQUAL(pt_export_plan_of(&stitch, &pl, &err), 0);
  CU_ASSERT(pl.library && pl.runnable && pl.nenv == 0 && pl.conf[0] == 0);
  pt_export_input hooks = {"hooked", "caching", NULL, 0, H200, 1, "t", 5, NULL, "should_collect cannot be a table", 0, NULL};
  CU_ASSERT_EQUAL(pt_export_plan_of(&hooks, &pl, &err), 0);
  CU_ASSERT(pl.library && !pl.runnable);
  CU_ASSERT_STRING_EQUAL(pl.refused, "should_collect cannot be a table");
  pt_export_input bad = {"x", "nonesuch", NULL, 0, 0, 0, NULL, -1, NULL, NULL, 0, NULL};
  CU_ASSERT_EQUAL(pt_export_plan_of(&bad, &pl, &err), PT_EUSAGE);
}

int pt_test_add_export(void) {
  CU_pSuite s = CU_add_suite("export", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "caching with knobs: env, dockerfile, json", test_caching_formats);
  CU_add_test(s, "expandable: env, dockerfile, json", test_expandable_formats);
  CU_add_test(s, "async_pool: PyTorch's backend when it never releases, else the library", test_async_formats);
  CU_add_test(s, "stitch: the library's lines agree; hooks: not runnable by the library", test_stitch_hooks_formats);
  CU_add_test(s, "direct: PYTORCH_NO_CUDA_MEMORY_CACHING, said to be the nearest", test_direct);
  CU_add_test(s, "round trip: exported conf parses back to the params, allowed keys only", test_round_trip);
  CU_add_test(s, "values as the knobs can mean them: noise is off, never on", test_values_meant);
  CU_add_test(s, "parse: accepted forms, list form, every refusal", test_parse_conf);
  CU_add_test(s, "merge: foreign keys kept, conflicts overridden with a note", test_merge);
  CU_add_test(s, "merge: unknown keys and hostile characters refused", test_merge_rejects);
  CU_add_test(s, "GC warning and fraction line exactly when due; int(F*total) >= capacity", test_gc_warning_and_fraction);
  CU_add_test(s, "bad input; hostile policy and trace names", test_bad_input);
  CU_add_test(s, "--context: the COPY sources written, the config loads in the library's reader", test_context);
  CU_add_test(s, "the library's reader takes every export it is told to run, refuses hooks", test_library_reads_every_export);
  CU_add_test(s, "the plan a process is started by: conf, other variables, library or not", test_plan);
  return CU_get_error();
}
